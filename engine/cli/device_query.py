"""`main.py device_query`: which backends are usable here."""

from __future__ import annotations

import argparse

from engine import backend


def run(args: argparse.Namespace) -> int:
    info = backend.describe()
    print(f"CPU: numpy {info['numpy']}, {info['cpu_threads']} hardware threads")
    for line in info["blas"]:
        print(f"  BLAS: {line}")
    print(f"GPU: {info['gpu']}")
    for line in info.get("devices", []):
        print(f"  {line}")
    return 0
