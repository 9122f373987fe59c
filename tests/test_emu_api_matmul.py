"""Emulator runtime half: the matmul API (normal, transposed and native layouts, int8 and
float16 types, quantization, dynamic shapes), against numpy."""

import ctypes as C

import numpy as np
import pytest

from test_emu_api_common import (CTX_INVALID, FAIL, PARAM_INVALID, SUCC, TensorMem, addr, api,
                                 emu, mem_view)

__all__ = ["emu"]


class MatmulInfo(C.Structure):
    _fields_ = [("M", C.c_int32), ("K", C.c_int32), ("N", C.c_int32), ("type", C.c_int),
                ("B_layout", C.c_int16), ("B_quant_type", C.c_int16), ("AC_layout", C.c_int16),
                ("AC_quant_type", C.c_int16), ("iommu_domain_id", C.c_int32),
                ("group_size", C.c_int16), ("reserved", C.c_int8 * 34)]


class MMTensorAttr(C.Structure):
    _fields_ = [("name", C.c_char * 256), ("n_dims", C.c_uint32), ("dims", C.c_uint32 * 16),
                ("size", C.c_uint32), ("type", C.c_int)]


class MMIOAttr(C.Structure):
    _fields_ = [("A", MMTensorAttr), ("B", MMTensorAttr), ("C", MMTensorAttr)]


class QuantParams(C.Structure):
    _fields_ = [("name", C.c_char * 256), ("scale", C.POINTER(C.c_float)), ("scale_len", C.c_int32),
                ("zp", C.POINTER(C.c_int32)), ("zp_len", C.c_int32)]


class MMShape(C.Structure):
    _fields_ = [("M", C.c_int32), ("K", C.c_int32), ("N", C.c_int32)]


assert C.sizeof(MatmulInfo) == 64 and C.sizeof(MMTensorAttr) == 332 and C.sizeof(MMIOAttr) == 996
assert C.sizeof(QuantParams) == 288

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
    def __init__(self, t, M, K, N, B_layout=0, AC_layout=0, B_quant_type=0, shapes=None):
        self.lib = mlib()
        self.info = MatmulInfo(M=M, K=K, N=N, type=t, B_layout=B_layout, AC_layout=AC_layout,
                               B_quant_type=B_quant_type)
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
    info = MatmulInfo(M=4, K=32, N=32, type=7)                       # int4: not emulated
    assert lib.rknn_matmul_create(C.byref(h), C.byref(info), C.byref(io)) == FAIL
    info = MatmulInfo(M=0, K=32, N=32, type=1)
    assert lib.rknn_matmul_create(C.byref(h), C.byref(info), C.byref(io)) == PARAM_INVALID
    info = MatmulInfo(M=4, K=32, N=32, type=1, B_quant_type=4)       # per group
    assert lib.rknn_matmul_create(C.byref(h), C.byref(info), C.byref(io)) == FAIL
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
