"""The facade's locks and the checks that keep them from hanging (see docs/architecture.md,
Locking and the GIL).

A facade lock serializes a sequence of runtime calls (a Model's ``inputs_set`` + ``run``
+ ``outputs_get``, a Pool's submissions).  It is not re-entrant, and two ways to wait on
it for ever are refused with a RuntimeError instead, as the binding refuses them for its
context locks:

- re-entry: the thread that holds it calls back into its object (a custom op callback, a
  signal handler or a finalizer running inside the call);
- fork: a child of ``fork()`` inherits the lock as it was, held by a parent thread that does
  not exist in the child; every object made before the fork belongs to the parent.

Pure Python (no extension): on an uncontended path it costs a comparison and a C call
more than a plain lock.
"""

from __future__ import annotations

import contextlib
import os
import threading
from typing import Any, Optional

__all__ = ["Lock", "Role", "busy_error", "check_process", "forget_frames", "pid",
           "settle_views", "FREE_THREADED"]

#: the current process id, kept up to date across fork without a system call
pid = os.getpid()


def _after_fork_in_child() -> None:
    global pid
    pid = os.getpid()


os.register_at_fork(after_in_child=_after_fork_in_child)


def inherited_error(obj: Any, creator: int) -> RuntimeError:
    """The error for `obj` (or the class name `obj`), created in process `creator`, used in
    a child of fork (the binding's words for its own objects)."""
    kind = obj if isinstance(obj, str) else type(obj).__name__
    return RuntimeError(
        f"this {kind} was created in process {creator}; it cannot be used in "
        f"process {pid} (a child of fork(): the runtime's threads, locks and state do not "
        f"survive fork); create it after fork, in the child")


def check_process(obj: Any, creator: int) -> None:
    """RuntimeError if `obj` (created in process `creator`) is used in a child of fork."""
    if creator != pid:
        raise inherited_error(obj, creator)


#: a free-threaded CPython (3.13t, 3.14t), whether or not the GIL was turned back on
FREE_THREADED = bool(__import__("sysconfig").get_config_var("Py_GIL_DISABLED"))


def settle_views(counts) -> int:
    """The views `counts()` counts once the views this thread just dropped are freed.

    On a GIL build an object is freed when its last reference goes, so the facade drops its
    own numpy views of NPU memory and counts what is left.  A free-threaded CPython frees
    an object whose last reference a thread other than its maker dropped only when the
    maker's thread merges its reference counts (biased reference counting): the view is
    dead but still counted, and a close from another thread would be refused.  A garbage
    collection merges every thread's queued counts and frees what they leave dead, one
    link of a chain each: the array freed by one collection drops its base (a memoryview,
    the mem's export), which the maker's thread owns too and which waits for the next.  A
    collection asked while another thread's runs returns at once, having done nothing, so
    the threads that settle views (several closing one Model at once) take turns
    (_settling), and collections are run until the views are gone, 12 at most, the later
    ones 2 ms apart, and only there, when views still count (the refusal path, or a close
    from another thread); a view still referenced anywhere stays counted."""
    n = counts()
    if n and FREE_THREADED:
        import gc
        import time

        for i in range(12):
            with _settling:
                gc.collect()
            n = counts()
            if not n:
                break
            if i >= 2:
                time.sleep(0.002)
    return n


_settling = threading.Lock()             # settle_views' collections, one at a time


_players = threading.local()             # .roles: the Roles the calling thread plays


class Role:
    """A part a thread plays while it runs a loop of the facade's (a Pool's worker): ``with
    role:`` marks the calling thread, :meth:`played_here` asks whether the calling thread
    is marked.

    The mark is a thread-local reference to this object, so it ends with the ``with``
    block and cannot outlive its thread.  A thread id would: ids are reused by threads
    started after a thread ends, and an ordinary thread would be taken for a worker that is
    gone (docs/architecture.md, Locking and the GIL).
    """

    __slots__ = ("__weakref__",)

    def __enter__(self) -> "Role":
        here = _players
        roles = getattr(here, "roles", None)
        if roles is None:
            roles = here.roles = []
        roles.append(self)
        return self

    def __exit__(self, *exc) -> None:
        roles = _players.roles
        # the last mark of this role (roles nest; a role is left in the order entered)
        for k in range(len(roles) - 1, -1, -1):
            if roles[k] is self:
                del roles[k]
                break

    def played_here(self) -> bool:
        """Whether the calling thread is inside ``with self:``."""
        roles = getattr(_players, "roles", None)
        return roles is not None and any(r is self for r in roles)


class Lock:
    """A lock of one facade object (`owner`, an object or a class name, for the messages):
    RuntimeError instead of a wait that cannot end (re-entry from the holding thread, a
    lock inherited across fork).

    ``with lock(what):`` checks, then holds ``lock.mutex`` (a ``threading.Lock``, taken by
    its C-level ``with``) and records the holding thread's id inside that ``with`` and
    clears it before leaving: an exception such as KeyboardInterrupt cannot leave the lock
    held, and the record names only a thread that holds the lock now (a thread id kept
    after the release could name a later thread: ids are reused).  `pid` is the process
    that made it.
    """

    __slots__ = ("mutex", "pid", "owner", "holder", "__weakref__")

    def __init__(self, owner: Any):
        self.mutex = threading.Lock()
        self.pid = pid                   # the module's: the process that made the lock
        self.owner = owner if isinstance(owner, str) else type(owner).__name__
        self.holder: Optional[int] = None    # the id of the thread holding it, while held

    def check(self, what: str) -> None:
        """Raise if waiting for the lock could never end: it was inherited across fork, or
        this thread holds it already."""
        if self.pid != pid:
            raise RuntimeError(
                f"{what}: this {self.owner} was created in process {self.pid}; it cannot be "
                f"used in process {pid} (a child of fork(): the runtime's threads, locks "
                f"and state do not survive fork); create it after fork, in the child")
        if self.holder == threading.get_ident():
            raise busy_error(self.owner, what)

    def held_here(self) -> bool:
        """Whether the calling thread holds the lock."""
        return self.holder == threading.get_ident()

    def __call__(self, what: str):
        """The lock to hold with ``with`` (after the checks of :meth:`check`)."""
        self.check(what)
        return self._hold()

    @contextlib.contextmanager
    def _hold(self):
        with self.mutex:
            try:
                self.holder = threading.get_ident()
                yield self
            finally:
                self.holder = None


def busy_error(owner: str, what: str) -> RuntimeError:
    """The error for a call into `owner` (a class name) from code it is running."""
    return RuntimeError(
        f"{what}: the {owner} is busy in this thread (a call on it is running a custom op "
        f"callback, signal handler or finalizer, which is where this was called from); such "
        f"code cannot call back into the {owner}")


def forget_frames(exc: Optional[BaseException]) -> None:
    """Clear the local variables of the finished frames in the tracebacks of `exc` (and the
    exceptions it chains): they may hold numpy views of NPU memory (the facade's own, or
    those handed to a custom op), which would otherwise pin that memory, and make close()
    refuse, for as long as the exception is kept.  Frames still running keep theirs."""
    seen = set()
    todo = [exc]
    while todo:
        e = todo.pop()
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        tb = e.__traceback__
        while tb is not None:
            try:
                tb.tb_frame.clear()
            except RuntimeError:         # a frame still executing
                pass
            tb = tb.tb_next
        todo.append(e.__cause__)
        todo.append(e.__context__)
