"""The problems under the canvas wrap: a long message (the siamese net's LEVELDB data) reads whole
in the window at 1280x800, on as many lines as it needs, with no sideways scrolling."""

from __future__ import annotations

from PySide6.QtCore import QRect, Qt

from app.main_window import MainWindow

NET = """name: "pairs"
layer { name: "pair_data" type: "Data" top: "pair_data" top: "sim"
  data_param { source: "examples/siamese/mnist_siamese_train_leveldb" batch_size: 64 backend: LEVELDB } }
layer { name: "ip" type: "InnerProduct" bottom: "pair_data" top: "ip" inner_product_param { num_output: 2 } }
"""


def test_a_long_problem_reads_whole_on_wrapped_lines(qtbot, tmp_path):
    path = tmp_path / "pairs.prototxt"
    path.write_text(NET)
    window = MainWindow()
    qtbot.addWidget(window)
    assert window.open_file(path)
    window.resize(1280, 800)
    window.show()
    qtbot.waitExposed(window)
    problems = window.graph.problems
    qtbot.waitUntil(lambda: problems.isVisible() and problems.count() > 0)
    item = next(problems.item(i) for i in range(problems.count()) if "LEVELDB" in problems.item(i).text())
    room = problems.viewport().width()
    metrics = problems.fontMetrics()
    assert metrics.horizontalAdvance(item.text()) > room  # too long for one line: it has to wrap
    qtbot.waitUntil(  # the list lays its rows out again after the window settles
        lambda: (
            problems.visualItemRect(item).height() >= 2 * metrics.height()
            and problems.visualItemRect(item).right() <= problems.viewport().width()
        )
    )
    room = problems.viewport().width()
    rect = problems.visualItemRect(item)
    wrapped = metrics.boundingRect(
        QRect(0, 0, rect.width() - 16, 10000), int(Qt.TextFlag.TextWordWrap), item.text()
    )
    assert rect.height() >= wrapped.height()
    assert rect.right() <= room  # every line, none cut at the side
    assert problems.height() >= rect.bottom()  # and the list is tall enough to show them
    assert not problems.horizontalScrollBar().isVisible()
    window.training.shutdown()
