"""rknnx.vision: from a camera frame to boxes around the NPU: letterbox into NPU memory,
YOLO decoders reading the NPU's own outputs, the Detector that runs the three, the
Tracker that gives the boxes ids across frames, and Streams that runs many videos through
one model with track ids.

The decoders: docs/guide/decode.md; the detector: docs/guide/detect.md; the tracker:
docs/guide/track.md; many videos with track ids (Streams): docs/guide/streams.md.
"""

from rknnx.vision.decode import DecodeWarning, FAMILIES, ZOO_ANCHORS, decode, infer_family
from rknnx.vision.detections import Detections
from rknnx.vision.detector import Detector
from rknnx.vision.letterbox import Letterbox, letterbox
from rknnx.vision.streams import Record, Streams, StreamStats
from rknnx.vision.tracker import Tracker, Tracks

__all__ = ["letterbox", "Letterbox", "decode", "infer_family", "Detections", "Detector",
           "FAMILIES", "ZOO_ANCHORS", "DecodeWarning", "Tracker", "Tracks", "Streams",
           "Record", "StreamStats"]
