"""The solver editor: SolverParameter as a form generated from the schema, and its lr schedule.

The same ``MessageForm`` as the inspector, cut into sections (schedule, optimizer, testing,
output, net and device). Fields that matter for the chosen policy and optimizer are shown; the
rest sit behind "more fields". Every edit is a checked ``SetSolverField`` through ``push``; the
plot above redraws from the document whenever the solver changes, so it follows the policy
fields as they change, whoever changed them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import QFrame, QLabel, QScrollArea, QSplitter, QVBoxLayout, QWidget

from app.checks import solver_caffe10_notice
from app.commands import Command, CommandError
from app.document import SOLVER_KINDS, Change, Document
from app.form_edits import solver_edit
from app.forms import FormOptions, MessageForm
from app.forms.group import Group
from app.lr_plot import LrPlot
from app.refusal import RefusalLabel
from engine.solvers import solver_types
from engine.solvers.lr_policy import POLICIES
from proto import caffe_pb2

_SOLVER = caffe_pb2.SolverParameter.DESCRIPTOR
SECTIONS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Schedule", ("base_lr", "lr_policy", "gamma", "power", "stepsize", "stepvalue", "max_iter")),
    (
        "Optimizer",
        (
            "type",
            "momentum",
            "momentum2",
            "delta",
            "rms_decay",
            "weight_decay",
            "regularization_type",
            "clip_gradients",
            "iter_size",
        ),
    ),
    ("Testing", ("test_iter", "test_interval", "test_compute_loss", "test_initialization")),
    (
        "Output",
        (
            "display",
            "average_loss",
            "snapshot",
            "snapshot_prefix",
            "snapshot_format",
            "snapshot_diff",
            "snapshot_after_train",
            "debug_info",
        ),
    ),
    (
        "Net && device",
        (
            "net",
            "train_net",
            "test_net",
            "train_state",
            "test_state",
            "weights",
            "solver_mode",
            "device_id",
            "random_seed",
            "layer_wise_reduce",
            "solver_type",
        ),
    ),
)
_LISTED = {name for _, names in SECTIONS for name in names}
_HIDDEN = frozenset(
    {"SolverParameter.net_param", "SolverParameter.train_net_param", "SolverParameter.test_net_param"}
)


class SolverPanel(QWidget):
    refused = Signal(str)

    def __init__(self, doc: Document, push: Callable[[Command], None], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.doc, self._push = doc, push
        options = FormOptions(
            choices={"SolverParameter.lr_policy": lambda: POLICIES, "SolverParameter.type": solver_types},
            hidden=_HIDDEN,
        )
        self.plot = LrPlot(self)
        self.message = RefusalLabel(self)
        # Stays while the solver uses what Caffe 1.0 lacks: a warning, the edit itself was applied.
        self.notice = QLabel(self)
        self.notice.setObjectName("inspectorMessage")
        self.notice.setWordWrap(True)
        self.notice.hide()

        page = QWidget()
        page.setObjectName("solverPage")
        layout = QVBoxLayout(page)
        layout.setContentsMargins(12, 6, 12, 12)
        layout.setSpacing(6)
        self.forms: list[MessageForm] = []
        others = tuple(
            f.name
            for f in _SOLVER.fields
            if f.name not in _LISTED and f"SolverParameter.{f.name}" not in _HIDDEN
        )
        for title, names in (*SECTIONS, ("Other", others)) if others else SECTIONS:
            form = MessageForm(_SOLVER, "", names, options)  # type: ignore[arg-type]
            form.edited.connect(self._on_edited)
            form.invalid.connect(self._refuse)
            group = Group(title, expanded=title in ("Schedule", "Optimizer", "Testing"), section=True)
            group.add_widget(form)
            layout.addWidget(group)
            self.forms.append(form)
        layout.addStretch(1)
        scroll = QScrollArea(self)
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QFrame.Shape.NoFrame)
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        scroll.setWidget(page)

        splitter = QSplitter(Qt.Orientation.Vertical, self)
        splitter.addWidget(self.plot)
        splitter.addWidget(scroll)
        splitter.setStretchFactor(1, 1)
        splitter.setSizes([170, 500])  # the plot a third, the fields the rest
        splitter.setChildrenCollapsible(False)
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        outer.setSpacing(0)
        outer.addWidget(self.message)
        outer.addWidget(self.notice)
        outer.addWidget(splitter, 1)
        doc.changed.connect(self._on_document_changed)
        self.refresh()

    def refresh(self) -> None:
        for form in self.forms:
            form.set_message(self.doc.solver)
        self.plot.show_solver(self.doc.solver)
        notice = solver_caffe10_notice(self.doc.solver)
        self.notice.setText(f"⚠  {notice}" if notice else "")
        self.notice.setVisible(notice is not None)

    def editor(self, path: str) -> QWidget:
        """The widget editing ``path`` (``lr_policy``, ``stepvalue.0``)."""
        head = path.split(".")[0]
        return next(form for form in self.forms if head in form.rows).editor(path)

    def _on_edited(self, path: str, value: Any) -> None:
        try:
            self._push(solver_edit(self.doc, path, value))
        except CommandError as e:
            self._refuse(str(e))
            return
        self.message.hide()

    def _refuse(self, message: str) -> None:
        self.message.refuse(message)
        self.refused.emit(message)
        QTimer.singleShot(0, self.refresh)

    def _on_document_changed(self, change: Change) -> None:
        if change.kind in SOLVER_KINDS:
            self.refresh()
