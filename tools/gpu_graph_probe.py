"""Where a CUDA graph capture of a training step breaks: run on a machine with a GPU.

    python tools/gpu_graph_probe.py

1. Captures one cupy operation at a time (element-wise, reductions, a new allocation, a RawKernel,
   the engine's cuBLAS GEMM, a one-element fill) and says which ones capture leaves valid.
2. Captures LeNet's step (engine.graphs.GraphStep, the update inside) with every layer's forward
   and backward wrapped: names the first one after which the stream's capture is no longer active,
   and the exception the capture ended with; then the same, forced, for nets of the layer types
   graphs do not take yet (LRN, Concat, AVE pooling; CIFAR-10 quick): which of them breaks it.
"""

from __future__ import annotations

import logging
import sys
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
from google.protobuf import text_format  # noqa: E402

from bench import nets  # noqa: E402
from bench.lenet_train import LENET  # noqa: E402
from engine import backend, graphs  # noqa: E402
from engine.kernels import gemm  # noqa: E402
from engine.solvers import create_solver  # noqa: E402
from proto import caffe_pb2  # noqa: E402

STATES = {0: "none", 1: "active", 2: "INVALIDATED"}
FIXED = 'type: "SGD" base_lr: 0.01 momentum: 0.9 weight_decay: 0.0005 lr_policy: "fixed" max_iter: 1000'
SEEDED = FIXED.replace('"fixed"', '"inv" gamma: 0.1 power: 0.75') + " random_seed: 3"
MIXED = """
layer { name: "data" type: "Input" top: "data" top: "label"
        input_param { shape { dim: 8 dim: 3 dim: 16 dim: 16 } shape { dim: 8 } } }
layer { name: "conv1" type: "Convolution" bottom: "data" top: "conv1"
        convolution_param { num_output: 6 kernel_size: 3 pad: 1 weight_filler { type: "xavier" } } }
layer { name: "norm1" type: "LRN" bottom: "conv1" top: "norm1" lrn_param { local_size: 3 alpha: 0.001 } }
layer { name: "a" type: "Convolution" bottom: "norm1" top: "a"
        convolution_param { num_output: 4 kernel_size: 1 weight_filler { type: "xavier" } } }
layer { name: "b" type: "Convolution" bottom: "norm1" top: "b"
        convolution_param { num_output: 4 kernel_size: 3 pad: 1 weight_filler { type: "xavier" } } }
layer { name: "cat" type: "Concat" bottom: "a" bottom: "b" top: "cat" }
layer { name: "pool" type: "Pooling" bottom: "cat" top: "pool"
        pooling_param { pool: AVE kernel_size: 3 stride: 2 } }
layer { name: "ip" type: "InnerProduct" bottom: "pool" top: "ip"
        inner_product_param { num_output: 10 weight_filler { type: "xavier" } } }
layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip" bottom: "label" top: "loss" }
"""
CASES = [(64, FIXED, True), (8, FIXED, True), (64, FIXED, False), (64, SEEDED, True), (8, SEEDED, False)]


def status(cupy, stream) -> str:
    return STATES.get(int(cupy.cuda.runtime.streamIsCapturing(stream.ptr)), "?")


def probe_operations(cupy) -> None:
    x = cupy.ones((64, 500), np.float32)
    w = cupy.ones((500, 10), np.float32)
    out = cupy.empty((64, 10), np.float32)
    scalar = cupy.zeros((), np.float32)
    kernel = cupy.RawKernel(
        'extern "C" __global__ void twice(float* a, long long n) {'
        " long long i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) a[i] *= 2; }",
        "twice",
    )
    operations = {
        "elementwise x * 2": lambda: x * 2,
        "in-place x += 1": lambda: x.__iadd__(1),
        "x.sum()": lambda: x.sum(),
        "x.sum(axis=0)": lambda: x.sum(axis=0),
        "(x > 0).any()": lambda: (x > 0).any(),
        "cupy.maximum(x.sum(), 1)": lambda: cupy.maximum(x.sum(), 1),
        "divide into out": lambda: cupy.divide(x.sum(), 3, out=scalar),
        "new 8 MB array": lambda: cupy.empty(2 << 20, np.float32),
        "fill": lambda: scalar.fill(0.5),
        "RawKernel": lambda: kernel((1,), (256,), (x, np.int64(256))),
        "engine gemm": lambda: gemm.matmul(x, w, out),
        "cupy.matmul": lambda: cupy.matmul(x, w),
    }
    mode = getattr(cupy.cuda.runtime, "streamCaptureModeThreadLocal", None)
    for name, operation in operations.items():
        pool = cupy.cuda.MemoryPool()
        stream = cupy.cuda.Stream(non_blocking=True)
        with cupy.cuda.using_allocator(pool.malloc), stream:
            operation()  # warm: compiled, blocks cached
            stream.synchronize()
            stream.begin_capture(mode) if mode is not None else stream.begin_capture()
            error = ""
            try:
                operation()
            except Exception as exc:
                error = f" raised {type(exc).__name__}: {exc}"
            state = status(cupy, stream)
            try:
                stream.end_capture()
            except Exception as exc:
                error += f"; end_capture: {type(exc).__name__}: {exc}"
        print(f"  {name:28s} capture {state}{error}", flush=True)


def probe_net(cupy, net_text: str, solver_text: str, gpu_mode: bool, force: bool = False) -> None:
    """Capture the net's step with every layer watched; ``force``: try even a net whose layer types
    GraphStep does not take (to find what in them breaks a capture)."""
    graphs.ENABLED = True
    (backend.set_mode_gpu if gpu_mode else backend.set_mode_cpu)()
    param = text_format.Parse(solver_text, caffe_pb2.SolverParameter())
    param.net_param.CopyFrom(text_format.Parse(net_text, caffe_pb2.NetParameter()))
    solver = create_solver(param, xp=cupy, log_fn=lambda line: None)
    data, label = solver.net.blob_by_name("data"), solver.net.blob_by_name("label")
    rng = np.random.default_rng(0)
    data.data[...] = cupy.asarray(rng.random(data.shape, dtype=np.float32))
    label.data[...] = cupy.asarray(rng.integers(0, 10, label.shape).astype(np.float32))
    step = solver.graph_step
    if force:
        step.broken = False
    solver.step(graphs.SETTLING)  # settles the arrays; the next step would capture
    print(f"  after one step: broken={step.broken} usable={step.usable()} pool={step.pool is not None}")
    first: list[str] = []

    def watch(name, method):
        def run(*args, **kwargs):
            before = status(cupy, step.stream)
            result = method(*args, **kwargs)
            after = status(cupy, step.stream)
            if before == "active" and after != "active" and not first:
                first.append(name)
            return result

        return run

    for name, layer in zip(solver.net.layer_names, solver.net.layers):
        layer.forward = watch(f"{name} forward", layer.forward)
        layer.backward = watch(f"{name} backward", layer.backward)
    update = solver.graph_update()
    print(f"  update in the graph: {update is not None}")
    if update is not None:
        update = watch("the SGD update", update)
        solver.rate_device.fill(solver.learning_rate())
    solver.net.clear_param_diffs()
    records: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record.getMessage())

    graphs.log.addHandler(Keep())
    try:
        loss = step.capture(update)
        print(f"  capture: graph={step.graph is not None}, loss {loss:.4f}")
    except Exception:
        traceback.print_exc()
    if step.failure is not None:
        print("".join(traceback.format_exception(step.failure)))
    graphs.log.handlers.clear()
    print(f"  first call after which the capture was not active: {first[0] if first else 'none'}")
    for message in records:
        print(f"  log: {message}")


def main() -> int:
    reason = backend.gpu_unavailable_reason()
    if reason:
        print(f"no GPU: {reason}")
        return 2
    backend.set_mode_gpu()
    cupy = backend.array_module("gpu")
    print("one operation at a time:")
    probe_operations(cupy)
    for size, solver_text, gpu_mode in CASES:
        print(f"LeNet's step, batch {size}, {solver_text!r}, GPU mode {gpu_mode}:")
        probe_net(cupy, LENET.format(batch=size), solver_text, gpu_mode)
    for name, text in (("LRN, Concat, AVE pooling", MIXED), ("CIFAR-10 quick b100", nets.cifar10_quick())):
        print(f"{name} (layers graphs do not take yet, tried anyway):")
        probe_net(cupy, text, FIXED, True, force=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
