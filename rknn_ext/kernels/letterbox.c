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

/* The per-call tables of the NV12 conversion: each term of letterbox.h's sums by its
   byte, the rounding constant in the Y term. */
typedef struct rknnx_lb_yuv {
    int32_t y[256], rv[256], gv[256], gu[256], bu[256];
} rknnx_lb_yuv;

static void rknnx_lb_yuv_init(rknnx_lb_yuv *t)
{
    for (int32_t k = 0; k < 256; k++) {
        const int32_t c = k - 128, yy = k - 16;
        t->y[k] = (yy < 0 ? 0 : yy) * 1220542 + (1 << 19);
        t->rv[k] = 1673527 * c;
        t->gv[k] = -852492 * c;
        t->gu[k] = -409993 * c;
        t->bu[k] = 2116026 * c;
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

/* ---- NV12 -> BGR in vectors ---------------------------------------------------------
   The same Q20 sums as the tables, lane by lane in 32-bit integers, over a run of pixel
   pairs: the Y bytes and the UV bytes read as 16-bit lanes (little-endian: the low byte
   is the even pixel's Y, the U) split into the even and the odd pixels, one chroma term
   per pair.  Each pixel leaves as a 32-bit word B | G << 8 | R << 16 stored at d + 3x,
   its fourth byte overwritten by the next pixel; the last pixel of a step stores 3. */
#if RKNNX_K_VQ && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define RKNNX_LB_VYUV 1
#else
#define RKNNX_LB_VYUV 0
#endif

#define RKNNX_LB_YUV_STEP(NAME, VI, VH, N, ATTR)                                         \
    ATTR static ptrdiff_t NAME(const unsigned char *restrict Y,                            \
                               const unsigned char *restrict UV, unsigned char *restrict d, \
                               ptrdiff_t x, ptrdiff_t end)                                   \
    {                                                                                      \
        for (; x + 2 * (N) <= end; x += 2 * (N)) {                                         \
            VH wy, wc;                                                                     \
            memcpy(&wy, Y + x, sizeof wy);                                                 \
            memcpy(&wc, UV + x, sizeof wc);                                                \
            VI ye = __builtin_convertvector(wy & 0xff, VI) - 16;                           \
            VI yo = __builtin_convertvector(wy >> 8, VI) - 16;                             \
            VI u = __builtin_convertvector(wc & 0xff, VI) - 128;                           \
            VI v = __builtin_convertvector(wc >> 8, VI) - 128;                             \
            ye = (ye & ~(ye >> 31)) * 1220542 + (1 << 19);                                 \
            yo = (yo & ~(yo >> 31)) * 1220542 + (1 << 19);                                 \
            const VI cb = u * 2116026, cg = v * -852492 + u * -409993, cr = v * 1673527;   \
            VI px[2];                                                                      \
            for (int k = 0; k < 2; k++) {                                                  \
                const VI yy = k ? yo : ye;                                                 \
                VI b = (yy + cb) >> 20, g = (yy + cg) >> 20, r = (yy + cr) >> 20;          \
                b = (b & ~(b >> 31)) | ((255 - b) >> 31);                                  \
                g = (g & ~(g >> 31)) | ((255 - g) >> 31);                                  \
                r = (r & ~(r >> 31)) | ((255 - r) >> 31);                                  \
                px[k] = (b & 255) | ((g & 255) << 8) | ((r & 255) << 16);                  \
            }                                                                              \
            int32_t e[N], o[N];                                                            \
            memcpy(e, &px[0], sizeof e);                                                   \
            memcpy(o, &px[1], sizeof o);                                                   \
            unsigned char *q = d + 3 * x;                                                  \
            for (int k = 0; k < (N) - 1; k++) {                                            \
                memcpy(q + 6 * k, &e[k], 4);                                               \
                memcpy(q + 6 * k + 3, &o[k], 4);                                           \
            }                                                                              \
            memcpy(q + 6 * ((N) - 1), &e[(N) - 1], 4);                                     \
            memcpy(q + 6 * ((N) - 1) + 3, &o[(N) - 1], 3);                                 \
        }                                                                                  \
        return x;                                                                          \
    }

#if RKNNX_LB_VYUV
typedef int32_t rknnx_lb_v4i __attribute__((vector_size(16)));
typedef uint16_t rknnx_lb_v4h __attribute__((vector_size(8)));
RKNNX_LB_YUV_STEP(rknnx_lb_yuv_v128, rknnx_lb_v4i, rknnx_lb_v4h, 4, )
#endif
#if RKNNX_LB_VYUV && RKNNX_K_AVX2
typedef int32_t rknnx_lb_v8i __attribute__((vector_size(32)));
RKNNX_LB_YUV_STEP(rknnx_lb_yuv_avx2, rknnx_lb_v8i, rknnx_lb_v8h, 8,
                  __attribute__((target("avx2"))))
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
   d + 3x): NV12 -> BGR, or gathered from pixels that are not 3 contiguous bytes.  Table
   lookups at scattered columns: GCC's -O3 vectorizer makes this loop about 2.7 times
   slower (measured on x86-64), so it is kept out here. */
#if defined(__GNUC__) && !defined(__clang__)
__attribute__((optimize("no-tree-vectorize")))
#endif
static void rknnx_lb_convert(const rknnx_lb_params *p, const rknnx_lb_rows *rs, ptrdiff_t y,
                             unsigned char *restrict d)
{
    const int32_t *restrict cols = rs->cols;
    const ptrdiff_t n = rs->ncols;
    if (p->fmt == RKNNX_LB_NV12) {
        const unsigned char *restrict Y = p->src + y * p->src_row;
        const unsigned char *restrict UV = p->uv + (y >> 1) * p->uv_row;
        const rknnx_lb_yuv *restrict t = rs->yuv;
        ptrdiff_t j = 0;
#if RKNNX_LB_VYUV
        if (rknnx_k_path() >= 1 && n > 0) {
            /* every pixel pair of the columns' span, vectors; the rest as listed */
            const ptrdiff_t x0 = cols[0] & ~(ptrdiff_t)1, end = cols[n - 1] + 1;
            ptrdiff_t x = x0;
#if RKNNX_K_AVX2
            if (rknnx_k_path() >= 2 && rknnx_k_have_avx2())
                x = rknnx_lb_yuv_avx2(Y, UV, d, x, end);
#endif
            x = rknnx_lb_yuv_v128(Y, UV, d, x, end);
            while (j < n && cols[j] < x)
                j++;
        }
#endif
        for (; j < n; j++) {
            const ptrdiff_t x = cols[j], c = x & ~(ptrdiff_t)1;
            const int32_t yy = t->y[Y[x]], u = UV[c], v = UV[c + 1];
            d[3 * x] = rknnx_lb_sat(yy + t->bu[u]);
            d[3 * x + 1] = rknnx_lb_sat(yy + t->gv[v] + t->gu[u]);
            d[3 * x + 2] = rknnx_lb_sat(yy + t->rv[v]);
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
    rknnx_lb_convert(p, rs, y, rs->buf[k]);
    return rs->buf[k];
}

/* ---- stores ---------------------------------------------------------------------------- */

/* the output is 3 contiguous bytes a pixel, channels in order, no table */
static int rknnx_lb_packed(const rknnx_lb_params *p)
{
    return p->lut == NULL && p->dst_px == 3 && p->dst_ch[0] == 0 && p->dst_ch[1] == 1
           && p->dst_ch[2] == 2;
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

/* The horizontal pass of row d: packed straight into it, or through the row buffer ob
   (packed, swapped) into any channel offsets, through the table. */
static void rknnx_lb_hpass(const rknnx_lb_params *p, const void *src, int q16,
                           const int32_t *xi, const int32_t *xw, const rknnx_lb_lanes *ln,
                           const unsigned char *r1, int wy, unsigned char *d,
                           unsigned char *ob, int direct)
{
    unsigned char *o = direct ? d + 3 * p->left : ob;
    rknnx_lb_hrow(src, q16, p->swap_rb, xi, xw, p->nw, ln, r1, wy, o);
    if (direct)
        return;
    const unsigned char *lut = p->lut;
    const ptrdiff_t px = p->dst_px, k0 = p->dst_ch[0], k1 = p->dst_ch[1], k2 = p->dst_ch[2];
    unsigned char *restrict e = d + p->left * px;
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

/* ---- the pass -------------------------------------------------------------------------- */

int rknnx_lb_run(const rknnx_lb_params *p)
{
    if (p->w < 2 || p->h < 2 || p->nw < 1 || p->nh < 1 || p->left < 0 || p->top < 0
            || p->left + p->nw > p->W || p->top + p->nh > p->H
            || (p->fmt != RKNNX_LB_BGR && p->fmt != RKNNX_LB_NV12)
            || (p->fmt == RKNNX_LB_NV12 && ((p->w | p->h) & 1)))
        return RKNNX_LB_EINVAL;
    const int packed = rknnx_lb_packed(p);
    const size_t row3 = 3 * (size_t)p->w, nx = (size_t)p->nw;
    /* one allocation: the taps and the lane tables, the 16-bit sums, two converted rows,
       a row of output pixels (packed) and a row of pad pixels */
    const size_t bytes = sizeof(rknnx_lb_yuv) + (nx * 8 + (size_t)p->w) * sizeof(int32_t)
                         + row3 * sizeof(uint16_t) + 2 * row3 + 3 * nx + 3 * (size_t)p->W
                         + (size_t)p->w;
    unsigned char *mem = malloc(bytes);
    if (!mem)
        return RKNNX_LB_ENOMEM;
    rknnx_lb_yuv *yuv = (rknnx_lb_yuv *)mem;
    int32_t *xi = (int32_t *)(yuv + 1), *xw = xi + nx, *cols = xw + nx;
    int32_t *off = cols + p->w, *wab = off + 3 * nx;
    uint16_t *t = (uint16_t *)(wab + 3 * nx);
    unsigned char *rows = (unsigned char *)(t + row3);
    unsigned char *ob = rows + 2 * row3, *pat = ob + 3 * nx, *mark = pat + 3 * (size_t)p->W;
    rknnx_lb_rows rs = {{-1, -1}, {rows, rows + row3}, 0, cols, 0, yuv};
    for (ptrdiff_t x = 0; x < p->W; x++)
        memcpy(pat + 3 * x, p->pad, 3);
    if (!packed)
        pat = NULL;

    rknnx_lb_taps(p->w, p->nw, 11, xi, xw);
    rknnx_lb_lanes ln = {off, wab, 0};
    int fused = 0;
#if RKNNX_K_AVX2
    if (rknnx_k_path() >= 2 && rknnx_k_have_avx2()) {
        for (ptrdiff_t x = 0; x < p->nw; x++)
            for (int c = 0; c < 3; c++) {
                off[3 * x + c] = 3 * xi[x] + (p->swap_rb ? 2 - c : c);
                wab[3 * x + c] = (int32_t)((uint32_t)(2048 - xw[x]) | (uint32_t)xw[x] << 16);
            }
        ln.n = 3 * p->nw;
    }
#endif
    /* the columns the taps reach: their span, and the list of those read */
    const ptrdiff_t x0 = xi[0], x1 = (ptrdiff_t)xi[p->nw - 1] + 2;
    memset(mark, 0, (size_t)p->w);
    for (ptrdiff_t x = 0; x < p->nw; x++)
        mark[xi[x]] = mark[xi[x] + 1] = 1;
    for (ptrdiff_t x = x0; x < x1; x++)
        if (mark[x])
            cols[rs.ncols++] = (int32_t)x;
    if (p->fmt == RKNNX_LB_NV12)
        rknnx_lb_yuv_init(yuv);
    /* the vertical sums at the taps only (AVX2, downscaling): fewer lanes than columns */
    fused = ln.n > 0 && p->nw < x1 - x0;
    const int64_t den = 2 * (int64_t)p->nh;
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
        if (yw == 0 || yw == 256) {
            /* one source row: its bytes, exactly what the 16-bit sums would give */
            const unsigned char *r = rknnx_lb_row(p, &rs, (ptrdiff_t)yi + (yw == 256), NULL);
            rknnx_lb_hpass(p, r, 0, xi, xw, &ln, NULL, 0, d, ob, packed);
        } else {
            const unsigned char *r0 = rknnx_lb_row(p, &rs, (ptrdiff_t)yi, NULL);
            const unsigned char *r1 = rknnx_lb_row(p, &rs, (ptrdiff_t)yi + 1, r0);
            if (fused) {
                rknnx_lb_hpass(p, r0, 0, xi, xw, &ln, r1, (int)yw, d, ob, packed);
                continue;
            }
            rknnx_lb_vblend(r0 + 3 * x0, r1 + 3 * x0, t + 3 * x0, 3 * (x1 - x0), (int)yw);
            rknnx_lb_hpass(p, t, 1, xi, xw, &ln, NULL, 0, d, ob, packed);
        }
    }
    free(mem);
    return RKNNX_LB_OK;
}
