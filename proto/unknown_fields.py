"""Fields a prototxt sets that our schema lacks (Caffe forks add them: ``ceil_mode`` in
``pooling_param`` is common in DenseNet/ResNet ports), found in one pass over the text.

The scan walks the text as protobuf's text format nests it, looking each field name up in the
message type it sits in, and returns every unknown field with its line, column and the span of
text it covers (name, value or ``{ ... }`` block, and a trailing ``;``/``,``). ``blank`` overwrites
those spans with spaces (newlines kept), so the strict parser then reads the rest with every other
line and column unchanged. The scan only has to be right on text the strict parser would accept
once the unknown fields are gone; on anything else it stops, and the strict parser's own error is
what the user sees.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Sequence
from dataclasses import dataclass

from google.protobuf.descriptor import Descriptor, FieldDescriptor

# One token: a comment or whitespace (skipped), a quoted string, a word (names, numbers,
# identifiers, -inf), or one punctuation character.
_TOKEN = re.compile(
    r"""(?P<skip>\s+|\#[^\n]*)
      | (?P<string>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')
      | (?P<word>[A-Za-z0-9_.+\-]+)
      | (?P<punct>[{}<>\[\]:;,/])""",
    re.VERBOSE,
)
_CLOSE = {"{": "}", "<": ">"}
# What a fork's field means in BVLC's own schema, where it has a counterpart.
COUNTERPARTS = {
    ("caffe.PoolingParameter", "ceil_mode"): (
        "ceil_mode is BVLC's round_mode (ceil_mode: false = round_mode: FLOOR); without it pooling rounds up"
    ),
}


@dataclass(frozen=True)
class UnknownField:
    """One field our schema lacks: where it is, in which message, and which text it covers."""

    line: int
    column: int
    message_type: str  # "caffe.PoolingParameter"
    name: str  # "ceil_mode"
    where: str  # "pooling_param" (the path of fields from the top message), "" at the top
    layer: str  # the name of the layer it sits in, "" when none
    start: int  # offset of the first character of the field's text
    end: int  # offset just past it

    @property
    def counterpart(self) -> str | None:
        """What the field is in BVLC's schema, if it has a counterpart there."""
        return COUNTERPARTS.get((self.message_type, self.name))

    def describe(self) -> str:
        """``"pooling_param.ceil_mode (layer 'pool1')"``."""
        field = f"{self.where}.{self.name}" if self.where else self.name
        return f"{field} (layer '{self.layer}')" if self.layer else field


class _Stop(Exception):
    """Text the scan does not follow: leave the verdict to the strict parser."""


class _Tokens:
    def __init__(self, text: str) -> None:
        self.text = text
        self.items: list[tuple[str, str, int]] = []  # (kind, value, offset)
        position = 0
        while position < len(text):
            match = _TOKEN.match(text, position)
            if match is None:
                break  # a character the format does not allow: the strict parser names it
            kind = match.lastgroup or ""
            if kind != "skip":
                self.items.append((kind, match.group(), position))
            position = match.end()
        self.items.append(("end", "", len(text)))
        self.index = 0

    def peek(self) -> tuple[str, str, int]:
        return self.items[self.index]

    def take(self) -> tuple[str, str, int]:
        item = self.items[self.index]
        if item[0] != "end":
            self.index += 1
        return item

    def take_if(self, value: str) -> bool:
        if self.peek()[1] == value and self.peek()[0] == "punct":
            self.index += 1
            return True
        return False

    def end_of_previous(self) -> int:
        kind, value, offset = self.items[self.index - 1]
        return offset + len(value)

    def location(self, offset: int) -> tuple[int, int]:
        line = self.text.count("\n", 0, offset) + 1
        return line, offset - (self.text.rfind("\n", 0, offset) + 1) + 1


def find(text: str, descriptor: Descriptor) -> list[UnknownField]:
    """Every field in ``text`` that ``descriptor``'s message (or the messages nested in it) lacks."""
    tokens = _Tokens(text)
    found: list[UnknownField] = []
    with contextlib.suppress(_Stop):
        _message(tokens, descriptor, "", "", "", found)
    return found


def blank(text: str, fields: Sequence[UnknownField]) -> str:
    """``text`` with each field's span turned to spaces, newlines kept (lines and columns stay put)."""
    pieces: list[str] = []
    position = 0
    for field in sorted(fields, key=lambda f: f.start):
        pieces.append(text[position : field.start])
        pieces.append(re.sub(r"[^\n]", " ", text[field.start : field.end]))
        position = field.end
    pieces.append(text[position:])
    return "".join(pieces)


def _message(
    tokens: _Tokens, descriptor: Descriptor | None, close: str, where: str, layer: str, found: list
) -> None:
    """Fields up to ``close`` (or the end of the text at the top). ``descriptor`` None: skipping."""
    while True:
        kind, value, start = tokens.take()
        if kind == "end":
            if close:
                raise _Stop
            return
        if kind == "punct" and value == close:
            return
        if kind != "word":
            raise _Stop  # "[ext]" names, stray punctuation: not Caffe's, leave it to the parser
        field = _field(descriptor, value) if descriptor is not None else None
        known = descriptor is None or field is not None
        nested = field.message_type if field is not None and field.message_type is not None else None
        path, inner_layer = (f"{where}.{value}" if where else value), layer
        in_net = descriptor is not None and descriptor.full_name == "caffe.NetParameter"
        if in_net and value in ("layer", "layers"):
            path, inner_layer = "", _layer_name(tokens)  # inside a layer, paths start from the layer
        _value(tokens, nested if known else None, path, inner_layer, found)
        if not tokens.take_if(";"):
            tokens.take_if(",")
        if not known and descriptor is not None:
            line, column = tokens.location(start)
            end = tokens.end_of_previous()
            found.append(UnknownField(line, column, descriptor.full_name, value, where, layer, start, end))


def _field(descriptor: Descriptor, name: str) -> FieldDescriptor | None:
    field = descriptor.fields_by_name.get(name)
    if field is None:  # a group is written by its type's name
        field = next((f for f in descriptor.fields if f.message_type and f.message_type.name == name), None)
    return field


def _value(tokens: _Tokens, nested: Descriptor | None, path: str, layer: str, found: list) -> None:
    """The value after a field name: ``: scalar``, ``: [list]`` or ``[:] { message }``."""
    colon = tokens.take_if(":")
    kind, value, _ = tokens.peek()
    if kind == "punct" and value in _CLOSE:
        tokens.take()
        _message(tokens, nested, _CLOSE[value], path, layer, found)
    elif kind == "punct" and value == "[":
        tokens.take()
        _list(tokens, nested, path, layer, found)
    elif colon:
        _scalar(tokens)
    else:
        raise _Stop


def _list(tokens: _Tokens, nested: Descriptor | None, path: str, layer: str, found: list) -> None:
    if tokens.take_if("]"):
        return
    while True:
        kind, value, _ = tokens.peek()
        if kind == "punct" and value in _CLOSE:
            tokens.take()
            _message(tokens, nested, _CLOSE[value], path, layer, found)
        else:
            _scalar(tokens)
        if tokens.take_if("]"):
            return
        if not tokens.take_if(","):
            raise _Stop


def _scalar(tokens: _Tokens) -> None:
    kind, _, _ = tokens.take()
    if kind == "string":
        while tokens.peek()[0] == "string":  # adjacent strings concatenate
            tokens.take()
    elif kind != "word":
        raise _Stop


def _layer_name(tokens: _Tokens) -> str:
    """The ``name:`` of the layer block about to be read, looked up ahead without consuming."""
    items, depth = tokens.items, 0
    for i in range(tokens.index, len(items) - 2):
        kind, value, _ = items[i]
        if kind == "punct" and value in "{<[":
            depth += 1
        elif kind == "punct" and value in "}>]":
            depth -= 1
            if depth <= 0:
                return ""
        elif depth == 1 and kind == "word" and value == "name" and items[i + 1][1] == ":":
            name_kind, name, _ = items[i + 2]
            return name[1:-1] if name_kind == "string" else name
    return ""
