"""The scene mirrors the net: ``show_net`` derives the graph, lays it out and (re)creates the items.

View state lives here: the phase shown and the split overlay. The flow direction, which boxes have
their in-place bands unfolded, and the positions the user dragged boxes to (kept in canonical,
top-to-bottom coordinates so flipping the direction mirrors them) mirror the document's layout when
there is a document: the editor copies them in, and a gesture that changes them here
(``positions_changed``, ``expanded_toggled``) goes back to the document as one undoable command.
Gestures come out as signals (``connect_requested``, ``rename_requested``, ``blob_rename_requested``);
the controller turns them into the document's commands.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable

from PySide6.QtCore import QPointF, QRectF, Qt, Signal
from PySide6.QtGui import QBrush, QPainter, QPen, QPixmap
from PySide6.QtWidgets import QGraphicsItem, QGraphicsScene, QGraphicsSceneMouseEvent

from engine.data_shapes import Hints
from graph_view import canvas_colours, style
from graph_view.graph import Graph, build
from graph_view.items import NodeItem, advance, measure
from graph_view.layout import Layout, LayoutEdge, layered
from graph_view.ports import TOP, PortItem, accepts
from graph_view.problems import caffe10_problems
from graph_view.validation import Problem, validate
from graph_view.wires import BlobLabel, WireItem
from proto import caffe_pb2

# More boxes than this are not drawn: laying out and creating the items of a 20,000-layer net blocked
# the window for ~17 s and ~1 GB (ResNet-152, the everyday big net, has 671; this is four times that).
CANVAS_LIMIT = 3000


class GraphScene(QGraphicsScene):
    connect_requested = Signal(str, int, str, int)  # source key, top slot, target key, bottom slot (-1: new)
    rename_requested = Signal(str)  # node key
    blob_rename_requested = Signal(str, int)  # node key, top slot: its wire label was double-clicked
    positions_changed = Signal()  # the user finished dragging boxes
    expanded_toggled = Signal()  # a box's in-place bands were folded or unfolded
    rebuilt = Signal()

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.net = caffe_pb2.NetParameter()
        self.phase: int = caffe_pb2.TRAIN
        self.splits, self.downward = False, False
        self.editing = True  # False: a picture only (the draw command, or no way to push commands)
        self.cache_items = True  # False when rendering to a file: an SVG wants text, not cached bitmaps
        self.expanded: set[str] = set()
        self.module_dirs: list[str] = []  # where Python layers' modules are imported from first
        self.data_hints = Hints()  # shapes for data layers whose source is absent (typed, recorded, deploy)
        self.manual: dict[str, tuple[float, float]] = {}  # key -> centre, canonical (top-to-bottom) y
        self.graph: Graph = build(self.net)
        self.problems: list[Problem] = []
        self.nodes: dict[str, NodeItem] = {}
        self.wires: list[WireItem] = []
        self._wires_of: dict[str, list[WireItem]] = defaultdict(list)
        self._layout_key: tuple | None = None
        self._layout_view: tuple[int, bool] | None = None  # the (phase, splits) the layout was made for
        self._layout = Layout()
        self._building = False
        self._moved: set[str] = set()
        self.detailed = True  # ports, labels and bands shown (the view turns them off far out)
        self.found: set[str] = set()  # boxes matching the Find bar's text, ringed
        self.setBackgroundBrush(canvas_colours.background())
        self.setItemIndexMethod(QGraphicsScene.ItemIndexMethod.BspTreeIndex)

    @property
    def editable(self) -> bool:
        return self.editing and not self.splits

    # ---- building -------------------------------------------------------------------------
    def show_net(self, net: caffe_pb2.NetParameter) -> None:
        self.net = net
        self.rebuild()

    @property
    def too_big(self) -> bool:
        """The editor's canvas past its limit (a picture for a file has its own: render.MAX_BOXES)."""
        return self.editing and len(self.net.layer) > CANVAS_LIMIT

    def rebuild(self) -> None:
        if self.too_big:
            self._show_too_big()
            return
        selected = {getattr(item, "key", None) for item in self.selectedItems()}
        self.graph = build(self.net, self.phase, self.splits, self.module_dirs, self.data_hints)
        self.problems = validate(self.graph) + caffe10_problems(self.graph)
        by_key: dict[str, list[Problem]] = defaultdict(list)
        for problem in self.problems:
            by_key[problem.key].append(problem)
        sizes = {key: measure(node, key in self.expanded) for key, node in self.graph.nodes.items()}
        layout = self._lay_out(sizes)
        self._building = True
        self.clear()
        self.nodes, self.wires, self._wires_of = {}, [], defaultdict(list)
        dangling: dict[str, set[int]] = defaultdict(set)
        for key, slot, _blob in self.graph.dangling:
            dangling[key].add(slot)
        for key, node in self.graph.nodes.items():
            item = NodeItem(node, sizes[key], self.downward, key in self.expanded, by_key, dangling[key])
            if self.cache_items:  # panning blits each box instead of drawing its text again
                item.setCacheMode(QGraphicsItem.CacheMode.DeviceCoordinateCache)
            self.addItem(item)
            item.setPos(self._position(key, layout))
            self.nodes[key] = item
            copies = split_labels(node.layer, len(item.top_ports))
            for stagger, port in enumerate(item.top_ports):
                shape = node.top_shapes[port.slot] if port.slot < len(node.top_shapes) else None
                assumed = node.assumed is not None and not node.assumed.fact
                if copies:  # one row, each copy at its port: a stack of four ran into the boxes above
                    last = port is item.top_ports[-1]
                    row = 0 if fits_in_a_row(item.top_ports, copies) else stagger
                    BlobLabel(port, shape if last else None, self.downward, row, assumed, copies[port.slot])
                else:
                    BlobLabel(port, shape, self.downward, stagger, assumed)
        into: dict[str, dict[int, object]] = defaultdict(dict)
        for edge in self.graph.edges:
            into[edge.dst][edge.dst_slot] = edge.shape
        for key, item in self.nodes.items():
            item.setToolTip(item.tooltip(into[key]))  # type: ignore[arg-type]
        for i, edge in enumerate(self.graph.edges):
            src, dst = self.nodes[edge.src], self.nodes[edge.dst]
            bends = (
                [] if self._placed_by_hand(edge.src, edge.dst) else [QPointF(*p) for p in layout.routes[i]]
            )
            wire = WireItem(
                edge, src.top_ports[edge.src_slot], dst.bottom_ports[edge.dst_slot], bends, self.downward
            )
            self.addItem(wire)
            self.wires.append(wire)
            self._wires_of[edge.src].append(wire)
            self._wires_of[edge.dst].append(wire)
        for item in self.items():  # type: ignore[assignment]
            if getattr(item, "key", None) in selected:
                item.setSelected(True)
        if not self.detailed:
            self._apply_detail()
        self._building = False
        self.setSceneRect(self.itemsBoundingRect().adjusted(-200, -200, 200, 200))
        self.rebuilt.emit()

    def _show_too_big(self) -> None:
        """A net past CANVAS_LIMIT layers: no boxes, a note in words; the other views work as usual."""
        self._building = True
        self.clear()
        self.graph = build(caffe_pb2.NetParameter(), self.phase, False)
        self.problems = []
        self.nodes, self.wires, self._wires_of = {}, [], defaultdict(list)
        note = self.addText(too_big_words(len(self.net.layer)))
        note.setDefaultTextColor(canvas_colours.text())
        note.setTextWidth(520)
        self._building = False
        self.setSceneRect(note.boundingRect().adjusted(-40, -40, 40, 40))
        self.rebuilt.emit()

    def _lay_out(self, sizes: dict[str, tuple[float, float]]) -> Layout:
        edges = []
        for e in self.graph.edges:
            src, dst = self.graph.nodes[e.src], self.graph.nodes[e.dst]
            src_dx = sizes[e.src][0] * ((e.src_slot + 1) / (len(src.tops) + 1) - 0.5)
            dst_dx = sizes[e.dst][0] * ((e.dst_slot + 1) / (len(dst.bottoms) + 1) - 0.5)
            edges.append(LayoutEdge(e.src, e.dst, src_dx, dst_dx, (e.src, e.src_slot)))
        key = (tuple(sizes.items()), tuple(edges), self.downward)
        held, nodes = self._layout.positions, set[Hashable](self.graph.nodes)
        typing = self.graph.dangling and set(held) == nodes  # a bottom names no blob yet (being typed)
        removed = set(held) > nodes and (self.phase, self.splits) == self._layout_view  # layers deleted
        if key != self._layout_key and (typing or removed):
            # The boxes stay put (a deleted middle layer leaves its place empty), wires go straight.
            positions = {k: p for k, p in held.items() if k in nodes}
            ranks = {k: r for k, r in self._layout.ranks.items() if k in nodes}
            return Layout(positions, [[] for _ in edges], ranks)
        if key != self._layout_key:  # an edit of settings alone keeps the layout
            self._layout = layered(
                list(self.graph.nodes),
                sizes,  # type: ignore[arg-type]
                edges,
                self.downward,
                style.RANK_GAP,
                style.NODE_GAP,
            )
            self._layout_key, self._layout_view = key, (self.phase, self.splits)
        return self._layout

    def _position(self, key: str, layout: Layout) -> QPointF:
        if key in self.manual and not self.splits:
            x, y = self.manual[key]
            return QPointF(x, y if self.downward else -y)
        return QPointF(*layout.positions[key])

    def _placed_by_hand(self, *keys: str) -> bool:
        return not self.splits and any(k in self.manual for k in keys)

    def entry_rect(self) -> QRectF | None:
        """The box of the first layer that reads no blob (where the data enters), in the scene."""
        sources = [item for item in self.nodes.values() if not item.node.bottoms]
        return sources[0].sceneBoundingRect() if sources else None

    def boxes_within(self, rect: QRectF) -> QRectF:
        """The bounds of the boxes whose centres lie in ``rect`` (empty when none)."""
        found = QRectF()
        for item in self.nodes.values():
            if rect.contains(item.pos()):
                found = (
                    found.united(item.sceneBoundingRect()) if not found.isNull() else item.sceneBoundingRect()
                )
        return found

    def relayout(self) -> None:
        """Forget the user's positions: the automatic layout for every box."""
        self.manual.clear()
        self.rebuild()

    def toggle_expanded(self, key: str) -> None:
        self.expanded.symmetric_difference_update({key})
        self.rebuild()
        self.expanded_toggled.emit()

    # ---- moving ---------------------------------------------------------------------------
    def boxes_dragged(self) -> None:
        """The user is dragging boxes: their wires follow (straight: the layout's bends no longer fit)."""
        for item in self.selectedItems():
            if isinstance(item, NodeItem):
                for wire in self._wires_of[item.key]:
                    wire.update_path(straight=True)
                self._moved.add(item.key)

    def mouseReleaseEvent(self, event: QGraphicsSceneMouseEvent) -> None:
        super().mouseReleaseEvent(event)
        if self._moved and not self.splits:
            for key in self._moved:
                if key in self.nodes:
                    pos = self.nodes[key].pos()
                    self.manual[key] = (pos.x(), pos.y() if self.downward else -pos.y())
            self._moved.clear()
            self.positions_changed.emit()
        self._moved.clear()

    def mouseDoubleClickEvent(self, event: QGraphicsSceneMouseEvent) -> None:
        """A double-click on a wire label asks to rename its blob. Labels take no single clicks (a
        press there selects or drags what lies beneath), so the scene, not the label, catches it."""
        label = self.label_at(event.scenePos()) if self.editable else None
        if label is not None and event.button() == Qt.MouseButton.LeftButton:
            event.accept()
            self.blob_rename_requested.emit(label.port.key, label.port.slot)
            return
        super().mouseDoubleClickEvent(event)

    def label_at(self, pos: QPointF) -> BlobLabel | None:
        for item in self.items(pos):
            if isinstance(item, BlobLabel) and item.isVisible():
                return item
            if isinstance(item, (NodeItem, PortItem)):
                return None  # a box or a port above the label: not the label's click
        return None

    def label_of(self, key: str, slot: int) -> BlobLabel | None:
        node = self.nodes.get(key)
        if node is None:
            return None
        return next((c for c in node.childItems() if isinstance(c, BlobLabel) and c.port.slot == slot), None)

    # ---- connecting -----------------------------------------------------------------------
    def target_at(self, source: PortItem, pos: QPointF) -> tuple[NodeItem, PortItem | None] | None:
        """What a connection dropped at ``pos`` would attach to: a port, or a box (a new bottom)."""
        for item in self.items(pos):
            if isinstance(item, PortItem):
                if accepts(source, item):
                    return item.node, item
                continue
            node = item if isinstance(item, NodeItem) else item.parentItem()
            if isinstance(node, NodeItem) and node is not source.node:
                if source.side == TOP or len(node.top_ports) == 1:
                    return node, None
                return None
        return None

    def highlight_targets(self, source: PortItem | None, pos: QPointF) -> None:
        hit = self.target_at(source, pos) if source is not None else None
        for node in self.nodes.values():
            for port in (*node.top_ports, *node.bottom_ports):
                hot = hit is not None and port is hit[1]
                if port.hot != hot:
                    port.hot = hot
                    port.update()

    def finish_connection(self, source: PortItem, node: NodeItem, port: PortItem | None) -> None:
        if source.side == TOP:
            self.connect_requested.emit(source.key, source.slot, node.key, port.slot if port else -1)
        else:
            self.connect_requested.emit(node.key, port.slot if port else 0, source.key, source.slot)

    # ---- selection ------------------------------------------------------------------------
    def selected_keys(self) -> list[str]:
        return [item.key for item in self.selectedItems() if hasattr(item, "key")]

    def selected_indices(self) -> list[int]:
        found = [getattr(item, "index", None) for item in self.selectedItems()]
        return sorted({i for i in found if i is not None})

    def select_indices(self, indices) -> None:
        """Select the boxes and bands of these document layers (and nothing else)."""
        wanted = {self.graph.keys_of_index.get(i) for i in indices}
        for item in self.items():
            if item.flags() & QGraphicsItem.GraphicsItemFlag.ItemIsSelectable and hasattr(item, "index"):
                selected = getattr(item, "key", None) in wanted
                if item.isSelected() != selected:
                    item.setSelected(selected)

    def item_of(self, key: str) -> QGraphicsItem | None:
        host = self.graph.host.get(key)
        node = self.nodes.get(host) if host else None
        if node is None or key == host:
            return node
        return next((b for b in node.band_items if b.key == key), node)

    # ---- drawing --------------------------------------------------------------------------
    def drawBackground(self, painter: QPainter, rect: QRectF) -> None:  # type: ignore[override]
        if painter.worldTransform().m11() < 0.6:
            painter.fillRect(rect, canvas_colours.background())
        else:
            painter.fillRect(rect, _grid_brush())

    def follow_palette(self) -> None:
        """The application palette changed: repaint the background and the wire labels (cached pixmaps)."""
        self.setBackgroundBrush(canvas_colours.background())
        for item in self.items():
            if isinstance(item, BlobLabel):
                item.update()
        self.update()

    def set_detail(self, detailed: bool) -> None:
        """Far out, ports, labels and bands are too small to see: hiding them keeps panning fast."""
        if detailed == self.detailed:
            return
        self.detailed = detailed
        self._apply_detail()

    def _apply_detail(self) -> None:
        for node in self.nodes.values():
            for child in node.childItems():
                child.setVisible(self.detailed != (child is node.far_name))  # far out: the name only


_GRID: dict[tuple[int, int], QBrush] = {}


def _grid_brush() -> QBrush:
    """A dot every 24 scene units, as a tiled texture (one fill per repaint, not thousands of dots)."""
    back, dots = canvas_colours.background(), canvas_colours.grid()
    key = (back.rgba(), dots.rgba())
    if key not in _GRID:
        tile = QPixmap(24, 24)
        tile.fill(back)
        painter = QPainter(tile)
        painter.setPen(QPen(dots, 1.6))
        painter.drawPoint(QPointF(0.8, 0.8))
        painter.end()
        _GRID[key] = QBrush(tile)
    return _GRID[key]


def too_big_words(layers: int) -> str:
    return (
        f"This net has {layers:,} layers: the canvas draws nets of up to {CANVAS_LIMIT:,}. "
        "The Prototxt tab, the Inspector and Train work as usual; `main.py shapes NET` lists every "
        "layer's shapes."
    )


def fits_in_a_row(ports, words: list[str]) -> bool:
    """True when each of ``words`` fits between its port and the next one."""
    xs = sorted(port.pos().x() for port in ports)
    gap = min((b - a for a, b in zip(xs, xs[1:])), default=0.0)
    return all(advance("small", w) + 16 <= gap for w in words[:-1])


def split_labels(layer: caffe_pb2.LayerParameter, ports: int) -> list[str]:
    """The short words for a Split's copies (``split_0``, ``split_1``... of one long blob name, whose
    shape is the same for all: shown once), or [] for any other layer."""
    if layer.type != "Split" or ports < 2 or len(layer.top) != ports:
        return []
    return [
        top.rsplit("_split_", 1)[-1].join(("split_", "")) if "_split_" in top else top for top in layer.top
    ]
