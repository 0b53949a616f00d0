"""Curve buffers, the debiased moving average, the CSV export and the weight mosaic."""

from __future__ import annotations

import csv

import numpy as np
import pytest

from app.training.export import write_csv
from app.training.job import TrainingJob
from app.training.ranges import nice_ceiling, nice_number, round_range
from app.training.run import Run
from app.training.series import Series, Smoother
from app.training.weights_view import mosaic, symmetric_level
from proto import caffe_pb2


def test_series_grows_past_its_capacity_and_keeps_every_row():
    s = Series(("iter", "loss"), capacity=16)
    for start in range(0, 100, 7):
        s.extend([(i, 10.0 - i) for i in range(start, min(start + 7, 100))])
    assert len(s) == 100
    np.testing.assert_array_equal(s.column("iter"), np.arange(100))
    np.testing.assert_array_equal(s.column("loss"), 10.0 - np.arange(100))
    assert s.last("loss") == -89.0


def test_series_columns_are_views_not_copies():
    s = Series(("a",), capacity=64)
    s.extend([[1.0], [2.0]])
    view = s.column("a")
    assert np.shares_memory(view, s._data)
    assert len(view) == 2


def test_smoother_is_debiased_and_matches_the_closed_form():
    xs = np.array([4.0, 2.0, 6.0, 1.0, 3.0])
    w = 0.8
    out = Smoother(w).update(xs)
    assert out[0] == pytest.approx(4.0)  # no pull towards zero at the start
    expected = []
    biased = 0.0
    for t, x in enumerate(xs, start=1):
        biased = w * biased + (1 - w) * x
        expected.append(biased / (1 - w**t))
    np.testing.assert_allclose(out, expected)


def test_smoother_is_incremental_and_recomputes_on_a_new_weight():
    xs = np.random.default_rng(0).random(300)
    smoother = Smoother(0.9)
    smoother.update(xs[:100])
    incremental = smoother.update(xs).copy()
    np.testing.assert_allclose(incremental, Smoother(0.9).update(xs))
    smoother.set_weight(0.0)
    np.testing.assert_allclose(smoother.update(xs), xs)  # weight 0: no smoothing at all


def test_smoother_skips_non_finite_points():
    out = Smoother(0.5).update(np.array([1.0, np.nan, 1.0]))
    np.testing.assert_allclose(out, [1.0, 1.0, 1.0])


def test_ranges_grow_in_round_steps():
    assert [nice_ceiling(v) for v in (3, 11, 16, 21, 250, 801, 9000)] == [10, 15, 20, 30, 300, 1000, 10000]
    assert nice_number(0.0098) == pytest.approx(0.01) and nice_number(2.31) == pytest.approx(3)
    assert round_range(0.12, 2.31) == (0.0, pytest.approx(3.0))
    assert round_range(-0.4, 0.9) == (pytest.approx(-0.4), pytest.approx(1.0))


def _run(number: int) -> Run:
    job = TrainingJob(caffe_pb2.SolverParameter(max_iter=4), "/tmp", "cpu", "", "")
    run = Run(number, job)
    run.add_points(np.array([(i, 0.1 * i, 2.0 - 0.5 * i, 0.01) for i in range(4)]))
    run.add_test(3, 0.3, 0, {"accuracy": 0.75, "loss": 0.5})
    return run


def test_csv_holds_every_curve_of_every_run(tmp_path):
    path = tmp_path / "curves.csv"
    rows = write_csv(path, [_run(1), _run(2)], smoothing=0.0)
    with open(path, newline="") as f:
        table = list(csv.DictReader(f))
    assert rows == len(table) == 2 * (4 * 3 + 2)
    first = [r for r in table if r["run"] == "Run 1" and r["series"] == "train loss"]
    assert [float(r["value"]) for r in first] == [2.0, 1.5, 1.0, 0.5]
    smoothed = [r for r in table if r["run"] == "Run 2" and r["series"] == "train loss (smoothed)"]
    assert [float(r["value"]) for r in smoothed] == [2.0, 1.5, 1.0, 0.5]  # weight 0
    test = [r for r in table if r["series"] == "test accuracy"]
    assert [(r["run"], r["iteration"], float(r["value"])) for r in test] == [
        ("Run 1", "3", 0.75),
        ("Run 2", "3", 0.75),
    ]


def test_mosaic_tiles_filters_with_gaps():
    w = np.arange(4 * 1 * 2 * 2, dtype=np.float32).reshape(4, 1, 2, 2)
    picture = mosaic(w)
    assert picture.shape == (2 * 3 - 1, 2 * 3 - 1)  # 2 x 2 tiles of 2 x 2, one-pixel gaps
    np.testing.assert_array_equal(picture[:2, :2], w[0, 0])
    np.testing.assert_array_equal(picture[3:, 3:], w[3, 0])
    assert np.isnan(picture[2]).all()
    several = mosaic(np.ones((3, 5, 3, 3)))
    assert several.shape == (3 * 4 - 1, 5 * 4 - 1)  # a row per filter, a column per channel
    assert mosaic(np.ones((7, 9))).shape == (7, 9)


def test_colour_level_ignores_outliers_and_nan():
    values = np.concatenate([np.linspace(-1, 1, 1000), [50.0, np.nan]])
    assert 0.9 < symmetric_level(values) < 2
    assert symmetric_level(np.zeros(5)) == 1.0
