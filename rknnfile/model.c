/*
 * rknnfile/model.c: the common model every container version fills (rknn_file.h): errors,
 * the NPU families and chips, the tensor types, the attribute and native views a file
 * states, per-channel quantization, freeing.
 */
#include "internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- errors and strings --------------------------------------------------------------- */

int rknnx_file_fail(rknnx_file_error *err, int status, const char *check, int64_t offset,
                    const char *fmt, ...)
{
    if (err) {
        va_list ap;
        err->status = status;
        snprintf(err->check, sizeof err->check, "%s", check);
        va_start(ap, fmt);
        vsnprintf(err->message, sizeof err->message, fmt, ap);
        va_end(ap);
        err->offset = offset;
    }
    return status;
}

const char *rknnx_file_status_name(int status)
{
    switch (status) {
    case RKNNX_FILE_OK: return "ok";
    case RKNNX_FILE_E_ARGUMENT: return "argument";
    case RKNNX_FILE_E_NOMEM: return "nomem";
    case RKNNX_FILE_E_ENCRYPTED: return "encrypted";
    case RKNNX_FILE_E_FORMAT: return "format";
    case RKNNX_FILE_E_UNSUPPORTED: return "unsupported";
    default: return "unknown";
    }
}

float rknnx_file_rdf32(const uint8_t *p)
{
    uint32_t u = rknnx_file_rd32(p);
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

int rknnx_file_copy_span(char *dst, size_t cap, const uint8_t *s, size_t n)
{
    if (n >= cap) {
        return -1;
    }
    memcpy(dst, s, n);
    dst[n] = '\0';
    return 0;
}

void rknnx_file_set_str(char *dst, size_t cap, const char *src)
{
    size_t n = strlen(src);
    if (n >= cap) {
        n = cap - 1;
    }
    memcpy(dst, src, n);
    dst[n] = '\0';
}

/* ---- NPU families and chips ----------------------------------------------------------- */

/*
 * The FlatBuffer's NPU family (printed by the runtime as `target:`) and the chips it stands for
 * (docs/rknn-file-format.md, "NPU families"): the first is the family's name, the others share
 * its NPU.  The family decides; the target platform only picks among the chips of the family
 * (one RK3588 file of toolkit 1.1.2 says platform rk3566).
 */
static const char *const FAMILIES[][4] = {
    {"RKNPU v2", "RK3588", NULL, NULL},
    {"RKNPU lite", "RK3566", "RK3568", NULL},
    {"RKNPU f2", "RK3576", NULL, NULL},
    {"RKNPU t4", "RK3562", NULL, NULL},
    {"RKNPU f3", "RV1126B", NULL, NULL},
    {"RKNPU t3", "RV1106", "RV1103", NULL},
};

const char *rknnx_file_chip_of_family(const char *npu_family)
{
    size_t k;
    if (!npu_family) {
        return NULL;
    }
    for (k = 0; k < sizeof FAMILIES / sizeof FAMILIES[0]; k++) {
        if (strcmp(npu_family, FAMILIES[k][0]) == 0) {
            return FAMILIES[k][1];
        }
    }
    return NULL;
}

/* Upper-case a platform name ("rv1103" -> "RV1103") into dst. */
static void upper(char *dst, size_t cap, const char *src)
{
    size_t k;
    for (k = 0; src[k] && k + 1 < cap; k++) {
        char c = src[k];
        dst[k] = (c >= 'a' && c <= 'z') ? (char)(c - 'a' + 'A') : c;
    }
    dst[k] = '\0';
}

void rknnx_file_decide_chip(rknnx_file_model *m)
{
    char plat[RKNNX_FILE_STR_LEN];
    size_t k, j;
    upper(plat, sizeof plat, m->target_platform);
    for (k = 0; k < sizeof FAMILIES / sizeof FAMILIES[0]; k++) {
        if (strcmp(m->npu_family, FAMILIES[k][0]) != 0) {
            continue;
        }
        rknnx_file_set_str(m->chip, sizeof m->chip, FAMILIES[k][1]);
        for (j = 1; j < 4 && FAMILIES[k][j]; j++) {
            if (strcmp(plat, FAMILIES[k][j]) == 0) {
                rknnx_file_set_str(m->chip, sizeof m->chip, plat);
            }
        }
        return;
    }
    /* No known NPU family (RK2118's "RKNPU w2"): the target platform names the chip. */
    rknnx_file_set_str(m->chip, sizeof m->chip, plat);
}

/* ---- tensor types ----------------------------------------------------------------------- */

uint32_t rknnx_file_type_size(int32_t type)
{
    switch (type) {
    case RKNNX_FILE_T_FLOAT32: case RKNNX_FILE_T_INT32: case RKNNX_FILE_T_UINT32: return 4;
    case RKNNX_FILE_T_FLOAT16: case RKNNX_FILE_T_INT16: case RKNNX_FILE_T_UINT16:
    case RKNNX_FILE_T_BFLOAT16: return 2;
    case RKNNX_FILE_T_INT8: case RKNNX_FILE_T_UINT8: case RKNNX_FILE_T_BOOL:
    case RKNNX_FILE_T_INT4: return 1;
    case RKNNX_FILE_T_INT64: return 8;
    default: return 0;
    }
}

int32_t rknnx_file_type_of_code(int32_t code)
{
    switch (code) {
    case 1: return RKNNX_FILE_T_FLOAT32;
    case 2: return RKNNX_FILE_T_UINT8;
    case 3: return RKNNX_FILE_T_INT8;
    case 4: return RKNNX_FILE_T_UINT16;
    case 5: return RKNNX_FILE_T_INT16;
    case 6: return RKNNX_FILE_T_INT32;
    case 7: return RKNNX_FILE_T_INT64;
    case 9: return RKNNX_FILE_T_BOOL;
    case 10: return RKNNX_FILE_T_FLOAT16;
    case 12: return RKNNX_FILE_T_UINT32;
    case 16: return RKNNX_FILE_T_BFLOAT16;
    default: return RKNNX_FILE_UNKNOWN;
    }
}

int32_t rknnx_file_type_of_name(const char *s)
{
    static const struct { const char *name; int32_t type; } names[] = {
        {"float32", RKNNX_FILE_T_FLOAT32}, {"float16", RKNNX_FILE_T_FLOAT16},
        {"int8", RKNNX_FILE_T_INT8}, {"uint8", RKNNX_FILE_T_UINT8},
        {"int16", RKNNX_FILE_T_INT16}, {"uint16", RKNNX_FILE_T_UINT16},
        {"int32", RKNNX_FILE_T_INT32}, {"uint32", RKNNX_FILE_T_UINT32},
        {"int64", RKNNX_FILE_T_INT64}, {"bool", RKNNX_FILE_T_BOOL},
        {"int4", RKNNX_FILE_T_INT4}, {"bfloat16", RKNNX_FILE_T_BFLOAT16},
    };
    size_t k;
    for (k = 0; k < sizeof names / sizeof names[0]; k++) {
        if (strcmp(s, names[k].name) == 0) {
            return names[k].type;
        }
    }
    return RKNNX_FILE_UNKNOWN;
}

uint64_t rknnx_file_prod(const uint32_t *d, uint32_t n)
{
    uint64_t p = 1;
    uint32_t k;
    for (k = 0; k < n; k++) {
        p *= d[k];
        if (p > UINT32_MAX) {
            return (uint64_t)UINT32_MAX + 1;
        }
    }
    return p;
}

/* ---- the views a file states ------------------------------------------------------------ */

static uint32_t sat32(uint64_t v) { return v > UINT32_MAX ? UINT32_MAX : (uint32_t)v; }

void rknnx_file_set_attr_view(rknnx_file_tensor *t, int nhwc)
{
    uint64_t n;
    if (t->n_shape == 4 && nhwc) {
        t->n_dims = 4;
        t->dims[0] = t->shape[0];
        t->dims[1] = t->shape[2];
        t->dims[2] = t->shape[3];
        t->dims[3] = t->shape[1];
        t->fmt = RKNNX_FILE_F_NHWC;
    } else {
        t->n_dims = t->n_shape;
        memcpy(t->dims, t->shape, t->n_shape * sizeof t->dims[0]);
        t->fmt = t->n_shape == 4 ? RKNNX_FILE_F_NCHW : RKNNX_FILE_F_UNDEFINED;
    }
    n = rknnx_file_prod(t->dims, t->n_dims);
    t->n_elems = sat32(n);
    t->attr_type = t->type;
    t->size = sat32(n * rknnx_file_type_size(t->type));
    t->known |= RKNNX_FILE_KNOWN_ATTR;
}

void rknnx_file_set_native_view(rknnx_file_tensor *t, int32_t fmt, const uint32_t *dims,
                                uint32_t n, uint32_t size)
{
    t->native_fmt = fmt;
    t->native_n_dims = n;
    memmove(t->native_dims, dims, n * sizeof t->native_dims[0]);
    t->native_size = size ? size : sat32(rknnx_file_prod(dims, n) * rknnx_file_type_size(t->type));
    t->known |= RKNNX_FILE_KNOWN_NATIVE;
}

/* ---- ownership ---------------------------------------------------------------------------- */

int rknnx_file_set_qnt(rknnx_file_tensor *t, uint32_t n, const float *scales,
                       const int32_t *zps, rknnx_file_error *err)
{
    float *s = NULL;
    int32_t *z = NULL;
    if (n) {
        s = malloc((size_t)n * sizeof *s);
        z = malloc((size_t)n * sizeof *z);
        if (!s || !z) {
            free(s);
            free(z);
            return rknnx_file_fail(err, RKNNX_FILE_E_NOMEM, "nomem", -1, "out of memory");
        }
        memcpy(s, scales, (size_t)n * sizeof *s);
        memcpy(z, zps, (size_t)n * sizeof *z);
    }
    free((void *)t->scales);
    free((void *)t->zps);
    t->scales = s;
    t->zps = z;
    t->n_qnt = n;
    t->scale = n ? s[0] : 0.0f;
    t->zp = n ? z[0] : 0;
    return RKNNX_FILE_OK;
}

void rknnx_file_free(rknnx_file_model *m)
{
    uint32_t k;
    if (!m) {
        return;
    }
    for (k = 0; m->inputs && k < m->n_inputs; k++) {
        free((void *)m->inputs[k].scales);
        free((void *)m->inputs[k].zps);
    }
    for (k = 0; m->outputs && k < m->n_outputs; k++) {
        free((void *)m->outputs[k].scales);
        free((void *)m->outputs[k].zps);
    }
    free(m->inputs);
    free(m->outputs);
    free(m->shape_sets);
    free(m->custom_ops);
    free(m);
}
