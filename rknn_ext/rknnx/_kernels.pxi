# Layout and quantization kernels: numpy arrays in, numpy arrays out, loops in C without
# the GIL.
#
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
# sum.  The float tricks below (adding 2**23, 0.5, 2**-14) are exact in the default
# round-to-nearest mode and only ever see or produce normal numbers.

from cpython.buffer cimport (PyObject_GetBuffer, PyBuffer_Release, PyBUF_RECORDS_RO,
                             PyBUF_RECORDS)
from libc.string cimport memcpy, memset
from libc.stdint cimport uint16_t, uint64_t

from operator import index as _operator_index

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


cdef inline uint32_t _f32_bits(float f) noexcept nogil:
    cdef uint32_t u
    memcpy(&u, &f, 4)
    return u


cdef inline float _bits_f32(uint32_t u) noexcept nogil:
    cdef float f
    memcpy(&f, &u, 4)
    return f


cdef inline uint16_t _half_of(float f) noexcept nogil:
    """float32 -> float16 bits, round to nearest even (numpy's astype)."""
    cdef uint32_t x = _f32_bits(f)
    cdef uint32_t sign = (x >> 16) & 0x8000u
    cdef uint32_t a = x & 0x7fffffffu
    cdef uint32_t h, m
    cdef float half_ulp_base
    if a >= 0x47800000u:
        # >= 65536 (or inf, nan): inf, or nan keeping the top payload bits (never 0)
        if a > 0x7f800000u:
            m = (a >> 13) & 0x3ffu
            return <uint16_t>(sign | 0x7c00u | (m if m else 1u))
        return <uint16_t>(sign | 0x7c00u)
    if a < 0x38800000u:
        # below 2**-14: a float16 subnormal (or zero); adding 0.5, whose float32 ulp is
        # 2**-24 (the float16 subnormal step), rounds to the nearest step, ties to even,
        # and 2**-14 itself comes out as 0x400, the smallest normal
        half_ulp_base = 0.5
        h = _f32_bits(_bits_f32(a) + half_ulp_base) - 0x3f000000u
        return <uint16_t>(sign | h)
    # normal: rebias the exponent, round the 13 dropped bits to nearest even; a carry
    # runs into the exponent (up to inf for [65520, 65536)) as it should
    h = a + 0xc8000fffu + ((a >> 13) & 1u)     # 0xc8000000 = (15 - 127) << 23 mod 2**32
    return <uint16_t>(sign | (h >> 13))


cdef inline float _float_of(uint16_t hb) noexcept nogil:
    """float16 bits -> float32 (exact; nan payloads shifted up, as numpy does)."""
    cdef uint32_t sign = (<uint32_t>(hb & 0x8000u)) << 16
    cdef uint32_t o = (<uint32_t>(hb & 0x7fffu)) << 13
    cdef uint32_t e = o & 0x0f800000u
    cdef float magic
    if e == 0x0f800000u:                  # inf / nan
        o += 0x70000000u                  # (255 - 31) << 23
    elif e == 0:                          # zero / subnormal: renormalize exactly
        magic = _bits_f32(0x38800000u)    # 2**-14
        o = _f32_bits(_bits_f32(o + 0x38800000u) - magic)
    else:
        o += 0x38000000u                  # (127 - 15) << 23
    return _bits_f32(o | sign)


# The contiguous rows of dequantize and quantize, in C with no branches in the loop so that
# the compiler vectorises them (SSE2 on x86-64, NEON on aarch64, at -O3): the same float32
# operations in the same order as the expressions above, element by element.
cdef extern from *:
    """
    #include <stddef.h>
    #include <stdint.h>
    #include <string.h>
    /* clip(rint(x / sc) + zp, lo, hi), NaN -> clip(zp): rint through 2**23 on |v| (round
       to nearest even, symmetric), the sign put back; |v| >= 2**23 (and inf) is already an
       integer.  The sign of a zero result does not matter: it only feeds the addition of
       zp and the conversion to an integer. */
    static inline float rknnx_k_q1(float x, float sc, float zp, float lo, float hi)
    {
        const float big = 8388608.0f;
        float v = x / sc;
        float a = __builtin_fabsf(v);
        float t = (a + big) - big;
        float r = a < big ? __builtin_copysignf(t, v) : v;
        r = v != v ? 0.0f : r;
        r = r + zp;
        r = r < lo ? lo : r;
        r = r > hi ? hi : r;
        return r;
    }
    #if defined(__GNUC__) && ((__GNUC__ >= 10) || defined(__clang__))
    #define RKNNX_K_VQ 1
    #if defined(__SSE2__)
    #include <emmintrin.h>
    #endif
    /* Constant shuffles of two vectors: __builtin_shufflevector (Clang, GCC >= 12) or
       __builtin_shuffle with a mask vector M of the same lanes (GCC 10 and 11: Ubuntu
       22.04's and Debian 11's compilers, where the package is built from source for
       Python 3.10).  Shuffles into a wider vector need the former (RKNNX_K_WIDE). */
    typedef signed char rknnx_k_m16b __attribute__((vector_size(16)));
    typedef short rknnx_k_m8h __attribute__((vector_size(16)));
    #if defined(__clang__) || __GNUC__ >= 12
    #define RKNNX_K_SHUF(M, a, b, ...) __builtin_shufflevector(a, b, __VA_ARGS__)
    #define RKNNX_K_WIDE 1
    #else
    #define RKNNX_K_SHUF(M, a, b, ...) __builtin_shuffle(a, b, (M){__VA_ARGS__})
    #define RKNNX_K_WIDE 0
    #endif
    /* 4 float lanes (GCC/Clang vector extensions; comparisons give lane masks and
       selects are bit operations, so there is no branch to stop vectorisation). */
    typedef float rknnx_k_v4f __attribute__((vector_size(16)));
    typedef int rknnx_k_v4i __attribute__((vector_size(16)));
    static inline rknnx_k_v4f rknnx_k_sel(rknnx_k_v4i m, rknnx_k_v4f a, rknnx_k_v4f b)
    {
        return (rknnx_k_v4f)((m & (rknnx_k_v4i)a) | (~m & (rknnx_k_v4i)b));
    }
    /* 4 lanes at once, for |zp| <= 2**16: clipping v to [lo - zp, hi - zp] (integers)
       before rint equals clipping rint(v) + zp to [lo, hi] after it (rint is monotonic
       and the sums are exact); NaN is zeroed first; then v + 1.5 * 2**23 rounds v to the
       nearest integer, ties to even, and holds it in the low bits of its representation,
       to which zp is added as an integer: the low byte is the code. */
    static inline rknnx_k_v4i rknnx_k_q4(rknnx_k_v4f x, rknnx_k_v4f sc, rknnx_k_v4f lo,
                                         rknnx_k_v4f hi, rknnx_k_v4i zpi)
    {
        const rknnx_k_v4f magic = {12582912.0f, 12582912.0f, 12582912.0f, 12582912.0f};
        rknnx_k_v4f v = x / sc;
        v = (rknnx_k_v4f)((rknnx_k_v4i)v & (v == v));
    #if defined(__SSE2__)
        v = (rknnx_k_v4f)_mm_min_ps(_mm_max_ps((__m128)v, (__m128)lo), (__m128)hi);
    #else
        v = rknnx_k_sel(v < lo, lo, v);
        v = rknnx_k_sel(v > hi, hi, v);
    #endif
        return ((rknnx_k_v4i)(v + magic) + zpi) & 0xff;
    }
    #else
    #define RKNNX_K_VQ 0
    #endif
    static void rknnx_k_quant_row(const float *restrict s, unsigned char *restrict d,
                                  ptrdiff_t n, float sc, float zp, float lo, float hi)
    {
        ptrdiff_t i = 0;
    #if RKNNX_K_VQ
        const float l = lo - zp, h = hi - zp;
        const int z = (int)zp;
        const rknnx_k_v4f vs = {sc, sc, sc, sc};
        const rknnx_k_v4f vl = {l, l, l, l}, vh = {h, h, h, h};
        const rknnx_k_v4i vz = {z, z, z, z};
        for (; zp >= -65536.0f && zp <= 65536.0f && i + 16 <= n; i += 16) {
            rknnx_k_v4f x[4];
            rknnx_k_v4i q[4];
            memcpy(x, s + i, sizeof x);
            for (int j = 0; j < 4; j++)
                q[j] = rknnx_k_q4(x[j], vs, vl, vh, vz);     /* bytes 0..255 in 32 bits */
    #if defined(__SSE2__)
            __m128i w0 = _mm_packs_epi32((__m128i)q[0], (__m128i)q[1]);
            __m128i w1 = _mm_packs_epi32((__m128i)q[2], (__m128i)q[3]);
            _mm_storeu_si128((__m128i *)(d + i), _mm_packus_epi16(w0, w1));
    #else
            for (int j = 0; j < 4; j++) {
                typedef unsigned char v4b __attribute__((vector_size(4)));
                v4b b = __builtin_convertvector(q[j], v4b);
                memcpy(d + i + 4 * j, &b, 4);
            }
    #endif
        }
    #endif
        for (; i < n; i++)
            d[i] = (unsigned char)(int)rknnx_k_q1(s[i], sc, zp, lo, hi);
    }
    static void rknnx_k_quant_strided(const char *s, ptrdiff_t ss, char *d, ptrdiff_t ds,
                                      ptrdiff_t n, float sc, float zp, float lo, float hi)
    {
        for (ptrdiff_t i = 0; i < n; i++)
            *(unsigned char *)(d + i * ds) =
                (unsigned char)(int)rknnx_k_q1(*(const float *)(s + i * ss), sc, zp, lo, hi);
    }
    /* Dequantizing 8-bit codes without a conversion instruction: a code u (0..255; int8
       codes are flipped to u = q + 128 first) interleaved as the low byte of the 32-bit
       pattern 0x4b0000uu is the float 2**23 + u, so (2**23 + u) - (2**23 + bias + zp) is
       q - zp exactly (integers below 2**24), and the product with sc is the one rounding
       numpy makes.  Exact when zp is an integer with |zp| <= 2**22 (rknnx_k_magic_ok); the
       interleaving with the constant takes the place of the widening, so 16 codes cost two
       byte and four 16-bit interleaves, four subtractions, four products and four stores. */
    /* The trick reads bytes as 16- and 32-bit lanes (little-endian only) and needs IEEE
       float vectors (SSE2, AArch64; ARMv7 NEON flushes subnormals and drops NaN
       payloads): elsewhere the plain expression runs. */
    #if RKNNX_K_VQ && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ \
        && (defined(__SSE2__) || defined(__aarch64__))
    #define RKNNX_K_MAGIC 1
    #else
    #define RKNNX_K_MAGIC 0
    #endif
    static inline int rknnx_k_magic_ok(float zp)
    {
        return RKNNX_K_MAGIC && zp >= -4194304.0f && zp <= 4194304.0f && zp == (float)(int)zp;
    }
    /* The widest dequantizing path the kernels may take: 2 AVX2 (where the processor has
       it), 1 128-bit vectors, 0 the plain expression.  Lowered only by the tests and the
       benchmark (rknnx._core._kernel_path), to run the boards' 128-bit path here. */
    static int rknnx_k_path_cap = 2;
    static inline int rknnx_k_path(void)
    {
        return __atomic_load_n(&rknnx_k_path_cap, __ATOMIC_RELAXED);
    }
    static inline int rknnx_k_set_path(int level)
    {
        return __atomic_exchange_n(&rknnx_k_path_cap, level, __ATOMIC_RELAXED);
    }
    #if RKNNX_K_VQ
    typedef unsigned char rknnx_k_v16b __attribute__((vector_size(16)));
    typedef unsigned short rknnx_k_v8h __attribute__((vector_size(16)));
    #define RKNNX_K_LO8 0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23
    #define RKNNX_K_HI8 8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31
    #define RKNNX_K_LO16 0, 8, 1, 9, 2, 10, 3, 11
    #define RKNNX_K_HI16 4, 12, 5, 13, 6, 14, 7, 15
    static inline void rknnx_k_codes4x4(rknnx_k_v16b u, rknnx_k_v4f b, rknnx_k_v4f sc,
                                        rknnx_k_v4f f[4])
    {
        const rknnx_k_v16b z = {0};
        const rknnx_k_v8h m = {0x4b00, 0x4b00, 0x4b00, 0x4b00, 0x4b00, 0x4b00, 0x4b00, 0x4b00};
        rknnx_k_v8h lo = (rknnx_k_v8h)RKNNX_K_SHUF(rknnx_k_m16b, u, z, RKNNX_K_LO8);
        rknnx_k_v8h hi = (rknnx_k_v8h)RKNNX_K_SHUF(rknnx_k_m16b, u, z, RKNNX_K_HI8);
        f[0] = ((rknnx_k_v4f)RKNNX_K_SHUF(rknnx_k_m8h, lo, m, RKNNX_K_LO16) - b) * sc;
        f[1] = ((rknnx_k_v4f)RKNNX_K_SHUF(rknnx_k_m8h, lo, m, RKNNX_K_HI16) - b) * sc;
        f[2] = ((rknnx_k_v4f)RKNNX_K_SHUF(rknnx_k_m8h, hi, m, RKNNX_K_LO16) - b) * sc;
        f[3] = ((rknnx_k_v4f)RKNNX_K_SHUF(rknnx_k_m8h, hi, m, RKNNX_K_HI16) - b) * sc;
    }
    #endif
    /* nc1hwc2_to_nchw's dequantizing path (rknnx_k_quads16 below) on x86-64 processors
       with AVX2, chosen at run time: 8 pixels at a time,
       pixels 0..3 in the low 128-bit lane and 4..7 in the high one, so that every
       interleave stays inside its lane (vpunpck*) and each channel's 8 values leave as one
       256-bit store.  The boards' NEON has 128-bit registers only. */
    #if RKNNX_K_MAGIC && RKNNX_K_WIDE && defined(__x86_64__)
    #define RKNNX_K_AVX2 1
    #include <cpuid.h>
    typedef unsigned char rknnx_k_v32b __attribute__((vector_size(32)));
    typedef unsigned short rknnx_k_v16h __attribute__((vector_size(32)));
    typedef float rknnx_k_v8f __attribute__((vector_size(32)));
    #define RKNNX_K_LO8X2 0, 32, 1, 33, 2, 34, 3, 35, 4, 36, 5, 37, 6, 38, 7, 39, \
        16, 48, 17, 49, 18, 50, 19, 51, 20, 52, 21, 53, 22, 54, 23, 55
    #define RKNNX_K_HI8X2 8, 40, 9, 41, 10, 42, 11, 43, 12, 44, 13, 45, 14, 46, 15, 47, \
        24, 56, 25, 57, 26, 58, 27, 59, 28, 60, 29, 61, 30, 62, 31, 63
    #define RKNNX_K_LO16X2 0, 16, 1, 17, 2, 18, 3, 19, 8, 24, 9, 25, 10, 26, 11, 27
    #define RKNNX_K_HI16X2 4, 20, 5, 21, 6, 22, 7, 23, 12, 28, 13, 29, 14, 30, 15, 31
    #define RKNNX_K_CAT16 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, \
        19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31
    /* CPUID: AVX2, and AVX with the YMM state enabled by the OS (XGETBV); asked once
       (every thread finds the same answer).  Not __builtin_cpu_supports: its table is
       not filled in every toolchain's shared libraries (zig's, which builds the wheels). */
    static int rknnx_k_have_avx2(void)
    {
        static int have = -1;
        int h = __atomic_load_n(&have, __ATOMIC_RELAXED);
        if (h < 0) {
            unsigned a, b, c, d, lo, hi;
            h = 0;
            if (__get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 27)) && (c & (1u << 28))) {
                __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
                if ((lo & 6u) == 6u && __get_cpuid_count(7, 0, &a, &b, &c, &d)
                        && (b & (1u << 5)))
                    h = 1;
            }
            __atomic_store_n(&have, h, __ATOMIC_RELAXED);
        }
        return h;
    }
    /* pixel a in the low lane, pixel b in the high one, flipped */
    __attribute__((target("avx2")))
    static inline rknnx_k_v32b rknnx_k_pair_avx2(const unsigned char *a,
                                                 const unsigned char *b, rknnx_k_v32b flip)
    {
        rknnx_k_v16b l, h;
        memcpy(&l, a, 16);
        memcpy(&h, b, 16);
        return __builtin_shufflevector(l, h, RKNNX_K_CAT16) ^ flip;
    }
    /* q: 4 channels x 8 pixels of codes -> the first n (<= 4) of those channel rows */
    __attribute__((target("avx2")))
    static inline void rknnx_k_rows4_avx2(rknnx_k_v32b q, rknnx_k_v8f b, rknnx_k_v8f sc,
                                          char *d, ptrdiff_t r0, ptrdiff_t dk, ptrdiff_t n)
    {
        const rknnx_k_v32b z = {0};
        const rknnx_k_v16h m = {0x4b00, 0x4b00, 0x4b00, 0x4b00, 0x4b00, 0x4b00, 0x4b00,
                                0x4b00, 0x4b00, 0x4b00, 0x4b00, 0x4b00, 0x4b00, 0x4b00,
                                0x4b00, 0x4b00};
        rknnx_k_v16h lo = (rknnx_k_v16h)__builtin_shufflevector(q, z, RKNNX_K_LO8X2);
        rknnx_k_v16h hi = (rknnx_k_v16h)__builtin_shufflevector(q, z, RKNNX_K_HI8X2);
        rknnx_k_v8f f0 = ((rknnx_k_v8f)__builtin_shufflevector(lo, m, RKNNX_K_LO16X2) - b) * sc;
        rknnx_k_v8f f1 = ((rknnx_k_v8f)__builtin_shufflevector(lo, m, RKNNX_K_HI16X2) - b) * sc;
        rknnx_k_v8f f2 = ((rknnx_k_v8f)__builtin_shufflevector(hi, m, RKNNX_K_LO16X2) - b) * sc;
        rknnx_k_v8f f3 = ((rknnx_k_v8f)__builtin_shufflevector(hi, m, RKNNX_K_HI16X2) - b) * sc;
        if (n >= 4) {
            memcpy(d + r0 * dk, &f0, 32);
            memcpy(d + (r0 + 1) * dk, &f1, 32);
            memcpy(d + (r0 + 2) * dk, &f2, 32);
            memcpy(d + (r0 + 3) * dk, &f3, 32);
            return;
        }
        if (n > 0)
            memcpy(d + r0 * dk, &f0, 32);
        if (n > 1)
            memcpy(d + (r0 + 1) * dk, &f1, 32);
        if (n > 2)
            memcpy(d + (r0 + 2) * dk, &f2, 32);
    }
    __attribute__((target("avx2")))
    static int rknnx_k_octs16_avx2(const unsigned char *src, ptrdiff_t sw, ptrdiff_t W,
                                   char *dst, ptrdiff_t dk, ptrdiff_t kmax, float zp, float sc,
                                   unsigned char flip)
    {
        const float bias = 8388608.0f + (flip ? 128.0f : 0.0f) + zp;
        const rknnx_k_v8f vb = {bias, bias, bias, bias, bias, bias, bias, bias};
        const rknnx_k_v8f vs = {sc, sc, sc, sc, sc, sc, sc, sc};
        rknnx_k_v32b vf;
        memset(&vf, flip, sizeof vf);
        /* numpy aligns to 16 bytes: after a first block at 0, the blocks start where the
           stores are aligned to 32 (the second overlaps the first) */
        const ptrdiff_t lead = (ptrdiff_t)((32 - ((uintptr_t)dst & 31)) & 31) / 4;
        ptrdiff_t w0 = 0;
        for (;;) {
            if (w0 + 8 > W)
                w0 = W - 8;
            const unsigned char *s0 = src + w0 * sw;
            rknnx_k_v32b p0 = rknnx_k_pair_avx2(s0, s0 + 4 * sw, vf);
            rknnx_k_v32b p1 = rknnx_k_pair_avx2(s0 + sw, s0 + 5 * sw, vf);
            rknnx_k_v32b p2 = rknnx_k_pair_avx2(s0 + 2 * sw, s0 + 6 * sw, vf);
            rknnx_k_v32b p3 = rknnx_k_pair_avx2(s0 + 3 * sw, s0 + 7 * sw, vf);
            rknnx_k_v16h a0 = (rknnx_k_v16h)__builtin_shufflevector(p0, p1, RKNNX_K_LO8X2);
            rknnx_k_v16h a1 = (rknnx_k_v16h)__builtin_shufflevector(p0, p1, RKNNX_K_HI8X2);
            rknnx_k_v16h b0 = (rknnx_k_v16h)__builtin_shufflevector(p2, p3, RKNNX_K_LO8X2);
            rknnx_k_v16h b1 = (rknnx_k_v16h)__builtin_shufflevector(p2, p3, RKNNX_K_HI8X2);
            char *d = dst + w0 * 4;
            rknnx_k_rows4_avx2((rknnx_k_v32b)__builtin_shufflevector(a0, b0, RKNNX_K_LO16X2),
                               vb, vs, d, 0, dk, kmax);
            rknnx_k_rows4_avx2((rknnx_k_v32b)__builtin_shufflevector(a0, b0, RKNNX_K_HI16X2),
                               vb, vs, d, 4, dk, kmax - 4);
            rknnx_k_rows4_avx2((rknnx_k_v32b)__builtin_shufflevector(a1, b1, RKNNX_K_LO16X2),
                               vb, vs, d, 8, dk, kmax - 8);
            rknnx_k_rows4_avx2((rknnx_k_v32b)__builtin_shufflevector(a1, b1, RKNNX_K_HI16X2),
                               vb, vs, d, 12, dk, kmax - 12);
            if (w0 + 8 >= W)
                return 1;
            w0 = w0 == 0 && lead ? lead : w0 + 8;
        }
    }
    /* contiguous codes: 8 at a time zero-extended (vpmovzxbd) into the float pattern */
    __attribute__((target("avx2")))
    static ptrdiff_t rknnx_k_deq_row_avx2(const unsigned char *restrict s, float *restrict d,
                                          ptrdiff_t n, float zp, float sc, unsigned char flip)
    {
        typedef unsigned char v8b __attribute__((vector_size(8)));
        typedef unsigned int v8u __attribute__((vector_size(32)));
        const float bias = 8388608.0f + (flip ? 128.0f : 0.0f) + zp;
        const rknnx_k_v8f vb = {bias, bias, bias, bias, bias, bias, bias, bias};
        const rknnx_k_v8f vs = {sc, sc, sc, sc, sc, sc, sc, sc};
        const v8u m = {0x4b000000u, 0x4b000000u, 0x4b000000u, 0x4b000000u, 0x4b000000u,
                       0x4b000000u, 0x4b000000u, 0x4b000000u};
        v8b vf;
        memset(&vf, flip, sizeof vf);
        const ptrdiff_t lead = (ptrdiff_t)((32 - ((uintptr_t)d & 31)) & 31) / 4;
        ptrdiff_t i = 0;
        while (i + 8 <= n) {
            v8b u;
            memcpy(&u, s + i, 8);
            rknnx_k_v8f f = ((rknnx_k_v8f)(__builtin_convertvector(u ^ vf, v8u) | m) - vb) * vs;
            memcpy(d + i, &f, 32);
            i = i == 0 && lead ? lead : i + 8;     /* then aligned stores, as above */
        }
        return i;
    }
    #else
    #define RKNNX_K_AVX2 0
    static int rknnx_k_have_avx2(void)
    {
        return 0;
    }
    #endif

    /* flip: 0x80 for int8 codes, 0 for uint8 */
    static void rknnx_k_deq_row(const unsigned char *restrict s, float *restrict d,
                                ptrdiff_t n, float zp, float sc, unsigned char flip)
    {
        ptrdiff_t i = 0;
    #if RKNNX_K_MAGIC
    #if RKNNX_K_AVX2
        if (n >= 64 && rknnx_k_path() >= 2 && rknnx_k_magic_ok(zp) && rknnx_k_have_avx2())
            i = rknnx_k_deq_row_avx2(s, d, n, zp, sc, flip);
    #endif
        if (rknnx_k_path() >= 1 && rknnx_k_magic_ok(zp)) {
            const float bias = 8388608.0f + (flip ? 128.0f : 0.0f) + zp;
            const rknnx_k_v4f vb = {bias, bias, bias, bias}, vs = {sc, sc, sc, sc};
            rknnx_k_v16b vf;
            memset(&vf, flip, sizeof vf);
            for (; i + 16 <= n; i += 16) {
                rknnx_k_v16b u;
                rknnx_k_v4f f[4];
                memcpy(&u, s + i, 16);
                rknnx_k_codes4x4(u ^ vf, vb, vs, f);
                memcpy(d + i, f, sizeof f);
            }
        }
    #endif
        if (flip) {
            for (; i < n; i++)
                d[i] = ((float)(signed char)s[i] - zp) * sc;
        } else {
            for (; i < n; i++)
                d[i] = ((float)s[i] - zp) * sc;
        }
    }
    /* float16 -> float32 four lanes at a time, the same integer steps as _float_of (the
       exponent rebiased, inf/NaN rebiased twice keeping the payload, zero and subnormals
       renormalized by one exact float subtraction): needs the float trick's conditions. */
    #if RKNNX_K_MAGIC
    typedef unsigned int rknnx_k_v4u __attribute__((vector_size(16)));
    typedef int rknnx_k_m4i __attribute__((vector_size(16)));
    #define RKNNX_K_SPLAT4(x) {x, x, x, x}
    static inline rknnx_k_v4f rknnx_k_half4(rknnx_k_v4u h)
    {
        const rknnx_k_v4u k7fff = RKNNX_K_SPLAT4(0x7fffu), k8000 = RKNNX_K_SPLAT4(0x8000u);
        const rknnx_k_v4u kexp = RKNNX_K_SPLAT4(0x0f800000u), zero = RKNNX_K_SPLAT4(0u);
        const rknnx_k_v4u kre = RKNNX_K_SPLAT4(0x38000000u), ksub = RKNNX_K_SPLAT4(0x38800000u);
        const rknnx_k_v4f magic = RKNNX_K_SPLAT4(6.103515625e-05f);     /* 2**-14 */
        rknnx_k_v4u o = (h & k7fff) << 13;
        rknnx_k_v4u e = o & kexp;
        rknnx_k_v4u special = (rknnx_k_v4u)(e == kexp), tiny = (rknnx_k_v4u)(e == zero);
        rknnx_k_v4u normal = o + kre + (special & kre);
        rknnx_k_v4u sub = (rknnx_k_v4u)((rknnx_k_v4f)(o + ksub) - magic);
        rknnx_k_v4u r = (tiny & sub) | (~tiny & normal);
        return (rknnx_k_v4f)(r | ((h & k8000) << 16));
    }
    /* 8 halves -> the float lanes of the first 4 and of the last 4 */
    static inline void rknnx_k_halves8(rknnx_k_v8h x, rknnx_k_v4f *lo, rknnx_k_v4f *hi)
    {
        const rknnx_k_v8h z = {0};
        *lo = rknnx_k_half4((rknnx_k_v4u)RKNNX_K_SHUF(rknnx_k_m8h, x, z, RKNNX_K_LO16));
        *hi = rknnx_k_half4((rknnx_k_v4u)RKNNX_K_SHUF(rknnx_k_m8h, x, z, RKNNX_K_HI16));
    }
    #endif
    static inline float rknnx_k_half1(uint16_t hb)        /* _float_of, for the tails */
    {
        uint32_t sign = (uint32_t)(hb & 0x8000u) << 16, o = (uint32_t)(hb & 0x7fffu) << 13;
        uint32_t e = o & 0x0f800000u;
        float f;
        if (e == 0x0f800000u) {
            o += 0x70000000u;
        } else if (e == 0) {
            const float magic = 6.103515625e-05f;
            o += 0x38800000u;
            memcpy(&f, &o, 4);
            f -= magic;
            memcpy(&o, &f, 4);
        } else {
            o += 0x38000000u;
        }
        o |= sign;
        memcpy(&f, &o, 4);
        return f;
    }
    static void rknnx_k_f16_row(const uint16_t *restrict s, float *restrict d, ptrdiff_t n)
    {
        ptrdiff_t i = 0;
    #if RKNNX_K_MAGIC
        if (rknnx_k_path() >= 1) {
            for (; i + 8 <= n; i += 8) {
                rknnx_k_v8h x;
                rknnx_k_v4f f[2];
                memcpy(&x, s + i, 16);
                rknnx_k_halves8(x, &f[0], &f[1]);
                memcpy(d + i, f, sizeof f);
            }
        }
    #endif
        for (; i < n; i++)
            d[i] = rknnx_k_half1(s[i]);
    }
    /* float32 -> float16 bits, the scalar steps of _half_of on 4 lanes with selects: the
       overflow/inf/NaN, subnormal (one exact float addition of 0.5) and normal (rebias,
       round to nearest even) results are all computed and the lane's own is kept. */
    static inline uint16_t rknnx_k_tohalf1(float f)      /* _half_of, for the tails */
    {
        uint32_t x, a, h, m;
        memcpy(&x, &f, 4);
        uint32_t sign = (x >> 16) & 0x8000u;
        a = x & 0x7fffffffu;
        if (a >= 0x47800000u) {
            m = (a >> 13) & 0x3ffu;
            return (uint16_t)(sign | 0x7c00u | (a > 0x7f800000u ? (m ? m : 1u) : 0u));
        }
        if (a < 0x38800000u) {
            float v;
            memcpy(&v, &a, 4);
            v += 0.5f;
            memcpy(&h, &v, 4);
            return (uint16_t)(sign | (h - 0x3f000000u));
        }
        h = a + 0xc8000fffu + ((a >> 13) & 1u);
        return (uint16_t)(sign | (h >> 13));
    }
    #if RKNNX_K_MAGIC
    static inline rknnx_k_v4u rknnx_k_tohalf4(rknnx_k_v4f f)
    {
        const rknnx_k_v4u abs = RKNNX_K_SPLAT4(0x7fffffffu), k8000 = RKNNX_K_SPLAT4(0x8000u);
        const rknnx_k_m4i big0 = RKNNX_K_SPLAT4(0x47800000), inf = RKNNX_K_SPLAT4(0x7f800000);
        const rknnx_k_m4i tiny0 = RKNNX_K_SPLAT4(0x38800000), one = RKNNX_K_SPLAT4(1);
        const rknnx_k_m4i k3ff = RKNNX_K_SPLAT4(0x3ff), k7c00 = RKNNX_K_SPLAT4(0x7c00);
        const rknnx_k_m4i zero = RKNNX_K_SPLAT4(0);
        const rknnx_k_v4u rebias = RKNNX_K_SPLAT4(0xc8000fffu), k3f = RKNNX_K_SPLAT4(0x3f000000u);
        const rknnx_k_v4f half = RKNNX_K_SPLAT4(0.5f);
        rknnx_k_v4u x = (rknnx_k_v4u)f;
        rknnx_k_v4u au = x & abs;
        rknnx_k_m4i a = (rknnx_k_m4i)au;                 /* >= 0: signed compares work */
        rknnx_k_m4i big = a >= big0, nan = a > inf, tiny = a < tiny0;
        rknnx_k_m4i m = (a >> 13) & k3ff;
        m = m + ((m == zero) & one);
        rknnx_k_m4i hbig = k7c00 | (nan & m);
        rknnx_k_m4i hsub = (rknnx_k_m4i)((rknnx_k_v4u)((rknnx_k_v4f)au + half) - k3f);
        rknnx_k_m4i hn = (rknnx_k_m4i)((au + rebias + ((au >> 13) & (rknnx_k_v4u)one)) >> 13);
        rknnx_k_m4i h = (big & hbig) | (~big & ((tiny & hsub) | (~tiny & hn)));
        return (rknnx_k_v4u)h | ((x >> 16) & k8000);
    }
    #endif
    static void rknnx_k_f32_f16_row(const float *restrict s, uint16_t *restrict d, ptrdiff_t n)
    {
        ptrdiff_t i = 0;
    #if RKNNX_K_MAGIC
        if (rknnx_k_path() >= 1) {
            for (; i + 8 <= n; i += 8) {
                rknnx_k_v4f f0, f1;
                memcpy(&f0, s + i, 16);
                memcpy(&f1, s + i + 4, 16);
                rknnx_k_v8h h0 = (rknnx_k_v8h)rknnx_k_tohalf4(f0);
                rknnx_k_v8h h1 = (rknnx_k_v8h)rknnx_k_tohalf4(f1);
                rknnx_k_v8h h = RKNNX_K_SHUF(rknnx_k_m8h, h0, h1, 0, 2, 4, 6, 8, 10, 12, 14);
                memcpy(d + i, &h, 16);
            }
        }
    #endif
        for (; i < n; i++)
            d[i] = rknnx_k_tohalf1(s[i]);
    }
    /* Table lookups of contiguous codes, in C with restrict pointers so that their code
       does not depend on how the compiler treats the large _row around them. */
    static void rknnx_k_lut32_row(const unsigned char *restrict s, float *restrict d,
                                  ptrdiff_t n, const float *restrict lut)
    {
        for (ptrdiff_t i = 0; i < n; i++)
            d[i] = lut[s[i]];
    }
    static void rknnx_k_lut16_row(const unsigned char *restrict s, uint16_t *restrict d,
                                  ptrdiff_t n, const uint16_t *restrict lut)
    {
        for (ptrdiff_t i = 0; i < n; i++)
            d[i] = lut[s[i]];
    }
    static void rknnx_k_deq_s8(const signed char *restrict s, float *restrict d, ptrdiff_t n,
                               float zp, float sc)
    {
        rknnx_k_deq_row((const unsigned char *)s, d, n, zp, sc, 0x80);
    }
    static void rknnx_k_deq_u8(const unsigned char *restrict s, float *restrict d,
                               ptrdiff_t n, float zp, float sc)
    {
        rknnx_k_deq_row(s, d, n, zp, sc, 0);
    }
    """
    float rknnx_k_q1(float x, float sc, float zp, float lo, float hi) nogil
    void rknnx_k_quant_row(const float* s, unsigned char* d, Py_ssize_t n, float sc, float zp,
                           float lo, float hi) nogil
    void rknnx_k_quant_strided(const char* s, Py_ssize_t ss, char* d, Py_ssize_t ds,
                               Py_ssize_t n, float sc, float zp, float lo, float hi) nogil
    const int RKNNX_K_MAGIC
    void rknnx_k_f16_row(const uint16_t* s, float* d, Py_ssize_t n) nogil
    void rknnx_k_lut32_row(const unsigned char* s, float* d, Py_ssize_t n,
                           const float* lut) nogil
    void rknnx_k_lut16_row(const unsigned char* s, uint16_t* d, Py_ssize_t n,
                           const uint16_t* lut) nogil
    void rknnx_k_f32_f16_row(const float* s, uint16_t* d, Py_ssize_t n) nogil
    int rknnx_k_have_avx2() nogil
    int rknnx_k_path() nogil
    int rknnx_k_set_path(int level) nogil
    void rknnx_k_deq_s8(const signed char* s, float* d, Py_ssize_t n, float zp, float sc) nogil
    void rknnx_k_deq_u8(const unsigned char* s, float* d, Py_ssize_t n, float zp,
                        float sc) nogil


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
                (<uint16_t*>(d + i * ds))[0] = _half_of((<const float*>(s + i * ss))[0])
    elif k == _K_F16_F32:
        if ss == 2 and ds == 4:
            rknnx_k_f16_row(<const uint16_t*>s, <float*>d, n)
        else:
            for i in range(n):
                (<float*>(d + i * ds))[0] = _float_of((<const uint16_t*>(s + i * ss))[0])
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
                _float_of((<const uint16_t*>(s + i * ss))[0]), sc, zp, lo, hi))
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



# The hot paths of nc1hwc2_to_nchw (GCC/Clang vector extensions: SSE2 on x86-64, NEON on
# aarch64, no intrinsics).  Raw 8-bit codes, C2 a multiple of 16: tiles of 16 pixels x 16
# channels are transposed in registers and each channel's 16 codes written as one run.
# Dequantized to float32: 4 pixels at a time, two rounds of interleaving give one register
# per 4 channels holding each channel's 4 codes side by side, and the interleaving with the
# float pattern of rknnx_k_codes4x4 then spreads each channel's codes over one float
# register, written as one run of 4 values: 22 vector operations per 16 values and no
# spills, against 27 and a round trip through memory for a 16 x 16 transpose followed by
# the widening (blocks of 16 channels, or of 8 for int8 on RK3566/68; AVX2: 8 pixels).
# float16 blocks of 8 or 4 channels to float32 the same way with 16-bit lanes.  Plain C
# loops elsewhere.
cdef extern from *:
    """
    #include <stddef.h>
    #include <string.h>
    #if RKNNX_K_VQ
    #define RKNNX_K_TILES 1
    typedef unsigned char rknnx_k_v16 __attribute__((vector_size(16)));
    static inline void rknnx_k_zip(rknnx_k_v16 *r)
    {
        rknnx_k_v16 o[16];
        for (int i = 0; i < 8; i++) {
            o[2 * i] = RKNNX_K_SHUF(rknnx_k_m16b, r[i], r[i + 8], 0, 16, 1, 17, 2, 18, 3, 19,
                                               4, 20, 5, 21, 6, 22, 7, 23);
            o[2 * i + 1] = RKNNX_K_SHUF(rknnx_k_m16b, r[i], r[i + 8], 8, 24, 9, 25, 10, 26, 11,
                                                   27, 12, 28, 13, 29, 14, 30, 15, 31);
        }
        memcpy(r, o, sizeof o);
    }
    #else
    #define RKNNX_K_TILES 0
    #endif

    #if RKNNX_K_TILES
    /* Dequantize W >= 4 pixels of 16 codes (flipped by flip) into kmax rows of float32
       (row stride dk bytes): see above. */
    /* q: 4 channels x 4 pixels of codes -> the first n (<= 4) of those channel rows */
    static inline void rknnx_k_rows4(rknnx_k_v16 q, rknnx_k_v4f b, rknnx_k_v4f sc, char *d,
                                     ptrdiff_t r0, ptrdiff_t dk, ptrdiff_t n)
    {
        rknnx_k_v4f f[4];
        rknnx_k_codes4x4(q, b, sc, f);
        if (n >= 4) {
            memcpy(d + r0 * dk, &f[0], 16);
            memcpy(d + (r0 + 1) * dk, &f[1], 16);
            memcpy(d + (r0 + 2) * dk, &f[2], 16);
            memcpy(d + (r0 + 3) * dk, &f[3], 16);
            return;
        }
        if (n > 0)
            memcpy(d + r0 * dk, &f[0], 16);
        if (n > 1)
            memcpy(d + (r0 + 1) * dk, &f[1], 16);
        if (n > 2)
            memcpy(d + (r0 + 2) * dk, &f[2], 16);
    }
    static int rknnx_k_quads16(const unsigned char *src, ptrdiff_t sw, ptrdiff_t W, char *dst,
                               ptrdiff_t dk, ptrdiff_t kmax, float zp, float sc,
                               unsigned char flip)
    {
        const float bias = 8388608.0f + (flip ? 128.0f : 0.0f) + zp;
        const rknnx_k_v4f vb = {bias, bias, bias, bias}, vs = {sc, sc, sc, sc};
        rknnx_k_v16 vf;
        memset(&vf, flip, sizeof vf);
        ptrdiff_t w0 = 0;
        for (;;) {
            if (w0 + 4 > W)
                w0 = W - 4;                  /* the last quad overlaps the one before */
            const unsigned char *s0 = src + w0 * sw;
            rknnx_k_v16 p0, p1, p2, p3;
            memcpy(&p0, s0, 16);
            memcpy(&p1, s0 + sw, 16);
            memcpy(&p2, s0 + 2 * sw, 16);
            memcpy(&p3, s0 + 3 * sw, 16);
            p0 ^= vf;
            p1 ^= vf;
            p2 ^= vf;
            p3 ^= vf;
            /* a*: pixels 0 and 1 interleaved (16-bit pairs), b*: pixels 2 and 3 */
            rknnx_k_v8h a0 = (rknnx_k_v8h)RKNNX_K_SHUF(rknnx_k_m16b, p0, p1, RKNNX_K_LO8);
            rknnx_k_v8h a1 = (rknnx_k_v8h)RKNNX_K_SHUF(rknnx_k_m16b, p0, p1, RKNNX_K_HI8);
            rknnx_k_v8h b0 = (rknnx_k_v8h)RKNNX_K_SHUF(rknnx_k_m16b, p2, p3, RKNNX_K_LO8);
            rknnx_k_v8h b1 = (rknnx_k_v8h)RKNNX_K_SHUF(rknnx_k_m16b, p2, p3, RKNNX_K_HI8);
            /* channels 4g..4g+3, each as the codes of pixels 0..3 */
            char *d = dst + w0 * 4;
            rknnx_k_rows4((rknnx_k_v16)RKNNX_K_SHUF(rknnx_k_m8h, a0, b0, RKNNX_K_LO16),
                          vb, vs, d, 0, dk, kmax);
            rknnx_k_rows4((rknnx_k_v16)RKNNX_K_SHUF(rknnx_k_m8h, a0, b0, RKNNX_K_HI16),
                          vb, vs, d, 4, dk, kmax - 4);
            rknnx_k_rows4((rknnx_k_v16)RKNNX_K_SHUF(rknnx_k_m8h, a1, b1, RKNNX_K_LO16),
                          vb, vs, d, 8, dk, kmax - 8);
            rknnx_k_rows4((rknnx_k_v16)RKNNX_K_SHUF(rknnx_k_m8h, a1, b1, RKNNX_K_HI16),
                          vb, vs, d, 12, dk, kmax - 12);
            if (w0 + 4 >= W)
                return 1;
            w0 += 4;
        }
    }
    /* The same for blocks of 8 channels (int8 on RK3566/RK3568): each pixel's 8 codes
       loaded into the low half of a register, pixels 0/1 and 2/3 interleaved, then one
       interleave gives channels 0..3 and 4..7 as 4 codes each: 23 vector operations per 16
       values.  0 when this path is not to be taken (then the plain loops run). */
    /* 8 bytes into the low half of a register (a 64-bit load: no store to the stack
       followed by a wider read, which stalls) */
    static inline rknnx_k_v16 rknnx_k_low8(const unsigned char *p)
    {
        typedef unsigned long long v2q __attribute__((vector_size(16)));
        unsigned long long x;
        memcpy(&x, p, 8);
        v2q v = {x, 0};
        return (rknnx_k_v16)v;
    }
    static int rknnx_k_tiles8_ok(float zp, int mode)
    {
        return mode != 2 && rknnx_k_path() >= 1 && rknnx_k_magic_ok(zp);
    }
    static void rknnx_k_tiles8(const unsigned char *src, ptrdiff_t sw, ptrdiff_t W,
                               char *dst, ptrdiff_t dk, ptrdiff_t kmax, float zp, float sc,
                               int mode)
    {
        const unsigned char flip = mode == 0 ? 0x80 : 0;
        const float bias = 8388608.0f + (flip ? 128.0f : 0.0f) + zp;
        const rknnx_k_v4f vb = {bias, bias, bias, bias}, vs = {sc, sc, sc, sc};
        rknnx_k_v16 vf;
        memset(&vf, flip, sizeof vf);
        ptrdiff_t w0 = 0;
        for (;;) {
            if (w0 + 4 > W)
                w0 = W - 4;
            const unsigned char *s0 = src + w0 * sw;
            rknnx_k_v16 p0 = rknnx_k_low8(s0), p1 = rknnx_k_low8(s0 + sw);
            rknnx_k_v16 p2 = rknnx_k_low8(s0 + 2 * sw), p3 = rknnx_k_low8(s0 + 3 * sw);
            rknnx_k_v8h a = (rknnx_k_v8h)(RKNNX_K_SHUF(rknnx_k_m16b, p0, p1, RKNNX_K_LO8) ^ vf);
            rknnx_k_v8h b = (rknnx_k_v8h)(RKNNX_K_SHUF(rknnx_k_m16b, p2, p3, RKNNX_K_LO8) ^ vf);
            char *d = dst + w0 * 4;
            rknnx_k_rows4((rknnx_k_v16)RKNNX_K_SHUF(rknnx_k_m8h, a, b, RKNNX_K_LO16),
                          vb, vs, d, 0, dk, kmax);
            rknnx_k_rows4((rknnx_k_v16)RKNNX_K_SHUF(rknnx_k_m8h, a, b, RKNNX_K_HI16),
                          vb, vs, d, 4, dk, kmax - 4);
            if (w0 + 4 >= W)
                return;
            w0 += 4;
        }
    }
    /* float16 blocks of 8 channels (fp16 outputs) -> float32 rows, 4 pixels at a time:
       interleaved by 16-bit then by 32-bit lanes into one register per 2 channels of 4
       halves each, converted by rknnx_k_halves8.  0 when not to be taken. */
    static int rknnx_k_tiles8h_ok(void)
    {
        return RKNNX_K_MAGIC && rknnx_k_path() >= 1;
    }
    #if RKNNX_K_MAGIC
    static inline void rknnx_k_rows2h(rknnx_k_v4u q, char *d, ptrdiff_t r0, ptrdiff_t dk,
                                      ptrdiff_t n)
    {
        rknnx_k_v4f lo, hi;
        rknnx_k_halves8((rknnx_k_v8h)q, &lo, &hi);
        if (n > 0)
            memcpy(d + r0 * dk, &lo, 16);
        if (n > 1)
            memcpy(d + (r0 + 1) * dk, &hi, 16);
    }
    #endif
    static void rknnx_k_tiles8h(const unsigned char *src, ptrdiff_t sw, ptrdiff_t W, char *dst,
                                ptrdiff_t dk, ptrdiff_t kmax)
    {
    #if RKNNX_K_MAGIC
        ptrdiff_t w0 = 0;
        for (;;) {
            if (w0 + 4 > W)
                w0 = W - 4;
            const unsigned char *s0 = src + w0 * sw;
            rknnx_k_v8h p0, p1, p2, p3;
            memcpy(&p0, s0, 16);
            memcpy(&p1, s0 + sw, 16);
            memcpy(&p2, s0 + 2 * sw, 16);
            memcpy(&p3, s0 + 3 * sw, 16);
            /* a*: pixels 0 and 1 by channel pairs, b*: pixels 2 and 3 */
            rknnx_k_v4u a0 = (rknnx_k_v4u)RKNNX_K_SHUF(rknnx_k_m8h, p0, p1, RKNNX_K_LO16);
            rknnx_k_v4u a1 = (rknnx_k_v4u)RKNNX_K_SHUF(rknnx_k_m8h, p0, p1, RKNNX_K_HI16);
            rknnx_k_v4u b0 = (rknnx_k_v4u)RKNNX_K_SHUF(rknnx_k_m8h, p2, p3, RKNNX_K_LO16);
            rknnx_k_v4u b1 = (rknnx_k_v4u)RKNNX_K_SHUF(rknnx_k_m8h, p2, p3, RKNNX_K_HI16);
            char *d = dst + w0 * 4;
            rknnx_k_rows2h(RKNNX_K_SHUF(rknnx_k_m4i, a0, b0, 0, 4, 1, 5), d, 0, dk, kmax);
            rknnx_k_rows2h(RKNNX_K_SHUF(rknnx_k_m4i, a0, b0, 2, 6, 3, 7), d, 2, dk, kmax - 2);
            rknnx_k_rows2h(RKNNX_K_SHUF(rknnx_k_m4i, a1, b1, 0, 4, 1, 5), d, 4, dk, kmax - 4);
            rknnx_k_rows2h(RKNNX_K_SHUF(rknnx_k_m4i, a1, b1, 2, 6, 3, 7), d, 6, dk, kmax - 6);
            if (w0 + 4 >= W)
                return;
            w0 += 4;
        }
    #endif
    }
    /* float16 blocks of 4 channels (fp16 on RK3566/68): each pixel's 4 halves loaded into
       the low half of a register, then the same two interleaves give channels 0/1 and
       2/3 of 4 pixels. */
    static void rknnx_k_tiles4h(const unsigned char *src, ptrdiff_t sw, ptrdiff_t W, char *dst,
                                ptrdiff_t dk, ptrdiff_t kmax)
    {
    #if RKNNX_K_MAGIC
        ptrdiff_t w0 = 0;
        for (;;) {
            if (w0 + 4 > W)
                w0 = W - 4;
            const unsigned char *s0 = src + w0 * sw;
            rknnx_k_v8h p0 = (rknnx_k_v8h)rknnx_k_low8(s0);
            rknnx_k_v8h p1 = (rknnx_k_v8h)rknnx_k_low8(s0 + sw);
            rknnx_k_v8h p2 = (rknnx_k_v8h)rknnx_k_low8(s0 + 2 * sw);
            rknnx_k_v8h p3 = (rknnx_k_v8h)rknnx_k_low8(s0 + 3 * sw);
            rknnx_k_v4u a = (rknnx_k_v4u)RKNNX_K_SHUF(rknnx_k_m8h, p0, p1, RKNNX_K_LO16);
            rknnx_k_v4u b = (rknnx_k_v4u)RKNNX_K_SHUF(rknnx_k_m8h, p2, p3, RKNNX_K_LO16);
            char *d = dst + w0 * 4;
            rknnx_k_rows2h(RKNNX_K_SHUF(rknnx_k_m4i, a, b, 0, 4, 1, 5), d, 0, dk, kmax);
            rknnx_k_rows2h(RKNNX_K_SHUF(rknnx_k_m4i, a, b, 2, 6, 3, 7), d, 2, dk, kmax - 2);
            if (w0 + 4 >= W)
                return;
            w0 += 4;
        }
    #endif
    }
    #else
    /* no vector extensions: the 8-channel paths are never taken (the callers ask first) */
    static int rknnx_k_tiles8_ok(float zp, int mode)
    {
        (void)zp;
        (void)mode;
        return 0;
    }
    static void rknnx_k_tiles8(const unsigned char *src, ptrdiff_t sw, ptrdiff_t W, char *dst,
                               ptrdiff_t dk, ptrdiff_t kmax, float zp, float sc, int mode)
    {
        (void)src; (void)sw; (void)W; (void)dst; (void)dk; (void)kmax; (void)zp; (void)sc;
        (void)mode;
    }
    static int rknnx_k_tiles8h_ok(void)
    {
        return 0;
    }
    static void rknnx_k_tiles8h(const unsigned char *src, ptrdiff_t sw, ptrdiff_t W, char *dst,
                                ptrdiff_t dk, ptrdiff_t kmax)
    {
        (void)src; (void)sw; (void)W; (void)dst; (void)dk; (void)kmax;
    }
    static void rknnx_k_tiles4h(const unsigned char *src, ptrdiff_t sw, ptrdiff_t W, char *dst,
                                ptrdiff_t dk, ptrdiff_t kmax)
    {
        (void)src; (void)sw; (void)W; (void)dst; (void)dk; (void)kmax;
    }
    #endif


    /* One block row: W >= 16 pixels of 16 codes (pixel stride sw bytes, codes
       contiguous) -> kmax rows of W values (row stride dk bytes, values contiguous).
       mode 0: int8 -> float32, 1: uint8 -> float32, 2: bytes copied.  rknnx_k_tiles16
       returns 0 when the compiler has no vector extensions (the caller then takes the
       plain loops); rknnx_k_zips16 is its 16 x 16 transpose, for the raw codes and for
       the dequantization the float trick cannot take. */
    #if RKNNX_K_TILES
    static void rknnx_k_zips16(const unsigned char *src, ptrdiff_t sw, ptrdiff_t W, char *dst,
                               ptrdiff_t dk, ptrdiff_t kmax, float zp, float sc, int mode)
    {
        rknnx_k_v16 r[16];
        unsigned char t[16][16];
        ptrdiff_t w0 = 0;
        for (;;) {
            if (w0 + 16 > W)
                w0 = W - 16;                 /* the last tile overlaps the one before */
            for (int p = 0; p < 16; p++)
                memcpy(&r[p], src + (w0 + p) * sw, 16);
            rknnx_k_zip(r); rknnx_k_zip(r); rknnx_k_zip(r); rknnx_k_zip(r);
            memcpy(t, r, sizeof t);          /* t[k][p]: channel k of pixel w0 + p */
            for (ptrdiff_t k = 0; k < kmax; k++) {
                char *row = dst + k * dk;
                if (mode == 0) {
                    float *o = (float *)row + w0;
                    for (int j = 0; j < 16; j++)
                        o[j] = ((float)(signed char)t[k][j] - zp) * sc;
                } else if (mode == 1) {
                    float *o = (float *)row + w0;
                    for (int j = 0; j < 16; j++)
                        o[j] = ((float)t[k][j] - zp) * sc;
                } else {
                    memcpy(row + w0, t[k], 16);
                }
            }
            if (w0 + 16 >= W)
                return;
            w0 += 16;
        }
    }
    #endif
    static int rknnx_k_tiles16(const unsigned char *src, ptrdiff_t sw, ptrdiff_t W, char *dst,
                               ptrdiff_t dk, ptrdiff_t kmax, float zp, float sc, int mode)
    {
    #if RKNNX_K_TILES
    #if RKNNX_K_AVX2
        if (mode != 2 && W >= 8 && rknnx_k_path() >= 2 && rknnx_k_magic_ok(zp)
                && rknnx_k_have_avx2())
            return rknnx_k_octs16_avx2(src, sw, W, dst, dk, kmax, zp, sc, mode == 0 ? 0x80 : 0);
    #endif
        if (mode != 2 && rknnx_k_path() >= 1 && rknnx_k_magic_ok(zp))
            return rknnx_k_quads16(src, sw, W, dst, dk, kmax, zp, sc, mode == 0 ? 0x80 : 0);
        rknnx_k_zips16(src, sw, W, dst, dk, kmax, zp, sc, mode);
        return 1;
    #else
        return 0;
    #endif
    }

    /* The other way: kmax rows of P >= 16 codes (row stride sk, codes contiguous; rows
       kmax..15 read as zeros) -> P pixels of 16 codes (pixel stride dw). */
    static int rknnx_k_untiles16(const unsigned char *src, ptrdiff_t sk, ptrdiff_t kmax,
                                 ptrdiff_t P, unsigned char *dst, ptrdiff_t dw)
    {
    #if RKNNX_K_TILES
        rknnx_k_v16 r[16];
        ptrdiff_t p0 = 0;
        for (;;) {
            if (p0 + 16 > P)
                p0 = P - 16;
            for (ptrdiff_t k = 0; k < 16; k++) {
                if (k < kmax)
                    memcpy(&r[k], src + k * sk + p0, 16);
                else
                    memset(&r[k], 0, 16);
            }
            rknnx_k_zip(r); rknnx_k_zip(r); rknnx_k_zip(r); rknnx_k_zip(r);
            for (int q = 0; q < 16; q++)
                memcpy(dst + (p0 + q) * dw, &r[q], 16);
            if (p0 + 16 >= P)
                return 1;
            p0 += 16;
        }
    #else
        return 0;
    #endif
    }
    """
    const int RKNNX_K_TILES
    int rknnx_k_untiles16(const unsigned char* src, Py_ssize_t sk, Py_ssize_t kmax,
                          Py_ssize_t P, unsigned char* dst, Py_ssize_t dw) nogil
    int rknnx_k_tiles16(const unsigned char* src, Py_ssize_t sw, Py_ssize_t W, char* dst,
                        Py_ssize_t dk, Py_ssize_t kmax, float zp, float sc, int mode) nogil
    int rknnx_k_tiles8_ok(float zp, int mode) nogil
    int rknnx_k_tiles8h_ok() nogil
    void rknnx_k_tiles8h(const unsigned char* src, Py_ssize_t sw, Py_ssize_t W, char* dst,
                         Py_ssize_t dk, Py_ssize_t kmax) nogil
    void rknnx_k_tiles4h(const unsigned char* src, Py_ssize_t sw, Py_ssize_t W, char* dst,
                         Py_ssize_t dk, Py_ssize_t kmax) nogil
    void rknnx_k_tiles8(const unsigned char* src, Py_ssize_t sw, Py_ssize_t W, char* dst,
                        Py_ssize_t dk, Py_ssize_t kmax, float zp, float sc, int mode) nogil

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
            lut16[b] = _half_of(lut32[b])
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
            h[c, b] = _half_of(f[c, b])
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
    if a.ndim != 5:
        raise ValueError(f"{what}: src must be 5-D (N, C1, H, W, C2), got shape {a.shape}")
    if not a.flags.aligned:
        raise ValueError(f"{what}: src is not aligned to its {a.dtype} elements")
    cdef Py_ssize_t N = a.shape[0], C1 = a.shape[1], H = a.shape[2], W = a.shape[3]
    cdef Py_ssize_t C2 = a.shape[4], C
    try:
        C = _operator_index(channels)
    except TypeError:
        raise TypeError(f"{what}: channels must be an int, got {type(channels).__name__}") from None
    if not 0 < C <= C1 * C2:
        raise ValueError(f"{what}: channels must be in 1..C1*C2 = {C1 * C2}, got {C}")
    _k_layout(layout, what)
    cdef _kparams p
    cdef const float[:, ::1] t32
    cdef const uint16_t[:, ::1] t16
    cdef bint per_channel = False
    cdef float l32[256]
    cdef uint16_t l16[256]
    cdef float sf, zf
    memset(&p, 0, sizeof(p))
    p.tile_mode = -1
    if scale is not None:
        if a.dtype not in (_K_INT8, _K_UINT8):
            raise TypeError(f"{what}: src must be int8 or uint8 to dequantize, got {a.dtype}")
        dt = _k_dtype(_K_F32 if dtype is None else dtype, what, (_K_F32, _K_F16))
        per_channel = bool(_k_ndim(scale) or _k_ndim(zero_point))
        if per_channel:
            sc, zpf = _k_lut(scale, zero_point, dt, C, what)
        else:
            _k_scalar_table(scale, zero_point, a.dtype == _K_INT8, l32,
                            l16 if dt == _K_F16 else NULL, &sf, &zf, what)
    else:
        if _k_ndim(zero_point) or zero_point != 0:
            raise ValueError(f"{what}: zero_point needs scale")
        if a.dtype.hasobject:
            raise TypeError(f"{what}: src must be a numeric array, got dtype object")
        dt = a.dtype if dtype is None else _np.dtype(dtype)
        if dt == a.dtype:
            p.kind = _k_copy_kind(a.dtype.itemsize)
            p.itemsize = a.dtype.itemsize
            if p.itemsize == 1:
                p.tile_mode = 2
        elif a.dtype == _K_F16 and dt == _K_F32:
            p.kind = _K_F16_F32
            p.tile_mode = 3
        elif a.dtype == _K_F32 and dt == _K_F16:
            p.kind = _K_F32_F16
        else:
            raise TypeError(f"{what}: without scale, dtype must be {a.dtype} (or float32 <-> "
                            f"float16), got {dt}")
    shape = (N, C, H, W) if layout == "NCHW" else (N, H, W, C)
    o = _k_out(out, a, shape, dt, what)
    if scale is not None and not per_channel:
        p.kind = _K_LUT_F32 if dt == _K_F32 else _K_LUT_F16
        p.lut32 = l32
        p.lut16 = l16
        if dt == _K_F32:
            p.tile_mode = 0 if a.dtype == _K_INT8 else 1
            p.dsc = sf
            p.dzp = zf
    elif scale is not None:
        table = _k_table(sc, zpf, a.dtype == _K_INT8, dt)
        if dt == _K_F32:
            t32 = table
            p.kind = _K_LUT_F32
            p.lut32 = &t32[0, 0]
        else:
            t16 = table
            p.kind = _K_LUT_F16
            p.lut16 = &t16[0, 0]
    if a.size == 0 or o.size == 0:
        return o
    cdef Py_buffer vs, vd
    cdef Py_ssize_t ps[4]
    cdef bint row_c
    _k_get(a, &vs, False)
    try:
        _k_get(o, &vd, True)
        try:
            if layout == "NCHW":
                ps[0] = vd.strides[0]; ps[1] = vd.strides[1]; ps[2] = vd.strides[2]; ps[3] = vd.strides[3]
            else:
                ps[0] = vd.strides[0]; ps[1] = vd.strides[3]; ps[2] = vd.strides[1]; ps[3] = vd.strides[2]
            # rows along whichever of C2 / W is the closer in the result
            row_c = not per_channel and abs(ps[1]) < abs(ps[3])
            with nogil:
                _blocked_to_plain(&p, per_channel, row_c, N, C1, H, W, C2, C, vs.strides, ps,
                                  <const char*>vs.buf, <char*>vd.buf)
        finally:
            PyBuffer_Release(&vd)
    finally:
        PyBuffer_Release(&vs)
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
