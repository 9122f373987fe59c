"""The emulator models the chip's NPU cores (issue 27, item 5): at most the core count of
one process's runs do their NPU-side work at once (the emulator's peak of runs in flight),
a context pinned to a core waits for that core, and so a Pool's throughput stops rising at
the core count, as on a board.  RK3588 has three cores, RK3576 two, RK3566 one."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

import rknnx
from rknnx import lowlevel as ll

X = np.ones((1, 2), np.float32)


def _pool_peak(m, emu, workers, frames, **kw):
    emu.reset_counters()
    with rknnx.Pool(m, workers=workers, **kw) as pool:
        for out in pool.map([X] * frames):
            np.testing.assert_array_equal(out[0], X)
    c = emu.counters()
    assert c["runs"] == frames
    return c["peak_runs_in_flight"]


@pytest.mark.parametrize("platform, cores", [("RK3588", 3), ("RK3576", 2), ("RK3566", 1)])
def test_runs_in_flight_never_exceed_the_cores(models, emu, platform, cores):
    m = models.open("tiny_relu", platform)
    emu.set_npu_time_us(20_000)
    # more workers than cores, each with its own context: the extra ones wait for a core
    assert _pool_peak(m, emu, 5, 20) == cores


def test_unpinned_contexts_take_any_free_core(models, emu):
    """Contexts of core mask AUTO (threads with a session each): three run at once on
    RK3588, never four."""
    m = models.open("tiny_relu", "RK3588")
    emu.set_npu_time_us(20_000)
    emu.reset_counters()
    sessions = [m.zero_copy() for _ in range(4)]
    start = threading.Barrier(4)

    def work(s):
        start.wait()
        for _ in range(5):
            s.run_arrays(X)

    threads = [threading.Thread(target=work, args=(s,)) for s in sessions]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for s in sessions:
        s.close()
    c = emu.counters()
    assert c["runs"] == 20 and c["peak_runs_in_flight"] == 3, c


def test_a_pinned_context_waits_for_its_core(models, emu):
    """Two workers pinned to core 0 run one at a time, though cores 1 and 2 are free; pinned
    to cores 0 and 1 they overlap; a context on cores 0-2 excludes every other run."""
    m = models.open("tiny_relu", "RK3588")
    emu.set_npu_time_us(20_000)
    assert _pool_peak(m, emu, 2, 8, core_masks=[ll.CoreMask.CORE_0]) == 1
    assert _pool_peak(m, emu, 2, 8, core_masks=[ll.CoreMask.CORE_0, ll.CoreMask.CORE_1]) == 2
    assert _pool_peak(m, emu, 3, 9, core_masks=[ll.CoreMask.CORE_0_1_2, ll.CoreMask.CORE_0,
                                                ll.CoreMask.CORE_1]) <= 2
    emu.reset_counters()
    with rknnx.Pool(m, workers=2, core_masks=[ll.CoreMask.CORE_0_1_2]) as pool:
        list(pool.map([X] * 6))
    assert emu.counters()["peak_runs_in_flight"] == 1


def test_pool_throughput_flattens_at_the_core_count(models, emu):
    """With the NPU time the limit (50 ms a run, the host's work negligible), 3 workers on
    RK3588 take about a third of 1 worker's time and a 4th adds nothing: 12 frames take
    4 rounds of 50 ms with 3 or 4 workers (not 3 rounds with 4)."""
    m = models.open("tiny_relu", "RK3588")
    emu.set_npu_time_us(50_000)

    def seconds(workers):
        with rknnx.Pool(m, workers=workers) as pool:
            t0 = time.perf_counter()
            list(pool.map([X] * 12))
            return time.perf_counter() - t0

    three, four = seconds(3), seconds(4)
    assert three >= 0.2 - 0.01 and four >= 0.2 - 0.01, (three, four)   # 4 rounds of 50 ms
