"""Which Python-layer modules are imported, from where (issue 16, "trust before code"): the net's
folder comes after ours on sys.path and only for nets with Python layers; names that clash with
ours, Python's or installed modules are refused; the app's gate imports nothing untrusted.

Every module written here records its import in a marker file, so "not run" is checked directly.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest

import engine
from engine import pyimport, pymodules
from engine.errors import EngineError
from proto.textio import parse_net

INPUT = 'layer { name: "in" type: "Input" top: "x" input_param { shape { dim: 2 dim: 3 } } }\n'
PY = (
    'layer {{ name: "py" type: "Python" bottom: "x" top: "y" '
    'python_param {{ module: "{m}" layer: "Same" }} }}\n'
)
LAYER = """import caffe


class Same(caffe.Layer):
    def setup(self, bottom, top):
        pass

    def reshape(self, bottom, top):
        top[0].reshape(*bottom[0].data.shape)

    def forward(self, bottom, top):
        top[0].data[...] = bottom[0].data
"""


def marking(marker, body: str = "") -> str:
    """Module source that writes ``marker`` when it is imported (then ``body``)."""
    return f"open({str(marker)!r}, 'w').write(__name__)\n{body}"


def net_beside(folder, module: str) -> str:
    path = folder / "net.prototxt"
    path.write_text('name: "n"\n' + INPUT + PY.format(m=module))
    return str(path)


@pytest.fixture
def forget():
    """Modules a test imports for its layers are dropped afterwards (other tests reuse the names)."""
    names: list[str] = []
    yield names
    for name in names:
        sys.modules.pop(name, None)
        pymodules.imported.pop(name, None)


def test_a_layer_module_beside_the_net_is_found_after_ours_and_gets_the_engine_as_caffe(tmp_path, forget):
    forget.append("pyimport_same_probe")
    (tmp_path / "pyimport_same_probe.py").write_text(
        LAYER + "\nimport engine as _ours\nSEEN = (caffe.Net is _ours.Net, __import__('sys').path[-1])\n"
    )
    before = list(sys.path)
    net = engine.Net(net_beside(tmp_path, "pyimport_same_probe"), engine.TEST)
    assert sys.path == before  # the folder was there while building only
    net.blobs["x"].data[...] = 2
    assert np.all(net.forward()["y"] == 2)
    assert (True, str(tmp_path)) == sys.modules["pyimport_same_probe"].SEEN  # last on sys.path


@pytest.mark.parametrize("name", ["engine", "proto"])
def test_engine_py_or_proto_py_beside_a_net_never_replaces_ours(tmp_path, name):
    marker = tmp_path / "ran"
    (tmp_path / f"{name}.py").write_text(marking(marker))
    ours = sys.modules[name]
    own = f"layer 'py' \\(Python\\): module '{name}' .* Barista's own package"
    with pytest.raises(EngineError, match=own):
        engine.Net(net_beside(tmp_path, name), engine.TEST)
    assert sys.modules[name] is ours and not marker.exists()
    # ...and a layer module beside them that imports ours gets ours.
    (tmp_path / "pyimport_uses_ours.py").write_text(LAYER + f"\nimport {name}\nFROM = {name}.__file__\n")
    try:
        engine.Net(net_beside(tmp_path, "pyimport_uses_ours"), engine.TEST)
        assert ours.__file__ == sys.modules["pyimport_uses_ours"].FROM
    finally:
        sys.modules.pop("pyimport_uses_ours", None)
        pymodules.imported.pop("pyimport_uses_ours", None)
    assert sys.modules[name] is ours and not marker.exists()


@pytest.mark.parametrize(
    "name, clash",
    [
        ("this", "Python's standard module 'this'"),
        ("numpy", "the installed module 'numpy' already loaded from"),
        ("threadpoolctl", "the installed module 'threadpoolctl'"),  # loaded by now, or not yet
    ],
)
def test_names_of_python_or_installed_modules_are_refused_and_run_nothing(tmp_path, capfd, name, clash):
    marker = tmp_path / "ran"
    (tmp_path / f"{name}.py").write_text(marking(marker))
    loaded = sys.modules.get(name)
    with pytest.raises(pyimport.ModuleClash, match=f"module '{name}' \\(python_param.module\\) clashes with"):
        engine.Net(net_beside(tmp_path, name), engine.TEST)
    with pytest.raises(EngineError) as caught:
        engine.Net(net_beside(tmp_path, name), engine.TEST)
    assert clash in str(caught.value) and "layer 'py'" in str(caught.value)
    assert not marker.exists() and sys.modules.get(name) is loaded
    assert "Zen of Python" not in capfd.readouterr().out


def test_the_gate_imports_nothing_from_an_untrusted_folder_and_all_of_a_trusted_one(tmp_path, forget):
    forget.append("pyimport_gated_probe")
    marker = tmp_path / "ran"
    (tmp_path / "pyimport_gated_probe.py").write_text(marking(marker, LAYER))
    path = net_beside(tmp_path, "pyimport_gated_probe")
    pyimport.require_trust([])
    try:
        refused = "Python layer: not run \\(module 'pyimport_gated_probe' of"
        with pytest.raises(pyimport.NotTrusted, match=refused):
            engine.Net(path, engine.TEST)
        assert not marker.exists()
        with pytest.raises(pyimport.NotTrusted, match="the net is not saved"):  # no folder to trust
            engine.Net(parse_net('name: "n"\n' + INPUT + PY.format(m="pyimport_gated_probe")), engine.TEST)
        assert not marker.exists() and not pyimport.allowed([str(tmp_path)])
        pyimport.require_trust([str(tmp_path)])
        assert pyimport.allowed([str(tmp_path)])
        engine.Net(path, engine.TEST)
        assert marker.exists()
    finally:
        pyimport.require_trust(None)


def test_a_net_without_python_layers_leaves_sys_path_alone(tmp_path):
    net = parse_net('name: "n"\n' + INPUT)
    before = list(sys.path)
    with pymodules.for_nets([str(tmp_path / "net.prototxt")], [net]):
        assert sys.path == before
