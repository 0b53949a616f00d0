"""CUDA graphs for training: the net's forward, backward and update as one launch.

On the GPU a LeNet iteration is bound by launches, not arithmetic: some sixty kernels, each costing
more Python and driver time than GPU time. Once the shapes stop changing, ``GraphStep`` captures
the forward and backward pass once (cupy's stream capture), with the solver's update where the
solver can give it as device work (Solver.graph_update: SGD reads its rate from a device scalar
that is set before each launch), and then replays the graph: the same kernels on the same arrays,
so the same numbers, for one launch per iteration.

Outside the graph: the data layers at the head of the net (each brings a new batch from the host),
reading the loss (the one sync per iteration), and an update that needs the host (other rules,
gradient clipping, iter_size > 1, pycaffe callbacks) after the launch. Replaying needs
- GPU arrays with the fused kernels on (engine.kernels), and no debug_info;
- layers after the data layers of the types in GRAPH_SAFE: no host syncs, no random draws, nothing
  that changes between iterations but the arrays' contents;
- the very arrays the capture saw (every blob's address and shape): a new batch shape, a moved or
  reloaded net runs one iteration eagerly and captures again.
A check that would sync inside the graph (SoftmaxWithLoss's label range) calls ``after_launch``
while ``capturing()``; it then runs after each launch. A capture that fails for any reason leaves
the net eager for good (with a warning). ``ENGINE_CUDA_GRAPHS=0`` turns graphs off (to compare or
debug); tests/engine/test_graphs.py holds the graph path to the eager one on a GPU.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from engine import backend, kernels
from proto import caffe_pb2

if TYPE_CHECKING:  # engine.net imports the layers, and SoftmaxWithLoss imports this module
    from engine.net import Net

log = logging.getLogger("engine.graphs")

ENABLED = os.environ.get("ENGINE_CUDA_GRAPHS", "1") != "0"
# Checked on a GPU (tests/engine/test_graphs.py). AVE pooling, Concat and LRN were tried (2026-12,
# an H200): their capture is invalidated by some operation of theirs, so those nets stay eager.
GRAPH_SAFE = frozenset(
    {"Convolution", "Pooling", "InnerProduct", "ReLU", "Sigmoid", "TanH", "SoftmaxWithLoss", "Split"}
    | {"Flatten", "Reshape"}
)

# Checks collected while a capture runs, per thread: the window may train and run an initialisation
# experiment on the GPU at once, each capturing its own graph.
_capture = threading.local()
# Eager iterations before a capture. The capture may not allocate device memory (cudaMalloc is not
# allowed while capturing), so the graph's pool must already hold every block it asks for: the
# first iteration finds layers holding nothing from a previous one, the second is the steady state
# (each layer still holds what the one before made, as it will during the capture).
SETTLING = 2


def capturing() -> bool:
    """True while a graph is being captured: no host syncs now (see after_launch)."""
    return getattr(_capture, "checks", None) is not None


def after_launch(check: Callable[[], None]) -> None:
    """Run ``check`` (which may sync and raise) after each launch of the graph being captured."""
    checks = getattr(_capture, "checks", None)
    if checks is None:
        raise RuntimeError("after_launch outside a capture")
    checks.append(check)


class GraphStep:
    """``forward_backward()`` for a train net: eager, or through a captured graph when it can."""

    def __init__(self, net: Net) -> None:
        self.net = net
        self.graph: Any = None
        self.checks: list[Callable[[], None]] = []
        self.loss: Any = None  # the graph's loss, a device scalar
        self.captured: tuple[Any, ...] | None = None  # the arrays the graph uses, and if it updates
        self.seen: tuple[Any, ...] | None = None  # the same of the last eager iteration
        self.pool: Any = None  # the graph's own memory pool: its scratch is never handed out outside
        self.stream: Any = None
        self.failure: Exception | None = None  # why the capture failed, if it did
        self.settled = 0  # eager iterations on the graph's stream since the arrays last changed
        self.sources = 0  # data layers at the head of the net, run eagerly
        while self.sources < len(net.layers) and not net.bottom_vecs[self.sources]:
            self.sources += 1
        self.broken = not self.graph_safe()

    def graph_safe(self) -> bool:
        net = self.net
        for i, layer in enumerate(net.layers):
            if i < self.sources:
                if net.layer_need_backward[i] or any(layer.loss(t) for t in range(len(net.top_vecs[i]))):
                    return False
            elif layer.type not in GRAPH_SAFE or (
                layer.type == "Pooling" and layer.param.pooling_param.pool != caffe_pb2.PoolingParameter.MAX
            ):
                return False
        return self.sources < len(net.layers)

    def usable(self) -> bool:
        net = self.net
        if self.broken or not ENABLED or net.debug_info or not net.blob_list:
            return False
        return kernels.enabled(net.blob_list[-1].data)

    def arrays(self) -> tuple[Any, ...]:
        """Where every blob and parameter lives now (addresses and shapes)."""
        parts: list[Any] = []
        for blob in (*self.net.blob_list, *self.net.params):
            parts += (blob.data.data.ptr, blob.diff.data.ptr, blob.data.shape)
        return tuple(parts)

    def forward_backward(self, update: Callable[[], None] | None = None) -> float:
        """Forward and backward; with ``update`` (the solver's whole parameter update as device work,
        see Solver.graph_update) the update too, inside the same graph: the parameters have moved
        when this returns."""
        if not self.usable():
            self.graph = None
            loss = self.net.forward_backward()
            if update is not None:
                update()
            return loss
        net = self.net
        for i in range(self.sources):
            net.layers[i].reshape(net.bottom_vecs[i], net.top_vecs[i])
            net.layers[i].forward(net.bottom_vecs[i], net.top_vecs[i])
        now = (self.arrays(), update is not None)
        if self.graph is not None and now == self.captured:
            return self.replay()
        self.graph = None
        if now != self.seen:
            self.seen, self.settled = now, 0
        if self.settled < SETTLING:  # eager iterations settle the arrays (and their scratch), and
            with self.own_stream():  # fill the graph's pool with the blocks the capture will take
                loss = self.body(update)
            self.seen = (self.arrays(), update is not None)
            self.settled += 1
            return float(loss)
        return self.capture(update)

    @contextlib.contextmanager
    def own_stream(self) -> Iterator[None]:
        """Run on the graph's stream, allocating from the graph's pool (cupy's pool hands a block
        freed on one stream only to the same stream), ordered after and before the default stream's
        work; its scratch stays the graph's, never handed out to arrays outside it."""
        cupy = backend.array_module("gpu")
        if self.pool is None:
            self.pool, self.stream = cupy.cuda.MemoryPool(), cupy.cuda.Stream(non_blocking=True)
        cupy.cuda.runtime.deviceSynchronize()  # the graph's stream does not wait for the default one
        with cupy.cuda.using_allocator(self.pool.malloc), self.stream:
            yield
        self.stream.synchronize()

    def body(self, update: Callable[[], None] | None = None) -> Any:
        """Forward (after the data layers) and backward, as Net.forward_from_to and backward do, then
        ``update`` if given; the loss stays on the device."""
        net = self.net
        total: Any = 0
        for i in range(self.sources, len(net.layers)):
            layer, bottom, top = net.layers[i], net.bottom_vecs[i], net.top_vecs[i]
            layer.reshape(bottom, top)
            layer.forward(bottom, top)
            for top_id, blob in enumerate(top):
                if layer.loss(top_id):
                    total = total + (blob.data * blob.diff).sum()
        net.backward_from_to(end=self.sources)
        if update is not None:
            update()
        return total

    def capture(self, update: Callable[[], None] | None) -> float:
        cupy = backend.array_module("gpu")
        # Thread-local: the window's thread may use the GPU meanwhile without spoiling the capture.
        mode = getattr(cupy.cuda.runtime, "streamCaptureModeThreadLocal", None)
        failure: Exception | None = None
        _capture.checks = []
        try:
            with self.own_stream():
                self.stream.begin_capture(mode) if mode is not None else self.stream.begin_capture()
                try:
                    loss = self.body(update)
                finally:
                    graph = self.stream.end_capture()
            if not hasattr(loss, "shape"):
                raise RuntimeError("the net has no loss")
        except Exception as exc:  # a sync, or an operation capture does not allow
            failure = exc
        finally:
            checks, _capture.checks = _capture.checks, None
        if failure is not None:
            self.failure = failure  # kept for tools/gpu_graph_probe.py
            log.warning(
                "CUDA graph capture failed (%s: %s); training goes on without",
                type(failure).__name__,
                failure,
            )
            self.broken = True
            return float(self.body(update))  # nothing captured has run: this iteration again, eagerly
        self.graph, self.checks, self.loss = graph, checks, loss
        self.captured = (self.arrays(), update is not None)
        return self.replay()

    def replay(self) -> float:
        self.graph.launch()
        for check in self.checks:
            check()
        return float(self.loss)
