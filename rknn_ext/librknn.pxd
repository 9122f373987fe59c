# cython: language_level=3
# Vendor declarations only: the RKNPU2 C API (librknnrt 2.x) as declared by
# include/rknnx/rknn_api.h, rknn_matmul_api.h and rknn_custom_op.h, with the vendor
# names unchanged, plus the one table of entry points (include/rknnx/loader.h).
# Nothing here calls C; _core.pyx calls through `rknnx_api` once the loader filled it.

from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uint32_t, uint64_t


cdef extern from "rknn_api.h" nogil:
    ctypedef uint64_t rknn_context         # opaque handle (uint32_t on 32-bit ARM)

    # --- rknn_init flags ---
    enum:
        RKNN_FLAG_PRIOR_HIGH                # default priority
        RKNN_FLAG_PRIOR_MEDIUM
        RKNN_FLAG_PRIOR_LOW
        RKNN_FLAG_ASYNC_MASK                # outputs_get returns the previous frame
        RKNN_FLAG_COLLECT_PERF_MASK         # per-layer timing for PERF_DETAIL
        RKNN_FLAG_MEM_ALLOC_OUTSIDE         # caller provides weight/internal/io memory
        RKNN_FLAG_SHARE_WEIGHT_MEM          # reuse the weights of init_extend.ctx
        RKNN_FLAG_FENCE_IN_OUTSIDE          # fences (documented as unavailable)
        RKNN_FLAG_FENCE_OUT_OUTSIDE
        RKNN_FLAG_COLLECT_MODEL_INFO_ONLY   # context answers size queries only
        RKNN_FLAG_INTERNAL_ALLOC_OUTSIDE    # caller provides internal memory only
        RKNN_FLAG_EXECUTE_FALLBACK_PRIOR_DEVICE_GPU  # prefer GPU for NPU-less ops
        RKNN_FLAG_ENABLE_SRAM               # internal tensors in SRAM when possible
        RKNN_FLAG_SHARE_SRAM                # share another context's SRAM
        RKNN_FLAG_DISABLE_PROC_HIGH_PRIORITY  # keep the process nice value
        RKNN_FLAG_DISABLE_FLUSH_INPUT_MEM_CACHE   # caller cleans input caches
        RKNN_FLAG_DISABLE_FLUSH_OUTPUT_MEM_CACHE  # caller invalidates output caches
        RKNN_FLAG_MODEL_BUFFER_ZERO_COPY    # model bytes used in place from NPU memory
        RKNN_MEM_FLAG_ALLOC_NO_CONTEXT      # create_mem2: ctx may be 0

    # --- status codes ---
    enum:
        RKNN_SUCC                           # 0
        RKNN_ERR_FAIL                       # -1
        RKNN_ERR_TIMEOUT                    # -2
        RKNN_ERR_DEVICE_UNAVAILABLE         # -3
        RKNN_ERR_MALLOC_FAIL                # -4
        RKNN_ERR_PARAM_INVALID              # -5
        RKNN_ERR_MODEL_INVALID              # -6
        RKNN_ERR_CTX_INVALID                # -7
        RKNN_ERR_INPUT_INVALID              # -8
        RKNN_ERR_OUTPUT_INVALID             # -9
        RKNN_ERR_DEVICE_UNMATCH             # -10
        RKNN_ERR_INCOMPATILE_PRE_COMPILE_MODEL           # -11 (vendor spelling)
        RKNN_ERR_INCOMPATILE_OPTIMIZATION_LEVEL_VERSION  # -12 (vendor spelling)
        RKNN_ERR_TARGET_PLATFORM_UNMATCH    # -13

    # --- limits ---
    enum:
        RKNN_MAX_DIMS                       # 16 dims per tensor
        RKNN_MAX_NUM_CHANNEL                # 15 mean/std channels
        RKNN_MAX_NAME_LEN                   # 256 bytes per name
        RKNN_MAX_DYNAMIC_SHAPE_NUM          # 512 shape sets

    ctypedef enum rknn_query_cmd:
        RKNN_QUERY_IN_OUT_NUM               # rknn_input_output_num
        RKNN_QUERY_INPUT_ATTR               # rknn_tensor_attr
        RKNN_QUERY_OUTPUT_ATTR              # rknn_tensor_attr
        RKNN_QUERY_PERF_DETAIL              # rknn_perf_detail
        RKNN_QUERY_PERF_RUN                 # rknn_perf_run
        RKNN_QUERY_SDK_VERSION              # rknn_sdk_version
        RKNN_QUERY_MEM_SIZE                 # rknn_mem_size
        RKNN_QUERY_CUSTOM_STRING            # rknn_custom_string
        RKNN_QUERY_NATIVE_INPUT_ATTR        # rknn_tensor_attr (NC1HWC2)
        RKNN_QUERY_NATIVE_OUTPUT_ATTR       # rknn_tensor_attr (NC1HWC2)
        RKNN_QUERY_NATIVE_NC1HWC2_INPUT_ATTR    # alias of NATIVE_INPUT_ATTR
        RKNN_QUERY_NATIVE_NC1HWC2_OUTPUT_ATTR   # alias of NATIVE_OUTPUT_ATTR
        RKNN_QUERY_NATIVE_NHWC_INPUT_ATTR   # rknn_tensor_attr (native NHWC)
        RKNN_QUERY_NATIVE_NHWC_OUTPUT_ATTR  # rknn_tensor_attr (native NHWC)
        RKNN_QUERY_DEVICE_MEM_INFO          # rknn_tensor_mem (RV1106 family)
        RKNN_QUERY_INPUT_DYNAMIC_RANGE      # rknn_input_range
        RKNN_QUERY_CURRENT_INPUT_ATTR       # rknn_tensor_attr at the current shape
        RKNN_QUERY_CURRENT_OUTPUT_ATTR      # rknn_tensor_attr at the current shape
        RKNN_QUERY_CURRENT_NATIVE_INPUT_ATTR   # native attr at the current shape
        RKNN_QUERY_CURRENT_NATIVE_OUTPUT_ATTR  # native attr at the current shape
        RKNN_QUERY_CMD_MAX                  # bound

    ctypedef enum rknn_tensor_type:
        RKNN_TENSOR_FLOAT32                 # 0
        RKNN_TENSOR_FLOAT16
        RKNN_TENSOR_INT8
        RKNN_TENSOR_UINT8
        RKNN_TENSOR_INT16
        RKNN_TENSOR_UINT16
        RKNN_TENSOR_INT32
        RKNN_TENSOR_UINT32
        RKNN_TENSOR_INT64
        RKNN_TENSOR_BOOL
        RKNN_TENSOR_INT4
        RKNN_TENSOR_BFLOAT16
        RKNN_TENSOR_TYPE_MAX                # bound

    ctypedef enum rknn_tensor_qnt_type:
        RKNN_TENSOR_QNT_NONE                # not quantized
        RKNN_TENSOR_QNT_DFP                 # dynamic fixed point (fl)
        RKNN_TENSOR_QNT_AFFINE_ASYMMETRIC   # (q - zp) * scale
        RKNN_TENSOR_QNT_MAX                 # bound

    ctypedef enum rknn_tensor_format:
        RKNN_TENSOR_NCHW                    # 0
        RKNN_TENSOR_NHWC                    # 1
        RKNN_TENSOR_NC1HWC2                 # 2: native blocked layout
        RKNN_TENSOR_UNDEFINED               # 3: non-4-D, as declared
        RKNN_TENSOR_FORMAT_MAX              # bound

    ctypedef enum rknn_core_mask:
        RKNN_NPU_CORE_AUTO                  # runtime chooses
        RKNN_NPU_CORE_0
        RKNN_NPU_CORE_1
        RKNN_NPU_CORE_2
        RKNN_NPU_CORE_0_1
        RKNN_NPU_CORE_0_1_2
        RKNN_NPU_CORE_ALL
        RKNN_NPU_CORE_UNDEFINED

    ctypedef enum rknn_tensor_mem_flags:
        RKNN_TENSOR_MEMORY_FLAGS_ALLOC_INSIDE   # runtime allocation
        RKNN_TENSOR_MEMORY_FLAGS_FROM_FD        # wraps an fd
        RKNN_TENSOR_MEMORY_FLAGS_FROM_PHYS      # wraps a physical address
        RKNN_TENSOR_MEMORY_FLAGS_UNKNOWN

    ctypedef enum rknn_mem_alloc_flags:
        RKNN_FLAG_MEMORY_FLAGS_DEFAULT      # same as CACHEABLE
        RKNN_FLAG_MEMORY_CACHEABLE
        RKNN_FLAG_MEMORY_NON_CACHEABLE
        RKNN_FLAG_MEMORY_TRY_ALLOC_SRAM

    ctypedef enum rknn_mem_sync_mode:
        RKNN_MEMORY_SYNC_TO_DEVICE          # clean: CPU writes -> device
        RKNN_MEMORY_SYNC_FROM_DEVICE        # invalidate: device writes -> CPU
        RKNN_MEMORY_SYNC_BIDIRECTIONAL      # both

    ctypedef struct rknn_input_output_num:
        uint32_t n_input                    # number of model inputs
        uint32_t n_output                   # number of model outputs

    ctypedef struct rknn_tensor_attr:
        uint32_t index                      # tensor index, set before a query
        uint32_t n_dims                     # valid entries of dims
        uint32_t dims[16]                   # shape in the order of fmt
        char name[256]                      # tensor name
        uint32_t n_elems                    # number of elements
        uint32_t size                       # packed bytes
        rknn_tensor_format fmt              # layout
        rknn_tensor_type type               # element type
        rknn_tensor_qnt_type qnt_type       # quantization kind
        int8_t fl                           # DFP fractional length
        int32_t zp                          # affine zero point
        float scale                         # affine scale
        uint32_t w_stride                   # padded width (elements), 0 = width
        uint32_t size_with_stride           # bytes including padding
        uint8_t pass_through                # 1: data already native
        uint32_t h_stride                   # padded height (multi-batch), 0 = height

    ctypedef struct rknn_input_range:
        uint32_t index                      # input index, set before the query
        uint32_t shape_number               # valid rows of dyn_range
        rknn_tensor_format fmt              # layout of the dims
        char name[256]                      # input name
        uint32_t dyn_range[512][16]         # row s: the dims of shape set s
        uint32_t n_dims                     # valid entries per row

    ctypedef struct rknn_perf_detail:
        char* perf_data                     # runtime-owned text
        uint64_t data_len                   # its length

    ctypedef struct rknn_perf_run:
        int64_t run_duration                # microseconds of the last run

    ctypedef struct rknn_sdk_version:
        char api_version[256]               # runtime (librknnrt) version
        char drv_version[256]               # driver version

    ctypedef struct rknn_mem_size:
        uint32_t total_weight_size          # bytes for set_weight_mem
        uint32_t total_internal_size        # bytes for set_internal_mem
        uint64_t total_dma_allocated_size   # all DMA memory of the context
        uint32_t total_sram_size            # SRAM of the chip (RK3588)
        uint32_t free_sram_size             # SRAM still free
        uint32_t reserved[10]               # zero

    ctypedef struct rknn_custom_string:
        char string[1024]                   # set at conversion time

    ctypedef struct rknn_tensor_mem:
        void* virt_addr                     # CPU address of the region
        uint64_t phys_addr                  # device address
        int32_t fd                          # mappable fd, -1 if none
        int32_t offset                      # data offset inside the region
        uint32_t size                       # bytes
        uint32_t flags                      # rknn_tensor_mem_flags
        void* priv_data                     # runtime private

    ctypedef struct rknn_input:
        uint32_t index                      # input index
        void* buf                           # data
        uint32_t size                       # bytes in buf
        uint8_t pass_through                # 1: native data, no conversion
        rknn_tensor_type type               # type of buf
        rknn_tensor_format fmt              # layout of buf

    ctypedef struct rknn_output:
        uint8_t want_float                  # 1: float32, dequantized, NCHW
        uint8_t is_prealloc                 # 1: buf/size are the caller's
        uint32_t index                      # output index
        void* buf                           # data (runtime's when not prealloc)
        uint32_t size                       # bytes

    ctypedef struct rknn_init_extend:
        rknn_context ctx                    # weight sharing: owner of the weights
        int32_t real_model_offset           # MODEL_BUFFER_ZERO_COPY: model offset
        uint32_t real_model_size            # ... and size
        int32_t model_buffer_fd             # ... fd of the buffer holding it
        uint32_t model_buffer_flags         # ... its flags
        uint8_t reserved[112]               # zero

    ctypedef struct rknn_run_extend:
        uint64_t frame_id                   # out: id of the frame run
        int32_t non_block                   # 1: return before the NPU is done
        int32_t timeout_ms                  # wait limit
        int32_t fence_fd                    # fence (unavailable)

    ctypedef struct rknn_output_extend:
        uint64_t frame_id                   # out: frame the outputs belong to


cdef extern from "rknn_matmul_api.h" nogil:
    ctypedef rknn_context rknn_matmul_ctx   # a matmul context is a context

    ctypedef enum rknn_matmul_type:
        RKNN_FLOAT16_MM_FLOAT16_TO_FLOAT32
        RKNN_INT8_MM_INT8_TO_INT32
        RKNN_INT8_MM_INT8_TO_INT8
        RKNN_FLOAT16_MM_FLOAT16_TO_FLOAT16
        RKNN_FLOAT16_MM_INT8_TO_FLOAT32
        RKNN_FLOAT16_MM_INT8_TO_FLOAT16
        RKNN_FLOAT16_MM_INT4_TO_FLOAT32
        RKNN_FLOAT16_MM_INT4_TO_FLOAT16
        RKNN_INT8_MM_INT8_TO_FLOAT32
        RKNN_INT4_MM_INT4_TO_INT16
        RKNN_INT8_MM_INT4_TO_INT32
        RKNN_FLOAT16_MM_INT4_TO_BFLOAT16
        RKNN_INT8_MM_INT4_TO_FLOAT16

    ctypedef enum rknn_matmul_layout:
        RKNN_MM_LAYOUT_NORM                 # row-major
        RKNN_MM_LAYOUT_NATIVE               # NPU blocked layout
        RKNN_MM_LAYOUT_TP_NORM              # B transposed (N x K)

    ctypedef enum rknn_matmul_quant_type:
        RKNN_QUANT_TYPE_PER_LAYER_SYM
        RKNN_QUANT_TYPE_PER_LAYER_ASYM
        RKNN_QUANT_TYPE_PER_CHANNEL_SYM
        RKNN_QUANT_TYPE_PER_CHANNEL_ASYM
        RKNN_QUANT_TYPE_PER_GROUP_SYM
        RKNN_QUANT_TYPE_PER_GROUP_ASYM

    ctypedef struct rknn_quant_params:
        char name[256]                      # tensor name from the io attrs
        float* scale                        # scale_len scales
        int32_t scale_len                   # 1, N or N*K/group_size
        int32_t* zp                         # zp_len zero points
        int32_t zp_len

    ctypedef struct rknn_matmul_tensor_attr:
        char name[256]                      # "A", "B", "C" names from the runtime
        uint32_t n_dims                     # valid dims
        uint32_t dims[16]                   # shape (native layouts: blocked)
        uint32_t size                       # bytes to allocate
        rknn_tensor_type type               # element type

    ctypedef struct rknn_matmul_io_attr:
        rknn_matmul_tensor_attr A           # left operand
        rknn_matmul_tensor_attr B           # right operand
        rknn_matmul_tensor_attr C           # result

    ctypedef struct rknn_matmul_shape:
        int32_t M                           # rows of A and C
        int32_t K                           # inner dimension
        int32_t N                           # columns of B and C

    ctypedef struct rknn_matmul_info:
        int32_t M                           # rows of A and C
        int32_t K                           # inner dimension
        int32_t N                           # columns of B and C
        rknn_matmul_type type               # operand/result types
        int16_t B_layout                    # rknn_matmul_layout of B
        int16_t B_quant_type                # rknn_matmul_quant_type of B
        int16_t AC_layout                   # layout of A and C
        int16_t AC_quant_type               # per layer only
        int32_t iommu_domain_id             # 4 GB IOMMU domain
        int16_t group_size                  # per-group quantization
        int8_t reserved[34]                 # zero


cdef extern from "rknn_custom_op.h" nogil:
    enum:
        RKNN_WARNING_SKIP_CUSTOM_OP_COMPUTE # -14: init asks for the built-in op
        RKNN_CUSTOM_OP_MAX_STR_LEN          # 64
        RKNN_CUSTOM_OP_MAX_VALUE_LEN        # 32

    ctypedef uint64_t rknn_custom_op_interal_context  # runtime private (vendor spelling)

    ctypedef enum rknn_target_type:
        RKNN_TARGET_TYPE_CPU                # op runs on the CPU
        RKNN_TARGET_TYPE_GPU                # op runs on the GPU (OpenCL)
        RKNN_TARGET_TYPE_MAX

    ctypedef struct rknn_gpu_op_context:
        void* cl_context                    # OpenCL context
        void* cl_command_queue              # OpenCL queue
        void* cl_kernel                     # OpenCL kernel

    ctypedef struct rknn_custom_op_context:
        rknn_target_type target             # where the op runs
        rknn_custom_op_interal_context internal_ctx  # runtime private
        rknn_gpu_op_context gpu_ctx         # GPU handles
        void* priv_data                     # the op's own state

    ctypedef struct rknn_custom_op_tensor:
        rknn_tensor_attr attr               # description
        rknn_tensor_mem mem                 # data at mem.virt_addr + mem.offset

    ctypedef struct rknn_custom_op_attr:
        char name[256]                      # attribute name
        rknn_tensor_type dtype              # element type
        uint32_t n_elems                    # element count
        void* data                          # runtime-owned values

    ctypedef int (*rknn_custom_op_fn)(rknn_custom_op_context*, rknn_custom_op_tensor*, uint32_t,
                                      rknn_custom_op_tensor*, uint32_t) noexcept

    ctypedef struct rknn_custom_op:
        uint32_t version                    # op version
        rknn_target_type target             # CPU or GPU
        char op_type[256]                   # op type name in the model
        char cl_kernel_name[256]            # GPU: kernel name
        char* cl_kernel_source              # GPU: source text or path
        uint64_t cl_source_size             # 0: cl_kernel_source is a path
        char cl_build_options[256]          # GPU: build options
        rknn_custom_op_fn init              # once, at registration (optional)
        rknn_custom_op_fn prepare           # every run (optional)
        rknn_custom_op_fn compute           # every run (required)
        rknn_custom_op_fn compute_native    # unsupported: NULL
        int (*destroy)(rknn_custom_op_context*) noexcept  # at rknn_destroy (optional)


cdef extern from "loader.h" nogil:
    # The table of entry points, in the order of RKNNX_API_FUNCTIONS; NULL where the
    # loaded library lacks the symbol.  One member per vendor function.
    ctypedef struct rknnx_api:
        int (*rknn_init)(rknn_context*, void*, uint32_t, uint32_t, rknn_init_extend*) noexcept nogil
        int (*rknn_dup_context)(rknn_context*, rknn_context*) noexcept nogil
        int (*rknn_destroy)(rknn_context) noexcept nogil
        int (*rknn_query)(rknn_context, rknn_query_cmd, void*, uint32_t) noexcept nogil
        int (*rknn_inputs_set)(rknn_context, uint32_t, rknn_input*) noexcept nogil
        int (*rknn_set_batch_core_num)(rknn_context, int) noexcept nogil
        int (*rknn_set_core_mask)(rknn_context, rknn_core_mask) noexcept nogil
        int (*rknn_run)(rknn_context, rknn_run_extend*) noexcept nogil
        int (*rknn_wait)(rknn_context, rknn_run_extend*) noexcept nogil
        int (*rknn_outputs_get)(rknn_context, uint32_t, rknn_output*, rknn_output_extend*) noexcept nogil
        int (*rknn_outputs_release)(rknn_context, uint32_t, rknn_output*) noexcept nogil
        rknn_tensor_mem* (*rknn_create_mem_from_phys)(rknn_context, uint64_t, void*, uint32_t) noexcept nogil
        rknn_tensor_mem* (*rknn_create_mem_from_fd)(rknn_context, int32_t, void*, uint32_t, int32_t) noexcept nogil
        rknn_tensor_mem* (*rknn_create_mem_from_mb_blk)(rknn_context, void*, int32_t) noexcept nogil
        rknn_tensor_mem* (*rknn_create_mem)(rknn_context, uint32_t) noexcept nogil
        rknn_tensor_mem* (*rknn_create_mem2)(rknn_context, uint64_t, uint64_t) noexcept nogil
        int (*rknn_destroy_mem)(rknn_context, rknn_tensor_mem*) noexcept nogil
        int (*rknn_set_weight_mem)(rknn_context, rknn_tensor_mem*) noexcept nogil
        int (*rknn_set_internal_mem)(rknn_context, rknn_tensor_mem*) noexcept nogil
        int (*rknn_set_io_mem)(rknn_context, rknn_tensor_mem*, rknn_tensor_attr*) noexcept nogil
        int (*rknn_set_input_shape)(rknn_context, rknn_tensor_attr*) noexcept nogil
        int (*rknn_set_input_shapes)(rknn_context, uint32_t, rknn_tensor_attr*) noexcept nogil
        int (*rknn_mem_sync)(rknn_context, rknn_tensor_mem*, rknn_mem_sync_mode) noexcept nogil
        int (*rknn_matmul_create)(rknn_matmul_ctx*, rknn_matmul_info*, rknn_matmul_io_attr*) noexcept nogil
        int (*rknn_matmul_create_dynamic_shape)(rknn_matmul_ctx*, rknn_matmul_info*, int,
                                                rknn_matmul_shape*, rknn_matmul_io_attr*) noexcept nogil
        int (*rknn_matmul_set_io_mem)(rknn_matmul_ctx, rknn_tensor_mem*, rknn_matmul_tensor_attr*) noexcept nogil
        int (*rknn_matmul_set_core_mask)(rknn_matmul_ctx, rknn_core_mask) noexcept nogil
        int (*rknn_matmul_set_quant_params)(rknn_matmul_ctx, rknn_quant_params*) noexcept nogil
        int (*rknn_matmul_get_quant_params)(rknn_matmul_ctx, rknn_quant_params*, float*) noexcept nogil
        int (*rknn_matmul_set_dynamic_shape)(rknn_matmul_ctx, rknn_matmul_shape*) noexcept nogil
        int (*rknn_matmul_run)(rknn_matmul_ctx) noexcept nogil
        int (*rknn_matmul_destroy)(rknn_matmul_ctx) noexcept nogil
        int (*rknn_B_normal_layout_to_native_layout)(void*, void*, int, int, rknn_matmul_info*) noexcept nogil
        int (*rknn_register_custom_ops)(rknn_context, rknn_custom_op*, uint32_t) noexcept nogil
        void (*rknn_custom_op_get_op_attr)(rknn_custom_op_context*, const char*, rknn_custom_op_attr*) noexcept nogil

    const char* const rknnx_api_names[]     # symbol names, in table order
    enum:
        RKNNX_API_COUNT                     # number of entry points
    void rknnx_api_set(rknnx_api* api, int i, void* symbol)  # fill slot i
    int rknnx_api_has(const rknnx_api* api, int i)           # slot i resolved?
