"""MatmulContext: C = A x B through the binding against numpy, for every type the emulator
supports (int4 and per-group included), every layout (normal, transposed B, native A/B/C
as the io_attr dims say), dynamic shapes, quantization parameters, platform differences,
argument checks before C, and lifetimes (mems keep the context alive, BufferError while
viewed, counters back to baseline)."""

from __future__ import annotations

import gc
import threading
import weakref

import numpy as np
import pytest

import rknnx
from rknnx.lowlevel import (MatmulContext, MatmulLayout, MatmulQuantType, MatmulTensorAttr, MatmulType,
                   TensorType,
                   b_normal_layout_to_native_layout, pack_int4, unpack_int4)

T = MatmulType
# type -> (A kind, B kind, C dtype); "bf16" results are uint16 bit patterns
KINDS = {
    T.FLOAT16_MM_FLOAT16_TO_FLOAT32: ("f16", "f16", np.float32),
    T.INT8_MM_INT8_TO_INT32: ("i8", "i8", np.int32),
    T.INT8_MM_INT8_TO_INT8: ("i8", "i8", np.int8),
    T.FLOAT16_MM_FLOAT16_TO_FLOAT16: ("f16", "f16", np.float16),
    T.FLOAT16_MM_INT8_TO_FLOAT32: ("f16", "i8", np.float32),
    T.FLOAT16_MM_INT8_TO_FLOAT16: ("f16", "i8", np.float16),
    T.FLOAT16_MM_INT4_TO_FLOAT32: ("f16", "i4", np.float32),
    T.FLOAT16_MM_INT4_TO_FLOAT16: ("f16", "i4", np.float16),
    T.INT8_MM_INT8_TO_FLOAT32: ("i8", "i8", np.float32),
    T.INT4_MM_INT4_TO_INT16: ("i4", "i4", np.int16),
    T.INT8_MM_INT4_TO_INT32: ("i8", "i4", np.int32),
    T.FLOAT16_MM_INT4_TO_BFLOAT16: ("f16", "i4", "bf16"),
    T.INT8_MM_INT4_TO_FLOAT16: ("i8", "i4", np.float16),
}
INT4 = [t for t, k in KINDS.items() if "i4" in k[:2]]
NOT_INT4 = [t for t in KINDS if t not in INT4]
GROUP_TYPES = [T.FLOAT16_MM_INT8_TO_FLOAT32, T.FLOAT16_MM_INT8_TO_FLOAT16,
               T.FLOAT16_MM_INT4_TO_FLOAT32, T.FLOAT16_MM_INT4_TO_FLOAT16,
               T.INT8_MM_INT8_TO_FLOAT32, T.FLOAT16_MM_INT4_TO_BFLOAT16, T.INT8_MM_INT4_TO_FLOAT16]


# ---- numpy side ------------------------------------------------------------------------------
def operand(kind, shape, rng):
    if kind == "f16":
        return rng.standard_normal(shape).astype(np.float16)
    lim = 8 if kind == "i4" else 100
    return rng.integers(-lim, lim, shape).astype(np.int8)


def expand(vals, K, N, gs):
    """B quantization values (1, N or N*K/gs) as a (K, N) float64 array."""
    v = np.asarray(vals, np.float64).ravel()
    if v.size == 1:
        return np.full((K, N), v[0])
    if v.size == N:
        return np.broadcast_to(v[None, :], (K, N)).copy()
    # np.repeat, not arange(K) // gs: Debian bookworm's numpy 1.24.2 on i386 returns an int
    # array floor-divided by a scalar unchanged on some x86 processors (seen in CI's root)
    return v.reshape(N, K // gs).repeat(gs, axis=1).T


def reference(t, a, b, sa=1.0, za=0, sb=(1.0,), zb=(0,), sc=1.0, zc=0, gs=0):
    """C = A x B in float64 (integers exactly)."""
    ka, kb, tc = KINDS[t]
    K, N = b.shape
    gs = gs or K
    sbk, zbk = expand(sb, K, N, gs), expand(zb, K, N, gs)
    if ka != "f16":
        A = a.astype(np.int64) - za
        B = b.astype(np.int64) - zbk.astype(np.int64)
        if tc in (np.int32, np.int16):
            info = np.iinfo(tc)
            return np.clip(A @ B, info.min, info.max)
        if tc == np.int8:
            return np.clip(np.rint((A @ B) * (sa * sbk[0]) / sc) + zc, -128, 127)
        f = np.zeros((a.shape[0], N))
        for k0 in range(0, K, gs):
            f += (A[:, k0:k0 + gs] @ B[k0:k0 + gs]) * sa * sbk[k0]
        return f
    bf = b.astype(np.float64) if kb == "f16" else (b.astype(np.float64) - zbk) * sbk
    return a.astype(np.float64) @ bf


def compare(t, got, want):
    tc = KINDS[t][2]
    if tc == "bf16":
        got = (got.astype(np.uint32) << 16).view(np.float32)
        np.testing.assert_allclose(got, want, rtol=1e-2, atol=1e-2 * np.abs(want).max())
    elif np.dtype(tc).kind == "f":
        tol = 2e-3 if tc == np.float16 else 1e-5
        np.testing.assert_allclose(got.astype(np.float64), want, rtol=tol,
                                   atol=tol * max(np.abs(want).max(), 1))
    elif tc == np.int8:
        assert np.abs(got.astype(np.int64) - want).max() <= 1      # a tie may round either way
    else:
        np.testing.assert_array_equal(got, want.astype(tc))


def native_a(a, s):
    """(M, K) -> (K/s, M, s), K padded with zeros."""
    M, K = a.shape
    Kp = -(-K // s) * s
    ap = np.zeros((M, Kp), a.dtype)
    ap[:, :K] = a
    return np.ascontiguousarray(ap.reshape(M, Kp // s, s).transpose(1, 0, 2))


def native_b(b, nn, kk):
    """(K, N) -> (N/nn, K/kk, nn, kk), padded with zeros (no K split)."""
    K, N = b.shape
    Kp, Np = -(-K // kk) * kk, -(-N // nn) * nn
    p = np.zeros((Kp, Np), b.dtype)
    p[:K, :N] = b
    return np.ascontiguousarray(p.reshape(Kp // kk, kk, Np // nn, nn).transpose(2, 0, 3, 1))


def from_native_c(c, M, N):
    """(N/c, M, c) -> (M, N)."""
    return c.transpose(1, 0, 2).reshape(M, -1)[:, :N]


def fill(mem, values, kind):
    """Write a matrix (already in the tensor's layout order) into a bound mem."""
    v = np.asarray(mem)
    if kind == "i4":
        packed = pack_int4(values)
        assert v.dtype == np.uint8 and v.shape == (packed.size,)
        v[...] = packed
    else:
        assert v.shape == values.shape, (v.shape, values.shape)
        v[...] = values


def run_case(track, t, M, K, N, B_layout=0, AC_layout=0, platform="RK3588", quant=None, gs=0,
             seed=0):
    rng = np.random.default_rng(seed)
    ka, kb, tc = KINDS[t]
    qt = {None: 0, "layer": 1, "channel": 3, "group": 5}[quant]
    mm = track.matmul(M, K, N, t, B_layout, AC_layout, qt, 0, gs, platform=platform)
    io = mm.io_attr
    a, b = operand(ka, (M, K), rng), operand(kb, (K, N), rng)
    kw = {}
    if quant:
        nq = {"layer": 1, "channel": N, "group": N * K // max(gs, 1)}[quant]
        sb = rng.uniform(0.005, 0.05, nq).astype(np.float32)
        zb = rng.integers(-3, 4, nq)
        za = int(rng.integers(-3, 4)) if ka != "f16" else 0
        mm.set_quant_params("B", sb, zb)
        mm.set_quant_params("A", 0.03, za)
        mm.set_quant_params("C", 0.7, 2)
        kw = dict(sa=np.float32(0.03), za=za, sb=sb, zb=zb, sc=np.float32(0.7), zc=2, gs=gs)
    ma, mb, mc = (track.mem(mm.create_mem(x)) for x in "ABC")
    for m, x in zip((ma, mb, mc), "ABC"):
        mm.set_io_mem(m, x)
    # A
    if AC_layout:
        s = io.A.dims[2]
        assert io.A.dims[:2] == (-(-K // s), M)
        fill(ma, native_a(a, s), ka)
    else:
        assert io.A.dims == (M, K)
        fill(ma, a, ka)
    # B
    if B_layout == MatmulLayout.NATIVE:
        src = pack_int4(b) if kb == "i4" else b
        nb = b_normal_layout_to_native_layout(src, K, N, mm)
        assert nb.nbytes == io.B.size
        if kb != "i4":
            assert nb.shape == io.B.dims
            np.testing.assert_array_equal(nb, native_b(b, io.B.dims[2], io.B.dims[3]))
        else:
            np.testing.assert_array_equal(
                unpack_int4(nb), native_b(b, io.B.dims[2], io.B.dims[3]).ravel())
        np.asarray(mb)[...] = nb if kb == "i4" else nb
    elif B_layout == MatmulLayout.TP_NORM:
        assert io.B.dims == (N, K)
        fill(mb, np.ascontiguousarray(b.T), kb)
    else:
        assert io.B.dims == (K, N)
        fill(mb, b, kb)
    mm.run()
    c = np.asarray(mc)
    want_dtype = np.uint16 if tc == "bf16" else tc
    assert c.dtype == want_dtype
    assert mc.dtype == want_dtype and io.C.dtype == want_dtype
    got = from_native_c(c, M, N) if AC_layout else c
    assert got.shape == (M, N)
    compare(t, got.copy(), reference(t, a, b, **kw))
    del c, got
    return mm


# ---- numbers -----------------------------------------------------------------------------------
@pytest.mark.parametrize("b_layout", list(MatmulLayout))
@pytest.mark.parametrize("t", list(KINDS))
def test_every_type_and_b_layout_matches_numpy(track, t, b_layout):
    run_case(track, t, 3, 64, 40, B_layout=b_layout, seed=int(t))


@pytest.mark.parametrize("t", list(KINDS))
def test_native_a_and_c_layouts_match_numpy(track, t):
    mm = run_case(track, t, 5, 96, 72, B_layout=MatmulLayout.NATIVE, AC_layout=1, seed=7)
    io = mm.io_attr
    assert len(io.A.dims) == 3 and len(io.C.dims) == 3 and len(io.B.dims) == 4


@pytest.mark.parametrize("t", [t for t in NOT_INT4])
def test_rk3566_blocks_differ_and_numbers_match(track, t):
    """RK3566 has smaller native blocks (the io_attr dims say so) and no int4."""
    mm = run_case(track, t, 2, 64, 48, B_layout=MatmulLayout.NATIVE, AC_layout=1,
                  platform="RK3566", seed=3)
    io = mm.io_attr
    es = 1 if KINDS[t][0] == "i8" else 2
    assert io.A.dims[2] == (8 if es == 1 else 4)
    kb = KINDS[t][1]
    assert io.B.dims[2:] == ((16, 32) if kb == "i8" else (8, 16))


@pytest.mark.parametrize("t", INT4)
def test_int4_types_refused_on_rk3566(track, t):
    track.ctl.set_platform("RK3566")
    with pytest.raises(rknnx.errors.ParamInvalidError) as ei:
        MatmulContext(2, 64, 64, t)
    assert ei.value.func == "rknn_matmul_create"
    with pytest.raises(rknnx.RKNNError):
        b_normal_layout_to_native_layout(np.zeros(64 * 64 // 2, np.uint8), 64, 64, t)


def test_rv1106_has_no_matmul(track):
    track.ctl.set_platform("RV1106")
    with pytest.raises(rknnx.NotSupportedError, match="^rknn_matmul_create is not supported on "
                                                      "RV1106 ") as ei:
        MatmulContext(2, 64, 64, T.INT8_MM_INT8_TO_INT32)
    assert ei.value.func == "rknn_matmul_create"
    with pytest.raises(rknnx.RKNNError):
        b_normal_layout_to_native_layout(np.zeros((64, 64), np.int8), 64, 64,
                                         T.INT8_MM_INT8_TO_INT32)
    assert rknnx._core.live_contexts() == 0


@pytest.mark.parametrize("quant", ["layer", "channel"])
@pytest.mark.parametrize("t", [T.INT8_MM_INT8_TO_INT32, T.INT8_MM_INT8_TO_INT8,
                               T.INT8_MM_INT8_TO_FLOAT32, T.FLOAT16_MM_INT8_TO_FLOAT32,
                               T.FLOAT16_MM_INT4_TO_FLOAT16, T.INT8_MM_INT4_TO_INT32])
def test_quant_params_per_layer_and_channel(track, t, quant):
    run_case(track, t, 3, 64, 40, quant=quant, seed=11)


@pytest.mark.parametrize("b_layout", [0, 1, 2])
@pytest.mark.parametrize("t", GROUP_TYPES)
def test_per_group_quantization(track, t, b_layout):
    run_case(track, t, 2, 128, 40, B_layout=b_layout, quant="group", gs=32, seed=5)


def test_get_quant_params_returns_copies_of_b(track):
    mm = track.matmul(2, 64, 8, T.INT8_MM_INT8_TO_INT32, B_quant_type=MatmulQuantType.PER_CHANNEL_SYM)
    q, c_scale = mm.get_quant_params()
    assert q.scale.size == 0 and q.zp.size == 0 and c_scale == 1.0
    sb = np.linspace(0.01, 0.08, 8, dtype=np.float32)
    mm.set_quant_params("B", sb, 0)
    mm.set_quant_params("A", 0.5)
    q, c_scale = mm.get_quant_params()
    assert q.name == "B" and q.scale.dtype == np.float32 and q.zp.dtype == np.int32
    np.testing.assert_array_equal(q.scale, sb)
    np.testing.assert_array_equal(q.zp, [0])
    assert c_scale == pytest.approx(0.5 * 0.01)
    q.scale[:] = 99                                         # a copy: the runtime's is intact
    np.testing.assert_array_equal(mm.get_quant_params()[0].scale, sb)


def test_quant_params_checked_before_c(track):
    mm = track.matmul(2, 64, 8, T.FLOAT16_MM_INT8_TO_FLOAT32,
                      B_quant_type=MatmulQuantType.PER_GROUP_SYM, group_size=32)
    with pytest.raises(ValueError, match="'A', 'B' or 'C'"):
        mm.set_quant_params("D", 1.0)
    with pytest.raises(ValueError, match=r"B \(per_group_sym\) needs 16 scale\(s\) .*got 8"):
        mm.set_quant_params("B", np.ones(8))
    with pytest.raises(ValueError, match="A .* needs 1 scale"):
        mm.set_quant_params("A", [1.0, 2.0])
    with pytest.raises(ValueError, match="positive and finite"):
        mm.set_quant_params("C", 0.0)
    with pytest.raises(ValueError, match="positive and finite"):
        mm.set_quant_params("C", float("nan"))
    with pytest.raises(ValueError, match="0, 1 or 16 zero point"):
        mm.set_quant_params("B", np.ones(16), [1, 2])
    with pytest.raises(TypeError, match="zero points must be integers"):
        mm.set_quant_params("B", np.ones(16), 0.5)
    mm.set_quant_params("B", np.ones(16), np.arange(16))


# ---- dynamic shapes ---------------------------------------------------------------------------
@pytest.mark.parametrize("t", [T.FLOAT16_MM_FLOAT16_TO_FLOAT32, T.INT8_MM_INT8_TO_INT32,
                               T.FLOAT16_MM_INT4_TO_FLOAT32])
def test_dynamic_shapes_bind_b_once_and_rebind_a_c(track, t):
    ka, kb, _ = KINDS[t]
    shapes = [(1, 64, 32), (4, 64, 32), (7, 64, 32)]
    mm = track.matmul(type=t, B_layout=MatmulLayout.NATIVE, shapes=shapes)
    assert mm.dynamic and mm.shapes == tuple(shapes) and mm.shape == shapes[0]
    ios = mm.io_attrs
    assert [io.A.dims for io in ios] == [(m, 64) for m, _, _ in shapes]
    rng = np.random.default_rng(1)
    b = operand(kb, (64, 32), rng)
    ma = track.mem(mm.create_mem(max(io.A.size for io in ios)))
    mc = track.mem(mm.create_mem(max(io.C.size for io in ios)))
    mb = track.mem(mm.create_mem("B"))
    nb = b_normal_layout_to_native_layout(pack_int4(b) if kb == "i4" else b, 64, 32, mm)
    np.asarray(mb)[...] = nb
    mm.set_io_mem(mb, "B")
    for s in reversed(shapes):
        mm.set_dynamic_shape(s)
        assert mm.shape == s and mm.io_attr == ios[shapes.index(s)]
        mm.set_io_mem(ma, "A")
        mm.set_io_mem(mc, "C")
        a = operand(ka, (s[0], 64), rng)
        fill(ma, a, ka)
        mm.run()
        compare(t, np.asarray(mc).copy(), reference(t, a, b))
    with pytest.raises(ValueError, match=r"not one of the context's shapes"):
        mm.set_dynamic_shape((2, 64, 32))
    with pytest.raises(TypeError, match="triple"):
        mm.set_dynamic_shape(5)


def test_dynamic_shape_with_other_k_and_transposed_b(track):
    t = T.FLOAT16_MM_FLOAT16_TO_FLOAT32
    shapes = [(2, 32, 16), (3, 64, 16)]
    mm = track.matmul(type=t, B_layout=MatmulLayout.TP_NORM, shapes=shapes)
    rng = np.random.default_rng(2)
    mems = {x: track.mem(mm.create_mem(max(getattr(io, x).size for io in mm.io_attrs)))
            for x in "ABC"}
    for s in shapes:
        mm.set_dynamic_shape(s)
        for x, m in mems.items():
            mm.set_io_mem(m, x)
        a, b = operand("f16", (s[0], s[1]), rng), operand("f16", (s[1], s[2]), rng)
        np.asarray(mems["A"])[...] = a
        np.asarray(mems["B"])[...] = b.T
        mm.run()
        compare(t, np.asarray(mems["C"]).copy(), reference(t, a, b))


# ---- int4 packing -----------------------------------------------------------------------------
def test_int4_nibble_order_round_trips_through_the_npu(track):
    """Even elements in the low nibble: a B of one column [1, -2, 3, ...] with A = ones
    computes their sum only if the packing agrees with the runtime."""
    v = np.array([1, -2, 3, -8, 7, 0, -1], np.int8)
    p = pack_int4(v)
    assert p.tolist() == [0xE1, 0x83, 0x07, 0x0F]
    np.testing.assert_array_equal(unpack_int4(p, v.size), v)
    assert unpack_int4(p).size == 8
    with pytest.raises(ValueError, match="-8..7"):
        pack_int4([8])
    with pytest.raises(TypeError):
        pack_int4([0.5])
    mm = track.matmul(1, 64, 64, T.INT4_MM_INT4_TO_INT16)
    ma, mb, mc = (track.mem(mm.create_mem(x)) for x in "ABC")
    for m, x in zip((ma, mb, mc), "ABC"):
        mm.set_io_mem(m, x)
    assert mm.io_attr.A.packed and mm.io_attr.A.shape == (32,) and ma.shape == (32,)
    assert ma.attr.type == TensorType.INT4
    a = np.zeros((1, 64), np.int8)
    a[0, 1] = 1                                             # odd element: high nibble
    b = np.arange(64 * 64).reshape(64, 64) % 16 - 8
    np.asarray(ma)[...] = pack_int4(a)
    assert np.asarray(ma)[0] == 0x10
    np.asarray(mb)[...] = pack_int4(b)
    mm.run()
    np.testing.assert_array_equal(np.asarray(mc)[0], b[1])


# ---- validation before C -----------------------------------------------------------------------
@pytest.mark.parametrize("kw, exc, msg", [
    (dict(M=2, K=64, N=8), TypeError, "needs type="),
    (dict(M=2, K=64, type=1), TypeError, "needs M, K and N"),
    (dict(M=2, K=64, N=8, type=13), ValueError, "not a MatmulType"),
    (dict(M=0, K=64, N=8, type=1), ValueError, "M must be in 1.."),
    (dict(M=2, K=64, N=8, type=1, B_layout=3), ValueError, "B_layout 3 is not a MatmulLayout"),
    (dict(M=2, K=64, N=8, type=1, AC_layout=2), ValueError, "TP_NORM applies to B only"),
    (dict(M=2, K=64, N=8, type=1, AC_quant_type=2), ValueError, "per layer only"),
    (dict(M=2, K=64, N=8, type=5, B_quant_type=4), ValueError, "needs group_size > 0"),
    (dict(M=2, K=48, N=8, type=5, B_quant_type=4, group_size=32), ValueError,
     "K 48 is not a multiple of group_size 32"),
    (dict(M=2, K=64, N=8, type=1, shapes=[(1, 2, 3)]), TypeError, "not both"),
    (dict(type=1, shapes=[]), ValueError, "at least one"),
    (dict(type=1, shapes=[(1, 2)]), TypeError, "triple"),
    (dict(type=1, shapes=[(1, 32, 8), (1, 32, 8)]), ValueError, "given twice"),
    (dict(M="2", K=64, N=8, type=1), TypeError, "M must be an int"),
])
def test_create_arguments_checked_before_c(emu, kw, exc, msg):
    emu.set_platform("RK3588")
    before = emu.counters()["contexts_created"]
    with pytest.raises(exc, match=msg):
        MatmulContext(**kw)
    assert emu.counters()["contexts_created"] == before


def test_runtime_refusals_keep_the_vendor_error(track):
    track.ctl.set_platform("RK3588")
    with pytest.raises(rknnx.errors.ParamInvalidError) as ei:           # group_size % 32 != 0
        MatmulContext(2, 48, 8, T.FLOAT16_MM_INT8_TO_FLOAT32,
                      B_quant_type=MatmulQuantType.PER_GROUP_SYM, group_size=16)
    assert ei.value.func == "rknn_matmul_create"
    mm = track.matmul(1, 32, 32, T.INT8_MM_INT8_TO_INT32)
    for x in "ABC":
        mm.set_io_mem(track.mem(mm.create_mem(x)), x)
    with track.ctl.injected("rknn_matmul_run", 1, "RKNN_ERR_TIMEOUT"):
        with pytest.raises(rknnx.errors.RKNNTimeoutError):
            mm.run()
    mm.run()


def test_io_and_core_mask_arguments(track):
    mm = track.matmul(2, 64, 32, T.FLOAT16_MM_FLOAT16_TO_FLOAT32)
    with pytest.raises(ValueError, match="missing A, B, C"):
        mm.run()
    small = track.mem(mm.create_mem(16))
    with pytest.raises(ValueError, match="too small for matmul tensor A .* at least 256 bytes"):
        mm.set_io_mem(small, "A")
    with pytest.raises(ValueError, match="expected 'A', 'B', 'C'"):
        mm.set_io_mem(small, "X")
    with pytest.raises(ValueError, match="expected 'A', 'B', 'C'"):
        mm.create_mem("X")
    with pytest.raises(ValueError, match="size must be 1.."):
        mm.create_mem(0)
    mm.set_core_mask(rknnx.lowlevel.CoreMask.CORE_0_1)
    with pytest.raises(ValueError, match="not a core mask"):
        mm.set_core_mask(-1)
    with pytest.raises(rknnx.errors.ParamInvalidError):
        mm.set_core_mask(rknnx.lowlevel.CoreMask.UNDEFINED)
    with pytest.raises(TypeError):
        MatmulTensorAttr()


def test_b_conversion_arguments(track):
    track.ctl.set_platform("RK3588")
    t = T.INT8_MM_INT8_TO_INT32
    with pytest.raises(TypeError, match="B must be int8"):
        b_normal_layout_to_native_layout(np.zeros((64, 32), np.float32), 64, 32, t)
    with pytest.raises(ValueError, match=r"shape \(64, 32\)"):
        b_normal_layout_to_native_layout(np.zeros((32, 64), np.int8), 64, 32, t)
    with pytest.raises(ValueError, match="2048 bytes"):
        b_normal_layout_to_native_layout(np.zeros(100, np.int8), 64, 32, t)
    with pytest.raises(ValueError, match="C-contiguous"):
        b_normal_layout_to_native_layout(np.zeros((32, 64), np.int8).T, 64, 32, t)
    with pytest.raises(TypeError, match="packed bytes"):
        b_normal_layout_to_native_layout(np.zeros((64, 32), np.int16), 64, 32,
                                         T.FLOAT16_MM_INT4_TO_FLOAT32)
    with pytest.raises(ValueError, match="not a MatmulType"):
        b_normal_layout_to_native_layout(np.zeros((64, 32), np.int8), 64, 32, 99)
    with pytest.raises(ValueError, match="K must be in 1.."):
        b_normal_layout_to_native_layout(np.zeros((64, 32), np.int8), 0, 32, t)
    out = b_normal_layout_to_native_layout(np.ones((64, 32), np.int8), 64, 32, t)
    assert out.shape == (1, 2, 32, 32) and out.dtype == np.int8 and out.sum() == 64 * 32


# ---- lifetimes --------------------------------------------------------------------------------
def test_close_rules_and_use_after_close(track):
    mm = track.matmul(2, 64, 32, T.FLOAT16_MM_FLOAT16_TO_FLOAT32)
    ma = mm.create_mem("A")
    assert ma.context is mm and mm.mems == [ma]
    v = np.asarray(ma)
    assert v.shape == (2, 64) and v.dtype == np.float16
    with pytest.raises(BufferError, match="1 buffer view"):
        mm.close()
    with pytest.raises(BufferError):
        ma.close()
    assert not mm.closed and not ma.closed
    del v
    with pytest.warns(ResourceWarning, match="still open when its MatmulContext closed"):
        mm.close()
    assert mm.closed and ma.closed
    mm.close()
    for call in (lambda: mm.run(), lambda: mm.create_mem(8), lambda: mm.io_attr,
                 lambda: mm.set_core_mask(0), lambda: mm.set_quant_params("A", 1.0),
                 lambda: mm.get_quant_params(), lambda: mm.set_dynamic_shape((2, 64, 32))):
        with pytest.raises(ValueError, match="closed MatmulContext"):
            call()
    assert repr(mm) == "<MatmulContext closed>"
    with MatmulContext(1, 32, 32, T.INT8_MM_INT8_TO_INT32) as m2:
        assert "INT8_MM_INT8_TO_INT32" in repr(m2)
    assert m2.closed


def test_closed_bound_mem_refused_by_run(track):
    mm = track.matmul(1, 32, 32, T.INT8_MM_INT8_TO_INT32)
    mems = [mm.create_mem(x) for x in "ABC"]
    for m, x in zip(mems, "ABC"):
        mm.set_io_mem(m, x)
    assert set(mm.bindings) == {"A", "B", "C"}
    mems[1].close()
    with pytest.raises(ValueError, match="bound as 'B' was closed"):
        mm.run()
    mems[1] = mm.create_mem("B")
    mm.set_io_mem(mems[1], "B")
    mm.run()
    for m in mems:
        m.close()


def test_mems_keep_the_context_alive_and_gc_in_any_order(emu):
    from helpers import live

    emu.set_platform("RK3588")
    base = live(emu)
    for order in range(3):
        mm = MatmulContext(2, 32, 32, T.INT8_MM_INT8_TO_INT8)
        mems = [mm.create_mem(x) for x in "ABC"]
        for i, x in enumerate("ABC"):
            mm.set_io_mem(mems[i], x)
        view = np.asarray(mems[2])
        ref = weakref.ref(mm)
        del mm
        gc.collect()
        assert ref() is not None                            # the mems hold it
        if order == 0:
            del mems
            gc.collect()
            assert ref() is not None                        # the view holds its mem
            del view
        elif order == 1:
            del view
            mems.reverse()
            del mems
        else:
            mems[0].close()
            del view, mems
        gc.collect()
        assert ref() is None
        assert live(emu) == base


def test_create_run_destroy_cycles_leave_counters_at_baseline(emu):
    from helpers import live

    emu.set_platform("RK3588")
    base = live(emu)
    for i in range(200):
        with MatmulContext(1, 32, 32, T.FLOAT16_MM_FLOAT16_TO_FLOAT32) as mm:
            mems = [mm.create_mem(x) for x in "ABC"]
            for m, x in zip(mems, "ABC"):
                mm.set_io_mem(m, x)
            mm.run()
            for m in mems:
                m.close()
    assert live(emu) == base and rknnx._core.live_contexts() == 0


def test_run_releases_the_gil_and_one_context_is_serialized(emu):
    emu.set_platform("RK3588")
    emu.set_npu_time_us(20000)
    ctxs = []
    for _ in range(3):
        mm = MatmulContext(1, 32, 32, T.INT8_MM_INT8_TO_INT32)
        for x in "ABC":
            mm.set_io_mem(mm.create_mem(x), x)
        ctxs.append(mm)
    emu.reset_counters()
    errors = []

    def work(mm):
        try:
            for _ in range(3):
                mm.run()
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(mm,)) for mm in ctxs + ctxs[:1]]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors
    c = emu.counters()
    assert c["runs"] == 12 and c["peak_runs_in_flight"] > 1
    for mm in ctxs:
        for m in mm.mems:
            m.close()
        mm.close()
