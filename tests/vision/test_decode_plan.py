"""decode's plans (issue 39 item 2): what a call derives from the infos, the arrays'
geometry and conf is made once and kept; a kept plan never answers for arrays, infos or a
conf it was not made for."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

from rknnx import _kernels
from rknnx._tensors import QuantInfo, TensorInfo
from rknnx.vision import decode

import zoo_reference as Z

D = importlib.import_module("rknnx.vision.decode")


def _frame(seed=0):
    rng = np.random.default_rng(seed)
    boxes, clss, _ = Z.planted_v8(rng, nc=80)
    arrays, infos = [], []
    for i, x in enumerate(x for s in range(3) for x in (boxes[s], clss[s])):
        sc, zp = (0.0215, 1) if i % 2 == 0 else (1 / 255, -128)
        q = Z.quantize(x, sc, zp)
        arrays.append(q)
        infos.append(TensorInfo(i, f"o{i}", q.shape, np.dtype(np.int8), "NCHW",
                                QuantInfo("affine", sc, zp)))
    return arrays, infos


def _fresh(*args, **kw):
    """decode with no plan kept (the reference of a planned call)."""
    D._PLANS.clear()
    try:
        return decode(*args, **kw)
    finally:
        D._PLANS.clear()


def _same(a, b):
    np.testing.assert_array_equal(a.boxes, b.boxes)
    np.testing.assert_array_equal(a.scores, b.scores)
    np.testing.assert_array_equal(a.classes, b.classes)


@pytest.fixture
def made(monkeypatch):
    """The plans made, counted."""
    count = [0]
    real = _kernels.YoloPlan

    def counting(*a):
        count[0] += 1
        return real(*a)

    monkeypatch.setattr(_kernels, "YoloPlan", counting)
    D._PLANS.clear()
    yield count
    D._PLANS.clear()


def test_a_plan_is_made_once_and_serves_the_next_frames(made):
    arrays, infos = _frame(0)
    want = [_fresh("yolov8", _frame(s)[0], infos, conf=0.3) for s in range(3)]
    made[0] = 0
    got = [decode("yolov8", _frame(s)[0], infos, conf=0.3) for s in range(3)]
    assert made[0] == 1
    for g, w in zip(got, want):
        _same(g, w)
        assert len(g) >= 8
    # iou, max_det, classes and names are the call's own
    kw = dict(conf=0.3, iou=0.1, max_det=3, classes=[2, 5, 7])
    want = _fresh("yolov8", arrays, infos, **kw)
    decode("yolov8", arrays, infos, conf=0.3)
    made[0] = 0
    _same(decode("yolov8", arrays, infos, **kw), want)
    assert made[0] == 0


def test_another_conf_family_layout_or_size_is_another_plan(made):
    arrays, infos = _frame(1)
    decode("yolov8", arrays, infos)
    for kw in (dict(conf=0.5), dict(layout="NCHW"), dict(input_size=(1280, 1280))):
        _same(decode("yolov8", arrays, infos, **kw), _fresh("yolov8", arrays, infos, **kw))
    _same(decode("yolo11", arrays, infos), _fresh("yolov8", arrays, infos))
    # conf=1 and conf=True are not one key (True is refused)
    decode("yolov8", arrays, infos, conf=1)
    with pytest.raises(ValueError, match=r"conf must be a number in \[0, 1\]; got True"):
        decode("yolov8", arrays, infos, conf=True)


def test_arrays_of_another_geometry_are_planned_again(made):
    arrays, infos = _frame(2)
    want = _fresh("yolov8", arrays, infos)
    decode("yolov8", arrays, infos)
    n = made[0]
    # the same values in other strides, types or layouts: read as they are
    strided = [np.asfortranarray(a) for a in arrays]
    _same(decode("yolov8", strided, infos), want)
    nhwc = [np.ascontiguousarray(a.transpose(0, 2, 3, 1)) for a in arrays]
    _same(decode("yolov8", nhwc, infos, layout="NHWC"), want)
    assert made[0] == n + 2
    # the values of other arrays of the plan's geometry are read, not the first ones'
    other = _frame(3)[0]
    _same(decode("yolov8", other, infos), _fresh("yolov8", other, infos))
    # a list that is not arrays, a float64 frame, a tuple
    _same(decode("yolov8", tuple(arrays), infos), want)
    fl = [Z.dequantize(a, i.quant.scale, i.quant.zero_point).astype(np.float64)
          for a, i in zip(arrays, infos)]
    finfos = [TensorInfo(i.index, i.name, i.shape, np.dtype(np.float32), "NCHW",
                         QuantInfo("none")) for i in infos]
    _same(decode("yolov8", fl, finfos), _fresh("yolov8", fl, finfos))
    _same(decode("yolov8", fl, finfos), _fresh("yolov8", fl, finfos))


def test_infos_changed_in_place_are_not_read_through_an_old_plan(made):
    arrays, infos = _frame(4)
    infos = list(infos)
    decode("yolov8", arrays, infos)
    # the list the caller passed, with another quantization for output 1
    infos[1] = TensorInfo(1, "o1", infos[1].shape, np.dtype(np.int8), "NCHW",
                          QuantInfo("affine", 2 / 255, -128))
    got = decode("yolov8", arrays, infos)
    want = _fresh("yolov8", arrays, infos)
    _same(got, want)
    assert not np.array_equal(got.scores, _fresh("yolov8", arrays, _frame(4)[1]).scores)


def test_the_plans_are_bounded(made):
    arrays, infos = _frame(5)
    for k in range(D._PLANS_MAX + 10):
        decode("yolov8", arrays, infos, conf=0.2 + k * 1e-4)
    assert 0 < len(D._PLANS) <= D._PLANS_MAX


def test_an_ndarray_subclass_is_read(made, tmp_path):
    """A memmap (an ndarray subclass) of the outputs: decoded as the arrays are."""
    arrays, infos = _frame(6)
    want = _fresh("yolov8", arrays, infos)
    mapped = []
    for k, a in enumerate(arrays):
        m = np.lib.format.open_memmap(tmp_path / f"o{k}.npy", "w+", a.dtype, a.shape)
        m[:] = a
        mapped.append(m)
    for _ in range(2):
        _same(decode("yolov8", mapped, infos), want)
    del mapped
