# The runtime loader: one locked dlopen/dlsym routine filling the entry-point table.
#
# Resolution order: rknnx.load_runtime(path); env RKNNX_RUNTIME (a path, or the word
# "emulator" for the library bundled in the package); then "librknnrt.so" through the
# system loader and the vendor's usual install paths; then, only on a host that cannot be
# a Rockchip board (rknnx._board.emulator_fallback_reason), the bundled emulator, said in
# one W line.  A symbol the library lacks
# leaves its slot NULL: calling that function raises NotSupportedError, it never
# becomes a NULL call.  Handles are never dlclose()d: another thread may still be
# inside a function of the old library, and the vendor runtime does not support
# being unloaded.

import os
import sys
import threading

from rknnx import platforms as _platforms


cdef void* _handle = NULL                    # the library in use; NULL until loaded
cdef object _runtime_path = None             # where it came from (str)
cdef object _runtime_source = None           # how it was chosen
cdef object _runtime_version = None          # its "X.Y.Z" once a context asked (SDK_VERSION)
_load_lock = threading.Lock()
cdef Py_ssize_t _live_contexts = 0           # kept by Context; blocks a runtime switch
cdef Py_ssize_t _live_free_mems = 0          # open ALLOC_NO_CONTEXT mems; block it too

# Where boards install the runtime, in order: the system loader (LD_LIBRARY_PATH, the
# ld.so cache, /lib, /usr/lib), then by path where board images put it: /usr/lib,
# /usr/lib64, /vendor/lib64 (Android-derived images), and librknn_runtime.so in /usr/lib
# and /usr/lib64, the other name the vendor's RKNNLite looks for.  Public (lowlevel):
# `rknnx --strict` tries them itself, so that it never loads the emulator's fallback.
SYSTEM_CANDIDATES = ("librknnrt.so", "/usr/lib/librknnrt.so", "/usr/lib64/librknnrt.so",
                     "/vendor/lib64/librknnrt.so", "/usr/lib/librknn_runtime.so",
                     "/usr/lib64/librknn_runtime.so")


# Fork.  A child of fork() inherits every Context, TensorMem and MatmulContext, but not
# the threads: a lock held by a thread of the parent (a run in flight) stays held for ever
# in the child, and the runtime's own state is the parent's.  Each object remembers the
# process that created it (_pid); _this_pid follows the current process (updated in the
# child by an at-fork handler), so the check on every call is one integer comparison.
# In the child every call on an inherited object raises (_raise_inherited), and their
# destructors free nothing the runtime owns.
cdef long _this_pid = getpid()


def _after_fork_in_child():
    global _this_pid
    _this_pid = getpid()


os.register_at_fork(after_in_child=_after_fork_in_child)


cdef int _raise_inherited(object obj, long pid) except -1:
    raise RuntimeError(
        f"this {type(obj).__name__} was created in process {pid}; it cannot be used in "
        f"process {_this_pid} (a child of fork(): the runtime's threads, locks and state "
        f"do not survive fork); create it after fork, in the child")


# The chip a context runs on: the emulator reports the personality of each context;
# on a board the device tree names the chip (read once).  None when unknown: then no
# call is refused before C.
cdef object _board_chip = False              # False: not read yet


cdef object _chip_of(uint64_t handle):
    global _board_chip
    cdef void* fn
    cdef const char* name
    if _handle != NULL:
        fn = dlsym(_handle, b"rknn_emu_context_platform" if handle else b"rknn_emu_get_platform")
        if fn != NULL:
            if handle:
                name = (<const char* (*)(uint64_t) noexcept nogil>fn)(handle)
            else:
                name = (<const char* (*)() noexcept nogil>fn)()
            if name == NULL or name[0] == 0:
                return None
            return name.decode("ascii", "replace").upper()
    if _board_chip is False:
        _board_chip = _platforms.detect_chip()
    return _board_chip


cdef int _refuse_unsupported(object chip, str fn) except -1:
    """NotSupportedError if `chip` (not None) lacks the C function `fn` (Table 3-1).

    A function the table marks unsupported on every chip (rknn_wait,
    rknn_create_mem_from_mb_blk in 2.5.0) is left to the runtime: a newer one may have it."""
    if chip is not None and not _platforms.supports(chip, fn) and _platforms.FUNCTIONS.get(fn):
        raise NotSupportedError(_platforms.why_not(chip, fn), None, fn)
    return 0


#: runtime_info()["source"] when the emulator stands in for a runtime this host cannot have
FALLBACK_SOURCE = "emulator fallback (not a board)"


cdef str _resolve(str word):
    """The library path for a loader word (``emulator``, ``emulator-1.5.2``) or a path."""
    from rknnx.emulator._locate import resolve_word   # pure Python; imported on use
    return resolve_word(word)


def emulator_path():
    """Path of the CPU emulator of librknnrt bundled with rknnx.

    Returns
    -------
    str
        ``<package>/_emulator/librknnrt.so`` (it may not exist in a build without it), as
        ``rknnx.emulator._locate.bundled_library()`` says: the one place that locates it.
    """
    from rknnx.emulator._locate import bundled_library   # pure Python; imported on use
    return bundled_library()


cdef int _open_library(str path, str source, list tried) except -1:
    """dlopen one candidate and fill the table; 1 on success, 0 (and a note) on failure."""
    global _handle, _runtime_path, _runtime_source
    cdef bytes bpath = os.fsencode(path)
    cdef const char* cpath = bpath
    cdef void* h
    cdef const char* err
    cdef rknnx_api table
    cdef int i
    with nogil:
        dlerror()
        h = dlopen(cpath, RTLD_NOW | RTLD_LOCAL)
    if h == NULL:
        err = dlerror()
        tried.append(f"{path} ({source}): {err.decode('utf-8', 'replace') if err != NULL else 'dlopen failed'}")
        return 0
    memset(&table, 0, sizeof(table))
    for i in range(RKNNX_API_COUNT):
        rknnx_api_set(&table, i, dlsym(h, rknnx_api_names[i]))
    if table.rknn_init == NULL or table.rknn_destroy == NULL:
        tried.append(f"{path} ({source}): loaded, but it does not export rknn_init/rknn_destroy, "
                     "so it is not an RKNN runtime")
        return 0
    _api_restore(table)
    _handle = h
    _runtime_path = path
    _runtime_source = source
    return 1


cdef int _load(object path) except -1:
    """Resolve and load a runtime; caller holds _load_lock."""
    cdef list tried = []
    cdef list candidates = []
    if path is not None:
        path = os.fspath(path)
        candidates.append((_resolve(path), "load_runtime()"))
    else:
        env = os.environ.get("RKNNX_RUNTIME")
        if env:
            candidates.append((_resolve(env), "RKNNX_RUNTIME"))
        else:
            for cand in SYSTEM_CANDIDATES:
                candidates.append((cand, "system loader" if "/" not in cand else "vendor path"))
    for cand, source in candidates:
        if _open_library(cand, source, tried):
            return 0
    if path is None and not os.environ.get("RKNNX_RUNTIME"):
        # No librknnrt where boards have one.  On a host that cannot be a board, the
        # bundled emulator stands in (one W line); on a board that is an error.
        from rknnx._board import emulator_fallback_reason   # pure Python
        reason = emulator_fallback_reason()
        if reason is not None and _open_library(emulator_path(), FALLBACK_SOURCE, tried):
            sys.stderr.write(f"W rknnx: no librknnrt: {reason}; using the bundled CPU "
                             f"emulator (set RKNNX_RUNTIME to choose a library)\n")
            return 0
    lines = "\n  ".join(tried)
    raise RuntimeNotFoundError(
        "no RKNN runtime (librknnrt) could be loaded. Tried:\n  " + lines + "\n"
        "On a Rockchip board, install the RKNPU2 runtime (librknnrt.so, e.g. into /usr/lib). "
        "On a development host without an NPU, use the bundled CPU emulator: "
        "set RKNNX_RUNTIME=emulator or call rknnx.load_runtime('emulator').")


cdef int ensure_runtime() except -1:
    """Load the runtime on first use (double-checked under the loader lock)."""
    if _handle != NULL:
        return 0
    with _load_lock:
        if _handle == NULL:
            _load(None)
    return 0


def load_runtime(path=None):
    """Load the RKNN runtime library, or switch to another one.

    Parameters
    ----------
    path : str or os.PathLike, optional
        A path to a librknnrt, or ``"emulator"`` for the bundled CPU emulator. Without
        it, the usual order applies: env ``RKNNX_RUNTIME`` (a path or ``emulator``),
        then ``librknnrt.so`` through the system loader, ``/usr/lib``, ``/usr/lib64``,
        ``/vendor/lib64``, and ``librknn_runtime.so`` in ``/usr/lib`` and ``/usr/lib64``
        (the name the vendor's RKNNLite also tries).

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

    .. versionadded:: 0.1.0
    """
    global _handle
    cdef rknnx_api old_api
    cdef void* old_handle
    with _load_lock:
        target = None
        if path is not None:
            target = os.fspath(path)
            target = _resolve(target)
        if _handle != NULL and target is not None and target == _runtime_path:
            pass
        elif _handle != NULL and (_atomic_load_ssize(&_live_contexts)
                                  or _atomic_load_ssize(&_live_free_mems)):
            raise RuntimeError(f"cannot switch the runtime while "
                               f"{_atomic_load_ssize(&_live_contexts)} context(s) "
                               f"and {_atomic_load_ssize(&_live_free_mems)} context-free TensorMem(s) "
                               f"are open on {_runtime_path}; close them first")
        else:
            old_handle = _handle
            old_api = _api
            _handle = NULL
            try:
                _set_runtime_version(None)
                _load(path)
            except BaseException:
                _handle = old_handle
                _api_restore(old_api)
                raise
    return runtime_info()


cdef int _set_runtime_version(object version) except -1:
    global _runtime_version
    _runtime_version = version
    return 0


cdef void _api_restore(rknnx_api table):
    global _api
    _api = table


def runtime_info():
    """Describe the loaded runtime, loading it first if needed.

    The runtime's own and the driver's versions need an open context:
    ``rknnx.runtime.runtime_info(model)`` adds them.

    Returns
    -------
    dict
        ``path`` (the library), ``source`` (how it was chosen), ``is_emulator``,
        ``functions`` (the API names it provides) and ``missing`` (those it lacks); on
        the emulator, also ``platform`` (the chip personality new contexts get).

    Raises
    ------
    RuntimeNotFoundError
        If no runtime can be loaded.

    .. versionadded:: 0.1.0
    """
    ensure_runtime()
    cdef int i
    provided, missing = [], []
    for i in range(RKNNX_API_COUNT):
        (provided if rknnx_api_has(&_api, i) else missing).append(rknnx_api_names[i].decode())
    cdef void* emu_probe = dlsym(_handle, b"rknn_emu_get_counters")
    cdef void* emu_platform = dlsym(_handle, b"rknn_emu_get_platform")
    info = {
        "path": _runtime_path,
        "source": _runtime_source,
        "is_emulator": emu_probe != NULL,
        "functions": provided,
        "missing": missing,
        "version": _runtime_version,
    }
    cdef const char* plat
    if emu_platform != NULL:
        plat = (<const char* (*)() noexcept nogil>emu_platform)()
        if plat != NULL:
            info["platform"] = plat.decode("utf-8", "replace")
    return info


def runtime_chip():
    """The chip new contexts run on, loading the runtime first if needed: under the
    emulator its personality for new contexts, else the board's chip from the device tree
    (read once); None when unknown.  The chip of an open context is :attr:`Context.chip`.

    Returns
    -------
    str or None
        The chip's name (``"RK3588"`` ...).

    Raises
    ------
    RuntimeNotFoundError
        If no runtime can be loaded.

    .. versionadded:: 0.1.0
    """
    ensure_runtime()
    return _chip_of(0)


def api_function_names():
    """Names of every librknnrt entry point rknnx binds, in table order."""
    cdef int i
    return [rknnx_api_names[i].decode() for i in range(RKNNX_API_COUNT)]


cdef int require(void* fnptr, const char* fn) except -1:
    """Raise NotSupportedError if the loaded runtime lacks `fn` (fnptr is its slot)."""
    if fnptr == NULL:
        version = f" {_runtime_version}" if _runtime_version else ""
        raise NotSupportedError(
            f"librknnrt{version} at {_runtime_path} lacks {fn.decode()}: this runtime version "
            f"does not provide it (update the RKNPU2 runtime on the board)", None, fn.decode())
    return 0


def _require(str name):
    """Check that the loaded runtime provides the entry point `name` (for tests and tools).

    Raises
    ------
    NotSupportedError
        If the library lacks it.
    ValueError
        If `name` is not an RKNN API function.
    """
    ensure_runtime()
    cdef int i
    for i in range(RKNNX_API_COUNT):
        if rknnx_api_names[i].decode() == name:
            if not rknnx_api_has(&_api, i):
                require(NULL, rknnx_api_names[i])
            return None
    raise ValueError(f"{name!r} is not an RKNN API function; expected one of {api_function_names()}")


cdef int check(int ret, const char* fn) except -1 nogil:
    """0 on success; on a negative status raise the exception of the error table."""
    if ret >= 0:
        return 0
    with gil:
        raise _from_code(ret, fn.decode())
