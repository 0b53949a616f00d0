"""File > Export and Train > Train on a Cluster… never overwrite a user's file without asking (issue
32 case 3, issue 30 case 6): the proposed module name holds nothing yet (``train.prototxt``'s module
is not the user's ``train.py``), a typed name that exists is asked about, an earlier package is
replaced only when the user says so and a folder of the user's own is refused in words; Export
Picture refuses a link planted at the picture's name (issue 32 case 2)."""

from __future__ import annotations

import os
import shutil

import pytest
from windows import open_window

from app.export_dialog import default_output
from app.files import EXAMPLES

pytest.importorskip("torch")


@pytest.fixture
def window(qtbot, tmp_path):
    shutil.copy(EXAMPLES / "mlp.prototxt", tmp_path / "train.prototxt")
    (tmp_path / "train.py").write_text("the user's own training script\n")
    w = open_window(qtbot, tmp_path / "train.prototxt", size=None)
    errors: list[str] = []
    w.show_error = lambda title, message: errors.append(message)
    w.errors = errors
    yield w
    w.training.shutdown()


def answering(dialog, answer: bool) -> list[str]:
    asked: list[str] = []
    dialog.ask_replace = lambda question: asked.append(question) or answer
    return asked


def test_the_proposed_module_is_not_the_users_train_py(qtbot, window, tmp_path):
    dialog = window.export_actions.open_dialog("torch")
    assert dialog.output.text() == str(tmp_path / "train_net.py")
    assert answering(dialog, False) == [] and dialog.export()
    assert (tmp_path / "train.py").read_text() == "the user's own training script\n"
    assert (tmp_path / "train_net.py").is_file() and (tmp_path / "train_net.pt").is_file()
    assert default_output(window.doc, "torch") == str(tmp_path / "train_net2.py")  # the next is free too


def test_a_typed_name_that_exists_is_asked_about(qtbot, window, tmp_path):
    dialog = window.export_actions.open_dialog("torch")
    dialog.output.setText(str(tmp_path / "train.py"))
    asked = answering(dialog, False)
    assert not dialog.export()
    assert asked == [f"train.py already exists in {tmp_path}. Replace?"]
    assert (tmp_path / "train.py").read_text() == "the user's own training script\n"
    assert not (tmp_path / "train.pt").exists() and "Not exported" in dialog.status.text()
    answering(dialog, True)
    assert dialog.export() and "class" in (tmp_path / "train.py").read_text()


def test_an_earlier_package_is_replaced_when_the_user_says_so(qtbot, window, tmp_path):
    dialog = window.export_actions.open_dialog("package", cluster=True)
    out = tmp_path / "train_torchrun"
    assert dialog.output.text() == str(out)
    assert answering(dialog, False) == [] and dialog.export()
    (out / "run.log").write_text("the user's log")
    before = (out / "weights.pt").read_bytes()
    asked = answering(dialog, False)
    assert not dialog.export() and asked == [f"{out} holds a training package written earlier. Replace it?"]
    answering(dialog, True)
    assert dialog.export(), dialog.status.text()
    assert (out / "run.log").read_text() == "the user's log" and (out / "weights.pt").read_bytes() == before
    assert window.export_actions.open_dialog("package").output.text() == str(out)  # ours: proposed again


def test_a_folder_of_the_users_own_is_refused_in_words(qtbot, window, tmp_path):
    dialog = window.export_actions.open_dialog("package")
    dialog.output.setText(str(tmp_path))
    asked = answering(dialog, True)
    assert not dialog.export() and asked == []
    assert "holds no package of ours" in dialog.status.text()
    assert (tmp_path / "train.py").read_text() == "the user's own training script\n"


def test_export_picture_refuses_a_link_at_its_name(qtbot, window, tmp_path):
    window.graph.sync()
    victim = tmp_path / "victim.txt"
    victim.write_text("keep")
    os.symlink(victim, tmp_path / "net.png")
    window.ask_picture_path = lambda default: str(tmp_path / "net.png")
    window.workbench.export_picture_action.trigger()
    assert victim.read_text() == "keep"
    assert len(window.errors) == 1 and "symbolic link" in window.errors[0]
