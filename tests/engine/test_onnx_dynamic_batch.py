"""#32 case 9: ``--dynamic-batch`` exports only what a free batch can express. Reduction MEAN over
axis 0 returned 2.5 for a batch of five ones (the export-time batch of 2 baked into its divisor, the
engine: 1.0); InnerProduct ``axis: 0`` exported, then failed in onnxruntime; a learned Scale or Bias
laid from axis 0 has one entry per example of the export-time batch. Each is refused in one line
naming the layer; their neighbours that a free batch does express run in onnxruntime at batch 5 as
the engine runs them."""

from __future__ import annotations

import pytest
from onnx_support import assert_agree, build, compare

import main as barista

G = 'weight_filler { type: "gaussian" std: 0.3 } bias_filler { type: "gaussian" std: 0.3 }'


def one(name: str, kind: str, params: str, bottoms: str = 'bottom: "x"') -> str:
    return f'layer {{ name: "{name}" type: "{kind}" {bottoms} top: "y" {params} }}'


def net(layer: str, *shapes: tuple[int, ...]) -> str:
    names = ("x", "x2")
    tops = " ".join(f'top: "{n}"' for n in names[: len(shapes)])
    dims = " ".join("shape { " + " ".join(f"dim: {d}" for d in s) + " }" for s in shapes)
    return f'layer {{ name: "in" type: "Input" {tops} input_param {{ {dims} }} }}\n{layer}'


REFUSED = [
    (
        one("mean", "Reduction", "reduction_param { operation: MEAN axis: 0 }"),
        "layer 'mean' (Reduction): its MEAN over the batch axis divides by the batch the net was exported at",
    ),
    (
        one("ip", "InnerProduct", f"inner_product_param {{ num_output: 3 axis: 0 {G} }}"),
        "layer 'ip' (InnerProduct): its weights span the batch axis (axis: 0)",
    ),
    (
        one("s", "Scale", 'scale_param { axis: -2 filler { type: "gaussian" } }'),
        "layer 's' (Scale): its learned scale spans the batch axis (axis: -2)",
    ),
    (
        one("b", "Bias", 'bias_param { axis: 0 filler { type: "gaussian" } }'),
        "layer 'b' (Bias): its learned bias spans the batch axis (axis: 0)",
    ),
]


@pytest.mark.parametrize(("layer", "words"), REFUSED, ids=["mean", "ip", "scale", "bias"])
def test_what_a_free_batch_cannot_express_is_refused_in_one_line(capsys, tmp_path, layer, words):
    path, out = tmp_path / "net.prototxt", tmp_path / "net.onnx"
    path.write_text(net(layer, (2, 3)))
    assert barista.main(["export", str(path), str(out), "--dynamic-batch"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"error: {words}; export without --dynamic-batch"]
    assert not out.exists()
    assert barista.main(["export", str(path), str(out)]) == 0  # at its own batch it exports
    capsys.readouterr()


ALLOWED = [
    (one("r", "Reduction", "reduction_param { operation: SUM axis: 0 }"), [(2, 3)]),
    (one("r", "Reduction", "reduction_param { operation: MEAN axis: 1 }"), [(2, 3, 4)]),
    (one("ip", "InnerProduct", f"inner_product_param {{ num_output: 3 axis: 2 {G} }}"), [(2, 3, 4)]),
    (one("s", "Scale", "scale_param { axis: 0 }", 'bottom: "x" bottom: "x2"'), [(2, 3), (2,)]),
    (one("s", "Scale", 'scale_param { axis: 1 filler { type: "gaussian" } }'), [(2, 3)]),
]


@pytest.mark.parametrize(
    ("layer", "shapes"), ALLOWED, ids=["sum0", "mean1", "ip2", "scale-bottom0", "scale1"]
)
def test_what_it_can_express_runs_at_another_batch(layer, shapes):
    results = compare(build(net(layer, *shapes)), dynamic_batch=True, batch=5)
    assert results["y"][0].shape[:1] in ((), (5,))  # a free batch (or a scalar, reduced over it)
    assert_agree(results)
