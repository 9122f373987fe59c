"""Where the emulator library is: the one place that answers it (the loader uses it too)."""

from __future__ import annotations

import os

#: the env variable that chooses the runtime library (a path, or the word ``emulator``)
RUNTIME_ENV = "RKNNX_RUNTIME"


#: the runtime versions the bundled emulator can play: the default (2.x, as strict as the
#: boards) and librknnrt 1.5.2 (``RKNNX_RUNTIME=emulator-1.5.2``)
EMULATOR_VERSIONS = ("1.5.2",)


def bundled_library(version: "str | None" = None) -> str:
    """``<package>/_emulator/librknnrt.so``: the emulator built and installed with rknnx;
    with `version` ("1.5.2"), the build of it that plays that librknnrt version."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    name = "librknnrt.so" if not version else f"librknnrt-{version}.so"
    return os.path.join(package, "_emulator", name)


def resolve_word(word: str) -> str:
    """A library path for the words the loader takes: ``emulator`` (the bundled emulator),
    ``emulator-<version>`` (it, playing an older librknnrt), else `word` itself (a path)."""
    if word == "emulator":
        return bundled_library()
    if word.startswith("emulator-"):
        version = word[len("emulator-"):]
        if version not in EMULATOR_VERSIONS:
            raise ValueError(f"{word!r}: the emulator plays librknnrt "
                             f"{', '.join(EMULATOR_VERSIONS)} besides its default; "
                             f"expected 'emulator' or one of "
                             f"{[f'emulator-{v}' for v in EMULATOR_VERSIONS]}")
        return bundled_library(version)
    return word


def library_path() -> str:
    """The emulator library to drive: env ``RKNNX_RUNTIME`` when it names a file (e.g. an
    emulator built by CMake alone), else the bundled one.

    Raises
    ------
    FileNotFoundError
        The library does not exist; the message says which path and how to get one.
    """
    env = os.environ.get(RUNTIME_ENV)
    if env and not env.startswith("emulator"):
        if not os.path.isfile(env):
            raise FileNotFoundError(f"{RUNTIME_ENV}={env} does not exist")
        return env
    path = resolve_word(env) if env else bundled_library()
    if not os.path.isfile(path):
        raise FileNotFoundError(f"emulator library not found at {path}: install rknnx with "
                                f"`pip install .` (it builds the emulator), or set {RUNTIME_ENV} "
                                "to a librknnrt.so built from emulator/")
    return path
