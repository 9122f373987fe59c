/*
 * rknn_file_v1004.c - decoder of the 0x1004 .rknn payload (RV1103 / RV1106 / RK2118).
 * The layout and the evidence for every field: docs/rknn-file-format-v1004.md.
 *
 * Safety model: every read goes through the fb_* / rd_* helpers below, which take the
 * buffer length and check the whole span before touching a byte; offsets are computed in
 * uint64_t so that no addition can wrap.  The traversal is fixed (Model -> Graph ->
 * Tensor), without recursion, so hostile offsets cannot loop or nest deeply.
 */
#include "rknn_file_v1004.h"

#include <stdlib.h>
#include <string.h>

/* ---- little-endian loads (no alignment assumption) ------------------------------------ */
static uint16_t ld16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }
static uint32_t ld32(const uint8_t *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) |
           ((uint32_t)p[3] << 24);
}
static float ldf32(const uint8_t *p)
{
    uint32_t u = ld32(p);
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* ---- a bounds-checked FlatBuffer reader ------------------------------------------------- */
typedef struct fbuf {
    const uint8_t *b;
    uint64_t n;
} fbuf;

/* A table: its position, its vtable and the object size the vtable declares. */
typedef struct ftab {
    uint64_t pos, vt;
    uint32_t vt_size, obj_size;
} ftab;

#define FAIL(code, msg)                                                                    \
    do {                                                                                   \
        *why = (msg);                                                                      \
        return (code);                                                                     \
    } while (0)

static int span_ok(const fbuf *f, uint64_t off, uint64_t len)
{
    return off <= f->n && len <= f->n - off;
}

static int fb_table(const fbuf *f, uint64_t pos, ftab *t, const char **why)
{
    if (!span_ok(f, pos, 4))
        FAIL(RKF_V1004_EFORMAT, "FlatBuffer table offset out of bounds");
    int32_t so = (int32_t)ld32(f->b + pos);
    int64_t vt = (int64_t)pos - (int64_t)so;
    if (vt < 0 || !span_ok(f, (uint64_t)vt, 4))
        FAIL(RKF_V1004_EFORMAT, "FlatBuffer vtable offset out of bounds");
    uint32_t vs = ld16(f->b + vt), os = ld16(f->b + vt + 2);
    if (vs < 4 || (vs & 1u) || !span_ok(f, (uint64_t)vt, vs))
        FAIL(RKF_V1004_EFORMAT, "FlatBuffer vtable size invalid");
    if (os < 4 || !span_ok(f, pos, os))
        FAIL(RKF_V1004_EFORMAT, "FlatBuffer table size out of bounds");
    t->pos = pos;
    t->vt = (uint64_t)vt;
    t->vt_size = vs;
    t->obj_size = os;
    return RKF_V1004_OK;
}

/* Position of field `slot` of width `w` bytes, or 0 when the field is absent. */
static int fb_field(const fbuf *f, const ftab *t, unsigned slot, uint32_t w, uint64_t *at,
                    const char **why)
{
    *at = 0;
    if (4u + 2u * slot + 2u > t->vt_size)
        return RKF_V1004_OK;
    uint32_t fo = ld16(f->b + t->vt + 4 + 2 * slot);
    if (fo == 0)
        return RKF_V1004_OK;
    if (fo < 4 || (uint64_t)fo + w > t->obj_size)
        FAIL(RKF_V1004_EFORMAT, "FlatBuffer field outside its table");
    *at = t->pos + fo;
    return RKF_V1004_OK;
}

/* Follow the uoffset stored at `at` (which must lie in the buffer). */
static int fb_deref(const fbuf *f, uint64_t at, uint64_t *dst, const char **why)
{
    if (!span_ok(f, at, 4))
        FAIL(RKF_V1004_EFORMAT, "FlatBuffer offset field out of bounds");
    uint64_t d = at + ld32(f->b + at);
    if (!span_ok(f, d, 4))
        FAIL(RKF_V1004_EFORMAT, "FlatBuffer offset points outside the buffer");
    *dst = d;
    return RKF_V1004_OK;
}

/* Vector of `elem`-byte elements referenced by the field at `at`. */
static int fb_vector(const fbuf *f, uint64_t at, uint32_t elem, uint64_t *data, uint32_t *count,
                     const char **why)
{
    uint64_t v;
    int rc = fb_deref(f, at, &v, why);
    if (rc)
        return rc;
    uint32_t n = ld32(f->b + v);
    if (!span_ok(f, v + 4, (uint64_t)n * elem))
        FAIL(RKF_V1004_EFORMAT, "FlatBuffer vector or string longer than the buffer");
    *data = v + 4;
    *count = n;
    return RKF_V1004_OK;
}

static int fb_string(const fbuf *f, uint64_t at, uint64_t *data, uint32_t *len, const char **why)
{
    return fb_vector(f, at, 1, data, len, why);
}

/* Optional scalar u32 field; *present says whether the file holds it. */
static int fb_u32(const fbuf *f, const ftab *t, unsigned slot, uint32_t *v, int *present,
                  const char **why)
{
    uint64_t at;
    int rc = fb_field(f, t, slot, 4, &at, why);
    if (rc)
        return rc;
    *present = at != 0;
    *v = at ? ld32(f->b + at) : 0;
    return RKF_V1004_OK;
}

static int fb_u8(const fbuf *f, const ftab *t, unsigned slot, uint8_t *v, int *present,
                 const char **why)
{
    uint64_t at;
    int rc = fb_field(f, t, slot, 1, &at, why);
    if (rc)
        return rc;
    *present = at != 0;
    *v = at ? f->b[at] : 0;
    return RKF_V1004_OK;
}

/* Optional string field copied (NUL-terminated, cut to cap-1 bytes) into dst.
 * *cut is set when the stored string was longer. */
static int fb_copy_string(const fbuf *f, const ftab *t, unsigned slot, char *dst, size_t cap,
                          int *present, int *cut, const char **why)
{
    uint64_t at, d;
    uint32_t n;
    dst[0] = '\0';
    *present = 0;
    if (cut)
        *cut = 0;
    int rc = fb_field(f, t, slot, 4, &at, why);
    if (rc || !at)
        return rc;
    rc = fb_string(f, at, &d, &n, why);
    if (rc)
        return rc;
    size_t k = n < cap - 1 ? n : cap - 1;
    if (cut && k < n)
        *cut = 1;
    memcpy(dst, f->b + d, k);
    dst[k] = '\0';
    *present = 1;
    return RKF_V1004_OK;
}

/* Element i of a vector of tables starting at `data`. */
static int fb_vec_table(const fbuf *f, uint64_t data, uint32_t i, ftab *t, const char **why)
{
    uint64_t d;
    int rc = fb_deref(f, data + 4ull * i, &d, why);
    return rc ? rc : fb_table(f, d, t, why);
}

/* ---- payload header ---------------------------------------------------------------------- */
#define PAYLOAD_HEADER 64u   /* six u32 sizes, then zero padding */
#define TASK_RECORD    40u   /* bytes per task record */

/* ---- the Tensor table -------------------------------------------------------------------- */
/* Slots of the Tensor table (docs/rknn-file-format-v1004.md, "Tensor table"). */
enum {
    T_DTYPE = 0, T_LAYOUT = 1, T_KIND = 2, T_NATIVE_SHAPE = 3, T_SHAPE = 4, T_NAME = 5,
    T_SCALE = 6, T_ZP = 7, T_SIZE = 8, T_OFFSET = 9, T_ID = 10, T_WIDTH_ALIGN = 12
};

static int read_dims(const fbuf *f, const ftab *t, unsigned slot, uint32_t *n_dims, uint32_t *dims,
                     int *present, const char **why)
{
    uint64_t at, data;
    uint32_t n;
    *n_dims = 0;
    *present = 0;
    int rc = fb_field(f, t, slot, 4, &at, why);
    if (rc || !at)
        return rc;
    rc = fb_vector(f, at, 4, &data, &n, why);
    if (rc)
        return rc;
    if (n > RKF_V1004_MAX_DIMS)
        FAIL(RKF_V1004_EFORMAT, "tensor shape has more than 16 dims");
    for (uint32_t i = 0; i < n; i++)
        dims[i] = ld32(f->b + data + 4ull * i);
    *n_dims = n;
    *present = 1;
    return RKF_V1004_OK;
}

static int read_tensor(const fbuf *f, const ftab *t, rkf_v1004_tensor *o, const char **why)
{
    int rc, have, cut;
    uint64_t at, data;
    uint32_t v;

    memset(o, 0, sizeof *o);
    o->dtype = -1;
    o->native_fmt = -1;
    o->qnt_type = -1;
    o->tensor_id = -1;

    if ((rc = fb_u8(f, t, T_DTYPE, &o->dtype_code, &have, why)))
        return rc;
    if (have) {
        if (o->dtype_code == RKF_V1004_DT_INT8) {
            o->dtype = RKF_V1004_TYPE_INT8;
            o->elem_size = 1;
            o->known |= RKF_V1004_K_DTYPE;
        } else if (o->dtype_code == RKF_V1004_DT_FLOAT16) {
            o->dtype = RKF_V1004_TYPE_FLOAT16;
            o->elem_size = 2;
            o->known |= RKF_V1004_K_DTYPE;
        }
    }
    if ((rc = fb_u8(f, t, T_LAYOUT, &o->layout_code, &have, why)))
        return rc;
    if ((rc = fb_u8(f, t, T_KIND, &o->kind, &have, why)))
        return rc;

    if ((rc = read_dims(f, t, T_NATIVE_SHAPE, &o->n_native_dims, o->native_dims, &have, why)))
        return rc;
    if (have)
        o->known |= RKF_V1004_K_NATIVE_DIMS;
    if ((rc = read_dims(f, t, T_SHAPE, &o->n_dims, o->dims, &have, why)))
        return rc;
    if (have)
        o->known |= RKF_V1004_K_DIMS;

    /* Native layout: 64 is NC1HWC2 with a 5-D native shape; an absent field (0) goes with a
     * native shape equal to a logical shape of rank below 4. */
    if (o->layout_code == RKF_V1004_LAYOUT_NATIVE && o->n_native_dims == 5) {
        o->native_fmt = RKF_V1004_FMT_NC1HWC2;
        o->known |= RKF_V1004_K_LAYOUT;
    } else if (o->layout_code == RKF_V1004_LAYOUT_NHWC && o->n_native_dims == 4) {
        o->native_fmt = RKF_V1004_FMT_NHWC;
        o->known |= RKF_V1004_K_LAYOUT;
    } else if (o->layout_code == RKF_V1004_LAYOUT_NONE && o->n_native_dims < 4) {
        o->native_fmt = RKF_V1004_FMT_UNDEFINED;
        o->known |= RKF_V1004_K_LAYOUT;
    }

    if ((rc = fb_copy_string(f, t, T_NAME, o->name, sizeof o->name, &have, &cut, why)))
        return rc;
    if (have)
        o->known |= RKF_V1004_K_NAME | (cut ? RKF_V1004_K_NAME_CUT : 0u);

    /* Quantization: a float vector of scales and an int32 vector of zero points. */
    int have_s = 0, have_z = 0;
    if ((rc = fb_field(f, t, T_SCALE, 4, &at, why)))
        return rc;
    if (at) {
        if ((rc = fb_vector(f, at, 4, &data, &o->n_scale, why)))
            return rc;
        if (o->n_scale)
            o->scale = ldf32(f->b + data);
        have_s = 1;
    }
    if ((rc = fb_field(f, t, T_ZP, 4, &at, why)))
        return rc;
    if (at) {
        if ((rc = fb_vector(f, at, 4, &data, &o->n_zp, why)))
            return rc;
        if (o->n_zp)
            o->zp = (int32_t)ld32(f->b + data);
        have_z = 1;
    }
    /* Affine per-tensor quantization (one scale, one zero point), or a float16 tensor with
     * neither (the runtime reports AFFINE, scale 0, zp 0): the two cases the answers cover. */
    if (have_s && have_z &&
        ((o->n_scale == 1 && o->n_zp == 1) ||
         (o->n_scale == 0 && o->n_zp == 0 && o->dtype_code == RKF_V1004_DT_FLOAT16))) {
        o->qnt_type = RKF_V1004_QNT_AFFINE;
        o->known |= RKF_V1004_K_QNT;
    }

    if ((rc = fb_u32(f, t, T_SIZE, &o->native_size, &have, why)))
        return rc;
    if (have)
        o->known |= RKF_V1004_K_NATIVE_SIZE;
    /* An absent offset is the FlatBuffer default 0 (the first tensor of the region). */
    if ((rc = fb_u32(f, t, T_OFFSET, &o->mem_offset, &have, why)))
        return rc;
    o->known |= RKF_V1004_K_MEM_OFFSET;
    if ((rc = fb_u32(f, t, T_ID, &v, &have, why)))
        return rc;
    o->tensor_id = (int32_t)v;
    if ((rc = fb_u32(f, t, T_WIDTH_ALIGN, &o->width_align, &have, why)))
        return rc;
    if (have && o->width_align)
        o->known |= RKF_V1004_K_WIDTH_ALIGN;
    return RKF_V1004_OK;
}

/* The per-input normalisation record (Graph slot 4): mean[4], std[4], order[4]. */
static int read_norm(const fbuf *f, const ftab *t, rkf_v1004_tensor *o, const char **why)
{
    for (unsigned slot = 0; slot < 2; slot++) {
        uint64_t at, data;
        uint32_t n;
        int rc = fb_field(f, t, slot, 4, &at, why);
        if (rc)
            return rc;
        if (!at)
            return RKF_V1004_OK;
        if ((rc = fb_vector(f, at, 4, &data, &n, why)))
            return rc;
        if (n != 4)
            return RKF_V1004_OK;
        for (unsigned i = 0; i < 4; i++)
            (slot ? o->norm_std : o->norm_mean)[i] = ldf32(f->b + data + 4ull * i);
    }
    o->known |= RKF_V1004_K_STD;
    return RKF_V1004_OK;
}

/* ---- decode ------------------------------------------------------------------------------- */
static int decode_fb(const fbuf *f, rkf_v1004_model *m, size_t fb_base, const char **why)
{
    int rc, have;
    ftab model, graph, t;
    uint64_t at, data;
    uint32_t n, v;

    if (f->n < 8)
        FAIL(RKF_V1004_ETRUNC, "FlatBuffer shorter than its root offset and identifier");
    if (memcmp(f->b + 4, "RKNN", 4) != 0)
        FAIL(RKF_V1004_EFORMAT, "FlatBuffer file identifier is not RKNN");
    if ((rc = fb_table(f, ld32(f->b), &model, why)))
        return rc;

    if ((rc = fb_u32(f, &model, 0, &m->format_version, &have, why)))
        return rc;
    if ((rc = fb_copy_string(f, &model, 1, m->npu_family, sizeof m->npu_family, &have, NULL, why)))
        return rc;
    if ((rc = fb_field(f, &model, 3, 4, &at, why)))
        return rc;
    if (at) {
        if ((rc = fb_string(f, at, &data, &n, why)))
            return rc;
        m->generator_offset = fb_base + (size_t)data;
        m->generator_len = n;
    }
    if ((rc = fb_u32(f, &model, 4, &m->compiler_version, &have, why)))
        return rc;
    if ((rc = fb_copy_string(f, &model, 5, m->compiler, sizeof m->compiler, &have, NULL, why)))
        return rc;
    if ((rc = fb_copy_string(f, &model, 6, m->platform, sizeof m->platform, &have, NULL, why)))
        return rc;
    if ((rc = fb_copy_string(f, &model, 7, m->framework, sizeof m->framework, &have, NULL, why)))
        return rc;

    /* Model slot 2: the graphs (one in every file). */
    if ((rc = fb_field(f, &model, 2, 4, &at, why)))
        return rc;
    if (!at)
        FAIL(RKF_V1004_EFORMAT, "Model table has no graph");
    if ((rc = fb_vector(f, at, 4, &data, &n, why)))
        return rc;
    if (n < 1)
        FAIL(RKF_V1004_EFORMAT, "Model table has no graph");
    if ((rc = fb_vec_table(f, data, 0, &graph, why)))
        return rc;

    /* Graph slot 0: tensors. */
    uint64_t tdata;
    if ((rc = fb_field(f, &graph, 0, 4, &at, why)))
        return rc;
    if (!at)
        FAIL(RKF_V1004_EFORMAT, "Graph table has no tensor vector");
    if ((rc = fb_vector(f, at, 4, &tdata, &m->n_tensors, why)))
        return rc;
    if (m->n_tensors > RKF_V1004_MAX_TENSORS)
        FAIL(RKF_V1004_EFORMAT, "Graph has more tensors than the decoder accepts");

    /* Graph slots 2 and 3: indices of the inputs and outputs in the tensor vector. */
    uint64_t idata[2];
    uint32_t icount[2];
    for (unsigned k = 0; k < 2; k++) {
        if ((rc = fb_field(f, &graph, 2 + k, 4, &at, why)))
            return rc;
        if (!at)
            FAIL(RKF_V1004_EFORMAT,
                 k ? "Graph table has no output list" : "Graph table has no input list");
        if ((rc = fb_vector(f, at, 4, &idata[k], &icount[k], why)))
            return rc;
        if (icount[k] > m->n_tensors)
            FAIL(RKF_V1004_EFORMAT, "Graph lists more inputs/outputs than tensors");
    }
    m->inputs = calloc(icount[0] ? icount[0] : 1, sizeof *m->inputs);
    m->outputs = calloc(icount[1] ? icount[1] : 1, sizeof *m->outputs);
    if (!m->inputs || !m->outputs)
        FAIL(RKF_V1004_ENOMEM, "out of memory");
    m->n_inputs = icount[0];
    m->n_outputs = icount[1];
    for (unsigned k = 0; k < 2; k++) {
        for (uint32_t i = 0; i < icount[k]; i++) {
            v = ld32(f->b + idata[k] + 4ull * i);
            if (v >= m->n_tensors)
                FAIL(RKF_V1004_EFORMAT, "input/output index beyond the tensor vector");
            if ((rc = fb_vec_table(f, tdata, v, &t, why)))
                return rc;
            if ((rc = read_tensor(f, &t, k ? &m->outputs[i] : &m->inputs[i], why)))
                return rc;
        }
    }

    /* Graph slot 4: one normalisation record per input, in input order. */
    if ((rc = fb_field(f, &graph, 4, 4, &at, why)))
        return rc;
    if (at) {
        if ((rc = fb_vector(f, at, 4, &data, &n, why)))
            return rc;
        if (n == m->n_inputs) {
            for (uint32_t i = 0; i < n; i++) {
                if ((rc = fb_vec_table(f, data, i, &t, why)))
                    return rc;
                if ((rc = read_norm(f, &t, &m->inputs[i], why)))
                    return rc;
            }
        }
    }
    return RKF_V1004_OK;
}

int rkf_v1004_decode(const uint8_t *payload, size_t len, rkf_v1004_model *out, const char **why)
{
    const char *dummy;
    if (!why)
        why = &dummy;
    *why = NULL;
    if (!out)
        FAIL(RKF_V1004_EINVAL, "no output struct");
    memset(out, 0, sizeof *out);
    if (!payload)
        FAIL(RKF_V1004_EINVAL, "no payload");
    if (len < PAYLOAD_HEADER)
        FAIL(RKF_V1004_ETRUNC, "payload shorter than its 64-byte header");

    rkf_v1004_model m;
    memset(&m, 0, sizeof m);
    m.fb_size = ld32(payload + 0);
    m.task_size = ld32(payload + 4);
    m.task_count = ld32(payload + 8);
    m.regcmd_size = ld32(payload + 12);
    m.internal_size = ld32(payload + 16);
    m.weight_size = ld32(payload + 20);
    m.model_mem_size = (uint64_t)m.regcmd_size + m.weight_size + m.internal_size;

    uint64_t need = (uint64_t)PAYLOAD_HEADER + m.task_size + m.regcmd_size + m.weight_size +
                    m.fb_size;
    if (need > len)
        FAIL(RKF_V1004_ETRUNC, "payload shorter than its header's region sizes");
    if (need < len)
        FAIL(RKF_V1004_EFORMAT, "payload longer than its header's region sizes");
    if ((uint64_t)m.task_count * TASK_RECORD > m.task_size)
        FAIL(RKF_V1004_EFORMAT, "task region smaller than its task count");
    m.task_offset = PAYLOAD_HEADER;
    m.regcmd_offset = m.task_offset + m.task_size;
    m.weight_offset = m.regcmd_offset + m.regcmd_size;
    m.fb_offset = m.weight_offset + m.weight_size;

    fbuf f = { payload + m.fb_offset, m.fb_size };
    int rc = decode_fb(&f, &m, m.fb_offset, why);
    if (rc) {
        rkf_v1004_free(&m);
        return rc;
    }
    *out = m;
    return RKF_V1004_OK;
}

void rkf_v1004_free(rkf_v1004_model *m)
{
    if (!m)
        return;
    free(m->inputs);
    free(m->outputs);
    memset(m, 0, sizeof *m);
}

/* ---- the mini runtime's view ---------------------------------------------------------------
 * Rules that reproduce librknnmrt 2.3.2's answers for every 0x1004 file of the corpus
 * (docs/rknn-file-format-v1004.md, "What the runtime reports").  Anything outside the cases
 * those answers cover is refused with RKF_V1004_EUNKNOWN rather than extrapolated. */
static int mul_ok(uint64_t *acc, uint64_t x)
{
    if (x && *acc > UINT32_MAX / x)
        return 0;
    *acc *= x;
    return 1;
}

static int prod_dims(const uint32_t *d, uint32_t n, uint64_t *p)
{
    *p = 1;
    for (uint32_t i = 0; i < n; i++)
        if (!mul_ok(p, d[i]))
            return 0;
    return 1;
}

int rkf_v1004_query_attr(const rkf_v1004_model *m, rkf_v1004_query which, uint32_t index,
                         rkf_v1004_attr *out, const char **why)
{
    const char *dummy;
    if (!why)
        why = &dummy;
    *why = NULL;
    if (!m || !out)
        FAIL(RKF_V1004_EINVAL, "no model or output struct");
    int is_out;
    switch (which) {
    case RKF_V1004_INPUT_ATTR:
    case RKF_V1004_NATIVE_INPUT_ATTR:
    case RKF_V1004_NATIVE_NHWC_INPUT_ATTR: is_out = 0; break;
    case RKF_V1004_OUTPUT_ATTR:
    case RKF_V1004_NATIVE_OUTPUT_ATTR:
    case RKF_V1004_NATIVE_NHWC_OUTPUT_ATTR: is_out = 1; break;
    default: FAIL(RKF_V1004_EINVAL, "unknown query");
    }
    if (index >= (is_out ? m->n_outputs : m->n_inputs))
        FAIL(RKF_V1004_EINVAL, "index beyond the model's inputs/outputs");
    const rkf_v1004_tensor *t = is_out ? &m->outputs[index] : &m->inputs[index];

    const uint32_t need = RKF_V1004_K_NAME | RKF_V1004_K_DIMS | RKF_V1004_K_NATIVE_DIMS |
                          RKF_V1004_K_DTYPE | RKF_V1004_K_LAYOUT | RKF_V1004_K_QNT |
                          RKF_V1004_K_NATIVE_SIZE;
    if ((t->known & need) != need)
        FAIL(RKF_V1004_EUNKNOWN, "tensor lacks a field the runtime's answer is derived from");
    int four = t->n_dims == 4;
    if (!four && t->n_dims != 2)
        FAIL(RKF_V1004_EUNKNOWN,
             "runtime view of a tensor of rank other than 2 and 4 not established");
    /* Seen: 4-D with NC1HWC2 native, 2-D with no native layout. */
    if (four ? t->native_fmt != RKF_V1004_FMT_NC1HWC2 : t->native_fmt != RKF_V1004_FMT_UNDEFINED)
        FAIL(RKF_V1004_EUNKNOWN, "runtime view of this native layout not established");
    if (!four && (t->n_native_dims != 2 || memcmp(t->native_dims, t->dims, 2 * sizeof(uint32_t))))
        FAIL(RKF_V1004_EUNKNOWN,
             "runtime view of a 2-D tensor with another native shape not established");
    if (!is_out && four && !(t->known & RKF_V1004_K_WIDTH_ALIGN))
        FAIL(RKF_V1004_EUNKNOWN, "4-D input without a width alignment");

    uint64_t n_elems, n_native;
    if (!prod_dims(t->dims, t->n_dims, &n_elems) ||
        !prod_dims(t->native_dims, t->n_native_dims, &n_native) ||
        n_elems * t->elem_size > UINT32_MAX ||
        n_native * t->elem_size > UINT32_MAX)
        FAIL(RKF_V1004_EFORMAT, "tensor shape overflows 32-bit sizes");

    memset(out, 0, sizeof *out);
    out->index = index;
    memcpy(out->name, t->name, sizeof out->name);
    out->type = t->dtype;
    out->qnt_type = t->qnt_type;
    out->zp = t->zp;
    out->scale = t->scale;
    out->n_elems = (uint32_t)n_elems;
    out->size = (uint32_t)(n_elems * t->elem_size);
    out->size_with_stride = out->size;

    /* NHWC view of a logical NCHW shape. */
    uint32_t nhwc[4] = { 0, 0, 0, 0 };
    if (four) {
        nhwc[0] = t->dims[0];
        nhwc[1] = t->dims[2];
        nhwc[2] = t->dims[3];
        nhwc[3] = t->dims[1];
    }
    if (!is_out) {
        /* The three input queries answer alike: NHWC for 4-D, the shape as is for 2-D. */
        out->n_dims = t->n_dims;
        if (four) {
            memcpy(out->dims, nhwc, sizeof nhwc);
            out->fmt = RKF_V1004_FMT_NHWC;
            uint32_t a = t->width_align, w = t->dims[3];
            uint64_t ws = ((uint64_t)w + a - 1) / a * a;
            if (ws > UINT32_MAX)
                FAIL(RKF_V1004_EFORMAT, "tensor shape overflows 32-bit sizes");
            out->w_stride = (uint32_t)ws;
            out->size_with_stride = t->native_size;
        } else {
            memcpy(out->dims, t->dims, 2 * sizeof(uint32_t));
            out->fmt = RKF_V1004_FMT_UNDEFINED;
        }
        return RKF_V1004_OK;
    }
    switch (which) {
    case RKF_V1004_OUTPUT_ATTR:
        out->n_dims = t->n_dims;
        memcpy(out->dims, t->dims, t->n_dims * sizeof(uint32_t));
        out->fmt = four ? RKF_V1004_FMT_NCHW : RKF_V1004_FMT_UNDEFINED;
        break;
    case RKF_V1004_NATIVE_OUTPUT_ATTR:
        out->n_dims = t->n_native_dims;
        memcpy(out->dims, t->native_dims, t->n_native_dims * sizeof(uint32_t));
        out->fmt = t->native_fmt;
        out->n_elems = (uint32_t)n_native;
        out->size = t->native_size;
        out->size_with_stride = t->native_size;
        out->w_stride = four ? t->native_dims[3] : 0;
        break;
    default: /* RKF_V1004_NATIVE_NHWC_OUTPUT_ATTR */
        out->n_dims = t->n_dims;
        if (four)
            memcpy(out->dims, nhwc, sizeof nhwc);
        else
            memcpy(out->dims, t->dims, 2 * sizeof(uint32_t));
        out->fmt = four ? RKF_V1004_FMT_NHWC : RKF_V1004_FMT_UNDEFINED;
        out->size_with_stride = (uint32_t)(n_native * t->elem_size);
        break;
    }
    return RKF_V1004_OK;
}

void rkf_v1004_mem_size(const rkf_v1004_model *m, uint32_t *total_weight_size,
                        uint32_t *total_internal_size, uint32_t *total_dma_allocated_size)
{
    uint64_t dma = m ? (m->model_mem_size + 4095u) / 4096u * 4096u : 0;
    if (total_weight_size)
        *total_weight_size = m ? m->weight_size : 0;
    if (total_internal_size)
        *total_internal_size = m ? m->internal_size : 0;
    if (total_dma_allocated_size)
        *total_dma_allocated_size = dma > UINT32_MAX ? UINT32_MAX : (uint32_t)dma;
}
