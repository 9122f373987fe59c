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

Pure Python (no extension), so that it costs two attribute writes on an uncontended path.
"""

from __future__ import annotations

import os
import threading
from threading import get_ident
from typing import Any, Optional

__all__ = ["Lock", "check_process", "this_pid", "forget_frames"]

_pid = os.getpid()


def _after_fork_in_child() -> None:
    global _pid
    _pid = os.getpid()


os.register_at_fork(after_in_child=_after_fork_in_child)


def this_pid() -> int:
    """The current process id (kept up to date across fork without a system call)."""
    return _pid


def inherited_error(obj: Any, pid: int) -> RuntimeError:
    """The error for `obj`, created in process `pid`, used in a child of fork (the binding's
    words for its own objects)."""
    return RuntimeError(
        f"this {type(obj).__name__} was created in process {pid}; it cannot be used in "
        f"process {_pid} (a child of fork(): the runtime's threads, locks and state do not "
        f"survive fork); create it after fork, in the child")


def check_process(obj: Any, pid: int) -> None:
    """RuntimeError if `obj` (created in process `pid`) is used in a child of fork."""
    if pid != _pid:
        raise inherited_error(obj, pid)


class Lock:
    """A lock of one facade object (`owner`, for the messages): RuntimeError instead of a
    wait that cannot end (re-entry from the holding thread, a lock inherited across fork).

    ``acquire(what)`` / ``release()``, or ``with lock(what):``.  `pid` is the process that
    made it; `holder` the thread ident holding it (0 when free; written only by the holder).
    """

    __slots__ = ("mutex", "holder", "pid", "owner", "__weakref__")

    def __init__(self, owner: Any):
        self.mutex = threading.Lock()
        self.holder = 0
        self.pid = _pid
        self.owner = type(owner).__name__

    def acquire(self, what: str) -> None:
        if not self.mutex.acquire(False):
            self.wait(what)
        self.holder = get_ident()

    def wait(self, what: str) -> None:
        """The lock is taken: raise if that wait would never end, else wait for it."""
        if self.pid != _pid:
            raise RuntimeError(
                f"{what}: this {self.owner} was created in process {self.pid}; it cannot be "
                f"used in process {_pid} (a child of fork(): the runtime's threads, locks "
                f"and state do not survive fork); create it after fork, in the child")
        if self.holder == get_ident():
            raise RuntimeError(
                f"{what}: the {self.owner} is busy in this thread (a call on it is running a "
                f"custom op callback, signal handler or finalizer, which is where this was "
                f"called from); such code cannot call back into the {self.owner}")
        self.mutex.acquire()

    def release(self) -> None:
        self.holder = 0
        self.mutex.release()

    def held_here(self) -> bool:
        """Whether the calling thread holds the lock."""
        return self.holder == get_ident()

    def __call__(self, what: str) -> "_Holding":
        return _Holding(self, what)


class _Holding:
    __slots__ = ("lock", "what")

    def __init__(self, lock: Lock, what: str):
        self.lock, self.what = lock, what

    def __enter__(self) -> None:
        self.lock.acquire(self.what)

    def __exit__(self, *exc: Any) -> None:
        self.lock.release()


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
