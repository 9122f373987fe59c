"""The rknnx benchmark suite: what each path costs, phase by phase, against C in one run.

Scenarios (``--only`` picks some, by name):

- ``overhead``   tiny model: ``session.run()`` and ``model.run()`` per call against C loops of
                 ``rknn_run`` (zero-copy) and inputs_set/run/outputs_get (general);
                 the three flows phase by phase (:func:`rknnx.benchmark.compare_flows`)
- ``sizes``      a trivial model (uint8 pixels -> strided conv) at 224x224x3, 640x640x3,
                 1920x1080x3: general flow (float32, raw), zero-copy with one copy of the
                 frame, with the pre-processing (letterbox + BGR->RGB of a 1920x1080 camera
                 frame) writing straight into the input view, from a memfd, cacheable vs
                 non-cacheable memory; C loops of the general and zero-copy flows
- ``chain``      a recurrent step (x -> 0.5 x + 1): output chained into the input, copied
                 back, or through the general flow
- ``rknnlite``   the RKNNLite drop-in (``rknnx.lite.RKNNLite``) on the 640 model; skipped
                 with a note when the module is not there
- ``detector``   one detector frame (sample ``detector_random``): camera frame -> letterbox ->
                 run -> three int8 heads -> boxes; RKNNLite style (new arrays, general
                 flow, float32 outputs, numpy) against the best rknnx style (letterbox
                 into the input view, zero-copy, native NC1HWC2 outputs, compiled kernels)
- ``letterbox``  a 1920x1080 BGR camera frame -> 640x640 RGB into a session's input view:
                 ``rknnx.vision.letterbox`` (one pass) against OpenCV's resize +
                 copyMakeBorder + cvtColor + a copy into the view (its default threads, and
                 one thread), timed in alternating chunks; NV12 against cvtColor first
                 (both thread counts; skipped with a note without opencv-python-headless,
                 the bench extra)
- ``letterbox_sizes`` the same at every common camera size (1080p, 720p, 1280x960,
                 1920x1088, 4K, 640x480), from BGR, NV12 and I420, into NHWC, NCHW and a
                 session, against OpenCV's exact sequences (bench/letterbox_sizes.py)
- ``decode``     decode + NMS of one yolov8n 640 int8 frame (the zoo's 9 outputs: box, class
                 scores, score_sum per scale; 20 planted objects) by ``rknnx.vision.decode``
                 from NCHW int8 and from the NPU's native NC1HWC2 int8, against the zoo's
                 Python post_process on the float32 outputs (``--zoo DIR``: its yolov8.py;
                 without it the stand-in bench/zoo_python.py on its path), and
                 the native one against a C port of the zoo's C post-processing
                 (bench/c/zoo_yolov8.c: the NC1HWC2 -> NCHW conversion of its zero-copy
                 demo, then its int8 thresholds, DFL and NMS), the C timed in C
- ``masks``      yolov8-seg 640 int8 (13 native outputs), 20 boxes of 64-160 px: the masks
                 of ``rknnx.vision.decode`` (computed inside each box) against the zoo's
                 Python masks (coefficients x the whole proto, sigmoid, torch's upsampling
                 of whole masks to 640x640, crop, > 0.5) and, with ``--zoo DIR``, its whole
                 yolov8_seg.py post_process (bench/zoo_seg.py; without it a stand-in on the
                 same path, float32, torch on one thread)
- ``pipeline``   host CPU per frame from a 1920x1080 BGR camera frame to boxes (a yolov8n
                 signature: the ``detector`` sample with 80 classes and score_sum, 9 int8
                 outputs): ``rknnx.vision.Detector`` against ``rknnx.lite.RKNNLite`` + cv2's
                 letterbox (resize, copyMakeBorder, cvtColor) + the zoo's Python
                 post_process on its float32 outputs (``--zoo DIR``: its yolov8.py and
                 py_utils letterbox helper; without it the stand-in bench/zoo_python.py),
                 three rounds in turn, with the per-stage breakdown (the emulated NPU work
                 left out of the host CPU)
- ``streams``    4 H.264 streams (1280x720, 1920x1080) -> tracks, host CPU per frame:
                 ``rknnx.vision.Streams`` against cv2.VideoCapture + a pool of RKNNLite
                 contexts + cv2 letterbox + the zoo's Python post-processing (+ trackers'
                 ByteTrack), the decoders' share and the CPU inside rknn_run left out; the
                 decoder's YUV into the letterbox vs PyAV's bgr24 + letterbox (bench/streams.py)
- ``pool``       1..N workers with simulated NPU time: raw threads with one session each,
                 ``rknnx.Pool``, and a C thread pool on the same runtime; throughput vs N
- ``track``      one ``rknnx.vision.Tracker.update`` at 5, 20 and 100 objects against
                 roboflow ``trackers`` 2.6.1's ByteTrack (and norfair when installed) on the
                 same detections, interleaved, medians of 3 (bench/track.py)
- ``standin``    the emulator standing in for a vendor ``.rknn`` (``--standin-model``,
                 default ``yolo640_rk3588.rknn`` of the vendor data when it is here: a
                 640x640x3 input, three 255-channel heads): the general flow phase by phase;
                 the stand-in's run against the flow's own input and output conversions
                 (emulator only; skipped with the reason elsewhere)
- ``wheels``     the abi3, a version-specific and the free-threaded wheel side by side,
                 each in a venv of its own interpreter (bench/wheels.py): zero-copy run()
                 and model.run() per call, a Pool of 3 on 3.13t/3.14t (PYTHON_GIL=0) vs the
                 GIL build of the same source; medians of 3 interleaved runs

Prints a table per scenario (progress on stderr), then the targets; writes
``suite.json`` (machine, versions, every figure), ``phases.png`` (latency per phase,
stacked) and ``throughput.png`` (frames/s vs workers) into ``--out`` (default
``bench/results``; a ``--quick`` run writes under the temporary directory instead).  The C baselines
are compiled at run time against the loaded runtime (the emulator on a host, librknnrt
on a board).  Ratios measured in one run are what to read on a shared machine.

Usage::

    python bench/suite.py                 # the whole suite (a few minutes on 2 cores)
    python bench/suite.py --quick         # a smoke run, well under a minute (results into
                                          # $TMPDIR/rknnx-bench-quick, not bench/results)
    python bench/suite.py --only overhead,pool --workers 4
    python bench/suite.py --only letterbox,decode,masks,pipeline --update
                                          # these scenarios re-measured into the tracked
                                          # suite.json, the others kept
"""

from __future__ import annotations

import argparse
import json
import mmap
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

import numpy as np

import rknnx
from rknnx import benchmark as B

HERE = Path(__file__).resolve().parent
# the scenarios in modules of their own beside this file, found however it was loaded (a
# script puts bench/ on sys.path; a test loading it by its path does not)
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import letterbox_sizes  # noqa: E402  bench/letterbox_sizes.py: the letterbox_sizes scenario
import track as track_bench  # noqa: E402  bench/track.py: the track scenario
INCLUDE = HERE.parent / "include" / "rknnx"
SCENARIOS = ("overhead", "sizes", "chain", "rknnlite", "detector", "letterbox",
             "letterbox_sizes", "decode", "masks", "pipeline", "streams", "pool", "standin",
             "track", "wheels")
SIZES = {"224x224x3": (224, 224), "640x640x3": (640, 640), "1920x1080x3": (1080, 1920)}
CAMERA = (1080, 1920)          # the camera frame the pre-processing starts from (H, W)


# -- settings --------------------------------------------------------------------------------
class Settings:
    def __init__(self, quick: bool, workers: int, npu_time_us: Optional[int]):
        self.quick = quick
        self.workers = workers
        self.npu_time_us = npu_time_us if npu_time_us is not None else (2000 if quick else 5000)
        self.calls = 2000 if quick else 20000                     # per-call loops (tiny model)
        self.flow_iters = 300 if quick else 3000                  # compare_flows on the tiny model
        self.size_iters = ({"224x224x3": 3, "640x640x3": 2} if quick else
                           {"224x224x3": 100, "640x640x3": 30, "1920x1080x3": 10})
        self.sizes = list(self.size_iters)
        self.chain_iters = 50 if quick else 500
        self.detector_iters = 2 if quick else 30
        self.letterbox_iters = 20 if quick else 400
        self.pool_frames = 24 if quick else 200
        self.standin_iters = 5 if quick else 40
        self.standin_model: Optional[str] = None

    def warmup(self, iters: int) -> int:
        return max(1, iters // 10)


# -- C baselines -----------------------------------------------------------------------------
class CBaseline:
    """``bench/c/flows.c`` compiled against the loaded runtime: a program (the pool) and a
    shared library whose ``flows_loop`` runs the per-frame loops in this process, on the
    runtime instance the Python loops use and the same machine state (a loaded machine
    swings between fast and slow spells that a separate process may not share)."""

    def __init__(self, tmp: Path, runtime: str):
        import ctypes

        cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
        if not cc:
            sys.exit("a C compiler is needed for the C baselines (set CC)")
        self.exe = tmp / "flows"
        libdir, libname = os.path.split(os.path.abspath(runtime))
        common = ["-O2", "-std=c11", f"-I{INCLUDE}", str(HERE / "c" / "flows.c"),
                  f"-L{libdir}", f"-l:{libname}", f"-Wl,-rpath,{libdir}", "-lpthread"]
        subprocess.run([cc, *common, "-o", str(self.exe)], check=True)
        so = tmp / "libflows.so"
        subprocess.run([cc, "-shared", "-fPIC", *common, "-o", str(so)], check=True)
        self._lib = ctypes.CDLL(str(so))
        self._lib.flows_loop.argtypes = (ctypes.c_char_p, ctypes.c_char_p, ctypes.c_long,
                                         ctypes.POINTER(ctypes.c_longlong))
        self._lib.flows_loop.restype = ctypes.c_int

    def run(self, model: str, mode: str, n: int, *extra, env=None) -> List[int]:
        out = subprocess.run([str(self.exe), model, mode, str(n), *map(str, extra)],
                             check=True, capture_output=True, text=True,
                             env={**os.environ, **(env or {})}).stdout
        return [int(x) for x in out.split()]

    def loop(self, model: str, mode: str, n: int, warmup: int) -> Dict[str, float]:
        """The loop of `mode` in this process (ctypes lets the GIL go during it)."""
        import ctypes

        t = (ctypes.c_longlong * (n + warmup))()
        rc = self._lib.flows_loop(model.encode(), mode.encode(), n + warmup, t)
        if rc != 0:
            raise RuntimeError(f"the C loop {mode} on {model} failed ({rc}): see stderr")
        return B.stats(list(t)[warmup:])


# -- models ----------------------------------------------------------------------------------
def frame_model(h: int, w: int) -> bytes:
    """uint8-fed int8 NHWC image [1,h,w,3] (mean 0, std 255) -> 4-channel 8x8 stride-8 conv:
    input handling dominates, as in any detector's first layer."""
    from rknnx.emulator import ModelBuilder

    b = ModelBuilder("RK3588", f"bench frame {h}x{w}")
    x = b.input("image", (1, h, w, 3), "int8", "NHWC", zp=-128, scale=1 / 255,
                mean=(0.0, 0.0, 0.0), std=(255.0, 255.0, 255.0))
    wq = np.ones((4, 3, 8, 8), np.int8)
    y = b.conv2d(x, wq, np.zeros(4, np.int32), stride=8, weight_scale=np.full(4, 0.01, np.float32),
                 out_scale=0.05, out_zp=0, out="feat")
    b.output(y)
    return b.build()


def step_model(n: int) -> bytes:
    """x float32 [1,n] -> 0.5 x + 1: a state that a chained output feeds back."""
    from rknnx.emulator import ModelBuilder

    b = ModelBuilder("RK3588", "bench step")
    x = b.input("x", (1, n), "float32")
    b.output(b.add(b.mul(x, np.float32([0.5])), np.float32([1.0]), out="y"))
    return b.build()


def save(tmp: Path, name: str, data: bytes) -> str:
    p = tmp / f"{name}.rknn"
    p.write_bytes(data)
    return str(p)


# -- pre-processing ----------------------------------------------------------------------------
class Letterbox:
    """Letterbox of a BGR camera frame into an RGB model input (gray 114 around it).

    ``alloc(src)`` makes new arrays, nearest-neighbour in numpy (the usual script);
    ``into(src, view)`` is :func:`rknnx.vision.letterbox` straight into an input view
    (bilinear, one pass, the pad written with it).
    """

    def __init__(self, src_hw, dst_hw, pad: int = 114):
        sh, sw = src_hw
        dh, dw = dst_hw
        r = min(dh / sh, dw / sw)
        nh, nw = max(1, round(sh * r)), max(1, round(sw * r))
        self.top, self.left = (dh - nh) // 2, (dw - nw) // 2
        self.nh, self.nw, self.dst_hw, self.pad = nh, nw, dst_hw, pad
        self.ys = np.minimum((np.arange(nh) + 0.5) * sh / nh, sh - 1).astype(np.intp)
        self.xs = np.minimum((np.arange(nw) + 0.5) * sw / nw, sw - 1).astype(np.intp)

    def alloc(self, src: np.ndarray) -> np.ndarray:
        resized = src[self.ys][:, self.xs]
        canvas = np.full(self.dst_hw + (3,), self.pad, np.uint8)
        canvas[self.top:self.top + self.nh, self.left:self.left + self.nw] = resized
        return np.ascontiguousarray(canvas[..., ::-1])[None]

    def prepare(self, view: np.ndarray) -> None:
        """Nothing: ``into`` writes the pad too (kept for the callers' symmetry)."""

    def into(self, src: np.ndarray, view: np.ndarray) -> None:
        from rknnx.vision import letterbox

        letterbox(src, out=view, swap_rb=True, pad_value=self.pad)


def camera_frame(seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, CAMERA + (3,), dtype=np.uint8)


# -- scenario helpers ---------------------------------------------------------------------------
def frame_only(body: Callable[[], Any], iters: int, st: Settings, counters) -> Dict[str, Any]:
    r = B.frame_loop(body, iters, st.warmup(iters), counters)
    return r


def zero_copy_variants(model, iters: int, st: Settings, counters, src) -> Dict[str, Any]:
    """Zero-copy frames: one copy of a ready frame; letterbox straight into the view; the
    same frame through a memfd; non-cacheable memory."""
    out: Dict[str, Any] = {}
    t = model.inputs[0]
    h, w = t.shape[1], t.shape[2]
    lb = Letterbox(CAMERA, (h, w))
    frame = lb.alloc(src)
    with model.zero_copy() as s:
        view = s.inputs[0]

        def pre_copy(view=view):
            view[...] = lb.alloc(src)
            s.run()

        out["zero-copy, letterbox then copy"] = frame_only(pre_copy, iters, st, counters)
        lb.prepare(view)

        def pre_into(view=view):
            lb.into(src, view)
            s.run()

        out["zero-copy, letterbox into view"] = frame_only(pre_into, iters, st, counters)
        del view, pre_copy, pre_into
    fd = os.memfd_create("rknnx-bench-frame")
    try:
        with model.zero_copy() as s:
            a = s.input_attrs[0]
            need = int(max(a.size_with_stride, a.size, a.nbytes_with_stride))
            os.ftruncate(fd, need)
            view = s.bind_input_fd(0, fd)

            def from_fd(view=view):
                view[...] = frame
                s.run()

            out["zero-copy, memfd input"] = frame_only(from_fd, iters, st, counters)
            del view, from_fd
    finally:
        os.close(fd)
    for cacheable in (True, False):
        with model.zero_copy(cacheable=cacheable) as s:
            view = s.inputs[0]

            def one_copy(view=view):
                view[...] = frame
                s.run()

            out[f"zero-copy, {'cacheable' if cacheable else 'non-cacheable'}"] = \
                frame_only(one_copy, iters, st, counters)
            del view, one_copy
    out["general, letterbox then run"] = frame_only(lambda: model.run(lb.alloc(src)), iters, st,
                                                    counters)
    return out


def _empty() -> None:
    return None


class _Signature:
    """A method with Model.run's signature that does nothing: what calling it costs."""

    def run(self, *inputs, raw=False, out=None, data_format=None, pass_through=None):
        return None


# -- scenarios ----------------------------------------------------------------------------------
def scenario_overhead(st: Settings, tmp: Path, c: CBaseline, counters, say) -> Dict[str, Any]:
    from rknnx.emulator import samples

    path = save(tmp, "tiny_relu", samples.tiny_relu())
    n, w = st.calls, st.calls // 10
    res: Dict[str, Any] = {"model": "tiny_relu", "calls": n}

    def keep(name, got):
        if name not in res or got["median_ns"] < res[name]["median_ns"]:
            res[name] = got

    with rknnx.Model(path) as m:
        with m.zero_copy() as s:
            x = B.sample_inputs(m)
            out = [np.empty(a.shape, a.dtype) for a in m.run(*x)]
            ctx = m.new_context()
            # the zero-copy flow by hand on the low level: a context with memory bound
            zc = m.new_context()
            mems = []
            try:
                for attrs in (zc.input_attrs, zc.output_attrs):
                    for a in attrs:
                        mems.append(zc.create_mem(a.alloc_size))
                        zc.set_io_mem(mems[-1], a)
                arrays = [a for a, _ in m.prepare_inputs(x)[0]]

                def ll_general():
                    ctx.inputs_set(arrays)
                    ctx.run()
                    ctx.outputs_get(want_float=True, out=out)

                # interleaved rounds, C loops and Python loops alike, the best median of each
                # kept: a loop run alone may pay for the machine waking up or a neighbour.
                # python_floor: an empty call timed the same way (the cost of the Python timing
                # loop itself, which the C loop does not pay); run_signature: a method with
                # model.run's signature doing nothing, called as model.run is
                sig = _Signature()
                loops = (("session_run", s.run), ("lowlevel_run", zc.run),
                         ("python_floor", _empty), ("model_run", lambda: m.run(*x, out=out)),
                         ("run_signature", lambda: sig.run(*x, out=out)),
                         ("lowlevel_general", ll_general))
                # run_signature_c: the same signature compiled as Model.run is (bench/empty_run.py)
                import empty_run  # noqa: E402  bench/empty_run.py
                sigc = empty_run.instance(tmp)
                if sigc is not None:
                    loops += (("run_signature_c", lambda: sigc.run(*x, out=out)),)
                for _ in range(3):
                    for mode in ("zerocopy", "general", "general-raw"):
                        keep("c_" + mode.replace("-", "_"), c.loop(path, mode, n, w))
                    for name, fn in loops:
                        keep(name, B.frame_loop(fn, n, w)["frame"])
            finally:
                for mem in mems:
                    mem.close()
                zc.close()
                ctx.close()
        say("overhead: per-call loops")
        flows = B.compare_flows(m, iterations=st.flow_iters, warmup=st.warmup(st.flow_iters))
    flows["flows"]["general-float32"]["c_median_ns"] = res["c_general"]["median_ns"]
    flows["flows"]["general-raw"]["c_median_ns"] = res["c_general_raw"]["median_ns"]
    res["flows"] = flows
    say("overhead: compare_flows")
    return res


def scenario_sizes(st: Settings, tmp: Path, c: CBaseline, counters, say) -> Dict[str, Any]:
    res: Dict[str, Any] = {}
    src = camera_frame()
    for size in st.sizes:
        h, w = SIZES[size]
        iters = st.size_iters[size]
        wu = st.warmup(iters)
        path = save(tmp, f"frame_{size}", frame_model(h, w))
        r: Dict[str, Any] = {"iterations": iters, "flows": {}, "variants": {}}
        with rknnx.Model(path) as m:
            r["model"] = B.describe_model(m)
            r["flows"]["general-float32"] = B.general_flow(m, False, iters, wu, counters)
            r["flows"]["general-raw"] = B.general_flow(m, True, iters, wu, counters)
            r["flows"]["zero-copy"] = B.zero_copy_flow(m, iters, wu, counters)
            r["variants"] = zero_copy_variants(m, iters, st, counters, src)
        c_gen = c.loop(path, "general", iters, wu)
        c_zc = c.loop(path, "zerocopy-copy", iters, wu)
        r["c"] = {"general": c_gen, "zerocopy-copy": c_zc}
        r["flows"]["general-float32"]["c_median_ns"] = c_gen["median_ns"]
        r["flows"]["zero-copy"]["c_median_ns"] = c_zc["median_ns"]
        res[size] = r
        say(f"sizes: {size}")
    return res


def scenario_chain(st: Settings, tmp: Path, c: CBaseline, counters, say) -> Dict[str, Any]:
    n = 1 << 16
    iters = st.chain_iters
    res: Dict[str, Any] = {"elements": n}
    with rknnx.Model(step_model(n)) as m:
        with m.zero_copy() as s:
            s.chain(0, 0)
            res["zero-copy, chained"] = frame_only(s.run, iters, st, counters)
        flags = rknnx.lowlevel.InitFlag.DISABLE_FLUSH_INPUT_MEM_CACHE | \
            rknnx.lowlevel.InitFlag.DISABLE_FLUSH_OUTPUT_MEM_CACHE
        # the CPU does not touch the state between steps: the caches are left alone
        # (sync=False), and synced once when the state is read (sync_outputs)
        with m.zero_copy(flags=flags, sync=False) as s:
            s.chain(0, 0)
            res["zero-copy, chained, no syncs"] = frame_only(s.run, iters, st, counters)
        with m.zero_copy() as s:
            iv, ov = s.inputs[0], s.outputs[0]

            def copy_back(iv=iv, ov=ov):
                s.run()
                iv[...] = ov

            res["zero-copy, copied back"] = frame_only(copy_back, iters, st, counters)
            del iv, ov, copy_back
        state = [np.zeros((1, n), np.float32)]
        out = [np.empty((1, n), np.float32)]

        def general():
            m.run(state[0], out=out)
            state[0], out[0] = out[0], state[0]

        res["general"] = frame_only(general, iters, st, counters)
    say("chain")
    return res


def scenario_rknnlite(st: Settings, tmp: Path, c: CBaseline, counters, say) -> Dict[str, Any]:
    """The RKNNLite drop-in on the 640 frame model, against model.run on the same frames.

    The hook for ``rknnx.lite``: skipped with a note while the module does not exist."""
    try:
        from rknnx.lite import RKNNLite
    except ImportError as exc:
        note = f"skipped: rknnx.lite is not available ({exc})"
        say(f"rknnlite: {note}")
        return {"skipped": note}
    h, w = SIZES["640x640x3"]
    iters = st.size_iters["640x640x3"]
    path = save(tmp, "frame_640_lite", frame_model(h, w))
    img = np.zeros((1, h, w, 3), np.uint8)
    rk = RKNNLite()
    res: Dict[str, Any] = {}
    try:
        if rk.load_rknn(path) != 0 or rk.init_runtime() != 0:
            return {"skipped": "RKNNLite could not load the model"}
        res["rknnlite inference"] = frame_only(lambda: rk.inference(inputs=[img]), iters, st,
                                               counters)
    finally:
        rk.release()
    with rknnx.Model(path) as m:
        res["model.run"] = frame_only(lambda: m.run(img), iters, st, counters)
    say("rknnlite")
    return res


# detector post-processing, shared by both styles: float NCHW heads -> boxes
STRIDES = (8, 16, 32)


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def boxes_from_heads(heads, conf: float = 0.5, iou: float = 0.45, max_det: int = 100):
    """YOLO-style decoding of ``[1, 3*(5+nc), S, S]`` heads and a greedy NMS, in numpy."""
    found = []
    for h, stride in zip(heads, STRIDES):
        s = h.shape[-1]
        a = h.reshape(3, -1, s, s)
        score = _sigmoid(a[:, 4]) * _sigmoid(a[:, 5:]).max(axis=1)
        k, gy, gx = np.nonzero(score > conf)
        if not len(k):
            continue
        p = _sigmoid(a[k, :4, gy, gx])
        cx = (p[:, 0] * 2 - 0.5 + gx) * stride
        cy = (p[:, 1] * 2 - 0.5 + gy) * stride
        bw = (p[:, 2] * 2) ** 2 * stride * (1 + k)
        bh = (p[:, 3] * 2) ** 2 * stride * (1 + k)
        found.append(np.stack([cx - bw / 2, cy - bh / 2, cx + bw / 2, cy + bh / 2,
                               score[k, gy, gx]], axis=1))
    if not found:
        return np.zeros((0, 5), np.float32)
    d = np.concatenate(found)
    d = d[np.argsort(-d[:, 4])][:1000]
    keep = []
    area = (d[:, 2] - d[:, 0]) * (d[:, 3] - d[:, 1])
    alive = np.ones(len(d), bool)
    for i in range(len(d)):
        if not alive[i]:
            continue
        keep.append(i)
        if len(keep) >= max_det:
            break
        xx1 = np.maximum(d[i, 0], d[i + 1:, 0])
        yy1 = np.maximum(d[i, 1], d[i + 1:, 1])
        xx2 = np.minimum(d[i, 2], d[i + 1:, 2])
        yy2 = np.minimum(d[i, 3], d[i + 1:, 3])
        inter = np.clip(xx2 - xx1, 0, None) * np.clip(yy2 - yy1, 0, None)
        alive[i + 1:] &= inter / (area[i] + area[i + 1:] - inter + 1e-9) <= iou
    return d[keep]


def _read_native(s, i: int, out: np.ndarray, model) -> np.ndarray:
    """Output i of a native-layout session as float32 NCHW: the compiled kernels where the
    extension has them (``session.read``), numpy otherwise."""
    if hasattr(rknnx.lowlevel, "nc1hwc2_to_nchw"):
        return s.read(i, out=out)
    v = s.outputs[i]                                   # [1, C1, H, W, C2] int8
    q = model.outputs[i].quant
    c = model.outputs[i].shape[1]
    n, c1, hh, ww, c2 = v.shape
    dense = v.transpose(0, 1, 4, 2, 3).reshape(n, c1 * c2, hh, ww)[:, :c]
    np.subtract(dense, q.zero_point, out=out, dtype=np.float32)
    out *= q.scale
    return out


def scenario_detector(st: Settings, tmp: Path, c: CBaseline, counters, say) -> Dict[str, Any]:
    from rknnx.emulator import samples

    iters = st.detector_iters
    wu = st.warmup(iters)
    path = save(tmp, "detector", samples.detector_random())
    src = camera_frame(1)
    res: Dict[str, Any] = {"kernels": hasattr(rknnx.lowlevel, "nc1hwc2_to_nchw")}
    with rknnx.Model(path) as m:
        t = m.inputs[0]
        lb = Letterbox(CAMERA, (t.shape[1], t.shape[2]))
        # the RKNNLite style: new arrays at every step, the general flow, float32 outputs
        boxes_a = []

        def lite_style():
            outs = m.run(lb.alloc(src))
            boxes_a.append(len(boxes_from_heads(outs)))

        # frame_loop takes the emulated NPU work out of the host CPU (npu_cpu_ns_per_frame)
        res["rknnlite style"] = B.frame_loop(lite_style, iters, wu, counters)
        # the best rknnx style: letterbox into the view, native outputs, the kernels
        with m.zero_copy(outputs="native") as s:
            view = s.inputs[0]
            lb.prepare(view)
            bufs = [np.empty(o.shape, np.float32) for o in m.outputs]
            boxes_b = []

            def best_style(view=view):
                lb.into(src, view)
                s.run()
                heads = [_read_native(s, i, bufs[i], m) for i in range(len(bufs))]
                boxes_b.append(len(boxes_from_heads(heads)))

            res["best rknnx style"] = B.frame_loop(best_style, iters, wu, counters)
            del view, best_style
        res["boxes"] = {"rknnlite style": boxes_a[-1], "best rknnx style": boxes_b[-1]}
    say("detector")
    return res


def scenario_letterbox(st: Settings, tmp: Path, c: CBaseline, counters, say) -> Dict[str, Any]:
    """1920x1080 BGR -> 640x640 RGB into a zero-copy session's input view:
    rknnx.vision.letterbox against OpenCV's resize + copyMakeBorder + cvtColor + a copy
    into the view (default threads, then one), and the NV12 frame of the same size (OpenCV
    converting it with cvtColor first).  Chunks of each alternate, so that a shared
    machine's fast and slow spells fall on all of them."""
    try:
        import cv2
    except ImportError as exc:
        note = f"skipped: OpenCV is not installed ({exc}; the bench extra has it)"
        say(f"letterbox: {note}")
        return {"skipped": note}
    from rknnx.vision import letterbox

    h, w = SIZES["640x640x3"]
    path = save(tmp, "frame_640_letterbox", frame_model(h, w))
    src = camera_frame()
    nv12 = np.random.default_rng(1).integers(0, 256, (CAMERA[0] * 3 // 2, CAMERA[1]),
                                              dtype=np.uint8)
    lb = Letterbox(CAMERA, (h, w))
    top, left, nh, nw = lb.top, lb.left, lb.nh, lb.nw
    threads = cv2.getNumThreads()
    res: Dict[str, Any] = {"opencv_version": cv2.__version__, "opencv_threads": threads}
    with rknnx.Model(path) as m, m.zero_copy() as s:
        view = s.inputs[0]

        def cv_bgr(frame):
            r = cv2.resize(frame, (nw, nh), interpolation=cv2.INTER_LINEAR)
            r = cv2.copyMakeBorder(r, top, h - nh - top, left, w - nw - left,
                                   cv2.BORDER_CONSTANT, value=(114, 114, 114))
            view[0] = cv2.cvtColor(r, cv2.COLOR_BGR2RGB)

        bodies = {
            "rknnx letterbox": lambda: letterbox(src, out=view, swap_rb=True, pad_value=114),
            "opencv": lambda: cv_bgr(src),
            "opencv, 1 thread": lambda: cv_bgr(src),
            "rknnx letterbox, NV12": lambda: letterbox(nv12, out=view, fmt="nv12",
                                                       swap_rb=True, pad_value=114),
            "opencv, NV12": lambda: cv_bgr(cv2.cvtColor(nv12, cv2.COLOR_YUV2BGR_NV12)),
            "opencv, NV12, 1 thread": lambda: cv_bgr(cv2.cvtColor(nv12,
                                                                  cv2.COLOR_YUV2BGR_NV12)),
        }
        times: Dict[str, List[float]] = {k: [] for k in bodies}
        chunk = 10
        for k, body in bodies.items():              # warm up
            for _ in range(3):
                body()
        try:
            for _ in range(max(1, st.letterbox_iters // chunk)):
                for k, body in bodies.items():
                    cv2.setNumThreads(1 if k.endswith("1 thread") else threads)
                    for _ in range(chunk):
                        t0 = time.perf_counter_ns()
                        body()
                        times[k].append(time.perf_counter_ns() - t0)
        finally:
            cv2.setNumThreads(threads)
        del view, bodies
    for k, v in times.items():
        res[k] = B.stats(v)
    say("letterbox")
    return res


def _median_ns(fn, iters: int) -> float:
    times = []
    for _ in range(iters):
        t0 = time.perf_counter_ns()
        fn()
        times.append(time.perf_counter_ns() - t0)
    return float(statistics.median(times))


def scenario_decode(st: Settings, tmp: Path, c: CBaseline, counters, say) -> Dict[str, Any]:
    """yolov8n 640 int8, 9 outputs, 20 planted objects: rknnx.vision.decode (NCHW codes and
    native NC1HWC2 codes) against the zoo-style numpy reference on float32 outputs."""
    ref_dir = HERE.parent / "tests" / "vision"
    if not (ref_dir / "zoo_reference.py").is_file():
        say("decode")
        return {"skipped": "tests/vision/zoo_reference.py is not here (a source checkout has it)"}
    sys.path.insert(0, str(ref_dir))
    try:
        import zoo_reference as Z
    finally:
        sys.path.remove(str(ref_dir))
    from rknnx.vision import decode

    if str(HERE) not in sys.path:         # bench/ (the suite run as a script has it)
        sys.path.insert(0, str(HERE))
    from zoo_c import ZooYolov8, yolov8_frame

    codes, native, values, infos = yolov8_frame(Z)
    fast = 50 if st.quick else 500
    slow = 5 if st.quick else 30
    ref = Z.yolov8(values)
    det = decode("yolov8", codes, infos, layout="NCHW")
    det_n = decode("yolov8", native, infos)
    res: Dict[str, Any] = {"objects": 20, "kept": len(det),
                           "same_as_reference": bool(
                               np.array_equal(det.classes, ref["classes"]) and
                               np.array_equal(det_n.classes, ref["classes"]) and
                               np.allclose(det.boxes, ref["boxes"], rtol=1e-4, atol=1e-3))}
    for _ in range(max(1, fast // 10)):
        decode("yolov8", codes, infos, layout="NCHW")
    res["rknnx_nchw_ns"] = _median_ns(lambda: decode("yolov8", codes, infos, layout="NCHW"),
                                      fast)
    # the zoo's Python post_process (--zoo DIR), else a stand-in on its code path
    import decode_cost
    zoo_py, res["zoo_python"] = decode_cost.zoo_python(getattr(st, "zoo", None))
    zb, zc, _ = zoo_py(values)
    res["zoo_python_same_classes"] = bool(zc is not None and np.array_equal(
        np.sort(zc), np.sort(det.classes)))
    res["zoo_python_ns"] = _median_ns(lambda: zoo_py(values), slow)
    res["ratio"] = res["zoo_python_ns"] / max(res["rknnx_nchw_ns"], 1.0)
    # the zoo's C post-processing (bench/c/zoo_yolov8.c) with the NC1HWC2 -> NCHW
    # conversion its zero-copy demo does first, against decode reading the same native
    # memory in place: chunks of each alternate, so that a shared machine's fast and slow
    # spells fall on both
    zoo_c = ZooYolov8(tmp)
    kept_c = zoo_c.frame(native, infos)
    res["zoo_c_kept"] = int(len(kept_c["classes"]))
    res["zoo_c_same_kept_set"] = bool(
        len(kept_c["classes"]) == len(det_n) and
        np.array_equal(kept_c["classes"], det_n.classes) and
        np.allclose(kept_c["boxes"], det_n.boxes, rtol=1e-4, atol=1e-3))
    chunk = 10
    t_native: List[float] = []
    t_zoo_c: List[float] = []
    zoo_c.loop(native, infos, chunk)
    for _ in range(max(1, fast // chunk)):
        for _ in range(chunk):
            t0 = time.perf_counter_ns()
            decode("yolov8", native, infos)
            t_native.append(time.perf_counter_ns() - t0)
        t_zoo_c += zoo_c.loop(native, infos, chunk)
    res["rknnx_native_ns"] = float(statistics.median(t_native))
    res["zoo_c_ns"] = float(statistics.median(t_zoo_c))
    res["ratio_native"] = res["zoo_python_ns"] / max(res["rknnx_native_ns"], 1.0)
    res["ratio_zoo_c"] = res["zoo_c_ns"] / max(res["rknnx_native_ns"], 1.0)
    # the post-processing alone, frame by frame (bench/decode_cost.py)
    import decode_cost
    res["post_process"] = decode_cost.measure(Z, tmp, getattr(st, "zoo", None), st.quick)
    say("decode")
    return res


def _planted_seg(Z, rng, n_obj: int = 20, nm: int = 32):
    """Float outputs of a yolov8-seg 640 (the zoo's 13: box, class scores, score_sum, mask
    coefficients per scale, then the proto [1, nm, 160, 160]) with n_obj objects of 64-160
    px, one cell each, on distinct cells."""
    boxes, clss, coefs = Z.planted_v8(rng, nc=80, n_obj=0, nm=nm)
    taken = set()
    while len(taken) < n_obj:
        s = int(rng.integers(0, 3))
        stride = (8, 16, 32)[s]
        gh, gw = clss[s].shape[2:]
        y, x = int(rng.integers(0, gh)), int(rng.integers(0, gw))
        if (s, y, x) in taken:
            continue
        taken.add((s, y, x))
        clss[s][0, int(rng.integers(0, 80)), y, x] = float(rng.uniform(0.5, 0.95))
        w, h = rng.uniform(64, 160, 2)
        for k, d in enumerate((w / 2, h / 2, w / 2, h / 2)):
            boxes[s][0, k * 16:(k + 1) * 16, y, x] = Z._dfl_logits(rng, d / stride)
    proto = rng.normal(0, 1.0, (1, nm, 160, 160)).astype(np.float32)
    outs = []
    for s_ in range(3):
        outs += [boxes[s_], clss[s_], None, coefs[s_]]
    return outs, proto


def zoo_masks_python(cv2, coefs: np.ndarray, proto: np.ndarray, boxes: np.ndarray,
                     size=(640, 640)) -> np.ndarray:
    """The zoo's Python masks (examples/yolov8_seg/python): the coefficients times the
    whole proto, sigmoid, bilinear upsampling of the whole mask to the input size (the zoo
    calls torch's interpolate, align_corners=False; cv2.resize INTER_LINEAR follows the
    same half-pixel rule), zero outside each box, > 0.5.  bool [N, H, W]."""
    W, H = size
    nm, ph, pw = proto.shape[1:]
    m = np.matmul(coefs, proto.reshape(nm, -1))
    m = 1 / (1 + np.exp(-m))
    m = m.reshape(-1, ph, pw)
    up = cv2.resize(np.ascontiguousarray(m.transpose(1, 2, 0)), (W, H),
                    interpolation=cv2.INTER_LINEAR).reshape(H, W, -1)
    x1, y1, x2, y2 = (boxes[:, k][None, None, :] for k in range(4))
    r = np.arange(W, dtype=boxes.dtype)[None, :, None]
    c = np.arange(H, dtype=boxes.dtype)[:, None, None]
    cropped = up * ((r >= x1) * (r < x2) * (c >= y1) * (c < y2))
    return (cropped > 0.5).transpose(2, 0, 1)


def scenario_masks(st: Settings, tmp: Path, c: CBaseline, counters, say) -> Dict[str, Any]:
    """yolov8-seg 640 int8 (13 native NC1HWC2 outputs), 20 boxes of 64-160 px: the masks of
    rknnx.vision.decode (inside each box only) against the zoo's Python full-proto path."""
    try:
        import cv2
    except ImportError as exc:
        note = f"skipped: OpenCV is not installed ({exc}; the bench extra has it)"
        say(f"masks: {note}")
        return {"skipped": note}
    Z = _zoo_reference()
    if Z is None:
        say("masks")
        return {"skipped": "tests/vision/zoo_reference.py is not here (a source checkout has it)"}
    from rknnx._tensors import QuantInfo, TensorInfo
    from rknnx.vision import decode

    if str(HERE) not in sys.path:
        sys.path.insert(0, str(HERE))
    from zoo_c import nc1hwc2

    outs, proto = _planted_seg(Z, np.random.default_rng(5))
    # the box codes' range (+-12.8) holds the DFL logits of boxes up to 160 px
    quant = {"box": (0.1, 0), "cls": (1 / 255, -128), "sum": (1 / 255, -128),
             "coef": (0.03, 0), "proto": (0.03, 0)}
    kinds = ["box", "cls", "sum", "coef"] * 3 + ["proto"]
    codes, values, infos = [], [], []
    for kind, x in zip(kinds, outs + [proto]):
        if x is None:
            x = np.clip(values[-1].sum(axis=1, keepdims=True), 0, 1)
        sc, zp = quant[kind]
        q = Z.quantize(x, sc, zp)
        codes.append(q)
        values.append(Z.dequantize(q, sc, zp).astype(np.float32))
        infos.append(TensorInfo(len(infos), kind, q.shape, np.dtype(np.int8), "NCHW",
                                QuantInfo("affine", sc, zp)))
    native = [nc1hwc2(q, 16) for q in codes]
    heads = [i for i, k in enumerate(kinds) if k in ("box", "cls", "sum")]
    n9, i9 = [native[i] for i in heads], [infos[i] for i in heads]
    seg = decode("yolov8-seg", native, infos)
    det = decode("yolov8", n9, i9)
    # the zoo's inputs: the kept boxes' float coefficients (gathered outside the timing)
    # and the float proto
    cells = np.concatenate([v[0].reshape(v.shape[1], -1).T for v in values[3:12:4]])
    ref = Z.yolov8_seg([values[i] for i in range(13)])
    kcoef = cells[ref["index"]].astype(np.float32)
    kboxes = np.asarray(ref["boxes"], np.float32)
    pf = values[12]
    # the zoo's own Python (--zoo DIR) or the stand-in on its path (bench/zoo_seg.py);
    # without torch, the numpy/OpenCV port above
    import zoo_seg
    zoo_post, zoo_m, what = zoo_seg.seg(getattr(st, "zoo", None))
    if zoo_m is None:
        zoo_m = lambda cf, p, b: zoo_masks_python(cv2, cf, p, b)  # noqa: E731
        what = "a numpy/OpenCV port of the zoo's masks path (torch is not installed)"
    zoo = zoo_m(kcoef, pf, kboxes)
    res: Dict[str, Any] = {"anchor": what, "boxes": len(seg), "box_px": [
        int(np.min(seg.boxes[:, 2:] - seg.boxes[:, :2])) if len(seg) else 0,
        int(np.max(seg.boxes[:, 2:] - seg.boxes[:, :2])) if len(seg) else 0],
        "same_kept_as_reference": bool(np.array_equal(seg.classes, ref["classes"])),
        "mask_pixels_agree": float(np.mean(zoo == seg.masks)) if len(seg) else 1.0}
    if zoo_post is not None:
        zb, zc, _, zmask = zoo_post(values)
        res["zoo_post_process_kept"] = 0 if zc is None else int(len(zc))
        res["zoo_post_process_same_classes"] = bool(zc is not None and np.array_equal(
            np.sort(zc), np.sort(seg.classes)))
    iters = 5 if st.quick else 40
    bodies = {"rknnx_seg_ns": lambda: decode("yolov8-seg", native, infos),
              "rknnx_det_ns": lambda: decode("yolov8", n9, i9),
              "zoo_masks_ns": lambda: zoo_m(kcoef, pf, kboxes)}
    if zoo_post is not None:
        bodies["zoo_post_process_ns"] = lambda: zoo_post(values)
    for _ in range(2):
        for f in bodies.values():
            f()
    rounds: Dict[str, List[float]] = {k: [] for k in bodies}
    for _ in range(3):                  # three rounds, one of each in turn
        t: Dict[str, List[int]] = {k: [] for k in bodies}
        for _ in range(iters):
            for k, f in bodies.items():
                t0 = time.perf_counter_ns()
                f()
                t[k].append(time.perf_counter_ns() - t0)
        for k in bodies:
            rounds[k].append(float(statistics.median(t[k])))
    for k, v in rounds.items():         # the median of the rounds' medians
        res[k] = float(statistics.median(v))
        res[k + "_rounds"] = v
    res["rknnx_masks_ns"] = max(res["rknnx_seg_ns"] - res["rknnx_det_ns"], 1.0)
    res["ratio"] = res["zoo_masks_ns"] / res["rknnx_masks_ns"]
    if "zoo_post_process_ns" in res:    # the zoo's whole post_process, as it runs
        res["ratio_with_decode"] = res["zoo_post_process_ns"] / max(res["rknnx_seg_ns"], 1.0)
    else:                               # estimated: rknnx's decode + the zoo's masks
        res["ratio_with_decode"] = (res["rknnx_det_ns"] + res["zoo_masks_ns"]) / \
            max(res["rknnx_seg_ns"], 1.0)
    del det
    say("masks")
    return res


def _zoo_reference():
    ref_dir = HERE.parent / "tests" / "vision"
    if not (ref_dir / "zoo_reference.py").is_file():
        return None
    sys.path.insert(0, str(ref_dir))
    try:
        import zoo_reference as Z
    finally:
        sys.path.remove(str(ref_dir))
    return Z


def scenario_pipeline(st: Settings, tmp: Path, c: CBaseline, counters, say) -> Dict[str, Any]:
    """Camera frame (1920x1080 BGR) to boxes, host CPU per frame: rknnx.vision.Detector
    against RKNNLite + cv2 letterbox + the zoo's Python post-processing, stage by stage."""
    try:
        import cv2
    except ImportError as exc:
        note = f"skipped: OpenCV is not installed ({exc}; the bench extra has it)"
        say(f"pipeline: {note}")
        return {"skipped": note}
    Z = _zoo_reference()
    if Z is None:
        say("pipeline")
        return {"skipped": "tests/vision/zoo_reference.py is not here (a source checkout has it)"}
    from rknnx.emulator import samples
    from rknnx.lite import RKNNLite
    from rknnx.vision import Detector

    iters = 5 if st.quick else 40
    wu = st.warmup(iters)
    path = save(tmp, "yolov8n_squares", samples.detector(num_classes=80, score_sum=True))
    frame = B.squares_frame(1920, 1080, n=4)
    H, W = 640, 640
    fh, fw = frame.shape[:2]
    r = min(W / fw, H / fh)
    nw, nh = round(fw * r), round(fh * r)
    left, top = (W - nw) // 2, (H - nh) // 2

    # the zoo's yolov8.py post_process and its py_utils letterbox helper (--zoo DIR), else
    # the stand-in on the zoo's path (bench/zoo_python.py) and cv2's calls as the helper
    # makes them (resize, copyMakeBorder), then cvtColor as the zoo's demo does
    import zoo_seg
    zoo_pp, helper_cls, zoo_what = zoo_seg.detect(getattr(st, "zoo", None))
    helper = helper_cls(enable_letter_box=True) if helper_cls is not None else None

    def cv2_letterbox(img):
        if helper is not None:
            if len(helper.letter_box_info_list) > 64:   # the demo's list grows per frame
                del helper.letter_box_info_list[:-1]
            padded = helper.letter_box(im=img, new_shape=(H, W), pad_color=(0, 0, 0))
        else:
            resized = cv2.resize(img, (nw, nh), interpolation=cv2.INTER_LINEAR)
            padded = cv2.copyMakeBorder(resized, top, H - nh - top, left, W - nw - left,
                                        cv2.BORDER_CONSTANT, value=(0, 0, 0))
        return cv2.cvtColor(padded, cv2.COLOR_BGR2RGB)

    def zoo_post(outs):
        b, _, _ = zoo_pp(outs)
        if b is None:
            return np.zeros((0, 4), np.float32)
        if helper is not None:
            return helper.get_real_box(b)
        b = b.copy()
        b[:, 0::2] = np.clip((b[:, 0::2] - left) / r, 0, fw)
        b[:, 1::2] = np.clip((b[:, 1::2] - top) / r, 0, fh)
        return b

    res: Dict[str, Any] = {"frame": [fw, fh], "anchor": zoo_what,
                           "model": "detector sample, 80 classes, "
                           "score_sum: 9 int8 outputs (yolov8n's signature)"}
    rk = RKNNLite()
    found_a: List[int] = []
    found_b: List[int] = []
    rounds: Dict[str, List[Dict[str, Any]]] = {"a": [], "b": []}
    try:
        if rk.load_rknn(path) != 0 or rk.init_runtime() != 0:
            return {"skipped": "RKNNLite could not load the model"}

        def lite_frame():
            img = cv2_letterbox(frame)
            outs = rk.inference(inputs=[img[None]])
            found_a.append(len(zoo_post(outs)))

        with rknnx.Model(path) as m, Detector(m, "yolov8") as det:

            def detector_frame():
                found_b.append(len(det.detect(frame)))

            for _ in range(3):          # three rounds, the two flows in turn
                rounds["a"].append(B.frame_loop(lite_frame, iters, wu, counters))
                rounds["b"].append(B.frame_loop(detector_frame, iters, wu, counters))
            det.stage_times(reset=True)
            for _ in range(iters):
                det.detect(frame)
            t = det.stage_times()
            b_stages = {"letterbox": t["letterbox"]["p50"] * 1e9,
                        "decode": t["decode"]["p50"] * 1e9,
                        "run (wall)": t["npu"]["p50"] * 1e9}
        img = cv2_letterbox(frame)
        outs = rk.inference(inputs=[img[None]])
        a_stages = {"letterbox": _median_ns(lambda: cv2_letterbox(frame), iters),
                    "post-processing": _median_ns(lambda: zoo_post(outs), iters)}
    finally:
        rk.release()

    def med(side):
        v = [x.get("host_cpu_ns_per_frame") for x in rounds[side]]
        return (float(statistics.median(v)) if all(v) else None), v

    ha, ha_r = med("a")
    hb, hb_r = med("b")
    res["rknnlite + cv2 + zoo python"] = {"host_cpu_ns_per_frame": ha, "rounds": ha_r,
                                          "stages_ns": a_stages, "boxes": found_a[-1],
                                          "frame": rounds["a"][-1]}
    res["rknnx Detector"] = {"host_cpu_ns_per_frame": hb, "rounds": hb_r,
                             "stages_ns": b_stages, "boxes": found_b[-1],
                             "frame": rounds["b"][-1]}
    if ha and hb:
        res["ratio"] = ha / hb
    say("pipeline")
    return res


def scenario_pool(st: Settings, tmp: Path, c: CBaseline, counters, say) -> Dict[str, Any]:
    path = save(tmp, "frame_64", frame_model(64, 64))
    frames = st.pool_frames
    npu = st.npu_time_us
    res: Dict[str, Any] = {"npu_time_us": npu, "frames": frames, "workers": [],
                           "pool": [], "threads": [], "c_pool": []}
    ctl = counters.control if counters else None
    if ctl is None:
        res["note"] = "not the emulator: no simulated NPU time, the model's own time counts"
    img = np.zeros((1, 64, 64, 3), np.uint8)
    with rknnx.Model(path) as m:
        if ctl:
            ctl.set_npu_time_us(npu)
        try:
            for n in range(1, st.workers + 1):
                with rknnx.Pool(m, workers=n) as pool:
                    list(pool.map([img] * n))                       # warm up
                    t0 = time.perf_counter_ns()
                    for _ in pool.map([img] * frames):
                        pass
                    res["pool"].append(frames / ((time.perf_counter_ns() - t0) / 1e9))
                sessions = [m.zero_copy() for _ in range(n)]
                try:
                    share = [frames // n + (k < frames % n) for k in range(n)]
                    barrier = threading.Barrier(n + 1)

                    def work(s, count):
                        barrier.wait()
                        for _ in range(count):
                            s.run()

                    threads = [threading.Thread(target=work, args=(s, k))
                               for s, k in zip(sessions, share)]
                    for th in threads:
                        th.start()
                    barrier.wait()
                    t0 = time.perf_counter_ns()
                    for th in threads:
                        th.join()
                    res["threads"].append(frames / ((time.perf_counter_ns() - t0) / 1e9))
                finally:
                    for s in sessions:
                        s.close()
                ns = c.run(path, "pool", frames, n, env={"RKNN_EMU_NPU_TIME_US": str(npu)})[0]
                res["c_pool"].append(frames / (ns / 1e9))
                res["workers"].append(n)
                say(f"pool: {n} worker(s)")
        finally:
            if ctl:
                ctl.set_npu_time_us(None)
    return res


def _vendor_standin_model() -> Optional[str]:
    """yolo640_rk3588.rknn of the vendor data (env RKNNX_VENDOR_DATA, or a shared/ folder
    beside the checkout), or None."""
    roots = [os.environ.get("RKNNX_VENDOR_DATA")]
    roots += [str(p / "shared") for p in HERE.parents]
    for r in roots:
        if r:
            f = Path(r) / "rknn-models" / "toolkit-2.5.0" / "yolo640_rk3588.rknn"
            if f.is_file():
                return str(f)
    return None


def scenario_standin(st: Settings, tmp: Path, c: CBaseline, counters, say) -> Dict[str, Any]:
    """The stand-in's per-frame cost next to the general flow's own conversions: ``npu``
    (the stand-in's computation, on the emulator's clock) plus ``run`` against ``set``
    (inputs_set: the uint8 frame to the NPU's layout) plus ``get`` (outputs_get: the three
    int8 heads dequantized to float32 NCHW)."""
    path = st.standin_model or _vendor_standin_model()
    info = rknnx.runtime_info()
    if path is None or not info["is_emulator"]:
        say("standin")
        return {"skipped": "no vendor .rknn (give --standin-model)" if path is None else
                "the stand-in is the emulator's (this runtime is not)"}
    try:
        r = B.compare_flows(path, iterations=st.standin_iters,
                            warmup=st.warmup(st.standin_iters))
    except rknnx.RKNNError as e:           # an emulator without the stand-in, another chip
        say("standin")
        return {"skipped": f"the runtime refused {os.path.basename(path)}: {e}"}
    ph = r["flows"]["general-float32"]["phases"]
    med = {k: ph[k]["median_ns"] if isinstance(ph[k], dict) else ph[k] for k in ph}
    standin = med["npu"] + med["run"]
    conversions = med["set"] + med["get"]
    say("standin")
    return {"model": os.path.basename(path), "phases_ns": med, "standin_ns": standin,
            "conversions_ns": conversions, "ratio": standin / max(conversions, 1.0),
            "frame": r["flows"]["general-float32"]["frame"]}


RUNNERS = {"overhead": scenario_overhead, "sizes": scenario_sizes, "chain": scenario_chain,
           "rknnlite": scenario_rknnlite, "detector": scenario_detector,
           "letterbox": scenario_letterbox, "decode": scenario_decode,
           "masks": scenario_masks, "pipeline": scenario_pipeline, "pool": scenario_pool,
           "standin": scenario_standin,
           "letterbox_sizes": lambda st, tmp, c, counters, say: letterbox_sizes.run(
               st, tmp, say, frame_model, save),
           "track": lambda st, tmp, c, counters, say: track_bench.scenario(st.quick, say),
           "streams": lambda st, tmp, c, counters, say:
           _streams().scenario(st.quick, tmp, counters, say, getattr(st, "zoo", None)),
           "wheels": lambda st, tmp, c, counters, say: _wheels(st, say)}
STEPS = {"letterbox_sizes": 1, "overhead": 2, "sizes": None, "chain": 1, "rknnlite": 1, "detector": 1, "letterbox": 1,
         "decode": 1, "masks": 1, "pipeline": 1, "pool": None, "standin": 1, "streams": 2, "track": 3,
         "wheels": 1}


def _streams():
    """bench/streams.py (the streams scenario's own module)."""
    if str(HERE) not in sys.path:
        sys.path.insert(0, str(HERE))
    import streams

    return streams


def _wheels(st: Settings, say) -> Dict[str, Any]:
    """bench/wheels.py (the wheels in dist/wheels, or RKNNX_BENCH_WHEELS)."""
    if str(HERE) not in sys.path:
        sys.path.insert(0, str(HERE))
    import wheels as W
    d = Path(os.environ.get("RKNNX_BENCH_WHEELS", HERE.parent / "dist" / "wheels"))
    r = W.run(d, 2000 if st.quick else 20000, 300 if st.quick else 3000,
              say=lambda *a: None)
    say("wheels")
    return r


# -- the targets ----------------------------------------------------------------------------------
def targets(r: Dict[str, Any]) -> List[Dict[str, Any]]:
    """Each target, with the figure measured in this run (never asserted)."""
    t: List[Dict[str, Any]] = []

    def add(name, value, goal, ok, unit=""):
        t.append({"target": name, "measured": value, "goal": goal, "unit": unit,
                  "met": None if value is None else bool(ok)})

    o = r.get("overhead")
    if o:
        extra = o["session_run"]["median_ns"] - o["c_zerocopy"]["median_ns"]
        add("zero-copy session.run() over the C rknn_run loop", round(extra), "<= +150 ns",
            extra <= 150, "ns")
        ll = o["lowlevel_run"]["median_ns"] - o["c_zerocopy"]["median_ns"]
        add("(lowlevel Context.run() over the C loop)", round(ll), "(info)", True, "ns")
        if "python_floor" in o:
            add("(an empty Python call timed the same way: the timing loop itself)",
                round(o["python_floor"]["median_ns"]), "(info)", True, "ns")
        ratio = o["model_run"]["median_ns"] / o["c_general"]["median_ns"]
        add("general flow model.run() / C general loop", round(ratio, 2), "<= 2x", ratio <= 2, "x")
        ratio = o["lowlevel_general"]["median_ns"] / o["c_general"]["median_ns"]
        add("(lowlevel inputs_set+run+outputs_get / C general loop)", round(ratio, 2), "(info)",
            True, "x")
        if "run_signature" in o:
            add("(a method of model.run's signature doing nothing, called the same way)",
                round(o["run_signature"]["median_ns"]), "(info)", True, "ns")
    copied = []
    if o:
        copied.append(o["flows"]["flows"]["zero-copy"]["bytes_per_frame"])
    for size in (r.get("sizes") or {}).values():
        copied.append(size["flows"]["zero-copy"]["bytes_per_frame"])
        copied += [v["bytes_per_frame"] for k, v in size["variants"].items()
                   if k.startswith("zero-copy")]
    for k, v in (r.get("chain") or {}).items():
        if k.startswith("zero-copy"):
            copied.append(v["bytes_per_frame"])
    if copied and all(b is not None for b in copied):
        worst = max(b["copied_by_api"] for b in copied)
        add("bytes copied by the wrapper per zero-copy frame (worst scenario)", worst, "0",
            worst == 0, "B")
    d = r.get("detector")
    if d:
        a, b = d["rknnlite style"], d["best rknnx style"]
        ratio = a["host_cpu_ns_per_frame"] / max(b["host_cpu_ns_per_frame"], 1.0)
        add("detector 640: host CPU per frame, RKNNLite style / best rknnx style",
            round(ratio, 2), ">= 3x", ratio >= 3, "x")
        ratio = a["cpu_ns_per_frame"] / max(b["cpu_ns_per_frame"], 1.0)
        add("(the same with the emulated NPU work's CPU time included)", round(ratio, 2),
            "(info)", True, "x")
    lb = r.get("letterbox")
    if lb and "skipped" not in lb:
        ours = lb["rknnx letterbox"]["median_ns"]
        ratio = lb["opencv"]["median_ns"] / max(ours, 1.0)
        add("letterbox 1920x1080 BGR -> 640x640 RGB into the input: OpenCV (resize + "
            "copyMakeBorder + cvtColor + copy) / rknnx.vision.letterbox", round(ratio, 2),
            ">= 1x", ratio >= 1, "x")
        ratio = lb["opencv, 1 thread"]["median_ns"] / max(ours, 1.0)
        add("(the same, OpenCV on one thread)", round(ratio, 2), "(info)", True, "x")
        ratio = lb["opencv, NV12"]["median_ns"] / max(lb["rknnx letterbox, NV12"]["median_ns"],
                                                      1.0)
        add("(the same from NV12: OpenCV's cvtColor first)", round(ratio, 2), "(info)", True,
            "x")
        if "opencv, NV12, 1 thread" in lb:
            ratio = lb["opencv, NV12, 1 thread"]["median_ns"] / max(
                lb["rknnx letterbox, NV12"]["median_ns"], 1.0)
            add("(the same from NV12, OpenCV on one thread)", round(ratio, 2), "(info)", True,
                "x")
    ls = r.get("letterbox_sizes")
    if ls and "skipped" not in ls:
        r1, k1, rd, kd = letterbox_sizes.worst(ls)
        add(f"letterbox at every camera size, format and target (bench/letterbox_sizes.py): "
            f"the lowest OpenCV (1 thread) / rknnx ratio ({k1})", round(r1, 2), ">= 1.1x",
            r1 >= 1.1, "x")
        add(f"(the lowest with OpenCV's default threads: {kd})", round(rd, 2), "(info)", True,
            "x")
    pl = r.get("pipeline")
    if pl and "ratio" in pl:
        own = pl.get("anchor", "").startswith("the zoo's Python")
        add("camera frame 1920x1080 -> boxes, host CPU per frame: RKNNLite + cv2 letterbox + "
            f"zoo Python post-processing ({'its own' if own else 'stand-in'}) / "
            "rknnx.vision.Detector", round(pl["ratio"], 1),
            ">= 8x", pl["ratio"] >= 8, "x")
    for row in _streams().target_rows(r.get("streams")):
        add(*row)
    dc = r.get("decode")
    if dc and "ratio" in dc:
        add("decode + NMS, yolov8n 640 int8 9 outputs, 20 objects: the zoo's Python "
            "post_process (or its stand-in) / rknnx.vision.decode", round(dc["ratio"], 1), ">= 50x", dc["ratio"] >= 50, "x")
        add("(the same from native NC1HWC2 outputs)", round(dc["ratio_native"], 1), "(info)",
            True, "x")
        own = (dc.get("post_process") or {}).get("anchor", "").startswith(
            "the zoo's post_process")
        for name, fr in (dc.get("post_process") or {}).get("frames", {}).items():
            add(f"decode alone, yolov8n 640 int8 NCHW, {name}: rknnx.vision.decode from "
                f"Python / the zoo's C post_process ({'its own' if own else 'the port'}, "
                f"timed in C)", round(fr["ratio_nchw"], 2), "<= 1.2x", fr["ratio_nchw"] <= 1.2,
                "x")
        if "ratio_zoo_c" in dc:
            add("decode + NMS, the same frame: the zoo's C (NC1HWC2 -> NCHW, then "
                "postprocess.cc; bench/c/zoo_yolov8.c) / rknnx.vision.decode reading the "
                "native outputs in place", round(dc["ratio_zoo_c"], 2), ">= 1x",
                dc["ratio_zoo_c"] >= 1, "x")
    mk = r.get("masks")
    if mk and "ratio" in mk:
        own = mk.get("anchor", "").startswith("the zoo's Python")
        add(f"yolov8-seg masks, 20 boxes of 64-160 px: the zoo's Python "
            f"({'its own' if own else 'stand-in'}: whole proto, upsample, crop) / "
            f"rknnx.vision.decode's masks", round(mk["ratio"], 1), ">= 4x",
            mk["ratio"] >= 4, "x")
        add("(the same with the decode on both sides" +
            (": the zoo's whole post_process)" if "zoo_post_process_ns" in mk else
             ", estimated: rknnx decode + the zoo's masks)"),
            round(mk["ratio_with_decode"], 1), "(info)", True, "x")
    tk = r.get("track")
    for n in ("20", "100") if tk else ():
        ratio = tk["counts"].get(n, {}).get("ratio", {}).get("trackers 2.6.1 ByteTrack")
        if ratio:
            add(f"Tracker.update at {n} objects: trackers 2.6.1 ByteTrack / rknnx.vision."
                f"Tracker", round(ratio, 1), ">= 30x", ratio >= 30, "x")
    sd = r.get("standin")
    if sd and "ratio" in sd:
        add(f"stand-in of {sd['model']}: its run / the general flow's conversions (set + get)",
            round(sd["ratio"], 2), "<= 1x", sd["ratio"] <= 1, "x")
    for ver, w in (r.get("wheels") or {}).get("ratios", {}).items():
        add(f"{ver}t free-threaded / {ver} GIL build: zero-copy run() per call",
            round(w["ft_zero_copy_vs_gil"], 2), "<= 1.3x", w["ft_zero_copy_vs_gil"] <= 1.3, "x")
        add(f"{ver}t free-threaded / {ver} GIL build: model.run() per call",
            round(w["ft_model_run_vs_gil"], 2), "<= 1.3x", w["ft_model_run_vs_gil"] <= 1.3, "x")
        add(f"{ver}t (PYTHON_GIL=0) / {ver}: a Pool of 3, time per frame",
            round(w["ft_pool3_vs_gil"], 2), "<= 0.9x", w["ft_pool3_vs_gil"] <= 0.9, "x")
    p = r.get("pool")
    if p and 3 in p["workers"]:
        k1, k3 = p["workers"].index(1), p["workers"].index(3)
        ratio = p["pool"][k3] / p["pool"][k1]
        add("rknnx.Pool: 3 workers / 1 worker (frames/s)", round(ratio, 2), ">= 2.5x",
            ratio >= 2.5, "x")
        ratio = p["pool"][k3] / p["c_pool"][k3]
        add("rknnx.Pool 3 workers / C thread pool 3 threads", round(ratio, 2), ">= 0.95x",
            ratio >= 0.95, "x")
    return t


# -- output ---------------------------------------------------------------------------------------
def _row_table(rows: List[List[str]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in
                       enumerate(zip(r, widths))) for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _frame_rows(named: Dict[str, Dict[str, Any]], c_ns: Optional[float] = None) -> str:
    rows = [["", "median", "p95", "CPU/frame", "host CPU/frame", "API copies", "synced",
             "RSS/call"]]
    for k, v in named.items():
        b = v.get("bytes_per_frame")
        rows.append([k, B._ns(v["frame"]["median_ns"]), B._ns(v["frame"]["p95_ns"]),
                     B._ns(v["cpu_ns_per_frame"]), B._ns(v.get("host_cpu_ns_per_frame")),
                     B._bytes(b["copied_by_api"]) if b else "-",
                     B._bytes(b["cache_synced"]) if b else "-",
                     B._bytes(v.get("rss_bytes_per_call"))])
    return _row_table(rows)


def report(r: Dict[str, Any]) -> str:
    out = []
    if r.get("wheels"):
        sys.path.insert(0, str(HERE))
        import wheels as W
        out.append("== wheels ==\n" + W.report(r["wheels"]))
    o = r.get("overhead")
    if o:
        out.append("== overhead (tiny model, per call) ==")
        rows = [["", "median", "p95", "vs C"]]
        for k, base in (("c_zerocopy", None), ("session_run", "c_zerocopy"),
                        ("lowlevel_run", "c_zerocopy"), ("c_general", None),
                        ("model_run", "c_general"), ("lowlevel_general", "c_general"),
                        ("python_floor", None), ("run_signature", None),
                        ("run_signature_c", None)):
            if k not in o:
                continue
            v = o[k]
            rel = (f"x{v['median_ns'] / o[base]['median_ns']:.2f} "
                   f"({v['median_ns'] - o[base]['median_ns']:+.0f} ns)") if base else \
                ("1.00" if k.startswith("c_") else "-")
            rows.append([k, B._ns(v["median_ns"]), B._ns(v["p95_ns"]), rel])
        out.append(_row_table(rows))
        out.append(B.format_table(o["flows"]))
    for size, s in (r.get("sizes") or {}).items():
        out.append(f"== {size} uint8 ({s['iterations']} frames) ==")
        out.append(B.format_table({"flows": s["flows"], "machine": r["machine"]}).split("\n", 1)[1])
        out.append(_frame_rows(s["variants"]))
    if r.get("chain"):
        out.append(f"== chain (float32 [1, {r['chain']['elements']}]) ==")
        out.append(_frame_rows({k: v for k, v in r["chain"].items() if k != "elements"}))
    if r.get("rknnlite"):
        out.append("== RKNNLite drop-in ==")
        lite = r["rknnlite"]
        out.append(lite["skipped"] if "skipped" in lite else _frame_rows(lite))
    d = r.get("detector")
    if d:
        out.append(f"== detector frame 640 (kernels: {'compiled' if d['kernels'] else 'numpy fallback'}) ==")
        rows = [["", "median", "p95", "CPU/frame", "NPU work CPU (emul.)", "host CPU",
                 "API copies"]]
        for k in ("rknnlite style", "best rknnx style"):
            v = d[k]
            b = v["bytes_per_frame"]
            rows.append([k, B._ns(v["frame"]["median_ns"]), B._ns(v["frame"]["p95_ns"]),
                         B._ns(v["cpu_ns_per_frame"]), B._ns(v["npu_cpu_ns_per_frame"]),
                         B._ns(v["host_cpu_ns_per_frame"]),
                         B._bytes(b["copied_by_api"]) if b else "-"])
        out.append(_row_table(rows))
    lb = r.get("letterbox")
    if lb:
        if "skipped" in lb:
            out.append(f"== letterbox: {lb['skipped']} ==")
        else:
            out.append(f"== letterbox 1920x1080 -> 640x640 RGB into the input (OpenCV "
                       f"{lb['opencv_version']}, {lb['opencv_threads']} threads) ==")
            rows = [["", "median", "p95", "min"]]
            for k, v in lb.items():
                if isinstance(v, dict):
                    rows.append([k, B._ns(v["median_ns"]), B._ns(v["p95_ns"]),
                                 B._ns(v["min_ns"])])
            out.append(_row_table(rows))
    if r.get("letterbox_sizes"):
        out.extend(letterbox_sizes.report(r["letterbox_sizes"]))
    dc = r.get("decode")
    if dc:
        if "skipped" in dc:
            out.append(f"== decode: skipped ({dc['skipped']}) ==")
        else:
            out.append(f"== decode + NMS, yolov8n 640 int8, 9 outputs, {dc['objects']} planted "
                       f"objects ({dc['kept']} boxes kept; same as the reference: "
                       f"{'yes' if dc['same_as_reference'] else 'NO'}) ==")
            out.append(f"Python anchor: {dc.get('zoo_python', 'zoo-style numpy')}")
            rows = [["", "median", "zoo / this"],
                    [("the zoo's Python" if dc.get("zoo_python", "").startswith(
                        "the zoo's Python post_process") else
                      "zoo Python stand-in") + " (float32 outputs)",
                     B._ns(dc["zoo_python_ns"]), "1.00"],
                    ["rknnx.vision.decode, NCHW int8", B._ns(dc["rknnx_nchw_ns"]),
                     f"x{dc['ratio']:.1f}"],
                    ["rknnx.vision.decode, native NC1HWC2 int8", B._ns(dc["rknnx_native_ns"]),
                     f"x{dc['ratio_native']:.1f}"]]
            if "zoo_c_ns" in dc:
                rows.append(["the zoo's C port: NC1HWC2 -> NCHW + postprocess.cc",
                             B._ns(dc["zoo_c_ns"]),
                             f"x{dc['zoo_python_ns'] / max(dc['zoo_c_ns'], 1.0):.1f}"])
            out.append(_row_table(rows))
            if "zoo_c_ns" in dc:
                out.append(f"the zoo's C with its NC1HWC2 -> NCHW copy / rknnx (native): "
                           f"x{dc['ratio_zoo_c']:.2f}; its kept "
                           f"set ({dc['zoo_c_kept']} boxes) the same as rknnx's: "
                           f"{'yes' if dc['zoo_c_same_kept_set'] else 'NO'}")
            if "post_process" in dc:
                import decode_cost
                out += decode_cost.report(dc["post_process"], B._ns)
    if r.get("track"):
        out.append("== track ==")
        out.append(track_bench.report_lines(r["track"]))
    mk = r.get("masks")
    if mk:
        if "skipped" in mk:
            out.append(f"== masks: {mk['skipped']} ==")
        else:
            out.append(f"== yolov8-seg masks, {mk['boxes']} boxes of {mk['box_px'][0]}-"
                       f"{mk['box_px'][1]} px (pixels agreeing with the zoo's: "
                       f"{100 * mk['mask_pixels_agree']:.3f}%) ==")
            out.append(f"anchor: {mk.get('anchor', 'the project numpy/OpenCV port')}")
            own = mk.get("anchor", "").startswith("the zoo's Python")
            rows = [["", "median", "zoo / this"],
                    [("the zoo's Python masks" if own else "zoo Python masks stand-in") +
                     " (whole proto, upsample, crop)", B._ns(mk["zoo_masks_ns"]), "1.00"]]
            if "zoo_post_process_ns" in mk:
                rows.append([f"the zoo's post_process (decode, NMS, masks; kept "
                             f"{mk['zoo_post_process_kept']}, same classes: "
                             f"{'yes' if mk['zoo_post_process_same_classes'] else 'NO'})",
                             B._ns(mk["zoo_post_process_ns"]), ""])
            rows += [
                    ["rknnx.vision.decode yolov8-seg (decode + masks)",
                     B._ns(mk["rknnx_seg_ns"]), f"x{mk['ratio_with_decode']:.1f} (+decode)"],
                    ["rknnx.vision.decode yolov8 (the same heads, no masks)",
                     B._ns(mk["rknnx_det_ns"]), ""],
                    ["rknnx masks (the difference)", B._ns(mk["rknnx_masks_ns"]),
                     f"x{mk['ratio']:.1f}"]]
            out.append(_row_table(rows))
    pl = r.get("pipeline")
    if pl:
        if "skipped" in pl:
            out.append(f"== pipeline: skipped ({pl['skipped']}) ==")
        else:
            a, b = pl["rknnlite + cv2 + zoo python"], pl["rknnx Detector"]
            out.append(f"== camera frame {pl['frame'][0]}x{pl['frame'][1]} -> boxes, host CPU "
                       f"per frame ({pl['model']}) ==")
            out.append(f"anchor: {pl.get('anchor', 'the project numpy port')}")
            rows = [["", "host CPU/frame", "stages (median)", "boxes"],
                    ["RKNNLite + cv2 + zoo Python", B._ns(a["host_cpu_ns_per_frame"]),
                     ", ".join(f"{k} {B._ns(v)}" for k, v in a["stages_ns"].items()),
                     str(a["boxes"])],
                    ["rknnx.vision.Detector", B._ns(b["host_cpu_ns_per_frame"]),
                     ", ".join(f"{k} {B._ns(v)}" for k, v in b["stages_ns"].items()),
                     str(b["boxes"])]]
            out.append(_row_table(rows))
            if "ratio" in pl:
                out.append(f"ratio (host CPU): x{pl['ratio']:.1f}")
    if r.get("streams"):
        out.extend(_streams().report_lines(r["streams"]))
    p = r.get("pool")
    if p:
        out.append(f"== pool ({p['frames']} frames, simulated NPU time {p['npu_time_us']} us) ==")
        rows = [["workers", "rknnx.Pool f/s", "threads+sessions f/s", "C pool f/s", "Pool/C"]]
        for k, n in enumerate(p["workers"]):
            rows.append([str(n), f"{p['pool'][k]:.1f}", f"{p['threads'][k]:.1f}",
                         f"{p['c_pool'][k]:.1f}", f"x{p['pool'][k] / p['c_pool'][k]:.2f}"])
        out.append(_row_table(rows))
    sd = r.get("standin")
    if sd:
        if "skipped" in sd:
            out.append(f"== stand-in: skipped ({sd['skipped']}) ==")
        else:
            out.append(f"== stand-in for {sd['model']}: the general flow, median ns per phase ==")
            ph = sd["phases_ns"]
            rows = [["set", "npu (stand-in)", "run", "get", "python", "stand-in / set+get"],
                    [f"{ph['set']:.0f}", f"{ph['npu']:.0f}", f"{ph['run']:.0f}",
                     f"{ph['get']:.0f}", f"{ph['python']:.0f}", f"x{sd['ratio']:.2f}"]]
            out.append(_row_table(rows))
    t = r.get("targets")
    if t:
        out.append("== targets (measured in this run; ratios, never asserted) ==")
        rows = [["target", "measured", "goal", "met"]]
        for x in t:
            m = "-" if x["measured"] is None else f"{x['measured']}{x['unit'] if x['unit'] != 'x' else 'x'}"
            rows.append([x["target"], m, x["goal"],
                         "" if x["goal"] == "(info)" else ("yes" if x["met"] else "no")])
        out.append(_row_table(rows))
    return "\n\n".join(out)


def plots(r: Dict[str, Any], out: Path) -> List[str]:
    plt = B._pyplot()
    written = []
    groups = []
    if r.get("overhead"):
        groups.append(("tiny model", r["overhead"]["flows"]["flows"]))
    for size, s in (r.get("sizes") or {}).items():
        groups.append((f"{size} uint8", s["flows"]))
    if groups:
        emulated = bool(r.get("machine", {}).get("is_emulator"))
        fig, axes = plt.subplots(1, len(groups), figsize=(4.2 * len(groups), 4.9), squeeze=False)
        legend = None
        for ax, (title, flows) in zip(axes[0], groups):
            legend = B.stacked_phases(ax, [k.replace("general-", "general\n") for k in flows],
                                      list(flows.values()), emulated=emulated)
            ax.set_title(title, fontsize=10)
            ax.tick_params(axis="x", labelsize=8)
        m = r.get("machine", {})
        fig.suptitle(f"latency per frame by phase (median) on {m.get('chip', '?')}, "
                     f"{B._runtime_name(m)}", fontsize=11)
        fig.legend(*legend, loc="lower center", ncol=len(B.PHASES), frameon=False, fontsize=9)
        fig.tight_layout(rect=(0, 0.07, 1, 1))
        path = out / "phases.png"
        fig.savefig(path, dpi=100)
        plt.close(fig)
        written.append(str(path))
    p = r.get("pool")
    if p and p["workers"]:
        fig, ax = plt.subplots(figsize=(5.5, 4))
        for key, label in (("pool", "rknnx.Pool"), ("threads", "threads + sessions"),
                           ("c_pool", "C thread pool")):
            ax.plot(p["workers"], p[key], marker="o", label=label)
        ideal = [p["c_pool"][0] * n for n in p["workers"]]
        ax.plot(p["workers"], ideal, ls=":", color="grey", label="linear")
        ax.set_xlabel("workers (contexts)")
        ax.set_ylabel("frames / s")
        ax.set_xticks(p["workers"])
        ax.set_title(f"throughput vs workers (NPU time {p['npu_time_us']} us)")
        ax.legend()
        fig.tight_layout()
        path = out / "throughput.png"
        fig.savefig(path, dpi=100)
        plt.close(fig)
        written.append(str(path))
    return written


def results_dir(out: Optional[str], quick: bool) -> Path:
    """Where the results go: `out` when given; else ``bench/results`` (the tracked figures
    the docs show) for a full run, and for a ``--quick`` smoke run a directory of the
    system's temporary one, so that a smoke run never overwrites the tracked results."""
    if out is not None:
        return Path(out)
    if quick:
        return Path(tempfile.gettempdir()) / "rknnx-bench-quick"
    return HERE / "results"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run, well under a minute")
    parser.add_argument("--only", default=",".join(SCENARIOS),
                        help=f"comma-separated scenarios (default all: {','.join(SCENARIOS)})")
    parser.add_argument("--out", default=None,
                        help="directory for suite.json and the plots (default bench/results; "
                             "with --quick, a directory under the system's temporary one)")
    parser.add_argument("--workers", type=int, default=4, help="pool sizes 1..N (default 4)")
    parser.add_argument("--npu-time-us", type=int, default=None,
                        help="simulated NPU time per run in the pool scenario (emulator)")
    parser.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    parser.add_argument("--update", action="store_true",
                        help="keep the other scenarios of the suite.json already in the "
                             "results directory (each scenario then says which run "
                             "measured it, under \"runs\"); the targets are recomputed")
    parser.add_argument("--zoo", default=None, metavar="DIR",
                        help="a checkout of airockchip/rknn_model_zoo (a directory named "
                             "rknn_model_zoo): the decode, masks and pipeline scenarios time "
                             "its own C and Python post-processing (default: ports that "
                             "follow its code path stand in)")
    parser.add_argument("--standin-model", default=None,
                        help="the vendor .rknn of the standin scenario (default: "
                             "yolo640_rk3588.rknn of the vendor data, when it is here)")
    args = parser.parse_args(argv)
    chosen = [s.strip() for s in args.only.split(",") if s.strip()]
    unknown = [s for s in chosen if s not in SCENARIOS]
    if unknown:
        parser.error(f"unknown scenario(s) {unknown}; known: {', '.join(SCENARIOS)}")
    if args.workers < 1:
        parser.error("--workers must be >= 1")
    st = Settings(args.quick, args.workers, args.npu_time_us)
    st.standin_model = args.standin_model
    st.zoo = args.zoo
    out = results_dir(args.out, args.quick)
    out.mkdir(parents=True, exist_ok=True)
    print(f"results into {out}", file=sys.stderr)

    try:
        info = rknnx.runtime_info()
    except rknnx.RuntimeNotFoundError:
        info = rknnx.load_runtime("emulator")
    counters = B.Counters.for_runtime()
    total = sum(STEPS[s] or (len(st.sizes) if s == "sizes" else st.workers) for s in chosen)
    bar = B._Progress(total, True, "suite")
    t_start = time.perf_counter()
    result: Dict[str, Any] = {"schema": "rknnx.bench-suite/1", "quick": st.quick,
                              "command": " ".join(["python", "bench/suite.py", *(argv if argv
                                                   is not None else sys.argv[1:])])}
    print(f"runtime: {info['path']} ({'emulator' if info['is_emulator'] else 'librknnrt'})",
          file=sys.stderr)
    try:
        with tempfile.TemporaryDirectory() as d:
            tmp = Path(d)
            c = CBaseline(tmp, info["path"])
            from rknnx.emulator import samples

            with rknnx.Model(samples.tiny_relu()) as m:
                result["machine"] = B.machine_info(m)
            for name in chosen:
                result[name] = RUNNERS[name](st, tmp, c, counters, bar.step)
    finally:
        bar.close()
    result["seconds"] = round(time.perf_counter() - t_start, 1)
    path = out / "suite.json"
    if args.update and path.is_file():
        old = json.loads(path.read_text())
        runs = old.get("runs") or {k: {"command": old.get("command"), "quick": old.get("quick")}
                                   for k in SCENARIOS if k in old}
        for name in chosen:
            runs[name] = {"command": result["command"], "quick": st.quick}
        merged = {k: v for k, v in old.items() if k != "targets"}
        merged.update({k: v for k, v in result.items()})
        merged["runs"] = runs
        result = merged
    result["targets"] = targets(result)
    print(report(result))
    path.write_text(json.dumps(result, indent=1))
    print(f"\nwrote {path}", end="")
    if not args.no_plots:
        try:
            print(", " + ", ".join(plots(result, out)), end="")
        except ImportError as exc:
            print(f"\n(no plots: {exc})", end="")
    print(f"\n{result['seconds']} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
