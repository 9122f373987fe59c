"""``rknnx.ray``: spread RKNN inference over a cluster of boards with Ray.

Each board joins the cluster as a node that advertises its NPU as a custom resource
(``ray start --address=HEAD:6379 --resources='{"rknpu": 3}'`` on an RK3588), and work that
asks for ``rknpu`` lands on boards (docs/serving.md shows the set-up):

- :class:`Predictor` is a callable class for Ray Data's ``map_batches``: one
  :class:`rknnx.Model` (or a :class:`rknnx.Pool` of it, ``workers=``) per actor, the
  batch's columns fed to the model's inputs, one column per output::

      ds.map_batches(rknnx.ray.Predictor, fn_constructor_kwargs={"model": "yolo.rknn"},
                     concurrency=6, resources={"rknpu": 1}, batch_size=16)

- :func:`deployment` is a Ray Serve application of one model: replicas on the boards, the
  KServe v2 / Triton protocol over HTTP at ``/v2/models/<name>`` (the same requests as
  ``rknnx serve``), and ``handle.infer.remote(*arrays)`` from Python.

A model is a path (the file must be on every board that runs it) or the model's bytes
(shipped through Ray's object store).  On a PC the actors run on the CPU emulator, as rknnx
does everywhere off a board.  It is the ``ray`` extra: ``pip install "rknnx[ray]"``.
"""

from __future__ import annotations

import asyncio
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

import numpy as np

try:
    import ray  # noqa: F401  (the extra this module is for; serve is imported when used)
except ImportError as _exc:  # pragma: no cover - exercised in a subprocess by the tests
    raise ImportError("rknnx.ray needs Ray: pip install 'rknnx[ray]' "
                      "(ray[data,serve])") from _exc

__all__ = ["Predictor", "ModelDeployment", "deployment", "RESOURCE"]

#: the custom resource a board advertises per NPU core (``ray start --resources``)
RESOURCE = "rknpu"

ModelSource = Union[str, bytes, Any]


def _open(model: ModelSource, workers: int, queue_size: Optional[int], model_kwargs):
    from rknnx.model import Model
    from rknnx.pool import Pool

    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValueError(f"workers must be an int >= 1; got {workers!r}")
    m = Model(model, **model_kwargs)
    try:
        pool = Pool(m, workers=workers, queue_size=queue_size) if workers > 1 or queue_size \
            else None
    except BaseException:
        m.close()
        raise
    return m, pool


class Predictor:
    """A callable class for ``ray.data.Dataset.map_batches``: the model on every row.

    Parameters
    ----------
    model : str or bytes
        The ``.rknn`` file (on every node that runs an actor) or its bytes.
    workers : int
        1 (default): one context, rows run one after the other.  N > 1: a
        :class:`rknnx.Pool` of N contexts sharing the weights (one actor per board with
        ``resources={"rknpu": 3}`` and ``workers=3`` loads the weights once per board).
    raw : bool
        Outputs in the model's own types (e.g. int8) instead of float32.
    input_columns : mapping input name -> column, or sequence of columns, optional
        Which column feeds which input.  Default: a batch of one column feeds a one-input
        model; otherwise each input is fed by the column of its name.
    data_format : {"nhwc", "nchw"}, optional
        The layout of 4-D rows, when the shape leaves it ambiguous.
    **model_kwargs
        For :class:`rknnx.Model` (``core_mask``, ``flags``).

    Notes
    -----
    A row is one frame without the model's leading batch axis of 1 (a ``[1,224,224,3]``
    input takes rows of ``[224,224,3]``; with the axis is fine too), and each output column
    holds the outputs without it (``[1,1000]`` scores -> rows of ``[1000]``).  Columns that
    feed no input pass through unchanged (ids, paths), so results stay joined to their
    rows whatever order Ray delivers them in.  Batches are numpy dicts (Ray's default
    ``batch_format``); a pandas DataFrame is taken too.

    Raises
    ------
    ValueError
        A batch without the columns the inputs need, rows that fit no input.
    """

    def __init__(self, model: ModelSource, *, workers: int = 1, raw: bool = False,
                 input_columns: Optional[Union[Mapping[str, str], Sequence[str]]] = None,
                 data_format: Optional[str] = None, **model_kwargs):
        self.model, self.pool = _open(model, workers, None, model_kwargs)
        self.raw = bool(raw)
        self.data_format = data_format
        names = [t.name for t in self.model.inputs]
        if input_columns is None:
            self._columns: Optional[List[str]] = None
        elif isinstance(input_columns, Mapping):
            unknown = sorted(set(input_columns) - set(names))
            missing = [n for n in names if n not in input_columns]
            if unknown or missing:
                self.close()
                raise ValueError(f"input_columns must name each input {names} once; "
                                 f"unknown {unknown}, missing {missing}")
            self._columns = [str(input_columns[n]) for n in names]
        else:
            cols = [str(c) for c in input_columns]
            if len(cols) != len(names):
                self.close()
                raise ValueError(f"input_columns needs one column per input {names}; got "
                                 f"{cols}")
            self._columns = cols

    def _input_columns(self, batch: Mapping[str, Any]) -> List[str]:
        if self._columns is not None:
            cols = self._columns
        elif len(batch) == 1 and len(self.model.inputs) == 1:
            cols = list(batch)
        else:
            cols = [t.name for t in self.model.inputs]
        missing = [c for c in cols if c not in batch]
        if missing:
            names = [t.name for t in self.model.inputs]
            raise ValueError(f"the batch has columns {sorted(batch)}; the model's inputs "
                             f"{names} need column(s) {missing} (or give input_columns=)")
        return cols

    def __call__(self, batch) -> Dict[str, np.ndarray]:
        if not isinstance(batch, Mapping):
            if hasattr(batch, "to_dict") and hasattr(batch, "columns"):     # pandas
                batch = {c: _stack(list(batch[c])) for c in batch.columns}
            else:
                raise TypeError(f"Predictor takes numpy batches (a dict of arrays); got "
                                f"{type(batch).__name__}")
        cols = self._input_columns(batch)
        n = len(batch[cols[0]])
        if any(len(batch[c]) != n for c in cols):
            raise ValueError("the input columns have different lengths")
        frames = [tuple(_row(batch[c][i], t) for c, t in zip(cols, self.model.inputs))
                  for i in range(n)]
        if self.pool is not None:
            results = list(self.pool.map(frames, raw=self.raw))
        else:
            results = [self.model.run(*f, raw=self.raw, data_format=self.data_format)
                       for f in frames]
        out: Dict[str, Any] = {k: v for k, v in batch.items() if k not in cols}
        for j, t in enumerate(self.model.outputs):
            out[t.name] = _stack([_unbatch(r[j]) for r in results], t, self.raw)
        return out

    def close(self) -> None:
        """Close the pool and the model (Ray ends actors without calling it: the process
        exit frees them)."""
        if self.pool is not None:
            self.pool.shutdown()
        self.model.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


def _row(value, info) -> np.ndarray:
    a = np.asarray(value)
    if len(info.shape) != 4 and info.shape[:1] == (1,) and a.shape == tuple(info.shape[1:]):
        a = a[np.newaxis]
    elif len(info.shape) == 4 and a.shape == tuple(info.shape[1:]) and info.shape[0] == 1:
        a = a[np.newaxis]
    return a


def _unbatch(a: np.ndarray) -> np.ndarray:
    return a[0] if a.ndim and a.shape[0] == 1 else a


def _stack(rows: List[np.ndarray], info=None, raw: bool = False) -> np.ndarray:
    if not rows:
        if info is None:
            return np.empty((0,))
        shape = tuple(info.shape[1:]) if info.shape[:1] == (1,) else tuple(info.shape)
        return np.empty((0,) + shape, dtype=info.dtype if raw else np.float32)
    shapes = {np.shape(r) for r in rows}
    if len(shapes) == 1:
        return np.stack(rows)
    column = np.empty(len(rows), dtype=object)        # rows of several shapes (dynamic)
    for i, r in enumerate(rows):
        column[i] = r
    return column


class ModelDeployment:
    """The replica class of :func:`deployment`: a model and a pool in a Ray Serve replica.

    Over HTTP (Ray Serve's proxy) at the application's route prefix
    (``/v2/models/<name>`` by default): ``POST .../infer`` is a KServe v2 inference request
    (JSON or binary tensors, as ``rknnx serve`` takes it), ``GET ...`` the model's metadata,
    ``GET .../ready`` 200.  From Python: ``await handle.infer.remote(*arrays)`` returns
    the outputs as :meth:`rknnx.Model.run` does.
    """

    def __init__(self, model: ModelSource, *, name: str = "model", workers: int = 1,
                 queue_size: int = 8, **model_kwargs):
        from rknnx._kserve import ModelSpec

        self.model, self.pool = _open(model, workers, queue_size, model_kwargs)
        self.spec = ModelSpec(name, self.model)

    async def infer(self, *inputs, raw: bool = False) -> List[np.ndarray]:
        """The model on one frame (the arguments of :meth:`rknnx.Model.run`)."""
        return await asyncio.wrap_future(self.pool.submit(*inputs, raw=raw))

    async def __call__(self, request):
        from starlette.responses import JSONResponse, Response

        from rknnx import _kserve

        path = request.url.path.rstrip("/")
        try:
            if request.method == "GET":
                if path.endswith("/ready"):
                    return Response(status_code=200)
                return JSONResponse(self.spec.metadata())
            if request.method != "POST" or not path.endswith("/infer"):
                raise _kserve.ProtocolError(
                    405 if request.method != "POST" else 404,
                    f"{request.method} {path}: POST .../infer runs the model, GET gives its "
                    f"metadata")
            body = await request.body()
            req = _kserve.decode_request(body, request.headers.get(_kserve.HEADER), self.spec)
            try:
                future = self.pool.submit(req.inputs, raw=req.raw)
            except (ValueError, TypeError, KeyError) as e:
                raise _kserve.ProtocolError(400, str(e).strip("'\"")) from None
            outputs = await asyncio.wrap_future(future)
            content, headers = _kserve.encode_response(self.spec, req, outputs)
            media = headers.pop("Content-Type")
            return Response(content, media_type=media, headers=headers)
        except _kserve.ProtocolError as e:
            return JSONResponse({"error": e.message}, status_code=e.status)

    def __del__(self):
        try:
            self.pool.shutdown()
            self.model.close()
        except Exception:
            pass


def deployment(model: ModelSource, *, name: Optional[str] = None, workers: int = 1,
               num_replicas: int = 1, resources: Optional[Dict[str, float]] = None,
               num_cpus: float = 1, max_ongoing_requests: Optional[int] = None,
               **model_kwargs):
    """A Ray Serve application of `model`: `num_replicas` replicas, each a
    :class:`ModelDeployment` with a pool of `workers` contexts, placed on nodes with
    `resources` (default ``{"rknpu": workers}``: a board's NPU cores).

    Run it with ``serve.run(app, name=name, route_prefix=f"/v2/models/{name}")`` for the
    KServe v2 paths (what ``tritonclient.http`` asks), then
    ``serve.get_app_handle(name).infer.remote(frame)`` or HTTP on Ray Serve's port.

    Parameters
    ----------
    model : str or bytes
        The ``.rknn`` file (on every board) or its bytes.
    name : str, optional
        The deployment's and protocol's model name (default: the file name without
        ``.rknn``, else ``"model"``).
    max_ongoing_requests : int, optional
        Requests a replica takes at once (default ``4 * workers``); the pool's queue holds
        them all, so a replica never blocks its event loop.
    **model_kwargs
        For :class:`rknnx.Model`.

    Returns
    -------
    ray.serve.Application
        For ``serve.run``.
    """
    from ray import serve

    if name is None:
        name = "model"
        if isinstance(model, str):
            base = model.rsplit("/", 1)[-1]
            name = base[:-5] if base.endswith(".rknn") else base
    ongoing = int(max_ongoing_requests or 4 * workers)
    res = {RESOURCE: workers} if resources is None else dict(resources)
    dep = serve.deployment(ModelDeployment, name=name, num_replicas=num_replicas,
                           max_ongoing_requests=ongoing,
                           ray_actor_options={"num_cpus": num_cpus, "resources": res})
    return dep.bind(model, name=name, workers=workers, queue_size=ongoing, **model_kwargs)


def __dir__():
    return sorted(__all__)
