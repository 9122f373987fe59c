/*
 * rknnx kernels: the row functions and the block rows the Cython traversal
 * (rknn_ext/rknnx/_kernels.pxi) calls, each the plain expression with the vector paths
 * of vec128.h and avx2.h in front of it, chosen here and nowhere else: AVX2 where the
 * processor has it (CPUID, asked once) and rknnx_k_path() allows, then 128-bit vectors,
 * then the plain loop for what is left (the tails, and everything when the compiler or
 * the parameters rule the vectors out).  Same numbers on every path.
 *
 * Dequantizing 8-bit codes without a conversion instruction (the float trick): a code u
 * (0..255; int8 codes are flipped to u = q + 128 first) interleaved as the low byte of
 * the 32-bit pattern 0x4b0000uu is the float 2**23 + u, so (2**23 + u) - (2**23 + bias
 * + zp) is q - zp exactly (integers below 2**24), and the product with sc is the one
 * rounding numpy makes.  Exact when zp is an integer with |zp| <= 2**22
 * (rknnx_k_magic_ok); the interleaving with the constant takes the place of the
 * widening, so 16 codes cost two byte and four 16-bit interleaves, four subtractions,
 * four products and four stores.  It needs RKNNX_K_MAGIC (kernels.h); elsewhere the
 * plain expression runs.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "kernels.h"
#include "vec128.h"
#include "avx2.h"

#if RKNNX_K_AVX2
#include <cpuid.h>
#endif

/* ---- the dispatch ----------------------------------------------------------------- */

static int rknnx_k_path_cap = 2;

int rknnx_k_path(void)
{
    return __atomic_load_n(&rknnx_k_path_cap, __ATOMIC_RELAXED);
}

int rknnx_k_set_path(int level)
{
    return __atomic_exchange_n(&rknnx_k_path_cap, level, __ATOMIC_RELAXED);
}

/* CPUID: AVX2, and AVX with the YMM state enabled by the OS (XGETBV); asked once (every
   thread finds the same answer).  Not __builtin_cpu_supports: its table is not filled
   in every toolchain's shared libraries (zig's, which builds the wheels). */
int rknnx_k_have_avx2(void)
{
#if RKNNX_K_AVX2
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
#else
    return 0;
#endif
}

/* the float trick applies to this zero point */
static inline int rknnx_k_magic_ok(float zp)
{
    return RKNNX_K_MAGIC && zp >= -4194304.0f && zp <= 4194304.0f && zp == (float)(int)zp;
}

/* ---- rows ------------------------------------------------------------------------- */

void rknnx_k_quant_row(const float *restrict s, unsigned char *restrict d, ptrdiff_t n,
                       float sc, float zp, float lo, float hi)
{
    ptrdiff_t i = 0;
#if RKNNX_K_VQ
    i = rknnx_k_quant_row_v128(s, d, n, sc, zp, lo, hi);
#endif
    for (; i < n; i++)
        d[i] = (unsigned char)(int)rknnx_k_q1(s[i], sc, zp, lo, hi);
}

void rknnx_k_quant_strided(const char *s, ptrdiff_t ss, char *d, ptrdiff_t ds, ptrdiff_t n,
                           float sc, float zp, float lo, float hi)
{
    for (ptrdiff_t i = 0; i < n; i++)
        *(unsigned char *)(d + i * ds) =
            (unsigned char)(int)rknnx_k_q1(*(const float *)(s + i * ss), sc, zp, lo, hi);
}

/* (q - zp) * sc of contiguous codes; flip: 0x80 for int8 codes, 0 for uint8.  Inlined
   into each of its two callers, which the traversal calls per pixel on NHWC results:
   one call, flip a constant. */
__attribute__((always_inline))
static inline void rknnx_k_deq_row(const unsigned char *restrict s, float *restrict d,
                            ptrdiff_t n, float zp, float sc, unsigned char flip)
{
    ptrdiff_t i = 0;
#if RKNNX_K_MAGIC
#if RKNNX_K_AVX2
    if (n >= 64 && rknnx_k_path() >= 2 && rknnx_k_magic_ok(zp) && rknnx_k_have_avx2())
        i = rknnx_k_deq_row_avx2(s, d, n, zp, sc, flip);
#endif
    if (rknnx_k_path() >= 1 && rknnx_k_magic_ok(zp))
        i = rknnx_k_deq_row_v128(s, d, i, n, zp, sc, flip);
#endif
    if (flip) {
        for (; i < n; i++)
            d[i] = ((float)(signed char)s[i] - zp) * sc;
    } else {
        for (; i < n; i++)
            d[i] = ((float)s[i] - zp) * sc;
    }
}

void rknnx_k_deq_s8(const signed char *restrict s, float *restrict d, ptrdiff_t n,
                    float zp, float sc)
{
    rknnx_k_deq_row((const unsigned char *)s, d, n, zp, sc, 0x80);
}

void rknnx_k_deq_u8(const unsigned char *restrict s, float *restrict d, ptrdiff_t n,
                    float zp, float sc)
{
    rknnx_k_deq_row(s, d, n, zp, sc, 0);
}

void rknnx_k_f16_row(const uint16_t *restrict s, float *restrict d, ptrdiff_t n)
{
    ptrdiff_t i = 0;
#if RKNNX_K_MAGIC
    if (rknnx_k_path() >= 1)
        i = rknnx_k_f16_row_v128(s, d, n);
#endif
    for (; i < n; i++)
        d[i] = rknnx_f16_to_f32(s[i]);
}

void rknnx_k_f32_f16_row(const float *restrict s, uint16_t *restrict d, ptrdiff_t n)
{
    ptrdiff_t i = 0;
#if RKNNX_K_MAGIC
    if (rknnx_k_path() >= 1)
        i = rknnx_k_f32_f16_row_v128(s, d, n);
#endif
    for (; i < n; i++)
        d[i] = rknnx_f32_to_f16(s[i]);
}

/* Table lookups of contiguous codes, in C with restrict pointers so that their code
   does not depend on how the compiler treats the large _row around them. */
void rknnx_k_lut32_row(const unsigned char *restrict s, float *restrict d, ptrdiff_t n,
                       const float *restrict lut)
{
    for (ptrdiff_t i = 0; i < n; i++)
        d[i] = lut[s[i]];
}

void rknnx_k_lut16_row(const unsigned char *restrict s, uint16_t *restrict d, ptrdiff_t n,
                       const uint16_t *restrict lut)
{
    for (ptrdiff_t i = 0; i < n; i++)
        d[i] = lut[s[i]];
}

/* ---- NC1HWC2 block rows (kernels.h) ----------------------------------------------- */

int rknnx_k_tiles16(const unsigned char *src, ptrdiff_t sw, ptrdiff_t W, char *dst,
                    ptrdiff_t dk, ptrdiff_t kmax, float zp, float sc, int mode)
{
#if RKNNX_K_TILES
#if RKNNX_K_AVX2
    if (mode != 2 && W >= 8 && rknnx_k_path() >= 2 && rknnx_k_magic_ok(zp)
            && rknnx_k_have_avx2())
        return rknnx_k_octs16_avx2(src, sw, W, dst, dk, kmax, zp, sc, mode == 0 ? 0x80 : 0);
#endif
    if (mode != 2 && rknnx_k_path() >= 1 && rknnx_k_magic_ok(zp))
        return rknnx_k_quads16_v128(src, sw, W, dst, dk, kmax, zp, sc,
                                    mode == 0 ? 0x80 : 0);
    rknnx_k_zips16_v128(src, sw, W, dst, dk, kmax, zp, sc, mode);
    return 1;
#else
    return 0;
#endif
}

int rknnx_k_untiles16(const unsigned char *src, ptrdiff_t sk, ptrdiff_t kmax, ptrdiff_t P,
                      unsigned char *dst, ptrdiff_t dw)
{
#if RKNNX_K_TILES
    rknnx_k_untiles16_v128(src, sk, kmax, P, dst, dw);
    return 1;
#else
    return 0;
#endif
}

/* int8/uint8 blocks of 8 channels (mode 0/1) need the float trick */
int rknnx_k_tiles8_ok(float zp, int mode)
{
    return RKNNX_K_TILES && mode != 2 && rknnx_k_path() >= 1 && rknnx_k_magic_ok(zp);
}

void rknnx_k_tiles8(const unsigned char *src, ptrdiff_t sw, ptrdiff_t W, char *dst,
                    ptrdiff_t dk, ptrdiff_t kmax, float zp, float sc, int mode)
{
#if RKNNX_K_TILES
    rknnx_k_tiles8_v128(src, sw, W, dst, dk, kmax, zp, sc, mode);
#else
    (void)src, (void)sw, (void)W, (void)dst, (void)dk, (void)kmax, (void)zp, (void)sc, (void)mode;
#endif
}

/* float16 blocks of 8 and 4 channels need the float16 vectors */
int rknnx_k_tiles8h_ok(void)
{
    return RKNNX_K_MAGIC && rknnx_k_path() >= 1;
}

void rknnx_k_tiles8h(const unsigned char *src, ptrdiff_t sw, ptrdiff_t W, char *dst,
                     ptrdiff_t dk, ptrdiff_t kmax)
{
#if RKNNX_K_MAGIC
    rknnx_k_tiles8h_v128(src, sw, W, dst, dk, kmax);
#else   /* never called: rknnx_k_tiles8h_ok() is false (ARMv7, or no vectors) */
    (void)src, (void)sw, (void)W, (void)dst, (void)dk, (void)kmax;
#endif
}

void rknnx_k_tiles4h(const unsigned char *src, ptrdiff_t sw, ptrdiff_t W, char *dst,
                     ptrdiff_t dk, ptrdiff_t kmax)
{
#if RKNNX_K_MAGIC
    rknnx_k_tiles4h_v128(src, sw, W, dst, dk, kmax);
#else   /* never called: rknnx_k_tiles8h_ok() is false (ARMv7, or no vectors) */
    (void)src, (void)sw, (void)W, (void)dst, (void)dk, (void)kmax;
#endif
}
