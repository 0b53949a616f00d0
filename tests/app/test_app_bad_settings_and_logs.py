"""#32 case 10, the window's readers: a ``recent/files`` or ``trust/folders`` setting stored as an
integer does not stop the window from starting, and Train > Open Training Log… refuses a FIFO (it
hung the window) and a log whose solver block nests 3,000 deep (a RecursionError), in words."""

from __future__ import annotations

import os

import pytest
from PySide6.QtCore import QSettings

from app.main_window import MainWindow
from app.recent import RecentFiles
from app.settings_values import string_list
from app.training.log_import import LogError, read_run
from app.trust import TrustedFolders

LOG = """I1204 10:00:00.000000  1 solver.cpp:48] Initializing solver from parameters:
base_lr: 0.01
{solver}
I1204 10:00:01.000000  1 solver.cpp:60] Solving LeNet
I1204 10:00:02.000000  1 solver.cpp:218] Iteration 0 (0 iter/s, 0s/100 iters), loss = 2.3
I1204 10:00:02.000000  1 sgd_solver.cpp:105] Iteration 0, lr = 0.01
"""


@pytest.mark.parametrize("stored", [5, 2.5, [3, "/a"], {"x": 1}, b"/b", None, ""])
def test_string_list_keeps_only_strings(stored):
    expected = ["/a"] if stored == [3, "/a"] else []
    assert string_list(stored) == expected
    assert string_list("/one") == ["/one"]


def test_integer_settings_do_not_stop_the_window(qtbot, tmp_path):
    path = tmp_path / "barista.ini"
    settings = QSettings(str(path), QSettings.Format.IniFormat)
    settings.setValue("recent/files", 5)
    settings.setValue("trust/folders", 7)
    assert RecentFiles(settings).paths() == []
    assert TrustedFolders(settings).folders() == []
    settings.sync()
    reread = QSettings(str(path), QSettings.Format.IniFormat)  # the ini file gives back "5" and "7"
    assert TrustedFolders(reread).folders() == []  # a relative "7" is never a trusted folder
    window = MainWindow(settings=reread)
    qtbot.addWidget(window)
    window.ask_unsaved_changes = lambda *args: "discard"  # type: ignore[method-assign]
    assert window.isVisible() is False and window.doc is not None


def test_a_fifo_is_refused_by_the_window(qtbot, tmp_path, lenet_window):
    fifo = tmp_path / "train.log"
    os.mkfifo(fifo)
    said: list[str] = []
    lenet_window.show_error = lambda title, text: said.append(f"{title}: {text}")
    assert lenet_window.export_actions.open_log(str(fifo)) is False
    fifo_words = "it is a FIFO (named pipe), not a regular file"
    assert said == [f"Open Training Log: {fifo}: cannot be read: {fifo_words}"]


def test_a_deep_solver_block_is_refused_in_words(tmp_path):
    path = tmp_path / "deep.log"
    path.write_text(LOG.format(solver="train_state {\n" * 3000 + "}\n" * 3000))
    with pytest.raises(LogError) as caught:
        read_run(str(path), 1)
    assert str(caught.value).startswith(f"{path}: the solver it prints has blocks nested more than 100 deep")
    path.write_text(LOG.format(solver="max_iter: 7"))
    run = read_run(str(path), 1)  # the same log with a plain solver reads
    assert run.max_iter == 7
