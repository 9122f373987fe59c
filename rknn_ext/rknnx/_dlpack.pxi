# DLPack export of a TensorMem (the structs follow the DLPack ABI, versions 0.x and 1.x).
#
# One malloc'd block holds the managed tensor, its shape and strides (in elements, as
# DLPack counts them) and a strong reference to the exporting TensorMem, whose export
# count was incremented: the mem cannot be closed while a consumer holds the tensor.
# The deleter may be called by the consumer from any thread, with or without the GIL.

cdef enum:
    _KDLCPU = 1                               # DLDeviceType kDLCPU

cdef struct _DLDevice:
    int32_t device_type                       # DLDeviceType (int-sized enum)
    int32_t device_id                         # device ordinal

cdef struct _DLDataType:
    uint8_t code                              # kDLInt 0, kDLUInt 1, kDLFloat 2, kDLBool 6
    uint8_t bits                              # bits per element
    uint16_t lanes                            # 1: scalar elements

cdef struct _DLTensor:
    void* data                                # first element
    _DLDevice device                          # where it lives
    int32_t ndim                              # dimensions
    _DLDataType dtype                         # element type
    int64_t* shape                            # ndim sizes
    int64_t* strides                          # ndim strides in elements
    uint64_t byte_offset                      # 0: data points at the first element

cdef struct _DLManagedTensor:
    _DLTensor dl_tensor                       # the tensor
    void* manager_ctx                         # our _DLBlock
    void (*deleter)(_DLManagedTensor*) noexcept nogil  # frees the block

cdef struct _DLPackVersion:
    uint32_t major                            # 1
    uint32_t minor                            # 0

cdef struct _DLManagedTensorVersioned:
    _DLPackVersion version                    # of this struct
    void* manager_ctx                         # our _DLBlock
    void (*deleter)(_DLManagedTensorVersioned*) noexcept nogil  # frees the block
    uint64_t flags                            # bit 0 read-only, bit 1 is-copied
    _DLTensor dl_tensor                       # the tensor

cdef struct _DLBlock:
    _DLManagedTensor legacy                   # used for "dltensor" capsules
    _DLManagedTensorVersioned versioned       # used for "dltensor_versioned" capsules
    PyObject* owner                           # the TensorMem (a strong reference)
    Py_ssize_t* exports                       # its export counter
    int64_t dims[32]                          # shape[16] then strides[16]


cdef void _dl_free(_DLBlock* blk) noexcept nogil:
    if blk == NULL:
        return
    if Py_IsInitialized():
        with gil:
            _atomic_add_ssize(blk.exports, -1)
            Py_DECREF(<object>blk.owner)
    free(blk)


cdef void _dl_delete_legacy(_DLManagedTensor* t) noexcept nogil:
    _dl_free(<_DLBlock*>t.manager_ctx)


cdef void _dl_delete_versioned(_DLManagedTensorVersioned* t) noexcept nogil:
    _dl_free(<_DLBlock*>t.manager_ctx)


cdef void _dl_capsule_destructor(object capsule) noexcept:
    # An unconsumed capsule still owns the tensor; a consumed one was renamed "used_*".
    cdef _DLManagedTensor* legacy
    cdef _DLManagedTensorVersioned* versioned
    if PyCapsule_IsValid(capsule, b"dltensor"):
        legacy = <_DLManagedTensor*>PyCapsule_GetPointer(capsule, b"dltensor")
        legacy.deleter(legacy)
    elif PyCapsule_IsValid(capsule, b"dltensor_versioned"):
        versioned = <_DLManagedTensorVersioned*>PyCapsule_GetPointer(capsule,
                                                                     b"dltensor_versioned")
        versioned.deleter(versioned)


cdef object _dlpack_export(object owner, void* data, const _Layout* lay, bint versioned,
                           Py_ssize_t* exports):
    cdef _DLBlock* blk = <_DLBlock*>malloc(sizeof(_DLBlock))
    cdef _DLTensor* t
    cdef int i
    if blk == NULL:
        raise MemoryError()
    memset(blk, 0, sizeof(_DLBlock))
    t = &blk.versioned.dl_tensor if versioned else &blk.legacy.dl_tensor
    t.data = data
    t.device.device_type = _KDLCPU
    t.device.device_id = 0
    t.ndim = lay.ndim
    t.dtype.code = lay.dl_code
    t.dtype.bits = <uint8_t>(lay.itemsize * 8)
    t.dtype.lanes = 1
    for i in range(lay.ndim):
        blk.dims[i] = lay.shape[i]
        blk.dims[16 + i] = lay.strides[i] // lay.itemsize
    t.shape = blk.dims
    t.strides = &blk.dims[16]
    t.byte_offset = 0
    blk.exports = exports
    blk.owner = <PyObject*>owner
    if versioned:
        blk.versioned.version.major = 1
        blk.versioned.version.minor = 0
        blk.versioned.manager_ctx = blk
        blk.versioned.deleter = _dl_delete_versioned
        blk.versioned.flags = 0
        capsule = PyCapsule_New(&blk.versioned, b"dltensor_versioned",
                                <void (*)(object) noexcept>_dl_capsule_destructor)
    else:
        blk.legacy.manager_ctx = blk
        blk.legacy.deleter = _dl_delete_legacy
        capsule = PyCapsule_New(&blk.legacy, b"dltensor",
                                <void (*)(object) noexcept>_dl_capsule_destructor)
    # only now does the block own a reference and count as an export
    Py_INCREF(owner)
    _atomic_add_ssize(exports, 1)
    return capsule
