"""Facts and small values the facade's layers share: core masks, timing (``Perf``), the
`raw` flag.  At the bottom of the facade (it imports only the binding and numpy), so the
model, its sessions, runners and pools all take them from here without an import loop.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional

import numpy as np

from rknnx import lowlevel as _ll

__all__ = ["Perf", "PerfRow", "as_core_mask", "check_raw", "perf_of"]

_QUERY = _ll.QueryCmd


def as_core_mask(mask, where: str):
    """`mask` as a ``CoreMask`` (TypeError for anything but a CoreMask or an int)."""
    if isinstance(mask, bool) or not isinstance(mask, (int, np.integer)):
        raise TypeError(f"{where}: a core mask is a rknnx.CoreMask (or its int value); got "
                        f"{mask!r}")
    return _ll.CoreMask(int(mask))


def check_raw(raw) -> bool:
    """`raw` as a bool (TypeError for anything but True/False)."""
    if raw is True or raw is False or isinstance(raw, np.bool_):
        return bool(raw)
    raise TypeError(f"raw must be True or False; got {raw!r}")


@dataclass(frozen=True)
class PerfRow:
    """One layer of the runtime's per-layer table: its ``id``, operator type ``op``,
    ``name`` and ``time_us``."""

    id: int
    op: str
    name: str
    time_us: int


@dataclass(frozen=True)
class Perf:
    """Timing of the last run: ``run_us`` (the NPU's time, microseconds) and ``detail``
    (the runtime's per-layer table as text, or None unless the model was opened with
    ``perf=True``); :attr:`rows` has the table parsed."""

    run_us: int
    detail: Optional[str]

    @property
    def rows(self) -> List[PerfRow]:
        """The per-layer table as rows (``[]`` without ``perf=True``).  Columns are found
        by their headers (``ID``, ``OpType``, ``Name`` or ``FullName``, ``Time(us)``), so
        the emulator's table and a board's wider one both parse."""
        return _perf_rows(self.detail or "")


def _perf_rows(text: str) -> List[PerfRow]:
    rows: List[PerfRow] = []
    header: List[str] = []
    for line in text.splitlines():
        parts = line.split()
        if not parts:
            continue
        if "OpType" in parts and any(p.startswith("Time(us)") for p in parts):
            header = parts
            continue
        if not header or not parts[0].isdigit() or len(parts) < 3:
            continue
        col = {h: k for k, h in enumerate(header)}
        t = col.get("Time(us)")
        name_col = col.get("Name", col.get("FullName"))
        time_tok = parts[t] if t is not None and len(parts) == len(header) else None
        if time_tok is None or not time_tok.isdigit():
            nums = [p for p in parts[2:] if p.isdigit()]
            time_tok = nums[-1] if nums else "0"
        name = (parts[name_col] if name_col is not None and len(parts) == len(header)
                else parts[-1] if len(parts) > 3 else parts[1])
        rows.append(PerfRow(int(parts[0]), parts[col.get("OpType", 1)]
                            if len(parts) == len(header) else parts[1], name, int(time_tok)))
    return rows


def perf_of(ctx, collected: bool) -> Perf:
    """The Perf of the last run on `ctx` (``PERF_RUN``, and ``PERF_DETAIL`` when the
    context collects it)."""
    run = ctx.query(_QUERY.PERF_RUN)
    detail = ctx.query(_QUERY.PERF_DETAIL).text if collected else None
    return Perf(int(run.run_duration), detail)
