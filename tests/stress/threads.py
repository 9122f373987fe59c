"""A threaded stress of rknnx on the CPU emulator, for free-threaded CPython (3.13t/3.14t
with PYTHON_GIL=0) and, for the same answers, a GIL build (docs/wheels.md, Free-threaded
Python).

    python tests/stress/threads.py                       # every scenario, 8 threads x 10000
    python tests/stress/threads.py --threads 8 --iterations 10000 --only sessions,views
    python tests/stress/threads.py --json out.json       # the digests, to compare builds

Scenarios (each thread runs `iterations` of its loop; the Detector's are fewer, see
--detector-iterations: one detect is a 640x640 network on the CPU emulator):

- ``sessions``: each thread opens its own ZeroCopySession of one shared Model and, per
  iteration, writes an input, runs, checks the output against numpy (relu), and calls the
  general flow (``model.run``) on the same input; results equal numpy's.
- ``pool``: one Pool of 3 workers shared by every thread; each submits and waits, results
  equal numpy's.
- ``views``: mems of one shared Context viewed (numpy arrays written and summed,
  memoryviews, DLPack) by every thread while one more thread keeps closing them and making
  new ones: a view is either refused (BufferError/ValueError, the mem closing or closed)
  or reads the bytes it wrote; a close is either refused (views alive) or done; at the end
  every mem is closed and the emulator's live counters are back at their start.
- ``detector``: one Detector (3 workers) shared by every thread, detecting squares; every
  answer equals the single-threaded one.

A digest (SHA-256 of every checked result, in a fixed order per scenario) is printed per
scenario: a GIL build and a free-threaded build must print the same ones.  Exit status 0
when every check held; a crash is a crash.  On a free-threaded CPython the script says
whether the GIL is off (``sys._is_gil_enabled()``) and refuses to call that a
free-threaded run when it is on.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import tempfile
import threading
import time

import numpy as np

os.environ.setdefault("RKNNX_RUNTIME", "emulator")

import rknnx  # noqa: E402
import rknnx.vision  # noqa: E402
from rknnx.emulator import samples  # noqa: E402


def _relu_model(tmp: str) -> str:
    path = os.path.join(tmp, "tiny_relu.rknn")
    with open(path, "wb") as f:
        f.write(samples.tiny_relu())
    return path


def _inputs(n: int) -> list:
    rng = np.random.default_rng(1234)
    return [rng.standard_normal((1, 2)).astype(np.float32) for _ in range(n)]


def scenario_sessions(model, threads: int, iters: int) -> str:
    xs = _inputs(64)
    digests = [None] * threads
    errors = []

    def work(t):
        h = hashlib.sha256()
        try:
            with model.zero_copy() as s:
                for i in range(iters):
                    x = xs[(i + t) % len(xs)]
                    s.inputs[0][...] = x
                    s.run()
                    zc = np.array(s.outputs[0], copy=True)
                    y, = model.run(x)
                    want = np.maximum(x, 0)
                    if not (np.allclose(zc, want, atol=0.02) and np.allclose(y, want, atol=0.02)):
                        raise AssertionError(f"thread {t} iteration {i}: {zc} / {y} != {want}")
                    if i < 256:
                        h.update(zc.tobytes())
                        h.update(y.tobytes())
        except BaseException as e:   # noqa: BLE001 - reported below
            errors.append(f"sessions thread {t}: {e!r}")
        digests[t] = h.hexdigest()

    _run(work, threads)
    _raise(errors)
    return hashlib.sha256("".join(digests).encode()).hexdigest()


def scenario_pool(model, threads: int, iters: int) -> str:
    xs = _inputs(64)
    digests = [None] * threads
    errors = []
    with rknnx.Pool(model, workers=3) as pool:
        def work(t):
            h = hashlib.sha256()
            try:
                for i in range(iters):
                    x = xs[(i * 7 + t) % len(xs)]
                    y, = pool.submit(x).result()
                    if not np.allclose(y, np.maximum(x, 0), atol=0.02):
                        raise AssertionError(f"thread {t} iteration {i}: {y}")
                    if i < 256:
                        h.update(y.tobytes())
            except BaseException as e:   # noqa: BLE001
                errors.append(f"pool thread {t}: {e!r}")
            digests[t] = h.hexdigest()

        _run(work, threads)
    _raise(errors)
    return hashlib.sha256("".join(digests).encode()).hexdigest()


def scenario_views(model_path: str, threads: int, iters: int, emu) -> str:
    ll = rknnx.lowlevel
    base = emu.counters() if emu is not None else None
    ctx = ll.Context(model_path)
    slots = [ctx.create_mem(64) for _ in range(4)]
    slot_lock = threading.Lock()
    stop = threading.Event()
    counts = {"viewed": 0, "refused": 0, "closed": 0, "close_refused": 0}
    count_lock = threading.Lock()
    errors = []

    def viewer(t):
        viewed = refused = 0
        try:
            for i in range(iters):
                with slot_lock:
                    m = slots[(i + t) % len(slots)]
                k = (t * 31 + i) & 0x7F
                try:
                    kind = i % 3
                    if kind == 0:
                        a = np.asarray(m)
                        a[t] = k
                        if a[t] != k:
                            raise AssertionError("a view does not read what it wrote")
                        del a
                    elif kind == 1:
                        mv = memoryview(m)
                        mv[t] = k
                        if mv[t] != k:
                            raise AssertionError("a memoryview does not read what it wrote")
                        mv.release()
                    else:
                        a = np.from_dlpack(m)
                        a[t] = k
                        del a
                    viewed += 1
                except (BufferError, ValueError):
                    refused += 1     # the mem is being closed or is closed: refused, no view
        except BaseException as e:   # noqa: BLE001
            errors.append(f"viewer {t}: {e!r}")
        with count_lock:
            counts["viewed"] += viewed
            counts["refused"] += refused

    def closer():
        i = 0
        try:
            while not stop.is_set():
                j = i % len(slots)
                with slot_lock:
                    m = slots[j]
                try:
                    m.close()
                except BufferError:
                    counts["close_refused"] += 1
                else:
                    counts["closed"] += 1
                    with slot_lock:
                        slots[j] = ctx.create_mem(64)
                    if m.exports:
                        raise AssertionError(f"a closed mem counts {m.exports} views")
                i += 1
                if i % 64 == 0:
                    time.sleep(0)
        except BaseException as e:   # noqa: BLE001
            errors.append(f"closer: {e!r}")

    c = threading.Thread(target=closer)
    c.start()
    try:
        _run(viewer, threads)
    finally:
        stop.set()
        c.join()
    for m in slots:
        if m.exports:
            errors.append(f"{m!r} still counts views after every thread ended")
        m.close()
    ctx.close()
    if emu is not None:
        now = emu.counters()
        for k in ("live_contexts", "live_mems", "live_output_buffers"):
            if now[k] != base[k]:
                errors.append(f"emulator {k}: {base[k]} before, {now[k]} after")
    _raise(errors)
    if counts["viewed"] == 0 or counts["closed"] == 0:
        raise AssertionError(f"the race never happened: {counts}")
    print(f"  views: {counts}")
    # the digest holds what does not depend on timing: every check held
    return hashlib.sha256(b"views ok").hexdigest()


def _squares(rng, n: int = 2):
    img = np.zeros((480, 640, 3), np.uint8)
    boxes = []
    for k in range(n):
        size = int(rng.integers(60, 120))
        x0 = 40 + k * 260 + int(rng.integers(0, 40))
        y0 = 40 + k * 200 + int(rng.integers(0, 40))
        img[y0:y0 + size, x0:x0 + size] = 230
        boxes.append((x0, y0, size))
    return img


def scenario_detector(model, threads: int, iters: int) -> str:
    rng = np.random.default_rng(7)
    frames = [_squares(rng) for _ in range(4)]
    with rknnx.vision.Detector(model, "yolov8", workers=3) as det:
        want = [det.detect(f) for f in frames]
        want_b = [np.asarray(w.boxes).tobytes() + np.asarray(w.scores).tobytes() for w in want]
        if not all(len(w) for w in want):
            raise AssertionError(f"the reference detections found nothing: {want}")
        errors = []

        def work(t):
            try:
                for i in range(iters):
                    j = (i + t) % len(frames)
                    d = det.detect(frames[j])
                    got = np.asarray(d.boxes).tobytes() + np.asarray(d.scores).tobytes()
                    if got != want_b[j]:
                        raise AssertionError(f"thread {t} iteration {i}: {d} != {want[j]}")
            except BaseException as e:   # noqa: BLE001
                errors.append(f"detector thread {t}: {e!r}")

        _run(work, threads)
        _raise(errors)
    return hashlib.sha256(b"".join(want_b)).hexdigest()


def _run(fn, threads: int) -> None:
    ts = [threading.Thread(target=fn, args=(t,)) for t in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()


def _raise(errors) -> None:
    if errors:
        raise AssertionError("; ".join(errors[:8]) + (f" (+{len(errors) - 8} more)" if len(errors) > 8 else ""))


SCENARIOS = ("sessions", "pool", "views", "detector")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, default=8)
    ap.add_argument("--iterations", type=int, default=10000)
    ap.add_argument("--detector-iterations", type=int, default=25,
                    help="detects per thread (one is a 640x640 network on the CPU emulator)")
    ap.add_argument("--only", default=",".join(SCENARIOS))
    ap.add_argument("--json", help="write the digests and timings here")
    args = ap.parse_args(argv)
    gil = getattr(sys, "_is_gil_enabled", lambda: True)()
    ft = bool(__import__("sysconfig").get_config_var("Py_GIL_DISABLED"))
    print(f"python {sys.version.split()[0]} free-threaded build: {ft}, GIL enabled: {gil}; "
          f"{args.threads} threads x {args.iterations} iterations")
    try:
        from rknnx.emulator.control import EmulatorControl
        emu = EmulatorControl(rknnx.runtime.runtime_info()["path"])
    except Exception:   # noqa: BLE001 - the counters are an extra check
        emu = None
    out = {"python": sys.version, "free_threaded": ft, "gil_enabled": gil, "scenarios": {}}
    with tempfile.TemporaryDirectory() as tmp:
        relu = _relu_model(tmp)
        det_path = os.path.join(tmp, "detector.rknn")
        with open(det_path, "wb") as f:
            f.write(samples.detector())
        for name in args.only.split(","):
            t0 = time.perf_counter()
            if name == "sessions":
                with rknnx.Model(relu) as m:
                    d = scenario_sessions(m, args.threads, args.iterations)
            elif name == "pool":
                with rknnx.Model(relu) as m:
                    d = scenario_pool(m, args.threads, args.iterations)
            elif name == "views":
                d = scenario_views(relu, args.threads, args.iterations, emu)
            elif name == "detector":
                with rknnx.Model(det_path) as m:
                    d = scenario_detector(m, args.threads, args.detector_iterations)
            else:
                ap.error(f"--only: unknown scenario {name!r} (one of {', '.join(SCENARIOS)})")
            dt = time.perf_counter() - t0
            print(f"{name}: ok in {dt:.1f} s, digest {d[:16]}")
            out["scenarios"][name] = {"digest": d, "seconds": round(dt, 2)}
    if ft and gil:
        print("the GIL is enabled on this free-threaded build: not a free-threaded run")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
