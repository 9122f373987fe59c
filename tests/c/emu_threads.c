/*
 * Concurrency of the emulator, built by tests/emulator/test_emu_sanitizers.py
 * with the emulator sources under -fsanitize=thread (any data race report fails the test):
 *   parallel      one context per thread: runs overlap (peak runs in flight >= 2)
 *   serialized    one context, several threads: every call completes, runs never overlap
 *   destroy race  rknn_destroy on one thread while others use the context: the users see
 *                 RKNN_SUCC or RKNN_ERR_CTX_INVALID, nothing else; exactly one destroy wins
 *   mem race      a bound mem destroyed while its context runs; mems created and destroyed
 *                 on several threads
 *   dup           rknn_dup_context of a context another thread is running
 *   custom        custom ops (get_op_attr inside compute) on two contexts in parallel
 *   matmul        matmul contexts in parallel, and destroyed while running
 *   controls      counters, log level, NPU time and injections changed while runs go on
 *
 * usage: emu_threads <model dir>   (relu.rknn, custom.rknn)
 * Prints "threads: N checks, M failed" and exits 0 when M == 0.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rknn_api.h"
#include "rknn_custom_op.h"
#include "rknn_emu.h"
#include "rknn_matmul_api.h"

static atomic_int g_checks, g_failed;

#define CHECK(cond)                                                              \
    do {                                                                         \
        atomic_fetch_add(&g_checks, 1);                                          \
        if (!(cond)) {                                                           \
            atomic_fetch_add(&g_failed, 1);                                      \
            fprintf(stderr, "FAIL line %d: %s\n", __LINE__, #cond);              \
        }                                                                        \
    } while (0)

static uint8_t *g_relu, *g_custom;
static rknn_context g_keeper;   /* a context alive for the whole run */
static uint32_t g_n_relu, g_n_custom;

static uint8_t *load(const char *dir, const char *name, uint32_t *size)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    if (!f)
        exit(2);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc((size_t)n);
    if (!b || fread(b, 1, (size_t)n, f) != (size_t)n)
        exit(2);
    fclose(f);
    *size = (uint32_t)n;
    return b;
}

static rknn_context new_ctx(const uint8_t *model, uint32_t n)
{
    rknn_context c = 0;
    int rc = rknn_init(&c, (void *)model, n, 0, NULL);
    if (rc != RKNN_SUCC) {
        fprintf(stderr, "rknn_init failed: %d\n", rc);
        exit(2);
    }
    return c;
}

static void sleep_us(long us)
{
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
    nanosleep(&ts, NULL);
}

static int64_t counter(const char *name)
{
    for (int i = 0; i < rknn_emu_counter_count(); i++)
        if (strcmp(rknn_emu_counter_name(i), name) == 0)
            return rknn_emu_counter_value(i);
    return -1;
}

/* one general-flow inference of the relu model: returns the first bad status, or 0 */
static int infer(rknn_context c, float a, float b)
{
    float x[2] = {a, b}, y[2] = {-1, -1};
    rknn_input in = {.index = 0, .buf = x, .size = sizeof x, .type = RKNN_TENSOR_FLOAT32,
                     .fmt = RKNN_TENSOR_UNDEFINED};
    int rc = rknn_inputs_set(c, 1, &in);
    if (rc)
        return rc;
    if ((rc = rknn_run(c, NULL)))
        return rc;
    rknn_output o = {.want_float = 1, .is_prealloc = 1, .index = 0, .buf = y, .size = sizeof y};
    if ((rc = rknn_outputs_get(c, 1, &o, NULL)))
        return rc;
    rknn_output r = {.want_float = 1};
    if ((rc = rknn_outputs_get(c, 1, &r, NULL)))
        return rc;
    rc = rknn_outputs_release(c, 1, &r);
    return rc ? rc : (y[0] == (a > 0 ? a : 0) && y[1] == (b > 0 ? b : 0) ? 0 : 12345);
}

/* ---- parallel: one context per thread ------------------------------------------------------ */
static void *parallel_worker(void *arg)
{
    (void)arg;
    rknn_context c = new_ctx(g_relu, g_n_relu);
    for (int i = 0; i < 8; i++)
        CHECK(infer(c, (float)i, -1.0f) == 0);
    CHECK(rknn_destroy(c) == RKNN_SUCC);
    return NULL;
}

static void test_parallel(void)
{
    rknn_emu_set_npu_time_us(3000);
    rknn_emu_reset_counters();
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, parallel_worker, NULL);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    int64_t peak = counter("peak_runs_in_flight");
    CHECK(peak >= 2);
    rknn_emu_set_npu_time_us(0);
}

/* ---- serialized: one context, several threads ---------------------------------------------- */
static rknn_context g_shared;

static void *serial_worker(void *arg)
{
    (void)arg;
    for (int i = 0; i < 8; i++) {
        /* all threads feed the same data: whichever interleaving, the result is fixed */
        CHECK(infer(g_shared, 2.0f, -3.0f) == 0);
        rknn_input_output_num io;
        CHECK(rknn_query(g_shared, RKNN_QUERY_IN_OUT_NUM, &io, sizeof io) == RKNN_SUCC);
        rknn_perf_run pr;
        CHECK(rknn_query(g_shared, RKNN_QUERY_PERF_RUN, &pr, sizeof pr) == RKNN_SUCC);
    }
    return NULL;
}

static void test_serialized(void)
{
    g_shared = new_ctx(g_relu, g_n_relu);
    CHECK(infer(g_shared, 2.0f, -3.0f) == 0);
    rknn_emu_set_npu_time_us(2000);
    rknn_emu_reset_counters();
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, serial_worker, NULL);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    CHECK(counter("peak_runs_in_flight") == 1);
    CHECK(counter("runs") == 32);
    rknn_emu_set_npu_time_us(0);
    CHECK(rknn_destroy(g_shared) == RKNN_SUCC);
}

/* ---- destroy racing with use --------------------------------------------------------------- */
typedef struct race {
    rknn_context c;
    atomic_int wins;
    atomic_int bad;
} race;

static int ok_or_gone(int rc) { return rc == RKNN_SUCC || rc == RKNN_ERR_CTX_INVALID; }

static void *race_user(void *arg)
{
    race *r = arg;
    for (int i = 0; i < 200; i++) {
        int rc = infer(r->c, 1.0f, 2.0f);
        if (!ok_or_gone(rc))
            atomic_fetch_add(&r->bad, 1);
        rknn_tensor_mem *m = rknn_create_mem(r->c, 64);
        if (m) {
            rc = rknn_mem_sync(r->c, m, RKNN_MEMORY_SYNC_BIDIRECTIONAL);
            if (!ok_or_gone(rc))
                atomic_fetch_add(&r->bad, 1);
            rc = rknn_destroy_mem(r->c, m);
            if (!ok_or_gone(rc))
                atomic_fetch_add(&r->bad, 1);
            if (rc == RKNN_ERR_CTX_INVALID) {  /* its context is gone: any live one frees it */
                if (rknn_destroy_mem(g_keeper, m) != RKNN_SUCC)
                    atomic_fetch_add(&r->bad, 1);
                break;
            }
        }
        rknn_sdk_version v;
        rc = rknn_query(r->c, RKNN_QUERY_SDK_VERSION, &v, sizeof v);
        if (!ok_or_gone(rc))
            atomic_fetch_add(&r->bad, 1);
        if (rc == RKNN_ERR_CTX_INVALID)
            break;
    }
    return NULL;
}

static void *race_destroyer(void *arg)
{
    race *r = arg;
    sleep_us(200 + rand() % 1500);
    if (rknn_destroy(r->c) == RKNN_SUCC)
        atomic_fetch_add(&r->wins, 1);
    return NULL;
}

static void test_destroy_race(void)
{
    rknn_emu_set_npu_time_us(300);
    for (int round = 0; round < 12; round++) {
        race r = {.c = new_ctx(g_relu, g_n_relu)};
        pthread_t u[2], d[2];
        for (int i = 0; i < 2; i++)
            pthread_create(&u[i], NULL, race_user, &r);
        for (int i = 0; i < 2; i++)
            pthread_create(&d[i], NULL, race_destroyer, &r);
        for (int i = 0; i < 2; i++) {
            pthread_join(u[i], NULL);
            pthread_join(d[i], NULL);
        }
        CHECK(atomic_load(&r.wins) == 1);
        CHECK(atomic_load(&r.bad) == 0);
        CHECK(rknn_run(r.c, NULL) == RKNN_ERR_CTX_INVALID);
    }
    rknn_emu_set_npu_time_us(0);
}

/* ---- mems destroyed while bound and running ------------------------------------------------- */
typedef struct memrace {
    rknn_context c;
    rknn_tensor_mem *in;
    atomic_int bad;
} memrace;

static void *memrace_runner(void *arg)
{
    memrace *r = arg;
    for (int i = 0; i < 30; i++) {
        int rc = rknn_run(r->c, NULL);
        if (rc != RKNN_SUCC && rc != RKNN_ERR_PARAM_INVALID)
            atomic_fetch_add(&r->bad, 1);
    }
    return NULL;
}

static void *memrace_destroyer(void *arg)
{
    memrace *r = arg;
    sleep_us(500);
    if (rknn_destroy_mem(r->c, r->in) != RKNN_SUCC)
        atomic_fetch_add(&r->bad, 1);
    return NULL;
}

static void *mem_churn(void *arg)
{
    rknn_context c = *(rknn_context *)arg;
    for (int i = 0; i < 50; i++) {
        rknn_tensor_mem *m = rknn_create_mem2(c, 128 + (uint64_t)i, i & 1 ? RKNN_FLAG_MEMORY_NON_CACHEABLE : 0);
        CHECK(m != NULL);
        if (!m)
            continue;
        memset(m->virt_addr, i, 128);
        rknn_tensor_mem *v = rknn_create_mem_from_fd(c, m->fd, NULL, 64, 64);
        rknn_tensor_mem *p = rknn_create_mem_from_phys(c, m->phys_addr, NULL, 64);
        CHECK(v && p);
        CHECK(rknn_mem_sync(c, m, RKNN_MEMORY_SYNC_TO_DEVICE) == RKNN_SUCC);
        if (v)
            CHECK(rknn_destroy_mem(c, v) == RKNN_SUCC);
        if (p)
            CHECK(rknn_destroy_mem(c, p) == RKNN_SUCC);
        CHECK(rknn_destroy_mem(c, m) == RKNN_SUCC);
    }
    return NULL;
}

static void test_mems(void)
{
    memrace r = {.c = new_ctx(g_relu, g_n_relu)};
    rknn_tensor_attr ia, oa;
    memset(&ia, 0, sizeof ia);
    memset(&oa, 0, sizeof oa);
    CHECK(rknn_query(r.c, RKNN_QUERY_INPUT_ATTR, &ia, sizeof ia) == RKNN_SUCC);
    CHECK(rknn_query(r.c, RKNN_QUERY_OUTPUT_ATTR, &oa, sizeof oa) == RKNN_SUCC);
    r.in = rknn_create_mem(r.c, ia.size_with_stride);
    rknn_tensor_mem *out = rknn_create_mem(r.c, oa.size_with_stride);
    CHECK(rknn_set_io_mem(r.c, r.in, &ia) == RKNN_SUCC);
    CHECK(rknn_set_io_mem(r.c, out, &oa) == RKNN_SUCC);
    rknn_emu_set_npu_time_us(100);
    pthread_t a, b;
    pthread_create(&a, NULL, memrace_runner, &r);
    pthread_create(&b, NULL, memrace_destroyer, &r);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    rknn_emu_set_npu_time_us(0);
    CHECK(atomic_load(&r.bad) == 0);
    CHECK(rknn_run(r.c, NULL) == RKNN_ERR_PARAM_INVALID);
    CHECK(rknn_destroy_mem(r.c, out) == RKNN_SUCC);
    rknn_context c2 = new_ctx(g_relu, g_n_relu);
    rknn_context cs[4] = {r.c, r.c, c2, c2};
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, mem_churn, &cs[i]);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    CHECK(rknn_destroy(r.c) == RKNN_SUCC);
    CHECK(rknn_destroy(c2) == RKNN_SUCC);
}

/* ---- dup while running ---------------------------------------------------------------------- */
static void *dup_runner(void *arg)
{
    rknn_context c = *(rknn_context *)arg;
    for (int i = 0; i < 10; i++)
        CHECK(infer(c, 5.0f, 1.0f) == 0);
    return NULL;
}

static void test_dup(void)
{
    rknn_context c = new_ctx(g_relu, g_n_relu);
    rknn_emu_set_npu_time_us(500);
    pthread_t a;
    pthread_create(&a, NULL, dup_runner, &c);
    rknn_context d[3];
    pthread_t b[3];
    for (int i = 0; i < 3; i++) {
        CHECK(rknn_dup_context(&c, &d[i]) == RKNN_SUCC);
        pthread_create(&b[i], NULL, dup_runner, &d[i]);
    }
    pthread_join(a, NULL);
    for (int i = 0; i < 3; i++) {
        pthread_join(b[i], NULL);
        CHECK(rknn_destroy(d[i]) == RKNN_SUCC);
    }
    rknn_emu_set_npu_time_us(0);
    CHECK(rknn_destroy(c) == RKNN_SUCC);
}

/* ---- custom ops on several contexts -------------------------------------------------------- */
static atomic_int g_inits, g_destroys;

static int cst_init(rknn_custom_op_context *op_ctx, rknn_custom_op_tensor *ins, uint32_t n_in,
                    rknn_custom_op_tensor *outs, uint32_t n_out)
{
    (void)ins;
    (void)outs;
    (void)n_in;
    (void)n_out;
    rknn_custom_op_attr a;
    rknn_custom_op_get_op_attr(op_ctx, "alpha", &a);
    CHECK(a.n_elems == 1);
    atomic_fetch_add(&g_inits, 1);
    return 0;
}

static int cst_compute(rknn_custom_op_context *op_ctx, rknn_custom_op_tensor *ins, uint32_t n_in,
                       rknn_custom_op_tensor *outs, uint32_t n_out)
{
    (void)n_in;
    (void)n_out;
    rknn_custom_op_attr a;
    rknn_custom_op_get_op_attr(op_ctx, "alpha", &a);
    float alpha = a.data ? *(const float *)a.data : 0.0f;
    const float *x = (const float *)((uint8_t *)ins[0].mem.virt_addr + ins[0].mem.offset);
    float *y = (float *)((uint8_t *)outs[0].mem.virt_addr + outs[0].mem.offset);
    for (uint32_t i = 0; i < ins[0].attr.n_elems; i++)
        y[i] = alpha * x[i];
    return 0;
}

static int cst_destroy(rknn_custom_op_context *op_ctx)
{
    (void)op_ctx;
    atomic_fetch_add(&g_destroys, 1);
    return 0;
}

static void *custom_worker(void *arg)
{
    (void)arg;
    rknn_context c = new_ctx(g_custom, g_n_custom);
    rknn_custom_op op;
    memset(&op, 0, sizeof op);
    strcpy(op.op_type, "cstSigmoid");
    op.target = RKNN_TARGET_TYPE_CPU;
    op.init = cst_init;
    op.compute = cst_compute;
    op.destroy = cst_destroy;
    CHECK(rknn_register_custom_ops(c, &op, 1) == RKNN_SUCC);
    float x[16], y[16];
    for (int i = 0; i < 16; i++)
        x[i] = (float)i;
    for (int k = 0; k < 10; k++) {
        rknn_input in = {.index = 0, .buf = x, .size = sizeof x, .type = RKNN_TENSOR_FLOAT32,
                         .fmt = RKNN_TENSOR_UNDEFINED};
        CHECK(rknn_inputs_set(c, 1, &in) == RKNN_SUCC);
        CHECK(rknn_run(c, NULL) == RKNN_SUCC);
        rknn_output o = {.want_float = 1, .is_prealloc = 1, .buf = y, .size = sizeof y};
        CHECK(rknn_outputs_get(c, 1, &o, NULL) == RKNN_SUCC);
        CHECK(y[5] == 6.0f);                                /* alpha 1: x + 1 */
    }
    CHECK(rknn_destroy(c) == RKNN_SUCC);
    return NULL;
}

static void test_custom(void)
{
    pthread_t t[3];
    for (int i = 0; i < 3; i++)
        pthread_create(&t[i], NULL, custom_worker, NULL);
    for (int i = 0; i < 3; i++)
        pthread_join(t[i], NULL);
    CHECK(atomic_load(&g_inits) == 3 && atomic_load(&g_destroys) == 3);
}

/* ---- matmul ----------------------------------------------------------------------------------- */
typedef struct mmjob {
    rknn_matmul_ctx c;
    rknn_tensor_mem *m[3];
    int shared;                  /* several threads run it: C is not read (a user race) */
    atomic_int bad;
} mmjob;

static void *mm_runner(void *arg)
{
    mmjob *j = arg;
    for (int i = 0; i < 20; i++) {
        int rc = rknn_matmul_run(j->c);
        if (rc == RKNN_ERR_CTX_INVALID)
            break;
        if (rc != RKNN_SUCC)
            atomic_fetch_add(&j->bad, 1);
        else if (!j->shared && ((int32_t *)j->m[2]->virt_addr)[0] != 2 * 3 * 64)
            atomic_fetch_add(&j->bad, 1);
    }
    return NULL;
}

static void mm_setup(mmjob *j)
{
    rknn_matmul_info info;
    rknn_matmul_io_attr io;
    memset(&info, 0, sizeof info);
    info.M = 4;
    info.K = 64;
    info.N = 32;
    info.type = RKNN_INT8_MM_INT8_TO_INT32;
    CHECK(rknn_matmul_create(&j->c, &info, &io) == RKNN_SUCC);
    j->m[0] = rknn_create_mem(j->c, io.A.size);
    j->m[1] = rknn_create_mem(j->c, io.B.size);
    j->m[2] = rknn_create_mem(j->c, io.C.size);
    memset(j->m[0]->virt_addr, 2, io.A.size);
    memset(j->m[1]->virt_addr, 3, io.B.size);
    CHECK(rknn_matmul_set_io_mem(j->c, j->m[0], &io.A) == RKNN_SUCC);
    CHECK(rknn_matmul_set_io_mem(j->c, j->m[1], &io.B) == RKNN_SUCC);
    CHECK(rknn_matmul_set_io_mem(j->c, j->m[2], &io.C) == RKNN_SUCC);
}

static void test_matmul(void)
{
    mmjob j[2];
    memset(j, 0, sizeof j);
    pthread_t t[3];
    j[1].shared = 1;
    for (int i = 0; i < 2; i++) {
        mm_setup(&j[i]);
        pthread_create(&t[i], NULL, mm_runner, &j[i]);
    }
    pthread_create(&t[2], NULL, mm_runner, &j[1]);     /* two threads on one matmul ctx */
    pthread_join(t[0], NULL);
    sleep_us(100);
    CHECK(rknn_matmul_destroy(j[1].c) == RKNN_SUCC);   /* while t[1] / t[2] may run */
    pthread_join(t[1], NULL);
    pthread_join(t[2], NULL);
    for (int i = 0; i < 2; i++)
        CHECK(atomic_load(&j[i].bad) == 0);
    for (int k = 0; k < 3; k++) {
        CHECK(rknn_destroy_mem(j[0].c, j[0].m[k]) == RKNN_SUCC);
        /* the owner of these is destroyed: the handle check fails, the mem is still known */
        CHECK(rknn_destroy_mem(j[1].c, j[1].m[k]) == RKNN_ERR_CTX_INVALID);
        CHECK(rknn_destroy_mem(j[0].c, j[1].m[k]) == RKNN_SUCC);
    }
    CHECK(rknn_matmul_destroy(j[0].c) == RKNN_SUCC);
}

/* ---- controls while running ------------------------------------------------------------------ */
static atomic_int g_stop;

static void *controller(void *arg)
{
    (void)arg;
    while (!atomic_load(&g_stop)) {
        rknn_emu_set_log_level(0);
        rknn_emu_set_npu_time_us(50);
        rknn_emu_inject_error("rknn_wait", 1, RKNN_ERR_TIMEOUT);
        rknn_emu_counters k;
        rknn_emu_get_counters(&k, sizeof k);
        (void)rknn_emu_get_platform();
        rknn_emu_set_log_level(-1);
        rknn_emu_set_npu_time_us(0);
        rknn_emu_clear_injections();
        rknn_emu_reset_counters();
    }
    return NULL;
}

static void test_controls(void)
{
    pthread_t ctl, w[2];
    pthread_create(&ctl, NULL, controller, NULL);
    for (int i = 0; i < 2; i++)
        pthread_create(&w[i], NULL, parallel_worker, NULL);
    for (int i = 0; i < 2; i++)
        pthread_join(w[i], NULL);
    atomic_store(&g_stop, 1);
    pthread_join(ctl, NULL);
    rknn_emu_clear_injections();
    rknn_emu_set_npu_time_us(0);
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    rknn_emu_set_log_level(0);
    srand(7);
    g_relu = load(argv[1], "relu.rknn", &g_n_relu);
    g_custom = load(argv[1], "custom.rknn", &g_n_custom);
    g_keeper = new_ctx(g_relu, g_n_relu);
    test_parallel();
    test_serialized();
    test_destroy_race();
    test_mems();
    test_dup();
    test_custom();
    test_matmul();
    test_controls();
    CHECK(rknn_destroy(g_keeper) == RKNN_SUCC);
    rknn_emu_counters k;
    rknn_emu_get_counters(&k, sizeof k);
    CHECK(k.live_contexts == 0 && k.live_mems == 0 && k.live_output_buffers == 0);
    free(g_relu);
    free(g_custom);
    printf("threads: %d checks, %d failed\n", atomic_load(&g_checks), atomic_load(&g_failed));
    return atomic_load(&g_failed) ? 1 : 0;
}
