"""``rknnx.Pool``: run frames on several contexts of one model in parallel.

Each worker is a thread with a runner of its own (``rknnx._runner``: a context of the
model sharing its weights, or on chips without the general API a zero-copy session),
made by the model and pinned to an NPU core on the chips that have several.  Frames go
through a bounded queue (``submit`` blocks when it is full: back-pressure instead of
unbounded memory), results come back as futures, and :meth:`Pool.map` yields them in
submission order.  The GIL is released inside every runtime call, so the workers really
run at the same time.

The handoff is built on the C-level ``queue.SimpleQueue`` alone: the frames queue, a
queue of tokens that bounds it (one token per free place: ``submit`` takes one, a worker
gives it back when it takes the frame), and for each frame of :meth:`Pool.map` a one-item
queue its worker puts the outcome in; only :meth:`Pool.submit` makes a Future.
``queue.Queue`` and ``Future`` wait on ``threading.Condition`` (Python code around
several lock operations per wait), which on a free-threaded CPython cost a hundred
microseconds and more per frame (docs/wheels.md, "A Pool on 3.13t").
"""

from __future__ import annotations

import collections
import operator
import queue
import threading
import weakref
from concurrent.futures import CancelledError, Future
from typing import Any, Iterable, Iterator, List, Mapping, Optional, Sequence

import numpy as np

from rknnx import _guard
from rknnx import lowlevel as _ll
from rknnx._facts import as_core_mask
from rknnx._family import ContextFamily
from rknnx._lifetime import Closable
from rknnx.errors import NotSupportedError
from rknnx.platforms import npu_cores

__all__ = ["Pool"]

_STOP = object()
_STOP_NEVER = object()                 # a sentinel no queue ever holds (_drain_into)
_IDLE_CHECK_S = 0.5                    # how often an idle worker looks whether its pool lives
#: the single-core masks, in turn, that workers are pinned to on chips with several cores
_ONE_CORE = (_ll.CoreMask.CORE_0, _ll.CoreMask.CORE_1, _ll.CoreMask.CORE_2)


class _Job:
    """A frame queued: its prepared inputs and where its outcome goes (`future`: the Future
    of :meth:`Pool.submit`, or a :class:`_Ticket` of :meth:`Pool.map`)."""

    __slots__ = ("future", "inputs", "raw", "data_format")

    def __init__(self, future, inputs, raw, data_format):
        self.future, self.inputs, self.raw, self.data_format = future, inputs, raw, data_format


class _Ticket(queue.SimpleQueue):
    """Where the outcome of a frame of :meth:`Pool.map` goes: a queue that will hold one
    item, ``(outputs, exception)``, which the map waits for.  It has the four methods of
    a Future that a worker and :meth:`Pool.shutdown` call, without a Future's condition
    and its lock operations; a frame is ended exactly once (by the worker that took it, or
    by whoever drained it from the queue: a shutdown cancelling, a worker of a collected
    pool failing it)."""

    __slots__ = ()

    def set_running_or_notify_cancel(self) -> bool:
        return True                      # (only a drained frame is cancelled: never run)

    def set_result(self, result) -> None:
        self.put((result, None))

    def set_exception(self, exc: BaseException) -> None:
        self.put((None, exc))

    def cancel(self) -> bool:
        self.put((None, CancelledError()))
        return True


class _State:
    """What a pool's workers share with it (they hold this and a weak reference to the
    pool, never the pool): the role its worker threads play while they take frames (a
    thread-local mark that ends with the worker, never a thread id: ids are reused), and
    why the workers must stop taking frames (None while the pool runs)."""

    __slots__ = ("worker", "gone", "keep", "running", "lock", "made_in")

    def __init__(self):
        self.made_in = _guard.pid        # the process whose threads run the frames
        self.worker = _guard.Role()
        self.gone: Optional[str] = None
        # shutdown(wait=False): the pool, kept alive until its workers have run the frames
        # queued before it (a pool dropped right after must still finish them)
        self.keep: "Optional[Pool]" = None
        self.running = 0                 # workers not yet stopped
        self.lock = threading.Lock()

    def stopped(self) -> None:
        """A worker stops; the last one lets a pool kept by shutdown(wait=False) go."""
        with self.lock:
            self.running -= 1
            last = self.running == 0
        if last:
            self.keep = None


class _PoolFuture(Future):
    """A Future of a pool's frame; waiting for it from one of that pool's own workers (a
    custom op callback) is refused: the worker would wait for itself."""

    def __init__(self, pool: _State):
        super().__init__()
        self._pool = pool                # (Future's own state is `_state`)

    def _check_waiter(self) -> None:
        _check_waiter(self._pool)

    def result(self, timeout=None):
        if not self.done():
            self._check_waiter()
        return super().result(timeout)

    def exception(self, timeout=None):
        if not self.done():
            self._check_waiter()
        return super().exception(timeout)


def _check_waiter(state: _State) -> None:
    """RuntimeError if the calling thread is a worker of the pool of `state`: waiting for
    one of its frames, the worker would wait for itself; or if it runs in a child of fork:
    the workers that would end the frame are the parent's."""
    _guard.check_process("Pool", state.made_in)
    if state.worker.played_here():
        raise RuntimeError("a worker of a Pool (running a custom op callback) cannot "
                           "wait for a frame of the same Pool: it would wait for itself")


class Pool(Closable):
    """A pool of `workers` contexts of `model`, fed from threads.

    Parameters
    ----------
    model : rknnx.Model
        The model; it stays usable (and must stay open) while the pool runs.
    workers : int
        Number of contexts and threads (>= 1).
    core_masks : sequence of CoreMask, optional
        The core mask of each worker, in turn.  Default: one core per worker on RK3588
        (three cores) and RK3576 (two), none elsewhere.  Chips with one core refuse a mask
        (NotSupportedError).
    queue_size : int, optional
        Frames waiting at most (default ``2 * workers``); :meth:`submit` blocks beyond.

    Examples
    --------
    >>> with rknnx.Model("yolo.rknn") as model, rknnx.Pool(model, workers=3) as pool:  # doctest: +SKIP
    ...     for outputs in pool.map(frames):                   # in submission order
    ...         ...

    Attributes
    ----------
    model : rknnx.Model
        The model whose weights the workers share.
    workers : int
        The number of workers (contexts, one thread each).
    core_masks : tuple
        The core mask each worker runs on (None: the runtime's choice).

    Raises
    ------
    ValueError
        `workers` < 1, a closed model, an empty `core_masks`.
    NotSupportedError
        `core_masks` on a chip with one NPU core.
    """

    _kind = "Pool"

    def __init__(self, model, workers: int = 3, *, core_masks: Optional[Sequence[Any]] = None,
                 queue_size: Optional[int] = None):
        # a second __init__ would start a second set of workers over the first one's queue
        # and leave the first runners unclosed: refused before anything changes (as Model)
        if "_queue" in vars(self):
            raise RuntimeError("Pool.__init__: a Pool is initialized once; make a new Pool")
        workers = _count(workers, "workers")
        if queue_size is not None:
            queue_size = _count(queue_size, "queue_size")
        if model.closed:
            raise ValueError("Pool on closed Model")
        self.model = model
        # the frames (and the workers' stops), and the queue's free places as tokens:
        # `submit` takes a token before it queues a frame and blocks while there is none,
        # a worker gives one back as it takes a frame (a stop takes no place)
        self._queue: "queue.SimpleQueue" = queue.SimpleQueue()
        self._queue_size = queue_size or 2 * workers
        self._places: "queue.SimpleQueue" = queue.SimpleQueue()
        for _ in range(self._queue_size):
            self._places.put(None)
        self._closed = True                # until the workers run (no warning for a failed init)
        self._state = _State()
        self._submit_lock = _guard.Lock(self)
        self._made_in = self._submit_lock.pid
        masks = self._masks(model, workers, core_masks)
        self._runners: List[Any] = []
        self._threads: List[threading.Thread] = []
        family = ContextFamily.of(model)  # the contexts of the model are its family's
        try:
            # the workers start with the family's lock held: a Model.close() that begins
            # meanwhile waits, then finds this pool among the family's and shuts it down
            with family.making("Pool"):
                self._start(family.runners(masks, core_masks is not None))
                family.register(self, pool=True)
        except BaseException:
            self._state.gone = "the Pool failed to start"
            for r in self._runners:
                r.close()
            raise

    def _start(self, runners: List[Any]) -> None:
        # the workers hold the queue and a weak reference to the pool, never the pool
        # itself: a pool nobody holds is collected, warns, and its workers stop
        self._runners = runners
        ref = weakref.ref(self)
        for k, runner in enumerate(runners):
            t = threading.Thread(target=_work, args=(ref, self._queue, self._places,
                                                     self._state, runner),
                                 daemon=True, name=f"rknnx-pool-{k}")
            with self._state.lock:
                self._state.running += 1
            try:
                t.start()
            except BaseException:
                self._state.stopped()
                raise
            self._threads.append(t)
        self._closed = False

    def _cancel_queued(self) -> None:
        """Cancel every frame still queued (their places back); the workers' stops, if
        queued already, stay queued.  A Ctrl-C loses nothing: each item taken is in `got`
        before control is back in Python (_drain_into), and the ending of what was taken
        (_end_drained) runs to its end, again if a Ctrl-C came in the middle of it, before
        that KeyboardInterrupt goes on."""
        got: list = []
        placed: list = []
        stopped: list = []
        try:
            _drain_into(self._queue, got)
        finally:
            caught = None
            while True:
                try:
                    self._end_drained(got, placed, stopped)
                    break
                except KeyboardInterrupt as exc:
                    caught = exc
            if caught is not None:
                raise caught

    def _end_drained(self, got: list, placed: list, stopped: list) -> None:
        """End the items _drain_into took: rerun after a Ctrl-C, each step is done once
        (the places given back and the stops queued again: each one C call, marked inside
        it in `placed` / `stopped`) or does no harm twice (a cancel: a Future's second one does
        nothing; a map's ticket gets a second item, which its map never reads)."""
        frames = [job for job in got if job is not _STOP]
        for job in frames:
            job.future.cancel()
        if len(placed) < len(frames):
            any(map(placed.append, map(self._places.put, [None] * len(frames))))
        stops = len(got) - len(frames)
        if len(stopped) < stops:
            any(map(stopped.append, map(self._queue.put, [_STOP] * stops)))

    @staticmethod
    def _masks(model, workers, core_masks) -> list:
        """The core mask of each worker (None: the runtime's choice)."""
        if core_masks is not None:
            try:
                masks = list(core_masks)
            except TypeError:
                raise TypeError(f"core_masks is a sequence of core masks, one per worker (or "
                                f"in turn); got {core_masks!r}") from None
            if not masks:
                raise ValueError("core_masks is empty; give one mask per worker (or in turn)")
            if not model.supports("rknn_set_core_mask"):
                raise NotSupportedError(
                    f"core_masks: rknn_set_core_mask is not supported on {model.chip} (one NPU "
                    "core)", None, "rknn_set_core_mask")
            return [as_core_mask(masks[k % len(masks)], "core_masks") for k in range(workers)]
        cores = npu_cores(model.chip)
        if cores == 1 or workers == 1:
            return [None] * workers
        return [_ONE_CORE[k % cores] for k in range(workers)]

    # -- feeding ---------------------------------------------------------------------------
    def _refusal_checks(self, what: str) -> None:
        """RuntimeError in a child of fork (the workers do not exist there), or in one of
        the pool's own workers (a custom op callback of a frame), which would wait for
        itself: what refuses submit, map, shutdown and close."""
        _guard.check_process(self, self._made_in)
        if self._state.worker.played_here():
            raise RuntimeError(f"{what}: called from a worker of the Pool (a custom op "
                               "callback of one of its frames), which would wait for itself")

    def submit(self, *inputs, raw: bool = False, data_format: Optional[str] = None) -> Future:
        """Queue one frame (the arguments of :meth:`rknnx.Model.run`); returns a Future of
        what ``model.run`` would return.  Blocks while the queue is full.

        The inputs are checked here, so a wrong frame raises at once (ValueError /
        TypeError, as ``model.run`` does) rather than through the future, and taken as
        they are now: an array of the caller's is copied, so the caller may write the
        next frame into the same buffer at once.

        Raises
        ------
        RuntimeError
            The pool is shut down; called from one of the pool's own workers (a custom op
            callback), or in a child of fork() on a pool of the parent (its workers do
            not exist there).
        TypeError
            `raw` is not True or False.
        """
        future = _PoolFuture(self._state)
        self._enqueue(inputs, raw, data_format, future)
        return future

    def _enqueue(self, inputs, raw, data_format, future) -> None:
        """Check and queue one frame whose outcome goes to `future` (submit's Future or a
        map's ticket); blocks while the queue is full."""
        self._refusal_checks("submit")
        if self._closed:                 # (the model's close shuts its pools down)
            raise RuntimeError("submit on a Pool that is shut down")
        if not (raw is True or raw is False):
            raise TypeError(f"raw must be True or False; got {raw!r}")
        prepared, shape_set = self.model.prepare_inputs(inputs, data_format)
        job = _Job(future, (_snapshot(prepared, inputs), shape_set), raw, data_format)
        lock = self._submit_lock
        lock.check("submit")
        # (the body of `with lock("submit")` of _guard.Lock, inlined: no generator-based
        # context manager made per frame)
        with lock.mutex:
            lock.holder = threading.get_ident()
            try:
                if self._closed:
                    raise RuntimeError("submit on a Pool that is shut down")
                _queue_frame(self._places, self._queue, job)
            finally:
                lock.holder = None

    async def run_async(self, *inputs, raw: bool = False,
                        data_format: Optional[str] = None) -> List[Any]:
        """``await``-able :meth:`submit`: the outputs of one frame, the event loop free
        meanwhile (a full queue is waited for on a worker thread, not on the loop).
        Errors raise at the ``await``; cancelling the awaiting task drops the frame if no
        worker has taken it (one on the NPU runs to its end, its result discarded).

        .. versionadded:: 0.1.0
        """
        from rknnx._aio import pool_run_async

        return await pool_run_async(self, *inputs, raw=raw, data_format=data_format)

    def queue_full(self) -> bool:
        """Whether :meth:`submit` would wait for room in the queue now."""
        return self._places.empty()

    def map(self, frames: Iterable[Any], *, raw: bool = False) -> Iterator[List[Any]]:
        """Run every frame (an array, or a tuple of arrays for a multi-input model) and yield
        the outputs in the order of `frames`, keeping at most ``queue_size + workers``
        frames in flight.

        Raises
        ------
        RuntimeError
            As :meth:`submit` (at once, not at the first result).
        """
        self._refusal_checks("map")
        if self._closed:
            raise RuntimeError("map on a Pool that is shut down")
        if not (raw is True or raw is False):
            raise TypeError(f"raw must be True or False; got {raw!r}")
        try:
            frames = iter(frames)
        except TypeError:
            raise TypeError(f"map takes an iterable of frames; got {type(frames).__name__}") \
                from None
        return self._map(frames, raw)

    def _map(self, frames, raw):
        # each frame's outcome comes back through a ticket of its own (a one-item queue,
        # not a Future), waited for in order: the map wakes for the frame it yields next,
        # not for the ones that end before it.  Every queued frame is ended once (run,
        # failed or cancelled), so each wait ends.
        window: "collections.deque[_Ticket]" = collections.deque()
        limit = self._queue_size + len(self._threads)
        for frame in frames:
            args = frame if isinstance(frame, tuple) else (frame,)
            ticket = _Ticket()
            self._enqueue(args, raw, None, ticket)
            window.append(ticket)
            if len(window) >= limit:
                yield self._outcome(window.popleft())
        while window:
            yield self._outcome(window.popleft())

    def _outcome(self, ticket: _Ticket):
        """The outputs of a frame of a map (or its exception, raised), waited for."""
        if ticket.empty():
            _check_waiter(self._state)
        result, exc = ticket.get()
        if exc is not None:
            try:
                raise exc
            finally:
                exc = None
        return result

    # -- lifetime --------------------------------------------------------------------------
    @property
    def workers(self) -> int:
        return len(self._threads)

    @property
    def core_masks(self) -> tuple:
        """The core mask each worker runs on (None: the cores the runtime chooses, as on
        chips with one NPU core, or where the runtime refused a mask the pool chose)."""
        return tuple(r.mask for r in self._runners)

    def shutdown(self, wait: bool = True, *, cancel_pending: bool = False) -> None:
        """Stop taking frames; finish (or, with `cancel_pending`, cancel) the queued ones,
        then close the workers' contexts.  A second call only waits (`wait`) and cancels
        the frames still queued (`cancel_pending`: a Model closing a pool shut down with
        ``wait=False`` does not wait for its queue).

        Raises
        ------
        RuntimeError
            Called from one of the pool's own workers (a custom op callback), or in a
            child of fork() on a pool of the parent.
        """
        self._refusal_checks("shutdown")
        stops = [_STOP] * len(self._threads)
        first = False
        try:
            with self._submit_lock("shutdown"):
                first = not self._closed
                self._closed = True
            if first:
                if cancel_pending:
                    self._cancel_queued()
                if not wait:
                    self._state.keep = self  # until the workers are done (see _State)
            elif cancel_pending:
                self._cancel_queued()
        finally:
            # the workers' stops are queued whatever interrupts the rest once the pool is
            # marked closed (a Ctrl-C, in the lock's exit too: the pool says closed from
            # here on, and a later shutdown only waits): all in one C call marked inside
            # it (see _queue_frame), again if a Ctrl-C came before it (at the return of
            # the C call that builds it: the loop is here, not in a function whose entry
            # could take one), then that KeyboardInterrupt goes on
            queued: list = []
            caught = None
            while first:
                try:
                    if len(queued) < len(stops):
                        any(map(queued.append, map(self._queue.put, stops)))
                    break
                except KeyboardInterrupt as exc:
                    caught = exc
            if caught is not None:
                raise caught
        if wait:
            for t in self._threads:
                t.join()
            # every caller closes every runner (a close waits for one in progress in
            # another thread): a Model.close() racing the pool's own shutdown returns only
            # once the contexts borrowing the model's weights are closed
            for r in list(self._runners):
                r.close()

    # -- the lifetime protocol (rknnx._lifetime) -----------------------------------------
    @property
    def closed(self) -> bool:
        """Whether the pool is shut down (it takes no more frames)."""
        return self._closed

    def close(self) -> None:
        """``shutdown(wait=True)``: finish the queued frames, then close the workers'
        contexts; ``with pool:`` does the same on the way out.  ``close`` is there as on
        every other rknnx object; ``shutdown`` is the name concurrent.futures executors
        use, with its options.  As there, a pool shut down with ``wait=False`` is waited
        for.

        .. versionadded:: 0.1.0
        """
        self.shutdown(wait=True)

    def _collected(self) -> Optional[str]:
        self._closed = True
        # the workers see it and stop: they fail the frames still queued, and take no more
        # (the queue is not touched here: a finalizer may run inside one of its methods)
        self._state.gone = ("the Pool was collected (nothing held it, and it was not shut "
                            "down) before this frame ran; use `with` or shutdown()")
        if self._close_when_collected:
            return None
        return (f"unclosed rknnx.Pool of {len(getattr(self, '_threads', ()))} workers: "
                "use shutdown() or `with`")

    def _close_quietly(self) -> None:
        # (not at interpreter exit: a worker stopped inside a run holds its context)
        for c in getattr(self, "_runners", ()):
            try:
                c.close()                # waits for a frame in flight on it
            except Exception:            # a view still alive, a callback of this thread:
                pass                     # the context goes with its last reference

    def __repr__(self) -> str:
        state = "shut down" if self._closed else f"{self.workers} workers"
        return f"<rknnx.Pool {state} on {self.model!r}>"


def _count(value, name: str) -> int:
    """`value` as an int >= 1: a Python or numpy integer (as rknnx.Matmul takes them), not
    a bool or a float; ValueError saying what was expected otherwise."""
    if not isinstance(value, (bool, np.bool_)):
        try:
            n = operator.index(value)
        except TypeError:
            n = None
        if n is not None and n >= 1:
            return n
    raise ValueError(f"{name} must be an int >= 1; got {value!r}")


def _snapshot(prepared, inputs) -> list:
    """The prepared arrays, each a copy unless it is one already: the frame as it is at
    submit, whatever the caller writes into its buffers while the frame waits."""
    given = set()
    for x in inputs:
        for y in (x.values() if isinstance(x, Mapping) else
                  x if isinstance(x, (list, tuple)) else (x,)):
            given.add(id(y))
    return [(a.copy() if id(a) in given or not a.flags.owndata else a, layout)
            for a, layout in prepared]


def _queue_frame(places: "queue.SimpleQueue", jobs: "queue.SimpleQueue", job: _Job) -> None:
    """Take a free place (waiting for one) and queue `job` in it; if `job` is not queued,
    the place goes back.

    An exception can come between any two bytecodes of the main thread: a signal
    handler's (Ctrl-C's KeyboardInterrupt) runs where the interpreter checks for pending
    calls, which includes the return of every C call.  With ``places.get()`` and
    ``jobs.put(job)`` as two statements, one raised at the return of ``get`` took the
    place without queueing the frame, and no ``try`` can tell it from one raised while
    ``get`` waited (nothing taken): each lost a place, and after ``queue_size`` of them
    every submit waited for ever.  Here one C call (``next`` over nested ``map``
    iterators, no bytecode between its steps) takes the place, marks it, queues the frame
    and marks that; an exception raised anywhere is judged by the marks: one mark, the
    place was taken and the frame not queued (a ``put`` that raised), so it goes back;
    two, the frame is queued (its worker gives the place back); none, nothing was taken.
    """
    marks: list = []
    try:
        next(map(marks.append,
                 map(jobs.put, (job,), map(marks.append, iter(places.get, _STOP)))))
    except BaseException:
        if len(marks) == 1:
            places.put(None)
        raise


def _work(pool_ref, jobs: "queue.SimpleQueue", places: "queue.SimpleQueue", state: _State,
          runner) -> None:
    """A worker: take frames and run them on its `runner` until told to stop or until its
    pool is gone (collected without a shutdown: it checks a weak reference, and the state,
    while idle)."""
    try:
        with state.worker:
            _take_frames(pool_ref, jobs, places, state, runner)
    finally:
        state.stopped()


def _take_frames(pool_ref, jobs: "queue.SimpleQueue", places: "queue.SimpleQueue",
                 state: _State, runner) -> None:
    stop = _STOP                         # (a local: no shared global looked up per frame)
    while True:
        try:
            job = jobs.get(timeout=_IDLE_CHECK_S)
        except queue.Empty:
            if state.gone is None and pool_ref() is None:
                state.gone = "the Pool was collected before this frame ran"
            if state.gone is not None:
                _fail_queued(jobs, places, state.gone)
                return
            continue
        if job is stop:
            return
        places.put(None)                 # its place in the queue is free
        if not job.future.set_running_or_notify_cancel():
            continue
        pool = pool_ref() if state.gone is None else None
        if pool is None:
            job.future.set_exception(RuntimeError(state.gone or "the Pool was collected "
                                                  "before this frame ran"))
            _fail_queued(jobs, places, state.gone or "the Pool was collected before this "
                         "frame ran")
            return
        try:
            # (the pool is held meanwhile: it is not collected, nor its runners closed,
            # under a frame)
            prepared, shape_set = job.inputs
            result = runner.run(prepared, shape_set, job.raw)
        except BaseException as exc:
            # the pool is let go before the future ends: its waiter may drop the pool at
            # once and expect it collected
            del pool
            _guard.forget_frames(exc)    # no view of NPU memory kept by the future
            if state.gone is not None:   # collected while it ran: its context was closed
                err = RuntimeError(state.gone.replace("before this frame ran",
                                                      "while this frame ran"))
                err.__cause__ = exc
                exc = err
            job.future.set_exception(exc)
        else:
            del pool
            job.future.set_result(result)
            del result
        del job


def _drain_into(jobs: "queue.SimpleQueue", got: list) -> None:
    """Take every item queued now into `got`.  Each one is appended inside the C call that
    takes it (a ``map`` over ``iter(get_nowait, ...)``), so an exception raised where
    control comes back to Python (a signal handler's: Ctrl-C) finds it in `got`, never
    between the take and the append (see _queue_frame)."""
    try:
        for _ in map(got.append, iter(jobs.get_nowait, _STOP_NEVER)):
            pass
    except queue.Empty:
        pass


def _fail_queued(jobs: "queue.SimpleQueue", places: "queue.SimpleQueue", reason: str) -> None:
    """End the future of every frame still queued (the pool is gone: nobody will run it)."""
    while True:
        try:
            job = jobs.get_nowait()
        except queue.Empty:
            return
        if job is _STOP:
            continue
        places.put(None)
        if job.future.set_running_or_notify_cancel():
            job.future.set_exception(RuntimeError(reason))

