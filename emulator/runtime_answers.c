/*
 * rknnx emulator, runtime half: the answers table of a model (runtime.h, "the answers").
 *
 * rknn_init fills one table per model, whatever its kind: the emulator's own models from
 * the layout rules here (emu_answers_own), a vendor file from the file (standin.c).  The
 * attribute queries and the native view of the NPU read it below, one way for every kind;
 * where runtimes differ (their words, their statuses, which views follow a chosen shape),
 * the table's rules (emu_rules) say which.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime.h"

/* the emulator's own rules: every behaviour field 0 but the words of its refusals */
const emu_rules emu_rules_own = {
    .lib = "librknnrt",
    .info_only_limited = 1,
    .range_index = "RKNN_QUERY_INPUT_DYNAMIC_RANGE, p_attr->index(%u) >= input_num(%u)!",
    .index_first = 1,
    .out_num = "output_num",
    .unchosen_status = RKNN_ERR_FAIL,
    .unchosen = "%s error, please call rknn_set_input_shape first",
    .unchosen_prefixed = 1,
    .nhwc_dynamic_status = RKNN_ERR_FAIL,
    .nhwc_dynamic = "%s command is invalid for dynamic shapes rknn model!",
    .nhwc_dynamic_prefixed = 1,
    .max_native_warned = 1u << RKNN_QUERY_NATIVE_INPUT_ATTR | 1u << RKNN_QUERY_NATIVE_OUTPUT_ATTR,
    .max_native = "%s: dynamic shape rknn model, it will return max %s native shape!",
};

static const char *const g_query_names[RKNN_QUERY_CMD_MAX] = {
    "RKNN_QUERY_IN_OUT_NUM", "RKNN_QUERY_INPUT_ATTR", "RKNN_QUERY_OUTPUT_ATTR",
    "RKNN_QUERY_PERF_DETAIL", "RKNN_QUERY_PERF_RUN", "RKNN_QUERY_SDK_VERSION",
    "RKNN_QUERY_MEM_SIZE", "RKNN_QUERY_CUSTOM_STRING", "RKNN_QUERY_NATIVE_INPUT_ATTR",
    "RKNN_QUERY_NATIVE_OUTPUT_ATTR", "RKNN_QUERY_NATIVE_NHWC_INPUT_ATTR",
    "RKNN_QUERY_NATIVE_NHWC_OUTPUT_ATTR", "RKNN_QUERY_DEVICE_MEM_INFO",
    "RKNN_QUERY_INPUT_DYNAMIC_RANGE", "RKNN_QUERY_CURRENT_INPUT_ATTR",
    "RKNN_QUERY_CURRENT_OUTPUT_ATTR", "RKNN_QUERY_CURRENT_NATIVE_INPUT_ATTR",
    "RKNN_QUERY_CURRENT_NATIVE_OUTPUT_ATTR",
};

const char *emu_query_name(int cmd)
{
    return cmd >= 0 && cmd < RKNN_QUERY_CMD_MAX ? g_query_names[cmd] : "";
}

/* ---- the table ------------------------------------------------------------------------- */
emu_answers *emu_answers_new(uint32_t n_in, uint32_t n_out, uint32_t n_sets)
{
    emu_answers *an = calloc(1, sizeof *an);
    if (!an)
        return NULL;
    uint32_t rows = n_sets ? n_sets : 1, nio = n_in + n_out;
    an->n_in = n_in;
    an->n_out = n_out;
    an->n_sets = n_sets;
    an->rules = &emu_rules_own;
    an->sets = calloc((size_t)rows * (nio ? nio : 1), sizeof *an->sets);
    an->maxv = calloc(nio ? nio : 1, sizeof *an->maxv);
    if (n_sets)
        an->ranges = calloc((size_t)rows * (n_in ? n_in : 1) * RKNN_MAX_DIMS, sizeof(uint32_t));
    if (!an->sets || !an->maxv || (n_sets && !an->ranges)) {
        emu_answers_free(an);
        return NULL;
    }
    return an;
}

void emu_answers_free(emu_answers *an)
{
    if (!an)
        return;
    free(an->sets);
    free(an->maxv);
    free(an->ranges);
    free(an->user_type);
    free(an);
}

const rknn_tensor_attr *emu_answers_attr(const emu_answers *an, int is_out, uint32_t idx,
                                         int kind, int current, uint32_t set)
{
    uint32_t n = is_out ? an->n_out : an->n_in;
    if (idx >= n || kind < 0 || kind > 2)
        return NULL;
    uint32_t k = is_out ? an->n_in + idx : idx;
    if (!an->n_sets || !current)
        return an->n_sets ? &an->maxv[k].a[kind] : &an->sets[k].a[kind];
    if (set >= an->n_sets)
        return NULL;
    return &an->sets[(uint64_t)set * (an->n_in + an->n_out) + k].a[kind];
}

/* ---- an emulator model's answers: the layout rules ------------------------------------------ */
/* rknn_init's model line for an emulator model */
static void own_model_info(const emu_platform *p, const emu_model *m, emu_answers *an)
{
    const char *npu = strcmp(p->npu_group, "RK3566") == 0 ? "RKNPU lite"
                      : strcmp(p->name, "RK3576") == 0    ? "RKNPU f2"
                                                          : "RKNPU v2";
    char plat[16];
    size_t k = 0;
    for (; p->name[k] && k + 1 < sizeof plat; k++)
        plat[k] = (char)tolower((unsigned char)p->name[k]);
    plat[k] = '\0';
    const emu_io_desc *d = an->n_in ? emu_model_input(m, 0) : NULL;
    const char *layout = !d ? "UNDEFINED" : d->fmt == RKNN_TENSOR_NCHW ? "NCHW"
                         : d->fmt == RKNN_TENSOR_NHWC ? "NHWC" : "UNDEFINED";
    snprintf(an->model_info, sizeof an->model_info, "version: 6, toolkit version: "
             "rknnx-emulator-%s, target: %s, target platform: %s, framework name: rknnx, "
             "framework layout: %s, model inference type: %s", EMU_VERSION_STRING, npu, plat,
             layout, an->n_sets ? "dynamic_shape" : "static_shape");
}

emu_answers *emu_answers_own(const emu_platform *p, const emu_model *m)
{
    uint32_t n_in = emu_model_n_inputs(m), n_out = emu_model_n_outputs(m);
    uint32_t sets = emu_model_n_shape_sets(m), rows = sets ? sets : 1, nio = n_in + n_out;
    emu_answers *an = emu_answers_new(n_in, n_out, sets);
    if (!an)
        return NULL;
    for (int cmd = 0; cmd < RKNN_QUERY_CMD_MAX; cmd++)
        if (emu_platform_supports_query(p, cmd))
            an->queries |= 1u << cmd;
    an->neg_cmd_range = p->family == EMU_FAM_RV1106 || p->family == EMU_FAM_RK2118;
    an->weight_size = emu_model_weight_size(m);
    an->internal_size = emu_model_internal_size(m);
    /* A dynamic-shape model's plain (and native) attributes describe the largest shape of
       the tensor, so that memory sized from them (size_with_stride for inputs, size or
       n_elems for outputs) holds the tensor at every shape set: per tensor and view, the
       set whose attribute has the largest size_with_stride, then the largest n_elems; the
       first such set on a tie.  Each tensor is sized on its own, so on a multi-input model
       the inputs' dims may come from different sets.  The CURRENT_* queries describe the
       chosen set. */
    for (uint32_t s = 0; s < rows; s++) {
        for (uint32_t k = 0; k < nio; k++) {
            int is_out = k >= n_in;
            uint32_t idx = is_out ? k - n_in : k, nd;
            const emu_io_desc *d = is_out ? emu_model_output(m, idx) : emu_model_input(m, idx);
            const uint32_t *dims = is_out ? emu_model_output_dims(m, s, idx, &nd)
                                          : emu_model_input_dims(m, s, idx, &nd);
            if (!d || !dims) {
                emu_answers_free(an);
                return NULL;
            }
            emu_attr_views *v = &an->sets[(uint64_t)s * nio + k], *best = &an->maxv[k];
            for (int kind = 0; kind < 3; kind++) {
                rknn_tensor_attr *t = &v->a[kind], *b = &best->a[kind];
                emu_fill_attr(p, d, dims, is_out, kind, idx, t);
                if (s == 0 || t->size_with_stride > b->size_with_stride ||
                    (t->size_with_stride == b->size_with_stride && t->n_elems > b->n_elems))
                    *b = *t;
            }
            if (sets && !is_out)
                memcpy(an->ranges + ((uint64_t)s * n_in + idx) * RKNN_MAX_DIMS, dims,
                       nd * sizeof(uint32_t));
        }
    }
    own_model_info(p, m, an);
    return an;
}

/* ---- the attribute queries ---------------------------------------------------------------- */
static void set_dims(rknn_tensor_attr *a, const uint32_t *d, uint32_t n, size_t es)
{
    uint64_t e = 1;
    for (uint32_t i = 0; i < n; i++)
        e *= d[i];
    a->n_dims = n;
    memcpy(a->dims, d, n * sizeof(uint32_t));
    a->fmt = RKNN_TENSOR_NC1HWC2;
    a->n_elems = (uint32_t)e;
    a->size = (uint32_t)(a->n_elems * es);
}

void emu_answers_played_native(const emu_ctx *c, uint32_t idx, int cur, rknn_tensor_attr *a)
{
    if (!c->shared->answers->rules->played_native || !c->played ||
        !(c->played->quirks & EMU_ANSWER_FLAT_HW) || a->fmt != RKNN_TENSOR_NC1HWC2 ||
        a->n_dims != 5 || !a->dims[4] || !a->n_elems)
        return;
    const rknn_tensor_attr *v = emu_answers_attr(c->shared->answers, 1, idx, EMU_ATTR_NORMAL,
                                                 cur, c->shape_set);
    if (!v || v->n_dims != 4 || (v->fmt != RKNN_TENSOR_NCHW && v->fmt != RKNN_TENSOR_NHWC))
        return;
    /* librknnrt 1.4.0: H and W flattened and only the C1 blocks the channels fill,
       [1,1,1,16384,16] (262,144 bytes) for [1,8,128,128] where 1.6.0 answers [1,2,128,128,16]
       (tk2_2c2d03d multiple_input_demo RK3588, its recorded answer): the same bytes as
       [N,C1,H,W,C2] with unpadded rows */
    uint32_t N, C, H, W, c2 = a->dims[4];
    emu_nchw_of(v->dims, v->fmt, &N, &C, &H, &W);
    uint64_t es = a->size / a->n_elems;
    uint32_t d[5] = {N, (C + c2 - 1) / c2, 1, H * W, c2};
    set_dims(a, d, 5, es);
    a->size_with_stride = a->size;
}

/* CURRENT_* on a static model, in the words of the glibc runtimes (1.5.2 and 1.6.0 alike) */
static int refuse_current_static(int cmd)
{
    if (cmd == RKNN_QUERY_CURRENT_INPUT_ATTR || cmd == RKNN_QUERY_CURRENT_OUTPUT_ATTR) {
        EMU_ERR(NULL, "query RKNN_QUERY_INPUT_DYNAMIC_RANGE error, rknn model is static shape "
                "type, please export rknn with dynamic_shapes");
        return RKNN_ERR_MODEL_INVALID;
    }
    if (cmd == RKNN_QUERY_CURRENT_NATIVE_INPUT_ATTR)
        EMU_ERR(NULL, "query %s error, rknn model is static shape type, please export rknn "
                "with dynamic_shapes", g_query_names[cmd]);
    EMU_ERR(NULL, "query %s error, please call rknn_set_input_shape first", g_query_names[cmd]);
    return RKNN_ERR_CTX_INVALID;   /* -7, as 1.5.2 and 1.6.0 return it */
}

static int refuse_index(const emu_rules *r, int cmd, int is_out, uint32_t idx, uint32_t n)
{
    int named = is_out ? RKNN_QUERY_OUTPUT_ATTR : RKNN_QUERY_INPUT_ATTR;
    EMU_ERR("rknn_query", "%s, p_attr->index(%u) >= %s(%u)!",
            g_query_names[r->index_by_dir ? named : cmd], idx, is_out ? r->out_num : "input_num",
            n);
    return RKNN_ERR_PARAM_INVALID;
}

/* Container 1 (toolkit 1.1.x): INPUT_ATTR / OUTPUT_ATTR report the user's type the file
   names (rknnx_file_tensor.attr_type), with size and size_with_stride counted in it, over
   the int8 tensor the other views and the stand-in model keep (rknpu2 c28b080
   multiple_input_demo, runtimes 1.4.0, 1.5.2 and 1.6.0: the RK3588 file's output 524288
   bytes, stride size 1048576, its native buffer 262144 bytes) */
static void user_type_view(rknn_tensor_type ut, rknn_tensor_attr *n)
{
    size_t es = emu_type_size(n->type), us = emu_type_size(ut);
    if (ut == n->type || !es || !us)
        return;
    n->type = ut;
    n->size = (uint32_t)((uint64_t)n->n_elems * us);
    n->size_with_stride = (uint32_t)((uint64_t)n->size_with_stride / es * us);
}


int emu_answers_query_attr(emu_ctx *c, int cmd, rknn_tensor_attr *a)
{
    static const char fn[] = "rknn_query";
    const emu_answers *an = c->shared->answers;
    const emu_rules *r = an->rules;
    int is_out = 0, kind = EMU_ATTR_NORMAL, current = 0;
    switch (cmd) {
    case RKNN_QUERY_OUTPUT_ATTR: is_out = 1; break;
    case RKNN_QUERY_NATIVE_INPUT_ATTR: kind = EMU_ATTR_NATIVE; break;
    case RKNN_QUERY_NATIVE_OUTPUT_ATTR: is_out = 1; kind = EMU_ATTR_NATIVE; break;
    case RKNN_QUERY_NATIVE_NHWC_INPUT_ATTR: kind = EMU_ATTR_NATIVE_NHWC; break;
    case RKNN_QUERY_NATIVE_NHWC_OUTPUT_ATTR: is_out = 1; kind = EMU_ATTR_NATIVE_NHWC; break;
    case RKNN_QUERY_CURRENT_INPUT_ATTR: current = 1; break;
    case RKNN_QUERY_CURRENT_OUTPUT_ATTR: current = 1; is_out = 1; break;
    case RKNN_QUERY_CURRENT_NATIVE_INPUT_ATTR: current = 1; kind = EMU_ATTR_NATIVE; break;
    case RKNN_QUERY_CURRENT_NATIVE_OUTPUT_ATTR: current = 1; is_out = 1; kind = EMU_ATTR_NATIVE; break;
    default: break;
    }
    uint32_t idx = a->index, n = is_out ? an->n_out : an->n_in;
    if (r->index_first && idx >= n)
        return refuse_index(r, cmd, is_out, idx, n);
    if (current && !an->n_sets && r->refuse_current_static)
        return refuse_current_static(cmd);
    if (current && an->n_sets && !c->shapes_chosen) {
        /* a dynamic-shape model has no current shape until one is set */
        int named = r->unchosen_as_input && cmd == RKNN_QUERY_CURRENT_OUTPUT_ATTR
                        ? RKNN_QUERY_CURRENT_INPUT_ATTR : cmd;
        emu_log(EMU_LOG_E, r->unchosen_prefixed ? fn : NULL, r->unchosen, g_query_names[named]);
        return r->unchosen_status;
    }
    if (an->n_sets && cmd == RKNN_QUERY_NATIVE_NHWC_OUTPUT_ATTR) {
        emu_log(EMU_LOG_E, r->nhwc_dynamic_prefixed ? fn : NULL, r->nhwc_dynamic,
                g_query_names[cmd]);
        return r->nhwc_dynamic_status;
    }
    if (an->n_sets && (r->max_native_warned >> cmd & 1u))
        emu_log(EMU_LOG_W, NULL, r->max_native,
                g_query_names[is_out ? RKNN_QUERY_NATIVE_OUTPUT_ATTR : RKNN_QUERY_NATIVE_INPUT_ATTR],
                is_out ? "output" : "input");
    if (idx >= n)
        return refuse_index(r, cmd, is_out, idx, n);
    /* which views follow the chosen shape (the rest stay the largest) */
    int cur = current || (c->shapes_chosen && kind == EMU_ATTR_NORMAL && r->plain_follows) ||
              (c->shapes_chosen && is_out && r->native_output_follows);
    const rknn_tensor_attr *v = emu_answers_attr(an, is_out, idx, kind, cur, c->shape_set);
    if (!v)
        return RKNN_ERR_PARAM_INVALID;
    *a = *v;
    if (kind == EMU_ATTR_NORMAL && an->user_type && an->user_type[is_out ? an->n_in + idx : idx])
        user_type_view((rknn_tensor_type)(an->user_type[is_out ? an->n_in + idx : idx] - 1), a);
    if (!is_out && kind != EMU_ATTR_NORMAL && r->native_follows_uint8 && c->in_type &&
        c->in_type[idx] == 1 + RKNN_TENSOR_UINT8 &&
        (v->type == RKNN_TENSOR_INT8 || v->type == RKNN_TENSOR_INT16) &&
        v->n_dims == 4 && v->fmt == RKNN_TENSOR_NHWC) {
        /* 1.5.2 and 1.6.0, every chip: once an int8 image input was set from UINT8 data (the
           NPU then takes the uint8 bytes), its native views report UINT8 at the current
           shape; an int16 one (w16a16i_dfp) likewise, in bytes: 1.6.0, cls_img, tiny and
           multi_io built so, RK3588 and RK3566 (tests/data/vendor_built_answers.json) */
        const rknn_tensor_attr *cu = emu_answers_attr(an, 0, idx, kind, an->n_sets != 0,
                                                      c->shape_set);
        if (cu)
            *a = *cu;
        if (a->type == RKNN_TENSOR_INT16) {
            a->size /= 2;
            a->size_with_stride /= 2;
        }
        a->type = RKNN_TENSOR_UINT8;
    }
    if (kind == EMU_ATTR_NORMAL && r->int16_type10 && a->type == RKNN_TENSOR_INT16) {
        /* librknnrt 1.5.2 knows no INT16 tensor: INPUT_ATTR / OUTPUT_ATTR of a w16a16i_dfp
           file report type 10, the native views INT16 (cls_img, tiny, multi_io built so,
           RK3588 and RK3566).  It also reports size = size_with_stride = -n_elems as a u32
           (cls_img: 4294964224 for 3072 elements), which the stand-in does not play: a
           client that believes it allocates 4 GiB per tensor (the recording's own probe
           crashed there), and type 10 already tells a client the tensor is not one it
           can use (docs/standin.md) */
        a->type = (rknn_tensor_type)10;
    }
    if (is_out && kind == EMU_ATTR_NATIVE)
        emu_answers_played_native(c, idx, cur, a);
    if (r->nhwc_pad_warned && cmd == RKNN_QUERY_NATIVE_NHWC_OUTPUT_ATTR &&
        a->size_with_stride > a->size)
        EMU_WARN(fn, "RKNN_QUERY_NATIVE_NHWC_OUTPUT_ATTR, output memory need alloc %u",
                 a->size_with_stride);
    return RKNN_SUCC;
}
