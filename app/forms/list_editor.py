"""An editable list for a repeated scalar field (bottom, top, kernel_size, stepvalue, ...).

One line per element with a remove button, and an add button below. Any change commits the
whole list at once (``committed(list)``), which a command sets in one undoable step. A new
element starts as a copy of the last one (or the field's default), so adding a second
``kernel_size`` gives ``3, 3`` ready to edit; a new ``top`` gets a blob name nothing uses yet.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from google.protobuf.descriptor import FieldDescriptor
from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QCompleter, QHBoxLayout, QLineEdit, QToolButton, QVBoxLayout, QWidget

from app.forms import values


class _Item(QLineEdit):
    def __init__(self, parent: QWidget) -> None:
        super().__init__(parent)
        self.shown = ""


class ListEditor(QWidget):
    committed = Signal(object)
    invalid = Signal(str)

    def __init__(
        self,
        field: FieldDescriptor,
        completions: Callable[[], Sequence[str]] | None = None,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.field = field
        self._completions = completions
        self._values: list[Any] = []
        self._items: list[_Item] = []
        self._layout = QVBoxLayout(self)
        self._layout.setContentsMargins(0, 0, 0, 0)
        self._layout.setSpacing(3)
        self.add_button = QToolButton(self)
        self.add_button.setText("+ add")
        self.add_button.setObjectName("formAddButton")
        self.add_button.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextOnly)
        self.add_button.setAutoRaise(True)
        self.add_button.setToolTip(f"Add a {field.name} value")
        self.add_button.clicked.connect(self.add)
        self._empty_row = QWidget(self)  # holds the add button while the list is empty
        empty = QHBoxLayout(self._empty_row)
        empty.setContentsMargins(0, 0, 0, 0)
        empty.addWidget(self.add_button)
        empty.addStretch(1)
        self._layout.addWidget(self._empty_row)

    # ---- state ------------------------------------------------------------------------
    def value(self) -> list[Any]:
        return list(self._values)

    def set_value(self, items: Sequence[Any]) -> None:
        items = list(items)
        while len(self._items) > len(items):
            row = self._items.pop().parentWidget()
            if self.add_button.parentWidget().parentWidget() is row:
                self._empty_row.layout().insertWidget(0, self.add_button)
            self._layout.removeWidget(row)  # type: ignore[arg-type]
            row.deleteLater()
        while len(self._items) < len(items):
            self._add_row()
        for item, value in zip(self._items, items):
            item.shown = values.format_value(self.field, value)
            if item.text() != item.shown:
                item.setText(item.shown)
                item.setCursorPosition(0)
        self._values = items
        self._place_add_button()

    def _place_add_button(self) -> None:
        """After the last element's remove button ("+"), or alone as "+ add" when the list is empty."""
        if self._items:
            self._items[-1].parentWidget().findChild(QWidget, "addSlot").layout().addWidget(self.add_button)
            self.add_button.setText("+")
        else:
            self._empty_row.layout().insertWidget(0, self.add_button)
            self.add_button.setText("+ add")
        self._empty_row.setVisible(not self._items)
        self.add_button.show()

    # ---- edits ------------------------------------------------------------------------
    def add(self) -> None:
        new = self._values[-1] if self._values else self._fresh()
        if self.field.name == "top":  # a new top is a new blob: a name no layer uses yet
            new = self._unused(str(new) or "top")
        self.committed.emit([*self._values, new])

    def _unused(self, like: str) -> str:
        taken = {*self._values, *(self._completions() if self._completions is not None else ())}
        stem = re.sub(r"_?\d+$", "", like) or like
        number = 1
        while f"{stem}_{number}" in taken:
            number += 1
        return f"{stem}_{number}"

    def remove(self, index: int) -> None:
        self.committed.emit([v for i, v in enumerate(self._values) if i != index])

    def _fresh(self) -> Any:
        kind = values.kind(self.field)
        if kind == "enum":
            return self.field.enum_type.values[0].number
        if self.field.default_value not in (None, []):
            return self.field.default_value
        # A repeated field has no default of its own: a value of its kind (a new shape's first dim is 1).
        return {"int": 1, "float": 0.0, "bool": False, "bytes": b""}.get(kind, "")

    def _finish(self, item: _Item) -> None:
        if item.text() == item.shown or item not in self._items:
            return
        try:
            value = values.parse_value(self.field, item.text())
        except ValueError as e:
            item.setText(item.shown)
            self.invalid.emit(str(e))
            return
        index = self._items.index(item)
        item.shown = item.text()
        self.committed.emit([value if i == index else v for i, v in enumerate(self._values)])

    def _add_row(self) -> None:
        row = QWidget(self)
        line = QHBoxLayout(row)
        line.setContentsMargins(0, 0, 0, 0)
        line.setSpacing(2)
        item = _Item(row)
        if values.kind(self.field) in ("int", "float"):
            item.setAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        if self._completions is not None:
            completer = QCompleter(list(self._completions()), item)
            completer.setCaseSensitivity(Qt.CaseSensitivity.CaseInsensitive)
            item.setCompleter(completer)
        item.editingFinished.connect(lambda: self._finish(item))
        remove = QToolButton(row)
        remove.setText("×")
        remove.setObjectName("formRemoveButton")
        remove.setAutoRaise(True)
        remove.setToolTip(f"Remove this {self.field.name} value")
        remove.clicked.connect(lambda: self.remove(self._items.index(item)))
        line.addWidget(item, 1)
        line.addWidget(remove)
        slot = QWidget(row)  # where the add button sits when this is the last row: rows stay aligned
        slot.setObjectName("addSlot")
        slot.setFixedWidth(22)
        QHBoxLayout(slot).setContentsMargins(0, 0, 0, 0)
        line.addWidget(slot)
        self._items.append(item)
        self._layout.insertWidget(self._layout.count() - 1, row)

    @property
    def items(self) -> list[QLineEdit]:
        return list(self._items)
