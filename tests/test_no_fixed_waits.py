"""No GUI test waits for a fixed time: ``qtbot.wait(ms)`` / ``QTest.qWait(ms)`` anywhere under tests/, and
``time.sleep`` in a GUI test, are the flakes of a loaded machine. Wait on the condition instead
(``qtbot.waitUntil``, ``qtbot.waitSignal``). A line that truly has no condition to wait on may say so with
``# fixed-wait: <reason>``; none does today."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent
GUI_FOLDERS = ("app", "graph_view", "e2e")
OPT_OUT = "# fixed-wait:"


def is_gui_test(relative: Path, source: str) -> bool:
    """Under tests/app, tests/graph_view or tests/e2e, or anywhere else driving widgets with qtbot."""
    return relative.parts[0] in GUI_FOLDERS or "qtbot" in source


def _callee(node: ast.Call) -> tuple[str, str] | None:
    """(object, method) for ``a.b(...)``, ("", name) for ``name(...)``, else None."""
    func = node.func
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
        return func.value.id, func.attr
    if isinstance(func, ast.Name):
        return "", func.id
    return None


def fixed_waits(path: Path, source: str, gui: bool) -> list[str]:
    """``file:line: call`` for each fixed-time wait in ``source`` (lines marked OPT_OUT are let be)."""
    lines = source.splitlines()
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source, str(path))):
        if not isinstance(node, ast.Call) or OPT_OUT in lines[node.lineno - 1]:
            continue
        callee = _callee(node)
        timed = callee in {("qtbot", "wait"), ("QTest", "qWait"), ("", "qWait")}
        slept = gui and callee in {("time", "sleep"), ("", "sleep")}
        if timed or slept:
            found.append((node.lineno, f"{path}:{node.lineno}: {lines[node.lineno - 1].strip()}"))
    return [text for _, text in sorted(found)]


def scan(root: Path, skip: Path | None = None) -> list[str]:
    found = []
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root)
        if path == skip or relative.parts[0] == "data":
            continue
        source = path.read_text(encoding="utf-8")
        found += fixed_waits(path.relative_to(root.parent), source, is_gui_test(relative, source))
    return found


def test_no_gui_test_waits_for_a_fixed_time():
    found = scan(TESTS, skip=Path(__file__).resolve())
    assert not found, "fixed waits (wait on a condition instead):\n" + "\n".join(found)


def test_the_scan_finds_each_kind_of_fixed_wait(tmp_path):
    """The guard can fail: each kind is named with its line, the marked line and condition waits are not."""
    root = tmp_path / "tests"
    (root / "app").mkdir(parents=True)
    (root / "engine").mkdir()
    (root / "app" / "test_a.py").write_text(
        "import time\n"
        "from time import sleep\n"
        "def test_a(qtbot):\n"
        "    qtbot.wait(20)\n"
        "    time.sleep(0.1)\n"
        "    sleep(1)\n"
        "    QTest.qWait(5)\n"
        "    qtbot.waitUntil(lambda: True, timeout=10_000)\n"
        "    qtbot.wait(50)  # fixed-wait: nothing to wait on\n"
    )
    (root / "engine" / "test_b.py").write_text("import time\ndef test_b():\n    time.sleep(0.01)\n")
    (root / "engine" / "test_c.py").write_text("def test_c(qtbot):\n    qtbot.wait(10)\n")
    found = scan(root)
    assert [line.split(": ")[0] for line in found] == [
        "tests/app/test_a.py:4",
        "tests/app/test_a.py:5",
        "tests/app/test_a.py:6",
        "tests/app/test_a.py:7",
        "tests/engine/test_c.py:2",  # qtbot.wait anywhere; time.sleep only in GUI tests (not test_b)
    ]
    assert found[0].endswith("qtbot.wait(20)")
