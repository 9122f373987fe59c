/*
 * rknnx: ByteTrack with its state in C (track.h says what a frame does).
 */
#include "track.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- scratch that grows geometrically, and shrinks after a spike ---------------------- */

typedef struct {
    void *p;
    size_t cap;   /* bytes */
    size_t want;  /* the most bytes asked for since the last trim */
} t_buf;

/* the capacity t_need gives for `bytes`: 512 doubled until it holds them (0: none) */
static size_t t_cap_for(size_t bytes)
{
    size_t cap = 512;
    while (cap < bytes) {
        if (cap > SIZE_MAX / 2)
            return 0;
        cap *= 2;
    }
    return cap;
}

/* b holds at least `bytes` (its contents kept); NULL when out of memory. */
static void *t_need(t_buf *b, size_t bytes)
{
    if (bytes > b->want)
        b->want = bytes;
    if (bytes <= b->cap)
        return b->p;
    size_t cap = b->cap ? b->cap : 512;
    while (cap < bytes) {
        if (cap > SIZE_MAX / 2)
            return NULL;
        cap *= 2;
    }
    void *p = realloc(b->p, cap);
    if (!p)
        return NULL;
    b->p = p;
    b->cap = cap;
    return p;
}

static void t_drop(t_buf *b)
{
    free(b->p);
    b->p = NULL;
    b->cap = 0;
    b->want = 0;
}

/* Scratch above T_KEEP bytes that the last window of frames used less than half of is
   shrunk to what that window needed (its first `want` bytes kept), or freed when it
   needed none: a crowded frame's buffers (a dense component's k x k costs, its edges,
   thousands of tracks) are given back once the crowd is gone, while a stream's steady
   counts reallocate nothing (their buffers stay within a factor of 2 of their need, or
   under T_KEEP). */
#define T_KEEP ((size_t)4 << 10)

static void t_trim(t_buf *b)
{
    size_t target = b->want ? t_cap_for(b->want) : 0;
    if (b->cap > T_KEEP && target && b->cap > 2 * target) {
        void *p = realloc(b->p, target);
        if (p) {    /* a refused shrink keeps the larger block: still valid */
            b->p = p;
            b->cap = target;
        }
    } else if (b->cap > T_KEEP && !target) {
        free(b->p);
        b->p = NULL;
        b->cap = 0;
    }
    b->want = 0;
}

/* the assignment's scratch */
enum { A_PARENT, A_ORDER, A_START, A_MEMBERS, A_ESTART, A_EORD, A_EXT, A_U, A_V, A_SPC,
       A_PATH, A_C4R, A_R4C, A_REM, A_SR, A_SC, A_EI, A_EJ, A_EC, A_SORT, A_TBOX, A_N };
typedef struct {
    t_buf b[A_N];
} t_asg;

/* ---- the assignment ------------------------------------------------------------------ */

/* A square k x k problem, k = nr + nc, solved by shortest augmenting paths: for each row
   in turn a Dijkstra search over reduced costs (row potentials u, column potentials v) to
   the nearest unassigned column, the potentials updated so that the reduced costs stay
   >= 0, then the path flipped.  col4row receives each row's column.  The matrix is the
   thresholded problem's extension (t_assign), read without being stored: the block of
   its first nr rows and nc columns is `blk` (nr x nc, row-major, INFINITY: not allowed),
   the rest of those rows and columns is `half`, and the corner beyond both is 0; a crowd
   of a thousand tracks and boxes costs the nr x nc block, not four times it.  0, or -1
   when some row cannot be assigned (not reached here: the extension always has a perfect
   matching). */
static int t_lsa(const double *blk, ptrdiff_t nr, ptrdiff_t nc, double half,
                 ptrdiff_t *col4row, ptrdiff_t *row4col, double *u, double *v, double *spc,
                 ptrdiff_t *path, ptrdiff_t *rem, unsigned char *sr, unsigned char *sc)
{
    ptrdiff_t k = nr + nc;
    for (ptrdiff_t i = 0; i < k; i++) {
        u[i] = v[i] = 0;
        col4row[i] = row4col[i] = -1;
    }
    for (ptrdiff_t cur = 0; cur < k; cur++) {
        ptrdiff_t nrem = k, i = cur, sink = -1;
        double minv = 0;
        for (ptrdiff_t j = 0; j < k; j++) {
            spc[j] = INFINITY;
            path[j] = -1;
            rem[j] = k - 1 - j;
            sr[j] = sc[j] = 0;
        }
        while (sink < 0) {
            sr[i] = 1;
            ptrdiff_t idx = -1;
            double lowest = INFINITY;
            /* row i of the extension: its block row then `half`, or `half` then 0 */
            const double *ci = i < nr ? blk + i * nc : NULL;
            double beyond = ci ? half : 0.0, under = ci ? 0.0 : half;
            for (ptrdiff_t it = 0; it < nrem; it++) {
                ptrdiff_t j = rem[it];
                double cij = j >= nc ? beyond : ci ? ci[j] : under;
                double r = minv + cij - u[i] - v[j];
                if (r < spc[j]) {
                    path[j] = i;
                    spc[j] = r;
                }
                if (spc[j] < lowest || (spc[j] == lowest && row4col[j] < 0)) {
                    lowest = spc[j];
                    idx = it;
                }
            }
            minv = lowest;
            if (idx < 0 || minv == INFINITY)
                return -1;
            ptrdiff_t j = rem[idx];
            if (row4col[j] < 0)
                sink = j;
            else
                i = row4col[j];
            sc[j] = 1;
            rem[idx] = rem[--nrem];
        }
        u[cur] += minv;
        for (ptrdiff_t r = 0; r < k; r++)
            if (sr[r] && r != cur)
                u[r] += minv - spc[col4row[r]];
        for (ptrdiff_t c = 0; c < k; c++)
            if (sc[c])
                v[c] -= minv - spc[c];
        for (ptrdiff_t j = sink;;) {
            ptrdiff_t r = path[j];
            row4col[j] = r;
            ptrdiff_t prev = col4row[r];
            col4row[r] = j;
            j = prev;
            if (r == cur)
                break;
        }
    }
    return 0;
}

static ptrdiff_t t_find(ptrdiff_t *parent, ptrdiff_t x)
{
    while (parent[x] != x) {
        parent[x] = parent[parent[x]];
        x = parent[x];
    }
    return x;
}

#define T_NEED(buf, type, count) ((type *)t_need(&(buf), (size_t)(count) * sizeof(type)))

/* The assignment with a threshold (track.h) over the allowed pairs only: edge e joins row
   ei[e] and column ej[e] at cost ec[e] (<= thresh).  The edges split the rows and columns
   into connected components, solved one by one: a component of one row and one column is
   its pair; a larger one is a square problem of its rows and columns plus a stand-in for
   each (a row matched to a column's stand-in leaves that row unmatched, at thresh / 2,
   and the same for columns), solved exactly by t_lsa.  Returns the matched pairs. */
static ptrdiff_t t_assign(t_asg *a, const int32_t *ei, const int32_t *ej,
                          const double *ec, ptrdiff_t ne, ptrdiff_t rows, ptrdiff_t cols,
                          double thresh, ptrdiff_t *match4row)
{
    ptrdiff_t N = rows + cols, matched = 0;
    for (ptrdiff_t i = 0; i < rows; i++)
        match4row[i] = -1;
    if (ne == 0)
        return 0;
    ptrdiff_t *parent = T_NEED(a->b[A_PARENT], ptrdiff_t, N);
    ptrdiff_t *start = T_NEED(a->b[A_START], ptrdiff_t, N + 1);
    ptrdiff_t *members = T_NEED(a->b[A_MEMBERS], ptrdiff_t, N);
    ptrdiff_t *local = T_NEED(a->b[A_ORDER], ptrdiff_t, N);
    ptrdiff_t *estart = T_NEED(a->b[A_ESTART], ptrdiff_t, N + 1);
    ptrdiff_t *eord = T_NEED(a->b[A_EORD], ptrdiff_t, ne);
    if (!parent || !start || !members || !local || !estart || !eord)
        return RKNNX_T_ENOMEM;
    for (ptrdiff_t x = 0; x < N; x++)
        parent[x] = x;
    for (ptrdiff_t e = 0; e < ne; e++) {
        ptrdiff_t ra = t_find(parent, ei[e]), rb = t_find(parent, rows + ej[e]);
        if (ra != rb) {
            if (ra < rb)
                parent[rb] = ra;
            else
                parent[ra] = rb;
        }
    }
    /* nodes and edges grouped by root (counting sorts; a root is its component's least
       node, so components come in the order of their first row, members in node order) */
    for (ptrdiff_t x = 0; x <= N; x++)
        start[x] = estart[x] = 0;
    for (ptrdiff_t x = 0; x < N; x++) {
        parent[x] = t_find(parent, x);
        start[parent[x] + 1]++;
    }
    for (ptrdiff_t e = 0; e < ne; e++)
        estart[parent[ei[e]] + 1]++;
    for (ptrdiff_t x = 0; x < N; x++) {
        start[x + 1] += start[x];
        estart[x + 1] += estart[x];
    }
    for (ptrdiff_t x = 0; x < N; x++)
        members[start[parent[x]]++] = x;      /* start[r] now ends r's group */
    for (ptrdiff_t e = 0; e < ne; e++)
        eord[estart[parent[ei[e]]]++] = e;    /* so does estart[r] */
    ptrdiff_t lo = 0, elo = 0;
    for (ptrdiff_t r = 0; r < N; r++) {
        ptrdiff_t hi = start[r], ehi = estart[r];
        if (hi == lo)
            continue;
        const ptrdiff_t *m = members + lo, *eg = eord + elo;
        ptrdiff_t cnt = hi - lo, neg = ehi - elo, nr = 0;
        lo = hi;
        elo = ehi;
        if (neg == 0)
            continue;   /* a lone row or column */
        while (nr < cnt && m[nr] < rows)
            nr++;
        ptrdiff_t nc = cnt - nr;
        if (nr == 1 && nc == 1) {
            match4row[m[0]] = m[1] - rows;
            matched++;
            continue;
        }
        ptrdiff_t k = nr + nc;
        double *ext = T_NEED(a->b[A_EXT], double, nr * nc);
        double *u = T_NEED(a->b[A_U], double, k), *v = T_NEED(a->b[A_V], double, k);
        double *spc = T_NEED(a->b[A_SPC], double, k);
        ptrdiff_t *path = T_NEED(a->b[A_PATH], ptrdiff_t, k);
        ptrdiff_t *rem = T_NEED(a->b[A_REM], ptrdiff_t, k);
        ptrdiff_t *c4r = T_NEED(a->b[A_C4R], ptrdiff_t, k);
        ptrdiff_t *r4c = T_NEED(a->b[A_R4C], ptrdiff_t, k);
        unsigned char *sr = T_NEED(a->b[A_SR], unsigned char, k);
        unsigned char *sc = T_NEED(a->b[A_SC], unsigned char, k);
        if (!ext || !u || !v || !spc || !path || !rem || !c4r || !r4c || !sr || !sc)
            return RKNNX_T_ENOMEM;
        for (ptrdiff_t q = 0; q < cnt; q++)
            local[m[q]] = q < nr ? q : q - nr;
        /* rows: the component's rows, then a stand-in per column; columns: its columns,
           then a stand-in per row (t_lsa reads all but the rows' and columns' own block
           from nr, nc and thresh / 2) */
        for (ptrdiff_t p = 0; p < nr * nc; p++)
            ext[p] = INFINITY;
        for (ptrdiff_t g = 0; g < neg; g++) {
            ptrdiff_t e = eg[g];
            ext[local[ei[e]] * nc + local[rows + ej[e]]] = ec[e];
        }
        if (t_lsa(ext, nr, nc, thresh / 2, c4r, r4c, u, v, spc, path, rem, sr, sc) < 0)
            return RKNNX_T_ENOMEM;   /* cannot happen: every row has a stand-in column */
        for (ptrdiff_t p = 0; p < nr; p++)
            if (c4r[p] < nc) {
                match4row[m[p]] = m[nr + c4r[p]] - rows;
                matched++;
            }
    }
    return matched;
}

ptrdiff_t rknnx_t_assign(const double *cost, ptrdiff_t rows, ptrdiff_t cols, double thresh,
                         ptrdiff_t *match4row)
{
    t_asg a;
    memset(&a, 0, sizeof a);
    ptrdiff_t ne = 0, r = RKNNX_T_ENOMEM;
    /* the edges' rows and columns are int32 (half the bytes of a crowd's edges): a
       matrix past that many rows or columns would not fit in memory anyway */
    if (rows > INT32_MAX || cols > INT32_MAX)
        return RKNNX_T_ENOMEM;
    int32_t *ei = T_NEED(a.b[A_EI], int32_t, rows * cols + 1);
    int32_t *ej = T_NEED(a.b[A_EJ], int32_t, rows * cols + 1);
    double *ec = T_NEED(a.b[A_EC], double, rows * cols + 1);
    if (ei && ej && ec) {
        for (ptrdiff_t i = 0; i < rows; i++)
            for (ptrdiff_t j = 0; j < cols; j++)
                if (cost[i * cols + j] <= thresh) {
                    ei[ne] = (int32_t)i;
                    ej[ne] = (int32_t)j;
                    ec[ne++] = cost[i * cols + j];
                }
        r = t_assign(&a, ei, ej, ec, ne, rows, cols, thresh, match4row);
    }
    for (int i = 0; i < A_N; i++)
        t_drop(&a.b[i]);
    return r;
}

/* ---- the Kalman filter --------------------------------------------------------------- */

/* The paper's (DeepSORT's) constant-velocity filter: state x, y, a, h (or x, y, w, h) and
   their velocities, measured directly; the noise in proportion to the box's height (and
   width for xywh).  Its transition, process noise and measurement noise never couple two
   coordinates, and its first covariance is diagonal, so its 8 x 8 covariance is exactly
   four 2 x 2 blocks (a coordinate and its velocity) and is kept as such: pp, pv, vv per
   coordinate.  The numbers are the 8 x 8 filter's (its other entries stay 0). */
#define T_WP (1.0 / 20)    /* position */
#define T_WV (1.0 / 160)   /* velocity */

enum { T_TRACKED = 0, T_LOST = 1, T_UNCONFIRMED = 2, T_REMOVED = 3 };

typedef struct {
    double mean[8];    /* 4 coordinates, then their velocities */
    double pp[4], pv[4], vv[4];  /* the covariance, per coordinate */
    int64_t id;        /* 0 while unconfirmed */
    double last;       /* the frame clock at its last match */
    double born;       /* the frame clock at its birth */
    ptrdiff_t row;     /* the detection it took in this frame, or -1 */
    int state;
    int hits;          /* matches since its birth */
    int32_t cls;
    float score;
} t_track;

static void t_measure(const float *b, int state, double z[4])
{
    double w = (double)b[2] - b[0], h = (double)b[3] - b[1];
    z[0] = b[0] + w / 2;
    z[1] = b[1] + h / 2;
    z[2] = state == RKNNX_T_XYAH ? w / h : w;
    z[3] = h;
}

/* the standard deviations of the position noise (wp = T_WP, the third of xyah fixed) and
   of the velocity noise per coordinate, scaled from the box in `mean` */
static void t_noise(const double *mean, int state, double wp, double fixed_a, double wv,
                    double sp[4], double sv[4])
{
    double h = mean[3];
    if (state == RKNNX_T_XYAH) {
        sp[0] = sp[1] = sp[3] = wp * h;
        sp[2] = fixed_a;
        sv[0] = sv[1] = sv[3] = wv * h;
        sv[2] = 1e-5;
    } else {
        double w = mean[2];
        sp[0] = sp[2] = wp * w;
        sp[1] = sp[3] = wp * h;
        sv[0] = sv[2] = wv * w;
        sv[1] = sv[3] = wv * h;
    }
}

static void t_box(const double *mean, int state, float *b)
{
    double h = mean[3], w = state == RKNNX_T_XYAH ? mean[2] * h : mean[2];
    b[0] = (float)(mean[0] - w / 2);
    b[1] = (float)(mean[1] - h / 2);
    b[2] = (float)(mean[0] + w / 2);
    b[3] = (float)(mean[1] + h / 2);
}

static void t_kf_init(t_track *t, const float *box, int state)
{
    double z[4], sp[4], sv[4];
    t_measure(box, state, z);
    for (int i = 0; i < 4; i++) {
        t->mean[i] = z[i];
        t->mean[4 + i] = 0;
    }
    t_noise(t->mean, state, 2 * T_WP, 1e-2, 10 * T_WV, sp, sv);
    for (int i = 0; i < 4; i++) {
        t->pp[i] = sp[i] * sp[i];
        t->pv[i] = 0;
        t->vv[i] = sv[i] * sv[i];
    }
}

/* x <- F(k) x, P <- F(k) P F(k)^T + k Q with F(k) = [[1, k], [0, 1]] per coordinate: a gap
   of k frames in one step, its process noise k frames' worth */
static void t_kf_predict(t_track *t, int state, double k)
{
    double sp[4], sv[4];
    t_noise(t->mean, state, T_WP, 1e-2, T_WV, sp, sv);
    for (int i = 0; i < 4; i++) {
        t->mean[i] += k * t->mean[4 + i];
        double pp = t->pp[i], pv = t->pv[i], vv = t->vv[i];
        t->pp[i] = pp + k * (pv + pv) + k * k * vv + k * (sp[i] * sp[i]);
        t->pv[i] = pv + k * vv;
        t->vv[i] = vv + k * (sv[i] * sv[i]);
    }
}

/* the update with the measured box: per coordinate s = pp + r^2, gain (pp, pv) / s,
   x += gain (z - x), P -= gain s gain^T */
static void t_kf_update(t_track *t, const float *box, int state)
{
    double z[4], sr[4], unused[4];
    t_measure(box, state, z);
    t_noise(t->mean, state, T_WP, 1e-1, T_WV, sr, unused);
    for (int i = 0; i < 4; i++) {
        double pp = t->pp[i], pv = t->pv[i], vv = t->vv[i];
        double s = pp + sr[i] * sr[i];
        double kp = pp / s, kv = pv / s, y = z[i] - t->mean[i];
        t->mean[i] += kp * y;
        t->mean[4 + i] += kv * y;
        t->pp[i] = pp - kp * pp;
        t->pv[i] = pv - kp * pv;
        t->vv[i] = vv - kv * pv;
    }
}

/* the window of updates over which the scratch's needs are taken before a trim */
#define T_TRIM_EVERY 32

enum { B_HI, B_LO, B_POOL, B_DETS, B_M4R, B_USED, B_LOST, B_LOSTBOX, B_BOXES, B_SCORES,
       B_CLASSES, B_IDS, B_DET, B_STARTED, B_ENDED, B_ORDER, B_N };

struct rknnx_tracker {
    rknnx_t_params p;
    t_buf tracks;      /* t_track [ntracks] */
    ptrdiff_t ntracks;
    int64_t next_id;   /* the last id given */
    double now;        /* the frame clock: frames since the first update */
    long long frames;  /* updates since the last reset */
    t_buf b[B_N];      /* a frame's scratch */
    t_asg asg;
    int since_trim;    /* updates since the scratch was last trimmed */
    rknnx_t_out out;
};

/* ---- the tracker --------------------------------------------------------------------- */

static double t_iou(const float *a, const float *b)
{
    double iw = fmin(a[2], b[2]) - fmax(a[0], b[0]);
    double ih = fmin(a[3], b[3]) - fmax(a[1], b[1]);
    if (iw <= 0 || ih <= 0)
        return 0;
    double inter = iw * ih;
    double ua = ((double)a[2] - a[0]) * ((double)a[3] - a[1]) +
                ((double)b[2] - b[0]) * ((double)b[3] - b[1]) - inter;
    return ua > 0 ? inter / ua : 0;
}

rknnx_tracker *rknnx_t_new(const rknnx_t_params *p)
{
    rknnx_tracker *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->p = *p;
    return t;
}

void rknnx_t_reset(rknnx_tracker *t)
{
    t->since_trim = 0;
    t->ntracks = 0;
    t->next_id = 0;
    t->now = 0;
    t->frames = 0;
    memset(&t->out, 0, sizeof t->out);
}

void rknnx_t_free(rknnx_tracker *t)
{
    if (!t)
        return;
    for (int i = 0; i < B_N; i++)
        t_drop(&t->b[i]);
    t_drop(&t->tracks);
    for (int i = 0; i < A_N; i++)
        t_drop(&t->asg.b[i]);
    free(t);
}

size_t rknnx_t_bytes(const rknnx_tracker *t)
{
    size_t total = sizeof *t + t->tracks.cap;
    for (int i = 0; i < B_N; i++)
        total += t->b[i].cap;
    for (int i = 0; i < A_N; i++)
        total += t->asg.b[i].cap;
    return total;
}

ptrdiff_t rknnx_t_live(const rknnx_tracker *t)
{
    return t->ntracks;
}

const rknnx_t_out *rknnx_t_result(const rknnx_tracker *t)
{
    return &t->out;
}

static void t_take(rknnx_tracker *t, t_track *tr, const float *boxes, const float *scores,
                   const int32_t *classes, ptrdiff_t d)
{
    t_kf_update(tr, boxes + 4 * d, t->p.state);
    tr->row = d;
    tr->last = t->now;
    tr->score = scores[d];
    tr->cls = classes[d];
    tr->hits++;
}

typedef struct {
    float x1;
    ptrdiff_t j;
} t_key;

/* a bottom-up merge sort of n keys by x1 (stable), through tmp [n]; returns the sorted
   array (key or tmp) */
static t_key *t_sort_keys(t_key *key, t_key *tmp, ptrdiff_t n)
{
    for (ptrdiff_t w = 1; w < n; w *= 2) {
        for (ptrdiff_t lo = 0; lo < n; lo += 2 * w) {
            ptrdiff_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            ptrdiff_t i = lo, j = mid, o = lo;
            while (i < mid && j < hi)
                tmp[o++] = key[j].x1 < key[i].x1 ? key[j++] : key[i++];
            while (i < mid)
                tmp[o++] = key[i++];
            while (j < hi)
                tmp[o++] = key[j++];
        }
        t_key *x = key;
        key = tmp;
        tmp = x;
    }
    return key;
}

/* One association: the tracks pool[0..np) against the detections det[0..nd) not yet used;
   matched tracks take their detection.  The pairs that can match (cost <= thresh, so
   overlapping) are found by a sweep over the detections sorted by x1: a track meets only
   those whose x1 lies within (its x1 - the widest box, its x2).  Returns 0 or
   RKNNX_T_ENOMEM. */
static int t_associate(rknnx_tracker *t, const ptrdiff_t *pool, ptrdiff_t np,
                       const ptrdiff_t *det, ptrdiff_t nd, const float *boxes,
                       const float *scores, const int32_t *classes, int fuse,
                       double thresh)
{
    if (np == 0 || nd == 0)
        return 0;
    if (np > INT32_MAX || nd > INT32_MAX)
        return RKNNX_T_ENOMEM;   /* the edges hold int32 indices (t_assign) */
    t_track *tr = t->tracks.p;
    unsigned char *used = t->b[B_USED].p;
    t_asg *a = &t->asg;
    t_key *key = T_NEED(a->b[A_SORT], t_key, 2 * nd);
    float *tb = T_NEED(a->b[A_TBOX], float, 4 * np);
    ptrdiff_t *m4r = T_NEED(t->b[B_M4R], ptrdiff_t, np);
    if (!key || !tb || !m4r)
        return RKNNX_T_ENOMEM;
    ptrdiff_t nk = 0;
    float wmax = 0;
    for (ptrdiff_t j = 0; j < nd; j++) {
        if (used[det[j]])
            continue;
        const float *db = boxes + 4 * det[j];
        key[nk].x1 = db[0];
        key[nk++].j = j;
        if (db[2] - db[0] > wmax)
            wmax = db[2] - db[0];
    }
    if (nk == 0)
        return 0;
    key = t_sort_keys(key, key + nd, nk);
    ptrdiff_t ne = 0, ecap = 0;
    int32_t *ei = NULL, *ej = NULL;
    double *ec = NULL;
    for (ptrdiff_t i = 0; i < np; i++) {
        const t_track *x = tr + pool[i];
        float *b = tb + 4 * i;
        t_box(x->mean, t->p.state, b);
        /* the first key with x1 > b[0] - wmax */
        ptrdiff_t lo = 0, hi = nk;
        float from = b[0] - wmax;
        while (lo < hi) {
            ptrdiff_t mid = lo + (hi - lo) / 2;
            if (key[mid].x1 <= from)
                lo = mid + 1;
            else
                hi = mid;
        }
        for (ptrdiff_t q = lo; q < nk && key[q].x1 < b[2]; q++) {
            ptrdiff_t d = det[key[q].j];
            if (t->p.per_class && classes[d] != x->cls)
                continue;
            double iou = t_iou(b, boxes + 4 * d);
            if (!(iou > 0))
                continue;
            double c = 1 - (fuse ? iou * scores[d] : iou);
            if (!(c <= thresh))
                continue;
            if (ne == ecap) {
                ecap = ecap ? 2 * ecap : 64;
                ei = T_NEED(a->b[A_EI], int32_t, ecap);
                ej = T_NEED(a->b[A_EJ], int32_t, ecap);
                ec = T_NEED(a->b[A_EC], double, ecap);
                if (!ei || !ej || !ec)
                    return RKNNX_T_ENOMEM;
            }
            ei[ne] = (int32_t)i;
            ej[ne] = (int32_t)key[q].j;
            ec[ne++] = c;
        }
    }
    /* the edges in (track, detection) order, whatever the sweep's: the solver's ties
       then do not depend on the boxes' x order */
    ptrdiff_t r = t_assign(a, ei, ej, ec, ne, np, nd, thresh, m4r);
    if (r < 0)
        return RKNNX_T_ENOMEM;
    for (ptrdiff_t i = 0; i < np; i++)
        if (m4r[i] >= 0) {
            ptrdiff_t d = det[m4r[i]];
            used[d] = 1;
            t_take(t, tr + pool[i], boxes, scores, classes, d);
        }
    return 0;
}

static void t_confirm(rknnx_tracker *t, t_track *tr, int64_t *started)
{
    tr->state = T_TRACKED;
    tr->id = ++t->next_id;
    started[t->out.nstarted++] = tr->id;
}

static void t_remove(rknnx_tracker *t, t_track *tr, int64_t *ended)
{
    if (tr->id > 0)
        ended[t->out.nended++] = tr->id;
    tr->state = T_REMOVED;
}

static void t_sort_ids(int64_t *a, ptrdiff_t n)
{
    for (ptrdiff_t i = 1; i < n; i++) {
        int64_t v = a[i];
        ptrdiff_t j = i;
        while (j > 0 && a[j - 1] > v) {
            a[j] = a[j - 1];
            j--;
        }
        a[j] = v;
    }
}

/* every buffer a frame of n detections over the current tracks may need */
static int t_reserve(rknnx_tracker *t, ptrdiff_t n)
{
    /* (one more of each: a buffer of no bytes would be NULL) */
    ptrdiff_t nt = t->ntracks + n + 1;
    n++;
    if (!T_NEED(t->tracks, t_track, nt) || !T_NEED(t->b[B_HI], ptrdiff_t, n) ||
        !T_NEED(t->b[B_LO], ptrdiff_t, n) || !T_NEED(t->b[B_POOL], ptrdiff_t, nt) ||
        !T_NEED(t->b[B_DETS], ptrdiff_t, n) || !T_NEED(t->b[B_USED], unsigned char, n) ||
        !T_NEED(t->b[B_BOXES], float, 4 * n) || !T_NEED(t->b[B_SCORES], float, n) ||
        !T_NEED(t->b[B_CLASSES], int32_t, n) || !T_NEED(t->b[B_IDS], int64_t, n) ||
        !T_NEED(t->b[B_DET], int64_t, n) || !T_NEED(t->b[B_STARTED], int64_t, nt) ||
        !T_NEED(t->b[B_ENDED], int64_t, nt) || !T_NEED(t->b[B_ORDER], ptrdiff_t, nt) ||
        !T_NEED(t->b[B_LOST], ptrdiff_t, nt) || !T_NEED(t->b[B_LOSTBOX], float, 4 * nt))
        return RKNNX_T_ENOMEM;
    return 0;
}

static void t_remove_duplicates(rknnx_tracker *t, int64_t *ended)
{
    t_track *tr = t->tracks.p;
    ptrdiff_t *lost = t->b[B_LOST].p, nl = 0;
    float *lb = t->b[B_LOSTBOX].p;
    double thr = t->p.dup_iou;
    for (ptrdiff_t b = 0; b < t->ntracks; b++)
        if (tr[b].state == T_LOST) {
            t_box(tr[b].mean, t->p.state, lb + 4 * nl);
            lost[nl++] = b;
        }
    if (nl == 0)
        return;
    for (ptrdiff_t a = 0; a < t->ntracks; a++) {
        if (tr[a].state != T_TRACKED && tr[a].state != T_UNCONFIRMED)
            continue;
        float ba[4];
        t_box(tr[a].mean, t->p.state, ba);
        for (ptrdiff_t k = 0; k < nl && tr[a].state != T_REMOVED; k++) {
            t_track *x = tr + lost[k];
            if (x->state != T_LOST || (t->p.per_class && x->cls != tr[a].cls) ||
                !(t_iou(ba, lb + 4 * k) > thr))
                continue;
            /* the younger of the two ends (the paper's rule) */
            if (t->now - tr[a].born > t->now - x->born)
                t_remove(t, x, ended);
            else
                t_remove(t, tr + a, ended);
        }
    }
}

static int t_frame(rknnx_tracker *t, const float *boxes, const float *scores,
                   const int32_t *classes, ptrdiff_t n, double step)
{
    const rknnx_t_params *p = &t->p;
    int first = t->frames == 0, rc;
    t->frames++;
    t->now += step;
    t_track *tr = t->tracks.p;
    ptrdiff_t *hi = t->b[B_HI].p, *lo = t->b[B_LO].p, *pool = t->b[B_POOL].p, *left = t->b[B_DETS].p;
    unsigned char *used = t->b[B_USED].p;
    int64_t *started = t->b[B_STARTED].p, *ended = t->b[B_ENDED].p;
    ptrdiff_t nh = 0, nl = 0, np = 0;
    for (ptrdiff_t d = 0; d < n; d++) {
        const float *b = boxes + 4 * d;
        used[d] = 0;
        if (!(b[2] > b[0] && b[3] > b[1]))
            continue;   /* no area: never tracked */
        if (scores[d] >= p->high)
            hi[nh++] = d;
        else if (scores[d] >= p->low)
            lo[nl++] = d;
    }
    /* 1. predict */
    for (ptrdiff_t i = 0; i < t->ntracks; i++) {
        tr[i].row = -1;
        if (tr[i].state == T_LOST) {
            tr[i].mean[7] = 0;
            if (p->state == RKNNX_T_XYWH)
                tr[i].mean[6] = 0;
        }
        if (step > 0)
            t_kf_predict(tr + i, p->state, step);
    }
    /* 2. confirmed tracks against the high boxes */
    for (ptrdiff_t i = 0; i < t->ntracks; i++)
        if (tr[i].state == T_TRACKED || tr[i].state == T_LOST)
            pool[np++] = i;
    if ((rc = t_associate(t, pool, np, hi, nh, boxes, scores, classes, p->fuse_score,
                          p->match)) < 0)
        return rc;
    /* 3. those left against the low boxes */
    ptrdiff_t np2 = 0;
    for (ptrdiff_t i = 0; i < np; i++) {
        t_track *x = tr + pool[i];
        if (x->row < 0 && (x->state == T_TRACKED || p->second_lost))
            pool[np2++] = pool[i];
    }
    if ((rc = t_associate(t, pool, np2, lo, nl, boxes, scores, classes, 0,
                          p->match_low)) < 0)
        return rc;
    for (ptrdiff_t i = 0; i < t->ntracks; i++)
        if (tr[i].state == T_TRACKED || tr[i].state == T_LOST)
            tr[i].state = tr[i].row >= 0 ? T_TRACKED : T_LOST;
    /* 4. unconfirmed tracks against the high boxes left */
    ptrdiff_t nu = 0, nleft = 0;
    for (ptrdiff_t i = 0; i < t->ntracks; i++)
        if (tr[i].state == T_UNCONFIRMED)
            pool[nu++] = i;
    for (ptrdiff_t j = 0; j < nh; j++)
        if (!used[hi[j]])
            left[nleft++] = hi[j];
    if ((rc = t_associate(t, pool, nu, left, nleft, boxes, scores, classes, p->fuse_score,
                          p->match_unconfirmed)) < 0)
        return rc;
    for (ptrdiff_t i = 0; i < nu; i++) {
        t_track *x = tr + pool[i];
        if (x->row < 0)
            t_remove(t, x, ended);
        else if (x->hits >= p->min_hits)
            t_confirm(t, x, started);
    }
    /* 5. new tracks */
    for (ptrdiff_t j = 0; j < nleft; j++) {
        ptrdiff_t d = left[j];
        if (used[d] || !(scores[d] >= p->new_track))
            continue;
        t_track *x = tr + t->ntracks++;
        memset(x, 0, sizeof *x);
        t_kf_init(x, boxes + 4 * d, p->state);
        x->row = d;
        x->born = x->last = t->now;
        x->score = scores[d];
        x->cls = classes[d];
        x->state = T_UNCONFIRMED;
        used[d] = 1;
        if (first || p->min_hits == 0)
            t_confirm(t, x, started);
    }
    /* 6. lost tracks past the buffer end; duplicates */
    for (ptrdiff_t i = 0; i < t->ntracks; i++)
        if (tr[i].state == T_LOST && t->now - tr[i].last > p->max_lost)
            t_remove(t, tr + i, ended);
    t_remove_duplicates(t, ended);
    /* the output, in id order (the tracks are close to it already) */
    ptrdiff_t *ord = t->b[B_ORDER].p, no = 0, keep = 0;
    for (ptrdiff_t i = 0; i < t->ntracks; i++) {
        if (tr[i].state == T_TRACKED && tr[i].row >= 0) {
            ptrdiff_t j = no++;
            while (j > 0 && tr[ord[j - 1]].id > tr[i].id) {
                ord[j] = ord[j - 1];
                j--;
            }
            ord[j] = i;
        }
    }
    rknnx_t_out *o = &t->out;
    o->n = no;
    o->boxes = t->b[B_BOXES].p;
    o->scores = t->b[B_SCORES].p;
    o->classes = t->b[B_CLASSES].p;
    o->ids = t->b[B_IDS].p;
    o->detection = t->b[B_DET].p;
    o->started = started;
    o->ended = ended;
    for (ptrdiff_t k = 0; k < no; k++) {
        const t_track *x = tr + ord[k];
        t_box(x->mean, p->state, o->boxes + 4 * k);
        o->scores[k] = x->score;
        o->classes[k] = x->cls;
        o->ids[k] = x->id;
        o->detection[k] = x->row;
    }
    t_sort_ids(started, o->nstarted);
    t_sort_ids(ended, o->nended);
    for (ptrdiff_t i = 0; i < t->ntracks; i++)
        if (tr[i].state != T_REMOVED)
            tr[keep++] = tr[i];
    t->ntracks = keep;
    return 0;
}

int rknnx_t_update(rknnx_tracker *t, const float *boxes, const float *scores,
                   const int32_t *classes, ptrdiff_t n, double step)
{
    if (n < 0 || !(step >= 0) || !isfinite(step))
        return RKNNX_T_EINVAL;
    for (ptrdiff_t d = 0; d < 4 * n; d++)
        if (!isfinite(boxes[d]))
            return RKNNX_T_EINVAL;
    for (ptrdiff_t d = 0; d < n; d++)
        if (!isfinite(scores[d]))
            return RKNNX_T_EINVAL;
    t->out.n = t->out.nstarted = t->out.nended = 0;
    /* every T_TRIM_EVERY updates, before this one's reserve (the last output's arrays are
       no longer read): the scratch the window did not need is given back */
    if (++t->since_trim > T_TRIM_EVERY) {
        t->since_trim = 1;
        t_trim(&t->tracks);
        for (int i = 0; i < B_N; i++)
            t_trim(&t->b[i]);
        for (int i = 0; i < A_N; i++)
            t_trim(&t->asg.b[i]);
    }
    if (t_reserve(t, n) < 0) {
        rknnx_t_reset(t);
        return RKNNX_T_ENOMEM;
    }
    int rc = t_frame(t, boxes, scores, classes, n, step);
    if (rc < 0)
        rknnx_t_reset(t);
    return rc;
}
