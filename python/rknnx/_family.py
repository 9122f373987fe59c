"""The contexts of one model: made in one place, registered in one place, closed in one
order (docs/architecture.md, "Lifetimes").

A :class:`ContextFamily` owns every context of a model and every lifetime that hangs on
them: the first context (whose weights the others share) and the owner's runner on it,
the lock that stands for "the family is changing" (members being made, the close, the
owner's runs on its runner), the core mask and custom operators every new context gets,
and the registry of the sessions and pools made from it.  It makes each member, registers
it, and closes its members and then itself from its own state, calling nothing back in
the object that holds it.  A :class:`rknnx.Model` describes the model (the
:class:`Description` it builds before the family) and holds the family; a session holds
the family, never the Model; a Pool finds the family of its model with
:meth:`ContextFamily.of`.
"""

from __future__ import annotations

import contextlib
import weakref
from typing import Any, List, Optional, Sequence, Tuple

from rknnx import _guard, _quirks
from rknnx import lowlevel as _ll
from rknnx import platforms as _platforms
from rknnx._runner import GeneralRunner, Runner, SessionRunner, pin
from rknnx.errors import NotSupportedError, RKNNError, RKNNFailError
from rknnx.runtime import chip_of, note_fallback

__all__ = ["ContextFamily", "Description", "chip_supports", "open_context"]

#: owner (a Model) -> its family; weak: an entry goes with its owner
_FAMILIES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def open_context(source: bytes, flags: int, path: Optional[str]):
    """``rknn_init`` of the model's bytes; a failure says its cause and fix when rknnx can
    see it (no NPU device, a model for another chip ...: rknnx._board).  A file with custom
    operators on a runtime without them is refused before: librknnrt 1.5.2 aborts the
    process in ``rknn_init`` (rknnx._quirks)."""
    _quirks.check_custom_ops_supported(source, path)
    try:
        return _ll.Context(source, flags)
    except RKNNError as e:
        if e.func != "rknn_init" or e.code is None:
            raise
        from rknnx import _board

        info = _ll.runtime_info()
        better = _board.explain_init_failure(e, source, path, info, chip_of())
        if better is e:
            raise
        raise better from None


class Description:
    """What every context of a model shares and a session needs to know: the chip, the
    tensors (``rknnx.TensorInfo``), the shape sets, the runtime's version as the first
    context answers it (None if refused).  Immutable once made."""

    __slots__ = ("chip", "general", "inputs", "outputs", "dynamic", "shape_sets", "version")

    def __init__(self, chip: Optional[str], inputs, outputs,
                 shape_sets: List[Tuple[Tuple[int, ...], ...]], version=None):
        self.chip = chip
        self.version = version
        self.inputs = tuple(inputs)
        self.outputs = tuple(outputs)
        self.shape_sets = shape_sets
        self.dynamic = bool(shape_sets)
        self.general = self.supports("rknn_inputs_set")

    def supports(self, function: Optional[str] = None, *, query: Optional[str] = None) -> bool:
        return chip_supports(self.chip, function, query)


def chip_supports(chip: Optional[str], function: Optional[str] = None,
                  query: Optional[str] = None) -> bool:
    """Whether `chip` has the C function `function` or answers `query`, from the vendor's
    Tables 3-1/3-2 (:mod:`rknnx.platforms`); True on a chip they do not know (or None)."""
    if chip is None:
        return True
    try:
        if query is not None:
            return _platforms.supports_query(chip, query)
        return _platforms.supports(chip, function)
    except ValueError:
        return True


def _gone():
    """A dead weak reference's answer."""
    return None


class ContextFamily:
    """The contexts sharing one model's weights (see the module's docstring).

    `ctx` is the model's first context, `desc` what was read from it; the family owns both
    from now on.  `owner` (the Model) names the family in the messages and finds it again
    (:meth:`of`); the family keeps no reference to it.

    :attr:`lock` stands for "the family is changing": every member is made with it held,
    after checking that no close has begun, so no context outlives the family or borrows
    its weights after the close has listed the members; the owner's runs on :attr:`own`
    hold it (a dynamic model's shape set then its run, the copies of a session runner).
    It is held only for the family's own changes, never while waiting for a member (a
    session's lock, a pool's workers), so a member's call in another thread that needs
    the family never waits for a thread that waits for it.
    """

    def __init__(self, ctx, desc: Description, source: bytes, path: Optional[str],
                 flags: int, owner: Any):
        self.source = source
        self.path = path
        self.flags = flags
        self.kind = type(owner).__name__
        self.lock = _guard.Lock(self.kind)
        self.core_mask = None            # set on every context made from now on
        self.custom_ops: tuple = ()      # registered on every context made from now on
        self.closing = False             # close() has begun: no new context
        #: the owner's `with` block could not close it: its sessions close when collected,
        #: without a warning
        self.close_when_collected = False
        self.sessions: "weakref.WeakSet" = weakref.WeakSet()   # the user's, not runners'
        self.pools: "weakref.WeakSet" = weakref.WeakSet()
        self._file_ops: Optional[dict] = None    # op type -> node names, read when needed
        # the contexts that borrow the first context's weights (share_weights_with, where
        # the runtime has no rknn_dup_context): the first refuses to close while one is
        # open; each maps to who holds it open when the close cannot close it ("": a
        # member the close closes)
        self._lent: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
        # the contexts of sessions dropped unclosed while a view of their memory was alive
        # -> weak references to that memory: the close closes each once no view is left
        # (the memory and its context refer to each other: without a garbage collection
        # they would stay open, and a borrower keep the first context from closing)
        self._left: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
        #: the first context: its weights are the family's
        self.ctx = ctx
        self.desc = desc
        #: the runtime's version as the first context answers it (None if refused): the
        #: crashes of that version that rknnx's call patterns would set off are avoided
        #: (rknnx._quirks, docs/abi-notes.md "Runtime quirks")
        self.version = desc.version
        self._custom_file: Optional[bool] = None   # the file uses custom ops (asked once)
        #: the frame id of the owner's runner when the close closed it
        self.frame_id_closed = 0
        self._own = _gone                # the owner's runner, weakly (own_runner())
        _FAMILIES[owner] = self

    @staticmethod
    def of(owner) -> "ContextFamily":
        """The family of `owner` (a :class:`rknnx.Model`)."""
        family = _FAMILIES.get(owner)
        if family is None:
            raise TypeError(f"an rknnx.Model was expected; got {type(owner).__name__}")
        return family

    # -- the description, for sessions (the names of a Model's) ----------------------------
    @property
    def chip(self) -> Optional[str]:
        return self.desc.chip

    @property
    def inputs(self):
        return self.desc.inputs

    @property
    def outputs(self):
        return self.desc.outputs

    @property
    def shape_sets(self):
        return self.desc.shape_sets

    @property
    def dynamic(self) -> bool:
        return self.desc.dynamic

    def supports(self, function: Optional[str] = None, *, query: Optional[str] = None) -> bool:
        return self.desc.supports(function, query=query)

    # -- making contexts -------------------------------------------------------------------
    def check_not_in_call(self, what: str, running: bool = False) -> None:
        """RuntimeError inside a call on the first context (a custom op callback), or with
        `running` inside one of the owner's runs (:attr:`lock` held by this thread): a new
        context is made from that context, and a close waits for the run it is called
        from."""
        if (running and self.lock.held_here()) or self.ctx.busy_in_this_thread:
            raise RuntimeError(f"{what}: the Model is busy in this thread (a call on it is "
                               "running a custom op callback, which is where this was called "
                               "from); such code cannot call back into the Model")

    def check_not_closing(self, what: str) -> None:
        """ValueError once close() has begun (with the lock held): a context made now would
        outlive the family's, or keep it from closing (weights lent).  The words say
        whether the close is done or under way (it may yet be refused)."""
        _guard.check_process(self.kind, self.lock.pid)
        if self.ctx.closed:
            raise ValueError(f"{what} on closed Model")
        if self.closing:
            # a close in another thread is asking its refusals: it may yet be refused
            raise ValueError(f"{what} on a Model being closed by another thread (if that "
                             "close is refused, the Model stays open: call again then)")

    @contextlib.contextmanager
    def making(self, what: str):
        """``with family.making(what):`` holds the lock, once no close has begun, for the
        making of contexts and of what holds them (a Pool starts its workers in it)."""
        self.check_not_in_call(what)
        with self.lock(what):
            self.check_not_closing(what)
            yield self

    def context(self, flags: int = 0):
        """The one place a context of the model is made (the caller is in :meth:`making`):
        it shares the weights with the first (``rknn_dup_context`` where the chip has it
        and the model is static, else ``rknn_init`` with ``RKNN_FLAG_SHARE_WEIGHT_MEM``,
        else a plain ``rknn_init`` of the model's bytes: one W line says so), and gets
        the core mask and custom operators.  No copy is made of the first context of a
        model with custom operators (its file's, or registered) on a runtime where
        destroying a copy breaks the source's runs (librknnrt 1.6.0, rknnx._quirks): the
        weights are shared through ``rknn_init``."""
        flags = self.flags | int(flags)
        dynamic = self.desc.dynamic
        ctx = None
        copy = not dynamic and flags == self.flags and self.desc.supports("rknn_dup_context")
        if copy and _quirks.copies_break_custom_ops(self.version) and self._runs_custom_ops():
            copy = False
        if copy:
            try:
                ctx = self.ctx.dup()
            except (NotSupportedError, RKNNError) as e:
                # an old or mini runtime without it: the model is loaded again instead
                note_fallback("rknn_dup_context", f"each session and pool worker loads the "
                              f"model again (more memory) ({e})")
        if ctx is None and not dynamic:
            try:
                ctx = _ll.Context(self.source, flags | int(_ll.InitFlag.SHARE_WEIGHT_MEM),
                                  share_weights_with=self.ctx)
                self._lent[ctx] = ""
            except RKNNError:
                ctx = None               # the runtime refuses to share: weights of its own
        if ctx is None:
            ctx = open_context(self.source, flags, self.path)
        try:
            if self.core_mask is not None:
                ctx.set_core_mask(self.core_mask)
            if self.custom_ops:
                from rknnx import custom

                custom.register(ctx, self.custom_ops)
        except BaseException:
            ctx.close()
            raise
        return ctx

    def mem_size(self):
        """``RKNN_QUERY_MEM_SIZE`` of the model asked on a context of its own, closed at
        once, for a runtime whose copies of a context asked it crash (librknnrt 1.4.0,
        rknnx._quirks): ``(MemSize, None)``, or ``(None, why)`` if refused.  That context
        is no member (it shares nothing, and no call of the family's waits for it): it is
        asked as the first context's answer is kept elsewhere, by a closed or closing
        Model and from code the Model is running too."""
        _guard.check_process(self.kind, self.lock.pid)
        ctx = open_context(self.source, self.flags, self.path)
        try:
            return ctx.query(_ll.QueryCmd.MEM_SIZE), None
        except (RKNNError, ValueError) as e:
            return None, f"MEM_SIZE refused: {e}"
        finally:
            ctx.close()

    def _runs_custom_ops(self) -> bool:
        """Custom operators are registered, or the model's file uses some (True for a
        file rknnx cannot read)."""
        if self.custom_ops:
            return True
        if self._custom_file is None:
            self._custom_file = _quirks.declares_custom_ops(self.source)
        return self._custom_file

    def new_context(self, flags: int = 0):
        """:meth:`context`, in :meth:`making`."""
        with self.making("new_context"):
            ctx = self.context(flags)
            if ctx in self._lent:
                self._lent[ctx] = ("a low-level Context from Model.new_context() is still "
                                   "open: close it first")
            return ctx

    def note_left_open(self, ctx, holder: str, mems=()) -> None:
        """A member dropped unclosed left `ctx` open, with its memory `mems` (a view of
        which is alive): `holder` says what holds it and what to do, for the close's
        refusal while it borrows the weights; the close closes it (the memory, then the
        context) once no view of the memory is left."""
        if ctx in self._lent:
            self._lent[ctx] = holder
        self._left[ctx] = [weakref.ref(m) for m in mems]

    def _left_free(self, ctx) -> bool:
        """Whether `ctx` was left open by a dropped member whose views are all gone."""
        refs = self._left.get(ctx)
        if refs is None:
            return False
        for r in refs:
            m = r()
            if m is not None and m.exports:
                return False
        return True

    def close_left(self) -> None:
        """Close the contexts dropped members left open whose views are all gone (their
        memory first, as the member's close would)."""
        for ctx, refs in list(self._left.items()):
            if ctx.closed or self._left_free(ctx):
                for r in refs:
                    m = r()
                    if m is not None:
                        m.close()
                ctx.close()
                self._left.pop(ctx, None)

    def own_runner(self) -> Runner:
        """The owner's runner, run with :attr:`lock` held: a GeneralRunner on the first
        context, or (chips without the general API) a SessionRunner whose session is
        opened at the first run.  The owner holds it; the family keeps it weakly, as its
        members (a runner refers to the family: a strong reference back would be a
        cycle), and closes it last."""
        d = self.desc
        runner = (GeneralRunner(self.ctx, d.inputs, d.shape_sets, explain=self.explain_model)
                  if d.general else SessionRunner(self._own_session, d.inputs))
        self._own = weakref.ref(runner)
        return runner

    def register(self, member, pool: bool = False) -> None:
        """Register `member`, a session or (`pool`) a Pool made in :meth:`making`: the
        family closes it with itself (weakly held: a member nobody holds is collected)."""
        (self.pools if pool else self.sessions).add(member)

    def session(self, internal: bool, options):
        """A ZeroCopySession on a new context (the caller is in :meth:`making`); the
        user's are registered (closed with the family), a runner's belong to the runner."""
        from rknnx.session import ZeroCopySession

        session = ZeroCopySession(self, _internal=internal, **options)
        if not internal:
            self.register(session)
        return session

    def runner_session(self, **options):
        """What a pool worker's session runner opens its sessions with."""
        with self.making("run"):         # "run on closed Model"
            return self.session(True, options)

    def _own_session(self, **options):
        """What the owner's session runner opens its sessions with: its run holds the
        lock already."""
        self.check_not_closing("run")
        return self.session(True, options)

    def runner(self, mask=None, required: bool = False) -> Runner:
        """A pool worker's runner (the caller is in :meth:`making`): a GeneralRunner on a
        new context, or a SessionRunner; pinned to `mask` (a mask the pool chose, not
        `required`, that the runtime refuses is dropped with one W line)."""
        d = self.desc
        if d.general:
            ctx = self.context()
            try:
                pinned = mask is not None and pin(ctx, mask, required)
                # (a runner of a static model asks its output specs now: a query that may fail)
                return GeneralRunner(ctx, d.inputs, d.shape_sets, mask if pinned else None,
                                     explain=self.explain_pool)
            except BaseException:
                ctx.close()
                raise
        return SessionRunner(self.runner_session, d.inputs, mask, required,
                             self.session(True, {}))

    def runners(self, masks: Sequence[Any], required: bool) -> list:
        """One runner per entry of `masks` (the caller is in :meth:`making`); none if one
        fails (those made are closed)."""
        made: list = []
        try:
            for mask in masks:
                made.append(self.runner(mask, required))
        except BaseException:
            for r in made:
                r.close()
            raise
        return made

    def set_core_mask(self, mask) -> list:
        """Every context made from now on runs on `mask`; returns the open sessions, which
        the caller sets outside the lock (each waits for its context's run)."""
        with self.making("set_core_mask"):
            self.core_mask = mask
            return [s for s in list(self.sessions) if not s.closed]

    def register_custom_ops(self, ops) -> None:
        """Register `ops` on the first context and on every context made from now on."""
        from rknnx import custom

        with self.making("register_custom_ops"):
            custom.register(self.ctx, ops)
            self.custom_ops += tuple(ops)

    # -- custom operators a run needs --------------------------------------------------------
    def file_custom_ops(self) -> dict:
        """The custom operators the model's file names: op type -> its nodes' names
        (read once with :mod:`rknnx.modelfile`; empty when the file names none or the
        reader cannot read it)."""
        if self._file_ops is None:
            from rknnx import modelfile

            ops: dict = {}
            try:
                for op in modelfile.read(self.source).custom_ops:
                    ops.setdefault(op.type, []).append(op.name)
            except (RKNNError, ValueError):  # a file the reader refuses: nothing to say
                pass
            self._file_ops = ops
        return self._file_ops

    def explain_model(self, e: BaseException, ctx) -> BaseException:
        return self.explain_run_failure(e, ctx, "model")

    def explain_pool(self, e: BaseException, ctx) -> BaseException:
        return self.explain_run_failure(e, ctx, "pool")

    def unregistered_ops(self, ctx) -> Tuple[str, ...]:
        """The op types of :meth:`file_custom_ops` with no implementation on `ctx`."""
        needed = self.file_custom_ops()
        if not needed:
            return ()
        try:
            have = {o.op_type for o in ctx.custom_ops}
        except ValueError:               # closed meanwhile
            return ()
        return tuple(t for t in needed if t not in have)

    def explain_run_failure(self, e: BaseException, ctx, what: str = "session") -> BaseException:
        """`e` with its cause when it is ``rknn_run``'s RKNN_ERR_FAIL on `ctx` and the
        model's file names custom operators `ctx` has no implementation of (the runtime
        says only -1): a new RKNNFailError naming them and how to register them; else `e`.
        `what` names the holder of `ctx` when it is not the model's own context."""
        if not isinstance(e, RKNNFailError) or e.func != "rknn_run":
            return e
        missing = self.unregistered_ops(ctx)
        if not missing:
            return e
        needed = self.file_custom_ops()
        names = ", ".join(f"{t!r} (node{'s' if len(needed[t]) > 1 else ''} "
                          f"{', '.join(needed[t])})" for t in missing)
        one = len(missing) == 1
        registered = {o.op_type for o in self.custom_ops}
        late = [t for t in missing if t in registered]
        if late:
            fix = (f"{', '.join(map(repr, late))} {'was' if len(late) == 1 else 'were'} "
                   f"registered on the model after this {what} was opened, and only "
                   f"contexts opened later get them: open the {what} again after "
                   "model.register_custom_ops(...)")
        else:
            fix = (f"implement {'it' if one else 'each'} as a function decorated with "
                   f"@rknnx.custom_op({missing[0]!r}) and call model.register_custom_ops(op"
                   f"{'' if one else ', ...'}) before running, or before opening sessions and "
                   "pools (docs/guide/custom-ops.md; `rknnx info` lists a model's custom "
                   "operators)")
        better = RKNNFailError(
            f"{e.message}: the model uses custom operator{'' if one else 's'} {names}, with "
            f"no implementation registered on this context: {fix}", e.code, e.func)
        return better

    # -- the close -------------------------------------------------------------------------
    def check_closable(self, what: str = "close", closing: bool = False) -> tuple:
        """Raise what :meth:`close` would raise now, closing nothing; returns the pools and
        the open sessions.  Each refusal is asked once: a child of fork, a call of this
        thread on the family (a custom op callback, the owner's run), the owner's runner
        (BufferError while a view of its session's memory is alive), a context the close
        cannot close that borrows the weights, and each member's own refusal (RuntimeError
        from a worker of a pool or a callback of a session, BufferError while a view of a
        session's memory is alive).  With `closing`, the family is marked closing in the
        same hold of the lock that asks the runner: no member is made from then on, so
        the members listed are all there are; a refusal takes the mark back."""
        _guard.check_process(self.kind, self.lock.pid)
        self.check_not_in_call(what, running=True)
        with self.lock(what):
            own = self._own()
            if own is not None:
                own.check_closable()
            self.closing = self.closing or closing
        try:
            self.check_not_lent()
            pools = list(self.pools)
            for p in pools:
                p.check_closable("close the Model")
            sessions = [s for s in list(self.sessions) if not s.closed]
            for s in sessions:
                s.check_closable(what)
        except BaseException:
            if closing:
                self.closing = False
            raise
        return pools, sessions

    def check_not_lent(self) -> None:
        """Refuse, closing nothing, while a context the close does not close borrows the
        first context's weights (which then cannot close): BufferError naming the view of
        a dropped session that keeps its context open, RuntimeError for a context of
        :meth:`new_context` (the runtime's refusal names neither)."""
        held = [h for c, h in list(self._lent.items())
                if h and not c.closed and not self._left_free(c)]
        if not held:
            return
        views = [h for h in held if not h.startswith("a low-level Context")]
        n = len(held)
        msg = (f"{self.kind}.close: the model's weights are lent to {n} open context"
               f"{'s' if n > 1 else ''} that this close cannot close (here each session and "
               f"new_context() borrows them: share_weights_with): {'; '.join(held)}.  "
               "Nothing was closed")
        raise (BufferError if views else RuntimeError)(msg)

    def close(self) -> None:
        """Close every member, then the owner's runner and the first context, in one
        order; a second call does nothing.  Everything that would refuse is asked first,
        once (:meth:`check_closable`), so a refusal closes nothing; then the pools are
        shut down (their queued frames cancelled), the sessions closed (each counts its
        views again under the lock it frees under), and, with the lock held (a run of the
        owner's in flight ends first), the owner's session runner and the first context
        closed."""
        if self.ctx.closed:
            return
        pools, sessions = self.check_closable("close", closing=True)
        try:
            for p in pools:
                p.shutdown(wait=True, cancel_pending=True)
            for s in sessions:
                s.close()
            with self.lock("close"):
                if not self.ctx.closed:  # (not closed meanwhile by another thread)
                    self.close_left()   # (before the first: they may borrow its weights)
                    own = self._own()
                    if own is not None:
                        self.frame_id_closed = own.frame_id
                        if own.ctx is not self.ctx:
                            own.close()  # a session runner (the general one runs on ctx)
                    self.ctx.close()
        except BaseException:
            if not self.ctx.closed:
                self.closing = False     # still open: may make members again
            raise
