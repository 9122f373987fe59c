/*
 * rknn_file_v1004.h - decoder of the payload of a container-version-0x1004 .rknn file
 * (the files rknn-toolkit2 writes for RV1103, RV1106 and RK2118).
 *
 * The container (64-byte header, u64 payload length L, payload, u64 JSON length, JSON
 * tail) is the caller's business: pass the L payload bytes that follow the 64-byte
 * header.  The payload's layout, field by field, and the evidence for each field are in
 * docs/rknn-file-format-v1004.md.  In short:
 *
 *   payload = 64-byte payload header (six u32 sizes, zero padding)
 *           | task records | register commands | weights | FlatBuffer (file id "RKNN")
 *
 * The FlatBuffer has its own schema (not the version-6 one): a Model table, one Graph,
 * a Tensor table per tensor holding the dtype, native layout, native and logical shape,
 * name, scale, zero point, native buffer size and offset in the internal memory.
 *
 * Self-contained C11: no dependency on any other project source; every offset and
 * length in the payload is checked; malformed bytes give an error status and a short
 * static message naming the failed check, never a crash or an out-of-bounds read.
 *
 * Two levels:
 *   rkf_v1004_decode()     - what the file says (each field flagged known or not);
 *   rkf_v1004_query_attr() - the tensor attributes the RV1106 mini runtime (librknnmrt
 *                            2.3.2) reports for the file, derived from those fields by
 *                            rules that reproduce its answers for every 0x1004 file seen.
 *
 * rknn_file_v1004_plug.c joins this to the vendor-file reader (rknn_file.h's
 * rknnx_file_decode_v1004 plug); this file and rknn_file_v1004.c need nothing else.
 */
#ifndef RKNNX_RKNN_FILE_V1004_H
#define RKNNX_RKNN_FILE_V1004_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- status codes (0 = success, negative = error) --------------------------------- */
#define RKF_V1004_OK          0
#define RKF_V1004_EINVAL    (-1)  /* a NULL argument, an index out of range */
#define RKF_V1004_ETRUNC    (-2)  /* the payload is shorter than its own lengths say */
#define RKF_V1004_EFORMAT   (-3)  /* the bytes are not a well-formed 0x1004 payload */
#define RKF_V1004_ENOMEM    (-4)  /* allocation failed */
#define RKF_V1004_EUNKNOWN  (-5)  /* rkf_v1004_query_attr: the file holds a case for which
                                     no vendor answer establishes the runtime's view */

#define RKF_V1004_MAX_DIMS     16   /* = RKNN_MAX_DIMS */
#define RKF_V1004_MAX_NAME    256   /* = RKNN_MAX_NAME_LEN, including the NUL */
#define RKF_V1004_MAX_TENSORS 65536 /* more tensors than this: refused as malformed */

/* The values of rknn_tensor_type / rknn_tensor_format / rknn_tensor_qnt_type in the
 * public rknn_api.h, repeated here so that this file stands alone. */
#define RKF_V1004_TYPE_FLOAT16    1
#define RKF_V1004_TYPE_INT8       2
#define RKF_V1004_FMT_NCHW        0
#define RKF_V1004_FMT_NHWC        1
#define RKF_V1004_FMT_NC1HWC2     2
#define RKF_V1004_FMT_UNDEFINED   3
#define RKF_V1004_QNT_AFFINE      2

/* ---- raw codes seen in the Tensor table ---------------------------------------------- */
#define RKF_V1004_DT_INT8        3   /* runtime type INT8 (verified) */
#define RKF_V1004_DT_INT32       6   /* seen on bias constants only */
#define RKF_V1004_DT_INT64       7   /* seen on shape constants only */
#define RKF_V1004_DT_FLOAT16    10   /* runtime type FLOAT16 (verified) */
#define RKF_V1004_LAYOUT_NONE    0   /* field absent: 1-D/2-D tensors */
#define RKF_V1004_LAYOUT_NHWC    1   /* the NHWC "_exSecondary" alternatives */
#define RKF_V1004_LAYOUT_NATIVE 64   /* NC1HWC2 native layout (5-D native shape) */
#define RKF_V1004_KIND_INPUT     1
#define RKF_V1004_KIND_OUTPUT    2

/* ---- rkf_v1004_tensor.known bits: a field is meaningful only when its bit is set ----- */
#define RKF_V1004_K_NAME        (1u << 0)
#define RKF_V1004_K_DIMS        (1u << 1)   /* dims: logical shape (NCHW for 4-D) */
#define RKF_V1004_K_NATIVE_DIMS (1u << 2)
#define RKF_V1004_K_DTYPE       (1u << 3)   /* dtype / elem_size mapped from dtype_code */
#define RKF_V1004_K_LAYOUT      (1u << 4)   /* native_fmt mapped from layout_code */
#define RKF_V1004_K_QNT         (1u << 5)   /* qnt_type, scale, zp */
#define RKF_V1004_K_NATIVE_SIZE (1u << 6)
#define RKF_V1004_K_MEM_OFFSET  (1u << 7)
#define RKF_V1004_K_WIDTH_ALIGN (1u << 8)   /* width_align (inputs) */
#define RKF_V1004_K_STD         (1u << 9)   /* norm_std / norm_mean (inputs) */
#define RKF_V1004_K_NAME_CUT   (1u << 30)   /* the name was longer than 255 bytes: cut */

typedef struct rkf_v1004_tensor {
    uint32_t known;                         /* RKF_V1004_K_* bits */
    char name[RKF_V1004_MAX_NAME];
    /* Logical shape as the file stores it (NCHW for a 4-D tensor). */
    uint32_t n_dims;
    uint32_t dims[RKF_V1004_MAX_DIMS];
    /* Native shape: [N, C1, H, W, C2] for layout 64; equal to dims otherwise. */
    uint32_t n_native_dims;
    uint32_t native_dims[RKF_V1004_MAX_DIMS];
    /* Raw codes as stored (see RKF_V1004_DT_* / LAYOUT_* / KIND_*). */
    uint8_t dtype_code;
    uint8_t layout_code;
    uint8_t kind;
    /* Mapped values, valid with their known bit. */
    int32_t dtype;                          /* rknn_tensor_type, -1 when unknown */
    uint32_t elem_size;                     /* bytes per element, 0 when unknown */
    int32_t native_fmt;                     /* rknn_tensor_format of the native layout */
    int32_t qnt_type;                       /* rknn_tensor_qnt_type */
    float scale;                            /* first scale, 0 when the file has none */
    int32_t zp;                             /* first zero point, 0 when none */
    uint32_t n_scale, n_zp;                 /* how many the file holds (1, or 0 for fp16) */
    uint32_t native_size;                   /* bytes the compiler planned for the native buffer */
    uint32_t mem_offset;                    /* byte offset in the internal memory region */
    int32_t tensor_id;                      /* the table's own id field (slot 10) */
    uint32_t width_align;                   /* inputs: w_stride = width rounded up to this */
    float norm_mean[4], norm_std[4];        /* inputs: the per-input normalisation record */
} rkf_v1004_tensor;

typedef struct rkf_v1004_model {
    /* Payload header (six u32 at payload offset 0) and the regions it frames. */
    uint32_t fb_size;          /* FlatBuffer bytes, at the end of the payload */
    uint32_t task_size;        /* task-record region bytes (the runtime's "task" buffer) */
    uint32_t task_count;       /* 40-byte task records at the start of that region */
    uint32_t regcmd_size;      /* register-command region bytes */
    uint32_t internal_size;    /* = MEM_SIZE total_internal_size */
    uint32_t weight_size;      /* = MEM_SIZE total_weight_size */
    uint64_t model_mem_size;   /* regcmd + weight + internal: the runtime's "model" buffer */
    size_t task_offset, regcmd_offset, weight_offset, fb_offset;   /* in the payload */
    /* Model table. */
    uint32_t format_version;   /* slot 0 (6 in every file) */
    uint32_t compiler_version; /* slot 4, MMmmpp (20500 for toolkit 2.5.0) */
    char npu_family[64];       /* slot 1, "RKNPU t3" (RV1103/RV1106), "RKNPU w2" (RK2118) */
    char platform[32];         /* slot 6, "rv1106", "rv1103", "rk2118" */
    char framework[32];        /* slot 7, "ONNX" */
    char compiler[256];        /* slot 5, "<toolkit>(compiler version: ...)" */
    /* slot 3, the generator dict (Python-literal text): where it is in the payload. */
    size_t generator_offset, generator_len;
    /* Graph. */
    uint32_t n_tensors;        /* all Tensor tables of the graph */
    uint32_t n_inputs, n_outputs;
    rkf_v1004_tensor *inputs;  /* n_inputs, in the runtime's input order */
    rkf_v1004_tensor *outputs; /* n_outputs, in the runtime's output order */
} rkf_v1004_model;

/* Decode a 0x1004 payload (the L bytes after the 64-byte container header).
 * On success returns RKF_V1004_OK and fills *out (release with rkf_v1004_free).
 * On failure returns a negative RKF_V1004_E* status, sets *why (if why is not NULL) to a
 * static message naming the failed check, and leaves *out zeroed (nothing to free). */
int rkf_v1004_decode(const uint8_t *payload, size_t len, rkf_v1004_model *out,
                     const char **why);

/* Release what rkf_v1004_decode allocated; *m is zeroed.  NULL and a zeroed model are
 * accepted. */
void rkf_v1004_free(rkf_v1004_model *m);

/* ---- the mini runtime's view ---------------------------------------------------------- */
typedef enum rkf_v1004_query {
    RKF_V1004_INPUT_ATTR = 0,         /* RKNN_QUERY_INPUT_ATTR */
    RKF_V1004_OUTPUT_ATTR,            /* RKNN_QUERY_OUTPUT_ATTR */
    RKF_V1004_NATIVE_INPUT_ATTR,      /* RKNN_QUERY_NATIVE_INPUT_ATTR */
    RKF_V1004_NATIVE_OUTPUT_ATTR,     /* RKNN_QUERY_NATIVE_OUTPUT_ATTR */
    RKF_V1004_NATIVE_NHWC_INPUT_ATTR, /* RKNN_QUERY_NATIVE_NHWC_INPUT_ATTR */
    RKF_V1004_NATIVE_NHWC_OUTPUT_ATTR /* RKNN_QUERY_NATIVE_NHWC_OUTPUT_ATTR */
} rkf_v1004_query;

/* Field for field rknn_tensor_attr (enums as int32_t). */
typedef struct rkf_v1004_attr {
    uint32_t index;
    uint32_t n_dims;
    uint32_t dims[RKF_V1004_MAX_DIMS];
    char name[RKF_V1004_MAX_NAME];
    uint32_t n_elems;
    uint32_t size;
    int32_t fmt;
    int32_t type;
    int32_t qnt_type;
    int8_t fl;
    int32_t zp;
    float scale;
    uint32_t w_stride;
    uint32_t size_with_stride;
    uint8_t pass_through;
    uint32_t h_stride;
} rkf_v1004_attr;

/* What librknnmrt 2.3.2 answers to the query `which` for input/output `index` of the
 * decoded model.  Returns RKF_V1004_OK and fills *out, RKF_V1004_EINVAL for a bad
 * argument or index, or RKF_V1004_EUNKNOWN (with *why) when the tensor is of a kind no
 * recorded answer covers (a dtype other than int8/float16, a rank other than 2 and 4,
 * a native layout other than the ones seen, per-channel quantization, ...): the caller
 * must then not invent an answer. */
int rkf_v1004_query_attr(const rkf_v1004_model *m, rkf_v1004_query which, uint32_t index,
                         rkf_v1004_attr *out, const char **why);

/* MEM_SIZE as the mini runtime answers it after rknn_init: weight, internal, and the
 * DMA bytes it allocated for the model buffer (model_mem_size rounded up to 4096). */
void rkf_v1004_mem_size(const rkf_v1004_model *m, uint32_t *total_weight_size,
                        uint32_t *total_internal_size, uint32_t *total_dma_allocated_size);

#ifdef __cplusplus
}
#endif
#endif /* RKNNX_RKNN_FILE_V1004_H */
