"""coord_map: the coordinate maps of conv / pool / deconv / crop chains and the Crop layers they give.

Expected maps are worked by hand from the definition (output = a * input + b; a conv of extent k,
stride s, pad p maps x to (x + p - (k - 1) / 2) / s; a deconv the inverse), and FCN's published
crop offsets for VGG-16 FCN-32s/16s/8s (19; 5 and 27; 9 and 31) are checked as facts.
"""

from __future__ import annotations

import numpy as np
import pytest

import engine as caffe
from engine import layers as L
from engine import params as P
from engine.pycaffe.coord_map import (
    AxisMismatchException,
    UndefinedMapException,
    compose,
    conv_params,
    coord_map,
    coord_map_from_to,
    crop,
    inverse,
)


def conv_pool_deconv(ks=3, stride=1, pad=0, pool=2, dstride=2, dpad=0):
    n = caffe.NetSpec()
    n.data = L.Input(shape=dict(dim=[2, 1, 20, 20]))
    n.aux = L.Input(shape=dict(dim=[2, 1, 10, 10]))
    n.conv = L.Convolution(n.data, num_output=2, kernel_size=ks, stride=stride, pad=pad)
    n.pool = L.Pooling(n.conv, pool=P.Pooling.MAX, kernel_size=pool, stride=pool)
    deconv_ks = [2 * s for s in dstride] if isinstance(dstride, list) else 2 * dstride
    n.deconv = L.Deconvolution(
        n.pool, convolution_param=dict(num_output=2, kernel_size=deconv_ks, stride=dstride, pad=dpad)
    )
    return n


def test_single_layer_maps():
    n = conv_pool_deconv(ks=5, stride=2, pad=1)
    axis, a, b = coord_map(n.conv.fn)  # x -> (x + 1 - 2) / 2
    assert axis == 1 and a.tolist() == [0.5] and b.tolist() == [-0.5]
    axis, a, b = coord_map(n.deconv.fn)  # kernel 4, stride 2: x -> 2 x + 1.5
    assert axis == 1 and a.tolist() == [2] and b.tolist() == [1.5]
    assert coord_map(L.ReLU(n.conv).fn) == (None, 1, 0)
    axis, a, b = coord_map(L.Crop(n.conv, n.data, axis=2, offset=[3, 4]).fn)
    assert axis == 1 and a == 1 and b.tolist() == [-3, -4]
    with pytest.raises(UndefinedMapException):
        coord_map(L.InnerProduct(n.conv, num_output=3).fn)


def test_conv_pool_deconv_maps():
    # conv 3 (b = -1), pool 2 (x / 2 - 1/4), deconv 4 stride 2 (2 x + 3/2): identity overall
    n = conv_pool_deconv()
    ax, a, b = coord_map_from_to(n.deconv, n.data)
    assert (ax, a.tolist(), b.tolist()) == (1, [1], [0])
    # pool 4 (x / 4 - 3/8), deconv 8 stride 4 (4 x + 7/2): shifted by one
    n = conv_pool_deconv(pool=4, dstride=4)
    ax, a, b = coord_map_from_to(n.deconv, n.data)
    assert (ax, a.tolist(), b.tolist()) == (1, [1], [-1])


def test_pass_through_layers_and_1x1_conv_keep_the_map():
    n = conv_pool_deconv()
    base = coord_map_from_to(n.deconv, n.data)
    n.relu = L.ReLU(n.deconv)
    n.drop = L.Dropout(n.relu, in_place=True)
    n.conv1x1 = L.Convolution(n.drop, num_output=2, kernel_size=1)
    for top in (n.relu, n.drop, n.conv1x1):
        ax, a, b = coord_map_from_to(top, n.data)
        assert ax == base[0] and a.tolist() == base[1].tolist() and b.tolist() == base[2].tolist()


@pytest.mark.parametrize("pad", [1, 3])
def test_conv_padding_adds_and_deconv_padding_removes_offset(pad):
    _, _, b = coord_map_from_to(*_pair(conv_pool_deconv()))
    _, _, b_conv = coord_map_from_to(*_pair(conv_pool_deconv(pad=pad)))
    _, _, b_deconv = coord_map_from_to(*_pair(conv_pool_deconv(dpad=pad)))
    _, _, b_both = coord_map_from_to(*_pair(conv_pool_deconv(pad=pad, dpad=pad)))
    assert b_conv.tolist() == [b[0] - pad]
    assert b_deconv.tolist() == [b[0] + pad]
    assert b_both.tolist() == b.tolist()


def _pair(n):
    return n.deconv, n.data


def test_multiple_bottoms_map_alike():
    n = conv_pool_deconv()
    n.conv_data, n.conv_aux = L.Convolution(n.data, n.aux, ntop=2, num_output=2, kernel_size=5, stride=2)
    m1 = coord_map_from_to(n.conv_data, n.data)
    m2 = coord_map_from_to(n.conv_aux, n.aux)
    assert m1[0] == m2[0] == 1
    assert m1[1].tolist() == m2[1].tolist() == [2]  # from conv coordinates back to data: x -> 2 x + 2
    assert m1[2].tolist() == m2[2].tolist() == [2]


def test_anisotropic_maps_are_their_isotropic_parts():
    m3 = coord_map_from_to(*_pair(conv_pool_deconv(ks=3, stride=1, pad=0)))
    m5 = coord_map_from_to(*_pair(conv_pool_deconv(ks=5, stride=2, pad=4)))
    m35 = coord_map_from_to(*_pair(conv_pool_deconv(ks=[3, 5], stride=[1, 2], pad=[0, 4])))
    assert m3[0] == m5[0] == m35[0] == 1
    assert m35[1].tolist() == [m3[1][0], m5[1][0]]
    assert m35[2].tolist() == [m3[2][0], m5[2][0]]


def test_nd_conv_and_dilation():
    n = caffe.NetSpec()
    n.data = L.Input(shape=dict(dim=[1, 1, 12, 12, 12]))
    n.conv = L.Convolution(n.data, num_output=2, kernel_size=[3, 3, 3], stride=[1, 1, 1], pad=[0, 1, 2])
    n.pool = L.Pooling(n.conv, pool=P.Pooling.MAX, kernel_size=2, stride=2)
    n.deconv = L.Deconvolution(n.pool, num_output=2, kernel_size=4, stride=2)  # pycaffe's flat spelling
    ax, a, b = coord_map_from_to(n.deconv, n.data)
    assert ax == 1 and a.tolist() == [1, 1, 1] and b.tolist() == [0, -1, -2]
    # a 3-tap kernel dilated by 2 spans 5 pixels
    dilated = L.Convolution(n.data, num_output=1, kernel_size=3, dilation=2, stride=1)
    assert conv_params(dilated.fn)[2].tolist() == [5]
    assert coord_map(dilated.fn)[2].tolist() == [-2]


def test_crop_of_crop_adds_the_offset():
    n = conv_pool_deconv()
    _, _, b = coord_map_from_to(n.deconv, n.data)
    n.crop = L.Crop(n.deconv, n.data, axis=2, offset=3)
    ax, a, b_crop = coord_map_from_to(n.crop, n.data)
    assert ax == 1 and a == 1 and b_crop.tolist() == [b[0] + 3]
    # the same options written as crop_param
    n.crop2 = L.Crop(n.deconv, n.data, crop_param=dict(axis=2, offset=[3]))
    assert coord_map_from_to(n.crop2, n.data)[2].tolist() == [b[0] + 3]


def test_crop_helper_writes_axis_and_offsets():
    n = conv_pool_deconv(pool=4, dstride=4)
    n.crop = crop(n.deconv, n.data)
    layer = n.to_proto().layer[-1]
    assert layer.type == "Crop" and list(layer.bottom) == ["deconv", "data"]
    assert layer.crop_param.axis == 2 and list(layer.crop_param.offset) == [1]
    net = caffe.Net(n.to_proto(), caffe.TEST)
    assert net.blobs["deconv"].data.shape == (2, 2, 24, 24)  # 20 -> conv 18 -> pool 5 -> deconv 24
    assert net.blobs["crop"].data.shape == (2, 2, 20, 20)


def test_crop_aligns_pixels_in_the_engine(tmp_path):
    """A centre-tap 3x3 conv with pad 2 and a centre-tap deconv both shift by one pixel: the crops
    computed by coord_map must give the input back exactly."""
    n = caffe.NetSpec()
    n.data = L.Input(shape=dict(dim=[1, 1, 5, 6]))
    n.conv = L.Convolution(n.data, num_output=1, kernel_size=3, pad=2, bias_term=False)
    n.deconv = L.Deconvolution(n.data, convolution_param=dict(num_output=1, kernel_size=3, bias_term=False))
    n.conv_c = crop(n.conv, n.data)
    n.deconv_c = crop(n.deconv, n.data)
    path = tmp_path / "align.prototxt"
    path.write_text(str(n.to_proto()))
    net = caffe.Net(str(path), caffe.TEST)
    for name in ("conv", "deconv"):
        weights = net.params[name][0].data
        weights[...] = 0
        weights[0, 0, 1, 1] = 1
    image = np.arange(30, dtype=np.float32).reshape(1, 1, 5, 6)
    out = net.forward(data=image)
    assert net.blobs["conv"].data.shape == (1, 1, 7, 8)
    np.testing.assert_array_equal(out["conv_c"], image)
    np.testing.assert_array_equal(out["deconv_c"], image)


def vgg_fcn(input_dim, channels):
    """FCN-32s/16s/8s heads on VGG-16 (pad 100 in conv1_1), as FCN's net.py writes them."""
    n = caffe.NetSpec()
    n.data = L.Input(shape=dict(dim=[1, 1, input_dim, input_dim]))
    bottom = n.data
    for stage, convs in enumerate((2, 2, 3, 3, 3), start=1):
        for i in range(1, convs + 1):
            pad = 100 if (stage, i) == (1, 1) else 1
            n[f"conv{stage}_{i}"] = L.Convolution(bottom, kernel_size=3, num_output=channels, pad=pad)
            bottom = n[f"relu{stage}_{i}"] = L.ReLU(n[f"conv{stage}_{i}"], in_place=True)
        bottom = n[f"pool{stage}"] = L.Pooling(bottom, pool=P.Pooling.MAX, kernel_size=2, stride=2)
    n.fc6 = L.Convolution(bottom, kernel_size=7, num_output=channels)
    n.relu6 = L.ReLU(n.fc6, in_place=True)
    n.drop6 = L.Dropout(n.relu6, dropout_ratio=0.5, in_place=True)
    n.fc7 = L.Convolution(n.drop6, kernel_size=1, num_output=channels)
    n.relu7 = L.ReLU(n.fc7, in_place=True)
    n.score_fr = L.Convolution(n.relu7, kernel_size=1, num_output=2)

    def up(bottom, ks, stride):
        return L.Deconvolution(bottom, convolution_param=dict(num_output=2, kernel_size=ks, stride=stride))

    n.upscore = up(n.score_fr, 64, 32)
    n.score32 = crop(n.upscore, n.data)
    n.upscore2 = up(n.score_fr, 4, 2)
    n.score_pool4 = L.Convolution(n.pool4, kernel_size=1, num_output=2)
    n.score_pool4c = crop(n.score_pool4, n.upscore2)
    n.fuse_pool4 = L.Eltwise(n.upscore2, n.score_pool4c, operation=P.Eltwise.SUM)
    n.upscore16 = up(n.fuse_pool4, 32, 16)
    n.score16 = crop(n.upscore16, n.data)
    n.upscore_pool4 = up(n.fuse_pool4, 4, 2)
    n.score_pool3 = L.Convolution(n.pool3, kernel_size=1, num_output=2)
    n.score_pool3c = crop(n.score_pool3, n.upscore_pool4)
    n.fuse_pool3 = L.Eltwise(n.upscore_pool4, n.score_pool3c, operation=P.Eltwise.SUM)
    n.upscore8 = up(n.fuse_pool3, 16, 8)
    n.score8 = crop(n.upscore8, n.data)
    return n


def test_fcn_crop_offsets_and_shapes(tmp_path):
    n = vgg_fcn(input_dim=36, channels=1)
    layers = {layer.name: layer for layer in n.to_proto().layer}
    offsets = {name: list(layers[name].crop_param.offset) for name in layers if layers[name].type == "Crop"}
    assert offsets == {
        "score32": [19],
        "score_pool4c": [5],
        "score16": [27],
        "score_pool3c": [9],
        "score8": [31],
    }
    assert {layers[name].crop_param.axis for name in offsets} == {2}
    path = tmp_path / "fcn.prototxt"
    path.write_text(str(n.to_proto()))
    net = caffe.Net(str(path), caffe.TEST)
    for name in ("score32", "score16", "score8"):
        assert net.blobs[name].data.shape == (1, 2, 36, 36)


def test_unconnected_tops_raise():
    n = conv_pool_deconv()
    n.ip = L.InnerProduct(n.deconv, num_output=3)
    with pytest.raises(RuntimeError, match="Could not compute map"):
        coord_map_from_to(n.ip, n.data)
    other = L.Input(shape=dict(dim=[1, 1, 4, 4]))
    with pytest.raises(RuntimeError):
        coord_map_from_to(n.deconv, other)


def test_crop_refuses_impossible_crops():
    with pytest.raises(AssertionError, match="scale mismatch"):
        crop(*_pair(conv_pool_deconv(pool=3, dstride=2)))
    with pytest.raises(AssertionError, match="negative offset"):
        crop(*_pair(conv_pool_deconv(dpad=3)))
    n = caffe.NetSpec()
    n.data = L.Input(shape=dict(dim=[1, 1, 8, 8]))
    n.conv = L.Convolution(n.data, num_output=1, kernel_size=2, pad=1)  # shifts by half a pixel
    with pytest.raises(AssertionError, match="noninteger offset"):
        crop(n.conv, n.data)
    with pytest.raises(AssertionError, match="legacy _h/_w"):
        coord_map(L.Convolution(n.data, num_output=1, kernel_h=3, kernel_w=3).fn)


def test_compose_and_inverse():
    first = (1, np.array([2.0]), np.array([1.5]))
    second = (None, 0.5, -1.0)
    ax, a, b = compose(first, second)
    assert ax == 1 and a.tolist() == [1.0] and b.tolist() == [-0.5]  # 2 (0.5 x - 1) + 1.5
    ax, a, b = compose(first, inverse(first))
    assert ax == 1 and a.tolist() == [1.0] and b.tolist() == [0.0]
    assert compose((None, 1, 0), (2, 3, 4)) == (2, 3, 4)
    with pytest.raises(AxisMismatchException):
        compose((1, 1, 0), (2, 1, 0))


def test_pooling_param_dict_and_global_pooling():
    data = L.Input(shape=dict(dim=[1, 1, 8, 8]))
    pooled = L.Pooling(data, pooling_param=dict(kernel_size=3, stride=2, pad=1))
    ax, a, b = coord_map(pooled.fn)
    assert ax == 1 and a.tolist() == [0.5] and b.tolist() == [0.0]
    with pytest.raises(UndefinedMapException):
        coord_map(L.Pooling(data, global_pooling=True).fn)
