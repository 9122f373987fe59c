"""``rknnx track``: the squares video tracked end to end (the annotated video, the JSON
lines against the sample's ground truth, the table), several sources into a folder, and
the one-line errors of bad arguments."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from helpers import run_python

pytest.importorskip("av", reason="PyAV (the video extra: pip install 'rknnx[video]') is "
                                 "not installed")
pytest.importorskip("PIL", reason="Pillow (the video extra) is not installed")

ENV = {"RKNNX_RUNTIME": "emulator"}


def cli(*args, cwd=None):
    code = f"import sys; from rknnx.cli import main; sys.exit(main({list(args)!r}))"
    return run_python(code, env=ENV, cwd=cwd, timeout=300)


def frames_of(path):
    import av

    with av.open(path) as c:
        return [f.to_ndarray(format="rgb24") for f in c.decode(video=0)]


def test_track_the_sample_writes_its_video_and_tracks_it(tmp_path):
    from rknnx.emulator.samples import squares_video

    proc = cli("track", "--sample", "detector", "-o", "out.mp4", "--json", "t.jsonl",
               cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "wrote the sample video" in proc.stdout and "120 frames of 3 squares" in proc.stdout
    # the same video again (the sample is deterministic): its ground truth
    truth = squares_video(tmp_path / "again.mp4")
    assert (tmp_path / "again.mp4").read_bytes() == (tmp_path / "squares.mp4").read_bytes()
    lines = [json.loads(x) for x in (tmp_path / "t.jsonl").read_text().splitlines()]
    assert lines and set(lines[0]) == {"stream", "frame", "pts", "id", "class", "score",
                                       "box"}
    ids = {x["id"] for x in lines}
    assert len(ids) == 3, ids                # three squares, three ids
    for x in lines:
        gt = truth.boxes[x["frame"]]
        b = np.array(x["box"])
        assert x["stream"] == 0 and x["class"] == 0 and 0 <= x["score"] <= 1
        assert abs(x["pts"] - x["frame"] / 30) < 1e-5
        assert np.abs(gt - b).max(axis=1).min() < 16, (x, gt)
    out = frames_of(str(tmp_path / "out.mp4"))
    assert len(out) == 120 and out[0].shape == (720, 1280, 3)
    table = proc.stdout.splitlines()
    head = next(k for k, line in enumerate(table) if line.startswith("stream"))
    assert table[head].split()[:8] == ["stream", "source", "frames", "fps", "drops", "p50",
                                       "ms", "p99"]
    row = table[head + 1].split()
    assert row[0] == "0" and row[2] == "120" and row[4] == "0" and row[7] == "3"
    assert row[8] == "ended"


def test_track_several_sources_into_a_folder(tmp_path):
    from rknnx.emulator.samples import squares_video

    squares_video(tmp_path / "a.mp4", width=320, height=240, frames=20, squares=2)
    proc = cli("track", "--sample", "detector", "a.mp4", "a.mp4", "-o", "out",
               "--workers", "2", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert sorted(os.listdir(tmp_path / "out")) == ["0.mp4", "1.mp4"]
    assert len(frames_of(str(tmp_path / "out" / "1.mp4"))) == 20


@pytest.mark.parametrize("args, said", [
    (("--sample", "classifier"), "give at least one SOURCE (a video file, a URL, "
                                 "/dev/videoN); --sample detector alone tracks its own "
                                 "squares video"),
    (("--sample", "detector", "nope.mp4"), "SOURCE 'nope.mp4' is not a file, a URL or a "
                                           "/dev/video device"),
    ((), "give MODEL and at least one SOURCE (or --sample NAME)"),
    (("--sample", "detector", "--workers", "0", "x.mp4"),
     "SOURCE 'x.mp4' is not a file"),
])
def test_track_bad_arguments_say_what_is_wrong(tmp_path, args, said):
    proc = cli("track", *args, cwd=tmp_path)
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines()[-1].startswith(f"rknnx track: error: {said}")


def test_track_workers_zero_is_refused(tmp_path):
    from rknnx.emulator.samples import squares_video

    squares_video(tmp_path / "a.mp4", width=160, height=128, frames=2, squares=1)
    proc = cli("track", "--sample", "detector", "a.mp4", "--workers", "0", cwd=tmp_path)
    assert proc.returncode == 1
    assert "rknnx track: error: --workers is at least 1; got 0" in proc.stderr
