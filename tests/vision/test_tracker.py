"""rknnx.vision.Tracker and Tracks: the tracker's own behaviour (no reference library
needed; the comparison with roboflow `trackers` is test_tracker_reference.py).

Ids on a straight-moving box, on crossings (seen, and with one hidden while crossing), a
miss within the buffer keeps its id and one past it ends at the frame the buffer says;
started/ended; the first-frame rule and min_hits; low-score boxes keep tracks but start
none; per_class; dt steps the filter by the real gap and ages lost tracks by it; reset,
copy; threads on one tracker and on many; bad input refused naming the parameter, the state
untouched; Tracks' indexing, masks following their detection, to_supervision; memory flat
over many updates."""

from __future__ import annotations

import copy
import gc
import pickle
import sys
import threading

import numpy as np
import pytest

from rknnx.vision import Detections, Tracker, Tracks


def box(x, y, w=40, h=80):
    return [x, y, x + w, y + h]


def dets(boxes, scores=None, classes=None, **kw):
    n = len(boxes)
    return Detections(np.asarray(boxes, np.float32).reshape(-1, 4),
                      np.full(n, 0.9, np.float32) if scores is None else scores,
                      np.zeros(n, np.int32) if classes is None else classes, **kw)


def id_of(tracks, row):
    """The id of the track that took detection `row`, or None."""
    hit = np.flatnonzero(tracks.detection == row)
    return int(tracks.ids[hit[0]]) if hit.size else None


def test_a_straight_moving_box_keeps_id_1():
    tr = Tracker()
    for f in range(120):
        t = tr.update(dets([box(10 + 3 * f, 20)]))
        assert t.ids.tolist() == [1] and t.detection.tolist() == [0]
        assert t.started.tolist() == ([1] if f == 0 else []) and t.ended.size == 0
        assert t.ids.dtype == np.int64 and t.detection.dtype == np.int64
        # the filter's box after the update, close to the detection's
        assert np.abs(t.boxes[0] - np.array(box(10 + 3 * f, 20))).max() < 2.0


@pytest.mark.parametrize("hidden", [0, 12, 25])
def test_same_size_boxes_crossing_keep_their_ids(hidden):
    """Two boxes of one size cross head on; with `hidden` > 0 the one behind is not
    detected for that many frames around the crossing, and comes back with its id."""
    tr = Tracker()
    mid = 50
    for f in range(100):
        a, b = box(20 + 4 * f, 40), box(420 - 4 * f, 44)
        seen_b = not (mid - hidden // 2 <= f < mid - hidden // 2 + hidden) if hidden else True
        t = tr.update(dets([a, b] if seen_b else [a]))
        assert id_of(t, 0) == 1, f
        if seen_b:
            assert id_of(t, 1) == 2, f
    assert tr.live == 2


def test_a_miss_within_the_buffer_keeps_the_id_past_it_the_track_ends():
    tr = Tracker(buffer=30)
    seen = [f < 20 or 45 <= f < 60 for f in range(130)]
    ended_at = None
    for f in range(130):
        t = tr.update(dets([box(10 + 2 * f, 20)]) if seen[f] else Detections.empty())
        if f == 45:
            assert t.ids.tolist() == [1]          # 25 frames unseen: still 1
        if t.ended.size:
            assert t.ended.tolist() == [1] and ended_at is None
            ended_at = f
    # last seen at frame 59; ended when unseen for more than 30 frames
    assert ended_at == 59 + 31
    assert tr.live == 0


def test_buffer_scales_with_fps():
    tr = Tracker(buffer=30, fps=60)             # 60 frames at 60 fps
    for f in range(10):
        tr.update(dets([box(10, 20)]))
    ended = [f for f in range(100) if tr.update(Detections.empty()).ended.size]
    assert ended == [60]


def test_started_and_ended_name_the_frames_ids():
    tr = Tracker()
    t = tr.update(dets([box(10, 20)]))               # first frame: confirmed at once
    assert t.started.tolist() == [1]
    t = tr.update(dets([box(10, 20), box(300, 20)]))  # a new box: unconfirmed
    assert t.ids.tolist() == [1] and t.started.size == 0
    t = tr.update(dets([box(10, 20), box(300, 20)]))  # matched again: id 2
    assert t.ids.tolist() == [1, 2] and t.started.tolist() == [2]
    assert t.detection.tolist() == [0, 1]
    for _ in range(30):
        t = tr.update(dets([box(300, 20)]))
        assert 1 not in t.ids
    t = tr.update(dets([box(300, 20)]))
    assert t.ended.tolist() == [1] and t.ids.tolist() == [2]


def test_ids_are_in_ascending_order_whatever_the_detection_order():
    tr = Tracker()
    xs = [10, 200, 400, 600]
    for f in range(6):
        order = [3, 1, 0, 2] if f % 2 else [0, 1, 2, 3]
        t = tr.update(dets([box(xs[i] + f, 20) for i in order]))
    assert t.ids.tolist() == [1, 2, 3, 4]
    # detection rows follow the order of this frame's detections
    assert [xs[[3, 1, 0, 2][r]] for r in t.detection] == xs


@pytest.mark.parametrize("min_hits", [0, 1, 3])
def test_min_hits_after_birth_before_an_id(min_hits):
    tr = Tracker(min_hits=min_hits)
    tr.update(Detections.empty())                # the first-frame rule spent
    first = [len(tr.update(dets([box(10 + f, 20)]))) for f in range(6)]
    assert first == [0] * min_hits + [1] * (6 - min_hits)


def test_an_unconfirmed_track_that_misses_is_removed_without_an_id():
    tr = Tracker()
    tr.update(Detections.empty())
    tr.update(dets([box(10, 20)]))               # born, unconfirmed
    assert tr.live == 1
    t = tr.update(Detections.empty())
    assert tr.live == 0 and t.ended.size == 0    # it never had an id
    t = tr.update(dets([box(300, 20)]))
    t = tr.update(dets([box(300, 20)]))
    assert t.ids.tolist() == [1]                 # no id was spent on it


def test_low_score_boxes_keep_tracks_but_start_none():
    tr = Tracker()
    for f in range(5):
        assert len(tr.update(dets([box(10, 20)], np.float32([0.3])))) == 0
    assert tr.live == 0
    tr.reset()
    for f in range(60):
        score = 0.9 if f < 10 or f >= 40 else 0.3   # 30 frames seen only at 0.3
        t = tr.update(dets([box(10 + 2 * f, 20)], np.float32([score])))
        assert t.ids.tolist() == [1], f
        assert t.scores[0] == np.float32(score)
    # below low: ignored
    t = tr.update(dets([box(130, 20)], np.float32([0.05])))
    assert len(t) == 0


def test_a_low_box_after_a_miss_continues_the_lost_track():
    """The change from the paper's code: the low association takes lost tracks too."""
    tr = Tracker()
    for f in range(10):
        tr.update(dets([box(10 + 2 * f, 20)]))
    tr.update(Detections.empty())                 # missed once: lost
    for f in range(11, 30):
        t = tr.update(dets([box(10 + 2 * f, 20)], np.float32([0.3])))
        assert t.ids.tolist() == [1], f


def test_new_threshold():
    tr = Tracker(new=0.95)
    for f in range(4):
        assert len(tr.update(dets([box(10, 20)], np.float32([0.9])))) == 0
    t = tr.update(dets([box(10, 20)], np.float32([0.96])))
    assert tr.live == 1


def test_per_class_keeps_tracks_to_their_class():
    boxes = [box(10, 20), box(14, 22)]
    tr = Tracker(per_class=True)
    for f in range(6):
        cls = np.int32([0, 1]) if f % 2 == 0 else np.int32([1, 0])
        bb = boxes if f % 2 == 0 else boxes[::-1]
        t = tr.update(dets(bb, classes=cls))
        assert {int(i): int(c) for i, c in zip(t.ids, t.classes)} == {1: 0, 2: 1}
    # by default a track takes the better box of any class and reports its class
    tr = Tracker()
    for f in range(3):
        t = tr.update(dets([box(10, 20)], classes=np.int32([f])))
        assert t.ids.tolist() == [1] and t.classes.tolist() == [f]


def test_dt_steps_the_prediction_by_the_real_gap():
    """A box moving 5 px a frame, updated every 10th frame: with dt the filter predicts
    50 px ahead and keeps the id; stepping one frame it loses the box."""
    def run(with_dt):
        tr = Tracker()
        for f in range(20):
            tr.update(dets([box(10 + 5 * f, 20)]))
        ids = []
        for f in range(30, 200, 10):
            t = tr.update(dets([box(10 + 5 * f, 20)]), dt=10 / 30 if with_dt else None)
            ids.append(t.ids.tolist())
        return ids
    assert run(True) == [[1]] * 17
    assert run(False)[0] == []


def test_dt_ages_lost_tracks_in_seconds():
    tr = Tracker(buffer=30, fps=30)               # one second
    tr.update(dets([box(10, 20)]))
    assert tr.update(Detections.empty(), dt=0.9).ended.size == 0
    assert tr.update(Detections.empty(), dt=0.2).ended.tolist() == [1]
    tr = Tracker(buffer=30, fps=15)               # still one second at 15 fps
    tr.update(dets([box(10, 20)]))
    assert tr.update(Detections.empty(), dt=0.9).ended.size == 0
    assert tr.update(Detections.empty(), dt=0.2).ended.tolist() == [1]


@pytest.mark.parametrize("dt", [1e3, 1e200, 1e307])
def test_a_gap_past_the_buffer_ends_the_tracks_and_stays_finite(dt):
    """A gap longer than the buffer predicts as the buffer + 1 frame (a step of 1e200 frames
    made NaN boxes, and 1e307 an error blaming the detections): every track unmatched in
    it ends, and one matched again after it keeps finite boxes."""
    tr = Tracker()
    for f in range(5):
        tr.update(dets([box(10 + 4 * f, 20)]))
    t = tr.update(Detections.empty(), dt=dt)
    assert t.ended.tolist() == [1]
    t = tr.update(dets([box(30, 20)]), dt=dt)
    assert np.isfinite(t.boxes).all()
    t = tr.update(dets([box(31, 20)]))
    assert t.ids.tolist() == [2] and np.isfinite(t.boxes).all()


def test_dt_zero_predicts_nothing():
    tr = Tracker()
    for f in range(10):
        tr.update(dets([box(10 + 4 * f, 20)]))
    t = tr.update(dets([box(46, 20)]), dt=0)      # the same instant again
    assert t.ids.tolist() == [1]


def test_reset_forgets_everything_and_ids_start_again():
    tr = Tracker()
    for f in range(5):
        tr.update(dets([box(10, 20), box(200, 20)]))
    t = tr.update(dets([box(400, 20)]))
    tr.reset()
    assert tr.live == 0
    t = tr.update(dets([box(400, 20)]))
    assert t.ids.tolist() == [1] and t.started.tolist() == [1]   # first frame again


def test_copy_has_the_parameters_and_no_state():
    tr = Tracker(high=0.4, low=0.2, new=0.5, match=0.7, buffer=12, fps=25, min_hits=2,
                 state="xywh", per_class=True)
    for f in range(5):
        tr.update(dets([box(10, 20)]))
    c = tr.copy()
    assert repr(c) == repr(tr) and c.live == 0 and tr.live == 1
    for name in ("high", "low", "new", "match", "buffer", "fps", "min_hits", "state",
                 "per_class"):
        assert getattr(c, name) == getattr(tr, name)
    t = c.update(dets([box(300, 20)]))
    assert t.ids.tolist() == [1]                  # its own counter
    with pytest.raises(TypeError, match="Tracker.copy"):
        copy.copy(tr)
    with pytest.raises(TypeError, match="cannot be pickled"):
        pickle.dumps(tr)


def test_parameters_are_read_only_attributes():
    tr = Tracker()
    assert (tr.high, tr.low, tr.new, tr.match, tr.buffer, tr.fps, tr.min_hits, tr.state,
            tr.per_class) == (0.5, 0.1, 0.6, 0.8, 30, 30.0, 1, "xyah", False)
    with pytest.raises(AttributeError):
        tr.low = 0.2


@pytest.mark.parametrize("kw, exc, msg", [
    ({"high": 1.5}, ValueError, r"high must be in \[0, 1\], got 1.5"),
    ({"low": -0.1}, ValueError, r"low must be in \[0, 1\]"),
    ({"low": 0.6, "high": 0.5}, ValueError, "low must be <= high"),
    ({"new": "0.6"}, TypeError, "new must be a number"),
    ({"match": True}, TypeError, "match must be a number"),
    ({"buffer": -1}, ValueError, r"buffer must be an int in \[0, 2147483647\]"),
    ({"buffer": 2.5}, TypeError, "buffer must be an int"),
    ({"fps": 0}, ValueError, r"fps must be a number in \(0, 10000\]"),
    ({"fps": float("nan")}, ValueError, r"fps must be a number in \(0, 10000\]"),
    ({"fps": 1e300}, ValueError, r"fps must be a number in \(0, 10000\], got 1e\+300"),
    ({"fps": None}, TypeError, "fps must be a number"),
    ({"min_hits": -2}, ValueError, r"min_hits must be an int in \[0, 2147483647\]"),
    ({"min_hits": 2**31}, ValueError, r"min_hits must be an int in \[0, 2147483647\]"),
    ({"state": "xyxy"}, ValueError, "state must be 'xyah' or 'xywh'"),
    ({"per_class": 1}, TypeError, "per_class must be a bool"),
])
def test_bad_parameters_are_refused_naming_them(kw, exc, msg):
    with pytest.raises(exc, match=msg):
        Tracker(**kw)


def test_positional_parameters_are_refused():
    with pytest.raises(TypeError):
        Tracker(0.5)


def test_bad_update_input_is_refused_and_the_state_kept():
    tr = Tracker()
    for f in range(3):
        tr.update(dets([box(10 + f, 20)]))
    with pytest.raises(TypeError, match="detections must be rknnx.vision.Detections, got list"):
        tr.update([[0, 0, 10, 10]])
    with pytest.raises(ValueError, match="dt must be a finite number of seconds >= 0"):
        tr.update(dets([box(13, 20)]), dt=-0.1)
    with pytest.raises(ValueError, match="dt must be a finite number"):
        tr.update(dets([box(13, 20)]), dt=float("inf"))
    with pytest.raises(TypeError, match="dt must be a number of seconds, got str"):
        tr.update(dets([box(13, 20)]), dt="1")
    bad = dets([box(13, 20), [np.nan, 0, 10, 10]])
    with pytest.raises(ValueError, match="not finite"):
        tr.update(bad)
    bad = dets([box(13, 20)], np.float32([np.inf]))
    with pytest.raises(ValueError, match="not finite"):
        tr.update(bad)
    t = tr.update(dets([box(13, 20)]))
    assert t.ids.tolist() == [1] and tr.live == 1


def test_boxes_without_area_are_never_tracked():
    tr = Tracker()
    for f in range(4):
        t = tr.update(dets([[10, 10, 10, 50], [20, 20, 60, 15]]))
        assert len(t) == 0
    assert tr.live == 0


def test_tracks_index_and_iterate_with_their_ids():
    tr = Tracker()
    masks = np.zeros((3, 64, 64), bool)
    for i in range(3):
        masks[i, i, i] = True
    kps = np.arange(3 * 2 * 3, dtype=np.float32).reshape(3, 2, 3)
    for f in range(3):
        d = dets([box(400, 20), box(10, 20), box(200, 20)], masks=masks, keypoints=kps,
                 names=["a", "b"])
        t = tr.update(d)
    assert isinstance(t, Tracks) and isinstance(t, Detections)
    assert t.ids.tolist() == [1, 2, 3] and t.detection.tolist() == [0, 1, 2]
    d2 = dets([box(10, 20), box(200, 20), box(400, 20)], masks=masks, keypoints=kps)
    t = tr.update(d2)
    assert t.detection.tolist() == [2, 0, 1]
    assert np.array_equal(t.masks, masks[[2, 0, 1]])
    assert np.array_equal(t.keypoints, kps[[2, 0, 1]])
    one = t[1]
    assert isinstance(one, Tracks) and one.ids.tolist() == [2] and one.detection.tolist() == [0]
    sub = t[np.array([True, False, True])]
    assert sub.ids.tolist() == [1, 3] and sub.masks.shape == (2, 64, 64)
    assert t[::-1].ids.tolist() == [3, 2, 1]
    assert [x.ids.tolist() for x in t] == [[1], [2], [3]]
    assert all(x.started is t.started for x in t)
    with pytest.raises(IndexError, match="out of range"):
        t[5]
    assert "3 tracks" in repr(t)


def test_names_and_letterbox_follow():
    tr = Tracker()
    d = dets([box(10, 20)], names=["cat"])
    d.letterbox = object()
    t = tr.update(d)
    assert t.names == ("cat",) and t.labels == ["cat"] and t.letterbox is d.letterbox


def test_tracks_built_by_hand():
    t = Tracks([box(0, 0)], [0.5], [1], [7], [0], started=[7])
    assert t.ids.tolist() == [7] and t.started.tolist() == [7] and t.ended.size == 0
    with pytest.raises(ValueError, match="1 boxes, 2 ids"):
        Tracks([box(0, 0)], [0.5], [1], [7, 8], [0])
    with pytest.raises(TypeError, match="ids must be integers"):
        Tracks([box(0, 0)], [0.5], [1], [7.5], [0])
    assert len(Tracks.empty()) == 0


def test_to_supervision_without_supervision_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "supervision", None)
    t = Tracker().update(dets([box(0, 0)]))
    with pytest.raises(ImportError, match=r'pip install "rknnx\[supervision\]"'):
        t.to_supervision()


def test_to_supervision_gives_tracker_ids():
    sv = pytest.importorskip("supervision", reason="supervision is not installed "
                             "(the [supervision] extra)")
    tr = Tracker()
    for f in range(3):
        t = tr.update(dets([box(10 + f, 20), box(200, 20)], classes=np.int32([1, 0]),
                           names=["a", "b"]))
    s = t.to_supervision()
    assert isinstance(s, sv.Detections)
    assert s.tracker_id.tolist() == [1, 2] and s.class_id.tolist() == [1, 0]
    assert np.array_equal(s.xyxy, t.boxes) and list(s.data["class_name"]) == ["b", "a"]


def _frames(n_frames, n_obj, seed):
    rng = np.random.default_rng(seed)
    xy = rng.uniform(0, 1500, (n_obj, 2))
    v = rng.uniform(-3, 3, (n_obj, 2))
    out = []
    for f in range(n_frames):
        p = xy + v * f
        b = np.concatenate([p, p + 40], 1) + rng.normal(0, 1, (n_obj, 4))
        keep = rng.random(n_obj) > 0.1
        out.append(dets(b[keep], rng.uniform(0.2, 1, keep.sum()).astype(np.float32)))
    return out


def _warmed(n_frames, n_obj, seed):
    """A Tracker that has run over :func:`_frames`, those frames, and its scratch bytes."""
    tr = Tracker()
    fr = _frames(n_frames, n_obj, seed)
    for d in fr:
        tr.update(d)
    return tr, fr, tr._c.nbytes


def test_threads_on_many_trackers_give_the_sequential_results():
    frames = [_frames(150, 30, s) for s in range(4)]

    def run(tr, fr):
        return [(t.ids.tolist(), t.detection.tolist()) for t in map(tr.update, fr)]

    want = [run(Tracker(), fr) for fr in frames]
    got = [None] * 4

    def work(i):
        got[i] = run(Tracker(), frames[i])

    th = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for x in th:
        x.start()
    for x in th:
        x.join()
    assert got == want


def test_two_threads_updating_one_tracker_are_serialized():
    tr = Tracker()
    fr = _frames(300, 40, 9)
    seen = []
    errors = []

    def work(part):
        try:
            for d in part:
                t = tr.update(d)
                assert np.all(np.diff(t.ids) > 0) and np.all(t.detection < len(d))
                seen.append(t.ids)
        except Exception as e:   # pragma: no cover - the assertion reports it
            errors.append(e)

    th = [threading.Thread(target=work, args=(fr[i::2],)) for i in range(2)]
    for x in th:
        x.start()
    for x in th:
        x.join()
    assert not errors and len(seen) == 300
    assert tr.live > 0


def test_memory_is_flat_over_many_updates():
    from helpers import rss_kib
    tr, fr, nbytes = _warmed(400, 60, 3)
    gc.collect()
    gc.disable()
    try:
        rss0 = rss_kib()
        for _ in range(25):
            tr.reset()
            for d in fr:
                tr.update(d)
        rss1 = rss_kib()
    finally:
        gc.enable()
    assert tr._c.nbytes == nbytes        # the same frames again: the scratch never grew
    assert rss1 - rss0 < 2048, (rss0, rss1)


def _crowd(n, seed):
    """n boxes piled on one another (one connected component of the assignment)."""
    rng = np.random.default_rng(seed)
    xy = rng.uniform(300, 340, (n, 2))
    b = np.concatenate([xy, xy + rng.uniform(60, 80, (n, 2))], 1)
    return dets(b, rng.uniform(0.6, 1, n).astype(np.float32))


def test_a_crowded_spike_gives_its_memory_back():
    from helpers import rss_kib, trim_heap
    tr = Tracker()
    fr = _frames(400, 60, 4)
    for d in fr[:100]:
        tr.update(d)
    base = tr._c.nbytes
    gc.collect()
    trim_heap()
    rss0 = rss_kib()
    peak = 0
    for k in range(3):                   # 2000 overlapping boxes, three frames running
        tr.update(_crowd(2000, k))
        peak = max(peak, tr._c.nbytes)
    assert peak > 100 * base, (base, peak)   # the spike did take memory
    # the extended 4000 x 4000 matrix is not stored, only its 2000 x 2000 block of costs
    # (32 MB) beside the edges: 130 MB, where storing it all took 270 MB
    assert peak < 160 * 2**20, peak
    for d in fr[100:]:
        tr.update(d)
    after = tr._c.nbytes
    gc.collect()
    trim_heap()
    rss1 = rss_kib()
    # its scratch back within the steady scene's own (no more than twice a buffer's need,
    # as it grows), and the process's memory with it once glibc is asked to give back its
    # free heap (it keeps freed chunks under its sliding mmap threshold, up to 32 MB, and
    # the 2000 x 2000 block of costs is just under that): most of the spike's 130 MB
    assert after <= 2 * base, (base, peak, after)
    assert rss1 - rss0 < peak // 1024 // 4, (rss0, rss1, peak)


def test_steady_counts_reallocate_nothing_across_trims():
    tr, fr, nbytes = _warmed(200, 150, 5)
    for d in fr[::-1]:                   # the same counts again, past several trims
        tr.update(d)
    assert tr._c.nbytes == nbytes


def test_rknnx_bench_track_prints_the_time_per_update(capsys):
    from rknnx.cli import main
    assert main(["bench", "--track", "-n", "10"]) == 0
    out = capsys.readouterr().out
    assert "time per Tracker.update (median of 3 interleaved runs of 10 frames" in out
    rows = [line.split() for line in out.splitlines() if line.split()[:1] in (["5"], ["20"],
                                                                              ["100"])]
    assert [r[0] for r in rows] == ["5", "20", "100"]
    assert all(float(r[1]) > 0 and r[2] == "us" for r in rows)


def test_rknnx_bench_track_refuses_a_model(capsys):
    from rknnx.cli import main
    assert main(["bench", "--track", "--sample", "detector"]) != 0
    assert "--track times the tracker alone" in capsys.readouterr().err
