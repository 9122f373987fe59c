/*
 * The tracker's C (rknn_ext/kernels/track.c) as a C program; tests/vision/test_tracker_c.py
 * builds it (plain, and under ASan/UBSan where the compiler can) and runs it.
 *
 * - rknnx_t_assign against every partial matching of random problems of up to 5 x 6
 *   (costs in [0, 1], some above the threshold, some NaN): the objective it reaches (the
 *   matched costs plus thresh / 2 per unmatched row and column) is the least, no pair above
 *   the threshold is taken, no column twice; the same on block-diagonal problems (several
 *   components at once);
 * - a tracker on a straight-moving box keeps id 1, on two boxes crossing keeps both ids,
 *   a box unseen for fewer frames than the buffer gets its id back and one unseen for
 *   longer ends (its id in `ended`), per_class keeps tracks to their class;
 * - 3000 frames of 0-60 random boxes, twice (reset between): the bytes the tracker holds
 *   do not change in the second pass (no allocation once the counts have been seen), every output id is >= 1, ascending,
 *   every detection row within the frame, and a non-finite box is refused with the state
 *   untouched.
 * Prints "track_check: N checks, F failed".
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "track.h"

static double urand(void)
{
    return rand() / (RAND_MAX + 1.0);
}

/* the least objective over all partial matchings (rows r.., the columns in use in `used`) */
static double best(const double *c, int rows, int cols, double thr, int r, unsigned used)
{
    if (r == rows) {
        int free_cols = 0;
        for (int j = 0; j < cols; j++)
            free_cols += !(used >> j & 1);
        return free_cols * thr / 2;
    }
    double b = thr / 2 + best(c, rows, cols, thr, r + 1, used);
    for (int j = 0; j < cols; j++) {
        double x = c[r * cols + j];
        if (!(used >> j & 1) && x <= thr) {
            double v = x + best(c, rows, cols, thr, r + 1, used | 1u << j);
            if (v < b)
                b = v;
        }
    }
    return b;
}

static void check_assign(void)
{
    double c[64];
    ptrdiff_t m[8];
    for (int trial = 0; trial < 4000; trial++) {
        int rows = 1 + rand() % 5, cols = 1 + rand() % 6;
        double thr = trial % 3 == 0 ? 0.8 : trial % 3 == 1 ? 0.5 : 0.3 + 0.6 * urand();
        for (int i = 0; i < rows * cols; i++) {
            double u = urand();
            c[i] = u < 0.1 ? NAN : u < 0.5 ? 1.0 : urand();
            if (trial % 7 == 0)   /* ties */
                c[i] = u < 0.5 ? 0.25 : 0.75;
        }
        ptrdiff_t n = rknnx_t_assign(c, rows, cols, thr, m);
        double obj = 0;
        unsigned used = 0;
        int ok = n >= 0, matched = 0;
        for (int i = 0; i < rows && ok; i++) {
            if (m[i] < 0) {
                obj += thr / 2;
                continue;
            }
            ok = m[i] < cols && !(used >> m[i] & 1) && c[i * cols + m[i]] <= thr;
            used |= 1u << m[i];
            obj += c[i * cols + m[i]];
            matched++;
        }
        for (int j = 0; j < cols; j++)
            obj += (used >> j & 1) ? 0 : thr / 2;
        check(ok && matched == n, "assignment is a matching within the threshold", trial, n);
        check(ok && fabs(obj - best(c, rows, cols, thr, 0, 0)) < 1e-9,
              "assignment is optimal", trial, rows * 10 + cols);
    }
    /* block-diagonal: several components, each solved alone */
    for (int trial = 0; trial < 500; trial++) {
        enum { B = 3, R = 9, C = 9 };
        double big[R * C];
        for (int i = 0; i < R * C; i++)
            big[i] = 1.0;
        for (int b = 0; b < B; b++)
            for (int i = 0; i < 3; i++)
                for (int j = 0; j < 3; j++)
                    big[(3 * b + i) * C + 3 * b + j] = urand() < 0.7 ? urand() * 0.9 : 1.0;
        ptrdiff_t mm[R];
        rknnx_t_assign(big, R, C, 0.8, mm);
        double total = 0, want = 0;
        for (int b = 0; b < B; b++) {
            double sub[9];
            for (int i = 0; i < 3; i++)
                for (int j = 0; j < 3; j++)
                    sub[i * 3 + j] = big[(3 * b + i) * C + 3 * b + j];
            want += best(sub, 3, 3, 0.8, 0, 0);
        }
        unsigned used = 0;
        for (int i = 0; i < R; i++)
            if (mm[i] >= 0) {
                total += big[i * C + mm[i]];
                used |= 1u << mm[i];
            } else {
                total += 0.4;
            }
        for (int j = 0; j < C; j++)
            total += (used >> j & 1) ? 0 : 0.4;
        check(fabs(total - want) < 1e-9, "components solved alone are optimal", trial, 0);
    }
}

static rknnx_t_params params(void)
{
    rknnx_t_params p = {0.5, 0.1, 0.6, 0.8, 0.5, 0.7, 30, 0.85, 1, RKNNX_T_XYAH, 0, 1, 1};
    return p;
}

static const rknnx_t_out *frame(rknnx_tracker *t, const float *b, const float *s,
                                const int32_t *c, int n)
{
    int rc = rknnx_t_update(t, b, s, c, n, 1.0);
    check(rc == 0, "update succeeds", rc, n);
    return rknnx_t_result(t);
}

static int64_t id_of_row(const rknnx_t_out *o, ptrdiff_t row)
{
    for (ptrdiff_t k = 0; k < o->n; k++)
        if (o->detection[k] == row)
            return o->ids[k];
    return -1;
}

static void check_scenes(void)
{
    rknnx_t_params p = params();
    /* a straight-moving box */
    rknnx_tracker *t = rknnx_t_new(&p);
    for (int f = 0; f < 100; f++) {
        float b[4] = {10.0f + 3 * f, 20, 50.0f + 3 * f, 100};
        float s = 0.9f;
        int32_t c = 0;
        const rknnx_t_out *o = frame(t, b, &s, &c, 1);
        check(o->n == 1 && o->ids[0] == 1, "a straight box keeps id 1", f, o->n);
    }
    /* two boxes crossing each other, both seen */
    rknnx_t_reset(t);
    for (int f = 0; f < 60; f++) {
        float b[8] = {10.0f + 4 * f, 20, 50.0f + 4 * f, 100,
                      250.0f - 4 * f, 40, 290.0f - 4 * f, 120};
        float s[2] = {0.9f, 0.85f};
        int32_t c[2] = {0, 0};
        const rknnx_t_out *o = frame(t, b, s, c, 2);
        check(o->n == 2 && id_of_row(o, 0) == 1 && id_of_row(o, 1) == 2,
              "crossing boxes keep their ids", f, o->n);
    }
    /* a miss within the buffer, then one past it */
    rknnx_t_reset(t);
    int64_t last_id = 0;
    for (int f = 0; f < 120; f++) {
        int seen = !(f >= 20 && f < 40) && !(f >= 60 && f < 100);
        float b[4] = {10.0f + 2 * f, 20, 50.0f + 2 * f, 100};
        float s = 0.9f;
        int32_t c = 0;
        const rknnx_t_out *o = frame(t, b, &s, &c, seen);
        if (f == 40)
            check(o->n == 1 && o->ids[0] == 1, "a miss of 20 frames keeps the id", o->n, 0);
        if (f == 90)
            check(o->nended == 1 && o->ended[0] == 1, "past the buffer the track ends",
                  o->nended, f);
        if (f == 101) {
            check(o->n == 1 && o->ids[0] == 2, "a new object after the end: id 2", o->n, 0);
            last_id = o->n ? o->ids[0] : 0;
        }
    }
    check(last_id == 2, "ids from the tracker's own counter", (long)last_id, 0);
    rknnx_t_free(t);
    /* per_class: a box of another class does not continue a track */
    p.per_class = 1;
    t = rknnx_t_new(&p);
    for (int f = 0; f < 10; f++) {
        float b[4] = {10, 20, 50, 100};
        float s = 0.9f;
        int32_t c = f < 5 ? 0 : 1;
        const rknnx_t_out *o = frame(t, b, &s, &c, 1);
        if (f == 4)
            check(o->n == 1 && o->ids[0] == 1, "per_class: class 0 tracked", o->n, 0);
        if (f == 6)
            check(o->n == 1 && o->ids[0] == 2 && o->classes[0] == 1,
                  "per_class: class 1 is another track", o->n, 0);
    }
    rknnx_t_free(t);
}

static void check_memory(void)
{
    rknnx_t_params p = params();
    rknnx_tracker *t = rknnx_t_new(&p);
    enum { MAXN = 60 };
    /* the frame's arrays at their exact size, so the sanitizers see a read past them */
    float *b = xmalloc(sizeof(float) * 4 * MAXN), *s = xmalloc(sizeof(float) * MAXN);
    int32_t *c = xmalloc(sizeof(int32_t) * MAXN);
    size_t bytes[2] = {0, 0};
    /* the same 3000 frames twice, reset between: the second pass allocates nothing */
    for (int pass = 0; pass < 2; pass++) {
        rknnx_t_reset(t);
        srand(11);
        for (int f = 0; f < 3000; f++) {
            int n = rand() % (MAXN + 1);
            for (int i = 0; i < n; i++) {
                float x = (float)(urand() * 600), y = (float)(urand() * 400);
                b[4 * i] = x;
                b[4 * i + 1] = y;
                b[4 * i + 2] = x + 20 + (float)(urand() * 60);
                b[4 * i + 3] = y + 20 + (float)(urand() * 60);
                s[i] = (float)urand();
                c[i] = rand() % 3;
            }
            const rknnx_t_out *o = frame(t, b, s, c, n);
            int ok = 1;
            for (ptrdiff_t k = 0; k < o->n; k++)
                ok &= o->ids[k] >= 1 && (k == 0 || o->ids[k] > o->ids[k - 1]) &&
                      o->detection[k] >= 0 && o->detection[k] < n;
            check(ok, "ids ascending, rows within the frame", f, (long)o->n);
            if (pass == 1 && f == 0)
                check(rknnx_t_bytes(t) == bytes[0], "the scratch is kept by reset",
                      (long)rknnx_t_bytes(t), (long)bytes[0]);
        }
        bytes[pass] = rknnx_t_bytes(t);
    }
    check(bytes[1] == bytes[0], "no growth once the counts were seen", (long)bytes[1],
          (long)bytes[0]);
    ptrdiff_t live = rknnx_t_live(t);
    float bad[4] = {0, 0, NAN, 10}, sc = 0.9f;
    int32_t cl = 0;
    check(rknnx_t_update(t, bad, &sc, &cl, 1, 1.0) == RKNNX_T_EINVAL, "NaN box refused", 0, 0);
    check(rknnx_t_update(t, b, s, c, 0, -1.0) == RKNNX_T_EINVAL, "negative step refused", 0, 0);
    check(rknnx_t_live(t) == live, "a refused frame leaves the state", (long)live, 0);
    rknnx_t_free(t);
    free(b);
    free(s);
    free(c);
}

int main(void)
{
    srand(5);
    check_assign();
    check_scenes();
    check_memory();
    printf("track_check: %ld checks, %ld failed\n", checks, failed);
    return failed != 0;
}
