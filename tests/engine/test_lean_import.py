"""`import engine.net` is the lean entry: the pycaffe surface and the file-format libraries load on use.

Each check runs in a fresh interpreter, since this one has long loaded everything.
"""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
HEAVY = (
    "PIL",
    "h5py",
    "lmdb",
    "engine.pycaffe.net",
    "engine.pycaffe.solver",
    "engine.pycaffe.io",
    "engine.pycaffe.net_spec",
    "engine.pycaffe.classifier",
    "engine.pycaffe.detector",
    "engine.pycaffe.coord_map",
)


def _loaded_after(statement: str) -> list[str]:
    report = f"import json, sys\nprint(json.dumps(sorted(m for m in {HEAVY!r} if m in sys.modules)))"
    script = f"{statement}\n{report}"
    done = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_import_engine_net_loads_no_pycaffe_pil_h5py_or_lmdb():
    assert _loaded_after("import engine.net") == []


def test_building_and_running_a_net_stays_lean():
    statement = (
        "import numpy as np\n"
        "from engine.net import Net\n"
        "from proto import caffe_pb2\n"
        "p = caffe_pb2.NetParameter()\n"
        "p.layer.add(name='in', type='Input', top=['x']).input_param.shape.add(dim=[2, 3])\n"
        "ip = p.layer.add(name='ip', type='InnerProduct', bottom=['x'], top=['y'])\n"
        "ip.inner_product_param.num_output = 4\n"
        "net = Net(p, caffe_pb2.TEST)\n"
        "net.forward()\n"
        "assert net.blob_by_name('y').shape == (2, 4)\n"
    )
    assert _loaded_after(statement) == []


def test_the_check_sees_what_a_use_loads():
    """Not vacuous: touching the pycaffe surface or reading an image loads what it needs."""
    assert _loaded_after("import engine\nengine.Net") == ["engine.pycaffe.net"]
    read = "import engine.data.images as i\ntry:\n    i.decode_image(b'junk')\nexcept Exception:\n    pass"
    loaded = _loaded_after(read)
    assert loaded == ["PIL"]


def test_the_lazy_surface_is_pycaffe_s():
    import engine as caffe
    import engine.layers
    import engine.pycaffe.net
    import engine.pycaffe.solver
    import proto.caffe_pb2

    caffe_pb2 = importlib.import_module("engine.proto.caffe_pb2")  # as `from engine.proto import caffe_pb2`

    assert caffe.Net is engine.pycaffe.net.Net and caffe.SGDSolver is engine.pycaffe.solver.SGDSolver
    assert caffe.layers is engine.layers and caffe.layer_type_list is engine.layers.layer_types
    assert caffe_pb2 is proto.caffe_pb2 and caffe.proto.caffe_pb2 is proto.caffe_pb2
    assert caffe.TEST == proto.caffe_pb2.TEST
    assert set(caffe.__all__) <= set(dir(caffe))
    assert all(getattr(caffe, name) is not None for name in caffe.__all__)
    try:
        caffe.NoSuchThing  # noqa: B018
    except AttributeError as exc:
        assert "NoSuchThing" in str(exc)
    else:
        raise AssertionError("an unknown name must raise AttributeError")


def test_a_solver_stepping_loads_no_h5py():
    """Issue 28 (memory): a solver that snapshots in binary never needs h5py (~10 MB resident with
    its libraries); only an HDF5 snapshot or state loads it."""
    statement = (
        "from google.protobuf import text_format\n"
        "from engine.solvers import create_solver\n"
        "from proto import caffe_pb2\n"
        "s = caffe_pb2.SolverParameter()\n"
        "text_format.Parse('base_lr: 0.1 lr_policy: \"fixed\" max_iter: 2', s)\n"
        "net = s.net_param\n"
        "net.layer.add(name='in', type='Input', top=['x']).input_param.shape.add(dim=[2, 3])\n"
        "ip = net.layer.add(name='ip', type='InnerProduct', bottom=['x'], top=['y'])\n"
        "ip.inner_product_param.num_output = 3\n"
        "net.layer.add(name='loss', type='EuclideanLoss', bottom=['y', 'x'], top=['l'])\n"
        "create_solver(s, log_fn=lambda line: None).step(2)\n"
    )
    assert "h5py" not in _loaded_after(statement)
