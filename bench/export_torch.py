"""The exported PyTorch module's LeNet training step against the engine's, side by side.

    python -m bench.export_torch [--batch 64] [--rounds 5] [--steps 10] [--threads N]

Caffe's LeNet (resources/examples/mnist/lenet.prototxt's layers, a SoftmaxWithLoss on top) is
exported with engine.export.torch_module, and both train it from the same weights on the same
random batch with Caffe's SGD (momentum 0.9, weight decay 5e-4, lr_mult 1/2): the engine through
its Solver, the module through the training package's CaffeSolver. The two alternate, ``steps``
steps at a time for ``rounds`` rounds after a warm-up, so both see the same machine load. Prints
the median ms/step of each and the ratio module/engine (> 1: the exported module is slower).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import types

from bench.lenet_train import LENET, _threads_before_numpy, batch

_threads_before_numpy()

from google.protobuf import text_format  # noqa: E402

from proto import caffe_pb2  # noqa: E402

SOLVER = 'base_lr: 0.01 momentum: 0.9 weight_decay: 0.0005 lr_policy: "fixed" max_iter: 1000000 display: 0'


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--threads", type=int, default=0, help="threads for both (0: their defaults)")
    args = parser.parse_args(argv)
    import torch

    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "engine", "export", "package", "files"))
    import caffe_solver  # the training package's own file (it imports nothing of Barista's)

    from engine.export.torch_codegen import describe, module_source
    from engine.export.torch_module import state_dict
    from engine.solvers import create_solver

    if args.threads:
        torch.set_num_threads(args.threads)
    net = text_format.Parse(LENET.format(batch=args.batch), caffe_pb2.NetParameter())
    for layer in net.layer:  # Caffe's example trains biases twice as fast
        if layer.type in ("Convolution", "InnerProduct"):
            layer.param.add().lr_mult = 1
            layer.param.add().lr_mult = 2
    solver_param = text_format.Parse(SOLVER, caffe_pb2.SolverParameter())
    solver_param.net_param.CopyFrom(net)
    solver = create_solver(solver_param, log_fn=lambda message: None)
    data, label = batch(args.batch)
    solver.net.blob_by_name("data").data[...] = data
    solver.net.blob_by_name("label").data[...] = label

    exported = describe(solver.net, "LeNet")
    module = types.ModuleType("lenet_export")
    exec(
        compile(module_source(exported, "bench", "lenet", "lenet.pt", "LeNet"), "lenet", "exec"),
        module.__dict__,
    )
    model = module.LeNet()
    model.load_state_dict(state_dict(solver.net, exported))
    params = dict(model.named_parameters(remove_duplicate=False))
    optimizer = caffe_solver.CaffeSolver([(params[p], lr, d) for p, lr, d in model.learnable], solver_param)
    feeds = {"data": torch.from_numpy(data), "label": torch.from_numpy(label)}

    def engine_steps(n: int) -> None:
        solver.step(n)

    def module_steps(n: int) -> None:
        for _ in range(n):
            optimizer.zero_grad(set_to_none=False)
            out = model(**feeds)
            (out["loss"] * model.loss_weights["loss"]).backward()
            optimizer.step()

    engine_steps(3)
    module_steps(3)
    times: dict[str, list[float]] = {"engine": [], "module": []}
    for _ in range(args.rounds):
        for name, run in (("engine", engine_steps), ("module", module_steps)):
            start = time.perf_counter()
            run(args.steps)
            times[name].append((time.perf_counter() - start) * 1000 / args.steps)
    engine, mine = statistics.median(times["engine"]), statistics.median(times["module"])
    threads = args.threads or f"default (torch {torch.get_num_threads()})"
    print(
        f"LeNet batch {args.batch}, threads {threads}, {args.rounds} rounds x {args.steps} steps, alternating"
    )
    print(f"  engine           {engine:8.2f} ms/step")
    print(f"  exported module  {mine:8.2f} ms/step")
    print(f"  ratio module/engine {mine / engine:.2f}")


if __name__ == "__main__":
    main(sys.argv[1:])
    os._exit(0)
