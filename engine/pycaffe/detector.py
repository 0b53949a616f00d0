"""pycaffe's Detector: R-CNN-style windowed detection with a TEST-phase Net.

Windows are ``(ymin, xmin, ymax, xmax)`` in pixels of the loaded image (ends exclusive when
slicing). Each window is cut out (with ``context_pad``, grown so that a border of that many input
pixels is surrounding context, out-of-image parts filled with the mean) and warped to the net
input's size by the Transformer. Selective Search proposals need the external
``selective_search_ijcv_with_python`` package (and MATLAB); without it
:meth:`Detector.detect_selective_search` raises an ImportError that says so.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from engine.pycaffe import io as caffe_io
from engine.pycaffe.classifier import configure_transformer, first_input
from engine.pycaffe.net import TEST, Net

__all__ = ["Detector"]


class Detector(Net):
    """``Detector(model_file, pretrained_file, mean=None, input_scale=None, raw_scale=None,
    channel_swap=None, context_pad=None)``."""

    def __init__(
        self,
        model_file: Any,
        pretrained_file: str | None,
        mean: np.ndarray | None = None,
        input_scale: float | None = None,
        raw_scale: float | None = None,
        channel_swap: Sequence[int] | None = None,
        context_pad: int | None = None,
    ) -> None:
        Net.__init__(self, model_file, TEST, weights=pretrained_file)
        first_input(self, "Detector")
        self.transformer = configure_transformer(self, mean, input_scale, raw_scale, channel_swap)
        self.configure_crop(context_pad)

    def detect_windows(self, images_windows: Iterable[tuple[str, Sequence[Any]]]) -> list[dict[str, Any]]:
        """One ``{"window", "prediction", "filename"}`` dict per window of each ``(filename, windows)``."""
        pairs = [(filename, list(windows)) for filename, windows in images_windows]
        window_inputs: list[np.ndarray] = []
        for filename, windows in pairs:
            image = caffe_io.load_image(filename).astype(np.float32)
            window_inputs.extend(self.crop(image, window) for window in windows)
        if not window_inputs:
            raise ValueError("Detector.detect_windows was given no windows")

        in_ = self.inputs[0]
        caffe_in = np.zeros(
            (len(window_inputs), window_inputs[0].shape[2], *self.blobs[in_].data.shape[2:]), dtype=np.float32
        )
        for ix, window_in in enumerate(window_inputs):
            caffe_in[ix] = self.transformer.preprocess(in_, window_in)
        predictions = self.forward_all(**{in_: caffe_in})[self.outputs[0]]

        detections = []
        ix = 0
        for filename, windows in pairs:
            for window in windows:
                detections.append({"window": window, "prediction": predictions[ix], "filename": filename})
                ix += 1
        return detections

    def detect_selective_search(self, image_fnames: Iterable[str]) -> list[dict[str, Any]]:
        """Detect over Selective Search proposals (needs selective_search_ijcv_with_python and MATLAB)."""
        try:
            import selective_search_ijcv_with_python as selective_search
        except ImportError as exc:
            raise ImportError(
                "Detector.detect_selective_search is not available: it needs the "
                "selective_search_ijcv_with_python package (and MATLAB), which is not installed; "
                "compute windows another way and call detect_windows"
            ) from exc
        fnames = [os.path.abspath(f) for f in image_fnames]  # absolute, so MATLAB finds the files
        windows_list = selective_search.get_windows(fnames, cmd="selective_search_rcnn")
        return self.detect_windows(zip(fnames, windows_list))

    def crop(self, im: np.ndarray, window: Sequence[Any]) -> np.ndarray:
        """The window of an H x W x K image, with context padding when ``context_pad`` is set."""
        box = np.asarray(window)
        y0, x0, y1, x1 = (int(v) for v in box[:4])
        if not self.context_pad:
            return im[y0:y1, x0:x1]

        crop_size = int(self.blobs[self.inputs[0]].data.shape[-1])  # assumes a square input
        scale = crop_size / (1.0 * crop_size - self.context_pad * 2)
        # Grow the box about its centre so the context fills context_pad input pixels on each side;
        # box ends count as inclusive here (+1), as R-CNN counts them.
        half_h = (box[2] - box[0] + 1) / 2.0
        half_w = (box[3] - box[1] + 1) / 2.0
        centre = (box[0] + half_h, box[1] + half_w)
        grown = np.round(np.tile(centre, 2) + scale * np.array((-half_h, -half_w, half_h, half_w)))
        scale_h = crop_size / (grown[2] - grown[0] + 1)
        scale_w = crop_size / (grown[3] - grown[1] + 1)
        # the parts above / left of the image, in input pixels
        pad_y = round(float(max(0, -grown[0]) * scale_h))
        pad_x = round(float(max(0, -grown[1]) * scale_w))

        im_h, im_w = im.shape[:2]
        clipped = np.clip(grown, 0.0, [im_h, im_w, im_h, im_w])
        clip_h = clipped[2] - clipped[0] + 1
        clip_w = clipped[3] - clipped[1] + 1
        if not (clip_h > 0 and clip_w > 0):
            raise AssertionError(f"window {list(box)} lies outside the {im_h} x {im_w} image")
        crop_h = min(round(float(clip_h * scale_h)), crop_size - pad_y)
        crop_w = min(round(float(clip_w * scale_w)), crop_size - pad_x)

        c0, c1, c2, c3 = (int(v) for v in clipped)
        context_crop = caffe_io.resize_image(im[c0:c2, c1:c3], (crop_h, crop_w))
        padded = np.ones(self.crop_dims, dtype=np.float32) * self.crop_mean
        padded[pad_y : pad_y + crop_h, pad_x : pad_x + crop_w] = context_crop
        return padded

    def configure_crop(self, context_pad: int | None) -> None:
        """Set the crop size (the input's H x W x K) and the context padding, with the mean that fills
        context outside the image, taken back to raw image space (transpose and channel swap undone,
        divided by raw_scale)."""
        in_ = self.inputs[0]
        transpose = list(self.transformer.transpose[in_])
        # pycaffe's inverse of the (2, 0, 1) transpose: K x H x W -> H x W x K
        inverse = [transpose[t] for t in transpose]
        self.crop_dims = np.array(self.blobs[in_].data.shape[1:])[inverse]
        self.context_pad = context_pad
        if not self.context_pad:
            return
        mean = self.transformer.mean.get(in_)
        if mean is None:
            self.crop_mean = np.zeros(self.crop_dims, dtype=np.float32)
            return
        crop_mean = np.array(mean, dtype=np.float32).transpose(inverse)
        channel_order = self.transformer.channel_swap.get(in_)
        if channel_order is not None:
            order = list(channel_order)
            crop_mean = crop_mean[:, :, [order.index(i) for i in range(crop_mean.shape[2])]]
        raw_scale = self.transformer.raw_scale.get(in_)
        if raw_scale is not None:
            crop_mean /= raw_scale
        self.crop_mean = crop_mean
