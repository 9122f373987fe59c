"""The KServe v2 (Triton) HTTP inference protocol as data: pure numpy, no server library.

``rknnx serve`` (:mod:`rknnx.serve`, on aiohttp) and the Ray Serve deployment
(:mod:`rknnx.ray`, on Ray's own HTTP proxy) both speak it through these functions:

- :class:`ModelSpec`: what ``GET /v2/models/{name}`` answers (inputs and outputs with KServe
  datatypes and shapes, ``-1`` for a dim that varies between the shape sets of a dynamic
  model), and the model config Triton clients ask for;
- :func:`decode_request`: an inference request body (JSON, or JSON followed by the binary
  tensor data of the ``binary_tensor_data`` extension, split by the
  ``Inference-Header-Content-Length`` header) -> numpy arrays by input name, checked
  against the spec: every mistake is a :class:`ProtocolError` with a 4xx status and a
  reason;
- :func:`encode_response`: the outputs -> a response body (JSON ``data``, or binary tensor
  data after the JSON header) and its headers.

What the server does with the arrays (the checks :meth:`rknnx.Model.run` makes on shapes
and layouts, the pool, the queue) is the caller's.  The protocol:
https://kserve.github.io/website/docs/concepts/architecture/data-plane/v2-protocol and
Triton's binary tensor data extension (``docs/protocol/extension_binary_data.md``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

__all__ = ["DATATYPES", "HEADER", "ProtocolError", "ModelSpec", "InferRequest",
           "check_name", "datatype_of", "decode_request", "encode_response", "error_body"]

#: the header that says how many leading bytes of a body are JSON (the rest: tensor data)
HEADER = "Inference-Header-Content-Length"

#: KServe v2 datatype -> numpy dtype, little-endian as the binary extension specifies
DATATYPES: Dict[str, np.dtype] = {
    "BOOL": np.dtype(np.bool_), "UINT8": np.dtype("u1"), "UINT16": np.dtype("<u2"),
    "UINT32": np.dtype("<u4"), "UINT64": np.dtype("<u8"), "INT8": np.dtype("i1"),
    "INT16": np.dtype("<i2"), "INT32": np.dtype("<i4"), "INT64": np.dtype("<i8"),
    "FP16": np.dtype("<f2"), "FP32": np.dtype("<f4"), "FP64": np.dtype("<f8"),
}
_BY_KIND = {(d.kind, d.itemsize): name for name, d in DATATYPES.items()}
#: what the general flow converts from (rknnx._tensors); a model's own type is accepted too
_FED = ("UINT8", "INT8", "FP16", "FP32")


class ProtocolError(Exception):
    """A request the server refuses: ``status`` (400 bad request, 404 unknown model, 413 too
    large, 503 queue full or shutting down ...) and the reason, sent as ``{"error": ...}``."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


def datatype_of(dtype: Any) -> str:
    """The KServe datatype of a numpy dtype (``float32`` -> ``"FP32"``)."""
    d = np.dtype(dtype)
    name = _BY_KIND.get((d.kind, d.itemsize))
    if name is None:
        raise ValueError(f"{d} has no KServe v2 datatype")
    return name


#: the longest error message sent (longer ones end in "..."); values quoted in a message
#: (names, datatypes, shapes a client sent) are cut to `_QUOTE` characters first
_MESSAGE = 400
_QUOTE = 64
#: RKNN_MAX_DIMS of rknn_api.h: no tensor of the runtime has more dims
MAX_DIMS = 16
#: the largest dim a request may give (dims are int32 on the boards' 32-bit numpy too)
MAX_DIM = 2**31 - 1


def error_body(message: str) -> bytes:
    """``{"error": message}`` as bytes: one line, at most 400 characters."""
    text = " ".join(str(message).split())
    if len(text) > _MESSAGE:
        text = text[:_MESSAGE - 3] + "..."
    return json.dumps({"error": text}).encode()


def quoted(value: Any) -> str:
    """`value` as a message quotes it (its repr), cut to a few dozen characters: a client's
    900 KB input name is not sent back whole."""
    text = repr(value)
    if len(text) > _QUOTE:
        text = f"{text[:_QUOTE - 4]}...{text[-1]} ({len(text)} characters)"
    return text


def check_name(name: Any) -> str:
    """`name` if it can name a model in a URL (``/v2/models/{name}``): ASCII letters,
    digits, ``-``, ``_``, ``.``, and not ``.`` or ``..`` (clients rewrite those paths);
    ValueError otherwise."""
    if not isinstance(name, str) or not name or not all(
            c.isascii() and (c.isalnum() or c in "-_.") for c in name):
        raise ValueError(f"model name {quoted(name)}: use letters, digits, '-', '_', '.'")
    if name in (".", ".."):
        raise ValueError(f"model name {name!r}: clients rewrite '/v2/models/{name}/...' as a "
                         f"relative path; choose another name")
    return name


def _dims(model, k: int, t) -> List[int]:
    """The shape of input `k` as metadata gives it: -1 where the shape sets differ."""
    dims = [int(d) for d in t.shape]
    if model.dynamic:
        for d in range(len(dims)):
            if len({s[k][d] for s in model.shape_sets}) > 1:
                dims[d] = -1
    return dims


@dataclass
class _Tensor:
    name: str
    datatype: str
    shape: List[int]
    accepted: Tuple[str, ...] = ()


class ModelSpec:
    """The protocol's view of one :class:`rknnx.Model` served as `name`.

    Inputs are described with the type a client feeds (uint8 pixels for a quantized image
    input, else the model's own type: :func:`rknnx._tensors.default_dtype`, as
    :mod:`rknnx.ort` reports them) and accept any type the general flow converts from
    (UINT8, INT8, FP16, FP32) or the model's own.  Outputs are FP32 (what
    :meth:`rknnx.Model.run` returns), or the model's own types with the request parameter
    ``"raw": true``.
    """

    def __init__(self, name: str, model, version: str = "1"):
        from rknnx._tensors import default_dtype

        self.name = name
        self.version = version
        self.inputs: List[_Tensor] = []
        for k, t in enumerate(model.inputs):
            own = datatype_of(t.dtype)
            accepted = _FED + ((own,) if own not in _FED else ())
            self.inputs.append(_Tensor(t.name, datatype_of(default_dtype(t)),
                                       _dims(model, k, t), accepted))
        self.outputs: List[_Tensor] = [_Tensor(t.name, "FP32", [int(d) for d in t.shape])
                                       for t in model.outputs]
        self.raw_outputs = [datatype_of(t.dtype) for t in model.outputs]
        #: the inputs by name; the index of each output by name (what a request names)
        self.input_by_name = {t.name: t for t in self.inputs}
        self.output_index = {t.name: i for i, t in enumerate(self.outputs)}
        self.chip = model.chip
        #: bytes of one request's input tensors at float32: the scale of a sane body
        self.input_bytes = sum(4 * max(1, int(np.prod([abs(d) for d in t.shape])))
                               for t in model.inputs)

    def metadata(self) -> Dict[str, Any]:
        """``GET /v2/models/{name}``."""
        def tensor(t):
            return {"name": t.name, "datatype": t.datatype, "shape": list(t.shape)}
        return {"name": self.name, "versions": [self.version], "platform": "rknn",
                "inputs": [tensor(t) for t in self.inputs],
                "outputs": [tensor(t) for t in self.outputs]}

    def config(self) -> Dict[str, Any]:
        """``GET /v2/models/{name}/config``: Triton's model configuration, the fields its
        clients read (no batching: a model's batch is in its shapes)."""
        def tensor(t):
            return {"name": t.name, "data_type": "TYPE_" + t.datatype,
                    "dims": list(t.shape)}
        return {"name": self.name, "platform": "rknn", "backend": "rknnx",
                "max_batch_size": 0, "input": [tensor(t) for t in self.inputs],
                "output": [tensor(t) for t in self.outputs],
                "parameters": {"chip": {"string_value": str(self.chip)}}}


@dataclass
class InferRequest:
    """A decoded inference request."""

    id: Optional[str]
    inputs: Dict[str, np.ndarray]
    #: (output index, binary?) in the order asked; every output when the request names none
    outputs: List[Tuple[int, bool]] = field(default_factory=list)
    raw: bool = False


def _shape(value, where: str) -> Tuple[int, ...]:
    if not isinstance(value, list) or not all(
            isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in value):
        raise ProtocolError(400, f"{where}: 'shape' must be a list of non-negative integers; "
                                 f"got {quoted(value)}")
    # shapes numpy cannot build (65 dims, a dim of 2**64) are the client's mistake too
    if len(value) > MAX_DIMS:
        raise ProtocolError(400, f"{where}: 'shape' has {len(value)} dims; RKNN tensors have "
                                 f"at most {MAX_DIMS}")
    if any(d > MAX_DIM for d in value):
        raise ProtocolError(400, f"{where}: 'shape' has a dim larger than {MAX_DIM}; got "
                                 f"{quoted(value)}")
    return tuple(value)


def _params(obj: Mapping, where: str) -> Mapping:
    p = obj.get("parameters", {})
    if p is None:
        return {}
    if not isinstance(p, dict):
        raise ProtocolError(400, f"{where}: 'parameters' must be an object")
    return p


def _flag(params: Mapping, key: str, where: str, default: bool = False) -> bool:
    v = params.get(key, default)
    if not isinstance(v, bool):
        raise ProtocolError(400, f"{where}: parameter {key!r} must be true or false; "
                                 f"got {quoted(v)}")
    return v


def decode_request(body: bytes, header_length: Optional[str], spec: ModelSpec) -> InferRequest:
    """Parse an inference request body (see the module's docstring).

    `header_length` is the value of the ``Inference-Header-Content-Length`` header (None
    when absent: the whole body is JSON).  Input tensors are checked against `spec`
    (names, datatypes, element counts against their shape, binary sizes); whether a shape
    fits the model is :meth:`rknnx.Model.run`'s check.

    Raises
    ------
    ProtocolError
        400 with the reason, for every malformed request.
    """
    doc, binary = _split(body, header_length)
    req_id = doc.get("id")
    if req_id is not None and not isinstance(req_id, str):
        raise ProtocolError(400, f"'id' must be a string; got {quoted(req_id)}")
    params = _params(doc, "request")
    raw = _flag(params, "raw", "request")
    binary_out = _flag(params, "binary_data_output", "request")
    if "classification" in params:
        raise ProtocolError(400, "the classification extension is not supported; ask for "
                                 "the output tensor")
    items = doc.get("inputs")
    if not isinstance(items, list) or not items:
        raise ProtocolError(400, "'inputs' must be a non-empty list of tensors")
    arrays: Dict[str, np.ndarray] = {}
    offset = 0
    for k, item in enumerate(items):
        name, a, offset = _input(item, f"inputs[{k}]", spec, arrays, binary, offset)
        arrays[name] = a
    if offset != len(binary):
        raise ProtocolError(400, f"{len(binary) - offset} bytes of binary data follow the "
                                 f"inputs' binary_data_size")
    missing = [t.name for t in spec.inputs if t.name not in arrays]
    if missing:
        raise ProtocolError(400, f"missing input(s) {missing}; model {spec.name!r} has inputs "
                                 f"{[t.name for t in spec.inputs]}")
    return InferRequest(req_id, arrays, _outputs(doc.get("outputs"), spec, binary_out), raw)


def _split(body: bytes, header_length: Optional[str]):
    """The request's JSON object and the binary data after it."""
    view = memoryview(body)
    if header_length is not None:
        try:
            n = int(header_length)
        except ValueError:
            n = -1
        if n < 0 or n > len(body):
            raise ProtocolError(400, f"{HEADER} is {header_length!r}: it must be the length of "
                                     f"the JSON header within the {len(body)}-byte body")
        head, binary = view[:n], view[n:]
    else:
        head, binary = view, view[len(body):]
    try:
        doc = json.loads(bytes(head))
    except RecursionError:
        raise ProtocolError(400, "the request's JSON is nested too deeply") from None
    except (ValueError, UnicodeDecodeError) as e:
        hint = ("" if header_length is not None or bytes(body[:1]) == b"{" else
                f"; binary tensor data after the JSON needs the {HEADER} header")
        raise ProtocolError(400, f"the request is not valid JSON ({e}){hint}") from None
    if not isinstance(doc, dict):
        raise ProtocolError(400, "the request must be a JSON object with 'inputs'")
    return doc, binary


def _input(item, where: str, spec: ModelSpec, arrays: dict, binary, offset: int):
    """One input tensor of the request: ``(name, array, offset)``, `offset` moved past its
    binary data."""
    if not isinstance(item, dict):
        raise ProtocolError(400, f"{where} must be an object with name, shape, datatype")
    name = item.get("name")
    if not isinstance(name, str):
        raise ProtocolError(400, f"{where}: 'name' must be a string")
    where = f"input {quoted(name)}"
    t = spec.input_by_name.get(name)
    if t is None:
        raise ProtocolError(400, f"model {spec.name!r} has no input {quoted(name)}; its "
                                 f"inputs are {[t.name for t in spec.inputs]}")
    if name in arrays:
        raise ProtocolError(400, f"{where} is given twice")
    datatype = item.get("datatype")
    if datatype not in DATATYPES:
        known = ", ".join(DATATYPES) + ", BYTES"
        raise ProtocolError(400, f"{where}: datatype {quoted(datatype)} is not a KServe v2 "
                                 f"datatype ({known})"
                            if datatype != "BYTES" else
                            f"{where}: BYTES tensors are not accepted; send "
                            f"{' or '.join(t.accepted)}")
    if datatype not in t.accepted:
        raise ProtocolError(400, f"{where}: datatype {datatype} is not accepted; send "
                                 f"{t.datatype} ({', '.join(t.accepted)} are converted)")
    dtype = DATATYPES[datatype]
    shape = _shape(item.get("shape"), where)
    count = 1
    for d in shape:
        count *= d
    p = _params(item, where)
    if "binary_data_size" in p:
        size = p["binary_data_size"]
        if not isinstance(size, int) or isinstance(size, bool) or size < 0:
            raise ProtocolError(400, f"{where}: binary_data_size must be a non-negative "
                                     f"integer; got {quoted(size)}")
        if size != count * dtype.itemsize:
            raise ProtocolError(400, f"{where}: binary_data_size {size} does not match "
                                     f"shape {list(shape)} of {datatype} "
                                     f"({count * dtype.itemsize} bytes)")
        if offset + size > len(binary):
            raise ProtocolError(400, f"{where}: binary_data_size {size} runs past the "
                                     f"{len(binary)} bytes of binary data in the body")
        a = np.frombuffer(binary[offset:offset + size], dtype=dtype).reshape(shape)
        offset += size
        if "data" in item:
            raise ProtocolError(400, f"{where} has both 'data' and binary_data_size")
    elif "data" in item:
        a = _from_json(item["data"], dtype, datatype, shape, count, where)
    else:
        raise ProtocolError(400, f"{where} has no 'data' (nor binary_data_size)")
    if not a.flags.aligned or a.dtype.byteorder == ">":
        a = a.astype(dtype.newbyteorder("="))
    return name, a, offset


def _outputs(asked, spec: ModelSpec, binary_out: bool) -> List[Tuple[int, bool]]:
    """The outputs a request asks for (all when it names none): ``(index, binary)``."""
    if asked is None:
        return [(i, binary_out) for i in range(len(spec.outputs))]
    if not isinstance(asked, list):
        raise ProtocolError(400, "'outputs' must be a list")
    outputs: List[Tuple[int, bool]] = []
    for k, o in enumerate(asked):
        if not isinstance(o, dict) or not isinstance(o.get("name"), str):
            raise ProtocolError(400, f"outputs[{k}] must be an object with a 'name'")
        i = spec.output_index.get(o["name"])
        if i is None:
            raise ProtocolError(400, f"model {spec.name!r} has no output {quoted(o['name'])}; "
                                     f"its outputs are {[t.name for t in spec.outputs]}")
        where = f"output {quoted(o['name'])}"
        op = _params(o, where)
        if "classification" in op:
            raise ProtocolError(400, "the classification extension is not supported; "
                                     "ask for the output tensor")
        outputs.append((i, _flag(op, "binary_data", where, binary_out)))
    return outputs


def _from_json(data, dtype: np.dtype, datatype: str, shape, count: int, where: str):
    if not isinstance(data, list):
        raise ProtocolError(400, f"{where}: 'data' must be a list (flat, row-major, or nested)")
    try:
        a = np.asarray(data)
        if a.size == 0:
            # `data: []` has no type to check: numpy calls it float64; the element count
            # below (or the model's shape) says what is wrong
            a = a.astype(dtype)
        elif datatype == "BOOL":
            if a.dtype != np.bool_:
                raise ValueError("BOOL data must be true/false")
        else:
            if a.dtype.kind not in "iufb" or (a.dtype.kind == "f" and dtype.kind in "iu"):
                raise ValueError(f"{datatype} data must be "
                                 f"{'integers' if dtype.kind in 'iu' else 'numbers'}")
            if dtype.kind in "iu" and a.size and (a.min() < np.iinfo(dtype).min
                                                  or a.max() > np.iinfo(dtype).max):
                raise ValueError(f"a value is out of the range of {datatype}")
            a = a.astype(dtype)
    except RecursionError:
        raise ProtocolError(400, f"{where}: 'data' is nested too deeply") from None
    except (ValueError, TypeError, OverflowError) as e:
        raise ProtocolError(400, f"{where}: 'data' is not a {datatype} tensor ({e})") from None
    if a.size != count:
        raise ProtocolError(400, f"{where}: 'data' has {a.size} elements; shape {list(shape)} "
                                 f"needs {count}")
    return a.reshape(shape)


def encode_response(spec: ModelSpec, request: InferRequest,
                    outputs: Sequence[np.ndarray]) -> Tuple[bytes, Dict[str, str]]:
    """The response body and headers for `outputs` (one array per model output, as
    :meth:`rknnx.Model.run` returns them), with the outputs `request` asked for."""
    tensors = []
    chunks: List[bytes] = []
    for i, binary in request.outputs:
        a = np.ascontiguousarray(outputs[i])
        t: Dict[str, Any] = {"name": spec.outputs[i].name, "datatype": datatype_of(a.dtype),
                             "shape": list(a.shape)}
        if binary:
            if a.dtype.byteorder == ">":
                a = a.astype(a.dtype.newbyteorder("<"))
            t["parameters"] = {"binary_data_size": a.nbytes}
            chunks.append(a.tobytes())
        else:
            t["data"] = a.ravel().tolist()
        tensors.append(t)
    doc: Dict[str, Any] = {"model_name": spec.name, "model_version": spec.version,
                           "outputs": tensors}
    if request.id is not None:
        doc["id"] = request.id
    head = json.dumps(doc, separators=(",", ":")).encode()
    if not chunks:
        return head, {"Content-Type": "application/json"}
    return b"".join([head, *chunks]), {"Content-Type": "application/octet-stream",
                                       HEADER: str(len(head))}


def __dir__():
    return sorted(__all__)
