/*
 * rknnx emulator, model half: the parsed model shared by exec.c (op checks, shape
 * inference, kernels, graph run), model.c (parser, accessors) and model_standin.c (the
 * stand-in model).  Private to the model half (the runtime half reads only the format's
 * magic and version from it, in rknn_init).
 *
 * Everything here is immutable once emu_model_load returns, so any number of threads may
 * run one model at once as long as each brings its own env->internal buffer.
 */
#ifndef RKNNX_EMU_MODEL_INTERNAL_H
#define RKNNX_EMU_MODEL_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "emu_model.h"

/* ---- file format constants (see emulator/FORMAT.md) ---------------------------------- */
#define EMU_FMT_MAGIC          "RKNXEMDL"
#define EMU_FMT_MAJOR          1
#define EMU_FMT_MINOR          0
#define EMU_FMT_HEADER_SIZE    32u
#define EMU_FMT_SECTION_SIZE   24u
#define EMU_FMT_MAX_SECTIONS   16u

enum emu_section_kind {
    EMU_SEC_META = 1,
    EMU_SEC_TENSORS = 2,
    EMU_SEC_IO = 3,
    EMU_SEC_OPS = 4,
    EMU_SEC_WEIGHTS = 5,
    EMU_SEC_SHAPES = 6,
    EMU_SEC_KIND_MAX
};

enum emu_opcode {
    EMU_OP_CONV2D = 1,
    EMU_OP_DENSE = 2,
    EMU_OP_ADD = 3,
    EMU_OP_MUL = 4,
    EMU_OP_RELU = 5,
    EMU_OP_SIGMOID = 6,
    EMU_OP_RESHAPE = 7,
    EMU_OP_TRANSPOSE = 8,
    EMU_OP_QUANTIZE = 9,
    EMU_OP_DEQUANTIZE = 10,
    EMU_OP_CAST = 11,
    EMU_OP_CUSTOM = 100
};

/* limits the parser enforces */
#define EMU_MAX_TENSORS        4096u
#define EMU_MAX_OPS            4096u
#define EMU_MAX_OP_IO          16u      /* inputs, and outputs, of one op */
#define EMU_MAX_ATTRS          32u
#define EMU_MAX_ATTR_NAME      63u
#define EMU_MAX_TARGET_LEN     63u
#define EMU_MAX_CUSTOM_STRING  1023u
#define EMU_MAX_IO             256u
#define EMU_MAX_ELEMS          ((uint64_t)1 << 31)  /* elements of one tensor, exclusive */
#define EMU_ALIGN              16u               /* internal buffer placement */

enum emu_tensor_kind { EMU_T_ACTIVATION = 0, EMU_T_CONSTANT = 1 };
enum emu_tensor_role { EMU_ROLE_CONST, EMU_ROLE_INPUT, EMU_ROLE_OUTPUT, EMU_ROLE_INTERNAL };

typedef struct emu_tensor {
    char name[RKNN_MAX_NAME_LEN];
    rknn_tensor_type dtype;
    rknn_tensor_format fmt;
    rknn_tensor_qnt_type qnt_type;
    uint32_t n_dims;
    uint32_t dims[RKNN_MAX_DIMS];      /* declared dims (shape set 0 for dynamic models) */
    int8_t fl;
    uint32_t qaxis;
    uint32_t n_q;                      /* 0, 1 (per tensor) or dims[qaxis] (per channel) */
    int32_t *zp;                       /* n_q entries */
    float *scale;
    uint32_t n_norm;
    float mean[RKNN_MAX_NUM_CHANNEL];
    float std[RKNN_MAX_NUM_CHANNEL];
    uint32_t kind;                     /* emu_tensor_kind */
    uint64_t w_offset, w_length;       /* constants: where in the weight blob */
    uint32_t role;                     /* emu_tensor_role (computed) */
    uint32_t role_index;               /* input / output index */
    int32_t producer;                  /* op index, -1 if none */
    uint32_t dim_offset;               /* into emu_model.set_dims rows (computed) */
} emu_tensor;

typedef struct emu_attr {
    char name[EMU_MAX_ATTR_NAME + 1];
    rknn_tensor_type dtype;
    uint32_t n_elems;
    void *data;                        /* n_elems * element size bytes, 8-aligned copy */
} emu_attr;

typedef struct emu_op {
    uint32_t opcode;
    char name[RKNN_MAX_NAME_LEN];
    char type[RKNN_MAX_NAME_LEN];      /* canonical name, or the custom op type */
    uint32_t n_in, n_out;
    uint32_t in[EMU_MAX_OP_IO];
    uint32_t out[EMU_MAX_OP_IO];
    uint32_t n_attrs;
    emu_attr *attrs;
    /* decoded builtin attributes (exec.c reads these, never the raw attrs) */
    int32_t stride[2], pad[4], dilation[2], groups, relu;
    uint64_t scratch;                  /* scratch bytes this op needs (max over sets) */
} emu_op;

struct emu_model {
    char target[EMU_MAX_TARGET_LEN + 1];
    char *custom_string;
    uint32_t n_tensors;
    emu_tensor *tensors;
    uint32_t n_inputs, n_outputs;
    uint32_t *inputs, *outputs;        /* tensor ids */
    uint32_t n_ops;
    emu_op *ops;
    uint64_t weight_size;
    uint8_t *weights;
    uint32_t n_sets;                   /* 0: static */
    uint32_t dims_per_set;             /* sum of n_dims over tensors */
    uint32_t *set_dims;                /* max(1,n_sets) rows of dims_per_set entries */
    uint64_t *set_offsets;             /* max(1,n_sets) rows of n_tensors internal offsets */
    uint64_t *set_scratch;             /* max(1,n_sets): offset of the scratch area */
    uint64_t internal_size;
    emu_io_desc *in_desc, *out_desc;   /* declared descs (set 0) */
    int standin;                       /* a stand-in (model_standin.c): no graph; its kind's
                                          run (emu_standin_model_run) fills the outputs from
                                          a digest of the inputs */
};

/* ---- the parsed model's accessors, for every file of the half --------------------------
 * Inline here, so that no file of the half calls another for them: the half's files call
 * downward only (emu_model.h's file map). */
static inline size_t emu_model_dtype_size(rknn_tensor_type t)   /* 0 if unsupported */
{
    switch (t) {
    case RKNN_TENSOR_INT8: case RKNN_TENSOR_UINT8: case RKNN_TENSOR_BOOL: return 1;
    case RKNN_TENSOR_FLOAT16: case RKNN_TENSOR_INT16: case RKNN_TENSOR_UINT16:
    case RKNN_TENSOR_BFLOAT16: return 2;
    case RKNN_TENSOR_FLOAT32: case RKNN_TENSOR_INT32: case RKNN_TENSOR_UINT32: return 4;
    case RKNN_TENSOR_INT64: return 8;
    default: return 0;                 /* INT4 (sub-byte) and unknown values */
    }
}

/* the dims of tensor t at shape set `set` (its row in set_dims) */
static inline const uint32_t *emu_model_tensor_dims(const emu_model *m, uint32_t set, uint32_t t)
{
    return m->set_dims + (uint64_t)set * m->dims_per_set + m->tensors[t].dim_offset;
}

static inline uint64_t emu_model_tensor_elems(const emu_model *m, uint32_t set, uint32_t t)
{
    const uint32_t *d = emu_model_tensor_dims(m, set, t);
    uint64_t n = 1;
    for (uint32_t i = 0; i < m->tensors[t].n_dims; i++)
        n *= d[i];                     /* bounded by EMU_MAX_ELEMS at inference time */
    return n;
}

static inline const emu_attr *emu_model_find_attr(const emu_op *op, const char *name)
{
    for (uint32_t i = 0; i < op->n_attrs; i++)
        if (strcmp(op->attrs[i].name, name) == 0)
            return &op->attrs[i];
    return NULL;
}

/* exec.c: checks op i's types and attrs and decodes them into the op (load time); then
   computes its output dims from its input dims for one shape set. */
int emu_exec_check_op(const emu_model *m, emu_op *op);
int emu_exec_infer(const emu_model *m, const emu_op *op, uint32_t set, uint32_t *dims_row,
                   uint64_t *scratch);

#endif /* RKNNX_EMU_MODEL_INTERNAL_H */
