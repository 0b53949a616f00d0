"""A form generated from a protobuf descriptor: the one form the inspector and the solver use.

Scalars become spin boxes or line edits, enums combo boxes, bools check boxes, repeated scalars
editable lists, nested messages collapsible groups, repeated messages a group per element with
add and remove. The form never writes a message: it reports ``edited(path, value)`` with a field
path as ``app.fields`` reads it (``convolution_param.weight_filler.std``, ``param.1.lr_mult``)
and a value (``None`` resets the field), and its owner turns that into an undoable command.
``set_message(root)`` shows a message; it updates widgets in place, so focus and scroll stay.

Fields set in the message are labelled in full; unset ones are muted and show their default.
Deprecated fields appear only while set.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message
from google.protobuf.message_factory import GetMessageClass
from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QCheckBox, QFormLayout, QHBoxLayout, QLabel, QToolButton, QWidget

from app.forms import values
from app.forms.docs import field_doc
from app.forms.editors import make_editor
from app.forms.group import Group
from app.forms.list_editor import ListEditor
from app.forms.relevance import relevant_fields

Words = Callable[[], Sequence[str]]
DEFAULT_HIDDEN_TYPES = frozenset(
    {"NetParameter", "LayerParameter", "V1LayerParameter", "V0LayerParameter", "BlobProto"}
)


@dataclass(frozen=True)
class FormOptions:
    """What the schema cannot say. Keys are ``"Message.field"`` (``"LayerParameter.type"``)."""

    choices: Mapping[str, Words] = field(default_factory=dict)  # a string field's known values
    completions: Mapping[str, Words] = field(default_factory=dict)  # repeated strings' suggestions
    hidden: frozenset[str] = frozenset()
    hidden_types: frozenset[str] = DEFAULT_HIDDEN_TYPES  # message types too big to nest in a form
    no_reset: frozenset[str] = frozenset()  # fields a user must not clear (a layer's name and type)
    relevance: Callable[[Message], Collection[str] | None] = relevant_fields  # None: every field


def resolve(root: Message, prefix: str) -> Message:
    """The sub-message at ``prefix`` ("" or "a.b.0."), read without creating anything."""
    message: Any = root
    for part in prefix.split(".")[:-1]:
        message = message[int(part)] if part.isdigit() else getattr(message, part)
    return message


def summary(message: Message, limit: int = 3) -> str:
    """A few set scalar fields, for a folded group's header: ``xavier``, ``lr_mult 1, decay_mult 0``."""
    parts = []
    for f, value in message.ListFields():
        if f.message_type is not None:
            continue
        text = (
            ", ".join(values.format_value(f, v) for v in value)
            if f.is_repeated
            else values.format_value(f, value)
        )
        parts.append(text if f.name in ("type", "name") else f"{f.name} {text}")
    return ", ".join(parts[:limit]) + (" …" if len(parts) > limit else "")


def _is_set(message: Message, f: FieldDescriptor) -> bool:
    return len(getattr(message, f.name)) > 0 if f.is_repeated else message.HasField(f.name)


def _deprecated(f: FieldDescriptor) -> bool:
    return bool(f.GetOptions().deprecated) or field_doc(f.containing_type.name, f.name).lower().startswith(
        "deprecated"
    )


class MessageForm(QWidget):
    edited = Signal(str, object)
    invalid = Signal(str)

    def __init__(
        self,
        descriptor: Descriptor,
        prefix: str = "",
        fields: Sequence[str] | None = None,
        options: FormOptions | None = None,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.descriptor, self.prefix = descriptor, prefix
        self.options = options or FormOptions()
        self.rows: dict[str, _Row] = {}
        self._layout = QFormLayout(self)
        self._layout.setContentsMargins(0, 0, 0, 0)
        self._layout.setHorizontalSpacing(10)
        self._layout.setVerticalSpacing(5)
        self._layout.setLabelAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter)
        self._layout.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        self._layout.setRowWrapPolicy(QFormLayout.RowWrapPolicy.DontWrapRows)
        for name in fields if fields is not None else [f.name for f in descriptor.fields]:
            f = descriptor.fields_by_name[name]
            if f"{descriptor.name}.{name}" in self.options.hidden:
                continue
            if f.message_type is not None and f.message_type.name in self.options.hidden_types:
                continue
            self.rows[name] = self._make_row(f)
        self.show_all = False
        self.more = QToolButton(self)
        self.more.setObjectName("formMoreButton")
        self.more.setAutoRaise(True)
        self.more.clicked.connect(self.toggle_more)
        self._layout.addRow(self.more)
        self._root: Message | None = None

    def _make_row(self, f: FieldDescriptor) -> _Row:
        path = f"{self.prefix}{f.name}"
        key = f"{self.descriptor.name}.{f.name}"
        if f.message_type is not None:
            row: _Row = _RepeatedGroupRow(self, f, path) if f.is_repeated else _GroupRow(self, f, path)
        elif f.is_repeated:
            row = _ListRow(self, f, path, self.options.completions.get(key))
        else:
            row = _ScalarRow(self, f, path, self.options.choices.get(key))
        return row

    def set_message(self, root: Message) -> None:
        self._root = root
        message = resolve(root, self.prefix)
        relevant = self.options.relevance(message)
        hidden = 0
        for name, row in self.rows.items():
            is_set = row.update(root, message)
            wanted = relevant is None or name in relevant or self.show_all
            self._layout.setRowVisible(row.widget, is_set or (wanted and not row.deprecated))
            hidden += not (is_set or wanted or row.deprecated)
        self.more.setText("Fewer fields" if self.show_all else f"{hidden} more field{'s' * (hidden != 1)}…")
        self._layout.setRowVisible(self.more, bool(hidden) or self.show_all and relevant is not None)

    def toggle_more(self) -> None:
        """Show the fields that do not matter for the message as it stands, or hide them again."""
        self.show_all = not self.show_all
        if self._root is not None:
            self.set_message(self._root)

    def editor(self, path: str) -> QWidget:
        """The widget editing ``path`` (relative to this form's root message), for tests and focus."""
        name, _, rest = path.removeprefix(self.prefix).partition(".")
        return self.rows[name].editor(rest)

    def group(self, name: str) -> Group:
        row = self.rows[name]
        assert isinstance(row, (_GroupRow, _RepeatedGroupRow))
        return row.group

    # ---- for the rows ---------------------------------------------------------------------
    def add_row(self, label: QLabel | None, widget: QWidget) -> None:
        if label is None:
            self._layout.addRow(widget)
        else:
            self._layout.addRow(label, widget)


class _Row:
    widget: QWidget

    def __init__(self, form: MessageForm, f: FieldDescriptor, path: str) -> None:
        self.form, self.field, self.path = form, f, path
        self.deprecated = _deprecated(f)

    def update(self, root: Message, message: Message) -> bool:
        """Show the field as ``message`` has it; True when it is set there."""
        raise NotImplementedError

    def editor(self, rest: str) -> QWidget:
        return self.widget

    def _label(self) -> QLabel:
        label = QLabel(self.field.name, self.form)
        label.setObjectName("fieldLabel")
        label.setToolTip(_tooltip(self.field))
        return label

    @staticmethod
    def _mark(widget: QWidget, is_set: bool) -> None:
        """The stylesheet mutes what is unset: ``[unset="true"]``."""
        if widget.property("unset") != (not is_set):
            widget.setProperty("unset", not is_set)
            widget.style().unpolish(widget)
            widget.style().polish(widget)


def _tooltip(f: FieldDescriptor) -> str:
    doc = field_doc(f.containing_type.name, f.name)
    kind = values.kind(f)
    what = f.message_type.name if kind == "message" else f.enum_type.name if kind == "enum" else kind
    default = ""
    if not f.is_repeated and kind not in ("message",) and f.has_default_value:
        default = f" · default {values.format_value(f, f.default_value)}"
    repeated = "repeated " if f.is_repeated else ""
    return f"<b>{f.name}</b> <i>({repeated}{what}{default})</i>" + (f"<br>{doc}" if doc else "")


class _ScalarRow(_Row):
    def __init__(self, form: MessageForm, f: FieldDescriptor, path: str, choices: Words | None) -> None:
        super().__init__(form, f, path)
        self.label = self._label()
        self.input = make_editor(f, choices)
        self.input.committed.connect(lambda value: form.edited.emit(path, value))  # type: ignore[attr-defined]
        self.input.invalid.connect(form.invalid.emit)  # type: ignore[attr-defined]
        self.widget = QWidget(form)
        line = QHBoxLayout(self.widget)
        line.setContentsMargins(0, 0, 0, 0)
        line.setSpacing(2)
        if isinstance(self.input, QCheckBox):
            line.addWidget(self.input)
            line.addStretch(1)
        else:
            line.addWidget(self.input, 1)
        self.reset = QToolButton(self.widget)
        self.reset.setText("↺")
        self.reset.setObjectName("formResetButton")
        self.reset.setAutoRaise(True)
        self.reset.setToolTip(f"Reset {f.name} to its default (remove it from the prototxt)")
        self.reset.clicked.connect(lambda: form.edited.emit(path, None))
        self.fixed = f.is_required or f"{f.containing_type.name}.{f.name}" in form.options.no_reset
        line.addWidget(self.reset)
        form.add_row(self.label, self.widget)

    def update(self, root: Message, message: Message) -> bool:
        is_set = _is_set(message, self.field)
        self.input.set_value(getattr(message, self.field.name))  # type: ignore[attr-defined]
        self.reset.setVisible(is_set and not self.fixed)
        self._mark(self.label, is_set)
        return is_set

    def editor(self, rest: str) -> QWidget:
        return self.input


class _ListRow(_Row):
    def __init__(self, form: MessageForm, f: FieldDescriptor, path: str, completions: Words | None) -> None:
        super().__init__(form, f, path)
        self.label = self._label()
        self.label.setAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop)
        self.widget = ListEditor(f, completions, form)
        self.widget.committed.connect(lambda items: form.edited.emit(path, items))
        self.widget.invalid.connect(form.invalid.emit)
        form.add_row(self.label, self.widget)

    def update(self, root: Message, message: Message) -> bool:
        items = list(getattr(message, self.field.name))
        self.widget.set_value(items)  # type: ignore[attr-defined]
        self._mark(self.label, bool(items))
        return bool(items)

    def editor(self, rest: str) -> QWidget:
        return self.widget.items[int(rest)] if rest else self.widget  # type: ignore[attr-defined]


class _GroupRow(_Row):
    """A singular nested message: folded while unset, open once it holds something."""

    def __init__(self, form: MessageForm, f: FieldDescriptor, path: str) -> None:
        super().__init__(form, f, path)
        self.group = Group(f.name, form, expanded=False, clearable=True)
        self.group.header.setToolTip(_tooltip(f))
        self.group.cleared.connect(lambda: form.edited.emit(path, None))
        self.child = MessageForm(f.message_type, f"{path}.", options=form.options, parent=self.group.body)  # type: ignore[arg-type]
        self.child.edited.connect(form.edited.emit)
        self.child.invalid.connect(form.invalid.emit)
        self.group.add_widget(self.child)
        self.widget = self.group
        self._was_set: bool | None = None
        form.add_row(None, self.group)

    def update(self, root: Message, message: Message) -> bool:
        is_set = message.HasField(self.field.name)
        if is_set != self._was_set:
            self.group.set_expanded(is_set)  # follow presence, but leave the user's folding alone after
            self._was_set = is_set
        self.group.clear_button.setVisible(is_set)
        self.group.set_summary(summary(getattr(message, self.field.name)) if is_set else "default")
        self._mark(self.group.header, is_set)
        self.child.set_message(root)
        return is_set

    def editor(self, rest: str) -> QWidget:
        return self.child.editor(f"{self.path}.{rest}") if rest else self.widget


class _RepeatedGroupRow(_Row):
    """A repeated message (param, include, shape): a group per element, with add and remove."""

    def __init__(self, form: MessageForm, f: FieldDescriptor, path: str) -> None:
        super().__init__(form, f, path)
        self.group = Group(f.name, form, expanded=False)
        self.group.header.setToolTip(_tooltip(f))
        self.children: list[tuple[Group, MessageForm]] = []
        self.add_button = QToolButton(self.group.body)
        self.add_button.setText(f"+ add {f.name}")
        self.add_button.setObjectName("formAddButton")
        self.add_button.setAutoRaise(True)
        self.add_button.clicked.connect(self.add)
        self.group.add_widget(self.add_button)
        self.widget = self.group
        self._items: list[Message] = []
        self._was_set: bool | None = None
        form.add_row(None, self.group)

    def add(self) -> None:
        self.form.edited.emit(self.path, [*self._items, GetMessageClass(self.field.message_type)()])  # type: ignore[arg-type]

    def remove(self, index: int) -> None:
        self.form.edited.emit(self.path, [m for i, m in enumerate(self._items) if i != index])

    def update(self, root: Message, message: Message) -> bool:
        items = list(getattr(message, self.field.name))
        self._items = items
        while len(self.children) > len(items):
            group, _form = self.children.pop()
            self.group.body_layout.removeWidget(group)
            group.deleteLater()
        while len(self.children) < len(items):
            self._add_child(len(self.children))
        for (group, child), item in zip(self.children, items):
            group.set_summary(summary(item))
            child.set_message(root)
        is_set = bool(items)
        if is_set != self._was_set:
            self.group.set_expanded(is_set)
            self._was_set = is_set
        self.group.set_summary(f"{len(items)}" if items else "none")
        self._mark(self.group.header, is_set)
        return is_set

    def _add_child(self, index: int) -> None:
        group = Group(f"{self.field.name} [{index}]", self.group.body, removable=True)
        group.removed.connect(lambda: self.remove(index))
        child = MessageForm(
            self.field.message_type,  # type: ignore[arg-type]
            f"{self.path}.{index}.",
            options=self.form.options,
            parent=group.body,
        )
        child.edited.connect(self.form.edited.emit)
        child.invalid.connect(self.form.invalid.emit)
        group.add_widget(child)
        self.group.body_layout.insertWidget(self.group.body_layout.count() - 1, group)
        self.children.append((group, child))

    def editor(self, rest: str) -> QWidget:
        if not rest:
            return self.widget
        index, _, inner = rest.partition(".")
        return self.children[int(index)][1].editor(f"{self.path}.{index}.{inner}")


__all__ = ["FormOptions", "MessageForm", "resolve", "summary"]
