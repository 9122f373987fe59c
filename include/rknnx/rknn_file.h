/*
 * rknn_file.h: the reader of the vendor's `.rknn` model files (the ones rknn-toolkit2 writes).
 *
 * One pure-C library (rknnfile/, its files listed in rknnfile/internal.h) linked into every
 * artifact that reads a file: the emulator libraries (librknnrt.so and librknnrt-1.5.2.so,
 * whose rknn_init stands in for a vendor model) and the Python extension (so `rknnx info`
 * reads a file with no runtime loaded).  The format, with the evidence for every fact used
 * here, is in docs/rknn-file-format.md and docs/rknn-file-format-v1004.md.
 *
 * What it reads:
 *   - the container: magic "RKNN" (or "CYPTRKNN", an encrypted model: said so, nothing else
 *     read), the u64 container version, the payload length, the JSON tail length;
 *   - for container versions 1-6 the payload, a FlatBuffer (root table Model), read by a
 *     minimal bounds-checked table reader of our own: every offset is checked against the
 *     payload, nesting is depth-limited;
 *   - the JSON tail (names, logical shapes, dtypes, the I/O order), by a minimal bounds- and
 *     depth-limited JSON parser;
 *   - the FlatBuffer's `generator` text, a Python-literal dict, by a parser of the literal
 *     subset it uses (dict, list, tuple, str, int, float, True/False/None): never evaluated.
 *     A dynamic model needs it (its shape sets: a generator the parser refuses fails the
 *     read); a static model does not, so there a refused generator only leaves the inputs'
 *     mean/std unknown.
 *
 * For container 0x1004 (RV1103/RV1106/RK2118) the JSON tail holds the signature (names,
 * logical shapes, dtypes) and the payload (its own FlatBuffer schema, read by the same
 * table reader) the rest; a tensor of a kind no file seen has keeps the groups it does not
 * settle unknown (the RKNNX_FILE_KNOWN_* bits), never guessed.
 *
 * What the file states is read here; what a runtime computes from it (strides, padded
 * sizes, the NATIVE_NHWC_* views, its DMA allocations) is not: the emulator computes those
 * for the runtime it plays (emulator/standin.c).
 *
 * Every name carries the prefix rknnx_file_, not rknn_: the emulator's version scripts
 * export rknn_* and nothing else, and the objects are built with hidden visibility.
 *
 * Thread safety: rknnx_file_read() keeps no global state; a model is immutable once read.
 */
#ifndef RKNNX_RKNN_FILE_H
#define RKNNX_RKNN_FILE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RKNNX_FILE_MAX_DIMS 16    /* RKNN_MAX_DIMS */
#define RKNNX_FILE_NAME_LEN 256   /* RKNN_MAX_NAME_LEN, terminating NUL included */
#define RKNNX_FILE_STR_LEN 128    /* short strings: versions, platforms, families */
#define RKNNX_FILE_MAX_NORM 64    /* entries of an input's mean or std list kept (every file
                                   * seen has 1 or 3; the runtime API's inputs have at most
                                   * RKNN_MAX_NUM_CHANNEL = 15 channels) */

/* Container versions seen in files (docs/rknn-file-format.md). */
#define RKNNX_FILE_CONTAINER_V1 1u
#define RKNNX_FILE_CONTAINER_V2 2u
#define RKNNX_FILE_CONTAINER_V6 6u
#define RKNNX_FILE_CONTAINER_V1004 0x1004u

/* ---- status ------------------------------------------------------------------------ */

typedef enum rknnx_file_status {
    RKNNX_FILE_OK = 0,
    RKNNX_FILE_E_ARGUMENT = -1,   /* NULL pointer or an unusable argument */
    RKNNX_FILE_E_NOMEM = -2,      /* allocation failed */
    RKNNX_FILE_E_ENCRYPTED = -3,  /* "CYPTRKNN": an encrypted model; nothing else is readable */
    RKNNX_FILE_E_FORMAT = -4,     /* a check failed: rknnx_file_error.check names which */
    RKNNX_FILE_E_UNSUPPORTED = -5 /* well-formed, but a container version no reader handles */
} rknnx_file_status;

/* What failed, for a status other than OK.  `check` is a stable dotted name a program may
 * test ("magic", "header_length", "payload_length", "json_length", "trailing_bytes",
 * "version", "flatbuffer.root", "flatbuffer.Model.graphs", "flatbuffer.Tensor.name",
 * "json.syntax", "json.norm_tensor", "generator.syntax", "model.io_count", ...);
 * `message` says it in a sentence with the numbers involved; `offset` is the byte offset in
 * the file where the check failed, or -1. */
typedef struct rknnx_file_error {
    int status;
    char check[64];
    char message[256];
    int64_t offset;
} rknnx_file_error;

/* ---- the model ----------------------------------------------------------------------- */

/* Bits of rknnx_file_tensor.known: which groups of fields hold values read from the file.
 * A field outside the set holds 0 / "" / RKNNX_FILE_UNKNOWN and means "not decoded". */
#define RKNNX_FILE_KNOWN_SHAPE 0x01u   /* name, shape/n_shape, layout, type */
#define RKNNX_FILE_KNOWN_ATTR 0x02u    /* n_dims/dims/fmt, n_elems, size (the *_ATTR view) */
#define RKNNX_FILE_KNOWN_QNT 0x04u     /* qnt_type, zp, scale, quantized, per-channel arrays */
#define RKNNX_FILE_KNOWN_NATIVE 0x08u  /* native_fmt, native_n_dims, native_dims, native_size */
#define RKNNX_FILE_KNOWN_NORM 0x10u    /* inputs: n_mean/mean, n_std/std */

#define RKNNX_FILE_UNKNOWN (-1)         /* an int32 enum field not decoded */

typedef enum rknnx_file_role {
    RKNNX_FILE_INPUT = 1,
    RKNNX_FILE_OUTPUT = 2
} rknnx_file_role;

/*
 * One graph input or output, in the runtime's order (the index rknn_query takes).
 *
 * Enum-valued fields use the RKNN C API's numbering (rknn_api.h): fmt and native_fmt are
 * rknn_tensor_format, type is rknn_tensor_type, qnt_type is rknn_tensor_qnt_type; they are
 * int32_t here so that RKNNX_FILE_UNKNOWN fits.
 *
 * Three views of the shape:
 *   shape/n_shape  the logical shape as the file stores it, in the framework's order
 *                  (NCHW for an ONNX model's 4-D tensors), layout `layout`;
 *   dims/n_dims    what the runtime's INPUT_ATTR / OUTPUT_ATTR report, with fmt
 *                  (e.g. a 4-D image input that the compiler made NHWC reports NHWC dims);
 *   native_dims    what NATIVE_INPUT_ATTR / NATIVE_OUTPUT_ATTR report, with native_fmt
 *                  (NC1HWC2 5-D for most 4-D outputs, as the compiler stored it).
 * What the runtime computes beyond the file (w_stride, h_stride, size_with_stride, the
 * NATIVE_NHWC_* views) is the emulator's to compute, from these and the chip.
 *
 * Quantization: for an AFFINE tensor real = (q - zp) * scale.  `quantized` says whether the
 * file holds quantization parameters for the tensor; a float16 tensor has none, and the
 * runtimes report it as qnt_type AFFINE with zp 0 and scale 1 (RK3566/RK3588, runtime
 * 1.5.2/1.6.0; the mini runtime 2.3.2 says scale 0: fp16_net_rk2118): qnt_type/zp/scale here
 * are that runtime view.  Per-channel quantization keeps
 * every channel in scales[]/zps[] (n_qnt entries; for a per-layer tensor n_qnt is 1 and
 * scales[0] == scale).
 *
 * Normalization (inputs): the mean and std the toolkit was given, which the runtime applies
 * as (x - mean[c]) / std[c] before the model sees an input (on the CPU for a float16 input:
 * fp16_net_rk3588/rk3566, runtimes 1.5.2 and 1.6.0; docs/abi-notes.md, "NPU-side bytes").
 * Raw as the file lists them: a list may hold 1 entry (for every channel) or one per
 * channel, and mean and std need not have the same length (fp16_net: mean [0], std
 * [255, 255, 255]).  Read from the generator's attrs[<input name>] 'mean' and 'std' of a
 * format 6 file; RKNNX_FILE_KNOWN_NORM is set only when both are lists of 1 to
 * RKNNX_FILE_MAX_NORM numbers.  Otherwise (containers 1, 2 and 0x1004, an input the attrs do
 * not list, a list that is not one of numbers, a generator the parser refuses) the counts
 * are 0 and the bit is clear: unknown, never an error.
 */
typedef struct rknnx_file_tensor {
    uint32_t index;                     /* position among the inputs (or outputs) */
    int32_t role;                       /* rknnx_file_role */
    char name[RKNNX_FILE_NAME_LEN];
    uint32_t known;                     /* RKNNX_FILE_KNOWN_* bits */

    uint32_t n_shape;                   /* logical shape, framework order */
    uint32_t shape[RKNNX_FILE_MAX_DIMS];
    char layout[16];                    /* the logical layout: "NCHW", "NHWC", "" */

    uint32_t n_dims;                    /* INPUT_ATTR / OUTPUT_ATTR view */
    uint32_t dims[RKNNX_FILE_MAX_DIMS];
    int32_t fmt;                        /* rknn_tensor_format */
    int32_t type;                       /* rknn_tensor_type of the NPU-side data; may be
                                         * RKNNX_FILE_UNKNOWN in a 0x1004 file whose tail
                                         * names no dtype (then size is 0) */
    int32_t attr_type;                  /* the rknn_tensor_type INPUT_ATTR / OUTPUT_ATTR
                                         * report: `type`, except in a container 1 file,
                                         * whose I/O JSON names the user's type (float32
                                         * or uint8; runtimes 1.4.0, 1.5.2 and 1.6.0 report
                                         * that, docs/rknn-file-format.md) */
    uint32_t n_elems;                   /* product of dims */
    uint32_t size;                      /* n_elems * element size of attr_type, bytes */

    int32_t qnt_type;                   /* rknn_tensor_qnt_type */
    int32_t zp;
    float scale;
    int32_t quantized;                  /* 1: the file holds scale/zp for it; 0: none */
    char qnt_method[16];                /* the file's "layer" / "channel", or "" */
    uint32_t n_qnt;                     /* entries in scales/zps (0 when none) */
    const float *scales;                /* owned by the model */
    const int32_t *zps;                 /* owned by the model */

    int32_t native_fmt;                 /* NATIVE_*_ATTR view */
    uint32_t native_n_dims;
    uint32_t native_dims[RKNNX_FILE_MAX_DIMS];
    uint32_t native_size;               /* product of native_dims * element size, bytes */

    uint32_t n_mean;                    /* inputs: entries in mean[] (0 when not known) */
    uint32_t n_std;                     /* inputs: entries in std[] (0 when not known) */
    float mean[RKNNX_FILE_MAX_NORM];
    float std[RKNNX_FILE_MAX_NORM];

    /* Raw facts of the file, for tools and the emulator (docs/rknn-file-format.md). */
    char npu_dtype[16];                 /* the I/O JSON's "dtype": "int8", "float16", ... */
    char npu_layout[16];                /* the I/O JSON's "layout": "NHWC", "NCHW", ... */
    int32_t file_dtype_code;            /* Tensor slot 0, or RKNNX_FILE_UNKNOWN */
    int32_t file_layout_code;           /* Tensor slot 1, or RKNNX_FILE_UNKNOWN */
    uint32_t file_planned_size;         /* bytes the compiler planned for the NPU buffer (Tensor
                                         * slot 12; 0x1004: slot 8), or 0 */
    uint32_t file_mem_offset;           /* 0x1004: the offset in the internal memory (slot 9) */
    uint32_t file_width_align;          /* 0x1004 inputs: the row alignment in elements (slot
                                         * 12), or 0 */
} rknnx_file_tensor;

/* One input shape of one shape set (dynamic models). */
typedef struct rknnx_file_shape {
    uint32_t n_dims;
    uint32_t dims[RKNNX_FILE_MAX_DIMS];
} rknnx_file_shape;

typedef struct rknnx_file_custom_op {
    char name[RKNNX_FILE_NAME_LEN];     /* the node's name */
    char type[RKNNX_FILE_STR_LEN];      /* the op type, e.g. "cstDualResidual" */
} rknnx_file_custom_op;

typedef struct rknnx_file_model {
    /* container */
    uint64_t container_version;         /* 1, 2, 6, 0x1004 seen */
    uint32_t header_size;               /* 24 for version 1, 64 otherwise */
    uint64_t payload_offset;            /* == header_size */
    uint64_t payload_size;
    uint64_t json_offset;
    uint64_t json_size;
    uint64_t file_size;

    /* model */
    uint32_t format_version;            /* FlatBuffer Model slot 0 (1 or 6); 0 if none */
    char npu_family[RKNNX_FILE_STR_LEN];  /* "RKNPU v2", "RKNPU lite", ... ("" if unknown) */
    char chip[RKNNX_FILE_STR_LEN];      /* the chip family from npu_family: "RK3588", "RK3566" */
    char target_platform[RKNNX_FILE_STR_LEN]; /* as stored: "rk3588", "rv1106", ... */
    char toolkit_version[RKNNX_FILE_STR_LEN];  /* "2.5.0", "1.3.4-source_code" */
    char compiler_version[RKNNX_FILE_STR_LEN]; /* "2.5.0 (74ea630ce@2026-09-29T14:54:20)" */
    uint32_t compiler_version_int;      /* MMmmpp, e.g. 20500; 0 if absent */
    char framework[RKNNX_FILE_STR_LEN]; /* "ONNX", ... */
    int32_t dynamic;                    /* 1 dynamic_shape, 0 static_shape */

    uint32_t n_inputs;
    uint32_t n_outputs;
    rknnx_file_tensor *inputs;          /* n_inputs entries, runtime order */
    rknnx_file_tensor *outputs;         /* n_outputs entries, runtime order */

    /* Dynamic shape sets: n_shape_sets sets of n_inputs shapes, in the file's (and the
     * runtime's INPUT_DYNAMIC_RANGE) order; shape_sets[s * n_inputs + i] is input i of
     * set s, in the INPUT_ATTR view (dims order and fmt of inputs[i]). */
    uint32_t n_shape_sets;
    rknnx_file_shape *shape_sets;

    uint32_t n_custom_ops;
    rknnx_file_custom_op *custom_ops;

    /* Memory the compiler planned (Model slot 19, a table of u64s; format 6): what
     * rknn_query(RKNN_QUERY_MEM_SIZE) reports as total_weight_size and total_internal_size
     * (runtime 1.6.0, every served file; 1.5.2 reports other sizes for dynamic models).
     * For 0x1004 files they come from the payload header, as the mini runtime reports them.
     * Containers 1 and 2 have no slot 19: the plan is derived from the tensors, as the runtimes
     * report it (docs/rknn-file-format.md, "The memory plan of containers 1 and 2").
     * has_mem_sizes is 0, and the sizes 0, when nothing gives them. */
    int32_t has_mem_sizes;
    uint64_t weight_size;
    uint64_t internal_size;
    /* Constant tensors whose data the file leaves out (format 6: a Tensor's slot 18 names
     * an empty blob of Model slot 20; toolkit option remove_weight=True).  Where there are
     * any, weight_size is not the plan but what runtimes 1.5.2 and 1.6.0 report for such a
     * file: the constants the file still holds, each rounded up to 64 bytes. */
    uint32_t n_removed_weights;

    /* Container 0x1004: the payload header's other regions (docs/rknn-file-format-v1004.md);
     * 0 for the other versions.  The mini runtime allocates the task region as its "task"
     * buffer, and regcmd_size + const_size + weight_size + internal_size, in that order, as
     * its "model" buffer.  const_size: the constants the compiler generated (the identity
     * kernels of the convolutions a Concat output becomes, ...), 0 in most graphs. */
    uint32_t task_count;
    uint64_t task_size;
    uint64_t regcmd_size;
    uint64_t const_size;
} rknnx_file_model;

/* ---- functions ----------------------------------------------------------------------- */

/* What the first bytes say: 1 a vendor model ("RKNN"), 2 an encrypted vendor model
 * ("CYPTRKNN"), 0 anything else (including fewer than 8 bytes). */
int rknnx_file_sniff(const void *data, size_t size);

/* Read a whole file held in memory.  On success returns RKNNX_FILE_OK and sets *out to a
 * model the caller frees with rknnx_file_free().  On failure returns a negative status,
 * sets *out to NULL and, when err is not NULL, fills it.  Never reads outside data[0, size). */
int rknnx_file_read(const void *data, size_t size, rknnx_file_model **out,
                    rknnx_file_error *err);

/* Free a model from rknnx_file_read (NULL is fine). */
void rknnx_file_free(rknnx_file_model *model);

/* A short name of a status: "ok", "argument", "nomem", "encrypted", "format", "unsupported". */
const char *rknnx_file_status_name(int status);

/* The chip an NPU family string stands for ("RKNPU v2" -> "RK3588", "RKNPU lite" ->
 * "RK3566"), or NULL.  rknnx_file_model.chip is this, or, within a family of chips sharing
 * one NPU (RK3566/RK3568, RV1106/RV1103), the one the target platform names. */
const char *rknnx_file_chip_of_family(const char *npu_family);

/* The size of one element of an rknn_tensor_type, bytes (0 for an unknown type; INT4 1). */
uint32_t rknnx_file_type_size(int32_t type);

#ifdef __cplusplus
}
#endif

#endif /* RKNNX_RKNN_FILE_H */
