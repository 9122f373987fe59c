"""The review of Pool's handoff on queue.SimpleQueue alone (tokens bounding the frames
queue, a one-item ticket per map() frame): races and misuse tried from the outside, each
with its outputs against numpy's relu, its threads gone, the queue's free places (tokens)
back to `queue_size` and the emulator's live counters back to their baseline."""

from __future__ import annotations

import contextlib
import gc
import sys
import threading
import time
import warnings
import weakref
from concurrent.futures import CancelledError

import numpy as np
import pytest

import rknnx

from helpers import live, model_bytes, run_python

#: the children that open the emulator's samples run on it wherever the suite runs (a
#: vendor runtime in RKNNX_RUNTIME refuses the samples: rknn_init fails)
EMULATOR = {"RKNNX_RUNTIME": "emulator"}


def relu_frames(n, seed=0, shape=(1, 2)):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(shape).astype(np.float32) for _ in range(n)]


def assert_relu(outputs, frame):
    np.testing.assert_array_equal(outputs[0], np.maximum(frame, 0))


def pool_threads():
    return [t for t in threading.enumerate() if t.name.startswith("rknnx-pool-")]


def places(pool):
    return pool._places.qsize()


@pytest.fixture
def baseline(emu):
    # the pools of earlier tests on this worker (collected ones stop within an idle check,
    # closing their contexts) end first: the counters are read once nothing else changes
    gc.collect()
    deadline = time.monotonic() + 10
    while pool_threads() and time.monotonic() < deadline:
        time.sleep(0.02)
    gc.collect()
    threads, counters = len(pool_threads()), live(emu)
    yield
    gc.collect()
    deadline = time.monotonic() + 10
    while len(pool_threads()) > threads and time.monotonic() < deadline:
        time.sleep(0.02)
    assert len(pool_threads()) == threads
    assert live(emu) == counters


def test_a_map_abandoned_half_way_frees_its_places_and_runs_nothing_more(baseline, emu):
    m = rknnx.Model(model_bytes("tiny_relu"))
    frames = relu_frames(200)
    pulled = []

    def feed():
        for k, f in enumerate(frames):
            pulled.append(k)
            yield f

    emu.reset_counters()
    with rknnx.Pool(m, workers=2, queue_size=3) as pool:
        it = pool.map(feed())
        for k in range(3):
            assert_relu(next(it), frames[k])
        ahead = len(pulled)
        assert ahead <= 3 + 3 + 2                  # yielded + queue_size + workers
        it.close()                                 # GeneratorExit inside the map
        del it
        gc.collect()
        # everything queued runs (or ran) and gives its place back; no more is pulled
        assert len(pulled) == ahead
    assert emu.counters()["runs"] == ahead
    assert places(pool) == 3
    m.close()


def test_backpressure_holds_on_a_slow_npu_and_order_holds(baseline, emu):
    m = rknnx.Model(model_bytes("tiny_relu"))
    emu.set_npu_time_us(3_000)
    frames = relu_frames(60, seed=1)
    pulled, most = [], 0
    with rknnx.Pool(m, workers=3, queue_size=2) as pool:
        def feed():
            for k, f in enumerate(frames):
                pulled.append(k)
                yield f

        for k, out in enumerate(pool.map(feed())):
            most = max(most, len(pulled) - k)
            assert_relu(out, frames[k])
    emu.set_npu_time_us(0)
    assert most == 2 + 3                           # queue_size + workers, never more
    assert places(pool) == 2
    m.close()


def test_many_maps_and_submits_on_one_pool_from_threads(baseline):
    m = rknnx.Model(model_bytes("tiny_relu"))
    errors = []
    with rknnx.Pool(m, workers=3, queue_size=2) as pool:
        def mapper(seed):
            frames = relu_frames(150, seed)
            try:
                got = list(pool.map(frames))
                assert len(got) == len(frames)
                for out, f in zip(got, frames):
                    assert_relu(out, f)
            except BaseException as e:             # re-raised below
                errors.append(e)

        def submitter(seed):
            frames = relu_frames(150, seed)
            try:
                futures = [pool.submit(f) for f in frames]
                for fut, f in zip(futures, frames):
                    assert_relu(fut.result(timeout=30), f)
            except BaseException as e:
                errors.append(e)

        threads = [threading.Thread(target=mapper, args=(s,)) for s in range(4)] + \
            [threading.Thread(target=submitter, args=(s,)) for s in (10, 11)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert not any(t.is_alive() for t in threads)
    assert errors == []
    assert places(pool) == 2
    m.close()


@pytest.mark.parametrize("cancel", [False, True])
def test_shutdown_from_another_thread_while_a_map_iterates(baseline, emu, cancel):
    m = rknnx.Model(model_bytes("tiny_relu"))
    emu.set_npu_time_us(2_000)
    frames = relu_frames(8, seed=3)
    pool = rknnx.Pool(m, workers=2, queue_size=2)
    seen, ended = [], []

    def consume():
        k = 0
        try:
            for out in pool.map(frames[k % 8] for k in range(10 ** 6)):
                assert_relu(out, frames[k % 8])
                k += 1
                seen.append(k)
        except (RuntimeError, CancelledError) as e:
            ended.append((type(e).__name__, str(e)))

    t = threading.Thread(target=consume)
    t.start()
    time.sleep(0.1)
    pool.shutdown(cancel_pending=cancel)
    t.join(20)
    emu.set_npu_time_us(0)
    assert not t.is_alive()
    assert seen
    # the map ends at its next frame with the shutdown's words, or (cancelled) at the
    # first frame the shutdown took back from the queue
    assert ended in ([("RuntimeError", "submit on a Pool that is shut down")],
                     [("CancelledError", "")])
    if not cancel:
        assert ended[0][0] == "RuntimeError"
    assert places(pool) == 2
    m.close()


@pytest.mark.needs("rknn_register_custom_ops")
@pytest.mark.parametrize("error", [ValueError, KeyboardInterrupt, SystemExit])
def test_an_error_in_a_workers_frame_reaches_the_map_and_the_pool_goes_on(models, error):
    m = models.open("custom_op_model")

    @rknnx.custom_op("cstSigmoid")
    def op(inputs, outputs):
        if float(inputs[0].flat[0]) == 3.0:
            raise error("frame three")
        np.divide(1.0, 1.0 + np.exp(-inputs[0]), out=outputs[0])

    m.register_custom_ops(op)
    frames = [np.full(m.inputs[0].shape, k, np.float32) for k in range(6)]
    want = [(1 / (1 + np.exp(-f.astype(np.float64))) + 1).astype(np.float32) for f in frames]
    got = []
    with rknnx.Pool(m, workers=2, queue_size=2) as pool:
        with pytest.raises(BaseException) as info:
            for out in pool.map(frames):
                got.append(out)
        # the error of frame 3 (the binding may wrap a callback's error: its cause says)
        chain, e = [], info.value
        while e is not None:
            chain.append(e)
            e = e.__cause__ or e.__context__
        assert any(isinstance(c, error) and str(c) == "frame three" for c in chain), chain
        assert len(got) == 3
        for g, w in zip(got, want):
            np.testing.assert_allclose(g[0], w, rtol=1e-6)
        # the workers live on: the next map gives every frame but the failing one
        rest = list(pool.map(frames[4:]))
        for g, w in zip(rest, want[4:]):
            np.testing.assert_allclose(g[0], w, rtol=1e-6)
        # (on 3.13t with PYTHON_GIL=0 the places read 1 of 2 right after the map, for
        # KeyboardInterrupt and SystemExit only, and 2 a moment later: not explained yet)
        deadline = time.monotonic() + 2
        while places(pool) != 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert places(pool) == 2
        assert all(t.is_alive() for t in pool._threads)


def test_a_dropped_pool_with_a_map_abandoned_is_collected(baseline, emu):
    m = rknnx.Model(model_bytes("tiny_relu"))
    frames = relu_frames(50, seed=4)
    pool = rknnx.Pool(m, workers=2, queue_size=2)
    it = pool.map(frames)
    assert_relu(next(it), frames[0])
    del it
    # a worker may still hold the pool for the frame it runs: collected once it lets go
    # (the warning may then come from that worker's thread), within the deadline
    ref = weakref.ref(pool)

    def said(got):
        return [str(w.message) for w in got if issubclass(w.category, ResourceWarning)
                and "unclosed rknnx.Pool of 2 workers" in str(w.message)]

    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        del pool
        deadline = time.monotonic() + 10
        while not said(got) and time.monotonic() < deadline:
            gc.collect()
            time.sleep(0.01)
    assert said(got)
    del got                  # (a warning's record holds its source, the pool)
    gc.collect()
    assert ref() is None
    m.close()


def test_a_map_in_a_fork_child_of_a_pool_that_ran_is_refused():
    code = r"""
import os
import numpy as np
import rknnx
from rknnx.emulator import samples
m = rknnx.Model(samples.tiny_relu(target="RK3588"))
x = np.array([[-1.0, 2.0]], np.float32)
pool = rknnx.Pool(m, workers=2)
print([o[0].tolist() for o in pool.map([x, x])])
pid = os.fork()
if pid == 0:
    try:
        pool.map([x])
        print("child: no error")
    except RuntimeError as e:
        print("child:", str(e).split(";")[0])
    os._exit(0)
os.waitpid(pid, 0)
print([o[0].tolist() for o in pool.map([x])])
pool.shutdown()
m.close()
"""
    proc = run_python(code, env=EMULATOR, timeout=60)
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = proc.stdout.splitlines()
    assert lines[0] == "[[[0.0, 2.0]], [[0.0, 2.0]]]"
    assert lines[1].startswith("child: this Pool was created in process "), lines
    assert lines[2] == "[[[0.0, 2.0]]]"


def test_references_of_frames_and_outputs_come_back_after_maps(baseline):
    m = rknnx.Model(model_bytes("tiny_relu"))
    frames = relu_frames(10, seed=5)
    with rknnx.Pool(m, workers=2, queue_size=2) as pool:
        for _ in range(3):
            list(pool.map(frames))
        gc.collect()
        held = [sys.getrefcount(f) for f in frames] + [sys.getrefcount(pool)]
        for _ in range(20):
            for out, f in zip(pool.map(frames), frames):
                assert_relu(out, f)
            del out, f
            it = pool.map(frames)
            next(it)
            del it                                  # abandoned with frames in flight
        gc.collect()
        time.sleep(0.05)
        gc.collect()
        assert [sys.getrefcount(f) for f in frames] + [sys.getrefcount(pool)] == held
    m.close()


FORK_WAIT = r"""
import os, threading
import numpy as np
import rknnx
from rknnx.emulator import samples
from rknnx.emulator.control import EmulatorControl

m = rknnx.Model(samples.tiny_relu(target="RK3588"))
ctl = EmulatorControl(rknnx.runtime_info()["path"])
x = np.array([[-1.0, 2.0]], np.float32)
pool = rknnx.Pool(m, workers=1, queue_size=2)
ctl.set_npu_time_us(200_000)
it = pool.map([x] * 2)                   # both frames queued at the first next (limit 3)
print("parent", next(it)[0].tolist(), flush=True)
fut = pool.submit(x)                     # queued behind the map's second frame
pid = os.fork()
if pid == 0:                             # the frames still in flight are the parent's
    said = []

    def wait(what, call):
        try:
            call()
            said.append(f"{what}: no error")
        except RuntimeError as e:
            said.append(f"{what}: {str(e).split(';')[0]}")

    for what, call in (("map", lambda: next(it)), ("future", lambda: fut.result())):
        t = threading.Thread(target=wait, args=(what, call), daemon=True)
        t.start()
        t.join(5)
        if t.is_alive():
            said.append(f"{what}: hangs")
    print("\n".join(said).replace(str(os.getppid()), "PARENT"), flush=True)
    os._exit(0)
os.waitpid(pid, 0)
ctl.set_npu_time_us(0)
print("parent", [o[0].tolist() for o in it], fut.result()[0].tolist(), flush=True)
pool.shutdown()
m.close()
"""


def test_waiting_in_a_fork_child_for_a_frame_of_the_parents_pool_is_refused():
    # the parent's workers end the frames: a child waiting for one (the map's next, a
    # submit's result) waited for ever; it is refused with the fork words submit() has
    proc = run_python(FORK_WAIT, env=EMULATOR, timeout=90)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.splitlines() == [
        "parent [[0.0, 2.0]]",
        "map: this Pool was created in process PARENT",
        "future: this Pool was created in process PARENT",
        "parent [[[0.0, 2.0]]] [[0.0, 2.0]]"]


class _InterruptedPut:
    """A pool's frames queue whose put raises KeyboardInterrupt for the next `times`
    frames before queueing them (a Ctrl-C between the frame's place taken and the frame
    queued); everything else goes to the real queue, which the workers hold."""

    def __init__(self, real, times):
        self.real, self.times = real, times

    def put(self, item, *args):
        if self.times and isinstance(item, rknnx.pool._Job):
            self.times -= 1
            raise KeyboardInterrupt
        self.real.put(item, *args)

    def __getattr__(self, name):
        return getattr(self.real, name)


@pytest.mark.parametrize("how", ["submit", "map"])
def test_an_interrupt_between_taking_a_place_and_queueing_gives_the_place_back(
        baseline, emu, how):
    m = rknnx.Model(model_bytes("tiny_relu"))
    frames = relu_frames(12, seed=7)
    with rknnx.Pool(m, workers=2, queue_size=3) as pool:
        pool._queue = _InterruptedPut(pool._queue, 5)  # more than the 3 places
        for k in range(5):
            with pytest.raises(KeyboardInterrupt):
                if how == "submit":
                    pool.submit(frames[k])
                else:
                    next(pool.map(frames[k:k + 1]))
            assert places(pool) == 3, k
        # every place can be used at once (with one lost, the map would wait for ever:
        # it runs in a thread, bounded)
        got = []
        t = threading.Thread(target=lambda: got.extend(pool.map(frames)))
        t.start()
        t.join(30)
        assert not t.is_alive()
        assert len(got) == len(frames)
        for out, f in zip(got, frames):
            assert_relu(out, f)
    assert places(pool) == 3
    m.close()


SIGNALLED = r"""
import os, signal, threading, time
import numpy as np
import rknnx
from rknnx.emulator import samples
from rknnx.emulator.control import EmulatorControl

emu = EmulatorControl(rknnx.load_runtime("emulator")["path"])
emu.set_log_level(0)
base = {k: emu.counters()[k] for k in ("live_contexts", "live_mems")}
m = rknnx.Model(samples.tiny_relu())
pool = rknnx.Pool(m, workers=2, queue_size=4)
x = np.array([[-1.5, 2.25]], np.float32)
inside = False                           # the handler raises only inside the try below

def handler(*args):
    if inside:
        raise KeyboardInterrupt

signal.signal(signal.SIGUSR1, handler)
main, stop, futures = threading.main_thread().ident, [], []

def interrupter():
    while not stop:
        signal.pthread_kill(main, signal.SIGUSR1)
        time.sleep(0.0003)

t = threading.Thread(target=interrupter)
t.start()
interrupts, deadline = 0, time.monotonic() + 20
# (an interrupt anywhere else, e.g. in the loop's own condition, would end the child: on
# 3.13t the interpreter checks for signals at other places than on 3.11)
while interrupts < 600 and time.monotonic() < deadline:
    try:
        inside = True
        futures.append(pool.submit(x))
        inside = False
    except KeyboardInterrupt:
        inside = False
        interrupts += 1
stop.append(1)
t.join()
signal.signal(signal.SIGUSR1, signal.SIG_IGN)
# every place comes back once the workers took what is queued (a lost one never does)
for f in futures:
    np.testing.assert_array_equal(f.result(30)[0], np.maximum(x, 0))
idle = time.monotonic() + 10
while pool._places.qsize() != 4 and time.monotonic() < idle:
    time.sleep(0.01)
print("interrupts", interrupts, "frames", len(futures), "places", pool._places.qsize())
pool.close()
m.close()
print("live", {k: emu.counters()[k] for k in base} == base)
"""


def test_ctrl_c_from_a_signal_handler_during_submits_loses_no_place():
    # a signal handler's KeyboardInterrupt comes at the return of any C call, that of the
    # place's get included (where no `try` around the put would see it): each such one
    # lost a place before, and the pool waited for ever after `queue_size` of them
    proc = run_python(SIGNALLED, timeout=120)
    assert proc.returncode == 0, proc.stderr
    words = proc.stdout.split()
    assert words[0:1] == ["interrupts"] and int(words[1]) == 600, proc.stdout
    assert int(words[3]) > 0, proc.stdout                      # frames were submitted
    assert words[4:] == ["places", "4", "live", "True"], proc.stdout


def test_a_second_init_is_refused_before_it_changes_the_pool(baseline, emu):
    # Pool.__init__ again on a live pool: it would start a second set of workers and
    # runners over the first's queue, the first runners never closed
    m = rknnx.Model(model_bytes("tiny_relu"))
    with rknnx.Pool(m, workers=2, queue_size=3) as pool:
        before = (len(pool_threads()), live(emu), places(pool))
        with pytest.raises(RuntimeError, match=r"^Pool\.__init__: a Pool is initialized "
                                               r"once; make a new Pool$"):
            pool.__init__(m, workers=3)
        assert (len(pool_threads()), live(emu), places(pool)) == before
        frames = relu_frames(8, seed=3)
        for f, out in zip(frames, pool.map(frames)):
            assert_relu(out, f)
    assert places(pool) == 3
    m.close()


CANCELLED = r"""
import signal, threading, time
from concurrent.futures import CancelledError
import numpy as np
import rknnx
from rknnx.emulator import samples
from rknnx.emulator.control import EmulatorControl

emu = EmulatorControl(rknnx.load_runtime("emulator")["path"])
emu.set_log_level(0)
emu.set_npu_time_us(3000)                # the frames wait in the queue
base = {k: emu.counters()[k] for k in ("live_contexts", "live_mems")}
m = rknnx.Model(samples.tiny_relu())
x = np.array([[-1.5, 2.25]], np.float32)
inside = False                           # the handler raises only inside the try below
QUEUED = 300                             # a drain long enough for interrupts to land in

def handler(*args):
    if inside:
        raise KeyboardInterrupt

signal.signal(signal.SIGUSR1, handler)
main, stop = threading.main_thread().ident, []

def interrupter():
    while not stop:
        signal.pthread_kill(main, signal.SIGUSR1)
        time.sleep(0.0002)

t = threading.Thread(target=interrupter)
t.start()
interrupts = rounds = ran = cancelled = 0
deadline = time.monotonic() + 25
while rounds < 40 and time.monotonic() < deadline:
    pool = rknnx.Pool(m, workers=1, queue_size=QUEUED)
    futures = [pool.submit(x) for _ in range(QUEUED)]
    done = False
    while not done:
        try:
            inside = True
            pool.shutdown(wait=True, cancel_pending=True)
            inside = False
            done = True
        except KeyboardInterrupt:
            inside = False
            interrupts += 1
    for f in futures:                    # every frame ran or was cancelled: none is lost
        try:
            np.testing.assert_array_equal(f.result(5)[0], np.maximum(x, 0))
            ran += 1
        except CancelledError:
            cancelled += 1
    assert pool._places.qsize() == QUEUED, pool._places.qsize()
    assert not any(th.is_alive() for th in pool._threads)
    rounds += 1
stop.append(1)
t.join()
signal.signal(signal.SIGUSR1, signal.SIG_IGN)
m.close()
print("rounds", rounds, "interrupts", interrupts, "ran", ran, "cancelled", cancelled,
      "live", {k: emu.counters()[k] for k in base} == base)
"""


def test_ctrl_c_during_a_cancelling_shutdown_loses_no_frame():
    # shutdown(cancel_pending=True) takes the queued frames one by one: a Ctrl-C at the
    # return of a take lost that frame (its future never ended, a map waited for ever),
    # and one before the workers' stops were queued left them running
    proc = run_python(CANCELLED, timeout=120)
    assert proc.returncode == 0, proc.stderr
    words = proc.stdout.split()
    assert words[0::2] == ["rounds", "interrupts", "ran", "cancelled", "live"], proc.stdout
    rounds, interrupts, ran, cancelled = (int(w) for w in words[1:9:2])
    assert rounds >= 10 and interrupts > 0 and cancelled > 0, proc.stdout
    assert ran + cancelled == 300 * rounds and words[9] == "True", proc.stdout


def test_ctrl_c_as_shutdown_leaves_its_lock_still_queues_the_stops(baseline, emu):
    # shutdown marks the pool closed under its submit lock, and the first call alone
    # queues the workers' stops: a Ctrl-C in the lock's exit (Python code, a generator's
    # finally) came after the mark and before the stops, and a later shutdown only waited
    # for workers that nothing would ever stop
    m = rknnx.Model(model_bytes("tiny_relu"))
    pool = rknnx.Pool(m, workers=2, queue_size=3)
    real = pool._submit_lock

    @contextlib.contextmanager
    def interrupted(what):
        with real(what):
            yield
        if what == "shutdown":
            raise KeyboardInterrupt

    pool._submit_lock = type("_Lock", (), {"__call__": lambda self, what: interrupted(what),
                                           "__getattr__": lambda self, n: getattr(real, n)})()
    with pytest.raises(KeyboardInterrupt):
        pool.shutdown()
    pool._submit_lock = real
    with pytest.raises(RuntimeError, match=r"^submit on a Pool that is shut down$"):
        pool.submit(relu_frames(1)[0])
    t = threading.Thread(target=pool.shutdown)
    t.start()
    t.join(10)
    hung = t.is_alive()
    if hung:                             # (the stops the shutdown lost, so the test ends)
        for _ in range(pool.workers):
            pool._queue.put(rknnx.pool._STOP)
        t.join()
    assert not hung
    assert not any(th.is_alive() for th in pool._threads)
    assert places(pool) == 3
    m.close()
