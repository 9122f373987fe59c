"""rknnx.vision: from a camera frame to boxes around the NPU: letterbox into NPU memory,
YOLO decoders reading the NPU's own outputs.

docs/guide/decode.md is the guide.
"""

from rknnx.vision.decode import decode, infer_family, FAMILIES, ZOO_ANCHORS, DecodeWarning
from rknnx.vision.detections import Detections
from rknnx.vision.detector import Detector
from rknnx.vision.letterbox import Letterbox, letterbox

__all__ = ["letterbox", "Letterbox", "decode", "infer_family", "Detections", "Detector", "FAMILIES",
           "ZOO_ANCHORS", "DecodeWarning"]
