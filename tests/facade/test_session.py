"""Zero-copy sessions: views of NPU memory, the same numbers as the general flow and numpy,
cache syncs counted by the emulator (none missed, none doubled), dma-buf fd inputs,
outputs chained into inputs, weights shared with the model, lifetime and thread rules."""

from __future__ import annotations

import mmap
import os
import re
import threading
import time

import numpy as np
import pytest

import rknnx
from rknnx import lowlevel as ll
from rknnx.emulator import ModelBuilder

from helpers import PLATFORMS, expected_outputs, model_bytes, user_inputs

SAMPLES = ("tiny_relu", "tiny_int8_add", "multi_io", "classifier", "detector_random")
NO_FLUSH = ll.InitFlag.DISABLE_FLUSH_INPUT_MEM_CACHE | ll.InitFlag.DISABLE_FLUSH_OUTPUT_MEM_CACHE


def feed(session, xs):
    for view, x in zip(session.inputs, xs):
        view[...] = x


def close_enough(got, want):
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, got.dtype, want.shape)
    if got.dtype.kind in "iu":
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("name", SAMPLES)
def test_views_give_the_reference_numbers(models, platform, name):
    m = models.open(name, platform)
    xs = user_inputs(m, np.random.default_rng(1))
    for kind, want_float in (("float32", True), ("raw", False)):
        with m.zero_copy(outputs=kind) as s:
            assert [v.shape for v in s.inputs] == [x.shape for x in xs]
            assert [v.dtype for v in s.inputs] == [x.dtype for x in xs]
            feed(s, xs)
            s.run()
            want = expected_outputs(model_bytes(name, platform), xs, want_float)
            for got, w in zip(s.outputs, want):
                close_enough(np.asarray(got), w)
            del got


def test_views_are_npu_memory(models):
    m = models.open("classifier")
    with m.zero_copy() as s:
        frame = s.inputs[0]
        assert frame.shape == (1, 224, 224, 3) and frame.dtype == np.uint8
        assert frame.base is not None                      # a view, not a copy
        assert s.inputs[0].__array_interface__["data"][0] == frame.__array_interface__["data"][0]
        assert s.outputs[0].shape == (1, 1000) and s.outputs[0].dtype == np.float32
        del frame


# ---- cache syncs: exactly one per bound cacheable mem and run, by whoever is in charge -----
@pytest.mark.parametrize("flags,cacheable,synced", [
    (0, True, True),          # the runtime syncs every input and output
    (NO_FLUSH, True, True),   # the session does, since the runtime no longer does
    (0, False, False),        # non-cacheable memory is coherent: nobody syncs
    (NO_FLUSH, False, False),
])
@pytest.mark.needs("rknn_mem_sync", "rknn_create_mem2")
def test_every_cacheable_mem_is_synced_once_per_run(models, emu, flags, cacheable, synced):
    m = models.open("tiny_int8_add")
    xs = user_inputs(m, np.random.default_rng(2))
    want = m.run(*xs)
    with m.zero_copy(flags=flags, cacheable=cacheable) as s:
        for k in range(3):
            feed(s, [x + k if x.dtype.kind == "f" else x for x in xs])
            emu.reset_counters()
            s.run()
            n = len(m.inputs) + len(m.outputs)
            assert emu.counters()["syncs"] == (n if synced else 0)
        feed(s, xs)
        s.run()
        close_enough(np.asarray(s.outputs[0]), want[0])


@pytest.mark.needs("rknn_mem_sync", "rknn_create_mem2")
def test_without_sync_the_npu_sees_stale_data(models, emu):
    m = models.open("tiny_relu")
    with m.zero_copy(flags=NO_FLUSH, sync=False) as s:
        s.inputs[0][...] = [[-1.0, 2.0]]
        emu.reset_counters()
        s.run()
        assert emu.counters()["syncs"] == 0
        np.testing.assert_array_equal(s.outputs[0], [[0.0, 0.0]])   # nothing reached the NPU
        s.sync_inputs()
        s.run()
        np.testing.assert_array_equal(s.outputs[0], [[0.0, 0.0]])   # nor came back
        s.sync_outputs()
        np.testing.assert_array_equal(s.outputs[0], [[0.0, 2.0]])


# ---- external memory and chaining ---------------------------------------------------------
def test_input_from_a_dma_buf_fd(models, emu):
    m = models.open("classifier")
    x = np.random.default_rng(3).integers(0, 256, (1, 224, 224, 3), dtype=np.uint8)
    want = m.run(x)
    fd = os.memfd_create("frame")
    try:
        os.ftruncate(fd, 4096 + x.nbytes)
        with mmap.mmap(fd, 4096 + x.nbytes) as mm:
            mm[4096:] = x.tobytes()                     # what a camera driver would have done
        with m.zero_copy() as s:
            view = s.bind_input_fd(0, fd, offset=4096)
            np.testing.assert_array_equal(view, x)
            del view
            s.run()
            close_enough(np.array(s.outputs[0]), want[0])
            with pytest.raises(ValueError, match=r"input 0 needs 150528 bytes from the fd; "
                                                 r"got size=100"):
                s.bind_input_fd(0, fd, size=100)
    finally:
        os.close(fd)


def _counter_model():
    """x (1, 4) float32 -> x * 2 + 1: state that changes at every run when chained."""
    b = ModelBuilder("RK3588")
    x = b.input("x", (1, 4), "float32")
    y = b.add(b.mul(x, np.full((1, 4), 2.0, np.float32)), np.ones((1, 4), np.float32))
    b.output(y)
    return b.build()


@pytest.mark.needs("rknn_mem_sync", "rknn_create_mem2")
@pytest.mark.parametrize("flags", [0, NO_FLUSH])
def test_output_chained_into_the_next_input(emu, flags):
    emu.set_platform("RK3588")
    with rknnx.Model(_counter_model()) as m, m.zero_copy(flags=flags) as s:
        s.chain(0, 0)
        assert s.inputs[0] is s.outputs[0]
        s.inputs[0][...] = [[0, 1, 2, 3]]          # the state the CPU starts the chain from
        emu.reset_counters()
        for _ in range(3):
            s.run()
        # one clean and one invalidate of the state per run, by the runtime or the session
        assert emu.counters()["syncs"] == 6
        v = np.array([[0, 1, 2, 3]], np.float32)
        for _ in range(3):
            v = v * 2 + 1
        np.testing.assert_array_equal(s.outputs[0], v)


def test_a_refused_change_leaves_the_session_as_it_was(models, emu):
    import os

    m = models.open("dynamic")
    s = m.zero_copy()
    view = s.outputs[0]
    for change in (lambda: s.set_shape_set(2), s.close):
        with pytest.raises(BufferError, match=r"1 buffer view\(s\) of the session's memory still "
                                              r"exported; delete the numpy arrays first, "
                                              r"or keep a \.copy\(\) of what must outlive "
                                              r"the session \(nothing was changed\)"):
            change()
        assert not s.closed and len(s.inputs) == 1 and len(s.outputs) == 2
    x = np.random.default_rng(0).integers(0, 256, m.shape_sets[0][0], dtype=np.uint8)
    s.inputs[0][...] = x
    s.run()                                         # still usable, at the same shape set
    np.testing.assert_allclose(s.outputs[0], m.run(x)[0], rtol=1e-3, atol=1e-3)
    fd = os.memfd_create("frame")
    try:
        os.ftruncate(fd, 1 << 20)
        held = s.inputs[0]
        with pytest.raises(BufferError, match="nothing was changed"):
            s.bind_input_fd(0, fd)
        del held
        assert len(s.inputs) == 1
    finally:
        os.close(fd)
    del view
    s.set_shape_set(2)
    assert s.inputs[0].shape == m.shape_sets[2][0]
    s.close()


def test_chaining_refuses_tensors_that_do_not_match(models):
    m = models.open("detector_random")
    with m.zero_copy() as s:
        with pytest.raises(ValueError, match=r"output 0 cannot be bound as input 0: .*shape "
                                             r"\(1, 24, 80, 80\) vs \(1, 640, 640, 3\)"):
            s.chain(0, 0)
        with pytest.raises(IndexError, match=r"output index 3 out of range: the model has 3 "
                                             r"output\(s\)"):
            s.chain(3, 0)


# ---- weights, lifetime, threads -----------------------------------------------------------
def test_sessions_share_the_models_weights(models):
    m = models.open("detector_random")
    with m.zero_copy() as a, m.zero_copy() as b:
        own = m._ctx.query(ll.QueryCmd.MEM_SIZE)
        for s in (a, b):
            size = s._ctx.query(ll.QueryCmd.MEM_SIZE)
            assert size.total_weight_size == own.total_weight_size > 0
            # a context that shares weights allocates none of its own
            assert size.total_dma_allocated_size == own.total_dma_allocated_size - \
                own.total_weight_size


def test_close_refuses_while_a_view_is_alive(models):
    m = models.open("tiny_relu")
    s = m.zero_copy()
    view = s.outputs[0]
    with pytest.raises(BufferError, match="still exported; delete the numpy arrays first"):
        s.close()
    del view
    s.close()
    s.close()
    with pytest.raises(ValueError, match="run on closed ZeroCopySession"):
        s.run()
    with pytest.raises(ValueError, match="inputs on closed ZeroCopySession"):
        s.inputs  # noqa: B018


def test_closing_the_model_closes_its_sessions(emu):
    from helpers import live

    before = live(emu)
    m = rknnx.Model(model_bytes("tiny_relu"))
    s = m.zero_copy()
    m.close()
    assert s.closed and live(emu) == before


def test_runs_of_one_session_from_two_threads_are_serialized(models, emu):
    m = models.open("tiny_relu")
    with m.zero_copy() as s:
        emu.set_npu_time_us(50_000)
        emu.reset_counters()
        threads = [threading.Thread(target=s.run) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        c = emu.counters()
        assert c["runs"] == 2 and c["peak_runs_in_flight"] == 1
        emu.set_npu_time_us(0)


@pytest.mark.needs("rknn_mem_sync", "rknn_create_mem2")
def test_run_is_the_contexts_own_when_nothing_needs_syncing(models):
    m = models.open("tiny_relu")
    with m.zero_copy() as s, m.zero_copy(flags=NO_FLUSH) as t:
        assert s.run == s._ctx.run                  # no Python layer on the hot path
        assert t.run != t._ctx.run                  # this one syncs around the run


def test_bad_options(models):
    m = models.open("multi_io")
    with pytest.raises(ValueError, match=r"outputs must be one of \('float32', 'raw', 'native'\)"):
        m.zero_copy(outputs="int8")
    with pytest.raises(ValueError, match=r"input_dtypes needs one dtype per input \(3\); got 2"):
        m.zero_copy(input_dtypes=[np.uint8, np.float16])
    with pytest.raises(TypeError):
        m.zero_copy(input_dtypes=np.complex64)


# ---- native outputs and the kernels --------------------------------------------------------
@pytest.mark.parametrize("platform", ["RK3588", "RK3566", "RV1106"])
def test_native_outputs_read_as_the_general_flows(models, platform):
    m = models.open("detector_random", platform)
    xs = user_inputs(m, np.random.default_rng(9))
    want = expected_outputs(model_bytes("detector_random", platform), xs, True)
    with m.zero_copy(outputs="native") as s:
        feed(s, xs)
        s.run()
        for i, w in enumerate(want):
            native = s.outputs[i]
            assert native.ndim == 5 and native.dtype == np.int8           # N, C1, H, W, C2
            np.testing.assert_array_equal(s.read(i), w)
            np.testing.assert_array_equal(s.read(i, layout="NHWC"), w.transpose(0, 2, 3, 1))
            out = np.empty_like(w)
            assert s.read(i, out=out) is out
            del native
    with m.zero_copy(outputs="raw") as s:
        feed(s, xs)
        s.run()
        for i, w in enumerate(want):
            np.testing.assert_array_equal(s.read(i), w)
        with pytest.raises(IndexError, match=r"output index 3 out of range: the model has 3"):
            s.read(3)
        with pytest.raises(ValueError, match="layout must be 'NCHW' or 'NHWC'; got 'NC1HWC2'"):
            s.read(0, layout="nc1hwc2")


# ---- native inputs --------------------------------------------------------------------------
@pytest.mark.parametrize("platform", ["RK3588", "RK3566"])
def test_native_image_input_takes_quantized_data_as_it_is(models, platform):
    from helpers import to_model

    from rknnx.emulator import reference

    m = models.open("detector_random", platform)
    xs = user_inputs(m, np.random.default_rng(10))
    want = m.run(*xs)
    md = reference.as_model(model_bytes("detector_random", platform))
    q = to_model(md.tensors[md.inputs[0]], xs[0])       # normalized and quantized, NHWC
    with m.zero_copy(inputs="native") as s:
        assert s.input_kind == "native" and s.input_attrs[0].layout == "NHWC"
        assert s.inputs[0].dtype == np.int8
        s.inputs[0][...] = q
        s.run()
        np.testing.assert_allclose(s.outputs[0], want[0], rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("platform", ["RK3588", "RK3566"])
def test_native_nc1hwc2_input_written_with_the_kernel(emu, platform):
    b = ModelBuilder(platform)
    x = b.input("x", (1, 6, 5, 5), "int8", fmt="NHWC", scale=0.05, zp=3)
    b.output(b.relu(x))
    emu.set_platform(platform)
    q = np.random.default_rng(11).integers(-128, 128, (1, 6, 5, 5), dtype=np.int8)  # NHWC
    model = b.build()
    want = expected_outputs(model, [q], False)[0]          # q as codes of the model's input
    with rknnx.Model(model) as m:
        with m.zero_copy(inputs="native", outputs="raw") as s:
            native = s.inputs[0]
            assert s.input_attrs[0].layout == "NC1HWC2" and native.ndim == 5
            ll.nchw_to_nc1hwc2(q, native.shape[-1], layout="NHWC", out=native)
            s.run()
            np.testing.assert_array_equal(s.outputs[0], want)
            del native
        with pytest.raises(ValueError, match="inputs='native' takes the model's own types"):
            m.zero_copy(inputs="native", input_dtypes=np.uint8)
        with pytest.raises(ValueError, match="inputs must be 'logical' or 'native'; got 'raw'"):
            m.zero_copy(inputs="raw")


# ---- issue 17: read(out=), dropped sessions, errors inside `with` ---------------------------
def _fp16_model(platform="RK3588"):
    """x (1, 6, 5, 5) float16 NCHW -> relu: a float16 output whose native layout is NC1HWC2."""
    b = ModelBuilder(platform)
    x = b.input("x", (1, 6, 5, 5), "float16", fmt="NCHW")
    b.output(b.relu(x))
    return b.build()


@pytest.mark.parametrize("platform", ["RK3588", "RK3566"])
def test_read_fills_out_for_a_native_float16_output(emu, platform):
    # out= was ignored for native float16 (NC1HWC2): left untouched, a new array returned
    emu.set_platform(platform)
    x = np.random.default_rng(12).standard_normal((1, 6, 5, 5)).astype(np.float16)
    want = np.maximum(x, 0)
    with rknnx.Model(_fp16_model(platform)) as m, m.zero_copy(outputs="native") as s:
        assert s.output_attrs[0].layout == "NC1HWC2" and s.outputs[0].dtype == np.float16
        s.inputs[0][...] = x
        s.run()
        for layout, w in (("NCHW", want), ("NHWC", want.transpose(0, 2, 3, 1))):
            for dtype in (np.float32, np.float16, np.float64):
                out = np.full(w.shape, -7, dtype)
                assert s.read(0, layout=layout, dtype=dtype, out=out) is out
                np.testing.assert_array_equal(out, w.astype(dtype))
                np.testing.assert_array_equal(s.read(0, layout=layout, dtype=dtype),
                                              w.astype(dtype))


@pytest.mark.parametrize("kind", ["float32", "raw", "native"])
def test_read_checks_out_on_every_path(models, kind):
    # a float output's out= was not checked: an int32 out truncated, a larger one broadcast
    m = models.open("multi_io")
    xs = user_inputs(m, np.random.default_rng(13))
    with m.zero_copy(outputs=kind) as s:
        feed(s, xs)
        s.run()
        for i in range(len(m.outputs)):
            want = s.read(i)
            assert want.dtype == np.float32
            read_only = np.zeros(want.shape, np.float32)
            read_only.flags.writeable = False
            wrong = [np.zeros(want.shape, np.int32), np.zeros((2,) + want.shape, np.float32),
                     np.zeros(want.shape, np.float16), read_only]
            for out in wrong:
                with pytest.raises(ValueError, match=f"out must be a writable float32 array "
                                                     f"of shape {re.escape(str(want.shape))}"):
                    s.read(i, out=out)
                assert not out.any()
            with pytest.raises(ValueError, match=r"out must be a writable float32 array .*; "
                                                 r"got list"):
                s.read(i, out=[0.0])
            out = np.empty(want.shape, np.float32)
            assert s.read(i, out=out) is out
            np.testing.assert_array_equal(out, want)
        with pytest.raises(TypeError, match="read gives floats: dtype must be float16, "
                                            "float32 or float64; got int8"):
            s.read(0, dtype=np.int8)
        with pytest.raises(ValueError, match="layout must be 'NCHW' or 'NHWC'; got 5"):
            s.read(0, layout=5)
        with pytest.raises(IndexError, match="output index True out of range"):
            s.read(True)


@pytest.mark.parametrize("platform", ["RK3588", "RV1106"])
def test_a_dropped_session_is_freed_by_reference_counting(models, emu, platform):
    # its memory is bound to its context (a reference cycle in the binding): 2,000 dropped
    # sessions held 2,001 contexts and 14,000 buffers until a gc pass
    import gc

    from helpers import live

    m = models.open("multi_io", platform)
    gc.collect()
    before = live(emu)
    gc.disable()
    try:
        for _ in range(50):
            s = m.zero_copy()
            with pytest.warns(ResourceWarning, match="unclosed <rknnx.ZeroCopySession") as rec:
                del s
            del rec                             # (its record holds the session)
            assert live(emu) == before
        s = m.zero_copy()
        view = s.outputs[0]
        with pytest.warns(ResourceWarning, match="unclosed <rknnx.ZeroCopySession"):
            del s                               # a view alive: the memory stays under it
        assert view.shape == m.outputs[0].shape and np.isfinite(view).all()
        del view
    finally:
        gc.enable()
    gc.collect()
    assert live(emu) == before


def test_an_error_inside_with_reaches_the_user(models, emu):
    from helpers import live

    m = models.open("tiny_relu")
    before = live(emu)
    with pytest.raises(ZeroDivisionError) as ei:
        with m.zero_copy() as s:
            frame = s.inputs[0]                # a view the block still holds
            frame[...] = 1
            1 / 0
    if hasattr(ei.value, "add_note"):
        assert "(the ZeroCopySession was not closed on leaving the `with` block: 1 buffer " \
               "view(s)" in ei.value.__notes__[0]
    assert not s.closed
    del frame, ei
    del s                                      # closed when dropped, without a warning
    assert live(emu) == before
    with pytest.raises(ZeroDivisionError) as ei:
        with m.zero_copy() as s:
            1 / 0
    assert s.closed and not getattr(ei.value, "__notes__", None)


# ---- found by attacking the facade (issue 17) ------------------------------------------------
def test_a_concurrent_reader_never_sees_the_views_missing(models):
    # a close (or rebind) refused for a live view let the session's own views go while it
    # counted: a reader in another thread got an empty tuple (a frame fed to nothing)
    m = models.open("tiny_relu")
    s = m.zero_copy()
    held = s.outputs[0]                        # every close below is refused
    stop = threading.Event()
    refused = [0]

    def closer():
        while not stop.is_set():
            for change in (s.close, lambda: s.chain(0, 0)):
                try:
                    change()
                except BufferError:
                    refused[0] += 1

    # a refused close on a free-threaded CPython first runs the collections that settle
    # views dropped by other threads (rknnx._guard.settle_views: up to 12, the later 2 ms
    # apart), tens of ms each under load: 50 refusals took longer than the 21 s allowed
    # there (32 in a run of tests/facade with -n 2 on 3.13t, PYTHON_GIL=0); 10 still race
    # each close against a million reads
    from rknnx._guard import FREE_THREADED
    want = 10 if FREE_THREADED else 50
    t = threading.Thread(target=closer, daemon=True)
    t.start()
    empty = reads = 0
    deadline = time.monotonic() + 1.0
    try:
        while time.monotonic() < deadline or refused[0] < want:
            reads += 1
            if len(s.inputs) != 1 or len(s.outputs) != 1:
                empty += 1
            if time.monotonic() > deadline + 20:
                break
    finally:
        stop.set()
        t.join(20)
    assert not t.is_alive()
    assert refused[0] >= want and empty == 0, (reads, empty, refused[0])
    del held
    s.close()


@pytest.mark.parametrize("platform", ["RK3588", "RV1106"])
def test_a_failed_rebind_leaves_the_views_in_place(models, emu, platform):
    # a bad fd (or a runtime refusal) after the view check left inputs/outputs empty for
    # good: a frame written to `for v in s.inputs` went nowhere
    m = models.open("tiny_relu", platform)
    with m.zero_copy() as s:
        with pytest.raises(ValueError, match="fd 0 is the character device /dev/null"):
            s.bind_input_fd(0, 0)
        with emu.injected("rknn_set_io_mem", 1, "RKNN_ERR_FAIL"), \
                pytest.raises(rknnx.RKNNError, match="rknn_set_io_mem"):
            s.chain(0, 0)
        assert len(s.inputs) == 1 and len(s.outputs) == 1
        for v in s.inputs:
            v[...] = [[-1.0, 3.0]]
        del v
        s.run()
        np.testing.assert_array_equal(s.outputs[0], [[0.0, 3.0]])
    dyn = models.open("dynamic", platform)
    if dyn.shape_sets:
        with dyn.zero_copy() as s:
            with emu.injected("rknn_set_input_shapes", 1, "RKNN_ERR_FAIL"), \
                    pytest.raises(rknnx.RKNNError, match="rknn_set_input_shapes"):
                s.set_shape_set(1)
            assert len(s.inputs) == 1 and len(s.outputs) == 2


EXIT_IN_FLIGHT = r"""
import threading, time
import numpy as np
import rknnx
from rknnx.emulator import samples
from rknnx.emulator.control import EmulatorControl
emu = EmulatorControl(rknnx.load_runtime("emulator")["path"])
emu.set_platform(PLATFORM)
emu.set_npu_time_us(3_000_000)
m = rknnx.Model(samples.tiny_relu(target=PLATFORM))
class Holder:
    pass
h = Holder()
h.session = m.zero_copy()
h.pool = rknnx.Pool(m, workers=1)
h.self = h                                  # collected by the last gc, at exit
threading.Thread(target=h.session.run, daemon=True).start()   # in flight at exit
time.sleep(0.2)
print("exiting", flush=True)
"""


@pytest.mark.parametrize("platform", ["RK3588", "RV1106"])
def test_interpreter_exit_with_a_run_in_flight_does_not_hang(platform):
    # a session collected at exit must not wait for a context its run, in a daemon thread
    # stopped by the exit, holds for ever
    from helpers import run_python

    proc = run_python(f"PLATFORM = {platform!r}\n" + EXIT_IN_FLIGHT, timeout=60)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.splitlines() == ["exiting"]


@pytest.mark.parametrize("call, exc, message", [
    (lambda m, s: m.zero_copy(cacheable="no"), TypeError,
     "cacheable must be True or False; got 'no'"),
    (lambda m, s: m.zero_copy(sync=None), TypeError, "sync must be True or False; got None"),
    (lambda m, s: m.zero_copy(flags="x"), TypeError,
     "flags must be rknnx.lowlevel.InitFlag values (an int); got 'x'"),
    (lambda m, s: s.chain("0", 0), TypeError, "output index must be an int; got '0'"),
    (lambda m, s: s.bind_input_fd(1.0, 0), TypeError, "input index must be an int; got 1.0"),
    (lambda m, s: s.read(None), TypeError, "output index must be an int; got None"),
])
def test_session_arguments_say_what_is_wrong(models, call, exc, message):
    # "cacheable='no'" was taken as True; a str index said "out of range"
    m = models.open("tiny_relu")
    with m.zero_copy() as s:
        with pytest.raises(exc) as ei:
            call(m, s)
    assert str(ei.value) == message


@pytest.mark.parametrize("kind", ["float32", "native"])
def test_a_kept_error_of_read_or_a_rebind_does_not_pin_the_views(models, emu, kind):
    # read() held a view in its frame: the error's traceback kept it and close() refused
    # for as long as the caller kept the error
    from helpers import live

    m = models.open("multi_io")
    before = live(emu)
    s = m.zero_copy(outputs=kind)
    s.run()
    errors = []
    shape = s.read(0).shape
    unaligned = np.zeros(int(np.prod(shape)) * 4 + 1, np.uint8)[1:].view(np.float32)
    bad = [np.zeros((3, 3), np.float32)]
    if kind == "native":                       # refused by the kernel, views in hand
        bad.append(unaligned.reshape(shape))
    for out in bad:
        try:
            s.read(0, out=out)
        except ValueError as e:
            errors.append(e)
    try:
        s.bind_input_fd(0, 0)                  # /dev/null: refused after the view check
    except ValueError as e:
        errors.append(e)
    assert len(errors) == len(bad) + 1, errors
    s.close()                                  # the errors are still held
    assert live(emu) == before


def test_session_perf_and_model_perf_after_a_session(models, emu):
    """The zero-copy flow has perf too: the session's last run, and Model.perf when only a
    session ran; the per-layer table is parsed into rows (op, name, time)."""
    from rknnx._facts import _perf_rows

    m = models.open("classifier", "RK3588", perf=True)
    img = np.zeros((1, 224, 224, 3), np.uint8)
    with pytest.raises(ValueError, match="has not run yet"):
        m.perf
    with m.zero_copy() as s:
        with pytest.raises(rknnx.RKNNError, match="valid only after rknn_run"):
            s.perf
        s.inputs[0][...] = img
        s.run()
        p = s.perf
        assert p.run_us >= 0 and "Operator Time Consuming Table" in p.detail
        assert [r.op for r in p.rows] == ["conv2d"] * 5 + ["reshape", "dense"]
        assert [r.name for r in p.rows][:2] == ["conv2d_0", "conv2d_1"] and \
            all(r.time_us >= 0 for r in p.rows)
        assert m.perf.detail == p.detail
    # a board's wider table parses by its headers
    board = ("ID   OpType   DataType Target InputShape   OutputShape  Cycles(DDR/NPU/Total)  "
             "Time(us)  MacUsage(%)  WorkLoad(0/1/2)  RW(KB)  FullName\n"
             "1    InputOperator  UINT8  CPU  \\        (1,3,640,640)  0/0/0  7  \\  "
             "100.0%/0.0%/0.0%  0  InputOperator:images\n"
             "2    ConvRelu  UINT8  NPU  (1,3,640,640)  (1,16,320,320)  1/2/3  1453  "
             "4.54/4.54/4.54  33.3%/33.3%/33.3%  1215  Conv:/model.0/conv/Conv\n")
    rows = _perf_rows(board)
    assert [(r.id, r.op, r.name, r.time_us) for r in rows] == [
        (1, "InputOperator", "InputOperator:images", 7),
        (2, "ConvRelu", "Conv:/model.0/conv/Conv", 1453)]


def test_write_converts_or_refuses(models):
    """session.write is the checked alternative to inputs[i][...] = array."""
    m = models.open("classifier", "RK3588")
    with m.zero_copy() as s:
        img = np.random.default_rng(1).integers(0, 256, (1, 224, 224, 3), dtype=np.uint8)
        s.write(0, img.transpose(0, 3, 1, 2).astype(np.float32))     # NCHW floats, integral
        assert np.array_equal(s.inputs[0], img)
        s.write(0, img[0])                                            # HWC: a batch of one
        with pytest.raises(ValueError, match="fractions into a uint8 view would be "
                                             "truncated; open the session with input_dtypes"):
            s.write(0, img / 255.0)
        with pytest.raises(ValueError, match=r"values -1\.\.255 do not fit the uint8 view"):
            s.write(0, img.astype(np.int16) - (img == 0))
        with pytest.raises(ValueError, match="does not fit the view"):
            s.write(0, np.zeros((1, 100, 100, 3), np.uint8))
        assert np.array_equal(s.inputs[0], img)                      # refusals changed nothing


@pytest.mark.parametrize("platform", ["RK3588", "RV1106"])
def test_run_arrays_copies_in_runs_and_copies_out(models, platform):
    """session.run_arrays: the general flow's convenience on a session (what Model.run
    uses on chips without the general API): the reference numbers, into `out` or fresh
    arrays that outlive the session, the other layout taken, wrong arguments refused."""
    m = models.open("multi_io", platform)
    xs = user_inputs(m, np.random.default_rng(3))
    want = expected_outputs(model_bytes("multi_io", platform), xs, True)
    with m.zero_copy() as s:
        got = s.run_arrays(*xs)
        for g, w in zip(got, want):
            close_enough(g, w)
            assert not np.shares_memory(g, s.outputs[0])
        out = [np.empty(v.shape, v.dtype) for v in s.outputs]
        assert all(g is o for g, o in zip(s.run_arrays(*xs, out=out), out))
        for g, w in zip(out, want):
            close_enough(g, w)
        with pytest.raises(ValueError, match=rf"run_arrays needs one array per input "
                                             rf"\({len(xs)}\); got 1"):
            s.run_arrays(xs[0])
        with pytest.raises(ValueError, match=r"out\[0\] must be a writable C-contiguous"):
            s.run_arrays(*xs, out=[np.empty((1,), np.float32)] * len(out))
    m2 = models.open("classifier", platform)
    img = np.random.default_rng(1).integers(0, 256, (1, 224, 224, 3), dtype=np.uint8)
    with m2.zero_copy() as s:
        nhwc = s.run_arrays(img)[0]
        np.testing.assert_array_equal(s.run_arrays(img.transpose(0, 3, 1, 2))[0], nhwc)
        np.testing.assert_allclose(nhwc, m2.run(img)[0], rtol=1e-6)
        with pytest.raises(ValueError, match="does not fit the view"):
            s.run_arrays(np.zeros((1, 10, 10, 3), np.uint8))


def test_session_core_mask(models):
    m = models.open("tiny_relu", "RK3588")
    with m.zero_copy() as s:
        s.set_core_mask(ll.CoreMask.CORE_1)
        s.inputs[0][...] = [[1.0, -2.0]]
        s.run()
        np.testing.assert_array_equal(s.outputs[0], [[1.0, 0.0]])
        with pytest.raises(TypeError, match="a core mask is a rknnx.CoreMask"):
            s.set_core_mask("core1")
    one = models.open("tiny_relu", "RK3566")
    with one.zero_copy() as s:
        with pytest.raises(rknnx.NotSupportedError, match="rknn_set_core_mask is not "
                                                          "supported on RK3566"):
            s.set_core_mask(ll.CoreMask.CORE_0)


def test_layout_functions_give_what_a_session_reads(models):
    """rknnx.layout: native outputs saved out of a session (or from anywhere) give what
    the session's read() gives; quantize/dequantize/to_native are the model's own."""
    m = models.open("detector_random", "RK3588")
    xs = user_inputs(m, np.random.default_rng(6))
    with m.zero_copy(outputs="native") as s:
        feed(s, xs)
        s.run()
        saved = [np.array(v) for v in s.outputs]
        want = [s.read(i, layout=t.layout) for i, t in enumerate(m.outputs)]
    with m.zero_copy(outputs="raw") as s:
        feed(s, xs)
        s.run()
        raw = [np.array(v) for v in s.outputs]
    for t, native, w, r in zip(m.outputs, saved, want, raw):
        assert t.native.layout == "NC1HWC2"
        np.testing.assert_array_equal(rknnx.layout.from_native(native, t), w)
        np.testing.assert_array_equal(rknnx.layout.dequantize(r, t), w)
        nhwc = rknnx.layout.from_native(native, t, layout="NHWC")
        np.testing.assert_array_equal(nhwc, w.transpose(0, 2, 3, 1))
        packed = rknnx.layout.to_native(r, t)
        assert packed.shape == t.native.shape and packed.dtype == t.dtype
        np.testing.assert_array_equal(rknnx.layout.from_native(packed, t), w)
        np.testing.assert_array_equal(rknnx.layout.quantize(w, t), r)
    t = m.outputs[0]
    with pytest.raises(ValueError, match=r"from_native: 'output0' is natively NC1HWC2 "
                                         r"\(1, 2, 80, 80, 16\) int8; got \(1, 24, 80, 80\)"):
        rknnx.layout.from_native(raw[0], t)
    with pytest.raises(TypeError, match="give the tensor's rknnx.TensorInfo"):
        rknnx.layout.dequantize(raw[0], 0.5)
    f = models.open("tiny_relu")
    with pytest.raises(ValueError, match="dequantize: the tensor is not quantized"):
        rknnx.layout.dequantize(np.zeros((1, 2), np.int8), f.outputs[0])


def test_close_during_run_arrays_waits_instead_of_counting_its_views(models):
    """run_arrays (and write) hold the session's own views under its lock: a Model.close
    in another thread meanwhile waits, it does not refuse with a BufferError."""
    m = models.open("classifier")
    x, = user_inputs(m, np.random.default_rng(0))

    class Frame:                     # an array-like that takes a moment to produce its data
        def __array__(self, dtype=None, copy=None):
            time.sleep(0.3)
            return x

    s = m.zero_copy()
    got = {}
    t = threading.Thread(target=lambda: got.setdefault("out", s.run_arrays(Frame())))
    t.start()
    time.sleep(0.1)
    try:
        m.close()
    finally:
        t.join()
    assert s.closed and len(got["out"]) == 1


def test_hold_makes_a_frame_of_calls_that_a_close_waits_for():
    """session.hold(): run inside the block runs; the calls that take the session are
    refused there, naming the call; a close of the model in another thread waits for the
    block's end and then closes."""
    image = np.random.default_rng(3).integers(0, 256, (1, 224, 224, 3), dtype=np.uint8)
    with rknnx.Model(model_bytes("classifier")) as model:
        want = model.run(image)[0]
        session = model.zero_copy()
        closed_at = []
        with session.hold("frame"):
            session.inputs[0][...] = image
            session.run()
            with pytest.raises(RuntimeError, match=r"^run_arrays: the ZeroCopySession is busy"):
                session.run_arrays(image)
            closer = threading.Thread(target=lambda: (model.close(),
                                                      closed_at.append(time.monotonic())))
            closer.start()
            time.sleep(0.3)
            assert not closed_at and not session.closed     # the close waits for the frame
            got = session.outputs[0].copy()
            released = time.monotonic()
        closer.join(10)
        assert closed_at and closed_at[0] >= released and session.closed
        np.testing.assert_array_equal(got, want)
