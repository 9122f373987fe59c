/*
 * rknnx: the YOLO decoders and masks (yolo.h says what each function does).
 *
 * The scan reads only what decides: the score_sum (or objectness) code of a cell first,
 * then the best class code of the cells that can still pass, as flipped 8-bit codes
 * (int8 ^ 0x80, so that unsigned order is the codes' order); the planar rows of an
 * NCHW class tensor go 16 cells at a time with the 128-bit max (SSE2 / NEON: memory
 * bound, no wider path pays), the channel runs of NHWC and NC1HWC2 16 channels at a
 * time.  A cell's values are dequantized only once it is a candidate, its box only when
 * the NMS reaches it.  The dispatch is the kernels' (rknnx_k_path, kernels.c): path 0
 * takes the plain loops.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels.h"
#include "yolo.h"

#if RKNNX_K_VQ
#if defined(__SSE2__)
#include <emmintrin.h>
#define RKNNX_Y_NEON 0
#elif defined(__aarch64__) || defined(__ARM_NEON)
#include <arm_neon.h>
#define RKNNX_Y_NEON 1
#else
#define RKNNX_Y_NEON 0
#endif
typedef unsigned char rknnx_k_v16b __attribute__((vector_size(16)));
#endif

/* ---- reading one value ------------------------------------------------------------ */

static inline const char *y_at(const rknnx_y_tensor *t, ptrdiff_t c, ptrdiff_t y,
                               ptrdiff_t x)
{
    ptrdiff_t o = t->off ? t->off[c] : (c / t->C2) * t->s_c1 + (c % t->C2) * t->s_c2;
    return t->base + o + y * t->s_y + x * t->s_x;
}

void rknnx_y_offsets_into(rknnx_y_tensor *t, ptrdiff_t *off)
{
    for (ptrdiff_t c = 0; c < t->C; c++)
        off[c] = (c / t->C2) * t->s_c1 + (c % t->C2) * t->s_c2;
    t->off = off;
}

/* the channel offsets of t (no division per access); the caller frees them */
static ptrdiff_t *y_offsets(rknnx_y_tensor *t)
{
    ptrdiff_t *off = (ptrdiff_t *)malloc(sizeof(ptrdiff_t) * (size_t)(t->C > 0 ? t->C : 1));
    if (!off)
        return NULL;
    rknnx_y_offsets_into(t, off);
    return off;
}

void rknnx_y_exps(const rknnx_y_tensor *t, float *exps)
{
    for (int d = 0; d < 256; d++)
        exps[d] = expf(-(float)d * t->scale);
}

static inline int y_is8(const rknnx_y_tensor *t)
{
    return t->dtype == RKNNX_Y_I8 || t->dtype == RKNNX_Y_U8;
}

static inline unsigned char y_flip(const rknnx_y_tensor *t)
{
    return t->dtype == RKNNX_Y_I8 ? 0x80 : 0;
}

static inline float y_load(const rknnx_y_tensor *t, const char *p)
{
    switch (t->dtype) {
    case RKNNX_Y_I8:
    case RKNNX_Y_U8:
        return t->lut[*(const unsigned char *)p];
    case RKNNX_Y_I16: {
        int16_t q;
        memcpy(&q, p, 2);
        return ((float)q - t->zp) * t->scale;
    }
    case RKNNX_Y_F16: {
        uint16_t h;
        memcpy(&h, p, 2);
        return rknnx_f16_to_f32(h);
    }
    default: {
        float f;
        memcpy(&f, p, 4);
        return f;
    }
    }
}

static inline float y_val(const rknnx_y_tensor *t, ptrdiff_t c, ptrdiff_t y, ptrdiff_t x)
{
    return y_load(t, y_at(t, c, y, x));
}

static inline float y_sigmoid(float v)
{
    return 1.0f / (1.0f + expf(-v));
}

/* ---- the 128-bit max of flipped codes --------------------------------------------- */

#if RKNNX_K_VQ
static inline rknnx_k_v16b y_max16(rknnx_k_v16b a, rknnx_k_v16b b)
{
#if defined(__SSE2__)
    return (rknnx_k_v16b)_mm_max_epu8((__m128i)a, (__m128i)b);
#elif RKNNX_Y_NEON
    return (rknnx_k_v16b)vmaxq_u8((uint8x16_t)a, (uint8x16_t)b);
#else
    rknnx_k_v16b m = (rknnx_k_v16b)(a > b);
    return (a & m) | (b & ~m);
#endif
}

static inline unsigned y_hmax16(rknnx_k_v16b a)
{
    unsigned char b[16];
    unsigned m = 0;
    memcpy(b, &a, 16);
    for (int i = 0; i < 16; i++)
        m = b[i] > m ? b[i] : m;
    return m;
}
#endif

/* m[x] = max over channels c0 .. c0 + n of the flipped codes of row y; planar tensors
   (s_x == 1) only */
static void y_rowmax_planar(const rknnx_y_tensor *t, ptrdiff_t c0, ptrdiff_t n, ptrdiff_t y,
                            unsigned char *m)
{
    const ptrdiff_t W = t->W;
    const unsigned char flip = y_flip(t);
    memset(m, 0, (size_t)W);
    for (ptrdiff_t c = c0; c < c0 + n; c++) {
        const unsigned char *p = (const unsigned char *)y_at(t, c, y, 0);
        ptrdiff_t x = 0;
#if RKNNX_K_VQ
        if (rknnx_k_path() >= 1) {
            rknnx_k_v16b vf;
            memset(&vf, flip, sizeof vf);
            for (; x + 16 <= W; x += 16) {
                rknnx_k_v16b a, b;
                memcpy(&a, p + x, 16);
                memcpy(&b, m + x, 16);
                b = y_max16(b, a ^ vf);
                memcpy(m + x, &b, 16);
            }
        }
#endif
        for (; x < W; x++) {
            unsigned u = p[x] ^ flip;
            m[x] = u > m[x] ? (unsigned char)u : m[x];
        }
    }
}

/* the max flipped code over channels c0 .. c0 + n of one cell, any layout */
static unsigned y_cellmax(const rknnx_y_tensor *t, ptrdiff_t c0, ptrdiff_t n, ptrdiff_t y,
                          ptrdiff_t x)
{
    const unsigned char flip = y_flip(t);
    unsigned m = 0;
    if (t->s_c2 == 1) {
        /* contiguous runs of channels inside each block */
        const char *cell = t->base + y * t->s_y + x * t->s_x;
        ptrdiff_t c = c0, end = c0 + n;
#if RKNNX_K_VQ
        const int vec = rknnx_k_path() >= 1;
        rknnx_k_v16b acc = {0}, vf;
        memset(&vf, flip, sizeof vf);
#endif
        while (c < end) {
            ptrdiff_t b = c / t->C2, k = c % t->C2;
            ptrdiff_t len = t->C2 - k < end - c ? t->C2 - k : end - c;
            const unsigned char *p = (const unsigned char *)(cell + b * t->s_c1 + k);
            ptrdiff_t i = 0;
#if RKNNX_K_VQ
            if (vec) {
                for (; i + 16 <= len; i += 16) {
                    rknnx_k_v16b a;
                    memcpy(&a, p + i, 16);
                    acc = y_max16(acc, a ^ vf);
                }
            }
#endif
            for (; i < len; i++) {
                unsigned u = p[i] ^ flip;
                m = u > m ? u : m;
            }
            c += len;
        }
#if RKNNX_K_VQ
        if (vec) {
            unsigned v = y_hmax16(acc);
            m = v > m ? v : m;
        }
#endif
        return m;
    }
    for (ptrdiff_t c = c0; c < c0 + n; c++) {
        unsigned u = *(const unsigned char *)y_at(t, c, y, x) ^ flip;
        m = u > m ? u : m;
    }
    return m;
}

/* the first channel (from c0) holding flipped code u */
static ptrdiff_t y_argcode(const rknnx_y_tensor *t, ptrdiff_t c0, ptrdiff_t n, ptrdiff_t y,
                           ptrdiff_t x, unsigned u)
{
    const unsigned char flip = y_flip(t);
    for (ptrdiff_t c = c0; c < c0 + n; c++)
        if ((unsigned)(*(const unsigned char *)y_at(t, c, y, x) ^ flip) == u)
            return c - c0;
    return 0;
}

/* ---- candidates ------------------------------------------------------------------- */

typedef struct {
    float score;
    int32_t cls;
    int32_t idx;      /* candidate index */
    int32_t s, a;     /* scale, anchor */
    int32_t y, x;
} y_cand;

typedef struct {
    y_cand *v;
    size_t n, cap;
} y_cands;

static int y_push(y_cands *c, float score, ptrdiff_t cls, ptrdiff_t idx, int s, int a,
                  ptrdiff_t y, ptrdiff_t x)
{
    if (c->n == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 1024;
        y_cand *v;
        if (cap > ((size_t)-1) / sizeof *v)
            return -1;
        v = (y_cand *)realloc(c->v, cap * sizeof *v);
        if (!v)
            return -1;
        c->v = v;
        c->cap = cap;
    }
    y_cand *e = &c->v[c->n++];
    e->score = score;
    e->cls = (int32_t)cls;
    e->idx = (int32_t)idx;
    e->s = s;
    e->a = a;
    e->y = (int32_t)y;
    e->x = (int32_t)x;
    return 0;
}

static int y_cmp(const void *pa, const void *pb)
{
    const y_cand *a = (const y_cand *)pa, *b = (const y_cand *)pb;
    if (a->score != b->score)
        return a->score > b->score ? -1 : 1;
    return a->idx < b->idx ? -1 : (a->idx > b->idx);
}

/* the candidates of anchor a of scale s; live, m: row buffers of W bytes */
static int y_scan(const rknnx_y_spec *sp, int s, int a, ptrdiff_t idx0, y_cands *out,
                  unsigned char *live, unsigned char *m)
{
    const rknnx_y_scale *sc = &sp->scales[s];
    const rknnx_y_tensor *ct = &sc->cls;
    const ptrdiff_t H = ct->H, W = ct->W, nc = sp->nc;
    const ptrdiff_t c0 = sc->cls_off + a * sc->group;
    const int objfam = sp->family == RKNNX_Y_ANCHOR || sp->family == RKNNX_Y_YOLOX;
    const ptrdiff_t oc = sc->obj_off + a * sc->group;
    const rknnx_y_tensor *st = &sc->sum;
    const int c8 = y_is8(ct);
    const int planar = c8 && ct->s_x == 1;
    const int sum8 = st->base && y_is8(st) && sc->qsum >= 0;
    const int sumf = st->base && !y_is8(st);
    const int obj8 = objfam && c8;
    for (ptrdiff_t y = 0; y < H; y++) {
        ptrdiff_t nlive = 0;
        if (sum8 || obj8) {
            /* one code per cell, along the row: a byte compare */
            const rknnx_y_tensor *t = sum8 ? st : ct;
            const unsigned char *p = (const unsigned char *)y_at(t, sum8 ? 0 : oc, y, 0);
            const unsigned char flip = y_flip(t);
            const unsigned q = (unsigned)(sum8 ? sc->qsum : sc->qobj);
            const ptrdiff_t sx = t->s_x;
            for (ptrdiff_t x = 0; x < W; x++) {
                unsigned char ok = (unsigned)(p[x * sx] ^ flip) >= q;
                live[x] = ok;
                nlive += ok;
            }
            if (sum8 && obj8 && nlive) {
                const unsigned char *o = (const unsigned char *)y_at(ct, oc, y, 0);
                const unsigned char fo = y_flip(ct);
                nlive = 0;
                for (ptrdiff_t x = 0; x < W; x++) {
                    live[x] = live[x] && (int)(o[x * ct->s_x] ^ fo) >= sc->qobj;
                    nlive += live[x];
                }
            }
        } else if (sumf) {
            for (ptrdiff_t x = 0; x < W; x++) {
                live[x] = y_val(st, 0, y, x) >= sc->fsum;
                nlive += live[x];
            }
        } else {
            memset(live, 1, (size_t)W);
            nlive = W;
        }
        if (!nlive)
            continue;
        if (c8) {
            const int rowwise = planar && rknnx_k_path() >= 1 && nlive * 16 >= W;
            if (rowwise)
                y_rowmax_planar(ct, c0, nc, y, m);
            for (ptrdiff_t x = 0; x < W; x++) {
                if (!live[x])
                    continue;
                unsigned u = rowwise ? m[x] : y_cellmax(ct, c0, nc, y, x);
                if ((int)u < sc->qthr)
                    continue;
                ptrdiff_t k = y_argcode(ct, c0, nc, y, x, u);
                unsigned raw = u ^ y_flip(ct);
                float score = sc->score_lut ? sc->score_lut[raw] : ct->lut[raw];
                if (objfam)
                    score = y_val(ct, oc, y, x) * score;
                if (!(score >= sp->conf) || (sp->class_ok && !sp->class_ok[k]))
                    continue;
                if (y_push(out, score, k, idx0 + (a * H + y) * W + x, s, a, y, x))
                    return -1;
            }
        } else {
            for (ptrdiff_t x = 0; x < W; x++) {
                if (!live[x])
                    continue;
                float best = y_val(ct, c0, y, x);
                ptrdiff_t k = 0;
                for (ptrdiff_t c = 1; c < nc; c++) {
                    float v = y_val(ct, c0 + c, y, x);
                    if (v > best) {
                        best = v;
                        k = c;
                    }
                }
                /* a non-finite value never becomes a detection (sigmoid would take an
                   inf logit to 1, the objectness product keep an inf) */
                if (!isfinite(best))
                    continue;
                float score = sp->sigmoid ? y_sigmoid(best) : best;
                if (objfam)
                    score = y_val(ct, oc, y, x) * score;
                if (!isfinite(score) || !(score >= sp->conf) ||
                    (sp->class_ok && !sp->class_ok[k]))
                    continue;
                if (y_push(out, score, k, idx0 + (a * H + y) * W + x, s, a, y, x))
                    return -1;
            }
        }
    }
    return 0;
}

/* ---- boxes ------------------------------------------------------------------------ */

/* the DFL distance of side k: the expected bin under the softmax of its reg_max values;
   exps: the 8-bit tensor's exp(-d * scale) table, or NULL */
static float y_dfl(const rknnx_y_tensor *t, ptrdiff_t c0, ptrdiff_t n, ptrdiff_t y,
                   ptrdiff_t x, const float *exps)
{
    float e[64], acc = 0.0f, sum = 0.0f;
    if (exps) {
        const unsigned char flip = y_flip(t);
        unsigned u[64], mu = 0;
        for (ptrdiff_t j = 0; j < n; j++) {
            u[j] = *(const unsigned char *)y_at(t, c0 + j, y, x) ^ flip;
            mu = u[j] > mu ? u[j] : mu;
        }
        for (ptrdiff_t j = 0; j < n; j++)
            e[j] = exps[mu - u[j]];
    } else {
        float v[64], mv;
        for (ptrdiff_t j = 0; j < n; j++)
            v[j] = y_val(t, c0 + j, y, x);
        mv = v[0];
        for (ptrdiff_t j = 1; j < n; j++)
            mv = v[j] > mv ? v[j] : mv;
        for (ptrdiff_t j = 0; j < n; j++)
            e[j] = expf(v[j] - mv);
    }
    for (ptrdiff_t j = 0; j < n; j++) {
        sum += e[j];
        acc += (float)j * e[j];
    }
    return acc / sum;
}

static void y_box(const rknnx_y_spec *sp, const y_cand *c, const float *const exps[],
                  float b[4])
{
    const rknnx_y_scale *sc = &sp->scales[c->s];
    const rknnx_y_tensor *t = &sc->box;
    const ptrdiff_t y = c->y, x = c->x;
    const float gx = (float)x, gy = (float)y;
    switch (sp->family) {
    case RKNNX_Y_DFL: {
        float d[4];
        for (int k = 0; k < 4; k++)
            d[k] = y_dfl(t, sc->box_off + k * sp->reg_max, sp->reg_max, y, x, exps[c->s]);
        b[0] = (gx + 0.5f - d[0]) * sc->sx;
        b[1] = (gy + 0.5f - d[1]) * sc->sy;
        b[2] = (gx + 0.5f + d[2]) * sc->sx;
        b[3] = (gy + 0.5f + d[3]) * sc->sy;
        break;
    }
    case RKNNX_Y_CXCYWH: {
        float cx = y_val(t, sc->box_off, y, x), cy = y_val(t, sc->box_off + 1, y, x);
        float w = y_val(t, sc->box_off + 2, y, x), h = y_val(t, sc->box_off + 3, y, x);
        b[0] = cx - w * 0.5f;
        b[1] = cy - h * 0.5f;
        b[2] = cx + w * 0.5f;
        b[3] = cy + h * 0.5f;
        break;
    }
    default: {
        const ptrdiff_t g = sc->box_off + c->a * sc->group;
        float px = y_val(t, g, y, x), py = y_val(t, g + 1, y, x);
        float pw = y_val(t, g + 2, y, x), ph = y_val(t, g + 3, y, x);
        float bx, by, bw, bh;
        if (sp->family == RKNNX_Y_ANCHOR) {
            bx = (px * 2.0f - 0.5f + gx) * sc->sx;
            by = (py * 2.0f - 0.5f + gy) * sc->sy;
            bw = (pw * 2.0f) * (pw * 2.0f) * sc->anchors[2 * c->a];
            bh = (ph * 2.0f) * (ph * 2.0f) * sc->anchors[2 * c->a + 1];
        } else {
            bx = (px + gx) * sc->sx;
            by = (py + gy) * sc->sy;
            bw = expf(pw) * sc->sx;
            bh = expf(ph) * sc->sy;
        }
        b[0] = bx - bw * 0.5f;
        b[1] = by - bh * 0.5f;
        b[2] = bx + bw * 0.5f;
        b[3] = by + bh * 0.5f;
        break;
    }
    }
}

/* ---- decode ----------------------------------------------------------------------- */

ptrdiff_t rknnx_y_decode(const rknnx_y_spec *spec, float *boxes, float *scores,
                         int32_t *classes, int32_t *index)
{
    y_cands cands = {NULL, 0, 0};
    unsigned char *row = NULL;
    float *exps[16] = {NULL};
    const float *dfl[16] = {NULL};
    ptrdiff_t *offs[48] = {NULL};
    double *areas = NULL;
    ptrdiff_t wmax = 1, idx0 = 0, kept = 0, ret = -1;
    const int ns = spec->nscales < 16 ? spec->nscales : 16;
    rknnx_y_scale scs[16];
    rknnx_y_spec local = *spec;
    const rknnx_y_spec *sp = &local;

    /* the scales with their channel offsets */
    memcpy(scs, spec->scales, sizeof(rknnx_y_scale) * (size_t)ns);
    local.scales = scs;
    local.nscales = ns;
    for (int s = 0; s < ns; s++) {
        /* a plan's offsets are made already */
        if (!scs[s].box.off && !(offs[3 * s] = y_offsets(&scs[s].box)))
            goto done;
        if (!scs[s].cls.off && !(offs[3 * s + 1] = y_offsets(&scs[s].cls)))
            goto done;
        if (scs[s].sum.base && !scs[s].sum.off && !(offs[3 * s + 2] = y_offsets(&scs[s].sum)))
            goto done;
    }

    for (int s = 0; s < ns; s++)
        wmax = sp->scales[s].cls.W > wmax ? sp->scales[s].cls.W : wmax;
    row = (unsigned char *)malloc((size_t)wmax * 2);
    if (!row)
        goto done;
    for (int s = 0; s < ns; s++) {
        const rknnx_y_scale *sc = &sp->scales[s];
        for (int a = 0; a < sc->na; a++)
            if (y_scan(sp, s, a, idx0, &cands, row, row + wmax))
                goto done;
        idx0 += (ptrdiff_t)sc->na * sc->cls.H * sc->cls.W;
    }
    /* the areas of the boxes kept: at most max_det, at most the candidates found */
    areas = (double *)malloc(sizeof(double) *
                             (cands.n < (size_t)(sp->max_det > 0 ? sp->max_det : 1)
                              ? (cands.n ? cands.n : 1) : (size_t)sp->max_det));
    if (!areas)
        goto done;
    if (sp->family == RKNNX_Y_DFL && cands.n) {
        for (int s = 0; s < ns; s++) {
            const rknnx_y_tensor *t = &sp->scales[s].box;
            if (!y_is8(t))
                continue;
            if (sp->scales[s].exps) {      /* a plan's table */
                dfl[s] = sp->scales[s].exps;
                continue;
            }
            exps[s] = (float *)malloc(256 * sizeof(float));
            if (!exps[s])
                goto done;
            rknnx_y_exps(t, exps[s]);
            dfl[s] = exps[s];
        }
    }
    qsort(cands.v, cands.n, sizeof *cands.v, y_cmp);
    {
        size_t n = cands.n;
        if (sp->max_nms >= 0 && n > (size_t)sp->max_nms)
            n = (size_t)sp->max_nms;
        for (size_t i = 0; i < n && kept < sp->max_det; i++) {
            const y_cand *c = &cands.v[i];
            float b[4];
            int drop = 0;
            y_box(sp, c, dfl, b);
            if (!(isfinite(b[0]) && isfinite(b[1]) && isfinite(b[2]) && isfinite(b[3])))
                continue;    /* a box of NaN or inf values is no detection */
            double ai = ((double)b[2] - b[0]) * ((double)b[3] - b[1]);
            for (ptrdiff_t j = 0; j < kept && !drop; j++) {
                if (!sp->agnostic && classes[j] != c->cls)
                    continue;
                const float *o = boxes + 4 * j;
                double ix1 = b[0] > o[0] ? b[0] : o[0], iy1 = b[1] > o[1] ? b[1] : o[1];
                double ix2 = b[2] < o[2] ? b[2] : o[2], iy2 = b[3] < o[3] ? b[3] : o[3];
                double iw = ix2 - ix1, ih = iy2 - iy1;
                double inter = (iw > 0 ? iw : 0) * (ih > 0 ? ih : 0);
                double uni = ai + areas[j] - inter;
                double iou = uni > 0 ? inter / uni : 0.0;
                drop = iou > sp->iou;
            }
            if (drop)
                continue;
            memcpy(boxes + 4 * kept, b, sizeof b);
            areas[kept] = ai;
            scores[kept] = c->score;
            classes[kept] = c->cls;
            index[kept] = c->idx;
            kept++;
        }
    }
    ret = kept;
done:
    free(cands.v);
    free(row);
    free(areas);
    for (int s = 0; s < 16; s++)
        free(exps[s]);
    for (int s = 0; s < 48; s++)
        free(offs[s]);
    return ret;
}

/* ---- masks ------------------------------------------------------------------------ */

/* the first and last pixel p with lo <= p < hi, clamped to 0 .. n - 1; 0 when none */
static int y_span(float lo, float hi, ptrdiff_t n, ptrdiff_t *p0, ptrdiff_t *p1)
{
    if (!(lo < hi) || n <= 0)
        return 0;
    double a = ceil((double)lo), b = ceil((double)hi) - 1.0;
    if (a < 0)
        a = 0;
    if (b > (double)(n - 1))
        b = (double)(n - 1);
    if (a > b)
        return 0;
    *p0 = (ptrdiff_t)a;
    *p1 = (ptrdiff_t)b;
    return 1;
}

/* torch's bilinear source (align_corners=False): index, next index, weight of next */
static inline void y_src(ptrdiff_t d, float scale, ptrdiff_t in, ptrdiff_t *i0, ptrdiff_t *i1,
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

/* The proto rows of a box's region, a row at a time: the nm channels of the row's cells
   dequantized into a tile (tile[j * bw + px], the cells' values as y_val reads them), then
   acc[px] = sum over j in order of coef[j] * value, lanes across the cells (each lane the
   plain loop's sum, in its order: the same float), then the sigmoid.  The same three
   loops again for the upsampling: each proto row of the region resampled along x once
   (hz = w0 v[a0] + w1 v[a1], the plain expression's inner sums), then per pixel
   h0 hz0 + h1 hz1 > 0.5. */
#define RKNNX_Y_MASK_STEPS(SFX, VF, VB, N, ATTR)                                        \
    ATTR static ptrdiff_t y_mdot_##SFX(float *restrict acc, const float *restrict v,       \
                                       const float *restrict k, ptrdiff_t nm, ptrdiff_t i,  \
                                       ptrdiff_t n)                                         \
    {                                                                                       \
        for (; i + (N) <= n; i += (N)) {                                                    \
            VF a = (VF){0};                                                                 \
            for (ptrdiff_t j = 0; j < nm; j++) {                                            \
                VF b;                                                                       \
                memcpy(&b, v + j * n + i, sizeof b);                                        \
                a = a + k[j] * b;                                                           \
            }                                                                               \
            memcpy(acc + i, &a, sizeof a);                                                  \
        }                                                                                   \
        return i;                                                                           \
    }                                                                                       \
    ATTR static ptrdiff_t y_mrow_##SFX(unsigned char *restrict o, const float *restrict z0, \
                                       const float *restrict z1, float h0, float h1,        \
                                       ptrdiff_t i, ptrdiff_t n)                            \
    {                                                                                       \
        const VF v0 = (VF){0} + h0, v1 = (VF){0} + h1, half = (VF){0} + 0.5f;              \
        for (; i + (N) <= n; i += (N)) {                                                    \
            VF a, b;                                                                        \
            memcpy(&a, z0 + i, sizeof a);                                                   \
            memcpy(&b, z1 + i, sizeof b);                                                   \
            const VB m = __builtin_convertvector((v0 * a + v1 * b > half) & 1, VB);         \
            memcpy(o + i, &m, sizeof m);                                                    \
        }                                                                                   \
        return i;                                                                           \
    }

#if RKNNX_K_VQ
typedef float rknnx_y_v4f __attribute__((vector_size(16)));
typedef unsigned char rknnx_y_v4b __attribute__((vector_size(4)));
RKNNX_Y_MASK_STEPS(v128, rknnx_y_v4f, rknnx_y_v4b, 4, )
#endif
#if RKNNX_K_AVX2
typedef float rknnx_y_v8f __attribute__((vector_size(32)));
typedef unsigned char rknnx_y_v8b __attribute__((vector_size(8)));
RKNNX_Y_MASK_STEPS(avx2, rknnx_y_v8f, rknnx_y_v8b, 8,
                   __attribute__((target("avx2"))))
#endif

/* acc[i] = sum over j in order of k[j] v[j n + i], for i in [0, n) */
static void y_mdot(float *restrict acc, const float *restrict v, const float *restrict k,
                   ptrdiff_t nm, ptrdiff_t n)
{
    ptrdiff_t i = 0;
#if RKNNX_K_AVX2
    if (rknnx_k_path() >= 2 && rknnx_k_have_avx2())
        i = y_mdot_avx2(acc, v, k, nm, i, n);
#endif
#if RKNNX_K_VQ
    if (rknnx_k_path() >= 1)
        i = y_mdot_v128(acc, v, k, nm, i, n);
#endif
    for (; i < n; i++) {
        float a = 0.0f;
        for (ptrdiff_t j = 0; j < nm; j++)
            a += k[j] * v[j * n + i];
        acc[i] = a;
    }
}

/* o[0, n) = h0 z0 + h1 z1 > 0.5 */
static void y_mrow(unsigned char *restrict o, const float *restrict z0, const float *restrict z1,
                   float h0, float h1, ptrdiff_t n)
{
    ptrdiff_t i = 0;
#if RKNNX_K_AVX2
    if (rknnx_k_path() >= 2 && rknnx_k_have_avx2())
        i = y_mrow_avx2(o, z0, z1, h0, h1, i, n);
#endif
#if RKNNX_K_VQ
    if (rknnx_k_path() >= 1)
        i = y_mrow_v128(o, z0, z1, h0, h1, i, n);
#endif
    for (; i < n; i++)
        o[i] = h0 * z0[i] + h1 * z1[i] > 0.5f;
}

/* the values of channel j of proto row py, cells px0 .. px0 + n - 1 */
static void y_prow(const rknnx_y_tensor *t, ptrdiff_t j, ptrdiff_t py, ptrdiff_t px0,
                   ptrdiff_t n, float *restrict v)
{
    const char *p = y_at(t, j, py, px0);
    const ptrdiff_t sx = t->s_x;
    if (y_is8(t)) {
        const float *restrict lut = t->lut;
        for (ptrdiff_t i = 0; i < n; i++)
            v[i] = lut[*(const unsigned char *)(p + i * sx)];
        return;
    }
    for (ptrdiff_t i = 0; i < n; i++)
        v[i] = y_load(t, p + i * sx);
}

int rknnx_y_masks(const rknnx_y_tensor *proto, const float *coef, ptrdiff_t nm,
                  const float *boxes, ptrdiff_t n, ptrdiff_t H, ptrdiff_t W,
                  unsigned char *out)
{
    return rknnx_y_masks_into(proto, coef, nm, boxes, n, H, W, out, 0);
}

int rknnx_y_masks_into(const rknnx_y_tensor *proto, const float *coef, ptrdiff_t nm,
                       const float *boxes, ptrdiff_t n, ptrdiff_t H, ptrdiff_t W,
                       unsigned char *out, int zeroed)
{
    rknnx_y_tensor pt = *proto;
    const ptrdiff_t ph = pt.H, pw = pt.W;
    ptrdiff_t *poff = NULL;
    const float fy = (float)ph / (float)H, fx = (float)pw / (float)W;
    ptrdiff_t *cx0 = NULL, *cx1 = NULL;
    float *cl = NULL, *buf = NULL, *tile = NULL, *hz = NULL;
    int ret = -1;
    if (n <= 0 || H <= 0 || W <= 0)
        return 0;
    cx0 = (ptrdiff_t *)malloc(sizeof(ptrdiff_t) * (size_t)W);
    cx1 = (ptrdiff_t *)malloc(sizeof(ptrdiff_t) * (size_t)W);
    cl = (float *)malloc(sizeof(float) * (size_t)W);
    buf = (float *)malloc(sizeof(float) * (size_t)ph * (size_t)pw);
    tile = (float *)malloc(sizeof(float) * (size_t)(nm > 0 ? nm : 1) * (size_t)pw);
    hz = (float *)malloc(sizeof(float) * (size_t)ph * (size_t)W);
    poff = y_offsets(&pt);
    if (!cx0 || !cx1 || !cl || !buf || !tile || !hz || !poff)
        goto done;
    for (ptrdiff_t i = 0; i < n; i++) {
        const float *b = boxes + 4 * i, *k = coef + nm * i;
        unsigned char *o = out + (size_t)i * (size_t)H * (size_t)W;
        ptrdiff_t c0, c1, r0, r1;
        if (!y_span(b[0], b[2], W, &c0, &c1) || !y_span(b[1], b[3], H, &r0, &r1)) {
            if (!zeroed)
                memset(o, 0, (size_t)H * (size_t)W);
            continue;
        }
        if (!zeroed) {          /* zero only what the box does not cover */
            memset(o, 0, (size_t)r0 * (size_t)W);
            memset(o + (r1 + 1) * W, 0, (size_t)(H - 1 - r1) * (size_t)W);
            for (ptrdiff_t r = r0; r <= r1; r++) {
                memset(o + r * W, 0, (size_t)c0);
                memset(o + r * W + c1 + 1, 0, (size_t)(W - 1 - c1));
            }
        }
        ptrdiff_t px0, px1, py0, py1, unused;
        float l;
        for (ptrdiff_t c = c0; c <= c1; c++)
            y_src(c, fx, pw, &cx0[c], &cx1[c], &cl[c]);
        px0 = cx0[c0];
        px1 = cx1[c1];
        y_src(r0, fy, ph, &py0, &unused, &l);
        y_src(r1, fy, ph, &unused, &py1, &l);
        const ptrdiff_t bw = px1 - px0 + 1, cw = c1 - c0 + 1;
        /* sigmoid(coef . proto) over the proto cells the box's pixels read, and each of
           those rows resampled along x */
        for (ptrdiff_t py = py0; py <= py1; py++) {
            float *acc = buf + (py - py0) * bw;
            for (ptrdiff_t j = 0; j < nm; j++)
                y_prow(&pt, j, py, px0, bw, tile + j * bw);
            y_mdot(acc, tile, k, nm, bw);
            for (ptrdiff_t px = 0; px < bw; px++)
                acc[px] = y_sigmoid(acc[px]);
            float *z = hz + (py - py0) * cw;
            for (ptrdiff_t c = c0; c <= c1; c++) {
                const float w1 = cl[c], w0 = 1.0f - w1;
                z[c - c0] = w0 * acc[cx0[c] - px0] + w1 * acc[cx1[c] - px0];
            }
        }
        for (ptrdiff_t r = r0; r <= r1; r++) {
            ptrdiff_t y0, y1;
            float h1;
            y_src(r, fy, ph, &y0, &y1, &h1);
            const float h0 = 1.0f - h1;
            y_mrow(o + r * W + c0, hz + (y0 - py0) * cw, hz + (y1 - py0) * cw, h0, h1, cw);
        }
    }
    ret = 0;
done:
    free(cx0);
    free(cx1);
    free(cl);
    free(buf);
    free(tile);
    free(hz);
    free(poff);
    return ret;
}
