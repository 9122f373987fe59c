# cython: language_level=3, embedsignature=True, binding=True, cdivision=True
# distutils: language = c
"""The reader of vendor ``.rknn`` files, with no runtime: :func:`read_model_file`.

The C is the library rknnfile/ (include/rknnx/rknn_file.h), the same reader the emulator's ``rknn_init``
uses; this module gives its answer as plain dicts and never calls librknnrt.  The public
face is :mod:`rknnx.modelfile` (frozen dataclasses); the format is in
``docs/rknn-file-format.md``.  The binding (rknnx._core) cimports ``file_says_static``
(its contract: _rknnfile.pxd).
"""

from cpython.buffer cimport PyObject_GetBuffer as _mf_getbuf, PyBuffer_Release as _mf_release
from cpython.buffer cimport PyBUF_SIMPLE as _MF_SIMPLE
from libc.stdint cimport int32_t, int64_t, uint32_t, uint64_t
from libc.string cimport memcmp

from rknnx.errors import ModelFileError as _ModelFileError

cdef extern from "<string.h>" nogil:
    size_t strnlen(const char* s, size_t maxlen)

cdef extern from "rknn_file.h" nogil:
    enum:
        RKNNX_FILE_MAX_DIMS
        RKNNX_FILE_MAX_NORM
        RKNNX_FILE_OK
        RKNNX_FILE_E_NOMEM
        RKNNX_FILE_KNOWN_SHAPE
        RKNNX_FILE_KNOWN_ATTR
        RKNNX_FILE_KNOWN_QNT
        RKNNX_FILE_KNOWN_NATIVE
        RKNNX_FILE_KNOWN_NORM
        RKNNX_FILE_UNKNOWN

    ctypedef struct rknnx_file_error:
        int status
        char check[64]
        char message[256]
        int64_t offset

    ctypedef struct rknnx_file_tensor:
        uint32_t index
        int32_t role
        char name[256]
        uint32_t known
        uint32_t n_shape
        uint32_t shape[16]
        char layout[16]
        uint32_t n_dims
        uint32_t dims[16]
        int32_t fmt
        int32_t type
        int32_t attr_type
        uint32_t n_elems
        uint32_t size
        int32_t qnt_type
        int32_t zp
        float scale
        int32_t quantized
        char qnt_method[16]
        uint32_t n_qnt
        const float *scales
        const int32_t *zps
        int32_t native_fmt
        uint32_t native_n_dims
        uint32_t native_dims[16]
        uint32_t native_size
        uint32_t n_mean
        uint32_t n_std
        float mean[64]                  # RKNNX_FILE_MAX_NORM
        float std[64]
        char npu_dtype[16]
        char npu_layout[16]
        int32_t file_dtype_code
        int32_t file_layout_code
        uint32_t file_planned_size

    ctypedef struct rknnx_file_shape:
        uint32_t n_dims
        uint32_t dims[16]

    ctypedef struct rknnx_file_custom_op:
        char name[256]
        char type[128]

    ctypedef struct rknnx_file_model:
        uint64_t container_version
        uint32_t header_size
        uint64_t payload_offset
        uint64_t payload_size
        uint64_t json_offset
        uint64_t json_size
        uint64_t file_size
        uint32_t format_version
        char npu_family[128]
        char chip[128]
        char target_platform[128]
        char toolkit_version[128]
        char compiler_version[128]
        uint32_t compiler_version_int
        char framework[128]
        int32_t dynamic
        uint32_t n_inputs
        uint32_t n_outputs
        rknnx_file_tensor *inputs
        rknnx_file_tensor *outputs
        uint32_t n_shape_sets
        rknnx_file_shape *shape_sets
        uint32_t n_custom_ops
        rknnx_file_custom_op *custom_ops
        int32_t has_mem_sizes
        uint64_t weight_size
        uint64_t internal_size
        uint32_t n_removed_weights

    int rknnx_file_read(const void *data, size_t size, rknnx_file_model **out,
                        rknnx_file_error *err)
    void rknnx_file_free(rknnx_file_model *model)
    const char *rknnx_file_status_name(int status)


cdef str _mf_str(const char *s, size_t cap):
    return s[:strnlen(s, cap)].decode("utf-8", "replace")


cdef object _mf_enum(int32_t v):
    return None if v == RKNNX_FILE_UNKNOWN else v


cdef tuple _mf_dims(const uint32_t *d, uint32_t n):
    return tuple([d[k] for k in range(min(n, RKNNX_FILE_MAX_DIMS))])


cdef dict _mf_tensor(const rknnx_file_tensor *t):
    cdef uint32_t k
    cdef list known = []
    if t.known & RKNNX_FILE_KNOWN_SHAPE:
        known.append("shape")
    if t.known & RKNNX_FILE_KNOWN_ATTR:
        known.append("attr")
    if t.known & RKNNX_FILE_KNOWN_QNT:
        known.append("qnt")
    if t.known & RKNNX_FILE_KNOWN_NATIVE:
        known.append("native")
    if t.known & RKNNX_FILE_KNOWN_NORM:
        known.append("norm")
    q = bool(t.known & RKNNX_FILE_KNOWN_QNT)
    nat = bool(t.known & RKNNX_FILE_KNOWN_NATIVE)
    norm = bool(t.known & RKNNX_FILE_KNOWN_NORM)
    return {
        "index": t.index,
        "role": "input" if t.role == 1 else "output",
        "name": _mf_str(t.name, sizeof(t.name)),
        "known": tuple(known),
        "shape": _mf_dims(t.shape, t.n_shape),
        "layout": _mf_str(t.layout, sizeof(t.layout)),
        "dims": _mf_dims(t.dims, t.n_dims),
        "fmt": _mf_enum(t.fmt),
        # what INPUT_ATTR / OUTPUT_ATTR report (the NPU's type but in a container 1 file)
        "type": _mf_enum(t.attr_type),
        "native_type": _mf_enum(t.type),
        "n_elems": t.n_elems,
        "size": t.size,
        "qnt_type": _mf_enum(t.qnt_type) if q else None,
        "zp": t.zp if q else None,
        "scale": float(t.scale) if q else None,
        "quantized": bool(t.quantized) if q else None,
        "qnt_method": _mf_str(t.qnt_method, sizeof(t.qnt_method)),
        "scales": tuple([float(t.scales[k]) for k in range(t.n_qnt)]) if t.scales else (),
        "zps": tuple([int(t.zps[k]) for k in range(t.n_qnt)]) if t.zps else (),
        "native_fmt": _mf_enum(t.native_fmt) if nat else None,
        "native_dims": _mf_dims(t.native_dims, t.native_n_dims) if nat else None,
        "native_size": t.native_size if nat else None,
        # raw, as the file lists them (1 entry for every channel, or one per channel)
        "mean": tuple([float(t.mean[k]) for k in range(min(t.n_mean, RKNNX_FILE_MAX_NORM))])
                if norm else None,
        "std": tuple([float(t.std[k]) for k in range(min(t.n_std, RKNNX_FILE_MAX_NORM))])
               if norm else None,
        "npu_dtype": _mf_str(t.npu_dtype, sizeof(t.npu_dtype)),
        "npu_layout": _mf_str(t.npu_layout, sizeof(t.npu_layout)),
        "file_dtype_code": _mf_enum(t.file_dtype_code),
        "file_layout_code": _mf_enum(t.file_layout_code),
        "file_planned_size": t.file_planned_size,
    }


def read_model_file(data):
    """Read a vendor ``.rknn`` file held in memory, with no runtime.

    Parameters
    ----------
    data : bytes-like
        The whole file.

    Returns
    -------
    dict
        The container, the model facts and every input and output (see
        :mod:`rknnx.modelfile`, which wraps this in dataclasses).

    Raises
    ------
    rknnx.errors.ModelFileError
        The bytes are not a readable vendor model; ``check`` names the check that failed
        (``"magic"``, ``"payload_length"``, ``"encrypted"``, ...).
    TypeError
        ``data`` is not a buffer.
    """
    cdef Py_buffer view
    cdef rknnx_file_model *m = NULL
    cdef rknnx_file_error err
    cdef int rc
    cdef uint32_t k, s
    try:
        _mf_getbuf(data, &view, _MF_SIMPLE)
    except TypeError:
        raise TypeError(f"data must be bytes or a buffer, got {type(data).__name__}") from None
    try:
        with nogil:
            rc = rknnx_file_read(view.buf, <size_t>view.len, &m, &err)
    finally:
        _mf_release(&view)
    if rc != RKNNX_FILE_OK:
        if rc == RKNNX_FILE_E_NOMEM:
            raise MemoryError("out of memory reading the model file")
        raise _ModelFileError(_mf_str(err.message, sizeof(err.message)),
                             check=_mf_str(err.check, sizeof(err.check)),
                             offset=None if err.offset < 0 else err.offset,
                             status=rknnx_file_status_name(rc).decode())
    try:
        shape_sets = []
        for s in range(m.n_shape_sets):
            shape_sets.append(tuple([_mf_dims(m.shape_sets[s * m.n_inputs + k].dims,
                                              m.shape_sets[s * m.n_inputs + k].n_dims)
                                     for k in range(m.n_inputs)]))
        return {
            "container": {
                "version": m.container_version,
                "header_size": m.header_size,
                "payload_offset": m.payload_offset,
                "payload_size": m.payload_size,
                "json_offset": m.json_offset,
                "json_size": m.json_size,
                "file_size": m.file_size,
            },
            "format_version": m.format_version,
            "npu_family": _mf_str(m.npu_family, sizeof(m.npu_family)),
            "chip": _mf_str(m.chip, sizeof(m.chip)),
            "target_platform": _mf_str(m.target_platform, sizeof(m.target_platform)),
            "toolkit_version": _mf_str(m.toolkit_version, sizeof(m.toolkit_version)),
            "compiler_version": _mf_str(m.compiler_version, sizeof(m.compiler_version)),
            "compiler_version_int": m.compiler_version_int,
            "framework": _mf_str(m.framework, sizeof(m.framework)),
            "dynamic": bool(m.dynamic),
            "inputs": [_mf_tensor(&m.inputs[k]) for k in range(m.n_inputs)],
            "outputs": [_mf_tensor(&m.outputs[k]) for k in range(m.n_outputs)],
            "shape_sets": shape_sets,
            "weight_size": m.weight_size if m.has_mem_sizes else None,
            "internal_size": m.internal_size if m.has_mem_sizes else None,
            "removed_weights": m.n_removed_weights,
            "custom_ops": [{"name": _mf_str(m.custom_ops[k].name, sizeof(m.custom_ops[k].name)),
                            "type": _mf_str(m.custom_ops[k].type, sizeof(m.custom_ops[k].type))}
                           for k in range(m.n_custom_ops)],
        }
    finally:
        rknnx_file_free(m)


# -- what the bytes say of the shape sets, before the runtime is asked ---------------------

cdef extern from "rknn_file.h" nogil:
    int rknnx_file_sniff(const void *data, size_t size)

cdef bint file_says_static(const unsigned char* b, size_t size) noexcept:
    """True when the model's bytes say the model is static: a vendor file whose shape mode
    is static_shape (read by the reader above), or an emulator model without a SHAPES
    section (emulator/FORMAT.md: header u32 n_sections at 12, then 24-byte entries whose
    first u32 is the kind; 6 is SHAPES).  False when it is dynamic, or the bytes do not say
    (an encrypted or unreadable file, another format): then the runtime is asked.  A static
    model's INPUT_DYNAMIC_RANGE is refused by every board with a W line, which an open
    need not print (docs/abi-notes.md, "Board facts")."""
    cdef rknnx_file_model *m = NULL
    cdef uint32_t n, k, kind
    cdef bint static
    if size >= 32 and memcmp(b, b"RKNXEMDL", 8) == 0:
        n = b[12] | (<uint32_t>b[13] << 8) | (<uint32_t>b[14] << 16) | (<uint32_t>b[15] << 24)
        if n < 1 or n > 16 or 32 + 24 * <size_t>n > size:
            return False
        for k in range(n):
            kind = b[32 + 24 * k] | (<uint32_t>b[33 + 24 * k] << 8) | \
                (<uint32_t>b[34 + 24 * k] << 16) | (<uint32_t>b[35 + 24 * k] << 24)
            if kind == 6:
                return False
        return True
    if rknnx_file_sniff(b, size) != 1:
        return False
    with nogil:
        if rknnx_file_read(b, size, &m, NULL) != RKNNX_FILE_OK:
            return False
        static = m.dynamic == 0
        rknnx_file_free(m)
    return static
