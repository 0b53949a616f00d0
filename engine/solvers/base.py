"""Solver: Caffe's training loop around a train net and its test nets.

The base class owns everything the update rules share: building the nets from the solver's
fields, the learning-rate policy, iter_size accumulation, L1/L2 regularisation, gradient
clipping, the smoothed loss, testing, snapshots and restore. A subclass overrides only
``compute_update_value`` (and says how many history blobs it keeps per parameter).
"""

from __future__ import annotations

import logging
import math
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from engine import backend, parallel, rng
from engine.blob import Blob
from engine.errors import EngineError
from engine.graphs import GraphStep
from engine.net import Net
from engine.solvers.lr_policy import learning_rate
from proto import caffe_pb2

log = logging.getLogger("engine.solver")


def _read_net(path: str) -> caffe_pb2.NetParameter:
    from proto import textio

    return textio.read_net(path)


class Solver:
    type: ClassVar[str] = ""
    history_per_param: ClassVar[int] = 1

    def __init__(
        self,
        param: caffe_pb2.SolverParameter,
        xp: Any = None,
        log_fn: Callable[[str], None] | None = None,
        base_dir: str | os.PathLike[str] | None = None,
    ) -> None:
        """``base_dir`` resolves relative net and snapshot paths (Caffe uses the working directory)."""
        self.param = caffe_pb2.SolverParameter()
        self.param.CopyFrom(param)
        self.say: Callable[[str], None] = log_fn or log.info
        self.base_dir = Path(base_dir) if base_dir is not None else None
        self.xp = xp if xp is not None else backend.array_module()
        if self.param.average_loss < 1:
            raise EngineError("average_loss should be non-negative.")
        if self.param.random_seed >= 0:
            rng.set_random_seed(self.param.random_seed)
        self.net = self._init_train_net()
        self.test_nets = self._init_test_nets()
        self.iter = 0
        self.current_step = 0
        self.losses: list[float] = []
        self.smoothed_loss = 0.0
        self.requested_early_exit = False
        self.callbacks: list[Any] = []  # objects with on_start() / on_gradients_ready(), as pycaffe's
        # Asked after each iteration: 'stop', 'snapshot' or None.
        self.action: Callable[[], str | None] = lambda: None
        # Listeners get (kind, payload): "iteration", "test", "snapshot". Plain callables, no Qt.
        self.listeners: list[Callable[[str, dict[str, Any]], None]] = []
        self.rate = 0.0
        self.history = [
            Blob(p.shape, p.dtype, self.xp)
            for _ in range(self.history_per_param)
            for p in self.net.learnable_params
        ]
        self.last_snapshot: tuple[str, str] | None = None
        self.workspace = backend.Workspace()
        self.graph_step = GraphStep(self.net)  # forward + backward as one CUDA graph where it can

    def emit(self, kind: str, **payload: Any) -> None:
        for listener in self.listeners:
            listener(kind, payload)

    # --- nets --------------------------------------------------------------------------------
    def _path(self, path: str) -> str:
        if self.base_dir is None or os.path.isabs(path):
            return path
        return str(self.base_dir / path)

    def _init_train_net(self) -> Net:
        p = self.param
        sources = [f for f in ("net", "net_param", "train_net", "train_net_param") if p.HasField(f)]
        if not sources:
            raise EngineError(
                "SolverParameter must specify a train net using one of these fields: "
                "net, net_param, train_net, train_net_param"
            )
        if len(sources) > 1:
            raise EngineError(
                "SolverParameter must not contain more than one of these fields specifying a train_net: "
                + ", ".join(sources)
            )
        source = sources[0]
        if source.endswith("_param"):
            net_param = caffe_pb2.NetParameter()
            net_param.CopyFrom(getattr(p, source))
        else:
            net_param = _read_net(self._path(getattr(p, source)))
        state = caffe_pb2.NetState(phase=caffe_pb2.TRAIN)
        state.MergeFrom(net_param.state)
        state.MergeFrom(p.train_state)
        net_param.state.CopyFrom(state)
        self.say(f"Creating training net from {source}")
        return Net(net_param, xp=self.xp)

    def _init_test_nets(self) -> list[Net]:
        p = self.param
        generic = [f for f in ("net", "net_param") if p.HasField(f)]
        if len(generic) > 1:
            raise EngineError("Both net_param and net_file may not be specified.")
        specific = len(p.test_net_param) + len(p.test_net)
        if generic and len(p.test_iter) < specific or not generic and len(p.test_iter) != specific:
            raise EngineError("test_iter must be specified for each test network.")
        instances = specific + (len(p.test_iter) - specific)
        if p.test_state and len(p.test_state) != instances:
            raise EngineError("test_state must be unspecified or specified once per test net.")
        if instances and p.test_interval <= 0:
            raise EngineError("test_interval must be positive when there are test nets")
        params: list[caffe_pb2.NetParameter] = [caffe_pb2.NetParameter() for _ in range(instances)]
        k = 0
        for net_param in p.test_net_param:
            params[k].CopyFrom(net_param)
            k += 1
        for path in p.test_net:
            params[k].CopyFrom(_read_net(self._path(path)))
            k += 1
        if generic:
            shared = p.net_param if generic[0] == "net_param" else _read_net(self._path(p.net))
            for i in range(k, instances):
                params[i].CopyFrom(shared)
        nets = []
        for i, net_param in enumerate(params):
            state = caffe_pb2.NetState(phase=caffe_pb2.TEST)
            state.MergeFrom(net_param.state)
            if p.test_state:
                state.MergeFrom(p.test_state[i])
            net_param.state.CopyFrom(state)
            self.say(f"Creating test net (#{i}) specified by {'net' if generic else 'test_net'}")
            nets.append(Net(net_param, xp=self.xp))
        return nets

    # --- the loop ----------------------------------------------------------------------------
    def step(self, iters: int) -> None:
        with parallel.gemms_in_pool(self.xp):  # the CPU's cores for the engine's own threads
            self._step(iters)

    def _step(self, iters: int) -> None:
        start_iter = self.iter
        stop_iter = self.iter + iters
        self.losses = []
        self.smoothed_loss = 0.0
        p = self.param
        timer = time.perf_counter()
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
            loss = 0.0
            with np.errstate(over="ignore", invalid="ignore"):  # a diverging run is reported below, once
                for _ in range(p.iter_size):
                    loss += self.graph_step.forward_backward()
            loss /= p.iter_size
            if not math.isfinite(loss):
                raise EngineError(f"Iteration {self.iter}: loss is {loss}; {self.first_non_finite()}")
            self.update_smoothed_loss(loss, start_iter)
            if display:
                self.say(
                    f"Iteration {self.iter} ({time.perf_counter() - timer:.3f}s), "
                    f"loss = {self.smoothed_loss:g}"
                )
                timer = time.perf_counter()
                self._display_outputs()
            for callback in self.callbacks:
                callback.on_gradients_ready()
            self.apply_update()
            self.emit("iteration", iter=self.iter, loss=loss, smoothed_loss=self.smoothed_loss, lr=self.rate)
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
                suffix = f" (* {weight:g} = {weight * value:g} loss)" if weight else ""
                self.say(f"    Train net output #{score_index}: {name} = {value:g}{suffix}")
                score_index += 1

    def update_smoothed_loss(self, loss: float, start_iter: int) -> None:
        average = self.param.average_loss
        if len(self.losses) < average:
            self.losses.append(loss)
            size = len(self.losses)
            self.smoothed_loss = (self.smoothed_loss * (size - 1) + loss) / size
        else:
            idx = (self.iter - start_iter) % average
            self.smoothed_loss += (loss - self.losses[idx]) / average
            self.losses[idx] = loss

    def solve(self, resume_file: str | None = None) -> None:
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
        return [self.test(i) for i in range(len(self.test_nets))]

    def test(self, test_net_id: int = 0) -> dict[str, float]:
        """Run test_iter batches of a test net; returns the mean of every output by name."""
        self.say(f"Iteration {self.iter}, Testing net (#{test_net_id})")
        net = self.test_nets[test_net_id]
        net.share_trained_layers_with(self.net)
        iterations = self.param.test_iter[test_net_id]
        scores: list[Any] = []
        loss = 0.0
        for _ in range(iterations):
            iter_loss = net.forward_from_to()
            if self.param.test_compute_loss:
                loss += iter_loss
            outputs = [net.blob_list[i].data.reshape(-1) for i in net.output_blob_indices]
            if not scores:
                scores = [o.astype(np.float64, copy=True) for o in outputs]
            else:
                for total, o in zip(scores, outputs):
                    total += o
        if self.param.test_compute_loss:
            self.say(f"Test loss: {loss / iterations:g}")
        results: dict[str, float] = {}
        index = 0
        for blob_id, total in zip(net.output_blob_indices, scores):
            name = net.blob_names[blob_id]
            weight = net.blob_loss_weights[blob_id]
            for value in backend.to_host(total):
                mean = float(value) / iterations
                suffix = f" (* {weight:g} = {weight * mean:g} loss)" if weight else ""
                self.say(f"    Test net output #{index}: {name} = {mean:g}{suffix}")
                results[name if total.size == 1 else f"{name}[{index}]"] = mean
                index += 1
        self.emit("test", iter=self.iter, net=test_net_id, scores=results)
        return results

    # --- the update --------------------------------------------------------------------------
    def learning_rate(self) -> float:
        rate, self.current_step = learning_rate(self.param, self.iter, self.current_step)
        self.rate = rate
        return rate

    def apply_update(self) -> None:
        before = self.current_step
        rate = self.learning_rate()
        if self.param.lr_policy == "multistep" and self.current_step != before:
            self.say(f"MultiStep Status: Iteration {self.iter}, step = {self.current_step}")
        if self.param.display and self.iter % self.param.display == 0:
            self.say(f"Iteration {self.iter}, lr = {rate:g}")
        self.clip_gradients()
        for param_id, blob in enumerate(self.net.learnable_params):
            if self.fused_update(param_id, rate):
                continue
            self.normalize(param_id)
            self.regularize(param_id)
            self.compute_update_value(param_id, rate)
            blob.data -= blob.diff  # Net::Update, one parameter at a time

    def fused_update(self, param_id: int, rate: float) -> bool:
        """Normalize, regularize, compute the update value and apply it in one go where a rule can
        (same arithmetic, fewer passes); False leaves the step to the four separate stages."""
        return False

    def decay(self, param_id: int) -> float:
        return self.param.weight_decay * self.net.params_weight_decay[param_id]

    def scratch(self, like: Any) -> Any:
        """A reusable array shaped like ``like`` (one per shape, for the update's temporaries)."""
        return self.workspace.get(f"scratch{like.shape}", like.shape, like.dtype, self.xp)

    def normalize(self, param_id: int) -> None:
        if self.param.iter_size != 1:
            self.net.learnable_params[param_id].diff *= 1.0 / self.param.iter_size

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
        sumsq = sum(float((b.diff * b.diff).sum()) for b in self.net.learnable_params)
        norm = sumsq**0.5
        if norm > limit:
            factor = limit / norm
            self.say(
                f"Gradient clipping: scaling down gradients (L2 norm {norm:g} > {limit:g}) "
                f"by scale factor {factor:g}"
            )
            for blob in self.net.learnable_params:
                blob.diff *= factor

    def compute_update_value(self, param_id: int, rate: float) -> None:
        raise NotImplementedError

    def local_rate(self, param_id: int, rate: float) -> float:
        return rate * self.net.params_lr[param_id]

    def history_of(self, param_id: int, slot: int = 0) -> Any:
        return self.history[slot * len(self.net.learnable_params) + param_id].data

    # --- snapshots ---------------------------------------------------------------------------
    def snapshot_filename(self, extension: str) -> str:
        """PREFIX_iter_N.EXT; without a prefix (Caffe 1.0 refuses to snapshot then), the net's name."""
        prefix = self.param.snapshot_prefix or self.net.name or "net"
        return self._path(f"{prefix}_iter_{self.iter}{extension}")

    def snapshot(self) -> tuple[str, str]:
        """Write PREFIX_iter_N.caffemodel and .solverstate; returns both paths."""
        from proto import binaryio

        if self.param.snapshot_format == caffe_pb2.SolverParameter.HDF5:
            raise EngineError("snapshot_format HDF5 is not supported; use BINARYPROTO")
        model = self.snapshot_filename(".caffemodel")
        self.say(f"Snapshotting to binary proto file {model}")
        binaryio.write_caffemodel(model, self.net.to_proto(write_diff=self.param.snapshot_diff))
        state = caffe_pb2.SolverState(iter=self.iter, learned_net=model, current_step=self.current_step)
        for blob in self.history:
            state.history.append(blob.to_proto())
        state_file = self.snapshot_filename(".solverstate")
        self.say(f"Snapshotting solver state to binary proto file {state_file}")
        binaryio.write_solverstate(state_file, state)
        self.last_snapshot = (model, state_file)
        self.emit("snapshot", iter=self.iter, model=model, state=state_file)
        return model, state_file

    def restore(self, state_file: str) -> None:
        from proto import binaryio

        state = binaryio.read_solverstate(state_file)
        self.iter = state.iter
        if state.learned_net:
            learned = state.learned_net
            if not os.path.exists(learned):  # moved together with the state file
                learned = os.path.join(os.path.dirname(state_file), os.path.basename(learned))
            self.net.copy_trained_layers_from(binaryio.read_caffemodel(learned))
        self.current_step = state.current_step
        if len(state.history) != len(self.history):
            raise EngineError(
                f"{state_file}: Incorrect length of history blobs "
                f"({len(state.history)} in the file, {self.type} keeps {len(self.history)})"
            )
        for blob, proto in zip(self.history, state.history):
            blob.from_proto(proto)
        self._seek_data()
