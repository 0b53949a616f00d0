"""CUDA graphs for training: the net's forward and backward as one launch.

On the GPU a LeNet iteration is bound by launches, not arithmetic: some sixty kernels, each costing
more Python and driver time than GPU time. Once the shapes stop changing, ``GraphStep`` captures
the forward and backward pass once (cupy's stream capture) and then replays the graph: the same
kernels on the same arrays, so the same numbers, for one launch per iteration.

Outside the graph, as before: the data layers at the head of the net (each brings a new batch from
the host), reading the loss (the one sync per iteration), and the solver's update (its rate changes
from one iteration to the next). Replaying needs
- GPU arrays with the fused kernels on (engine.kernels), and no debug_info;
- layers after the data layers of the types in GRAPH_SAFE: no host syncs, no random draws, nothing
  that changes between iterations but the arrays' contents;
- the very arrays the capture saw (every blob's address and shape): a new batch shape, a moved or
  reloaded net runs one iteration eagerly and captures again.
A check that would sync inside the graph (SoftmaxWithLoss's label range) calls ``after_launch``
while ``capturing()``; it then runs after each launch. A capture that fails for any reason leaves
the net eager for good (with a warning). ``ENGINE_CUDA_GRAPHS=1`` turns graphs on: they are off by
default until a GPU run has checked them (tests/engine/test_graphs.py, -k cupy) and timed them.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from engine import backend, kernels
from proto import caffe_pb2

if TYPE_CHECKING:  # engine.net imports the layers, and SoftmaxWithLoss imports this module
    from engine.net import Net

log = logging.getLogger("engine.graphs")

ENABLED = os.environ.get("ENGINE_CUDA_GRAPHS", "0") == "1"
GRAPH_SAFE = frozenset(
    {"Convolution", "Pooling", "InnerProduct", "ReLU", "Sigmoid", "TanH", "SoftmaxWithLoss", "Split"}
    | {"Flatten", "Reshape"}
)

_checks: list[Callable[[], None]] | None = None  # collected while a capture runs


def capturing() -> bool:
    """True while a graph is being captured: no host syncs now (see after_launch)."""
    return _checks is not None


def after_launch(check: Callable[[], None]) -> None:
    """Run ``check`` (which may sync and raise) after each launch of the graph being captured."""
    if _checks is None:
        raise RuntimeError("after_launch outside a capture")
    _checks.append(check)


class GraphStep:
    """``forward_backward()`` for a train net: eager, or through a captured graph when it can."""

    def __init__(self, net: Net) -> None:
        self.net = net
        self.graph: Any = None
        self.checks: list[Callable[[], None]] = []
        self.loss: Any = None  # the graph's loss, a device scalar
        self.captured: tuple[Any, ...] | None = None  # the arrays the graph uses
        self.seen: tuple[Any, ...] | None = None  # the arrays of the last eager iteration
        self.pool: Any = None  # the graph's own memory pool: its scratch is never handed out outside
        self.stream: Any = None
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

    def forward_backward(self) -> float:
        if not self.usable():
            self.graph = None
            return self.net.forward_backward()
        net = self.net
        for i in range(self.sources):
            net.layers[i].reshape(net.bottom_vecs[i], net.top_vecs[i])
            net.layers[i].forward(net.bottom_vecs[i], net.top_vecs[i])
        now = self.arrays()
        if self.graph is not None and now == self.captured:
            return self.replay()
        self.graph = None
        if now != self.seen:  # new arrays: one eager iteration settles them (and their scratch)
            loss = self.body()
            self.seen = self.arrays()
            return float(loss)
        return self.capture()

    def body(self) -> Any:
        """Forward (after the data layers) and backward, as Net.forward_from_to and backward do;
        the loss stays on the device."""
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
        return total

    def capture(self) -> float:
        global _checks
        cupy = backend.array_module("gpu")
        cupy.cuda.runtime.deviceSynchronize()  # the capture stream does not wait for the default one
        if self.pool is None:
            self.pool, self.stream = cupy.cuda.MemoryPool(), cupy.cuda.Stream(non_blocking=True)
        failure: Exception | None = None
        _checks = []
        try:
            with cupy.cuda.using_allocator(self.pool.malloc), self.stream:
                self.stream.begin_capture()
                try:
                    loss = self.body()
                finally:
                    graph = self.stream.end_capture()
            if not hasattr(loss, "shape"):
                raise RuntimeError("the net has no loss")
        except Exception as exc:  # a sync, or an operation capture does not allow
            failure = exc
        finally:
            checks, _checks = _checks, None
        if failure is not None:
            log.warning(
                "CUDA graph capture failed (%s: %s); training goes on without",
                type(failure).__name__,
                failure,
            )
            self.broken = True
            return float(self.body())  # nothing captured has run: this iteration again, eagerly
        self.graph, self.checks, self.loss, self.captured = graph, checks, loss, self.arrays()
        return self.replay()

    def replay(self) -> float:
        self.graph.launch()
        for check in self.checks:
            check()
        return float(self.loss)
