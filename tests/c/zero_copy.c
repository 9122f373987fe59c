/*
 * The zero-copy flow with runtime-allocated memory, in the order of the vendor's
 * rknn_create_mem_demo (and the RV1106 mobilenet demo):
 *   rknn_init -> prologue queries -> for each input: attr.type = UINT8 (images) or FLOAT32,
 *   fmt = NHWC -> rknn_create_mem(size_with_stride) -> copy rows with w_stride -> for each
 *   output: rknn_create_mem(n_elems * 4), attr.type = FLOAT32 -> rknn_set_io_mem ->
 *   rknn_run (a few times) -> read outputs from virt_addr -> rknn_destroy_mem -> rknn_destroy.
 *
 * usage: zero_copy MODEL OUT_PREFIX INPUT0 [INPUT1 ...]   (files as for general_flow)
 */
#include "demo_common.h"

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: %s MODEL OUT_PREFIX INPUT...\n", argv[0]);
        return 1;
    }
    size_t model_size;
    unsigned char *model = demo_read_file(argv[1], &model_size);
    rknn_context ctx = 0;
    CHECK(rknn_init(&ctx, model, (uint32_t)model_size, 0, NULL));
    free(model);

    rknn_input_output_num io;
    rknn_tensor_attr *in_attrs, *out_attrs;
    demo_prologue(ctx, &io, &in_attrs, &out_attrs, RKNN_QUERY_OUTPUT_ATTR);
    if ((uint32_t)(argc - 3) != io.n_input)
        return 1;

    rknn_tensor_mem **in_mems = calloc(io.n_input, sizeof *in_mems);
    rknn_tensor_mem **out_mems = calloc(io.n_output, sizeof *out_mems);
    NONNULL(in_mems);
    NONNULL(out_mems);
    for (uint32_t i = 0; i < io.n_input; i++) {
        rknn_tensor_attr *a = &in_attrs[i];
        size_t n;
        unsigned char *src = demo_read_file(argv[3 + i], &n);
        if (a->n_dims == 4) {
            /* image: uint8 NHWC, rows padded to w_stride pixels */
            a->type = RKNN_TENSOR_UINT8;
            a->fmt = RKNN_TENSOR_NHWC;
            in_mems[i] = rknn_create_mem(ctx, a->size_with_stride);
            NONNULL(in_mems[i]);
            uint32_t H = a->dims[1], W = a->dims[2], C = a->dims[3];
            uint32_t ws = a->w_stride ? a->w_stride : W;
            unsigned char *dst = (unsigned char *)in_mems[i]->virt_addr + in_mems[i]->offset;
            if (ws == W) {
                memcpy(dst, src, (size_t)H * W * C);
            } else {
                for (uint32_t h = 0; h < a->dims[0] * H; h++)
                    memcpy(dst + (size_t)h * ws * C, src + (size_t)h * W * C, (size_t)W * C);
            }
        } else {
            a->type = RKNN_TENSOR_FLOAT32;
            a->fmt = RKNN_TENSOR_UNDEFINED;
            in_mems[i] = rknn_create_mem(ctx, a->n_elems * sizeof(float));
            NONNULL(in_mems[i]);
            memcpy((unsigned char *)in_mems[i]->virt_addr + in_mems[i]->offset, src,
                   a->n_elems * sizeof(float));
        }
        free(src);
        CHECK(rknn_set_io_mem(ctx, in_mems[i], a));
    }
    for (uint32_t i = 0; i < io.n_output; i++) {
        out_attrs[i].type = RKNN_TENSOR_FLOAT32;
        out_mems[i] = rknn_create_mem(ctx, out_attrs[i].n_elems * sizeof(float));
        NONNULL(out_mems[i]);
        CHECK(rknn_set_io_mem(ctx, out_mems[i], &out_attrs[i]));
    }
    for (int r = 0; r < 3; r++)
        CHECK(rknn_run(ctx, NULL));
    for (uint32_t i = 0; i < io.n_output; i++)
        demo_write_file(argv[2], i, (unsigned char *)out_mems[i]->virt_addr + out_mems[i]->offset,
                        out_attrs[i].n_elems * sizeof(float));

    for (uint32_t i = 0; i < io.n_input; i++)
        CHECK(rknn_destroy_mem(ctx, in_mems[i]));
    for (uint32_t i = 0; i < io.n_output; i++)
        CHECK(rknn_destroy_mem(ctx, out_mems[i]));
    CHECK(rknn_destroy(ctx));
    free(in_mems);
    free(out_mems);
    free(in_attrs);
    free(out_attrs);
    return demo_leak_check();
}
