"""#24: "View Data…" in the inspector for a selected data layer: the Dataset view of what that
layer's source holds, for an ImageData image list and an HDF5Data file list (relative names found
beside the net), and no button for a layer without a source."""

from __future__ import annotations

import h5py
import numpy as np
from PIL import Image
from PySide6.QtCore import Qt
from windows import open_window

NET = """name: "sources"
layer { name: "images" type: "ImageData" top: "data" top: "label"
  image_data_param { source: "list.txt" root_folder: "pics/" batch_size: 2 new_height: 6 new_width: 6 } }
layer { name: "rows" type: "HDF5Data" top: "x" top: "y"
  hdf5_data_param { source: "files.txt" batch_size: 2 } }
layer { name: "ip" type: "InnerProduct" bottom: "data" top: "ip" inner_product_param { num_output: 2 } }
"""


def test_view_data_shows_an_image_list_and_an_hdf5_source(qtbot, tmp_path):
    rng = np.random.default_rng(0)
    (tmp_path / "pics").mkdir()
    lines = []
    for i in range(45):  # class 1: 42 images, two pages of 40
        Image.fromarray(rng.integers(0, 256, (8, 9, 3), dtype=np.uint8)).save(tmp_path / "pics" / f"{i}.png")
        lines.append(f"{i}.png {0 if i < 3 else 1}\n")
    (tmp_path / "list.txt").write_text("".join(lines))
    with h5py.File(tmp_path / "rows.h5", "w") as f:
        f["x"] = rng.random((5, 1, 4, 4)).astype(np.float32)
        f["y"] = np.array([2, 2, 0, 2, 0], np.float32)
    (tmp_path / "files.txt").write_text("rows.h5\n")
    (tmp_path / "net.prototxt").write_text(NET)
    w = open_window(qtbot, tmp_path / "net.prototxt")
    button = w.workbench.layer_data
    w.selection.select(2)  # InnerProduct: nothing to view
    assert button.isHidden()
    w.selection.select(0)
    qtbot.waitUntil(button.isVisible)
    qtbot.mouseClick(button.button, Qt.MouseButton.LeftButton)
    view = button.view
    assert view is not None and view.isVisible()
    assert view.windowTitle() == "Data of layer 'images' (ImageData): list.txt"
    assert view.info.text() == "image list · 45 images · 3×6×6 (C×H×W)"  # resized as the layer does
    assert view.bars.bars == [("0", 3), ("1", 42)]
    view.class_box.setCurrentIndex(1)
    assert view.thumbs.count() == 40 and view.page_label.text() == "page 1 of 2"
    view.next_button.click()
    assert view.thumbs.count() == 2
    w.selection.select(1)
    button.button.click()
    view = button.view
    assert view is not None
    assert view.info.text() == "HDF5 · 5 images · 1×4×4 (C×H×W)"
    assert view.bars.bars == [("0", 2), ("2", 3)] and view.thumbs.count() == 2
    view.close()
    w.training.shutdown()
