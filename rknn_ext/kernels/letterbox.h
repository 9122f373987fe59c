/*
 * rknnx: the letterbox kernel (rknnx.vision.letterbox), as the binding sees it.
 *
 * One pass from a camera frame to a network's input: a 3-channel 8-bit frame (any
 * strides), an NV12 frame (a Y plane and an interleaved UV plane, as OpenCV's
 * COLOR_YUV2BGR_NV12) or an I420 frame (Y, U and V planes, as COLOR_YUV2BGR_I420), each
 * plane with its own row stride, YUV in BT.601 or BT.709 limited range, is resized
 * bilinearly into a region of the output
 * (nw x nh at left, top) and the rest filled with the pad bytes; each output channel
 * takes a source channel (swap_rb: the BGR <-> RGB swap) and, through an optional table of
 * 256 codes per channel, is written as the pixel (uint8) or as its normalized and
 * quantized code (an int8 pass-through input), or its normalized float16 / float32 value
 * (an unquantized input; a table of 256 elements per channel).  The output is addressed by
 * strides, so
 * NHWC with padded rows, NCHW planes and NC1HWC2 blocks are the same loop.
 *
 * The arithmetic (integers only, the same on every path, and what the numpy reference of
 * the tests computes):
 *   a destination coordinate d of a length n resized from a source length s samples the
 *   source at (d + 0.5) * s / n - 0.5 (OpenCV's pixel-centre rule), kept as the exact
 *   fraction num / den with num = (2d + 1) s - n and den = 2n: the tap i = floor(num/den)
 *   and the weight of tap i + 1 rounded to Q8 vertically and Q11 horizontally,
 *   wy = (256 (num - i den) + den/2) / den (likewise with 2048), clamped at the edges
 *   (num < 0: i = 0, weight 0; i >= s - 1: i = s - 2, weight 1);
 *   vertical first: t = r0 (256 - wy) + r1 wy (exact in 16 bits);
 *   then horizontal: v = (t0 (2048 - wx) + t1 wx + 2**18) >> 19.
 * Within 1 of OpenCV's INTER_LINEAR (Q11 both ways, horizontal first): the two results
 * differ by less than 1 before their roundings.
 *
 * NV12 and I420 -> BGR (before the resize), per pixel (each 2x2 block shares its U, V),
 * u = U - 128, v = V - 128, with the matrix's coefficients in Q20 and the sums rounded
 * half up, saturated to 0..255; BT.601 (OpenCV's integers, so its conversion exactly):
 *   y = max(Y - 16, 0) * 1220542         (1.164)
 *   R = (y + 1673527 v + 2**19) >> 20    (1.596)
 *   G = (y - 852492 v - 409993 u + 2**19) >> 20   (0.813, 0.391)
 *   B = (y + 2116026 u + 2**19) >> 20    (2.018)
 * BT.709 (Kr = 0.2126, Kb = 0.0722; 255/219 for Y, 255/224 for U, V: the nearest Q20):
 *   y = max(Y - 16, 0) * 1220945         (1.16438)
 *   R = (y + 1879825 v + 2**19) >> 20    (1.79274)
 *   G = (y - 558796 v - 223607 u + 2**19) >> 20   (0.53291, 0.21325)
 *   B = (y + 2215014 u + 2**19) >> 20    (2.11240)
 *
 * The sum has no rounding before its last shift, so a path may take it in any order.
 * Where the horizontal ratio is an exact integer k (every 1920, 1280 or 3840-wide camera
 * into 640, and 1:1) every horizontal weight is 0 or 2048 (k odd: output pixel x is one
 * source pixel e) or 1024 (k even: the mean of pixels e, e + 1), and letterbox.c takes
 * the same integers as
 *   k odd, one source row:    v = r[e]
 *   k odd, rows r0, r1:       v = (t[e] + 128) >> 8              (t = r0 (256 - wy) + r1 wy)
 *   k even, one source row:   v = (r[e] + r[e + 1] + 1) >> 1
 *   k even, rows r0, r1:      v = (t[e] + t[e + 1] + 256) >> 9   (a 2:1 downscale: the
 *                             mean of the 2x2 block, (a + b + c + d + 2) >> 2, as OpenCV's
 *                             INTER_LINEAR at an exact 2:1; taken in bytes as the
 *                             rounded-up mean of the pairs' rounded-up means, less 1
 *                             where a pair was odd and the two means differ in parity:
 *                             the same integer for all 2**32 blocks, checked)
 * over contiguous bytes (the picked pixels copied out first unless they are the frame's
 * own), so its work follows the output's pixels, not the frame's.
 *
 * The vertical blend runs on 128-bit vectors (SSE2, NEON) or AVX2, the horizontal pass on
 * AVX2 (gathered taps), the exact-ratio paths' arithmetic and byte shuffles (the B <-> R
 * swap, the pick of every other pixel, the planes of an NCHW output) on 128-bit vectors
 * or AVX2, where rknnx_k_path() (kernels.h, the one dispatch of the kernels) allows: the
 * same numbers as the plain loops.
 * The YUV -> BGR sums run on 128-bit vectors (32-bit lanes) or AVX2, where each 32-bit
 * product is one vpmaddwd of 16-bit halves (k = 128 kh + kl with |kl| < 128, so
 * x k = (x << 7) kh + x kl, exact for x in -128..255) and the clamp to 0..255 is the
 * saturating packs: the same integers (tests/c/letterbox_check.c checks all 2**24
 * (Y, U, V) triples of both matrices on every path).  A frame at 1:1 into packed pixels is
 * converted straight into the output, swapped on the way; at 2:1 both ways (pairs of
 * adjacent pixels from an even column, rows yi, yi + 1 with yi even: one chroma row for
 * the 2x2 block) the AVX2 path converts the two rows with one chroma computation and
 * takes each block's (a + b + c + d + 2) >> 2 of the clamped pixels in the same pass.
 * Built with the kernels' warnings and -ffp-contract=off; no floating point is used.
 */
#ifndef RKNNX_LETTERBOX_H
#define RKNNX_LETTERBOX_H

#include <stddef.h>
#include <stdint.h>

enum {
    RKNNX_LB_BGR = 0,      /* 3 channels of 8 bits */
    RKNNX_LB_NV12 = 1,     /* Y plane + interleaved UV plane (U first), as BGR */
    RKNNX_LB_I420 = 2      /* Y, U and V planes, as BGR */
};

enum {
    RKNNX_LB_BT601 = 0,    /* the YUV matrices, limited range */
    RKNNX_LB_BT709 = 1
};

enum {
    RKNNX_LB_OK = 0,
    RKNNX_LB_ENOMEM = -1,  /* the row buffers could not be allocated */
    RKNNX_LB_EINVAL = -2   /* parameters the Python layer never passes */
};

typedef struct rknnx_lb_params {
    /* the frame: w x h pixels */
    int fmt;
    ptrdiff_t w, h;
    const unsigned char *src;   /* BGR: channel 0 of pixel (0, 0); NV12, I420: the Y plane */
    ptrdiff_t src_row;          /* bytes from a row to the next (the Y plane's) */
    ptrdiff_t src_px;           /* BGR: bytes from a pixel to the next */
    ptrdiff_t src_ch;           /* BGR: bytes from a channel to the next */
    const unsigned char *uv;    /* NV12: the UV plane (w/2 pairs a row, h/2 rows);
                                   I420: the U plane (w/2 bytes a row, h/2 rows) */
    ptrdiff_t uv_row;
    const unsigned char *v;     /* I420: the V plane (w/2 bytes a row, h/2 rows) */
    ptrdiff_t v_row;
    int matrix;                 /* NV12, I420: RKNNX_LB_BT601 or RKNNX_LB_BT709 */
    /* the output: W x H pixels, channel c of pixel (x, y) at
       dst + y dst_row + x dst_px + dst_ch[c] */
    unsigned char *dst;
    ptrdiff_t W, H;
    ptrdiff_t dst_row, dst_px;
    ptrdiff_t dst_ch[3];
    /* the resized region: nw x nh at (left, top), inside the output */
    ptrdiff_t nw, nh, left, top;
    int swap_rb;                /* 0: output channel c is the frame's channel c (B, G, R
                                   for NV12); 1: channel 2 - c */
    const unsigned char *lut;   /* NULL: the pixel itself; else 3 x 256 codes of elem
                                   bytes: output channel c of value v is the element at
                                   lut + (256 c + v) elem */
    unsigned char pad[3];       /* elem 1: the bytes written outside the region, per
                                   channel */
    int elem;                   /* the output's element: 0 or 1 byte (pixels, int8
                                   codes), 2 (float16) or 4 (float32: a table needed) */
    unsigned char padx[12];     /* elem 2, 4: the pad elements, channel c at padx + c elem */
} rknnx_lb_params;

/* Resize, pad, swap and convert in one pass; RKNNX_LB_OK or a negative RKNNX_LB_*.
   Thread-safe (no state but the dispatch level); allocates its row buffers. */
int rknnx_lb_run(const rknnx_lb_params *p);

/* The taps of one axis (tests and the binding's checks): for d in [0, n), the tap
   i[d] and the weight of i[d] + 1 in units of 2**bits (bits 8 or 11). */
void rknnx_lb_taps(ptrdiff_t s, ptrdiff_t n, int bits, int32_t *i, int32_t *wgt);

#endif /* RKNNX_LETTERBOX_H */
