"""What to compare: 2-6 variants (the presets, or fillers typed as the command line spells them),
the iterations, the seed, the layers whose weights change and the test batches."""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QFormLayout,
    QGroupBox,
    QLabel,
    QLineEdit,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from engine.experiments.compare_init import MAX_VARIANTS, MIN_VARIANTS, TEST_ITER, Variant
from engine.experiments.filler_spec import PRESETS, SpecError

# DIGITS's weight-init example: what the dialog offers ticked.
DEFAULT_PICKS = ("constant 0 (Caffe's default)", "uniform [-0.5, 0.5]", "uniform [0, 1]", "xavier", "msra")
CUSTOM_ROWS = 2


class Setup(QWidget):
    changed = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        box = QGroupBox("Variants: the weights start from", self)
        column = QVBoxLayout(box)
        self.presets: dict[str, QCheckBox] = {}
        for label, spec in PRESETS.items():
            check = QCheckBox(label, box)
            check.setToolTip(f"Every chosen layer's weight_filler: {spec}")
            check.setChecked(label in DEFAULT_PICKS)
            check.toggled.connect(self.changed)
            column.addWidget(check)
            self.presets[label] = check
        self.custom: list[QLineEdit] = []
        for _ in range(CUSTOM_ROWS):
            field = QLineEdit(box)
            field.setPlaceholderText("another filler, e.g. gaussian std=0.1")
            field.setToolTip(
                "Spelt as on the command line: TYPE [FIELD=VALUE ...] (gaussian std=0.1, "
                'uniform min=-1 max=1, msra variance_norm=FAN_OUT), or prototxt: type: "xavier"'
            )
            field.textChanged.connect(self.changed)
            column.addWidget(field)
            self.custom.append(field)
        self.iterations = QSpinBox(self)
        self.iterations.setRange(1, 1_000_000)
        self.iterations.setValue(300)
        self.seed = QSpinBox(self)
        self.seed.setRange(0, 2**31 - 1)
        self.seed.setValue(1)
        self.test_iter = QSpinBox(self)
        self.test_iter.setRange(1, 10_000)
        self.test_iter.setValue(TEST_ITER)
        self.test_iter.setToolTip("Test batches each time the variants are scored")
        self.layers = QLineEdit(self)
        self.layers.setPlaceholderText("all layers")
        self.layers.setToolTip("Change only these layers' weights (names, comma-separated)")
        self.layers.textChanged.connect(self.changed)
        form = QFormLayout()
        form.addRow("Iterations", self.iterations)
        form.addRow("Seed", self.seed)
        form.addRow("Test batches", self.test_iter)
        form.addRow("Layers", self.layers)
        self.problem = QLabel(self)
        self.problem.setObjectName("setupProblem")
        self.problem.setWordWrap(True)
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        outer.addWidget(box)
        outer.addLayout(form)
        outer.addWidget(self.problem)
        self.changed.connect(self._check)
        self._check()

    def variants(self) -> list[Variant]:
        """The variants picked, in the order shown; SpecError when a typed filler or the count is wrong."""
        picked = [
            Variant.parse(label, spec) for label, spec in PRESETS.items() if self.presets[label].isChecked()
        ]
        for field in self.custom:
            text = field.text().strip()
            if text:
                picked.append(Variant.parse(" ".join(text.split()), text))
        if not MIN_VARIANTS <= len(picked) <= MAX_VARIANTS:
            raise SpecError(f"pick {MIN_VARIANTS} to {MAX_VARIANTS} variants ({len(picked)} now)")
        return picked

    def chosen_layers(self) -> list[str]:
        return [name.strip() for name in self.layers.text().split(",") if name.strip()]

    def _check(self) -> None:
        try:
            self.variants()
        except SpecError as exc:
            self.problem.setText(str(exc))
        else:
            self.problem.setText("")

    @property
    def ready(self) -> bool:
        return not self.problem.text()
