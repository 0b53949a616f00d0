"""Caffe's ``compute_image_mean``: the mean image of an LMDB of Datums, as a BlobProto.

Sums are kept in float32 and added one image at a time, as Caffe adds into its BlobProto's float
data, then divided by the count in float32; each channel's mean value is the float32 running sum of
its pixels divided by their number. So the file and the printed values are Caffe's, rounding and
all. Encoded Datums are decoded as the Data layer decodes them (native colour).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np

from engine.data.datum import datum_to_array, parse_datum
from engine.data.errors import DataError
from engine.data.lmdb_source import LMDBSource
from proto import caffe_pb2

READ_AT_ONCE = 256


class MeanAccumulator:
    """Images (C, H, W) added one by one; all must hold as many values as the first."""

    def __init__(self) -> None:
        self.sum: np.ndarray | None = None
        self.count = 0

    def add(self, image: np.ndarray, where: str = "image") -> None:
        if self.sum is None:
            self.sum = np.zeros(image.shape, np.float32)
        elif image.size != self.sum.size:
            raise DataError(
                f"Incorrect data field size {image.size} at {where}: the first had {self.sum.size}"
            )
        self.sum += image.reshape(self.sum.shape)  # float32 adds, as Caffe's float sum
        self.count += 1

    def blob(self) -> caffe_pb2.BlobProto:
        """The mean as Caffe writes it: num 1 and the first image's channels, height and width."""
        if self.sum is None:
            raise DataError("no images to average")
        mean = self.sum / np.float32(self.count)
        channels, height, width = self.sum.shape
        blob = caffe_pb2.BlobProto(num=1, channels=channels, height=height, width=width)
        blob.data.extend(mean.ravel().tolist())
        return blob


def channel_means(blob: caffe_pb2.BlobProto) -> list[float]:
    """Caffe's ``mean_value`` of each channel: a float32 running sum over the channel's pixels."""
    values = np.asarray(blob.data, np.float32).reshape(blob.channels, -1)
    dim = values.shape[1]
    return [float(np.cumsum(row, dtype=np.float32)[-1] / np.float32(dim)) for row in values]


def datum_images(path: Path) -> Iterator[tuple[np.ndarray, bool, str]]:
    """(image, was encoded, key) of every record, in key order."""
    source = LMDBSource(path)
    try:
        for start in range(0, source.count, READ_AT_ONCE):
            for key, value in source.read(start, min(READ_AT_ONCE, source.count - start)):
                where = f"{path} record {key.decode('utf-8', 'backslashreplace')}"
                datum = parse_datum(value, where)
                yield datum_to_array(datum, where, lambda: None), datum.encoded, where
    finally:
        source.close()


def compute_image_mean(path: Path, log: Callable[[str], None]) -> caffe_pb2.BlobProto:
    """The mean of the LMDB at ``path``, logging Caffe's lines (``Processed N files.`` ...)."""
    mean = MeanAccumulator()
    for image, encoded, where in datum_images(path):
        if mean.count == 0:
            if encoded:
                log("Decoding Datum")
            log("Starting iteration")
        mean.add(image, where)
        if mean.count % 10000 == 0:
            log(f"Processed {mean.count} files.")
    if mean.count % 10000:
        log(f"Processed {mean.count} files.")
    return mean.blob()
