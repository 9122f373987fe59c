"""rknnx.Model: the description of a model and the general flow (numpy in, numpy out),
against the numpy reference of the emulator's models, on the RK3588, RK3566 and RV1106
personalities (RV1106 has no general API: Model.run goes through zero-copy memory)."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

import rknnx
from rknnx import lowlevel as ll
from rknnx.emulator import samples

from helpers import FORK_PROBE, PLATFORMS, expected_outputs, model_bytes, user_inputs

SAMPLES = ("tiny_relu", "tiny_int8_add", "multi_io", "classifier", "detector_random")


def assert_close(got, want):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, g.dtype, w.shape, w.dtype)
        if g.dtype.kind in "iub":
            np.testing.assert_array_equal(g, w)
        else:
            np.testing.assert_allclose(g, w, rtol=1e-3, atol=1e-3)


# ---- description ---------------------------------------------------------------------------
@pytest.mark.parametrize("platform", PLATFORMS)
def test_describes_the_model(models, platform):
    m = models.open("multi_io", platform)
    assert m.chip == platform
    assert [t.name for t in m.inputs] == ["image", "feat", "seq"]
    image = m.inputs[0]
    assert image.shape == (1, 32, 32, 3) and image.layout == "NHWC"
    assert image.dtype == np.int8 and image.quant.kind == "affine"
    assert image.native is not None and image.native.nbytes >= 32 * 32 * 3
    out = m.outputs[0]
    assert out.shape == (1, 8, 16, 16) and out.layout == "NCHW"
    assert out.native.layout == "NC1HWC2" and len(out.native.shape) == 5
    assert m.sdk_version.split(" ")[0].count(".") == 2
    assert m.driver_version
    assert m.custom_string == "rknnx sample: multi_io"
    assert m.mem_size.total_weight_size >= 0
    assert m.dynamic is False and m.shape_sets == []
    assert "multi" not in repr(m) and "image[1, 32, 32, 3]" in repr(m)


def test_shape_sets_of_a_dynamic_model(models):
    m = models.open("dynamic")
    assert m.dynamic
    assert m.shape_sets == [((1, 64, 64, 3),), ((1, 96, 96, 3),), ((1, 128, 160, 3),)]
    # inputs, outputs and their native layouts all describe one set: the largest (what
    # a context reports before its first set_input_shapes)
    assert m.inputs[0].shape == m.inputs[0].native.shape == m.shape_sets[-1][0]
    assert m.outputs[0].shape == (1, 4, 64, 80)
    assert m.outputs[0].native.shape == (1, 1, 64, 80, 16)        # NC1HWC2 of 4 channels


# ---- the general flow against numpy -------------------------------------------------------
@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("name", SAMPLES)
def test_run_matches_reference(models, platform, name):
    m = models.open(name, platform)
    rng = np.random.default_rng(1)
    xs = user_inputs(m, rng)
    assert_close(m.run(*xs), expected_outputs(model_bytes(name, platform), xs, True))
    raw = m.run(*xs, raw=True)
    assert_close(raw, expected_outputs(model_bytes(name, platform), xs, False))


@pytest.mark.parametrize("platform", PLATFORMS)
def test_both_flows_on_one_model_in_any_order(models, platform):
    m = models.open("detector_random", platform)
    xs = user_inputs(m, np.random.default_rng(2))
    first = m.run(*xs)
    with m.zero_copy() as session:
        session.inputs[0][...] = xs[0]
        session.run()
        zc = [np.array(o) for o in session.outputs]
    again = m.run(*xs)
    assert_close(zc, first)
    assert_close(again, first)


def test_inputs_by_name_and_as_a_list(models):
    m = models.open("multi_io")
    xs = user_inputs(m, np.random.default_rng(3))
    want = m.run(*xs)
    assert_close(m.run({"image": xs[0], "feat": xs[1], "seq": xs[2]}), want)
    assert_close(m.run(xs), want)


def test_nchw_inputs_are_inferred_or_said(models):
    m = models.open("classifier")
    x = np.random.default_rng(4).integers(0, 256, (1, 224, 224, 3), dtype=np.uint8)
    want = m.run(x)
    assert_close(m.run(x.transpose(0, 3, 1, 2)), want)            # inferred (and made contiguous)
    assert_close(m.run(x[0]), want)                                # HWC: a batch of one
    assert_close(m.run(np.ascontiguousarray(x.transpose(0, 3, 1, 2)), data_format="nchw"), want)


def test_ambiguous_square_input_follows_data_format(models, emu):
    # a 4-D input with C == H == W: the shape cannot say the layout; the model's is assumed
    b = rknnx.emulator.ModelBuilder("RK3588")
    x = b.input("x", (1, 3, 3, 3), "float32", fmt="NHWC")
    b.output(b.relu(x))
    emu.set_platform("RK3588")
    with rknnx.Model(b.build()) as m:
        a = np.arange(27, dtype=np.float32).reshape(1, 3, 3, 3) - 13
        nhwc, = m.run(a)
        nchw, = m.run(a, data_format="nchw")
        np.testing.assert_array_equal(nhwc, np.maximum(a, 0).transpose(0, 3, 1, 2))
        np.testing.assert_array_equal(nchw, np.maximum(a, 0))


def test_out_arrays_are_reused(models):
    m = models.open("detector_random")
    xs = user_inputs(m, np.random.default_rng(5))
    want = m.run(*xs)
    out = [np.empty_like(w) for w in want]
    got = m.run(*xs, out=out)
    assert all(g is o for g, o in zip(got, out))
    assert_close(got, want)
    raw_out = [np.empty(t.shape, t.dtype) for t in m.outputs]
    got = m.run(*xs, raw=True, out=raw_out)
    assert all(g is o for g, o in zip(got, raw_out))


def test_reused_out_arrays_are_checked_again(models):
    """The out arrays of the previous call skip part of the Python checks (the usual loop);
    what can change about them since is still refused with the same words."""
    m = models.open("tiny_relu")
    x = np.array([[1.0, -2.0]], np.float32)
    out = [np.empty((1, 2), np.float32)]
    assert m.run(x, out=out)[0] is out[0]
    with warnings.catch_warnings():                     # numpy 2.5 deprecates it
        warnings.simplefilter("ignore", DeprecationWarning)
        out[0].shape = (2, 1)                           # reshaped in place
    with pytest.raises(ValueError, match=r"out\[0\] must be a writable C-contiguous float32 "
                                         r"array of shape \(1, 2\); got \(2, 1\) float32"):
        m.run(x, out=out)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        out[0].shape = (1, 2)
    m.run(x, out=out)
    out[0].flags.writeable = False                      # made read-only in place
    with pytest.raises(ValueError, match=r"got \(1, 2\) float32, read-only"):
        m.run(x, out=out)
    out[0].flags.writeable = True
    np.testing.assert_array_equal(m.run(x, out=out)[0], [[1.0, 0.0]])
    np.testing.assert_array_equal(m.run(x, out=tuple(out))[0], [[1.0, 0.0]])


def test_new_context_is_configured_like_the_models(models):
    """Model.new_context: a low-level context on the model's weights, with its core mask;
    the caller's to close (the model's live counters are checked by the fixture)."""
    m = models.open("detector_random", "RK3588", core_mask=rknnx.CoreMask.CORE_2)
    ctx = m.new_context()
    try:
        mine = m._ctx.query(ll.QueryCmd.MEM_SIZE)
        size = ctx.query(ll.QueryCmd.MEM_SIZE)
        assert size.total_dma_allocated_size == mine.total_dma_allocated_size - \
            mine.total_weight_size                      # the weights are shared
        xs = user_inputs(m, np.random.default_rng(2))
        ctx.inputs_set(xs)
        ctx.run()
        assert_close([np.asarray(o) for o in ctx.outputs_get(want_float=True)], m.run(*xs))
    finally:
        ctx.close()
    m.close()
    with pytest.raises(ValueError, match="new_context on closed Model"):
        m.new_context()


@pytest.mark.parametrize("platform", ["RK3588", "RV1106"])
def test_out_arrays_are_checked(models, platform):
    m = models.open("detector_random", platform)
    xs = user_inputs(m, np.random.default_rng(5))
    with pytest.raises(ValueError, match=r"out= needs 3 array\(s\), one per output; got 1"):
        m.run(*xs, out=[np.empty((1, 24, 80, 80), np.float32)])
    bad = [np.empty((1, 24, 80, 80), np.float64)] + [np.empty(t.shape, np.float32)
                                                       for t in m.outputs[1:]]
    with pytest.raises(ValueError, match=r"out\[0\] must be a writable C-contiguous float32 "
                                         r"array of shape \(1, 24, 80, 80\); got \(1, 24, 80, 80\) float64"):
        m.run(*xs, out=bad)


# ---- dynamic shapes -----------------------------------------------------------------------
@pytest.mark.parametrize("platform", ["RK3588", "RK3566"])
def test_dynamic_shape_set_chosen_from_the_inputs(models, platform):
    m = models.open("dynamic", platform)
    rng = np.random.default_rng(6)
    for k in (1, 2, 0, 2):
        (shape,) = m.shape_sets[k]
        x = rng.integers(0, 256, shape, dtype=np.uint8)
        assert_close(m.run(x), expected_outputs(model_bytes("dynamic", platform), [x], True,
                                                shape_set=k))


def test_dynamic_shape_that_matches_no_set(models):
    m = models.open("dynamic")
    x = np.zeros((1, 100, 100, 3), np.uint8)
    with pytest.raises(ValueError) as e:
        m.run(x)
    msg = str(e.value)
    assert "input shapes (1, 100, 100, 3) match no shape set of the model" in msg
    assert "set 0: (1, 64, 64, 3); set 1: (1, 96, 96, 3); set 2: (1, 128, 160, 3)" in msg


# ---- user mistakes: one clear exception, before C -----------------------------------------
def test_wrong_inputs_raise_clear_errors(models, emu):
    m = models.open("multi_io")
    xs = user_inputs(m, np.random.default_rng(7))
    emu.reset_counters()
    with pytest.raises(ValueError, match=r"the model has 3 input\(s\) \(image, feat, seq\); got 2"):
        m.run(*xs[:2])
    with pytest.raises(ValueError, match=r"input 1 \('feat'\): shape \(1, 65\) does not match the "
                                         r"model's \(1, 64\)"):
        m.run(xs[0], np.zeros((1, 65), np.float16), xs[2])
    with pytest.raises(ValueError, match=r"input 0 \('image'\): shape \(1, 31, 32, 3\) does not "
                                         r"match the model's \(1, 32, 32, 3\) \(NHWC\) or "
                                         r"\(1, 3, 32, 32\) \(NCHW\)"):
        m.run(np.zeros((1, 31, 32, 3), np.uint8), *xs[1:])
    # (float64 is taken as float32, as run_arrays takes it: test_user_consistency.py)
    with pytest.raises(TypeError, match=r"input 2 \('seq'\): dtype int64 is not accepted; "
                                        r"expected float32"):
        m.run(*xs[:2], xs[2].astype(np.int64))
    with pytest.raises(KeyError, match=r"no input named 'imag'"):
        m.run({"imag": xs[0], "feat": xs[1], "seq": xs[2]})
    with pytest.raises(ValueError, match=r"missing input\(s\) \['seq'\]"):
        m.run({"image": xs[0], "feat": xs[1]})
    with pytest.raises(ValueError, match="data_format must be 'nhwc' or 'nchw', got 'hwc'"):
        m.run(*xs, data_format="hwc")
    assert emu.counters()["runs"] == 0          # nothing reached the runtime


def test_model_sources_and_their_errors(tmp_path, emu):
    path = tmp_path / "tiny.rknn"
    path.write_bytes(samples.tiny_relu())
    with rknnx.Model(path) as a, rknnx.Model(str(path)) as b, \
            rknnx.Model(bytearray(path.read_bytes())) as c:
        x = np.array([[-1.0, 2.0]], np.float32)
        for m in (a, b, c):
            np.testing.assert_array_equal(m.run(x)[0], [[0.0, 2.0]])
    with pytest.raises(FileNotFoundError, match="model file '.*missing.rknn' does not exist"):
        rknnx.Model(tmp_path / "missing.rknn")
    with pytest.raises(rknnx.errors.ModelInvalidError):
        rknnx.Model(b"not a model at all" * 10)
    with pytest.raises(TypeError, match="a model is a path, bytes or a buffer; got int"):
        rknnx.Model(42)


def test_closed_model_refuses(emu):
    m = rknnx.Model(samples.tiny_relu())
    m.close()
    m.close()                                   # a second close does nothing
    assert m.closed
    for call in (lambda: m.run(np.zeros((1, 2), np.float32)), m.zero_copy,
                 lambda: m.set_core_mask(1)):
        with pytest.raises(ValueError, match="on closed Model"):
            call()


def test_unclosed_model_warns(emu):
    import gc

    m = rknnx.Model(samples.tiny_relu())
    with pytest.warns(ResourceWarning, match="unclosed <rknnx.Model"):
        del m
        gc.collect()


# ---- chips -----------------------------------------------------------------------------
def test_core_mask_where_the_chip_has_cores(models):
    m = models.open("tiny_relu", "RK3588", core_mask=rknnx.CoreMask.CORE_1)
    np.testing.assert_array_equal(m.run(np.ones((1, 2), np.float32))[0], [[1.0, 1.0]])
    m2 = models.open("tiny_relu", "RK3566")
    with pytest.raises(rknnx.NotSupportedError, match="rknn_set_core_mask is not supported on "
                                                       "RK3566"):
        m2.set_core_mask(rknnx.CoreMask.CORE_0)


def test_perf(models):
    m = models.open("tiny_relu", perf=True)
    with pytest.raises(ValueError, match="perf: the model has not run yet"):
        m.perf  # noqa: B018
    m.run(np.ones((1, 2), np.float32))
    p = m.perf
    assert p.run_us >= 0 and isinstance(p.detail, str) and p.detail
    plain = models.open("tiny_relu")
    plain.run(np.ones((1, 2), np.float32))
    assert plain.perf.detail is None


# ---- no garbage, no growth -----------------------------------------------------------------
def test_run_makes_no_garbage_and_no_growth(models, emu):
    import gc

    from helpers import live, rss_kib

    m = models.open("tiny_int8_add")
    xs = user_inputs(m, np.random.default_rng(8))
    out = [np.empty(t.shape, np.float32) for t in m.outputs]
    for _ in range(200):
        m.run(*xs)
        m.run(*xs, out=out)
    gc.collect()
    before_live, before_rss = live(emu), rss_kib()
    gc.disable()
    try:
        for _ in range(5000):
            m.run(*xs)
            m.run(*xs, out=out)
        garbage = gc.collect()
    finally:
        gc.enable()
    assert garbage == 0, f"{garbage} objects in reference cycles after 10,000 runs"
    assert live(emu) == before_live
    assert rss_kib() - before_rss < 2048, "RSS grew by more than 2 MiB over 10,000 runs"


def test_out_arrays_say_what_is_wrong_and_are_checked_before_the_run(models, emu):
    m = models.open("tiny_relu")
    x = np.zeros((1, 2), np.float32)
    emu.reset_counters()
    with pytest.raises(ValueError, match=r"out\[0\] must be a writable C-contiguous float32 array "
                                         r"of shape \(1, 2\); got \(1, 2\) float32, read-only"):
        m.run(x, out=[np.frombuffer(bytes(8), np.float32).reshape(1, 2)])
    with pytest.raises(ValueError, match=r"got \(1, 2\) float32, not C-contiguous"):
        m.run(x, out=[np.zeros((2, 2), np.float32)[:, :1].reshape(1, 2)
                      if False else np.zeros((2, 4), np.float32)[:1, ::2]])
    assert emu.counters()["runs"] == 0
    dyn = models.open("dynamic")
    a = np.empty(dyn.outputs[0].shape, np.float32)
    x = np.zeros(dyn.shape_sets[0][0], np.uint8)
    out = np.empty((1, 4, 32, 32), np.float32)
    with pytest.raises(ValueError, match="out= gives the same array for two outputs"):
        dyn.run(x, out=[out, out])
    del a


def test_a_dynamic_model_on_a_chip_without_shape_sets(models):
    # RV1106 cannot report or choose shape sets: the model runs at the runtime's shapes
    m = models.open("dynamic", "RV1106")
    assert not m.dynamic
    x = np.random.default_rng(0).integers(0, 256, m.inputs[0].shape, dtype=np.uint8)
    with m.zero_copy() as s:
        s.inputs[0][...] = x
        s.run()
        assert s.outputs[0].dtype == np.float32


# ---- issue 17: fork, dropped models, errors inside `with`, argument checks ------------------
FORK = FORK_PROBE + r"""
import os, sys, threading, time
import numpy as np
import rknnx
from rknnx.emulator import samples
from rknnx.emulator.control import EmulatorControl
platform = sys.argv[1]
emu = EmulatorControl(rknnx.load_runtime("emulator")["path"])
emu.set_log_level(0)
emu.set_platform(platform)
m = rknnx.Model(samples.tiny_relu(target=platform))
x = np.array([[-1.0, 2.0]], np.float32)
m.run(x)
s = m.zero_copy()
emu.set_npu_time_us(500_000)
t = threading.Thread(target=m.run, args=(x,))
t.start()
time.sleep(0.1)                                   # the run holds the model's lock
print_calls_in_a_fork([
    ("run", lambda: m.run(x)), ("close", m.close), ("zero_copy", m.zero_copy),
    ("set_core_mask", lambda: m.set_core_mask(1)), ("session inputs", lambda: s.inputs),
    ("session read", lambda: s.read(0)), ("session run", s.run), ("session close", s.close)])
t.join()
emu.set_npu_time_us(0)
print("parent", m.run(x)[0].tolist())
s.close()
m.close()
print("live", emu.counters()["live_contexts"], emu.counters()["live_mems"])
"""


@pytest.mark.parametrize("platform", ["RK3588", "RV1106"])
def test_fork_while_a_thread_runs_the_model(platform):
    # the child inherits the model's lock held by a thread it does not have: its calls
    # raise, as the low level's do, instead of waiting for ever
    from helpers import run_python

    proc = run_python(f"import sys; sys.argv[1:] = [{platform!r}]\n" + FORK, timeout=90)
    assert proc.returncode == 0, (proc.stdout, proc.stderr[-2000:])
    assert proc.stdout.splitlines() == [
        "run: refused", "close: refused", "zero_copy: refused", "set_core_mask: refused",
        "session inputs: refused", "session read: refused", "session run: refused",
        "session close: refused", "parent [[0.0, 2.0]]", "live 0 0"], proc.stdout


@pytest.mark.parametrize("raw", [None, "yes", 2, 0.0])
def test_raw_must_be_a_bool_on_every_path(models, raw):
    # the fast path raised a bare KeyError, the slow path (and RV1106) took anything
    for platform in ("RK3588", "RV1106"):
        m = models.open("tiny_relu", platform)
        for inputs in ((np.zeros((1, 2), np.float32),), (np.zeros((1, 2), np.float64),)):
            with pytest.raises(TypeError, match=f"raw must be True or False; got {raw!r}"):
                m.run(*inputs, raw=raw)
        np.testing.assert_array_equal(m.run(np.ones((1, 2), np.float32), raw=np.True_)[0],
                                      [[1.0, 1.0]])


class _Sub(np.ndarray):
    pass


def test_the_fast_paths_out_check_in_c_keeps_the_facades_words(models, emu):
    """Model.run's fast path leaves the whole out= check to the binding (in C, infer's
    fast_only): what check_out refuses is refused with its words before anything runs,
    what it takes runs, and the result is a new list of the caller's arrays (two outputs
    sharing memory: test_out_arrays_that_share_memory_are_refused)."""
    m = models.open("multi_io")
    xs = user_inputs(m, np.random.default_rng(8))
    want = m.run(*xs)
    out = [np.empty(w.shape, w.dtype) for w in want]
    emu.reset_counters()
    with pytest.raises(ValueError, match=re.escape(
            f"out[0] must be a writable C-contiguous float32 array of shape "
            f"{want[0].shape}; got {want[0].shape[1:]} float32")):
        m.run(*xs, out=[out[0].reshape(want[0].shape[1:])] + out[1:])   # same size
    with pytest.raises(ValueError, match=r"out\[0\] must be .*; got memoryview"):
        m.run(*xs, out=[memoryview(out[0])] + out[1:])
    with pytest.raises(ValueError, match=rf"out= takes a list of arrays, one per output "
                                         rf"\({len(out)}\); got ndarray \(put it in a list\)"):
        m.run(*xs, out=out[0])
    assert emu.counters()["runs"] == 0
    sub = [o.view(_Sub) for o in out]               # a subclass: the full path takes it
    for given in (out, tuple(out), sub):
        got = m.run(*xs, out=given)
        assert type(got) is list and got is not given
        assert all(g is o for g, o in zip(got, given))
        assert_close(got, want)
    got = m.run(xs[0].view(_Sub), *xs[1:], out=out)
    assert all(g is o for g, o in zip(got, out))
    assert_close(got, want)
    assert emu.counters()["runs"] == 4


@pytest.mark.parametrize("platform", ["RK3588", "RV1106"])
def test_out_arrays_that_share_memory_are_refused(models, emu, platform):
    # two views of one buffer: one output silently overwrote the other
    m = models.open("multi_io", platform)
    xs = user_inputs(m, np.random.default_rng(3))
    want = m.run(*xs)
    nbytes = sum(w.nbytes for w in want)
    buf = np.zeros(nbytes, np.uint8)
    views, off = [], 0
    for w in want:
        views.append(buf[off:off + w.nbytes].view(w.dtype).reshape(w.shape))
        off += w.nbytes
    assert_close(m.run(*xs, out=views), want)            # disjoint views of one buffer: fine
    overlapping = list(views)
    big = np.zeros(max(w.nbytes for w in want[:2]) * 2, np.uint8)
    overlapping[0] = big[:want[0].nbytes].view(want[0].dtype).reshape(want[0].shape)
    overlapping[1] = big[8:8 + want[1].nbytes].view(want[1].dtype).reshape(want[1].shape)
    emu.reset_counters()
    with pytest.raises(ValueError, match=r"out\[0\] and out\[1\] share memory \(views of one "
                                         r"buffer\)"):
        m.run(*xs, out=overlapping)
    assert emu.counters()["runs"] == 0


@pytest.mark.parametrize("platform", ["RK3588", "RV1106"])
def test_an_error_inside_with_reaches_the_user(emu, platform):
    # on RV1106 run() goes through the model's own session; the error's traceback held
    # views of its memory and the BufferError of close() replaced the error
    import gc

    from helpers import live, model_bytes

    emu.set_platform(platform)
    before = live(emu)
    gc.collect()
    gc.disable()
    try:
        with pytest.raises(rknnx.errors.RKNNTimeoutError, match="rknn_run failed") as ei:
            with rknnx.Model(model_bytes("tiny_relu", platform)) as m:
                m.run(np.zeros((1, 2), np.float32))
                with emu.injected("rknn_run", 1, "RKNN_ERR_TIMEOUT"):
                    m.run(np.zeros((1, 2), np.float32))
        assert m.closed and live(emu) == before
        assert not getattr(ei.value, "__notes__", None)
    finally:
        gc.enable()


def test_an_error_inside_with_wins_over_a_failed_close(emu):
    from helpers import live, model_bytes

    before = live(emu)
    with pytest.raises(ZeroDivisionError) as ei:
        with rknnx.Model(model_bytes("tiny_relu")) as m:
            s = m.zero_copy()
            view = s.inputs[0]                 # a view: close() cannot free the memory
            1 / 0
    if hasattr(ei.value, "add_note"):
        assert ei.value.__notes__ == [
            "(the Model was not closed on leaving the `with` block: 1 buffer view(s) of the "
            "session's memory still exported; delete the numpy arrays first, or keep a "
            ".copy() of what must outlive the session (nothing was changed); it is closed "
            "when collected)"]
    assert not m.closed
    del view, ei
    m.close()                                  # the user may still close it ...
    assert live(emu) == before
    m2 = rknnx.Model(model_bytes("tiny_relu"))
    s = m2.zero_copy()
    view = s.inputs[0]
    with pytest.raises(ZeroDivisionError):
        with m2:
            1 / 0
    del view, s, m2                            # ... or drop it: closed, without a warning
    assert live(emu) == before


@pytest.mark.parametrize("platform", ["RK3588", "RV1106"])
def test_a_dropped_model_is_freed_by_reference_counting(emu, platform):
    # on RV1106 run() keeps a session that held the model: a cycle only gc broke
    import gc

    from helpers import live, model_bytes

    emu.set_platform(platform)
    before = live(emu)
    gc.collect()
    gc.disable()
    try:
        for _ in range(20):
            m = rknnx.Model(model_bytes("tiny_relu", platform))
            m.run(np.zeros((1, 2), np.float32))
            with pytest.warns(ResourceWarning, match="unclosed <rknnx.Model") as rec:
                del m
            assert len(rec) == 1                # the model's warning, not its session's
            del rec                             # (its record holds the model)
        assert live(emu) == before
    finally:
        gc.enable()


@pytest.mark.parametrize("call, exc, message", [
    (lambda m, x: m.set_core_mask(None), TypeError,
     "set_core_mask: a core mask is a rknnx.CoreMask (or its int value); got None"),
    (lambda m, x: m.set_core_mask("x"), TypeError,
     "set_core_mask: a core mask is a rknnx.CoreMask (or its int value); got 'x'"),
    (lambda m, x: m.run(x, out=np.empty((1, 2), np.float32)), ValueError,
     "out= takes a list of arrays, one per output (1); got ndarray (put it in a list)"),
    (lambda m, x: m.run(x, out=5), ValueError,
     "out= takes a list of arrays, one per output (1); got int"),
    (lambda m, x: m.run(x, pass_through=True), TypeError,
     "pass_through needs one flag per input (1), a sequence of bools; got True"),
])
def test_model_arguments_say_what_is_wrong(models, call, exc, message):
    # these raised "invalid literal for int()", "'bool' object is not iterable", or an
    # out[0] shape error for a bare array (list() of an array is its rows)
    m = models.open("tiny_relu")
    with pytest.raises(exc) as ei:
        call(m, np.zeros((1, 2), np.float32))
    assert str(ei.value) == message


SIGNAL = r"""
import signal
import numpy as np
import rknnx
from rknnx.emulator import samples
from rknnx.emulator.control import EmulatorControl
emu = EmulatorControl(rknnx.load_runtime("emulator")["path"])
emu.set_platform(PLATFORM)
m = rknnx.Model(samples.tiny_relu(target=PLATFORM))
x = np.array([[-1.0, 2.0]], np.float32)
seen = []

def handler(signum, frame):
    try:
        assert m.run(x)[0].tolist() == [[0.0, 2.0]]
        seen.append("no error")
    except RuntimeError as e:
        seen.append(str(e).split(" (")[0])

signal.signal(signal.SIGALRM, handler)
emu.set_npu_time_us(300_000)
signal.setitimer(signal.ITIMER_REAL, 0.05)      # fires while the run holds the model
print(m.run(x)[0].tolist())
emu.set_npu_time_us(0)
print(seen)
m.close()
"""


@pytest.mark.parametrize("platform, seen", [
    # the general flow's one crossing holds no lock once it is back in Python, where the
    # handler runs: the handler's run is simply the next one
    ("RK3588", "['no error']"),
    # RV1106 runs through a session under the model's lock, which the handler finds held
    ("RV1106", "['run: the Model is busy in this thread']"),
])
def test_a_signal_handler_calling_the_running_model_never_waits(platform, seen):
    # a handler runs in the thread whose run() holds the model's lock: it waited for ever
    from helpers import run_python

    proc = run_python(f"PLATFORM = {platform!r}\n" + SIGNAL, timeout=60)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.splitlines() == ["[[0.0, 2.0]]", seen], proc.stdout


def test_first_mistakes_get_a_hint(models):
    """The RKNNLite habit run([img]) says inputs are positional; a float image scaled to
    0..1 into a pixel model warns once (the model expects 0..255)."""
    m = models.open("classifier", "RK3588")
    img = np.zeros((1, 224, 224, 3), np.uint8)
    with pytest.raises(TypeError, match=r"inputs are positional arrays: model.run\(image\), "
                                        r"not model.run\(\[image\]\)"):
        m.run([img])
    scaled = np.random.default_rng(0).random((1, 224, 224, 3)).astype(np.float32)
    with pytest.warns(UserWarning, match=r"takes pixels in 0..255 .* this float array is "
                                         r"in \S+\.\.0\.9\d+: pass the image before scaling"):
        m.run(scaled)
    m.run(scaled)                     # once per model: no second warning (warnings=error)
    m2 = models.open("classifier", "RK3588")
    m2.run(scaled * 255)              # a float image in 0..255: no warning


# ---- the fast path (Context.infer, fast_only) keeps the full path's rules -----------------
# (an adversarial review of the lock-free fast path found each of these)
def _sigmoid_x():
    return np.linspace(-2, 2, 16, dtype=np.float32).reshape(1, 16)


@pytest.mark.needs("rknn_register_custom_ops")
@pytest.mark.parametrize("exc", [ValueError, TypeError])
def test_a_failing_callback_runs_once(models, exc):
    m = models.open("custom_op_model")
    calls = []

    @rknnx.custom_op("cstSigmoid")
    def op(inputs, outputs):
        calls.append(1)
        raise exc("bad frame")

    m.register_custom_ops(op)
    with pytest.raises(exc, match="bad frame"):
        m.run(_sigmoid_x())
    assert len(calls) == 1, f"one Model.run called the op {len(calls)} times"


@pytest.mark.parametrize("func,status", [("rknn_run", "RKNN_ERR_PARAM_INVALID"),
                                         ("rknn_run", "RKNN_ERR_INPUT_INVALID"),
                                         ("rknn_outputs_get", "RKNN_ERR_OUTPUT_INVALID")])
def test_a_runtime_failure_is_raised_not_retried(models, emu, func, status):
    m = models.open("tiny_relu")
    x = np.ones(m.inputs[0].shape, np.float32)
    runs = emu.counters()["runs"]
    emu.inject_error(func, 1, status)
    with pytest.raises(rknnx.RKNNError):
        m.run(x)
    # the graph ran at most once (an injected rknn_run failure counts no run; a failed
    # outputs_get follows one): the frame was not run again behind the error
    assert emu.counters()["runs"] - runs == (1 if func == "rknn_outputs_get" else 0)


def test_fewer_inputs_are_refused_not_run_on_the_last_ones(models):
    m = models.open("multi_io")
    rng = np.random.default_rng(0)
    a, b = user_inputs(m, rng), user_inputs(m, rng)
    m.run(*a)
    with pytest.raises(ValueError, match=r"the model has 3 input\(s\)"):
        m.run(b[0], b[1])


@pytest.mark.parametrize("reshape", [lambda x: x.reshape(-1), lambda x: x[np.newaxis]],
                         ids=["flat", "5-D"])
@pytest.mark.parametrize("platform", ["RK3588", "RV1106"])
def test_run_takes_what_prepare_inputs_takes_on_every_chip(models, reshape, platform):
    m = models.open("classifier", platform)
    x, = user_inputs(m, np.random.default_rng(0))
    y = reshape(x)
    with pytest.raises(ValueError, match="does not match the model's"):
        m.prepare_inputs([y])
    with pytest.raises(ValueError, match="does not match the model's"):
        m.run(y)


@pytest.mark.needs("rknn_register_custom_ops")
def test_any_run_in_a_callback_of_a_run_says_the_model_is_busy(models):
    m = models.open("custom_op_model")
    x = _sigmoid_x()
    seen = []

    @rknnx.custom_op("cstSigmoid")
    def op(inputs, outputs):
        if not seen:
            for call in (lambda: m.run(x, pass_through=[False]),     # the full path
                         lambda: m.set_core_mask(rknnx.CoreMask.CORE_0),
                         lambda: m.register_custom_ops(op)):
                try:
                    call()
                except RuntimeError as e:
                    seen.append(str(e).split(" (")[0])
        np.divide(1.0, 1.0 + np.exp(-inputs[0]), out=outputs[0])

    m.register_custom_ops(op)
    m.run(x)
    assert seen == ["run: the Model is busy in this thread",
                    "set_core_mask: the Model is busy in this thread",
                    "register_custom_ops: the Model is busy in this thread"], seen


def test_frame_id_survives_close(models):
    m = models.open("tiny_relu")
    m.run(np.ones((1, 2), np.float32))
    m.run(np.ones((1, 2), np.float32))
    assert m.frame_id == 2
    m.close()
    assert m.frame_id == 2
