/*
 * rknnx emulator, runtime half: a vendor .rknn file as a kind of model (docs/standin.md
 * states the rules below with the file and runtime each one was read from).
 *
 * rknn_init on a file that starts "RKNN" reads it with the project's reader (rknnfile/, API
 * include/rknnx/rknn_file.h) and builds two things: a stand-in model (emu_model.h,
 * model_standin.c), through which the general and zero-copy flows work as for the
 * emulator's own models, and the answers table (runtime.h) of the vendor runtime the
 * library plays for the file: every attribute view per shape set, the memory sizes, the
 * init lines, and the rules of its words and statuses (g_rules_glibc, g_rules_mini).  The
 * runtime played is the library's (1.5.2 for librknnrt-1.5.2.so, else 2.x) and, on the
 * RV1106 family and RK2118, the mini runtime.  This file adds the kind at load
 * (emu_kind_add); nothing else in the runtime half names it.
 *
 * What the file holds (rknn_file.h): names, the INPUT_ATTR / OUTPUT_ATTR view (dims, fmt,
 * type, quantization), the compiler's native shape (NC1HWC2 for most outputs), the inputs'
 * mean/std (the conversion of inputs applies them: norm_of below).  What the
 * vendor runtime computes from them and the chip, as its answers for the shared corpus show
 * (glibc 1.5.2 / 1.6.0 on RK3566 and RK3588, the mini runtime 2.3.2 on RV1106 / RV1103 /
 * RK2118); C2 below is the chip's channel block for the type (RK3566: 8 for 1-byte types,
 * 4 for 2-byte ones; RK3588 and the rest: 16 and 8):
 *
 *   inputs, 4-D NHWC   w_stride = align(W, C2) (the mini runtime: align(W, 16));
 *                      size_with_stride = N*H*w_stride*C*bytes; NATIVE and NATIVE_NHWC the same
 *   inputs, other      w_stride 0, size_with_stride = size (1.5.2's plain view: align(size, 16))
 *   outputs, 4-D       OUTPUT_ATTR NCHW, size_with_stride = N*ceil(C/C2)*H*align(W,C2)*C2*bytes
 *                      (mini: = size); NATIVE = the file's NC1HWC2 shape, size = its bytes
 *                      (mini: the compiler's planned bytes; w_stride = W);
 *                      NATIVE_NHWC [N,H,W,C'] with C' = align(C, C2) on RK3566 when the
 *                      native form is NC1HWC2, else C; size_with_stride = align(size, C2)
 *                      (mini: the native shape's bytes)
 *   outputs, other     size_with_stride = size; NATIVE_NHWC align(size, C2) (mini: size)
 *   dynamic models     plain views at the largest set until a shape is chosen, then the
 *                      current one; NATIVE_* always the largest; NATIVE_NHWC_OUTPUT refused
 */
#include <math.h>
#include <stdatomic.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rknn_file.h"
#include "runtime.h"

enum emu_sd_mode {
    EMU_SD_1_5 = 0,   /* librknnrt 1.5.2 (glibc) */
    EMU_SD_2X = 1,    /* librknnrt 2.x on RK35xx, judged by 1.6.0 */
    EMU_SD_MINI = 2   /* librknnmrt, the RV1106 / RV1103 / RK2118 mini runtime */
};

#define EMU_SD_UNKNOWN_QNT 1u
#define EMU_SD_UNKNOWN_NATIVE 2u

static const char g_perf_text[] = "Total Internal Memory Size: 0KB\nTotal Weight Memory Size: 0KB\n";

/* How the glibc runtimes (1.5.2, 1.6.0) answer for a file (their recorded answers) */
static const emu_rules g_rules_glibc = {
    .lib = "librknnrt",
    /* 1.5.2 / 1.6.0 on RK3588: masks beyond 0..7 (RKNN_NPU_CORE_ALL included) */
    .core_mask_fallback = 1,
    /* 1.5.2 / 1.6.0: fewer inputs (or none) are taken with a warning, an entry whose index
       is out of range ignored; outputs_get with no outputs taken (1.6.0 crashes:
       docs/standin.md) */
    .lenient_io = 1,
    /* MEM_SIZE and a dynamic model's INPUT_DYNAMIC_RANGE take a short buffer (the vendor
       answers them with status 0; MEM_SIZE then leaves total_dma_allocated_size 0) */
    .short_ok = 1u << RKNN_QUERY_MEM_SIZE | 1u << RKNN_QUERY_INPUT_DYNAMIC_RANGE,
    .perf_text = g_perf_text,
    .mem_planned = 1,
    .range_static_first = 1,
    .range_index = "RKNN_QUERY_INPUT_DYNAMIC_RANGE, rknn_input_range->index(%u) >= model "
                   "dynamic shape number(%u)!",
    .index_by_dir = 1,
    .out_num = "ouput_num",
    .refuse_current_static = 1,
    .unchosen_status = RKNN_ERR_CTX_INVALID,
    .unchosen = "query %s error, please call rknn_set_input_shape first",
    .unchosen_as_input = 1,
    .nhwc_dynamic_status = RKNN_ERR_PARAM_INVALID,
    .nhwc_dynamic = "query %s failed, command is invalid for dynamic shapes rknn model!",
    .max_native_warned = 1u << RKNN_QUERY_NATIVE_INPUT_ATTR |
                         1u << RKNN_QUERY_NATIVE_NHWC_INPUT_ATTR |
                         1u << RKNN_QUERY_NATIVE_OUTPUT_ATTR,
    .max_native = "query %s, it will return max %s native shape!",
    .nhwc_pad_warned = 1,
    /* plain views follow the chosen shape once there is one; NATIVE_* stay the largest
       but for NATIVE_OUTPUT_ATTR (dynamic_nogap_rk3566, _rk3588) */
    .plain_follows = 1,
    .native_output_follows = 1,
    .native_follows_uint8 = 1,
    .max_until_chosen = 1,
    .played_native = 1,
#ifdef EMU_RUNTIME_1_5
    .int16_type10 = 1,
#endif
};

/* ... and the mini runtime (librknnmrt 2.3.2) */
static const emu_rules g_rules_mini = {
    .lib = "librknnmrt",
    .version_fixed = 1,
    .core_mask_fallback = 1,
    .lenient_io = 1,
    .fp16_needs_mem = 1,
    .short_ok = 1u << RKNN_QUERY_MEM_SIZE | 1u << RKNN_QUERY_INPUT_DYNAMIC_RANGE,
    .perf_text = g_perf_text,
    .mem_planned = 1,
    .range_static_first = 1,
    .range_index = "RKNN_QUERY_INPUT_DYNAMIC_RANGE, rknn_input_range->index(%u) >= model "
                   "dynamic shape number(%u)!",
    .out_num = "output_num",
    .refuse_current_static = 1,
    .unchosen_status = RKNN_ERR_CTX_INVALID,
    .unchosen = "query %s error, please call rknn_set_input_shape first",
    .unchosen_as_input = 1,
    .nhwc_dynamic_status = RKNN_ERR_PARAM_INVALID,
    .nhwc_dynamic = "query %s failed, command is invalid for dynamic shapes rknn model!",
    .max_native_warned = 1u << RKNN_QUERY_NATIVE_INPUT_ATTR |
                         1u << RKNN_QUERY_NATIVE_NHWC_INPUT_ATTR |
                         1u << RKNN_QUERY_NATIVE_OUTPUT_ATTR,
    .max_native = "query %s, it will return max %s native shape!",
    .nhwc_pad_warned = 1,
    .plain_follows = 1,
    .max_until_chosen = 1,
    .played_native = 1,
};

/* the commands a runtime answers: the mini runtime no PERF_* and nothing past
   DEVICE_MEM_INFO, the glibc runtimes all but DEVICE_MEM_INFO */
static uint32_t queries_of(int mode)
{
    uint32_t q = 0;
    for (int cmd = 0; cmd < RKNN_QUERY_CMD_MAX; cmd++) {
        int no = mode == EMU_SD_MINI ? (cmd == RKNN_QUERY_PERF_DETAIL || cmd == RKNN_QUERY_PERF_RUN ||
                                        cmd >= RKNN_QUERY_INPUT_DYNAMIC_RANGE)
                                     : cmd == RKNN_QUERY_DEVICE_MEM_INFO;
        if (!no)
            q |= 1u << cmd;
    }
    return q;
}

static uint64_t align_up(uint64_t v, uint64_t a) { return a ? (v + a - 1) / a * a : v; }

static uint64_t prod(const uint32_t *d, uint32_t n)
{
    uint64_t p = 1;
    for (uint32_t i = 0; i < n; i++)
        p *= d[i];
    return p;
}

static int standin_sniff(const void *bytes, size_t n) { return rknnx_file_sniff(bytes, n) != 0; }

static int sd_mode(const emu_platform *p)
{
#ifdef EMU_RUNTIME_1_5
    (void)p;
    return EMU_SD_1_5;
#else
    return (p->family == EMU_FAM_RV1106 || p->family == EMU_FAM_RK2118) ? EMU_SD_MINI : EMU_SD_2X;
#endif
}

/* the platform as the glibc runtimes name it in their logs */
static const char *vendor_platform_name(const emu_platform *p)
{
    return strcmp(p->npu_group, "RK3566") == 0 ? "RK3566/RK3568" : p->name;
}

/* ---- the three attribute views of one tensor at one set ---------------------------------- */
typedef struct sd_tensor {
    const rknnx_file_tensor *t;
    int is_out;
    uint32_t n_dims;
    uint32_t dims[RKNN_MAX_DIMS];        /* INPUT_ATTR / OUTPUT_ATTR view at this set */
    int32_t fmt;
    int native_known;
    int32_t native_fmt;
    uint32_t native_n_dims;
    uint32_t native_dims[RKNN_MAX_DIMS]; /* at this set */
    uint32_t planned;
} sd_tensor;

static void attr_common(const sd_tensor *x, uint32_t idx, rknn_tensor_attr *a)
{
    const rknnx_file_tensor *t = x->t;
    memset(a, 0, sizeof *a);
    a->index = idx;
    snprintf(a->name, sizeof a->name, "%s", t->name);
    a->type = (rknn_tensor_type)t->type;
    if (t->known & RKNNX_FILE_KNOWN_QNT) {
        a->qnt_type = (rknn_tensor_qnt_type)t->qnt_type;
        a->zp = t->zp;
        a->scale = t->scale;
    } else {
        a->qnt_type = RKNN_TENSOR_QNT_AFFINE_ASYMMETRIC;   /* not decoded: zp 0, scale 0 */
    }
}

static void set_dims(rknn_tensor_attr *a, const uint32_t *d, uint32_t n, int32_t fmt, size_t es)
{
    a->n_dims = n;
    memcpy(a->dims, d, n * sizeof(uint32_t));
    a->fmt = (rknn_tensor_format)fmt;
    a->n_elems = (uint32_t)prod(d, n);
    a->size = (uint32_t)(a->n_elems * es);
}

static void fill_views(int mode, const emu_platform *p, const sd_tensor *x, uint32_t idx,
                       emu_attr_views *v)
{
    rknn_tensor_type ty = (rknn_tensor_type)x->t->type;
    size_t es = emu_type_size(ty);
    uint32_t c2 = emu_c2(p, ty);
    int lite = strcmp(p->npu_group, "RK3566") == 0;
    int img = x->n_dims == 4 && (x->fmt == RKNN_TENSOR_NHWC || x->fmt == RKNN_TENSOR_NCHW);
    rknn_tensor_attr *n = &v->a[EMU_ATTR_NORMAL], *na = &v->a[EMU_ATTR_NATIVE],
                     *nh = &v->a[EMU_ATTR_NATIVE_NHWC];
    for (int k = 0; k < 3; k++)
        attr_common(x, idx, &v->a[k]);
    set_dims(n, x->dims, x->n_dims, x->fmt, es);
    if (!x->is_out) {
        if (img && x->fmt == RKNN_TENSOR_NHWC) {
            uint32_t N = x->dims[0], H = x->dims[1], W = x->dims[2], C = x->dims[3];
            uint64_t ws = align_up(W, mode == EMU_SD_MINI ? 16 : (c2 ? c2 : 16));
            n->w_stride = (uint32_t)ws;
            n->size_with_stride = (uint32_t)((uint64_t)N * H * ws * C * es);
        } else if (img) {
            uint32_t N = x->dims[0], C = x->dims[1], H = x->dims[2], W = x->dims[3];
            uint64_t ws = align_up(W, c2 ? c2 : 16);
            n->w_stride = (uint32_t)ws;
            n->size_with_stride = (uint32_t)((uint64_t)N * C * H * ws * es);
        } else {
            n->size_with_stride = mode == EMU_SD_1_5 ? (uint32_t)align_up(n->size, 16) : n->size;
        }
        *na = *n;
        if (!img)
            na->size_with_stride = na->size;
        if (x->native_known && x->native_fmt == RKNN_TENSOR_NC1HWC2 && x->native_n_dims == 5) {
            set_dims(na, x->native_dims, 5, RKNN_TENSOR_NC1HWC2, es);
            na->w_stride = x->native_dims[3];
            na->size_with_stride = na->size;
        }
        *nh = *n;
        if (!img)
            nh->size_with_stride = nh->size;
        return;
    }
    /* outputs */
    if (img) {
        uint32_t N, C, H, W;
        emu_nchw_of(x->dims, (rknn_tensor_format)x->fmt, &N, &C, &H, &W);
        if (mode == EMU_SD_MINI || !c2)
            n->size_with_stride = n->size;
        else
            n->size_with_stride = (uint32_t)((uint64_t)N * ((C + c2 - 1) / c2) * H *
                                             align_up(W, c2) * c2 * es);
        /* native */
        int blocked;
        if (x->native_known && x->native_n_dims == 5 && x->native_fmt == RKNN_TENSOR_NC1HWC2) {
            set_dims(na, x->native_dims, 5, RKNN_TENSOR_NC1HWC2, es);
            blocked = 1;
        } else if (x->native_known) {
            set_dims(na, x->dims, x->n_dims, x->fmt, es);
            blocked = 0;
        } else {
            uint32_t cb = mode == EMU_SD_MINI ? (es == 1 ? 16 : 8) : c2;
            uint32_t nd[5] = {N, cb ? (C + cb - 1) / cb : 1, H, W, cb ? cb : C};
            set_dims(na, nd, 5, RKNN_TENSOR_NC1HWC2, es);
            blocked = 1;
        }
        uint32_t native_bytes = na->size;
        if (mode == EMU_SD_MINI && blocked) {
            if (x->planned > na->size)
                na->size = x->planned;
            na->w_stride = na->dims[3];
        }
        na->size_with_stride = na->size;
        /* NHWC view */
        /* an int16 output on RK3566 keeps its C, its stride size the bytes rounded up to 4
           (1.5.2 and 1.6.0, cls_img built with w16a16i_dfp: [1,32,32,5] 10240 / 10240,
           [1,1,1,5] 10 / 12) */
        int keep_c = lite && ty == RKNN_TENSOR_INT16;
        uint32_t Cn = (lite && blocked && c2 && !keep_c) ? (uint32_t)align_up(C, c2) : C;
        uint32_t hd[4] = {N, H, W, Cn};
        set_dims(nh, hd, 4, RKNN_TENSOR_NHWC, es);
        if (mode == EMU_SD_MINI)
            nh->size_with_stride = blocked ? native_bytes : nh->size;
        else if (keep_c)
            nh->size_with_stride = (uint32_t)align_up(nh->size, 4);
        else
            nh->size_with_stride = (uint32_t)align_up(nh->size, c2 ? c2 : 1);
        return;
    }
    n->size_with_stride = n->size;
    *na = *n;
    if (mode == EMU_SD_MINI && x->planned > na->size) {
        na->size = x->planned;
        na->size_with_stride = x->planned;
    }
    *nh = *n;
    nh->size_with_stride = mode == EMU_SD_MINI ? nh->size : (uint32_t)align_up(nh->size, c2 ? c2 : 1);
}

/* The INPUT_ATTR view of a tensor the reader left undecoded (container 0x1004): a 4-D
   image input of 1, 3 or 4 channels is NHWC (as every such runtime answer shows), other
   4-D tensors NCHW, the rest UNDEFINED. */
static void view_of(const rknnx_file_tensor *t, int is_out, uint32_t *n, uint32_t *d, int32_t *fmt)
{
    if (t->known & RKNNX_FILE_KNOWN_ATTR && t->fmt != RKNNX_FILE_UNKNOWN) {
        *n = t->n_dims;
        memcpy(d, t->dims, t->n_dims * sizeof(uint32_t));
        *fmt = t->fmt;
        return;
    }
    *n = t->n_shape;
    memcpy(d, t->shape, t->n_shape * sizeof(uint32_t));
    *fmt = RKNN_TENSOR_UNDEFINED;
    if (t->n_shape == 4) {
        uint32_t C = t->shape[1];
        if (!is_out && (C == 1 || C == 3 || C == 4)) {
            d[1] = t->shape[2];
            d[2] = t->shape[3];
            d[3] = C;
            *fmt = RKNN_TENSOR_NHWC;
        } else {
            *fmt = RKNN_TENSOR_NCHW;
        }
    }
}

static void desc_of(const emu_attr_views *v, emu_io_desc *d)
{
    const rknn_tensor_attr *a = &v->a[EMU_ATTR_NORMAL];
    memset(d, 0, sizeof *d);
    memcpy(d->name, a->name, sizeof d->name);
    d->n_dims = a->n_dims;
    memcpy(d->dims, a->dims, sizeof d->dims);
    d->fmt = a->fmt;
    d->type = a->type;
    d->qnt_type = a->qnt_type;
    d->zp = a->zp;
    d->scale = a->scale;
    d->vendor_rules = 1;
}

/* The mean/std the vendor runtime applies to an input, as the conversion takes them
   (runtime_layout.c, conv_one: x = (x - mean[c]) / std[c], one entry per channel, or one
   entry for every channel when n_norm is 1).  The file lists them raw (rknn_file.h): a list
   of 1 entry stands for every channel and is broadcast, the others must have one entry per
   channel (an image's C; the last axis of any other input, the conversion's channel there).
   The vendor normalizes a float16 input with them on the CPU (fp16_net_rk3588/rk3566, 1.5.2
   and 1.6.0: docs/abi-notes.md, "NPU-side bytes"); an int8 image's uint8 bytes still go to
   the NPU raw (emu_npu_pack_input): the NPU normalizes those itself. */
static void norm_of(const rknnx_file_tensor *t, emu_io_desc *d)
{
    if (!(t->known & RKNNX_FILE_KNOWN_NORM) || d->n_dims == 0)
        return;   /* the file does not say: nothing is applied, as before the reader read it */
    uint32_t N, C = d->dims[d->n_dims - 1], H, W;
    if (emu_desc_is_image(d->n_dims, d->fmt))
        emu_nchw_of(d->dims, d->fmt, &N, &C, &H, &W);
    /* lengths that fit neither 1 nor the channel count (3 entries for a 1-channel input):
       which entry goes with which channel is not known, so none is applied (n_norm 0) */
    if (C == 0 || (t->n_mean != 1 && t->n_mean != C) || (t->n_std != 1 && t->n_std != C))
        return;
    uint32_t n = C;
    if (C > RKNN_MAX_NUM_CHANNEL) {
        /* more channels than emu_io_desc holds (RKNN_MAX_NUM_CHANNEL): one entry for every
           channel still fits (n_norm 1), a list per channel does not (n_norm 0) */
        if (t->n_mean != 1 || t->n_std != 1)
            return;
        n = 1;
    }
    for (uint32_t c = 0; c < n; c++) {
        float mean = t->mean[t->n_mean == 1 ? 0 : c], std = t->std[t->n_std == 1 ? 0 : c];
        /* a std of 0 or a value that is not finite would turn every input into inf/NaN:
           not a normalization the runtime could mean; none is applied */
        if (!isfinite(mean) || !isfinite(std) || std == 0.0f)
            return;
        d->mean[c] = mean;
        d->std[c] = std;
    }
    d->n_norm = n;
}

static int refuse(int mode, int status_glibc, const char *line)
{
    if (line)
        EMU_ERR(NULL, "%s", line);
    if (mode != EMU_SD_MINI) {
        EMU_ERR(NULL, "Import rknn model failed!");
        EMU_ERR("rknn_init", "load model failed!");
        return status_glibc;
    }
    return RKNN_ERR_FAIL;
}

/* the kind's open (emu_kind): the stand-in model and the answers of the runtime played */
static int standin_open(const void *bytes, size_t nbytes, const emu_platform **pp, int chosen,
                        emu_model **model, emu_answers **out)
{
    const emu_platform *p = *pp;
    *out = NULL;
    *model = NULL;
    int mode = sd_mode(p);
    char line[256];
    if (rknnx_file_sniff(bytes, nbytes) == 2) {
        EMU_ERR(NULL, "this is an encrypted RKNN model: the emulator cannot read it");
        return mode == EMU_SD_MINI ? RKNN_ERR_FAIL : RKNN_ERR_MODEL_INVALID;
    }
    rknnx_file_model *f = NULL;
    rknnx_file_error err;
    int rc = rknnx_file_read(bytes, nbytes, &f, &err);
    if (rc != RKNNX_FILE_OK) {
        /* the runtimes' words for a file that is not whole */
        if (mode == EMU_SD_MINI) {
            EMU_ERR(NULL, "invalid rknn model size: %zu", nbytes);
        } else {
            /* 1.5.2 and 1.6.0 name the failed check first (E, as in their answers for the
               truncated files); 2.x boards show the two lines only (L rknn-toolkit2 #405) */
            emu_log(mode == EMU_SD_1_5 ? EMU_LOG_E : EMU_LOG_D, NULL, "parseRKNN: %s (%s)",
                    err.message, err.check);
            /* the recorded 1.5.2/1.6.0 wording (2.3.x board logs spell it "fromat":
               docs/abi-notes.md, Board facts) */
            EMU_ERR(NULL, "parseRKNN from buffer: Invalid RKNN format!");
            EMU_ERR("rknn_init", "load model failed!");
        }
        return rc == RKNNX_FILE_E_NOMEM ? RKNN_ERR_MALLOC_FAIL
                                         : (mode == EMU_SD_MINI ? RKNN_ERR_FAIL : RKNN_ERR_MODEL_INVALID);
    }
    /* no chip chosen: the file's own, and that chip's runtime (the mini runtime of RV1106) */
    p = *pp = emu_platform_for_model(p, chosen, f->chip[0] ? f->chip : NULL);
    mode = sd_mode(p);
    emu_answers *sd = NULL;
    emu_io_desc *ins = NULL, *outs = NULL;
    uint32_t *in_dims = NULL, *out_dims = NULL;
    uint64_t cv = f->container_version;
    /* the container version each runtime reads (docs/standin.md): 1.5.2 and 2.x 1, 2 and 6,
       the mini runtime 0x1004 only */
    if (mode == EMU_SD_MINI && cv != RKNNX_FILE_CONTAINER_V1004) {
        EMU_ERR(NULL, "incompatible model version: %llu", (unsigned long long)cv);
        rc = RKNN_ERR_FAIL;
        goto done;
    }
    if (mode != EMU_SD_MINI && cv == RKNNX_FILE_CONTAINER_V1004) {
        EMU_ERR(NULL, "Verify ModelBuffer failed!");
        EMU_ERR(NULL, "Invalid RKNN format");
        rc = refuse(mode, RKNN_ERR_MODEL_INVALID, NULL);
        goto done;
    }
    if (mode == EMU_SD_2X && cv == RKNNX_FILE_CONTAINER_V1) {
        /* librknnrt 1.4.0, 1.5.2 and 1.6.0 load the container-1 files of rknpu2 c28b080
           (toolkit 1.1), each on its own chip; no 2.x runtime on record was run on one: the
           2.x stand-in reads it as they do, and says once that a board's 2.x may not */
        static atomic_int said;
        if (emu_log_enabled(EMU_LOG_W) && !atomic_exchange(&said, 1))
            fprintf(stderr, "W rknnx: a container version 1 file (rknn-toolkit2 1.1): "
                    "librknnrt 1.4.0 to 1.6.0 load such files, no 2.x runtime on record was run "
                    "on one, so whether a board's 2.x loads it is not known; rknn-toolkit2 1.3 "
                    "and later write versions 2 and 6 (docs/standin.md)\n");
    }
    if (mode == EMU_SD_2X && cv != RKNNX_FILE_CONTAINER_V6 && cv != RKNNX_FILE_CONTAINER_V2 &&
        cv != RKNNX_FILE_CONTAINER_V1) {
        snprintf(line, sizeof line, "Invalid RKNN model version %llu", (unsigned long long)cv);
        EMU_ERR(NULL, "%s", line);
        EMU_ERR("rknn_init", "load model failed!");
        rc = RKNN_ERR_MODEL_INVALID;
        goto done;
    }
    const emu_platform *fp = f->chip[0] ? emu_platform_find(f->chip) : NULL;
    if (!fp || strcmp(fp->npu_group, p->npu_group) != 0) {
        if (mode == EMU_SD_MINI) {
            EMU_ERR(NULL, "incompatible model version: %llu", (unsigned long long)cv);
            rc = RKNN_ERR_FAIL;
        } else {
            EMU_ERR(NULL, "failed to check rknpu hardware version: %s",
                    strcmp(p->npu_group, "RK3588") == 0 ? "0x46495245" : "0");
            /* the runtimes name the file's platform string, though the check goes by the
               NPU family: the rknpu2 c28b080 RK3588 file (RKNPU v2, "rk3566") on RK3566 is
               "for RK3566, but current platform is RK3566/RK3568" (1.4.0, 1.5.2, 1.6.0) */
            char named[RKNNX_FILE_STR_LEN];
            snprintf(named, sizeof named, "%s",
                     f->target_platform[0] ? f->target_platform
                                           : (fp ? fp->name : f->chip));
            for (char *q = named; *q; q++)
                *q = (char)toupper((unsigned char)*q);
            snprintf(line, sizeof line, "This rknn model is for %s, but current platform is %s",
                     named, vendor_platform_name(p));
            rc = refuse(mode, RKNN_ERR_MODEL_INVALID, line);
        }
        goto done;
    }
    if (mode == EMU_SD_1_5 && f->n_custom_ops) {
        /* 1.5.2 aborts the process in rknn_init here (tk2_77b7109 dual_residual_custom:
           "ERROR: unsupport cstDualResidual op in current"); the emulator refuses */
        EMU_ERR(NULL, "ERROR: unsupport %s op in current", f->custom_ops[0].type);
        EMU_ERR("rknn_init", "load model failed!");
        rc = RKNN_ERR_MODEL_INVALID;
        goto done;
    }
    rc = RKNN_ERR_MALLOC_FAIL;
    sd = calloc(1, sizeof *sd);
    if (!sd)
        goto done;
    for (uint32_t k = 0; k < f->n_custom_ops && sd->n_custom < 16; k++) {
        int dup = 0;
        for (uint32_t j = 0; j < sd->n_custom; j++)
            dup |= strcmp(sd->custom[j], f->custom_ops[k].type) == 0;
        if (!dup)
            snprintf(sd->custom[sd->n_custom++], RKNN_MAX_NAME_LEN, "%s", f->custom_ops[k].type);
    }
    sd->rules = mode == EMU_SD_MINI ? &g_rules_mini : &g_rules_glibc;
    sd->queries = queries_of(mode);
    sd->neg_cmd_range = mode == EMU_SD_MINI;
    sd->compiler_int = f->compiler_version_int;
    for (uint32_t k = 0; k < f->n_inputs + f->n_outputs; k++) {
        const rknnx_file_tensor *t = k < f->n_inputs ? &f->inputs[k] : &f->outputs[k - f->n_inputs];
        if (t->attr_type != t->type && !sd->user_type) {
            sd->user_type = calloc(f->n_inputs + f->n_outputs, sizeof *sd->user_type);
            if (!sd->user_type)
                goto done;
        }
    }
    for (uint32_t k = 0; sd->user_type && k < f->n_inputs + f->n_outputs; k++) {
        const rknnx_file_tensor *t = k < f->n_inputs ? &f->inputs[k] : &f->outputs[k - f->n_inputs];
        sd->user_type[k] = 1 + t->attr_type;   /* 0: none */
    }
    /* MEM_SIZE's weight and internal bytes as the file plans them (the Model table's memory
       plan: docs/rknn-file-format.md); 0 where the file has none */
    if (f->has_mem_sizes) {
        sd->weight_size = f->weight_size;
        sd->internal_size = f->internal_size;
    }
    sd->n_in = f->n_inputs;
    sd->n_out = f->n_outputs;
    sd->n_sets = f->dynamic && f->n_shape_sets ? f->n_shape_sets : 0;
    uint32_t rows = sd->n_sets ? sd->n_sets : 1, nio = sd->n_in + sd->n_out;
    sd->sets = calloc((size_t)rows * nio, sizeof *sd->sets);
    sd->maxv = calloc(nio ? nio : 1, sizeof *sd->maxv);
    ins = calloc(sd->n_in ? sd->n_in : 1, sizeof *ins);
    outs = calloc(sd->n_out ? sd->n_out : 1, sizeof *outs);
    in_dims = calloc((size_t)rows * (sd->n_in ? sd->n_in : 1) * RKNN_MAX_DIMS, sizeof(uint32_t));
    out_dims = calloc((size_t)rows * (sd->n_out ? sd->n_out : 1) * RKNN_MAX_DIMS, sizeof(uint32_t));
    if (!sd->sets || !sd->maxv || !ins || !outs || !in_dims || !out_dims)
        goto done;
    if (sd->n_sets) {
        sd->ranges = calloc((size_t)rows * sd->n_in * RKNN_MAX_DIMS, sizeof(uint32_t));
        if (!sd->ranges)
            goto done;
    }
    rc = RKNN_ERR_MODEL_INVALID;
    if (sd->n_in == 0 || sd->n_out == 0 || sd->n_in > 256 || sd->n_out > 256) {
        EMU_ERR("rknn_init", "the file has %u inputs and %u outputs", sd->n_in, sd->n_out);
        goto done;
    }
    /* the largest set: the one whose first input has the most elements (the file keeps the
       largest first) */
    uint32_t big = 0;
    for (uint32_t s = 0; s < sd->n_sets; s++) {
        if (prod(f->shape_sets[s * sd->n_in].dims, f->shape_sets[s * sd->n_in].n_dims) >
            prod(f->shape_sets[big * sd->n_in].dims, f->shape_sets[big * sd->n_in].n_dims))
            big = s;
    }
    for (uint32_t s = 0; s < rows; s++) {
        /* the first 4-D input's H, W at this set and at the largest, for the outputs */
        uint32_t h_s = 0, w_s = 0, h_b = 0, w_b = 0;
        for (uint32_t k = 0; k < nio; k++) {
            int is_out = k >= sd->n_in;
            uint32_t idx = is_out ? k - sd->n_in : k;
            sd_tensor x;
            memset(&x, 0, sizeof x);
            x.t = is_out ? &f->outputs[idx] : &f->inputs[idx];
            x.is_out = is_out;
            rknnx_file_tensor tt;
            if (x.t->type == RKNNX_FILE_UNKNOWN) {
                /* not decoded (a 0x1004 payload): RK2118 models are float16, the RV1106
                   family's int8 (every such file of the corpus and its runtime answers) */
                tt = *x.t;
                tt.type = p->family == EMU_FAM_RK2118 ? RKNN_TENSOR_FLOAT16 : RKNN_TENSOR_INT8;
                x.t = &tt;
                sd->unknown |= EMU_SD_UNKNOWN_QNT;
            }
            if (emu_type_size((rknn_tensor_type)x.t->type) == 0 ||
                x.t->n_shape == 0 || x.t->n_shape > RKNN_MAX_DIMS) {
                EMU_ERR("rknn_init", "tensor '%s': type %d is not one the emulator handles",
                        x.t->name, (int)x.t->type);
                goto done;
            }
            view_of(x.t, is_out, &x.n_dims, x.dims, &x.fmt);
            x.native_known = (x.t->known & RKNNX_FILE_KNOWN_NATIVE) != 0;
            x.native_fmt = x.t->native_fmt;
            x.native_n_dims = x.t->native_n_dims > RKNN_MAX_DIMS ? RKNN_MAX_DIMS : x.t->native_n_dims;
            memcpy(x.native_dims, x.t->native_dims, x.native_n_dims * sizeof(uint32_t));
            x.planned = x.t->file_planned_size;
            if (!x.native_known)
                sd->unknown |= EMU_SD_UNKNOWN_NATIVE;
            if (!(x.t->known & RKNNX_FILE_KNOWN_QNT))
                sd->unknown |= EMU_SD_UNKNOWN_QNT;
            if (sd->n_sets && !is_out) {
                const rknnx_file_shape *sh = &f->shape_sets[s * sd->n_in + idx];
                const rknnx_file_shape *sb = &f->shape_sets[big * sd->n_in + idx];
                if (sh->n_dims != x.n_dims)
                    goto done;
                memcpy(x.dims, sh->dims, sh->n_dims * sizeof(uint32_t));
                memcpy(sd->ranges + ((uint64_t)s * sd->n_in + idx) * RKNN_MAX_DIMS, sh->dims,
                       sh->n_dims * sizeof(uint32_t));
                if (x.n_dims == 4 && x.fmt == RKNN_TENSOR_NHWC && !h_s) {
                    h_s = sh->dims[1]; w_s = sh->dims[2]; h_b = sb->dims[1]; w_b = sb->dims[2];
                }
                if (x.native_known && x.native_n_dims == x.n_dims)
                    memcpy(x.native_dims, sh->dims, sh->n_dims * sizeof(uint32_t));
            } else if (sd->n_sets && x.n_dims == 4 && h_b && w_b) {
                /* the file keeps no output shape per set: outputs follow the first image
                   input's height and width in proportion (docs/standin.md) */
                int hi = x.fmt == RKNN_TENSOR_NHWC ? 1 : 2;
                uint32_t H = (uint32_t)((uint64_t)x.dims[hi] * h_s / h_b);
                uint32_t W = (uint32_t)((uint64_t)x.dims[hi + 1] * w_s / w_b);
                x.dims[hi] = H ? H : 1;
                x.dims[hi + 1] = W ? W : 1;
                if (x.native_known && x.native_n_dims == 5) {
                    x.native_dims[2] = x.dims[hi];
                    x.native_dims[3] = x.dims[hi + 1];
                } else if (x.native_known && x.native_n_dims == 4) {
                    memcpy(x.native_dims, x.dims, 4 * sizeof(uint32_t));
                }
            }
            emu_attr_views *v = &sd->sets[(uint64_t)s * nio + k];
            fill_views(mode, p, &x, idx, v);
            if (s == (sd->n_sets ? big : 0))
                sd->maxv[k] = *v;
            uint32_t *row = is_out ? out_dims + ((uint64_t)s * sd->n_out + idx) * RKNN_MAX_DIMS
                                   : in_dims + ((uint64_t)s * sd->n_in + idx) * RKNN_MAX_DIMS;
            memcpy(row, v->a[EMU_ATTR_NORMAL].dims, x.n_dims * sizeof(uint32_t));
        }
    }
    for (uint32_t k = 0; k < nio; k++) {
        if (k < sd->n_in) {
            desc_of(&sd->maxv[k], &ins[k]);
            norm_of(&f->inputs[k], &ins[k]);
        } else {
            desc_of(&sd->maxv[k], &outs[k - sd->n_in]);
        }
    }
    /* the stand-in model's declared dims are set 0's */
    if (sd->n_sets) {
        for (uint32_t i = 0; i < sd->n_in; i++)
            memcpy(ins[i].dims, in_dims + (uint64_t)i * RKNN_MAX_DIMS, sizeof ins[i].dims);
        for (uint32_t o = 0; o < sd->n_out; o++)
            memcpy(outs[o].dims, out_dims + (uint64_t)o * RKNN_MAX_DIMS, sizeof outs[o].dims);
    }
    rc = emu_model_new_standin(fp->name, ins, sd->n_in, outs, sd->n_out, sd->n_sets, in_dims,
                               out_dims, model);
    if (rc != RKNN_SUCC)
        goto done;
    snprintf(sd->model_info, sizeof sd->model_info,
             "version: %u, toolkit version: %s, target: %s, target platform: %s, framework "
             "name: %s, framework layout: NCHW, model inference type: %s",
             f->format_version ? f->format_version : 6, f->toolkit_version,
             f->npu_family[0] ? f->npu_family : fp->name, f->target_platform,
             f->framework[0] ? f->framework : "ONNX", sd->n_sets ? "dynamic_shape" : "static_shape");
    if (mode == EMU_SD_MINI)
        sd->model_info[0] = '\0';   /* the mini runtime logs no model line */
    *out = sd;
    sd = NULL;
    rc = RKNN_SUCC;
    static atomic_int said;
    if (emu_log_enabled(EMU_LOG_W) && !atomic_exchange(&said, 1))
        fprintf(stderr, "W rknnx: the emulator stands in for vendor .rknn files: it answers "
                "as the vendor runtime for the file, but rknn_run computes a digest of the "
                "inputs, not the network (docs/standin.md)\n");
done:
    emu_answers_free(sd);
    free(ins);
    free(outs);
    free(in_dims);
    free(out_dims);
    rknnx_file_free(f);
    return rc;
}

static const emu_kind g_vendor_kind = {"vendor .rknn file", standin_sniff, standin_open,
                                       emu_standin_model_run};

__attribute__((constructor)) static void standin_add_kind(void) { emu_kind_add(&g_vendor_kind); }
