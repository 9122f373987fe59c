"""Emulator runtime half: dynamic shapes, async, dup, weight sharing, threads, controls,
error injection, custom ops.  The custom-op lifecycle is in
test_emu_api_custom.py, matmul in test_emu_api_matmul.py, sanitizer runs in
test_emu_sanitizers.py."""

import ctypes as C
import json
import pathlib
import threading
import time

import numpy as np
import pytest

from helpers import DATA

from emu_capi import (CTX_INVALID, CUSTOM_CB, CUSTOM_DESTROY, F32, FAIL, FLAG_ASYNC,
                                 FLAG_SHARE_WEIGHT, INPUT_INVALID, NCHW, NHWC, PARAM_INVALID,
                                 SUCC, TIMEOUT, U8, CustomOp, CustomOpAttr, Ctx, InitExtend,
                                 OutputExtend, Q_CURRENT_INPUT_ATTR,
                                 Q_CURRENT_NATIVE_INPUT_ATTR, Q_CURRENT_OUTPUT_ATTR,
                                 Q_INPUT_ATTR, Q_INPUT_DYNAMIC_RANGE, RunExtend, TensorAttr,
                                 api, desc_of, emu, float_output, make_ctx, mem_view,
                                 model_input_from_user, reference, samples)

__all__ = ["emu", "make_ctx"]

ROOT = pathlib.Path(__file__).resolve().parents[2]


# ---- dynamic shapes -------------------------------------------------------------------------

def dyn_expected(model, img, s):
    m = desc_of(model)
    x = model_input_from_user(m.tensors[m.inputs[0]], img, NHWC)
    outs = reference.run_reference(m, [x], shape_set=s)
    return [float_output(m.tensors[n], q) for n, q in zip(m.outputs, outs)]


@pytest.mark.parametrize("chip", ["RK3588", "RK3566"])
def test_dynamic_general(emu, make_ctx, chip):
    model = samples.dynamic(target=chip)
    c = make_ctx(model, platform=chip)
    r = c.query(Q_INPUT_DYNAMIC_RANGE, 0)
    assert r.shape_number == 3 and r.n_dims == 4 and r.fmt == NHWC and r.name == b"image"
    sets = [tuple(r.dyn_range[s][:4]) for s in range(3)]
    assert sets == [(1, 64, 64, 3), (1, 96, 96, 3), (1, 128, 160, 3)]
    rng = np.random.default_rng(20)
    for s in (2, 0, 1):
        a = c.in_attr(0)
        a.dims[:4] = sets[s]
        assert api().rknn_set_input_shapes(c.h, 1, C.byref(a)) == SUCC
        cur = c.query(Q_CURRENT_INPUT_ATTR, 0)
        assert cur.shape == sets[s]
        co = c.query(Q_CURRENT_OUTPUT_ATTR, 0)
        assert co.shape == (1, 4, sets[s][1] // 2, sets[s][2] // 2)
        img = rng.integers(0, 256, sets[s], dtype=np.uint8)
        assert c.run_rc() == INPUT_INVALID or s == 2     # old-shape input is stale
        c.inputs_set([img])
        c.run()
        exp = dyn_expected(model, img, s)
        outs = get_current(c)
        np.testing.assert_array_equal(outs[0], exp[0])                  # int8 feat: exact
        np.testing.assert_allclose(outs[1], exp[1], rtol=1e-6, atol=1e-7)  # float sigmoid
    bad = c.in_attr(0)
    bad.dims[:4] = (1, 65, 64, 3)
    assert api().rknn_set_input_shapes(c.h, 1, C.byref(bad)) == PARAM_INVALID
    assert api().rknn_set_input_shapes(c.h, 2, C.byref(bad)) == PARAM_INVALID
    # NCHW dims are accepted for an NHWC input
    nchw = c.in_attr(0)
    nchw.fmt = NCHW
    nchw.dims[:4] = (1, 3, 96, 96)
    assert api().rknn_set_input_shapes(c.h, 1, C.byref(nchw)) == SUCC
    assert c.query(Q_CURRENT_INPUT_ATTR, 0).shape == (1, 96, 96, 3)
    # the deprecated single-input form
    one = c.in_attr(0)
    one.dims[:4] = sets[0]
    assert api().rknn_set_input_shape(c.h, C.byref(one)) == SUCC
    assert c.query(Q_CURRENT_INPUT_ATTR, 0).shape == sets[0]


def get_current(c):
    """outputs_get(want_float=1) shaped by CURRENT_OUTPUT_ATTR."""
    from emu_capi import Output
    outs = (Output * c.n_out)()
    for k in range(c.n_out):
        outs[k].index = k
        outs[k].want_float = 1
    assert api().rknn_outputs_get(c.h, c.n_out, outs, None) == SUCC
    res = []
    for k in range(c.n_out):
        a = c.query(Q_CURRENT_OUTPUT_ATTR, k)
        res.append(np.frombuffer(C.string_at(outs[k].buf, outs[k].size), np.float32)
                   .reshape(a.shape).copy())
    assert api().rknn_outputs_release(c.h, c.n_out, outs) == SUCC
    return res


def test_dynamic_zero_copy(emu, make_ctx):
    """rknn_dynshape_inference_zero_copy: mems at the largest shape, rebound per shape."""
    model = samples.dynamic()
    c = make_ctx(model)
    r = c.query(Q_INPUT_DYNAMIC_RANGE, 0)
    sets = [tuple(r.dyn_range[s][:4]) for s in range(r.shape_number)]
    big_in = max(s[1] * s[2] * s[3] for s in sets) * 2
    im = c.create_mem(big_in)
    oms = [c.create_mem(4 * 160 * 128) for _ in range(2)]
    rng = np.random.default_rng(21)
    for s, shape in enumerate(sets):
        a = c.in_attr(0)
        a.dims[:4] = shape
        assert api().rknn_set_input_shapes(c.h, 1, C.byref(a)) == SUCC
        ia = c.query(Q_CURRENT_INPUT_ATTR, 0)
        ia.type, ia.fmt = U8, NHWC
        img = rng.integers(0, 256, shape, dtype=np.uint8)
        v = mem_view(im, ia.size_with_stride).reshape(shape[1], ia.w_stride * 3)
        v[:, : shape[2] * 3] = img.reshape(shape[1], -1)
        assert c.set_io_mem(im, ia) == SUCC
        for o in range(2):
            oa = c.query(Q_CURRENT_OUTPUT_ATTR, o)
            oa.type = F32
            assert c.set_io_mem(oms[o], oa) == SUCC
        c.run()
        for o, e in enumerate(dyn_expected(model, img, s)):
            got = mem_view(oms[o], e.size * 4, np.float32).reshape(e.shape)
            np.testing.assert_allclose(got, e, rtol=1e-6, atol=1e-7)
    assert c.query_rc(Q_CURRENT_NATIVE_INPUT_ATTR)[0] == SUCC


def test_static_model_shapes(emu, make_ctx):
    c = make_ctx(samples.tiny_relu())
    a = c.in_attr(0)
    assert api().rknn_set_input_shapes(c.h, 1, C.byref(a)) == SUCC
    a.dims[1] = 3
    assert api().rknn_set_input_shapes(c.h, 1, C.byref(a)) == PARAM_INVALID


# ---- async ------------------------------------------------------------------------------------

@pytest.mark.parametrize("chip", ["RK3588", "RK3566"])
def test_async_returns_previous_frame(emu, make_ctx, chip):
    c = make_ctx(samples.tiny_relu(target=chip), flags=FLAG_ASYNC, platform=chip)
    ext, oext = RunExtend(), OutputExtend()
    c.inputs_set([np.float32([[1, 2]])])
    c.run(ext)
    assert ext.frame_id == 1
    (y,) = c.outputs_get(extend=oext)
    assert y.tolist() == [[0, 0]] and oext.frame_id == 0       # no previous frame yet
    c.inputs_set([np.float32([[3, -4]])])
    c.run(ext)
    assert ext.frame_id == 2
    (y,) = c.outputs_get(extend=oext)
    assert y.tolist() == [[1, 2]] and oext.frame_id == 1
    c.inputs_set([np.float32([[5, 6]])])
    c.run()
    (y,) = c.outputs_get(extend=oext)
    assert y.tolist() == [[3, 0]] and oext.frame_id == 2
    sync = make_ctx(samples.tiny_relu(target=chip), platform=chip)
    sync.inputs_set([np.float32([[1, 2]])])
    sync.run()
    sync.run()
    (y,) = sync.outputs_get(extend=oext)
    assert y.tolist() == [[1, 2]] and oext.frame_id == 2


def test_run_extend_non_block_and_wait(emu, make_ctx):
    c = make_ctx(samples.tiny_relu())
    c.inputs_set([np.float32([[1, 2]])])
    ext = RunExtend()
    ext.non_block = 1
    assert c.run_rc(ext) == FAIL
    assert api().rknn_wait(c.h, None) == FAIL
    assert api().rknn_wait(777, None) == CTX_INVALID


# ---- dup / shared weights ---------------------------------------------------------------------

@pytest.mark.parametrize("chip", ["RK3588", "RK3566"])
def test_dup_context_shares_weights(emu, make_ctx, chip):
    lib = api()
    model = samples.classifier(target=chip)
    c = make_ctx(model, platform=chip)
    h2 = C.c_uint64()
    assert lib.rknn_dup_context(C.byref(C.c_uint64(c.h)), C.byref(h2)) == SUCC
    d = Ctx.wrap(h2.value, model)
    img = np.random.default_rng(22).integers(0, 256, (1, 224, 224, 3), dtype=np.uint8)
    c.inputs_set([img])
    c.run()
    ref = c.outputs_get()[0]
    ms = d.query(6)
    assert ms.total_dma_allocated_size < c.query(6).total_dma_allocated_size   # no weight copy
    c.close()                                        # the dup outlives its source
    d.inputs_set([img])
    d.run()
    np.testing.assert_array_equal(d.outputs_get()[0], ref)
    d.close()
    assert lib.rknn_dup_context(None, C.byref(h2)) == PARAM_INVALID
    assert lib.rknn_dup_context(C.byref(C.c_uint64(5)), C.byref(h2)) == CTX_INVALID


def test_share_weight_mem(emu, make_ctx):
    model = samples.classifier()
    c = make_ctx(model)
    ext = InitExtend()
    ext.ctx = c.h
    s = make_ctx(model, flags=FLAG_SHARE_WEIGHT, extend=ext)
    img = np.random.default_rng(23).integers(0, 256, (1, 224, 224, 3), dtype=np.uint8)
    for x in (c, s):
        x.inputs_set([img])
        x.run()
    np.testing.assert_array_equal(s.outputs_get()[0], c.outputs_get()[0])
    ext.ctx = 424242
    lib = api()
    h = C.c_uint64()
    assert lib.rknn_init(C.byref(h), model, len(model), FLAG_SHARE_WEIGHT, C.byref(ext)) == CTX_INVALID
    assert lib.rknn_init(C.byref(h), model, len(model), FLAG_SHARE_WEIGHT, None) == PARAM_INVALID


# ---- threads ------------------------------------------------------------------------------------

def test_runs_on_different_contexts_overlap(emu, make_ctx):
    ctxs = [make_ctx(samples.tiny_relu()) for _ in range(4)]
    for c in ctxs:
        c.inputs_set([np.float32([[1, 2]])])
    emu.set_npu_time_us(100_000)
    emu.reset_counters()
    errs = []

    def work(c):
        rc = c.run_rc()
        if rc:
            errs.append(rc)

    t0 = time.perf_counter()
    ts = [threading.Thread(target=work, args=(c,)) for c in ctxs]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    dt = time.perf_counter() - t0
    k = emu.counters()
    assert not errs and k["runs"] == 4 and k["runs_in_flight"] == 0
    assert k["peak_runs_in_flight"] >= 2
    assert dt < 0.35                                  # not 4 x 100 ms in a row


def test_calls_on_one_context_serialize(emu, make_ctx):
    c = make_ctx(samples.tiny_relu())
    c.inputs_set([np.float32([[1, 2]])])
    emu.set_npu_time_us(20_000)
    emu.reset_counters()
    ts = [threading.Thread(target=c.run) for _ in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    k = emu.counters()
    assert k["runs"] == 4 and k["peak_runs_in_flight"] == 1


def test_destroy_while_running(emu):
    lib = api()
    c = Ctx(samples.tiny_relu())
    c.inputs_set([np.float32([[1, 2]])])
    emu.set_npu_time_us(150_000)
    res = []
    t = threading.Thread(target=lambda: res.append(c.run_rc()))
    t.start()
    time.sleep(0.05)
    base = emu.counters()["live_contexts"]
    assert lib.rknn_destroy(c.h) == SUCC               # while the run is in flight
    assert emu.counters()["live_contexts"] == base - 1
    assert lib.rknn_run(c.h, None) == CTX_INVALID
    t.join()
    assert res == [SUCC]
    c.h = 0


def test_threads_hammer_registry(emu):
    """init/query/run/destroy from 6 threads at once: no crash, counters balance."""
    base = emu.counters()
    model = samples.tiny_relu()
    errs = []

    def work():
        for _ in range(30):
            try:
                c = Ctx(model)
                c.inputs_set([np.float32([[1, -1]])])
                c.run()
                assert c.outputs_get()[0].tolist() == [[1, 0]]
                m = c.create_mem(64)
                c.close()
                assert api().rknn_destroy_mem(c.h, m) in (CTX_INVALID, PARAM_INVALID)
            except Exception as e:           # pragma: no cover - reported below
                errs.append(e)

    ts = [threading.Thread(target=work) for _ in range(6)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errs
    k = emu.counters()
    assert k["live_contexts"] == base["live_contexts"]
    assert k["live_mems"] == base["live_mems"]
    assert k["live_output_buffers"] == base["live_output_buffers"]


# ---- controls -----------------------------------------------------------------------------------

def test_injection(emu, make_ctx):
    c = make_ctx(samples.tiny_relu())
    c.inputs_set([np.float32([[1, 2]])])
    emu.inject_error("rknn_run", 2, "RKNN_ERR_TIMEOUT")
    assert emu.pending_injections == 1
    assert c.run_rc() == SUCC
    assert c.run_rc() == TIMEOUT
    assert c.run_rc() == SUCC and emu.pending_injections == 0
    emu.inject_error("rknn_create_mem", 1, -4)
    assert not api().rknn_create_mem(c.h, 16)
    c.create_mem(16)                                   # the next call works again
    with emu.injected("rknn_query", 1, -7):
        assert c.query_rc(0)[0] == CTX_INVALID
    emu.inject_error("rknn_init", 1, -6)
    emu.clear_injections()
    assert emu.pending_injections == 0
    with pytest.raises(ValueError):
        emu.inject_error("rknn_nope", 1, -1)
    with pytest.raises(ValueError):
        emu.inject_error("rknn_run", 0, -1)
    with pytest.raises(ValueError):
        emu.inject_error("rknn_run", 1, "RKNN_ERR_NOPE")


def test_counters_and_reset(emu, make_ctx):
    c = make_ctx(samples.tiny_relu())
    emu.reset_counters()
    c.inputs_set([np.float32([[1, 2]])])
    c.run()
    c.outputs_get()
    k = emu.counters()
    assert k["bytes_in"] == 8 and k["bytes_out"] == 8 and k["runs"] == 1
    assert k["bytes_copied"] == 16 and k["live_contexts"] >= 1
    emu.reset_counters()
    k = emu.counters()
    assert k["bytes_copied"] == 0 and k["runs"] == 0 and k["peak_runs_in_flight"] == 0
    assert k["live_contexts"] >= 1


def test_npu_time_control(emu, make_ctx, monkeypatch):
    c = make_ctx(samples.tiny_relu())
    c.inputs_set([np.float32([[1, 2]])])
    assert emu.npu_time_us == 0
    emu.set_npu_time_us(30_000)
    t0 = time.perf_counter()
    c.run()
    assert time.perf_counter() - t0 >= 0.03
    monkeypatch.setenv("RKNN_EMU_NPU_TIME_US", "1234")
    emu.set_npu_time_us(None)
    assert emu.npu_time_us == 1234


def test_exports_every_function(emu):
    lib = api()
    names = [f["name"] if isinstance(f, dict) else f for f in
             json.loads((DATA / "rknn_api_v2.json").read_text())["functions"]]
    assert len(names) >= 35
    for n in names:
        assert hasattr(lib, n), n
    assert emu.version


# ---- custom ops ------------------------------------------------------------------------------------

def test_custom_op(emu, make_ctx):
    lib = api()
    model = samples.custom_op_model()
    c = make_ctx(model)
    x = np.linspace(-3, 3, 16, dtype=np.float32).reshape(1, 16)
    c.inputs_set([x])
    assert c.run_rc() == FAIL                          # not registered yet
    calls = {"init": 0, "compute": 0, "destroy": 0, "alpha": None}

    def init(op_ctx, ins, n_in, outs, n_out):
        calls["init"] += 1
        op_ctx.contents.priv_data = 1234
        return 0

    def compute(op_ctx, ins, n_in, outs, n_out):
        calls["compute"] += 1
        assert n_in == 1 and n_out == 1 and op_ctx.contents.priv_data == 1234
        a = CustomOpAttr()
        lib.rknn_custom_op_get_op_attr(op_ctx, b"alpha", C.byref(a))
        calls["alpha"] = (a.dtype, a.n_elems, C.cast(a.data, C.POINTER(C.c_float))[0])
        lib.rknn_custom_op_get_op_attr(op_ctx, b"missing", C.byref(a))
        assert a.n_elems == 0 and not a.data
        t_in, t_out = ins[0], outs[0]
        n = t_in.attr.n_elems
        src = np.ctypeslib.as_array(C.cast(t_in.mem.virt_addr + t_in.mem.offset,
                                           C.POINTER(C.c_float)), (n,))
        dst = np.ctypeslib.as_array(C.cast(t_out.mem.virt_addr + t_out.mem.offset,
                                           C.POINTER(C.c_float)), (n,))
        dst[:] = 1.0 / (1.0 + np.exp(-src))
        return 0

    def destroy(op_ctx):
        calls["destroy"] += 1
        return 0

    cb_init, cb_compute, cb_destroy = CUSTOM_CB(init), CUSTOM_CB(compute), CUSTOM_DESTROY(destroy)
    op = CustomOp()
    op.version, op.target, op.op_type = 1, 1, b"cstSigmoid"
    op.init, op.compute, op.destroy = cb_init, cb_compute, cb_destroy
    assert lib.rknn_register_custom_ops(c.h, C.byref(op), 1) == SUCC
    assert lib.rknn_register_custom_ops(c.h, C.byref(op), 1) == PARAM_INVALID   # twice
    c.run()
    c.run()
    (y,) = c.outputs_get()
    np.testing.assert_allclose(y, 1.0 / (1.0 + np.exp(-x)) + 1.0, rtol=1e-6)
    assert calls["init"] == 1 and calls["compute"] == 2
    assert calls["alpha"] == (F32, 1, 1.0)
    c.close()
    assert calls["destroy"] == 1
    gpu = CustomOp()
    gpu.target, gpu.op_type, gpu.compute = 2, b"cstSigmoid", cb_compute
    c2 = make_ctx(model)
    assert lib.rknn_register_custom_ops(c2.h, C.byref(gpu), 1) == FAIL
    assert lib.rknn_register_custom_ops(c2.h, None, 1) == PARAM_INVALID
    lib.rknn_custom_op_get_op_attr(None, b"alpha", None)           # no crash
    c3 = make_ctx(samples.custom_op_model(target="RV1106"), platform="RV1106")
    assert lib.rknn_register_custom_ops(c3.h, C.byref(op), 1) == FAIL


@pytest.mark.parametrize("chip", ["RK3588", "RK3566", "RV1106"])
def test_controls_per_platform(emu, make_ctx, chip):
    """NPU time, counters, injection and async on each personality (zero-copy flow, which
    every chip has)."""
    flags = FLAG_ASYNC if chip != "RV1106" else 0
    c = make_ctx(samples.tiny_relu(target=chip), flags=flags, platform=chip)
    assert emu.context_platform(c.h) == chip
    ia, oa = c.in_attr(0), c.out_attr(0)
    im, om = c.create_mem(8), c.create_mem(8)
    assert c.set_io_mem(im, ia) == SUCC and c.set_io_mem(om, oa) == SUCC
    x, y = mem_view(im, 8, np.float32), mem_view(om, 8, np.float32)
    emu.reset_counters()
    emu.set_npu_time_us(20_000)
    x[:] = [-1, 1]
    t0 = time.perf_counter()
    c.run()
    assert time.perf_counter() - t0 >= 0.02
    assert y.tolist() == [0, 1]
    k = emu.counters()
    assert k["runs"] == 1 and k["syncs"] == 2 and k["bytes_synced"] == 16 and k["bytes_in"] == 0
    emu.inject_error("rknn_run", 1, "RKNN_ERR_DEVICE_UNAVAILABLE")
    assert c.run_rc() == -3
    emu.inject_error("rknn_mem_sync", 1, -5)
    assert c.sync(im, 1) == PARAM_INVALID and c.sync(im, 1) == SUCC
