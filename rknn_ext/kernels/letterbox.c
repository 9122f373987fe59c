/*
 * rknnx: the letterbox kernel (letterbox.h says what it computes).  Per output row of
 * the region: the two source rows (pointers into the frame, or converted into a row
 * buffer from NV12 or from pixels that are not 3 contiguous bytes; the last two kept),
 * blended vertically into 16-bit sums over the columns the row's taps reach (skipped
 * when the row's weight is 0 or 1: a source row itself), then resampled horizontally,
 * swapped, looked up and stored; the pad around the region is written per row.
 *
 * The vertical blend has a 128-bit path (GCC/Clang vector extensions: SSE2 on x86-64,
 * NEON on aarch64) and an AVX2 path (x86-64, the processor asked at run time), chosen
 * as the kernels' dispatch says (kernels.h: rknnx_k_path, rknnx_k_have_avx2); both are
 * exact integer arithmetic, the same numbers as the plain loop.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernels.h"
#include "letterbox.h"

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

/* NV12 -> BGR of pixels [x0, x1) of row y into d (pixel x at d + 3x); x0 even */
static void rknnx_lb_nv12_row(const rknnx_lb_params *p, ptrdiff_t y, unsigned char *d,
                              ptrdiff_t x0, ptrdiff_t x1)
{
    const unsigned char *Y = p->src + y * p->src_row;
    const unsigned char *UV = p->uv + (y >> 1) * p->uv_row;
    for (ptrdiff_t x = x0; x < x1; x += 2) {
        const int32_t u = (int32_t)UV[x] - 128, v = (int32_t)UV[x + 1] - 128;
        const int32_t r = (1 << 19) + 1673527 * v;
        const int32_t g = (1 << 19) - 852492 * v - 409993 * u;
        const int32_t b = (1 << 19) + 2116026 * u;
        for (ptrdiff_t k = x; k < x + 2 && k < x1; k++) {
            int32_t yy = (int32_t)Y[k] - 16;
            yy = (yy < 0 ? 0 : yy) * 1220542;
            int32_t c[3] = {(yy + b) >> 20, (yy + g) >> 20, (yy + r) >> 20};
            for (int j = 0; j < 3; j++)
                d[3 * k + j] = (unsigned char)(c[j] < 0 ? 0 : c[j] > 255 ? 255 : c[j]);
        }
    }
}

typedef struct rknnx_lb_rows {
    ptrdiff_t y[2];             /* the rows held by buf[0], buf[1] (-1: none) */
    unsigned char *buf[2];
    int next;                   /* the slot the next conversion takes */
} rknnx_lb_rows;

/* Row y of the frame as 3 contiguous bytes a pixel (pixel x at the result + 3x), valid
   over [x0, x1): the frame itself when its pixels are so, else converted into a slot
   (the slot of the other row the caller holds is never taken: `keep`). */
static const unsigned char *rknnx_lb_row(const rknnx_lb_params *p, rknnx_lb_rows *rs,
                                         ptrdiff_t y, ptrdiff_t x0, ptrdiff_t x1,
                                         const unsigned char *keep)
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
    unsigned char *d = rs->buf[k];
    if (p->fmt == RKNNX_LB_NV12) {
        rknnx_lb_nv12_row(p, y, d, x0 & ~(ptrdiff_t)1, x1);
    } else {
        const unsigned char *s = p->src + y * p->src_row;
        for (ptrdiff_t x = x0; x < x1; x++)
            for (int j = 0; j < 3; j++)
                d[3 * x + j] = s[x * p->src_px + j * p->src_ch];
    }
    return d;
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

/* Horizontal pass of one output row.  From 16-bit vertical sums t (q = 19: Q8 * Q11) or
   from a source row's bytes r (q = 11); pixel x of the region -> output pixel left + x. */
#define RKNNX_LB_H(SRC, Q)                                                                 \
    do {                                                                                   \
        const int32_t half = 1 << ((Q) - 1);                                               \
        if (packed) {                                                                      \
            unsigned char *o = d + 3 * p->left;                                            \
            for (ptrdiff_t x = 0; x < p->nw; x++, o += 3) {                                \
                const ptrdiff_t i = 3 * (ptrdiff_t)xi[x];                                  \
                const int32_t b = xw[x], a = 2048 - b;                                     \
                o[0] = (unsigned char)(((int32_t)SRC[i + c0] * a                           \
                                        + (int32_t)SRC[i + 3 + c0] * b + half) >> (Q));    \
                o[1] = (unsigned char)(((int32_t)SRC[i + c1] * a                           \
                                        + (int32_t)SRC[i + 3 + c1] * b + half) >> (Q));    \
                o[2] = (unsigned char)(((int32_t)SRC[i + c2] * a                           \
                                        + (int32_t)SRC[i + 3 + c2] * b + half) >> (Q));    \
            }                                                                              \
        } else {                                                                           \
            unsigned char *o = d + p->left * p->dst_px;                                    \
            for (ptrdiff_t x = 0; x < p->nw; x++, o += p->dst_px) {                        \
                const ptrdiff_t i = 3 * (ptrdiff_t)xi[x];                                  \
                const int32_t b = xw[x], a = 2048 - b;                                     \
                for (int c = 0; c < 3; c++) {                                              \
                    const int ch = p->perm[c];                                             \
                    const int32_t v = ((int32_t)SRC[i + ch] * a                            \
                                       + (int32_t)SRC[i + 3 + ch] * b + half) >> (Q);      \
                    o[p->dst_ch[c]] = lut ? lut[256 * c + v] : (unsigned char)v;           \
                }                                                                          \
            }                                                                              \
        }                                                                                  \
    } while (0)

/* ---- the pass -------------------------------------------------------------------------- */

int rknnx_lb_run(const rknnx_lb_params *p)
{
    if (p->w < 2 || p->h < 2 || p->nw < 1 || p->nh < 1 || p->left < 0 || p->top < 0
            || p->left + p->nw > p->W || p->top + p->nh > p->H
            || (p->fmt != RKNNX_LB_BGR && p->fmt != RKNNX_LB_NV12)
            || (p->fmt == RKNNX_LB_NV12 && ((p->w | p->h) & 1)))
        return RKNNX_LB_EINVAL;
    for (int c = 0; c < 3; c++)
        if (p->perm[c] < 0 || p->perm[c] > 2)
            return RKNNX_LB_EINVAL;
    const int packed = rknnx_lb_packed(p);
    const unsigned char *lut = p->lut;
    const int c0 = p->perm[0], c1 = p->perm[1], c2 = p->perm[2];
    const size_t row3 = 3 * (size_t)p->w;
    /* one allocation: the taps, the 16-bit sums, two converted rows, a pad row */
    size_t nx = (size_t)p->nw, pat_n = packed ? 3 * (size_t)p->W : 0;
    size_t bytes = nx * 2 * sizeof(int32_t) + row3 * sizeof(uint16_t) + 2 * row3 + pat_n;
    unsigned char *mem = malloc(bytes ? bytes : 1);
    if (!mem)
        return RKNNX_LB_ENOMEM;
    int32_t *xi = (int32_t *)mem, *xw = xi + nx;
    uint16_t *t = (uint16_t *)(xw + nx);
    rknnx_lb_rows rs = {{-1, -1}, {(unsigned char *)(t + row3), (unsigned char *)(t + row3) + row3}, 0};
    unsigned char *pat = packed ? rs.buf[1] + row3 : NULL;
    if (pat)
        for (ptrdiff_t x = 0; x < p->W; x++)
            memcpy(pat + 3 * x, p->pad, 3);

    rknnx_lb_taps(p->w, p->nw, 11, xi, xw);
    /* the columns the taps reach */
    const ptrdiff_t x0 = xi[0], x1 = (ptrdiff_t)xi[p->nw - 1] + 2;
    for (ptrdiff_t y = 0; y < p->H; y++) {
        unsigned char *d = p->dst + y * p->dst_row;
        const ptrdiff_t ry = y - p->top;
        if (ry < 0 || ry >= p->nh) {
            rknnx_lb_fill(p, d, 0, p->W, pat);
            continue;
        }
        rknnx_lb_fill(p, d, 0, p->left, pat);
        rknnx_lb_fill(p, d, p->left + p->nw, p->W, pat);
        int32_t yi, yw;
        {
            /* the tap of this row alone (the same rule as rknnx_lb_taps) */
            int64_t num = (2 * (int64_t)ry + 1) * (int64_t)p->h - (int64_t)p->nh;
            int64_t den = 2 * (int64_t)p->nh, k = 0, w = 0;
            if (num > 0) {
                k = num / den;
                w = (256 * (num - k * den) + den / 2) / den;
                if (k >= (int64_t)p->h - 1) {
                    k = (int64_t)p->h - 2;
                    w = 256;
                }
            }
            yi = (int32_t)k;
            yw = (int32_t)w;
        }
        if (yw == 0 || yw == 256) {
            const unsigned char *r = rknnx_lb_row(p, &rs, yi + (yw == 256), x0, x1, NULL);
            RKNNX_LB_H(r, 11);
        } else {
            const unsigned char *r0 = rknnx_lb_row(p, &rs, yi, x0, x1, NULL);
            const unsigned char *r1 = rknnx_lb_row(p, &rs, yi + 1, x0, x1, r0);
            rknnx_lb_vblend(r0 + 3 * x0, r1 + 3 * x0, t + 3 * x0, 3 * (x1 - x0), yw);
            RKNNX_LB_H(t, 19);
        }
    }
    free(mem);
    return RKNNX_LB_OK;
}
