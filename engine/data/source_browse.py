"""A data layer's source looked at rather than trained on: a Data layer's LMDB, an ImageData image
list or an HDF5Data file list, each as a ``Browsed``: the label of every record, the first record's
shape, and any records by index, read as the layer reads them (an LMDB's Datums decoded as the
Data layer does, a list's images decoded and resized as ImageData does, HDF5 rows as stored).

Only labels are read for the whole source; images are read a page at a time.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

import numpy as np

from engine.data.errors import DataError
from engine.data.lmdb_browse import Labelled
from engine.data.paths import DEFAULT, DataPaths
from proto import caffe_pb2

Reader = Callable[[list[int]], list[tuple[np.ndarray, int]]]


@dataclasses.dataclass
class Browsed(Labelled):
    kind: str  # "LMDB", "image list", "HDF5"
    path: Path
    labels: np.ndarray  # record i's label
    shape: tuple[int, ...]  # the first record's (C, H, W); () when it cannot be read
    note: str  # "encoded", or why the first record could not be read
    read: Reader  # records by index, in the order asked: (image (C, H, W), label)


def browse_lmdb(path: Path) -> Browsed:
    from engine.data.lmdb_browse import read_records, summarize

    s = summarize(path)
    return Browsed(
        "LMDB", path, s.labels, s.shape, "encoded" if s.encoded else "", lambda i: read_records(path, i)
    )


def browse_image_list(
    path: Path,
    root_folder: str = "",
    color: bool = True,
    size: tuple[int, int] = (0, 0),
    data_paths: DataPaths = DEFAULT,
) -> Browsed:
    from engine.data.image_list import ImageList, read_list

    lines = read_list(path)
    images = ImageList(lines, root_folder, False, 0, size, color, data_paths)
    labels = np.array([label for _, label in lines], np.int64)

    def read(indices: list[int]) -> list[tuple[np.ndarray, int]]:
        out = []
        for index in indices:
            name, label = lines[index]
            try:
                out.append((images.load(name), label))
            except DataError:  # shown as an empty tile; the first record's problem is said above
                out.append((np.zeros((1, 8, 8), np.uint8), label))
        return out

    shape, note = (), ""
    try:
        shape = images.load(lines[0][0]).shape
    except DataError as exc:
        note = str(exc)
    return Browsed("image list", path, labels, shape, note, read)


def browse_hdf5(path: Path, tops: list[str], data_paths: DataPaths = DEFAULT) -> Browsed:
    """``tops``: the layer's tops, the first the data, a second (if any) the label, as HDF5Data names them."""
    from engine.data.hdf5_source import HDF5Files, read_file_list

    files = HDF5Files(read_file_list(path, data_paths), tops[:2], False, 0, np.dtype(np.float32))
    labels = np.zeros(files.total, np.int64)
    note = ""
    if len(tops) > 1:
        if int(np.prod(files.row_shapes[1])) == 1:
            labels = np.concatenate([_column(files, f, tops[1]) for f in files.files]).astype(np.int64)
        else:
            note = f"{tops[1]} rows of shape {files.row_shapes[1]}: not class labels"

    def read(indices: list[int]) -> list[tuple[np.ndarray, int]]:
        return [(_as_image(files.read(i, 1)[0][0]), int(labels[i])) for i in indices]

    return Browsed("HDF5", path, labels, _image_shape(files.row_shapes[0]), note, read)


def _column(files, path: Path, name: str) -> np.ndarray:
    with files._open(path) as f:
        return np.asarray(files._dataset(f, path, name)[()]).reshape(-1)


def _image_shape(row: tuple[int, ...]) -> tuple[int, ...]:
    """A row's shape as (C, H, W): (H, W) -> one channel, (D,) -> a 1 x D strip, more axes folded
    into C (from the shape alone: a dataset may declare far more than it holds)."""
    if len(row) <= 1:
        return (1, 1, row[0] if row else 1)
    if len(row) == 2:
        return (1, *row)
    return (int(np.prod(row[:-2])), *row[-2:])


def _as_image(row: np.ndarray) -> np.ndarray:
    return row.reshape(_image_shape(row.shape))


def browse_layer(layer: caffe_pb2.LayerParameter, data_paths: DataPaths = DEFAULT) -> Browsed:
    """What a Data (LMDB), ImageData or HDF5Data layer's source holds; a DataError naming the layer
    for another layer or a source that cannot be read. Relative names are looked for by
    ``data_paths``, as a run of the net looks for them (``DataPaths.beside`` the net's files)."""

    def where(name: str) -> Path:
        found = data_paths.resolve(name)
        if not found.exists():
            raise DataError(f"layer '{layer.name}' ({layer.type}): its source {name} is not here")
        return found

    try:
        if layer.type == "Data":
            if layer.data_param.backend != caffe_pb2.DataParameter.LMDB:
                raise DataError(f"layer '{layer.name}': only an LMDB source can be viewed")
            return browse_lmdb(where(layer.data_param.source))
        if layer.type == "ImageData":
            p = layer.image_data_param
            size = (p.new_height, p.new_width) if p.new_height > 0 and p.new_width > 0 else (0, 0)
            source = where(p.source)
            problem = data_paths.folder_problem(p.root_folder)
            if problem:
                raise DataError(f"layer '{layer.name}' ({layer.type}): {problem}")
            return browse_image_list(source, p.root_folder, p.is_color, size, data_paths)
        if layer.type == "HDF5Data":
            return browse_hdf5(where(layer.hdf5_data_param.source), list(layer.top), data_paths)
    except DataError as exc:
        text = str(exc)
        raise DataError(text if text.startswith("layer '") else f"layer '{layer.name}': {text}") from None
    raise DataError(f"layer '{layer.name}' ({layer.type}) has no source to view (Data, ImageData, HDF5Data)")
