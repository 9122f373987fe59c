"""rknnx.vision.Streams on files and frames: the whole path (PyAV decode -> letterbox from
the decoder's planes -> the NPU (emulator) -> decode -> track) on the squares video, 1 and
8 streams, 1 and 3 workers: records in frame order, no frame lost from a file, boxes equal
to the Detector's on the same frames, IDF1 >= 0.95 against the video's ground truth;
numpy BGR / NV12 / planes and dma-buf (memfd, MPP's layouts) sources; async for,
detect_fps, frames=True; every thread joined and the emulator's live counters back at
their baseline after close."""

from __future__ import annotations

import asyncio
import os

import numpy as np
import pytest

import rknnx
from helpers import model_bytes
from rknnx.vision import Detector, Record, Streams
from stream_helpers import (RecordingTracker, bgr_to_nv12, idf1, iou_matrix, memfd_nv12,
                            memfd_packed)

av = pytest.importorskip("av", reason="PyAV (the video extra: pip install 'rknnx[video]') "
                                      "is not installed")

FRAMES = 60


@pytest.fixture(scope="module")
def videos(tmp_path_factory):
    """Two squares videos (separate bands), their ground truths."""
    from rknnx.emulator.samples import squares_video

    d = tmp_path_factory.mktemp("squares")
    out = []
    for seed in (0, 1):
        path = d / f"squares{seed}.mp4"
        truth = squares_video(path, width=640, height=360, frames=FRAMES, squares=3,
                              seed=seed)
        out.append((str(path), truth))
    return out


def decoded_frames(path):
    """The BGR frames of a video by PyAV alone (the reference's input)."""
    with av.open(path) as c:
        return [f.to_ndarray(format="bgr24") for f in c.decode(video=0)]


def planes_of(path):
    """(fmt, planes) of each frame of a video decoded by PyAV alone: the software
    decoder's I420 planes, as Streams hands them to the letterbox."""
    out = []
    with av.open(path) as c:
        for f in c.decode(video=0):
            assert f.format.name == "yuv420p"
            planes = [np.frombuffer(p, np.uint8).reshape(-1, p.line_size) for p in f.planes]
            w, h = f.width, f.height
            out.append(("i420", (planes[0][:h, :w], planes[1][:h // 2, :w // 2],
                                 planes[2][:h // 2, :w // 2])))
    return out


def check_order(records, n_streams, frames):
    by = {k: [] for k in range(n_streams)}
    for r in records:
        assert isinstance(r, Record)
        assert r.error is None, r.error
        by[r.stream].append(r.index)
    for k in range(n_streams):
        assert by[k] == list(range(frames)), f"stream {k}: {by[k][:10]}..."


@pytest.mark.parametrize("workers", [1, 3])
@pytest.mark.parametrize("n_streams", [1, 8])
def test_files_in_order_nothing_lost_boxes_as_the_detectors(videos, baseline, workers,
                                                            n_streams):
    paths = [videos[k % 2][0] for k in range(n_streams)]
    model = rknnx.Model(model_bytes("detector"))
    ref = [planes_of(videos[k][0]) for k in (0, 1)]
    with Detector(model) as det, Streams(model, paths, workers=workers, tracker=None,
                                         frames=True) as streams:
        records, seen = [], {}
        for r in streams:
            # the record's frame is that index of that stream's video (decoded apart by
            # PyAV) and its boxes are the Detector's on it: no frame mixed up between
            # streams, workers or the reorder buffer
            fmt, want = ref[r.stream % 2][r.index]
            assert r.fmt == fmt
            for a, b in zip(r.frame, want):
                np.testing.assert_array_equal(a, b)
            key = (r.stream % 2, r.index)
            if key not in seen:
                seen[key] = det.detect(r.frame, fmt=r.fmt)
            d = seen[key]
            np.testing.assert_array_equal(r.detections.boxes, d.boxes)
            np.testing.assert_array_equal(r.detections.scores, d.scores)
            records.append(r)
    assert streams.closed
    check_order(records, n_streams, FRAMES)
    stats = streams.stats()
    assert [s.frames for s in stats] == [FRAMES] * n_streams
    assert [s.decoded for s in stats] == [FRAMES] * n_streams
    assert all(s.drops == 0 and s.state == "ended" and s.error is None for s in stats)
    assert all(s.p50 is not None and 0 < s.p50 <= s.p99 for s in stats)
    assert all("software" in s.decoder and "h264" in s.decoder for s in stats)
    model.close()


@pytest.mark.parametrize("workers", [1, 3])
@pytest.mark.parametrize("n_streams", [1, 8])
def test_tracks_keep_the_squares_ids(videos, baseline, workers, n_streams):
    paths = [videos[k % 2][0] for k in range(n_streams)]
    got = {k: ([], []) for k in range(n_streams)}
    with Streams(model_bytes("detector"), paths, workers=workers) as streams:
        for r in streams:
            assert r.error is None, r.error
            got[r.stream][0].append(r.tracks.ids)
            got[r.stream][1].append(r.tracks.boxes)
    for k in range(n_streams):
        truth = videos[k % 2][1]
        assert len(got[k][0]) == FRAMES
        score = idf1(truth.ids, truth.boxes, *got[k])
        assert score >= 0.95, (k, score)
    assert all(s.tracks >= 3 for s in streams.stats())


def test_idf1_is_motmetrics_idf1():
    mm = pytest.importorskip("motmetrics", reason="motmetrics is not installed")
    rng = np.random.default_rng(5)
    gt_ids, gt_boxes, pr_ids, pr_boxes = [], [], [], []
    acc = mm.MOTAccumulator(auto_id=True)
    for f in range(40):
        g = np.arange(1, 4)
        gb = np.array([[10 + 50 * k + f, 10, 40 + 50 * k + f, 40] for k in g], np.float32)
        keep = rng.random(3) > 0.2
        p = np.where(f < 20, g, g[::-1] + 10)[keep]
        pb = gb[keep] + rng.normal(0, 3, (keep.sum(), 4))
        gt_ids.append(g), gt_boxes.append(gb), pr_ids.append(p), pr_boxes.append(pb)
        dist = 1 - iou_matrix(gb, pb)
        acc.update(g, p, np.where(dist <= 0.5, dist, np.nan))
    want = mm.metrics.create().compute(acc, metrics=["idf1"])["idf1"].iloc[0]
    assert idf1(gt_ids, gt_boxes, pr_ids, pr_boxes) == pytest.approx(want, abs=1e-9)


def test_idf1_scores_a_swap_and_a_perfect_run():
    ids = [np.array([1, 2])] * 10
    boxes = [np.array([[0, 0, 10, 10], [20, 0, 30, 10]], np.float32)] * 10
    assert idf1(ids, boxes, ids, boxes) == 1.0
    swapped = ids[:5] + [np.array([2, 1])] * 5
    assert idf1(ids, boxes, swapped, boxes) == pytest.approx(0.5)


def frames_of(n, w=320, h=240, seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for k in range(n):
        f = np.full((h, w, 3), 20, np.uint8)
        x = 20 + 3 * k
        f[60:140, x:x + 80] = 230
        f += rng.integers(0, 8, f.shape, dtype=np.uint8)
        out.append(f)
    return out


def test_numpy_sources_bgr_nv12_and_planes_give_the_detectors_boxes(baseline):
    bgr = frames_of(12)
    nv12 = [bgr_to_nv12(f) for f in bgr]
    packed = [np.concatenate([y, uv]) for y, uv in nv12]
    model = rknnx.Model(model_bytes("detector"))
    with Streams(model, {"bgr": bgr, "planes": nv12, "packed": packed}, tracker=None,
                 workers=2) as streams:
        assert streams.names == ["bgr", "planes", "packed"]
        records = list(streams)
    check_order(records, 3, 12)
    with Detector(model) as det:
        want = {0: [det.detect(f) for f in bgr],
                1: [det.detect(f, fmt="nv12") for f in nv12],
                2: [det.detect(f, fmt="nv12") for f in packed]}
    for r in records:
        assert r.pts is None
        w = want[r.stream][r.index]
        np.testing.assert_array_equal(r.detections.boxes, w.boxes)
        np.testing.assert_array_equal(r.detections.scores, w.scores)
    model.close()


def test_dma_buf_frames_in_mpps_layouts_are_mapped_with_their_pitch(baseline):
    rng = np.random.default_rng(3)
    bgr = np.full((1080, 1920, 3), 15, np.uint8)
    bgr[300:600, 500:800] = 240
    bgr += rng.integers(0, 6, bgr.shape, dtype=np.uint8)
    y, uv = bgr_to_nv12(bgr)
    # 1920x1080 in a 1920x1088 buffer; a 2304-byte pitch (MPP's 256-byte odd multiple)
    bufs = [memfd_nv12(y, uv, pitch=1920, rows=1088), memfd_nv12(y, uv, pitch=2304,
                                                                 rows=1088)]
    model = rknnx.Model(model_bytes("detector"))
    try:
        with Streams(model, [bufs[:1] * 3, bufs[1:] * 3], tracker=None,
                     frames=True) as streams:
            records = list(streams)
        with Detector(model) as det:
            want = det.detect((y, uv), fmt="nv12")
        check_order(records, 2, 3)
        for r in records:
            np.testing.assert_array_equal(r.detections.boxes, want.boxes)
            assert r.fmt == "nv12" and r.frame[0].shape == (1080, 1920)
            assert r.frame[0].strides[0] == (1920, 2304)[r.stream]
        assert len(want) and iou_matrix(want.boxes[:1], [[500, 300, 800, 600]])[0, 0] > 0.8
    finally:
        for b in bufs:
            b.close()
        model.close()


def test_a_dma_buf_that_does_not_fit_its_planes_fails_its_stream(baseline):
    y = np.zeros((64, 64), np.uint8)
    uv = np.zeros((32, 64), np.uint8)
    good = memfd_nv12(y, uv, pitch=64, rows=64)
    bad = memfd_nv12(y, uv, pitch=64, rows=64)
    bad.pitches = (128, 128)                 # 64 rows of 128 bytes: past the buffer
    odd = memfd_nv12(y, uv, pitch=64, rows=64)
    odd.format = "yuyv"
    try:
        with Streams(model_bytes("detector"), [[good] * 2, [bad], [odd]],
                     tracker=None) as streams:
            records = list(streams)
        errors = {r.stream: r.error for r in records if r.error is not None}
        assert sorted(errors) == [1, 2]
        assert isinstance(errors[1], ValueError)
        assert "plane 0 (64 rows of 128 bytes at offset 0) ends past the buffer's 6144 " \
               "bytes" in str(errors[1])
        assert isinstance(errors[2], ValueError) and \
            "format is 'nv12', 'bgr' or 'rgb'; got 'yuyv'" in str(errors[2])
        assert [r.index for r in records if r.stream == 0] == [0, 1]
    finally:
        for b in (good, bad, odd):
            b.close()


def test_dma_buf_frames_of_the_inputs_size_and_layout_are_bound_not_copied(baseline):
    rng = np.random.default_rng(5)
    model = rknnx.Model(model_bytes("detector"))
    try:
        with Detector(model, workers=2) as det:
            w, h = det.input_size
            bgr = np.full((h, w, 3), 15, np.uint8)
            bgr[100:300, 200:420] = 240
            bgr[400:520, 40:160] = 200
            bgr += rng.integers(0, 6, bgr.shape, dtype=np.uint8)
            rgb = np.ascontiguousarray(bgr[..., ::-1])
            # the model takes RGB (swap_rb): an RGB frame of its size with packed rows is
            # its input's bytes (bound); a BGR one is swapped, a padded pitch is not
            # packed, a smaller frame is letterboxed (all three mapped)
            bufs = [memfd_packed(rgb, "rgb", offset=4096),
                    memfd_packed(bgr, "bgr"),
                    memfd_packed(rgb, "rgb", pitch=3 * w + 64),
                    memfd_packed(rgb[:h // 2, :w // 2], "rgb")]
            before = det.bound_frames
            with Streams(det, [[b] * 3 for b in bufs], tracker=None,
                         frames=True) as streams:
                records = list(streams)
                stats = streams.stats()
            want = det.detect(bgr)
            want_small = det.detect(bgr[:h // 2, :w // 2])
            check_order(records, 4, 3)
            assert [s.bound for s in stats] == [3, 0, 0, 0]
            assert det.bound_frames - before == 3
            for r in records:
                ref = want_small if r.stream == 3 else want
                np.testing.assert_array_equal(r.detections.boxes, ref.boxes)
                np.testing.assert_array_equal(r.detections.scores, ref.scores)
                np.testing.assert_array_equal(r.detections.classes, ref.classes)
                assert r.detections.letterbox.scale == ref.letterbox.scale
            assert len(want) == 2
            # the NPU read the buffer in place: it is unchanged
            got = np.frombuffer(os.pread(bufs[0].fd, rgb.nbytes, 4096), np.uint8)
            np.testing.assert_array_equal(got.reshape(rgb.shape), rgb)
            del records, want, want_small
    finally:
        for b in bufs:
            b.close()
        model.close()


def test_frames_true_keeps_the_decoded_frame_and_bgr_converts_it(videos, baseline):
    path = videos[0][0]
    ref = decoded_frames(path)
    with Streams(model_bytes("detector"), [path], tracker=None, frames=True) as streams:
        for r in streams:
            assert r.fmt == "i420" and r.matrix == "bt601"
            img = r.bgr()
            assert img.shape == (360, 640, 3)
            # libswscale's BGR and the letterbox's agree within the rounding of BT.601
            diff = np.abs(img.astype(int) - ref[r.index].astype(int))
            assert np.percentile(diff, 99) <= 3, np.percentile(diff, 99)
            assert abs(r.pts - r.index / 30) < 1e-6


def test_async_for_gives_the_same_records(videos, baseline):
    path = videos[0][0]
    sync = [(r.stream, r.index, len(r.detections))
            for r in Streams(model_bytes("detector"), [path, path], tracker=None)]

    async def run():
        out = []
        streams = Streams(model_bytes("detector"), [path, path], tracker=None)
        with streams:
            async for r in streams:
                out.append((r.stream, r.index, len(r.detections)))
        return out

    got = asyncio.run(run())
    assert sorted(got) == sorted(sync)
    assert [g for g in got if g[0] == 1] == [s for s in sync if s[0] == 1]


def test_detect_fps_runs_the_model_on_that_many_frames_a_second(videos, baseline):
    path = videos[0][0]
    tracker = RecordingTracker()
    with Streams(model_bytes("detector"), [path], tracker=tracker,
                 detect_fps=10) as streams:
        idx = [r.index for r in streams]
    assert idx == list(range(0, FRAMES, 3))
    # the tracker predicts across the skipped frames: each update steps 0.1 s
    dts = [c[2] for c in tracker.copies[0].calls]
    assert dts[0] is None and dts[1:] == pytest.approx([0.1] * (len(idx) - 1), abs=1e-6)
    s = streams.stats()[0]
    assert s.skipped == FRAMES - len(idx) and s.decoded == FRAMES and s.drops == 0


def test_close_mid_iteration_joins_every_thread(videos, baseline):
    path = videos[0][0]
    model = rknnx.Model(model_bytes("detector"))
    streams = Streams(model, [path] * 4, workers=3, tracker=None)
    seen = 0
    for _ in streams:
        seen += 1
        if seen == 5:
            break
    streams.close()
    streams.close()                          # twice: nothing
    assert streams.closed and streams.overran == []
    with pytest.raises(RuntimeError, match="iterate on a closed Streams"):
        iter(streams)
    model.close()


def test_a_detector_given_stays_open_and_brings_its_parameters(videos, baseline):
    model = rknnx.Model(model_bytes("detector"))
    det = Detector(model, conf=0.6, workers=2)
    with Streams(det, [videos[0][0]], tracker=None) as streams:
        recs = list(streams)
    assert not det.closed and len(recs) == FRAMES
    assert all((r.detections.scores >= 0.6).all() for r in recs)
    with pytest.raises(ValueError, match="a Detector brings its workers"):
        Streams(det, [videos[0][0]], workers=2, tracker=None)
    with pytest.raises(ValueError, match=r"brings its decoding parameters; \['conf'\]"):
        Streams(det, [videos[0][0]], conf=0.3, tracker=None)
    det.close()
    with pytest.raises(ValueError, match="Streams on a closed Detector"):
        Streams(det, [videos[0][0]], tracker=None)
    model.close()


def test_bad_parameters_are_refused_before_any_thread(baseline):
    src = model_bytes("detector")
    with pytest.raises(TypeError, match="source 0 is a ndarray; a source is a path or URL"):
        Streams(src, [np.zeros((4, 4, 3), np.uint8)], tracker=None)
    with pytest.raises(TypeError, match="sources is a list .* got int"):
        Streams(src, 3, tracker=None)
    with pytest.raises(ValueError, match="sources is empty"):
        Streams(src, [], tracker=None)
    with pytest.raises(ValueError, match="detect_fps is a number .* got 0"):
        Streams(src, [[]], tracker=None, detect_fps=0)
    with pytest.raises(ValueError, match="reconnect is a number .* got -1"):
        Streams(src, [[]], tracker=None, reconnect=-1)
    with pytest.raises(TypeError, match=r"live is True, False or None \(or one of those per "
                                        r"source: 1\); got 1"):
        Streams(src, [[]], tracker=None, live=1)
    with pytest.raises(TypeError, match="tracker is True, None, or a Tracker .* got str"):
        Streams(src, [[]], tracker="bytetrack")
    with pytest.raises(ValueError, match="Detector: workers must be an int >= 1; got 0"):
        Streams(src, [[]], tracker=None, workers=0)


def test_a_bad_frame_fails_its_stream_alone(baseline):
    good = frames_of(6)
    bad = frames_of(3) + [np.zeros((10, 10), np.float32)] + frames_of(3)
    with Streams(model_bytes("detector"), [good, bad, good], tracker=None) as streams:
        records = list(streams)
    errs = [r for r in records if r.error is not None]
    assert len(errs) == 1 and errs[0].stream == 1 and errs[0].index == 3
    assert isinstance(errs[0].error, TypeError)
    assert str(errs[0].error) == "stream 1's frame 3 is a float32 array; frames are uint8"
    assert errs[0].detections is None and errs[0].tracks is None
    assert [r.index for r in records if r.stream == 1] == [0, 1, 2, 3]
    for k in (0, 2):
        assert [r.index for r in records if r.stream == k] == list(range(6))
    st = streams.stats()
    assert [s.state for s in st] == ["ended", "failed", "ended"]
    assert st[1].error is errs[0].error


def test_tracks_are_no_worse_than_trackers_bytetrack_on_the_same_frames(videos, baseline):
    """IDF1 of Streams' tracks >= that of the same decoded frames through the Detector and
    roboflow trackers' ByteTrack, less 0.02 (issue 38 item 4)."""
    sv = pytest.importorskip("supervision", reason="supervision is not installed")
    trackers = pytest.importorskip("trackers", reason="roboflow trackers is not installed")
    model = rknnx.Model(model_bytes("detector"))
    for path, truth in videos:
        ours = ([], [])
        with Streams(model, [path], frames=True) as streams, Detector(model, conf=0.1) as det:
            ref = trackers.ByteTrackTracker()
            theirs = ([], [])
            for r in streams:
                ours[0].append(r.tracks.ids)
                ours[1].append(r.tracks.boxes)
                d = det.detect(r.frame, fmt=r.fmt)
                t = ref.update(sv.Detections(xyxy=d.boxes, confidence=d.scores,
                                             class_id=d.classes.astype(int)))
                ids = np.asarray(t.tracker_id, np.int64)
                keep = ids >= 0
                theirs[0].append(ids[keep])
                theirs[1].append(np.asarray(t.xyxy)[keep])
        a = idf1(truth.ids, truth.boxes, *ours)
        b = idf1(truth.ids, truth.boxes, *theirs)
        assert a >= b - 0.02, (path, a, b)
    model.close()


def test_live_per_source_must_match_the_sources(baseline):
    with pytest.raises(TypeError, match=r"one of those per source: 2\); got \[True\]"):
        Streams(model_bytes("detector"), [[], []], tracker=None, live=[True])


def test_a_bt709_stream_is_read_with_its_own_matrix(baseline, tmp_path):
    """A stream tagged BT.709 (HD cameras) goes to the letterbox with matrix='bt709': its
    colours come back as they were, where BT.601 would shift them."""
    from rknnx.vision import letterbox

    path = str(tmp_path / "709.mp4")
    img = np.zeros((240, 320, 3), np.uint8)
    img[:, :160] = (40, 200, 60)
    img[:, 160:] = (220, 60, 200)
    with av.open(path, "w") as out:
        vs = out.add_stream("libx264" if "libx264" in av.codecs_available else "mpeg4",
                            rate=30)
        vs.width, vs.height, vs.pix_fmt = 320, 240, "yuv420p"
        vs.codec_context.colorspace, vs.codec_context.color_range = 1, 1   # BT.709, MPEG
        for _ in range(3):
            f = av.VideoFrame.from_ndarray(img, format="bgr24").reformat(
                format="yuv420p", dst_colorspace="ITU709", dst_color_range="MPEG")
            for packet in vs.encode(f):
                out.mux(packet)
        for packet in vs.encode(None):
            out.mux(packet)
    model = rknnx.Model(model_bytes("detector"))
    with Detector(model) as det, Streams(model, [path], tracker=None,
                                         frames=True) as streams:
        for r in streams:
            assert r.fmt == "i420" and r.matrix == "bt709"
            got = r.bgr().astype(int)
            assert np.abs(got[40:200, 20:140] - img[0, 0]).max() <= 4
            assert np.abs(got[40:200, 180:300] - img[0, 200]).max() <= 4
            as601 = letterbox(r.frame, (320, 240), fmt="i420")[0].astype(int)
            assert np.abs(as601[120, 250] - img[0, 200]).max() > 10
            want = det.detect(r.frame, fmt="i420", matrix="bt709")
            np.testing.assert_array_equal(r.detections.boxes, want.boxes)
            np.testing.assert_array_equal(r.detections.scores, want.scores)
    model.close()
