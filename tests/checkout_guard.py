"""The suite never writes into the checkout: ``git status`` (ignored files included) of the repository
is the same after the run as before it, caches aside. Tests write into temporary folders only."""

from __future__ import annotations

import subprocess
from pathlib import Path

CACHES = ("__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".venv", ".hypothesis")


def snapshot(repo: Path) -> set[str] | None:
    """The checkout's changed, untracked and ignored paths (caches left out); None outside a git checkout."""
    try:
        done = subprocess.run(
            ["git", "status", "--porcelain", "--ignored", "--untracked-files=all"],
            cwd=repo, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return None
    paths = set()
    for line in done.stdout.splitlines():
        path = line[3:]
        parts = Path(path.rstrip("/")).parts
        if any(part in CACHES or part.endswith(".egg-info") for part in parts):
            continue
        paths.add(line)
    return paths


def written(before: set[str] | None, after: set[str] | None) -> list[str]:
    """What the run left in the checkout that was not there before it."""
    if before is None or after is None:
        return []
    return sorted(after - before)
