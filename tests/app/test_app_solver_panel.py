"""The solver editor: a form from SolverParameter's descriptor and a learning-rate plot that follows it."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtCore import Qt

from app.commands import SetSolverField
from app.document import Document
from app.forms.editors import ChoiceEditor
from app.solver_panel import SolverPanel
from app.undo import UndoStack
from engine.solvers import lr_policy
from proto import caffe_pb2

SOLVER = caffe_pb2.SolverParameter(
    net="net.prototxt",
    base_lr=0.01,
    momentum=0.9,
    weight_decay=0.0005,
    lr_policy="inv",
    gamma=0.0001,
    power=0.75,
    max_iter=10_000,
    display=100,
    test_iter=[100],
    test_interval=500,
)


@pytest.fixture
def panel(qtbot):
    doc = Document(solver=SOLVER)
    stack = UndoStack(doc)
    widget = SolverPanel(doc, stack.push_command)
    widget.stack = stack
    qtbot.addWidget(widget)
    widget.resize(380, 900)
    widget.show()
    qtbot.waitExposed(widget)
    return widget


def retype(qtbot, widget, text: str) -> None:
    target = widget.lineEdit() if hasattr(widget, "lineEdit") and widget.lineEdit() is not None else widget
    widget.setFocus()
    target.selectAll()
    qtbot.keyClicks(target, text)
    qtbot.keyClick(target, Qt.Key.Key_Return)


def test_the_form_covers_the_solver_and_the_plot_shows_the_schedule(panel):
    fields = {name for form in panel.forms for name in form.rows}
    assert {"base_lr", "lr_policy", "max_iter", "momentum", "test_iter", "snapshot_prefix", "type"} <= fields
    assert "net_param" not in fields  # a whole NetParameter does not belong in a form
    assert (
        isinstance(panel.editor("lr_policy"), ChoiceEditor)
        and panel.editor("lr_policy").currentText() == "inv"
    )
    np.testing.assert_allclose(panel.plot.rates, lr_policy.schedule(SOLVER, 10_000))
    assert "inv" in panel.plot.title.text() and "(1 + gamma · iter)" in panel.plot.note.text()
    assert panel.editor("gamma").isVisible() and not panel.editor("stepsize").isVisible()


def test_the_plot_follows_the_policy_fields_as_they_change(qtbot, panel):
    doc = panel.doc
    retype(qtbot, panel.editor("lr_policy"), "step")
    assert doc.solver.lr_policy == "step" and doc.solver.stepsize == 3333  # filled in: step needs one
    stepsize = panel.editor("stepsize")
    assert stepsize.isVisible() and stepsize.value() == 3333
    assert panel.editor("power").isVisible()  # still set from "inv": what is set is always shown
    assert not panel.editor("stepvalue").isVisible()  # multistep only
    rates = panel.plot.rates
    assert len(np.unique(rates)) == 4 and rates[0] == pytest.approx(0.01)  # 0..3332, ..., 9999: four steps

    retype(qtbot, panel.editor("gamma"), "0.5")
    retype(qtbot, stepsize, "2500")
    assert doc.solver.stepsize == 2500
    np.testing.assert_allclose(panel.plot.rates, lr_policy.schedule(doc.solver, 10_000))
    assert panel.plot.rates[-1] == pytest.approx(0.01 * 0.5**3)

    retype(qtbot, panel.editor("max_iter"), "40000")
    assert len(panel.plot.iterations) < 5_000 and panel.plot.iterations[-1] == 39_999  # sampled beyond 20k
    assert panel.plot.rates[-1] == pytest.approx(0.01 * 0.5**15)

    panel.stack.undo()  # max_iter
    panel.stack.undo()  # stepsize
    panel.stack.undo()  # gamma
    panel.stack.undo()  # lr_policy
    assert doc.solver.lr_policy == "inv"
    np.testing.assert_allclose(panel.plot.rates, lr_policy.schedule(SOLVER, 10_000))


def test_a_change_from_elsewhere_redraws_the_plot(panel):
    panel.stack.push_command(SetSolverField("base_lr", 0.1))
    assert panel.plot.rates[0] == pytest.approx(0.1)
    assert panel.editor("base_lr").text() == "0.1"


def test_bad_values_are_refused(qtbot, panel):
    before = panel.doc.solver.SerializeToString()
    retype(qtbot, panel.editor("max_iter"), "-3")
    assert "max_iter must not be negative" in panel.message.text() and panel.message.isVisible()
    retype(qtbot, panel.editor("lr_policy"), "cosine")
    assert "unknown lr_policy 'cosine'" in panel.message.text()
    qtbot.waitUntil(lambda: panel.editor("lr_policy").currentText() == "inv")
    assert panel.doc.solver.SerializeToString() == before


def test_log_scale(qtbot, panel):
    qtbot.mouseClick(panel.plot.log, Qt.MouseButton.LeftButton)
    assert panel.plot.log.isChecked() and panel.plot.plot.getPlotItem().ctrl.logYCheck.isChecked()
    assert len(panel.plot.curve.xData) == 10_000 and (panel.plot.curve.yData > 0).all()
    assert panel.plot.curve.opts["fillLevel"] is None  # no fill down to log(0)


def test_switching_to_adagrad_lets_go_of_momentum_in_one_undoable_step(qtbot, panel):
    """Caffe's AdaGrad and RMSProp refuse momentum; choosing them from the type box clears it."""
    combo = panel.editor("type")
    combo.setCurrentText("AdaGrad")  # as a pick from the list: the combo emits its change
    combo.activated.emit(combo.currentIndex())
    qtbot.waitUntil(lambda: panel.doc.solver.type == "AdaGrad")
    assert panel.doc.solver.momentum == 0 and not panel.doc.solver.HasField("momentum")
    assert not panel.message.isVisible()
    panel.stack.undo()
    assert panel.doc.solver.type != "AdaGrad" and panel.doc.solver.momentum == pytest.approx(0.9)


def test_momentum_with_rmsprop_is_refused_in_caffes_words(qtbot, panel):
    panel.stack.push_command(SetSolverField("momentum", 0.0))
    panel.stack.push_command(SetSolverField("type", "RMSProp"))
    retype(qtbot, panel.editor("momentum"), "0.5")
    assert "Momentum cannot be used with RMSProp." in panel.message.text()
    assert panel.doc.solver.momentum == 0


def test_a_field_caffe_1_0_lacks_is_applied_with_a_lasting_notice(qtbot, panel):
    assert not panel.notice.isVisible()
    panel.stack.push_command(SetSolverField("weights", ["pretrained.caffemodel"]))
    assert list(panel.doc.solver.weights) == ["pretrained.caffemodel"]  # applied, not refused
    qtbot.waitUntil(panel.notice.isVisible, timeout=2000)
    assert "newer than 1.0" in panel.notice.text() and "weights" in panel.notice.text()
    panel.stack.undo()
    qtbot.waitUntil(lambda: not panel.notice.isVisible(), timeout=2000)
