"""A folded section's summary in the inspector sits beside its title, never under the reset button,
is cut with "…" when long and says itself whole on hover; an open section shows no summary (its
fields say it). This was the "xa≣vi" of weight_filler's header."""

from __future__ import annotations

from PySide6.QtCore import Qt

from app.forms.group import Group

LONG = "lr_mult 1.0, decay_mult 1.0, name conv1_w, share_mode STRICT"


def test_a_long_summary_is_cut_beside_the_reset_button_and_whole_on_hover(qtbot):
    group = Group("weight_filler", expanded=False, clearable=True)
    qtbot.addWidget(group)
    group.set_summary(LONG)
    group.resize(260, 40)
    group.show()
    qtbot.waitExposed(group)
    summary, reset = group.summary, group.clear_button
    qtbot.waitUntil(lambda: summary.isVisible() and summary.width() > 0)
    assert summary.geometry().right() < reset.geometry().left()
    assert summary.text() == LONG and summary.toolTip() == LONG  # cut on screen, whole on hover
    group.resize(900, 40)
    qtbot.waitUntil(lambda: summary.toolTip() == "")  # room for all of it: nothing to say on hover
    qtbot.mouseClick(group.header, Qt.MouseButton.LeftButton)
    assert group.expanded and not summary.isVisible()
