/*
 * rknnx: the C of rknnx.vision.Tracker, ByteTrack (Zhang et al., "ByteTrack: Multi-Object
 * Tracking by Associating Every Detection Box", ECCV 2022) with its state in C.
 *
 * One rknnx_tracker per stream.  Its tracks live in arrays (a Kalman mean of 8 doubles and
 * a covariance of 64 per track, the track's id, state, class, clocks), and every array of a
 * frame's work (the IoU cost matrix, the assignment's, the outputs) is scratch kept in the
 * tracker that grows geometrically: once the counts of a stream have been seen, an update
 * allocates nothing.  Every 32 updates, scratch above 4 KiB that those updates used less
 * than half of is shrunk to what they needed (or freed): a crowded spike's memory (a
 * dense component's k x k costs, its edges, its tracks) is given back once it is over.  Ids come from a counter in the tracker (never a static), from 1.
 *
 * A frame (rknnx_t_update), as the paper's algorithm with the changes docs/guide/track.md
 * lists:
 *   1. every track predicted by `step` frames (a constant-velocity Kalman filter over
 *      x, y, a = w / h, h (state 0, the paper's) or x, y, w, h (state 1));
 *   2. the confirmed tracks (tracked and lost) against the boxes scoring >= high: cost
 *      1 - IoU * score, an optimal assignment in which no pair costs more than `match`;
 *   3. the confirmed tracks left (tracked, and lost too when second_lost) against the boxes
 *      scoring in [low, high): cost 1 - IoU, threshold match_low; tracked tracks still
 *      unmatched become lost;
 *   4. the unconfirmed tracks against the high boxes left: 1 - IoU * score, threshold
 *      match_unconfirmed; a track matched min_hits times in a row is confirmed and takes
 *      the next id; an unconfirmed track that misses is removed;
 *   5. the high boxes still left scoring >= new start tracks (confirmed at once on the
 *      tracker's first frame, or when min_hits is 0);
 *   6. lost tracks unseen for more than max_lost frames end; of a tracked and a lost track
 *      overlapping with IoU > dup_iou, the younger ends.
 * The output: the confirmed tracks matched in this frame in ascending id order, each with
 * the filter's box after the update, the score and class of its detection and the
 * detection's row; the ids confirmed (started) and removed (ended) in this frame.
 *
 * The assignment (rknnx_t_assign): the pairs with cost <= thresh split into connected
 * components; each component with more than one pair is solved exactly as a square problem
 * in which a track or a box may stay unmatched at thresh / 2 (so a pair is taken only when
 * it is worth its cost), by the shortest augmenting path method (Jonker and Volgenant,
 * 1987; Crouse, "On implementing 2D rectangular assignment algorithms", IEEE TAES 2016).
 * Built with the kernels' warnings and -ffp-contract=off; no Python, no locks: the binding
 * (rknn_ext/rknnx/_kernels_track.pxi) serializes the calls on one tracker and releases
 * the GIL around them.
 */
#ifndef RKNNX_TRACK_H
#define RKNNX_TRACK_H

#include <stddef.h>
#include <stdint.h>

enum { RKNNX_T_OK = 0, RKNNX_T_ENOMEM = -1, RKNNX_T_EINVAL = -2 };
enum { RKNNX_T_XYAH = 0, RKNNX_T_XYWH = 1 };

typedef struct {
    double high;               /* first association: scores >= high */
    double low;                /* second association: scores in [low, high) */
    double new_track;          /* an unmatched high box starts a track at >= new_track */
    double match;              /* cost threshold of the first association */
    double match_low;          /* of the second (paper: 0.5) */
    double match_unconfirmed;  /* of the unconfirmed tracks (paper: 0.7) */
    double max_lost;           /* frames a lost track is kept (buffer * fps / 30) */
    double dup_iou;            /* tracked and lost overlapping above it: one ends (0.85) */
    int min_hits;              /* matches after its birth before a track is confirmed */
    int state;                 /* RKNNX_T_XYAH or RKNNX_T_XYWH */
    int per_class;             /* 1: a track matches boxes of its own class only */
    int fuse_score;            /* 1: cost 1 - IoU * score in the high associations */
    int second_lost;           /* 1: lost tracks join the second association too */
} rknnx_t_params;

/* What the last update gave; the arrays belong to the tracker (valid until its next
   update, reset or free). */
typedef struct {
    ptrdiff_t n;               /* output rows */
    float *boxes;              /* [n][4] x1, y1, x2, y2 */
    float *scores;             /* [n] */
    int32_t *classes;          /* [n] */
    int64_t *ids;              /* [n] ascending */
    int64_t *detection;        /* [n] the row of the frame's detections */
    ptrdiff_t nstarted, nended;
    int64_t *started;          /* ids confirmed in this frame, ascending */
    int64_t *ended;            /* ids removed in this frame, ascending */
} rknnx_t_out;

typedef struct rknnx_tracker rknnx_tracker;

/* A tracker with these parameters and no tracks; NULL when out of memory. */
rknnx_tracker *rknnx_t_new(const rknnx_t_params *p);
void rknnx_t_free(rknnx_tracker *t);
/* No tracks, the id counter back to 0, the first-frame rule armed again; the scratch is
   kept. */
void rknnx_t_reset(rknnx_tracker *t);
/* One frame of n detections (boxes [n][4] x1, y1, x2, y2, scores [n], classes [n],
   contiguous), the prediction stepped by `step` frames (1 for the next frame; >= 0).
   RKNNX_T_EINVAL (the state untouched) for a non-finite box or score or a bad step;
   RKNNX_T_ENOMEM when the scratch cannot grow (the tracker is then reset). */
int rknnx_t_update(rknnx_tracker *t, const float *boxes, const float *scores,
                   const int32_t *classes, ptrdiff_t n, double step);
const rknnx_t_out *rknnx_t_result(const rknnx_tracker *t);
/* Live tracks (confirmed tracked or lost, and unconfirmed). */
ptrdiff_t rknnx_t_live(const rknnx_tracker *t);
/* Bytes of state and scratch the tracker holds. */
size_t rknnx_t_bytes(const rknnx_tracker *t);

/* The assignment with a threshold: cost [rows][cols] (row-major), match4row [rows]
   receives the column of each row or -1.  Minimizes the sum of the matched costs plus
   thresh / 2 for every unmatched row and column, over the matchings that use no pair
   costing more than thresh (a NaN cost: never).  Returns the number of matched pairs, or
   RKNNX_T_ENOMEM.  (The tracker calls the same solver with its own scratch.) */
ptrdiff_t rknnx_t_assign(const double *cost, ptrdiff_t rows, ptrdiff_t cols, double thresh,
                         ptrdiff_t *match4row);

#endif
