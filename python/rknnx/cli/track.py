"""``rknnx track MODEL SOURCE... [-o OUT.mp4 | OUT_DIR] [--json TRACKS.jsonl]``: follow the
objects of one or more videos (files, RTSP and other URLs, /dev/videoN cameras) with a YOLO
model and a tracker (rknnx.vision.Streams), write each stream's video with its boxes, ids
and short trails, and one JSON line per track per frame:
``{"stream": 0, "frame": 12, "pts": 0.4, "id": 3, "class": 0, "score": 0.91,
"box": [x1, y1, x2, y2]}``.

--sample NAME stands for MODEL (the emulator's sample models); ``rknnx track --sample
detector`` with no SOURCE writes the squares video (squares.mp4, beside the output) and
tracks it.  A progress line runs on a terminal's stderr; a table per stream ends it (frames, FPS, drops,
latency p50/p99 from decode to tracks, tracks, decoder).  Needs PyAV and Pillow (the
``video`` extra).
"""

from __future__ import annotations

import json
import os
from fractions import Fraction
import sys
import time
from collections import deque

import numpy as np

from rknnx.cli._common import UserError, help_text, load_runtime
from rknnx.cli.detect import _COLOURS

#: how many past centres a track's trail shows
TRAIL = 20


def _need(what: str):
    try:
        if what == "av":
            import av
            return av
        from PIL import Image, ImageDraw
        return Image, ImageDraw
    except ImportError:
        raise UserError("rknnx track reads and writes videos with PyAV and draws with "
                        "Pillow: pip install 'rknnx[video]'") from None


class _Writer:
    """One stream's annotated video (H.264 by libx264 where PyAV's FFmpeg has it, else
    MPEG-4 part 2), opened at its first frame; frames of another size are scaled to it.
    Each frame keeps its source's time (a live stream's drops and ``--detect-fps`` leave
    gaps, not a faster video); frames without one (numpy sources) follow at 30 fps."""

    def __init__(self, path: str):
        self.path = path
        self.out = self.vs = None
        self.trails = {}
        self.last_ms = -1

    def write(self, rec) -> None:
        av = _need("av")
        Image, ImageDraw = _need("pil")
        bgr = rec.bgr()
        h, w = bgr.shape[:2]
        if self.out is None:
            try:
                self.out = av.open(self.path, "w")
            except Exception as exc:
                raise UserError(f"cannot write {self.path!r} ({exc})") from exc
            codec = "libx264" if "libx264" in av.codecs_available else "mpeg4"
            self.vs = self.out.add_stream(codec, rate=30)
            self.vs.width, self.vs.height, self.vs.pix_fmt = w + w % 2, h + h % 2, "yuv420p"
            self.vs.codec_context.time_base = Fraction(1, 1000)
        img = Image.fromarray(np.ascontiguousarray(bgr[..., ::-1]), "RGB")
        d = ImageDraw.Draw(img)
        tracks = rec.tracks
        live = set()
        for i in range(len(tracks)):
            tid = int(tracks.ids[i])
            live.add(tid)
            colour = _COLOURS[tid % len(_COLOURS)]
            x1, y1, x2, y2 = (float(v) for v in tracks.boxes[i])
            trail = self.trails.setdefault(tid, deque(maxlen=TRAIL))
            trail.append(((x1 + x2) / 2, (y1 + y2) / 2))
            if len(trail) > 1:
                d.line(list(trail), fill=colour, width=2)
            d.rectangle([x1, y1, x2, y2], outline=colour, width=2)
            text = f"#{tid} {tracks.scores[i]:.2f}"
            ty = y1 - 12 if y1 >= 12 else y1
            d.rectangle([x1, ty, x1 + 6 * len(text) + 4, ty + 12], fill=colour)
            d.text((x1 + 2, ty), text, fill=(255, 255, 255))
        for tid in [t for t in self.trails if t not in live]:
            if tid in getattr(tracks, "ended", ()):
                del self.trails[tid]
        frame = av.VideoFrame.from_ndarray(np.asarray(img), format="rgb24")
        if (frame.width, frame.height) != (self.vs.width, self.vs.height):
            frame = frame.reformat(width=self.vs.width, height=self.vs.height)
        ms = round(rec.pts * 1000) if rec.pts is not None else self.last_ms + 33
        ms = max(ms, self.last_ms + 1)       # strictly increasing
        self.last_ms = ms
        frame.pts, frame.time_base = ms, Fraction(1, 1000)
        for packet in self.vs.encode(frame):
            self.out.mux(packet)

    def close(self) -> None:
        if self.out is None:
            return
        try:
            for packet in self.vs.encode(None):
                self.out.mux(packet)
        finally:
            self.out.close()
            self.out = None


def _outputs(args, names):
    """Each stream's output video path (or None)."""
    if not args.output:
        return [None] * len(names)
    out = args.output
    if os.path.isdir(out) or out.endswith(os.sep) or len(names) > 1:
        if os.path.exists(out) and not os.path.isdir(out):
            raise UserError(f"-o {out!r}: {len(names)} streams write a video each: give a "
                            f"directory")
        os.makedirs(out, exist_ok=True)
        return [os.path.join(out, f"{n}.mp4") for n in names]
    parent = os.path.dirname(os.path.abspath(out))
    if not os.path.isdir(parent):
        raise UserError(f"-o {out!r}: the folder {parent!r} does not exist")
    return [out]


def _sources(args):
    """(model source, [video sources]) from the positionals and --sample."""
    pos = list(args.inputs)
    if args.sample:
        args.model = None
        sources = pos
    else:
        if not pos:
            raise UserError("give MODEL and at least one SOURCE (or --sample NAME)")
        args.model, sources = pos[0], pos[1:]
    if not sources:
        if args.sample != "detector":
            raise UserError("give at least one SOURCE (a video file, a URL, /dev/videoN); "
                            "--sample detector alone tracks its own squares video")
        from rknnx.emulator.samples import squares_video

        _need("av")
        where = (args.output if args.output and os.path.isdir(args.output) else
                 os.path.dirname(os.path.abspath(args.output)) if args.output else ".")
        path = os.path.join(where, "squares.mp4")
        truth = squares_video(path)
        n = len({int(i) for ids in truth.ids for i in ids})
        print(f"wrote the sample video {path} ({len(truth.ids)} frames of {n} squares, "
              f"{truth.codec})")
        sources = [path]
    for s in sources:
        if "://" not in s and not s.startswith("/dev/video") and not os.path.isfile(s):
            raise UserError(f"SOURCE {s!r} is not a file, a URL or a /dev/video device")
    return sources


def _progress(streams, t0, last, final=False):
    """The progress line on a terminal's stderr, twice a second."""
    now = time.monotonic()
    if not sys.stderr.isatty() or (not final and now - last < 0.5):
        return last
    st = streams.stats()
    frames = sum(s.frames for s in st)
    fps = frames / max(now - t0, 1e-9)
    line = (f"frames {frames} ({fps:.1f} fps), tracks {sum(s.tracks for s in st)}, "
            f"drops {sum(s.drops for s in st)}")
    print(f"\r{line}", end="\n" if final else "", file=sys.stderr, flush=True)
    return now


def _table(stats) -> None:
    rows = [("stream", "source", "frames", "fps", "drops", "p50 ms", "p99 ms", "tracks",
             "state", "decoder")]
    for s in stats:
        ms = lambda v: "-" if v is None else f"{1e3 * v:.1f}"  # noqa: E731
        rows.append((s.name, s.source.strip("'"), str(s.frames), f"{s.fps:.1f}",
                     str(s.drops), ms(s.p50), ms(s.p99), str(s.tracks),
                     s.state if s.error is None else f"failed: {s.error}", s.decoder))
    widths = [max(len(r[k]) for r in rows) for k in range(len(rows[0]) - 1)]
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)) + "  " + r[-1])


def track(args) -> int:
    from rknnx.cli._common import open_model

    sources = _sources(args)
    if args.workers < 1:
        raise UserError(f"--workers is at least 1; got {args.workers}")
    _need("av")
    if args.output:
        _need("pil")
    load_runtime()
    from rknnx.vision import Streams

    try:
        from rknnx.vision import Tracker  # noqa: F401
    except ImportError:
        raise UserError("this rknnx has no rknnx.vision.Tracker") from None
    names = [str(k) for k in range(len(sources))]
    outs = _outputs(args, names)
    writers = [None if o is None else _Writer(o) for o in outs]
    jf = None
    if args.json:
        try:
            jf = open(args.json, "w", encoding="utf-8")
        except OSError as exc:
            raise UserError(f"cannot write --json {args.json!r} ({exc})") from exc
    failed = 0
    try:
        with open_model(args) as model:
            kw = {}
            if args.sample == "detector":
                from rknnx.emulator.samples import DETECTOR_NAMES

                kw["names"] = list(DETECTOR_NAMES)
            with Streams(model, sources, workers=args.workers, live=True if args.live
                         else None, frames=bool(args.output), detect_fps=args.detect_fps,
                         **kw) as streams:
                t0 = last = time.monotonic()
                for rec in streams:
                    if rec.error is not None:
                        failed += 1
                        print(f"\rstream {rec.stream}: {type(rec.error).__name__}: "
                              f"{rec.error}", file=sys.stderr)
                        continue
                    tr = rec.tracks
                    if jf is not None:
                        for i in range(len(tr)):
                            jf.write(json.dumps({
                                "stream": rec.stream, "frame": rec.index,
                                "pts": None if rec.pts is None else round(rec.pts, 6),
                                "id": int(tr.ids[i]), "class": int(tr.classes[i]),
                                "score": round(float(tr.scores[i]), 4),
                                "box": [round(float(v), 2) for v in tr.boxes[i]]}) + "\n")
                    w = writers[rec.stream]
                    if w is not None:
                        w.write(rec)
                    last = _progress(streams, t0, last)
                _progress(streams, t0, last, final=True)
                stats = streams.stats()
    finally:
        for w in writers:
            if w is not None:
                w.close()
        if jf is not None:
            jf.close()
    _table(stats)
    for o in outs:
        if o is not None and os.path.exists(o):
            print(f"drew {o}")
    if args.json:
        print(f"wrote {args.json}")
    return 1 if failed == len(sources) else 0


def add_parser(sub) -> None:
    p = sub.add_parser("track", help="follow objects in videos with a YOLO model and a "
                                     "tracker; draw them, write their tracks",
                       description=help_text(__doc__))
    p.add_argument("inputs", nargs="*", metavar="MODEL SOURCE",
                   help="the .rknn model (unless --sample), then the videos: files, URLs "
                        "(rtsp://, tcp://, ...), /dev/videoN")
    p.add_argument("--sample", metavar="NAME",
                   help="a sample model of the emulator instead of MODEL (detector)")
    p.add_argument("--output", "-o", metavar="OUT.mp4|OUT_DIR",
                   help="the annotated video (one stream), or a folder of one per stream")
    p.add_argument("--json", metavar="TRACKS.jsonl",
                   help="one JSON object per track per frame")
    p.add_argument("--workers", type=int, default=1,
                   help="NPU sessions and threads (default 1; RK3588: 3)")
    p.add_argument("--live", action="store_true",
                   help="play files on their clock as live sources (the newest frame "
                        "wins; drops counted)")
    p.add_argument("--detect-fps", type=float, default=None, metavar="FPS",
                   help="run the model on this many frames a second per stream")
    p.set_defaults(func=track, _model_required=True)
