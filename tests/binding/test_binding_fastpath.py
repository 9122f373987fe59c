"""The general flow's fast paths agree with the general path.

``Context.inputs_set`` checks a list or tuple of plain buffers in C against facts cached
per attribute set, and hands anything else (an :class:`Input`, another sequence type, a
single buffer) or any buffer that fails a check to the general path.  So every input
given in a fast form must give the same outputs, or the same error (type and message),
as the same data wrapped in ``Input`` objects; and the cache must follow
``set_input_shapes`` / ``set_input_shape``.  ``outputs_get`` tracks its groups in a list
threaded through them and copies ``Output.attr`` lazily: the lifetime rules hold.
"""

from __future__ import annotations

import gc

import numpy as np
import pytest

from rknnx.lowlevel import Input, TensorType


class Seq(list):
    """A list subclass: always the general path."""


def forms(bufs):
    """The same inputs in the fast forms and in the general path's forms."""
    return {
        "fast list": list(bufs),
        "fast tuple": tuple(bufs),
        "general Input": [Input(b) for b in bufs],
        "general subclass": Seq(bufs),
    }


def outcome(ctx, inputs):
    """What inputs_set + run + outputs_get give: the outputs, or the error raised."""
    try:
        ctx.inputs_set(inputs)
    except Exception as e:
        return ("error", type(e), str(e))
    ctx.run()
    with ctx.outputs_get(want_float=True) as outs:
        return ("ok", [np.asarray(o).copy() for o in outs])


def assert_all_same(ctx, bufs):
    """Every form of `bufs` gives what the general Input form gives; returns that."""
    results = {name: outcome(ctx, x) for name, x in forms(bufs).items()}
    ref = results["general Input"]
    for name, got in results.items():
        assert got[0] == ref[0], (name, got, ref)
        if ref[0] == "ok":
            assert len(got[1]) == len(ref[1])
            for a, b in zip(got[1], ref[1]):
                np.testing.assert_array_equal(a, b, err_msg=name)
        else:
            assert got[1:] == ref[1:], name
    return ref


def inputs_of(ctx, rng, dtypes=None):
    return [rng.standard_normal(a.dims).astype(a.dtype if dtypes is None else dtypes[i])
            if np.dtype(a.dtype if dtypes is None else dtypes[i]).kind == "f" else
            rng.integers(0, 100, size=a.dims).astype(a.dtype if dtypes is None else dtypes[i])
            for i, a in enumerate(ctx.input_attrs)]


# ---- inputs_set: results ----------------------------------------------------------------------
@pytest.mark.parametrize("model", ["tiny_relu", "tiny_int8_add", "multi_io", "classifier"])
def test_fast_and_general_give_the_same_outputs(track, bh, general_platform, model):
    ctx = track.model(model, general_platform)
    rng = np.random.default_rng(3)
    ref = assert_all_same(ctx, inputs_of(ctx, rng))
    assert ref[0] == "ok"
    # every type the runtime converts from (uint8, int8, float16, float32)
    for dt in (np.uint8, np.int8, np.float16, np.float32):
        ref = assert_all_same(ctx, inputs_of(ctx, rng, [dt] * ctx.n_input))
        assert ref[0] == "ok", (dt, ref)


def test_fast_path_accepts_readonly_bytes_and_shape_variants(track, bh, general_platform):
    ctx = track.model("multi_io", general_platform)
    rng = np.random.default_rng(5)
    bufs = inputs_of(ctx, rng)
    for b in bufs:
        b.setflags(write=False)                          # read-only is fine for an input
    assert assert_all_same(ctx, bufs)[0] == "ok"
    image, feat, seq = bufs
    variants = [
        [bytes(image), feat, seq],                       # plain bytes: format B, 1-D
        [memoryview(image.tobytes()), feat, seq],
        [image[0], feat, seq],                           # leading ones dropped
        [image[None], feat[None], seq[None]],            # leading ones added
        [image.reshape(-1), feat.reshape(-1), seq.reshape(-1)],   # 1-D, right size
        [image.view(np.uint8), feat, seq],               # int8 data as uint8: converted
        [image],                                         # fewer inputs than the model's
    ]
    for bufs in variants:
        assert_all_same(ctx, bufs)


def test_fast_path_holds_no_export_after_the_call(track, bh, general_platform):
    ctx = track.model("tiny_relu", general_platform)
    a = ctx.input_attrs[0]
    good = bytearray(a.n_elems * 4)
    view = np.frombuffer(good, np.float32).reshape(a.dims)
    ctx.inputs_set([view])
    del view
    good.append(0)                                       # BufferError if still exported
    bad = bytearray(3)
    with pytest.raises(ValueError):
        ctx.inputs_set([bad])
    bad.append(0)


# ---- inputs_set: errors ----------------------------------------------------------------------
def _error_cases(ctx):
    image, feat, seq = inputs_of(ctx, np.random.default_rng(9))
    return {
        "float64 (no RKNN type)": [image, feat.astype(np.float64), seq],
        "int32 (not convertible)": [image, feat, seq.astype(np.int32)],
        "big-endian float": [image, feat, seq.astype(">f4")],
        "bool": [image.astype(bool), feat, seq],
        "too few bytes": [image, feat[:, :32], seq],
        "too many bytes": [image, np.zeros((1, 65), np.float16), seq],
        "same size, wrong shape": [image.reshape(1, 3, 32, 32), feat, seq],
        "same size, wrong shape 2": [image, feat.reshape(2, 32), seq],
        "non-contiguous": [image, feat, np.zeros((1, 16, 8), np.float32).transpose(0, 2, 1)],
        "strided": [image, np.zeros((1, 128), np.float16)[:, ::2], seq],
        "None": [image, None, seq],
        "not a buffer": [image, feat, object()],
        "a str": ["abc", feat, seq],
        "too many inputs": [image, feat, seq, seq],
        "no inputs": [],
    }


ERROR_CASES = ["float64 (no RKNN type)", "int32 (not convertible)", "big-endian float", "bool",
               "too few bytes", "too many bytes", "same size, wrong shape",
               "same size, wrong shape 2", "non-contiguous", "strided", "None", "not a buffer",
               "a str", "too many inputs", "no inputs"]


@pytest.mark.parametrize("case", ERROR_CASES)
def test_fast_and_general_raise_the_same_errors(track, bh, general_platform, case):
    ctx = track.model("multi_io", general_platform)
    bufs = _error_cases(ctx)[case]
    ref = assert_all_same(ctx, bufs)
    assert ref[0] == "error", ref
    # and the context still works
    assert assert_all_same(ctx, inputs_of(ctx, np.random.default_rng(1)))[0] == "ok"


def test_mixed_forms_take_the_general_path(track, bh, general_platform):
    ctx = track.model("multi_io", general_platform)
    image, feat, seq = inputs_of(ctx, np.random.default_rng(2))
    ref = outcome(ctx, [Input(image), Input(feat), Input(seq)])
    for mixed in ([image, Input(feat), seq], (Input(image), feat, seq),
                  [image, feat, Input(seq, type=TensorType.FLOAT32)]):
        got = outcome(ctx, mixed)
        assert got[0] == "ok"
        for a, b in zip(got[1], ref[1]):
            np.testing.assert_array_equal(a, b)
    # an Input with another index is honoured (the fast path never guesses)
    e1 = outcome(ctx, [image, Input(seq, index=1), Input(feat, index=2)])
    e2 = outcome(ctx, [Input(image), Input(seq, index=1), Input(feat, index=2)])
    assert e1[0] == e2[0] == "error" and e1[1:] == e2[1:]


def test_closed_and_zero_copy_contexts_refuse_the_fast_form(track, bh, general_platform):
    ctx = track.model("tiny_relu", general_platform)
    x = np.zeros(ctx.input_attrs[0].dims, np.float32)
    a = ctx.input_attrs[0]
    mem = track.mem(ctx.create_mem(a.size))
    ctx.set_io_mem(mem, a)
    errs = []
    for form in forms([x]).values():
        with pytest.raises(Exception) as ei:
            ctx.inputs_set(form)
        errs.append((type(ei.value), str(ei.value)))
    assert len(set(errs)) == 1, errs
    mem.close()
    ctx.close()
    errs = []
    for form in forms([x]).values():
        with pytest.raises(ValueError) as ei:
            ctx.inputs_set(form)
        errs.append(str(ei.value))
    assert set(errs) == {"inputs_set on closed Context"}


# ---- the cache follows the attributes -----------------------------------------------------
@pytest.mark.parametrize("single", [False, True], ids=["set_input_shapes", "set_input_shape"])
def test_shape_change_invalidates_the_cache(track, bh, general_platform, single):
    from rknnx.emulator.samples import DYNAMIC_SETS

    ctx = track.model("dynamic", general_platform)
    rng = np.random.default_rng(4)
    first = rng.integers(0, 256, size=DYNAMIC_SETS[0], dtype=np.uint8)
    a = ctx.input_attrs[0]
    a.dims = tuple(DYNAMIC_SETS[0])       # a dynamic model runs at a shape chosen first
    ctx.set_input_shapes([a])
    assert assert_all_same(ctx, [first])[0] == "ok"         # cache built for shape 0
    for dims in list(DYNAMIC_SETS[1:]) + [DYNAMIC_SETS[0]]:
        a = ctx.input_attrs[0]
        a.dims = tuple(dims)
        if single:
            ctx.set_input_shape(a)
        else:
            ctx.set_input_shapes([a])
        x = rng.integers(0, 256, size=dims, dtype=np.uint8)
        ref = assert_all_same(ctx, [x])
        assert ref[0] == "ok"
        assert [o.shape[2:] for o in ref[1]] == [(dims[1] // 2, dims[2] // 2)] * 2
        if tuple(dims) != tuple(DYNAMIC_SETS[0]):
            stale = assert_all_same(ctx, [first])             # the old shape is refused
            assert stale[0] == "error" and stale[1] is ValueError, stale
            assert f"expects {int(np.prod(dims))} bytes" in stale[2], stale


# ---- outputs ---------------------------------------------------------------------------------
def test_output_attr_is_a_stable_private_copy(track, bh, general_platform):
    ctx = track.model("multi_io", general_platform)
    ctx.inputs_set(inputs_of(ctx, np.random.default_rng(0)))
    ctx.run()
    with ctx.outputs_get() as outs:
        for o, a in zip(outs, ctx.output_attrs):
            assert o.attr is o.attr
            assert o.attr.dims == a.dims and o.attr.name == a.name
            o.attr.dims = (7,)
            assert o.attr.dims == (7,)
        assert [a.dims for a in ctx.output_attrs] != [(7,)] * ctx.n_output
    assert outs[0].attr.dims == (7,)                         # still readable once released


def test_outputs_attr_keeps_its_shape_across_set_input_shapes(track, bh, general_platform):
    from rknnx.emulator.samples import DYNAMIC_SETS

    ctx = track.model("dynamic", general_platform)
    x = np.zeros(DYNAMIC_SETS[0], np.uint8)
    a = ctx.input_attrs[0]
    a.dims = tuple(DYNAMIC_SETS[0])
    ctx.set_input_shapes([a])
    ctx.inputs_set([x])
    ctx.run()
    outs = ctx.outputs_get()
    before = [o.shape for o in outs]
    outs.release()
    a = ctx.input_attrs[0]
    a.dims = DYNAMIC_SETS[1]
    ctx.set_input_shapes([a])
    assert [o.attr.dims for o in outs] == [b for b in before]
    assert ctx.output_attrs[0].dims != outs[0].attr.dims


@pytest.mark.parametrize("order", ["release middle", "drop first", "drop last", "keep all"])
def test_close_releases_every_group_left(track, bh, emu, general_platform, order):
    ctx = track.model("tiny_relu", general_platform)
    ctx.inputs_set([np.zeros(ctx.input_attrs[0].dims, np.float32)])
    ctx.run()
    groups = [ctx.outputs_get(want_float=bool(i % 2)) for i in range(4)]
    assert emu.counters()["live_output_buffers"] >= 4
    if order == "release middle":
        groups[1].release()
        groups[2].release()
    elif order == "drop first":
        del groups[0]
    elif order == "drop last":
        del groups[-1]
    gc.collect()
    ctx.close()
    assert all(g.released for g in groups)
    del groups
    gc.collect()


def test_view_keeps_its_group_linked_until_close_refuses(track, bh, general_platform):
    ctx = track.model("tiny_relu", general_platform)
    ctx.inputs_set([np.zeros(ctx.input_attrs[0].dims, np.float32)])
    ctx.run()
    view = np.asarray(ctx.outputs_get(want_float=True)[0])    # Outputs dropped, view kept
    gc.collect()
    with pytest.raises(BufferError, match="1 buffer view"):
        ctx.close()
    assert view.shape == (1, 2)
    del view
    gc.collect()
    ctx.close()
    assert ctx.closed
