"""Descriptions of a model's tensors, and the checks that turn user arrays into runtime input.

Pure Python on the low-level layer: :class:`TensorInfo` is what ``Model.inputs`` and
``Model.outputs`` hold; :func:`as_input` decides, for one user array, the RKNN type and
layout it is handed over in (or says what was expected).
"""

from __future__ import annotations

from typing import Optional, Sequence, Tuple

import numpy as np

from rknnx._tensorinfo import (  # noqa: F401  (the description's home; re-exported)
    PIXEL_LAYOUTS, NativeInfo, QuantInfo, TensorInfo, _permute)

__all__ = ["QuantInfo", "NativeInfo", "TensorInfo", "describe", "as_input", "set_shapes",
           "check_out", "PIXEL_LAYOUTS"]

#: element types the runtime converts from in the general flow
_INPUT_DTYPES = (np.dtype(np.uint8), np.dtype(np.int8), np.dtype(np.float16),
                 np.dtype(np.float32))


def _quant(attr) -> QuantInfo:
    from rknnx.lowlevel import QntType

    kind = {QntType.DFP: "dfp", QntType.AFFINE_ASYMMETRIC: "affine"}.get(int(attr.qnt_type),
                                                                         "none")
    return QuantInfo(kind, float(attr.scale), int(attr.zp), int(attr.fl))


def _native(attr) -> NativeInfo:
    return NativeInfo(attr.layout, tuple(attr.dims), attr.dtype, tuple(attr.strides),
                      int(attr.alloc_size))


def describe(index: int, attr, native_attr=None, kind: str = "tensor") -> TensorInfo:
    """A :class:`TensorInfo` of a low-level ``TensorAttr`` (and its native attribute).

    Raises
    ------
    NotSupportedError
        The runtime answers a type without a numpy dtype (librknnrt 1.5.2 answers 10,
        INT4 in the 2.x header, for the tensors of an int16 dynamic-fixed-point file whose
        native attributes say INT16): the message says what it answered."""
    try:
        dtype = attr.dtype
    except TypeError:
        from rknnx.errors import NotSupportedError
        from rknnx.lowlevel import TensorType

        t = int(attr.type)
        try:
            said = f"{t} (RKNN_TENSOR_{TensorType(t).name})"
        except ValueError:
            said = str(t)
        native = ""
        if native_attr is not None:
            try:
                native = (f"; its native attribute says "
                          f"RKNN_TENSOR_{TensorType(int(native_attr.type)).name}")
            except ValueError:
                pass
        raise NotSupportedError(
            f"{kind} {index} ({attr.name!r}): the runtime answers type {said} for it, which "
            f"rknnx cannot hold in a numpy array{native} (librknnrt 1.5.2 answers 10 for "
            "int16 dynamic-fixed-point tensors; a newer librknnrt answers INT16)",
            None, "rknn_query") from None
    return TensorInfo(index=index, name=attr.name, shape=tuple(attr.dims), dtype=dtype,
                      layout=attr.layout, quant=_quant(attr),
                      native=_native(native_attr) if native_attr is not None else None,
                      attr=attr.copy())


def default_dtype(info: TensorInfo) -> np.dtype:
    """What a user feeds an input by default: uint8 pixels for a quantized 4-D image input,
    else the model's own type."""
    if len(info.shape) == 4 and info.layout == "NHWC" and info.dtype.kind in "iu":
        return np.dtype(np.uint8)
    return info.dtype


def as_input(info: TensorInfo, array, data_format: Optional[str] = None,
             expected_shape: Optional[Tuple[int, ...]] = None):
    """Check one user array against input `info`; return ``(array, layout)``.

    The array is given in the model's layout or, for a 4-D input, in the other of NHWC /
    NCHW (said with `data_format`, else inferred from the shape); a 3-D array stands for a
    batch of one.  It is made C-contiguous (a copy only when it is not).

    Raises
    ------
    TypeError
        Not an array, or an element type the runtime does not convert from.
    ValueError
        A shape that is neither layout of the input, or a `data_format` not NHWC/NCHW.
    """
    a = np.asarray(array)
    if a.dtype == np.float64 and info.dtype != a.dtype:
        # numpy's default float: taken as float32 (what the runtime converts from), as a
        # session's run_arrays / write and rknnx.lite take it; nothing the NPU's int8 or
        # float16 could tell apart is lost
        a = a.astype(np.float32)
    if a.dtype not in _INPUT_DTYPES and a.dtype != info.dtype:
        raise TypeError(
            f"input {info.index} ({info.name!r}): dtype {a.dtype} is not accepted; expected "
            f"{info.dtype} (the model's) or one of uint8, int8, float16, float32 "
            f"(convert with .astype())")
    shape = tuple(expected_shape) if expected_shape is not None else info.shape
    if data_format is not None:
        fmt = str(data_format).upper()
        if fmt not in PIXEL_LAYOUTS:
            raise ValueError(f"data_format must be 'nhwc' or 'nchw', got {data_format!r}")
    else:
        fmt = None
    if len(shape) == 4 and a.ndim == 3 and shape[0] == 1:
        a = a[np.newaxis]
    candidates = [info.layout] if len(shape) != 4 else (
        [fmt] if fmt else [info.layout] + [f for f in PIXEL_LAYOUTS if f != info.layout])
    for layout in candidates:
        if a.shape == _permute(shape, info.layout, layout):
            return np.ascontiguousarray(a), layout
    other = (f" or {_permute(shape, info.layout, 'NCHW' if info.layout == 'NHWC' else 'NHWC')} "
             f"({'NCHW' if info.layout == 'NHWC' else 'NHWC'})"
             if len(shape) == 4 and info.layout in PIXEL_LAYOUTS and not fmt else "")
    said = f" in {fmt}" if fmt else ""
    raise ValueError(f"input {info.index} ({info.name!r}): shape {a.shape}{said} does not match "
                     f"the model's {shape} ({info.layout}){other}")


def shapes_str(shapes: Sequence[Tuple[int, ...]]) -> str:
    return ", ".join(str(tuple(s)) for s in shapes)


def set_shapes(ctx, inputs: Sequence[TensorInfo], shapes: Sequence[Tuple[int, ...]]) -> None:
    """Set the input shapes of a dynamic-shape model's context: one shape per input, in the
    model's layout.  Boards take the shapes of 4-D inputs in NHWC only (docs/abi-notes.md),
    so NCHW shapes are handed over as NHWC.  A runtime without ``rknn_set_input_shapes``
    (before 1.5.0 none; some builds only the deprecated single-input form) gets one
    ``rknn_set_input_shape`` per input."""
    from rknnx import lowlevel
    from rknnx.errors import NotSupportedError

    attrs = []
    for t, shape in zip(inputs, shapes):
        a = t.attr.copy()
        if len(shape) == 4 and t.layout == "NCHW":
            a.fmt = lowlevel.TensorFormat.NHWC
            shape = _permute(tuple(shape), "NCHW", "NHWC")
        a.dims = shape
        attrs.append(a)
    try:
        ctx.set_input_shapes(attrs)
    except NotSupportedError:
        from rknnx.runtime import note_fallback

        note_fallback("rknn_set_input_shapes",
                      "shapes are set one input at a time (rknn_set_input_shape)")
        for a in attrs:
            ctx.set_input_shape(a)


def check_out(out, specs) -> list:
    """`out` (the caller's arrays for the outputs) as a list, each array of the shape and
    dtype of its entry of `specs` (``[(shape, dtype)]``), writable and C-contiguous, no
    two sharing memory; ValueError saying which is wrong."""
    if isinstance(out, np.ndarray) or not isinstance(out, (list, tuple)):
        raise ValueError(f"out= takes a list of arrays, one per output ({len(specs)}); "
                         f"got {type(out).__name__}" +
                         (" (put it in a list)" if isinstance(out, np.ndarray) else ""))
    out = list(out)
    if len(out) != len(specs):
        raise ValueError(f"out= needs {len(specs)} array(s), one per output; got {len(out)}")
    for i, (a, (shape, dtype)) in enumerate(zip(out, specs)):
        if not isinstance(a, np.ndarray) or a.shape != shape or a.dtype != dtype or \
                not (a.flags.c_contiguous and a.flags.writeable):
            if not isinstance(a, np.ndarray):
                got = type(a).__name__
            else:
                got = f"{a.shape} {a.dtype}" + ("" if a.flags.c_contiguous
                                                 else ", not C-contiguous") + \
                    ("" if a.flags.writeable else ", read-only")
            raise ValueError(f"out[{i}] must be a writable C-contiguous {dtype} array of "
                             f"shape {shape}; got {got}")
    if len(out) > 1:
        if len({id(a) for a in out}) != len(out):
            raise ValueError("out= gives the same array for two outputs; give one per output")
        for i in range(1, len(out)):
            for j in range(i):
                # exact for C-contiguous arrays: their extents overlap or they do not
                if np.may_share_memory(out[j], out[i]):
                    raise ValueError(f"out[{j}] and out[{i}] share memory (views of one "
                                     "buffer): one output would overwrite the other; give "
                                     "each output its own array")
    return out
