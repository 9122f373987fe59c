"""The ``letterbox_sizes`` scenario of ``bench/suite.py``: :func:`rknnx.vision.letterbox`
against OpenCV's exact call sequences at every common camera size, 640x640 RGB.

Every frame size (1920x1080, 1280x720, 1280x960, 1920x1088, 3840x2160, 640x480: the last
needs no resize, only the pad) x every frame format (BGR, NV12, I420) x every target:

- ``nhwc``: into a preallocated (640, 640, 3) array; the anchor is the RKNN model zoo's
  ``letter_box`` + ``cvtColor(BGR2RGB)`` (``cv2.resize`` INTER_LINEAR, ``copyMakeBorder``
  with 114, the zoo's rounding of the pad);
- ``nchw``: into a preallocated (1, 3, 640, 640) array; the anchor is Ultralytics'
  ``LetterBox`` (resize + ``copyMakeBorder``) then its pre-processing's BGR -> RGB and
  HWC -> CHW in numpy (``np.ascontiguousarray(im[..., ::-1].transpose(...))``);
- ``session``: into a zero-copy session's input view (a 640x640x3 uint8 NHWC model on the
  emulator); the anchor is the zoo's sequence and a copy into the view.

NV12 and I420 frames are ``(h*3/2, w)`` arrays; OpenCV's anchor converts them first
(``cvtColor`` ``COLOR_YUV2BGR_NV12`` / ``_I420``), then runs the same sequence.  OpenCV is
timed on one thread and on its default threads.  Each run times chunks of every body in
turn (interleaved, so a shared machine's fast and slow spells fall on all of them); the
figure of a body is its median per run, and each ratio (OpenCV's time / rknnx's, above 1:
rknnx faster) the median of the runs' ratios (3 runs).
"""

from __future__ import annotations

import statistics
import time
from typing import Any, Callable, Dict, List

import numpy as np

FRAMES = ((1920, 1080), (1280, 720), (1280, 960), (1920, 1088), (3840, 2160), (640, 480))
FORMATS = ("bgr", "nv12", "i420")
TARGETS = ("nhwc", "nchw", "session")
SIZE = (640, 640)
PAD = 114


def _geometry(w: int, h: int):
    W, H = SIZE
    r = min(W / w, H / h)
    nw, nh = round(w * r), round(h * r)
    dw, dh = (W - nw) / 2, (H - nh) / 2
    # the zoo's and Ultralytics' rounding of the borders
    top, bottom = int(round(dh - 0.1)), int(round(dh + 0.1))
    left, right = int(round(dw - 0.1)), int(round(dw + 0.1))
    return nw, nh, top, bottom, left, right


def _anchors(cv2, w: int, h: int, view) -> Dict[str, Callable[[Any], Any]]:
    """OpenCV's sequence per target, from a BGR frame."""
    nw, nh, top, bottom, left, right = _geometry(w, h)

    def letter_box(img):                 # the zoo's (and Ultralytics') resize + border
        if (w, h) != (nw, nh):
            img = cv2.resize(img, (nw, nh), interpolation=cv2.INTER_LINEAR)
        return cv2.copyMakeBorder(img, top, bottom, left, right, cv2.BORDER_CONSTANT,
                                  value=(PAD, PAD, PAD))

    def nhwc(img):
        return cv2.cvtColor(letter_box(img), cv2.COLOR_BGR2RGB)

    def nchw(img):
        im = letter_box(img)[None]
        return np.ascontiguousarray(im[..., ::-1].transpose((0, 3, 1, 2)))

    def session(img):
        view[0] = cv2.cvtColor(letter_box(img), cv2.COLOR_BGR2RGB)

    return {"nhwc": nhwc, "nchw": nchw, "session": session}


def _bodies(cv2, frames, outs, view):
    """{(size, fmt, target): {"rknnx": fn, "opencv": fn}}."""
    from rknnx.vision import letterbox

    conv = {"bgr": None, "nv12": cv2.COLOR_YUV2BGR_NV12, "i420": cv2.COLOR_YUV2BGR_I420}
    bodies = {}
    for (w, h), by_fmt in frames.items():
        anchors = _anchors(cv2, w, h, view)
        for fmt, frame in by_fmt.items():
            for target in TARGETS:
                out = outs[target]
                code = conv[fmt]
                anchor = anchors[target]
                ours = (lambda f=frame, o=out, k=fmt:
                        letterbox(f, out=o, fmt=k, swap_rb=True, pad_value=PAD))
                theirs = ((lambda f=frame, a=anchor: a(f)) if code is None else
                          (lambda f=frame, a=anchor, c=code: a(cv2.cvtColor(f, c))))
                bodies[(f"{w}x{h}", fmt, target)] = {"rknnx": ours, "opencv": theirs}
    return bodies


def _one_run(cv2, bodies, iters: int, threads: int) -> Dict[Any, Dict[str, float]]:
    """One interleaved run: per body, the median ns of rknnx, OpenCV on 1 thread and on
    its default threads."""
    times: Dict[Any, Dict[str, List[int]]] = {
        k: {"rknnx": [], "opencv_1": [], "opencv": []} for k in bodies}
    chunk = max(1, min(5, iters))
    for rnd in range(max(1, iters // chunk)):
        for key, b in bodies.items():
            order = [("rknnx", b["rknnx"], None), ("opencv_1", b["opencv"], 1),
                     ("opencv", b["opencv"], threads)]
            # who comes first after another frame's body reads its frame from memory
            # (evicted by the bodies before it; it warms the caches for the next):
            # each body comes first in a third of the rounds
            k = rnd % 3
            for name, fn, nthr in order[k:] + order[:k]:
                if nthr is not None:
                    cv2.setNumThreads(nthr)
                for _ in range(chunk):
                    t0 = time.perf_counter_ns()
                    fn()
                    times[key][name].append(time.perf_counter_ns() - t0)
    return {k: {n: float(statistics.median(v)) for n, v in d.items()} for k, d in times.items()}


def _measure(cv2, frames, session, iters: int, runs: int, threads: int):
    """The runs (the session's input view lives only in here: the session closes after)."""
    W, H = SIZE
    outs = {"nhwc": np.empty((H, W, 3), np.uint8),
            "nchw": np.empty((1, 3, H, W), np.uint8), "session": session}
    bodies = _bodies(cv2, frames, outs, session.inputs[0])
    for b in bodies.values():                   # warm up (and check each runs)
        b["rknnx"]()
        b["opencv"]()
    return [_one_run(cv2, bodies, iters, threads) for _ in range(runs)]


def run(st, tmp, say, frame_model, save) -> Dict[str, Any]:
    """The scenario (``st``: the suite's settings; ``frame_model``/``save``: its model
    helpers, for the session's 640x640 model)."""
    try:
        import cv2
    except ImportError as exc:
        note = f"skipped: OpenCV is not installed ({exc}; the bench extra has it)"
        say(f"letterbox_sizes: {note}")
        return {"skipped": note}
    import rknnx

    rng = np.random.default_rng(3)
    frames = {}
    for w, h in FRAMES:
        bgr = rng.integers(0, 256, (h, w, 3), np.uint8)
        yuv = rng.integers(0, 256, (h * 3 // 2, w), np.uint8)
        frames[(w, h)] = {k: bgr if k == "bgr" else yuv for k in FORMATS}
    threads = cv2.getNumThreads()
    iters = 2 if st.quick else 30
    runs = 1 if st.quick else 3
    W, H = SIZE
    path = save(tmp, "frame_640_letterbox_sizes", frame_model(H, W))
    res: Dict[str, Any] = {"opencv_version": cv2.__version__, "opencv_threads": threads,
                           "runs": runs, "iters_per_run": iters, "cases": {}}
    with rknnx.Model(path) as m, m.zero_copy() as s:
        try:
            per_run = _measure(cv2, frames, s, iters, runs, threads)
        finally:
            cv2.setNumThreads(threads)
    for key in per_run[0]:
        size, fmt, target = key
        med = {n: statistics.median(r[key][n] for r in per_run) for n in per_run[0][key]}
        ratio = statistics.median(r[key]["opencv"] / r[key]["rknnx"] for r in per_run)
        ratio_1 = statistics.median(r[key]["opencv_1"] / r[key]["rknnx"] for r in per_run)
        res["cases"][f"{size} {fmt} {target}"] = {
            "rknnx_ns": med["rknnx"], "opencv_1thread_ns": med["opencv_1"],
            "opencv_ns": med["opencv"], "ratio_1thread": ratio_1, "ratio": ratio}
    say("letterbox_sizes")
    return res


def report(r: Dict[str, Any]) -> List[str]:
    """The scenario's blocks for the suite's report: a title and one table."""
    if "skipped" in r:
        return [f"== letterbox_sizes: {r['skipped']} =="]
    rows = [f"  {'frame':>9} {'fmt':>4} {'target':>7} | {'rknnx ms':>8} {'cv2 1t ms':>9} "
            f"{'ratio 1t':>8} | {'cv2 ms':>7} {'ratio':>6}"]
    for k, c in r["cases"].items():
        size, fmt, target = k.split()
        rows.append(f"  {size:>9} {fmt:>4} {target:>7} | {c['rknnx_ns'] / 1e6:8.3f} "
                    f"{c['opencv_1thread_ns'] / 1e6:9.3f} {c['ratio_1thread']:8.2f} | "
                    f"{c['opencv_ns'] / 1e6:7.3f} {c['ratio']:6.2f}")
    return [f"== letterbox at every camera size -> 640x640 RGB (OpenCV {r['opencv_version']}, "
            f"{r['opencv_threads']} threads by default; ratio = OpenCV / rknnx, medians of "
            f"{r['runs']} interleaved runs) ==", "\n".join(rows)]


def worst(r: Dict[str, Any]):
    """(the lowest one-thread ratio, its case; the lowest default-threads ratio, its case)."""
    cases = r["cases"]
    k1 = min(cases, key=lambda k: cases[k]["ratio_1thread"])
    k = min(cases, key=lambda k: cases[k]["ratio"])
    return cases[k1]["ratio_1thread"], k1, cases[k]["ratio"], k
