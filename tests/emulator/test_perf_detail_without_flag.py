"""RKNN_QUERY_PERF_DETAIL on a context created without RKNN_FLAG_COLLECT_PERF_MASK
succeeds (the vendor's custom-op example makes that query with flags 0 and exits on
failure) with a runtime-owned string saying per-layer timing was not collected; with the
flag, the operator table comes after a run as before."""

import ctypes as C

import numpy as np

from emu_capi import (FAIL, FLAG_PERF, Q_PERF_DETAIL, SUCC, emu, make_ctx,
                                 samples)

__all__ = ["emu", "make_ctx"]


def detail(c):
    rc, d = c.query_rc(Q_PERF_DETAIL)
    return rc, (C.string_at(d.perf_data, d.data_len).decode() if rc == SUCC else None)


def test_without_flag_before_and_after_a_run(emu, make_ctx):
    c = make_ctx(samples.tiny_int8_add())
    for _ in range(2):
        rc, text = detail(c)
        assert rc == SUCC
        assert "per-layer timing was not collected" in text
        assert "RKNN_FLAG_COLLECT_PERF_MASK" in text
        c.inputs_set([np.zeros((1, 4, 8, 8), np.float32)] * 2)
        c.run()


def test_with_flag_unchanged(emu, make_ctx):
    c = make_ctx(samples.tiny_int8_add(), flags=FLAG_PERF)
    assert detail(c)[0] == FAIL                      # no table before a run
    c.inputs_set([np.zeros((1, 4, 8, 8), np.float32)] * 2)
    c.run()
    rc, text = detail(c)
    assert rc == SUCC and "Time(us)" in text and "not collected" not in text
