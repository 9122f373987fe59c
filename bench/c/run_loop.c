/*
 * rknnx bench: the C baseline for bench/overhead.py.
 *
 *   run_loop MODEL FLOW N
 *
 * FLOW "zerocopy": rknn_create_mem + rknn_set_io_mem for every tensor (model attrs),
 * then N x rknn_run.  FLOW "general": N x (rknn_inputs_set, rknn_run,
 * rknn_outputs_get(want_float=1), rknn_outputs_release) with zeroed inputs.
 * Prints the nanoseconds of each iteration, one per line, to stdout.
 */
#include "bench_common.h"         /* first: it sets _POSIX_C_SOURCE */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rknn_api.h"

static int fail(const char *what, int rc) { return bench_fail("run_loop", what, rc); }

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: run_loop MODEL zerocopy|general N\n");
        return 2;
    }
    const char *flow = argv[2];
    long n = strtol(argv[3], NULL, 10);
    rknn_context ctx = 0;
    int rc = rknn_init(&ctx, argv[1], 0, 0, NULL);
    if (rc < 0)
        return fail("rknn_init", rc);
    rknn_input_output_num io;
    rc = rknn_query(ctx, RKNN_QUERY_IN_OUT_NUM, &io, sizeof(io));
    if (rc < 0 || io.n_input > MAX_IO || io.n_output > MAX_IO)
        return fail("rknn_query(IN_OUT_NUM)", rc);
    rknn_tensor_attr in_attr[MAX_IO], out_attr[MAX_IO];
    for (uint32_t i = 0; i < io.n_input; i++) {
        memset(&in_attr[i], 0, sizeof(in_attr[i]));
        in_attr[i].index = i;
        if ((rc = rknn_query(ctx, RKNN_QUERY_INPUT_ATTR, &in_attr[i], sizeof(in_attr[i]))) < 0)
            return fail("rknn_query(INPUT_ATTR)", rc);
    }
    for (uint32_t i = 0; i < io.n_output; i++) {
        memset(&out_attr[i], 0, sizeof(out_attr[i]));
        out_attr[i].index = i;
        if ((rc = rknn_query(ctx, RKNN_QUERY_OUTPUT_ATTR, &out_attr[i], sizeof(out_attr[i]))) < 0)
            return fail("rknn_query(OUTPUT_ATTR)", rc);
    }
    long long *t = calloc((size_t)n, sizeof(long long));
    rknn_tensor_mem *mems[2 * MAX_IO] = {0};
    int n_mems = 0;
    if (strcmp(flow, "zerocopy") == 0) {
        for (uint32_t i = 0; i < io.n_input + io.n_output; i++) {
            rknn_tensor_attr *a = i < io.n_input ? &in_attr[i] : &out_attr[i - io.n_input];
            uint32_t sz = a->size_with_stride > a->size ? a->size_with_stride : a->size;
            rknn_tensor_mem *m = rknn_create_mem(ctx, sz);
            if (!m)
                return fail("rknn_create_mem", -1);
            memset(m->virt_addr, 0, sz);
            mems[n_mems++] = m;
            if ((rc = rknn_set_io_mem(ctx, m, a)) < 0)
                return fail("rknn_set_io_mem", rc);
        }
        for (long k = 0; k < n; k++) {
            long long t0 = now_ns();
            if ((rc = rknn_run(ctx, NULL)) < 0)
                return fail("rknn_run", rc);
            t[k] = now_ns() - t0;
        }
    } else {
        rknn_input inputs[MAX_IO];
        void *bufs[MAX_IO];
        for (uint32_t i = 0; i < io.n_input; i++) {
            bufs[i] = calloc(1, in_attr[i].size);
            memset(&inputs[i], 0, sizeof(inputs[i]));
            inputs[i].index = i;
            inputs[i].buf = bufs[i];
            inputs[i].size = in_attr[i].size;
            inputs[i].type = in_attr[i].type;
            inputs[i].fmt = in_attr[i].fmt;
        }
        rknn_output outputs[MAX_IO];
        for (long k = 0; k < n; k++) {
            long long t0 = now_ns();
            if ((rc = rknn_inputs_set(ctx, io.n_input, inputs)) < 0)
                return fail("rknn_inputs_set", rc);
            if ((rc = rknn_run(ctx, NULL)) < 0)
                return fail("rknn_run", rc);
            memset(outputs, 0, sizeof(outputs));
            for (uint32_t i = 0; i < io.n_output; i++) {
                outputs[i].index = i;
                outputs[i].want_float = 1;
            }
            if ((rc = rknn_outputs_get(ctx, io.n_output, outputs, NULL)) < 0)
                return fail("rknn_outputs_get", rc);
            if ((rc = rknn_outputs_release(ctx, io.n_output, outputs)) < 0)
                return fail("rknn_outputs_release", rc);
            t[k] = now_ns() - t0;
        }
        for (uint32_t i = 0; i < io.n_input; i++)
            free(bufs[i]);
    }
    for (long k = 0; k < n; k++)
        printf("%lld\n", t[k]);
    for (int i = 0; i < n_mems; i++)
        rknn_destroy_mem(ctx, mems[i]);
    free(t);
    return rknn_destroy(ctx) < 0;
}
