"""Issue 31 case 13: one per-user data folder. Recovery autosaves went to Qt's AppDataLocation
(~/.local/share/Barista/Barista) while runs and the bundled MNIST went to ~/.local/share/barista: two
folders differing only by case. Recovery now lives in the latter; an earlier version's autosaved work
is moved there once, and nothing is deleted when both exist."""

from __future__ import annotations

from app import autosave


def _homes(tmp_path, monkeypatch):
    share = tmp_path / "share"
    monkeypatch.setenv("XDG_DATA_HOME", str(share))
    old_base = share / "Barista" / "Barista"
    monkeypatch.setattr(autosave.QStandardPaths, "writableLocation", lambda location: str(old_base))
    return share, old_base / "recovery"


def test_recovery_lives_in_the_one_data_folder_and_old_work_moves_there(tmp_path, monkeypatch):
    share, old = _homes(tmp_path, monkeypatch)
    (old / "session-1").mkdir(parents=True)
    (old / "session-1" / "net.prototxt").write_text('name: "unsaved"\n')
    folder = autosave.default_folder()
    assert folder == share / "barista" / "recovery"
    assert (folder / "session-1" / "net.prototxt").read_text() == 'name: "unsaved"\n'
    assert not (share / "Barista").exists()  # emptied by the move, so the second folder is gone


def test_nothing_is_moved_or_deleted_when_both_hold_something(tmp_path, monkeypatch):
    share, old = _homes(tmp_path, monkeypatch)
    (old / "session-1").mkdir(parents=True)
    (share / "barista" / "recovery" / "session-2").mkdir(parents=True)
    assert autosave.default_folder() == share / "barista" / "recovery"
    assert (old / "session-1").is_dir() and (share / "barista" / "recovery" / "session-2").is_dir()
