"""The C API through ctypes, for the emulator runtime tests (tests/emulator/test_emu_api_*.py).

The emulator library is found by ``rknnx.emulator.library_path`` (env ``RKNNX_RUNTIME`` when it
names a library, else the one installed with the package) and driven with
ctypes, independently of the compiled extension.  Results are compared with the numpy
reference of the model half (``rknnx.emulator.reference``).
"""

from __future__ import annotations

import ctypes as C
import pathlib

import numpy as np
import pytest


ROOT = pathlib.Path(__file__).resolve().parents[2]

# ---- the pure-Python emulator package, without importing the compiled extension ----------


from rknnx.emulator import ModelBuilder, control, reference, samples

# ---- constants ------------------------------------------------------------------------------
SUCC, FAIL, TIMEOUT, MALLOC_FAIL, PARAM_INVALID = 0, -1, -2, -4, -5
MODEL_INVALID, CTX_INVALID, INPUT_INVALID, OUTPUT_INVALID = -6, -7, -8, -9
DEVICE_UNAVAILABLE, TARGET_PLATFORM_UNMATCH = -3, -13

Q_IN_OUT_NUM, Q_INPUT_ATTR, Q_OUTPUT_ATTR, Q_PERF_DETAIL, Q_PERF_RUN = 0, 1, 2, 3, 4
Q_SDK_VERSION, Q_MEM_SIZE, Q_CUSTOM_STRING, Q_NATIVE_INPUT_ATTR, Q_NATIVE_OUTPUT_ATTR = 5, 6, 7, 8, 9
Q_NATIVE_NHWC_INPUT_ATTR, Q_NATIVE_NHWC_OUTPUT_ATTR, Q_DEVICE_MEM_INFO = 10, 11, 12
Q_INPUT_DYNAMIC_RANGE, Q_CURRENT_INPUT_ATTR, Q_CURRENT_OUTPUT_ATTR = 13, 14, 15
Q_CURRENT_NATIVE_INPUT_ATTR, Q_CURRENT_NATIVE_OUTPUT_ATTR = 16, 17

F32, F16, I8, U8, I16, U16, I32, U32, I64, BOOL = range(10)
NCHW, NHWC, NC1HWC2, UNDEFINED = 0, 1, 2, 3
NP_TYPES = {F32: np.float32, F16: np.float16, I8: np.int8, U8: np.uint8, I16: np.int16,
            U16: np.uint16, I32: np.int32, U32: np.uint32, I64: np.int64, BOOL: np.bool_}
TYPE_CODES = {"float32": F32, "float16": F16, "int8": I8, "uint8": U8, "int16": I16,
              "uint16": U16, "int32": I32, "uint32": U32, "int64": I64, "bool": BOOL}

FLAG_ASYNC, FLAG_PERF, FLAG_MEM_OUTSIDE, FLAG_SHARE_WEIGHT = 0x4, 0x8, 0x10, 0x20
FLAG_INFO_ONLY, FLAG_INTERNAL_OUTSIDE = 0x100, 0x200
FLAG_NO_FLUSH_IN, FLAG_NO_FLUSH_OUT, FLAG_MODEL_ZERO_COPY = 0x4000, 0x8000, 0x10000
MEM_CACHEABLE, MEM_NON_CACHEABLE, MEM_TRY_SRAM, MEM_NO_CONTEXT = 1, 2, 4, 0x20000
SYNC_TO_DEVICE, SYNC_FROM_DEVICE, SYNC_BIDIR = 1, 2, 3

PLATFORMS = ["RK3588", "RK3566", "RV1106"]

# ---- ABI structs (checked against the ABI facts by tests/abi/test_abi.py) ----------------------------------------------------------------------------


class TensorAttr(C.Structure):
    _fields_ = [("index", C.c_uint32), ("n_dims", C.c_uint32), ("dims", C.c_uint32 * 16),
                ("name", C.c_char * 256), ("n_elems", C.c_uint32), ("size", C.c_uint32),
                ("fmt", C.c_int), ("type", C.c_int), ("qnt_type", C.c_int), ("fl", C.c_int8),
                ("zp", C.c_int32), ("scale", C.c_float), ("w_stride", C.c_uint32),
                ("size_with_stride", C.c_uint32), ("pass_through", C.c_uint8),
                ("h_stride", C.c_uint32)]

    @property
    def shape(self):
        return tuple(self.dims[:self.n_dims])


class InOutNum(C.Structure):
    _fields_ = [("n_input", C.c_uint32), ("n_output", C.c_uint32)]


class TensorMem(C.Structure):
    _fields_ = [("virt_addr", C.c_void_p), ("phys_addr", C.c_uint64), ("fd", C.c_int32),
                ("offset", C.c_int32), ("size", C.c_uint32), ("flags", C.c_uint32),
                ("priv_data", C.c_void_p)]


class Input(C.Structure):
    _fields_ = [("index", C.c_uint32), ("buf", C.c_void_p), ("size", C.c_uint32),
                ("pass_through", C.c_uint8), ("type", C.c_int), ("fmt", C.c_int)]


class Output(C.Structure):
    _fields_ = [("want_float", C.c_uint8), ("is_prealloc", C.c_uint8), ("index", C.c_uint32),
                ("buf", C.c_void_p), ("size", C.c_uint32)]


class InitExtend(C.Structure):
    _fields_ = [("ctx", control.RKNN_CONTEXT), ("real_model_offset", C.c_int32),
                ("real_model_size", C.c_uint32), ("model_buffer_fd", C.c_int32),
                ("model_buffer_flags", C.c_uint32), ("reserved", C.c_uint8 * 112)]


class RunExtend(C.Structure):
    _fields_ = [("frame_id", C.c_uint64), ("non_block", C.c_int32), ("timeout_ms", C.c_int32),
                ("fence_fd", C.c_int32)]


class OutputExtend(C.Structure):
    _fields_ = [("frame_id", C.c_uint64)]


class PerfDetail(C.Structure):
    _fields_ = [("perf_data", C.c_char_p), ("data_len", C.c_uint64)]


class PerfRun(C.Structure):
    _fields_ = [("run_duration", C.c_int64)]


class SdkVersion(C.Structure):
    _fields_ = [("api_version", C.c_char * 256), ("drv_version", C.c_char * 256)]


class MemSize(C.Structure):
    _fields_ = [("total_weight_size", C.c_uint32), ("total_internal_size", C.c_uint32),
                ("total_dma_allocated_size", C.c_uint64), ("total_sram_size", C.c_uint32),
                ("free_sram_size", C.c_uint32), ("reserved", C.c_uint32 * 10)]


class CustomString(C.Structure):
    _fields_ = [("string", C.c_char * 1024)]


class InputRange(C.Structure):
    _fields_ = [("index", C.c_uint32), ("shape_number", C.c_uint32), ("fmt", C.c_int),
                ("name", C.c_char * 256), ("dyn_range", (C.c_uint32 * 16) * 512),
                ("n_dims", C.c_uint32)]


class GpuOpContext(C.Structure):
    _fields_ = [("cl_context", C.c_void_p), ("cl_command_queue", C.c_void_p),
                ("cl_kernel", C.c_void_p)]


class CustomOpContext(C.Structure):
    _fields_ = [("target", C.c_int), ("internal_ctx", control.RKNN_CONTEXT), ("gpu_ctx", GpuOpContext),
                ("priv_data", C.c_void_p)]


class CustomOpTensor(C.Structure):
    _fields_ = [("attr", TensorAttr), ("mem", TensorMem)]


class CustomOpAttr(C.Structure):
    _fields_ = [("name", C.c_char * 256), ("dtype", C.c_int), ("n_elems", C.c_uint32),
                ("data", C.c_void_p)]


class MatmulInfo(C.Structure):
    _fields_ = [("M", C.c_int32), ("K", C.c_int32), ("N", C.c_int32), ("type", C.c_int),
                ("B_layout", C.c_int16), ("B_quant_type", C.c_int16), ("AC_layout", C.c_int16),
                ("AC_quant_type", C.c_int16), ("iommu_domain_id", C.c_int32),
                ("group_size", C.c_int16), ("reserved", C.c_int8 * 34)]


class MMTensorAttr(C.Structure):
    _fields_ = [("name", C.c_char * 256), ("n_dims", C.c_uint32), ("dims", C.c_uint32 * 16),
                ("size", C.c_uint32), ("type", C.c_int)]


class MMIOAttr(C.Structure):
    _fields_ = [("A", MMTensorAttr), ("B", MMTensorAttr), ("C", MMTensorAttr)]


class QuantParams(C.Structure):
    _fields_ = [("name", C.c_char * 256), ("scale", C.POINTER(C.c_float)), ("scale_len", C.c_int32),
                ("zp", C.POINTER(C.c_int32)), ("zp_len", C.c_int32)]


class MMShape(C.Structure):
    _fields_ = [("M", C.c_int32), ("K", C.c_int32), ("N", C.c_int32)]


CUSTOM_CB = C.CFUNCTYPE(C.c_int, C.POINTER(CustomOpContext), C.POINTER(CustomOpTensor), C.c_uint32,
                        C.POINTER(CustomOpTensor), C.c_uint32)
CUSTOM_DESTROY = C.CFUNCTYPE(C.c_int, C.POINTER(CustomOpContext))


class CustomOp(C.Structure):
    _fields_ = [("version", C.c_uint32), ("target", C.c_int), ("op_type", C.c_char * 256),
                ("cl_kernel_name", C.c_char * 256), ("cl_kernel_source", C.c_char_p),
                ("cl_source_size", C.c_uint64), ("cl_build_options", C.c_char * 256),
                ("init", CUSTOM_CB), ("prepare", CUSTOM_CB), ("compute", CUSTOM_CB),
                ("compute_native", CUSTOM_CB), ("destroy", CUSTOM_DESTROY)]


assert C.sizeof(TensorAttr) == 376 and C.sizeof(Input) == 32 and C.sizeof(Output) == 24
assert C.sizeof(TensorMem) == 40 and C.sizeof(InitExtend) == 136 and C.sizeof(MemSize) == 64
assert C.sizeof(InputRange) == 33040 and C.sizeof(CustomOp) == 832

QUERY_STRUCT = {Q_IN_OUT_NUM: InOutNum, Q_PERF_DETAIL: PerfDetail, Q_PERF_RUN: PerfRun,
                Q_SDK_VERSION: SdkVersion, Q_MEM_SIZE: MemSize, Q_CUSTOM_STRING: CustomString,
                Q_DEVICE_MEM_INFO: TensorMem, Q_INPUT_DYNAMIC_RANGE: InputRange}
for _q in (1, 2, 8, 9, 10, 11, 14, 15, 16, 17):
    QUERY_STRUCT[_q] = TensorAttr

# ---- the library ---------------------------------------------------------------------------


def library_path() -> pathlib.Path:
    try:
        return control.find_emulator_library()
    except FileNotFoundError as exc:
        # a missing emulator is a broken build, not a reason to skip ~300 tests
        pytest.fail(f"{exc} (build it with `pip install .`, or set RKNNX_RUNTIME to a built emulator library)")


_LIB = None


def api():
    """The emulator library with argtypes for the whole vendor API (loaded once)."""
    global _LIB
    if _LIB is not None:
        return _LIB
    lib = C.CDLL(str(library_path()))
    P, u32, i32, u64, ctx = C.c_void_p, C.c_uint32, C.c_int32, C.c_uint64, control.RKNN_CONTEXT
    sigs = {
        "rknn_init": (C.c_int, [C.POINTER(ctx), P, u32, u32, C.POINTER(InitExtend)]),
        "rknn_dup_context": (C.c_int, [C.POINTER(ctx), C.POINTER(ctx)]),
        "rknn_destroy": (C.c_int, [ctx]),
        "rknn_query": (C.c_int, [ctx, C.c_int, P, u32]),
        "rknn_inputs_set": (C.c_int, [ctx, u32, C.POINTER(Input)]),
        "rknn_set_batch_core_num": (C.c_int, [ctx, C.c_int]),
        "rknn_set_core_mask": (C.c_int, [ctx, C.c_int]),
        "rknn_run": (C.c_int, [ctx, C.POINTER(RunExtend)]),
        "rknn_wait": (C.c_int, [ctx, C.POINTER(RunExtend)]),
        "rknn_outputs_get": (C.c_int, [ctx, u32, C.POINTER(Output), C.POINTER(OutputExtend)]),
        "rknn_outputs_release": (C.c_int, [ctx, u32, C.POINTER(Output)]),
        "rknn_create_mem_from_phys": (C.POINTER(TensorMem), [ctx, u64, P, u32]),
        "rknn_create_mem_from_fd": (C.POINTER(TensorMem), [ctx, i32, P, u32, i32]),
        "rknn_create_mem_from_mb_blk": (C.POINTER(TensorMem), [ctx, P, i32]),
        "rknn_create_mem": (C.POINTER(TensorMem), [ctx, u32]),
        "rknn_create_mem2": (C.POINTER(TensorMem), [ctx, u64, u64]),
        "rknn_destroy_mem": (C.c_int, [ctx, P]),
        "rknn_set_weight_mem": (C.c_int, [ctx, P]),
        "rknn_set_internal_mem": (C.c_int, [ctx, P]),
        "rknn_set_io_mem": (C.c_int, [ctx, P, C.POINTER(TensorAttr)]),
        "rknn_set_input_shape": (C.c_int, [ctx, C.POINTER(TensorAttr)]),
        "rknn_set_input_shapes": (C.c_int, [ctx, u32, C.POINTER(TensorAttr)]),
        "rknn_mem_sync": (C.c_int, [ctx, P, C.c_int]),
        "rknn_register_custom_ops": (C.c_int, [ctx, C.POINTER(CustomOp), u32]),
        "rknn_custom_op_get_op_attr": (None, [C.POINTER(CustomOpContext), C.c_char_p,
                                               C.POINTER(CustomOpAttr)]),
    }
    for name, (res, args) in sigs.items():
        f = getattr(lib, name)
        f.restype, f.argtypes = res, args
    _LIB = lib
    return lib


def ctl() -> "control.EmulatorControl":
    return control.EmulatorControl(api())


def addr(mem) -> int:
    """The address of a rknn_tensor_mem* as an int (None for NULL)."""
    return C.cast(mem, C.c_void_p).value


def mem_view(mem, nbytes=None, dtype=np.uint8) -> np.ndarray:
    """A numpy view of a mem's CPU memory (virt_addr + offset)."""
    m = mem.contents
    n = m.size if nbytes is None else nbytes
    buf = (C.c_uint8 * n).from_address(m.virt_addr + m.offset)
    return np.frombuffer(buf, dtype=np.uint8).view(dtype)


# ---- a thin wrapper over one context -----------------------------------------------------------


class RknnError(Exception):
    def __init__(self, func, code):
        super().__init__(f"{func} failed: {code}")
        self.func, self.code = func, code


def check(func, rc):
    if rc != 0:
        raise RknnError(func, rc)
    return rc


class Ctx:
    """One rknn_context through ctypes; destroyed by close() / the fixture."""

    def __init__(self, model: bytes, flags: int = 0, extend: InitExtend = None):
        self.lib = api()
        self.model = model
        h = control.RKNN_CONTEXT(0)
        self._buf = C.create_string_buffer(model, len(model))
        check("rknn_init", self.lib.rknn_init(C.byref(h), self._buf, len(model), flags,
                                              C.byref(extend) if extend is not None else None))
        self.h = h.value
        self.mems = []
        rc, n = self.query_rc(Q_IN_OUT_NUM)   # fails on COLLECT_MODEL_INFO_ONLY contexts
        self.n_in, self.n_out = (n.n_input, n.n_output) if rc == 0 else (0, 0)

    @classmethod
    def wrap(cls, handle: int, model: bytes):
        self = cls.__new__(cls)
        self.lib, self.model, self.h, self.mems = api(), model, handle, []
        n = self.query(Q_IN_OUT_NUM)
        self.n_in, self.n_out = n.n_input, n.n_output
        return self

    def close(self):
        for m in self.mems:
            self.lib.rknn_destroy_mem(self.h, m)
        self.mems = []
        if self.h:
            self.lib.rknn_destroy(self.h)
            self.h = 0

    def query_rc(self, cmd, index=0, size=None):
        s = QUERY_STRUCT[cmd]()
        if hasattr(s, "index"):
            s.index = index
        rc = self.lib.rknn_query(self.h, cmd, C.byref(s), C.sizeof(s) if size is None else size)
        return rc, s

    def query(self, cmd, index=0):
        rc, s = self.query_rc(cmd, index)
        check(f"rknn_query({cmd})", rc)
        return s

    def in_attr(self, i, cmd=Q_INPUT_ATTR):
        return self.query(cmd, i)

    def out_attr(self, o, cmd=Q_OUTPUT_ATTR):
        return self.query(cmd, o)

    # general flow
    def inputs_set_rc(self, arrays, types=None, fmts=None, pass_through=0):
        ins = (Input * len(arrays))()
        keep = []
        for k, a in enumerate(arrays):
            a = np.ascontiguousarray(a)
            keep.append(a)
            ins[k].index = k
            ins[k].buf = a.ctypes.data
            ins[k].size = a.nbytes
            ins[k].pass_through = pass_through
            ins[k].type = types[k] if types else TYPE_CODES[str(a.dtype)]
            ins[k].fmt = fmts[k] if fmts else (NHWC if a.ndim == 4 else UNDEFINED)
        return self.lib.rknn_inputs_set(self.h, len(arrays), ins)

    def inputs_set(self, arrays, **kw):
        check("rknn_inputs_set", self.inputs_set_rc(arrays, **kw))

    def run_rc(self, extend=None):
        return self.lib.rknn_run(self.h, C.byref(extend) if extend is not None else None)

    def run(self, extend=None):
        check("rknn_run", self.run_rc(extend))

    def outputs_get(self, want_float=1, indices=None, extend=None):
        """Runtime-allocated outputs, copied into numpy arrays, then released."""
        idx = list(range(self.n_out)) if indices is None else list(indices)
        outs = (Output * len(idx))()
        for k, o in enumerate(idx):
            outs[k].index = o
            outs[k].want_float = want_float
        check("rknn_outputs_get", self.lib.rknn_outputs_get(
            self.h, len(idx), outs, C.byref(extend) if extend is not None else None))
        res = []
        for k, o in enumerate(idx):
            a = self.out_attr(o)
            dt = np.float32 if want_float else NP_TYPES[a.type]
            raw = C.string_at(outs[k].buf, outs[k].size)
            res.append(np.frombuffer(raw, dtype=dt).reshape(a.shape).copy())
        check("rknn_outputs_release", self.lib.rknn_outputs_release(self.h, len(idx), outs))
        return res

    # zero-copy
    def create_mem(self, size, flags=None):
        m = (self.lib.rknn_create_mem(self.h, size) if flags is None
             else self.lib.rknn_create_mem2(self.h, size, flags))
        assert addr(m), "create_mem returned NULL"
        self.mems.append(m)
        return m

    def destroy_mem(self, m):
        self.mems = [x for x in self.mems if addr(x) != addr(m)]
        return self.lib.rknn_destroy_mem(self.h, m)

    def set_io_mem(self, m, attr):
        return self.lib.rknn_set_io_mem(self.h, m, C.byref(attr))

    def sync(self, m, mode):
        return self.lib.rknn_mem_sync(self.h, m, mode)


# ---- fixtures ---------------------------------------------------------------------------------


@pytest.fixture
def emu():
    """The controls, reset around each test (platform, NPU time, injections, log level)."""
    c = ctl()
    c.set_platform(None)
    c.set_npu_time_us(0)
    c.clear_injections()
    c.set_log_level(None)
    yield c
    c.set_platform(None)
    c.set_npu_time_us(0)
    c.clear_injections()
    c.set_log_level(None)


@pytest.fixture
def make_ctx(emu):
    """make_ctx(model_bytes, flags=0, platform=None) -> Ctx; all closed at teardown."""
    made = []

    def make(model, flags=0, platform=None, extend=None):
        if platform:
            emu.set_platform(platform)
        c = Ctx(model, flags, extend)
        made.append(c)
        return c

    yield make
    for c in made:
        c.close()


def set_platform_model(emu, platform, builder=None, **kw):
    """Select `platform` and build the sample `builder` for it."""
    emu.set_platform(platform)
    return (builder or samples.tiny_int8_add)(target=platform, **kw)


# ---- reference helpers ---------------------------------------------------------------------------


def model_input_from_user(desc_t, user: np.ndarray, user_fmt: int) -> np.ndarray:
    """What the runtime feeds the executor for a user array (pass_through 0): layout to the
    model's, mean/std in float32, then quantize / cast (the emulator's documented rule)."""
    x = np.asarray(user)
    if x.ndim == 4 and desc_t.fmt in ("NHWC", "NCHW"):
        user_is_nhwc = user_fmt in (NHWC,) or (user_fmt == UNDEFINED and desc_t.fmt == "NHWC")
        if user_is_nhwc and desc_t.fmt == "NCHW":
            x = x.transpose(0, 3, 1, 2)
        elif not user_is_nhwc and desc_t.fmt == "NHWC":
            x = x.transpose(0, 2, 3, 1)
    x = x.astype(np.float32)
    if desc_t.mean:
        mean = np.asarray(desc_t.mean, np.float32)
        std = np.asarray(desc_t.std, np.float32)
        if x.ndim == 4 and desc_t.fmt in ("NHWC", "NCHW"):
            shape = (1, 1, 1, -1) if desc_t.fmt == "NHWC" else (1, -1, 1, 1)
            x = (x - mean.reshape(shape)) / std.reshape(shape) if len(mean) > 1 else (x - mean[0]) / std[0]
        else:
            x = (x - mean) / std if len(mean) > 1 else (x - mean[0]) / std[0]
    if desc_t.qnt == "affine":
        if x.ndim == 4 and desc_t.fmt in ("NHWC", "NCHW"):
            return reference.quantize(x, desc_t.scale[0], desc_t.zp[0], desc_t.dtype)
        # a non-image input: the vendor's CPU quantization (wraps; docs/abi-notes.md)
        return reference.quantize_cpu(x, desc_t.scale[0], desc_t.zp[0], desc_t.dtype)
    dt = np.dtype(NP_TYPES[TYPE_CODES[desc_t.dtype]])
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return np.clip(np.rint(x), info.min, info.max).astype(dt)
    return x.astype(dt)


#: the int8 C2 of each personality, which picks the vendor's dequantization per element
INT8_C2 = {"RK3566": 8, "RK3568": 8}


def float_output(desc_t, q: np.ndarray, platform: str = None) -> np.ndarray:
    """want_float=1 of a model output: dequantized float32, NCHW for 4-D, as the vendor's
    rknn_outputs_get makes it (reference.dequantize_output; the personality is the current
    one unless given)."""
    q = np.asarray(q)
    if q.ndim == 4 and desc_t.fmt == "NHWC":
        q = q.transpose(0, 3, 1, 2)
    if desc_t.qnt == "affine":
        c2 = 0
        if desc_t.dtype in ("int8", "uint8") and q.ndim == 4 and desc_t.fmt in ("NHWC", "NCHW"):
            c2 = INT8_C2.get((platform or ctl().platform).upper(), 16)
        return reference.dequantize_output(q, desc_t.scale[0], desc_t.zp[0], c2)
    return q.astype(np.float32)


def native_output(desc_t, q: np.ndarray) -> np.ndarray:
    """want_float=0: the model type, NCHW for 4-D."""
    if q.ndim == 4 and desc_t.fmt == "NHWC":
        return q.transpose(0, 3, 1, 2)
    return q


def desc_of(model: bytes):
    return reference.as_model(model)


#: each ctypes copy above and the ABI struct it copies (checked by tests/abi/test_abi.py)
ABI_STRUCTS = {
    TensorAttr: "rknn_tensor_attr", InOutNum: "rknn_input_output_num", TensorMem: "rknn_tensor_mem",
    Input: "rknn_input", Output: "rknn_output", InitExtend: "rknn_init_extend",
    RunExtend: "rknn_run_extend", OutputExtend: "rknn_output_extend",
    PerfDetail: "rknn_perf_detail", PerfRun: "rknn_perf_run", SdkVersion: "rknn_sdk_version",
    MemSize: "rknn_mem_size", CustomString: "rknn_custom_string", InputRange: "rknn_input_range",
    GpuOpContext: "rknn_gpu_op_context", CustomOpContext: "rknn_custom_op_context",
    CustomOpTensor: "rknn_custom_op_tensor", CustomOpAttr: "rknn_custom_op_attr",
    CustomOp: "rknn_custom_op", MatmulInfo: "rknn_matmul_info", MMTensorAttr: "rknn_matmul_tensor_attr",
    MMIOAttr: "rknn_matmul_io_attr", QuantParams: "rknn_quant_params", MMShape: "rknn_matmul_shape",
}
