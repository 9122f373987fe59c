"""``rknnx.serve``: one process serves RKNN models to many over HTTP (KServe v2 / Triton).

A :class:`Server` owns one :class:`rknnx.Pool` per model (the weights loaded once, one
context per NPU core) and answers the KServe v2 inference protocol, the one Triton
Inference Server speaks, so ``tritonclient.http`` and KServe clients work unchanged:

==========================================  ==============================================
``GET /v2/health/live``, ``/v2/health/ready``  200 while the server runs / takes requests
``GET /v2``                                 server metadata (extensions)
``GET /v2/models/{name}``                   inputs and outputs: name, KServe datatype, shape
``GET /v2/models/{name}/ready``             200 when the model takes requests
``GET /v2/models/{name}/config``            Triton's model config (what its clients read)
``GET /v2/models/{name}/stats``             Triton's statistics (counts and times)
``POST /v2/models/{name}/infer``            JSON tensors, or the binary tensor extension
``POST /v2/repository/index``               the models served
==========================================  ==============================================

(``/v2/models/{name}/versions/1/...`` is the same model: each has one version, ``1``.)

Frames travel as JSON ``data`` or, for large frames, as raw bytes after the JSON header
(``Inference-Header-Content-Length``; a 640x640x3 frame is 1.2 MB of bytes instead of 4 MB
of text to parse).  Each model has a bounded queue: a request beyond ``queue`` waiting
frames gets 503 at once (clients retry; memory stays bounded); a request takes its place
only once its body has arrived, and a body must arrive within ``body_timeout`` (408), with
at most ``max_reading`` bodies (``max_reading_bytes`` bytes) read at once.  A body beyond
``max_request_bytes`` gets 413, a malformed request 400 with the reason (``{"error":
...}``), an unknown model 404.  SIGINT/SIGTERM drain: the server stops listening (what
the kernel queued is accepted), ``ready`` says 503, every request that reaches it is
answered (its result if it was admitted, else 503 with ``Connection: close``) within
``shutdown_timeout``, a connection closes after its answer or once idle for the drain
window (a second), never while a request arrives on it; then the pools and the models
close (docs/serving.md, what the server guarantees).  The server binds 127.0.0.1 unless told otherwise: it has no authentication.

Why aiohttp: the server is one asyncio event loop that parses HTTP and hands frames to the
pool's threads (the NPU runs with the GIL released), so a handful of threads serve any
number of connections, which suits a board's few cores and little RAM; aiohttp is that and
nothing more (no ASGI server, framework and validation layers to install and run: FastAPI
on uvicorn needs pydantic's compiled core besides), reads bodies as bytes with a size limit
(``client_max_size``), closes gracefully (stop listening, finish the handlers in flight,
then clean up), is maintained by aio-libs with releases every few weeks, and ships wheels
for manylinux/musllinux aarch64 (its C speed-ups are optional: it runs as pure Python
where no wheel fits).  It is the ``serve`` extra: ``pip install "rknnx[serve]"``.
"""

from __future__ import annotations

import asyncio
import collections
import ctypes
import logging
import math
import os
import signal
import socket
import sys
import time
import zlib
from concurrent.futures import Future
from typing import Any, Deque, Dict, List, Mapping, Optional, Sequence, Union

try:
    from aiohttp import HttpVersion11, web
    from aiohttp.http_exceptions import HttpProcessingError
except ImportError as _exc:  # pragma: no cover - exercised in a subprocess by the tests
    raise ImportError("rknnx.serve needs aiohttp: pip install 'rknnx[serve]'") from _exc

from rknnx import _kserve
from rknnx._kserve import HEADER, ModelSpec, ProtocolError, check_name

__all__ = ["Server", "DEFAULT_PORT", "default_workers"]

#: the port Triton and KServe servers use for HTTP
DEFAULT_PORT = 8000
_NPU_CORES = {"RK3588": 3, "RK3576": 2}
_log = logging.getLogger("rknnx.serve")
#: aiohttp's own messages (the protocol handler's logger, given to it): client mistakes
#: the HTTP parser refuses and clients that go away are debug lines there, not errors
_http_log = logging.getLogger("rknnx.serve.http")
#: a JSON header larger than this is parsed off the event loop, in a thread
_BIG_JSON = 256 * 1024
#: JSON outputs of more elements than this are written off the event loop
_BIG_OUTPUT = 100_000
#: Content-Encodings of a request body the server decodes (the standard library's zlib)
_ENCODINGS = {"identity": None, "gzip": 16 + zlib.MAX_WBITS, "x-gzip": 16 + zlib.MAX_WBITS,
              "deflate": zlib.MAX_WBITS}
#: the drain window: on shutdown a connection closes once it has been idle (no request in
#: a handler, nothing received, nothing left to write) this long (within the shutdown
#: timeout); a request arriving before that is answered 503 with Connection: close
_DRAIN_WINDOW = 1.0
#: on shutdown the listening socket takes no new connection (where the kernel lets a
#: filter refuse new handshakes) and stays open this long for the handshakes under way,
#: then what the kernel queued is accepted and the socket closes
_HANDSHAKE_GRACE = 0.1


def default_workers(chip: Optional[str]) -> int:
    """Pool workers per model by default: one per NPU core (3 on RK3588, 2 on RK3576), and 2
    on one-core chips (one converts a frame on the CPU while the other runs)."""
    return max(2, _NPU_CORES.get(str(chip), 1))


class _QuietClientErrors(logging.Filter):
    """Drops aiohttp's ERROR records of client mistakes (a request its parser refuses, a
    client that went away); they become one DEBUG line each."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if isinstance(exc, (HttpProcessingError, ConnectionError)):
            if _http_log.isEnabledFor(logging.DEBUG):
                _http_log.debug("client error: %s", " ".join(str(exc).split())[:200])
            return False
        return True


_http_log.addFilter(_QuietClientErrors())


class _Gate:
    """Bodies being read at once: at most `count` of them and `size` bytes (each counts its
    Content-Length, or its model's limit when chunked).  Waiters are served in order."""

    def __init__(self, count: int, size: int):
        self.count, self.size = count, size
        self.busy, self.used = 0, 0
        self._waiting: Deque[list] = collections.deque()

    def _fits(self, n: int) -> bool:
        return self.busy < self.count and self.used + n <= self.size

    def _take(self, n: int) -> None:
        self.busy += 1
        self.used += n

    def release(self, n: int) -> None:
        self.busy -= 1
        self.used -= n
        self._wake()

    def _wake(self) -> None:
        while self._waiting and self._fits(self._waiting[0][0]):
            n, fut = self._waiting.popleft()
            if not fut.done():
                self._take(n)
                fut.set_result(True)

    async def acquire(self, n: int, timeout: float, stop: "asyncio.Future") -> bool:
        """Wait for room for a body of `n` bytes, up to `timeout` seconds or until `stop`
        is done: True when taken (the caller releases it), False otherwise."""
        if not self._waiting and self._fits(n):
            self._take(n)
            return True
        fut = asyncio.get_running_loop().create_future()
        entry = [n, fut]
        self._waiting.append(entry)
        try:
            await asyncio.wait({fut, stop}, timeout=max(0.0, timeout),
                               return_when=asyncio.FIRST_COMPLETED)
        except BaseException:
            if fut.done() and not fut.cancelled():
                self.release(n)
            raise
        finally:
            if not fut.done():
                fut.cancel()
                try:
                    self._waiting.remove(entry)
                except ValueError:
                    pass
                self._wake()                  # a large body first in line may have left
        return fut.done() and not fut.cancelled()


class _Served:
    """One model being served: its pool, protocol spec, queue bound and statistics."""

    def __init__(self, name: str, model, owned: bool, workers: int, queue: int,
                 max_bytes: Optional[int]):
        from rknnx.pool import Pool

        self.name, self.model, self.owned = name, model, owned
        self.spec = ModelSpec(name, model)
        # requests admitted and not finished: at most `limit`, and the pool's queue holds
        # them all, so Pool.submit never blocks the event loop
        self.limit = queue + workers
        self.pool = Pool(model, workers=workers, queue_size=self.limit)
        self.in_flight = 0
        self.max_bytes = max_bytes if max_bytes is not None else \
            max(1 << 20, 8 * self.spec.input_bytes + (64 << 10))
        self.stats = {k: [0, 0] for k in ("success", "fail", "compute_infer")}
        self.rejected = 0
        self.last_inference = 0

    def count(self, key: str, ns: int) -> None:
        s = self.stats[key]
        s[0] += 1
        s[1] += ns

    def busy_error(self) -> ProtocolError:
        self.rejected += 1
        e = ProtocolError(503, f"model {self.name!r} is busy: {self.in_flight} requests in "
                               f"flight, its queue is full; retry later")
        e.headers = {"Retry-After": "1"}
        return e


class _Conn(asyncio.Protocol):
    """One connection: aiohttp's protocol (its request handler, which does the HTTP),
    and what the drain needs to know of it: when bytes last arrived, how many requests
    are in a handler, when the last answer left.  Every call is passed on unchanged."""

    def __init__(self, handler, conns: Dict[Any, "_Conn"], now: float):
        self.handler, self._conns = handler, conns
        self.transport: Optional[asyncio.Transport] = None
        self.busy = 0                       # requests of this connection in a handler
        self.quiet_since = now              # last byte received, answer given, or made

    def connection_made(self, transport) -> None:
        self.transport = transport
        self._conns[transport] = self
        self.handler.connection_made(transport)

    def data_received(self, data: bytes) -> None:
        self.quiet_since = asyncio.get_running_loop().time()
        self.handler.data_received(data)

    def eof_received(self):
        return self.handler.eof_received()

    def connection_lost(self, exc) -> None:
        self._conns.pop(self.transport, None)
        self.handler.connection_lost(exc)

    def pause_writing(self) -> None:
        self.handler.pause_writing()

    def resume_writing(self) -> None:
        self.handler.resume_writing()

    def idle_for(self, now: float, since: float) -> float:
        """Seconds this connection has been idle, counted from `since` at the earliest: no
        request in a handler, no byte received or unread in the kernel, no answer left to
        write (-1 while it is not idle)."""
        t = self.transport
        if self.busy or t is None or t.is_closing() or t.get_write_buffer_size():
            return -1.0
        if _unread(t):
            return -1.0
        return now - max(since, self.quiet_since)


def _unread(transport) -> int:
    """Bytes received by the kernel on `transport`'s socket that the event loop has not
    read yet (0 where the platform cannot say)."""
    sock = transport.get_extra_info("socket")
    if sock is None or _fcntl is None:
        return 0
    buf = bytearray(4)
    try:
        _fcntl.ioctl(sock.fileno(), _termios.FIONREAD, buf)
    except OSError:
        return 0
    return int.from_bytes(buf, sys.byteorder)


try:
    import fcntl as _fcntl
    import termios as _termios
except ImportError:                  # pragma: no cover - not POSIX
    _fcntl = _termios = None


class _SockFilter(ctypes.Structure):          # struct sock_filter (linux/filter.h)
    _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8),
                ("k", ctypes.c_uint32)]


class _SockFprog(ctypes.Structure):           # struct sock_fprog
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_SockFilter))]


#: a classic BPF socket filter that drops TCP segments with SYN set and ACK clear (the
#: first packet of a handshake) and keeps every other: on a listening socket, no new
#: connection starts while the handshakes under way complete into the accept queue.  A
#: socket filter sees the packet from its TCP header on: byte 13 holds the flags.
_REFUSE_SYN = (
    (0x30, 0, 0, 13),            # ldb [13]          (BPF_LD | BPF_B | BPF_ABS)
    (0x54, 0, 0, 0x12),          # and #SYN|ACK      (BPF_ALU | BPF_AND | BPF_K)
    (0x15, 1, 0, 0x02),          # jeq #SYN, drop    (BPF_JMP | BPF_JEQ | BPF_K)
    (0x06, 0, 0, 0xFFFFFFFF),    # ret #-1: keep the whole packet (BPF_RET | BPF_K)
    (0x06, 0, 0, 0),             # drop: ret #0
)
_SO_ATTACH_FILTER = 26           # asm-generic/socket.h, as on x86, ARM, AArch64


def _refuse_new_handshakes(sock) -> bool:
    """Make the listening socket `sock` take no new connection (its handshakes under way
    still complete): True where done (Linux), False where the platform cannot."""
    if not sys.platform.startswith("linux"):
        return False
    insns = (_SockFilter * len(_REFUSE_SYN))(*(_SockFilter(*i) for i in _REFUSE_SYN))
    prog = _SockFprog(len(_REFUSE_SYN), ctypes.cast(insns, ctypes.POINTER(_SockFilter)))
    try:
        sock.setsockopt(socket.SOL_SOCKET, _SO_ATTACH_FILTER, bytes(prog))
    except OSError:
        return False
    return True


def _accept_queued(sock) -> List[socket.socket]:
    """The connections the kernel has queued on the listening socket `sock`, accepted."""
    own = sock.dup()                           # the same socket: closed right after
    accepted = []
    try:
        own.setblocking(False)
        while True:
            try:
                conn, _ = own.accept()
            except (BlockingIOError, InterruptedError):
                break
            except OSError as e:           # e.g. EMFILE: what is left is reset on close
                _log.warning("rknnx serve: cannot accept a queued connection (%s)", e)
                break
            conn.setblocking(False)
            accepted.append(conn)
    finally:
        own.close()                        # the duplicate only; the listener closes next
    return accepted


def _number(name: str, value: Any, *, low: float, low_ok: bool = True,
            integer: bool = False) -> Any:
    """`value` checked: a finite number (an int when `integer`) >= `low` (> when not
    `low_ok`); ValueError naming `name` otherwise."""
    kinds = (int,) if integer else (int, float)
    ok = (isinstance(value, kinds) and not isinstance(value, bool) and math.isfinite(value)
          and (value > low or (low_ok and value == low)))
    if not ok:
        kind = "an int" if integer else "a finite number"
        raise ValueError(f"{name} must be {kind} {'>=' if low_ok else '>'} {low:g}; "
                         f"got {value!r}")
    return value


class Server:
    """A KServe v2 / Triton HTTP server of RKNN models (see the module's docstring).

    Parameters
    ----------
    models : mapping name -> model, or sequence of models
        Each model is a path, the model's bytes or an open :class:`rknnx.Model`; names come
        from the mapping, else from the file name without ``.rknn``.  Models the server
        opens it also closes; a ``Model`` given open stays the caller's.
    host : str
        The address to listen on (default ``127.0.0.1``: this machine only).
    port : int
        The TCP port, 0..65535 (default 8000; 0 chooses a free one: see :attr:`port`).
    workers : int, optional
        Pool workers per model (default :func:`default_workers` of the model's chip).
    queue : int
        Requests waiting per model beyond the ones running; more get 503 (default 32).
    max_request_bytes : int, optional
        The largest request body, after its Content-Encoding is decoded (413 beyond it).
        Default per model: 8 times its inputs at float32 (JSON text of a frame included),
        at least 1 MiB.
    shutdown_timeout : float
        Seconds the drain on :meth:`stop` may last (>= 0, default 30).
    body_timeout : float
        Seconds a request's body may take to arrive, from its headers on (> 0, default
        30; 408 after).
    max_reading : int
        Bodies read at once (default 64); more wait for their turn within `body_timeout`
        (503 if it does not come).
    max_reading_bytes : int, optional
        Bytes of the bodies read at once (each counts its Content-Length, or its model's
        `max_request_bytes` when chunked).  Default twice the largest `max_request_bytes`,
        at least 32 MiB.
    keepalive_timeout : float
        Seconds an idle connection stays open; also how long a connection may take to send
        a request's headers (default 75).

    Examples
    --------
    >>> server = Server({"classifier": "classifier.rknn"})    # doctest: +SKIP
    >>> server.run()          # until SIGINT/SIGTERM              # doctest: +SKIP

    Raises
    ------
    ValueError
        No models, a name given twice or not usable in a URL, a number out of its range.
    """

    def __init__(self, models: Union[Mapping[str, Any], Sequence[Any]], *,
                 host: str = "127.0.0.1", port: int = DEFAULT_PORT,
                 workers: Optional[int] = None, queue: int = 32,
                 max_request_bytes: Optional[int] = None, shutdown_timeout: float = 30.0,
                 body_timeout: float = 30.0, max_reading: int = 64,
                 max_reading_bytes: Optional[int] = None, keepalive_timeout: float = 75.0):
        items = list(models.items()) if isinstance(models, Mapping) else \
            [(_name_of(m), m) for m in models]
        if not items:
            raise ValueError("no models to serve")
        names = [n for n, _ in items]
        for n in names:
            check_name(n)
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"model name(s) {dup} given twice; name them (name=path)")
        if isinstance(queue, bool) or not isinstance(queue, int) or queue < 0:
            raise ValueError(f"queue must be an int >= 0; got {queue!r}")
        _number("port", port, low=0, integer=True)
        if port > 65535:
            raise ValueError(f"port must be 0..65535; got {port!r}")
        if workers is not None:
            _number("workers", workers, low=1, integer=True)
        if max_request_bytes is not None:
            _number("max_request_bytes", max_request_bytes, low=1, integer=True)
        if max_reading_bytes is not None:
            _number("max_reading_bytes", max_reading_bytes, low=1, integer=True)
        _number("max_reading", max_reading, low=1, integer=True)
        _number("shutdown_timeout", shutdown_timeout, low=0)
        _number("body_timeout", body_timeout, low=0, low_ok=False)
        _number("keepalive_timeout", keepalive_timeout, low=0, low_ok=False)
        self._items = items
        self.host, self._port = host, int(port)
        self._workers, self._queue = workers, queue
        self._max_bytes = max_request_bytes
        self.shutdown_timeout = float(shutdown_timeout)
        self.body_timeout = float(body_timeout)
        self.keepalive_timeout = float(keepalive_timeout)
        self._max_reading, self._max_reading_bytes = max_reading, max_reading_bytes
        self._served: Dict[str, _Served] = {}
        self._runner: Optional[web.AppRunner] = None
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self._accepting = False
        self._limit = 0
        self._gate: Optional[_Gate] = None
        self._stopping: Optional[asyncio.Future] = None  # done once shutdown begins
        self._abort: Optional[asyncio.Future] = None     # done when the drain's time is up
        self._active = 0                                 # requests in a handler now
        self._listener: Optional[asyncio.AbstractServer] = None
        self._conns: Dict[Any, _Conn] = {}               # transport -> its connection
        self._t_stop = 0.0                               # when shutdown began
        self._unlisten: Optional[asyncio.TimerHandle] = None
        self._adopting: set = set()                      # queued connections being made
        self._factory = None

    # -- properties -------------------------------------------------------------------------
    @property
    def port(self) -> int:
        """The port listened on (the one chosen when the server was given 0)."""
        return self._port

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self._port}"

    @property
    def models(self) -> Dict[str, Any]:
        """name -> the :class:`rknnx.Model` served (after :meth:`start`)."""
        return {n: s.model for n, s in self._served.items()}

    def describe(self) -> List[str]:
        """One line per model: name, inputs, workers, queue, request limit."""
        lines = []
        for n, s in self._served.items():
            ins = ", ".join(f"{t.name} {t.datatype}{t.shape}" for t in s.spec.inputs)
            lines.append(f"{n}: {ins}; {s.pool.workers} workers, queue {s.limit - s.pool.workers}"
                         f", requests up to {s.max_bytes / (1 << 20):.1f} MiB")
        return lines

    # -- lifetime ---------------------------------------------------------------------------
    def _open(self) -> None:
        from rknnx.model import Model

        try:
            for name, source in self._items:
                owned = not isinstance(source, Model)
                model = Model(source) if owned else source
                try:
                    workers = self._workers or default_workers(model.chip)
                    self._served[name] = _Served(name, model, owned, workers, self._queue,
                                                 self._max_bytes)
                except BaseException:
                    if owned:
                        model.close()
                    raise
        except BaseException:
            self._close_models()
            raise

    def _close_models(self) -> None:
        for s in self._served.values():
            s.pool.shutdown(wait=True, cancel_pending=True)
            if s.owned:
                s.model.close()
        self._served.clear()

    async def start(self) -> None:
        """Open the models and their pools and start listening (in the running loop)."""
        if self._runner is not None:
            raise RuntimeError("the server is already started")
        self._loop = loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, self._open)
        self._limit = max(s.max_bytes for s in self._served.values())
        budget = self._max_reading_bytes or max(32 << 20, 2 * self._limit)
        self._gate = _Gate(self._max_reading, max(budget, self._limit))
        self._stopping, self._abort = loop.create_future(), loop.create_future()
        self._active = 0
        app = web.Application(client_max_size=self._limit, middlewares=[self._errors])
        self._routes(app)
        # auto_decompress=False: the body's Content-Encoding is decoded here (_decoded), so
        # that a corrupt or unknown one is a 4xx JSON answer like every other mistake
        # rather than the parser's text/plain; client_max_size limits the bytes received,
        # _decoded what they decode to.  The runner's shutdown_timeout only bounds the
        # last step of the drain (_drain does the waiting).  After an answer sent before
        # its body was read (408, 413, 503), aiohttp reads and drops what the client still
        # sends for lingering_time, so that the answer is not lost to a reset; 2 s, not
        # its 10, so a stalled client holds its connection that much less.
        runner = web.AppRunner(app, shutdown_timeout=min(1.0, self.shutdown_timeout),
                               access_log=None, logger=_http_log, auto_decompress=False,
                               keepalive_timeout=self.keepalive_timeout, lingering_time=2.0)
        self._conns = {}
        try:
            await runner.setup()
            # aiohttp's web.Server (runner.server) is the protocol factory of asyncio's
            # server, as aiohttp's low-level server is run; each of its request handlers
            # is wrapped in a _Conn, which tells the drain when the connection is idle.
            # The listening sockets are asyncio's (every address of the host), closed by
            # the drain itself (_stop_listening) rather than by a site of the runner.
            handlers, conns = runner.server, self._conns
            self._factory = lambda: _Conn(handlers(), conns, loop.time())
            self._listener = await loop.create_server(self._factory, self.host,
                                                      self._port, backlog=128)
        except BaseException:
            await runner.cleanup()
            await loop.run_in_executor(None, self._close_models)
            raise
        self._runner = runner
        if self._listener.sockets:
            self._port = self._listener.sockets[0].getsockname()[1]
        self._accepting = True

    def begin_shutdown(self) -> None:
        """Begin the drain: from now on ``ready`` answers 503, new inference requests get
        503 with ``Connection: close``, and the server stops listening (the connections
        the kernel has queued are accepted and answered).  :meth:`stop` calls it; the
        signal handler of :meth:`run` calls it at once.  Call it in the server's loop."""
        if self._stopping is None or self._stopping.done():
            return
        self._accepting = False
        self._t_stop = self._loop.time()
        self._stopping.set_result(None)
        if self._listener is None:
            return
        # no new connection from now on; the handshakes under way get a moment to land in
        # the accept queue (asyncio accepts them as usual), then the queue is taken whole
        # and the socket closes.  Where no filter can refuse new handshakes, that happens
        # at once: a handshake completing between the last accept and the close is the
        # one connection the kernel resets (a window of microseconds).
        refused = [_refuse_new_handshakes(sock) for sock in self._listener.sockets]
        grace = min(_HANDSHAKE_GRACE, self.shutdown_timeout)
        if all(refused) and grace > 0:
            self._unlisten = self._loop.call_later(grace, self._stop_listening)
        else:
            self._stop_listening()

    def _stop_listening(self) -> None:
        """Accept what the kernel queued on the listening sockets, then close them (in one
        step of the loop: no connection is queued in between)."""
        listener, self._listener = self._listener, None
        if self._unlisten is not None:
            self._unlisten.cancel()
            self._unlisten = None
        if listener is None:
            return
        for sock in listener.sockets:
            for conn in _accept_queued(sock):
                task = asyncio.ensure_future(self._adopt(conn))
                self._adopting.add(task)
                task.add_done_callback(self._adopting.discard)
        listener.close()

    async def _adopt(self, conn: socket.socket) -> None:
        try:
            await self._loop.connect_accepted_socket(self._factory, conn)
        except OSError as e:              # gone already: nothing was received from it
            _log.debug("a queued connection went away: %s", e)
            conn.close()

    async def stop(self) -> None:
        """Drain and stop, in at most ``shutdown_timeout`` seconds: the server stops
        listening (what the kernel queued is accepted), every request that reaches it
        gets an answer (its result if it was admitted, else 503 with ``Connection:
        close``; one still running when the time is up gets 503), a connection closes
        after its answer or once it has been idle for the drain window (a second, within
        the timeout), never while a request arrives on it; then the pools and the models
        the server opened close (a frame on the NPU runs to its end).  A second call
        does nothing."""
        runner, self._runner = self._runner, None
        if runner is None:
            return
        loop = asyncio.get_running_loop()
        self.begin_shutdown()
        deadline = self._t_stop + self.shutdown_timeout
        try:
            await self._drain(deadline)
        finally:
            self._stop_listening()
            # aiohttp's own shutdown: what the time left (idle connections, or ones whose
            # request did not arrive whole) closes; an answer being written gets at most
            # the runner's shutdown_timeout (a second) more
            await runner.cleanup()
            await loop.run_in_executor(None, self._close_models)

    async def _drain(self, deadline: float) -> None:
        loop = asyncio.get_running_loop()
        window = min(_DRAIN_WINDOW, self.shutdown_timeout)
        # until the timeout: every connection closes after its answer (aiohttp closes it:
        # the answer says Connection: close), or here once idle for the window
        while loop.time() < deadline and (self._conns or self._adopting
                                          or self._listener is not None):
            now = loop.time()
            for conn in list(self._conns.values()):
                if conn.idle_for(now, self._t_stop) >= window:
                    conn.transport.close()
            await asyncio.sleep(min(0.02, max(0.0, deadline - now)))
        if not self._abort.done():
            self._abort.set_result(None)     # what still waits for the NPU: 503 now
        end = loop.time() + 0.5
        while self._active and loop.time() < end:
            await asyncio.sleep(0.01)

    def run(self, *, on_ready=None) -> None:
        """Serve until SIGINT or SIGTERM, then drain and stop (the call blocks).
        `on_ready()` is called once the server listens."""
        asyncio.run(self._serve(on_ready))

    async def _serve(self, on_ready) -> None:
        await self.start()
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()

        def on_signal() -> None:
            if stop.is_set():
                _log.warning("rknnx serve: already stopping (%d requests in progress, up to "
                             "%.0f s)", self._active, self.shutdown_timeout)
            self.begin_shutdown()            # ready says 503 from this moment
            stop.set()

        signals = (signal.SIGINT, signal.SIGTERM)
        for sig in signals:
            loop.add_signal_handler(sig, on_signal)
        try:
            if on_ready is not None:
                on_ready()
            await stop.wait()
        finally:
            try:
                await self.stop()
            finally:
                for sig in signals:
                    loop.remove_signal_handler(sig)

    # -- HTTP -------------------------------------------------------------------------------
    def _routes(self, app: "web.Application") -> None:
        r = app.router
        r.add_get("/v2/health/live", self._live)
        r.add_get("/v2/health/ready", self._ready)
        r.add_get("/v2", self._server_metadata)
        r.add_post("/v2/repository/index", self._index)
        for prefix in ("/v2/models/{name}", "/v2/models/{name}/versions/{version}"):
            r.add_get(prefix, self._metadata)
            r.add_get(prefix + "/ready", self._model_ready)
            r.add_get(prefix + "/config", self._config)
            r.add_get(prefix + "/stats", self._stats)
            r.add_post(prefix + "/infer", self._infer, expect_handler=self._expect)

    @web.middleware
    async def _errors(self, request, handler):
        """Every error is ``{"error": reason}`` with its status; during shutdown every
        response closes its connection."""
        self._active += 1
        conn = self._conns.get(request.transport)
        if conn is not None:
            conn.busy += 1
        try:
            response = await self._answer(request, handler)
            if not self._accepting and not _queued(request.protocol):
                response.force_close()
            return response
        finally:
            self._active -= 1
            if conn is not None:
                conn.busy -= 1
                conn.quiet_since = self._loop.time()

    async def _answer(self, request, handler):
        try:
            return await handler(request)
        except ProtocolError as e:
            return _error(e.status, e.message, getattr(e, "headers", None),
                          close=e.status in (408, 413, 415) or getattr(e, "close", False))
        except web.HTTPException as e:
            if e.status < 400:
                raise
            reason = e.text if e.text and not e.text.startswith(f"{e.status}:") else e.reason
            if e.status == 413:
                reason = (f"the request body is larger than this server takes "
                          f"({self._limit} bytes)")
            if e.status == 404:
                reason = f"no such endpoint: {request.method} {_kserve.quoted(request.path)}"
            if e.status == 405:
                reason = f"{request.method} is not allowed on {_kserve.quoted(request.path)}"
            return _error(e.status, reason, e.headers)
        except asyncio.CancelledError:
            raise
        except ConnectionError:          # the client went away: nobody to answer
            _log.debug("client of %s %s went away", request.method, request.path)
            return _error(400, "the client went away", close=True)
        except Exception as e:          # a bug or a runtime failure: 500, server lives on
            _log.exception("error handling %s %s", request.method, request.path)
            return _error(500, f"{type(e).__name__}: {e}")

    def _get(self, request) -> _Served:
        name = request.match_info["name"]
        served = self._served.get(name)
        if served is None:
            raise ProtocolError(404, f"no model {_kserve.quoted(name)}; this server serves "
                                     f"{sorted(self._served)}")
        version = request.match_info.get("version")
        if version is not None and version != served.spec.version:
            raise ProtocolError(404, f"model {name!r} has no version {_kserve.quoted(version)}; "
                                     f"its one version is {served.spec.version!r}")
        return served

    async def _live(self, request):
        return web.Response(status=200)

    async def _ready(self, request):
        if not self._accepting:
            return _error(503, "the server is shutting down")
        return web.Response(status=200)

    async def _server_metadata(self, request):
        from rknnx._version import __version__

        return web.json_response({"name": "rknnx", "version": __version__,
                                  "extensions": ["binary_tensor_data", "model_repository",
                                                 "statistics"]})

    async def _index(self, request):
        return web.json_response([{"name": n, "version": s.spec.version, "state": "READY"
                                   if self._accepting else "UNAVAILABLE"}
                                  for n, s in self._served.items()])

    async def _metadata(self, request):
        return web.json_response(self._get(request).spec.metadata())

    async def _model_ready(self, request):
        self._get(request)
        return await self._ready(request)

    async def _config(self, request):
        return web.json_response(self._get(request).spec.config())

    async def _stats(self, request):
        s = self._get(request)
        stats = {k: {"count": c, "ns": ns} for k, (c, ns) in s.stats.items()}
        return web.json_response({"model_stats": [{
            "name": s.name, "version": s.spec.version, "last_inference": s.last_inference,
            "inference_count": s.stats["success"][0], "execution_count": s.stats["success"][0],
            "inference_stats": stats, "rejected_count": s.rejected,
            "in_flight": s.in_flight}]})

    def _precheck(self, request, *, draining: bool = False) -> _Served:
        """What refuses an inference request from its headers alone (404, 503, 413, 415);
        `draining`: not the 503s (the caller answers the drain's 503 after the body)."""
        served = self._get(request)
        if not self._accepting and not draining:
            raise ProtocolError(503, "the server is shutting down")
        n = request.content_length
        if n is not None and n > served.max_bytes:
            raise ProtocolError(413, f"the request body of {n} bytes is larger than model "
                                     f"{served.name!r} takes ({served.max_bytes} bytes)")
        encoding = request.headers.get("Content-Encoding", "identity").strip().lower()
        if encoding not in _ENCODINGS:
            raise ProtocolError(415, f"Content-Encoding {_kserve.quoted(encoding)} is not "
                                     f"supported; send identity, gzip or deflate")
        if self._accepting and served.in_flight >= served.limit:
            raise served.busy_error()
        return served

    async def _expect(self, request):
        """``Expect: 100-continue``: refuse from the headers (413 for a body too large, 503
        while shutting down or busy, 404, 415) before the client sends the body; else
        the interim 100 Continue (as aiohttp's documentation shows)."""
        if request.version != HttpVersion11:
            return None
        if request.headers.get("Expect", "").lower() != "100-continue":
            return _error(417, f"unknown Expect: {_kserve.quoted(request.headers['Expect'])}",
                          close=True)
        try:
            self._precheck(request)
        except ProtocolError as e:
            return _error(e.status, e.message, getattr(e, "headers", None), close=True)
        if request.transport is not None:
            request.transport.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        return None

    async def _read(self, request, served: _Served, deadline: float) -> bytes:
        """The request's body, read within `deadline` (408), interrupted by shutdown (503),
        at most the model's `max_bytes` (413)."""
        reader = request.clone(client_max_size=served.max_bytes)
        task = asyncio.ensure_future(reader.read())
        try:
            await asyncio.wait({task, self._stopping}, timeout=max(0.0, deadline -
                                                                   self._loop.time()),
                               return_when=asyncio.FIRST_COMPLETED)
            if not task.done() and self._stopping.done():
                await self._while_arriving(request, task, deadline)
        finally:
            if not task.done():
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
        if task.cancelled():
            if self._stopping.done():
                raise _closing(ProtocolError(503, "the server is shutting down"))
            raise ProtocolError(408, f"the request body did not arrive within "
                                     f"{self.body_timeout:g} s")
        try:
            return task.result()
        except web.HTTPRequestEntityTooLarge:
            raise ProtocolError(413, f"the request body is larger than model "
                                     f"{served.name!r} takes ({served.max_bytes} bytes)") \
                from None
        except (web.RequestPayloadError, HttpProcessingError) as e:   # the client's framing
            raise _closing(ProtocolError(400, f"the request body is malformed "
                                              f"({_one_line(e)})")) from None

    async def _while_arriving(self, request, task: "asyncio.Future", deadline: float) -> None:
        """During the drain, wait for `task` (taking the request's body) as long as the
        body keeps arriving: until it is done, the connection has received nothing for
        the drain window, `deadline` (the body's) or the drain's end.  A request is not
        cut off while it is being written."""
        conn = self._conns.get(request.transport)
        window = min(_DRAIN_WINDOW, self.shutdown_timeout)
        while not task.done() and not self._abort.done():
            now = self._loop.time()
            quiet = max(self._t_stop, conn.quiet_since if conn is not None else 0.0)
            end = min(deadline, quiet + window)
            if now >= end:
                return
            await asyncio.wait({task, self._abort}, timeout=end - now,
                               return_when=asyncio.FIRST_COMPLETED)

    async def _refuse_draining(self, request, deadline: float):
        """The drain's 503 to an inference request it did not admit, once its body has
        arrived (or stopped arriving): the client is not writing when its connection
        closes."""
        task = asyncio.ensure_future(_discard(request.content))
        try:
            await self._while_arriving(request, task, deadline)
        finally:
            whole = task.done()
            if not whole:
                task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        # the answer closes the connection unless requests are pipelined behind it (the
        # middleware decides); a body that stopped arriving closes it in any case
        e = ProtocolError(503, "the server is shutting down")
        raise e if whole else _closing(e)

    async def _infer(self, request):
        t0 = time.perf_counter_ns()
        deadline = self._loop.time() + self.body_timeout
        served = self._precheck(request, draining=True)
        if not self._accepting:
            await self._refuse_draining(request, deadline)
        # the body is read before the request takes a place in its model's queue, so a
        # client that sends its body slowly (or never) holds no place: it holds one of the
        # `max_reading` places of bodies being read, for at most `body_timeout`
        n = request.content_length
        need = min(n if n is not None else served.max_bytes, served.max_bytes)
        if not await self._gate.acquire(need, deadline - self._loop.time(), self._stopping):
            if self._stopping.done():
                await self._refuse_draining(request, deadline)
            raise ProtocolError(503, f"the server is busy reading {self._gate.busy} other "
                                     f"request bodies; retry later")
        handed = admitted = False
        try:
            body = await self._read(request, served, deadline)
            encoding = request.headers.get("Content-Encoding", "identity").strip().lower()
            if _ENCODINGS[encoding] is not None:
                if len(body) > _BIG_JSON:
                    body = await self._loop.run_in_executor(
                        None, _decoded, body, encoding, served)
                else:
                    body = _decoded(body, encoding, served)
            if not self._accepting:        # the body arrived whole: no need to close
                raise ProtocolError(503, "the server is shutting down")
            if served.in_flight >= served.limit:
                raise served.busy_error()
            served.in_flight += 1         # the request's place, from here to its answer
            admitted = True
            header = request.headers.get(HEADER)
            json_bytes = len(body) if header is None else _int_or(header, len(body))
            if json_bytes > _BIG_JSON:
                req = await self._loop.run_in_executor(
                    None, _kserve.decode_request, body, header, served.spec)
            else:
                req = _kserve.decode_request(body, header, served.spec)
            del body
            try:
                future = served.pool.submit(req.inputs, raw=req.raw)
            except (ValueError, TypeError, KeyError) as e:
                raise ProtocolError(400, _one_line(e)) from None
            except RuntimeError as e:      # the pool is shut down
                raise _closing(ProtocolError(503, f"model {served.name!r} is not taking "
                                                  f"requests ({e})")) from None
            t1 = time.perf_counter_ns()
            handed = True                 # the future's callback frees the place
            future.add_done_callback(self._release_later(served, t1))
        except ProtocolError:
            served.count("fail", time.perf_counter_ns() - t0)
            raise
        finally:
            self._gate.release(need)
            if admitted and not handed:
                served.in_flight -= 1
        try:
            wrapped = asyncio.wrap_future(future)
            await asyncio.wait({wrapped, self._abort}, return_when=asyncio.FIRST_COMPLETED)
            if not wrapped.done():
                # the drain's time is up: the frame runs to its end on the NPU, unanswered
                wrapped.cancel()
                raise _closing(ProtocolError(503, f"the server is shutting down and this "
                                                  f"request did not finish within "
                                                  f"{self.shutdown_timeout:g} s"))
            outputs = wrapped.result()
            if sum(outputs[i].size for i, binary in req.outputs if not binary) > _BIG_OUTPUT:
                body, headers = await self._loop.run_in_executor(
                    None, _kserve.encode_response, served.spec, req, outputs)
            else:
                body, headers = _kserve.encode_response(served.spec, req, outputs)
            served.count("success", time.perf_counter_ns() - t0)
            served.last_inference = int(time.time() * 1000)
            return web.Response(body=body, headers=headers)
        except ProtocolError:
            served.count("fail", time.perf_counter_ns() - t0)
            raise
        except Exception as e:
            served.count("fail", time.perf_counter_ns() - t0)
            from rknnx.errors import RKNNError

            if isinstance(e, RKNNError):
                raise ProtocolError(500, f"the runtime failed: {_one_line(e)}") from None
            raise

    def _release_later(self, served: _Served, t_submit: int):
        loop = self._loop

        def release(ok: bool, ns: int) -> None:
            served.in_flight -= 1
            if ok:
                served.count("compute_infer", ns)

        def done(future: Future) -> None:      # in a pool worker (or here, if cancelled)
            ok = not future.cancelled() and future.exception() is None
            try:
                loop.call_soon_threadsafe(release, ok, time.perf_counter_ns() - t_submit)
            except RuntimeError:               # the loop is closed: nothing to count for
                pass
        return done


def _queued(protocol) -> int:
    """Requests parsed and queued on this connection behind the one being answered.

    aiohttp has no public count of them; its request handler keeps them in ``_messages``.
    During shutdown a response closes its connection only when none is queued, so that
    every pipelined request whose headers arrived is answered too.  Should a later aiohttp
    drop the attribute, this says 0: the response closes the connection and the requests
    pipelined behind it go unanswered, which HTTP/1.1 lets clients retry (RFC 9112, 9.3.2).
    """
    return len(getattr(protocol, "_messages", ()) or ())


async def _discard(stream) -> None:
    """Read `stream` (a request's body) to its end, keeping nothing."""
    try:
        while await stream.readany():
            pass
    except Exception:                  # a malformed or broken body: nothing more to read
        pass


def _closing(e: ProtocolError) -> ProtocolError:
    e.close = True
    return e


def _decoded(body: bytes, encoding: str, served: _Served) -> bytes:
    """`body` decoded from its gzip or deflate Content-Encoding: 400 when corrupt, 413 when
    it decodes to more than the model's `max_bytes` (decoding stops there: a small bomb of
    zeros costs no more memory than the limit)."""
    limit = served.max_bytes
    out: List[bytes] = []
    size = 0
    data = body
    wbits = _ENCODINGS[encoding]
    zlib_header = len(data) >= 2 and data[0] & 0x0F == 8 and ((data[0] << 8) | data[1]) % 31 == 0
    if encoding == "deflate" and not zlib_header:
        wbits = -zlib.MAX_WBITS            # raw deflate, as some clients send it
    try:
        while data:
            d = zlib.decompressobj(wbits)
            chunk = d.decompress(data, limit + 1 - size)
            size += len(chunk)
            out.append(chunk)
            if size > limit:
                raise ProtocolError(413, f"the request body decodes to more than model "
                                         f"{served.name!r} takes ({limit} bytes)")
            if not d.eof:
                raise ProtocolError(400, f"the {encoding} request body is truncated")
            data = d.unused_data if wbits == 16 + zlib.MAX_WBITS else b""
    except zlib.error as e:
        raise ProtocolError(400, f"the request body is not valid {encoding} ({e})") from None
    return b"".join(out)


def _error(status: int, message: str, headers=None, close: bool = False):
    h = {"Content-Type": "application/json"}
    if headers:
        h.update({k: v for k, v in dict(headers).items() if k in ("Retry-After", "Allow")})
    response = web.Response(status=status, body=_kserve.error_body(message), headers=h)
    if close:
        response.force_close()
    return response


def _int_or(text: str, default: int) -> int:
    try:
        return int(text)
    except ValueError:
        return default


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    text = text.splitlines()[0]
    return text.strip("'\"") if isinstance(exc, KeyError) else text


def _name_of(source: Any) -> str:
    if isinstance(source, (str, os.PathLike)):
        base = os.path.basename(os.fspath(source))
        return base[:-5] if base.endswith(".rknn") else base
    path = getattr(source, "path", None)
    if path:
        return _name_of(path)
    raise ValueError("a model given as bytes (or a Model without a file) needs a name: "
                     "pass a mapping {name: model}")


def __dir__():
    return sorted(__all__)
