/*
 * The call order of the vendor's matmul API example, against librknnrt (-lrknnrt):
 *
 *   matmul_demo M K N B_LAYOUT      B_LAYOUT: normal | native
 *
 * rknn_matmul_create (int8 x int8 -> int32), the io attributes printed with the header's
 * string helpers, one rknn_create_mem per matrix, A and B filled (B converted with
 * rknn_B_normal_layout_to_native_layout for the native layout), rknn_matmul_set_io_mem
 * for A, B and C, rknn_matmul_run, C compared with the product computed here,
 * rknn_destroy_mem, rknn_matmul_destroy.  Prints "max abs diff D" and exits 0 when D is 0.
 */
#include <stdint.h>

#include "demo_common.h"           /* CHECK; rknn_api.h */
#include "rknn_matmul_api.h"

static void dump(const char *which, const rknn_matmul_tensor_attr *a)
{
    printf("%s: name=%s n_dims=%u dims=[", which, a->name, a->n_dims);
    for (uint32_t d = 0; d < a->n_dims; d++)
        printf(d ? ", %u" : "%u", a->dims[d]);
    printf("] size=%u type=%s\n", a->size, get_type_string(a->type));
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: matmul_demo M K N normal|native\n");
        return 2;
    }
    int M = atoi(argv[1]), K = atoi(argv[2]), N = atoi(argv[3]);
    int native = strcmp(argv[4], "native") == 0;

    rknn_matmul_info info;
    memset(&info, 0, sizeof info);
    info.M = M;
    info.K = K;
    info.N = N;
    info.type = RKNN_INT8_MM_INT8_TO_INT32;
    info.B_layout = native ? RKNN_MM_LAYOUT_NATIVE : RKNN_MM_LAYOUT_NORM;
    info.AC_layout = RKNN_MM_LAYOUT_NORM;

    rknn_matmul_io_attr io;
    memset(&io, 0, sizeof io);
    rknn_matmul_ctx ctx = 0;
    CHECK(rknn_matmul_create(&ctx, &info, &io));
    printf("matmul type: %s\n", get_matmul_type_string(info.type));
    dump("A", &io.A);
    dump("B", &io.B);
    dump("C", &io.C);

    int8_t *a = malloc((size_t)M * K), *b = malloc((size_t)K * N);
    int32_t *want = calloc((size_t)M * N, sizeof *want);
    if (!a || !b || !want)
        return 2;
    for (int i = 0; i < M * K; i++)
        a[i] = (int8_t)((i * 37 + 11) % 255 - 127);
    for (int i = 0; i < K * N; i++)
        b[i] = (int8_t)((i * 53 + 7) % 255 - 127);
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++)
            for (int k = 0; k < K; k++)
                want[m * N + n] += (int32_t)a[m * K + k] * b[k * N + n];

    rknn_tensor_mem *A = rknn_create_mem(ctx, io.A.size);
    rknn_tensor_mem *B = rknn_create_mem(ctx, io.B.size);
    rknn_tensor_mem *C = rknn_create_mem(ctx, io.C.size);
    if (!A || !B || !C) {
        fprintf(stderr, "rknn_create_mem returned NULL\n");
        return 2;
    }
    memcpy(A->virt_addr, a, (size_t)M * K);
    if (native)
        CHECK(rknn_B_normal_layout_to_native_layout(b, B->virt_addr, K, N, &info));
    else
        memcpy(B->virt_addr, b, (size_t)K * N);
    CHECK(rknn_matmul_set_io_mem(ctx, A, &io.A));
    CHECK(rknn_matmul_set_io_mem(ctx, B, &io.B));
    CHECK(rknn_matmul_set_io_mem(ctx, C, &io.C));
    CHECK(rknn_matmul_run(ctx));

    const int32_t *got = (const int32_t *)C->virt_addr;
    long long worst = 0;
    for (int i = 0; i < M * N; i++) {
        long long d = (long long)got[i] - want[i];
        if (d < 0)
            d = -d;
        if (d > worst)
            worst = d;
    }
    printf("max abs diff %lld\n", worst);

    CHECK(rknn_destroy_mem(ctx, A));
    CHECK(rknn_destroy_mem(ctx, B));
    CHECK(rknn_destroy_mem(ctx, C));
    CHECK(rknn_matmul_destroy(ctx));
    free(a);
    free(b);
    free(want);
    return worst == 0 ? 0 : 1;
}
