"""Nets and helpers shared by the graph editor's tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from google.protobuf import text_format

from app import commands
from app.document import Document
from app.selection import Selection
from app.undo import UndoStack
from graph_view.editor import GraphEditor
from proto import caffe_pb2

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "resources" / "examples"
EXAMPLE_NETS = sorted(
    [p for p in EXAMPLES.glob("*.prototxt") if "solver" not in p.name]
    + [EXAMPLES / "mnist" / "lenet_train_test.prototxt", EXAMPLES / "mnist" / "lenet.prototxt"]
)

# One blob ("data") feeds two layers: Caffe inserts a Split named data_input_0_split.
FORK = """
name: "fork"
layer { name: "input" type: "Input" top: "data" input_param { shape { dim: 2 dim: 3 dim: 8 dim: 8 } } }
layer { name: "conv_a" type: "Convolution" bottom: "data" top: "conv_a"
        convolution_param { num_output: 4 kernel_size: 3 } }
layer { name: "conv_b" type: "Convolution" bottom: "data" top: "conv_b"
        convolution_param { num_output: 4 kernel_size: 3 } }
layer { name: "relu_b" type: "ReLU" bottom: "conv_b" top: "conv_b" }
layer { name: "sum" type: "Eltwise" bottom: "conv_a" bottom: "conv_b" top: "sum" }
"""

# Three unconnected layers to wire by hand.
LOOSE = """
name: "loose"
layer { name: "input" type: "Input" top: "data" input_param { shape { dim: 1 dim: 1 dim: 12 dim: 12 } } }
layer { name: "conv1" type: "Convolution" bottom: "data" top: "conv1"
        convolution_param { num_output: 6 kernel_size: 5 } }
layer { name: "ip1" type: "InnerProduct" top: "ip1" inner_product_param { num_output: 10 } }
"""


def net_of(text: str) -> caffe_pb2.NetParameter:
    return text_format.Parse(text, caffe_pb2.NetParameter())


def write(tmp_path: Path, text: str, name: str = "net.prototxt") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def shown_editor(
    qtbot: Any, doc: Document, size: tuple[int, int] = (1100, 760), active: bool = True
) -> tuple[GraphEditor, UndoStack]:
    """A graph editor on ``doc`` (its commands on an undo stack), shown at ``size`` and exposed;
    with ``active``, the active window too (keyboard input reaches it)."""
    stack = UndoStack(doc)
    editor = GraphEditor(doc, stack.push_command, Selection(doc), commands.GraphCommands())
    qtbot.addWidget(editor)
    editor.resize(*size)
    editor.show()
    qtbot.waitExposed(editor)
    if active:
        editor.activateWindow()
        qtbot.waitActive(editor)
    return editor, stack
