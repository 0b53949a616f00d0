"""Solver: Caffe's training loop around a train net and its test nets.

The base class owns everything the update rules share: building the nets from the solver's
fields (and copying in its ``weights``), the learning-rate policy, iter_size accumulation, L1/L2
regularisation, gradient clipping, the smoothed loss, testing, snapshots (binary proto or HDF5)
and restore. A subclass overrides only ``compute_update_value`` (and says how many history blobs
it keeps per parameter).

Scalars are formed as Caffe forms them, in the net's float type (the rate, rate * lr_mult,
weight_decay * decay_mult, 1 / iter_size, the clipping norm, losses and test scores), so float32
runs round as Caffe's do.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
from google.protobuf import text_format

from engine import backend, events, parallel, rng
from engine.blob import Blob
from engine.data.paths import DEFAULT, DataPaths
from engine.errors import EngineError
from engine.graphs import GraphStep
from engine.solvers import nets, snapshots
from engine.solvers.lr_policy import learning_rate
from engine.solvers.prefix_lock import PrefixLock
from proto import caffe_pb2

log = logging.getLogger("engine.solver")


class Solver:
    type: ClassVar[str] = ""
    history_per_param: ClassVar[int] = 1
    fields: ClassVar[tuple[str, ...]] = ()  # the SolverParameter fields its update rule reads

    def __init__(
        self,
        param: caffe_pb2.SolverParameter,
        xp: Any = None,
        log_fn: Callable[[str], None] | None = None,
        base_dir: str | os.PathLike[str] | None = None,
        data_paths: DataPaths = DEFAULT,
    ) -> None:
        """``base_dir`` resolves relative net and snapshot paths (Caffe uses the working directory);
        ``data_paths``, the data files its nets' layers name (engine/data/paths.py)."""
        self.param = caffe_pb2.SolverParameter()
        self.param.CopyFrom(param)
        self.say: Callable[[str], None] = log_fn or log.info
        self.base_dir = Path(base_dir) if base_dir is not None else None
        self.xp = xp if xp is not None else backend.array_module()
        self.say("Initializing solver from parameters: \n" + text_format.MessageToString(self.param))
        if self.param.average_loss < 1:
            raise EngineError("average_loss should be non-negative.")
        self.check_param()
        if self.param.random_seed >= 0:
            rng.set_random_seed(self.param.random_seed)
        self.net = nets.build_train_net(self.param, self.xp, self.say, self._path, data_paths)
        self.test_nets = nets.build_test_nets(self.param, self.xp, self.say, self._path, data_paths)
        self.say("Solver scaffolding done.")
        self.iter = 0
        self.current_step = 0
        self.losses: list[float] = []
        self.smoothed_loss = 0.0
        self.requested_early_exit = False
        self.callbacks: list[Any] = []  # objects with on_start() / on_gradients_ready(), as pycaffe's
        # Asked after each iteration: 'stop', 'snapshot' or None.
        self.action: Callable[[], str | None] = lambda: None
        # Listeners get each Iteration, Tested and Snapshotted (engine/events.py). Plain callables, no Qt.
        self.listeners: list[Callable[[events.Event], None]] = []
        self.rate = 0.0
        self.rate_device: Any = None  # the rate on the GPU, read by an update inside a CUDA graph
        self.history = [
            Blob(p.shape, p.dtype, self.xp)
            for _ in range(self.history_per_param)
            for p in self.net.learnable_params
        ]
        self.last_snapshot: tuple[str, str] | None = None
        self.prefix_lock = PrefixLock(
            self._path((self.param.snapshot_prefix or self.net.name or "net") + ".lock")
        )
        self.workspace = backend.Workspace()
        self.graph_step = GraphStep(self.net)  # forward + backward as one CUDA graph where it can

    @classmethod
    def param_problems(cls, param: caffe_pb2.SolverParameter) -> Iterator[str]:
        """Settings the update rule cannot use (Caffe's constructor sanity checks), in Caffe's words."""
        return iter(())

    def check_param(self) -> None:
        for problem in self.param_problems(self.param):
            raise EngineError(problem)

    def emit(self, event: events.Event) -> None:
        for listener in self.listeners:
            listener(event)

    # --- nets --------------------------------------------------------------------------------
    def _path(self, path: str) -> str:
        if self.base_dir is None or os.path.isabs(path):
            return path
        return str(self.base_dir / path)

    # --- the loop ----------------------------------------------------------------------------
    def step(self, iters: int) -> None:
        # pycaffe's step() snapshots only at the solver's interval: without one it takes no lock
        # (solve() holds it whatever the settings: it snapshots at the end, or when asked).
        locked = self.prefix_lock if self.param.snapshot else contextlib.nullcontext()
        with locked, parallel.gemms_in_pool(self.xp):  # the CPU's cores for the engine's own threads
            self._step(iters)

    def _step(self, iters: int) -> None:
        start_iter = self.iter
        stop_iter = self.iter + iters
        self.losses = []
        self.smoothed_loss = 0.0
        p = self.param
        timer = time.perf_counter()
        iterations_last = self.iter
        while self.iter < stop_iter:
            self._reseed()
            self.net.clear_param_diffs()
            if (
                p.test_interval
                and self.iter % p.test_interval == 0
                and (self.iter > 0 or p.test_initialization)
            ):
                self.test_all()
                if self.requested_early_exit:
                    break
            for callback in self.callbacks:
                callback.on_start()
            display = bool(p.display) and self.iter % p.display == 0
            self.net.debug_info = display and p.debug_info
            loss = self.real(0)
            update = self.graph_update()  # the update inside the step's CUDA graph, where it can be
            step_before = self.current_step
            if update is not None:
                self.rate_device.fill(self.learning_rate())
            with np.errstate(over="ignore", invalid="ignore"):  # a diverging run is reported below, once
                for _ in range(p.iter_size):
                    loss += self.real(self.graph_step.forward_backward(update))
                loss /= self.real(p.iter_size)
            if not math.isfinite(loss):
                raise EngineError(f"Iteration {self.iter}: loss is {loss}; {self.first_non_finite()}")
            self.update_smoothed_loss(loss, start_iter)
            if display:
                lapse = time.perf_counter() - timer
                per_s = (self.iter - iterations_last) / (lapse or 1.0)
                self.say(
                    f"Iteration {self.iter} ({per_s:g} iter/s, {lapse:g}s/{p.display} iters), "
                    f"loss = {self.smoothed_loss:g}"
                )
                timer = time.perf_counter()
                iterations_last = self.iter
                self._display_outputs()
            for callback in self.callbacks:
                callback.on_gradients_ready()
            if update is None:
                self.apply_update()
            else:  # the parameters moved in the graph: what is left is what the update says
                self.say_rate(step_before)
            self.emit(events.Iteration(self.iter, float(loss), float(self.smoothed_loss), float(self.rate)))
            self.iter += 1
            request = self.action()
            if (p.snapshot and self.iter % p.snapshot == 0) or request == "snapshot":
                self.snapshot()
            if request == "stop":
                self.requested_early_exit = True
                break

    def _reseed(self) -> None:
        """With a fixed random_seed, each iteration's noise (dropout, ...) depends only on the seed and
        the iteration, so a run resumed from a snapshot draws what the uninterrupted run drew."""
        if self.param.random_seed >= 0:
            rng.set_random_seed(
                int(np.random.SeedSequence([self.param.random_seed, self.iter]).generate_state(1)[0])
            )

    def tests_run_before(self, iteration: int) -> int:
        """How many test passes a run from 0 has made before ``iteration`` starts."""
        interval = self.param.test_interval
        if not interval or not self.test_nets:
            return 0
        passes = (iteration - 1) // interval + 1 if iteration > 0 else 0  # at 0, interval, 2 * interval, ...
        return passes - (0 if self.param.test_initialization or iteration == 0 else 1)

    def _seek_data(self) -> None:
        """Put the data layers where an uninterrupted run would be (Caffe restarts them at record 0)."""
        batches = self.iter * self.param.iter_size
        for layer in self.net.layers:
            if hasattr(layer, "seek"):
                layer.seek(batches)
        tests = self.tests_run_before(self.iter)
        for i, net in enumerate(self.test_nets):
            for layer in net.layers:
                if hasattr(layer, "seek"):
                    layer.seek(tests * self.param.test_iter[i])

    def first_non_finite(self) -> str:
        """Name the first layer (in forward order) whose output holds NaN or inf."""
        for name, tops, top_ids in zip(self.net.layer_names, self.net.top_vecs, self.net.top_id_vecs):
            for blob, blob_id in zip(tops, top_ids):
                if not bool(self.xp.isfinite(blob.data).all()):
                    return f"first non-finite output: layer '{name}', top '{self.net.blob_names[blob_id]}'"
        return "no layer output is non-finite (the loss weights may be)"

    def _display_outputs(self) -> None:
        score_index = 0
        for blob_id in self.net.output_blob_indices:
            name = self.net.blob_names[blob_id]
            weight = self.net.blob_loss_weights[blob_id]
            for value in backend.to_host(self.net.blob_list[blob_id].data).ravel():
                w, v = self.real(weight), self.real(value)  # Caffe forms the product in Dtype
                suffix = f" (* {w:g} = {w * v:g} loss)" if weight else ""
                self.say(f"    Train net output #{score_index}: {name} = {value:g}{suffix}")
                score_index += 1

    def real(self, value: Any) -> Any:
        """A host scalar of the net's float type: Caffe keeps losses and test scores in Dtype."""
        return self.net.dtype.type(float(value))  # float(): a device scalar comes to the host

    def update_smoothed_loss(self, loss: Any, start_iter: int) -> None:
        """The mean of the last average_loss losses, kept in the net's float type as Caffe does."""
        average = self.param.average_loss
        loss, smoothed = self.real(loss), self.real(self.smoothed_loss)
        if len(self.losses) < average:
            self.losses.append(loss)
            size = len(self.losses)
            smoothed = (smoothed * self.real(size - 1) + loss) / self.real(size)
        else:
            idx = (self.iter - start_iter) % average
            smoothed += (loss - self.real(self.losses[idx])) / self.real(average)
            self.losses[idx] = loss
        self.smoothed_loss = float(smoothed)

    def solve(self, resume_file: str | None = None) -> None:
        """Caffe's Solve; a second run with the same snapshot prefix is refused (prefix_lock.py)."""
        with self.prefix_lock:
            self._solve(resume_file)

    def _solve(self, resume_file: str | None) -> None:
        self.say(f"Solving {self.net.name}")
        self.say(f"Learning Rate Policy: {self.param.lr_policy}")
        self.requested_early_exit = False
        if resume_file:
            self.say(f"Restoring previous solver status from {resume_file}")
            self.restore(resume_file)
        start_iter = self.iter
        self.step(self.param.max_iter - self.iter)
        p = self.param
        if p.snapshot_after_train and (not p.snapshot or self.iter % p.snapshot != 0):
            self.snapshot()
        if self.requested_early_exit:
            self.say("Optimization stopped early.")
            return
        if p.display and self.iter % p.display == 0:
            loss = self.net.forward_from_to()
            self.update_smoothed_loss(loss, start_iter)
            self.say(f"Iteration {self.iter}, loss = {self.smoothed_loss:g}")
        if p.test_interval and self.iter % p.test_interval == 0:
            self.test_all()
        self.say("Optimization Done.")

    # --- testing -----------------------------------------------------------------------------
    def test_all(self) -> list[dict[str, float]]:
        results = []
        for i in range(len(self.test_nets)):
            if self.requested_early_exit:
                break
            results.append(self.test(i))
        return results

    def test(self, test_net_id: int = 0) -> dict[str, float]:
        """Run test_iter batches of a test net; returns the mean of every output by name.

        As Caffe: sums and means are kept in the net's float type; before every batch the
        requested action is polled (a snapshot is taken, a stop ends the test unreported).
        """
        self.say(f"Iteration {self.iter}, Testing net (#{test_net_id})")
        net = self.test_nets[test_net_id]
        net.share_trained_layers_with(self.net)
        iterations = self.param.test_iter[test_net_id]
        scores: list[Any] = []
        loss = self.real(0)
        for _ in range(iterations):
            request = self.action()
            while request == "snapshot":  # a stop request may be standing: it is taken once
                self.snapshot()
                request = self.action()
            if request == "stop":
                self.requested_early_exit = True
            if self.requested_early_exit:
                break
            iter_loss = net.forward_from_to()
            if self.param.test_compute_loss:
                loss += self.real(iter_loss)
            outputs = [net.blob_list[i].data.reshape(-1) for i in net.output_blob_indices]
            if not scores:
                scores = [o.copy() for o in outputs]
            else:
                for total, o in zip(scores, outputs):
                    total += o
        if self.requested_early_exit:
            self.say("Test interrupted.")
            return {}
        if self.param.test_compute_loss:
            self.say(f"Test loss: {loss / self.real(iterations):g}")
        results: dict[str, float] = {}
        index = 0
        for blob_id, total in zip(net.output_blob_indices, scores):
            name = net.blob_names[blob_id]
            weight = net.blob_loss_weights[blob_id]
            for value in backend.to_host(total):
                mean_dtype = value / value.dtype.type(iterations)
                mean = float(mean_dtype)
                w = self.real(weight)
                suffix = f" (* {w:g} = {w * self.real(mean_dtype):g} loss)" if weight else ""
                self.say(f"    Test net output #{index}: {name} = {mean:g}{suffix}")
                results[name if total.size == 1 else f"{name}[{index}]"] = mean
                index += 1
        self.emit(events.Tested(self.iter, test_net_id, results))
        return results

    # --- the update --------------------------------------------------------------------------
    def learning_rate(self) -> float:
        rate, self.current_step = learning_rate(self.param, self.iter, self.current_step, self.net.dtype)
        self.rate = rate
        return rate

    def apply_update(self) -> None:
        before = self.current_step
        rate = self.learning_rate()
        self.say_rate(before)
        self.clip_gradients()
        for param_id, blob in enumerate(self.net.learnable_params):
            if self.fused_update(param_id, rate):
                continue
            self.normalize(param_id)
            self.regularize(param_id)
            self.compute_update_value(param_id, rate)
            blob.data -= blob.diff  # Net::Update, one parameter at a time

    def say_rate(self, step_before: int) -> None:
        """What Caffe's ApplyUpdate logs of this iteration's rate (computed by learning_rate())."""
        if self.param.lr_policy == "multistep" and self.current_step != step_before:
            self.say(f"MultiStep Status: Iteration {self.iter}, step = {self.current_step}")
        if self.param.display and self.iter % self.param.display == 0:
            self.say(f"Iteration {self.iter}, lr = {self.rate:g}")

    def graph_update(self) -> Callable[[], None] | None:
        """The whole update as GPU work a CUDA graph can hold (its rate read from ``rate_device``),
        for GraphStep to put in the graph of the step; None where the rule or settings need the host
        (then apply_update runs after the step, as before)."""
        return None

    def fused_update(self, param_id: int, rate: float) -> bool:
        """Normalize, regularize, compute the update value and apply it in one go where a rule can
        (same arithmetic, fewer passes); False leaves the step to the four separate stages."""
        return False

    def decay(self, param_id: int) -> float:
        """weight_decay * decay_mult, formed in the net's float type as Caffe's local_decay."""
        return float(self.real(self.param.weight_decay) * self.real(self.net.params_weight_decay[param_id]))

    def normalization(self) -> float:
        """1 / iter_size in the net's float type (Caffe's accum_normalization)."""
        return float(self.real(1) / self.real(self.param.iter_size))

    def scratch(self, like: Any) -> Any:
        """A reusable array shaped like ``like`` (one per shape, for the update's temporaries)."""
        return self.workspace.get(f"scratch{like.shape}", like.shape, like.dtype, self.xp)

    def normalize(self, param_id: int) -> None:
        if self.param.iter_size != 1:
            self.net.learnable_params[param_id].diff *= self.normalization()

    def regularize(self, param_id: int) -> None:
        blob = self.net.learnable_params[param_id]
        decay = self.decay(param_id)
        if not decay:
            return
        kind = self.param.regularization_type
        if kind == "L2":
            blob.diff += self.xp.multiply(blob.data, decay, out=self.scratch(blob.data))
        elif kind == "L1":
            blob.diff += decay * self.xp.sign(blob.data)
        else:
            raise EngineError(f"Unknown regularization type: {kind}")

    def clip_gradients(self) -> None:
        limit = self.param.clip_gradients
        if limit < 0:
            return
        sumsq = self.real(0)
        for blob in self.net.learnable_params:
            flat = blob.diff.reshape(-1)
            sumsq += self.real(self.xp.dot(flat, flat))  # Blob::sumsq_diff, summed in Dtype
        norm = np.sqrt(sumsq)
        if norm > self.real(limit):
            factor = self.real(limit) / norm
            self.say(
                f"Gradient clipping: scaling down gradients (L2 norm {norm:g} > {limit:g}) "
                f"by scale factor {factor:g}"
            )
            for blob in self.net.learnable_params:
                blob.diff *= float(factor)

    def compute_update_value(self, param_id: int, rate: float) -> None:
        raise NotImplementedError

    def local_rate(self, param_id: int, rate: float) -> float:
        """rate * lr_mult, formed in the net's float type as Caffe's local_rate."""
        return float(self.real(rate) * self.real(self.net.params_lr[param_id]))

    def history_of(self, param_id: int, slot: int = 0) -> Any:
        return self.history[slot * len(self.net.learnable_params) + param_id].data

    # --- snapshots ---------------------------------------------------------------------------
    def snapshot_filename(self, extension: str) -> str:
        """PREFIX_iter_N.EXT; without a prefix (Caffe 1.0 refuses to snapshot then), the net's name."""
        prefix = self.param.snapshot_prefix or self.net.name or "net"
        return self._path(f"{prefix}_iter_{self.iter}{extension}")

    def snapshot(self) -> tuple[str, str]:
        """Write the weights and the solver state in snapshot_format; returns both paths."""
        model, state_file = snapshots.save(self)
        self.last_snapshot = (model, state_file)
        self.emit(events.Snapshotted(self.iter, model, state_file))
        return model, state_file

    def restore(self, state_file: str) -> None:
        """Caffe's Restore: a name ending in ".h5" is read as an HDF5 state, anything else as binary;
        then the data layers are put where an uninterrupted run would be."""
        snapshots.load(self, state_file)
        self._seek_data()

    def close(self) -> None:
        """Stop the nets' data prefetch threads and close their sources (weights stay readable)."""
        for net in [self.net, *self.test_nets]:
            net.close()
