/*
 * The zero-copy flow on a dynamic-shape model, making the calls of the vendor's
 * rknn_dynshape_inference_zero_copy example in its order, with the vendor headers' names
 * only (rknn_api.h and its inline string helpers):
 *   rknn_init(path) -> query SDK_VERSION, IN_OUT_NUM, INPUT_ATTR and OUTPUT_ATTR per
 *   tensor (printed with get_format_string / get_type_string / get_qnt_type_string),
 *   INPUT_DYNAMIC_RANGE per input -> input attr type UINT8, fmt NHWC ->
 *   rknn_create_mem(INPUT_ATTR.size_with_stride) and rknn_create_mem(OUTPUT_ATTR.size * 4),
 *   once -> for each shape set: dims from dyn_range -> rknn_set_input_shapes -> query
 *   CURRENT_INPUT_ATTR / CURRENT_OUTPUT_ATTR -> rknn_set_core_mask -> copy the frame row by
 *   row at w_stride -> rknn_set_io_mem (input UINT8; outputs FLOAT32 NCHW) -> rknn_run ->
 *   read the outputs -> finally rknn_destroy_mem each -> rknn_destroy.
 * The program checks, as the example silently assumes, that every set fits the buffers
 * sized before any set was chosen.
 *
 * usage: dynshape_zero_copy MODEL OUT_PREFIX IN_PREFIX
 *   reads IN_PREFIX<s>_<i>.bin (uint8 NHWC frame of input i at set s), writes
 *   OUT_PREFIX<s>_<o>.bin (float32 NCHW output o at set s)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rknn_api.h"

#define MAX_IO 8

static void dump_attr(const rknn_tensor_attr *a)
{
    printf("  index=%u name=%s n_dims=%u dims=[", a->index, a->name, a->n_dims);
    for (uint32_t d = 0; d < a->n_dims; d++)
        printf(d ? ", %u" : "%u", a->dims[d]);
    printf("] n_elems=%u size=%u w_stride=%u size_with_stride=%u fmt=%s type=%s qnt_type=%s "
           "zp=%d scale=%f\n", a->n_elems, a->size, a->w_stride, a->size_with_stride,
           get_format_string(a->fmt), get_type_string(a->type),
           get_qnt_type_string(a->qnt_type), a->zp, a->scale);
}

static int fail(const char *what, int ret)
{
    fprintf(stderr, "%s failed: %d\n", what, ret);
    return 2;
}

static unsigned char *read_all(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc(len > 0 ? (size_t)len : 1);
    if (b && len > 0 && fread(b, 1, (size_t)len, f) != (size_t)len) {
        free(b);
        b = NULL;
    }
    fclose(f);
    *n = (size_t)len;
    return b;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: %s MODEL OUT_PREFIX IN_PREFIX\n", argv[0]);
        return 1;
    }
    rknn_context ctx;
    int ret = rknn_init(&ctx, argv[1], 0, 0, NULL);
    if (ret < 0)
        return fail("rknn_init", ret);
    rknn_sdk_version ver;
    if ((ret = rknn_query(ctx, RKNN_QUERY_SDK_VERSION, &ver, sizeof ver)) != RKNN_SUCC)
        return fail("query SDK_VERSION", ret);
    printf("rknn_api/rknnrt version: %s, driver version: %s\n", ver.api_version, ver.drv_version);
    rknn_input_output_num io;
    if ((ret = rknn_query(ctx, RKNN_QUERY_IN_OUT_NUM, &io, sizeof io)) != RKNN_SUCC)
        return fail("query IN_OUT_NUM", ret);
    if (io.n_input > MAX_IO || io.n_output > MAX_IO)
        return 1;
    rknn_tensor_attr in_attrs[MAX_IO], out_attrs[MAX_IO];
    memset(in_attrs, 0, sizeof in_attrs);
    memset(out_attrs, 0, sizeof out_attrs);
    printf("input tensors:\n");
    for (uint32_t i = 0; i < io.n_input; i++) {
        in_attrs[i].index = i;
        if ((ret = rknn_query(ctx, RKNN_QUERY_INPUT_ATTR, &in_attrs[i], sizeof(rknn_tensor_attr))) < 0)
            return fail("query INPUT_ATTR", ret);
        dump_attr(&in_attrs[i]);
    }
    printf("output tensors:\n");
    for (uint32_t o = 0; o < io.n_output; o++) {
        out_attrs[o].index = o;
        if ((ret = rknn_query(ctx, RKNN_QUERY_OUTPUT_ATTR, &out_attrs[o], sizeof(rknn_tensor_attr))) != RKNN_SUCC)
            return fail("query OUTPUT_ATTR", ret);
        dump_attr(&out_attrs[o]);
    }
    static rknn_input_range ranges[MAX_IO];
    printf("dynamic inputs shape range:\n");
    for (uint32_t i = 0; i < io.n_input; i++) {
        memset(&ranges[i], 0, sizeof ranges[i]);
        ranges[i].index = i;
        if ((ret = rknn_query(ctx, RKNN_QUERY_INPUT_DYNAMIC_RANGE, &ranges[i], sizeof(rknn_input_range))) != RKNN_SUCC)
            return fail("query INPUT_DYNAMIC_RANGE", ret);
        printf("  index=%u name=%s shape_number=%u fmt=%s\n", ranges[i].index, ranges[i].name,
               ranges[i].shape_number, get_format_string(ranges[i].fmt));
    }

    /* the largest buffers, made once */
    rknn_tensor_mem *in_mems[MAX_IO], *out_mems[MAX_IO];
    for (uint32_t i = 0; i < io.n_input; i++) {
        in_attrs[i].type = RKNN_TENSOR_UINT8;
        in_attrs[i].fmt = RKNN_TENSOR_NHWC;
        in_mems[i] = rknn_create_mem(ctx, in_attrs[i].size_with_stride);
        if (!in_mems[i])
            return fail("rknn_create_mem (input)", -1);
    }
    for (uint32_t o = 0; o < io.n_output; o++) {
        out_mems[o] = rknn_create_mem(ctx, out_attrs[o].size * sizeof(float));
        if (!out_mems[o])
            return fail("rknn_create_mem (output)", -1);
    }

    uint32_t shape_num = ranges[0].shape_number;
    for (uint32_t s = 0; s < shape_num; s++) {
        for (uint32_t i = 0; i < io.n_input; i++)
            for (uint32_t d = 0; d < in_attrs[i].n_dims; d++)
                in_attrs[i].dims[d] = ranges[i].dyn_range[s][d];
        if ((ret = rknn_set_input_shapes(ctx, io.n_input, in_attrs)) < 0)
            return fail("rknn_set_input_shapes", ret);
        rknn_tensor_attr cur_in[MAX_IO], cur_out[MAX_IO];
        memset(cur_in, 0, sizeof cur_in);
        memset(cur_out, 0, sizeof cur_out);
        printf("current input tensors:\n");
        for (uint32_t i = 0; i < io.n_input; i++) {
            cur_in[i].index = i;
            if ((ret = rknn_query(ctx, RKNN_QUERY_CURRENT_INPUT_ATTR, &cur_in[i], sizeof(rknn_tensor_attr))) < 0)
                return fail("query CURRENT_INPUT_ATTR", ret);
            dump_attr(&cur_in[i]);
        }
        printf("current output tensors:\n");
        for (uint32_t o = 0; o < io.n_output; o++) {
            cur_out[o].index = o;
            if ((ret = rknn_query(ctx, RKNN_QUERY_CURRENT_OUTPUT_ATTR, &cur_out[o], sizeof(rknn_tensor_attr))) != RKNN_SUCC)
                return fail("query CURRENT_OUTPUT_ATTR", ret);
            dump_attr(&cur_out[o]);
        }
        rknn_set_core_mask(ctx, RKNN_NPU_CORE_0);   /* the example ignores the status */

        for (uint32_t i = 0; i < io.n_input; i++) {
            uint32_t N = cur_in[i].dims[0], H = cur_in[i].dims[1], W = cur_in[i].dims[2];
            uint32_t C = cur_in[i].dims[3], stride = cur_in[i].w_stride ? cur_in[i].w_stride : W;
            if ((uint64_t)N * H * stride * C > in_mems[i]->size) {
                fprintf(stderr, "set %u: input %u needs %llu bytes, the mem has %u\n", s, i,
                        (unsigned long long)N * H * stride * C, in_mems[i]->size);
                return 3;
            }
            char path[4096];
            snprintf(path, sizeof path, "%s%u_%u.bin", argv[3], s, i);
            size_t n;
            unsigned char *src = read_all(path, &n);
            if (!src || n != (size_t)N * H * W * C)
                return fail("reading the input frame", -1);
            unsigned char *dst = (unsigned char *)in_mems[i]->virt_addr;
            for (uint32_t r = 0; r < N * H; r++)
                memcpy(dst + (size_t)r * stride * C, src + (size_t)r * W * C, (size_t)W * C);
            free(src);
            cur_in[i].type = RKNN_TENSOR_UINT8;
            if ((ret = rknn_set_io_mem(ctx, in_mems[i], &cur_in[i])) < 0)
                return fail("rknn_set_io_mem (input)", ret);
        }
        for (uint32_t o = 0; o < io.n_output; o++) {
            if ((uint64_t)cur_out[o].n_elems * sizeof(float) > out_mems[o]->size) {
                fprintf(stderr, "set %u: output %u does not fit its mem\n", s, o);
                return 3;
            }
            cur_out[o].type = RKNN_TENSOR_FLOAT32;
            cur_out[o].fmt = RKNN_TENSOR_NCHW;
            if ((ret = rknn_set_io_mem(ctx, out_mems[o], &cur_out[o])) < 0)
                return fail("rknn_set_io_mem (output)", ret);
        }
        if ((ret = rknn_run(ctx, NULL)) < 0)
            return fail("rknn_run", ret);
        for (uint32_t o = 0; o < io.n_output; o++) {
            char path[4096];
            snprintf(path, sizeof path, "%s%u_%u.bin", argv[2], s, o);
            FILE *f = fopen(path, "wb");
            size_t n = cur_out[o].n_elems * sizeof(float);
            if (!f || fwrite(out_mems[o]->virt_addr, 1, n, f) != n)
                return fail("writing an output", -1);
            fclose(f);
        }
    }
    for (uint32_t i = 0; i < io.n_input; i++)
        rknn_destroy_mem(ctx, in_mems[i]);
    for (uint32_t o = 0; o < io.n_output; o++)
        rknn_destroy_mem(ctx, out_mems[o]);
    rknn_destroy(ctx);
    return 0;
}
