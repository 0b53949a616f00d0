"""A Caffe Datum record as a (C, H, W) array: raw uint8 ``data``, ``float_data``, or an encoded image."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from google.protobuf.message import DecodeError

from engine.data.errors import DataError
from engine.data.images import decode_image
from proto import caffe_pb2


def parse_datum(value: bytes, where: str) -> caffe_pb2.Datum:
    try:
        return caffe_pb2.Datum.FromString(value)
    except DecodeError as exc:
        raise DataError(f"{where} is not a Datum (corrupt record?): {exc}") from exc


def datum_to_array(datum: caffe_pb2.Datum, where: str, decode_mode: Callable[[], str | None]) -> np.ndarray:
    """uint8 for ``data`` and encoded images, float32 for ``float_data``; ``decode_mode`` is asked
    only when the record is encoded (so force_color and force_gray together only fail then)."""
    if datum.encoded:
        return decode_image(datum.data, decode_mode(), where)
    shape = (datum.channels, datum.height, datum.width)
    size = shape[0] * shape[1] * shape[2]
    if datum.channels <= 0 or size <= 0:
        raise DataError(f"{where}: a Datum of shape {shape} holds no pixels")
    if datum.data:
        if len(datum.data) != size:
            raise DataError(f"{where}: {len(datum.data)} bytes of data for a {shape} Datum")
        return np.frombuffer(datum.data, np.uint8).reshape(shape)
    if len(datum.float_data) != size:
        raise DataError(f"{where}: {len(datum.float_data)} float_data values for a {shape} Datum")
    return np.asarray(datum.float_data, np.float32).reshape(shape)
