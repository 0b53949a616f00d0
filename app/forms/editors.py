"""One small editor per kind of scalar field, all with the same two signals.

``committed(value)`` fires once the user has finished a change (Enter, focus out, a click),
never on each keystroke, so one edit makes one undo step. ``invalid(message)`` fires when typed
text does not parse; the editor then shows the document's value again. ``set_value`` never
emits. Spin boxes and combo boxes ignore the mouse wheel unless focused, so scrolling a long form
does not change values under the pointer.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from google.protobuf.descriptor import FieldDescriptor
from PySide6.QtCore import QSignalBlocker, Qt, Signal
from PySide6.QtGui import QWheelEvent
from PySide6.QtWidgets import QCheckBox, QComboBox, QLineEdit, QSizePolicy, QSpinBox, QWidget

from app.forms import values

_SPIN_MIN, _SPIN_MAX = -(2**31), 2**31 - 1


def _compact(combo: QComboBox) -> None:
    """Size by a few characters, not by the longest item ("MultinomialLogisticLoss"): forms stay narrow."""
    combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
    combo.setMinimumContentsLength(6)


class _NoWheelUnlessFocused:
    def wheelEvent(self, event: QWheelEvent) -> None:
        if self.hasFocus():  # type: ignore[attr-defined]
            super().wheelEvent(event)  # type: ignore[misc]
        else:
            event.ignore()


class SpinEditor(_NoWheelUnlessFocused, QSpinBox):
    committed = Signal(object)
    invalid = Signal(str)

    def __init__(self, field: FieldDescriptor, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        low, high = values.INT_RANGES[field.type]
        self.setRange(max(low, _SPIN_MIN), min(high, _SPIN_MAX))
        self.setKeyboardTracking(False)  # valueChanged on Enter / focus out / arrows, not per digit
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self.setAccelerated(True)
        self.valueChanged.connect(self.committed.emit)

    def set_value(self, value: Any) -> None:
        with QSignalBlocker(self):
            self.setValue(int(value))


class LineEditor(QLineEdit):
    """Text, 64-bit integers and floats: parsed with ``app.forms.values`` when editing ends."""

    committed = Signal(object)
    invalid = Signal(str)

    def __init__(self, field: FieldDescriptor, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.field = field
        self._shown = ""
        self.editingFinished.connect(self._finish)
        if values.kind(field) in ("int", "float"):
            self.setAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)

    def set_value(self, value: Any) -> None:
        self._shown = values.format_value(self.field, value)
        if self.text() != self._shown:
            with QSignalBlocker(self):
                self.setText(self._shown)
                self.setCursorPosition(0)

    def _finish(self) -> None:
        if self.text() == self._shown:
            return
        try:
            value = values.parse_value(self.field, self.text())
        except ValueError as e:
            self.setText(self._shown)
            self.invalid.emit(str(e))
            return
        self._shown = self.text()
        self.committed.emit(value)


class CheckEditor(QCheckBox):
    committed = Signal(object)
    invalid = Signal(str)

    def __init__(self, field: FieldDescriptor, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setSizePolicy(QSizePolicy.Policy.Fixed, QSizePolicy.Policy.Fixed)  # the box, not the row
        self.toggled.connect(self.committed.emit)

    def set_value(self, value: Any) -> None:
        with QSignalBlocker(self):
            self.setChecked(bool(value))


class EnumEditor(_NoWheelUnlessFocused, QComboBox):
    committed = Signal(object)
    invalid = Signal(str)

    def __init__(self, field: FieldDescriptor, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        _compact(self)
        for value in field.enum_type.values:
            self.addItem(value.name, value.number)
        self.activated.connect(lambda index: self.committed.emit(self.itemData(index)))

    def set_value(self, value: Any) -> None:
        with QSignalBlocker(self):
            index = self.findData(value)
            if index < 0:  # a number the schema does not name: show it rather than lie
                self.addItem(str(value), value)
                index = self.count() - 1
            self.setCurrentIndex(index)


class ChoiceEditor(_NoWheelUnlessFocused, QComboBox):
    """A string field with known values (a layer type, an lr_policy) that still takes any text."""

    committed = Signal(object)
    invalid = Signal(str)

    def __init__(self, field: FieldDescriptor, choices: Callable[[], Sequence[str]], parent=None) -> None:
        super().__init__(parent)
        self.setEditable(True)
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        _compact(self)
        self.setInsertPolicy(QComboBox.InsertPolicy.NoInsert)
        self.addItems(list(choices()))
        self.completer().setCaseSensitivity(Qt.CaseSensitivity.CaseInsensitive)
        self._shown = ""
        self.activated.connect(lambda _index: self._finish())
        self.lineEdit().editingFinished.connect(self._finish)

    def set_value(self, value: Any) -> None:
        self._shown = str(value)
        with QSignalBlocker(self):
            index = self.findText(self._shown)
            if index >= 0:
                self.setCurrentIndex(index)
            self.setEditText(self._shown)

    def _finish(self) -> None:
        text = self.currentText().strip()
        if text != self._shown:
            self._shown = text
            self.committed.emit(text)


def make_editor(field: FieldDescriptor, choices: Callable[[], Sequence[str]] | None = None) -> QWidget:
    """The editor for one singular scalar ``field``."""
    kind = values.kind(field)
    if choices is not None and kind == "string":
        return ChoiceEditor(field, choices)
    if kind == "bool":
        return CheckEditor(field)
    if kind == "enum":
        return EnumEditor(field)
    if kind == "int" and values.INT_RANGES[field.type][1] <= 2**32 - 1:
        return SpinEditor(field)
    return LineEditor(field)
