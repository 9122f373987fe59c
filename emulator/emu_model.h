/*
 * rknnx emulator: the contract between the model half (file format, parser, graph
 * executor, stand-in: exec.c, model.c, model_standin.c) and the runtime half (the rknn_*
 * API: contexts, queries, conversions, memory, cache emulation: runtime_core.c,
 * runtime_context.c, runtime_io.c, runtime_layout.c, runtime_mem.c, runtime_custom.c,
 * runtime_matmul.c, ...).
 *
 * The executor works in the *model's* terms: every input and output buffer it sees is
 * in the tensor's model type (emu_io_desc.type) and logical layout (emu_io_desc.fmt,
 * dims), packed, no stride padding.  Everything the user-facing API adds on top
 * (user type/format conversion, mean/std, quantization, want_float, native NC1HWC2 /
 * NHWC layouts with w_stride, cache coherence) is the runtime half's job.
 *
 * The half's files, bottom first: a file calls functions of the files listed before it,
 * never of one listed after it (tests/package/test_emulator_layers.py reads this list).
 * Each kind of model brings its own run function (emu_model_run_fn), which the runtime
 * half takes from its kinds' table, so no file runs another kind's model by name.
 *   exec.c              the ops: their checks and shape inference (asked by the parser),
 *                       their kernels, and the graph run of the emulator's own models
 *   model.c             the parser of the emulator's format (emulator/FORMAT.md), the
 *                       model's accessors and its free
 *   model_standin.c     the stand-in model of a vendor file (no graph) and its run
 */
#ifndef RKNNX_EMU_MODEL_H
#define RKNNX_EMU_MODEL_H

#include <stddef.h>
#include <stdint.h>
#include "rknn_api.h"
#include "rknn_custom_op.h"

/* One model input or output as the model declares it. */
typedef struct emu_io_desc {
    char name[RKNN_MAX_NAME_LEN];
    uint32_t n_dims;
    uint32_t dims[RKNN_MAX_DIMS];      /* in the order of fmt (NHWC, NCHW or as-is) */
    rknn_tensor_format fmt;            /* NHWC (4-D images), NCHW, or UNDEFINED */
    rknn_tensor_type type;             /* model type: INT8, UINT8, FLOAT16, FLOAT32, ... */
    rknn_tensor_qnt_type qnt_type;     /* NONE or AFFINE_ASYMMETRIC (DFP: fl) */
    int8_t fl;
    int32_t zp;
    float scale;
    uint32_t n_norm;                   /* inputs: mean/std entries, one per channel (0 = none) */
    float mean[RKNN_MAX_NUM_CHANNEL];
    float std[RKNN_MAX_NUM_CHANNEL];
    int vendor_rules;                  /* a stand-in's tensor (of a vendor file); the layout
                                          rules are the vendor's for every tensor
                                          (runtime_layout.c), so nothing reads it there */
} emu_io_desc;

typedef struct emu_model emu_model;

/* A tensor handed to a custom-op callback: its description and its data. */
typedef struct emu_tensor_view {
    emu_io_desc desc;
    void *data;
} emu_tensor_view;

/*
 * Called by the executor when the graph reaches an op of kind "custom".  Returns
 * RKNN_SUCC or a negative status (which aborts the run with that status).  Set by the
 * runtime half from the ops registered with rknn_register_custom_ops.
 */
typedef int (*emu_custom_op_fn)(void *user, const emu_model *m, uint32_t op_index,
                                const char *op_type, emu_tensor_view *inputs, uint32_t n_inputs,
                                emu_tensor_view *outputs, uint32_t n_outputs);

/* Everything a run needs besides the I/O buffers. */
typedef struct emu_run_env {
    const uint8_t *weights;            /* the weight blob (emu_model_weight_size bytes), where
                                          the runtime put it: its own copy, a shared context's,
                                          or the caller's rknn_set_weight_mem buffer */
    uint8_t *internal;                 /* scratch for intermediates, >= emu_model_internal_size */
    uint64_t internal_size;
    uint32_t shape_set;                /* dynamic models: the chosen shape set; else 0 */
    emu_custom_op_fn custom_op;        /* NULL: a custom op in the graph fails the run */
    void *custom_user;
    int64_t *op_time_us;               /* optional: per-op elapsed time, emu_model_n_ops entries */
} emu_run_env;

/* Parse a model file image.  Every length and offset is bounds-checked: malformed or
   truncated bytes give RKNN_ERR_MODEL_INVALID, never a crash.  Data is copied. */
int emu_model_load(const void *data, size_t size, emu_model **out);
void emu_model_free(emu_model *m);
/* A stand-in model (model_standin.c, docs/standin.md): n_in inputs and n_out outputs as
   described, no graph.  n_sets 0 for a static model; otherwise in_dims / out_dims hold
   n_sets rows, row s = the dims of every input (resp. output) at set s, each input
   RKNN_MAX_DIMS entries wide.  Its run fills every output from a digest of the inputs. */
int emu_model_new_standin(const char *target, const emu_io_desc *ins, uint32_t n_in,
                          const emu_io_desc *outs, uint32_t n_out, uint32_t n_sets,
                          const uint32_t *in_dims, const uint32_t *out_dims, emu_model **out);
int emu_model_is_standin(const emu_model *m);

const char *emu_model_target(const emu_model *m);        /* "RK3588", "RK3566", "RV1106", ... */
const char *emu_model_custom_string(const emu_model *m); /* "" if none; < 1024 bytes */
uint32_t emu_model_n_inputs(const emu_model *m);
uint32_t emu_model_n_outputs(const emu_model *m);
const emu_io_desc *emu_model_input(const emu_model *m, uint32_t i);   /* NULL if out of range */
const emu_io_desc *emu_model_output(const emu_model *m, uint32_t i);

/* Dynamic shapes: 0 for a static model.  For set s, the dims of input i and of output o
   (in the desc's fmt order); NULL if out of range.  Output dims are computed by the
   parser's shape inference when the model is loaded. */
uint32_t emu_model_n_shape_sets(const emu_model *m);
const uint32_t *emu_model_input_dims(const emu_model *m, uint32_t set, uint32_t i, uint32_t *n_dims);
const uint32_t *emu_model_output_dims(const emu_model *m, uint32_t set, uint32_t o, uint32_t *n_dims);

uint64_t emu_model_weight_size(const emu_model *m);      /* bytes of constants */
const uint8_t *emu_model_weights(const emu_model *m);    /* the model file's copy of them */
uint64_t emu_model_internal_size(const emu_model *m);    /* scratch bytes (max over shape sets) */

uint32_t emu_model_n_ops(const emu_model *m);
const char *emu_model_op_name(const emu_model *m, uint32_t i);
const char *emu_model_op_type(const emu_model *m, uint32_t i);  /* "conv2d", ..., or the custom
                                                                   op_type string */
/* A named attribute of op i (custom ops carry theirs in the file); 0 on success. */
int emu_model_op_attr(const emu_model *m, uint32_t i, const char *name, rknn_tensor_type *dtype,
                      uint32_t *n_elems, const void **data);

/* 1 if op i is a custom op (its type is the model's op_type string), else 0. */
int emu_model_op_is_custom(const emu_model *m, uint32_t i);
/* The views of op i's inputs and outputs (at most 16 each) as a run at env->shape_set would
   hand them to env->custom_op, resolved against inputs / outputs / env->weights /
   env->internal; a base that is NULL (or a NULL array) gives NULL data.  Lets the runtime
   call a custom op's init before any run.  0 on success. */
int emu_model_op_views(const emu_model *m, uint32_t op_index, const void *const *inputs,
                       void *const *outputs, const emu_run_env *env, emu_tensor_view *ins,
                       uint32_t *n_in, emu_tensor_view *outs, uint32_t *n_out);

/* A model's run: inputs[i] holds input i packed in its model type and layout at the
   current shape set's dims; outputs[o] receives output o likewise.  Thread-safe for
   distinct env->internal buffers.  Returns RKNN_SUCC or a negative status. */
typedef int (*emu_model_run_fn)(const emu_model *m, const void *const *inputs,
                                void *const *outputs, const emu_run_env *env);

/* The run of the emulator's own models (exec.c): the graph, op by op.  A stand-in, which
   has none, is refused (RKNN_ERR_PARAM_INVALID): it runs by emu_standin_model_run. */
int emu_model_run(const emu_model *m, const void *const *inputs, void *const *outputs,
                  const emu_run_env *env);
/* The run of a stand-in (model_standin.c, docs/standin.md): every output filled from a
   digest of the inputs at env->shape_set; the rest of env is not read. */
int emu_standin_model_run(const emu_model *m, const void *const *inputs, void *const *outputs,
                          const emu_run_env *env);

#endif /* RKNNX_EMU_MODEL_H */
