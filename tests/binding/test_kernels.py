"""The layout and quantization kernels of rknnx._kernels equal their numpy expressions bit
for bit on random shapes, strides, scales and zero points; bad arguments raise before any
loop; and the NC1HWC2 kernel agrees with the emulator's native output layout."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from rknnx import _kernels as k
from rknnx.emulator import reference

SETTINGS = settings(max_examples=60, deadline=None)
scales = st.floats(0.0001220703125, 10.0, allow_nan=False, width=32)


def bits(a):
    a = np.asarray(a)
    return a.view({2: np.uint16, 4: np.uint32, 1: np.uint8}[a.dtype.itemsize])


def assert_bits(got, want):
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, got.dtype,
                                                                   want.shape, want.dtype)
    np.testing.assert_array_equal(bits(got), bits(want))


@st.composite
def strided(draw, dtype, min_dims=1, max_dims=4, max_side=9):
    """A random array of dtype viewed through random slices (steps, offsets, reversals)."""
    shape = draw(st.lists(st.integers(1, max_side), min_size=min_dims, max_size=max_dims))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt.kind == "f":
        base = (rng.standard_normal(shape) * draw(st.sampled_from([1, 100, 1e4]))).astype(dt)
    elif dt.kind == "c":
        base = (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dt)
    else:
        base = rng.integers(np.iinfo(dt).min, np.iinfo(dt).max + 1, shape, dtype=dt)
    idx = []
    for n in shape:
        step = draw(st.sampled_from([1, 1, 2, -1]))
        start = draw(st.integers(0, n - 1))
        idx.append(slice(start, None, step) if step > 0 else slice(start, None, -1))
    return base[tuple(idx)]


def np_dequantize(q, scale, zp, dtype=np.float32):
    v = (q.astype(np.float32) - np.float32(zp)) * np.float32(scale)
    return v.astype(dtype)


# ---- elementwise ----------------------------------------------------------------------------
@SETTINGS
@given(q=st.one_of(strided(np.int8), strided(np.uint8)), scale=scales,
       zp=st.integers(-300, 300), f16=st.booleans())
def test_dequantize_equals_numpy(q, scale, zp, f16):
    dt = np.float16 if f16 else np.float32
    with np.errstate(over="ignore"):
        want = np_dequantize(q, scale, zp, dt)
    assert_bits(k.dequantize(q, scale, zp, dtype=dt), want)
    out = np.full(q.shape[::-1], 7, dt).T           # a strided out=
    assert k.dequantize(q, scale, zp, dtype=dt, out=out) is out
    assert_bits(out, want)


@SETTINGS
@given(q=strided(np.int8, min_dims=2), data=st.data())
def test_dequantize_per_channel_equals_numpy(q, data):
    axis = data.draw(st.integers(0, q.ndim - 1))
    n = q.shape[axis]
    sc = np.asarray(data.draw(st.lists(scales, min_size=n, max_size=n)), np.float32)
    zp = np.asarray(data.draw(st.lists(st.integers(-128, 127), min_size=n, max_size=n)))
    shape = [1] * q.ndim
    shape[axis] = n
    want = (q.astype(np.float32) - zp.astype(np.float32).reshape(shape)) * sc.reshape(shape)
    assert_bits(k.dequantize(q, sc, zp, axis=axis), want)


@SETTINGS
@given(x=st.one_of(strided(np.float32), strided(np.float16)), scale=scales,
       zp=st.integers(-128, 255), u8=st.booleans())
def test_quantize_equals_reference(x, scale, zp, u8):
    dt = "uint8" if u8 else "int8"
    x = x.copy()
    if x.size > 2:                                  # the specials too
        x.flat[0], x.flat[1], x.flat[2] = np.nan, np.inf, -np.inf
    want = reference.quantize(x, scale, zp, dt)
    assert_bits(k.quantize(x, scale, zp, dtype=dt), want)


def test_quantize_rounds_half_to_even_and_saturates():
    x = np.array([0.5, 1.5, 2.5, -0.5, -1.5, 1e9, -1e9, np.nan, 8388609.0, -0.49999997],
                 np.float32)
    np.testing.assert_array_equal(k.quantize(x, 1.0, 0),
                                  [0, 2, 2, 0, -2, 127, -128, 0, 127, 0])
    np.testing.assert_array_equal(k.quantize(x, 1.0, 3, dtype=np.uint8),
                                  [3, 5, 5, 3, 1, 255, 0, 3, 255, 3])


def test_float16_conversions_equal_numpy_on_every_half_and_edge_floats():
    h = np.arange(65536, dtype=np.uint16).view(np.float16)
    assert_bits(k.from_float16(h), h.astype(np.float32))
    # every float16 value, the midpoints between neighbours (ties) and their neighbours
    f = h.astype(np.float32)
    f = f[np.isfinite(f)]
    u = np.sort(f).view(np.uint32)
    mids = np.sort(f)[:-1] / 2 + np.sort(f)[1:] / 2
    cand = np.concatenate([f, mids, np.nextafter(mids, np.inf), np.nextafter(mids, -np.inf),
                           (u + 1).view(np.float32), (u - 1).view(np.float32),
                           np.array([65504, 65519.996, 65520, 65536, 1e30, np.inf, -np.inf,
                                     2.0**-25, 2.0**-24 * 1.5, 2.0**-26, 1e-45], np.float32)])
    nans = np.array([0x7f800001, 0x7fc00000, 0xffc00001, 0x7f802000, 0x7fbfffff, 0x7f801fff],
                    np.uint32).view(np.float32)
    cand = np.concatenate([cand, nans])
    with np.errstate(over="ignore", invalid="ignore"):
        want = cand.astype(np.float16)
    assert_bits(k.to_float16(cand), want)


@SETTINGS
@given(x=strided(np.float32))
def test_to_float16_equals_numpy(x):
    with np.errstate(over="ignore"):
        want = x.astype(np.float16)
    assert_bits(k.to_float16(x), want)
    assert_bits(k.from_float16(want[..., ::-1]), want[..., ::-1].astype(np.float32))


@SETTINGS
@given(x=st.one_of(strided(np.int8), strided(np.float16), strided(np.float32),
                   strided(np.int64), strided(np.complex128)))
def test_compact_equals_ascontiguousarray(x):
    got = k.compact(x)
    assert got.flags.c_contiguous
    assert_bits(got, np.ascontiguousarray(x)) if x.dtype.itemsize <= 4 else \
        np.testing.assert_array_equal(got, x)


# ---- NC1HWC2 --------------------------------------------------------------------------------
@st.composite
def blocked(draw, dtype):
    n, c1, h, w = (draw(st.integers(1, m)) for m in (2, 3, 5, 40))
    c2 = draw(st.sampled_from([4, 8, 16, 32]))
    pad_w = draw(st.integers(0, 5))                   # row padding in the strides
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    dt = np.dtype(dtype)
    shape = (n, c1, h, w + pad_w, c2)
    if dt.kind == "f":
        base = rng.standard_normal(shape).astype(dt)
    else:
        base = rng.integers(np.iinfo(dt).min, np.iinfo(dt).max + 1, shape, dtype=dt)
    src = base[:, :, :, :w]
    channels = draw(st.integers(max(1, (c1 - 1) * c2 + 1), c1 * c2))
    return src, channels


def np_nc1hwc2(src, channels):
    n, c1, h, w, c2 = src.shape
    return src.transpose(0, 1, 4, 2, 3).reshape(n, c1 * c2, h, w)[:, :channels]


@SETTINGS
@given(data=st.data(), signed=st.booleans(), scale=scales, zp=st.integers(-128, 255),
       layout=st.sampled_from(["NCHW", "NHWC"]), f16=st.booleans())
def test_nc1hwc2_dequantized_equals_numpy(data, signed, scale, zp, layout, f16):
    src, channels = data.draw(blocked(np.int8 if signed else np.uint8))
    dt = np.float16 if f16 else np.float32
    with np.errstate(over="ignore"):
        want = np_dequantize(np_nc1hwc2(src, channels), scale, zp, dt)
    if layout == "NHWC":
        want = want.transpose(0, 2, 3, 1)
    before = k._kernel_path()
    try:
        for path in k._kernel_paths():                 # each dequantizing path there is
            k._kernel_path(path)
            got = k.nc1hwc2_to_nchw(src, channels, layout=layout, scale=scale, zero_point=zp,
                                    dtype=dt)
            assert got.flags.c_contiguous
            assert_bits(got, want)
    finally:
        k._kernel_path(before)


@SETTINGS
@given(data=st.data(), dtype=st.sampled_from([np.int8, np.uint8, np.float16, np.float32]),
       layout=st.sampled_from(["NCHW", "NHWC"]))
def test_nc1hwc2_raw_and_back_equal_numpy(data, dtype, layout):
    src, channels = data.draw(blocked(dtype))
    want = np_nc1hwc2(src, channels)
    if layout == "NHWC":
        want = want.transpose(0, 2, 3, 1)
    got = k.nc1hwc2_to_nchw(src, channels, layout=layout)
    assert_bits(got, np.ascontiguousarray(want))
    # and back: the real channels as they were, the padding channels zero
    c2 = src.shape[4]
    back = k.nchw_to_nc1hwc2(got, c2, layout=layout)
    expect = np.ascontiguousarray(src)
    for c in range(channels, src.shape[1] * c2):
        expect[:, c // c2, :, :, c % c2] = 0
    assert_bits(back, expect)


def test_nc1hwc2_per_channel_and_float16_source():
    rng = np.random.default_rng(5)
    src = rng.integers(-128, 128, (1, 2, 3, 20, 16), dtype=np.int8)
    sc = rng.uniform(0.01, 1, 30).astype(np.float32)
    zp = rng.integers(-10, 10, 30)
    want = (np_nc1hwc2(src, 30).astype(np.float32) - zp.astype(np.float32)[:, None, None]) \
        * sc[:, None, None]
    for layout in ("NCHW", "NHWC"):
        got = k.nc1hwc2_to_nchw(src, 30, layout=layout, scale=sc, zero_point=zp)
        assert_bits(got, want if layout == "NCHW" else want.transpose(0, 2, 3, 1))
    h = rng.standard_normal((1, 2, 3, 5, 8)).astype(np.float16)
    assert_bits(k.nc1hwc2_to_nchw(h, 13, dtype=np.float32),
                np_nc1hwc2(h, 13).astype(np.float32))


# ---- argument checks ------------------------------------------------------------------------
def test_bad_arguments_raise_with_what_was_expected():
    q = np.zeros((1, 2, 4, 4, 16), np.int8)
    with pytest.raises(ValueError, match=r"channels must be in 1..C1\*C2 = 32, got 33"):
        k.nc1hwc2_to_nchw(q, 33)
    with pytest.raises(ValueError, match=r"src must be 5-D \(N, C1, H, W, C2\), got shape"):
        k.nc1hwc2_to_nchw(q[0], 3)
    with pytest.raises(ValueError, match="layout must be 'NCHW' or 'NHWC', got 'HWC'"):
        k.nc1hwc2_to_nchw(q, 3, layout="HWC")
    with pytest.raises(TypeError, match=r"out must have dtype float32, got float64"):
        k.nc1hwc2_to_nchw(q, 3, scale=0.1, out=np.zeros((1, 3, 4, 4)))
    with pytest.raises(ValueError, match=r"out must have shape \(1, 3, 4, 4\), got \(1, 4, 4, 3\)"):
        k.nc1hwc2_to_nchw(q, 3, scale=0.1, out=np.zeros((1, 4, 4, 3), np.float32))
    ro = np.zeros((1, 3, 4, 4), np.float32)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="out is read-only"):
        k.nc1hwc2_to_nchw(q, 3, scale=0.1, out=ro)
    with pytest.raises(TypeError, match="src must be int8 or uint8 to dequantize, got float32"):
        k.nc1hwc2_to_nchw(q.astype(np.float32), 3, scale=0.1)
    with pytest.raises(TypeError, match="dequantize: src must be int8 or uint8, got int16"):
        k.dequantize(np.zeros(3, np.int16), 0.1)
    with pytest.raises(TypeError, match="quantize: dtype must be int8 or uint8, got int16"):
        k.quantize(np.zeros(3, np.float32), 0.1, dtype=np.int16)
    with pytest.raises(TypeError, match="out must be a numpy.ndarray, got bytearray"):
        k.compact(np.zeros(3, np.int8), out=bytearray(3))
    with pytest.raises(ValueError, match="per-channel scale/zero_point need axis="):
        k.dequantize(np.zeros(3, np.int8), [0.1, 0.2, 0.3])
    with pytest.raises(ValueError, match=r"scale has 2 values, expected 3 \(one per channel\)"):
        k.dequantize(np.zeros(3, np.int8), [0.1, 0.2], axis=0)
    x = np.zeros(8, np.float32)
    with pytest.raises(ValueError, match="out overlaps src"):
        k.to_float16(x, out=x.view(np.float16)[:8])
    with pytest.raises(ValueError, match="zero_point needs scale"):
        k.nc1hwc2_to_nchw(q, 3, zero_point=4)


def test_buffers_are_accepted_and_the_loops_release_the_gil():
    import threading
    q = np.arange(-128, 128, dtype=np.int8)
    np.testing.assert_array_equal(k.dequantize(memoryview(q.tobytes()).cast("b"), 0.5),
                                  q.astype(np.float32) * np.float32(0.5))
    big = np.random.default_rng(0).integers(-128, 128, (1, 16, 200, 200, 16), np.int8)
    results = []
    ts = [threading.Thread(target=lambda: results.append(k.nc1hwc2_to_nchw(big, 250, scale=0.1)))
          for _ in range(2)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert len(results) == 2 and np.array_equal(results[0], results[1])


# ---- the emulator's native layout -------------------------------------------------------------
@pytest.mark.parametrize("platform_name", ["RK3588", "RK3566"])
def test_detector_native_outputs_through_the_kernel_equal_the_float_outputs(track,
                                                                            platform_name):
    from rknnx.lowlevel import QueryCmd, TensorFormat, TensorType

    rng = np.random.default_rng(11)
    image = rng.integers(0, 256, (1, 640, 640, 3), dtype=np.uint8)
    g = track.model("detector_random", platform_name)
    g.inputs_set([image])
    g.run()
    with g.outputs_get(want_float=True) as outs:
        floats = [np.asarray(o).copy() for o in outs]
    z = track.model("detector_random", platform_name)
    a_in = z.input_attrs[0]
    a_in.type = TensorType.UINT8
    m_in = track.mem(z.create_mem(a_in.size_with_stride))
    z.set_io_mem(m_in, a_in)
    v = np.asarray(m_in)
    v[...] = image
    del v
    mems = []
    for i in range(len(floats)):
        a = z.query(QueryCmd.NATIVE_OUTPUT_ATTR, i)
        assert a.fmt == TensorFormat.NC1HWC2 and a.type == TensorType.INT8
        m = track.mem(z.create_mem(a.size_with_stride))
        z.set_io_mem(m, a)
        mems.append((m, a))
    z.run()
    for (m, a), want in zip(mems, floats):
        view = np.asarray(m)
        channels = want.shape[1]
        got = k.nc1hwc2_to_nchw(view, channels, scale=a.scale, zero_point=a.zp)
        assert_bits(got, want)
        ref = np_dequantize(np_nc1hwc2(view, channels), a.scale, a.zp)
        assert_bits(got, ref)
        del view
