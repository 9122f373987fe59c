"""Context.infer: inputs_set + run + outputs_get(out=) in one crossing gives what the three
calls give, keeps their rules (flows, shape sets, buffer checks, custom-op errors) and their
messages, and crosses once for every form of input (Input objects checked by inputs_set's
general path): no call of another thread comes between its three."""

from __future__ import annotations

import numpy as np
import pytest

from rknnx import errors as E
from rknnx.lowlevel import Input, QueryCmd, TensorFormat

from helpers import user_inputs

SAMPLES = ("tiny_relu", "tiny_int8_add", "multi_io", "classifier", "detector_random", "dynamic")


def outs_for(ctx, want_float):
    return [np.empty(a.dims, np.float32 if want_float else a.dtype) for a in ctx.output_attrs]


@pytest.mark.parametrize("name", SAMPLES)
@pytest.mark.parametrize("want_float", [True, False], ids=["float", "raw"])
def test_infer_equals_the_three_calls(track, general_platform, name, want_float):
    a_ctx = track.model(name, general_platform)
    b_ctx = track.model(name, general_platform)
    for ctx in (a_ctx, b_ctx):
        if ctx.is_dynamic:
            ctx.set_input_shapes(ctx.input_attrs)
    rng = np.random.default_rng(7)
    for _ in range(3):
        xs = user_inputs(a_ctx, rng)
        got = a_ctx.infer(xs, outs_for(a_ctx, want_float), want_float=want_float)
        b_ctx.inputs_set(xs)
        frame = b_ctx.run()
        want = b_ctx.outputs_get(want_float, outs_for(b_ctx, want_float))
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)
        assert a_ctx.last_frame_id == b_ctx.last_frame_id == frame
    assert a_ctx.flow == "general"


def test_other_inputs_cross_once_too(track):
    ctx = track.model("classifier")
    img = np.random.default_rng(1).integers(0, 256, (1, 224, 224, 3), dtype=np.uint8)
    ref = ctx.infer([img], outs_for(ctx, True))[0].copy()
    nchw = np.ascontiguousarray(img.transpose(0, 3, 1, 2))
    got = ctx.infer([Input(nchw, fmt=TensorFormat.NCHW)], outs_for(ctx, True))[0]
    np.testing.assert_array_equal(got, ref)
    strided = np.zeros((1, 224, 448, 3), np.uint8)[:, :, ::2]
    strided[...] = img
    with pytest.raises(ValueError, match="C-contiguous"):      # inputs_set's own message
        ctx.infer([strided], outs_for(ctx, True))


def test_errors_are_the_three_calls_errors(track):
    ctx = track.model("tiny_relu")
    x = np.float32([[1, -2]])
    with pytest.raises(ValueError, match=r"^out must hold one buffer per output|out\[0\]|"
                                         r"output 0"):
        ctx.infer([x], [np.empty((1, 3), np.float32)])
    with pytest.raises(ValueError, match="writable"):
        ro = np.empty((1, 2), np.float32)
        ro.flags.writeable = False
        ctx.infer([x], [ro])
    with pytest.raises(ValueError, match="expects 8 bytes"):
        ctx.infer([np.float32([1, 2, 3])], [np.empty((1, 2), np.float32)])
    dyn = track.model("dynamic")
    with pytest.raises(ValueError, match="choose the shape set of your data"):
        dyn.infer([np.zeros((1, 64, 64, 3), np.uint8)], outs_for(dyn, True))
    zc = track.model("tiny_relu")
    a = zc.input_attrs[0]
    zc.set_io_mem(track.mem(zc.create_mem(a.size_with_stride)), a)
    with pytest.raises(E.FlowError):
        zc.infer([x], [np.empty((1, 2), np.float32)])
    ctx.close()
    with pytest.raises(ValueError, match="on closed Context"):
        ctx.infer([x], [np.empty((1, 2), np.float32)])


def test_a_failed_run_raises_its_status(track, emu):
    ctx = track.model("tiny_relu")
    x = np.float32([[1, -2]])
    with emu.injected("rknn_run", 1, "RKNN_ERR_TIMEOUT"):
        with pytest.raises(E.RKNNTimeoutError) as ei:
            ctx.infer([x], [np.empty((1, 2), np.float32)])
    assert ei.value.func == "rknn_run"
    # the context goes on
    np.testing.assert_array_equal(ctx.infer([x], [np.empty((1, 2), np.float32)])[0],
                                  [[1, 0]])


@pytest.mark.parametrize("out, exc, match", [
    (None, TypeError, "out must be a sequence"),
    ("ab", TypeError, "out must be a sequence"),
    ([], ValueError, "one buffer per output: expected 1, got 0"),
    ([np.empty((1, 2), np.float32)] * 2, ValueError, "one buffer per output"),
    ([np.empty((1, 3), np.float32)], ValueError, r"out\[0\]"),
    ([b"12345678"], ValueError, "writable"),
], ids=["none", "str", "empty", "two", "size", "readonly"])
@pytest.mark.parametrize("as_input", [False, True], ids=["fast", "Input"])
def test_a_wrong_out_is_refused_before_anything_runs(track, emu, out, exc, match, as_input):
    # whatever path infer takes, a wrong `out` costs neither an inputs_set nor a run
    ctx = track.model("tiny_relu")
    x = np.float32([[1, -2]])
    emu.reset_counters()
    with pytest.raises(exc, match=match):
        ctx.infer([Input(x)] if as_input else [x], out)
    c = emu.counters()
    assert (c["runs"], c["bytes_in"]) == (0, 0)
    assert ctx.flow == "none"


def test_threads_sharing_a_context_never_run_on_each_others_inputs(track):
    """Two threads on one context, one with plain arrays (checked in C), one with NCHW
    Input objects (inputs_set's general path): each gets the outputs of its own inputs,
    because all three calls of either run under one hold of the context's lock."""
    import threading

    ctx = track.model("classifier")
    rng = np.random.default_rng(4)
    imgs = [rng.integers(0, 256, (1, 224, 224, 3), dtype=np.uint8) for _ in range(2)]
    want = [ctx.infer([img], outs_for(ctx, True))[0].copy() for img in imgs]
    assert not np.array_equal(want[0], want[1])
    nchw = np.ascontiguousarray(imgs[1].transpose(0, 3, 1, 2))
    wrong = []

    def work(k):
        out = outs_for(ctx, True)
        for _ in range(60):
            items = [imgs[0]] if k == 0 else [Input(nchw, fmt=TensorFormat.NCHW)]
            got = ctx.infer(items, out)[0]
            if not np.array_equal(got, want[k]):
                wrong.append(k)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not wrong


def test_a_closed_bound_mem_is_refused_by_infer_too(track):
    """infer keeps run()'s rule: a mem bound with set_internal_mem that was closed is
    refused before the runtime sees the context."""
    ctx = track.model("tiny_relu")
    size = ctx.query(QueryCmd.MEM_SIZE).total_internal_size
    mem = ctx.create_mem(max(size, 64))
    ctx.set_internal_mem(mem)
    x = np.float32([[1, -2]])
    np.testing.assert_array_equal(ctx.infer([x], outs_for(ctx, True))[0], [[1, 0]])
    mem.close()
    with pytest.raises(ValueError, match="was closed; bind another one"):
        ctx.infer([x], outs_for(ctx, True))


def test_out_buffers_are_checked_against_the_current_shapes(track):
    # the output layouts the checks keep per attribute set follow a shape change, in
    # infer and in outputs_get(out=) alike: buffers of the shapes before are refused
    ctx = track.model("dynamic")
    before = None
    for h, w in ((128, 160), (64, 64), (128, 160)):
        a = ctx.input_attrs[0]
        a.dims = (1, h, w, 3)
        ctx.set_input_shapes([a])
        xs = [np.zeros((1, h, w, 3), np.uint8)]                # a list, read in place
        if before is not None:
            with pytest.raises(ValueError, match=r"out\[0\]"):
                ctx.infer(xs, before)
        outs = outs_for(ctx, True)
        ctx.infer(xs, outs)
        if before is not None:
            with pytest.raises(ValueError, match=r"out\[0\]"):
                ctx.outputs_get(True, before)
        ctx.outputs_get(True, outs)
        before = outs


def test_fast_only_runs_the_plain_case_or_nothing(track, emu):
    """infer(fast_only=True): exact buffers run; anything else returns None having called
    nothing (no run counted, the flow still unchosen); runtime errors still raise."""
    ctx = track.model("classifier")
    img = np.random.default_rng(2).integers(0, 256, (1, 224, 224, 3), dtype=np.uint8)
    out = outs_for(ctx, True)
    runs = emu.counters()["runs"]
    for inputs, o in (([img[0]], out),                                  # 3-D: not exact
                      ([img.reshape(-1)], out),                         # flat
                      ([img[None]], out),                               # 5-D
                      ([img.astype(np.float64)], out),                  # not a runtime type
                      ([Input(img)], out),                              # an Input object
                      ([np.ascontiguousarray(img.transpose(0, 3, 1, 2))], out),
                      ([img, img], out),                                # two for one input
                      ([img], [np.empty((1, 5), np.float32)]),          # a wrong out
                      ([img], out[0])):                                 # out not a sequence
        assert ctx.infer(inputs, o, fast_only=True) is None
    assert emu.counters()["runs"] == runs and ctx.flow == "none"
    got = ctx.infer([img], out, fast_only=True)
    # a new list of the arrays written
    assert got is not out and len(got) == len(out) and all(g is o for g, o in zip(got, out))
    assert emu.counters()["runs"] == runs + 1
    np.testing.assert_array_equal(out[0], ctx.infer([img], outs_for(ctx, True))[0])
    emu.inject_error("rknn_run", 1, "RKNN_ERR_PARAM_INVALID")
    with pytest.raises(E.ParamInvalidError):
        ctx.infer([img], out, fast_only=True)
    ctx.close()
    assert ctx.infer([img], out, fast_only=True) is None


class _Sub(np.ndarray):
    pass


def test_fast_only_takes_what_the_facades_out_check_takes(track, emu):
    """fast_only makes Model.run's checks of `out` (rknnx._tensors.check_out) and of its
    inputs' kind in C: plain numpy arrays only, each out array of its attribute's exact
    dims, none sharing memory with another.  Anything else returns None having called
    nothing; without fast_only the same buffers run (infer's own rules are unchanged)."""
    ctx = track.model("multi_io")
    xs = user_inputs(ctx, np.random.default_rng(4))
    want = ctx.infer(xs, outs_for(ctx, True))
    runs = emu.counters()["runs"]
    out = outs_for(ctx, True)
    buf = np.zeros(sum(o.nbytes for o in out) + 8, np.uint8)
    shifted = list(out)                    # out[1] starts 8 bytes into out[0]'s memory
    shifted[0] = buf[:out[0].nbytes].view(np.float32).reshape(out[0].shape)
    shifted[1] = buf[8:8 + out[1].nbytes].view(np.float32).reshape(out[1].shape)
    views, off = [], 0                     # disjoint views of one buffer: taken
    for o in out:
        views.append(buf[off:off + o.nbytes].view(np.float32).reshape(o.shape))
        off += o.nbytes
    cases = {
        "an input subclass": ([xs[0].view(_Sub)] + xs[1:], out),
        "an input memoryview": ([memoryview(xs[0])] + xs[1:], out),
        "an out subclass": (xs, [out[0].view(_Sub)] + out[1:]),
        "an out memoryview": (xs, [memoryview(out[0])] + out[1:]),
        "an out of other dims": (xs, [out[0].reshape(out[0].shape[1:])] + out[1:]),
        "the same out twice": (xs, [out[0], out[0]] + out[2:]),
        "outs sharing memory": (xs, shifted),
    }
    for name, (inputs, o) in cases.items():
        assert ctx.infer(inputs, o, fast_only=True) is None, name
    assert emu.counters()["runs"] == runs
    got = ctx.infer(xs, views, fast_only=True)
    assert got is not views and all(g is v for g, v in zip(got, views))
    assert len(got) == len(views) and emu.counters()["runs"] == runs + 1
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    for name in ("an input subclass", "an input memoryview", "an out subclass",
                 "an out memoryview", "an out of other dims"):
        inputs, o = cases[name]
        got = ctx.infer(inputs, o)         # the documented calls' rules take them
        for g, w in zip(got, want):
            np.testing.assert_array_equal(np.asarray(g).reshape(w.shape), w)


@pytest.mark.parametrize("want_float", [True, False], ids=["float", "raw"])
def test_infer_fast_is_infer_fast_only(track, want_float):
    """Context._infer_fast(inputs, out, want_float) (Model.run's call, by position) runs and
    declines what infer(..., fast_only=True) runs and declines, with the same outputs."""
    a_ctx = track.model("multi_io")
    b_ctx = track.model("multi_io")
    xs = user_inputs(a_ctx, np.random.default_rng(11))
    got = a_ctx._infer_fast(xs, outs_for(a_ctx, want_float), want_float)
    want = b_ctx.infer(xs, outs_for(b_ctx, want_float), want_float=want_float, fast_only=True)
    assert got is not None and want is not None
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    wrong = outs_for(a_ctx, not want_float)
    if any(w.dtype != o.dtype for w, o in zip(wrong, outs_for(a_ctx, want_float))):
        assert a_ctx._infer_fast(xs, wrong, want_float) is None
    assert a_ctx._infer_fast([x.view(type("Sub", (np.ndarray,), {})) for x in xs],
                             outs_for(a_ctx, want_float), want_float) is None
    with pytest.raises(TypeError):
        a_ctx._infer_fast(xs, outs_for(a_ctx, want_float), want_float=want_float)
