"""Helpers of the Streams tests: IDF1 against a ground truth (an optimal matching of ids),
a tiny yolov8-signature model (cheap frames for the long runs), a server of MPEG-TS over
TCP in a thread (a live network source), and dma-buf-like NV12 frames in memfd buffers
with MPP's layouts."""

from __future__ import annotations

import os
import socket
import threading
import time
from types import SimpleNamespace

import numpy as np


# -- IDF1 -------------------------------------------------------------------------------------
def iou_matrix(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a = np.asarray(a, np.float64).reshape(-1, 4)
    b = np.asarray(b, np.float64).reshape(-1, 4)
    x1 = np.maximum(a[:, None, 0], b[None, :, 0])
    y1 = np.maximum(a[:, None, 1], b[None, :, 1])
    x2 = np.minimum(a[:, None, 2], b[None, :, 2])
    y2 = np.minimum(a[:, None, 3], b[None, :, 3])
    inter = np.clip(x2 - x1, 0, None) * np.clip(y2 - y1, 0, None)
    area = lambda z: (z[:, 2] - z[:, 0]) * (z[:, 3] - z[:, 1])  # noqa: E731
    union = area(a)[:, None] + area(b)[None, :] - inter
    return np.where(union > 0, inter / np.where(union > 0, union, 1), 0.0)


def assignment(cost: np.ndarray):
    """Minimum-cost matching of a rectangular cost matrix (Hungarian method, O(n^3),
    from Kuhn and Munkres' potentials): (rows, cols)."""
    cost = np.asarray(cost, np.float64)
    transposed = cost.shape[0] > cost.shape[1]
    if transposed:
        cost = cost.T
    n, m = cost.shape
    if n == 0:
        return np.zeros(0, int), np.zeros(0, int)
    u, v = np.zeros(n + 1), np.zeros(m + 1)
    p, way = np.zeros(m + 1, int), np.zeros(m + 1, int)
    for i in range(1, n + 1):
        p[0], j0 = i, 0
        minv = np.full(m + 1, np.inf)
        used = np.zeros(m + 1, bool)
        while True:
            used[j0] = True
            i0, delta, j1 = p[j0], np.inf, 0
            for j in range(1, m + 1):
                if not used[j]:
                    cur = cost[i0 - 1, j - 1] - u[i0] - v[j]
                    if cur < minv[j]:
                        minv[j], way[j] = cur, j0
                    if minv[j] < delta:
                        delta, j1 = minv[j], j
            for j in range(m + 1):
                if used[j]:
                    u[p[j]] += delta
                    v[j] -= delta
                else:
                    minv[j] -= delta
            j0 = j1
            if p[j0] == 0:
                break
        while True:
            j1 = way[j0]
            p[j0] = p[j1]
            j0 = j1
            if j0 == 0:
                break
    rows, cols = [], []
    for j in range(1, m + 1):
        if p[j]:
            rows.append(p[j] - 1)
            cols.append(j - 1)
    rows, cols = np.array(rows, int), np.array(cols, int)
    return (cols, rows) if transposed else (rows, cols)


def idf1(gt_ids, gt_boxes, pr_ids, pr_boxes, thr: float = 0.5) -> float:
    """IDF1 (Ristani et al. 2016): the ground truth's and the tracker's ids matched one to
    one over the whole sequence to maximize the frames where the pair overlaps by IoU >=
    `thr` (IDTP); IDF1 = 2 IDTP / (ground-truth boxes + tracker boxes)."""
    g_all = sorted({int(i) for ids in gt_ids for i in ids})
    p_all = sorted({int(i) for ids in pr_ids for i in ids})
    n_gt = sum(len(i) for i in gt_ids)
    n_pr = sum(len(i) for i in pr_ids)
    if n_gt + n_pr == 0:
        return 1.0
    gi = {g: k for k, g in enumerate(g_all)}
    pi = {p: k for k, p in enumerate(p_all)}
    tp = np.zeros((len(g_all), len(p_all)))
    for gids, gb, pids, pb in zip(gt_ids, gt_boxes, pr_ids, pr_boxes):
        if len(gids) and len(pids):
            ok = iou_matrix(gb, pb) >= thr
            for a, b in zip(*np.nonzero(ok)):
                tp[gi[int(gids[a])], pi[int(pids[b])]] += 1
    if tp.size == 0:
        return 0.0
    r, c = assignment(-tp)
    return 2.0 * tp[r, c].sum() / (n_gt + n_pr)


# -- a tiny yolov8 model -----------------------------------------------------------------------
def tiny_yolo(target: str = "RK3588") -> bytes:
    """A 64x64 model with yolov8's six split heads (box [1,64,S,S], cls [1,1,S,S] for S =
    8, 4, 2): the class of a cell is its brightness (a bright frame gives boxes), the
    boxes are the DFL's middle; a frame costs well under a millisecond."""
    from rknnx.emulator.builder import ModelBuilder

    b = ModelBuilder(target, "tests: tiny yolo")
    x = b.input("images", (1, 64, 64, 3), "int8", "NHWC", zp=-128, scale=1.0 / 255.0,
                mean=(0.0, 0.0, 0.0), std=(255.0, 255.0, 255.0))
    outs = []
    for s in (8, 16, 32):
        box = b.conv2d(x, np.zeros((64, 3, s, s), np.int8), np.zeros(64, np.int32),
                       stride=s, weight_scale=1.0, out_scale=1.0 / 16, out_zp=0,
                       out=f"box_{s}")
        # 8 x the cell's mean brightness (0..1) less 4: a logit in -4 .. 4
        ws = 8.0 / (3 * s * s)
        logit = b.conv2d(x, np.ones((1, 3, s, s), np.int8),
                         np.array([round(-4.0 / (ws / 255.0))], np.int32), stride=s,
                         weight_scale=ws, out_scale=8.0 / 127, out_zp=0)
        cls = b.sigmoid(logit, out_scale=1.0 / 255, out_zp=-128, out=f"cls_{s}")
        outs += [box, cls]
    b.output(*outs)
    return b.build()


# -- MPEG-TS over TCP, served from a thread ------------------------------------------------------
class TsServer:
    """Serves a .ts file's bytes to each client over TCP, paced at `rate` bytes a second
    (a live camera's pace), `times` connections; a connection ends after `cut` bytes when
    given (a camera that drops the link; a list: per connection).  Joined by close()."""

    def __init__(self, path, *, rate: float, cut=None, times: int = 1):
        with open(path, "rb") as f:
            self.data = f.read()
        self.rate, self.cut, self.times = rate, cut, times
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(4)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.url = f"tcp://127.0.0.1:{self.port}"
        self.stop = threading.Event()
        self.served = 0
        self.thread = threading.Thread(target=self.run, name="ts-server", daemon=True)
        self.thread.start()

    def run(self):
        try:
            while not self.stop.is_set() and self.served < self.times:
                try:
                    conn, _ = self.sock.accept()
                except socket.timeout:
                    continue
                self.served += 1
                with conn:
                    self.send(conn)
        finally:
            self.sock.close()

    def send(self, conn):
        cut = self.cut[self.served - 1] if isinstance(self.cut, list) else self.cut
        data = self.data if cut is None else self.data[:cut]
        chunk = 4096
        t0 = time.monotonic()
        for k in range(0, len(data), chunk):
            if self.stop.is_set():
                return
            wait = t0 + k / self.rate - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            try:
                conn.sendall(data[k:k + chunk])
            except OSError:
                return

    def close(self):
        self.stop.set()
        self.thread.join(10)
        assert not self.thread.is_alive()


def free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


# -- dma-buf-like frames -------------------------------------------------------------------------
def memfd_nv12(y: np.ndarray, uv: np.ndarray, *, pitch: int, rows: int):
    """An NV12 frame in a memfd as MPP lays it out: the Y plane at offset 0 with `pitch`
    bytes a row, the UV plane after `rows` rows of it (1080 in a 1088-row buffer); an
    object with fd, size, pitches, offsets, width, height, format (close() closes the
    fd)."""
    h, w = y.shape
    size = pitch * rows * 3 // 2
    fd = os.memfd_create("nv12")
    os.ftruncate(fd, size)
    buf = np.zeros(size, np.uint8)
    buf[:pitch * rows].reshape(rows, pitch)[:h, :w] = y
    buf[pitch * rows:pitch * rows + pitch * h // 2].reshape(h // 2, pitch)[:, :w] = uv
    os.pwrite(fd, buf.tobytes(), 0)
    obj = SimpleNamespace(fd=fd, size=size, pitches=(pitch, pitch),
                          offsets=(0, pitch * rows), width=w, height=h, format="nv12")
    obj.close = lambda: os.close(fd)
    return obj


def memfd_packed(px: np.ndarray, order: str, *, offset: int = 0, pitch: int = 0):
    """A packed 3-byte frame (`px`, (h, w, 3), bytes in `order` "rgb" or "bgr") in a memfd
    from `offset` with `pitch` bytes a row (0: 3 * w, no padding): an object with fd,
    size, pitches, offsets, width, height, format (close() closes the fd)."""
    h, w = px.shape[:2]
    pitch = pitch or 3 * w
    size = offset + pitch * h
    fd = os.memfd_create(order)
    os.ftruncate(fd, size)
    buf = np.zeros(size, np.uint8)
    buf[offset:].reshape(h, pitch)[:, :3 * w] = px.reshape(h, 3 * w)
    os.pwrite(fd, buf.tobytes(), 0)
    obj = SimpleNamespace(fd=fd, size=size, pitches=(pitch,), offsets=(offset,), width=w,
                          height=h, format=order)
    obj.close = lambda: os.close(fd)
    return obj


def bgr_to_nv12(bgr: np.ndarray):
    """BT.601 limited-range NV12 planes (Y, UV) of a BGR frame (cv2's rule)."""
    import cv2

    h, w = bgr.shape[:2]
    i420 = cv2.cvtColor(bgr, cv2.COLOR_BGR2YUV_I420)
    y = i420[:h]
    u = i420[h:h + h // 4].reshape(h // 2, w // 2)
    v = i420[h + h // 4:].reshape(h // 2, w // 2)
    uv = np.empty((h // 2, w), np.uint8)
    uv[:, 0::2], uv[:, 1::2] = u, v
    return np.ascontiguousarray(y), uv


# -- a tracker that records what it is told -----------------------------------------------------
class RecordingTracker:
    """A tracker template (update/reset/copy, low, fps) that keeps its calls: one id per
    box, counted from 1 after each reset."""

    low = 0.1
    fps = 30

    def __init__(self):
        self.calls = []
        self.copies = []

    def copy(self):
        t = RecordingTracker()
        self.copies.append(t)
        return t

    def reset(self):
        self.calls.append(("reset",))

    def update(self, detections, *, dt=None):
        self.calls.append(("update", len(detections), dt))
        return SimpleNamespace(ids=np.arange(1, len(detections) + 1, dtype=np.int64),
                               boxes=detections.boxes, detections=detections)
