"""Attacks on rknnx.vision.Detector's lifetime: its Model closed while frames run in other
threads (the close waits for each frame, as for a session's run_arrays, and never refuses
over the views a frame holds for a moment); a close or a detect from inside a frame (a
signal handler, as a custom op callback would) is refused, not a wait for the session
the frame's own thread holds; a close refused by a view of a session's memory closes
nothing.  The emulator's live counters end at their baseline."""

from __future__ import annotations

import gc
import threading
import time

import numpy as np
import pytest

import rknnx
from helpers import live, model_bytes, run_python
from rknnx.vision import Detector

FRAME = np.random.default_rng(0).integers(0, 256, (480, 640, 3), np.uint8)


@pytest.mark.parametrize("workers", [1, 3])
def test_a_model_close_racing_detect_waits_for_the_frames_and_never_refuses(emu, workers):
    emu.set_platform("RK3588")
    src = model_bytes("detector")
    gc.collect()
    base = live(emu)
    said = set()
    for _ in range(12):
        m = rknnx.Model(src)
        det = Detector(m, workers=workers)
        stop = threading.Event()
        errors: list = []
        ran = threading.Event()

        def loop():
            try:
                while not stop.is_set():
                    det.detect(FRAME)
                    ran.set()
            except Exception as e:       # the end every loop meets
                errors.append(e)
            finally:
                ran.set()

        threads = [threading.Thread(target=loop) for _ in range(2)]
        for t in threads:
            t.start()
        ran.wait(30)
        time.sleep(0.01)
        m.close()                        # before: BufferError (a frame's views), or half
        stop.set()                       # closed with the frames' sessions
        for t in threads:
            t.join(30)
        assert not any(t.is_alive() for t in threads)
        assert m.closed and all(s.closed for s in det.sessions)
        for e in errors:
            assert type(e) is RuntimeError, repr(e)
            said.add(str(e))
        det.close()
        del det, m
    assert said <= {"detect: the Detector's Model was closed",
                    "the Detector was closed while this frame waited"}, said
    gc.collect()
    assert live(emu) == base


CALLBACK = """
import signal, numpy as np, rknnx
from rknnx.emulator import samples
from rknnx.vision import Detector
from rknnx.vision import detector as D
rknnx.load_runtime("emulator")
m = rknnx.Model(samples.ALL["detector"]())
det = Detector(m, workers={workers})
frame = np.random.default_rng(0).integers(0, 256, (480, 640, 3), np.uint8)
said = {{}}

def in_frame(f):
    while f is not None:
        if f.f_code is D.Detector._frame.__code__:
            return True
        f = f.f_back
    return False

def handler(sig, f):
    # a call back into the detector from inside one of its frames in this thread
    if not in_frame(f):
        signal.setitimer(signal.ITIMER_REAL, 0.0003)
        return
    for name, call in (("detect", lambda: det.detect(frame)), ("close", det.close),
                       ("check_closable", det.check_closable)):
        try:
            call()
            said[name] = "nothing"
        except RuntimeError as e:
            said[name] = str(e).split(" (")[0]

signal.signal(signal.SIGALRM, handler)
signal.setitimer(signal.ITIMER_REAL, 0.0003)
n = 0
while not said and n < 5000:
    det.detect(frame)
    n += 1
signal.setitimer(signal.ITIMER_REAL, 0)
print(sorted(said.items()))
assert not det.closed
assert len(det.detect(frame)) == len(det.detect(frame))
det.close()
m.close()
print("closed", det.closed, m.closed)
"""


@pytest.mark.parametrize("workers", [1, 3])
def test_a_close_or_detect_from_inside_a_frame_is_refused_not_a_hang(workers):
    # before: the handler's close (and detect) waited for ever for the session its own
    # thread held (workers=1: the frame runs in the calling thread)
    p = run_python(CALLBACK.format(workers=workers), env={"RKNNX_RUNTIME": None,
                                                          "RKNN_EMU_PLATFORM": "RK3588"},
                   timeout=120)
    assert p.returncode == 0, p.stderr[-3000:]
    busy = "the Detector is busy in this thread"
    assert p.stdout.splitlines() == [
        str([("check_closable", f"close: {busy}"), ("close", f"close: {busy}"),
             ("detect", f"detect: {busy}")]),
        "closed True True"], p.stdout


@pytest.mark.parametrize("workers", [1, 3])
def test_a_close_refused_by_a_view_closes_nothing(emu, workers):
    emu.set_platform("RK3588")
    src = model_bytes("detector")
    gc.collect()
    base = live(emu)
    m = rknnx.Model(src)
    det = Detector(m, workers=workers)
    want = det.detect(FRAME)
    view = det.sessions[-1].outputs[0]
    with pytest.raises(BufferError, match="buffer view"):
        det.check_closable()
    with pytest.raises(BufferError, match="buffer view"):
        det.close()
    # before: the detector said it was closed, with its sessions half closed
    assert not det.closed and not any(s.closed for s in det.sessions)
    got = list(det.map([FRAME] * 4))
    for d in got:
        np.testing.assert_array_equal(d.boxes, want.boxes)
    del view
    det.close()
    assert det.closed and all(s.closed for s in det.sessions)
    m.close()
    del det, m, got, want
    gc.collect()
    assert live(emu) == base


FORK = """
import os, signal, threading, time, warnings, numpy as np, rknnx
from rknnx.emulator import samples
from rknnx.vision import Detector
rknnx.load_runtime("emulator")
warnings.simplefilter("ignore", DeprecationWarning)      # fork with threads running
frame = np.random.default_rng(0).integers(0, 256, (480, 640, 3), np.uint8)
m = rknnx.Model(samples.ALL["detector"]())
det = Detector(m, workers={workers})
stop = threading.Event()
ran = threading.Event()

def loop():
    while not stop.is_set():
        det.detect(frame)
        ran.set()

t = threading.Thread(target=loop)
t.start()
ran.wait(30)
pids = []
for what in ("detect", "submit", "map"):
    pid = os.fork()
    if pid == 0:
        signal.alarm(10)                  # a hang ends the child with SIGALRM
        try:
            {{"detect": lambda: det.detect(frame), "submit": lambda: det.submit(frame).result(),
             "map": lambda: list(det.map([frame]))}}[what]()
            said = "ran"
        except RuntimeError as e:
            said = str(e).split(" (")[0]
        os.write(1, f"{{what}} {{said}}\\n".encode())     # one write: children interleave
        os._exit(0)
    pids.append(pid)
codes = [os.waitpid(pid, 0)[1] for pid in pids]
os.write(1, "".join(f"child exit {{c}}\\n" for c in codes).encode())
stop.set()
t.join()
det.close()
m.close()
"""


@pytest.mark.parametrize("workers", [1, 3])
def test_a_child_forked_while_frames_run_is_refused_the_parents_detector_not_hung(workers):
    # before (workers=1): the child waited for ever for the session a parent thread held
    # at the fork; with free sessions it said the session's words
    p = run_python(FORK.format(workers=workers), env={"RKNNX_RUNTIME": None,
                                                      "RKNN_EMU_PLATFORM": "RK3588"},
                   timeout=120)
    assert p.returncode == 0, p.stderr[-3000:]
    lines = p.stdout.splitlines()
    assert [line for line in lines if line.startswith("child exit")] == ["child exit 0"] * 3, \
        p.stdout
    said = sorted(line for line in lines if not line.startswith("child exit"))
    assert [line.split(" ", 1)[0] for line in said] == ["detect", "map", "submit"]
    assert all("this Detector was created in process" in line and "cannot be used in "
               "process" in line for line in said), said


IN_CLOSE = """
import signal, threading, time, numpy as np, rknnx
from rknnx.emulator import samples
from rknnx.vision import Detector
from rknnx.vision import detector as D
rknnx.load_runtime("emulator")
m = rknnx.Model(samples.ALL["detector"]())
frame = np.random.default_rng(0).integers(0, 256, (480, 640, 3), np.uint8)
said = []
check = rknnx.ZeroCopySession.check_closable

def slow_check(self, what="close"):
    # a session's check waits for its lock (a run of it in another thread): a while
    time.sleep(0.005)
    return check(self, what)

rknnx.ZeroCopySession.check_closable = slow_check

def in_close(f):
    # the close has taken every session back and not yet closed them
    while f is not None and not (f.f_code.co_filename == D.__file__ and
                                 "taken" in f.f_code.co_varnames):
        f = f.f_back
    return f is not None and not det.closed and \
        len(f.f_locals.get("taken", ())) == det.workers

for attempt in range(50):
    det = Detector(m, workers=1)
    stop = threading.Event()
    ran = threading.Event()

    def loop():
        try:
            while not stop.is_set():
                det.detect(frame)
                ran.set()
        except RuntimeError:
            pass

    t = threading.Thread(target=loop)
    t.start()
    ran.wait(30)

    def handler(sig, f):
        if said:
            return
        if not in_close(f):
            signal.setitimer(signal.ITIMER_REAL, 0.0005)    # again (one at a time)
            return
        try:
            det.detect(frame)
            said.append("ran")
        except RuntimeError as e:
            said.append(str(e).split(" (")[0])

    signal.signal(signal.SIGALRM, handler)
    signal.setitimer(signal.ITIMER_REAL, 0.0005)
    det.close()
    signal.setitimer(signal.ITIMER_REAL, 0)
    stop.set()
    t.join()
    if said:
        break
print(said, det.closed)
m.close()
"""


def test_a_detect_from_a_signal_handler_inside_a_close_is_refused_not_a_hang():
    # before: the handler's detect waited for ever for the sessions the close (its own
    # thread) had taken back
    p = run_python(IN_CLOSE, env={"RKNNX_RUNTIME": None, "RKNN_EMU_PLATFORM": "RK3588"},
                   timeout=120)
    assert p.returncode == 0, p.stderr[-3000:]
    assert p.stdout.splitlines() == [
        "['detect: the Detector is busy in this thread'] True"], p.stdout


@pytest.mark.parametrize("workers", [1, 3])
def test_a_close_is_not_starved_by_detects_looping_in_other_threads(emu, workers):
    from helpers import bounded

    emu.set_platform("RK3588")
    gc.collect()
    base = live(emu)
    m = rknnx.Model(model_bytes("detector"))
    det = Detector(m, workers=workers)
    ran = threading.Event()
    said: list = []

    def loop():
        try:
            while True:
                det.detect(FRAME)
                ran.set()
        except RuntimeError as e:
            said.append(str(e))

    threads = [threading.Thread(target=loop, daemon=True) for _ in range(2)]
    for t in threads:
        t.start()
    ran.wait(30)
    bounded(det.close, 30)               # the loops take no session once it has begun
    for t in threads:
        t.join(30)
    assert det.closed and set(said) <= {"detect on a closed Detector",
                                        "the Detector was closed while this frame waited"}
    m.close()
    del det, m
    gc.collect()
    assert live(emu) == base
