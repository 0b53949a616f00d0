"""Python layers' modules beside the net: sys.path while building, `import caffe`, edited files."""

from __future__ import annotations

import os
import sys

from engine import pymodules
from graph_view.graph import build
from proto.textio import parse_net

LAYER = """import caffe


class Twice(caffe.Layer):
    def setup(self, bottom, top):
        pass

    def reshape(self, bottom, top):
        top[0].reshape(*[WIDTH * d for d in bottom[0].data.shape])
"""
NET = """name: "p"
layer { name: "in" type: "Input" top: "x" input_param { shape { dim: 2 dim: 3 } } }
layer { name: "py" type: "Python" bottom: "x" top: "y" python_param { module: "MODULE" layer: "Twice" } }
"""


def test_the_folder_ends_sys_path_only_while_building_and_edits_are_seen(tmp_path):
    module = "pymodules_twice_probe"
    (tmp_path / f"{module}.py").write_text(LAYER.replace("WIDTH", "2"))
    net = parse_net(NET.replace("MODULE", module))
    before = list(sys.path)
    with pymodules.importing_from([str(tmp_path)], [module]):
        assert sys.path == [*before, str(tmp_path)]  # after ours and everything installed, never first
        with pymodules.importing_from([str(tmp_path)], [module]):  # nested (another thread's build)
            assert sys.path.count(str(tmp_path)) == 1
        assert sys.path[-1] == str(tmp_path)
    assert sys.path == before
    with pymodules.importing_from([str(tmp_path)], []):  # a net without Python layers: nothing changes
        assert sys.path == before
    assert build(net, module_dirs=[str(tmp_path)]).nodes["py"].top_shapes == [(4, 6)]
    assert sys.modules["caffe"].Layer is sys.modules["engine"].Layer  # no caffe installed: the engine

    # The user edits the module (a file of another size, an older time stamp even): imported afresh.
    path = tmp_path / f"{module}.py"
    path.write_text(LAYER.replace("WIDTH", "3") + "\n# edited\n")
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns - 10**9))
    assert build(net, module_dirs=[str(tmp_path)]).nodes["py"].top_shapes == [(6, 9)]


def test_without_the_folder_the_module_is_missing_and_the_message_says_where_to_put_it(tmp_path):
    net = parse_net(NET.replace("MODULE", "pymodules_nowhere_probe"))
    graph = build(net, module_dirs=[str(tmp_path)])
    error = graph.shapes["py"].error
    assert "No module named 'pymodules_nowhere_probe'" in error
    assert error.endswith(
        f"put pymodules_nowhere_probe.py beside the net (looked in {tmp_path} and on PYTHONPATH)"
    )
