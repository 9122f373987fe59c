"""What a decoder returns: :class:`Detections`."""

from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

__all__ = ["Detections"]


class Detections:
    """Boxes found in one frame, best score first.

    Attributes
    ----------
    boxes : numpy.ndarray
        float32 [N, 4]: x1, y1, x2, y2 in the model's input pixels (not clipped: a box may
        reach past the input), or in the frame's pixels once mapped back.
    scores : numpy.ndarray
        float32 [N].
    classes : numpy.ndarray
        int32 [N]: class indices.
    masks : numpy.ndarray or None
        bool [N, H, W] (segmentation models): the input's pixels, zero outside the box.
    keypoints : numpy.ndarray or None
        float32 [N, K, 3] (pose models): x, y in input pixels, visibility.
    names : sequence of str or None
        The class names, when known (``labels`` looks them up).
    letterbox : rknnx.vision.Letterbox or None
        Where the frame went in the model's input, when the boxes were mapped back to the
        frame (:class:`~rknnx.vision.Detector`): ``letterbox.mask_to_frame(masks[i])``.

    ``len()`` counts the boxes; indexing by an int, a slice, an integer array or a bool
    array gives a :class:`Detections` of those boxes (an int: of one).
    """

    __slots__ = ("boxes", "scores", "classes", "masks", "keypoints", "names", "letterbox")

    def __init__(self, boxes, scores, classes, masks=None, keypoints=None,
                 names: Optional[Sequence[str]] = None):
        boxes = np.asarray(boxes, np.float32).reshape(-1, 4) if np.size(boxes) or \
            np.ndim(boxes) else np.zeros((0, 4), np.float32)
        scores = np.asarray(scores, np.float32).reshape(-1)
        classes = np.asarray(classes).reshape(-1)
        n = boxes.shape[0]
        if scores.shape[0] != n or classes.shape[0] != n:
            raise ValueError(f"Detections: {n} boxes, {scores.shape[0]} scores and "
                             f"{classes.shape[0]} classes; one each per box")
        if classes.dtype.kind not in "iu" and n:
            raise TypeError(f"Detections: classes must be integers; got {classes.dtype}")
        self.boxes = boxes
        self.scores = scores
        self.classes = classes.astype(np.int32, copy=False)
        if masks is not None:
            masks = np.asarray(masks, bool)
            if masks.ndim != 3 or masks.shape[0] != n:
                raise ValueError(f"Detections: masks must be [N, H, W] with N = {n}; got "
                                 f"{masks.shape}")
        if keypoints is not None:
            keypoints = np.asarray(keypoints, np.float32)
            if keypoints.ndim != 3 or keypoints.shape[0] != n or keypoints.shape[2] != 3:
                raise ValueError(f"Detections: keypoints must be [N, K, 3] with N = {n}; "
                                 f"got {keypoints.shape}")
        self.masks = masks
        self.keypoints = keypoints
        self.names = tuple(names) if names is not None else None
        self.letterbox = None

    @classmethod
    def _made(cls, boxes, scores, classes, names=None) -> "Detections":
        """The decoder's own result: float32 [n, 4] boxes, float32 scores and int32
        classes as the C wrote them (the checks of __init__ hold by construction)."""
        d = cls.__new__(cls)
        d.boxes, d.scores, d.classes = boxes, scores, classes
        d.masks = d.keypoints = d.letterbox = None
        d.names = tuple(names) if names is not None else None
        return d

    @classmethod
    def empty(cls, names=None) -> "Detections":
        """No boxes."""
        return cls(np.zeros((0, 4), np.float32), np.zeros(0, np.float32),
                   np.zeros(0, np.int32), names=names)

    def __len__(self) -> int:
        return int(self.boxes.shape[0])

    def __getitem__(self, key) -> "Detections":
        return self._take(self._key(key))

    def _key(self, key):
        """``key`` checked against the boxes and made an index numpy takes the same rows
        with from every array (an int becomes a slice of one)."""
        n = len(self)
        if isinstance(key, (bool, np.bool_)):
            raise TypeError("Detections: index with an int, a slice or an array, not a bool")
        if isinstance(key, (int, np.integer)):
            i = int(key)
            if not -n <= i < n:
                raise IndexError(f"Detections: index {i} out of range for {n} boxes")
            key = slice(i % n, i % n + 1)
        elif not isinstance(key, slice):
            key = np.asarray(key)
            if key.dtype == bool:
                if key.shape != (n,):
                    raise IndexError(f"Detections: a bool index needs {n} entries; got "
                                     f"shape {key.shape}")
            elif key.dtype.kind in "iu" and key.ndim == 1:
                if key.size and (key.max() >= n or key.min() < -n):
                    raise IndexError(f"Detections: an index is out of range for {n} boxes")
            elif key.size == 0 and key.ndim == 1:
                key = key.astype(np.intp)
            else:
                raise IndexError(f"Detections: index with an int, a slice, an integer array "
                                 f"or a bool array; got {key.dtype} of shape {key.shape}")
        return key

    def _take(self, key) -> "Detections":
        """The rows ``key`` (from :meth:`_key`) as a :class:`Detections`."""
        d = Detections(self.boxes[key], self.scores[key], self.classes[key],
                       None if self.masks is None else self.masks[key],
                       None if self.keypoints is None else self.keypoints[key],
                       self.names)
        d.letterbox = self.letterbox
        return d

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]

    @property
    def labels(self) -> list:
        """The class name of each box (its index as a string where no name is known)."""
        names = self.names or ()
        return [names[c] if 0 <= c < len(names) else str(int(c)) for c in self.classes]

    def __repr__(self) -> str:
        extra = ""
        if self.masks is not None:
            extra += f", masks {self.masks.shape[1]}x{self.masks.shape[2]}"
        if self.keypoints is not None:
            extra += f", {self.keypoints.shape[1]} keypoints"
        return f"<Detections: {len(self)} boxes{extra}>"
