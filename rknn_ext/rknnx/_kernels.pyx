# cython: language_level=3, embedsignature=True, binding=True, cdivision=True
# distutils: language = c
"""Layout and quantization kernels of rknnx: numpy arrays in, numpy arrays out, loops in C
without the GIL.  Public through :mod:`rknnx.lowlevel` (``dequantize``, ``quantize``,
``to_float16``, ``from_float16``, ``compact``, ``nc1hwc2_to_nchw``, ``nchw_to_nc1hwc2``)
and, given a tensor's facts, :mod:`rknnx.layout`.  No runtime is loaded or needed: this
module never calls librknnrt.
"""

# Every kernel is one traversal (the element order of the logical tensor) over one row
# function (_row: a run of elements at a source and a destination byte stride, converted
# by the kind of conversion chosen once per call).  The arrays come in through the buffer
# protocol with any strides (views of NPU memory carry the row padding in them); the
# result is allocated C-contiguous unless out= is given, and every argument is checked
# (dtype, shape, writability, overlap) before the first loop.
#
# The numbers equal numpy's, bit for bit:
#   dequantize  (float32(q) - float32(zp)) * float32(scale), all in float32: computed for
#               float32 results, and through a table of the 256 values computed with that
#               same expression where it is a gather anyway (float16, NC1HWC2 per channel);
#   quantize    clip(rint(x / scale) + zp) in float32, NaN -> zp, rint = round half to
#               even (rknnx.emulator.reference.quantize, the emulator's emu_quantize);
#   float16     IEEE binary16 rounded to nearest even, NaN payloads as numpy's astype
#               keeps them (the top 10 mantissa bits, 1 when they are all zero).
# No fused multiply-add can change a result: no expression here has a product feeding a
# sum.  The float tricks of the C (adding 2**23, 0.5, 2**-14) are exact in the default
# round-to-nearest mode and only ever see or produce normal numbers.

# Adding kernels of another subject: their C goes in rknn_ext/kernels/<subject>.c (any .c
# there is compiled into this module, with its declarations in a header of that directory),
# their Python face in a slice rknn_ext/rknnx/_kernels_<subject>.pxi included at the end of
# this file, which may use the argument checks below (_k_src, _k_dtype, _k_out, _k_get).

from cpython.buffer cimport (PyObject_GetBuffer, PyBuffer_Release, PyBUF_RECORDS_RO,
                             PyBUF_RECORDS)
from libc.string cimport memcpy, memset
from libc.stdint cimport uint16_t, uint32_t, uint64_t

from operator import index as _operator_index

import numpy as _np

cdef enum:
    _K_COPY1 = 0
    _K_COPY2
    _K_COPY4
    _K_COPY8
    _K_COPYN      # any other itemsize (p.itemsize)
    _K_ZERO       # destination only: fill with zero bytes (itemsize in p.itemsize)
    _K_LUT_F32    # 8-bit code -> float32 through the table
    _K_LUT_F16    # 8-bit code -> float16 bits through the table
    _K_F16_F32
    _K_F32_F16
    _K_Q_F32      # float32 -> 8-bit code
    _K_Q_F16      # float16 -> 8-bit code
    _K_DQ_S8_F32  # int8 -> float32 computed (qscale/qzp per channel), vectorised
    _K_DQ_U8_F32  # uint8 -> float32 computed

cdef enum:
    _K_MAXDIM = 64

ctypedef struct _kparams:
    int kind
    Py_ssize_t itemsize    # of the destination, for _K_ZERO
    const float* lut32     # 256 entries per channel, indexed by the code's byte
    const uint16_t* lut16
    const float* qscale    # quantize: per channel
    const float* qzp
    float qlo
    float qhi
    int tile_mode          # rknnx_k_tiles16 mode for this conversion (3: float16 ->
                           # float32, rknnx_k_tiles8h), -1: none
    float dzp              # dequantize, one set of parameters (the tiles)
    float dsc


# The C of the kernels: rknn_ext/kernels/ (kernels.h says what is where), compiled with
# the emulator's warnings; float16 is include/rknnx/rknnx_float16.h, the one scalar
# conversion of the tree (the emulator's too).
cdef extern from "kernels/kernels.h" nogil:
    const int RKNNX_K_MAGIC     # the float trick and the float16 vectors (the 128-bit path)
    const int RKNNX_K_TILES     # the block rows of nc1hwc2_to_nchw / nchw_to_nc1hwc2
    uint16_t rknnx_f32_to_f16(float f)
    float rknnx_f16_to_f32(uint16_t h)
    float rknnx_k_q1(float x, float sc, float zp, float lo, float hi)
    int rknnx_k_have_avx2()
    int rknnx_k_path()
    int rknnx_k_set_path(int level)
    void rknnx_k_quant_row(const float* s, unsigned char* d, Py_ssize_t n, float sc, float zp,
                           float lo, float hi)
    void rknnx_k_quant_strided(const char* s, Py_ssize_t ss, char* d, Py_ssize_t ds,
                               Py_ssize_t n, float sc, float zp, float lo, float hi)
    void rknnx_k_deq_s8(const signed char* s, float* d, Py_ssize_t n, float zp, float sc)
    void rknnx_k_deq_u8(const unsigned char* s, float* d, Py_ssize_t n, float zp, float sc)
    void rknnx_k_f16_row(const uint16_t* s, float* d, Py_ssize_t n)
    void rknnx_k_f32_f16_row(const float* s, uint16_t* d, Py_ssize_t n)
    void rknnx_k_lut32_row(const unsigned char* s, float* d, Py_ssize_t n, const float* lut)
    void rknnx_k_lut16_row(const unsigned char* s, uint16_t* d, Py_ssize_t n,
                           const uint16_t* lut)
    int rknnx_k_tiles16(const unsigned char* src, Py_ssize_t sw, Py_ssize_t W, char* dst,
                        Py_ssize_t dk, Py_ssize_t kmax, float zp, float sc, int mode)
    int rknnx_k_untiles16(const unsigned char* src, Py_ssize_t sk, Py_ssize_t kmax,
                          Py_ssize_t P, unsigned char* dst, Py_ssize_t dw)
    int rknnx_k_tiles8_ok(float zp, int mode)
    void rknnx_k_tiles8(const unsigned char* src, Py_ssize_t sw, Py_ssize_t W, char* dst,
                        Py_ssize_t dk, Py_ssize_t kmax, float zp, float sc, int mode)
    int rknnx_k_tiles8h_ok()
    void rknnx_k_tiles8h(const unsigned char* src, Py_ssize_t sw, Py_ssize_t W, char* dst,
                         Py_ssize_t dk, Py_ssize_t kmax)
    void rknnx_k_tiles4h(const unsigned char* src, Py_ssize_t sw, Py_ssize_t W, char* dst,
                         Py_ssize_t dk, Py_ssize_t kmax)


_K_PATHS = ("plain", "vector128", "avx2")


def _kernel_paths():
    """The dequantizing paths this build and processor have, narrowest first."""
    return _K_PATHS[:1 + (1 if RKNNX_K_MAGIC else 0) + (1 if rknnx_k_have_avx2() else 0)]


def _kernel_path(path=None):
    """The widest path the dequantizing kernels take ("avx2", "vector128" or "plain"); with
    ``path``, set it (process-wide) and return the one before.  Private: the tests and
    bench/kernels.py narrow it to run the boards' 128-bit path on an x86-64 host."""
    have = _kernel_paths()
    if path is None:
        return have[min(rknnx_k_path(), len(have) - 1)]
    if path not in have:
        raise ValueError(f"_kernel_path: path must be one of {have}, got {path!r}")
    return have[min(rknnx_k_set_path(have.index(path)), len(have) - 1)]


cdef void _row(const _kparams* p, Py_ssize_t ch, const char* s, Py_ssize_t ss, char* d,
               Py_ssize_t ds, Py_ssize_t n) noexcept nogil:
    """Convert n elements from s (byte stride ss) to d (byte stride ds); ch picks the
    channel's quantization parameters."""
    cdef Py_ssize_t i
    cdef const float* l32
    cdef const uint16_t* l16
    cdef const unsigned char* sb = <const unsigned char*>s
    cdef float sc, zp, lo, hi
    cdef int k = p.kind
    if k == _K_LUT_F32:
        l32 = p.lut32 + 256 * ch
        if ss == 1 and ds == 4:
            rknnx_k_lut32_row(sb, <float*>d, n, l32)
        else:
            for i in range(n):
                (<float*>(d + i * ds))[0] = l32[sb[i * ss]]
    elif k == _K_LUT_F16:
        l16 = p.lut16 + 256 * ch
        if ss == 1 and ds == 2:
            rknnx_k_lut16_row(sb, <uint16_t*>d, n, l16)
        else:
            for i in range(n):
                (<uint16_t*>(d + i * ds))[0] = l16[sb[i * ss]]
    elif k == _K_COPY1:
        if ss == 1 and ds == 1:
            memcpy(d, s, n)
        else:
            for i in range(n):
                d[i * ds] = s[i * ss]
    elif k == _K_COPY2:
        if ss == 2 and ds == 2:
            memcpy(d, s, 2 * n)
        else:
            for i in range(n):
                (<uint16_t*>(d + i * ds))[0] = (<const uint16_t*>(s + i * ss))[0]
    elif k == _K_COPY4:
        if ss == 4 and ds == 4:
            memcpy(d, s, 4 * n)
        else:
            for i in range(n):
                (<uint32_t*>(d + i * ds))[0] = (<const uint32_t*>(s + i * ss))[0]
    elif k == _K_COPY8:
        if ss == 8 and ds == 8:
            memcpy(d, s, 8 * n)
        else:
            for i in range(n):
                (<uint64_t*>(d + i * ds))[0] = (<const uint64_t*>(s + i * ss))[0]
    elif k == _K_COPYN:
        for i in range(n):
            memcpy(d + i * ds, s + i * ss, p.itemsize)
    elif k == _K_ZERO:
        if ds == p.itemsize:
            memset(d, 0, n * p.itemsize)
        else:
            for i in range(n):
                memset(d + i * ds, 0, p.itemsize)
    elif k == _K_F32_F16:
        if ss == 4 and ds == 2:
            rknnx_k_f32_f16_row(<const float*>s, <uint16_t*>d, n)
        else:
            for i in range(n):
                (<uint16_t*>(d + i * ds))[0] = rknnx_f32_to_f16(
                    (<const float*>(s + i * ss))[0])
    elif k == _K_F16_F32:
        if ss == 2 and ds == 4:
            rknnx_k_f16_row(<const uint16_t*>s, <float*>d, n)
        else:
            for i in range(n):
                (<float*>(d + i * ds))[0] = rknnx_f16_to_f32(
                    (<const uint16_t*>(s + i * ss))[0])
    elif k == _K_Q_F32:
        if ss == 4 and ds == 1:
            rknnx_k_quant_row(<const float*>s, <unsigned char*>d, n, p.qscale[ch], p.qzp[ch],
                              p.qlo, p.qhi)
        else:
            rknnx_k_quant_strided(s, ss, d, ds, n, p.qscale[ch], p.qzp[ch], p.qlo, p.qhi)
    elif k == _K_Q_F16:
        sc = p.qscale[ch]
        zp = p.qzp[ch]
        lo = p.qlo
        hi = p.qhi
        for i in range(n):
            (<unsigned char*>d)[i * ds] = <unsigned char>(<int>rknnx_k_q1(
                rknnx_f16_to_f32((<const uint16_t*>(s + i * ss))[0]), sc, zp, lo, hi))
    elif k == _K_DQ_S8_F32 or k == _K_DQ_U8_F32:
        sc = p.qscale[ch]
        zp = p.qzp[ch]
        if ss == 1 and ds == 4:
            if k == _K_DQ_S8_F32:
                rknnx_k_deq_s8(<const signed char*>s, <float*>d, n, zp, sc)
            else:
                rknnx_k_deq_u8(sb, <float*>d, n, zp, sc)
        elif k == _K_DQ_S8_F32:
            for i in range(n):
                (<float*>(d + i * ds))[0] = (<float>(<const signed char*>s)[i * ss] - zp) * sc
        else:
            for i in range(n):
                (<float*>(d + i * ds))[0] = (<float>sb[i * ss] - zp) * sc


cdef void _nd(const _kparams* p, Py_ssize_t nch, Py_ssize_t chs, Py_ssize_t chd, int nd,
              const Py_ssize_t* shape, const Py_ssize_t* ss, const Py_ssize_t* ds,
              const char* s, char* d) noexcept nogil:
    """Elementwise over nd dims (nd >= 1, C order), once per channel (the channel
    strides chs/chd; nch 1 for one set of parameters)."""
    cdef Py_ssize_t idx[_K_MAXDIM]
    cdef Py_ssize_t c, inner = shape[nd - 1]
    cdef const char* sp
    cdef char* dp
    cdef int k
    for c in range(nch):
        sp = s + c * chs
        dp = d + c * chd
        memset(idx, 0, sizeof(idx))
        while True:
            _row(p, c, sp, ss[nd - 1], dp, ds[nd - 1], inner)
            k = nd - 2
            while k >= 0:
                idx[k] += 1
                sp += ss[k]
                dp += ds[k]
                if idx[k] < shape[k]:
                    break
                sp -= ss[k] * shape[k]
                dp -= ds[k] * shape[k]
                idx[k] = 0
                k -= 1
            if k < 0:
                break



# The block rows of nc1hwc2_to_nchw (rknn_ext/kernels/vec128.h and avx2.h): raw 8-bit
# codes in tiles of 16 pixels x 16 channels transposed in registers, dequantized codes 4
# pixels at a time (8 with AVX2) in blocks of 16 channels, or of 8 for int8 on RK3566/68,
# float16 in blocks of 8 or 4 channels.  Plain C loops elsewhere.
cdef void _blocked_to_plain(const _kparams* p, bint per_channel, bint row_c,
                            Py_ssize_t N, Py_ssize_t C1, Py_ssize_t H, Py_ssize_t W,
                            Py_ssize_t C2, Py_ssize_t C, const Py_ssize_t* bs,
                            const Py_ssize_t* ps, const char* s, char* d) noexcept nogil:
    """NC1HWC2 (strides bs, 5) -> (n, c, h, w) (strides ps, 4), channels >= C dropped.
    Rows run over w, or over the C2 channels of a block when row_c."""
    cdef Py_ssize_t n, c1, k, h, w, kmax, c, c0, P = W, HS = H, blk = 0
    cdef const char* sb
    cdef char* db
    cdef const char* sp
    cdef char* dp
    # h and w as one run of pixels when both sides have them contiguous (no row padding):
    # no short rows, no overlapping last tile
    if H > 1 and bs[2] == W * bs[3] and ps[2] == W * ps[3]:
        P = H * W
        HS = 1
    # blocks of 16 channels (C2 16, 32) or of 8 (int8 on RK3566/68) in vector registers
    if (RKNNX_K_TILES and p.tile_mode >= 0 and not per_channel and not row_c
            and bs[4] == (2 if p.tile_mode == 3 else 1) and P >= 16
            and ps[3] == (1 if p.tile_mode == 2 else 4)):
        if p.tile_mode == 3:
            if C2 % 8 == 0 and rknnx_k_tiles8h_ok():
                blk = 8
            elif C2 == 4 and rknnx_k_tiles8h_ok():
                blk = 4
        elif C2 % 16 == 0:
            blk = 16
        elif C2 == 8 and rknnx_k_tiles8_ok(p.dzp, p.tile_mode):
            blk = 8
    if blk:
        for n in range(N):
            for c1 in range(C1):
                c0 = 0
                while c0 < C2:
                    kmax = C - c1 * C2 - c0
                    if kmax > blk:
                        kmax = blk
                    if kmax <= 0:
                        break
                    sb = s + n * bs[0] + c1 * bs[1] + c0 * bs[4]
                    db = d + n * ps[0] + (c1 * C2 + c0) * ps[1]
                    for h in range(HS):
                        if blk == 16:
                            rknnx_k_tiles16(<const unsigned char*>(sb + h * bs[2]), bs[3], P,
                                            db + h * ps[2], ps[1], kmax, p.dzp, p.dsc,
                                            p.tile_mode)
                        elif blk == 8 and p.tile_mode == 3:
                            rknnx_k_tiles8h(<const unsigned char*>(sb + h * bs[2]), bs[3], P,
                                            db + h * ps[2], ps[1], kmax)
                        elif blk == 4:
                            rknnx_k_tiles4h(<const unsigned char*>(sb + h * bs[2]), bs[3], P,
                                            db + h * ps[2], ps[1], kmax)
                        else:
                            rknnx_k_tiles8(<const unsigned char*>(sb + h * bs[2]), bs[3], P,
                                           db + h * ps[2], ps[1], kmax, p.dzp, p.dsc,
                                           p.tile_mode)
                    c0 += blk
        return
    if row_c:
        # pixel by pixel, all the blocks of one pixel in turn: the result is written in
        # order (one pixel's channels are contiguous in it)
        for n in range(N):
            for h in range(H):
                for w in range(W):
                    sp = s + n * bs[0] + h * bs[2] + w * bs[3]
                    dp = d + n * ps[0] + h * ps[2] + w * ps[3]
                    for c1 in range(C1):
                        kmax = C - c1 * C2
                        if kmax <= 0:
                            break
                        if kmax > C2:
                            kmax = C2
                        if p.tile_mode == 0 and bs[4] == 1 and ps[1] == 4:
                            rknnx_k_deq_s8(<const signed char*>(sp + c1 * bs[1]),
                                           <float*>(dp + c1 * C2 * 4), kmax, p.dzp, p.dsc)
                        elif p.tile_mode == 1 and bs[4] == 1 and ps[1] == 4:
                            rknnx_k_deq_u8(<const unsigned char*>(sp + c1 * bs[1]),
                                           <float*>(dp + c1 * C2 * 4), kmax, p.dzp, p.dsc)
                        else:
                            _row(p, 0, sp + c1 * bs[1], bs[4], dp + c1 * C2 * ps[1], ps[1],
                                 kmax)
        return
    for n in range(N):
        for c1 in range(C1):
            kmax = C - c1 * C2
            if kmax <= 0:
                break
            if kmax > C2:
                kmax = C2
            sb = s + n * bs[0] + c1 * bs[1]
            db = d + n * ps[0] + c1 * C2 * ps[1]
            for k in range(kmax):
                c = c1 * C2 + k if per_channel else 0
                for h in range(H):
                    _row(p, c, sb + h * bs[2] + k * bs[4], bs[3],
                         db + k * ps[1] + h * ps[2], ps[3], W)


cdef void _plain_to_blocked(const _kparams* p, const _kparams* zero, bint row_c,
                            Py_ssize_t N, Py_ssize_t C1, Py_ssize_t H, Py_ssize_t W,
                            Py_ssize_t C2, Py_ssize_t C, const Py_ssize_t* ps,
                            const Py_ssize_t* bs, const char* s, char* d) noexcept nogil:
    """(n, c, h, w) (strides ps) -> NC1HWC2 (strides bs), channels C.. C1*C2-1 zeroed."""
    cdef Py_ssize_t n, c1, k, h, w, kmax, c0, P = W, HS = H
    cdef const char* sp
    cdef char* db
    if H > 1 and bs[2] == W * bs[3] and ps[2] == W * ps[3]:
        P = H * W                        # h and w as one run of pixels
        HS = 1
    if (RKNNX_K_TILES and p.kind == _K_COPY1 and not row_c and C2 % 16 == 0 and bs[4] == 1
            and ps[3] == 1 and P >= 16):
        for n in range(N):
            for c1 in range(C1):
                for c0 in range(0, C2, 16):
                    kmax = C - c1 * C2 - c0
                    if kmax > 16:
                        kmax = 16
                    if kmax < 0:
                        kmax = 0
                    sp = s + n * ps[0] + (c1 * C2 + c0) * ps[1]
                    db = d + n * bs[0] + c1 * bs[1] + c0
                    for h in range(HS):
                        rknnx_k_untiles16(<const unsigned char*>(sp + h * ps[2]), ps[1], kmax,
                                          P, <unsigned char*>(db + h * bs[2]), bs[3])
        return
    for n in range(N):
        for c1 in range(C1):
            kmax = C - c1 * C2
            if kmax < 0:
                kmax = 0
            if kmax > C2:
                kmax = C2
            sp = s + n * ps[0] + c1 * C2 * ps[1]
            db = d + n * bs[0] + c1 * bs[1]
            if row_c:
                for h in range(H):
                    for w in range(W):
                        if kmax:
                            _row(p, 0, sp + h * ps[2] + w * ps[3], ps[1],
                                 db + h * bs[2] + w * bs[3], bs[4], kmax)
                        if kmax < C2:
                            _row(zero, 0, NULL, 0, db + h * bs[2] + w * bs[3] + kmax * bs[4],
                                 bs[4], C2 - kmax)
            else:
                for k in range(C2):
                    for h in range(H):
                        if k < kmax:
                            _row(p, 0, sp + k * ps[1] + h * ps[2], ps[3],
                                 db + h * bs[2] + k * bs[4], bs[3], W)
                        else:
                            _row(zero, 0, NULL, 0, db + h * bs[2] + k * bs[4], bs[3], W)


# ---- argument checks ------------------------------------------------------------------------

_K_INT8 = _np.dtype(_np.int8)
_K_UINT8 = _np.dtype(_np.uint8)
_K_F16 = _np.dtype(_np.float16)
_K_F32 = _np.dtype(_np.float32)
_K_LAYOUTS = ("NCHW", "NHWC")


cdef object _k_src(object src, str what, tuple dtypes):
    """src as an ndarray (no copy for buffers and arrays) of one of dtypes."""
    a = src if type(src) is _np.ndarray else _np.asarray(src)
    if a.dtype not in dtypes:
        raise TypeError(f"{what}: src must be {' or '.join(str(t) for t in dtypes)}, "
                        f"got {a.dtype}")
    if not a.flags.aligned:
        raise ValueError(f"{what}: src is not aligned to its {a.dtype} elements")
    return a


cdef object _k_dtype(object dtype, str what, tuple allowed):
    try:
        dt = _np.dtype(dtype)
    except TypeError:
        raise TypeError(f"{what}: dtype must be {' or '.join(str(t) for t in allowed)}, "
                        f"got {dtype!r}") from None
    if dt not in allowed:
        raise TypeError(f"{what}: dtype must be {' or '.join(str(t) for t in allowed)}, "
                        f"got {dt}")
    return dt


cdef object _k_out(object out, object src, tuple shape, object dtype, str what):
    """out checked (ndarray, dtype, shape, writable, aligned, not overlapping src), or a
    new C-contiguous array."""
    if out is None:
        return _np.empty(shape, dtype)
    if type(out) is not _np.ndarray and not isinstance(out, _np.ndarray):
        raise TypeError(f"{what}: out must be a numpy.ndarray, got {type(out).__name__}")
    if out.dtype != dtype:
        raise TypeError(f"{what}: out must have dtype {dtype}, got {out.dtype}")
    if out.shape != shape:
        raise ValueError(f"{what}: out must have shape {shape}, got {out.shape}")
    if not out.flags.writeable:
        raise ValueError(f"{what}: out is read-only")
    if not out.flags.aligned:
        raise ValueError(f"{what}: out is not aligned to its {dtype} elements")
    if out.size and src.size and _np.may_share_memory(out, src):
        raise ValueError(f"{what}: out overlaps src")
    return out


cdef int _k_get(object a, Py_buffer* v, bint writable) except -1:
    PyObject_GetBuffer(a, v, PyBUF_RECORDS if writable else PyBUF_RECORDS_RO)
    return 0


cdef int _k_copy_kind(Py_ssize_t itemsize) except -1:
    if itemsize == 1:
        return _K_COPY1
    if itemsize == 2:
        return _K_COPY2
    if itemsize == 4:
        return _K_COPY4
    if itemsize == 8:
        return _K_COPY8
    return _K_COPYN


cdef object _k_lut(object scale, object zero_point, object dtype, Py_ssize_t nch, str what):
    """The dequantization table: nch x 256 values of dtype (float32, or float16 bits as
    uint16), entry [c, b] = (float32(q) - float32(zp[c])) * float32(scale[c]) for the
    code q whose byte is b (signedness applied by the caller through `signed`)."""
    sc = _np.asarray(scale, dtype=_np.float32)
    zp = _np.asarray(zero_point)
    if sc.ndim > 1 or zp.ndim > 1:
        raise ValueError(f"{what}: scale and zero_point must be scalars or 1-D arrays")
    if zp.dtype.kind not in "iub":
        raise TypeError(f"{what}: zero_point must be an integer, got {zp.dtype}")
    if sc.ndim == 1 and sc.shape[0] != nch:
        raise ValueError(f"{what}: scale has {sc.shape[0]} values, expected {nch} (one per channel)")
    if zp.ndim == 1 and zp.shape[0] != nch:
        raise ValueError(f"{what}: zero_point has {zp.shape[0]} values, expected {nch} "
                         f"(one per channel)")
    s = _np.empty((nch, 1), _np.float32)
    z = _np.empty((nch, 1), _np.float32)
    s[:, 0] = sc                   # broadcast (scalar or nch values), float32 already
    z[:, 0] = zp.astype(_np.float32)
    return s, z


cdef int _k_ndim(object x) except -1:
    """np.ndim(x), without its cost (an array built) for the usual Python and numpy
    scalars."""
    if type(x) is float or type(x) is int or isinstance(x, _np.generic):
        return 0
    if type(x) is _np.ndarray:
        return (<object>x).ndim
    return _np.ndim(x)


cdef int _k_scalar_table(object scale, object zero_point, bint signed, float* lut32,
                         uint16_t* lut16, float* sf, float* zf, str what) except -1:
    """One (scale, zero_point): float32(scale), float32(zero_point) and the 256-entry
    tables indexed by the code's byte (lut16 may be NULL)."""
    cdef long long zi
    cdef int b
    cdef float q
    try:
        zi = _operator_index(zero_point)
    except TypeError:
        raise TypeError(f"{what}: zero_point must be an integer, got "
                        f"{type(zero_point).__name__}") from None
    sf[0] = <float>(<double>scale)
    zf[0] = <float>zi
    if lut32 == NULL:
        return 0
    for b in range(256):
        q = <float>(<signed char>b) if signed else <float>b
        lut32[b] = (q - zf[0]) * sf[0]
        if lut16 != NULL:
            lut16[b] = rknnx_f32_to_f16(lut32[b])
    return 0


cdef object _k_table(object sc, object zpf, bint signed, object dtype):
    """nch x 256 table indexed by the code's byte."""
    cdef Py_ssize_t nch = sc.shape[0]
    cdef float[:, ::1] t = _np.empty((nch, 256), _np.float32)
    cdef const float[:, :] s = sc
    cdef const float[:, :] z = zpf
    cdef Py_ssize_t c, b
    cdef float q
    for c in range(nch):
        for b in range(256):
            q = <float>(<signed char>b) if signed else <float>b
            t[c, b] = (q - z[c, 0]) * s[c, 0]
    arr = _np.asarray(t)
    if dtype == _K_F16:
        return _k_half_table(arr)
    return arr


cdef object _k_half_table(object arr):
    cdef const float[:, ::1] f = arr
    cdef uint16_t[:, ::1] h = _np.empty((arr.shape[0], 256), _np.uint16)
    cdef Py_ssize_t c, b
    for c in range(f.shape[0]):
        for b in range(256):
            h[c, b] = rknnx_f32_to_f16(f[c, b])
    return _np.asarray(h)


cdef int _k_elementwise(_kparams* p, object src, object out, object axis) except -1:
    """Run p over src -> out (same shape); with axis, that axis indexes the channel
    parameters."""
    cdef Py_buffer vs, vd
    cdef Py_ssize_t shape[_K_MAXDIM]
    cdef Py_ssize_t ss[_K_MAXDIM]
    cdef Py_ssize_t ds[_K_MAXDIM]
    cdef Py_ssize_t nch = 1, chs = 0, chd = 0, ext
    cdef int i, nd = 0, ax = -1
    if src.size == 0:
        return 0
    if axis is not None:
        ax = axis
    _k_get(src, &vs, False)
    try:
        _k_get(out, &vd, True)
        try:
            for i in range(vs.ndim):
                ext = vs.shape[i]
                if i == ax:
                    nch = ext
                    chs = vs.strides[i]
                    chd = vd.strides[i]
                    continue
                if ext == 1:
                    continue
                if nd and ss[nd - 1] == vs.strides[i] * ext and ds[nd - 1] == vd.strides[i] * ext:
                    shape[nd - 1] *= ext          # merge with the dim before
                    ss[nd - 1] = vs.strides[i]
                    ds[nd - 1] = vd.strides[i]
                    continue
                shape[nd] = ext
                ss[nd] = vs.strides[i]
                ds[nd] = vd.strides[i]
                nd += 1
            if nd == 0:
                shape[0] = 1
                ss[0] = 0
                ds[0] = 0
                nd = 1
            with nogil:
                _nd(p, nch, chs, chd, nd, shape, ss, ds, <const char*>vs.buf, <char*>vd.buf)
        finally:
            PyBuffer_Release(&vd)
    finally:
        PyBuffer_Release(&vs)
    return 0


cdef object _k_axis(object axis, int ndim, str what):
    if axis is None:
        return None
    try:
        ax = _operator_index(axis)
    except TypeError:
        raise TypeError(f"{what}: axis must be an int, got {type(axis).__name__}") from None
    if not -ndim <= ax < ndim:
        raise ValueError(f"{what}: axis {axis} is out of range for {ndim} dims")
    return ax % ndim


# ---- the kernels ----------------------------------------------------------------------------

def dequantize(src, scale, zero_point=0, *, dtype=_np.float32, axis=None, out=None):
    """Dequantize int8/uint8 codes: ``(float32(q) - float32(zero_point)) * float32(scale)``.

    Equal bit for bit to ``(src.astype(np.float32) - np.float32(zero_point)) *
    np.float32(scale)`` (then ``.astype(np.float16)`` for ``dtype=float16``).

    Parameters
    ----------
    src : array_like
        int8 or uint8, any shape and strides (a view of NPU memory).
    scale, zero_point : float, int or 1-D arrays
        One value, or one per index of ``axis`` (per-channel).
    dtype : float32 or float16
        The result type.
    axis : int, optional
        The channel axis of per-channel ``scale``/``zero_point``.
    out : numpy.ndarray, optional
        Written in place (``src``'s shape, ``dtype``, any strides) and returned.
    """
    a = _k_src(src, "dequantize", (_K_INT8, _K_UINT8))
    dt = _k_dtype(dtype, "dequantize", (_K_F32, _K_F16))
    ax = _k_axis(axis, a.ndim, "dequantize")
    nch = a.shape[ax] if ax is not None else 1
    if ax is None and (_k_ndim(scale) or _k_ndim(zero_point)):
        raise ValueError("dequantize: per-channel scale/zero_point need axis=")
    if ax is not None:
        sc, zpf = _k_lut(scale, zero_point, dt, nch, "dequantize")
    o = _k_out(out, a, a.shape, dt, "dequantize")
    cdef _kparams p
    cdef const uint16_t[:, ::1] t16
    cdef const float[::1] vsc
    cdef const float[::1] vzp
    cdef float l32[256]
    cdef uint16_t l16[256]
    cdef float sf, zf
    memset(&p, 0, sizeof(p))
    if dt == _K_F32:
        # computed, not looked up: the same float32 expression, and it vectorises
        p.kind = _K_DQ_S8_F32 if a.dtype == _K_INT8 else _K_DQ_U8_F32
        if ax is None:
            _k_scalar_table(scale, zero_point, False, NULL, NULL, &sf, &zf, "dequantize")
            p.qscale = &sf
            p.qzp = &zf
        else:
            vsc = sc = _np.ascontiguousarray(sc.ravel())
            vzp = zpf = _np.ascontiguousarray(zpf.ravel())
            p.qscale = &vsc[0]
            p.qzp = &vzp[0]
        _k_elementwise(&p, a, o, ax)
        return o
    if ax is None:
        _k_scalar_table(scale, zero_point, a.dtype == _K_INT8, l32, l16, &sf, &zf, "dequantize")
        p.kind = _K_LUT_F16
        p.lut16 = l16
        _k_elementwise(&p, a, o, None)
        return o
    t16 = _k_table(sc, zpf, a.dtype == _K_INT8, dt)
    p.kind = _K_LUT_F16
    p.lut16 = &t16[0, 0]
    _k_elementwise(&p, a, o, ax)
    return o


_K_QRANGE = {_K_INT8: (-128.0, 127.0), _K_UINT8: (0.0, 255.0)}


def quantize(src, scale, zero_point=0, *, dtype=_np.int8, axis=None, out=None):
    """Quantize float32/float16 to int8/uint8: ``clip(rint(x / scale) + zero_point)``.

    Computed in float32 with ``rint`` rounding half to even and NaN mapped to
    ``zero_point`` (saturated), exactly as the emulator quantizes inputs and as
    ``rknnx.emulator.reference.quantize`` (float16 ``src`` is widened to float32 first).

    Parameters
    ----------
    src : array_like
        float32 or float16, any shape and strides.
    scale, zero_point : float, int or 1-D arrays
        One value, or one per index of ``axis``.
    dtype : int8 or uint8
        The result type; values saturate to its range.
    axis : int, optional
        The channel axis of per-channel ``scale``/``zero_point``.
    out : numpy.ndarray, optional
        Written in place (``src``'s shape, ``dtype``, any strides) and returned.
    """
    a = _k_src(src, "quantize", (_K_F32, _K_F16))
    dt = _k_dtype(dtype, "quantize", (_K_INT8, _K_UINT8))
    ax = _k_axis(axis, a.ndim, "quantize")
    nch = a.shape[ax] if ax is not None else 1
    if ax is None and (_k_ndim(scale) or _k_ndim(zero_point)):
        raise ValueError("quantize: per-channel scale/zero_point need axis=")
    sc, zpf = _k_lut(scale, zero_point, dt, nch, "quantize")
    o = _k_out(out, a, a.shape, dt, "quantize")
    cdef const float[::1] vsc = sc.ravel()
    cdef const float[::1] vzp = zpf.ravel()
    cdef _kparams p
    memset(&p, 0, sizeof(p))
    p.kind = _K_Q_F32 if a.dtype == _K_F32 else _K_Q_F16
    p.qscale = &vsc[0]
    p.qzp = &vzp[0]
    p.qlo, p.qhi = _K_QRANGE[dt]
    _k_elementwise(&p, a, o, ax)
    return o


def to_float16(src, *, out=None):
    """float32 -> float16, equal to ``src.astype(np.float16)`` (round to nearest even,
    overflow to inf, subnormals, NaN payloads)."""
    a = _k_src(src, "to_float16", (_K_F32,))
    o = _k_out(out, a, a.shape, _K_F16, "to_float16")
    cdef _kparams p
    memset(&p, 0, sizeof(p))
    p.kind = _K_F32_F16
    _k_elementwise(&p, a, o, None)
    return o


def from_float16(src, *, out=None):
    """float16 -> float32, equal to ``src.astype(np.float32)`` (exact)."""
    a = _k_src(src, "from_float16", (_K_F16,))
    o = _k_out(out, a, a.shape, _K_F32, "from_float16")
    cdef _kparams p
    memset(&p, 0, sizeof(p))
    p.kind = _K_F16_F32
    _k_elementwise(&p, a, o, None)
    return o


def compact(src, *, out=None):
    """A C-contiguous copy of a strided array (the row padding of an NPU view dropped);
    equal to ``np.ascontiguousarray(src)``, into ``out`` (same shape and dtype) if given."""
    a = src if type(src) is _np.ndarray else _np.asarray(src)
    if a.dtype.hasobject:
        raise TypeError("compact: src must be a numeric array, got dtype object")
    if not a.flags.aligned:
        raise ValueError(f"compact: src is not aligned to its {a.dtype} elements")
    cdef _kparams p
    memset(&p, 0, sizeof(p))
    p.kind = _k_copy_kind(a.dtype.itemsize)
    p.itemsize = a.dtype.itemsize
    o = _k_out(out, a, a.shape, a.dtype, "compact")
    _k_elementwise(&p, a, o, None)
    return o


cdef object _k_layout(object layout, str what):
    if layout not in _K_LAYOUTS:
        raise ValueError(f"{what}: layout must be 'NCHW' or 'NHWC', got {layout!r}")
    return layout


cdef int _k_blocked_convert(_kparams* p, object src_dt, object dt, str what) except -1:
    """nc1hwc2_to_nchw without scale: the kind that copies `src_dt` elements as `dt` (the
    same type, or float32 <-> float16), and the tile mode of its fast path."""
    if dt == src_dt:
        p.kind = _k_copy_kind(src_dt.itemsize)
        p.itemsize = src_dt.itemsize
        if p.itemsize == 1:
            p.tile_mode = 2
    elif src_dt == _K_F16 and dt == _K_F32:
        p.kind = _K_F16_F32
        p.tile_mode = 3
    elif src_dt == _K_F32 and dt == _K_F16:
        p.kind = _K_F32_F16
    else:
        raise TypeError(f"{what}: without scale, dtype must be {src_dt} (or float32 <-> "
                        f"float16), got {dt}")
    return 0


cdef inline void _k_nchw_strides(const Py_buffer* vd, bint nchw, Py_ssize_t* ps) noexcept:
    """The strides of the result (NCHW, or NHWC) in N, C, H, W order."""
    ps[0] = vd.strides[0]
    ps[1] = vd.strides[1] if nchw else vd.strides[3]
    ps[2] = vd.strides[2] if nchw else vd.strides[1]
    ps[3] = vd.strides[3] if nchw else vd.strides[2]


cdef Py_ssize_t _k_blocked_channels(object a, object channels, str what) except -1:
    """nc1hwc2_to_nchw's source checked (5-D, aligned) and its real channel count C."""
    if a.ndim != 5:
        raise ValueError(f"{what}: src must be 5-D (N, C1, H, W, C2), got shape {a.shape}")
    if not a.flags.aligned:
        raise ValueError(f"{what}: src is not aligned to its {a.dtype} elements")
    cdef Py_ssize_t C, C1C2 = a.shape[1] * a.shape[4]
    try:
        C = _operator_index(channels)
    except TypeError:
        raise TypeError(f"{what}: channels must be an int, got {type(channels).__name__}") from None
    if not 0 < C <= C1C2:
        raise ValueError(f"{what}: channels must be in 1..C1*C2 = {C1C2}, got {C}")
    return C


cdef tuple _k_blocked_dequant(_kparams* p, object a, object scale, object zero_point,
                              object dtype, Py_ssize_t C, float* l32, uint16_t* l16,
                              str what):
    """nc1hwc2_to_nchw with scale: the result's dtype, and the table `p` reads (one scale:
    `l32`/`l16` filled, with the scalar fast path's scale and zero point; one per channel:
    a (C, 256) table, returned so that the caller keeps it alive while `p` points into
    it, else None)."""
    cdef const float[:, ::1] t32
    cdef const uint16_t[:, ::1] t16
    cdef float sf, zf
    if a.dtype not in (_K_INT8, _K_UINT8):
        raise TypeError(f"{what}: src must be int8 or uint8 to dequantize, got {a.dtype}")
    dt = _k_dtype(_K_F32 if dtype is None else dtype, what, (_K_F32, _K_F16))
    if not (_k_ndim(scale) or _k_ndim(zero_point)):
        _k_scalar_table(scale, zero_point, a.dtype == _K_INT8, l32,
                        l16 if dt == _K_F16 else NULL, &sf, &zf, what)
        p.kind = _K_LUT_F32 if dt == _K_F32 else _K_LUT_F16
        p.lut32 = l32
        p.lut16 = l16
        if dt == _K_F32:
            p.tile_mode = 0 if a.dtype == _K_INT8 else 1
            p.dsc = sf
            p.dzp = zf
        return dt, None
    sc, zpf = _k_lut(scale, zero_point, dt, C, what)
    table = _k_table(sc, zpf, a.dtype == _K_INT8, dt)
    if dt == _K_F32:
        t32 = table
        p.kind = _K_LUT_F32
        p.lut32 = &t32[0, 0]
    else:
        t16 = table
        p.kind = _K_LUT_F16
        p.lut16 = &t16[0, 0]
    return dt, table


cdef int _k_blocked_run(const _kparams* p, bint per_channel, object a, object o, bint nchw,
                        Py_ssize_t C) except -1:
    """The blocks of `a` (N, C1, H, W, C2) undone into `o` as `p` converts, the GIL
    released: rows along whichever of C2 / W is the closer in the result."""
    cdef Py_buffer vs, vd
    cdef Py_ssize_t ps[4]
    cdef bint row_c
    cdef Py_ssize_t N = a.shape[0], C1 = a.shape[1], H = a.shape[2], W = a.shape[3]
    cdef Py_ssize_t C2 = a.shape[4]
    _k_get(a, &vs, False)
    try:
        _k_get(o, &vd, True)
        try:
            _k_nchw_strides(&vd, nchw, ps)
            row_c = not per_channel and abs(ps[1]) < abs(ps[3])
            with nogil:
                _blocked_to_plain(p, per_channel, row_c, N, C1, H, W, C2, C, vs.strides, ps,
                                  <const char*>vs.buf, <char*>vd.buf)
        finally:
            PyBuffer_Release(&vd)
    finally:
        PyBuffer_Release(&vs)
    return 0


def nc1hwc2_to_nchw(src, channels, *, layout="NCHW", scale=None, zero_point=0, dtype=None,
                    out=None):
    """The native NC1HWC2 layout to NCHW (or NHWC), optionally dequantized in the same pass.

    Equal bit for bit to ``src.transpose(0, 1, 4, 2, 3).reshape(N, C1*C2, H, W)[:,
    :channels]`` (then ``.transpose(0, 2, 3, 1)`` for NHWC), followed with ``scale`` by
    ``(x.astype(np.float32) - np.float32(zero_point)) * np.float32(scale)``.

    Parameters
    ----------
    src : array_like
        5-D ``(N, C1, H, W, C2)``, any strides (a padded W is fine).
    channels : int
        The real channel count C (``<= C1*C2``); the padding channels are dropped.
    layout : "NCHW" or "NHWC"
        The layout of the result.
    scale, zero_point : float, int, or 1-D arrays of ``channels`` values
        Dequantize int8/uint8 ``src`` to ``dtype`` (float32 by default).
    dtype : numpy dtype, optional
        Without ``scale``: ``src``'s dtype, or float32 <-> float16 converted.
    out : numpy.ndarray, optional
        ``(N, C, H, W)`` or ``(N, H, W, C)``, any strides.
    """
    what = "nc1hwc2_to_nchw"
    a = src if type(src) is _np.ndarray else _np.asarray(src)
    cdef Py_ssize_t C = _k_blocked_channels(a, channels, what)
    _k_layout(layout, what)
    cdef _kparams p
    cdef float l32[256]
    cdef uint16_t l16[256]
    memset(&p, 0, sizeof(p))
    p.tile_mode = -1
    table = None
    if scale is not None:
        dt, table = _k_blocked_dequant(&p, a, scale, zero_point, dtype, C, l32, l16, what)
    else:
        if _k_ndim(zero_point) or zero_point != 0:
            raise ValueError(f"{what}: zero_point needs scale")
        if a.dtype.hasobject:
            raise TypeError(f"{what}: src must be a numeric array, got dtype object")
        dt = a.dtype if dtype is None else _np.dtype(dtype)
        _k_blocked_convert(&p, a.dtype, dt, what)
    shape = (a.shape[0], C, a.shape[2], a.shape[3]) if layout == "NCHW" else \
        (a.shape[0], a.shape[2], a.shape[3], C)
    o = _k_out(out, a, shape, dt, what)
    if a.size == 0 or o.size == 0:
        return o
    _k_blocked_run(&p, table is not None, a, o, layout == "NCHW", C)
    return o


def nchw_to_nc1hwc2(src, c2, *, layout="NCHW", out=None):
    """NCHW (or NHWC with ``layout="NHWC"``) to the native NC1HWC2 layout
    ``(N, ceil(C/c2), H, W, c2)``, the padding channels zero; ``out`` (any strides) is
    written if given.  The inverse of :func:`nc1hwc2_to_nchw` without dequantization."""
    what = "nchw_to_nc1hwc2"
    a = src if type(src) is _np.ndarray else _np.asarray(src)
    if a.ndim != 4:
        raise ValueError(f"{what}: src must be 4-D ({layout}), got shape {a.shape}")
    if not a.flags.aligned:
        raise ValueError(f"{what}: src is not aligned to its {a.dtype} elements")
    if a.dtype.hasobject:
        raise TypeError(f"{what}: src must be a numeric array, got dtype object")
    _k_layout(layout, what)
    cdef Py_ssize_t C2
    try:
        C2 = _operator_index(c2)
    except TypeError:
        raise TypeError(f"{what}: c2 must be an int, got {type(c2).__name__}") from None
    if C2 < 1:
        raise ValueError(f"{what}: c2 must be >= 1, got {C2}")
    cdef Py_ssize_t N, C, H, W, C1
    if layout == "NCHW":
        N, C, H, W = a.shape
    else:
        N, H, W, C = a.shape
    C1 = (C + C2 - 1) // C2
    cdef _kparams p, zero
    memset(&p, 0, sizeof(p))
    memset(&zero, 0, sizeof(zero))
    p.kind = _k_copy_kind(a.dtype.itemsize)
    p.itemsize = a.dtype.itemsize
    zero.kind = _K_ZERO
    zero.itemsize = a.dtype.itemsize
    o = _k_out(out, a, (N, C1, H, W, C2), a.dtype, what)
    if o.size == 0:
        return o
    cdef Py_buffer vs, vd
    cdef Py_ssize_t ps[4]
    cdef bint row_c
    _k_get(a, &vs, False)
    try:
        _k_get(o, &vd, True)
        try:
            if layout == "NCHW":
                ps[0] = vs.strides[0]; ps[1] = vs.strides[1]; ps[2] = vs.strides[2]; ps[3] = vs.strides[3]
            else:
                ps[0] = vs.strides[0]; ps[1] = vs.strides[3]; ps[2] = vs.strides[1]; ps[3] = vs.strides[2]
            row_c = abs(ps[1]) < abs(ps[3])
            with nogil:
                _plain_to_blocked(&p, &zero, row_c, N, C1, H, W, C2, C, ps, vd.strides,
                                  <const char*>vs.buf, <char*>vd.buf)
        finally:
            PyBuffer_Release(&vd)
    finally:
        PyBuffer_Release(&vs)
    return o


include "_kernels_letterbox.pxi"   # rknnx.vision.letterbox: frame -> network input
include "_kernels_yolo.pxi"        # rknnx.vision.decode: YOLO outputs -> boxes (yolo.c)
include "_kernels_track.pxi"       # rknnx.vision.Tracker: ByteTrack's state in C (track.c)
