"""rknnx.Pool: results equal Model.run in submission order, contexts share the model's
weights and run at the same time (the emulator's peak of runs in flight), back-pressure,
shutdown with work in flight, errors at submit."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

import rknnx
from rknnx import lowlevel as ll

from helpers import user_inputs


def frames_for(m, n, seed=0):
    rng = np.random.default_rng(seed)
    return [tuple(user_inputs(m, rng)) for _ in range(n)]


@pytest.mark.parametrize("platform", ["RK3588", "RK3566", "RV1106"])
def test_map_gives_run_results_in_order(models, platform):
    m = models.open("multi_io", platform)
    frames = frames_for(m, 12)
    want = [m.run(*f) for f in frames]
    with rknnx.Pool(m, workers=3) as pool:
        got = list(pool.map(frames))
        raw = pool.submit(*frames[0], raw=True).result()
    assert len(got) == len(want)
    for g, w in zip(got, want):
        for a, b in zip(g, w):
            np.testing.assert_array_equal(a, b)
    for a, b in zip(raw, m.run(*frames[0], raw=True)):
        np.testing.assert_array_equal(a, b)


def test_workers_share_weights_and_are_pinned(models):
    m = models.open("detector", "RK3588")
    own = m._ctx.query(ll.QueryCmd.MEM_SIZE)
    with rknnx.Pool(m, workers=3) as pool:
        assert pool._masks_of == [ll.CoreMask.CORE_0, ll.CoreMask.CORE_1, ll.CoreMask.CORE_2]
        for ctx in pool._contexts:
            size = ctx.query(ll.QueryCmd.MEM_SIZE)
            assert size.total_dma_allocated_size == own.total_dma_allocated_size - \
                own.total_weight_size
    one_core = models.open("tiny_relu", "RK3566")
    with rknnx.Pool(one_core, workers=2) as pool:
        assert pool._masks_of is None
    with pytest.raises(rknnx.NotSupportedError, match="core_masks: rknn_set_core_mask is not "
                                                       "supported on RK3566"):
        rknnx.Pool(one_core, workers=2, core_masks=[ll.CoreMask.CORE_0])


def test_workers_run_at_the_same_time(models, emu):
    m = models.open("tiny_relu", "RK3588")
    emu.set_npu_time_us(30_000)
    emu.reset_counters()
    x = np.ones((1, 2), np.float32)
    with rknnx.Pool(m, workers=3) as pool:
        for out in pool.map([x] * 9):
            np.testing.assert_array_equal(out[0], x)
    c = emu.counters()
    assert c["runs"] == 9
    assert c["peak_runs_in_flight"] >= 2, c      # the GIL is not held across rknn_run


def test_back_pressure(models, emu):
    m = models.open("tiny_relu")
    emu.set_npu_time_us(100_000)
    x = np.ones((1, 2), np.float32)
    with rknnx.Pool(m, workers=1, queue_size=1) as pool:
        first = pool.submit(x)                   # taken by the worker
        time.sleep(0.02)
        pool.submit(x)                           # waits in the queue
        done = threading.Event()

        def third():
            pool.submit(x).result()
            done.set()

        t = threading.Thread(target=third)
        t.start()
        time.sleep(0.03)
        assert not first.done() and not done.is_set()    # the third submit is blocked
        t.join()
        assert first.done() and done.is_set()


def test_shutdown_with_work_in_flight(models, emu):
    from helpers import live, model_bytes

    before = live(emu)
    m = rknnx.Model(model_bytes("tiny_relu"))
    emu.set_npu_time_us(50_000)
    x = np.ones((1, 2), np.float32)
    pool = rknnx.Pool(m, workers=1, queue_size=4)
    futures = [pool.submit(x) for _ in range(4)]
    time.sleep(0.01)
    pool.shutdown(cancel_pending=True)
    assert futures[0].result()[0].tolist() == [[1.0, 1.0]]     # the running one finished
    assert all(f.cancelled() for f in futures[1:])
    with pytest.raises(RuntimeError, match="submit on a Pool that is shut down"):
        pool.submit(x)
    pool.shutdown()                                                  # a second one does nothing
    m.close()
    assert live(emu) == before


def test_bad_frames_raise_at_submit(models):
    m = models.open("multi_io")
    with rknnx.Pool(m, workers=2) as pool:
        with pytest.raises(ValueError, match=r"the model has 3 input\(s\)"):
            pool.submit(np.zeros((1, 32, 32, 3), np.uint8))
    with pytest.raises(ValueError, match="workers must be an int >= 1; got 0"):
        rknnx.Pool(m, workers=0)


def test_closing_the_model_shuts_its_pools(emu):
    from helpers import live, model_bytes

    before = live(emu)
    m = rknnx.Model(model_bytes("tiny_relu"))
    pool = rknnx.Pool(m, workers=2)
    m.close()
    with pytest.raises(RuntimeError, match="shut down"):
        pool.submit(np.ones((1, 2), np.float32))
    assert live(emu) == before


@pytest.mark.needs("rknn_register_custom_ops")
def test_workers_get_the_models_custom_ops(models):
    m = models.open("custom_op_model")

    @rknnx.custom_op("cstSigmoid")
    def sigmoid(inputs, outputs):
        np.divide(1.0, 1.0 + np.exp(-inputs[0]), out=outputs[0])

    m.register_custom_ops(sigmoid)
    x = np.linspace(-2, 2, 16, dtype=np.float32).reshape(m.inputs[0].shape)
    want = m.run(x)
    with rknnx.Pool(m, workers=2) as pool:
        for got in pool.map([x] * 4):
            np.testing.assert_array_equal(got[0], want[0])


def test_pool_runs_leave_the_models_frame_id_and_perf(models):
    m = models.open("tiny_relu")
    x = np.zeros((1, 2), np.float32)
    m.run(x)
    m.run(x)
    before = (m.frame_id, m.perf)
    with rknnx.Pool(m, workers=2) as pool:
        list(pool.map([x] * 5))
    assert (m.frame_id, m.perf.run_us >= 0) == (before[0], True)


def test_a_pool_nobody_holds_is_collected_and_its_threads_stop(emu):
    import gc

    from helpers import live, model_bytes

    before, threads = live(emu), threading.active_count()
    m = rknnx.Model(model_bytes("tiny_relu"))
    pool = rknnx.Pool(m, workers=2)
    pool.submit(np.zeros((1, 2), np.float32)).result()
    with pytest.warns(ResourceWarning, match="unclosed rknnx.Pool of 2 workers"):
        del pool
        gc.collect()
    m.close()
    deadline = time.monotonic() + 5
    while threading.active_count() > threads and time.monotonic() < deadline:
        time.sleep(0.05)
    assert threading.active_count() == threads
    assert live(emu) == before
