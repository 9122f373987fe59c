"""rknnx.vision: from a camera frame to boxes around the NPU.

docs/vision.md is the guide.
"""

from rknnx.vision.letterbox import Letterbox, letterbox

__all__ = ["letterbox", "Letterbox"]
