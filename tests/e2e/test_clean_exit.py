"""#16 case 2: processes whose nets read data on prefetch threads exit with 0, every time.

One net holds every data layer (Data from an LMDB, HDF5Data, ImageData, WindowData; MemoryData in
the pycaffe stage), with batches big enough that the prefetch threads are still reading when the
program ends. ``main.py test``, ``main.py time`` and a pycaffe script (``import engine as caffe``,
build, forward, exit without closing anything) each run 20 times in fresh interpreters; before the
fix about one run in ten ended in a segfault, an abort or a hang on h5py's lock.
"""

from __future__ import annotations

import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import h5py
import numpy as np
import pytest
from PIL import Image

from engine.data.lmdb_writer import write_datum_lmdb
from proto import binaryio, caffe_pb2

REPO = Path(__file__).resolve().parents[2]
RUNS = 20
SIDE = 40  # pixels: a batch takes the prefetch thread a few milliseconds, so exit meets it reading

PYCAFFE = """
import sys
import numpy as np
import engine as caffe
net = caffe.Net(sys.argv[1], caffe.TEST, stages=["py"])
net.set_input_arrays(np.zeros((8, 1, 2, 2), np.float32), np.zeros(8, np.float32))
net.forward()
print("forward", float(net.blobs["loss"].data))
"""


def _net(folder: Path) -> str:
    images = np.random.default_rng(0).integers(0, 256, (96, 3, SIDE, SIDE)).astype(np.uint8)
    write_datum_lmdb(folder / "db", images, np.arange(96) % 4)
    with h5py.File(folder / "rows.h5", "w") as f:
        f["h5data"] = np.random.default_rng(1).random((96, 3, SIDE, SIDE), np.float32)
        f["h5label"] = (np.arange(96) % 4).astype(np.float32)
    (folder / "h5list.txt").write_text(f"{folder / 'rows.h5'}\n")
    lines, windows = [], []
    for i in range(8):
        name = folder / f"im{i}.png"
        Image.fromarray(images[i].transpose(1, 2, 0)).save(name)
        lines.append(f"{name} {i % 4}")
        windows += [f"# {i}", str(name), f"3 {SIDE} {SIDE}", "2", "1 0.9 0 0 30 30", "0 0.1 5 5 20 20"]
    (folder / "images.txt").write_text("\n".join(lines) + "\n")
    (folder / "windows.txt").write_text("\n".join(windows) + "\n")
    net = folder / "all_data.prototxt"
    net.write_text(f"""name: "all_data"
layer {{ name: "memory" type: "MemoryData" top: "memdata" top: "memlabel" include {{ stage: "py" }}
  memory_data_param {{ batch_size: 4 channels: 1 height: 2 width: 2 }} }}
layer {{ name: "mute_memory" type: "Silence" bottom: "memdata" bottom: "memlabel" include {{ stage: "py" }} }}
layer {{ name: "lmdb" type: "Data" top: "data" top: "label"
  data_param {{ source: "{folder / "db"}" batch_size: 32 backend: LMDB }} }}
layer {{ name: "h5" type: "HDF5Data" top: "h5data" top: "h5label"
  hdf5_data_param {{ source: "{folder / "h5list.txt"}" batch_size: 32 }} }}
layer {{ name: "images" type: "ImageData" top: "imdata" top: "imlabel"
  image_data_param {{ source: "{folder / "images.txt"}" batch_size: 16 }} }}
layer {{ name: "windows" type: "WindowData" top: "windata" top: "winlabel"
  transform_param {{ crop_size: 24 }}
  window_data_param {{ source: "{folder / "windows.txt"}" batch_size: 16 }} }}
layer {{ name: "mute" type: "Silence" bottom: "h5data" bottom: "h5label" bottom: "imdata"
  bottom: "imlabel" bottom: "windata" bottom: "winlabel" }}
layer {{ name: "ip" type: "InnerProduct" bottom: "data" top: "ip"
  inner_product_param {{ num_output: 4 weight_filler {{ type: "xavier" }} }} }}
layer {{ name: "loss" type: "SoftmaxWithLoss" bottom: "ip" bottom: "label" top: "loss" }}
""")
    return str(net)


@pytest.fixture(scope="module")
def all_data(tmp_path_factory) -> tuple[str, str, str]:
    folder = tmp_path_factory.mktemp("all_data")
    net = _net(folder)
    weights = folder / "none.caffemodel"  # no layer's weights: ip keeps its filler's values
    binaryio.write_caffemodel(str(weights), caffe_pb2.NetParameter(name="all_data"))
    script = folder / "script.py"
    script.write_text(PYCAFFE)
    return net, str(weights), str(script)


def _run(argv: list[str]) -> tuple[int, str]:
    try:
        done = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        return -999, "hung for 120 s"
    return done.returncode, done.stderr[-400:]


@pytest.mark.parametrize("command", ["test", "time", "pycaffe"])
def test_every_run_exits_0(all_data, command):
    net, weights, script = all_data
    main = [sys.executable, "main.py"]
    argv = {
        "test": [*main, "test", "--model", net, "--weights", weights, "--iterations", "2"],
        "time": [*main, "time", "--model", net, "--iterations", "1"],
        "pycaffe": [sys.executable, script, net],
    }[command]
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(_run, [argv] * RUNS))
    failed = [(code, err) for code, err in results if code != 0]
    assert not failed, f"{len(failed)} of {RUNS} runs failed; first: exit {failed[0][0]}: {failed[0][1]}"


def test_prefetch_threads_are_joined_before_late_libraries_exit_handlers(tmp_path):
    """A library imported after the engine (h5py, by the first HDF5Data layer) registers its exit
    handler later, and atexit runs the last registered first: the joins must still come first."""
    script = tmp_path / "order.py"
    script.write_text(
        "import atexit\n"
        "from engine.data import teardown\n"
        "order = []\n"
        "atexit.register(lambda: print('order', order))\n"
        "atexit.register(lambda: order.append('library'))  # as h5py does when imported late\n"
        "class Prefetcher:\n"
        "    def close(self):\n"
        "        order.append('joined')\n"
        "prefetcher = Prefetcher()\n"
        "teardown.track_thread(prefetcher)\n"
    )
    done = subprocess.run([sys.executable, str(script)], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "order ['joined', 'library']"
