"""New Net for This Dataset: the starting net for each kind of data set builds on it and ends in
one score per class; the solver parses and tests over the validation split."""

from __future__ import annotations

import numpy as np
import pytest
from google.protobuf import text_format
from PIL import Image

import main
from engine.data.starter_nets import choose, starter_net
from engine.net import Net
from proto import caffe_pb2


@pytest.mark.parametrize(
    "size, gray, kind, output",
    [((28, 28), True, "lenet", "ip2"), ((32, 32), False, "cifar10_quick", "ip2"),
     ((70, 90), False, "alexnet", "fc8"), ((4, 4), True, "mlp", "ip2")],
)  # fmt: skip
def test_the_starting_net_fits_the_data_set(tmp_path, size, gray, kind, output):
    rng = np.random.default_rng(0)
    for name in ("a", "b", "c", "d"):
        (tmp_path / "pics" / name).mkdir(parents=True)
        for i in range(4):
            Image.fromarray(rng.integers(0, 256, (*size, 3), dtype=np.uint8)).save(
                tmp_path / "pics" / name / f"{i}.png"
            )
    args = ["dataset", str(tmp_path / "pics"), str(tmp_path / "ds"), "--val", "50", "--quiet"]
    assert main.main(args + (["--gray"] if gray else [])) == 0
    channels = 1 if gray else 3
    assert choose(channels, *size) == kind
    net_text, solver_text = starter_net(tmp_path / "ds", channels, size[0], size[1], classes=4)
    solver = text_format.Parse(solver_text, caffe_pb2.SolverParameter())
    assert solver.test_iter == [1]  # 8 validation images: one batch
    param = text_format.Parse(net_text, caffe_pb2.NetParameter())
    net = Net(param, phase=caffe_pb2.TEST, xp=np)
    try:
        net.forward()
        scores = net.blob_by_name(output).data
        assert scores.shape[1] == 4 and np.isfinite(scores).all()
    finally:
        net.close()
