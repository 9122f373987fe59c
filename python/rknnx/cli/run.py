"""``rknnx run MODEL --input FILE ...``: run a model on .npy arrays or images and print a
summary of each output (shape, dtype, range; top-5 of a score vector); --out DIR saves the
outputs as .npy files.

An image whose size differs from the input's is resized to it (stretched, which says so);
--letterbox keeps its aspect ratio instead and pads with gray 114 (--pad chooses), the way
detection models (YOLO) expect their input, and prints the scale and the padding to map boxes
back.
"""

from __future__ import annotations

import os
import time

import numpy as np

from rknnx.cli._common import (UserError, add_model_arguments, fmt_shape, gray_level,
                               help_text, load_runtime, open_model)

_IMAGE_EXT = (".png", ".jpg", ".jpeg", ".bmp", ".ppm", ".pgm")


def letterbox(img, width: int, height: int, fill: int = 114):
    """`img` (a PIL image) scaled to fit `width` x `height` with its aspect ratio kept and
    centred on a `fill` gray canvas by :func:`rknnx.vision.letterbox` (bilinear, OpenCV's
    pixel-centre rule): (uint8 HWC array, scale, (top, bottom, left, right)).  A box
    (x, y) of the model's output maps back to the image as ((x - left) / scale,
    (y - top) / scale)."""
    from rknnx.vision import letterbox as _letterbox

    arr, box = _letterbox(np.asarray(img, dtype=np.uint8), (width, height), pad_value=fill)
    (left, top), (nw, nh) = box.pad, box.resized
    return arr, box.scale, (top, height - nh - top, left, width - nw - left)


def read_input(path: str, info, fit: str = "resize", say=print, pad: int = 114) -> np.ndarray:
    """A .npy array, or an image as uint8 HWC (RGB) brought to the input's size when it
    differs: stretched (`fit` ``"resize"``) or letterboxed (``"letterbox"``, padded with
    the gray `pad`); `say` is told which, with the scale and padding."""
    if os.path.isdir(path):
        raise UserError(f"input {path!r} is a directory, not a file")
    if not os.path.isfile(path):
        raise UserError(f"input file {path!r} does not exist")
    if path.lower().endswith(".npy"):
        try:
            return np.load(path, allow_pickle=False)
        except ValueError as exc:
            raise UserError(f"{path!r} is not a .npy array ({exc})") from exc
    if path.lower().endswith(_IMAGE_EXT):
        try:
            from PIL import Image
        except ImportError:
            raise UserError(f"reading {path!r} needs Pillow (pip install pillow); or pass a .npy "
                            "array") from None
        img = Image.open(path)
        mode = img.mode
        if mode != "RGB":
            # the model takes 3 channels: say what the conversion does, in one line
            what = {"L": "grayscale", "LA": "grayscale with alpha", "1": "black and white",
                    "I": "32-bit grayscale", "I;16": "16-bit grayscale", "P": "palette",
                    "RGBA": "RGB with alpha", "CMYK": "CMYK"}.get(mode, f"mode {mode}")
            done = ("its one channel is repeated into R, G and B"
                    if mode in ("L", "LA", "1", "I", "I;16", "F") else "converted to RGB")
            if "A" in mode:
                done += ", the alpha channel dropped"
            say(f"input {info.name!r}: {os.path.basename(path)} is {what}; {done}")
        img = img.convert("RGB")
        if len(info.shape) == 4:
            h, w = info.shape_in("NHWC")[1:3]
            w0, h0 = img.size
            if (w0, h0) != (w, h):
                name = os.path.basename(path)
                if fit == "letterbox":
                    try:
                        arr, scale, (top, bottom, left, right) = letterbox(img, w, h, pad)
                    except ValueError as exc:        # a 1-pixel-wide image
                        raise UserError(f"{path!r}: {exc}") from None
                    say(f"input {info.name!r}: {name} {w0}x{h0} letterboxed to {w}x{h}: scale "
                        f"{scale:.4g} (to {round(w0 * scale)}x{round(h0 * scale)}), padding "
                        f"top {top} bottom {bottom} left {left} right {right} (gray {pad}); "
                        f"a box maps back as ((x - {left}) / {scale:.4g}, "
                        f"(y - {top}) / {scale:.4g})")
                    return arr
                img = img.resize((w, h))
                say(f"input {info.name!r}: {name} {w0}x{h0} resized to {w}x{h} (stretched"
                    + (": the aspect ratio changes; --letterbox keeps it)"
                       if abs(w0 / h0 - w / h) > 1e-3 else ")"))
        return np.asarray(img, dtype=np.uint8)
    raise UserError(f"{path!r}: inputs are .npy arrays or images ({', '.join(_IMAGE_EXT)})")


def summary(i: int, name: str, a: np.ndarray) -> str:
    line = (f"output {i} {name!r}: {fmt_shape(a.shape)} {a.dtype}  "
            f"min {a.min():.6g} max {a.max():.6g} mean {a.astype(np.float64).mean():.6g}")
    flat = a.reshape(-1)
    if a.size == max(a.shape) and a.size > 1:
        top = np.argsort(flat)[::-1][:5]
        line += "\n  top-5: " + ", ".join(f"{k} ({flat[k]:.4g})" for k in top)
    return line


def run(args) -> int:
    if args.out and os.path.exists(args.out) and not os.path.isdir(args.out):
        raise UserError(f"--out {args.out!r} exists and is not a directory")
    load_runtime()
    with open_model(args) as model:
        if len(args.input) != len(model.inputs):
            raise UserError(f"the model has {len(model.inputs)} input(s) "
                            f"({', '.join(t.name for t in model.inputs)}); got "
                            f"{len(args.input)} --input")
        fit = "letterbox" if args.letterbox else "resize"
        arrays = [read_input(p, t, fit, pad=args.pad) for p, t in zip(args.input, model.inputs)]
        t0 = time.perf_counter()
        if args.flow == "general":
            outputs = model.run(*arrays, raw=args.raw)
        else:
            prepared, shape_set = model.prepare_inputs(arrays)
            with model.zero_copy(outputs="raw" if args.raw else "float32",
                                 input_dtypes=[a.dtype for a, _ in prepared]) as s:
                if shape_set is not None:
                    s.set_shape_set(shape_set)
                outputs = s.run_arrays(*(a for a, _ in prepared))
        ms = (time.perf_counter() - t0) * 1e3
        names = [t.name for t in model.outputs]
    print(f"{args.flow} flow: {ms:.2f} ms")
    if args.out:
        os.makedirs(args.out, exist_ok=True)
    for i, (name, a) in enumerate(zip(names, outputs)):
        print(summary(i, name, a))
        if args.out:
            path = os.path.join(args.out, f"output{i}_{_safe(name)}.npy")
            np.save(path, a)
            print(f"  saved {path}")
    if not args.out:
        print("(nothing saved: --out DIR saves each output as DIR/output<i>_<name>.npy)")
    return 0


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name) or "out"


def add_parser(sub) -> None:
    p = sub.add_parser("run", help="run a model on .npy arrays or images, save the outputs",
                       description=help_text(__doc__))
    add_model_arguments(p)
    p.add_argument("--input", "-i", action="append", default=[], metavar="FILE",
                   help="an input (.npy, or an image for a pixel input); once per input")
    p.add_argument("--flow", choices=("general", "zero-copy"), default="general",
                   help="the runtime flow to use (default: general)")
    p.add_argument("--raw", action="store_true",
                   help="outputs in the model's own type (e.g. int8) instead of float32")
    p.add_argument("--letterbox", action="store_true",
                   help="fit an image of another size by scaling it with its aspect ratio "
                        "kept and padding with gray 114 (as YOLO-style detectors expect); "
                        "default: stretch it to the input's size")
    p.add_argument("--pad", type=gray_level, default=114, metavar="GRAY",
                   help="the gray (0-255) --letterbox pads with (default: 114, as Ultralytics; "
                        "the model zoo's examples pad with 0)")
    p.add_argument("--out", metavar="DIR",
                   help="save each output as DIR/output<i>_<name>.npy (default: save nothing, "
                        "print the summary only)")
    p.set_defaults(func=run)
