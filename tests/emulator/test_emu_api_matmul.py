"""Emulator runtime half: the matmul API (normal, transposed and native layouts, int8, int4
and float16 types, per-layer / per-channel / per-group quantization, dynamic shapes, the
K splitting of the native B layout), against numpy."""

import ctypes as C

import numpy as np
import pytest

from emu_capi import (CTX_INVALID, FAIL, PARAM_INVALID, SUCC, MatmulInfo, MMIOAttr, MMShape,
                      MMTensorAttr, QuantParams, TensorMem, addr, api, emu, mem_view)

__all__ = ["emu"]


# type -> (A, B, C) numpy dtypes
TYPES = {1: (np.float16, np.float16, np.float32), 2: (np.int8, np.int8, np.int32),
         3: (np.int8, np.int8, np.int8), 4: (np.float16, np.float16, np.float16),
         5: (np.float16, np.int8, np.float32), 6: (np.float16, np.int8, np.float16),
         9: (np.int8, np.int8, np.float32)}


def mlib():
    lib = api()
    sig = {
        "rknn_matmul_create": (C.c_int, [C.POINTER(C.c_uint64), C.POINTER(MatmulInfo), C.POINTER(MMIOAttr)]),
        "rknn_matmul_create_dynamic_shape": (C.c_int, [C.POINTER(C.c_uint64), C.POINTER(MatmulInfo), C.c_int,
                                                       C.POINTER(MMShape), C.POINTER(MMIOAttr)]),
        "rknn_matmul_set_io_mem": (C.c_int, [C.c_uint64, C.c_void_p, C.POINTER(MMTensorAttr)]),
        "rknn_matmul_set_core_mask": (C.c_int, [C.c_uint64, C.c_int]),
        "rknn_matmul_set_quant_params": (C.c_int, [C.c_uint64, C.POINTER(QuantParams)]),
        "rknn_matmul_get_quant_params": (C.c_int, [C.c_uint64, C.POINTER(QuantParams), C.POINTER(C.c_float)]),
        "rknn_matmul_set_dynamic_shape": (C.c_int, [C.c_uint64, C.POINTER(MMShape)]),
        "rknn_matmul_run": (C.c_int, [C.c_uint64]),
        "rknn_matmul_destroy": (C.c_int, [C.c_uint64]),
        "rknn_B_normal_layout_to_native_layout": (C.c_int, [C.c_void_p, C.c_void_p, C.c_int, C.c_int,
                                                            C.POINTER(MatmulInfo)]),
    }
    for n, (r, a) in sig.items():
        f = getattr(lib, n)
        f.restype, f.argtypes = r, a
    return lib


def expected(t, a, b, sa=1.0, za=0, sb=None, zb=None, sc=1.0, zc=0):
    n = b.shape[1]
    sb = np.full(n, 1.0, np.float32) if sb is None else np.broadcast_to(np.float32(sb), (n,))
    zb = np.zeros(n, np.int64) if zb is None else np.broadcast_to(np.int64(zb), (n,))
    ta, tb, tc = TYPES[t]
    if ta == np.int8:
        acc = (a.astype(np.int64) - za) @ (b.astype(np.int64) - zb)
        if tc == np.int32:
            return acc.astype(np.int32)
        if tc == np.int8:
            mul = (np.float64(np.float32(sa)) * sb.astype(np.float64)) / np.float64(np.float32(sc))
            return np.clip(np.rint(acc * mul) + zc, -128, 127).astype(np.int8)
        return (acc * np.float64(np.float32(sa)) * sb.astype(np.float64)).astype(np.float32)
    af = a.astype(np.float32)
    bf = b.astype(np.float32) if tb == np.float16 else \
        ((b.astype(np.int64) - zb).astype(np.float32) * sb.astype(np.float32))
    out = np.zeros((a.shape[0], n), np.float32)
    for k in range(a.shape[1]):          # float32, accumulated in k order
        out += af[:, k:k + 1] * bf[k:k + 1, :]
    return out.astype(tc)


def operands(t, M, K, N, seed):
    rng = np.random.default_rng(seed)
    ta, tb, _ = TYPES[t]
    a = (rng.integers(-100, 100, (M, K)) if ta == np.int8 else rng.standard_normal((M, K))).astype(ta)
    b = (rng.integers(-100, 100, (K, N)) if tb == np.int8 else rng.standard_normal((K, N))).astype(tb)
    return a, b


class MM:
    def __init__(self, t, M, K, N, B_layout=0, AC_layout=0, B_quant_type=0, shapes=None,
                 group_size=0):
        self.lib = mlib()
        self.info = MatmulInfo(M=M, K=K, N=N, type=t, B_layout=B_layout, AC_layout=AC_layout,
                               B_quant_type=B_quant_type, group_size=group_size)
        self.h = C.c_uint64()
        if shapes:
            self.io = (MMIOAttr * len(shapes))()
            sh = (MMShape * len(shapes))(*[MMShape(*s) for s in shapes])
            rc = self.lib.rknn_matmul_create_dynamic_shape(C.byref(self.h), C.byref(self.info),
                                                           len(shapes), sh, self.io)
        else:
            self.io = (MMIOAttr * 1)()
            rc = self.lib.rknn_matmul_create(C.byref(self.h), C.byref(self.info), self.io)
        assert rc == SUCC, rc
        self.mems = []

    def mem(self, size):
        m = self.lib.rknn_create_mem(self.h.value, size)
        assert addr(m)
        self.mems.append(m)
        return m

    def close(self):
        for m in self.mems:
            assert self.lib.rknn_destroy_mem(self.h.value, m) == SUCC
        assert self.lib.rknn_matmul_destroy(self.h.value) == SUCC


@pytest.mark.parametrize("chip", ["RK3588", "RK3566"])
@pytest.mark.parametrize("t", sorted(TYPES))
@pytest.mark.parametrize("b_layout", [0, 2])
def test_matmul_normal(emu, chip, t, b_layout):
    emu.set_platform(chip)
    M, K, N = 5, 40, 24
    mm = MM(t, M, K, N, B_layout=b_layout)
    io = mm.io[0]
    assert (io.A.name, tuple(io.A.dims[:2]), io.A.size) == (b"A", (M, K), M * K * np.dtype(TYPES[t][0]).itemsize)
    assert tuple(io.B.dims[:2]) == ((K, N) if b_layout == 0 else (N, K))
    assert tuple(io.C.dims[:2]) == (M, N) and io.C.size == M * N * np.dtype(TYPES[t][2]).itemsize
    a, b = operands(t, M, K, N, t)
    ma, mb, mc = mm.mem(io.A.size), mm.mem(io.B.size), mm.mem(io.C.size)
    mem_view(ma, a.nbytes)[:] = a.view(np.uint8).ravel()
    bb = b if b_layout == 0 else np.ascontiguousarray(b.T)
    mem_view(mb, b.nbytes)[:] = bb.view(np.uint8).ravel()
    kw = {}
    if TYPES[t][1] == np.int8 and t != 2:
        kw = dict(sa=0.02, za=3, sb=0.01, zb=-2, sc=0.5, zc=4)
        for name, s, z in ((b"A", 0.02, 3), (b"B", 0.01, -2), (b"C", 0.5, 4)):
            sc, zp = (C.c_float * 1)(s), (C.c_int32 * 1)(z)
            q = QuantParams(name=name, scale=sc, scale_len=1, zp=zp, zp_len=1)
            assert mm.lib.rknn_matmul_set_quant_params(mm.h.value, C.byref(q)) == SUCC
    for m, attr in ((ma, io.A), (mb, io.B), (mc, io.C)):
        assert mm.lib.rknn_matmul_set_io_mem(mm.h.value, m, C.byref(attr)) == SUCC
    assert mm.lib.rknn_matmul_set_core_mask(mm.h.value, 3) == (SUCC if chip == "RK3588" else FAIL)
    assert mm.lib.rknn_matmul_run(mm.h.value) == SUCC
    tc = TYPES[t][2]
    got = mem_view(mc, io.C.size, tc).reshape(M, N)
    exp = expected(t, a, b, **kw)
    if np.dtype(tc).kind == "f":
        np.testing.assert_allclose(got.astype(np.float64), exp.astype(np.float64), rtol=1e-6, atol=1e-6)
    else:
        np.testing.assert_array_equal(got, exp)
    mm.close()


@pytest.mark.parametrize("chip,s,nn,kk", [("RK3588", 16, 32, 32), ("RK3566", 8, 16, 32)])
def test_matmul_native_layouts(emu, chip, s, nn, kk):
    """A native (K/s, M, s), B native (N/n, K/k, n, k) via the helper, C native (N/4, M, 4)."""
    emu.set_platform(chip)
    M, K, N, t = 3, 40, 20, 2
    mm = MM(t, M, K, N, B_layout=1, AC_layout=1)
    io = mm.io[0]
    Kp = -(-K // s) * s
    assert tuple(io.A.dims[:3]) == (Kp // s, M, s)
    assert tuple(io.B.dims[:4]) == (-(-N // nn), -(-K // kk), nn, kk)
    assert tuple(io.C.dims[:3]) == (N // 4, M, 4)
    a, b = operands(t, M, K, N, 7)
    an = np.zeros((Kp // s, M, s), np.int8)
    for k in range(K):
        an[k // s, :, k % s] = a[:, k]
    ma, mb, mc = mm.mem(io.A.size), mm.mem(io.B.size), mm.mem(io.C.size)
    mem_view(ma, an.nbytes)[:] = an.view(np.uint8).ravel()
    bn = np.zeros(io.B.size, np.int8)
    assert mm.lib.rknn_B_normal_layout_to_native_layout(b.ctypes.data, bn.ctypes.data, K, N,
                                                         C.byref(mm.info)) == SUCC
    ref = np.zeros(tuple(io.B.dims[:4]), np.int8)
    for k in range(K):
        for n in range(N):
            ref[n // nn, k // kk, n % nn, k % kk] = b[k, n]
    np.testing.assert_array_equal(bn, ref.ravel())
    mem_view(mb, bn.nbytes)[:] = bn.view(np.uint8)
    for m, attr in ((ma, io.A), (mb, io.B), (mc, io.C)):
        assert mm.lib.rknn_matmul_set_io_mem(mm.h.value, m, C.byref(attr)) == SUCC
    assert mm.lib.rknn_matmul_run(mm.h.value) == SUCC
    cn = mem_view(mc, io.C.size, np.int32).reshape(N // 4, M, 4)
    got = cn.transpose(1, 0, 2).reshape(M, N)
    np.testing.assert_array_equal(got, expected(t, a, b))
    mm.close()


def test_matmul_dynamic_and_per_channel(emu):
    shapes = [(2, 32, 16), (4, 32, 16), (8, 32, 16)]
    mm = MM(3, 0, 0, 0, B_quant_type=2, shapes=shapes)
    lib, h = mm.lib, mm.h.value
    big = max(range(3), key=lambda i: mm.io[i].A.size)
    ma, mb, mc = mm.mem(mm.io[big].A.size), mm.mem(mm.io[0].B.size), mm.mem(mm.io[big].C.size)
    _, b = operands(3, 1, 32, 16, 9)
    mem_view(mb, b.nbytes)[:] = b.view(np.uint8).ravel()
    sb = np.linspace(0.005, 0.02, 16).astype(np.float32)
    q = QuantParams(name=b"B", scale=sb.ctypes.data_as(C.POINTER(C.c_float)), scale_len=16)
    assert lib.rknn_matmul_set_quant_params(h, C.byref(q)) == SUCC
    q1 = QuantParams(name=b"B", scale=sb.ctypes.data_as(C.POINTER(C.c_float)), scale_len=1)
    assert lib.rknn_matmul_set_quant_params(h, C.byref(q1)) == PARAM_INVALID   # needs N scales
    for name, s in ((b"A", 0.03), (b"C", 0.2)):
        sc = (C.c_float * 1)(s)
        assert lib.rknn_matmul_set_quant_params(h, C.byref(QuantParams(name=name, scale=sc, scale_len=1))) == SUCC
    got_q, est = QuantParams(), C.c_float()
    assert lib.rknn_matmul_get_quant_params(h, C.byref(got_q), C.byref(est)) == SUCC
    assert got_q.scale_len == 16 and abs(est.value - 0.03 * sb[0]) < 1e-9
    assert lib.rknn_matmul_set_io_mem(h, mb, C.byref(mm.io[0].B)) == SUCC
    for i, (M, K, N) in enumerate(shapes):
        assert lib.rknn_matmul_set_dynamic_shape(h, C.byref(MMShape(M, K, N))) == SUCC
        a, _ = operands(3, M, K, N, 10 + i)
        mem_view(ma, a.nbytes)[:] = a.view(np.uint8).ravel()
        assert lib.rknn_matmul_set_io_mem(h, ma, C.byref(mm.io[i].A)) == SUCC
        assert lib.rknn_matmul_set_io_mem(h, mc, C.byref(mm.io[i].C)) == SUCC
        assert lib.rknn_matmul_run(h) == SUCC
        got = mem_view(mc, M * N, np.int8).reshape(M, N)
        np.testing.assert_array_equal(got, expected(3, a, b, sa=0.03, sb=sb, sc=0.2))
    assert lib.rknn_matmul_set_dynamic_shape(h, C.byref(MMShape(3, 32, 16))) == PARAM_INVALID
    mm.close()


def test_matmul_errors(emu):
    lib = mlib()
    h = C.c_uint64()
    io = MMIOAttr()
    info = MatmulInfo(M=4, K=32, N=32, type=13)                      # no such type
    assert lib.rknn_matmul_create(C.byref(h), C.byref(info), C.byref(io)) == PARAM_INVALID
    info = MatmulInfo(M=0, K=32, N=32, type=1)
    assert lib.rknn_matmul_create(C.byref(h), C.byref(info), C.byref(io)) == PARAM_INVALID
    info = MatmulInfo(M=4, K=32, N=32, type=1, B_quant_type=4, group_size=32)   # fp16 B
    assert lib.rknn_matmul_create(C.byref(h), C.byref(info), C.byref(io)) == PARAM_INVALID
    assert lib.rknn_matmul_create(None, C.byref(info), C.byref(io)) == PARAM_INVALID
    emu.set_platform("RV1106")
    info = MatmulInfo(M=4, K=32, N=32, type=1)
    assert lib.rknn_matmul_create(C.byref(h), C.byref(info), C.byref(io)) == FAIL
    emu.set_platform("RK3566")
    assert lib.rknn_matmul_create(C.byref(h), C.byref(info), C.byref(io)) == SUCC
    assert lib.rknn_matmul_set_core_mask(h.value, 1) == FAIL           # single core
    assert lib.rknn_matmul_run(h.value) == PARAM_INVALID               # nothing bound
    assert lib.rknn_run(h.value, None) == CTX_INVALID                  # not a model context
    m = lib.rknn_create_mem(h.value, 16)
    assert lib.rknn_matmul_set_io_mem(h.value, m, C.byref(io.A)) == PARAM_INVALID   # too small
    assert lib.rknn_destroy_mem(h.value, m) == SUCC
    assert lib.rknn_matmul_destroy(h.value) == SUCC
    assert lib.rknn_matmul_destroy(h.value) == CTX_INVALID
    assert lib.rknn_matmul_run(12345) == CTX_INVALID


# ---- int4, per-group quantization, K splitting ----------------------------------------------
#
# The emulator's documented conventions (emulator/runtime_matmul.c): int4 elements are packed
# two per byte in the tensor's layout order, the even element in the low nibble; per-group B
# parameters are indexed n * (K / group_size) + k / group_size.

# type -> (A kind, B kind, C dtype); kinds "f16", "i8", "i4"
ALL_TYPES = {1: ("f16", "f16", np.float32), 2: ("i8", "i8", np.int32), 3: ("i8", "i8", np.int8),
             4: ("f16", "f16", np.float16), 5: ("f16", "i8", np.float32),
             6: ("f16", "i8", np.float16), 7: ("f16", "i4", np.float32),
             8: ("f16", "i4", np.float16), 9: ("i8", "i8", np.float32),
             10: ("i4", "i4", np.int16), 11: ("i8", "i4", np.int32), 12: ("f16", "i4", "bf16"),
             15: ("i8", "i4", np.float16)}
INT4_TYPES = [7, 8, 10, 11, 12, 15]
GROUP_TYPES = [5, 6, 7, 8, 9, 12, 15]


def pack_i4(v):
    """int values -8..7 in layout order -> bytes, even element in the low nibble."""
    v = np.asarray(v, np.int64).ravel() & 0xF
    if v.size % 2:
        v = np.append(v, 0)
    return (v[0::2] | (v[1::2] << 4)).astype(np.uint8)


def unpack_i4(b, n):
    b = np.asarray(b, np.uint8)
    v = np.empty(b.size * 2, np.int64)
    v[0::2], v[1::2] = b & 0xF, b >> 4
    v = v[:n]
    return np.where(v >= 8, v - 16, v).astype(np.int8)


def to_bytes(x, kind):
    return pack_i4(x) if kind == "i4" else np.ascontiguousarray(x).view(np.uint8).ravel()


def native_a(a, s):
    M, K = a.shape
    Kp = -(-K // s) * s
    out = np.zeros((Kp // s, M, s), a.dtype)
    ap = np.zeros((M, Kp), a.dtype)
    ap[:, :K] = a
    out[:] = ap.reshape(M, Kp // s, s).transpose(1, 0, 2)
    return out


def native_b(b, nn, kk, seg=0):
    """(K, N) -> the native B element order, segment by segment along K when seg > 0."""
    K, N = b.shape
    Np = -(-N // nn) * nn
    parts = []
    for k0 in (range(0, K, seg) if seg and K > seg else [0]):
        blk = b[k0:k0 + seg] if seg and K > seg else b
        Ks = -(-blk.shape[0] // kk) * kk
        p = np.zeros((Ks, Np), b.dtype)
        p[:blk.shape[0], :N] = blk
        parts.append(p.reshape(Ks // kk, kk, Np // nn, nn).transpose(2, 0, 3, 1).ravel())
    return np.concatenate(parts)


def from_native_c(c, M, N, sc):
    return c.transpose(1, 0, 2).reshape(M, -1)[:, :N]


def bf16(x):
    u = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    nan = np.isnan(np.asarray(x, np.float32))
    r[nan] = ((u[nan] >> 16) | 0x40).astype(np.uint16)
    return r


def expand_b(vals, K, N, mode, gs, dtype):
    """B quantization parameters (1, N or N*K/gs values) as a (K, N) array."""
    v = np.asarray(vals, dtype).ravel()
    if v.size == 1:
        return np.full((K, N), v[0], dtype)
    if mode == "channel":
        return np.broadcast_to(v[None, :], (K, N)).astype(dtype)
    return v.reshape(N, K // gs)[:, np.arange(K) // gs].T.astype(dtype)


def reference(t, a, b, sa=1.0, za=0, sb=(1.0,), zb=(0,), sc=1.0, zc=0, mode="layer", gs=0):
    """C = A x B as the emulator documents it (numpy, bit for bit)."""
    ka, kb, tc = ALL_TYPES[t]
    K, N = b.shape
    gs = gs or K
    sbk = expand_b(sb, K, N, mode, gs, np.float32)
    zbk = expand_b(zb, K, N, mode, gs, np.int64)
    if ka != "f16":
        A = a.astype(np.int64) - za
        B = b.astype(np.int64) - zbk
        if tc in (np.int32, np.int16):
            info = np.iinfo(tc)
            return np.clip(A @ B, info.min, info.max).astype(tc)
        if tc == np.int8:
            mul = (np.float64(np.float32(sa)) * sbk[0].astype(np.float64)) / np.float64(np.float32(sc))
            return np.clip(np.rint((A @ B) * mul) + zc, -128, 127).astype(np.int8)
        f = np.zeros((a.shape[0], N), np.float64)
        for k0 in range(0, K, gs):
            acc = A[:, k0:k0 + gs] @ B[k0:k0 + gs]
            f = f + (acc.astype(np.float64) * np.float64(np.float32(sa))) * sbk[k0].astype(np.float64)
        f32 = f.astype(np.float32)
        return f32.astype(np.float16) if tc == np.float16 else f32
    af = a.astype(np.float32)
    bf = b.astype(np.float32) if kb == "f16" else (b.astype(np.int64) - zbk).astype(np.float32) * sbk
    out = np.zeros((a.shape[0], N), np.float32)
    for k in range(K):
        out += af[:, k:k + 1] * bf[k:k + 1, :]
    if isinstance(tc, str):
        return bf16(out)
    return out.astype(tc)


def rand_operand(kind, shape, rng):
    if kind == "f16":
        return rng.standard_normal(shape).astype(np.float16)
    lim = 8 if kind == "i4" else 100
    return rng.integers(-lim, lim, shape).astype(np.int8)


def c_dtype(t):
    tc = ALL_TYPES[t][2]
    return np.uint16 if isinstance(tc, str) else tc


def set_q(mm, name, scale, zp=None):
    s = np.ascontiguousarray(scale, np.float32)
    q = QuantParams(name=name, scale=s.ctypes.data_as(C.POINTER(C.c_float)), scale_len=s.size)
    if zp is not None:
        z = np.ascontiguousarray(zp, np.int32)
        q.zp, q.zp_len = z.ctypes.data_as(C.POINTER(C.c_int32)), z.size
    mm._keep = getattr(mm, "_keep", []) + [q]
    return mm.lib.rknn_matmul_set_quant_params(mm.h.value, C.byref(q))


def run_case(t, M, K, N, b_layout=0, ac_layout=0, mode="layer", gs=0, seed=0, quant=True):
    """Create, fill (through the documented layouts), run; returns (got, expected, mm)."""
    rng = np.random.default_rng(seed)
    ka, kb, _ = ALL_TYPES[t]
    qtype = {"layer": 1, "channel": 3, "group": 5}[mode]
    mm = MM(t, M, K, N, B_layout=b_layout, AC_layout=ac_layout, B_quant_type=qtype, group_size=gs)
    io = mm.io[0]
    a, b = rand_operand(ka, (M, K), rng), rand_operand(kb, (K, N), rng)
    kw = dict(mode=mode, gs=gs)
    if quant and (ka != "f16" or kb != "f16"):
        nq = {"layer": 1, "channel": N, "group": N * K // max(gs, 1)}[mode]
        sb = rng.uniform(0.005, 0.05, nq).astype(np.float32)
        zb = rng.integers(-3, 4, nq)
        za = int(rng.integers(-3, 4)) if ka != "f16" else 0
        kw.update(sa=0.03, za=za, sb=sb, zb=zb, sc=0.7, zc=2)
        assert set_q(mm, b"B", sb, zb) == SUCC
        assert set_q(mm, b"A", [0.03], [za]) == SUCC
        assert set_q(mm, b"C", [0.7], [2]) == SUCC
    # A
    if ac_layout:
        an = native_a(a, io.A.dims[2])
        assert tuple(io.A.dims[:3]) == an.shape
        abytes = to_bytes(an, ka)
    else:
        abytes = to_bytes(a, ka)
    assert io.A.size == abytes.size
    # B
    if b_layout == 1:
        bnorm = to_bytes(b, kb)
        bbytes = np.zeros(io.B.size, np.uint8)
        assert mm.lib.rknn_B_normal_layout_to_native_layout(
            bnorm.ctypes.data, bbytes.ctypes.data, K, N, C.byref(mm.info)) == SUCC
    elif b_layout == 2:
        bbytes = to_bytes(np.ascontiguousarray(b.T), kb)
    else:
        bbytes = to_bytes(b, kb)
    assert io.B.size == bbytes.size
    ma, mb, mc = mm.mem(io.A.size), mm.mem(io.B.size), mm.mem(io.C.size)
    mem_view(ma)[:abytes.size] = abytes
    mem_view(mb)[:bbytes.size] = bbytes
    for m, attr in ((ma, io.A), (mb, io.B), (mc, io.C)):
        assert mm.lib.rknn_matmul_set_io_mem(mm.h.value, m, C.byref(attr)) == SUCC
    assert mm.lib.rknn_matmul_run(mm.h.value) == SUCC
    cd = c_dtype(t)
    raw = mem_view(mc, io.C.size, cd).copy()
    got = from_native_c(raw.reshape(tuple(io.C.dims[:3])), M, N, io.C.dims[2]) if ac_layout \
        else raw.reshape(M, N)
    exp = reference(t, a, b, **kw)
    return got, exp, mm, (a, b, bbytes)


def assert_same(got, exp):
    if np.dtype(got.dtype).kind == "f":
        np.testing.assert_array_equal(got.view(np.uint8), np.asarray(exp, got.dtype).view(np.uint8))
    else:
        np.testing.assert_array_equal(got, exp)


@pytest.mark.parametrize("chip", ["RK3588", "RK3576"])
@pytest.mark.parametrize("t", INT4_TYPES)
@pytest.mark.parametrize("b_layout,ac_layout", [(0, 0), (2, 0), (1, 1)])
def test_matmul_int4(emu, chip, t, b_layout, ac_layout):
    emu.set_platform(chip)
    mode = "channel" if ALL_TYPES[t][2] != np.int16 else "layer"
    M, K, N = 3, 96, 72                      # N not a multiple of the int4 native block (64)
    got, exp, mm, _ = run_case(t, M, K, N, b_layout, ac_layout, mode=mode, seed=t)
    io = mm.io[0]
    assert io.B.type == 10
    if b_layout != 1:
        assert io.B.size == (K * N + 1) // 2
    if ALL_TYPES[t][0] == "i4":
        assert io.A.type == 10
        if ac_layout:
            assert tuple(io.A.dims[:3]) == (3, M, 32)
            sc = 8 if chip == "RK3588" else 4
            assert tuple(io.C.dims[:3]) == (-(-N // sc), M, sc)
    if b_layout == 1:
        assert tuple(io.B.dims[:4]) == (2, 3, 64, 32) and io.B.size == 2 * 3 * 64 * 32 // 2
    assert_same(got, exp)
    mm.close()


def test_int4_nibble_order(emu):
    """INT4 x INT4 -> INT16 with hand-packed bytes: even elements in the low nibble."""
    mm = MM(10, 1, 2, 2)
    io = mm.io[0]
    assert io.A.size == 1 and io.B.size == 2 and io.C.size == 4
    ma, mb, mc = mm.mem(1), mm.mem(2), mm.mem(4)
    mem_view(ma)[:] = [0x2F]                 # A = [[-1, 2]]
    mem_view(mb)[:] = [0x13, 0x8F]           # B = [[3, 1], [-1, -8]]
    for m, attr in ((ma, io.A), (mb, io.B), (mc, io.C)):
        assert mm.lib.rknn_matmul_set_io_mem(mm.h.value, m, C.byref(attr)) == SUCC
    assert mm.lib.rknn_matmul_run(mm.h.value) == SUCC
    assert mem_view(mc, 4, np.int16).tolist() == [-3 - 2, -1 - 16]
    mm.close()


def test_int4_saturates_int16(emu):
    M, K, N = 2, 2048, 64
    mm = MM(10, M, K, N)
    io = mm.io[0]
    a = np.full((M, K), -8, np.int8)
    b = np.full((K, N), -8, np.int8)
    a[1] = 7
    ma, mb, mc = mm.mem(io.A.size), mm.mem(io.B.size), mm.mem(io.C.size)
    mem_view(ma)[:] = pack_i4(a)
    mem_view(mb)[:] = pack_i4(b)
    for m, attr in ((ma, io.A), (mb, io.B), (mc, io.C)):
        assert mm.lib.rknn_matmul_set_io_mem(mm.h.value, m, C.byref(attr)) == SUCC
    assert mm.lib.rknn_matmul_run(mm.h.value) == SUCC
    got = mem_view(mc, io.C.size, np.int16).reshape(M, N)
    assert (got[0] == 32767).all() and (got[1] == -32768).all()    # 131072 / -114688
    mm.close()


@pytest.mark.parametrize("t", GROUP_TYPES)
@pytest.mark.parametrize("gs,b_layout", [(32, 0), (64, 2), (32, 1)])
def test_matmul_per_group(emu, t, gs, b_layout):
    M, K, N = 4, 128, 40
    got, exp, mm, _ = run_case(t, M, K, N, b_layout, mode="group", gs=gs, seed=100 + t)
    assert_same(got, exp)
    q, est = QuantParams(), C.c_float()
    assert mm.lib.rknn_matmul_get_quant_params(mm.h.value, C.byref(q), C.byref(est)) == SUCC
    assert q.scale_len == N * K // gs and q.zp_len == N * K // gs and q.name == b"B"
    mm.close()


def test_per_group_is_not_per_channel(emu):
    """Different scales per group change the result: the group index really is used."""
    M, K, N, gs = 2, 64, 8, 32
    got, exp, mm, (a, b, _) = run_case(7, M, K, N, mode="group", gs=gs, seed=5)
    assert_same(got, exp)
    ch = reference(7, a, b, sb=np.repeat(np.float32(0.01), N), zb=[0], mode="channel")
    assert not np.array_equal(got, ch)
    mm.close()


def test_matmul_group_and_quant_errors(emu):
    lib = mlib()
    h, io = C.c_uint64(), MMIOAttr()

    def create(**kw):
        info = MatmulInfo(**dict(dict(M=2, K=64, N=32, type=7), **kw))
        rc = lib.rknn_matmul_create(C.byref(h), C.byref(info), C.byref(io))
        if rc == SUCC:
            assert lib.rknn_matmul_destroy(h.value) == SUCC
        return rc

    assert create(B_quant_type=4, group_size=32) == SUCC
    assert create(B_quant_type=4, group_size=0) == PARAM_INVALID
    assert create(B_quant_type=4, group_size=48) == PARAM_INVALID        # not a multiple of 32
    assert create(B_quant_type=5, group_size=128) == PARAM_INVALID       # does not divide K
    assert create(type=2, B_quant_type=4, group_size=32) == PARAM_INVALID  # integer C
    assert create(type=10, B_quant_type=5, group_size=32) == PARAM_INVALID
    assert create(B_quant_type=6) == PARAM_INVALID
    assert create(AC_quant_type=2) == PARAM_INVALID
    assert create(M=65536, K=65536, N=65536) == PARAM_INVALID           # beyond 32-bit sizes
    assert create(type=2, M=65536, K=4096, N=65536) == PARAM_INVALID
    mm = MM(7, 2, 64, 32, B_quant_type=4, group_size=32)
    assert set_q(mm, b"B", np.ones(32)) == PARAM_INVALID                 # needs N*K/gs = 64
    assert set_q(mm, b"B", np.ones(64), np.zeros(3)) == PARAM_INVALID
    assert set_q(mm, b"B", np.ones(64), np.zeros(64)) == SUCC
    assert set_q(mm, b"B", np.ones(64), np.zeros(1)) == SUCC
    assert set_q(mm, b"D", np.ones(1)) == PARAM_INVALID
    assert set_q(mm, b"A", np.ones(2)) == PARAM_INVALID                  # per layer only
    assert set_q(mm, b"A", [-1.0]) == PARAM_INVALID
    assert mm.lib.rknn_matmul_set_quant_params(mm.h.value, None) == PARAM_INVALID
    mm.close()


@pytest.mark.parametrize("chip", ["RK3566", "RK3568", "RK3562", "RV1126B"])
def test_int4_unsupported_chips(emu, chip):
    emu.set_platform(chip)
    lib = mlib()
    h, io = C.c_uint64(), MMIOAttr()
    for t in INT4_TYPES:
        info = MatmulInfo(M=2, K=64, N=64, type=t)
        assert lib.rknn_matmul_create(C.byref(h), C.byref(info), C.byref(io)) == PARAM_INVALID
        src, dst = np.zeros(64 * 64, np.uint8), np.zeros(64 * 64, np.uint8)
        assert lib.rknn_B_normal_layout_to_native_layout(src.ctypes.data, dst.ctypes.data, 64, 64,
                                                          C.byref(info)) == PARAM_INVALID
    info = MatmulInfo(M=2, K=64, N=64, type=5)             # int8 hybrids exist there
    assert lib.rknn_matmul_create(C.byref(h), C.byref(info), C.byref(io)) == SUCC
    assert lib.rknn_matmul_destroy(h.value) == SUCC


@pytest.mark.parametrize("chip,t,K,seg", [("RK3576", 2, 4096 + 96, 4096),
                                         ("RK3576", 8, 2 * 4096 + 32, 4096),
                                         ("RK3588", 11, 8192 + 64, 8192),
                                         ("RK3588", 1, 8192, 0)])
def test_native_b_k_split(emu, chip, t, K, seg):
    """Native B with K above the chip's limit is stored segment by segment along K."""
    emu.set_platform(chip)
    M, N = 2, 72                              # more than one N block for every type
    got, exp, mm, (a, b, bbytes) = run_case(t, M, K, N, b_layout=1, seed=K, quant=False)
    io = mm.io[0]
    nn, kk = io.B.dims[2], io.B.dims[3]
    assert tuple(io.B.dims[:4]) == (-(-N // nn), -(-K // kk), nn, kk)
    ref = native_b(b, nn, kk, seg)
    if ALL_TYPES[t][1] == "i4":
        np.testing.assert_array_equal(unpack_i4(bbytes, ref.size), ref)
    else:
        np.testing.assert_array_equal(bbytes.view(ref.dtype), ref)
    if seg:   # the split order differs from the plain one
        assert not np.array_equal(ref, native_b(b, nn, kk, 0))
    assert_same(got, exp)
    mm.close()


def test_dynamic_shape_quant_params_must_fit(emu):
    """Per-channel B scales set for one N do not silently index past their end for another."""
    shapes = [(2, 32, 16), (2, 32, 48)]
    mm = MM(9, 0, 0, 0, B_quant_type=2, shapes=shapes)
    lib, h = mm.lib, mm.h.value
    ma, mb, mc = mm.mem(2 * 32), mm.mem(32 * 48), mm.mem(2 * 48 * 4)
    assert set_q(mm, b"B", np.full(16, 0.1)) == SUCC
    for m, attr in ((ma, mm.io[0].A), (mb, mm.io[0].B), (mc, mm.io[0].C)):
        assert lib.rknn_matmul_set_io_mem(h, m, C.byref(attr)) == SUCC
    assert lib.rknn_matmul_run(h) == SUCC
    assert lib.rknn_matmul_set_dynamic_shape(h, C.byref(MMShape(2, 32, 48))) == SUCC
    for m, attr in ((ma, mm.io[1].A), (mb, mm.io[1].B), (mc, mm.io[1].C)):
        assert lib.rknn_matmul_set_io_mem(h, m, C.byref(attr)) == SUCC
    assert lib.rknn_matmul_run(h) == PARAM_INVALID
    assert set_q(mm, b"B", np.full(48, 0.1)) == SUCC
    assert lib.rknn_matmul_run(h) == SUCC
    mm.close()
