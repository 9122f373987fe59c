/*
 * rknnx: the C of the YOLO decoders (rknnx.vision.decode) and their masks.
 *
 * One tensor description for every layout the NPU writes: a channel c of a cell (y, x) is
 * at base + (c / C2) * s_c1 + (c % C2) * s_c2 + y * s_y + x * s_x (bytes), so NCHW
 * (C2 = C, s_c2 the plane), NHWC (C2 = C, s_c2 one element, any pixel stride) and
 * NC1HWC2 (C2 = 8 or 16) are read in place, with whatever strides the array or the
 * runtime's attribute gives.  8-bit codes are read through a table of their 256 values
 * (the binding computes it with numpy's expression, (q - zp) * scale in float32), so a
 * value here equals numpy's bit for bit; int16 is ((float)q - zp) * scale, float16 the
 * tree's one conversion (rknnx_float16.h).
 *
 * rknnx_y_decode: the candidates (a cell passes when its score >= conf; 8-bit class
 * codes are compared with the least code that passes, computed by the binding from the
 * same table, so the rule is the float one exactly), sorted by score descending then
 * candidate index, the first max_nms of them through a greedy NMS (per class unless
 * agnostic; IoU = inter / (area_i + area_j - inter) on the unclipped boxes, suppressed
 * when > iou), boxes computed only for the candidates the NMS visits, at most max_det
 * kept.  rknnx_y_masks: the masks of the kept boxes, computed inside each box only.
 * Built with the kernels' warnings and -ffp-contract=off; no allocation survives a call;
 * no Python: the binding releases the GIL around both.
 */
#ifndef RKNNX_YOLO_H
#define RKNNX_YOLO_H

#include <stddef.h>
#include <stdint.h>

enum { RKNNX_Y_I8 = 0, RKNNX_Y_U8 = 1, RKNNX_Y_I16 = 2, RKNNX_Y_F16 = 3, RKNNX_Y_F32 = 4 };

/* families: the box each candidate gets */
enum {
    RKNNX_Y_DFL = 0,     /* yolov8/yolo11 split heads, seg and pose: 4 x reg_max DFL bins */
    RKNNX_Y_CXCYWH = 1,  /* Ultralytics' fused [1, 4+nc, N]: cx, cy, w, h in pixels */
    RKNNX_Y_ANCHOR = 2,  /* yolov5: (2 s - 0.5 + grid) stride, (2 s)^2 anchor; objectness */
    RKNNX_Y_YOLOX = 3    /* yolox: (p + grid) stride, exp(p) stride; objectness */
};

typedef struct {
    const char *base;        /* element (0, 0, 0) */
    int dtype;               /* RKNNX_Y_* */
    ptrdiff_t C, H, W, C2;   /* logical channels, rows, columns; channels per block */
    ptrdiff_t s_c1, s_c2, s_y, s_x;  /* byte strides */
    float scale, zp;         /* int16: (q - zp) * scale */
    const float *lut;        /* 8-bit: the value of each code, indexed by its byte */
    const ptrdiff_t *off;    /* the byte offset of each channel (set by the functions
                                below for their own copies; NULL: computed) */
} rknnx_y_tensor;

/* One scale (one output or group of outputs of one grid). */
typedef struct {
    rknnx_y_tensor box;      /* box channels (DFL bins, cxcywh, or the whole head) */
    rknnx_y_tensor cls;      /* class channels cls_off .. cls_off + nc (+ per anchor) */
    rknnx_y_tensor sum;      /* score_sum; base NULL when absent */
    ptrdiff_t box_off, cls_off, obj_off;  /* first channel of each, anchor 0 */
    ptrdiff_t group;         /* channels per anchor (ANCHOR); 0 otherwise */
    int na;                  /* anchors at each cell (1 but for ANCHOR) */
    float anchors[16];       /* (w, h) per anchor, input pixels */
    float sx, sy;            /* strides, input pixels per cell */
    int qthr;                /* 8-bit classes: least flipped code (code ^ 0x80 for int8)
                                that can pass; 256: none can */
    int qobj;                /* 8-bit objectness: least flipped code that can pass */
    int qsum;                /* 8-bit score_sum: cells below this flipped code are skipped
                                (-1: no skipping) */
    float fsum;              /* float score_sum: cells below it are skipped (-inf: none) */
    const float *score_lut;  /* 8-bit classes: the score of each code (sigmoid applied for
                                pose); NULL: the value itself */
    const float *exps;       /* 8-bit DFL boxes: exp(-d * scale) for d = 0..255, made once
                                by a plan (rknnx_y_exps); NULL: made by each call */
} rknnx_y_scale;

typedef struct {
    int family;              /* RKNNX_Y_DFL .. */
    int nscales;
    const rknnx_y_scale *scales;
    ptrdiff_t nc;            /* classes */
    ptrdiff_t reg_max;       /* DFL bins per side */
    int sigmoid;             /* score = sigmoid(class value) (pose: logits) */
    float conf, iou;
    ptrdiff_t max_det, max_nms;
    int agnostic;
    const unsigned char *class_ok;  /* nc flags, or NULL: every class */
} rknnx_y_spec;

/* Decode and NMS: fills up to max_det rows of boxes (x1 y1 x2 y2), scores, classes and
   index (the candidate's index: scales in order, then anchor, then row-major cell), at
   most one per candidate (the caller's arrays need min(max_det, cells x anchors) rows);
   a candidate with a non-finite score or box is dropped; returns how many, or -1 when
   memory ran out. */
ptrdiff_t rknnx_y_decode(const rknnx_y_spec *spec, float *boxes, float *scores,
                         int32_t *classes, int32_t *index);

/* A plan's tables, made once for many calls: the byte offset of each of t's C channels
   into off (C entries; t->off is then set to it), and the DFL table of an 8-bit box
   tensor into exps (256 entries). */
void rknnx_y_offsets_into(rknnx_y_tensor *t, ptrdiff_t *off);
void rknnx_y_exps(const rknnx_y_tensor *t, float *exps);

/* Masks: for n boxes (x1 y1 x2 y2 in input pixels) and their nm coefficients (float32,
   n x nm), sigmoid(coef . proto) at the proto's size, bilinear to H x W (half-pixel
   centres, as torch's align_corners=False), > 0.5, only at pixels (c, r) with
   x1 <= c < x2 and y1 <= r < y2; out (n x H x W bytes, 0/1) is written in full, each
   byte once (the zeros outside a box, the box's pixels).  Returns 0, or -1 when memory
   ran out. */
int rknnx_y_masks(const rknnx_y_tensor *proto, const float *coef, ptrdiff_t nm,
                  const float *boxes, ptrdiff_t n, ptrdiff_t H, ptrdiff_t W,
                  unsigned char *out);

/* The same; with zeroed != 0 the caller's out is all zeros already (numpy.zeros: pages
   the kernel maps on first touch) and only the boxes' pixels are written, so the pages
   outside every box are never touched. */
int rknnx_y_masks_into(const rknnx_y_tensor *proto, const float *coef, ptrdiff_t nm,
                       const float *boxes, ptrdiff_t n, ptrdiff_t H, ptrdiff_t W,
                       unsigned char *out, int zeroed);

#endif /* RKNNX_YOLO_H */
