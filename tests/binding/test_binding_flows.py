"""The general flow and the zero-copy flow through the binding give the same numbers on
every sample model, and both match the numpy reference of the model (the cupy oracle
pattern: one computation two ways, compared).  Also: strided zero-copy views
(w_stride != width), prealloc outputs, async frames, dynamic shapes, flow mixing."""

from __future__ import annotations

import ctypes
import zlib

import numpy as np
import pytest

import rknnx
from rknnx.lowlevel import Context, Input, QueryCmd, TensorFormat, TensorType
from rknnx.emulator import ModelBuilder, reference

from helpers import expected_outputs, to_model, user_inputs  # noqa: F401

SAMPLES = ("tiny_relu", "tiny_int8_add", "multi_io", "dynamic", "classifier", "detector_random")


# ---- the two flows ---------------------------------------------------------------------------
def run_general(ctx, xs, want_float):
    ctx.inputs_set(xs)
    ctx.run()
    with ctx.outputs_get(want_float=want_float) as outs:
        return [np.asarray(o).copy() for o in outs]


def bind_zero_copy(ctx, track, xs, want_float, out_attrs=None):
    """Bind one mem per input (uint8 NHWC for images, as the vendor demos) and output."""
    in_mems, out_mems = [], []
    for a, x in zip(ctx.input_attrs, xs):
        a.type = rknnx.lowlevel.type_of_dtype(x.dtype)
        mem = track.mem(ctx.create_mem(max(a.size_with_stride, a.nbytes_with_stride)))
        ctx.set_io_mem(mem, a)
        view = np.asarray(mem)
        assert view.shape == x.shape and view.dtype == x.dtype
        view[...] = x                       # the one copy a pipeline pays
        del view
        in_mems.append(mem)
    for a in out_attrs or ctx.output_attrs:
        if want_float:
            a.type = TensorType.FLOAT32
        mem = track.mem(ctx.create_mem(max(a.size_with_stride, a.nbytes_with_stride)))
        ctx.set_io_mem(mem, a)
        out_mems.append(mem)
    return in_mems, out_mems


def run_zero_copy(ctx, track, xs, want_float):
    _, out_mems = bind_zero_copy(ctx, track, xs, want_float)
    ctx.run()
    return [np.asarray(m).copy() for m in out_mems]


def assert_same(got, want, exact):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, g.dtype, w.shape, w.dtype)
        if exact or g.dtype.kind in "iub":
            np.testing.assert_array_equal(g, w)
        else:
            np.testing.assert_allclose(g, w, rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("name", SAMPLES)
@pytest.mark.parametrize("want_float", [False, True], ids=["native", "float"])
def test_general_and_zero_copy_agree_and_match_numpy(track, bh, general_platform, name, want_float):
    model = bh.model_bytes(name, general_platform)
    # a seed of the name that is the same in every process (str hash is salted per process,
    # which made a failure here impossible to replay)
    rng = np.random.default_rng(zlib.crc32(name.encode()) & 0xFFFF)
    g_ctx = track.model(name, general_platform)
    z_ctx = track.model(name, general_platform)
    shape_set = 0
    for ctx in (g_ctx, z_ctx):
        if ctx.is_dynamic:
            # a dynamic model runs at a shape chosen first: its largest (the plain attrs)
            ctx.set_input_shapes(ctx.input_attrs)
            shape_set = len(ctx.input_ranges[0].dyn_range) - 1
    xs = user_inputs(g_ctx, rng)
    general = run_general(g_ctx, xs, want_float)
    zero = run_zero_copy(z_ctx, track, xs, want_float)
    assert g_ctx.flow == "general" and z_ctx.flow == "zero-copy"
    assert_same(zero, general, exact=True)                # same numbers, two flows
    # integer outputs match the reference exactly; float ones to float precision
    assert_same(general, expected_outputs(model, xs, want_float, shape_set), exact=False)


@pytest.mark.parametrize("name", ["tiny_relu", "tiny_int8_add", "multi_io", "classifier"])
def test_zero_copy_only_platform_matches_numpy(track, bh, emu, name):
    # RV1106: no general API; the native NHWC output attrs of the vendor demo
    model = bh.model_bytes(name, "RV1106")
    ctx = track.model(name, "RV1106")
    xs = user_inputs(ctx, np.random.default_rng(5))
    zero = run_zero_copy(ctx, track, xs, want_float=True)
    assert_same(zero, expected_outputs(model, xs, True), exact=False)
    with pytest.raises(rknnx.RKNNError) as ei:
        track.model(name, "RV1106").inputs_set(xs)
    assert ei.value.func == "rknn_inputs_set"


def test_native_nc1hwc2_output_view_matches_nchw(track, bh, general_platform):
    """A native NC1HWC2 output exported as its true 5-D shape; regrouped it is NCHW."""
    ctx = track.model("tiny_int8_add", general_platform)
    xs = user_inputs(ctx, np.random.default_rng(3))
    native = [ctx.query(QueryCmd.NATIVE_OUTPUT_ATTR, 0)]
    assert native[0].fmt == TensorFormat.NC1HWC2 and len(native[0].dims) == 5
    _, (om,) = bind_zero_copy(ctx, track, xs, False, out_attrs=native)
    ctx.run()
    v = np.asarray(om)
    n, c1, h, w, c2 = v.shape
    assert c2 == native[0].dims[4]                         # the chip's C2 (8 on RK3566, 16 on RK3588)
    nchw = v.transpose(0, 1, 4, 2, 3).reshape(n, c1 * c2, h, w)[:, :8]
    want = expected_outputs(bh.model_bytes("tiny_int8_add", general_platform), xs, False)[0]
    np.testing.assert_array_equal(nchw, want)
    del v


# ---- strided views --------------------------------------------------------------------------
def strided_model(target):
    b = ModelBuilder(target, "strided")
    x = b.input("x", (1, 5, 13, 3), "int8", "NHWC", zp=0, scale=1.0, mean=(0, 0, 0), std=(1, 1, 1))
    y = b.relu(x)
    b.output(b.transpose(y, (0, 3, 1, 2), fmt="NCHW", out="y"))
    return b.build()


def test_strided_input_view_with_w_stride_not_width(track, platform):
    """w_stride (16) != width (13): the view is the logical tensor, the padding is strides,
    and writing through it feeds exactly the logical pixels to the NPU."""
    track.ctl.set_platform(platform)
    ctx = track.context(strided_model(platform))
    attr = ctx.input_attrs[0]
    assert attr.dims == (1, 5, 13, 3) and attr.w_stride > 13
    attr.type = TensorType.UINT8
    mem = track.mem(ctx.create_mem(attr.size_with_stride))
    ctx.set_io_mem(mem, attr)
    out_attr = ctx.output_attrs[0]
    out_attr.type = TensorType.FLOAT32
    om = track.mem(ctx.create_mem(out_attr.nbytes_with_stride))
    ctx.set_io_mem(om, out_attr)
    raw = np.frombuffer(mem.raw(), np.uint8)                # the raw bytes, padding included
    assert raw.size == attr.size_with_stride
    raw[:] = 0xEE                                           # poison the padding
    view = np.asarray(mem)
    assert view.shape == (1, 5, 13, 3) and view.dtype == np.uint8
    assert view.strides == (5 * attr.w_stride * 3, attr.w_stride * 3, 3, 1)
    assert not view.flags.c_contiguous and view.flags.writeable
    assert np.shares_memory(view, raw)
    img = np.random.default_rng(0).integers(0, 100, size=(1, 5, 13, 3), dtype=np.uint8)
    view[...] = img
    # the padding bytes are untouched: only the logical pixels were written
    rows = raw.reshape(5, attr.w_stride * 3)
    assert (rows[:, 13 * 3:] == 0xEE).all()
    ctx.run()
    got = np.asarray(om)
    np.testing.assert_array_equal(got, img.transpose(0, 3, 1, 2).astype(np.float32))
    # memoryview and DLPack see the same strided tensor
    mv = memoryview(mem)
    assert mv.shape == view.shape and mv.strides == view.strides and mv.format == "B"
    d = np.from_dlpack(mem)
    assert d.strides == view.strides and np.shares_memory(d, view)
    assert not mv.c_contiguous
    assert bytes(mem) == img.tobytes()                      # the logical bytes, in order
    del view, raw, rows, got, mv, d


def test_h_stride_pads_batches(track, emu):
    emu.set_platform("RK3588")
    ctx = track.context(strided_model("RK3588"))
    attr = ctx.input_attrs[0]
    attr.type = TensorType.UINT8
    attr.h_stride = 7                                       # 2 padding rows after the 5
    assert attr.strides[0] == 7 * attr.w_stride * 3
    mem = track.mem(ctx.create_mem(attr.nbytes_with_stride))
    mem.bind(attr)
    v = np.asarray(mem)
    assert v.shape == (1, 5, 13, 3) and v.strides[0] == 7 * attr.w_stride * 3
    small = track.mem(ctx.create_mem(attr.nbytes_with_stride - 1))
    with pytest.raises(ValueError, match="too small"):
        small.bind(attr)
    del v


# ---- outputs --------------------------------------------------------------------------------
def test_prealloc_outputs_write_into_caller_arrays(track, general_platform):
    ctx = track.model("multi_io", general_platform)
    xs = user_inputs(ctx, np.random.default_rng(1))
    ctx.inputs_set(xs)
    ctx.run()
    with ctx.outputs_get(want_float=True) as outs:
        want = [np.asarray(o).copy() for o in outs]
    out = [np.full(w.shape, np.nan, np.float32) for w in want]
    got = ctx.outputs_get(want_float=True, out=out)
    assert got is not out and all(g is o for g, o in zip(got, out))
    for g, w in zip(out, want):
        np.testing.assert_array_equal(g, w)
    native = [np.empty(a.dims, a.dtype) for a in ctx.output_attrs]
    ctx.outputs_get(out=native)
    with ctx.outputs_get() as outs:
        for g, o in zip(native, outs):
            np.testing.assert_array_equal(g, np.asarray(o))


def test_async_mode_returns_previous_frame(track, general_platform):
    ctx = track.model("tiny_relu", general_platform, flags=rknnx.lowlevel.InitFlag.ASYNC_MASK)
    frames = []
    for v in (1.0, 2.0, 3.0):
        ctx.inputs_set([np.float32([[v, -v]])])
        ctx.run()
        with ctx.outputs_get(want_float=True) as outs:
            frames.append((outs.frame_id, np.asarray(outs[0]).copy()))
    ids = [f for f, _ in frames]
    assert ids == sorted(ids)
    # from the second frame on, the outputs are those of the frame before
    assert frames[2][1][0, 0] == 2.0


def test_dynamic_shapes_follow_set_input_shapes(track, bh, general_platform):
    from rknnx.emulator.samples import DYNAMIC_SETS

    ctx = track.model("dynamic", general_platform)
    rng_info = ctx.query(QueryCmd.INPUT_DYNAMIC_RANGE, 0)
    assert rng_info.shape_number == len(DYNAMIC_SETS)
    assert rng_info.dyn_range == tuple(tuple(s) for s in DYNAMIC_SETS)
    model = bh.model_bytes("dynamic", general_platform)
    for s, dims in enumerate(rng_info.dyn_range):
        a = ctx.input_attrs[0]
        a.dims = dims
        ctx.set_input_shapes([a])
        assert ctx.input_attrs[0].dims == dims
        assert ctx.query(QueryCmd.CURRENT_INPUT_ATTR, 0).dims == dims
        x = np.random.default_rng(s).integers(0, 256, size=dims, dtype=np.uint8)
        got = run_general(ctx, [x], True)
        assert_same(got, expected_outputs(model, [x], True, shape_set=s), exact=False)


def test_deprecated_set_input_shape_single_input(track, bh, general_platform):
    """rknn_set_input_shape (deprecated, one attr): same effect as set_input_shapes, no
    warning (filterwarnings=error would fail the test), checked before C."""
    from rknnx.emulator.samples import DYNAMIC_SETS

    ctx = track.model("dynamic", general_platform)
    model = bh.model_bytes("dynamic", general_platform)
    for s, dims in enumerate(reversed(DYNAMIC_SETS)):
        s = len(DYNAMIC_SETS) - 1 - s
        a = ctx.input_attrs[0]
        a.dims = tuple(dims)
        ctx.set_input_shape(a)
        assert ctx.input_attrs[0].dims == tuple(dims)
        x = np.random.default_rng(s).integers(0, 256, size=tuple(dims), dtype=np.uint8)
        got = run_general(ctx, [x], True)
        assert_same(got, expected_outputs(model, [x], True, shape_set=s), exact=False)
    bad = ctx.input_attrs[0]
    bad.index = 1
    with pytest.raises(IndexError, match="input index 1 out of range"):
        ctx.set_input_shape(bad)
    with pytest.raises(TypeError):
        ctx.set_input_shape((1, 2, 3))
    bad = ctx.input_attrs[0]
    bad.dims = (1, 65, 64, 3)                               # not one of the model's shapes
    with pytest.raises(rknnx.RKNNError) as ei:
        ctx.set_input_shape(bad)
    assert ei.value.func == "rknn_set_input_shape"
    ctx.close()
    with pytest.raises(ValueError, match="set_input_shape on closed Context"):
        ctx.set_input_shape(bad)


class _PyBuffer(ctypes.Structure):
    _fields_ = [("buf", ctypes.c_void_p), ("obj", ctypes.py_object), ("len", ctypes.c_ssize_t),
                ("itemsize", ctypes.c_ssize_t), ("readonly", ctypes.c_int), ("ndim", ctypes.c_int),
                ("format", ctypes.c_char_p), ("shape", ctypes.POINTER(ctypes.c_ssize_t)),
                ("strides", ctypes.POINTER(ctypes.c_ssize_t)),
                ("suboffsets", ctypes.POINTER(ctypes.c_ssize_t)), ("internal", ctypes.c_void_p)]


_get_buffer = ctypes.pythonapi.PyObject_GetBuffer
_get_buffer.argtypes = [ctypes.py_object, ctypes.POINTER(_PyBuffer), ctypes.c_int]
_get_buffer.restype = ctypes.c_int
_release_buffer = ctypes.pythonapi.PyBuffer_Release
_release_buffer.argtypes = [ctypes.POINTER(_PyBuffer)]
_release_buffer.restype = None
PYBUF_WRITABLE, PYBUF_FORMAT, PYBUF_ND, PYBUF_STRIDES = 0x1, 0x4, 0x8, 0x18


@pytest.mark.parametrize("flags", [0, PYBUF_WRITABLE, PYBUF_FORMAT, PYBUF_ND,
                                   PYBUF_ND | PYBUF_FORMAT | PYBUF_WRITABLE])
def test_strided_mem_requests_without_strides_get_the_raw_bytes(track, flags):
    """A consumer that cannot take strides (no PyBUF_STRIDES) gets the contiguous raw bytes
    of the whole region (format "B", padding included), zero-copy and counted, instead of
    a BufferError; a strided request still gets the typed tensor."""
    track.ctl.set_platform("RK3588")
    ctx = track.context(strided_model("RK3588"))
    attr = ctx.input_attrs[0]
    attr.type = TensorType.UINT8
    mem = track.mem(ctx.create_mem(attr.size_with_stride))
    ctx.set_io_mem(mem, attr)
    assert attr.w_stride > 13 and mem.shape == (1, 5, 13, 3)
    view = _PyBuffer()
    assert _get_buffer(mem, ctypes.byref(view), flags) == 0
    try:
        assert view.buf == mem.virt_addr + mem.offset and view.len == mem.size == attr.size_with_stride
        assert view.itemsize == 1 and view.ndim == 1 and view.readonly == 0
        assert view.format == (b"B" if flags & PYBUF_FORMAT else None)
        if flags & PYBUF_ND:
            assert view.shape[0] == mem.size
        else:
            assert not view.shape
        assert not view.strides
        assert mem.exports == 1
        with pytest.raises(BufferError, match="still exported"):
            mem.close()
    finally:
        _release_buffer(ctypes.byref(view))
    assert mem.exports == 0
    assert _get_buffer(mem, ctypes.byref(view), PYBUF_STRIDES | PYBUF_FORMAT) == 0
    try:
        assert view.ndim == 4 and view.format == b"B" and view.len == 5 * 13 * 3
        assert [view.strides[i] for i in range(4)] == [5 * attr.w_stride * 3, attr.w_stride * 3, 3, 1]
    finally:
        _release_buffer(ctypes.byref(view))


def test_frombuffer_of_a_strided_mem_goes_through_raw(track):
    """np.frombuffer(mem) works on unbound and contiguous bound mems.  On a strided bound mem
    numpy wraps the exporter in a memoryview (a strided request) and then asks it for
    contiguous bytes, which the memoryview refuses: np.frombuffer(mem.raw(), dtype) is the
    zero-copy raw view (documented in TensorMem)."""
    track.ctl.set_platform("RK3588")
    ctx = track.context(strided_model("RK3588"))
    attr = ctx.input_attrs[0]
    attr.type = TensorType.UINT8
    mem = track.mem(ctx.create_mem(attr.size_with_stride))
    flat = np.frombuffer(mem, np.uint16)                    # unbound: raw bytes
    assert flat.size == mem.size // 2 and flat.ctypes.data == mem.virt_addr + mem.offset
    del flat
    ctx.set_io_mem(mem, attr)
    with pytest.raises(BufferError, match="not C-contiguous"):
        np.frombuffer(mem, np.uint8)
    assert mem.exports == 0
    raw = np.frombuffer(mem.raw(), np.uint16)
    assert raw.size == mem.size // 2 and raw.flags.writeable
    view = np.asarray(mem)
    assert np.shares_memory(raw, view) and mem.exports == 2
    raw[:] = 0x0101
    assert (view == 1).all()
    del raw, view
    assert mem.exports == 0
    # a contiguous bound tensor: np.frombuffer is the raw bytes again
    out_attr = ctx.output_attrs[0]
    out_attr.type = TensorType.FLOAT32
    om = track.mem(ctx.create_mem(out_attr.nbytes_with_stride))
    ctx.set_io_mem(om, out_attr)
    f = np.frombuffer(om, np.float32)
    assert f.size == om.size // 4 and np.shares_memory(f, np.asarray(om))
    del f


# ---- inputs_set variants ----------------------------------------------------------------------
def test_inputs_set_with_input_objects(track, general_platform):
    ctx = track.model("tiny_int8_add", general_platform)
    xs = user_inputs(ctx, np.random.default_rng(9))
    want = run_general(ctx, xs, True)
    # reversed order with explicit indices; NCHW data with fmt; raw bytes with type
    a_nchw = np.ascontiguousarray(xs[0].transpose(0, 3, 1, 2))
    ctx.inputs_set([Input(xs[1].tobytes(), index=1, type=TensorType.UINT8),
                    Input(a_nchw, index=0, fmt=TensorFormat.NCHW)])
    ctx.run()
    with ctx.outputs_get(want_float=True) as outs:
        np.testing.assert_array_equal(np.asarray(outs[0]), want[0])
    # float32 data is converted (normalized and quantized) by the runtime too
    ctx.inputs_set([x.astype(np.float32) for x in xs])
    ctx.run()
    with ctx.outputs_get(want_float=True) as outs:
        np.testing.assert_array_equal(np.asarray(outs[0]), want[0])


def test_pass_through_takes_native_data(track, general_platform):
    ctx = track.model("tiny_relu", general_platform)
    ctx.inputs_set([Input(np.float32([[1.5, -2.0]]), pass_through=True)])
    ctx.run()
    with ctx.outputs_get(want_float=True) as outs:
        np.testing.assert_array_equal(np.asarray(outs[0]), [[1.5, 0.0]])


# ---- flows cannot be mixed --------------------------------------------------------------------
def test_mixing_flows_raises_flow_error_with_the_reason(track, emu):
    ctx = track.model("tiny_relu", "RK3588")
    ctx.inputs_set([np.float32([[1, 2]])])
    mem = track.mem(ctx.create_mem(8))
    with pytest.raises(rknnx.FlowError, match=r"rknn_set_io_mem belongs to the zero-copy flow.*"
                                              r"general flow since inputs_set\(\).*3\.5"):
        ctx.set_io_mem(mem, ctx.input_attrs[0])
    z = track.model("tiny_relu", "RK3588")
    z.set_io_mem(mem, z.input_attrs[0])
    for call in (lambda: z.inputs_set([np.float32([[1, 2]])]), lambda: z.outputs_get()):
        with pytest.raises(rknnx.FlowError, match="zero-copy flow since set_io_mem"):
            call()
    assert isinstance(rknnx.FlowError("x"), RuntimeError)
    # dup() gives an independent context for the other flow
    d = track.contexts.append(z.dup()) or track.contexts[-1]
    assert d.flow == "none"
    d.inputs_set([np.float32([[1, 2]])])
