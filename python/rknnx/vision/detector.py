"""From a camera frame to boxes: :class:`Detector`.

One frame goes ``letterbox`` (straight into a zero-copy session's input memory) -> the NPU
-> ``decode`` (from the session's output memory, in place: the NPU's native NC1HWC2 where
the chip has it, so the runtime converts nothing) -> boxes mapped back to the frame.  With
``workers=N`` there are N sessions (pinned one per NPU core on chips with several) and N
threads, each doing the whole frame: letterbox and decode run in the worker threads, with
the GIL released, while the other workers' NPUs run.  docs/guide/detect.md is the guide.
"""

from __future__ import annotations

import queue
import threading
import time
from collections import deque
from concurrent.futures import CancelledError, Future, ThreadPoolExecutor
from typing import Iterable, Iterator, Optional, Sequence

import numpy as np

from rknnx import _guard
from rknnx._lifetime import Closable
from rknnx.vision.decode import FAMILIES, _check_parameters, decode, infer_family
from rknnx.vision.detections import Detections
from rknnx.vision.letterbox import channel_values, geometry, letterbox, pad_values

__all__ = ["Detector", "STAGES"]

#: the stages of one frame, in :meth:`Detector.stage_times`
STAGES = ("letterbox", "npu", "decode")
_U8 = np.dtype(np.uint8)


def _count(value, name: str) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) \
            or value < 1:
        raise ValueError(f"Detector: {name} must be an int >= 1; got {value!r}")
    return int(value)


def _normalization(model):
    """(mean, std) of input 0 where the model's file says them (a vendor file read with
    rknnx.modelfile), else (None, None)."""
    path = getattr(model, "path", None)
    if path is None:
        return None, None
    from rknnx import modelfile

    try:
        if not modelfile.is_vendor_file(path):
            return None, None
        t = modelfile.read(path).file_inputs[0]
    except Exception:                    # an unreadable file: the caller refuses clearly
        return None, None
    if t.mean is None or t.std is None:
        return None, None
    return t.mean, t.std


class Detector(Closable):
    """A YOLO model from camera frames to boxes in the frame's pixels.

    Parameters
    ----------
    model : rknnx.Model, or a path / bytes of a .rknn file
        The model (a path or bytes: opened here, and closed with the detector).  Its
        input 0 is the image (NHWC or NCHW, 3 channels); its outputs are one of
        :data:`rknnx.vision.FAMILIES`' signatures.
    family : str or None
        ``"yolov8"``, ``"yolov8-seg"``, ``"yolov8-pose"``, ``"yolov5"``, ``"yolox"``
        (``"yolo11"``: ``"yolov8"``); None: inferred from the outputs (ValueError naming
        the candidates when several fit).
    conf, iou, max_det, classes :
        :func:`rknnx.vision.decode`'s rule: keep score >= conf, NMS suppresses IoU > iou,
        at most max_det boxes, only these classes.
    swap_rb : bool
        Frames are BGR (OpenCV's order) and the model takes RGB (the model zoo's): swap
        (default).  False: the frame's channel order goes in as it is.
    pad_value : int or 3 ints
        The letterbox's border (0, as the model zoo; 114 as Ultralytics).
    workers : int
        Sessions and threads: 1 runs each frame in the calling thread; N > 1 runs
        :meth:`map` and :meth:`submit` on N worker threads, one session each, pinned one
        per NPU core on chips with several (RK3588: 3).
    names : sequence of str, optional
        Class names, kept in the :class:`Detections`.
    mean, std : float or 3 floats, optional
        Input 0's normalization, needed only where the model takes its input as the NPU
        does (no uint8 conversion by the runtime) and its file does not say it.
    anchors : optional
        yolov5's anchors (the zoo's by default).

    Attributes
    ----------
    model : rknnx.Model
    family : str
    input_size : (width, height)
    sessions : tuple of ZeroCopySession
        The sessions (one per worker).
    output_kind : str
        What the sessions' output views hold: ``"native"`` (the NPU's own layout: no
        conversion by the runtime) or ``"raw"`` (the model's type and layout).

    Examples
    --------
    >>> with rknnx.Model("yolov8n.rknn") as model, \\
    ...         Detector(model, "yolov8", workers=3) as det:      # doctest: +SKIP
    ...     for dets in det.map(camera_frames()):
    ...         print(dets.boxes, dets.labels)

    Raises
    ------
    ValueError
        An unknown or unfitting family, bad parameters, a closed model, an image input
        that is not 3 channels, an input the runtime does not convert from uint8 whose
        normalization is not known.
    """

    _kind = "Detector"
    _close_begun = False                 # a close() is taking the sessions back

    def __init__(self, model, family: Optional[str] = None, *, conf: float = 0.25,
                 iou: float = 0.45, max_det: int = 300,
                 classes: Optional[Sequence[int]] = None, swap_rb: bool = True,
                 pad_value=0, workers: int = 1, names: Optional[Sequence[str]] = None,
                 mean=None, std=None, anchors=None):
        from rknnx.model import Model
        from rknnx.platforms import npu_cores

        self._closed = True                  # until everything is made
        self._made_in = _guard.pid
        # the threads running a frame of this detector (a thread-local mark): a custom op
        # callback or signal handler inside a frame that calls back into the detector is
        # refused instead of waiting for the session its own thread holds
        self._in_frame = _guard.Role()
        # one close at a time (a second waits for the first), refused inside a close
        self._closing = _guard.Lock("Detector")
        self._sessions = []
        # sessions whose input 0 is bound to a frame's dma-buf (_detect_bound), made when
        # the first such frame comes, at most one per worker
        self._bound = []
        self._free_bound: "queue.SimpleQueue" = queue.SimpleQueue()
        self._bound_lock = threading.Lock()
        self._pool = None
        self._own_model = None
        workers = _count(workers, "workers")
        if not (swap_rb is True or swap_rb is False):
            raise TypeError(f"Detector: swap_rb is True or False; got {swap_rb!r}")
        # the letterbox's parameters, refused here rather than at every frame
        pad_value = pad_values(pad_value, "Detector")
        for name, v in (("mean", mean), ("std", std)):
            if v is not None:
                channel_values(v, name, "Detector")
        if std is not None and 0 in channel_values(std, "std", "Detector"):
            raise ValueError(f"Detector: std must be non-zero; got {std!r}")
        # conf, iou and max_det checked before any work (decode's own rule)
        _check_parameters(conf, iou, max_det, 0, False, where="Detector")
        if not isinstance(model, Model):
            model = self._own_model = Model(model)
        try:
            if model.closed:
                raise ValueError("Detector on closed Model")
            self.model = model
            self.family = self._family_of(model, family)
            ins = model.inputs
            if not ins or len(ins[0].shape) != 4:
                raise ValueError(f"Detector: input 0 of the model is not an image (4-D); "
                                 f"got {[tuple(t.shape) for t in ins]}")
            n, h, w, c = ins[0].shape_in("NHWC") if ins[0].layout in ("NHWC", "NCHW") \
                else ins[0].shape
            if c != 3 or n != 1:
                raise ValueError(f"Detector: input 0 is a batch of one 3-channel image; the "
                                 f"model's is {tuple(ins[0].shape)} ({ins[0].layout})")
            self.input_size = (int(w), int(h))
            self._decode_kw = dict(conf=conf, iou=iou, max_det=max_det, classes=classes,
                                   anchors=anchors, names=names)
            # the decoder's parameters checked now, on the first session, not at a frame
            self._lb_kw = dict(swap_rb=swap_rb, pad_value=pad_value)
            self.output_kind = "native" if all(t.native is not None for t in model.outputs) \
                else "raw"
            self._input_kind = "logical"
            if mean is not None or std is not None:
                if mean is None or std is None:
                    raise ValueError("Detector: give both mean= and std= (or neither)")
            self._norm = (mean, std) if mean is not None else None
            self._sessions = [self._session() for _ in range(workers)]
            cores = npu_cores(model.chip)
            if workers > 1 and cores > 1 and model.supports("rknn_set_core_mask"):
                from rknnx.pool import _ONE_CORE

                for k, s in enumerate(self._sessions):
                    s.set_core_mask(_ONE_CORE[k % cores])
            # a first decode of the (unrun) outputs checks family and the other
            # parameters now (conf 1: the unrun memory's candidates are few)
            decode(self.family, self._sessions[0], **{**self._decode_kw, "conf": 1.0})
            self._layouts = [a.layout if len(a.dims) == 4 else None
                             for a in self._sessions[0].output_attrs]
            self._bind_ok = self._input_is_packed_pixels(self._sessions[0])
        except BaseException:
            self._release()
            raise
        self._free: "queue.SimpleQueue" = queue.SimpleQueue()
        for s in self._sessions:
            self._free.put(s)
        self._times = deque(maxlen=4096)
        self._bound_frames = 0
        if workers > 1:
            self._pool = ThreadPoolExecutor(workers, thread_name_prefix="rknnx-detector")
        self._closed = False

    # -- making ---------------------------------------------------------------------------
    @staticmethod
    def _family_of(model, family) -> str:
        if family is None:
            cands = infer_family(model.outputs)
            if len(cands) != 1:
                raise ValueError(
                    f"Detector: family not given and the model's outputs fit "
                    f"{'none of ' + str(FAMILIES) if not cands else ' and '.join(cands)}: "
                    f"pass family=")
            return cands[0]
        if not isinstance(family, str) or family.lower() not in FAMILIES:
            raise ValueError(f"Detector: family must be one of {FAMILIES}; got {family!r}")
        return family.lower()

    def _session(self):
        s = self.model.zero_copy(outputs=self.output_kind, inputs=self._input_kind)
        try:
            view = s.inputs[0]
            dtype = view.dtype
            del view
            if dtype == _U8 or self._input_kind == "native":
                return s
        except BaseException:
            s.close()
            raise
        # the runtime does not convert uint8 pixels for this input: write the NPU's own
        # codes, normalized with the model's mean/std
        s.close()
        if self._norm is None:
            mean, std = _normalization(self.model)
            if mean is None:
                raise ValueError(
                    f"Detector: input 0 of the model takes {dtype} (the runtime does not "
                    f"convert uint8 pixels for it), and its normalization is not known: "
                    f"pass mean= and std= (the model zoo's YOLO models: mean=0, std=255)")
            self._norm = (mean, std)
        self._input_kind = "native"
        s = self.model.zero_copy(outputs=self.output_kind, inputs="native")
        view = s.inputs[0]
        native = view.dtype
        del view
        if native not in (_U8, np.dtype(np.int8), np.dtype(np.float16), np.dtype(np.float32)):
            s.close()
            raise ValueError(f"Detector: input 0 of the model takes {native} as the NPU "
                             f"does (no uint8 conversion by the runtime); the detector "
                             f"writes uint8 pixels, int8 codes or float16 / float32 "
                             f"normalized pixels only")
        return s

    def _input_is_packed_pixels(self, s) -> bool:
        """Whether input 0 takes the letterbox's bytes as they are in a frame: uint8 pixels
        converted by the runtime, (1, H, W, 3) packed rows with nothing between them."""
        if self._input_kind != "logical":
            return False
        view = s.inputs[0]
        w, h = self.input_size
        ok = (view.dtype == _U8 and view.shape == (1, h, w, 3) and
              view.flags.c_contiguous and int(s.input_attrs[0].alloc_size) == view.nbytes)
        del view
        return ok

    # -- one frame ------------------------------------------------------------------------
    def _check_frame(self, frame, fmt):
        if isinstance(fmt, str) and fmt.lower() in ("nv12", "i420"):
            return                       # letterbox checks the planes
        if not isinstance(frame, np.ndarray):
            raise TypeError(f"Detector: a frame is a uint8 numpy array (H, W, 3); got "
                            f"{type(frame).__name__}")
        if frame.dtype != _U8:
            raise TypeError(f"Detector: a frame is uint8 (H, W, 3); got {frame.dtype}")
        if frame.ndim != 3 or frame.shape[2] != 3 or frame.shape[0] < 2 or \
                frame.shape[1] < 2:
            raise ValueError(f"Detector: a frame is (H, W, 3) of at least 2x2 pixels; got "
                             f"shape {frame.shape}")

    def _frame(self, session, frame, src) -> Detections:
        t0 = time.perf_counter()
        try:
            kw = self._lb_kw
            fmt, matrix = src[0], src[1]
            if len(src) > 2:             # a dma-buf frame that names its channel order
                kw = {**kw, "swap_rb": src[2]}
            if self._input_kind == "native":
                box = letterbox(frame, out=session, fmt=fmt, matrix=matrix,
                                mean=self._norm[0], std=self._norm[1], **kw)[1]
            else:
                box = letterbox(frame, out=session, fmt=fmt, matrix=matrix, **kw)[1]
            t1 = time.perf_counter()
            session.run()
            t2 = time.perf_counter()
            # the session's views, infos and layouts as decode(session) reads them, given
            # so that decode's plan of the first frame serves the next
            det = decode(self.family, session.outputs, session.output_infos,
                         layout=self._layouts, input_size=self.input_size,
                         **self._decode_kw)
        except BaseException as exc:
            # the frames of the error hold views of the session's memory
            _guard.forget_frames(exc)
            raise
        det.boxes = box.to_frame(det.boxes)
        if det.keypoints is not None:
            det.keypoints = box.to_frame_points(det.keypoints)
        det.letterbox = box
        t3 = time.perf_counter()
        self._times.append((t1 - t0, t2 - t1, t3 - t2))
        return det

    def _admit(self) -> None:
        """What a frame checks before it takes a session: refused inside one of this
        thread's own frames or closes, held back while a close is under way, refused
        once closed."""
        if self._in_frame.played_here() or self._closing.held_here():
            # a callback inside a frame, or a signal handler inside a close: the session
            # it would wait for is this thread's
            raise _guard.busy_error("Detector", "detect")
        if self._close_begun:
            # a close is under way: wait for its end (it closes, or is refused), rather
            # than take back the sessions it is waiting for
            with self._closing("detect"):
                pass
        if self._closed:
            raise RuntimeError("detect on a closed Detector")

    def _run(self, frame, src) -> Detections:
        self._admit()
        with self._in_frame:
            s = self._free.get()
            try:
                # the frame under the session's lock, as a session's run_arrays: a close
                # of the model in another thread waits for it instead of refusing (or
                # freeing) the memory the frame writes and reads
                with s.hold("detect"):
                    if s.closed:
                        raise RuntimeError(
                            "the Detector was closed while this frame waited" if self._closed
                            else "detect: the Detector's Model was closed")
                    return self._frame(s, frame, src)
            finally:
                self._free.put(s)

    # -- frames in a dma-buf, bound as the input ------------------------------------------
    def _swap_for(self, order: str) -> bool:
        """Whether a 3-channel frame whose bytes are in `order` ("rgb" or "bgr") has its
        first and third channels swapped on its way in: with ``swap_rb`` the model takes
        RGB, so a BGR frame is swapped and an RGB one is not; without, frames go in as
        they are."""
        return bool(self._lb_kw["swap_rb"]) and order == "bgr"

    def _bindable(self, w: int, h: int, pitch: int, order: str) -> bool:
        """Whether a packed 3-channel frame (`w` x `h`, `pitch` bytes a row, bytes in
        `order`) is, byte for byte, what the letterbox would write into input 0: the
        input's size, rows with nothing between them, the model's channel order, an input
        of uint8 pixels converted by the runtime.  Such a frame is bound, not copied."""
        return (self._bind_ok and (w, h) == self.input_size and pitch == 3 * w and
                not self._swap_for(order))

    def _bound_session(self):
        """A free session for a bound frame: one made at the first need, at most one per
        worker (a worker past that waits for one)."""
        try:
            return self._free_bound.get_nowait()
        except queue.Empty:
            pass
        with self._bound_lock:
            if self._close_begun or self._closed:
                raise RuntimeError("detect on a closed Detector")
            if len(self._bound) < len(self._sessions):
                s = self.model.zero_copy(outputs=self.output_kind, inputs="logical")
                try:
                    from rknnx.platforms import npu_cores

                    cores = npu_cores(self.model.chip)
                    if len(self._sessions) > 1 and cores > 1 and \
                            self.model.supports("rknn_set_core_mask"):
                        from rknnx.pool import _ONE_CORE

                        s.set_core_mask(_ONE_CORE[len(self._bound) % cores])
                except BaseException:
                    s.close()
                    raise
                self._bound.append(s)
                return s
        return self._free_bound.get()

    def _detect_bound(self, fd: int, offset: int) -> Detections:
        """Boxes in a frame that already is input 0's bytes (:meth:`_bindable`), held in
        the dma-buf `fd` from `offset` (the caller checked that they fit in it): bound as the input (``bind_input_fd``, no copy),
        run, decoded.  `fd` stays the caller's; it is bound until the next such frame of
        that session."""
        self._check_open("detect")
        self._admit()
        with self._in_frame:
            s = self._bound_session()
            try:
                if s.closed:
                    raise RuntimeError("the Detector was closed while this frame waited")
                t0 = time.perf_counter()
                s.bind_input_fd(0, fd, offset)
                with s.hold("detect"):
                    if s.closed:
                        raise RuntimeError("detect: the Detector's Model was closed")
                    t1 = time.perf_counter()
                    try:
                        s.run()
                        t2 = time.perf_counter()
                        det = decode(self.family, s.outputs, s.output_infos,
                                     layout=self._layouts, input_size=self.input_size,
                                     **self._decode_kw)
                    except BaseException as exc:
                        _guard.forget_frames(exc)
                        raise
                    det.letterbox = geometry(self.input_size, self.input_size)
                    self._bound_frames += 1
                    self._times.append((t1 - t0, t2 - t1, time.perf_counter() - t2))
                    return det
            finally:
                self._free_bound.put(s)

    @property
    def bound_frames(self) -> int:
        """Frames bound as the input without a copy (dma-buf frames of the input's size
        and layout, given by :class:`~rknnx.vision.Streams`)."""
        return self._bound_frames

    def detect(self, frame, *, fmt: str = "bgr", matrix: str = "bt601") -> Detections:
        """Boxes in one frame: letterbox into a session's input, run, decode from its
        outputs in place, map back.

        Parameters
        ----------
        frame : numpy.ndarray, (Y, UV) or (Y, U, V)
            uint8 ``(h, w, 3)`` (BGR unless the detector was made with ``swap_rb=False``),
            any size and strides; or NV12 with ``fmt="nv12"``, I420 (a decoder's
            ``yuv420p``: its planes with their strides) with ``fmt="i420"``, converted in
            the letterbox's pass (see :func:`rknnx.vision.letterbox`).
        fmt : {"bgr", "rgb", "nv12", "i420"}
        matrix : {"bt601", "bt709"}
            The YUV matrix of an NV12 or I420 frame (limited range).

        Returns
        -------
        Detections
            Boxes (and keypoints) in the frame's pixels, clipped to it; masks over the
            model's input (``dets.letterbox.mask_to_frame(mask)`` maps one); its
            ``letterbox`` attribute is the frame's :class:`~rknnx.vision.Letterbox`.

        Raises
        ------
        TypeError, ValueError
            A frame that is not a uint8 3-channel image (or NV12).
        RuntimeError
            A closed detector.
        """
        self._check_open("detect")
        self._check_frame(frame, fmt)
        return self._run(frame, (fmt, matrix))

    __call__ = detect

    def submit(self, frame, *, fmt: str = "bgr", matrix: str = "bt601") -> Future:
        """Queue one frame on the worker threads (``workers > 1``; with one worker it runs
        now); a Future of its :class:`Detections`.  The frame is read by the worker:
        do not write into it before the future is done."""
        self._check_open("submit")
        self._check_frame(frame, fmt)
        if self._pool is None:
            f = Future()
            try:
                f.set_result(self._run(frame, (fmt, matrix)))
            except Exception as e:
                f.set_exception(e)
            return f
        try:
            return self._pool.submit(self._run, frame, (fmt, matrix))
        except RuntimeError:
            raise RuntimeError("submit on a closed Detector") from None

    def map(self, frames: Iterable, *, fmt: str = "bgr",
            matrix: str = "bt601") -> Iterator[Detections]:
        """:meth:`detect` every frame, on the worker threads, yielding the results in the
        order of `frames` (at most ``2 * workers`` frames in flight).  Closing the
        detector meanwhile ends the iteration with RuntimeError."""
        self._check_open("map")
        try:
            it = iter(frames)
        except TypeError:
            raise TypeError(f"Detector.map takes an iterable of frames; got "
                            f"{type(frames).__name__}") from None
        return self._map(it, fmt, matrix)

    def _map(self, it, fmt, matrix):
        if self._pool is None:
            for frame in it:
                yield self.detect(frame, fmt=fmt, matrix=matrix)
            return
        window = deque()
        limit = 2 * len(self._sessions)
        try:
            for frame in it:
                window.append(self.submit(frame, fmt=fmt, matrix=matrix))
                if len(window) >= limit:
                    yield self._result(window.popleft())
            while window:
                yield self._result(window.popleft())
        finally:
            for f in window:
                f.cancel()

    def _result(self, future) -> Detections:
        try:
            return future.result()
        except CancelledError:
            raise RuntimeError("the Detector was closed while map() ran") from None

    # -- timing ---------------------------------------------------------------------------
    def stage_times(self, *, reset: bool = False) -> dict:
        """Per-stage wall time of the frames so far (the last 4096): ``{stage: {"p50":
        s, "p99": s, "mean": s}}`` for ``letterbox``, ``npu`` (the session's run: the NPU
        and the runtime's own work) and ``decode`` (decode, NMS and the mapping back), and
        ``"frames"``.  `reset` forgets them after."""
        t = np.array(list(self._times), np.float64).reshape(-1, 3)
        if reset:
            self._times.clear()
        out = {"frames": int(t.shape[0])}
        for k, name in enumerate(STAGES):
            col = t[:, k]
            out[name] = ({"p50": float(np.percentile(col, 50)),
                          "p99": float(np.percentile(col, 99)),
                          "mean": float(col.mean())} if col.size else
                         {"p50": 0.0, "p99": 0.0, "mean": 0.0})
        return out

    # -- lifetime -------------------------------------------------------------------------
    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def workers(self) -> int:
        return len(self._sessions)

    @property
    def sessions(self) -> tuple:
        return tuple(self._sessions)

    def _check_open(self, what: str) -> None:
        # a child of fork: the sessions a frame of the parent's held at the fork are never
        # given back there, nor do the parent's worker threads exist
        _guard.check_process(self, self._made_in)
        if self._closed:
            raise RuntimeError(f"{what} on a closed Detector")

    def _refusal_checks(self, what: str) -> None:
        """RuntimeError in a child of fork, or from inside one of the detector's frames (a
        custom op callback, a signal handler), which would wait for its own session."""
        _guard.check_process(self, self._made_in)
        if self._in_frame.played_here():
            raise _guard.busy_error("Detector", what)
        for s in self._sessions + self._bound:   # BufferError while a view of one is alive
            s.check_closable(what)
        if self._own_model is not None:
            self._own_model.check_closable(what)

    def _close_now(self) -> None:
        with self._closing("close"):
            if self._closed:
                return                   # closed meanwhile by another thread
            self._close_begun = True
            try:
                self._close_sessions()
            finally:
                self._close_begun = False
        if self._pool is not None:
            self._pool.shutdown(wait=True)

    def _close_sessions(self) -> None:
        """The close, with every session taken back first."""
        # a frame in flight finishes first: take every session back (the workers wait
        # for one meanwhile); what would refuse is asked before anything is closed
        taken, taken_bound = [], []
        try:
            for _ in self._sessions:
                taken.append(self._free.get())
            with self._bound_lock:       # (none is made after: _close_begun is set)
                for _ in self._bound:
                    taken_bound.append(self._free_bound.get())
            for s in self._sessions + self._bound:
                s.check_closable()   # BufferError: a view alive, nothing closed
            if self._own_model is not None:
                self._own_model.check_closable()
            self._closed = True
            pool = self._pool
            if pool is not None:     # the queued frames are cancelled
                pool.shutdown(wait=False, cancel_futures=True)
            self._release()
        finally:
            for s in taken:          # (closed: a waiting worker says so)
                self._free.put(s)
            for s in taken_bound:
                self._free_bound.put(s)

    def _release(self) -> None:
        err = None
        for s in self._sessions + self._bound:
            try:
                s.close()
            except Exception as e:       # a view still alive: reported after the others
                err = err or e
        if self._own_model is not None:
            try:
                self._own_model.close()
            except Exception as e:
                err = err or e
        if err is not None:
            raise err

    def _close_quietly(self) -> None:
        self._closed = True
        pool = self._pool
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)
        for s in self._sessions + self._bound:
            try:
                s.close()
            except Exception:
                pass
        if self._own_model is not None:
            try:
                self._own_model.close()
            except Exception:
                pass

    def _collected(self):
        if self._close_when_collected:
            return None
        return f"unclosed <rknnx.vision.Detector {self.family} of {self.workers} workers>"

    def __repr__(self) -> str:
        state = "closed" if self._closed else f"{len(self._sessions)} workers"
        return (f"<rknnx.vision.Detector {getattr(self, 'family', '?')} {state}, input "
                f"{getattr(self, 'input_size', '?')}, outputs {getattr(self, 'output_kind', '?')}>")
