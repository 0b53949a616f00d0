"""Values read back from QSettings, whatever another version, another tool or a hand edit stored.

A setting the app wrote as a list of paths may come back as one string (a list of one, in the ini
format), an integer, a number in a list, or nothing; the window must start either way.
"""

from __future__ import annotations

from collections.abc import Iterable


def string_list(stored: object) -> list[str]:
    """The non-empty strings in ``stored``: a string is a list of one; anything else counts for nothing."""
    if isinstance(stored, str):
        return [stored] if stored else []
    if isinstance(stored, Iterable) and not isinstance(stored, bytes | bytearray | dict):
        return [item for item in stored if isinstance(item, str) and item]
    return []
