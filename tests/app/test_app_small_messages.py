"""Issue 31 case 13's messages, through the window: an ImageData layer with an empty source says the
source is empty (not "cannot open the image list ."), on its box and when Train fails; a failed run
says "Error:" the same way in the console and in the Runs tab (a command line says "error:")."""

from __future__ import annotations

from windows import asked_window

EMPTY_SOURCE = """name: "images"
layer { name: "data" type: "ImageData" top: "data" top: "label"
  image_data_param { source: "" batch_size: 2 new_height: 8 new_width: 8 } }
layer { name: "ip" type: "InnerProduct" bottom: "data" top: "ip" inner_product_param { num_output: 2 } }
layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip" bottom: "label" top: "loss" }
"""
SAID = "image_data_param.source is empty: name the list of images (a list file is a text file"


def test_an_empty_image_list_source_says_so_on_the_box_and_when_train_fails(qtbot, tmp_path):
    path = tmp_path / "images.prototxt"
    path.write_text(EMPTY_SOURCE)
    (tmp_path / "images_solver.prototxt").write_text('net: "images.prototxt"\nbase_lr: 0.01\nmax_iter: 2\n')
    window = asked_window(qtbot)
    assert window.open_file(path)
    window.graph.sync()
    problems = window.graph.problems
    rows = [problems.item(i).text() for i in range(problems.count())]
    assert any(SAID in row for row in rows), rows
    assert not any("image list ." in row for row in rows)

    dock = window.training
    dock.buttons["train"].click()
    run = dock.controller.current
    assert run is not None
    qtbot.waitUntil(lambda: run.status == "failed", timeout=60000)
    console = dock.console.text()
    error_lines = [line for line in console.splitlines() if SAID in line]
    assert error_lines and all(line.startswith("Error: ") for line in error_lines)
    details = dock.runs.details.toPlainText()
    assert f"Error: {run.error}" in details and "error: " not in details
