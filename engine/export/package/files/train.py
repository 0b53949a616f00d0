"""Train the net of this package as Caffe's solver would, on PyTorch, in one process or many.

    torchrun --standalone --nproc_per_node=N train.py [--weights W.caffemodel] [--snapshot X.solverstate]
    python train.py ...                        (one process, no torchrun needed)

Every process reads its own batch_size records per iteration (N x batch_size in all) and
DistributedDataParallel averages the gradients (gloo on CPUs, NCCL on GPUs); rank 0 logs Caffe's
lines to stderr, tests the test nets every test_interval iterations and writes the snapshots
(.caffemodel + .solverstate, which Caffe, Barista and this script open). solver.prototxt holds the
solver's settings (edit them freely); model.py holds the nets, written by Barista's export.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import math
import os
import sys
import threading
import time
from typing import Any

import numpy as np
import torch
import torch.distributed as dist
from google.protobuf import text_format

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import caffe_pb2  # noqa: E402
import model  # noqa: E402
from caffe_data import DataLayerBatches  # noqa: E402
from caffe_files import (  # noqa: E402
    FileProblem,
    load_state,
    load_weights,
    read_prototxt,
    save_state,
    save_weights,
)
from caffe_solver import CaffeSolver  # noqa: E402

f32 = np.float32
RANK = int(os.environ.get("RANK", "0"))
WORLD = int(os.environ.get("WORLD_SIZE", "1"))


def say(message: str) -> None:
    """One of Caffe's log lines (glog's format, on stderr), from rank 0 only."""
    if RANK != 0:
        return
    now = datetime.datetime.now()
    thread = threading.get_native_id() % 100000
    for line in message.split("\n"):
        sys.stderr.write(f"I{now:%m%d %H:%M:%S.%f} {thread:5d} train.py:0] {line}\n")
    sys.stderr.flush()


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--weights", help="start from these .caffemodel weights (comma-separated list)")
    parser.add_argument("--snapshot", help="resume from this .solverstate")
    parser.add_argument(
        "--max-iter", type=int, help="stop at this iteration instead of the solver's max_iter"
    )
    parser.add_argument(
        "--data-root", action="append", default=[], help="a folder to look for relative sources in"
    )
    parser.add_argument("--cpu", action="store_true", help="train on the CPU even when a GPU is available")
    return parser.parse_args()


class Trainer:
    def __init__(self, args: argparse.Namespace) -> None:
        self.solver = read_prototxt(os.path.join(HERE, "solver.prototxt"), caffe_pb2.SolverParameter())
        self.device = torch.device("cpu")
        if torch.cuda.is_available() and not args.cpu:
            self.device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
            torch.cuda.set_device(self.device)
        if WORLD > 1:
            dist.init_process_group("nccl" if self.device.type == "cuda" else "gloo")
        roots = [*args.data_root, os.getcwd(), HERE]
        self.net = model.TrainNet()
        self.net.load_state_dict(torch.load(os.path.join(HERE, "weights.pt"), weights_only=True))
        for name in (args.weights or "").split(","):
            if name.strip():
                say(f"Finetuning from {name.strip()}")
                load_weights(name.strip(), self.net, say)
        self.net.to(self.device)
        self.test_nets = [cls().to(self.device) for cls in model.TEST_NETS]
        for test_net in self.test_nets:  # Caffe's ShareTrainedLayersWith: one tensor per blob, by layer name
            for name, (_, attr, blobs) in test_net.caffe_layers.items():
                if name in self.net.caffe_layers:
                    source = self.net.get_submodule(self.net.caffe_layers[name][1])
                    for blob in blobs:
                        setattr(test_net.get_submodule(attr), blob, getattr(source, blob))
        self.train_data = self.data_layers(model.TRAIN_DATA, caffe_pb2.TRAIN, RANK, WORLD, roots)
        self.test_data = [self.data_layers(layers, caffe_pb2.TEST, 0, 1, roots) for layers in model.TEST_DATA]
        params = dict(self.net.named_parameters(remove_duplicate=False))
        learnable = [(params[path], lr, decay) for path, lr, decay in self.net.learnable]
        self.optimizer = CaffeSolver(learnable, self.solver)
        self.ddp: Any = self.net
        if WORLD > 1:
            self.ddp = torch.nn.parallel.DistributedDataParallel(self.net, broadcast_buffers=False)
        if args.snapshot:
            say(f"Restoring previous solver status from {args.snapshot}")
            iteration, learned, step, history = load_state(args.snapshot)
            if learned:
                load_weights(learned, self.net, say, f"the weights of {args.snapshot}")
            self.optimizer.set_history(history)
            self.optimizer.iter, self.optimizer.current_step = iteration, step
        self.max_iter = args.max_iter if args.max_iter is not None else self.solver.max_iter
        self.losses: list[Any] = []
        self.smoothed = f32(0)

    @staticmethod
    def data_layers(layers: list[str], phase: int, rank: int, world: int, roots: list[str]) -> list[Any]:
        out = []
        for text in layers:
            layer = text_format.Parse(text, caffe_pb2.LayerParameter())
            out.append((list(layer.top), DataLayerBatches(layer, phase, rank, world, roots)))
        return out

    def feeds(self, layers: list[Any], index: int, net: Any) -> dict[str, torch.Tensor]:
        out: dict[str, torch.Tensor] = {}
        for tops, batches in layers:
            for name, tensor in zip(tops, batches[index]):
                out[net.arguments[name]] = tensor.to(self.device)
        return out

    @staticmethod
    def loss_of(net: Any, outputs: dict[str, torch.Tensor]) -> torch.Tensor:
        total = torch.zeros((), device=next(iter(outputs.values())).device)
        for name, weight in net.loss_weights.items():
            total = total + weight * outputs[name].sum()
        return total

    # --- Caffe's Solver::Step ------------------------------------------------------------------
    def solve(self) -> None:
        s = self.solver
        say("Initializing solver from parameters: \n" + text_format.MessageToString(s))  # the app reads it
        say(f"Solving {model.NET_NAME}")
        say(f"Learning Rate Policy: {s.lr_policy}")
        start = it = self.optimizer.iter
        timer, last = time.perf_counter(), it
        outputs: dict[str, torch.Tensor] = {}
        while it < self.max_iter:
            if s.random_seed >= 0:
                torch.manual_seed((s.random_seed * 1000003 + it) * WORLD + RANK)
            self.optimizer.zero_grad(set_to_none=False)
            if s.test_interval and it % s.test_interval == 0 and (it > 0 or s.test_initialization):
                self.test_all(it)
            display = bool(s.display) and it % s.display == 0
            loss = f32(0)
            for k in range(s.iter_size):
                sync = k == s.iter_size - 1 or WORLD == 1
                with contextlib.nullcontext() if sync else self.ddp.no_sync():
                    outputs = self.ddp(**self.feeds(self.train_data, it * s.iter_size + k, self.net))
                    total = self.loss_of(self.net, outputs)
                    total.backward()
                loss += f32(total.item())
            loss /= f32(s.iter_size)
            if not math.isfinite(loss):
                raise SystemExit(f"Iteration {it}: loss is {loss}")
            self.update_smoothed_loss(loss, it - start)
            if display:
                lapse = time.perf_counter() - timer
                say(
                    f"Iteration {it} ({(it - last) / (lapse or 1.0):g} iter/s, "
                    f"{lapse:g}s/{s.display} iters), loss = {self.smoothed:g}"
                )
                timer, last = time.perf_counter(), it
                self.show_outputs("Train", self.net, {k: v.detach() for k, v in outputs.items()})
            before = self.optimizer.current_step
            self.optimizer.step(say=say)
            if s.lr_policy == "multistep" and self.optimizer.current_step != before:
                say(f"MultiStep Status: Iteration {it}, step = {self.optimizer.current_step}")
            if display:
                say(f"Iteration {it}, lr = {self.optimizer.rate:g}")
            it = self.optimizer.iter
            if s.snapshot and it % s.snapshot == 0:
                self.snapshot(it)
        if s.snapshot_after_train and (not s.snapshot or it % s.snapshot != 0):
            self.snapshot(it)
        if s.display and it % s.display == 0:
            with torch.no_grad():
                outputs = self.net(**self.feeds(self.train_data, it * s.iter_size, self.net))
            self.update_smoothed_loss(f32(self.loss_of(self.net, outputs).item()), it - start)
            say(f"Iteration {it}, loss = {self.smoothed:g}")
        if s.test_interval and it % s.test_interval == 0:
            self.test_all(it)
        say("Optimization Done.")

    def update_smoothed_loss(self, loss: Any, done: int) -> None:
        average = self.solver.average_loss
        if len(self.losses) < average:
            self.losses.append(loss)
            size = len(self.losses)
            self.smoothed = (self.smoothed * f32(size - 1) + loss) / f32(size)
        else:
            index = done % average
            self.smoothed += (loss - self.losses[index]) / f32(average)
            self.losses[index] = loss

    def show_outputs(self, kind: str, net: Any, outputs: dict[str, Any], divisor: int = 0) -> None:
        index = 0
        for name in net.outputs:
            weight = net.loss_weights.get(name, 0.0)
            for value in np.atleast_1d(np.asarray(outputs[name].cpu(), np.float32)).ravel():
                if divisor:
                    value = value / f32(divisor)
                suffix = f" (* {f32(weight):g} = {f32(weight) * value:g} loss)" if weight else ""
                say(f"    {kind} net output #{index}: {name} = {value:g}{suffix}")
                index += 1

    def tests_before(self, it: int) -> int:
        """How many test passes a run from 0 made before iteration ``it`` (where a resumed test set is)."""
        s = self.solver
        if not s.test_interval:
            return 0
        passes = (it - 1) // s.test_interval + 1 if it > 0 else 0
        return passes - (0 if s.test_initialization or it == 0 else 1)

    def test_all(self, it: int) -> None:
        if RANK == 0:
            passes = self.tests_before(it)
            for i, net in enumerate(self.test_nets):
                self.test(it, i, net, passes)
        if WORLD > 1:
            dist.barrier()

    @torch.no_grad()
    def test(self, it: int, index: int, net: Any, passes: int) -> None:
        s = self.solver
        say(f"Iteration {it}, Testing net (#{index})")
        iterations = s.test_iter[index]
        sums: dict[str, np.ndarray] = {}
        loss = f32(0)
        for k in range(iterations):
            outputs = net(**self.feeds(self.test_data[index], passes * iterations + k, net))
            if s.test_compute_loss:
                loss += f32(self.loss_of(net, outputs).item())
            for name in net.outputs:
                value = np.asarray(outputs[name].cpu(), np.float32).reshape(-1)
                sums[name] = value.copy() if name not in sums else sums[name] + value
        if s.test_compute_loss:
            say(f"Test loss: {loss / f32(iterations):g}")
        self.show_outputs("Test", net, {k: torch.from_numpy(v) for k, v in sums.items()}, iterations)

    def snapshot(self, it: int) -> None:
        if RANK == 0:
            prefix = self.solver.snapshot_prefix or model.NET_NAME or "net"
            weights = f"{prefix}_iter_{it}.caffemodel"
            say(f"Snapshotting to binary proto file {weights}")
            save_weights(weights, self.net, model.NET_NAME)
            state = f"{prefix}_iter_{it}.solverstate"
            say(f"Snapshotting solver state to binary proto file {state}")
            history = [h.cpu() for h in self.optimizer.history()]
            save_state(state, it, weights, self.optimizer.current_step, history)
        if WORLD > 1:
            dist.barrier()


def main() -> None:
    args = arguments()
    try:
        trainer = Trainer(args)
    except FileProblem as exc:  # a missing, empty or corrupt --weights or --snapshot: one line
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)
    try:
        trainer.solve()
    finally:
        if WORLD > 1:
            dist.destroy_process_group()


if __name__ == "__main__":
    main()
