"""Caffe's learning-rate policies as a pure function of the iteration."""

from __future__ import annotations

import math

from engine.errors import EngineError
from proto import caffe_pb2

POLICIES = ("fixed", "step", "exp", "inv", "multistep", "poly", "sigmoid")


def learning_rate(
    param: caffe_pb2.SolverParameter, iteration: int, current_step: int = 0
) -> tuple[float, int]:
    """The rate at ``iteration`` and the multistep position after it (Caffe's GetLearningRate).

    multistep advances at most one step per call, as Caffe does, so callers evaluate it every
    iteration in order (or pass the step reached so far).
    """
    policy = param.lr_policy
    base, gamma, power = param.base_lr, param.gamma, param.power
    if policy == "fixed":
        return base, current_step
    if policy == "step":
        if param.stepsize <= 0:
            raise EngineError("lr_policy 'step' needs stepsize > 0")
        step = iteration // param.stepsize
        return base * gamma**step, step
    if policy == "exp":
        return base * gamma**iteration, current_step
    if policy == "inv":
        return base * (1.0 + gamma * iteration) ** (-power), current_step
    if policy == "multistep":
        if current_step < len(param.stepvalue) and iteration >= param.stepvalue[current_step]:
            current_step += 1
        return base * gamma**current_step, current_step
    if policy == "poly":
        return base * (1.0 - iteration / param.max_iter) ** power, current_step
    if policy == "sigmoid":
        z = -gamma * (iteration - param.stepsize)
        return (0.0 if z > 700 else base / (1.0 + math.exp(z))), current_step  # exp overflows past ~709
    known = ", ".join(POLICIES)
    raise EngineError(f"Unknown learning rate policy: '{policy}' (known policies: {known})")


def schedule(param: caffe_pb2.SolverParameter, iterations: int) -> list[float]:
    """The rate at every iteration from 0 to ``iterations`` - 1 (for plotting a schedule)."""
    rates, step = [], 0
    for it in range(iterations):
        rate, step = learning_rate(param, it, step)
        rates.append(rate)
    return rates
