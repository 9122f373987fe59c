"""Zero-copy sessions: numpy views of NPU memory bound to a model's inputs and outputs.

A :class:`ZeroCopySession` owns one low-level context of its model (the vendor forbids
mixing the general and zero-copy flows on one context) and one ``TensorMem`` per input
and output, bound with ``rknn_set_io_mem``.  ``session.inputs[i]`` and
``session.outputs[i]`` are numpy arrays whose data *is* that memory, in the tensor's
logical shape (row padding expressed in the strides): write a frame into an input, call
:meth:`ZeroCopySession.run`, read the outputs.

Cache maintenance: by default librknnrt cleans bound inputs and invalidates bound outputs
around every run.  A session opened with ``flags=DISABLE_FLUSH_INPUT_MEM_CACHE`` /
``DISABLE_FLUSH_OUTPUT_MEM_CACHE`` takes that job over: it syncs exactly the cacheable
memory the runtime no longer syncs (non-cacheable memory needs none, an output chained
into an input needs none), unless opened with ``sync=False`` (then :meth:`sync_inputs`
and :meth:`sync_outputs` are the user's).
"""

from __future__ import annotations

import functools
import inspect
from typing import List, Optional, Sequence, Tuple

import numpy as np

from rknnx import _dequant, _guard
from rknnx import lowlevel as _ll
from rknnx._facts import as_core_mask, perf_of
from rknnx._lifetime import Closable, unclosed
from rknnx._tensors import _quant, check_out, default_dtype, set_shapes
from rknnx.errors import NotSupportedError, RKNNError, RKNNFailError
from rknnx.runtime import note_fallback

__all__ = ["ZeroCopySession"]

_OUTPUT_KINDS = ("float32", "raw", "native")
_F = _ll.InitFlag
_TO, _FROM = _ll.MemSyncMode.TO_DEVICE, _ll.MemSyncMode.FROM_DEVICE
_F32, _F16 = np.dtype(np.float32), np.dtype(np.float16)
_I8, _U8 = np.dtype(np.int8), np.dtype(np.uint8)


def _real(a: np.ndarray, q) -> np.ndarray:
    """The values of `a` under quantization `q` where the kernels do not dequantize them:
    16-bit affine codes ``(q - zp) * scale`` and dynamic fixed point ``q / 2**fl`` in
    float32; any other integer output (int32, int64: an argmax's indices ...) is not
    quantized by the toolkit and is returned as it is, whatever its attribute says."""
    if a.dtype.kind in "iu" and a.dtype.itemsize <= 2:
        if q.kind == "affine":
            return (a.astype(np.float32) - np.float32(q.zero_point)) * np.float32(q.scale)
        if q.kind == "dfp":
            return a.astype(np.float32) * np.float32(2.0 ** -q.fl)
    return a


def _opened_at() -> str:
    """Where the user's code opened a session: the first frame outside rknnx ("" where
    the interpreter keeps no frames)."""
    f = inspect.currentframe()
    try:
        while f is not None and \
                (f.f_globals.get("__name__") or "").partition(".")[0] == "rknnx":
            f = f.f_back
        return "" if f is None else f"{f.f_code.co_filename}:{f.f_lineno}"
    finally:
        del f                            # no frame kept alive by a cycle


def _check_read_out(out, shape, dtype) -> None:
    """ValueError unless `out` is None or a writable `dtype` array of `shape`."""
    if out is None:
        return
    if not isinstance(out, np.ndarray) or out.shape != tuple(shape) or out.dtype != dtype \
            or not out.flags.writeable:
        got = (type(out).__name__ if not isinstance(out, np.ndarray) else
               f"{out.shape} {out.dtype}" + ("" if out.flags.writeable else ", read-only"))
        raise ValueError(f"out must be a writable {dtype} array of shape {tuple(shape)}; "
                         f"got {got}")


def _change(what: str):
    """A method that changes the session's bindings: refused from the session's own
    callbacks (RuntimeError) and on a closed session, serialized with close() and the
    other changes by the session's lock."""
    def decorate(method):
        @functools.wraps(method)
        def locked(self, *args, **kwargs):
            self._check_open(what)
            self._check_not_busy(what)
            with self._lock(what):
                self._check_open(what)
                try:
                    return method(self, *args, **kwargs)
                except BaseException as exc:
                    # refused or failed (a bad fd, the runtime's refusal): the session's
                    # own views, let go for the count, are made again over what is bound,
                    # and those its frames held are not kept by the error
                    _guard.forget_frames(exc)
                    if self._ctx is not None and not self._inputs and self._in_mems:
                        try:
                            self._views()
                        except Exception:    # pragma: no cover - the error below says more
                            pass
                    raise
        return locked
    return decorate


def _into(src: np.ndarray, out: Optional[np.ndarray], dtype) -> np.ndarray:
    """`src` converted to `dtype`: a new array, or written into `out` (checked)."""
    if out is None:
        return np.array(src, dtype=dtype)
    out[...] = src
    return out


class ZeroCopySession(Closable):
    """Inputs and outputs of a model as numpy views of NPU memory.

    Made by :meth:`rknnx.Model.zero_copy`; a context manager.

    Parameters
    ----------
    outputs : {"float32", "raw", "native"}
        What ``outputs[i]`` hold: float32 in the model's output layout (converted by the
        runtime), the model's own type (e.g. int8) in that layout, or the NPU's native
        layout (e.g. int8 NC1HWC2, 5-D), which costs the runtime no conversion at all;
        :meth:`read` turns raw and native outputs into float32 NCHW/NHWC with the
        compiled kernels.
    input_dtypes : dtype or sequence of dtypes, optional
        The element type of each input view (default: uint8 for a quantized 4-D image
        input, else the model's type); the runtime converts on the NPU side.
    inputs : {"logical", "native"}
        The input views in the model's layout (default), or in the NPU's own layout and
        type (``NATIVE_INPUT_ATTR``: e.g. int8 NHWC with padded rows, or NC1HWC2 for
        other channel counts), which the runtime takes as it is: write data already
        normalized and quantized (``rknnx.lowlevel.quantize``, ``nchw_to_nc1hwc2``).
    cacheable : bool
        Allocate cacheable memory (the default, fast for the CPU) or non-cacheable memory
        (coherent: no sync ever needed, slow CPU reads).
    flags : rknnx.lowlevel.InitFlag
        Extra flags of the session's context; ``DISABLE_FLUSH_*_MEM_CACHE`` hands cache
        maintenance to the session.
    sync : bool
        With ``DISABLE_FLUSH_*`` flags: sync automatically (True) or leave it to
        :meth:`sync_inputs` / :meth:`sync_outputs` (False).

    Attributes
    ----------
    inputs, outputs : tuple of numpy.ndarray
        Views of the NPU memory bound to each input and output (made anew by a shape-set
        switch or a rebind: take them again).
    input_infos, output_infos : tuple of rknnx.TensorInfo
        The model's description of each input and output (``Model.inputs`` and
        ``Model.outputs``: name, shape and layout, dtype, quantization), read-only; what
        the views hold is in ``input_attrs`` / ``output_attrs``.
    output_kind, input_kind : str
        What the views hold (the `outputs` and `inputs` options).
    closed : bool
        Whether :meth:`close` ran.
    perf : rknnx.Perf
        Timing of the last :meth:`run`.

    Raises
    ------
    ValueError
        Unknown `outputs`, a closed model, wrong number of `input_dtypes`.
    TypeError
        An input dtype with no RKNN type.
    """

    _kind = "ZeroCopySession"
    _closing = False                     # _release() is closing its memory and context

    def __init__(self, family, *, outputs: str = "float32", input_dtypes=None,
                 cacheable: bool = True, flags: int = 0, sync: bool = True,
                 inputs: str = "logical", _internal: bool = False):
        if not hasattr(family, "explain_run_failure"):
            raise TypeError("a ZeroCopySession is opened by Model.zero_copy(...); got "
                            f"{type(family).__name__}")
        if outputs not in _OUTPUT_KINDS:
            raise ValueError(f"outputs must be one of {_OUTPUT_KINDS}; got {outputs!r}")
        if inputs not in ("logical", "native"):
            raise ValueError(f"inputs must be 'logical' or 'native'; got {inputs!r}")
        for name, value in (("cacheable", cacheable), ("sync", sync)):
            if not (value is True or value is False):
                raise TypeError(f"{name} must be True or False; got {value!r}")
        if isinstance(flags, bool) or not isinstance(flags, (int, np.integer)):
            raise TypeError(f"flags must be rknnx.lowlevel.InitFlag values (an int); got "
                            f"{flags!r}")
        if inputs == "native" and input_dtypes is not None:
            raise ValueError("inputs='native' takes the model's own types: leave input_dtypes "
                             "out")
        self.input_kind = inputs
        self._ctx = None
        # what the session knows of its model: the tensors, shape sets, chip (its family's
        # description); never the Model
        self._of = family
        self.output_kind = outputs
        self._cacheable = bool(cacheable)
        self._in_dtypes = self._input_dtypes(family, input_dtypes)
        self._lock = _guard.Lock(self)
        self._made_in = self._lock.pid
        self._internal = _internal                    # a Model's own (run() on RV1106, Pool)
        self._opened_at = "" if _internal else _opened_at()   # for the model's close
        self._in_mems: List[Optional[_ll.TensorMem]] = []
        self._out_mems: List[Optional[_ll.TensorMem]] = []
        self._owned: List[_ll.TensorMem] = []        # mems this session allocated or imported
        self._coherent: List[_ll.TensorMem] = []     # the non-cacheable ones among them
        self._chained = {}                            # input index -> output index
        self._inputs: Tuple[np.ndarray, ...] = ()
        self._outputs: Tuple[np.ndarray, ...] = ()
        # a context of the model: weights shared, its core mask and custom ops applied (the
        # family makes it: the caller holds its lock)
        self._ctx = family.context(flags)
        try:
            ctx_flags = int(self._ctx.flags)
            self._session_syncs_in = bool(sync) and bool(ctx_flags & _F.DISABLE_FLUSH_INPUT_MEM_CACHE)
            self._session_syncs_out = bool(sync) and bool(ctx_flags & _F.DISABLE_FLUSH_OUTPUT_MEM_CACHE)
            if (self._session_syncs_in or self._session_syncs_out) and self._cacheable:
                # the session would sync with rknn_mem_sync: refuse now, not at the first run
                info = _ll.runtime_info()
                if "rknn_mem_sync" in info["missing"]:
                    raise NotSupportedError(
                        f"flags DISABLE_FLUSH_*_MEM_CACHE hand cache maintenance to the "
                        f"session, which needs rknn_mem_sync; librknnrt "
                        f"{info.get('version') or ''} at {info['path']} lacks it: open the "
                        f"session without those flags (the runtime then syncs itself)",
                        None, "rknn_mem_sync")
            if family.shape_sets:
                # start from an explicit shape set: before one is chosen the attributes
                # describe the largest shapes while the runtime computes at the first set
                self.set_shape_set(0)
            else:
                self._bind_all()
        except BaseException:
            self._release()
            raise

    @staticmethod
    def _input_dtypes(model, input_dtypes) -> List[np.dtype]:
        if input_dtypes is None:
            return [default_dtype(t) for t in model.inputs]
        if not isinstance(input_dtypes, (list, tuple)):
            input_dtypes = [input_dtypes] * len(model.inputs)
        if len(input_dtypes) != len(model.inputs):
            raise ValueError(f"input_dtypes needs one dtype per input ({len(model.inputs)}); "
                             f"got {len(input_dtypes)}")
        dts = [np.dtype(d) for d in input_dtypes]
        for d in dts:
            _ll.type_of_dtype(d)       # TypeError for a dtype with no RKNN type
        return dts

    # -- binding ---------------------------------------------------------------------------
    def _alloc(self, nbytes: int) -> _ll.TensorMem:
        flags = _ll.MemAllocFlag.CACHEABLE if self._cacheable else _ll.MemAllocFlag.NON_CACHEABLE
        try:
            mem = self._ctx.create_mem2(nbytes, flags)
        except NotSupportedError:
            # a runtime before 1.6.0: rknn_create_mem gives the cacheable memory that
            # create_mem2 gives by default; non-cacheable memory cannot be had there
            if not self._cacheable:
                raise
            note_fallback("rknn_create_mem2", "sessions allocate with rknn_create_mem")
            mem = self._ctx.create_mem(nbytes)
        self._owned.append(mem)
        if not self._cacheable:
            self._coherent.append(mem)
        return mem

    def _in_attr(self, i: int):
        if self.input_kind == "native":
            cmd = (_ll.QueryCmd.CURRENT_NATIVE_INPUT_ATTR if self._of.dynamic
                   else _ll.QueryCmd.NATIVE_INPUT_ATTR)
            a = self._ctx.query(cmd, i)
            a.pass_through = True          # taken as it is: no conversion by the runtime
            return a
        a = self._ctx.input_attrs[i]
        a.type = _ll.type_of_dtype(self._in_dtypes[i])
        return a

    def _out_attr(self, i: int):
        if self.output_kind == "native":
            cmd = (_ll.QueryCmd.CURRENT_NATIVE_OUTPUT_ATTR if self._of.dynamic
                   else _ll.QueryCmd.NATIVE_OUTPUT_ATTR)
            return self._ctx.query(cmd, i)
        a = self._ctx.output_attrs[i]
        if self.output_kind == "float32":
            a.type = _ll.TensorType.FLOAT32
        return a

    def _bind(self, mems: list, i: int, attr) -> None:
        need = int(attr.alloc_size)
        old = mems[i] if i < len(mems) else None
        if old is not None and old.size >= need:
            self._ctx.set_io_mem(old, attr)
            return
        # a bigger mem replaces the old one only once it is bound: a failed allocation or
        # binding (a transient runtime error) leaves the old one in place, open, so the
        # session's lists never hold a closed mem and a later rebind can start again
        mem = self._alloc(need)
        try:
            self._ctx.set_io_mem(mem, attr)
        except BaseException:
            self._drop(mem)
            raise
        if old is None:
            mems.append(mem)
            return
        mems[i] = mem
        if old in self._owned:
            self._in_mems[:] = [mem if m is old else m for m in self._in_mems]  # chained
            self._retire(old)

    def _bind_all(self) -> None:
        """(Re)bind every input and output for the current shapes, and make the views."""
        self._inputs = self._outputs = ()
        self._in_attrs = []
        for i in range(len(self._of.inputs)):
            attr = self._in_attr(i)
            if i in self._chained:
                self._check_chain(self._chained[i], i)
            else:
                self._bind(self._in_mems, i, attr)
            self._in_attrs.append(attr)
        self._out_attrs = []
        for i in range(len(self._of.outputs)):
            attr = self._out_attr(i)
            self._bind(self._out_mems, i, attr)
            self._out_attrs.append(attr)
        for i, o in self._chained.items():
            self._in_mems[i] = self._out_mems[o]
            self._ctx.set_io_mem(self._out_mems[o], self._chain_attr(o, i))
        self._views()

    def _views(self) -> None:
        self._outputs = tuple(np.asarray(m) for m in self._out_mems)
        self._inputs = tuple(self._outputs[self._chained[i]] if i in self._chained
                             else np.asarray(m) for i, m in enumerate(self._in_mems))
        self._plan_syncs()

    def _plan_syncs(self) -> None:
        # exactly the mems the runtime will not sync: cacheable and bound.  A chained
        # output is an input too: the CPU may have written the state it starts from and
        # reads what it became, so it is cleaned before and invalidated after like the rest
        self._sync_in = [m for i, m in enumerate(self._in_mems)
                         if self._session_syncs_in and i not in self._chained and self._cached(m)]
        self._sync_out = [m for m in self._out_mems
                          if self._session_syncs_out and self._cached(m)]
        if self._session_syncs_in:
            self._sync_in += [self._out_mems[o] for o in set(self._chained.values())
                              if self._cached(self._out_mems[o])]
        # with nothing to sync, run() is the context's own run(): no Python in between
        # (unless the model needs custom operators the context lacks: a run's failure then
        # names them, in _run_now)
        if self._sync_in or self._sync_out or self._unregistered_ops():
            self.__dict__.pop("run", None)
        else:
            self.run = self._ctx.run

    def _unregistered_ops(self) -> tuple:
        return self._of.unregistered_ops(self._ctx)

    def _check_no_views(self, mems=None) -> None:
        """BufferError, changing nothing, if a user view of `mems` (default: all of the
        session's memory) is alive: the session's own views are let go for the count and
        made again."""
        mems = self._owned if mems is None else [m for m in mems if m is not None]
        self._inputs = self._outputs = ()
        _guard.settle_views(lambda: sum(m.exports for m in mems))
        counted = [(m, m.exports) for m in mems]     # one look: views may end meanwhile
        viewed = [m for m, k in counted if k]
        n = sum(k for _, k in counted)
        # the views are made again whatever the count: a check that passes may be
        # followed by no change at all (check_closable(), a Model.close() that another
        # refusal stops), and a session without its views would give () as inputs
        if self._ctx is not None and self._in_mems:
            self._views()
        if viewed:
            raise BufferError(f"{n} buffer view(s) of the session's memory still exported; "
                              "delete the numpy arrays first, or keep a .copy() of what "
                              "must outlive the session (nothing was changed)")

    def _cached(self, mem) -> bool:
        """Whether `mem` goes through the CPU cache (all but non-cacheable allocations)."""
        return not any(mem is m for m in self._coherent)

    def _drop(self, mem) -> None:
        if mem in self._owned:
            self._owned.remove(mem)
        self._coherent = [m for m in self._coherent if m is not mem]
        self._inputs = self._outputs = ()
        mem.close()

    def _retire(self, mem) -> None:
        """Free `mem`, which a change just replaced (nothing binds it any more).  A runtime
        that fails to destroy it (a transient error) does not undo the change, which is
        done: the mem stays among the session's own and is destroyed again at close()."""
        try:
            self._drop(mem)
        except RKNNError:
            self._owned.append(mem)

    # -- what users touch ------------------------------------------------------------------
    @property
    def inputs(self) -> Tuple[np.ndarray, ...]:
        """One numpy view per input: write frames here (or pass as ``out=`` / ``dst=``)."""
        self._check_open("inputs")
        return self._inputs or self._settled("inputs")[0]

    @property
    def outputs(self) -> Tuple[np.ndarray, ...]:
        """One numpy view per output, valid after :meth:`run` (overwritten by the next)."""
        self._check_open("outputs")
        return self._outputs or self._settled("outputs")[1]

    def _settled(self, what: str):
        """The views once a change in another thread is over: it lets the session's own
        views go while it counts the user's (a reader must not see them missing)."""
        if self._lock.held_here():
            return self._inputs, self._outputs
        with self._lock(what):
            self._check_open(what)
            return self._inputs, self._outputs

    @property
    def input_infos(self):
        """The model's :class:`rknnx.TensorInfo` of each input (``Model.inputs``):
        name, shape and layout, dtype, quantization; read-only.

        .. versionadded:: 0.1.0
        """
        return self._of.inputs

    @property
    def output_infos(self):
        """The model's :class:`rknnx.TensorInfo` of each output (``Model.outputs``);
        read-only.

        .. versionadded:: 0.1.0
        """
        return self._of.outputs

    @property
    def input_attrs(self):
        """The low-level ``TensorAttr`` each input is bound with."""
        return tuple(a.copy() for a in self._in_attrs)

    @property
    def output_attrs(self):
        """The low-level ``TensorAttr`` each output is bound with."""
        return tuple(a.copy() for a in self._out_attrs)

    def hold(self, what: str = "hold"):
        """Hold the session for a sequence of this thread's calls (write the input, run,
        read the outputs, as one frame): ``with session.hold("frame"):``.  Meanwhile
        another thread's run, change or close of the session, and the close of its model,
        wait for the end of the block instead of refusing over the frame's views or freeing
        the memory it uses.  Inside the block :meth:`run` runs at once; the calls that
        take the session themselves (:meth:`run_arrays`, :meth:`write`, a change, close)
        are refused there (RuntimeError).  A close of the model may have come first: ask
        :attr:`closed` inside the block.

        Raises
        ------
        RuntimeError
            Called from code already holding it in this thread (a callback of its run),
            or in a child of fork() on a session of the parent (`what` names the call).
        """
        return self._lock(what)

    def run(self) -> None:
        """Run the model on what the input views hold; the output views then hold the result.

        Syncs the caches the runtime does not (see the module docs) around the run; with
        nothing to sync this is the low-level ``Context.run`` itself.  Calls from several
        threads are serialized by the context's lock (the views are shared, though: a
        session is one pipeline; use one per thread, or a :class:`rknnx.Pool`).

        Raises
        ------
        ValueError
            A closed session.
        RKNNError
            The runtime failed.
        """
        ctx = self._ctx
        if ctx is None:
            raise ValueError("run on closed ZeroCopySession")
        # (here when the session syncs, or is closing: else run is the context's own run)
        # under the session's lock, as a close: a close in another thread waits for the
        # syncs instead of refusing, half-way, memory that is being synced
        if self._lock.held_here():       # run_arrays(), or a callback of this run
            return self._run_now(ctx)
        with self._lock("run"):
            self._run_now(ctx)

    def _run_now(self, ctx) -> None:
        try:
            for m in self._sync_in:
                m.sync(_TO)
            ctx.run()
            for m in self._sync_out:
                m.sync(_FROM)
        except ValueError:
            # closed meanwhile by another thread: the session's words, not the binding's
            # ("run on closed Context", "the TensorMem bound as ... was closed")
            if self._closing or self._ctx is None:
                raise ValueError("run on closed ZeroCopySession") from None
            raise
        except RKNNFailError as e:
            better = self._of.explain_run_failure(e, ctx)
            if better is e:
                raise
            raise better from None

    def write(self, index: int, array) -> None:
        """Write `array` into input `index`, checked: the shape in the model's layout or
        the other of NHWC/NCHW (transposed), and the values converted only where nothing
        is lost (an integer view takes integers in its range; a float view takes any
        numbers).  ``session.inputs[i][...] = array`` casts silently (a float image of
        0..1 into a uint8 view becomes zeros); this refuses what would change the data.

        Raises
        ------
        ValueError
            A shape that fits neither layout, values out of the view's range, or floats
            with fractions into an integer view (say ``input_dtypes=np.float32`` for
            float views, the runtime converts on the NPU).
        """
        self._check_open("write")
        self._check_not_busy("write")
        with self._lock("write"):
            # under the session's lock, as a close: a close in another thread waits for the
            # copy instead of counting its view as the user's
            self._check_open("write")
            self._write(index, array)

    def _write(self, index: int, array) -> None:
        self._check_index(index, len(self._of.inputs), "input")
        view = self.inputs[index]
        a = np.asarray(array)
        if a.shape != view.shape and a.ndim == 4 and view.ndim == 4:
            for perm in ((0, 2, 3, 1), (0, 3, 1, 2)):
                if a.transpose(perm).shape == view.shape:
                    a = a.transpose(perm)
                    break
        if a.shape != view.shape and a.size == view.size and a.ndim == view.ndim - 1:
            a = a.reshape(view.shape)                    # HWC for a batch of one
        if a.shape != view.shape:
            raise ValueError(f"input {index}: shape {a.shape} does not fit the view "
                             f"{view.shape} (either layout)")
        if view.dtype.kind in "iu" and a.dtype != view.dtype:
            info = np.iinfo(view.dtype)
            if a.dtype.kind == "f" and a.size and not np.array_equal(a, np.round(a)):
                raise ValueError(f"input {index}: float values with fractions into a "
                                 f"{view.dtype} view would be truncated; open the session "
                                 f"with input_dtypes=np.float32 for float views, or scale "
                                 f"the data to {info.min}..{info.max} first")
            if a.size and (a.min() < info.min or a.max() > info.max):
                raise ValueError(f"input {index}: values {a.min()}..{a.max()} do not fit "
                                 f"the {view.dtype} view ({info.min}..{info.max})")
        view[...] = a

    def run_arrays(self, *arrays, out: Optional[Sequence[np.ndarray]] = None
                   ) -> List[np.ndarray]:
        """Copy one array per input into the input views (checked as :meth:`write`
        checks), :meth:`run`, and return the outputs: copies of the output views, or
        written into `out`.  The general flow's convenience on a session (it pays the
        two copies the views exist to avoid; it is how ``Model.run`` works on chips
        without the general API).

        Parameters
        ----------
        *arrays : numpy.ndarray
            One per input, as :meth:`write` takes them.
        out : sequence of numpy.ndarray, optional
            One writable C-contiguous array per output, of the output view's shape and
            dtype (checked before anything is written).

        Raises
        ------
        ValueError
            Not one array per input, an array :meth:`write` refuses, a wrong `out`, a
            closed session.
        RKNNError
            The runtime failed.

        .. versionadded:: 0.1.0
        """
        self._check_open("run_arrays")
        self._check_not_busy("run_arrays")
        try:
            with self._lock("run_arrays"):
                # under the session's lock, as a close: a close in another thread waits for
                # the copies instead of counting their views as the user's
                self._check_open("run_arrays")
                return self._run_arrays(arrays, out)
        except BaseException as exc:
            _guard.forget_frames(exc)    # the views it held: not pinned by a kept error
            raise

    def _run_arrays(self, arrays, out):
        n = len(self._in_mems)
        if len(arrays) != n:
            raise ValueError(f"run_arrays needs one array per input ({n}); got {len(arrays)}")
        if out is not None:
            out = check_out(out, [(v.shape, v.dtype) for v in self.outputs])
        for i, a in enumerate(arrays):
            self._write(i, a)
        self.run()
        if out is None:
            return [np.array(v) for v in self.outputs]
        for dst, v in zip(out, self.outputs):
            dst[...] = v
        return out

    def set_core_mask(self, mask) -> None:
        """Run this session on these NPU cores (``rknn_set_core_mask`` on its context;
        ``Model.set_core_mask`` sets every session of the model).

        Raises
        ------
        NotSupportedError
            The chip has one NPU core (only RK3588/RK3576 choose cores).
        """
        self._check_open("set_core_mask")
        if not self._of.supports("rknn_set_core_mask"):
            raise NotSupportedError(f"rknn_set_core_mask is not supported on "
                                    f"{self._of.chip}: only RK3588 and RK3576 have "
                                    "several NPU cores", None, "rknn_set_core_mask")
        self._ctx.set_core_mask(as_core_mask(mask, "set_core_mask"))

    @property
    def perf(self):
        """Timing of the session's last :meth:`run`: a :class:`rknnx.Perf` (``run_us``;
        ``detail`` and its parsed ``rows`` when the model was opened with ``perf=True``).

        Raises
        ------
        ValueError
            A closed session.
        RKNNError
            Before the first run (the runtime has no timing yet), or on a chip without
            perf queries (RV1106 family: NotSupportedError).
        """
        self._check_open("perf")
        return perf_of(self._ctx, bool(int(self._ctx.flags)
                                       & int(_ll.InitFlag.COLLECT_PERF_MASK)))

    def sync_inputs(self) -> None:
        """Clean the CPU cache of every cacheable input (``rknn_mem_sync(TO_DEVICE)``)."""
        self._check_open("sync_inputs")
        for i, m in enumerate(self._in_mems):
            if i not in self._chained and self._cached(m):
                m.sync(_TO)

    def sync_outputs(self) -> None:
        """Invalidate the CPU cache of every cacheable output (``FROM_DEVICE``)."""
        self._check_open("sync_outputs")
        for m in self._out_mems:
            if self._cached(m):
                m.sync(_FROM)

    def read(self, index: int, *, dtype=np.float32, layout: str = "NCHW",
             out: Optional[np.ndarray] = None) -> np.ndarray:
        """Output `index` as a dense float array in `layout` (a copy, or into `out`).

        Raw int8/uint8 outputs are dequantized, native NC1HWC2 outputs are unpacked and
        dequantized in one pass, by the compiled kernels (GIL released); the floats are
        the runtime's own (``rknn_outputs_get(want_float=1)``: on RK3588 and RK3566 it
        takes another formula for some elements, docs/abi-notes.md "NPU-side bytes").
        16-bit and dynamic-fixed-point outputs are dequantized too; other integer outputs
        (an argmax's int64 indices) are not quantized and come as they are.

        Parameters
        ----------
        index : int
            The output.
        dtype : float32, float16 or float64
            The element type of the result.
        layout : {"NCHW", "NHWC"}
            The layout of a 4-D result.
        out : numpy.ndarray, optional
            Written in place and returned: writable, of the result's shape and `dtype`
            (any strides).

        Raises
        ------
        IndexError
            No such output.
        ValueError
            An `out` of the wrong shape or dtype (or read-only), a layout not NCHW/NHWC.
        TypeError
            A `dtype` that is not a float type.
        """
        try:
            return self._read(index, dtype, layout, out)
        except BaseException as exc:
            _guard.forget_frames(exc)    # the views it held: not pinned by a kept error
            raise

    def _read(self, index, dtype, layout, out):
        self._check_open("read")
        outputs = self._outputs or self._settled("read")[1]
        self._check_index(index, len(outputs), "output")
        if not isinstance(layout, str):
            raise ValueError(f"layout must be 'NCHW' or 'NHWC'; got {layout!r}")
        layout = layout.upper()
        if layout not in ("NCHW", "NHWC"):
            raise ValueError(f"layout must be 'NCHW' or 'NHWC'; got {layout!r}")
        dtype = np.dtype(dtype)
        if dtype.kind != "f":
            raise TypeError(f"read gives floats: dtype must be float16, float32 or float64; "
                            f"got {dtype}")
        view, attr = outputs[index], self._out_attrs[index]
        info = self._of.outputs[index]
        q = _quant(attr)            # the bound attribute's: what the bytes hold
        # int8/uint8 codes of an affine output: dequantized by the kernels, and where the
        # runtime's outputs_get(want_float=1) takes its vector formula (by the chip and the
        # runtime's version), by that (_dequant)
        codes = q.kind == "affine" and view.dtype in (_I8, _U8)
        logical = info.shape_in("NCHW")
        if attr.layout == "NC1HWC2":
            n, c1, h, w, c2 = view.shape
            channels = logical[1] if len(logical) == 4 else c1 * c2
            if len(logical) == 4 and (h, w) != tuple(logical[2:]) and \
                    h * w == logical[2] * logical[3]:
                # librknnrt 1.4.0 answers NATIVE_OUTPUT_ATTR with H and W flattened
                # ([1,1,1,16384,16] for [1,8,128,128]): the same bytes, the logical H and W
                h, w = logical[2], logical[3]
                view = view.reshape(n, c1, h, w, c2)
            shape = (n, channels, h, w) if layout == "NCHW" else (n, h, w, channels)
            _check_read_out(out, shape, dtype)
            where = _dequant.vector_part(self._of.chip, shape, layout, c2,
                                          self._of.version) if codes else None
            if where is not None:
                res = _ll.nc1hwc2_to_nchw(view, channels, layout=layout, dtype=_F32,
                                          out=out if dtype == _F32 else None,
                                          scale=q.scale, zero_point=q.zero_point)
                _dequant.apply_vector(res, _ll.nc1hwc2_to_nchw(view, channels, layout=layout),
                                      q.scale, q.zero_point, where)
                return res if dtype == _F32 else _into(res, out, dtype)
            if not codes and view.dtype.kind in "iub":
                return _into(_real(_ll.nc1hwc2_to_nchw(view, channels, layout=layout), q),
                             out, dtype)
            scale = q.scale if codes else None
            # the kernels make float32 and float16 (and convert float16 <-> float32)
            kdt = dtype if dtype in (_F32, _F16) else _F32
            direct = scale is not None or kdt == view.dtype or \
                {kdt, view.dtype} == {_F32, _F16}
            if direct:
                kw = dict(scale=scale, zero_point=q.zero_point) if scale is not None else {}
                if kdt == dtype:
                    return _ll.nc1hwc2_to_nchw(view, channels, layout=layout, dtype=kdt,
                                               out=out, **kw)
                res = _ll.nc1hwc2_to_nchw(view, channels, layout=layout, dtype=kdt, **kw)
            else:
                res = _ll.nc1hwc2_to_nchw(view, channels, layout=layout)
            return _into(res, out, dtype)
        src = view
        if view.ndim == 4 and layout != ("NHWC" if attr.layout == "NHWC" else "NCHW"):
            src = view.transpose((0, 2, 3, 1) if layout == "NHWC" else (0, 3, 1, 2))
        _check_read_out(out, src.shape, dtype)
        if not codes:
            return _into(_real(src, q), out, dtype)
        native = info.native
        c2 = native.shape[4] if native is not None and native.layout == "NC1HWC2" else None
        where = _dequant.vector_part(self._of.chip, src.shape, layout, c2, self._of.version)
        kdt = _F32 if where is not None else dtype
        if kdt in (_F32, _F16) and (out is None or not np.may_share_memory(out, src)):
            res = _ll.dequantize(src, q.scale, q.zero_point, dtype=kdt,
                                 out=out if kdt == dtype else None)
        else:
            res = _ll.dequantize(src, q.scale, q.zero_point)
        if where is not None:
            _dequant.apply_vector(res, src, q.scale, q.zero_point, where)
        return res if res is out or (out is None and res.dtype == dtype) else \
            _into(res, out, dtype)

    # -- external memory and chaining ------------------------------------------------------
    @_change("bind_input_fd")
    def bind_input_fd(self, index: int, fd: int, offset: int = 0,
                      size: Optional[int] = None) -> np.ndarray:
        """Feed input `index` from a dma-buf (or any mmap-able) file descriptor: V4L2, RGA
        and MPP buffers go to the NPU without a copy.  Returns the new input view.

        The fd stays the caller's (rknnx never closes it) and must stay open while the
        session uses it.

        Raises
        ------
        ValueError
            `size` smaller than the input needs (the message says how many bytes), a bad fd.
        """
        self._check_index(index, len(self._in_mems), "input")
        attr = self._in_attrs[index]
        need = int(attr.alloc_size)
        size = need if size is None else int(size)
        if size < need:
            raise ValueError(f"input {index} needs {need} bytes from the fd; got size={size}")
        old = self._in_mems[index]
        self._check_no_views([old])
        mem = self._ctx.create_mem_from_fd(fd, size, offset)
        self._owned.append(mem)
        self._inputs = self._outputs = ()
        try:
            self._ctx.set_io_mem(mem, attr)
        except BaseException:
            self._drop(mem)
            self._views()
            raise
        self._chained.pop(index, None)
        self._in_mems[index] = mem
        if old is not None and old in self._owned and old not in self._out_mems:
            self._retire(old)
        self._views()
        return self._inputs[index]

    def _chain_attr(self, output: int, input: int):
        a = self._in_attrs[input].copy()
        a.type = self._out_attrs[output].type
        return a

    def _check_chain(self, output: int, input: int) -> None:
        o = self._out_attrs[output] if output < len(getattr(self, "_out_attrs", ())) else None
        i_attr = self._in_attrs[input] if input < len(self._in_attrs) else self._in_attr(input)
        if o is None:
            return
        problems = []
        if o.layout != i_attr.layout and not (o.layout == "UNDEFINED" or i_attr.layout == "UNDEFINED"):
            problems.append(f"layout {o.layout} vs {i_attr.layout}")
        if tuple(o.dims) != tuple(i_attr.dims):
            problems.append(f"shape {tuple(o.dims)} vs {tuple(i_attr.dims)}")
        if o.quantized and o.dtype.kind in "iu":
            qi = self._of.inputs[input].quant
            if (o.scale, o.zp) != (qi.scale, qi.zero_point) or \
                    o.type != self._of.inputs[input].attr.type:
                problems.append(f"quantization (scale {o.scale}, zp {o.zp}) vs the input's "
                                f"({qi.scale}, {qi.zero_point}): chain float32 outputs instead")
        if problems:
            raise ValueError(f"output {output} cannot be bound as input {input}: "
                             + "; ".join(problems))

    @_change("chain")
    def chain(self, output: int, input: int) -> None:
        """Bind output `output`'s memory as input `input` of the next run (stateful and
        streaming models): no copy, no cache sync.

        Raises
        ------
        ValueError
            The tensors do not match (layout, shape, or quantization of a raw output):
            the message says how.
        """
        self._check_index(output, len(self._out_mems), "output")
        self._check_index(input, len(self._in_mems), "input")
        self._check_chain(output, input)
        self._check_no_views([self._in_mems[input], self._out_mems[output]])
        attr = self._chain_attr(output, input)
        try:
            self._ctx.set_io_mem(self._out_mems[output], attr)
        except BaseException:
            self._views()
            raise
        old = self._in_mems[input]
        self._in_mems[input] = self._out_mems[output]
        self._chained[input] = output
        if old is not None and old in self._owned and old not in self._out_mems:
            self._retire(old)
        self._views()

    # -- shapes ----------------------------------------------------------------------------
    @_change("set_shape_set")
    def set_shape_set(self, index: int) -> None:
        """Switch a dynamic-shape model to its shape set `index` and rebind (the views are
        made anew: take ``inputs``/``outputs`` again)."""
        sets = self._of.shape_sets
        if not sets:
            raise ValueError("set_shape_set: the model has fixed shapes")
        if not isinstance(index, (int, np.integer)):
            raise TypeError(f"shape set index must be an int; got {index!r}")
        if isinstance(index, bool) or not 0 <= index < len(sets):
            raise IndexError(f"shape set {index!r} out of range: the model has {len(sets)}")
        if getattr(self, "_shape_set", None) == index and self._inputs:
            return
        self._check_no_views()
        self._shape_set = None
        set_shapes(self._ctx, self._of.inputs, sets[index])
        self._bind_all()
        self._shape_set = index

    # -- lifetime --------------------------------------------------------------------------
    @property
    def closed(self) -> bool:
        return self._ctx is None

    def _check_open(self, what: str) -> None:
        _guard.check_process(self, self._lock.pid)
        if self._ctx is None:
            raise ValueError(f"{what} on closed ZeroCopySession")

    @staticmethod
    def _check_index(i: int, n: int, what: str) -> None:
        if not isinstance(i, (int, np.integer)):
            raise TypeError(f"{what} index must be an int; got {i!r}")
        if isinstance(i, bool) or not 0 <= i < n:
            raise IndexError(f"{what} index {i!r} out of range: the model has {n} {what}(s)")

    def _check_not_busy(self, what: str) -> None:
        """RuntimeError when called from inside a call on the session's context (one of its
        custom op callbacks), which holds that context and views of its memory."""
        ctx = self._ctx
        if ctx is not None and ctx.busy_in_this_thread:
            raise RuntimeError(f"{what}: the ZeroCopySession is busy in this thread (its "
                               "run() is running a custom op callback, which is where this "
                               "was called from); a callback cannot change or close the "
                               "session it runs in")

    def close(self) -> None:
        """Free the session's memory and context.  A second call does nothing.

        Raises
        ------
        BufferError
            A view of the session's memory (``inputs[i]``, ``outputs[i]`` or an array made
            from them) is still alive: delete it first.
        RuntimeError
            Called from a custom op callback of the session's own run, or in a child of
            fork() on a session of the parent.
        """
        if self._ctx is not None:
            self._refusal_checks("close", release=True)

    def _close_quietly(self) -> None:
        """The finalizer's close: a view of the session's memory alive keeps it open (with
        its context); the model is told which, for its close's refusal."""
        try:
            self.close()
        except BufferError:
            self._note_left_open()
        except Exception:                # a callback of this thread, a fork, teardown
            pass

    def _note_left_open(self) -> None:
        fam, ctx = self._of, self._ctx
        if ctx is None:
            return
        self._inputs = self._outputs = ()    # the session's own views go with it
        _guard.settle_views(lambda: sum(m.exports for m in self._owned if m is not None))
        held = []
        for kind, mems, tensors in (("inputs", self._in_mems, self._of.inputs),
                                    ("outputs", self._out_mems, self._of.outputs)):
            for i, m in enumerate(mems):
                if m is not None and m.exports and not (kind == "inputs" and i in self._chained):
                    held.append(f"{kind}[{i}] ({tensors[i].name!r})")
        views = " and ".join(held) if held else "its memory"
        fam.note_left_open(ctx, mems=self._owned, holder=(
            f"a ZeroCopySession (outputs={self.output_kind!r}"
            f"{', opened at ' + self._opened_at if self._opened_at else ''}) was dropped "
            f"without close() "
            f"while a numpy array made from its {views} was alive; that array keeps the "
            f"session's context open: delete it (or keep a .copy() of what must outlive the "
            f"session), then close the Model again; close a session before dropping it "
            f"(`with model.zero_copy() as s:`)"))

    def _refusal_checks(self, what: str, release: bool = False) -> None:
        """Raise what close() would refuse now (a child of fork, a callback of the
        session's own run, a view of its memory alive), closing nothing; with `release`,
        close in the same hold of the lock that counted the views (a view taken meanwhile
        in another thread is counted: nothing is freed under it)."""
        _guard.check_process(self, self._made_in)
        self._check_not_busy(what)
        with self._lock(what):
            if self._ctx is None:
                return                   # closed meanwhile by another thread
            self._check_no_views()       # BufferError, the session intact, while one lives
            if release:
                self._release()

    def _release(self) -> None:
        self._closing = True             # a run meeting the closed memory says so
        try:
            self.__dict__.pop("run", None)
            self._inputs = self._outputs = ()
            for m in self._owned:
                m.close()
            self._owned = []
            self._in_mems, self._out_mems = [], []
            if self._ctx is not None:
                self._ctx.close()
                self._ctx = None
        finally:
            self._closing = False

    def __repr__(self) -> str:
        if self._ctx is None:
            return "<rknnx.ZeroCopySession closed>"
        ins = ", ".join(f"{v.shape}:{v.dtype}" for v in self._inputs)
        outs = ", ".join(f"{v.shape}:{v.dtype}" for v in self._outputs)
        return f"<rknnx.ZeroCopySession outputs={self.output_kind} in=[{ins}] out=[{outs}]>"

    def _collected(self):
        # a runner's own session, or one whose Model could not be closed by its `with`
        # block, is closed when collected without a warning
        if self._internal or self._close_when_collected or self._of.close_when_collected:
            return None
        return unclosed(self)

    # when collected (Closable.__del__): its memory is bound to its context, a reference
    # cycle in the binding that only the garbage collector would break, so it is freed then
    # (not at interpreter exit, where a daemon thread stopped inside a run would hold the
    # context for ever)
