"""The bench's C baseline of the model zoo's yolov8 post-processing (bench/c/zoo_yolov8.c,
called through bench/zoo_c.py) decodes what rknnx.vision.decode decodes: on the frame the
decode scenario of bench/suite.py times (9 native NC1HWC2 int8 outputs, 20 planted
objects), for C2 = 16 (RK3588) and 8 (RK3566), its kept set is rknnx's, so the two are
timed doing the same work; and where the zoo's C rules differ from rknnx's (its threshold
truncated and compared strictly, its overlap counting pixels inclusively, at most 128
boxes), the port does as the zoo does."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from helpers import REPO

sys.path.insert(0, str(REPO / "bench"))
sys.path.insert(0, str(REPO / "tests" / "vision"))
import zoo_c  # noqa: E402
import zoo_reference as Z  # noqa: E402

from rknnx.vision import decode  # noqa: E402

pytestmark = pytest.mark.xdist_group("zoo_c_port")


@pytest.fixture(scope="module")
def port(tmp_path_factory):
    try:
        return zoo_c.ZooYolov8(tmp_path_factory.mktemp("zoo_c"), flags=("-O2", "-Werror"))
    except RuntimeError as exc:          # no C compiler
        pytest.skip(str(exc))


@pytest.mark.parametrize("c2", [16, 8])
def test_port_keeps_what_rknnx_keeps_on_the_bench_frame(port, c2):
    codes, native, values, infos = zoo_c.yolov8_frame(Z, c2=c2)
    det = decode("yolov8", native, infos)
    ref = Z.yolov8(values)
    got = port.frame(native, infos)
    assert len(det) >= 15                # the planted objects (some neighbours suppressed)
    np.testing.assert_array_equal(got["classes"], det.classes)
    np.testing.assert_array_equal(det.classes, ref["classes"])
    np.testing.assert_allclose(got["boxes"], det.boxes, rtol=1e-4, atol=1e-3)
    # the zoo's score is the best class code dequantized: rknnx's exactly
    np.testing.assert_array_equal(got["scores"], det.scores)
    # the zoo's integer boxes: clamped to the input, truncated
    want = np.clip(det.boxes, 0, 640).astype(np.int32)
    np.testing.assert_array_equal(got["int_boxes"], want)


def _one_cell_frame(code: int, objects=((0, 5, 5, 3.0),)):
    """The bench frame's quantization with background 0 and, per object (class, y, x, d:
    the DFL distance of every side), one cell of class code `code` on the 80x80 grid."""
    from rknnx._tensors import QuantInfo, TensorInfo

    quant = {"box": (0.0215, 1), "cls": (1 / 255, -128), "sum": (1 / 255, -128)}
    codes, infos = [], []
    rng = np.random.default_rng(7)
    for g in (80, 40, 20):
        box = np.zeros((1, 64, g, g), np.float32)
        cls = np.full((1, 80, g, g), -128, np.int8)
        if g == 80:
            for c, y, x, d in objects:
                cls[0, c, y, x] = code
                for k in range(4):
                    box[0, 16 * k:16 * k + 16, y, x] = Z._dfl_logits(rng, d)
        ssum = np.full((1, 1, g, g), -128, np.int8)
        ssum[cls.max(axis=1, keepdims=True) > -128] = 127
        for kind, q in (("box", Z.quantize(box, *quant["box"])), ("cls", cls),
                        ("sum", ssum)):
            codes.append(q)
            infos.append(TensorInfo(len(infos), kind, q.shape, np.dtype(np.int8), "NCHW",
                                    QuantInfo("affine", *quant[kind])))
    return [zoo_c.nc1hwc2(q, 16) for q in codes], infos


def test_port_truncates_the_threshold_as_the_zoo_does(port):
    # conf 0.25 at scale 1/255, zp -128: 0.25 * 255 - 128 = -64.25; rknnx keeps the code
    # -64 (0.2510 >= 0.25), the zoo's (int8)(-64.25) = -64 with a strict > refuses it
    native, infos = _one_cell_frame(-64)
    assert len(decode("yolov8", native, infos)) == 1
    assert len(port.frame(native, infos)["classes"]) == 0
    native, infos = _one_cell_frame(-63)
    assert len(port.frame(native, infos)["classes"]) == 1


def _iou(a, b, plus):
    w = max(0.0, min(a[2], b[2]) - max(a[0], b[0]) + plus)
    h = max(0.0, min(a[3], b[3]) - max(a[1], b[1]) + plus)
    inter = w * h
    area = (a[2] - a[0] + plus) * (a[3] - a[1] + plus) + (b[2] - b[0] + plus) * \
        (b[3] - b[1] + plus)
    return inter / (area - inter)


def test_port_overlap_counts_pixels_inclusively(port):
    # two boxes of one class about 10 px wide, one cell (8 px) apart: their IoU as rknnx
    # computes it is below the inclusive one of the zoo (width x2 - x1 + 1); a threshold
    # between the two: the zoo suppresses the second, rknnx keeps both
    native, infos = _one_cell_frame(100, [(3, 5, 5, 0.6), (3, 5, 6, 0.6)])
    det = decode("yolov8", native, infos, iou=0.99)
    assert len(det) == 2
    exact, inclusive = _iou(*det.boxes.astype(np.float64), 0.0), \
        _iou(*det.boxes.astype(np.float64), 1.0)
    assert 0 < exact < inclusive
    thr = (exact + inclusive) / 2
    assert len(decode("yolov8", native, infos, iou=thr)) == 2
    assert len(port.frame(native, infos, nms=thr)["classes"]) == 1
    assert len(port.frame(native, infos, nms=0.99)["classes"]) == 2


def test_port_keeps_at_most_128(port):
    objs = [(c % 80, 2 * (c // 40) + 1, 2 * (c % 40), 0.4) for c in range(200)]
    native, infos = _one_cell_frame(100, objs)
    assert len(decode("yolov8", native, infos)) == 200
    assert len(port.frame(native, infos)["classes"]) == 128


def test_port_loop_times_every_frame(port):
    _, native, _, infos = zoo_c.yolov8_frame(Z)
    t = port.loop(native, infos, 3)
    assert len(t) == 3 and all(x > 0 for x in t)
