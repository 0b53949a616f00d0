"""Blob: shapes, canonical axes, legacy accessors, BlobProto round trips, moving between backends."""

from __future__ import annotations

import numpy as np
import pytest

from engine import backend
from engine.blob import Blob, proto_shape, proto_to_array
from proto import caffe_pb2


def test_shape_count_and_axes(xp):
    blob = Blob((2, 3, 4, 5), xp=xp)
    assert blob.num_axes == 4 and blob.count() == 120
    assert blob.count(1) == 60 and blob.count(1, 3) == 12 and blob.count(4) == 1
    assert blob.canonical_axis_index(-1) == 3 and blob.shape_at(-3) == 3
    with pytest.raises(ValueError, match="axis 4 out of range"):
        blob.canonical_axis_index(4)
    assert (blob.num, blob.channels, blob.height, blob.width) == (2, 3, 4, 5)
    flat = Blob((7,), xp=xp)
    assert (flat.num, flat.channels, flat.height, flat.width) == (7, 1, 1, 1)
    with pytest.raises(ValueError, match="legacy"):
        _ = Blob((1, 2, 3, 4, 5), xp=xp).num
    scalar = Blob((), xp=xp)
    assert scalar.count() == 1 and scalar.data.shape == ()


def test_reshape_keeps_values_only_when_unchanged(xp):
    blob = Blob((2, 3), xp=xp)
    blob.data[...] = 4
    blob.reshape(2, 3)
    assert float(blob.data.sum()) == 24
    blob.reshape((3, 2, 1))
    assert blob.shape == (3, 2, 1) and blob.diff.shape == (3, 2, 1)
    with pytest.raises(ValueError, match="negative"):
        blob.reshape((2, -1))


def test_blob_proto_round_trip_float_and_double(xp):
    values = np.arange(24, dtype=np.float32).reshape(2, 3, 4) / 7
    blob = Blob(values.shape, xp=xp)
    blob.data[...] = xp.asarray(values)
    blob.diff[...] = 1
    proto = blob.to_proto(write_diff=True)
    assert list(proto.shape.dim) == [2, 3, 4] and len(proto.diff) == 24
    back = Blob(xp=xp)
    back.from_proto(caffe_pb2.BlobProto.FromString(proto.SerializeToString()))
    np.testing.assert_array_equal(backend.to_host(back.data), values)
    np.testing.assert_array_equal(backend.to_host(back.diff), 1)
    double = Blob(values.shape, np.float64, xp)
    double.data[...] = xp.asarray(values.astype(np.float64))
    assert len(double.to_proto().double_data) == 24 and not double.to_proto().data


def test_legacy_4d_proto_shapes_and_shape_equals():
    legacy = caffe_pb2.BlobProto(num=1, channels=1, height=3, width=2, data=[1, 2, 3, 4, 5, 6])
    assert proto_shape(legacy) == (1, 1, 3, 2)
    assert proto_to_array(legacy).shape == (1, 1, 3, 2)
    ip_weights = Blob((3, 2))
    assert ip_weights.shape_equals(legacy)  # an old caffemodel's 1x1xNxK weights fit an N x K blob
    ip_weights.from_proto(legacy, reshape=False)
    np.testing.assert_array_equal(ip_weights.data, [[1, 2], [3, 4], [5, 6]])
    with pytest.raises(ValueError, match="shape mismatch"):
        Blob((2, 3)).from_proto(legacy, reshape=False)


def test_share_data_and_move_between_backends(xp):
    owner = Blob((2, 2), xp=np)
    owner.data[...] = 3
    other = Blob((4,), xp=np)
    other.share_data(owner)
    other.data[0] = 9
    assert owner.data[0, 0] == 9
    owner.to(xp)
    assert backend.get_array_module(owner.data) is xp
    np.testing.assert_array_equal(backend.to_host(owner.data), [[9, 3], [3, 3]])


def test_gpu_mode_without_a_gpu_is_a_clear_error():
    reason = backend.gpu_unavailable_reason()
    if reason is None:
        pytest.skip("a GPU is usable here; the refusal path cannot be exercised")
    with pytest.raises(backend.BackendError) as info:
        backend.set_mode_gpu()
    assert str(info.value) == reason and backend.mode() == "cpu"


def test_blob_proto_must_fill_the_blob_and_shapes_print_as_caffe_prints_them():
    from engine.blob import shape_string

    empty = caffe_pb2.BlobProto()
    empty.shape.dim.extend([2, 3])
    with pytest.raises(ValueError, match="0 values for shape 2 3 \\(6\\)"):
        Blob((1,)).from_proto(empty)  # Caffe: CHECK_EQ(count_, proto.data_size())
    assert shape_string(()) == "(1)" and shape_string((2, 3)) == "2 3 (6)"
