"""rknnx.vision.Streams on live sources: a file played on its clock (``live=True``) and
MPEG-TS over TCP served from a thread (a network camera), with a deliberately slow model
(the emulator's simulated NPU time): a live stream keeps only its newest frame (the old one
a counted drop, records + drops = frames decoded), a file beside it loses nothing; a link
that drops reconnects with back-off and the tracker is reset across the gap; Ctrl-C during
the iteration stops and joins everything."""

from __future__ import annotations

import _thread
import os
import threading
import time

import numpy as np
import pytest

from helpers import model_bytes
from rknnx.vision import Streams
from stream_helpers import RecordingTracker, TsServer, free_port

av = pytest.importorskip("av", reason="PyAV (the video extra: pip install 'rknnx[video]') "
                                      "is not installed")

FRAMES = 60
NPU_US = 60_000


@pytest.fixture(scope="module")
def videos(tmp_path_factory):
    from rknnx.emulator.samples import squares_video

    d = tmp_path_factory.mktemp("live")
    mp4, ts = d / "squares.mp4", d / "squares.ts"
    squares_video(mp4, width=640, height=360, frames=FRAMES, squares=3)
    squares_video(ts, width=640, height=360, frames=FRAMES, squares=3)
    return str(mp4), str(ts)


def gaps(indexes):
    return [b - a - 1 for a, b in zip(indexes, indexes[1:])]


def test_a_live_file_keeps_its_newest_frame_and_a_file_loses_nothing(videos, baseline,
                                                                     emu):
    mp4 = videos[0]
    emu.set_npu_time_us(NPU_US)              # a model slower than the video's 30 fps
    tracker = RecordingTracker()
    with Streams(model_bytes("detector"), [mp4], live=True, tracker=tracker) as streams:
        recs = list(streams)
    idx = [r.index for r in recs]
    s = streams.stats()[0]
    assert s.live and s.decoded == FRAMES and s.drops > 0
    # every decoded frame is a record or a counted drop: nothing waits in a queue, and the
    # record after a drop knows the gap
    assert s.frames + s.drops == FRAMES and len(recs) == s.frames
    assert idx == sorted(idx) and idx[-1] == FRAMES - 1
    assert sum(gaps(idx)) == s.drops
    # the tracker steps its prediction by the real gap (seconds, from the frames' times)
    t = tracker.copies[0]
    updates = [c for c in t.calls if c[0] == "update"]
    assert len(updates) == len(recs)
    for (_, _, dt), g in zip(updates[1:], gaps(idx)):
        if g == 0:
            assert dt is None
        else:
            assert dt == pytest.approx((g + 1) / 30, abs=1e-6)
    # the same video as a file beside it: nothing dropped, every frame in order
    with Streams(model_bytes("detector"), [mp4, mp4], live=False, tracker=None) as streams:
        recs = list(streams)
    for k in (0, 1):
        assert [r.index for r in recs if r.stream == k] == list(range(FRAMES))
    assert all(s.drops == 0 for s in streams.stats())


def test_live_latency_stays_one_frame_deep_while_a_files_fills_its_queue(videos, baseline,
                                                                          emu):
    """Decode-to-track latency of a live stream is one frame's service time (its slot holds
    one frame); a file's waits behind its queue of frames: a ratio, in one run."""
    mp4 = videos[0]
    emu.set_npu_time_us(NPU_US)
    with Streams(model_bytes("detector"), {"live": mp4, "file": mp4}, live=[True, False],
                 tracker=None) as streams:
        list(streams)
    live_s, file_s = streams.stats()
    assert live_s.drops > 0 and file_s.drops == 0 and file_s.frames == FRAMES
    assert file_s.p50 > 2 * live_s.p50, (file_s.p50, live_s.p50)


def test_mpeg_ts_over_tcp_is_a_live_source(videos, baseline, emu):
    ts = videos[1]
    size = os.path.getsize(ts)
    server = TsServer(ts, rate=size / (FRAMES / 30))     # at the video's own pace
    emu.set_npu_time_us(NPU_US)
    try:
        with Streams(model_bytes("detector"), [server.url, videos[0]],
                     tracker=None) as streams:
            recs = list(streams)
    finally:
        server.close()
    net, file = streams.stats()
    assert net.live and not file.live
    assert net.state == "ended" and net.decoded == FRAMES and net.drops > 0
    assert net.frames + net.drops == FRAMES
    assert file.frames == FRAMES and file.drops == 0
    net_recs = [r for r in recs if r.stream == 0]
    assert all(r.pts is not None for r in net_recs)
    assert sum(len(r.detections) > 0 for r in net_recs) >= len(net_recs) - 1


def test_a_dropped_link_reconnects_and_resets_the_tracker(videos, baseline):
    ts = videos[1]
    with open(ts, "rb") as f:
        data = f.read()
    # the first connection ends a third of the way in; the second serves it whole
    server = TsServer(ts, rate=len(data) / (FRAMES / 30) * 4, times=2,
                      cut=[len(data) // 3, None])
    tracker = RecordingTracker()
    try:
        with Streams(model_bytes("detector"), [server.url], tracker=tracker,
                     reconnect=1.0) as streams:
            recs = list(streams)
    finally:
        server.close()
    s = streams.stats()[0]
    assert s.reconnects == 1 and s.state == "failed"
    err = recs[-1].error
    assert isinstance(err, ConnectionError)
    assert "did not come back within reconnect=1.0 s" in str(err)
    idx = [r.index for r in recs[:-1]]
    assert idx == sorted(idx) and len(set(idx)) == len(idx)
    calls = tracker.copies[0].calls
    assert calls.count(("reset",)) == 1
    # the reset comes with the first frame of the second connection
    k = calls.index(("reset",))
    assert 0 < k < len(calls) - 1 and calls[k + 1][2] is None


def test_a_url_that_fails_ends_its_stream_alone(videos, baseline):
    url = f"tcp://127.0.0.1:{free_port()}"
    with Streams(model_bytes("detector"), [url, videos[0]], tracker=None) as streams:
        recs = list(streams)
    errs = [r for r in recs if r.error is not None]
    assert len(errs) == 1 and errs[0].stream == 0 and errs[0].index == 0
    assert isinstance(errs[0].error, ConnectionRefusedError)
    assert "Connection refused" in str(errs[0].error) and url in str(errs[0].error)
    assert [r.index for r in recs if r.stream == 1] == list(range(FRAMES))


def _interrupt_inside_next(main_ident, stop, inside):
    """Ctrl-C (interrupt_main) once the main thread is inside Streams.__next__: a Timer
    alone may land between two records, in the loop's own code, on a loaded machine."""
    import sys

    while not stop.is_set():
        f = sys._current_frames().get(main_ident)
        while f is not None:
            if f.f_code.co_name == "__next__" and f.f_code.co_filename.endswith("streams.py"):
                inside.set()
                _thread.interrupt_main()
                return
            f = f.f_back
        time.sleep(0.001)


def test_ctrl_c_while_waiting_for_a_record_stops_and_joins_everything(videos, baseline,
                                                                     emu):
    emu.set_npu_time_us(100_000)             # the consumer waits inside __next__
    streams = Streams(model_bytes("detector"), [videos[0]] * 3, workers=2, tracker=None)
    seen = []
    stop, inside, watcher = threading.Event(), threading.Event(), None
    try:
        with pytest.raises(KeyboardInterrupt):
            for r in streams:
                seen.append(r)
                if len(seen) == 3:
                    watcher = threading.Thread(target=_interrupt_inside_next,
                                               args=(threading.get_ident(), stop, inside))
                    watcher.start()
    finally:
        stop.set()
        if watcher is not None:
            watcher.join()
    assert inside.is_set()
    assert streams.closed and 3 <= len(seen) < 3 * FRAMES


def test_ctrl_c_in_a_with_block_stops_and_joins_everything(videos, baseline, emu):
    emu.set_npu_time_us(20_000)
    seen = []
    with pytest.raises(KeyboardInterrupt):
        with Streams(model_bytes("detector"), [videos[0]] * 3, workers=2,
                     tracker=None) as streams:
            for r in streams:
                seen.append(r)
                if len(seen) == 3:
                    raise KeyboardInterrupt   # as a Ctrl-C in the loop's own code
    assert streams.closed and len(seen) == 3


def test_live_numpy_frames_drop_and_count(baseline, emu):
    """An iterable that produces faster than the model runs, live=True: the slot keeps
    the newest; frames produced = records + drops."""
    emu.set_npu_time_us(NPU_US)
    made = []

    def camera(n=40):
        f = np.full((240, 320, 3), 20, np.uint8)
        for k in range(n):
            made.append(k)
            time.sleep(0.01)
            yield f

    with Streams(model_bytes("detector"), [camera()], live=True, tracker=None) as streams:
        recs = list(streams)
    s = streams.stats()[0]
    assert len(made) == 40 == s.decoded and s.drops > 0
    assert s.frames + s.drops == 40 and recs[-1].index == 39
