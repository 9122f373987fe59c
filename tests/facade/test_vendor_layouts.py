"""The NPU's native layouts as the vendor's runtimes describe them, read by the binding and
the facade: every layout path of a zero-copy session (and of the low-level bindings a
board user writes) gives, once its layout is undone, the numbers ``Model.run`` gives for
the same input on the same vendor file.

The vendor files run on the emulator's stand-in (docs/standin.md), which answers every
query as the recorded vendor runtime does (librknnrt 1.6.0 for RK35xx, the mini runtime
2.3.2 for the RV1106 family and RK2118) and whose run is a digest of the input bytes: equal
inputs give equal outputs whatever the path.  The vendor's answers these tests rest on, and
the binding's rule for each, are in docs/abi-notes.md ("Native layouts: what the binding
reads from an attribute").

Skipped, saying why, without the vendor data (tests/helpers.py, NO_VENDOR_DATA)."""

from __future__ import annotations

import gc
import os

import numpy as np
import pytest

import rknnx
from rknnx import layout, lowlevel as ll, modelfile
from rknnx.lowlevel import QueryCmd, TensorFormat, TensorType

from helpers import NO_VENDOR_DATA, live, path_id, user_inputs, vendor_models

FILES = vendor_models()
if not FILES:
    pytestmark = pytest.mark.skip(reason=NO_VENDOR_DATA)
elif os.environ.get("RKNNX_RUNTIME") == "emulator-1.5.2":
    # the files the default 2.x runtime serves (test_vendor_models' rule); the emulator
    # playing 1.5.2 is judged file by file against the recorded 1.5.2 (test_vendor_judge)
    pytestmark = pytest.mark.skip(reason="the 1.5.2 stand-in is judged by test_vendor_judge")

#: the chips the RV1106 mini runtime serves (the emulator plays it for them)
MINI = next(f for f in modelfile.RUNTIME_FACTS if f.runtime.startswith("librknnmrt")).chips


def _served(mf) -> bool:
    """The default library serves the file on its chip (docs/standin.md): the mini runtime
    reads container 0x1004 only, the 2.x runtime containers 2 and 6."""
    return mf.container.version in ((0x1004,) if mf.chip in MINI else (2, 6))


_READ = {p: modelfile.read(p) for p in FILES}
#: served files whose run needs nothing more (custom operators need a registered kernel)
RUNNABLE = [p for p in FILES if _served(_READ[p]) and not _READ[p].custom_ops]
STATIC = [p for p in RUNNABLE if not _READ[p].dynamic]
DYNAMIC = [p for p in RUNNABLE if _READ[p].dynamic]
#: the static files on chips with the general flow (pass_through inputs)
GENERAL = [p for p in STATIC if _READ[p].chip not in MINI]


_id = path_id


def _named(*stems):
    """The files of these stems that are here (a test of a named vendor fact)."""
    return [p for p in FILES if p.stem in stems]


@pytest.fixture
def opened(emu):
    """Open a vendor file as the chip it was built for; closed at teardown, the emulator's
    live counters back at their baseline."""
    before = live(emu)
    models = []

    def open_(path):
        emu.set_platform(_READ[path].chip)
        m = rknnx.Model(str(path))
        models.append(m)
        return m

    yield open_
    gc.collect()
    for m in reversed(models):
        m.close()
    gc.collect()
    assert live(emu) == before


# ---- the stand-in's run in numpy (docs/standin.md), the oracle of the native inputs --------
def _digest(model, packed):
    """The outputs the stand-in computes from each input's packed model-side bytes, in the
    outputs' model types and logical shapes."""
    P, M = 1099511628211, (1 << 64) - 1
    d = 14695981039346656037
    for i, b in enumerate(packed):
        b = b + b"\0" * (-len(b) % 8)
        for w in np.frombuffer(b, "<u8").tolist():
            d = ((d ^ w) * P) & M
        d = ((d ^ (i + 1)) * P) & M
    res = []
    for o, t in enumerate(model.outputs):
        p = ((d ^ (((o + 1) * 0x9E3779B97F4A7C15) & M)) & M) >> 56
        b = (p + np.arange(t.size)) % 256
        if t.dtype == np.int8:
            v = b.astype(np.uint8).view(np.int8)
        elif t.dtype == np.uint8:
            v = b.astype(np.uint8)
        elif t.dtype.kind in "iu":
            v = (b - 128).astype(t.dtype)
        else:
            v = ((b.astype(np.float32) - 128) / 32).astype(t.dtype)
        res.append(v.reshape(t.shape))
    return res


def _model_type_frame(model, rng):
    """One array per input in the model's own type and logical layout: what the NPU takes."""
    xs = []
    for t in model.inputs:
        if t.dtype.kind == "f":
            xs.append(rng.standard_normal(t.shape).astype(t.dtype))
        else:
            info = np.iinfo(t.dtype)
            xs.append(rng.integers(info.min, info.max + 1, t.shape).astype(t.dtype))
    return xs


def _to_nchw(native, info):
    """A native output (the model's type) in the output's logical layout and type."""
    nat = info.native
    if nat.layout == "NC1HWC2":
        return ll.nc1hwc2_to_nchw(native, info.shape[1])
    return np.asarray(native).reshape(info.shape)


def _nhwc(a):
    return a.transpose(0, 2, 3, 1) if a.ndim == 4 else a


def _assert_equal(got, want, what):
    assert len(got) == len(want), what
    for i, (g, w) in enumerate(zip(got, want)):
        g = np.asarray(g)
        assert g.shape == w.shape and g.dtype == w.dtype, (what, i, g.shape, w.shape)
        np.testing.assert_array_equal(g, w, err_msg=f"{what}: output {i}")


def _assert_dequantized(got, raw, want, model, what):
    """A float read of a quantized output.  On RK3588 and RK3566, the general flow's floats
    bit for bit: the vendor's rknn_outputs_get(want_float=1) takes q*scale - zp*scale, each
    product rounded to float32, on the whole C2 blocks of channels on RK3588 and the whole
    groups of 8 pixels on RK3566, (q - zp)*scale elsewhere (yolo_heads, cls_img, tiny,
    multi_io, librknnrt 1.5.2 and 1.6.0; docs/abi-notes.md, "NPU-side bytes"), and read()
    does as it does.  Elsewhere (no recording), the binding's (q - zp)*scale of the raw
    numbers, and the general flow's floats to within the rounding of the other formula."""
    for i, (g, r, w, t) in enumerate(zip(got, raw, want, model.outputs)):
        if t.quant.kind == "affine" and t.dtype.kind in "iu":
            # (float16 tensors say AFFINE too, zp 0 and scale 1: fp16_net_rk3588, 1.6.0)
            s, z = np.float32(t.quant.scale), np.float32(t.quant.zero_point)
            q = r.astype(np.float32)
            scalar, vector = (q - z) * s, q * s - np.float32(z * s)
            if model.chip in ("RK3588", "RK3566", "RK3568"):
                if not what.startswith("layout."):
                    np.testing.assert_array_equal(g, w, err_msg=f"{what}: output {i}")
                # rknnx.layout has no chip: it takes one of the two formulas for every
                # element, where the runtime picks by C2 block or pixel group (docs/abi-notes.md)
                assert np.all((g == scalar) | (g == vector)), (what, i)
                continue
            np.testing.assert_array_equal(g, scalar, err_msg=f"{what}: {i}")
            bound = np.float32(abs(t.quant.scale) * (256 + abs(t.quant.zero_point)))
            np.testing.assert_allclose(g, w, rtol=0, atol=4 * np.spacing(bound),
                                       err_msg=f"{what}: output {i}")
        else:
            np.testing.assert_array_equal(g, w.astype(g.dtype), err_msg=f"{what}: {i}")


# ---- the session's layout options against Model.run -------------------------------------
@pytest.mark.parametrize("kind", ["float32", "raw", "native"])
@pytest.mark.parametrize("path", STATIC, ids=_id)
def test_session_outputs_are_the_general_flows(opened, path, kind):
    m = opened(path)
    frame = user_inputs(m, np.random.default_rng(0))
    want, raw = m.run(*frame), m.run(*frame, raw=True)
    with m.zero_copy(outputs=kind) as s:
        views = s.outputs
        got = s.run_arrays(*frame)
        if kind == "native":
            # the NPU's own layout, as NATIVE_OUTPUT_ATTR says: undone, the model's numbers
            assert [v.shape for v in views] == [t.native.shape for t in m.outputs]
            _assert_equal([_to_nchw(g, t) for g, t in zip(got, m.outputs)], raw,
                          "native outputs, unpacked")
        else:
            _assert_equal(got, want if kind == "float32" else raw, f"{kind} outputs")
        reads = [s.read(i) for i in range(len(m.outputs))]
        if kind == "float32":             # the runtime's floats, as the general flow's
            _assert_equal(reads, want, "read() of float32 outputs")
        else:
            _assert_dequantized(reads, raw, want, m, f"read() of {kind} outputs")
        nhwc = [s.read(i, layout="NHWC") for i in range(len(m.outputs))]
        _assert_equal(nhwc, [_nhwc(r) for r in reads], f"read(layout='NHWC') of {kind}")
        outs = [np.full(r.shape, np.nan, np.float32) for r in reads]
        for i, o in enumerate(outs):
            assert s.read(i, out=o) is o
        _assert_equal(outs, reads, f"read(out=) of {kind}")
        into = [np.empty_like(g) for g in got]
        assert s.run_arrays(*frame, out=into) is not None
        _assert_equal(into, got, f"run_arrays(out=) of {kind}")
        del views, got, reads, nhwc, outs, into


@pytest.mark.parametrize("path", STATIC, ids=_id)
def test_native_input_views_feed_the_model_its_bytes(opened, path):
    # inputs="native": NATIVE_INPUT_ATTR views (rows of w_stride pixels: tiny_rk3588_i8's 8
    # pixels in rows of 16, librknnrt 1.6.0), the model's type, taken as they are
    m = opened(path)
    xs = _model_type_frame(m, np.random.default_rng(1))
    if path.name == "fp16_net_rk2118.rknn":
        # the mini runtime takes no float16 input as it is: set_io_mem with pass_through=1
        # is -5 (fp16_net_rk2118, librknnmrt 2.3.2), so a native-input session is refused
        with pytest.raises(rknnx.errors.ParamInvalidError, match=r"rknn_set_io_mem") as e:
            m.zero_copy(outputs="raw", inputs="native")
        assert e.value.code == -5
        return
    with m.zero_copy(outputs="raw", inputs="native") as s:
        for i, (x, t) in enumerate(zip(xs, m.inputs)):
            raw = np.frombuffer(s._in_mems[i].raw(), np.uint8)
            raw[...] = 0x5A                      # the padding must not be read
            del raw
            v = s.inputs[i]
            v[...] = x if v.shape == x.shape else layout.to_native(x, t)
            del v
        s.run()
        got = [np.array(o) for o in s.outputs]
    _assert_equal(got, _digest(m, [x.tobytes() for x in xs]), "native inputs")


def _native_buffer(info, x):
    """x (the model's type, logical) in the native layout of input `info`: NHWC in rows of
    the native w_stride (an (N, H, w_stride, C) array, the padding zero), NC1HWC2 blocked,
    else as it is."""
    nat = info.native
    if nat.layout == "NC1HWC2":
        return layout.to_native(x, info)
    if nat.layout != "NHWC" or nat.strides == x.strides:
        return x
    n, h, w, c = nat.shape
    assert nat.strides[3] == x.itemsize and nat.strides[2] == c * x.itemsize
    buf = np.zeros((n, h, nat.strides[1] // nat.strides[2], c), x.dtype)
    buf[:, :, :w] = x
    return buf


@pytest.mark.parametrize("path", GENERAL, ids=_id)
def test_pass_through_inputs_of_the_general_flow(opened, path):
    # Model.run(pass_through=) and RKNNLite's inputs_pass_through hand native bytes over as
    # they are: the same outputs as the session's native input views
    from rknnx.lite import RKNNLite

    m = opened(path)
    xs = _model_type_frame(m, np.random.default_rng(2))
    bufs = [_native_buffer(t, x) for t, x in zip(m.inputs, xs)]
    want = _digest(m, [x.tobytes() for x in xs])
    got = m.run(*bufs, raw=True, pass_through=[True] * len(bufs))
    _assert_equal(got, want, "Model.run(pass_through=)")
    floats = m.run(*bufs, pass_through=[True] * len(bufs))
    lite = RKNNLite(raise_errors=True)
    assert lite.load_rknn(str(path)) == 0
    assert lite.init_runtime() == 0
    try:
        res = lite.inference(inputs=bufs, inputs_pass_through=[1] * len(bufs))
    finally:
        lite.release()
    _assert_equal([np.asarray(r).reshape(f.shape) for r, f in zip(res, floats)], floats,
                  "RKNNLite inputs_pass_through")


# ---- the low-level bindings a board program makes -------------------------------------------
def _bind_plain_inputs(ctx, frame, mems):
    """Bind every input as the general flow takes it (uint8 pixels / the model type, the
    attribute's layout) and write the frame."""
    for i, x in enumerate(frame):
        a = ctx.input_attrs[i]
        a.type = ll.type_of_dtype(x.dtype)
        mem = ctx.create_mem(a.alloc_size)
        mems.append(mem)
        ctx.set_io_mem(mem, a)
        v = np.asarray(mem)
        v[...] = x
        del v


def _run_with_outputs(m, frame, out_attr):
    """Run `frame` in a context of `m` whose outputs are bound with ``out_attr(ctx, i)``;
    (attrs, outputs as the mems' views show them), the mems prefilled with 0x5a."""
    ctx = m.new_context()
    mems = []
    try:
        _bind_plain_inputs(ctx, frame, mems)
        attrs, outs = [], []
        for i in range(len(m.outputs)):
            a = out_attr(ctx, i)
            mem = ctx.create_mem(a.alloc_size)
            mems.append(mem)
            raw = np.frombuffer(mem.raw(), np.uint8)
            raw[...] = 0x5A
            del raw
            ctx.set_io_mem(mem, a)
            attrs.append(a)
            outs.append(mem)
        ctx.run()
        return attrs, [np.array(o) for o in outs], [np.asarray(o).strides for o in outs]
    finally:
        for mem in mems:
            mem.close()
        ctx.close()
        gc.collect()


@pytest.mark.parametrize("path", STATIC, ids=_id)
@pytest.mark.parametrize("dtype", ["model", "float32"])
def test_native_nhwc_outputs_are_the_logical_nhwc_tensor(opened, path, dtype):
    # NATIVE_NHWC_OUTPUT_ATTR bound as the runtime answers it (RK3566 pads C to C2 in its
    # dims; RK3588 reports C and a size_with_stride rounded to C2; the mini runtime the
    # NC1HWC2 bytes), or with its type edited to FLOAT32 as the vendor's demos do: the
    # view is the output in NHWC, whatever the padding
    m = opened(path)
    frame = user_inputs(m, np.random.default_rng(3))
    want = m.run(*frame, raw=dtype == "model")

    def native_nhwc(ctx, i):
        a = ctx.query(QueryCmd.NATIVE_NHWC_OUTPUT_ATTR, i)
        if dtype == "float32":
            a.type = TensorType.FLOAT32
        return a

    attrs, got, strides = _run_with_outputs(m, frame, native_nhwc)
    _assert_equal(got, [_nhwc(w) for w in want], f"NATIVE_NHWC outputs ({dtype})")
    for a, s, w in zip(attrs, strides, want):
        if w.ndim == 4:
            # pixels are the runtime's dims[3] channels apart in the model type (padded or
            # not), packed in a converted one
            per = a.dims[3] if dtype == "model" else w.shape[1]
            assert s[2] == per * w.itemsize and s[1] == w.shape[3] * s[2]


@pytest.mark.parametrize("path", STATIC, ids=_id)
@pytest.mark.parametrize("dtype", ["model", "float32"])
def test_output_attr_bound_as_nhwc(opened, path, dtype):
    # OUTPUT_ATTR edited to NHWC (a layout of the vendor's zero-copy demos): its
    # size_with_stride is the blocked buffer on RK35xx (yolo_heads_rk3588 [1,255,8,8]:
    # 32,768 bytes for 16,320, librknnrt 1.6.0), which says nothing of the pixels
    m = opened(path)
    frame = user_inputs(m, np.random.default_rng(4))
    want = m.run(*frame, raw=dtype == "model")

    def nhwc(ctx, i):
        a = ctx.output_attrs[i]
        if len(a.dims) == 4:
            n, c, h, w = a.dims
            a.dims, a.fmt = (n, h, w, c), TensorFormat.NHWC
        if dtype == "float32":
            a.type = TensorType.FLOAT32
        return a

    _, got, _ = _run_with_outputs(m, frame, nhwc)
    _assert_equal(got, [_nhwc(w) for w in want], f"OUTPUT_ATTR as NHWC ({dtype})")


# ---- the layout helpers ----------------------------------------------------------------
@pytest.mark.parametrize("path", STATIC, ids=_id)
def test_layout_helpers_undo_the_native_layouts(opened, path):
    m = opened(path)
    frame = user_inputs(m, np.random.default_rng(5))
    want, raw = m.run(*frame), m.run(*frame, raw=True)
    with m.zero_copy(outputs="native") as s:
        native = s.run_arrays(*frame)
    dense = [layout.from_native(n, t) for n, t in zip(native, m.outputs)]
    _assert_dequantized(dense, raw, want, m, "layout.from_native")
    for n, t, r in zip(native, m.outputs, raw):
        if t.native.layout == "NC1HWC2":
            again = layout.to_native(r, t)
            assert again.shape == t.native.shape
            np.testing.assert_array_equal(_to_nchw(again, t), r)
        if len(t.shape) == 4:
            np.testing.assert_array_equal(
                layout.from_native(n, t, layout="NHWC"), _nhwc(layout.from_native(n, t)))


# ---- dynamic shapes ------------------------------------------------------------------------
@pytest.mark.parametrize("path", DYNAMIC, ids=_id)
def test_dynamic_sessions_follow_each_shape_set(opened, path):
    # NATIVE_OUTPUT_ATTR follows the chosen shape (dynamic_nogap_rk3566/_rk3588, 1.5.2 and
    # 1.6.0): the session's native views are made anew at each set
    m = opened(path)
    rng = np.random.default_rng(6)
    for kind in ("raw", "native"):
        with m.zero_copy(outputs=kind) as s:
            for k, shapes in enumerate(m.shape_sets):
                frame = [rng.integers(0, 256, sh, dtype=np.uint8) if len(sh) == 4 else
                         rng.standard_normal(sh).astype(np.float32) for sh in shapes]
                raw = m.run(*frame, raw=True)
                s.set_shape_set(k)
                got = s.run_arrays(*frame)
                if kind == "native":
                    got = [ll.nc1hwc2_to_nchw(g, r.shape[1]) if g.ndim == 5 else g
                           for g, r in zip(got, raw)]
                _assert_equal(got, raw, f"{kind} outputs at shape set {k}")
                del got


# ---- the vendor's answers the binding relies on ---------------------------------------------
@pytest.mark.parametrize("path", _named("cls_img_rk3566", "tiny_rk3566_i8", "fp16_net_rk3566",
                                        "yolo_heads_rk3566"), ids=_id)
def test_rk3566_padded_native_nhwc_dims_are_accepted(opened, path):
    # librknnrt 1.6.0 on RK3566 pads C to C2 in NATIVE_NHWC_OUTPUT_ATTR (cls_img_rk3566:
    # [1,32,32,8] for 5 channels, n_elems and size 8192): set_io_mem takes it and the view
    # is the logical [1,32,32,5], 8 channels apart
    m = opened(path)
    with m.new_context() as ctx:
        for i, t in enumerate(m.outputs):
            a = ctx.query(QueryCmd.NATIVE_NHWC_OUTPUT_ATTR, i)
            n, c, h, w = t.shape
            c2 = 8 if t.dtype.itemsize == 1 else 4
            assert a.dims == (n, h, w, -(-c // c2) * c2) and a.dims[3] > c
            assert a.n_elems == n * h * w * a.dims[3] and a.size == a.n_elems * t.dtype.itemsize
            mem = ctx.create_mem(a.alloc_size)
            try:
                ctx.set_io_mem(mem, a)
                v = np.asarray(mem)
                assert v.shape == (n, h, w, c)
                assert v.strides[2:] == (a.dims[3] * t.dtype.itemsize, t.dtype.itemsize)
                del v
            finally:
                mem.close()
    gc.collect()


def test_a_padded_dims_attr_is_refused_where_the_runtime_did_not_pad(opened):
    # RK3588 reports the NHWC output unpadded (cls_img_rk3588, 1.6.0): padded dims there
    # are the caller's mistake, refused before C with what the runtime said
    paths = _named("cls_img_rk3588")
    if not paths:
        pytest.skip("cls_img_rk3588 is not in the vendor data")
    m = opened(paths[0])
    with m.new_context() as ctx:
        a = ctx.query(QueryCmd.NATIVE_NHWC_OUTPUT_ATTR, 0)
        assert a.dims == (1, 32, 32, 5)
        a.dims = (1, 32, 32, 16)
        mem = ctx.create_mem(1 << 16)
        try:
            with pytest.raises(ValueError, match=r"attr.dims \[1, 32, 32, 16\] do not match"):
                ctx.set_io_mem(mem, a)
            assert ctx.flow == "none"
        finally:
            mem.close()
    gc.collect()


@pytest.mark.parametrize("path", _named("yolo_heads_rv1106", "cls_img_rv1106", "tiny_rv1106_i8",
                                        "yolo_heads_rk3588"), ids=_id)
def test_native_nhwc_size_with_stride_is_an_allocation_not_padding(opened, path):
    # the mini runtime's NATIVE_NHWC_OUTPUT_ATTR size_with_stride is the NC1HWC2 bytes
    # (yolo_heads_rv1106 [1,8,8,255]: 16,384 for 16,320, librknnmrt 2.3.2); RK3588's is
    # size rounded up to C2 (yolo_heads_rk3588 [1,2,2,255]: 1,024 for 1,020, 1.6.0): the
    # buffer gets that many bytes, the pixels stay dims[3] channels apart
    m = opened(path)
    with m.new_context() as ctx:
        for i, t in enumerate(m.outputs):
            a = ctx.query(QueryCmd.NATIVE_NHWC_OUTPUT_ATTR, i)
            n, h, w, c = a.dims
            assert c == t.shape[1] and a.w_stride == 0
            assert a.strides == (h * w * c, w * c, c, 1)
            assert a.alloc_size == max(a.size_with_stride, a.size)
    gc.collect()


def test_blocked_output_sizes_are_allocated(opened):
    # OUTPUT_ATTR of yolo_heads_rk3588 output0 [1,255,8,8] int8: size 16,320,
    # size_with_stride 32,768 (librknnrt 1.6.0); NATIVE_OUTPUT_ATTR [1,16,8,8,16]: n_elems
    # and size 16,384, w_stride 0.  The session's mems hold what the runtime asks for, and
    # its views are the tensor
    paths = _named("yolo_heads_rk3588")
    if not paths:
        pytest.skip("yolo_heads_rk3588 is not in the vendor data")
    m = opened(paths[0])
    a, nat = m.outputs[0].attr, m.outputs[0].native
    assert (a.size, a.size_with_stride) == (16320, 32768)
    assert nat.shape == (1, 16, 8, 8, 16) and nat.nbytes == 16384
    with m.zero_copy(outputs="raw") as s:
        assert s._out_mems[0].size >= 32768 and s.outputs[0].shape == (1, 255, 8, 8)
    with m.zero_copy(outputs="native") as s:
        att = s.output_attrs[0]
        assert (att.n_elems, att.size, att.w_stride) == (16384, 16384, 0)
        assert s.outputs[0].shape == (1, 16, 8, 8, 16)
        assert s.outputs[0].strides == (16384, 1024, 128, 16, 1)


def test_the_mini_runtimes_native_c2_is_the_files(opened):
    # fp16_net_rk2118: NATIVE_OUTPUT_ATTR [1,5,16,16,4] float16 (librknnmrt 2.3.2), blocks
    # of 4 channels where RK3588 blocks float16 by 8: the session's native view, its
    # read() and the stand-in's native mem agree on the file's blocks
    paths = _named("fp16_net_rk2118")
    if not paths:
        pytest.skip("fp16_net_rk2118 is not in the vendor data")
    m = opened(paths[0])
    assert m.outputs[0].native.shape == (1, 5, 16, 16, 4)
    frame = user_inputs(m, np.random.default_rng(7))
    want = m.run(*frame)
    with m.zero_copy(outputs="native") as s:
        got = s.run_arrays(*frame)
        assert got[0].shape == (1, 5, 16, 16, 4)
        np.testing.assert_array_equal(s.read(0), want[0])
        del got


def test_rows_are_the_types_c2(opened):
    # NHWC input rows align to the input type's C2: tiny_rk3588_i8 W 8 -> w_stride 16,
    # size_with_stride 384; tiny_rk3566_i8 W 8 -> 8 (librknnrt 1.5.2 and 1.6.0)
    for stem, ws in (("tiny_rk3588_i8", 16), ("tiny_rk3566_i8", 8)):
        paths = _named(stem)
        if not paths:
            continue
        m = opened(paths[0])
        a = m.inputs[0].attr
        assert (a.w_stride, a.size_with_stride) == (ws, 8 * ws * 3)
        with m.zero_copy() as s:
            assert s.inputs[0].shape == (1, 8, 8, 3)
            assert s.inputs[0].strides == (8 * ws * 3, ws * 3, 3, 1)
        with m.zero_copy(inputs="native") as s:
            assert s.inputs[0].strides == (8 * ws * 3, ws * 3, 3, 1)
            assert s.inputs[0].dtype == np.int8
