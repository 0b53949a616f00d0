"""ImageData's list file: one ``path label`` per line, read in order or reshuffled every epoch.

As Caffe: the label is what follows the last space (so paths may hold spaces), ``root_folder`` is
glued in front of every path as a string. Record ``i`` of the stream is item ``i % n`` of epoch
``i // n``'s order; with ``shuffle`` each epoch's order is a permutation drawn from (seed, epoch),
so any record can be found again without replaying the ones before it. A label must fit Caffe's
``int`` (32 bits); the list is read in one linear pass.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from engine.data.errors import DataError
from engine.data.images import read_image, resize_bilinear
from engine.data.paths import DEFAULT, DataPaths
from proto.inputs import read_regular_text

INT_MAX = 2**31 - 1


LIST_FORMAT = (
    "a list file is a text file with one image per line, its path (under root_folder) and its "
    "integer label: 'cats/001.jpg 0'; `main.py dataset FOLDER OUT` writes one from class folders"
)


def read_list(path: Path) -> list[tuple[str, int]]:
    if Path(path).is_dir():
        raise DataError(f"the image list {path} is a folder, not a list file: {LIST_FORMAT}")
    try:
        text = read_regular_text(path)
    except OSError as exc:
        raise DataError(f"cannot open the image list {path}: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise DataError(f"the image list {path} is not a text file: {exc}") from exc
    lines = []
    for number, line in enumerate(text.splitlines(), 1):
        line = line.rstrip()
        if not line.strip():
            continue
        name, _, label = line.rpartition(" ")
        try:
            value = int(label)
        except ValueError:
            raise DataError(f"{path}:{number}: expected 'path label', got {line!r}") from None
        if not name:
            raise DataError(f"{path}:{number}: expected 'path label', got {line!r}")
        if not -INT_MAX - 1 <= value <= INT_MAX:
            raise DataError(f"{path}:{number}: the label {label} does not fit in 32 bits (Caffe's int)")
        lines.append((name, value))
    if not lines:
        raise DataError(f"the image list {path} is empty")
    return lines


class ImageList:
    def __init__(
        self,
        lines: list[tuple[str, int]],
        root_folder: str,
        shuffle: bool,
        seed: int,
        size: tuple[int, int],
        color: bool,
        data_paths: DataPaths = DEFAULT,
    ) -> None:
        self.lines = lines
        self.data_paths = data_paths
        self.root_folder = root_folder
        self.shuffle = shuffle
        self.seed = seed
        self.size = size  # (new_height, new_width); (0, 0) keeps each image's own size
        self.mode = "color" if color else "gray"
        self._epoch = -1
        self._order = np.arange(len(lines))

    def order(self, epoch: int) -> np.ndarray:
        if self.shuffle and epoch != self._epoch:
            self._order = np.random.default_rng([self.seed, epoch]).permutation(len(self.lines))
            self._epoch = epoch
        return self._order

    def read(self, start: int, count: int) -> tuple[list[np.ndarray], np.ndarray]:
        """The images (C, H, W uint8) and labels of records ``start .. start + count - 1``."""
        images, labels = [], np.empty(count, np.int64)
        for k in range(count):
            epoch, index = divmod(start + k, len(self.lines))
            name, labels[k] = self.lines[self.order(epoch)[index]]
            images.append(self.load(name))
        return images, labels

    def load(self, name: str) -> np.ndarray:
        image = read_image(self.data_paths.resolve(self.root_folder + name), self.mode)
        if self.size[0] > 0:
            image = resize_bilinear(image, *self.size)
        return image
