"""Type stubs of rknnx._core, the low-level binding of librknnrt (RKNN C API 2.x)."""

import enum
import os
from types import TracebackType
from typing import Any, Iterator, NamedTuple, Optional, Sequence, Tuple, Union

import numpy as np

from rknnx.errors import (FlowError as FlowError, NotSupportedError as NotSupportedError,
                          RKNNError as RKNNError, RuntimeNotFoundError as RuntimeNotFoundError)

_Buffer = Any  # anything with the buffer protocol
_Path = Union[str, "os.PathLike[str]"]

# ---- runtime loader ----------------------------------------------------------------------
def emulator_path() -> str: ...
def load_runtime(path: Optional[_Path] = ...) -> dict: ...
def runtime_info() -> dict: ...
def runtime_chip() -> Optional[str]: ...
FALLBACK_SOURCE: str
#: where load_runtime() looks for librknnrt, in order, when neither a path nor
#: RKNNX_RUNTIME names one
SYSTEM_CANDIDATES: tuple[str, ...]
def api_function_names() -> list[str]: ...
def live_contexts() -> int: ...
def _require(name: str) -> None: ...

# ---- constants ---------------------------------------------------------------------------
class InitFlag(enum.IntFlag):
    PRIOR_HIGH = 0
    PRIOR_MEDIUM = 1
    PRIOR_LOW = 2
    ASYNC_MASK = 4
    COLLECT_PERF_MASK = 8
    MEM_ALLOC_OUTSIDE = 0x10
    SHARE_WEIGHT_MEM = 0x20
    FENCE_IN_OUTSIDE = 0x40
    FENCE_OUT_OUTSIDE = 0x80
    COLLECT_MODEL_INFO_ONLY = 0x100
    INTERNAL_ALLOC_OUTSIDE = 0x200
    EXECUTE_FALLBACK_PRIOR_DEVICE_GPU = 0x400
    ENABLE_SRAM = 0x800
    SHARE_SRAM = 0x1000
    DISABLE_PROC_HIGH_PRIORITY = 0x2000
    DISABLE_FLUSH_INPUT_MEM_CACHE = 0x4000
    DISABLE_FLUSH_OUTPUT_MEM_CACHE = 0x8000
    MODEL_BUFFER_ZERO_COPY = 0x10000

class QueryCmd(enum.IntEnum):
    IN_OUT_NUM = 0
    INPUT_ATTR = 1
    OUTPUT_ATTR = 2
    PERF_DETAIL = 3
    PERF_RUN = 4
    SDK_VERSION = 5
    MEM_SIZE = 6
    CUSTOM_STRING = 7
    NATIVE_INPUT_ATTR = 8
    NATIVE_OUTPUT_ATTR = 9
    NATIVE_NC1HWC2_INPUT_ATTR = 8
    NATIVE_NC1HWC2_OUTPUT_ATTR = 9
    NATIVE_NHWC_INPUT_ATTR = 10
    NATIVE_NHWC_OUTPUT_ATTR = 11
    DEVICE_MEM_INFO = 12
    INPUT_DYNAMIC_RANGE = 13
    CURRENT_INPUT_ATTR = 14
    CURRENT_OUTPUT_ATTR = 15
    CURRENT_NATIVE_INPUT_ATTR = 16
    CURRENT_NATIVE_OUTPUT_ATTR = 17

class TensorType(enum.IntEnum):
    FLOAT32 = 0
    FLOAT16 = 1
    INT8 = 2
    UINT8 = 3
    INT16 = 4
    UINT16 = 5
    INT32 = 6
    UINT32 = 7
    INT64 = 8
    BOOL = 9
    INT4 = 10
    BFLOAT16 = 11

class QntType(enum.IntEnum):
    NONE = 0
    DFP = 1
    AFFINE_ASYMMETRIC = 2

class TensorFormat(enum.IntEnum):
    NCHW = 0
    NHWC = 1
    NC1HWC2 = 2
    UNDEFINED = 3

class CoreMask(enum.IntFlag):
    AUTO = 0
    CORE_0 = 1
    CORE_1 = 2
    CORE_2 = 4
    CORE_0_1 = 3
    CORE_0_1_2 = 7
    ALL = 0xFFFF
    UNDEFINED = 0x10000

class MemFlag(enum.IntEnum):
    ALLOC_INSIDE = 1
    FROM_FD = 2
    FROM_PHYS = 3
    UNKNOWN = 4

class MemAllocFlag(enum.IntFlag):
    DEFAULT = 0
    CACHEABLE = 1
    NON_CACHEABLE = 2
    TRY_ALLOC_SRAM = 4
    ALLOC_NO_CONTEXT = 0x20000

class MemSyncMode(enum.IntEnum):
    TO_DEVICE = 1
    FROM_DEVICE = 2
    BIDIRECTIONAL = 3

class MatmulType(enum.IntEnum):
    FLOAT16_MM_FLOAT16_TO_FLOAT32 = 1
    INT8_MM_INT8_TO_INT32 = 2
    INT8_MM_INT8_TO_INT8 = 3
    FLOAT16_MM_FLOAT16_TO_FLOAT16 = 4
    FLOAT16_MM_INT8_TO_FLOAT32 = 5
    FLOAT16_MM_INT8_TO_FLOAT16 = 6
    FLOAT16_MM_INT4_TO_FLOAT32 = 7
    FLOAT16_MM_INT4_TO_FLOAT16 = 8
    INT8_MM_INT8_TO_FLOAT32 = 9
    INT4_MM_INT4_TO_INT16 = 10
    INT8_MM_INT4_TO_INT32 = 11
    FLOAT16_MM_INT4_TO_BFLOAT16 = 12
    INT8_MM_INT4_TO_FLOAT16 = 15

class MatmulLayout(enum.IntEnum):
    NORM = 0
    NATIVE = 1
    TP_NORM = 2

class MatmulQuantType(enum.IntEnum):
    PER_LAYER_SYM = 0
    PER_LAYER_ASYM = 1
    PER_CHANNEL_SYM = 2
    PER_CHANNEL_ASYM = 3
    PER_GROUP_SYM = 4
    PER_GROUP_ASYM = 5

class TargetType(enum.IntEnum):
    CPU = 1
    GPU = 2

SKIP_CUSTOM_OP_COMPUTE: int
RKNN_WARNING_SKIP_CUSTOM_OP_COMPUTE: int
RKNN_TARGET_TYPE_CPU: int
RKNN_TARGET_TYPE_GPU: int

# the vendor names as plain ints
RKNN_FLAG_ASYNC_MASK: int
RKNN_FLAG_COLLECT_MODEL_INFO_ONLY: int
RKNN_FLAG_COLLECT_PERF_MASK: int
RKNN_FLAG_DISABLE_FLUSH_INPUT_MEM_CACHE: int
RKNN_FLAG_DISABLE_FLUSH_OUTPUT_MEM_CACHE: int
RKNN_FLAG_DISABLE_PROC_HIGH_PRIORITY: int
RKNN_FLAG_ENABLE_SRAM: int
RKNN_FLAG_EXECUTE_FALLBACK_PRIOR_DEVICE_GPU: int
RKNN_FLAG_FENCE_IN_OUTSIDE: int
RKNN_FLAG_FENCE_OUT_OUTSIDE: int
RKNN_FLAG_INTERNAL_ALLOC_OUTSIDE: int
RKNN_FLAG_MEMORY_CACHEABLE: int
RKNN_FLAG_MEMORY_FLAGS_DEFAULT: int
RKNN_FLAG_MEMORY_NON_CACHEABLE: int
RKNN_FLAG_MEMORY_TRY_ALLOC_SRAM: int
RKNN_FLAG_MEM_ALLOC_OUTSIDE: int
RKNN_FLAG_MODEL_BUFFER_ZERO_COPY: int
RKNN_FLAG_PRIOR_HIGH: int
RKNN_FLAG_PRIOR_LOW: int
RKNN_FLAG_PRIOR_MEDIUM: int
RKNN_FLAG_SHARE_SRAM: int
RKNN_FLAG_SHARE_WEIGHT_MEM: int
RKNN_MAX_DIMS: int
RKNN_MAX_DYNAMIC_SHAPE_NUM: int
RKNN_MAX_NAME_LEN: int
RKNN_MAX_NUM_CHANNEL: int
RKNN_MEMORY_SYNC_BIDIRECTIONAL: int
RKNN_MEMORY_SYNC_FROM_DEVICE: int
RKNN_MEMORY_SYNC_TO_DEVICE: int
RKNN_MEM_FLAG_ALLOC_NO_CONTEXT: int
RKNN_NPU_CORE_0: int
RKNN_NPU_CORE_0_1: int
RKNN_NPU_CORE_0_1_2: int
RKNN_NPU_CORE_1: int
RKNN_NPU_CORE_2: int
RKNN_NPU_CORE_ALL: int
RKNN_NPU_CORE_AUTO: int
RKNN_NPU_CORE_UNDEFINED: int
RKNN_QUERY_CURRENT_INPUT_ATTR: int
RKNN_QUERY_CURRENT_NATIVE_INPUT_ATTR: int
RKNN_QUERY_CURRENT_NATIVE_OUTPUT_ATTR: int
RKNN_QUERY_CURRENT_OUTPUT_ATTR: int
RKNN_QUERY_CUSTOM_STRING: int
RKNN_QUERY_DEVICE_MEM_INFO: int
RKNN_QUERY_INPUT_ATTR: int
RKNN_QUERY_INPUT_DYNAMIC_RANGE: int
RKNN_QUERY_IN_OUT_NUM: int
RKNN_QUERY_MEM_SIZE: int
RKNN_QUERY_NATIVE_INPUT_ATTR: int
RKNN_QUERY_NATIVE_NC1HWC2_INPUT_ATTR: int
RKNN_QUERY_NATIVE_NC1HWC2_OUTPUT_ATTR: int
RKNN_QUERY_NATIVE_NHWC_INPUT_ATTR: int
RKNN_QUERY_NATIVE_NHWC_OUTPUT_ATTR: int
RKNN_QUERY_NATIVE_OUTPUT_ATTR: int
RKNN_QUERY_OUTPUT_ATTR: int
RKNN_QUERY_PERF_DETAIL: int
RKNN_QUERY_PERF_RUN: int
RKNN_QUERY_SDK_VERSION: int
RKNN_TENSOR_BFLOAT16: int
RKNN_TENSOR_BOOL: int
RKNN_TENSOR_FLOAT16: int
RKNN_TENSOR_FLOAT32: int
RKNN_TENSOR_INT16: int
RKNN_TENSOR_INT32: int
RKNN_TENSOR_INT4: int
RKNN_TENSOR_INT64: int
RKNN_TENSOR_INT8: int
RKNN_TENSOR_MEMORY_FLAGS_ALLOC_INSIDE: int
RKNN_TENSOR_MEMORY_FLAGS_FROM_FD: int
RKNN_TENSOR_MEMORY_FLAGS_FROM_PHYS: int
RKNN_TENSOR_MEMORY_FLAGS_UNKNOWN: int
RKNN_TENSOR_NC1HWC2: int
RKNN_TENSOR_NCHW: int
RKNN_TENSOR_NHWC: int
RKNN_TENSOR_QNT_AFFINE_ASYMMETRIC: int
RKNN_TENSOR_QNT_DFP: int
RKNN_TENSOR_QNT_NONE: int
RKNN_TENSOR_UINT16: int
RKNN_TENSOR_UINT32: int
RKNN_TENSOR_UINT8: int
RKNN_TENSOR_UNDEFINED: int
RKNN_FLOAT16_MM_FLOAT16_TO_FLOAT32: int
RKNN_INT8_MM_INT8_TO_INT32: int
RKNN_INT8_MM_INT8_TO_INT8: int
RKNN_FLOAT16_MM_FLOAT16_TO_FLOAT16: int
RKNN_FLOAT16_MM_INT8_TO_FLOAT32: int
RKNN_FLOAT16_MM_INT8_TO_FLOAT16: int
RKNN_FLOAT16_MM_INT4_TO_FLOAT32: int
RKNN_FLOAT16_MM_INT4_TO_FLOAT16: int
RKNN_INT8_MM_INT8_TO_FLOAT32: int
RKNN_INT4_MM_INT4_TO_INT16: int
RKNN_INT8_MM_INT4_TO_INT32: int
RKNN_FLOAT16_MM_INT4_TO_BFLOAT16: int
RKNN_INT8_MM_INT4_TO_FLOAT16: int
RKNN_MM_LAYOUT_NORM: int
RKNN_MM_LAYOUT_NATIVE: int
RKNN_MM_LAYOUT_TP_NORM: int
RKNN_QUANT_TYPE_PER_LAYER_SYM: int
RKNN_QUANT_TYPE_PER_LAYER_ASYM: int
RKNN_QUANT_TYPE_PER_CHANNEL_SYM: int
RKNN_QUANT_TYPE_PER_CHANNEL_ASYM: int
RKNN_QUANT_TYPE_PER_GROUP_SYM: int
RKNN_QUANT_TYPE_PER_GROUP_ASYM: int

# ---- typed query results -----------------------------------------------------------------
class InOutNum(NamedTuple):
    n_input: int
    n_output: int

class SdkVersion(NamedTuple):
    api_version: str
    drv_version: str

class MemSize(NamedTuple):
    total_weight_size: int
    total_internal_size: int
    total_dma_allocated_size: int
    total_sram_size: int
    free_sram_size: int

class PerfRun(NamedTuple):
    run_duration: int

class PerfDetail(NamedTuple):
    text: str

class InputRange(NamedTuple):
    index: int
    shape_number: int
    fmt: Union[TensorFormat, int]
    name: str
    n_dims: int
    dyn_range: Tuple[Tuple[int, ...], ...]

class DeviceMemInfo(NamedTuple):
    virt_addr: int
    phys_addr: int
    fd: int
    offset: int
    size: int
    flags: int

_QueryResult = Union[InOutNum, "TensorAttr", PerfDetail, PerfRun, SdkVersion, MemSize, str,
                     DeviceMemInfo, InputRange]

# ---- element types -----------------------------------------------------------------------
def dtype_of(tensor_type: Union[TensorType, int]) -> np.dtype: ...
def type_of_dtype(dtype: Any) -> TensorType: ...

# ---- classes -----------------------------------------------------------------------------
class TensorAttr:
    index: int
    n_dims: int
    dims: Tuple[int, ...]
    name: str
    n_elems: int
    size: int
    fmt: Union[TensorFormat, int]
    type: Union[TensorType, int]
    qnt_type: Union[QntType, int]
    fl: int
    zp: int
    scale: float
    w_stride: int
    size_with_stride: int
    pass_through: bool
    h_stride: int
    def __init__(self, index: int = 0, **fields: Any) -> None: ...
    @property
    def dtype(self) -> np.dtype: ...
    @property
    def shape(self) -> Tuple[int, ...]: ...
    @property
    def layout(self) -> str: ...
    @property
    def quantized(self) -> bool: ...
    @property
    def strides(self) -> Tuple[int, ...]: ...
    @property
    def nbytes_with_stride(self) -> int: ...
    @property
    def alloc_size(self) -> int: ...
    def copy(self) -> TensorAttr: ...
    def __copy__(self) -> TensorAttr: ...
    def __deepcopy__(self, memo: Any) -> TensorAttr: ...
    def to_bytes(self) -> bytes: ...
    @staticmethod
    def from_bytes(data: _Buffer) -> TensorAttr: ...
    def as_dict(self) -> dict[str, Any]: ...
    def __eq__(self, other: object) -> bool: ...

class TensorMem:
    @property
    def context(self) -> Optional[Union[Context, MatmulContext]]: ...
    @property
    def owner(self) -> Any: ...
    def close(self) -> None: ...
    @property
    def closed(self) -> bool: ...
    def __enter__(self) -> TensorMem: ...
    def __exit__(self, *exc: Any) -> None: ...
    @property
    def virt_addr(self) -> int: ...
    @property
    def phys_addr(self) -> int: ...
    @property
    def fd(self) -> int: ...
    @property
    def offset(self) -> int: ...
    @property
    def size(self) -> int: ...
    @property
    def flags(self) -> Union[MemFlag, int]: ...
    @property
    def priv_data(self) -> int: ...
    @property
    def exports(self) -> int: ...
    @property
    def attr(self) -> Optional[TensorAttr]: ...
    @property
    def shape(self) -> Tuple[int, ...]: ...
    @property
    def strides(self) -> Tuple[int, ...]: ...
    @property
    def dtype(self) -> np.dtype: ...
    def bind(self, attr: TensorAttr) -> TensorMem: ...
    def unbind(self) -> None: ...
    def sync(self, mode: Union[MemSyncMode, int] = ...,
             context: Optional[Union[Context, MatmulContext]] = ...) -> None: ...
    def __buffer__(self, flags: int) -> memoryview: ...
    def __dlpack__(self, *, stream: None = ..., max_version: Optional[Tuple[int, int]] = ...,
                   dl_device: Optional[Tuple[int, int]] = ..., copy: Optional[bool] = ...) -> Any: ...
    def __dlpack_device__(self) -> Tuple[int, int]: ...
    def raw(self) -> memoryview: ...

def create_mem2(size: int, flags: Union[MemAllocFlag, int] = ...,
                context: Optional[Context] = ...) -> TensorMem: ...

class Input:
    buf: _Buffer
    index: Optional[int]
    type: Optional[Union[TensorType, int]]
    fmt: Optional[Union[TensorFormat, int]]
    pass_through: bool
    def __init__(self, buf: _Buffer, index: Optional[int] = ..., type: Optional[Union[TensorType, int]] = ...,
                 fmt: Optional[Union[TensorFormat, int]] = ..., pass_through: bool = ...) -> None: ...

class Output:
    @property
    def attr(self) -> TensorAttr: ...
    @property
    def index(self) -> int: ...
    @property
    def released(self) -> bool: ...
    @property
    def want_float(self) -> bool: ...
    @property
    def size(self) -> int: ...
    @property
    def shape(self) -> Tuple[int, ...]: ...
    @property
    def dtype(self) -> np.dtype: ...
    def __buffer__(self, flags: int) -> memoryview: ...
    def numpy(self) -> np.ndarray: ...

class Outputs(Sequence[Output]):
    def __len__(self) -> int: ...
    def __getitem__(self, i: Any) -> Any: ...
    def __iter__(self) -> Iterator[Output]: ...
    @property
    def frame_id(self) -> int: ...
    @property
    def released(self) -> bool: ...
    def release(self) -> None: ...
    def numpy(self) -> list[np.ndarray]: ...
    def __enter__(self) -> Outputs: ...
    def __exit__(self, *exc: Any) -> None: ...

class _ModelRun:
    """The compiled half of rknnx.Model (internal): its run()."""
    _last: Any
    def _fast_setup(self, ctx: Context, own: Any, lock: Any, family: Any, specs: Any,
                    formats: Any, fast: bool, pixel: bool, /) -> None: ...
    def run(self, *inputs: Any, raw: bool = False, out: Optional[Sequence[np.ndarray]] = None,
            data_format: Optional[str] = None,
            pass_through: Optional[Sequence[bool]] = None) -> list[np.ndarray]: ...

class Context:
    @property
    def flags(self) -> int: ...
    @property
    def last_frame_id(self) -> int: ...
    def __init__(self, model: Union[_Path, _Buffer, None] = ..., flags: Union[InitFlag, int] = ..., *,
                 share_weights_with: Optional[Context] = ..., model_mem: Optional[TensorMem] = ...,
                 model_offset: int = ..., model_size: Optional[int] = ...) -> None: ...
    def close(self) -> None: ...
    @property
    def closed(self) -> bool: ...
    @property
    def busy_in_this_thread(self) -> bool: ...
    def __enter__(self) -> Context: ...
    def __exit__(self, exc_type: Optional[type], exc: Optional[BaseException],
                 tb: Optional[TracebackType]) -> None: ...
    @property
    def handle(self) -> int: ...
    @property
    def flow(self) -> str: ...
    @property
    def chip(self) -> str | None: ...
    @property
    def is_dynamic(self) -> bool: ...
    @property
    def input_ranges(self) -> Tuple[InputRange, ...]: ...
    @property
    def mems(self) -> list[TensorMem]: ...
    @property
    def bindings(self) -> dict[Any, TensorMem]: ...
    @property
    def n_input(self) -> int: ...
    @property
    def n_output(self) -> int: ...
    @property
    def input_attrs(self) -> Tuple[TensorAttr, ...]: ...
    @property
    def output_attrs(self) -> Tuple[TensorAttr, ...]: ...
    def query(self, cmd: Union[QueryCmd, int], index: int = ...) -> _QueryResult: ...
    def set_core_mask(self, mask: Union[CoreMask, int]) -> None: ...
    def set_batch_core_num(self, core_num: int) -> None: ...
    def dup(self) -> Context: ...
    def set_input_shape(self, attr: TensorAttr) -> None: ...
    def register_custom_ops(self, ops: Union[CustomOp, Sequence[CustomOp]]) -> None: ...
    @property
    def custom_ops(self) -> list[CustomOp]: ...
    def set_input_shapes(self, attrs: Sequence[TensorAttr]) -> None: ...
    def inputs_set(self, inputs: Union[Sequence[Union[_Buffer, Input]], _Buffer, Input]) -> None: ...
    def run(self, *, non_block: bool = ..., timeout_ms: int = ...) -> int: ...
    def wait(self, *, timeout_ms: int = ...) -> int: ...
    def infer(self, inputs: Sequence[_Buffer], out: Sequence[_Buffer], *,
              want_float: bool = ..., fast_only: bool = ...) -> Optional[Sequence[_Buffer]]: ...
    def outputs_get(self, want_float: bool = ..., out: Optional[Sequence[_Buffer]] = ...) -> Any: ...
    def outputs_release(self, outputs: Outputs) -> None: ...
    def set_io_mem(self, mem: TensorMem, attr: TensorAttr) -> None: ...
    def set_weight_mem(self, mem: TensorMem) -> None: ...
    def set_internal_mem(self, mem: TensorMem) -> None: ...
    def create_mem(self, size: int) -> TensorMem: ...
    def create_mem2(self, size: int, flags: Union[MemAllocFlag, int] = ...) -> TensorMem: ...
    def create_mem_from_fd(self, fd: Any, size: int, offset: int = ..., virt_addr: Any = ..., *,
                           owner: Any = ...) -> TensorMem: ...
    def create_mem_from_phys(self, phys_addr: int, size: int, virt_addr: Any = ..., *,
                             owner: Any = ...) -> TensorMem: ...
    def create_mem_from_mb_blk(self, mb_blk: int, offset: int = ..., *, owner: Any = ...) -> TensorMem: ...

# ---- matmul --------------------------------------------------------------------------------
class MatmulInfo(NamedTuple):
    M: int
    K: int
    N: int
    type: MatmulType
    B_layout: MatmulLayout
    AC_layout: MatmulLayout
    B_quant_type: MatmulQuantType
    AC_quant_type: MatmulQuantType
    group_size: int
    iommu_domain_id: int

class MatmulShape(NamedTuple):
    M: int
    K: int
    N: int

class MatmulTensorAttr:
    @property
    def name(self) -> str: ...
    @property
    def n_dims(self) -> int: ...
    @property
    def dims(self) -> Tuple[int, ...]: ...
    @property
    def size(self) -> int: ...
    @property
    def type(self) -> Union[TensorType, int]: ...
    @property
    def packed(self) -> bool: ...
    @property
    def dtype(self) -> np.dtype: ...
    @property
    def shape(self) -> Tuple[int, ...]: ...
    def copy(self) -> MatmulTensorAttr: ...
    def __eq__(self, other: object) -> bool: ...

class MatmulIOAttr(NamedTuple):
    A: MatmulTensorAttr
    B: MatmulTensorAttr
    C: MatmulTensorAttr

class QuantParams(NamedTuple):
    name: str
    scale: np.ndarray
    zp: np.ndarray

_MatmulTensor = Union[str, MatmulTensorAttr]

class MatmulContext:
    def __init__(self, M: Optional[int] = ..., K: Optional[int] = ..., N: Optional[int] = ...,
                 type: Optional[Union[MatmulType, int]] = ...,
                 B_layout: Union[MatmulLayout, int] = ..., AC_layout: Union[MatmulLayout, int] = ...,
                 B_quant_type: Union[MatmulQuantType, int] = ...,
                 AC_quant_type: Union[MatmulQuantType, int] = ..., group_size: int = ...,
                 iommu_domain_id: int = ..., *,
                 shapes: Optional[Sequence[Tuple[int, int, int]]] = ...) -> None: ...
    def close(self) -> None: ...
    @property
    def closed(self) -> bool: ...
    @property
    def busy_in_this_thread(self) -> bool: ...
    def __enter__(self) -> MatmulContext: ...
    def __exit__(self, *exc: Any) -> None: ...
    @property
    def handle(self) -> int: ...
    @property
    def mems(self) -> list[TensorMem]: ...
    @property
    def bindings(self) -> dict[Any, TensorMem]: ...
    @property
    def info(self) -> MatmulInfo: ...
    @property
    def shapes(self) -> Tuple[MatmulShape, ...]: ...
    @property
    def shape(self) -> MatmulShape: ...
    @property
    def dynamic(self) -> bool: ...
    @property
    def io_attr(self) -> MatmulIOAttr: ...
    @property
    def io_attrs(self) -> Tuple[MatmulIOAttr, ...]: ...
    def create_mem(self, size: Union[int, _MatmulTensor]) -> TensorMem: ...
    def set_io_mem(self, mem: TensorMem, which: _MatmulTensor) -> None: ...
    def set_core_mask(self, mask: Union[CoreMask, int]) -> None: ...
    def set_quant_params(self, name: str, scale: Any, zp: Any = ...) -> None: ...
    def get_quant_params(self) -> Tuple[QuantParams, float]: ...
    def set_dynamic_shape(self, shape: Tuple[int, int, int]) -> None: ...
    def run(self) -> None: ...

def b_normal_layout_to_native_layout(B: Any, K: int, N: int,
                                     info: Union[MatmulContext, MatmulType, int]) -> np.ndarray: ...
def pack_int4(values: Any) -> np.ndarray: ...
def unpack_int4(packed: Any, count: Optional[int] = ...) -> np.ndarray: ...

# ---- custom operators ----------------------------------------------------------------------
_Callback = Any  # (op_ctx: CustomOpContext, inputs: list, outputs: list) -> Optional[int]

class CustomOp:
    @property
    def op_type(self) -> str: ...
    @property
    def compute(self) -> _Callback: ...
    @property
    def init(self) -> Optional[_Callback]: ...
    @property
    def prepare(self) -> Optional[_Callback]: ...
    @property
    def destroy(self) -> Optional[Any]: ...
    @property
    def target(self) -> TargetType: ...
    @property
    def version(self) -> int: ...
    def __init__(self, op_type: str, compute: _Callback, init: Optional[_Callback] = ...,
                 prepare: Optional[_Callback] = ..., destroy: Optional[Any] = ..., *,
                 target: Union[TargetType, int] = ..., version: int = ...) -> None: ...

class CustomOpContext:
    state: Any
    @property
    def op(self) -> CustomOp: ...
    @property
    def op_type(self) -> str: ...
    @property
    def target(self) -> TargetType: ...
    @property
    def input_attrs(self) -> Optional[Tuple[TensorAttr, ...]]: ...
    @property
    def output_attrs(self) -> Optional[Tuple[TensorAttr, ...]]: ...
    def get_op_attr(self, name: str) -> np.ndarray: ...
