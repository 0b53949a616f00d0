"""LSTMUnit: one LSTM step, the forget gate clipped by cont, gradients as Caffe's tests check them."""

from __future__ import annotations

import numpy as np
import pytest

from engine.errors import LayerSetupError
from engine.testing import GradientChecker, blobs, host, make_layer, random_blob

UNIT = 'name: "unit" type: "LSTMUnit"'
N, H = 3, 7  # Caffe's test: 3 instances, num_output 7


def unit_bottoms(xp, cont, n=N, hidden=H):
    c_prev = random_blob((1, n, hidden), xp, seed=5)
    gates = random_blob((1, n, 4 * hidden), xp, seed=6)
    flags = random_blob((1, n), xp)
    flags.data[...] = xp.asarray(np.asarray(cont, np.float64).reshape(1, n))
    return [c_prev, gates, flags]


def sig(v):
    return 1.0 / (1.0 + np.exp(-v))


def naive_unit(c_prev, gates, cont):
    """Element by element, as the equations read."""
    n, hidden = c_prev.shape[1], c_prev.shape[2]
    c = np.zeros((1, n, hidden))
    h = np.zeros((1, n, hidden))
    for k in range(n):
        for d in range(hidden):
            i = sig(gates[0, k, d])
            f = 0.0 if cont[0, k] == 0 else cont[0, k] * sig(gates[0, k, hidden + d])
            o = sig(gates[0, k, 2 * hidden + d])
            g = np.tanh(gates[0, k, 3 * hidden + d])
            c[0, k, d] = f * c_prev[0, k, d] + i * g
            h[0, k, d] = o * np.tanh(c[0, k, d])
    return c, h


def test_setup_shapes_tops_like_the_cell(xp):
    layer, top = make_layer(UNIT, xp), blobs(2, xp)
    layer.setup(unit_bottoms(xp, [0, 1, 1]), top)
    assert top[0].shape == top[1].shape == (1, N, H)
    assert layer.blobs == []


@pytest.mark.parametrize("cont", [[0, 0, 0], [1, 0, 1], [1, 1, 1]])
def test_forward_matches_the_equations(xp, cont):
    layer, bottom, top = make_layer(UNIT, xp), unit_bottoms(xp, cont), blobs(2, xp)
    layer.setup(bottom, top)
    layer.forward(bottom, top)
    c, h = naive_unit(*(host(b.data) for b in bottom))
    np.testing.assert_allclose(host(top[0].data), c, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(host(top[1].data), h, rtol=1e-12, atol=1e-14)
    if cont[0] == 0:  # a new sequence: the previous cell is forgotten
        gates = host(bottom[1].data)[0, 0]
        want = sig(gates[:H]) * np.tanh(gates[3 * H :])
        np.testing.assert_allclose(host(top[0].data)[0, 0], want, rtol=1e-12)


@pytest.mark.parametrize("cont", [[0, 0, 0], [1, 0, 1]])  # TestLSTMUnitGradient, ...NonZeroCont
def test_gradients(xp, cont):
    layer = make_layer(UNIT, xp)
    GradientChecker().check(layer, unit_bottoms(xp, cont), blobs(2, xp), check_bottom=[0, 1])


def test_fractional_cont_uses_the_clipped_forget_gate_in_its_derivative(xp):
    """Caffe's CPU backward: dE/df' = dc * c_prev * f (1 - f) with f = cont * sigmoid(f')."""
    cont = [0.5, 0.25, 1.0]
    layer, bottom, top = make_layer(UNIT, xp), unit_bottoms(xp, cont), blobs(2, xp)
    layer.setup(bottom, top)
    layer.forward(bottom, top)
    top[0].diff[...] = 0
    top[1].diff[...] = 1
    layer.backward(top, [True, True, False], bottom)
    c_prev, gates = host(bottom[0].data)[0], host(bottom[1].data)[0]
    o = sig(gates[:, 2 * H : 3 * H])
    f = np.asarray(cont)[:, None] * sig(gates[:, H : 2 * H])
    tanh_c = np.tanh(host(top[0].data)[0])
    c_term = o * (1 - tanh_c**2)
    np.testing.assert_allclose(
        host(bottom[1].diff)[0, :, H : 2 * H], c_term * c_prev * f * (1 - f), rtol=1e-10
    )
    np.testing.assert_allclose(host(bottom[0].diff)[0], c_term * f, rtol=1e-10)


@pytest.mark.parametrize("wanted", [[False, True, False], [True, False, False]])
def test_asked_for_either_bottom_diff_both_are_written_as_in_caffe(xp, wanted):
    """Caffe's Backward returns only when neither is wanted; otherwise it fills both diffs."""
    layer, bottom, top = make_layer(UNIT, xp), unit_bottoms(xp, [1, 1, 0]), blobs(2, xp)
    layer.setup(bottom, top)
    layer.forward(bottom, top)
    top[0].diff[...] = 0.5
    top[1].diff[...] = 1
    layer.backward(top, [True, True, False], bottom)
    full = [host(b.diff).copy() for b in bottom[:2]]
    for blob in bottom:
        blob.diff[...] = 7
    layer.backward(top, wanted, bottom)
    for blob, want in zip(bottom[:2], full):
        np.testing.assert_array_equal(host(blob.diff), want)
    assert (host(bottom[2].diff) == 7).all()
    for blob in bottom:
        blob.diff[...] = 7
    layer.backward(top, [False, False, False], bottom)  # neither: nothing is touched
    assert all((host(blob.diff) == 7).all() for blob in bottom)
    assert np.abs(full[0]).sum() > 0 and np.abs(full[1]).sum() > 0


def test_no_gradient_for_the_sequence_indicators(xp):
    layer, bottom, top = make_layer(UNIT, xp), unit_bottoms(xp, [1, 1, 1]), blobs(2, xp)
    layer.setup(bottom, top)
    assert layer.allow_force_backward(0) and layer.allow_force_backward(1)
    assert not layer.allow_force_backward(2)
    layer.forward(bottom, top)
    with pytest.raises(LayerSetupError, match="sequence indicators"):
        layer.backward(top, [True, True, True], bottom)


@pytest.mark.parametrize(
    "shapes, message",
    [
        (((1, 3, 7), (1, 3, 27), (1, 3)), "4 x 7"),
        (((1, 3, 7), (1, 2, 28), (1, 3)), "bottom\\[1\\]"),
        (((1, 3, 7), (1, 3, 28), (1, 3, 1)), "bottom\\[2\\]"),
        (((2, 3, 7), (2, 3, 28), (2, 3)), "bottom\\[0\\]"),
        (((3, 7), (1, 3, 28), (1, 3)), "bottom\\[0\\]"),
    ],
)
def test_bad_shapes_are_refused(shapes, message):
    layer = make_layer(UNIT)
    with pytest.raises(LayerSetupError, match=message):
        layer.setup([random_blob(s) for s in shapes], blobs(2))


def test_blob_counts_are_checked():
    with pytest.raises(LayerSetupError, match="exactly 3 bottom"):
        make_layer(UNIT).setup([random_blob((1, 2, 3)), random_blob((1, 2, 12))], blobs(2))
