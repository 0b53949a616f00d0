"""What the registered classes declare about their types agrees with what setting them up does.

The app and the canvas read these declarations instead of tables of their own, so each one is
checked here against the engine's own behaviour: the ``*_param`` messages a class reads, the blobs
set-up creates (count, order, shapes), the fields fillers and solvers read, and the static checks.
"""

from __future__ import annotations

import inspect
import re

import numpy as np
import pytest
from google.protobuf import text_format

from engine.blob import Blob
from engine.errors import EngineError
from engine.fillers import FillerError, filler_class, filler_fields, filler_problems, filler_types, get_filler
from engine.layers import Layer, create_layer, layer_class, layer_types
from engine.layers.facts import FAMILIES
from engine.solvers import lr_policy, solver_class, solver_types
from proto import caffe_pb2

LAYER_FIELDS = caffe_pb2.LayerParameter.DESCRIPTOR.fields_by_name
# Read only to be refused: HDF5Data's base sets up a transformer, HDF5Data itself refuses transform_param.
REFUSED = {"HDF5Data": {"transform_param"}}


@pytest.mark.parametrize("layer_type", layer_types())
def test_each_type_declares_a_family_and_every_message_it_reads(layer_type):
    cls = layer_class(layer_type)
    assert cls.family in FAMILIES
    assert all(name in LAYER_FIELDS and name.endswith("_param") for name in cls.params)
    read: set[str] = set()
    for klass in cls.__mro__:
        if klass not in (Layer, object):
            read |= set(re.findall(r"self\.param\.(\w+_param)\b", inspect.getsource(klass)))
    assert read - REFUSED.get(layer_type, set()) <= set(cls.params), layer_type


def test_families_are_those_of_the_design():
    by_family = {family: {t for t in layer_types() if layer_class(t).family == family} for family in FAMILIES}
    assert {"Pooling", "SPP"} == by_family["pooling"]
    assert {"BatchNorm", "LRN", "MVN", "Scale", "Bias"} == by_family["normalisation"]
    assert {"LSTM", "RNN", "LSTMUnit"} == by_family["recurrent"]
    assert {"ReLU", "Dropout", "PReLU"} <= by_family["neuron"] and "Crop" in by_family["structure"]


def _blob(shape):
    return Blob(shape, np.float32)


def _set_up(text: str, shapes: list[tuple[int, ...]]) -> tuple[Layer, caffe_pb2.LayerParameter]:
    param = text_format.Parse(text, caffe_pb2.LayerParameter())
    param.bottom[:] = [f"b{i}" for i in range(len(shapes))]
    param.top[:] = param.top or ["t"]
    layer = create_layer(param)
    layer.setup([_blob(s) for s in shapes], [_blob(()) for _ in param.top])
    return layer, param


FILLED = 'weight_filler { type: "gaussian" std: 0.1 } bias_filler { type: "gaussian" std: 0.1 }'
SET_UPS = [
    (
        f'type: "Convolution" convolution_param {{ num_output: 4 kernel_size: 3 group: 2 {FILLED} }}',
        [(2, 6, 7, 7)],
    ),
    (
        'type: "Convolution" convolution_param { num_output: 4 kernel_size: 3 bias_term: false }',
        [(2, 6, 7, 7)],
    ),
    ('type: "Deconvolution" convolution_param { num_output: 4 kernel_h: 2 kernel_w: 3 }', [(2, 6, 5, 5)]),
    ('type: "InnerProduct" inner_product_param { num_output: 5 transpose: true }', [(2, 3, 4)]),
    ('type: "InnerProduct" inner_product_param { num_output: 5 axis: 2 }', [(2, 3, 4)]),
    ('type: "Embed" embed_param { num_output: 5 input_dim: 7 }', [(2, 3)]),
    ('type: "PReLU"', [(2, 3, 4)]),
    ('type: "Scale" scale_param { bias_term: true }', [(2, 3, 4)]),
    ('type: "Scale" scale_param { bias_term: true }', [(2, 3, 4), (3,)]),
    ('type: "Bias"', [(2, 3, 4)]),
    ('type: "Bias"', [(2, 3, 4), (3,)]),
    ('type: "BatchNorm"', [(2, 3, 4)]),
    ('type: "Parameter" parameter_param { shape { dim: 2 dim: 3 } }', []),
    ('type: "LSTM" recurrent_param { num_output: 4 }', [(3, 2, 5), (3, 2)]),
    ('type: "LSTM" recurrent_param { num_output: 4 }', [(3, 2, 5), (3, 2), (2, 6)]),
    ('type: "RNN" recurrent_param { num_output: 4 }', [(3, 2, 5), (3, 2), (2, 6)]),
    (
        'type: "RNN" recurrent_param { num_output: 4 expose_hidden: true } top: "o" top: "h"',
        [(3, 2, 5), (3, 2), (1, 2, 4)],
    ),
    ('type: "ReLU"', [(2, 3)]),
    ('type: "Pooling" pooling_param { kernel_size: 2 }', [(1, 1, 4, 4)]),
]


@pytest.mark.parametrize(("text", "shapes"), SET_UPS)
def test_declared_blobs_and_shapes_are_what_set_up_creates(text, shapes):
    layer, param = _set_up(text, shapes)
    declared = type(layer).learnable_blobs(param)
    assert declared is not None and len(declared) == len(layer.blobs)
    for blob in declared:
        if blob.path is not None:
            holder, name = blob.path.rsplit(".", 1)
            assert name in getattr(param, holder).DESCRIPTOR.fields_by_name
            assert blob.default is not None and blob.default.type in filler_types()
    fresh = create_layer(param)  # not set up: the shapes come from the declaration alone
    predicted = fresh.param_shapes([_blob(s) for s in shapes])
    assert predicted is None or predicted == [b.shape for b in layer.blobs]
    if param.type in ("Convolution", "Deconvolution", "InnerProduct", "Embed"):
        assert predicted is not None  # the big ones are declared, so the canvas need not fill them


def test_default_fillers_are_what_an_unset_field_fills():
    layer, param = _set_up('type: "PReLU"', [(2, 3, 4)])
    (slopes,) = type(layer).learnable_blobs(param)
    assert np.all(layer.blobs[0].data == slopes.default.value) and slopes.default.value == 0.25
    layer, param = _set_up('type: "Scale"', [(2, 3, 4)])
    (scale,) = type(layer).learnable_blobs(param)
    assert np.all(layer.blobs[0].data == scale.default.value) and scale.default.value == 1


def test_static_problems_are_what_set_up_refuses():
    cases = [
        ('type: "InnerProduct" inner_product_param { num_output: 0 }', [(2, 3)], "num_output"),
        (
            'type: "Convolution" convolution_param { num_output: 3 kernel_size: 3 group: 2 }',
            [(1, 2, 5, 5)],
            "group",
        ),
        ('type: "LRN" lrn_param { local_size: 4 }', [(1, 2, 5, 5)], "local_size"),
        ('type: "Dropout" dropout_param { dropout_ratio: 1 }', [(2, 3)], "dropout_ratio"),
        ('type: "Embed" embed_param { num_output: 2 input_dim: 0 }', [(2,)], "input_dim"),
    ]
    for text, shapes, word in cases:
        param = text_format.Parse(text, caffe_pb2.LayerParameter())
        problems = list(layer_class(param.type).static_problems(param))
        assert problems and word in problems[0]
        with pytest.raises(EngineError):
            _set_up(text, shapes)
    fine = text_format.Parse('type: "LRN" lrn_param { local_size: 5 }', caffe_pb2.LayerParameter())
    assert list(layer_class("LRN").static_problems(fine)) == []


def test_each_filler_declares_the_fields_it_reads_and_its_checks():
    fields = caffe_pb2.FillerParameter.DESCRIPTOR.fields_by_name
    assert list(filler_fields())[:3] == ["constant", "uniform", "gaussian"]
    assert sorted(filler_fields()) == filler_types()
    for name, read in filler_fields().items():
        assert all(f in fields and f != "type" for f in read)
        assert filler_class(name).fields == read
    assert filler_fields()["gaussian"] == ("mean", "std", "sparse")
    bad = caffe_pb2.FillerParameter(type="gaussian", std=-1)
    (problem,) = filler_problems(bad)
    with pytest.raises(FillerError, match=re.escape(problem)):
        get_filler(bad).sample((2, 2))
    assert filler_problems(caffe_pb2.FillerParameter(type="gaussian", std=0.1)) == []
    assert "unknown filler type 'nope'" in filler_problems(caffe_pb2.FillerParameter(type="nope"))[0]


def test_each_solver_declares_the_fields_it_reads_and_refuses_what_caffe_refuses():
    fields = caffe_pb2.SolverParameter.DESCRIPTOR.fields_by_name
    for name in solver_types():
        assert all(f in fields for f in solver_class(name).fields), name
    assert "momentum" not in solver_class("AdaGrad").fields and "momentum" in solver_class("Adam").fields
    param = caffe_pb2.SolverParameter(type="RMSProp", momentum=0.9, rms_decay=0.98)
    assert list(solver_class("RMSProp").param_problems(param)) == ["Momentum cannot be used with RMSProp."]
    assert all(f in fields for read in lr_policy.POLICY_FIELDS.values() for f in read)
    assert tuple(lr_policy.POLICY_FIELDS) == lr_policy.POLICIES


@pytest.mark.parametrize("layer_type", layer_types())
def test_a_new_layer_is_made_of_what_its_type_reads(layer_type):
    """``template`` sets only messages the type reads, and ``new_tops`` fits the type's top count."""
    cls = layer_class(layer_type)
    param = text_format.Parse(cls.template, caffe_pb2.LayerParameter())
    assert {f.name for f, _ in param.ListFields()} <= set(cls.params)
    assert list(cls.static_problems(param)) == []
    tops = cls.new_tops("x")
    if cls.exact_num_top >= 0:
        assert len(tops) == cls.exact_num_top
    assert len(tops) >= max(cls.min_top, 0) and (cls.max_top < 0 or len(tops) <= cls.max_top)
