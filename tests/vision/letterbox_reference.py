"""A numpy reference of rknnx.vision.letterbox's exact arithmetic (rknn_ext/kernels/
letterbox.h): the taps in integers, the vertical blend in Q8, the horizontal one in Q11,
NV12 and I420 -> BGR in Q20 (BT.601, BT.709).  The C equals it bit for bit on every vector
path; OpenCV is within 1 of it (tests/vision/test_letterbox.py, test_letterbox_yuv.py)."""

from __future__ import annotations

import numpy as np


def taps(s: int, n: int, bits: int):
    """For d < n: the tap i and the weight of i + 1 in units of 2**bits."""
    d = np.arange(n, dtype=np.int64)
    num = (2 * d + 1) * s - n
    den = 2 * n
    one = 1 << bits
    pos = num > 0
    k = np.where(pos, num // den, 0)
    w = np.where(pos, (one * (num - k * den) + den // 2) // den, 0)
    edge = pos & (k >= s - 1)
    return np.where(edge, s - 2, k), np.where(edge, one, w)


# Q20 coefficients: Y, R from V, G from V, G from U, B from U (letterbox.h)
COEF = {"bt601": (1220542, 1673527, -852492, -409993, 2116026),
        "bt709": (1220945, 1879825, -558796, -223607, 2215014)}


def i420_to_bgr(y: np.ndarray, u: np.ndarray, v: np.ndarray, matrix="bt601") -> np.ndarray:
    """Limited range, each 2x2 block sharing its U, V (planes of (h/2, w/2))."""
    ky, krv, kgv, kgu, kbu = COEF[matrix]
    u = np.repeat(np.repeat(np.asarray(u).astype(np.int64) - 128, 2, 0), 2, 1)
    v = np.repeat(np.repeat(np.asarray(v).astype(np.int64) - 128, 2, 0), 2, 1)
    yy = np.maximum(np.asarray(y).astype(np.int64) - 16, 0) * ky
    b = (yy + kbu * u + (1 << 19)) >> 20
    g = (yy + kgv * v + kgu * u + (1 << 19)) >> 20
    r = (yy + krv * v + (1 << 19)) >> 20
    return np.clip(np.stack([b, g, r], -1), 0, 255).astype(np.uint8)


def nv12_to_bgr(y: np.ndarray, uv: np.ndarray, matrix="bt601") -> np.ndarray:
    """BT.601 (or BT.709) limited range, each 2x2 block sharing its U, V."""
    h, w = y.shape
    uv = np.asarray(uv).reshape(h // 2, w)
    return i420_to_bgr(y, uv[:, 0::2], uv[:, 1::2], matrix)


def resize(img: np.ndarray, nw: int, nh: int) -> np.ndarray:
    """(h, w, 3) uint8 -> (nh, nw, 3): vertical in Q8 (exact 16-bit sums), then
    horizontal in Q11, rounded half up."""
    h, w = img.shape[:2]
    yi, yw = taps(h, nh, 8)
    xi, xw = taps(w, nw, 11)
    r = img.astype(np.int64)
    t = r[yi] * (256 - yw)[:, None, None] + r[yi + 1] * yw[:, None, None]
    v = (t[:, xi] * (2048 - xw)[None, :, None] + t[:, xi + 1] * xw[None, :, None]
         + (1 << 18)) >> 19
    return v.astype(np.uint8)


def geometry(w: int, h: int, W: int, H: int):
    s = min(W / w, H / h)
    nw, nh = round(w * s), round(h * s)
    return s, nw, nh, (W - nw) // 2, (H - nh) // 2


def letterbox(frame, size, *, swap_rb=False, pad_value=0, fmt="bgr",
              matrix="bt601") -> np.ndarray:
    """The (H, W, 3) uint8 pixels letterbox writes (before any quantization)."""
    if fmt == "nv12":
        if isinstance(frame, tuple):
            y, uv = frame
        else:
            h = frame.shape[0] // 3 * 2
            y, uv = frame[:h], frame[h:]
        img = nv12_to_bgr(np.asarray(y), np.asarray(uv), matrix)
    elif fmt == "i420":
        if isinstance(frame, tuple):
            y, u, v = frame
        else:
            h, w = frame.shape[0] // 3 * 2, frame.shape[1]
            flat, q = np.ascontiguousarray(frame).reshape(-1), h * w // 4
            y = frame[:h]
            u = flat[h * w:h * w + q].reshape(h // 2, w // 2)
            v = flat[h * w + q:h * w + 2 * q].reshape(h // 2, w // 2)
        img = i420_to_bgr(y, u, v, matrix)
    else:
        img = np.asarray(frame)
    h, w = img.shape[:2]
    W, H = size
    _, nw, nh, left, top = geometry(w, h, W, H)
    out = np.empty((H, W, 3), np.uint8)
    out[...] = np.asarray(pad_value, np.uint8)
    r = resize(img, nw, nh)
    out[top:top + nh, left:left + nw] = r[..., ::-1] if swap_rb else r
    return out
