"""Exporting a net to ONNX and running it in onnxruntime beside the engine's forward pass."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import onnxruntime as ort

from engine import rng
from engine.export.onnx_walk import build_graph
from engine.export.onnx_write import to_model
from engine.net import Net
from proto import caffe_pb2, textio

RTOL = 1e-5


def session(model) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.log_severity_level = 3
    return ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])


def build(
    net: str | caffe_pb2.NetParameter, phase: int = caffe_pb2.TEST, seed: int = 1, batch: int | None = None
) -> Net:
    """The engine's Net, its fillers seeded; ``batch`` replaces the first axis of its Input shapes."""
    param = textio.parse_net(net) if isinstance(net, str) else net
    if batch is not None:
        for layer in param.layer:
            for shape in layer.input_param.shape:
                shape.dim[0] = batch
    with rng.seeded(seed):
        return Net(param, phase=phase, xp=np)


def compare(
    net: Net,
    feeds: Mapping[str, np.ndarray] | None = None,
    dynamic_batch: bool = False,
    seed: int = 0,
    every_blob: bool = True,
    batch: int | None = None,
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Export ``net`` as it is, then run the engine's forward and onnxruntime on the same inputs.

    Input blobs get ``feeds`` or standard normal values; data layers fill their own tops, which are
    then fed to onnxruntime. With ``every_blob`` each blob's last value is an output too (the exporter
    names it after the blob). Returns {blob: (onnxruntime's, the engine's)}.
    """
    g = build_graph(net, dynamic_batch)  # before forward: BatchNorm's TRAIN pass moves its statistics
    if every_blob:
        taken = {name for name, _ in g.inputs} | {name for name, _ in g.outputs}
        g.outputs += [(n, net.blob_by_name(n).shape) for n in net.blob_names if n not in taken]
    model = to_model(g, net.name)
    if batch is not None:
        for name in net.input_blob_names:
            net.blob_by_name(name).reshape((batch, *net.blob_by_name(name).shape[1:]))
        net.reshape()
    draw = np.random.default_rng(seed)
    feeds = {**labels(net, draw), **(feeds or {})}
    for name in net.input_blob_names:
        blob = net.blob_by_name(name)
        if name not in feeds:
            feeds[name] = draw.standard_normal(blob.shape).astype(np.float32)
        if feeds[name].shape != blob.shape:
            blob.reshape(feeds[name].shape)
    if any(net.blob_by_name(n).shape != feeds[n].shape for n in net.input_blob_names):
        net.reshape()
    for name in net.input_blob_names:
        net.blob_by_name(name).data[...] = feeds[name]
    if feeds:
        net.reshape()
    net.forward()
    names = [o.name for o in model.graph.output]
    blob = {name: name if net.has_blob(name) else name.rsplit("@", 1)[0] for name in names}  # x@1: x's last
    want = {name: np.array(net.blob_by_name(blob[name]).data) for name in names}
    graph_inputs = [i.name for i in model.graph.input]
    ort_feeds = {n: feeds[n] if n in feeds else np.array(net.blob_by_name(n).data) for n in graph_inputs}
    got = session(model).run(None, ort_feeds)
    assert set(net.output_blob_names) <= set(blob.values()), (names, net.output_blob_names)
    return {name: (np.asarray(value), want[name]) for name, value in zip(names, got)}


CLASS_LABELS = ("SoftmaxWithLoss", "Accuracy", "InfogainLoss", "MultinomialLogisticLoss", "HingeLoss")


def labels(net: Net, draw: np.random.Generator) -> dict[str, np.ndarray]:
    """Integer class labels for the input blobs that classification layers read as labels."""
    out = {}
    inputs = set(net.input_blob_names)
    producer = {t: i for i, tops in enumerate(net.top_id_vecs) for t in tops}
    for i, layer in enumerate(net.layers):
        if layer.param.type in CLASS_LABELS:
            blob_id = net.bottom_id_vecs[i][1]
            while net.layers[producer[blob_id]].param.type == "Split":  # back to the source
                blob_id = net.bottom_id_vecs[producer[blob_id]][0]
            name = net.blob_names[blob_id]
            classes = getattr(layer, "channels", None) or layer.dim  # type: ignore[attr-defined]
            if name in inputs:
                shape = net.blob_list[blob_id].shape
                out[name] = draw.integers(0, classes, shape).astype(np.float32)
    return out


def assert_agree(results: dict[str, tuple[np.ndarray, np.ndarray]], rtol: float = RTOL) -> None:
    """Within ``rtol`` of each output's largest magnitude (elementwise relative error means nothing
    for the near-zero entries of a softmax), same shapes, NaN where the engine has NaN."""
    for name, (got, want) in results.items():
        assert got.shape == want.shape, f"{name}: onnxruntime {got.shape}, engine {want.shape}"
        scale = max(float(np.nanmax(np.abs(want))) if want.size else 0.0, 1e-6)
        np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * scale, err_msg=name)


def randomize(net: Net, seed: int = 0) -> Net:
    """Every all-zero parameter drawn at random (scaled by its fan-in), BatchNorm's statistics made
    plausible: the examples' inference nets come without fillers, whose zeros would hide any mapping
    error. Parameters their fillers drew are kept (drawing CaffeNet's 61 M again takes seconds)."""
    draw = np.random.default_rng(seed)
    for layer in net.layers:
        blobs = layer.blobs
        if layer.param.type == "BatchNorm":
            blobs[0].data[...] = draw.standard_normal(blobs[0].shape) * 0.5
            blobs[1].data[...] = draw.uniform(0.5, 1.5, blobs[1].shape)
            blobs[2].data[...] = draw.uniform(0.5, 2.0)
            continue
        for blob in blobs:
            if np.any(blob.data):
                continue
            fan_in = max(blob.count() // max(blob.shape[0], 1), 1) if blob.shape else 1
            blob.data[...] = draw.standard_normal(blob.shape) / np.sqrt(fan_in)
    return net
