"""Read a vendor ``.rknn`` file with no runtime: its signature, target and versions.

:func:`read` gives a :class:`ModelFile` (frozen dataclasses) from a path or the file's bytes.
The reading is done by rknnx's own C reader, the same code the emulator's ``rknn_init``
uses for a vendor model, exposed as :func:`rknnx.lowlevel.read_model_file`; loading a
librknnrt is never needed.  The format, and the evidence for each fact used, is in
``docs/rknn-file-format.md``.

>>> from rknnx import modelfile
>>> mf = modelfile.read("yolov5s.rknn")                      # doctest: +SKIP
>>> mf.chip, mf.toolkit_version, [t.shape for t in mf.inputs]  # doctest: +SKIP
('RK3588', '2.5.0', [(1, 640, 640, 3)])

``ModelFile.inputs``/``outputs`` are :class:`rknnx.TensorInfo`, the type ``Model.inputs``
holds, so code written against a model takes the file's tensors; everything the file says
of each tensor (logical shape, native dims, per-channel parameters, mean/std, what was
decoded) is beside them in ``ModelFile.file_inputs``/``file_outputs``
(:class:`FileTensor`).

Which runtimes can load a file is :func:`runtime_support` over one table of facts,
:data:`RUNTIME_FACTS` (container version against runtime version, from the vendor runtimes'
own answers and board logs).
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from typing import Optional, Union

import numpy as np

from rknnx._tensorinfo import QuantInfo as _QuantInfo, TensorInfo as _TensorInfo
from rknnx.errors import ModelFileError

__all__ = [
    "ModelFile",
    "Container",
    "FileTensor",
    "CustomOp",
    "RuntimeFacts",
    "Support",
    "RUNTIME_FACTS",
    "MAGIC",
    "ENCRYPTED_MAGIC",
    "read",
    "is_vendor_file",
    "check_file",
    "runtime_support",
    "differences",
    "ModelFileError",
]

MAGIC = b"RKNN"
ENCRYPTED_MAGIC = b"CYPTRKNN"

# rknn_api.h numbering -> the names the rest of rknnx uses (Model tensors: numpy dtype names,
# layout names, quantization kinds).
_DTYPES = {0: "float32", 1: "float16", 2: "int8", 3: "uint8", 4: "int16", 5: "uint16",
           6: "int32", 7: "uint32", 8: "int64", 9: "bool", 10: "int4", 11: "bfloat16"}
_LAYOUTS = {0: "NCHW", 1: "NHWC", 2: "NC1HWC2", 3: "UNDEFINED"}
_QNT = {0: "none", 1: "dfp", 2: "affine"}


@dataclass(frozen=True)
class Container:
    """The file's framing: magic, version, header, payload and JSON tail.

    Attributes
    ----------
    version : int
        The container version (1, 2, 6 or 0x1004 in the files seen).
    header_size : int
        24 for version 1, 64 otherwise.
    payload_offset, payload_size : int
        Where the payload (a FlatBuffer for versions 1-6) is, in bytes.
    json_offset, json_size : int
        Where the JSON tail is.
    file_size : int
        The whole file.
    """

    version: int
    header_size: int
    payload_offset: int
    payload_size: int
    json_offset: int
    json_size: int
    file_size: int


@dataclass(frozen=True)
class FileTensor:
    """One input or output, in the runtime's order, as the file gives it
    (``ModelFile.file_inputs``/``file_outputs``; ``ModelFile.inputs`` holds the same
    tensor as a :class:`rknnx.TensorInfo`, built by :meth:`info`).

    Three views of the shape: ``shape`` (logical, the framework's order, e.g. NCHW),
    ``dims`` with ``layout`` (what the runtime's INPUT_ATTR / OUTPUT_ATTR report), and
    ``native_dims`` with ``native_layout`` (NATIVE_INPUT_ATTR / NATIVE_OUTPUT_ATTR).  A field
    the reader could not decode is None (``known`` says which groups were decoded); what the
    runtime computes beyond the file (strides, size_with_stride) is not here.

    Attributes
    ----------
    index : int
    role : str
        ``"input"`` or ``"output"``.
    name : str
    shape : tuple of int
        The logical shape as stored.
    logical_layout : str
        ``"NCHW"`` for a 4-D tensor, ``""`` otherwise.
    dims : tuple of int
        The attr view's dims.
    layout : str or None
        The attr view's layout: ``"NCHW"``, ``"NHWC"``, ``"UNDEFINED"``.
    dtype : str or None
        The attr view's element type, numpy's name (``"int8"``, ``"float16"``): the NPU's,
        except in a container 1 file, where the runtimes report the user's type the file
        names (``"float32"``, ``"uint8"``) over int8 tensors.
    n_elems, size : int
        Elements and bytes of the attr view.
    qnt_type : str or None
        ``"affine"``, ``"dfp"`` or ``"none"``, as the runtime reports it.
    scale : float or None
    zero_point : int or None
    quantized : bool or None
        Whether the file holds quantization parameters (a float16 tensor has none, and
        the runtime then reports affine with scale 1, zero point 0).
    qnt_method : str
        The file's ``"layer"`` or ``"channel"`` (or ``""``).
    scales, zero_points : tuple
        Every channel's parameters (one entry for a per-layer tensor).
    native_layout : str or None
    native_dims : tuple of int or None
    native_size : int or None
        Bytes of the native view.
    npu_dtype, npu_layout : str
        The compiler's I/O JSON: NPU-side dtype and layout names (``""`` if absent).
    mean, std : tuple of float or None
        An input's normalization, as the toolkit was given it and the file lists it: the
        runtime feeds the model ``(x - mean[c]) / std[c]`` for channel ``c``.  Raw: a tuple
        may hold one entry (for every channel) or one per channel, and the two need not
        have the same length (``(0.0,)`` and ``(255.0, 255.0, 255.0)`` in the toolkit's
        image models).  None when not known: outputs, files of containers 1, 2 and 0x1004,
        an input the file's generator does not describe, or a generator the reader cannot
        parse (never an error for a static model).
    known : frozenset of str
        Decoded groups: ``"shape"``, ``"attr"``, ``"qnt"``, ``"native"``, ``"norm"`` (mean
        and std).
    raw : dict
        Everything the C reader gave (the rknn_api enum values, the file's codes).
    """

    index: int
    role: str
    name: str
    shape: tuple
    logical_layout: str
    dims: tuple
    layout: Optional[str]
    dtype: Optional[str]
    n_elems: int
    size: int
    qnt_type: Optional[str]
    scale: Optional[float]
    zero_point: Optional[int]
    quantized: Optional[bool]
    qnt_method: str
    scales: tuple
    zero_points: tuple
    native_layout: Optional[str]
    native_dims: Optional[tuple]
    native_size: Optional[int]
    npu_dtype: str
    npu_layout: str
    mean: Optional[tuple]
    std: Optional[tuple]
    known: frozenset
    raw: dict = field(repr=False, compare=False)

    def info(self) -> _TensorInfo:
        """This tensor as a :class:`rknnx.TensorInfo`, as ``Model.inputs`` describes it on
        a runtime: the attr view (``shape`` = :attr:`dims`, ``layout``), the element type
        (None when the file's has no numpy dtype or was not decoded) and the quantization
        (kind ``"none"`` when not decoded).  ``native`` is None: the native view's strides
        and type are the runtime's answers (:attr:`native_dims`, :attr:`native_layout`,
        :attr:`native_size` hold what the file says)."""
        try:
            dtype = np.dtype(self.dtype) if self.dtype is not None else None
        except TypeError:                       # int4, bfloat16: no numpy dtype
            dtype = None
        if self.qnt_type in ("affine", "dfp"):
            quant = _QuantInfo(self.qnt_type, float(self.scale), int(self.zero_point),
                              int(self.raw.get("fl", 0) or 0))
        else:
            quant = _QuantInfo("none")
        return _TensorInfo(index=self.index, name=self.name, shape=tuple(self.dims),
                          dtype=dtype, layout=self.layout or "UNDEFINED", quant=quant)


@dataclass(frozen=True)
class CustomOp:
    """A custom operator the model uses: its node's name and its op type."""

    name: str
    type: str


@dataclass(frozen=True)
class ModelFile:
    """What a vendor ``.rknn`` file says about itself.

    Attributes
    ----------
    path : str or None
        The file read, when read from a path.
    container : Container
    format_version : int
        The FlatBuffer model's own version (1 or 6; 0 when there is none).
    npu_family : str
        The NPU family the runtime prints as ``target:`` (``"RKNPU v2"``), ``""`` for a
        0x1004 file.
    chip : str
        The chip, decided by the NPU family (``"RK3588"``), else by the target platform.
    target_platform : str
        As stored (``"rk3588"``); one old RK3588 file says ``"rk3566"``: trust ``chip``.
    toolkit_version, compiler_version : str
    compiler_version_int : int
        MMmmpp, e.g. 20500 (0 when absent).
    framework : str
        ``"ONNX"``, ...
    dynamic : bool
        Whether the model has several input shape sets.
    inputs, outputs : tuple of rknnx.TensorInfo
        Each tensor as ``Model.inputs``/``Model.outputs`` describe it (the attr view).
    file_inputs, file_outputs : tuple of FileTensor
        The same tensors with everything the file says of them.
    shape_sets : tuple
        For a dynamic model, each set's input dims (the attr view, the runtime's order).
    custom_ops : tuple of CustomOp
    weight_size, internal_size : int or None
        The memory the compiler planned (what the runtime's MEM_SIZE query reports as
        total_weight_size / total_internal_size); for containers 1 and 2, which store no
        plan, derived from the tensors as the runtimes report it; None when nothing says.  For a file built with ``remove_weight=True``
        weight_size is what runtimes 1.5.2 and 1.6.0 report for it: the constants the file
        still holds (docs/rknn-file-format.md, "Weights left out").
    removed_weights : int
        How many constant tensors have their data left out of the file (0 for most files).
    """

    path: Optional[str]
    container: Container
    format_version: int
    npu_family: str
    chip: str
    target_platform: str
    toolkit_version: str
    compiler_version: str
    compiler_version_int: int
    framework: str
    dynamic: bool
    inputs: tuple
    outputs: tuple
    file_inputs: tuple
    file_outputs: tuple
    shape_sets: tuple
    custom_ops: tuple
    weight_size: Optional[int] = None
    internal_size: Optional[int] = None
    removed_weights: int = 0

    def runtime_support(self) -> tuple:
        """Which runtime versions load this file: :func:`runtime_support` of it."""
        return runtime_support(self)


def _tensor(d: dict) -> FileTensor:
    return FileTensor(
        index=d["index"], role=d["role"], name=d["name"], shape=tuple(d["shape"]),
        logical_layout=d["layout"], dims=tuple(d["dims"]),
        layout=_LAYOUTS.get(d["fmt"]) if d["fmt"] is not None else None,
        dtype=_DTYPES.get(d["type"]) if d["type"] is not None else None,
        n_elems=d["n_elems"], size=d["size"],
        qnt_type=_QNT.get(d["qnt_type"]) if d["qnt_type"] is not None else None,
        scale=d["scale"], zero_point=d["zp"], quantized=d["quantized"],
        qnt_method=d["qnt_method"], scales=tuple(d["scales"]), zero_points=tuple(d["zps"]),
        native_layout=_LAYOUTS.get(d["native_fmt"]) if d["native_fmt"] is not None else None,
        native_dims=tuple(d["native_dims"]) if d["native_dims"] is not None else None,
        native_size=d["native_size"], npu_dtype=d["npu_dtype"], npu_layout=d["npu_layout"],
        mean=d["mean"], std=d["std"], known=frozenset(d["known"]), raw=dict(d))


def read(source: Union[str, os.PathLike, bytes, bytearray, memoryview]) -> ModelFile:
    """Read a vendor ``.rknn`` file, with no runtime.

    Parameters
    ----------
    source : str, os.PathLike or bytes-like
        A path, or the whole file's bytes.

    Returns
    -------
    ModelFile

    Raises
    ------
    ModelFileError
        The file is not a readable vendor model: ``check`` names the check that failed
        (``"magic"``, ``"header_length"``, ``"payload_length"``, ``"json_length"``,
        ``"version"``, ``"encrypted"``, ``"flatbuffer.<table>.<field>"``, ...).
    OSError
        The path cannot be read.
    TypeError
        ``source`` is neither a path nor bytes.
    """
    from rknnx._rknnfile import read_model_file   # the reader alone: no runtime binding

    path = None
    if isinstance(source, (str, os.PathLike)):
        path = os.fspath(source)
        with open(path, "rb") as f:
            data = f.read()
    elif isinstance(source, (bytes, bytearray, memoryview)):
        data = source
    else:
        raise TypeError(f"source must be a path or bytes, got {type(source).__name__}")
    try:
        d = read_model_file(data)
    except ModelFileError as exc:
        exc.path = path
        raise
    c = d["container"]
    file_inputs = tuple(_tensor(t) for t in d["inputs"])
    file_outputs = tuple(_tensor(t) for t in d["outputs"])
    return ModelFile(
        path=path,
        container=Container(**c),
        format_version=d["format_version"], npu_family=d["npu_family"], chip=d["chip"],
        target_platform=d["target_platform"], toolkit_version=d["toolkit_version"],
        compiler_version=d["compiler_version"],
        compiler_version_int=d["compiler_version_int"], framework=d["framework"],
        dynamic=d["dynamic"],
        inputs=tuple(t.info() for t in file_inputs),
        outputs=tuple(t.info() for t in file_outputs),
        file_inputs=file_inputs, file_outputs=file_outputs,
        shape_sets=tuple(tuple(tuple(s) for s in ss) for ss in d["shape_sets"]),
        custom_ops=tuple(CustomOp(**o) for o in d["custom_ops"]),
        weight_size=d["weight_size"], internal_size=d["internal_size"],
        removed_weights=d.get("removed_weights", 0))


def is_vendor_file(source: Union[str, os.PathLike, bytes, bytearray, memoryview]) -> bool:
    """Whether a path or bytes start like a vendor model (``RKNN`` or ``CYPTRKNN``).

    Parameters
    ----------
    source : str, os.PathLike or bytes-like

    Returns
    -------
    bool
    """
    if isinstance(source, (str, os.PathLike)):
        with open(source, "rb") as f:
            head = f.read(8)
    else:
        head = bytes(memoryview(source)[:8])
    return head[:4] == MAGIC or head == ENCRYPTED_MAGIC


# --- which runtime loads which file ----------------------------------------------------------

@dataclass(frozen=True)
class RuntimeFacts:
    """What one vendor runtime does with each container version.

    Attributes
    ----------
    runtime : str
        ``"librknnrt 1.6.0"``, ``"librknnmrt 2.3.2"`` (the RV1103/RV1106 mini runtime).
    chips : tuple of str
        The chips it serves.
    reads : frozenset of int
        Container versions it was seen to load.
    refuses : dict
        Container version -> the runtime's own words when it refuses one.
    refuses_family : dict
        NPU family -> the runtime's words, for families it does not know.
    custom_ops : str
        ``""`` when it loads models with custom operators, else what happens.
    source : str
        Where the facts come from.
    int16 : str
        ``""`` when rknnx runs a file with int16 tensors (a ``w16a16i_dfp`` build) on it,
        else why not: the runtime loads such a file but answers a type for those tensors
        that rknnx cannot hold, so ``rknnx.Model`` refuses it (NotSupportedError).
    """

    runtime: str
    chips: tuple
    reads: frozenset
    refuses: dict
    refuses_family: dict
    source: str
    custom_ops: str = ""
    int16: str = ""


_GLIBC_CHIPS = ("RK3562", "RK3566", "RK3568", "RK3576", "RK3588", "RV1126B")
_MINI_CHIPS = ("RV1103", "RV1106", "RV1103B", "RV1106B", "RK2118")
# NPU families runtimes 1.5.2 and 1.6.0 do not know (RK3576, RV1126B files): their words.
_UNKNOWN_TO_1_X = {"RKNPU f2": "Meet unknown rknpu target string: RKNPU f2",
                   "RKNPU f3": "Meet unknown rknpu target string: RKNPU f3"}

#: The one table: container version against runtime version.  Sources: the vendor runtimes
#: run on the CPU for every file of the corpus (docs/rknn-file-format.md, "Which runtime
#: loads which file"), and board logs in public issues (airockchip/rknn-toolkit2 #254, #281,
#: rockchip-linux/rknn-toolkit2 #316: ``Invalid RKNN model version 6`` on old runtimes).
RUNTIME_FACTS: tuple = (
    RuntimeFacts(
        runtime="librknnrt 1.4.0", chips=_GLIBC_CHIPS, reads=frozenset({1, 2}),
        refuses={6: "Invalid RKNN model version 6", 0x1004: "Invalid RKNN format"},
        refuses_family={},
        source="runtime 1.4.0 (aarch64) on every corpus file and the container 1 files of "
               "rknpu2 c28b080; board logs (rknn-toolkit2 #316)"),
    RuntimeFacts(
        runtime="librknnrt 1.5.2", chips=_GLIBC_CHIPS, reads=frozenset({1, 2, 6}),
        refuses={0x1004: "Invalid RKNN format"},
        refuses_family=_UNKNOWN_TO_1_X,
        source="runtime 1.5.2 (armhf) on every corpus file and the container 1 files of "
               "rknpu2 c28b080",
        custom_ops="aborts the process in rknn_init (dual_residual_custom, toolkit 1.6.1, "
                   "after 'RKNN Model version: 1.6.1 not match with rknn runtime version')",
        int16="int16 tensors: it answers type 10 for them (INT4 in the 2.x header), which "
              "rknnx cannot hold in a numpy array; rknnx.Model refuses the file there "
              "(NotSupportedError)"),
    RuntimeFacts(
        runtime="librknnrt 1.6.0", chips=_GLIBC_CHIPS, reads=frozenset({1, 2, 6}),
        refuses={0x1004: "Invalid RKNN format"},
        refuses_family=_UNKNOWN_TO_1_X,
        source="runtime 1.6.0 (armhf) on every corpus file and the container 1 files of "
               "rknpu2 c28b080"),
    RuntimeFacts(
        runtime="librknnmrt 2.3.2", chips=_MINI_CHIPS, reads=frozenset({0x1004}),
        refuses={2: "incompatible model version: 2", 6: "incompatible model version: 6"},
        refuses_family={},
        source="the RV1106 mini runtime 2.3.2 (armhf, uClibc) on every corpus file"),
)


@dataclass(frozen=True)
class Support:
    """One runtime's verdict on one file.

    Attributes
    ----------
    runtime : str
    verdict : str
        ``"loads"``, ``"refuses"``, ``"crashes"``, ``"unusable"`` (the runtime loads the
        file, rknnx cannot use what it answers: the reason says why), ``"other chip"`` (the
        runtime does not serve the file's chip) or ``"unknown"`` (no record for this
        container version).
    reason : str
    """

    runtime: str
    verdict: str
    reason: str


def runtime_support(model: ModelFile) -> tuple:
    """Which vendor runtimes load a file, from :data:`RUNTIME_FACTS`.

    Parameters
    ----------
    model : ModelFile

    Returns
    -------
    tuple of Support
        One verdict per runtime of the table, in its order.
    """
    out = []
    ver = model.container.version
    for f in RUNTIME_FACTS:
        if model.chip and model.chip not in f.chips:
            out.append(Support(f.runtime, "other chip",
                               f"serves {', '.join(f.chips)}, not {model.chip}"))
        elif ver in f.refuses:
            out.append(Support(f.runtime, "refuses",
                               f"container {_ver(ver)}: {f.refuses[ver]}"))
        elif model.npu_family in f.refuses_family:
            out.append(Support(f.runtime, "refuses", f.refuses_family[model.npu_family]))
        elif ver in f.reads and model.custom_ops and f.custom_ops:
            out.append(Support(f.runtime, "crashes", f"custom operators: {f.custom_ops}"))
        elif ver in f.reads and f.int16 and any(
                t.dtype == "int16" for t in model.file_inputs + model.file_outputs):
            out.append(Support(f.runtime, "unusable", f.int16))
        elif ver in f.reads:
            out.append(Support(f.runtime, "loads", f"reads container {_ver(ver)}"))
        else:
            out.append(Support(f.runtime, "unknown",
                               f"no record of container {_ver(ver)} on this runtime"))
    return tuple(out)


def differences(model: ModelFile, answers: dict) -> tuple:
    """Where a runtime's answers for a file differ from what the file says.

    Parameters
    ----------
    model : ModelFile
    answers : dict
        ``{(query, index): attr}`` with query one of ``"INPUT_ATTR"``, ``"OUTPUT_ATTR"``,
        ``"NATIVE_INPUT_ATTR"``, ``"NATIVE_OUTPUT_ATTR"`` and attr a mapping with the
        ``rknn_tensor_attr`` fields ``name``, ``dims``, ``fmt``, ``type``, ``qnt_type``,
        ``zp``, ``scale``, ``size`` (rknn_api numbering); ``("IN_OUT_NUM", 0)`` may give
        ``n_input``/``n_output``.

    Returns
    -------
    tuple of str
        One line per difference; empty when the runtime agrees with the file on every
        field the file decodes (fields it leaves unknown are not compared).
    """
    out = []
    n = answers.get(("IN_OUT_NUM", 0))
    if n is not None and (n["n_input"], n["n_output"]) != (len(model.inputs),
                                                          len(model.outputs)):
        out.append(f"inputs/outputs: file {len(model.inputs)}/{len(model.outputs)}, runtime "
                   f"{n['n_input']}/{n['n_output']}")
    for t in model.file_inputs + model.file_outputs:
        role = t.role.upper()
        where = f"{t.role} {t.index} {t.name!r}"
        a = answers.get((f"{role}_ATTR", t.index))
        if a is None:
            out.append(f"{where}: the runtime gives no {role}_ATTR")
            continue
        pairs = [("name", t.name, a["name"])]
        if t.dtype is not None:
            pairs += [("dtype", t.dtype, _DTYPES.get(a["type"], a["type"])),
                      ("size", t.size, a["size"])]
        if "attr" in t.known:
            pairs += [("dims", tuple(t.dims), tuple(a["dims"])),
                      ("layout", t.layout, _LAYOUTS.get(a["fmt"], a["fmt"]))]
        if "qnt" in t.known:
            pairs += [("qnt_type", t.qnt_type, _QNT.get(a["qnt_type"], a["qnt_type"])),
                      ("zero_point", t.zero_point, a["zp"])]
            if abs(t.scale - a["scale"]) > 1e-6 * max(abs(a["scale"]), 1e-30):
                pairs.append(("scale", t.scale, a["scale"]))
        nat = answers.get((f"NATIVE_{role}_ATTR", t.index))
        if "native" in t.known and nat is not None:
            pairs += [("native dims", tuple(t.native_dims), tuple(nat["dims"])),
                      ("native layout", t.native_layout, _LAYOUTS.get(nat["fmt"], nat["fmt"])),
                      ("native size", t.native_size, nat["size"])]
        for what, mine, theirs in pairs:
            if mine != theirs:
                out.append(f"{where}: {what}: file {mine}, runtime {theirs}")
    return tuple(out)


def _ver(v: int) -> str:
    return hex(v) if v >= 0x1000 else str(v)


def __dir__():
    return sorted(__all__)


def __getattr__(name):
    if name == "TensorInfo":
        raise AttributeError(
            "rknnx.modelfile.TensorInfo is now FileTensor (ModelFile.file_inputs / "
            "file_outputs); ModelFile.inputs / outputs hold rknnx.TensorInfo, the type "
            "Model.inputs holds")
    raise AttributeError(f"module 'rknnx.modelfile' has no attribute {name!r}")


_KINDS = ((stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISSOCK, "a socket"))


def check_file(path: str, what: str = "model file") -> None:
    """Raise, saying which, unless `path` is a regular file (or a link to one):
    FileNotFoundError when nothing is there (or a symbolic link points nowhere), ValueError
    for something that is not a regular file (``/dev/null``, a pipe ...).  Callers say
    "directory" in their own words first."""
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        if os.path.islink(path):
            raise FileNotFoundError(f"{what} {path!r} is a symbolic link to "
                                    f"{os.readlink(path)!r}, which does not exist") from None
        raise FileNotFoundError(f"{what} {path!r} does not exist") from None
    if stat.S_ISREG(st.st_mode):
        return
    if stat.S_ISDIR(st.st_mode):
        raise IsADirectoryError(f"{what} {path!r} is a directory, not a file")
    kind = next((k for test, k in _KINDS if test(st.st_mode)), "not a file")
    raise ValueError(f"{what} {path!r} exists but is not a regular file (it is {kind}): "
                     "give the path of a .rknn file")
