"""The masks and pipeline scenarios' anchors (bench/suite.py, issue 39 item 2): the model
zoo's own Python where a checkout is given (``--zoo DIR``, DIR named rknn_model_zoo, as
the zoo's files find their py_utils), loaded from DIR at run time and never copied;
without it, stand-ins written for the bench that follow the zoo's code path (float32, its
DFL and mask upsampling through torch on the CPU, one thread).  Each returns a sentence
saying which ran.

- ``seg(zoo_dir)``: examples/yolov8_seg/python/yolov8_seg.py.  Its ``post_process`` runs as
  it is (decode, one class-offset NMS, the masks of the whole proto upsampled to 640x640,
  cropped, > 0.5).  It imports torchvision for ``torchvision.ops.nms`` and pycocotools (its
  mAP test only); where torchvision cannot be imported (no CPU build of it for this torch
  here), the module is given one whose ``ops.nms`` is OpenCV's C++ ``cv2.dnn.NMSBoxes``
  (the same greedy rule, kept indices by falling score) and the result says so.  Its masks
  step is written inline in ``post_process``; ``seg_masks`` runs those lines on the kept
  boxes with the module's own ``sigmoid``, ``F.interpolate`` and ``_crop_mask``.
- ``detect(zoo_dir)``: examples/yolov8/python/yolov8.py's ``post_process`` (through
  bench/decode_cost.py) with py_utils/coco_utils.py's ``COCO_test_helper`` letterbox and
  ``get_real_box``, as the zoo's demo calls them.
"""

from __future__ import annotations

import importlib.util
import sys
import types
from pathlib import Path
from typing import Any, Callable, Optional, Tuple

import numpy as np

HERE = Path(__file__).resolve().parent


def _torch():
    try:
        import torch
    except ImportError:
        return None
    torch.set_num_threads(1)
    return torch


def _torchvision_nms_by_cv2(torch):
    """A module standing in for torchvision where it cannot be imported: ops.nms through
    OpenCV's C++ greedy NMS (boxes x1 y1 x2 y2, IoU > iou suppressed; the scores it gets are >= the
    zoo's OBJ_THRESH, above its score_threshold of 0)."""
    import cv2

    def nms(boxes, scores, iou_threshold):
        b = boxes.numpy().astype(np.float64)
        xywh = np.concatenate((b[:, :2], b[:, 2:] - b[:, :2]), axis=1)
        keep = cv2.dnn.NMSBoxes(xywh, scores.numpy().astype(np.float32), 0.0,
                                float(iou_threshold))
        return torch.as_tensor(np.asarray(keep, np.int64).reshape(-1))

    tv = types.ModuleType("torchvision")
    tv.ops = types.SimpleNamespace(nms=nms)
    return tv


def _load(path: Path, name: str, extra: Optional[dict] = None) -> types.ModuleType:
    saved = {}
    for k, v in (extra or {}).items():
        saved[k] = sys.modules.get(k)
        sys.modules[k] = v
    try:
        spec = importlib.util.spec_from_file_location(name, path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
    finally:
        for k, v in saved.items():
            if v is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = v
    return mod


def seg(zoo_dir: Optional[str]) -> Tuple[Optional[Callable], Callable, str]:
    """(post_process or None, masks(coefs, proto, boxes) -> bool [N, 640, 640], what ran)."""
    torch = _torch()
    if zoo_dir and torch is not None:
        extra, how = {}, ""
        try:
            import torchvision  # noqa: F401
        except Exception as exc:   # a CUDA build against a CPU torch fails at import
            extra["torchvision"] = _torchvision_nms_by_cv2(torch)
            how = (f"; torchvision cannot be imported here ({type(exc).__name__}), its "
                   f"ops.nms given by cv2.dnn.NMSBoxes (C++, the same greedy rule)")
        for name in ("pycocotools", "pycocotools.coco", "pycocotools.cocoeval"):
            try:
                importlib.import_module(name)
            except ImportError:      # imported by the module for its mAP test only
                stub = types.ModuleType(name)
                stub.COCO = stub.COCOeval = None
                extra[name] = stub
        path = Path(zoo_dir).resolve() / "examples" / "yolov8_seg" / "python" / "yolov8_seg.py"
        mod = _load(path, "zoo_yolov8_seg_py", extra)

        def masks(coefs, proto, boxes, mod=mod):
            # yolov8_seg.py post_process's masks lines, with its own functions
            ph, pw = proto.shape[-2:]
            m = mod.sigmoid(np.matmul(coefs, proto.reshape(coefs.shape[-1], -1)))
            m = m.reshape(-1, ph, pw)
            m = mod.F.interpolate(mod.torch.tensor(m)[None], mod.torch.Size([640, 640]),
                                  mode="bilinear", align_corners=False)[0]
            return mod._crop_mask(m, mod.torch.tensor(boxes)).numpy() > 0.5

        return mod.post_process, masks, (
            "the zoo's Python (examples/yolov8_seg/python/yolov8_seg.py loaded from the "
            "checkout: post_process as it is; the masks alone: its post_process's masks "
            "lines with its sigmoid, F.interpolate and _crop_mask; float32, torch 1 "
            "thread" + how + ")")
    if torch is not None:
        import torch.nn.functional as F

        def masks(coefs, proto, boxes):
            # the zoo's path: float32 matmul with the whole proto, sigmoid, torch's
            # bilinear upsampling to 640x640 (align_corners=False), zero outside each box
            ph, pw = proto.shape[-2:]
            m = np.matmul(coefs, proto.reshape(coefs.shape[-1], -1))
            m = (1 / (1 + np.exp(-m))).reshape(-1, ph, pw)
            up = F.interpolate(torch.tensor(m)[None], (640, 640), mode="bilinear",
                               align_corners=False)[0]
            b = torch.tensor(boxes)[:, :, None]
            x1, y1, x2, y2 = torch.chunk(b, 4, 1)
            r = torch.arange(640, dtype=b.dtype)[None, None, :]
            c = torch.arange(640, dtype=b.dtype)[None, :, None]
            return (up * ((r >= x1) * (r < x2) * (c >= y1) * (c < y2))).numpy() > 0.5

        return None, masks, ("a stand-in following the zoo's Python masks path (float32, "
                             "torch upsampling and crop, 1 thread; bench/zoo_seg.py); pass "
                             "--zoo DIR for the zoo's own")
    return None, None, "torch is not installed"


def detect(zoo_dir: Optional[str]) -> Tuple[Callable, Any, str]:
    """(post_process, COCO_test_helper class or None, what ran): the zoo's yolov8.py and its
    py_utils letterbox helper, else the stand-in of bench/zoo_python.py."""
    if str(HERE) not in sys.path:
        sys.path.insert(0, str(HERE))
    import decode_cost

    post, what = decode_cost.zoo_python(zoo_dir)
    helper = None
    if zoo_dir:
        path = Path(zoo_dir).resolve() / "py_utils" / "coco_utils.py"
        helper = _load(path, "zoo_py_utils_coco_utils").COCO_test_helper
        what += "; letterbox and get_real_box: its py_utils/coco_utils.py COCO_test_helper"
    return post, helper, what
