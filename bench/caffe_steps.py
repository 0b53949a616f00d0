"""Real Caffe's side of bench.cpu_nets: run by Caffe's own Python (pycaffe), never by the project's.

    $CAFFE_PY bench/caffe_steps.py NET.prototxt

Builds an SGD solver (momentum 0.9, weight decay 5e-4) on the net, fills its Input blobs with a
random batch, then reads a number N per line on stdin, runs N solver steps and answers the mean
ms per step on stdout (wall, then CPU time of all its threads). It imports nothing of the project.
"""

import os
import sys
import tempfile
import time

import caffe
import numpy as np

SOLVER = """net: "{net}"
base_lr: 0.001 momentum: 0.9 weight_decay: 0.0005 lr_policy: "fixed" max_iter: 100000000
display: 0 snapshot: 0 solver_mode: CPU
"""


def main() -> None:
    caffe.set_mode_cpu()
    if hasattr(caffe, "set_random_seed"):
        caffe.set_random_seed(0)
    with tempfile.NamedTemporaryFile("w", suffix=".prototxt", delete=False) as f:
        f.write(SOLVER.format(net=os.path.abspath(sys.argv[1])))
    solver = caffe.SGDSolver(f.name)
    os.unlink(f.name)
    rng = np.random.default_rng(0)
    data, label = solver.net.blobs["data"], solver.net.blobs["label"]
    data.data[...] = rng.standard_normal(data.data.shape, dtype=np.float32)
    label.data[...] = rng.integers(0, 10, label.data.shape)
    print("ready", flush=True)
    for line in sys.stdin:
        steps = int(line)
        start, cpu = time.perf_counter(), time.process_time()
        solver.step(steps)
        wall, cpu = time.perf_counter() - start, time.process_time() - cpu
        print(f"{wall * 1e3 / steps:.3f} {cpu * 1e3 / steps:.3f}", flush=True)


if __name__ == "__main__":
    main()
