"""asyncio for the facade: ``await model.run_async(...)`` and ``await pool.run_async(...)``.

The event loop never waits on the NPU: a model's run goes to a worker thread of the loop's
default executor (the binding releases the GIL around every C call, so the loop's thread
runs meanwhile); a pool's frame goes to the pool's own workers and the loop awaits its
future.  As in asyncio, an error of the run is raised by the ``await``, and cancelling the
awaiting task raises CancelledError there at once; a frame a pool has not started is
dropped, one already on the NPU runs to its end (an NPU run cannot be interrupted) and its
result is discarded.
"""

from __future__ import annotations

import asyncio
import functools
from typing import Any, List

import numpy as np

__all__ = ["model_run_async", "pool_run_async"]


async def model_run_async(model, *inputs, **options) -> List[np.ndarray]:
    """``model.run(*inputs, **options)`` on a worker thread, awaited."""
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(None, functools.partial(model.run, *inputs, **options))


async def pool_run_async(pool, *inputs, **options) -> List[Any]:
    """``pool.submit(*inputs, **options)``, its future awaited; a full queue is waited for
    on a worker thread, not on the loop."""
    loop = asyncio.get_running_loop()
    if pool.queue_full():
        future = await loop.run_in_executor(
            None, functools.partial(pool.submit, *inputs, **options))
    else:
        future = pool.submit(*inputs, **options)
    # cancelling the awaiting task cancels the pool's future: a frame not yet taken by a
    # worker is dropped
    return await asyncio.wrap_future(future, loop=loop)
