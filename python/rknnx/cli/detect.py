"""``rknnx detect MODEL -i IMAGE -o OUT.png``: find objects in an image with a YOLO model
(letterbox, the NPU, the decoder of rknnx.vision), draw the boxes, masks and keypoints with
their labels into OUT.png, and print one line per box: ``class score x1 y1 x2 y2`` in the
image's pixels.

The family (yolov8, yolov8-seg, yolov8-pose, yolov5, yolox) is inferred from the model's
outputs unless --family says it; --names FILE gives the class names (one a line).  Drawing
needs Pillow (the ``image`` extra).
"""

from __future__ import annotations

import os

import numpy as np

from rknnx.cli._common import (UserError, add_model_arguments, gray_level, help_text,
                               load_runtime)

#: box colours, by class, in turn
_COLOURS = ((255, 56, 56), (72, 249, 10), (0, 194, 255), (255, 157, 151), (255, 178, 29),
            (146, 204, 23), (61, 219, 134), (26, 147, 52), (0, 212, 187), (44, 153, 168),
            (52, 69, 147), (100, 115, 255), (132, 56, 255), (203, 56, 255), (255, 149, 200))
#: the keypoint pairs drawn as a skeleton (COCO's 17 keypoints, 0-based)
_SKELETON = ((15, 13), (13, 11), (16, 14), (14, 12), (11, 12), (5, 11), (6, 12), (5, 6),
             (5, 7), (6, 8), (7, 9), (8, 10), (1, 2), (0, 1), (0, 2), (1, 3), (2, 4), (3, 5),
             (4, 6))


def _pil():
    try:
        from PIL import Image, ImageDraw
    except ImportError:
        raise UserError("rknnx detect reads and draws images with Pillow: pip install "
                        "'rknnx[image]' (or pillow)") from None
    return Image, ImageDraw


def read_image(path: str) -> np.ndarray:
    """The image at `path` as uint8 RGB (h, w, 3)."""
    Image, _ = _pil()
    if os.path.isdir(path):
        raise UserError(f"image {path!r} is a directory, not a file")
    if not os.path.isfile(path):
        raise UserError(f"image file {path!r} does not exist")
    try:
        img = Image.open(path)
        img.load()
    except Exception as exc:
        raise UserError(f"{path!r} is not an image Pillow reads ({exc})") from exc
    return np.asarray(img.convert("RGB"), dtype=np.uint8)


def read_names(path: str) -> list:
    if not os.path.isfile(path):
        raise UserError(f"--names file {path!r} does not exist")
    with open(path, encoding="utf-8") as f:
        names = [line.strip() for line in f]
    while names and not names[-1]:
        names.pop()
    if not names:
        raise UserError(f"--names file {path!r} has no names (one a line)")
    return names


def draw(rgb: np.ndarray, dets, path: str) -> None:
    """`rgb` with the boxes, masks and keypoints of `dets` (frame pixels) drawn, saved."""
    Image, ImageDraw = _pil()
    out = rgb.astype(np.float32)
    if dets.masks is not None and len(dets):
        lb = dets.letterbox
        for i in range(len(dets)):
            m = lb.mask_to_frame(dets.masks[i]) if lb is not None else dets.masks[i]
            colour = np.asarray(_COLOURS[int(dets.classes[i]) % len(_COLOURS)], np.float32)
            out[m] = out[m] * 0.55 + colour * 0.45
    img = Image.fromarray(np.clip(np.rint(out), 0, 255).astype(np.uint8), "RGB")
    d = ImageDraw.Draw(img)
    labels = dets.labels
    for i in range(len(dets)):
        colour = _COLOURS[int(dets.classes[i]) % len(_COLOURS)]
        x1, y1, x2, y2 = (float(v) for v in dets.boxes[i])
        d.rectangle([x1, y1, x2, y2], outline=colour, width=2)
        text = f"{labels[i]} {dets.scores[i]:.2f}"
        tw = 6 * len(text) + 4
        ty = y1 - 12 if y1 >= 12 else y1
        d.rectangle([x1, ty, x1 + tw, ty + 12], fill=colour)
        d.text((x1 + 2, ty), text, fill=(255, 255, 255))
        if dets.keypoints is not None:
            kp = dets.keypoints[i]
            vis = kp[:, 2] >= 0.5
            if kp.shape[0] == 17:
                for a, b in _SKELETON:
                    if vis[a] and vis[b]:
                        d.line([tuple(kp[a, :2]), tuple(kp[b, :2])], fill=colour, width=2)
            for k in range(kp.shape[0]):
                if vis[k]:
                    x, y = float(kp[k, 0]), float(kp[k, 1])
                    d.ellipse([x - 3, y - 3, x + 3, y + 3], fill=colour)
    save(img, path)


def output_format(path: str) -> str:
    """The Pillow format `path`'s extension names, if Pillow writes RGB pictures in it (a
    1x1 picture written to memory says so: .xbm, .msp, .bufr are known to Pillow and then
    refused); a UserError otherwise, before anything is opened or run."""
    import io

    Image, _ = _pil()
    Image.init()
    ext = os.path.splitext(path)[1].lower()
    fmt = Image.registered_extensions().get(ext)
    why = "" if fmt in Image.SAVE else "no such format"
    if not why:
        try:
            Image.new("RGB", (1, 1)).save(io.BytesIO(), format=fmt)
        except Exception as exc:        # Pillow's refusals are OSError, ValueError, ...
            why = str(exc)
    if why:
        raise UserError(f"-o {path!r}: Pillow does not write an RGB picture as "
                        f"{ext or 'a file without an extension'} ({why}); use .png or "
                        f".jpg")
    return fmt


def save(img, path: str) -> None:
    """`img` written to `path` through a temporary file beside it, renamed over `path` once
    whole: a refused or failed write leaves an existing file as it was."""
    import tempfile

    fmt = output_format(path)
    d = os.path.dirname(os.path.abspath(path))
    try:
        fd, tmp = tempfile.mkstemp(prefix=".rknnx-detect-", suffix=os.path.splitext(path)[1],
                                   dir=d)
    except OSError as exc:
        raise UserError(f"cannot write {path!r} ({exc})") from exc
    try:
        with os.fdopen(fd, "wb") as f:
            img.save(f, format=fmt)
        os.replace(tmp, path)
    except (OSError, ValueError) as exc:
        os.unlink(tmp)
        raise UserError(f"cannot write {path!r} ({exc})") from exc
    except BaseException:
        os.unlink(tmp)
        raise


def _stand_in(args) -> bool:
    """Whether the emulator stands in for a vendor file: its outputs are digests of the
    input (docs/standin.md), not the network's."""
    if args.sample or not args.model:
        return False
    from rknnx import lowlevel, modelfile, runtime

    info = runtime.runtime_info()
    if info.get("source") != lowlevel.FALLBACK_SOURCE and "emulator" not in \
            str(info.get("path", "")).lower():
        return False
    try:
        return modelfile.is_vendor_file(args.model)
    except Exception:
        return False


def detect(args) -> int:
    import rknnx
    from rknnx.cli._common import open_model
    from rknnx.vision import Detector

    if not args.input:
        raise UserError("give the image: -i IMAGE")
    if not args.output:
        raise UserError("give the picture to write: -o OUT.png")
    if not (0.0 <= args.conf <= 1.0):
        raise UserError(f"--conf is a score threshold in 0..1; got {args.conf}")
    if not (0.0 <= args.iou <= 1.0):
        raise UserError(f"--iou is an overlap threshold in 0..1; got {args.iou}")
    output_format(args.output)
    rgb = read_image(args.input)
    names = read_names(args.names) if args.names else None
    load_runtime()
    with open_model(args) as model:
        if names is None and args.sample == "detector":
            from rknnx.emulator.samples import DETECTOR_NAMES

            names = list(DETECTOR_NAMES)
        family = args.family
        try:
            det = Detector(model, family, conf=args.conf, iou=args.iou, names=names,
                           swap_rb=False, pad_value=args.pad)
        except ValueError as exc:
            raise UserError(str(exc)) from exc
        with det:
            dets = det.detect(rgb)
            family = det.family
        stand_in = _stand_in(args)
    if stand_in:
        print("note: the emulator stands in for this vendor file: its outputs are digests "
              "of the input, not the network's, so these boxes are not the network's")
    labels = dets.labels
    for i in range(len(dets)):
        x1, y1, x2, y2 = (float(v) for v in dets.boxes[i])
        print(f"{labels[i]} {dets.scores[i]:.3f} {x1:.1f} {y1:.1f} {x2:.1f} {y2:.1f}")
    draw(rgb, dets, args.output)
    print(f"{len(dets)} boxes ({family}); drew {args.output}")
    del rknnx
    return 0


def add_parser(sub) -> None:
    from rknnx.vision import FAMILIES

    p = sub.add_parser("detect", help="find objects in an image with a YOLO model, draw them",
                       description=help_text(__doc__))
    add_model_arguments(p)
    p.add_argument("--input", "-i", metavar="IMAGE", help="the image (png, jpg, ...)")
    p.add_argument("--output", "-o", metavar="OUT.png",
                   help="where to draw the boxes, masks and keypoints")
    p.add_argument("--family", choices=[f for f in FAMILIES], default=None,
                   help="the model's family (default: inferred from its outputs)")
    p.add_argument("--conf", type=float, default=0.25,
                   help="keep boxes scoring at least this (default 0.25)")
    p.add_argument("--iou", type=float, default=0.45,
                   help="NMS: drop a box overlapping a better one by more (default 0.45)")
    p.add_argument("--names", metavar="FILE", help="class names, one a line")
    p.add_argument("--pad", type=gray_level, default=0, metavar="GRAY",
                   help="the gray (0-255) the letterbox pads with (default: 0, as the model "
                        "zoo's examples; Ultralytics pads with 114)")
    p.set_defaults(func=detect)
