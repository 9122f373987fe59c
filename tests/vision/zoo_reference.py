"""A numpy reference of the model zoo's Python post-processing, written from its algorithm
(the decoders of rknnx.vision must equal it), and the zoo-style baseline bench/suite.py
times the decoders against.

It works as the zoo's examples do: every cell of every scale decoded (the DFL softmax of
all of them), the threshold applied to the float scores, a greedy NMS per class in numpy.
The rule is the one docs/guide/decode.md states: score = best class probability (yolov5, yolox:
objectness x best class; pose: sigmoid of the class logit); a candidate passes when
score >= conf (float32); boxes xyxy in input pixels, not clipped, strides = input size /
grid per axis; candidates in order of score descending then index (scales in output order,
anchors, row-major cells), at most ``max_nms`` of them into a greedy NMS per class (across
classes when ``agnostic``) with IoU = inter / (area_i + area_j - inter), suppressed when
IoU > iou; at most ``max_det`` kept.

Inputs are float32 arrays in NCHW (the dequantized outputs, as the zoo's Python receives
them).  Results: dict with boxes [N,4] float64, scores float32, classes, index (candidate
index), and masks (float [N,H,W] values before the 0.5 threshold) / keypoints [N,K,3].
"""

from __future__ import annotations

import numpy as np

ZOO_ANCHORS = ((10, 13, 16, 30, 33, 23), (30, 61, 62, 45, 59, 119),
               (116, 90, 156, 198, 373, 326))


def _grid(h, w):
    col, row = np.meshgrid(np.arange(w, dtype=np.float64), np.arange(h, dtype=np.float64))
    return col, row


def dfl(box, reg_max=16):
    """[4*reg_max, H, W] -> [4, H, W]: the expected bin of each side's softmax."""
    c, h, w = box.shape
    x = box.astype(np.float64).reshape(4, reg_max, h, w)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    bins = np.arange(reg_max, dtype=np.float64).reshape(1, reg_max, 1, 1)
    return (e * bins).sum(axis=1) / e.sum(axis=1)


def _sigmoid32(x):
    x = np.asarray(x, np.float32)
    with np.errstate(over="ignore"):
        return (np.float32(1) / (np.float32(1) + np.exp(-x))).astype(np.float32)


def v8_heads(boxes, clss, input_size, reg_max=16):
    """Per scale (box [1,4*reg_max,H,W], cls [1,nc,H,W]): boxes, class scores flattened."""
    W_in, H_in = input_size
    out_b, out_c = [], []
    for box, cls in zip(boxes, clss):
        gh, gw = box.shape[2:]
        sx, sy = W_in / gw, H_in / gh
        d = dfl(box[0], reg_max)
        col, row = _grid(gh, gw)
        xyxy = np.stack([(col + 0.5 - d[0]) * sx, (row + 0.5 - d[1]) * sy,
                         (col + 0.5 + d[2]) * sx, (row + 0.5 + d[3]) * sy])
        out_b.append(xyxy.reshape(4, -1).T)
        out_c.append(cls[0].reshape(cls.shape[1], -1).T.astype(np.float32))
    return np.concatenate(out_b), np.concatenate(out_c)


def nms(boxes, scores, classes, *, conf, iou, max_det, max_nms, agnostic=False,
        keep_classes=None):
    """Threshold, order and greedy NMS per class: the indices kept, in output order."""
    scores = np.asarray(scores, np.float32)
    ok = scores >= np.float32(conf)
    if keep_classes is not None:
        ok &= np.isin(classes, np.asarray(list(keep_classes)))
    idx = np.nonzero(ok)[0]
    order = idx[np.lexsort((idx, -scores[idx].astype(np.float64)))][:max(max_nms, 0)]
    b = np.asarray(boxes, np.float64)
    kept_all = []
    groups = [order] if agnostic else [order[classes[order] == c]
                                       for c in np.unique(classes[order])]
    for g in groups:
        kept = []
        rest = g
        while rest.size:
            i, rest = rest[0], rest[1:]
            kept.append(i)
            if not rest.size:
                break
            bi, br = b[i], b[rest]
            iw = np.maximum(0.0, np.minimum(bi[2], br[:, 2]) - np.maximum(bi[0], br[:, 0]))
            ih = np.maximum(0.0, np.minimum(bi[3], br[:, 3]) - np.maximum(bi[1], br[:, 1]))
            inter = iw * ih
            union = (bi[2] - bi[0]) * (bi[3] - bi[1]) + \
                (br[:, 2] - br[:, 0]) * (br[:, 3] - br[:, 1]) - inter
            with np.errstate(divide="ignore", invalid="ignore"):
                ov = np.where(union > 0, inter / np.where(union > 0, union, 1), 0.0)
            rest = rest[ov <= iou]
        kept_all.extend(kept)
    kept_all = np.asarray(kept_all, np.int64)
    if kept_all.size:
        kept_all = kept_all[np.lexsort((kept_all, -scores[kept_all].astype(np.float64)))]
    return kept_all[:max(max_det, 0)]


def _result(boxes, scores, classes, keep):
    return dict(boxes=np.asarray(boxes, np.float64)[keep].reshape(-1, 4),
                scores=np.asarray(scores, np.float32)[keep],
                classes=np.asarray(classes, np.int64)[keep], index=keep)


def yolov8(outputs, input_size=(640, 640), *, conf=0.25, iou=0.45, max_det=300,
           max_nms=30000, classes=None, agnostic=False, reg_max=16):
    """yolov8/yolo11 split heads: 6 (box, cls) or 9 (box, cls, score_sum) outputs, the
    zoo's order; score_sum is not read (the zoo's Python ignores it)."""
    per = len(outputs) // 3
    b, c = v8_heads(outputs[0::per], outputs[1::per], input_size, reg_max)
    score = c.max(axis=1)
    cls = c.argmax(axis=1)
    keep = nms(b, score, cls, conf=conf, iou=iou, max_det=max_det, max_nms=max_nms,
               agnostic=agnostic, keep_classes=classes)
    return _result(b, score, cls, keep)


def yolov8_fused(output, *, conf=0.25, iou=0.45, max_det=300, max_nms=30000,
                 classes=None, agnostic=False):
    """Ultralytics' fused [1, 4+nc, N]: cx, cy, w, h in pixels, then class scores."""
    x = np.asarray(output, np.float32)[0]
    cx, cy, w, h = x[0], x[1], x[2], x[3]
    b = np.stack([cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2], axis=1)
    c = x[4:].T
    score = c.max(axis=1)
    cls = c.argmax(axis=1)
    keep = nms(b, score, cls, conf=conf, iou=iou, max_det=max_det, max_nms=max_nms,
               agnostic=agnostic, keep_classes=classes)
    return _result(b, score, cls, keep)


def yolov5(outputs, input_size=(640, 640), anchors=ZOO_ANCHORS, *, conf=0.25, iou=0.45,
           max_det=300, max_nms=30000, classes=None, agnostic=False, yolox=False):
    """yolov5 anchor heads [1, na*(5+nc), H, W] with the Sigmoid in the graph (yolox:
    [1, 5+nc, H, W], xy offsets and log wh raw, objectness and classes after Sigmoid)."""
    W_in, H_in = input_size
    bs, ss, cs = [], [], []
    for i, out in enumerate(outputs):
        out = np.asarray(out, np.float32)
        gh, gw = out.shape[2:]
        na = 1 if yolox else len(anchors[i]) // 2
        p = out[0].reshape(na, -1, gh, gw)
        sx, sy = W_in / gw, H_in / gh
        col, row = _grid(gh, gw)
        for a in range(na):
            q = p[a].astype(np.float64)
            if yolox:
                bx, by = (q[0] + col) * sx, (q[1] + row) * sy
                bw, bh = np.exp(q[2]) * sx, np.exp(q[3]) * sy
            else:
                bx, by = (q[0] * 2 - 0.5 + col) * sx, (q[1] * 2 - 0.5 + row) * sy
                bw = (q[2] * 2) ** 2 * anchors[i][2 * a]
                bh = (q[3] * 2) ** 2 * anchors[i][2 * a + 1]
            bs.append(np.stack([bx - bw / 2, by - bh / 2, bx + bw / 2,
                                by + bh / 2]).reshape(4, -1).T)
            c = p[a, 5:].reshape(p.shape[1] - 5, -1).T
            ss.append(p[a, 4].reshape(-1) * c.max(axis=1))     # float32 product
            cs.append(c.argmax(axis=1))
    b, score, cls = np.concatenate(bs), np.concatenate(ss), np.concatenate(cs)
    keep = nms(b, score, cls, conf=conf, iou=iou, max_det=max_det, max_nms=max_nms,
               agnostic=agnostic, keep_classes=classes)
    return _result(b, score, cls, keep)


def yolox(outputs, input_size=(640, 640), **kw):
    return yolov5(outputs, input_size, yolox=True, **kw)


def masks(proto, coefs, boxes, input_size):
    """The zoo's masks: sigmoid(coef . proto) over the whole proto, bilinear to the input
    size (half-pixel centres), zero outside each box; the values (threshold them > 0.5)."""
    W_in, H_in = input_size
    p = np.asarray(proto, np.float64)[0]
    nm, ph, pw = p.shape
    m = np.asarray(coefs, np.float64) @ p.reshape(nm, -1)
    m = 1.0 / (1.0 + np.exp(-m))
    m = m.reshape(-1, ph, pw)

    def weights(n_out, n_in):
        s = np.float32(n_in) / np.float32(n_out)
        src = np.maximum((np.arange(n_out) + 0.5) * s - 0.5, 0.0)
        i0 = np.minimum(src.astype(np.int64), n_in - 1)
        i1 = np.where(i0 < n_in - 1, i0 + 1, i0)
        l1 = src - i0
        w = np.zeros((n_out, n_in))
        w[np.arange(n_out), i0] += 1 - l1
        w[np.arange(n_out), i1] += l1
        return w

    wy, wx = weights(H_in, ph), weights(W_in, pw)
    up = np.matmul(np.matmul(wy, m), wx.T)
    b = np.asarray(boxes, np.float64)
    cols = np.arange(W_in)[None, None, :]
    rows = np.arange(H_in)[None, :, None]
    inside = ((cols >= b[:, 0, None, None]) & (cols < b[:, 2, None, None]) &
              (rows >= b[:, 1, None, None]) & (rows < b[:, 3, None, None]))
    return up * inside


def yolov8_seg(outputs, input_size=(640, 640), **kw):
    """(box, cls, score_sum, coef) per scale, then the proto [1, nm, ph, pw]."""
    heads, proto = outputs[:-1], outputs[-1]
    r = yolov8([o for i, o in enumerate(heads) if i % 4 != 3], input_size, **kw)
    coefs = np.concatenate([np.asarray(c, np.float32)[0].reshape(c.shape[1], -1).T
                            for c in heads[3::4]])
    k = coefs[r["index"]]
    r["coefs"] = k
    r["masks"] = masks(proto, k, r["boxes"], input_size)
    return r


def yolov8_pose(outputs, input_size=(640, 640), *, conf=0.25, iou=0.45, max_det=300,
                max_nms=30000, classes=None, agnostic=False, reg_max=16):
    """Heads [1, 4*reg_max + nc, H, W] (class logits) and keypoints [1, K, 3, N]."""
    heads, kp = outputs[:-1], np.asarray(outputs[-1], np.float32)
    nb = 4 * reg_max
    b, c = v8_heads([h[:, :nb] for h in heads], [h[:, nb:] for h in heads], input_size,
                    reg_max)
    logit = c.max(axis=1)
    cls = c.argmax(axis=1)
    score = _sigmoid32(logit)
    keep = nms(b, score, cls, conf=conf, iou=iou, max_det=max_det, max_nms=max_nms,
               agnostic=agnostic, keep_classes=classes)
    r = _result(b, score, cls, keep)
    r["keypoints"] = kp[0][:, :, keep].transpose(2, 0, 1)
    return r


# ---- planted outputs: synthetic frames with known objects ----------------------------

def _grids(input_size, strides=(8, 16, 32)):
    W_in, H_in = input_size
    return [(H_in // s, W_in // s) for s in strides]


def _dfl_logits(rng, d, reg_max=16):
    """Logits of reg_max bins whose softmax expectation is near d (>= 0)."""
    j = np.arange(reg_max)
    return -1.5 * (j - d) ** 2 + rng.normal(0, 0.2, reg_max)


def planted_v8(rng, *, nc=80, input_size=(640, 640), n_obj=20, reg_max=16, pose=False,
               nm=0):
    """Float outputs (NCHW, batch 1) of a yolov8-style split head with n_obj planted
    objects (each on a cell and its right neighbour, so that the NMS has work): per scale
    a box [1, 4*reg_max, H, W] and class probabilities [1, nc, H, W] (pose: logits), and
    with nm > 0 mask coefficients [1, nm, H, W].  Returns (boxes, clss, coefs)."""
    grids = _grids(input_size)
    boxes, clss, coefs = [], [], []
    for gh, gw in grids:
        boxes.append(rng.normal(0, 1.0, (1, 4 * reg_max, gh, gw)).astype(np.float32))
        if pose:
            clss.append(rng.uniform(-8, -3, (1, nc, gh, gw)).astype(np.float32))
        else:
            # a detector's background: most class probabilities near 0, a few up to 0.2
            # (some cells' score_sum passes conf while none of their classes does)
            c = rng.uniform(0, 0.001, (1, nc, gh, gw))
            few = rng.random(c.shape) < 0.01
            c[few] = rng.uniform(0, 0.2, int(few.sum()))
            clss.append(c.astype(np.float32))
        if nm:
            coefs.append(rng.normal(0, 1.0, (1, nm, gh, gw)).astype(np.float32))
    for _ in range(n_obj):
        s = int(rng.integers(0, len(grids)))
        gh, gw = grids[s]
        y, x = int(rng.integers(0, gh)), int(rng.integers(0, gw - 1))
        c = int(rng.integers(0, nc))
        score = float(rng.uniform(0.35, 0.95))
        d = rng.uniform(0.8, 5.0, 4)
        for dx, f in ((0, 1.0), (1, 0.9)):
            v = score * f
            clss[s][0, c, y, x + dx] = np.log(v / (1 - v)) if pose else v
            dd = d + np.array([dx, 0, -dx, 0]) * 0.9
            for k in range(4):
                boxes[s][0, k * reg_max:(k + 1) * reg_max, y, x + dx] = \
                    _dfl_logits(rng, max(dd[k], 0.2), reg_max)
    return boxes, clss, coefs


def planted_v5(rng, *, nc=80, input_size=(640, 640), n_obj=20, na=3, yolox=False):
    """Float outputs of yolov5 heads [1, na*(5+nc), H, W] (values after Sigmoid) or yolox
    heads [1, 5+nc, H, W] (xy, log wh raw; objectness, classes after Sigmoid)."""
    grids = _grids(input_size)
    na = 1 if yolox else na
    outs = []
    for gh, gw in grids:
        o = np.empty((na, 5 + nc, gh, gw), np.float32)
        o[:, :2] = rng.uniform(0.2, 0.8, (na, 2, gh, gw))
        o[:, 2:4] = rng.uniform(-0.5, 1.0, (na, 2, gh, gw)) if yolox else \
            rng.uniform(0.2, 0.6, (na, 2, gh, gw))
        o[:, 4] = rng.uniform(0, 0.15, (na, gh, gw))
        o[:, 5:] = rng.uniform(0, 1.0, (na, nc, gh, gw))
        outs.append(o)
    for _ in range(n_obj):
        s = int(rng.integers(0, len(grids)))
        gh, gw = grids[s]
        a, y, x = int(rng.integers(0, na)), int(rng.integers(0, gh)), int(rng.integers(0, gw - 1))
        c = int(rng.integers(0, nc))
        for dx, f in ((0, 1.0), (1, 0.92)):
            outs[s][a, 4, y, x + dx] = float(rng.uniform(0.6, 0.98)) * f
            outs[s][a, 5 + c, y, x + dx] = 0.99
    return [o.reshape(1, -1, *o.shape[2:]) for o in outs]


def planted_fused(rng, *, nc=80, n=8400, n_obj=20, size=640):
    """Ultralytics' fused [1, 4+nc, n]: cx, cy, w, h in pixels, class probabilities."""
    o = np.empty((1, 4 + nc, n), np.float32)
    o[0, 0:2] = rng.uniform(0, size, (2, n))
    o[0, 2:4] = rng.uniform(8, 160, (2, n))
    o[0, 4:] = rng.uniform(0, 0.12, (nc, n))
    for _ in range(n_obj):
        i = int(rng.integers(0, n - 1))
        c = int(rng.integers(0, nc))
        o[0, 4 + c, i] = float(rng.uniform(0.35, 0.95))
        o[0, 4 + c, i + 1] = o[0, 4 + c, i] * 0.9
        o[0, :4, i + 1] = o[0, :4, i] + 2
    return o


def score_sum(clss):
    """The zoo export's score_sum: clip(sum of the class probabilities, 0, 1)."""
    return [np.clip(c.sum(axis=1, keepdims=True), 0, 1).astype(np.float32) for c in clss]


def quantize(x, scale, zp, dtype=np.int8):
    info = np.iinfo(dtype)
    q = np.rint(np.asarray(x, np.float64) / scale) + zp
    return np.clip(q, info.min, info.max).astype(dtype)


def dequantize(q, scale, zp):
    return (q.astype(np.float32) - np.float32(zp)) * np.float32(scale)
