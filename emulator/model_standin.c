/*
 * rknnx emulator, model half: the stand-in model of a vendor .rknn file.
 *
 * The emulator cannot run a vendor network (its weights and operators are compiled for the
 * NPU).  A stand-in has the file's inputs and outputs and no graph; a run fills every output
 * from a digest of the inputs, so a pipeline sees outputs of the right shapes and types that
 * change when its inputs change, at the cost of one pass over the input bytes and one fill
 * of the output bytes.  The function, as docs/standin.md states it:
 *
 *   d = 14695981039346656037 (the FNV-1a offset basis); for each input i in index order,
 *       for each 8-byte little-endian word w of its packed model-side bytes (the last word
 *       zero-padded): d = (d ^ w) * 1099511628211 (mod 2^64); then d = d ^ (i + 1) and the
 *       same multiply.
 *   For output o: p = ((d ^ ((o + 1) * 0x9E3779B97F4A7C15)) >> 56); element k of the
 *       packed output (its model type, its logical layout) holds b = (p + k) mod 256 as:
 *       int8 (int8_t)b, uint8 b, int16/int32/int64/uint16/uint32 b - 128, float16/float32/
 *       bfloat16 (b - 128) / 32.
 *
 * The outputs are periodic with period 256 elements, so the fill is a memcpy of one block.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model_internal.h"
#include "numeric.h"

int emu_model_is_standin(const emu_model *m) { return m && m->standin; }

int emu_model_new_standin(const char *target, const emu_io_desc *ins, uint32_t n_in,
                          const emu_io_desc *outs, uint32_t n_out, uint32_t n_sets,
                          const uint32_t *in_dims, const uint32_t *out_dims, emu_model **out)
{
    *out = NULL;
    if (n_in == 0 || n_out == 0 || n_in > EMU_MAX_IO || n_out > EMU_MAX_IO)
        return RKNN_ERR_MODEL_INVALID;
    emu_model *m = calloc(1, sizeof *m);
    if (!m)
        return RKNN_ERR_MALLOC_FAIL;
    int rc = RKNN_ERR_MALLOC_FAIL;
    m->standin = 1;
    if (target)
        snprintf(m->target, sizeof m->target, "%s", target);
    m->custom_string = calloc(1, 1);
    m->n_tensors = n_in + n_out;
    m->tensors = calloc(m->n_tensors, sizeof *m->tensors);
    m->n_inputs = n_in;
    m->n_outputs = n_out;
    m->inputs = calloc(n_in, sizeof *m->inputs);
    m->outputs = calloc(n_out, sizeof *m->outputs);
    m->in_desc = calloc(n_in, sizeof *m->in_desc);
    m->out_desc = calloc(n_out, sizeof *m->out_desc);
    if (!m->custom_string || !m->tensors || !m->inputs || !m->outputs || !m->in_desc ||
        !m->out_desc)
        goto fail;
    uint32_t off = 0;
    for (uint32_t t = 0; t < m->n_tensors; t++) {
        const emu_io_desc *d = t < n_in ? &ins[t] : &outs[t - n_in];
        emu_tensor *x = &m->tensors[t];
        rc = RKNN_ERR_MODEL_INVALID;
        if (d->n_dims == 0 || d->n_dims > RKNN_MAX_DIMS || emu_model_dtype_size(d->type) == 0)
            goto fail;
        /* an input's mean/std (standin.c takes them from the file) obey what model.c asks of
           the emulator's own files: at most RKNN_MAX_NUM_CHANNEL entries (the arrays'
           bound), finite, std not 0; an output has none */
        if (d->n_norm > (t < n_in ? RKNN_MAX_NUM_CHANNEL : 0))
            goto fail;
        for (uint32_t c = 0; c < d->n_norm; c++)
            if (!isfinite(d->mean[c]) || !isfinite(d->std[c]) || d->std[c] == 0.0f)
                goto fail;
        memcpy(x->name, d->name, sizeof x->name);
        x->name[sizeof x->name - 1] = '\0';
        x->dtype = d->type;
        x->fmt = d->fmt;
        x->qnt_type = d->qnt_type;
        x->n_dims = d->n_dims;
        memcpy(x->dims, d->dims, sizeof x->dims);
        x->fl = d->fl;
        x->role = t < n_in ? EMU_ROLE_INPUT : EMU_ROLE_OUTPUT;
        x->role_index = t < n_in ? t : t - n_in;
        x->producer = -1;
        x->dim_offset = off;
        off += d->n_dims;
        if (t < n_in) {
            m->inputs[t] = t;
            m->in_desc[t] = *d;
        } else {
            m->outputs[t - n_in] = t;
            m->out_desc[t - n_in] = *d;
        }
    }
    m->dims_per_set = off;
    m->n_sets = n_sets;
    uint32_t rows = n_sets ? n_sets : 1;
    rc = RKNN_ERR_MALLOC_FAIL;
    m->set_dims = calloc((size_t)rows * off, sizeof(uint32_t));
    m->set_offsets = calloc((size_t)rows * m->n_tensors, sizeof(uint64_t));
    m->set_scratch = calloc(rows, sizeof(uint64_t));
    if (!m->set_dims || !m->set_offsets || !m->set_scratch)
        goto fail;
    for (uint32_t s = 0; s < rows; s++) {
        uint32_t *row = m->set_dims + (uint64_t)s * off;
        for (uint32_t t = 0; t < m->n_tensors; t++) {
            const emu_tensor *x = &m->tensors[t];
            const uint32_t *src = x->dims;
            if (n_sets)
                src = t < n_in ? in_dims + ((uint64_t)s * n_in + t) * RKNN_MAX_DIMS
                               : out_dims + ((uint64_t)s * n_out + (t - n_in)) * RKNN_MAX_DIMS;
            uint64_t elems = 1;
            for (uint32_t k = 0; k < x->n_dims; k++) {
                if (src[k] == 0) {
                    rc = RKNN_ERR_MODEL_INVALID;
                    goto fail;
                }
                elems *= src[k];
                if (elems >= EMU_MAX_ELEMS) {
                    rc = RKNN_ERR_MODEL_INVALID;
                    goto fail;
                }
            }
            memcpy(row + x->dim_offset, src, x->n_dims * sizeof(uint32_t));
        }
    }
    *out = m;
    return RKNN_SUCC;
fail:
    emu_model_free(m);
    return rc;
}

static uint64_t fnv_words(uint64_t d, const uint8_t *p, uint64_t n)
{
    const uint64_t prime = 1099511628211ull;
    uint64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        d = (d ^ w) * prime;
    }
    if (i < n) {
        uint64_t w = 0;
        for (uint64_t k = 0; i + k < n; k++)
            w |= (uint64_t)p[i + k] << (8 * k);
        d = (d ^ w) * prime;
    }
    return d;
}

/* element b of the period block as type t, written at q */
static void put_elem(rknn_tensor_type t, uint8_t *q, uint32_t b)
{
    int v = (int)b - 128;
    float f = (float)v / 32.0f;
    switch (t) {
    case RKNN_TENSOR_INT8: { int8_t x = (int8_t)(uint8_t)b; memcpy(q, &x, 1); break; }
    case RKNN_TENSOR_UINT8: case RKNN_TENSOR_BOOL: *q = (uint8_t)b; break;
    case RKNN_TENSOR_INT16: { int16_t x = (int16_t)v; memcpy(q, &x, 2); break; }
    case RKNN_TENSOR_UINT16: { uint16_t x = (uint16_t)b; memcpy(q, &x, 2); break; }
    case RKNN_TENSOR_INT32: { int32_t x = v; memcpy(q, &x, 4); break; }
    case RKNN_TENSOR_UINT32: { uint32_t x = b; memcpy(q, &x, 4); break; }
    case RKNN_TENSOR_INT64: { int64_t x = v; memcpy(q, &x, 8); break; }
    case RKNN_TENSOR_FLOAT16: { uint16_t h = emu_f32_to_f16(f); memcpy(q, &h, 2); break; }
    case RKNN_TENSOR_BFLOAT16: { uint16_t h = (uint16_t)(emu_f32_bits(f) >> 16); memcpy(q, &h, 2); break; }
    case RKNN_TENSOR_FLOAT32: memcpy(q, &f, 4); break;
    default: break;
    }
}

int emu_standin_model_run(const emu_model *m, const void *const *inputs, void *const *outputs,
                          const emu_run_env *env)
{
    if (!m || !m->standin || !env || !inputs || !outputs)
        return RKNN_ERR_PARAM_INVALID;
    uint32_t set = env->shape_set;
    if (set >= (m->n_sets ? m->n_sets : 1))
        return RKNN_ERR_PARAM_INVALID;
    for (uint32_t i = 0; i < m->n_inputs; i++)
        if (!inputs[i])
            return RKNN_ERR_INPUT_INVALID;
    for (uint32_t o = 0; o < m->n_outputs; o++)
        if (!outputs[o])
            return RKNN_ERR_OUTPUT_INVALID;
    uint64_t d = 14695981039346656037ull;
    for (uint32_t i = 0; i < m->n_inputs; i++) {
        uint32_t t = m->inputs[i];
        uint64_t n = emu_model_tensor_elems(m, set, t) * emu_model_dtype_size(m->tensors[t].dtype);
        d = fnv_words(d, inputs[i], n);
        d = (d ^ (uint64_t)(i + 1)) * 1099511628211ull;
    }
    for (uint32_t o = 0; o < m->n_outputs; o++) {
        uint32_t t = m->outputs[o];
        rknn_tensor_type ty = m->tensors[t].dtype;
        size_t es = emu_model_dtype_size(ty);
        uint64_t n = emu_model_tensor_elems(m, set, t) * es;
        uint32_t p = (uint32_t)((d ^ ((uint64_t)(o + 1) * 0x9E3779B97F4A7C15ull)) >> 56);
        uint8_t block[256 * 8];
        for (uint32_t k = 0; k < 256; k++)
            put_elem(ty, block + k * es, (p + k) & 255u);
        uint8_t *dst = outputs[o];
        uint64_t period = 256 * es;
        for (uint64_t at = 0; at < n; at += period)
            memcpy(dst + at, block, (size_t)(n - at < period ? n - at : period));
    }
    return RKNN_SUCC;
}
