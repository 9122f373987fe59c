"""Track ids across frames: :class:`Tracker` (ByteTrack, its state in C) and what it returns,
:class:`Tracks`.  The guide: docs/guide/track.md."""

from __future__ import annotations

import math
from typing import Optional

import numpy as np

from rknnx import _kernels
from rknnx.vision.detections import Detections

__all__ = ["Tracker", "Tracks"]

_STATES = {"xyah": 0, "xywh": 1}
_F32 = np.dtype(np.float32)
_I32 = np.dtype(np.int32)
_NO_IDS = np.zeros(0, np.int64)
_NO_IDS.flags.writeable = False

# The fixed parts of the algorithm (the class docstring says why each differs from the
# paper's code, ByteTrack's byte_tracker.py, where it does):
_MATCH_LOW = 0.5           # the second association's threshold (the paper's)
_MATCH_UNCONFIRMED = 0.9   # the unconfirmed tracks' (the paper's 0.7)
_DUP_IOU = 1.0             # duplicates never removed (the paper's IoU > 0.85)
_SECOND_LOST = True        # lost tracks in the second association (the paper: no)
_FUSE_SCORE = True         # cost 1 - IoU x score in the high associations (the paper's)


class Tracks(Detections):
    """The confirmed tracks matched in one frame (what :meth:`Tracker.update` returns), in
    ascending id order: a :class:`Detections` with ids.

    Attributes
    ----------
    boxes : numpy.ndarray
        float32 [N, 4]: the Kalman filter's box of each track after this frame's update
        (as ByteTrack outputs its tracks): the detection's box, smoothed.  The
        detection's own box is ``detections.boxes[tracks.detection]``.
    scores, classes : numpy.ndarray
        The score (float32) and class (int32) of the detection each track took.
    ids : numpy.ndarray
        int64 [N], each >= 1: the track's id, from a counter of its tracker (1, 2, ... in
        the order tracks are confirmed; :meth:`Tracker.reset` starts it again).
    detection : numpy.ndarray
        int64 [N]: the row of the frame's :class:`Detections` each track took.
    masks, keypoints : numpy.ndarray or None
        The detection's, when the detections had them (rows ``detection``).
    started : numpy.ndarray
        int64: the ids confirmed in this frame, ascending (they are in ``ids`` too).
    ended : numpy.ndarray
        int64: the ids removed in this frame (lost for longer than the tracker's buffer,
        or duplicates of another track), ascending; none of them is in ``ids``.
    names, letterbox
        The detections'.

    Indexing and iteration give :class:`Tracks` of those rows (``ids`` and ``detection``
    follow); ``started`` and ``ended`` stay the frame's.

    .. versionadded:: 0.1.0
    """

    __slots__ = ("ids", "detection", "started", "ended")

    def __init__(self, boxes, scores, classes, ids, detection, started=(), ended=(),
                 masks=None, keypoints=None, names=None):
        super().__init__(boxes, scores, classes, masks, keypoints, names)
        n = len(self)
        ids = np.asarray(ids).reshape(-1)
        detection = np.asarray(detection).reshape(-1)
        if ids.shape[0] != n or detection.shape[0] != n:
            raise ValueError(f"Tracks: {n} boxes, {ids.shape[0]} ids and "
                             f"{detection.shape[0]} detection rows; one each per box")
        for name, a in (("ids", ids), ("detection", detection)):
            if a.size and a.dtype.kind not in "iu":
                raise TypeError(f"Tracks: {name} must be integers; got {a.dtype}")
        self.ids = ids.astype(np.int64, copy=False)
        self.detection = detection.astype(np.int64, copy=False)
        self.started = np.asarray(started, np.int64).reshape(-1)
        self.ended = np.asarray(ended, np.int64).reshape(-1)

    @classmethod
    def empty(cls, names=None) -> "Tracks":
        """No tracks."""
        return cls(np.zeros((0, 4), np.float32), np.zeros(0, np.float32),
                   np.zeros(0, np.int32), _NO_IDS, _NO_IDS, names=names)

    def _take(self, key) -> "Tracks":
        d = Detections._take(self, key)
        t = Tracks.__new__(Tracks)
        for name in Detections.__slots__:
            setattr(t, name, getattr(d, name))
        t.ids = self.ids[key]
        t.detection = self.detection[key]
        t.started = self.started
        t.ended = self.ended
        return t

    def to_supervision(self):
        """The tracks as a ``supervision.Detections`` with ``tracker_id``, for its
        annotators, line and zone counters.

        Masks go with it, mapped to the frame when the boxes are the frame's (a
        :class:`~rknnx.vision.Detector`'s detections carry their letterbox); class names,
        when known, go in ``data["class_name"]``.

        Raises
        ------
        ImportError
            supervision is not installed (``pip install "rknnx[supervision]"``).
        """
        try:
            import supervision as sv
        except ImportError as e:
            raise ImportError("Tracks.to_supervision needs supervision: "
                              "pip install \"rknnx[supervision]\"") from e
        mask = self.masks
        if mask is not None and self.letterbox is not None:
            mask = self.letterbox.mask_to_frame(mask) if len(self) else \
                np.zeros((0,) + tuple(self.letterbox.frame_size[::-1]), bool)
        data = {}
        if self.names is not None:
            data["class_name"] = np.array(self.labels, dtype=object)
        return sv.Detections(xyxy=self.boxes.astype(np.float32), mask=mask,
                             confidence=self.scores.copy(), class_id=self.classes.copy(),
                             tracker_id=self.ids.copy(), data=data)

    def __repr__(self) -> str:
        return (f"<Tracks: {len(self)} tracks, ids {self.ids.tolist()}, "
                f"{self.started.size} started, {self.ended.size} ended>")


def _unit(name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"Tracker: {name} must be a number in [0, 1], got "
                        f"{type(value).__name__}")
    v = float(value)
    if not 0.0 <= v <= 1.0:
        raise ValueError(f"Tracker: {name} must be in [0, 1], got {value!r}")
    return v


def _count(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"Tracker: {name} must be an int >= 0, got {type(value).__name__}")
    if not 0 <= value <= _INT_MAX:
        raise ValueError(f"Tracker: {name} must be an int in [0, {_INT_MAX}], got {value}")
    return int(value)


#: the largest count the C state holds (an int32)
_INT_MAX = 2**31 - 1
#: the highest frame rate taken (a high-speed camera's; beyond it the buffer in frames and
#: the prediction steps leave the filter's float range)
_FPS_MAX = 10000.0


class Tracker:
    """ByteTrack (Zhang et al., ECCV 2022): a track id for each object across frames, from
    the boxes of a detector.  The state (a Kalman filter per track, the id counter) lives
    in C; an update releases the GIL, and two threads updating one tracker are serialized.
    One tracker per stream: :meth:`copy` makes another with the same parameters.

    A frame goes as the paper's algorithm: every track's box is predicted by a
    constant-velocity Kalman filter; the confirmed tracks are matched with the boxes
    scoring >= ``high`` (cost ``1 - IoU x score``, an optimal assignment, no pair above
    ``match``); the tracks left with the boxes scoring in [``low``, ``high``) (cost
    ``1 - IoU``, at most 0.5); the unconfirmed tracks with the high boxes left (at most
    0.9); the high boxes still left that score >= ``new`` start tracks.  A track is
    confirmed (and given the next id) once matched ``min_hits`` frames in a row after its
    birth; a confirmed track unmatched is lost, and ends when it has not been seen for
    more than ``buffer * fps / 30`` frames.

    Where this differs from the paper's code, and why (measured on synthetic scenes
    against roboflow ``trackers``' ByteTrack; the figures are in docs/guide/track.md):

    - the second association (low boxes) takes the lost tracks too, not only those
      tracked in the previous frame: an object seen only at low scores for a while after
      one miss keeps its id (with the paper's rule, 0.015 IDF1 and 0.037 MOTA below
      ``trackers`` on such scenes);
    - an unconfirmed track matches at a cost up to 0.9 (IoU x score >= 0.1), not 0.7: a
      fast or small object's second box overlaps its first too little for 0.7, so it was
      never confirmed (0.014 IDF1 and 0.025 MOTA below ``trackers`` where objects are
      born all the time);
    - no removal of "duplicates" (the paper's code ends the younger of a tracked and a
      lost track overlapping at IoU > 0.85): where two objects of one size cross and one
      is hidden, that ends the hidden one's track, or the visible one's when both were
      born in the same frame (0.14 IDF1 below ``trackers`` on such crossings);
    - ids are given when a track is confirmed, not at its birth: they count 1, 2, ...
      with no gaps for tracks that never were confirmed;
    - a box scoring exactly ``high`` is high (the paper's code drops it from both
      associations), and the low boxes start at ``low`` inclusive;
    - IoU is the continuous one (no +1 pixel), and a box without area is never tracked.

    Parameters
    ----------
    high : float
        Boxes scoring at least this go to the first association (the paper's 0.5).
    low : float
        Boxes scoring below it are ignored; those in [low, high) only keep tracks alive
        (0.1).  :class:`~rknnx.vision.Streams` decodes down to it.
    new : float
        An unmatched high box starts a track if it scores at least this (0.6).
    match : float
        The highest cost ``1 - IoU x score`` of a match in the first association (0.8).
    buffer : int
        Frames (at 30 fps) a lost track is kept (30).
    fps : float
        The stream's frame rate: the buffer is ``buffer * fps / 30`` frames, and
        ``update(dt=)`` steps the filter by ``dt * fps`` frames.
    min_hits : int
        Frames in a row a new track must be matched after its birth to be confirmed
        (1, the paper's); 0 confirms at birth.  Tracks born on the tracker's first frame
        are confirmed at once (as the paper's).
    state : {"xyah", "xywh"}
        The Kalman filter's box: centre, aspect ratio and height (the paper's), or centre,
        width and height (BoT-SORT's; for boxes whose shape changes).
    per_class : bool
        Match a track only with boxes of its own class (the class of the box that started
        it); by default a track may take a box of any class and reports that class.

    Raises
    ------
    TypeError, ValueError
        A parameter of the wrong type or out of range (the message names it).

    Examples
    --------
    >>> import numpy as np
    >>> from rknnx.vision import Detections, Tracker
    >>> tracker = Tracker()
    >>> for x in (10, 14, 18):
    ...     tracks = tracker.update(Detections([[x, 10, x + 40, 90]], [0.9], [0]))
    >>> tracks.ids.tolist(), tracks.detection.tolist()
    ([1], [0])

    .. versionadded:: 0.1.0
    """

    __slots__ = ("_high", "_low", "_new", "_match", "_buffer", "_fps", "_min_hits", "_state",
                 "_per_class", "_c", "__weakref__")

    def __init__(self, *, high: float = 0.5, low: float = 0.1, new: float = 0.6,
                 match: float = 0.8, buffer: int = 30, fps: float = 30,
                 min_hits: int = 1, state: str = "xyah", per_class: bool = False):
        self._high = _unit("high", high)
        self._low = _unit("low", low)
        self._new = _unit("new", new)
        self._match = _unit("match", match)
        if self._low > self._high:
            raise ValueError(f"Tracker: low must be <= high, got low={low!r} high={high!r}")
        self._buffer = _count("buffer", buffer)
        if isinstance(fps, bool) or not isinstance(fps, (int, float, np.integer, np.floating)):
            raise TypeError(f"Tracker: fps must be a number > 0, got {type(fps).__name__}")
        if not (math.isfinite(fps) and 0 < fps <= _FPS_MAX):
            raise ValueError(f"Tracker: fps must be a number in (0, {_FPS_MAX:g}], got "
                             f"{fps!r}")
        self._fps = float(fps)
        self._min_hits = _count("min_hits", min_hits)
        if not isinstance(state, str) or state not in _STATES:
            raise ValueError(f"Tracker: state must be 'xyah' or 'xywh', got {state!r}")
        self._state = state
        if not isinstance(per_class, (bool, np.bool_)):
            raise TypeError(f"Tracker: per_class must be a bool, got {type(per_class).__name__}")
        self._per_class = bool(per_class)
        self._c = _kernels.TrackState(
            self._high, self._low, self._new, self._match, _MATCH_LOW, _MATCH_UNCONFIRMED,
            self._buffer * self._fps / 30.0, _DUP_IOU, self._min_hits, _STATES[state],
            self._per_class, _FUSE_SCORE, _SECOND_LOST)

    high = property(lambda self: self._high, doc="First association: boxes scoring >= high.")
    low = property(lambda self: self._low, doc="Boxes scoring below it are ignored.")
    new = property(lambda self: self._new, doc="A track starts from a box scoring >= new.")
    match = property(lambda self: self._match, doc="The first association's highest cost.")
    buffer = property(lambda self: self._buffer, doc="Frames (at 30 fps) a lost track is kept.")
    fps = property(lambda self: self._fps, doc="The stream's frame rate.")
    min_hits = property(lambda self: self._min_hits, doc="Matches after birth to confirm.")
    state = property(lambda self: self._state, doc="The Kalman filter's box: xyah or xywh.")
    per_class = property(lambda self: self._per_class, doc="Tracks keep to their class.")

    def update(self, detections: Detections, *, dt: Optional[float] = None) -> Tracks:
        """One frame's detections in, the confirmed tracks matched in it out.

        Parameters
        ----------
        detections : Detections
            The frame's boxes (any score: those below ``low`` are ignored).
        dt : float, optional
            Seconds since the previous update: the filter predicts ``dt * fps`` frames
            ahead (a live stream that dropped frames, or ``detect_fps`` below the
            stream's), and a lost track ages as many (a gap longer than the buffer counts
            as the buffer + 1 frame: every track it leaves unmatched ends).  By default one
            frame.

        Returns
        -------
        Tracks
            In ascending id order; ``tracks.detection`` gives each one's row of
            ``detections`` (its masks and keypoints follow it).

        Raises
        ------
        TypeError
            ``detections`` is not a :class:`Detections`, or ``dt`` not a number.
        ValueError
            ``dt`` < 0 or not finite, or a box or score that is not finite (the
            tracker's state is then untouched).
        """
        if not isinstance(detections, Detections):
            raise TypeError(f"Tracker.update: detections must be rknnx.vision.Detections, "
                            f"got {type(detections).__name__}")
        if dt is None:
            step = 1.0
        else:
            if isinstance(dt, bool) or not isinstance(dt, (int, float, np.integer, np.floating)):
                raise TypeError(f"Tracker.update: dt must be a number of seconds, got "
                                f"{type(dt).__name__}")
            if not (math.isfinite(dt) and dt >= 0):
                raise ValueError(f"Tracker.update: dt must be a finite number of seconds "
                                 f">= 0, got {dt!r}")
            # a gap longer than a lost track is kept predicts as one frame past it: every
            # track left unmatched then ends, as after the real gap, and the filter's
            # covariance stays finite (a step of 1e200 frames made NaN boxes)
            step = min(float(dt) * self._fps, self._buffer * self._fps / 30.0 + 1.0)
        boxes, scores, classes = detections.boxes, detections.scores, detections.classes
        if not (boxes.flags.c_contiguous and boxes.dtype == _F32):
            boxes = np.ascontiguousarray(boxes, _F32)
        if not (scores.flags.c_contiguous and scores.dtype == _F32):
            scores = np.ascontiguousarray(scores, _F32)
        if not (classes.flags.c_contiguous and classes.dtype == _I32):
            classes = np.ascontiguousarray(classes, _I32)
        try:
            b, s, c, ids, det, started, ended = self._c.update(boxes, scores, classes, step)
        except ValueError:
            raise ValueError("Tracker.update: the detections hold a box or score that is "
                             "not finite (NaN or inf)") from None
        t = Tracks.__new__(Tracks)
        t.boxes = b
        t.scores = s
        t.classes = c
        t.ids = ids
        t.detection = det
        t.started = started
        t.ended = ended
        t.masks = None if detections.masks is None else detections.masks[det]
        t.keypoints = None if detections.keypoints is None else detections.keypoints[det]
        t.names = detections.names
        t.letterbox = detections.letterbox
        return t

    def reset(self) -> None:
        """Forget every track (a new video, a stream that reconnected): ids start from 1
        again and the first frame's tracks are confirmed at once."""
        self._c.reset()

    def copy(self) -> "Tracker":
        """A new tracker with these parameters and no tracks (one per stream)."""
        return Tracker(high=self._high, low=self._low, new=self._new, match=self._match,
                       buffer=self._buffer, fps=self._fps, min_hits=self._min_hits,
                       state=self._state, per_class=self._per_class)

    def __reduce__(self):
        # the state is C's: a pickled or copy.copy'd tracker would share it or lose it
        raise TypeError("Tracker: a tracker's state cannot be pickled or copied; "
                        "Tracker.copy() gives a new one with the same parameters")

    @property
    def live(self) -> int:
        """Tracks the tracker holds: tracked, lost (within the buffer) and unconfirmed."""
        return self._c.live

    def __repr__(self) -> str:
        return (f"Tracker(high={self._high}, low={self._low}, new={self._new}, "
                f"match={self._match}, buffer={self._buffer}, fps={self._fps:g}, "
                f"min_hits={self._min_hits}, state={self._state!r}, "
                f"per_class={self._per_class})")
