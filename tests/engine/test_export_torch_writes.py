"""How the PyTorch exports write (issue 30 cases 6, 7, 10; issue 32 cases 2, 3, 10): through the one
atomic writer, never through a planted link, one line and nothing left on a full disk or a
read-only folder, a package written whole and renamed into place, no module that shadows a library,
any net name escaped. Run in process (main.main), with a tiny net; the full disk and the read-only
folder are simulated by making the write or the temporary file's creation fail (as root, chmod
would not stop the writes)."""

from __future__ import annotations

import errno
import os
import re
from pathlib import Path

import pytest
from google.protobuf import text_encoding

import main as entry
from engine.export import torch_files
from proto import atomic

torch = pytest.importorskip("torch")

NET = """name: "tiny"
layer { name: "data" type: "Input" top: "data" input_param { shape { dim: 2 dim: 3 } } }
layer { name: "ip" type: "InnerProduct" bottom: "data" top: "ip"
  inner_product_param { num_output: 2 weight_filler { type: "xavier" } } }
"""
TRAIN_NET = (
    NET.replace(
        'top: "data" input_param { shape { dim: 2 dim: 3 } }',
        'top: "data" top: "label" input_param { shape { dim: 2 dim: 3 } shape { dim: 2 } }',
    )
    + 'layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip" bottom: "label" top: "loss" }\n'
)
GLOG_INFO = re.compile(r"I\d{4} \d\d:")
SOLVER = 'net: "train.prototxt"\nbase_lr: 0.01\nlr_policy: "fixed"\nmax_iter: 2\nsnapshot_prefix: "tiny"\n'


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "net.prototxt").write_text(NET)
    (tmp_path / "train.prototxt").write_text(TRAIN_NET)
    (tmp_path / "solver.prototxt").write_text(SOLVER)
    return tmp_path


def run(capsys, *argv: str) -> tuple[int, list[str]]:
    """The exit code and stderr's lines less glog's info lines (the solver's "net ... found beside")."""
    code = entry.main(list(argv))
    return code, [line for line in capsys.readouterr().err.splitlines() if not GLOG_INFO.match(line)]


def listing(path: Path) -> list[str]:
    return sorted(p.name for p in path.iterdir())


def disk_full_after(monkeypatch, limit: int) -> None:
    """torch.save's writes fail with ENOSPC once ``limit`` bytes are written (a full disk)."""
    written = [0]
    real = torch_files._Recording.write

    def write(self, data) -> int:
        written[0] += len(data)
        if written[0] > limit:
            self.error = OSError(errno.ENOSPC, "No space left on device")
            raise self.error
        return real(self, data)

    monkeypatch.setattr(torch_files._Recording, "write", write)


# --- the module: OUT.py and OUT.pt -------------------------------------------------------------
def test_links_planted_at_the_outputs_are_refused_or_never_written_through(folder, capsys):
    victim = folder / "victim.txt"
    victim.write_text("the user's file")
    os.symlink(victim, folder / "out.py")
    code, err = run(capsys, "export", str(folder / "net.prototxt"), str(folder / "out.py"))
    link = f"error: cannot write {folder / 'out.py'}: it is a symbolic link (to {victim})"
    assert (code, err) == (2, [f"{link}; refusing to write through it"])
    assert not (folder / "out.pt").exists()
    os.unlink(folder / "out.py")
    os.symlink(victim, folder / "out.pt")
    code, err = run(capsys, "export", str(folder / "net.prototxt"), str(folder / "out.py"))
    assert code == 2 and len(err) == 1 and "out.pt: it is a symbolic link" in err[0]
    assert not (folder / "out.py").exists()
    os.unlink(folder / "out.pt")
    os.symlink(victim, folder / "out.pt.tmp")  # the old fixed temporary name: never used now
    assert run(capsys, "export", str(folder / "net.prototxt"), str(folder / "out.py"))[0] == 0
    assert victim.read_text() == "the user's file"
    assert not (folder / "out.pt").is_symlink()
    assert set(torch.load(folder / "out.pt", weights_only=True)) == {"ip.weight", "ip.bias"}


def test_a_full_disk_during_the_weights_is_one_line_and_leaves_nothing(folder, capsys, monkeypatch):
    before = listing(folder)
    disk_full_after(monkeypatch, 100)
    code, err = run(capsys, "export", str(folder / "net.prototxt"), str(folder / "out.py"))
    assert (code, err) == (2, [f"error: cannot write {folder / 'out.pt'}: No space left on device"])
    assert listing(folder) == before


def test_a_read_only_folder_is_one_line_and_leaves_nothing(folder, capsys, monkeypatch):
    before = listing(folder)
    real_open = os.open

    def read_only(path, flags, mode=0o777, **kwargs):
        if os.path.dirname(os.fspath(path)) == str(folder) and flags & os.O_CREAT:
            raise OSError(errno.EROFS, "Read-only file system", path)
        return real_open(path, flags, mode, **kwargs)

    monkeypatch.setattr(atomic.os, "open", read_only)
    code, err = run(capsys, "export", str(folder / "net.prototxt"), str(folder / "out.py"))
    assert (code, err) == (2, [f"error: cannot write {folder / 'out.pt'}: Read-only file system"])
    assert listing(folder) == before


def test_two_exports_at_once_each_write_their_own_temporary_file(folder, monkeypatch):
    """The second export runs to its end while the first is half-way through its weights."""
    from engine.export.torch_module import export_module

    nested: list[list[str]] = []
    real = torch_files._Recording.write

    def write(self, data) -> int:
        if not nested:
            nested.append(listing(folder))  # the first export's temporary file, mid-write
            export_module(str(folder / "net.prototxt"), str(folder / "out.py"), seed=1)
        return real(self, data)

    monkeypatch.setattr(torch_files._Recording, "write", write)
    export_module(str(folder / "net.prototxt"), str(folder / "out.py"), seed=0)
    temps = [name for name in nested[0] if name.startswith(".out.pt.")]
    assert len(temps) == 1 and temps[0].endswith(".tmp") and "out.pt.tmp" not in nested[0]
    assert listing(folder) == ["net.prototxt", "out.pt", "out.py", "solver.prototxt", "train.prototxt"]
    assert set(torch.load(folder / "out.pt", weights_only=True)) == {"ip.weight", "ip.bias"}


@pytest.mark.parametrize("name", ["torch", "numpy", "os", "json", "math", "typing", "class"])
def test_a_module_that_would_shadow_a_library_is_refused(folder, capsys, name):
    code, err = run(capsys, "export", str(folder / "net.prototxt"), str(folder / f"{name}.py"))
    assert code == 2 and len(err) == 1, err
    assert err[0].startswith(f"error: {folder / name}.py: ") and ("shadow" in err[0] or "keyword" in err[0])
    assert listing(folder) == ["net.prototxt", "solver.prototxt", "train.prototxt"]


@pytest.mark.parametrize(
    "name", ['a """ b', "a\\u b", "c\\x d", "e\\N f", "x\\", "InnerProduct", "none", "f", "é\n²"]
)
def test_any_net_name_makes_a_module_that_imports(folder, name):
    """Net names holding triple quotes, backslash escapes (as written in the prototxt: \\u, \\x, \\N)
    or a library's class name; the module compiles, imports and loads its weights."""
    import importlib.util

    from engine.export.torch_module import export_module

    escaped = text_encoding.CEscape(name.encode(), as_utf8=True)
    (folder / "named.prototxt").write_text(NET.replace('name: "tiny"', f'name: "{escaped}"'))
    export_module(str(folder / "named.prototxt"), str(folder / "named_net.py"))
    spec = importlib.util.spec_from_file_location("named_net", folder / "named_net.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    out = module.load()(data=torch.ones(2, 3))
    assert tuple(out["ip"].shape) == (2, 2)


# --- the package ---------------------------------------------------------------------------------
def package(capsys, folder: Path, out: Path, *flags: str) -> tuple[int, list[str]]:
    return run(capsys, "export", "--solver", str(folder / "solver.prototxt"), str(out), *flags)


def test_a_folder_of_the_users_is_never_written_into(folder, capsys):
    (folder / "train.py").write_text("the user's own train.py")
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    for flags in ((), ("--force",)):
        code, err = package(capsys, folder, folder, *flags)
        assert code == 2 and len(err) == 1 and "holds no package of ours" in err[0], err
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before


def test_an_earlier_package_is_replaced_only_with_force(folder, capsys):
    out = folder / "pkg"
    assert package(capsys, folder, out)[0] == 0
    assert "train.py" in listing(out) and ".barista-package" in listing(out)
    (out / "tiny_iter_2.caffemodel").write_bytes(b"the user's snapshot")
    code, err = package(capsys, folder, out)
    assert (code, err) == (
        2,
        [f"error: cannot write {out}: it holds a package written earlier (--force replaces it)"],
    )
    victim = folder / "victim.txt"
    victim.write_text("keep")
    (out / "caffe_pb2.py").unlink()
    os.symlink(victim, out / "caffe_pb2.py")  # a link planted in the earlier package
    assert package(capsys, folder, out, "--force")[0] == 0
    assert victim.read_text() == "keep" and not (out / "caffe_pb2.py").is_symlink()
    assert (out / "tiny_iter_2.caffemodel").read_bytes() == b"the user's snapshot"
    assert [p.name for p in folder.iterdir() if p.name.startswith(".")] == []


def test_a_full_disk_in_the_weights_leaves_the_previous_package_whole(folder, capsys, monkeypatch):
    out = folder / "pkg"
    assert package(capsys, folder, out)[0] == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    disk_full_after(monkeypatch, 100)
    code, err = package(capsys, folder, out, "--force")
    assert (code, err) == (2, [f"error: cannot write {out / 'weights.pt'}: No space left on device"])
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert [p.name for p in folder.iterdir() if p.name.startswith(".")] == []


def test_a_net_name_with_quotes_and_escapes_makes_a_package_that_compiles(folder, capsys):
    escaped = text_encoding.CEscape(b'q """ \\N{x} \\u\n', as_utf8=True)
    (folder / "train.prototxt").write_text(TRAIN_NET.replace('name: "tiny"', f'name: "{escaped}"'))
    out = folder / "pkg"
    assert package(capsys, folder, out)[0] == 0
    for name in ("model.py", "train.py"):
        compile((out / name).read_text(), name, "exec")
    assert (out / "solver.prototxt").read_text().splitlines()[0].startswith("# q ")


def test_the_packages_train_py_refuses_bad_weights_and_snapshots_in_one_line(folder, capsys):
    """A missing or empty --weights and a corrupt --snapshot: one line, exit 2 (they were a traceback,
    and an empty weights file loaded nothing without a word)."""
    import subprocess
    import sys

    out = folder / "pkg"
    assert package(capsys, folder, out)[0] == 0
    (folder / "empty.caffemodel").write_bytes(b"")
    (folder / "bad.solverstate").write_bytes(b"\xff" * 40)
    cases = {
        ("--weights", "missing.caffemodel"): "error: --weights missing.caffemodel: No such file or directory",
        ("--weights", "empty.caffemodel"): "error: --weights empty.caffemodel: the file is empty",
        (
            "--snapshot",
            "bad.solverstate",
        ): "error: --snapshot bad.solverstate: not a Caffe SolverState file (",
    }
    for argv, expected in cases.items():
        done = subprocess.run(
            [sys.executable, str(out / "train.py"), "--cpu", *argv],
            cwd=folder,
            capture_output=True,
            text=True,
            timeout=120,
        )
        errors = [line for line in done.stderr.splitlines() if not GLOG_INFO.match(line)]
        assert done.returncode == 2 and len(errors) == 1 and errors[0].startswith(expected), done.stderr


KILLED = """
import sys, time
from engine.export import torch_files
from engine.export.package import export_package

def stall(self, data):
    print("writing weights.pt", flush=True)
    time.sleep(600)

torch_files._Recording.write = stall
export_package(sys.argv[1], sys.argv[2], force=True)
"""


def test_kill_9_while_the_weights_are_written_leaves_the_previous_package(folder, capsys):
    """Killed at weights.pt (it was left 0 bytes long, the previous package ruined): the previous
    package is whole, the half-written one is a temporary folder the next export removes."""
    import signal
    import subprocess
    import sys
    import time

    out = folder / "pkg"
    assert package(capsys, folder, out)[0] == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    repo = Path(__file__).resolve().parents[2]
    child = subprocess.Popen(
        [sys.executable, "-c", KILLED, str(folder / "solver.prototxt"), str(out)],
        cwd=folder,
        env={**os.environ, "PYTHONPATH": str(repo)},
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert child.stdout is not None and child.stdout.readline() == "writing weights.pt\n"
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=60)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    (left,) = [p for p in folder.iterdir() if p.name.startswith(".pkg.")]
    old = time.time() - 2 * atomic.STALE_AFTER_S  # as the next export finds it a while later
    os.utime(left, (old, old))
    assert package(capsys, folder, out, "--force")[0] == 0
    assert [p.name for p in folder.iterdir() if p.name.startswith(".")] == []


def test_a_full_disk_at_the_module_leaves_no_new_weights(folder, capsys, monkeypatch):
    before = listing(folder)
    real_fsync = os.fsync

    def full_disk(fd: int) -> None:  # OUT.pt is written; OUT.py then meets a full disk
        if "/.out.py." in os.readlink(f"/proc/self/fd/{fd}"):
            raise OSError(errno.ENOSPC, "No space left on device")
        real_fsync(fd)

    monkeypatch.setattr(atomic.os, "fsync", full_disk)
    code, err = run(capsys, "export", str(folder / "net.prototxt"), str(folder / "out.py"))
    assert (code, err) == (2, [f"error: cannot write {folder / 'out.py'}: No space left on device"])
    assert listing(folder) == before


@pytest.mark.parametrize("text", ["base_lr: {{{\n", "net_param { " * 3000 + "}" * 3000 + "\n"])
def test_the_packages_train_py_refuses_a_solver_it_cannot_read_in_one_line(folder, capsys, text):
    """The package's own solver.prototxt, edited by hand into something unreadable (a typo, or blocks
    nested past what protobuf's recursive parser takes): one line naming the file, exit 2."""
    import subprocess
    import sys

    out = folder / "pkg"
    assert package(capsys, folder, out)[0] == 0
    (out / "solver.prototxt").write_text(text)
    done = subprocess.run(
        [sys.executable, str(out / "train.py"), "--cpu"],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=120,
    )
    errors = [line for line in done.stderr.splitlines() if not GLOG_INFO.match(line)]
    assert done.returncode == 2 and len(errors) == 1, done.stderr
    assert errors[0].startswith(f"error: {out / 'solver.prototxt'}: ")
