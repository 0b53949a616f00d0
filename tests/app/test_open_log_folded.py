"""Issue 31 case 13: Train > Open Training Log… shows that it worked when the training panel is folded
(it unfolds on the curves and the status bar says what was read), and a log that ends at max_iter
reads "20/20", not "21/20" (Caffe prints the loss once more at max_iter)."""

from __future__ import annotations

from windows import asked_window

LOG = """I1201 21:00:00.000001 12345 caffe.cpp:0] Initializing solver from parameters:
I1201 21:00:00.000002 12345 caffe.cpp:0] base_lr: 0.01
I1201 21:00:00.000003 12345 caffe.cpp:0] max_iter: 20
I1201 21:00:00.000005 12345 caffe.cpp:0] Solving LeNet
I1201 21:00:01.000000 12345 caffe.cpp:0] Iteration 0 (0 iter/s, 1s/10 iters), loss = 2.3
I1201 21:00:02.000000 12345 caffe.cpp:0] Iteration 10 (10 iter/s, 1s/10 iters), loss = 1.5
I1201 21:00:03.000000 12345 caffe.cpp:0] Iteration 20, loss = 0.9
I1201 21:00:03.100000 12345 caffe.cpp:0] Iteration 20, Testing net (#0)
I1201 21:00:03.200000 12345 caffe.cpp:0]     Test net output #0: accuracy = 0.8
I1201 21:00:03.300000 12345 caffe.cpp:0] Optimization Done.
"""


def _menu_action(window, menu: str, text: str):
    top = next(a.menu() for a in window.menuBar().actions() if a.text().replace("&", "") == menu)
    return next(a for a in top.actions() if a.text().replace("&", "") == text)


def test_a_log_opened_with_the_panel_folded_unfolds_it_and_says_so(qtbot, tmp_path):
    window = asked_window(qtbot)
    dock = window.training
    dock.set_expanded(False, by_user=True)
    dock.tabs.setCurrentWidget(dock.console)
    assert not dock.tabs.isVisible()
    path = tmp_path / "caffe.log"
    path.write_text(LOG)
    window.export_actions.ask_log_path = lambda: str(path)
    _menu_action(window, "Train", "Open Training Log…").trigger()
    assert dock.tabs.isVisible() and dock.tabs.currentWidget() is dock.plots
    message = window.statusBar().currentMessage()
    assert message == (
        "Training log caffe.log: 20/20 iterations (accuracy), plotted as caffe.log in the training panel"
    )
    run = dock.controller.runs[-1]
    item = dock.runs.tree.topLevelItem(0)  # the newest run, on top of the Runs tab
    assert item.text(0) == "caffe.log" and item.text(2) == "20/20" and (run.iter, run.max_iter) == (20, 20)
