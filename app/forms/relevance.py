"""Which fields of a message matter for what it currently says, so a form can hide the rest.

Qt-free. A filler of type ``xavier`` reads only ``variance_norm``; an ``inv`` learning-rate
policy reads ``gamma`` and ``power`` but not ``stepsize`` (fillers, policies and solvers declare
what they read in the engine); a convolution's ``kernel_h`` is an alternative few nets use. The
form shows these fields, every field that is set, and the others behind a "more fields" toggle.
A message type not listed here shows every field.
"""

from __future__ import annotations

from collections.abc import Callable, Collection

from google.protobuf.message import Message

from engine.fillers import filler_fields
from engine.solvers import solver_class, solver_types
from engine.solvers.lr_policy import POLICY_FIELDS

Relevance = Callable[[Message], Collection[str]]

_SOLVER_ALWAYS = {
    "net",
    "train_net",
    "test_net",
    "test_iter",
    "test_interval",
    "base_lr",
    "lr_policy",
    "max_iter",
    "type",
    "weight_decay",
    "regularization_type",
    "display",
    "snapshot",
    "snapshot_prefix",
    "solver_mode",
    "random_seed",
    "iter_size",
    "average_loss",
    "clip_gradients",
    "test_initialization",
}


def _solver(message) -> set[str]:
    """What every solver reads, and what its lr_policy and its type read (the engine declares both)."""
    kind = message.type or "SGD"
    optimizer = set(solver_class(kind).fields) if kind in solver_types() else set()
    return _SOLVER_ALWAYS | set(POLICY_FIELDS.get(message.lr_policy, ())) | optimizer


def _filler(message) -> set[str]:
    fields = filler_fields()
    return (
        {"type", *fields[message.type]}
        if message.type in fields
        else {"type", "value", "min", "max", "mean", "std"}
    )


RELEVANT: dict[str, Relevance] = {
    "FillerParameter": _filler,
    "SolverParameter": _solver,
    "ConvolutionParameter": lambda m: {
        "num_output",
        "bias_term",
        "pad",
        "kernel_size",
        "stride",
        "dilation",
        "group",
        "weight_filler",
        "bias_filler",
    },
    "InnerProductParameter": lambda m: {"num_output", "bias_term", "weight_filler", "bias_filler"},
    "PoolingParameter": lambda m: {"pool", "kernel_size", "stride", "pad", "global_pooling"},
    "LRNParameter": lambda m: {"local_size", "alpha", "beta", "norm_region", "k"},
    "DataParameter": lambda m: {"source", "backend", "batch_size"},
    "ImageDataParameter": lambda m: {
        "source",
        "batch_size",
        "shuffle",
        "new_height",
        "new_width",
        "is_color",
        "root_folder",
    },
    "TransformationParameter": lambda m: {"scale", "mirror", "crop_size", "mean_file", "mean_value"},
    "LossParameter": lambda m: {"ignore_label", "normalization"},
}


def relevant_fields(message: Message) -> Collection[str] | None:
    """The fields of ``message`` worth showing as it stands, or None for all of them."""
    rule = RELEVANT.get(message.DESCRIPTOR.name)
    return None if rule is None else rule(message)
