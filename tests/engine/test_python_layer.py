"""The Python layer: user classes derived from ``caffe.Layer`` driven by nets, pycaffe's and the engine's.

The layers below live in this module and the nets name it by ``__name__`` (as pycaffe's own tests
name theirs), so the import goes through ``python_param.module`` exactly as a user's would.
"""

from __future__ import annotations

import sys
import types

import numpy as np
import pytest
from google.protobuf import text_format

import engine as caffe
from engine import solvers
from engine.errors import LayerSetupError
from engine.net import Net as CoreNet
from engine.pycaffe import host_copies as host_copies_module
from engine.testing import GradientChecker, blobs, host, make_layer, random_blob
from proto import caffe_pb2

MODULE = __name__


class TimesTen(caffe.Layer):
    def setup(self, bottom, top):
        self.calls = ["setup"]

    def reshape(self, bottom, top):
        top[0].reshape(*bottom[0].data.shape)

    def forward(self, bottom, top):
        top[0].data[...] = 10 * bottom[0].data

    def backward(self, top, propagate_down, bottom):
        if propagate_down[0]:
            bottom[0].diff[...] = 10 * top[0].diff


class ParamStrScale(caffe.Layer):
    """Multiplies by the number its param_str spells."""

    def setup(self, bottom, top):
        self.factor = float(self.param_str)

    def reshape(self, bottom, top):
        top[0].reshape(*bottom[0].shape)

    def forward(self, bottom, top):
        top[0].data[...] = self.factor * bottom[0].data

    def backward(self, top, propagate_down, bottom):
        bottom[0].diff[...] = self.factor * top[0].diff


class PhaseEcho(caffe.Layer):
    """No bottom; a scalar top holding the phase; remembers what setup saw."""

    def setup(self, bottom, top):
        self.seen_in_setup = (self.phase, self.param_str, len(bottom), len(top))

    def reshape(self, bottom, top):
        top[0].reshape()

    def forward(self, bottom, top):
        top[0].data[()] = self.phase


class LearnedScale(caffe.Layer):
    """top = w * bottom with one learnable w (starting at float(param_str))."""

    def setup(self, bottom, top):
        if len(self.blobs) == 0:
            self.blobs.add_blob(1)
            self.blobs[0].data[...] = float(self.param_str or 1)

    def reshape(self, bottom, top):
        top[0].reshape(*bottom[0].shape)

    def forward(self, bottom, top):
        top[0].data[...] = self.blobs[0].data[0] * bottom[0].data

    def backward(self, top, propagate_down, bottom):
        if self.param_propagate_down[0]:
            self.blobs[0].diff[0] += (top[0].diff * bottom[0].data).sum()
        if propagate_down[0]:
            bottom[0].diff[...] = self.blobs[0].data[0] * top[0].diff


class HalfSquaredError(caffe.Layer):
    """A loss written in Python: sum((a - b)^2) / (2 num); the top's diff brings its loss weight."""

    def reshape(self, bottom, top):
        top[0].reshape()

    def forward(self, bottom, top):
        self.delta = bottom[0].data - bottom[1].data
        top[0].data[()] = (self.delta**2).sum() / (2 * bottom[0].shape[0])

    def backward(self, top, propagate_down, bottom):
        for i, sign in ((0, 1.0), (1, -1.0)):
            if propagate_down[i]:
                bottom[i].diff[...] = sign * top[0].diff[()] * self.delta / bottom[0].shape[0]


class Identity(caffe.Layer):
    """Defines no backward: the base class's default applies."""

    def reshape(self, bottom, top):
        top[0].reshape(*bottom[0].shape)

    def forward(self, bottom, top):
        top[0].data[...] = bottom[0].data


class SetupFails(caffe.Layer):
    def setup(self, bottom, top):
        raise RuntimeError("boom in setup")


class ForwardFails(Identity):
    def forward(self, bottom, top):
        raise KeyError("no such entry")


class NeedsTwoArguments(Exception):
    def __init__(self, code, detail):
        super().__init__(code, detail)


class ForwardFailsOddly(Identity):
    def forward(self, bottom, top):
        raise NeedsTwoArguments(7, "odd")


class NotALayer:
    pass


def python_layer(name: str, cls: str, bottom: list[str], top: list[str], extra: str = "") -> str:
    wiring = " ".join([f"bottom: '{b}'" for b in bottom] + [f"top: '{t}'" for t in top])
    spec = f"python_param {{ module: '{MODULE}' layer: '{cls}' {extra} }}"
    return f"layer {{ name: '{name}' type: 'Python' {wiring} {spec} }}"


INPUT = "layer { name: 'input' type: 'Input' top: 'data' input_param { shape { dim: 2 dim: 3 dim: 4 } } }\n"
CHAIN = (
    "name: 'chain' force_backward: true\n"
    + INPUT
    + "\n".join(
        python_layer(name, "TimesTen", [bottom], [name])
        for name, bottom in (("one", "data"), ("two", "one"), ("three", "two"))
    )
)


def net_param(text: str) -> caffe_pb2.NetParameter:
    return text_format.Parse(text, caffe_pb2.NetParameter())


@pytest.fixture
def write(tmp_path):
    def write(text: str, name: str = "net.prototxt") -> str:
        path = tmp_path / name
        path.write_text(text)
        return str(path)

    return write


@pytest.fixture
def host_copies(monkeypatch):
    """pycaffe treats every array as device memory: host copies are made and synced as on a GPU."""
    fake = types.SimpleNamespace(
        is_gpu_array=lambda array: isinstance(array, np.ndarray),
        to_host=lambda array: np.array(array, copy=True),
    )
    monkeypatch.setattr(host_copies_module, "backend", fake)


# --- pycaffe: the chain of three x10 layers --------------------------------------------------------
def check_chain(net: caffe.Net) -> None:
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4) - 7
    net.blobs["data"].data[...] = x
    net.forward()
    np.testing.assert_array_equal(net.blobs["one"].data, 10 * x)
    np.testing.assert_array_equal(net.blobs["three"].data, 1000 * x)
    g = np.linspace(-1, 1, 24, dtype=np.float32).reshape(2, 3, 4)
    net.blobs["three"].diff[...] = g
    net.backward()
    np.testing.assert_allclose(net.blobs["data"].diff, 1000 * g, rtol=1e-6)


def test_chain_of_python_layers_forward_and_backward(write):
    net = caffe.Net(write(CHAIN), caffe.TRAIN)
    check_chain(net)


def test_chain_through_host_copies_as_on_a_gpu(write, host_copies):
    net = caffe.Net(write(CHAIN), caffe.TRAIN)
    assert net.blobs["data"].data is not net.core.blob_by_name("data").data  # the copies are in play
    check_chain(net)
    check_chain(net)  # arrays handed out before stay in step


def test_tops_take_the_shapes_the_user_reshape_gives(write):
    net = caffe.Net(write(CHAIN), caffe.TEST)
    net.blobs["data"].reshape(5, 1, 2, 3)
    net.forward()
    assert all(blob.data.shape == (5, 1, 2, 3) for blob in net.blobs.values())
    net.blobs["data"].reshape(7)
    net.reshape()
    assert net.blobs["three"].shape == (7,)


def test_net_layers_are_the_users_objects_and_views_of_builtins(write):
    net = caffe.Net(write(CHAIN), caffe.TRAIN)
    layers = net.layers
    assert [layer.type for layer in layers] == ["Input", "Python", "Python", "Python"]
    assert all(isinstance(layer, caffe.Layer) for layer in layers)
    assert isinstance(layers[1], TimesTen) and layers[1].calls == ["setup"]
    assert layers[1] is not layers[2] and net.layer_dict["two"] is layers[2]
    assert net.layers[3] is layers[3]  # the same object on every access
    assert len(layers[0].blobs) == 0 and layers[0].phase == caffe.TRAIN
    assert list(net._layer_names) == ["input", "one", "two", "three"]
    assert list(net.params) == []  # no layer of this net learns


# --- param_str and phase -------------------------------------------------------------------------
def test_param_str_configures_each_layer(write):
    text = (
        "name: 'p' force_backward: true\n"
        + INPUT
        + python_layer("mul3", "ParamStrScale", ["data"], ["a"], "param_str: '3'")
        + python_layer("half", "ParamStrScale", ["a"], ["b"], "param_str: '-0.5'")
    )
    net = caffe.Net(write(text), caffe.TRAIN)
    assert net.layer_dict["mul3"].param_str == "3" and net.layer_dict["half"].factor == -0.5
    x = np.random.default_rng(0).normal(size=(2, 3, 4)).astype(np.float32)
    out = net.forward(data=x)
    np.testing.assert_allclose(out["b"], -1.5 * x, rtol=1e-6)
    diffs = net.backward(b=np.ones((2, 3, 4), np.float32))
    np.testing.assert_allclose(diffs["data"], np.full((2, 3, 4), -1.5), rtol=1e-6)


def test_bad_param_str_is_the_users_error_naming_the_layer(write):
    text = "name: 'p'\n" + INPUT + python_layer("mul", "ParamStrScale", ["data"], ["a"], "param_str: 'ten'")
    with pytest.raises(ValueError, match="layer 'mul' \\(Python\\).*could not convert string to float"):
        caffe.Net(write(text), caffe.TRAIN)


@pytest.mark.parametrize("phase", [caffe.TRAIN, caffe.TEST])
def test_phase_and_param_str_are_set_before_setup(write, phase):
    text = "name: 'ph'\n" + python_layer("echo", "PhaseEcho", [], ["phase"], "param_str: 'abc'")
    net = caffe.Net(write(text), phase)
    layer = net.layers[0]
    assert layer.seen_in_setup == (phase, "abc", 0, 1)
    assert layer.phase == phase and layer.type == "Python"
    assert net.forward()["phase"] == phase
    assert net.blobs["phase"].shape == ()


# --- learnable blobs ---------------------------------------------------------------------------------
def learn_net(param_spec: str = "") -> str:
    """Input x, t -> LearnedScale (w = 2, with ``param_spec``) -> EuclideanLoss against t."""
    scale = python_layer("scale", "LearnedScale", ["x"], ["y"], "param_str: '2'")
    return (
        "name: 'learn'\n"
        "layer { name: 'input' type: 'Input' top: 'x' top: 't'\n"
        "        input_param { shape { dim: 4 dim: 3 } shape { dim: 4 dim: 3 } } }\n"
        + scale.replace("python_param", param_spec + "python_param")
        + "\nlayer { name: 'loss' type: 'EuclideanLoss' bottom: 'y' bottom: 't' top: 'loss' }\n"
    )


SOLVER = "net: 'learn.prototxt' base_lr: 0.1 lr_policy: 'fixed' max_iter: 10 display: 0 random_seed: 5\n"

X = np.arange(12, dtype=np.float32).reshape(4, 3) / 10
T = np.linspace(-1, 2, 12, dtype=np.float32).reshape(4, 3)


def sgd_step(w: float) -> float:
    """One plain SGD step (no momentum, no decay) on w for E = sum((w x - t)^2) / (2 num)."""
    x, t = X.astype(np.float64), T.astype(np.float64)
    return w - 0.1 * float(((w * x - t) * x).sum() / len(x))


def test_learnable_blob_is_a_net_param_and_the_solver_updates_it(write, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write(learn_net(), "learn.prototxt")
    solver = caffe.SGDSolver(write(SOLVER, "solver.prototxt"))
    net = solver.net
    assert list(net.params) == ["scale"] and len(net.params["scale"]) == 1
    assert net.params["scale"] is net.layer_dict["scale"].blobs and net.params["scale"][0].data[0] == 2
    assert net.layer_dict["scale"].param_propagate_down == [True]
    net.blobs["x"].data[...] = X
    net.blobs["t"].data[...] = T
    solver.step(1)
    w1 = sgd_step(2.0)
    np.testing.assert_allclose(net.params["scale"][0].data[0], w1, rtol=1e-5)
    solver.step(1)
    np.testing.assert_allclose(net.params["scale"][0].data[0], sgd_step(w1), rtol=1e-5)


def test_solver_updates_the_blob_through_host_copies(write, tmp_path, monkeypatch, host_copies):
    monkeypatch.chdir(tmp_path)
    write(learn_net(), "learn.prototxt")
    solver = caffe.SGDSolver(write(SOLVER, "solver.prototxt"))
    w = solver.net.params["scale"][0].data  # a host copy kept across steps
    solver.net.blobs["x"].data[...] = X
    solver.net.blobs["t"].data[...] = T
    w[0] = 1.5  # a script's write reaches the engine before the step
    solver.step(2)  # the second forward sees the first update
    np.testing.assert_allclose(w[0], sgd_step(sgd_step(1.5)), rtol=1e-5)


def test_zero_lr_mult_freezes_the_blob(write, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write(learn_net("param { lr_mult: 0 } "), "learn.prototxt")
    solver = caffe.SGDSolver(write(SOLVER, "solver.prototxt"))
    layer = solver.net.layer_dict["scale"]
    assert layer.param_propagate_down == [False]
    solver.net.blobs["x"].data[...] = X
    solver.step(2)
    assert layer.blobs[0].data[0] == 2 and layer.blobs[0].diff[0] == 0


def test_blob_surgery_save_load_and_sharing(write, tmp_path):
    path = write(learn_net())
    net = caffe.Net(path, caffe.TRAIN)
    layer = net.layers[list(net._layer_names).index("scale")]
    layer.blobs[0].data[0] = 4
    weights = str(tmp_path / "w.caffemodel")
    net.save(weights)
    layer.blobs[0].data[0] = -1
    net.copy_from(weights)
    assert layer.blobs[0].data[0] == 4
    other = caffe.Net(path, caffe.TEST, weights=weights)
    assert other.params["scale"][0].data[0] == 4
    shared = caffe.Net(path, caffe.TRAIN)
    shared.share_with(net)
    layer.blobs[0].data[0] = 7
    assert shared.params["scale"][0].data[0] == 7


# --- losses, defaults, errors ------------------------------------------------------------------------
def test_python_loss_layer_with_loss_weight(write):
    text = (
        "name: 'l'\n"
        "layer { name: 'input' type: 'Input' top: 'a' top: 'b'\n"
        "        input_param { shape { dim: 4 dim: 3 } shape { dim: 4 dim: 3 } } }\n"
        + python_layer("loss", "HalfSquaredError", ["a", "b"], ["loss"]).replace(
            "python_param", "loss_weight: 2 python_param"
        )
    )
    param = net_param(text)
    param.force_backward = True
    net = CoreNet(param)
    net.blob_by_name("a").data[...] = X
    net.blob_by_name("b").data[...] = T
    loss = net.forward_from_to()
    expected = ((X.astype(np.float64) - T) ** 2).sum() / (2 * 4)
    assert loss == pytest.approx(2 * expected, rel=1e-5)
    assert net.blob_loss_weights[net.blob_names.index("loss")] == 2
    net.backward()
    np.testing.assert_allclose(net.blob_by_name("a").diff, 2 * (X - T) / 4, rtol=1e-5)
    np.testing.assert_allclose(net.blob_by_name("b").diff, -2 * (X - T) / 4, rtol=1e-5)


def test_default_backward_refuses_only_a_wanted_gradient():
    layer = make_layer(f"name: 'id' type: 'Python' python_param {{ module: '{MODULE}' layer: 'Identity' }}")
    bottom, top = [random_blob((2, 3))], blobs(1)
    layer.setup(bottom, top)
    layer.forward(bottom, top)
    layer.backward(top, [False], bottom)  # nothing wanted: nothing done
    with pytest.raises(NotImplementedError, match="layer 'id' \\(Python\\).*Identity must define backward"):
        layer.backward(top, [True], bottom)


@pytest.mark.parametrize(
    ("module", "cls", "kind", "words"),
    [
        ("no_such_module_for_pylayer", "X", ImportError, "cannot import module 'no_such_module_for_pylayer'"),
        (MODULE, "Missing", AttributeError, f"module '{MODULE}' .* has no class 'Missing'"),
        (MODULE, "NotALayer", TypeError, f"'{MODULE}.NotALayer' is not a class derived from caffe.Layer"),
        ("", "X", ImportError, "python_param.module is empty"),
    ],
)
def test_missing_module_or_class_is_a_clear_error(module, cls, kind, words):
    param = net_param(
        "name: 'm'\n" + INPUT + f"layer {{ name: 'py' type: 'Python' bottom: 'data' top: 'out' "
        f"python_param {{ module: '{module}' layer: '{cls}' }} }}"
    )
    with pytest.raises(kind, match=f"layer 'py' \\(Python\\): {words}") as caught:
        CoreNet(param)
    assert isinstance(caught.value, LayerSetupError)  # the app's handlers catch it as any net error


def test_user_exceptions_keep_their_type_and_name_the_layer(write):
    text = "name: 'e'\n" + INPUT + python_layer("bad", "SetupFails", ["data"], ["out"])
    with pytest.raises(RuntimeError, match=f"layer 'bad' \\(Python\\): setup\\(\\) of {MODULE}.SetupFails"):
        caffe.Net(write(text), caffe.TEST)
    text = "name: 'e'\n" + INPUT + python_layer("bad", "ForwardFails", ["data"], ["out"])
    net = caffe.Net(write(text), caffe.TEST)
    with pytest.raises(KeyError, match="forward\\(\\) of .*ForwardFails raised KeyError: 'no such entry'"):
        net.forward()


def test_an_exception_type_that_cannot_carry_the_message_is_chained(write):
    text = "name: 'e'\n" + INPUT + python_layer("odd", "ForwardFailsOddly", ["data"], ["out"])
    net = caffe.Net(write(text), caffe.TEST)
    with pytest.raises(
        LayerSetupError, match="layer 'odd' \\(Python\\): forward\\(\\) .* NeedsTwoArguments"
    ) as caught:
        net.forward()
    assert isinstance(caught.value.__cause__, NeedsTwoArguments) and caught.value.__cause__.args == (7, "odd")


def test_module_is_imported_from_sys_path(tmp_path, monkeypatch):
    name = "pylayer_plugin_for_test"
    (tmp_path / f"{name}.py").write_text(
        "import engine as caffe\n\n"
        "class Negate(caffe.Layer):\n"
        "    def reshape(self, bottom, top):\n"
        "        top[0].reshape(*bottom[0].shape)\n\n"
        "    def forward(self, bottom, top):\n"
        "        top[0].data[...] = -bottom[0].data\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        param = net_param(
            INPUT + f"layer {{ name: 'neg' type: 'Python' bottom: 'data' top: 'out' "
            f"python_param {{ module: '{name}' layer: 'Negate' }} }}"
        )
        net = CoreNet(param)
        net.blob_by_name("data").data[...] = 3
        net.forward_from_to()
        np.testing.assert_array_equal(net.blob_by_name("out").data, -3)
    finally:
        sys.modules.pop(name, None)


# --- the engine's own Net and layer protocol (what the app builds) -------------------------------------
def test_core_net_runs_python_layers(xp):
    net = CoreNet(net_param(CHAIN), xp=xp)
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    net.blob_by_name("data").data[...] = xp.asarray(x)
    net.forward_from_to()
    np.testing.assert_array_equal(host(net.blob_by_name("three").data), 1000 * x)
    net.blob_by_name("three").diff[...] = 1
    net.backward()
    np.testing.assert_array_equal(host(net.blob_by_name("data").diff), np.full((2, 3, 4), 1000))


def test_core_solver_trains_a_python_layers_blob(xp):
    param = caffe_pb2.SolverParameter(base_lr=0.1, lr_policy="fixed", max_iter=3, display=0)
    param.net_param.CopyFrom(net_param(learn_net()))
    solver = solvers.create_solver(param, xp=xp)
    solver.net.blob_by_name("x").data[...] = xp.asarray(X)
    solver.net.blob_by_name("t").data[...] = xp.asarray(T)
    solver.step(1)
    w = host(solver.net.layer_by_name("scale").blobs[0].data)
    np.testing.assert_allclose(w, [sgd_step(2.0)], rtol=1e-5)


def test_gradient_check_through_the_python_layer(xp):
    layer = make_layer(
        f"name: 'ws' type: 'Python' "
        f"python_param {{ module: '{MODULE}' layer: 'LearnedScale' param_str: '1.5' }}",
        xp=xp,
    )
    GradientChecker().check(layer, [random_blob((2, 3), xp)], blobs(1, xp))
    assert layer.blobs[0].dtype == np.float64


def test_layer_made_by_hand_has_its_own_blobs():
    param = caffe_pb2.LayerParameter(name="solo", type="Python", phase=caffe_pb2.TEST)
    param.python_param.param_str = "7"
    layer = LearnedScale(param)
    assert layer.param_str == "7" and layer.phase == caffe.TEST and layer.type == "Python"
    layer.blobs.add_blob(2, 3)
    layer.blobs.add_blob(4)
    assert len(layer.blobs) == 2 and [b.shape for b in layer.blobs] == [(2, 3), (4,)]
    assert layer.blobs[-1].count == 4 and layer.blobs[0].num == 2 and layer.blobs[0].channels == 3
    assert [b.shape for b in layer.blobs[1:]] == [(4,)]
    layer.blobs[0].data[...] = 5
    assert (layer.blobs[0].data == 5).all() and not layer.blobs[0].diff.any()
