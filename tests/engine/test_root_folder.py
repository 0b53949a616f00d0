"""One rule for an ImageData layer's ``source`` and ``root_folder``: the working directory first (as
Caffe), then beside the net's and solver's files and the folders above them, then the data root
(engine/data/paths.py). A net whose list and images sit beside it trains from anywhere, with a
relative or an absolute root_folder; a root_folder that is no folder is one message naming the
layer and the folder. The window's canvas, View Data and Train: tests/app/test_app_root_folder.py."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from engine.data.paths import DataPaths
from engine.errors import LayerSetupError
from engine.net import Net
from proto import textio

REPO = Path(__file__).resolve().parents[2]
HEIGHT, WIDTH = 5, 7

NET = """name: "pictures"
layer {{ name: "images" type: "ImageData" top: "data" top: "label"
  image_data_param {{ source: "list.txt" root_folder: "{root}" batch_size: 2 }} }}
layer {{ name: "ip" type: "InnerProduct" bottom: "data" top: "ip"
  inner_product_param {{ num_output: 2 weight_filler {{ type: "xavier" }} }} }}
layer {{ name: "loss" type: "SoftmaxWithLoss" bottom: "ip" bottom: "label" top: "loss" }}
"""

SOLVER = """net: "net.prototxt"
base_lr: 0.01
lr_policy: "fixed"
max_iter: 2
display: 1
snapshot_after_train: false
solver_mode: CPU
"""


def write_folder(folder: Path, root: str) -> list[np.ndarray]:
    """``folder``: net.prototxt, solver.prototxt, list.txt and images/ (4 RGB images); their pixels."""
    rng = np.random.default_rng(0)
    (folder / "images").mkdir(parents=True)
    pictures = [rng.integers(0, 256, (HEIGHT, WIDTH, 3), dtype=np.uint8) for _ in range(4)]
    for i, rgb in enumerate(pictures):
        Image.fromarray(rgb).save(folder / "images" / f"{i}.png")
    (folder / "list.txt").write_text("".join(f"{i}.png {i % 2}\n" for i in range(4)))
    (folder / "net.prototxt").write_text(NET.format(root=root))
    (folder / "solver.prototxt").write_text(SOLVER)
    return pictures


def roots(folder: Path) -> list[str]:
    return ["images/", f"{folder / 'images'}/"]


@pytest.mark.parametrize("absolute", [False, True], ids=["relative", "absolute"])
def test_the_data_layer_reads_the_images_beside_the_net(tmp_path, elsewhere, absolute):
    folder = tmp_path / "A"
    folder.mkdir()
    pictures = write_folder(folder, roots(folder)[absolute])
    net_path = folder / "net.prototxt"
    net = Net(textio.read_net(net_path), data_paths=DataPaths.beside(net_path))
    net.forward()
    data = net.blob_by_name("data").data
    assert data.shape == (2, 3, HEIGHT, WIDTH)
    bgr = [np.transpose(p[:, :, ::-1], (2, 0, 1)) for p in pictures[:2]]  # as OpenCV reads them for Caffe
    np.testing.assert_allclose(data, np.stack(bgr).astype(np.float32), atol=0)
    np.testing.assert_allclose(net.blob_by_name("label").data, [0, 1], atol=0)
    net.close()
    if not absolute:  # looked for in the working directory only: not there
        with pytest.raises(LayerSetupError, match=r"cannot open the image list list\.txt"):
            Net(textio.read_net(net_path))


def test_a_root_folder_that_is_no_folder_is_one_message_naming_layer_and_folder(tmp_path, elsewhere):
    folder = tmp_path / "A"
    folder.mkdir()
    write_folder(folder, "nowhere/")
    net_path = folder / "net.prototxt"
    with pytest.raises(LayerSetupError) as caught:
        Net(textio.read_net(net_path), data_paths=DataPaths.beside(net_path))
    message = str(caught.value)
    assert message.startswith("layer 'images' (ImageData): its root_folder 'nowhere/' is not a folder")
    assert f"in the working directory {elsewhere}, then in {folder} and the folders above it" in message
    (folder / "net.prototxt").write_text(NET.format(root=f"{folder}/nowhere/"))
    with pytest.raises(LayerSetupError, match=rf"its root_folder '{folder}/nowhere/' is not a folder$"):
        Net(textio.read_net(net_path), data_paths=DataPaths.beside(net_path))


def test_a_name_prefix_root_folder_is_not_taken_for_a_folder(tmp_path):
    assert DataPaths().folder_problem("img_") is None and DataPaths().folder_problem("") is None
    assert DataPaths(search_from=(tmp_path,)).folder_problem(f"{tmp_path.name}_") is None


def train(cwd: Path, solver: Path) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, str(REPO / "main.py"), "train", "--solver", str(solver)]
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("root", ["images/", "absolute", "nowhere/"])
def test_main_py_train_from_elsewhere(tmp_path, root):
    folder, cwd = tmp_path / "A", tmp_path / "elsewhere"
    folder.mkdir()
    cwd.mkdir()
    write_folder(folder, f"{folder / 'images'}/" if root == "absolute" else root)
    done = train(cwd, folder / "solver.prototxt")
    if root != "nowhere/":
        assert done.returncode == 0, done.stderr
        assert "Iteration 2, loss = " in done.stderr and "Optimization Done." in done.stderr
        return
    lines = done.stderr.splitlines()
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert lines[-1].startswith("error: ") and len([line for line in lines if "error" in line]) == 1
    assert "layer 'images' (ImageData): its root_folder 'nowhere/' is not a folder" in lines[-1]
