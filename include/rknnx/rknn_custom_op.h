/*
 * rknnx: C declarations of the RKNPU2 custom-operator API (part of librknnrt).
 * Written for rknnx from the published ABI facts; layouts are checked by tests/abi/test_abi.py.
 */
#ifndef RKNNX_RKNN_CUSTOM_OP_H
#define RKNNX_RKNN_CUSTOM_OP_H

#include "rknn_api.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RKNN_WARNING_SKIP_CUSTOM_OP_COMPUTE  -14 /* init: use the built-in op instead */
#define RKNN_CUSTOM_OP_MAX_STR_LEN           64
#define RKNN_CUSTOM_OP_MAX_VALUE_LEN         32
#define RKNN_CUSTOM_OP_EXPORT __attribute__((visibility("default")))

/* same width switch as rknn_context ("interal" is the vendor spelling) */
#ifdef __arm__
typedef uint32_t rknn_custom_op_interal_context;
#else
typedef uint64_t rknn_custom_op_interal_context;
#endif

typedef enum _rknn_target_type {
    RKNN_TARGET_TYPE_CPU = 1,
    RKNN_TARGET_TYPE_GPU = 2,
    RKNN_TARGET_TYPE_MAX
} rknn_target_type;

typedef struct _rknn_gpu_op_context {
    void *cl_context;                  /* OpenCL handles, as void* */
    void *cl_command_queue;
    void *cl_kernel;
} rknn_gpu_op_context;

typedef struct _rknn_custom_op_context {
    rknn_target_type target;
    rknn_custom_op_interal_context internal_ctx; /* runtime private */
    rknn_gpu_op_context gpu_ctx;
    void *priv_data;                   /* free for the op's own state */
} rknn_custom_op_context;

typedef struct _rknn_custom_op_tensor {
    rknn_tensor_attr attr;
    rknn_tensor_mem mem;               /* data at mem.virt_addr + mem.offset */
} rknn_custom_op_tensor;

typedef struct _rknn_custom_op_attr {
    char name[RKNN_MAX_NAME_LEN];
    rknn_tensor_type dtype;
    uint32_t n_elems;
    void *data;                        /* owned by the runtime */
} rknn_custom_op_attr;

typedef struct _rknn_custom_op {
    uint32_t version;
    rknn_target_type target;
    char op_type[RKNN_MAX_NAME_LEN];
    char cl_kernel_name[RKNN_MAX_NAME_LEN];
    char *cl_kernel_source;            /* text, or a path when cl_source_size == 0 */
    uint64_t cl_source_size;
    char cl_build_options[RKNN_MAX_NAME_LEN];
    int (*init)(rknn_custom_op_context *op_ctx, rknn_custom_op_tensor *inputs, uint32_t n_inputs,
                rknn_custom_op_tensor *outputs, uint32_t n_outputs);
    int (*prepare)(rknn_custom_op_context *op_ctx, rknn_custom_op_tensor *inputs,
                   uint32_t n_inputs, rknn_custom_op_tensor *outputs, uint32_t n_outputs);
    int (*compute)(rknn_custom_op_context *op_ctx, rknn_custom_op_tensor *inputs,
                   uint32_t n_inputs, rknn_custom_op_tensor *outputs, uint32_t n_outputs);
    int (*compute_native)(rknn_custom_op_context *op_ctx, rknn_custom_op_tensor *inputs,
                          uint32_t n_inputs, rknn_custom_op_tensor *outputs, uint32_t n_outputs);
    int (*destroy)(rknn_custom_op_context *op_ctx);
} rknn_custom_op;

/* what a custom-op plugin library exports */
typedef rknn_custom_op *(*get_custom_op_func)();

int rknn_register_custom_ops(rknn_context ctx, rknn_custom_op *op, uint32_t custom_op_num);
void rknn_custom_op_get_op_attr(rknn_custom_op_context *op_ctx, const char *attr_name,
                                rknn_custom_op_attr *op_attr);

#ifdef __cplusplus
}
#endif

#endif /* RKNNX_RKNN_CUSTOM_OP_H */
