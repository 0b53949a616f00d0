"""#32 case 6: the filler previews and "How the net starts" count a net's values from its shapes
first and refuse, in words, a net past their memory budget instead of allocating it (a 500M-value
blob took gigabytes before anything was said). The budget is injected small; the nets stay tiny."""

from __future__ import annotations

import tracemalloc

import pytest

from app.fillers import budget
from app.fillers.draws import initialise
from app.fillers.netstart import probe
from proto import caffe_pb2
from proto.textio import parse_net

NET = """name: "wide"
layer { name: "x" type: "Input" top: "x" input_param { shape { dim: 4 dim: 300 } } }
layer { name: "ip" type: "InnerProduct" bottom: "x" top: "y"
  inner_product_param { num_output: 500 weight_filler { type: "xavier" } } }
"""
PARAMS = 300 * 500 + 500
BLOBS = 4 * 300 + 4 * 500


def test_values_are_counted_from_shapes():
    assert budget.values(parse_net(NET), caffe_pb2.TRAIN) == (PARAMS, BLOBS)


def test_the_draws_are_refused_past_the_budget_with_nothing_drawn(monkeypatch):
    monkeypatch.setattr(budget, "BUDGET", 4 * PARAMS - 1)  # one byte short of the weights
    tracemalloc.start()
    try:
        result = initialise(parse_net(NET), caffe_pb2.TRAIN, seed=1)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert result.blobs == {}
    assert result.error == (
        f"Drawing the parameters up to this layer would take {PARAMS:,} values (1 MiB), past the "
        "preview's memory budget of 1 MiB; `main.py fill` draws them without the window"
    )
    assert peak < 4 * PARAMS  # the weights were never allocated
    monkeypatch.setattr(budget, "BUDGET", 4 * PARAMS)
    drawn = initialise(parse_net(NET), caffe_pb2.TRAIN, seed=1)
    assert drawn.error is None and drawn.shapes(1) == [(500, 300), (500,)]


def test_how_the_net_starts_is_refused_past_the_budget(monkeypatch):
    need = 2 * (PARAMS + BLOBS) * 4  # data and gradient of every weight and blob
    monkeypatch.setattr(budget, "BUDGET", need - 1)
    result = probe(parse_net(NET), caffe_pb2.TRAIN, seed=1)
    assert result.names == [] and result.error is not None
    assert result.error.startswith(f"One batch forward and backward would take {need // 4:,} values")
    monkeypatch.setattr(budget, "BUDGET", need)
    ran = probe(parse_net(NET), caffe_pb2.TRAIN, seed=1)
    assert ran.error is None and ran.names == ["x", "ip"]


@pytest.mark.parametrize(("size", "words"), [(3 * 2**20, "3 MiB"), (5 * 2**30, "5.0 GiB")])
def test_sizes_read_in_words(size, words):
    assert budget.gib(size) == words
