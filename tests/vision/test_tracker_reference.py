"""rknnx.vision.Tracker against its reference, roboflow `trackers` 2.6.1's ByteTrackTracker
(both with their defaults), on the same detections of the synthetic scenes of scenes.py:
on every family the mean IDF1 and MOTA (motmetrics, IoU >= 0.5) over 8 scenes are within
0.01 of the reference's, or better; on the scene without objects it confirms no more false
tracks than the reference.

Needs `trackers==2.6.1`, `motmetrics` and `pandas` (trackers brings opencv-python, which
clashes with the test extra's opencv-python-headless): CI runs this module in a venv of its
own (.ci/run); elsewhere it skips, naming what is missing.

Run as a script, it prints the table of docs/guide/track.md (and, with --ablate, the same
with each of the tracker's departures from the paper's code undone):
    python tests/vision/test_tracker_reference.py [--ablate]
"""

from __future__ import annotations

import functools
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import scenes  # noqa: E402

SEEDS = range(8)


def _need():
    missing = []
    for mod in ("trackers", "supervision", "motmetrics", "pandas"):
        try:
            __import__(mod)
        except ImportError:
            missing.append(mod)
    if missing:
        pytest.skip(f"the reference comparison needs {', '.join(missing)} (pip install "
                    f"trackers==2.6.1 motmetrics pandas; CI: .ci/run's tracker step)")
    from importlib.metadata import version
    if version("trackers") != "2.6.1":
        pytest.skip(f"the reference is trackers 2.6.1; {version('trackers')} is installed")


def rknnx_run(**kw):
    from rknnx.vision import Detections, Tracker
    tr = Tracker(**kw)

    def run(b, s, c):
        t = tr.update(Detections(b, s, c))
        return t.boxes, t.ids
    return run


def reference_run():
    import supervision as sv
    from trackers import ByteTrackTracker
    tr = ByteTrackTracker()

    def run(b, s, c):
        o = tr.update(sv.Detections(xyxy=b, confidence=s, class_id=c))
        keep = o.tracker_id != -1      # its unconfirmed detections
        return o.xyxy[keep], o.tracker_id[keep]
    return run


@functools.lru_cache(maxsize=None)
def reference_metrics(family, seed):
    return scenes.metrics(scenes.scene(family, seed), reference_run())


def family_means(family, make=rknnx_run):
    """Mean IDF1 and MOTA over the family's scenes with objects, ours and the reference's."""
    ours, ref = [], []
    for seed in SEEDS:
        s = scenes.scene(family, seed)
        if s.objects == 0:
            continue
        a, b = scenes.metrics(s, make()), reference_metrics(family, seed)
        ours.append((a["idf1"], a["mota"]))
        ref.append((b["idf1"], b["mota"]))
    return np.mean(ours, 0), np.mean(ref, 0)


@pytest.mark.parametrize("family", scenes.FAMILIES)
def test_idf1_and_mota_within_0_01_of_the_reference_or_better(family):
    _need()
    (idf1, mota), (ref_idf1, ref_mota) = family_means(family)
    assert idf1 >= ref_idf1 - 0.01, (family, idf1, ref_idf1)
    assert mota >= ref_mota - 0.01, (family, mota, ref_mota)


def test_a_scene_without_objects_gives_no_more_false_tracks():
    _need()
    s = scenes.scene("counts", 0)
    assert s.objects == 0 and sum(len(d[0]) for d in s.detections) > 100
    ours = scenes.metrics(s, rknnx_run())["num_false_positives"]
    ref = reference_metrics("counts", 0)["num_false_positives"]
    assert ours <= ref


def _table(ablate: bool):
    import rknnx.vision.tracker as T
    rows = [("rknnx defaults", {})]
    if ablate:
        rows += [("paper: low boxes for tracked tracks only", {"_SECOND_LOST": False}),
                 ("paper: unconfirmed threshold 0.7", {"_MATCH_UNCONFIRMED": 0.7}),
                 ("paper: duplicates removed (IoU > 0.85)", {"_DUP_IOU": 0.85}),
                 ("paper: all three", {"_SECOND_LOST": False, "_MATCH_UNCONFIRMED": 0.7,
                                       "_DUP_IOU": 0.85})]
    print(f"{'':44s} {'family':9s} {'IDF1':>7s} {'ref':>7s} {'MOTA':>7s} {'ref':>7s}")
    for name, change in rows:
        saved = {k: getattr(T, k) for k in change}
        for k, v in change.items():
            setattr(T, k, v)
        try:
            for fam in scenes.FAMILIES:
                (i, m), (ri, rm) = family_means(fam)
                print(f"{name:44s} {fam:9s} {i:7.4f} {ri:7.4f} {m:7.4f} {rm:7.4f}", flush=True)
        finally:
            for k, v in saved.items():
                setattr(T, k, v)


if __name__ == "__main__":
    _table("--ablate" in sys.argv)
