"""Attacks on the close path of a model's family (docs/architecture.md, "Lifetimes"): a
Model closed with a session and a Pool open asks each refusal once and closes each member
once; a refusal closes nothing and leaves the family making members; closes racing runs of
every kind (the general flow, a dynamic model's shape set and run under the family's lock,
the session runner of a chip without the general API, session.run_arrays, pool.map) and
the making of sessions and pools; closes from inside callbacks and workers (refused, never
a hang); models, sessions, pools and Detectors dropped unclosed, freed by reference
counting alone (no cycle through the family); a lock held at fork.  Each ends with the
emulator's live counters back at their baseline."""

from __future__ import annotations

import gc
import threading
import time
import warnings
from concurrent.futures import CancelledError

import numpy as np
import pytest

import rknnx
from helpers import GENERAL_PLATFORMS, PLATFORMS, bounded, live, model_bytes

X = np.array([[-1.5, 2.25]], np.float32)
RELU_X = np.maximum(X, 0)
#: words a call racing a close may say (and nothing else)
CLOSED_WORDS = ("on closed Model", "on closed ZeroCopySession", "shut down",
                "was closed while", "closed meanwhile", "on a Model being closed by another "
                "thread")


def _settle(emu, base, timeout=5.0) -> bool:
    """Whether the live counters reach `base` without a garbage collection (pool workers
    stop on their own thread: give them a moment)."""
    end = time.monotonic() + timeout
    while live(emu) != base and time.monotonic() < end:
        time.sleep(0.02)
    return live(emu) == base


def _record_warnings() -> list:
    """The texts of the ResourceWarnings from now on (inside ``catch_warnings()``); their
    sources are not kept (a recorded warning would keep the object it is about alive)."""
    said: list = []
    warnings.simplefilter("always", ResourceWarning)
    warnings.showwarning = lambda message, *args, **kwargs: said.append(str(message))
    return said


def _dynamic_input(k: int) -> np.ndarray:
    n, h, w, c = ((1, 64, 64, 3), (1, 96, 96, 3), (1, 128, 160, 3))[k]
    return np.full((n, h, w, c), 40 + k, np.uint8)


# -- the walk of one close -----------------------------------------------------------------
@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_close_with_a_session_and_a_pool_asks_each_once_and_closes_each_once(
        emu, platform, monkeypatch):
    emu.set_platform(platform)
    src = model_bytes("tiny_relu", platform)
    gc.collect()
    base = live(emu)
    calls: dict = {}

    def counting(cls, name):
        real = getattr(cls, name)

        def spy(self, *args, **kwargs):
            key = (name, id(self))
            calls[key] = calls.get(key, 0) + 1
            return real(self, *args, **kwargs)
        monkeypatch.setattr(cls, name, spy)

    m = rknnx.Model(src)
    np.testing.assert_array_equal(m.run(X)[0], RELU_X)     # the model's runner has run
    s = m.zero_copy()
    pool = rknnx.Pool(m, 2)
    np.testing.assert_array_equal(pool.submit(X).result(10)[0], RELU_X)
    s.write(0, X)
    s.run()
    for cls, name in ((rknnx.ZeroCopySession, "check_closable"), (rknnx.ZeroCopySession, "close"),
                      (rknnx.Pool, "check_closable"), (rknnx.Pool, "shutdown")):
        counting(cls, name)
    m.close()
    assert m.closed and s.closed and pool.closed
    # each asked once and closed once: the user's session and pool, and (chips without
    # the general API) the sessions of the pool's workers and of the model's runner
    assert set(calls.values()) == {1}, calls
    for key in (("check_closable", id(s)), ("close", id(s)), ("check_closable", id(pool)),
                ("shutdown", id(pool))):
        assert key in calls, key
    n_sessions = 1 if platform != "RV1106" else 1 + 2 + 1
    assert len([k for k in calls if k[0] == "close"]) == n_sessions
    assert len([k for k in calls if k[0] == "check_closable"]) == 2 + (platform == "RV1106")
    assert m.frame_id == 1                   # kept from the runner the close closed
    asked = dict(calls)
    m.close()                                # a second close asks nothing
    assert calls == asked
    assert live(emu) == base


def test_members_made_while_a_close_is_refused_hear_it_is_under_way_not_done(emu):
    """While a close asks its refusals, a member being made in another thread is refused
    saying the close is under way (it may yet be refused), never that the Model is closed;
    after the refused closes the Model makes members again."""
    m = rknnx.Model(model_bytes("tiny_relu"))
    s = m.zero_copy()
    s.write(0, X)
    s.run()
    view = s.outputs[0]                  # every close below is refused over this view
    said, stop = set(), threading.Event()

    def make():
        while not stop.is_set():
            try:
                m.zero_copy().close()
            except ValueError as e:
                said.add(str(e))

    t = threading.Thread(target=make, daemon=True)
    t.start()
    refused = 0
    deadline = time.monotonic() + 20
    while (refused < 300 or not said) and time.monotonic() < deadline:
        with pytest.raises(BufferError):
            m.close()
        refused += 1
    stop.set()
    t.join(10)
    assert said == {"zero_copy on a Model being closed by another thread (if that close is "
                    "refused, the Model stays open: call again then)"}, said
    assert not m.closed
    with m.zero_copy() as s2:
        np.testing.assert_array_equal(s2.run_arrays(X)[0], RELU_X)
    del view
    m.close()


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_refused_close_closes_nothing_and_the_family_makes_members_again(emu, platform):
    emu.set_platform(platform)
    src = model_bytes("tiny_relu", platform)
    gc.collect()
    base = live(emu)
    m = rknnx.Model(src)
    s = m.zero_copy()
    pool = rknnx.Pool(m, 2)
    s.write(0, X)
    s.run()
    view = s.outputs[0]
    for close in (m.close, m.check_closable):
        with pytest.raises(BufferError, match=r"1 buffer view\(s\) of the session's memory "
                                              r"still exported"):
            close()
    # nothing was closed: every member works, and the family makes new ones
    assert not (m.closed or s.closed or pool.closed)
    np.testing.assert_array_equal(view, RELU_X)
    np.testing.assert_array_equal(pool.submit(X).result(10)[0], RELU_X)
    np.testing.assert_array_equal(m.run(X)[0], RELU_X)
    with m.zero_copy() as s2, rknnx.Pool(m, 1) as p2:
        np.testing.assert_array_equal(s2.run_arrays(X)[0], RELU_X)
        np.testing.assert_array_equal(p2.submit(X).result(10)[0], RELU_X)
    del view
    m.close()
    assert m.closed and s.closed and pool.closed
    with pytest.raises(ValueError, match="zero_copy on closed Model"):
        m.zero_copy()
    with pytest.raises(ValueError, match="Pool on closed Model"):
        rknnx.Pool(m, 1)
    assert live(emu) == base


# -- closes racing runs and the making of members ---------------------------------------------
def _race(m, workers, close_at: float = 0.02):
    """Run each of `workers` (callables looping until the model refuses) in a thread,
    close `m` meanwhile, and return the errors that are not a closed object's words."""
    errors: list = []
    go = threading.Event()

    def loop(work):
        go.wait()
        try:
            for _ in range(10000):
                work()
        except (ValueError, RuntimeError, CancelledError) as e:
            if not isinstance(e, CancelledError) and \
                    not any(w in str(e) for w in CLOSED_WORDS):
                errors.append(e)
        except Exception as e:               # noqa: BLE001 - collected for the assert
            errors.append(e)

    threads = [threading.Thread(target=loop, args=(w,), daemon=True) for w in workers]
    for t in threads:
        t.start()
    go.set()
    time.sleep(close_at)
    bounded(m.close, 20)
    for t in threads:
        t.join(20)
        assert not t.is_alive(), "a call racing the close hangs"
    return errors


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_close_racing_runs_sessions_pools_and_their_making(emu, platform):
    emu.set_platform(platform)
    src = model_bytes("tiny_relu", platform)
    gc.collect()
    base = live(emu)
    for k in range(6):
        m = rknnx.Model(src)
        s = m.zero_copy()
        pool = rknnx.Pool(m, 2)

        def run():
            np.testing.assert_array_equal(m.run(X)[0], RELU_X)

        def run_slow():                      # float64: the full path, under the lock
            np.testing.assert_array_equal(m.run(X.astype(np.float64))[0], RELU_X)

        def session():
            np.testing.assert_array_equal(s.run_arrays(X)[0], RELU_X)

        def mapped():
            for y in pool.map([X] * 4):
                np.testing.assert_array_equal(y[0], RELU_X)

        def make():
            with m.zero_copy() as s2:
                np.testing.assert_array_equal(s2.run_arrays(X)[0], RELU_X)
            with rknnx.Pool(m, 1) as p2:
                np.testing.assert_array_equal(p2.submit(X).result(10)[0], RELU_X)

        errors = _race(m, (run, run_slow, session, mapped, make), close_at=0.005 * k)
        assert not errors, errors[:3]
        assert m.closed and s.closed and pool.closed
        del s, pool
        assert _settle(emu, base), k


def test_a_close_racing_a_dynamic_models_runs_waits_for_the_run_under_the_lock(emu):
    src = model_bytes("dynamic")
    gc.collect()
    base = live(emu)
    for k in range(4):
        m = rknnx.Model(src)
        want = [m.run(_dynamic_input(j))[1] for j in range(3)]
        turn = iter(range(10 ** 6))

        def run():
            j = next(turn) % 3               # a shape set each time: set, then run
            np.testing.assert_array_equal(m.run(_dynamic_input(j))[1], want[j])

        def zero_copy():
            with m.zero_copy() as s:
                s.set_shape_set(1)

        errors = _race(m, (run, run, zero_copy), close_at=0.01 * k)
        assert not errors, errors[:3]
        assert m.closed
        assert _settle(emu, base), k


def test_closes_racing_each_other_and_check_closable_end_closed_once(emu):
    src = model_bytes("tiny_relu")
    gc.collect()
    base = live(emu)
    for _ in range(20):
        m = rknnx.Model(src)
        s = m.zero_copy()
        pool = rknnx.Pool(m, 2)
        futures = [pool.submit(X) for _ in range(4)]
        go = threading.Barrier(4)
        errors: list = []

        def close(call):
            go.wait()
            try:
                call()
            except (ValueError, RuntimeError) as e:
                if not any(w in str(e) for w in CLOSED_WORDS):
                    errors.append(e)

        threads = [threading.Thread(target=close, args=(c,), daemon=True)
                   for c in (m.close, m.close, m.check_closable, s.close)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(20)
            assert not t.is_alive(), "racing closes hang"
        assert not errors, errors
        assert m.closed and s.closed and pool.closed
        for f in futures:
            try:
                np.testing.assert_array_equal(f.result(10)[0], RELU_X)
            except CancelledError:
                pass
        assert m.frame_id == 0               # the model's own runner never ran
        del s, pool, futures
        assert _settle(emu, base)


# -- closes from inside callbacks and workers -------------------------------------------------
@pytest.mark.needs("rknn_register_custom_ops")
def test_a_close_or_a_new_member_from_inside_a_run_is_refused_not_a_hang(models, emu):
    m = models.open("custom_op_model")
    x = np.linspace(-2, 2, 16, dtype=np.float32).reshape(1, 16)
    want = (1 / (1 + np.exp(-x.astype(np.float64))) + 1).astype(np.float32)
    box: dict = {}

    @rknnx.custom_op("cstSigmoid")
    def op(inputs, outputs):
        do = box.pop("do", None)
        if do is not None:
            try:
                do()
                box["said"] = "nothing"
            except (RuntimeError, ValueError) as e:
                box["said"] = str(e).split(" (")[0]
        np.divide(1.0, 1.0 + np.exp(-inputs[0]), out=outputs[0])

    m.register_custom_ops(op)
    pool = rknnx.Pool(m, 1)
    s = m.zero_copy()
    base = live(emu)
    said = {}
    runs = {"fast": lambda: m.run(x),
            # float64 takes the full path: the run holds the family's lock
            "locked": lambda: m.run(x.astype(np.float64)),
            "worker": lambda: pool.submit(x).result(10)}
    for run_name, run in runs.items():
        for do_name, do in (("close", m.close), ("zero_copy", lambda: m.zero_copy().close()),
                            ("Pool", lambda: rknnx.Pool(m, 1).close())):
            box["do"] = do
            np.testing.assert_allclose(bounded(run, 20)[0], want, rtol=1e-6)
            said[run_name, do_name] = box.pop("said")
    busy = "the Model is busy in this thread"
    assert said == {
        ("fast", "close"): f"close: {busy}", ("fast", "zero_copy"): f"zero_copy: {busy}",
        ("fast", "Pool"): f"Pool: {busy}",
        ("locked", "close"): f"close: {busy}", ("locked", "zero_copy"): f"zero_copy: {busy}",
        ("locked", "Pool"): f"Pool: {busy}",
        # a pool's worker runs on a context of its own: it may make members, not close
        ("worker", "close"): "close the Model: called from a worker of the Pool",
        ("worker", "zero_copy"): "nothing", ("worker", "Pool"): "nothing"}, said
    assert not (m.closed or s.closed or pool.closed)
    np.testing.assert_allclose(s.run_arrays(x)[0], want, rtol=1e-6)
    pool.close()
    s.close()
    assert live(emu)["live_contexts"] == base["live_contexts"] - 2


# -- dropped objects: reference counting alone frees them ------------------------------------
@pytest.mark.parametrize("platform", PLATFORMS)
def test_dropped_models_sessions_and_pools_are_freed_without_the_garbage_collector(
        emu, platform):
    emu.set_platform(platform)
    src = model_bytes("tiny_relu", platform)
    gc.collect()
    base = live(emu)
    gc.disable()
    try:
        with warnings.catch_warnings():
            said = _record_warnings()
            m = rknnx.Model(src)
            np.testing.assert_array_equal(m.run(X)[0], RELU_X)
            s = m.zero_copy()
            pool = rknnx.Pool(m, 2)
            np.testing.assert_array_equal(pool.submit(X).result(10)[0], RELU_X)
            del m                            # the family lives on in its members
            np.testing.assert_array_equal(s.run_arrays(X)[0], RELU_X)
            np.testing.assert_array_equal(pool.submit(X).result(10)[0], RELU_X)
            del pool
            np.testing.assert_array_equal(s.run_arrays(X)[0], RELU_X)
            del s
            assert _settle(emu, base), live(emu)
            # a model closed and dropped, with its runner's session: nothing left either
            m = rknnx.Model(src)
            m.run(X)
            m.close()
            del m
            assert live(emu) == base
        said = sorted(w.split(" ")[1].split(" of")[0] for w in said)
        assert said == ["<rknnx.Model", "<rknnx.ZeroCopySession", "rknnx.Pool"], said
    finally:
        gc.enable()


def test_a_dropped_detector_closes_its_sessions_and_its_model(emu):
    pytest.importorskip("rknnx.vision")
    from rknnx.vision import Detector

    src = model_bytes("detector_random")
    gc.collect()
    base = live(emu)
    gc.disable()
    try:
        with warnings.catch_warnings():
            said = _record_warnings()
            det = Detector(src, "yolov5", workers=2)
            frame = np.zeros((48, 64, 3), np.uint8)
            det.detect(frame)
            del det                          # its model was opened by it: closed too
            assert _settle(emu, base), live(emu)
        assert said == [
            "unclosed <rknnx.vision.Detector yolov5 of 2 workers>"]
    finally:
        gc.enable()


# -- fork with the family's lock held ---------------------------------------------------------
FORKED = """
import os, threading, time, warnings
import numpy as np
import rknnx
from rknnx.emulator import samples
from rknnx.emulator.control import EmulatorControl
warnings.simplefilter("error")
emu = EmulatorControl(rknnx.load_runtime("emulator")["path"])
emu.set_log_level(0)
emu.set_npu_time_us(200000)              # a run long enough to fork inside it
m = rknnx.Model(samples.dynamic(target="RK3588"))
s = m.zero_copy()
x = np.full((1, 96, 96, 3), 7, np.uint8)
started = threading.Event()


def run():
    started.set()
    m.run(x)                             # holds the family's lock for 0.2 s


t = threading.Thread(target=run)
t.start()
started.wait()
time.sleep(0.05)
pid = os.fork()
if pid == 0:
    said = []
    for call in (m.close, m.check_closable, lambda: m.run(x), m.zero_copy,
                 lambda: rknnx.Pool(m, 1), s.close):
        try:
            call()
            said.append("no error")
        except RuntimeError as e:
            said.append(str(e).split(" in process")[0].split(": ")[-1])
    print(sorted(set(said)), flush=True)
    os._exit(0)
_, status = os.waitpid(pid, 0)
t.join()
emu.set_npu_time_us(None)
s.close()
m.close()
print(status, emu.counters()["live_contexts"], emu.counters()["live_mems"])
"""


def test_a_child_forked_while_a_run_holds_the_familys_lock_is_refused_not_hung():
    from helpers import run_python

    proc = run_python(FORKED, timeout=60, env={"RKNNX_RUNTIME": "emulator"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.splitlines() == [
        "['this Model was created', 'this ZeroCopySession was created']", "0 0 0"], \
        proc.stdout
