"""The arrays the field reader (rknn_ext/rknnx_ndarray.h, _ndview.pxi) must leave to
numpy's export or read exactly as the export does, beyond test_binding_ndview's table:
relaxed-stride C-contiguous views (a length-1 axis with any stride), empty arrays,
warn-on-write arrays (np.broadcast_arrays), read-only arrays made writable again, arrays
over a bytes object, '<f4' / '|i1' / '=f4' spellings, float16, bool, datetime64,
timedelta64, object, structured and subarray dtypes, and ndarray subclasses (np.matrix,
np.memmap, np.ma).  Each outcome (the arrays written, or the exception's type and
words) equals the one through the export (the same memory viewed as a subclass), for
infer, inputs_set and outputs_get(out=); references back to baseline after."""

from __future__ import annotations

import gc
import sys
import warnings

import numpy as np
import pytest

from helpers import user_inputs


class Sub(np.ndarray):
    """Not exactly numpy.ndarray: always read through the buffer protocol."""


def outcome(fn):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            got = fn()
    except Exception as e:                      # noqa: BLE001 - compared, not hidden
        return type(e), str(e)
    return "ok", [np.array(g) for g in (got or [])]


def same(a, b, label):
    assert a[0] == b[0], (label, a, b)
    if a[0] == "ok":
        for x, y in zip(a[1], b[1]):
            np.testing.assert_array_equal(x, y)
    else:
        assert a[1] == b[1], label


def variants(shape, dtype, rng):
    n = int(np.prod(shape))
    x = (rng.standard_normal(shape) * 10).astype(dtype)
    yield "plain", x
    big = np.zeros((3,) + shape, dtype)[::2][:1]          # (1, ...) with a stride of 2 rows
    big[...] = x
    assert big.flags.c_contiguous
    yield "relaxed strides", big
    yield "relaxed flat", np.repeat(x.reshape(1, n), 3, axis=0)[::2][:1].reshape(1, n)
    b, _ = np.broadcast_arrays(x, x)                      # writeable, warns on write
    yield "warn on write", b
    again = x.copy()
    again.flags.writeable = False
    again.flags.writeable = True
    yield "writable again", again
    yield "over bytes", np.frombuffer(x.tobytes(), dtype).reshape(shape)
    yield "empty", np.zeros((0,) + shape, dtype)
    yield "empty flat", np.zeros(0, dtype)
    yield "0-d", np.zeros((), dtype)
    yield "little", x.astype("<" + np.dtype(dtype).str[1:])
    yield "native spelled", x.astype("=" + np.dtype(dtype).str[1:])
    for c in ("e", "?", "i1", "u1", "M8[s]", "m8[s]", "O", "V4"):
        yield f"dtype {c}", np.zeros(shape, c)
    yield "structured", np.zeros(shape, [("a", "f4")])
    yield "subarray", np.zeros(shape[:-1], ("f4", shape[-1:]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PendingDeprecationWarning)
        mat = np.asmatrix(x.reshape(1, n))
    yield "matrix", mat
    yield "masked", np.ma.masked_array(x)


def test_inputs_read_as_the_export_reads_them(track, tmp_path):
    ctx = track.model("tiny_relu")
    attr = ctx.input_attrs[0]
    rng = np.random.default_rng(9)
    outs = lambda: [np.zeros(a.dims, np.float32) for a in ctx.output_attrs]  # noqa: E731
    items = list(variants(tuple(attr.dims), np.float32, rng))
    mm = np.memmap(tmp_path / "m", np.float32, "w+", shape=tuple(attr.dims))
    mm[...] = items[0][1]
    items.append(("memmap", mm))

    def via_set(arr):
        ctx.inputs_set([arr])
        ctx.run()
        return ctx.outputs_get(True, outs())

    for label, x in items:
        ref = x.view(Sub) if type(x) is np.ndarray else np.asarray(x).view(Sub)
        for call in (via_set, lambda arr: ctx.infer([arr], outs()),
                     lambda arr: ctx.infer([arr], outs(), fast_only=True)):
            same(outcome(lambda: call(x)), outcome(lambda: call(ref)), label)
    del mm


@pytest.mark.parametrize("name", ["tiny_relu", "multi_io"])
def test_outs_read_as_the_export_reads_them(track, name):
    ctx = track.model(name)
    xs = user_inputs(ctx, np.random.default_rng(3))
    attrs = ctx.output_attrs
    rest = lambda: [np.zeros(a.dims, np.float32) for a in attrs[1:]]  # noqa: E731

    def via_get(out):
        ctx.inputs_set(xs)
        ctx.run()
        return ctx.outputs_get(True, out)

    for label, bad in variants(tuple(attrs[0].dims), np.float32, np.random.default_rng(4)):
        ref = bad.view(Sub) if type(bad) is np.ndarray else np.asarray(bad).view(Sub)
        for call in (lambda out: ctx.infer(xs, out), via_get):
            a = outcome(lambda: call([bad] + rest()))
            if bad.flags.writeable and bad.dtype.kind in "biuf":
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    bad[...] = 0                  # the second call writes afresh
            b = outcome(lambda: call([ref] + rest()))
            same(a, b, label)
        before = sys.getrefcount(bad)
        for _ in range(20):
            outcome(lambda: ctx.infer(xs, [bad] + rest()))
            outcome(lambda: ctx.infer(xs, [bad] + rest(), fast_only=True))
        gc.collect()
        assert sys.getrefcount(bad) == before, label
