"""The editor's picture without a window: a scene rendered to PNG (raster) or SVG (vector).

The scene is the editor's own (same items, layout, sidecar positions), so ``main.py draw`` and
the canvas cannot drift apart.
"""

from __future__ import annotations

import os

from PySide6.QtCore import QRectF, QSize
from PySide6.QtGui import QColor, QImage, QPainter
from PySide6.QtSvg import QSvgGenerator

from graph_view import sidecar, style
from graph_view.cli_shapes import hints_for
from graph_view.scene import GraphScene
from proto import caffe_pb2

MARGIN = 24
MAX_SIDE = 32000  # pixels (QImage allows 32767): a ResNet-152 fits at full size; larger nets scale down
MAX_PIXELS = 150_000_000


def make_scene(
    net: caffe_pb2.NetParameter,
    net_path: str | None = None,
    phase: int = caffe_pb2.TRAIN,
    splits: bool = False,
    input_shapes: dict[str, tuple[int, ...]] | None = None,
) -> GraphScene:
    """``input_shapes``: assumed shapes for data blobs, over the sidecar's (``--input-shape``)."""
    scene = GraphScene()
    scene.editing, scene.cache_items = False, False
    scene.phase, scene.splits = phase, splits
    if net_path:
        scene.data_hints = hints_for(net_path, dict(input_shapes or {}))
    state = sidecar.load(net_path)
    if state is not None:
        scene.manual, scene.downward, scene.expanded = (
            dict(state.positions),
            state.downward,
            set(state.expanded),
        )
    scene.show_net(net)
    return scene


def _source(scene: GraphScene) -> QRectF:
    return scene.itemsBoundingRect().adjusted(-MARGIN, -MARGIN, MARGIN, MARGIN)


def save_png(scene: GraphScene, path: str, scale: float = 2.0) -> QSize:
    source = _source(scene)
    scale = min(scale, MAX_SIDE / max(source.width(), source.height(), 1))
    scale = min(scale, (MAX_PIXELS / max(source.width() * source.height(), 1)) ** 0.5)
    size = QSize(max(int(source.width() * scale), 1), max(int(source.height() * scale), 1))
    image = QImage(size, QImage.Format.Format_ARGB32_Premultiplied)
    image.fill(QColor(style.BACKGROUND))
    painter = QPainter(image)
    painter.setRenderHints(QPainter.RenderHint.Antialiasing | QPainter.RenderHint.TextAntialiasing)
    scene.render(painter, QRectF(0, 0, size.width(), size.height()), source)
    painter.end()
    if not image.save(path, "PNG"):
        raise OSError(f"cannot write {path}")
    return size


def save_svg(scene: GraphScene, path: str, title: str = "") -> QSize:
    source = _source(scene)
    size = QSize(int(source.width()), int(source.height()))
    generator = QSvgGenerator()
    generator.setFileName(path)
    generator.setSize(size)
    generator.setViewBox(QRectF(0, 0, size.width(), size.height()))
    generator.setTitle(title or os.path.basename(path))
    generator.setDescription("Drawn by Barista")
    painter = QPainter()
    if not painter.begin(generator):
        raise OSError(f"cannot write {path}")
    painter.setRenderHints(QPainter.RenderHint.Antialiasing | QPainter.RenderHint.TextAntialiasing)
    painter.fillRect(QRectF(0, 0, size.width(), size.height()), QColor(style.BACKGROUND))
    scene.render(painter, QRectF(0, 0, size.width(), size.height()), source)
    painter.end()
    if not os.path.isfile(path):
        raise OSError(f"cannot write {path}")
    return size


def save(scene: GraphScene, path: str, title: str = "") -> QSize:
    """Write ``path`` as PNG or SVG, by its extension."""
    ext = os.path.splitext(path)[1].lower()
    if ext == ".svg":
        return save_svg(scene, path, title)
    if ext == ".png":
        return save_png(scene, path)
    raise ValueError(f"cannot draw to '{path}': the output must end in .png or .svg")
