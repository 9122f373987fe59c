/*
 * rknnx bench: the C baselines of bench/suite.py, built at run time against the loaded
 * runtime (the bundled emulator on a host, librknnrt on a board).
 *
 *   flows MODEL MODE N [THREADS]
 *
 * The tensor types are those an rknnx session and Model.run use by default: a quantized
 * 4-D image input is fed as uint8 pixels, outputs are read as float32.
 *
 * MODE
 *   zerocopy       memory bound with rknn_set_io_mem once, then N x rknn_run
 *   zerocopy-copy  N x (memcpy of one frame into the bound input memory, rknn_run)
 *   general        N x (rknn_inputs_set, rknn_run, rknn_outputs_get(want_float=1),
 *                  rknn_outputs_release), outputs preallocated by the caller
 *   general-raw    the same with want_float=0 (the model's own output type)
 *   pool           THREADS threads, each with its own context (rknn_dup_context of the
 *                  first), take N frames in turn from a shared counter and run the general
 *                  flow on each
 *
 * Prints the nanoseconds of each iteration, one per line (pool: the wall time of all N
 * frames, one line).  Simulated NPU time on the emulator: env RKNN_EMU_NPU_TIME_US.
 */
#include "bench_common.h"         /* first: it sets _POSIX_C_SOURCE */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rknn_api.h"

static int fail(const char *what, int rc) { return bench_fail("flows", what, rc); }

static size_t elem_size(rknn_tensor_type t)
{
    switch (t) {
    case RKNN_TENSOR_FLOAT32: case RKNN_TENSOR_INT32: case RKNN_TENSOR_UINT32: return 4;
    case RKNN_TENSOR_FLOAT16: case RKNN_TENSOR_INT16: case RKNN_TENSOR_UINT16: return 2;
    case RKNN_TENSOR_INT64: return 8;
    default: return 1;
    }
}

typedef struct {
    rknn_input_output_num io;
    rknn_tensor_attr in[MAX_IO], out[MAX_IO];
    rknn_tensor_type in_type[MAX_IO];  /* what the caller feeds */
} model_io;

static int query_io(rknn_context ctx, model_io *m)
{
    int rc = rknn_query(ctx, RKNN_QUERY_IN_OUT_NUM, &m->io, sizeof(m->io));
    if (rc < 0 || m->io.n_input > MAX_IO || m->io.n_output > MAX_IO)
        return fail("rknn_query(IN_OUT_NUM)", rc);
    for (uint32_t i = 0; i < m->io.n_input; i++) {
        memset(&m->in[i], 0, sizeof(m->in[i]));
        m->in[i].index = i;
        if ((rc = rknn_query(ctx, RKNN_QUERY_INPUT_ATTR, &m->in[i], sizeof(m->in[i]))) < 0)
            return fail("rknn_query(INPUT_ATTR)", rc);
        rknn_tensor_attr *a = &m->in[i];
        int image = a->n_dims == 4 && a->qnt_type == RKNN_TENSOR_QNT_AFFINE_ASYMMETRIC &&
                    (a->type == RKNN_TENSOR_INT8 || a->type == RKNN_TENSOR_UINT8);
        m->in_type[i] = image ? RKNN_TENSOR_UINT8 : a->type;
    }
    for (uint32_t i = 0; i < m->io.n_output; i++) {
        memset(&m->out[i], 0, sizeof(m->out[i]));
        m->out[i].index = i;
        if ((rc = rknn_query(ctx, RKNN_QUERY_OUTPUT_ATTR, &m->out[i], sizeof(m->out[i]))) < 0)
            return fail("rknn_query(OUTPUT_ATTR)", rc);
    }
    return 0;
}

/* bytes of a tensor fed (or read) as `type` */
static size_t io_bytes(const rknn_tensor_attr *a, rknn_tensor_type type)
{
    size_t sz = a->size_with_stride > a->size ? a->size_with_stride : a->size;
    return sz / elem_size(a->type) * elem_size(type);
}

/* ---- the general flow, shared by "general" and "pool" ---------------------------------- */
typedef struct {
    rknn_input inputs[MAX_IO];
    rknn_output outputs[MAX_IO];
    void *bufs[2 * MAX_IO];
    int n_bufs;
} general_io;

static void general_setup(const model_io *m, general_io *g, int want_float)
{
    memset(g, 0, sizeof(*g));
    for (uint32_t i = 0; i < m->io.n_input; i++) {
        size_t sz = (size_t)m->in[i].n_elems * elem_size(m->in_type[i]);
        g->bufs[g->n_bufs++] = g->inputs[i].buf = calloc(1, sz);
        g->inputs[i].index = i;
        g->inputs[i].size = (uint32_t)sz;
        g->inputs[i].type = m->in_type[i];
        g->inputs[i].fmt = m->in[i].fmt;
    }
    for (uint32_t i = 0; i < m->io.n_output; i++) {
        size_t sz = (size_t)m->out[i].n_elems *
                    (want_float ? sizeof(float) : elem_size(m->out[i].type));
        g->bufs[g->n_bufs++] = g->outputs[i].buf = malloc(sz);
        g->outputs[i].size = (uint32_t)sz;
    }
}

static int general_frame(rknn_context ctx, const model_io *m, general_io *g, int want_float)
{
    int rc;
    if ((rc = rknn_inputs_set(ctx, m->io.n_input, g->inputs)) < 0)
        return fail("rknn_inputs_set", rc);
    if ((rc = rknn_run(ctx, NULL)) < 0)
        return fail("rknn_run", rc);
    for (uint32_t i = 0; i < m->io.n_output; i++) {
        g->outputs[i].index = i;
        g->outputs[i].want_float = (uint8_t)want_float;
        g->outputs[i].is_prealloc = 1;
    }
    if ((rc = rknn_outputs_get(ctx, m->io.n_output, g->outputs, NULL)) < 0)
        return fail("rknn_outputs_get", rc);
    if ((rc = rknn_outputs_release(ctx, m->io.n_output, g->outputs)) < 0)
        return fail("rknn_outputs_release", rc);
    return 0;
}

static void general_free(general_io *g)
{
    for (int i = 0; i < g->n_bufs; i++)
        free(g->bufs[i]);
}

/* ---- the C thread pool ------------------------------------------------------------------ */
typedef struct {
    rknn_context ctx;
    const model_io *m;
    atomic_long *next;
    long n;
    int rc;
} worker;

static void *work(void *arg)
{
    worker *w = arg;
    general_io g;
    general_setup(w->m, &g, 1);
    while (atomic_fetch_add(w->next, 1) < w->n) {
        if ((w->rc = general_frame(w->ctx, w->m, &g, 1)) != 0)
            break;
    }
    general_free(&g);
    return NULL;
}

static int pool(rknn_context ctx, const model_io *m, long n, int threads)
{
    worker w[64];
    pthread_t tid[64];
    atomic_long next = 0;
    if (threads < 1 || threads > 64)
        return fail("pool: THREADS in 1..64", threads);
    for (int k = 0; k < threads; k++) {
        w[k] = (worker){ctx, m, &next, n, 0};
        if (k > 0) {
            int rc = rknn_dup_context(&ctx, &w[k].ctx);
            if (rc < 0)
                return fail("rknn_dup_context", rc);
        }
    }
    long long t0 = now_ns();
    for (int k = 0; k < threads; k++)
        pthread_create(&tid[k], NULL, work, &w[k]);
    int rc = 0;
    for (int k = 0; k < threads; k++) {
        pthread_join(tid[k], NULL);
        rc |= w[k].rc;
    }
    printf("%lld\n", now_ns() - t0);
    for (int k = 1; k < threads; k++)
        rknn_destroy(w[k].ctx);
    return rc;
}

/* The per-frame loop of one flow on a context of its own: `n` frames of `mode`
 * ("zerocopy", "zerocopy-copy", "general", "general-raw"), the nanoseconds of each in t[].
 * Exported: bench/suite.py calls it in its own process too (ctypes), so the C loop and the
 * Python loops it is compared with run on the same machine state.  0 on success. */
int flows_loop(const char *model, const char *mode, long n, long long *t)
{
    rknn_context ctx = 0;
    int rc = rknn_init(&ctx, (void *)model, 0, 0, NULL);
    if (rc < 0)
        return fail("rknn_init", rc);
    static model_io m;
    if (query_io(ctx, &m)) {
        rknn_destroy(ctx);
        return 1;
    }
    rc = 0;
    if (strncmp(mode, "zerocopy", 8) == 0) {
        int copy = strcmp(mode, "zerocopy-copy") == 0;
        rknn_tensor_mem *mems[2 * MAX_IO];
        int n_mems = 0;
        for (uint32_t i = 0; i < m.io.n_input + m.io.n_output && rc == 0; i++) {
            int is_in = i < m.io.n_input;
            rknn_tensor_attr a = is_in ? m.in[i] : m.out[i - m.io.n_input];
            rknn_tensor_type type = is_in ? m.in_type[i] : RKNN_TENSOR_FLOAT32;
            size_t sz = io_bytes(&a, type);
            a.type = type;
            rknn_tensor_mem *mem = rknn_create_mem(ctx, (uint32_t)sz);
            if (!mem) {
                rc = fail("rknn_create_mem", -1);
                break;
            }
            memset(mem->virt_addr, 0, sz);
            mems[n_mems++] = mem;
            if (rknn_set_io_mem(ctx, mem, &a) < 0)
                rc = fail("rknn_set_io_mem", -1);
        }
        size_t frame_bytes = io_bytes(&m.in[0], m.in_type[0]);
        unsigned char *frame = calloc(1, frame_bytes);
        for (long k = 0; k < n && rc == 0; k++) {
            long long t0 = now_ns();
            if (copy)
                memcpy(mems[0]->virt_addr, frame, frame_bytes);
            int r = rknn_run(ctx, NULL);
            if (r < 0)
                rc = fail("rknn_run", r);
            t[k] = now_ns() - t0;
        }
        free(frame);
        for (int i = 0; i < n_mems; i++)
            rknn_destroy_mem(ctx, mems[i]);
    } else if (strncmp(mode, "general", 7) == 0) {
        int want_float = strcmp(mode, "general-raw") != 0;
        general_io g;
        general_setup(&m, &g, want_float);
        for (long k = 0; k < n && rc == 0; k++) {
            long long t0 = now_ns();
            rc = general_frame(ctx, &m, &g, want_float);
            t[k] = now_ns() - t0;
        }
        general_free(&g);
    } else {
        fprintf(stderr, "flows: unknown mode %s\n", mode);
        rc = 2;
    }
    if (rknn_destroy(ctx) < 0 && rc == 0)
        rc = 1;
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: flows MODEL zerocopy|zerocopy-copy|general|general-raw|pool N "
                        "[THREADS]\n");
        return 2;
    }
    const char *mode = argv[2];
    long n = strtol(argv[3], NULL, 10);
    if (strcmp(mode, "pool") == 0) {
        rknn_context ctx = 0;
        int rc = rknn_init(&ctx, argv[1], 0, 0, NULL);
        if (rc < 0)
            return fail("rknn_init", rc);
        static model_io m;
        if (query_io(ctx, &m))
            return 1;
        rc = pool(ctx, &m, n, argc > 4 ? atoi(argv[4]) : 1);
        rknn_destroy(ctx);
        return rc;
    }
    long long *t = calloc((size_t)(n > 0 ? n : 1), sizeof(long long));
    int rc = flows_loop(argv[1], mode, n, t);
    if (rc == 0)
        for (long k = 0; k < n; k++)
            printf("%lld\n", t[k]);
    free(t);
    return rc;
}
