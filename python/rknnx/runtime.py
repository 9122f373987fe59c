"""Which librknnrt rknnx uses: load it, switch it, describe it.

The loading itself (one locked ``dlopen``/``dlsym`` into the entry-point table) is the
binding's; this module is the Python side of it: the order in which candidates are tried
is documented here and in the README ("Choosing the runtime"), and :func:`runtime_info`
adds what needs an open context (the runtime's and the driver's versions).
"""

from __future__ import annotations

import os
import sys
import threading
from typing import Any, Dict, Optional, Union

from rknnx.emulator._locate import bundled_library

__all__ = ["load_runtime", "runtime_info", "emulator_path", "chip_of", "refuse_if_unsupported",
           "note_fallback"]

ModelSource = Union[str, "os.PathLike[str]", bytes, bytearray, memoryview]


def emulator_path() -> str:
    """Path of the CPU emulator of librknnrt bundled with rknnx (``rknnx/_emulator``)."""
    return bundled_library()


def load_runtime(path: Union[str, "os.PathLike[str]", None] = None) -> Dict[str, Any]:
    """Load the RKNN runtime library, or switch to another one.

    Parameters
    ----------
    path : str or os.PathLike, optional
        A path to a librknnrt, or ``"emulator"`` for the bundled CPU emulator.  Without
        it, the usual order applies: env ``RKNNX_RUNTIME`` (a path or ``emulator``), then
        ``librknnrt.so`` through the system loader and the vendor's install paths.

    Returns
    -------
    dict
        :func:`runtime_info` of the loaded runtime.

    Raises
    ------
    RuntimeNotFoundError
        If no candidate could be loaded; the message names each one and why.
    RuntimeError
        If contexts are still open on another runtime.
    """
    from rknnx import lowlevel

    lowlevel.load_runtime(path)
    return runtime_info()


def runtime_info(model: Optional[ModelSource] = None) -> Dict[str, Any]:
    """Describe the loaded runtime, loading it first if needed.

    Parameters
    ----------
    model : str, os.PathLike or buffer, optional
        A model the runtime can load.  librknnrt reports its own version only through
        ``rknn_query(RKNN_QUERY_SDK_VERSION)`` on a context, so with a model this opens a
        context on it, reads the versions and closes it again.

    Returns
    -------
    dict
        ``path`` (the library), ``source`` (how it was chosen), ``is_emulator``,
        ``functions`` (the API names it provides) and ``missing`` (those it lacks); with
        ``model``, also ``sdk_version`` and ``driver_version``; on the emulator, also
        ``platform`` (the chip personality new contexts get).

    Raises
    ------
    RuntimeNotFoundError
        If no runtime can be loaded.
    RKNNError
        If ``model`` is given and the runtime cannot open it.
    """
    from rknnx import lowlevel

    info = lowlevel.runtime_info()
    if model is not None:
        with lowlevel.Context(model) as ctx:
            version = ctx.query(lowlevel.QueryCmd.SDK_VERSION)
        info["sdk_version"] = version.api_version
        info["driver_version"] = version.drv_version
    return info


def chip_of(context=None) -> Optional[str]:
    """The chip a context runs on, else the chip new contexts get; None when unknown.

    The binding answers both: :attr:`rknnx.lowlevel.Context.chip` and
    :func:`rknnx.lowlevel.runtime_chip` (the emulator's personality, else the board's chip
    from the device tree).

    Parameters
    ----------
    context : rknnx.lowlevel.Context, optional
        The context to ask about (the emulator gives each context a personality).
    """
    if context is not None:
        return context.chip
    from rknnx import lowlevel

    return lowlevel.runtime_chip()


def refuse_if_unsupported(what: str, c_function: str, context=None) -> None:
    """Raise NotSupportedError, naming the chip and the function, when the chip the runtime
    drives lacks `c_function` (from :mod:`rknnx.platforms`); do nothing on an unknown chip.

    `what` is the facade call named in the message (``"rknnx.matmul"``).
    """
    from rknnx import platforms
    from rknnx.errors import NotSupportedError

    chip = chip_of(context)
    try:
        ok = chip is None or platforms.supports(chip, c_function)
    except ValueError:                 # a chip the tables do not know: let the runtime say
        return
    if not ok:
        raise NotSupportedError(f"{what}: {platforms.why_not(chip, c_function)}", None,
                                c_function)


_NOTED: set = set()
_NOTED_LOCK = threading.Lock()


def note_fallback(function: str, instead: str) -> None:
    """Say once per process, in one ``W rknnx:`` line on stderr, that the loaded runtime
    lacks (or refused) `function` and what rknnx does `instead`.

    Older librknnrt versions still on many boards lack functions that newer ones have
    (``rknn_create_mem2``, ``rknn_mem_sync``, ``rknn_dup_context`` on the RV1106 mini
    runtime ...); the facade goes on without them where it can (docs/architecture.md,
    "Runtimes boards have").  The line names the library and its version so that a user
    who wants the faster path knows what to update.
    """
    with _NOTED_LOCK:
        if function in _NOTED:
            return
        _NOTED.add(function)
    try:
        from rknnx import lowlevel

        info = lowlevel.runtime_info()
        lib = f"librknnrt {info.get('version') or '(version unknown)'} at {info['path']}"
    except Exception:                    # the note must never be what fails
        lib = "the loaded librknnrt"
    sys.stderr.write(f"W rknnx: {lib}: {function} is not available; {instead}\n")


def __dir__():
    # tab completion shows the public names, not the imports
    return sorted(__all__)
