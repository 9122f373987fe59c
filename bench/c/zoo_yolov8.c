/*
 * rknnx bench: a C baseline of the yolov8 post-processing of Rockchip's model zoo
 * (examples/yolov8, its C++ post-process and zero-copy demo), written from the
 * algorithm for bench/suite.py's decode scenario.  Built as a shared library
 * (cc -O2 -shared -fPIC) and called through ctypes (bench/zoo_c.py).
 *
 * One frame, as the zoo's zero-copy demo does it on int8 outputs:
 *
 * 1. every output's native NC1HWC2 memory gathered into a freshly allocated NCHW buffer
 *    (a channel at a time, the channel's cells read C2 bytes apart);
 * 2. per scale (box, class scores, score_sum): the class threshold and the score_sum
 *    threshold quantized with truncation toward zero, (int8)(conf / scale + zp); a cell
 *    whose score_sum code is below its threshold is skipped; the best class code kept
 *    only if above the threshold (strictly), starting from the code of 0.0; a kept cell's
 *    64 box codes dequantized, each side's softmax (exp without the max shift) and
 *    expectation (the DFL), box x1 = (j + 0.5 - l) * stride with stride = input height /
 *    grid height (an int), stored as x, y, w, h with its dequantized score;
 * 3. the candidates sorted by score descending (a recursive quicksort, not stable);
 * 4. for each class present (ascending), a greedy NMS over the sorted list where the
 *    overlap counts pixels inclusively (width = x2 - x1 + 1), suppressed when > nms;
 * 5. at most 128 boxes kept, each clamped to the input and truncated to int (the
 *    letterbox of the bench's frame is the identity: no pad, scale 1).
 *
 * A tensor with c1 == 0 is NCHW already (data [1, c, h, w]): step 1 is skipped for it,
 * so that outputs all given so time the post-processing alone, as the zoo's
 * non-zero-copy demo runs it on rknn_outputs_get's NCHW buffers.
 *
 * zoo_yolov8_frame fills a zoo_dets; zoo_yolov8_loop times n frames (ns each).
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define ZOO_MAX_DETS 128
#define ZOO_MAX_OUT 16

typedef struct {
    const int8_t *data;   /* the native memory: [1, c1, h, w, c2] */
    int32_t c, h, w;      /* the NCHW shape's channels and grid */
    int32_t c1, c2;
    int32_t zp;
    float scale;
} zoo_tensor;

typedef struct {
    int32_t count;
    int32_t cls[ZOO_MAX_DETS];
    float score[ZOO_MAX_DETS];
    float box[ZOO_MAX_DETS][4];   /* x1, y1, x2, y2 in input pixels, before the clamp */
    int32_t ibox[ZOO_MAX_DETS][4]; /* clamped to the input, truncated */
} zoo_dets;

/* growable arrays of the candidates */
typedef struct {
    float *xywh;
    float *prob;
    int32_t *cls;
    size_t n, cap;
} zoo_cands;

static int cands_push(zoo_cands *c, const float xywh[4], float prob, int32_t cls)
{
    if (c->n == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 64;
        float *b = (float *)realloc(c->xywh, cap * 4 * sizeof(float));
        if (!b)
            return -1;
        c->xywh = b;
        float *p = (float *)realloc(c->prob, cap * sizeof(float));
        if (!p)
            return -1;
        c->prob = p;
        int32_t *k = (int32_t *)realloc(c->cls, cap * sizeof(int32_t));
        if (!k)
            return -1;
        c->cls = k;
        c->cap = cap;
    }
    memcpy(c->xywh + 4 * c->n, xywh, 4 * sizeof(float));
    c->prob[c->n] = prob;
    c->cls[c->n] = cls;
    c->n++;
    return 0;
}

/* step 1: NC1HWC2 -> NCHW, one channel plane after another */
static void to_nchw(const zoo_tensor *t, int8_t *dst)
{
    const size_t hw = (size_t)t->h * (size_t)t->w;
    for (int32_t ch = 0; ch < t->c; ch++) {
        const int8_t *blk = t->data + (size_t)(ch / t->c2) * hw * (size_t)t->c2;
        const int32_t k = ch % t->c2;
        int8_t *plane = dst + (size_t)ch * hw;
        for (int32_t y = 0; y < t->h; y++)
            for (int32_t x = 0; x < t->w; x++) {
                size_t cell = (size_t)y * (size_t)t->w + (size_t)x;
                plane[cell] = blk[cell * (size_t)t->c2 + (size_t)k];
            }
    }
}

static int8_t quant_trunc(float v, int32_t zp, float scale)
{
    float q = v / scale + (float)zp;
    q = q <= -128.0f ? -128.0f : (q >= 127.0f ? 127.0f : q);
    return (int8_t)(int32_t)q;
}

static float dequant(int8_t q, int32_t zp, float scale)
{
    return ((float)q - (float)zp) * scale;
}

/* the expected bin of each side's softmax, four sides of n values */
static void dfl4(const float *v, int n, float out[4])
{
    for (int side = 0; side < 4; side++) {
        float e[64], sum = 0.0f, acc = 0.0f;
        for (int i = 0; i < n; i++) {
            e[i] = expf(v[side * n + i]);
            sum += e[i];
        }
        for (int i = 0; i < n; i++)
            acc += e[i] / sum * (float)i;
        out[side] = acc;
    }
}

/* step 2 for one scale */
static int scan_scale(const int8_t *box, const zoo_tensor *bt, const int8_t *cls,
                      const zoo_tensor *ct, const int8_t *sum, const zoo_tensor *st,
                      int stride, float conf, zoo_cands *out)
{
    const int gh = ct->h, gw = ct->w, nc = ct->c, dfl = bt->c / 4;
    const size_t plane = (size_t)gh * (size_t)gw;
    const int8_t thr = quant_trunc(conf, ct->zp, ct->scale);
    const int8_t sthr = st ? quant_trunc(conf, st->zp, st->scale) : 0;
    float raw[256];
    if (dfl < 1 || dfl > 64)
        return -1;
    for (int i = 0; i < gh; i++) {
        for (int j = 0; j < gw; j++) {
            size_t cell = (size_t)i * (size_t)gw + (size_t)j;
            if (sum && sum[cell] < sthr)
                continue;
            int8_t best = (int8_t)(-ct->zp);
            int32_t best_c = -1;
            for (int c = 0; c < nc; c++) {
                int8_t q = cls[(size_t)c * plane + cell];
                if (q > thr && q > best) {
                    best = q;
                    best_c = c;
                }
            }
            if (!(best > thr))
                continue;
            for (int k = 0; k < 4 * dfl; k++)
                raw[k] = dequant(box[(size_t)k * plane + cell], bt->zp, bt->scale);
            float d[4], xywh[4];
            dfl4(raw, dfl, d);
            /* in double, as the zoo's literal 0.5 makes it */
            float x1 = (float)((-d[0] + j + 0.5) * stride);
            float y1 = (float)((-d[1] + i + 0.5) * stride);
            float x2 = (float)((d[2] + j + 0.5) * stride);
            float y2 = (float)((d[3] + i + 0.5) * stride);
            xywh[0] = x1;
            xywh[1] = y1;
            xywh[2] = x2 - x1;
            xywh[3] = y2 - y1;
            if (cands_push(out, xywh, dequant(best, ct->zp, ct->scale), best_c))
                return -1;
        }
    }
    return 0;
}

/* step 3: keys descending, the indices moved along */
static void sort_desc(float *key, int32_t *idx, long lo, long hi)
{
    while (lo < hi) {
        float pivot = key[lo];
        int32_t pidx = idx[lo];
        long a = lo, b = hi;
        while (a < b) {
            while (a < b && key[b] <= pivot)
                b--;
            key[a] = key[b];
            idx[a] = idx[b];
            while (a < b && key[a] >= pivot)
                a++;
            key[b] = key[a];
            idx[b] = idx[a];
        }
        key[a] = pivot;
        idx[a] = pidx;
        sort_desc(key, idx, lo, a - 1);
        lo = a + 1;
    }
}

static float overlap(const float *p, const float *q)
{
    float ax2 = p[0] + p[2], ay2 = p[1] + p[3], bx2 = q[0] + q[2], by2 = q[1] + q[3];
    float w = fmaxf(0.0f, fminf(ax2, bx2) - fmaxf(p[0], q[0]) + 1.0f);
    float h = fmaxf(0.0f, fminf(ay2, by2) - fmaxf(p[1], q[1]) + 1.0f);
    float inter = w * h;
    float uni = (ax2 - p[0] + 1.0f) * (ay2 - p[1] + 1.0f) +
                (bx2 - q[0] + 1.0f) * (by2 - q[1] + 1.0f) - inter;
    return uni <= 0.0f ? 0.0f : inter / uni;
}

/* step 4 for one class */
static void nms_class(const zoo_cands *c, int32_t *order, long n, int32_t cls, float thr)
{
    for (long i = 0; i < n; i++) {
        int32_t a = order[i];
        if (a < 0 || c->cls[a] != cls)
            continue;
        for (long j = i + 1; j < n; j++) {
            int32_t b = order[j];
            if (b < 0 || c->cls[b] != cls)
                continue;
            if (overlap(c->xywh + 4 * a, c->xywh + 4 * b) > thr)
                order[j] = -1;
        }
    }
}

static int32_t clampi(float v, int32_t lo, int32_t hi)
{
    return v > (float)lo ? (v < (float)hi ? (int32_t)v : hi) : lo;
}

/* One frame: outs are the 6 or 9 outputs in the zoo's order (box, class scores[,
   score_sum] per scale); 0 on success, -1 on bad shapes or no memory. */
int zoo_yolov8_frame(const zoo_tensor *outs, int n_out, int in_w, int in_h, float conf,
                     float nms, zoo_dets *res)
{
    int8_t *nchw[ZOO_MAX_OUT] = {NULL};
    const int8_t *src[ZOO_MAX_OUT] = {NULL};
    zoo_cands cands = {NULL, NULL, NULL, 0, 0};
    int32_t *order = NULL;
    float *keys = NULL;
    int ret = -1;
    const int per = n_out / 3;
    memset(res, 0, sizeof *res);
    if (n_out > ZOO_MAX_OUT || (per != 2 && per != 3) || n_out != 3 * per)
        return -1;
    for (int o = 0; o < n_out; o++) {
        const zoo_tensor *t = &outs[o];
        if (t->c1 == 0) {                 /* NCHW already: post_process alone */
            src[o] = t->data;
            continue;
        }
        if (t->c2 < 1 || t->c1 * t->c2 < t->c)
            goto done;
        nchw[o] = (int8_t *)malloc((size_t)t->c * (size_t)t->h * (size_t)t->w);
        if (!nchw[o])
            goto done;
        to_nchw(t, nchw[o]);
        src[o] = nchw[o];
    }
    for (int s = 0; s < 3; s++) {
        const zoo_tensor *bt = &outs[s * per], *ct = &outs[s * per + 1];
        const zoo_tensor *st = per == 3 ? &outs[s * per + 2] : NULL;
        if (ct->h < 1 || bt->h != ct->h || bt->w != ct->w)
            goto done;
        if (scan_scale(src[s * per], bt, src[s * per + 1], ct,
                       st ? src[s * per + 2] : NULL, st, in_h / ct->h, conf, &cands))
            goto done;
    }
    if (cands.n) {
        const long n = (long)cands.n;
        order = (int32_t *)malloc(cands.n * sizeof(int32_t));
        keys = (float *)malloc(cands.n * sizeof(float));
        if (!order || !keys)
            goto done;
        for (long i = 0; i < n; i++) {
            order[i] = (int32_t)i;
            keys[i] = cands.prob[i];
        }
        sort_desc(keys, order, 0, n - 1);
        /* the classes present, ascending */
        int32_t maxc = 0;
        for (long i = 0; i < n; i++)
            maxc = cands.cls[i] > maxc ? cands.cls[i] : maxc;
        unsigned char *present = (unsigned char *)calloc((size_t)maxc + 1, 1);
        if (!present)
            goto done;
        for (long i = 0; i < n; i++)
            present[cands.cls[i]] = 1;
        for (int32_t k = 0; k <= maxc; k++)
            if (present[k])
                nms_class(&cands, order, n, k, nms);
        free(present);
        for (long i = 0; i < n && res->count < ZOO_MAX_DETS; i++) {
            int32_t a = order[i];
            if (a < 0)
                continue;
            const float *b = cands.xywh + 4 * a;
            int32_t r = res->count++;
            res->cls[r] = cands.cls[a];
            res->score[r] = keys[i];
            res->box[r][0] = b[0];
            res->box[r][1] = b[1];
            res->box[r][2] = b[0] + b[2];
            res->box[r][3] = b[1] + b[3];
            res->ibox[r][0] = clampi(b[0], 0, in_w);
            res->ibox[r][1] = clampi(b[1], 0, in_h);
            res->ibox[r][2] = clampi(b[0] + b[2], 0, in_w);
            res->ibox[r][3] = clampi(b[1] + b[3], 0, in_h);
        }
    }
    ret = 0;
done:
    for (int o = 0; o < ZOO_MAX_OUT; o++)
        free(nchw[o]);
    free(cands.xywh);
    free(cands.prob);
    free(cands.cls);
    free(order);
    free(keys);
    return ret;
}

static long long zoo_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* n frames, the nanoseconds of each into t; 0 on success */
int zoo_yolov8_loop(const zoo_tensor *outs, int n_out, int in_w, int in_h, float conf,
                    float nms, long n, long long *t)
{
    zoo_dets res;
    for (long k = 0; k < n; k++) {
        long long t0 = zoo_now_ns();
        if (zoo_yolov8_frame(outs, n_out, in_w, in_h, conf, nms, &res))
            return -1;
        t[k] = zoo_now_ns() - t0;
    }
    return 0;
}
