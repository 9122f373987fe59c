"""ctypes access to the emulator-only controls (``rknn_emu_*``) of a loaded emulator.

The rknnx CPU emulator (``librknnrt.so`` built from ``emulator/``) exports the vendor API
plus a few ``rknn_emu_*`` functions for tests and benchmarks (declared in
``include/rknnx/rknn_emu.h``): the chip personality, a simulated NPU time per run,
counters, error injection and the log level.  This module wraps them with ctypes.  It is
pure Python and never imports the compiled extension, so it works before the package is
built and alongside any binding that loaded the same library (``dlopen`` of one path
returns one library: the controls act on the runtime that binding uses).

Examples
--------
>>> ctl = EmulatorControl(find_emulator_library())        # doctest: +SKIP
>>> ctl.set_platform("RK3566")                             # doctest: +SKIP
>>> ctl.reset_counters(); ...; ctl.counters()["bytes_copied"]  # doctest: +SKIP
>>> with ctl.injected("rknn_run", 1, "RKNN_ERR_TIMEOUT"):  # doctest: +SKIP
...     ...
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import sysconfig
from pathlib import Path
from typing import Callable, Dict, Iterator, List, Optional, Union

from rknnx.emulator._locate import library_path
from rknnx.errors import STATUS_NAMES

__all__ = ["EmulatorControl", "find_emulator_library", "STATUS", "COUNTER_NAMES",
           "RKNN_CONTEXT"]


def _is_arm32() -> bool:
    """True in a 32-bit ARM process (armhf userland, on an armv7l or an arm64 kernel)."""
    if ctypes.sizeof(ctypes.c_void_p) != 4:
        return False
    gnu = sysconfig.get_config_var("HOST_GNU_TYPE") or sysconfig.get_config_var("MULTIARCH") or ""
    return gnu.startswith("arm") or os.uname().machine.startswith(("arm", "aarch64"))


#: the ctypes type of ``rknn_context``: ``uint32_t`` on 32-bit ARM, ``uint64_t`` everywhere
#: else (i386 included), as the vendor header switches on ``__arm__`` (docs/abi-notes.md)
RKNN_CONTEXT = ctypes.c_uint32 if _is_arm32() else ctypes.c_uint64

#: vendor status codes by name: the inverse of :data:`rknnx.errors.STATUS_NAMES`, the one table
STATUS: Dict[str, int] = {"RKNN_SUCC": 0, **{name: code for code, name in STATUS_NAMES.items()}}

#: the counters, in the order of ``rknn_emu_counters``
COUNTER_NAMES = ("live_contexts", "live_mems", "live_output_buffers", "bytes_copied", "bytes_in",
                 "bytes_out", "bytes_synced", "syncs", "runs", "runs_in_flight",
                 "peak_runs_in_flight", "contexts_created", "mems_created", "npu_ns",
                 "npu_cpu_ns")


class _Counters(ctypes.Structure):
    _fields_ = [(n, ctypes.c_int64) for n in COUNTER_NAMES]


def find_emulator_library() -> Path:
    """Path of the emulator library (see :func:`rknnx.emulator.library_path`).

    Raises
    ------
    FileNotFoundError
        The library named by env ``RKNNX_RUNTIME``, or the bundled one, does not exist.
    """
    return Path(library_path())


class EmulatorControl:
    """The ``rknn_emu_*`` controls of the emulator library at ``path``.

    Parameters
    ----------
    path : str or os.PathLike or ctypes.CDLL
        The emulator's ``librknnrt.so`` (or an already loaded library).

    Raises
    ------
    OSError
        The library cannot be loaded.
    AttributeError
        It is not the rknnx emulator (no ``rknn_emu_version``).
    """

    def __init__(self, path: Union[str, "os.PathLike[str]", ctypes.CDLL]):
        lib = path if isinstance(path, ctypes.CDLL) else ctypes.CDLL(os.fspath(path))
        self.lib = lib
        self.path = getattr(lib, "_name", None)
        sig = [
            ("rknn_emu_version", ctypes.c_char_p, []),
            ("rknn_emu_set_platform", ctypes.c_int, [ctypes.c_char_p]),
            ("rknn_emu_get_platform", ctypes.c_char_p, []),
            ("rknn_emu_platform_count", ctypes.c_int, []),
            ("rknn_emu_platform_name", ctypes.c_char_p, [ctypes.c_int]),
            ("rknn_emu_context_platform", ctypes.c_char_p, [RKNN_CONTEXT]),
            ("rknn_emu_set_runtime_version", ctypes.c_int, [ctypes.c_char_p]),
            ("rknn_emu_get_runtime_version", ctypes.c_char_p, []),
            ("rknn_emu_set_npu_time_us", ctypes.c_int, [ctypes.c_int64]),
            ("rknn_emu_get_npu_time_us", ctypes.c_int64, []),
            ("rknn_emu_set_npu_cpu_accounting", ctypes.c_int, [ctypes.c_int]),
            ("rknn_emu_set_log_level", ctypes.c_int, [ctypes.c_int]),
            ("rknn_emu_get_log_level", ctypes.c_int, []),
            ("rknn_emu_get_counters", ctypes.c_int, [ctypes.POINTER(_Counters), ctypes.c_uint32]),
            ("rknn_emu_reset_counters", None, []),
            ("rknn_emu_inject_error", ctypes.c_int, [ctypes.c_char_p, ctypes.c_uint32, ctypes.c_int]),
            ("rknn_emu_clear_injections", None, []),
            ("rknn_emu_pending_injections", ctypes.c_int, []),
            ("rknn_emu_read_npu_input", ctypes.c_int,
             [RKNN_CONTEXT, ctypes.c_uint32, ctypes.c_void_p, ctypes.c_uint32]),
            ("rknn_emu_set_npu_output", ctypes.c_int,
             [RKNN_CONTEXT, ctypes.c_uint32, ctypes.c_void_p, ctypes.c_uint32]),
        ]
        for name, res, args in sig:
            f = getattr(lib, name)
            f.restype, f.argtypes = res, args

    # -- identity --
    @property
    def version(self) -> str:
        """The emulator's version string."""
        return self.lib.rknn_emu_version().decode()

    # -- platform --
    def platforms(self) -> List[str]:
        """Every chip personality the emulator knows."""
        return [self.lib.rknn_emu_platform_name(i).decode()
                for i in range(self.lib.rknn_emu_platform_count())]

    def set_platform(self, name: Optional[str]) -> None:
        """Personality of contexts created from now on; ``None`` reverts to
        ``RKNN_EMU_PLATFORM``.  With neither, no chip is chosen: ``rknn_init`` plays the
        chip a model was built for (RK3588 for one that names none or RK3588's NPU), said
        once per chip in a ``W rknnx:`` line; a chosen chip refuses a model of another NPU,
        as a board does.

        Raises
        ------
        ValueError
            Unknown chip name.
        """
        rc = self.lib.rknn_emu_set_platform(name.encode() if name else None)
        if rc != 0:
            raise ValueError(f"unknown platform {name!r}; known: {', '.join(self.platforms())}")

    @property
    def platform(self) -> str:
        """The personality the next ``rknn_init`` uses (with no chip chosen, RK3588: a
        model of another chip plays its own, :meth:`context_platform` says which)."""
        return self.lib.rknn_emu_get_platform().decode()

    def context_platform(self, context: int) -> Optional[str]:
        """The personality of a live context, ``None`` for an invalid one."""
        r = self.lib.rknn_emu_context_platform(context)
        return r.decode() if r else None

    # -- the librknnrt version played --
    def set_runtime_version(self, version: Optional[str]) -> None:
        """Contexts created from now on play librknnrt `version` (``"1.4.0"`` or
        ``"1.6.0"``): its SDK_VERSION answer and the crashes of that version a call pattern
        sets off, played as an E line and ``abort()`` (docs/abi-notes.md, "Runtime quirks":
        run code that may set one off in a subprocess).  ``""`` plays the library's own
        version; ``None`` reverts to ``RKNN_EMU_RUNTIME_VERSION``.

        Raises
        ------
        ValueError
            Another version.
        """
        rc = self.lib.rknn_emu_set_runtime_version(None if version is None else version.encode())
        if rc != 0:
            raise ValueError(f"the emulator plays librknnrt 1.4.0 or 1.6.0 besides its own "
                             f"version; got {version!r}")

    @property
    def runtime_version(self) -> str:
        """The librknnrt version the next ``rknn_init`` plays."""
        return self.lib.rknn_emu_get_runtime_version().decode()

    # -- simulated NPU time --
    def set_npu_time_us(self, us: Optional[int]) -> None:
        """Microseconds each ``rknn_run`` sleeps (no global lock held); ``None`` reverts
        to ``RKNN_EMU_NPU_TIME_US``.

        The run's NPU-side work (this time, the graph, the zero-copy conversions) occupies
        the chip's simulated NPU cores: at most as many runs of the process at once as the
        chip has cores (three on RK3588, two on RK3576, one elsewhere); a context of core
        mask AUTO takes any free core, a pinned one waits for every core of its mask.  The
        ``peak_runs_in_flight`` counter shows it."""
        self.lib.rknn_emu_set_npu_time_us(-1 if us is None else int(us))

    @property
    def npu_time_us(self) -> int:
        return self.lib.rknn_emu_get_npu_time_us()

    def set_npu_cpu_accounting(self, on: bool) -> bool:
        """Count the thread CPU time of each ``rknn_run``'s NPU-side work (the zero-copy
        conversions and the graph) in the ``npu_cpu_ns`` counter; off by default, as the
        CPU clock costs a system call per run.  ``npu_ns`` (wall time, the simulated NPU
        time included) is always counted.  Returns the previous state."""
        return bool(self.lib.rknn_emu_set_npu_cpu_accounting(1 if on else 0))

    # -- log level --
    def set_log_level(self, level: Optional[int]) -> None:
        """0 errors ... 5 verbose; ``None`` reverts to ``RKNN_LOG_LEVEL``."""
        self.lib.rknn_emu_set_log_level(-1 if level is None else int(level))

    @property
    def log_level(self) -> int:
        return self.lib.rknn_emu_get_log_level()

    # -- counters --
    def counters(self) -> Dict[str, int]:
        """A snapshot of every counter, by name (see ``COUNTER_NAMES``)."""
        c = _Counters()
        rc = self.lib.rknn_emu_get_counters(ctypes.byref(c), ctypes.sizeof(c))
        if rc != 0:
            raise RuntimeError(f"rknn_emu_get_counters failed: {rc}")
        return {n: int(getattr(c, n)) for n in COUNTER_NAMES}

    def counter_reader(self, name: str) -> Optional[Callable[[], int]]:
        """A reader of one counter by name (``rknn_emu_counter_value``: one call, no
        snapshot), for loops that read it every frame; None when the emulator has no
        counter of that name (or no access by name)."""
        lib = self.lib
        try:
            names, value = lib.rknn_emu_counter_name, lib.rknn_emu_counter_value
        except AttributeError:
            return None
        names.restype, names.argtypes = ctypes.c_char_p, [ctypes.c_int]
        value.restype, value.argtypes = ctypes.c_int64, [ctypes.c_int]
        for i in range(lib.rknn_emu_counter_count()):
            if names(i) == name.encode():
                return functools.partial(value, i)
        return None

    def reset_counters(self) -> None:
        """Zero the cumulative counters and the peak of runs in flight (live counts stay)."""
        self.lib.rknn_emu_reset_counters()

    # -- error injection --
    def inject_error(self, func: str, nth: int = 1, status: Union[int, str] = -1) -> None:
        """Make the ``nth`` next call of ``func`` (e.g. ``"rknn_run"``) fail with ``status``
        (a code or a name such as ``"RKNN_ERR_TIMEOUT"``); pointer-returning functions
        return NULL.  One-shot.

        Raises
        ------
        ValueError
            Unknown function or status name, ``nth < 1``, or too many injections.
        """
        if isinstance(status, str):
            try:
                status = STATUS[status]
            except KeyError:
                raise ValueError(f"unknown status name {status!r}") from None
        if nth < 1:
            raise ValueError("nth counts calls from 1")
        rc = self.lib.rknn_emu_inject_error(func.encode(), int(nth), int(status))
        if rc != 0:
            raise ValueError(f"cannot inject into {func!r} (unknown function or table full)")

    def clear_injections(self) -> None:
        """Remove every armed injection."""
        self.lib.rknn_emu_clear_injections()

    @property
    def pending_injections(self) -> int:
        return self.lib.rknn_emu_pending_injections()

    @contextlib.contextmanager
    def injected(self, func: str, nth: int = 1, status: Union[int, str] = -1) -> Iterator[None]:
        """``inject_error`` for the duration of a ``with`` block (cleared on exit)."""
        self.inject_error(func, nth, status)
        try:
            yield
        finally:
            self.clear_injections()


    # -- the NPU-side bytes --
    def read_npu_input(self, context: int, index: int) -> bytes:
        """The bytes the NPU would read for input ``index`` of ``context`` now, in the
        native layout and type (``rknn_emu_read_npu_input``).

        Raises
        ------
        ValueError
            The runtime refused (invalid context or index, input not set): the message
            carries its status.
        """
        n = self.lib.rknn_emu_read_npu_input(context, index, None, 0)
        if n < 0:
            raise ValueError(f"rknn_emu_read_npu_input(input {index}) failed: status {n}")
        buf = ctypes.create_string_buffer(max(n, 1))
        got = self.lib.rknn_emu_read_npu_input(context, index, buf, n)
        if got < 0 or got > n:
            raise ValueError(f"rknn_emu_read_npu_input(input {index}) failed: status {got}")
        return buf.raw[:got]

    def set_npu_output(self, context: int, index: int, data: Optional[bytes]) -> None:
        """From the next ``rknn_run`` on, output ``index``'s NPU-side bytes are ``data``
        (native layout and type; ``None`` or ``b""`` clears it: ``rknn_emu_set_npu_output``).

        Raises
        ------
        ValueError
            The runtime refused (invalid context or index, fewer bytes than the native
            layout holds): the message carries its status.
        """
        data = bytes(data or b"")
        buf = ctypes.create_string_buffer(data, len(data)) if data else None
        rc = self.lib.rknn_emu_set_npu_output(context, index, buf, len(data))
        if rc != 0:
            raise ValueError(f"rknn_emu_set_npu_output(output {index}, {len(data)} bytes) "
                             f"failed: status {rc}")


def __dir__():
    # tab completion shows the public names, not the imports
    return sorted(__all__)
