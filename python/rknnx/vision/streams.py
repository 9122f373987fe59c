"""Many video sources through one model's workers, in order per stream, with track ids:
:class:`Streams`.

One picture, each stage a thread or the C below it, every queue bounded
(docs/guide/streams.md is the guide)::

    source thread (one per stream: PyAV decode, or the user's iterable)
      -> the stream's slot (live: 1 frame, the newest wins, the old one counts as a drop;
         a file: a few frames, decoding waits)
      -> the workers (one per Detector session; each takes the next ready stream in turn,
         round robin, and runs the whole frame: letterbox from the decoder's own format,
         the NPU, decode)
      -> the stream's reorder buffer (records leave in frame order, at most `workers` deep)
      -> the stream's Tracker (one thread at a time)
      -> the records' queue (bounded: a consumer that falls behind holds the workers, so
         files wait and live sources drop)

A stream's failure is its own last record (``rec.error``); the others go on.  ``close()``
(and Ctrl-C during the iteration, and its end) sets one stop flag that wakes every wait,
and joins every thread it started with a deadline; a thread that overran (a user's
iterable blocked in its own code) is named in a RuntimeWarning.  A source's container is
opened, read and closed by its own thread only.
"""

from __future__ import annotations

import collections
import errno
import logging
import math
import os
import platform as _platform
import threading
import time
import warnings
from typing import Optional

import numpy as np

from rknnx import _guard
from rknnx._lifetime import Closable

__all__ = ["Streams", "Record", "StreamStats"]

log = logging.getLogger(__name__)

#: frames a file's slot holds before its decoder waits
FILE_DEPTH = 4
#: the records' queue, per worker (at least 4)
OUT_PER_WORKER = 2
#: the latencies kept per stream for p50/p99
LATENCIES = 4096
#: seconds close() waits for all its threads together
CLOSE_DEADLINE = 10.0
#: the back-off of a reconnect: first wait, factor, longest wait (seconds)
BACKOFF = (0.25, 2.0, 4.0)
#: URL schemes read as live sources
LIVE_SCHEMES = ("rtsp", "rtsps", "rtmp", "rtmps", "udp", "rtp", "srt", "tcp", "http",
                "https")
#: hardware decoders of pyav-rkmpp (ffmpeg-rockchip), by the stream's codec
RKMPP = {"h264": "h264_rkmpp", "hevc": "hevc_rkmpp", "vp9": "vp9_rkmpp",
         "av1": "av1_rkmpp"}

_END = object()                  # a stream's end, through its reorder buffer
_AVCOL_SPC_BT709 = 1             # FFmpeg's AVColorSpace for BT.709
_DMA_BUF_IOCTL_SYNC = 0x40086200  # _IOW('b', 0, struct dma_buf_sync { __u64 flags; })
_SYNC_READ_START, _SYNC_READ_END = 1, 1 | 4


# --------------------------------------------------------------------------------------------
# records and statistics
# --------------------------------------------------------------------------------------------
_RecordBase = collections.namedtuple("Record", "stream index pts detections tracks")


class Record(_RecordBase):
    """One frame of one stream, as it left the tracker.

    A named tuple ``(stream, index, pts, detections, tracks)``: `stream` is the source's
    position in `sources`; `index` counts the stream's decoded frames from 0 (a gap is
    frames dropped or skipped); `pts` is the frame's time in seconds (None where the
    source gives none: numpy frames); `detections` the frame's
    :class:`~rknnx.vision.Detections` (boxes in the frame's pixels); `tracks` its
    ``Tracks`` (None without a tracker).

    Attributes
    ----------
    frame : numpy.ndarray, tuple of planes, or None
        With ``Streams(..., frames=True)``: the decoded frame in its decoder's format
        (``fmt``), valid until the stream's next record; :meth:`bgr` converts.
    fmt : str
        ``"bgr"``, ``"nv12"`` or ``"i420"``.
    matrix : str
        The YUV matrix of an NV12 or I420 frame: ``"bt709"`` where the decoder reports
        it, else ``"bt601"`` (limited range).
    error : BaseException or None
        Set on a failed stream's last record (its `detections` and `tracks` None): why it
        ended.
    """

    frame = None
    fmt = None
    matrix = "bt601"
    error = None

    def bgr(self) -> np.ndarray:
        """The frame as a new uint8 BGR ``(h, w, 3)`` array (NV12 and I420 by their
        `matrix`, limited range, converted by :func:`rknnx.vision.letterbox` at scale
        1)."""
        if self.frame is None:
            raise ValueError("Record.bgr: no frame (Streams(..., frames=True) keeps them)")
        if self.fmt == "bgr":
            return np.array(self.frame, copy=True)
        w, h = _size_of(self.frame, self.fmt)
        from rknnx.vision.letterbox import letterbox

        return letterbox(self.frame, (w, h), fmt=self.fmt, matrix=self.matrix)[0]

    def __repr__(self) -> str:
        what = f"error={self.error!r}" if self.error is not None else (
            f"{len(self.detections)} boxes" + (
                "" if self.tracks is None else f", {len(self.tracks)} tracks"))
        return f"Record(stream={self.stream}, index={self.index}, pts={self.pts}, {what})"


class StreamStats(collections.namedtuple(
        "StreamStats", "stream name source decoder live state frames decoded drops "
                       "skipped fps p50 p99 tracks reconnects error bound")):
    """One stream's figures (:meth:`Streams.stats`): `frames` records given, `decoded`
    frames its source gave, `drops` live frames replaced by a newer one before a worker
    took them, `skipped` frames left out by ``detect_fps``, `fps` records per second of
    the stream's running time, `p50`/`p99` seconds from the frame's decode to its tracks,
    `tracks` distinct track ids, `state` ``"waiting"``, ``"running"``, ``"ended"`` or
    ``"failed"`` (`error` says why), `bound` dma-buf frames bound as the model's input
    without a copy (they already had its size and layout)."""


def _size_of(frame, fmt):
    if fmt == "bgr":
        return frame.shape[1], frame.shape[0]
    if isinstance(frame, (tuple, list)):
        return frame[0].shape[1], frame[0].shape[0]
    return frame.shape[1], frame.shape[0] // 3 * 2


# --------------------------------------------------------------------------------------------
# frames
# --------------------------------------------------------------------------------------------
class _Item:
    """One decoded frame on its way: what detect takes, and its bookkeeping."""

    __slots__ = ("index", "pts", "data", "fmt", "matrix", "t", "epoch", "keep", "size")

    def __init__(self, index, pts, data, fmt, epoch, keep=None, matrix="bt601"):
        self.index, self.pts, self.data, self.fmt = index, pts, data, fmt
        self.matrix = matrix
        self.t = time.perf_counter()
        self.epoch = epoch
        self.keep = keep                 # what the planes' memory lives in (a mapping)
        self.size = _size_of(data, fmt)


def _plane(buf, rows: int, pitch: int, width: int, offset: int = 0) -> np.ndarray:
    return np.frombuffer(buf, np.uint8, count=rows * pitch, offset=offset) \
        .reshape(rows, pitch)[:, :width]


def user_frame(frame, where: str):
    """(data, fmt, keep) of one frame of a user's iterable: a (h, w, 3) BGR array, a
    (h*3/2, w) NV12 array, a (Y, UV) NV12 or (Y, U, V) I420 triple of planes, or a dma-buf
    object (``fd``, ``size``, ``pitches``, ``offsets``, ``width``, ``height``, ``format``)."""
    if isinstance(frame, np.ndarray):
        if frame.dtype != np.uint8:
            raise TypeError(f"{where} is a {frame.dtype} array; frames are uint8")
        if frame.ndim == 3 and frame.shape[2] == 3:
            return frame, "bgr", None
        if frame.ndim == 2:
            return frame, "nv12", None
        raise ValueError(f"{where} has shape {frame.shape}; a frame is (h, w, 3) BGR or "
                         f"(h*3/2, w) NV12")
    if isinstance(frame, tuple) and len(frame) in (2, 3) and \
            all(isinstance(p, np.ndarray) for p in frame):
        if frame[0].ndim != 2 or any(p.ndim not in (2, 3) for p in frame[1:]):
            raise ValueError(f"{where} has planes of shapes "
                             f"{[tuple(p.shape) for p in frame]}; a (Y, UV) NV12 or "
                             f"(Y, U, V) I420 frame has a 2-D Y plane (h, w) and 2-D "
                             f"chroma planes")
        return frame, ("nv12" if len(frame) == 2 else "i420"), None
    if hasattr(frame, "fd") and hasattr(frame, "pitches"):
        return dmabuf_frame(frame, where)
    raise TypeError(f"{where} is a {type(frame).__name__}; a frame is a uint8 numpy array "
                    f"(h, w, 3) BGR or (h*3/2, w) NV12, a tuple of planes (Y, UV) NV12 or "
                    f"(Y, U, V) I420, or a dma-buf object (fd, size, pitches, offsets, "
                    f"width, height, format)")


def _copied(data):
    if isinstance(data, np.ndarray):
        return data.copy()
    return tuple(p.copy() for p in data)


def dmabuf_frame(obj, where: str):
    """A frame in a dma-buf fd, mapped read-only: NV12's (Y, UV) planes with their pitches
    (MPP's 1920x1080 in a 1920x1088 buffer, a 2304-byte pitch, ...), or one plane of
    packed 3-byte pixels (``format`` "bgr" or "rgb": the bytes' order, GStreamer's BGR and
    RGB), which a worker binds as the model's input where it already is the input's
    bytes (its size, no padding, the model's channel order)."""
    import mmap

    fmt = str(getattr(obj, "format", "nv12")).lower()
    if fmt not in ("nv12", "bgr", "rgb"):
        raise ValueError(f"{where}: a dma-buf frame's format is 'nv12', 'bgr' or 'rgb'; "
                         f"got {fmt!r}")
    try:
        fd, size = int(obj.fd), int(obj.size)
        w, h = int(obj.width), int(obj.height)
        pitches = [int(p) for p in obj.pitches]
        offsets = [int(o) for o in obj.offsets]
    except (AttributeError, TypeError, ValueError) as exc:
        raise TypeError(f"{where}: a dma-buf frame has int fd, size, width, height and "
                        f"sequences pitches, offsets ({exc})") from None
    if fmt != "nv12":
        if len(pitches) < 1 or len(offsets) < 1:
            raise ValueError(f"{where}: a {fmt.upper()} dma-buf has one plane: pitches and "
                             f"offsets of 1; got {pitches}, {offsets}")
        if w < 2 or h < 2:
            raise ValueError(f"{where}: a frame has a width and height of at least 2; got "
                             f"{w}x{h}")
        if pitches[0] < 3 * w:
            raise ValueError(f"{where}: plane 0's pitch {pitches[0]} is under 3 bytes a "
                             f"pixel of the width {w} ({3 * w})")
        if offsets[0] < 0 or offsets[0] + pitches[0] * (h - 1) + 3 * w > size:
            raise ValueError(f"{where}: plane 0 ({h} rows of {pitches[0]} bytes at offset "
                             f"{offsets[0]}) ends past the buffer's {size} bytes")
        mm = mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ)
        px = np.ndarray((h, w, 3), np.uint8, mm, offsets[0], (pitches[0], 3, 1))
        return px, "bgr", _DmaBuf(fd, (offsets[0], w, h, pitches[0], fmt))
    if len(pitches) < 2 or len(offsets) < 2:
        raise ValueError(f"{where}: an NV12 dma-buf has two planes: pitches and offsets of "
                         f"2; got {pitches}, {offsets}")
    if w < 2 or h < 2 or w % 2 or h % 2:
        raise ValueError(f"{where}: an NV12 frame has an even width and height of at "
                         f"least 2; got {w}x{h}")
    for k, rows in enumerate((h, h // 2)):
        if pitches[k] < w:
            raise ValueError(f"{where}: plane {k}'s pitch {pitches[k]} is under the width "
                             f"{w}")
        if offsets[k] < 0 or offsets[k] + pitches[k] * rows > size:
            raise ValueError(f"{where}: plane {k} ({rows} rows of {pitches[k]} bytes at "
                             f"offset {offsets[k]}) ends past the buffer's {size} bytes")
    mm = mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ)
    y = _plane(mm, h, pitches[0], w, offsets[0])
    uv = _plane(mm, h // 2, pitches[1], w, offsets[1])
    return (y, uv), "nv12", _DmaBuf(fd)


class _DmaBuf:
    """The CPU-access bracket of a dma-buf (DMA_BUF_IOCTL_SYNC: the caches made coherent
    before the CPU reads it, released after); a memfd has none and is plain memory."""

    __slots__ = ("fd", "packed")

    def __init__(self, fd, packed=None):
        self.fd = fd
        # a packed 3-channel frame's (offset, width, height, pitch, byte order); None: NV12
        self.packed = packed

    def sync(self, flags):
        import fcntl
        import struct

        try:
            fcntl.ioctl(self.fd, _DMA_BUF_IOCTL_SYNC, struct.pack("Q", flags))
        except OSError as exc:
            # not a dma-buf: the kernel's ENOTTY (a memfd's), EINVAL, EBADF; ENOSYS: no
            # one implements the call (qemu-user before 8.1 answers it to every ioctl it
            # does not know, a dma-buf's too; a kernel's dma-buf never does), so there
            # is no bracket to take either
            if exc.errno not in (errno.ENOTTY, errno.EINVAL, errno.EBADF, errno.ENOSYS):
                raise


# --------------------------------------------------------------------------------------------
# sources
# --------------------------------------------------------------------------------------------
def _is_url(s: str) -> bool:
    head, sep, _ = s.partition("://")
    return bool(sep) and head.isalpha()


def _live_of(source) -> bool:
    if isinstance(source, (str, os.PathLike)):
        s = os.fspath(source)
        if _is_url(s):
            return s.partition("://")[0].lower() in LIVE_SCHEMES
        return s.startswith("/dev/video")
    return False


def _rkmpp_device():
    """PyAV's HWAccel of MPP where its FFmpeg has the rkmpp device (pyav-rkmpp), else
    None."""
    try:
        from av.codec.hwaccel import HWAccel, hwdevices_available
    except ImportError:                  # an older PyAV: no hwaccel
        return None
    try:
        if "rkmpp" not in hwdevices_available():
            return None
        return HWAccel("rkmpp", allow_software_fallback=True)
    except Exception:                    # the device would not open: software
        return None


class _Stop(Exception):
    """The stop flag was seen inside a source."""


class _Source:
    """One stream's producer: the thread that owns its source (opens, reads, closes)."""

    def __init__(self, engine, st):
        self.engine, self.st = engine, st

    def post(self, data, fmt, keep=None, pts=None, matrix="bt601"):
        st = self.st
        item = _Item(st.decoded, pts, data, fmt, st.epoch, keep, matrix)
        st.decoded += 1
        if self.engine.skip(st, item):
            return
        self.engine.post(st, item)

    def run(self):
        st = self.st
        err = None
        try:
            self.read()
        except _Stop:
            pass
        except BaseException as exc:    # the stream's end, told as its last record
            err = exc
        finally:
            self.engine.ended(st, err)


class _FrameSource(_Source):
    """A user's iterable of frames (numpy BGR/NV12, planes, dma-buf objects)."""

    def read(self):
        st, eng = self.st, self.engine
        it = iter(st.source)
        try:
            for frame in it:
                eng.check_stop(st)
                data, fmt, keep = user_frame(
                    frame, f"stream {st.stream}'s frame {st.decoded}")
                if keep is None:
                    # a worker reads the frame later than the yield, and a source may
                    # refill the array it yielded (cv2's read(image=buf), a camera's ring):
                    # its own copy, made here in the source's thread, beside the workers
                    data = _copied(data)
                eng.pace(st, None)
                self.post(data, fmt, keep)
        finally:
            close = getattr(it, "close", None)
            if close is not None and it is not st.source:
                close()


class _AvSource(_Source):
    """A path or URL through PyAV: files, RTSP, V4L2; a live URL reconnects with back-off
    (``reconnect=`` seconds) before the stream fails."""

    def read(self):
        st, eng = self.st, self.engine
        gave_up = None
        while True:
            t_fail = None
            try:
                self.read_once()
                if not (st.url_live and eng.reconnect):
                    return
                why = "the source ended"
            except (_Stop, KeyboardInterrupt):
                raise
            except Exception as exc:
                if not (st.url_live and eng.reconnect and st.decoded > 0):
                    raise
                why = f"{type(exc).__name__}: {exc}"
                gave_up = exc
            # a live URL: reconnect with back-off until `reconnect` seconds have passed
            t_fail = time.monotonic()
            wait = BACKOFF[0]
            while True:
                log.info("stream %s: %s; reconnecting in %.2f s", st.stream, why, wait)
                if eng.stop_event.wait(wait):
                    raise _Stop
                try:
                    self.open()
                    break
                except (_Stop, KeyboardInterrupt):
                    raise
                except Exception as exc:
                    gave_up = exc
                    why = f"{type(exc).__name__}: {exc}"
                if time.monotonic() - t_fail > eng.reconnect:
                    raise ConnectionError(
                        f"stream {st.stream}: {st.label} did not come back within "
                        f"reconnect={eng.reconnect} s (last: {why})") from gave_up
                wait = min(wait * BACKOFF[1], BACKOFF[2])
            st.epoch += 1                # the tracker resets across the gap
            st.reconnects += 1

    def open(self):
        import av

        st, eng = self.st, self.engine
        self.close_container()
        s = os.fspath(st.source)
        kw = {}
        if eng.timeout is not None:
            kw["timeout"] = (eng.timeout, eng.timeout)
        options = {}
        if s.startswith("rtsp"):
            options["rtsp_transport"] = "tcp"
        if s.startswith("/dev/video"):
            kw["format"] = "v4l2"
        if options:
            kw["options"] = options
        hw = _rkmpp_device()
        if hw is not None:
            kw["hwaccel"] = hw           # MPP through FFmpeg's hwaccel (pyav-rkmpp)
        self.container = av.open(s, **kw)
        vs = self.container.streams.video
        if not vs:
            raise ValueError(f"stream {st.stream}: {st.label} has no video stream")
        self.vstream = vs[0]
        self.ctx = self.decoder(self.vstream)
        self.fps = float(self.vstream.average_rate) if self.vstream.average_rate else None
        self.tb = self.vstream.time_base
        # the time base as two ints: a frame's seconds are pts * num / den, one int
        # product and a true division (correctly rounded: the float of the Fraction
        # pts * time_base, without making a Fraction per frame)
        self.tb_nd = (self.tb.numerator, self.tb.denominator) if self.tb else None

    def decoder(self, vstream):
        """The stream's decoder: the MPP hardware decoder where `av` has it (pyav-rkmpp on
        a board), else the software one, with one line saying why."""
        import av

        st = self.st
        if vstream.codec_context is None:
            raise LookupError(f"stream {st.stream}: {st.label}'s video codec has no decoder "
                              f"in PyAV's FFmpeg (av {av.__version__})")
        name = vstream.codec_context.name
        hw = RKMPP.get(name)
        reason = None
        if getattr(vstream.codec_context, "is_hwaccel", False):
            vstream.thread_type = "AUTO"
            st.decoder = f"{name} (hardware: rkmpp hwaccel)"
            log.info("stream %s: %s", st.stream, st.decoder)
            return vstream.codec_context
        if hw is None:
            reason = f"no MPP decoder for {name}"
        elif hw not in av.codecs_available:
            reason = (f"av has no {hw} (pip install pyav-rkmpp on a board)"
                      if _platform.machine() in ("aarch64", "arm64") else
                      f"av has no {hw} (a board's decoder)")
        else:
            try:
                ctx = av.CodecContext.create(hw, "r")
                if vstream.codec_context.extradata:
                    ctx.extradata = vstream.codec_context.extradata
                ctx.thread_type = "AUTO"
                st.decoder = f"{hw} (hardware)"
                log.info("stream %s: %s", st.stream, st.decoder)
                return ctx
            except Exception as exc:     # the board's decoder refused: software instead
                reason = f"{hw} did not open ({exc})"
        vstream.thread_type = "AUTO"
        st.decoder = f"{name} (software: {reason})"
        log.info("stream %s: software %s decoder: %s", st.stream, name, reason)
        return vstream.codec_context

    def read_once(self):
        st, eng = self.st, self.engine
        if getattr(self, "container", None) is None:
            self.open()
        try:
            # (the demuxer's last packet is empty: it drains the decoder)
            for packet in self.container.demux(self.vstream):
                eng.check_stop(st)
                for frame in self.ctx.decode(packet):
                    self.frame(frame)
        finally:
            self.close_container()

    def close_container(self):
        c = getattr(self, "container", None)
        self.container = None
        if c is not None:
            c.close()

    def frame(self, frame):
        st, eng = self.st, self.engine
        eng.check_stop(st)
        p, nd = frame.pts, self.tb_nd
        pts = (p * nd[0]) / nd[1] if p is not None and nd is not None else None
        fmt = frame.format.name
        w, h = frame.width, frame.height
        # the stream's own matrix where the decoder reports it (BT.709: HD cameras);
        # unspecified or anything else: BT.601, PyAV's and OpenCV's default
        matrix = "bt709" if getattr(frame, "colorspace", None) == _AVCOL_SPC_BT709 \
            else "bt601"
        if fmt == "yuv420p":             # the software decoders' planes, as they are
            p = frame.planes
            data = (_plane(p[0], h, p[0].line_size, w),
                    _plane(p[1], h // 2, p[1].line_size, w // 2),
                    _plane(p[2], h // 2, p[2].line_size, w // 2))
            kind = "i420"
        elif fmt == "nv12":              # MPP's frames, with its aligned pitch
            p = frame.planes
            data = (_plane(p[0], h, p[0].line_size, w),
                    _plane(p[1], h // 2, p[1].line_size, w))
            kind = "nv12"
        else:
            # another pixel format (4:2:2, 4:4:4, 10-bit, full-range JPEG YUV from a
            # webcam's MJPEG, RGB): BGR by libswscale, which knows its range
            data, kind = frame.to_ndarray(format="bgr24"), "bgr"
        eng.pace(st, pts)
        self.post(data, kind, frame, pts, matrix)


# --------------------------------------------------------------------------------------------
# the engine (the threads hold it, not the Streams, so an unclosed Streams is collected)
# --------------------------------------------------------------------------------------------
class _Stream:
    """One stream's state."""

    def __init__(self, stream, name, source, live, tracker):
        self.stream, self.name, self.source = stream, name, source
        self.live = live
        self.url_live = _live_of(source)
        self.label = repr(os.fspath(source)) if isinstance(source, (str, os.PathLike)) \
            else type(source).__name__
        self.slot = collections.deque()
        self.room = None                 # the engine's condition: its slot has room
        self.depth = 1 if live else FILE_DEPTH
        self.decoded = 0
        self.drops = 0
        self.bound = 0                   # dma-buf frames bound as the input (no copy)
        self.skipped = 0
        self.epoch = 0
        self.reconnects = 0
        self.decoder = "frames" if not isinstance(source, (str, os.PathLike)) else "?"
        self.done = False                # the source posted its end
        self.end_taken = False           # the end went through the workers
        self.err = None
        self.failed = None               # the error its last record carries
        self.finished = False
        self.counted = False
        self.seq = 0                     # frames given to the workers
        self.stop = False
        self.last_frame = time.monotonic()
        # in order: the reorder buffer and the tracker, one thread at a time
        self.order = threading.Lock()
        self.pending = {}
        self.next = 0
        self.tracker = tracker
        self.tracked_epoch = 0
        self.last_index = None
        self.last_pts = None
        self.last_size = None
        self.n_tracks = 0                # tracks started
        self.max_id = 0                  # (a tracker without `started`)
        self.ids_before = 0
        self.records = 0
        self.latencies = collections.deque(maxlen=LATENCIES)
        self.t_first = None
        self.t_last = None
        self.next_detect = None
        self.pace0 = None
        self.thread = None


class _Engine:
    def __init__(self, det, own_det, streams, *, frames, detect_fps, reconnect, timeout):
        self.det = det
        self.own_det = own_det
        self.streams = streams
        self.frames = frames
        self.detect_fps = detect_fps
        self.reconnect = reconnect
        self.timeout = timeout
        # one lock, and a condition per waiter so that a change wakes only whom it
        # concerns: `cv` the workers (a frame or an end ready), each stream's `room` its
        # source (a file's slot has room); stops wake them all (wake_all)
        self.lock = threading.Lock()
        self.cv = threading.Condition(self.lock)
        for st in streams:
            st.room = threading.Condition(self.lock)
        self.stop_event = threading.Event()
        self.rr = 0
        self.out = collections.deque()
        self.out_cap = max(4, OUT_PER_WORKER * det.workers)
        self.out_cv = threading.Condition(threading.Lock())
        self.waiters = []                # asyncio futures waiting for a record
        self.unfinished = len(streams)
        self.threads = []
        self.started = False
        self.life = threading.Lock()     # start() against stop(): no thread started after

    # -- the sources' side ------------------------------------------------------------------
    def check_stop(self, st):
        if self.stop_event.is_set() or st.stop:
            raise _Stop

    def pace(self, st, pts):
        """A file played on its clock (``live=True`` on a file): wait for the frame's
        time."""
        if not (st.live and not st.url_live and pts is not None and
                isinstance(st.source, (str, os.PathLike))):
            return
        now = time.monotonic()
        if st.pace0 is None:
            st.pace0 = now - pts
        wait = st.pace0 + pts - now
        if wait > 0 and self.stop_event.wait(wait):
            raise _Stop

    def skip(self, st, item) -> bool:
        """``detect_fps``: whether this frame is left out (the tracker predicts across)."""
        if self.detect_fps is None:
            return False
        t = item.pts if item.pts is not None else time.monotonic()
        period = 1.0 / self.detect_fps
        if st.next_detect is None or t >= st.next_detect - 1e-6:
            nxt = (st.next_detect or t) + period
            st.next_detect = nxt if nxt > t else t + period
            return False
        with self.cv:
            st.skipped += 1
            st.last_frame = time.monotonic()
        return True

    def post(self, st, item):
        with self.cv:
            st.last_frame = time.monotonic()
            if st.live:
                if st.slot:              # the newest wins; the old one is a drop
                    st.slot.popleft()
                    st.drops += 1
            else:
                while len(st.slot) >= st.depth and not (self.stop_event.is_set() or st.stop):
                    st.room.wait()       # a file: decoding waits
                    st.last_frame = time.monotonic()
            if self.stop_event.is_set() or st.stop:
                raise _Stop
            st.slot.append(item)
            self.cv.notify()             # one worker: each frame wakes one

    def wake_all(self):
        """Under the lock: every waiting worker and source (a stop, a stream's end)."""
        self.cv.notify_all()
        for st in self.streams:
            st.room.notify_all()

    def ended(self, st, err):
        with self.cv:
            if not st.done:
                st.done = True
                st.err = err
            self.cv.notify_all()         # (rare: any worker may take the end)

    # -- the workers' side ------------------------------------------------------------------
    def take(self):
        """The next (stream, seq, item) in round robin over the streams with a frame (or an
        end) ready; None when stopping or when every stream's end was taken."""
        streams = self.streams
        n = len(streams)
        with self.cv:
            while True:
                if self.stop_event.is_set():
                    return None
                for k in range(n):
                    st = streams[(self.rr + k) % n]
                    if st.slot:
                        item = st.slot.popleft()
                    elif st.done and not st.end_taken:
                        st.end_taken = True
                        item = _END
                    else:
                        continue
                    self.rr = (self.rr + k + 1) % n
                    seq = st.seq
                    st.seq += 1
                    if item is _END:      # the last end lets the waiting workers go
                        self.cv.notify_all()
                    else:
                        st.room.notify()  # its decoder, if it waits for room
                    return st, seq, item
                if all(st.end_taken for st in streams):
                    return None
                self.stalled()
                self.cv.wait(self.timeout / 4 if self.timeout else None)

    def stalled(self):
        """A source that gave nothing for `timeout` seconds ends its stream (its thread may
        still be blocked in the user's code: close() names it if it stays)."""
        if not self.timeout:
            return
        now = time.monotonic()
        for st in self.streams:
            if not st.done and not st.slot and now - st.last_frame > self.timeout:
                st.done = True
                st.stop = True
                st.err = TimeoutError(
                    f"stream {st.stream}: no frame from its source ({st.label}) in "
                    f"{self.timeout:g} s (timeout=)")

    def work(self):
        det = self.det
        while True:
            job = self.take()
            if job is None:
                return
            st, seq, item = job
            if item is _END:
                self.deliver(st, seq, item, None)
                continue
            if st.failed is not None:
                self.deliver(st, seq, item, None)
                continue
            try:
                kb = item.keep
                if kb is not None and isinstance(kb, _DmaBuf):
                    packed = kb.packed
                    if packed is not None and det._bindable(*packed[1:]):
                        # already the input's bytes: bound as the input, no copy (the
                        # NPU reads it; no CPU access to bracket)
                        result = det._detect_bound(kb.fd, packed[0])
                        with st.order:
                            st.bound += 1
                    else:
                        kb.sync(_SYNC_READ_START)
                        try:
                            if packed is not None:   # its channel order, as it says
                                det._check_open("detect")
                                result = det._run(item.data, (
                                    "bgr", "bt601", det._swap_for(packed[4])))
                            else:
                                result = det.detect(item.data, fmt=item.fmt,
                                                    matrix=item.matrix)
                        finally:
                            kb.sync(_SYNC_READ_END)
                else:
                    result = det.detect(item.data, fmt=item.fmt, matrix=item.matrix)
            except BaseException as exc:     # SystemExit too: the stream's error, the
                result = exc                 # worker goes on (a dead worker hangs the rest)
            self.deliver(st, seq, item, result)

    def deliver(self, st, seq, item, result):
        """Into the stream's reorder buffer; the frames next in order go through its
        tracker to the records' queue."""
        with st.order:
            st.pending[seq] = (item, result)
            while st.next in st.pending:
                item, result = st.pending.pop(st.next)
                st.next += 1
                rec = self.record(st, item, result)
                if rec is not None and not self.push(rec):
                    return
                if st.finished and not st.counted:
                    # after its last record is in the queue: the iteration ends when
                    # every stream is counted here and the queue is empty
                    st.counted = True
                    with self.out_cv:
                        self.unfinished -= 1
                        self.out_cv.notify_all()
                        self.wake()

    def record(self, st, item, result):
        if st.finished:
            return None
        if item is _END:
            return self.finish(st, st.err)
        if st.failed is not None:
            return None                  # after the stream's error: nothing more
        if isinstance(result, BaseException):
            with self.cv:
                st.stop = True           # its source stops; its end finishes it
                self.wake_all()
            return self.finish(st, result, index=item.index)
        try:
            tracks = self.track(st, item, result)
        except BaseException as exc:
            with self.cv:
                st.stop = True
                self.wake_all()
            return self.finish(st, exc, index=item.index)
        now = time.perf_counter()
        st.latencies.append(now - item.t)
        if st.t_first is None:
            st.t_first = item.t
        st.t_last = now
        st.records += 1
        rec = Record(st.stream, item.index, item.pts, result, tracks)
        if self.frames:
            rec.frame, rec.fmt, rec.matrix = item.data, item.fmt, item.matrix
        return rec

    def track(self, st, item, dets):
        tr = st.tracker
        if tr is None:
            return None
        if st.tracked_epoch != item.epoch or (st.last_size is not None and
                                             st.last_size != item.size):
            tr.reset()                   # a reconnect's gap, or a new frame size
            st.ids_before += st.max_id
            st.max_id = 0
            st.last_index = None
            st.last_pts = None
        st.tracked_epoch = item.epoch
        st.last_size = item.size
        gap = 1 if st.last_index is None else item.index - st.last_index
        last_pts, st.last_index, st.last_pts = st.last_pts, item.index, item.pts
        if gap > 1:
            # frames dropped or skipped: the prediction steps by the real gap, in seconds
            # (the frames' times where known, else the frames counted at the tracker's fps)
            if item.pts is not None and last_pts is not None and item.pts > last_pts:
                dt = item.pts - last_pts
            else:
                dt = gap / float(getattr(tr, "fps", 30))
            tracks = tr.update(dets, dt=dt)
        else:
            tracks = tr.update(dets)
        # tracks counted as they start (bounded state, however long the stream runs); a
        # tracker without `started`: by its largest id since its last reset
        started = getattr(tracks, "started", None)
        if started is not None:
            st.n_tracks += len(started)
        else:
            ids = getattr(tracks, "ids", None)
            if ids is not None and len(ids):
                st.max_id = max(st.max_id, int(np.max(ids)))
        return tracks

    def finish(self, st, err, index=None):
        st.finished = True
        if err is not None:
            st.failed = err
        with self.cv:
            st.stop = True
            self.wake_all()
        if err is None:
            return None
        rec = Record(st.stream, st.decoded if index is None else index, None, None, None)
        rec.error = err
        return rec

    def push(self, rec) -> bool:
        with self.out_cv:
            while len(self.out) >= self.out_cap and not self.stop_event.is_set():
                self.out_cv.wait()
            if self.stop_event.is_set():
                return False
            self.out.append(rec)
            self.out_cv.notify_all()
            self.wake()
        return True

    def wake(self):
        """Under out_cv: the asyncio iterators waiting for a record."""
        waiters, self.waiters = self.waiters, []
        for loop, fut in waiters:
            try:
                loop.call_soon_threadsafe(_set_done, fut)
            except RuntimeError:         # its loop is closed
                pass

    # -- the consumer's side ----------------------------------------------------------------
    def next_record(self, block=True):
        """The next record; None at the end (every stream finished and given); _EMPTY when
        not blocking and none is ready."""
        with self.out_cv:
            while True:
                if self.out:
                    rec = self.out.popleft()
                    self.out_cv.notify_all()
                    return rec
                if self.unfinished == 0 or self.stop_event.is_set():
                    return None
                if not block:
                    return _EMPTY
                self.out_cv.wait(0.25)

    # -- lifetime ---------------------------------------------------------------------------
    def start(self):
        with self.life:
            if self.started or self.stop_event.is_set():
                return
            self.started = True
            self._start()

    def _start(self):
        for st in self.streams:
            st.last_frame = time.monotonic()
            src = _AvSource(self, st) if isinstance(st.source, (str, os.PathLike)) \
                else _FrameSource(self, st)
            st.thread = threading.Thread(target=src.run, daemon=True,
                                         name=f"rknnx-streams-source-{st.stream}")
            self.threads.append(st.thread)
        for k in range(self.det.workers):
            self.threads.append(threading.Thread(target=self.work, daemon=True,
                                                 name=f"rknnx-streams-worker-{k}"))
        for t in self.threads:
            t.start()

    def stop(self, deadline=None):
        """Stop every thread and join them by the deadline; the names of those that
        overran."""
        if deadline is None:
            deadline = CLOSE_DEADLINE
        self.stop_event.set()
        with self.life:                  # a start under way has started all it will
            pass
        with self.cv:
            self.wake_all()
        with self.out_cv:
            self.out.clear()
            self.out_cv.notify_all()
            self.wake()
        me = threading.current_thread()
        end = time.monotonic() + deadline
        late = []
        for t in self.threads:
            if t is me or t.ident is None:
                continue
            t.join(max(0.0, end - time.monotonic()))
            if t.is_alive():
                late.append(t.name)
        return late


_EMPTY = object()


def _set_done(fut):
    if not fut.done():
        fut.set_result(None)


# --------------------------------------------------------------------------------------------
# the public object
# --------------------------------------------------------------------------------------------
def _sources(sources):
    """[(name or None, source)] of `sources`: a list/tuple, a dict {name: source}, or one
    path/URL."""
    if isinstance(sources, (str, os.PathLike)):
        return [(None, sources)]
    if isinstance(sources, dict):
        items = [(str(k), v) for k, v in sources.items()]
    elif isinstance(sources, (list, tuple)):
        items = [(None, s) for s in sources]
    else:
        raise TypeError(f"Streams: sources is a list (or dict {{name: source}}) of paths, "
                        f"URLs and iterables of frames; got {type(sources).__name__}")
    if not items:
        raise ValueError("Streams: sources is empty; give at least one")
    for k, (_, s) in enumerate(items):
        if isinstance(s, (str, os.PathLike)):
            continue
        if isinstance(s, (np.ndarray, bytes, bytearray)) or not hasattr(s, "__iter__"):
            raise TypeError(f"Streams: source {k} is a {type(s).__name__}; a source is a "
                            f"path or URL (PyAV), or an iterable of frames (a list of "
                            f"frames is one source: wrap a single frame in a list)")
    return items


def _number(v, name, *, positive=True, allow_none=True):
    if v is None and allow_none:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float, np.number)) or \
            not math.isfinite(v) or (positive and v <= 0):
        raise ValueError(f"Streams: {name} is a number of seconds (or per second) > 0 or "
                         f"None; got {v!r}")
    return float(v)


class Streams(Closable):
    """Many video sources through one model's workers; records in frame order per stream,
    with track ids.

    Parameters
    ----------
    model_or_detector : Detector, rknnx.Model, or a path / bytes of a model
        A :class:`~rknnx.vision.Detector` brings its sessions, workers and decoding
        parameters (and stays open after the Streams); a Model or path opens a Detector
        (closed with the Streams) with ``workers`` and `detector_kwargs`.
    sources : list, dict {name: source}, or one path/URL
        Each a stream: a path or URL read by PyAV (files, ``rtsp://`` and other network
        URLs, ``/dev/videoN`` V4L2 cameras; the ``video`` extra), or an iterable of frames
        (uint8 BGR ``(h, w, 3)``, NV12 ``(h*3/2, w)``, a ``(Y, UV)`` NV12 or ``(Y, U, V)``
        I420 tuple of planes, or dma-buf objects with ``fd``, ``size``, ``pitches``,
        ``offsets``, ``width``, ``height``, ``format`` ``"nv12"``, or ``"bgr"`` /
        ``"rgb"`` for packed 3-byte pixels in that byte order: mapped read-only, or, a
        packed frame that already has the model input's size and layout, bound as the
        input with ``bind_input_fd``, no copy: ``stats()[i].bound`` counts them).  A numpy
        frame is copied when it is yielded (a source may refill the array it yielded: the
        workers read it later); a dma-buf is read in place.  A source given twice is two
        streams (a generator object given twice is one iterator read by two threads:
        give two generators); a dict's names are in :attr:`names`.
    workers : int, optional
        A model's Detector's sessions and threads (default 1); not with a Detector.
    tracker : bool, Tracker, or None
        True: a :class:`~rknnx.vision.Tracker` per stream; a Tracker: a template copied
        per stream; None or False: no tracking (`tracks` None).  With a tracker a model's
        Detector decodes at ``conf = tracker.low`` unless `conf` is given.
    live : bool or list of bool, optional
        (One for all, or one per source.)  Whether sources are live (a slot of one frame: the newest wins, the old one counts
        as a drop) or files (decoding waits, nothing lost).  None: network URLs and
        ``/dev/video*`` are live, the rest not; True on a file plays it on its clock.
    frames : bool
        Keep each record's decoded frame (``rec.frame``, ``rec.bgr()``).
    detect_fps : float, optional
        Run the model on that many frames a second per stream (by the frames' times); the
        others are counted as skipped and the tracker predicts across them.
    reconnect : float, optional
        Seconds a live URL may take to come back (retried with back-off, the tracker reset
        across the gap) before its stream fails.  None: it fails at once.
    timeout : float, optional
        Seconds a source may go without a frame before its stream fails with TimeoutError
        (also PyAV's open and read timeouts); None: no limit.  Default 10.
    **detector_kwargs
        :class:`~rknnx.vision.Detector`'s (``family``, ``conf``, ``iou``, ``names``, ...).

    Attributes
    ----------
    names : list of str
        Each stream's name (a dict's keys; else ``"0"``, ``"1"`` ...).
    detector : Detector

    Examples
    --------
    >>> with Streams("yolov8n.rknn", ["a.mp4", "rtsp://cam/1"]) as streams:  # doctest: +SKIP
    ...     for rec in streams:
    ...         print(rec.stream, rec.index, rec.tracks.ids)

    Raises
    ------
    TypeError, ValueError
        Bad sources or parameters (before any thread starts).
    ImportError
        A path or URL without PyAV (``pip install 'rknnx[video]'``), or ``tracker=True``
        where :class:`~rknnx.vision.Tracker` is missing.

    .. versionadded:: 0.1.0
    """

    _kind = "Streams"

    def __init__(self, model_or_detector, sources, *, workers: Optional[int] = None,
                 tracker=True, live: Optional[bool] = None, frames: bool = False,
                 detect_fps: Optional[float] = None, reconnect: Optional[float] = None,
                 timeout: Optional[float] = 10.0, **detector_kwargs):
        from rknnx.vision.detector import Detector

        self._engine = None
        self._closed = True
        self._made_in = _guard.pid
        self._close_lock = threading.Lock()
        items = _sources(sources)
        lives = list(live) if isinstance(live, (list, tuple)) else [live] * len(items)
        if len(lives) != len(items) or any(v is not None and v is not True and v is not False
                                           for v in lives):
            raise TypeError(f"Streams: live is True, False or None (or one of those per "
                            f"source: {len(items)}); got {live!r}")
        if frames is not True and frames is not False:
            raise TypeError(f"Streams: frames is True or False; got {frames!r}")
        detect_fps = _number(detect_fps, "detect_fps")
        reconnect = _number(reconnect, "reconnect")
        timeout = _number(timeout, "timeout")
        if any(isinstance(s, (str, os.PathLike)) for _, s in items):
            try:
                import av  # noqa: F401
            except ImportError:
                raise ImportError("Streams: reading a path or URL needs PyAV: pip install "
                                  "'rknnx[video]' (or av)") from None
        template = self._tracker_of(tracker)
        if isinstance(model_or_detector, Detector):
            if workers is not None:
                raise ValueError("Streams: a Detector brings its workers; give workers= "
                                 "only with a model")
            if detector_kwargs:
                raise ValueError(f"Streams: a Detector brings its decoding parameters; "
                                 f"{sorted(detector_kwargs)} are for a model")
            det, own = model_or_detector, False
            if det.closed:
                raise ValueError("Streams on a closed Detector")
        else:
            if template is not None and "conf" not in detector_kwargs:
                detector_kwargs["conf"] = float(template.low)
            det = Detector(model_or_detector, workers=1 if workers is None else workers,
                           **detector_kwargs)
            own = True
        self.detector = det
        self.names = [n if n is not None else str(k) for k, (n, _) in enumerate(items)]
        try:
            streams = []
            for k, (n, s) in enumerate(items):
                lv = _live_of(s) if lives[k] is None else lives[k]
                streams.append(_Stream(k, self.names[k], s, lv,
                                       None if template is None else template.copy()))
            self._engine = _Engine(det, own, streams, frames=frames, detect_fps=detect_fps,
                                   reconnect=reconnect, timeout=timeout)
        except BaseException:
            if own:
                det.close()
            raise
        self._closed = False
        self._late = []

    @staticmethod
    def _tracker_of(tracker):
        if tracker is None or tracker is False:
            return None
        if tracker is True:
            from rknnx.vision.tracker import Tracker

            return Tracker()
        if not (callable(getattr(tracker, "update", None)) and
                callable(getattr(tracker, "copy", None)) and
                callable(getattr(tracker, "reset", None)) and
                isinstance(getattr(tracker, "low", None), (int, float))):
            raise TypeError(f"Streams: tracker is True, None, or a Tracker (update, reset, "
                            f"copy, and its low score threshold `low`) to copy per stream; "
                            f"got {type(tracker).__name__}")
        return tracker

    # -- iteration --------------------------------------------------------------------------
    def __iter__(self):
        self._check_open("iterate")
        self._engine.start()
        return self

    def __next__(self) -> Record:
        eng = self._engine
        if self._closed or eng is None:
            raise StopIteration
        _guard.check_process(self, self._made_in)
        eng.start()
        try:
            rec = eng.next_record()
        except BaseException:            # Ctrl-C while waiting: everything stops
            self.close()
            raise
        if rec is None:
            self.close()                 # the end of the iteration joins every thread
            raise StopIteration
        return rec

    def __aiter__(self):
        self._check_open("iterate")
        self._engine.start()
        return self

    async def __anext__(self) -> Record:
        import asyncio

        eng = self._engine
        if self._closed or eng is None:
            raise StopAsyncIteration
        _guard.check_process(self, self._made_in)
        eng.start()
        loop = asyncio.get_running_loop()
        while True:
            rec = eng.next_record(block=False)
            if rec is None:
                self.close()
                raise StopAsyncIteration
            if rec is not _EMPTY:
                return rec
            fut = loop.create_future()
            with eng.out_cv:
                if eng.out or eng.unfinished == 0 or eng.stop_event.is_set():
                    continue
                eng.waiters.append((loop, fut))
            try:
                await fut
            except BaseException:
                self.close()
                raise

    # -- figures ----------------------------------------------------------------------------
    def stats(self) -> list:
        """Each stream's :class:`StreamStats`."""
        out = []
        eng = self._engine
        if eng is None:
            return out
        for st in eng.streams:
            lat = np.array(list(st.latencies), np.float64)
            span = (st.t_last - st.t_first) if st.t_first is not None else 0.0
            fps = (st.records - 1) / span if st.records > 1 and span > 0 else 0.0
            if st.finished:
                state = "failed" if st.failed is not None else "ended"
            else:
                state = "running" if eng.started else "waiting"
            out.append(StreamStats(
                st.stream, st.name, st.label, st.decoder, st.live, state, st.records,
                st.decoded, st.drops, st.skipped, fps,
                float(np.percentile(lat, 50)) if lat.size else None,
                float(np.percentile(lat, 99)) if lat.size else None,
                st.n_tracks + st.ids_before + st.max_id, st.reconnects, st.failed,
                st.bound))
        return out

    # -- lifetime ---------------------------------------------------------------------------
    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def overran(self) -> list:
        """The threads that were still running at close's deadline (a user's source
        blocked in its own code), by name."""
        return list(self._late)

    def _check_open(self, what):
        _guard.check_process(self, self._made_in)
        if self._closed:
            raise RuntimeError(f"{what} on a closed Streams")

    def close(self) -> None:
        """Stop every source and worker and join their threads (with a deadline: a source
        blocked in its own code is named in a RuntimeWarning and left as a daemon thread),
        then close the Detector it opened; a second call does nothing.  A close while
        another thread's close runs waits for it (it returns once everything is joined),
        except from the Streams' own threads (a source's iterator), which only stop."""
        eng = self._engine
        if eng is not None and threading.current_thread() in eng.threads:
            eng.stop_event.set()         # from inside: the closing thread cannot join
            with eng.cv:                 # itself; the consumer's close joins the rest
                eng.wake_all()
            with eng.out_cv:
                eng.out_cv.notify_all()
                eng.wake()
            return
        with self._close_lock:
            super().close()

    def _close_now(self) -> None:
        eng = self._engine
        late = eng.stop()
        self._late = late
        self._closed = True
        if eng.own_det:
            eng.det.close()
        if late:
            warnings.warn(f"Streams.close: {', '.join(late)} still running after "
                          f"the close's deadline (a source blocked in its own code); "
                          f"left as daemon threads", RuntimeWarning, stacklevel=3)

    def _close_quietly(self) -> None:
        if self._engine is None:
            self._closed = True
            return
        try:
            self._close_now()
        except Exception:
            pass

    def __repr__(self) -> str:
        eng = self._engine
        n = len(eng.streams) if eng is not None else 0
        return f"<rknnx.vision.Streams of {n} streams{' (closed)' if self._closed else ''}>"
