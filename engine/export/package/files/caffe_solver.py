"""Caffe's solvers as a PyTorch optimizer: its learning-rate policies and its update rules.

An update is Caffe's ApplyUpdate: the rate from the policy, the gradients clipped to
clip_gradients (their global L2 norm), then per parameter: divided by iter_size, weight decay added
(L2: decay * w; L1: decay * sign(w); decay = weight_decay * decay_mult), the rule's step computed
from the history (rate * lr_mult), and w -= step. Scalars are formed in float32 as Caffe forms them
in its Dtype, so the numbers are Caffe's.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

f32 = np.float32
HISTORY = {"SGD": 1, "Nesterov": 1, "AdaGrad": 1, "RMSProp": 1, "AdaDelta": 2, "Adam": 2}


def learning_rate(p: Any, iteration: int, current_step: int) -> tuple[float, int]:
    """The rate at ``iteration`` and the multistep position after it (multistep moves one step a call)."""
    policy, base, gamma, power = p.lr_policy, p.base_lr, p.gamma, p.power
    if policy == "fixed":
        rate = base
    elif policy == "step":
        current_step = iteration // p.stepsize
        rate = base * gamma**current_step
    elif policy == "exp":
        rate = base * gamma**iteration
    elif policy == "inv":
        rate = base * float(f32(1) + f32(gamma) * f32(iteration)) ** (-power)
    elif policy == "multistep":
        if current_step < len(p.stepvalue) and iteration >= p.stepvalue[current_step]:
            current_step += 1
        rate = base * gamma**current_step
    elif policy == "poly":
        rate = base * float(f32(1) - f32(iteration) / f32(p.max_iter)) ** power
    elif policy == "sigmoid":
        z = float(f32(-gamma) * (f32(iteration) - f32(p.stepsize)))
        rate = 0.0 if z > 700 else base * (1.0 / (1.0 + math.exp(z)))
    else:
        raise ValueError(f"Unknown learning rate policy: {policy}")
    return float(f32(rate)), current_step


class CaffeSolver(torch.optim.Optimizer):
    """One parameter group per Caffe learnable parameter (in Caffe's order), with its lr_mult and
    decay_mult; ``step()`` applies the update of iteration ``self.iter`` and advances it."""

    def __init__(self, learnable: list[tuple[torch.Tensor, float, float]], solver: Any) -> None:
        groups = [{"params": [p], "lr_mult": lr, "decay_mult": decay} for p, lr, decay in learnable]
        super().__init__(groups, {})
        self.solver, self.kind = solver, solver.type or "SGD"
        if self.kind not in HISTORY:
            raise ValueError(f"Unknown solver type: {self.kind}")
        self.iter, self.current_step, self.rate = 0, 0, 0.0
        for group in self.param_groups:
            p = group["params"][0]
            self.state[p]["history"] = [torch.zeros_like(p) for _ in range(HISTORY[self.kind])]

    def history(self) -> list[torch.Tensor]:
        """Every parameter's first history blob, then every parameter's second (Caffe's order)."""
        params = [g["params"][0] for g in self.param_groups]
        return [self.state[p]["history"][k] for k in range(HISTORY[self.kind]) for p in params]

    def set_history(self, arrays: list[np.ndarray]) -> None:
        mine = self.history()
        if len(arrays) != len(mine):
            raise ValueError(f"the state holds {len(arrays)} history blobs, {self.kind} keeps {len(mine)}")
        with torch.no_grad():
            for h, a in zip(mine, arrays):
                h.copy_(torch.from_numpy(a.reshape(tuple(h.shape))))

    @torch.no_grad()
    def step(self, closure: Any = None, say: Any = None) -> None:  # type: ignore[override]
        s = self.solver
        self.rate, self.current_step = learning_rate(s, self.iter, self.current_step)
        grads = []
        for group in self.param_groups:
            p = group["params"][0]
            if p.grad is None:
                p.grad = torch.zeros_like(p)
            grads.append(p.grad)
        if s.clip_gradients >= 0:
            sumsq = f32(0)
            for g in grads:
                sumsq += f32(torch.dot(g.reshape(-1), g.reshape(-1)).item())
            norm = np.sqrt(sumsq)
            if norm > f32(s.clip_gradients):
                factor = f32(s.clip_gradients) / norm
                if say:
                    say(
                        "Gradient clipping: scaling down gradients "
                        f"(L2 norm {norm:g} > {s.clip_gradients:g}) by scale factor {factor:g}"
                    )
                for g in grads:
                    g.mul_(float(factor))
        for group, g in zip(self.param_groups, grads):
            p = group["params"][0]
            if s.iter_size != 1:
                g.mul_(float(f32(1) / f32(s.iter_size)))
            decay = float(f32(s.weight_decay) * f32(group["decay_mult"]))
            if decay:
                if s.regularization_type == "L1":
                    g.add_(torch.sign(p) * decay)
                else:
                    g.add_(p * decay)
            local = float(f32(self.rate) * f32(group["lr_mult"]))
            p.sub_(self.update(g, self.state[p]["history"], local))
        self.iter += 1

    def update(self, g: torch.Tensor, history: list[torch.Tensor], local: float) -> torch.Tensor:
        """The step to subtract, from the regularised gradient ``g`` (Caffe's ComputeUpdateValue)."""
        s, h = self.solver, history[0]
        if self.kind == "SGD":  # v = momentum v + lr g
            h.mul_(s.momentum).add_(g * local)
            return h
        if self.kind == "Nesterov":  # v' = momentum v + lr g; step = (1 + momentum) v' - momentum v
            previous = h.clone()
            h.mul_(s.momentum).add_(local * g)
            return (1 + s.momentum) * h - s.momentum * previous
        if self.kind == "AdaGrad":
            h.add_(g * g)
            return g / (torch.sqrt(h) + s.delta) * local
        if self.kind == "RMSProp":
            h.mul_(s.rms_decay).add_(float(f32(1) - f32(s.rms_decay)) * (g * g))
            return g / (torch.sqrt(h) + s.delta) * local
        if self.kind == "AdaDelta":
            u = history[1]
            h.mul_(s.momentum).add_((1 - s.momentum) * (g * g))
            step = g * torch.sqrt((u + s.delta) / (h + s.delta))
            u.mul_(s.momentum).add_((1 - s.momentum) * (step * step))
            return step * local
        # Adam
        m, v = history
        b1, b2, t = s.momentum, s.momentum2, self.iter + 1
        correction = f32(math.sqrt(1 - b2**t) / (1 - b1**t))
        m.mul_(b1).add_((1 - b1) * g)
        v.mul_(b2).add_((1 - b2) * (g * g))
        return m / (torch.sqrt(v) + s.delta) * float(f32(local) * correction)
