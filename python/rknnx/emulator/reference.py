"""numpy reference implementation of the emulator's ops and graphs.

Independent of the C executor (``emulator/exec.c``) but bound to the same written rules
(``emulator/FORMAT.md``, "Op semantics"), so that integer results are *equal* and float
results agree to rounding:

- int8 conv2d/dense: ``acc = sum((x - x_zp) * (w - w_zp[c]))`` exactly (int64 here, int32
  in C with K <= 32768 so it never overflows), ``+ bias[c]``; then in float64
  ``q = clip(rint(acc * M[c]) + y_zp)`` with ``M[c] = (x_scale * w_scale[c]) / y_scale``
  and ``rint`` = round half to even; fused relu is ``max(q, y_zp)``.
- quantized add: ``rint(((qa-za)*sa + (qb-zb)*sb) / sy) + zy``; mul:
  ``rint((qa-za)*(qb-zb) * ((sa*sb)/sy)) + zy``, float64, saturating.
- 8-bit relu/sigmoid: per input code, in float64, from the dequantized value.
- quantize: ``clip(rint(x / scale) + zp)`` in float32; dequantize ``(q - zp) * scale`` in
  float32 (``emulator/numeric.h``).
- float16 ops compute in float32 and round once to float16.

Examples
--------
>>> from rknnx.emulator import samples, reference
>>> model = samples.tiny_relu()
>>> import numpy as np
>>> reference.run_reference(model, [np.array([[-1.0, 2.0]], np.float32)])[0].tolist()
[[0.0, 2.0]]
"""

from __future__ import annotations

from typing import Callable, Dict, List, Mapping, Optional, Sequence, Union

import numpy as np

from .builder import ModelBuilder, ModelDesc, OpDesc, TensorDesc, conv_params, decode, infer_shapes, np_dtype

__all__ = ["run_reference", "run_op", "quantize", "dequantize", "as_model"]

_RANGES = {"int8": (-128, 127), "uint8": (0, 255), "int16": (-32768, 32767), "uint16": (0, 65535),
           "int32": (-2**31, 2**31 - 1), "uint32": (0, 2**32 - 1), "bool": (0, 1)}


def as_model(model: Union[bytes, bytearray, memoryview, ModelDesc, ModelBuilder]) -> ModelDesc:
    """A :class:`ModelDesc` from model bytes, a description or a builder."""
    if isinstance(model, ModelDesc):
        return model
    if isinstance(model, ModelBuilder):
        return model.model
    return decode(bytes(model))


# ---- scalar rules, vectorized -------------------------------------------------------------------

def quantize(x: np.ndarray, scale: float, zp: int, dtype: str) -> np.ndarray:
    """float32 ``clip(rint(x / scale) + zp)``, NaN -> zp (``emu_quantize``)."""
    x = np.asarray(x, dtype=np.float32)
    lo, hi = _RANGES[dtype]
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        q = np.rint(x / np.float32(scale))
        q = np.where(np.isnan(q), np.float32(0), q)
        q = np.clip(q + np.float32(zp), np.float32(lo), np.float32(hi))
    return q.astype(np_dtype(dtype))


def quantize_cpu(x: np.ndarray, scale: float, zp: int, dtype: str) -> np.ndarray:
    """The vendor runtime's CPU quantization of a non-image input (``emu_quantize_input``):
    ``rint(x / scale + zp)`` in float32, ties to even after the zero point is added, wrapped
    (not saturated) to ``dtype``; NaN -> zp."""
    x = np.asarray(x, dtype=np.float32)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        v = (x / np.float32(scale)).astype(np.float32) + np.float32(zp)
        v = np.where(np.isnan(v), np.float32(zp), np.clip(v, -9.0e18, 9.0e18))
    q = np.rint(v.astype(np.float64)).astype(np.int64)
    return q.astype(np_dtype(dtype))


def dequantize(q: np.ndarray, scale: float, zp: int) -> np.ndarray:
    """float32 ``(q - zp) * scale`` (``emu_dequantize``)."""
    return (np.asarray(q).astype(np.int64) - zp).astype(np.float32) * np.float32(scale)


def dequantize_output(q: np.ndarray, scale: float, zp: int, c2: int = 0) -> np.ndarray:
    """float32 of a 1-byte output as ``rknn_outputs_get(want_float=1)`` makes it.

    The vendor runtime dequantizes some elements with its vector formula ``q * scale -
    zp * scale`` (both products rounded to float32) and the others with ``(q - zp) * scale``
    (docs/abi-notes.md, "NPU-side bytes"; librknnrt 1.5.2 and 1.6.0): with ``c2 >= 16``
    (RK3588) the channels of the whole C2 blocks at the pixels (``h * W + w`` order) of the
    whole groups of 4 take the vector one; with ``c2 == 8`` (RK3566) every channel but the
    last of a C % 8 == 1 output, at the pixels of the whole groups of 8.  ``q`` is NCHW for
    4-D outputs; other shapes, and ``c2 == 0``, take the scalar formula everywhere.
    """
    q = np.asarray(q)
    scalar = dequantize(q, scale, zp)
    if q.ndim != 4 or not c2:
        return scalar
    s = np.float32(scale)
    vec = (q.astype(np.float32) * s - np.float32(np.float32(zp) * s)).astype(np.float32)
    n, c, h, w = q.shape
    if c2 >= 16:
        chans, group = c // c2 * c2, 4
    elif c2 == 8:
        chans, group = (c - 1 if c % 8 == 1 else c), 8
    else:
        return scalar
    mask = (np.arange(c) < chans)[None, :, None, None] & \
        (np.arange(h * w) < h * w // group * group).reshape(1, 1, h, w)
    return np.where(mask, vec, scalar).astype(np.float32)


def _requant(v: np.ndarray, zp: int, dtype: str) -> np.ndarray:
    """float64 ``v`` (already divided by the output scale) -> clip(rint(v) + zp)."""
    lo, hi = _RANGES[dtype]
    with np.errstate(invalid="ignore"):
        q = np.rint(v) + float(zp)
        q = np.where(np.isnan(q), float(zp), q)
        q = np.clip(q, lo, hi)
    return q.astype(np_dtype(dtype))


def _f32(t: TensorDesc, a: np.ndarray) -> np.ndarray:
    return np.asarray(a).astype(np.float32)


def _store_float(t: TensorDesc, v: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore", invalid="ignore"):
        return np.asarray(v, dtype=np.float32).astype(np_dtype(t.dtype))


def _to_nchw(t: TensorDesc, a: np.ndarray) -> np.ndarray:
    return a.transpose(0, 3, 1, 2) if t.fmt == "NHWC" else a


def _from_nchw(t: TensorDesc, a: np.ndarray) -> np.ndarray:
    return a.transpose(0, 2, 3, 1) if t.fmt == "NHWC" else a


def _per_channel(t: TensorDesc, n: int):
    zp = np.asarray(t.zp if len(t.zp) > 1 else t.zp * n, dtype=np.int64)
    sc = np.asarray(t.scale if len(t.scale) > 1 else t.scale * n, dtype=np.float32)
    return zp, sc


# ---- ops -----------------------------------------------------------------------------------------

def _conv2d(m: ModelDesc, op: OpDesc, vals: Dict[str, np.ndarray]) -> np.ndarray:
    xt, wt, yt = m.tensors[op.inputs[0]], m.tensors[op.inputs[1]], m.tensors[op.outputs[0]]
    strides, pads, dil, groups, relu = conv_params(op)
    x = _to_nchw(xt, vals[op.inputs[0]])
    w = vals[op.inputs[1]]
    b = vals[op.inputs[2]] if len(op.inputs) > 2 else None
    cout, cin_g, kh, kw = w.shape
    n, c, h, wd = x.shape
    q8 = xt.dtype == "int8"
    if q8:
        wzp, wsc = _per_channel(wt, cout)
        xv = x.astype(np.int64) - xt.zp[0]
        wv = w.astype(np.int64) - wzp[:, None, None, None]
    else:
        xv = x.astype(np.float32)
        wv = w.astype(np.float32)
    xp = np.pad(xv, ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])))
    oh = (h + pads[0] + pads[2] - (dil[0] * (kh - 1) + 1)) // strides[0] + 1
    ow = (wd + pads[1] + pads[3] - (dil[1] * (kw - 1) + 1)) // strides[1] + 1
    acc = np.zeros((n, cout, oh, ow), dtype=np.int64 if q8 else np.float32)
    cout_g = cout // groups
    for i in range(kh):
        for j in range(kw):
            r0, c0 = i * dil[0], j * dil[1]
            patch = xp[:, :, r0:r0 + strides[0] * (oh - 1) + 1:strides[0],
                       c0:c0 + strides[1] * (ow - 1) + 1:strides[1]]
            for g in range(groups):
                pg = patch[:, g * cin_g:(g + 1) * cin_g]
                wg = wv[g * cout_g:(g + 1) * cout_g, :, i, j]
                acc[:, g * cout_g:(g + 1) * cout_g] += np.einsum("nchw,oc->nohw", pg, wg)
    if q8:
        if b is not None:
            acc = acc + b.astype(np.int64)[None, :, None, None]
        mult = (np.float64(xt.scale[0]) * wsc.astype(np.float64)) / np.float64(yt.scale[0])
        y = _requant(acc.astype(np.float64) * mult[None, :, None, None], yt.zp[0], "int8")
        if relu:
            y = np.maximum(y, np.int8(yt.zp[0]))
    else:
        if b is not None:
            acc = acc + b.astype(np.float32)[None, :, None, None]
        if relu:
            acc = np.maximum(acc, np.float32(0))
        y = _store_float(yt, acc)
    return _from_nchw(yt, y)


def _dense(m: ModelDesc, op: OpDesc, vals: Dict[str, np.ndarray]) -> np.ndarray:
    xt, wt, yt = m.tensors[op.inputs[0]], m.tensors[op.inputs[1]], m.tensors[op.outputs[0]]
    relu = int(op.attrs["relu"][0]) if "relu" in op.attrs else 0
    x, w = vals[op.inputs[0]], vals[op.inputs[1]]
    b = vals[op.inputs[2]] if len(op.inputs) > 2 else None
    nout = w.shape[0]
    if xt.dtype == "int8":
        wzp, wsc = _per_channel(wt, nout)
        acc = (x.astype(np.int64) - xt.zp[0]) @ (w.astype(np.int64) - wzp[:, None]).T
        if b is not None:
            acc = acc + b.astype(np.int64)
        mult = (np.float64(xt.scale[0]) * wsc.astype(np.float64)) / np.float64(yt.scale[0])
        y = _requant(acc.astype(np.float64) * mult, yt.zp[0], "int8")
        return np.maximum(y, np.int8(yt.zp[0])) if relu else y
    acc = x.astype(np.float32) @ w.astype(np.float32).T
    if b is not None:
        acc = acc + b.astype(np.float32)
    if relu:
        acc = np.maximum(acc, np.float32(0))
    return _store_float(yt, acc)


def _binary(m: ModelDesc, op: OpDesc, vals: Dict[str, np.ndarray]) -> np.ndarray:
    at, bt, yt = (m.tensors[n] for n in (op.inputs[0], op.inputs[1], op.outputs[0]))
    a, b = vals[op.inputs[0]], vals[op.inputs[1]]
    if yt.qnt == "affine":
        qa = a.astype(np.int64) - at.zp[0]
        qb = b.astype(np.int64) - bt.zp[0]
        sa, sb, sy = np.float64(at.scale[0]), np.float64(bt.scale[0]), np.float64(yt.scale[0])
        if op.type == "mul":
            v = (qa * qb).astype(np.float64) * ((sa * sb) / sy)
        else:
            v = (qa.astype(np.float64) * sa + qb.astype(np.float64) * sb) / sy
        return _requant(v, yt.zp[0], yt.dtype)
    fa, fb = a.astype(np.float32), b.astype(np.float32)
    return _store_float(yt, fa * fb if op.type == "mul" else fa + fb)


def _unary(m: ModelDesc, op: OpDesc, vals: Dict[str, np.ndarray]) -> np.ndarray:
    xt, yt = m.tensors[op.inputs[0]], m.tensors[op.outputs[0]]
    x = vals[op.inputs[0]]
    sig = op.type == "sigmoid"
    if xt.qnt == "affine":
        codes = np.arange(-128, 128) if xt.dtype == "int8" else np.arange(0, 256)
        r = (codes - xt.zp[0]).astype(np.float64) * np.float64(xt.scale[0])
        f = 1.0 / (1.0 + np.exp(-r)) if sig else np.where(r < 0.0, 0.0, r)
        table = _requant(f / np.float64(yt.scale[0]), yt.zp[0], yt.dtype)
        return table[x.astype(np.int64) - int(codes[0])]
    v = x.astype(np.float32)
    with np.errstate(over="ignore"):
        v = np.float32(1) / (np.float32(1) + np.exp(-v)) if sig else np.where(v < 0, np.float32(0), v)
    return _store_float(yt, v)


def _convert(m: ModelDesc, op: OpDesc, vals: Dict[str, np.ndarray]) -> np.ndarray:
    xt, yt = m.tensors[op.inputs[0]], m.tensors[op.outputs[0]]
    x = vals[op.inputs[0]]
    if op.type == "quantize":
        v = dequantize(x, xt.scale[0], xt.zp[0]) if xt.qnt == "affine" else x.astype(np.float32)
        return quantize(v, yt.scale[0], yt.zp[0], yt.dtype)
    if op.type == "dequantize":
        return _store_float(yt, dequantize(x, xt.scale[0], xt.zp[0]))
    v = x.astype(np.float64)           # cast
    if yt.dtype in ("float32", "float16"):
        with np.errstate(over="ignore", invalid="ignore"):
            return v.astype(np.float32).astype(np_dtype(yt.dtype))
    lo, hi = _RANGES[yt.dtype]
    with np.errstate(invalid="ignore"):
        r = np.rint(v)
        r = np.where(np.isnan(r), 0.0, np.clip(r, lo, hi))
    return r.astype(np_dtype(yt.dtype))


def run_op(model: ModelDesc, op: OpDesc, vals: Dict[str, np.ndarray],
           custom_ops: Optional[Mapping[str, Callable]] = None) -> List[np.ndarray]:
    """Compute one op from ``vals`` (tensor name -> array); returns its outputs."""
    t = op.type
    if op.custom:
        if not custom_ops or t not in custom_ops:
            raise RuntimeError(f"no implementation for custom op {t!r}")
        outs = custom_ops[t]([vals[i] for i in op.inputs], op.attrs)
        return [np.asarray(o, dtype=np_dtype(model.tensors[n].dtype)).reshape(model.tensors[n].dims)
                for o, n in zip(outs, op.outputs)]
    if t == "conv2d":
        return [_conv2d(model, op, vals)]
    if t == "dense":
        return [_dense(model, op, vals)]
    if t in ("add", "mul"):
        return [_binary(model, op, vals)]
    if t in ("relu", "sigmoid"):
        return [_unary(model, op, vals)]
    if t == "reshape":
        return [vals[op.inputs[0]]]        # reshaped by the caller to the inferred dims
    if t == "transpose":
        return [vals[op.inputs[0]].transpose([int(p) for p in op.attrs["perm"]])]
    if t in ("quantize", "dequantize", "cast"):
        return [_convert(model, op, vals)]
    raise ValueError(f"unknown op {t!r}")


def run_reference(model, inputs: Union[Sequence[np.ndarray], Mapping[str, np.ndarray]],
                  shape_set: int = 0, custom_ops: Optional[Mapping[str, Callable]] = None,
                  return_all: bool = False):
    """Run a whole model in numpy.

    Parameters
    ----------
    model : bytes or ModelDesc or ModelBuilder
    inputs : sequence or mapping of numpy.ndarray
        One array per model input (or by name), already in the input's *model* type and
        layout at the shape set's dims (what the executor receives; no mean/std).
    shape_set : int
        For dynamic models, the shape set the inputs follow.
    custom_ops : mapping, optional
        Custom op type -> ``f(list_of_input_arrays, attrs) -> list_of_output_arrays``.
    return_all : bool
        Return every tensor by name instead of the output list.

    Returns
    -------
    list of numpy.ndarray
        The outputs, in model output order, typed and shaped as the model declares them.
    """
    m = as_model(model)
    dims = infer_shapes(m, shape_set)
    if isinstance(inputs, Mapping):
        inputs = [inputs[n] for n in m.inputs]
    if len(inputs) != len(m.inputs):
        raise ValueError(f"model has {len(m.inputs)} inputs, got {len(inputs)}")
    vals: Dict[str, np.ndarray] = {}
    for name, t in m.tensors.items():
        if t.is_constant:
            vals[name] = t.data
    for name, arr in zip(m.inputs, inputs):
        t = m.tensors[name]
        a = np.asarray(arr)
        if a.dtype != np_dtype(t.dtype) or a.size != int(np.prod(dims[name])):
            raise ValueError(f"input {name}: expected {t.dtype} {dims[name]}, got {a.dtype} {a.shape}")
        vals[name] = a.reshape(dims[name])
    for op in m.ops:
        for o, v in zip(op.outputs, run_op(m, op, vals, custom_ops)):
            vals[o] = np.ascontiguousarray(v).reshape(dims[o])
    if return_all:
        return vals
    return [vals[n] for n in m.outputs]


def __dir__():
    # tab completion shows the public names, not the imports
    return sorted(__all__)
