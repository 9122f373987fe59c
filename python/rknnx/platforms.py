"""Which Rockchip chip supports which RKNN C function and which query.

Pure Python (no compiled extension needed): the facts of the RKNN Runtime C API 2.5.0,
section 3.1, Tables 3-1 (functions) and 3-2 (queries), as data, with the chip-family
names the tables use, and :func:`detect_chip` reading the chip of the board from the
device tree.

The binding (``rknnx._core``) looks the chip of a context up once (the emulator reports
its personality; on a board :func:`detect_chip`) and raises
:class:`rknnx.NotSupportedError` before calling C for a function or query the chip does
not support.

Examples
--------
>>> from rknnx import platforms
>>> platforms.supports("RV1106", "rknn_inputs_set")
False
>>> platforms.supports_query("rk3588", "RKNN_QUERY_PERF_RUN")
True
>>> platforms.family("rv1103b")
'RV1106'
"""

from __future__ import annotations

import os

__all__ = [
    "CHIPS",
    "FAMILIES",
    "FUNCTIONS",
    "QUERIES",
    "QUERY_CODES",
    "normalize_chip",
    "family",
    "same_npu",
    "NPU_CORES",
    "npu_cores",
    "supports",
    "supports_query",
    "unsupported_functions",
    "why_not",
    "detect_chip",
]

#: The chip families, by the name rknnx uses for the family (its first column member in
#: the vendor's tables is listed first), and their chips.
FAMILIES: dict[str, tuple[str, ...]] = {
    "RK356X": ("RV1126B", "RK3562", "RK3566", "RK3568"),
    "RK3588": ("RK3576", "RK3588"),
    "RV1106": ("RV1106", "RV1103", "RV1103B", "RV1106B"),
    "RK2118": ("RK2118",),
}

#: Every chip the tables name, in the order of :data:`FAMILIES`.
CHIPS: tuple[str, ...] = tuple(c for chips in FAMILIES.values() for c in chips)

_FAMILY_OF = {chip: fam for fam, chips in FAMILIES.items() for chip in chips}

# Table 3-1: the families that support each function, as (RK356X, RK3588, RV1106, RK2118).
_Y, _N = True, False
_FUNCTION_TABLE: dict[str, tuple[bool, bool, bool, bool]] = {
    "rknn_init": (_Y, _Y, _Y, _Y),
    "rknn_set_core_mask": (_N, _Y, _N, _N),
    "rknn_dup_context": (_Y, _Y, _N, _N),
    "rknn_destroy": (_Y, _Y, _Y, _Y),
    "rknn_query": (_Y, _Y, _Y, _Y),
    "rknn_inputs_set": (_Y, _Y, _N, _N),
    "rknn_run": (_Y, _Y, _Y, _Y),
    "rknn_wait": (_N, _N, _N, _N),
    "rknn_outputs_get": (_Y, _Y, _N, _N),
    "rknn_outputs_release": (_Y, _Y, _N, _N),
    "rknn_create_mem_from_mb_blk": (_N, _N, _N, _N),
    "rknn_create_mem_from_phys": (_Y, _Y, _Y, _Y),
    "rknn_create_mem_from_fd": (_Y, _Y, _Y, _N),
    "rknn_create_mem": (_Y, _Y, _Y, _Y),
    "rknn_destroy_mem": (_Y, _Y, _Y, _Y),
    "rknn_set_weight_mem": (_Y, _Y, _Y, _Y),
    "rknn_set_internal_mem": (_Y, _Y, _Y, _Y),
    "rknn_set_io_mem": (_Y, _Y, _Y, _Y),
    "rknn_set_input_shapes": (_Y, _Y, _N, _N),
    # the deprecated single-input form is not in the table; it follows set_input_shapes
    "rknn_set_input_shape": (_Y, _Y, _N, _N),
    "rknn_mem_sync": (_Y, _Y, _Y, _Y),
    "rknn_matmul_create": (_Y, _Y, _N, _N),
    "rknn_matmul_set_io_mem": (_Y, _Y, _N, _N),
    "rknn_matmul_set_core_mask": (_N, _Y, _N, _N),
    "rknn_matmul_run": (_Y, _Y, _N, _N),
    "rknn_matmul_destroy": (_Y, _Y, _N, _N),
    "rknn_register_custom_ops": (_Y, _Y, _N, _N),
    "rknn_custom_op_get_op_attr": (_Y, _Y, _N, _N),
    "rknn_set_batch_core_num": (_N, _Y, _N, _N),
    "rknn_matmul_set_quant_params": (_Y, _Y, _N, _N),
    "rknn_matmul_get_quant_params": (_Y, _Y, _N, _N),
    "rknn_matmul_create_dynamic_shape": (_Y, _Y, _N, _N),
    "rknn_matmul_set_dynamic_shape": (_Y, _Y, _N, _N),
    "rknn_B_normal_layout_to_native_layout": (_Y, _Y, _N, _N),
    "rknn_create_mem2": (_Y, _Y, _Y, _Y),
}

#: Table 3-1 by function: the set of chips that support it.
FUNCTIONS: dict[str, frozenset[str]] = {
    fn: frozenset(c for fam, ok in zip(FAMILIES, row) if ok for c in FAMILIES[fam])
    for fn, row in _FUNCTION_TABLE.items()
}

#: Query command values (``rknn_query_cmd``); the NC1HWC2 names are aliases of NATIVE.
QUERY_CODES: dict[str, int] = {
    "RKNN_QUERY_IN_OUT_NUM": 0,
    "RKNN_QUERY_INPUT_ATTR": 1,
    "RKNN_QUERY_OUTPUT_ATTR": 2,
    "RKNN_QUERY_PERF_DETAIL": 3,
    "RKNN_QUERY_PERF_RUN": 4,
    "RKNN_QUERY_SDK_VERSION": 5,
    "RKNN_QUERY_MEM_SIZE": 6,
    "RKNN_QUERY_CUSTOM_STRING": 7,
    "RKNN_QUERY_NATIVE_INPUT_ATTR": 8,
    "RKNN_QUERY_NATIVE_OUTPUT_ATTR": 9,
    "RKNN_QUERY_NATIVE_NC1HWC2_INPUT_ATTR": 8,
    "RKNN_QUERY_NATIVE_NC1HWC2_OUTPUT_ATTR": 9,
    "RKNN_QUERY_NATIVE_NHWC_INPUT_ATTR": 10,
    "RKNN_QUERY_NATIVE_NHWC_OUTPUT_ATTR": 11,
    "RKNN_QUERY_DEVICE_MEM_INFO": 12,
    "RKNN_QUERY_INPUT_DYNAMIC_RANGE": 13,
    "RKNN_QUERY_CURRENT_INPUT_ATTR": 14,
    "RKNN_QUERY_CURRENT_OUTPUT_ATTR": 15,
    "RKNN_QUERY_CURRENT_NATIVE_INPUT_ATTR": 16,
    "RKNN_QUERY_CURRENT_NATIVE_OUTPUT_ATTR": 17,
}

# Table 3-2 has three columns: RK356X, RK3588, and RV1106 together with RK2118.
_ALL, _BIG, _SMALL = (_Y, _Y, _Y), (_Y, _Y, _N), (_N, _N, _Y)
_QUERY_TABLE: dict[str, tuple[bool, bool, bool]] = {
    "RKNN_QUERY_IN_OUT_NUM": _ALL,
    "RKNN_QUERY_INPUT_ATTR": _ALL,
    "RKNN_QUERY_OUTPUT_ATTR": _ALL,
    "RKNN_QUERY_PERF_DETAIL": _BIG,
    "RKNN_QUERY_PERF_RUN": _BIG,
    "RKNN_QUERY_SDK_VERSION": _ALL,
    "RKNN_QUERY_MEM_SIZE": _ALL,
    "RKNN_QUERY_CUSTOM_STRING": _ALL,
    "RKNN_QUERY_NATIVE_INPUT_ATTR": _ALL,
    "RKNN_QUERY_NATIVE_OUTPUT_ATTR": _ALL,
    "RKNN_QUERY_NATIVE_NC1HWC2_INPUT_ATTR": _ALL,
    "RKNN_QUERY_NATIVE_NC1HWC2_OUTPUT_ATTR": _ALL,
    "RKNN_QUERY_NATIVE_NHWC_INPUT_ATTR": _ALL,
    "RKNN_QUERY_NATIVE_NHWC_OUTPUT_ATTR": _ALL,
    "RKNN_QUERY_INPUT_DYNAMIC_RANGE": _BIG,
    "RKNN_QUERY_DEVICE_MEM_INFO": _SMALL,
    "RKNN_QUERY_CURRENT_INPUT_ATTR": _BIG,
    "RKNN_QUERY_CURRENT_OUTPUT_ATTR": _BIG,
    "RKNN_QUERY_CURRENT_NATIVE_INPUT_ATTR": _BIG,
    "RKNN_QUERY_CURRENT_NATIVE_OUTPUT_ATTR": _BIG,
}
_QUERY_COLUMN = {"RK356X": 0, "RK3588": 1, "RV1106": 2, "RK2118": 2}

#: Table 3-2 by query name: the set of chips that support it.
QUERIES: dict[str, frozenset[str]] = {
    q: frozenset(c for c, fam in _FAMILY_OF.items() if row[_QUERY_COLUMN[fam]])
    for q, row in _QUERY_TABLE.items()
}

_QUERY_BY_CODE: dict[int, frozenset[str]] = {QUERY_CODES[q]: chips for q, chips in QUERIES.items()}
_QUERY_NAME: dict[int, str] = {}
for _q, _v in QUERY_CODES.items():
    _QUERY_NAME.setdefault(_v, _q)
del _q, _v

_FAMILY_NOTES = {
    "RV1106": "the RV1106/RV1103/RV1103B/RV1106B family has the zero-copy flow only "
              "(create_mem + set_io_mem + run)",
    "RK2118": "RK2118 has the zero-copy flow only (create_mem + set_io_mem + run)",
    "RK356X": "the RV1126B/RK3562/RK3566/RK3568 family has one NPU core",
    "RK3588": "",
}


def normalize_chip(chip: str) -> str:
    """The chip name as the tables write it: ``"rk3588"`` -> ``"RK3588"``.

    Also accepts a device-tree compatible string (``"rockchip,rk3588"``).

    Raises
    ------
    ValueError
        For a chip the tables do not name (the message lists the known ones).
    TypeError
        If ``chip`` is not a str.
    """
    if not isinstance(chip, str):
        raise TypeError(f"chip must be a str such as 'RK3588', got {type(chip).__name__}")
    name = chip.strip().upper()
    if name.startswith("ROCKCHIP,"):
        name = name[len("ROCKCHIP,"):]
    if name not in _FAMILY_OF:
        raise ValueError(f"unknown chip {chip!r}; expected one of {', '.join(CHIPS)}")
    return name


#: chips whose NPUs run the same compiled models (the runtime accepts a model built for
#: any chip of its group): RK3566 and RK3568, RV1106 and RV1103, RV1106B and RV1103B
_NPU_GROUP = {"RK3568": "RK3566", "RV1103": "RV1106", "RV1103B": "RV1106B"}


def same_npu(a: str, b: str) -> bool:
    """Whether a model built for chip `a` runs on chip `b` (one NPU group)."""
    try:
        a, b = normalize_chip(a), normalize_chip(b)
    except ValueError:
        return a.upper() == b.upper()
    return _NPU_GROUP.get(a, a) == _NPU_GROUP.get(b, b)


#: NPU cores per chip (RK3588: 3, RK3576: 2, every other chip 1): how many contexts a Pool
#: pins to cores of their own, and which core masks the chip takes
NPU_CORES: dict[str, int] = {"RK3588": 3, "RK3576": 2}


def npu_cores(chip: str | None) -> int:
    """The number of NPU cores of `chip` (1 for an unknown chip or None)."""
    if chip is None:
        return 1
    try:
        return NPU_CORES.get(normalize_chip(chip), 1)
    except ValueError:
        return 1


def family(chip: str) -> str:
    """The family (key of :data:`FAMILIES`) of a chip: ``"RV1103"`` -> ``"RV1106"``."""
    return _FAMILY_OF[normalize_chip(chip)]


def supports(chip: str, function: str) -> bool:
    """Whether ``chip`` supports the C function ``function`` (Table 3-1).

    ``function`` is the C name (``"rknn_inputs_set"``); the ``rknn_`` prefix may be left
    out.  A function the table does not list (a newer addition) counts as supported.

    Raises
    ------
    ValueError
        For an unknown chip.
    """
    c = normalize_chip(chip)
    fn = function if function.startswith("rknn_") else "rknn_" + function
    chips = FUNCTIONS.get(fn)
    return True if chips is None else c in chips


def supports_query(chip: str, cmd) -> bool:
    """Whether ``chip`` answers the query ``cmd`` (Table 3-2).

    ``cmd`` is a ``QueryCmd``/int value or a name (``"RKNN_QUERY_PERF_RUN"``, or
    ``"PERF_RUN"``).  A command the table does not list counts as unsupported.

    Raises
    ------
    ValueError
        For an unknown chip or query name.
    """
    c = normalize_chip(chip)
    if isinstance(cmd, str):
        name = cmd.upper()
        if not name.startswith("RKNN_QUERY_"):
            name = "RKNN_QUERY_" + name
        if name not in QUERIES:
            raise ValueError(f"unknown query {cmd!r}; expected one of {', '.join(QUERIES)}")
        return c in QUERIES[name]
    chips = _QUERY_BY_CODE.get(int(cmd))
    return chips is not None and c in chips


def unsupported_functions(chip: str) -> frozenset[str]:
    """The C functions of Table 3-1 that ``chip`` does not support."""
    c = normalize_chip(chip)
    return frozenset(fn for fn, chips in FUNCTIONS.items() if c not in chips)


def why_not(chip: str, function: str | None = None, cmd=None) -> str:
    """A sentence saying that ``chip`` does not support ``function`` (or query ``cmd``)."""
    c = normalize_chip(chip)
    fam = _FAMILY_OF[c]
    if function is not None:
        what = f"{function} is not supported on {c}"
        if FUNCTIONS.get(function) == frozenset():
            what += " (nor on any other chip)"
        note = _FAMILY_NOTES[fam]
    else:
        qname = cmd if isinstance(cmd, str) else _QUERY_NAME.get(int(cmd), f"query {cmd}")
        what = f"rknn_query({qname}) is not supported on {c}"
        note = ""
    return what + (f" ({note})" if note else "") + " (RKNN C API 2.5.0, Tables 3-1/3-2)"


_DEVICE_TREE = "/proc/device-tree/compatible"


def detect_chip(path: str | os.PathLike | None = None) -> str | None:
    """The chip of this board, read from the device tree, or None.

    Reads ``/proc/device-tree/compatible`` (NUL-separated strings such as
    ``"rockchip,rk3588-evb1\\0rockchip,rk3588\\0"``) and returns the first
    ``rockchip,<chip>`` entry naming a chip of the tables (``"RK3588"``).

    Parameters
    ----------
    path : str or os.PathLike, optional
        Another file to read (for tests).

    Returns
    -------
    str or None
        None when the file is missing (not a board with a device tree) or names no known
        Rockchip chip.
    """
    p = _DEVICE_TREE if path is None else os.fspath(path)
    try:
        with open(p, "rb") as f:
            raw = f.read(4096)
    except OSError:
        return None
    for entry in raw.split(b"\0"):
        text = entry.decode("ascii", "replace").strip()
        if not text.lower().startswith("rockchip,"):
            continue
        try:
            return normalize_chip(text)
        except ValueError:
            continue
    return None


def __dir__():
    # tab completion shows the public names, not the imports
    return sorted(__all__)
