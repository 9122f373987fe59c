"""Synthetic tracking scenes with their ground truth, for the tracker's tests and bench.

A scene is objects moving at constant velocity in a 1920x1080 frame, each alive between
its birth and death frames, and what a detector would give of them: every box jittered
(about 2% of its size), some missed, scores mostly high, and false positives at low and
middling scores.  The families (``FAMILIES``):

- ``counts``    0, 5, 50 and 200 objects of every size, moving anywhere;
- ``crossing``  pairs of same-size objects crossing head on in rows of their own, the one
                behind missed for 10-25 frames around the crossing;
- ``low``       objects seen only at low scores (0.15-0.45) for 20 frames mid-track;
- ``births``    short-lived objects crossing the frame, born and dying all the time.

``scene(family, seed)`` -> :class:`Scene`; ``metrics(scene, run)`` scores a tracker's
output with motmetrics (IDF1 and MOTA at IoU >= 0.5), where ``run`` maps each frame's
detections to (boxes, ids) of the tracks reported.  numpy only, deterministic by seed.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Callable, List, Tuple

import numpy as np

W, H = 1920, 1080
FAMILIES = ("counts", "crossing", "low", "births")


@dataclass
class Scene:
    family: str
    seed: int
    #: per frame: (ids int64 [k], boxes float32 [k, 4]) of the objects in view
    truth: List[Tuple[np.ndarray, np.ndarray]] = field(default_factory=list)
    #: per frame: (boxes float32 [n, 4], scores float32 [n], classes int32 [n])
    detections: List[Tuple[np.ndarray, np.ndarray, np.ndarray]] = field(default_factory=list)
    #: per frame: the object id of each detection (0: a false positive)
    source: List[np.ndarray] = field(default_factory=list)

    @property
    def frames(self) -> int:
        return len(self.detections)

    @property
    def objects(self) -> int:
        return len({int(i) for ids, _ in self.truth for i in ids})


class _Obj:
    __slots__ = ("p", "v", "w", "h", "born", "dies", "miss", "low")

    def __init__(self, p, v, w, h, born, dies):
        self.p, self.v, self.w, self.h = np.asarray(p, float), np.asarray(v, float), w, h
        self.born, self.dies = born, dies
        self.miss = ()    # frames without a detection
        self.low = ()     # frames seen only at a low score

    def box(self, f):
        c = self.p + self.v * (f - self.born)
        return np.array([c[0] - self.w / 2, c[1] - self.h / 2, c[0] + self.w / 2,
                         c[1] + self.h / 2])


def _render(family, seed, objs, frames, rng, miss=0.05, fp=2.0, jitter=0.02) -> Scene:
    s = Scene(family, seed)
    for f in range(frames):
        ids, gts, boxes, scores, src = [], [], [], [], []
        for i, o in enumerate(objs):
            if not o.born <= f < o.dies:
                continue
            b = o.box(f)
            vis = np.clip(b, [0, 0, 0, 0], [W, H, W, H])
            if (vis[2] - vis[0]) * (vis[3] - vis[1]) < 0.5 * o.w * o.h:
                continue      # mostly out of the frame: not an object in view
            ids.append(i + 1)
            gts.append(b)
            if f in o.miss or rng.random() < miss:
                continue
            boxes.append(b + rng.normal(0, jitter, 4) * [o.w, o.h, o.w, o.h])
            src.append(i + 1)
            if f in o.low:
                scores.append(rng.uniform(0.15, 0.45))
            else:
                scores.append(rng.uniform(0.55, 0.95) if rng.random() < 0.9
                              else rng.uniform(0.3, 0.55))
        for _ in range(rng.poisson(fp)):
            w, h = rng.uniform(20, 150), rng.uniform(20, 150)
            x, y = rng.uniform(0, W - w), rng.uniform(0, H - h)
            boxes.append([x, y, x + w, y + h])
            scores.append(rng.uniform(0.1, 0.65))
            src.append(0)
        s.truth.append((np.array(ids, np.int64), np.array(gts, np.float32).reshape(-1, 4)))
        n = len(boxes)
        order = rng.permutation(n)
        s.detections.append((np.array(boxes, np.float32).reshape(-1, 4)[order],
                             np.array(scores, np.float32)[order], np.zeros(n, np.int32)))
        s.source.append(np.array(src, np.int64)[order])
    return s


def _wanderers(rng, n, frames, lives=True):
    objs = []
    for _ in range(n):
        h = rng.uniform(40, 200)
        w = h * rng.uniform(0.4, 1.2)
        born, dies = (0, frames)
        if lives and rng.random() < 0.5:
            born = int(rng.integers(0, frames // 2))
            dies = int(rng.integers(born + 20, frames + 20))
        objs.append(_Obj(rng.uniform([w, h], [W - w, H - h]), rng.uniform(-4, 4, 2), w, h,
                         born, dies))
    return objs


def scene(family: str, seed: int) -> Scene:
    """One scene of a family (``FAMILIES``); seeds 0.. give different scenes."""
    if family not in FAMILIES:
        raise ValueError(f"scene: family must be one of {FAMILIES}, got {family!r}")
    rng = np.random.default_rng([FAMILIES.index(family), seed])
    if family == "counts":
        n = (0, 5, 50, 200)[seed % 4]
        frames = 80 if n == 200 else 150
        return _render(family, seed, _wanderers(rng, n, frames), frames, rng)
    if family == "crossing":
        frames, objs = 120, []
        for row in range(6):
            h = rng.uniform(60, 110)
            w = h * 0.5
            y = 90 + row * 170 + rng.uniform(-10, 10)
            v = rng.uniform(3, 6)
            meet = int(rng.integers(45, 75))
            cx = rng.uniform(500, 1400)
            a = _Obj([cx - v * meet, y], [v, 0], w, h, 0, frames)
            b = _Obj([cx + v * meet, y + rng.uniform(-6, 6)], [-v, 0], w, h, 0, frames)
            gap = int(rng.integers(10, 26))
            behind = b if rng.random() < 0.5 else a
            behind.miss = frozenset(range(meet - gap // 2, meet - gap // 2 + gap))
            objs += [a, b]
        return _render(family, seed, objs, frames, rng, miss=0.03)
    if family == "low":
        frames = 150
        objs = _wanderers(rng, int(rng.integers(20, 60)), frames, lives=False)
        for o in objs:
            start = int(rng.integers(40, 90))
            o.low = frozenset(range(start, start + 20))
        return _render(family, seed, objs, frames, rng)
    if family == "births":
        frames, objs = 200, []
        for _ in range(int(rng.integers(60, 120))):
            h = rng.uniform(50, 150)
            w = h * rng.uniform(0.4, 1.0)
            speed = rng.uniform(8, 20)
            born = int(rng.integers(0, frames - 20))
            left = rng.random() < 0.5
            x = -w / 2 if left else W + w / 2
            life = int(rng.integers(20, 80))
            objs.append(_Obj([x, rng.uniform(h, H - h)], [speed if left else -speed,
                             rng.uniform(-1, 1)], w, h, born, born + life))
        return _render(family, seed, objs, frames, rng)
    raise ValueError(f"scene: family must be one of {FAMILIES}, got {family!r}")


def _iou_distance(a: np.ndarray, b: np.ndarray, floor: float = 0.5) -> np.ndarray:
    """1 - IoU of boxes a [n, 4] and b [m, 4] (x1, y1, x2, y2), NaN where IoU < floor (no
    match), as motmetrics' iou_matrix gives (computed here: motmetrics 1.4 calls numpy's
    removed asfarray)."""
    if len(a) == 0 or len(b) == 0:
        return np.empty((len(a), len(b)))
    a = a.astype(np.float64)[:, None]
    b = b.astype(np.float64)[None]
    iw = np.clip(np.minimum(a[..., 2], b[..., 2]) - np.maximum(a[..., 0], b[..., 0]), 0, None)
    ih = np.clip(np.minimum(a[..., 3], b[..., 3]) - np.maximum(a[..., 1], b[..., 1]), 0, None)
    inter = iw * ih
    union = ((a[..., 2] - a[..., 0]) * (a[..., 3] - a[..., 1]) +
             (b[..., 2] - b[..., 0]) * (b[..., 3] - b[..., 1]) - inter)
    d = 1 - inter / union
    d[d > 1 - floor] = np.nan
    return d


def metrics(s: Scene, run: Callable) -> dict:
    """IDF1, MOTA, id switches and false positives of a tracker on scene ``s`` (motmetrics).
    ``run(boxes, scores, classes)`` is called once per frame, in order, and returns the
    (boxes [k, 4], ids [k]) of the tracks it reports."""
    import motmetrics as mm
    acc = mm.MOTAccumulator(auto_id=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for (gid, gbox), det in zip(s.truth, s.detections):
            hbox, hid = run(*det)
            acc.update(gid.tolist(), np.asarray(hid).tolist(), _iou_distance(gbox, hbox))
        m = mm.metrics.create().compute(acc, metrics=["idf1", "mota", "num_switches",
                                                      "num_false_positives"], name="s")
    return {k: float(m[k].iloc[0]) for k in m.columns}
