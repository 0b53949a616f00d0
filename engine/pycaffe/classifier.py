"""pycaffe's Classifier: a TEST-phase Net that predicts class scores for H x W x K images.

Each image is resized to ``image_dims``, then either cut into the ten oversampled crops (four
corners and the centre, and their left-right mirrors) whose predictions are averaged, or cut to
its centre crop; crops are the net input's H x W and go through a :class:`engine.pycaffe.io.Transformer`
set up from the constructor's ``mean`` / ``input_scale`` / ``raw_scale`` / ``channel_swap``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from engine.pycaffe import io as caffe_io
from engine.pycaffe.net import TEST, Net

__all__ = ["Classifier"]


def configure_transformer(
    net: Net,
    mean: np.ndarray | None,
    input_scale: float | None,
    raw_scale: float | None,
    channel_swap: Sequence[int] | None,
) -> caffe_io.Transformer:
    """The Transformer for the net's first input: H x W x K images in, options as pycaffe sets them."""
    in_ = net.inputs[0]
    transformer = caffe_io.Transformer({in_: net.blobs[in_].data.shape})
    transformer.set_transpose(in_, (2, 0, 1))
    if mean is not None:
        transformer.set_mean(in_, mean)
    if input_scale is not None:
        transformer.set_input_scale(in_, input_scale)
    if raw_scale is not None:
        transformer.set_raw_scale(in_, raw_scale)
    if channel_swap is not None:
        transformer.set_channel_swap(in_, channel_swap)
    return transformer


def first_input(net: Net, what: str) -> str:
    if not net.inputs:
        raise ValueError(
            f"{what} needs a net with an input blob (an Input layer or input: field); this net has none"
        )
    return net.inputs[0]


class Classifier(Net):
    """``Classifier(model_file, pretrained_file, image_dims=None, mean=None, input_scale=None,
    raw_scale=None, channel_swap=None)``: ``image_dims`` (H, W) is the size images are resized to
    before cropping; it defaults to the net input's own H x W."""

    def __init__(
        self,
        model_file: Any,
        pretrained_file: str | None,
        image_dims: Sequence[int] | None = None,
        mean: np.ndarray | None = None,
        input_scale: float | None = None,
        raw_scale: float | None = None,
        channel_swap: Sequence[int] | None = None,
    ) -> None:
        Net.__init__(self, model_file, TEST, weights=pretrained_file)
        in_ = first_input(self, "Classifier")
        self.transformer = configure_transformer(self, mean, input_scale, raw_scale, channel_swap)
        self.crop_dims = np.array(self.blobs[in_].data.shape[2:])
        self.image_dims: Any = self.crop_dims if image_dims is None or len(image_dims) == 0 else image_dims

    def predict(self, inputs: Iterable[np.ndarray], oversample: bool = True) -> np.ndarray:
        """N x C predictions for N H x W x K images: the mean over the ten oversampled crops of each
        image when ``oversample`` (the default), else the prediction for its centre crop."""
        images = list(inputs)
        if not images:
            raise ValueError("Classifier.predict needs at least one image")
        height, width = int(self.image_dims[0]), int(self.image_dims[1])
        resized = np.zeros((len(images), height, width, images[0].shape[2]), dtype=np.float32)
        for ix, image in enumerate(images):
            resized[ix] = caffe_io.resize_image(image, (height, width))

        if oversample:
            crops = caffe_io.oversample(resized, [int(d) for d in self.crop_dims])
        else:
            # Centre crop; start and end are truncated separately, as pycaffe truncates them.
            centre = np.array([height, width]) / 2.0
            half = self.crop_dims / 2.0
            top, left = (centre - half).astype(int)
            bottom, right = (centre + half).astype(int)
            crops = resized[:, top:bottom, left:right, :]

        in_ = self.inputs[0]
        caffe_in = np.zeros((len(crops), crops.shape[3], *self.blobs[in_].data.shape[2:]), dtype=np.float32)
        for ix, crop in enumerate(crops):
            caffe_in[ix] = self.transformer.preprocess(in_, crop)
        predictions = self.forward_all(**{in_: caffe_in})[self.outputs[0]]

        if oversample:
            predictions = predictions.reshape((len(predictions) // 10, 10, -1)).mean(1)
        return predictions
