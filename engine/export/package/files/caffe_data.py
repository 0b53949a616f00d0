"""Caffe's data layers as torch Datasets of whole batches, each process reading its own.

Data (LMDB of Datum), HDF5Data (a list of .h5 files) and ImageData (a list of "path label" lines)
read their records in order and start again at the end, as Caffe's readers do. Batch ``i`` of
process ``rank`` out of ``world`` holds records (i * world + rank) * batch_size onwards, so the N
processes together read N * batch_size new records per iteration, as Caffe's multi-GPU training
does. Caffe's DataTransformer runs on every item: a random mirror (TRAIN and TEST), a crop_size
window (random in TRAIN, centred in TEST), (x - mean) * scale with the mean of a mean_file or
mean_value(s), in float32. Random crops and mirrors come from a generator seeded by (seed, batch).
"""

from __future__ import annotations

import io
import os
from typing import Any

import caffe_pb2
import numpy as np
import torch
from caffe_files import blob_array
from torch.utils.data import Dataset

TRAIN = 0


def resolve(path: str, roots: list[str]) -> str:
    """``path`` as given if it exists, else under the first of ``roots`` where it does."""
    if os.path.isabs(path) or os.path.exists(path):
        return path
    for root in roots:
        for candidate in (os.path.join(root, path), os.path.join(root, os.path.basename(path))):
            if os.path.exists(candidate):
                return candidate
    return path


class Transformer:
    def __init__(self, p: Any, phase: int, roots: list[str]) -> None:
        self.p, self.phase = p, phase
        self.scale, self.crop = np.float32(p.scale), int(p.crop_size)
        self.mean = None
        if p.HasField("mean_file"):
            blob = caffe_pb2.BlobProto()
            with open(resolve(p.mean_file, roots), "rb") as f:
                blob.ParseFromString(f.read())
            dims = tuple(blob.shape.dim) or (blob.num, blob.channels, blob.height, blob.width)
            self.mean = blob_array(blob).reshape((-1, *dims[-3:]))[0]
        self.mean_values = np.asarray(p.mean_value, np.float32)

    def __call__(self, x: np.ndarray, rng: np.random.Generator | None) -> np.ndarray:
        n, c, h, w = x.shape
        ch, cw = (self.crop, self.crop) if self.crop else (h, w)
        mirror = (
            rng.integers(0, 2, n).astype(bool) if self.p.mirror and rng is not None else np.zeros(n, bool)
        )
        if self.crop and self.phase == TRAIN and rng is not None:
            h_off, w_off = rng.integers(0, h - ch + 1, n), rng.integers(0, w - cw + 1, n)
        else:
            h_off, w_off = np.full(n, (h - ch) // 2), np.full(n, (w - cw) // 2)
        rows = h_off[:, None] + np.arange(ch)
        cols = w_off[:, None] + np.arange(cw)
        cols = np.where(mirror[:, None], cols[:, ::-1], cols)
        where = (np.arange(c)[None, :, None, None], rows[:, None, :, None], cols[:, None, None, :])
        out = x[(np.arange(n)[:, None, None, None], *where)].astype(np.float32)
        if self.mean is not None:
            out -= self.mean[where]
        elif self.mean_values.size:
            out -= self.mean_values[:, None, None] if self.mean_values.size > 1 else self.mean_values[0]
        if self.scale != 1:
            out *= self.scale
        return out

    def needs_random(self) -> bool:
        return bool(self.p.mirror or (self.phase == TRAIN and self.crop))


def decode(data: bytes, color: bool | None) -> np.ndarray:
    """An encoded image as Caffe reads it: (C, H, W) uint8, BGR (or one gray channel); with neither
    force_color nor force_gray (``color`` None) unchanged, as cv::imdecode(data, -1): an image with
    alpha (a PNG's transparency chunk too) keeps it, BGRA."""
    from PIL import Image

    opened = Image.open(io.BytesIO(data))
    alpha = opened.mode in ("RGBA", "LA", "PA") or (
        opened.mode in ("RGB", "P") and "transparency" in opened.info
    )
    if color is None and alpha:
        array = np.asarray(opened.convert("RGBA"), np.uint8)
        return array[:, :, [2, 1, 0, 3]].transpose(2, 0, 1).copy()
    if color is None:
        color = opened.mode not in ("L", "I;16", "1")
    if not color:
        return _gray(opened)[None].copy()
    array = np.asarray(opened.convert("RGB"), np.uint8)
    return array[:, :, ::-1].transpose(2, 0, 1).copy()


def _gray(opened: Any) -> np.ndarray:
    """A colour image made gray as OpenCV's decoder for its format does it (as the engine reads
    it): libjpeg's luma, libpng's truncated rgb_to_gray, else OpenCV's 14-bit BGR2Gray."""
    if opened.mode in ("L", "1") or opened.mode.startswith("I"):
        return np.asarray(opened.convert("L"), np.uint8)
    if opened.format == "JPEG":
        opened.draft("L", opened.size)
        return np.asarray(opened.convert("L"), np.uint8)
    r, g, b = np.asarray(opened.convert("RGB"), np.int32).transpose(2, 0, 1)
    if opened.format == "PNG":
        return ((9797 * r + 19234 * g + 3737 * b) >> 15).astype(np.uint8)
    return ((4899 * r + 9617 * g + 1868 * b + 8192) >> 14).astype(np.uint8)


class Records:
    """Record ``i`` (any i: the source wraps around) as an (image (C, H, W), label) pair."""

    def __len__(self) -> int:
        raise NotImplementedError

    def read(self, index: int) -> tuple[np.ndarray, ...]:
        raise NotImplementedError


class LMDBRecords(Records):
    def __init__(self, path: str, color: bool | None) -> None:
        import lmdb

        try:  # with the reader lock, as Caffe: a process still writing it never reuses pages read here
            self.env = lmdb.open(path, readonly=True, lock=True, readahead=False, max_readers=64)
        except lmdb.Error:  # a folder where no lock file can be made: no writer is at work there
            self.env = lmdb.open(path, readonly=True, lock=False, readahead=False, max_readers=64)
        with self.env.begin() as txn:
            self.keys = [key for key, _ in txn.cursor()]
        self.color = color

    def __len__(self) -> int:
        return len(self.keys)

    def read(self, index: int) -> tuple[np.ndarray, ...]:
        with self.env.begin() as txn:
            datum = caffe_pb2.Datum.FromString(txn.get(self.keys[index % len(self.keys)]))
        if datum.encoded:
            image = decode(datum.data, self.color)
        elif datum.data:
            image = np.frombuffer(datum.data, np.uint8).reshape(datum.channels, datum.height, datum.width)
        else:
            image = np.asarray(datum.float_data, np.float32).reshape(
                datum.channels, datum.height, datum.width
            )
        return image, np.asarray(datum.label)


class ImageListRecords(Records):
    def __init__(self, p: Any, roots: list[str]) -> None:
        with open(resolve(p.source, roots), encoding="utf-8") as f:
            lines = [line.rstrip() for line in f if line.strip()]
        self.items = [(name, int(label)) for name, _, label in (line.rpartition(" ") for line in lines)]
        self.p, self.roots = p, roots

    def __len__(self) -> int:
        return len(self.items)

    def read(self, index: int) -> tuple[np.ndarray, ...]:
        from PIL import Image

        epoch, i = divmod(index, len(self.items))
        order = np.random.default_rng([0, epoch]).permutation(len(self.items)) if self.p.shuffle else None
        name, label = self.items[order[i] if order is not None else i]
        with open(resolve(self.p.root_folder + name, self.roots), "rb") as f:
            data = f.read()
        if self.p.new_height > 0:
            pixels = decode(data, self.p.is_color)
            opened = Image.fromarray(pixels[0] if len(pixels) == 1 else pixels[::-1].transpose(1, 2, 0))
            image = opened.resize((self.p.new_width, self.p.new_height), Image.Resampling.BILINEAR)
            buffer = io.BytesIO()
            image.save(buffer, format="PNG")
            data = buffer.getvalue()
        return decode(data, self.p.is_color), np.asarray(label)


class HDF5Records(Records):
    """Rows of the listed .h5 files, one dataset per top, file after file."""

    def __init__(self, source: str, tops: list[str], roots: list[str]) -> None:
        import h5py

        with open(resolve(source, roots), encoding="utf-8") as f:
            files = [resolve(line.strip(), [os.path.dirname(source), *roots]) for line in f if line.strip()]
        self.columns: list[list[np.ndarray]] = [[] for _ in tops]
        for name in files:
            with h5py.File(name, "r") as h5:
                for k, top in enumerate(tops):
                    self.columns[k].append(np.asarray(h5[top], np.float32))
        self.rows = [np.concatenate(c) for c in self.columns]

    def __len__(self) -> int:
        return len(self.rows[0])

    def read(self, index: int) -> tuple[np.ndarray, ...]:
        return tuple(r[index % len(self.rows[0])] for r in self.rows)


class DataLayerBatches(Dataset):
    """Batch ``i`` of one data layer for process ``rank`` of ``world``: a tuple of float32 tensors,
    one per top of the layer."""

    def __init__(
        self, layer: Any, phase: int, rank: int, world: int, roots: list[str], seed: int = 0
    ) -> None:
        self.layer, self.rank, self.world, self.seed = layer, rank, world, seed
        self.transformer = Transformer(layer.transform_param, phase, roots)
        color = (
            True if layer.transform_param.force_color else False if layer.transform_param.force_gray else None
        )
        if layer.type == "Data":
            self.batch_size = layer.data_param.batch_size
            self.records: Records = LMDBRecords(resolve(layer.data_param.source, roots), color)
        elif layer.type == "ImageData":
            self.batch_size = layer.image_data_param.batch_size
            self.records = ImageListRecords(layer.image_data_param, roots)
        elif layer.type == "HDF5Data":
            self.batch_size = layer.hdf5_data_param.batch_size
            self.records = HDF5Records(layer.hdf5_data_param.source, list(layer.top), roots)
        else:
            raise ValueError(
                f"layer '{layer.name}': the package reads Data, ImageData and HDF5Data, not {layer.type}"
            )

    def __len__(self) -> int:
        return 2**62  # the sources wrap around: any batch can be asked for

    def __getitem__(self, index: int) -> tuple[torch.Tensor, ...]:
        start = (index * self.world + self.rank) * self.batch_size
        items = [self.records.read(start + k) for k in range(self.batch_size)]
        if self.layer.type == "HDF5Data":  # no transformation, as Caffe's HDF5Data
            return tuple(
                torch.from_numpy(np.stack([item[k] for item in items])) for k in range(len(items[0]))
            )
        rng = np.random.default_rng([self.seed, index]) if self.transformer.needs_random() else None
        data = self.transformer(np.stack([item[0] for item in items]), rng)
        labels = np.array([item[1] for item in items], np.float32)
        out = (torch.from_numpy(data), torch.from_numpy(labels))
        return out[: len(self.layer.top)]
