"""The C baseline of the model zoo's yolov8 post-processing (``bench/c/zoo_yolov8.c``):
compiled into a shared library at run time and called through ctypes, for
``bench/suite.py`` (the decode scenario) and the test that holds its kept set to
:func:`rknnx.vision.decode`'s.

``ZooYolov8(tmp_dir)`` builds it; ``.frame(native, infos)`` returns the kept boxes of one
frame; ``.loop(native, infos, n)`` the nanoseconds of n frames, timed in C.  ``native``:
the 5-D NC1HWC2 int8 arrays as the NPU writes them (``[1, C1, H, W, C2]``), converted to
NCHW first as the zoo's zero-copy demo does (4-D NCHW arrays: the post-processing alone);
``infos``: the model's output infos (NCHW shape, scale, zero point).
``ZooReal(DIR, tmp_dir)`` is the zoo's own post_process compiled from a checkout DIR.
``yolov8_frame(Z)`` is the frame both time: a yolov8n 640 int8 frame of 9 outputs with 20
planted objects (``Z``: tests/vision/zoo_reference.py).
"""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any, Dict, List, Sequence

import numpy as np

HERE = Path(__file__).resolve().parent
SOURCE = HERE / "c" / "zoo_yolov8.c"
MAX_DETS = 128          # the zoo's OBJ_NUMB_MAX_SIZE


def nc1hwc2(a: np.ndarray, c2: int) -> np.ndarray:
    """NCHW [n, C, H, W] -> the NPU's [n, C1, H, W, C2], the channels padded with zeros."""
    n, C, H, W = a.shape
    c1 = -(-C // c2)
    p = np.zeros((n, c1 * c2, H, W), a.dtype)
    p[:, :C] = a
    return np.ascontiguousarray(p.reshape(n, c1, c2, H, W).transpose(0, 1, 3, 4, 2))


#: the frames the decode scenario times: (objects planted, background) -- "busy": a
#: detector's background where some cells' score_sum passes conf while none of their
#: classes does (about 660 cells read in full); "quiet": class values under 0.002 away
#: from the objects (score_sum lets only the objects' cells through), 20 objects on two
#: cells each (40 candidates) and 90 (about 180 candidates), the issue's two frames
FRAMES = {"20 objects": (20, "quiet"), "180 candidates": (90, "quiet"),
          "busy background": (20, "busy")}


def yolov8_frame(Z, seed: int = 0, c2: int = 16, n_obj: int = 20, background="busy"):
    """(codes NCHW, native NC1HWC2 with C2 = c2, float values, infos) of the bench's frame:
    per scale box [1, 64, H, W] (scale 0.0215, zp 1), class scores [1, 80, H, W] and the
    NPU's score_sum (the clipped sum of its class values) [1, 1, H, W] (1/255, zp -128);
    `n_obj` objects planted on two cells each, `background` as in FRAMES."""
    from rknnx._tensors import QuantInfo, TensorInfo

    rng = np.random.default_rng(seed)
    boxes, clss, _ = Z.planted_v8(rng, nc=80, n_obj=n_obj)
    if background == "quiet":
        # the objects' values (0.3 and up) kept, the background's scaled under 0.002
        clss = [np.where(c >= 0.3, c, c * 0.01).astype(np.float32) for c in clss]
    quant = {"box": (0.0215, 1), "cls": (1 / 255, -128), "sum": (1 / 255, -128)}
    codes, values, infos = [], [], []
    for s_ in range(3):
        for kind, x in (("box", boxes[s_]), ("cls", clss[s_]), ("sum", None)):
            if x is None:
                x = np.clip(values[-1].sum(axis=1, keepdims=True), 0, 1)
            sc, zp = quant[kind]
            q = Z.quantize(x, sc, zp)
            codes.append(q)
            values.append(Z.dequantize(q, sc, zp))
            infos.append(TensorInfo(len(infos), kind, q.shape, np.dtype(np.int8), "NCHW",
                                    QuantInfo("affine", sc, zp)))
    return codes, [nc1hwc2(q, c2) for q in codes], values, infos


class _Tensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("c", ctypes.c_int32), ("h", ctypes.c_int32),
                ("w", ctypes.c_int32), ("c1", ctypes.c_int32), ("c2", ctypes.c_int32),
                ("zp", ctypes.c_int32), ("scale", ctypes.c_float)]


class _Dets(ctypes.Structure):
    _fields_ = [("count", ctypes.c_int32), ("cls", ctypes.c_int32 * MAX_DETS),
                ("score", ctypes.c_float * MAX_DETS),
                ("box", (ctypes.c_float * 4) * MAX_DETS),
                ("ibox", (ctypes.c_int32 * 4) * MAX_DETS)]


class ZooYolov8:
    """The compiled baseline (``-O2``, as the suite's other C baselines)."""

    def __init__(self, tmp: Path, flags: Sequence[str] = ("-O2",)):
        cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
        if not cc:
            raise RuntimeError("a C compiler is needed for the zoo's C baseline (set CC)")
        so = Path(tmp) / "libzoo_yolov8.so"
        subprocess.run([cc, *flags, "-std=c11", "-Wall", "-Wextra", "-ffp-contract=off",
                        "-shared", "-fPIC",
                        str(SOURCE), "-o", str(so), "-lm"], check=True)
        self._lib = ctypes.CDLL(str(so))
        args = (ctypes.POINTER(_Tensor), ctypes.c_int, ctypes.c_int, ctypes.c_int,
                ctypes.c_float, ctypes.c_float)
        self._lib.zoo_yolov8_frame.argtypes = args + (ctypes.POINTER(_Dets),)
        self._lib.zoo_yolov8_frame.restype = ctypes.c_int
        self._lib.zoo_yolov8_loop.argtypes = args + (ctypes.c_long,
                                                     ctypes.POINTER(ctypes.c_longlong))
        self._lib.zoo_yolov8_loop.restype = ctypes.c_int

    @staticmethod
    def _tensors(native: Sequence[np.ndarray], infos) -> Any:
        if len(native) != len(infos):
            raise ValueError(f"{len(native)} arrays for {len(infos)} infos")
        arr = (_Tensor * len(native))()
        for t, a, info in zip(arr, native, infos):
            if a.dtype == np.int8 and a.ndim == 4 and a.flags.c_contiguous:
                # NCHW already (c1 = 0): the post-processing alone
                t.data = a.ctypes.data
                t.c, t.h, t.w = a.shape[1:]
                t.c1, t.c2 = 0, 0
                t.zp = int(info.quant.zero_point)
                t.scale = float(info.quant.scale)
                continue
            if a.dtype != np.int8 or a.ndim != 5 or not a.flags.c_contiguous:
                raise ValueError("expected contiguous int8 [1, C1, H, W, C2] arrays, got "
                                 f"{a.dtype} {a.shape}")
            _, c1, h, w, c2 = a.shape
            c = int(info.shape[1])
            if (h, w) != tuple(info.shape[2:]) or c1 * c2 < c:
                raise ValueError(f"native shape {a.shape} does not hold {info.shape}")
            t.data = a.ctypes.data
            t.c, t.h, t.w, t.c1, t.c2 = c, h, w, c1, c2
            t.zp = int(info.quant.zero_point)
            t.scale = float(info.quant.scale)
        return arr

    def frame(self, native, infos, input_size=(640, 640), conf=0.25,
              nms=0.45) -> Dict[str, np.ndarray]:
        """The kept boxes, in the zoo's output order: classes, scores, boxes (x1, y1, x2, y2
        in input pixels before the clamp), int_boxes (clamped and truncated as the zoo
        prints them)."""
        arr = self._tensors(native, infos)
        d = _Dets()
        rc = self._lib.zoo_yolov8_frame(arr, len(native), input_size[0], input_size[1],
                                        conf, nms, ctypes.byref(d))
        if rc:
            raise RuntimeError(f"zoo_yolov8_frame failed ({rc})")
        n = d.count
        return {"classes": np.array(d.cls[:n], np.int32),
                "scores": np.array(d.score[:n], np.float32),
                "boxes": np.array([list(b) for b in d.box[:n]], np.float32).reshape(-1, 4),
                "int_boxes": np.array([list(b) for b in d.ibox[:n]],
                                      np.int32).reshape(-1, 4)}

    def loop(self, native, infos, n: int, input_size=(640, 640), conf=0.25,
             nms=0.45) -> List[int]:
        """n frames timed in C: the nanoseconds of each."""
        arr = self._tensors(native, infos)
        t = (ctypes.c_longlong * n)()
        rc = self._lib.zoo_yolov8_loop(arr, len(native), input_size[0], input_size[1], conf,
                                       nms, n, t)
        if rc:
            raise RuntimeError(f"zoo_yolov8_loop failed ({rc})")
        return list(t)


class _RealTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("c", ctypes.c_int32), ("h", ctypes.c_int32),
                ("w", ctypes.c_int32), ("zp", ctypes.c_int32), ("scale", ctypes.c_float)]


class ZooReal:
    """The model zoo's own ``post_process`` (``DIR/examples/yolov8/cpp/postprocess.cc`` of
    a checkout of airockchip/rknn_model_zoo, compiled from there as it is) driven by
    ``bench/c/zoo_real_yolov8.cc`` on NCHW int8 outputs, as its demo calls it after
    ``rknn_outputs_get``.  ``.frame(codes, infos)``: the kept boxes; ``.loop(codes, infos,
    n)``: the nanoseconds of n calls, timed in C."""

    def __init__(self, zoo_dir, tmp: Path, flags: Sequence[str] = ("-O2",)):
        zoo = Path(zoo_dir).resolve()
        src = zoo / "examples" / "yolov8" / "cpp" / "postprocess.cc"
        if not src.is_file():
            raise FileNotFoundError(f"--zoo {zoo_dir}: no examples/yolov8/cpp/postprocess.cc "
                                    f"(a checkout of airockchip/rknn_model_zoo is expected)")
        cxx = os.environ.get("CXX") or shutil.which("c++") or shutil.which("g++")
        if not cxx:
            raise RuntimeError("a C++ compiler is needed for the zoo's post_process (set CXX)")
        so = Path(tmp) / "libzoo_real_yolov8.so"
        subprocess.run([cxx, *flags, "-w", "-shared", "-fPIC",
                        "-I", str(src.parent), "-I", str(zoo / "utils"),
                        "-I", str(HERE.parent / "include" / "rknnx"),
                        str(src), str(HERE / "c" / "zoo_real_yolov8.cc"), "-o", str(so)],
                       check=True)
        self.source = str(src)
        self._lib = ctypes.CDLL(str(so))
        args = (ctypes.POINTER(_RealTensor), ctypes.c_int, ctypes.c_int, ctypes.c_int,
                ctypes.c_float, ctypes.c_float)
        self._lib.zoo_real_frame.argtypes = args + (
            ctypes.c_int, ctypes.POINTER(ctypes.c_int32), ctypes.POINTER(ctypes.c_float),
            ctypes.POINTER(ctypes.c_int32))
        self._lib.zoo_real_frame.restype = ctypes.c_int
        self._lib.zoo_real_loop.argtypes = args + (ctypes.c_long,
                                                   ctypes.POINTER(ctypes.c_longlong))
        self._lib.zoo_real_loop.restype = ctypes.c_int

    @staticmethod
    def _tensors(codes: Sequence[np.ndarray], infos) -> Any:
        if len(codes) != len(infos):
            raise ValueError(f"{len(codes)} arrays for {len(infos)} infos")
        arr = (_RealTensor * len(codes))()
        for t, a, info in zip(arr, codes, infos):
            if a.dtype != np.int8 or a.ndim != 4 or not a.flags.c_contiguous:
                raise ValueError(f"expected contiguous int8 NCHW arrays, got {a.dtype} "
                                 f"{a.shape}")
            t.data = a.ctypes.data
            t.c, t.h, t.w = a.shape[1:]
            t.zp = int(info.quant.zero_point)
            t.scale = float(info.quant.scale)
        return arr

    def frame(self, codes, infos, input_size=(640, 640), conf=0.25,
              nms=0.45) -> Dict[str, np.ndarray]:
        """The kept boxes in the zoo's order: classes, scores, int_boxes (clamped to the
        input and truncated, as post_process returns them)."""
        arr = self._tensors(codes, infos)
        cls = (ctypes.c_int32 * MAX_DETS)()
        score = (ctypes.c_float * MAX_DETS)()
        box = (ctypes.c_int32 * (4 * MAX_DETS))()
        n = self._lib.zoo_real_frame(arr, len(codes), input_size[0], input_size[1], conf,
                                     nms, MAX_DETS, cls, score, box)
        if n < 0:
            raise RuntimeError("the zoo's post_process failed")
        return {"classes": np.array(cls[:n], np.int32),
                "scores": np.array(score[:n], np.float32),
                "int_boxes": np.array(box[:4 * n], np.int32).reshape(-1, 4)}

    def loop(self, codes, infos, n: int, input_size=(640, 640), conf=0.25,
             nms=0.45) -> List[int]:
        """n calls of post_process timed in C: the nanoseconds of each."""
        arr = self._tensors(codes, infos)
        t = (ctypes.c_longlong * n)()
        rc = self._lib.zoo_real_loop(arr, len(codes), input_size[0], input_size[1], conf,
                                     nms, n, t)
        if rc:
            raise RuntimeError(f"zoo_real_loop failed ({rc})")
        return list(t)
