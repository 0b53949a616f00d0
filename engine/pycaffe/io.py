"""pycaffe's ``caffe.io``: proto <-> array conversion, the input Transformer, image loading and cropping.

The functions keep pycaffe's names, arguments and behaviour so that scripts written for
``import caffe`` run with ``import engine as caffe``. Images are H x W x K float arrays in [0, 1]
(as pycaffe's skimage-based loader gives them); Pillow and numpy replace skimage and scipy.
All of this is host-side preprocessing, so it uses numpy only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from proto import caffe_pb2
from proto.inputs import open_regular

# ---------------------------------------------------------------- proto / datum / ndarray conversion


def blobproto_to_array(blob: caffe_pb2.BlobProto, return_diff: bool = False) -> np.ndarray:
    """The data (or, with return_diff, the diff) of a BlobProto as a float64 array.

    A proto written with the legacy num/channels/height/width fields gets that 4-D shape;
    otherwise the shape comes from ``blob.shape.dim``.
    """
    values = np.array(blob.diff if return_diff else blob.data, dtype=np.float64)
    legacy = ("num", "channels", "height", "width")
    if any(blob.HasField(name) for name in legacy):
        return values.reshape(blob.num, blob.channels, blob.height, blob.width)
    return values.reshape(tuple(blob.shape.dim))


def array_to_blobproto(arr: np.ndarray, diff: np.ndarray | None = None) -> caffe_pb2.BlobProto:
    """A BlobProto holding ``arr`` (any number of axes, written to ``shape.dim``) and optionally ``diff``."""
    arr = np.asarray(arr)
    blob = caffe_pb2.BlobProto()
    blob.shape.dim.extend(int(d) for d in arr.shape)
    blob.data.extend(arr.astype(float).flat)
    if diff is not None:
        blob.diff.extend(np.asarray(diff).astype(float).flat)
    return blob


def arraylist_to_blobprotovector_str(arraylist: Sequence[np.ndarray]) -> bytes:
    """A list of arrays serialized as a BlobProtoVector."""
    vec = caffe_pb2.BlobProtoVector()
    vec.blobs.extend(array_to_blobproto(arr) for arr in arraylist)
    return vec.SerializeToString()


def blobprotovector_str_to_arraylist(str: bytes) -> list[np.ndarray]:
    """The arrays of a serialized BlobProtoVector."""
    vec = caffe_pb2.BlobProtoVector()
    vec.ParseFromString(str)
    return [blobproto_to_array(blob) for blob in vec.blobs]


def array_to_datum(arr: np.ndarray, label: int | None = None) -> caffe_pb2.Datum:
    """A Datum from a C x H x W array: uint8 goes to the ``data`` bytes, anything else to ``float_data``."""
    arr = np.asarray(arr)
    if arr.ndim != 3:
        raise ValueError("Incorrect array shape.")
    datum = caffe_pb2.Datum()
    datum.channels, datum.height, datum.width = arr.shape
    if arr.dtype == np.uint8:
        datum.data = arr.tobytes()
    else:
        datum.float_data.extend(arr.astype(float).flat)
    if label is not None:
        datum.label = label
    return datum


def datum_to_array(datum: caffe_pb2.Datum) -> np.ndarray:
    """The C x H x W array of a Datum: uint8 from ``data``, else float64 from ``float_data``.

    The label is not returned; read ``datum.label``.
    """
    shape = (datum.channels, datum.height, datum.width)
    if len(datum.data):
        return np.frombuffer(datum.data, dtype=np.uint8).reshape(shape).copy()
    return np.array(datum.float_data, dtype=float).reshape(shape)


# ---------------------------------------------------------------- pre-processing


class Transformer:
    """Formats H x W x K images for a net's inputs and back.

    ``inputs`` maps each input blob name to its shape (N, K, H, W), e.g.
    ``{"data": net.blobs["data"].data.shape}``. Each setter configures one input.
    """

    def __init__(self, inputs: Mapping[str, Sequence[int]]) -> None:
        self.inputs = inputs
        self.transpose: dict[str, Sequence[int]] = {}
        self.channel_swap: dict[str, Sequence[int]] = {}
        self.raw_scale: dict[str, float] = {}
        self.mean: dict[str, np.ndarray] = {}
        self.input_scale: dict[str, float] = {}

    def __check_input(self, in_: str) -> None:
        if in_ not in self.inputs:
            raise Exception(f"{in_} is not one of the net inputs: {self.inputs}")

    def preprocess(self, in_: str, data: np.ndarray) -> np.ndarray:
        """Turn an H' x W' x K image into the K x H x W float32 array for input ``in_``.

        In pycaffe's order: convert to float32, resize to the input's H x W, transpose, swap
        channels, multiply by raw_scale, subtract the mean, multiply by input_scale.
        """
        self.__check_input(in_)
        caffe_in = np.array(data, dtype=np.float32)  # a copy: the in-place steps below never touch `data`
        in_dims = tuple(self.inputs[in_][2:])
        if caffe_in.shape[:2] != in_dims:
            caffe_in = resize_image(caffe_in, in_dims)
        if (transpose := self.transpose.get(in_)) is not None:
            caffe_in = caffe_in.transpose(transpose)
        if (channel_swap := self.channel_swap.get(in_)) is not None:
            caffe_in = caffe_in[list(channel_swap), :, :]
        if (raw_scale := self.raw_scale.get(in_)) is not None:
            caffe_in *= raw_scale
        if (mean := self.mean.get(in_)) is not None:
            caffe_in -= mean
        if (input_scale := self.input_scale.get(in_)) is not None:
            caffe_in *= input_scale
        return caffe_in

    def deprocess(self, in_: str, data: np.ndarray) -> np.ndarray:
        """Undo :meth:`preprocess` (except the resize), steps in reverse order; ``data`` is squeezed first."""
        self.__check_input(in_)
        decaf_in = np.array(data).squeeze()
        if (input_scale := self.input_scale.get(in_)) is not None:
            decaf_in /= input_scale
        if (mean := self.mean.get(in_)) is not None:
            decaf_in += mean
        if (raw_scale := self.raw_scale.get(in_)) is not None:
            decaf_in /= raw_scale
        if (channel_swap := self.channel_swap.get(in_)) is not None:
            decaf_in = decaf_in[np.argsort(channel_swap), :, :]
        if (transpose := self.transpose.get(in_)) is not None:
            decaf_in = decaf_in.transpose(np.argsort(transpose))
        return decaf_in

    def set_transpose(self, in_: str, order: Sequence[int]) -> None:
        """The axis order taking an image to K x H x W, e.g. (2, 0, 1) for H x W x K."""
        self.__check_input(in_)
        if len(order) != len(self.inputs[in_]) - 1:
            raise Exception("Transpose order needs to have the same number of dimensions as the input.")
        self.transpose[in_] = order

    def set_channel_swap(self, in_: str, order: Sequence[int]) -> None:
        """The channel order after transpose, e.g. (2, 1, 0) for RGB -> BGR."""
        self.__check_input(in_)
        if len(order) != self.inputs[in_][1]:
            raise Exception("Channel swap needs to have the same number of dimensions as the input channels.")
        self.channel_swap[in_] = order

    def set_raw_scale(self, in_: str, scale: float) -> None:
        """Scale applied before mean subtraction (255 for models trained on [0, 255] images)."""
        self.__check_input(in_)
        self.raw_scale[in_] = scale

    def set_mean(self, in_: str, mean: np.ndarray) -> None:
        """The mean to subtract: one value per channel (shape K) or a full K x H x W (or H x W) array."""
        self.__check_input(in_)
        shape = tuple(mean.shape)
        if mean.ndim == 1:
            if shape[0] != self.inputs[in_][1]:
                raise ValueError("Mean channels incompatible with input.")
            mean = mean[:, np.newaxis, np.newaxis]
        else:
            if len(shape) == 2:
                shape = (1, *shape)
            if len(shape) != 3:
                raise ValueError("Mean shape invalid")
            if shape != tuple(self.inputs[in_][1:]):
                raise ValueError("Mean shape incompatible with input shape.")
        self.mean[in_] = mean

    def set_input_scale(self, in_: str, scale: float) -> None:
        """Scale applied after mean subtraction."""
        self.__check_input(in_)
        self.input_scale[in_] = scale


# ---------------------------------------------------------------- image IO


def load_image(filename: str, color: bool = True) -> np.ndarray:
    """An image file as float32 in [0, 1]: H x W x 3 (RGB; grayscale tiled) or, with color=False and a
    grayscale file, H x W x 1. An alpha channel is dropped; integers are divided by their dtype's maximum."""
    from PIL import Image  # loaded by the first image read, not by `import engine`

    try:  # a FIFO or a device is refused; PIL's errors get the file's name
        with open_regular(filename) as f, Image.open(f) as opened:
            pil: Image.Image = opened
            if pil.mode in ("P", "PA", "CMYK", "YCbCr", "LAB", "HSV"):
                pil = pil.convert("RGB")
            elif pil.mode == "LA":
                pil = pil.convert("L")
            raw = np.asarray(pil)
    except Image.DecompressionBombError as exc:
        raise Image.DecompressionBombError(f"{filename}: {exc}") from exc
    if raw.dtype.kind in "iu":
        img = (raw / float(np.iinfo(raw.dtype).max)).astype(np.float32)
    else:
        img = raw.astype(np.float32)
    if img.ndim == 2:
        img = img[:, :, np.newaxis]
        if color:
            img = np.tile(img, (1, 1, 3))
    elif img.shape[2] == 4:
        img = img[:, :, :3]
    return img


def _sample_positions(n_in: int, n_out: int, interp_order: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For each output pixel along one axis: the two source indices and the weight of the second."""
    scale = n_in / n_out
    centres = (np.arange(n_out) + 0.5) * scale - 0.5  # pixel centres map onto pixel centres
    if interp_order == 0:
        nearest = np.clip(np.floor(centres + 0.5), 0, n_in - 1).astype(np.intp)
        return nearest, nearest, np.zeros(n_out)
    centres = np.clip(centres, 0, n_in - 1)
    low = np.floor(centres).astype(np.intp)
    high = np.minimum(low + 1, n_in - 1)
    return low, high, centres - low


def resize_image(im: np.ndarray, new_dims: Sequence[int], interp_order: int = 1) -> np.ndarray:
    """Resize an H x W x K image to new_dims[0] x new_dims[1] x K (float32), keeping K.

    interp_order 0 is nearest neighbour, 1 (the default) bilinear with edge clamping, so the result
    stays inside the input's [min, max]; a constant image gives the same constant.
    """
    if interp_order not in (0, 1):
        raise ValueError(f"interp_order must be 0 (nearest) or 1 (linear), got {interp_order}")
    im = np.asarray(im)
    height, width = int(new_dims[0]), int(new_dims[1])
    im_min, im_max = im.min(), im.max()
    if im_max == im_min:
        return np.full((height, width, im.shape[-1]), im_min, dtype=np.float32)
    data = im.astype(np.float64)
    rows_lo, rows_hi, row_w = _sample_positions(im.shape[0], height, interp_order)
    cols_lo, cols_hi, col_w = _sample_positions(im.shape[1], width, interp_order)
    row_w = row_w[:, None, None]
    rows = data[rows_lo] * (1 - row_w) + data[rows_hi] * row_w
    col_w = col_w[None, :, None]
    out = rows[:, cols_lo] * (1 - col_w) + rows[:, cols_hi] * col_w
    return out.astype(np.float32)


def oversample(images: Sequence[np.ndarray] | np.ndarray, crop_dims: Sequence[int]) -> np.ndarray:
    """The 10 crops of each H x W x K image: the four corners (top-left, top-right, bottom-left,
    bottom-right), the centre, then the same five mirrored left-right; (10 N) x h x w x K float32."""
    stack = np.stack([np.asarray(im) for im in images]).astype(np.float32)
    im_h, im_w = stack.shape[1:3]
    crop_h, crop_w = int(crop_dims[0]), int(crop_dims[1])
    centre_top = int(im_h / 2.0 - crop_h / 2.0)
    centre_left = int(im_w / 2.0 - crop_w / 2.0)
    corners = [(0, 0), (0, im_w - crop_w), (im_h - crop_h, 0), (im_h - crop_h, im_w - crop_w)]
    origins = [*corners, (centre_top, centre_left)]
    crops = np.stack([stack[:, t : t + crop_h, x : x + crop_w] for t, x in origins], axis=1)  # N, 5, h, w, K
    crops = np.concatenate([crops, crops[:, :, :, ::-1]], axis=1)  # N, 10, h, w, K
    return np.ascontiguousarray(crops.reshape(-1, crop_h, crop_w, stack.shape[-1]))


__all__ = [
    "Transformer",
    "array_to_blobproto",
    "array_to_datum",
    "arraylist_to_blobprotovector_str",
    "blobproto_to_array",
    "blobprotovector_str_to_arraylist",
    "datum_to_array",
    "load_image",
    "oversample",
    "resize_image",
]
