"""Which fields of a message matter for what it currently says, so a form can hide the rest.

Qt-free. A filler of type ``xavier`` reads only ``variance_norm``; an ``inv`` learning-rate
policy reads ``gamma`` and ``power`` but not ``stepsize``; a convolution's ``kernel_h`` is an
alternative few nets use. The form shows these fields, every field that is set, and the others
behind a "more fields" toggle. A message type not listed here shows every field.
"""

from __future__ import annotations

from collections.abc import Callable, Collection

from google.protobuf.message import Message

Relevance = Callable[[Message], Collection[str]]

_FILLER = {
    "constant": {"value"},
    "uniform": {"min", "max"},
    "gaussian": {"mean", "std", "sparse"},
    "positive_unitball": set(),
    "xavier": {"variance_norm"},
    "msra": {"variance_norm"},
    "bilinear": set(),
}
_POLICY = {
    "fixed": set(),
    "step": {"gamma", "stepsize"},
    "exp": {"gamma"},
    "inv": {"gamma", "power"},
    "multistep": {"gamma", "stepvalue"},
    "poly": {"power"},
    "sigmoid": {"gamma", "stepsize"},
}
_OPTIMIZER = {
    "SGD": {"momentum"},
    "Nesterov": {"momentum"},
    "AdaGrad": {"delta"},
    "RMSProp": {"rms_decay", "delta"},
    "AdaDelta": {"momentum", "delta"},
    "Adam": {"momentum", "momentum2", "delta"},
}
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
    return (
        _SOLVER_ALWAYS | _POLICY.get(message.lr_policy, set()) | _OPTIMIZER.get(message.type or "SGD", set())
    )


RELEVANT: dict[str, Relevance] = {
    "FillerParameter": lambda m: {"type", *_FILLER.get(m.type, {"value", "min", "max", "mean", "std"})},
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
