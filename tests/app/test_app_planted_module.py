"""#32 case 1: a downloaded folder's code never runs before the user trusts it. The folder holds a net
(an ImageData list naming a file that is no image, a Python layer) and ``olefile.py``: when Pillow fails
to identify the "image" it loads its plugins, two of which ``import olefile``. With the folder on
``sys.path`` that import found the planted file; untrusted, the folder never joins ``sys.path``.

Each run is a fresh process, as a user's is: Pillow loads its plugins once per process.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
NET = """name: "planted"
layer { name: "data" type: "ImageData" top: "data" top: "label"
  image_data_param { source: "list.txt" batch_size: 2 } }
layer { name: "ip" type: "InnerProduct" bottom: "data" top: "ip"
  inner_product_param { num_output: 3 weight_filler { type: "xavier" } } }
layer { name: "py" type: "Python" bottom: "ip" top: "y" python_param { module: "nosuchmodule" layer: "X" } }
"""
# Opens the window on the net with the trust prompt unanswered, selects layers (the filler draws), shows
# "How the net starts", lets every background job end, then quits. FORCE puts the folder on sys.path the
# way the views did before, to show the planted module is reachable at all.
SCRIPT = """
import sys, time
from pathlib import Path
from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QApplication, QMessageBox
QMessageBox.exec = lambda box: int(QMessageBox.StandardButton.Cancel.value)
folder = Path(sys.argv[1])
if sys.argv[2] == "FORCE":
    sys.path.append(str(folder))
from app.main_window import MainWindow
app = QApplication.instance() or QApplication([])
w = MainWindow(settings=QSettings(str(folder.parent / "settings.ini"), QSettings.Format.IniFormat))
w.resize(1280, 800)
w.show()
assert w.open_file(folder / "net.prototxt")
def spin(seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        app.processEvents()
        time.sleep(0.01)
spin(1)
names = [layer.name for layer in w.doc.net.layer]
for name in ("ip", "data"):
    w.selection.select(names.index(name))
    spin(0.5)
w.filler_dock.raise_()
spin(0.5)
w.net_start_dock.raise_()
spin(0.5)
fillers = w.filler_dock.widget()
for jobs in (fillers.build_jobs, fillers.preview_jobs, w.net_start_dock.widget().jobs):
    assert jobs.wait(60000)
spin(0.5)
print("opened", w.doc.net.name)
"""


def run_window(tmp_path: Path, mode: str) -> tuple[subprocess.CompletedProcess, Path]:
    folder = tmp_path / mode / "download"
    folder.mkdir(parents=True)
    marker = tmp_path / mode / "ran.txt"
    (folder / "net.prototxt").write_text(NET)
    (folder / "list.txt").write_text(f"{folder / 'olefile.py'} 0\n")  # a file that is no image
    (folder / "olefile.py").write_text(f"open({str(marker)!r}, 'a').write('planted code ran\\n')\n")
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(folder), mode],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    return done, marker


def test_an_untrusted_folder_runs_nothing_through_any_view(tmp_path):
    done, marker = run_window(tmp_path, "UNTRUSTED")
    assert done.returncode == 0 and "opened planted" in done.stdout, done.stderr[-2000:]
    assert not marker.exists()


def test_the_planted_module_is_reached_when_its_folder_is_on_sys_path(tmp_path):
    """The control: the same views with the folder on sys.path run the planted file (as they did)."""
    done, marker = run_window(tmp_path, "FORCE")
    assert done.returncode == 0, done.stderr[-2000:]
    assert marker.read_text().startswith("planted code ran")
