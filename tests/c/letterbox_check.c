/*
 * The letterbox kernel (rknn_ext/kernels/letterbox.c) as a C program;
 * tests/vision/test_letterbox_c.py builds it with the kernels (at -O2, and under
 * ASan/UBSan where the compiler can) and runs it.
 *
 * Over a few hundred random geometries (frame sizes from 2x2, up- and downscaling, BGR
 * with strided pixels and rows, reversed rows, NV12 and I420 with padded rows, BT.601 and
 * BT.709; half of them exact ratios; outputs packed, NHWC with row padding, NCHW planes,
 * with and without a table), every buffer allocated at its exact size so the sanitizers
 * see any overrun: each path of the dispatch (rknnx_k_set_path 0, 1, 2) writes the same
 * bytes as the plain one, a BGR frame's region is letterbox.h's per-pixel expression, the
 * row padding of the output is never written, and every byte outside the region is its
 * pad byte.
 * And the YUV -> BGR conversion over every (Y, U, V) triple, NV12 and I420, BT.601 and
 * BT.709, on each path of the dispatch (frames of 512 x 128 pixels at 1:1, one per V, each
 * 2x2 block four Ys and a U; odd Vs swapped to RGB): every byte is letterbox.h's Q20 sum,
 * written out below from its text, not from the kernel's tables; and 2:1 YUV frames (the
 * one-pass path) against the 2x2 means of those bytes.
 * Prints "letterbox_check: N checks, F failed".
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "kernels.h"
#include "letterbox.h"

static uint64_t rng_state = 88172645463325252ull;

static uint32_t rnd(uint32_t n)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state >> 16) % n;
}

/* letterbox.h's arithmetic pixel by pixel, straight from its text (BGR frames): the
   region's channel c of output pixel (x, y), before the table */
static unsigned char reference(const rknnx_lb_params *p, ptrdiff_t x, ptrdiff_t y, int c)
{
    int32_t yi, yw, xi, xw;
    {
        const int64_t den = 2 * (int64_t)p->nh, num = (2 * (int64_t)y + 1) * p->h - p->nh;
        int64_t k = 0, w = 0;
        if (num > 0) {
            k = num / den;
            w = (256 * (num - k * den) + den / 2) / den;
            if (k >= p->h - 1) {
                k = p->h - 2;
                w = 256;
            }
        }
        yi = (int32_t)k;
        yw = (int32_t)w;
    }
    {
        const int64_t den = 2 * (int64_t)p->nw, num = (2 * (int64_t)x + 1) * p->w - p->nw;
        int64_t k = 0, w = 0;
        if (num > 0) {
            k = num / den;
            w = (2048 * (num - k * den) + den / 2) / den;
            if (k >= p->w - 1) {
                k = p->w - 2;
                w = 2048;
            }
        }
        xi = (int32_t)k;
        xw = (int32_t)w;
    }
    const int sc = p->swap_rb ? 2 - c : c;
    int32_t t[2];
    for (int k = 0; k < 2; k++) {
        const unsigned char *a = p->src + yi * p->src_row + (xi + k) * p->src_px + sc * p->src_ch;
        const unsigned char *b = a + p->src_row;
        t[k] = a[0] * (256 - yw) + b[0] * yw;
    }
    return (unsigned char)((t[0] * (2048 - xw) + t[1] * xw + (1 << 18)) >> 19);
}

static void one(int fmt)
{
    const int yuv = fmt != RKNNX_LB_BGR;
    const ptrdiff_t w = yuv ? 2 * (1 + rnd(60)) : 2 + rnd(120);
    const ptrdiff_t h = yuv ? 2 * (1 + rnd(40)) : 2 + rnd(80);
    ptrdiff_t W = 1 + rnd(150), H = 1 + rnd(100);
    if (rnd(2)) {
        /* an exact ratio (the pick and pairs paths): w / k wide, 1:1 when k is 1 */
        const ptrdiff_t k = 1 + rnd(6);
        if (w / k >= 1) {
            W = w / k;
            H = h + rnd(40);
        }
    }
    rknnx_lb_params p;
    memset(&p, 0, sizeof p);
    p.fmt = fmt;
    p.w = w;
    p.h = h;
    p.W = W;
    p.H = H;
    /* the frame: exact size, strided */
    unsigned char *src, *uvbuf = NULL, *vbuf = NULL;
    size_t src_n;
    if (yuv) {
        /* NV12: w bytes of UV pairs a row; I420: w/2 of U, and a V plane as well */
        const ptrdiff_t cw = fmt == RKNNX_LB_NV12 ? w : w / 2;
        p.matrix = (int)rnd(2);
        p.src_row = w + rnd(9);
        p.uv_row = cw + rnd(9);
        src_n = (size_t)((h - 1) * p.src_row + w);
        src = xmalloc(src_n);
        size_t uv_n = (size_t)((h / 2 - 1) * p.uv_row + cw);
        uvbuf = xmalloc(uv_n);
        for (size_t i = 0; i < uv_n; i++)
            uvbuf[i] = (unsigned char)rnd(256);
        if (fmt == RKNNX_LB_I420) {
            p.v_row = cw + rnd(9);
            size_t v_n = (size_t)((h / 2 - 1) * p.v_row + cw);
            vbuf = xmalloc(v_n);
            for (size_t i = 0; i < v_n; i++)
                vbuf[i] = (unsigned char)rnd(256);
            p.v = vbuf;
        }
        p.src = src;
        p.uv = uvbuf;
    } else {
        p.src_px = rnd(3) ? 3 : 3 + (ptrdiff_t)rnd(4);
        p.src_ch = 1;
        const ptrdiff_t row = w * p.src_px + (ptrdiff_t)rnd(7);
        src_n = (size_t)((h - 1) * row + (w - 1) * p.src_px + 3);
        src = xmalloc(src_n);
        if (rnd(4) == 0) {              /* rows read bottom up */
            p.src_row = -row;
            p.src = src + (h - 1) * row;
        } else {
            p.src_row = row;
            p.src = src;
        }
    }
    for (size_t i = 0; i < src_n; i++)
        src[i] = (unsigned char)rnd(256);
    /* the geometry */
    const double s = (double)W / w < (double)H / h ? (double)W / w : (double)H / h;
    p.nw = (ptrdiff_t)(w * s + 0.5);
    p.nh = (ptrdiff_t)(h * s + 0.5);
    p.nw = p.nw < 1 ? 1 : p.nw > W ? W : p.nw;
    p.nh = p.nh < 1 ? 1 : p.nh > H ? H : p.nh;
    p.left = (W - p.nw) / 2;
    p.top = (H - p.nh) / 2;
    p.swap_rb = (int)rnd(2);
    for (int c = 0; c < 3; c++)
        p.pad[c] = (unsigned char)rnd(256);
    unsigned char lut[768];
    for (int i = 0; i < 768; i++)
        lut[i] = (unsigned char)rnd(256);
    p.lut = rnd(3) == 0 ? lut : NULL;
    /* the output: packed, NHWC rows with padding, or NCHW planes; exact size */
    const int kind = (int)rnd(3);
    size_t dst_n;
    if (kind == 2) {
        p.dst_px = 1;
        p.dst_row = W;
        for (int c = 0; c < 3; c++)
            p.dst_ch[c] = c * W * H;
        dst_n = (size_t)(3 * W * H);
    } else {
        p.dst_px = 3;
        p.dst_row = 3 * (W + (kind ? (ptrdiff_t)rnd(17) : 0));
        for (int c = 0; c < 3; c++)
            p.dst_ch[c] = c;
        dst_n = (size_t)((H - 1) * p.dst_row + 3 * W);
    }
    unsigned char *want = xmalloc(dst_n), *got = xmalloc(dst_n);
    memset(want, 0xA5, dst_n);
    p.dst = want;
    rknnx_k_set_path(0);
    check(rknnx_lb_run(&p) == RKNNX_LB_OK, "run", (long)w, (long)h);
    /* inside the region, BGR without a table: letterbox.h's expression */
    if (fmt == RKNNX_LB_BGR && !p.lut)
        for (ptrdiff_t y = 0; y < p.nh; y++)
            for (ptrdiff_t x = 0; x < p.nw; x++)
                for (int c = 0; c < 3; c++)
                    check(want[(y + p.top) * p.dst_row + (x + p.left) * p.dst_px + p.dst_ch[c]]
                          == reference(&p, x, y, c), "the documented arithmetic", (long)x,
                          (long)(w * 1000 + h));
    /* the row padding is untouched; outside the region, the pad bytes */
    for (ptrdiff_t y = 0; y < H; y++)
        for (ptrdiff_t x = 0; x < W; x++)
            for (int c = 0; c < 3; c++) {
                const unsigned char b = want[y * p.dst_row + x * p.dst_px + p.dst_ch[c]];
                const int inside = y >= p.top && y < p.top + p.nh && x >= p.left
                                   && x < p.left + p.nw;
                if (!inside)
                    check(b == p.pad[c], "pad byte", (long)x, (long)y);
            }
    if (kind == 1)
        for (ptrdiff_t y = 0; y + 1 < H; y++)
            for (ptrdiff_t k = 3 * W; k < p.dst_row; k++)
                check(want[y * p.dst_row + k] == 0xA5, "row padding", (long)y, (long)k);
    for (int level = 1; level <= 2; level++) {
        memset(got, 0xA5, dst_n);
        p.dst = got;
        rknnx_k_set_path(level);
        check(rknnx_lb_run(&p) == RKNNX_LB_OK, "run", (long)level, 0);
        check(memcmp(got, want, dst_n) == 0, "path equals the plain one", (long)level,
              (long)(w * 1000 + h));
    }
    rknnx_k_set_path(2);
    free(want);
    free(got);
    free(src);
    free(uvbuf);
    free(vbuf);
}

/* letterbox.h's YUV -> BGR sums, from its text: channel c (B, G, R) of (Y, U, V) */
static unsigned char yuv_reference(int matrix, int Y, int U, int V, int c)
{
    static const int32_t k[2][5] = {{1220542, 1673527, -852492, -409993, 2116026},
                                    {1220945, 1879825, -558796, -223607, 2215014}};
    const int32_t *m = k[matrix];
    const int32_t y = (Y < 16 ? 0 : Y - 16) * m[0], u = U - 128, v = V - 128;
    const int32_t s = c == 0 ? y + m[4] * u : c == 1 ? y + m[2] * v + m[3] * u : y + m[1] * v;
    const int32_t r = (s + (1 << 19)) >> 20;
    return (unsigned char)(r < 0 ? 0 : r > 255 ? 255 : r);
}

/* Every (Y, U, V): per V a 512 x 128 frame, pixel (2i + a, 2j + b) of Y 4j + 2b + a and
   U i, resized 1:1 into a packed output; each byte against yuv_reference. */
static void yuv_all(int fmt, int matrix, int level)
{
    const ptrdiff_t w = 512, h = 128;
    unsigned char *y = xmalloc((size_t)(w * h)), *u = xmalloc((size_t)(w * h / 2));
    unsigned char *v = xmalloc((size_t)(w / 2 * h / 2)), *o = xmalloc((size_t)(3 * w * h));
    for (ptrdiff_t r = 0; r < h; r++)
        for (ptrdiff_t x = 0; x < w; x++)
            y[r * w + x] = (unsigned char)(4 * (r >> 1) + 2 * (r & 1) + (x & 1));
    rknnx_lb_params p;
    memset(&p, 0, sizeof p);
    p.fmt = fmt;
    p.w = p.W = p.nw = w;
    p.h = p.H = p.nh = h;
    p.src = y;
    p.src_row = w;
    p.uv = u;
    p.uv_row = fmt == RKNNX_LB_NV12 ? w : w / 2;
    p.v = fmt == RKNNX_LB_I420 ? v : NULL;
    p.v_row = w / 2;
    p.matrix = matrix;
    p.dst = o;
    p.dst_row = 3 * w;
    p.dst_px = 3;
    p.dst_ch[1] = 1;
    p.dst_ch[2] = 2;
    rknnx_k_set_path(level);
    long bad = 0;
    for (int V = 0; V < 256; V++) {
        for (ptrdiff_t r = 0; r < h / 2; r++)
            for (ptrdiff_t i = 0; i < w / 2; i++) {
                if (fmt == RKNNX_LB_NV12) {
                    u[r * w + 2 * i] = (unsigned char)i;
                    u[r * w + 2 * i + 1] = (unsigned char)V;
                } else {
                    u[r * (w / 2) + i] = (unsigned char)i;
                    v[r * (w / 2) + i] = (unsigned char)V;
                }
            }
        memset(o, 0, (size_t)(3 * w * h));
        p.swap_rb = V & 1;
        check(rknnx_lb_run(&p) == RKNNX_LB_OK, "run (every YUV)", (long)fmt, (long)V);
        for (ptrdiff_t r = 0; r < h; r++)
            for (ptrdiff_t x = 0; x < w; x++)
                for (int c = 0; c < 3; c++)
                    bad += o[3 * (r * w + x) + (p.swap_rb ? 2 - c : c)]
                           != yuv_reference(matrix, y[r * w + x], (int)(x >> 1), V, c);
    }
    check(bad == 0, "every (Y, U, V): letterbox.h's sums", (long)(fmt * 100 + matrix * 10 + level),
          bad);
    rknnx_k_set_path(2);
    free(y);
    free(u);
    free(v);
    free(o);
}

/* 2:1 both ways from NV12 and I420 (the one-pass path on AVX2) at widths with and without
   a vector step's tail, some with a left pad column, packed and NCHW outputs, each swap:
   every output byte is the 2x2 block's (a + b + c + d + 2) >> 2 of yuv_reference's bytes,
   on each path of the dispatch. */
static void yuv_halves(void)
{
    static const ptrdiff_t sizes[][2] = {{2, 2}, {32, 4}, {34, 6}, {64, 2}, {98, 10},
                                         {1280, 8}, {1282, 4}};
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++)
        for (int fmt = RKNNX_LB_NV12; fmt <= RKNNX_LB_I420; fmt++)
            for (int level = 0; level <= 2; level++) {
                const ptrdiff_t w = sizes[si][0], h = sizes[si][1];
                const ptrdiff_t cw = fmt == RKNNX_LB_NV12 ? w : w / 2, pad = rnd(2);
                rknnx_lb_params p;
                memset(&p, 0, sizeof p);
                p.fmt = fmt;
                p.w = w;
                p.h = h;
                p.nw = w / 2;
                p.nh = h / 2;
                p.W = p.nw + pad;
                p.H = p.nh;
                p.left = pad;
                p.matrix = (int)rnd(2);
                p.swap_rb = (int)rnd(2);
                p.src_row = w + rnd(5);
                p.uv_row = cw + rnd(5);
                p.v_row = cw + rnd(5);
                const size_t yn = (size_t)((h - 1) * p.src_row + w);
                const size_t un = (size_t)((h / 2 - 1) * p.uv_row + cw);
                const size_t vn = (size_t)((h / 2 - 1) * p.v_row + cw);
                unsigned char *y = xmalloc(yn), *u = xmalloc(un), *v = xmalloc(vn);
                for (size_t i = 0; i < yn; i++)
                    y[i] = (unsigned char)rnd(256);
                for (size_t i = 0; i < un; i++)
                    u[i] = (unsigned char)rnd(256);
                for (size_t i = 0; i < vn; i++)
                    v[i] = (unsigned char)rnd(256);
                p.src = y;
                p.uv = u;
                p.v = fmt == RKNNX_LB_I420 ? v : NULL;
                const int planes = (int)rnd(2);
                size_t dn;
                if (planes) {
                    p.dst_px = 1;
                    p.dst_row = p.W;
                    for (int c = 0; c < 3; c++)
                        p.dst_ch[c] = c * p.W * p.H;
                    dn = (size_t)(3 * p.W * p.H);
                } else {
                    p.dst_px = 3;
                    p.dst_row = 3 * p.W;
                    p.dst_ch[1] = 1;
                    p.dst_ch[2] = 2;
                    dn = (size_t)(3 * p.W * p.H);
                }
                unsigned char *o = xmalloc(dn);
                p.dst = o;
                rknnx_k_set_path(level);
                check(rknnx_lb_run(&p) == RKNNX_LB_OK, "run (2:1 YUV)", (long)w, (long)level);
                long bad = 0;
                for (ptrdiff_t r = 0; r < p.nh; r++)
                    for (ptrdiff_t x = 0; x < p.nw; x++) {
                        const ptrdiff_t cy = r * p.uv_row;
                        const int U = fmt == RKNNX_LB_NV12 ? u[cy + 2 * x] : u[cy + x];
                        const int V = fmt == RKNNX_LB_NV12 ? u[cy + 2 * x + 1]
                                                           : v[r * p.v_row + x];
                        for (int c = 0; c < 3; c++) {
                            int sum = 2;
                            for (int k = 0; k < 4; k++)
                                sum += yuv_reference(p.matrix,
                                                     y[(2 * r + (k >> 1)) * p.src_row + 2 * x
                                                       + (k & 1)], U, V, c);
                            const int oc = p.swap_rb ? 2 - c : c;
                            bad += o[r * p.dst_row + (x + pad) * p.dst_px + p.dst_ch[oc]]
                                   != sum >> 2;
                        }
                    }
                check(bad == 0, "2:1 YUV: the 2x2 means of the conversion",
                      (long)(w * 100 + fmt * 10 + level), bad);
                free(y);
                free(u);
                free(v);
                free(o);
            }
    rknnx_k_set_path(2);
}

int main(void)
{
    for (int fmt = RKNNX_LB_NV12; fmt <= RKNNX_LB_I420; fmt++)
        for (int matrix = 0; matrix < 2; matrix++)
            for (int level = 0; level <= 2; level++)
                yuv_all(fmt, matrix, level);
    yuv_halves();
    for (int i = 0; i < 300; i++)
        one(i % 4 == 2 ? RKNNX_LB_NV12 : i % 4 == 3 ? RKNNX_LB_I420 : RKNNX_LB_BGR);
    /* refusals: an odd NV12 frame, a region outside the output, a 1-pixel frame */
    unsigned char b[64] = {0};
    rknnx_lb_params p;
    memset(&p, 0, sizeof p);
    p.fmt = RKNNX_LB_NV12;
    p.w = 3;
    p.h = 2;
    p.src = p.uv = p.dst = b;
    p.W = p.H = p.nw = p.nh = 2;
    check(rknnx_lb_run(&p) == RKNNX_LB_EINVAL, "odd NV12 refused", 0, 0);
    p.fmt = RKNNX_LB_BGR;
    p.left = 1;
    check(rknnx_lb_run(&p) == RKNNX_LB_EINVAL, "region outside refused", 0, 0);
    p.left = 0;
    p.w = 1;
    check(rknnx_lb_run(&p) == RKNNX_LB_EINVAL, "1-pixel frame refused", 0, 0);
    p.w = 2;
    p.fmt = RKNNX_LB_I420;
    check(rknnx_lb_run(&p) == RKNNX_LB_EINVAL, "I420 without a V plane refused", 0, 0);
    p.v = b;
    p.matrix = 2;
    check(rknnx_lb_run(&p) == RKNNX_LB_EINVAL, "an unknown matrix refused", 0, 0);
    p.matrix = RKNNX_LB_BT709;
    check(rknnx_lb_run(&p) == RKNNX_LB_OK, "a 2x2 I420 frame, BT.709", 0, 0);
    printf("letterbox_check: %ld checks, %ld failed\n", checks, failed);
    return failed != 0;
}
