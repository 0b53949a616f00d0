"""#16 case 5: a damaged crash-recovery session never locks the user out. It is moved aside with a
notice, the app starts on its file, and failed starts do not pile up session folders."""

from __future__ import annotations

import json

import pytest
from answers import Asked

from app import workbench
from app.autosave import MANIFEST, NET_FILE
from app.main_window import open_window
from app.recovery import DAMAGED, find_crashed

NET = (
    'name: "tiny"\nlayer { name: "data" type: "Input" top: "data" input_param { shape { dim: 1 dim: 2 } } }\n'
)


def crashed_session(root, manifest_text: str, name: str = "session-0badc0ffee00"):
    folder = root / name
    folder.mkdir(parents=True)
    (folder / NET_FILE).write_text(NET)
    (folder / MANIFEST).write_text(manifest_text)
    return folder


DAMAGED_MANIFESTS = {
    "a list": "[]",
    "text saved_at": json.dumps({"version": 1, "saved_at": "yesterday", "net_dirty": True}),
    "NaN saved_at": '{"version": 1, "saved_at": NaN}',
    "huge saved_at": json.dumps({"version": 1, "saved_at": 1e300}),
    "bool saved_at": json.dumps({"version": 1, "saved_at": True}),
    "number path": json.dumps({"version": 1, "saved_at": 5, "net_path": 5}),
    "garbage": "\x00\x01{{{ not json",
    "not utf-8": "\udcff",
    "deep": "[" * 100_000 + "]" * 100_000,
}


@pytest.mark.parametrize("kind", sorted(DAMAGED_MANIFESTS))
def test_a_damaged_session_is_moved_aside_and_the_app_starts(qtbot, tmp_path, monkeypatch, kind):
    root = tmp_path / "recovery"
    text = DAMAGED_MANIFESTS[kind]
    session = crashed_session(root, "") if kind == "not utf-8" else crashed_session(root, text)
    if kind == "not utf-8":
        (session / MANIFEST).write_bytes(b'{"saved_at": "\xff\xfe"}')
    asked, told = Asked(True), Asked()
    monkeypatch.setattr(workbench, "ask_recover", asked)
    monkeypatch.setattr(workbench, "tell_recovery", told)
    net = tmp_path / "tiny.prototxt"
    net.write_text(NET)
    window = open_window(["main.py", str(net)], recovery_dir=root)
    qtbot.addWidget(window)
    assert window.doc.net_path == str(net) and window.doc.layer(0).name == "data"  # it started, on its file
    assert asked.asked == []  # nothing damaged is offered
    aside = root / (DAMAGED + session.name)
    assert not session.exists() and (aside / NET_FILE).read_text() == NET  # the work is kept, out of the way
    ((_, notice),) = told.asked
    assert "damaged recovery session" in notice and str(aside) in notice
    window.workbench.autosave.discard()


def test_failed_starts_do_not_add_session_folders(qtbot, tmp_path, monkeypatch):
    root = tmp_path / "recovery"
    crashed_session(root, "[]")
    monkeypatch.setattr(workbench, "tell_recovery", Asked())
    for _ in range(3):  # three starts; each window "crashes" (its lock freed, its folder left behind)
        window = open_window(["main.py"], recovery_dir=root)
        qtbot.addWidget(window)
        window.workbench.autosave.abandon()
    sessions = sorted(p.name for p in root.iterdir() if p.name.startswith("session-"))
    assert len(sessions) == 1  # only the last start's; the empty ones before it were removed
    assert sorted(p.name for p in root.iterdir() if p.name.startswith(DAMAGED)) == [
        DAMAGED + "session-0badc0ffee00"
    ]
    assert find_crashed(root) == []


def test_a_session_whose_restore_fails_unexpectedly_is_kept_aside(qtbot, tmp_path, monkeypatch):
    root = tmp_path / "recovery"
    manifest = {"version": 1, "saved_at": 1.0, "net_path": None, "net_dirty": True, "solver_dirty": False}
    session = crashed_session(root, json.dumps(manifest))
    told = Asked()
    monkeypatch.setattr(workbench, "ask_recover", Asked(True))
    monkeypatch.setattr(workbench, "tell_recovery", told)

    def broken(*args):
        raise RuntimeError("a bug while restoring")

    monkeypatch.setattr("app.recovery.restore", broken)
    window = open_window(["main.py"], recovery_dir=root)
    qtbot.addWidget(window)
    assert window.doc.origin is not None and window.doc.net_path is None  # the example, untitled
    assert (root / (DAMAGED + session.name)).is_dir()
    assert "RuntimeError: a bug while restoring" in told.asked[0][1]
    window.workbench.autosave.discard()
