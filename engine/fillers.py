"""Weight fillers, as Caffe's filler.hpp defines them, registered under their prototxt names.

A filler draws on the host from ``engine.rng.host()`` in the blob's dtype and then copies the
values to the blob's array module, so one seed gives the same weights on numpy and cupy (Caffe,
too, fills on the CPU). ``sample(shape)`` is the same draw without a blob, for previews.

Shapes are read as Caffe 1.0 reads them. The gaussian filler's ``sparse`` takes the number of
outputs from axis 0. Xavier, MSRA and positive_unitball use the legacy ``num()`` / ``channels()``
accessors: axis 0 and axis 1, or 1 for an axis the blob lacks (fan_in = count / num, fan_out =
count / channels). Caffe 1.0 refuses those accessors on blobs of more than 4 axes; there we read
axes 0 and 1 as later Caffe does (the same numbers wherever 1.0 gives any), so N-d convolutions fill.
What Caffe CHECKs raises FillerError.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from typing import Any, ClassVar

import numpy as np

from engine import rng
from engine.blob import Blob, as_shape
from engine.errors import EngineError, UnknownTypeError
from proto import caffe_pb2

FAN_OUT, AVERAGE = caffe_pb2.FillerParameter.FAN_OUT, caffe_pb2.FillerParameter.AVERAGE
Shape = tuple[int, ...]
Generator = np.random.Generator


class FillerError(EngineError, ValueError):
    """A filler refused its parameters or the shape of the blob it was asked to fill."""


_FILLERS: dict[str, type[Filler]] = {}


def register_filler(type_name: str) -> Callable[[type[Filler]], type[Filler]]:
    def decorate(cls: type[Filler]) -> type[Filler]:
        if type_name in _FILLERS and _FILLERS[type_name] is not cls:
            raise ValueError(f"filler type '{type_name}' registered twice")
        cls.type = type_name
        _FILLERS[type_name] = cls
        return cls

    return decorate


def filler_types() -> list[str]:
    return sorted(_FILLERS)


def filler_class(type_name: str) -> type[Filler]:
    try:
        return _FILLERS[type_name]
    except KeyError:
        known = ", ".join(filler_types())
        raise UnknownTypeError(f"Unknown filler type: '{type_name}' (known types: {known})") from None


def filler_fields() -> dict[str, tuple[str, ...]]:
    """The fields each filler reads, by type, in the order they were registered (Caffe's order)."""
    return {name: cls.fields for name, cls in _FILLERS.items()}


def filler_problems(param: caffe_pb2.FillerParameter) -> list[str]:
    """What the filler ``param`` names would refuse whatever the blob: its type, its field values."""
    if param.type not in _FILLERS:
        return [f"unknown filler type '{param.type}' (known: {', '.join(_FILLERS)})"]
    return list(_FILLERS[param.type].static_problems(param))


def get_filler(param: caffe_pb2.FillerParameter) -> Filler:
    """The filler a FillerParameter names (Caffe's GetFiller)."""
    return filler_class(param.type)(param)


def expected_stats(param: caffe_pb2.FillerParameter, shape: Any) -> dict[str, float]:
    """Theoretical mean and std of the values ``param`` gives a blob of ``shape`` (and the fans)."""
    return get_filler(param).expected_stats(shape)


def legacy_num_channels(shape: Shape) -> tuple[int, int]:
    """Caffe's ``num()`` and ``channels()``: axes 0 and 1, or 1 where the blob has no such axis."""
    return (shape[0] if shape else 1), (shape[1] if len(shape) > 1 else 1)


def fans(shape: Shape) -> tuple[int, int]:
    """(fan_in, fan_out) as Caffe's xavier and msra fillers count them: count / num, count / channels."""
    count = math.prod(shape)
    num, channels = legacy_num_channels(shape)
    return count // num, count // channels


class Filler:
    type = ""
    fields: ClassVar[tuple[str, ...]] = ()  # the FillerParameter fields it reads, besides type
    supports_sparse = False  # every filler but gaussian CHECKs sparse == -1
    allows_empty = False  # Caffe CHECKs count > 0 in all but the bilinear filler

    @classmethod
    def static_problems(cls, param: caffe_pb2.FillerParameter) -> Iterator[str]:
        """What this filler refuses in ``param`` whatever the shape (Caffe's CHECKs on the fields)."""
        if not cls.supports_sparse and param.sparse != -1:
            yield f"sparse: {param.sparse} is only supported by the gaussian filler"

    def __init__(self, param: caffe_pb2.FillerParameter) -> None:
        self.param = param

    def fill(self, blob: Blob) -> None:
        blob.data[...] = blob.xp.asarray(self.sample(blob.shape, blob.dtype))

    def sample(self, shape: Any, dtype: Any = np.float32, generator: Generator | None = None) -> np.ndarray:
        """Fresh values for a blob of ``shape``; ``generator`` defaults to the engine's host RNG."""
        shape = as_shape(shape)
        self.check(shape)
        return self.draw(shape, np.dtype(dtype), generator or rng.host())

    def check(self, shape: Shape) -> None:
        for problem in self.static_problems(self.param):
            raise self.error(shape, problem)
        if not self.allows_empty and math.prod(shape) == 0:
            raise self.error(shape, "the blob is empty")

    def error(self, shape: Shape, message: str) -> FillerError:
        return FillerError(f"{self.type} filler, blob shape {shape}: {message}")

    def draw(self, shape: Shape, dtype: np.dtype, gen: Generator) -> np.ndarray:
        raise NotImplementedError

    def moments(self, shape: Shape) -> dict[str, float]:
        raise NotImplementedError

    def expected_stats(self, shape: Any) -> dict[str, float]:
        shape = as_shape(shape)
        self.check(shape)
        return self.moments(shape)


@register_filler("constant")
class ConstantFiller(Filler):
    fields = ("value",)

    def draw(self, shape: Shape, dtype: np.dtype, gen: Generator) -> np.ndarray:
        return np.full(shape, self.param.value, dtype)

    def moments(self, shape: Shape) -> dict[str, float]:
        return {"mean": self.param.value, "std": 0.0}


@register_filler("uniform")
class UniformFiller(Filler):
    """x ~ U[min, max], both ends included as in Caffe."""

    fields = ("min", "max")

    @classmethod
    def static_problems(cls, param: caffe_pb2.FillerParameter) -> Iterator[str]:
        yield from super().static_problems(param)
        if not param.min <= param.max:
            yield f"min ({param.min}) must not exceed max ({param.max})"

    def draw(self, shape: Shape, dtype: np.dtype, gen: Generator) -> np.ndarray:
        return uniform(gen, shape, dtype, self.param.min, self.param.max)

    def moments(self, shape: Shape) -> dict[str, float]:
        lo, hi = self.param.min, self.param.max
        return {"mean": (lo + hi) / 2, "std": (hi - lo) / math.sqrt(12)}


@register_filler("gaussian")
class GaussianFiller(Filler):
    """x ~ N(mean, std^2); with sparse >= 0 each weight is kept with p = sparse / shape[0]."""

    fields = ("mean", "std", "sparse")
    supports_sparse = True

    @classmethod
    def static_problems(cls, param: caffe_pb2.FillerParameter) -> Iterator[str]:
        if not param.std > 0:
            yield f"std must be positive, got {param.std}"
        if param.sparse < -1:
            yield f"sparse must be -1 (off) or >= 0, got {param.sparse}"

    def check(self, shape: Shape) -> None:
        super().check(shape)
        sparse = self.param.sparse
        if sparse >= 0:
            if not shape:
                raise self.error(shape, "sparse needs a blob with at least one axis")
            if self.keep_probability(shape, np.dtype(np.float32)) > 1:  # Caffe's Bernoulli CHECKs p <= 1
                raise self.error(shape, f"sparse ({sparse}) exceeds the number of outputs ({shape[0]})")

    def keep_probability(self, shape: Shape, dtype: np.dtype) -> Any:
        """p = sparse / num_outputs, in the blob's dtype; num_outputs is axis 0."""
        return dtype.type(self.param.sparse) / dtype.type(shape[0])

    def draw(self, shape: Shape, dtype: np.dtype, gen: Generator) -> np.ndarray:
        values = gaussian(gen, shape, dtype, self.param.mean, self.param.std)
        if self.param.sparse >= 0:
            values *= gen.random(shape, dtype) < self.keep_probability(shape, dtype)
        return values

    def moments(self, shape: Shape) -> dict[str, float]:
        mean, std = self.param.mean, self.param.std
        if self.param.sparse < 0:
            return {"mean": mean, "std": std}
        p = self.param.sparse / shape[0]
        var = p * (std**2 + mean**2) - (p * mean) ** 2
        return {"mean": p * mean, "std": math.sqrt(var), "nonzero_fraction": p}


@register_filler("positive_unitball")
class PositiveUnitballFiller(Filler):
    """U[0, 1] values, each of the num rows then divided by its sum (rows sum to 1).

    The sum runs left to right in the blob's dtype, as Caffe's loop adds.
    """

    def draw(self, shape: Shape, dtype: np.dtype, gen: Generator) -> np.ndarray:
        rows = uniform(gen, shape, dtype, 0.0, 1.0).reshape(legacy_num_channels(shape)[0], -1)
        rows /= np.cumsum(rows, axis=1, dtype=dtype)[:, -1:]
        return rows.reshape(shape)

    def moments(self, shape: Shape) -> dict[str, float]:
        dim = math.prod(shape) // legacy_num_channels(shape)[0]
        # u / sum(u) with sum(u) ~ dim / 2: std(u) = 1/sqrt(12) scaled by 2 / dim (large-dim limit)
        std = 0.0 if dim == 1 else 1 / (dim * math.sqrt(3))
        return {"mean": 1 / dim, "std": std, "row_sum": 1.0}


class FanFiller(Filler):
    """Xavier and MSRA: the spread depends on n = fan_in, fan_out or their mean (variance_norm)."""

    fields = ("variance_norm",)
    gain = 1.0  # variance * n

    def n(self, shape: Shape, dtype: np.dtype) -> Any:
        fan_in, fan_out = fans(shape)
        norm = self.param.variance_norm
        if norm == AVERAGE:
            return dtype.type(fan_in + fan_out) / dtype.type(2)
        return dtype.type(fan_out if norm == FAN_OUT else fan_in)

    def moments(self, shape: Shape) -> dict[str, float]:
        fan_in, fan_out = fans(shape)
        n = float(self.n(shape, np.dtype(np.float64)))
        return {"mean": 0.0, "std": math.sqrt(self.gain / n), "fan_in": fan_in, "fan_out": fan_out, "n": n}


@register_filler("xavier")
class XavierFiller(FanFiller):
    """x ~ U[-a, a], a = sqrt(3 / n): variance 1 / n."""

    def draw(self, shape: Shape, dtype: np.dtype, gen: Generator) -> np.ndarray:
        scale = np.sqrt(dtype.type(3) / self.n(shape, dtype))
        return uniform(gen, shape, dtype, -scale, scale)


@register_filler("msra")
class MSRAFiller(FanFiller):
    """x ~ N(0, 2 / n) (He et al. 2015, for ReLU nets)."""

    gain = 2.0

    def draw(self, shape: Shape, dtype: np.dtype, gen: Generator) -> np.ndarray:
        return gaussian(gen, shape, dtype, 0.0, np.sqrt(dtype.type(2) / self.n(shape, dtype)))


@register_filler("bilinear")
class BilinearFiller(Filler):
    """A (K, K) bilinear upsampling kernel in every (num, channel) slice of a 4-D blob.

    f = ceil(K / 2), c = (2f - 1 - f % 2) / (2f), w(y, x) = (1 - |x/f - c|)(1 - |y/f - c|), in
    float32 arithmetic as Caffe computes it.
    """

    allows_empty = True  # Caffe's loop simply writes nothing

    def check(self, shape: Shape) -> None:
        super().check(shape)
        if len(shape) != 4:
            raise self.error(shape, "the blob must have 4 axes (num, channels, height, width)")
        if shape[2] != shape[3]:
            raise self.error(shape, f"the kernel must be square, got {shape[2]}x{shape[3]}")

    def draw(self, shape: Shape, dtype: np.dtype, gen: Generator) -> np.ndarray:
        return np.broadcast_to(bilinear_kernel(shape[3]), shape).astype(dtype)

    def moments(self, shape: Shape) -> dict[str, float]:
        kernel = bilinear_kernel(shape[3]).astype(np.float64)
        if not kernel.size:
            return {"mean": math.nan, "std": math.nan}
        return {"mean": float(kernel.mean()), "std": float(kernel.std())}


def bilinear_kernel(k: int) -> np.ndarray:
    f32 = np.float32
    if k == 0:
        return np.zeros((0, 0), f32)
    f = math.ceil(k / 2)
    c = f32((2 * f - 1 - f % 2) / (2.0 * f))
    line = f32(1) - np.abs(np.arange(k, dtype=f32) / f32(f) - c)
    return np.multiply.outer(line, line)


def uniform(gen: Generator, shape: Shape, dtype: np.dtype, lo: Any, hi: Any) -> np.ndarray:
    """U[lo, hi] in ``dtype``; clipped because lo + (hi - lo) * u can round past hi."""
    lo, hi = dtype.type(lo), dtype.type(hi)
    u = gen.random(shape, dtype)
    return np.clip(lo + (hi - lo) * u, lo, hi, out=u)


def gaussian(gen: Generator, shape: Shape, dtype: np.dtype, mean: Any, std: Any) -> np.ndarray:
    z = gen.standard_normal(shape, dtype)
    z *= dtype.type(std)
    z += dtype.type(mean)
    return z
