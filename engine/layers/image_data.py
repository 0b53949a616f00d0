"""ImageData: batches of image files named in a list file (``path label`` per line), as Caffe's
ImageDataLayer.

Tops: data (N, C, H, W) after the transform_param, label (N,). Images are decoded as OpenCV
would for Caffe (BGR, or one gray channel when ``is_color`` is false) and resized to
``new_height`` x ``new_width`` when both are set (bilinear). The list is read in order, cycling at
the end, or reshuffled every epoch with ``shuffle``; ``rand_skip`` skips a random number of lines
(below it) once, at the start. A batch takes its shape from its first image. No gradient.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from engine import rng
from engine.blob import Blob
from engine.data.image_list import LIST_FORMAT, ImageList, read_list
from engine.data.transformer import DataTransformer
from engine.layers import facts
from engine.layers._base_data import BasePrefetchingDataLayer, BatchMaker, batch_rng, log
from engine.layers.registry import register_layer


@register_layer("ImageData")
class ImageDataLayer(BasePrefetchingDataLayer):
    exact_num_top = 2
    family = "data"
    params = ("image_data_param", "transform_param")
    top_names = ("data", "label")
    template = "image_data_param { batch_size: 64 }"

    @classmethod
    def static_problems(cls, param: Any) -> Iterator[str]:
        return facts.positive("batch_size", param.image_data_param.batch_size)

    def data_layer_setup(self, top: list[Blob]) -> BatchMaker:
        p = self.param.image_data_param
        if (p.new_height == 0) != (p.new_width == 0):
            raise self.error(
                "Current implementation requires new_height and new_width to be set at the same time."
            )
        if p.batch_size <= 0:
            raise self.error("Positive batch size required")
        if not p.source:  # Path("") is the working directory: "cannot open the image list ." said nothing
            raise self.error(f"image_data_param.source is empty: name the list of images ({LIST_FORMAT})")
        lines = read_list(self.data_paths.resolve(p.source))
        problem = self.data_paths.folder_problem(p.root_folder)
        if problem:
            raise self.error(problem)
        log.info("A total of %d images.", len(lines))
        skip = 0
        if p.rand_skip:
            skip = int(rng.host().integers(p.rand_skip))
            if skip >= len(lines):
                raise self.error(f"Not enough points to skip: {skip} of {len(lines)}")
            log.info("Skipping first %d data points.", skip)
        images = ImageList(
            lines,
            p.root_folder,
            p.shuffle,
            self.seed,
            (p.new_height, p.new_width),
            p.is_color,
            self.data_paths,
        )
        first = images.read(skip, 1)[0][0]
        top[0].reshape((p.batch_size, *self.transformer.output_shape(first.shape)))
        top[1].reshape((p.batch_size,))
        return ImageBatches(images, self.transformer, p.batch_size, skip, self.seed)


class ImageBatches:
    """Batch ``i`` of an ImageData layer: list records ``skip + i * batch_size`` on, transformed."""

    def __init__(
        self, images: ImageList, transformer: DataTransformer, batch_size: int, skip: int, seed: int
    ) -> None:
        self.images = images
        self.transformer = transformer
        self.batch_size = batch_size
        self.skip = skip
        self.seed = seed

    def __call__(self, index: int) -> tuple[np.ndarray, ...]:
        images, labels = self.images.read(self.skip + index * self.batch_size, self.batch_size)
        data = self.transformer(images, batch_rng(self.transformer, self.seed, index))
        return data, labels.astype(data.dtype)
