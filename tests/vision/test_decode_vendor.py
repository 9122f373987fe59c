"""rknnx.vision.decode on the signatures of real vendor files (rknn-models/toolkit-2.5.0:
the model zoo's exports built with rknn-toolkit2 2.5.0), opened with rknnx.Model on the
emulator's stand-in: their outputs' own infos, quantization and layouts, read from a
zero-copy session in place (native NC1HWC2 views and the model's own int8 views) with
planted values written into the NPU memory, and the general flow's float32 outputs.
Skipped, saying why, without the vendor data."""

from __future__ import annotations

import gc
import importlib
import zlib

import numpy as np
import pytest

import rknnx
from helpers import NO_VENDOR_DATA, RKNN_MODELS, live
from rknnx.vision import DecodeWarning, Detections, decode, infer_family

import zoo_reference as Z
from test_decode import arrange, check

DIR = RKNN_MODELS / "toolkit-2.5.0" if RKNN_MODELS is not None else None
CASES = [("yolov8_det9_rk3588", "RK3588", "yolov8"),
         ("yolov8_det9_rv1106", "RV1106", "yolov8"),
         ("yolov8_seg_rk3588", "RK3588", "yolov8-seg"),
         ("yolov8_seg_rv1106", "RV1106", "yolov8-seg"),
         ("yolov8_pose_rk3588", "RK3588", "yolov8-pose"),
         ("yolov8_fused_rk3588", "RK3588", "yolov8"),
         ("yolov5_zoo_rk3588", "RK3588", "yolov5")]
IDS = [c[0] for c in CASES]


@pytest.fixture
def opened(emu):
    """Open a vendor file as its chip; closed at teardown, the emulator's counters back."""
    if DIR is None or not DIR.is_dir():
        pytest.skip(NO_VENDOR_DATA)
    before = live(emu)
    models = []

    def open_(stem, chip):
        path = DIR / f"{stem}.rknn"
        if not path.is_file():
            pytest.skip(f"{path.name} is not among the vendor files here")
        emu.set_platform(chip)
        m = rknnx.Model(str(path))
        models.append(m)
        return m

    yield open_
    gc.collect()
    for m in reversed(models):
        m.close()
    gc.collect()
    assert live(emu) == before


def planted(family, infos, rng):
    """Float outputs with planted objects, in the model's output order and shapes."""
    if family == "yolov5":
        return Z.planted_v5(rng)
    if family == "yolov8" and len(infos) == 1:
        return [Z.planted_fused(rng)]
    if family == "yolov8-pose":
        boxes, clss, _ = Z.planted_v8(rng, nc=1, n_obj=12, pose=True)
        kp = np.empty((1, 17, 3, 8400), np.float32)
        kp[0, :, :2] = rng.uniform(0, 640, (17, 2, 8400))
        kp[0, :, 2] = rng.uniform(0, 1, (17, 8400))
        return [np.concatenate([b, c], axis=1) for b, c in zip(boxes, clss)] + [kp]
    seg = family == "yolov8-seg"
    boxes, clss, coefs = Z.planted_v8(rng, nc=80, n_obj=10 if seg else 20, nm=32 if seg else 0)
    sums = Z.score_sum(clss)
    out = []
    for s in range(3):
        out += [boxes[s], clss[s], sums[s]] + ([coefs[s]] if seg else [])
    if seg:
        out.append(rng.normal(0, 1.5, (1, 32, 160, 160)).astype(np.float32))
    return out


def _codes(family, infos, floats):
    """The codes the NPU writes (each output's own type and quantization), and the values
    the reference reads; score_sum as the sum of the NPU's own class values."""
    codes, values = [], []
    for i, (info, x) in enumerate(zip(infos, floats)):
        if info.dtype.kind in "iu":
            q = Z.quantize(x, info.quant.scale, info.quant.zero_point, info.dtype)
            if x.shape[1] == 1 and family in ("yolov8", "yolov8-seg") and i > 0:
                s = np.clip(values[i - 1].sum(axis=1, keepdims=True), 0, 1)
                q = Z.quantize(s, info.quant.scale, info.quant.zero_point, info.dtype)
            v = Z.dequantize(q, info.quant.scale, info.quant.zero_point)
        else:
            q = x.astype(info.dtype)
            v = q.astype(np.float32)
        codes.append(q)
        values.append(v)
    return codes, values


def _reference(family, values):
    if family == "yolov5":
        return Z.yolov5(values)
    if family == "yolov8-seg":
        return Z.yolov8_seg(values)
    if family == "yolov8-pose":
        return Z.yolov8_pose(values)
    if len(values) == 1:
        return Z.yolov8_fused(values[0])
    return Z.yolov8(values)


@pytest.mark.parametrize("stem,chip,family", CASES, ids=IDS)
def test_family_of_the_signature(opened, stem, chip, family):
    m = opened(stem, chip)
    assert infer_family(m.outputs)[0] == family


@pytest.mark.parametrize("kind", ["native", "raw"])
@pytest.mark.parametrize("stem,chip,family", CASES, ids=IDS)
def test_zero_copy_outputs_in_place(opened, stem, chip, family, kind, monkeypatch):
    """Planted codes written into the session's output memory, in the layout the session
    binds (the NPU's native NC1HWC2, C2 16 for int8 and 8 for float16, or the model's own
    NCHW int8), then decoded from the session itself: the reference's boxes."""
    m = opened(stem, chip)
    rng = np.random.default_rng(zlib.crc32(f"{stem}-{kind}".encode()))
    floats = planted(family, m.outputs, rng)
    codes, values = _codes(family, m.outputs, floats)
    ref = _reference(family, values)
    with m.zero_copy(outputs=kind) as s:
        for i, q in enumerate(codes):
            v = s.outputs[i]
            try:
                if v.ndim == 5:
                    # RK3588 blocks 80 channels in 6 x 16 (a block more than they fill)
                    a = arrange(q, "NC1HWC2", v.shape[4])
                    assert v.shape[1] >= a.shape[1]
                    v[:, :a.shape[1]] = a
                else:
                    assert v.shape == q.shape
                    v[...] = q
            finally:
                del v
        if len(m.outputs) == 1 and m.outputs[0].quant.scale > 1 / 16:
            monkeypatch.setattr(importlib.import_module("rknnx.vision.decode"), "_warned", set())   # once a process
            with pytest.warns(DecodeWarning, match="share one scale"):
                det = decode(family, s, conf=0.0)
            ref = Z.yolov8_fused(values[0], conf=0.0)
        else:
            det = decode(family, s)
        check(det, ref, min_kept=1 if family != "yolov8" else 5)
        if family == "yolov8-seg":
            diff = det.masks != (ref["masks"] > 0.5)
            assert np.all(np.abs(ref["masks"][diff] - 0.5) < 1e-5)
        if family == "yolov8-pose":
            np.testing.assert_array_equal(det.keypoints, ref["keypoints"])
        del det


@pytest.mark.parametrize("stem,chip,family", CASES, ids=IDS)
def test_general_flow_outputs(opened, stem, chip, family):
    """The stand-in's own outputs (a digest of the input, not a network's) through the
    general flow's float32 arrays: a valid result, equal to the decode of the same values
    given as float16, and no crash."""
    m = opened(stem, chip)
    frame = np.random.default_rng(1).integers(0, 256, m.inputs[0].shape, np.uint8)
    outs = m.run(frame)
    lay = ["NCHW" if o.ndim == 4 else None for o in outs]
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DecodeWarning)
        det = decode(family, outs, m.outputs, layout=lay, conf=0.3)
    assert isinstance(det, Detections) and len(det) <= 300
    assert det.boxes.shape == (len(det), 4) and np.all(det.scores >= np.float32(0.3))
    if family == "yolov8-seg":
        assert det.masks.shape == (len(det), 640, 640)
    if family == "yolov8-pose":
        assert det.keypoints.shape == (len(det), 17, 3)


@pytest.mark.parametrize("stem,chip,family", CASES[:1], ids=IDS[:1])
def test_outputs_of_another_model(opened, stem, chip, family):
    """A wrong family, another model's outputs: a clear error."""
    m = opened(stem, chip)
    with m.zero_copy(outputs="native") as s:
        with pytest.raises(ValueError, match="these 9 outputs are not yolov8-seg's; their "
                                             "shapes .* fit yolov8$"):
            decode("yolov8-seg", s)
        with pytest.raises(ValueError, match="these 9 outputs are not yolov8-pose's"):
            decode("yolov8-pose", s)
        with pytest.raises(ValueError, match="these 9 outputs are not yolov5's"):
            decode("yolov5", s)
        with pytest.raises(ValueError, match=r"these 6 outputs are not yolov5's \(one head"):
            decode("yolov5", s.outputs[:6], m.outputs[:6])
        # an error leaves no view behind: the session closes
