"""#16 case 5: a damaged crash-recovery session never locks the user out. It is moved aside with a
notice, the app starts on its file, and failed starts do not pile up session folders."""

from __future__ import annotations

import json

import pytest
from answers import Asked

from app import workbench
from app.autosave import EDITOR_FILE, MANIFEST, NET_FILE, SOLVER_FILE
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


SOLVER = 'base_lr: 0.25\nmax_iter: 7\nnet: "tiny.prototxt"\n'


def partly_damaged(tmp_path, net_text: str, solver_text: str, editor_text: str | None):
    """A crashed session of tiny.prototxt whose autosaved parts are ``net_text`` and ``solver_text``."""
    net = tmp_path / "tiny.prototxt"
    net.write_text(NET)
    solver = tmp_path / "solver.prototxt"
    solver.write_text("base_lr: 0.01\n")
    manifest = {
        "version": 1, "saved_at": 5, "net_path": str(net), "solver_path": str(solver),
        "net_dirty": True, "solver_dirty": True,
    }  # fmt: skip
    session = crashed_session(tmp_path / "recovery", json.dumps(manifest))
    (session / NET_FILE).write_text(net_text)
    (session / SOLVER_FILE).write_text(solver_text)
    if editor_text is not None:
        (session / EDITOR_FILE).write_text(editor_text)
    return net, session


def recover(qtbot, tmp_path, monkeypatch):
    told = Asked()
    monkeypatch.setattr(workbench, "ask_recover", Asked(True))
    monkeypatch.setattr(workbench, "tell_recovery", told)
    window = open_window(["main.py"], recovery_dir=tmp_path / "recovery")
    qtbot.addWidget(window)
    window.ask_unsaved_changes = Asked("discard")
    return window, told


def test_an_autosaved_net_that_does_not_parse_keeps_the_typed_text_and_the_solver(
    qtbot, tmp_path, monkeypatch
):
    """#32 case 5: the net's autosave does not parse. The solver comes back, the typed text goes into the
    editor, the notice blames the autosaved copy (not the user's file), and the session is kept aside."""
    typed = NET + "layer { name: 'half typed\n"
    net, session = partly_damaged(tmp_path, NET + "layer {\n", SOLVER, typed)
    window, told = recover(qtbot, tmp_path, monkeypatch)
    assert window.doc.solver.base_lr == 0.25 and window.doc.solver.max_iter == 7  # the solver is back
    assert window.editor.text == typed  # the typing is back, as it was
    ((_, notice),) = told.asked
    assert "autosaved net does not parse" in notice and str(session / NET_FILE) in notice
    assert f"{net}:" not in notice  # the user's own file is not blamed
    aside = session.with_name(DAMAGED + session.name)
    assert not session.exists() and (aside / NET_FILE).exists()  # kept, out of the way
    assert net.read_text() == NET  # the user's file untouched
    window.workbench.autosave.discard()


def test_a_bad_autosaved_solver_does_not_cost_the_net(qtbot, tmp_path, monkeypatch):
    edited = NET.replace('name: "tiny"', 'name: "edited"')
    _, session = partly_damaged(tmp_path, edited, "base_lr: {{{\n", None)
    window, told = recover(qtbot, tmp_path, monkeypatch)
    assert window.doc.net.name == "edited" and window.doc.net_dirty  # the net came back
    ((_, notice),) = told.asked
    assert notice.startswith("Recovered what was whole") and "autosaved solver does not parse" in notice
    assert (session.with_name(DAMAGED + session.name) / SOLVER_FILE).exists()
    window.workbench.autosave.discard()
