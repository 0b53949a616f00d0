"""The one compiled part: engine/native/direct_conv.c, the CPU's direct convolution kernels.

Everything else is in pyproject.toml. The extension is optional: where no C compiler is found the
install still succeeds and convolutions take the numpy/BLAS path (engine.layers.conv_direct says
which). It is built with -O3 for the baseline instruction set; the file carries its own AVX2 and
AVX-512 copies and picks one from the CPU at run time, so one build runs on any x86-64 machine.
"""

import sys

from setuptools import Extension, setup

flags = [] if sys.platform == "win32" else ["-O3", "-std=c11", "-ffp-contract=fast"]
setup(
    ext_modules=[
        Extension(
            "engine._direct_conv",
            sources=["engine/native/direct_conv.c"],
            depends=["engine/native/direct_conv_kernels.h"],
            extra_compile_args=flags,
            optional=True,
        )
    ]
)
