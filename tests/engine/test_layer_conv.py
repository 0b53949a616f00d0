"""Convolution, Deconvolution and the im2col helpers: naive references, gradients, Caffe's CHECKs, goldens."""

from __future__ import annotations

import numpy as np
import pytest
from vision_support import replay_golden_layer

from engine.errors import LayerSetupError
from engine.layers.im2col import col2im, im2col
from engine.testing import GradientChecker, blobs, host, make_layer, random_blob


def conv_text(kind: str = "Convolution", **fields: object) -> str:
    body = " ".join(
        " ".join(f"{k}: {x}" for x in v) if isinstance(v, list | tuple) else f"{k}: {v}"
        for k, v in fields.items()
    )
    fillers = 'weight_filler { type: "gaussian" std: 0.5 } bias_filler { type: "uniform" min: -1 max: 1 }'
    return f'name: "c" type: "{kind}" convolution_param {{ {body} {fillers} }}'


def per_axis(value: int | tuple[int, ...], n: int) -> tuple[int, ...]:
    return value if isinstance(value, tuple) else (value,) * n


def geometry(fields: dict) -> tuple:
    """(stride, pad, dilation) as the reference functions take them, from conv_text's fields."""
    if "stride_h" in fields:
        return (fields["stride_h"], fields["stride_w"]), (fields["pad_h"], fields["pad_w"]), 1
    listed = {k: tuple(v) if isinstance(v, list) else v for k, v in fields.items()}
    return listed.get("stride", 1), listed.get("pad", 0), listed.get("dilation", 1)


def reference_conv(x, w, b, stride=1, pad=0, dilation=1, group=1):
    """Direct convolution: each output is the dot product of a filter with its (dilated) window."""
    n, _, *spatial = x.shape
    m, cg, *kernel = w.shape
    nd = len(spatial)
    stride, pad, dilation = (per_axis(v, nd) for v in (stride, pad, dilation))
    x = np.pad(x, [(0, 0), (0, 0)] + [(p, p) for p in pad])
    out = [
        (s + 2 * p - d * (k - 1) - 1) // st + 1
        for s, p, d, k, st in zip(spatial, pad, dilation, kernel, stride)
    ]
    y = np.zeros((n, m, *out))
    for img in range(n):
        for o in range(m):
            g = o // (m // group)
            for pos in np.ndindex(*out):
                window = tuple(
                    slice(q * st, q * st + d * (k - 1) + 1, d)
                    for q, st, d, k in zip(pos, stride, dilation, kernel)
                )
                patch = x[(img, slice(g * cg, (g + 1) * cg), *window)]
                y[(img, o, *pos)] = (patch * w[o]).sum() + (b[o] if b is not None else 0)
    return y


def reference_deconv(x, w, b, stride=1, pad=0, dilation=1, group=1):
    """Transposed convolution: every input pixel scatters its filter-weighted copy onto the output."""
    n, c, *spatial = x.shape
    _, og, *kernel = w.shape
    nd = len(spatial)
    stride, pad, dilation = (per_axis(v, nd) for v in (stride, pad, dilation))
    full = [st * (s - 1) + d * (k - 1) + 1 for s, st, d, k in zip(spatial, stride, dilation, kernel)]
    y = np.zeros((n, og * group, *full))
    cg = c // group
    for img in range(n):
        for ch in range(c):
            g = ch // cg
            for pos in np.ndindex(*spatial):
                for off in np.ndindex(*kernel):
                    at = tuple(q * st + o * d for q, st, o, d in zip(pos, stride, off, dilation))
                    y[(img, slice(g * og, (g + 1) * og), *at)] += (
                        w[(ch, slice(None), *off)] * x[(img, ch, *pos)]
                    )
    y = y[(slice(None), slice(None), *(slice(p, f - p) for p, f in zip(pad, full)))]
    return y + (b.reshape(-1, *[1] * nd) if b is not None else 0)


def run(layer, *shapes, xp=np, seed=3):
    bottom = [random_blob(s, xp, seed=seed + i) for i, s in enumerate(shapes)]
    top = blobs(len(shapes), xp)
    layer.setup(bottom, top)
    layer.forward(bottom, top)
    return bottom, top


def params(layer):
    return [host(b.data) for b in layer.blobs] + [None] * (2 - len(layer.blobs))


# --- im2col / col2im -------------------------------------------------------------------------
@pytest.mark.parametrize(
    "spatial, kernel, pad, stride, dilation",
    [
        ((5, 6), (3, 2), (1, 0), (2, 1), (1, 2)),
        ((4,), (3,), (2,), (3,), (1,)),
        ((3, 4, 5), (2, 2, 3), (1, 0, 1), 1, 1),
    ],
)
def test_im2col_entries_and_col2im_adjoint(xp, spatial, kernel, pad, stride, dilation):
    nd = len(spatial)
    pad, stride, dilation = (per_axis(v, nd) for v in (pad, stride, dilation))
    x = np.random.default_rng(0).normal(size=(2, 3, *spatial))
    col = host(im2col(xp.asarray(x), kernel, pad, stride, dilation))
    out = col.shape[1 + nd : -1]
    assert col.shape == (3, *kernel, *out, 2)
    padded = np.pad(x, [(0, 0), (0, 0)] + [(p, p) for p in pad])
    for c, *off in np.ndindex(*col.shape[: 1 + nd]):
        for pos in np.ndindex(*out):
            at = tuple(q * s + o * d for q, s, o, d in zip(pos, stride, off, dilation))
            np.testing.assert_array_equal(col[(c, *off, *pos)], padded[(slice(None), c, *at)])
    # col2im is im2col's adjoint: <im2col(x), c> == <x, col2im(c)>
    other = np.random.default_rng(1).normal(size=col.shape)
    back = host(col2im(xp.asarray(other), spatial, kernel, pad, stride, dilation))
    assert back.shape == x.shape
    assert np.isclose((col * other).sum(), (x * back).sum())


# --- Convolution forward ---------------------------------------------------------------------
@pytest.mark.parametrize(
    "fields, shape",
    [
        ({"num_output": 4, "kernel_size": 3, "stride": 2}, (2, 3, 6, 5)),  # Caffe's SimpleConvolution
        ({"num_output": 4, "kernel_size": 1}, (2, 3, 4, 5)),  # 1x1
        (
            {"num_output": 3, "kernel_size": 3, "stride": 2, "group": 3},
            (2, 3, 6, 4),
        ),  # SimpleConvolutionGroup
        ({"num_output": 4, "kernel_size": 3, "pad": 1, "group": 2}, (2, 4, 5, 5)),
        ({"num_output": 2, "kernel_size": 3, "dilation": [3, 2]}, (1, 2, 8, 7)),  # dilated
        (
            {
                "num_output": 2,
                "kernel_h": 3,
                "kernel_w": 1,
                "pad_h": 2,
                "pad_w": 1,
                "stride_h": 1,
                "stride_w": 3,
            },
            (2, 2, 4, 7),
        ),
        (
            {"num_output": 3, "kernel_size": [2, 3], "pad": [0, 1], "stride": [2, 1], "bias_term": "false"},
            (1, 2, 5, 4),
        ),
        ({"num_output": 2, "kernel_size": 3, "stride": 2}, (2, 3, 3, 3)),  # output 1x1
        ({"num_output": 2, "kernel_size": 2, "stride": 3}, (1, 2, 8, 6)),  # rows left over
        ({"num_output": 3, "kernel_size": [2, 3, 2], "pad": 1, "stride": [1, 2, 1]}, (2, 2, 3, 5, 4)),  # 3-D
        ({"num_output": 2, "kernel_size": 3, "pad": 1, "stride": 2}, (2, 3, 7)),  # 1-D
    ],
)
def test_convolution_forward_matches_direct(xp, fields, shape):
    layer = make_layer(conv_text(**fields), xp)
    bottom, top = run(layer, shape, shape, xp=xp)  # two bottoms -> two tops, one set of weights
    w, b = params(layer)
    stride, pad, dilation = geometry(fields)
    for i in range(2):
        want = reference_conv(host(bottom[i].data), w, b, stride, pad, dilation, fields.get("group", 1))
        assert top[i].shape == want.shape
        np.testing.assert_allclose(host(top[i].data), want, rtol=1e-10, atol=1e-10)


def test_convolution_axis_merges_leading_batch_axes(xp):
    """axis: 2 makes axes 0 and 1 batch axes; the result equals convolving the merged batch."""
    layer = make_layer(conv_text(num_output=2, kernel_size=3, axis=2), xp)
    (x,), (y,) = run(layer, (2, 3, 4, 5, 6), xp=xp)
    w, b = params(layer)
    assert y.shape == (2, 3, 2, 3, 4)
    want = reference_conv(host(x.data).reshape(6, 4, 5, 6), w, b)
    np.testing.assert_allclose(host(y.data), want.reshape(2, 3, 2, 3, 4), rtol=1e-10, atol=1e-10)


def test_convolution_weights_follow_caffe_shape_and_fillers(xp):
    layer = make_layer(
        'name: "c" type: "Convolution" convolution_param { num_output: 6 kernel_h: 2 kernel_w: 3 group: 2 '
        'bias_filler { type: "constant" value: 0.25 } }',
        xp,
    )
    run(layer, (1, 4, 5, 5), xp=xp)
    assert layer.blobs[0].shape == (6, 2, 2, 3)
    assert layer.blobs[1].shape == (6,)
    assert np.all(host(layer.blobs[0].data) == 0)  # Caffe's default filler: constant 0
    assert np.all(host(layer.blobs[1].data) == 0.25)


# --- Deconvolution forward -------------------------------------------------------------------
@pytest.mark.parametrize(
    "fields, shape",
    [
        ({"num_output": 4, "kernel_size": 3, "stride": 2}, (2, 3, 3, 4)),
        ({"num_output": 2, "kernel_size": 4, "stride": 2, "pad": 1}, (1, 3, 3, 3)),  # 2x upsampling
        ({"num_output": 4, "kernel_size": 3, "pad": 1, "group": 2}, (2, 2, 4, 3)),
        ({"num_output": 2, "kernel_size": [3, 2], "stride": [1, 3], "dilation": 2}, (1, 2, 3, 3)),
        ({"num_output": 2, "kernel_size": 2, "stride": 2, "pad": [1, 0, 1]}, (1, 2, 2, 3, 2)),  # 3-D
    ],
)
def test_deconvolution_forward_matches_scatter(xp, fields, shape):
    layer = make_layer(conv_text("Deconvolution", **fields), xp)
    (x,), (y,) = run(layer, shape, xp=xp)
    w, b = params(layer)
    group = fields.get("group", 1)
    assert w.shape[:2] == (shape[1], fields["num_output"] // group)
    want = reference_deconv(host(x.data), w, b, *geometry(fields), group)
    assert y.shape == want.shape
    np.testing.assert_allclose(host(y.data), want, rtol=1e-10, atol=1e-10)


# --- gradients -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "kind, fields, shape",
    [
        ("Convolution", {"num_output": 2, "kernel_size": 3, "stride": 2, "pad": 1}, (2, 2, 5, 4)),
        (
            "Convolution",
            {"num_output": 4, "kernel_size": [2, 3], "group": 2, "dilation": [2, 1]},
            (2, 4, 5, 4),
        ),
        ("Convolution", {"num_output": 3, "kernel_size": 1}, (2, 2, 3, 2)),
        (
            "Convolution",
            {"num_output": 2, "kernel_size": 2, "pad": [1, 0, 0], "stride": [1, 1, 2]},
            (1, 2, 3, 3, 3),
        ),
        ("Deconvolution", {"num_output": 2, "kernel_size": 3, "stride": 2, "pad": 1}, (2, 2, 3, 2)),
        ("Deconvolution", {"num_output": 4, "kernel_size": 2, "group": 2, "dilation": 2}, (1, 2, 3, 3)),
        ("Deconvolution", {"num_output": 2, "kernel_size": 2, "stride": 2}, (1, 2, 2, 2, 2)),
    ],
)
def test_gradients(xp, kind, fields, shape):
    layer = make_layer(conv_text(kind, **fields), xp)
    bottom = [random_blob(shape, xp, seed=5), random_blob(shape, xp, seed=6)]
    GradientChecker(stepsize=1e-3, threshold=1e-3).check(layer, bottom, blobs(2, xp))


def test_parameter_gradients_accumulate_and_respect_propagate_down(xp):
    layer = make_layer(conv_text(num_output=2, kernel_size=2), xp)
    (x,), (y,) = run(layer, (2, 3, 4, 4), xp=xp)
    y.diff[...] = 1
    layer.backward([y], [True], [x])
    once = [host(b.diff).copy() for b in layer.blobs]
    layer.backward([y], [True], [x])
    for blob, first in zip(layer.blobs, once):
        np.testing.assert_allclose(host(blob.diff), 2 * first)
    np.testing.assert_allclose(once[1], np.full(2, 2 * 3 * 3))  # bias: sum of ones over batch and space
    x.diff[...] = 7
    layer.param_propagate_down = [False, False]
    layer.backward([y], [False], [x])
    assert np.all(host(x.diff) == 7)
    np.testing.assert_allclose(host(layer.blobs[0].diff), 2 * once[0])


@pytest.mark.parametrize(
    ("fields", "shape", "out", "taps"),
    [
        # (2 - 3) / 2 truncates to 0 in C++: one output row and column over the 2 x 2 input
        ({"num_output": 2, "kernel_size": 3, "stride": 2}, (2, 3, 2, 2), (1, 1), (slice(0, 2), slice(0, 2))),
        # rows: extent 2 (3 - 1) + 1 = 5 over 3 + 2 = 5 fits; columns: 2 - 5 = -3 > -4 still gives one
        (
            {"num_output": 2, "kernel_size": 3, "pad_h": 1, "stride_h": 1, "stride_w": 4, "dilation": 2},
            (1, 2, 3, 2),
            (1, 1),
            None,
        ),
    ],
)
def test_kernel_past_the_padded_input_by_less_than_the_stride(xp, fields, shape, out, taps):
    """Caffe's output size is (in + 2 pad - extent) / stride + 1 with C++ division, so an extent beyond
    the padded input by less than the stride still gives one output; im2col reads 0 past the input."""
    layer = make_layer(conv_text(**fields), xp)
    (x,), (y,) = run(layer, shape, xp=xp)
    assert y.shape == (shape[0], 2, *out)
    w, b = params(layer)
    xh = host(x.data)
    if taps is not None:  # only the kernel taps over the input count
        want = np.einsum("ocij,ncij->no", w[:, :, taps[0], taps[1]], xh) + b
        np.testing.assert_allclose(host(y.data)[:, :, 0, 0], want, rtol=1e-12)
    else:  # rows -1, 1, 3 (pad 1, dilation 2) and column 0 only (columns 2, 4 lie past the input)
        want = np.einsum("oci,nci->no", w[:, :, 1, 0][:, :, None], xh[:, :, 1, :1]) + b
        np.testing.assert_allclose(host(y.data)[:, :, 0, 0], want, rtol=1e-12)
    bottom = [random_blob(shape, xp, seed=8)]
    GradientChecker(stepsize=1e-3, threshold=1e-3).check(
        make_layer(conv_text(**fields), xp), bottom, blobs(1, xp)
    )


# --- Caffe's CHECKs --------------------------------------------------------------------------
@pytest.mark.parametrize(
    "fields, shape, message",
    [
        ({"num_output": 4, "kernel_size": 3, "group": 2}, (1, 3, 5, 5), "multiple of group"),
        ({"num_output": 3, "kernel_size": 3, "group": 2}, (1, 4, 5, 5), "multiple of group"),
        ({"num_output": 2, "kernel_size": 0}, (1, 3, 5, 5), "nonzero"),
        ({"num_output": 2, "kernel_size": [3, 3]}, (1, 3, 5, 5, 5), "once per spatial dimension"),
        ({"num_output": 2, "kernel_h": 3, "kernel_w": 3}, (1, 3, 5, 5, 5), "2D convolution"),
        ({"num_output": 2, "kernel_size": 3, "kernel_h": 3, "kernel_w": 3}, (1, 3, 5, 5), "not both"),
        ({"num_output": 2, "kernel_size": 3, "stride": 0}, (1, 3, 5, 5), "nonzero"),
        ({"num_output": 0, "kernel_size": 3}, (1, 3, 5, 5), "num_output"),
        ({"num_output": 2, "kernel_size": 4}, (1, 3, 3, 5), "exceeds"),
        ({"num_output": 2, "kernel_size": 3, "stride": 2}, (1, 3, 1, 5), "exceeds"),  # (1 - 3) / 2 + 1 = 0
        ({"num_output": 2, "kernel_size": 3, "axis": 4}, (1, 3, 3, 5), "axis"),
    ],
)
def test_caffe_checks(fields, shape, message):
    layer = make_layer(conv_text(**fields))
    with pytest.raises(LayerSetupError, match=message) as info:
        run(layer, shape)
    assert "'c'" in str(info.value)


def test_loaded_weights_must_fit():
    values = " data: 0" * 24
    text = (
        conv_text(num_output=2, kernel_size=3)
        + f" blobs {{ shape {{ dim: 2 dim: 3 dim: 2 dim: 2 }}{values} }}"
    )
    with pytest.raises(LayerSetupError, match="number of weight blobs"):
        run(make_layer(text), (1, 3, 5, 5))
    text += " blobs { shape { dim: 2 } data: 0 data: 0 }"
    with pytest.raises(LayerSetupError, match="incorrect weight shape"):
        run(make_layer(text), (1, 3, 5, 5))
    empty = conv_text(num_output=2, kernel_size=3) + " blobs { shape { dim: 2 dim: 3 dim: 3 dim: 3 } }"
    with pytest.raises(LayerSetupError, match=r"blobs\[0\] .*0 values for shape 2 3 3 3 \(54\)"):
        make_layer(empty)  # Caffe's FromProto: CHECK_EQ(count_, proto.data_size())


def test_reshape_rejects_changed_channels_and_mismatched_bottoms():
    layer = make_layer(conv_text(num_output=2, kernel_size=3))
    bottom, top = run(layer, (1, 3, 5, 5), (1, 3, 5, 5))
    bottom[1].reshape((1, 3, 6, 5))
    with pytest.raises(LayerSetupError, match="same shape"):
        layer.reshape(bottom, top)
    with pytest.raises(LayerSetupError, match="incompatible"):
        layer.reshape([random_blob((1, 4, 5, 5))], top[:1])


# --- Caffe goldens ---------------------------------------------------------------------------
@pytest.mark.parametrize("case, name", [("convolution", "conv"), ("deconvolution", "deconv")])
def test_matches_caffe_golden(xp, goldens, case, name):
    replay_golden_layer(goldens, case, name, xp)
