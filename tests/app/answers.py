"""Stand-ins for the window's dialogs in tests: a fixed answer, and a record of each time it was asked."""

from __future__ import annotations


class Asked:
    def __init__(self, answer=None):
        self.answer, self.asked = answer, []

    @property
    def count(self) -> int:
        return len(self.asked)

    @property
    def args(self):
        """The arguments of the last question, or None if none was asked."""
        return self.asked[-1] if self.asked else None

    def __call__(self, *args):
        self.asked.append(args)
        return self.answer
