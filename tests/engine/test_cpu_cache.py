"""The CPU paths' block size comes from the machine's caches (engine.cpu_cache), read from a sysfs
cache folder; a fake folder stands for machines other than this one."""

from __future__ import annotations

from pathlib import Path

from engine import cpu_cache

MIB = 1 << 20


def fake_sysfs(root: Path, caches: list[tuple[int, str, str, str]]) -> Path:
    """A cpu0/cache folder with one index folder per (level, type, size, shared_cpu_list)."""
    for i, (level, kind, size, shared) in enumerate(caches):
        index = root / f"index{i}"
        index.mkdir(parents=True)
        (index / "level").write_text(f"{level}\n")
        (index / "type").write_text(f"{kind}\n")
        (index / "size").write_text(f"{size}\n")
        (index / "shared_cpu_list").write_text(f"{shared}\n")
    return root


EPYC = [
    (1, "Data", "48K", "0"),
    (1, "Instruction", "32K", "0"),
    (2, "Unified", "1024K", "0"),
    (3, "Unified", "32768K", "0-1"),
]


def test_sizes_parse_as_sysfs_writes_them():
    assert cpu_cache.parse_size("48K") == 48 << 10 and cpu_cache.parse_size("32M\n") == 32 * MIB
    assert cpu_cache.parse_size("4096") == 4096
    assert cpu_cache.expand("0-3,8,10-11") == [0, 1, 2, 3, 8, 10, 11]


def test_each_core_counts_on_its_share_of_shared_caches(tmp_path):
    root = fake_sysfs(tmp_path, EPYC)
    assert cpu_cache.core_shares(root, {0, 1}) == {1: 48 << 10, 2: MIB, 3: 16 * MIB}
    # pinned to one core, the L3 is all its own
    assert cpu_cache.core_shares(root, {0})[3] == 32 * MIB


def test_block_is_twice_the_l2_at_most_the_l3_share(tmp_path):
    assert cpu_cache.block_bytes(123, fake_sysfs(tmp_path / "epyc", EPYC), {0, 1}) == 2 * MIB
    # a desktop: 256 KiB L2, 8 MiB L3 shared by 8 cores -> 512 KiB
    desktop = [(1, "Data", "32K", "0"), (2, "Unified", "256K", "0"), (3, "Unified", "8M", "0-7")]
    assert cpu_cache.block_bytes(123, fake_sysfs(tmp_path / "desk", desktop), set(range(8))) == 512 << 10
    # a large L2 beside a small L3 share: the L3 share caps it (never below the L2)
    server = [(2, "Unified", "2048K", "0"), (3, "Unified", "24M", "0-15")]
    assert cpu_cache.block_bytes(123, fake_sysfs(tmp_path / "srv", server), set(range(16))) == 2 * MIB
    # no L3 at all
    assert (
        cpu_cache.block_bytes(123, fake_sysfs(tmp_path / "arm", [(2, "Unified", "512K", "0-3")]), {0}) == MIB
    )


def test_no_sysfs_gives_the_fallback(tmp_path):
    assert cpu_cache.block_bytes(3 * MIB, tmp_path / "absent", {0}) == 3 * MIB
    only_l1 = fake_sysfs(tmp_path / "l1", [(1, "Data", "32K", "0"), (2, "Instruction", "1M", "0")])
    assert cpu_cache.block_bytes(3 * MIB, only_l1, {0}) == 3 * MIB
