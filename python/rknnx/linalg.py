"""Matrix products on the NPU for people: :func:`matmul` and :class:`Matmul`.

(The module is ``rknnx.linalg`` rather than ``rknnx.matmul`` so that importing it never
replaces the function ``rknnx.matmul`` with a module of the same name.)

Built on the low-level :class:`rknnx.lowlevel.MatmulContext` (``rknn_matmul_*``):

- :func:`matmul` computes one product ``C = A @ B`` from numpy arrays; the matmul type
  is chosen from the operands' dtypes (and ``out_dtype``);
- :class:`Matmul` keeps a context and its three NPU buffers for repeated products: its
  ``A``, ``B`` and ``C`` are numpy views of NPU memory, so a loop writes ``mm.A[...]``,
  calls ``mm.run()`` and reads ``mm.C`` without any other copy.

Supported operand pairs (``a x b -> C``; the first output dtype is the default):

========================  =====================================
a x b                     C
========================  =====================================
float16 x float16         float32, float16
int8 x int8               int32, int8, float32
float16 x int8            float32, float16
float16 x int4            float32, float16, bfloat16
int8 x int4               int32, float16
int4 x int4               int16
========================  =====================================

int4 operands are given as integer arrays with values in -8..7 and declared with
``a_dtype="int4"`` / ``b_dtype="int4"``; rknnx packs them two to a byte (element 0 in
the low nibble).  ``bfloat16`` results are returned as their uint16 bit patterns (numpy
has no bfloat16): ``(c.astype(np.uint32) << 16).view(np.float32)`` widens them.

Quantization parameters (``quant=``) are a mapping ``{"A": q, "B": q, "C": q}`` where
each ``q`` is a scale or a ``(scale, zero_point)`` pair.  B takes one scale (per layer),
N scales (per output channel) or ``N * K // group_size`` scales (per group, with
``group_size=``; ordered by column, then group); zero points are 0 unless given.  An
integer product of quantized operands computes ``(A - za) @ (B - zb)``; int8 outputs are
requantized with ``scale_A * scale_B / scale_C`` and ``zp_C``; float outputs are scaled.

The matmul API does not exist on the RV1106/RV1103 family nor on RK2118: there, both
raise :class:`rknnx.NotSupportedError` naming the chip and the function.
"""

from __future__ import annotations

import operator
from typing import Any, Dict, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

from rknnx import _guard
from rknnx import lowlevel as _ll

from rknnx.runtime import refuse_if_unsupported

__all__ = ["matmul", "Matmul", "SUPPORTED"]

_T = _ll.MatmulType

#: (a kind, b kind) -> {C kind: MatmulType}, the first entry being the default output
SUPPORTED: Dict[Tuple[str, str], Dict[str, _ll.MatmulType]] = {
    ("float16", "float16"): {"float32": _T.FLOAT16_MM_FLOAT16_TO_FLOAT32,
                             "float16": _T.FLOAT16_MM_FLOAT16_TO_FLOAT16},
    ("int8", "int8"): {"int32": _T.INT8_MM_INT8_TO_INT32, "int8": _T.INT8_MM_INT8_TO_INT8,
                       "float32": _T.INT8_MM_INT8_TO_FLOAT32},
    ("float16", "int8"): {"float32": _T.FLOAT16_MM_INT8_TO_FLOAT32,
                          "float16": _T.FLOAT16_MM_INT8_TO_FLOAT16},
    ("float16", "int4"): {"float32": _T.FLOAT16_MM_INT4_TO_FLOAT32,
                          "float16": _T.FLOAT16_MM_INT4_TO_FLOAT16,
                          "bfloat16": _T.FLOAT16_MM_INT4_TO_BFLOAT16},
    ("int8", "int4"): {"int32": _T.INT8_MM_INT4_TO_INT32, "float16": _T.INT8_MM_INT4_TO_FLOAT16},
    ("int4", "int4"): {"int16": _T.INT4_MM_INT4_TO_INT16},
}

#: MatmulType -> (a kind, b kind, C kind)
KINDS: Dict[_ll.MatmulType, Tuple[str, str, str]] = {
    t: (ka, kb, kc) for (ka, kb), outs in SUPPORTED.items() for kc, t in outs.items()
}

_LAYOUTS = {"normal": _ll.MatmulLayout.NORM, "native": _ll.MatmulLayout.NATIVE,
            "transposed": _ll.MatmulLayout.TP_NORM}

_Q = _ll.MatmulQuantType


def _pairs_text() -> str:
    return "; ".join(f"{a} x {b} -> {' or '.join(outs)}" for (a, b), outs in SUPPORTED.items())


def _kind_name(dtype: Any) -> str:
    """'bfloat16' or a numpy dtype name."""
    if isinstance(dtype, str) and dtype.lower() in ("bfloat16", "bf16"):
        return "bfloat16"
    if isinstance(dtype, str) and dtype.lower() == "int4":
        return "int4"
    try:
        return np.dtype(dtype).name
    except TypeError:
        raise TypeError(f"{dtype!r} is not a dtype") from None


def _operand_kind(arr: np.ndarray, declared: Any, name: str, where: str) -> str:
    """The kind of operand `name` ('float16', 'int8' or 'int4'), from its dtype and the
    declared dtype (only 'int4' needs declaring)."""
    if declared is not None:
        kind = _kind_name(declared)
        if kind == "int4":
            if arr.dtype.kind not in "iu":
                raise TypeError(f"{where}: {name}_dtype='int4' needs an integer array with "
                                f"values in -8..7, got {name} of dtype {arr.dtype}")
            return "int4"
        if kind != arr.dtype.name:
            raise TypeError(f"{where}: {name} has dtype {arr.dtype}, but {name}_dtype says "
                            f"{kind}; pass {name}.astype(np.{kind}) or drop {name}_dtype")
    return arr.dtype.name


def resolve_type(a_kind: str, b_kind: str, out_dtype: Any = None,
                 where: str = "rknnx.matmul") -> _ll.MatmulType:
    """The MatmulType computing ``a_kind x b_kind`` into `out_dtype` (None: the default).

    >>> resolve_type("int8", "int8")
    <MatmulType.INT8_MM_INT8_TO_INT32: 2>
    """
    outs = SUPPORTED.get((a_kind, b_kind))
    if outs is None:
        raise TypeError(f"{where}: no NPU matmul multiplies {a_kind} x {b_kind}; supported "
                        f"(a x b -> C): {_pairs_text()} (int4: integer values in -8..7 "
                        "declared with a_dtype/b_dtype='int4')")
    if out_dtype is None:
        return next(iter(outs.values()))
    kc = _kind_name(out_dtype)
    if kc not in outs:
        raise TypeError(f"{where}: {a_kind} x {b_kind} gives {' or '.join(outs)}, "
                        f"not {kc} (out_dtype)")
    return outs[kc]


def _as_type(type: Any, where: str) -> _ll.MatmulType:
    if isinstance(type, str):
        try:
            return _T[type.upper()]
        except KeyError:
            raise ValueError(f"{where}: {type!r} is not a MatmulType name; known: "
                             f"{', '.join(t.name for t in KINDS)}") from None
    if isinstance(type, (bool, float)) or not isinstance(type, (int, np.integer)):
        raise TypeError(f"{where}: type must be a MatmulType (or its name), got {type!r}")
    try:
        t = _T(int(type))
    except ValueError:
        raise ValueError(f"{where}: {int(type)} is not a MatmulType") from None
    if t not in KINDS:  # pragma: no cover - every vendor type is in the table
        raise ValueError(f"{where}: {t.name} is not supported by rknnx.Matmul")
    return t


def _quant_entry(q: Any, name: str, where: str) -> Tuple[np.ndarray, np.ndarray]:
    if isinstance(q, tuple):
        if len(q) != 2:
            raise ValueError(f"{where}: quant[{name!r}] must be a scale or a (scale, zero_point) "
                             f"pair, got a tuple of {len(q)}")
        scale, zp = q
    else:
        scale, zp = q, 0
    scale = np.atleast_1d(np.asarray(scale, dtype=np.float64)).ravel()
    zp_arr = np.atleast_1d(np.asarray(zp)).ravel()
    if zp_arr.size and zp_arr.dtype.kind not in "iu":
        if zp_arr.dtype.kind == "f" and np.all(np.mod(zp_arr, 1) == 0):
            zp_arr = zp_arr.astype(np.int64)
        else:
            raise TypeError(f"{where}: quant[{name!r}] zero points must be integers, "
                            f"got {zp_arr.dtype}")
    if not (scale.size and np.all(np.isfinite(scale)) and np.all(scale > 0)):
        raise ValueError(f"{where}: quant[{name!r}] scales must be positive and finite")
    return scale.astype(np.float32), zp_arr.astype(np.int32)


def _parse_quant(quant: Optional[Mapping[str, Any]], t: _ll.MatmulType, K: int, N: int,
                 group_size: int, where: str):
    """Validate `quant` against the type and shape; return (params, B quant type, AC quant type)."""
    if quant is None:
        if group_size:
            raise ValueError(f"{where}: group_size={group_size} needs per-group B scales "
                             "in quant={'B': ...}")
        return {}, _Q.PER_LAYER_SYM, _Q.PER_LAYER_SYM
    if not isinstance(quant, Mapping):
        raise TypeError(f"{where}: quant must be a mapping {{'A': q, 'B': q, 'C': q}} (q a "
                        f"scale or a (scale, zero_point) pair), got {type(quant).__name__}")
    ka, kb, _ = KINDS[t]
    if "int" not in ka + kb:
        raise ValueError(f"{where}: {t.name} multiplies floats: it takes no quantization "
                         "parameters (quant)")
    params = {}
    for key, q in quant.items():
        name = str(key).upper()
        if name not in ("A", "B", "C") or name in params:
            raise ValueError(f"{where}: quant keys must be 'A', 'B' and 'C' (each once), "
                             f"got {key!r}")
        params[name] = _quant_entry(q, name, where)
    for name in ("A", "C"):
        if name in params and params[name][0].size != 1:
            raise ValueError(f"{where}: quant[{name!r}] is per layer: one scale, got "
                             f"{params[name][0].size}")
        if name in params and params[name][1].size > 1:
            raise ValueError(f"{where}: quant[{name!r}] is per layer: one zero point, got "
                             f"{params[name][1].size}")
    asym = any(np.any(p[1] != 0) for n, p in params.items() if n != "B")
    ac_q = _Q.PER_LAYER_ASYM if asym else _Q.PER_LAYER_SYM
    b_q = _Q.PER_LAYER_SYM
    if "B" in params:
        scale, zp = params["B"]
        b_asym = bool(np.any(zp != 0))
        if group_size:
            want = N * K // group_size if K % group_size == 0 else None
            if want is None or scale.size != want:
                raise ValueError(f"{where}: per-group B quantization (group_size={group_size}) "
                                 f"needs K a multiple of group_size and N*K/group_size = "
                                 f"{N * K // group_size} scales, got K={K} and {scale.size}")
            b_q = _Q.PER_GROUP_ASYM if b_asym else _Q.PER_GROUP_SYM
        elif scale.size == 1:
            b_q = _Q.PER_LAYER_ASYM if b_asym else _Q.PER_LAYER_SYM
        elif scale.size == N:
            b_q = _Q.PER_CHANNEL_ASYM if b_asym else _Q.PER_CHANNEL_SYM
        else:
            raise ValueError(f"{where}: quant['B'] needs 1 scale (per layer) or N={N} scales "
                             f"(per channel), or group_size= for per-group scales; got "
                             f"{scale.size}")
        if zp.size not in (1, scale.size):
            raise ValueError(f"{where}: quant['B'] needs 1 or {scale.size} zero points, "
                             f"got {zp.size}")
    elif group_size:
        raise ValueError(f"{where}: group_size={group_size} needs per-group B scales in "
                         "quant={'B': ...}")
    return params, b_q, ac_q


#: the largest M, K or N a product takes (the emulator refuses larger ones with a status and
#: a log line; the limit said before any memory is allocated)
MAX_DIM = 65536


def _pos_int(v: Any, name: str, where: str) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
        raise TypeError(f"{where}: {name} must be an int, got {type(v).__name__}")
    if not 1 <= v <= MAX_DIM:
        raise ValueError(f"{where}: {name} must be in 1..{MAX_DIM}, got {v} (M, K and N of "
                         "a product are each at most 65536)")
    return int(v)


def _int4_values(x: np.ndarray, name: str, where: str) -> np.ndarray:
    if x.size and (x.min() < -8 or x.max() > 7):
        raise ValueError(f"{where}: {name} is int4: values must be in -8..7, got "
                         f"{x.min()}..{x.max()}")
    return x.astype(np.int8, copy=False)


class Matmul:
    """A reusable NPU matrix product ``C = A @ B`` whose A, B and C are NPU memory.

    Parameters
    ----------
    M, K, N : int
        The shape: A is (M, K), B is (K, N), C is (M, N).  Omit them and give ``shapes``
        for a context with several shapes (dynamic shapes).
    type : MatmulType, its name, or None
        The product's type; or leave it out and give the dtypes (``a_dtype``, ``b_dtype``
        and optionally ``out_dtype``), as for :func:`matmul`.
    a_dtype, b_dtype, out_dtype : dtype or ``"int4"`` / ``"bfloat16"``
        The operands' and result's dtypes, when ``type`` is not given.
    b : array, optional
        B, (K, N) in its logical layout, written with :meth:`set_b` at once.
    b_layout : ``"normal"``, ``"native"`` or ``"transposed"``
        How B lies in NPU memory: as (K, N); in the NPU's native blocked layout, faster
        for a B reused across many runs (:meth:`set_b` converts); or as (N, K).
    shapes : sequence of (M, K, N), optional
        The shapes of a dynamic-shape context; the first is current; :meth:`set_shape`
        switches.  The buffers are sized for the largest.
    quant, group_size : see the module documentation.
    core_mask : CoreMask, optional
        The NPU cores to run on (RK3588/RK3576).

    Attributes ``A``, ``B``, ``C`` are numpy views of the NPU buffers in the current
    shape: A (M, K) and C (M, N) in the operand dtypes (int4 A: the packed bytes, written
    by :meth:`set_a`; bfloat16 C: uint16 bit patterns); B as it lies in memory ((K, N),
    (N, K), or the native blocks; int4: packed bytes), written by :meth:`set_b`.

    :meth:`close` (or leaving the ``with`` block) frees the buffers and the context; it
    raises ``BufferError`` and leaves everything open while a view of A, B or C taken by
    the caller is still alive, as the low-level layer does.  A closed Matmul raises
    ``ValueError`` on use.

    Examples
    --------
    >>> import numpy as np, rknnx
    >>> with rknnx.Matmul(4, 64, 32, a_dtype=np.float16, b_dtype=np.float16) as mm:
    ...     mm.set_b(np.ones((64, 32), np.float16))
    ...     mm.A[...] = 0.5
    ...     mm.run()
    ...     float(mm.C[0, 0])
    32.0
    """

    def __init__(self, M: Optional[int] = None, K: Optional[int] = None,
                 N: Optional[int] = None, type: Any = None, *, a_dtype: Any = None,
                 b_dtype: Any = None, out_dtype: Any = None, b: Any = None,
                 b_layout: str = "normal", shapes: Optional[Sequence[Tuple[int, int, int]]] = None,
                 quant: Optional[Mapping[str, Any]] = None, group_size: int = 0,
                 core_mask: Any = None):
        where = "rknnx.Matmul"
        self._ctx = None
        self._mems: Dict[str, Any] = {}
        self._views: Dict[str, np.ndarray] = {}
        # ---- type
        if type is not None:
            if a_dtype is not None or b_dtype is not None or out_dtype is not None:
                raise TypeError(f"{where}: give type= or the dtypes (a_dtype, b_dtype, "
                                "out_dtype), not both")
            t = _as_type(type, where)
        else:
            if a_dtype is None or b_dtype is None:
                raise TypeError(f"{where}: needs type= (a MatmulType) or a_dtype= and b_dtype=; "
                                f"supported (a x b -> C): {_pairs_text()}")
            t = resolve_type(_kind_name(a_dtype), _kind_name(b_dtype), out_dtype, where)
        self.type = t
        # ---- shapes
        if shapes is not None:
            if M is not None or K is not None or N is not None:
                raise TypeError(f"{where}: give M, K, N or shapes=, not both")
            try:
                shapes = [tuple(operator.index(x) for x in s) for s in shapes]
            except TypeError:
                raise TypeError(f"{where}: shapes must be a sequence of (M, K, N) int "
                                "triples") from None
            if not shapes:
                raise ValueError(f"{where}: shapes needs at least one (M, K, N)")
            for s in shapes:
                if len(s) != 3:
                    raise TypeError(f"{where}: shapes must be (M, K, N) triples, got {s}")
                for v, n in zip(s, "MKN"):
                    _pos_int(v, n, where)
            K0, N0 = shapes[0][1], shapes[0][2]
        else:
            if M is None or K is None or N is None:
                raise TypeError(f"{where}: needs M, K and N (or shapes=[(M, K, N), ...])")
            M, K, N = (_pos_int(v, n, where) for v, n in ((M, "M"), (K, "K"), (N, "N")))
            K0, N0 = K, N
        if b_layout not in _LAYOUTS:
            raise ValueError(f"{where}: b_layout must be 'normal', 'native' or 'transposed', "
                             f"got {b_layout!r}")
        if not isinstance(group_size, (int, np.integer)) or group_size < 0:
            raise ValueError(f"{where}: group_size must be an int >= 0, got {group_size!r}")
        params, b_q, ac_q = _parse_quant(quant, t, K0, N0, int(group_size), where)
        self.b_layout = b_layout
        refuse_if_unsupported(where, "rknn_matmul_create")
        # ---- create (everything made so far is closed again if a step fails)
        try:
            kw = dict(type=t, B_layout=_LAYOUTS[b_layout], B_quant_type=b_q,
                      AC_quant_type=ac_q, group_size=int(group_size))
            if shapes is not None:
                self._ctx = _ll.MatmulContext(shapes=shapes, **kw)
            else:
                self._ctx = _ll.MatmulContext(M, K, N, **kw)
            for name in ("B", "A", "C"):
                if name in params:
                    scale, zp = params[name]
                    self._ctx.set_quant_params(name, scale, zp)
            if core_mask is not None:
                self._ctx.set_core_mask(core_mask)
            ios = self._ctx.io_attrs
            for x in "ABC":
                size = max(getattr(io, x).size for io in ios)
                mem = self._ctx.create_mem(size)
                self._mems[x] = mem
                self._ctx.set_io_mem(mem, x)
        except BaseException:
            self._abandon()
            raise
        if b is not None:
            try:
                self.set_b(b)
            except BaseException:
                self.close()
                raise

    # ---- state --------------------------------------------------------------------------
    def _abandon(self):
        self._views.clear()
        for m in self._mems.values():
            m.close()
        self._mems.clear()
        if self._ctx is not None:
            self._ctx.close()

    def _live(self, what: str):
        if self._ctx is None or self._ctx.closed:
            raise ValueError(f"rknnx.Matmul.{what}: this Matmul is closed")
        return self._ctx

    @property
    def closed(self) -> bool:
        """True after :meth:`close`."""
        return self._ctx is None or self._ctx.closed

    @property
    def shape(self) -> Tuple[int, int, int]:
        """The current (M, K, N)."""
        return tuple(self._live("shape").shape)

    @property
    def shapes(self) -> Tuple[Tuple[int, int, int], ...]:
        """Every shape of the context (one unless created with ``shapes=``)."""
        return tuple(tuple(s) for s in self._live("shapes").shapes)

    @property
    def context(self) -> _ll.MatmulContext:
        """The low-level MatmulContext (for what the facade does not cover)."""
        return self._live("context")

    def _view(self, x: str) -> np.ndarray:
        self._live(x)
        v = self._views.get(x)
        if v is None:
            v = self._views[x] = np.asarray(self._mems[x])
        return v

    @property
    def A(self) -> np.ndarray:
        """A as a numpy view of NPU memory: (M, K) (int4: the packed bytes)."""
        return self._view("A")

    @property
    def B(self) -> np.ndarray:
        """B as it lies in NPU memory (see ``b_layout``; int4: the packed bytes)."""
        return self._view("B")

    @property
    def C(self) -> np.ndarray:
        """C as a numpy view of NPU memory: (M, N) (bfloat16: uint16 bit patterns)."""
        return self._view("C")

    def __repr__(self) -> str:
        if self.closed:
            return "<rknnx.Matmul closed>"
        M, K, N = self.shape
        return f"<rknnx.Matmul {self.type.name} M={M} K={K} N={N} b_layout={self.b_layout!r}>"

    # ---- data ---------------------------------------------------------------------------
    def _operand(self, value: Any, name: str, kind: str, shape: Tuple[int, int],
                 where: str) -> np.ndarray:
        arr = np.asarray(value)
        if kind == "int4":
            if arr.dtype.kind not in "iu":
                raise TypeError(f"{where}: {name} is int4 here: give integer values in "
                                f"-8..7, got dtype {arr.dtype}")
        elif arr.dtype != np.dtype(kind):
            raise TypeError(f"{where}: {name} must be {kind} for {self.type.name}, got "
                            f"{arr.dtype}")
        if arr.shape != shape:
            raise ValueError(f"{where}: {name} must have shape {shape} for the current shape "
                             f"(M, K, N) = {self.shape}, got {arr.shape}")
        if kind == "int4":
            arr = _int4_values(arr, name, where)
        return arr

    def set_a(self, a: Any) -> None:
        """Write A, (M, K) in the A dtype (int4: values in -8..7, packed here).

        >>> mm.set_a(np.zeros((4, 64), np.float16))          # doctest: +SKIP
        """
        where = "rknnx.Matmul.set_a"
        self._live("set_a")
        M, K, _ = self.shape
        a = self._operand(a, "a", KINDS[self.type][0], (M, K), where)
        v = self._view("A")
        if KINDS[self.type][0] == "int4":
            v[...] = _ll.pack_int4(a)
        else:
            v[...] = a

    def set_b(self, b: Any, *, layout: str = "normal") -> None:
        """Write B.

        Parameters
        ----------
        b : array
            B as a (K, N) matrix in the B dtype (int4: values in -8..7) when ``layout`` is
            ``"normal"``; it is converted to the Matmul's ``b_layout`` here (transposed, or
            the native blocks with ``b_normal_layout_to_native_layout``).  With
            ``layout="native"``, ``b`` is already in the NPU's layout (as a previous
            conversion returned it) and is copied as is.

        >>> mm.set_b(np.ones((64, 32), np.float16))          # doctest: +SKIP
        """
        where = "rknnx.Matmul.set_b"
        ctx = self._live("set_b")
        _, K, N = self.shape
        kb = KINDS[self.type][1]
        # everything is checked before a view of B is taken: a view held by the frame of
        # a raised exception would keep close() from freeing the buffer
        mem = self._mems["B"]
        shape, dtype = tuple(mem.shape), np.dtype(mem.dtype)
        nbytes = int(np.prod(shape)) * dtype.itemsize
        if layout == "native":
            if self.b_layout != "native":
                raise ValueError(f"{where}: layout='native' needs a Matmul made with "
                                 f"b_layout='native' (this one is {self.b_layout!r})")
            arr = np.asarray(b)
            if arr.nbytes != nbytes or (kb != "int4" and arr.dtype != dtype):
                raise ValueError(f"{where}: a native B here is {nbytes} bytes of {dtype} "
                                 f"(shape {shape}), got {arr.nbytes} bytes of {arr.dtype}")
            arr = arr.reshape(shape) if kb != "int4" else arr.view(np.uint8).reshape(shape)
        elif layout == "normal":
            arr = self._operand(b, "b", kb, (K, N), where)
            if self.b_layout == "transposed":
                arr = np.ascontiguousarray(arr.T)
            if kb == "int4":
                arr = _ll.pack_int4(arr)
            if self.b_layout == "native":
                arr = _ll.b_normal_layout_to_native_layout(np.ascontiguousarray(arr), K, N, ctx)
            arr = arr.reshape(shape)
        else:
            raise ValueError(f"{where}: layout must be 'normal' or 'native', got {layout!r}")
        self._view("B")[...] = arr

    def set_shape(self, M: int, K: int, N: int) -> None:
        """Switch a dynamic-shape Matmul to (M, K, N), one of its ``shapes``.

        The buffers stay; ``A``, ``B`` and ``C`` are re-made in the new shape (views taken
        before keep the old shape: take them again).  B keeps its bytes: write it again
        when K or N changed.

        >>> mm.set_shape(8, 64, 32)                          # doctest: +SKIP
        """
        where = "rknnx.Matmul.set_shape"
        ctx = self._live("set_shape")
        shape = tuple(_pos_int(v, n, where) for v, n in ((M, "M"), (K, "K"), (N, "N")))
        if shape not in self.shapes:
            raise ValueError(f"{where}: {shape} is not one of this Matmul's shapes "
                             f"{list(self.shapes)}")
        if shape == self.shape:
            return
        ctx.set_dynamic_shape(shape)
        self._views.clear()
        for x in "ABC":
            ctx.set_io_mem(self._mems[x], x)

    def run(self) -> None:
        """Compute C = A @ B on the NPU (A and B as last written; C is overwritten)."""
        self._live("run").run()

    def __call__(self, a: Any, b: Any = None) -> np.ndarray:
        """Copy `a` (and `b` if given) in, run, and return a copy of C.

        `a` may be 1-D (M = 1: the result is 1-D too, as with numpy).  A dynamic-shape
        Matmul switches to the shape whose (M, K, N) matches.

        >>> c = mm(np.ones((4, 64), np.float16))             # doctest: +SKIP
        """
        where = "rknnx.Matmul"
        self._live("__call__")
        arr = np.asarray(a)
        if arr.ndim not in (1, 2):
            raise ValueError(f"{where}: a must be 1-D (K,) or 2-D (M, K), got shape {arr.shape}")
        one_d = arr.ndim == 1
        if one_d:
            arr = arr[None, :]
        _, K, N = self.shape
        if b is not None:
            bs = np.shape(b)
            if len(bs) == 2:
                K, N = bs
        want = (arr.shape[0], arr.shape[1], N)
        if want != self.shape and len(self.shapes) > 1 and want in self.shapes:
            self.set_shape(*want)
        if b is not None:
            self.set_b(b)
        self.set_a(arr)
        self.run()
        c = self.C.copy()
        return c[0] if one_d else c

    # ---- lifetime -----------------------------------------------------------------------
    def close(self) -> None:
        """Free the NPU buffers and the context; a second call does nothing.

        Raises ``BufferError`` (and frees nothing) while a numpy view of A, B or C taken
        from this Matmul is alive: delete those arrays first.
        """
        if self._ctx is None or self._ctx.closed:
            return
        self._views.clear()
        # views dropped by another thread than their maker's are freed late on a
        # free-threaded CPython (rknnx._guard.settle_views says why)
        _guard.settle_views(lambda: sum(m.exports for m in self._mems.values()))
        busy = [x for x, m in self._mems.items() if m.exports]
        if busy:
            raise BufferError(f"rknnx.Matmul.close: numpy views of {', '.join(busy)} are still "
                              "alive (they point into NPU memory); delete them first")
        self._abandon()

    def __enter__(self) -> "Matmul":
        self._live("__enter__")
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is None:
            self.close()
            return
        try:
            self.close()
        except BufferError:
            pass        # keep the exception in flight; the buffers go with the last view


def matmul(a: Any, b: Any, *, out_dtype: Any = None, a_dtype: Any = None, b_dtype: Any = None,
           quant: Optional[Mapping[str, Any]] = None, group_size: int = 0,
           core_mask: Any = None) -> np.ndarray:
    """``a @ b`` on the NPU, for one product (use :class:`Matmul` for repeated ones).

    Parameters
    ----------
    a : array (M, K) or (K,)
        float16, int8, or integers in -8..7 with ``a_dtype="int4"``.
    b : array (K, N)
        float16, int8, or integers in -8..7 with ``b_dtype="int4"``.
    out_dtype : dtype or ``"bfloat16"``, optional
        The result's dtype, among those the pair supports (module table); default:
        float32 for float16 inputs, int32 for int8 x int8 and int8 x int4, int16 for
        int4 x int4.
    quant : mapping, optional
        Quantization parameters ``{"A": q, "B": q, "C": q}``, q a scale or (scale, zp);
        B per layer (1), per channel (N) or per group (N*K/group_size, with
        ``group_size``).
    core_mask : CoreMask, optional
        The cores to use (RK3588/RK3576).

    Returns
    -------
    numpy.ndarray
        C, (M, N) (or (N,) for a 1-D ``a``), a new array.

    Raises
    ------
    TypeError
        For an unsupported dtype pair (the message lists the supported ones).
    ValueError
        For shapes that do not chain ((M, K) x (K, N)), int4 values outside -8..7, or
        quantization parameters that do not fit.
    rknnx.NotSupportedError
        On a chip without the matmul API (RV1106/RV1103, RK2118).

    Examples
    --------
    >>> import numpy as np, rknnx
    >>> a = np.arange(6, dtype=np.int8).reshape(2, 3)
    >>> rknnx.matmul(a, np.eye(3, dtype=np.int8))
    array([[0, 1, 2],
           [3, 4, 5]], dtype=int32)
    >>> rknnx.matmul(np.ones(3, np.float16), np.full((3, 2), 0.5, np.float16))
    array([1.5, 1.5], dtype=float32)
    """
    where = "rknnx.matmul"
    a = np.asarray(a)
    b = np.asarray(b)
    ka = _operand_kind(a, a_dtype, "a", where)
    kb = _operand_kind(b, b_dtype, "b", where)
    t = resolve_type(ka, kb, out_dtype, where)
    if a.ndim not in (1, 2):
        raise ValueError(f"{where}: a must be (M, K) or (K,), got shape {a.shape}")
    if b.ndim != 2:
        raise ValueError(f"{where}: b must be (K, N), got shape {b.shape}")
    a2 = a[None, :] if a.ndim == 1 else a
    M, K = a2.shape
    if b.shape[0] != K:
        raise ValueError(f"{where}: shapes {a.shape} and {b.shape} do not chain: b must be "
                         f"(K, N) with K = {K}, the last dimension of a")
    N = b.shape[1]
    if 0 in (M, K, N):
        raise ValueError(f"{where}: empty operands (M, K, N) = ({M}, {K}, {N}); each must "
                         "be >= 1")
    if ka == "int4":
        a2 = _int4_values(a2, "a", where)
    if kb == "int4":
        b = _int4_values(b, "b", where)
    refuse_if_unsupported(where, "rknn_matmul_create")
    with Matmul(M, K, N, t, b=b, quant=quant, group_size=group_size,
                core_mask=core_mask) as mm:
        mm.set_a(a2)
        mm.run()
        c = mm.C.copy()
    return c[0] if a.ndim == 1 else c


def __dir__():
    # tab completion shows the public names, not the imports
    return sorted(__all__)
