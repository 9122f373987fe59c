/*
 * rknn_file_v1004_plug.c - joins the 0x1004 payload decoder (rknn_file_v1004.{h,c}, which
 * stands alone) to the vendor-file reader (rknn_file.{h,c}): rknnx_file_decode_v1004() is
 * the reader's plug, called for a container-0x1004 file once the framing and the JSON tail
 * have filled names, shapes and dtypes.
 *
 * What it adds, per input and output: the INPUT_ATTR/OUTPUT_ATTR view (dims, fmt, n_elems,
 * size), the NATIVE_*_ATTR view (native dims, fmt, size), quantization (AFFINE, scale,
 * zero point), the file's raw codes and planned size; for the model: the format version,
 * NPU family, compiler version, framework.  The values are the ones the RV1106 mini
 * runtime reports for these files (docs/rknn-file-format-v1004.md); a tensor of a kind no
 * recorded answer covers keeps those groups unknown.
 *
 * The payload and the JSON tail must agree (the same inputs and outputs, names, shapes and
 * dtypes); a payload that does not decode, or disagrees, fails the read with the check
 * "v1004.payload" / "v1004.io" and the decoder's message.
 */
#include "rknn_file.h"
#include "rknn_file_v1004.h"

#include <stdio.h>
#include <string.h>

/* Append src to dst (capacity cap, NUL-terminated), cutting what does not fit. */
static void append(char *dst, size_t cap, const char *src)
{
    size_t n = strlen(dst), k = strlen(src);
    if (n + 1 >= cap)
        return;
    if (k > cap - 1 - n)
        k = cap - 1 - n;
    memcpy(dst + n, src, k);
    dst[n + k] = '\0';
}

static int plug_fail(rknnx_file_error *err, int status, const char *check, const char *msg,
                     const char *detail)
{
    if (err) {
        memset(err, 0, sizeof *err);
        err->status = status;
        append(err->check, sizeof err->check, check);
        append(err->message, sizeof err->message, "0x1004 payload: ");
        append(err->message, sizeof err->message, msg);
        if (detail) {
            append(err->message, sizeof err->message, ": ");
            append(err->message, sizeof err->message, detail);
        }
        err->offset = 64;   /* the payload starts after the 64-byte container header */
    }
    return status;
}

static void copy_str(char *dst, size_t cap, const char *src)
{
    dst[0] = '\0';
    append(dst, cap, src);
}

/* "2.5.0(compiler version: 2.5.0 (74ea630ce@...))" -> "2.5.0 (74ea630ce@...)" */
static void compiler_of(char *dst, size_t cap, const char *s)
{
    static const char key[] = "(compiler version: ";
    const char *p = strstr(s, key);
    size_t n;
    if (!p)
        return;
    p += sizeof key - 1;
    n = strlen(p);
    if (n && p[n - 1] == ')')
        n--;
    if (n >= cap)
        n = cap - 1;
    memcpy(dst, p, n);
    dst[n] = '\0';
}

static int fill_tensor(rknnx_file_model *model, rknnx_file_tensor *t, const rkf_v1004_model *m,
                       const rkf_v1004_tensor *d, int is_out, uint32_t index,
                       rknnx_file_error *err)
{
    rkf_v1004_attr a, nat;
    const char *why = NULL;
    int rc;

    if (strcmp(t->name, d->name) != 0)
        return plug_fail(err, RKNNX_FILE_E_FORMAT, "v1004.io",
                         "an input/output name differs from the JSON tail's", d->name);
    if (t->n_shape != d->n_dims || memcmp(t->shape, d->dims, d->n_dims * sizeof d->dims[0]))
        return plug_fail(err, RKNNX_FILE_E_FORMAT, "v1004.io",
                         "an input/output shape differs from the JSON tail's", d->name);
    if (d->known & RKF_V1004_K_DTYPE) {
        if (t->type != RKNNX_FILE_UNKNOWN && t->type != d->dtype)
            return plug_fail(err, RKNNX_FILE_E_FORMAT, "v1004.io",
                             "an input/output dtype differs from the JSON tail's", d->name);
        t->type = d->dtype;
    }
    t->file_dtype_code = d->dtype_code;
    t->file_layout_code = d->layout_code;
    if (d->known & RKF_V1004_K_NATIVE_SIZE)
        t->file_planned_size = d->native_size;

    rc = rkf_v1004_query_attr(m, is_out ? RKF_V1004_OUTPUT_ATTR : RKF_V1004_INPUT_ATTR, index,
                              &a, &why);
    if (rc == RKF_V1004_EUNKNOWN)
        return RKNNX_FILE_OK;   /* the reader's tail-derived fields stay as they are */
    if (rc)
        return plug_fail(err, RKNNX_FILE_E_FORMAT, "v1004.payload", why ? why : "attribute",
                         d->name);
    rc = rkf_v1004_query_attr(m, is_out ? RKF_V1004_NATIVE_OUTPUT_ATTR
                                        : RKF_V1004_NATIVE_INPUT_ATTR, index, &nat, &why);
    if (rc)
        return plug_fail(err, RKNNX_FILE_E_FORMAT, "v1004.payload", why ? why : "attribute",
                         d->name);

    t->n_dims = a.n_dims;
    memcpy(t->dims, a.dims, sizeof t->dims);
    t->fmt = a.fmt;
    t->type = a.type;
    t->n_elems = a.n_elems;
    t->size = a.size;
    t->known |= RKNNX_FILE_KNOWN_ATTR;

    t->native_fmt = nat.fmt;
    t->native_n_dims = nat.n_dims;
    memcpy(t->native_dims, nat.dims, sizeof t->native_dims);
    t->native_size = nat.size;   /* what NATIVE_*_ATTR reports: the planned size for outputs */
    t->known |= RKNNX_FILE_KNOWN_NATIVE;

    t->qnt_type = a.qnt_type;
    t->zp = a.zp;
    t->scale = a.scale;
    t->quantized = d->n_scale > 0;
    if (t->quantized) {
        rc = rknnx_file_set_qnt_channels(model, t, 1, &d->scale, &d->zp);
        if (rc)
            return plug_fail(err, rc, "nomem", "out of memory", NULL);
    }
    t->known |= RKNNX_FILE_KNOWN_QNT;
    return RKNNX_FILE_OK;
}

int rknnx_file_decode_v1004(const uint8_t *payload, size_t payload_size,
                            rknnx_file_model *model, rknnx_file_error *err)
{
    rkf_v1004_model m;
    const char *why = NULL;
    uint32_t i;
    int rc;

    if (!payload || !model)
        return plug_fail(err, RKNNX_FILE_E_ARGUMENT, "argument", "no payload or model", NULL);
    rc = rkf_v1004_decode(payload, payload_size, &m, &why);
    if (rc == RKF_V1004_ENOMEM)
        return plug_fail(err, RKNNX_FILE_E_NOMEM, "nomem", "out of memory", NULL);
    if (rc)
        return plug_fail(err, RKNNX_FILE_E_FORMAT, "v1004.payload", why ? why : "malformed",
                         NULL);
    if (m.n_inputs != model->n_inputs || m.n_outputs != model->n_outputs) {
        char msg[96];
        snprintf(msg, sizeof msg, "%u inputs and %u outputs, the JSON tail %u and %u",
                 m.n_inputs, m.n_outputs, model->n_inputs, model->n_outputs);
        rkf_v1004_free(&m);
        return plug_fail(err, RKNNX_FILE_E_FORMAT, "v1004.io",
                         "the payload lists other inputs/outputs than the JSON tail", msg);
    }
    for (i = 0; i < m.n_inputs + m.n_outputs && rc == 0; i++) {
        int is_out = i >= m.n_inputs;
        uint32_t k = is_out ? i - m.n_inputs : i;
        rc = fill_tensor(model, is_out ? &model->outputs[k] : &model->inputs[k], &m,
                         is_out ? &m.outputs[k] : &m.inputs[k], is_out, k, err);
    }
    if (rc == 0) {
        model->format_version = m.format_version;
        if (m.npu_family[0])
            copy_str(model->npu_family, sizeof model->npu_family, m.npu_family);
        if (!model->target_platform[0])
            copy_str(model->target_platform, sizeof model->target_platform, m.platform);
        if (!model->framework[0])
            copy_str(model->framework, sizeof model->framework, m.framework);
        model->compiler_version_int = m.compiler_version;
        if (!model->compiler_version[0])
            compiler_of(model->compiler_version, sizeof model->compiler_version, m.compiler);
    }
    rkf_v1004_free(&m);
    return rc;
}
