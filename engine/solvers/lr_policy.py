"""Caffe's learning-rate policies as a pure function of the iteration.

The arithmetic follows Caffe's ``GetLearningRate`` operand by operand: the terms Caffe forms in
the net's float type (``1 + gamma * iter`` for inv, ``1 - iter / max_iter`` for poly, the sigmoid's
exponent) are formed in ``dtype`` here too, powers and exponentials in double, and the rate is
rounded to ``dtype`` at the end (Caffe returns it as a Dtype), so float32 rates equal Caffe's.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from engine.errors import EngineError
from proto import caffe_pb2

# Each policy, with the SolverParameter fields it reads besides base_lr.
POLICY_FIELDS: dict[str, tuple[str, ...]] = {
    "fixed": (),
    "step": ("gamma", "stepsize"),
    "exp": ("gamma",),
    "inv": ("gamma", "power"),
    "multistep": ("gamma", "stepvalue"),
    "poly": ("power", "max_iter"),
    "sigmoid": ("gamma", "stepsize"),
}
POLICIES = tuple(POLICY_FIELDS)


def learning_rate(
    param: caffe_pb2.SolverParameter, iteration: int, current_step: int = 0, dtype: Any = np.float32
) -> tuple[float, int]:
    """The rate at ``iteration`` and the multistep position after it (Caffe's GetLearningRate).

    multistep advances at most one step per call, as Caffe does, so callers evaluate it every
    iteration in order (or pass the step reached so far). step sets the position to
    ``iteration // stepsize`` (what a snapshot's current_step holds).
    """
    f = np.dtype(dtype).type
    policy = param.lr_policy
    base, gamma, power = param.base_lr, param.gamma, param.power
    if policy == "fixed":
        rate = base
    elif policy == "step":
        if param.stepsize <= 0:
            raise EngineError("lr_policy 'step' needs stepsize > 0")
        current_step = iteration // param.stepsize
        rate = base * gamma**current_step
    elif policy == "exp":
        rate = base * gamma**iteration
    elif policy == "inv":
        rate = base * float(f(1) + f(gamma) * f(iteration)) ** (-power)
    elif policy == "multistep":
        if current_step < len(param.stepvalue) and iteration >= param.stepvalue[current_step]:
            current_step += 1
        rate = base * gamma**current_step
    elif policy == "poly":
        if param.max_iter <= 0:
            raise EngineError("lr_policy 'poly' needs max_iter > 0")
        rate = base * float(f(1) - f(iteration) / f(param.max_iter)) ** power
    elif policy == "sigmoid":
        z = float(f(-gamma) * (f(iteration) - f(param.stepsize)))
        rate = 0.0 if z > 700 else base * (1.0 / (1.0 + math.exp(z)))  # exp overflows past ~709
    else:
        known = ", ".join(POLICIES)
        raise EngineError(f"Unknown learning rate policy: '{policy}' (known policies: {known})")
    return float(f(rate)), current_step


def schedule(param: caffe_pb2.SolverParameter, iterations: int) -> list[float]:
    """The rate at every iteration from 0 to ``iterations`` - 1 (for plotting a schedule)."""
    rates, step = [], 0
    for it in range(iterations):
        rate, step = learning_rate(param, it, step)
        rates.append(rate)
    return rates
