/*
 * Test harness for the emulator's model half (emulator/model.c + emulator/exec.c only).
 *
 * Reads model images from stdin as records (uint32 little-endian length, then the bytes)
 * and for each: emu_model_load; when it succeeds, every accessor of emu_model.h is called
 * for every index and shape set (plus one past the end), and the graph is run for every
 * shape set with deterministic input bytes and a custom-op hook that zero-fills outputs
 * (runs whose buffers would exceed a size cap are skipped).  Prints one line per record,
 * "index load_status run_status", flushed before the next record, so a crash under a
 * sanitizer names the record that caused it.
 *
 * Built by tests/emulator/test_emu_fuzz.py with -fsanitize=address,undefined.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu_model.h"

#define RUN_CAP ((uint64_t)8 << 20)   /* skip runs needing more bytes than this */

static int zero_hook(void *user, const emu_model *m, uint32_t op_index, const char *op_type,
                     emu_tensor_view *inputs, uint32_t n_inputs, emu_tensor_view *outputs,
                     uint32_t n_outputs)
{
    (void)user;
    (void)m;
    (void)op_index;
    (void)op_type;
    for (uint32_t i = 0; i < n_inputs; i++)
        if (!inputs[i].data)
            return -1;
    for (uint32_t o = 0; o < n_outputs; o++) {
        const emu_io_desc *d = &outputs[o].desc;
        uint64_t n = 1;
        for (uint32_t k = 0; k < d->n_dims; k++)
            n *= d->dims[k];
        size_t es = d->type == RKNN_TENSOR_FLOAT32 || d->type == RKNN_TENSOR_INT32 ||
                            d->type == RKNN_TENSOR_UINT32 ? 4
                    : d->type == RKNN_TENSOR_INT64 ? 8
                    : d->type == RKNN_TENSOR_FLOAT16 || d->type == RKNN_TENSOR_INT16 ||
                            d->type == RKNN_TENSOR_UINT16 || d->type == RKNN_TENSOR_BFLOAT16 ? 2
                                                                                              : 1;
        memset(outputs[o].data, 0, (size_t)(n * es));
    }
    return 0;
}

static size_t type_size(rknn_tensor_type t)
{
    switch (t) {
    case RKNN_TENSOR_FLOAT32: case RKNN_TENSOR_INT32: case RKNN_TENSOR_UINT32: return 4;
    case RKNN_TENSOR_INT64: return 8;
    case RKNN_TENSOR_FLOAT16: case RKNN_TENSOR_INT16: case RKNN_TENSOR_UINT16:
    case RKNN_TENSOR_BFLOAT16: return 2;
    default: return 1;
    }
}

static uint64_t io_bytes(const uint32_t *dims, uint32_t n_dims, rknn_tensor_type t)
{
    uint64_t n = type_size(t);
    for (uint32_t k = 0; k < n_dims; k++) {
        n *= dims[k];
        if (n > RUN_CAP)
            return RUN_CAP + 1;
    }
    return n;
}

static int exercise(const emu_model *m)
{
    volatile size_t sink = 0;
    sink += strlen(emu_model_target(m)) + strlen(emu_model_custom_string(m));
    uint32_t ni = emu_model_n_inputs(m), no = emu_model_n_outputs(m);
    for (uint32_t i = 0; i <= ni; i++) {
        const emu_io_desc *d = emu_model_input(m, i);
        if (d)
            sink += strlen(d->name) + d->n_dims + d->n_norm;
    }
    for (uint32_t i = 0; i <= no; i++) {
        const emu_io_desc *d = emu_model_output(m, i);
        if (d)
            sink += strlen(d->name) + d->n_dims;
    }
    uint32_t sets = emu_model_n_shape_sets(m);
    uint32_t rows = sets ? sets : 1;
    for (uint32_t s = 0; s <= rows; s++) {
        for (uint32_t i = 0; i <= ni; i++) {
            uint32_t nd = 0;
            const uint32_t *d = emu_model_input_dims(m, s, i, &nd);
            for (uint32_t k = 0; d && k < nd; k++)
                sink += d[k];
        }
        for (uint32_t o = 0; o <= no; o++) {
            uint32_t nd = 0;
            const uint32_t *d = emu_model_output_dims(m, s, o, &nd);
            for (uint32_t k = 0; d && k < nd; k++)
                sink += d[k];
        }
    }
    uint32_t nops = emu_model_n_ops(m);
    for (uint32_t i = 0; i <= nops; i++) {
        const char *n = emu_model_op_name(m, i), *t = emu_model_op_type(m, i);
        if (n)
            sink += strlen(n);
        if (t)
            sink += strlen(t);
        rknn_tensor_type dt;
        uint32_t ne;
        const void *data;
        static const char *const names[] = {"alpha", "strides", "pads", "perm", "shape", "relu"};
        for (size_t a = 0; a < sizeof names / sizeof names[0]; a++)
            if (emu_model_op_attr(m, i, names[a], &dt, &ne, &data) == 0 && ne)
                sink += ((const uint8_t *)data)[0];
    }
    const uint8_t *w = emu_model_weights(m);
    uint64_t ws = emu_model_weight_size(m);
    if (ws)
        sink += w[0] + w[ws - 1];
    (void)sink;

    /* run every shape set */
    uint64_t isz = emu_model_internal_size(m);
    if (isz > RUN_CAP)
        return 1;
    int result = 0;
    for (uint32_t s = 0; s < rows; s++) {
        void *ins[256] = {0}, *outs[256] = {0};
        uint64_t total = isz;
        int ok = 1;
        for (uint32_t i = 0; i < ni && ok; i++) {
            uint32_t nd;
            const uint32_t *d = emu_model_input_dims(m, s, i, &nd);
            uint64_t b = io_bytes(d, nd, emu_model_input(m, i)->type);
            total += b;
            if (total > RUN_CAP) { ok = 0; break; }
            ins[i] = malloc((size_t)b);
            for (uint64_t k = 0; ins[i] && k < b; k++)
                ((uint8_t *)ins[i])[k] = (uint8_t)(k * 37u + i * 11u + s);
        }
        for (uint32_t o = 0; o < no && ok; o++) {
            uint32_t nd;
            const uint32_t *d = emu_model_output_dims(m, s, o, &nd);
            uint64_t b = io_bytes(d, nd, emu_model_output(m, o)->type);
            total += b;
            if (total > RUN_CAP) { ok = 0; break; }
            outs[o] = malloc((size_t)b);
        }
        uint8_t *internal = ok ? malloc(isz ? (size_t)isz : 1) : NULL;
        int64_t *times = ok ? calloc(nops ? nops : 1, sizeof(int64_t)) : NULL;
        if (ok && internal && times) {
            emu_run_env env = {emu_model_weights(m), internal, isz, s, zero_hook, NULL, times};
            int rc = emu_model_run(m, (const void *const *)ins, outs, &env);
            if (rc != RKNN_SUCC)
                result = rc;
        } else if (!ok) {
            result = 1;
        }
        free(internal);
        free(times);
        for (uint32_t i = 0; i < ni; i++)
            free(ins[i]);
        for (uint32_t o = 0; o < no; o++)
            free(outs[o]);
    }
    return result;
}

int main(void)
{
    unsigned long idx = 0;
    for (;;) {
        uint8_t hdr[4];
        if (fread(hdr, 1, 4, stdin) != 4)
            break;
        uint32_t len = (uint32_t)hdr[0] | ((uint32_t)hdr[1] << 8) | ((uint32_t)hdr[2] << 16) |
                       ((uint32_t)hdr[3] << 24);
        /* an exact-size heap copy, so ASan sees any read past the end */
        uint8_t *buf = malloc(len ? len : 1);
        if (!buf || fread(buf, 1, len, stdin) != len) {
            free(buf);
            return 2;
        }
        printf("%lu ", idx);
        fflush(stdout);
        emu_model *m = NULL;
        int rc = emu_model_load(buf, len, &m);
        free(buf);                     /* the model must not keep pointers into it */
        int run = 0;
        if (rc == RKNN_SUCC) {
            if (!m)
                return 3;
            run = exercise(m);
            emu_model_free(m);
        } else if (m) {
            return 4;                  /* failure must leave *out NULL */
        }
        printf("%d %d\n", rc, run);
        fflush(stdout);
        idx++;
    }
    return 0;
}
