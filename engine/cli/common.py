"""What the engine's subcommands share: Caffe's flags (GPU ids, stages, levels), reading a net for a
phase, and the one-line refusals of bad input."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, cast

from engine import backend
from engine.errors import EngineError, naming_file
from proto import caffe_pb2
from proto.inputs import kind_of

if TYPE_CHECKING:
    from engine.net import Net


class CliError(EngineError):
    """Bad command-line input: main.py prints the message as one line and exits with 2."""


def phase_value(name: str) -> int:
    return caffe_pb2.Phase.Value(name)


def read_net(path: str) -> caffe_pb2.NetParameter:
    from proto import textio

    return textio.read_net(path)


def require_file(path: str, flag: str) -> None:
    """Refuse a missing input before anything runs (Caffe would die half-way through its log)."""
    if not os.path.exists(path):
        raise CliError(f"{flag} {path}: no such file")
    if os.path.isdir(path):
        raise CliError(f"{flag} {path}: is a folder, not a file")
    kind = kind_of(os.stat(path).st_mode)
    if kind is not None:  # a FIFO would block the read, /dev/zero would never end
        raise CliError(f"{flag} {path}: it is {kind}, not a regular file")


def check_output(path: str, flag: str, inputs: Sequence[str]) -> None:
    """Refuse, before any work, an output that cannot be written (a folder, a link, a FIFO, a missing
    folder: proto.atomic's check) or that is one of ``inputs`` (the weights would be overwritten)."""
    from proto.atomic import WriteError, check_folder_writable, check_target

    try:
        target = check_target(path)
        check_folder_writable(os.path.dirname(target), path)  # /proc/self/x.csv: refused now, not at the end
    except WriteError as exc:
        raise CliError(f"{flag}: {exc}") from None
    for given in inputs:
        try:
            same = os.path.samefile(given, path)  # a hard link to an input is that input
        except (OSError, ValueError):
            same = False
        if same:
            raise CliError(f"{flag} {path}: it is an input ({given}); refusing to overwrite it")


def read_weights(path: str, flag: str = "--weights") -> Callable[[Net], None]:
    """Read a caffemodel up front (so a bad file is refused before anything is logged) and return
    what copies it into a net: ``CopyTrainedLayersFrom``, HDF5 when the file is HDF5, else binary."""
    from engine.weights import copy_trained_layers_from_hdf5
    from proto import binaryio, hdf5io

    require_file(path, flag)
    if hdf5io.is_hdf5(path):
        return lambda net: copy_trained_layers_from_hdf5(net, path)
    param = binaryio.read_caffemodel(path)

    def copy(net: Net) -> None:
        with naming_file(path):  # with --weights A,B the message says which file did not fit
            net.copy_trained_layers_from(param)

    return copy


def stages_from_flags(values: Sequence[str] | None) -> list[str]:
    """`--stage a,b` (repeatable here) as Caffe splits it on ','.

    Caffe splits the flag even when it is empty, so a run without --stage carries one empty stage
    name; only a rule naming the stage "" could tell, and we keep that quirk to filter exactly as it does.
    """
    return ",".join(values or []).split(",")


def net_for(path: str, phase: int, level: int, stages: Sequence[str]) -> caffe_pb2.NetParameter:
    """The net as ``Net(file, phase, level, &stages)`` reads it: the flags' stages are added to the
    file's own, its phase and level are replaced."""
    param = read_net(path)
    param.state.phase = cast(caffe_pb2.Phase, phase)
    param.state.stage.extend(stages)
    param.state.level = level
    return param


def _cupy() -> Any:
    return backend.array_module("gpu")


def device_count() -> int:
    reason = backend.gpu_unavailable_reason()
    if reason:
        raise CliError(f"--gpu: no GPU is usable here: {reason}")
    return int(_cupy().cuda.runtime.getDeviceCount())


def device_properties(device_id: int) -> dict[str, Any]:
    props = dict(_cupy().cuda.runtime.getDeviceProperties(device_id))
    if isinstance(props.get("name"), bytes):
        props["name"] = props["name"].decode(errors="replace")
    return props


def parse_gpus(flag: str | None) -> list[int]:
    """Caffe's `--gpu`: empty for the CPU, device ids separated by ',', or 'all' (every device)."""
    if not flag:
        return []
    if flag == "all":
        return list(range(device_count()))
    ids = []
    for part in flag.split(","):
        text = part.strip()
        if not text.isdigit():
            raise CliError(f"--gpu {flag}: '{part}' is not a device id (give 0, a list such as 0,1, or all)")
        ids.append(int(text))
    count = device_count()
    for device in ids:
        if device >= count:
            raise CliError(f"--gpu {flag}: there is no GPU {device} (this machine has {count})")
    return ids


def use_single_gpu(gpus: list[int], say: Callable[[str], None]) -> list[int]:
    """`test` and `time` run on one device: Caffe names each one it drops."""
    gpus = list(gpus)
    while len(gpus) > 1:
        say(f"Not using GPU #{gpus.pop()} for single-GPU function")
    return gpus


def set_device(device_id: int) -> None:
    backend.set_device(device_id)
    backend.set_mode_gpu()


def check_iterations(iterations: int) -> None:
    if iterations < 1:
        raise CliError(f"--iterations must be at least 1 (got {iterations})")
