"""rknnx.vision.decode and Detector under attack (issue 39 item 4): non-finite float
outputs never become detections, and bad parameters are refused before any work with an
error naming the parameter and what it takes."""

from __future__ import annotations

import zlib

import numpy as np
import pytest

from rknnx._tensors import QuantInfo, TensorInfo
from rknnx.vision import decode

import zoo_reference as Z


def rng_for(name):
    return np.random.default_rng(zlib.crc32(name.encode()))


def _seg(rng):
    boxes, clss, coefs = Z.planted_v8(rng, nc=80, n_obj=10, nm=32)
    sums = Z.score_sum(clss)
    outs = []
    for s in range(3):
        outs += [boxes[s], clss[s], sums[s], coefs[s]]
    outs.append(rng.normal(0, 1.5, (1, 32, 160, 160)).astype(np.float32))
    return outs


def _pose(rng):
    boxes, clss, _ = Z.planted_v8(rng, nc=1, n_obj=12, pose=True)
    heads = [np.concatenate([b, c], axis=1) for b, c in zip(boxes, clss)]
    kp = np.empty((1, 17, 3, 8400), np.float32)
    kp[0, :, :2] = rng.uniform(0, 640, (17, 2, 8400))
    kp[0, :, 2] = rng.uniform(0, 1, (17, 8400))
    return heads + [kp]


def _split(rng):
    boxes, clss, _ = Z.planted_v8(rng, nc=80)
    return [x for s in range(3) for x in (boxes[s], clss[s])]


# each family's float32 outputs, and where its box values and class values lie: for each
# output to poison, (output index, channel slice); score_sum outputs are left as they are
# (a class value the sum let through must still not pass)
FAMILIES = {
    "yolov8": (_split, {"box": [(0, slice(None)), (2, slice(None)), (4, slice(None))],
                        "class": [(1, slice(None)), (3, slice(None)), (5, slice(None))]}),
    "yolov8-fused": (lambda rng: [Z.planted_fused(rng)],
                     {"box": [(0, slice(0, 4))], "class": [(0, slice(4, None))]}),
    "yolov8-seg": (_seg, {"box": [(0, slice(None)), (4, slice(None)), (8, slice(None))],
                          "class": [(1, slice(None)), (5, slice(None)), (9, slice(None))]}),
    "yolov8-pose": (_pose, {"box": [(k, slice(0, 64)) for k in range(3)],
                            "class": [(k, slice(64, 65)) for k in range(3)]}),
    # yolov5: per anchor 85 channels: box 0-3, objectness 4, classes 5-84
    "yolov5": (lambda rng: Z.planted_v5(rng),
               {"box": [(k, np.r_[0:4, 85:89, 170:174]) for k in range(3)],
                "class": [(k, np.r_[4:85, 89:170, 174:255]) for k in range(3)]}),
    "yolox": (lambda rng: Z.planted_v5(rng, yolox=True),
              {"box": [(k, slice(0, 4)) for k in range(3)],
               "class": [(k, slice(4, None)) for k in range(3)]}),
}


def _decode(family, outs):
    fam = "yolov8" if family == "yolov8-fused" else family
    lay = [None if o.ndim != 4 else "NCHW" for o in outs]
    return decode(fam, outs, layout=lay)


@pytest.mark.parametrize("family", list(FAMILIES))
@pytest.mark.parametrize("where", ["box", "class"])
@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_a_non_finite_value_never_becomes_a_detection(family, where, value, dtype):
    make, parts = FAMILIES[family]
    clean = [o.astype(dtype) for o in make(rng_for(f"nonfinite-{family}"))]
    base = _decode(family, clean)
    assert len(base) >= 5 and np.isfinite(base.boxes).all()
    # every cell's values poisoned: no detection at all (an inf class value scored inf,
    # or 1 through the pose logit's sigmoid; a NaN box gave boxes of NaN)
    every = [o.copy() for o in clean]
    for i, ch in parts[where]:
        every[i][:, ch] = value
    det = _decode(family, every)
    assert len(det) == 0, (family, where, value, det.scores[:5], det.boxes[:2])
    # the best detection's cell poisoned alone: that box goes, the others stay finite
    one = [o.copy() for o in clean]
    cells = _cells_of(family, clean, base)
    i, ch = parts[where][cells[0][0]]
    y, x = cells[0][1:]
    if one[i].ndim == 4:
        one[i][0, ch, y, x] = value
    else:                                          # fused [1, 4 + nc, N]
        one[i][0, ch, x] = value
    det = _decode(family, one)
    assert len(det) >= 1
    assert np.isfinite(det.boxes).all() and np.isfinite(det.scores).all()
    assert 0 <= det.scores.min() and det.scores.max() <= 1
    assert not any(np.array_equal(b, base.boxes[0]) for b in det.boxes)


def _cells_of(family, outs, det):
    """[(scale, y, x)] of the best detection: the cell whose score (the family's rule on
    its float values) is nearest the detection's (the fused output: (0, 0, column))."""
    c, score = int(det.classes[0]), float(det.scores[0])
    o = [x.astype(np.float32) for x in outs]
    if family == "yolov8-fused":
        return [(0, 0, int(np.argmin(np.abs(o[0][0, 4 + c] - score))))]
    best = None
    for s in range(3):
        if family in ("yolov8", "yolov8-seg"):
            per = 2 if family == "yolov8" else 4
            sc = o[per * s + 1][0, c]
        elif family == "yolov8-pose":
            sc = 1 / (1 + np.exp(-o[s][0, 64 + c]))
        elif family == "yolov5":
            sc = np.max([o[s][0, 85 * a + 4] * o[s][0, 85 * a + 5 + c] for a in range(3)],
                        axis=0)
        else:
            sc = o[s][0, 4] * o[s][0, 5 + c]
        d = np.abs(sc - score)
        y, x = np.unravel_index(int(np.argmin(d)), d.shape)
        if best is None or d[y, x] < best[0]:
            best = (d[y, x], s, int(y), int(x))
    return [best[1:]]


# -- parameters --------------------------------------------------------------------------

def _v8_int8():
    boxes, clss, _ = Z.planted_v8(rng_for("attack-params"), nc=80)
    arrays, infos = [], []
    for i, x in enumerate(x for s in range(3) for x in (boxes[s], clss[s])):
        sc, zp = (0.0215, 1) if i % 2 == 0 else (1 / 255, -128)
        q = Z.quantize(x, sc, zp)
        arrays.append(q)
        infos.append(TensorInfo(i, f"o{i}", q.shape, np.dtype(np.int8), "NCHW",
                                QuantInfo("affine", sc, zp)))
    return arrays, infos


@pytest.mark.parametrize("name,value", [("conf", 1.5), ("conf", -0.1), ("iou", 1.5),
                                        ("iou", -0.1), ("conf", float("nan")),
                                        ("iou", float("inf")), ("conf", True),
                                        ("iou", "0.5")])
def test_conf_and_iou_outside_0_1_are_refused(name, value):
    arrays, infos = _v8_int8()
    with pytest.raises(ValueError, match=rf"^decode: {name} must be a number in \[0, 1\]; "
                                         rf"got {value!r}$".replace("(", r"\(")
                       .replace(")", r"\)")):
        decode("yolov8", arrays, infos, **{name: value})


@pytest.mark.parametrize("name", ["max_det", "max_nms"])
@pytest.mark.parametrize("value", [2 ** 62, 2 ** 64, 10 ** 30, 10 ** 10, None])
def test_a_huge_max_det_or_max_nms_means_no_limit(name, value):
    """Beyond what the frame holds a limit is no limit: the same detections, and the
    arrays are as large as what was found (max_det reserved nothing)."""
    arrays, infos = _v8_int8()
    want = decode("yolov8", arrays, infos, max_det=10 ** 6, max_nms=10 ** 6)
    got = decode("yolov8", arrays, infos, **{name: value})
    assert len(got) == len(want) >= 8
    np.testing.assert_array_equal(got.boxes, want.boxes)
    np.testing.assert_array_equal(got.classes, want.classes)
    assert got.boxes.base is None or got.boxes.base.nbytes <= 16 * 8400


def test_max_det_10_7_reserves_what_is_found_not_max_det():
    import tracemalloc

    arrays, infos = _v8_int8()
    decode("yolov8", arrays, infos, max_det=10 ** 7)
    tracemalloc.start()
    try:
        det = decode("yolov8", arrays, infos, max_det=10 ** 7)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(det) >= 8
    assert peak < 2 ** 20, peak         # numpy's arrays are traced: no 10**7 rows


@pytest.mark.parametrize("name", ["max_det", "max_nms"])
@pytest.mark.parametrize("value", [1e10, 1e30, -1, 2.5, "5", True])
def test_max_det_and_max_nms_are_ints(name, value):
    arrays, infos = _v8_int8()
    with pytest.raises(ValueError, match=rf"^decode: {name} must be an int >= 0 \(None: no "
                                         rf"limit\); got "):
        decode("yolov8", arrays, infos, **{name: value})


@pytest.mark.parametrize("zp,dtype,rng", [(300, np.int8, r"\[-128, 127\]"),
                                          (-1000, np.int8, r"\[-128, 127\]"),
                                          (-1, np.uint8, r"\[0, 255\]"),
                                          (256, np.uint8, r"\[0, 255\]"),
                                          (0.5, np.int8, r"\[-128, 127\]"),
                                          (40000, np.int16, r"\[-32768, 32767\]")])
def test_a_zero_point_outside_the_codes_is_refused(zp, dtype, rng):
    arrays, infos = _v8_int8()
    arrays = [a.astype(dtype) for a in arrays]
    infos = [TensorInfo(i.index, i.name, i.shape, np.dtype(dtype), "NCHW",
                        QuantInfo("affine", i.quant.scale, zp if k == 3 else
                                  (i.quant.zero_point if dtype != np.uint8 else 0)))
             for k, i in enumerate(infos)]
    with pytest.raises(ValueError, match=rf"^output 3: zero point {zp!r} of "
                                         rf"{np.dtype(dtype)} codes must be an integer in "
                                         rf"{rng}$"):
        decode("yolov8", arrays, infos)


@pytest.mark.parametrize("classes", [5, 5.0, "5", np.int64(5)])
def test_classes_not_a_sequence_is_named(classes):
    arrays, infos = _v8_int8()
    with pytest.raises(TypeError, match=r"^decode: classes is a sequence of class indices "
                                        r"in \[0, 80\) \(one class: \["):
        decode("yolov8", arrays, infos, classes=classes)


def test_another_familys_outputs_are_named_so():
    arrays, infos = _v8_int8()
    for fam in ("yolov5", "yolox", "yolov8-seg", "yolov8-pose"):
        with pytest.raises(ValueError, match=rf"^decode: these 6 outputs are not {fam}'s; "
                                             rf"their shapes .* fit yolov8$"):
            decode(fam, arrays, infos)
    with pytest.raises(ValueError, match=r"^decode: these 2 outputs are not yolov5's \(one "
                                         r"head \[1, 3 x \(5 \+ nc\), H, W\] per scale"):
        decode("yolov5", [np.zeros((1, 255, 80, 80), np.float32),
                          np.zeros((1, 255, 40, 40), np.float32)])


def test_pose_keypoints_3d_say_what_they_should_be():
    heads = [np.zeros((1, 65, g, g), np.float32) for g in (80, 40, 20)]
    with pytest.raises(ValueError, match=r"^output 3: a 3-D output is one frame's \[1, C, "
                                         r"N\]; got shape \(17, 3, 8400\) \(yolov8-pose's "
                                         r"keypoints are 4-D \[1, K, 3, N\]\)$"):
        decode("yolov8-pose", heads + [np.zeros((17, 3, 8400), np.float32)])


def test_an_empty_output_is_named():
    with pytest.raises(ValueError, match=r"^output 0: an empty array \(shape \(0, 64, 3\)\)"):
        decode("yolov8", [np.zeros((0, 64, 3), np.float32)])


@pytest.mark.parametrize("shape", [(0, 64, 3), (64, 0, 3), (1, 0, 64, 3)])
def test_letterbox_into_an_empty_out_names_out(shape):
    from rknnx.vision import letterbox

    frame = np.zeros((100, 100, 3), np.uint8)
    with pytest.raises(ValueError, match=r"^letterbox: out of shape .* holds an image of "
                                         r"\d+x\d+; expected at least 1x1$"):
        letterbox(frame, out=np.zeros(shape, np.uint8))
