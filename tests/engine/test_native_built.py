"""`make install` builds the compiled kernels (engine/native/*.c) where a C compiler is found.

Apart from those kernels' own tests, which are skipped where the kernels were not built: a build
that failed on a machine with a compiler fails here instead of passing unseen.
"""

from __future__ import annotations

import shutil
import sys

import pytest

from engine.layers import channel_norm, conv_direct, max_pool

SETS = ("avx512", "avx2", "baseline")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the compiler check is for Linux")
@pytest.mark.skipif(not (shutil.which("cc") or shutil.which("gcc")), reason="no C compiler on the PATH")
@pytest.mark.parametrize(
    "library, module",
    [(conv_direct, "_direct_conv"), (channel_norm, "_channel_norm"), (max_pool, "_max_pool")],
)
def test_the_install_built_the_kernels_where_a_compiler_is_found(monkeypatch, library, module):
    for knob in ("BARISTA_DIRECT_CONV", "BARISTA_CHANNEL_NORM", "BARISTA_MAX_POOL"):
        monkeypatch.delenv(knob, raising=False)
    assert library._load() is not None, f"a C compiler is here, but engine.{module} was not built"
    assert library.kernel_name() in SETS
