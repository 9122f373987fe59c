/*
 * rknnx kernels: the 128-bit paths (GCC/Clang vector extensions, not intrinsics, so one
 * source gives SSE2 on x86-64 and NEON on aarch64).  Included by kernels.c only, which
 * chooses between them, the AVX2 paths (avx2.h) and the plain expression.
 *
 * Comparisons give lane masks and selects are bit operations: no branch in a loop.
 * Every function here leaves the same numbers as the plain expression it replaces
 * (kernels.c), lane by lane.
 */
#ifndef RKNNX_KERNELS_VEC128_H
#define RKNNX_KERNELS_VEC128_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "kernels.h"

#if RKNNX_K_VQ
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
/* Constant shuffles of two vectors: __builtin_shufflevector (Clang, GCC >= 12) or
   __builtin_shuffle with a mask vector M of the same lanes (GCC 10 and 11: Ubuntu
   22.04's and Debian 11's compilers, where the package is built from source for
   Python 3.10).  Shuffles into a wider vector need the former (RKNNX_K_WIDE). */
typedef signed char rknnx_k_m16b __attribute__((vector_size(16)));
typedef short rknnx_k_m8h __attribute__((vector_size(16)));
#if RKNNX_K_WIDE
#define RKNNX_K_SHUF(M, a, b, ...) __builtin_shufflevector(a, b, __VA_ARGS__)
#else
#define RKNNX_K_SHUF(M, a, b, ...) __builtin_shuffle(a, b, (M){__VA_ARGS__})
#endif
typedef float rknnx_k_v4f __attribute__((vector_size(16)));
typedef int rknnx_k_v4i __attribute__((vector_size(16)));
typedef unsigned char rknnx_k_v16b __attribute__((vector_size(16)));
typedef unsigned short rknnx_k_v8h __attribute__((vector_size(16)));
#define RKNNX_K_LO8 0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23
#define RKNNX_K_HI8 8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31
#define RKNNX_K_LO16 0, 8, 1, 9, 2, 10, 3, 11
#define RKNNX_K_HI16 4, 12, 5, 13, 6, 14, 7, 15

static inline rknnx_k_v4f rknnx_k_sel(rknnx_k_v4i m, rknnx_k_v4f a, rknnx_k_v4f b)
{
    return (rknnx_k_v4f)((m & (rknnx_k_v4i)a) | (~m & (rknnx_k_v4i)b));
}

/* ---- quantize --------------------------------------------------------------------- */

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

/* rknnx_k_quant_row, 16 values at a time: how many it converted (a multiple of 16) */
static inline ptrdiff_t rknnx_k_quant_row_v128(const float *restrict s,
                                               unsigned char *restrict d, ptrdiff_t n,
                                               float sc, float zp, float lo, float hi)
{
    ptrdiff_t i = 0;
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
    return i;
}

/* ---- dequantize 8-bit codes (the float trick, kernels.c) -------------------------- */

/* 16 codes (already flipped) -> 4 x 4 floats: ((2**23 + u) - b) * sc */
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

#if RKNNX_K_MAGIC
/* rknnx_k_deq_row from i on, 16 codes at a time (flip: 0x80 for int8 codes, 0 for
   uint8): where it stopped */
static inline ptrdiff_t rknnx_k_deq_row_v128(const unsigned char *restrict s,
                                             float *restrict d, ptrdiff_t i, ptrdiff_t n,
                                             float zp, float sc, unsigned char flip)
{
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
    return i;
}
#endif

/* ---- float16 <-> float32 (the steps of rknnx_float16.h on 4 lanes) ---------------- */

#if RKNNX_K_MAGIC
typedef unsigned int rknnx_k_v4u __attribute__((vector_size(16)));
typedef int rknnx_k_m4i __attribute__((vector_size(16)));
#define RKNNX_K_SPLAT4(x) {x, x, x, x}
/* float16 -> float32: the exponent rebiased, inf/NaN rebiased twice keeping the
   payload, zero and subnormals renormalized by one exact float subtraction (needs the
   float trick's conditions) */
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

/* float32 -> float16 bits: the overflow/inf/NaN, subnormal (one exact float addition of
   0.5) and normal (rebias, round to nearest even) results are all computed and the
   lane's own is kept */
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

/* rknnx_k_f16_row, 8 at a time: how many it converted */
static inline ptrdiff_t rknnx_k_f16_row_v128(const uint16_t *restrict s, float *restrict d,
                                             ptrdiff_t n)
{
    ptrdiff_t i = 0;
    for (; i + 8 <= n; i += 8) {
        rknnx_k_v8h x;
        rknnx_k_v4f f[2];
        memcpy(&x, s + i, 16);
        rknnx_k_halves8(x, &f[0], &f[1]);
        memcpy(d + i, f, sizeof f);
    }
    return i;
}

/* rknnx_k_f32_f16_row, 8 at a time: how many it converted */
static inline ptrdiff_t rknnx_k_f32_f16_row_v128(const float *restrict s,
                                                 uint16_t *restrict d, ptrdiff_t n)
{
    ptrdiff_t i = 0;
    for (; i + 8 <= n; i += 8) {
        rknnx_k_v4f f0, f1;
        memcpy(&f0, s + i, 16);
        memcpy(&f1, s + i + 4, 16);
        rknnx_k_v8h h0 = (rknnx_k_v8h)rknnx_k_tohalf4(f0);
        rknnx_k_v8h h1 = (rknnx_k_v8h)rknnx_k_tohalf4(f1);
        rknnx_k_v8h h = RKNNX_K_SHUF(rknnx_k_m8h, h0, h1, 0, 2, 4, 6, 8, 10, 12, 14);
        memcpy(d + i, &h, 16);
    }
    return i;
}
#endif /* RKNNX_K_MAGIC */

/* ---- NC1HWC2 block rows ------------------------------------------------------------
   Raw 8-bit codes, C2 a multiple of 16: tiles of 16 pixels x 16 channels are transposed
   in registers (rknnx_k_zip four times) and each channel's 16 codes written as one run.
   Dequantized to float32: 4 pixels at a time, two rounds of interleaving give one
   register per 4 channels holding each channel's 4 codes side by side, and the
   interleaving with the float pattern of rknnx_k_codes4x4 then spreads each channel's
   codes over one float register, written as one run of 4 values: 22 vector operations
   per 16 values and no spills, against 27 and a round trip through memory for a 16 x 16
   transpose followed by the widening.  float16 blocks of 8 or 4 channels to float32 the
   same way with 16-bit lanes.  The last group of pixels overlaps the one before. */

/* one round of the 16 x 16 byte transpose */
static inline void rknnx_k_zip(rknnx_k_v16b *r)
{
    rknnx_k_v16b o[16];
    for (int i = 0; i < 8; i++) {
        o[2 * i] = RKNNX_K_SHUF(rknnx_k_m16b, r[i], r[i + 8], 0, 16, 1, 17, 2, 18, 3, 19,
                                4, 20, 5, 21, 6, 22, 7, 23);
        o[2 * i + 1] = RKNNX_K_SHUF(rknnx_k_m16b, r[i], r[i + 8], 8, 24, 9, 25, 10, 26, 11,
                                    27, 12, 28, 13, 29, 14, 30, 15, 31);
    }
    memcpy(r, o, sizeof o);
}

/* q: 4 channels x 4 pixels of codes -> the first n (<= 4) of those channel rows */
static inline void rknnx_k_rows4(rknnx_k_v16b q, rknnx_k_v4f b, rknnx_k_v4f sc, char *d,
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

/* Dequantize W >= 4 pixels of 16 codes (flipped by flip) into kmax rows of float32
   (row stride dk bytes), 4 pixels at a time */
static int rknnx_k_quads16_v128(const unsigned char *src, ptrdiff_t sw, ptrdiff_t W,
                                char *dst, ptrdiff_t dk, ptrdiff_t kmax, float zp, float sc,
                                unsigned char flip)
{
    const float bias = 8388608.0f + (flip ? 128.0f : 0.0f) + zp;
    const rknnx_k_v4f vb = {bias, bias, bias, bias}, vs = {sc, sc, sc, sc};
    rknnx_k_v16b vf;
    memset(&vf, flip, sizeof vf);
    ptrdiff_t w0 = 0;
    for (;;) {
        if (w0 + 4 > W)
            w0 = W - 4;                  /* the last quad overlaps the one before */
        const unsigned char *s0 = src + w0 * sw;
        rknnx_k_v16b p0, p1, p2, p3;
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
        rknnx_k_rows4((rknnx_k_v16b)RKNNX_K_SHUF(rknnx_k_m8h, a0, b0, RKNNX_K_LO16),
                      vb, vs, d, 0, dk, kmax);
        rknnx_k_rows4((rknnx_k_v16b)RKNNX_K_SHUF(rknnx_k_m8h, a0, b0, RKNNX_K_HI16),
                      vb, vs, d, 4, dk, kmax - 4);
        rknnx_k_rows4((rknnx_k_v16b)RKNNX_K_SHUF(rknnx_k_m8h, a1, b1, RKNNX_K_LO16),
                      vb, vs, d, 8, dk, kmax - 8);
        rknnx_k_rows4((rknnx_k_v16b)RKNNX_K_SHUF(rknnx_k_m8h, a1, b1, RKNNX_K_HI16),
                      vb, vs, d, 12, dk, kmax - 12);
        if (w0 + 4 >= W)
            return 1;
        w0 += 4;
    }
}

/* W >= 16 pixels of 16 codes through the 16 x 16 transpose: the raw codes (mode 2) and
   the dequantization the float trick cannot take (modes 0 and 1, the plain expression) */
static void rknnx_k_zips16_v128(const unsigned char *src, ptrdiff_t sw, ptrdiff_t W,
                                char *dst, ptrdiff_t dk, ptrdiff_t kmax, float zp, float sc,
                                int mode)
{
    rknnx_k_v16b r[16];
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

/* The other way: kmax rows of P >= 16 codes (row stride sk, codes contiguous; rows
   kmax..15 read as zeros) -> P pixels of 16 codes (pixel stride dw). */
static void rknnx_k_untiles16_v128(const unsigned char *src, ptrdiff_t sk, ptrdiff_t kmax,
                                   ptrdiff_t P, unsigned char *dst, ptrdiff_t dw)
{
    rknnx_k_v16b r[16];
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
            return;
        p0 += 16;
    }
}

/* 8 bytes into the low half of a register (a 64-bit load: no store to the stack
   followed by a wider read, which stalls) */
static inline rknnx_k_v16b rknnx_k_low8(const unsigned char *p)
{
    typedef unsigned long long v2q __attribute__((vector_size(16)));
    unsigned long long x;
    memcpy(&x, p, 8);
    v2q v = {x, 0};
    return (rknnx_k_v16b)v;
}

/* Blocks of 8 channels (int8 on RK3566/RK3568): each pixel's 8 codes loaded into the
   low half of a register, pixels 0/1 and 2/3 interleaved, then one interleave gives
   channels 0..3 and 4..7 as 4 codes each: 23 vector operations per 16 values.
   mode 0: int8, 1: uint8. */
static void rknnx_k_tiles8_v128(const unsigned char *src, ptrdiff_t sw, ptrdiff_t W,
                                char *dst, ptrdiff_t dk, ptrdiff_t kmax, float zp, float sc,
                                int mode)
{
    const unsigned char flip = mode == 0 ? 0x80 : 0;
    const float bias = 8388608.0f + (flip ? 128.0f : 0.0f) + zp;
    const rknnx_k_v4f vb = {bias, bias, bias, bias}, vs = {sc, sc, sc, sc};
    rknnx_k_v16b vf;
    memset(&vf, flip, sizeof vf);
    ptrdiff_t w0 = 0;
    for (;;) {
        if (w0 + 4 > W)
            w0 = W - 4;
        const unsigned char *s0 = src + w0 * sw;
        rknnx_k_v16b p0 = rknnx_k_low8(s0), p1 = rknnx_k_low8(s0 + sw);
        rknnx_k_v16b p2 = rknnx_k_low8(s0 + 2 * sw), p3 = rknnx_k_low8(s0 + 3 * sw);
        rknnx_k_v8h a = (rknnx_k_v8h)(RKNNX_K_SHUF(rknnx_k_m16b, p0, p1, RKNNX_K_LO8) ^ vf);
        rknnx_k_v8h b = (rknnx_k_v8h)(RKNNX_K_SHUF(rknnx_k_m16b, p2, p3, RKNNX_K_LO8) ^ vf);
        char *d = dst + w0 * 4;
        rknnx_k_rows4((rknnx_k_v16b)RKNNX_K_SHUF(rknnx_k_m8h, a, b, RKNNX_K_LO16),
                      vb, vs, d, 0, dk, kmax);
        rknnx_k_rows4((rknnx_k_v16b)RKNNX_K_SHUF(rknnx_k_m8h, a, b, RKNNX_K_HI16),
                      vb, vs, d, 4, dk, kmax - 4);
        if (w0 + 4 >= W)
            return;
        w0 += 4;
    }
}

#if RKNNX_K_MAGIC
/* 2 channels x 4 pixels of halves -> the first n (<= 2) of those channel rows */
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

/* float16 blocks of 8 channels (fp16 outputs) -> float32 rows, 4 pixels at a time:
   interleaved by 16-bit then by 32-bit lanes into one register per 2 channels of 4
   halves each, converted by rknnx_k_halves8.  A full block (kmax >= 8) takes a loop of
   its own with every store unconditional (fewer live registers, no spills on x86-64). */
static inline void rknnx_k_quad8h(const unsigned char *s0, ptrdiff_t sw, char *d,
                                  ptrdiff_t dk, ptrdiff_t kmax)
{
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
    rknnx_k_rows2h(RKNNX_K_SHUF(rknnx_k_m4i, a0, b0, 0, 4, 1, 5), d, 0, dk, kmax);
    rknnx_k_rows2h(RKNNX_K_SHUF(rknnx_k_m4i, a0, b0, 2, 6, 3, 7), d, 2, dk, kmax - 2);
    rknnx_k_rows2h(RKNNX_K_SHUF(rknnx_k_m4i, a1, b1, 0, 4, 1, 5), d, 4, dk, kmax - 4);
    rknnx_k_rows2h(RKNNX_K_SHUF(rknnx_k_m4i, a1, b1, 2, 6, 3, 7), d, 6, dk, kmax - 6);
}

static void rknnx_k_tiles8h_v128(const unsigned char *src, ptrdiff_t sw, ptrdiff_t W,
                                 char *dst, ptrdiff_t dk, ptrdiff_t kmax)
{
    ptrdiff_t w0 = 0;
    for (;;) {
        if (w0 + 4 > W)
            w0 = W - 4;
        if (kmax >= 8)
            rknnx_k_quad8h(src + w0 * sw, sw, dst + w0 * 4, dk, 8);
        else
            rknnx_k_quad8h(src + w0 * sw, sw, dst + w0 * 4, dk, kmax);
        if (w0 + 4 >= W)
            return;
        w0 += 4;
    }
}

/* float16 blocks of 4 channels (fp16 on RK3566/68): each pixel's 4 halves loaded into
   the low half of a register, then the same two interleaves give channels 0/1 and
   2/3 of 4 pixels; a full block takes its own loop, as above. */
static inline void rknnx_k_quad4h(const unsigned char *s0, ptrdiff_t sw, char *d,
                                  ptrdiff_t dk, ptrdiff_t kmax)
{
    rknnx_k_v8h p0 = (rknnx_k_v8h)rknnx_k_low8(s0);
    rknnx_k_v8h p1 = (rknnx_k_v8h)rknnx_k_low8(s0 + sw);
    rknnx_k_v8h p2 = (rknnx_k_v8h)rknnx_k_low8(s0 + 2 * sw);
    rknnx_k_v8h p3 = (rknnx_k_v8h)rknnx_k_low8(s0 + 3 * sw);
    rknnx_k_v4u a = (rknnx_k_v4u)RKNNX_K_SHUF(rknnx_k_m8h, p0, p1, RKNNX_K_LO16);
    rknnx_k_v4u b = (rknnx_k_v4u)RKNNX_K_SHUF(rknnx_k_m8h, p2, p3, RKNNX_K_LO16);
    rknnx_k_rows2h(RKNNX_K_SHUF(rknnx_k_m4i, a, b, 0, 4, 1, 5), d, 0, dk, kmax);
    rknnx_k_rows2h(RKNNX_K_SHUF(rknnx_k_m4i, a, b, 2, 6, 3, 7), d, 2, dk, kmax - 2);
}

static void rknnx_k_tiles4h_v128(const unsigned char *src, ptrdiff_t sw, ptrdiff_t W,
                                 char *dst, ptrdiff_t dk, ptrdiff_t kmax)
{
    ptrdiff_t w0 = 0;
    for (;;) {
        if (w0 + 4 > W)
            w0 = W - 4;
        if (kmax >= 4)
            rknnx_k_quad4h(src + w0 * sw, sw, dst + w0 * 4, dk, 4);
        else
            rknnx_k_quad4h(src + w0 * sw, sw, dst + w0 * 4, dk, kmax);
        if (w0 + 4 >= W)
            return;
        w0 += 4;
    }
}
#endif /* RKNNX_K_MAGIC */
#endif /* RKNNX_K_VQ */

#endif /* RKNNX_KERNELS_VEC128_H */
