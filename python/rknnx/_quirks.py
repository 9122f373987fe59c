"""Crashes of the vendor's runtimes that rknnx's own call patterns would set off, and what
the facade does instead (docs/abi-notes.md, "Runtime quirks").

Each quirk is keyed by the runtime's version, as ``RKNN_QUERY_SDK_VERSION`` answers it on
the context at hand ("1.6.0 (9a7b5d24c@...)"); a runtime that refuses the query, or a
version not listed, has none.  The emulator plays them (``rknn_emu_set_runtime_version``).
"""

from __future__ import annotations

import re
from typing import Optional, Tuple

from rknnx.errors import RKNNError

__all__ = ["version_of", "copies_break_custom_ops", "declares_custom_ops",
           "mem_size_breaks_copies", "check_custom_ops_supported"]

Version = Tuple[int, int, int]

_VERSION = re.compile(r"\s*(\d+)\.(\d+)\.(\d+)")

#: librknnrt 1.6.0: once a ``rknn_dup_context`` copy of a context is destroyed, a
#: ``rknn_run`` of that context with custom operators registered segfaults (whenever they
#: were registered, whether the copy ran or not)
_CUSTOM_DUP_DESTROY = {(1, 6, 0)}
#: librknnrt 1.4.0: after ``RKNN_QUERY_MEM_SIZE`` on a context, its second
#: ``rknn_dup_context`` copy segfaults at its first use
_MEM_SIZE_DUP = {(1, 4, 0)}


def parse(api_version: str) -> Optional[Version]:
    """(major, minor, patch) of an SDK_VERSION ``api_version`` string, None if it has none."""
    m = _VERSION.match(api_version or "")
    return (int(m.group(1)), int(m.group(2)), int(m.group(3))) if m else None


def version_of(ctx) -> Optional[Version]:
    """The runtime version context `ctx` answers (None if it refuses the query)."""
    from rknnx import lowlevel

    try:
        return parse(ctx.query(lowlevel.QueryCmd.SDK_VERSION).api_version)
    except (RKNNError, ValueError):
        return None


def copies_break_custom_ops(version: Optional[Version]) -> bool:
    """No ``rknn_dup_context`` copy must be made of a context that runs custom operators:
    once the copy is destroyed, the source's runs crash (librknnrt 1.6.0)."""
    return version in _CUSTOM_DUP_DESTROY


def declares_custom_ops(source: bytes) -> bool:
    """Whether the model file uses custom operators (:func:`rknnx.modelfile.read`); True
    for a file rknnx cannot read (it may)."""
    from rknnx import modelfile

    try:
        return bool(modelfile.read(source).custom_ops)
    except Exception:
        return True


def mem_size_breaks_copies(version: Optional[Version]) -> bool:
    """``RKNN_QUERY_MEM_SIZE`` must not be asked on a context that is copied later: its
    second copy crashes (librknnrt 1.4.0)."""
    return version in _MEM_SIZE_DUP


def check_custom_ops_supported(source: bytes, path: Optional[str]) -> None:
    """NotSupportedError, before ``rknn_init``, for a file with custom operators on a runtime
    without ``rknn_register_custom_ops`` (custom operators arrived in librknnrt 1.6.0):
    librknnrt 1.5.2 aborts the process loading one ("unsupport cstDualResidual op in
    current": the vendor's dual_residual_custom)."""
    from rknnx import lowlevel, modelfile
    from rknnx.errors import NotSupportedError

    info = lowlevel.runtime_info()
    if "rknn_register_custom_ops" not in info["missing"]:
        return
    try:
        ops = sorted({op.type for op in modelfile.read(source).custom_ops})
    except Exception:            # not a file rknnx reads: the runtime decides
        return
    if ops:
        version = info.get("version") or "(version unknown)"
        raise NotSupportedError(
            f"model {path or '(bytes)'} uses custom operators ({', '.join(ops)}), and "
            f"librknnrt {version} at {info['path']} has none (no rknn_register_custom_ops: "
            "they arrived in librknnrt 1.6.0; 1.5.2 aborts the process loading such a file): "
            "use librknnrt 1.6.0 or later", None, "rknn_register_custom_ops")
