/*
 * Test harness of the reader (rknnfile/, include/rknnx/rknn_file.h) on container-0x1004
 * files, driven by tests/package/test_modelfile_v1004.py.
 *
 *   rknn_file_v1004_check dump FILE.rknn     read; print the model (or the error) as one
 *                                            JSON object on stdout
 *   rknn_file_v1004_check fuzz FILE.rknn N   read the file with its payload truncated and
 *                                            corrupted (N seeded random corruptions besides
 *                                            the systematic ones); print counts as JSON
 *
 * Every read goes through rknnx_file_read on a whole file held in a heap buffer of exactly
 * its size, so an over-read is an AddressSanitizer error when built with it.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rknn_file.h"

static uint8_t *read_all(const char *path, size_t *len)
{
    FILE *fp = fopen(path, "rb");
    long n;
    uint8_t *b;
    if (!fp)
        return NULL;
    fseek(fp, 0, SEEK_END);
    n = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    b = malloc(n > 0 ? (size_t)n : 1);
    if (b && fread(b, 1, (size_t)n, fp) != (size_t)n) {
        free(b);
        b = NULL;
    }
    fclose(fp);
    *len = (size_t)n;
    return b;
}

static uint64_t ld64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

static void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void json_str(const char *s)
{
    putchar('"');
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            printf("\\%c", c);
        else if (c < 0x20 || c >= 0x7f)
            printf("\\u%04x", c);
        else
            putchar(c);
    }
    putchar('"');
}

static void json_u32s(const uint32_t *v, uint32_t n)
{
    putchar('[');
    for (uint32_t i = 0; i < n; i++)
        printf("%s%u", i ? "," : "", v[i]);
    putchar(']');
}

static void dump_tensor(const rknnx_file_tensor *t)
{
    printf("{\"index\":%u,\"role\":%d,\"known\":%u,\"name\":", t->index, t->role, t->known);
    json_str(t->name);
    printf(",\"shape\":");
    json_u32s(t->shape, t->n_shape);
    printf(",\"dims\":");
    json_u32s(t->dims, t->n_dims);
    printf(",\"native_dims\":");
    json_u32s(t->native_dims, t->native_n_dims);
    printf(",\"fmt\":%d,\"type\":%d,\"n_elems\":%u,\"size\":%u,\"qnt_type\":%d,\"zp\":%d,"
           "\"scale\":%.9g,\"quantized\":%d,\"n_qnt\":%u,\"native_fmt\":%d,\"native_size\":%u,"
           "\"file_dtype_code\":%d,\"file_layout_code\":%d,\"file_planned_size\":%u,"
           "\"file_mem_offset\":%u,\"file_width_align\":%u}",
           t->fmt, t->type, t->n_elems, t->size, t->qnt_type, t->zp, (double)t->scale,
           t->quantized, t->n_qnt, t->native_fmt, t->native_size, t->file_dtype_code,
           t->file_layout_code, t->file_planned_size, t->file_mem_offset, t->file_width_align);
}

static int cmd_dump(const char *path)
{
    size_t n;
    uint8_t *b = read_all(path, &n);
    rknnx_file_model *m;
    rknnx_file_error err;
    if (!b) {
        fprintf(stderr, "cannot read %s\n", path);
        return 2;
    }
    int rc = rknnx_file_read(b, n, &m, &err);
    free(b);
    if (rc) {
        printf("{\"status\":%d,\"check\":", rc);
        json_str(err.check);
        printf(",\"message\":");
        json_str(err.message);
        printf(",\"offset\":%lld}\n", (long long)err.offset);
        return 0;
    }
    printf("{\"status\":0,\"container_version\":%llu,\"format_version\":%u,"
           "\"compiler_version_int\":%u,\"has_mem_sizes\":%d,\"weight_size\":%llu,"
           "\"internal_size\":%llu,\"task_count\":%u,\"task_size\":%llu,\"regcmd_size\":%llu,"
           "\"const_size\":%llu,\"payload_size\":%llu,",
           (unsigned long long)m->container_version, m->format_version,
           m->compiler_version_int, m->has_mem_sizes, (unsigned long long)m->weight_size,
           (unsigned long long)m->internal_size, m->task_count,
           (unsigned long long)m->task_size, (unsigned long long)m->regcmd_size,
           (unsigned long long)m->const_size, (unsigned long long)m->payload_size);
    printf("\"npu_family\":");
    json_str(m->npu_family);
    printf(",\"chip\":");
    json_str(m->chip);
    printf(",\"platform\":");
    json_str(m->target_platform);
    printf(",\"framework\":");
    json_str(m->framework);
    printf(",\"toolkit_version\":");
    json_str(m->toolkit_version);
    printf(",\"compiler_version\":");
    json_str(m->compiler_version);
    printf(",\"inputs\":[");
    for (uint32_t i = 0; i < m->n_inputs; i++) {
        if (i)
            putchar(',');
        dump_tensor(&m->inputs[i]);
    }
    printf("],\"outputs\":[");
    for (uint32_t i = 0; i < m->n_outputs; i++) {
        if (i)
            putchar(',');
        dump_tensor(&m->outputs[i]);
    }
    printf("]}\n");
    rknnx_file_free(m);
    return 0;
}

/* ---- fuzz ------------------------------------------------------------------------------ */
static unsigned long ok_count, err_count;
static const uint8_t *g_tail;    /* the file's u64 JSON length and JSON tail */
static size_t g_tail_len;

/* Read header[64] | payload[0, plen) | the tail, in one exact-size buffer. */
static void try_read(const uint8_t *head, const uint8_t *payload, size_t plen)
{
    size_t n = 64 + plen + g_tail_len;
    uint8_t *b = malloc(n);
    rknnx_file_model *m = NULL;
    rknnx_file_error err;
    if (!b)
        exit(4);
    memcpy(b, head, 64);
    put64(b + 16, plen);
    memcpy(b + 64, payload, plen);
    memcpy(b + 64 + plen, g_tail, g_tail_len);
    int rc = rknnx_file_read(b, n, &m, &err);
    free(b);
    if (rc) {
        if (rc > 0 || m || err.status != rc || !err.check[0] || !err.message[0] ||
            !memchr(err.check, 0, sizeof err.check) ||
            !memchr(err.message, 0, sizeof err.message)) {
            fprintf(stderr, "error %d without a named check\n", rc);
            exit(3);
        }
        err_count++;
        return;
    }
    for (uint32_t k = 0; k < m->n_inputs + m->n_outputs; k++) {
        const rknnx_file_tensor *t = k < m->n_inputs ? &m->inputs[k]
                                                     : &m->outputs[k - m->n_inputs];
        if (t->n_dims > RKNNX_FILE_MAX_DIMS || t->native_n_dims > RKNNX_FILE_MAX_DIMS ||
            !memchr(t->name, 0, sizeof t->name) || (t->n_qnt && !t->scales)) {
            fprintf(stderr, "a model with a bad tensor\n");
            exit(3);
        }
    }
    ok_count++;
    rknnx_file_free(m);
}

static int cmd_fuzz(const char *path, unsigned long nrand)
{
    size_t n;
    uint8_t *b = read_all(path, &n);
    if (!b || n < 72 || memcmp(b, "RKNN", 4) != 0 || ld64(b + 8) != 0x1004 ||
        ld64(b + 16) > n - 72) {
        fprintf(stderr, "%s: not a 0x1004 container\n", path);
        free(b);
        return 2;
    }
    size_t plen = (size_t)ld64(b + 16);
    const uint8_t *p = b + 64;
    g_tail = p + plen;
    g_tail_len = n - 64 - plen;
    uint32_t fb_size = (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) |
                       ((uint32_t)p[3] << 24);
    size_t fb_off = plen - fb_size;
    unsigned long trunc = 0, fbtrunc = 0, flips = 0, rnd = 0;
    uint8_t *c = malloc(plen);

    /* Each read copies the whole file and parses its JSON tail: the sweeps below take at
     * most about 2,000 cuts and 4,000 byte positions, evenly spread (a quarter of that for a
     * payload over 100 kB), so that the big files stay quick. */
    size_t budget = plen > 100000 ? 500 : 2000;
    size_t cut_step = plen / budget + 1, fb_step = fb_size / budget + 1;
    size_t byte_step = (64 + (size_t)fb_size) / (2 * budget) + 1;

    /* 1. the payload cut at lengths from 0 up (the container's length made to agree) */
    for (size_t k = 0; k < plen; k += cut_step) {
        try_read(b, p, k);
        trunc++;
    }
    /* 2. the FlatBuffer cut, with the payload header's size made to agree */
    for (size_t k = 0; k < fb_size; k += fb_step) {
        memcpy(c, p, fb_off + k);
        put32(c, (uint32_t)k);
        try_read(b, c, fb_off + k);
        fbtrunc++;
    }
    /* 3. every byte of the payload header, and bytes of the FlatBuffer, set to a few values */
    static const uint8_t vals[] = {0x00, 0xff, 0x80, 0x7f, 0x01};
    for (size_t i = 0; i < plen; i = i + 1 < 64 ? i + 1 : (i < fb_off ? fb_off : i + byte_step)) {
        for (size_t v = 0; v < sizeof vals; v++) {
            memcpy(c, p, plen);
            if (c[i] == vals[v])
                continue;
            c[i] = vals[v];
            try_read(b, c, plen);
            flips++;
        }
    }
    /* 4. seeded random multi-byte corruption of the FlatBuffer */
    unsigned long s = 12345;
    for (unsigned long r = 0; r < nrand; r++) {
        memcpy(c, p, plen);
        unsigned nb = 1 + (unsigned)(r % 8);
        for (unsigned j = 0; j < nb; j++) {
            s = s * 6364136223846793005ul + 1442695040888963407ul;
            size_t i = fb_off + (size_t)((s >> 17) % fb_size);
            c[i] = (uint8_t)(s >> 41);
        }
        try_read(b, c, plen);
        rnd++;
    }
    free(c);
    /* 5. bad arguments */
    rknnx_file_model *m = NULL;
    rknnx_file_error err;
    int a1 = rknnx_file_read(NULL, n, &m, &err);
    int a2 = rknnx_file_read(b, n, NULL, &err);
    int a3 = rknnx_file_read(b, n, &m, NULL);
    rknnx_file_free(m);
    rknnx_file_free(NULL);
    printf("{\"truncations\":%lu,\"fb_truncations\":%lu,\"byte_sets\":%lu,\"random\":%lu,"
           "\"decoded\":%lu,\"refused\":%lu,\"null_data\":%d,\"null_out\":%d,"
           "\"null_err\":%d}\n",
           trunc, fbtrunc, flips, rnd, ok_count, err_count, a1, a2, a3);
    free(b);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 3 && strcmp(argv[1], "dump") == 0)
        return cmd_dump(argv[2]);
    if (argc >= 4 && strcmp(argv[1], "fuzz") == 0)
        return cmd_fuzz(argv[2], strtoul(argv[3], NULL, 10));
    fprintf(stderr, "usage: %s dump FILE | fuzz FILE N\n", argv[0]);
    return 2;
}
