"""Model.run's fast path with its out= check in Context.infer's C (fast_only): a bad `out`
is still named before a bad input, and the list returned holds the arrays the runtime
wrote (the items of `out` as taken before the run), not what another thread put in `out`
during it (found by a review of the change; both failed before the fix)."""

from __future__ import annotations

import re
import threading
import time

import numpy as np
import pytest

from helpers import user_inputs


def test_bad_out_is_reported_before_a_bad_input(models, emu):
    """Before 173ea39 a fast-path call (plain ndarrays) checked out= first (check_out in
    GeneralRunner.out_arrays, before ctx.infer): a wrong out was named even when an input
    was wrong too, and nothing was converted.  Now fast_only returns None and the full
    path's prepare_inputs raises the input's error first."""
    m = models.open("multi_io")
    xs = user_inputs(m, np.random.default_rng(8))
    want = m.run(*xs)
    out = [np.empty(w.shape, w.dtype) for w in want]
    bad_in = [xs[0].reshape(-1)[:-1]] + list(xs[1:])
    bad_out = [out[0].reshape(want[0].shape[1:])] + out[1:]
    with pytest.raises(ValueError, match=re.escape(
            f"out[0] must be a writable C-contiguous float32 array of shape "
            f"{want[0].shape}; got {want[0].shape[1:]} float32")):
        m.run(*bad_in, out=bad_out)


def test_returned_list_is_the_arrays_written(models, emu):
    """Before 173ea39 the fast path returned a copy of the out list taken before the run
    (out_arrays: `out[:]` / check_out's list(out)), i.e. the arrays the runtime wrote.
    Now Model.run returns list(out) read *after* ctx.infer released the GIL: an element
    replaced by another thread during the run is returned though it was never written."""
    m = models.open("multi_io")
    xs = user_inputs(m, np.random.default_rng(8))
    want = m.run(*xs)
    out = [np.empty(w.shape, w.dtype) for w in want]
    written = out[0]
    other = np.full_like(out[0], -7)
    emu.set_npu_time_us(1_000_000)
    got = []
    t = threading.Thread(target=lambda: got.append(m.run(*xs, out=out)))
    t.start()
    time.sleep(0.5)                       # inside rknn_run, GIL released
    out[0] = other
    t.join(10)
    emu.set_npu_time_us(None)
    assert got
    # (were the replacement early, the run would have written `other`: it would pass)
    holds_outputs = np.array_equal(got[0][0], want[0])
    assert holds_outputs, "run returned out[0] as replaced during the run, not the " \
        f"array written (it still holds {float(got[0][0].flat[0])}; written: " \
        f"{got[0][0] is written or np.array_equal(written, want[0])})"
