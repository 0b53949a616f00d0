"""Where each layer's block lies in prototxt text: ``layer_spans(text)`` -> [(start, end), ...].

The n-th span is the n-th top-level ``layer { ... }`` (or legacy ``layers { ... }``; either may be
written ``< ... >``) block, as the text format reads them: comments (``#`` to the end of the line)
and quoted strings (with their escapes) never open or close a block. Qt-free; offsets are Python
string indices.
"""

from __future__ import annotations

import re

_HEAD = re.compile(r"\b(layers?)\s*:?\s*[{<]")


def layer_spans(text: str) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    depth, i, n = 0, 0, len(text)
    start: int | None = None
    while i < n:
        c = text[i]
        if c == "#":
            end = text.find("\n", i)
            i = n if end < 0 else end
            continue
        if c in "\"'":
            i = _string_end(text, i)
            continue
        if c in "{<":
            depth += 1
        elif c in "}>":
            depth -= 1
            if depth == 0 and start is not None:
                spans.append((start, i + 1))
                start = None
        elif depth == 0 and c == "l":
            head = _HEAD.match(text, i)
            if head is not None and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
                start = i
                depth = 1
                i = head.end()
                continue
        i += 1
    return spans


def _string_end(text: str, i: int) -> int:
    quote, i = text[i], i + 1
    while i < len(text) and text[i] != quote and text[i] != "\n":
        i += 2 if text[i] == "\\" else 1
    return i + 1


def span_at(spans: list[tuple[int, int]], position: int) -> int | None:
    """The index of the span holding ``position``, or None (between layers, in the net's header)."""
    for index, (start, end) in enumerate(spans):
        if start <= position < end:
            return index
        if start > position:
            break
    return None
