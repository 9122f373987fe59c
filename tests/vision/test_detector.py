"""rknnx.vision.Detector on the emulator: the hand-set ``detector`` sample finds the squares
of a picture; every result equals letterbox + run + decode done by hand on a session of
the same kind (the sample, and the vendor files' stand-ins: their outputs' own layouts,
native NC1HWC2 on RK3588 and NHWC on RV1106); workers=3 gives workers=1's results in
order; closing while map() runs, dropping without close, bad input."""

from __future__ import annotations

import gc
import threading
import warnings

import numpy as np
import pytest

import rknnx
from helpers import NO_VENDOR_DATA, RKNN_MODELS, live, model_bytes
from rknnx.emulator import samples
from rknnx.vision import DecodeWarning, Detections, Detector, decode, letterbox

DIR = RKNN_MODELS / "toolkit-2.5.0" if RKNN_MODELS is not None else None


@pytest.fixture
def opened(emu):
    """Models opened on a personality (a sample name or a vendor file's stem), closed at
    teardown, the emulator's live counters back where they were."""
    gc.collect()
    before = live(emu)
    made = []

    def open_(name, platform="RK3588"):
        emu.set_platform(platform)
        if name in samples.ALL:
            m = rknnx.Model(model_bytes(name, platform))
        else:
            if DIR is None or not DIR.is_dir():
                pytest.skip(NO_VENDOR_DATA)
            path = DIR / f"{name}.rknn"
            if not path.is_file():
                pytest.skip(f"{path.name} is not among the vendor files here")
            m = rknnx.Model(str(path))
        made.append(m)
        return m

    yield open_
    gc.collect()
    for m in reversed(made):
        m.close()
    gc.collect()
    assert live(emu) == before


def squares_picture(w=960, h=720, seed=0, n=3):
    """A dark picture with `n` bright squares of 40..200 px of different colours, spread
    diagonally (no two share a row or column band); their boxes (x1, y1, x2, y2)."""
    rng = np.random.default_rng(seed)
    img = rng.integers(0, 40, (h, w, 3), np.uint8)
    colours = [(255, 255, 255), (0, 0, 255), (0, 220, 0), (255, 0, 0), (0, 200, 255),
               (255, 0, 255)]
    boxes = []
    x = y = 10
    for k in range(n):
        s = int(rng.integers(40, 201))
        s = min(s, w - x - 5, h - y - 5)
        img[y:y + s, x:x + s] = colours[(k + seed) % len(colours)]
        boxes.append((x, y, x + s, y + s))
        x += s + int(rng.integers(20, 60))
        y += s + int(rng.integers(20, 60))
    return img, np.array(boxes, np.float32)


def iou(a, b):
    ix = np.maximum(0, np.minimum(a[2], b[2]) - np.maximum(a[0], b[0]))
    iy = np.maximum(0, np.minimum(a[3], b[3]) - np.maximum(a[1], b[1]))
    inter = ix * iy
    return inter / ((a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter)


def by_hand(model, frame, family, kind, conf=0.25, **kw):
    """letterbox into a session's input, run, decode from its outputs, boxes mapped back."""
    with model.zero_copy(outputs=kind) as s:
        box = letterbox(frame, out=s, swap_rb=True)[1]    # (no view of the input kept)
        s.run()
        d = decode(family, s, conf=conf, **kw)
    d.boxes = box.to_frame(d.boxes)
    if d.keypoints is not None:
        d.keypoints = box.to_frame_points(d.keypoints)
    return d, box


def same(a: Detections, b: Detections):
    assert len(a) == len(b)
    np.testing.assert_array_equal(a.boxes, b.boxes)
    np.testing.assert_array_equal(a.scores, b.scores)
    np.testing.assert_array_equal(a.classes, b.classes)
    for x, y in ((a.masks, b.masks), (a.keypoints, b.keypoints)):
        assert (x is None) == (y is None)
        if x is not None:
            np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("platform", ["RK3588", "RK3566", "RV1106"])
@pytest.mark.parametrize("seed", [0, 1])
def test_the_sample_finds_each_square(opened, platform, seed):
    m = opened("detector", platform)
    img, truth = squares_picture(seed=seed)
    with Detector(m, names=samples.DETECTOR_NAMES) as det:
        assert det.family == "yolov8" and det.input_size == (640, 640)
        d = det.detect(img[..., ::-1])              # a BGR frame, swapped to RGB
    assert len(d) == len(truth), (d.boxes, truth)
    for t in truth:
        best = max(iou(t, b) for b in d.boxes)
        assert best >= 0.5, (t, d.boxes)
    assert d.labels == ["square"] * len(truth)
    assert np.all(d.boxes[:, 0::2] <= img.shape[1]) and np.all(d.boxes[:, 1::2] <= img.shape[0])
    assert d.letterbox.frame_size == (img.shape[1], img.shape[0])


def test_the_sample_finds_nothing_in_the_dark(opened):
    m = opened("detector")
    with Detector(m) as det:
        d = det.detect(np.full((480, 640, 3), 30, np.uint8))
    assert len(d) == 0 and d.boxes.shape == (0, 4)


@pytest.mark.parametrize("platform", ["RK3588", "RV1106"])
def test_detect_equals_letterbox_run_decode_by_hand(opened, platform):
    m = opened("detector", platform)
    img, _ = squares_picture(w=800, h=500, seed=3)
    with Detector(m) as det:
        got = det.detect(img)
        kind = det.output_kind
    assert kind == "native"
    want, box = by_hand(m, img, "yolov8", kind)
    assert len(want) >= 1
    same(got, want)
    assert got.letterbox == box


def test_the_natural_call_decodes_an_80_class_yolov8(emu):
    """decode("yolov8", model.run(x), model.outputs) on a yolov8n's 9-output signature (80
    classes: the class output [1, 80, 80, 80] reads as NCHW and as NHWC): each array has its
    info's shape, so it is in its info's layout, with no layout= (issue 39, item 3: it was
    refused); the same boxes as layout="NCHW" and as the Detector's."""
    emu.set_platform("RK3588")
    with rknnx.Model(model_bytes("detector", "RK3588", num_classes=80, score_sum=True)) as m:
        _natural_call(m)


def _natural_call(m):
    assert len(m.outputs) == 9 and tuple(m.outputs[1].shape) == (1, 80, 80, 80)
    img, truth = squares_picture(w=640, h=640, seed=2)
    outs = m.run(img[None], raw=True)
    got = decode("yolov8", outs, m.outputs)
    want = decode("yolov8", outs, m.outputs, layout="NCHW")
    same(got, want)
    assert len(got) == len(truth) >= 1
    for t in truth:
        assert max(iou(t, b) for b in got.boxes) >= 0.5
    # float outputs (the default run) take the same call
    flt = decode("yolov8", m.run(img[None]), m.outputs)
    assert len(flt) == len(got)
    np.testing.assert_allclose(flt.boxes, got.boxes, atol=1e-3)
    with Detector(m) as det:
        d = det.detect(img)
    np.testing.assert_allclose(d.boxes, got.boxes, atol=1e-3)


VENDOR = [("yolov8_det9_rk3588", "RK3588", "yolov8"),
          ("yolov8_det9_rv1106", "RV1106", "yolov8"),
          ("yolov8_seg_rk3588", "RK3588", "yolov8-seg"),
          ("yolov8_pose_rk3588", "RK3588", "yolov8-pose"),
          ("yolov5_zoo_rk3588", "RK3588", "yolov5")]


@pytest.mark.parametrize("stem,platform,family", VENDOR, ids=[v[0] for v in VENDOR])
def test_vendor_stand_ins_equal_the_hand_made_pipeline(opened, stem, platform, family):
    """The stand-in's outputs are digests of the input, not a network's: whatever they
    decode to, the detector's result is the hand-made pipeline's, in the frame's pixels."""
    m = opened(stem, platform)
    frame = np.random.default_rng(7).integers(0, 256, (480, 720, 3), np.uint8)
    with Detector(m, family, conf=0.3) as det:
        assert det.family == family
        got = det.detect(frame)
        kind = det.output_kind
    want, _ = by_hand(m, frame, family, kind, conf=0.3)
    same(got, want)
    assert np.all(got.boxes >= 0) and np.all(got.boxes[:, 0::2] <= 720) and \
        np.all(got.boxes[:, 1::2] <= 480)
    if family == "yolov8-seg":
        assert got.masks.shape[1:] == (640, 640)
    if family == "yolov8-pose":
        assert np.all(got.keypoints[..., 0] <= 720)


@pytest.mark.parametrize("platform", ["RK3588", "RK3566"])
def test_three_workers_give_one_workers_results_in_order(opened, platform):
    m = opened("detector", platform)
    frames = [squares_picture(w=640 + 40 * k, h=480, seed=k, n=1 + k % 3)[0]
              for k in range(8)]
    with Detector(m, workers=1) as one:
        want = [one.detect(f) for f in frames]
    with Detector(m, workers=3) as three:
        assert three.workers == 3
        if platform == "RK3588":
            masks = [s._ctx.core_mask if hasattr(s._ctx, "core_mask") else None
                     for s in three.sessions]
            del masks
        got = list(three.map(iter(frames)))
        futures = [three.submit(f) for f in frames[:3]]
        one_by_one = [f.result() for f in futures]
        times = three.stage_times()
    assert [len(d) for d in got] == [len(d) for d in want]
    for g, w in zip(got, want):
        same(g, w)
    for g, w in zip(one_by_one, want[:3]):
        same(g, w)
    assert times["frames"] == 11 and all(times[s]["p50"] > 0 for s in
                                         ("letterbox", "npu", "decode"))


def test_closing_while_map_runs(opened):
    m = opened("detector")
    frames = [squares_picture(seed=k)[0] for k in range(40)]
    det = Detector(m, workers=3)
    got, errors = [], []
    started = threading.Event()

    def consume():
        try:
            for d in det.map(frames):
                got.append(d)
                started.set()
        except RuntimeError as e:
            errors.append(e)
        finally:
            started.set()

    t = threading.Thread(target=consume)
    t.start()
    started.wait(60)
    det.close()
    t.join(60)
    assert not t.is_alive()
    assert det.closed and all(s.closed for s in det.sessions)
    assert len(got) < len(frames)
    assert len(errors) == 1 and "closed" in str(errors[0])
    with pytest.raises(RuntimeError, match="detect on a closed Detector"):
        det.detect(frames[0])
    with pytest.raises(RuntimeError, match="map on a closed Detector"):
        det.map(frames)
    det.close()                                   # a second close does nothing


@pytest.mark.parametrize("workers", [1, 3])
def test_dropped_without_close(opened, emu, workers):
    m = opened("detector")
    gc.collect()
    before = live(emu)
    det = Detector(m, workers=workers)
    if workers == 3:
        list(det.map([squares_picture(seed=1)[0]] * 4))
    else:
        det.detect(squares_picture(seed=1)[0])
    assert live(emu) != before
    with pytest.warns(ResourceWarning, match="unclosed <rknnx.vision.Detector yolov8") as rec:
        del det
        gc.collect()
    assert len([w for w in rec if issubclass(w.category, ResourceWarning)]) == 1
    assert live(emu) == before


def test_a_path_is_opened_and_closed_with_the_detector(tmp_path, emu):
    gc.collect()
    before = live(emu)
    path = tmp_path / "detector.rknn"
    path.write_bytes(model_bytes("detector"))
    with Detector(str(path)) as det:
        assert len(det.detect(squares_picture(seed=2)[0])) == 3
        model = det.model
    assert model.closed and live(emu) == before


def test_bad_input(opened):
    m = opened("detector")
    with Detector(m) as det:
        with pytest.raises(TypeError, match=r"a frame is uint8 \(H, W, 3\); got float32"):
            det.detect(np.zeros((10, 10, 3), np.float32))
        with pytest.raises(ValueError, match=r"a frame is \(H, W, 3\).*got shape \(10, 10\)"):
            det.detect(np.zeros((10, 10), np.uint8))
        with pytest.raises(ValueError, match=r"at least 2x2 pixels; got shape \(1, 1, 3\)"):
            det.detect(np.zeros((1, 1, 3), np.uint8))
        with pytest.raises(TypeError, match="a uint8 numpy array"):
            det.detect([[1, 2, 3]])
        # the sessions stay usable after an error
        assert len(det.detect(squares_picture(seed=0)[0])) == 3
    with pytest.raises(ValueError, match="family must be one of"):
        Detector(m, "yolov9")
    with pytest.raises(ValueError, match="these 6 outputs are not yolov8-seg's"):
        Detector(m, "yolov8-seg")
    with pytest.raises(ValueError, match="workers must be an int >= 1; got 0"):
        Detector(m, workers=0)
    with pytest.raises(ValueError, match=r"^Detector: conf must be a number in \[0, 1\]; "
                                         r"got nan$"):
        Detector(m, conf=float("nan"))
    with pytest.raises(ValueError, match=r"classes: .*3\)? is not a class of this model \(1 classes\)"):
        Detector(m, classes=[3])


def test_parameters_out_of_range_are_refused_before_any_work(opened, emu):
    """conf and iou outside [0, 1], a max_det that is no count, another family: refused
    naming the parameter and its range, with no session made (the counters stay)."""
    m = opened("detector")
    gc.collect()
    before = live(emu)
    for kw, msg in ((dict(conf=1.5), r"^Detector: conf must be a number in \[0, 1\]; got 1.5$"),
                    (dict(conf=-0.1), r"^Detector: conf must be a number in \[0, 1\]"),
                    (dict(iou=1.5), r"^Detector: iou must be a number in \[0, 1\]; got 1.5$"),
                    (dict(iou=-0.1), r"^Detector: iou must be a number in \[0, 1\]"),
                    (dict(max_det=1e10), r"^Detector: max_det must be an int >= 0 \(None: no "
                                         r"limit\); got 10000000000.0$")):
        with pytest.raises(ValueError, match=msg):
            Detector(m, **kw)
        assert live(emu) == before
    with pytest.raises(ValueError, match=r"^decode: these 6 outputs are not yolov5's; their "
                                         r"shapes .* fit yolov8$"):
        Detector(m, family="yolov5")
    # "no limit" takes no memory for it
    with Detector(m, max_det=2 ** 62) as det:
        assert len(det.detect(squares_picture(seed=0)[0])) == 3
    with Detector(m, max_det=None) as det:
        assert len(det.detect(squares_picture(seed=0)[0])) == 3


def test_an_ambiguous_family_lists_the_candidates(opened):
    m = opened("detector_random")
    with pytest.raises(ValueError, match=r"fit yolov5 and yolox: pass family="):
        Detector(m)
    with Detector(m, "yolov5", conf=0.5) as det:
        d = det.detect(squares_picture(seed=0)[0])
    assert isinstance(d, Detections)


def _float16_input_yolov5(target="RK3588"):
    """A float16 image input [1,64,64,3] -> three yolov5-shaped heads (18 channels, zero
    weights) at 8x8, 4x4, 2x2."""
    from rknnx.emulator.builder import ModelBuilder

    b = ModelBuilder(target, "float16 input")
    x = b.input("img", (1, 64, 64, 3), "float16", "NHWC")
    heads = [b.conv2d(x, np.zeros((18, 3, k, k), np.float32), stride=k, out=f"head{k}")
             for k in (8, 16, 32)]
    b.output(*heads)
    return b.build()


def test_an_input_not_taking_pixels_needs_its_normalization(emu):
    """A float16 image input (an unquantized export): the runtime converts no uint8 pixels
    for it, its normalization is not known: refused, saying what to give; given, the
    detector letterboxes the normalized pixels into the NPU's own float16 input."""
    gc.collect()
    before = live(emu)
    emu.set_platform("RK3588")
    with rknnx.Model(_float16_input_yolov5()) as m:
        with pytest.raises(ValueError, match=r"input 0 of the model takes float16 \(the "
                           r"runtime does not convert uint8 pixels for it\), and its "
                           r"normalization is not known: pass mean= and std="):
            Detector(m, "yolov5", anchors=[(1, 1, 2, 2, 3, 3)] * 3)
        with pytest.raises(ValueError, match="give both mean= and std="):
            Detector(m, "yolov5", mean=0)
        frame = squares_picture(w=128, h=96)[0]
        for mean, std in ((0, 255), ((10, 20, 30), (50, 60, 70))):
            with Detector(m, "yolov5", mean=mean, std=std,
                          anchors=[(1, 1, 2, 2, 3, 3)] * 3) as det:
                d = det.detect(frame)
                assert len(d) == 0 and d.letterbox.resized == (64, 48)   # zero weights
                want = letterbox(frame, out=np.empty((1, 64, 64, 3), np.float16),
                                 swap_rb=True, mean=mean, std=std)[0]
                view = det.sessions[0].inputs[0]
                assert view.dtype == np.float16
                np.testing.assert_array_equal(view, want)
                del view
    gc.collect()
    assert live(emu) == before


@pytest.mark.parametrize("kw, msg", [
    (dict(pad_value=300), r"Detector: pad_value is a pixel value 0\.\.255 \(an int, or "
                          r"three ints\); got 300"),
    (dict(pad_value=float("nan")), r"pad_value is a pixel value 0\.\.255.*got nan"),
    (dict(pad_value=True), r"pad_value is a pixel value 0\.\.255.*got True"),
    (dict(pad_value="x"), r"pad_value is a pixel value 0\.\.255.*got 'x'"),
    (dict(mean="abc", std=255), r"Detector: mean is a number or three \(one per "
                                r"channel\); got 'abc'"),
    (dict(mean=0, std=float("inf")), r"Detector: std must be finite; got inf"),
    (dict(mean=0, std=0), r"Detector: std must be non-zero; got 0")])
def test_letterbox_parameters_are_refused_at_construction(opened, emu, kw, msg):
    m = opened("detector")
    before = live(emu)
    with pytest.raises(ValueError, match=msg):
        Detector(m, **kw)
    gc.collect()
    assert live(emu) == before           # refused before a session was made


def test_detect_takes_a_decoders_i420_and_nv12_planes(opened):
    # I420 (PyAV's yuv420p) and NV12 frames go to the letterbox as they are: the same
    # detections as their BGR conversion by OpenCV (the conversions agree exactly)
    cv2 = pytest.importorskip("cv2", reason="opencv-python-headless (the test extra)")
    m = opened("detector")
    img, _ = squares_picture(seed=1)
    h, w = img.shape[:2]
    i420 = cv2.cvtColor(img, cv2.COLOR_BGR2YUV_I420)
    flat = i420.reshape(-1)
    q = h * w // 4
    y = i420[:h]
    u = flat[h * w:h * w + q].reshape(h // 2, w // 2)
    v = flat[h * w + q:].reshape(h // 2, w // 2)
    uv = np.stack([u, v], -1).reshape(h // 2, w)
    with Detector(m, workers=2) as det:
        want = det.detect(cv2.cvtColor(i420, cv2.COLOR_YUV2BGR_I420))
        assert len(want) == 3
        got = [det.detect(i420, fmt="i420"), det.detect((y, u, v), fmt="I420"),
               det.detect((y, uv), fmt="nv12"), det.submit(i420, fmt="i420").result(),
               *det.map([i420, (y, u, v)], fmt="i420")]
        for d in got:
            np.testing.assert_array_equal(d.boxes, want.boxes)
            np.testing.assert_array_equal(d.scores, want.scores)
        # the stream's own matrix: BT.709 shifts the colours, the squares stay
        assert len(det.detect(i420, fmt="i420", matrix="bt709")) == 3
        with pytest.raises(ValueError, match=r"matrix is 'bt601' or 'bt709'"):
            det.detect(i420, fmt="i420", matrix="smpte")
        with pytest.raises(ValueError, match=r"\(Y, U, V\) triple of planes; got a sequence "
                                             r"of 2"):
            det.detect((y, u), fmt="i420")
