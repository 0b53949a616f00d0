"""Weight fillers: Caffe's test_filler.cpp cases, statistics against theory, errors, and the Caffe goldens."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from google.protobuf import text_format

from engine import backend, rng
from engine.blob import Blob
from engine.errors import EngineError, UnknownTypeError
from engine.fillers import FillerError, expected_stats, filler_types, get_filler
from proto import caffe_pb2

FAN_IN, FAN_OUT, AVERAGE = (
    caffe_pb2.FillerParameter.FAN_IN,
    caffe_pb2.FillerParameter.FAN_OUT,
    caffe_pb2.FillerParameter.AVERAGE,
)
EVERY_FILLER = {
    "constant": 'type: "constant" value: 0.3',
    "uniform": 'type: "uniform" min: -0.5 max: 2',
    "gaussian": 'type: "gaussian" mean: 1 std: 0.5',
    "gaussian_sparse": 'type: "gaussian" std: 0.5 sparse: 2',
    "positive_unitball": 'type: "positive_unitball"',
    "xavier": 'type: "xavier"',
    "msra": 'type: "msra" variance_norm: AVERAGE',
    "bilinear": 'type: "bilinear"',
}
RANDOM_GOLDENS = [
    "gaussian",
    "uniform",
    "xavier_fan_in",
    "xavier_fan_out",
    "xavier_average",
    "msra_fan_in",
    "msra_average",
    "positive_unitball",
    "gaussian_sparse",
]
DETERMINISTIC_GOLDENS = [
    "constant/3x4x2x2",
    "constant/5x6",
    "constant/5",
    "bilinear/4x1x4x4",
    "bilinear/2x3x5x5",
]


def param(text: str) -> caffe_pb2.FillerParameter:
    return text_format.Parse(text, caffe_pb2.FillerParameter())


def filler(text: str):
    return get_filler(param(text))


def check_moments(values: np.ndarray, mean: float, std: float, std_rtol: float = 0.03) -> None:
    """Sample mean within 6 standard errors of ``mean``, sample std within ``std_rtol`` of ``std``."""
    values = values.astype(np.float64)
    assert abs(values.mean() - mean) <= 6 * std / math.sqrt(values.size)
    assert values.std() == pytest.approx(std, rel=std_rtol)


# --- registry --------------------------------------------------------------------------------------


def test_every_caffe_filler_is_registered():
    assert filler_types() == [
        "bilinear",
        "constant",
        "gaussian",
        "msra",
        "positive_unitball",
        "uniform",
        "xavier",
    ]
    default = get_filler(caffe_pb2.FillerParameter())  # the proto's defaults: constant, value 0
    assert default.type == "constant"
    np.testing.assert_array_equal(default.sample((2, 3)), np.zeros((2, 3), np.float32))


def test_unknown_filler_names_itself_and_the_known_ones():
    with pytest.raises(UnknownTypeError) as info:
        filler('type: "glorot"')
    message = str(info.value)
    assert "'glorot'" in message and all(name in message for name in filler_types())
    assert isinstance(info.value, EngineError)


# --- every filler on every backend -----------------------------------------------------------------


@pytest.mark.parametrize("name", EVERY_FILLER)
def test_fill_writes_the_host_draw_into_the_blob_in_place(xp, name):
    shape = (4, 3, 5, 5)
    blob = Blob(shape, np.float32, xp)
    storage = blob.data
    rng.set_random_seed(7)
    filler(EVERY_FILLER[name]).fill(blob)
    rng.set_random_seed(7)
    expected = filler(EVERY_FILLER[name]).sample(shape)
    assert blob.data is storage and backend.get_array_module(blob.data) is xp
    assert blob.data.dtype == np.float32 and expected.dtype == np.float32
    np.testing.assert_array_equal(backend.to_host(blob.data), expected)
    assert np.count_nonzero(expected) > 0


@pytest.mark.parametrize("name", EVERY_FILLER)
def test_float64_blobs_get_float64_values(xp, name):
    blob = Blob((3, 2, 4, 4), np.float64, xp)
    filler(EVERY_FILLER[name]).fill(blob)
    assert blob.data.dtype == np.float64 and np.all(np.isfinite(backend.to_host(blob.data)))


@pytest.mark.parametrize(
    "name", ["uniform", "gaussian", "gaussian_sparse", "positive_unitball", "xavier", "msra"]
)
def test_one_seed_reproduces_the_weights(name):
    draw = filler(EVERY_FILLER[name]).sample
    rng.set_random_seed(42)
    first = draw((16, 8))
    rng.set_random_seed(42)
    again = draw((16, 8))
    rng.set_random_seed(43)
    other = draw((16, 8))
    np.testing.assert_array_equal(first, again)
    assert not np.array_equal(first, other)


def test_sample_with_its_own_generator_leaves_the_engine_stream_alone():
    rng.set_random_seed(5)
    undisturbed = filler('type: "gaussian"').sample((10,))
    rng.set_random_seed(5)
    preview = filler('type: "xavier"').sample((10, 3), generator=np.random.default_rng(0))
    np.testing.assert_array_equal(filler('type: "gaussian"').sample((10,)), undisturbed)
    np.testing.assert_array_equal(
        preview, filler('type: "xavier"').sample((10, 3), generator=np.random.default_rng(0))
    )


# --- each filler against its definition ------------------------------------------------------------


@pytest.mark.parametrize("shape", [(2, 3, 4, 5), (15,), (8, 3), (2, 3, 4, 5, 2), ()])
def test_constant_fills_the_value(shape):
    values = filler('type: "constant" value: 10').sample(shape)
    assert values.shape == shape and np.all(values == np.float32(10))


@pytest.mark.parametrize("shape", [(2, 3, 4, 5), (15,), (8, 3), (2, 3, 4, 5, 2)])
def test_uniform_stays_in_range(shape):
    values = filler('type: "uniform" min: 1 max: 2').sample(shape)
    assert values.shape == shape and values.min() >= 1 and values.max() <= 2


def test_uniform_moments_and_a_degenerate_range():
    check_moments(filler('type: "uniform" min: -1 max: 3').sample((200, 100)), 1.0, 4 / math.sqrt(12))
    assert expected_stats(param('type: "uniform" min: -1 max: 3'), (2, 2)) == {
        "mean": 1.0,
        "std": 4 / math.sqrt(12),
    }
    np.testing.assert_array_equal(filler('type: "uniform" min: 0.5 max: 0.5').sample((4, 4)), np.float32(0.5))


@pytest.mark.parametrize("shape", [(200, 100), (20000,), (2, 3, 4, 5, 200)])
def test_gaussian_moments(shape):
    check_moments(filler('type: "gaussian" mean: 10 std: 0.1').sample(shape), 10.0, np.float32(0.1))


@pytest.mark.parametrize("sparse", [1, 3, 10])
def test_gaussian_sparse_keeps_sparse_over_num_outputs(sparse):
    num_outputs, inputs = 20, 5000
    values = filler(f'type: "gaussian" std: 0.5 sparse: {sparse}').sample((num_outputs, inputs))
    p = sparse / num_outputs
    kept = np.count_nonzero(values) / values.size
    assert abs(kept - p) <= 6 * math.sqrt(p * (1 - p) / values.size)
    assert values[values != 0].std() == pytest.approx(0.5, rel=0.03)
    stats = expected_stats(param(f'type: "gaussian" std: 0.5 sparse: {sparse}'), (num_outputs, inputs))
    assert stats["nonzero_fraction"] == p and stats["std"] == pytest.approx(0.5 * math.sqrt(p))


def test_gaussian_sparse_extremes():
    assert np.count_nonzero(filler('type: "gaussian" sparse: 0').sample((6, 50))) == 0
    assert np.count_nonzero(filler('type: "gaussian" sparse: 6').sample((6, 50))) == 300  # p = 1


@pytest.mark.parametrize("shape", [(2, 3, 4, 5), (15,), (8, 3), (64, 32, 3, 3), ()])
def test_positive_unitball_rows_sum_to_one(shape):
    values = filler('type: "positive_unitball"').sample(shape)
    assert values.shape == shape and values.min() >= 0 and values.max() <= 1
    num = shape[0] if shape else 1  # Caffe's num(): 1 for a blob without axes
    rows = values.reshape(num, -1).astype(np.float64).sum(axis=1)
    np.testing.assert_allclose(rows, 1.0, atol=1e-5)
    if len(shape) > 1:
        assert len(np.unique(values)) > shape[0]  # random, not a constant 1/dim
    else:
        np.testing.assert_array_equal(values, 1)  # rows of one value each


def test_positive_unitball_divides_by_the_left_to_right_float32_sum():
    shape = (3, 700)
    values = filler('type: "positive_unitball"').sample(shape, generator=np.random.default_rng(9))
    raw = filler('type: "uniform" min: 0 max: 1').sample(shape, generator=np.random.default_rng(9))
    expected = np.empty(shape, np.float32)
    for i in range(shape[0]):  # Caffe's loop: a float32 running sum, then one division per value
        total = np.float32(0)
        for value in raw[i]:
            total = np.float32(total + value)
        expected[i] = raw[i] / total
    np.testing.assert_array_equal(values, expected)


@pytest.mark.parametrize("norm", [FAN_IN, FAN_OUT, AVERAGE])
@pytest.mark.parametrize("name,gain", [("xavier", 1.0), ("msra", 2.0)])
def test_fan_fillers_scale_by_the_chosen_fan(name, gain, norm):
    shape = (1000, 2, 4, 5)  # Caffe's test blob: fan_in 2*4*5, fan_out 1000*4*5
    n = {FAN_IN: 40, FAN_OUT: 20000, AVERAGE: (40 + 20000) / 2}[norm]
    text = f'type: "{name}" variance_norm: {caffe_pb2.FillerParameter.VarianceNorm.Name(norm)}'
    values = filler(text).sample(shape)
    check_moments(values, 0.0, math.sqrt(gain / n))
    if name == "xavier":
        assert np.abs(values).max() <= np.sqrt(np.float32(3) / np.float32(n))
        assert np.abs(values).max() >= 0.99 * math.sqrt(3 / n)
    stats = expected_stats(param(text), shape)
    assert (stats["fan_in"], stats["fan_out"], stats["n"]) == (40, 20000, n)
    assert stats["mean"] == 0 and stats["std"] == pytest.approx(math.sqrt(gain / n))


@pytest.mark.parametrize(
    "shape,fan_in,fan_out", [((25,), 1, 25), ((8, 3), 3, 8), ((), 1, 1), ((4, 3, 2), 6, 8)]
)
def test_fans_read_num_and_channels_as_caffe_1_0_does(shape, fan_in, fan_out):
    # num() and channels() are 1 for an axis the blob lacks: a bias (25,) has fan_in 1, fan_out 25
    for name in ("xavier", "msra"):
        stats = expected_stats(param(f'type: "{name}" variance_norm: AVERAGE'), shape)
        assert (stats["fan_in"], stats["fan_out"], stats["n"]) == (fan_in, fan_out, (fan_in + fan_out) / 2)
        assert filler(f'type: "{name}" variance_norm: AVERAGE').sample(shape).shape == shape


def bilinear_reference(shape):
    """Caffe's test_filler.cpp formula, in double precision."""
    k = shape[3]
    f = math.ceil(k / 2)
    c = (2 * f - 1 - f % 2) / (2 * f)
    out = np.empty(shape)
    for i in range(shape[0]):
        for j in range(shape[1]):
            for y in range(k):
                for x in range(k):
                    out[i, j, y, x] = (1 - abs(x / f - c)) * (1 - abs(y / f - c))
    return out


@pytest.mark.parametrize("shape", [(3, 2, 7, 7), (3, 2, 6, 6), (2, 1, 1, 1), (1, 4, 2, 2), (2, 2, 16, 16)])
def test_bilinear_matches_the_formula(xp, shape):
    blob = Blob(shape, np.float32, xp)
    filler('type: "bilinear"').fill(blob)
    np.testing.assert_allclose(backend.to_host(blob.data), bilinear_reference(shape), rtol=0, atol=1e-6)


def test_bilinear_3x3_is_caffe_1_0s_lopsided_kernel():
    # Caffe 1.0's centre c = (2f - 1 - f % 2) / 2f; this 3x3 is what it wrote (BVLC/caffe#4677, #5713,
    # fixed only after 1.0)
    third, big = 0.1875, 0.5625
    expected = np.array([[0.0625, third, third], [third, big, big], [third, big, big]], np.float32)
    np.testing.assert_array_equal(filler('type: "bilinear"').sample((2, 1, 3, 3))[1, 0], expected)


def test_bilinear_kernel_upsamples_by_its_stride():
    # kernel 2f - f%2 for factor f: every output pixel of a stride-f deconvolution gets weights summing to 1
    for factor in (2, 3, 4):
        k = 2 * factor - factor % 2
        kernel = filler('type: "bilinear"').sample((1, 1, k, k))[0, 0].astype(np.float64)
        padded = np.zeros((factor * math.ceil(k / factor),) * 2)
        padded[:k, :k] = kernel
        phases = padded.reshape(-1, factor, padded.shape[1] // factor, factor).sum(axis=(0, 2))
        np.testing.assert_allclose(phases, 1.0, atol=1e-6)


def test_bilinear_on_float64_blobs_keeps_caffes_float32_values():
    single = filler('type: "bilinear"').sample((1, 1, 5, 5))
    double = filler('type: "bilinear"').sample((1, 1, 5, 5), np.float64)
    np.testing.assert_array_equal(double, single.astype(np.float64))


def test_expected_stats_of_deterministic_fillers():
    assert expected_stats(param('type: "constant" value: 2'), (3, 4)) == {"mean": 2.0, "std": 0.0}
    kernel = bilinear_reference((1, 1, 4, 4))
    stats = expected_stats(param('type: "bilinear"'), (5, 3, 4, 4))
    assert stats["mean"] == pytest.approx(kernel.mean()) and stats["std"] == pytest.approx(kernel.std())
    unitball = expected_stats(param('type: "positive_unitball"'), (64, 32, 3, 3))
    assert unitball["mean"] == pytest.approx(1 / 288) and unitball["row_sum"] == 1.0


# --- what Caffe CHECKs -------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["constant", "uniform", "positive_unitball", "xavier", "msra", "bilinear"])
def test_sparse_is_refused_by_every_filler_but_gaussian(name):
    with pytest.raises(FillerError, match=rf"{name} filler.*\(2, 1, 3, 3\).*sparse"):
        filler(f'type: "{name}" sparse: 1').sample((2, 1, 3, 3))


@pytest.mark.parametrize("name", ["constant", "uniform", "gaussian", "positive_unitball", "xavier", "msra"])
@pytest.mark.parametrize("shape", [(0, 3), (4, 0, 2)])
def test_empty_blobs_are_refused(name, shape):
    with pytest.raises(FillerError, match=rf"{name} filler.*{shape[0]}, {shape[1]}.*empty"):
        filler(f'type: "{name}"').sample(shape)


def test_bilinear_fills_an_empty_blob_with_nothing_as_caffe_does():
    assert filler('type: "bilinear"').sample((0, 3, 4, 4)).shape == (0, 3, 4, 4)


@pytest.mark.parametrize(
    "shape,why", [((3, 4, 4), "4 axes"), ((1, 1, 1, 4, 4), "4 axes"), ((2, 1, 3, 4), "square")]
)
def test_bilinear_needs_a_square_4d_blob(shape, why):
    with pytest.raises(FillerError, match=rf"bilinear filler.*{why}"):
        filler('type: "bilinear"').sample(shape)


def test_gaussian_sparse_refuses_a_0_axis_blob():
    with pytest.raises(FillerError, match=r"\(\).*axis"):
        filler('type: "gaussian" sparse: 1').sample(())


def test_fan_fillers_read_axes_0_and_1_of_n_d_blobs():
    """Caffe 1.0 refuses num()/channels() beyond 4 axes; later Caffe reads shape(0)/shape(1): so do we."""
    shape = (8, 3, 2, 5, 5)  # a 3-D convolution's weights
    stats = expected_stats(param('type: "msra"'), shape)
    assert stats["std"] == pytest.approx(np.sqrt(2.0 / (3 * 2 * 5 * 5)))
    stats = expected_stats(param('type: "xavier" variance_norm: FAN_OUT'), shape)
    assert stats["std"] == pytest.approx(np.sqrt(1.0 / (8 * 2 * 5 * 5)))
    rows = filler('type: "positive_unitball"').sample(shape).reshape(8, -1)
    np.testing.assert_allclose(rows.sum(axis=1), 1.0, rtol=1e-5)


def test_gaussian_and_uniform_fill_any_number_of_axes():
    assert filler('type: "gaussian"').sample((2, 3, 1, 2, 2)).shape == (2, 3, 1, 2, 2)
    assert filler('type: "uniform"').sample((2, 3, 1, 2, 2)).shape == (2, 3, 1, 2, 2)


@pytest.mark.parametrize(
    "text,why",
    [
        ('type: "gaussian" std: 0', "std must be positive"),
        ('type: "gaussian" std: -1', "std must be positive"),
        ('type: "gaussian" sparse: -2', "sparse must be -1"),
        ('type: "gaussian" sparse: 5', r"sparse \(5\) exceeds the number of outputs \(4\)"),
        ('type: "uniform" min: 1 max: 0', "must not exceed max"),
    ],
)
def test_bad_parameters(text, why):
    with pytest.raises(FillerError, match=why):
        filler(text).sample((4, 3))


def test_a_refused_fill_leaves_the_blob_alone_and_is_a_value_error(xp):
    blob = Blob((2, 3), np.float32, xp)
    blob.data[...] = 7
    with pytest.raises(ValueError, match="xavier filler"):
        filler('type: "xavier" sparse: 1').fill(blob)
    assert np.all(backend.to_host(blob.data) == 7)
    with pytest.raises(FillerError):
        expected_stats(param('type: "bilinear"'), (3, 3))


# --- Caffe goldens -----------------------------------------------------------------------------------


@pytest.fixture
def golden_fillers(goldens):
    folder = goldens / "fillers"
    return json.loads((folder / "fillers.json").read_text()), np.load(folder / "fillers.npz")


def test_golden_lists_cover_the_json(golden_fillers):
    spec, arrays = golden_fillers
    assert sorted(spec["random"]) == sorted(RANDOM_GOLDENS)
    assert sorted(spec["deterministic"]) == sorted(DETERMINISTIC_GOLDENS) == sorted(arrays.files)


@pytest.mark.parametrize("key", DETERMINISTIC_GOLDENS)
def test_deterministic_fillers_match_caffe_exactly(golden_fillers, xp, key):
    spec, arrays = golden_fillers
    entry = spec["deterministic"][key]
    blob = Blob(tuple(entry["shape"]), np.float32, xp)
    filler(entry["filler"]).fill(blob)
    np.testing.assert_array_equal(backend.to_host(blob.data), arrays[key])  # float32 arithmetic reproduced


@pytest.mark.parametrize("key", RANDOM_GOLDENS)
def test_random_fillers_match_caffes_statistics(golden_fillers, key):
    caffe = golden_fillers[0]["random"][key]
    ours = filler(caffe["filler"]).sample(tuple(caffe["shape"])).astype(np.float64)
    assert ours.size == caffe["count"]
    assert abs(ours.mean() - caffe["mean"]) <= 6 * caffe["std"] / math.sqrt(caffe["count"])
    if key == "gaussian_sparse":  # its overall std is noisy: compare the kept weights
        nonzero = ours[ours != 0]
        assert nonzero.size / ours.size == pytest.approx(caffe["nonzero_fraction"], rel=0.20)
        assert nonzero.std() == pytest.approx(caffe["nonzero_std"], rel=0.15)
    else:
        assert ours.std() == pytest.approx(caffe["std"], rel=0.04)
    if key.startswith(("uniform", "xavier")):  # bounded: 18,432 draws reach both ends
        width = caffe["max"] - caffe["min"]
        assert ours.min() == pytest.approx(caffe["min"], abs=2e-3 * width)
        assert ours.max() == pytest.approx(caffe["max"], abs=2e-3 * width)
    if key == "positive_unitball":
        sums = ours.reshape(caffe["shape"][0], -1).sum(axis=1)
        np.testing.assert_allclose(sums, caffe["row_sums"], atol=2e-6)
        assert ours.min() >= 0


@pytest.mark.parametrize("key", RANDOM_GOLDENS)
def test_expected_stats_agree_with_caffes_draws(golden_fillers, key):
    caffe = golden_fillers[0]["random"][key]
    stats = expected_stats(param(caffe["filler"]), caffe["shape"])
    assert abs(stats["mean"] - caffe["mean"]) <= 6 * caffe["std"] / math.sqrt(caffe["count"])
    assert stats["std"] == pytest.approx(caffe["std"], rel=0.04)


def test_a_thread_can_draw_from_its_own_seeded_generators():
    import threading

    param = caffe_pb2.FillerParameter(type="gaussian", std=1)
    rng.set_random_seed(7)
    shared_first = get_filler(param).sample((5,))
    rng.set_random_seed(7)
    results = {}

    def preview():
        with rng.seeded(3):
            results["own"] = get_filler(param).sample((5,))

    worker = threading.Thread(target=preview)
    worker.start()
    worker.join()
    np.testing.assert_array_equal(get_filler(param).sample((5,)), shared_first)  # undisturbed
    with rng.seeded(3):
        np.testing.assert_array_equal(get_filler(param).sample((5,)), results["own"])
