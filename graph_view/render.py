"""The editor's picture without a window: a scene rendered to PNG (raster) or SVG (vector).

The scene is the editor's own (same items, layout, sidecar positions), so ``main.py draw`` and
the canvas cannot drift apart.

Past what a picture can show it is refused in words (``PictureTooLarge``), never drawn unreadable
or at the cost of gigabytes: more than ``MAX_BOXES`` boxes in any format, or a PNG that would have
to shrink below ``MIN_SCALE`` to fit its pixel limits (a 20,000-layer chain: 1x12000 px).
"""

from __future__ import annotations

import os

from PySide6.QtCore import QBuffer, QIODevice, QRectF, QSize
from PySide6.QtGui import QColor, QImage, QPainter
from PySide6.QtSvg import QSvgGenerator

from graph_view import sidecar, style
from graph_view.cli_shapes import hints_for
from graph_view.scene import GraphScene
from proto import caffe_pb2
from proto.atomic import check_target, write_bytes_atomic

MARGIN = 24
# A picture a viewer can show: 2 px a scene unit for a normal net, never past 12,000 px on its long
# side or 24 megapixels (a ResNet-152 is then 0.75 px a unit: its names 9 px, readable when zoomed).
MAX_SIDE = 12_000
MAX_PIXELS = 24_000_000
# Below this a box's name (12 units) is under 3 px: a PNG that small is a smear, not a picture.
MIN_SCALE = 0.25
# A scene costs ~15 kB a box and its SVG ~0.1 MB more while written: 5,000 boxes is ~0.5 GB
# (ResNet-152 is 671 layers; a net of 30,000 boxes took 2.9 GB and crashed the renderer).
MAX_BOXES = 5_000
PNG_QUALITY = 80  # Qt's PNG "quality" is zlib's effort: 80 is level 1, a little bigger, many times faster


class PictureTooLarge(ValueError):
    """A picture past the limits above; ``str()`` is one line naming the limit and what to do."""


def check_boxes(count: int, what: str = "the net") -> None:
    """Refuse a picture of more than ``MAX_BOXES`` boxes before a scene is made for it."""
    if count > MAX_BOXES:
        raise PictureTooLarge(
            f"{what} has {count:,} boxes, more than a picture can show ({MAX_BOXES:,}); "
            "`main.py shapes` lists every layer"
        )


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


def copy_of(live: GraphScene) -> GraphScene:
    """A picture-only copy of the canvas's scene: same net, phase, splits, direction, unfolded bands
    and hand-placed boxes; no selection, no cached bitmaps (an SVG wants text)."""
    scene = GraphScene()
    scene.editing, scene.cache_items = False, False
    scene.phase, scene.splits, scene.downward = live.phase, live.splits, live.downward
    scene.manual, scene.expanded = dict(live.manual), set(live.expanded)
    scene.module_dirs = list(live.module_dirs)
    scene.show_net(live.net)
    return scene


def _source(scene: GraphScene, keys: list[str] | None = None) -> QRectF:
    """The whole net, or the boxes ``keys`` (and their labels), with a margin. With ``keys``, the
    other boxes and the wires to them are hidden: the margin would show bits of the neighbours."""
    rect = QRectF()
    if keys:
        for key, item in scene.nodes.items():
            item.setVisible(key in keys)
        for wire in scene.wires:
            wire.setVisible(wire.edge.src in keys and wire.edge.dst in keys)
        for key in keys:
            if key in scene.nodes:
                box = scene.nodes[key].sceneBoundingRect() | scene.nodes[key].mapRectToScene(
                    scene.nodes[key].childrenBoundingRect()
                )
                rect = box if rect.isNull() else rect | box
    if rect.isNull():
        rect = scene.itemsBoundingRect()
    return rect.adjusted(-MARGIN, -MARGIN, MARGIN, MARGIN)


def png_scale(source: QRectF, scale: float = 2.0) -> float:
    """Pixels a scene unit for a PNG of ``source``: ``scale``, less where the pixel limits need it;
    PictureTooLarge when that is below MIN_SCALE."""
    fitted = min(scale, MAX_SIDE / max(source.width(), source.height(), 1))
    fitted = min(fitted, (MAX_PIXELS / max(source.width() * source.height(), 1)) ** 0.5)
    if fitted < MIN_SCALE:
        width, height = int(source.width() * MIN_SCALE), int(source.height() * MIN_SCALE)
        raise PictureTooLarge(
            f"a readable PNG of this net would be {width:,}x{height:,} px, past the limit of {MAX_SIDE:,} px "
            f"a side and {MAX_PIXELS // 1_000_000} megapixels; draw it as .svg, or without the Split layers"
        )
    return fitted


def png_bytes(scene: GraphScene, scale: float = 2.0, keys: list[str] | None = None) -> tuple[bytes, QSize]:
    check_boxes(len(keys) if keys else len(scene.nodes))
    source = _source(scene, keys)
    scale = png_scale(source, scale)
    size = QSize(max(int(source.width() * scale), 1), max(int(source.height() * scale), 1))
    image = QImage(size, QImage.Format.Format_RGB32)  # opaque: no alpha channel to encode
    image.fill(QColor(style.BACKGROUND))
    painter = QPainter(image)
    painter.setRenderHints(QPainter.RenderHint.Antialiasing | QPainter.RenderHint.TextAntialiasing)
    scene.render(painter, QRectF(0, 0, size.width(), size.height()), source)
    painter.end()
    buffer = QBuffer()
    buffer.open(QIODevice.OpenModeFlag.WriteOnly)
    if not image.save(buffer, "PNG", PNG_QUALITY):
        raise OSError("the picture could not be encoded as PNG")
    return bytes(buffer.data().data()), size


def svg_bytes(scene: GraphScene, title: str, keys: list[str] | None = None) -> tuple[bytes, QSize]:
    check_boxes(len(keys) if keys else len(scene.nodes))
    source = _source(scene, keys)
    size = QSize(int(source.width()), int(source.height()))
    buffer = QBuffer()
    buffer.open(QIODevice.OpenModeFlag.WriteOnly)
    generator = QSvgGenerator()
    generator.setOutputDevice(buffer)
    generator.setSize(size)
    generator.setViewBox(QRectF(0, 0, size.width(), size.height()))
    generator.setTitle(title)
    generator.setDescription("Drawn by Barista")
    painter = QPainter()
    if not painter.begin(generator):
        raise OSError("the picture could not be drawn as SVG")
    painter.setRenderHints(QPainter.RenderHint.Antialiasing | QPainter.RenderHint.TextAntialiasing)
    painter.fillRect(QRectF(0, 0, size.width(), size.height()), QColor(style.BACKGROUND))
    scene.render(painter, QRectF(0, 0, size.width(), size.height()), source)
    painter.end()
    return bytes(buffer.data().data()), size


def save(scene: GraphScene, path: str, title: str = "", keys: list[str] | None = None) -> QSize:
    """Write ``path`` as PNG or SVG, by its extension: the whole net, or only the boxes ``keys``. The
    picture is made in memory, then written by proto.atomic (a link planted at ``path`` is refused,
    never written through; a name that is not UTF-8 is written as its bytes); WriteError otherwise."""
    ext = os.path.splitext(path)[1].lower()
    if ext not in (".png", ".svg"):
        raise ValueError(f"cannot draw to '{shown(path)}': the output must end in .png or .svg")
    check_target(path)  # refused before the drawing, which may take seconds
    if ext == ".svg":
        data, size = svg_bytes(scene, title or shown(os.path.basename(path)), keys)
    else:
        data, size = png_bytes(scene, keys=keys)
    write_bytes_atomic(path, data)
    return size


def shown(path: str) -> str:
    """``path`` printable: bytes of a name that are not UTF-8 (surrogate escapes) shown as \\xNN."""
    return path.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
