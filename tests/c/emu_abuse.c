/*
 * Malformed calls against the emulator: every exported rknn_* function with NULL pointers,
 * zero / garbage / destroyed / wrong-kind contexts, huge sizes, bad indices and enum values,
 * plus a few valid flows.  Built by tests/emulator/test_emu_sanitizers.py together with the emulator
 * sources under -fsanitize=address,undefined -fno-sanitize-recover=all: a crash or a
 * sanitizer report fails the test; so does a call that returns success where the vendor
 * API must fail (every check below is counted; mismatches are listed on stderr).
 *
 * usage: emu_abuse <model dir> [random steps]   (relu.rknn, custom.rknn, allops.rknn,
 *        relu_RK3566.rknn, relu_RV1106.rknn, written by the test; 60000 steps by default)
 * Prints "abuse: N checks, M failed" and exits 0 when M == 0.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "rknn_api.h"
#include "rknn_custom_op.h"
#include "rknn_emu.h"
#include "rknn_matmul_api.h"

static int g_checks, g_failed;

static void fail_at(int line, const char *what, long long got, long long want)
{
    g_failed++;
    fprintf(stderr, "FAIL line %d: %s -> %lld (want %lld)\n", line, what, got, want);
}

/* exact status */
#define RC(expr, want)                                                       \
    do {                                                                     \
        int _r = (expr);                                                     \
        g_checks++;                                                          \
        if (_r != (want))                                                    \
            fail_at(__LINE__, #expr, _r, (want));                            \
    } while (0)
/* any error status */
#define ERR(expr)                                                            \
    do {                                                                     \
        int _r = (expr);                                                     \
        g_checks++;                                                          \
        if (_r >= 0)                                                         \
            fail_at(__LINE__, #expr, _r, -1);                                \
    } while (0)
#define IS_NULL(expr)                                                        \
    do {                                                                     \
        const void *_p = (expr);                                             \
        g_checks++;                                                          \
        if (_p)                                                              \
            fail_at(__LINE__, #expr, 1, 0);                                  \
    } while (0)
#define CHECK(cond)                                                          \
    do {                                                                     \
        g_checks++;                                                          \
        if (!(cond))                                                         \
            fail_at(__LINE__, #cond, 0, 1);                                  \
    } while (0)

static uint8_t *load(const char *dir, const char *name, uint32_t *size)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "cannot open %s\n", path);
        exit(2);
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc((size_t)n);
    if (!b || fread(b, 1, (size_t)n, f) != (size_t)n) {
        fprintf(stderr, "cannot read %s\n", path);
        exit(2);
    }
    fclose(f);
    *size = (uint32_t)n;
    return b;
}

static rknn_context init_ok(uint8_t *m, uint32_t n, uint32_t flags)
{
    rknn_context c = 0;
    int rc = rknn_init(&c, m, n, flags, NULL);
    if (rc != RKNN_SUCC) {
        fprintf(stderr, "rknn_init of a valid model failed: %d\n", rc);
        exit(2);
    }
    return c;
}

/* ---- every context-taking function against one invalid context -------------------------- */
static void bad_context(rknn_context bad, rknn_tensor_mem *some_mem)
{
    rknn_context out = 0, in = bad;
    RC(rknn_dup_context(&in, &out), RKNN_ERR_CTX_INVALID);
    RC(rknn_destroy(bad), RKNN_ERR_CTX_INVALID);
    rknn_input_output_num io;
    RC(rknn_query(bad, RKNN_QUERY_IN_OUT_NUM, &io, sizeof io), RKNN_ERR_CTX_INVALID);
    float x[2] = {1, 2};
    rknn_input inp = {.index = 0, .buf = x, .size = sizeof x, .type = RKNN_TENSOR_FLOAT32,
                      .fmt = RKNN_TENSOR_UNDEFINED};
    RC(rknn_inputs_set(bad, 1, &inp), RKNN_ERR_CTX_INVALID);
    RC(rknn_set_batch_core_num(bad, 1), RKNN_ERR_CTX_INVALID);
    RC(rknn_set_core_mask(bad, RKNN_NPU_CORE_AUTO), RKNN_ERR_CTX_INVALID);
    RC(rknn_run(bad, NULL), RKNN_ERR_CTX_INVALID);
    RC(rknn_wait(bad, NULL), RKNN_ERR_CTX_INVALID);
    rknn_output o = {.want_float = 1};
    RC(rknn_outputs_get(bad, 1, &o, NULL), RKNN_ERR_CTX_INVALID);
    RC(rknn_outputs_release(bad, 1, &o), RKNN_ERR_CTX_INVALID);
    IS_NULL(rknn_create_mem_from_phys(bad, 0x40000000ull, NULL, 16));
    IS_NULL(rknn_create_mem_from_fd(bad, 0, NULL, 16, 0));
    IS_NULL(rknn_create_mem_from_mb_blk(bad, NULL, 0));
    IS_NULL(rknn_create_mem(bad, 16));
    IS_NULL(rknn_create_mem2(bad, 16, 0));
    RC(rknn_destroy_mem(bad, some_mem), RKNN_ERR_CTX_INVALID);
    RC(rknn_set_weight_mem(bad, some_mem), RKNN_ERR_CTX_INVALID);
    RC(rknn_set_internal_mem(bad, some_mem), RKNN_ERR_CTX_INVALID);
    rknn_tensor_attr a;
    memset(&a, 0, sizeof a);
    RC(rknn_set_io_mem(bad, some_mem, &a), RKNN_ERR_CTX_INVALID);
    RC(rknn_set_input_shape(bad, &a), RKNN_ERR_CTX_INVALID);
    RC(rknn_set_input_shapes(bad, 1, &a), RKNN_ERR_CTX_INVALID);
    RC(rknn_mem_sync(bad, some_mem, RKNN_MEMORY_SYNC_TO_DEVICE), RKNN_ERR_CTX_INVALID);
    rknn_custom_op op;
    memset(&op, 0, sizeof op);
    RC(rknn_register_custom_ops(bad, &op, 1), RKNN_ERR_CTX_INVALID);
    rknn_matmul_tensor_attr mt;
    memset(&mt, 0, sizeof mt);
    RC(rknn_matmul_set_io_mem(bad, some_mem, &mt), RKNN_ERR_CTX_INVALID);
    RC(rknn_matmul_set_core_mask(bad, RKNN_NPU_CORE_AUTO), RKNN_ERR_CTX_INVALID);
    rknn_quant_params qp;
    memset(&qp, 0, sizeof qp);
    float s = 1.0f;
    RC(rknn_matmul_set_quant_params(bad, &qp), RKNN_ERR_CTX_INVALID);
    RC(rknn_matmul_get_quant_params(bad, &qp, &s), RKNN_ERR_CTX_INVALID);
    rknn_matmul_shape sh = {1, 32, 32};
    RC(rknn_matmul_set_dynamic_shape(bad, &sh), RKNN_ERR_CTX_INVALID);
    RC(rknn_matmul_run(bad), RKNN_ERR_CTX_INVALID);
    RC(rknn_matmul_destroy(bad), RKNN_ERR_CTX_INVALID);
    IS_NULL(rknn_emu_context_platform(bad));
}

static void all_bad_contexts(rknn_context destroyed, rknn_tensor_mem *some_mem)
{
    const rknn_context bad[] = {0, 1, 7, 0xdeadbeef, (rknn_context)-1, (rknn_context)1 << 30,
                                ((rknn_context)1 << 30) | 4095, (rknn_context)1 << 40, destroyed};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        bad_context(bad[i], some_mem);
}

/* ---- rknn_init --------------------------------------------------------------------------- */
static void init_abuse(uint8_t *m, uint32_t n)
{
    rknn_context c = 0;
    RC(rknn_init(NULL, m, n, 0, NULL), RKNN_ERR_PARAM_INVALID);
    RC(rknn_init(&c, NULL, 0, 0, NULL), RKNN_ERR_PARAM_INVALID);
    RC(rknn_init(&c, NULL, 100, 0, NULL), RKNN_ERR_PARAM_INVALID);
    CHECK(c == 0);
    RC(rknn_init(&c, "/nonexistent/model.rknn", 0, 0, NULL), RKNN_ERR_MODEL_INVALID);
    RC(rknn_init(&c, "/", 0, 0, NULL), RKNN_ERR_MODEL_INVALID);
    RC(rknn_init(&c, "", 0, 0, NULL), RKNN_ERR_MODEL_INVALID);
    uint8_t junk[256];
    for (size_t i = 0; i < sizeof junk; i++)
        junk[i] = (uint8_t)(i * 37 + 11);
    RC(rknn_init(&c, junk, sizeof junk, 0, NULL), RKNN_ERR_MODEL_INVALID);
    for (uint32_t cut = 0; cut < n; cut += n / 61 + 1)   /* truncations */
        ERR(rknn_init(&c, m, cut ? cut : 1, 0, NULL));
    uint8_t *copy = malloc(n);
    for (uint32_t i = 0; i < n; i += 7) {                 /* single-byte corruptions */
        memcpy(copy, m, n);
        copy[i] ^= 0xA5;
        int rc = rknn_init(&c, copy, n, 0, NULL);
        if (rc == RKNN_SUCC) {                            /* still a valid model: must run */
            rknn_destroy(c);
        } else {
            CHECK(rc < 0);
        }
    }
    free(copy);
    /* every flag bit, with and without an extend */
    for (int bit = 0; bit < 32; bit++) {
        int rc = rknn_init(&c, m, n, 1u << bit, NULL);
        if (rc == RKNN_SUCC)
            RC(rknn_destroy(c), RKNN_SUCC);
        else
            CHECK(rc < 0);
    }
    rknn_init_extend ext;
    memset(&ext, 0, sizeof ext);
    ext.ctx = 0xdeadbeef;
    RC(rknn_init(&c, m, n, RKNN_FLAG_SHARE_WEIGHT_MEM, &ext), RKNN_ERR_CTX_INVALID);
    RC(rknn_init(&c, m, n, RKNN_FLAG_SHARE_WEIGHT_MEM, NULL), RKNN_ERR_PARAM_INVALID);
    ext.model_buffer_fd = -1;
    ext.real_model_size = n;
    RC(rknn_init(&c, m, n, RKNN_FLAG_MODEL_BUFFER_ZERO_COPY, &ext), RKNN_ERR_PARAM_INVALID);
    RC(rknn_init(&c, m, n, RKNN_FLAG_MODEL_BUFFER_ZERO_COPY, NULL), RKNN_ERR_PARAM_INVALID);
    /* a model buffer smaller than real_model_offset + real_model_size: no SIGBUS */
    rknn_tensor_mem *mb = rknn_create_mem2(0, n, RKNN_MEM_FLAG_ALLOC_NO_CONTEXT);
    CHECK(mb != NULL);
    if (mb) {
        memcpy(mb->virt_addr, m, n);
        ext.model_buffer_fd = mb->fd;
        ext.real_model_offset = 0;
        ext.real_model_size = n * 64 + 65536;
        RC(rknn_init(&c, m, n, RKNN_FLAG_MODEL_BUFFER_ZERO_COPY, &ext), RKNN_ERR_PARAM_INVALID);
        ext.real_model_offset = 0x7ffffff0;
        ext.real_model_size = 64;
        RC(rknn_init(&c, m, n, RKNN_FLAG_MODEL_BUFFER_ZERO_COPY, &ext), RKNN_ERR_PARAM_INVALID);
        ext.real_model_offset = -4;
        ERR(rknn_init(&c, m, n, RKNN_FLAG_MODEL_BUFFER_ZERO_COPY, &ext));
        ext.real_model_offset = 0;
        ext.real_model_size = n;
        RC(rknn_init(&c, m, n, RKNN_FLAG_MODEL_BUFFER_ZERO_COPY, &ext), RKNN_SUCC);
        RC(rknn_destroy(c), RKNN_SUCC);
        RC(rknn_destroy_mem(0, mb), RKNN_SUCC);
    }
    /* init with a model from another NPU group */
    RC(rknn_emu_set_platform("RK3566"), RKNN_SUCC);
    RC(rknn_init(&c, m, n, 0, NULL), RKNN_ERR_TARGET_PLATFORM_UNMATCH);
    RC(rknn_emu_set_platform(NULL), RKNN_SUCC);
    /* rknn_dup_context argument checks */
    rknn_context ok = init_ok(m, n, 0), out = 0;
    RC(rknn_dup_context(NULL, &out), RKNN_ERR_PARAM_INVALID);
    RC(rknn_dup_context(&ok, NULL), RKNN_ERR_PARAM_INVALID);
    RC(rknn_dup_context(&ok, &out), RKNN_SUCC);
    RC(rknn_destroy(out), RKNN_SUCC);
    RC(rknn_destroy(ok), RKNN_SUCC);
    RC(rknn_destroy(ok), RKNN_ERR_CTX_INVALID);
}

/* ---- rknn_query ---------------------------------------------------------------------------- */
static void query_abuse(rknn_context c)
{
    static union {
        rknn_tensor_attr attr;
        rknn_input_range range;
        uint8_t raw[sizeof(rknn_input_range) + 64];
    } buf;
    const uint32_t sizes[] = {0, 1, 4, 7, sizeof(rknn_tensor_attr) - 1, sizeof(rknn_tensor_attr) + 1,
                              0x7fffffff, 0xffffffff};
    for (int cmd = -3; cmd < 40; cmd++) {
        ERR(rknn_query(c, (rknn_query_cmd)cmd, NULL, sizeof buf));
        for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
            /* boards check info_len < sizeof(struct): larger sizes are taken (the struct is
               written, never more), smaller ones refused */
            if (sizes[s] >= 8 && cmd >= 0 && cmd < RKNN_QUERY_CMD_MAX)   /* 8: the smallest */
                (void)rknn_query(c, (rknn_query_cmd)cmd, &buf, sizes[s]);
            else
                ERR(rknn_query(c, (rknn_query_cmd)cmd, &buf, sizes[s]));
        }
    }
    const uint32_t idx[] = {1, 2, 255, 0x7fffffff, 0xffffffff};
    for (size_t i = 0; i < sizeof idx / sizeof idx[0]; i++) {
        for (int cmd = RKNN_QUERY_INPUT_ATTR; cmd <= RKNN_QUERY_CURRENT_NATIVE_OUTPUT_ATTR; cmd++) {
            size_t sz = cmd == RKNN_QUERY_INPUT_DYNAMIC_RANGE ? sizeof(rknn_input_range)
                                                               : sizeof(rknn_tensor_attr);
            if (cmd >= RKNN_QUERY_PERF_DETAIL && cmd <= RKNN_QUERY_CUSTOM_STRING)
                continue;
            if (cmd == RKNN_QUERY_DEVICE_MEM_INFO)
                continue;
            memset(&buf, 0xff, sizeof buf);
            buf.attr.index = idx[i];
            ERR(rknn_query(c, (rknn_query_cmd)cmd, &buf, (uint32_t)sz));
        }
    }
    /* perf queries before any run; the contexts here have no RKNN_FLAG_COLLECT_PERF_MASK,
       so PERF_DETAIL answers with a runtime-owned "not collected" string (or is refused
       as a query the chip does not have) */
    rknn_perf_run pr;
    rknn_perf_detail pd;
    ERR(rknn_query(c, RKNN_QUERY_PERF_RUN, &pr, sizeof pr));
    memset(&pd, 0, sizeof pd);
    int prc = rknn_query(c, RKNN_QUERY_PERF_DETAIL, &pd, sizeof pd);
    g_checks++;
    if (prc == RKNN_SUCC ? (!pd.perf_data || pd.data_len != strlen(pd.perf_data) ||
                            !strstr(pd.perf_data, "not collected"))
                         : prc != RKNN_ERR_PARAM_INVALID && prc != RKNN_ERR_FAIL)
        fail_at(__LINE__, "PERF_DETAIL without the perf flag: a 'not collected' string",
                prc, 0);
}

/* ---- general flow ---------------------------------------------------------------------------- */
static void general_abuse(rknn_context c)
{
    float x[2] = {1, -2}, big[64];
    memset(big, 0, sizeof big);
    rknn_input in = {.index = 0, .buf = x, .size = sizeof x, .type = RKNN_TENSOR_FLOAT32,
                     .fmt = RKNN_TENSOR_UNDEFINED};
    RC(rknn_inputs_set(c, 0, &in), RKNN_ERR_PARAM_INVALID);
    RC(rknn_inputs_set(c, 1, NULL), RKNN_ERR_PARAM_INVALID);
    RC(rknn_inputs_set(c, 0xffffffff, &in), RKNN_ERR_PARAM_INVALID);
    RC(rknn_inputs_set(c, 2, &in), RKNN_ERR_PARAM_INVALID);       /* the model has 1 input */
    rknn_input bad = in;
    bad.index = 1;
    RC(rknn_inputs_set(c, 1, &bad), RKNN_ERR_PARAM_INVALID);
    bad.index = 0xffffffff;
    RC(rknn_inputs_set(c, 1, &bad), RKNN_ERR_PARAM_INVALID);
    bad = in;
    bad.buf = NULL;
    RC(rknn_inputs_set(c, 1, &bad), RKNN_ERR_PARAM_INVALID);
    bad = in;
    bad.size = 7;
    RC(rknn_inputs_set(c, 1, &bad), RKNN_ERR_PARAM_INVALID);
    bad.size = 0;
    RC(rknn_inputs_set(c, 1, &bad), RKNN_ERR_PARAM_INVALID);
    int types[] = {-1, RKNN_TENSOR_INT4, RKNN_TENSOR_TYPE_MAX, 1000};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        bad = in;
        bad.buf = big;
        bad.size = sizeof big;
        bad.type = (rknn_tensor_type)types[i];
        RC(rknn_inputs_set(c, 1, &bad), RKNN_ERR_PARAM_INVALID);
    }
    int fmts[] = {-1, RKNN_TENSOR_NC1HWC2, RKNN_TENSOR_FORMAT_MAX, 77};
    for (size_t i = 0; i < sizeof fmts / sizeof fmts[0]; i++) {
        bad = in;
        bad.fmt = (rknn_tensor_format)fmts[i];
        ERR(rknn_inputs_set(c, 1, &bad));
    }
    /* pass_through takes the bytes whatever type is named, as the vendor's 1.5.2 and 1.6.0
       do (INT8 bytes for fp16_net_rk3588's float16 input: status 0) */
    bad = in;
    bad.pass_through = 1;
    bad.type = RKNN_TENSOR_INT8;
    RC(rknn_inputs_set(c, 1, &bad), RKNN_SUCC);
    rknn_input twice[2] = {in, in};
    ERR(rknn_inputs_set(c, 2, twice));
    /* outputs before any run */
    rknn_output o[2];
    memset(o, 0, sizeof o);
    RC(rknn_outputs_get(c, 1, o, NULL), RKNN_ERR_OUTPUT_INVALID);
    rknn_run_extend re;
    memset(&re, 0, sizeof re);
    re.non_block = 1;
    RC(rknn_inputs_set(c, 1, &in), RKNN_SUCC);
    RC(rknn_run(c, &re), RKNN_ERR_FAIL);
    RC(rknn_wait(c, &re), RKNN_ERR_FAIL);
    RC(rknn_wait(c, NULL), RKNN_ERR_FAIL);
    RC(rknn_run(c, NULL), RKNN_SUCC);
    RC(rknn_outputs_get(c, 0, o, NULL), RKNN_ERR_PARAM_INVALID);
    RC(rknn_outputs_get(c, 1, NULL, NULL), RKNN_ERR_PARAM_INVALID);
    RC(rknn_outputs_get(c, 0xffffffff, o, NULL), RKNN_ERR_PARAM_INVALID);
    o[0].index = 5;
    RC(rknn_outputs_get(c, 1, o, NULL), RKNN_ERR_PARAM_INVALID);
    o[0].index = 0;
    o[0].is_prealloc = 1;
    o[0].buf = NULL;
    o[0].size = 8;
    RC(rknn_outputs_get(c, 1, o, NULL), RKNN_ERR_PARAM_INVALID);
    float y[2];
    o[0].buf = y;
    o[0].size = 7;
    o[0].want_float = 1;
    RC(rknn_outputs_get(c, 1, o, NULL), RKNN_ERR_PARAM_INVALID);
    o[0].size = 8;
    RC(rknn_outputs_get(c, 1, o, NULL), RKNN_SUCC);
    CHECK(y[0] == 1.0f && y[1] == 0.0f);
    o[0].is_prealloc = 0;
    o[0].want_float = 0xff;                  /* any non-zero means float */
    rknn_output_extend oe;
    RC(rknn_outputs_get(c, 1, o, &oe), RKNN_SUCC);
    CHECK(o[0].buf != NULL && o[0].size == 8);
    /* release: NULL array, huge count, foreign pointers, twice */
    RC(rknn_outputs_release(c, 1, NULL), RKNN_ERR_PARAM_INVALID);
    RC(rknn_outputs_release(c, 0xffffffff, o), RKNN_ERR_PARAM_INVALID);
    rknn_output foreign = {.buf = y, .size = 8};
    RC(rknn_outputs_release(c, 1, &foreign), RKNN_SUCC);   /* ignored: not ours */
    RC(rknn_outputs_release(c, 1, o), RKNN_SUCC);
    RC(rknn_outputs_release(c, 1, o), RKNN_SUCC);          /* twice: harmless */
    RC(rknn_outputs_release(c, 0, o), RKNN_SUCC);
    /* general after zero-copy is rejected elsewhere; shapes on a static model */
    rknn_tensor_attr a;
    memset(&a, 0, sizeof a);
    /* a static model refuses shapes before looking at them: -6, as the vendor's 1.5.2 and
       1.6.0 answer set_input_shapes on cls_img_rk3588 (docs/abi-notes.md) */
    RC(rknn_set_input_shapes(c, 1, NULL), RKNN_ERR_MODEL_INVALID);
    RC(rknn_set_input_shapes(c, 0xffffffff, &a), RKNN_ERR_MODEL_INVALID);
    a.n_dims = 200;
    RC(rknn_set_input_shapes(c, 1, &a), RKNN_ERR_MODEL_INVALID);
    a.n_dims = 2;
    a.dims[0] = 0xffffffff;
    a.dims[1] = 0xffffffff;
    RC(rknn_set_input_shapes(c, 1, &a), RKNN_ERR_MODEL_INVALID);
    a.index = 0x80000000u;
    RC(rknn_set_input_shape(c, &a), RKNN_ERR_PARAM_INVALID);
    RC(rknn_set_input_shape(c, NULL), RKNN_ERR_PARAM_INVALID);
    /* cores */
    const int masks[] = {-1, 8, 0x10000, 0x7fffffff, 5, 6};
    for (size_t i = 0; i < sizeof masks / sizeof masks[0]; i++)
        RC(rknn_set_core_mask(c, (rknn_core_mask)masks[i]), RKNN_ERR_PARAM_INVALID);
    RC(rknn_set_batch_core_num(c, 0), RKNN_ERR_PARAM_INVALID);
    RC(rknn_set_batch_core_num(c, -5), RKNN_ERR_PARAM_INVALID);
    RC(rknn_set_batch_core_num(c, 1 << 30), RKNN_ERR_PARAM_INVALID);
    /* zero-copy on a general-flow context */
    rknn_tensor_mem *m = rknn_create_mem(c, 64);
    CHECK(m != NULL);
    rknn_tensor_attr ia;
    memset(&ia, 0, sizeof ia);
    RC(rknn_query(c, RKNN_QUERY_INPUT_ATTR, &ia, sizeof ia), RKNN_SUCC);
    RC(rknn_set_io_mem(c, m, &ia), RKNN_ERR_FAIL);
    RC(rknn_destroy_mem(c, m), RKNN_SUCC);
}

/* ---- zero-copy memory ---------------------------------------------------------------------- */
static void mem_abuse(rknn_context c, rknn_context other)
{
    IS_NULL(rknn_create_mem(c, 0));
    IS_NULL(rknn_create_mem2(c, 0, 0));
    IS_NULL(rknn_create_mem2(c, (uint64_t)UINT32_MAX + 1, 0));
    IS_NULL(rknn_create_mem2(c, UINT64_MAX, 0));
    IS_NULL(rknn_create_mem2(c, 64, 0x80));                       /* unknown flag */
    IS_NULL(rknn_create_mem2(c, 64, RKNN_FLAG_MEMORY_CACHEABLE | RKNN_FLAG_MEMORY_NON_CACHEABLE));
    IS_NULL(rknn_create_mem_from_fd(c, -1, NULL, 64, 0));
    IS_NULL(rknn_create_mem_from_fd(c, 987654, NULL, 64, 0));     /* not open */
    int pfd[2];
    if (pipe(pfd) == 0) {                                         /* not mappable */
        IS_NULL(rknn_create_mem_from_fd(c, pfd[0], NULL, 64, 0));
        close(pfd[0]);
        close(pfd[1]);
    }
    rknn_tensor_mem *m = rknn_create_mem(c, 256);
    CHECK(m != NULL);
    if (!m)
        return;
    IS_NULL(rknn_create_mem_from_fd(c, m->fd, NULL, 0, 0));
    IS_NULL(rknn_create_mem_from_fd(c, m->fd, NULL, 64, -1));
    IS_NULL(rknn_create_mem_from_fd(c, m->fd, NULL, 64, 250));    /* past the end */
    IS_NULL(rknn_create_mem_from_fd(c, m->fd, NULL, 0xffffffff, 0));
    IS_NULL(rknn_create_mem_from_fd(c, m->fd, NULL, 16, 0x7fffffff));
    rknn_tensor_mem *v = rknn_create_mem_from_fd(c, m->fd, NULL, 64, 128);
    CHECK(v != NULL);
    if (v)
        RC(rknn_destroy_mem(c, v), RKNN_SUCC);
    rknn_tensor_mem *mis = rknn_create_mem_from_fd(c, m->fd, NULL, 64, 8);
    rknn_tensor_mem *al = rknn_create_mem_from_fd(c, m->fd, NULL, 64, 16);
    CHECK(mis && al);
    /* (on `other`, which is not run again: a destroyed internal mem fails its runs) */
    RC(rknn_set_internal_mem(other, mis), RKNN_ERR_PARAM_INVALID);    /* not 16-byte aligned */
    RC(rknn_set_weight_mem(other, mis), RKNN_ERR_PARAM_INVALID);
    RC(rknn_set_internal_mem(other, al), RKNN_SUCC);
    RC(rknn_destroy_mem(c, mis), RKNN_SUCC);
    RC(rknn_destroy_mem(c, al), RKNN_SUCC);
    IS_NULL(rknn_create_mem_from_phys(c, 0, NULL, 16));
    IS_NULL(rknn_create_mem_from_phys(c, 0x1234, NULL, 16));
    IS_NULL(rknn_create_mem_from_phys(c, m->phys_addr, NULL, 0));
    IS_NULL(rknn_create_mem_from_phys(c, m->phys_addr, NULL, 257));
    IS_NULL(rknn_create_mem_from_phys(c, m->phys_addr + 200, NULL, 64));
    IS_NULL(rknn_create_mem_from_phys(c, UINT64_MAX - 8, NULL, 64));
    IS_NULL(rknn_create_mem_from_phys(c, m->phys_addr + 256 + 4096, NULL, 16));  /* guard page */
    rknn_tensor_mem *p = rknn_create_mem_from_phys(c, m->phys_addr + 16, NULL, 32);
    CHECK(p != NULL);
    if (p)
        RC(rknn_destroy_mem(c, p), RKNN_SUCC);
    IS_NULL(rknn_create_mem_from_mb_blk(c, (void *)m, 0));
    /* sync */
    RC(rknn_mem_sync(c, NULL, RKNN_MEMORY_SYNC_TO_DEVICE), RKNN_ERR_PARAM_INVALID);
    RC(rknn_mem_sync(c, m, (rknn_mem_sync_mode)0), RKNN_ERR_PARAM_INVALID);
    RC(rknn_mem_sync(c, m, (rknn_mem_sync_mode)4), RKNN_ERR_PARAM_INVALID);
    RC(rknn_mem_sync(c, m, (rknn_mem_sync_mode)-1), RKNN_ERR_PARAM_INVALID);
    rknn_tensor_mem fake;
    memset(&fake, 0, sizeof fake);
    fake.virt_addr = &fake;
    fake.size = 1u << 30;
    RC(rknn_mem_sync(c, &fake, RKNN_MEMORY_SYNC_BIDIRECTIONAL), RKNN_ERR_PARAM_INVALID);
    RC(rknn_mem_sync(c, m, RKNN_MEMORY_SYNC_BIDIRECTIONAL), RKNN_SUCC);
    /* binding */
    rknn_tensor_attr a;
    memset(&a, 0, sizeof a);
    RC(rknn_query(c, RKNN_QUERY_INPUT_ATTR, &a, sizeof a), RKNN_SUCC);
    RC(rknn_set_io_mem(c, m, NULL), RKNN_ERR_PARAM_INVALID);
    RC(rknn_set_io_mem(c, NULL, &a), RKNN_ERR_PARAM_INVALID);
    RC(rknn_set_io_mem(c, &fake, &a), RKNN_ERR_PARAM_INVALID);
    rknn_tensor_attr b = a;
    memset(b.name, 'z', sizeof b.name);                            /* no terminator */
    RC(rknn_set_io_mem(c, m, &b), RKNN_ERR_PARAM_INVALID);
    b = a;
    b.name[0] = '\0';
    b.index = 0xffffffff;
    RC(rknn_set_io_mem(c, m, &b), RKNN_ERR_PARAM_INVALID);
    b = a;
    b.type = (rknn_tensor_type)1000;
    RC(rknn_set_io_mem(c, m, &b), RKNN_ERR_PARAM_INVALID);
    b = a;
    b.fmt = (rknn_tensor_format)-7;
    RC(rknn_set_io_mem(c, m, &b), RKNN_ERR_PARAM_INVALID);
    b = a;
    b.pass_through = 1;
    b.type = RKNN_TENSOR_UINT8;
    RC(rknn_set_io_mem(c, m, &b), RKNN_ERR_PARAM_INVALID);
    rknn_tensor_mem *small = rknn_create_mem(c, 4);
    CHECK(small != NULL);
    RC(rknn_set_io_mem(c, small, &a), RKNN_ERR_PARAM_INVALID);
    RC(rknn_set_weight_mem(c, NULL), RKNN_ERR_PARAM_INVALID);
    RC(rknn_set_internal_mem(c, NULL), RKNN_ERR_PARAM_INVALID);
    RC(rknn_set_weight_mem(c, &fake), RKNN_ERR_PARAM_INVALID);
    /* a mem of another context can be bound (the vendor shares them); a destroyed one not */
    rknn_tensor_mem *om = rknn_create_mem(other, 64);
    CHECK(om != NULL);
    RC(rknn_destroy_mem(other, om), RKNN_SUCC);
    RC(rknn_set_io_mem(c, om, &a), RKNN_ERR_PARAM_INVALID);       /* dangling */
    RC(rknn_destroy_mem(other, om), RKNN_ERR_PARAM_INVALID);      /* twice */
    RC(rknn_mem_sync(c, om, RKNN_MEMORY_SYNC_TO_DEVICE), RKNN_ERR_PARAM_INVALID);
    /* bind, destroy the mem, run: an error, not a use-after-free */
    RC(rknn_set_io_mem(c, m, &a), RKNN_SUCC);
    rknn_tensor_attr oa;
    memset(&oa, 0, sizeof oa);
    RC(rknn_query(c, RKNN_QUERY_OUTPUT_ATTR, &oa, sizeof oa), RKNN_SUCC);
    rknn_tensor_mem *out = rknn_create_mem(c, 64);
    RC(rknn_set_io_mem(c, out, &oa), RKNN_SUCC);
    ((float *)m->virt_addr)[0] = -3.0f;
    ((float *)m->virt_addr)[1] = 3.0f;
    RC(rknn_run(c, NULL), RKNN_SUCC);
    CHECK(((float *)out->virt_addr)[0] == 0.0f && ((float *)out->virt_addr)[1] == 3.0f);
    RC(rknn_destroy_mem(c, m), RKNN_SUCC);
    RC(rknn_run(c, NULL), RKNN_ERR_PARAM_INVALID);
    RC(rknn_destroy_mem(c, m), RKNN_ERR_PARAM_INVALID);
    RC(rknn_destroy_mem(c, NULL), RKNN_ERR_PARAM_INVALID);
    RC(rknn_destroy_mem(c, &fake), RKNN_ERR_PARAM_INVALID);
    /* the general API is now refused (flows cannot be mixed) */
    float x[2] = {0, 0};
    rknn_input in = {.index = 0, .buf = x, .size = sizeof x, .type = RKNN_TENSOR_FLOAT32,
                     .fmt = RKNN_TENSOR_UNDEFINED};
    RC(rknn_inputs_set(c, 1, &in), RKNN_ERR_FAIL);
    RC(rknn_destroy_mem(c, small), RKNN_SUCC);
    RC(rknn_destroy_mem(c, out), RKNN_SUCC);
}

/* ---- matmul ---------------------------------------------------------------------------------- */
static void matmul_abuse(rknn_context model_ctx)
{
    rknn_matmul_ctx mc = 0;
    rknn_matmul_info info;
    rknn_matmul_io_attr io;
    memset(&info, 0, sizeof info);
    info.M = 4;
    info.K = 64;
    info.N = 64;
    info.type = RKNN_INT8_MM_INT4_TO_INT32;
    RC(rknn_matmul_create(NULL, &info, &io), RKNN_ERR_PARAM_INVALID);
    RC(rknn_matmul_create(&mc, NULL, &io), RKNN_ERR_PARAM_INVALID);
    RC(rknn_matmul_create(&mc, &info, NULL), RKNN_ERR_PARAM_INVALID);
    const int32_t dims[][3] = {{0, 64, 64}, {-1, 64, 64}, {4, 0, 64}, {4, 64, -64},
                               {65537, 64, 64}, {INT32_MAX, INT32_MAX, INT32_MAX},
                               {65536, 65536, 65536}, {65536, 8192, 65536}};
    for (size_t i = 0; i < sizeof dims / sizeof dims[0]; i++) {
        rknn_matmul_info bad = info;
        bad.M = dims[i][0];
        bad.K = dims[i][1];
        bad.N = dims[i][2];
        RC(rknn_matmul_create(&mc, &bad, &io), RKNN_ERR_PARAM_INVALID);
    }
    const int types[] = {-1, 0, 13, 14, 16, 1000};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        rknn_matmul_info bad = info;
        bad.type = (rknn_matmul_type)types[i];
        RC(rknn_matmul_create(&mc, &bad, &io), RKNN_ERR_PARAM_INVALID);
    }
    rknn_matmul_info bad = info;
    bad.B_layout = 3;
    RC(rknn_matmul_create(&mc, &bad, &io), RKNN_ERR_PARAM_INVALID);
    bad = info;
    bad.AC_layout = -1;
    RC(rknn_matmul_create(&mc, &bad, &io), RKNN_ERR_PARAM_INVALID);
    bad = info;
    bad.B_quant_type = 99;
    RC(rknn_matmul_create(&mc, &bad, &io), RKNN_ERR_PARAM_INVALID);
    bad = info;
    bad.type = RKNN_FLOAT16_MM_INT4_TO_FLOAT32;
    bad.B_quant_type = RKNN_QUANT_TYPE_PER_GROUP_ASYM;
    bad.group_size = -32;
    RC(rknn_matmul_create(&mc, &bad, &io), RKNN_ERR_PARAM_INVALID);
    rknn_matmul_shape shapes[2] = {{1, 64, 64}, {0, 64, 64}};
    rknn_matmul_io_attr ios[2];
    RC(rknn_matmul_create_dynamic_shape(&mc, &info, 0, shapes, ios), RKNN_ERR_PARAM_INVALID);
    RC(rknn_matmul_create_dynamic_shape(&mc, &info, -1, shapes, ios), RKNN_ERR_PARAM_INVALID);
    RC(rknn_matmul_create_dynamic_shape(&mc, &info, 1 << 30, shapes, ios), RKNN_ERR_PARAM_INVALID);
    RC(rknn_matmul_create_dynamic_shape(&mc, &info, 2, shapes, ios), RKNN_ERR_PARAM_INVALID);
    RC(rknn_matmul_create_dynamic_shape(&mc, &info, 1, NULL, ios), RKNN_ERR_PARAM_INVALID);
    RC(rknn_matmul_create_dynamic_shape(&mc, &info, 1, shapes, NULL), RKNN_ERR_PARAM_INVALID);
    /* a working context, then abuse */
    RC(rknn_matmul_create(&mc, &info, &io), RKNN_SUCC);
    RC(rknn_matmul_run(mc), RKNN_ERR_PARAM_INVALID);              /* nothing bound */
    rknn_tensor_mem *A = rknn_create_mem(mc, io.A.size), *B = rknn_create_mem(mc, io.B.size),
                    *C = rknn_create_mem(mc, io.C.size), *tiny = rknn_create_mem(mc, 1);
    CHECK(A && B && C && tiny);
    RC(rknn_matmul_set_io_mem(mc, NULL, &io.A), RKNN_ERR_PARAM_INVALID);
    RC(rknn_matmul_set_io_mem(mc, A, NULL), RKNN_ERR_PARAM_INVALID);
    RC(rknn_matmul_set_io_mem(mc, tiny, &io.C), RKNN_ERR_PARAM_INVALID);
    rknn_matmul_tensor_attr t = io.A;
    memset(t.name, 'A', sizeof t.name);
    RC(rknn_matmul_set_io_mem(mc, A, &t), RKNN_ERR_PARAM_INVALID);
    RC(rknn_matmul_set_core_mask(mc, (rknn_core_mask)0x12345), RKNN_ERR_PARAM_INVALID);
    rknn_quant_params q;
    memset(&q, 0, sizeof q);
    float sc[64];
    int32_t zp[64];
    for (int i = 0; i < 64; i++) {
        sc[i] = 0.5f;
        zp[i] = 0;
    }
    RC(rknn_matmul_set_quant_params(mc, NULL), RKNN_ERR_PARAM_INVALID);
    strcpy(q.name, "B");
    RC(rknn_matmul_set_quant_params(mc, &q), RKNN_ERR_PARAM_INVALID);   /* no scales */
    q.scale = sc;
    q.scale_len = -1;
    RC(rknn_matmul_set_quant_params(mc, &q), RKNN_ERR_PARAM_INVALID);
    q.scale_len = 0x7fffffff;
    RC(rknn_matmul_set_quant_params(mc, &q), RKNN_ERR_PARAM_INVALID);
    q.scale_len = 1;
    q.zp_len = 5;
    q.zp = zp;
    RC(rknn_matmul_set_quant_params(mc, &q), RKNN_ERR_PARAM_INVALID);
    q.zp_len = 1;
    q.zp = NULL;
    RC(rknn_matmul_set_quant_params(mc, &q), RKNN_ERR_PARAM_INVALID);
    q.zp_len = -3;
    RC(rknn_matmul_set_quant_params(mc, &q), RKNN_ERR_PARAM_INVALID);
    q.zp_len = 0;
    sc[0] = 0.0f;
    RC(rknn_matmul_set_quant_params(mc, &q), RKNN_ERR_PARAM_INVALID);
    sc[0] = 0.5f;
    RC(rknn_matmul_set_quant_params(mc, &q), RKNN_SUCC);
    float est = 0;
    RC(rknn_matmul_get_quant_params(mc, NULL, &est), RKNN_ERR_PARAM_INVALID);
    RC(rknn_matmul_get_quant_params(mc, &q, NULL), RKNN_ERR_PARAM_INVALID);
    RC(rknn_matmul_set_dynamic_shape(mc, NULL), RKNN_ERR_PARAM_INVALID);
    rknn_matmul_shape other = {5, 64, 64};
    RC(rknn_matmul_set_dynamic_shape(mc, &other), RKNN_ERR_PARAM_INVALID);
    RC(rknn_matmul_set_io_mem(mc, A, &io.A), RKNN_SUCC);
    RC(rknn_matmul_set_io_mem(mc, B, &io.B), RKNN_SUCC);
    RC(rknn_matmul_set_io_mem(mc, C, &io.C), RKNN_SUCC);
    memset(A->virt_addr, 0x7f, io.A.size);
    memset(B->virt_addr, 0x77, io.B.size);                        /* int4 7s */
    RC(rknn_matmul_run(mc), RKNN_SUCC);
    CHECK(((int32_t *)C->virt_addr)[0] == 127 * 7 * 64);
    RC(rknn_destroy_mem(mc, C), RKNN_SUCC);
    RC(rknn_matmul_run(mc), RKNN_ERR_PARAM_INVALID);              /* C destroyed */
    /* model functions on a matmul context and the other way round */
    RC(rknn_run(mc, NULL), RKNN_ERR_CTX_INVALID);
    rknn_input_output_num n;
    RC(rknn_query(mc, RKNN_QUERY_IN_OUT_NUM, &n, sizeof n), RKNN_ERR_CTX_INVALID);
    RC(rknn_matmul_run(model_ctx), RKNN_ERR_CTX_INVALID);
    RC(rknn_matmul_destroy(model_ctx), RKNN_ERR_CTX_INVALID);
    /* the layout helper */
    uint8_t src[64 * 64], dst[64 * 64];
    memset(src, 0x11, sizeof src);
    RC(rknn_B_normal_layout_to_native_layout(NULL, dst, 64, 64, &info), RKNN_ERR_PARAM_INVALID);
    RC(rknn_B_normal_layout_to_native_layout(src, NULL, 64, 64, &info), RKNN_ERR_PARAM_INVALID);
    RC(rknn_B_normal_layout_to_native_layout(src, dst, 64, 64, NULL), RKNN_ERR_PARAM_INVALID);
    RC(rknn_B_normal_layout_to_native_layout(src, dst, 0, 64, &info), RKNN_ERR_PARAM_INVALID);
    RC(rknn_B_normal_layout_to_native_layout(src, dst, 64, -1, &info), RKNN_ERR_PARAM_INVALID);
    RC(rknn_B_normal_layout_to_native_layout(src, dst, INT32_MAX, 64, &info), RKNN_ERR_PARAM_INVALID);
    bad = info;
    bad.type = (rknn_matmul_type)77;
    RC(rknn_B_normal_layout_to_native_layout(src, dst, 64, 64, &bad), RKNN_ERR_PARAM_INVALID);
    RC(rknn_B_normal_layout_to_native_layout(src, dst, 64, 64, &info), RKNN_SUCC);
    RC(rknn_destroy_mem(mc, A), RKNN_SUCC);
    RC(rknn_destroy_mem(mc, B), RKNN_SUCC);
    RC(rknn_destroy_mem(mc, tiny), RKNN_SUCC);
    RC(rknn_matmul_destroy(mc), RKNN_SUCC);
    RC(rknn_matmul_destroy(mc), RKNN_ERR_CTX_INVALID);
    RC(rknn_matmul_run(mc), RKNN_ERR_CTX_INVALID);
}

/* ---- custom ops ------------------------------------------------------------------------------- */
static int g_inits, g_computes, g_destroys;

static int cb_init(rknn_custom_op_context *op_ctx, rknn_custom_op_tensor *ins, uint32_t n_in,
                   rknn_custom_op_tensor *outs, uint32_t n_out)
{
    (void)ins;
    (void)outs;
    g_inits++;
    rknn_custom_op_attr a;
    rknn_custom_op_get_op_attr(op_ctx, "alpha", &a);
    rknn_custom_op_get_op_attr(op_ctx, NULL, &a);
    rknn_custom_op_get_op_attr(op_ctx, "alpha", NULL);
    return n_in == 1 && n_out == 1 && a.n_elems == 0 ? 0 : -1;
}

static int cb_compute(rknn_custom_op_context *op_ctx, rknn_custom_op_tensor *ins, uint32_t n_in,
                      rknn_custom_op_tensor *outs, uint32_t n_out)
{
    (void)op_ctx;
    (void)n_in;
    (void)n_out;
    g_computes++;
    const float *x = (const float *)((uint8_t *)ins[0].mem.virt_addr + ins[0].mem.offset);
    float *y = (float *)((uint8_t *)outs[0].mem.virt_addr + outs[0].mem.offset);
    for (uint32_t i = 0; i < ins[0].attr.n_elems; i++)
        y[i] = x[i] * 2.0f;
    return 0;
}

static int cb_destroy(rknn_custom_op_context *op_ctx)
{
    (void)op_ctx;
    g_destroys++;
    return 0;
}

static void custom_abuse(uint8_t *model, uint32_t n)
{
    rknn_context c = init_ok(model, n, 0);
    rknn_custom_op op;
    memset(&op, 0, sizeof op);
    RC(rknn_register_custom_ops(c, NULL, 1), RKNN_ERR_PARAM_INVALID);
    RC(rknn_register_custom_ops(c, &op, 0), RKNN_ERR_PARAM_INVALID);
    RC(rknn_register_custom_ops(c, &op, 0xffffffff), RKNN_ERR_PARAM_INVALID);
    RC(rknn_register_custom_ops(c, &op, 1), RKNN_ERR_PARAM_INVALID);   /* no type / compute */
    memset(op.op_type, 'q', sizeof op.op_type);                         /* no terminator */
    op.compute = cb_compute;
    op.target = RKNN_TARGET_TYPE_CPU;
    RC(rknn_register_custom_ops(c, &op, 1), RKNN_SUCC);                 /* matches nothing */
    op.target = (rknn_target_type)77;
    strcpy(op.op_type, "cstSigmoid");
    RC(rknn_register_custom_ops(c, &op, 1), RKNN_ERR_FAIL);
    op.target = RKNN_TARGET_TYPE_CPU;
    op.init = cb_init;
    op.destroy = cb_destroy;
    rknn_custom_op two[2] = {op, op};
    RC(rknn_register_custom_ops(c, two, 2), RKNN_ERR_PARAM_INVALID);    /* same type twice */
    CHECK(g_inits == 0);
    float x[16], y[16];
    for (int i = 0; i < 16; i++)
        x[i] = (float)i;
    rknn_input in = {.index = 0, .buf = x, .size = sizeof x, .type = RKNN_TENSOR_FLOAT32,
                     .fmt = RKNN_TENSOR_UNDEFINED};
    RC(rknn_inputs_set(c, 1, &in), RKNN_SUCC);
    RC(rknn_run(c, NULL), RKNN_ERR_FAIL);                               /* not registered */
    RC(rknn_register_custom_ops(c, &op, 1), RKNN_SUCC);
    CHECK(g_inits == 1);
    RC(rknn_register_custom_ops(c, &op, 1), RKNN_ERR_PARAM_INVALID);    /* again */
    RC(rknn_run(c, NULL), RKNN_SUCC);
    RC(rknn_run(c, NULL), RKNN_SUCC);
    CHECK(g_computes == 2);
    rknn_output o = {.want_float = 1, .is_prealloc = 1, .index = 0, .buf = y, .size = sizeof y};
    RC(rknn_outputs_get(c, 1, &o, NULL), RKNN_SUCC);
    CHECK(y[3] == 7.0f);                                                 /* 2x + 1 */
    rknn_custom_op_context fake;
    memset(&fake, 0, sizeof fake);
    rknn_custom_op_attr a;
    rknn_custom_op_get_op_attr(&fake, "alpha", &a);                      /* outside callbacks */
    CHECK(a.data == NULL && a.n_elems == 0);
    rknn_custom_op_get_op_attr(NULL, NULL, NULL);
    RC(rknn_destroy(c), RKNN_SUCC);
    CHECK(g_destroys == 1);
}

/* ---- personalities: unsupported functions fail ------------------------------------------------ */
static void personality_abuse(const char *chip, uint8_t *model, uint32_t n)
{
    RC(rknn_emu_set_platform(chip), RKNN_SUCC);
    rknn_context c = init_ok(model, n, 0);
    /* a single-core NPU answers core masks with -13, as an RK3566 board does */
    RC(rknn_set_core_mask(c, RKNN_NPU_CORE_0),
       strcmp(chip, "RV1106") == 0 ? RKNN_ERR_FAIL : RKNN_ERR_TARGET_PLATFORM_UNMATCH);
    RC(rknn_set_batch_core_num(c, 1), RKNN_ERR_FAIL);
    RC(rknn_wait(c, NULL), RKNN_ERR_FAIL);
    if (strcmp(chip, "RV1106") == 0) {
        float x[2] = {1, 2};
        rknn_input in = {.index = 0, .buf = x, .size = sizeof x, .type = RKNN_TENSOR_FLOAT32,
                         .fmt = RKNN_TENSOR_UNDEFINED};
        /* the mini runtime answers the general flow with -5 (cls_img_rv1106, 2.3.2) */
        RC(rknn_inputs_set(c, 1, &in), RKNN_ERR_PARAM_INVALID);
        rknn_output o;
        memset(&o, 0, sizeof o);
        RC(rknn_outputs_get(c, 1, &o, NULL), RKNN_ERR_PARAM_INVALID);
        RC(rknn_outputs_release(c, 1, &o), RKNN_ERR_PARAM_INVALID);
        rknn_context d = 0;
        RC(rknn_dup_context(&c, &d), RKNN_ERR_FAIL);
        rknn_custom_op op;
        memset(&op, 0, sizeof op);
        RC(rknn_register_custom_ops(c, &op, 1), RKNN_ERR_FAIL);
        rknn_perf_run pr;
        /* a query the chip lacks is -1 (PERF_RUN on cls_img_rv1106, 2.3.2) */
        RC(rknn_query(c, RKNN_QUERY_PERF_RUN, &pr, sizeof pr), RKNN_ERR_FAIL);
        rknn_tensor_mem dm;
        RC(rknn_query(c, RKNN_QUERY_DEVICE_MEM_INFO, &dm, sizeof dm), RKNN_SUCC);
        rknn_matmul_ctx mc = 0;
        rknn_matmul_info info;
        rknn_matmul_io_attr io;
        memset(&info, 0, sizeof info);
        info.M = 1;
        info.K = 32;
        info.N = 32;
        info.type = RKNN_FLOAT16_MM_FLOAT16_TO_FLOAT32;
        RC(rknn_matmul_create(&mc, &info, &io), RKNN_ERR_FAIL);
    } else {
        rknn_matmul_ctx mc = 0;
        rknn_matmul_info info;
        rknn_matmul_io_attr io;
        memset(&info, 0, sizeof info);
        info.M = 1;
        info.K = 64;
        info.N = 64;
        info.type = RKNN_INT4_MM_INT4_TO_INT16;
        RC(rknn_matmul_create(&mc, &info, &io), RKNN_ERR_PARAM_INVALID);
        info.type = RKNN_INT8_MM_INT8_TO_INT32;
        RC(rknn_matmul_create(&mc, &info, &io), RKNN_SUCC);
        RC(rknn_matmul_set_core_mask(mc, RKNN_NPU_CORE_0), RKNN_ERR_FAIL);
        RC(rknn_matmul_destroy(mc), RKNN_SUCC);
        rknn_tensor_mem dm;
        /* -1 with "unsupported cmd(12)" (cls_img_rk3588, 1.6.0) */
        RC(rknn_query(c, RKNN_QUERY_DEVICE_MEM_INFO, &dm, sizeof dm), RKNN_ERR_FAIL);
    }
    query_abuse(c);
    RC(rknn_destroy(c), RKNN_SUCC);
    RC(rknn_emu_set_platform(NULL), RKNN_SUCC);
}

/* ---- emulator controls --------------------------------------------------------------------------- */
static void controls_abuse(rknn_context live)
{
    RC(rknn_emu_set_platform("NOPE"), RKNN_ERR_PARAM_INVALID);
    RC(rknn_emu_set_platform(""), RKNN_SUCC);
    IS_NULL(rknn_emu_platform_name(-1));
    IS_NULL(rknn_emu_platform_name(1 << 20));
    IS_NULL(rknn_emu_counter_name(-1));
    IS_NULL(rknn_emu_counter_name(1000));
    CHECK(rknn_emu_counter_value(-5) == 0 && rknn_emu_counter_value(99) == 0);
    RC(rknn_emu_get_counters(NULL, sizeof(rknn_emu_counters)), RKNN_ERR_PARAM_INVALID);
    rknn_emu_counters k;
    RC(rknn_emu_get_counters(&k, 0), RKNN_ERR_PARAM_INVALID);
    RC(rknn_emu_get_counters(&k, sizeof k + 1), RKNN_ERR_PARAM_INVALID);
    RC(rknn_emu_get_counters(&k, 8), RKNN_SUCC);
    RC(rknn_emu_inject_error(NULL, 1, -1), RKNN_ERR_PARAM_INVALID);
    RC(rknn_emu_inject_error("rknn_run", 0, -1), RKNN_ERR_PARAM_INVALID);
    RC(rknn_emu_inject_error("no_such_function", 1, -1), RKNN_ERR_PARAM_INVALID);
    for (int i = 0; i < 64; i++)
        RC(rknn_emu_inject_error("rknn_wait", 1000000, -2), RKNN_SUCC);
    RC(rknn_emu_inject_error("rknn_wait", 1, -2), RKNN_ERR_PARAM_INVALID);   /* table full */
    rknn_emu_clear_injections();
    RC(rknn_emu_inject_error("rknn_query", 1, RKNN_ERR_TIMEOUT), RKNN_SUCC);
    rknn_input_output_num n;
    RC(rknn_query(live, RKNN_QUERY_IN_OUT_NUM, &n, sizeof n), RKNN_ERR_TIMEOUT);
    RC(rknn_emu_inject_error("rknn_create_mem", 1, -4), RKNN_SUCC);
    IS_NULL(rknn_create_mem(live, 16));
    RC(rknn_emu_inject_error("rknn_custom_op_get_op_attr", 1, -1), RKNN_SUCC);
    rknn_custom_op_attr a;
    memset(&a, 0x5a, sizeof a);
    rknn_custom_op_get_op_attr(NULL, "x", &a);                  /* returns without touching */
    CHECK(rknn_emu_pending_injections() == 0);
    RC(rknn_emu_set_log_level(-100), RKNN_SUCC);
    RC(rknn_emu_set_log_level(1000), RKNN_SUCC);
    CHECK(rknn_emu_get_log_level() == 6);
    RC(rknn_emu_set_log_level(-1), RKNN_SUCC);
    RC(rknn_emu_set_npu_time_us(-42), RKNN_SUCC);
    CHECK(rknn_emu_version() != NULL);
}

/* ---- a dynamic model with a custom op: valid runs through every shape set ------------------ */
static int addone(rknn_custom_op_context *op_ctx, rknn_custom_op_tensor *ins, uint32_t n_in,
                  rknn_custom_op_tensor *outs, uint32_t n_out)
{
    (void)op_ctx;
    (void)n_in;
    (void)n_out;
    const float *x = (const float *)((uint8_t *)ins[0].mem.virt_addr + ins[0].mem.offset);
    float *y = (float *)((uint8_t *)outs[0].mem.virt_addr + outs[0].mem.offset);
    for (uint32_t i = 0; i < outs[0].attr.n_elems; i++)
        y[i] = x[i] + 1.0f;
    return 0;
}

static void dynamic_flows(uint8_t *model, uint32_t n)
{
    rknn_context c = init_ok(model, n, RKNN_FLAG_COLLECT_PERF_MASK | RKNN_FLAG_ASYNC_MASK);
    rknn_custom_op op;
    memset(&op, 0, sizeof op);
    strcpy(op.op_type, "cstAddOne");
    op.target = RKNN_TARGET_TYPE_CPU;
    op.compute = addone;
    RC(rknn_register_custom_ops(c, &op, 1), RKNN_SUCC);
    rknn_input_output_num io;
    RC(rknn_query(c, RKNN_QUERY_IN_OUT_NUM, &io, sizeof io), RKNN_SUCC);
    static rknn_input_range r;
    r.index = 0;
    RC(rknn_query(c, RKNN_QUERY_INPUT_DYNAMIC_RANGE, &r, sizeof r), RKNN_SUCC);
    for (uint32_t s = 0; s < r.shape_number; s++) {
        rknn_tensor_attr a[8];
        memset(a, 0, sizeof a);
        for (uint32_t i = 0; i < io.n_input && i < 8; i++) {
            a[i].index = i;
            RC(rknn_query(c, RKNN_QUERY_INPUT_ATTR, &a[i], sizeof a[i]), RKNN_SUCC);
            static rknn_input_range ri;
            ri.index = i;
            RC(rknn_query(c, RKNN_QUERY_INPUT_DYNAMIC_RANGE, &ri, sizeof ri), RKNN_SUCC);
            memcpy(a[i].dims, ri.dyn_range[s], sizeof a[i].dims);
        }
        RC(rknn_set_input_shapes(c, io.n_input, a), RKNN_SUCC);
        rknn_input in[8];
        void *bufs[8];
        memset(in, 0, sizeof in);
        for (uint32_t i = 0; i < io.n_input && i < 8; i++) {
            rknn_tensor_attr cur;
            memset(&cur, 0, sizeof cur);
            cur.index = i;
            RC(rknn_query(c, RKNN_QUERY_CURRENT_INPUT_ATTR, &cur, sizeof cur), RKNN_SUCC);
            bufs[i] = calloc(cur.n_elems, 4);
            in[i].index = i;
            in[i].buf = bufs[i];
            in[i].size = cur.n_elems * 4;
            in[i].type = RKNN_TENSOR_FLOAT32;
            in[i].fmt = cur.fmt;
        }
        RC(rknn_inputs_set(c, io.n_input, in), RKNN_SUCC);
        RC(rknn_run(c, NULL), RKNN_SUCC);
        rknn_output outs[16];
        memset(outs, 0, sizeof outs);
        for (uint32_t o = 0; o < io.n_output && o < 16; o++) {
            outs[o].index = o;
            outs[o].want_float = (uint8_t)(o & 1);
        }
        RC(rknn_outputs_get(c, io.n_output, outs, NULL), RKNN_SUCC);
        RC(rknn_outputs_release(c, io.n_output, outs), RKNN_SUCC);
        rknn_perf_detail pd;
        RC(rknn_query(c, RKNN_QUERY_PERF_DETAIL, &pd, sizeof pd), RKNN_SUCC);
        CHECK(pd.perf_data && strlen(pd.perf_data) == pd.data_len);
        for (uint32_t i = 0; i < io.n_input && i < 8; i++)
            free(bufs[i]);
        for (int cmd = RKNN_QUERY_CURRENT_INPUT_ATTR; cmd <= RKNN_QUERY_CURRENT_NATIVE_OUTPUT_ATTR; cmd++)
            for (uint32_t i = 0; i < 8; i++) {
                rknn_tensor_attr q;
                memset(&q, 0, sizeof q);
                q.index = i;
                int rc = rknn_query(c, (rknn_query_cmd)cmd, &q, sizeof q);
                CHECK(rc == RKNN_SUCC || rc == RKNN_ERR_PARAM_INVALID);
            }
    }
    RC(rknn_destroy(c), RKNN_SUCC);
}

/* ---- a seeded random walk over the API ------------------------------------------------------
 * Mixes valid and invalid handles, mems, indices, types, formats and sizes in random orders
 * (bind / destroy / reshape / run / dup / register / matmul ...).  Statuses are not
 * predicted; the sanitizers and the final live counters are the oracle.  Buffers handed to
 * the API are always as large as the sizes passed with them (the API cannot check that). */
static uint64_t g_rng = 0x9e3779b97f4a7c15ull;

static uint32_t rnd(uint32_t n)
{
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return n ? (uint32_t)(g_rng % n) : 0;
}

#define WALK_CTX 6
#define WALK_MEM 12
#define WALK_BUF 65536

static rknn_context w_ctx[WALK_CTX];
static rknn_tensor_mem *w_mem[WALK_MEM];
static rknn_context w_mem_owner[WALK_MEM];
static rknn_matmul_ctx w_mm;
static rknn_matmul_io_attr w_mm_io;
static uint8_t w_buf[WALK_BUF], w_out[WALK_BUF];

static rknn_context pick_ctx(void)
{
    switch (rnd(8)) {
    case 0: return 0;
    case 1: return (rknn_context)rnd(0xffffffffu) | ((rknn_context)1 << 30);
    case 2: return w_mm;
    default: return w_ctx[rnd(WALK_CTX)];
    }
}

static int pick_mem_slot(void) { return (int)rnd(WALK_MEM); }

static int add1(rknn_custom_op_context *op_ctx, rknn_custom_op_tensor *ins, uint32_t n_in,
                rknn_custom_op_tensor *outs, uint32_t n_out);

static void walk_destroy_mem(int k)
{
    if (!w_mem[k])
        return;
    int rc = rknn_destroy_mem(w_mem_owner[k], w_mem[k]);
    if (rc == RKNN_ERR_CTX_INVALID) {          /* owner gone: any live context frees it */
        for (int i = 0; i < WALK_CTX && rc != RKNN_SUCC; i++)
            if (w_ctx[i])
                rc = rknn_destroy_mem(w_ctx[i], w_mem[k]);
    }
    CHECK(rc == RKNN_SUCC || rc == RKNN_ERR_CTX_INVALID);
    if (rc == RKNN_SUCC)
        w_mem[k] = NULL;
}

static void random_walk(uint8_t *const *models, const uint32_t *sizes, int n_models, int steps)
{
    rknn_emu_set_npu_time_us(0);
    for (int step = 0; step < steps; step++) {
        int op = (int)rnd(20);
        rknn_context c = pick_ctx();
        switch (op) {
        case 0: {                                     /* init into a free (or freed) slot */
            int k = (int)rnd(WALK_CTX);
            if (w_ctx[k])
                rknn_destroy(w_ctx[k]);
            static const uint32_t fl[] = {0, RKNN_FLAG_ASYNC_MASK, RKNN_FLAG_COLLECT_PERF_MASK,
                                          RKNN_FLAG_MEM_ALLOC_OUTSIDE, RKNN_FLAG_INTERNAL_ALLOC_OUTSIDE,
                                          RKNN_FLAG_COLLECT_MODEL_INFO_ONLY,
                                          RKNN_FLAG_DISABLE_FLUSH_INPUT_MEM_CACHE |
                                              RKNN_FLAG_DISABLE_FLUSH_OUTPUT_MEM_CACHE};
            int m = (int)rnd((uint32_t)n_models);
            w_ctx[k] = 0;
            if (rknn_init(&w_ctx[k], models[m], sizes[m], fl[rnd(7)], NULL) != RKNN_SUCC)
                w_ctx[k] = 0;
            break;
        }
        case 1:
            if (rnd(4) == 0) {
                int k = (int)rnd(WALK_CTX);
                if (w_ctx[k] && rknn_destroy(w_ctx[k]) == RKNN_SUCC)
                    w_ctx[k] = 0;
            } else {
                rknn_destroy(pick_ctx() | ((rknn_context)1 << 41));
            }
            break;
        case 2: {
            int k = (int)rnd(WALK_CTX);
            rknn_context in = c, out = 0;
            if (rknn_dup_context(&in, &out) == RKNN_SUCC) {
                if (w_ctx[k])
                    rknn_destroy(w_ctx[k]);
                w_ctx[k] = out;
            }
            break;
        }
        case 3: {
            static union {
                rknn_tensor_attr a;
                rknn_input_range r;
                uint8_t raw[sizeof(rknn_input_range)];
            } q;
            int cmd = (int)rnd(20);
            memset(&q, 0, sizeof q);
            q.a.index = rnd(4) ? rnd(4) : rnd(0xffffffffu);
            uint32_t sz = cmd == RKNN_QUERY_INPUT_DYNAMIC_RANGE ? sizeof q.r : sizeof q.a;
            static const uint32_t small[] = {8, 4, 16, 512, 64, 1024, sizeof(rknn_tensor_mem)};
            if (cmd == 0 || (cmd >= 3 && cmd <= 7) || cmd == 12)
                sz = small[rnd(7)];
            rknn_query(c, (rknn_query_cmd)cmd, &q, rnd(10) ? sz : rnd(sizeof q));
            break;
        }
        case 4: {
            rknn_input in[3];
            uint32_t n = 1 + rnd(3);
            if (rnd(2)) {                             /* a well-formed call */
                rknn_input_output_num io;
                if (rknn_query(c, RKNN_QUERY_IN_OUT_NUM, &io, sizeof io) != RKNN_SUCC || io.n_input > 3)
                    break;
                uint32_t off = 0;
                for (uint32_t i = 0; i < io.n_input; i++) {
                    rknn_tensor_attr a;
                    memset(&a, 0, sizeof a);
                    a.index = i;
                    if (rknn_query(c, RKNN_QUERY_CURRENT_INPUT_ATTR, &a, sizeof a) != RKNN_SUCC &&
                        rknn_query(c, RKNN_QUERY_INPUT_ATTR, &a, sizeof a) != RKNN_SUCC)
                        break;
                    int u8 = a.n_dims == 4 && rnd(2);
                    uint32_t bytes = a.n_elems * (u8 ? 1 : 4);
                    if (off + bytes > WALK_BUF)
                        break;
                    in[i] = (rknn_input){.index = i, .buf = w_buf + off, .size = bytes,
                                         .type = u8 ? RKNN_TENSOR_UINT8 : RKNN_TENSOR_FLOAT32,
                                         .fmt = a.fmt};
                    off += (bytes + 7) & ~7u;
                }
                rknn_inputs_set(c, io.n_input, in);
                break;
            }
            for (uint32_t i = 0; i < n; i++) {
                in[i].index = rnd(5) ? rnd(3) : rnd(0xffffffffu);
                in[i].buf = rnd(20) ? w_buf : NULL;
                in[i].size = rnd(WALK_BUF + 1);
                in[i].pass_through = (uint8_t)(rnd(4) == 0);
                in[i].type = (rknn_tensor_type)rnd(13);
                in[i].fmt = (rknn_tensor_format)rnd(5);
            }
            rknn_inputs_set(c, n, in);
            break;
        }
        case 5:
        case 6: {
            rknn_run_extend e;
            memset(&e, 0, sizeof e);
            e.non_block = rnd(10) == 0;
            rknn_run(c, rnd(2) ? &e : NULL);
            break;
        }
        case 7: {
            rknn_output o[3];
            memset(o, 0, sizeof o);
            uint32_t n = 1 + rnd(3);
            for (uint32_t i = 0; i < n; i++) {
                o[i].index = rnd(5) ? rnd(3) : rnd(0xffffffffu);
                o[i].want_float = (uint8_t)rnd(2);
                o[i].is_prealloc = (uint8_t)rnd(2);
                if (o[i].is_prealloc) {
                    o[i].buf = w_out + i * (WALK_BUF / 4);
                    o[i].size = rnd(WALK_BUF / 4 + 1);
                }
            }
            rknn_output_extend oe;
            if (rknn_outputs_get(c, n, o, rnd(2) ? &oe : NULL) == RKNN_SUCC && rnd(8))
                rknn_outputs_release(c, n, o);
            break;
        }
        case 8: {
            int k = pick_mem_slot();
            walk_destroy_mem(k);
            if (w_mem[k])
                break;
            rknn_context owner = w_ctx[rnd(WALK_CTX)];
            static const uint64_t fl[] = {0, RKNN_FLAG_MEMORY_NON_CACHEABLE,
                                          RKNN_FLAG_MEMORY_TRY_ALLOC_SRAM, RKNN_MEM_FLAG_ALLOC_NO_CONTEXT};
            uint32_t size = 1 + rnd(WALK_BUF);
            w_mem[k] = rnd(2) ? rknn_create_mem(owner, size) : rknn_create_mem2(owner, size, fl[rnd(4)]);
            w_mem_owner[k] = owner;
            if (w_mem[k] && rnd(2))
                memset(w_mem[k]->virt_addr, (int)rnd(256), w_mem[k]->size);
            break;
        }
        case 9: {
            int k = pick_mem_slot();
            if (rnd(3) == 0)
                walk_destroy_mem(k);
            int j = pick_mem_slot();             /* a view of an existing mem */
            if (w_mem[k] && !w_mem[j]) {
                rknn_tensor_mem *v = rnd(2) ? rknn_create_mem_from_fd(c, w_mem[k]->fd, NULL,
                                                                      1 + rnd(w_mem[k]->size), (int32_t)rnd(64))
                                            : rknn_create_mem_from_phys(c, w_mem[k]->phys_addr + rnd(64), NULL,
                                                                        1 + rnd(w_mem[k]->size));
                w_mem[j] = v;
                w_mem_owner[j] = c;
            }
            break;
        }
        case 10: {
            rknn_tensor_attr a;
            memset(&a, 0, sizeof a);
            a.index = rnd(3);
            if (rnd(2)) {                             /* a well-formed binding */
                int out = (int)rnd(2);
                if (rknn_query(c, out ? (rnd(2) ? RKNN_QUERY_NATIVE_OUTPUT_ATTR : RKNN_QUERY_OUTPUT_ATTR)
                                      : (rnd(2) ? RKNN_QUERY_NATIVE_INPUT_ATTR : RKNN_QUERY_INPUT_ATTR),
                               &a, sizeof a) != RKNN_SUCC)
                    break;
                int k = pick_mem_slot();
                walk_destroy_mem(k);
                if (w_mem[k])
                    break;
                w_mem[k] = rknn_create_mem(c, a.size_with_stride + 64);
                w_mem_owner[k] = c;
                rknn_set_io_mem(c, w_mem[k], &a);
                break;
            }
            static const int kinds[] = {RKNN_QUERY_INPUT_ATTR, RKNN_QUERY_OUTPUT_ATTR,
                                        RKNN_QUERY_NATIVE_INPUT_ATTR, RKNN_QUERY_NATIVE_OUTPUT_ATTR,
                                        RKNN_QUERY_NATIVE_NHWC_INPUT_ATTR, RKNN_QUERY_NATIVE_NHWC_OUTPUT_ATTR,
                                        RKNN_QUERY_CURRENT_INPUT_ATTR, RKNN_QUERY_CURRENT_NATIVE_OUTPUT_ATTR};
            rknn_query(c, (rknn_query_cmd)kinds[rnd(8)], &a, sizeof a);
            if (rnd(3) == 0)
                a.type = (rknn_tensor_type)rnd(13);
            if (rnd(3) == 0)
                a.fmt = (rknn_tensor_format)rnd(5);
            if (rnd(4) == 0)
                a.pass_through = 1;
            if (rnd(6) == 0)
                a.h_stride = rnd(4096);
            if (rnd(8) == 0)
                a.name[0] = '\0';
            int k = pick_mem_slot();
            rknn_set_io_mem(c, w_mem[k], &a);
            break;
        }
        case 11: {
            int k = pick_mem_slot();
            rknn_mem_sync(c, w_mem[k], (rknn_mem_sync_mode)rnd(5));
            break;
        }
        case 12: {
            rknn_tensor_attr a[3];
            memset(a, 0, sizeof a);
            static rknn_input_range r;
            for (uint32_t i = 0; i < 3; i++) {
                a[i].index = i;
                rknn_query(c, RKNN_QUERY_INPUT_ATTR, &a[i], sizeof a[i]);
                r.index = i;
                if (rknn_query(c, RKNN_QUERY_INPUT_DYNAMIC_RANGE, &r, sizeof r) == RKNN_SUCC &&
                    r.shape_number)
                    memcpy(a[i].dims, r.dyn_range[rnd(r.shape_number + 1) % 512], sizeof a[i].dims);
                if (rnd(6) == 0)
                    a[i].dims[rnd(4)] = rnd(0xffffffffu);
            }
            if (rnd(2))
                rknn_set_input_shapes(c, 1 + rnd(3), a);
            else
                rknn_set_input_shape(c, &a[rnd(3)]);
            break;
        }
        case 13: {
            int k = pick_mem_slot();
            if (rnd(2))
                rknn_set_internal_mem(c, w_mem[k]);
            else
                rknn_set_weight_mem(c, w_mem[k]);
            break;
        }
        case 14: {
            rknn_custom_op ops[2];
            memset(ops, 0, sizeof ops);
            strcpy(ops[0].op_type, rnd(2) ? "cstAddOne" : "cstSigmoid");
            strcpy(ops[1].op_type, "cstAddOne");
            ops[0].target = ops[1].target = RKNN_TARGET_TYPE_CPU;
            ops[0].compute = ops[1].compute = add1;
            rknn_register_custom_ops(c, ops, 1 + rnd(2));
            break;
        }
        case 15:
            if (rnd(2))
                rknn_set_core_mask(c, (rknn_core_mask)(rnd(3) ? rnd(8) : rnd(0xffffffffu)));
            else
                rknn_set_batch_core_num(c, (int)rnd(5) - 1);
            break;
        case 16: {                                    /* a matmul context */
            if (w_mm && rnd(3) == 0) {
                rknn_matmul_destroy(w_mm);
                w_mm = 0;
            }
            if (w_mm)
                break;
            rknn_matmul_info info;
            rknn_matmul_io_attr io;
            memset(&info, 0, sizeof info);
            static const int types[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 15};
            info.type = (rknn_matmul_type)types[rnd(13)];
            info.M = 1 + (int32_t)rnd(8);
            info.K = 32 * (1 + (int32_t)rnd(4));
            info.N = 1 + (int32_t)rnd(80);
            info.B_layout = (int16_t)rnd(3);
            info.AC_layout = (int16_t)rnd(2);
            info.B_quant_type = (int16_t)rnd(6);
            info.group_size = (int16_t)(32 * rnd(3));
            if (rknn_matmul_create(&w_mm, &info, &io) != RKNN_SUCC)
                w_mm = 0;
            else
                w_mm_io = io;
            break;
        }
        case 17: {
            static const char *names[] = {"A", "B", "C", "D"};
            if (w_mm && rnd(2)) {                     /* bind A, B and C well-formed */
                const rknn_matmul_tensor_attr *ts[3] = {&w_mm_io.A, &w_mm_io.B, &w_mm_io.C};
                for (int i = 0; i < 3; i++) {
                    int k = pick_mem_slot();
                    walk_destroy_mem(k);
                    if (w_mem[k])
                        continue;
                    w_mem[k] = rknn_create_mem(w_mm, ts[i]->size);
                    w_mem_owner[k] = w_mm;
                    if (w_mem[k]) {
                        memset(w_mem[k]->virt_addr, (int)rnd(256), ts[i]->size);
                        rknn_matmul_set_io_mem(w_mm, w_mem[k], (rknn_matmul_tensor_attr *)ts[i]);
                    }
                }
                break;
            }
            rknn_matmul_tensor_attr t;
            memset(&t, 0, sizeof t);
            strcpy(t.name, names[rnd(4)]);
            int k = pick_mem_slot();
            rknn_matmul_set_io_mem(w_mm, w_mem[k], &t);
            float sc[512];
            int32_t zp[512];
            for (int i = 0; i < 512; i++) {
                sc[i] = 0.01f * (float)(1 + rnd(100));
                zp[i] = (int32_t)rnd(7) - 3;
            }
            rknn_quant_params q;
            memset(&q, 0, sizeof q);
            strcpy(q.name, names[rnd(4)]);
            q.scale = sc;
            q.scale_len = rnd(3) ? 1 : (int32_t)rnd(513);
            q.zp = zp;
            q.zp_len = rnd(2) ? 0 : (rnd(2) ? 1 : q.scale_len);
            rknn_matmul_set_quant_params(w_mm, &q);
            break;
        }
        case 18:
            rknn_matmul_run(rnd(4) ? w_mm : c);
            break;
        default: {
            int k = pick_mem_slot();
            if (rnd(2))
                walk_destroy_mem(k);
            else if (w_mem[k] && rnd(2))
                RC(rknn_destroy_mem(pick_ctx(), (rknn_tensor_mem *)w_buf), RKNN_ERR_PARAM_INVALID);
            else if (w_mem[k] && rknn_destroy_mem(pick_ctx(), w_mem[k]) == RKNN_SUCC)
                w_mem[k] = NULL;
            break;
        }
        }
    }
    /* tear down: every mem (whatever its owner), every context */
    for (int k = 0; k < WALK_MEM; k++) {
        if (!w_mem[k])
            continue;
        rknn_context any = 0;
        for (int i = 0; i < WALK_CTX && !any; i++)
            any = w_ctx[i];
        int rc = rknn_destroy_mem(w_mem_owner[k], w_mem[k]);
        if (rc == RKNN_ERR_CTX_INVALID && any)
            rc = rknn_destroy_mem(any, w_mem[k]);
        if (rc == RKNN_ERR_CTX_INVALID) {             /* no live context left: make one */
            rknn_context tmp = init_ok(models[0], sizes[0], 0);
            rc = rknn_destroy_mem(tmp, w_mem[k]);
            rknn_destroy(tmp);
        }
        CHECK(rc == RKNN_SUCC || rc == RKNN_ERR_PARAM_INVALID);  /* PARAM: already destroyed */
        w_mem[k] = NULL;
    }
    for (int i = 0; i < WALK_CTX; i++)
        if (w_ctx[i]) {
            rknn_destroy(w_ctx[i]);
            w_ctx[i] = 0;
        }
    if (w_mm)
        RC(rknn_matmul_destroy(w_mm), RKNN_SUCC);
    w_mm = 0;
}

static int add1(rknn_custom_op_context *op_ctx, rknn_custom_op_tensor *ins, uint32_t n_in,
                rknn_custom_op_tensor *outs, uint32_t n_out)
{
    (void)op_ctx;
    if (n_in < 1 || n_out < 1 || !ins[0].mem.virt_addr || !outs[0].mem.virt_addr)
        return -1;
    uint32_t n = outs[0].attr.n_elems < ins[0].attr.n_elems ? outs[0].attr.n_elems : ins[0].attr.n_elems;
    if (ins[0].attr.type != RKNN_TENSOR_FLOAT32 || outs[0].attr.type != RKNN_TENSOR_FLOAT32)
        return -1;
    const float *x = (const float *)((uint8_t *)ins[0].mem.virt_addr + ins[0].mem.offset);
    float *y = (float *)((uint8_t *)outs[0].mem.virt_addr + outs[0].mem.offset);
    for (uint32_t i = 0; i < n; i++)
        y[i] = x[i] + 1.0f;
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s <model dir>\n", argv[0]);
        return 2;
    }
    rknn_emu_set_log_level(-1);
    uint32_t n_relu, n_custom, n_all, n_r66, n_r06;
    uint8_t *relu = load(argv[1], "relu.rknn", &n_relu);
    uint8_t *custom = load(argv[1], "custom.rknn", &n_custom);
    uint8_t *allops = load(argv[1], "allops.rknn", &n_all);
    uint8_t *relu66 = load(argv[1], "relu_RK3566.rknn", &n_r66);
    uint8_t *relu06 = load(argv[1], "relu_RV1106.rknn", &n_r06);

    init_abuse(relu, n_relu);
    rknn_context live = init_ok(relu, n_relu, 0);
    rknn_context zc = init_ok(relu, n_relu, 0);
    rknn_context dead = init_ok(relu, n_relu, 0);
    rknn_tensor_mem *some = rknn_create_mem(live, 64);
    RC(rknn_destroy(dead), RKNN_SUCC);
    all_bad_contexts(dead, some);
    query_abuse(live);
    general_abuse(live);
    mem_abuse(zc, live);
    matmul_abuse(live);
    custom_abuse(custom, n_custom);
    dynamic_flows(allops, n_all);
    controls_abuse(live);
    personality_abuse("RK3566", relu66, n_r66);
    personality_abuse("RV1106", relu06, n_r06);
    uint8_t *walk_models[] = {relu, custom, allops};
    const uint32_t walk_sizes[] = {n_relu, n_custom, n_all};
    int steps = argc > 2 ? atoi(argv[2]) : 60000;
    if (argc > 3)
        g_rng = strtoull(argv[3], NULL, 0) * 2 + 1;
    rknn_emu_reset_counters();
    random_walk(walk_models, walk_sizes, 3, steps);
    printf("random walk: %d steps, %lld runs, %lld mems\n", steps,
           (long long)rknn_emu_counter_value(8), (long long)rknn_emu_counter_value(12));
    /* a context destroyed with mems still alive: the mems stay destroyable (vendor: by any
       context for NO_CONTEXT ones; here the owner is gone, so only the handle check fails) */
    RC(rknn_destroy_mem(live, some), RKNN_SUCC);
    RC(rknn_destroy(live), RKNN_SUCC);
    RC(rknn_destroy(zc), RKNN_SUCC);
    rknn_emu_counters k;
    RC(rknn_emu_get_counters(&k, sizeof k), RKNN_SUCC);
    CHECK(k.live_contexts == 0 && k.live_mems == 0 && k.live_output_buffers == 0);
    free(relu);
    free(custom);
    free(allops);
    free(relu66);
    free(relu06);
    printf("abuse: %d checks, %d failed\n", g_checks, g_failed);
    return g_failed ? 1 : 0;
}
