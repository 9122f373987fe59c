"""Which chip rknnx runs on, and which API families that chip lacks.

The vendor's platform tables (RKNN Runtime C API 2.x, section 3.1) mark the matmul API
(``rknn_matmul_*``) and custom operators (``rknn_register_custom_ops``) as unsupported on
the RV1106/RV1103 family and on RK2118.  The facade checks this before calling C so that
the error names the chip and the function instead of the runtime's bare ``RKNN_ERR_FAIL``.

The chip is the emulator's personality when the emulator is loaded, otherwise the SoC
named in the device tree (``/proc/device-tree/compatible``); when neither says, the facade
calls the runtime and lets its own error through.
"""

from __future__ import annotations

from typing import Optional

__all__ = ["current_chip", "NO_MATMUL_OR_CUSTOM_OPS", "refuse_if_unsupported"]

#: chips without rknn_matmul_* and rknn_register_custom_ops
NO_MATMUL_OR_CUSTOM_OPS = frozenset({"RV1106", "RV1103", "RV1103B", "RV1106B", "RK2118"})

_KNOWN = ("RK3588", "RK3576", "RK3566", "RK3568", "RK3562", "RV1126B", "RV1106B", "RV1103B",
          "RV1106", "RV1103", "RK2118")

_dt_chip: Optional[str] = None
_dt_read = False


def _device_tree_chip() -> Optional[str]:
    global _dt_chip, _dt_read
    if not _dt_read:
        _dt_read = True
        try:
            with open("/proc/device-tree/compatible", "rb") as f:
                words = f.read().decode("ascii", "replace").upper().split("\0")
        except OSError:
            words = []
        for chip in _KNOWN:                     # longer names first where they share a prefix
            if any(w.endswith("," + chip) for w in words):
                _dt_chip = chip
                break
    return _dt_chip


def current_chip() -> Optional[str]:
    """The chip name (``"RK3588"``, ...) the loaded runtime drives, or None if unknown."""
    from rknnx import lowlevel

    chip = lowlevel.runtime_info().get("platform")
    if chip:
        return str(chip).upper()
    return _device_tree_chip()


def refuse_if_unsupported(what: str, c_function: str) -> None:
    """Raise NotSupportedError if the current chip lacks `c_function`'s family.

    `what` is the facade call named in the message (``"rknnx.matmul"``).
    """
    from rknnx.errors import NotSupportedError

    chip = current_chip()
    if chip in NO_MATMUL_OR_CUSTOM_OPS:
        raise NotSupportedError(
            f"{what} is not supported on {chip}: the runtime has no {c_function} on the "
            "RV1106/RV1103 family and RK2118 (it is available on RK3588/RK3576 and "
            "RK3566/RK3568/RK3562/RV1126B)", None, c_function)
