"""bench/zoo_seg.py, the masks and pipeline scenarios' anchors: the stand-ins follow the
model zoo's rules (the masks against the suite's numpy/OpenCV port of them, the NMS given
to the zoo's yolov8_seg.py against a numpy greedy NMS), each says which ran, and with a
checkout of the zoo (RKNNX_ZOO=DIR, a directory named rknn_model_zoo) its own code gives
the stand-ins' results.  Timings are never asserted."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
cv2 = pytest.importorskip("cv2")

BENCH = Path(__file__).resolve().parents[2] / "bench"
ZOO = os.environ.get("RKNNX_ZOO")


def _module(name):
    if str(BENCH) not in sys.path:
        sys.path.insert(0, str(BENCH))
    return importlib.import_module(name)


def _suite():
    spec = importlib.util.spec_from_file_location("bench_suite_for_zoo_seg", BENCH / "suite.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _frame(seed=3, n=12):
    rng = np.random.default_rng(seed)
    coefs = rng.normal(0, 1, (n, 32)).astype(np.float32)
    proto = rng.normal(0, 1, (1, 32, 160, 160)).astype(np.float32)
    xy = rng.uniform(0, 480, (n, 2))
    wh = rng.uniform(20, 160, (n, 2))
    boxes = np.concatenate((xy, xy + wh), axis=1).astype(np.float32)
    return coefs, proto, boxes


def test_stand_in_masks_follow_the_zoos_rule():
    post, masks, what = _module("zoo_seg").seg(None)
    assert post is None and what.startswith("a stand-in following the zoo's Python masks")
    coefs, proto, boxes = _frame()
    got = masks(coefs, proto, boxes)
    want = _suite().zoo_masks_python(cv2, coefs, proto, boxes)
    assert got.shape == want.shape == (12, 640, 640) and got.dtype == bool
    # torch's bilinear and OpenCV's (both half-pixel) agree but for rounding at 0.5
    assert np.mean(got == want) > 0.9999
    r, c = np.arange(640)[None, :], np.arange(640)[:, None]
    for m, (x1, y1, x2, y2) in zip(got, boxes):
        inside = (r >= x1) & (r < x2) & (c >= y1) & (c < y2)
        assert not m[~inside].any() and m[inside].any()


def _greedy(boxes, scores, iou):
    order, keep = list(np.argsort(-scores, kind="stable")), []
    area = (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])
    while order:
        i = order.pop(0)
        keep.append(i)
        rest = []
        for j in order:
            w = max(0.0, min(boxes[i, 2], boxes[j, 2]) - max(boxes[i, 0], boxes[j, 0]))
            h = max(0.0, min(boxes[i, 3], boxes[j, 3]) - max(boxes[i, 1], boxes[j, 1]))
            if w * h / (area[i] + area[j] - w * h) <= iou:
                rest.append(j)
        order = rest
    return keep


def test_the_nms_given_to_the_zoo_is_torchvisions_rule():
    nms = _module("zoo_seg")._torchvision_nms_by_cv2(torch).ops.nms
    rng = np.random.default_rng(7)
    xy = rng.uniform(0, 200, (60, 2))
    boxes = np.concatenate((xy, xy + rng.uniform(20, 80, (60, 2))), axis=1).astype(np.float32)
    scores = rng.permutation(np.linspace(0.3, 0.95, 60)).astype(np.float32)
    got = nms(torch.tensor(boxes), torch.tensor(scores), 0.45)
    assert got.dtype == torch.int64
    assert got.tolist() == _greedy(boxes.astype(np.float64), scores, 0.45)
    assert 5 < len(got) < 60


@pytest.mark.skipif(not ZOO, reason="RKNNX_ZOO (a checkout of rknn_model_zoo) is not set")
def test_the_zoos_own_code_gives_the_stand_ins_results():
    zs = _module("zoo_seg")
    post, masks, what = zs.seg(ZOO)
    assert what.startswith("the zoo's Python (examples/yolov8_seg/python/yolov8_seg.py")
    _, stand_in, _ = zs.seg(None)
    coefs, proto, boxes = _frame()
    assert np.array_equal(masks(coefs, proto, boxes), stand_in(coefs, proto, boxes))
    pp, helper, what = zs.detect(ZOO)
    assert what.startswith("the zoo's Python post_process") and "COCO_test_helper" in what
    frame = np.zeros((1080, 1920, 3), np.uint8)
    h = helper(enable_letter_box=True)
    assert h.letter_box(im=frame, new_shape=(640, 640)).shape == (640, 640, 3)
    got = h.get_real_box(np.array([[0.0, 140.0, 640.0, 500.0]], np.float32))
    np.testing.assert_allclose(got, [[0, 0, 1920, 1080]], atol=1e-3)
