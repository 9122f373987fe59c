"""Emulator: its own controls (error injection, counters, simulated NPU time, personalities),
the exported functions, and a custom operator through the C API."""

import ctypes as C
import json
import pathlib
import time

import numpy as np
import pytest

from helpers import DATA

from emu_capi import (CTX_INVALID, CUSTOM_CB, CUSTOM_DESTROY, F32, FAIL, FLAG_ASYNC,
                                 PARAM_INVALID, SUCC, TIMEOUT, CustomOp, CustomOpAttr,
                                 api, emu, make_ctx, mem_view, samples)

__all__ = ["emu", "make_ctx"]

ROOT = pathlib.Path(__file__).resolve().parents[2]


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


def test_npu_work_counters(emu, make_ctx):
    """npu_ns: wall time of the NPU-side work of rknn_run (the simulated NPU time included);
    npu_cpu_ns: its thread CPU time, counted only while the accounting is on."""
    c = make_ctx(samples.tiny_relu())
    c.inputs_set([np.float32([[1, 2]])])
    emu.reset_counters()
    emu.set_npu_time_us(2000)
    try:
        c.run()
    finally:
        emu.set_npu_time_us(None)
    k = emu.counters()
    assert k["npu_ns"] >= 2_000_000 and k["npu_cpu_ns"] == 0
    assert emu.set_npu_cpu_accounting(True) is False
    try:
        c.run()
        assert emu.counters()["npu_cpu_ns"] > 0
    finally:
        assert emu.set_npu_cpu_accounting(False) is True
    emu.reset_counters()
    assert emu.counters()["npu_ns"] == emu.counters()["npu_cpu_ns"] == 0


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
