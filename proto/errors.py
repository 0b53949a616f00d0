"""The one error every reader in proto/ raises for a file it cannot accept."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any


class FormatError(Exception):
    """A file (or string) that is not what it should be.

    ``str(error)`` is one line, path first, then ``line:column`` where the input is text::

        lenet.prototxt:12:5: Message type "caffe.LayerParameter" has no field named "bogus".
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        message: str,
        line: int | None = None,
        column: int | None = None,
    ) -> None:
        self.path = os.fspath(path)
        # Messages from protobuf may span lines; a command line prints exactly one.
        self.message = " ".join(message.split())
        self.line = line
        self.column = column
        super().__init__(str(self))

    def __str__(self) -> str:
        where = self.path
        if self.line is not None:
            where += f":{self.line}"
            if self.column is not None:
                where += f":{self.column}"
        return f"{where}: {self.message}"

    def __reduce__(self):  # keep it picklable across worker processes
        return (type(self), (self.path, self.message, self.line, self.column))


class UnknownFieldsError(FormatError):
    """A prototxt that sets fields our schema lacks (a Caffe fork's additions), every one listed.

    ``fields`` are ``proto.unknown_fields.UnknownField``; reading again with ``drop_unknown=True``
    drops exactly those and keeps everything else. One field reads as protobuf words it; several
    are listed, each with its place::

        fork.prototxt:6:54: 2 fields BVLC Caffe's schema lacks: fork.prototxt:6:54
        pooling_param.ceil_mode (layer 'pool1'), fork.prototxt:12:44 pooling_param.ceil_mode (layer 'pool2')
    """

    def __init__(self, path: str | os.PathLike[str], fields: Sequence[Any]) -> None:
        self.fields = list(fields)
        where, first = os.fspath(path), self.fields[0]
        if len(self.fields) == 1:
            message = f'Message type "{first.message_type}" has no field named "{first.name}".'
        else:
            listing = ", ".join(f"{where}:{f.line}:{f.column} {f.describe()}" for f in self.fields)
            message = f"{len(self.fields)} fields BVLC Caffe's schema lacks: {listing}"
        super().__init__(path, message, first.line, first.column)

    def __reduce__(self):
        return (type(self), (self.path, self.fields))

    def dropped_notice(self) -> str:
        """One line saying what reading without them left out."""
        listing = ", ".join(f"{f.line}:{f.column} {f.describe()}" for f in self.fields)
        notes = list(dict.fromkeys(f.counterpart for f in self.fields if f.counterpart))
        return f"{self.path}: read without the fields BVLC Caffe's schema lacks: {listing}" + "".join(
            f" ({note})" for note in notes
        )
