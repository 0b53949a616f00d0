"""A small persistent pool of threads for the CPU's array work, sized to BLAS's thread count.

numpy's ufuncs and copies run on one core, but numpy lets go of the GIL inside them, so work split
into slices (of the batch, of the channels) runs on several cores from Python threads:

    parallel.run(lambda start, stop: work(rows[start:stop]), len(rows), xp)

BLAS's own threads get in the way of that: after each GEMM, OpenBLAS's workers spin for a while
(about 0.1 s) before they sleep, so a core they spin on does no numpy work (measured: a 2-way split
right after a GEMM gains nothing, 1.5x without one). So while the engine trains (``gemms_in_pool``,
around Solver.step) BLAS runs single-threaded and the engine splits its GEMMs itself, over the same
pool (``matmul``), or runs independent ones side by side (``together``): the threads that do
everything else, with nothing spinning beside them. Each part of a split GEMM is a GEMM of its own
over whole rows or columns (the sum over the inner dimension is never split). Outside that scope
BLAS keeps its threads and GEMMs stay whole.

What is worth splitting was measured (2 cores of a virtual machine): compute-heavy work (GEMMs,
max pooling's strided comparisons) scales; copies and single contiguous adds are bound by memory
traffic and do not (im2col, Split's sum of diffs: they stay whole); several passes over a cache-sized
block (``run_blocks``: ReLU, the SGD update) gain a little; and small work loses, since handing a
slice to a sleeping thread costs up to a hundred microseconds (the thresholds below).

The pool has as many threads as BLAS had when it was made; ``ENGINE_THREADS`` overrides that, and
with one thread every call is plain sequential code. Slices must be independent: each writes only its
own part of the outputs, and no reduction is split. So the thread count changes no element-wise
result, and a GEMM's only through BLAS itself: a smaller part may get another kernel from BLAS
(OpenBLAS has its own for small matrices), which can round the same sums differently. On LeNet the
numbers with two threads are those with one, bit for bit.
"""

from __future__ import annotations

import contextlib
import functools
import os
import threading
from collections.abc import Callable, Iterator
from typing import Any

import numpy

from engine import backend, cpu_cache, kernels
from engine.kernels import gemm

Task = Callable[[int, int], object]


@functools.cache
def _blas_libraries() -> tuple[Any, ...]:
    """threadpoolctl's controllers of the BLAS libraries loaded now (none without threadpoolctl)."""
    try:
        from threadpoolctl import ThreadpoolController

        return tuple(lib for lib in ThreadpoolController().lib_controllers if lib.user_api == "blas")
    except Exception:  # threadpoolctl missing or unable to inspect a library
        return ()


def blas_threads() -> int:
    """How many threads numpy's BLAS uses (1 when that cannot be told)."""
    libraries = _blas_libraries()
    numpy_own = [lib for lib in libraries if "numpy" in str(lib.filepath)] or list(libraries)
    if numpy_own:
        return max(1, max(lib.num_threads or 1 for lib in numpy_own))
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        if os.environ.get(var, "").isdigit():
            return max(1, int(os.environ[var]))
    return 1


class Pool:
    """``size - 1`` worker threads plus the calling thread, each running one slice of a call."""

    def __init__(self, size: int) -> None:
        self.size = max(1, size)
        self._lock = threading.Lock()  # one call at a time; a second caller runs inline
        self._task: Task | None = None
        self._slices: list[tuple[int, int]] = []
        self._errors: list[BaseException] = []
        # Plain locks as one-shot signals (held = not yet): cheaper than Semaphore's Python code.
        self._start = [threading.Lock() for _ in range(self.size - 1)]
        self._done = [threading.Lock() for _ in range(self.size - 1)]
        for lock in (*self._start, *self._done):
            lock.acquire()
        self._workers = [
            threading.Thread(target=self._work, args=(i,), name=f"engine-pool-{i + 1}", daemon=True)
            for i in range(self.size - 1)
        ]
        for worker in self._workers:
            worker.start()

    def _work(self, index: int) -> None:
        while True:
            self._start[index].acquire()
            task, (start, stop) = self._task, self._slices[index + 1]
            try:
                if task is not None and start < stop:
                    task(start, stop)
            except BaseException as exc:  # handed to the caller, which raises it
                self._errors.append(exc)
            finally:
                self._done[index].release()

    def run(self, task: Task, size: int, grain: int = 1) -> None:
        parts = min(self.size, size // max(grain, 1))
        if parts <= 1 or threading.current_thread() in self._workers or not self._lock.acquire(False):
            task(0, size)
            return
        try:
            bounds = [size * i // parts for i in range(parts + 1)]
            slices = list(zip(bounds[:-1], bounds[1:]))
            self._task, self._slices, self._errors = task, slices + [(0, 0)] * (self.size - parts), []
            for start in self._start:
                start.release()
            try:
                task(*slices[0])
            finally:
                for done in self._done:
                    done.acquire()
                self._task = None
            if self._errors:
                raise self._errors[0]
        finally:
            self._lock.release()


# Below these sizes work stays on one thread. Handing a slice over costs up to a hundred
# microseconds on a virtual machine (a sleeping thread's core must be woken), and every numpy call
# in it passes the GIL between the threads (measured: 25 adds of 50k values per thread gain nothing
# split; at batch 4, LeNet's 6M multiply-add GEMMs ran slower split).
MIN_SPLIT_GEMM = 1 << 23  # multiply-adds of one GEMM
MIN_SPLIT_TASKS = 1 << 24  # multiply-adds of tasks that also make many numpy calls (``together``)
MIN_SLICE = 1 << 16  # values an element-wise slice should hold (``grain``)

_pool: Pool | None = None
_pid = os.getpid()
_split_gemms = 0  # > 0 inside gemms_in_pool: BLAS is single-threaded, matmul splits
_scope_lock = threading.Lock()
_saved: list[int] = []  # BLAS thread counts to restore


def pool() -> Pool:
    global _pool, _pid
    if _pool is None or _pid != os.getpid():  # a forked child has none of the parent's threads
        wanted = os.environ.get("ENGINE_THREADS", "")
        _pool = Pool(int(wanted) if wanted.isdigit() and int(wanted) > 0 else blas_threads())
        _pid = os.getpid()
    return _pool


def threads() -> int:
    """The number of slices a call is split into: ``ENGINE_THREADS``, else BLAS's thread count."""
    return pool().size


def grain(per_item: int) -> int:
    """The fewest items (images, channels, ...) of ``per_item`` values each worth a slice."""
    return max(1, -(-MIN_SLICE // max(per_item, 1)))


@functools.cache
def cache_bytes() -> int:
    """One core's share of its L2 cache (engine.cpu_cache reads sysfs), else sysconf's L2 size; 256
    KiB, a small L2, when neither tells."""
    share = cpu_cache.core_shares(usable=cpu_cache.usable_cores()).get(2)
    if share:
        return share
    try:
        found = os.sysconf("SC_LEVEL2_CACHE_SIZE")
    except (AttributeError, ValueError, OSError):
        found = 0
    return found if found > 0 else 256 << 10


def block_items(item_bytes: int) -> int:
    """How many items of ``item_bytes`` (the bytes one item's passes touch, every operand together)
    fit in half a core's L2 cache: a block that several passes read from the cache, not memory."""
    return max(1, cache_bytes() // 2 // max(item_bytes, 1))


def run_blocks(task: Task, size: int, xp: Any, per_item: int, item_bytes: int) -> None:
    """``run`` over ``size`` items of ``per_item`` values, each thread calling ``task`` on its slice a
    cache-sized block at a time (``block_items(item_bytes)``), in order: a task that makes several
    passes over its range (element-wise steps, per-channel sums) reads it from memory once. A thread
    gets at least a block (cheaper work than that loses more to the handover than it gains). On the
    GPU one call, as ``run``."""
    if xp is not numpy:
        task(0, size)
        return
    block = block_items(item_bytes)

    def blocks(start: int, stop: int) -> None:
        for first in range(start, stop, block):
            task(first, min(first + block, stop))

    run(blocks, size, xp, max(grain(per_item), block))


def run(task: Task, size: int, xp: Any = numpy, grain: int = 1) -> None:
    """Call ``task(start, stop)`` on slices covering ``range(size)``, in parallel on the CPU, and
    return when all are done (re-raising the first error). On the GPU (``xp`` not numpy) or with a
    single thread it is one call, ``task(0, size)``. ``grain``: the smallest slice worth a thread."""
    if xp is not numpy or size <= 1:
        task(0, size)
        return
    if _split_gemms or pool().size == 1:
        pool().run(task, size, grain)
        return
    # Outside a training step (`time`, `test`, classify), BLAS still has its threads: each slice's
    # GEMM would start them beside the pool's, oversubscribed (the ResNet-18-style net, batch 8, in
    # `time` on 2 cores: 549 against 510 ms a forward-backward on a quiet machine, 9.0 s against
    # 1.1 s beside other work, where spinning BLAS threads lose their cores).
    with gemms_in_pool(xp):
        pool().run(task, size, grain)


@contextlib.contextmanager
def gemms_in_pool(xp: Any = numpy) -> Iterator[None]:
    """While inside: BLAS single-threaded, and ``matmul`` splitting GEMMs over the pool (numpy only,
    with a pool of several threads and a BLAS that threadpoolctl can size; else nothing changes)."""
    global _split_gemms, _saved
    libraries = _blas_libraries() if xp is numpy and threads() > 1 else ()
    if not libraries:
        yield
        return
    with _scope_lock:
        _split_gemms += 1
        if _split_gemms == 1:
            _saved = [lib.num_threads for lib in libraries]
            for lib in libraries:
                lib.set_num_threads(1)
    try:
        yield
    finally:
        with _scope_lock:
            _split_gemms -= 1
            if _split_gemms == 0:
                for lib, count in zip(libraries, _saved):
                    lib.set_num_threads(count)


def splitting() -> bool:
    """Whether GEMMs are split over the pool now (inside ``gemms_in_pool``)."""
    return _split_gemms > 0


def ordered_sums(parts: dict[int, tuple[Any, ...]]) -> tuple[Any, ...]:
    """Per-slice partial sums (each slice's arrays, keyed by its start) added in the order of the
    keys, into the first slice's arrays: a fixed order for a thread count, whichever thread ends first."""
    order = sorted(parts)
    first = parts[order[0]]
    for key in order[1:]:
        for total, more in zip(first, parts[key]):
            total += more
    return first


def together(*tasks: Callable[[], None] | None, work: int = MIN_SPLIT_TASKS) -> None:
    """Run independent tasks (each with its own GEMMs) at the same time, one per thread, inside
    ``gemms_in_pool``; elsewhere, or when their ``work`` (multiply-adds) is too little to hand over,
    one after the other. None stands for no task."""
    runnable = [task for task in tasks if task is not None]
    if len(runnable) < 2 or not _split_gemms or work < MIN_SPLIT_TASKS:
        for task in runnable:
            task()
        return

    def share(start: int, stop: int) -> None:
        for task in runnable[start:stop]:
            task()

    pool().run(share, len(runnable))


def matmul(a: Any, b: Any, out: Any, split: str) -> Any:
    """``xp.matmul(a, b, out=out)``, inside ``gemms_in_pool`` split over the pool by ``split``: 'rows'
    (of a and out), 'cols' (of b and out) or 'batch' (the first axis of out, and of each operand
    that has it; others broadcast). Every part still sums over the whole inner dimension."""
    if not (_split_gemms and isinstance(out, numpy.ndarray)) or out.size * a.shape[-1] < MIN_SPLIT_GEMM:
        if kernels.enabled(out) and gemm.matmul(a, b, out):  # the GPU: cuBLAS a CUDA graph can capture
            return out
        return backend.get_array_module(out).matmul(a, b, out=out)
    if split == "rows":
        run(lambda s, e: numpy.matmul(a[..., s:e, :], b, out=out[..., s:e, :]), out.shape[-2])
    elif split == "cols":
        run(lambda s, e: numpy.matmul(a, b[..., s:e], out=out[..., s:e]), out.shape[-1])
    else:
        n = out.shape[0]

        def part(s: int, e: int) -> None:
            x, y = (m[s:e] if m.ndim == out.ndim and m.shape[0] == n else m for m in (a, b))
            numpy.matmul(x, y, out=out[s:e])

        run(part, n)
    return out
