"""Where the emulator library is: the one place that answers it (the loader uses it too)."""

from __future__ import annotations

import os

#: the env variable that chooses the runtime library (a path, or the word ``emulator``)
RUNTIME_ENV = "RKNNX_RUNTIME"


def bundled_library() -> str:
    """``<package>/_emulator/librknnrt.so``: the emulator built and installed with rknnx."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return os.path.join(package, "_emulator", "librknnrt.so")


def library_path() -> str:
    """The emulator library to drive: env ``RKNNX_RUNTIME`` when it names a file (e.g. an
    emulator built by CMake alone), else the bundled one.

    Raises
    ------
    FileNotFoundError
        The library does not exist; the message says which path and how to get one.
    """
    env = os.environ.get(RUNTIME_ENV)
    if env and env != "emulator":
        if not os.path.isfile(env):
            raise FileNotFoundError(f"{RUNTIME_ENV}={env} does not exist")
        return env
    path = bundled_library()
    if not os.path.isfile(path):
        raise FileNotFoundError(f"emulator library not found at {path}: install rknnx with "
                                f"`pip install .` (it builds the emulator), or set {RUNTIME_ENV} "
                                "to a librknnrt.so built from emulator/")
    return path
