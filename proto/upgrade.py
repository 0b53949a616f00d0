"""Caffe's automatic upgrade of legacy nets and solvers (Caffe 1.0's upgrade_proto.cpp).

A net goes through the same steps, in the same order, as ``UpgradeNetAsNeeded``:

1. V0 -> V1: ``layers { layer { type: "conv" } }`` (see proto.upgrade_v0);
2. data transformation: ``scale``/``mean_file``/``crop_size``/``mirror`` of V1 Data, ImageData and
   WindowData layers move into ``transform_param``;
3. V1 -> V2: ``layers { type: CONVOLUTION blobs_lr: 1 }`` becomes ``layer { type: "Convolution"
   param { lr_mult: 1 } }``;
4. input fields: top-level ``input`` + ``input_dim``/``input_shape`` become a first layer
   ``input`` of type ``Input`` (inputs without any shape, as in old caffemodels, are just dropped);
5. BatchNorm: a BatchNorm layer with three param specs gets ``lr_mult: 0`` and ``decay_mult: 0``
   on each (names kept: BVLC PR #5184, merged before the 1.0 release, replaced the older rule that
   cleared the param specs).

A solver's ``solver_type`` enum becomes the ``type`` string; both at once is an error, as in Caffe.
Where Caffe aborts, these raise FormatError; where it logs "had one or more problems ...;
continuing anyway", the problem is listed in the result and the upgrade goes on. Each step logs
Caffe's own INFO lines ("Attempting to upgrade input file specified using deprecated ...: FILE",
then its success or its problems) on the ``proto.upgrade`` logger.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from typing import Any, TypeVar

from proto import caffe_pb2
from proto.errors import FormatError
from proto.upgrade_v0 import net_needs_v0_to_v1_upgrade, upgrade_v0_net

log = logging.getLogger("proto.upgrade")
_M = TypeVar("_M", caffe_pb2.NetParameter, caffe_pb2.SolverParameter)

V1 = caffe_pb2.V1LayerParameter

STEP_V0 = "V0 layers -> V1 layers (padding layers folded into conv/pool)"
STEP_DATA = "data transformation fields -> transform_param"
STEP_V1 = "V1 'layers' -> 'layer' with type strings"
STEP_INPUT = "input fields -> Input layer"
STEP_BATCHNORM = "BatchNorm param specs -> lr_mult 0, decay_mult 0"
STEP_SOLVER_TYPE = "solver_type enum -> type string"

V1_LAYER_TYPES: dict[int, str] = {
    V1.NONE: "", V1.ABSVAL: "AbsVal", V1.ACCURACY: "Accuracy", V1.ARGMAX: "ArgMax", V1.BNLL: "BNLL",
    V1.CONCAT: "Concat", V1.CONTRASTIVE_LOSS: "ContrastiveLoss", V1.CONVOLUTION: "Convolution",
    V1.DECONVOLUTION: "Deconvolution", V1.DATA: "Data", V1.DROPOUT: "Dropout",
    V1.DUMMY_DATA: "DummyData", V1.EUCLIDEAN_LOSS: "EuclideanLoss", V1.ELTWISE: "Eltwise",
    V1.EXP: "Exp", V1.FLATTEN: "Flatten", V1.HDF5_DATA: "HDF5Data", V1.HDF5_OUTPUT: "HDF5Output",
    V1.HINGE_LOSS: "HingeLoss", V1.IM2COL: "Im2col", V1.IMAGE_DATA: "ImageData",
    V1.INFOGAIN_LOSS: "InfogainLoss", V1.INNER_PRODUCT: "InnerProduct", V1.LRN: "LRN",
    V1.MEMORY_DATA: "MemoryData", V1.MULTINOMIAL_LOGISTIC_LOSS: "MultinomialLogisticLoss",
    V1.MVN: "MVN", V1.POOLING: "Pooling", V1.POWER: "Power", V1.RELU: "ReLU", V1.SIGMOID: "Sigmoid",
    V1.SIGMOID_CROSS_ENTROPY_LOSS: "SigmoidCrossEntropyLoss", V1.SILENCE: "Silence",
    V1.SOFTMAX: "Softmax", V1.SOFTMAX_LOSS: "SoftmaxWithLoss", V1.SPLIT: "Split", V1.SLICE: "Slice",
    V1.TANH: "TanH", V1.WINDOW_DATA: "WindowData", V1.THRESHOLD: "Threshold",
}  # fmt: skip

# The V1 *_param messages that carry over unchanged, in Caffe's order.
V1_PARAMS = (
    "accuracy_param", "argmax_param", "concat_param", "contrastive_loss_param", "convolution_param",
    "data_param", "dropout_param", "dummy_data_param", "eltwise_param", "exp_param",
    "hdf5_data_param", "hdf5_output_param", "hinge_loss_param", "image_data_param",
    "infogain_loss_param", "inner_product_param", "lrn_param", "memory_data_param", "mvn_param",
    "pooling_param", "power_param", "relu_param", "sigmoid_param", "softmax_param", "slice_param",
    "tanh_param", "threshold_param", "window_data_param", "transform_param", "loss_param",
)  # fmt: skip

_DATA_LAYERS = {V1.DATA: "data_param", V1.IMAGE_DATA: "image_data_param", V1.WINDOW_DATA: "window_data_param"}
_TRANSFORM_FIELDS = ("scale", "mean_file", "crop_size", "mirror")
_SHARE_MODES = {V1.STRICT: caffe_pb2.ParamSpec.STRICT, V1.PERMISSIVE: caffe_pb2.ParamSpec.PERMISSIVE}

_DEPRECATED = "input file specified using deprecated "  # Caffe's words in its upgrade log lines

SOLVER_TYPES: dict[int, str] = {
    caffe_pb2.SolverParameter.SGD: "SGD",
    caffe_pb2.SolverParameter.NESTEROV: "Nesterov",
    caffe_pb2.SolverParameter.ADAGRAD: "AdaGrad",
    caffe_pb2.SolverParameter.RMSPROP: "RMSProp",
    caffe_pb2.SolverParameter.ADADELTA: "AdaDelta",
    caffe_pb2.SolverParameter.ADAM: "Adam",
}


@dataclass(frozen=True)
class NetUpgrade:
    net: caffe_pb2.NetParameter
    steps: tuple[str, ...] = ()  # what was done, in order; empty when nothing was needed
    problems: tuple[str, ...] = ()  # what Caffe reports as "problems upgrading ...; continuing"

    @property
    def legacy(self) -> bool:
        """True when the input used a legacy format (the BatchNorm step alone does not count:
        Caffe writes three param specs into every BatchNorm layer of a caffemodel it saves)."""
        return any(step != STEP_BATCHNORM for step in self.steps)


@dataclass(frozen=True)
class SolverUpgrade:
    solver: caffe_pb2.SolverParameter
    steps: tuple[str, ...] = ()


def net_needs_data_upgrade(net: caffe_pb2.NetParameter) -> bool:
    for layer in net.layers:
        name = _DATA_LAYERS.get(layer.type)
        if name and any(getattr(layer, name).HasField(f) for f in _TRANSFORM_FIELDS):
            return True
    return False


def net_needs_v1_to_v2_upgrade(net: caffe_pb2.NetParameter) -> bool:
    return len(net.layers) > 0


def net_needs_input_upgrade(net: caffe_pb2.NetParameter) -> bool:
    return len(net.input) > 0


def net_needs_batch_norm_upgrade(net: caffe_pb2.NetParameter) -> bool:
    return any(layer.type == "BatchNorm" and len(layer.param) == 3 for layer in net.layer)


def net_needs_upgrade(net: caffe_pb2.NetParameter) -> bool:
    return (
        net_needs_v0_to_v1_upgrade(net)
        or net_needs_v1_to_v2_upgrade(net)
        or net_needs_data_upgrade(net)
        or net_needs_input_upgrade(net)
        or net_needs_batch_norm_upgrade(net)
    )


def upgrade_net(net: caffe_pb2.NetParameter, source: str = "<net>", *, copy: bool = True) -> NetUpgrade:
    """Upgrade a net as Caffe does; ``copy=False`` may reuse and modify ``net`` (for big caffemodels).

    Each step logs, at INFO on the ``proto.upgrade`` logger, the lines Caffe's ``UpgradeNetAsNeeded``
    logs for it (the attempt naming ``source``, then its success or its problems).
    """
    if copy:
        net = _copy(net)
    steps: list[str] = []
    problems: list[str] = []

    def attempt(step: str, what: str) -> int:
        steps.append(step)
        log.info("Attempting to upgrade %s: %s", what, source)
        return len(problems)

    def done(before: int, success: str, failure: str = "") -> None:
        for problem in problems[before:]:
            log.info("%s: %s", source, problem)
        if failure and len(problems) > before:
            log.info(
                "Warning: had one or more problems upgrading %s (see above); continuing anyway.", failure
            )
        else:
            log.info("Successfully upgraded %s", success)

    if net_needs_v0_to_v1_upgrade(net):
        before = attempt(STEP_V0, _DEPRECATED + "V0LayerParameter")
        net = upgrade_v0_net(net, source, problems)
        done(before, "file specified using deprecated V0LayerParameter", "V0NetParameter to NetParameter")
    if net_needs_data_upgrade(net):
        before = attempt(STEP_DATA, _DEPRECATED + "transformation parameters")
        _upgrade_data_transformation(net)
        done(before, "file specified using deprecated data transformation parameters.")
    if net_needs_v1_to_v2_upgrade(net):
        before = attempt(STEP_V1, _DEPRECATED + "V1LayerParameter")
        net = _upgrade_v1_net(net, source, problems)
        done(before, "file specified using deprecated V1LayerParameter", "V1LayerParameter")
    if net_needs_input_upgrade(net):
        before = attempt(STEP_INPUT, _DEPRECATED + "input fields")
        _upgrade_input(net, source)
        done(before, "file specified using deprecated input fields.")
    if net_needs_batch_norm_upgrade(net):
        before = attempt(STEP_BATCHNORM, "batch norm layers using deprecated params")
        _upgrade_batch_norm(net)
        done(before, "batch norm layers using deprecated params.")
    return NetUpgrade(net, tuple(steps), tuple(problems))


def upgrade_net_as_needed(
    net: caffe_pb2.NetParameter, source: str = "<net>", *, copy: bool = True
) -> caffe_pb2.NetParameter:
    """The upgraded net; a legacy input, or a problem, is a warning on the ``proto.upgrade`` logger."""
    result = upgrade_net(net, source, copy=copy)
    if result.legacy:
        log.warning("%s was upgraded from a legacy format: %s", source, "; ".join(result.steps))
    for problem in result.problems:
        log.warning("%s: problem upgrading: %s", source, problem)
    return result.net


def solver_needs_upgrade(solver: caffe_pb2.SolverParameter) -> bool:
    return solver.HasField("solver_type")


def upgrade_solver(solver: caffe_pb2.SolverParameter, source: str = "<solver>") -> SolverUpgrade:
    out = _copy(solver)
    if not solver_needs_upgrade(out):
        return SolverUpgrade(out)
    name = caffe_pb2.SolverParameter.SolverType.Name(out.solver_type)
    log.info(
        "Attempting to upgrade input file specified using deprecated 'solver_type' field (enum)': %s", source
    )
    if out.HasField("type"):
        raise FormatError(
            source,
            f'both the old solver_type: {name} and the new type: "{out.type}" are given; '
            "Caffe refuses a solver with both: keep only type",
        )
    out.type = SOLVER_TYPES[out.solver_type]
    out.ClearField("solver_type")
    log.info(
        "Successfully upgraded file specified using deprecated 'solver_type' field (enum) "
        "to 'type' field (string)."
    )
    return SolverUpgrade(out, (STEP_SOLVER_TYPE,))


def upgrade_solver_as_needed(
    solver: caffe_pb2.SolverParameter, source: str = "<solver>"
) -> caffe_pb2.SolverParameter:
    result = upgrade_solver(solver, source)
    if result.steps:
        log.warning("%s was upgraded from a legacy format: %s", source, "; ".join(result.steps))
    return result.solver


def upgrade_snapshot_prefix(
    solver: caffe_pb2.SolverParameter, solver_file: str | os.PathLike[str]
) -> caffe_pb2.SolverParameter:
    """Caffe's UpgradeSnapshotPrefixProperty: no prefix -> the solver file without its extension;
    a prefix that is an existing folder -> that folder / the solver file's stem."""
    out = _copy(solver)
    path = os.fspath(solver_file)
    if not out.HasField("snapshot_prefix"):
        out.snapshot_prefix = os.path.splitext(path)[0]
    elif os.path.isdir(out.snapshot_prefix):
        stem = os.path.splitext(os.path.basename(path))[0]
        out.snapshot_prefix = os.path.join(out.snapshot_prefix, stem)
    return out


def _copy(message: _M) -> _M:
    out = type(message)()
    out.CopyFrom(message)
    return out


def _copy_field(message: Any, field: Any, value: Any) -> None:
    if field.is_repeated:
        getattr(message, field.name).extend(value)
    elif field.message_type is not None:
        getattr(message, field.name).CopyFrom(value)
    else:
        setattr(message, field.name, value)


def _upgrade_data_transformation(net: caffe_pb2.NetParameter) -> None:
    for layer in net.layers:
        name = _DATA_LAYERS.get(layer.type)
        if name is None:
            continue
        old = getattr(layer, name)
        # Caffe touches both messages for every such layer, so both end up present.
        old.SetInParent()
        layer.transform_param.SetInParent()
        for field in _TRANSFORM_FIELDS:
            if old.HasField(field):
                setattr(layer.transform_param, field, getattr(old, field))
                old.ClearField(field)


def _upgrade_v1_net(net: caffe_pb2.NetParameter, source: str, problems: list[str]) -> caffe_pb2.NetParameter:
    if len(net.layer) > 0:
        problems.append(
            "Input NetParameter to be upgraded already specifies 'layer' fields; these will be ignored "
            "for the upgrade (the net mixes V1 'layers' and current 'layer' entries)"
        )
    out = caffe_pb2.NetParameter()
    for field, value in net.ListFields():  # all but the layers: a caffemodel's blobs are copied once
        if field.name not in ("layers", "layer"):
            _copy_field(out, field, value)
    for index, v1 in enumerate(net.layers):
        _upgrade_v1_layer(v1, out.layer.add(), source, problems, index)
    return out


def _upgrade_v1_layer(
    v1: caffe_pb2.V1LayerParameter,
    layer: caffe_pb2.LayerParameter,
    source: str,
    problems: list[str],
    index: int,
) -> None:
    layer.bottom.extend(v1.bottom)
    layer.top.extend(v1.top)
    if v1.HasField("name"):
        layer.name = v1.name
    layer.include.extend(v1.include)
    layer.exclude.extend(v1.exclude)
    if v1.HasField("type"):
        if v1.type not in V1_LAYER_TYPES:
            raise FormatError(source, f'V1 layer "{v1.name}" has unknown type {v1.type}')
        layer.type = V1_LAYER_TYPES[v1.type]
    layer.blobs.extend(v1.blobs)

    def spec(i: int) -> caffe_pb2.ParamSpec:
        while len(layer.param) <= i:
            layer.param.add()
        return layer.param[i]

    for i, name in enumerate(v1.param):
        spec(i).name = name
    for i, mode in enumerate(v1.blob_share_mode):
        spec(i).share_mode = _SHARE_MODES[mode]
    for i, lr in enumerate(v1.blobs_lr):
        spec(i).lr_mult = lr
    for i, decay in enumerate(v1.weight_decay):
        spec(i).decay_mult = decay
    layer.loss_weight.extend(v1.loss_weight)
    for name in V1_PARAMS:
        if v1.HasField(name):
            getattr(layer, name).CopyFrom(getattr(v1, name))
    if v1.HasField("layer"):
        problems.append(
            f'Upgrade of input layer {index} ("{v1.name}") failed: '
            "Input NetParameter has V0 layer -- ignoring."
        )


def _upgrade_input(net: caffe_pb2.NetParameter, source: str) -> None:
    has_shape, has_dim = len(net.input_shape) > 0, len(net.input_dim) > 0
    if has_shape or has_dim:
        count = len(net.input)
        if has_shape and len(net.input_shape) < count:
            raise FormatError(source, f"{count} inputs but only {len(net.input_shape)} input_shape entries")
        if not has_shape and len(net.input_dim) < 4 * count:
            found = len(net.input_dim)
            message = f"input_dim must give 4 values per input: {4 * count} for {count}, found {found}"
            raise FormatError(source, message)
        layer = caffe_pb2.LayerParameter(name="input", type="Input")
        for i, top in enumerate(net.input):
            layer.top.append(top)
            shape = layer.input_param.shape.add()
            if has_shape:
                shape.CopyFrom(net.input_shape[i])
            else:
                shape.dim.extend(net.input_dim[4 * i : 4 * i + 4])
        net.layer.insert(0, layer)  # first, so that every layer after it can read its tops
    net.ClearField("input")
    net.ClearField("input_shape")
    net.ClearField("input_dim")


def _upgrade_batch_norm(net: caffe_pb2.NetParameter) -> None:
    for layer in net.layer:
        if layer.type == "BatchNorm" and len(layer.param) == 3:
            for spec in layer.param:
                spec.lr_mult = 0.0
                spec.decay_mult = 0.0
