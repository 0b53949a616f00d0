"""Issue 31, case 4: the window at 1280x800 is not cramped. The right column's tab titles stay whole
even after a remembered layout squeezed the column's upper half, the Solver tab's fields get room,
the Splits view's read-only badge covers no box, and a layer added by double-click lands in view."""

from __future__ import annotations

from PySide6.QtCore import QRect, QSettings, Qt
from PySide6.QtWidgets import QScrollArea, QTabBar
from windows import open_window

from app.files import EXAMPLES
from app.main_window import MainWindow

LENET = EXAMPLES / "mnist" / "lenet_train_test.prototxt"


def column_bar(w: MainWindow) -> QTabBar:
    bars = [bar for bar in w.findChildren(QTabBar) if bar.parent() is w and bar.count() > 1]
    assert len(bars) == 1
    return bars[0]


def elided(bar: QTabBar) -> list[str]:
    """The tabs drawn shorter than their whole title needs (vertical tabs: along their height)."""
    return [
        bar.tabText(i) for i in range(bar.count()) if bar.tabRect(i).height() < bar.tabSizeHint(i).height()
    ]


def test_tab_titles_stay_whole_after_a_squeezed_layout_is_remembered(qtbot, tmp_path):
    settings = QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat)
    first = open_window(qtbot, LENET, settings=settings)
    qtbot.waitUntil(lambda: not elided(column_bar(first)))
    inspector = first.workbench.inspector_dock
    first.resizeDocks([first.editor_dock, inspector], [160, 600], Qt.Orientation.Vertical)
    qtbot.waitUntil(lambda: bool(elided(column_bar(first))))  # what the user's layout did to them
    first.workbench.closed()
    first.training.shutdown()
    first.close()

    again = open_window(qtbot, LENET, settings=settings)
    assert again.workbench.session is not None and again.workbench.session.restored
    qtbot.waitUntil(lambda: column_bar(again).height() > 0)
    qtbot.waitUntil(lambda: not elided(column_bar(again)), timeout=3000)
    assert again.workbench.inspector_dock.height() >= 150  # the inspector keeps a usable share
    again.training.shutdown()


def test_the_solver_tab_gives_its_fields_room(qtbot, lenet_window):
    w = lenet_window
    w.workbench.solver_dock.raise_()
    scroll = w.workbench.solver_panel.findChild(QScrollArea)
    qtbot.waitUntil(lambda: scroll.isVisible())
    # At least eight rows of fields (each ~28 px) below the learning-rate plot (it took 204 px before).
    qtbot.waitUntil(lambda: scroll.viewport().height() >= 240, timeout=2000)


def boxes_in_view(w: MainWindow) -> list[QRect]:
    view = w.graph.view
    origin = view.viewport().geometry().topLeft()  # the viewport inside the view's margins
    shown = []
    for item in w.graph.scene.nodes.values():
        rect = view.mapFromScene(item.sceneBoundingRect()).boundingRect().translated(origin)
        rect = rect.intersected(view.viewport().geometry())
        if not rect.isEmpty():
            shown.append(rect)
    return shown


def test_the_read_only_badge_covers_no_box_in_splits_and_test(qtbot, lenet_window):
    w = lenet_window
    w.graph.toolbar.splits_action.trigger()
    qtbot.mouseClick(
        w.graph.toolbar.findChild(type(w.graph.toolbar.splits), "phaseTest"), Qt.MouseButton.LeftButton
    )
    w.graph.sync()
    badge = w.graph.mode_note
    assert badge.isVisible() and "read-only" in badge.text()
    # The net (a row taller with its Splits) is framed again: its top row in view, below the badge.
    shown = w.graph.view.visible_scene_rect()
    assert shown.contains(w.graph.scene.itemsBoundingRect())
    boxes = boxes_in_view(w)
    assert len(boxes) == len(w.graph.scene.nodes)
    assert not [r for r in boxes if r.intersects(badge.geometry())]
    # Zoomed in and scrolled until the top row touches the canvas's top edge: still not under it.
    view = w.graph.view
    view.scale(2.0, 2.0)
    top = min(w.graph.scene.nodes.values(), key=lambda item: item.sceneBoundingRect().top())
    view.centerOn(top)
    bar, across = view.verticalScrollBar(), view.horizontalScrollBar()
    bar.setValue(bar.value() + view.mapFromScene(top.sceneBoundingRect().topLeft()).y() - 2)
    across.setValue(across.value() + view.mapFromScene(top.sceneBoundingRect().topLeft()).x() - 20)
    corner = view.mapFromScene(top.sceneBoundingRect().topLeft())
    assert abs(corner.y() - 2) <= 1 and corner.x() < badge.width() - 40  # where the badge sits, but for it
    assert not [r for r in boxes_in_view(w) if r.intersects(badge.geometry())]


def test_a_layer_added_by_double_click_lands_in_view(qtbot, lenet_window):
    w = lenet_window
    names = [layer.name for layer in w.doc.net.layer]
    w.selection.select(names.index("ip2"))
    view = w.graph.view  # the user zoomed in on the data layer: ip2 is far off screen
    view.scale(3.0, 3.0)
    view.centerOn(w.graph.scene.nodes[names[0]])
    assert not view.visible_scene_rect().intersects(w.graph.scene.nodes["ip2"].sceneBoundingRect())
    w.workbench.palette_dock.raise_()
    palette = w.workbench.palette
    palette.search.setText("InnerProduct")
    item = palette.best_match()
    assert item is not None and item.text(0).startswith("InnerProduct")
    tree = palette.tree
    tree.scrollToItem(item)
    at = tree.visualItemRect(item).center()
    qtbot.mouseClick(tree.viewport(), Qt.MouseButton.LeftButton, pos=at)
    qtbot.mouseDClick(tree.viewport(), Qt.MouseButton.LeftButton, pos=at)
    qtbot.waitUntil(lambda: len(w.doc.net.layer) == len(names) + 1)
    added = w.doc.net.layer[names.index("ip2") + 1].name
    qtbot.waitUntil(lambda: added in w.graph.scene.nodes)
    box = w.graph.scene.nodes[added]
    qtbot.waitUntil(lambda: w.graph.view.visible_scene_rect().contains(box.sceneBoundingRect()))


def test_the_curves_get_room_when_the_training_panel_opens(qtbot, lenet_window):
    w = lenet_window
    w.training.set_expanded(True)
    plots = w.training.plots
    qtbot.waitUntil(lambda: plots.isVisible())
    # The loss plot's drawing area over 100 px tall and the test outputs' over 65 (they were 79 and 59
    # at a third of the window, with their tick labels stacked).
    qtbot.waitUntil(lambda: plots.loss_plot.vb.height() >= 100, timeout=2000)
    assert plots.metric_plot.vb.height() >= 65
