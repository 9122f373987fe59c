"""asyncio: ``await model.run_async(...)`` / ``await pool.run_async(...)`` give what run
gives, never block the event loop on the NPU, and raise errors and cancellation as asyncio
does."""

from __future__ import annotations

import asyncio
import time

import numpy as np
import pytest

import rknnx


def test_model_run_async_equals_run_and_leaves_the_loop_free(models, emu):
    m = models.open("classifier", "RK3588")
    # 100 ms a run: 20 ms left the loop 2 ticks of 2 ms on 3.13t (PYTHON_GIL=0) in runs of
    # tests/facade with -n 2 on the loaded machine; a loop blocked by the run gets 0 or 1
    emu.set_npu_time_us(100000)
    img = np.random.default_rng(2).integers(0, 256, (1, 224, 224, 3), dtype=np.uint8)
    ref, = m.run(img)

    async def main():
        ticks = 0

        async def ticker():
            nonlocal ticks
            while True:
                await asyncio.sleep(0.002)
                ticks += 1

        t = asyncio.ensure_future(ticker())
        out, = await m.run_async(img)
        t.cancel()
        return out, ticks

    out, ticks = asyncio.run(main())
    np.testing.assert_array_equal(out, ref)
    assert ticks >= 3            # the loop ran while the NPU did (100 ms against 2 ms ticks)


def test_errors_and_cancellation_behave_as_in_asyncio(models, emu):
    m = models.open("classifier", "RK3588")

    async def wrong():
        await m.run_async(np.zeros((1, 5, 5, 3), np.uint8))

    with pytest.raises(ValueError, match="does not match the model's"):
        asyncio.run(wrong())
    emu.set_npu_time_us(50000)
    img = np.zeros((1, 224, 224, 3), np.uint8)

    async def cancelled():
        task = asyncio.ensure_future(m.run_async(img))
        await asyncio.sleep(0.005)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return True

    assert asyncio.run(cancelled())
    time.sleep(0.1)               # the run already on the NPU ends; the model goes on
    emu.set_npu_time_us(0)
    assert m.run(img)[0].shape == (1, 1000)


def test_pool_run_async_keeps_every_answer(models, emu):
    m = models.open("classifier", "RK3588")
    rng = np.random.default_rng(5)
    frames = [rng.integers(0, 256, (1, 224, 224, 3), dtype=np.uint8) for _ in range(12)]
    refs = [m.run(f)[0] for f in frames]
    emu.set_npu_time_us(2000)
    with rknnx.Pool(m, workers=3, queue_size=2) as pool:
        async def main():
            return await asyncio.gather(*(pool.run_async(f) for f in frames))

        outs = asyncio.run(main())
    for out, ref in zip(outs, refs):
        np.testing.assert_array_equal(out[0], ref)


def test_pool_run_async_cancelled_before_it_runs_is_dropped(models, emu):
    m = models.open("classifier", "RK3588")
    img = np.zeros((1, 224, 224, 3), np.uint8)
    emu.set_npu_time_us(30000)
    with rknnx.Pool(m, workers=1, queue_size=4) as pool:
        async def main():
            tasks = [asyncio.ensure_future(pool.run_async(img)) for _ in range(4)]
            await asyncio.sleep(0.005)
            tasks[-1].cancel()
            done = await asyncio.gather(*tasks, return_exceptions=True)
            return done

        done = asyncio.run(main())
    assert isinstance(done[-1], asyncio.CancelledError)
    assert all(isinstance(d, list) for d in done[:-1])
