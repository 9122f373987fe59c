"""YOLO decoding from the NPU's own outputs: :func:`decode`, :func:`infer_family`.

The outputs are read where they are (numpy arrays in NCHW, NHWC or the NPU's native
NC1HWC2, with any strides, or a zero-copy session's output views), in their own type:
int8/uint8 codes are compared with quantized thresholds (the least code whose value
passes, so the rule is the float rule exactly), cells are skipped by ``score_sum`` or by
their best class code when no class can pass, and only the candidates are dequantized.
The loops are C (rknn_ext/kernels/yolo.c) with the GIL released.  docs/guide/decode.md states
the rule.
"""

from __future__ import annotations

import functools
import sys
import warnings
from typing import List, Optional, Sequence, Tuple

import numpy as np

from rknnx.vision.detections import Detections

__all__ = ["decode", "infer_family", "FAMILIES", "ZOO_ANCHORS", "DecodeWarning"]

#: the families :func:`decode` knows (``yolo11`` is ``yolov8``'s alias)
FAMILIES = ("yolov5", "yolov8", "yolo11", "yolov8-seg", "yolov8-pose", "yolox")
#: the model zoo's yolov5 anchors (w, h per anchor, one row per scale)
ZOO_ANCHORS = ((10, 13, 16, 30, 33, 23), (30, 61, 62, 45, 59, 119),
               (116, 90, 156, 198, 373, 326))

_DFL, _CXCYWH, _ANCHOR, _YOLOX = 0, 1, 2, 3
_CODES = {np.dtype(np.int8): 0, np.dtype(np.uint8): 1, np.dtype(np.int16): 2,
          np.dtype(np.float16): 3, np.dtype(np.float32): 4}
_LAYOUTS = ("NCHW", "NHWC", "NC1HWC2")
_DTYPES = {v: k for k, v in _CODES.items()}
#: the codes of each integer type (a zero point lies among them)
_CODE_RANGE = {0: (-128, 127), 1: (0, 255), 2: (-32768, 32767)}


class DecodeWarning(UserWarning):
    """A model whose outputs lose what the decoder needs (said once per signature)."""


_warned = set()


class _T:
    """One output as the C reads it: logical channels C, rows H, columns W; channel c of
    cell (y, x) at byte (c // C2) * s_c1 + (c % C2) * s_c2 + y * s_y + x * s_x."""

    __slots__ = ("arr", "code", "C", "H", "W", "C2", "strides", "scale", "zp", "lut",
                 "index", "layout")

    def desc(self):
        return (self.arr, self.code, self.C, self.H, self.W, self.C2, *self.strides,
                self.scale, self.zp, self.lut)

    def values(self, lut_or_codes):
        """Dequantized float32 values of an array of raw elements of this tensor."""
        if self.code <= 1:
            return self.lut[lut_or_codes.view(np.uint8)]
        if self.code == 2:
            return (lut_or_codes.astype(np.float32) - np.float32(self.zp)) * \
                np.float32(self.scale)
        return lut_or_codes.astype(np.float32)

    def gather(self, channels, ys, xs):
        """Values [len(ys), len(channels)] of these channels at cells (ys, xs)."""
        c1 = (self.C + self.C2 - 1) // self.C2
        v = np.lib.stride_tricks.as_strided(self.arr, (c1, self.C2, self.H, self.W),
                                            self.strides, writeable=False)
        c1s, c2s = _divmod(channels, self.C2)
        raw = v[c1s[None, :], c2s[None, :], np.asarray(ys)[:, None], np.asarray(xs)[:, None]]
        return self.values(raw)


def _divmod(a, d):
    """(a // d, a % d) of an index array, in int64.  Not int32 // int: numpy 1.24's AVX-512
    loop for an int32 array floor-divided by a scalar gives wrong quotients for all but the
    last partial block of 16 (Debian bookworm's numpy on an i386 system with AVX-512), and
    index arrays are int32 (intp) on a 32-bit system."""
    return np.divmod(np.asarray(a, np.int64), d)


@functools.lru_cache(maxsize=256)
def _lut_cached(dtype_str, scale, zp):
    codes = np.arange(256, dtype=np.uint8).view(np.dtype(dtype_str))
    lut = (codes.astype(np.float32) - np.float32(zp)) * np.float32(scale)
    lut.flags.writeable = False
    return lut


def _lut(dtype, scale, zp):
    """The value of each 8-bit code, indexed by its byte: numpy's (q - zp) * scale."""
    return _lut_cached(np.dtype(dtype).str, float(scale), float(zp))


def _info_quant(info):
    q = getattr(info, "quant", None)
    if q is None or q.kind == "none":
        return None
    if q.kind == "dfp":
        return float(2.0 ** -q.fl), 0.0
    return float(q.scale), float(q.zero_point)


def _nhwc(shape):
    n, c, h, w = shape
    return (n, h, w, c)


def _tensor(i, arr, info, layout) -> _T:
    """Describe output i (an array) from its own shape and strides and its info."""
    arr = _array(i, arr)
    t = _T()
    t.arr, t.code, t.index = arr, _CODES[arr.dtype], i
    if layout is not None:
        layout = str(layout).upper()
        if layout not in _LAYOUTS:
            raise ValueError(f"output {i}: layout must be one of {_LAYOUTS}; got {layout!r}")
    if arr.ndim == 5 or layout == "NC1HWC2":
        _blocked_geometry(t, info)
    elif arr.ndim == 4:
        _plain_geometry(t, info, layout)
    elif arr.ndim == 3:
        _ncl_geometry(t, info)
    else:
        raise ValueError(f"output {i}: a {arr.ndim}-D array (shape {tuple(arr.shape)}); "
                         f"expected 3-D [1, C, N], 4-D NCHW/NHWC or 5-D NC1HWC2")
    _quantization(t, info)
    return t


def _array(i, arr) -> np.ndarray:
    """Output i as an array of a decoded type (float64 read as float32), not empty, with no
    negative stride (such a view is copied)."""
    if not isinstance(arr, np.ndarray):
        arr = np.asarray(arr)
    if arr.dtype == np.float64:
        arr = arr.astype(np.float32)
    if arr.dtype not in _CODES:
        raise TypeError(f"output {i}: dtype {arr.dtype} is not decoded; expected int8, "
                        f"uint8, int16, float16 or float32")
    if arr.size == 0:
        raise ValueError(f"output {i}: an empty array (shape {arr.shape})")
    if any(s < 0 for s in arr.strides):
        arr = np.ascontiguousarray(arr)
    return arr


def _blocked_geometry(t: _T, info) -> None:
    """An NC1HWC2 array [1, C1, H, W, C2] holding the model's C channels (the info's; a
    3-D tensor [N, C, L] is blocked as [N, C1, L, 1, C2] or [N, C1, 1, L, C2])."""
    i, arr = t.index, t.arr
    shape = tuple(arr.shape)
    ishape = tuple(info.shape) if info is not None else None
    if arr.ndim != 5:
        raise ValueError(f"output {i}: an NC1HWC2 array is 5-D [N, C1, H, W, C2]; got "
                         f"shape {shape}")
    n, c1, h, w, c2 = shape
    plain = ishape is not None and len(ishape) == 4 and info.layout in ("NHWC", "NCHW")
    if ishape is not None and len(ishape) == 4:
        C = info.shape_in("NCHW")[1] if plain else ishape[1]
    elif ishape is not None and len(ishape) >= 2:
        C = ishape[1]
    else:
        C = c1 * c2
    if ishape is not None and len(ishape) == 3:
        if h * w != ishape[2]:
            raise ValueError(f"output {i}: NC1HWC2 shape {shape} does not hold the "
                             f"model's {ishape}")
    elif ishape is not None and len(ishape) == 4 and \
            (h, w) != tuple(info.shape_in("NCHW")[2:] if plain else ishape[2:]):
        raise ValueError(f"output {i}: NC1HWC2 shape {shape} does not hold the model's "
                         f"{ishape} ({info.layout})")
    if c1 * c2 < C or n != 1:
        raise ValueError(f"output {i}: NC1HWC2 shape {shape} does not hold {C} channels "
                         f"of a batch of 1")
    st = arr.strides
    t.C, t.H, t.W, t.C2 = C, h, w, c2
    t.strides = (st[1], st[4], st[2], st[3])
    t.layout = "NC1HWC2"


def _plain_layout(i, shape, info) -> str:
    """The layout of a 4-D array not said: the info's when the array has its shape (an
    array shaped as its TensorInfo is in that info's layout, as ``model.run`` returns it:
    a yolov8 class output [1, 80, 80, 80] reads as NCHW and as NHWC, and the info decides),
    NHWC when it has the NHWC form of it, NCHW with no info."""
    if info is None:
        return "NCHW"
    ishape = tuple(info.shape)
    if shape == ishape:
        return info.layout if info.layout in ("NCHW", "NHWC") else "NCHW"
    if len(ishape) == 4 and shape == _nhwc(ishape) and info.layout != "NHWC":
        return "NHWC"
    raise ValueError(f"output {i}: shape {shape} is not the model's {ishape} "
                     f"({info.layout}) nor its NHWC form")


def _plain_geometry(t: _T, info, layout) -> None:
    """A 4-D NCHW or NHWC array of one frame."""
    shape, st = tuple(t.arr.shape), t.arr.strides
    if layout is None:
        layout = _plain_layout(t.index, shape, info)
    if layout == "NHWC":
        n, h, w, C = shape
        t.strides = (0, st[3], st[1], st[2])
    else:
        n, C, h, w = shape
        t.strides = (0, st[1], st[2], st[3])
    if n != 1:
        raise ValueError(f"output {t.index}: a batch of {n}; decode takes one frame")
    t.C, t.H, t.W, t.C2 = C, h, w, C
    t.layout = layout


def _ncl_geometry(t: _T, info) -> None:
    """A 3-D [1, C, L] array: one row of L cells."""
    shape, st = tuple(t.arr.shape), t.arr.strides
    if info is not None and shape != tuple(info.shape):
        raise ValueError(f"output {t.index}: shape {shape} is not the model's "
                         f"{tuple(info.shape)}")
    n, C, L = shape
    if n != 1:
        raise ValueError(f"output {t.index}: a 3-D output is one frame's [1, C, N]; got "
                         f"shape {shape} (yolov8-pose's keypoints are 4-D [1, K, 3, N])")
    t.C, t.H, t.W, t.C2 = C, 1, L, C
    t.strides = (0, st[1], 0, st[2])
    t.layout = "NCL"


def _quantization(t: _T, info) -> None:
    """The scale, zero point and (8-bit codes) value table of integer codes, from the
    model's info; float values need none."""
    i, dtype = t.index, t.arr.dtype
    t.scale, t.zp, t.lut = 1.0, 0.0, None
    if t.code > 2:
        return
    q = _info_quant(info) if info is not None else None
    if q is None:
        raise ValueError(
            f"output {i}: {dtype} codes need the model's quantization: pass "
            f"infos=model.outputs" if info is None else
            f"output {i}: {dtype} codes, but the model's output is not quantized "
            f"({info.dtype}); pass the float values")
    if info.dtype != dtype:
        raise ValueError(f"output {i}: {dtype} codes, but the model writes {info.dtype}")
    t.scale, t.zp = q
    if t.scale <= 0 or not np.isfinite(t.scale):
        raise ValueError(f"output {i}: quantization scale {t.scale} is not positive")
    lo, hi = _CODE_RANGE[t.code]
    if not (lo <= t.zp <= hi and t.zp == int(t.zp)):
        zp = int(t.zp) if np.isfinite(t.zp) and t.zp == int(t.zp) else t.zp
        raise ValueError(f"output {i}: zero point {zp!r} of {dtype} codes must be an "
                         f"integer in [{lo}, {hi}]")
    if t.code <= 1:
        t.lut = _lut(dtype, t.scale, t.zp)


def _ordered(lut, dtype_code):
    """The table in the order of flipped codes (int8 ^ 0x80): ascending values."""
    return lut[np.arange(256) ^ 0x80] if dtype_code == 0 else lut


def _least(ok):
    """The least flipped code from which `ok` (per flipped code) holds, 256 if none; the
    set must be an up-set, which monotone scores make it."""
    nz = np.nonzero(ok)[0]
    return int(nz[0]) if nz.size else 256


def _sigmoid32(x):
    x = np.asarray(x, np.float32)
    with np.errstate(over="ignore"):
        return (np.float32(1) / (np.float32(1) + np.exp(-x))).astype(np.float32)


class _Scale:
    def __init__(self, box, cls, ssum=None):
        self.box, self.cls, self.sum = box, cls, ssum
        self.box_off = self.cls_off = self.obj_off = self.group = 0
        self.na = 1
        self.anchors = ()
        self.sx = self.sy = 1.0
        self.qthr, self.qobj, self.qsum = 0, 0, -1
        self.fsum = float("-inf")
        self.score_lut = None

    def sources(self):
        """The output index of the box, class and score_sum tensors (-1: none)."""
        return (self.box.index, self.cls.index, -1 if self.sum is None else self.sum.index)

    def desc(self):
        return (self.box.desc(), self.cls.desc(), None if self.sum is None else self.sum.desc(),
                self.box_off, self.cls_off, self.obj_off, self.group, self.na,
                tuple(self.anchors), self.sx, self.sy, self.qthr, self.qobj, self.qsum,
                self.fsum, self.score_lut)


def _f32(x):
    return float(np.float32(x))


def _thresholds(sc: _Scale, nc: int, conf: float, family: int, sigmoid: bool):
    """The quantized thresholds of one scale (the float rule's exact equivalents)."""
    ct, st = sc.cls, sc.sum
    key = (ct.code, ct.scale, ct.zp, conf, family, sigmoid,
           None if st is None else (st.code, st.scale, st.zp))
    sc.qthr, sc.qobj, sc.qsum, sc.fsum, sc.score_lut = _thresholds_cached(*key)


@functools.lru_cache(maxsize=256)
def _thresholds_cached(code, scale, zp, conf, family, sigmoid, ssum):
    qthr, qobj, qsum, fsum, score_lut = 0, 0, -1, float("-inf"), None
    c = np.float32(conf)
    lut = _lut(_DTYPES[code], scale, zp) if code <= 1 else None
    if lut is not None:
        vals = _ordered(lut, code)
        if family in (_ANCHOR, _YOLOX):
            lo, hi = np.float32(vals.min()), np.float32(vals.max())
            if lo >= 0:
                qobj = _least(vals * hi >= c)          # obj x best class <= obj x max
        else:
            score = _sigmoid32(vals) if sigmoid else vals
            if sigmoid:
                score_lut = _sigmoid32(lut)
                score_lut.flags.writeable = False
            qthr = _least(score >= c)
    if ssum is not None and family == _DFL and not sigmoid and \
            not (lut is not None and lut.min() < 0):
        # score_sum = clip(sum of the class probabilities, 0, 1) >= the best class: a
        # cell is skipped only when even one quantization step of both cannot lift it
        cls_step = scale if code <= 2 else 0.0
        scode, sscale, szp = ssum
        if scode <= 1:
            vals = _ordered(_lut(_DTYPES[scode], sscale, szp), scode).astype(np.float64)
            qsum = min(_least(vals + sscale + cls_step + 1e-6 >= conf), 255)
        else:
            step = sscale if scode == 2 else 0.0
            fsum = _f32(conf - step - cls_step - 0.01)
    return qthr, qobj, qsum, fsum, score_lut


def _group_split(family: str, ts: List[_T]):
    """The (box, cls, sum, coef) of each scale of split heads, and the proto / keypoints."""
    n = len(ts)
    extra = None
    if family == "yolov8":
        if n not in (6, 9):
            raise ValueError(f"yolov8 takes 1 output (Ultralytics' fused [1, 4+nc, N]) or "
                             f"the zoo's 6 or 9 (box, class scores[, score_sum] per scale); "
                             f"got {n}")
        per = n // 3
        groups = [ts[per * k:per * k + per] + [None] * (3 - per) + [None] for k in range(3)]
    else:   # yolov8-seg
        if n not in (10, 13):
            raise ValueError(f"yolov8-seg takes the zoo's 13 outputs (box, class scores, "
                             f"score_sum, mask coefficients per scale, then the proto) or "
                             f"10 (no score_sum); got {n}")
        per = (n - 1) // 3
        extra = ts[-1]
        groups = []
        for k in range(3):
            g = ts[per * k:per * k + per]
            groups.append([g[0], g[1], g[2] if per == 4 else None, g[-1]])
    return groups, extra


def _shapes(ts):
    return ", ".join(f"{(1, t.C, t.H, t.W)}" for t in ts)


def _input_size(input_size, grids, family):
    if input_size is not None:
        w, h = input_size
        if int(w) <= 0 or int(h) <= 0:
            raise ValueError(f"input_size must be positive (width, height); got {input_size}")
        return int(w), int(h)
    gh, gw = max(grids)
    return 8 * gw, 8 * gh


def _session_parts(session):
    """Arrays, infos, layouts and input size of a zero-copy session's outputs."""
    arrays = list(session.outputs)
    layouts = [a.layout if len(a.dims) == 4 else None for a in session.output_attrs]
    size = None
    ins = session.input_infos
    if ins and len(ins[0].shape) == 4:
        s = ins[0].shape_in("NHWC") if ins[0].layout in ("NHWC", "NCHW") else ins[0].shape
        size = (s[2], s[1])
    return arrays, list(session.output_infos), layouts, size


def infer_family(outputs, infos=None) -> List[str]:
    """The families whose output signature `outputs` (arrays or ``model.outputs``) has,
    most likely first; empty when none.  ``decode(None, ...)`` takes the only one."""
    shapes = []
    infos = list(infos) if infos is not None else [None] * len(outputs)
    for o, info in zip(outputs, infos):
        s = tuple(getattr(o, "shape", ()))
        lay = getattr(info if info is not None else o, "layout", "NCHW")
        if len(s) == 5:
            c = info.shape[1] if info is not None else s[1] * s[4]
            s = (s[0], c, s[2], s[3])
        elif len(s) == 4 and lay == "NHWC":
            s = (s[0], s[3], s[1], s[2])
        shapes.append(s)
    return _infer(shapes)


def _infer(shapes) -> List[str]:
    n = len(shapes)
    out = []
    four = all(len(s) == 4 for s in shapes)
    if n == 1 and len(shapes[0]) == 3 and shapes[0][1] > 4:
        out.append("yolov8")
    if n in (6, 9) and four:
        per = n // 3
        if all(shapes[per * k][1] % 4 == 0 and shapes[per * k][1] // 4 <= 64 and
               (per == 2 or shapes[per * k + 2][1] == 1) for k in range(3)):
            out.append("yolov8")
    if n in (10, 13) and four:
        per = (n - 1) // 3
        if all(shapes[per * k][1] % 4 == 0 and shapes[per * k + per - 1][1] ==
               shapes[-1][1] for k in range(3)):
            out.append("yolov8-seg")
    if n == 4 and all(len(s) == 4 for s in shapes[:3]) and len(shapes[3]) == 4 and \
            shapes[3][2] in (2, 3) and shapes[3][3] == sum(s[2] * s[3] for s in shapes[:3]) \
            and all(s[1] > 64 for s in shapes[:3]):
        out.append("yolov8-pose")
    if n == 3 and four:
        cs = [s[1] for s in shapes]
        if len(set(cs)) == 1:
            c = cs[0]
            if c % 3 == 0 and c // 3 >= 6:
                out.append("yolov5")
            if c >= 6:
                out.append("yolox")
    return out


#: the plans of the calls made: what a call derives from the infos, the arrays' geometry
#: and conf (docs/guide/decode.md, "What a call costs"); bounded, cleared when full
_PLANS: dict = {}
_PLANS_MAX = 64


class _Entry:
    """A cached plan: the infos it was made from (held, so that their identities in the
    key are never another object's), the C plan and the class count."""

    __slots__ = ("infos", "plan", "nc")

    def __init__(self, infos, plan, nc):
        self.infos, self.plan, self.nc = infos, plan, nc


def _plan_key(family, outputs, infos, conf, layout, input_size):
    """The key of a call's plan, or None when the call is not planned (a session, infos
    or layouts that are not plain sequences)."""
    if type(outputs) not in (list, tuple, np.ndarray):
        return None
    try:
        key = (family, type(conf), conf,
               layout if layout is None or type(layout) is str else tuple(layout),
               input_size if input_size is None else tuple(input_size),
               None if infos is None else tuple(map(id, infos)))
        hash(key)
    except TypeError:
        return None
    return key


def decode(family, outputs, infos=None, *, conf: float = 0.25, iou: float = 0.45,
           max_det: int = 300, classes: Optional[Sequence[int]] = None,
           agnostic: bool = False, max_nms: int = 30000, anchors=None, layout=None,
           input_size: Optional[Tuple[int, int]] = None,
           names: Optional[Sequence[str]] = None) -> Detections:
    key = None
    if anchors is None:
        key = _plan_key(family, outputs, infos, conf, layout, input_size)
        hit = _PLANS.get(key) if key is not None else None
        if hit is not None:
            # the plan of an earlier call with these infos (the same objects), family,
            # conf, layout and input size; its C reads the arrays only if each has the
            # geometry it was made for (else None: planned again below)
            if type(iou) is float and 0.0 <= iou <= 1.0 and type(max_det) is int and \
                    0 <= max_det <= _NO_LIMIT and type(max_nms) is int and \
                    0 <= max_nms <= _NO_LIMIT and type(agnostic) is bool:
                pass
            else:
                max_det, max_nms = _check_parameters(conf, iou, max_det, max_nms, agnostic)
            r = hit.plan.run((outputs,) if type(outputs) is np.ndarray else outputs,
                             float(iou), max_det, max_nms, agnostic,
                             None if classes is None else _class_flags(classes, hit.nc))
            if r is not None:
                return Detections._made(r[0], r[1], r[2], names)
    kw = dict(conf=conf, iou=iou, max_det=max_det, classes=classes, agnostic=agnostic,
              max_nms=max_nms, anchors=anchors, layout=layout, input_size=input_size,
              names=names, key=key)
    if not (hasattr(outputs, "output_attrs") and hasattr(outputs, "output_infos")):
        return _decode(family, outputs, infos, **kw)
    try:
        return _decode(family, outputs, infos, **kw)
    except Exception as e:
        # the frames below hold views of the session's memory: an error must not keep
        # them (the session could not close while the exception lives)
        raise e.with_traceback(None) from None


def _decode(family, outputs, infos=None, *, conf, iou, max_det, classes, agnostic, max_nms,
            anchors, layout, input_size, names, key=None) -> Detections:
    """Decode one frame's YOLO outputs into :class:`Detections` (boxes in input pixels).

    Parameters
    ----------
    family : str or None
        ``"yolov8"`` (or ``"yolo11"``: the zoo's 6 or 9 split outputs, or Ultralytics'
        fused [1, 4+nc, N]), ``"yolov8-seg"``, ``"yolov8-pose"``, ``"yolov5"``,
        ``"yolox"``; None: inferred from the outputs (an error names the candidates when
        several fit).
    outputs : sequence of arrays, or a zero-copy session
        The model's outputs in its order: int8/uint8/int16 codes (dequantized as
        (q - zp) * scale with `infos`), float16 or float32 values; NCHW, NHWC (4-D) or
        NC1HWC2 (5-D), any strides.  A :class:`rknnx.ZeroCopySession`: its output views,
        read in place (``outputs="native"`` costs the runtime no conversion).
    infos : sequence of rknnx.TensorInfo, optional
        ``model.outputs``: the quantization and layout of each output.  Needed for integer
        outputs.  A 4-D array equal to ``info.shape`` is in ``info.layout``; one equal to
        its NHWC form is NHWC.
    conf, iou : float in [0, 1]
        A candidate passes when its score >= conf; NMS suppresses IoU > iou.  A float
        output's NaN or inf never becomes a detection (its cell is skipped, its box
        dropped).
    max_det, max_nms : int >= 0 or None
        At most max_det boxes kept; at most max_nms best candidates enter the NMS; None
        (or any count beyond the frame's candidates) is no limit: the arrays are sized by
        what is found, never by max_det.
    classes : sequence of int, optional
        Keep only these classes (a candidate's best class must be one of them); one
        class is ``[k]``.
    agnostic : bool
        NMS across classes.
    anchors : sequence, optional
        yolov5: (w, h) pairs per scale, flat: ``((10, 13, 16, 30, 33, 23), ...)``; the
        zoo's by default.
    layout : str or sequence of str, optional
        "NCHW", "NHWC" or "NC1HWC2" for every output (or one per output); by default a
        4-D array shaped as its info is in the info's layout, and NCHW without infos.
    input_size : (width, height), optional
        The model's input size; by default the session's model's, else 8 x the finest grid.
    names : sequence of str, optional
        Class names, kept in the result.

    Raises
    ------
    ValueError
        Outputs that do not fit the family (count, shapes, channels; another family's
        outputs are named so), an unknown family, a layout that cannot be told, a zero
        point outside its type's codes, parameters outside their ranges.
    TypeError
        An element type that is not decoded.
    """
    from rknnx import _kernels

    if family is not None and (not isinstance(family, str) or
                               family.lower() not in FAMILIES):
        raise ValueError(f"decode: family must be one of {FAMILIES}; got {family!r}")
    arrays, infos, layouts, input_size = _outputs(outputs, infos, layout, input_size)
    ts = [_tensor(i, a, infos[i] if infos is not None else None,
                  layouts[i] if layouts is not None else None)
          for i, a in enumerate(arrays)]
    family = _family_of(family, ts, anchors)
    max_det, max_nms = _check_parameters(conf, iou, max_det, max_nms, agnostic)
    head = _head(family, ts, anchors)
    scales = head.scales
    W_in, H_in = _place(scales, head.kind, input_size, family)
    for sc in scales:
        _thresholds(sc, head.nc, float(conf), head.kind, head.sigmoid)
    class_ok = _class_flags(classes, head.nc)

    arrs = [t.arr for t in ts]
    plan = _kernels.YoloPlan(head.kind, [s.desc() for s in scales],
                             [s.sources() for s in scales], arrs, head.nc, head.reg_max,
                             head.sigmoid, float(conf))
    boxes, scores, cls_, index = plan.run(arrs, float(iou), int(max_det), int(max_nms),
                                          bool(agnostic), class_ok)
    if key is not None and head.extra is None and \
            all(t.arr is a for t, a in zip(ts, arrays)):
        # the next call with these infos (held by the entry), conf, layout and input size
        # reads its arrays through this plan (when they have these arrays' geometry)
        if len(_PLANS) >= _PLANS_MAX:
            _PLANS.clear()
        _PLANS[key] = _Entry(None if infos is None else tuple(infos), plan, head.nc)

    masks = keypoints = None
    if family == "yolov8-seg":
        masks = _masks(scales, head.coefs, head.extra, index, boxes, H_in, W_in)
    elif family == "yolov8-pose":
        keypoints = _keypoints(head.extra, index)
    return Detections(boxes, scores, cls_, masks=masks, keypoints=keypoints, names=names)


def _outputs(outputs, infos, layout, input_size):
    """(arrays, infos, layouts, input_size) of decode's `outputs`: a zero-copy session (its
    views, its model's infos, its attributes' layouts and input size, where not given), one
    array or a sequence of them; `layout` (one for all, or one per output) overrides."""
    layouts = None
    if hasattr(outputs, "output_attrs") and hasattr(outputs, "output_infos"):
        arrays, sinfos, layouts, ssize = _session_parts(outputs)
        infos = sinfos if infos is None else infos
        if input_size is None:
            input_size = ssize
    elif isinstance(outputs, np.ndarray):
        arrays = [outputs]
    else:
        try:
            arrays = list(outputs)
        except TypeError:
            raise TypeError(f"outputs must be a sequence of arrays or a zero-copy session; "
                            f"got {type(outputs).__name__}") from None
    if not arrays:
        raise ValueError("decode: no outputs")
    if infos is not None:
        infos = list(infos)
        if len(infos) != len(arrays):
            raise ValueError(f"decode: {len(arrays)} outputs but {len(infos)} infos; give "
                             f"the model's outputs in its order")
    if layout is not None:
        if isinstance(layout, str):
            layouts = [layout] * len(arrays)
        else:
            layouts = list(layout)
            if len(layouts) != len(arrays):
                raise ValueError(f"decode: layout= gives {len(layouts)} layouts for "
                                 f"{len(arrays)} outputs")
    return arrays, infos, layouts, input_size


def _family_of(family, ts: List[_T], anchors=None) -> str:
    """The family decoded: the one given (``yolo11`` is ``yolov8``), else the only one the
    outputs' signature fits.  A family given whose signature the outputs do not have while
    they have another's is refused as such (not by the first count it reads)."""
    cands = _infer([(1, t.C, t.W) if t.layout == "NCL" else (1, t.C, t.H, t.W)
                    for t in ts])
    if family is not None:
        fam = family.lower()
        fam = "yolov8" if fam == "yolo11" else fam
        # (yolov5 with anchors= of its own: the signature's 3 anchors do not hold)
        if cands and fam not in cands and not (fam == "yolov5" and anchors is not None):
            raise ValueError(f"decode: these {len(ts)} outputs are not {family}'s; their "
                             f"shapes ({_shapes(ts)}) fit {' and '.join(cands)}")
    if family is None:
        if len(cands) != 1:
            raise ValueError(f"decode: family not given and the outputs fit "
                             f"{'none of ' + str(FAMILIES) if not cands else cands}: pass it")
        family = cands[0]
    family = family.lower()
    return "yolov8" if family == "yolo11" else family


#: the largest count the C takes (max_det, max_nms beyond it: no limit): half of the
#: platform's Py_ssize_t, so 2**62 on a 64-bit interpreter and 2**30 on a 32-bit one (armhf:
#: 2**62 overflowed YoloPlan.run's Py_ssize_t there); a frame's candidates are far fewer
_NO_LIMIT = (sys.maxsize + 1) // 2


def _check_parameters(conf, iou, max_det, max_nms, agnostic, where="decode"):
    """conf and iou in [0, 1]; max_det and max_nms ints >= 0 of any size (None: no
    limit), returned clamped to what the C counts."""
    for name, v in (("conf", conf), ("iou", iou)):
        if isinstance(v, bool) or not isinstance(v, (int, float, np.floating, np.integer)) \
                or not 0.0 <= v <= 1.0:
            raise ValueError(f"{where}: {name} must be a number in [0, 1]; got {v!r}")
    counts = []
    for name, v in (("max_det", max_det), ("max_nms", max_nms)):
        if v is None:
            v = _NO_LIMIT
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0:
            raise ValueError(f"{where}: {name} must be an int >= 0 (None: no limit); "
                             f"got {v!r}")
        counts.append(min(int(v), _NO_LIMIT))
    if not (agnostic is True or agnostic is False):
        raise TypeError(f"{where}: agnostic must be True or False; got {agnostic!r}")
    return counts


class _Head:
    """A family's reading of the outputs: the box rule (`kind`), whether class scores are
    logits (`sigmoid`), DFL bins per side, the class count, the scales the C decodes, and
    the proto (seg) or keypoints (pose) output with seg's mask coefficients per scale."""

    __slots__ = ("kind", "sigmoid", "reg_max", "nc", "scales", "extra", "coefs")

    def __init__(self, kind, nc, scales, *, sigmoid=False, reg_max=16, extra=None,
                 coefs=None):
        self.kind, self.nc, self.scales, self.sigmoid = kind, nc, scales, sigmoid
        self.reg_max, self.extra, self.coefs = reg_max, extra, coefs


def _head(family: str, ts: List[_T], anchors) -> _Head:
    if family == "yolov8" and len(ts) == 1:
        return _fused_head(ts[0])
    if family in ("yolov8", "yolov8-seg"):
        return _split_head(family, ts)
    if family == "yolov8-pose":
        return _pose_head(ts)
    return _grid_head(family, ts, anchors)


def _fused_head(t: _T) -> _Head:
    """Ultralytics' fused yolov8 output [1, 4+nc, N]: cx, cy, w, h rows, then the classes."""
    if t.layout != "NCL" and t.H != 1:
        raise ValueError(f"yolov8 fused output must be [1, 4+nc, N]; got {_shapes([t])}")
    if t.C < 5:
        raise ValueError(f"yolov8 fused output [1, {t.C}, {t.W}] has no class scores "
                         f"(expected 4 box rows + nc)")
    sc = _Scale(t, t)
    sc.cls_off = 4
    if t.code <= 1 and t.scale * 16 > 1.0:
        key = (t.C, t.W, t.scale, t.zp)
        if key not in _warned:
            _warned.add(key)
            warnings.warn(
                f"yolov8 fused int8 output [1, {t.C}, {t.W}]: its boxes and class scores "
                f"share one scale ({t.scale:.4g}), so a class score in 0..1 spans "
                f"{1 / t.scale:.1f} codes and most scores read as 0: export the zoo's "
                f"split heads (6 or 9 outputs) or keep this output float", DecodeWarning,
                stacklevel=5)          # _fused_head, _head, _decode, decode: the caller
    return _Head(_CXCYWH, t.C - 4, [sc])


def _split_head(family: str, ts: List[_T]) -> _Head:
    """The zoo's split yolov8 heads (box, class scores[, score_sum][, mask coefficients]
    per scale, then seg's proto): DFL boxes."""
    groups, extra = _group_split(family, ts)
    nc = groups[0][1].C
    scales = []
    reg_max = 16
    for box, cls, ssum, coef in groups:
        if box.C % 4 or box.C // 4 > 64 or box.C < 4:
            raise ValueError(f"{family}: a box output has 4 x reg_max channels (the "
                             f"zoo's 64); output {box.index} has {box.C} "
                             f"(outputs: {_shapes(ts)})")
        reg_max = box.C // 4
        if cls.C != nc or (box.H, box.W) != (cls.H, cls.W):
            raise ValueError(f"{family}: the class outputs must all have {nc} channels "
                             f"on their scale's grid; got {_shapes(ts)}")
        if ssum is not None and (ssum.C != 1 or (ssum.H, ssum.W) != (cls.H, cls.W)):
            raise ValueError(f"{family}: output {ssum.index} should be score_sum "
                             f"[1, 1, {cls.H}, {cls.W}]; got {_shapes([ssum])}")
        if coef is not None and (coef.H, coef.W) != (cls.H, cls.W):
            raise ValueError(f"{family}: output {coef.index} (mask coefficients) is not "
                             f"on its scale's grid")
        scales.append(_Scale(box, cls, ssum))
    coefs = None
    if family == "yolov8-seg":
        coefs = [g[3] for g in groups]
        if extra.C != coefs[0].C or any(c.C != extra.C for c in coefs):
            raise ValueError(f"yolov8-seg: {coefs[0].C} mask coefficients for a proto "
                             f"of {extra.C} channels")
    return _Head(_DFL, nc, scales, reg_max=reg_max, extra=extra, coefs=coefs)


def _pose_head(ts: List[_T]) -> _Head:
    """The zoo's yolov8-pose: 3 heads [1, 64+nc, H, W] (DFL box, class logits), then the
    keypoints [1, K, 3, N] of every cell."""
    if len(ts) != 4:
        raise ValueError(f"yolov8-pose takes the zoo's 4 outputs (3 heads [1, 64+nc, H, "
                         f"W], keypoints [1, K, 3, N]); got {len(ts)}")
    extra = ts[3]
    nc = ts[0].C - 64
    if nc < 1 or any(t.C != ts[0].C for t in ts[:3]):
        raise ValueError(f"yolov8-pose: heads of 64 + nc channels; got {_shapes(ts[:3])}")
    ncell = sum(t.H * t.W for t in ts[:3])
    if extra.W != ncell or extra.H not in (2, 3):
        raise ValueError(f"yolov8-pose: keypoints [1, K, 3, {ncell}] expected; got "
                         f"{_shapes([extra])}")
    scales = []
    for t in ts[:3]:
        sc = _Scale(t, t)
        sc.cls_off = 64
        scales.append(sc)
    return _Head(_DFL, nc, scales, sigmoid=True, extra=extra)


def _grid_head(family: str, ts: List[_T], anchors) -> _Head:
    """yolov5 (anchors x (5 + nc) channels per scale) and yolox (5 + nc): box, objectness
    and class scores of each cell in one output per scale."""
    if len(ts) < 1 or len(ts) > 8:
        raise ValueError(f"decode: these {len(ts)} outputs are not {family}'s (one head "
                         f"per scale, 1 to 8)")
    if family == "yolov5":
        anc = _anchors(anchors, len(ts))
        kind = _ANCHOR
    else:
        anc = [(1.0, 1.0)] * len(ts)
        kind = _YOLOX
    nc = None
    scales = []
    for t, a in zip(ts, anc):
        na = len(a) // 2
        if na < 1 or len(a) % 2 or na > 8 or t.C % na or t.C // na < 6:
            raise ValueError(f"{family}: output {t.index} has {t.C} channels; expected "
                             f"{'anchors x ' if kind == _ANCHOR else ''}(5 + nc) "
                             f"(outputs: {_shapes(ts)})")
        g = t.C // na
        if nc is not None and g - 5 != nc:
            raise ValueError(f"{family}: the outputs disagree on the class count: "
                             f"{_shapes(ts)}")
        nc = g - 5
        sc = _Scale(t, t)
        sc.na, sc.group, sc.obj_off, sc.cls_off = na, g, 4, 5
        sc.anchors = a if kind == _ANCHOR else ()
        scales.append(sc)
    return _Head(kind, nc, scales)


def _anchors(anchors, n: int) -> list:
    """yolov5's anchors, one flat (w, h, ...) tuple per scale (the zoo's by default)."""
    anc = ZOO_ANCHORS if anchors is None else anchors
    try:
        anc = [tuple(float(v) for v in np.asarray(a, float).reshape(-1)) for a in anc]
    except (TypeError, ValueError):
        raise ValueError("anchors: one flat (w, h, w, h, ...) sequence per scale") \
            from None
    if len(anc) != n:
        raise ValueError(
            f"yolov5: {len(anc)} scales of anchors for {n} outputs" if anchors is not None
            else f"decode: these {n} outputs are not yolov5's (one head [1, 3 x (5 + nc), "
                 f"H, W] per scale, 3 scales with the zoo's anchors; give anchors= for "
                 f"other heads)")
    return anc


def _place(scales: List[_Scale], kind: int, input_size, family: str) -> Tuple[int, int]:
    """The input size (W, H) boxes are in, each scale's cell size in it set; the fused
    output's boxes are already in pixels ((0, 0) when no size is known)."""
    if kind == _CXCYWH:
        return input_size if input_size is not None else (0, 0)
    W_in, H_in = _input_size(input_size, [(s.cls.H, s.cls.W) for s in scales], family)
    for sc in scales:
        sc.sx, sc.sy = W_in / sc.cls.W, H_in / sc.cls.H
    return W_in, H_in


def _class_flags(classes, nc: int) -> Optional[np.ndarray]:
    """One uint8 flag per class kept (None: every class)."""
    if classes is None:
        return None
    if isinstance(classes, (str, bytes)) or not hasattr(classes, "__iter__"):
        raise TypeError(f"decode: classes is a sequence of class indices in [0, {nc}) "
                        f"(one class: [{classes!r}]); got {classes!r}")
    class_ok = np.zeros(nc, np.uint8)
    for c in np.asarray(list(classes)).reshape(-1):
        if not isinstance(c, (int, np.integer)) or not 0 <= c < nc:
            raise ValueError(f"decode: classes: {c!r} is not a class of this model "
                             f"({nc} classes)")
        class_ok[int(c)] = 1
    return class_ok


def _masks(scales: List[_Scale], coefs: List[_T], proto: _T, index, boxes, H_in: int,
           W_in: int) -> np.ndarray:
    """yolov8-seg: each kept box's mask over the input, from its cell's coefficients (the
    kernel's `index` counts the cells of every scale in turn) and the proto."""
    from rknnx import _kernels

    cells = [s.cls.H * s.cls.W for s in scales]
    offs = np.cumsum([0] + cells)
    sidx = np.searchsorted(offs, index, side="right") - 1
    local = index - offs[sidx]
    nm = proto.C
    k = np.zeros((len(index), nm), np.float32)
    for s in range(3):
        sel = np.nonzero(sidx == s)[0]
        if sel.size:
            w = scales[s].cls.W
            k[sel] = coefs[s].gather(np.arange(nm), *_divmod(local[sel], w))
    return _kernels.yolo_masks(proto.desc(), k, np.ascontiguousarray(boxes), H_in, W_in)


def _keypoints(kpt: _T, index) -> np.ndarray:
    """yolov8-pose: the K keypoints (x, y[, visibility]) of each kept box's cell, float32
    [n, K, 3] (a third value of 0 when the model gives two)."""
    K, J = kpt.C, kpt.H
    n = len(index)
    kp = np.zeros((n, K, 3), np.float32)
    if n:
        ch = np.repeat(np.arange(K), J)
        js = np.tile(np.arange(J), K)
        c1 = (kpt.C + kpt.C2 - 1) // kpt.C2
        v = np.lib.stride_tricks.as_strided(kpt.arr, (c1, kpt.C2, kpt.H, kpt.W),
                                            kpt.strides, writeable=False)
        c1s, c2s = _divmod(ch, kpt.C2)
        raw = v[c1s[None, :], c2s[None, :], js[None, :], np.asarray(index)[:, None]]
        kp[:, :, :J] = kpt.values(raw).reshape(n, K, J)
    return kp


decode.__doc__ = _decode.__doc__
