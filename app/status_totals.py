"""The status bar's totals: blob values, learnable parameters and forward FLOPs of the net.

Derived from the document on every net change, after a short pause (edits come in bursts), from
the canvas's shape-only graph (``app.net_stats``: nothing is allocated, and the FLOPs are the sum
of the boxes'), in a worker thread: a data layer may read its source to learn its shapes. One
count runs at a time, and the answer to a net that has changed since is dropped.
A net that cannot be built shows ``shapes unavailable: <the engine's reason>``.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable

from PySide6.QtCore import QObject, QTimer, Signal
from PySide6.QtWidgets import QLabel, QWidget

from app import trust
from app.document import NET_KINDS, Change, Document
from app.net_stats import Totals, describe_failure, human, net_totals
from engine import pymodules
from engine.data_shapes import Shape
from engine.rng import seeded as own_generator
from graph_view import summary
from graph_view.document_api import Kind
from proto import caffe_pb2

DELAY_MS = 300
MAX_CHARS = 90


class _Bridge(QObject):
    """Carries a worker's answer back to the GUI thread (a queued signal)."""

    done = Signal(object)


class StatusTotals(QLabel):
    """``updated(text)`` fires whenever a new answer is shown."""

    updated = Signal(str)

    def __init__(
        self,
        doc: Document,
        parent: QWidget | None = None,
        delay_ms: int = DELAY_MS,
        assumed: Callable[[], dict[str, list[Shape]]] | None = None,
        facts: Callable[[], set[str]] | None = None,
    ) -> None:
        """``assumed()``: data layer name -> the top shapes assumed for it while its data is absent;
        ``facts()``: those of them whose shapes are known facts (the bundled MNIST), not guesses."""
        super().__init__(parent)
        self._assumed = assumed or dict
        self._facts = facts or set
        self._inputs: dict[str, list[Shape]] = {}
        self.setObjectName("statusTotals")
        self.doc = doc
        self.totals: Totals | None = None
        self._running = False
        self._pending = False
        self._bridge = _Bridge(self)
        self._bridge.done.connect(self._show)
        self._timer = QTimer(self, singleShot=True, interval=delay_ms)
        self._timer.timeout.connect(self.recompute)
        doc.changed.connect(self._on_change)
        guard = trust.guard_of(doc)
        if guard is not None:
            guard.changed.connect(self._timer.start)  # a folder trusted or taken back
        self.setText("measuring…")
        self._timer.start()

    def _on_change(self, change: Change) -> None:
        if change.kind == Kind.NET_LOADED:  # another net: the last one's totals are not its own
            self.totals = None
            self.setText("measuring…")
            self.setToolTip("")
            self._pending = self._running
        if change.kind in NET_KINDS:
            self._timer.start()

    def schedule(self) -> None:
        """Measure again after the usual pause (the canvas's assumptions changed)."""
        self._timer.start()

    def recompute(self) -> None:
        if self._running:  # one count at a time
            self._pending = True
            return
        net = caffe_pb2.NetParameter()
        net.CopyFrom(self.doc.net)
        try:
            inputs = self._assumed()
            where = pymodules.folders(self.doc.net_path, self.doc.solver_path)
        except Exception as e:  # the canvas mid-change: say why, and measure again on the next change
            self._show_failure(e)
            return
        self._running, self._pending = True, False  # set only now: a failure above never leaves it set
        self._inputs = {name: shapes for name, shapes in inputs.items() if name not in self._facts()}
        bridge = self._bridge

        def work() -> None:
            try:
                # A data layer draws its seed as it is built: from this thread's own generator, so
                # a training run's draws (and a filler preview's) stay exactly as they would be.
                with own_generator(0), pymodules.importing_from(where, pymodules.module_names(net)):
                    result: object = net_totals(net, inputs, where)
            except Exception as e:  # any engine failure is a reason to show, never a crash
                result = e
            with contextlib.suppress(RuntimeError):  # the window closed while we measured
                bridge.done.emit(result)

        threading.Thread(target=work, name="net-totals", daemon=True).start()

    def _show(self, result: object) -> None:
        self._running = False
        if self._pending:
            self.recompute()  # the net changed while we measured: this answer is stale
            return
        if isinstance(result, Totals):
            self.totals = result
            assumed = f" (assumed input: {', '.join(self._inputs)})" if self._inputs else ""
            self.setText(
                f"{summary.count(result.params)} params · {human(result.blobs)} blob values · "
                f"{summary.flops(result.flops)}/image{assumed}"  # the canvas's words for its own figures
            )
            note = f"Data not read: shapes assumed for {', '.join(self._inputs)}\n" if self._inputs else ""
            self.setToolTip(
                f"{note}TRAIN net, {result.layers} layers (Split layers included)\n"
                f"Learnable parameters: {result.params:,}\n"
                f"Values in blobs: {result.blobs:,} ({result.blobs * 4 / 2**20:,.1f} MiB of float32 data)\n"
                f"Forward FLOPs per image: {result.flops:,} (a multiply-add counts 2)"
            )
            self.updated.emit(self.text())
        else:
            self._show_failure(result)  # type: ignore[arg-type]

    def _show_failure(self, error: BaseException) -> None:
        self.totals = None
        text = describe_failure(error)
        self.setText(text if len(text) <= MAX_CHARS else text[: MAX_CHARS - 1] + "…")
        self.setToolTip(str(error))
        self.updated.emit(self.text())
