"""One net trained under several initialisations side by side, on the same batches in the same order.

Each variant is a filler setting for the weights (engine/experiments/filler_spec.py). Its solver
is the user's, with the variant's filler in the net's weight fillers and ``random_seed`` set to
the experiment's seed, so every variant reads the same records in the same order and gets the same
per-iteration noise (dropout); each layer's parameters are drawn from (seed, layer name)
(engine/experiments/seeded_fill.py), so a variant that changes one layer's filler starts every
other layer as the others do: the initialisation is the only difference. The variants take
turns, one iteration each, in the calling thread, so their curves grow together; each batch is
fingerprinted so that a data layer drawing at random in a way the seed does not fix shows as
``batches_differ_at``.

What is recorded per variant and reported as events (engine/experiments/events.py): the loss of
every iteration (and its smoothing over the solver's average_loss), the test net's scores every
``test_interval`` iterations and at the end, and every ``stats_every`` iterations, per layer, the
std of the activations, the norm of the gradient reaching the layer and the fraction of ReLU
outputs at zero (engine/experiments/layer_stats.py). At the end each variant gets a verdict
(engine/experiments/verdict.py), a stopped one on the iterations it reached. ``pause``, ``resume``
and ``stop`` may be called from another thread and apply to every variant; ``action``, polled as a
solver's is (after every iteration, before every test batch), stops them too when it says "stop" (the
command line's SIGINT handler, engine/cli/signals.py). No snapshot is written. No Qt.
"""

from __future__ import annotations

import collections
import hashlib
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from engine import backend, events, rng
from engine.data.paths import DEFAULT, DataPaths
from engine.errors import EngineError
from engine.experiments import events as exp
from engine.experiments import filler_spec, layer_stats, seeded_fill
from engine.experiments.verdict import Verdict, judge
from engine.net import Net
from engine.solvers import Solver, create_solver
from proto import caffe_pb2

MIN_VARIANTS, MAX_VARIANTS = 2, 6
TEST_ITER = 10  # test batches by default, at most (LeNet's solver asks for 100 batches of 100)
Listener = Callable[[exp.Event], None]

INT_MAX = 2**31 - 1


@dataclass(frozen=True)
class Variant:
    name: str
    filler: caffe_pb2.FillerParameter | None  # None: the net's fillers as written

    @classmethod
    def parse(cls, name: str, spec: str) -> Variant:
        return cls(name, filler_spec.parse(spec))

    @property
    def spec(self) -> str:
        return filler_spec.describe(self.filler)


@dataclass
class Curves:
    """What one variant's run recorded."""

    name: str
    spec: str
    iters: list[int] = field(default_factory=list)
    loss: list[float] = field(default_factory=list)
    smoothed: list[float] = field(default_factory=list)
    lr: list[float] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)  # since the experiment started
    tests: list[tuple[int, dict[str, float]]] = field(default_factory=list)
    stat_iters: list[int] = field(default_factory=list)
    act_std: list[tuple[float, ...]] = field(default_factory=list)
    grad_norm: list[tuple[float, ...]] = field(default_factory=list)
    dead: list[tuple[float, ...]] = field(default_factory=list)
    batches: list[str] = field(default_factory=list)  # a digest of each iteration's train batch
    error: str | None = None
    diverged: bool = False  # the error is a loss that became NaN or infinite
    verdict: Verdict | None = None

    def accuracy(self, name: str) -> list[tuple[int, float]]:
        return [(it, scores[name]) for it, scores in self.tests if name in scores]


def inline_nets(param: caffe_pb2.SolverParameter) -> caffe_pb2.SolverParameter:
    """``param`` with its net files read into net_param / train_net_param / test_net_param."""
    from proto import textio

    p = caffe_pb2.SolverParameter()
    p.CopyFrom(param)
    if p.net:
        p.net_param.CopyFrom(textio.read_net(p.net))
        p.ClearField("net")
    if p.train_net:
        p.train_net_param.CopyFrom(textio.read_net(p.train_net))
        p.ClearField("train_net")
    for path in p.test_net:
        p.test_net_param.add().CopyFrom(textio.read_net(path))
    p.ClearField("test_net")
    return p


def nets_of(param: caffe_pb2.SolverParameter) -> list[caffe_pb2.NetParameter]:
    """The inline nets of ``param``, train first."""
    found = [n for n in (param.train_net_param, param.net_param) if n.layer]
    return found + list(param.test_net_param)


class CompareInit:
    def __init__(
        self,
        param: caffe_pb2.SolverParameter,
        variants: Sequence[Variant],
        iterations: int,
        seed: int = 1,
        layers: Sequence[str] = (),
        listener: Listener | None = None,
        *,
        test_interval: int | None = None,
        test_iter: int | None = None,
        stats_every: int = 1,
        data_paths: DataPaths = DEFAULT,
        xp: Any = None,
    ) -> None:
        """``param``: the user's solver (its net files are read here); ``test_interval`` defaults
        to the solver's, at most a tenth of the run; ``test_iter``, to the solver's, at most
        TEST_ITER batches (the experiment compares variants, it does not score a model)."""
        if not MIN_VARIANTS <= len(variants) <= MAX_VARIANTS:
            raise filler_spec.SpecError(
                f"give {MIN_VARIANTS} to {MAX_VARIANTS} variants to compare, not {len(variants)}"
            )
        names = [v.name for v in variants]
        if len(set(names)) != len(names):
            raise filler_spec.SpecError(f"two variants are named '{_first_repeat(names)}'")
        if not 0 <= seed < 2**63:  # the solver's random_seed is an int64, max_iter an int
            raise filler_spec.SpecError(f"the seed must be 0 or more (and under 2**63), got {seed}")
        if not 1 <= iterations <= INT_MAX:
            raise filler_spec.SpecError(f"iterations must be 1 to {INT_MAX:,}, got {iterations}")
        self.param = inline_nets(param)
        nets = nets_of(self.param)
        if not nets:
            raise filler_spec.SpecError("the solver names no net")
        filler_spec.check_layers(nets[0], layers)
        self.variants = list(variants)
        self.iterations = iterations
        self.seed = seed
        self.layers = tuple(layers)
        self.listeners: list[Listener] = [listener] if listener else []
        self.test_interval = test_interval
        self.test_iter = test_iter
        self.stats_every = max(1, stats_every)
        self.data_paths = data_paths
        self.xp = xp
        self.solvers: list[Solver | None] = []
        self.curves = [Curves(v.name, v.spec) for v in self.variants]
        self.batches_differ_at: int | None = None
        self.accuracy: tuple[str, float] | None = None  # the test score judged, its chance level
        self._plotted: list[int] = []
        self._relus: list[bool] = []
        self._windows: list[collections.deque[float]] = []
        self._started = time.perf_counter()
        self._wake = threading.Condition()
        self._status = events.RunStatus.STARTING
        self.action: Callable[[], str | None] = lambda: None  # as Solver.action; only "stop" is heeded

    # --- requests from other threads ---------------------------------------------------------
    @property
    def status(self) -> events.RunStatus:
        return self._status

    def pause(self) -> None:
        self._ask({events.RunStatus.STARTING, events.RunStatus.RUNNING}, events.RunStatus.PAUSING)

    def resume(self) -> None:
        self._ask({events.RunStatus.PAUSING, events.RunStatus.PAUSED}, events.RunStatus.RUNNING)

    def stop(self) -> None:
        active = {s for s in events.RunStatus if s.active}
        self._ask(active - {events.RunStatus.STOPPING}, events.RunStatus.STOPPING)

    def _ask(self, when: set[events.RunStatus], status: events.RunStatus) -> None:
        with self._wake:
            if self._status in when:
                self._status = status
                self._wake.notify_all()

    def _stopping(self) -> bool:
        return self._status is events.RunStatus.STOPPING

    def _poll(self) -> bool:
        """True when the run is to stop (asked here or through ``action``)."""
        if self.action() == "stop":
            self.stop()
        return self._stopping()

    def _between_iterations(self) -> bool:
        """Wait out a pause; True when the run is to stop."""
        self._poll()
        with self._wake:
            if self._status is not events.RunStatus.PAUSING:
                return self._stopping()
            self._status = events.RunStatus.PAUSED
        at = self._done_iterations()
        self._emit(events.Paused(at))
        with self._wake:
            while self._status is events.RunStatus.PAUSED:
                self._wake.wait()
            stopping = self._stopping()
        if not stopping:
            self._emit(events.Resumed(at))
        return stopping

    # --- the run -----------------------------------------------------------------------------
    def _emit(self, event: exp.Event) -> None:
        for listener in self.listeners:
            listener(event)

    def _done_iterations(self) -> int:
        return max((s.iter for s in self.solvers if s is not None), default=0)

    def run(self) -> list[Curves]:
        """Train every variant ``iterations`` times (or until stopped); their curves and verdicts."""
        start = self._started = time.perf_counter()
        with rng.seeded(self.seed):  # the experiment's draws are its own, whatever other threads draw
            try:
                self._run()
            except EngineError as exc:
                self._end(events.RunStatus.FAILED)
                self._emit(events.Failed(str(exc)))
                return self.curves
            finally:
                for solver in self.solvers:
                    if solver is not None:
                        solver.close()
        status = events.RunStatus.STOPPED if self._stopping() else events.RunStatus.FINISHED
        self._end(status)
        self._emit(events.Finished(self._done_iterations(), status, time.perf_counter() - start))
        return self.curves

    def _end(self, status: events.RunStatus) -> None:
        with self._wake:
            self._status = status

    def _run(self) -> None:
        self.solvers = [self._build(k) for k in range(len(self.variants))]
        built = [s for s in self.solvers if s is not None]
        if not built:
            raise EngineError(f"no variant could be built: {self.curves[0].error}")
        net = built[0].net
        plotted = layer_stats.plotted_layers(net)
        relus = layer_stats.relu_outputs(net, plotted)
        accuracy = self.accuracy = _accuracy_output(built[0])
        self._plotted, self._relus = plotted, relus
        average = max(1, built[0].param.average_loss)
        self._windows = [collections.deque[float](maxlen=average) for _ in self.variants]
        self._ask({events.RunStatus.STARTING}, events.RunStatus.RUNNING)
        self._emit(events.Started(0, self.iterations))
        self._emit(
            exp.Ready(
                tuple(v.name for v in self.variants),
                tuple(net.layer_names[i] for i in plotted),
                tuple(relus),
                self.iterations,
            )
        )
        for it in range(self.iterations):
            if self._between_iterations():
                break
            live = [(k, s) for k, s in enumerate(self.solvers) if s is not None and not self.curves[k].error]
            if not live:
                break
            for k, solver in live:
                self._iterate(k, solver, it)
        if not self._stopping():
            self._final_tests()
        for k, curves in enumerate(self.curves):
            name, chance = accuracy if accuracy else ("", None)
            curves.verdict = judge(
                curves.loss,
                curves.accuracy(name) if name else [],
                chance,
                len(curves.loss),
                curves.error,
                curves.diverged,
                planned=self.iterations,
            )
            self._emit(exp.Judged(k, curves.verdict))

    def solver_param(self, variant: Variant) -> caffe_pb2.SolverParameter:
        """The solver ``variant`` trains with: its filler in, seeded, no snapshots, no display."""
        p = caffe_pb2.SolverParameter()
        p.CopyFrom(self.param)
        for net in nets_of(p):
            filler_spec.apply(net, variant.filler, self.layers)
        p.random_seed = self.seed
        p.max_iter = self.iterations
        p.snapshot = 0
        p.snapshot_after_train = False
        p.display = 0
        p.debug_info = False
        if self.test_interval is not None:
            p.test_interval = self.test_interval
        elif p.test_interval > 0:
            p.test_interval = min(p.test_interval, max(1, self.iterations // 10))
        if self.test_iter is not None:
            p.test_iter[:] = [self.test_iter] * len(p.test_iter)
        else:
            p.test_iter[:] = [min(n, TEST_ITER) for n in p.test_iter]
        return p

    def _build(self, k: int) -> Solver | None:
        try:
            solver = create_solver(
                self.solver_param(self.variants[k]),
                xp=self.xp,
                log_fn=lambda _line: None,
                data_paths=self.data_paths,
            )
            seeded_fill.refill(solver.net, self.seed)  # each layer's start depends on its own filler
        except EngineError as exc:
            self._fail(k, str(exc))
            return None
        solver.action = lambda: "stop" if self._poll() else None

        def tested(event: events.Event, k: int = k) -> None:
            if isinstance(event, events.Tested) and event.net == 0:
                self.curves[k].tests.append((event.iter, dict(event.scores)))
                self._emit(exp.Scored(k, event))

        solver.listeners.append(tested)
        return solver

    def _fail(self, k: int, message: str) -> None:
        self.curves[k].error = message
        self._emit(exp.VariantFailed(k, message))

    def _iterate(self, k: int, solver: Solver, it: int) -> None:
        losses: list[events.Iteration] = []
        solver.listeners.append(_collect(losses))
        try:
            solver.step(1)
        except EngineError as exc:
            # The solver refuses a non-finite loss before reporting it: "Iteration N: loss is nan; ..."
            self.curves[k].diverged = ": loss is " in str(exc)
            self._fail(k, str(exc))
            return
        except Exception as exc:  # a variant's failure ends that variant, never the experiment
            self._fail(k, f"{type(exc).__name__}: {exc}")
            return
        finally:
            solver.listeners.pop()
        if not losses:  # stopped in a test before the iteration ran
            return
        curves, step = self.curves[k], losses[-1]
        window = self._windows[k]
        window.append(step.loss)
        smoothed = sum(window) / len(window)
        curves.iters.append(step.iter)
        curves.loss.append(step.loss)
        curves.smoothed.append(smoothed)
        curves.lr.append(step.lr)
        curves.seconds.append(time.perf_counter() - self._started)
        self._check_batch(k, it, batch_digest(solver.net))
        self._emit(exp.Step(k, events.Iteration(step.iter, step.loss, smoothed, step.lr)))
        if step.iter % self.stats_every == 0:
            shot = layer_stats.measure(solver.net, self._plotted, self._relus)
            curves.stat_iters.append(step.iter)
            curves.act_std.append(shot.act_std)
            curves.grad_norm.append(shot.grad_norm)
            curves.dead.append(shot.dead)
            self._emit(exp.Stats(k, step.iter, shot.act_std, shot.grad_norm, shot.dead))

    def _check_batch(self, k: int, it: int, digest: str) -> None:
        self.curves[k].batches.append(digest)
        first = next((c for c in self.curves if len(c.batches) > it), None)
        if first is not None and first.batches[it] != digest and self.batches_differ_at is None:
            self.batches_differ_at = it

    def _final_tests(self) -> None:
        for k, solver in enumerate(self.solvers):
            if solver is None or self.curves[k].error or not solver.test_nets:
                continue
            tests = self.curves[k].tests
            if tests and tests[-1][0] == solver.iter:
                continue
            try:
                solver.test_all()
            except EngineError as exc:
                self._fail(k, str(exc))


def _collect(into: list[events.Iteration]) -> Callable[[events.Event], None]:
    def listener(event: events.Event) -> None:
        if isinstance(event, events.Iteration):
            into.append(event)

    return listener


def batch_digest(net: Net) -> str:
    """A fingerprint of what the net's data layers (the layers without bottoms) produced."""
    digest = hashlib.blake2b(digest_size=16)
    for bottoms, tops in zip(net.bottom_vecs, net.top_vecs):
        if not bottoms:
            for blob in tops:
                digest.update(backend.to_host(blob.data).tobytes())
    return digest.hexdigest()


def _accuracy_output(solver: Solver) -> tuple[str, float] | None:
    """The first test net's first Accuracy output and its chance level (top_k / classes)."""
    if not solver.test_nets:
        return None
    net = solver.test_nets[0]
    for i, layer in enumerate(net.layers):
        if layer.type == "Accuracy":
            accuracy = layer.param.accuracy_param
            scores = net.bottom_vecs[i][0].shape
            axis = accuracy.axis if accuracy.axis >= 0 else len(scores) + accuracy.axis
            return net.blob_names[net.top_id_vecs[i][0]], accuracy.top_k / scores[axis]
    return None


def _first_repeat(names: list[str]) -> str:
    seen: set[str] = set()
    for name in names:
        if name in seen:
            return name
        seen.add(name)
    return ""
