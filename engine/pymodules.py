"""Where Python layers' modules come from: the net's own folder, as Caffe users keep them.

Caffe imports ``python_param.module`` from PYTHONPATH, and people keep the layer's .py beside the
prototxt and run caffe from that folder. The CLI, pycaffe and the app (once the user trusts the
folder, see ``engine.pyimport``) do what that amounts to: while a net *with Python layers* is built
and run, the net's folders are appended to ``sys.path``, after our packages and everything
installed, never first (a downloaded folder's ``threadpoolctl.py`` or ``engine.py`` never shadows
the real one). A net without Python layers leaves ``sys.path`` alone, and so does one whose folder the
app's trust gate refuses (``engine.pyimport``): nothing from an untrusted folder can be imported, by
the net's layers or by any other import meanwhile. Two more things make a module
kept there behave as a user expects:

* ``import caffe`` inside it gets this engine when no package called caffe is installed;
* a module file edited since it was imported is imported afresh on the next build.
"""

from __future__ import annotations

import contextlib
import contextvars
import importlib
import importlib.machinery
import importlib.util
import os
import sys
import threading
from collections.abc import Iterable, Iterator, Sequence

from engine import trust_gate
from proto import caffe_pb2

_lock = threading.Lock()
_users: dict[str, int] = {}  # folder -> how many builds hold it on sys.path
_stamps: dict[str, tuple[str, int, int]] = {}  # module -> (file, mtime_ns, size) when it was imported
_building: contextvars.ContextVar[tuple[str, ...]] = contextvars.ContextVar("pymodules_building", default=())
imported: dict[str, str | None] = {}  # top-level modules imported for Python layers -> their file


def current_folders() -> tuple[str, ...]:
    """The folders of the net being built in this thread (inside ``importing_from``)."""
    return _building.get()


def module_names(net: caffe_pb2.NetParameter) -> list[str]:
    """The modules the net's Python layers import, in order, each once."""
    names = [layer.python_param.module for layer in net.layer if layer.type == "Python"]
    return list(dict.fromkeys(n for n in names if n))


def folders(*paths: str | os.PathLike[str] | None) -> list[str]:
    """The folders of these files (the net's, the solver's), each once; unsaved ones are skipped."""
    found = [os.path.dirname(os.path.abspath(p)) for p in paths if p]
    return list(dict.fromkeys(found))


def module_file(name: str, where: Sequence[str]) -> str | None:
    """The file that would provide module ``name`` from one of the folders ``where``, if any."""
    top = name.split(".")[0]
    try:
        spec = importlib.machinery.PathFinder.find_spec(top, list(where))
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.origin or spec.origin in ("built-in", "frozen"):
        return None
    return spec.origin


def stamp(name: str, where: Sequence[str]) -> tuple[str, int, int] | None:
    """(file, mtime, size) of the module's file in ``where``: it changes when the user edits it."""
    path = module_file(name, where)
    if path is None:
        return None
    try:
        info = os.stat(path)
    except OSError:
        return None
    return (path, info.st_mtime_ns, info.st_size)


def _forget(name: str) -> None:
    top = name.split(".")[0]
    for loaded in [m for m in sys.modules if m == top or m.startswith(top + ".")]:
        del sys.modules[loaded]


def _refresh(names: Iterable[str], where: Sequence[str]) -> None:
    """Drop a module a Python layer imported whose file in ``where`` changed or is another folder's.

    Only modules imported for Python layers are ever dropped: one of ours or an installed one
    named like a file beside the net stays (``engine.pyimport`` refuses the layer instead).
    """
    for name in names:
        now = stamp(name, where)
        if now is None:
            continue  # not kept beside the net: whatever Python finds is the user's business
        module = sys.modules.get(name)
        loaded = getattr(module, "__file__", None)
        same_file = loaded is not None and os.path.abspath(loaded) == now[0]
        if module is not None and name.split(".")[0] not in imported:
            continue
        if module is not None and (not same_file or _stamps.get(name) != now):
            _forget(name)
            with contextlib.suppress(OSError, NotImplementedError, ValueError):
                os.remove(importlib.util.cache_from_source(now[0]))  # its bytecode may look current
            importlib.invalidate_caches()
        _stamps[name] = now


def _alias_caffe() -> None:
    """``import caffe`` in a user's layer gets the engine (the app's pycaffe) unless caffe is installed."""
    if "caffe" in sys.modules or importlib.util.find_spec("caffe") is not None:
        return
    package = __name__.rpartition(".")[0]
    sys.modules["caffe"] = sys.modules[package]  # our package: loaded before any of its modules
    where = {"proto": package, "pycaffe": package}  # pycaffe's own modules are in engine/pycaffe/
    for sub in ("io", "proto", "net_spec", "coord_map", "pycaffe", "classifier", "detector"):
        name = f"{where.get(sub, f'{package}.pycaffe')}.{sub}"
        sys.modules[f"caffe.{sub}"] = sys.modules.get(name) or importlib.import_module(name)
    sys.modules["caffe.proto.caffe_pb2"] = caffe_pb2


@contextlib.contextmanager
def importing_from(where: Sequence[str], names: Iterable[str] = ()) -> Iterator[None]:
    """While inside, the net's folders ``where`` end ``sys.path`` and are the ones its Python layers
    (modules ``names``, refreshed if their files changed) may come from. Without ``names`` (a net
    with no Python layer) nothing is touched."""
    where = [w for w in where if w]
    names = list(names)
    if not names:
        yield
        return
    token = _building.set(tuple(where))
    if not trust_gate.allowed(where):
        # Under the app's trust gate an untrusted folder never joins sys.path: its layers are refused
        # ("not run") anyway, and meanwhile any import that misses elsewhere (Pillow's plugins trying
        # olefile) would find a planted module there and run it.
        try:
            yield
        finally:
            _building.reset(token)
        return
    with _lock:
        _alias_caffe()  # before the folders join: a caffe.py beside the net is not "caffe installed"
        for folder in where:
            if _users.get(folder, 0) == 0 and folder not in sys.path:
                sys.path.append(folder)
                _users[folder] = 1
            elif folder in _users:
                _users[folder] += 1
        _refresh(names, where)
    try:
        yield
    finally:
        _building.reset(token)
        with _lock:
            for folder in where:
                if folder not in _users:
                    continue  # it was on sys.path before us: leave it
                _users[folder] -= 1
                if _users[folder] == 0:
                    del _users[folder]
                    with contextlib.suppress(ValueError):
                        sys.path.remove(folder)


def for_nets(
    files: Iterable[str | os.PathLike[str] | None], nets: Iterable[caffe_pb2.NetParameter]
) -> contextlib.AbstractContextManager[None]:
    """``importing_from`` the folders of ``files`` (the net's, the solver's) for the Python layers of
    ``nets``: a run of the CLI or a pycaffe script (the user ran it, so no trust is asked)."""
    names = list(dict.fromkeys(name for net in nets for name in module_names(net)))
    return importing_from(folders(*files), names)


def for_solver(
    param: caffe_pb2.SolverParameter, file: str | os.PathLike[str] | None = None
) -> contextlib.AbstractContextManager[None]:
    """``for_nets`` for the nets a solver builds (its net files, relative to the working folder as
    Caffe reads them, and its inline nets); ``file``: the solver's own file."""
    from proto import textio

    paths = [p for p in (param.net, param.train_net, *param.test_net) if p]
    inline = [n for n in (param.net_param, param.train_net_param, *param.test_net_param) if n.layer]
    nets = [textio.read_net(p) for p in paths if os.path.isfile(p)] + inline
    return for_nets([file, *paths], nets)


def missing_hint(name: str, where: Sequence[str]) -> str:
    """What to do about a module that cannot be found, in words naming the folders looked in."""
    file = f"{name.split('.')[0]}.py"
    if not where:
        return f"save the net in the folder that holds {file}, or put that folder on PYTHONPATH"
    shown = where[0] if len(where) == 1 else ", ".join(where)
    return f"put {file} beside the net (looked in {shown} and on PYTHONPATH)"
