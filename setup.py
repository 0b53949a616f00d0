"""The compiled parts: the CPU's kernels in engine/native (direct_conv.c: convolutions;
channel_norm.c: BatchNorm with the Scale and ReLU after it; max_pool.c: MAX pooling).

Everything else is in pyproject.toml. The extensions are optional: where no C compiler is found the
install still succeeds and those layers take the numpy/BLAS path (engine.layers.conv_direct,
engine.layers.channel_norm and engine.layers.max_pool say which). Each is built with -O3 for the
baseline instruction set; each file carries its own AVX2 and AVX-512 copies (each_set.h) and picks
one from the CPU at run time (kernel_sets.h), so one build runs on any x86-64 machine.
"""

import sys

from setuptools import Extension, setup

flags = [] if sys.platform == "win32" else ["-O3", "-std=c11", "-ffp-contract=fast"]
shared = ["engine/native/kernel_sets.h", "engine/native/each_set.h"]  # every file includes both
setup(
    ext_modules=[
        Extension(
            f"engine._{name}",
            sources=[f"engine/native/{name}.c"],
            depends=[f"engine/native/{name}_kernels.h", *shared],
            extra_compile_args=flags,
            optional=True,
        )
        for name in ("direct_conv", "channel_norm", "max_pool")
    ]
)
