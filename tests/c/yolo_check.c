/*
 * The YOLO decoders' C (rknn_ext/kernels/yolo.c) as a C program;
 * tests/vision/test_decode_c.py builds it with the kernels (plain, and under ASan/UBSan
 * where the compiler can) and runs it.
 *
 * A yolov8-style scale (DFL box [64, H, W], class codes [nc, H, W], score_sum) with
 * planted objects, in buffers of the exact size each layout needs (the sanitizers see
 * any read past them): NCHW, NHWC with a padded pixel stride, NC1HWC2 with C2 16 and 8;
 * every layout and every kernel path (rknnx_k_set_path 0, 1, 2) keeps the same boxes,
 * the planted ones; the same with the score_sum skipping off, with a yolov5 head, and
 * every cell passing (bounded by max_det).  The masks of boxes reaching past the input,
 * of zero size and of NaN coordinates stay inside their buffer; random masks over int8
 * (NCHW, NC1HWC2), float16 and float32 protos equal, on every path, a plain
 * per-pixel reference (sigmoid(coef . proto) cell by cell, the bilinear expression per
 * pixel) byte for byte, every byte of the output written (rknnx_y_masks_into on a
 * zeroed output, the same bytes).
 * Prints "yolo_check: N checks, F failed".
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "kernels.h"
#include "yolo.h"

enum { H = 20, W = 24, NC = 12, NB = 64, NOBJ = 5 };

/* logical int8 tensors [C][H][W] */
static signed char box_q[NB][H][W], cls_q[NC][H][W], sum_q[1][H][W];
static float lut_box[256], lut_cls[256];

static const int obj_y[NOBJ] = {2, 5, 9, 14, 18}, obj_x[NOBJ] = {3, 20, 11, 7, 22};
static const int obj_c[NOBJ] = {0, 4, 7, 11, 2};

static void planted(void)
{
    srand(7);
    for (int c = 0; c < NB; c++)
        for (int y = 0; y < H; y++)
            for (int x = 0; x < W; x++)
                box_q[c][y][x] = (signed char)(rand() % 60 - 30);
    for (int c = 0; c < NC; c++)
        for (int y = 0; y < H; y++)
            for (int x = 0; x < W; x++)
                cls_q[c][y][x] = (signed char)(-128 + rand() % 8);
    for (int i = 0; i < NOBJ; i++)
        cls_q[obj_c[i]][obj_y[i]][obj_x[i]] = (signed char)(60 + 10 * i);
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) {
            float s = 0;
            for (int c = 0; c < NC; c++)
                s += (cls_q[c][y][x] + 128) / 255.0f;
            int q = (int)lrintf((s > 1 ? 1 : s) * 255.0f) - 128;
            sum_q[0][y][x] = (signed char)(q > 127 ? 127 : q);
        }
    for (int u = 0; u < 256; u++) {
        lut_box[u] = ((float)(signed char)u - 1.0f) * 0.05f;
        lut_cls[u] = ((float)(signed char)u + 128.0f) * (1.0f / 255.0f);
    }
}

/* a [C][H][W] tensor in a layout: 0 NCHW, 1 NHWC (pixel stride padded to 16), 2/3
   NC1HWC2 C2 16/8; the buffer is malloc'ed at its exact size */
static rknnx_y_tensor lay(const signed char *src, int C, int layout, char **buf,
                          const float *lut)
{
    rknnx_y_tensor t;
    memset(&t, 0, sizeof t);
    t.dtype = RKNNX_Y_I8;
    t.C = C;
    t.H = H;
    t.W = W;
    t.lut = lut;
    t.scale = lut == lut_box ? 0.05f : 1.0f / 255.0f;
    size_t n;
    if (layout == 0) {
        n = (size_t)C * H * W;
        *buf = xmalloc(n);
        memcpy(*buf, src, n);
        t.C2 = C;
        t.s_c2 = H * W;
        t.s_y = W;
        t.s_x = 1;
    } else if (layout == 1) {
        int cp = (C + 15) / 16 * 16;
        n = (size_t)(H * W - 1) * cp + C;       /* the last pixel holds C, no padding */
        *buf = xmalloc(n);
        memset(*buf, 0x55, n);
        for (int c = 0; c < C; c++)
            for (int p = 0; p < H * W; p++)
                (*buf)[(size_t)p * cp + c] = src[(size_t)c * H * W + p];
        t.C2 = C;
        t.s_c2 = 1;
        t.s_y = (ptrdiff_t)W * cp;
        t.s_x = cp;
    } else {
        int c2 = layout == 2 ? 16 : 8, c1 = (C + c2 - 1) / c2;
        n = (size_t)c1 * H * W * c2;
        *buf = xmalloc(n);
        memset(*buf, 0x55, n);
        for (int c = 0; c < C; c++)
            for (int p = 0; p < H * W; p++)
                (*buf)[((size_t)(c / c2) * H * W + p) * c2 + c % c2] =
                    src[(size_t)c * H * W + p];
        t.C2 = c2;
        t.s_c1 = (ptrdiff_t)H * W * c2;
        t.s_c2 = 1;
        t.s_y = (ptrdiff_t)W * c2;
        t.s_x = c2;
    }
    t.base = *buf;
    return t;
}

static int least(const float *lut, float conf)
{
    for (int u = 0; u < 256; u++)
        if (lut[u ^ 0x80] >= conf)
            return u;
    return 256;
}

static void run_v8(int layout, int path, int use_sum, float conf, ptrdiff_t max_det,
                   float *boxes, float *scores, int32_t *classes, int32_t *index,
                   ptrdiff_t *n)
{
    char *b1, *b2, *b3;
    rknnx_y_scale sc;
    rknnx_y_spec sp;
    memset(&sc, 0, sizeof sc);
    memset(&sp, 0, sizeof sp);
    sc.box = lay(&box_q[0][0][0], NB, layout, &b1, lut_box);
    sc.cls = lay(&cls_q[0][0][0], NC, layout, &b2, lut_cls);
    sc.sum = lay(&sum_q[0][0][0], 1, layout, &b3, lut_cls);
    if (!use_sum)
        sc.sum.base = NULL;
    sc.na = 1;
    sc.sx = sc.sy = 8.0f;
    sc.qthr = least(lut_cls, conf);
    sc.qsum = use_sum ? 0 : -1;
    for (int u = 0; use_sum && u < 256; u++)
        if (lut_cls[u ^ 0x80] + 2.0f / 255.0f >= conf) {
            sc.qsum = u;
            break;
        }
    sc.fsum = -INFINITY;
    sp.family = RKNNX_Y_DFL;
    sp.nscales = 1;
    sp.scales = &sc;
    sp.nc = NC;
    sp.reg_max = 16;
    sp.conf = conf;
    sp.iou = 0.45f;
    sp.max_det = max_det;
    sp.max_nms = 30000;
    int old = rknnx_k_set_path(path);
    *n = rknnx_y_decode(&sp, boxes, scores, classes, index);
    rknnx_k_set_path(old);
    free(b1);
    free(b2);
    free(b3);
}

static void test_v8(void)
{
    float b0[4 * NOBJ + 4], s0[NOBJ + 1], b[4 * 300], s[300];
    int32_t c0[NOBJ + 1], i0[NOBJ + 1], c[300], ix[300];
    ptrdiff_t n0, n;
    run_v8(0, 0, 1, 0.2f, NOBJ + 1, b0, s0, c0, i0, &n0);
    check(n0 == NOBJ, "v8: the planted objects kept", (long)n0, NOBJ);
    for (ptrdiff_t k = 0; k < n0; k++) {
        int o = NOBJ - 1 - (int)k;          /* the highest code first */
        check(c0[k] == obj_c[o] && i0[k] == obj_y[o] * W + obj_x[o], "v8: planted box",
              (long)c0[k], (long)i0[k]);
        check(isfinite(b0[4 * k]) && b0[4 * k + 2] >= b0[4 * k], "v8: box order", (long)k, 0);
    }
    for (int layout = 0; layout < 4; layout++)
        for (int path = 0; path <= 2; path++)
            for (int use_sum = 0; use_sum <= 1; use_sum++) {
                run_v8(layout, path, use_sum, 0.2f, NOBJ + 1, b, s, c, ix, &n);
                check(n == n0, "v8: same count", (long)layout, (long)path);
                for (ptrdiff_t k = 0; k < n && k < n0; k++)
                    check(c[k] == c0[k] && ix[k] == i0[k] && s[k] == s0[k] &&
                              memcmp(b + 4 * k, b0 + 4 * k, 16) == 0,
                          "v8: same box", (long)layout, (long)path);
            }
    /* every cell passes: bounded by max_det */
    for (int layout = 0; layout < 4; layout++) {
        run_v8(layout, 1, 1, 0.0f, 300, b, s, c, ix, &n);
        check(n > NOBJ && n <= 300, "v8: every cell passes, bounded", (long)n, 300);
        run_v8(layout, 1, 1, 0.0f, 0, b, s, c, ix, &n);
        check(n == 0, "v8: max_det 0", (long)n, 0);
    }
}

static void test_v5(void)
{
    /* one scale of 3 anchors x (5 + NC) channels: objectness and classes after Sigmoid */
    enum { G = 5 + NC, C = 3 * G };
    static signed char q[C][H][W];
    float b0[4 * 16], s0[16], b[4 * 16], s[16];
    int32_t c0[16], i0[16], c[16], ix[16];
    ptrdiff_t n0 = -1, n;
    for (int ch = 0; ch < C; ch++)
        for (int y = 0; y < H; y++)
            for (int x = 0; x < W; x++)
                q[ch][y][x] = (signed char)(-128 + rand() % (ch % G == 4 ? 20 : 250));
    q[1 * G + 4][4][4] = 120;
    q[1 * G + 5 + 3][4][4] = 126;
    q[2 * G + 4][15][20] = 110;
    q[2 * G + 5 + 9][15][20] = 127;
    for (int layout = 0; layout < 4; layout++)
        for (int path = 0; path <= 2; path++) {
            char *buf;
            rknnx_y_scale sc;
            rknnx_y_spec sp;
            memset(&sc, 0, sizeof sc);
            memset(&sp, 0, sizeof sp);
            sc.box = sc.cls = lay(&q[0][0][0], C, layout, &buf, lut_cls);
            sc.na = 3;
            sc.group = G;
            sc.obj_off = 4;
            sc.cls_off = 5;
            for (int k = 0; k < 6; k++)
                sc.anchors[k] = 10.0f + 5.0f * k;
            sc.sx = sc.sy = 8.0f;
            sc.qsum = -1;
            sc.qobj = least(lut_cls, 0.5f);     /* obj x best <= obj x 1 */
            sp.family = RKNNX_Y_ANCHOR;
            sp.nscales = 1;
            sp.scales = &sc;
            sp.nc = NC;
            sp.reg_max = 16;
            sp.conf = 0.5f;
            sp.iou = 0.45f;
            sp.max_det = 16;
            sp.max_nms = 30000;
            int old = rknnx_k_set_path(path);
            n = rknnx_y_decode(&sp, layout || path ? b : b0, layout || path ? s : s0,
                               layout || path ? c : c0, layout || path ? ix : i0);
            rknnx_k_set_path(old);
            free(buf);
            if (!layout && !path) {
                n0 = n;
                check(n == 2 && c0[0] == 3 && c0[1] == 9 &&
                          i0[0] == (1 * H + 4) * W + 4 && i0[1] == (2 * H + 15) * W + 20,
                      "v5: the planted objects", (long)n, (long)c0[0]);
                continue;
            }
            check(n == n0, "v5: same count", (long)layout, (long)path);
            for (ptrdiff_t k = 0; k < n && k < n0; k++)
                check(c[k] == c0[k] && ix[k] == i0[k] && s[k] == s0[k] &&
                          memcmp(b + 4 * k, b0 + 4 * k, 16) == 0,
                      "v5: same box", (long)layout, (long)path);
        }
}

static void test_masks(void)
{
    enum { PH = 6, PW = 7, NM = 4, MH = 24, MW = 28, N = 5 };
    static signed char p[NM][PH][PW];
    float coef[N * NM], boxes[4 * N] = {-10, -10, 8, 9,    /* past the top-left */
                                        20, 18, 60, 90,    /* past the bottom-right */
                                        5, 5, 5, 12,       /* zero width */
                                        NAN, 1, 10, 10,    /* NaN */
                                        0, 0, MW, MH};     /* the whole input */
    char *buf;
    for (int k = 0; k < NM; k++)
        for (int y = 0; y < PH; y++)
            for (int x = 0; x < PW; x++)
                p[k][y][x] = (signed char)(rand() % 256 - 128);
    for (int i = 0; i < N * NM; i++)
        coef[i] = (float)(rand() % 200 - 100) / 50.0f;
    {
        rknnx_y_tensor t;
        unsigned char *out = xmalloc((size_t)N * MH * MW);
        /* the proto NCHW in a buffer of its exact size */
        memset(&t, 0, sizeof t);
        buf = xmalloc(sizeof p);
        memcpy(buf, p, sizeof p);
        t.base = buf;
        t.dtype = RKNNX_Y_I8;
        t.C = t.C2 = NM;
        t.H = PH;
        t.W = PW;
        t.s_c2 = PH * PW;
        t.s_y = PW;
        t.s_x = 1;
        t.lut = lut_box;
        int r = rknnx_y_masks(&t, coef, NM, boxes, N, MH, MW, out);
        check(r == 0, "masks: done", r, 0);
        long outside = 0, inside = 0;
        for (int i = 0; i < N; i++)
            for (int y = 0; y < MH; y++)
                for (int x = 0; x < MW; x++) {
                    unsigned char v = out[((size_t)i * MH + y) * MW + x];
                    const float *bx = boxes + 4 * i;
                    int in = x >= bx[0] && x < bx[2] && y >= bx[1] && y < bx[3];
                    outside += v && !in;
                    inside += v;
                    check(v <= 1, "masks: 0/1", v, 0);
                }
        check(outside == 0, "masks: zero outside the boxes", outside, 0);
        check(inside > 0, "masks: something inside", inside, 0);
        free(out);
        free(buf);
    }
}

/* ---- masks: the per-pixel reference ----------------------------------------------- */

static float ref_val(const rknnx_y_tensor *t, ptrdiff_t c, ptrdiff_t y, ptrdiff_t x)
{
    const char *p = t->base + (c / t->C2) * t->s_c1 + (c % t->C2) * t->s_c2 + y * t->s_y
                    + x * t->s_x;
    if (t->dtype == RKNNX_Y_I8 || t->dtype == RKNNX_Y_U8)
        return t->lut[*(const unsigned char *)p];
    if (t->dtype == RKNNX_Y_F16) {
        uint16_t h;
        memcpy(&h, p, 2);
        return rknnx_f16_to_f32(h);
    }
    float f;
    memcpy(&f, p, 4);
    return f;
}

static void ref_src(ptrdiff_t d, float scale, ptrdiff_t in, ptrdiff_t *i0, ptrdiff_t *i1,
                    float *l1)
{
    float src = scale * ((float)d + 0.5f) - 0.5f;
    if (src < 0.0f)
        src = 0.0f;
    ptrdiff_t i = (ptrdiff_t)src;
    if (i > in - 1)
        i = in - 1;
    *i0 = i;
    *i1 = i < in - 1 ? i + 1 : i;
    *l1 = src - (float)i;
}

/* every pixel of every mask: zero outside the box, else the expression */
static void ref_masks(const rknnx_y_tensor *t, const float *coef, ptrdiff_t nm,
                      const float *boxes, ptrdiff_t n, ptrdiff_t MHh, ptrdiff_t MWw,
                      unsigned char *out)
{
    const float fy = (float)t->H / (float)MHh, fx = (float)t->W / (float)MWw;
    for (ptrdiff_t i = 0; i < n; i++) {
        const float *b = boxes + 4 * i, *k = coef + nm * i;
        for (ptrdiff_t r = 0; r < MHh; r++)
            for (ptrdiff_t c = 0; c < MWw; c++) {
                unsigned char *o = out + ((size_t)i * (size_t)MHh + (size_t)r) * (size_t)MWw
                                   + (size_t)c;
                *o = 0;
                if (!((float)c >= b[0] && (float)c < b[2] && (float)r >= b[1]
                      && (float)r < b[3]))
                    continue;
                ptrdiff_t y0, y1, x0, x1;
                float h1, w1, s[2][2];
                ref_src(r, fy, t->H, &y0, &y1, &h1);
                ref_src(c, fx, t->W, &x0, &x1, &w1);
                for (int a = 0; a < 2; a++)
                    for (int e = 0; e < 2; e++) {
                        float acc = 0.0f;
                        for (ptrdiff_t j = 0; j < nm; j++)
                            acc += k[j] * ref_val(t, j, a ? y1 : y0, e ? x1 : x0);
                        s[a][e] = 1.0f / (1.0f + expf(-acc));
                    }
                const float h0 = 1.0f - h1, w0 = 1.0f - w1;
                float v = h0 * (w0 * s[0][0] + w1 * s[0][1]) + h1 * (w0 * s[1][0] + w1 * s[1][1]);
                *o = v > 0.5f;
            }
    }
}

/* random protos in each layout and dtype, random boxes: every path equals the reference */
static void test_masks_paths(void)
{
    static float lut[256];
    for (int u = 0; u < 256; u++)
        lut[u] = ((float)(signed char)u - 3.0f) * 0.031f;
    for (int trial = 0; trial < 48; trial++) {
        const int kind = trial % 4;     /* int8 NCHW, int8 NC1HWC2 16, f16 NHWC, f32 NCHW */
        const ptrdiff_t nm = kind == 1 ? 32 : 1 + rand() % 12;
        const ptrdiff_t ph = 3 + rand() % 20, pw = 3 + rand() % 20;
        const ptrdiff_t mh = ph * (1 + rand() % 4) + rand() % 3, mw = pw * (1 + rand() % 4);
        const ptrdiff_t n = 1 + rand() % 6;
        rknnx_y_tensor t;
        memset(&t, 0, sizeof t);
        t.C = nm;
        t.H = ph;
        t.W = pw;
        size_t esz = kind == 3 ? 4 : kind == 2 ? 2 : 1, bytes;
        if (kind == 1) {
            t.C2 = 16;
            t.s_x = 16;
            t.s_y = 16 * pw;
            t.s_c1 = 16 * pw * ph;
            t.s_c2 = 1;
            bytes = (size_t)(2 * 16 * pw * ph);
        } else if (kind == 2) {
            t.C2 = nm;
            t.s_c2 = 2;
            t.s_x = 2 * (nm + 1);                       /* a padded pixel stride */
            t.s_y = t.s_x * pw;
            bytes = (size_t)(t.s_y * ph);
        } else {
            t.C2 = nm;
            t.s_c2 = (ptrdiff_t)esz * ph * pw;
            t.s_y = (ptrdiff_t)esz * pw;
            t.s_x = (ptrdiff_t)esz;
            bytes = esz * (size_t)(nm * ph * pw);
        }
        t.dtype = kind == 3 ? RKNNX_Y_F32 : kind == 2 ? RKNNX_Y_F16 : RKNNX_Y_I8;
        t.lut = lut;
        char *pb = xmalloc(bytes);
        for (size_t i = 0; i < bytes; i += esz) {
            if (kind == 3) {
                float f = (float)(rand() % 2001 - 1000) / 300.0f;
                memcpy(pb + i, &f, 4);
            } else if (kind == 2) {
                uint16_t h = rknnx_f32_to_f16((float)(rand() % 2001 - 1000) / 300.0f);
                memcpy(pb + i, &h, 2);
            } else {
                pb[i] = (char)(rand() % 256);
            }
        }
        t.base = pb;
        float *coef = xmalloc(sizeof(float) * (size_t)(n * nm));
        float *boxes = xmalloc(sizeof(float) * (size_t)(4 * n));
        /* every third trial: coefficients so small that every value is within a few ulps
           of 0.5, so that any other rounding anywhere flips pixels */
        const float cs = trial % 3 == 2 ? 1e-7f : 1.0f;
        for (ptrdiff_t i = 0; i < n * nm; i++)
            coef[i] = (float)(rand() % 401 - 200) / 150.0f * cs;
        for (ptrdiff_t i = 0; i < n; i++) {
            float x1 = (float)(rand() % (mw + 20)) - 10.0f + (float)(rand() % 8) / 8.0f;
            float y1 = (float)(rand() % (mh + 20)) - 10.0f + (float)(rand() % 8) / 8.0f;
            boxes[4 * i] = x1;
            boxes[4 * i + 1] = y1;
            boxes[4 * i + 2] = x1 + (float)(rand() % (mw + 1)) + 0.3f;
            boxes[4 * i + 3] = y1 + (float)(rand() % (mh + 1)) + 0.6f;
        }
        const size_t on = (size_t)(n * mh * mw);
        unsigned char *want = xmalloc(on), *got = xmalloc(on);
        ref_masks(&t, coef, nm, boxes, n, mh, mw, want);
        for (int level = 0; level <= 2; level++) {
            memset(got, 0xA5, on);
            rknnx_k_set_path(level);
            check(rknnx_y_masks(&t, coef, nm, boxes, n, mh, mw, got) == 0, "masks: run",
                  level, trial);
            check(memcmp(got, want, on) == 0, "masks: path equals the reference", level,
                  trial);
        }
        memset(got, 0, on);             /* a zeroed output: only the boxes written */
        check(rknnx_y_masks_into(&t, coef, nm, boxes, n, mh, mw, got, 1) == 0,
              "masks_into: run", trial, 0);
        check(memcmp(got, want, on) == 0, "masks_into on zeros equals the reference", trial, 0);
        rknnx_k_set_path(2);
        free(pb);
        free(coef);
        free(boxes);
        free(want);
        free(got);
    }
}

int main(void)
{
    planted();
    test_v8();
    test_v5();
    test_masks();
    test_masks_paths();
    printf("yolo_check: %ld checks, %ld failed\n", checks, failed);
    return failed != 0;
}
