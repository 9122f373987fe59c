"""rknnx.vision.decode against the numpy reference of the zoo's post-processing
(zoo_reference.py) on planted outputs: every family x layout x element type x chip
(NC1HWC2 with C2 16 as RK3588 writes int8, 8 as RK3566 does; NHWC with a padded pixel
stride as RV1106 writes it), the same kept set, scores and classes, boxes within 1e-4."""

from __future__ import annotations

import importlib
import zlib

import numpy as np
import pytest

import rknnx
from rknnx._tensors import QuantInfo, TensorInfo
from rknnx.vision import Detections, DecodeWarning, decode, infer_family

import zoo_reference as Z

# the layouts an output may come in: (name, C2 of NC1HWC2 or pad of NHWC)
LAYOUTS = [("NCHW", 0), ("NHWC", 0), ("NHWC-pad", 16), ("NC1HWC2", 16), ("NC1HWC2", 8)]
LAYOUT_IDS = ["nchw", "nhwc", "nhwc-rv1106", "nc1hwc2-16-rk3588", "nc1hwc2-8-rk3566"]


def rng_for(name):
    return np.random.default_rng(zlib.crc32(name.encode()))


def arrange(a, layout, c2):
    """An NCHW array `a` [1, C, H, W] in `layout` (copies, padded as the NPU pads)."""
    if a.ndim != 4 or layout == "NCHW":
        return a
    n, C, H, W = a.shape
    if layout == "NHWC":
        return np.ascontiguousarray(a.transpose(0, 2, 3, 1))
    if layout == "NHWC-pad":
        cp = -(-C // c2) * c2
        buf = np.full((n, H, W, cp), 7, a.dtype)      # the padding holds junk
        buf[..., :C] = a.transpose(0, 2, 3, 1)
        return buf[..., :C]
    c1 = -(-C // c2)
    buf = np.full((n, c1, H, W, c2), 5, a.dtype)
    p = np.zeros((n, c1 * c2, H, W), a.dtype)
    p[:, :C] = a
    buf[:] = p.reshape(n, c1, c2, H, W).transpose(0, 1, 3, 4, 2)
    if C % c2:
        buf[:, -1, :, :, C % c2:] = 5
    return buf


def build(floats, quants, dtype, layout, c2, names=None):
    """(arrays for decode, infos, float32 NCHW arrays for the reference, layouts)."""
    arrays, infos, ref, lays = [], [], [], []
    for i, (x, q) in enumerate(zip(floats, quants)):
        dt = np.dtype(dtype if q is not None or np.dtype(dtype).kind == "f" else np.float32)
        if dt.kind in "iu":
            scale, zp = q
            a = Z.quantize(x, scale, zp, dt)
            r = Z.dequantize(a, scale, zp)
            qi = QuantInfo("affine", float(scale), int(zp))
        elif dt == np.float16:
            a = x.astype(np.float16)
            r = a.astype(np.float32)
            qi = QuantInfo("none")
        else:
            a = x.astype(np.float32)
            r = a
            qi = QuantInfo("none")
        infos.append(TensorInfo(i, (names or {}).get(i, f"out{i}"), tuple(x.shape), dt,
                                "NCHW" if x.ndim == 4 else "UNDEFINED", qi))
        arrays.append(arrange(a, layout, c2))
        ref.append(r)
        lays.append(("NHWC" if layout.startswith("NHWC") else layout)
                    if x.ndim == 4 else None)
    return arrays, infos, ref, lays


def check(det, ref, *, exact_scores=True, min_kept=8):
    assert isinstance(det, Detections)
    assert len(ref["index"]) >= min_kept, "the planted objects should pass"
    np.testing.assert_array_equal(det.classes, ref["classes"])
    if exact_scores:
        np.testing.assert_array_equal(det.scores, ref["scores"])
    else:
        np.testing.assert_allclose(det.scores, ref["scores"], rtol=1e-6)
    np.testing.assert_allclose(det.boxes, ref["boxes"], rtol=1e-4, atol=1e-3)
    assert det.boxes.dtype == np.float32 and det.scores.dtype == np.float32
    assert det.classes.dtype == np.int32


V8_Q = {"box": (0.0215, 1), "cls": (1 / 255, -128), "sum": (1 / 255, -128),
        "coef": (0.03, -5), "proto": (0.025, -40)}
DTYPES = ["int8", "uint8", "float16", "float32"]


def _v8_quants(n_per, dtype):
    if dtype == "uint8":
        q = {"box": (0.0215, 128), "cls": (1 / 255, 0), "sum": (1 / 255, 0),
             "coef": (0.03, 123), "proto": (0.025, 88)}
    else:
        q = V8_Q
    return q


@pytest.mark.parametrize("nout", [6, 9])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout,c2", LAYOUTS, ids=LAYOUT_IDS)
def test_yolov8_split(nout, dtype, layout, c2):
    rng = rng_for(f"v8-{nout}-{dtype}-{layout}-{c2}")
    boxes, clss, _ = Z.planted_v8(rng, nc=80)
    q = _v8_quants(nout // 3, dtype)
    floats, quants = [], []
    sums = Z.score_sum(clss)
    for s in range(3):
        floats += [boxes[s], clss[s]]
        quants += [q["box"], q["cls"]]
        if nout == 9:
            quants.append(q["sum"])
            floats.append(sums[s])
    arrays, infos, ref_in, lays = build(floats, quants, dtype, layout, c2)
    if np.dtype(dtype).kind in "iu" and nout == 9:
        # the score_sum the NPU writes is the sum of its own (quantized) class values
        for s in range(3):
            r = np.clip(ref_in[3 * s + 1].sum(axis=1, keepdims=True), 0, 1)
            qs = Z.quantize(r, *q["sum"], np.dtype(dtype))
            arrays[3 * s + 2] = arrange(qs, layout, c2)
    ref = Z.yolov8(ref_in)
    det = decode("yolov8", arrays, infos, layout=lays)
    check(det, ref)
    # yolo11 is the same decoder
    det11 = decode("yolo11", arrays, infos, layout=lays)
    np.testing.assert_array_equal(det11.boxes, det.boxes)


@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_yolov8_fused(dtype):
    rng = rng_for(f"fused-{dtype}")
    o = Z.planted_fused(rng)
    arrays, infos, ref_in, _ = build([o], [None], dtype, "NCHW", 0)
    ref = Z.yolov8_fused(ref_in[0])
    check(decode("yolov8", arrays, infos), ref)
    assert infer_family(infos) == ["yolov8"]


def test_yolov8_fused_int16_and_classes():
    """A fused output quantized with room for the scores (int16): exact; classes= and
    agnostic= as the reference applies them."""
    rng = rng_for("fused-int16")
    o = Z.planted_fused(rng, nc=5, n_obj=30)
    arrays, infos, ref_in, _ = build([o], [(0.02, 3)], "int16", "NCHW", 0)
    check(decode("yolov8", arrays, infos), Z.yolov8_fused(ref_in[0]))
    for kw in (dict(classes=[1, 3]), dict(agnostic=True), dict(max_det=4),
               dict(max_nms=10), dict(conf=0.5, iou=0.1)):
        ref = Z.yolov8_fused(ref_in[0], **kw)
        check(decode("yolov8", arrays, infos, **kw), ref, min_kept=1)


def test_yolov8_fused_int8_squeezed_warns_once(monkeypatch):
    """The stock int8 export: one scale for pixels and scores (yolov8_fused_rk3588: scale
    2.83, zp -112): the class scores fall to a code or two; decode warns, once, and still
    equals the reference on what the codes say."""
    rng = rng_for("fused-int8")
    o = Z.planted_fused(rng)
    arrays, infos, ref_in, _ = build([o], [(2.8263463973999023, -112)], "int8", "NCHW", 0)
    monkeypatch.setattr(importlib.import_module("rknnx.vision.decode"), "_warned", set())   # once a process
    with pytest.warns(DecodeWarning, match="share one scale"):
        det = decode("yolov8", arrays, infos, conf=0.0)
    ref = Z.yolov8_fused(ref_in[0], conf=0.0)
    check(det, ref)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        decode("yolov8", arrays, infos, conf=0.0)      # not again


V5_Q = (1 / 255, -128)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout,c2", LAYOUTS, ids=LAYOUT_IDS)
def test_yolov5(dtype, layout, c2):
    rng = rng_for(f"v5-{dtype}-{layout}-{c2}")
    outs = Z.planted_v5(rng)
    q = (1 / 255, 0) if dtype == "uint8" else V5_Q
    arrays, infos, ref_in, lays = build(outs, [q] * 3, dtype, layout, c2)
    ref = Z.yolov5(ref_in)
    check(decode("yolov5", arrays, infos, layout=lays), ref)


def test_yolov5_anchors_and_input_size():
    rng = rng_for("v5-anchors")
    outs = Z.planted_v5(rng, input_size=(320, 256), na=2, nc=3)
    anchors = ((10, 14, 20, 30), (40, 50, 60, 70), (100, 120, 200, 220))
    arrays, infos, ref_in, _ = build(outs, [V5_Q] * 3, "int8", "NCHW", 0)
    ref = Z.yolov5(ref_in, (320, 256), anchors)
    check(decode("yolov5", arrays, infos, anchors=anchors), ref)
    check(decode("yolov5", arrays, infos, anchors=anchors, input_size=(320, 256)), ref)


@pytest.mark.parametrize("dtype", ["int8", "float16", "float32"])
@pytest.mark.parametrize("layout,c2", LAYOUTS[::2] + LAYOUTS[1:2], ids=LAYOUT_IDS[::2] + LAYOUT_IDS[1:2])
def test_yolox(dtype, layout, c2):
    rng = rng_for(f"yolox-{dtype}-{layout}-{c2}")
    outs = Z.planted_v5(rng, yolox=True)
    arrays, infos, ref_in, lays = build(outs, [(0.02, -28)] * 3, dtype, layout, c2)
    ref = Z.yolox(ref_in)
    check(decode("yolox", arrays, infos, layout=lays), ref)


def _mask_check(det, ref):
    assert det.masks is not None and det.masks.dtype == bool
    assert det.masks.shape == ref["masks"].shape
    diff = det.masks != (ref["masks"] > 0.5)
    # only a pixel whose value is 0.5 within float32 rounding may differ
    assert np.all(np.abs(ref["masks"][diff] - 0.5) < 1e-5), int(diff.sum())
    assert det.masks.any()


def test_cell_and_channel_indices_are_exact_in_int32():
    """The masks' and keypoints' cell and channel indices (decode._divmod) are int32 on a
    32-bit system, whose `// scalar` numpy 1.24's AVX-512 loop gets wrong in each full block
    of 16 (Debian bookworm's numpy on an i386 host with AVX-512: an index == size)."""
    D = importlib.import_module("rknnx.vision.decode")
    a = np.arange(-100, 8400, dtype=np.int32)
    for d in (1, 3, 16, 17, 80):
        q, r = D._divmod(a, d)
        assert q.tolist() == [int(x) // d for x in a], d
        assert r.tolist() == [int(x) % d for x in a], d


@pytest.mark.parametrize("dtype", ["int8", "float16"])
@pytest.mark.parametrize("layout,c2", LAYOUTS, ids=LAYOUT_IDS)
def test_yolov8_seg(dtype, layout, c2):
    rng = rng_for(f"seg-{dtype}-{layout}-{c2}")
    boxes, clss, coefs = Z.planted_v8(rng, nc=80, n_obj=10, nm=32)
    sums = Z.score_sum(clss)
    proto = rng.normal(0, 1.5, (1, 32, 160, 160)).astype(np.float32)
    floats, quants = [], []
    for s in range(3):
        floats += [boxes[s], clss[s], sums[s], coefs[s]]
        quants += [V8_Q["box"], V8_Q["cls"], V8_Q["sum"], V8_Q["coef"]]
    floats.append(proto)
    quants.append(V8_Q["proto"])
    arrays, infos, ref_in, lays = build(floats, quants, dtype, layout, c2)
    if dtype == "int8":
        for s in range(3):
            r = np.clip(ref_in[4 * s + 1].sum(axis=1, keepdims=True), 0, 1)
            arrays[4 * s + 2] = arrange(Z.quantize(r, *V8_Q["sum"]), layout, c2)
    ref = Z.yolov8_seg(ref_in)
    det = decode("yolov8-seg", arrays, infos, layout=lays)
    check(det, ref, min_kept=5)
    _mask_check(det, ref)


@pytest.mark.parametrize("kdtype", ["float16", "int16"])
@pytest.mark.parametrize("layout,c2", LAYOUTS, ids=LAYOUT_IDS)
def test_yolov8_pose(kdtype, layout, c2):
    """Heads int8 (box DFL + class logit, Concat of 65 channels), keypoints float16 as the
    zoo's hybrid quantization leaves them on RK3588, int16 as on RV1106."""
    rng = rng_for(f"pose-{kdtype}-{layout}-{c2}")
    boxes, clss, _ = Z.planted_v8(rng, nc=1, n_obj=12, pose=True)
    heads = [np.concatenate([b, c], axis=1) for b, c in zip(boxes, clss)]
    kp = np.empty((1, 17, 3, 8400), np.float32)
    kp[0, :, :2] = rng.uniform(0, 640, (17, 2, 8400))
    kp[0, :, 2] = rng.uniform(0, 1, (17, 8400))
    arrays, infos, ref_in, lays = build(heads, [(0.04, 4)] * 3, "int8", layout, c2)
    if kdtype == "int16":
        ka, kinfo, kref, _ = build([kp], [(0.02, 0)], "int16", "NCHW", 0)
    else:
        ka, kinfo, kref, _ = build([kp], [None], "float16", "NCHW", 0)
    kinfo = [TensorInfo(3, "kpt", kinfo[0].shape, kinfo[0].dtype, "NCHW", kinfo[0].quant)]
    # the NPU's native keypoints: NC1HWC2 with C2 8 (float16 on RK3588)
    if layout == "NC1HWC2":
        ka = [arrange(ka[0], "NC1HWC2", 8)]
    ref = Z.yolov8_pose(ref_in + kref)
    det = decode("yolov8-pose", arrays + ka, infos + kinfo, layout=lays + [None])
    check(det, ref, min_kept=5)
    assert det.keypoints.shape == (len(det), 17, 3)
    np.testing.assert_array_equal(det.keypoints, ref["keypoints"])


def test_kernel_paths_agree():
    """The plain loops (path 0) and the vector paths keep the same boxes."""
    from rknnx import _kernels

    rng = rng_for("paths")
    boxes, clss, _ = Z.planted_v8(rng)
    floats = [x for s in range(3) for x in (boxes[s], clss[s])]
    results = []
    for layout, c2 in LAYOUTS:
        arrays, infos, ref_in, lays = build(floats, [V8_Q["box"], V8_Q["cls"]] * 3, "int8",
                                            layout, c2)
        for path in _kernels._kernel_paths():
            old = _kernels._kernel_path(path)
            try:
                results.append(decode("yolov8", arrays, infos, layout=lays))
            finally:
                _kernels._kernel_path(old)
    ref = Z.yolov8(ref_in)
    for r in results:
        check(r, ref)


# ---- bounded, empty and bad input ----------------------------------------------------

def test_every_cell_passes_stays_bounded():
    rng = rng_for("all")
    boxes, clss, _ = Z.planted_v8(rng, nc=4, n_obj=0)
    clss = [np.full_like(c, 0.9) for c in clss]
    floats = [x for s in range(3) for x in (boxes[s], clss[s])]
    arrays, infos, ref_in, _ = build(floats, [V8_Q["box"], V8_Q["cls"]] * 3, "int8",
                                     "NCHW", 0)
    det = decode("yolov8", arrays, infos, max_det=300)
    ref = Z.yolov8(ref_in, max_det=300)
    check(det, ref)
    assert len(det) == 300
    few = decode("yolov8", arrays, infos, max_nms=50)
    check(few, Z.yolov8(ref_in, max_nms=50), min_kept=1)
    assert len(decode("yolov8", arrays, infos, max_det=0)) == 0


def test_no_objects():
    rng = rng_for("none")
    boxes, clss, _ = Z.planted_v8(rng, n_obj=0)
    floats = [x for s in range(3) for x in (boxes[s], clss[s], Z.score_sum([clss[s]])[0])]
    arrays, infos, _, _ = build(floats, [V8_Q["box"], V8_Q["cls"], V8_Q["sum"]] * 3, "int8",
                                "NCHW", 0)
    det = decode("yolov8", arrays, infos, layout="NCHW")
    assert len(det) == 0 and det.boxes.shape == (0, 4) and det.masks is None


def _v8_int8():
    rng = rng_for("bad")
    boxes, clss, _ = Z.planted_v8(rng, nc=80)
    floats = [x for s in range(3) for x in (boxes[s], clss[s])]
    return build(floats, [V8_Q["box"], V8_Q["cls"]] * 3, "int8", "NCHW", 0)


def test_bad_input():
    arrays, infos, _, _ = _v8_int8()
    with pytest.raises(ValueError, match="family must be one of"):
        decode("yolov9", arrays, infos)
    with pytest.raises(ValueError, match="yolov8 takes 1 output"):
        decode("yolov8", arrays[:4], infos[:4], layout="NCHW")
    with pytest.raises(ValueError, match="yolov5: output 0 has 64 channels"):
        decode("yolov5", arrays[:3], infos[:3], layout="NCHW")
    with pytest.raises(ValueError, match="class outputs must all have 64 channels"):
        decode("yolov8", arrays[1:] + arrays[:1], infos[1:] + infos[:1], layout="NCHW")
    with pytest.raises(ValueError, match="need the model's quantization"):
        decode("yolov8", arrays)
    with pytest.raises(ValueError, match="6 outputs but 5 infos"):
        decode("yolov8", arrays, infos[:5])
    with pytest.raises(TypeError, match="dtype int32"):
        decode("yolov8", [a.astype(np.int32) for a in arrays], infos, layout="NCHW")
    with pytest.raises(ValueError, match="conf must be"):
        decode("yolov8", arrays, infos, layout="NCHW", conf=float("nan"))
    with pytest.raises(ValueError, match="max_det must be"):
        decode("yolov8", arrays, infos, layout="NCHW", max_det=-1)
    with pytest.raises(ValueError, match="not a class of this model"):
        decode("yolov8", arrays, infos, layout="NCHW", classes=[80])
    with pytest.raises(ValueError, match="not the model's"):
        decode("yolov8", [a[:, :, :8] for a in arrays], infos, layout=None)
    with pytest.raises(ValueError, match="no outputs"):
        decode("yolov8", [])
    with pytest.raises(ValueError, match="outputs fit"):
        decode(None, arrays[:2], infos[:2], layout="NCHW")
    # an nc mismatch between scales
    bad = list(arrays)
    bad[3] = bad[3][:, :40]
    binf = list(infos)
    binf[3] = TensorInfo(3, "x", bad[3].shape, np.dtype(np.int8), "NCHW", infos[3].quant)
    with pytest.raises(ValueError, match="class outputs must all have 80"):
        decode("yolov8", bad, binf, layout="NCHW")
    # a float model's outputs given as codes
    f_info = [TensorInfo(i, "f", t.shape, np.dtype(np.float16), "NCHW", QuantInfo("none"))
              for i, t in enumerate(infos)]
    with pytest.raises(ValueError, match="not quantized"):
        decode("yolov8", arrays, f_info, layout="NCHW")


def test_family_inferred():
    arrays, infos, ref_in, _ = _v8_int8()
    assert infer_family(infos) == ["yolov8"]
    det = decode(None, arrays, infos, layout="NCHW")
    check(det, Z.yolov8(ref_in))
    v5 = [TensorInfo(i, "h", (1, 255, g, g), np.dtype(np.int8), "NCHW",
                     QuantInfo("affine", 1 / 255, -128)) for i, g in enumerate((80, 40, 20))]
    assert infer_family(v5) == ["yolov5", "yolox"]
    with pytest.raises(ValueError, match=r"\['yolov5', 'yolox'\]"):
        decode(None, [np.zeros(t.shape, np.int8) for t in v5], v5)


def test_detections_indexing():
    arrays, infos, ref_in, _ = _v8_int8()
    det = decode("yolov8", arrays, infos, layout="NCHW", names=[f"c{i}" for i in range(80)])
    n = len(det)
    assert n >= 8
    one = det[1]
    assert len(one) == 1 and one.boxes[0].tolist() == det.boxes[1].tolist()
    assert len(det[-1]) == 1 and det[-1].scores[0] == det.scores[-1]
    assert len(det[2:5]) == 3
    m = det.scores > np.median(det.scores)
    assert len(det[m]) == int(m.sum())
    assert det[np.array([0, 2])].classes.tolist() == det.classes[[0, 2]].tolist()
    assert det.labels[0] == f"c{det.classes[0]}"
    assert [len(d) for d in det] == [1] * n
    with pytest.raises(IndexError, match="out of range"):
        det[n]
    with pytest.raises(IndexError, match="bool index needs"):
        det[np.ones(n + 1, bool)]
    with pytest.raises(TypeError, match="not a bool"):
        det[True]
    e = Detections.empty()
    assert len(e) == 0 and e.boxes.shape == (0, 4) and len(e[0:3]) == 0
    assert "boxes" in repr(det)
    with pytest.raises(ValueError, match="one each per box"):
        Detections(np.zeros((2, 4)), np.zeros(3), np.zeros(2, np.int32))


@pytest.mark.parametrize("layout,c2", [("NHWC", 0), ("NHWC-pad", 16), ("NC1HWC2", 16)],
                         ids=["nhwc", "nhwc-padded", "nc1hwc2"])
def test_model_with_nhwc_outputs(layout, c2):
    """A model whose outputs are declared NHWC (info.shape [1, H, W, C]): its NHWC arrays
    need no layout=, its native NC1HWC2 ones take their channel count from the info."""
    rng = rng_for(f"nhwc-info-{layout}")
    boxes, clss, _ = Z.planted_v8(rng, nc=80)
    sums = Z.score_sum(clss)
    floats = [x for s in range(3) for x in (boxes[s], clss[s], sums[s])]
    arrays, infos, ref_in, _ = build(floats, [V8_Q["box"], V8_Q["cls"], V8_Q["sum"]] * 3,
                                     "int8", layout, c2)
    for s in range(3):
        r = np.clip(ref_in[3 * s + 1].sum(axis=1, keepdims=True), 0, 1)
        arrays[3 * s + 2] = arrange(Z.quantize(r, *V8_Q["sum"]), layout, c2)
    infos = [TensorInfo(i.index, i.name, i.shape_in("NHWC"), i.dtype, "NHWC", i.quant)
             for i in infos]
    check(decode("yolov8", arrays, infos), Z.yolov8(ref_in))


def test_threads_decode_at_once():
    """The C runs without the GIL and keeps no state: frames decoded in 4 threads at once
    give each its own sequential result."""
    import threading

    frames = []
    for k in range(4):
        rng = rng_for(f"threads-{k}")
        boxes, clss, _ = Z.planted_v8(rng, nc=80)
        floats = [x for s in range(3) for x in (boxes[s], clss[s])]
        arrays, infos, _, _ = build(floats, [V8_Q["box"], V8_Q["cls"]] * 3, "int8",
                                    "NC1HWC2", 16)
        frames.append((arrays, infos))
    want = [decode("yolov8", a, i) for a, i in frames]
    got = [None] * 4
    errors = []

    def work(k):
        try:
            for _ in range(20):
                got[k] = decode("yolov8", *frames[k])
        except Exception as e:       # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g.boxes, w.boxes)
        np.testing.assert_array_equal(g.classes, w.classes)
    assert all(len(w) >= 8 for w in want)


def test_threshold_on_a_code_is_the_float_rule():
    """conf equal to a code's value keeps that code's cells (score >= conf); one float32
    step above drops them: the quantized threshold is the float rule, not a truncation."""
    arrays, infos, ref_in, _ = _v8_int8()
    top = decode("yolov8", arrays, infos, layout="NCHW", conf=0.25)
    v = top.scores[0]
    at = decode("yolov8", arrays, infos, layout="NCHW", conf=float(v))
    above = decode("yolov8", arrays, infos, layout="NCHW",
                   conf=float(np.nextafter(v, np.float32(2))))
    assert at.scores.min() == v and (above.scores > v).all()
    assert len(above) < len(at)
    check(at, Z.yolov8(ref_in, conf=float(v)), min_kept=1)
    if len(above):
        check(above, Z.yolov8(ref_in, conf=float(np.nextafter(v, np.float32(2)))),
              min_kept=1)
