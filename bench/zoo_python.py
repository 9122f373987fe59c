"""A stand-in for the model zoo's Python yolov8 post-processing (rknn_model_zoo
examples/yolov8/python/yolov8.py) where no checkout is given to ``bench/suite.py --zoo``:
written for the bench from the zoo's code path, so that it costs what the zoo's costs,
not from a reference of the rule.

Its steps, as the zoo takes them on the float32 outputs of the 6 or 9 split heads
(score_sum ignored): per branch the DFL of the whole box tensor through torch on the CPU
(softmax over the bins, the expectation), the grid and strides as int arrays, the boxes
x1 y1 x2 y2 of every cell; the class tensors flattened cell-major; the best class and its
score of every cell, kept when >= conf; then per class present, a greedy NMS in numpy
(areas from widths and heights, overlap with a 1e-5 margin, kept while <= iou), the
classes one after another.  ``torch.set_num_threads(1)`` as the bench runs it; without
torch the DFL falls back to numpy float32 (the result says so).
"""

from __future__ import annotations

from typing import Optional, Sequence, Tuple

import numpy as np

try:
    import torch
except ImportError:           # the fallback: numpy's float32 softmax
    torch = None


def uses_torch() -> bool:
    return torch is not None


def _dfl(position: np.ndarray) -> np.ndarray:
    n, c, h, w = position.shape
    bins = c // 4
    if torch is not None:
        y = torch.tensor(position).reshape(n, 4, bins, h, w).softmax(2)
        weights = torch.arange(bins).float().reshape(1, 1, bins, 1, 1)
        return (y * weights).sum(2).numpy()
    y = position.reshape(n, 4, bins, h, w)
    e = np.exp(y - y.max(axis=2, keepdims=True))
    p = e / e.sum(axis=2, keepdims=True)
    return (p * np.arange(bins, dtype=np.float32).reshape(1, 1, bins, 1, 1)).sum(2)


def _boxes(position: np.ndarray, size: Tuple[int, int]) -> np.ndarray:
    gh, gw = position.shape[2:4]
    col, row = np.meshgrid(np.arange(gw), np.arange(gh))
    grid = np.concatenate((col.reshape(1, 1, gh, gw), row.reshape(1, 1, gh, gw)), axis=1)
    stride = np.array([size[1] // gh, size[0] // gw]).reshape(1, 2, 1, 1)
    d = _dfl(position)
    return np.concatenate(((grid + 0.5 - d[:, 0:2]) * stride,
                           (grid + 0.5 + d[:, 2:4]) * stride), axis=1)


def _cells(x: np.ndarray) -> np.ndarray:
    return x.transpose(0, 2, 3, 1).reshape(-1, x.shape[1])


def _nms(boxes: np.ndarray, scores: np.ndarray, iou: float) -> np.ndarray:
    x, y = boxes[:, 0], boxes[:, 1]
    w, h = boxes[:, 2] - x, boxes[:, 3] - y
    areas = w * h
    order = scores.argsort()[::-1]
    keep = []
    while order.size:
        i, rest = order[0], order[1:]
        keep.append(i)
        iw = np.maximum(0.0, np.minimum(x[i] + w[i], x[rest] + w[rest]) -
                        np.maximum(x[i], x[rest]) + 0.00001)
        ih = np.maximum(0.0, np.minimum(y[i] + h[i], y[rest] + h[rest]) -
                        np.maximum(y[i], y[rest]) + 0.00001)
        inter = iw * ih
        order = rest[inter / (areas[i] + areas[rest] - inter) <= iou]
    return np.array(keep)


def post_process(outputs: Sequence[np.ndarray], size=(640, 640), conf: float = 0.25,
                 iou: float = 0.45) -> Tuple[Optional[np.ndarray], ...]:
    """(boxes, classes, scores) of the float32 NCHW outputs, or (None, None, None)."""
    per = len(outputs) // 3
    boxes = np.concatenate([_cells(_boxes(outputs[per * k], size)) for k in range(3)])
    probs = np.concatenate([_cells(outputs[per * k + 1]) for k in range(3)])
    best = probs.max(axis=-1)
    cls = probs.argmax(axis=-1)
    keep = np.where(best >= conf)
    boxes, cls, best = boxes[keep], cls[keep], best[keep]
    out_b, out_c, out_s = [], [], []
    for c in set(cls):
        at = np.where(cls == c)
        k = _nms(boxes[at], best[at], iou)
        if len(k):
            out_b.append(boxes[at][k])
            out_c.append(cls[at][k])
            out_s.append(best[at][k])
    if not out_c:
        return None, None, None
    return np.concatenate(out_b), np.concatenate(out_c), np.concatenate(out_s)
