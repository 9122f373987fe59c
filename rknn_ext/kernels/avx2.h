/*
 * rknnx kernels: the 256-bit paths of x86-64 processors with AVX2, chosen at run time
 * (kernels.c asks CPUID once; every function here carries target("avx2"), the rest of
 * the build stays baseline x86-64).  Included by kernels.c only, after vec128.h.
 *
 * nc1hwc2_to_nchw's dequantizing block rows (rknnx_k_quads16_v128 in vec128.h) take 8
 * pixels at a time: pixels 0..3 in the low 128-bit lane and 4..7 in the high one, so
 * that every interleave stays inside its lane (vpunpck*) and each channel's 8 values
 * leave as one 256-bit store; contiguous codes take 8 at a time.  The boards' NEON has
 * 128-bit registers only.
 */
#ifndef RKNNX_KERNELS_AVX2_H
#define RKNNX_KERNELS_AVX2_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "vec128.h"

#if RKNNX_K_AVX2
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
#endif /* RKNNX_K_AVX2 */

#endif /* RKNNX_KERNELS_AVX2_H */
