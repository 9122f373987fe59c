"""tests/vision/scenes.py, the tracker's synthetic scenes, are what they say: object counts
0 to 200, crossings with 10-25 missed frames, 20 frames seen only at low scores, births and
deaths, jittered detections with misses and false positives; the same seed, the same scene."""

import numpy as np
import pytest

import scenes


def test_counts_go_from_0_to_200():
    assert [scenes.scene("counts", s).objects for s in range(4)] == [0, 5, 50, 200]


def test_a_seed_gives_one_scene():
    a, b = scenes.scene("low", 3), scenes.scene("low", 3)
    assert all(np.array_equal(x[0], y[0]) for x, y in zip(a.detections, b.detections))
    assert not np.array_equal(a.detections[5][0], scenes.scene("low", 4).detections[5][0])


def _runs(flags):
    """Lengths of the runs of True in a sequence of bools."""
    out, n = [], 0
    for f in list(flags) + [False]:
        if f:
            n += 1
        elif n:
            out.append(n)
            n = 0
    return out


def _own(s, oid, cond=lambda score: True):
    """Per frame the object is in view: whether it has a detection of its own meeting
    cond(score)."""
    out = []
    for (ids, _), (_, sc, _), src in zip(s.truth, s.detections, s.source):
        if oid in ids:
            k = np.flatnonzero(src == oid)
            out.append(bool(k.size) and cond(sc[k[0]]))
    return out


def test_crossings_hide_one_object_for_10_to_25_frames():
    s = scenes.scene("crossing", 1)
    assert s.objects == 12
    longest = [max(_runs([not x for x in _own(s, oid)]), default=0) for oid in range(1, 13)]
    hidden = [n for n in longest if n >= 10]
    assert len(hidden) == 6 and all(10 <= n <= 25 for n in hidden)


def test_low_scenes_see_objects_only_at_low_scores_for_20_frames():
    s = scenes.scene("low", 0)
    for oid in range(1, 6):
        low = _runs([x for x in _own(s, oid, lambda v: v < 0.5)])
        assert 12 <= max(low) <= 22     # 20 frames, less random misses, plus a random
                                        # middling score next to them


def test_births_and_deaths_and_false_positives():
    s = scenes.scene("births", 0)
    first = {}
    last = {}
    for f, (ids, _) in enumerate(s.truth):
        for i in ids.tolist():
            first.setdefault(i, f)
            last[i] = f
    assert sum(f > 10 for f in first.values()) > 40
    assert sum(f < s.frames - 10 for f in last.values()) > 40
    n_truth = sum(len(ids) for ids, _ in s.truth)
    n_det = sum(len(b) for b, _, _ in s.detections)
    assert n_det > 0.9 * n_truth                  # misses, and false positives
    with pytest.raises(ValueError, match="family must be one of"):
        scenes.scene("nope", 0)
