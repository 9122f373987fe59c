"""Runners: the one seam between the facade and a context that runs user arrays.

A runner runs prepared inputs (what :meth:`rknnx.Model.prepare_inputs` returns: one
``(array, layout)`` per input and the shape set they need) on one context of a model and
returns the outputs: copy in, run, read out.  There are two kinds, one per flow:

- :class:`GeneralRunner` holds a context in the general flow: ``Context.infer`` hands the
  inputs over, runs and writes the outputs into arrays in one crossing of the binding;
- :class:`SessionRunner` holds a zero-copy session (chips without the general API,
  RV1106/RV1103/RK2118): the inputs are copied into its views, the outputs out of them.

Both keep one protocol, :class:`Runner`.  ``Model.run`` runs on the model's own runner
(``ContextFamily.own_runner``, run with the family's lock held); each :class:`rknnx.Pool` worker
owns one (made by the model's family: ``rknnx._family.ContextFamily.runners``); the CLI's
and the benchmark's general flows use the same calls.  A runner is not thread-safe: its
owner serializes its calls (the family's lock, a pool worker's thread).  See
docs/architecture.md, "One path".
"""

from __future__ import annotations

from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from rknnx import _guard
from rknnx import lowlevel as _ll
from rknnx._facts import perf_of
from rknnx._tensors import TensorInfo, check_out, set_shapes
from rknnx.errors import NotSupportedError, RKNNError, RKNNFailError
from rknnx.runtime import note_fallback

__all__ = ["Runner", "GeneralRunner", "SessionRunner", "pin", "PASS_THROUGH"]

#: the layout tag of an input handed to the runtime as it is (``pass_through``)
PASS_THROUGH = "pass_through"

Specs = List[Tuple[Tuple[int, ...], np.dtype]]


def pin(ctx_or_session, mask, required: bool) -> bool:
    """``set_core_mask(mask)`` on a context or session; a refusal raises if the user asked
    for the mask (`required`), else it is noted once (one W line), the runtime chooses the
    cores, and False is returned."""
    try:
        ctx_or_session.set_core_mask(mask)
    except (RKNNError, NotSupportedError) as e:
        if required:
            raise
        note_fallback("rknn_set_core_mask", f"pool workers run on the cores the runtime "
                      f"chooses ({e})")
        return False
    return True


class Runner:
    """The protocol of the runners: prepared inputs in, outputs out, on what the runner
    owns (a context, or a session).

    - ``kind``: "general" or "zero-copy"; ``ctx``: the context it runs on (None for a
      session runner, whose context is its session's); ``mask``: the core mask it is
      pinned to (None: the runtime's choice); ``closed``;
    - ``run(prepared, shape_set, raw, out=None)``: the outputs (``Model.run``'s);
    - ``frame_id``, ``perf()``: of its last run; ``set_core_mask(mask)``;
    - ``check_closable()``: raise what ``close()`` would raise now, closing nothing;
    - ``close()``: close what it owns (waits for a run in another thread).
    """

    kind = ""
    ctx = None
    mask = None

    def check_closable(self) -> None:
        """Nothing to check by default: a context refuses to close under a view itself."""


class GeneralRunner(Runner):
    """One context in the general flow (``rknn_inputs_set``, ``rknn_run``,
    ``rknn_outputs_get``, fused in ``Context.infer``)."""

    kind = "general"

    def __init__(self, ctx, inputs: Sequence[TensorInfo],
                 shape_sets: Sequence[Tuple[Tuple[int, ...], ...]], mask=None,
                 explain: Optional[Callable] = None):
        self.ctx = ctx
        #: (error, ctx) -> the error with its cause (the family's explain_run_failure)
        self.explain = explain
        self.mask = mask                     # the core mask the context is pinned to
        self._inputs = tuple(inputs)
        self._sets = shape_sets
        self._set: Optional[int] = None      # the shape set the context is at (None: none yet)
        self._specs: Dict[int, Specs] = {}    # by 2 * shape set + raw
        #: a static model's output specs by `raw`, known now (asked once): the same lists
        #: as out_specs(None, raw) gives (Model.run's fast path reads them here)
        self.static_specs: Dict[bool, Specs] = (
            {False: self.out_specs(None, False), True: self.out_specs(None, True)}
            if not shape_sets else {})

    @property
    def closed(self) -> bool:
        return self.ctx.closed

    def out_specs(self, shape_set: Optional[int], raw: bool) -> Specs:
        """``[(shape, dtype)]`` of the outputs at `shape_set` (float32 unless `raw`)."""
        # the key is a small int, not a (shape_set, raw) tuple: on a free-threaded CPython
        # (3.13t) a worker of a Pool looking up a tuple key that another thread stored
        # takes the dict's lock at every call (the lock-free compare needs a shared
        # reference to the stored key), and those lock waits were most of a Pool's
        # handoff there; a small int is immortal and compares by identity
        key = 2 * (shape_set or 0) + bool(raw)
        specs = self._specs.get(key)
        if specs is None:
            specs = [(tuple(a.dims), a.dtype if raw else np.dtype(np.float32))
                     for a in self.ctx.output_attrs]
            self._specs[key] = specs
        return specs

    def out_arrays(self, shape_set: Optional[int], raw: bool,
                   out: Optional[Sequence[np.ndarray]]) -> List[np.ndarray]:
        """The arrays the outputs at `shape_set` go into: new ones, or the caller's `out`
        checked against :meth:`out_specs` (the facade's check of ``out=``; Model.run's
        fast path has the binding make the same checks in C: ``Context.infer``'s
        ``fast_only``)."""
        specs = self.out_specs(shape_set, raw)
        if out is None:
            return [np.empty(shape, dtype) for shape, dtype in specs]
        return check_out(out, specs)

    def select(self, shape_set: Optional[int]) -> None:
        """Put the context at shape set `shape_set` unless it is there (a dynamic model
        runs only at a set chosen first)."""
        if shape_set is None or shape_set == self._set:
            return
        self._set = None                     # unknown if set_shapes fails half-way
        set_shapes(self.ctx, self._inputs, self._sets[shape_set])
        self._set = shape_set

    def run(self, prepared, shape_set: Optional[int], raw: bool,
            out: Optional[Sequence[np.ndarray]] = None) -> List[np.ndarray]:
        self.select(shape_set)
        items = [a if layout == t.layout else
                 _ll.Input(a, index=t.index, fmt=_ll.TensorFormat[layout[1]],
                           pass_through=True) if type(layout) is tuple else
                 _ll.Input(a, index=t.index, fmt=_ll.TensorFormat[layout])
                 for t, (a, layout) in zip(self._inputs, prepared)]
        arrays = self.out_arrays(shape_set, raw, out)
        try:
            self.ctx.infer(items, arrays, want_float=not raw)
        except RKNNFailError as e:
            better = e if self.explain is None else self.explain(e, self.ctx)
            if better is e:
                raise
            raise better from None
        return arrays

    @property
    def frame_id(self) -> int:
        return self.ctx.last_frame_id

    def perf(self):
        return perf_of(self.ctx, bool(int(self.ctx.flags) & int(_ll.InitFlag.COLLECT_PERF_MASK)))

    def set_core_mask(self, mask) -> None:
        self.ctx.set_core_mask(mask)
        self.mask = mask

    def close(self) -> None:
        self.ctx.close()


class SessionRunner(Runner):
    """A zero-copy session standing in for the general flow: copy in, run, copy out.  The
    session is opened at the first run (or given), and opened again when a run needs other
    input types or output kind; `mask` pins each session it opens."""

    kind = "zero-copy"

    def __init__(self, open_session: Callable[..., object], inputs: Sequence[TensorInfo],
                 mask=None, required: bool = False, session=None):
        self._open = open_session        # (outputs=, input_dtypes=) -> ZeroCopySession
        self._layouts = [t.layout for t in inputs]
        self._mask, self._required = mask, required
        self.mask = None                 # the core mask the session is pinned to
        self.session = session
        if session is not None and mask is not None:
            self._pin(session)

    @property
    def closed(self) -> bool:
        return self.session is not None and self.session.closed

    def _pin(self, session) -> None:
        try:
            self.mask = self._mask if pin(session, self._mask, self._required) else None
        except BaseException:
            session.close()
            raise
        self._required = False           # the sessions opened again later: best effort

    def session_for(self, prepared, raw: bool):
        """A session that takes `prepared` inputs and gives `raw` or float32 outputs."""
        kind = "raw" if raw else "float32"
        dtypes = [a.dtype for a, _ in prepared]
        s = self.session
        if s is not None and not s.closed and s.output_kind == kind and \
                [v.dtype for v in s.inputs] == dtypes:
            return s
        if s is not None:
            s.close()
        s = self._open(outputs=kind, input_dtypes=dtypes)
        if self._mask is not None:
            self._pin(s)
        self.session = s
        return s

    def run(self, prepared, shape_set: Optional[int], raw: bool,
            out: Optional[Sequence[np.ndarray]] = None) -> List[np.ndarray]:
        s = self.session_for(prepared, raw)
        if shape_set is not None:
            s.set_shape_set(shape_set)
        arrays = []
        for (a, layout), model_layout in zip(prepared, self._layouts):
            if layout != model_layout and a.ndim == 4:      # the other of NHWC/NCHW
                a = a.transpose((0, 2, 3, 1) if layout == "NCHW" else (0, 3, 1, 2))
            arrays.append(a)
        try:
            result = s.run_arrays(*arrays, out=out)
        except BaseException as exc:
            _guard.forget_frames(exc)    # no view of the session pinned by a kept error
            raise
        self._frames += 1
        return result

    #: runs made (the frame id: the zero-copy flow has no rknn_output_extend to say it;
    #: runs count from 1, as the general flow's ids do)
    _frames = 0

    @property
    def frame_id(self) -> int:
        return self._frames

    def perf(self):
        if self.session is None:
            raise ValueError("perf: the model has not run yet")
        return self.session.perf

    def set_core_mask(self, mask) -> None:
        self._mask, self._required = mask, True
        if self.session is not None and not self.session.closed:
            self.session.set_core_mask(mask)
            self.mask = mask

    def check_closable(self) -> None:
        """BufferError while a view of the session's memory is alive (nothing closed)."""
        if self.session is not None:
            self.session.check_closable()

    def close(self) -> None:
        # the session is kept (closed): a close in another thread at the same time waits
        # for this one inside session.close() instead of returning before it is done
        s = self.session
        if s is not None:
            s.close()
