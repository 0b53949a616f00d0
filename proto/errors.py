"""The one error every reader in proto/ raises for a file it cannot accept."""

from __future__ import annotations

import os


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
