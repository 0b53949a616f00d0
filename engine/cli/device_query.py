"""`main.py device_query [--gpu G]`: which backends are usable here, and Caffe's GPU report.

On stdout, what this build can run on: numpy's version, BLAS and threads; cupy's version and each
GPU, or why none is usable. On stderr, as `caffe device_query` logs it: "Querying GPUs G", then for
each device asked for with --gpu its properties under Caffe's labels.
"""

from __future__ import annotations

import argparse
from typing import Any

from engine import backend
from engine.cli import common, glog

say = glog.tool_printer(114)
report = glog.printer("common.cpp:158")


def caffe_report(device: int, props: dict[str, Any]) -> list[str]:
    """Caffe::DeviceQuery's lines for one device."""

    def triple(key: str) -> str:
        return ", ".join(str(v) for v in props.get(key, (0, 0, 0)))

    def yes(key: str) -> str:
        return "Yes" if props.get(key) else "No"

    rows = [
        ("Device id", device),
        ("Major revision number", props.get("major")),
        ("Minor revision number", props.get("minor")),
        ("Name", props.get("name")),
        ("Total global memory", props.get("totalGlobalMem")),
        ("Total shared memory per block", props.get("sharedMemPerBlock")),
        ("Total registers per block", props.get("regsPerBlock")),
        ("Warp size", props.get("warpSize")),
        ("Maximum memory pitch", props.get("memPitch")),
        ("Maximum threads per block", props.get("maxThreadsPerBlock")),
        ("Maximum dimension of block", triple("maxThreadsDim")),
        ("Maximum dimension of grid", triple("maxGridSize")),
        ("Clock rate", props.get("clockRate")),
        ("Total constant memory", props.get("totalConstMem")),
        ("Texture alignment", props.get("textureAlignment")),
        ("Concurrent copy and execution", yes("deviceOverlap")),
        ("Number of multiprocessors", props.get("multiProcessorCount")),
        ("Kernel execution timeout", yes("kernelExecTimeoutEnabled")),
    ]
    return [f"{label + ':':<31}{value}" for label, value in rows]


def run(args: argparse.Namespace) -> int:
    gpu = args.gpu or ""
    say(f"Querying GPUs {gpu}")
    gpus = common.parse_gpus(gpu)
    info = backend.describe()
    print(f"CPU: numpy {info['numpy']}, {info['cpu_threads']} hardware threads")
    for line in info["blas"]:
        print(f"  BLAS: {line}")
    print(f"GPU: {info['gpu']}")
    for line in info.get("devices", []):
        print(f"  {line}")
    for device in gpus:
        for line in caffe_report(device, common.device_properties(device)):
            report(line)
    return 0
