"""The ``streams`` scenario of bench/suite.py: host CPU per frame of 4 H.264 streams (the
squares video at 1280x720 and at 1920x1080) through the ``detector`` sample built with
yolov8n's 9-output signature (80 classes, score_sum), and the saving of handing the
decoder's YUV planes straight to the letterbox.

- ``rknnx.vision.Streams`` (PyAV decode threads, the letterbox from the decoder's planes,
  3 zero-copy workers, decode in C, a tracker per stream where rknnx has one) against the
  common Python pattern: a thread per stream reading ``cv2.VideoCapture``'s BGR frames, a
  pool of 3 ``rknnx.lite.RKNNLite`` contexts as leafqycc/rknn-multi-threaded runs them
  (one frame per context in turn, on a thread pool), cv2's letterbox (resize,
  copyMakeBorder, cvtColor), the model zoo's yolov8 Python post-processing on the float32
  outputs (``--zoo DIR``: the zoo's own ``post_process`` from its checkout,
  examples/yolov8/python/yolov8.py, loaded from there, its DFL through torch on the CPU
  with one thread, as the zoo runs it; without: bench/zoo_python.py, a stand-in on the
  same code path), and roboflow ``trackers``' ByteTrack per stream where it is installed
  (the report says which of each ran);
- host CPU per frame = the process's CPU time (every thread) less the decoder's share (the
  same file decoded alone by the same library with the same threads, to YUV: PyAV's
  ``decode`` with ``thread_type="AUTO"``, cv2's ``grab()``; cv2's YUV -> BGR counts as
  outside the decoder) less the CPU inside ``rknn_run`` (the emulator's ``npu_cpu_ns``:
  the NPU's work, which takes no CPU on a board); the total with the decoder's share is
  shown beside it;
- per 1080p frame: the decoder's I420 planes into the letterbox against PyAV's
  ``to_ndarray(format="bgr24")`` + the letterbox of the BGR frame.

Interleaved runs, medians of 3 (one in --quick).  Run alone:
``python bench/streams.py [--quick] [--zoo DIR]`` (or ``python bench/suite.py --only
streams [--zoo DIR]``).
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Dict, List, Optional

import numpy as np

HERE = Path(__file__).resolve().parent
STREAMS = 4
WORKERS = 3
SIZES = ((1280, 720), (1920, 1080))


#: the score threshold of both sides: a tracker's low threshold (ByteTrack's second
#: association takes boxes down to it; Streams decodes at Tracker().low)
CONF = 0.1


def zoo_post_process(zoo_dir: Optional[str]):
    """(post_process(outputs) -> (boxes, classes, scores) or Nones, what it is): the zoo's
    own (its checkout's examples/yolov8/python/yolov8.py, loaded from there as
    bench/decode_cost.py loads it; its score threshold is the module's OBJ_THRESH, set to
    CONF as its mAP settings set it) or the stand-in on its code path; torch on one
    thread."""
    if str(HERE) not in sys.path:
        sys.path.insert(0, str(HERE))
    import decode_cost

    fn, what = decode_cost.zoo_python(zoo_dir)
    if zoo_dir:
        fn.__globals__["OBJ_THRESH"] = CONF
        return fn, what
    return (lambda outs: fn(outs, conf=CONF)), what


def _bytetrack():
    """roboflow trackers' ByteTrack (and supervision's Detections), or None."""
    try:
        import supervision as sv
        from trackers import ByteTrackTracker
    except Exception:
        return None
    return ByteTrackTracker, sv


class _Cpu:
    """Process CPU, wall time and the emulator's CPU inside rknn_run around a run."""

    def __init__(self, npu_cpu):
        self.npu_cpu = npu_cpu

    def __enter__(self):
        self.c0, self.w0 = time.process_time(), time.perf_counter()
        self.n0 = self.npu_cpu() if self.npu_cpu else 0
        return self

    def __exit__(self, *exc):
        self.cpu = time.process_time() - self.c0
        self.wall = time.perf_counter() - self.w0
        self.npu = ((self.npu_cpu() - self.n0) / 1e9) if self.npu_cpu else 0.0


def run_streams(model_path, video, npu_cpu, tracker) -> Dict[str, float]:
    """The model's sessions are made before the clock starts, as the common pattern's
    contexts are: the figure is the frames' steady cost."""
    import rknnx
    from rknnx.vision import Detector, Streams

    frames = 0
    with rknnx.Model(model_path) as model, \
            Detector(model, workers=WORKERS, conf=CONF) as det:
        with _Cpu(npu_cpu) as c:
            with Streams(det, [video] * STREAMS, tracker=True if tracker else None) \
                    as streams:
                for rec in streams:
                    if rec.error is not None:
                        raise rec.error
                    frames += 1
        decoder = streams.stats()[0].decoder
    return {"frames": frames, "cpu": c.cpu, "wall": c.wall, "npu_cpu": c.npu,
            "decoder": decoder}


def run_common(model_path, video, npu_cpu, post, bt) -> Dict[str, float]:
    """leafqycc/rknn-multi-threaded's shape: RKNNLite contexts used in turn on a thread
    pool, cv2 frames and letterbox, the zoo's Python post-processing (`post`); a reader
    thread per stream, and ByteTrack per stream in the reader's thread (in frame order)."""
    import cv2

    from rknnx.lite import RKNNLite

    lites = []
    for _ in range(WORKERS):
        rk = RKNNLite()
        if rk.load_rknn(model_path) != 0 or rk.init_runtime() != 0:
            raise RuntimeError("RKNNLite could not load the model")
        lites.append(rk)
    locks = [threading.Lock() for _ in lites]
    turn = [0]
    turn_lock = threading.Lock()
    H = W = 640

    def infer(frame):
        fh, fw = frame.shape[:2]
        r = min(W / fw, H / fh)
        nw, nh = round(fw * r), round(fh * r)
        left, top = (W - nw) // 2, (H - nh) // 2
        img = cv2.resize(frame, (nw, nh), interpolation=cv2.INTER_LINEAR)
        img = cv2.copyMakeBorder(img, top, H - nh - top, left, W - nw - left,
                                 cv2.BORDER_CONSTANT, value=(0, 0, 0))
        img = cv2.cvtColor(img, cv2.COLOR_BGR2RGB)
        with turn_lock:
            k = turn[0] % len(lites)
            turn[0] += 1
        with locks[k]:
            outs = lites[k].inference(inputs=[img[None]])
        boxes, classes, scores = post(outs)
        if boxes is None:
            return np.zeros((0, 4), np.float32), np.zeros(0, np.float32), np.zeros(0, int)
        b = boxes.astype(np.float32)
        b[:, 0::2] = np.clip((b[:, 0::2] - left) / r, 0, fw)
        b[:, 1::2] = np.clip((b[:, 1::2] - top) / r, 0, fh)
        return b, scores, classes

    counts = [0] * STREAMS

    def reader(k, pool):
        cap = cv2.VideoCapture(video)
        tracker = bt[0]() if bt else None
        window = []
        try:
            while True:
                ok, frame = cap.read()
                if not ok:
                    break
                window.append(pool.submit(infer, frame))
                if len(window) >= 2:
                    _track(window.pop(0).result(), tracker, bt)
                    counts[k] += 1
            for f in window:
                _track(f.result(), tracker, bt)
                counts[k] += 1
        finally:
            cap.release()

    try:
        with _Cpu(npu_cpu) as c:
            with ThreadPoolExecutor(WORKERS) as pool:
                threads = [threading.Thread(target=reader, args=(k, pool))
                           for k in range(STREAMS)]
                for t in threads:
                    t.start()
                for t in threads:
                    t.join()
    finally:
        for rk in lites:
            rk.release()
    return {"frames": sum(counts), "cpu": c.cpu, "wall": c.wall, "npu_cpu": c.npu}


def _track(result, tracker, bt):
    if tracker is None:
        return None
    boxes, scores, classes = result
    sv = bt[1]
    dets = sv.Detections(xyxy=boxes.astype(np.float32), confidence=scores.astype(np.float32),
                         class_id=classes.astype(int))
    return tracker.update(dets)


def decode_alone(video, library) -> float:
    """CPU seconds of decoding `video` STREAMS times at once (a thread each), to YUV, by
    `library` with its threads as the pipeline runs them."""
    def pyav():
        import av

        with av.open(video) as c:
            s = c.streams.video[0]
            s.thread_type = "AUTO"
            for _ in c.decode(s):
                pass

    def opencv():
        import cv2

        cap = cv2.VideoCapture(video)
        try:
            while cap.grab():
                pass
        finally:
            cap.release()

    body = pyav if library == "pyav" else opencv
    c0 = time.process_time()
    threads = [threading.Thread(target=body) for _ in range(STREAMS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return time.process_time() - c0


def yuv_vs_bgr(video, iters: int) -> Dict[str, Any]:
    """Per 1080p frame: the decoder's planes into the letterbox against PyAV's BGR
    conversion + the letterbox, in alternating chunks, medians."""
    import av

    from rknnx.vision import letterbox

    with av.open(video) as c:
        frame = next(iter(c.decode(video=0)))
    out = np.empty((640, 640, 3), np.uint8)
    w, h = frame.width, frame.height

    def planes(f, fmt):
        p = f.planes
        rows = [h, h // 2, h // 2]
        cols = [w, w // 2, w // 2] if fmt == "i420" else [w, w]
        return tuple(np.frombuffer(p[k], np.uint8).reshape(rows[k], p[k].line_size)
                     [:, :cols[k]] for k in range(len(p)))

    def yuv():
        letterbox(planes(frame, "i420"), out=out, fmt="i420", swap_rb=True)

    def bgr():
        letterbox(frame.to_ndarray(format="bgr24"), out=out, swap_rb=True)

    a, b = [], []
    for _ in range(max(3, iters // 10)):
        for fn, acc in ((yuv, a), (bgr, b)):
            t0 = time.perf_counter_ns()
            for _ in range(10):
                fn()
            acc.append((time.perf_counter_ns() - t0) / 10)
    name = "I420 planes -> letterbox"
    ya, yb = statistics.median(a), statistics.median(b)
    return {"yuv_name": name, "yuv_ns": ya, "bgr_ns": yb, "saving_ns": yb - ya,
            "ratio": yb / max(ya, 1.0), "frame": [w, h]}


def scenario(quick: bool, tmp: Path, counters, say,
             zoo: Optional[str] = None) -> Dict[str, Any]:
    try:
        import av  # noqa: F401
        import cv2  # noqa: F401
    except ImportError as exc:
        return {"skipped": f"PyAV and OpenCV are needed ({exc}; the video and bench extras)"}
    post, post_what = zoo_post_process(zoo)
    import rknnx.vision
    from rknnx.emulator import samples

    tracker = hasattr(rknnx.vision, "Tracker")
    bt = _bytetrack()
    control = getattr(counters, "control", None)
    npu_cpu = None
    if control is not None:
        control.set_npu_cpu_accounting(True)
        npu_cpu = control.counter_reader("npu_cpu_ns")
    model_path = str(tmp / "yolov8n_squares.rknn")
    Path(model_path).write_bytes(samples.detector(num_classes=80, score_sum=True))
    frames = 4 if quick else 30
    reps = 1 if quick else 3
    res: Dict[str, Any] = {
        "streams": STREAMS, "workers": WORKERS, "frames_per_stream": frames,
        "rknnx_tracker": tracker, "common_tracker": f"trackers {_version('trackers')} "
        "ByteTrack" if bt else "none (trackers not installed)",
        "common_post_process": post_what,
        "model": "detector sample, 80 classes, score_sum: 9 int8 outputs (yolov8n's)",
        "sizes": {}}
    try:
        for w, h in SIZES:
            video = str(tmp / f"squares_{w}x{h}.mp4")
            samples.squares_video(video, width=w, height=h, frames=frames, squares=3)
            runs = {"streams": [], "common": [], "dec_pyav": [], "dec_cv2": []}
            for _ in range(reps):          # interleaved
                runs["streams"].append(run_streams(model_path, video, npu_cpu, tracker))
                runs["common"].append(run_common(model_path, video, npu_cpu, post, bt))
                runs["dec_pyav"].append(decode_alone(video, "pyav"))
                runs["dec_cv2"].append(decode_alone(video, "opencv"))
            n = STREAMS * frames
            dec_a = statistics.median(runs["dec_pyav"]) / n
            dec_b = statistics.median(runs["dec_cv2"]) / n

            def host(r, dec):
                return (r["cpu"] - r["npu_cpu"]) / r["frames"] - dec

            a = [host(r, dec_a) for r in runs["streams"]]
            b = [host(r, dec_b) for r in runs["common"]]
            assert all(r["frames"] == n for r in runs["streams"] + runs["common"])
            ha, hb = statistics.median(a), statistics.median(b)
            res["sizes"][f"{w}x{h}"] = {
                "streams_host_ns": ha * 1e9, "common_host_ns": hb * 1e9,
                "ratio": hb / ha if ha > 0 else None,
                "streams_total_ns": (ha + dec_a) * 1e9, "common_total_ns": (hb + dec_b) * 1e9,
                "decoder_pyav_ns": dec_a * 1e9, "decoder_cv2_ns": dec_b * 1e9,
                "streams_wall_fps": statistics.median(
                    r["frames"] / r["wall"] for r in runs["streams"]),
                "common_wall_fps": statistics.median(
                    r["frames"] / r["wall"] for r in runs["common"]),
                "decoder": runs["streams"][0]["decoder"]}
            say(f"streams {w}x{h}")
        res["yuv_vs_bgr"] = yuv_vs_bgr(str(tmp / "squares_1920x1080.mp4"),
                                       30 if quick else 300)
    finally:
        if control is not None:
            control.set_npu_cpu_accounting(False)
    return res


def _version(dist: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:
        return "?"


def _ns(v) -> str:
    return "-" if v is None else (f"{v / 1e6:.2f} ms" if v >= 1e6 else f"{v / 1e3:.1f} us")


def report_lines(r: Dict[str, Any]) -> List[str]:
    if "skipped" in r:
        return [f"== streams: skipped ({r['skipped']}) =="]
    out = [f"== {r['streams']} H.264 streams -> tracks, host CPU per frame ({r['model']}; "
           f"{r['workers']} workers; tracker: rknnx {'yes' if r['rknnx_tracker'] else 'no'}, "
           f"common pattern {r['common_tracker']}) =="]
    if r.get("common_post_process"):
        out.append(f"common pattern's post-processing: {r['common_post_process']}")
    for size, s in r["sizes"].items():
        out.append(f"{size}: Streams {_ns(s['streams_host_ns'])} (with PyAV's decode "
                   f"{_ns(s['streams_total_ns'])}, {s['streams_wall_fps']:.1f} f/s) | "
                   f"cv2 + RKNNLite pool + zoo {_ns(s['common_host_ns'])} (with cv2's decode "
                   f"{_ns(s['common_total_ns'])}, {s['common_wall_fps']:.1f} f/s) | "
                   f"x{s['ratio']:.1f}" if s["ratio"] else f"{size}: -")
    y = r.get("yuv_vs_bgr")
    if y:
        out.append(f"1080p frame: {y['yuv_name']} {_ns(y['yuv_ns'])} vs PyAV bgr24 + "
                   f"letterbox {_ns(y['bgr_ns'])}: saves {_ns(y['saving_ns'])} "
                   f"(x{y['ratio']:.2f})")
    return out


def target_rows(r: Dict[str, Any]) -> list:
    """(name, value, goal, met, unit) rows for suite.py's targets."""
    rows = []
    if not r or "skipped" in r:
        return rows
    for size, s in r["sizes"].items():
        if s.get("ratio"):
            rows.append((f"{r['streams']} H.264 streams {size} -> tracks, host CPU per frame: "
                         f"cv2 + RKNNLite pool + zoo Python (+ ByteTrack) / rknnx Streams",
                         round(s["ratio"], 1), ">= 10x", s["ratio"] >= 10, "x"))
    y = r.get("yuv_vs_bgr")
    if y:
        rows.append(("(1080p: PyAV bgr24 + letterbox / the decoder's planes into the "
                     "letterbox)", round(y["ratio"], 2), "(info)", True, "x"))
    return rows


def main(argv=None) -> int:
    import argparse

    import rknnx
    from rknnx import benchmark as B

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--zoo", default=None, metavar="DIR",
                   help="a checkout of airockchip/rknn_model_zoo: the common pattern runs "
                        "its own yolov8 Python post_process (default: bench/zoo_python.py "
                        "stands in)")
    args = p.parse_args(argv)
    try:
        rknnx.runtime_info()
    except rknnx.RuntimeNotFoundError:
        rknnx.load_runtime("emulator")
    counters = B.Counters.for_runtime()
    with tempfile.TemporaryDirectory() as d:
        r = scenario(args.quick, Path(d), counters,
                     lambda what: print(what, file=sys.stderr), zoo=args.zoo)
    print("\n".join(report_lines(r)))
    return 0


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    sys.exit(main())
