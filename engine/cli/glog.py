"""Caffe's log line prefix (glog), so Caffe's log parsers read our output."""

from __future__ import annotations

import datetime
import os
import sys
from collections.abc import Callable


def line(message: str, level: str = "I", source: str = "solver.cpp:0") -> str:
    now = datetime.datetime.now()
    return f"{level}{now:%m%d %H:%M:%S.%f} {os.getpid():5d} {source}] {message}"


def printer(source: str) -> Callable[[str], None]:
    def say(message: str) -> None:
        print(line(message, source=source), flush=True)

    return say


def error(message: str) -> None:
    print(line(message, level="E", source="caffe.cpp:0"), file=sys.stderr, flush=True)
