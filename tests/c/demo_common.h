/*
 * Shared helpers of the C demo programs in tests/c (file I/O, checks, leak check).
 * Each demo follows one documented vendor call order against librknnrt; the emulator
 * is linked as -lrknnrt.  Results are written as raw float32 files for pytest to compare
 * with the numpy reference.
 */
#ifndef RKNNX_TESTS_DEMO_COMMON_H
#define RKNNX_TESTS_DEMO_COMMON_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rknn_api.h"
#include "rknn_emu.h"

#define CHECK(call)                                                                   \
    do {                                                                              \
        int _rc = (call);                                                             \
        if (_rc != RKNN_SUCC) {                                                       \
            fprintf(stderr, "%s:%d: %s failed: %d\n", __FILE__, __LINE__, #call, _rc); \
            exit(2);                                                                  \
        }                                                                             \
    } while (0)

#define NONNULL(p)                                                                    \
    do {                                                                              \
        if (!(p)) {                                                                   \
            fprintf(stderr, "%s:%d: %s is NULL\n", __FILE__, __LINE__, #p);           \
            exit(2);                                                                  \
        }                                                                             \
    } while (0)

static inline unsigned char *demo_read_file(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "cannot open %s\n", path);
        exit(2);
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc(n > 0 ? (size_t)n : 1);
    NONNULL(b);
    if (n > 0 && fread(b, 1, (size_t)n, f) != (size_t)n) {
        fprintf(stderr, "short read on %s\n", path);
        exit(2);
    }
    fclose(f);
    *size = (size_t)n;
    return b;
}

static inline void demo_write_file(const char *prefix, unsigned idx, const void *data, size_t n)
{
    char path[4096];
    snprintf(path, sizeof path, "%s%u.bin", prefix, idx);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, n, f) != n) {
        fprintf(stderr, "cannot write %s\n", path);
        exit(2);
    }
    fclose(f);
}

/* One attribute, printed with the header's string helpers as the vendor examples do. */
static inline void demo_dump_attr(const char *kind, const rknn_tensor_attr *a)
{
    printf("%s %u: name=%s n_dims=%u dims=[", kind, a->index, a->name, a->n_dims);
    for (uint32_t d = 0; d < a->n_dims; d++)
        printf(d ? ", %u" : "%u", a->dims[d]);
    printf("] n_elems=%u size=%u fmt=%s type=%s qnt_type=%s zp=%d scale=%f\n", a->n_elems,
           a->size, get_format_string(a->fmt), get_type_string(a->type),
           get_qnt_type_string(a->qnt_type), a->zp, a->scale);
}

static inline void demo_prologue(rknn_context ctx, rknn_input_output_num *io,
                                 rknn_tensor_attr **in_attrs, rknn_tensor_attr **out_attrs,
                                 int out_query)
{
    rknn_sdk_version ver;
    CHECK(rknn_query(ctx, RKNN_QUERY_SDK_VERSION, &ver, sizeof ver));
    printf("sdk api: %s, driver: %s\n", ver.api_version, ver.drv_version);
    CHECK(rknn_query(ctx, RKNN_QUERY_IN_OUT_NUM, io, sizeof *io));
    *in_attrs = calloc(io->n_input, sizeof **in_attrs);
    *out_attrs = calloc(io->n_output, sizeof **out_attrs);
    NONNULL(*in_attrs);
    NONNULL(*out_attrs);
    for (uint32_t i = 0; i < io->n_input; i++) {
        (*in_attrs)[i].index = i;
        CHECK(rknn_query(ctx, RKNN_QUERY_INPUT_ATTR, &(*in_attrs)[i], sizeof(rknn_tensor_attr)));
        demo_dump_attr("input", &(*in_attrs)[i]);
    }
    for (uint32_t i = 0; i < io->n_output; i++) {
        (*out_attrs)[i].index = i;
        CHECK(rknn_query(ctx, (rknn_query_cmd)out_query, &(*out_attrs)[i], sizeof(rknn_tensor_attr)));
        demo_dump_attr("output", &(*out_attrs)[i]);
    }
    rknn_custom_string cs;
    CHECK(rknn_query(ctx, RKNN_QUERY_CUSTOM_STRING, &cs, sizeof cs));
    printf("custom string: %s\n", cs.string);
}

/* Every runtime object must be gone after rknn_destroy. */
static inline int demo_leak_check(void)
{
    rknn_emu_counters c;
    CHECK(rknn_emu_get_counters(&c, sizeof c));
    if (c.live_contexts || c.live_mems || c.live_output_buffers) {
        fprintf(stderr, "leak: %lld contexts, %lld mems, %lld output buffers\n",
                (long long)c.live_contexts, (long long)c.live_mems,
                (long long)c.live_output_buffers);
        return 3;
    }
    printf("bytes copied: %lld (in %lld, out %lld, synced %lld), syncs %lld, runs %lld\n",
           (long long)c.bytes_copied, (long long)c.bytes_in, (long long)c.bytes_out,
           (long long)c.bytes_synced, (long long)c.syncs, (long long)c.runs);
    return 0;
}

#endif /* RKNNX_TESTS_DEMO_COMMON_H */
