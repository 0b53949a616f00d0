"""Neuron layers: ReLU, ELU, Clip, Sigmoid, TanH, Swish, BNLL, AbsVal, Threshold, Power, Exp, Log,
PReLU and Dropout against naive references, numerical gradients, in-place runs and Caffe goldens."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
from tests_support import close

from engine.errors import LayerSetupError
from engine.testing import GradientChecker, blobs, host, make_layer, random_blob
from proto import caffe_pb2

SHAPE = (2, 3, 4, 2)


def f32(value: float) -> float:
    """A prototxt float as the layer sees it (rounded to float32)."""
    return float(np.float32(value))


def sigmoid(x: float) -> float:
    return 1 / (1 + math.exp(-x))


@dataclass
class Case:
    text: str
    reference: Any  # y = reference(x) on Python floats
    low: float = -1.0
    high: float = 1.0
    kink: float | None = None  # skip gradient points within 0.01 of this input
    in_place: bool = True
    gradient: bool = True
    extra: dict = field(default_factory=dict)


def power_ref(power: float, scale: float, shift: float):
    p, a, b = f32(power), f32(scale), f32(shift)
    return lambda x: (b + a * x) ** p


def exp_ref(base: float, scale: float, shift: float):
    a, b = f32(scale), f32(shift)
    return lambda x: (math.e if base == -1 else f32(base)) ** (b + a * x)


def log_ref(base: float, scale: float, shift: float):
    a, b = f32(scale), f32(shift)
    return lambda x: math.log(b + a * x) / (1.0 if base == -1 else math.log(f32(base)))


def clip_values() -> np.ndarray:
    # Values spread over [-1, 1] that keep clear of both kinks (-0.5 and 0.6) by more than a step.
    values = np.linspace(-1, 1, 48) + 0.013
    assert np.abs(values + 0.5).min() > 0.011 and np.abs(values - f32(0.6)).min() > 0.011
    return np.random.default_rng(3).permutation(values).reshape(SHAPE)


CASES = {
    "relu": Case('type: "ReLU"', lambda x: max(x, 0.0), kink=0.0),
    "relu_leaky": Case(
        'type: "ReLU" relu_param { negative_slope: 0.01 }', lambda x: x if x > 0 else f32(0.01) * x, kink=0.0
    ),
    "elu": Case(
        'type: "ELU" elu_param { alpha: 0.5 }', lambda x: x if x > 0 else 0.5 * (math.exp(x) - 1), kink=0.0
    ),
    "elu_default": Case('type: "ELU"', lambda x: x if x > 0 else math.exp(x) - 1, kink=0.0),
    "clip": Case(
        'type: "Clip" clip_param { min: -0.5 max: 0.6 }',
        lambda x: max(-0.5, min(x, f32(0.6))),
        extra={"values": clip_values},
    ),
    "sigmoid": Case('type: "Sigmoid"', sigmoid, low=-4, high=4),
    "tanh": Case('type: "TanH"', math.tanh, low=-3, high=3),
    "swish": Case('type: "Swish"', lambda x: x * sigmoid(x), low=-3, high=3),
    "swish_beta": Case(
        'type: "Swish" swish_param { beta: 1.5 }', lambda x: x * sigmoid(1.5 * x), low=-3, high=3
    ),
    "bnll": Case('type: "BNLL"', lambda x: math.log1p(math.exp(x)), low=-5, high=5),
    "absval": Case('type: "AbsVal"', abs, kink=0.0, in_place=False),
    "threshold": Case(
        'type: "Threshold" threshold_param { threshold: 0.2 }',
        lambda x: 1.0 if x > f32(0.2) else 0.0,
        gradient=False,
    ),
    "power": Case(
        'type: "Power" power_param { power: 0.37 scale: 0.83 shift: -2.4 }',
        power_ref(0.37, 0.83, -2.4),
        low=3,
        high=5,
    ),
    "power_shift_zero": Case(
        'type: "Power" power_param { power: 0.37 scale: 0.83 }', power_ref(0.37, 0.83, 0), low=0.5, high=2
    ),
    "power_cube_shift_zero": Case(
        'type: "Power" power_param { power: 3 scale: -0.7 }', power_ref(3, -0.7, 0)
    ),
    "power_zero": Case('type: "Power" power_param { power: 0 scale: 0.83 shift: -2.4 }', lambda x: 1.0),
    "power_scale_zero": Case(
        'type: "Power" power_param { power: 3 scale: 0 shift: -2.4 }', lambda x: f32(-2.4) ** 3
    ),
    "power_one": Case(
        'type: "Power" power_param { power: 1 scale: 0.83 shift: -2.4 }', power_ref(1, 0.83, -2.4)
    ),
    "power_two": Case(
        'type: "Power" power_param { power: 2 scale: 0.34 shift: -2.4 }', power_ref(2, 0.34, -2.4)
    ),
    "power_two_no_shift": Case('type: "Power" power_param { power: 2 scale: 0.5 }', power_ref(2, 0.5, 0)),
    "power_default": Case('type: "Power"', lambda x: x),
    "exp": Case('type: "Exp"', math.exp),
    "exp_base2": Case('type: "Exp" exp_param { base: 2 }', exp_ref(2, 1, 0)),
    "exp_shift": Case('type: "Exp" exp_param { shift: 1 }', exp_ref(-1, 1, 1)),
    "exp_base2_shift_scale": Case(
        'type: "Exp" exp_param { base: 2 shift: 1 scale: 3 }', exp_ref(2, 3, 1), low=-0.5, high=0.5
    ),
    "log": Case('type: "Log"', math.log, low=0.5, high=2),
    "log_base2": Case('type: "Log" log_param { base: 2 }', log_ref(2, 1, 0), low=0.5, high=2),
    "log_base2_shift_scale": Case(
        'type: "Log" log_param { base: 2 shift: 1 scale: 3 }', log_ref(2, 3, 1), low=0.5, high=2
    ),
}


def bottom_for(case: Case, xp, dtype=np.float64):
    blob = random_blob(SHAPE, xp, dtype, case.low, case.high)
    if "values" in case.extra:
        blob.data[...] = xp.asarray(case.extra["values"]().astype(dtype))
    return blob


def reference(case: Case, x: np.ndarray) -> np.ndarray:
    return np.array([case.reference(float(v)) for v in x.ravel()]).reshape(x.shape)


@pytest.mark.parametrize("name", list(CASES))
def test_forward_matches_reference(xp, name):
    case = CASES[name]
    layer = make_layer(case.text, xp)
    bottom, top = [bottom_for(case, xp)], blobs(1, xp)
    layer.setup(bottom, top)
    layer.forward(bottom, top)
    assert top[0].shape == SHAPE
    np.testing.assert_allclose(
        host(top[0].data), reference(case, host(bottom[0].data)), rtol=1e-7, atol=1e-12
    )


@pytest.mark.parametrize("name", ["relu", "sigmoid", "tanh", "power", "exp_base2", "log_base2"])
def test_float32_forward_stays_close(xp, name):
    case = CASES[name]
    layer = make_layer(case.text, xp, dtype=np.float32)
    bottom, top = [bottom_for(case, xp, np.float32)], blobs(1, xp, np.float32)
    layer.setup(bottom, top)
    layer.forward(bottom, top)
    assert top[0].data.dtype == np.float32
    want = reference(case, host(bottom[0].data).astype(np.float64))
    np.testing.assert_allclose(host(top[0].data), want, rtol=2e-6, atol=1e-6)


@pytest.mark.parametrize("name", [n for n, c in CASES.items() if c.gradient])
def test_gradient(xp, name):
    case = CASES[name]
    layer = make_layer(case.text, xp)
    kink = {} if case.kink is None else {"kink": case.kink, "kink_range": 0.01}
    GradientChecker(stepsize=1e-3, threshold=1e-3, **kink).check(layer, [bottom_for(case, xp)], blobs(1, xp))


@pytest.mark.parametrize("name", [n for n, c in CASES.items() if c.in_place])
def test_in_place_matches_separate_top(xp, name):
    case = CASES[name]
    separate, shared = make_layer(case.text, xp), make_layer(case.text, xp)
    bottom, top = [bottom_for(case, xp)], blobs(1, xp)
    alias = bottom_for(case, xp)
    dy = random_blob(SHAPE, xp, seed=7).data
    separate.setup(bottom, top)
    shared.setup([alias], [alias])
    separate.forward(bottom, top)
    shared.forward([alias], [alias])
    np.testing.assert_array_equal(host(alias.data), host(top[0].data))
    if case.gradient:
        top[0].diff[...] = dy
        alias.diff[...] = dy
        separate.backward(top, [True], bottom)
        shared.backward([alias], [True], [alias])
        np.testing.assert_allclose(host(alias.diff), host(bottom[0].diff), rtol=1e-12)


def test_power_gradient_special_cases(xp):
    """Caffe's closed forms for power 1, 2 and scale 0 give the exact derivative."""
    x = random_blob(SHAPE, xp)
    for text, derivative in [
        ("power: 1 scale: 0.83 shift: -2.4", lambda v: np.full_like(v, f32(0.83))),
        ("power: 2 scale: 0.34 shift: -2.4", lambda v: 2 * f32(0.34) * (f32(-2.4) + f32(0.34) * v)),
        ("power: 3 scale: 0 shift: 1.5", np.zeros_like),
        ("power: 0 scale: 2", np.zeros_like),
    ]:
        layer = make_layer(f'type: "Power" power_param {{ {text} }}', xp)
        top = blobs(1, xp)
        layer.setup([x], top)
        layer.forward([x], top)
        top[0].diff[...] = 1
        layer.backward(top, [True], [x])
        np.testing.assert_allclose(host(x.diff), derivative(host(x.data)), rtol=1e-12, err_msg=text)


def test_relu_gradient_at_zero_takes_negative_slope(xp):
    layer = make_layer('type: "ReLU" relu_param { negative_slope: 0.25 }', xp)
    bottom, top = [random_blob((4,), xp)], blobs(1, xp)
    bottom[0].data[...] = xp.asarray([-1.0, 0.0, 0.5, 2.0])
    layer.setup(bottom, top)
    layer.forward(bottom, top)
    top[0].diff[...] = 1
    layer.backward(top, [True], bottom)
    np.testing.assert_allclose(host(bottom[0].diff), [0.25, 0.25, 1, 1])


def test_clip_gradient_includes_both_ends(xp):
    layer = make_layer('type: "Clip" clip_param { min: -0.5 max: 0.5 }', xp)
    bottom, top = [random_blob((5,), xp)], blobs(1, xp)
    bottom[0].data[...] = xp.asarray([-0.7, -0.5, 0.1, 0.5, 0.9])
    layer.setup(bottom, top)
    layer.forward(bottom, top)
    np.testing.assert_allclose(host(top[0].data), [-0.5, -0.5, 0.1, 0.5, 0.5])
    top[0].diff[...] = 2
    layer.backward(top, [True], bottom)
    np.testing.assert_allclose(host(bottom[0].diff), [0, 2, 2, 2, 0])


def test_bnll_large_inputs_stay_finite(xp):
    layer = make_layer('type: "BNLL"', xp)
    bottom, top = [random_blob((5,), xp)], blobs(1, xp)
    bottom[0].data[...] = xp.asarray([-800.0, -60.0, 30.0, 60.0, 800.0])
    layer.setup(bottom, top)
    layer.forward(bottom, top)
    np.testing.assert_allclose(host(top[0].data), [0, math.exp(-60), 30, 60, 800], rtol=1e-12)
    top[0].diff[...] = 1
    layer.backward(top, [True], bottom)
    # exp() of the input is capped at 50 (Caffe's threshold), so huge inputs give no inf / inf.
    capped = sigmoid(50)
    np.testing.assert_allclose(
        host(bottom[0].diff), [0, math.exp(-60), sigmoid(30), capped, capped], rtol=1e-14
    )


def test_threshold_has_no_gradient(xp):
    layer = make_layer('type: "Threshold"', xp)
    bottom, top = [random_blob(SHAPE, xp)], blobs(1, xp)
    layer.setup(bottom, top)
    layer.forward(bottom, top)
    layer.backward(top, [False], bottom)  # nothing asked, nothing done
    with pytest.raises(NotImplementedError, match="Threshold"):
        layer.backward(top, [True], bottom)


@pytest.mark.parametrize(
    "text, message",
    [
        ('type: "AbsVal"', "in-place"),
        ('type: "Exp" exp_param { base: -2 }', "strictly positive"),
        ('type: "Log" log_param { base: 0 }', "strictly positive"),
        ('type: "Log" log_param { base: 1 }', "base 1"),
        ('type: "Clip" clip_param { min: -1 }', "min and max"),
    ],
)
def test_bad_parameters_are_refused(xp, text, message):
    layer = make_layer('name: "bad" ' + text, xp)
    blob = random_blob(SHAPE, xp)
    with pytest.raises(LayerSetupError, match=message) as info:
        layer.setup([blob], [blob])
    assert "'bad'" in str(info.value)


# --- PReLU -----------------------------------------------------------------------------------------


def prelu_reference(x: np.ndarray, slopes: np.ndarray) -> np.ndarray:
    y = np.empty_like(x)
    for index in np.ndindex(x.shape):
        a = slopes.flat[0] if slopes.size == 1 else slopes[index[1]]
        y[index] = max(x[index], 0) + a * min(x[index], 0)
    return y


def prelu(xp, shared: bool = False, filler: str = 'filler { type: "uniform" min: 0.1 max: 0.9 }'):
    return make_layer(f'type: "PReLU" prelu_param {{ channel_shared: {str(shared).lower()} {filler} }}', xp)


@pytest.mark.parametrize("shared", [False, True])
def test_prelu_forward_matches_reference(xp, shared):
    layer = prelu(xp, shared)
    bottom, top = [random_blob(SHAPE, xp)], blobs(1, xp)
    layer.setup(bottom, top)
    slopes = host(layer.blobs[0].data)
    assert slopes.shape == (() if shared else (SHAPE[1],))
    layer.forward(bottom, top)
    np.testing.assert_allclose(host(top[0].data), prelu_reference(host(bottom[0].data), slopes), rtol=1e-12)


@pytest.mark.parametrize("shape", [SHAPE, (3, 4)])
@pytest.mark.parametrize("shared", [False, True])
def test_prelu_gradient(xp, shared, shape):
    layer = prelu(xp, shared)
    GradientChecker(kink=0.0, kink_range=0.01).check(layer, [random_blob(shape, xp)], blobs(1, xp))


def test_prelu_default_slope_is_a_quarter(xp):
    layer = make_layer('type: "PReLU"', xp)
    bottom, top = [random_blob(SHAPE, xp)], blobs(1, xp)
    layer.setup(bottom, top)
    np.testing.assert_array_equal(host(layer.blobs[0].data), np.full(SHAPE[1], 0.25))


def test_prelu_in_place_matches_separate_top_and_slope_gradient(xp):
    separate, shared = prelu(xp), prelu(xp)
    bottom, top = [random_blob(SHAPE, xp)], blobs(1, xp)
    alias = random_blob(SHAPE, xp)
    separate.setup(bottom, top)
    shared.setup([alias], [alias])
    shared.blobs[0].data[...] = separate.blobs[0].data
    separate.forward(bottom, top)
    shared.forward([alias], [alias])
    np.testing.assert_array_equal(host(alias.data), host(top[0].data))
    dy = random_blob(SHAPE, xp, seed=5).data
    top[0].diff[...] = dy
    alias.diff[...] = dy
    separate.backward(top, [True], bottom)
    shared.backward([alias], [True], [alias])
    np.testing.assert_allclose(host(alias.diff), host(bottom[0].diff), rtol=1e-12)
    np.testing.assert_allclose(host(shared.blobs[0].diff), host(separate.blobs[0].diff), rtol=1e-12)


def test_prelu_with_fixed_slope_equals_leaky_relu(xp):
    layer = prelu(xp, shared=True, filler='filler { type: "constant" value: 0.25 }')
    relu = make_layer('type: "ReLU" relu_param { negative_slope: 0.25 }', xp)
    bottom, top, relu_top = [random_blob(SHAPE, xp)], blobs(1, xp), blobs(1, xp)
    layer.setup(bottom, top)
    relu.setup(bottom, relu_top)
    layer.forward(bottom, top)
    relu.forward(bottom, relu_top)
    np.testing.assert_array_equal(host(top[0].data), host(relu_top[0].data))


def test_prelu_slope_gradient_accumulates(xp):
    layer = prelu(xp)
    bottom, top = [random_blob(SHAPE, xp)], blobs(1, xp)
    layer.setup(bottom, top)
    layer.forward(bottom, top)
    top[0].diff[...] = 1
    layer.backward(top, [False], bottom)
    once = host(layer.blobs[0].diff).copy()
    x = host(bottom[0].data)
    np.testing.assert_allclose(once, np.where(x <= 0, x, 0).sum(axis=(0, 2, 3)), rtol=1e-12)
    layer.backward(top, [False], bottom)
    np.testing.assert_allclose(host(layer.blobs[0].diff), 2 * once, rtol=1e-12)


def test_prelu_refuses_bad_shapes(xp):
    with pytest.raises(LayerSetupError, match="at least 2 axes"):
        make_layer('type: "PReLU"', xp).setup([random_blob((5,), xp)], blobs(1, xp))
    loaded = make_layer('type: "PReLU" blobs { shape { dim: 2 } data: 0.1 data: 0.2 }', xp)
    with pytest.raises(LayerSetupError, match="needs 3"):
        loaded.setup([random_blob((2, 3, 2), xp)], blobs(1, xp))


# --- Dropout ---------------------------------------------------------------------------------------


def dropout(xp, ratio: float | None = 0.3, phase=caffe_pb2.TRAIN, dtype=np.float32):
    text = 'type: "Dropout"' + ("" if ratio is None else f" dropout_param {{ dropout_ratio: {ratio} }}")
    return make_layer(text, xp, dtype=dtype, phase=phase)


def test_dropout_train_keeps_the_right_fraction_scaled(xp):
    shape = (100, 200)
    layer = dropout(xp, 0.3)
    bottom, top = [random_blob(shape, xp, np.float32, 1, 2)], blobs(1, xp, np.float32)
    layer.setup(bottom, top)
    layer.forward(bottom, top)
    x, y = host(bottom[0].data), host(top[0].data)
    kept = y != 0
    n = kept.size
    assert abs(kept.mean() - 0.7) <= 5 * math.sqrt(0.3 * 0.7 / n)
    np.testing.assert_array_equal(y[kept], x[kept] * np.float32(1 / (1 - f32(0.3))))


def test_dropout_default_ratio_is_half_and_masks_change(xp):
    layer = dropout(xp, None)
    bottom, top = [random_blob((50, 40), xp, np.float32, 1, 2)], blobs(1, xp, np.float32)
    layer.setup(bottom, top)
    layer.forward(bottom, top)
    first = host(top[0].data).copy()
    layer.forward(bottom, top)
    second = host(top[0].data)
    assert abs((first != 0).mean() - 0.5) < 0.08
    np.testing.assert_array_equal(first[first != 0], 2 * host(bottom[0].data)[first != 0])
    assert (first != second).any()


def test_dropout_backward_uses_the_forward_mask(xp):
    layer = dropout(xp, 0.4)
    bottom, top = [random_blob((10, 30), xp, np.float32, 1, 2)], blobs(1, xp, np.float32)
    layer.setup(bottom, top)
    layer.forward(bottom, top)
    kept = host(top[0].data) != 0
    top[0].diff[...] = random_blob((10, 30), xp, np.float32, seed=9).data
    layer.backward(top, [True], bottom)
    want = np.where(kept, host(top[0].diff) * np.float32(1 / (1 - f32(0.4))), 0)
    np.testing.assert_array_equal(host(bottom[0].diff), want)


def test_dropout_gradient(xp):
    layer = dropout(xp, 0.5, dtype=np.float64)
    GradientChecker().check(layer, [random_blob((3, 4, 2), xp)], blobs(1, xp))


@pytest.mark.parametrize("in_place", [False, True])
def test_dropout_test_phase_is_identity(xp, in_place):
    layer = dropout(xp, 0.5, phase=caffe_pb2.TEST)
    bottom = [random_blob((6, 7), xp, np.float32)]
    x = host(bottom[0].data).copy()
    top = bottom if in_place else blobs(1, xp, np.float32)
    layer.setup(bottom, top)
    layer.forward(bottom, top)
    np.testing.assert_array_equal(host(top[0].data), x)
    dy = random_blob((6, 7), xp, np.float32, seed=2).data
    top[0].diff[...] = dy
    layer.backward(top, [True], bottom)
    np.testing.assert_array_equal(host(bottom[0].diff), host(dy))


def test_dropout_ratio_zero_is_identity_in_train(xp):
    layer = dropout(xp, 0.0)
    bottom, top = [random_blob((20, 20), xp, np.float32)], blobs(1, xp, np.float32)
    layer.setup(bottom, top)
    layer.forward(bottom, top)
    np.testing.assert_array_equal(host(top[0].data), host(bottom[0].data))


@pytest.mark.parametrize("ratio", [1.0, 1.5, -0.1])
def test_dropout_refuses_bad_ratio(xp, ratio):
    with pytest.raises(LayerSetupError, match="dropout_ratio"):
        dropout(xp, ratio).setup([random_blob((2, 2), xp)], blobs(1, xp))


# --- Caffe goldens -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "case, layer_name, type_",
    [("relu", "relu", "ReLU"), ("sigmoid", "sigmoid", "Sigmoid"), ("tanh", "tanh", "TanH")],
)
def test_matches_caffe_golden(goldens, xp, case, layer_name, type_):
    """Forward and backward of the layer alone, fed the golden's input and loss gradient."""
    io = np.load(goldens / "layers" / case / "io.npz")
    x, y, target = io["data/data"], io[f"data/{layer_name}"], io["data/target"]
    layer = make_layer(f'name: "{layer_name}" type: "{type_}"', xp, dtype=np.float32)
    bottom, top = [random_blob(x.shape, xp, np.float32)], blobs(1, xp, np.float32)
    bottom[0].data[...] = xp.asarray(x)
    layer.setup(bottom, top)
    layer.forward(bottom, top)
    assert close(host(top[0].data), y, 1e-4)
    top[0].diff[...] = xp.asarray((y - target) / x.shape[0])  # EuclideanLoss's gradient, weight 1
    layer.backward(top, [True], bottom)
    assert close(host(bottom[0].diff), io["diff/data"], 1e-4)


def test_dropout_matches_caffe_golden_in_test(goldens, xp):
    folder = goldens / "layers" / "dropout_test"
    assert json.loads((folder / "meta.json").read_text())["phase"] == "TEST"
    io = np.load(folder / "io.npz")
    layer = dropout(xp, 0.4, phase=caffe_pb2.TEST)
    bottom, top = [random_blob(io["data/data"].shape, xp, np.float32)], blobs(1, xp, np.float32)
    bottom[0].data[...] = xp.asarray(io["data/data"])
    layer.setup(bottom, top)
    layer.forward(bottom, top)
    np.testing.assert_array_equal(host(top[0].data), io["data/drop"])


@pytest.mark.parametrize("in_place", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_relu_blocks_on_threads_match_the_single_pass(monkeypatch, in_place, dtype):
    """The CPU's ReLU a cache-sized block at a time on three threads (a cache small enough for several
    blocks per thread and an odd last one) gives the single passes exactly: forward np.maximum(x, 0)
    (NaN kept, infinities, signed zeros), backward dy * (x > 0) (0 at NaN), in place or not."""
    from engine import parallel

    monkeypatch.setattr(parallel, "_pool", parallel.Pool(3))
    monkeypatch.setattr(parallel, "_pid", __import__("os").getpid())
    monkeypatch.setattr(parallel, "MIN_SLICE", 1)
    monkeypatch.setattr(parallel, "cache_bytes", lambda: 2 * 7 * np.dtype(dtype).itemsize)  # 7 per block
    blocks, run_blocks = [], parallel.run_blocks

    def counted(task, *args):
        run_blocks(lambda a, b: blocks.append(b - a) or task(a, b), *args)

    monkeypatch.setattr(parallel, "run_blocks", counted)
    layer = make_layer('type: "ReLU"', np, dtype=dtype)
    bottom = random_blob((3, 5, 4, 3), np, dtype=dtype)  # 180 values: 3 slices of 60, 8 blocks + 4 each
    x = bottom.data.reshape(-1)
    x[:6] = [np.nan, -np.nan, np.inf, -np.inf, -0.0, 0.0]
    expected = np.maximum(x, 0)
    top = [bottom] if in_place else blobs(1, np, dtype)
    layer.setup([bottom], top)
    layer.forward([bottom], top)
    np.testing.assert_array_equal(top[0].data.reshape(-1), expected)
    assert np.array_equal(np.signbit(top[0].data.reshape(-1)), np.signbit(expected))
    assert sum(blocks) == 180 and max(blocks) == 7 and 4 in blocks  # the blocked path ran
    top[0].diff[...] = np.random.default_rng(2).standard_normal(top[0].shape)
    dy = top[0].diff.copy()
    forward_blocks = len(blocks)
    layer.backward(top, [True], [bottom])
    assert sum(blocks[forward_blocks:]) == 180 and len(blocks) - forward_blocks > 3  # blocked too
    np.testing.assert_array_equal(bottom.diff.reshape(-1), dy.reshape(-1) * (expected > 0))
