"""The update rules of Caffe's solvers; each sets a parameter's diff to the step to subtract.

Every rule reads the (normalised, regularised) gradient in ``diff`` and the solver's history
blobs, and leaves in ``diff`` what Net.update() subtracts from the data.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator

import numpy as np

from engine import backend, kernels, parallel
from engine.solvers.base import Solver
from engine.solvers.registry import register_solver
from proto import caffe_pb2


@register_solver("SGD")
class SGDSolver(Solver):
    """v = momentum * v + lr * g; step = v."""

    fields = ("momentum",)
    _graph_update: Callable[[], None] | None = None

    def compute_update_value(self, param_id: int, rate: float) -> None:
        diff = self.net.learnable_params[param_id].diff
        history = self.history_of(param_id)
        history *= self.param.momentum
        history += self.xp.multiply(diff, self.local_rate(param_id, rate), out=self.scratch(diff))
        diff[...] = history

    def graph_update(self) -> Callable[[], None] | None:
        """fused_update's kernel for every parameter, the rate read from the device, where nothing of
        the update needs the host: one batch per step (iter_size 1), no gradient clipping (it reads
        the norm), L2 or no decay, no pycaffe callbacks, the step's graph usable."""
        p, params = self.param, self.net.learnable_params
        if p.iter_size != 1 or p.clip_gradients >= 0 or self.callbacks or not self.graph_step.usable():
            return None
        decays = [self.decay(i) for i in range(len(params))]
        if p.regularization_type != "L2" and any(decays):
            return None
        arrays = [a for i, blob in enumerate(params) for a in (blob.data, blob.diff, self.history_of(i))]
        if not all(a.flags.c_contiguous and a.dtype == self.net.dtype for a in arrays):
            return None
        if self._graph_update is None:
            self.rate_device = self.xp.zeros(1, self.net.dtype)
            mults = [float(self.real(self.net.params_lr[i])) for i in range(len(params))]
            momentum = p.momentum

            def update() -> None:
                for i, blob in enumerate(params):
                    history = self.history_of(i)
                    kernels.sgd_update_device_rate(
                        blob.data, blob.diff, history, decays[i], momentum, self.rate_device, mults[i]
                    )

            self._graph_update = update
        return self._graph_update

    def fused_update(self, param_id: int, rate: float) -> bool:
        """With L2 (or no) decay, the whole step as one GPU kernel, or on the CPU in place, a cache-sized
        block at a time (seven passes over a block that stays in cache, not over the whole parameter);
        the arithmetic, and so the rounding, is that of the separate stages."""
        decay = self.decay(param_id)
        if decay and self.param.regularization_type != "L2":
            return False
        blob, history = self.net.learnable_params[param_id], self.history_of(param_id)
        scale, momentum, local = (
            self.normalization(),
            self.param.momentum,
            self.local_rate(param_id, rate),
        )
        if kernels.sgd_update(blob.data, blob.diff, history, scale, decay, momentum, local):
            return True
        xp = self.xp
        flat = [a.reshape(-1) for a in (blob.data, blob.diff, history)]
        spare = None if xp is np else self.scratch(blob.diff).reshape(-1)

        def block(start: int, stop: int) -> None:
            # One block of this thread's scratch serves every block: only three arrays stream.
            data, diff, past = (a[start:stop] for a in flat)
            if spare is None:
                scratch = backend.scratch("sgd_update", (stop - start,), data.dtype)
            else:
                scratch = spare[start:stop]
            if scale != 1:
                diff *= scale
            if decay:
                diff += xp.multiply(data, decay, out=scratch)
            past *= momentum
            past += xp.multiply(diff, local, out=scratch)
            diff[...] = past
            data -= past

        # Blocks of the four operands (data, diff, history, scratch) filling a core's L2 (block_items
        # fills half of it with item_bytes), split over the pool's threads for the large parameters.
        parallel.run_blocks(block, flat[0].size, xp, 1, 2 * blob.data.itemsize)
        return True


@register_solver("Nesterov")
class NesterovSolver(Solver):
    """v' = momentum * v + lr * g; step = (1 + momentum) * v' - momentum * v."""

    fields = ("momentum",)

    def compute_update_value(self, param_id: int, rate: float) -> None:
        diff = self.net.learnable_params[param_id].diff
        history = self.history_of(param_id)
        momentum = self.param.momentum
        previous = history.copy()
        history *= momentum
        history += self.local_rate(param_id, rate) * diff
        diff[...] = (1 + momentum) * history - momentum * previous


@register_solver("AdaGrad")
class AdaGradSolver(Solver):
    """h += g^2; step = lr * g / (sqrt(h) + delta)."""

    fields = ("delta",)

    @classmethod
    def param_problems(cls, param: caffe_pb2.SolverParameter) -> Iterator[str]:
        if param.momentum != 0:
            yield "Momentum cannot be used with AdaGrad."

    def compute_update_value(self, param_id: int, rate: float) -> None:
        diff = self.net.learnable_params[param_id].diff
        history = self.history_of(param_id)
        history += diff * diff
        diff /= self.xp.sqrt(history) + self.param.delta
        diff *= self.local_rate(param_id, rate)


@register_solver("RMSProp")
class RMSPropSolver(Solver):
    """h = decay * h + (1 - decay) g^2; step = lr * g / (sqrt(h) + delta)."""

    fields = ("rms_decay", "delta")

    @classmethod
    def param_problems(cls, param: caffe_pb2.SolverParameter) -> Iterator[str]:
        if param.momentum != 0:
            yield "Momentum cannot be used with RMSProp."
        if not 0 <= param.rms_decay < 1:
            yield f"rms_decay should lie between 0 and 1 (got {param.rms_decay:g})."

    def compute_update_value(self, param_id: int, rate: float) -> None:
        diff = self.net.learnable_params[param_id].diff
        history = self.history_of(param_id)
        decay = self.param.rms_decay
        history *= decay
        history += float(self.real(1) - self.real(decay)) * (diff * diff)
        diff /= self.xp.sqrt(history) + self.param.delta
        diff *= self.local_rate(param_id, rate)


@register_solver("AdaDelta")
class AdaDeltaSolver(Solver):
    """h_g = m h_g + (1-m) g^2; step = lr * g * sqrt((h_u + delta) / (h_g + delta)); h_u = m h_u + (1-m) u^2.

    Caffe squares the update before scaling it by the learning rate, and so do we.
    """

    fields = ("momentum", "delta")
    history_per_param = 2

    def compute_update_value(self, param_id: int, rate: float) -> None:
        diff = self.net.learnable_params[param_id].diff
        grad_history = self.history_of(param_id, 0)
        update_history = self.history_of(param_id, 1)
        momentum, delta = self.param.momentum, self.param.delta
        grad_history *= momentum
        grad_history += (1 - momentum) * (diff * diff)
        diff *= self.xp.sqrt((update_history + delta) / (grad_history + delta))
        update_history *= momentum
        update_history += (1 - momentum) * (diff * diff)
        diff *= self.local_rate(param_id, rate)


@register_solver("Adam")
class AdamSolver(Solver):
    """m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2; step = lr * sqrt(1-b2^t)/(1-b1^t) * m / (sqrt(v) + eps)."""

    fields = ("momentum", "momentum2", "delta")
    history_per_param = 2

    def compute_update_value(self, param_id: int, rate: float) -> None:
        diff = self.net.learnable_params[param_id].diff
        m = self.history_of(param_id, 0)
        v = self.history_of(param_id, 1)
        beta1, beta2 = self.param.momentum, self.param.momentum2
        t = self.iter + 1
        correction = self.real(math.sqrt(1 - beta2**t) / (1 - beta1**t))  # double, kept as Dtype
        m *= beta1
        m += (1 - beta1) * diff
        v *= beta2
        v += (1 - beta2) * (diff * diff)
        diff[...] = m / (self.xp.sqrt(v) + self.param.delta)
        diff *= float(self.real(self.local_rate(param_id, rate)) * correction)
