/*
 * Test harness of rknn_ext/rknnfile/rknn_file_v1004.c (driven by
 * tests/package/test_modelfile_v1004.py).
 *
 *   rknn_file_v1004_check dump FILE.rknn     decode; print one JSON object on stdout
 *   rknn_file_v1004_check fuzz FILE.rknn N   decode truncated and corrupted payloads
 *                                            (N seeded random mutations besides the
 *                                            systematic ones); print counts as JSON
 *   rknn_file_v1004_check raw PAYLOAD.bin    decode a bare payload; print status + why
 *
 * The container framing (magic, version, payload length) is read here, not by the
 * decoder, which takes only the payload.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rknn_file_v1004.h"

static uint8_t *read_all(const char *path, size_t *len)
{
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return NULL;
    fseek(fp, 0, SEEK_END);
    long n = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    uint8_t *b = malloc(n > 0 ? (size_t)n : 1);
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

/* The payload of a 0x1004 container, or NULL. */
static const uint8_t *payload_of(const uint8_t *b, size_t n, size_t *plen)
{
    if (n < 64 || memcmp(b, "RKNN", 4) != 0 || ld64(b + 8) != 0x1004)
        return NULL;
    uint64_t L = ld64(b + 16);
    if (L > n - 64)
        return NULL;
    *plen = (size_t)L;
    return b + 64;
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

static void dump_tensor(const rkf_v1004_tensor *t)
{
    printf("{\"known\":%u,\"name\":", t->known);
    json_str(t->name);
    printf(",\"dims\":");
    json_u32s(t->dims, t->n_dims);
    printf(",\"native_dims\":");
    json_u32s(t->native_dims, t->n_native_dims);
    printf(",\"dtype_code\":%u,\"layout_code\":%u,\"kind\":%u,\"dtype\":%d,\"elem_size\":%u,"
           "\"native_fmt\":%d,\"qnt_type\":%d,\"scale\":%.9g,\"zp\":%d,\"n_scale\":%u,"
           "\"n_zp\":%u,\"native_size\":%u,\"mem_offset\":%u,\"tensor_id\":%d,"
           "\"width_align\":%u,\"norm_mean\":[%.9g,%.9g,%.9g,%.9g],"
           "\"norm_std\":[%.9g,%.9g,%.9g,%.9g]}",
           t->dtype_code, t->layout_code, t->kind, t->dtype, t->elem_size, t->native_fmt,
           t->qnt_type, (double)t->scale, t->zp, t->n_scale, t->n_zp, t->native_size,
           t->mem_offset, t->tensor_id, t->width_align, (double)t->norm_mean[0],
           (double)t->norm_mean[1], (double)t->norm_mean[2], (double)t->norm_mean[3],
           (double)t->norm_std[0], (double)t->norm_std[1], (double)t->norm_std[2],
           (double)t->norm_std[3]);
}

static const char *QNAMES[] = { "INPUT_ATTR", "OUTPUT_ATTR", "NATIVE_INPUT_ATTR",
                                "NATIVE_OUTPUT_ATTR", "NATIVE_NHWC_INPUT_ATTR",
                                "NATIVE_NHWC_OUTPUT_ATTR" };

static void dump_attrs(const rkf_v1004_model *m)
{
    int first = 1;
    printf("\"attrs\":[");
    for (int q = 0; q < 6; q++) {
        int is_out = q == RKF_V1004_OUTPUT_ATTR || q == RKF_V1004_NATIVE_OUTPUT_ATTR ||
                     q == RKF_V1004_NATIVE_NHWC_OUTPUT_ATTR;
        uint32_t n = is_out ? m->n_outputs : m->n_inputs;
        for (uint32_t i = 0; i <= n; i++) {   /* i == n: the out-of-range probe */
            rkf_v1004_attr a;
            const char *why = NULL;
            int rc = rkf_v1004_query_attr(m, (rkf_v1004_query)q, i, &a, &why);
            printf("%s{\"query\":\"%s\",\"index\":%u,\"status\":%d", first ? "" : ",", QNAMES[q],
                   i, rc);
            first = 0;
            if (rc) {
                printf(",\"why\":");
                json_str(why ? why : "");
                printf("}");
                continue;
            }
            printf(",\"result\":{\"index\":%u,\"name\":", a.index);
            json_str(a.name);
            printf(",\"n_dims\":%u,\"dims\":", a.n_dims);
            json_u32s(a.dims, a.n_dims);
            printf(",\"n_elems\":%u,\"size\":%u,\"fmt\":%d,\"type\":%d,\"qnt_type\":%d,\"fl\":%d,"
                   "\"zp\":%d,\"scale\":%.9g,\"w_stride\":%u,\"size_with_stride\":%u,"
                   "\"pass_through\":%u,\"h_stride\":%u}}",
                   a.n_elems, a.size, a.fmt, a.type, a.qnt_type, a.fl, a.zp, (double)a.scale,
                   a.w_stride, a.size_with_stride, a.pass_through, a.h_stride);
        }
    }
    printf("]");
}

static int cmd_dump(const char *path)
{
    size_t n, plen;
    uint8_t *b = read_all(path, &n);
    if (!b) {
        fprintf(stderr, "cannot read %s\n", path);
        return 2;
    }
    const uint8_t *p = payload_of(b, n, &plen);
    if (!p) {
        fprintf(stderr, "%s: not a 0x1004 container\n", path);
        free(b);
        return 2;
    }
    rkf_v1004_model m;
    const char *why = NULL;
    int rc = rkf_v1004_decode(p, plen, &m, &why);
    if (rc) {
        printf("{\"status\":%d,\"why\":", rc);
        json_str(why ? why : "");
        printf("}\n");
        free(b);
        return 0;
    }
    uint32_t w, in, dma;
    rkf_v1004_mem_size(&m, &w, &in, &dma);
    printf("{\"status\":0,\"fb_size\":%u,\"task_size\":%u,\"task_count\":%u,\"regcmd_size\":%u,"
           "\"internal_size\":%u,\"weight_size\":%u,\"model_mem_size\":%llu,"
           "\"task_offset\":%zu,\"regcmd_offset\":%zu,\"weight_offset\":%zu,\"fb_offset\":%zu,"
           "\"format_version\":%u,\"compiler_version\":%u,\"generator_offset\":%zu,"
           "\"generator_len\":%zu,\"n_tensors\":%u,",
           m.fb_size, m.task_size, m.task_count, m.regcmd_size, m.internal_size, m.weight_size,
           (unsigned long long)m.model_mem_size, m.task_offset, m.regcmd_offset, m.weight_offset,
           m.fb_offset, m.format_version, m.compiler_version, m.generator_offset,
           m.generator_len, m.n_tensors);
    printf("\"npu_family\":");
    json_str(m.npu_family);
    printf(",\"platform\":");
    json_str(m.platform);
    printf(",\"framework\":");
    json_str(m.framework);
    printf(",\"compiler\":");
    json_str(m.compiler);
    printf(",\"mem_size\":{\"total_weight_size\":%u,\"total_internal_size\":%u,"
           "\"total_dma_allocated_size\":%u},\"inputs\":[",
           w, in, dma);
    for (uint32_t i = 0; i < m.n_inputs; i++) {
        if (i)
            putchar(',');
        dump_tensor(&m.inputs[i]);
    }
    printf("],\"outputs\":[");
    for (uint32_t i = 0; i < m.n_outputs; i++) {
        if (i)
            putchar(',');
        dump_tensor(&m.outputs[i]);
    }
    printf("],");
    dump_attrs(&m);
    printf("}\n");
    rkf_v1004_free(&m);
    rkf_v1004_free(&m);   /* a second free of a zeroed model is allowed */
    free(b);
    return 0;
}

/* ---- fuzz ------------------------------------------------------------------------------ */
static unsigned long ok_count, err_count;

static void try_decode(const uint8_t *p, size_t len)
{
    rkf_v1004_model m;
    const char *why = NULL;
    int rc = rkf_v1004_decode(p, len, &m, &why);
    if (rc) {
        if (!why || !*why || rc > 0) {
            fprintf(stderr, "error %d without a message\n", rc);
            exit(3);
        }
        err_count++;
        return;
    }
    ok_count++;
    for (int q = 0; q < 6; q++)
        for (uint32_t i = 0; i <= m.n_inputs + m.n_outputs; i++) {
            rkf_v1004_attr a;
            (void)rkf_v1004_query_attr(&m, (rkf_v1004_query)q, i, &a, &why);
        }
    rkf_v1004_free(&m);
}

static void put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

static int cmd_fuzz(const char *path, unsigned long nrand)
{
    size_t n, plen;
    uint8_t *b = read_all(path, &n);
    const uint8_t *p = b ? payload_of(b, n, &plen) : NULL;
    if (!p) {
        fprintf(stderr, "%s: not a 0x1004 container\n", path);
        free(b);
        return 2;
    }
    uint32_t fb_size = p[0] | (p[1] << 8) | (p[2] << 16) | ((uint32_t)p[3] << 24);
    size_t fb_off = plen - fb_size;
    unsigned long trunc = 0, fbtrunc = 0, flips = 0, rnd = 0;

    /* 1. the payload cut at every length (each in its own exact-size heap copy, so that
     *    an over-read is an ASan error). */
    for (size_t k = 0; k < plen; k += (plen > 20000 ? 7 : 1)) {
        uint8_t *c = malloc(k ? k : 1);
        memcpy(c, p, k);
        try_decode(c, k);
        free(c);
        trunc++;
    }
    /* 2. the FlatBuffer cut at every length, with the header's sizes made to agree. */
    for (size_t k = 0; k < fb_size; k++) {
        size_t len = fb_off + k;
        uint8_t *c = malloc(len);
        memcpy(c, p, len);
        put32(c, (uint32_t)k);
        try_decode(c, len);
        free(c);
        fbtrunc++;
    }
    /* 3. every byte of the header and the FlatBuffer set to a few values. */
    static const uint8_t vals[] = { 0x00, 0xff, 0x80, 0x7f, 0x01 };
    uint8_t *c = malloc(plen);
    for (size_t i = 0; i < plen; i++) {
        if (i >= 64 && i < fb_off)
            continue;
        for (size_t v = 0; v < sizeof vals; v++) {
            memcpy(c, p, plen);
            if (c[i] == vals[v])
                continue;
            c[i] = vals[v];
            try_decode(c, plen);
            flips++;
        }
    }
    /* 4. seeded random multi-byte corruption of the FlatBuffer. */
    unsigned long s = 12345;
    for (unsigned long r = 0; r < nrand; r++) {
        memcpy(c, p, plen);
        unsigned nb = 1 + (unsigned)(r % 8);
        for (unsigned j = 0; j < nb; j++) {
            s = s * 6364136223846793005ul + 1442695040888963407ul;
            size_t i = fb_off + (size_t)((s >> 17) % fb_size);
            c[i] = (uint8_t)(s >> 41);
        }
        try_decode(c, plen);
        rnd++;
    }
    free(c);
    /* 5. bad arguments */
    rkf_v1004_model m;
    const char *why = NULL;
    int a1 = rkf_v1004_decode(NULL, plen, &m, &why);
    int a2 = rkf_v1004_decode(p, plen, NULL, &why);
    int a3 = rkf_v1004_decode(p, plen, &m, NULL);
    if (a3 == 0)
        rkf_v1004_free(&m);
    rkf_v1004_attr at;
    int a4 = rkf_v1004_query_attr(NULL, RKF_V1004_INPUT_ATTR, 0, &at, &why);
    rkf_v1004_free(NULL);
    printf("{\"truncations\":%lu,\"fb_truncations\":%lu,\"byte_sets\":%lu,\"random\":%lu,"
           "\"decoded\":%lu,\"refused\":%lu,\"null_payload\":%d,\"null_out\":%d,"
           "\"null_why\":%d,\"null_model\":%d}\n",
           trunc, fbtrunc, flips, rnd, ok_count, err_count, a1, a2, a3, a4);
    free(b);
    return 0;
}

static int cmd_raw(const char *path)
{
    size_t n;
    uint8_t *b = read_all(path, &n);
    if (!b) {
        fprintf(stderr, "cannot read %s\n", path);
        return 2;
    }
    rkf_v1004_model m;
    const char *why = NULL;
    int rc = rkf_v1004_decode(b, n, &m, &why);
    printf("{\"status\":%d,\"why\":", rc);
    json_str(why ? why : "");
    printf("}\n");
    if (rc == 0)
        rkf_v1004_free(&m);
    free(b);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 3 && strcmp(argv[1], "dump") == 0)
        return cmd_dump(argv[2]);
    if (argc >= 4 && strcmp(argv[1], "fuzz") == 0)
        return cmd_fuzz(argv[2], strtoul(argv[3], NULL, 10));
    if (argc >= 3 && strcmp(argv[1], "raw") == 0)
        return cmd_raw(argv[2]);
    fprintf(stderr, "usage: %s dump FILE | fuzz FILE N | raw PAYLOAD\n", argv[0]);
    return 2;
}
