"""The inspector's title card: the layer's name, type and family colour, and where it runs."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QVBoxLayout, QWidget

from app.layer_families import DESCRIPTIONS, colour_of, family_of
from proto import caffe_pb2

_PHASES = {caffe_pb2.TRAIN: "TRAIN", caffe_pb2.TEST: "TEST"}


def phase_text(layer: caffe_pb2.LayerParameter) -> str:
    """'TRAIN only', 'TEST only', or '' for a layer in every phase (the common case)."""
    phases = {_PHASES.get(rule.phase, "?") for rule in layer.include if rule.HasField("phase")}
    excluded = {_PHASES.get(rule.phase, "?") for rule in layer.exclude if rule.HasField("phase")}
    if len(phases) == 1:
        return f"{phases.pop()} only"
    if len(excluded) == 1:
        return f"not in {excluded.pop()}"
    return ""


class LayerHeader(QFrame):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("inspectorHeader")
        self.stripe = QFrame(self)
        self.stripe.setObjectName("familyStripe")
        self.stripe.setFixedWidth(5)
        self.title = QLabel(self)
        self.title.setObjectName("inspectorTitle")
        self.subtitle = QLabel(self)
        self.subtitle.setObjectName("inspectorSubtitle")
        self.subtitle.setWordWrap(True)
        self.badge = QLabel(self)
        self.badge.setObjectName("phaseBadge")
        text = QVBoxLayout()
        text.setSpacing(1)
        text.setContentsMargins(0, 8, 0, 8)
        text.addWidget(self.title)
        text.addWidget(self.subtitle)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 10, 0)
        layout.setSpacing(10)
        layout.addWidget(self.stripe)
        layout.addLayout(text, 1)
        layout.addWidget(self.badge, 0, Qt.AlignmentFlag.AlignVCenter)

    def show_layer(self, layer: caffe_pb2.LayerParameter, index: int, count: int, others: int) -> None:
        family = family_of(layer.type)
        self.stripe.setStyleSheet(f"background: {colour_of(layer.type)}; border-radius: 2px;")
        self.title.setText(layer.name or "(unnamed)")
        more = f" · {others} more selected" if others else ""
        kind = layer.type or "?"
        if family.title != kind:
            kind += f" · {family.title}"
        self.subtitle.setText(f"{kind} · layer {index + 1} of {count}{more}")
        self.setToolTip(DESCRIPTIONS.get(layer.type, ""))
        phase = phase_text(layer)
        self.badge.setText(phase)
        self.badge.setVisible(bool(phase))

    def show_generated(self, layer: caffe_pb2.LayerParameter) -> None:
        self.stripe.setStyleSheet(f"background: {colour_of(layer.type)}; border-radius: 2px;")
        self.title.setText(layer.name)
        self.subtitle.setText(f"{layer.type} · added by Caffe, not in the prototxt (read-only)")
        self.setToolTip(DESCRIPTIONS.get(layer.type, ""))
        self.badge.setVisible(False)

    def show_net(self, net: caffe_pb2.NetParameter) -> None:
        self.stripe.setStyleSheet("background: palette(mid); border-radius: 2px;")
        self.title.setText(net.name or "(unnamed net)")
        self.subtitle.setText(f"Net · {len(net.layer)} layers · select a layer to edit it")
        self.setToolTip("")
        self.badge.setVisible(False)
