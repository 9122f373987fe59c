/*
 * rknnx: the letterbox kernel (letterbox.h says what it computes).  Per output row of
 * the region: the two source rows (pointers into the frame, or converted into a row
 * buffer from NV12 or from pixels that are not 3 contiguous bytes; the last two kept),
 * blended vertically into 16-bit sums over the columns the row's taps reach (skipped
 * when the row's weight is 0 or 1: a source row itself), then resampled horizontally,
 * swapped, looked up and stored; the pad around the region is written per row.
 *
 * The vertical blend and the NV12 -> BGR conversion have a 128-bit path (GCC/Clang
 * vector extensions: SSE2 on x86-64, NEON on aarch64) and an AVX2 path (x86-64, the
 * processor asked at run time), the horizontal pass an AVX2 path (which, downscaling,
 * also does the vertical blend at the taps only), chosen as the kernels' dispatch says
 * (kernels.h: rknnx_k_path, rknnx_k_have_avx2); all are exact integer arithmetic, the
 * same numbers as the plain loops.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernels.h"
#include "letterbox.h"

#if RKNNX_K_AVX2
#include <immintrin.h>
#endif

/* Byte shuffles of 16-byte vectors with constant indices: __builtin_shufflevector
   (Clang, GCC >= 12) or __builtin_shuffle (GCC 10 and 11); SHUF2 picks from a (0..15)
   and b (16..31). */
#if RKNNX_K_VQ
typedef unsigned char rknnx_lb_b16 __attribute__((vector_size(16)));
#if RKNNX_K_WIDE
#define RKNNX_LB_SHUF(a, ...) __builtin_shufflevector(a, a, __VA_ARGS__)
#define RKNNX_LB_SHUF2(a, b, ...) __builtin_shufflevector(a, b, __VA_ARGS__)
#else
typedef unsigned char rknnx_lb_m16 __attribute__((vector_size(16)));
#define RKNNX_LB_SHUF(a, ...) __builtin_shuffle(a, (rknnx_lb_m16){__VA_ARGS__})
#define RKNNX_LB_SHUF2(a, b, ...) __builtin_shuffle(a, b, (rknnx_lb_m16){__VA_ARGS__})
#endif
#endif

/* ---- the taps of one axis ------------------------------------------------------------ */

void rknnx_lb_taps(ptrdiff_t s, ptrdiff_t n, int bits, int32_t *i, int32_t *wgt)
{
    const int64_t one = (int64_t)1 << bits, den = 2 * (int64_t)n;
    for (ptrdiff_t d = 0; d < n; d++) {
        int64_t num = (2 * (int64_t)d + 1) * (int64_t)s - (int64_t)n;
        int64_t k = 0, w = 0;
        if (num > 0) {
            k = num / den;
            w = (one * (num - k * den) + den / 2) / den;
            if (k >= (int64_t)s - 1) {
                k = (int64_t)s - 2;
                w = one;
            }
        }
        i[d] = (int32_t)k;
        wgt[d] = (int32_t)w;
    }
}

/* ---- the vertical blend: t = r0 (256 - wy) + r1 wy ----------------------------------- */

#if RKNNX_K_VQ
typedef unsigned char rknnx_lb_v8b __attribute__((vector_size(8)));
typedef uint16_t rknnx_lb_v8h __attribute__((vector_size(16)));

/* 16 values a step from i; returns where it stopped */
static ptrdiff_t rknnx_lb_vblend_v128(const unsigned char *r0, const unsigned char *r1,
                                      uint16_t *t, ptrdiff_t i, ptrdiff_t n, int wy)
{
    const uint16_t a = (uint16_t)(256 - wy), b = (uint16_t)wy;
    const rknnx_lb_v8h va = {a, a, a, a, a, a, a, a}, vb = {b, b, b, b, b, b, b, b};
    for (; i + 16 <= n; i += 16) {
        rknnx_lb_v8b x0, x1, y0, y1;
        memcpy(&x0, r0 + i, 8);
        memcpy(&x1, r0 + i + 8, 8);
        memcpy(&y0, r1 + i, 8);
        memcpy(&y1, r1 + i + 8, 8);
        rknnx_lb_v8h t0 = __builtin_convertvector(x0, rknnx_lb_v8h) * va
                          + __builtin_convertvector(y0, rknnx_lb_v8h) * vb;
        rknnx_lb_v8h t1 = __builtin_convertvector(x1, rknnx_lb_v8h) * va
                          + __builtin_convertvector(y1, rknnx_lb_v8h) * vb;
        memcpy(t + i, &t0, 16);
        memcpy(t + i + 8, &t1, 16);
    }
    return i;
}
#endif

#if RKNNX_K_AVX2
typedef unsigned char rknnx_lb_v16b __attribute__((vector_size(16)));
typedef uint16_t rknnx_lb_v16h __attribute__((vector_size(32)));

__attribute__((target("avx2")))
static ptrdiff_t rknnx_lb_vblend_avx2(const unsigned char *r0, const unsigned char *r1,
                                      uint16_t *t, ptrdiff_t i, ptrdiff_t n, int wy)
{
    const uint16_t a = (uint16_t)(256 - wy), b = (uint16_t)wy;
    const rknnx_lb_v16h va = {a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a};
    const rknnx_lb_v16h vb = {b, b, b, b, b, b, b, b, b, b, b, b, b, b, b, b};
    for (; i + 32 <= n; i += 32) {
        rknnx_lb_v16b x0, x1, y0, y1;
        memcpy(&x0, r0 + i, 16);
        memcpy(&x1, r0 + i + 16, 16);
        memcpy(&y0, r1 + i, 16);
        memcpy(&y1, r1 + i + 16, 16);
        rknnx_lb_v16h t0 = __builtin_convertvector(x0, rknnx_lb_v16h) * va
                           + __builtin_convertvector(y0, rknnx_lb_v16h) * vb;
        rknnx_lb_v16h t1 = __builtin_convertvector(x1, rknnx_lb_v16h) * va
                           + __builtin_convertvector(y1, rknnx_lb_v16h) * vb;
        memcpy(t + i, &t0, 32);
        memcpy(t + i + 16, &t1, 32);
    }
    return i;
}
#endif

static void rknnx_lb_vblend(const unsigned char *restrict r0, const unsigned char *restrict r1,
                            uint16_t *restrict t, ptrdiff_t n, int wy)
{
    ptrdiff_t i = 0;
#if RKNNX_K_AVX2
    if (rknnx_k_path() >= 2 && rknnx_k_have_avx2())
        i = rknnx_lb_vblend_avx2(r0, r1, t, i, n, wy);
#endif
#if RKNNX_K_VQ
    if (rknnx_k_path() >= 1)
        i = rknnx_lb_vblend_v128(r0, r1, t, i, n, wy);
#endif
    for (; i < n; i++)
        t[i] = (uint16_t)(r0[i] * (256 - wy) + r1[i] * wy);
}

/* ---- source rows ----------------------------------------------------------------------- */

/* The Q20 coefficients of the YUV -> BGR sums (letterbox.h): Y, R from V, G from V, G
   from U, B from U, per matrix (RKNNX_LB_BT601, RKNNX_LB_BT709). */
static const int32_t rknnx_lb_coef[2][5] = {
    {1220542, 1673527, -852492, -409993, 2116026},     /* BT.601: OpenCV's integers */
    {1220945, 1879825, -558796, -223607, 2215014}      /* BT.709: from Kr, Kb (letterbox.h) */
};

/* The per-call tables of the YUV conversion: each term of letterbox.h's sums by its
   byte, the rounding constant in the Y term. */
typedef struct rknnx_lb_yuv {
    int32_t y[256], rv[256], gv[256], gu[256], bu[256];
    int32_t k[5];               /* the matrix's coefficients (the vector paths') */
} rknnx_lb_yuv;

static void rknnx_lb_yuv_init(rknnx_lb_yuv *t, int matrix)
{
    const int32_t *k = rknnx_lb_coef[matrix == RKNNX_LB_BT709];
    memcpy(t->k, k, sizeof t->k);
    for (int32_t i = 0; i < 256; i++) {
        const int32_t c = i - 128, yy = i - 16;
        t->y[i] = (yy < 0 ? 0 : yy) * k[0] + (1 << 19);
        t->rv[i] = k[1] * c;
        t->gv[i] = k[2] * c;
        t->gu[i] = k[3] * c;
        t->bu[i] = k[4] * c;
    }
}

/* (v >> 20) saturated to 0..255, without branches (random chroma makes the branches of a
   plain clamp mispredict: twice the time, measured); >> of a negative int is arithmetic
   on every compiler that builds this (GCC, Clang) */
static inline unsigned char rknnx_lb_sat(int32_t v)
{
    v >>= 20;
    v &= ~(v >> 31);                 /* negative -> 0 */
    v |= (255 - v) >> 31;            /* above 255 -> all ones */
    return (unsigned char)v;
}

/* ---- YUV -> BGR in vectors ---------------------------------------------------------
   The same Q20 sums as the tables, lane by lane in 32-bit integers, over a run of pixel
   pairs: the Y bytes read as 16-bit lanes (little-endian: the low byte is the even
   pixel's) split into the even and the odd pixels, one chroma term per pair (NV12: the UV
   bytes as 16-bit lanes, U low; I420: N bytes of each plane).  Each pixel becomes a 32-bit
   word B | G << 8 | R << 16; the words are put in pixel order (a shuffle of the even and
   odd vectors) and their fourth bytes dropped (a byte shuffle of each 16 bytes: 4 pixels,
   12 bytes stored with 4 bytes of slack, which the next step or the row's slack takes). */
#if RKNNX_K_VQ && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define RKNNX_LB_VYUV 1
#else
#define RKNNX_LB_VYUV 0
#endif

#define RKNNX_LB_ARGS(...) __VA_ARGS__
#if RKNNX_K_WIDE
#define RKNNX_LB_SHUFI(M, a, b, ...) __builtin_shufflevector(a, b, __VA_ARGS__)
#else
#define RKNNX_LB_SHUFI(M, a, b, ...) __builtin_shuffle(a, b, (M){__VA_ARGS__})
#endif

/* 12 bytes of 4 words (B, G, R of each, the fourth dropped) at d; 16 written */
#define RKNNX_LB_PACK4(d, wp)                                                               \
    do {                                                                                    \
        rknnx_lb_b16 q_;                                                                    \
        memcpy(&q_, (wp), 16);                                                              \
        q_ = RKNNX_LB_SHUF(q_, 0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, 15, 15, 15, 15);     \
        memcpy((d), &q_, 16);                                                               \
    } while (0)

#define RKNNX_LB_YUV_STEP(NAME, VI, VH, VB, N, LO, HI, ATTR)                               \
    ATTR static ptrdiff_t NAME(const unsigned char *restrict Y,                            \
                               const unsigned char *restrict U,                            \
                               const unsigned char *restrict V, int i420,                  \
                               const int32_t *k, int sw, unsigned char *restrict d,        \
                               ptrdiff_t x, ptrdiff_t end)                                 \
    {                                                                                      \
        const int32_t ky = k[0], krv = k[1], kgv = k[2], kgu = k[3], kbu = k[4];           \
        for (; x + 2 * (N) <= end; x += 2 * (N)) {                                         \
            VH wy;                                                                         \
            VI u, v;                                                                       \
            memcpy(&wy, Y + x, sizeof wy);                                                 \
            if (i420) {                                                                    \
                VB bu, bv;                                                                 \
                memcpy(&bu, U + x / 2, sizeof bu);                                         \
                memcpy(&bv, V + x / 2, sizeof bv);                                         \
                u = __builtin_convertvector(bu, VI) - 128;                                 \
                v = __builtin_convertvector(bv, VI) - 128;                                 \
            } else {                                                                       \
                VH wc;                                                                     \
                memcpy(&wc, U + x, sizeof wc);                                             \
                u = __builtin_convertvector(wc & 0xff, VI) - 128;                          \
                v = __builtin_convertvector(wc >> 8, VI) - 128;                            \
            }                                                                              \
            VI ye = __builtin_convertvector(wy & 0xff, VI) - 16;                           \
            VI yo = __builtin_convertvector(wy >> 8, VI) - 16;                             \
            ye = (ye & ~(ye >> 31)) * ky + (1 << 19);                                      \
            yo = (yo & ~(yo >> 31)) * ky + (1 << 19);                                      \
            const VI cb = u * kbu, cg = v * kgv + u * kgu, cr = v * krv;                   \
            VI px[2];                                                                      \
            for (int j = 0; j < 2; j++) {                                                  \
                const VI yy = j ? yo : ye;                                                 \
                VI b = (yy + (sw ? cr : cb)) >> 20, g = (yy + cg) >> 20;                   \
                VI r = (yy + (sw ? cb : cr)) >> 20;                                        \
                b = (b & ~(b >> 31)) | ((255 - b) >> 31);                                  \
                g = (g & ~(g >> 31)) | ((255 - g) >> 31);                                  \
                r = (r & ~(r >> 31)) | ((255 - r) >> 31);                                  \
                px[j] = (b & 255) | ((g & 255) << 8) | ((r & 255) << 16);                  \
            }                                                                              \
            const VI lo = RKNNX_LB_SHUFI(VI, px[0], px[1], LO);                            \
            const VI hi = RKNNX_LB_SHUFI(VI, px[0], px[1], HI);                            \
            unsigned char *q = d + 3 * x;                                                  \
            /* in rising addresses: each store's 4 bytes of slack are the next's */         \
            for (int j = 0; j < (N) / 4; j++)                                              \
                RKNNX_LB_PACK4(q + 12 * j, (const unsigned char *)&lo + 16 * j);           \
            for (int j = 0; j < (N) / 4; j++)                                              \
                RKNNX_LB_PACK4(q + 3 * (N) + 12 * j, (const unsigned char *)&hi + 16 * j); \
        }                                                                                  \
        return x;                                                                          \
    }

#if RKNNX_LB_VYUV
typedef int32_t rknnx_lb_v4i __attribute__((vector_size(16)));
typedef uint16_t rknnx_lb_v4h __attribute__((vector_size(8)));
typedef unsigned char rknnx_lb_v4b __attribute__((vector_size(4)));
RKNNX_LB_YUV_STEP(rknnx_lb_yuv_v128, rknnx_lb_v4i, rknnx_lb_v4h, rknnx_lb_v4b, 4,
                  RKNNX_LB_ARGS(0, 4, 1, 5), RKNNX_LB_ARGS(2, 6, 3, 7), )
#endif
#if RKNNX_LB_VYUV && RKNNX_K_AVX2
/* The AVX2 step, 32 pixels (16 pairs) a step, in intrinsics: the same Q20 sums, but each
   32-bit product from one vpmaddwd of 16-bit halves (a coefficient k split as
   k = 128 kh + kl, |kl| < 128: x k = (x << 7) kh + x kl, the pair (x << 7, x) times
   (kh, kl), every factor within int16 for x in -128..255: exact), and the saturation to
   0..255 from the saturating packs (vpackssdw of the shifted sums, which stay within
   +-2**11, then vpackuswb: the plain loop's clamp, exactly); the even and odd pixels'
   bytes are interleaved into B, G, R triples by byte shuffles (vpshufb), in-lane, the two
   lanes' 48 bytes put in order by vperm2i128.  Half the instructions of the generic
   step above (vpmulld, the clamps by hand and the 4-byte words go). */
static void rknnx_lb_split(int32_t k, int32_t *w)
{
    const int32_t hi = k / 128, lo = k - 128 * hi;
    *w = (int32_t)((uint32_t)(uint16_t)hi | (uint32_t)(uint16_t)lo << 16);
}

/* The byte shuffles of the interleave: byte q of a lane's 48 bytes out (pixel p = q / 3,
   channel q % 3), in vector t = q / 16 from channel c's vector, takes its byte
   (p >> 1) + 8 (p & 1) (the even pixels first, then the odd ones) where q % 3 = c, else
   zero (-1); rknnx_lb_ilv[3 t + c]. */
static const signed char rknnx_lb_ilv[9][16] = {
    {0, -1, -1, 8, -1, -1, 1, -1, -1, 9, -1, -1, 2, -1, -1, 10},
    {-1, 0, -1, -1, 8, -1, -1, 1, -1, -1, 9, -1, -1, 2, -1, -1},
    {-1, -1, 0, -1, -1, 8, -1, -1, 1, -1, -1, 9, -1, -1, 2, -1},
    {-1, -1, 3, -1, -1, 11, -1, -1, 4, -1, -1, 12, -1, -1, 5, -1},
    {10, -1, -1, 3, -1, -1, 11, -1, -1, 4, -1, -1, 12, -1, -1, 5},
    {-1, 10, -1, -1, 3, -1, -1, 11, -1, -1, 4, -1, -1, 12, -1, -1},
    {-1, 13, -1, -1, 6, -1, -1, 14, -1, -1, 7, -1, -1, 15, -1, -1},
    {-1, -1, 13, -1, -1, 6, -1, -1, 14, -1, -1, 7, -1, -1, 15, -1},
    {5, -1, -1, 13, -1, -1, 6, -1, -1, 14, -1, -1, 7, -1, -1, 15},
};

/* The matrix's coefficients as vpmaddwd pairs (rknnx_lb_split), broadcast. */
typedef struct rknnx_lb_kavx2 {
    __m256i y, rv, gv, gu, bu;
} rknnx_lb_kavx2;

__attribute__((target("avx2")))
static rknnx_lb_kavx2 rknnx_lb_kavx2_of(const int32_t *k)
{
    int32_t w[5];
    for (int i = 0; i < 5; i++)
        rknnx_lb_split(k[i], w + i);
    rknnx_lb_kavx2 kv = {_mm256_set1_epi32(w[0]), _mm256_set1_epi32(w[1]),
                         _mm256_set1_epi32(w[2]), _mm256_set1_epi32(w[3]),
                         _mm256_set1_epi32(w[4])};
    return kv;
}

/* The YUV step's chroma half, 16 (U, V) pairs (I420: U[ci], V[ci] on; NV12: the pairs
   from byte U[cn], cn = 2 ci, given as is: the callers' offsets need no division):
   each pair's B, G and R terms (Q20, 32-bit lanes: [0] pairs 0-3 and 8-11, [1] pairs
   4-7 and 12-15), from the pairs (x << 7, x) of u, v - 128. */
__attribute__((target("avx2"), always_inline))
static inline void rknnx_lb_chroma_avx2(const unsigned char *U, const unsigned char *V,
                                        int i420, ptrdiff_t ci, ptrdiff_t cn,
                                        const rknnx_lb_kavx2 *kv,
                                        __m256i cb[2], __m256i cg[2], __m256i cr[2])
{
    const __m256i m8 = _mm256_set1_epi16(0xff), c128 = _mm256_set1_epi16(128);
    __m256i u, v;
    if (i420) {
        u = _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(U + ci)));
        v = _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(V + ci)));
    } else {
        const __m256i uv = _mm256_loadu_si256((const __m256i *)(U + cn));
        u = _mm256_and_si256(uv, m8);
        v = _mm256_srli_epi16(uv, 8);
    }
    u = _mm256_sub_epi16(u, c128);
    v = _mm256_sub_epi16(v, c128);
    const __m256i us = _mm256_slli_epi16(u, 7), vs = _mm256_slli_epi16(v, 7);
    const __m256i up[2] = {_mm256_unpacklo_epi16(us, u), _mm256_unpackhi_epi16(us, u)};
    const __m256i vp[2] = {_mm256_unpacklo_epi16(vs, v), _mm256_unpackhi_epi16(vs, v)};
    for (int i = 0; i < 2; i++) {
        cb[i] = _mm256_madd_epi16(up[i], kv->bu);
        cr[i] = _mm256_madd_epi16(vp[i], kv->rv);
        cg[i] = _mm256_add_epi32(_mm256_madd_epi16(vp[i], kv->gv),
                                 _mm256_madd_epi16(up[i], kv->gu));
    }
}

/* The YUV step's luma half, the 32 Ys at Y: max(Y - 16, 0) times the Y coefficient plus
   the rounding half (Q20, 32-bit lanes) of the even pixels (e) and the odd ones (o), in
   the chroma terms' order ([0] pairs 0-3 and 8-11, [1] pairs 4-7 and 12-15). */
__attribute__((target("avx2"), always_inline))
static inline void rknnx_lb_luma_avx2(const unsigned char *Y, const rknnx_lb_kavx2 *kv,
                                      __m256i e[2], __m256i o[2])
{
    const __m256i m8 = _mm256_set1_epi16(0xff), c16 = _mm256_set1_epi16(16);
    const __m256i half = _mm256_set1_epi32(1 << 19);
    const __m256i yb = _mm256_loadu_si256((const __m256i *)Y);
    const __m256i ye = _mm256_subs_epu16(_mm256_and_si256(yb, m8), c16);
    const __m256i yo = _mm256_subs_epu16(_mm256_srli_epi16(yb, 8), c16);
    const __m256i es = _mm256_slli_epi16(ye, 7), os = _mm256_slli_epi16(yo, 7);
    e[0] = _mm256_add_epi32(_mm256_madd_epi16(_mm256_unpacklo_epi16(es, ye), kv->y), half);
    e[1] = _mm256_add_epi32(_mm256_madd_epi16(_mm256_unpackhi_epi16(es, ye), kv->y), half);
    o[0] = _mm256_add_epi32(_mm256_madd_epi16(_mm256_unpacklo_epi16(os, yo), kv->y), half);
    o[1] = _mm256_add_epi32(_mm256_madd_epi16(_mm256_unpackhi_epi16(os, yo), kv->y), half);
}

/* One channel of 16 pixels from the luma and chroma terms: (y + c) >> 20 in 16-bit lanes
   (pairs 0-7, 8-15), saturated to int16 (the sums stay within +-2**11 after the shift). */
__attribute__((target("avx2"), always_inline))
static inline __m256i rknnx_lb_ch_avx2(const __m256i y[2], const __m256i c[2])
{
    return _mm256_packs_epi32(_mm256_srai_epi32(_mm256_add_epi32(y[0], c[0]), 20),
                              _mm256_srai_epi32(_mm256_add_epi32(y[1], c[1]), 20));
}

__attribute__((target("avx2")))
static ptrdiff_t rknnx_lb_yuv_avx2(const unsigned char *restrict Y,
                                   const unsigned char *restrict U,
                                   const unsigned char *restrict V, int i420,
                                   const int32_t *k, int sw, unsigned char *restrict d,
                                   ptrdiff_t x, ptrdiff_t end)
{
    const rknnx_lb_kavx2 kv = rknnx_lb_kavx2_of(k);
    __m256i sh[3][3];
    for (int t = 0; t < 3; t++)
        for (int c = 0; c < 3; c++)
            sh[t][c] = _mm256_broadcastsi128_si256(
                _mm_loadu_si128((const __m128i *)rknnx_lb_ilv[3 * t + c]));
    for (; x + 32 <= end; x += 32) {
        __m256i cb[2], cg[2], cr[2], e[2], o[2];
        rknnx_lb_chroma_avx2(U, V, i420, x / 2, x, &kv, cb, cg, cr);
        rknnx_lb_luma_avx2(Y + x, &kv, e, o);
        /* B, G, R of the even (e) and odd (o) pixels, 16-bit lanes: pairs 0-7, 8-15 */
        const __m256i be = rknnx_lb_ch_avx2(e, cb), ge = rknnx_lb_ch_avx2(e, cg);
        const __m256i re = rknnx_lb_ch_avx2(e, cr), bo = rknnx_lb_ch_avx2(o, cb);
        const __m256i go = rknnx_lb_ch_avx2(o, cg), ro = rknnx_lb_ch_avx2(o, cr);
        /* per lane: bytes 0-7 the even pixels, 8-15 the odd ones, saturated */
        const __m256i b8 = _mm256_packus_epi16(be, bo), r8 = _mm256_packus_epi16(re, ro);
        const __m256i G = _mm256_packus_epi16(ge, go);
        const __m256i B = sw ? r8 : b8, R = sw ? b8 : r8;     /* sw: R, G, B */
#define RKNNX_LB_OUT(T)                                                                     \
    _mm256_or_si256(_mm256_or_si256(_mm256_shuffle_epi8(B, sh[T][0]),                       \
                                    _mm256_shuffle_epi8(G, sh[T][1])),                      \
                    _mm256_shuffle_epi8(R, sh[T][2]))
        const __m256i q0 = RKNNX_LB_OUT(0), q1 = RKNNX_LB_OUT(1), q2 = RKNNX_LB_OUT(2);
#undef RKNNX_LB_OUT
        unsigned char *q = d + 3 * x;
        _mm256_storeu_si256((__m256i *)q, _mm256_permute2x128_si256(q0, q1, 0x20));
        _mm256_storeu_si256((__m256i *)(q + 32), _mm256_permute2x128_si256(q2, q0, 0x30));
        _mm256_storeu_si256((__m256i *)(q + 64), _mm256_permute2x128_si256(q1, q2, 0x31));
    }
    return x;
}
#endif

typedef struct rknnx_lb_rows {
    ptrdiff_t y[2];             /* the rows held by buf[0], buf[1] (-1: none) */
    unsigned char *buf[2];
    int next;                   /* the slot the next conversion takes */
    const int32_t *cols;        /* the columns the taps read, ascending */
    ptrdiff_t ncols;
    const rknnx_lb_yuv *yuv;
} rknnx_lb_rows;

/* The columns of row y the taps read, converted to 3 bytes a pixel into d (pixel x at
   d + 3x; d has 16 bytes of slack unless exact: then nothing past the last column is
   written): NV12 or I420 -> BGR (sw 2: R, G, B), or gathered from pixels that are not 3
   contiguous bytes (sw 0).  Table lookups at scattered columns: GCC's -O3 vectorizer makes
   this loop about 2.7 times slower (measured on x86-64), so it is kept out here. */
#if defined(__GNUC__) && !defined(__clang__)
__attribute__((optimize("no-tree-vectorize")))
#endif
static void rknnx_lb_convert(const rknnx_lb_params *p, const rknnx_lb_rows *rs, ptrdiff_t y,
                             int sw, int exact, unsigned char *restrict d)
{
    const int32_t *restrict cols = rs->cols;
    const ptrdiff_t n = rs->ncols;
    if (p->fmt != RKNNX_LB_BGR) {
        const int i420 = p->fmt == RKNNX_LB_I420;
        const unsigned char *restrict Y = p->src + y * p->src_row;
        const unsigned char *restrict U = p->uv + (y >> 1) * p->uv_row;
        const unsigned char *restrict V = i420 ? p->v + (y >> 1) * p->v_row : U + 1;
        const rknnx_lb_yuv *restrict t = rs->yuv;
        ptrdiff_t j = 0;
#if RKNNX_LB_VYUV
        if (rknnx_k_path() >= 1 && n > 0) {
            /* every pixel pair of the columns' span, vectors; the rest as listed */
            const ptrdiff_t x0 = cols[0] & ~(ptrdiff_t)1, end = cols[n - 1] + 1;
            ptrdiff_t x = x0;
#if RKNNX_K_AVX2
            if (rknnx_k_path() >= 2 && rknnx_k_have_avx2())
                x = rknnx_lb_yuv_avx2(Y, U, V, i420, t->k, sw, d, x, end);
#endif
            /* the 128-bit step stores 4 bytes past its pixels: exact, it stops 2 pixels
               short, which the plain loop rewrites */
            x = rknnx_lb_yuv_v128(Y, U, V, i420, t->k, sw, d, x, exact ? end - 2 : end);
            /* the first listed column the vectors left (ascending: a binary search) */
            ptrdiff_t hi = n;
            while (j < hi) {
                const ptrdiff_t mid = j + (hi - j) / 2;
                if (cols[mid] < x)
                    j = mid + 1;
                else
                    hi = mid;
            }
        }
#endif
        const ptrdiff_t cs = i420 ? 1 : 2;
        for (; j < n; j++) {
            const ptrdiff_t x = cols[j], c = (x >> 1) * cs;
            const int32_t yy = t->y[Y[x]], u = U[c], v = V[c];
            d[3 * x + sw] = rknnx_lb_sat(yy + t->bu[u]);
            d[3 * x + 1] = rknnx_lb_sat(yy + t->gv[v] + t->gu[u]);
            d[3 * x + 2 - sw] = rknnx_lb_sat(yy + t->rv[v]);
        }
    } else {
        const unsigned char *restrict s = p->src + y * p->src_row;
        const ptrdiff_t px = p->src_px, ch = p->src_ch;
        for (ptrdiff_t j = 0; j < n; j++) {
            const ptrdiff_t x = cols[j];
            d[3 * x] = s[x * px];
            d[3 * x + 1] = s[x * px + ch];
            d[3 * x + 2] = s[x * px + 2 * ch];
        }
    }
}

/* Row y of the frame as 3 contiguous bytes a pixel (pixel x at the result + 3x), valid
   at the columns the taps read: the frame itself when its pixels are so, else converted
   into a slot (the slot of the other row the caller holds is never taken: `keep`). */
static const unsigned char *rknnx_lb_row(const rknnx_lb_params *p, rknnx_lb_rows *rs,
                                         ptrdiff_t y, const unsigned char *keep)
{
    if (p->fmt == RKNNX_LB_BGR && p->src_px == 3 && p->src_ch == 1)
        return p->src + y * p->src_row;
    for (int k = 0; k < 2; k++)
        if (rs->y[k] == y)
            return rs->buf[k];
    int k = rs->next;
    if (rs->buf[k] == keep)
        k ^= 1;
    rs->next = k ^ 1;
    rs->y[k] = y;
    rknnx_lb_convert(p, rs, y, 0, 0, rs->buf[k]);
    return rs->buf[k];
}

/* ---- stores ---------------------------------------------------------------------------- */

/* the output is 3 contiguous bytes a pixel, channels in order, no table */
static int rknnx_lb_packed(const rknnx_lb_params *p)
{
    return p->lut == NULL && p->elem <= 1 && p->dst_px == 3 && p->dst_ch[0] == 0
           && p->dst_ch[1] == 1 && p->dst_ch[2] == 2;
}

/* the pad over output pixels [x0, x1) of row d (pat: one row of pad pixels, packed) */
static void rknnx_lb_fill(const rknnx_lb_params *p, unsigned char *d, ptrdiff_t x0,
                          ptrdiff_t x1, const unsigned char *pat)
{
    if (x1 <= x0)
        return;
    if (pat) {
        memcpy(d + 3 * x0, pat, (size_t)(3 * (x1 - x0)));
        return;
    }
    if (p->elem > 1) {          /* float16 / float32 elements */
        const size_t el = (size_t)p->elem;
        for (ptrdiff_t x = x0; x < x1; x++)
            for (int c = 0; c < 3; c++)
                memcpy(d + x * p->dst_px + p->dst_ch[c], p->padx + c * el, el);
        return;
    }
    if (p->dst_px == 1) {       /* planes (NCHW) */
        for (int c = 0; c < 3; c++)
            memset(d + p->dst_ch[c] + x0, p->pad[c], (size_t)(x1 - x0));
        return;
    }
    for (ptrdiff_t x = x0; x < x1; x++)
        for (int c = 0; c < 3; c++)
            d[x * p->dst_px + p->dst_ch[c]] = p->pad[c];
}

/* Horizontal pass of one output row of the region into packed pixels o (3 bytes, the
   channels in order), from a source row's bytes r (q = 11) or from 16-bit vertical sums
   t (q = 19: Q8 * Q11); channel c of an output pixel takes the source's channel c ^ sw
   (sw 0, or 2: the B <-> R swap).  Restrict pointers and constant channel offsets: the
   stores cannot alias the taps, so nothing is reloaded. */
#define RKNNX_LB_HROW(NAME, T, Q, SW)                                                      \
    static void NAME(const T *restrict r, const int32_t *restrict xi,                     \
                     const int32_t *restrict xw, ptrdiff_t n, unsigned char *restrict o)  \
    {                                                                                      \
        const int32_t half = 1 << ((Q) - 1);                                               \
        for (ptrdiff_t x = 0; x < n; x++) {                                                \
            const T *s = r + 3 * (ptrdiff_t)xi[x];                                         \
            const int32_t b = xw[x], a = 2048 - b;                                         \
            const int32_t v0 = ((int32_t)s[0 ^ (SW)] * a + (int32_t)s[3 + (0 ^ (SW))] * b  \
                                + half) >> (Q);                                            \
            const int32_t v1 = ((int32_t)s[1] * a + (int32_t)s[4] * b + half) >> (Q);      \
            const int32_t v2 = ((int32_t)s[2 ^ (SW)] * a + (int32_t)s[3 + (2 ^ (SW))] * b  \
                                + half) >> (Q);                                            \
            o[3 * x] = (unsigned char)v0;                                                  \
            o[3 * x + 1] = (unsigned char)v1;                                              \
            o[3 * x + 2] = (unsigned char)v2;                                              \
        }                                                                                  \
    }
RKNNX_LB_HROW(rknnx_lb_h8, unsigned char, 11, 0)
RKNNX_LB_HROW(rknnx_lb_h8s, unsigned char, 11, 2)
RKNNX_LB_HROW(rknnx_lb_h16, uint16_t, 19, 0)
RKNNX_LB_HROW(rknnx_lb_h16s, uint16_t, 19, 2)

/* ---- the horizontal pass in AVX2 --------------------------------------------------------
   Lane l = 3x + c of an output row is (s[o] a + s[o + 3] b + half) >> Q with o = off[l] =
   3 xi[x] + c (2 - c swapped; o counts the source's elements: bytes or 16-bit sums),
   b = xw[x], a = 2048 - b: the plain loops' expression, lane by lane, from tables made
   once per call (wab[l] = a | b << 16, two 16-bit weights).  The taps are gathered
   (vpgatherdd), the arithmetic and the narrowing are vectors:
   8-bit source: the pair (s[o], s[o + 3]) as two 16-bit halves times (a, b) (pmaddwd:
   products < 2**19, exact); 16-bit sums (< 2**16, unsigned): each biased by -2**15 into
   a signed half, the product's bias (-2**15 * 2048 = -2**26) added back, exact.
   The vector loop stops at a multiple of its step; the rest takes rknnx_lb_hlanes. */

typedef struct rknnx_lb_lanes {
    const int32_t *off, *wab;
    ptrdiff_t n;                /* 3 nw; 0: no tables (path 0) */
} rknnx_lb_lanes;

static void rknnx_lb_hlanes(const void *src, int q16, const rknnx_lb_lanes *ln, ptrdiff_t l,
                            unsigned char *restrict o)
{
    const int32_t *restrict off = ln->off, *restrict wab = ln->wab;
    if (q16) {
        const uint16_t *restrict t = (const uint16_t *)src;
        for (; l < ln->n; l++) {
            const int32_t a = wab[l] & 0xffff, b = (int32_t)((uint32_t)wab[l] >> 16);
            o[l] = (unsigned char)(((int32_t)t[off[l]] * a + (int32_t)t[off[l] + 3] * b
                                    + (1 << 18)) >> 19);
        }
    } else {
        const unsigned char *restrict r = (const unsigned char *)src;
        for (; l < ln->n; l++) {
            const int32_t a = wab[l] & 0xffff, b = (int32_t)((uint32_t)wab[l] >> 16);
            o[l] = (unsigned char)(((int32_t)r[off[l]] * a + (int32_t)r[off[l] + 3] * b
                                    + 1024) >> 11);
        }
    }
}

#if RKNNX_K_AVX2
/* 32 lanes a step: four gathers of 8 (vpgatherdd reads 4 bytes at each tap: the 8-bit
   source's s[o] and s[o + 3] in one; two for the 16-bit sums, at o and o + 2), the
   results packed to bytes (vpackssdw, vpackuswb: in-lane, put in order by vpermd) */
__attribute__((target("avx2")))
static ptrdiff_t rknnx_lb_hvec_avx2(const void *src, int q16, const rknnx_lb_lanes *ln,
                                    unsigned char *restrict o)
{
    const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    ptrdiff_t l = 0;
    for (; l + 32 <= ln->n; l += 32) {
        __m256i v[4];
        for (int k = 0; k < 4; k++) {
            const __m256i idx = _mm256_loadu_si256((const __m256i *)(ln->off + l + 8 * k));
            const __m256i w = _mm256_loadu_si256((const __m256i *)(ln->wab + l + 8 * k));
            if (q16) {
                const int *t = (const int *)src;
                const __m256i g0 = _mm256_i32gather_epi32(t, idx, 2);
                const __m256i g1 = _mm256_i32gather_epi32(
                    t, _mm256_add_epi32(idx, _mm256_set1_epi32(2)), 2);
                __m256i pr = _mm256_blend_epi16(g0, g1, 0xAA);
                pr = _mm256_xor_si256(pr, _mm256_set1_epi32((int)0x80008000u));
                v[k] = _mm256_srai_epi32(
                    _mm256_add_epi32(_mm256_madd_epi16(pr, w),
                                     _mm256_set1_epi32((1 << 26) + (1 << 18))), 19);
            } else {
                const __m256i g = _mm256_i32gather_epi32((const int *)src, idx, 1);
                const __m256i pr = _mm256_or_si256(
                    _mm256_and_si256(g, _mm256_set1_epi32(0xff)),
                    _mm256_and_si256(_mm256_srli_epi32(g, 8), _mm256_set1_epi32(0xff0000)));
                v[k] = _mm256_srai_epi32(
                    _mm256_add_epi32(_mm256_madd_epi16(pr, w), _mm256_set1_epi32(1024)), 11);
            }
        }
        const __m256i b = _mm256_packus_epi16(_mm256_packs_epi32(v[0], v[1]),
                                              _mm256_packs_epi32(v[2], v[3]));
        _mm256_storeu_si256((__m256i *)(o + l), _mm256_permutevar8x32_epi32(b, order));
    }
    return l;
}
#endif

/* Both passes at once where the output has fewer lanes than the blend has columns (a
   downscale): the vertical sums of only the taps read, from two gathers of the two rows'
   bytes, t = r0 (256 - wy) + r1 wy in 16-bit lanes (< 2**16, exact), then as above. */
static void rknnx_lb_hlanes2(const unsigned char *restrict r0, const unsigned char *restrict r1,
                             int wy, const rknnx_lb_lanes *ln, ptrdiff_t l,
                             unsigned char *restrict o)
{
    const int32_t *restrict off = ln->off, *restrict wab = ln->wab;
    for (; l < ln->n; l++) {
        const int32_t a = wab[l] & 0xffff, b = (int32_t)((uint32_t)wab[l] >> 16);
        const int32_t t0 = r0[off[l]] * (256 - wy) + r1[off[l]] * wy;
        const int32_t t1 = r0[off[l] + 3] * (256 - wy) + r1[off[l] + 3] * wy;
        o[l] = (unsigned char)((t0 * a + t1 * b + (1 << 18)) >> 19);
    }
}

#if RKNNX_K_AVX2
__attribute__((target("avx2")))
static ptrdiff_t rknnx_lb_hvec2_avx2(const unsigned char *r0, const unsigned char *r1,
                                     int wy, const rknnx_lb_lanes *ln,
                                     unsigned char *restrict o)
{
    const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    const __m256i m0 = _mm256_set1_epi32(0xff), m1 = _mm256_set1_epi32(0xff0000);
    const __m256i va = _mm256_set1_epi16((short)(256 - wy)), vb = _mm256_set1_epi16((short)wy);
    ptrdiff_t l = 0;
    for (; l + 32 <= ln->n; l += 32) {
        __m256i v[4];
        for (int k = 0; k < 4; k++) {
            const __m256i idx = _mm256_loadu_si256((const __m256i *)(ln->off + l + 8 * k));
            const __m256i w = _mm256_loadu_si256((const __m256i *)(ln->wab + l + 8 * k));
            const __m256i g0 = _mm256_i32gather_epi32((const int *)r0, idx, 1);
            const __m256i g1 = _mm256_i32gather_epi32((const int *)r1, idx, 1);
            const __m256i p0 = _mm256_or_si256(_mm256_and_si256(g0, m0),
                                               _mm256_and_si256(_mm256_srli_epi32(g0, 8), m1));
            const __m256i p1 = _mm256_or_si256(_mm256_and_si256(g1, m0),
                                               _mm256_and_si256(_mm256_srli_epi32(g1, 8), m1));
            __m256i pr = _mm256_add_epi16(_mm256_mullo_epi16(p0, va), _mm256_mullo_epi16(p1, vb));
            pr = _mm256_xor_si256(pr, _mm256_set1_epi32((int)0x80008000u));
            v[k] = _mm256_srai_epi32(
                _mm256_add_epi32(_mm256_madd_epi16(pr, w),
                                 _mm256_set1_epi32((1 << 26) + (1 << 18))), 19);
        }
        const __m256i b = _mm256_packus_epi16(_mm256_packs_epi32(v[0], v[1]),
                                              _mm256_packs_epi32(v[2], v[3]));
        _mm256_storeu_si256((__m256i *)(o + l), _mm256_permutevar8x32_epi32(b, order));
    }
    return l;
}
#endif

/* The horizontal pass of pixels [0, n) of a row: the AVX2 path over the lane tables when
   rknnx_lb_run made them, else the plain loops.  (The 128-bit path keeps the plain loops:
   without a gather, taps loaded one by one into a vector took twice their time on SSE2,
   measured.) */
static void rknnx_lb_hrow(const void *src, int q16, int sw, const int32_t *xi,
                          const int32_t *xw, ptrdiff_t n, const rknnx_lb_lanes *ln,
                          const unsigned char *r1, int wy, unsigned char *o)
{
    if (r1) {                   /* fused (rknnx_lb_run decides: the AVX2 path only) */
        ptrdiff_t l = 0;
#if RKNNX_K_AVX2
        l = rknnx_lb_hvec2_avx2((const unsigned char *)src, r1, wy, ln, o);
#endif
        rknnx_lb_hlanes2((const unsigned char *)src, r1, wy, ln, l, o);
        return;
    }
    if (ln->n > 0) {            /* the lane tables: the AVX2 path */
        ptrdiff_t l = 0;
#if RKNNX_K_AVX2
        l = rknnx_lb_hvec_avx2(src, q16, ln, o);
#endif
        rknnx_lb_hlanes(src, q16, ln, l, o);
        return;
    }
    if (q16)
        (sw ? rknnx_lb_h16s : rknnx_lb_h16)((const uint16_t *)src, xi, xw, n, o);
    else
        (sw ? rknnx_lb_h8s : rknnx_lb_h8)((const unsigned char *)src, xi, xw, n, o);
}

/* Packed pixels into three planes: p0[x] = s[3x], p1[x] = s[3x + 1], p2[x] = s[3x + 2],
   16 pixels a step in vectors (two shuffles a plane), the rest plain. */
#define RKNNX_LB_PLANES(NAME, ATTR)                                                         \
    ATTR static ptrdiff_t NAME(const unsigned char *restrict s, ptrdiff_t n,                \
                               unsigned char *restrict p0, unsigned char *restrict p1,      \
                               unsigned char *restrict p2)                                  \
    {                                                                                       \
        ptrdiff_t x = 0;                                                                    \
        for (; x + 16 <= n; x += 16) {                                                      \
            rknnx_lb_b16 a, b, c;                                                           \
            memcpy(&a, s + 3 * x, 16);                                                      \
            memcpy(&b, s + 3 * x + 16, 16);                                                 \
            memcpy(&c, s + 3 * x + 32, 16);                                                 \
            rknnx_lb_b16 t = RKNNX_LB_SHUF2(a, b, 0, 3, 6, 9, 12, 15, 18, 21, 24, 27, 30,   \
                                            0, 0, 0, 0, 0);                                 \
            const rknnx_lb_b16 q0 = RKNNX_LB_SHUF2(t, c, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10,  \
                                                   17, 20, 23, 26, 29);                     \
            t = RKNNX_LB_SHUF2(a, b, 1, 4, 7, 10, 13, 16, 19, 22, 25, 28, 31, 0, 0, 0, 0,   \
                               0);                                                          \
            const rknnx_lb_b16 q1 = RKNNX_LB_SHUF2(t, c, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10,  \
                                                   18, 21, 24, 27, 30);                     \
            t = RKNNX_LB_SHUF2(a, b, 2, 5, 8, 11, 14, 17, 20, 23, 26, 29, 0, 0, 0, 0, 0,    \
                               0);                                                          \
            const rknnx_lb_b16 q2 = RKNNX_LB_SHUF2(t, c, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 16,  \
                                                   19, 22, 25, 28, 31);                     \
            memcpy(p0 + x, &q0, 16);                                                        \
            memcpy(p1 + x, &q1, 16);                                                        \
            memcpy(p2 + x, &q2, 16);                                                        \
        }                                                                                   \
        return x;                                                                           \
    }
#if RKNNX_K_VQ
RKNNX_LB_PLANES(rknnx_lb_planes_v128, )
#endif
#if RKNNX_K_AVX2
RKNNX_LB_PLANES(rknnx_lb_planes_avx2, __attribute__((target("avx2"))))
#endif

static void rknnx_lb_planes(const unsigned char *restrict s, ptrdiff_t n,
                            unsigned char *restrict p0, unsigned char *restrict p1,
                            unsigned char *restrict p2)
{
    ptrdiff_t x = 0;
#if RKNNX_K_AVX2
    if (rknnx_k_path() >= 2 && rknnx_k_have_avx2())
        x = rknnx_lb_planes_avx2(s, n, p0, p1, p2);
#endif
#if RKNNX_K_VQ
    if (x == 0 && rknnx_k_path() >= 1)
        x = rknnx_lb_planes_v128(s, n, p0, p1, p2);
#endif
    for (; x < n; x++) {
        p0[x] = s[3 * x];
        p1[x] = s[3 * x + 1];
        p2[x] = s[3 * x + 2];
    }
}

/* The region's pixels of row d from ob (packed, swapped): into any channel offsets,
   through the table. */
static void rknnx_lb_store(const rknnx_lb_params *p, const unsigned char *restrict ob,
                           unsigned char *d)
{
    const unsigned char *lut = p->lut;
    const ptrdiff_t px = p->dst_px, k0 = p->dst_ch[0], k1 = p->dst_ch[1], k2 = p->dst_ch[2];
    unsigned char *restrict e = d + p->left * px;
    if (!lut && px == 1) {      /* planes (NCHW): one contiguous run per channel */
        rknnx_lb_planes(ob, p->nw, e + k0, e + k1, e + k2);
        return;
    }
    if (p->elem > 1) {          /* float16 / float32: the table's elements */
        const size_t el = (size_t)p->elem;
        for (ptrdiff_t x = 0; x < p->nw; x++, e += px) {
            memcpy(e + k0, lut + (size_t)ob[3 * x] * el, el);
            memcpy(e + k1, lut + (256 + (size_t)ob[3 * x + 1]) * el, el);
            memcpy(e + k2, lut + (512 + (size_t)ob[3 * x + 2]) * el, el);
        }
        return;
    }
    if (lut) {
        for (ptrdiff_t x = 0; x < p->nw; x++, e += px) {
            e[k0] = lut[ob[3 * x]];
            e[k1] = lut[256 + ob[3 * x + 1]];
            e[k2] = lut[512 + ob[3 * x + 2]];
        }
    } else {
        for (ptrdiff_t x = 0; x < p->nw; x++, e += px) {
            e[k0] = ob[3 * x];
            e[k1] = ob[3 * x + 1];
            e[k2] = ob[3 * x + 2];
        }
    }
}

/* The horizontal pass of row d: packed straight into it, or through the row buffer ob
   (packed, swapped) into any channel offsets, through the table. */
static void rknnx_lb_hpass(const rknnx_lb_params *p, const void *src, int q16,
                           const int32_t *xi, const int32_t *xw, const rknnx_lb_lanes *ln,
                           const unsigned char *r1, int wy, unsigned char *d,
                           unsigned char *ob, int direct)
{
    unsigned char *o = direct ? d + 3 * p->left : ob;
    rknnx_lb_hrow(src, q16, p->swap_rb, xi, xw, p->nw, ln, r1, wy, o);
    if (!direct)
        rknnx_lb_store(p, ob, d);
}

/* ---- the exact-ratio paths ----------------------------------------------------------
   Where every horizontal weight is 0 or 2048 (an odd integer downscale, 1:1), output pixel
   x is the source pixel e[x] = xi[x] (+ 1 where the weight is 2048): a "pick"; where every
   one is 1024 (an even integer downscale) it is the mean of pixels e[x], e[x] + 1: "pairs".
   letterbox.h's sum has no rounding before its last shift, so it may be taken in any
   order; these paths take it as (the horizontal weights' factor 2048 or 1024 taken out,
   t = r0 (256 - wy) + r1 wy exact in 16 bits):
     pick, one source row    v = r[e]
     pick, rows r0 and r1    v = (t[e] + 128) >> 8
     pairs, one source row   v = (r[e] + r[e + 1] + 1) >> 1
     pairs, rows r0 and r1   v = (t[e] + t[e + 1] + 256) >> 9
                               = ((t0 >> 1) + (t1 >> 1) + (t0 & t1 & 1) + 128) >> 8
   (the last in 16 bits: with t0 + t1 = 2X + e, e in 0..2, (2X + e + 256) >> 9 is
   (X + 128) >> 8 unless e = 2).  Each step works on contiguous bytes: the picked pixels
   (or pixel pairs, 6 bytes an output pixel) are copied out first unless they are the
   frame's own (1:1, 2:1), the arithmetic runs lane by lane over them (16-bit vectors), and
   the swap of B and R is a byte shuffle on the way: the same numbers as the plain
   loops on every path (tests/c/letterbox_check.c compares them with the per-pixel
   expression). */

enum { RKNNX_LB_HG = 0, RKNNX_LB_HS = 1, RKNNX_LB_HP = 2 };

/* o[3x + c] = s[3 e[x] + c], x < n: the picked pixels, unswapped (the swap is a vector
   pass after), 4 bytes a pixel copied while the pixel after e[x] is in the row of w (the
   fourth byte is the next pixel's first, rewritten by it) */
static void rknnx_lb_pick3(const unsigned char *restrict s, const int32_t *restrict e,
                           ptrdiff_t n, ptrdiff_t w, unsigned char *restrict o)
{
    ptrdiff_t x = 0;
    for (; x + 1 < n && e[x] + 1 < w; x++)
        memcpy(o + 3 * x, s + 3 * (ptrdiff_t)e[x], 4);
    for (; x < n; x++)
        memcpy(o + 3 * x, s + 3 * (ptrdiff_t)e[x], 3);
}

/* o[6x + k] = s[3 e[x] + k], k < 6: the pixel pairs, unswapped (e rises by 2 or more: 8
   bytes copied but for the last pair, the two extra inside the next pair's pixels) */
static void rknnx_lb_pick6(const unsigned char *restrict s, const int32_t *restrict e,
                           ptrdiff_t n, unsigned char *restrict o)
{
    for (ptrdiff_t x = 0; x + 1 < n; x++)
        memcpy(o + 6 * x, s + 3 * (ptrdiff_t)e[x], 8);
    memcpy(o + 6 * (n - 1), s + 3 * (ptrdiff_t)e[n - 1], 6);
}


/* The byte steps in vectors: each returns where it stopped (a whole number of steps whose
   16-byte loads and stores stay inside the n pixels); the plain loops finish.
   swap3:  o[3x + c] = s[3x + (2 - c)], 5 pixels a step;
   half3:  o[3x + c] = m[6x + c] (m[6x + 2 - c] swapped), 3 pixels a step. */
#define RKNNX_LB_BYTES(SWAP3, HALF3, ATTR)                                                 \
    ATTR static ptrdiff_t SWAP3(const unsigned char *restrict s, ptrdiff_t n,              \
                                unsigned char *restrict o)                                 \
    {                                                                                      \
        ptrdiff_t x = 0;                                                                   \
        for (; 3 * x + 16 <= 3 * n; x += 5) {                                              \
            rknnx_lb_b16 v;                                                                \
            memcpy(&v, s + 3 * x, 16);                                                     \
            v = RKNNX_LB_SHUF(v, 2, 1, 0, 5, 4, 3, 8, 7, 6, 11, 10, 9, 14, 13, 12, 15);   \
            memcpy(o + 3 * x, &v, 16);                                                     \
        }                                                                                  \
        return x;                                                                          \
    }                                                                                      \
    ATTR static ptrdiff_t HALF3(const unsigned char *restrict m, ptrdiff_t n, int sw,      \
                                unsigned char *restrict o)                                 \
    {                                                                                      \
        ptrdiff_t x = 0;                                                                   \
        if (sw) {                                                                          \
            for (; 3 * x + 16 <= 3 * n; x += 3) {                                          \
                rknnx_lb_b16 v;                                                            \
                memcpy(&v, m + 6 * x, 16);                                                 \
                v = RKNNX_LB_SHUF(v, 2, 1, 0, 8, 7, 6, 14, 13, 12, 15, 15, 15, 15, 15, 15, \
                                  15);                                                     \
                memcpy(o + 3 * x, &v, 16);                                                 \
            }                                                                              \
        } else {                                                                           \
            for (; 3 * x + 16 <= 3 * n; x += 3) {                                          \
                rknnx_lb_b16 v;                                                            \
                memcpy(&v, m + 6 * x, 16);                                                 \
                v = RKNNX_LB_SHUF(v, 0, 1, 2, 6, 7, 8, 12, 13, 14, 15, 15, 15, 15, 15, 15, \
                                  15);                                                     \
                memcpy(o + 3 * x, &v, 16);                                                 \
            }                                                                              \
        }                                                                                  \
        return x;                                                                          \
    }

#if RKNNX_K_VQ
RKNNX_LB_BYTES(rknnx_lb_swap3_v128, rknnx_lb_half3_v128, )
#endif
#if RKNNX_K_AVX2
RKNNX_LB_BYTES(rknnx_lb_swap3_avx2, rknnx_lb_half3_avx2, __attribute__((target("avx2"))))
#endif

/* o[3x + c] = s[3x + c] (sw: + 2 - c), x < n: a copy unless swapped */
static void rknnx_lb_copy3(const unsigned char *restrict s, ptrdiff_t n, int sw,
                           unsigned char *restrict o)
{
    if (!sw) {
        memcpy(o, s, (size_t)(3 * n));
        return;
    }
    ptrdiff_t x = 0;
#if RKNNX_K_AVX2
    if (rknnx_k_path() >= 2 && rknnx_k_have_avx2())
        x = rknnx_lb_swap3_avx2(s, n, o);
#endif
#if RKNNX_K_VQ
    if (x == 0 && rknnx_k_path() >= 1)
        x = rknnx_lb_swap3_v128(s, n, o);
#endif
    for (; x < n; x++) {
        o[3 * x] = s[3 * x + 2];
        o[3 * x + 1] = s[3 * x + 1];
        o[3 * x + 2] = s[3 * x];
    }
}

/* o[3x + c] = m[6x + c] (sw: m[6x + 2 - c]), x < n: the first pixel of each pair */
static void rknnx_lb_half3(const unsigned char *restrict m, ptrdiff_t n, int sw,
                           unsigned char *restrict o)
{
    ptrdiff_t x = 0;
#if RKNNX_K_AVX2
    if (rknnx_k_path() >= 2 && rknnx_k_have_avx2())
        x = rknnx_lb_half3_avx2(m, n, sw, o);
#endif
#if RKNNX_K_VQ
    if (x == 0 && rknnx_k_path() >= 1)
        x = rknnx_lb_half3_v128(m, n, sw, o);
#endif
    for (; x < n; x++)
        for (int c = 0; c < 3; c++)
            o[3 * x + c] = m[6 * x + (sw ? 2 - c : c)];
}

/* The 16-bit arithmetic in vectors, N lanes a step, returning where it stopped:
   blend:  o[j] = (a[j] (256 - wy) + b[j] wy + 128) >> 8, j < n;
   pairs:  over j < n, t(k) = a[k] (256 - wy) + b[k] wy (b NULL: one row, the pair's
           (a[j] + a[j + 3] + 1) >> 1), o[j] = ((t(j) >> 1) + (t(j + 3) >> 1)
           + (t(j) & t(j + 3) & 1) + 128) >> 8; reads a and b up to n + 2. */
#define RKNNX_LB_ARITH(BLEND, PAIRS, VB, VH, N, ATTR)                                      \
    ATTR static ptrdiff_t BLEND(const unsigned char *restrict a,                            \
                                const unsigned char *restrict b, ptrdiff_t n, int wy,       \
                                unsigned char *restrict o)                                 \
    {                                                                                      \
        const VH va = (VH){0} + (uint16_t)(256 - wy), vb = (VH){0} + (uint16_t)wy;         \
        ptrdiff_t j = 0;                                                                   \
        for (; j + (N) <= n; j += (N)) {                                                   \
            VB x, y;                                                                       \
            memcpy(&x, a + j, N);                                                          \
            memcpy(&y, b + j, N);                                                          \
            const VH t = __builtin_convertvector(x, VH) * va                               \
                         + __builtin_convertvector(y, VH) * vb + 128;                      \
            const VB r = __builtin_convertvector(t >> 8, VB);                              \
            memcpy(o + j, &r, N);                                                          \
        }                                                                                  \
        return j;                                                                          \
    }                                                                                      \
    ATTR static ptrdiff_t PAIRS(const unsigned char *restrict a,                            \
                                const unsigned char *restrict b, ptrdiff_t n, int wy,       \
                                unsigned char *restrict o)                                 \
    {                                                                                      \
        const VH va = (VH){0} + (uint16_t)(256 - wy), vb = (VH){0} + (uint16_t)wy;         \
        ptrdiff_t j = 0;                                                                   \
        if (!b) {                                                                          \
            for (; j + (N) <= n; j += (N)) {                                               \
                VB x, y;                                                                   \
                memcpy(&x, a + j, N);                                                      \
                memcpy(&y, a + j + 3, N);                                                  \
                const VH t = __builtin_convertvector(x, VH)                                \
                             + __builtin_convertvector(y, VH) + 1;                         \
                const VB r = __builtin_convertvector(t >> 1, VB);                          \
                memcpy(o + j, &r, N);                                                      \
            }                                                                              \
            return j;                                                                      \
        }                                                                                  \
        if (wy == 128) {        /* 2:1: (a + b + c + d + 2) >> 2 in bytes, from the      \
                                   rounded-up means of the pairs (x | y) - ((x ^ y) >> 1), \
                                   less 1 where a pair was odd and the means differ in   \
                                   parity (the double rounding's excess, exactly) */     \
            for (; j + (N) <= n; j += (N)) {                                               \
                VB x0, y0, x1, y1;                                                         \
                memcpy(&x0, a + j, N);                                                     \
                memcpy(&y0, b + j, N);                                                     \
                memcpy(&x1, a + j + 3, N);                                                 \
                memcpy(&y1, b + j + 3, N);                                                 \
                const VB dx = x0 ^ x1, dy = y0 ^ y1;                                       \
                const VB s1 = (x0 | x1) - (dx >> 1), s2 = (y0 | y1) - (dy >> 1);           \
                const VB ds = s1 ^ s2;                                                     \
                const VB r = (s1 | s2) - (ds >> 1) - ((dx | dy) & ds & 1);                 \
                memcpy(o + j, &r, N);                                                      \
            }                                                                              \
            return j;                                                                      \
        }                                                                                  \
        for (; j + (N) <= n; j += (N)) {                                                   \
            VB x0, y0, x1, y1;                                                             \
            memcpy(&x0, a + j, N);                                                         \
            memcpy(&y0, b + j, N);                                                         \
            memcpy(&x1, a + j + 3, N);                                                     \
            memcpy(&y1, b + j + 3, N);                                                     \
            const VH t0 = __builtin_convertvector(x0, VH) * va                             \
                          + __builtin_convertvector(y0, VH) * vb;                          \
            const VH t1 = __builtin_convertvector(x1, VH) * va                             \
                          + __builtin_convertvector(y1, VH) * vb;                          \
            const VH t = (t0 >> 1) + (t1 >> 1) + (t0 & t1 & 1) + 128;                     \
            const VB r = __builtin_convertvector(t >> 8, VB);                              \
            memcpy(o + j, &r, N);                                                          \
        }                                                                                  \
        return j;                                                                          \
    }

#if RKNNX_K_VQ
typedef uint16_t rknnx_lb_h16v __attribute__((vector_size(32)));
RKNNX_LB_ARITH(rknnx_lb_blend_v128, rknnx_lb_pairs_v128, rknnx_lb_b16, rknnx_lb_h16v, 16, )
#endif
#if RKNNX_K_AVX2
typedef unsigned char rknnx_lb_b32 __attribute__((vector_size(32)));
typedef uint16_t rknnx_lb_h32v __attribute__((vector_size(64)));
RKNNX_LB_ARITH(rknnx_lb_blend_avx2, rknnx_lb_pairs_avx2, rknnx_lb_b32, rknnx_lb_h32v, 32,
               __attribute__((target("avx2"))))
#endif

static void rknnx_lb_blend(const unsigned char *restrict a, const unsigned char *restrict b,
                           ptrdiff_t n, int wy, unsigned char *restrict o)
{
    ptrdiff_t j = 0;
#if RKNNX_K_AVX2
    if (rknnx_k_path() >= 2 && rknnx_k_have_avx2())
        j = rknnx_lb_blend_avx2(a, b, n, wy, o);
#endif
#if RKNNX_K_VQ
    if (rknnx_k_path() >= 1)
        j += rknnx_lb_blend_v128(a + j, b + j, n - j, wy, o + j);
#endif
    for (; j < n; j++)
        o[j] = (unsigned char)((a[j] * (256 - wy) + b[j] * wy + 128) >> 8);
}

static void rknnx_lb_pairs(const unsigned char *restrict a, const unsigned char *restrict b,
                           ptrdiff_t n, int wy, unsigned char *restrict o)
{
    ptrdiff_t j = 0;
#if RKNNX_K_AVX2
    if (rknnx_k_path() >= 2 && rknnx_k_have_avx2())
        j = rknnx_lb_pairs_avx2(a, b, n, wy, o);
#endif
#if RKNNX_K_VQ
    if (rknnx_k_path() >= 1)
        j += rknnx_lb_pairs_v128(a + j, b ? b + j : NULL, n - j, wy, o + j);
#endif
    if (!b) {
        for (; j < n; j++)
            o[j] = (unsigned char)((a[j] + a[j + 3] + 1) >> 1);
        return;
    }
    for (; j < n; j++) {
        const int t0 = a[j] * (256 - wy) + b[j] * wy;
        const int t1 = a[j + 3] * (256 - wy) + b[j + 3] * wy;
        o[j] = (unsigned char)(((t0 >> 1) + (t1 >> 1) + (t0 & t1 & 1) + 128) >> 8);
    }
}

/* ---- 2:1 both ways from a YUV frame, in one pass ------------------------------------
   Where the horizontal taps are pairs of adjacent pixels (e[x] = e[0] + 2x, e[0] even)
   and the row's vertical weight is 128 with yi even, output pixel x is the mean of the
   2x2 block of converted pixels (a + b + c + d + 2) >> 2 (letterbox.h's pairs form with
   t = 128 (r0 + r1)), and the block's four pixels share one U, V: the AVX2 path converts
   the two rows' 32 pixels a step with one chroma computation, takes the means in 16-bit
   lanes (each pixel clamped to 0..255 first, as the conversion's bytes) and writes the 16
   output pixels interleaved and swapped: no row buffers, no pair pass.  The plain loop
   finishes a row from the tables. */
#if RKNNX_LB_VYUV && RKNNX_K_AVX2
/* the 24 bytes of a lane's 8 output pixels from BG (B 0-7, G 8-15) and RR (R 0-7):
   [0] bytes 0-15 from BG, [1] from RR, [2] bytes 16-23 from BG, [3] from RR */
static const signed char rknnx_lb_ilv8[4][16] = {
    {0, 8, -1, 1, 9, -1, 2, 10, -1, 3, 11, -1, 4, 12, -1, 5},
    {-1, -1, 0, -1, -1, 1, -1, -1, 2, -1, -1, 3, -1, -1, 4, -1},
    {13, -1, 6, 14, -1, 7, 15, -1, -1, -1, -1, -1, -1, -1, -1, -1},
    {-1, 5, -1, -1, 6, -1, -1, 7, -1, -1, -1, -1, -1, -1, -1, -1}};

__attribute__((target("avx2")))
static ptrdiff_t rknnx_lb_yuv_half_avx2(const unsigned char *restrict Y0,
                                        const unsigned char *restrict Y1,
                                        const unsigned char *restrict U,
                                        const unsigned char *restrict V, int i420,
                                        const int32_t *k, int sw, ptrdiff_t n,
                                        unsigned char *restrict o)
{
    const rknnx_lb_kavx2 kv = rknnx_lb_kavx2_of(k);
    const __m256i m8 = _mm256_set1_epi16(0xff);
    const __m256i two = _mm256_set1_epi16(2), zero = _mm256_setzero_si256();
    __m256i sh[4];
    for (int i = 0; i < 4; i++)
        sh[i] = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)rknnx_lb_ilv8[i]));
    ptrdiff_t x = 0;
    for (; x + 16 <= n; x += 16) {
        __m256i cb[2], cg[2], cr[2];
        rknnx_lb_chroma_avx2(U, V, i420, x, 2 * x, &kv, cb, cg, cr);
        __m256i sb = two, sg = two, sr = two;     /* the blocks' sums + 2, 16-bit lanes */
        for (int r = 0; r < 2; r++) {
            __m256i e[2], o[2];
            rknnx_lb_luma_avx2((r ? Y1 : Y0) + 2 * x, &kv, e, o);
/* a channel's 16 pixels (even or odd), clamped to 0..255 in 16-bit lanes */
#define RKNNX_LB_PX(Y2, C2)                                                                 \
    _mm256_min_epi16(_mm256_max_epi16(rknnx_lb_ch_avx2(Y2, C2), zero), m8)
            sb = _mm256_add_epi16(sb, _mm256_add_epi16(RKNNX_LB_PX(e, cb), RKNNX_LB_PX(o, cb)));
            sg = _mm256_add_epi16(sg, _mm256_add_epi16(RKNNX_LB_PX(e, cg), RKNNX_LB_PX(o, cg)));
            sr = _mm256_add_epi16(sr, _mm256_add_epi16(RKNNX_LB_PX(e, cr), RKNNX_LB_PX(o, cr)));
#undef RKNNX_LB_PX
        }
        sb = _mm256_srli_epi16(sb, 2);
        sg = _mm256_srli_epi16(sg, 2);
        sr = _mm256_srli_epi16(sr, 2);
        /* per lane 8 output pixels: B 0-7, G 8-15; R 0-7 (twice) */
        const __m256i bg = _mm256_packus_epi16(sw ? sr : sb, sg);
        const __m256i rr = _mm256_packus_epi16(sw ? sb : sr, sw ? sb : sr);
        const __m256i p1 = _mm256_or_si256(_mm256_shuffle_epi8(bg, sh[0]),
                                           _mm256_shuffle_epi8(rr, sh[1]));
        const __m256i p2 = _mm256_or_si256(_mm256_shuffle_epi8(bg, sh[2]),
                                           _mm256_shuffle_epi8(rr, sh[3]));
        unsigned char *q = o + 3 * x;
        _mm_storeu_si128((__m128i *)q, _mm256_castsi256_si128(p1));
        _mm_storel_epi64((__m128i *)(q + 16), _mm256_castsi256_si128(p2));
        _mm_storeu_si128((__m128i *)(q + 24), _mm256_extracti128_si256(p1, 1));
        _mm_storel_epi64((__m128i *)(q + 40), _mm256_extracti128_si256(p2, 1));
    }
    return x;
}
#endif

/* Output pixels [0, n) of row yi / 2 of a 2:1 YUV frame (rows yi, yi + 1, yi even; the
   pairs from pixel e0, even), packed into o (sw 2: R, G, B) */
static void rknnx_lb_yuv_half(const rknnx_lb_params *p, const rknnx_lb_yuv *t, ptrdiff_t yi,
                              ptrdiff_t e0, ptrdiff_t n, int sw, unsigned char *restrict o)
{
    const int i420 = p->fmt == RKNNX_LB_I420;
    const unsigned char *Y0 = p->src + yi * p->src_row + e0, *Y1 = Y0 + p->src_row;
    const unsigned char *U = p->uv + (yi >> 1) * p->uv_row + (i420 ? e0 / 2 : e0);
    const unsigned char *V = i420 ? p->v + (yi >> 1) * p->v_row + e0 / 2 : U + 1;
    ptrdiff_t x = 0;
#if RKNNX_LB_VYUV && RKNNX_K_AVX2
    x = rknnx_lb_yuv_half_avx2(Y0, Y1, U, V, i420, t->k, sw, n, o);
#endif
    const ptrdiff_t cs = i420 ? 1 : 2;
    for (; x < n; x++) {
        const int32_t u = U[x * cs], v = V[x * cs];
        int32_t s[3] = {2, 2, 2};
        for (int k = 0; k < 4; k++) {
            const int32_t yy = t->y[(k & 2 ? Y1 : Y0)[2 * x + (k & 1)]];
            s[0] += rknnx_lb_sat(yy + t->bu[u]);
            s[1] += rknnx_lb_sat(yy + t->gv[v] + t->gu[u]);
            s[2] += rknnx_lb_sat(yy + t->rv[v]);
        }
        o[3 * x + sw] = (unsigned char)(s[0] >> 2);
        o[3 * x + 1] = (unsigned char)(s[1] >> 2);
        o[3 * x + 2 - sw] = (unsigned char)(s[2] >> 2);
    }
}

/* What the exact-ratio paths need: the mode, the picked pixels e (ascending), the step
   between them (1 for a pick, 2 for pairs: the frame's own bytes, nothing copied; 0:
   irregular or wider, copied out), scratch rows a, b (6 bytes an output pixel) and m. */
typedef struct rknnx_lb_exact {
    int mode;
    ptrdiff_t k;
    const int32_t *e;
    unsigned char *a, *b, *m;
} rknnx_lb_exact;

/* Row d of the region from source row r0 (r1 NULL) or rows r0, r1 blended by wy. */
static void rknnx_lb_exact_row(const rknnx_lb_params *p, const rknnx_lb_exact *ex,
                               const unsigned char *r0, const unsigned char *r1, int wy,
                               unsigned char *d, unsigned char *ob, int direct)
{
    const ptrdiff_t n = p->nw;
    const int sw = p->swap_rb ? 2 : 0;
    const int32_t *e = ex->e;
    unsigned char *o = direct ? d + 3 * p->left : ob;
    if (ex->mode == RKNNX_LB_HS) {
        if (!r1) {
            if (ex->k == 1) {
                rknnx_lb_copy3(r0 + 3 * (ptrdiff_t)e[0], n, sw, o);
            } else if (!sw) {
                rknnx_lb_pick3(r0, e, n, p->w, o);
            } else {
                rknnx_lb_pick3(r0, e, n, p->w, ex->a);
                rknnx_lb_copy3(ex->a, n, sw, o);
            }
        } else if (ex->k == 1 && !sw) {
            rknnx_lb_blend(r0 + 3 * (ptrdiff_t)e[0], r1 + 3 * (ptrdiff_t)e[0], 3 * n, wy, o);
        } else {
            rknnx_lb_pick3(r0, e, n, p->w, ex->a);
            rknnx_lb_pick3(r1, e, n, p->w, ex->b);
            if (!sw) {
                rknnx_lb_blend(ex->a, ex->b, 3 * n, wy, o);
            } else {
                rknnx_lb_blend(ex->a, ex->b, 3 * n, wy, ex->m);
                rknnx_lb_copy3(ex->m, n, sw, o);
            }
        }
    } else {
        const unsigned char *a = r0 + 3 * (ptrdiff_t)e[0];
        const unsigned char *b = r1 ? r1 + 3 * (ptrdiff_t)e[0] : NULL;
        if (ex->k != 2) {
            rknnx_lb_pick6(r0, e, n, ex->a);
            a = ex->a;
            if (r1) {
                rknnx_lb_pick6(r1, e, n, ex->b);
                b = ex->b;
            }
        }
        rknnx_lb_pairs(a, b, 6 * n - 3, wy, ex->m);
        rknnx_lb_half3(ex->m, n, sw, o);
    }
    if (!direct)
        rknnx_lb_store(p, ob, d);
}

/* The exact-ratio mode of the horizontal taps (xi, xw: Q11), and e and the step. */
static void rknnx_lb_exact_mode(const int32_t *xi, const int32_t *xw, ptrdiff_t n,
                                int32_t *e, rknnx_lb_exact *ex)
{
    int pick = 1, pairs = 1;
    for (ptrdiff_t x = 0; x < n; x++) {
        pick &= xw[x] == 0 || xw[x] == 2048;
        pairs &= xw[x] == 1024;
    }
    ex->mode = pick ? RKNNX_LB_HS : pairs ? RKNNX_LB_HP : RKNNX_LB_HG;
    ex->e = e;
    if (ex->mode == RKNNX_LB_HG)
        return;
    for (ptrdiff_t x = 0; x < n; x++)
        e[x] = xi[x] + (xw[x] == 2048);
    ex->k = pick ? 1 : 2;
    for (ptrdiff_t x = 1; x < n; x++)
        if (e[x] - e[x - 1] != ex->k)
            ex->k = 0;
}

/* ---- the pass -------------------------------------------------------------------------- */

int rknnx_lb_run(const rknnx_lb_params *p)
{
    if (p->w < 2 || p->h < 2 || p->nw < 1 || p->nh < 1 || p->left < 0 || p->top < 0
            || p->left + p->nw > p->W || p->top + p->nh > p->H
            || (p->fmt != RKNNX_LB_BGR && p->fmt != RKNNX_LB_NV12 && p->fmt != RKNNX_LB_I420)
            || (p->fmt != RKNNX_LB_BGR && ((p->w | p->h) & 1))
            || (p->fmt == RKNNX_LB_I420 && !p->v)
            || (p->matrix != RKNNX_LB_BT601 && p->matrix != RKNNX_LB_BT709)
            || (p->elem != 0 && p->elem != 1 && p->elem != 2 && p->elem != 4)
            || (p->elem > 1 && !p->lut))
        return RKNNX_LB_EINVAL;
    const int packed = rknnx_lb_packed(p);
    const size_t row3 = 3 * (size_t)p->w, nx = (size_t)p->nw;
    /* one allocation: the taps, the picked pixels and the lane tables, the 16-bit sums,
       two converted rows (16 bytes of slack each), a row of output pixels (packed), a row of pad pixels, the
       column marks and three rows of the exact-ratio paths (with a vector's slack) */
    const size_t bytes = sizeof(rknnx_lb_yuv) + (nx * 9 + (size_t)p->w) * sizeof(int32_t)
                         + row3 * sizeof(uint16_t) + 2 * (row3 + 16) + 3 * nx + 3 * (size_t)p->W
                         + (size_t)p->w + 3 * (6 * nx + 64) + 64;
    unsigned char *mem = malloc(bytes);
    if (!mem)
        return RKNNX_LB_ENOMEM;
    rknnx_lb_yuv *yuv = (rknnx_lb_yuv *)mem;
    int32_t *xi = (int32_t *)(yuv + 1), *xw = xi + nx, *cols = xw + nx;
    int32_t *off = cols + p->w, *wab = off + 3 * nx, *pick = wab + 3 * nx;
    uint16_t *t = (uint16_t *)(pick + nx);
    unsigned char *rows = (unsigned char *)(t + row3);
    unsigned char *ob = rows + 2 * (row3 + 16), *pat = ob + 3 * nx, *mark = pat + 3 * (size_t)p->W;
    unsigned char *scratch = mark + p->w;
    rknnx_lb_rows rs = {{-1, -1}, {rows, rows + row3 + 16}, 0, cols, 0, yuv};
    if (packed)
        for (ptrdiff_t x = 0; x < p->W; x++)
            memcpy(pat + 3 * x, p->pad, 3);
    else
        pat = NULL;

    rknnx_lb_taps(p->w, p->nw, 11, xi, xw);
    rknnx_lb_exact ex = {0, 0, pick, scratch, scratch + 6 * nx + 64,
                         scratch + 2 * (6 * nx + 64)};
    rknnx_lb_exact_mode(xi, xw, p->nw, pick, &ex);
    rknnx_lb_lanes ln = {off, wab, 0};
    int fused = 0;
#if RKNNX_K_AVX2
    if (ex.mode == RKNNX_LB_HG && rknnx_k_path() >= 2 && rknnx_k_have_avx2()) {
        for (ptrdiff_t x = 0; x < p->nw; x++)
            for (int c = 0; c < 3; c++) {
                off[3 * x + c] = 3 * xi[x] + (p->swap_rb ? 2 - c : c);
                wab[3 * x + c] = (int32_t)((uint32_t)(2048 - xw[x]) | (uint32_t)xw[x] << 16);
            }
        ln.n = 3 * p->nw;
    }
#endif
    /* the columns the taps read: their span, and the list of those read */
    const ptrdiff_t x0 = xi[0], x1 = (ptrdiff_t)xi[p->nw - 1] + 2;
    memset(mark, 0, (size_t)p->w);
    for (ptrdiff_t x = 0; x < p->nw; x++) {
        if (ex.mode == RKNNX_LB_HS)
            mark[pick[x]] = 1;
        else
            mark[xi[x]] = mark[xi[x] + 1] = 1;
    }
    for (ptrdiff_t x = x0; x < x1; x++)
        if (mark[x])
            cols[rs.ncols++] = (int32_t)x;
    if (p->fmt != RKNNX_LB_BGR)
        rknnx_lb_yuv_init(yuv, p->matrix);
    /* the vertical sums at the taps only (AVX2, downscaling): fewer lanes than columns */
    fused = ln.n > 0 && p->nw < x1 - x0;
    const int64_t den = 2 * (int64_t)p->nh;
    /* a YUV frame whose rows go 1:1 into packed pixels (all its columns, in order) */
    const int yuv1 = packed && p->fmt != RKNNX_LB_BGR && ex.mode == RKNNX_LB_HS && ex.k == 1
                     && p->nw == p->w && pick[0] == 0;
    /* a YUV frame's pairs of adjacent pixels from an even column (the 2:1 path, AVX2) */
    int yuvhalf = 0;
#if RKNNX_LB_VYUV && RKNNX_K_AVX2
    yuvhalf = p->fmt != RKNNX_LB_BGR && ex.mode == RKNNX_LB_HP && ex.k == 2
              && (pick[0] & 1) == 0 && rknnx_k_path() >= 2 && rknnx_k_have_avx2();
#endif
    for (ptrdiff_t y = 0; y < p->H; y++) {
        unsigned char *d = p->dst + y * p->dst_row;
        const ptrdiff_t ry = y - p->top;
        if (ry < 0 || ry >= p->nh) {
            rknnx_lb_fill(p, d, 0, p->W, pat);
            continue;
        }
        rknnx_lb_fill(p, d, 0, p->left, pat);
        rknnx_lb_fill(p, d, p->left + p->nw, p->W, pat);
        /* this row's taps: rknnx_lb_taps's rule */
        const int64_t num = (2 * (int64_t)ry + 1) * (int64_t)p->h - (int64_t)p->nh;
        int64_t yi = 0, yw = 0;
        if (num > 0) {
            yi = num / den;
            yw = (256 * (num - yi * den) + den / 2) / den;
            if (yi >= (int64_t)p->h - 1) {
                yi = (int64_t)p->h - 2;
                yw = 256;
            }
        }
        if ((yw == 0 || yw == 256) && yuv1) {
            /* a YUV frame's row at 1:1 into packed pixels: converted in place, swapped on
               the way (no row buffer, no copy) */
            rknnx_lb_convert(p, &rs, (ptrdiff_t)yi + (yw == 256), p->swap_rb ? 2 : 0, 1,
                             d + 3 * p->left);
        } else if (yw == 0 || yw == 256) {
            /* one source row: its bytes, exactly what the 16-bit sums would give */
            const unsigned char *r = rknnx_lb_row(p, &rs, (ptrdiff_t)yi + (yw == 256), NULL);
            if (ex.mode != RKNNX_LB_HG)
                rknnx_lb_exact_row(p, &ex, r, NULL, 0, d, ob, packed);
            else
                rknnx_lb_hpass(p, r, 0, xi, xw, &ln, NULL, 0, d, ob, packed);
        } else if (yuvhalf && yw == 128 && (yi & 1) == 0) {
            /* 2:1 both ways from YUV: the two rows converted and averaged in one pass */
            unsigned char *o = packed ? d + 3 * p->left : ob;
            rknnx_lb_yuv_half(p, yuv, (ptrdiff_t)yi, pick[0], p->nw, p->swap_rb ? 2 : 0, o);
            if (!packed)
                rknnx_lb_store(p, ob, d);
        } else {
            const unsigned char *r0 = rknnx_lb_row(p, &rs, (ptrdiff_t)yi, NULL);
            const unsigned char *r1 = rknnx_lb_row(p, &rs, (ptrdiff_t)yi + 1, r0);
            if (ex.mode != RKNNX_LB_HG) {
                rknnx_lb_exact_row(p, &ex, r0, r1, (int)yw, d, ob, packed);
            } else if (fused) {
                rknnx_lb_hpass(p, r0, 0, xi, xw, &ln, r1, (int)yw, d, ob, packed);
            } else {
                rknnx_lb_vblend(r0 + 3 * x0, r1 + 3 * x0, t + 3 * x0, 3 * (x1 - x0), (int)yw);
                rknnx_lb_hpass(p, t, 1, xi, xw, &ln, NULL, 0, d, ob, packed);
            }
        }
    }
    free(mem);
    return RKNNX_LB_OK;
}
