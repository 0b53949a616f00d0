"""The compiled kernels (engine/native/*.c): `make install` builds them where a C compiler is found,
and a library is loaded only when it is built for this Python side (its ABI) and not turned off.

Apart from each library's own tests, which are skipped where it was not built: a build that failed
on a machine with a compiler fails here instead of passing unseen.
"""

from __future__ import annotations

import shutil
import sys

import pytest

from engine.layers import channel_norm, conv_direct, max_pool

SETS = ("avx512", "avx2", "baseline")
LIBRARIES = [  # each library, its module and its knob
    (conv_direct, "_direct_conv", "BARISTA_DIRECT_CONV"),
    (channel_norm, "_channel_norm", "BARISTA_CHANNEL_NORM"),
    (max_pool, "_max_pool", "BARISTA_MAX_POOL"),
]
NAMES = [module for _, module, _ in LIBRARIES]
# the libraries this install loaded: the tests of how they are loaded
BUILT = [
    pytest.param(*lib, marks=pytest.mark.skipif(not lib[0].available(), reason="not built"))
    for lib in LIBRARIES
]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the compiler check is for Linux")
@pytest.mark.skipif(not (shutil.which("cc") or shutil.which("gcc")), reason="no C compiler on the PATH")
@pytest.mark.parametrize("library, module, knob", LIBRARIES, ids=NAMES)
def test_the_install_built_the_kernels_where_a_compiler_is_found(monkeypatch, library, module, knob):
    for _, _, each in LIBRARIES:
        monkeypatch.delenv(each, raising=False)
    assert library._load() is not None, f"a C compiler is here, but engine.{module} was not built"
    assert library.kernel_name() in SETS


@pytest.mark.parametrize("library, module, knob", BUILT, ids=NAMES)
def test_an_unknown_kernel_set_is_refused(library, module, knob):
    before = library.kernel_name()
    assert not library.select("sse9")
    assert library.kernel_name() == before


@pytest.mark.parametrize("library, module, knob", BUILT, ids=NAMES)
def test_a_stale_or_disabled_build_is_not_used(monkeypatch, library, module, knob):
    monkeypatch.setattr(library, "ABI", library.ABI + 1)
    assert library._load() is None
    monkeypatch.setattr(library, "ABI", library.ABI - 1)
    assert library._load() is not None
    monkeypatch.setenv(knob, "0")
    assert library._load() is None
