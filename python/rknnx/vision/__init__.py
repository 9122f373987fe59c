"""rknnx.vision: from a camera frame to boxes around the NPU.

The decoders: docs/guide/decode.md.
"""

from rknnx.vision.decode import DecodeWarning, FAMILIES, ZOO_ANCHORS, decode, infer_family
from rknnx.vision.detections import Detections
from rknnx.vision.letterbox import Letterbox, letterbox

__all__ = ["letterbox", "Letterbox", "decode", "infer_family", "Detections", "FAMILIES",
           "ZOO_ANCHORS", "DecodeWarning"]
