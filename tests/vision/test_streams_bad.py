"""rknnx.vision.Streams on bad input: a missing file, an unreadable one, a V4L2 device that
is not there, a video whose codec the decoder lacks, a file cut short, a source failing
midway, frames changing size, a source that blocks: each a clear error in that stream's
last record (or its normal end), the other streams whole, no hang; flat memory over 10,000
frames; every thread joined and the emulator's live counters back at their baseline."""

from __future__ import annotations

import gc
import os
import threading
import time
import warnings

import numpy as np
import pytest

import rknnx
from helpers import model_bytes, rss_kib
from rknnx.vision import Streams
from rknnx.vision import streams as streams_module
from stream_helpers import RecordingTracker, tiny_yolo

av = pytest.importorskip("av", reason="PyAV (the video extra: pip install 'rknnx[video]') "
                                      "is not installed")

FRAMES = 30


@pytest.fixture(scope="module")
def video(tmp_path_factory):
    from rknnx.emulator.samples import squares_video

    d = tmp_path_factory.mktemp("bad")
    path = d / "squares.mp4"
    squares_video(path, width=320, height=240, frames=FRAMES, squares=2)
    return str(path)


def run(sources, **kw):
    kw.setdefault("tracker", None)
    with Streams(model_bytes("detector"), sources, **kw) as streams:
        recs = list(streams)
    return recs, streams.stats()


def only_error(recs, stream):
    errs = [r for r in recs if r.error is not None]
    assert [r.stream for r in errs] == [stream], errs
    assert errs[0] is [r for r in recs if r.stream == stream][-1]
    return errs[0]


def test_a_missing_file_fails_its_stream_alone(video, baseline, tmp_path):
    missing = str(tmp_path / "nothing.mp4")
    recs, stats = run([video, missing])
    err = only_error(recs, 1)
    assert err.index == 0 and isinstance(err.error, FileNotFoundError)
    assert "No such file or directory" in str(err.error) and missing in str(err.error)
    assert [r.index for r in recs if r.stream == 0] == list(range(FRAMES))
    assert [s.state for s in stats] == ["ended", "failed"]


def test_an_unreadable_file_fails_its_stream_alone(video, baseline, tmp_path):
    junk = tmp_path / "junk.mp4"
    junk.write_bytes(np.random.default_rng(0).integers(0, 256, 50_000, np.uint8).tobytes())
    recs, _ = run([str(junk), video])
    err = only_error(recs, 0)
    assert isinstance(err.error, ValueError) and "Invalid data found" in str(err.error)
    assert [r.index for r in recs if r.stream == 1] == list(range(FRAMES))


def test_a_v4l2_device_that_is_not_there_fails_its_stream(video, baseline):
    dev = "/dev/video99"
    if os.path.exists(dev):                       # pragma: no cover - a real camera
        pytest.skip(f"{dev} exists here")
    recs, stats = run([dev, video])
    err = only_error(recs, 0)
    assert isinstance(err.error, FileNotFoundError) and dev in str(err.error)
    assert stats[0].live and not stats[1].live


def test_a_codec_the_decoder_lacks_fails_its_stream(video, baseline, tmp_path):
    from rknnx.emulator.samples import squares_video

    avi = tmp_path / "m4.avi"
    squares_video(avi, width=160, height=128, frames=5, codec="mpeg4")
    data = avi.read_bytes()
    assert data.count(b"FMP4") == 2
    avi.write_bytes(data.replace(b"FMP4", b"ZQ9X"))   # a fourcc no decoder knows
    recs, _ = run([str(avi), video])
    err = only_error(recs, 0)
    assert isinstance(err.error, LookupError)
    assert str(err.error).startswith(f"stream 0: {str(avi)!r}'s video codec has no decoder "
                                     f"in PyAV's FFmpeg")
    assert [r.index for r in recs if r.stream == 1] == list(range(FRAMES))


def test_a_file_cut_short_ends_early_in_order(video, baseline, tmp_path):
    from rknnx.emulator.samples import squares_video

    ts = tmp_path / "cut.ts"
    squares_video(ts, width=320, height=240, frames=FRAMES, squares=2)
    data = ts.read_bytes()
    ts.write_bytes(data[:len(data) // 2])
    recs, stats = run([str(ts), video])
    short = [r.index for r in recs if r.stream == 0]
    assert 0 < len(short) < FRAMES and short == list(range(len(short)))
    assert stats[0].state in ("ended", "failed")
    assert [r.index for r in recs if r.stream == 1] == list(range(FRAMES))


def test_a_source_failing_midway_ends_with_its_error(video, baseline):
    def camera():
        f = np.full((240, 320, 3), 20, np.uint8)
        for _ in range(5):
            yield f
        raise OSError("camera unplugged")

    recs, stats = run([camera(), video])
    err = only_error(recs, 0)
    assert err.index == 5 and type(err.error) is OSError
    assert str(err.error) == "camera unplugged"
    assert [r.index for r in recs if r.stream == 0] == list(range(6))
    assert stats[0].state == "failed" and stats[0].frames == 5 and stats[0].error is err.error
    assert [r.index for r in recs if r.stream == 1] == list(range(FRAMES))


def test_frames_changing_size_go_on_and_reset_the_tracker(baseline):
    small = np.full((240, 320, 3), 20, np.uint8)
    small[40:120, 40:120] = 230
    big = np.full((480, 640, 3), 20, np.uint8)
    big[300:460, 400:560] = 230
    tracker = RecordingTracker()
    recs, stats = run([[small] * 3 + [big] * 3], tracker=tracker)
    assert [r.index for r in recs] == list(range(6)) and stats[0].state == "ended"
    for r in recs:
        h, w = (240, 320) if r.index < 3 else (480, 640)
        assert len(r.detections) >= 1
        b = r.detections.boxes[0]
        assert 0 <= b[0] < b[2] <= w and 0 <= b[1] < b[3] <= h
    assert abs(recs[4].detections.boxes[0][0] - 400) < 16
    calls = tracker.copies[0].calls
    assert [c[0] for c in calls] == ["update"] * 3 + ["reset"] + ["update"] * 3


def test_a_source_that_blocks_times_out_alone(video, baseline):
    release = threading.Event()

    def stuck():
        f = np.full((240, 320, 3), 20, np.uint8)
        yield f
        release.wait()                       # a camera that hangs in its own code
        yield f

    recs = []
    try:
        with Streams(model_bytes("detector"), [stuck(), video], tracker=None,
                     timeout=0.5) as streams:
            for r in streams:
                recs.append(r)
                if r.error is not None:
                    release.set()            # the camera comes back after its time-out
    finally:
        release.set()
    err = only_error(recs, 0)
    assert isinstance(err.error, TimeoutError) and err.index == 1
    assert str(err.error) == "stream 0: no frame from its source (generator) in 0.5 s " \
                             "(timeout=)"
    assert [r.index for r in recs if r.stream == 1] == list(range(FRAMES))
    assert streams.overran == []


def test_a_source_still_blocked_at_close_is_named(baseline, monkeypatch):
    monkeypatch.setattr(streams_module, "CLOSE_DEADLINE", 0.3)
    release = threading.Event()

    def stuck():
        release.wait()
        yield np.zeros((240, 320, 3), np.uint8)

    streams = Streams(model_bytes("detector"), [stuck()], tracker=None, timeout=0.2)
    try:
        recs = []
        with pytest.warns(RuntimeWarning, match=r"rknnx-streams-source-0 still running "
                                                r"after the close's deadline"):
            for r in streams:                # the time-out record, then the close
                recs.append(r)
        assert isinstance(recs[-1].error, TimeoutError)
        assert streams.overran == ["rknnx-streams-source-0"]
    finally:
        release.set()
    for t in threading.enumerate():
        if t.name == "rknnx-streams-source-0":
            t.join(10)


def test_memory_stays_flat_over_10000_frames(baseline, emu):
    frames = [np.full((48, 64, 3), v, np.uint8) for v in (30, 200, 120, 250)]

    def source(n):
        for k in range(n):
            yield frames[k % 4]

    model = rknnx.Model(tiny_yolo())

    def once(n):
        count = 0
        with Streams(model, [source(n), source(n)], workers=2,
                     tracker=RecordingTracker()) as streams:
            for r in streams:
                count += 1
                assert r.error is None
        return count, streams.stats()

    once(500)                                # warm: allocator pools, first-use caches
    gc.collect()
    before = rss_kib()
    n, stats = once(5000)
    gc.collect()
    grown = rss_kib() - before
    assert n == 10_000 and [s.frames for s in stats] == [5000, 5000]
    assert grown < 4096, f"RSS grew by {grown} KiB over 10,000 frames"
    model.close()


def test_a_path_source_without_pyav_says_how_to_install(baseline, monkeypatch):
    import builtins

    real = builtins.__import__

    def no_av(name, *a, **kw):
        if name == "av":
            raise ImportError("No module named 'av'")
        return real(name, *a, **kw)

    monkeypatch.setattr(builtins, "__import__", no_av)
    with pytest.raises(ImportError, match=r"reading a path or URL needs PyAV: pip install "
                                          r"'rknnx\[video\]'"):
        Streams(model_bytes("detector"), ["a.mp4"], tracker=None)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with Streams(model_bytes("detector"), [[np.zeros((32, 32, 3), np.uint8)]],
                     tracker=None) as s:
            assert len(list(s)) == 1


# -- the review's findings ----------------------------------------------------------------------
def moving_square(buf, x):
    buf[:] = 0
    buf[60:140, x:x + 60] = 255
    return buf


def test_a_source_refilling_one_buffer_gets_each_frames_own_boxes(baseline):
    """A source that refills the array it yielded before (cv2's read(image=buf)) is read as
    each frame, not as the newest: the worker reads after the yield, so Streams copies a
    frame that comes back at the same address."""
    xs = [20 + 20 * k for k in range(8)]
    buf = np.zeros((240, 320, 3), np.uint8)
    fresh = [moving_square(np.zeros((240, 320, 3), np.uint8), x) for x in xs]

    def refilled():
        for x in xs:
            yield moving_square(buf, x)

    recs, _ = run([refilled(), iter(fresh)], frames=True)
    boxes = {k: [r.detections.boxes for r in recs if r.stream == k] for k in (0, 1)}
    assert len(boxes[0]) == len(xs)
    for a, b in zip(boxes[0], boxes[1]):
        np.testing.assert_array_equal(a, b)
    assert len({round(float(b[0, 0])) for b in boxes[0]}) == len(xs)   # every frame its own


def test_a_close_from_inside_a_source_stops_and_the_end_closes_everything(baseline):
    frame = moving_square(np.zeros((240, 320, 3), np.uint8), 40)
    holder = {}

    def closer():
        for k in range(1000):
            if k == 3:
                holder["s"].close()          # from the source's own thread: it only stops
            yield frame

    s = holder["s"] = Streams(model_bytes("detector"), [closer()], tracker=None)
    recs = list(s)
    assert len(recs) <= 3 and all(r.error is None for r in recs)
    assert s.closed and s.detector.closed


def test_a_close_racing_another_waits_for_its_joins(baseline):
    """close() while another thread's close joins a source stuck in user code returns only
    once that close has joined everything and closed the Detector."""
    frame = moving_square(np.zeros((240, 320, 3), np.uint8), 40)
    release = threading.Event()

    def stuck():
        yield frame
        release.wait(3)
        yield frame

    m = rknnx.Model(model_bytes("detector"))
    s = Streams(m, [stuck()], tracker=None, timeout=None)
    it = iter(s)
    next(it)
    closer = threading.Thread(target=s.close)
    closer.start()
    threading.Timer(0.5, release.set).start()
    time.sleep(0.2)                                 # the first close is under way
    s.close()                                       # what the `with` exit does
    assert s.closed and s.detector.closed
    assert not [t.name for t in threading.enumerate() if t.name.startswith("rknnx-streams")]
    closer.join()
    m.close()


def test_a_base_exception_in_a_tracker_fails_its_stream_not_the_workers(baseline):
    class GivesUp(RecordingTracker):
        def copy(self):
            return GivesUp()

        def update(self, dets, dt=None):
            raise SystemExit("the tracker gave up")

    frames = [moving_square(np.zeros((240, 320, 3), np.uint8), 20 + 4 * k) for k in range(5)]
    recs, stats = run([iter(frames), iter(frames)], tracker=GivesUp(), timeout=5)
    assert sorted(r.stream for r in recs) == [0, 1]      # each stream: its error, alone
    for r in recs:
        assert isinstance(r.error, SystemExit) and "gave up" in str(r.error)
    assert [s.state for s in stats] == ["failed", "failed"]


def test_next_in_a_child_of_fork_is_refused_not_a_hang(baseline):
    frames = [moving_square(np.zeros((240, 320, 3), np.uint8), 20 + k) for k in range(50)]
    with Streams(model_bytes("detector"), [iter(frames)], tracker=None) as s:
        next(iter(s))
        pid = os.fork()
        if pid == 0:                     # the child: next() must raise at once
            code = 3
            try:
                import signal

                signal.alarm(10)         # a hang ends the child with SIGALRM
                next(s)
            except RuntimeError as e:
                code = 0 if "fork" in str(e) else 4
            except BaseException:
                code = 5
            os._exit(code)
        _, status = os.waitpid(pid, 0)
        assert os.WEXITSTATUS(status) == 0, status
        list(s)


def test_a_duck_tracker_without_low_is_named(baseline):
    class NoLow:
        def update(self, dets, dt=None):
            return None

        def reset(self):
            pass

        def copy(self):
            return NoLow()

    with pytest.raises(TypeError, match="low score threshold `low`"):
        Streams(model_bytes("detector"), [iter([])], tracker=NoLow())


def test_planes_of_the_wrong_rank_are_named(baseline):
    y = np.zeros(240 * 320, np.uint8)
    u = v = np.zeros(120 * 160, np.uint8)
    recs, _ = run([iter([(y, u, v)])])
    err = only_error(recs, 0).error
    assert isinstance(err, ValueError) and "a 2-D Y plane (h, w)" in str(err), err
