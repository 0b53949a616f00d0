"""The comments of caffe.proto, as tooltips: ``field_doc("ConvolutionParameter", "group")``.

Qt-free. The generated module keeps no comments, so the schema file is read once. A comment
block above a run of fields describes each field of the run (``lr_mult`` and ``decay_mult``
share one); a comment after a field on its line describes that field alone.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

PROTO = Path(__file__).resolve().parent.parent.parent / "proto" / "caffe.proto"
_FIELD = re.compile(r"^\s*(?:optional|required|repeated)\s+[\w.]+\s+(\w+)\s*=\s*\d+[^;]*;\s*(?://\s*(.*))?$")
_MESSAGE = re.compile(r"^\s*message\s+(\w+)\s*\{")
_COMMENT = re.compile(r"^\s*//\s?(.*)$")


@functools.cache
def _docs() -> dict[tuple[str, str], str]:
    try:
        lines = PROTO.read_text(encoding="utf-8").splitlines()
    except OSError:
        return {}
    docs: dict[tuple[str, str], str] = {}
    stack: list[str | None] = []  # message names; None for enum / oneof blocks
    block: list[str] = []  # the comment above the current run of fields
    saved: list[list[str]] = []
    for line in lines:
        message, comment, field = _MESSAGE.match(line), _COMMENT.match(line), _FIELD.match(line)
        if message:
            stack.append(message.group(1))
            block = []
        elif comment:
            if block and block[-1] is None:
                block = []
            block.append(comment.group(1).strip())
        elif field and stack and stack[-1] is not None:
            text = " ".join(part for part in (" ".join(b for b in block if b), field.group(2) or "") if part)
            if text:
                docs[(stack[-1], field.group(1))] = text.strip()
            if block:
                block.append(None)  # type: ignore[arg-type]  # the block goes on for the run
        elif not line.strip():
            block = []
        else:
            if re.match(r"^\s*(enum|oneof)\b.*\{", line):
                stack.append(None)
                saved.append(block)  # "// Deprecated enum form" above an enum describes the field after it
            elif "}" in line and stack and "{" not in line and stack.pop() is None and saved:
                block = saved.pop()
                continue
            block = []
    return docs


def field_doc(message_name: str, field_name: str) -> str:
    """The schema's comment for ``message_name.field_name``, or ''."""
    return _docs().get((message_name, field_name), "")
