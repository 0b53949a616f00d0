"""Rewrite prototxt text to describe an edited message, changing only what the edit changed.

``patch_text(text, old, new)``: ``text`` parses to ``old``; the result parses to ``new`` and differs
from ``text`` only where ``old`` and ``new`` differ. A changed value is replaced in place; a removed
field loses its line (with the comment on that line), or only its tokens where it shares the line;
an added field goes where Caffe's field order puts it among the fields already written, or beside
the elements of its repeated field, in the file's own style: its indentation, one-line blocks
(``param { lr_mult: 1 }``) where the file writes that block on one line. Repeated fields are aligned
element by element (a moved element keeps its text verbatim), so a layer added, removed or moved is
one block of text. Every other comment, blank line and field stays byte for byte.

The result is checked by reading it back (for a net whose layers alone changed, each rewritten
layer's block on its own, so an edit on a ResNet-152 stays a few milliseconds); ``None`` when the
check fails or the text uses syntax this module does not follow: the caller renders ``new`` then.
"""

from __future__ import annotations

import io
import logging
import re
from collections.abc import Sequence
from difflib import SequenceMatcher
from typing import Any

from google.protobuf import text_format
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

from proto import caffe_pb2
from proto.text_cst import (
    Block,
    Field,
    Unsupported,
    indent_of,
    line_end,
    line_start,
    parse,
    rest_is_blank,
    starts_line,
)

_LOG = logging.getLogger(__name__)
_INDENT_STEP = re.compile(r"(?m)^([ \t]*)[^\n#]*[{<][ \t]*(?:#[^\n]*)?\n([ \t]*)\S")
_FLOATS = (FieldDescriptor.CPPTYPE_FLOAT, FieldDescriptor.CPPTYPE_DOUBLE)
_ONE_LINE_MAX = 80
# Fields that go with others rather than in number order: a policy's settings follow lr_policy.
_POLICY = ("lr_policy", "gamma", "power", "stepsize", "stepvalue")
_GROUPS = {
    ("caffe.SolverParameter", name): _POLICY for name in _POLICY[1:]
}  # a new block is written on one line (in files that do so) only up to this width


def patch_text(text: str, old: Message, new: Message) -> str | None:
    """``text`` (which reads as ``old``) rewritten to read as ``new``; None if it cannot be."""
    if old == new:
        return text
    if "\r\n" in text and text.count("\r\n") == text.count("\n"):  # Windows line ends throughout
        patched = patch_text(text.replace("\r\n", "\n"), old, new)
        return None if patched is None else patched.replace("\n", "\r\n")
    try:
        root = parse(text)
        patch = _Patch(root)
        patch.message(root, old, new)
        result = patch.result()
        return result if _reads_as(result, text, old, new, root, patch.layer_origins) else None
    except Unsupported as e:
        _LOG.info("prototxt not patched (%s): the message is rendered instead", e)
        return None
    except Exception:  # a slip here must cost only the comments, never the edit itself
        _LOG.exception("prototxt patch failed: the message is rendered instead")
        return None


class _Patch:
    def __init__(self, root: Block) -> None:
        self.root = root
        self.text = text = root.tokens.text
        self.edits: list[tuple[int, int, int, str]] = []  # (start, end, order, replacement)
        step = _INDENT_STEP.search(text)
        self.unit = "  "
        if step and len(step.group(2)) > len(step.group(1)) and step.group(2).startswith(step.group(1)):
            self.unit = step.group(2)[len(step.group(1)) :]
        self._one_line_names: set[str] | None = None
        self.deleted: set[int] = set()  # the starts of the fields deleted (never an anchor)
        self.layer_origins: list[int | None] | None = None  # per new layer: the old one kept verbatim

    # ---- edits --------------------------------------------------------------------------------
    def edit(self, start: int, end: int, replacement: str) -> None:
        self.edits.append((start, end, len(self.edits), replacement))

    def result(self) -> str:
        out, at = [], 0
        for start, end, _, replacement in sorted(self.edits):
            if start < at:
                if start != end or replacement:  # only deletions may overlap (and merge)
                    raise Unsupported("two edits overlap")
                at = max(at, end)
                continue
            out += [self.text[at:start], replacement]
            at = max(at, end)
        out.append(self.text[at:])
        return "".join(out)

    # ---- the diff -----------------------------------------------------------------------------
    def message(self, block: Block, old: Message, new: Message) -> None:
        if old == new:
            return
        written: dict[str, list[Field]] = {}
        for node in block.fields:
            written.setdefault(node.name, []).append(node)
        fields = {fd.number: fd for fd, _ in (*old.ListFields(), *new.ListFields())}
        for number in sorted(fields):
            fd = fields[number]
            nodes = written.get(fd.name, [])
            if fd.is_repeated:
                self.repeated(block, fd, nodes, list(getattr(old, fd.name)), list(getattr(new, fd.name)))
            else:
                self.singular(block, fd, nodes, old, new)

    def singular(
        self, block: Block, fd: FieldDescriptor, nodes: list[Field], old: Message, new: Message
    ) -> None:
        had, has = old.HasField(fd.name), new.HasField(fd.name)
        if had and not has:
            for node in nodes:
                self.delete(node)
        elif has and not had:
            self.add_field(block, fd, [getattr(new, fd.name)])
        elif has:
            before, after = getattr(old, fd.name), getattr(new, fd.name)
            if before == after:
                return
            if len(nodes) != 1 or nodes[0].listed:
                raise Unsupported(f"'{fd.name}' is not written once")
            node = nodes[0]
            if fd.message_type is not None:
                if node.block is None:
                    raise Unsupported(f"'{fd.name}' has no block")
                self.message(node.block, before, after)
            else:
                self.edit(node.values[0][0], node.values[-1][1], _scalar(fd, after))

    def repeated(self, block: Block, fd: FieldDescriptor, nodes: list[Field], old: list, new: list) -> None:
        if old == new:
            return
        if any(node.listed for node in nodes):
            self.relist(block, fd, nodes, new)
            return
        if len(nodes) != len(old):
            raise Unsupported(f"'{fd.name}': {len(nodes)} written, {len(old)} read")
        is_message = fd.message_type is not None
        if is_message and any(node.block is None for node in nodes):
            raise Unsupported(f"'{fd.name}' has an element without a block")
        ops = _align(old, new, is_message)
        deleted = {}
        for op in ops:
            if op[0] == "delete":
                self.delete(nodes[op[1]])
                if is_message:
                    deleted[_key(old[op[1]])] = nodes[op[1]]
        for op in ops:
            if op[0] == "pair":
                _, i, j = op
                if is_message:
                    self.message(nodes[i].block, old[i], new[j])
                else:
                    self.edit(nodes[i].values[0][0], nodes[i].values[-1][1], _scalar(fd, new[j]))
            elif op[0] == "insert":
                _, j, after = op
                moved = deleted.get(_key(new[j])) if is_message else None
                self.insert_element(block, fd, nodes, after, new[j], moved)
        if block.is_root and fd.name == "layer":
            self.layer_origins = _origins(ops, len(old), len(new))

    def relist(self, block: Block, fd: FieldDescriptor, nodes: list[Field], new: list) -> None:
        """A repeated scalar written as ``name: [a, b]``: the first node holds the whole new list."""
        for node in nodes[1:]:
            self.delete(node)
        if not new:
            self.delete(nodes[0])
            return
        first = nodes[0]
        bracket = self.text.index("[", first.start, first.end)
        self.edit(bracket, first.end, "[" + ", ".join(_scalar(fd, value) for value in new) + "]")

    # ---- removing -----------------------------------------------------------------------------
    def delete(self, node: Field) -> None:
        """The node's own line(s), its comment with them; only its tokens where it shares a line."""
        text = self.text
        self.deleted.add(node.start)
        end = _past_separator(text, node.end)
        if starts_line(text, node.start):
            if rest_is_blank(text, node.end):
                stop = line_end(text, node.end)
                self.edit(line_start(text, node.start), min(stop + 1, len(text)), "")
            else:
                self.edit(node.start, len(text) - len(text[end:].lstrip(" \t")), "")
        else:
            self.edit(len(text[: node.start].rstrip(" \t")), end, "")

    # ---- adding -------------------------------------------------------------------------------
    def add_field(self, block: Block, fd: FieldDescriptor, values: list) -> None:
        """A field not written yet: after the written field nearest before it in Caffe's order
        (a solver's learning-rate fields: after the policy's own), before the first field when
        none comes before it."""
        assert fd.containing_type is not None
        number = fd.containing_type.fields_by_name
        alive = [n for n in block.fields if n.start not in self.deleted]
        grouped = [n for n in alive if n.name in _GROUPS.get((fd.containing_type.full_name, fd.name), ())]
        earlier = [n for n in alive if number[n.name].number < fd.number]
        if grouped or earlier:
            nearest = max(number[n.name].number for n in earlier) if earlier else None
            anchor = max(
                grouped or [n for n in earlier if number[n.name].number == nearest], key=lambda n: n.end
            )
            for value in values:
                self.place_after(block, anchor, fd, value)
        elif block.fields:
            for value in values:
                self.place_before(block, block.fields[0], fd, value)
        else:
            self.place_in_empty(block, fd, values)

    def insert_element(
        self,
        block: Block,
        fd: FieldDescriptor,
        nodes: list[Field],
        after: int,
        value: Any,
        moved: Field | None,
    ) -> None:
        if not nodes:
            self.add_field(block, fd, [value])
        elif after >= 0:
            self.place_after(block, nodes[after], fd, value, nodes, moved)
        else:
            self.place_before(block, nodes[0], fd, value, nodes, moved)

    def place_after(self, block: Block, anchor: Field, fd: FieldDescriptor, value: Any, *style: Any) -> None:
        """``style``: the field's written elements (whose one-line habit a new one follows), the
        element moving here (its text kept)."""
        text = self.text
        if rest_is_blank(text, anchor.end):
            own = starts_line(text, anchor.start)
            indent = indent_of(text, anchor.start) if own else self.child_indent(block)
            at = line_end(text, anchor.end)
            self.edit(at, at, "\n" + indent + self.written(fd, value, indent, False, *style))
        else:
            self.edit(anchor.end, anchor.end, " " + self.written(fd, value, "", True, *style, inline=True))

    def place_before(self, block: Block, anchor: Field, fd: FieldDescriptor, value: Any, *style: Any) -> None:
        text = self.text
        if starts_line(text, anchor.start):
            indent, at = indent_of(text, anchor.start), line_start(text, anchor.start)
            self.edit(at, at, indent + self.written(fd, value, indent, False, *style) + "\n")
        else:
            self.edit(
                anchor.start, anchor.start, self.written(fd, value, "", True, *style, inline=True) + " "
            )

    def place_in_empty(self, block: Block, fd: FieldDescriptor, values: list) -> None:
        text = self.text
        if block.is_root:
            lead = "" if not text or text.endswith("\n") else "\n"
            body = "\n".join(self.written(fd, value, "", False) for value in values)
            self.edit(len(text), len(text), lead + body + "\n")
        elif block.one_line():
            body = " ".join(self.written(fd, value, "", True) for value in values)
            tail = " " if text[block.open + 1] in "}>" else ""
            self.edit(block.open + 1, block.open + 1, " " + body + tail)
        else:
            indent = self.child_indent(block)
            body = "".join("\n" + indent + self.written(fd, value, indent, False) for value in values)
            self.edit(line_end(text, block.open), line_end(text, block.open), body)

    def child_indent(self, block: Block) -> str:
        if block.is_root:
            return ""
        for node in block.fields:
            if starts_line(self.text, node.start):
                return indent_of(self.text, node.start)
        return indent_of(self.text, block.open) + self.unit

    # ---- writing in the file's style ------------------------------------------------------------
    def written(
        self,
        fd: FieldDescriptor,
        value: Any,
        indent: str,
        one_line: bool,
        siblings: Sequence[Field] = (),
        moved: Field | None = None,
        *,
        inline: bool = False,
    ) -> str:
        """``name: value`` or ``name { ... }`` as this file writes it, its later lines at ``indent``."""
        if moved is not None:
            end = moved.end
            if not inline and rest_is_blank(self.text, moved.end):  # keep its comment with it
                end = len(self.text[: line_end(self.text, moved.end)].rstrip(" \t"))
            return self.text[moved.start : end]
        if fd.message_type is None:
            return f"{fd.name}: {_scalar(fd, value)}"
        if not one_line:
            styled = [n.block for n in siblings if n.block is not None]
            one_line = styled[-1].one_line() if styled else fd.name in self.one_line_names()
        flat = _flat(value)
        if one_line and (inline or len(indent) + len(fd.name) + len(flat) + 5 <= _ONE_LINE_MAX):
            return f"{fd.name} {{ {flat} }}" if flat else f"{fd.name} {{ }}"
        inner = indent + self.unit
        lines = [f"{fd.name} {{"]
        for sub, field_value in value.ListFields():
            for item in field_value if sub.is_repeated else [field_value]:
                lines.append(inner + self.written(sub, item, inner, False))
        return "\n".join([*lines, indent + "}"])

    def one_line_names(self) -> set[str]:
        """The fields this file writes as one-line blocks somewhere (``param``, ``weight_filler``)."""
        if self._one_line_names is None:
            self._one_line_names = self.root.tokens.one_line_blocks()
        return self._one_line_names


# ---- helpers ------------------------------------------------------------------------------------
def _scalar(fd: FieldDescriptor, value: Any) -> str:
    out = io.StringIO()
    text_format.PrintFieldValue(fd, value, out, as_utf8=True)
    written = out.getvalue()
    if fd.cpp_type in _FLOATS and written.endswith(".0"):
        return written[:-2]  # a whole number as Caffe (C++) writes it: "lr_mult: 1", not "1.0"
    return written


def _flat(message: Message) -> str:
    """A message's fields on one line: ``lr_mult: 1 decay_mult: 0``."""
    parts = []
    for fd, value in message.ListFields():
        for item in value if fd.is_repeated else [value]:
            parts.append(
                f"{fd.name} {{ {_flat(item)} }}" if fd.message_type else f"{fd.name}: {_scalar(fd, item)}"
            )
    return " ".join(parts)


def _key(message: Message) -> bytes:
    return message.SerializeToString(deterministic=True)


def _past_separator(text: str, position: int) -> int:
    rest = text[position : line_end(text, position)]
    stripped = rest.lstrip(" \t")
    return position + len(rest) - len(stripped) + 1 if stripped[:1] in (",", ";") else position


def _align(old: list, new: list, is_message: bool) -> list[tuple]:
    """How ``old`` becomes ``new``: ("pair", i, j) (element i edited into j), ("delete", i) and
    ("insert", j, after) (new element j placed after old element ``after``, -1: before the first)."""
    prefix = 0
    while prefix < min(len(old), len(new)) and old[prefix] == new[prefix]:
        prefix += 1
    suffix = 0
    while suffix < min(len(old), len(new)) - prefix and old[-1 - suffix] == new[-1 - suffix]:
        suffix += 1
    old_mid, new_mid = old[prefix : len(old) - suffix], new[prefix : len(new) - suffix]
    if len(old_mid) == len(new_mid) == 1:  # one element edited: the usual case, no search
        return [("pair", prefix, prefix)]
    keys = (lambda items: [_key(m) for m in items]) if is_message else (lambda items: items)
    ops: list[tuple] = []
    matcher = SequenceMatcher(None, keys(old_mid), keys(new_mid), autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        i1, i2, j1, j2 = i1 + prefix, i2 + prefix, j1 + prefix, j2 + prefix
        paired = min(i2 - i1, j2 - j1) if tag == "replace" else 0
        ops += [("pair", i1 + k, j1 + k) for k in range(paired)]
        if tag in ("replace", "delete"):
            ops += [("delete", i) for i in range(i1 + paired, i2)]
        if tag in ("replace", "insert"):
            ops += [("insert", j, i1 + paired - 1) for j in range(j1 + paired, j2)]
    return ops


def _origins(ops: list[tuple], old_count: int, new_count: int) -> list[int | None]:
    """For each new element, the old one whose text it keeps unchanged (None: rewritten)."""
    gone = {op[1] for op in ops if op[0] in ("pair", "delete")}
    made = {op[2] if op[0] == "pair" else op[1] for op in ops if op[0] in ("pair", "insert")}
    kept = (i for i in range(old_count) if i not in gone)
    origins: list[int | None] = [None] * new_count
    for j in range(new_count):
        if j not in made:
            origins[j] = next(kept)
    return origins


def _reads_as(result: str, text: str, old: Message, new: Message, root: Block, origins: list | None) -> bool:
    """Whether ``result`` reads back as ``new``: layer by layer where only layers changed (the rest
    of the text must then be as it was)."""
    if isinstance(new, caffe_pb2.NetParameter) and origins is not None and _same_but_layers(old, new):
        rescanned = parse(result).fields
        rest = [result[n.start : n.end] for n in rescanned if n.name != "layer"]
        if rest != [text[n.start : n.end] for n in root.fields if n.name != "layer"]:
            return False
        before = [n for n in root.fields if n.name == "layer"]
        after = [n for n in rescanned if n.name == "layer"]
        if len(after) != len(new.layer):
            return False
        for j, node in enumerate(after):
            origin = origins[j]
            if origin is not None:
                was = before[origin]
                if result[node.start : node.end] != text[was.start : was.end]:
                    return False
            else:
                one = caffe_pb2.NetParameter()
                text_format.Parse(result[node.start : node.end], one)
                if len(one.ListFields()) != 1 or list(one.layer) != [new.layer[j]]:
                    return False
        return True
    read = type(new)()
    text_format.Parse(result, read)
    return read == new


def _same_but_layers(old: Message, new: Message) -> bool:
    def rest(message: Message) -> list:
        return [(fd.number, value) for fd, value in message.ListFields() if fd.name != "layer"]

    return rest(old) == rest(new)
