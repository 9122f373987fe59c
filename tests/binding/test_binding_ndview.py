"""numpy arrays read from their own fields (rknn_ext/rknnx/_ndview.pxi) instead of numpy's
buffer export on the fast paths of inputs_set, outputs_get(out=) and infer: the same
results, the same refusals in the same words as through the export (a subclass of
ndarray, which always takes the export, is the reference), every reference given back,
and the array held for the whole call."""

from __future__ import annotations

import gc
import sys
import threading
import time
import weakref

import numpy as np
import pytest

from rknnx import _core

from helpers import user_inputs

CODES = "?bBhHiIlLqQefd"          # the dtypes _nd_probe checks (one-character formats)


class Sub(np.ndarray):
    """Not exactly numpy.ndarray: always read through the buffer protocol."""


def outcome(fn):
    """What a call did: ("ok", its arrays) or the exception's type and words."""
    try:
        got = fn()
    except Exception as e:                      # noqa: BLE001 - compared, not hidden
        return type(e), str(e)
    return "ok", [np.array(g) for g in (got or [])]


def same(a, b):
    assert a[0] == b[0], (a, b)
    if a[0] == "ok":
        assert len(a[1]) == len(b[1])
        for x, y in zip(a[1], b[1]):
            np.testing.assert_array_equal(x, y)
    else:
        assert a[1] == b[1]


def test_numpys_fields_are_read_here():
    """The probe found numpy's fields where rknnx_ndarray.h says (numpy 1.x and 2.x have
    them there): the fast path is in use, not silently left to the buffer protocol."""
    assert _core._NDARRAY_FIELDS_READ is True, np.__version__


def out_variants(attr):
    """(label, array) for output `attr` (float32 wanted): the right one and each way of
    being wrong that the checks name, and the dtypes of the probe's table."""
    shape = tuple(attr.dims)
    good = np.zeros(shape, np.float32)
    ro = np.zeros(shape, np.float32)
    ro.flags.writeable = False
    wide = np.zeros(shape[:-1] + (2 * shape[-1],), np.float32)[..., ::2]
    yield "good", good
    yield "read-only", ro
    yield "not contiguous", wide
    yield "swapped", np.zeros(shape, ">f4")
    yield "flat", np.zeros(int(np.prod(shape)), np.float32)
    yield "too big", np.zeros((int(np.prod(shape)) + 1,), np.float32)
    yield "0-d", np.zeros((), np.float32)
    for c in CODES.replace("f", ""):
        yield f"dtype {c}", np.zeros(shape, c)


@pytest.mark.parametrize("name", ["tiny_relu", "multi_io"])
def test_out_checks_say_what_the_export_says(track, name):
    ctx = track.model(name)
    xs = user_inputs(ctx, np.random.default_rng(3))
    attrs = ctx.output_attrs

    def via_get(out):
        ctx.inputs_set(xs)
        ctx.run()
        return ctx.outputs_get(True, out)

    for label, bad in out_variants(attrs[0]):
        plain = [bad] + [np.zeros(a.dims, np.float32) for a in attrs[1:]]
        for call in (lambda out: ctx.infer(xs, out), via_get):
            a = outcome(lambda: call(plain))
            b = outcome(lambda: call([p.view(Sub) for p in plain]))
            same(a, b)
            # a 1-D buffer is judged by its size alone (the binding's rule)
            assert (a[0] == "ok") == (label in ("good", "flat")), (label, a)
            if a[0] != "ok":
                assert a[0] in (ValueError, TypeError) and "out[0]" in a[1], (label, a)


def in_variants(attr):
    shape = tuple(attr.dims)
    rng = np.random.default_rng(5)
    x = rng.standard_normal(shape).astype(np.float32)
    ro = x.copy()
    ro.flags.writeable = False
    yield "good", x
    yield "read-only", ro                        # inputs are only read: taken
    yield "not contiguous", np.repeat(x, 2, axis=-1)[..., ::2]
    yield "swapped", x.astype(">f4")
    yield "flat", x.ravel()
    yield "leading ones", x.reshape((1,) + shape)
    yield "too big", np.zeros(x.size + 1, np.float32)
    for c in CODES:
        yield f"dtype {c}", (x * 10).astype(c)


def test_input_checks_say_what_the_export_says(track):
    """inputs_set and infer (the fast path of both, then the general path when declined)
    take and refuse the same arrays with the same words, and compute the same outputs."""
    ctx = track.model("tiny_relu")
    attr = ctx.input_attrs[0]
    outs = lambda: [np.zeros(a.dims, np.float32) for a in ctx.output_attrs]  # noqa: E731
    for label, x in in_variants(attr):
        def via_set(arr):
            ctx.inputs_set([arr])
            ctx.run()
            return ctx.outputs_get(True, outs())

        for call in (via_set, lambda arr: ctx.infer([arr], outs())):
            a = outcome(lambda: call(x))
            b = outcome(lambda: call(x.view(Sub)))
            same(a, b)
            if label in ("good", "read-only", "flat", "leading ones"):
                assert a[0] == "ok", (label, a)
                np.testing.assert_array_equal(a[1][0].ravel(), np.maximum(x, 0).ravel())


def test_fast_only_takes_and_declines_the_same(track):
    """infer(fast_only=True) runs what it ran through the export and declines (None,
    nothing called) what it declined: an `out` the checks refuse, an input the export
    path refuses or of another shape than the attribute's dims."""
    ctx = track.model("tiny_relu")
    x = np.float32([[1, -2]])
    attr = ctx.input_attrs[0]
    good = np.zeros(ctx.output_attrs[0].dims, np.float32)
    assert ctx.infer([x], [good], fast_only=True) is not None
    for label, bad in out_variants(ctx.output_attrs[0]):
        if label == "good":
            continue                                      # "flat": not the exact dims
        frame = ctx.last_frame_id
        assert ctx.infer([x], [bad], fast_only=True) is None, label
        assert ctx.last_frame_id == frame, label          # nothing ran
    for label, arr in in_variants(attr):
        export_takes = outcome(lambda: ctx.inputs_set([arr.view(Sub)]))[0] == "ok"
        expected = export_takes and arr.shape == tuple(attr.dims) and arr.flags.c_contiguous
        took = ctx.infer([arr], [good], fast_only=True) is not None
        assert took == expected, label


def test_references_come_back(track):
    """Each view holds its array and gives the reference back: the counts after many
    calls, taken and refused, equal the counts before."""
    ctx = track.model("tiny_relu")
    x = np.float32([[1, -2]])
    out = np.zeros(ctx.output_attrs[0].dims, np.float32)
    bad = np.zeros(ctx.output_attrs[0].dims, np.float64)
    ro = out.copy()
    ro.flags.writeable = False
    before = [sys.getrefcount(a) for a in (x, out, bad, ro)]
    for _ in range(50):
        ctx.infer([x], [out])
        ctx.infer([x], [out], fast_only=True)
        ctx.infer([x], [bad], fast_only=True)
        ctx.inputs_set([x])
        ctx.run()
        ctx.outputs_get(True, [out])
        for wrong in (bad, ro):
            with pytest.raises(ValueError, match=r"out\[0\]"):
                ctx.infer([x], [wrong])
        with pytest.raises(ValueError, match="2 inputs given; the model has 1"):
            ctx.infer([x, x], [out])
    del wrong
    gc.collect()
    assert [sys.getrefcount(a) for a in (x, out, bad, ro)] == before


def test_the_input_is_held_for_the_whole_call(track, emu):
    """An input whose only reference, the caller's list, is replaced by another thread
    while the runtime runs stays alive until infer returns (the view holds it), and is
    freed after (nothing kept)."""
    ctx = track.model("tiny_relu")
    items = [np.float32([[3, -4]])]
    ref = weakref.ref(items[0])
    out = [np.zeros(ctx.output_attrs[0].dims, np.float32)]
    emu.set_npu_time_us(600_000)
    got, alive = [], []
    t = threading.Thread(target=lambda: got.append(ctx.infer(items, out, fast_only=True)))
    t.start()
    time.sleep(0.3)                              # inside rknn_run, the GIL released
    items[0] = np.float32([[0, 0]])
    gc.collect()
    alive.append(ref() is not None)
    t.join(10)
    emu.set_npu_time_us(None)
    gc.collect()
    assert got and got[0] is not None
    np.testing.assert_array_equal(got[0][0].ravel(), [3, 0])
    assert alive == [True], "the input was freed during the run"
    assert ref() is None, "the input is still held after the call"
