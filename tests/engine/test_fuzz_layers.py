"""Property tests: no parameter value or blob shape a user can write crashes a layer.

For every registered layer type a small net is drawn: an Input layer giving the bottoms random
small shapes (0-size dims, 1-axis and 5-axis blobs included), then the layer with random values
in its ``*_param`` messages, drawn from the schema's own field descriptors (ints at 0, negative
and huge; floats at 0, negative, nan, inf; every enum value; repeated fields of 0..4 entries).
Built in TRAIN or TEST, run forward and backward, the net must either work or raise an engine
error whose message names a layer: what Caffe answers with a CHECK failure, never a
ZeroDivisionError, IndexError, numpy ValueError or an attempt to allocate terabytes.

A net whose blobs would pass ~1e6 values is refused by lowering the engine's own limit on blob
sizes for these tests, so the engine's refusal is what keeps them small.
"""

from __future__ import annotations

import math
import os
import traceback
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from google.protobuf import text_format
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import engine.blob
from engine.errors import EngineError, NetError
from engine.fillers import filler_types
from engine.layers import layer_class, layer_types
from engine.net import Net
from proto import caffe_pb2

SMALL_LIMIT = 10**6  # the blob size the tests allow: the engine refuses more with its own error
LAYER = "fuzzed"
INPUT = "feed"

# FUZZ_EXAMPLES=500 runs a longer search; the default keeps both fuzz files well under 20 s.
FUZZ_SETTINGS = settings(
    max_examples=int(os.environ.get("FUZZ_EXAMPLES", "20")),
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=list(HealthCheck),
)

_PARAM_FIELDS = [f.name for f in caffe_pb2.LayerParameter.DESCRIPTOR.fields if f.name.endswith("_param")]
_EXTRA_PARAMS = {
    "Deconvolution": ["convolution_param"],
    "Im2col": ["convolution_param"],
    "SoftmaxWithLoss": ["softmax_param"],
    "LSTM": ["recurrent_param"],
    "RNN": ["recurrent_param"],
}
_DATA_LAYERS = {"Data", "ImageData", "WindowData", "MemoryData", "HDF5Data"}


def params_of(layer_type: str) -> list[str]:
    """The ``*_param`` messages a layer type reads: its own (by name), plus the shared ones."""
    key = layer_type.lower()
    own = [f for f in _PARAM_FIELDS if f[: -len("_param")].replace("_", "") == key]
    extra = list(_EXTRA_PARAMS.get(layer_type, []))
    if layer_type.endswith("Loss"):
        extra.append("loss_param")
    if layer_type in _DATA_LAYERS:
        extra.append("transform_param")
    return own + extra


# --- values drawn from field descriptors ------------------------------------------------------
_INT_SPECIAL = {
    FieldDescriptor.TYPE_INT32: [-(2**31), -1, 2**31 - 1],
    FieldDescriptor.TYPE_SINT32: [-(2**31), -1, 2**31 - 1],
    FieldDescriptor.TYPE_INT64: [-(2**63), -1, 2**40, 2**63 - 1],
    FieldDescriptor.TYPE_UINT32: [2**31, 2**32 - 1],
    FieldDescriptor.TYPE_UINT64: [2**40, 2**64 - 1],
}
_UNSIGNED = {FieldDescriptor.TYPE_UINT32, FieldDescriptor.TYPE_UINT64}
_FLOATS = [0.0, 1.0, -1.0, 0.5, 2.0, 1e-30, -1e30, 1e30, math.nan, math.inf, -math.inf]
_STRINGS = ["", "constant", "gaussian", "xavier", "msra", "uniform", "bogus", "x"]
_FILE_FIELDS = {"source", "file_name", "root_folder", "mean_file", "module", "layer", "param_str"}


def field_value(field: FieldDescriptor, depth: int, tmp: str) -> st.SearchStrategy[Any]:
    t = field.type
    if t == FieldDescriptor.TYPE_BOOL:
        return st.booleans()
    if t == FieldDescriptor.TYPE_ENUM:
        return st.sampled_from([v.number for v in field.enum_type.values])
    if t in (FieldDescriptor.TYPE_FLOAT, FieldDescriptor.TYPE_DOUBLE):
        return st.floats(0.125, 2, width=32) | st.floats(-3, 3, width=32) | st.sampled_from(_FLOATS)
    if t == FieldDescriptor.TYPE_STRING:
        if field.name in _FILE_FIELDS:  # never a real file: data layers must refuse cleanly
            return st.sampled_from(["", os.path.join(tmp, "missing.txt"), os.path.join(tmp, "out.h5")])
        if field.containing_type.name == "FillerParameter":
            return st.sampled_from(filler_types()) | st.sampled_from(_STRINGS)
        return st.sampled_from(_STRINGS)
    if t == FieldDescriptor.TYPE_BYTES:
        return st.just(b"")
    if t == FieldDescriptor.TYPE_MESSAGE:
        return message_of(field.message_type, depth + 1, tmp)
    lo = 0 if t in _UNSIGNED else -3
    # Mostly small and valid, so that layers get past set-up and run; a quarter hostile.
    sane = st.integers(1, 3)
    return st.one_of(sane, sane, st.integers(lo, 6), st.sampled_from(_INT_SPECIAL.get(t, [0])))


@st.composite
def message_of(draw: Callable[..., Any], descriptor: Descriptor, depth: int, tmp: str, rate: int = 1) -> Any:
    """A message with a random subset of its fields set, each with chance 1 / (rate + 1) (nested
    messages to depth 2)."""
    from google.protobuf import message_factory

    message = message_factory.GetMessageClass(descriptor)()
    if depth > 2:
        return message
    for field in descriptor.fields:
        if field.name == "blobs" or not chance(draw, rate + 1):
            continue
        values = field_value(field, depth, tmp)
        if field.is_repeated:
            items = draw(st.lists(values, max_size=2 if field.type == field.TYPE_MESSAGE else 4))
            target = getattr(message, field.name)
            for item in items:
                if field.type == FieldDescriptor.TYPE_MESSAGE:
                    target.add().CopyFrom(item)
                else:
                    target.append(item)
        elif field.type == FieldDescriptor.TYPE_MESSAGE:
            getattr(message, field.name).CopyFrom(draw(values))
        else:
            setattr(message, field.name, draw(values))
    return message


# Parameters with which each layer that needs some sets up on most of the shapes drawn here.
BASELINES = {
    "Convolution": "convolution_param { num_output: 2 kernel_size: 1 }",
    "Deconvolution": "convolution_param { num_output: 2 kernel_size: 2 stride: 2 }",
    "Im2col": "convolution_param { kernel_size: 2 }",
    "Pooling": "pooling_param { kernel_size: 2 stride: 1 }",
    "InnerProduct": "inner_product_param { num_output: 2 }",
    "Embed": "embed_param { num_output: 2 input_dim: 3 }",
    "Tile": "tile_param { tiles: 2 }",
    "Reshape": "reshape_param { shape { dim: -1 } }",
    "DummyData": "dummy_data_param { shape { dim: 2 dim: 3 } }",
    "Parameter": "parameter_param { shape { dim: 2 dim: 3 } }",
    "LSTM": "recurrent_param { num_output: 2 }",
    "RNN": "recurrent_param { num_output: 2 }",
    "MemoryData": "memory_data_param { batch_size: 2 channels: 1 height: 2 width: 2 }",
    "Input": "input_param { shape { dim: 2 dim: 3 } }",
    "Scale": "scale_param { bias_term: true }",
}

shapes = st.sampled_from(
    [(2, 3, 4, 4), (2, 3), (2, 3, 5), (1,), (3, 2, 2, 2, 2), (2, 0, 3, 3), ()]
) | st.lists(st.integers(0, 4), min_size=0, max_size=5).map(tuple)


def chance(draw: Callable[..., Any], n: int) -> bool:
    """True about once in ``n`` draws (a middle value: Hypothesis favours the ends of a range)."""
    return bool(draw(st.integers(0, n - 1)) == n // 2)


def blob_count(draw: Callable[..., Any], exact: int, lo: int, hi: int) -> int:
    if exact >= 0:
        valid = (exact, exact)
    else:
        valid = (max(lo, 0), hi if hi >= 0 else max(lo, 0) + 2)
    if chance(draw, 10):  # now and then the wrong count: a clear refusal is expected
        return draw(st.integers(0, 3))
    return draw(st.integers(*valid))


@st.composite
def layer_nets(draw: Callable[..., Any], layer_type: str, tmp: str) -> caffe_pb2.NetParameter:
    cls = layer_class(layer_type)
    n_bottom = blob_count(draw, cls.exact_num_bottom, cls.min_bottom, cls.max_bottom)
    if cls.equal_num_bottom_top:
        n_top = n_bottom
    else:
        n_top = blob_count(draw, cls.exact_num_top, cls.min_top, cls.max_top)
    net = caffe_pb2.NetParameter(name="fuzz", force_backward=draw(st.booleans()))
    bottoms = [f"b{i}" for i in range(n_bottom)]
    if bottoms:
        feed = net.layer.add(name=INPUT, type="Input", top=bottoms)
        common = draw(shapes)
        for _ in bottoms:  # mostly one shape for every bottom, as most layers want
            feed.input_param.shape.add(dim=draw(shapes) if chance(draw, 3) else common)
    layer = net.layer.add(name=LAYER, type=layer_type, bottom=bottoms)
    in_place = n_top == 1 and n_bottom >= 1 and chance(draw, 4)
    layer.top.extend(["b0"] if in_place else [f"t{i}" for i in range(n_top)])
    # Half the nets start from a baseline that sets up and change a few fields; half are hostile.
    hostile = draw(st.booleans())
    if not hostile or draw(st.booleans()):
        text_format.Merge(BASELINES.get(layer_type, ""), layer)
    for field in params_of(layer_type):
        if not chance(draw, 4):
            descriptor = getattr(layer, field).DESCRIPTOR
            getattr(layer, field).MergeFrom(draw(message_of(descriptor, 0, tmp, rate=1 if hostile else 5)))
    if chance(draw, 6):
        layer.loss_weight.extend(draw(st.lists(st.sampled_from([0.0, 1.0, -2.0]), max_size=3)))
    if chance(draw, 6):
        layer.propagate_down.extend(draw(st.lists(st.booleans(), max_size=3)))
    if chance(draw, 6):
        for _ in range(draw(st.integers(0, 3))):
            layer.param.add(lr_mult=draw(st.sampled_from([0.0, 1.0])))
    return net


# --- running a drawn net -----------------------------------------------------------------------
def _raised_by_engine(exc: BaseException) -> bool:
    """Whether a ``raise`` statement in engine/ (not numpy, not arithmetic) raised ``exc``."""
    frames = traceback.extract_tb(exc.__traceback__)
    if not frames:
        return False
    last = frames[-1]
    return f"{os.sep}engine{os.sep}" in last.filename and (last.line or "").startswith("raise")


def check_engine_error(exc: BaseException, names: list[str]) -> None:
    """An engine error naming a layer or blob, not an unchecked failure wrapped on its way up."""
    assert isinstance(exc, EngineError), f"{type(exc).__name__}: {exc}"
    text = str(exc)
    assert any(name in text for name in names), f"no layer/blob named in: {text}"
    cause = exc.__cause__
    if type(exc) is NetError and cause is not None and not isinstance(cause, EngineError):
        # The net names the layer of any failure in its set-up. A deliberate check is fine (engine.blob's
        # ValueErrors); an accident inside numpy or arithmetic is not.
        deliberate = isinstance(cause, ValueError) and _raised_by_engine(cause)
        assert deliberate, f"unchecked {type(cause).__name__}: {cause}"


def fill_inputs(net: Net, mode: int) -> None:
    rs = np.random.RandomState(mode)
    for blob in net.input_blobs:
        if mode == 0:  # label-like: small non-negative integers
            values = rs.randint(0, 3, size=blob.shape)
        elif mode == 1:
            values = rs.standard_normal(blob.shape)
        else:  # hostile: indices and labels out of range, nan, inf
            values = rs.choice(np.array([-1, 0, 1, 2, 5, 1e9, np.nan, np.inf, -np.inf]), size=blob.shape)
        blob.data[...] = net.xp.asarray(values.astype(blob.dtype))


def run_net(
    param: caffe_pb2.NetParameter, phase: int, mode: int, max_forward_values: int | None = None
) -> None:
    """Build, then (unless its blobs hold more than ``max_forward_values``) run forward and backward."""
    names = [layer.name for layer in param.layer] + [b for layer in param.layer for b in layer.top]
    net = None
    try:
        net = Net(param, phase=phase)
        if max_forward_values is not None and sum(b.count() for b in net.blob_list) > max_forward_values:
            return
        fill_inputs(net, mode)
        net.forward()
        net.backward()
        net.forward()  # a second pass: reshape on unchanged shapes, refills, state
    except EngineError as exc:
        check_engine_error(exc, names)
    finally:
        if net is not None:
            net.close()


@pytest.fixture
def small_blobs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(engine.blob, "MAX_BLOB_COUNT", SMALL_LIMIT)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # nan and inf parameters do overflow
@pytest.mark.parametrize("layer_type", layer_types())
def test_random_parameters_never_crash(layer_type: str, small_blobs: None, tmp_path_factory: Any) -> None:
    tmp = str(tmp_path_factory.mktemp("fuzz"))

    @FUZZ_SETTINGS
    @given(
        net=layer_nets(layer_type, tmp),
        phase=st.sampled_from([caffe_pb2.TRAIN, caffe_pb2.TEST]),
        mode=st.integers(0, 2),
    )
    def check(net: caffe_pb2.NetParameter, phase: int, mode: int) -> None:
        run_net(net, phase, mode)

    check()
