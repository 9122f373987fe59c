"""One lifetime protocol for the facade's closable objects: :class:`rknnx.Model`,
:class:`rknnx.ZeroCopySession`, :class:`rknnx.Pool` (and :class:`rknnx.vision.Detector`)
(docs/architecture.md, "Lifetimes").

:class:`Closable` writes ``check_closable`` / ``with`` / the finalizer once, as the
binding's ``_close`` template does for its objects; each class gives the hooks:

- ``closed``: whether it is closed (a failed ``__init__`` counts as closed);
- ``close()``: its own (Model: its family's close; a session: the views counted and the
  memory freed under one hold of its lock; Pool: ``shutdown(wait=True)``), or
  :meth:`Closable.close`, which runs ``_refusal_checks("close")`` then ``_close_now()``;
- ``_refusal_checks(what)``: raise what ``close()`` would refuse now, closing nothing (a
  call of its own running in this thread, a live view of its memory, a child of fork);
- ``_made_in``: the process that made it (finalizers of a parent's object do nothing);
- ``_collected()``: what must happen when it is collected unclosed, before the warning
  (a pool tells its workers to stop); returns the warning's text, or None for none;
- ``_close_quietly()``: the finalizer's close, which never raises.

The rules, each written here once:

- ``close()`` on a closed object does nothing; otherwise it checks, then closes.
- ``with obj:`` closes on the way out.  When the block raised and the close fails too (a
  view the block's frames still hold), the block's error is the one the user sees: it gets
  a note, and the object is closed, without a warning, when collected.
- An object collected unclosed warns (ResourceWarning) and closes itself, unless it is a
  parent's object in a child of fork, or the interpreter is finalizing (a daemon thread
  stopped inside a run may hold its context for ever).
"""

from __future__ import annotations

import sys as _sys
import warnings

from rknnx import _guard

__all__ = ["Closable", "add_note", "unclosed"]


class Closable:
    """The base of the facade's closable objects (see the module's docstring)."""

    #: a `with` block could not close it: it is closed when collected, without a warning
    _close_when_collected = False
    #: the class's name in the messages ("Model" ...)
    _kind = "object"

    # -- the hooks (see the module's docstring) --------------------------------------------
    @property
    def closed(self) -> bool:            # pragma: no cover - every subclass has its own
        raise NotImplementedError

    def _refusal_checks(self, what: str) -> None:
        _guard.check_process(self, self._made_in)

    def _collected(self):
        """The warning, unless a `with` block could not close it."""
        return None if self._close_when_collected else unclosed(self)

    def _close_quietly(self) -> None:
        try:
            self.close()
        except Exception:                # BufferError, RuntimeError, interpreter teardown
            pass

    # -- the protocol ------------------------------------------------------------------------
    def close(self) -> None:
        """Close it; a second call does nothing (see the class's own documentation for
        what it closes and what it refuses)."""
        if self.closed:
            return
        self._refusal_checks("close")
        self._close_now()

    def check_closable(self, what: str = "close") -> None:
        """Raise what :meth:`close` would raise now (RuntimeError from one of its own
        calls in this thread or in a child of fork, BufferError while a view of its memory
        is alive), closing nothing; nothing on a closed object.

        .. versionadded:: 0.1.0
        """
        if not self.closed:
            self._refusal_checks(what)

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc is None:
            self.close()
            return
        try:
            self.close()
        except Exception as err:
            self._close_when_collected = True
            add_note(exc, f"(the {self._kind} was not closed on leaving the `with` block: "
                          f"{err}; it is closed when collected)")

    def __del__(self, _warn=warnings.warn, _pid=_guard, _finalizing=_sys.is_finalizing):
        # (what it calls is bound here: at interpreter exit an object may be collected
        # after the globals of this module, and of the class's, were set to None; 3.13t
        # collected some so and printed "'NoneType' object is not callable")
        finalizing = _finalizing()
        try:
            if self.closed:
                return
        except AttributeError:           # __init__ failed before its state was set
            return
        try:
            message = self._collected()
        except Exception:
            if not finalizing:
                raise
            # a hook met a global gone: the warning says what is certain
            message = None if getattr(self, "_close_when_collected", False) else \
                f"unclosed rknnx.{type(self).__name__}"
        if getattr(self, "_made_in", None) != _pid.pid:
            return                       # the parent's (after fork): nothing to do here
        try:
            if message is not None:
                # (an error where warnings are errors: -W error, pytest's filterwarnings;
                # the object is closed all the same)
                _warn(message, ResourceWarning, source=self)
        finally:
            if not finalizing:
                self._close_quietly()


def unclosed(obj: "Closable") -> str:
    """The ResourceWarning's text for `obj` collected unclosed."""
    try:
        what = repr(obj)
    except Exception:                    # interpreter teardown: no generators, no imports
        what = f"rknnx.{type(obj).__name__}"
    return f"unclosed {what}"


def add_note(exc: BaseException, note: str) -> None:
    """PEP 678 note on `exc` (Python 3.11+; older versions show the note in no traceback)."""
    add = getattr(exc, "add_note", None)
    if add is not None:
        add(note)
