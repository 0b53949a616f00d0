"""LeNet training speed: this engine against PyTorch on the same net, side by side in one run.

    python -m bench.lenet_train [--batch 64] [--iters 50] [--gpu] [--threads N]

Both train Caffe's LeNet (conv 20 5x5, max-pool, conv 50 5x5, max-pool, ip 500, ReLU, ip 10,
softmax loss) with SGD (momentum 0.9, weight decay 5e-4) on the same random batch, after a
warm-up. Prints ms/iteration for each and the ratio ours/torch (<= 1.0 means we are faster).
PyTorch is not a dependency: `pip install torch==2.13.0` gives a CPU build on these machines.
"""

from __future__ import annotations

import argparse
import os
import sys
import time


def _threads_before_numpy() -> None:
    """BLAS pools are sized when numpy loads: a later limit leaves a spinning spare thread."""
    if "--threads" in sys.argv[:-1]:
        n = sys.argv[sys.argv.index("--threads") + 1]
        if n != "0":
            for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
                os.environ[var] = n


_threads_before_numpy()

import numpy as np  # noqa: E402
from google.protobuf import text_format  # noqa: E402

from proto import caffe_pb2  # noqa: E402

LENET = """
name: "LeNet"
layer {{ name: "data" type: "Input" top: "data" top: "label"
        input_param {{ shape {{ dim: {batch} dim: 1 dim: 28 dim: 28 }} shape {{ dim: {batch} }} }} }}
layer {{ name: "conv1" type: "Convolution" bottom: "data" top: "conv1"
        convolution_param {{ num_output: 20 kernel_size: 5 weight_filler {{ type: "xavier" }} }} }}
layer {{ name: "pool1" type: "Pooling" bottom: "conv1" top: "pool1"
        pooling_param {{ pool: MAX kernel_size: 2 stride: 2 }} }}
layer {{ name: "conv2" type: "Convolution" bottom: "pool1" top: "conv2"
        convolution_param {{ num_output: 50 kernel_size: 5 weight_filler {{ type: "xavier" }} }} }}
layer {{ name: "pool2" type: "Pooling" bottom: "conv2" top: "pool2"
        pooling_param {{ pool: MAX kernel_size: 2 stride: 2 }} }}
layer {{ name: "ip1" type: "InnerProduct" bottom: "pool2" top: "ip1"
        inner_product_param {{ num_output: 500 weight_filler {{ type: "xavier" }} }} }}
layer {{ name: "relu1" type: "ReLU" bottom: "ip1" top: "ip1" }}
layer {{ name: "ip2" type: "InnerProduct" bottom: "ip1" top: "ip2"
        inner_product_param {{ num_output: 10 weight_filler {{ type: "xavier" }} }} }}
layer {{ name: "loss" type: "SoftmaxWithLoss" bottom: "ip2" bottom: "label" top: "loss" }}
"""


def batch(size: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    return rng.random((size, 1, 28, 28), dtype=np.float32), rng.integers(0, 10, size).astype(np.float32)


def time_engine(size: int, iters: int, gpu: bool) -> float:
    from engine import backend
    from engine.solvers import create_solver

    if gpu:
        backend.set_mode_gpu()
    param = text_format.Parse(
        'type: "SGD" base_lr: 0.01 momentum: 0.9 weight_decay: 0.0005 lr_policy: "fixed" max_iter: 100000',
        caffe_pb2.SolverParameter(),
    )
    param.net_param.CopyFrom(text_format.Parse(LENET.format(batch=size), caffe_pb2.NetParameter()))
    solver = create_solver(param, log_fn=lambda line: None)
    x, y = batch(size)
    xp = solver.xp
    solver.net.blob_by_name("data").data[...] = xp.asarray(x)
    solver.net.blob_by_name("label").data[...] = xp.asarray(y)
    solver.step(5)
    backend.synchronize()
    start = time.perf_counter()
    solver.step(iters)
    backend.synchronize()
    return (time.perf_counter() - start) / iters * 1e3


def time_torch(size: int, iters: int, gpu: bool) -> float:
    import torch
    from torch import nn

    device = torch.device("cuda" if gpu else "cpu")
    model = nn.Sequential(
        nn.Conv2d(1, 20, 5),
        nn.MaxPool2d(2, 2, ceil_mode=True),
        nn.Conv2d(20, 50, 5),
        nn.MaxPool2d(2, 2, ceil_mode=True),
        nn.Flatten(),
        nn.Linear(800, 500),
        nn.ReLU(),
        nn.Linear(500, 10),
    ).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=0.0005)
    loss_fn = nn.CrossEntropyLoss()
    x, y = batch(size)
    xt, yt = torch.from_numpy(x).to(device), torch.from_numpy(y).long().to(device)

    def step() -> None:
        optimizer.zero_grad(set_to_none=False)
        loss_fn(model(xt), yt).backward()
        optimizer.step()

    for _ in range(5):
        step()
    if gpu:
        torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(iters):
        step()
    if gpu:
        torch.cuda.synchronize()
    return (time.perf_counter() - start) / iters * 1e3


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch", type=int, nargs="+", default=[64])
    parser.add_argument("--iters", type=int, default=50)
    parser.add_argument("--gpu", action="store_true")
    parser.add_argument("--threads", type=int, default=0, help="BLAS/torch threads (0: library default)")
    args = parser.parse_args(argv)
    if args.threads:
        import torch
        from threadpoolctl import threadpool_limits

        torch.set_num_threads(args.threads)
        threadpool_limits(args.threads)
    where = "GPU" if args.gpu else "CPU"
    for size in args.batch:
        ours = time_engine(size, args.iters, args.gpu)
        theirs = time_torch(size, args.iters, args.gpu)
        print(
            f"LeNet train, batch {size}, {where}: engine {ours:.2f} ms/iter, torch {theirs:.2f} ms/iter, "
            f"ratio {ours / theirs:.2f}"
        )


if __name__ == "__main__":
    main()
