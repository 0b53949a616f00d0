"""The nets a solver file names: its train net and test nets, as Caffe's ``Solver::InitTrainNet`` and
``InitTestNets`` build them (net / net_param / train_net / train_net_param, test_net / test_net_param
and the generic net shared by every test instance, the phase and states merged in, the solver's
``weights`` copied into each).

``path`` resolves a path the solver file names (its folder, or the working directory as Caffe);
``say`` takes Caffe's log lines; ``data_paths`` is where the nets' layers look for their data files.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

from engine.data.paths import DEFAULT, DataPaths
from engine.errors import EngineError, naming_file
from engine.net import Net
from engine.weights import copy_trained_layers_from_file
from proto import caffe_pb2

Say = Callable[[str], None]
Resolve = Callable[[str], str]


def _read_net(path: str) -> caffe_pb2.NetParameter:
    from proto import textio

    return textio.read_net(path)


def build_train_net(
    p: caffe_pb2.SolverParameter, xp: Any, say: Say, path: Resolve, data_paths: DataPaths = DEFAULT
) -> Net:
    sources = [f for f in ("net", "net_param", "train_net", "train_net_param") if p.HasField(f)]
    fields = "net, net_param, train_net, train_net_param"
    if not sources:
        raise EngineError(f"SolverParameter must specify a train net using one of these fields: {fields}")
    if len(sources) > 1:
        raise EngineError(
            "SolverParameter must not contain more than one of these fields specifying a train_net: "
            f"{fields} (found {', '.join(sources)})"
        )
    source = sources[0]
    if source.endswith("_param"):
        net_param = caffe_pb2.NetParameter()
        net_param.CopyFrom(getattr(p, source))
        say(f"Creating training net specified in {source}.")
    else:
        say(f"Creating training net from {source} file: {getattr(p, source)}")
        net_param = _read_net(path(getattr(p, source)))
    state = caffe_pb2.NetState(phase=caffe_pb2.TRAIN)
    state.MergeFrom(net_param.state)
    state.MergeFrom(p.train_state)
    net_param.state.CopyFrom(state)
    file = None if source.endswith("_param") else path(getattr(p, source))
    with naming_file(file) if file else contextlib.nullcontext():  # its errors name the prototxt
        net = Net(net_param, xp=xp, data_paths=data_paths)
    return load_weights(net, p, say, path)


def build_test_nets(
    p: caffe_pb2.SolverParameter, xp: Any, say: Say, path: Resolve, data_paths: DataPaths = DEFAULT
) -> list[Net]:
    generic = [f for f in ("net", "net_param") if p.HasField(f)]
    if len(generic) > 1:
        raise EngineError("Both net_param and net_file may not be specified.")
    specific = len(p.test_net_param) + len(p.test_net)
    if generic and len(p.test_iter) < specific or not generic and len(p.test_iter) != specific:
        raise EngineError("test_iter must be specified for each test network.")
    instances = specific + (len(p.test_iter) - specific)
    if p.test_state and len(p.test_state) != instances:
        raise EngineError("test_state must be unspecified or specified once per test net.")
    if instances and p.test_interval <= 0:
        raise EngineError("test_interval must be positive when there are test nets")
    params: list[caffe_pb2.NetParameter] = [caffe_pb2.NetParameter() for _ in range(instances)]
    sources: list[str] = []
    for net_param in p.test_net_param:
        params[len(sources)].CopyFrom(net_param)
        sources.append("test_net_param")
    for test_path in p.test_net:
        params[len(sources)].CopyFrom(_read_net(path(test_path)))
        sources.append(f"test_net file: {test_path}")
    if generic and len(sources) < instances:
        shared = p.net_param if generic[0] == "net_param" else _read_net(path(p.net))
        source = "net_param" if generic[0] == "net_param" else f"net file: {p.net}"
        for i in range(len(sources), instances):
            params[i].CopyFrom(shared)
            sources.append(source)
    nets = []
    for i, net_param in enumerate(params):
        state = caffe_pb2.NetState(phase=caffe_pb2.TEST)
        state.MergeFrom(net_param.state)
        if p.test_state:
            state.MergeFrom(p.test_state[i])
        net_param.state.CopyFrom(state)
        say(f"Creating test net (#{i}) specified by {sources[i]}")
        nets.append(load_weights(Net(net_param, xp=xp, data_paths=data_paths), p, say, path))
    return nets


def load_weights(net: Net, p: caffe_pb2.SolverParameter, say: Say, path: Resolve) -> Net:
    """The solver's ``weights`` (each entry a comma-separated list), copied in as Caffe master's
    LoadNetWeights does, into the train net and every test net; HDF5 or binary by content."""
    for entry in p.weights:
        for name in (n.strip() for n in entry.split(",")):
            say(f"Finetuning from {name}")
            copy_trained_layers_from_file(net, path(name))
    return net
