"""#24: a ``.NAME.*.partial`` folder left by a run killed with SIGKILL is removed by the next run
into the same place (engine/data/staging.py); a folder a live run is still writing is kept."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import main
from bench import fuzz_readers as fuzz
from engine.data import staging

ROOT = Path(__file__).resolve().parents[2]
KILLED_MID_RUN = """
import os, signal, sys
from pathlib import Path
from engine.data.staging import staged_folder
with staged_folder(Path(sys.argv[1])) as tmp:
    (tmp / "data.mdb").write_bytes(b"half-written")
    os.kill(os.getpid(), signal.SIGKILL)
"""


def leftovers(folder: Path, name: str) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith(f".{name}."))


def kill_mid_run(target: Path) -> None:
    done = subprocess.run([sys.executable, "-c", KILLED_MID_RUN, str(target)], cwd=ROOT, timeout=60)
    assert done.returncode == -signal.SIGKILL
    assert len(leftovers(target.parent, target.name)) == 2  # the folder and its lock file


def test_the_next_dataset_run_removes_what_a_killed_one_left(tmp_path, capsys) -> None:
    for c in ("a", "b"):
        (tmp_path / "in" / c).mkdir(parents=True)
        for i in range(2):
            (tmp_path / "in" / c / f"{i}.png").write_bytes(fuzz.png_bytes(6, 6, seed=i))
    kill_mid_run(tmp_path / "set")
    assert main.main(["dataset", "--quiet", "--val", "50", str(tmp_path / "in"), str(tmp_path / "set")]) == 0
    assert leftovers(tmp_path, "set") == []
    assert (tmp_path / "set" / "train_lmdb" / "data.mdb").is_file()


def test_a_live_runs_folder_is_kept_and_an_old_lockless_one_removed(tmp_path) -> None:
    target = tmp_path / "db"
    with staging.staged_folder(target) as live:
        assert staging.remove_abandoned(target) == []  # its lock is held: another run must not touch it
        assert live.is_dir()
    assert leftovers(tmp_path, "db") == []  # the lock file goes with the run
    old = tmp_path / ".db.abc123.partial"  # an older version's run: no lock file
    old.mkdir()
    assert staging.remove_abandoned(target) == []  # young: it may be a run between mkdtemp and its lock
    os.utime(old, (0, 0))
    assert staging.remove_abandoned(target) == [old] and not old.exists()
