"""Issue 12 case 6: a net with fields a Caffe fork added (``ceil_mode`` in ``pooling_param``) opens
through one message listing each field with file:line:col, and "Open without them" drops only those."""

from __future__ import annotations

import pytest
from answers import Asked
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication, QMessageBox
from windows import asked_window

FORK = """\
name: "densenet-port"
layer { name: "data" type: "Input" top: "data" input_param { shape { dim: 1 dim: 3 dim: 32 dim: 32 } } }
layer { name: "pool1" type: "Pooling" bottom: "data" top: "pool1"
  pooling_param { pool: MAX kernel_size: 3 stride: 2 ceil_mode: false }
}
layer { name: "pool2" type: "Pooling" bottom: "pool1" top: "pool2"
  pooling_param { pool: AVE kernel_size: 2 stride: 2
    ceil_mode: true }
}
"""


def make_window(qtbot):
    return asked_window(qtbot)


def test_unknown_fields_are_listed_and_dropped_only_when_asked(qtbot, tmp_path):
    path = tmp_path / "densenet.prototxt"
    path.write_text(FORK)
    w = make_window(qtbot)
    w.ask_drop_unknown_fields = Asked(False)
    assert not w.open_file(path)
    (error,) = w.ask_drop_unknown_fields.args
    assert [(f.line, f.column, f.describe()) for f in error.fields] == [
        (4, 54, "pooling_param.ceil_mode (layer 'pool1')"),
        (8, 5, "pooling_param.ceil_mode (layer 'pool2')"),
    ]
    assert w.doc.net_path is None and w.show_error.count == 0  # declined: nothing opened, no error

    w.ask_drop_unknown_fields = Asked(True)
    assert w.open_file(path)
    assert [layer.name for layer in w.doc.net.layer] == ["data", "pool1", "pool2"]
    assert w.doc.net.layer[2].pooling_param.kernel_size == 2 and "ceil_mode" not in w.editor.text
    assert "read without the fields" in w.notice.full and "8:5 pooling_param.ceil_mode" in w.notice.full
    assert w.isWindowModified()  # Save would write the file without them
    assert path.read_text() == FORK


@pytest.mark.real_dialogs
def test_the_real_dialog_names_each_field_and_opens_without_them(qtbot, tmp_path):
    path = tmp_path / "densenet.prototxt"
    path.write_text(FORK)
    w = make_window(qtbot)
    seen: list[str] = []

    def answer() -> None:
        box = QApplication.activeModalWidget()
        if not isinstance(box, QMessageBox):
            QTimer.singleShot(20, answer)
            return
        seen.append(box.text() + "\n" + box.informativeText())
        button = next(b for b in box.buttons() if b.text() == "Open without them")
        button.click()

    QTimer.singleShot(0, answer)
    assert w.open_file(path)
    assert "densenet.prototxt:4:54  pooling_param.ceil_mode (layer 'pool1')" in seen[0]
    assert "densenet.prototxt:8:5  pooling_param.ceil_mode (layer 'pool2')" in seen[0]
    assert "2 fields that BVLC Caffe's schema lacks" in seen[0]
