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
frames gets 503 at once (clients retry; memory stays bounded), a body beyond
``max_request_bytes`` gets 413, a malformed request 400 with the reason (``{"error":
...}``), an unknown model 404.  SIGINT/SIGTERM drain: the listening socket closes, the
requests in flight finish (up to ``shutdown_timeout``), then the pools and models close.
The server binds 127.0.0.1 unless told otherwise: it has no authentication.

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
import logging
import os
import signal
import time
from concurrent.futures import Future
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

try:
    from aiohttp import web
except ImportError as _exc:  # pragma: no cover - exercised in a subprocess by the tests
    raise ImportError("rknnx.serve needs aiohttp: pip install 'rknnx[serve]'") from _exc

from rknnx import _kserve
from rknnx._kserve import HEADER, ModelSpec, ProtocolError

__all__ = ["Server", "DEFAULT_PORT", "default_workers"]

#: the port Triton and KServe servers use for HTTP
DEFAULT_PORT = 8000
_NPU_CORES = {"RK3588": 3, "RK3576": 2}
_log = logging.getLogger("rknnx.serve")
#: a JSON header larger than this is parsed off the event loop, in a thread
_BIG_JSON = 256 * 1024
#: JSON outputs of more elements than this are written off the event loop
_BIG_OUTPUT = 100_000


def default_workers(chip: Optional[str]) -> int:
    """Pool workers per model by default: one per NPU core (3 on RK3588, 2 on RK3576), and 2
    on one-core chips (one converts a frame on the CPU while the other runs)."""
    return max(2, _NPU_CORES.get(str(chip), 1))


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
        The TCP port (default 8000; 0 chooses a free one: see :attr:`port`).
    workers : int, optional
        Pool workers per model (default :func:`default_workers` of the model's chip).
    queue : int
        Requests waiting per model beyond the ones running; more get 503 (default 32).
    max_request_bytes : int, optional
        The largest request body (413 beyond it).  Default per model: 8 times its inputs at
        float32 (JSON text of a frame included), at least 1 MiB.
    shutdown_timeout : float
        Seconds :meth:`stop` lets the requests in flight finish.

    Examples
    --------
    >>> server = Server({"classifier": "classifier.rknn"})    # doctest: +SKIP
    >>> server.run()          # until SIGINT/SIGTERM              # doctest: +SKIP

    Raises
    ------
    ValueError
        No models, a name given twice or not usable in a URL, `queue` < 0.
    """

    def __init__(self, models: Union[Mapping[str, Any], Sequence[Any]], *,
                 host: str = "127.0.0.1", port: int = DEFAULT_PORT,
                 workers: Optional[int] = None, queue: int = 32,
                 max_request_bytes: Optional[int] = None, shutdown_timeout: float = 30.0):
        items = list(models.items()) if isinstance(models, Mapping) else \
            [(_name_of(m), m) for m in models]
        if not items:
            raise ValueError("no models to serve")
        names = [n for n, _ in items]
        for n in names:
            if not n or not all(c.isalnum() or c in "-_." for c in n):
                raise ValueError(f"model name {n!r}: use letters, digits, '-', '_', '.'")
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"model name(s) {dup} given twice; name them (name=path)")
        if isinstance(queue, bool) or not isinstance(queue, int) or queue < 0:
            raise ValueError(f"queue must be an int >= 0; got {queue!r}")
        self._items = items
        self.host, self._port = host, int(port)
        self._workers, self._queue = workers, queue
        self._max_bytes = max_request_bytes
        self.shutdown_timeout = float(shutdown_timeout)
        self._served: Dict[str, _Served] = {}
        self._runner: Optional[web.AppRunner] = None
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self._accepting = False
        self._limit = 0

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
        self._loop = asyncio.get_running_loop()
        await self._loop.run_in_executor(None, self._open)
        self._limit = max(s.max_bytes for s in self._served.values())
        app = web.Application(client_max_size=self._limit, middlewares=[self._errors])
        self._routes(app)
        runner = web.AppRunner(app, shutdown_timeout=self.shutdown_timeout, access_log=None)
        try:
            await runner.setup()
            site = web.TCPSite(runner, self.host, self._port)
            await site.start()
        except BaseException:
            await runner.cleanup()
            await self._loop.run_in_executor(None, self._close_models)
            raise
        self._runner = runner
        server = getattr(site, "_server", None)
        if server is not None and server.sockets:
            self._port = server.sockets[0].getsockname()[1]
        self._accepting = True

    async def stop(self) -> None:
        """Drain and stop: refuse new requests (503, and ``ready`` says no), stop listening,
        let the requests in flight finish (up to ``shutdown_timeout``), close the pools and
        the models the server opened.  A second call does nothing."""
        runner, self._runner = self._runner, None
        if runner is None:
            return
        self._accepting = False
        await runner.cleanup()            # stop listening; wait for the handlers in flight
        await asyncio.get_running_loop().run_in_executor(None, self._close_models)

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
                busy = sum(s.in_flight for s in self._served.values())
                _log.warning("rknnx serve: already stopping (%d requests in flight, up to "
                             "%.0f s)", busy, self.shutdown_timeout)
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
            r.add_post(prefix + "/infer", self._infer)

    @web.middleware
    async def _errors(self, request, handler):
        """Every error is ``{"error": reason}`` with its status."""
        try:
            return await handler(request)
        except ProtocolError as e:
            return _error(e.status, e.message)
        except web.HTTPException as e:
            if e.status < 400:
                raise
            reason = e.text if e.text and not e.text.startswith(f"{e.status}:") else e.reason
            if e.status == 413:
                reason = (f"the request body is larger than this server takes "
                          f"({self._limit} bytes)")
            if e.status == 404:
                reason = f"no such endpoint: {request.method} {request.path}"
            if e.status == 405:
                reason = f"{request.method} is not allowed on {request.path}"
            return _error(e.status, reason, e.headers)
        except asyncio.CancelledError:
            raise
        except Exception as e:          # a bug or a runtime failure: 500, server lives on
            _log.exception("error handling %s %s", request.method, request.path)
            return _error(500, f"{type(e).__name__}: {e}")

    def _get(self, request) -> _Served:
        name = request.match_info["name"]
        served = self._served.get(name)
        if served is None:
            raise ProtocolError(404, f"no model {name!r}; this server serves "
                                     f"{sorted(self._served)}")
        version = request.match_info.get("version")
        if version is not None and version != served.spec.version:
            raise ProtocolError(404, f"model {name!r} has no version {version!r}; its one "
                                     f"version is {served.spec.version!r}")
        return served

    async def _live(self, request):
        return web.Response(status=200)

    async def _ready(self, request):
        if not self._accepting:
            return _error(503, "the server is shutting down")
        return web.Response(status=200)

    async def _server_metadata(self, request):
        from rknnx import __version__

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

    async def _infer(self, request):
        t0 = time.perf_counter_ns()
        served = self._get(request)
        if not self._accepting:
            raise ProtocolError(503, "the server is shutting down")
        if served.in_flight >= served.limit:
            served.rejected += 1
            return _error(503, f"model {served.name!r} is busy: {served.in_flight} requests in "
                               f"flight, its queue is full; retry later",
                          {"Retry-After": "1"})
        served.in_flight += 1             # the slot is held from here (the body counts too)
        handed = False
        try:
            if request.content_length is not None and request.content_length > served.max_bytes:
                raise ProtocolError(413, f"the request body of {request.content_length} bytes "
                                         f"is larger than model {served.name!r} takes "
                                         f"({served.max_bytes} bytes)")
            body = await request.read()
            if len(body) > served.max_bytes:
                raise ProtocolError(413, f"the request body of {len(body)} bytes is larger "
                                         f"than model {served.name!r} takes "
                                         f"({served.max_bytes} bytes)")
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
                raise ProtocolError(503, f"model {served.name!r} is not taking requests "
                                         f"({e})") from None
            t1 = time.perf_counter_ns()
            handed = True                 # the future's callback frees the slot
            future.add_done_callback(self._release_later(served, t1))
            outputs = await asyncio.wrap_future(future)
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
        finally:
            if not handed:
                served.in_flight -= 1

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


def _error(status: int, message: str, headers=None):
    h = {"Content-Type": "application/json"}
    if headers:
        h.update({k: v for k, v in dict(headers).items() if k in ("Retry-After", "Allow")})
    return web.Response(status=status, body=_kserve.error_body(message), headers=h)


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
