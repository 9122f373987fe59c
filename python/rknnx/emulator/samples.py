"""Sample models for the emulator (deterministic: weights come from a seeded generator).

Each function returns model file bytes for the given target chip.  Quantized models are
calibrated on a fixed random input (a float shadow of the graph picks each output scale),
so their int8 outputs use the range instead of saturating.

=====================  ==================================================================
``classifier``         uint8-fed 224x224x3 NHWC image (int8, mean/std) -> int8 logits [1,1000]
``detector``           640x640x3 image -> yolov8 split heads (6 int8 outputs, hand-set weights:
                       finds bright squares on a dark picture)
``detector_random``    640x640x3 image -> three int8 NCHW heads on 80x80, 40x40, 20x20
                       (random weights: a detector's shapes and costs)
``multi_io``           int8 / float16 / float32 inputs and outputs, 2-D, 3-D and 4-D tensors
``dynamic``            dynamic-shape model, 3 shape sets
``custom_op_model``    a custom op (``cstSigmoid``) between builtin ops
``all_ops``            every op type, small, 3 shape sets (a fuzzing seed)
``tiny_relu`` ...      one-op models for quick checks
=====================  ==================================================================

and one video: ``squares_video`` writes bright squares that move, stop, hide, are born and
leave (H.264 through PyAV), for the ``detector`` sample to find and a tracker to follow,
and returns its ground truth.
"""

from __future__ import annotations

from typing import List, NamedTuple, Optional, Sequence, Tuple

import numpy as np

from .builder import ModelBuilder

__all__ = ["classifier", "detector", "detector_random", "DETECTOR_NAMES", "multi_io", "dynamic", "custom_op_model", "all_ops", "tiny_relu",
           "tiny_int8_add", "IMAGENET_MEAN", "IMAGENET_STD", "ALL", "squares_video",
           "SquaresTruth"]

IMAGENET_MEAN = (123.675, 116.28, 103.53)
IMAGENET_STD = (58.395, 57.12, 57.375)


def _quant_weights(w: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """Symmetric per-output-channel int8 quantization of float weights ``[Cout, ...]``."""
    amax = np.abs(w.reshape(w.shape[0], -1)).max(axis=1)
    amax[amax == 0] = 1.0
    s = (amax / 127.0).astype(np.float32)
    q = np.clip(np.rint(w / s.reshape((-1,) + (1,) * (w.ndim - 1))), -127, 127).astype(np.int8)
    return q, s


def _conv_f(x: np.ndarray, w: np.ndarray, stride: int, pad: int) -> np.ndarray:
    """Float NCHW convolution (calibration only)."""
    n, c, h, wd = x.shape
    cout, _, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh = (h + 2 * pad - kh) // stride + 1
    ow = (wd + 2 * pad - kw) // stride + 1
    y = np.zeros((n, cout, oh, ow), np.float32)
    for i in range(kh):
        for j in range(kw):
            patch = xp[:, :, i:i + stride * (oh - 1) + 1:stride, j:j + stride * (ow - 1) + 1:stride]
            y += np.einsum("nchw,oc->nohw", patch, w[:, :, i, j])
    return y


def _out_q(real: np.ndarray, relu: bool) -> Tuple[float, int]:
    """Output (scale, zp) covering ``real``: asymmetric after relu, symmetric otherwise."""
    if relu:
        return float(max(real.max(), 1e-3) / 255.0), -128
    return float(max(np.abs(real).max(), 1e-3) / 127.0), 0


class _Int8Net:
    """Builds an int8 conv chain while tracking a float shadow for calibration."""

    def __init__(self, b: ModelBuilder, rng: np.random.Generator):
        self.b, self.rng = b, rng

    def conv(self, x: str, real: np.ndarray, cout: int, k: int, stride: int, pad: int = 0,
             relu: bool = True, fmt: str = "NCHW", out: Optional[str] = None):
        xt = self.b.model.tensors[x]
        cin = real.shape[1]
        w = (self.rng.standard_normal((cout, cin, k, k)) * np.sqrt(2.0 / (cin * k * k))).astype(np.float32)
        bias = (self.rng.standard_normal(cout) * 0.1).astype(np.float32)
        wq, ws = _quant_weights(w)
        y_real = _conv_f(real, wq.astype(np.float32) * ws[:, None, None, None], stride, pad)
        y_real += bias[None, :, None, None]
        if relu:
            y_real = np.maximum(y_real, 0)
        scale, zp = _out_q(y_real, relu)
        bq = np.rint(bias / (np.float32(xt.scale[0]) * ws)).astype(np.int32)
        y = self.b.conv2d(x, wq, bq, stride=stride, pad=pad, relu=relu, weight_scale=ws,
                          out_scale=scale, out_zp=zp, fmt=fmt, out=out)
        return y, y_real


def _image_input(b: ModelBuilder, name: str, shape, mean, std, rng) -> Tuple[str, np.ndarray]:
    """An int8 NHWC image input fed with uint8 pixels; returns it and a calibration image
    (real values, NCHW)."""
    lo = min((0.0 - m) / s for m, s in zip(mean, std))
    hi = max((255.0 - m) / s for m, s in zip(mean, std))
    scale = (hi - lo) / 255.0
    zp = int(np.clip(np.rint(-128 - lo / scale), -128, 127))
    x = b.input(name, shape, "int8", "NHWC", zp=zp, scale=scale, mean=mean, std=std)
    img = rng.integers(0, 256, size=(shape[0], shape[3], shape[1], shape[2])).astype(np.float32)
    real = (img - np.asarray(mean, np.float32)[None, :, None, None]) / np.asarray(std, np.float32)[None, :, None, None]
    return x, real


def classifier(target: str = "RK3588", custom_string: str = "rknnx sample: classifier",
               num_classes: int = 1000) -> bytes:
    """Image classifier: ``image`` int8 NHWC [1,224,224,3] (uint8 pixels, ImageNet mean/std)
    -> five strided int8 convs -> reshape -> dense -> ``logits`` int8 [1, num_classes].

    About 17 M multiply-accumulates per run.
    """
    rng = np.random.default_rng(1000)
    b = ModelBuilder(target, custom_string)
    x, real = _image_input(b, "image", (1, 224, 224, 3), IMAGENET_MEAN, IMAGENET_STD, rng)
    net = _Int8Net(b, rng)
    x, real = net.conv(x, real, 16, 3, 2, 1)      # 112x112
    x, real = net.conv(x, real, 32, 2, 2)         # 56x56
    x, real = net.conv(x, real, 32, 2, 2)         # 28x28
    x, real = net.conv(x, real, 32, 2, 2)         # 14x14
    x, real = net.conv(x, real, 16, 2, 2)         # 7x7
    x = b.reshape(x, (1, -1))
    real = real.reshape(1, -1)
    w = (rng.standard_normal((num_classes, real.shape[1])) * np.sqrt(1.0 / real.shape[1])).astype(np.float32)
    wq, ws = _quant_weights(w)
    logits = real @ (wq.astype(np.float32) * ws[:, None]).T
    scale, zp = _out_q(logits, False)
    y = b.dense(x, wq, np.zeros(num_classes, np.int32), weight_scale=ws, out_scale=scale, out_zp=zp,
                out="logits")
    b.output(y)
    return b.build()


def detector_random(target: str = "RK3588",
                    custom_string: str = "rknnx sample: detector_random",
                    num_classes: int = 3) -> bytes:
    """YOLO-like detector with random weights (its numbers mean nothing, its shapes and
    costs are a detector's): ``images`` int8 NHWC [1,640,640,3] (mean 0, std 255) -> three
    int8 NCHW outputs ``[1, 3*(5+num_classes), S, S]`` for S = 80, 40, 20.

    Strided convs only (about 25 M multiply-accumulates).
    """
    rng = np.random.default_rng(640)
    b = ModelBuilder(target, custom_string)
    x, real = _image_input(b, "images", (1, 640, 640, 3), (0.0, 0.0, 0.0), (255.0, 255.0, 255.0), rng)
    net = _Int8Net(b, rng)
    ch = 3 * (5 + num_classes)
    x, real = net.conv(x, real, 8, 4, 4)          # 160
    x, real = net.conv(x, real, 16, 2, 2)         # 80
    h1, _ = net.conv(x, real, ch, 1, 1, relu=False, out="output0")
    x, real = net.conv(x, real, 32, 2, 2)         # 40
    h2, _ = net.conv(x, real, ch, 1, 1, relu=False, out="output1")
    x, real = net.conv(x, real, 64, 2, 2)         # 20
    h3, _ = net.conv(x, real, ch, 1, 1, relu=False, out="output2")
    b.output(h1, h2, h3)
    return b.build()


def _exact_conv(b: ModelBuilder, x: str, w, bias, *, stride=1, pad=0, relu=False,
                out_scale: float, out_zp: int, out: Optional[str] = None) -> str:
    """An int8 conv2d of hand-set float weights ``[Cout, Cin, KH, KW]`` and float bias (the
    weights quantized per output channel, the bias at the accumulator's scale)."""
    w = np.asarray(w, np.float32)
    wq, ws = _quant_weights(w)
    x_scale = np.float32(b.model.tensors[x].scale[0])
    bq = np.rint(np.asarray(bias, np.float64) / (np.float64(x_scale) * ws)).astype(np.int32)
    return b.conv2d(x, wq, bq, stride=stride, pad=pad, relu=relu, weight_scale=ws,
                    out_scale=out_scale, out_zp=out_zp, out=out)


#: the hand-set detector's class names
DETECTOR_NAMES = ("square",)


def detector(target: str = "RK3588", custom_string: str = "rknnx sample: detector",
             num_classes: int = 1, score_sum: bool = False) -> bytes:
    """A detector with hand-set weights that finds bright squares on a dark picture:
    ``images`` int8 NHWC [1,640,640,3] (uint8 pixels, mean 0, std 255) -> the model zoo's
    yolov8 split heads, 6 int8 outputs ``box`` [1,64,S,S] (DFL, 4 sides x 16 bins) and
    ``cls`` [1,1,S,S] (the probability of class 0, ``square``) for S = 80, 40, 20.

    What the weights compute (all int8, saturation doing the clipping):

    - per 4x4 block, each channel's brightness ``clip(4 (mean - 0.4), 0, 1)`` (0..1
      pixels), then ``bright = clip(sum of the channels, 0, 1)``: a block is bright when
      any of its channels is (a square of any bright colour; a dark background, pixel
      values under about 100, is 0);
    - on the 40x40 grid (stride 16) the distance from each cell's centre to the square's
      edges: the bright blocks counted in a window of 208 px to each side, in grid units;
    - the DFL logits ``-2 |k - d|`` for bins k = 0..15 (whose softmax expectation is d);
    - the class probability ``sigmoid(16 (brightness of the cell's central 8x8 px - 0.5))``.

    Every cell inside a square predicts that square's box (NMS keeps one); the scales of
    strides 8 and 32 never fire.  Squares of 40 to 200 px are found with IoU >= 0.5 when no
    two share a row or column band (the counting window would add them up: spread them
    diagonally).  Decode it as ``"yolov8"``.

    ``num_classes`` > 1 adds classes that never fire (the model zoo's yolov8n has 80), and
    ``score_sum`` a third output per scale, ``sum`` [1,1,S,S] (the zoo's 9 outputs): the
    signature and the decoder's work of a yolov8n export.
    """
    if num_classes < 1:
        raise ValueError(f"num_classes must be >= 1; got {num_classes}")
    nc = int(num_classes)
    b = ModelBuilder(target, custom_string)
    x = b.input("images", (1, 640, 640, 3), "int8", "NHWC", zp=-128, scale=1.0 / 255.0,
                mean=(0.0, 0.0, 0.0), std=(255.0, 255.0, 255.0))
    unit = 1.0 / 255.0
    # per channel brightness of 4x4 blocks: 160x160, saturated at 1
    g, t = 4.0, 0.4
    w = np.zeros((3, 3, 4, 4), np.float32)
    for c in range(3):
        w[c, c] = g / 16.0
    chans = _exact_conv(b, x, w, [-g * t] * 3, stride=4, relu=True, out_scale=unit,
                        out_zp=-128)
    bright = _exact_conv(b, chans, np.ones((1, 3, 1, 1), np.float32), [0.0], relu=True,
                         out_scale=unit, out_zp=-128)
    # distances (grid units of 16 px) to the left/right and top/bottom edges: bright blocks
    # counted over 52 blocks each side of the cell's centre (the centre's 2 rows/columns)
    d_scale = 13.0 / 255.0
    w = np.zeros((4, 1, 4, 104), np.float32)
    w[0, 0, 1:3, :52] = 0.125                   # left
    w[2, 0, 1:3, 52:] = 0.125                   # right
    lr = _exact_conv(b, bright, w, [0.0] * 4, stride=4, pad=(0, 50, 0, 50),
                     out_scale=d_scale, out_zp=-128)
    w = np.zeros((4, 1, 104, 4), np.float32)
    w[1, 0, :52, 1:3] = 0.125                   # top
    w[3, 0, 52:, 1:3] = 0.125                   # bottom
    tb = _exact_conv(b, bright, w, [0.0] * 4, stride=4, pad=(50, 0, 50, 0),
                     out_scale=d_scale, out_zp=-128)
    dist = b.add(lr, tb, out_scale=d_scale, out_zp=-128)
    # |d - k| as relu(d - k) + relu(k - d), then the DFL logits -2 |d - k|
    w = np.zeros((128, 4, 1, 1), np.float32)
    bias = np.zeros(128, np.float32)
    for s in range(4):
        for k in range(16):
            w[32 * s + 2 * k, s] = 1.0
            bias[32 * s + 2 * k] = -k
            w[32 * s + 2 * k + 1, s] = -1.0
            bias[32 * s + 2 * k + 1] = k
    parts = _exact_conv(b, dist, w, bias, relu=True, out_scale=15.0 / 255.0, out_zp=-128)
    w = np.zeros((64, 128, 1, 1), np.float32)
    for s in range(4):
        for k in range(16):
            w[16 * s + k, 32 * s + 2 * k] = w[16 * s + k, 32 * s + 2 * k + 1] = -2.0
    box16 = _exact_conv(b, parts, w, [0.0] * 64, out_scale=32.0 / 255.0, out_zp=127,
                        out="box_16")
    # the class: the cell's central 2x2 blocks bright (the other classes never fire)
    heads = {"box_16": box16}
    for name, n in (("cls", nc),) + ((("sum", 1),) if score_sum else ()):
        w = np.zeros((n, 1, 4, 4), np.float32)
        w[0, 0, 1:3, 1:3] = 16.0 / 4.0
        bias = [-8.0] + [-10.0] * (n - 1)
        logit = _exact_conv(b, bright, w, bias, stride=4, out_scale=10.0 / 127.0, out_zp=0)
        heads[f"{name}_16"] = b.sigmoid(logit, out_scale=unit, out_zp=-128,
                                        out=f"{name}_16")
    # the scales of strides 8 and 32: flat boxes, class probabilities of about 0
    for stride, k in ((8, 2), (32, 8)):
        heads[f"box_{stride}"] = _exact_conv(
            b, bright, np.zeros((64, 1, k, k), np.float32), [0.0] * 64, stride=k,
            out_scale=unit, out_zp=0, out=f"box_{stride}")
        for name, n in (("cls", nc),) + ((("sum", 1),) if score_sum else ()):
            lg = _exact_conv(b, bright, np.zeros((n, 1, k, k), np.float32), [-10.0] * n,
                             stride=k, out_scale=10.0 / 127.0, out_zp=0)
            heads[f"{name}_{stride}"] = b.sigmoid(lg, out_scale=unit, out_zp=-128,
                                                  out=f"{name}_{stride}")
    order = ("box", "cls", "sum") if score_sum else ("box", "cls")
    b.output(*(heads[f"{o}_{stride}"] for stride in (8, 16, 32) for o in order))
    return b.build()


def multi_io(target: str = "RK3588", custom_string: str = "rknnx sample: multi_io") -> bytes:
    """Several inputs and outputs of mixed types and ranks.

    Inputs: ``image`` int8 NHWC [1,32,32,3] (mean/std), ``feat`` float16 [1,64],
    ``seq`` float32 [1,8,16].
    Outputs: ``conv_out`` int8 NCHW [1,8,16,16], ``feat_out`` float16 [1,32] (dense +
    sigmoid), ``seq_out`` float32 [1,16,8] (scale, shift, transpose), ``feat_q`` int8 [1,32]
    (``feat_out`` quantized: an output that is also consumed).
    """
    rng = np.random.default_rng(7)
    b = ModelBuilder(target, custom_string)
    img, real = _image_input(b, "image", (1, 32, 32, 3), (127.5, 127.5, 127.5), (127.5, 127.5, 127.5), rng)
    feat = b.input("feat", (1, 64), "float16")
    seq = b.input("seq", (1, 8, 16), "float32")
    net = _Int8Net(b, rng)
    conv_out, real = net.conv(img, real, 8, 3, 2, 1, out="conv_out")
    w = (rng.standard_normal((32, 64)) * 0.2).astype(np.float16)
    f = b.dense(feat, w, (rng.standard_normal(32) * 0.1).astype(np.float16))
    feat_out = b.sigmoid(f, out="feat_out")
    s = b.mul(seq, (rng.standard_normal(16) * 2).astype(np.float32))
    s = b.add(s, np.float32([0.5]))
    seq_out = b.transpose(s, (0, 2, 1), out="seq_out")
    feat_q = b.quantize(feat_out, scale=1.0 / 255.0, zp=-128, out="feat_q")
    b.output(conv_out, feat_out, seq_out, feat_q)
    return b.build()


DYNAMIC_SETS = ((1, 64, 64, 3), (1, 96, 96, 3), (1, 128, 160, 3))


def dynamic(target: str = "RK3588", custom_string: str = "rknnx sample: dynamic",
            sets: Sequence[Sequence[int]] = DYNAMIC_SETS) -> bytes:
    """Dynamic-shape model: ``image`` int8 NHWC [1,H,W,3] with one shape set per entry of
    ``sets`` (default 64x64, 96x96, 128x160) -> ``feat`` int8 NCHW [1,4,H/2,W/2] and
    ``prob`` float32 [1,4,H/2,W/2] (sigmoid of the dequantized features).
    """
    rng = np.random.default_rng(96)
    b = ModelBuilder(target, custom_string)
    x, real = _image_input(b, "image", tuple(sets[0]), IMAGENET_MEAN, IMAGENET_STD, rng)
    net = _Int8Net(b, rng)
    x, real = net.conv(x, real, 8, 3, 2, 1)
    feat, real = net.conv(x, real, 4, 1, 1, relu=False, out="feat")
    prob = b.sigmoid(b.dequantize(feat), out="prob")
    b.output(feat, prob)
    b.shape_sets([[tuple(s)] for s in sets])
    return b.build()


def custom_op_model(target: str = "RK3588", custom_string: str = "rknnx sample: custom op") -> bytes:
    """``x`` float32 [1,16] -> custom ``cstSigmoid`` (attr ``alpha`` float32 [1] = 1.0) ->
    add 1.0 -> ``y`` float32 [1,16].  Running it needs a callback for ``cstSigmoid``."""
    b = ModelBuilder(target, custom_string)
    x = b.input("x", (1, 16), "float32")
    (s,) = b.custom("cstSigmoid", [x], [{"shape": (1, 16), "dtype": "float32"}],
                    {"alpha": np.float32([1.0]), "mode": np.int32([0, 1])}, name="cst_sigmoid")
    y = b.add(s, np.float32([1.0]), out="y")
    b.output(y)
    return b.build()


def tiny_relu(target: str = "RK3588") -> bytes:
    """``x`` float32 [1,2] -> relu -> ``y`` float32 [1,2]."""
    b = ModelBuilder(target, "tiny_relu")
    b.output(b.relu(b.input("x", (1, 2), "float32"), out="y"))
    return b.build()


def tiny_int8_add(target: str = "RK3588") -> bytes:
    """``a`` int8 [1,4,8,8] NHWC + ``b`` int8 [1,4,8,8] NHWC (different zp/scale) -> relu ->
    ``y`` int8 NCHW [1,8,4,8] (transposed)."""
    b = ModelBuilder(target, "tiny_int8_add")
    a = b.input("a", (1, 4, 8, 8), "int8", "NHWC", zp=3, scale=0.05)
    c = b.input("b", (1, 4, 8, 8), "int8", "NHWC", zp=-5, scale=0.02)
    s = b.relu(b.add(a, c, out_scale=0.06, out_zp=-10))
    b.output(b.transpose(s, (0, 3, 1, 2), fmt="NCHW", out="y"))
    return b.build()


def all_ops(target: str = "RK3588") -> bytes:
    """A small model using every op type (and a custom op, ``cstAddOne``) with 3 shape sets;
    a seed for fuzzing and a quick end-to-end check.

    Inputs: ``x`` int8 NHWC [1,H,W,2] (sets 6x6, 4x8, 10x6; mean/std), ``f`` float16 [2,3].
    Outputs: ``conv`` int8 NCHW [1,4,H,W/2], ``dense`` int8 [1,H*W/2,5], ``ew`` float32
    [2,3], ``act`` float16 [2,3], ``cst`` float32 [2,3] (custom op), ``cast`` int16 [3,2],
    ``fd`` float32 [2,5].
    """
    rng = np.random.default_rng(3)
    b = ModelBuilder(target, "all_ops")
    x = b.input("x", (1, 6, 6, 2), "int8", "NHWC", zp=-3, scale=0.05, mean=(1.0, 2.0), std=(3.0, 4.0))
    f = b.input("f", (2, 3), "float16")
    c = b.conv2d(x, rng.integers(-100, 100, (4, 1, 3, 3)).astype(np.int8),
                 rng.integers(-50, 50, 4).astype(np.int32), stride=(1, 2), pad=1, groups=2, relu=True,
                 weight_scale=rng.uniform(0.005, 0.02, 4), out_scale=0.04, out_zp=-128, out="conv")
    k = b.constant(np.int8([5, 7, -9, 11]).reshape(1, 4, 1, 1), "int8", zp=1, scale=0.1)
    r = b.relu(b.mul(c, k, out_scale=0.05, out_zp=2))
    s = b.sigmoid(b.add(r, c, out_scale=0.08, out_zp=0))
    q = b.quantize(b.dequantize(s), scale=0.02, zp=-1)
    t = b.reshape(b.transpose(q, (0, 2, 3, 1), fmt="NHWC"), (1, -1, 4))
    d = b.dense(t, rng.integers(-100, 100, (5, 4)).astype(np.int8), None, weight_scale=0.01,
                out_scale=0.01, out_zp=0, out="dense")
    ff = b.cast(f, "float32")
    ew = b.add(b.mul(ff, np.float32([1.5, -2.0, 0.5])), np.float32([0.25]), out="ew")
    act = b.sigmoid(b.relu(f), out="act")
    (cst,) = b.custom("cstAddOne", [ew], [{"shape": (2, 3), "dtype": "float32", "name": "cst"}],
                      {"alpha": np.float32([1.0])})
    cast = b.cast(b.transpose(ew, (1, 0)), "int16", out="cast")
    fd = b.dense(ff, rng.standard_normal((5, 3)).astype(np.float32), None, out="fd")
    b.output(c, d, ew, act, cst, cast, fd)
    b.shape_sets([[(1, 6, 6, 2), (2, 3)], [(1, 4, 8, 2), (2, 3)], [(1, 10, 6, 2), (2, 3)]])
    return b.build()


class SquaresTruth(NamedTuple):
    """The ground truth of :func:`squares_video`: per frame, the ids (int64 [N], from 1)
    and boxes (float32 [N, 4], x1, y1, x2, y2 in the frame's pixels) of the squares in
    view; the video's rate, size and codec."""

    ids: List[np.ndarray]
    boxes: List[np.ndarray]
    fps: int
    width: int
    height: int
    codec: str


def _square_paths(n: int, frames: int, width: int, height: int, scene: str,
                  rng: np.random.Generator):
    """Per square: side, and per frame its top-left corner or None (out of view)."""
    paths = []
    if scene == "bands":
        # square k keeps to column band k and row band order[k]: no two squares ever share
        # a row or a column band (the detector's counting window sees one square only)
        cw, rh = width / n, height / n
        order = rng.permutation(n)
        side = int(min(cw, rh) * 0.62)
        margin = (min(cw, rh) - side) / 2 * 0.5
        for k in range(n):
            x0, x1 = k * cw + margin, (k + 1) * cw - margin - side
            y0, y1 = order[k] * rh + margin, (order[k] + 1) * rh - margin - side
            pos = np.array([rng.uniform(x0, x1), rng.uniform(y0, y1)])
            vel = rng.uniform(1.0, 3.0, 2) * rng.choice([-1, 1], 2) * side / 60
            born = 0 if k % 2 == 0 else int(rng.integers(1, max(2, frames // 6)))
            dies = frames if k % 3 != 2 else int(frames - rng.integers(1, max(2, frames // 6)))
            stop = int(rng.integers(frames // 4, frames // 2))
            hide = int(rng.integers(frames // 2, 3 * frames // 4)) if k % 2 == 1 else frames
            path = []
            for f in range(frames):
                if stop <= f < stop + 15:            # stands still for half a second
                    pass
                else:
                    pos = pos + vel
                    for a, (lo, hi) in enumerate(((x0, x1), (y0, y1))):
                        if not lo <= pos[a] <= hi:   # bounces inside its cell
                            vel[a] = -vel[a]
                            pos[a] = min(max(pos[a], lo), hi)
                seen = born <= f < dies and not (hide <= f < hide + 8)
                path.append(pos.copy() if seen else None)
            paths.append((side, path))
    else:
        # crossings: squares of one size on crossing straight lines (the detector sample
        # adds up squares sharing a band, so their boxes merge near the crossings)
        side = int(min(width, height) * 0.16)
        for k in range(n):
            a = np.array([rng.uniform(0, width - side), rng.uniform(0, height - side)])
            b = np.array([width - side - a[0], height - side - a[1]])
            path = [a + (b - a) * f / max(frames - 1, 1) for f in range(frames)]
            paths.append((side, path))
    return paths


def squares_video(path, *, width: int = 1280, height: int = 720, frames: int = 120,
                  fps: int = 30, squares: int = 3, scene: str = "bands", seed: int = 0,
                  codec: Optional[str] = None) -> SquaresTruth:
    """Write a video of bright squares on a dark picture (what :func:`detector` finds)
    that move, stop for half a second, hide for 8 frames, are born late and leave early,
    and return its ground truth.

    ``scene="bands"`` keeps each square in a column band and a row band of its own, so no
    two ever share one (the detector sample's limit: see :func:`detector`) and a tracker
    can keep every id; ``scene="crossing"`` sends squares of one size across each other
    (the detector's boxes merge at the crossings).  H.264 by libx264 where PyAV's FFmpeg
    has it, else MPEG-4 part 2 (`codec` chooses), in the container `path`'s extension
    names (``.mp4``, ``.mkv``, ``.ts`` ...).  Needs PyAV (``pip install 'rknnx[video]'``).

    Returns
    -------
    SquaresTruth
        Per frame, the ids and boxes of the squares in view.
    """
    try:
        import av
    except ImportError:
        raise ImportError("squares_video writes with PyAV: pip install 'rknnx[video]' "
                          "(or av)") from None
    if scene not in ("bands", "crossing"):
        raise ValueError(f"squares_video: scene is 'bands' or 'crossing'; got {scene!r}")
    for name, v in (("width", width), ("height", height), ("frames", frames), ("fps", fps),
                    ("squares", squares)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise ValueError(f"squares_video: {name} is an int >= 1; got {v!r}")
    if width % 2 or height % 2 or width < 64 or height < 64:
        raise ValueError(f"squares_video: an even width and height of at least 64; got "
                         f"{width}x{height}")
    if codec is None:
        codec = "libx264" if "libx264" in av.codecs_available else "mpeg4"
    rng = np.random.default_rng(seed)
    paths = _square_paths(int(squares), int(frames), int(width), int(height), scene, rng)
    colours = [tuple(int(c) for c in rng.integers(170, 256, 3)) for _ in paths]
    ids, boxes = [], []
    out = av.open(str(path), "w")
    try:
        vs = out.add_stream(codec, rate=int(fps))
        vs.width, vs.height, vs.pix_fmt = int(width), int(height), "yuv420p"
        if codec == "libx264":
            vs.options = {"crf": "18", "preset": "veryfast"}
        else:
            vs.bit_rate = 4_000_000
        yy, xx = np.mgrid[0:height, 0:width]
        background = (18 + 20 * (xx / width) + 10 * (yy / height)).astype(np.uint8)
        for f in range(int(frames)):
            img = np.repeat(background[:, :, None], 3, axis=2)
            fid, fbox = [], []
            for k, (side, p) in enumerate(paths):
                if p[f] is None:
                    continue
                x, y = int(round(p[f][0])), int(round(p[f][1]))
                img[y:y + side, x:x + side] = colours[k]
                fid.append(k + 1)
                fbox.append((x, y, x + side, y + side))
            ids.append(np.asarray(fid, np.int64))
            boxes.append(np.asarray(fbox, np.float32).reshape(-1, 4))
            frame = av.VideoFrame.from_ndarray(img, format="bgr24")
            for packet in vs.encode(frame):
                out.mux(packet)
        for packet in vs.encode(None):
            out.mux(packet)
    finally:
        out.close()
    return SquaresTruth(ids, boxes, int(fps), int(width), int(height), codec)


#: every sample builder taking a ``target`` argument, by name
ALL = {"classifier": classifier, "detector": detector, "detector_random": detector_random,
       "multi_io": multi_io, "dynamic": dynamic,
       "custom_op_model": custom_op_model, "all_ops": all_ops, "tiny_relu": tiny_relu, "tiny_int8_add": tiny_int8_add}


def __dir__():
    # tab completion shows the public names, not the imports
    return sorted(__all__)
