"""Letterboxing: a camera frame into a network's input in one pass (:func:`letterbox`), and
the way back from the input's pixels to the frame's (:class:`Letterbox`).

The frame is scaled by ``s = min(W / w, H / h)`` (small frames are scaled up) to
``round(w s) x round(h s)`` (Python's round, half to even, as the RKNN model zoo and
Ultralytics), centred (``left = (W - nw) // 2``, ``top = (H - nh) // 2``) and padded with
``pad_value``; the resize is bilinear with OpenCV's pixel-centre rule, within 1 of
``cv2.resize(..., interpolation=cv2.INTER_LINEAR)``.  The C kernel
(rknn_ext/kernels/letterbox.h) converts NV12, resizes, swaps B and R, pads and quantizes
in one pass with the GIL released, straight into a numpy array or a zero-copy session's
input (NHWC rows with their ``w_stride`` padding, NCHW, or the NPU's NC1HWC2 blocks).
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Optional, Sequence, Tuple, Union

import numpy as np

__all__ = ["letterbox", "Letterbox"]

_FORMATS = {"bgr": 0, "rgb": 0, "nv12": 1, "i420": 2}
_MATRICES = {"bt601": 0, "bt709": 1}
_U8 = np.dtype(np.uint8)
_I8 = np.dtype(np.int8)
_FLOATS = (np.dtype(np.float16), np.dtype(np.float32))


@dataclass(frozen=True)
class Letterbox:
    """Where a frame went in a letterboxed input, and the way back.

    Attributes
    ----------
    scale : float
        ``min(W / w, H / h)``: input pixels per frame pixel.
    pad : tuple of int
        ``(left, top)``: where the resized frame starts in the input.
    size : tuple of int
        ``(W, H)``: the input's width and height.
    frame_size : tuple of int
        ``(w, h)``: the frame's width and height.
    resized : tuple of int
        ``(nw, nh)``: the size of the resized frame inside the input.
    """

    scale: float
    pad: Tuple[int, int]
    size: Tuple[int, int]
    frame_size: Tuple[int, int]
    resized: Tuple[int, int]

    def to_frame(self, boxes) -> np.ndarray:
        """Boxes ``[..., 4]`` (x1, y1, x2, y2 in input pixels) in the frame's pixels:
        ``(b - pad) / scale``, clipped to the frame; float32, a new array."""
        b = np.array(boxes, dtype=np.float32, copy=True)
        if b.ndim == 0 or b.shape[-1] != 4:
            raise ValueError(f"to_frame: boxes are [..., 4] (x1, y1, x2, y2); got shape "
                             f"{b.shape}")
        self._back(b[..., 0::2], b[..., 1::2])
        return b

    def to_frame_points(self, points) -> np.ndarray:
        """Keypoints ``[..., 2]`` or ``[..., 3]`` (x, y[, visibility] in input pixels) in
        the frame's pixels, clipped to the frame; the visibility is kept.  float32, a new
        array."""
        k = np.array(points, dtype=np.float32, copy=True)
        if k.ndim == 0 or k.shape[-1] not in (2, 3):
            raise ValueError(f"to_frame_points: points are [..., 2] or [..., 3] (x, y[, "
                             f"visibility]); got shape {k.shape}")
        self._back(k[..., 0], k[..., 1])
        return k

    def _back(self, x: np.ndarray, y: np.ndarray) -> None:
        s = np.float32(self.scale)
        w, h = self.frame_size
        x -= np.float32(self.pad[0])
        x /= s
        np.clip(x, 0, w, out=x)
        y -= np.float32(self.pad[1])
        y /= s
        np.clip(y, 0, h, out=y)

    def mask_to_frame(self, mask) -> np.ndarray:
        """A mask over the input (``[H, W]`` or ``[N, H, W]``, bool or 0..1) as a bool
        mask over the frame (``[h, w]`` or ``[N, h, w]``): cropped to the resized region
        and resized bilinearly (OpenCV's pixel-centre rule), then ``> 0.5``."""
        m = np.asarray(mask)
        W, H = self.size
        if m.ndim not in (2, 3) or m.shape[-2:] != (H, W):
            raise ValueError(f"mask_to_frame: a mask over the input is [{H}, {W}] or "
                             f"[N, {H}, {W}]; got shape {m.shape}")
        left, top = self.pad
        nw, nh = self.resized
        w, h = self.frame_size
        crop = m[..., top:top + nh, left:left + nw].astype(np.float32)
        yi, yw = _taps(nh, h)
        xi, xw = _taps(nw, w)
        rows = crop[..., yi, :] * (1 - yw)[:, None] + crop[..., yi + 1, :] * yw[:, None]
        out = rows[..., xi] * (1 - xw) + rows[..., xi + 1] * xw
        return out > 0.5


def _taps(s: int, n: int):
    """Float taps of one axis, s -> n, OpenCV's pixel-centre rule clamped at the edges."""
    if s == 1:
        return np.zeros(n, np.intp), np.zeros(n, np.float32)
    f = (np.arange(n, dtype=np.float64) + 0.5) * (s / n) - 0.5
    f = np.clip(f, 0, s - 1)
    i = np.minimum(np.floor(f).astype(np.intp), s - 2)
    return i, (f - i).astype(np.float32)


def geometry(frame_size: Tuple[int, int], size: Tuple[int, int]) -> Letterbox:
    """The :class:`Letterbox` of a ``frame_size`` (w, h) frame into ``size`` (W, H)."""
    w, h = frame_size
    W, H = size
    s = min(W / w, H / h)
    nw = min(max(round(w * s), 1), W)
    nh = min(max(round(h * s), 1), H)
    return Letterbox(scale=s, pad=((W - nw) // 2, (H - nh) // 2), size=(W, H),
                     frame_size=(w, h), resized=(nw, nh))


def _u8(a, what: str) -> np.ndarray:
    a = np.asarray(a)
    if a.dtype != _U8:
        raise TypeError(f"letterbox: {what} must be uint8; got {a.dtype} (convert with "
                        f".astype(np.uint8) after scaling to 0..255)")
    return a


def _plane(a, what: str) -> np.ndarray:
    a = _u8(a, what)
    if a.ndim != 2:
        raise ValueError(f"letterbox: {what} is 2-D (rows, columns); got shape {a.shape}")
    if a.strides[1] != 1:
        raise ValueError(f"letterbox: {what} has contiguous rows (a row stride is fine, a "
                         f"column stride is not)")
    return a


def _i420(frame):
    """(Y, U, V, w, h) of an I420 frame: a (Y, U, V) triple of planes with their own
    strides, or one contiguous (h*3/2, w) array (Y, then U, then V, each packed)."""
    if isinstance(frame, (tuple, list)):
        if len(frame) != 3:
            raise ValueError(f"letterbox: an I420 frame is a (H*3/2, W) array or a (Y, U, "
                             f"V) triple of planes; got a sequence of {len(frame)}")
        y = _plane(frame[0], "the Y plane")
        u = _plane(frame[1], "the U plane")
        v = _plane(frame[2], "the V plane")
        h, w = y.shape
        _even(w, h, "I420")
        for name, c in (("U", u), ("V", v)):
            if c.shape != (h // 2, w // 2):
                raise ValueError(f"letterbox: the {name} plane of a {w}x{h} I420 frame is "
                                 f"({h // 2}, {w // 2}); got shape {c.shape}")
        return y, u, v, w, h
    a = _u8(frame, "an I420 frame")
    if a.ndim != 2:
        raise ValueError(f"letterbox: an I420 frame is a (H*3/2, W) array (or a (Y, U, V) "
                         f"triple); got shape {a.shape}")
    rows, w = a.shape
    if rows % 3:
        raise ValueError(f"letterbox: an I420 frame has H*3/2 rows (a multiple of 3); got "
                         f"{rows}")
    h = rows // 3 * 2
    _even(w, h, "I420")
    if w < 2 or h < 2:
        raise ValueError(f"letterbox: a frame of {w}x{h} pixels; at least 2x2")
    if a.strides != (w, 1):
        raise ValueError("letterbox: a (H*3/2, W) I420 array is contiguous (its U and V "
                         "planes run across its rows); give a strided frame as its "
                         "(Y, U, V) planes")
    flat = a.reshape(-1)
    q = (h // 2) * (w // 2)
    return (a[:h], flat[h * w:h * w + q].reshape(h // 2, w // 2),
            flat[h * w + q:h * w + 2 * q].reshape(h // 2, w // 2), w, h)


def _frame(frame, fmt: str):
    """(code, array, uv, v, w, h, (row, px, ch) strides, uv row stride, v row stride,
    flipped channels)."""
    if fmt == "i420":
        y, u, v, w, h = _i420(frame)
        if w < 2 or h < 2:
            raise ValueError(f"letterbox: a frame of {w}x{h} pixels; at least 2x2")
        return 2, y, u, v, w, h, (y.strides[0], 1, 0), u.strides[0], v.strides[0], False
    if fmt == "nv12":
        if isinstance(frame, (tuple, list)):
            if len(frame) != 2:
                raise ValueError(f"letterbox: an NV12 frame is a (H*3/2, W) array or a "
                                 f"(Y, UV) pair; got a sequence of {len(frame)}")
            y, uv = _u8(frame[0], "the Y plane"), _u8(frame[1], "the UV plane")
            if y.ndim != 2:
                raise ValueError(f"letterbox: the Y plane is (H, W); got shape {y.shape}")
            h, w = y.shape
            if uv.ndim == 3 and uv.shape[2] == 2 and uv.strides[2] == 1 \
                    and uv.strides[1] == 2:
                uv_w = uv.shape[1] * 2
            elif uv.ndim == 2:
                uv_w = uv.shape[1]
            else:
                raise ValueError(f"letterbox: the UV plane is (H/2, W) or (H/2, W/2, 2) "
                                 f"with interleaved U, V bytes; got shape {uv.shape}")
            _even(w, h)
            if uv.shape[0] != h // 2 or uv_w != w:
                raise ValueError(f"letterbox: the UV plane of a {w}x{h} NV12 frame is "
                                 f"({h // 2}, {w}); got shape {uv.shape}")
        else:
            a = _u8(frame, "an NV12 frame")
            if a.ndim != 2:
                raise ValueError(f"letterbox: an NV12 frame is a (H*3/2, W) array (or a "
                                 f"(Y, UV) pair); got shape {a.shape}")
            rows, w = a.shape
            if rows % 3:
                raise ValueError(f"letterbox: an NV12 frame has H*3/2 rows (a multiple of "
                                 f"3); got {rows}")
            h = rows // 3 * 2
            _even(w, h)
            y, uv = a[:h], a[h:]
        if w < 2 or h < 2:
            raise ValueError(f"letterbox: a frame of {w}x{h} pixels; at least 2x2")
        if y.strides[1] != 1 or uv.strides[-1] != 1:
            raise ValueError("letterbox: NV12 planes have contiguous rows (a row stride "
                             "is fine, a column stride is not)")
        return 1, y, uv, None, w, h, (y.strides[0], 1, 0), uv.strides[0], 0, False
    a = _u8(frame, "the frame")
    if a.ndim != 3 or a.shape[2] != 3:
        raise ValueError(f"letterbox: a {fmt.upper()} frame is (H, W, 3); got shape "
                         f"{a.shape}" + (" (a grayscale or 4-channel frame: convert it "
                                         "to 3 channels first)" if a.ndim in (2, 3) else ""))
    h, w = a.shape[:2]
    if w < 2 or h < 2:
        raise ValueError(f"letterbox: a frame of {w}x{h} pixels; at least 2x2")
    flipped = a.strides[2] < 0
    if flipped:                     # frame[..., ::-1]: read it forwards, swapped
        a = a[..., ::-1]
    return 0, a, None, None, w, h, a.strides, 0, 0, flipped


def _even(w: int, h: int, fmt: str = "NV12") -> None:
    if w % 2 or h % 2:
        raise ValueError(f"letterbox: an {fmt} frame has an even width and height; got "
                         f"{w}x{h}")


def _numbers(v) -> bool:
    """`v` is a real number or a sequence / array of them (no str, no bool, no None)."""
    if isinstance(v, np.ndarray):
        return v.dtype.kind in "iuf"
    items = v if isinstance(v, (list, tuple)) else (v,)
    return all(isinstance(x, (int, float, np.integer, np.floating))
               and not isinstance(x, (bool, np.bool_)) for x in items)


def channel_values(v, what: str, who: str = "letterbox") -> Tuple[float, float, float]:
    """`v` as three finite floats (one value repeated); the error names `what`."""
    if not _numbers(v):
        raise ValueError(f"{who}: {what} is a number or three (one per channel); got {v!r}")
    a = np.asarray(v, dtype=np.float64)
    if a.ndim == 0:
        a = np.repeat(a, 3)
    if a.shape != (3,):
        raise ValueError(f"{who}: {what} is one value or three (one per channel); "
                         f"got {v!r}")
    if not np.isfinite(a).all():
        raise ValueError(f"{who}: {what} must be finite; got {v!r}")
    return tuple(float(x) for x in a)


def pad_values(pad_value, who: str = "letterbox") -> Tuple[int, int, int]:
    """`pad_value` as three pixel values 0..255 (an int, or three; a bool is refused: it
    is not a pixel value); the error names `pad_value` and the range."""
    what = "pad_value is a pixel value 0..255 (an int, or three ints)"
    try:
        pads = channel_values(pad_value, "pad_value", who)
    except ValueError:
        raise ValueError(f"{who}: {what}; got {pad_value!r}") from None
    if not all(v == int(v) and 0 <= v <= 255 for v in pads):
        raise ValueError(f"{who}: {what}; got {pad_value!r}")
    return tuple(int(v) for v in pads)


def check_quant(quant, dtype: np.dtype, who: str = "letterbox") -> None:
    """A scale that is finite and > 0 and a zero point inside `dtype`'s range, or a
    ValueError naming which (the codes would saturate silently otherwise)."""
    scale, zp = quant
    if not (np.isfinite(scale) and scale > 0):
        raise ValueError(f"{who}: the input's quantization scale must be finite and > 0; "
                         f"got {scale!r}")
    if np.dtype(dtype).kind in "iu":
        lo, hi = np.iinfo(dtype).min, np.iinfo(dtype).max
        if not lo <= zp <= hi:
            raise ValueError(f"{who}: the input's zero point must be in {lo}..{hi} "
                             f"({np.dtype(dtype)}); got {zp!r}")


def _quant_of(info) -> Optional[Tuple[float, int]]:
    """(scale, zero_point) of a tensor description: rknnx.TensorInfo, a low-level
    TensorAttr, a rknnx.modelfile.FileTensor; None when it says nothing."""
    if info is None:
        return None
    q = getattr(info, "quant", None)
    if q is not None and hasattr(q, "kind"):
        if q.kind == "dfp":
            return 2.0 ** -q.fl, 0
        return (float(q.scale), int(q.zero_point)) if q.kind == "affine" else None
    kind = getattr(info, "qnt_type", None)
    if kind is not None and not isinstance(kind, str):
        from rknnx.lowlevel import QntType

        if int(kind) == int(QntType.DFP):
            return 2.0 ** -int(info.fl), 0
        if int(kind) != int(QntType.AFFINE_ASYMMETRIC):
            return None
        return float(info.scale), int(info.zp)
    if kind in ("affine", "dfp"):            # a modelfile FileTensor
        if kind == "dfp":
            return 2.0 ** -int(info.raw.get("fl", 0)), 0
        return float(info.scale), int(info.zero_point)
    return None


def _layout_of(info) -> Optional[str]:
    lay = getattr(info, "layout", None) if info is not None else None
    return lay if isinstance(lay, str) else None


def _target(out, info):
    """(array, info, layout) of `out`: an array, a session (its input 0)."""
    if out is not None and not isinstance(out, np.ndarray) and hasattr(out, "input_attrs") \
            and hasattr(out, "inputs"):
        _SESSIONS.add(out.__class__)
        attr = out.input_attrs[0]
        view = out.inputs[0]
        if view.dtype == _I8 and not attr.pass_through:
            raise ValueError("letterbox: the session's input 0 takes int8 values that the "
                             "runtime normalizes and quantizes again; open the session "
                             "with the default uint8 inputs (pixels), or with "
                             "inputs='native' (int8 codes, taken as they are)")
        return view, (info if info is not None else attr), _layout_of(attr)
    if out is not None and not isinstance(out, np.ndarray):
        raise TypeError(f"letterbox: out is a numpy array, a zero-copy session's input "
                        f"view or the session; got {type(out).__name__}")
    return out, info, _layout_of(info)


def _out_strides(out: np.ndarray, layout: Optional[str]):
    """(H, W, row, px, (ch0, ch1, ch2)) byte strides of the three written channels."""
    s, shp = out.strides, out.shape
    if out.ndim == 3 and shp[2] >= 3 and layout in (None, "NHWC"):
        return shp[0], shp[1], s[0], s[1], (0, s[2], 2 * s[2])
    if out.ndim == 4 and shp[0] == 1:
        nhwc = shp[3] >= 3 if layout == "NHWC" else (shp[3] == 3 and layout != "NCHW")
        if nhwc:
            return shp[1], shp[2], s[1], s[2], (0, s[3], 2 * s[3])
        if shp[1] >= 3 and layout in (None, "NCHW"):
            return shp[2], shp[3], s[2], s[3], (0, s[1], 2 * s[1])
    if out.ndim == 5 and shp[0] == 1 and shp[1] * shp[4] >= 3 and \
            layout in (None, "NC1HWC2"):
        c2 = shp[4]
        return shp[2], shp[3], s[2], s[3], tuple((c // c2) * s[1] + (c % c2) * s[4]
                                                 for c in range(3))
    raise ValueError(f"letterbox: out of shape {shape_str(shp)}" +
                     (f" ({layout})" if layout else "") +
                     " is not an image of 3 channels: (H, W, 3), (1, H, W, 3) NHWC, "
                     "(1, 3, H, W) NCHW or (1, C1, H, W, C2) NC1HWC2")


def shape_str(shape) -> str:
    return "(" + ", ".join(str(int(d)) for d in shape) + ")"


def _table(out_dtype: np.dtype, quant, mean, std) -> Optional[np.ndarray]:
    """768 codes: channel c of pixel v is quantize((v - mean[c]) / std[c])."""
    from rknnx._kernels import quantize

    scale, zp = quant
    v = np.arange(256, dtype=np.float32)
    m = np.asarray(mean, np.float32)[:, None]
    sd = np.asarray(std, np.float32)[:, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        x = (v[None, :] - m) / sd
    return np.ascontiguousarray(quantize(x, scale, zp, dtype=out_dtype).view(np.uint8)
                                .reshape(768))


def letterbox(frame, size: Optional[Tuple[int, int]] = None, *, out=None,
              swap_rb: bool = False, pad_value: Union[int, Sequence[int]] = 0,
              fmt: str = "bgr", info=None, mean=None, std=None,
              matrix: str = "bt601") -> Tuple[np.ndarray, Letterbox]:
    """Resize a frame into a network's input, keeping its aspect ratio, in one pass.

    Parameters
    ----------
    frame : numpy.ndarray, (Y, UV) or (Y, U, V)
        ``fmt="bgr"`` (or ``"rgb"``: the same, 3 channels as they are): a uint8
        ``(h, w, 3)`` array, any strides (a camera buffer with padded rows, a crop, a
        ``[..., ::-1]`` view).  ``fmt="nv12"``: a uint8 ``(h*3/2, w)`` array (its rows may
        be strided) or a ``(Y, UV)`` pair of planes, ``Y`` ``(h, w)`` and ``UV``
        ``(h/2, w)`` or ``(h/2, w/2, 2)``, each with its own row stride (a hardware
        decoder's buffer: 1920x1080 in 1920x1088 rows of 2304 bytes); converted as
        ``cv2.COLOR_YUV2BGR_NV12`` before the resize.  ``fmt="i420"`` (PyAV's
        ``yuv420p``): a ``(Y, U, V)`` triple of planes, ``Y`` ``(h, w)``, ``U`` and ``V``
        ``(h/2, w/2)``, each with its own row stride (``frame.planes``), or one contiguous
        ``(h*3/2, w)`` array (``frame.to_ndarray()``); converted as
        ``cv2.COLOR_YUV2BGR_I420``.  At least 2x2 pixels.
    size : (width, height), optional
        The input's size; default: the size of `out`.
    out : numpy.ndarray or ZeroCopySession, optional
        Where to write: an array ``(H, W, 3)``, ``(1, H, W, 3)`` (NHWC, e.g. a session's
        input view with its ``w_stride`` row padding), ``(1, 3, H, W)`` (NCHW) or
        ``(1, C1, H, W, C2)`` (NC1HWC2), uint8, int8 (quantized codes), float16 or
        float32 (an unquantized input: the normalized pixels); or a
        :class:`~rknnx.session.ZeroCopySession`, meaning its input 0 described by its
        bound attribute.  Default: a new ``(H, W, 3)`` uint8 array.
    swap_rb : bool
        Swap channels 0 and 2 (BGR <-> RGB).
    matrix : {"bt601", "bt709"}
        The YUV matrix of an NV12 or I420 frame, limited range: ``"bt601"`` (OpenCV's and
        PyAV's default, the integers of OpenCV's conversion) or ``"bt709"`` (HD streams
        that say so).
    pad_value : int or 3 ints
        The pixel value around the resized frame (per channel of the written image).
    info : TensorInfo, TensorAttr or FileTensor, optional
        What `out` is (``model.inputs[i]``, ``session.input_attrs[i]``,
        ``ModelFile.inputs[i]``, or ``ModelFile.file_inputs[i]`` of :mod:`rknnx.modelfile`):
        its layout settles an ambiguous shape, its quantization (and a file tensor's
        mean/std) the codes of an int8 `out`.
    mean, std : float or 3 floats, optional
        The model's normalization (per channel of the written image), needed for an int8
        `out` (a pass-through input: ``model.zero_copy(inputs="native")``) unless `info`
        carries it, and for a float16 or float32 `out` (``(p - mean) / std`` in float32,
        then rounded to the output's type); each pixel ``p`` of an int8 `out` becomes
        ``clip(rint(((p - mean) / std) / scale) + zero_point)`` (``p - 128`` for the
        model zoo's mean 0, std 255 and scale 1/255, zero point -128).  Given with a uint8
        `out`, the uint8 codes of that rule.

    Returns
    -------
    image : numpy.ndarray
        `out` (the session's input view for a session), or the new array.
    box : Letterbox
        The scale and pad, to map boxes back to the frame.

    Raises
    ------
    TypeError
        A frame or `out` of another dtype, an `out` that is not an array or session.
    ValueError
        A frame under 2x2, not 3 channels, an odd NV12 or I420 size, an unknown `fmt` or
        `matrix`, an `out` that is not a
        3-channel image or does not match `size`, read-only, overlapping the frame; an
        int8 `out` with no quantization or normalization known.

    Examples
    --------
    >>> img, box = letterbox(frame, (640, 640), swap_rb=True)       # doctest: +SKIP
    >>> with model.zero_copy() as s:                                 # doctest: +SKIP
    ...     _, box = letterbox(frame, out=s, swap_rb=True)
    ...     s.run()
    >>> with model.zero_copy(inputs="native", outputs="raw") as s:  # doctest: +SKIP
    ...     _, box = letterbox(frame, out=s, swap_rb=True, mean=0, std=255)
    """
    # the repeated call: the plan of a call with these arguments (by value and type) and
    # arrays of this shape, if an earlier one made it; its run checks the rest of their
    # geometry (byte strides, element type), that out is writable and apart from the
    # frame, and says False (nothing done) otherwise: the path below then checks it all
    key = None
    fc = frame.__class__
    if fc is np.ndarray:
        shape = frame.shape
    elif fc is tuple or fc is list:                 # a YUV frame's planes
        shape = tuple([a.shape if a.__class__ is np.ndarray else None for a in frame])
        if None in shape:
            shape = None
    else:
        shape = None
    if shape is not None and info is None and mean is None and std is None \
            and (swap_rb is True or swap_rb is False):
        oc = out.__class__
        arr = out if oc is np.ndarray else _session_view(out) if oc in _SESSIONS else None
        if arr is not None:
            pc = pad_value.__class__
            try:
                key = (fmt, matrix, size, swap_rb, pad_value,
                       tuple(map(type, pad_value)) if pc is tuple else pc,
                       shape, arr.shape, None if arr is out else id(arr))
                plan = _PLANS.get(key)
            except TypeError:           # an unhashable argument: no plan
                key = plan = None
            if plan is not None and (plan.ref is None or plan.ref() is arr) \
                    and plan.run(frame, arr):
                return arr, plan.box
    return _letterbox(frame, size, out, swap_rb, pad_value, fmt, info, mean, std, matrix,
                      key)


_PLANS: dict = {}       # key of letterbox's arguments -> _kernels.LetterboxPlan
_SESSIONS: set = set()  # the classes _target took for a session


def _session_view(out) -> Optional[np.ndarray]:
    """The input 0 view of a session (None if it has none now: the checking path says
    why)."""
    try:
        return out.inputs[0]
    except Exception:
        return None


def _letterbox(frame, size, out, swap_rb, pad_value, fmt, info, mean, std, matrix, key):
    """letterbox's checking path: every argument checked, the geometry worked out, the C
    pass run; with a `key` (a frame of arrays and out an array or a session's view), the
    plan of the call kept under it (the C keeps none where a plane is not inside the
    frame's array: nothing to find it by on the next call)."""
    from rknnx import _kernels

    if not isinstance(fmt, str) or fmt.lower() not in _FORMATS:
        raise ValueError(f"letterbox: fmt is 'bgr', 'rgb', 'nv12' or 'i420'; got {fmt!r}")
    fmt = fmt.lower()
    if not isinstance(matrix, str) or matrix.lower() not in _MATRICES:
        raise ValueError(f"letterbox: matrix is 'bt601' or 'bt709' (limited range); got "
                         f"{matrix!r}")
    if not (swap_rb is True or swap_rb is False):
        raise TypeError(f"letterbox: swap_rb is True or False; got {swap_rb!r}")
    code, src, uv, vp, w, h, (s_row, s_px, s_ch), uv_row, v_row, flipped = _frame(frame, fmt)
    arr, info, (W, H, d_row, d_px, d_ch) = _output(out, info, size, src, uv, vp)
    lut = _codes(arr.dtype, info, mean, std)
    elem = arr.dtype.itemsize
    pad = _pad_bytes(pad_value, lut, elem)
    box = geometry((w, h), (W, H))
    nw, nh = box.resized
    keep = key is not None and \
        (arr is out or (out is not None and arr is _session_view(out)))
    plan = _kernels.letterbox_run(src, uv, arr, code, w, h, s_row, s_px, s_ch, uv_row, W, H,
                                  d_row, d_px, d_ch, nw, nh, box.pad[0], box.pad[1],
                                  swap_rb != flipped, lut,
                                  pad if elem == 1 else b"\0\0\0", vp, v_row,
                                  _MATRICES[matrix.lower()], elem,
                                  pad if elem > 1 else None, keep, frame)
    if plan is not None:
        plan.box = box
        plan.ref = None if arr is out else weakref.ref(arr)
        if len(_PLANS) >= 64:
            _PLANS.clear()
        _PLANS[key] = plan
    return arr, box


def _size(size) -> Optional[Tuple[int, int]]:
    """letterbox's `size` as (W, H) of at least 1, or None."""
    if size is None:
        return None
    try:
        W, H = (int(v) for v in size)
    except (TypeError, ValueError):
        raise TypeError(f"letterbox: size is (width, height); got {size!r}") from None
    if W < 1 or H < 1:
        raise ValueError(f"letterbox: size is (width, height) of at least 1; got {size!r}")
    return W, H


def _output(out, info, size, src, uv, vp=None):
    """(array, info, (W, H, row, px, (ch0, ch1, ch2) byte strides)) of what letterbox
    writes: `out` (an array or a session's input 0) or a new (H, W, 3) uint8 array of
    `size`; a writable uint8 or int8 image of `size`, apart from the frame's planes."""
    arr, info, layout = _target(out, info)
    wh = _size(size)
    if arr is None:
        if wh is None:
            raise ValueError("letterbox: give size=(width, height) or out=")
        arr = np.empty((wh[1], wh[0], 3), _U8)
    if arr.dtype not in (_U8, _I8) + _FLOATS:
        raise TypeError(f"letterbox: out is uint8 (pixels), int8 (a quantized input), "
                        f"float16 or float32 (an unquantized input); got {arr.dtype}")
    oH, oW, d_row, d_px, d_ch = _out_strides(arr, layout)
    if oH < 1 or oW < 1:
        raise ValueError(f"letterbox: out of shape {shape_str(arr.shape)} holds an image of "
                         f"{oW}x{oH}; expected at least 1x1")
    if wh is not None and wh != (oW, oH):
        raise ValueError(f"letterbox: size {wh} (width, height) does not match out, "
                         f"{oW}x{oH}")
    if not arr.flags.writeable:
        raise ValueError("letterbox: out is read-only")
    if any(a is not None and np.may_share_memory(arr, a) for a in (src, uv, vp)):
        raise ValueError("letterbox: out overlaps the frame")
    return arr, info, (oW, oH, d_row, d_px, d_ch)


def _codes(dtype: np.dtype, info, mean, std) -> Optional[np.ndarray]:
    """The codes written: None for the pixels as they are, else the 768-entry table of
    each pixel value normalized ((v - mean) / std, from `info` where not given) and
    quantized (the input's scale and zero point), per channel."""
    if mean is None and info is not None:
        mean = getattr(info, "mean", None) or None
        std = std if std is not None else (getattr(info, "std", None) or None)
    if not (dtype == _I8 or dtype in _FLOATS or mean is not None or std is not None):
        return None
    if dtype in _FLOATS:
        if mean is None or std is None:
            raise ValueError(f"letterbox: a {dtype} out takes each pixel normalized: give "
                             f"mean= and std= (the model's normalization, e.g. mean=0, "
                             f"std=255), or info= of a file that says them")
        m3, s3 = channel_values(mean, "mean"), channel_values(std, "std")
        if any(v == 0 for v in s3):
            raise ValueError(f"letterbox: std must be finite and non-zero, mean finite; "
                             f"got mean={mean!r}, std={std!r}")
        v = np.arange(256, dtype=np.float32)
        x = (v[None, :] - np.float32(m3)[:, None]) / np.float32(s3)[:, None]
        return np.ascontiguousarray(x.astype(dtype)).view(np.uint8).reshape(-1)
    quant = _quant_of(info)
    if quant is None:
        raise ValueError("letterbox: an int8 out holds quantized codes; give info= "
                         "(the input's TensorInfo or TensorAttr: its scale and zero "
                         "point)" if dtype == _I8 else
                         "letterbox: mean/std normalize for a quantized input; give "
                         "info= (its scale and zero point)")
    if mean is None or std is None:
        raise ValueError("letterbox: an int8 out takes each pixel normalized and "
                         "quantized: give mean= and std= (the model's normalization, "
                         "e.g. mean=0, std=255 for the model zoo's YOLO models)")
    m3, s3 = channel_values(mean, "mean"), channel_values(std, "std")
    if any(v == 0 for v in s3):
        raise ValueError(f"letterbox: std must be finite and non-zero, mean finite; got "
                         f"mean={mean!r}, std={std!r}")
    check_quant(quant, dtype)
    return _table(dtype, quant, m3, s3)


def _pad_bytes(pad_value, lut, elem: int = 1) -> bytes:
    """The three codes of the padding (elements of `elem` bytes): `pad_value` per channel,
    through the table."""
    pads = pad_values(pad_value)
    if lut is None:
        return bytes(pads)
    return b"".join(bytes(lut[(256 * c + v) * elem:(256 * c + v + 1) * elem])
                    for c, v in enumerate(pads))
