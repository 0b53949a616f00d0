"""Prototxt as written: where each field, value, block and comment lies in the text.

``parse(text)`` returns the top level as a ``Block`` of ``Field`` nodes, each with the offsets of
its name, its value token(s) or its ``{ ... }`` block, so that ``proto.text_patch`` can rewrite one
value or one block and leave every other character alone. A block's own fields are read only when
asked for (``Block.fields``): a ResNet-152 file is tokenised once, and only the edited layer's
block is read field by field.

The tokens are those of protobuf's text format: ``#`` comments to the end of the line, quoted
strings (never spanning a line), punctuation and words (names, numbers, enum values). What this
reader does not follow (an extension's ``[name]``, a stray token) raises ``Unsupported``: the
caller then renders the message instead of patching the text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_TOKEN = re.compile(
    r"""#[^\n]*|"(?:[^"\\\n]|\\.)*"?|'(?:[^'\\\n]|\\.)*'?|[{}<>\[\]:,;]|[^\s{}<>\[\]:,;#"']+"""
)
_CLOSERS = {"{": "}", "<": ">"}
_PUNCTUATION = frozenset("{}<>[]:,;")


class Unsupported(ValueError):
    """Text this reader does not follow (it may still be valid prototxt)."""


@dataclass
class Field:
    """One field as written: ``name: value``, ``name: [a, b]`` or ``name { ... }``."""

    name: str
    start: int  # the name's first character
    end: int  # just past the value, the closing bracket or the closing brace
    values: list[tuple[int, int]] = field(default_factory=list)  # each value's span (a list: several)
    listed: bool = False  # written as ``name: [a, b]``
    block: Block | None = None  # a message's block


class Block:
    """The fields between ``open`` (a ``{`` or ``<``; -1 at the top level) and ``close``."""

    def __init__(self, tokens: Tokens, open_index: int, close_index: int) -> None:
        self.tokens, self._first, self._last = tokens, open_index + 1, close_index
        self.open = tokens.starts[open_index] if open_index >= 0 else -1
        self.close = tokens.starts[close_index] if close_index < len(tokens.starts) else len(tokens.text)
        self._fields: list[Field] | None = None

    @property
    def is_root(self) -> bool:
        return self.open < 0

    @property
    def fields(self) -> list[Field]:
        if self._fields is None:
            self._fields = _read_fields(self.tokens, self._first, self._last)
        return self._fields

    def one_line(self) -> bool:
        """True for a block written on one line: ``param { lr_mult: 1 }``."""
        return not self.is_root and self.tokens.text.find("\n", self.open, self.close) < 0


class Tokens:
    """The text's tokens (comments included), and for each opening brace the index of its closer."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.starts: list[int] = []
        self.ends: list[int] = []
        self.words: list[str] = []
        for match in _TOKEN.finditer(text):
            self.starts.append(match.start())
            self.ends.append(match.end())
            self.words.append(match.group())
        self.match: dict[int, int] = {}
        stack: list[int] = []
        for i, word in enumerate(self.words):
            if word in _CLOSERS:
                stack.append(i)
            elif word in ("}", ">"):
                if not stack or _CLOSERS[self.words[stack[-1]]] != word:
                    raise Unsupported(f"unbalanced '{word}' at offset {self.starts[i]}")
                self.match[stack.pop()] = i
        if stack:
            raise Unsupported(f"unclosed block at offset {self.starts[stack[-1]]}")

    def one_line_blocks(self) -> set[str]:
        """The names of the blocks written on one line somewhere (``param { lr_mult: 1 }``)."""
        names, words = set(), self.words
        for first, last in self.match.items():
            if self.text.find("\n", self.starts[first], self.starts[last]) < 0:
                k = first - 1 - (first > 0 and words[first - 1] == ":")
                if k >= 0 and _is_name(words[k]):
                    names.add(words[k])
        return names


def parse(text: str) -> Block:
    """The top level of ``text`` (raises ``Unsupported`` where the text is not followed)."""
    tokens = Tokens(text)
    return Block(tokens, -1, len(tokens.words))


def _read_fields(tokens: Tokens, i: int, stop: int) -> list[Field]:
    words, starts, ends = tokens.words, tokens.starts, tokens.ends
    fields: list[Field] = []

    def skip_comments(j: int) -> int:
        while j < stop and words[j].startswith("#"):
            j += 1
        return j

    while True:
        i = skip_comments(i)
        if i >= stop:
            return fields
        name = words[i]
        if name in (",", ";"):  # a separator after a field
            i += 1
            continue
        if not _is_name(name):
            raise Unsupported(f"'{name}' where a field name belongs (offset {starts[i]})")
        node = Field(name, starts[i], ends[i])
        j = skip_comments(i + 1)
        colon = j < stop and words[j] == ":"
        if colon:
            j = skip_comments(j + 1)
        if j >= stop:
            raise Unsupported(f"field '{name}' has no value")
        if words[j] in _CLOSERS:
            close = tokens.match[j]
            node.block, node.end = Block(tokens, j, close), ends[close]
            i = close + 1
        elif colon and words[j] == "[":
            i = _read_list(tokens, node, j + 1, stop)
        elif colon:
            i = _read_scalar(tokens, node, j, stop)
        else:
            raise Unsupported(f"field '{name}' has no ':' before its value")
        fields.append(node)


def _read_scalar(tokens: Tokens, node: Field, j: int, stop: int) -> int:
    """One value: a word, or adjacent strings (``"a" "b"`` reads as one); returns the next token."""
    words, starts, ends = tokens.words, tokens.starts, tokens.ends
    if words[j] in _PUNCTUATION:
        raise Unsupported(f"field '{node.name}' has no value")
    last = j
    if words[j][0] in "\"'":
        while last + 1 < stop and words[last + 1][:1] in ("'", '"'):
            last += 1
    node.values.append((starts[j], ends[last]))
    node.end = ends[last]
    return last + 1


def _read_list(tokens: Tokens, node: Field, j: int, stop: int) -> int:
    node.listed = True
    words = tokens.words
    while j < stop and words[j] != "]":
        if words[j] == "," or words[j].startswith("#"):
            j += 1
        elif words[j] in _CLOSERS:
            raise Unsupported(f"'{node.name}': a list of messages")
        else:
            j = _read_scalar(tokens, node, j, stop)
    if j >= stop:
        raise Unsupported(f"'{node.name}': the list is not closed")
    node.end = tokens.ends[j]
    return j + 1


def _is_name(word: str) -> bool:
    return word[0].isalpha() or word[0] == "_"


# ---- lines ---------------------------------------------------------------------------------
def line_start(text: str, position: int) -> int:
    return text.rfind("\n", 0, position) + 1


def line_end(text: str, position: int) -> int:
    """The offset of the newline ending ``position``'s line (the text's length on the last line)."""
    end = text.find("\n", position)
    return len(text) if end < 0 else end


def indent_of(text: str, position: int) -> str:
    """The spaces and tabs that begin ``position``'s line."""
    start = line_start(text, position)
    line = text[start : line_end(text, start)]
    return line[: len(line) - len(line.lstrip(" \t"))]


def starts_line(text: str, position: int) -> bool:
    """Nothing but spaces and tabs before ``position`` on its line."""
    return not text[line_start(text, position) : position].strip(" \t")


def rest_is_blank(text: str, position: int) -> bool:
    """Nothing after ``position`` on its line but spaces, a separator and a comment."""
    rest = text[position : line_end(text, position)].lstrip(" \t")
    rest = rest[1:].lstrip(" \t") if rest[:1] in (",", ";") else rest
    return not rest or rest.startswith("#")
