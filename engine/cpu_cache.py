"""The CPU's data caches, as Linux describes them, for the sizes of the CPU paths' blocks.

Each ``/sys/devices/system/cpu/cpu0/cache/index*`` folder describes one cache of the first core:
``level`` (1, 2, 3), ``type`` (Data, Instruction, Unified), ``size`` ("48K", "32768K", "1M") and
``shared_cpu_list`` (the cores that share it, "0-1,4"). A cache shared by cores that this process may
run on (``os.sched_getaffinity``) is counted as the part one of them gets. Without that folder (not
Linux, a container hiding it) the sizes are unknown and callers use their fallbacks.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

SYSFS = Path("/sys/devices/system/cpu/cpu0/cache")


def parse_size(text: str) -> int:
    """Bytes of a sysfs cache size: "48K", "1024K", "32M" or plain bytes."""
    text = text.strip().upper()
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:], 1)
    return int(text.rstrip("KMG") or 0) * scale


def usable_cores() -> set[int] | None:
    try:
        return os.sched_getaffinity(0)
    except (AttributeError, OSError):
        return None


def core_shares(root: Path = SYSFS, usable: set[int] | None = None) -> dict[int, int]:
    """Bytes of each data (or unified) cache level that one core can count on: {level: bytes}.
    A cache shared by k cores we may use gives each size / k. Empty when ``root`` is missing."""
    shares: dict[int, int] = {}
    for index in sorted(root.glob("index*")) if root.is_dir() else []:
        try:
            kind = (index / "type").read_text().strip()
            level = int((index / "level").read_text())
            size = parse_size((index / "size").read_text())
            sharing = (index / "shared_cpu_list").read_text() if (index / "shared_cpu_list").exists() else "0"
        except (OSError, ValueError):
            continue
        if kind not in {"Data", "Unified"} or size <= 0:
            continue
        cores = set(expand(sharing))
        sharers = len(cores if usable is None else usable & cores) or 1
        shares[level] = size // max(1, sharers)
    return shares


def expand(cpu_list: str) -> list[int]:
    """The cores of a sysfs cpu list such as "0-3,8,10-11"."""
    cores: list[int] = []
    for part in filter(None, cpu_list.strip().split(",")):
        first, _, last = part.partition("-")
        cores.extend(range(int(first), int(last or first) + 1))
    return cores


def block_bytes(fallback: int, root: Path = SYSFS, usable: set[int] | None = None) -> int:
    """Bytes for a block of scratch that is written and then read back at once (a convolution's
    columns, then BLAS's packing of them): twice the core's L2 (the block, the product beside it and
    the input rows it came from spill a little into the next level, and BLAS's calls are longer),
    at most the core's share of the L3. ``fallback`` when the L2 is unknown.

    Measured with the engine's 3x3 and 5x5 convolutions (forward + both gradients) on a 2-core AMD EPYC
    (L2 1 MiB a core, L3 32 MiB shared): blocks of 0.25-16 MiB, best at 2-4 MiB; smaller blocks make
    more, smaller GEMMs, larger ones copy columns out of cache (the 56 x 56 maps lose 30%)."""
    shares = core_shares(root, usable_cores() if usable is None else usable)
    if 2 not in shares:
        return fallback
    block = 2 * shares[2]
    if 3 in shares:
        block = min(block, max(shares[2], shares[3]))
    return block


@functools.cache
def machine_block_bytes(fallback: int) -> int:
    """``block_bytes`` of this machine, read once."""
    return block_bytes(fallback)
