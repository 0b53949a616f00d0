"""How deeply a prototxt nests its blocks, found in one flat pass before any parser recurses.

protobuf's text parser (and our scan for a fork's unknown fields) follow a ``{`` by calling
themselves, so a file of 3,000 nested ``include {`` blocks would end in Python's RecursionError.
No Caffe message nests deeper than a handful of levels (a net's ``layer { ... param { } }``:
four at most, with lists), so anything past ``MAX_DEPTH`` is refused in words before parsing.
Braces inside quoted strings and ``#`` comments do not count.
"""

from __future__ import annotations

import re

# Far above any real file (Caffe's schema nests ~5 levels) and far below Python's recursion limit
# (each level costs the parsers two or three frames of the default 1,000).
MAX_DEPTH = 100

_TOKEN = re.compile(r""""(?:[^"\\\n]|\\.)*"?|'(?:[^'\\\n]|\\.)*'?|\#[^\n]*|[{<\[]|[}>\]]""")


def too_deep(text: str, limit: int = MAX_DEPTH) -> tuple[int, int] | None:
    """The (line, column) of the first block opened past ``limit`` levels, or None."""
    depth = 0
    for match in _TOKEN.finditer(text):
        c = match.group()[0]
        if c in "{<[":
            depth += 1
            if depth > limit:
                offset = match.start()
                line = text.count("\n", 0, offset) + 1
                return line, offset - (text.rfind("\n", 0, offset) + 1) + 1
        elif c in "}>]":
            depth = max(depth - 1, 0)
    return None


def depth_problem(text: str, limit: int = MAX_DEPTH) -> tuple[str, int, int] | None:
    """(message, line, column) when ``text`` nests past ``limit``, else None."""
    where = too_deep(text, limit)
    if where is None:
        return None
    return f"blocks nested more than {limit} deep (no Caffe file nests past a few levels)", where[0], where[1]
