/*
 * rknnx bench: a driver of the model zoo's own yolov8 post_process (Rockchip's
 * rknn_model_zoo, examples/yolov8/cpp/postprocess.cc, Apache-2.0), for bench/suite.py's
 * decode scenario with --zoo DIR.  This file is ours; the zoo's files are compiled from
 * the user's checkout DIR as they are (never copied here):
 *
 *   c++ -O2 -shared -fPIC -I DIR/examples/yolov8/cpp -I DIR/utils -I include/rknnx \
 *       DIR/examples/yolov8/cpp/postprocess.cc bench/c/zoo_real_yolov8.cc
 *
 * The driver fills what post_process reads: the app context (output count, each
 * output's attribute: dims [1, C, H, W], zero point, scale; the input size; quantized)
 * and the rknn_output array of NCHW int8 buffers (the zoo's non-zero-copy demo gets them
 * from rknn_outputs_get), a letterbox of the identity (no pad, scale 1).
 * zoo_real_frame runs it once and copies the kept boxes out; zoo_real_loop times n calls
 * (ns each), post_process alone, as the zoo's demo calls it once per frame.
 */
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "yolov8.h"

#define ZOO_REAL_MAX_OUT 16

typedef struct {
    const int8_t *data;   /* NCHW int8 codes */
    int32_t c, h, w;
    int32_t zp;
    float scale;
} zoo_real_tensor;

typedef struct {
    rknn_app_context_t app;
    rknn_tensor_attr attrs[ZOO_REAL_MAX_OUT];
    rknn_output outs[ZOO_REAL_MAX_OUT];
    letterbox_t lb;
} zoo_real_state;

static int zoo_real_fill(zoo_real_state *st, const zoo_real_tensor *t, int n_out, int in_w,
                         int in_h)
{
    if (n_out < 1 || n_out > ZOO_REAL_MAX_OUT)
        return -1;
    memset(st, 0, sizeof *st);
    for (int o = 0; o < n_out; o++) {
        rknn_tensor_attr *a = &st->attrs[o];
        a->index = (uint32_t)o;
        a->n_dims = 4;
        a->dims[0] = 1;
        a->dims[1] = (uint32_t)t[o].c;
        a->dims[2] = (uint32_t)t[o].h;
        a->dims[3] = (uint32_t)t[o].w;
        a->n_elems = (uint32_t)(t[o].c * t[o].h * t[o].w);
        a->size = a->n_elems;
        a->fmt = RKNN_TENSOR_NCHW;
        a->type = RKNN_TENSOR_INT8;
        a->qnt_type = RKNN_TENSOR_QNT_AFFINE_ASYMMETRIC;
        a->zp = t[o].zp;
        a->scale = t[o].scale;
        st->outs[o].index = (uint32_t)o;
        st->outs[o].buf = (void *)t[o].data;
        st->outs[o].size = a->size;
    }
    st->app.io_num.n_input = 1;
    st->app.io_num.n_output = (uint32_t)n_out;
    st->app.output_attrs = st->attrs;
    st->app.model_channel = 3;
    st->app.model_width = in_w;
    st->app.model_height = in_h;
    st->app.is_quant = true;
    st->lb.x_pad = 0;
    st->lb.y_pad = 0;
    st->lb.scale = 1.0f;
    return 0;
}

extern "C" {

/* One call of the zoo's post_process: its kept boxes (left, top, right, bottom after its
   clamp and int truncation), scores and classes; returns the count, -1 on failure. */
int zoo_real_frame(const zoo_real_tensor *t, int n_out, int in_w, int in_h, float conf,
                   float nms, int max_out, int32_t *cls, float *score, int32_t *box)
{
    static zoo_real_state st;
    object_detect_result_list res;
    if (zoo_real_fill(&st, t, n_out, in_w, in_h))
        return -1;
    if (post_process(&st.app, st.outs, &st.lb, conf, nms, &res))
        return -1;
    int n = res.count < max_out ? res.count : max_out;
    for (int i = 0; i < n; i++) {
        cls[i] = res.results[i].cls_id;
        score[i] = res.results[i].prop;
        box[4 * i] = res.results[i].box.left;
        box[4 * i + 1] = res.results[i].box.top;
        box[4 * i + 2] = res.results[i].box.right;
        box[4 * i + 3] = res.results[i].box.bottom;
    }
    return n;
}

/* n calls of post_process, the nanoseconds of each into ns; 0 on success */
int zoo_real_loop(const zoo_real_tensor *t, int n_out, int in_w, int in_h, float conf,
                  float nms, long n, long long *ns)
{
    static zoo_real_state st;
    object_detect_result_list res;
    struct timespec a, b;
    if (zoo_real_fill(&st, t, n_out, in_w, in_h))
        return -1;
    for (long k = 0; k < n; k++) {
        clock_gettime(CLOCK_MONOTONIC, &a);
        if (post_process(&st.app, st.outs, &st.lb, conf, nms, &res))
            return -1;
        clock_gettime(CLOCK_MONOTONIC, &b);
        ns[k] = (long long)(b.tv_sec - a.tv_sec) * 1000000000LL + (b.tv_nsec - a.tv_nsec);
    }
    return 0;
}

}
