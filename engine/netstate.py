"""Which layers a net keeps for a given phase, level and stages (Caffe's FilterNet)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import cast

from engine.errors import NetError
from proto import caffe_pb2


def make_state(
    phase: int = caffe_pb2.TRAIN, level: int = 0, stages: Iterable[str] = ()
) -> caffe_pb2.NetState:
    state = caffe_pb2.NetState(phase=cast(caffe_pb2.Phase, phase), level=level)
    state.stage.extend(stages)
    return state


def state_meets_rule(state: caffe_pb2.NetState, rule: caffe_pb2.NetStateRule) -> bool:
    """A rule is met when every condition it sets holds: phase, level bounds, all stages, no not_stage."""
    if rule.HasField("phase") and rule.phase != state.phase:
        return False
    if rule.HasField("min_level") and state.level < rule.min_level:
        return False
    if rule.HasField("max_level") and state.level > rule.max_level:
        return False
    stages = set(state.stage)
    if any(stage not in stages for stage in rule.stage):
        return False
    return not any(stage in stages for stage in rule.not_stage)


def layer_included(layer: caffe_pb2.LayerParameter, state: caffe_pb2.NetState) -> bool:
    """No include rules: kept unless an exclude rule is met. Include rules: kept if one is met."""
    if layer.include and layer.exclude:
        raise NetError(f"layer '{layer.name}': specify either include rules or exclude rules; not both")
    if not layer.include:
        return not any(state_meets_rule(state, rule) for rule in layer.exclude)
    return any(state_meets_rule(state, rule) for rule in layer.include)


def filter_net(
    param: caffe_pb2.NetParameter, state: caffe_pb2.NetState | None = None
) -> caffe_pb2.NetParameter:
    """A copy of ``param`` holding only the layers ``state`` (default: ``param.state``) includes."""
    state = param.state if state is None else state
    filtered = caffe_pb2.NetParameter()
    filtered.CopyFrom(param)
    del filtered.layer[:]
    for layer in param.layer:
        if layer_included(layer, state):
            filtered.layer.add().CopyFrom(layer)
    return filtered
