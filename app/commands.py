"""Every edit of the document, as a small command with ``do`` and ``undo``.

A command is made from plain arguments, checked against the document with ``validate`` (which
raises ``CommandError`` with a message for the user: nothing changes), then applied with ``do``
and reversed with ``undo``. ``app.undo`` (a QUndoStack) runs them (the tests also use a Qt-free
History). Layers are addressed by index: names may repeat across phases, as in LeNet.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

from app import netio
from app.document import LAYOUT, NET, SOLVER, Change, Document, Kind, next_state
from app.fields import FieldPathError, copy_message, set_field
from graph_view.document_api import Command as GraphCommand
from graph_view.sidecar import ViewState
from proto import caffe_pb2
from proto.errors import FormatError

LayerParameter = caffe_pb2.LayerParameter


class CommandError(ValueError):
    """The edit cannot be made; ``str()`` is the reason, fit to show the user."""


class Command:
    """Base: keeps the document's dirty state and prototxt text in step with do and undo.

    The user's text is theirs: an edit rewrites only the lines it changes (``netio.edited_text``),
    and undo puts back the text as it was, byte for byte.
    """

    text = ""  # what Edit > Undo says
    part = NET
    _patches_text = True  # False: the text after is rendered from the message (legacy text typed)

    def __init__(self) -> None:
        self._after: int | None = None  # the state id this command leads to, fixed on first do

    def validate(self, doc: Document) -> None:
        """Raise CommandError if this command cannot apply to ``doc`` as it is now."""

    def do(self, doc: Document) -> None:
        self._before, self._text_before = doc.mark(self.part)
        if self._after is None:
            self._after = next_state()
        text, before = self._text_after(), None
        if text is None and self._text_before is not None and self._patches_text:
            before = copy_message(_message(doc, self.part))
        changes = self._apply(doc)
        if before is not None:
            assert self._text_before is not None
            text = netio.edited_text(self._text_before, before, _message(doc, self.part))
        doc.commit(self.part, self._after, text, changes)

    def undo(self, doc: Document) -> None:
        doc.commit(self.part, self._before, self._text_before, self._revert(doc))

    def _text_after(self) -> str | None:
        return None  # the user's text patched (or, when there is none, rendered from the message)

    def _apply(self, doc: Document) -> list[Change]:
        raise NotImplementedError

    def _revert(self, doc: Document) -> list[Change]:
        raise NotImplementedError


def _message(doc: Document, part: str) -> caffe_pb2.NetParameter | caffe_pb2.SolverParameter:
    return doc.net if part == NET else doc.solver


def _check_index(doc: Document, index: int, end_ok: bool = False) -> None:
    count = len(doc.net.layer)
    if not 0 <= index < count + end_ok:
        raise CommandError(f"no layer at index {index} (the net has {count})")


class AddLayer(Command):
    """Insert ``layer`` at ``index`` (default: the end), renamed if its name is taken."""

    def __init__(self, layer: LayerParameter, index: int | None = None) -> None:
        super().__init__()
        self.layer, self.index = copy_message(layer), index
        self.text = f"Add {layer.type or 'layer'} '{layer.name}'"

    def validate(self, doc: Document) -> None:
        if self.index is not None:
            _check_index(doc, self.index, end_ok=True)

    def _apply(self, doc: Document) -> list[Change]:
        layer = copy_message(self.layer)
        name = doc.unique_name(layer.name or "layer")
        if name != layer.name:
            layer.top[:] = [name if top == layer.name else top for top in layer.top]
            layer.name = name
        self._at = len(doc.net.layer) if self.index is None else self.index
        doc.net.layer.insert(self._at, layer)
        return [Change(Kind.LAYER_ADDED, self._at)]

    def _revert(self, doc: Document) -> list[Change]:
        old = copy_message(doc.net.layer[self._at])
        del doc.net.layer[self._at]
        return [Change(Kind.LAYER_REMOVED, self._at, old=old)]


class RemoveLayer(Command):
    def __init__(self, index: int) -> None:
        super().__init__()
        self.index = index
        self.text = "Remove layer"

    def validate(self, doc: Document) -> None:
        _check_index(doc, self.index)
        self.text = f"Remove '{doc.layer(self.index).name}'"

    def _apply(self, doc: Document) -> list[Change]:
        self._old = copy_message(doc.net.layer[self.index])
        del doc.net.layer[self.index]
        return [Change(Kind.LAYER_REMOVED, self.index, old=self._old)]

    def _revert(self, doc: Document) -> list[Change]:
        doc.net.layer.insert(self.index, copy_message(self._old))
        return [Change(Kind.LAYER_ADDED, self.index)]


class MoveLayer(Command):
    """Move the layer at ``index`` so that it ends up at ``to`` (Caffe runs layers in order)."""

    def __init__(self, index: int, to: int) -> None:
        super().__init__()
        self.index, self.to = index, to
        self.text = "Move layer"

    def validate(self, doc: Document) -> None:
        _check_index(doc, self.index)
        _check_index(doc, self.to)

    def _move(self, doc: Document, src: int, dst: int) -> list[Change]:
        layer = copy_message(doc.net.layer[src])
        del doc.net.layer[src]
        doc.net.layer.insert(dst, layer)
        return [Change(Kind.LAYER_MOVED, dst, old_index=src)]

    def _apply(self, doc: Document) -> list[Change]:
        return self._move(doc, self.index, self.to)

    def _revert(self, doc: Document) -> list[Change]:
        return self._move(doc, self.to, self.index)


class ReplaceLayer(Command):
    """Put ``layer`` in place of the layer at ``index``; the base of every one-layer edit."""

    def __init__(self, index: int, layer: LayerParameter | None = None, text: str = "Edit layer") -> None:
        super().__init__()
        self.index, self.layer, self.text = index, layer, text

    def validate(self, doc: Document) -> None:
        _check_index(doc, self.index)

    def _new_layer(self, old: LayerParameter) -> LayerParameter:
        assert self.layer is not None
        return copy_message(self.layer)

    def _apply(self, doc: Document) -> list[Change]:
        self._old = copy_message(doc.net.layer[self.index])
        doc.net.layer[self.index].CopyFrom(self._new_layer(self._old))
        return [Change(Kind.LAYER_CHANGED, self.index, old=self._old)]

    def _revert(self, doc: Document) -> list[Change]:
        old = copy_message(doc.net.layer[self.index])
        doc.net.layer[self.index].CopyFrom(self._old)
        return [Change(Kind.LAYER_CHANGED, self.index, old=old)]


class SetLayerField(ReplaceLayer):
    """Set one field of a layer by path: ``SetLayerField(2, "convolution_param.num_output", 64)``."""

    def __init__(self, index: int, path: str, value: Any) -> None:
        super().__init__(index, text=f"Set {path}")
        self.path, self.value = path, value

    def validate(self, doc: Document) -> None:
        super().validate(doc)
        layer = self._new_layer(doc.layer(self.index))
        if self.path == "name":
            _check_name(doc, self.index, layer.name)
        if not layer.IsInitialized():
            raise CommandError(f"{self.path}: leaves required fields unset")

    def _new_layer(self, old: LayerParameter) -> LayerParameter:
        layer = copy_message(old)
        try:
            set_field(layer, self.path, self.value)
        except FieldPathError as e:
            raise CommandError(str(e)) from None
        return layer


def _check_name(doc: Document, index: int, name: str) -> None:
    if not name.strip():
        raise CommandError("a layer needs a name")
    if any(n == name and i != index for i, n in enumerate(doc.layer_names())):
        raise CommandError(f"a layer named '{name}' already exists")


class RenameLayer(SetLayerField):
    def __init__(self, index: int, name: str) -> None:
        super().__init__(index, "name", name)
        self.text = f"Rename to '{name}'"


class Connect(SetLayerField):
    """Feed ``blob`` into the layer at ``index``: as bottom ``slot``, or as a new last bottom."""

    def __init__(self, index: int, blob: str, slot: int | None = None) -> None:
        super().__init__(index, "bottom", None)
        self.blob, self.slot = blob, slot
        self.text = f"Connect '{blob}'"

    def _new_layer(self, old: LayerParameter) -> LayerParameter:
        layer = copy_message(old)
        if self.slot is None or self.slot == len(layer.bottom):
            layer.bottom.append(self.blob)
        elif 0 <= self.slot < len(layer.bottom):
            layer.bottom[self.slot] = self.blob
        else:
            raise CommandError(f"'{layer.name}' has no bottom {self.slot}")
        return layer


class Disconnect(SetLayerField):
    """Remove bottom ``slot`` of the layer at ``index``."""

    def __init__(self, index: int, slot: int) -> None:
        super().__init__(index, "bottom", None)
        self.slot = slot
        self.text = "Disconnect"

    def _new_layer(self, old: LayerParameter) -> LayerParameter:
        layer = copy_message(old)
        if not 0 <= self.slot < len(layer.bottom):
            raise CommandError(f"'{layer.name}' has no bottom {self.slot}")
        del layer.bottom[self.slot]
        return layer


class RenameBlob(Command):
    """Call blob ``old`` ``new`` wherever a layer names it as a bottom or a top."""

    def __init__(self, old: str, new: str) -> None:
        super().__init__()
        self.old, self.new = old, new
        self.text = f"Rename blob '{old}' to '{new}'"

    def validate(self, doc: Document) -> None:
        if not self.new.strip():
            raise CommandError("a blob needs a name")
        if not any(self.old in (*layer.bottom, *layer.top) for layer in doc.net.layer):
            raise CommandError(f"no blob named '{self.old}'")
        if self.new != self.old and any(self.new in (*layer.bottom, *layer.top) for layer in doc.net.layer):
            raise CommandError(f"a blob named '{self.new}' already exists: renaming would merge the two")

    def _apply(self, doc: Document) -> list[Change]:
        self._olds: list[tuple[int, LayerParameter]] = []
        changes = []
        for i, layer in enumerate(doc.net.layer):
            if self.old in (*layer.bottom, *layer.top):
                self._olds.append((i, copy_message(layer)))
                layer.bottom[:] = [self.new if b == self.old else b for b in layer.bottom]
                layer.top[:] = [self.new if t == self.old else t for t in layer.top]
                changes.append(Change(Kind.LAYER_CHANGED, i, old=self._olds[-1][1]))
        return changes

    def _revert(self, doc: Document) -> list[Change]:
        changes = []
        for i, old in self._olds:
            current = copy_message(doc.net.layer[i])
            doc.net.layer[i].CopyFrom(old)
            changes.append(Change(Kind.LAYER_CHANGED, i, old=current))
        return changes


class ReplaceNet(Command):
    """Swap in a whole net; ``text`` is the prototxt it came from, kept (with comments) for saving."""

    def __init__(self, net: caffe_pb2.NetParameter, text: str | None = None, label: str = "Edit net") -> None:
        super().__init__()
        self.net, self.net_text, self.text = copy_message(net), text, label

    @classmethod
    def from_text(cls, text: str, path: str = "<text>") -> ReplaceNet:
        """Raises proto.errors.FormatError (line, column) when ``text`` does not parse."""
        net, kept = netio.load_net_text(text, path)
        command = cls(net, kept, "Edit prototxt")
        command._patches_text = kept is not None  # legacy text typed: the upgraded net is rendered
        return command

    def _text_after(self) -> str | None:
        return self.net_text

    def _new_net(self, old: caffe_pb2.NetParameter) -> caffe_pb2.NetParameter:
        return copy_message(self.net)

    def _apply(self, doc: Document) -> list[Change]:
        self._old = doc.replace(self._new_net(doc.net))
        return [Change(Kind.NET_REPLACED)]

    def _revert(self, doc: Document) -> list[Change]:
        doc.replace(copy_message(self._old))
        return [Change(Kind.NET_REPLACED)]


class SetNetField(ReplaceNet):
    """A net-level field (name, force_backward, state, ...); layers change through layer commands."""

    def __init__(self, path: str, value: Any) -> None:
        super().__init__(caffe_pb2.NetParameter(), label=f"Set {path}")
        self.path, self.value = path, value

    def validate(self, doc: Document) -> None:
        if self.path.split(".")[0] in ("layer", "layers"):
            raise CommandError("edit layers with the layer commands")
        self._new_net(doc.net)

    def _new_net(self, old: caffe_pb2.NetParameter) -> caffe_pb2.NetParameter:
        net = copy_message(old)
        try:
            set_field(net, self.path, self.value)
        except FieldPathError as e:
            raise CommandError(str(e)) from None
        return net


class ReplaceSolver(Command):
    part = SOLVER

    def __init__(
        self, solver: caffe_pb2.SolverParameter, text: str | None = None, label: str = "Edit solver"
    ) -> None:
        super().__init__()
        self.solver, self.solver_text, self.text = copy_message(solver), text, label

    @classmethod
    def from_text(cls, text: str, path: str = "<text>") -> ReplaceSolver:
        solver, kept = netio.load_solver_text(text, path)
        command = cls(solver, kept, "Edit solver text")
        command._patches_text = kept is not None
        return command

    def _text_after(self) -> str | None:
        return self.solver_text

    def _new_solver(self, old: caffe_pb2.SolverParameter) -> caffe_pb2.SolverParameter:
        return copy_message(self.solver)

    def _apply(self, doc: Document) -> list[Change]:
        self._old = doc.replace(self._new_solver(doc.solver))
        return [Change(Kind.SOLVER_CHANGED)]

    def _revert(self, doc: Document) -> list[Change]:
        doc.replace(copy_message(self._old))
        return [Change(Kind.SOLVER_CHANGED)]


class SetSolverField(ReplaceSolver):
    """``SetSolverField("base_lr", 0.1)``, ``SetSolverField("lr_policy", "step")``."""

    def __init__(self, path: str, value: Any) -> None:
        super().__init__(caffe_pb2.SolverParameter(), label=f"Set {path}")
        self.path, self.value = path, value

    def validate(self, doc: Document) -> None:
        self._new_solver(doc.solver)

    def _new_solver(self, old: caffe_pb2.SolverParameter) -> caffe_pb2.SolverParameter:
        solver = copy_message(old)
        try:
            set_field(solver, self.path, self.value)
        except FieldPathError as e:
            raise CommandError(str(e)) from None
        return solver


class SetLayout(Command):
    """Where the boxes are, which way the net flows, which boxes are unfolded: one undo step each
    (a drag, a direction switch, an auto layout), saved beside the net with it."""

    part = LAYOUT

    def __init__(self, layout: ViewState, label: str = "Move boxes") -> None:
        super().__init__()
        self.layout, self.text = layout.copy(), label

    def _apply(self, doc: Document) -> list[Change]:
        self._old = doc.replace_layout(self.layout.copy())
        return [Change(Kind.LAYOUT_CHANGED)]

    def _revert(self, doc: Document) -> list[Change]:
        doc.replace_layout(self._old.copy())
        return [Change(Kind.LAYOUT_CHANGED)]


class Compound(Command):
    """Several commands as one undo step (paste, delete a selection); validated as a whole."""

    def __init__(self, commands: Sequence[Command], text: str = "Edit") -> None:
        super().__init__()
        self.commands, self.text = list(commands), text

    def validate(self, doc: Document) -> None:
        # Each step is checked against the document as the steps before it leave it.
        scratch = Document(doc.net, doc.solver)
        for command in self.commands:
            command.validate(scratch)
            command.do(scratch)

    def do(self, doc: Document) -> None:
        for command in self.commands:
            command.do(doc)

    def undo(self, doc: Document) -> None:
        for command in reversed(self.commands):
            command.undo(doc)


class GraphCommands:
    """The edits graph_view's editor makes, as its ``Commands`` protocol names them."""

    def add_layer(self, layer: LayerParameter) -> Command:
        return AddLayer(layer)

    def remove_layer(self, index: int) -> Command:
        return RemoveLayer(index)

    def move_layer(self, index: int, to: int) -> Command:
        return MoveLayer(index, to)

    def connect(self, index: int, blob: str, slot: int | None = None) -> Command:
        return Connect(index, blob, slot)

    def disconnect(self, index: int, slot: int) -> Command:
        return Disconnect(index, slot)

    def rename_layer(self, index: int, name: str) -> Command:
        return RenameLayer(index, name)

    def rename_blob(self, old: str, new: str) -> Command:
        return RenameBlob(old, new)

    def compound(self, steps: Sequence[GraphCommand], text: str) -> Command:
        return Compound(cast(Sequence[Command], steps), text)

    def set_layout(self, layout: ViewState, text: str) -> Command:
        return SetLayout(layout, text)


__all__ = [
    "AddLayer",
    "Command",
    "CommandError",
    "Compound",
    "Connect",
    "Disconnect",
    "FormatError",
    "GraphCommands",
    "MoveLayer",
    "RemoveLayer",
    "RenameBlob",
    "RenameLayer",
    "ReplaceLayer",
    "ReplaceNet",
    "ReplaceSolver",
    "SetLayerField",
    "SetLayout",
    "SetNetField",
    "SetSolverField",
]
