"""Regression tests of the binding's hardening: inputs that used to crash the process,
read or write out of bounds, leak or corrupt memory must now raise clean exceptions.

Probes that crashed (SIGFPE, SIGSEGV) run in a subprocess, so a regression fails the
test instead of killing pytest.
"""

from __future__ import annotations

import textwrap

import numpy as np
import pytest

import rknnx
from rknnx.lowlevel import TensorAttr, TensorFormat, TensorType

from helpers import run_python

PRELUDE = """
import gc, sys, threading
import numpy as np
import rknnx
from rknnx import _core as C
from rknnx.emulator import samples
TINY = samples.tiny_relu()
"""


def probe(code: str) -> str:
    """Run `code` in a fresh interpreter on the emulator; it must exit cleanly."""
    proc = run_python(PRELUDE + textwrap.dedent(code), env={"RKNNX_RUNTIME": "emulator"})
    assert proc.returncode == 0, (f"probe died with status {proc.returncode}\n"
                                  f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr}")
    return proc.stdout


# ---- layout arithmetic (findings 3 and 4) ---------------------------------------------------
HUGE = [
    dict(dims=[2**31, 2**31, 4, 1], fmt=TensorFormat.NHWC, type=TensorType.UINT8),
    dict(dims=[2**16] * 4, type=TensorType.UINT8),
    dict(dims=[3, 2**31, 2**31, 2], type=TensorType.UINT8),
    dict(dims=[1, 2**32 - 1, 2**32 - 1, 2**32 - 1], fmt=TensorFormat.NHWC,
         type=TensorType.FLOAT32, size_with_stride=16),
    dict(dims=[1, 2**32 - 1, 1, 2**32 - 1, 16], fmt=TensorFormat.NC1HWC2,
         type=TensorType.INT8),
    dict(dims=[2**20, 2**20], type=TensorType.INT64),
]


def _plain(kw):
    return {k: (v if isinstance(v, list) else int(v)) for k, v in kw.items()}


def test_overflowing_layouts_raise_in_a_subprocess():
    # used to be SIGFPE (a product overflowing to 0, then a modulo by it)
    out = probe(f"""
        for kw in {[_plain(kw) for kw in HUGE]!r}:
            a = C.TensorAttr(**kw)
            for what in ("strides", "nbytes_with_stride"):
                try:
                    getattr(a, what)
                except ValueError as e:
                    print("ValueError", "spans more than 4294967295 bytes" in str(e))
                else:
                    print("accepted", kw)
    """)
    assert out.splitlines() == ["ValueError True"] * (2 * len(HUGE))


@pytest.mark.parametrize("kw", HUGE)
def test_bind_and_set_io_mem_refuse_overflowing_layouts(track, kw):
    ctx = track.model("tiny_relu")
    mem = track.mem(ctx.create_mem(64))
    with pytest.raises(ValueError, match="spans more than 4294967295 bytes"):
        mem.bind(TensorAttr(**kw))
    assert mem.shape == (64,)
    a = ctx.input_attrs[0]
    a.dims, a.fmt = kw["dims"], kw.get("fmt", TensorFormat.NCHW)   # type: the model's
    with pytest.raises(ValueError, match="spans more than|do not match the model's"):
        ctx.set_io_mem(mem, a)
    assert ctx.flow == "none" and mem.shape == (64,)


def test_large_but_valid_layout_names_the_size_it_needs(track):
    ctx = track.model("tiny_relu")
    mem = track.mem(ctx.create_mem(64))
    a = TensorAttr(dims=[1, 2**16, 2**15, 2], fmt=TensorFormat.NHWC, type=TensorType.UINT8)
    with pytest.raises(ValueError, match="spans more than"):
        mem.bind(a)
    a.dims = [1, 2**16, 2**15, 1]
    with pytest.raises(ValueError, match=f"expected at least {2**31} bytes"):
        mem.bind(a)
    a.dims = [0, 2**31, 4, 1]
    assert a.nbytes_with_stride == 0
    assert np.asarray(mem.bind(a)).shape == (0, 2**31, 4, 1)


# ---- garbage collection and objects made without __init__ (findings 5 and 6) ---------------
def test_gc_clear_never_writes_into_none():
    # A cycle through an exporter (mem -> owner -> memoryview -> exporter -> mem): tp_clear
    # used to set the exporter's field to None before __releasebuffer__ decremented
    # a counter through it, writing into CPython's None / NoneType.
    out = probe("""
        import ctypes
        from rknnx.emulator.control import EmulatorControl, find_emulator_library
        ctl = EmulatorControl(find_emulator_library())
        live = lambda: {k: ctl.counters()[k] for k in ("live_contexts", "live_mems",
                                                       "live_output_buffers")}
        ob_size = lambda: ctypes.c_ssize_t.from_address(id(type(None)) + 16).value
        before = (type(None).__name__, ob_size(), live())
        ctx = C.Context(TINY)
        base = ctx.create_mem(4096)
        for i in range(3):
            owner = {}
            m = ctx.create_mem_from_phys(base.phys_addr, 4096, owner=owner)
            owner["view"] = m.raw()               # _RawBytes in the cycle
            del m, owner
            gc.collect()
            c = C.Context(TINY)
            c.inputs_set([np.ones((1, 2), np.float32)]); c.run()
            outs = c.outputs_get()
            owner = {}
            m = c.create_mem_from_phys(base.phys_addr, 4096, owner=owner)
            c.set_internal_mem(m)
            owner["view"] = memoryview(outs[0])   # Output in the cycle
            owner["outs"] = outs                  # Outputs too
            del c, outs, m, owner
            gc.collect()
        base.close(); ctx.close()
        print(before == (type(None).__name__, ob_size(), live()), before)
    """)
    assert out.startswith("True"), out


def test_every_class_survives_new_without_init():
    # every attribute, method (without arguments), view and repr of every class made with
    # cls.__new__(cls): exceptions only, never a crash
    out = probe("""
        import copy, pickle
        classes = [v for v in vars(C).values() if isinstance(v, type)
                   and v.__module__ == "rknnx._core" and not issubclass(v, BaseException)
                   and not hasattr(v, "_fields") and not hasattr(v, "__members__")]
        skip = {"__init__", "__new__", "__init_subclass__", "__subclasshook__", "__class__",
                "__getattribute__", "__setattr__", "__delattr__", "__reduce_ex__",
                "__format__", "__getstate__", "__setstate__", "__class_getitem__", "__dir__",
                "__sizeof__"}
        ops = [memoryview, np.asarray, np.from_dlpack, repr, pickle.dumps, copy.copy]
        for cls in classes:
            for name in sorted(set(dir(cls)) - skip):
                o = cls.__new__(cls)
                try:
                    v = getattr(o, name)
                    if callable(v):
                        v()
                except Exception:
                    pass
            for op in ops:
                try:
                    op(cls.__new__(cls))
                except Exception:
                    pass
        print(len(classes), "classes ok")
    """)
    assert "classes ok" in out


def test_objects_made_without_init_say_so():
    out = probe("""
        def err(f):
            try:
                f()
            except Exception as e:
                return f"{type(e).__name__}: {e}"
            return "no error"
        o = C.Output.__new__(C.Output)
        print(err(lambda: o.size))
        print(err(lambda: memoryview(o)))
        print(o.released, o.shape, o.dtype)
        outs = C.Outputs.__new__(C.Outputs)
        outs.release()
        print(len(outs), outs.released, repr(outs))
        print(err(lambda: C.Context.__new__(C.Context).dup()))
        print(err(lambda: C.Context.__new__(C.Context).run()))
        print(err(lambda: C.Context.__new__(C.Context).create_mem(16)))
        print(C.CustomOpContext.__new__(C.CustomOpContext).op_type)
    """).splitlines()
    assert out[0] == "ValueError: not created by the runtime: Output objects come from " \
                     "Context.outputs_get()"
    assert out[1].startswith("BufferError: not created by the runtime")
    assert out[2] == "True (0,) uint8"
    assert out[3] == "0 True <Outputs n=0 frame_id=0 released>"
    assert out[4] == "ValueError: dup on closed Context"
    assert out[5] == "ValueError: run on closed Context"
    assert out[6] == "ValueError: create_mem on closed Context"
    assert out[7] == "None"


def test_uninitialized_custom_op_is_refused(track):
    ctx = track.model("tiny_relu")
    with pytest.raises(TypeError, match="made without __init__"):
        ctx.register_custom_ops([rknnx.lowlevel.CustomOp.__new__(rknnx.lowlevel.CustomOp)])


# ---- close() racing other threads (findings 1 and 2) ----------------------------------------
def test_close_racing_outputs_get_never_leaves_outputs_dangling(emu, bh):
    import threading
    import time

    model = bh.model_bytes("detector")
    base = bh.live(emu)
    x = np.zeros((1, 640, 640, 3), np.uint8)
    outcomes = set()
    for i in range(40):
        ctx = rknnx.lowlevel.Context(model)
        ctx.inputs_set([x])
        ctx.run()
        res = {}

        def get():
            try:
                res["outs"] = ctx.outputs_get(want_float=True)
            except ValueError as e:
                res["err"] = str(e)

        t = threading.Thread(target=get)
        t.start()
        time.sleep(0.00003 * (i % 20))
        ctx.close()
        t.join()
        assert ctx.closed
        if "err" in res:
            assert res["err"] == "outputs_get on closed Context"
            outcomes.add("refused")
        else:
            # got its outputs before close(): close() released them, views are refused
            assert res["outs"].released, f"iteration {i}: outputs outlived their Context"
            with pytest.raises(BufferError, match="released outputs"):
                memoryview(res["outs"][0])
            outcomes.add("released")
        del res
    assert bh.live(emu) == base


def test_mems_created_while_closing_are_closed_with_the_context(emu, bh):
    import threading
    import time
    import warnings

    model = bh.model_bytes("tiny_relu")
    base = bh.live(emu)
    for i in range(40):
        ctx = rknnx.lowlevel.Context(model)
        made = []
        go = threading.Event()

        def alloc():
            go.set()
            for _ in range(50):
                try:
                    made.append(ctx.create_mem(1 << 16))
                except ValueError as e:
                    assert str(e) == "create_mem on closed Context"
                    return

        t = threading.Thread(target=alloc)
        t.start()
        go.wait()
        time.sleep(0.0002 * (i % 10))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ResourceWarning)
            ctx.close()
        t.join()
        assert all(m.closed for m in made), f"iteration {i}: a mem outlived its Context"
        made.clear()
    assert bh.live(emu) == base


# ---- one layout rule for converted types (finding 8) ----------------------------------------
def _nhwc_int8_model(target, c):
    from rknnx.emulator.builder import ModelBuilder

    b = ModelBuilder(target, "pad")
    x = b.input("x", (1, 3, 10, c), "int8", "NHWC", zp=0, scale=0.1)
    b.output(b.relu(x, out="y"))
    return b.build()


def _numpy_want(x):
    """What the model computes for input x (any type: real values): quantize (int8,
    scale 0.1), relu, dequantize; NCHW float32."""
    q = np.clip(np.round(x.astype(np.float32) / np.float32(0.1)), -128, 127)
    return (np.maximum(q, 0) * np.float32(0.1)).astype(np.float32).transpose(0, 3, 1, 2)


@pytest.mark.parametrize("c", [5, 8])
@pytest.mark.parametrize("in_query", ["INPUT_ATTR", "NATIVE_NHWC_INPUT_ATTR"])
@pytest.mark.parametrize("t", [TensorType.FLOAT32, TensorType.FLOAT16, TensorType.INT8])
@pytest.mark.parametrize("target", ["RK3588", "RK3566"])
def test_converted_input_types_pack_channels(track, emu, target, t, in_query, c):
    from rknnx.lowlevel import QueryCmd

    emu.set_platform(target)
    model = _nhwc_int8_model(target, c)
    rng = np.random.default_rng(c)
    if t == TensorType.INT8:
        x = rng.integers(-100, 100, size=(1, 3, 10, c)).astype(np.int8)
    else:
        x = (rng.integers(-100, 100, size=(1, 3, 10, c)) / 10).astype(rknnx.lowlevel.dtype_of(t))
    want = _numpy_want(x)
    g = track.context(model)
    g.inputs_set([rknnx.lowlevel.Input(x, type=t, fmt=TensorFormat.NHWC)])
    g.run()
    with g.outputs_get(want_float=True) as outs:
        general = np.asarray(outs[0]).copy()
    z = track.context(model)
    a = z.query(getattr(QueryCmd, in_query), 0)
    a.type = t
    mi = track.mem(z.create_mem(a.nbytes_with_stride))
    z.set_io_mem(mi, a)
    view = np.asarray(mi)
    itemsize = np.dtype(rknnx.lowlevel.dtype_of(t)).itemsize
    padded = t == TensorType.INT8                        # the model type: Cs channels
    # channels padded only in the model's own type; rows always w_stride pixels apart
    assert view.strides[2] == (a.size_with_stride // (3 * a.w_stride) if padded
                               else c * itemsize)
    assert view.strides[1] == a.w_stride * view.strides[2]
    view[...] = x
    oa = z.query(QueryCmd.NATIVE_NHWC_OUTPUT_ATTR, 0)
    oa.type = TensorType.FLOAT32
    mo = track.mem(z.create_mem(oa.nbytes_with_stride))
    z.set_io_mem(mo, oa)
    assert np.asarray(mo).strides[2] == c * 4          # converted output: packed C
    z.run()
    zero_copy = np.asarray(mo).transpose(0, 3, 1, 2)
    np.testing.assert_allclose(general, want, atol=1e-6)
    np.testing.assert_allclose(zero_copy, general, atol=1e-6)
    del view


@pytest.mark.parametrize("t", [None, TensorType.FLOAT32, TensorType.FLOAT16])
@pytest.mark.parametrize("target", ["RK3588", "RK3566"])
def test_native_nhwc_outputs_pad_only_in_the_model_type(track, emu, target, t):
    from rknnx.lowlevel import QueryCmd

    emu.set_platform(target)
    c = 5
    model = _nhwc_int8_model(target, c)
    x = np.random.default_rng(1).integers(-100, 100, size=(1, 3, 10, c)).astype(np.int8)
    g = track.context(model)
    g.inputs_set([rknnx.lowlevel.Input(x, type=TensorType.INT8, fmt=TensorFormat.NHWC)])
    g.run()
    with g.outputs_get(want_float=True) as outs:
        general = np.asarray(outs[0]).copy()
    z = track.context(model)
    ia = z.query(QueryCmd.INPUT_ATTR, 0)
    ia.type = TensorType.INT8
    mi = track.mem(z.create_mem(ia.nbytes_with_stride))
    z.set_io_mem(mi, ia)
    np.asarray(mi)[...] = x
    oa = z.query(QueryCmd.NATIVE_NHWC_OUTPUT_ATTR, 0)
    if t is not None:
        oa.type = t
    mo = track.mem(z.create_mem(max(oa.nbytes_with_stride, oa.size_with_stride)))
    z.set_io_mem(mo, oa)
    z.run()
    out = np.asarray(mo)
    if t is None:
        assert out.strides[2] > c                        # Cp = align(C, C2) int8 channels
        out = out.astype(np.float32) * oa.scale
    else:
        assert out.strides[2] == c * np.dtype(rknnx.lowlevel.dtype_of(t)).itemsize
    np.testing.assert_allclose(out.transpose(0, 3, 1, 2), general, atol=1e-2)
    with pytest.raises(ValueError, match="NC1HWC2 is the native layout"):
        na = z.query(QueryCmd.NATIVE_OUTPUT_ATTR, 0)
        na.type = TensorType.FLOAT32
        z.set_io_mem(mo, na)


def test_tensor_attr_remembers_its_native_type():
    import copy
    import pickle

    a = TensorAttr(dims=[1, 2, 2, 5], fmt=TensorFormat.NHWC, type=TensorType.INT8,
                   size_with_stride=1 * 2 * 2 * 16)
    assert a.strides == (64, 32, 16, 1)                  # native: Cs = 16
    a.type = TensorType.FLOAT32
    for b in (a, a.copy(), copy.copy(a), copy.deepcopy(a), pickle.loads(pickle.dumps(a))):
        assert b.strides == (80, 40, 20, 4)              # converted: packed C
        b.type = TensorType.INT8
        assert b.strides == (64, 32, 16, 1)


# ---- set_io_mem checks the shape (finding 9) -------------------------------------------------
def test_set_io_mem_refuses_dims_that_are_not_the_models(track):
    ctx = track.model("tiny_relu")
    mem = track.mem(ctx.create_mem(64))
    a = ctx.input_attrs[0]
    a.dims = [1, 1]
    with pytest.raises(ValueError, match=r"input 0 \('x'\): attr.dims \[1, 1\] do not match "
                                         r"the model's \[1, 2\]"):
        ctx.set_io_mem(mem, a)
    assert ctx.flow == "none"
    ctx.set_io_mem(mem, ctx.input_attrs[0])
    assert np.asarray(mem).shape == (1, 2)


def test_set_io_mem_dims_in_the_attrs_layout(track):
    from rknnx.lowlevel import QueryCmd

    ctx = track.model("classifier")
    a = ctx.query(QueryCmd.NATIVE_NHWC_INPUT_ATTR, 0)
    mem = track.mem(ctx.create_mem(a.nbytes_with_stride + 64))
    n, h, w, c = a.dims
    swapped = a.copy()
    swapped.dims = [n, w, h, c] if h != w else [n, h, w, c + 1]
    with pytest.raises(ValueError, match="do not match the model's"):
        ctx.set_io_mem(mem, swapped)
    ctx.set_io_mem(mem, a)


# ---- a runtime switch racing Context() (finding 7) ------------------------------------------
def test_runtime_switch_never_strands_a_context_in_the_other_library(tmp_path):
    import shutil

    other = tmp_path / "librknnrt.so"
    shutil.copy(rknnx.emulator_path(), other)
    out = probe(f"""
        import time
        from rknnx.emulator.control import EmulatorControl
        p1, p2 = C.emulator_path(), {str(other)!r}
        ctls = [EmulatorControl(p1), EmulatorControl(p2)]
        M = samples.classifier()
        stop = False
        errors, made = [], []
        def creator():
            while not stop:
                try:
                    made.append(C.Context(M))
                    made.append(C.create_mem2(64))
                except Exception as e:
                    errors.append(repr(e))
        def switcher():
            i = 0
            while not stop:
                try:
                    C.load_runtime(p2 if i % 2 else p1)
                    i += 1
                except RuntimeError:
                    pass
                time.sleep(0.0005)
        ts = [threading.Thread(target=creator), threading.Thread(target=switcher)]
        for t in ts:
            t.start()
        t0 = time.time()
        while time.time() - t0 < 2:
            while made:
                try:
                    made.pop().close()
                except Exception as e:
                    errors.append("close " + repr(e))
            time.sleep(0.0005)
        stop = True
        for t in ts:
            t.join()
        for m in made:
            m.close()
        print(errors[:3], [c.counters()["live_contexts"] for c in ctls],
              [c.counters()["live_mems"] for c in ctls], C.live_contexts())
    """)
    assert out.strip() == "[] [0, 0] [0, 0] 0", out


# ---- argument checks before C (finding 10) ---------------------------------------------------
def test_bad_arguments_raise_clear_errors(track, tmp_path):
    ctx = track.model("tiny_relu")
    x = np.ones((1, 2), np.float32)
    with pytest.raises(IndexError, match=f"input index {2**70} out of range"):
        ctx.inputs_set([rknnx.lowlevel.Input(x, index=2**70)])
    with pytest.raises(TypeError, match="Input.type must be an int, got str"):
        ctx.inputs_set([rknnx.lowlevel.Input(x, type="f")])
    with pytest.raises(TypeError, match="Input.fmt must be an int, got str"):
        ctx.inputs_set([rknnx.lowlevel.Input(x, fmt="NHWC")])
    with pytest.raises(ValueError, match=r"timeout_ms must be 0..4294967295"):
        ctx.run(timeout_ms=2**40)
    with pytest.raises(ValueError, match=r"timeout_ms must be 0..4294967295"):
        ctx.wait(timeout_ms=-1)
    with pytest.raises(ValueError, match="flags must be a non-negative combination.*got -1"):
        rknnx.lowlevel.create_mem2(16, -1)
    with pytest.raises(TypeError, match="got bool"):
        ctx.create_mem(True)
    mem = track.mem(ctx.create_mem(16))
    with pytest.raises(TypeError, match="max_version must be a .major, minor. tuple"):
        mem.__dlpack__(max_version=())
    ctx.inputs_set([x])
    ctx.run()
    with pytest.raises(ValueError, match="needs exactly 8 bytes"):
        ctx.outputs_get(want_float=True, out=[np.empty(100, np.float32)])
    with pytest.raises(TypeError, match="out must be a sequence .list or tuple. of buffers"):
        ctx.outputs_get(want_float=True, out=np.empty((1, 2), np.float32))
    got = ctx.outputs_get(want_float=True, out=[np.empty((1, 2), np.float32)])
    np.testing.assert_array_equal(got[0], [[1, 1]])          # relu


def test_create_mem_from_fd_checks_the_file(track, tmp_path):
    import os

    ctx = track.model("tiny_relu")
    path = tmp_path / "data"
    path.write_bytes(b"\0" * 64)
    fd = os.open(path, os.O_RDWR)
    os.close(fd)
    with pytest.raises(ValueError, match=f"fd {fd} is not an open file descriptor"):
        ctx.create_mem_from_fd(fd, 16)
    with open(path, "r+b") as f:
        with pytest.raises(ValueError, match=r"offset \+ size \(60 \+ 16\) is beyond the end "
                                             r"of fd \d+ \(64 bytes\)"):
            ctx.create_mem_from_fd(f, 16, 60)
        m = track.mem(ctx.create_mem_from_fd(f, 16, 48))
        assert m.size == 16
        m.close()


# ---- close() of a mem being synced through another context (finding 12) ---------------------
def test_close_never_destroys_a_mem_under_a_sync(track, emu):
    import threading

    ctx = track.model("tiny_relu")
    seen = set()
    for _ in range(20):
        mem = rknnx.lowlevel.create_mem2(1 << 20)             # ALLOC_NO_CONTEXT: no lock of its own
        stop = threading.Event()

        def syncer():
            while not stop.is_set():
                try:
                    mem.sync(context=ctx)
                except ValueError as e:
                    assert str(e) == "sync on closed TensorMem"
                    return

        t = threading.Thread(target=syncer)
        t.start()
        for _ in range(50):
            try:
                mem.close()
            except BufferError as e:
                assert "being synced (rknn_mem_sync) in another thread" in str(e)
                seen.add("refused")
            if mem.closed:
                break
        stop.set()
        t.join()
        mem.close()
        assert mem.closed
    assert "refused" in seen
