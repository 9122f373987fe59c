"""Write (and read back) model files for the rknnx emulator.

The byte format is specified in ``emulator/FORMAT.md``; this module is its Python
implementation: :class:`ModelBuilder` describes a model op by op and :func:`encode`
turns the description (a :class:`ModelDesc`) into bytes, :func:`decode` parses bytes back
into a description (used by :mod:`rknnx.emulator.reference`, which is independent of the C
parser).  Only numpy is needed.

Examples
--------
>>> import numpy as np
>>> from rknnx.emulator.builder import ModelBuilder
>>> b = ModelBuilder(target="RK3588", custom_string="demo")
>>> x = b.input("x", (1, 8), dtype="float32")
>>> y = b.relu(b.add(x, np.ones((1, 8), np.float32)))
>>> b.output(y)
>>> data = b.build()
>>> data[:8]
b'RKNXEMDL'
"""

from __future__ import annotations

import dataclasses
import struct
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

__all__ = [
    "MAGIC", "FORMAT_VERSION", "DTYPES", "FORMATS", "OP_CODES",
    "TensorDesc", "OpDesc", "ModelDesc", "ModelBuilder",
    "encode", "decode", "infer_shapes", "FormatError",
]

MAGIC = b"RKNXEMDL"
FORMAT_VERSION = (1, 0)

#: dtype name -> (rknn_tensor_type value, numpy dtype)
DTYPES: Dict[str, Tuple[int, np.dtype]] = {
    "float32": (0, np.dtype("<f4")),
    "float16": (1, np.dtype("<f2")),
    "int8": (2, np.dtype("i1")),
    "uint8": (3, np.dtype("u1")),
    "int16": (4, np.dtype("<i2")),
    "uint16": (5, np.dtype("<u2")),
    "int32": (6, np.dtype("<i4")),
    "uint32": (7, np.dtype("<u4")),
    "int64": (8, np.dtype("<i8")),
    "bool": (9, np.dtype("u1")),
}
_DTYPE_BY_CODE = {code: name for name, (code, _) in DTYPES.items()}

#: layout name -> rknn_tensor_format value (NC1HWC2 is a runtime layout, not a model one)
FORMATS = {"NCHW": 0, "NHWC": 1, "UNDEFINED": 3}
_FMT_BY_CODE = {v: k for k, v in FORMATS.items()}

QNT_NONE, QNT_DFP, QNT_AFFINE = 0, 1, 2

OP_CODES = {
    "conv2d": 1, "dense": 2, "add": 3, "mul": 4, "relu": 5, "sigmoid": 6,
    "reshape": 7, "transpose": 8, "quantize": 9, "dequantize": 10, "cast": 11,
}
OP_CUSTOM = 100
_OP_BY_CODE = {v: k for k, v in OP_CODES.items()}

SEC_META, SEC_TENSORS, SEC_IO, SEC_OPS, SEC_WEIGHTS, SEC_SHAPES = 1, 2, 3, 4, 5, 6
_HEADER = struct.Struct("<8sHHIQII")         # 32 bytes
_SECTION = struct.Struct("<IIQQ")            # 24 bytes
_WEIGHT_ALIGN = 16


class FormatError(ValueError):
    """Raised by :func:`decode` for bytes that are not a valid model file."""


def np_dtype(name: str) -> np.dtype:
    """The numpy dtype stored for emulator dtype ``name``."""
    return DTYPES[name][1]


@dataclasses.dataclass
class TensorDesc:
    """One tensor of the graph.

    Attributes
    ----------
    name : str
        Unique name (1-255 bytes).
    dtype : str
        A key of :data:`DTYPES`.
    dims : tuple of int
        Declared dims, in the order of ``fmt`` (shape set 0 for dynamic models).
    fmt : str
        ``"NCHW"``, ``"NHWC"`` (4-D only) or ``"UNDEFINED"``.
    qnt : str
        ``"none"``, ``"affine"`` or ``"dfp"``.
    zp, scale : tuple
        Affine parameters: one pair (per tensor) or ``dims[qaxis]`` pairs (per channel).
    qaxis : int
        Axis of per-channel parameters.
    fl : int
        DFP fractional length.
    mean, std : tuple of float
        Inputs only: per-channel normalization the runtime applies, ``(x - mean) / std``.
    data : numpy.ndarray or None
        Constants: the value (stored in the weight blob); None for activations.
    """

    name: str
    dtype: str
    dims: Tuple[int, ...]
    fmt: str = "UNDEFINED"
    qnt: str = "none"
    zp: Tuple[int, ...] = ()
    scale: Tuple[float, ...] = ()
    qaxis: int = 0
    fl: int = 0
    mean: Tuple[float, ...] = ()
    std: Tuple[float, ...] = ()
    data: Optional[np.ndarray] = None

    @property
    def is_constant(self) -> bool:
        return self.data is not None


@dataclasses.dataclass
class OpDesc:
    """One op: ``type`` is a builtin name (:data:`OP_CODES`) or, with ``custom=True``,
    the custom op type string; ``attrs`` maps names to 1-D numpy arrays."""

    type: str
    inputs: List[str]
    outputs: List[str]
    attrs: Dict[str, np.ndarray] = dataclasses.field(default_factory=dict)
    name: str = ""
    custom: bool = False


@dataclasses.dataclass
class ModelDesc:
    """A whole model: what :func:`encode` writes and :func:`decode` returns."""

    target: str
    custom_string: str
    tensors: Dict[str, TensorDesc]
    inputs: List[str]
    outputs: List[str]
    ops: List[OpDesc]
    shape_sets: Optional[List[List[Tuple[int, ...]]]] = None

    @property
    def n_shape_sets(self) -> int:
        return len(self.shape_sets) if self.shape_sets else 0


# ---- attribute helpers -----------------------------------------------------------------

def _attr_array(value) -> np.ndarray:
    """An attribute value as a flat array: float64 becomes FLOAT32, bool UINT8, uint64
    INT64; other dtypes are kept (Python int lists give INT64)."""
    a = np.asarray(value)
    if a.dtype == np.float64:
        a = a.astype(np.float32)
    elif a.dtype == np.uint64:
        a = a.astype(np.int64)
    elif a.dtype == np.bool_:
        a = a.astype(np.uint8)
    return np.ascontiguousarray(a.reshape(-1))


def _attr_dtype_name(a: np.ndarray) -> str:
    for name, (_, dt) in DTYPES.items():
        if name != "bool" and a.dtype == dt:
            return name
    raise TypeError(f"unsupported attribute dtype {a.dtype}")


def _attr_ints(op: OpDesc, name: str, n: int, default: Sequence[int]) -> List[int]:
    if name not in op.attrs:
        return list(default)
    a = op.attrs[name]
    if a.size != n:
        raise ValueError(f"{op.type} attribute {name!r} needs {n} values")
    return [int(v) for v in a]


def conv_params(op: OpDesc):
    """Decoded conv2d attributes: strides, pads (t, l, b, r), dilations, groups, relu."""
    return (_attr_ints(op, "strides", 2, (1, 1)), _attr_ints(op, "pads", 4, (0, 0, 0, 0)),
            _attr_ints(op, "dilations", 2, (1, 1)), _attr_ints(op, "groups", 1, (1,))[0],
            _attr_ints(op, "relu", 1, (0,))[0])


# ---- shape inference (mirrors emu_exec_infer) ----------------------------------------------

def _nchw(t: TensorDesc, d: Sequence[int]) -> Tuple[int, int, int, int]:
    if t.fmt == "NHWC":
        return d[0], d[3], d[1], d[2]
    return d[0], d[1], d[2], d[3]


def infer_op_dims(model: ModelDesc, op: OpDesc, dims: Dict[str, Tuple[int, ...]]) -> List[Tuple[int, ...]]:
    """Output dims of ``op`` given the dims of its inputs (``dims`` by tensor name)."""
    T = model.tensors
    if op.custom:
        return [tuple(T[o].dims) for o in op.outputs]
    x = op.inputs[0]
    xd = dims[x]
    y = T[op.outputs[0]]
    if op.type == "conv2d":
        w = T[op.inputs[1]]
        strides, pads, dil, groups, _ = conv_params(op)
        n, c, h, wd = _nchw(T[x], xd)
        cout, cin_g, kh, kw = w.dims
        if c != cin_g * groups:
            raise ValueError(f"conv2d {op.name}: input has {c} channels, weight expects {cin_g * groups}")
        oh = (h + pads[0] + pads[2] - (dil[0] * (kh - 1) + 1)) // strides[0] + 1
        ow = (wd + pads[1] + pads[3] - (dil[1] * (kw - 1) + 1)) // strides[1] + 1
        if oh < 1 or ow < 1:
            raise ValueError(f"conv2d {op.name}: empty output")
        return [(n, oh, ow, cout) if y.fmt == "NHWC" else (n, cout, oh, ow)]
    if op.type == "dense":
        w = T[op.inputs[1]]
        if xd[-1] != w.dims[1]:
            raise ValueError(f"dense {op.name}: K mismatch {xd[-1]} vs {w.dims[1]}")
        return [tuple(xd[:-1]) + (w.dims[0],)]
    if op.type in ("add", "mul"):
        return [tuple(np.broadcast_shapes(tuple(xd), tuple(dims[op.inputs[1]])))]
    if op.type == "reshape":
        shape = [int(v) for v in op.attrs["shape"]]
        total = int(np.prod(xd))
        out = [xd[i] if s == 0 else s for i, s in enumerate(shape)]
        if -1 in out:
            known = int(np.prod([v for v in out if v != -1]))
            if known == 0 or total % known:
                raise ValueError(f"reshape {op.name}: cannot infer")
            out[out.index(-1)] = total // known
        if int(np.prod(out)) != total:
            raise ValueError(f"reshape {op.name}: {xd} -> {out}")
        return [tuple(out)]
    if op.type == "transpose":
        return [tuple(xd[int(p)] for p in op.attrs["perm"])]
    return [tuple(xd)]


def infer_shapes(model: ModelDesc, shape_set: int = 0) -> Dict[str, Tuple[int, ...]]:
    """Dims of every tensor for one shape set (0 for static models)."""
    dims = {name: tuple(t.dims) for name, t in model.tensors.items() if t.is_constant}
    for k, name in enumerate(model.inputs):
        dims[name] = (tuple(model.shape_sets[shape_set][k]) if model.shape_sets
                      else tuple(model.tensors[name].dims))
    for op in model.ops:
        for o, d in zip(op.outputs, infer_op_dims(model, op, dims)):
            dims[o] = tuple(int(v) for v in d)
    return dims


# ---- encoding ----------------------------------------------------------------------------------

def _s(text: str) -> bytes:
    b = text.encode("utf-8")
    if len(b) > 0xFFFF:
        raise ValueError("string too long")
    return struct.pack("<H", len(b)) + b


def _pad(buf: bytearray, align: int) -> None:
    buf.extend(b"\0" * (-len(buf) % align))


def encode(model: ModelDesc) -> bytes:
    """Serialize ``model`` to the emulator model format.

    Parameters
    ----------
    model : ModelDesc

    Returns
    -------
    bytes
    """
    names = list(model.tensors)
    index = {n: i for i, n in enumerate(names)}
    weights = bytearray()
    tens = bytearray(struct.pack("<I", len(names)))
    for n in names:
        t = model.tensors[n]
        code, npdt = DTYPES[t.dtype]
        qnt = {"none": QNT_NONE, "dfp": QNT_DFP, "affine": QNT_AFFINE}[t.qnt]
        nq = len(t.scale) if qnt == QNT_AFFINE else 0
        tens += _s(t.name)
        tens += struct.pack("<BBBBBBHbBH", code, FORMATS[t.fmt], qnt, len(t.dims),
                            1 if t.is_constant else 0, len(t.mean), nq, t.fl, t.qaxis, 0)
        tens += struct.pack(f"<{len(t.dims)}I", *t.dims)
        for zp, sc in zip(t.zp[:nq], t.scale[:nq]):
            tens += struct.pack("<if", int(zp), float(sc))
        for mu, sd in zip(t.mean, t.std):
            tens += struct.pack("<ff", float(mu), float(sd))
        if t.is_constant:
            raw = np.ascontiguousarray(np.asarray(t.data, dtype=npdt)).tobytes()
            _pad(weights, _WEIGHT_ALIGN)
            tens += struct.pack("<QQ", len(weights), len(raw))
            weights += raw
    meta = _s(model.target) + _s(model.custom_string)
    io = struct.pack("<I", len(model.inputs)) + b"".join(struct.pack("<I", index[n]) for n in model.inputs)
    io += struct.pack("<I", len(model.outputs)) + b"".join(struct.pack("<I", index[n]) for n in model.outputs)
    ops = bytearray(struct.pack("<I", len(model.ops)))
    for op in model.ops:
        code = OP_CUSTOM if op.custom else OP_CODES[op.type]
        ops += struct.pack("<HBBHH", code, len(op.inputs), len(op.outputs), len(op.attrs), 0)
        ops += _s(op.name) + _s(op.type if op.custom else "")
        ops += b"".join(struct.pack("<I", index[n]) for n in op.inputs + op.outputs)
        for an, av in op.attrs.items():
            av = _attr_array(av)
            ops += _s(an) + struct.pack("<BBBBI", DTYPES[_attr_dtype_name(av)][0], 0, 0, 0, av.size)
            ops += av.astype(av.dtype.newbyteorder("<")).tobytes()
    sections = [(SEC_META, meta), (SEC_TENSORS, bytes(tens)), (SEC_IO, io), (SEC_OPS, bytes(ops)),
                (SEC_WEIGHTS, bytes(weights))]
    if model.shape_sets:
        sh = bytearray(struct.pack("<II", len(model.shape_sets), len(model.inputs)))
        for row in model.shape_sets:
            for d in row:
                sh += struct.pack(f"<{len(d)}I", *d)
        sections.append((SEC_SHAPES, bytes(sh)))
    body = bytearray()
    table = bytearray()
    start = _HEADER.size + _SECTION.size * len(sections)
    start += -start % 8
    for kind, data in sections:
        _pad(body, 8)
        table += _SECTION.pack(kind, 0, start + len(body), len(data))
        body += data
    head = bytearray(_HEADER.pack(MAGIC, FORMAT_VERSION[0], FORMAT_VERSION[1], len(sections), 0, 0, 0))
    head += table
    _pad(head, 8)
    out = head + body
    struct.pack_into("<Q", out, 16, len(out))
    return bytes(out)


# ---- decoding ------------------------------------------------------------------------------------

class _Reader:
    def __init__(self, data: bytes):
        self.data, self.pos = data, 0

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise FormatError("truncated")
        b = self.data[self.pos:self.pos + n]
        self.pos += n
        return b

    def unpack(self, fmt: str):
        s = struct.Struct("<" + fmt)
        return s.unpack(self.take(s.size))

    def str(self) -> str:
        (n,) = self.unpack("H")
        return self.take(n).decode("utf-8")

    def done(self) -> None:
        if self.pos != len(self.data):
            raise FormatError("trailing bytes in section")


def decode(data: bytes) -> ModelDesc:
    """Parse model bytes written by :func:`encode` (or anything else in the format).

    Parameters
    ----------
    data : bytes

    Returns
    -------
    ModelDesc

    Raises
    ------
    FormatError
        If the bytes are not a well-formed model file (the checks are less complete than
        the C parser's; the C parser is the authority).
    """
    data = bytes(data)
    if len(data) < _HEADER.size:
        raise FormatError("short header")
    magic, major, minor, n_sec, fsize, flags, _ = _HEADER.unpack_from(data, 0)
    if magic != MAGIC or (major, minor) != FORMAT_VERSION or fsize > len(data):
        raise FormatError("bad header")
    secs = {}
    for i in range(n_sec):
        kind, _, off, ln = _SECTION.unpack_from(data, _HEADER.size + i * _SECTION.size)
        if off + ln > fsize:
            raise FormatError("section out of range")
        secs[kind] = data[off:off + ln]
    r = _Reader(secs[SEC_META])
    target, custom_string = r.str(), r.str()
    r.done()
    weights = secs.get(SEC_WEIGHTS, b"")
    r = _Reader(secs[SEC_TENSORS])
    (n,) = r.unpack("I")
    tensors: Dict[str, TensorDesc] = {}
    names = []
    for _ in range(n):
        name = r.str()
        code, fmt, qnt, nd, kind, nnorm, nq, fl, qaxis, _ = r.unpack("BBBBBBHbBH")
        dims = r.unpack(f"{nd}I")
        zp, scale = [], []
        for _ in range(nq):
            z, s = r.unpack("if")
            zp.append(z)
            scale.append(s)
        mean, std = [], []
        for _ in range(nnorm):
            mu, sd = r.unpack("ff")
            mean.append(mu)
            std.append(sd)
        dtype = _DTYPE_BY_CODE[code]
        arr = None
        if kind == 1:
            off, ln = r.unpack("QQ")
            if off + ln > len(weights):
                raise FormatError("constant out of range")
            arr = np.frombuffer(weights[off:off + ln], dtype=np_dtype(dtype)).reshape(dims).copy()
        tensors[name] = TensorDesc(name, dtype, tuple(dims), _FMT_BY_CODE[fmt],
                                   {0: "none", 1: "dfp", 2: "affine"}[qnt], tuple(zp), tuple(scale),
                                   qaxis, fl, tuple(mean), tuple(std), arr)
        names.append(name)
    r.done()
    r = _Reader(secs[SEC_IO])
    (ni,) = r.unpack("I")
    inputs = [names[i] for i in r.unpack(f"{ni}I")]
    (no,) = r.unpack("I")
    outputs = [names[i] for i in r.unpack(f"{no}I")]
    r.done()
    r = _Reader(secs[SEC_OPS])
    (nops,) = r.unpack("I")
    ops = []
    for _ in range(nops):
        code, nin, nout, nattr, _ = r.unpack("HBBHH")
        oname, otype = r.str(), r.str()
        ids = r.unpack(f"{nin + nout}I")
        attrs = {}
        for _ in range(nattr):
            an = r.str()
            adt, _, _, _, ne = r.unpack("BBBBI")
            dt = np_dtype(_DTYPE_BY_CODE[adt])
            attrs[an] = np.frombuffer(r.take(ne * dt.itemsize), dtype=dt).copy()
        custom = code == OP_CUSTOM
        ops.append(OpDesc(otype if custom else _OP_BY_CODE[code], [names[i] for i in ids[:nin]],
                          [names[i] for i in ids[nin:]], attrs, oname, custom))
    r.done()
    sets = None
    if SEC_SHAPES in secs:
        r = _Reader(secs[SEC_SHAPES])
        ns, nin = r.unpack("II")
        sets = [[tuple(r.unpack(f"{len(tensors[i].dims)}I")) for i in inputs] for _ in range(ns)]
        r.done()
    return ModelDesc(target, custom_string, tensors, inputs, outputs, ops, sets)


# ---- the builder -------------------------------------------------------------------------------

TensorRef = str
_QUANT = ("int8", "uint8", "int16")
_ZP_RANGE = {"int8": (-128, 127), "uint8": (0, 255), "int16": (-32768, 32767), "uint16": (0, 65535)}


class ModelBuilder:
    """Build an emulator model op by op.

    Every op method takes tensor names (the strings returned by :meth:`input`,
    :meth:`constant` and the op methods) and returns the name of its output.  Output dims
    are inferred.  Quantized (int8/uint8/int16) outputs need ``out_scale``/``out_zp``
    unless documented otherwise.

    Parameters
    ----------
    target : str
        Target chip, e.g. ``"RK3588"``, ``"RK3566"``, ``"RV1106"``.
    custom_string : str
        Returned by ``RKNN_QUERY_CUSTOM_STRING`` (< 1024 bytes).
    """

    def __init__(self, target: str = "RK3588", custom_string: str = ""):
        if len(custom_string.encode()) >= 1024:
            raise ValueError("custom_string must be < 1024 bytes")
        self.model = ModelDesc(target, custom_string, {}, [], [], [], None)
        self._dims: Dict[str, Tuple[int, ...]] = {}
        self._count = 0

    # -- tensors --
    def _name(self, prefix: str) -> str:
        while True:
            self._count += 1
            n = f"{prefix}_{self._count}"
            if n not in self.model.tensors:
                return n

    def _add(self, t: TensorDesc) -> str:
        if t.name in self.model.tensors:
            raise ValueError(f"duplicate tensor name {t.name!r}")
        if t.fmt != "UNDEFINED" and len(t.dims) != 4:
            raise ValueError(f"{t.name}: fmt {t.fmt} needs 4 dims")
        self.model.tensors[t.name] = t
        self._dims[t.name] = tuple(t.dims)
        return t.name

    @staticmethod
    def _qnt(dtype: str, zp, scale, axis: int = 0):
        if scale is None:
            return "none", (), ()
        sc = tuple(float(s) for s in np.atleast_1d(np.asarray(scale, dtype=np.float32)))
        z = np.atleast_1d(np.asarray(0 if zp is None else zp, dtype=np.int64))
        if z.size == 1 and len(sc) > 1:
            z = np.repeat(z, len(sc))
        if dtype in _ZP_RANGE and (z.min() < _ZP_RANGE[dtype][0] or z.max() > _ZP_RANGE[dtype][1]):
            raise ValueError(f"zero point {z.tolist()} outside the range of {dtype}")
        if not all(np.isfinite(v) and v > 0 for v in sc):
            raise ValueError("quantization scales must be finite and > 0")
        return "affine", tuple(int(v) for v in z), sc

    def input(self, name: str, shape: Sequence[int], dtype: str = "int8", fmt: Optional[str] = None,
              zp: Optional[int] = None, scale: Optional[float] = None,
              mean: Optional[Sequence[float]] = None, std: Optional[Sequence[float]] = None) -> TensorRef:
        """Declare a model input (in the order of calls).

        Parameters
        ----------
        name : str
        shape : sequence of int
            Dims in the order of ``fmt`` (e.g. ``(1, 224, 224, 3)`` for NHWC).
        dtype : str
            Model input type (what the executor receives), e.g. ``"int8"``, ``"float16"``.
        fmt : str, optional
            ``"NHWC"``/``"NCHW"`` for 4-D inputs (default NHWC), else ``"UNDEFINED"``.
        zp, scale : optional
            Affine quantization of quantized inputs.
        mean, std : sequence of float, optional
            Per-channel normalization the runtime applies before quantizing.
        """
        if fmt is None:
            fmt = "NHWC" if len(shape) == 4 else "UNDEFINED"
        qnt, z, s = self._qnt(dtype, zp, scale)
        mean = tuple(float(v) for v in (mean or ()))
        std = tuple(float(v) for v in (std or ([1.0] * len(mean) if mean else ())))
        if len(mean) != len(std) or len(mean) > 15:
            raise ValueError("mean and std need the same length (<= 15)")
        n = self._add(TensorDesc(name, dtype, tuple(int(d) for d in shape), fmt, qnt, z, s,
                                 mean=mean, std=std))
        self.model.inputs.append(n)
        return n

    def constant(self, value, dtype: Optional[str] = None, zp=None, scale=None, axis: int = 0,
                 name: Optional[str] = None, fmt: str = "UNDEFINED") -> TensorRef:
        """Add a constant (stored in the weight blob).

        Parameters
        ----------
        value : array_like
        dtype : str, optional
            Defaults to the array's dtype.
        zp, scale : scalar or sequence, optional
            Affine quantization; a sequence gives per-channel parameters along ``axis``.
        """
        arr = np.asarray(value)
        if dtype is None:
            if arr.dtype == np.float64:
                dtype = "float32"
            else:
                dtype = next((k for k, (_, dt) in DTYPES.items() if k != "bool" and
                              (arr.dtype.kind, arr.dtype.itemsize) == (dt.kind, dt.itemsize)), None)
            if dtype is None:
                raise TypeError(f"unsupported constant dtype {arr.dtype}")
        arr = arr.astype(np_dtype(dtype))
        if arr.ndim == 0:
            arr = arr.reshape(1)
        qnt, z, s = self._qnt(dtype, zp, scale, axis)
        return self._add(TensorDesc(name or self._name("const"), dtype, arr.shape, fmt, qnt, z, s,
                                    qaxis=axis, data=arr))

    def _act(self, name: Optional[str], prefix: str, dtype: str, fmt: str = "UNDEFINED",
             zp=None, scale=None) -> str:
        qnt, z, s = self._qnt(dtype, zp, scale)
        if dtype in _QUANT and qnt == "none" and prefix not in ("cast", "custom", "reshape", "transpose"):
            raise ValueError(f"{prefix}: a {dtype} output needs out_scale (and out_zp)")
        # dims are filled in by _op
        return self._add(TensorDesc(name or self._name(prefix), dtype, (1,) * (4 if fmt != "UNDEFINED" else 1),
                                    fmt, qnt, z, s))

    def _op(self, type_: str, inputs: List[str], outputs: List[str], attrs=None, name=None,
            custom=False) -> None:
        for i in inputs:
            if i not in self.model.tensors:
                raise KeyError(f"unknown tensor {i!r}")
        op = OpDesc(type_, list(inputs), list(outputs),
                    {k: _attr_array(v) for k, v in (attrs or {}).items()},
                    name or f"{type_}_{len(self.model.ops)}", custom)
        if not custom:
            for o, d in zip(outputs, infer_op_dims(self.model, op, self._dims)):
                t = self.model.tensors[o]
                if t.fmt != "UNDEFINED" and len(d) != 4:
                    t.fmt = "UNDEFINED"
                t.dims = tuple(int(v) for v in d)
                self._dims[o] = t.dims
        self.model.ops.append(op)

    def _t(self, ref: str) -> TensorDesc:
        return self.model.tensors[ref]

    def _const_like(self, value, like: TensorDesc) -> str:
        if isinstance(value, str):
            return value
        if like.dtype in _QUANT:
            raise TypeError("pass quantized constants through constant(..., zp=, scale=)")
        return self.constant(np.asarray(value), dtype=like.dtype)

    # -- ops --
    def conv2d(self, x: TensorRef, weight, bias=None, *, stride=1, pad=0, dilation=1, groups: int = 1,
               relu: bool = False, weight_scale=None, weight_zp=0, out_scale=None, out_zp: int = 0,
               fmt: str = "NCHW", name: Optional[str] = None, out: Optional[str] = None) -> TensorRef:
        """2-D convolution, weight OIHW ``[Cout, Cin/groups, KH, KW]``.

        Parameters
        ----------
        x : str
            4-D input, NHWC or NCHW (its ``fmt``); int8 (affine), float16 or float32.
        weight : array_like or str
            int8 values with ``weight_scale`` (scalar or per output channel) for an int8
            input, else floats (stored in the input's float type).
        bias : array_like or str, optional
            int32 at scale ``x_scale * weight_scale[c]`` for int8, float otherwise.
        stride, dilation : int or (int, int)
        pad : int, (ph, pw) or (top, left, bottom, right)
        relu : bool
            Fused relu.
        out_scale, out_zp :
            Output quantization (int8 input only).
        fmt : str
            Output layout, ``"NCHW"`` or ``"NHWC"``.
        """
        xt = self._t(x)
        q = xt.dtype == "int8"
        w, b = self._weight_and_bias(xt, weight, bias, weight_scale, weight_zp)
        s = (stride, stride) if np.isscalar(stride) else tuple(stride)
        d = (dilation, dilation) if np.isscalar(dilation) else tuple(dilation)
        p = tuple(np.atleast_1d(pad).tolist())
        p = p * 4 if len(p) == 1 else (p[0], p[1], p[0], p[1]) if len(p) == 2 else p
        y = self._act(out, "conv", xt.dtype, fmt, out_zp if q else None, out_scale if q else None)
        attrs = {"strides": np.array(s, np.int32), "pads": np.array(p, np.int32),
                 "dilations": np.array(d, np.int32), "groups": np.array([groups], np.int32),
                 "relu": np.array([int(relu)], np.int32)}
        self._op("conv2d", [x, w] + ([b] if b else []), [y], attrs, name)
        return y

    def _weight_and_bias(self, xt, weight, bias, weight_scale, weight_zp):
        """The weight and bias tensors of conv2d/dense: names as given, or constants made
        from arrays (int8 weights with their scale/zp and int32 bias for an int8 input;
        the input's float type otherwise, float32 bias kept as float32)."""
        q = xt.dtype == "int8"
        if isinstance(weight, str):
            w = weight
        elif q:
            w = self.constant(np.asarray(weight), "int8", zp=weight_zp,
                              scale=weight_scale if weight_scale is not None else 1.0)
        else:
            w = self.constant(np.asarray(weight), xt.dtype)
        b = None
        if bias is not None and isinstance(bias, str):
            b = bias
        elif bias is not None:
            arr = np.asarray(bias)
            b = self.constant(arr, "int32" if q else
                              ("float32" if arr.dtype == np.float32 else xt.dtype))
        return w, b

    def dense(self, x: TensorRef, weight, bias=None, *, relu: bool = False, weight_scale=None,
              weight_zp=0, out_scale=None, out_zp: int = 0, name: Optional[str] = None,
              out: Optional[str] = None) -> TensorRef:
        """Fully connected / matmul: ``y[..., n] = sum_k x[..., k] * weight[n, k] + bias[n]``.

        Parameters are as for :meth:`conv2d` (weight is ``[N, K]``).
        """
        xt = self._t(x)
        q = xt.dtype == "int8"
        w, b = self._weight_and_bias(xt, weight, bias, weight_scale, weight_zp)
        y = self._act(out, "dense", xt.dtype, "UNDEFINED", out_zp if q else None, out_scale if q else None)
        self._op("dense", [x, w] + ([b] if b else []), [y], {"relu": np.array([int(relu)], np.int32)}, name)
        return y

    def _binary(self, kind, a, b, out_scale, out_zp, out_dtype, name, out, fmt):
        at = self._t(a)
        b = self._const_like(b, at)
        dt = out_dtype or at.dtype
        y = self._act(out, kind, dt, fmt or at.fmt, out_zp, out_scale)
        self._op(kind, [a, b], [y], None, name)
        return y

    def add(self, a: TensorRef, b, *, out_scale=None, out_zp: int = 0, out_dtype: Optional[str] = None,
            fmt: Optional[str] = None, name: Optional[str] = None, out: Optional[str] = None) -> TensorRef:
        """Elementwise ``a + b`` with numpy broadcasting (on the stored dims).

        ``b`` may be an array (made a constant of ``a``'s float type).  Quantized inputs
        (each with its own zp/scale) need ``out_scale``/``out_zp``.
        """
        return self._binary("add", a, b, out_scale, out_zp, out_dtype, name, out, fmt)

    def mul(self, a: TensorRef, b, *, out_scale=None, out_zp: int = 0, out_dtype: Optional[str] = None,
            fmt: Optional[str] = None, name: Optional[str] = None, out: Optional[str] = None) -> TensorRef:
        """Elementwise ``a * b`` with numpy broadcasting; as :meth:`add`."""
        return self._binary("mul", a, b, out_scale, out_zp, out_dtype, name, out, fmt)

    def _unary(self, kind, x, out_scale, out_zp, name, out):
        xt = self._t(x)
        y = self._act(out, kind, xt.dtype, xt.fmt, out_zp, out_scale)
        self._op(kind, [x], [y], None, name)
        return y

    def relu(self, x: TensorRef, *, out_scale=None, out_zp=None, name=None, out=None) -> TensorRef:
        """``max(x, 0)``; a quantized output defaults to the input's zp/scale."""
        xt = self._t(x)
        if xt.qnt == "affine" and out_scale is None:
            out_scale, out_zp = xt.scale[0], xt.zp[0]
        return self._unary("relu", x, out_scale, out_zp, name, out)

    def sigmoid(self, x: TensorRef, *, out_scale=None, out_zp=None, name=None, out=None) -> TensorRef:
        """``1 / (1 + exp(-x))``; an int8 output defaults to scale 1/256, zp -128."""
        xt = self._t(x)
        if xt.qnt == "affine" and out_scale is None:
            out_scale, out_zp = 1.0 / 256.0, (-128 if xt.dtype == "int8" else 0)
        return self._unary("sigmoid", x, out_scale, out_zp, name, out)

    def reshape(self, x: TensorRef, shape: Sequence[int], *, fmt: str = "UNDEFINED", name=None, out=None) -> TensorRef:
        """Reshape (``0`` copies the input dim, one ``-1`` is inferred); a byte copy."""
        xt = self._t(x)
        y = self._act(out, "reshape", xt.dtype, fmt, xt.zp[0] if xt.zp else None,
                      xt.scale[0] if xt.scale else None)
        self._op("reshape", [x], [y], {"shape": np.array(shape, np.int32)}, name)
        return y

    def transpose(self, x: TensorRef, perm: Sequence[int], *, fmt: str = "UNDEFINED", name=None, out=None) -> TensorRef:
        """Permute dims: ``y.dims[i] = x.dims[perm[i]]`` (``fmt`` labels the result)."""
        xt = self._t(x)
        y = self._act(out, "transpose", xt.dtype, fmt, xt.zp[0] if xt.zp else None,
                      xt.scale[0] if xt.scale else None)
        self._op("transpose", [x], [y], {"perm": np.array(perm, np.int32)}, name)
        return y

    def quantize(self, x: TensorRef, *, scale: float, zp: int = 0, dtype: str = "int8",
                 name=None, out=None) -> TensorRef:
        """Float (or quantized, i.e. requantize) to affine ``dtype``."""
        xt = self._t(x)
        y = self._act(out, "quantize", dtype, xt.fmt, zp, scale)
        self._op("quantize", [x], [y], None, name)
        return y

    def dequantize(self, x: TensorRef, *, dtype: str = "float32", name=None, out=None) -> TensorRef:
        """Affine-quantized to float32/float16: ``(q - zp) * scale``."""
        xt = self._t(x)
        y = self._act(out, "dequantize", dtype, xt.fmt)
        self._op("dequantize", [x], [y], None, name)
        return y

    def cast(self, x: TensorRef, dtype: str, *, name=None, out=None) -> TensorRef:
        """Value conversion without quantization (float rounding, ints round half even and
        saturate)."""
        xt = self._t(x)
        y = self._act(out, "cast", dtype, xt.fmt)
        self._op("cast", [x], [y], None, name)
        return y

    def custom(self, op_type: str, inputs: Sequence[TensorRef], outputs: Sequence[dict],
               attrs: Optional[dict] = None, *, name=None) -> List[TensorRef]:
        """A custom op, computed by the callback the runtime registers for ``op_type``.

        Parameters
        ----------
        op_type : str
            e.g. ``"cstSigmoid"``.
        inputs : sequence of str
        outputs : sequence of dict
            One dict per output: ``shape``, ``dtype`` and optionally ``fmt``, ``zp``,
            ``scale``, ``name`` (custom outputs keep these dims in every shape set).
        attrs : dict, optional
            Name -> array_like; readable by the callback (``rknn_custom_op_get_op_attr``).

        Returns
        -------
        list of str
        """
        outs = []
        for o in outputs:
            qnt, z, s = self._qnt(o["dtype"], o.get("zp"), o.get("scale"))
            shape = tuple(int(v) for v in o["shape"])
            outs.append(self._add(TensorDesc(o.get("name") or self._name("custom"), o["dtype"], shape,
                                             o.get("fmt", "UNDEFINED"), qnt, z, s)))
        self._op(op_type, list(inputs), outs, attrs, name, custom=True)
        return outs

    # -- model level --
    def output(self, *refs: TensorRef) -> None:
        """Mark tensors as model outputs (in call order)."""
        for r in refs:
            if r not in self.model.tensors:
                raise KeyError(r)
            self.model.outputs.append(r)

    def shape_sets(self, sets: Sequence[Sequence[Sequence[int]]]) -> None:
        """Make the model dynamic: ``sets[s][i]`` is the dims of input ``i`` in set ``s``.

        Set 0 must equal the declared input dims.
        """
        sets = [[tuple(int(v) for v in d) for d in row] for row in sets]
        for row in sets:
            if len(row) != len(self.model.inputs):
                raise ValueError("each shape set needs dims for every input")
        if sets and [tuple(self.model.tensors[n].dims) for n in self.model.inputs] != sets[0]:
            raise ValueError("shape set 0 must equal the declared input dims")
        self.model.shape_sets = sets
        for s in range(len(sets)):
            infer_shapes(self.model, s)          # raises on an inconsistent set

    def build(self) -> bytes:
        """The model file bytes."""
        if not self.model.outputs:
            raise ValueError("no outputs")
        return encode(self.model)

    def save(self, path) -> None:
        """Write :meth:`build` to ``path``."""
        with open(path, "wb") as f:
            f.write(self.build())


def __dir__():
    # tab completion shows the public names, not the imports
    return sorted(__all__)
