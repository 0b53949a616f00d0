"""Command lines read as gflags reads them, for Caffe's small tools (convert_imageset, ...).

A flag is ``-name`` or ``--name``, its value after ``=`` or as the next word; a boolean is on with
``-name``, ``-name=true`` (or 1, yes, t, y) and off with ``-noname`` or ``-name=false``. Flags and
positional words may come in any order; ``--`` ends the flags. A bad flag is a CliError (one line).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from engine.cli.common import CliError

_TRUE = ("true", "t", "yes", "y", "1")
_FALSE = ("false", "f", "no", "n", "0")


def parse(
    argv: Sequence[str], bools: Sequence[str], values: Mapping[str, type]
) -> tuple[dict[str, object], list[str]]:
    """(flags set on the line, positional words); ``values`` maps a flag to int or str."""
    flags: dict[str, object] = {}
    words: list[str] = []
    args = list(argv)
    while args:
        arg = args.pop(0)
        if arg == "--":
            words += args
            break
        if not arg.startswith("-") or arg == "-":
            words.append(arg)
            continue
        name, eq, value = arg.lstrip("-").partition("=")
        if name in bools:
            flags[name] = _boolean(name, value) if eq else True
        elif not eq and name.startswith("no") and name[2:] in bools:
            flags[name[2:]] = False
        elif name in values:
            if not eq:
                if not args:
                    raise CliError(f"flag '{arg}' is missing its argument")
                value = args.pop(0)
            flags[name] = _typed(name, value, values[name])
        else:
            raise CliError(f"unknown command line flag '{name}'")
    return flags, words


def _boolean(name: str, value: str) -> bool:
    if value.lower() in _TRUE:
        return True
    if value.lower() in _FALSE:
        return False
    raise CliError(f"illegal value '{value}' specified for bool flag '{name}'")


def _typed(name: str, value: str, kind: type) -> object:
    if kind is int:
        try:
            return int(value, 10)
        except ValueError:
            raise CliError(f"illegal value '{value}' specified for int32 flag '{name}'") from None
    return value
