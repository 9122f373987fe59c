/*
 * rknnfile/payload_v1004.c: the payload of container version 0x1004, the files rknn-toolkit2
 * writes for RV1103, RV1106 and RK2118 (docs/rknn-file-format-v1004.md has the layout and
 * the evidence for every field):
 *
 *   payload = 64-byte payload header (u32 sizes, zero padding)
 *           | task records | register commands | the compiler's constants | weights
 *           | FlatBuffer (identifier "RKNN")
 *
 * (the compiler's constants: identity kernels of the convolutions it turns a Concat output
 * into, and the like; 0 bytes in a graph that needs none)
 *
 * The JSON tail has filled the inputs and outputs (names, logical shapes, dtypes) before
 * this runs (container.c); the payload's Tensor tables must agree with it (check
 * "v1004.io") and fill the rest of the common model directly: the attribute view, the
 * native view, quantization, the file's raw codes and sizes, and the model's NPU family,
 * compiler and memory sizes.  A tensor of a kind no file of the corpus has (a dtype code
 * other than int8 and float16, a rank other than 2 and 4, another native layout,
 * per-channel quantization) keeps those groups unknown: what the runtimes compute from the
 * views (strides, padded sizes) is the emulator's (emulator/standin.c).
 */
#include "internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

typedef rknnx_file_fbuf fbuf;
typedef rknnx_file_ftab ftab;

#define PAYLOAD_HEADER 64u   /* the u32 sizes, then zero padding */
#define TASK_RECORD 40u      /* bytes per task record */
#define MAX_TENSORS 65536u   /* more tensors than this: refused as malformed */

/* Slots of the Tensor table (docs/rknn-file-format-v1004.md, "Tensor"). */
enum {
    T_DTYPE = 0, T_LAYOUT = 1, T_KIND = 2, T_NATIVE_SHAPE = 3, T_SHAPE = 4, T_NAME = 5,
    T_SCALE = 6, T_ZP = 7, T_SIZE = 8, T_OFFSET = 9, T_WIDTH_ALIGN = 12
};
/* Raw codes of the Tensor table seen on inputs and outputs (ONNX's numbering). */
enum { DT_INT8 = 3, DT_INT16 = 5, DT_FLOAT16 = 10 };
enum { LAYOUT_NONE = 0, LAYOUT_NHWC = 1, LAYOUT_NATIVE = 64 };

/* A failed check of the payload: "0x1004 payload: <what>[: <detail>]". */
#if defined(__GNUC__)
__attribute__((format(printf, 5, 6)))
#endif
static int v1004_fail(rknnx_file_error *err, int status, const char *check, int64_t offset,
                      const char *fmt, ...)
{
    if (err) {
        va_list ap;
        int n;
        err->status = status;
        snprintf(err->check, sizeof err->check, "%s", check);
        n = snprintf(err->message, sizeof err->message, "0x1004 payload: ");
        va_start(ap, fmt);
        vsnprintf(err->message + n, sizeof err->message - (size_t)n, fmt, ap);
        va_end(ap);
        err->offset = offset;
    }
    return status;
}

/* ---- one Tensor table ------------------------------------------------------------------ */

/* What a Tensor table holds (absent fields: 0, and their `has_` flag clear). */
typedef struct v1004_tensor {
    char name[RKNNX_FILE_NAME_LEN];
    uint32_t n_shape, shape[RKNNX_FILE_MAX_DIMS];
    uint32_t n_nat, nat[RKNNX_FILE_MAX_DIMS];
    int has_shape, has_nat;
    int32_t dtype_code, layout_code;
    size_t spos, zpos;          /* scale (float) and zero point (int32) vectors, 0: absent */
    uint32_t ns, nz;
    uint32_t planned, offset, width_align;
    int has_planned;
} v1004_tensor;

static int read_table(const fbuf *f, const ftab *tt, v1004_tensor *d)
{
    size_t at;
    int rc;
    memset(d, 0, sizeof *d);
    if ((rc = rknnx_file_fb_u8(f, tt, T_DTYPE, "dtype", 0, &d->dtype_code, NULL)) != 0 ||
        (rc = rknnx_file_fb_u8(f, tt, T_LAYOUT, "layout", 0, &d->layout_code, NULL)) != 0 ||
        (rc = rknnx_file_fb_str(f, tt, T_NAME, "name", d->name, sizeof d->name)) != 0 ||
        (rc = rknnx_file_fb_field(f, tt, T_NATIVE_SHAPE, 4, "native_shape", &at)) != 0) {
        return rc;
    }
    d->has_nat = at != 0;
    if ((rc = rknnx_file_fb_dims(f, tt, T_NATIVE_SHAPE, "native_shape", d->name, &d->n_nat,
                                 d->nat)) != 0 ||
        (rc = rknnx_file_fb_field(f, tt, T_SHAPE, 4, "shape", &at)) != 0) {
        return rc;
    }
    d->has_shape = at != 0;
    if ((rc = rknnx_file_fb_dims(f, tt, T_SHAPE, "shape", d->name, &d->n_shape, d->shape)) != 0 ||
        (rc = rknnx_file_fb_vector(f, tt, T_SCALE, 4, "scale", &d->spos, &d->ns)) != 0 ||
        (rc = rknnx_file_fb_vector(f, tt, T_ZP, 4, "zero_point", &d->zpos, &d->nz)) != 0 ||
        (rc = rknnx_file_fb_u32(f, tt, T_SIZE, "size", 0, &d->planned, &d->has_planned)) != 0 ||
        (rc = rknnx_file_fb_u32(f, tt, T_OFFSET, "offset", 0, &d->offset, NULL)) != 0 ||
        (rc = rknnx_file_fb_u32(f, tt, T_WIDTH_ALIGN, "width_align", 0, &d->width_align,
                                NULL)) != 0) {
        return rc;
    }
    return RKNNX_FILE_OK;
}

/* The runtime type of the codes a runtime answer confirms: int8 (every int8 file), int16
 * (yolov8_pose_rv1106's keypoints, librknnmrt 2.3.2: type INT16), float16 (fp16_net_rk2118). */
static int32_t type_of(const v1004_tensor *d)
{
    switch (d->dtype_code) {
    case DT_INT8: return RKNNX_FILE_T_INT8;
    case DT_INT16: return RKNNX_FILE_T_INT16;
    case DT_FLOAT16: return RKNNX_FILE_T_FLOAT16;
    default: return RKNNX_FILE_UNKNOWN;
    }
}

/* The native layout the codes state, or RKNNX_FILE_UNKNOWN: 64 is NC1HWC2 (a 5-D native
 * shape), 1 NHWC (4-D), none UNDEFINED (a native shape of rank below 4). */
static int32_t native_fmt_of(const v1004_tensor *d)
{
    if (d->layout_code == LAYOUT_NATIVE && d->n_nat == 5) {
        return RKNNX_FILE_F_NC1HWC2;
    }
    if (d->layout_code == LAYOUT_NHWC && d->n_nat == 4) {
        return RKNNX_FILE_F_NHWC;
    }
    if (d->layout_code == LAYOUT_NONE && d->n_nat < 4) {
        return RKNNX_FILE_F_UNDEFINED;
    }
    return RKNNX_FILE_UNKNOWN;
}

/* Whether the views of t are the kind every 0x1004 file of the corpus has: a 4-D tensor with
 * an NC1HWC2 native shape (an input with its width alignment), or a 2-D one whose native
 * shape is its shape; int8 or int16 with one scale and zero point, or float16 with none. */
static int views_known(const v1004_tensor *d, int is_in)
{
    int32_t nf = native_fmt_of(d);
    int qnt = d->spos && d->zpos &&
              ((d->ns == 1 && d->nz == 1) || (d->ns == 0 && d->nz == 0 &&
                                               d->dtype_code == DT_FLOAT16));
    if (!d->has_shape || !d->has_nat || type_of(d) == RKNNX_FILE_UNKNOWN ||
        nf == RKNNX_FILE_UNKNOWN || !qnt || !d->has_planned) {
        return 0;
    }
    if (d->n_shape == 4) {
        return nf == RKNNX_FILE_F_NC1HWC2 && (!is_in || d->width_align);
    }
    return d->n_shape == 2 && nf == RKNNX_FILE_F_UNDEFINED && d->n_nat == 2 &&
           d->nat[0] == d->shape[0] && d->nat[1] == d->shape[1];
}

/* Input or output t (filled from the JSON tail) from its Tensor table. */
static int fill_tensor(const fbuf *f, const ftab *tt, rknnx_file_tensor *t,
                       rknnx_file_error *err)
{
    v1004_tensor d;
    int is_in = t->role == RKNNX_FILE_INPUT;
    int32_t type;
    uint64_t es;
    int rc = read_table(f, tt, &d);
    if (rc) {
        return rc;
    }
    if (strcmp(t->name, d.name) != 0) {
        return v1004_fail(err, RKNNX_FILE_E_FORMAT, "v1004.io", (int64_t)(f->file_off + tt->pos),
                          "an input/output name differs from the JSON tail's: %s", d.name);
    }
    if (t->n_shape != d.n_shape || memcmp(t->shape, d.shape, d.n_shape * sizeof d.shape[0])) {
        return v1004_fail(err, RKNNX_FILE_E_FORMAT, "v1004.io", (int64_t)(f->file_off + tt->pos),
                          "an input/output shape differs from the JSON tail's: %s", d.name);
    }
    type = type_of(&d);
    if (type != RKNNX_FILE_UNKNOWN) {
        if (t->type != RKNNX_FILE_UNKNOWN && t->type != type) {
            return v1004_fail(err, RKNNX_FILE_E_FORMAT, "v1004.io",
                              (int64_t)(f->file_off + tt->pos), "an input/output dtype differs "
                              "from the JSON tail's: %s", d.name);
        }
        t->type = type;
    }
    t->file_dtype_code = d.dtype_code;
    t->file_layout_code = d.layout_code;
    t->file_planned_size = d.planned;
    t->file_mem_offset = d.offset;
    t->file_width_align = d.width_align;
    if (!views_known(&d, is_in)) {
        return RKNNX_FILE_OK;   /* the tail's fields stay as they are */
    }
    es = rknnx_file_type_size(type);
    if (rknnx_file_prod(d.shape, d.n_shape) * es > UINT32_MAX ||
        rknnx_file_prod(d.nat, d.n_nat) * es > UINT32_MAX) {
        return v1004_fail(err, RKNNX_FILE_E_FORMAT, "v1004.payload",
                          (int64_t)(f->file_off + tt->pos), "tensor shape overflows 32-bit "
                          "sizes: %s", d.name);
    }
    /* The views (docs/rknn-file-format-v1004.md, "The views"): a 4-D input is NHWC, and its
     * native view that same NHWC (its native shape [N, 1, H, W, C] is one block of all
     * channels); a 4-D output is NCHW with the native NC1HWC2 shape and the compiler's
     * planned bytes; a 2-D tensor is UNDEFINED in both. */
    rknnx_file_set_attr_view(t, is_in);
    if (is_in) {
        rknnx_file_set_native_view(t, t->fmt, t->dims, t->n_dims, 0);
    } else {
        rknnx_file_set_native_view(t, native_fmt_of(&d), d.nat, d.n_nat, 0);
        t->native_size = d.planned;
    }
    t->qnt_type = RKNNX_FILE_Q_AFFINE;
    t->quantized = d.ns > 0;
    if (t->quantized) {
        float scale = rknnx_file_rdf32(f->b + d.spos);
        int32_t zp = (int32_t)rknnx_file_rd32(f->b + d.zpos);
        if ((rc = rknnx_file_set_qnt(t, 1, &scale, &zp, err)) != 0) {
            return rc;
        }
    } else {
        /* float16: the mini runtime reports AFFINE with scale 0 and zp 0 (fp16_net_rk2118) */
        t->scale = 0.0f;
        t->zp = 0;
    }
    t->known |= RKNNX_FILE_KNOWN_QNT;
    return RKNNX_FILE_OK;
}

/* ---- the Model table --------------------------------------------------------------------- */

/* A string field copied into dst, cut to fit (these strings are informative only). */
static int cut_str(const fbuf *f, const ftab *t, unsigned slot, const char *field, char *dst,
                   size_t cap)
{
    const uint8_t *s;
    size_t n;
    int rc = rknnx_file_fb_string(f, t, slot, field, &s, &n);
    dst[0] = '\0';
    if (rc || !s) {
        return rc;
    }
    while (n && s[n - 1] == '\0') {
        n--;
    }
    if (n >= cap) {
        n = cap - 1;
    }
    memcpy(dst, s, n);
    dst[n] = '\0';
    return RKNNX_FILE_OK;
}

/* The Model's own fields: format version, NPU family, compiler, platform, framework. */
static int read_model_fields(const fbuf *f, const ftab *root, rknnx_file_model *m)
{
    char family[RKNNX_FILE_STR_LEN], compiler[256], platform[RKNNX_FILE_STR_LEN];
    char framework[RKNNX_FILE_STR_LEN];
    static const char key[] = "(compiler version: ";
    const char *p;
    int rc;
    if ((rc = rknnx_file_fb_u32(f, root, 0, "version", 0, &m->format_version, NULL)) != 0 ||
        (rc = cut_str(f, root, 1, "target", family, sizeof family)) != 0 ||
        (rc = rknnx_file_fb_u32(f, root, 4, "compiler_int", 0, &m->compiler_version_int,
                                NULL)) != 0 ||
        (rc = cut_str(f, root, 5, "compiler", compiler, sizeof compiler)) != 0 ||
        (rc = cut_str(f, root, 6, "platform", platform, sizeof platform)) != 0 ||
        (rc = cut_str(f, root, 7, "framework", framework, sizeof framework)) != 0) {
        return rc;
    }
    if (family[0]) {
        rknnx_file_set_str(m->npu_family, sizeof m->npu_family, family);
    }
    if (!m->target_platform[0]) {
        rknnx_file_set_str(m->target_platform, sizeof m->target_platform, platform);
    }
    if (!m->framework[0]) {
        rknnx_file_set_str(m->framework, sizeof m->framework, framework);
    }
    /* "2.5.0(compiler version: 2.5.0 (74ea630ce@...))" -> "2.5.0 (74ea630ce@...)" */
    p = strstr(compiler, key);
    if (p && !m->compiler_version[0]) {
        size_t n;
        p += sizeof key - 1;
        n = strlen(p);
        if (n && p[n - 1] == ')') {
            n--;
        }
        snprintf(m->compiler_version, sizeof m->compiler_version, "%.*s", (int)n, p);
    }
    return RKNNX_FILE_OK;
}

/* The FlatBuffer at the payload's end: Model -> graphs[0] -> its tensors, inputs, outputs. */
static int read_fb(const fbuf *f, rknnx_file_model *m, rknnx_file_error *err)
{
    ftab root, g;
    size_t gpos, tpos, io_pos[2];
    uint32_t n_graphs, n_tensors, io_n[2], k;
    int rc;
    if ((rc = rknnx_file_fb_root(f, "RKNN", &root)) != 0 ||
        (rc = read_model_fields(f, &root, m)) != 0 ||
        (rc = rknnx_file_fb_vector(f, &root, 2, 4, "graphs", &gpos, &n_graphs)) != 0) {
        return rc;
    }
    if (n_graphs == 0) {
        return rknnx_file_fb_fail(f, "Model", "graphs", root.pos, "the model has no graph");
    }
    if ((rc = rknnx_file_fb_vector_table(f, gpos, 0, "Graph", "graphs", &g)) != 0 ||
        (rc = rknnx_file_fb_vector(f, &g, 0, 4, "tensors", &tpos, &n_tensors)) != 0) {
        return rc;
    }
    if (n_tensors == 0 || n_tensors > MAX_TENSORS) {
        return rknnx_file_fb_fail(f, "Graph", "tensors", g.pos, "the graph has %u tensors (1 "
                                  "to %u expected)", n_tensors, MAX_TENSORS);
    }
    if ((rc = rknnx_file_fb_index_vector(f, &g, 2, "inputs", n_tensors, &io_pos[0],
                                         &io_n[0])) != 0 ||
        (rc = rknnx_file_fb_index_vector(f, &g, 3, "outputs", n_tensors, &io_pos[1],
                                         &io_n[1])) != 0) {
        return rc;
    }
    if (io_n[0] != m->n_inputs || io_n[1] != m->n_outputs) {
        return v1004_fail(err, RKNNX_FILE_E_FORMAT, "v1004.io", (int64_t)(f->file_off + g.pos),
                          "the payload lists other inputs/outputs than the JSON tail: %u "
                          "inputs and %u outputs, the JSON tail %u and %u", io_n[0], io_n[1],
                          m->n_inputs, m->n_outputs);
    }
    for (k = 0; k < io_n[0] + io_n[1]; k++) {
        int is_in = k < io_n[0];
        uint32_t j = is_in ? k : k - io_n[0];
        uint32_t ix = rknnx_file_rd32(f->b + io_pos[is_in ? 0 : 1] + 4 * (size_t)j);
        ftab tt;
        if ((rc = rknnx_file_fb_vector_table(f, tpos, ix, "Tensor", "tensors", &tt)) != 0 ||
            (rc = fill_tensor(f, &tt, is_in ? &m->inputs[j] : &m->outputs[j], err)) != 0) {
            return rc;
        }
    }
    return RKNNX_FILE_OK;
}

/* ---- the payload ------------------------------------------------------------------------- */

int rknnx_file_read_payload_v1004(const uint8_t *payload, size_t size, uint64_t file_off,
                                  rknnx_file_model *m, rknnx_file_error *err)
{
    uint32_t fb_size, task_size, task_count, regcmd_size, internal_size, weight_size;
    uint32_t const_size;
    uint64_t need, fb_off;
    int64_t at = (int64_t)file_off;
    fbuf f;
    int rc;
    if (size < PAYLOAD_HEADER) {
        return v1004_fail(err, RKNNX_FILE_E_FORMAT, "v1004.payload", at, "payload shorter than "
                          "its 64-byte header (%zu bytes)", size);
    }
    fb_size = rknnx_file_rd32(payload + 0);
    task_size = rknnx_file_rd32(payload + 4);
    task_count = rknnx_file_rd32(payload + 8);
    regcmd_size = rknnx_file_rd32(payload + 12);
    internal_size = rknnx_file_rd32(payload + 16);
    weight_size = rknnx_file_rd32(payload + 20);
    /* the compiler's constants, between the register commands and the weights: 0 in a graph
     * that needs none (docs/rknn-file-format-v1004.md, "Payload header") */
    const_size = rknnx_file_rd32(payload + 24);
    need = (uint64_t)PAYLOAD_HEADER + task_size + regcmd_size + const_size + weight_size +
           fb_size;
    if (need > size) {
        return v1004_fail(err, RKNNX_FILE_E_FORMAT, "v1004.payload", at, "payload shorter than "
                          "its header's region sizes (%llu bytes, the regions %llu)",
                          (unsigned long long)size, (unsigned long long)need);
    }
    if (need < size) {
        return v1004_fail(err, RKNNX_FILE_E_FORMAT, "v1004.payload", at, "payload longer than "
                          "its header's region sizes (%llu bytes, the regions %llu)",
                          (unsigned long long)size, (unsigned long long)need);
    }
    if ((uint64_t)task_count * TASK_RECORD > task_size) {
        return v1004_fail(err, RKNNX_FILE_E_FORMAT, "v1004.payload", at + 8, "task region "
                          "smaller than its task count (%u records of %u bytes in %u bytes)",
                          task_count, TASK_RECORD, task_size);
    }
    fb_off = need - fb_size;
    f.b = payload + fb_off;
    f.n = fb_size;
    f.file_off = file_off + fb_off;
    f.err = err;
    if ((rc = read_fb(&f, m, err)) != 0) {
        return rc;
    }
    /* The payload header's weight and internal sizes are what MEM_SIZE reports (librknnmrt
     * 2.3.2, every 0x1004 file); the regions size the runtime's buffers. */
    m->has_mem_sizes = 1;
    m->weight_size = weight_size;
    m->internal_size = internal_size;
    m->task_count = task_count;
    m->task_size = task_size;
    m->regcmd_size = regcmd_size;
    m->const_size = const_size;
    return RKNNX_FILE_OK;
}
