"""The ONNX graph under construction, in plain Python: nodes, constants, inputs and outputs.

The layer mappings (``onnx_*`` family modules) add nodes through :class:`Graph`; only
``onnx_write`` turns the result into onnx's protobufs, so the mappings never import onnx.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

FLOAT = np.float32


@dataclass
class Node:
    op: str
    inputs: list[str]
    outputs: list[str]
    attrs: dict[str, Any]
    name: str


@dataclass
class Graph:
    dynamic_batch: bool = False
    nodes: list[Node] = field(default_factory=list)
    initializers: dict[str, np.ndarray] = field(default_factory=dict)
    inputs: list[tuple[str, tuple[int, ...]]] = field(default_factory=list)
    outputs: list[tuple[str, tuple[int, ...]]] = field(default_factory=list)
    used: set[str] = field(default_factory=set)
    layer: str = ""  # the Caffe layer being mapped: names its nodes and constants

    def fresh(self, hint: str) -> str:
        """A value name not taken yet: ``hint`` itself, else ``hint_2``, ``hint_3``, ..."""
        name, k = hint, 1
        while name in self.used:
            k += 1
            name = f"{hint}_{k}"
        self.used.add(name)
        return name

    def const(self, array: Any, hint: str = "const", dtype: Any = FLOAT) -> str:
        name = self.fresh(f"{self.layer}/{hint}" if self.layer else hint)
        self.initializers[name] = np.array(array, dtype=dtype, order="C")  # (ascontiguousarray makes 0-D 1-D)
        return name

    def scalar(self, value: float, hint: str = "const") -> str:
        return self.const(np.array(value, FLOAT), hint)

    def ints(self, values: Any, hint: str = "shape") -> str:
        return self.const(np.asarray(values, np.int64).reshape(-1), hint, np.int64)

    def op(self, op: str, *inputs: str, out: str | None = None, **attrs: Any) -> str:
        """One node with one output (named ``out`` or a fresh name); returns the output's name."""
        return self.multi(op, list(inputs), [out] if out else 1, **attrs)[0]

    def multi(self, op: str, inputs: list[str], outs: list[str] | int, **attrs: Any) -> list[str]:
        if isinstance(outs, int):
            outs = [self.fresh(f"{self.layer}/{op}") for _ in range(outs)]
        name = self.fresh(f"{self.layer}/{op}#node")
        self.nodes.append(Node(op, list(inputs), list(outs), attrs, name))
        return list(outs)

    def reshape(self, x: str, shape: tuple[int, ...], out: str | None = None) -> str:
        """Reshape to a static shape; with a free batch, its first axis is inferred (-1)."""
        spec = list(shape)
        if self.dynamic_batch and spec:
            spec[0] = -1
        return self.op("Reshape", x, self.ints(spec), out=out)
