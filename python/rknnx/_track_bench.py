"""What one ``Tracker.update`` costs, against roboflow ``trackers``' ByteTrack (and norfair
when it installs) on the same detections: the ``track`` scenario of bench/suite.py and
``rknnx bench --track``.

For each object count, one sequence of detections (objects moving at constant velocity in
a 1920x1080 frame, jittered, 5% missed, two false positives a frame, scores from 0.1 to
0.95), prepared before timing in each library's own type (``rknnx.vision.Detections``,
``supervision.Detections``, norfair ``Detection`` lists).  A run feeds the whole sequence
to a fresh tracker; the time per update is the run's CPU time of the calling thread
divided by its frames (the Python call and building the result included; the thread's CPU
time, not the wall clock, so that other processes on a shared machine do not count).  The
libraries run interleaved, each 3 times, and the median of the 3 is reported.
"""

from __future__ import annotations

import statistics
import time
from typing import Any, Dict, List, Optional, Sequence

import numpy as np

COUNTS = (5, 20, 100)
REFERENCE = "trackers 2.6.1 ByteTrack"


def sequence(n: int, frames: int, seed: int = 0):
    """(boxes float32 [k, 4], scores float32 [k], classes int32 [k]) per frame."""
    rng = np.random.default_rng([n, seed])
    h = rng.uniform(40, 160, n)
    w = h * rng.uniform(0.4, 1.0, n)
    p = rng.uniform([0, 0], [1920, 1080], (n, 2))
    v = rng.uniform(-4, 4, (n, 2))
    out = []
    for f in range(frames):
        c = p + v * f
        b = np.stack([c[:, 0] - w / 2, c[:, 1] - h / 2, c[:, 0] + w / 2, c[:, 1] + h / 2], 1)
        b += rng.normal(0, 0.02, (n, 4)) * np.stack([w, h, w, h], 1)
        keep = rng.random(n) > 0.05
        fp = rng.uniform([0, 0, 20, 20], [1800, 1000, 150, 150], (2, 4))
        fp[:, 2:] += fp[:, :2]
        boxes = np.concatenate([b[keep], fp]).astype(np.float32)
        scores = np.concatenate([rng.uniform(0.3, 0.95, keep.sum()),
                                 rng.uniform(0.1, 0.6, 2)]).astype(np.float32)
        out.append((boxes, scores, np.zeros(len(boxes), np.int32)))
    return out


def _rknnx(seq):
    from rknnx.vision import Detections, Tracker
    dets = [Detections(b, s, c) for b, s, c in seq]

    def run():
        tr = Tracker()
        up = tr.update
        for d in dets:
            up(d)
    return run


def _trackers(seq):
    try:
        from importlib.metadata import version

        import supervision as sv
        from trackers import ByteTrackTracker
    except ImportError as e:
        return None, f"trackers is not installed ({e.name}): pip install trackers==2.6.1"
    note = None if version("trackers") == "2.6.1" else f"trackers {version('trackers')}, not 2.6.1"
    dets = [sv.Detections(xyxy=b, confidence=s, class_id=c) for b, s, c in seq]

    def run():
        tr = ByteTrackTracker()
        for d in dets:
            tr.update(d)
    return run, note


def _norfair(seq):
    try:
        import norfair
    except ImportError:
        return None, ("norfair is not installed: norfair 2.3 requires numpy < 2 "
                      "(rknnx's environments have numpy 2)")
    from importlib.metadata import version
    note = None
    if int(np.__version__.split(".")[0]) >= 2:
        note = (f"norfair {version('norfair')} installed past its numpy < 2 pin "
                f"(pip --no-deps; numpy {np.__version__})")
    dets = [[norfair.Detection(points=b.reshape(2, 2), scores=np.array([s, s]))
             for b, s in zip(bb, ss)] for bb, ss, _ in seq]

    def run():
        tr = norfair.Tracker(distance_function="iou", distance_threshold=0.7)
        for d in dets:
            tr.update(detections=d)
    return run, note


def _cpu_per_frame(run, frames: int) -> float:
    t0 = time.thread_time_ns()
    run()
    return (time.thread_time_ns() - t0) / frames


def measure(counts: Sequence[int] = COUNTS, frames: int = 300, reps: int = 3,
            norfair: bool = True, say=None) -> Dict[str, Any]:
    """Per object count: each library's time per update (ns, the median of ``reps``
    interleaved runs over ``frames`` frames) and rknnx's ratio to each."""
    result: Dict[str, Any] = {"frames": frames, "reps": reps, "clock": "thread CPU time",
                              "counts": {}, "notes": []}
    for n in counts:
        seq = sequence(n, frames)
        libs = {"rknnx Tracker": (_rknnx(seq), None)}
        run, note = _trackers(seq)
        libs[REFERENCE] = (run, note)
        if norfair:
            libs["norfair"] = _norfair(seq)
        times: Dict[str, List[float]] = {k: [] for k, (r, _) in libs.items() if r}
        for k, (r, note) in libs.items():
            if note and note not in result["notes"]:
                result["notes"].append(note)
            if r:
                r()                       # warm-up
        for rep in range(reps):
            order = list(times)
            if rep % 2:
                order.reverse()
            for k in order:
                times[k].append(_cpu_per_frame(libs[k][0], frames))
        med = {k: statistics.median(v) for k, v in times.items()}
        entry = {"ns_per_update": med, "runs_ns": times, "ratio": {}}
        for k, v in med.items():
            if k != "rknnx Tracker":
                entry["ratio"][k] = v / med["rknnx Tracker"]
        result["counts"][str(n)] = entry
        if say:
            say(f"track {n}")
    return result


def _us(ns: Optional[float]) -> str:
    return "-" if ns is None else f"{ns / 1e3:8.1f} us"


def format_result(r: Dict[str, Any]) -> str:
    names = ["rknnx Tracker", REFERENCE, "norfair"]
    lines = [f"time per Tracker.update (median of {r['reps']} interleaved runs of "
             f"{r['frames']} frames; {r['clock']})",
             f"{'objects':>8s} " + " ".join(f"{n:>26s}" for n in names) + "   ratio"]
    for n, e in r["counts"].items():
        t = e["ns_per_update"]
        ratio = e["ratio"].get(REFERENCE)
        lines.append(f"{n:>8s} " + " ".join(f"{_us(t.get(k)):>26s}" for k in names) +
                     (f"   {ratio:6.1f}x less than trackers" if ratio else ""))
    for note in r["notes"]:
        lines.append(f"note: {note}")
    return "\n".join(lines)
