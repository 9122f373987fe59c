"""LetterboxPlan reuse (c9b2e19) on frames that share a cached plan's key (the planes'
shapes, out's shape and identity) but not the rest: planes that are views of one buffer
at other offsets, the UV plane a view of the Y array, reversed rows (negative strides),
non-contiguous planes, other element types, out overlapping a plane, a frame reallocated
between calls.  Each call's output, box and refusal (type and words) equals the same call
with no plan cached (letterbox's checking path)."""

from __future__ import annotations

import numpy as np
import pytest

from rknnx.vision import letterbox

_lb = __import__("rknnx.vision.letterbox", fromlist=["_PLANS"])


def fresh(frame, **kw):
    _lb._PLANS.clear()
    return call(frame, **kw)


def call(frame, **kw):
    out = kw.pop("out")
    try:
        arr, box = letterbox(frame, (64, 48), out=out, **kw)
    except Exception as e:                      # noqa: BLE001 - compared, not hidden
        return type(e), str(e)
    return "ok", arr.copy(), box


def same(a, b, label):
    assert a[0] == b[0], (label, a, b)
    if a[0] == "ok":
        np.testing.assert_array_equal(a[1], b[1], err_msg=label)
        assert a[2] == b[2], label
    else:
        assert a[1] == b[1], label


def frames(rng, h=30, w=40):
    y = rng.integers(0, 256, (h, w), np.uint8)
    uv = rng.integers(0, 256, (h // 2, w), np.uint8)
    yield "planes", (y, uv)
    big = rng.integers(0, 256, (2 * h, w), np.uint8)
    yield "uv view of y", (big[:h], big[h:h + h // 2])
    yield "uv view of y, other offset", (big[h // 2:h // 2 + h], big[:h // 2])
    yield "uv inside y itself", (big[:h], big[3:3 + h // 2])
    yield "reversed rows", (y[::-1], uv[::-1])
    wide = rng.integers(0, 256, (h, 2 * w), np.uint8)
    yield "strided y", (wide[:, ::2], uv)
    yield "padded rows", (wide[:, :w], uv)
    yield "int8 y", (y.view(np.int8), uv)
    yield "list", [y.copy(), uv.copy()]
    nv = rng.integers(0, 256, (h * 3 // 2, w), np.uint8)
    yield "one array", nv
    yield "one array reversed", nv[::-1]
    yield "one array strided", np.repeat(nv, 2, axis=1)[:, ::2]


def test_a_reused_plan_does_what_the_checking_path_does():
    rng = np.random.default_rng(21)
    out = np.zeros((48, 64, 3), np.uint8)
    items = list(frames(rng))
    # every ordered pair: the first call leaves its plan, the second meets it
    for la, fa in items:
        for lb, fb in items:
            _lb._PLANS.clear()
            call(fa, out=out, fmt="nv12")
            got = call(fb, out=out, fmt="nv12")
            want = fresh(fb, out=out, fmt="nv12")
            same(got, want, f"{la} then {lb}")


def test_out_overlapping_a_plane_after_a_plan():
    rng = np.random.default_rng(5)
    buf = np.zeros(48 * 64 * 3 + 30 * 40 + 15 * 40, np.uint8)
    out = buf[:48 * 64 * 3].reshape(48, 64, 3)
    y = rng.integers(0, 256, (30, 40), np.uint8)
    uv = rng.integers(0, 256, (15, 40), np.uint8)
    _lb._PLANS.clear()
    assert call((y, uv), out=out, fmt="nv12")[0] == "ok"
    # the same shapes, the UV plane now inside out
    uv2 = buf[100:100 + 15 * 40].reshape(15, 40)
    got = call((y, uv2), out=out, fmt="nv12")
    want = fresh((y, uv2), out=out, fmt="nv12")
    same(got, want, "uv inside out")
    uv3 = buf[48 * 64 * 3:48 * 64 * 3 + 600].reshape(15, 40)   # just after out
    same(call((y, uv3), out=out, fmt="nv12"), fresh((y, uv3), out=out, fmt="nv12"),
         "uv after out")
