/*
 * The general flow, in the order of the vendor's rknn_mobilenet_demo /
 * rknn_multiple_input_demo:
 *   rknn_init (from a buffer) -> query SDK_VERSION, IN_OUT_NUM, INPUT_ATTR, OUTPUT_ATTR,
 *   CUSTOM_STRING -> rknn_inputs_set -> rknn_run -> rknn_outputs_get (want_float=1,
 *   runtime-allocated) -> rknn_outputs_release -> rknn_destroy.
 *
 * usage: general_flow MODEL OUT_PREFIX INPUT0 [INPUT1 ...]
 *   4-D inputs are files of uint8 NHWC pixels, other inputs files of float32;
 *   output i is written to OUT_PREFIX<i>.bin as float32 (NCHW for 4-D).
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
    free(model);   /* the runtime keeps its own copy */

    rknn_input_output_num io;
    rknn_tensor_attr *in_attrs, *out_attrs;
    demo_prologue(ctx, &io, &in_attrs, &out_attrs, RKNN_QUERY_OUTPUT_ATTR);
    if ((uint32_t)(argc - 3) != io.n_input) {
        fprintf(stderr, "model has %u inputs, %d given\n", io.n_input, argc - 3);
        return 1;
    }

    rknn_input *inputs = calloc(io.n_input, sizeof *inputs);
    unsigned char **data = calloc(io.n_input, sizeof *data);
    NONNULL(inputs);
    NONNULL(data);
    for (uint32_t i = 0; i < io.n_input; i++) {
        size_t n;
        data[i] = demo_read_file(argv[3 + i], &n);
        inputs[i].index = i;
        inputs[i].buf = data[i];
        inputs[i].size = (uint32_t)n;
        inputs[i].pass_through = 0;
        if (in_attrs[i].n_dims == 4) {
            inputs[i].type = RKNN_TENSOR_UINT8;
            inputs[i].fmt = RKNN_TENSOR_NHWC;
        } else {
            inputs[i].type = RKNN_TENSOR_FLOAT32;
            inputs[i].fmt = RKNN_TENSOR_UNDEFINED;
        }
    }
    CHECK(rknn_inputs_set(ctx, io.n_input, inputs));
    for (int r = 0; r < 2; r++)
        CHECK(rknn_run(ctx, NULL));

    rknn_output *outputs = calloc(io.n_output, sizeof *outputs);
    NONNULL(outputs);
    for (uint32_t i = 0; i < io.n_output; i++) {
        outputs[i].index = i;
        outputs[i].want_float = 1;
        outputs[i].is_prealloc = 0;
    }
    CHECK(rknn_outputs_get(ctx, io.n_output, outputs, NULL));
    for (uint32_t i = 0; i < io.n_output; i++) {
        if (outputs[i].size != out_attrs[i].n_elems * sizeof(float)) {
            fprintf(stderr, "output %u: size %u, expected %u floats\n", i, outputs[i].size,
                    out_attrs[i].n_elems);
            return 1;
        }
        demo_write_file(argv[2], i, outputs[i].buf, outputs[i].size);
    }
    CHECK(rknn_outputs_release(ctx, io.n_output, outputs));
    CHECK(rknn_destroy(ctx));

    for (uint32_t i = 0; i < io.n_input; i++)
        free(data[i]);
    free(data);
    free(inputs);
    free(outputs);
    free(in_attrs);
    free(out_attrs);
    return demo_leak_check();
}
