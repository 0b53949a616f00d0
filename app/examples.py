"""The bundled examples (resources/examples) for File > New from Example.

Qt-free. Each net comes with the one-line description from the examples' README. Opening an
example starts an *untitled* document (so Save asks where, and the bundled file stays as it
is); a solver example brings its net, and a net that an example solver trains brings that
solver along, both untitled.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from app import netio
from app.document import Document
from app.files import EXAMPLES, open_path, solver_net_path

_ROW = re.compile(r"^\|\s*`([^`]+)`\s*\|\s*(.+?)\s*\|\s*$")
_TITLES = {
    "mnist/lenet_train_test.prototxt": "LeNet (MNIST, train + test)",
    "mnist/lenet.prototxt": "LeNet (deploy)",
    "mlp.prototxt": "MLP on DummyData",
    "caffenet.prototxt": "CaffeNet (AlexNet)",
    "inception.prototxt": "GoogLeNet inception",
    "resnet.prototxt": "ResNet-18",
    "fcn.prototxt": "FCN-32s (toy)",
    "siamese.prototxt": "Siamese (shared weights)",
    "legacy/lenet_v1.prototxt": "LeNet, legacy V1 format",
}


@dataclass(frozen=True)
class Example:
    path: Path
    title: str
    description: str

    @property
    def relative(self) -> str:
        return self.path.relative_to(EXAMPLES).as_posix()


def _descriptions(folder: Path) -> dict[str, str]:
    try:
        lines = (folder / "README.md").read_text(encoding="utf-8").splitlines()
    except OSError:
        return {}
    return {m.group(1): m.group(2) for m in map(_ROW.match, lines) if m}


def examples(folder: Path = EXAMPLES) -> list[Example]:
    """The example nets (not solvers), in the order the README lists them, others after."""
    if not folder.is_dir():
        return []
    described = _descriptions(folder)
    nets = [p for p in folder.rglob("*.prototxt") if "solver" not in p.name.lower()]
    order = {name: i for i, name in enumerate(described)}
    nets.sort(key=lambda p: (order.get(p.relative_to(folder).as_posix(), len(order)), p.as_posix()))
    result = []
    for path in nets:
        relative = path.relative_to(folder).as_posix()
        title = _TITLES.get(relative) or path.stem.replace("_", " ")
        result.append(Example(path, title, described.get(relative, "")))
    return result


def solver_for(net_path: Path, folder: Path = EXAMPLES) -> Path | None:
    """An example solver that trains ``net_path``, if there is one."""
    for candidate in sorted(folder.rglob("*solver*.prototxt")):
        try:
            solver, _ = netio.load_solver_text(netio.read_file(candidate), candidate)
        except Exception:
            continue
        named = solver_net_path(solver, candidate)
        if named is not None and os.path.abspath(named) == os.path.abspath(net_path):
            return candidate
    return None


def open_example(doc: Document, path: Path) -> list[str]:
    """Load the example at ``path`` (and its solver) as an untitled copy ("LeNet (example)");
    returns what opening it had to say (the solver that came with it)."""
    return open_path(doc, path).notices
