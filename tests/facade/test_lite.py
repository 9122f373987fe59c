"""rknnx.lite.RKNNLite, the RKNNLite 2.5.0 API on rknnx.Model: the same numbers as the
facade on every sample model and general-API personality, every argument as RKNNLite
documents it, its error convention (log an E line, return -1 / None) and raise_errors=True,
and no garbage per call."""

from __future__ import annotations

import gc
import inspect

import numpy as np
import pytest

import rknnx
from rknnx import lowlevel as ll
from rknnx.emulator import reference
from rknnx.lite import RKNNLite

from helpers import (GENERAL_PLATFORMS, expected_outputs, live, model_bytes, rss_kib, to_model,
                     user_inputs)

SAMPLES = ("tiny_relu", "tiny_int8_add", "multi_io", "classifier", "detector_random", "dynamic")


class Lites:
    """Makes RKNNLite objects on sample models (written to files) and releases them."""

    def __init__(self, ctl, tmp_path):
        self.ctl = ctl
        self.tmp_path = tmp_path
        self.made = []

    def path(self, name, platform="RK3588"):
        p = self.tmp_path / f"{name}-{platform}.rknn"
        p.write_bytes(model_bytes(name, platform))
        return str(p)

    def new(self, *args, **kw):
        lite = RKNNLite(*args, **kw)
        self.made.append(lite)
        return lite

    def open(self, name, platform="RK3588", **init):
        self.ctl.set_platform(platform)
        lite = self.new()
        assert lite.load_rknn(self.path(name, platform)) == 0
        assert lite.init_runtime(**init) == 0
        return lite

    def release_all(self):
        for lite in self.made:
            lite.release()
        self.made.clear()


@pytest.fixture
def lites(emu, tmp_path):
    """RKNNLite objects on sample models; released at teardown, with the emulator's live
    counters back at their baseline."""
    before = live(emu)
    made = Lites(emu, tmp_path)
    yield made
    made.release_all()
    gc.collect()
    assert live(emu) == before, "emulator live counters changed: leaked contexts/outputs"


def inputs_for(model, name, rng):
    if name == "dynamic":
        (shape,) = model.shape_sets[1]
        return [rng.integers(0, 256, shape, dtype=np.uint8)]
    return user_inputs(model, rng)


# ---- the same numbers as the facade ---------------------------------------------------------
@pytest.mark.parametrize("platform", GENERAL_PLATFORMS)
@pytest.mark.parametrize("name", SAMPLES)
def test_same_numbers_as_the_facade(lites, platform, name):
    lite = lites.open(name, platform)
    with rknnx.Model(model_bytes(name, platform)) as m:
        xs = inputs_for(m, name, np.random.default_rng(11))
        got = lite.inference(inputs=xs)
        want = m.run(*xs)
    assert isinstance(got, list) and len(got) == len(want) == len(m.outputs)
    for g, w in zip(got, want):
        assert g.dtype == np.float32 and g.shape == w.shape
        np.testing.assert_array_equal(g, w)
    ref = expected_outputs(model_bytes(name, platform), xs, True,
                           shape_set=1 if name == "dynamic" else 0)
    for g, r in zip(got, ref):
        np.testing.assert_allclose(g, r, rtol=1e-3, atol=1e-3)


def test_outputs_are_float32_for_an_int8_model(lites):
    lite = lites.open("tiny_int8_add")
    xs = [np.zeros((1, 4, 8, 8), np.int8)] * 2
    (out,) = lite.inference(xs)
    assert out.dtype == np.float32 and out.shape == (1, 8, 4, 8)


# ---- each argument -----------------------------------------------------------------------
def test_nchw_data_format(lites):
    lite = lites.open("classifier")
    x = np.random.default_rng(1).integers(0, 256, (1, 224, 224, 3), dtype=np.uint8)
    want = lite.inference([x])[0]
    nchw = np.ascontiguousarray(x.transpose(0, 3, 1, 2))
    np.testing.assert_array_equal(lite.inference([nchw], data_format="nchw")[0], want)
    np.testing.assert_array_equal(lite.inference([nchw], data_format=["nchw"])[0], want)
    np.testing.assert_array_equal(lite.inference([x], data_format="nhwc")[0], want)


def test_a_data_format_per_input(lites):
    lite = lites.open("tiny_int8_add")
    a, b = user_inputs(lite._model, np.random.default_rng(2))
    want = lite.inference([a, b])[0]
    b_nchw = np.ascontiguousarray(b.transpose(0, 3, 1, 2))
    got = lite.inference([a, b_nchw], data_format=["nhwc", "nchw"])[0]
    np.testing.assert_array_equal(got, want)


def test_data_type_does_not_change_the_result(lites):
    lite = lites.open("tiny_relu")
    x = np.array([[1.5, -2.0]], np.float32)
    np.testing.assert_array_equal(lite.inference([x], data_type="uint8")[0], [[1.5, 0.0]])
    np.testing.assert_array_equal(lite.inference([x.astype(np.float64)])[0], [[1.5, 0.0]])


@pytest.mark.parametrize("dtype", ["int16", "uint16", "int32", "uint32", "int64", "bool"])
def test_integer_and_bool_inputs_as_rknnlite_takes_them(lites, dtype):
    # RKNNLite 2.5.0 hands these to librknnrt with their own tensor type; here they become
    # float32 (the same values) unless the input has that type
    lite = lites.open("classifier")
    x = np.random.default_rng(8).integers(0, 2 if dtype == "bool" else 256, (1, 224, 224, 3))
    want = lite.inference([x.astype(np.float32)])[0]
    np.testing.assert_array_equal(lite.inference([x.astype(dtype)])[0], want)
    assert lite.inference([x.astype(np.uint64)]) is None


@pytest.mark.parametrize("data_format", [None, "nchw"])
def test_inputs_pass_through(lites, data_format):
    lite = lites.open("classifier")
    x = np.random.default_rng(3).integers(0, 256, (1, 224, 224, 3), dtype=np.uint8)
    want = lite.inference([x])[0]
    desc = reference.as_model(model_bytes("classifier"))
    q = np.ascontiguousarray(to_model(desc.tensors[desc.inputs[0]], x))
    if data_format == "nchw":
        q = np.ascontiguousarray(q.transpose(0, 3, 1, 2))
    got = lite.inference([q], data_format=data_format, inputs_pass_through=[1])[0]
    np.testing.assert_array_equal(got, want)
    # 0 is the usual conversion
    np.testing.assert_array_equal(lite.inference([x], inputs_pass_through=[0])[0], want)


def test_reuse_outputs_returns_the_same_arrays_overwritten(lites):
    lite = lites.open("multi_io")
    m_inputs = lite._model                       # the description, for the inputs
    rng = np.random.default_rng(4)
    xs1, xs2 = user_inputs(m_inputs, rng), user_inputs(m_inputs, rng)
    fresh1, fresh2 = lite.inference(xs1), lite.inference(xs2)
    assert fresh1[0] is not fresh2[0]
    r1 = lite.inference(xs1, reuse_outputs=True)
    r1_copy = [a.copy() for a in r1]
    r2 = lite.inference(xs2, reuse_outputs=True)
    assert all(a is b for a, b in zip(r1, r2))
    for got, want in zip(r2, fresh2):
        np.testing.assert_array_equal(got, want)
    for got, want in zip(r1_copy, fresh1):
        np.testing.assert_array_equal(got, want)
    assert not all(np.array_equal(a, b) for a, b in zip(r1_copy, fresh2))


def test_reuse_outputs_of_a_dynamic_model_follow_the_shape_set(lites):
    lite = lites.open("dynamic")
    sets = lite._model.shape_sets
    rng = np.random.default_rng(5)
    seen = {}
    for k in (0, 2, 0, 1, 2):
        (shape,) = sets[k]
        x = rng.integers(0, 256, shape, dtype=np.uint8)
        outs = lite.inference([x], reuse_outputs=True)
        ref = expected_outputs(model_bytes("dynamic"), [x], True, shape_set=k)
        for g, r in zip(outs, ref):
            assert g.shape == r.shape
            np.testing.assert_allclose(g, r, rtol=1e-3, atol=1e-3)
        if k in seen:
            assert all(a is b for a, b in zip(outs, seen[k]))
        seen[k] = outs


@pytest.mark.parametrize("platform", GENERAL_PLATFORMS)
def test_dynamic_shapes_are_set_from_the_input_shapes(lites, platform):
    lite = lites.open("dynamic", platform)
    rng = np.random.default_rng(6)
    for k in (2, 0, 1):
        (shape,) = lite._model.shape_sets[k]
        x = rng.integers(0, 256, shape, dtype=np.uint8)
        got = lite.inference([x])
        ref = expected_outputs(model_bytes("dynamic", platform), [x], True, shape_set=k)
        for g, r in zip(got, ref):
            assert g.shape == r.shape
            np.testing.assert_allclose(g, r, rtol=1e-3, atol=1e-3)
        nchw = np.ascontiguousarray(x.transpose(0, 3, 1, 2))
        np.testing.assert_array_equal(lite.inference([nchw], data_format="nchw")[0], got[0])


def test_get_frame_id(lites):
    # as RKNNLite 2.5.0: the outputs' frame id, then the id of the frame run (equal in sync)
    lite = lites.open("tiny_relu")
    x = np.ones((1, 2), np.float32)
    ids = []
    for _ in range(3):
        res = lite.inference([x], get_frame_id=True)
        assert len(res) == 3 and isinstance(res[0], np.ndarray)
        assert res[1] == res[2]
        ids.append(res[1])
    assert ids == [1, 2, 3]
    assert len(lite.inference([x])) == 1
    res = lite.inference([x], get_frame_id=True, reuse_outputs=True)
    again = lite.inference([x], get_frame_id=True, reuse_outputs=True)
    assert res[0] is again[0] and (res[1:], again[1:]) == ([5, 5], [6, 6])
    assert len(lite.inference([x], reuse_outputs=True)) == 1


def test_async_mode_returns_the_previous_frame(lites):
    lite = lites.open("tiny_relu", async_mode=True)
    xs = [np.full((1, 2), v, np.float32) for v in (1.0, 2.0, 3.0)]
    out, fid, ran = lite.inference([xs[0]], get_frame_id=True)
    assert (fid, ran) == (0, 1) and not out.any()
    out, fid, ran = lite.inference([xs[1]], get_frame_id=True)
    assert (fid, ran) == (1, 2)
    np.testing.assert_array_equal(out, xs[0])


def test_core_mask(lites, emu):
    lite = lites.open("tiny_relu", "RK3588", core_mask=RKNNLite.NPU_CORE_0_1)
    np.testing.assert_array_equal(lite.inference([np.ones((1, 2), np.float32)])[0], [[1, 1]])
    emu.set_platform("RK3566")
    one_core = lites.new(raise_errors=True)
    one_core.load_rknn(lites.path("tiny_relu", "RK3566"))
    with pytest.raises(rknnx.NotSupportedError, match="rknn_set_core_mask is not supported "
                                                      "on RK3566"):
        one_core.init_runtime(core_mask=RKNNLite.NPU_CORE_0)
    assert one_core.init_runtime(core_mask=RKNNLite.NPU_CORE_AUTO) == 0


def test_second_init_runtime_replaces_the_first(lites, emu):
    lite = lites.open("tiny_relu")
    contexts = emu.counters()["live_contexts"]
    assert lite.init_runtime() == 0
    assert emu.counters()["live_contexts"] == contexts
    np.testing.assert_array_equal(lite.inference([np.ones((1, 2), np.float32)])[0], [[1, 1]])


# ---- the surface ---------------------------------------------------------------------------
def test_constants_and_signatures():
    assert (RKNNLite.NPU_CORE_AUTO, RKNNLite.NPU_CORE_0, RKNNLite.NPU_CORE_1,
            RKNNLite.NPU_CORE_2, RKNNLite.NPU_CORE_0_1, RKNNLite.NPU_CORE_0_1_2,
            RKNNLite.NPU_CORE_ALL) == (0, 1, 2, 4, 3, 7, 0xFFFF)

    def params(f):
        return [(p.name, p.default) for p in inspect.signature(f).parameters.values()
                if p.name != "self"]

    E = inspect.Parameter.empty
    assert params(RKNNLite.__init__) == [("verbose", False), ("verbose_file", None),
                                         ("raise_errors", False)]
    assert params(RKNNLite.load_rknn) == [("path", E), ("key_path", None)]
    assert params(RKNNLite.init_runtime) == [("target", None), ("device_id", None),
                                             ("async_mode", False), ("core_mask", 0)]
    assert params(RKNNLite.inference) == [("inputs", E), ("data_type", None),
                                          ("data_format", None), ("inputs_pass_through", None),
                                          ("get_frame_id", False), ("reuse_outputs", False)]
    assert params(RKNNLite.list_support_target_platform) == [("rknn_model", None)]
    for name in ("get_sdk_version", "list_devices", "release"):
        assert params(getattr(RKNNLite, name)) == []


def test_versions_platforms_devices(lites, capsys):
    lite = lites.open("classifier")
    version = lite.get_sdk_version()
    assert f"API: {lite._model.sdk_version}" in version
    assert f"DRV: {lite._model.driver_version}" in version
    assert lite.list_support_target_platform(lites.path("classifier", "RK3588")) is None
    out = capsys.readouterr().out
    assert "RK3566" in out and "RK3588" in out
    assert out.rstrip().endswith("Target platform of " + lites.path("classifier") + ": RK3588")
    assert lite.list_devices() == ([], [])


# ---- the error convention ------------------------------------------------------------------
def test_init_runtime_before_load_rknn(lites, capsys):
    lite = lites.new()
    assert lite.init_runtime() == -1
    err = capsys.readouterr().err
    assert "E init_runtime: the model is not loaded: call load_rknn before init_runtime\n" in err
    assert lite.inference([np.ones((1, 2), np.float32)]) is None
    assert "E inference: the runtime is not initialized: call init_runtime before " \
           "inference\n" in capsys.readouterr().err
    assert lite.get_sdk_version() is None
    strict = lites.new(raise_errors=True)
    with pytest.raises(RuntimeError, match="the model is not loaded: call load_rknn before "
                                           "init_runtime"):
        strict.init_runtime()
    with pytest.raises(RuntimeError, match="call init_runtime before inference"):
        strict.inference([np.ones((1, 2), np.float32)])


def test_wrong_dims_message(lites, capsys):
    lite = lites.open("classifier")
    x = np.zeros((224, 224, 3), np.uint8)
    capsys.readouterr()
    assert lite.inference([x]) is None
    assert capsys.readouterr().err == \
        "E inference: The input[0] need 4dims input, but 3dims input buffer feed.\n"
    lite.raise_errors = True
    with pytest.raises(ValueError, match=r"^The input\[0\] need 4dims input, but 3dims input "
                                         r"buffer feed\.$"):
        lite.inference([x])


def test_other_errors_return_none_or_raise(lites, capsys):
    lite = lites.open("classifier")
    capsys.readouterr()
    assert lite.inference([np.zeros((1, 224, 224, 3), np.uint8)] * 2) is None
    assert "E inference: The model needs 1 input(s), but 2 input(s) are fed." \
        in capsys.readouterr().err
    assert lite.inference([[1, 2, 3]]) is None
    assert "E inference: The input[0] must be a numpy.ndarray, got list." \
        in capsys.readouterr().err
    lite.raise_errors = True
    with pytest.raises(ValueError, match="shape .1, 100, 100, 3. in NHWC does not match the "
                                         "model's .1, 224, 224, 3."):
        lite.inference([np.zeros((1, 100, 100, 3), np.uint8)])
    with pytest.raises(ValueError, match="data_format must be 'nhwc' or 'nchw', got 'nc'"):
        lite.inference([np.zeros((1, 224, 224, 3), np.uint8)], data_format="nc")
    with pytest.raises(ValueError, match=r"inputs_pass_through needs one 0/1 per input \(1\); "
                                         r"got 2"):
        lite.inference([np.zeros((1, 224, 224, 3), np.uint8)], inputs_pass_through=[0, 1])


def test_load_rknn_errors(lites, tmp_path, capsys):
    lite = lites.new()
    missing = str(tmp_path / "nope.rknn")
    assert lite.load_rknn(missing) == -1
    assert f"E load_rknn: model file {missing!r} does not exist\n" in capsys.readouterr().err
    assert lite.load_rknn(lites.path("tiny_relu"), key_path="k.bin") == -1
    assert "encrypted models (key_path) are not supported" in capsys.readouterr().err
    strict = lites.new(raise_errors=True)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        strict.load_rknn(missing)
    corrupt = tmp_path / "corrupt.rknn"
    corrupt.write_bytes(b"\0" * 64)
    assert strict.load_rknn(str(corrupt)) == 0
    with pytest.raises(rknnx.RKNNError):
        strict.init_runtime()
    assert lite.load_rknn(str(corrupt)) == 0
    capsys.readouterr()
    assert lite.init_runtime() == -1
    assert "E init_runtime: " in capsys.readouterr().err
    with pytest.raises(ValueError, match=r"core_mask 5 is not one of the NPU_CORE_\* values"):
        strict.load_rknn(lites.path("tiny_relu"))
        strict.init_runtime(core_mask=5)


def test_release_twice_and_use_after_release(lites, emu, capsys):
    lite = lites.open("tiny_relu")
    assert lite.release() is None
    assert lite.release() is None
    assert lite.inference([np.ones((1, 2), np.float32)]) is None
    assert "call init_runtime before inference" in capsys.readouterr().err


def test_release_keeps_the_model_loaded(lites, emu):
    # as RKNNLite 2.5.0: release destroys the runtime only; init_runtime opens the model again
    lite = lites.open("tiny_relu")
    before = live(emu)["live_contexts"]
    lite.release()
    assert live(emu)["live_contexts"] == before - 1
    assert lite.init_runtime() == 0
    np.testing.assert_array_equal(lite.inference([np.array([[1.5, -2.0]], np.float32)])[0],
                                  [[1.5, 0.0]])


def test_verbose_file_gets_the_lines(lites, tmp_path):
    log = tmp_path / "lite.log"
    lite = lites.new(verbose=True, verbose_file=str(log))
    lite.init_runtime()
    text = log.read_text()
    assert text.startswith("W rknnx ") and "RKNNLite 2.5.0 API" in text
    assert "E init_runtime: the model is not loaded" in text
    assert "D Traceback (most recent call last):" in text


def test_unreleased_object_closes_its_model_quietly(emu, tmp_path):
    before = live(emu)
    path = tmp_path / "m.rknn"
    path.write_bytes(model_bytes("tiny_relu"))
    lite = RKNNLite()
    assert lite.load_rknn(str(path)) == 0 and lite.init_runtime() == 0
    del lite                                    # no ResourceWarning (an error here)
    gc.collect()
    assert live(emu) == before


# ---- no garbage, no growth -----------------------------------------------------------------
@pytest.mark.parametrize("reuse", [False, True])
def test_inference_makes_no_garbage_and_no_growth(lites, emu, reuse):
    lite = lites.open("tiny_int8_add")
    xs = user_inputs(lite._model, np.random.default_rng(8))
    for _ in range(200):
        lite.inference(xs, reuse_outputs=reuse)
    gc.collect()
    before_live, before_rss = live(emu), rss_kib()
    gc.disable()
    try:
        for _ in range(10_000):
            lite.inference(xs, reuse_outputs=reuse)
        garbage = gc.collect()
    finally:
        gc.enable()
    assert garbage == 0, f"{garbage} objects in reference cycles after 10,000 inference() calls"
    assert live(emu) == before_live
    assert rss_kib() - before_rss < 2048, "RSS grew by more than 2 MiB over 10,000 calls"
