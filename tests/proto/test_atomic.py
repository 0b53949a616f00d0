"""#16 cases 3 and 8: every write is atomic (HDF5 too), refuses what is not a regular file at the
target (symlink, folder, FIFO, device) naming it, cleans the temporary files killed writes left,
names the user's path in its errors and creates files with the umask's permissions."""

from __future__ import annotations

import fcntl
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from proto import binaryio, caffe_pb2, hdf5io
from proto.atomic import STALE_AFTER_S, WriteError, atomic_file, check_folder_writable, write_bytes_atomic
from proto.errors import FormatError

REPO = Path(__file__).resolve().parents[2]


def layers(value: float, count: int = 2, size: int = 4) -> list[hdf5io.LayerWeights]:
    return [hdf5io.LayerWeights(f"l{i}", [np.full(size, value, np.float32)]) for i in range(count)]


def temps(folder: Path) -> list[str]:
    return sorted(n for n in os.listdir(folder) if n.endswith(".tmp"))


WRITER = """
import sys, numpy as np
from proto import hdf5io
big = [hdf5io.LayerWeights(f"l{i}", [np.full(1 << 18, 2.0, np.float32)]) for i in range(400)]
print("writing", flush=True)
hdf5io.write_weights(sys.argv[1], big)
"""


def test_hdf5_weights_killed_while_written_leave_the_old_file_whole(tmp_path):
    target = tmp_path / "big_iter_2.caffemodel.h5"
    hdf5io.write_weights(target, layers(1.0))
    proc = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(target)], cwd=REPO, stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdout.readline() == "writing\n"
    deadline = time.monotonic() + 60
    while not any(os.path.getsize(tmp_path / t) > (1 << 20) for t in temps(tmp_path)):  # mid-write
        assert proc.poll() is None and time.monotonic() < deadline, "the write ended before the kill"
        time.sleep(0.005)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    weights = hdf5io.read_weights(target)  # the old file, whole, under its name
    assert sorted(weights) == ["l0", "l1"] and float(weights["l0"]["0"][0]) == 1.0
    (stale,) = temps(tmp_path)  # the killed write's temporary file, cleaned by the next write
    old = time.time() - STALE_AFTER_S - 5
    os.utime(tmp_path / stale, (old, old))
    hdf5io.write_weights(target, layers(3.0))
    assert temps(tmp_path) == [] and float(hdf5io.read_weights(target)["l1"]["0"][0]) == 3.0


def test_a_failing_hdf5_write_keeps_the_old_file_and_names_the_users_path(tmp_path):
    target = tmp_path / "w.caffemodel.h5"
    hdf5io.write_weights(target, layers(1.0))
    bad = [hdf5io.LayerWeights("same", []), hdf5io.LayerWeights("same", [])]  # a group made twice
    with pytest.raises(FormatError) as caught:
        hdf5io.write_weights(target, bad)
    assert str(caught.value).startswith(f"{target}: cannot write the HDF5 file") and ".tmp" not in str(
        caught.value
    )
    assert float(hdf5io.read_weights(target)["l0"]["0"][0]) == 1.0 and temps(tmp_path) == []


def test_young_and_locked_temporary_files_are_left_alone(tmp_path):
    target = tmp_path / "net.caffemodel"
    old = time.time() - STALE_AFTER_S - 5
    names = ["net.caffemodel.0000000a", "net.caffemodel.0000000b", "net.caffemodel.0000000c", "x.h5.0000000d"]
    young, locked, dead, other = (tmp_path / f".{n}.tmp" for n in names)
    for path in (young, locked, dead, other):
        path.write_bytes(b"partial")
    for path in (locked, dead, other):
        os.utime(path, (old, old))
    holder = os.open(locked, os.O_RDONLY)  # a live writer holds its temporary file locked
    fcntl.flock(holder, fcntl.LOCK_EX)
    try:
        binaryio.write_caffemodel(str(target), caffe_pb2.NetParameter(name="n"))
    finally:
        os.close(holder)
    assert sorted(temps(tmp_path)) == sorted(p.name for p in (young, locked, other))


@pytest.mark.parametrize("kind", ["binary", "hdf5", "solverstate_h5", "text"])
def test_a_symlink_planted_at_the_target_is_refused_and_its_target_untouched(tmp_path, kind):
    victim = tmp_path / "bashrc"
    victim.write_text("precious")
    link = tmp_path / "snap_iter_100.caffemodel"
    link.symlink_to(victim)
    write = {
        "binary": lambda: binaryio.write_caffemodel(str(link), caffe_pb2.NetParameter(name="n")),
        "hdf5": lambda: hdf5io.write_weights(link, layers(1.0)),
        "solverstate_h5": lambda: hdf5io.write_solverstate(link, hdf5io.SolverStateH5(1, 0, "m")),
        "text": lambda: write_bytes_atomic(link, b"x"),
    }[kind]
    with pytest.raises(OSError, match=f"cannot write {link}: it is a symbolic link \\(to {victim}\\)"):
        write()
    assert victim.read_text() == "precious" and link.is_symlink() and temps(tmp_path) == []


def test_folders_fifos_and_devices_at_the_target_are_refused_without_waiting(tmp_path):
    fifo = tmp_path / "pipe.caffemodel"
    os.mkfifo(fifo)
    for target, words in [
        (fifo, "not a regular file"),
        (tmp_path, "a folder"),
        ("/dev/null", "not a regular"),
    ]:
        with pytest.raises(WriteError, match=words) as caught:
            write_bytes_atomic(target, b"x")
        assert str(caught.value).startswith(f"cannot write {target}:")
    with pytest.raises(WriteError, match="the folder .*missing does not exist"):
        write_bytes_atomic(tmp_path / "missing" / "f.bin", b"x")


def test_new_files_get_the_umasks_permissions_and_replaced_ones_keep_theirs(tmp_path):
    old_umask = os.umask(0o022)
    try:
        binaryio.write_caffemodel(str(tmp_path / "a.caffemodel"), caffe_pb2.NetParameter())
        hdf5io.write_weights(tmp_path / "a.caffemodel.h5", layers(1.0))
        with atomic_file(tmp_path / "a.npz") as tmp, open(tmp, "wb") as f:
            np.savez(f, x=np.zeros(2))
        for name in ("a.caffemodel", "a.caffemodel.h5", "a.npz"):
            assert stat.S_IMODE(os.stat(tmp_path / name).st_mode) == 0o644, name
        os.chmod(tmp_path / "a.caffemodel", 0o600)  # the user's choice survives a rewrite
        binaryio.write_caffemodel(str(tmp_path / "a.caffemodel"), caffe_pb2.NetParameter(name="b"))
        assert stat.S_IMODE(os.stat(tmp_path / "a.caffemodel").st_mode) == 0o600
    finally:
        os.umask(old_umask)


def test_an_unwritable_folder_is_found_by_trying(tmp_path):
    check_folder_writable(tmp_path, "prefix")
    assert temps(tmp_path) == []  # the probe is gone
    with pytest.raises(WriteError, match="cannot write /proc/barista/snap: .*(does not exist|created)"):
        check_folder_writable("/proc/barista", "/proc/barista/snap")
    with pytest.raises(WriteError, match="no file can be created in /proc"):
        check_folder_writable("/proc", "/proc/snap")
