"""Emulator: contexts beside each other: async frames, non-blocking runs, dup and shared
weights, runs on different contexts overlapping, calls on one context serialized, destroy
while running."""

import ctypes as C
import pathlib
import threading
import time

import numpy as np
import pytest


from emu_capi import (CTX_INVALID, FAIL, FLAG_ASYNC, FLAG_SHARE_WEIGHT, PARAM_INVALID, SUCC,
                                 Ctx, InitExtend, OutputExtend, RunExtend, api,
                                 emu, make_ctx, samples)

__all__ = ["emu", "make_ctx"]

ROOT = pathlib.Path(__file__).resolve().parents[2]


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

    ts = [threading.Thread(target=work, args=(c,)) for c in ctxs]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    k = emu.counters()
    assert not errs and k["runs"] == 4 and k["runs_in_flight"] == 0
    # the emulator's own count of runs inside the NPU at once, not a wall-clock time that a
    # loaded machine can stretch: two 100 ms runs were in flight together
    assert k["peak_runs_in_flight"] >= 2


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
