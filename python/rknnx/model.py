"""``rknnx.Model``: one RKNN model, its description, and the general flow (numpy in, numpy out).

A :class:`Model` opens one low-level context and describes the model from what the binding
reports (chip, shape sets, attributes; optional queries a runtime refuses become
:attr:`Model.notes`).  Its :meth:`Model.run` is the general flow: the runtime converts the
user's arrays (layout, normalisation, quantization) and returns numpy outputs, through the
model's runner (``rknnx._runner``: ``Context.infer``, one crossing of the binding).

The model's contexts are made, registered and closed by its family
(``rknnx._family.ContextFamily``: weights shared, its core mask and custom operators
applied): :meth:`Model.zero_copy` opens a :class:`~rknnx.session.ZeroCopySession` on one
(the vendor forbids mixing the two flows on one context), a :class:`rknnx.Pool` gets one
runner per worker.  On chips without the
general API (RV1106/RV1103/RK2118) the model's runner is a zero-copy session, so one
program runs on every chip.  See docs/architecture.md, "One path".
"""

from __future__ import annotations

import os
import warnings
from typing import TYPE_CHECKING, Any, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

from rknnx import _guard, _quirks
from rknnx import lowlevel as _ll
from rknnx.lowlevel import _ModelRun   # the binding's: Model.run, compiled
from rknnx._facts import Perf, PerfRow, as_core_mask, check_raw
from rknnx.modelfile import check_file
from rknnx._family import ContextFamily, Description, chip_supports, open_context
from rknnx._lifetime import Closable
from rknnx._runner import PASS_THROUGH
from rknnx._tensors import TensorInfo, as_input, default_dtype, describe, shapes_str
from rknnx.errors import NotSupportedError, RKNNError, RKNNFailError

if TYPE_CHECKING:
    from rknnx.session import ZeroCopySession

__all__ = ["Model", "Perf", "PerfRow"]

ModelSource = Union[str, "os.PathLike[str]", bytes, bytearray, memoryview, Any]

_QUERY = _ll.QueryCmd
_LATER = object()                      # a fact asked at its first use


def _source_of(source: ModelSource) -> Tuple[bytes, Optional[str]]:
    """The model's bytes, owned by the Model (every context it opens later loads these,
    whatever happens to the caller's buffer or file), and the path they came from."""
    if isinstance(source, (str, os.PathLike)):
        path = os.fspath(source)
        if os.path.isdir(path):
            raise IsADirectoryError(f"model path {path!r} is a directory; give the .rknn file "
                                    "in it")
        check_file(path)                     # missing, /dev/null, a pipe: saying which
        with open(path, "rb") as f:
            data = f.read()
        if not data:
            raise ValueError(f"model file {path!r} is empty (0 bytes): not a model")
        return data, path
    if isinstance(source, bytes):
        return source, None
    try:
        view = memoryview(source)
    except TypeError:
        raise TypeError(f"a model is a path, bytes or a buffer; got {type(source).__name__}") \
            from None
    with view:
        return view.tobytes(), None          # a copy: the caller may reuse its buffer



def _refuse_run_inside_run(lock, ctx) -> None:
    """The Model's words for the binding's refusals of a run from inside a call on its
    context (a custom op callback) or from a child of fork (`lock`: the Model's)."""
    lock.check("run")                     # a Model of the parent of fork
    if ctx.busy_in_this_thread:
        raise _guard.busy_error("Model", "run") from None

class Model(Closable, _ModelRun):
    """An RKNN model on the NPU (or the CPU emulator).

    Parameters
    ----------
    source : str, os.PathLike, bytes or buffer
        The ``.rknn`` file, or its bytes.
    core_mask : rknnx.CoreMask or int, optional
        NPU cores to run on (RK3588/RK3576 only; other chips raise NotSupportedError).
    flags : rknnx.lowlevel.InitFlag, optional
        Extra ``rknn_init`` flags for every context the model opens.
    perf : bool
        Collect per-layer timing (``RKNN_FLAG_COLLECT_PERF_MASK``): :attr:`perf` then has
        the runtime's detail table.

    Examples
    --------
    >>> with rknnx.Model("classifier.rknn") as model:          # doctest: +SKIP
    ...     scores, = model.run(image)                         # float32 by default
    ...     logits, = model.run(image, raw=True)               # the model's int8

    Raises
    ------
    FileNotFoundError
        No such model file.
    RKNNError
        The runtime refused the model (``ModelInvalidError`` for a corrupt file ...).

    Attributes
    ----------
    inputs, outputs : tuple of rknnx.TensorInfo
        The model's tensors: name, shape and layout, dtype, quantization, native layout
        (a dynamic model's: its largest shape set).
    chip : str or None
        The chip the model runs on ("RK3588" ...; the emulator's personality).
    dynamic : bool
        Several input shape sets (:attr:`shape_sets`); :meth:`run` picks one per call.
    shape_sets : list of tuples of shapes
        One tuple of input shapes per set ([] for a static model).
    sdk_version, driver_version : str
        The runtime's and the NPU driver's versions ("" if the runtime does not say).
    mem_size : MemSize or None
        Weight, internal and DMA bytes (None if the runtime does not say).
    custom_string : str
        The string the model was converted with.
    path : str or None
        The file the model was read from (None for bytes).
    notes : list of str
        Facts the runtime refused to give (optional queries), with its reasons.
    closed : bool
        Whether :meth:`close` ran.
    frame_id, perf
        The last run's frame id and timing.

    Notes
    -----
    A model is safe to share between threads: :meth:`run` calls are serialized (use a
    :class:`rknnx.Pool` to run frames in parallel).  Close it (or use ``with``); an
    unclosed model warns (ResourceWarning) when collected.
    """

    _kind = "Model"
    _family = None

    def __init__(self, source: ModelSource, *, core_mask=None, flags: int = 0,
                 perf: bool = False):
        # a second __init__ on a live object would open a second context over the first
        # one's state (the first leaked, the compiled run path still the first's): refused
        # before anything changes, a failed first __init__ included (its object never
        # reached the caller, unless a subclass kept it)
        if "_ctx" in vars(self):
            raise RuntimeError("Model.__init__: a Model is initialized once; make a new Model")
        self._ctx = None
        source, path = _source_of(source)
        #: the file the model was read from (None for bytes)
        self.path: Optional[str] = path
        flags = int(flags) | (int(_ll.InitFlag.COLLECT_PERF_MASK) if perf else 0)
        self._made_in = _guard.pid
        self._last = None              # the runner of the last run (perf, frame id)
        self._ctx = open_context(source, flags, path)
        try:
            #: the chip the model runs on ("RK3588" ...; None on an unknown board)
            self.chip: Optional[str] = self._ctx.chip     # the binding knows it
            self._general = self.supports("rknn_inputs_set")
            #: the runtime's version as the first context answers it (rknnx._quirks)
            self._version = _quirks.version_of(self._ctx)
            self._describe()
            # the family owns every context of the model from now on, the first one and
            # the runner of run() on it included: made, registered and closed there
            family = self._family = ContextFamily(
                self._ctx, Description(self.chip, self.inputs, self.outputs, self.shape_sets,
                                       self._version), source, path, flags, self)
            # what run() runs on (with the family's lock held): the model's context, or
            # (chips without the general API) a zero-copy session opened at the first run
            self._own = family.own_runner()
            self._lock = family.lock   # refuses re-entry and fork instead of hanging
            # run()'s fast path: the output specs of the runner (one cache)
            self._fast_out = self._own.static_specs if self._fast else None
            # what run()'s compiled fast path reads (set once, before the model is shared)
            self._fast_setup(self._ctx, self._own, self._lock, family, self._fast_out,
                             self._fast_formats, self._fast, bool(self._pixel_inputs))
            if core_mask is not None:
                self.set_core_mask(core_mask)
        except BaseException:
            self._ctx.close()
            raise

    # -- description -----------------------------------------------------------------------
    def _describe(self) -> None:
        ctx = self._ctx
        # Every query here but the attributes is optional, as in the vendor's RKNNLite: a
        # runtime that refuses one (a static model's INPUT_DYNAMIC_RANGE on every board, a
        # NATIVE_* or MEM_SIZE on an old or mini runtime) leaves its fact unknown, and the
        # reason in `notes`.
        #: why facts are missing from this description (refused queries), for `rknnx info`
        self.notes: List[str] = []
        ranges = ctx.input_ranges          # () for a static model (the binding's rule)
        #: True for a dynamic-shape model (several input shape sets)
        self.dynamic: bool = bool(ranges)
        n_sets = max((len(r.dyn_range) for r in ranges), default=0)
        #: the shape sets of a dynamic model: one tuple of input shapes per set ([] if static)
        self.shape_sets: List[Tuple[Tuple[int, ...], ...]] = (
            [tuple(r.dyn_range[k] for r in ranges) for k in range(n_sets)] if self.dynamic
            else [])
        self.inputs: Tuple[TensorInfo, ...] = tuple(
            describe(i, a, self._native(_QUERY.NATIVE_INPUT_ATTR, i), "input")
            for i, a in enumerate(ctx.input_attrs))
        self.outputs: Tuple[TensorInfo, ...] = tuple(
            describe(i, a, self._native(_QUERY.NATIVE_OUTPUT_ATTR, i), "output")
            for i, a in enumerate(ctx.output_attrs))
        version = self._optional(_QUERY.SDK_VERSION)
        #: the runtime's version string (``rknn_sdk_version.api_version``; "" if refused)
        self.sdk_version: str = version.api_version if version is not None else ""
        #: the NPU driver's version string ("" if refused)
        self.driver_version: str = version.drv_version if version is not None else ""
        # MEM_SIZE: asked now, or at the first use of mem_size on a runtime whose copies
        # of a context asked it crash (librknnrt 1.4.0, rknnx._quirks)
        self._mem_size = (_LATER if _quirks.mem_size_breaks_copies(self._version)
                          else self._optional(_QUERY.MEM_SIZE))
        #: the string the model was converted with (``rknn_custom_string``; "" if refused)
        self.custom_string: str = self._optional(_QUERY.CUSTOM_STRING) or ""
        # run()'s fast path (Context.infer of the arrays as they are): a static model on a
        # chip with the general API
        self._fast = self._general and not self.dynamic
        # data_format values that change nothing (every 4-D input is in that layout)
        layouts = {t.layout for t in self.inputs if len(t.shape) == 4}
        if not layouts:
            layouts = {"NHWC", "NCHW"}
        self._fast_formats = (layouts | {f.lower() for f in layouts}) if len(layouts) <= 2 and \
            layouts <= {"NHWC", "NCHW"} and (len(layouts) == 1 or not any(
                len(t.shape) == 4 for t in self.inputs)) else set()
        # the inputs that take uint8 pixels (the model normalizes): the first float array
        # given to one is checked for a 0..1 range once (a common first mistake)
        self._pixel_inputs = [t.index for t in self.inputs
                              if default_dtype(t) == np.uint8 and len(t.shape) == 4]

    @property
    def mem_size(self):
        """``MemSize`` of the model: weight, internal and DMA bytes (None if refused)."""
        if self._mem_size is _LATER:
            # (as the answer asked at once elsewhere: after the close too)
            _guard.check_process(self, self._made_in)
            size, why = self._family.mem_size()
            if self._mem_size is _LATER:         # (one answer for threads asking at once)
                self._mem_size = size
                if why:
                    self.notes.append(why)
        return self._mem_size

    def supports(self, function: Optional[str] = None, *, query: Optional[str] = None) -> bool:
        """Whether the model's chip has the C function `function` (e.g. "rknn_inputs_set")
        or answers `query` (e.g. "PERF_DETAIL"), from the vendor's Tables 3-1/3-2 (see
        :mod:`rknnx.platforms`); True on a chip the tables do not know."""
        return chip_supports(self.chip, function, query)

    def _optional(self, cmd, i: int = 0):
        """``ctx.query(cmd, i)``, or None with the reason noted when the runtime refuses."""
        try:
            return self._ctx.query(cmd, i)
        except (RKNNError, ValueError) as e:
            self.notes.append(f"{cmd.name} refused: {e}")
            return None

    def _native(self, cmd, i):
        if not self.supports(query=cmd.name):
            return None
        return self._optional(cmd, i)

    @property
    def closed(self) -> bool:
        return self._ctx is None or self._ctx.closed

    def _check_open(self, what: str) -> None:
        _guard.check_process(self, self._made_in)
        if self.closed:
            raise ValueError(f"{what} on closed Model")

    def __repr__(self) -> str:
        state = "closed" if self.closed else f"chip={self.chip}"
        ins = ", ".join(f"{t.name}{list(t.shape)}:{t.dtype}" for t in self.inputs)
        outs = ", ".join(f"{t.name}{list(t.shape)}:{t.dtype}" for t in self.outputs)
        return f"<rknnx.Model {state} inputs=[{ins}] outputs=[{outs}]>"

    @property
    def frame_id(self) -> int:
        """The frame id of the outputs the last :meth:`run` returned (the runtime's
        ``rknn_output_extend.frame_id``: runs count from 1; with ``InitFlag.ASYNC_MASK``
        the outputs, and so the id, are those of the run before; 0 before any)."""
        last = self._last
        if last is None:
            return 0
        return self._family.frame_id_closed if self.closed else last.frame_id

    @property
    def perf(self) -> Perf:
        """Timing of the last run (``RKNN_QUERY_PERF_RUN``, and ``PERF_DETAIL`` with
        ``perf=True``).  Raises ValueError before the first run."""
        self._check_open("perf")
        runner = self._last
        if runner is None or runner.closed:
            # the zero-copy flow: a session of the model that has run
            for s in list(self._family.sessions):
                if not s.closed:
                    try:
                        return s.perf
                    except (RKNNError, ValueError):
                        continue
            raise ValueError("perf: the model has not run yet (neither run() nor a session)")
        return runner.perf()

    # -- configuration ---------------------------------------------------------------------
    def set_core_mask(self, mask) -> None:
        """Run on these NPU cores (``rknn_set_core_mask``) from now on: the model's context
        and its sessions, and every one opened later (a Pool's workers keep the masks of
        ``Pool(core_masks=...)``).

        Raises
        ------
        NotSupportedError
            The chip has one NPU core (only RK3588/RK3576 choose cores).
        """
        self._check_open("set_core_mask")
        if not self.supports("rknn_set_core_mask"):
            raise NotSupportedError(f"rknn_set_core_mask is not supported on {self.chip}: only "
                                    "RK3588 and RK3576 have several NPU cores", None,
                                    "rknn_set_core_mask")
        mask = as_core_mask(mask, "set_core_mask")
        # contexts made from now on get the mask when they are made, those made before get
        # it here, outside the family's lock (each call waits for its context's run)
        sessions = self._family.set_core_mask(mask)
        self._own.set_core_mask(mask)
        for s in sessions:
            try:
                s.set_core_mask(mask)
            except ValueError:
                if not s.closed:          # closed meanwhile: nothing to set
                    raise

    def new_context(self, flags: int = 0):
        """A low-level :class:`rknnx.lowlevel.Context` of the model for your own calls,
        sharing the model's weights, with its core mask and custom operators (the context
        sessions and pool workers get).  It is yours to close, before the model (where
        the runtime has no ``rknn_dup_context`` it borrows the model's weights, and the
        model's context refuses to close while a borrower is open).

        .. versionadded:: 0.1.0
        """
        self._check_open("new_context")
        return self._family.new_context(flags)

    # -- the general flow -----------------------------------------------------------------
    def _check_pixel_range(self, inputs) -> None:
        """Warn once if the first float array for a pixel input lies in 0..1: the model
        expects 0..255 (its mean/std normalization is inside it)."""
        for i in self._pixel_inputs:
            a = inputs[i] if i < len(inputs) else None
            if isinstance(a, np.ndarray) and a.dtype.kind == "f" and a.size:
                self._pixel_inputs = []          # once per model
                lo, hi = float(np.min(a)), float(np.max(a))
                if 0.0 <= lo and hi <= 1.0 and not np.array_equal(a, np.round(a)):
                    warnings.warn(
                        f"input {i} ({self.inputs[i].name!r}) takes pixels in 0..255 (the "
                        f"model normalizes them itself), but this float array is in "
                        f"{lo:g}..{hi:g}: pass the image before scaling (e.g. uint8)",
                        UserWarning, stacklevel=2)   # (run() is compiled: no frame)
                return

    def _arrays(self, inputs: Sequence[Any]) -> List[Any]:
        if len(inputs) == 1 and isinstance(inputs[0], Mapping):
            by_name = dict(inputs[0])
            names = [t.name for t in self.inputs]
            unknown = sorted(set(by_name) - set(names))
            if unknown:
                raise KeyError(f"no input named {', '.join(map(repr, unknown))}; the model's "
                               f"inputs are {names}")
            missing = [n for n in names if n not in by_name]
            if missing:
                raise ValueError(f"missing input(s) {missing}; the model's inputs are {names}")
            return [by_name[n] for n in names]
        if len(inputs) == 1 and isinstance(inputs[0], (list, tuple)) and len(self.inputs) > 1:
            inputs = tuple(inputs[0])
        elif len(inputs) == 1 and isinstance(inputs[0], (list, tuple)) and inputs[0] and \
                all(isinstance(x, np.ndarray) for x in inputs[0]):
            raise TypeError("inputs are positional arrays: model.run(image), not "
                            "model.run([image]) (RKNNLite's inference() takes a list; "
                            "rknnx.lite.RKNNLite does too)")
        if len(inputs) != len(self.inputs):
            raise ValueError(f"the model has {len(self.inputs)} input(s) "
                             f"({', '.join(t.name for t in self.inputs)}); got {len(inputs)}")
        return list(inputs)

    def prepare_inputs(self, inputs: Sequence[Any], data_format: Optional[str] = None,
                       pass_through: Optional[Sequence[bool]] = None):
        """Check user arrays against the inputs: ``[(array, layout)]`` and the shape set
        they need (None for a static model).  Raises what :meth:`run` raises."""
        arrays = self._arrays(inputs)
        check = as_input
        if pass_through is not None:
            check = self._pass_through_check(pass_through)
        if not self.dynamic:
            return [check(t, a, data_format) for t, a in zip(self.inputs, arrays)], None
        for k, shapes in enumerate(self.shape_sets):
            try:
                return [check(t, a, data_format, s)
                        for t, a, s in zip(self.inputs, arrays, shapes)], k
            except ValueError:
                continue
        given = shapes_str(np.shape(a) for a in arrays)
        sets = "; ".join(f"set {k}: {shapes_str(s)}" for k, s in enumerate(self.shape_sets))
        raise ValueError(f"input shapes {given} match no shape set of the model "
                         f"({self.inputs[0].layout}); its sets are {sets}")

    def _pass_through_check(self, pass_through: Sequence[bool]):
        """`as_input` for the inputs not passed through; a passed-through input is the
        model's own type, handed over as it is (the runtime checks its size)."""
        if isinstance(pass_through, (str, bytes)) or not hasattr(pass_through, "__iter__"):
            raise TypeError(f"pass_through needs one flag per input ({len(self.inputs)}), a "
                            f"sequence of bools; got {pass_through!r}")
        flags = [bool(p) for p in pass_through]
        if len(flags) != len(self.inputs):
            raise ValueError(f"pass_through needs one flag per input ({len(self.inputs)}); "
                             f"got {len(flags)}")
        if any(flags) and not self._general:
            raise NotSupportedError(f"pass_through inputs need rknn_inputs_set, which "
                                    f"{self.chip} does not have", None, "rknn_inputs_set")

        def check(info, array, data_format=None, expected_shape=None):
            if not flags[info.index]:
                return as_input(info, array, data_format, expected_shape)
            a = np.asarray(array)
            if a.dtype != info.dtype:
                raise TypeError(f"input {info.index} ({info.name!r}) is passed through: it "
                                f"must be the model's {info.dtype}, got {a.dtype}")
            if expected_shape is not None and a.size < int(np.prod(expected_shape)):
                raise ValueError(f"input {info.index} ({info.name!r}) is passed through: "
                                 f"{a.size} elements are fewer than {tuple(expected_shape)}")
            fmt = str(data_format).upper() if data_format is not None and a.ndim == 4 \
                else info.layout
            return np.ascontiguousarray(a), (PASS_THROUGH, fmt)
        return check

    # run() is the binding's (rknnx._core._ModelRun.run, rknn_ext/rknnx/_model_run.pxi): a
    # method descriptor, so that CPython calls it with no Python frame; its fast path is
    # this class's former one in C, and it calls the two methods below for the rest
    # (docs/benchmarks.md, "Where the nanoseconds go").  Its words for refusals:
    _check_raw = staticmethod(check_raw)
    _refuse_run_inside_run = staticmethod(_refuse_run_inside_run)

    if TYPE_CHECKING:                      # for type checkers: the binding's run, typed
        def run(self, *inputs: Any, raw: bool = False,
                out: Optional[Sequence[np.ndarray]] = None, data_format: Optional[str] = None,
                pass_through: Optional[Sequence[bool]] = None) -> List[np.ndarray]: ...
    else:
        # named here too (the same descriptor, still no frame): autodoc documents a
        # class's own members only, and docs/api/model.rst showed Model without run
        run = _ModelRun.run

    def _run_declined(self, inputs, raw, out, data_format, pass_through):
        """run() after the fast path declined the arrays (it called nothing): a bad `out`
        is named before the inputs are looked at (as the fast path's own check did before
        it moved into C), then the general path."""
        raw = check_raw(raw)
        self._check_open("run")
        if out is not None:
            self._own.out_arrays(None, raw, out)
        return self._run_general(inputs, raw, out, data_format, pass_through)

    def _run_general(self, inputs, raw, out, data_format, pass_through):
        """run() where the fast path does not apply: conversions, layouts, shape sets,
        pass_through, clear errors, under the model's lock."""
        raw = check_raw(raw)
        self._check_open("run")
        prepared, shape_set = self.prepare_inputs(inputs, data_format, pass_through)
        with self._lock("run"):
            self._check_open("run")
            runner = self._own
            try:
                result = runner.run(prepared, shape_set, raw, out)
            except RuntimeError:
                _refuse_run_inside_run(self._lock, self._ctx)
                raise
            except ValueError:
                # a close in another thread marked the family closing before this run took
                # the lock, and the runner had a session to open (a chip without the
                # general API, a first run): the fast path's words for a close under way
                if self._family.closing or self.closed:
                    raise ValueError("run on closed Model") from None
                raise
            self._last = runner
            return result

    # -- the zero-copy flow ---------------------------------------------------------------
    def zero_copy(self, *, outputs: str = "float32", input_dtypes: Any = None,
                  cacheable: bool = True, flags: int = 0, sync: bool = True,
                  inputs: str = "logical") -> "ZeroCopySession":
        """A :class:`~rknnx.session.ZeroCopySession` on a context of its own (the options
        are the session's: see there).  The model may go on running the general flow
        meanwhile."""
        self._check_open("zero_copy")
        options = dict(outputs=outputs, input_dtypes=input_dtypes, cacheable=cacheable,
                       flags=flags, sync=sync, inputs=inputs)
        with self._family.making("zero_copy") as family:
            return family.session(False, options)

    # -- custom operators ------------------------------------------------------------------
    def register_custom_ops(self, *ops) -> None:
        """Register custom operators (``rknnx.custom_op`` functions or low-level
        ``CustomOp`` objects) on the model's context and every session opened later."""
        self._check_open("register_custom_ops")
        # with the family's lock: a session or pool made meanwhile gets them too
        self._family.register_custom_ops(ops)

    # -- lifetime --------------------------------------------------------------------------
    def close(self) -> None:
        """Close the sessions and pools the model opened and its context.  A second call
        does nothing.

        Raises
        ------
        BufferError
            A numpy view of a session's memory is still alive (delete it first), or, where
            sessions borrow the model's weights (RV1106/RV1103), a view of a session
            dropped unclosed (the message says which); nothing was closed.
        RuntimeError
            Called from code the model is running (a custom op callback of one of its
            contexts, a worker of one of its pools), in a child of fork() on a model of
            the parent, or while a :meth:`new_context` context that borrows the weights is
            open.
        """
        if self._family is not None:     # (None: __init__ failed, the context closed)
            self._family.close()

    def _refusal_checks(self, what: str) -> None:
        self._family.check_closable(what)

    def _close_quietly(self) -> None:
        # a session runner's memory is bound to its context (a reference cycle in the
        # binding): close it now rather than at the next garbage collection; the model's
        # own context goes with the model
        runner = getattr(self, "_own", None)
        if runner is not None and runner.ctx is None:
            try:
                runner.close()
            except Exception:            # a view alive, a call of this thread, a fork
                pass
        # and what sessions dropped with a view alive left open, the views gone since
        # (a cycle of memory and context: the garbage collector's otherwise)
        try:
            self._family.close_left()
        except Exception:                # a runtime's refusal: the collector's then
            pass

    def __exit__(self, exc_type, exc, tb) -> None:
        Closable.__exit__(self, exc_type, exc, tb)
        if self._close_when_collected and self._family is not None:
            self._family.close_when_collected = True    # its sessions too

    async def run_async(self, *inputs, raw: bool = False,
                        out: Optional[Sequence[np.ndarray]] = None,
                        data_format: Optional[str] = None,
                        pass_through: Optional[Sequence[bool]] = None) -> List[np.ndarray]:
        """``await``-able :meth:`run`: it runs on a worker thread of the event loop's
        executor (the NPU call releases the GIL), so the loop goes on meanwhile.  Errors
        raise at the ``await``; cancelling the awaiting task raises CancelledError there at
        once, while a run already on the NPU ends and its result is discarded.  Several
        frames in parallel: :meth:`rknnx.Pool.run_async`.

        .. versionadded:: 0.1.0
        """
        from rknnx._aio import model_run_async

        return await model_run_async(self, *inputs, raw=raw, out=out, data_format=data_format,
                                     pass_through=pass_through)
