"""#32 case 4: Save never silently replaces what another window or program wrote. Two windows on one net,
window 2 saves, another editor appends a line, window 1 saves: window 1 asks first (reload, keep mine,
save as); while open, a file changed on disk is reloaded when nothing here is unsaved, else asked about."""

from __future__ import annotations

import pytest
from answers import Asked

from app import disk_watch
from app.commands import SetLayerField
from app.main_window import MainWindow

NET = """# my notes
name: "tiny"
layer { name: "data" type: "Input" top: "data" input_param { shape { dim: 1 dim: 1 dim: 8 dim: 8 } } }
layer { name: "conv1" type: "Convolution" bottom: "data" top: "conv1"
        convolution_param { num_output: 4 kernel_size: 3 } }
"""
APPENDED = "# a line another editor added\n"


def window_on(qtbot, path, answer=disk_watch.CANCEL) -> MainWindow:
    w = MainWindow()
    qtbot.addWidget(w)
    w.ask_unsaved_changes = Asked("discard")
    w.show_error = lambda *args: pytest.fail(f"error dialog: {args}")
    w.ask_changed_on_disk = Asked(answer)
    assert w.open_file(path)
    return w


@pytest.fixture
def net(tmp_path):
    path = tmp_path / "tiny.prototxt"
    path.write_text(NET)
    return path


def two_writers(qtbot, net, answer):
    one, two = window_on(qtbot, net, answer), window_on(qtbot, net)
    two.push(SetLayerField(1, "convolution_param.num_output", 8))
    assert two.save()
    with open(net, "a") as f:
        f.write(APPENDED)
    one.push(SetLayerField(1, "convolution_param.bias_term", False))
    return one, two


def test_save_over_a_file_changed_behind_the_window_asks_and_cancel_keeps_theirs(qtbot, net):
    one, _ = two_writers(qtbot, net, disk_watch.CANCEL)
    theirs = net.read_text()
    assert not one.save()
    ((paths, saving_now),) = one.ask_changed_on_disk.asked
    assert paths == [str(net)] and saving_now
    assert net.read_text() == theirs  # both other writers' changes are still there
    assert "num_output: 8" in theirs and theirs.endswith(APPENDED)
    assert one.doc.net_dirty  # and this window's edit is not lost either


def test_keep_mine_overwrites_once_the_user_says_so(qtbot, net):
    one, _ = two_writers(qtbot, net, disk_watch.KEEP)
    assert one.save()
    assert "bias_term: false" in net.read_text() and APPENDED not in net.read_text()


def test_reload_takes_the_file_as_it_is_now(qtbot, net):
    one, _ = two_writers(qtbot, net, disk_watch.RELOAD)
    assert not one.save()
    assert one.doc.layer(1).convolution_param.num_output == 8 and not one.doc.net_dirty
    assert one.doc.net_text().endswith(APPENDED)


def test_saving_twice_from_one_window_asks_nothing(qtbot, net):
    one = window_on(qtbot, net)
    for outputs in (5, 7):
        one.push(SetLayerField(1, "convolution_param.num_output", outputs))
        assert one.save()
    assert one.ask_changed_on_disk.asked == []


def test_an_open_unmodified_net_follows_the_file(qtbot, net):
    one = window_on(qtbot, net)
    net.write_text(NET.replace("num_output: 4", "num_output: 6"))
    qtbot.waitUntil(lambda: one.doc.layer(1).convolution_param.num_output == 6, timeout=20000)
    assert one.ask_changed_on_disk.asked == [] and not one.doc.net_dirty


def test_an_open_modified_net_asks_when_the_file_changes(qtbot, net):
    one = window_on(qtbot, net, disk_watch.KEEP)
    one.push(SetLayerField(1, "convolution_param.bias_term", False))
    net.write_text(NET + APPENDED)
    qtbot.waitUntil(lambda: one.ask_changed_on_disk.count == 1, timeout=20000)
    assert one.ask_changed_on_disk.args == ([str(net)], False)
    assert not one.doc.layer(1).convolution_param.bias_term  # kept
    assert one.save() and one.ask_changed_on_disk.count == 1  # "keep mine": Save does not ask again
