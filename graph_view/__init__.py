"""The node editor: the document's net drawn on a QGraphicsScene, edited by gestures that become
the document's undoable commands. It imports engine/ and proto/, never app/: it is handed the
document, a ``push(command)`` callable, the command classes and the shared selection.

``graph_view.editor.GraphEditor`` is the widget; ``graph_view.render`` draws without a window.
The Qt-free parts (``graph``, ``shapes``, ``flops``, ``validation``, ``layout``, ``edits``,
``sidecar``, ``summary``, ``style``) hold the facts; the rest only draws and reports gestures.
"""
