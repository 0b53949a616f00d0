"""The cases of Caffe 1.0's test_upgrade_proto.cpp (padding layers, V0 -> V1 -> V2, every V0 field,
V1 layer types, solver types), plus the later upgrades UpgradeNetAsNeeded applies (data transformation,
input fields, BatchNorm param specs), what Caffe refuses, and the order reads apply them in."""

# ruff: noqa: E501  (the nets are Caffe's test cases, kept about one layer a line)

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from google.protobuf import text_format

from proto import caffe_pb2, cli_upgrade, upgrade, upgrade_v0
from proto.binaryio import read_caffemodel, write_caffemodel
from proto.errors import FormatError
from proto.textio import read_net


def _net(text: str) -> caffe_pb2.NetParameter:
    return text_format.Parse(text, caffe_pb2.NetParameter())


def _same(actual: caffe_pb2.NetParameter, expected_text: str) -> None:
    expected = _net(expected_text)
    assert text_format.MessageToString(actual) == text_format.MessageToString(expected)


def _v1(text: str) -> caffe_pb2.NetParameter:
    """A V0 net's V1 form, as UpgradeV0Net makes it."""
    return upgrade_v0.upgrade_v0_net(_net(text), "<test>", [])


def _v2(net: caffe_pb2.NetParameter) -> caffe_pb2.NetParameter:
    return upgrade.upgrade_net(net).net


# --- Caffe's PaddingLayerUpgradeTest -------------------------------------------------------------
DATA_V0 = """
layers {
  layer { name: 'data' type: 'data' source: '/home/jiayq/Data/ILSVRC12/train-leveldb'
          meanfile: '/home/jiayq/Data/ILSVRC12/image_mean.binaryproto' batchsize: 256 cropsize: 227 mirror: true }
  top: 'data' top: 'label'
}
"""
FC8_V0 = """
layers {
  layer { name: 'fc8' type: 'innerproduct' num_output: 1000
          weight_filler { type: 'gaussian' std: 0.01 } bias_filler { type: 'constant' value: 0 }
          blobs_lr: 1. blobs_lr: 2. weight_decay: 1. weight_decay: 0. }
  bottom: 'conv1' top: 'fc8'
}
layers { layer { name: 'loss' type: 'softmax_loss' } bottom: 'fc8' bottom: 'label' }
"""


def _conv_v0(name: str, bottom: str, pad: str = "") -> str:
    return f"""
layers {{
  layer {{ name: '{name}' type: 'conv' num_output: 96 kernelsize: 11 stride: 4 {pad}
          weight_filler {{ type: 'gaussian' std: 0.01 }} bias_filler {{ type: 'constant' value: 0. }}
          blobs_lr: 1. blobs_lr: 2. weight_decay: 1. weight_decay: 0. }}
  bottom: '{bottom}' top: '{name}'
}}
"""


PAD1_V0 = "layers { layer { name: 'pad1' type: 'padding' pad: 2 } bottom: 'data' top: 'pad1' }"


def _fold(text: str) -> caffe_pb2.NetParameter:
    folded = upgrade_v0.fold_padding_layers(_net(text), "<test>")
    again = upgrade_v0.fold_padding_layers(folded, "<test>")
    assert again == folded  # idempotent, as Caffe's test checks
    return folded


def test_padding_simple():
    source = "name: 'CaffeNet' " + DATA_V0 + PAD1_V0 + _conv_v0("conv1", "pad1") + FC8_V0
    _same(_fold(source), "name: 'CaffeNet' " + DATA_V0 + _conv_v0("conv1", "data", "pad: 2") + FC8_V0)


def test_padding_two_tops():
    # One padding layer read by two convolutions: both take its pad and its input.
    source = "name: 'CaffeNet' " + DATA_V0 + PAD1_V0 + _conv_v0("conv1", "pad1") + FC8_V0
    source = source.replace(
        "layers { layer { name: 'loss'", _conv_v0("conv2", "pad1") + "layers { layer { name: 'loss'"
    )
    expected = "name: 'CaffeNet' " + DATA_V0 + _conv_v0("conv1", "data", "pad: 2") + FC8_V0
    expected = expected.replace(
        "layers { layer { name: 'loss'", _conv_v0("conv2", "data", "pad: 2") + "layers { layer { name: 'loss'"
    )
    _same(_fold(source), expected)


# The CaffeNet of Caffe's ImageNet cases, V0 with padding layers.
CAFFENET_V0 = """
name: 'CaffeNet'
layers { layer { name: 'data' type: 'data' source: '/home/jiayq/Data/ILSVRC12/train-leveldb'
                 meanfile: '/home/jiayq/Data/ILSVRC12/image_mean.binaryproto' batchsize: 256
                 cropsize: 227 mirror: true } top: 'data' top: 'label' }
layers { layer { name: 'conv1' type: 'conv' num_output: 96 kernelsize: 11 stride: 4
                 weight_filler { type: 'gaussian' std: 0.01 } bias_filler { type: 'constant' value: 0. }
                 blobs_lr: 1. blobs_lr: 2. weight_decay: 1. weight_decay: 0. } bottom: 'data' top: 'conv1' }
layers { layer { name: 'relu1' type: 'relu' } bottom: 'conv1' top: 'conv1' }
layers { layer { name: 'pool1' type: 'pool' pool: MAX kernelsize: 3 stride: 2 } bottom: 'conv1' top: 'pool1' }
layers { layer { name: 'norm1' type: 'lrn' local_size: 5 alpha: 0.0001 beta: 0.75 }
         bottom: 'pool1' top: 'norm1' }
layers { layer { name: 'pad2' type: 'padding' pad: 2 } bottom: 'norm1' top: 'pad2' }
layers { layer { name: 'conv2' type: 'conv' num_output: 256 group: 2 kernelsize: 5
                 weight_filler { type: 'gaussian' std: 0.01 } bias_filler { type: 'constant' value: 1. }
                 blobs_lr: 1. blobs_lr: 2. weight_decay: 1. weight_decay: 0. } bottom: 'pad2' top: 'conv2' }
layers { layer { name: 'relu2' type: 'relu' } bottom: 'conv2' top: 'conv2' }
layers { layer { name: 'pool2' type: 'pool' pool: MAX kernelsize: 3 stride: 2 } bottom: 'conv2' top: 'pool2' }
layers { layer { name: 'norm2' type: 'lrn' local_size: 5 alpha: 0.0001 beta: 0.75 }
         bottom: 'pool2' top: 'norm2' }
layers { layer { name: 'pad3' type: 'padding' pad: 1 } bottom: 'norm2' top: 'pad3' }
layers { layer { name: 'conv3' type: 'conv' num_output: 384 kernelsize: 3
                 weight_filler { type: 'gaussian' std: 0.01 } bias_filler { type: 'constant' value: 0. }
                 blobs_lr: 1. blobs_lr: 2. weight_decay: 1. weight_decay: 0. } bottom: 'pad3' top: 'conv3' }
layers { layer { name: 'relu3' type: 'relu' } bottom: 'conv3' top: 'conv3' }
layers { layer { name: 'pad4' type: 'padding' pad: 1 } bottom: 'conv3' top: 'pad4' }
layers { layer { name: 'conv4' type: 'conv' num_output: 384 group: 2 kernelsize: 3
                 weight_filler { type: 'gaussian' std: 0.01 } bias_filler { type: 'constant' value: 1. }
                 blobs_lr: 1. blobs_lr: 2. weight_decay: 1. weight_decay: 0. } bottom: 'pad4' top: 'conv4' }
layers { layer { name: 'relu4' type: 'relu' } bottom: 'conv4' top: 'conv4' }
layers { layer { name: 'pad5' type: 'padding' pad: 1 } bottom: 'conv4' top: 'pad5' }
layers { layer { name: 'conv5' type: 'conv' num_output: 256 group: 2 kernelsize: 3
                 weight_filler { type: 'gaussian' std: 0.01 } bias_filler { type: 'constant' value: 1. }
                 blobs_lr: 1. blobs_lr: 2. weight_decay: 1. weight_decay: 0. } bottom: 'pad5' top: 'conv5' }
layers { layer { name: 'relu5' type: 'relu' } bottom: 'conv5' top: 'conv5' }
layers { layer { name: 'pool5' type: 'pool' kernelsize: 3 pool: MAX stride: 2 } bottom: 'conv5' top: 'pool5' }
layers { layer { name: 'fc6' type: 'innerproduct' num_output: 4096
                 weight_filler { type: 'gaussian' std: 0.005 } bias_filler { type: 'constant' value: 1. }
                 blobs_lr: 1. blobs_lr: 2. weight_decay: 1. weight_decay: 0. } bottom: 'pool5' top: 'fc6' }
layers { layer { name: 'relu6' type: 'relu' } bottom: 'fc6' top: 'fc6' }
layers { layer { name: 'drop6' type: 'dropout' dropout_ratio: 0.5 } bottom: 'fc6' top: 'fc6' }
layers { layer { name: 'fc7' type: 'innerproduct' num_output: 4096
                 weight_filler { type: 'gaussian' std: 0.005 } bias_filler { type: 'constant' value: 1. }
                 blobs_lr: 1. blobs_lr: 2. weight_decay: 1. weight_decay: 0. } bottom: 'fc6' top: 'fc7' }
layers { layer { name: 'relu7' type: 'relu' } bottom: 'fc7' top: 'fc7' }
layers { layer { name: 'drop7' type: 'dropout' dropout_ratio: 0.5 } bottom: 'fc7' top: 'fc7' }
layers { layer { name: 'fc8' type: 'innerproduct' num_output: 1000
                 weight_filler { type: 'gaussian' std: 0.01 } bias_filler { type: 'constant' value: 0 }
                 blobs_lr: 1. blobs_lr: 2. weight_decay: 1. weight_decay: 0. } bottom: 'fc7' top: 'fc8' }
layers { layer { name: 'loss' type: 'softmax_loss' } bottom: 'fc8' bottom: 'label' }
"""

# Caffe's expected V2 form of CAFFENET_V0.
CAFFENET_V2 = """
name: 'CaffeNet'
layer { name: 'data' type: 'Data' top: 'data' top: 'label'
  data_param { source: '/home/jiayq/Data/ILSVRC12/train-leveldb' batch_size: 256 }
  transform_param { crop_size: 227 mirror: true mean_file: '/home/jiayq/Data/ILSVRC12/image_mean.binaryproto' } }
layer { name: 'conv1' type: 'Convolution' bottom: 'data' top: 'conv1'
  convolution_param { num_output: 96 kernel_size: 11 stride: 4
    weight_filler { type: 'gaussian' std: 0.01 } bias_filler { type: 'constant' value: 0. } }
  param { lr_mult: 1 decay_mult: 1 } param { lr_mult: 2 decay_mult: 0 } }
layer { name: 'relu1' type: 'ReLU' bottom: 'conv1' top: 'conv1' }
layer { name: 'pool1' type: 'Pooling' bottom: 'conv1' top: 'pool1'
  pooling_param { pool: MAX kernel_size: 3 stride: 2 } }
layer { name: 'norm1' type: 'LRN' bottom: 'pool1' top: 'norm1' lrn_param { local_size: 5 alpha: 0.0001 beta: 0.75 } }
layer { name: 'conv2' type: 'Convolution' bottom: 'norm1' top: 'conv2'
  convolution_param { num_output: 256 group: 2 kernel_size: 5 pad: 2
    weight_filler { type: 'gaussian' std: 0.01 } bias_filler { type: 'constant' value: 1. } }
  param { lr_mult: 1 decay_mult: 1 } param { lr_mult: 2 decay_mult: 0 } }
layer { name: 'relu2' type: 'ReLU' bottom: 'conv2' top: 'conv2' }
layer { name: 'pool2' type: 'Pooling' bottom: 'conv2' top: 'pool2'
  pooling_param { pool: MAX kernel_size: 3 stride: 2 } }
layer { name: 'norm2' type: 'LRN' bottom: 'pool2' top: 'norm2' lrn_param { local_size: 5 alpha: 0.0001 beta: 0.75 } }
layer { name: 'conv3' type: 'Convolution' bottom: 'norm2' top: 'conv3'
  convolution_param { num_output: 384 kernel_size: 3 pad: 1
    weight_filler { type: 'gaussian' std: 0.01 } bias_filler { type: 'constant' value: 0. } }
  param { lr_mult: 1 decay_mult: 1 } param { lr_mult: 2 decay_mult: 0 } }
layer { name: 'relu3' type: 'ReLU' bottom: 'conv3' top: 'conv3' }
layer { name: 'conv4' type: 'Convolution' bottom: 'conv3' top: 'conv4'
  convolution_param { num_output: 384 group: 2 kernel_size: 3 pad: 1
    weight_filler { type: 'gaussian' std: 0.01 } bias_filler { type: 'constant' value: 1. } }
  param { lr_mult: 1 decay_mult: 1 } param { lr_mult: 2 decay_mult: 0 } }
layer { name: 'relu4' type: 'ReLU' bottom: 'conv4' top: 'conv4' }
layer { name: 'conv5' type: 'Convolution' bottom: 'conv4' top: 'conv5'
  convolution_param { num_output: 256 group: 2 kernel_size: 3 pad: 1
    weight_filler { type: 'gaussian' std: 0.01 } bias_filler { type: 'constant' value: 1. } }
  param { lr_mult: 1 decay_mult: 1 } param { lr_mult: 2 decay_mult: 0 } }
layer { name: 'relu5' type: 'ReLU' bottom: 'conv5' top: 'conv5' }
layer { name: 'pool5' type: 'Pooling' bottom: 'conv5' top: 'pool5'
  pooling_param { kernel_size: 3 pool: MAX stride: 2 } }
layer { name: 'fc6' type: 'InnerProduct' bottom: 'pool5' top: 'fc6'
  inner_product_param { num_output: 4096
    weight_filler { type: 'gaussian' std: 0.005 } bias_filler { type: 'constant' value: 1. } }
  param { lr_mult: 1 decay_mult: 1 } param { lr_mult: 2 decay_mult: 0 } }
layer { name: 'relu6' type: 'ReLU' bottom: 'fc6' top: 'fc6' }
layer { name: 'drop6' type: 'Dropout' bottom: 'fc6' top: 'fc6' dropout_param { dropout_ratio: 0.5 } }
layer { name: 'fc7' type: 'InnerProduct' bottom: 'fc6' top: 'fc7'
  inner_product_param { num_output: 4096
    weight_filler { type: 'gaussian' std: 0.005 } bias_filler { type: 'constant' value: 1. } }
  param { lr_mult: 1 decay_mult: 1 } param { lr_mult: 2 decay_mult: 0 } }
layer { name: 'relu7' type: 'ReLU' bottom: 'fc7' top: 'fc7' }
layer { name: 'drop7' type: 'Dropout' bottom: 'fc7' top: 'fc7' dropout_param { dropout_ratio: 0.5 } }
layer { name: 'fc8' type: 'InnerProduct' bottom: 'fc7' top: 'fc8'
  inner_product_param { num_output: 1000
    weight_filler { type: 'gaussian' std: 0.01 } bias_filler { type: 'constant' value: 0 } }
  param { lr_mult: 1 decay_mult: 1 } param { lr_mult: 2 decay_mult: 0 } }
layer { name: 'loss' type: 'SoftmaxWithLoss' bottom: 'fc8' bottom: 'label' }
"""


def test_padding_imagenet():
    folded = _fold(CAFFENET_V0)
    names = [c.layer.name for c in folded.layers]
    assert not [n for n in names if n.startswith("pad")] and len(names) == 28 - 4
    pads = {c.layer.name: (c.layer.pad, list(c.bottom)) for c in folded.layers if c.layer.HasField("pad")}
    assert pads == {
        "conv2": (2, ["norm1"]),
        "conv3": (1, ["norm2"]),
        "conv4": (1, ["conv3"]),
        "conv5": (1, ["conv4"]),
    }
    original = {c.layer.name: c for c in _net(CAFFENET_V0).layers}
    for connection in folded.layers:  # every other field is left as it was
        before = caffe_pb2.V1LayerParameter()
        before.CopyFrom(original[connection.layer.name])
        if connection.layer.HasField("pad"):
            before.layer.pad = connection.layer.pad
            before.bottom[0] = connection.bottom[0]
        assert connection == before, connection.layer.name


# --- Caffe's NetUpgradeTest ----------------------------------------------------------------------
SIMPLE_V1 = """
name: 'CaffeNet'
layers { name: 'data' type: DATA top: 'data' top: 'label'
  data_param { source: '/home/jiayq/Data/ILSVRC12/train-leveldb' batch_size: 256 }
  transform_param { crop_size: 227 mirror: true mean_file: '/home/jiayq/Data/ILSVRC12/image_mean.binaryproto' } }
layers { name: 'conv1' type: CONVOLUTION bottom: 'data' top: 'conv1'
  convolution_param { num_output: 96 kernel_size: 11 stride: 4 pad: 2
    weight_filler { type: 'gaussian' std: 0.01 } bias_filler { type: 'constant' value: 0. } }
  blobs_lr: 1. blobs_lr: 2. weight_decay: 1. weight_decay: 0. }
layers { name: 'fc8' type: INNER_PRODUCT bottom: 'conv1' top: 'fc8'
  inner_product_param { num_output: 1000
    weight_filler { type: 'gaussian' std: 0.01 } bias_filler { type: 'constant' value: 0 } }
  blobs_lr: 1. blobs_lr: 2. weight_decay: 1. weight_decay: 0. }
layers { name: 'loss' type: SOFTMAX_LOSS bottom: 'fc8' bottom: 'label' }
"""

SIMPLE_V2 = """
name: 'CaffeNet'
layer { name: 'data' type: 'Data' top: 'data' top: 'label'
  data_param { source: '/home/jiayq/Data/ILSVRC12/train-leveldb' batch_size: 256 }
  transform_param { crop_size: 227 mirror: true mean_file: '/home/jiayq/Data/ILSVRC12/image_mean.binaryproto' } }
layer { name: 'conv1' type: 'Convolution' bottom: 'data' top: 'conv1'
  convolution_param { num_output: 96 kernel_size: 11 stride: 4 pad: 2
    weight_filler { type: 'gaussian' std: 0.01 } bias_filler { type: 'constant' value: 0. } }
  param { lr_mult: 1 decay_mult: 1 } param { lr_mult: 2 decay_mult: 0 } }
layer { name: 'fc8' type: 'InnerProduct' bottom: 'conv1' top: 'fc8'
  inner_product_param { num_output: 1000
    weight_filler { type: 'gaussian' std: 0.01 } bias_filler { type: 'constant' value: 0 } }
  param { lr_mult: 1 decay_mult: 1 } param { lr_mult: 2 decay_mult: 0 } }
layer { name: 'loss' type: 'SoftmaxWithLoss' bottom: 'fc8' bottom: 'label' }
"""


def test_net_simple_v0_to_v1_to_v2():
    source = "name: 'CaffeNet' " + DATA_V0 + PAD1_V0 + _conv_v0("conv1", "pad1") + FC8_V0
    _same(_v1(source), SIMPLE_V1)
    result = upgrade.upgrade_net(_net(SIMPLE_V1))
    assert result.steps == (upgrade.STEP_V1,) and result.problems == ()
    _same(result.net, SIMPLE_V2)
    _same(_v2(_net(source)), SIMPLE_V2)  # and all at once, as a read does


ALL_PARAMS_V0 = """
name: 'CaffeNet'
input: 'input_data' input_dim: 64 input_dim: 3 input_dim: 32 input_dim: 32
layers { layer { name: 'data' type: 'data' source: '/home/jiayq/Data/ILSVRC12/train-leveldb'
                 meanfile: '/home/jiayq/Data/ILSVRC12/image_mean.binaryproto' batchsize: 256 cropsize: 227
                 mirror: true scale: 0.25 rand_skip: 73 } top: 'data' top: 'label' }
layers { layer { name: 'images' type: 'images' source: '/home/jiayq/Data/ILSVRC12/train-images'
                 meanfile: '/home/jiayq/Data/ILSVRC12/image_mean.binaryproto' batchsize: 256 cropsize: 227
                 mirror: true scale: 0.25 rand_skip: 73 shuffle_images: true new_height: 40 new_width: 30 }
         top: 'images_data' top: 'images_label' }
layers { layer { name: 'window_data' type: 'window_data' source: '/home/jiayq/Data/ILSVRC12/train-leveldb'
                 meanfile: '/home/jiayq/Data/ILSVRC12/image_mean.binaryproto' batchsize: 256 cropsize: 227
                 mirror: true det_fg_threshold: 0.25 det_bg_threshold: 0.75 det_fg_fraction: 0.5
                 det_context_pad: 16 det_crop_mode: 'square' } top: 'window_data' top: 'window_label' }
layers { layer { name: 'hdf5data' type: 'hdf5_data' source: '/my/hdf5/data' batchsize: 256 } top: 'hdf5data' }
layers { layer { name: 'conv1' type: 'conv' num_output: 96 biasterm: false pad: 4 kernelsize: 11 stride: 4
                 weight_filler { type: 'gaussian' std: 0.01 } bias_filler { type: 'constant' value: 3. }
                 blobs_lr: 1. blobs_lr: 2. weight_decay: 1. weight_decay: 0. } bottom: 'data' top: 'conv1' }
layers { layer { name: 'pool1ave' type: 'pool' pool: AVE kernelsize: 3 stride: 2 } bottom: 'conv1' top: 'pool1ave' }
layers { layer { name: 'pool1stoch' type: 'pool' pool: STOCHASTIC kernelsize: 4 stride: 5 }
         bottom: 'conv1' top: 'pool1stoch' }
layers { layer { name: 'concat' type: 'concat' concat_dim: 2 }
         bottom: 'pool1ave' bottom: 'pool1stoch' top: 'pool1concat' }
layers { layer { name: 'norm1' type: 'lrn' local_size: 5 alpha: 0.0001 beta: 0.75 } bottom: 'pool1concat' top: 'norm1' }
layers { layer { name: 'fc6' type: 'innerproduct' num_output: 4096 biasterm: false
                 weight_filler { type: 'gaussian' std: 0.005 } bias_filler { type: 'constant' value: 1. }
                 blobs_lr: 1. blobs_lr: 2. weight_decay: 1. weight_decay: 0. } bottom: 'norm1' top: 'fc6' }
layers { layer { name: 'relu6' type: 'relu' } bottom: 'fc6' top: 'fc6' }
layers { layer { name: 'drop6' type: 'dropout' dropout_ratio: 0.2 } bottom: 'fc6' top: 'fc6' }
layers { layer { name: 'loss' type: 'infogain_loss' source: '/my/infogain/matrix' } bottom: 'fc6' bottom: 'label' }
layers { layer { name: 'accuracy' type: 'accuracy' } }
layers { layer { name: 'bnll' type: 'bnll' } }
layers { layer { name: 'euclidean_loss' type: 'euclidean_loss' } }
layers { layer { name: 'flatten' type: 'flatten' } }
layers { layer { name: 'hdf5_output' type: 'hdf5_output' hdf5_output_param { file_name: '/my/hdf5/output/file' } } }
layers { layer { name: 'im2col' type: 'im2col' } }
layers { layer { name: 'images' type: 'images' } }
layers { layer { name: 'multinomial_logistic_loss' type: 'multinomial_logistic_loss' } }
layers { layer { name: 'sigmoid' type: 'sigmoid' } }
layers { layer { name: 'softmax' type: 'softmax' } }
layers { layer { name: 'split' type: 'split' } }
layers { layer { name: 'tanh' type: 'tanh' } }
"""

ALL_PARAMS_V1 = """
name: 'CaffeNet'
input: 'input_data' input_dim: 64 input_dim: 3 input_dim: 32 input_dim: 32
layers { name: 'data' type: DATA top: 'data' top: 'label'
  data_param { source: '/home/jiayq/Data/ILSVRC12/train-leveldb' batch_size: 256 rand_skip: 73 }
  transform_param { crop_size: 227 mirror: true scale: 0.25
                    mean_file: '/home/jiayq/Data/ILSVRC12/image_mean.binaryproto' } }
layers { name: 'images' type: IMAGE_DATA top: 'images_data' top: 'images_label'
  image_data_param { source: '/home/jiayq/Data/ILSVRC12/train-images' batch_size: 256 rand_skip: 73
                     shuffle: true new_height: 40 new_width: 30 }
  transform_param { mean_file: '/home/jiayq/Data/ILSVRC12/image_mean.binaryproto' crop_size: 227
                    mirror: true scale: 0.25 } }
layers { name: 'window_data' type: WINDOW_DATA top: 'window_data' top: 'window_label'
  window_data_param { source: '/home/jiayq/Data/ILSVRC12/train-leveldb' batch_size: 256 fg_threshold: 0.25
                      bg_threshold: 0.75 fg_fraction: 0.5 context_pad: 16 crop_mode: 'square' }
  transform_param { mirror: true crop_size: 227 mean_file: '/home/jiayq/Data/ILSVRC12/image_mean.binaryproto' } }
layers { name: 'hdf5data' type: HDF5_DATA top: 'hdf5data'
  hdf5_data_param { source: '/my/hdf5/data' batch_size: 256 } }
layers { name: 'conv1' type: CONVOLUTION bottom: 'data' top: 'conv1'
  convolution_param { num_output: 96 bias_term: false pad: 4 kernel_size: 11 stride: 4
    weight_filler { type: 'gaussian' std: 0.01 } bias_filler { type: 'constant' value: 3. } }
  blobs_lr: 1. blobs_lr: 2. weight_decay: 1. weight_decay: 0. }
layers { name: 'pool1ave' type: POOLING bottom: 'conv1' top: 'pool1ave'
  pooling_param { pool: AVE kernel_size: 3 stride: 2 } }
layers { name: 'pool1stoch' type: POOLING bottom: 'conv1' top: 'pool1stoch'
  pooling_param { pool: STOCHASTIC kernel_size: 4 stride: 5 } }
layers { name: 'concat' type: CONCAT bottom: 'pool1ave' bottom: 'pool1stoch' top: 'pool1concat'
  concat_param { concat_dim: 2 } }
layers { name: 'norm1' type: LRN bottom: 'pool1concat' top: 'norm1'
  lrn_param { local_size: 5 alpha: 0.0001 beta: 0.75 } }
layers { name: 'fc6' type: INNER_PRODUCT bottom: 'norm1' top: 'fc6'
  inner_product_param { num_output: 4096 bias_term: false
    weight_filler { type: 'gaussian' std: 0.005 } bias_filler { type: 'constant' value: 1. } }
  blobs_lr: 1. blobs_lr: 2. weight_decay: 1. weight_decay: 0. }
layers { name: 'relu6' type: RELU bottom: 'fc6' top: 'fc6' }
layers { name: 'drop6' type: DROPOUT bottom: 'fc6' top: 'fc6' dropout_param { dropout_ratio: 0.2 } }
layers { name: 'loss' type: INFOGAIN_LOSS bottom: 'fc6' bottom: 'label'
  infogain_loss_param { source: '/my/infogain/matrix' } }
layers { name: 'accuracy' type: ACCURACY }
layers { name: 'bnll' type: BNLL }
layers { name: 'euclidean_loss' type: EUCLIDEAN_LOSS }
layers { name: 'flatten' type: FLATTEN }
layers { name: 'hdf5_output' type: HDF5_OUTPUT hdf5_output_param { file_name: '/my/hdf5/output/file' } }
layers { name: 'im2col' type: IM2COL }
layers { name: 'images' type: IMAGE_DATA }
layers { name: 'multinomial_logistic_loss' type: MULTINOMIAL_LOGISTIC_LOSS }
layers { name: 'sigmoid' type: SIGMOID }
layers { name: 'softmax' type: SOFTMAX }
layers { name: 'split' type: SPLIT }
layers { name: 'tanh' type: TANH }
"""


def test_net_all_params_v0_to_v1():
    problems: list[str] = []
    v1 = upgrade_v0.upgrade_v0_net(_net(ALL_PARAMS_V0), "<test>", problems)
    assert problems == []
    _same(v1, ALL_PARAMS_V1)


def test_net_all_params_then_to_the_current_format():
    result = upgrade.upgrade_net(_net(ALL_PARAMS_V0))
    assert result.steps == (upgrade.STEP_V0, upgrade.STEP_V1, upgrade.STEP_INPUT)
    net = result.net
    assert not net.layers and not net.input and not net.input_dim
    first = net.layer[0]
    assert (first.name, first.type, list(first.top)) == ("input", "Input", ["input_data"])
    assert [list(s.dim) for s in first.input_param.shape] == [[64, 3, 32, 32]]
    # Without the Input layer in front, the rest is the V1 net with its enum types as strings.
    rest = caffe_pb2.NetParameter(name=net.name)
    rest.layer.extend(net.layer[1:])
    expected = _v2(
        _net(
            ALL_PARAMS_V1.replace(
                "input: 'input_data' input_dim: 64 input_dim: 3 input_dim: 32 input_dim: 32", ""
            )
        )
    )
    assert rest == expected
    assert [layer.type for layer in net.layer[1:6]] == [
        "Data",
        "ImageData",
        "WindowData",
        "HDF5Data",
        "Convolution",
    ]


def test_net_imagenet_v0_to_v2():
    result = upgrade.upgrade_net(_net(CAFFENET_V0), "caffenet.prototxt")
    assert result.steps == (upgrade.STEP_V0, upgrade.STEP_V1) and result.problems == ()
    _same(result.net, CAFFENET_V2)


def test_every_v1_layer_type_names_a_registered_layer():
    from engine.layers import registry

    known = set(registry.layer_types())
    for value in caffe_pb2.V1LayerParameter.LayerType.values():
        name = upgrade.V1_LAYER_TYPES[value]
        if not name:
            assert value == caffe_pb2.V1LayerParameter.NONE
            continue
        assert name in known, name
        layer = caffe_pb2.NetParameter()
        layer.layers.add(name="x", type=value)
        assert _v2(layer).layer[0].type == name


# --- Caffe's SolverTypeUpgradeTest ---------------------------------------------------------------
LENET_SOLVER = """net: 'examples/mnist/lenet_train_test.prototxt' test_iter: 100 test_interval: 500
base_lr: 0.01 momentum: 0.0 weight_decay: 0.0005 lr_policy: 'inv' gamma: 0.0001 power: 0.75
display: 100 max_iter: 10000 snapshot: 5000 snapshot_prefix: 'examples/mnist/lenet_rmsprop' solver_mode: GPU
"""


@pytest.mark.parametrize(
    ("old", "new"),
    [("SGD", "SGD"), ("NESTEROV", "Nesterov"), ("ADAGRAD", "AdaGrad"), ("RMSPROP", "RMSProp"),
     ("ADADELTA", "AdaDelta"), ("ADAM", "Adam")],
)  # fmt: skip
def test_solver_type_upgrade(old: str, new: str):
    before = text_format.Parse(LENET_SOLVER + f"solver_type: {old}", caffe_pb2.SolverParameter())
    expected = text_format.Parse(LENET_SOLVER + f"type: '{new}'", caffe_pb2.SolverParameter())
    assert upgrade.solver_needs_upgrade(before)
    assert upgrade.upgrade_solver(before).solver == expected
    assert not upgrade.solver_needs_upgrade(expected)


# --- the upgrades after V1, in UpgradeNetAsNeeded ----------------------------------------------------
@pytest.mark.parametrize(("kind", "param"), [("DATA", "data_param"), ("IMAGE_DATA", "image_data_param"),
                                            ("WINDOW_DATA", "window_data_param")])  # fmt: skip
def test_data_transformation_fields_move_into_transform_param(kind: str, param: str):
    net = _net(f"layers {{ name: 'd' type: {kind} top: 'x' {param} {{ source: 's' batch_size: 4 "
               "scale: 0.5 mean_file: 'm.binaryproto' crop_size: 9 mirror: true } }")  # fmt: skip
    assert upgrade.net_needs_data_upgrade(net) and upgrade.net_needs_upgrade(net)
    result = upgrade.upgrade_net(net)
    assert result.steps == (upgrade.STEP_DATA, upgrade.STEP_V1)
    layer = result.net.layer[0]
    assert text_format.MessageToString(layer.transform_param, as_one_line=True) == (
        'scale: 0.5 mirror: true crop_size: 9 mean_file: "m.binaryproto"'
    )
    assert text_format.MessageToString(getattr(layer, param), as_one_line=True) == 'source: "s" batch_size: 4'
    # The same fields on another layer type are not Caffe's concern.
    other = _net("layers { name: 'd' type: MEMORY_DATA memory_data_param { batch_size: 1 } }")
    assert not upgrade.net_needs_data_upgrade(other)


def test_a_current_net_needs_nothing_and_each_legacy_form_is_detected():
    current = _net("layer { name: 'x' type: 'Input' top: 'x' input_param { shape { dim: 1 } } }")
    assert not upgrade.net_needs_upgrade(current) and upgrade.upgrade_net(current).steps == ()
    cases = {
        "layers { layer { name: 'r' type: 'relu' } }": upgrade_v0.net_needs_v0_to_v1_upgrade,
        "layers { name: 'r' type: RELU }": upgrade.net_needs_v1_to_v2_upgrade,
        "input: 'x' layer { name: 'r' type: 'ReLU' }": upgrade.net_needs_input_upgrade,
        "layer { name: 'b' type: 'BatchNorm' param {} param {} param {} }": upgrade.net_needs_batch_norm_upgrade,
    }
    for text, needs in cases.items():
        net = _net(text)
        assert needs(net) and upgrade.net_needs_upgrade(net), text
    # Only three param specs mark the old BatchNorm definition.
    assert not upgrade.net_needs_upgrade(_net("layer { name: 'b' type: 'BatchNorm' param {} param {} }"))


def test_input_fields_become_the_first_layer():
    net = _net("name: 'deploy' input: 'data' input: 'rois' input_dim: 1 input_dim: 3 input_dim: 8 "
               "input_dim: 8 input_dim: 5 input_dim: 5 input_dim: 1 input_dim: 1 "
               "layer { name: 'conv' type: 'Convolution' bottom: 'data' top: 'conv' } "
               "layer { name: 'relu' type: 'ReLU' bottom: 'conv' top: 'conv' }")  # fmt: skip
    out = upgrade.upgrade_net(net).net
    _same(out, """
        name: 'deploy'
        layer { name: 'input' type: 'Input' top: 'data' top: 'rois'
                input_param { shape { dim: 1 dim: 3 dim: 8 dim: 8 } shape { dim: 5 dim: 5 dim: 1 dim: 1 } } }
        layer { name: 'conv' type: 'Convolution' bottom: 'data' top: 'conv' }
        layer { name: 'relu' type: 'ReLU' bottom: 'conv' top: 'conv' }
    """)  # fmt: skip
    shaped = _net("input: 'a' input_shape { dim: 2 dim: 7 } input_dim: 9 layer { name: 'r' type: 'ReLU' }")
    _same(upgrade.upgrade_net(shaped).net, """
        layer { name: 'input' type: 'Input' top: 'a' input_param { shape { dim: 2 dim: 7 } } }
        layer { name: 'r' type: 'ReLU' }
    """)  # fmt: skip
    # An old caffemodel names its inputs without shapes: the names are simply dropped.
    _same(
        upgrade.upgrade_net(_net("input: 'a' layer { name: 'r' type: 'ReLU' }")).net,
        "layer { name: 'r' type: 'ReLU' }",
    )


def test_input_dims_that_do_not_cover_every_input_are_refused():
    with pytest.raises(FormatError, match="input_dim must give 4 values per input: 8 for 2, found 5"):
        upgrade.upgrade_net(_net("input: 'a' input: 'b' input_dim: 1 input_dim: 2 input_dim: 3 input_dim: 4 "
                                 "input_dim: 5"), "deploy.prototxt")  # fmt: skip
    with pytest.raises(FormatError, match="2 inputs but only 1 input_shape"):
        upgrade.upgrade_net(_net("input: 'a' input: 'b' input_shape { dim: 1 }"))


def test_batch_norm_param_specs_as_bvlc_pr_5184_upgrades_them():
    # Caffe 1.0 zeroes lr_mult and decay_mult of a BatchNorm layer with three param specs and
    # keeps everything else (names for sharing included); other counts are left alone.
    net = _net("""
        layer { name: 'bn0' type: 'BatchNorm' param { lr_mult: 0 } param { lr_mult: 0 } param { lr_mult: 0 } }
        layer { name: 'bn1' type: 'BatchNorm' param { lr_mult: 1 decay_mult: 1 } param { lr_mult: 1 decay_mult: 0 }
                param { lr_mult: 1 decay_mult: 1 } }
        layer { name: 'bn2' type: 'BatchNorm' }
        layer { name: 'bn3' type: 'BatchNorm' param { lr_mult: 1 decay_mult: 1 name: 'bn_m' }
                param { lr_mult: 1 decay_mult: 1 name: 'bn_s' } param { lr_mult: 1 decay_mult: 1 name: 'bn_b' } }
        layer { name: 'bn4' type: 'BatchNorm' param { name: 'bn_m' } param { name: 'bn_s' } param { name: 'bn_b' } }
        layer { name: 's' type: 'Scale' param { lr_mult: 1 } param { lr_mult: 1 } param { lr_mult: 1 } }
    """)  # fmt: skip
    zero = "param { lr_mult: 0 decay_mult: 0 } "
    _same(upgrade.upgrade_net(net).net, f"""
        layer {{ name: 'bn0' type: 'BatchNorm' {zero * 3} }}
        layer {{ name: 'bn1' type: 'BatchNorm' {zero * 3} }}
        layer {{ name: 'bn2' type: 'BatchNorm' }}
        layer {{ name: 'bn3' type: 'BatchNorm' param {{ name: 'bn_m' lr_mult: 0 decay_mult: 0 }}
                param {{ name: 'bn_s' lr_mult: 0 decay_mult: 0 }} param {{ name: 'bn_b' lr_mult: 0 decay_mult: 0 }} }}
        layer {{ name: 'bn4' type: 'BatchNorm' param {{ name: 'bn_m' lr_mult: 0 decay_mult: 0 }}
                param {{ name: 'bn_s' lr_mult: 0 decay_mult: 0 }} param {{ name: 'bn_b' lr_mult: 0 decay_mult: 0 }} }}
        layer {{ name: 's' type: 'Scale' param {{ lr_mult: 1 }} param {{ lr_mult: 1 }} param {{ lr_mult: 1 }} }}
    """)  # fmt: skip


# --- what Caffe refuses, and what it only logs -------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("layers { layer { name: 'p' type: 'padding' pad: 1 } bottom: 'x' top: 'p' } "
         "layers { layer { name: 'r' type: 'relu' } bottom: 'p' top: 'r' }",
         "Padding layer input to non-convolutional / non-pooling layer type relu"),
        ("layers { layer { name: 'p' type: 'padding' pad: 1 } bottom: 'x' top: 'p' } "
         "layers { layer { name: 'q' type: 'padding' pad: 1 } bottom: 'p' top: 'q' }",
         "non-pooling layer type padding"),
        ("layers { layer { name: 'p' type: 'padding' pad: 1 } bottom: 'x' top: 'p' } "
         "layers { layer { name: 'c' type: 'concat' } bottom: 'x' bottom: 'p' top: 'c' }",
         "non-pooling layer type concat"),
        ("layers { layer { name: 'p' type: 'padding' pad: 1 } bottom: 'x' top: 'p' } "
         "layers { layer { name: 'c' type: 'conv' } bottom: 'p' bottom: 'x' top: 'c' }",
         "Conv Layer takes a single blob as input"),
        ("layers { layer { name: 'p' type: 'padding' pad: 1 } bottom: 'x' top: 'p' top: 'p2' } "
         "layers { layer { name: 'c' type: 'pool' } bottom: 'p' top: 'c' }",
         "must take a single blob and produce a single blob"),
        ("layers { layer { name: 'c' type: 'conv' } bottom: 'nowhere' top: 'c' }",
         "Unknown blob input nowhere to V0 layer 0"),
        ("layers { layer { name: 'm' type: 'maxout' } bottom: 'x' top: 'm' }",
         "Unknown layer name: maxout"),
    ],
)  # fmt: skip
def test_v0_nets_caffe_refuses(text: str, message: str):
    with pytest.raises(FormatError, match=message) as info:
        upgrade.upgrade_net(_net("input: 'x' " + text), "old.prototxt")
    assert str(info.value).startswith("old.prototxt: ")


def test_a_padding_layer_after_the_net_input_or_unread_is_just_dropped():
    net = _net("input: 'x' layers { layer { name: 'p' type: 'padding' pad: 3 } bottom: 'x' top: 'p' } "
               "layers { layer { name: 'c' type: 'conv' } bottom: 'p' top: 'c' } "
               "layers { layer { name: 'q' type: 'padding' pad: 1 } bottom: 'c' top: 'q' }")  # fmt: skip
    out = upgrade.upgrade_net(net).net
    assert [(layer.name, list(layer.bottom)) for layer in out.layer] == [("c", ["x"])]
    assert list(out.layer[0].convolution_param.pad) == [3]


def test_fields_caffe_cannot_place_are_logged_problems(caplog):
    net = _net("input: 'x' layers { layer { name: 'r' type: 'relu' num_output: 3 kernelsize: 2 "
               "shuffle_images: true } bottom: 'x' top: 'x' }")  # fmt: skip
    with caplog.at_level(logging.INFO, logger="proto.upgrade"):
        result = upgrade.upgrade_net(net, "old.prototxt")
    assert result.problems == (
        'Unknown parameter num_output for layer type relu (layer "r"); dropped',
        'Unknown parameter kernelsize for layer type relu (layer "r"); dropped',
        'Unknown parameter shuffle for layer type relu (layer "r"); dropped',
    )
    messages = [r.getMessage() for r in caplog.records]
    assert (
        "Attempting to upgrade input file specified using deprecated V0LayerParameter: old.prototxt"
        in messages
    )
    assert (
        "Warning: had one or more problems upgrading V0NetParameter to NetParameter (see above); continuing anyway."
        in messages
    )
    assert result.net.layer[0].type == "ReLU" and not result.net.layer[0].HasField("convolution_param")


def test_mixed_v1_and_current_layers_keep_only_the_v1_ones():
    result = upgrade.upgrade_net(_net("layers { name: 'old' type: RELU } layer { name: 'new' type: 'ReLU' }"))
    assert [layer.name for layer in result.net.layer] == ["old"]
    assert result.problems[0].startswith("Input NetParameter to be upgraded already specifies 'layer' fields")


# --- the order a read applies them in, for text and binary alike -----------------------------------
def test_reads_apply_the_upgrades_in_caffes_order_for_text_and_binary(tmp_path: Path, caplog):
    text = ("name: 'n' input: 'data' input_dim: 1 input_dim: 1 input_dim: 4 input_dim: 4 "
            "layers { layer { name: 'p' type: 'padding' pad: 1 } bottom: 'data' top: 'p' } "
            "layers { layer { name: 'c' type: 'conv' num_output: 2 kernelsize: 3 } bottom: 'p' top: 'c' }")  # fmt: skip
    (tmp_path / "net.prototxt").write_text(text)
    write_caffemodel(tmp_path / "net.caffemodel", _net(text))
    with caplog.at_level(logging.INFO, logger="proto.upgrade"):
        from_text = read_net(tmp_path / "net.prototxt")
        first = len(caplog.records)
        from_binary = read_caffemodel(tmp_path / "net.caffemodel")
    assert from_text == from_binary
    _same(from_text, """
        name: 'n'
        layer { name: 'input' type: 'Input' top: 'data' input_param { shape { dim: 1 dim: 1 dim: 4 dim: 4 } } }
        layer { name: 'c' type: 'Convolution' bottom: 'data' top: 'c'
                convolution_param { num_output: 2 pad: 1 kernel_size: 3 } }
    """)  # fmt: skip
    attempts = [r.getMessage() for r in caplog.records if r.getMessage().startswith("Attempting")]
    path = tmp_path / "net.prototxt"
    assert attempts[:3] == [
        f"Attempting to upgrade input file specified using deprecated V0LayerParameter: {path}",
        f"Attempting to upgrade input file specified using deprecated V1LayerParameter: {path}",
        f"Attempting to upgrade input file specified using deprecated input fields: {path}",
    ]
    assert [m.replace("net.caffemodel", "net.prototxt") for m in attempts[3:]] == attempts[:3]
    assert first < len(caplog.records)


def test_data_step_runs_before_the_v1_step():
    net = _net("layers { name: 'd' type: DATA data_param { scale: 0.5 } } "
               "layer { name: 'bn' type: 'BatchNorm' param {} param {} param {} }")  # fmt: skip
    result = upgrade.upgrade_net(net)
    # The V1 step drops the 'layer' entries, so the BatchNorm step finds nothing left to do.
    assert result.steps == (upgrade.STEP_DATA, upgrade.STEP_V1)
    assert result.net.layer[0].transform_param.scale == 0.5 and len(result.net.layer) == 1


def test_upgrade_tool_exits_1_when_caffe_would_report_problems(tmp_path: Path, capsys):
    source, target = tmp_path / "old.prototxt", tmp_path / "new.prototxt"
    source.write_text(
        "input: 'x' layers { layer { name: 'r' type: 'relu' num_output: 3 } bottom: 'x' top: 'x' }"
    )
    assert cli_upgrade.run([str(source), str(target)]) == 1
    err = capsys.readouterr().err
    assert "Unknown parameter num_output for layer type relu" in err
    assert read_net(target, upgrade=False).layer[0].type == "ReLU"  # written all the same, as Caffe does
