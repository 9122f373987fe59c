"""rknnx.vision: from a camera frame to boxes around the NPU (decoders of YOLO outputs).

docs/guide/decode.md is the guide.
"""

from rknnx.vision.decode import decode, infer_family, FAMILIES, ZOO_ANCHORS, DecodeWarning
from rknnx.vision.detections import Detections

__all__ = ["decode", "infer_family", "Detections", "FAMILIES", "ZOO_ANCHORS", "DecodeWarning"]
