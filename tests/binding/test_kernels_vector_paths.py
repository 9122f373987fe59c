"""The vectorised paths of the layout and quantization kernels (contiguous runs of 16 and
more elements, h and w taken as one run of pixels, the 16x16 transposes both ways, the
dequantizing paths: AVX2 where the processor has it, the 128-bit one the boards' NEON takes,
the plain expression) equal their numpy expressions bit for bit, on the values where a
shortcut would differ: ties, NaN, infinities, huge values, odd and out-of-range zero points,
runs that end mid-vector, results that do not start on a vector boundary."""

from __future__ import annotations

import numpy as np
import pytest

from rknnx import _kernels as k
from rknnx.emulator import reference


@pytest.fixture(params=k._kernel_paths())
def path(request):
    """Each dequantizing path this build and processor have, the widest restored after."""
    before = k._kernel_path(request.param)
    yield request.param
    k._kernel_path(before)


def bits(a):
    a = np.asarray(a)
    return a.view({2: np.uint16, 4: np.uint32, 1: np.uint8}[a.dtype.itemsize])


def assert_bits(got, want):
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_array_equal(bits(got), bits(want))


def hard_floats(rng, n):
    """Ties of every parity at several magnitudes, their neighbours, specials, and random
    values of every size, shuffled."""
    ints = np.arange(-300, 301, dtype=np.float32)
    ties = ints + np.float32(0.5)
    big = np.array([2.0**22, 2.0**22 + 1, 2.0**23 - 0.5, 2.0**23, 2.0**23 + 2, 2.0**24,
                    3e9, 1e38, 2.0**-130, -0.0, 0.0], np.float32)
    x = np.concatenate([ints, ties, np.nextafter(ties, np.float32(np.inf)),
                        np.nextafter(ties, np.float32(-np.inf)), big, -big,
                        np.array([np.nan, np.inf, -np.inf, -np.nan], np.float32),
                        (rng.standard_normal(n) * rng.choice([1, 100, 1e4, 1e8], n))
                        .astype(np.float32)])
    rng.shuffle(x)
    return x


@pytest.mark.parametrize("dtype", ["int8", "uint8"])
@pytest.mark.parametrize("zp", [0, 3, -3, 127, -128, 255, 300, -301, 70000, -2**20])
@pytest.mark.parametrize("scale", [1.0, 0.5, 0.02, 3.0, 1e-30])
def test_quantize_contiguous_runs_equal_reference(dtype, zp, scale):
    x = hard_floats(np.random.default_rng(abs(zp) + int(scale * 100)), 3000)
    want = reference.quantize(x, scale, zp, dtype)
    for n in (len(x), 16, 17, 31, 47):                 # whole vectors and tails
        assert_bits(k.quantize(x[:n], scale, zp, dtype=dtype), want[:n])
    assert_bits(k.quantize(x[1:], scale, zp, dtype=dtype), want[1:])   # unaligned start
    with np.errstate(over="ignore"):
        h = x.astype(np.float16)
    assert_bits(k.quantize(h, scale, zp, dtype=dtype), reference.quantize(h, scale, zp, dtype))


def test_quantize_per_channel_contiguous_rows_equal_reference():
    rng = np.random.default_rng(3)
    x = hard_floats(rng, 2000)[:2400].reshape(4, 600)
    sc = np.array([0.5, 1.0, 0.07, 2.5], np.float32)
    zp = np.array([1, -7, 0, 200])
    got = k.quantize(x, sc, zp, dtype=np.uint8, axis=0)
    for c in range(4):
        assert_bits(got[c], reference.quantize(x[c], sc[c], zp[c], "uint8"))


@pytest.mark.parametrize("dtype", [np.int8, np.uint8])
@pytest.mark.parametrize("zp", [0, -3, 7, 300, -2**23 - 1])
def test_dequantize_contiguous_runs_equal_numpy(dtype, zp, path):
    rng = np.random.default_rng(1)
    q = rng.integers(np.iinfo(dtype).min, np.iinfo(dtype).max + 1, 4099, dtype=dtype)
    q[:256] = np.arange(256).astype(np.uint8).view(dtype)
    for sc in (0.1, 3.0, 1e-40, 1e38):
        with np.errstate(over="ignore"):
            want = (q.astype(np.float32) - np.float32(zp)) * np.float32(sc)
        for n in (4099, 16, 17, 33):
            assert_bits(k.dequantize(q[:n], sc, zp), want[:n])
        assert_bits(k.dequantize(q[3:], sc, zp), want[3:])


def np_nc1hwc2(src, channels):
    n, c1, h, w, c2 = src.shape
    return src.transpose(0, 1, 4, 2, 3).reshape(n, c1 * c2, h, w)[:, :channels]


# h x w with h * w >= 16 but w < 16 (one merged run), w a multiple of 16, odd sizes
SHAPES = [(1, 2, 5, 4, 16), (2, 3, 3, 7, 16), (1, 1, 20, 20, 16), (1, 2, 2, 16, 32),
          (1, 1, 1, 17, 16), (1, 2, 9, 3, 32), (1, 3, 1, 21, 16), (1, 1, 8, 8, 16),
          (1, 2, 5, 4, 8), (1, 3, 20, 20, 8), (2, 1, 3, 7, 8)]     # C2 8: int8 on RK3566/68


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("signed", [True, False])
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_nc1hwc2_merged_runs_equal_numpy(shape, signed, layout, path):
    dt = np.int8 if signed else np.uint8
    rng = np.random.default_rng(sum(shape))
    src = rng.integers(np.iinfo(dt).min, np.iinfo(dt).max + 1, shape, dtype=dt)
    c = shape[1] * shape[4] - 3
    for sc, zp in ((0.0625, -3), (0.37, 11), (0.5, 2**22 + 1)):
        want = (np_nc1hwc2(src, c).astype(np.float32) - np.float32(zp)) * np.float32(sc)
        raw = np_nc1hwc2(src, c)
        if layout == "NHWC":
            want, raw = want.transpose(0, 2, 3, 1), raw.transpose(0, 2, 3, 1)
        got = k.nc1hwc2_to_nchw(src, c, layout=layout, scale=sc, zero_point=zp)
        assert_bits(got, np.ascontiguousarray(want))
        assert_bits(k.nc1hwc2_to_nchw(src, c, layout=layout), np.ascontiguousarray(raw))
        # a padded w in the source: rows of w pixels, not one run
        padded = np.zeros(shape[:3] + (shape[3] + 5, shape[4]), dt)
        padded[:, :, :, :shape[3]] = src
        got = k.nc1hwc2_to_nchw(padded[:, :, :, :shape[3]], c, layout=layout, scale=sc,
                                zero_point=zp)
        assert_bits(got, np.ascontiguousarray(want))


@pytest.mark.parametrize("offset", range(0, 32, 4))
def test_dequantized_results_at_every_vector_offset_equal_numpy(offset, path):
    """out= views starting at each float of a 32-byte vector: the kernels' first, shifted
    block and the aligned ones after it write every value once, right."""
    rng = np.random.default_rng(offset)
    src = rng.integers(-128, 128, (1, 2, 5, 9, 16), dtype=np.int8)
    want = (np_nc1hwc2(src, 29).astype(np.float32) + np.float32(5)) * np.float32(0.3)
    buf = np.zeros(want.size * 4 + 64, np.uint8)
    start = -buf.ctypes.data % 32 + offset
    out = buf[start:start + want.nbytes].view(np.float32).reshape(want.shape)
    got = k.nc1hwc2_to_nchw(src, 29, scale=0.3, zero_point=-5, out=out)
    assert got is out
    assert_bits(out, want)
    q = rng.integers(-128, 128, 203, dtype=np.int8)
    flat = buf[start:start + 4 * q.size].view(np.float32)
    k.dequantize(q, 0.3, -5, out=flat)
    assert_bits(flat, (q.astype(np.float32) + np.float32(5)) * np.float32(0.3))


def test_every_half_converts_as_numpy_on_each_path(path):
    """float16 -> float32 (from_float16 and the native fp16 layout of nc1hwc2_to_nchw) for
    each of the 65536 halves: zeros, subnormals, infinities, NaN payloads included."""
    h = np.arange(65536, dtype=np.uint16).view(np.float16)
    want = h.astype(np.float32)
    assert_bits(k.from_float16(h), want)
    for n in (9, 15, 16, 23):                                   # vector tails
        assert_bits(k.from_float16(h[-n:]), want[-n:])
    for c2 in (8, 4):                       # fp16 outputs: C2 8, and 4 on RK3566/68
        blocked = h.reshape(1, 32 // c2, 64, 32, c2)
        assert_bits(k.nc1hwc2_to_nchw(blocked, 32, dtype=np.float32),
                    np_nc1hwc2(blocked, 32).astype(np.float32))


def test_to_float16_equals_numpy_on_each_path(path):
    """float32 -> float16 on the values where rounding can go wrong (every half, the
    midpoints between neighbours and their neighbours, overflow, subnormals, NaN payloads)
    and on random bit patterns, through the vector loop and its tail."""
    h = np.arange(65536, dtype=np.uint16).view(np.float16).astype(np.float32)
    f = np.sort(h[np.isfinite(h)])
    mids = f[:-1] / 2 + f[1:] / 2
    rng = np.random.default_rng(7)
    cand = np.concatenate([
        h, mids, np.nextafter(mids, np.float32(np.inf)), np.nextafter(mids, np.float32(-np.inf)),
        np.array([65504, 65519.996, 65520, 65536, 1e30, 2.0**-25, 2.0**-24 * 1.5, 1e-45, 1e-40],
                 np.float32),
        np.array([0x7f800001, 0x7fc00000, 0xffc00001, 0x7f802000, 0x7fbfffff, 0x7f801fff],
                 np.uint32).view(np.float32),
        rng.integers(0, 2**32, 200_000, dtype=np.uint64).astype(np.uint32).view(np.float32)])
    rng.shuffle(cand)
    with np.errstate(over="ignore", invalid="ignore"):
        want = cand.astype(np.float16)
    assert_bits(k.to_float16(cand), want)
    for n in (7, 9, 17):
        assert_bits(k.to_float16(cand[-n:]), want[-n:])


@pytest.mark.parametrize("shape", [(1, 4, 4, 5, 8), (2, 2, 1, 17, 8), (1, 2, 3, 7, 16),
                                   (1, 3, 20, 20, 8), (1, 3, 4, 5, 4), (2, 2, 1, 9, 4)])
def test_float16_blocks_equal_numpy(shape, path):
    rng = np.random.default_rng(sum(shape))
    src = (rng.standard_normal(shape) * 1000).astype(np.float16)
    c = shape[1] * shape[4] - 3                                  # a short last block
    for layout in ("NCHW", "NHWC"):
        want = np_nc1hwc2(src, c).astype(np.float32)
        if layout == "NHWC":
            want = want.transpose(0, 2, 3, 1)
        got = k.nc1hwc2_to_nchw(src, c, layout=layout, dtype=np.float32)
        assert_bits(got, np.ascontiguousarray(want))
    padded = np.zeros(shape[:3] + (shape[3] + 3, shape[4]), np.float16)
    padded[:, :, :, :shape[3]] = src                             # row padding in the strides
    assert_bits(k.nc1hwc2_to_nchw(padded[:, :, :, :shape[3]], c, dtype=np.float32),
                np_nc1hwc2(src, c).astype(np.float32))


def test_kernel_path_is_set_and_restored():
    have = k._kernel_paths()
    # "plain" always; "vector128" where the build has the vector trick (GCC >= 10 or clang,
    # little-endian, SSE2 or AArch64), "avx2" on top where the processor has it
    assert have == ("plain", "vector128", "avx2")[:len(have)]
    if have == ("plain",):
        pytest.skip("no vector path in this build (GCC < 10, big-endian, or 32-bit ARM)")
    before = k._kernel_path("plain")
    try:
        assert k._kernel_path() == "plain"
        with pytest.raises(ValueError, match="path must be one of"):
            k._kernel_path("avx512")
        assert k._kernel_path(have[-1]) == "plain"          # the one it replaced
    finally:
        k._kernel_path(before)
    assert k._kernel_path() == have[-1]


@pytest.mark.parametrize("shape", [(1, 30, 5, 4), (2, 16, 4, 4), (1, 33, 20, 20),
                                   (1, 17, 1, 17), (1, 40, 2, 8)])
@pytest.mark.parametrize("c2", [16, 32])
def test_nchw_to_nc1hwc2_merged_runs_equal_numpy(shape, c2):
    rng = np.random.default_rng(sum(shape) + c2)
    x = rng.integers(-128, 128, shape, dtype=np.int8)
    n, c, h, w = shape
    c1 = -(-c // c2)
    want = np.zeros((n, c1 * c2, h, w), np.int8)
    want[:, :c] = x
    want = want.reshape(n, c1, c2, h, w).transpose(0, 1, 3, 4, 2)
    assert_bits(k.nchw_to_nc1hwc2(x, c2), np.ascontiguousarray(want))
    out = np.full((n, c1, h, w + 3, c2), 9, np.int8)[:, :, :, :w]      # padded w in out=
    k.nchw_to_nc1hwc2(x, c2, out=out)
    assert_bits(out, want)
