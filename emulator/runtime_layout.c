/*
 * rknnx emulator, runtime half: tensor attributes, buffer layouts and conversions.
 *
 * Attribute rules (all sizes in bytes of the attribute's type; "image" = a 4-D tensor
 * declared NHWC or NCHW; other tensors are flat and every kind of attribute equals the
 * normal one, but for an output's NATIVE_NHWC size_with_stride).  They are the vendor
 * runtimes' where their recorded answers for real .rknn files show them (librknnrt 1.5.2
 * and 1.6.0 on RK3566 and RK3588, the mini runtime librknnmrt 2.3.2 on the RV1106 family
 * and RK2118: docs/abi-notes.md, "The vendor runtimes' answers"), for the emulator's own
 * models and the stand-ins of vendor files alike ("mini" below: the RV1106 family and
 * RK2118, which run the mini runtime):
 *
 *  query            image input                              image output
 *  ---------------  ---------------------------------------  ---------------------------------
 *  *_ATTR (normal)  declared fmt and dims; w_stride =        NCHW dims; w_stride 0;
 *                   align(W, wa); size_with_stride =         size_with_stride = the blocked
 *                   N*H*w_stride*Cs                          N*C1*H*align(W,C2)*C2 (mini: size)
 *  NATIVE_*         C in {1,3,4} (or no C2 for the type):     NC1HWC2 [N,C1,H,W,C2] when the
 *  (= NC1HWC2)      NHWC as NATIVE_NHWC; other C: NC1HWC2     type has a C2, n_elems and size
 *                   [N,C1,H,W,C2], w_stride = W               of that shape, w_stride 0 (mini:
 *                                                             W); else as normal
 *  NATIVE_NHWC_*    NHWC [N,H,W,C], w_stride = align(W, wa),  NHWC [N,H,W,C'], C' = Cp on RK3566
 *                   size_with_stride = N*H*w_stride*Cs        (C elsewhere), w_stride 0,
 *                                                             size_with_stride = align(size,
 *                                                             C2) (mini: the NC1HWC2 bytes)
 *
 *  Cs = C for C in {1,3,4}, else Cp;  Cp = align(C, C2) (C when the type has no C2);
 *  C1 = ceil(C / C2);  wa = the type's C2, the chip's w_align on the mini runtime's chips
 *  and for a type without C2; C2 and w_align per chip: see the table in runtime_core.c.
 *  n_elems and size are the logical count and bytes but for an output's native views,
 *  whose dims they count.  The inputs of 5+ channels (Cs, NC1HWC2) keep the emulator's
 *  rules: no recorded vendor answer has such an input.
 *
 * Buffer layouts (what the bytes of a user buffer mean):
 *  - rknn_inputs_set, pass_through 0: packed in the given fmt (NHWC, NCHW; UNDEFINED =
 *    the declared order) and type;
 *  - rknn_inputs_set, pass_through 1: the model type in the native layout of fmt:
 *    NHWC = rows of w_stride pixels of Cs channels, NC1HWC2 = blocked, NCHW/UNDEFINED packed;
 *  - rknn_set_io_mem inputs (any pass_through): NHWC = rows of w_stride pixels of Cs
 *    channels when the type is the model type, of C channels when it is converted (the
 *    channel padding exists only in the native type), batches of max(h_stride, H) rows;
 *    NC1HWC2 = blocked (model type only); NCHW / UNDEFINED packed;
 *  - outputs (rknn_outputs_get: always NCHW; rknn_set_io_mem: the attr's fmt): NCHW packed;
 *    NHWC with the channels per pixel the bound attribute's dims say: Cp where they pad C
 *    (NATIVE_NHWC_OUTPUT_ATTR on RK3566, in the model type), else C; NC1HWC2 blocked (model
 *    type only, the native attribute's blocks).
 *
 * One rule for inputs and outputs, shared with the Python binding (which sees only the
 * attribute): channels are padded only in the model's own type; a buffer of a converted
 * type (attr.type edited to FLOAT32/FLOAT16 ...) is packed in C, its rows still w_stride
 * pixels apart for zero-copy NHWC inputs.  size_with_stride stays in bytes of the model
 * type.
 */
#include <stdlib.h>
#include <string.h>

#include "numeric.h"
#include "runtime.h"

size_t emu_type_size(rknn_tensor_type t)
{
    switch (t) {
    case RKNN_TENSOR_FLOAT32: return 4;
    case RKNN_TENSOR_FLOAT16: return 2;
    case RKNN_TENSOR_INT8: return 1;
    case RKNN_TENSOR_UINT8: return 1;
    case RKNN_TENSOR_INT16: return 2;
    case RKNN_TENSOR_UINT16: return 2;
    case RKNN_TENSOR_INT32: return 4;
    case RKNN_TENSOR_UINT32: return 4;
    case RKNN_TENSOR_INT64: return 8;
    case RKNN_TENSOR_BOOL: return 1;
    case RKNN_TENSOR_BFLOAT16: return 2;
    default: return 0;
    }
}

static int mini_runtime(const emu_platform *p)
{
    return p->family == EMU_FAM_RV1106 || p->family == EMU_FAM_RK2118;
}

uint32_t emu_w_align(const emu_platform *p, const emu_io_desc *d)
{
    /* the vendor's rows: align(W, C2) of the input's type (tiny_rk3588_i8: int8 W 8 -> 16;
       tiny_rk3566_i8: 8 -> 8; dual_residual_custom RK3566: float16 10 -> 12; 1.5.2 and
       1.6.0); the mini runtime aligns to 16 pixels (tiny_rv1106_i8, 2.3.2), the chip's
       w_align, which also stands for the types without a C2 (no vendor answer has one) */
    uint32_t c2 = mini_runtime(p) ? 0 : emu_c2(p, d->type);
    return c2 ? c2 : p->w_align;
}

uint32_t emu_c2(const emu_platform *p, rknn_tensor_type t)
{
    switch (t) {
    case RKNN_TENSOR_INT8:
    case RKNN_TENSOR_UINT8:
        return p->c2_int8;
    case RKNN_TENSOR_FLOAT16:
    case RKNN_TENSOR_INT16:
        return p->c2_fp16;
    default:
        return 0;
    }
}

int emu_desc_is_image(uint32_t n_dims, rknn_tensor_format fmt)
{
    return n_dims == 4 && (fmt == RKNN_TENSOR_NHWC || fmt == RKNN_TENSOR_NCHW);
}

void emu_nchw_of(const uint32_t *dims, rknn_tensor_format fmt, uint32_t *N, uint32_t *C,
                 uint32_t *H, uint32_t *W)
{
    *N = dims[0];
    if (fmt == RKNN_TENSOR_NHWC) {
        *H = dims[1];
        *W = dims[2];
        *C = dims[3];
    } else {
        *C = dims[1];
        *H = dims[2];
        *W = dims[3];
    }
}

static uint64_t align_up(uint64_t v, uint64_t a) { return a ? (v + a - 1) / a * a : v; }
static int small_c(uint32_t C) { return C == 1 || C == 3 || C == 4; }

static uint64_t prod(const uint32_t *d, uint32_t n)
{
    uint64_t p = 1;
    for (uint32_t i = 0; i < n; i++)
        p *= d[i];
    return p;
}

void emu_fill_attr(const emu_platform *p, const emu_io_desc *d, const uint32_t *dims, int is_out,
                   int kind, uint32_t idx, rknn_tensor_attr *a)
{
    memset(a, 0, sizeof *a);
    a->index = idx;
    memcpy(a->name, d->name, sizeof a->name);
    a->name[sizeof a->name - 1] = '\0';
    a->type = d->type;
    a->qnt_type = d->qnt_type;
    a->fl = d->fl;
    a->zp = d->zp;
    a->scale = d->scale;
    uint64_t es = emu_type_size(d->type);
    if (!emu_desc_is_image(d->n_dims, d->fmt)) {
        a->n_dims = d->n_dims;
        memcpy(a->dims, dims, d->n_dims * sizeof(uint32_t));
        a->fmt = d->fmt;
        a->n_elems = (uint32_t)prod(dims, d->n_dims);
        a->size = (uint32_t)(a->n_elems * es);
        a->size_with_stride = a->size;
        /* an output's NATIVE_NHWC view asks for align(size, C2) (multi_io_rk3588 [1,4]:
           16, multi_io_rk3566: 8; 1.5.2 and 1.6.0), size on the mini runtime */
        uint32_t c2 = emu_c2(p, d->type);
        if (is_out && kind == EMU_ATTR_NATIVE_NHWC && c2 && !mini_runtime(p))
            a->size_with_stride = (uint32_t)align_up(a->size, c2);
        return;
    }
    uint32_t N, C, H, W;
    emu_nchw_of(dims, d->fmt, &N, &C, &H, &W);
    uint32_t c2 = emu_c2(p, d->type);
    uint64_t Cp = c2 ? align_up(C, c2) : C;
    uint64_t Cs = small_c(C) ? C : Cp;
    uint64_t ws = align_up(W, emu_w_align(p, d));
    a->n_dims = 4;
    a->n_elems = (uint32_t)((uint64_t)N * C * H * W);
    a->size = (uint32_t)(a->n_elems * es);

    int nc1hwc2 = 0, nhwc = 0;
    if (!is_out) {
        if (kind == EMU_ATTR_NORMAL) {
            a->fmt = d->fmt;
            memcpy(a->dims, dims, 4 * sizeof(uint32_t));
            a->w_stride = (uint32_t)ws;
            a->size_with_stride = (uint32_t)((uint64_t)N * H * ws * Cs * es);
            return;
        }
        if (kind == EMU_ATTR_NATIVE && c2 && !small_c(C))
            nc1hwc2 = 1;
        else
            nhwc = 1;
        if (nhwc) {
            a->fmt = RKNN_TENSOR_NHWC;
            a->dims[0] = N; a->dims[1] = H; a->dims[2] = W; a->dims[3] = C;
            a->w_stride = (uint32_t)ws;
            a->size_with_stride = (uint32_t)((uint64_t)N * H * ws * Cs * es);
            return;
        }
    } else {
        /* the vendor's output views (docs/abi-notes.md): the NPU writes NC1HWC2 */
        int mini = mini_runtime(p);
        uint64_t C1 = c2 ? (C + c2 - 1) / c2 : 0;
        uint64_t blocked = (uint64_t)N * C1 * H * W * c2;
        if (kind == EMU_ATTR_NATIVE && c2) {
            /* the blocked shape, counted: cls_img_rk3588 [1,4,1,1,16] n_elems 64, w_stride 0
               (1.6.0); w_stride W on the mini runtime (cls_img_rv1106, 2.3.2) */
            a->fmt = RKNN_TENSOR_NC1HWC2;
            a->n_dims = 5;
            a->dims[0] = N; a->dims[1] = (uint32_t)C1; a->dims[2] = H; a->dims[3] = W;
            a->dims[4] = c2;
            a->n_elems = (uint32_t)blocked;
            a->size = (uint32_t)(blocked * es);
            a->w_stride = mini ? W : 0;
            a->size_with_stride = a->size;
            return;
        }
        if (kind == EMU_ATTR_NATIVE_NHWC) {
            /* C padded to C2 in the dims on RK3566 only (cls_img_rk3566 [1,32,32,8] for 5
               channels; cls_img_rk3588 [1,32,32,5], 1.6.0); size_with_stride what to
               allocate: align(size, C2) (cls_img_rk3588 [1,1,1,5]: 16), the NC1HWC2 bytes on
               the mini runtime (cls_img_rv1106 [1,32,32,5]: 16384, 2.3.2) */
            uint64_t Cn = (c2 && strcmp(p->npu_group, "RK3566") == 0) ? Cp : C;
            a->fmt = RKNN_TENSOR_NHWC;
            a->dims[0] = N; a->dims[1] = H; a->dims[2] = W; a->dims[3] = (uint32_t)Cn;
            a->n_elems = (uint32_t)((uint64_t)N * H * W * Cn);
            a->size = (uint32_t)(a->n_elems * es);
            a->w_stride = 0;
            a->size_with_stride = (uint32_t)(mini ? (c2 ? blocked * es : a->size)
                                                  : align_up(a->size, c2 ? c2 : 1));
            return;
        }
        /* NCHW; size_with_stride the blocked buffer with rows of align(W, C2)
           (yolo_heads_rk3588 [1,255,8,8]: 16320 bytes, 32768 with stride, 1.6.0), size on
           the mini runtime (cls_img_rv1106, 2.3.2) */
        a->fmt = RKNN_TENSOR_NCHW;
        a->dims[0] = N; a->dims[1] = C; a->dims[2] = H; a->dims[3] = W;
        a->w_stride = 0;
        a->size_with_stride = (uint32_t)((mini || !c2) ? a->size
                                         : (uint64_t)N * C1 * H * align_up(W, c2) * c2 * es);
        return;
    }
    if (nc1hwc2) {
        uint32_t C1 = (C + c2 - 1) / c2;
        a->fmt = RKNN_TENSOR_NC1HWC2;
        a->n_dims = 5;
        a->dims[0] = N; a->dims[1] = C1; a->dims[2] = H; a->dims[3] = W; a->dims[4] = c2;
        a->w_stride = W;
        a->size_with_stride = (uint32_t)((uint64_t)N * C1 * H * W * c2 * es);
    }
}

/* ---- layouts ---------------------------------------------------------------------------- */
static void lay_nhwc(emu_layout *l, uint64_t ws, uint64_t hs, uint64_t cs)
{
    l->C2 = l->C ? l->C : 1;
    l->sC1 = 0;
    l->sC2 = 1;
    l->sW = cs;
    l->sH = ws * cs;
    l->sN = hs * ws * cs;
    l->span = (uint64_t)l->N * l->sN;
}

static void lay_nchw(emu_layout *l)
{
    l->C2 = l->C ? l->C : 1;
    l->sC1 = 0;
    l->sC2 = (uint64_t)l->H * l->W;
    l->sH = l->W;
    l->sW = 1;
    l->sN = (uint64_t)l->C * l->H * l->W;
    l->span = (uint64_t)l->N * l->sN;
}

static void lay_nc1hwc2(emu_layout *l, uint32_t c2)
{
    uint64_t C1 = (l->C + c2 - 1) / c2;
    l->C2 = c2;
    l->sC2 = 1;
    l->sW = c2;
    l->sH = (uint64_t)l->W * c2;
    l->sC1 = (uint64_t)l->H * l->W * c2;
    l->sN = C1 * l->sC1;
    l->span = (uint64_t)l->N * l->sN;
}

static void lay_common(emu_layout *l, const emu_io_desc *d, const uint32_t *dims,
                       rknn_tensor_type t)
{
    memset(l, 0, sizeof *l);
    l->type = t;
    l->is4d = emu_desc_is_image(d->n_dims, d->fmt);
    if (l->is4d) {
        emu_nchw_of(dims, d->fmt, &l->N, &l->C, &l->H, &l->W);
        l->n_elems = (uint64_t)l->N * l->C * l->H * l->W;
    } else {
        l->n_elems = prod(dims, d->n_dims);
        l->span = l->n_elems;
    }
}

void emu_layout_model(const emu_io_desc *d, const uint32_t *dims, emu_layout *l)
{
    lay_common(l, d, dims, d->type);
    if (!l->is4d)
        return;
    if (d->fmt == RKNN_TENSOR_NHWC)
        lay_nhwc(l, l->W, l->H, l->C);
    else
        lay_nchw(l);
}

int emu_layout_user(const emu_platform *p, const emu_io_desc *d, const uint32_t *dims, int is_out,
                    int zero_copy, rknn_tensor_type t, rknn_tensor_format fmt, int pass_through,
                    uint32_t h_stride, uint32_t out_c, emu_layout *l)
{
    if (emu_type_size(t) == 0)
        return RKNN_ERR_PARAM_INVALID;
    if ((unsigned)fmt >= RKNN_TENSOR_FORMAT_MAX)
        return RKNN_ERR_PARAM_INVALID;
    lay_common(l, d, dims, t);
    if (is_out && (d->type == RKNN_TENSOR_INT8 || d->type == RKNN_TENSOR_UINT8))
        l->deq_c2 = emu_c2(p, d->type);   /* measured for int8 outputs only */
    if (!l->is4d)
        return fmt == RKNN_TENSOR_NC1HWC2 ? RKNN_ERR_PARAM_INVALID : RKNN_SUCC;
    uint32_t c2 = emu_c2(p, d->type);
    uint64_t Cp = c2 ? align_up(l->C, c2) : l->C;
    uint64_t Cs = small_c(l->C) ? l->C : Cp;
    if (fmt == RKNN_TENSOR_UNDEFINED)
        fmt = d->fmt;
    switch (fmt) {
    case RKNN_TENSOR_NCHW:
        lay_nchw(l);
        return RKNN_SUCC;
    case RKNN_TENSOR_NHWC:
        if (is_out) {
            /* the channels the bound attribute's dims say: Cp where they pad C (the native
               NHWC output on RK3566, cls_img_rk3566 vs cls_img_rk3588, 1.6.0), else C */
            lay_nhwc(l, l->W, l->H, (t == d->type && out_c == Cp) ? Cp : l->C);
        } else if (zero_copy || pass_through) {
            uint64_t hs = h_stride > l->H ? h_stride : l->H;
            lay_nhwc(l, align_up(l->W, emu_w_align(p, d)), zero_copy ? hs : l->H,
                     t == d->type ? Cs : l->C);
        } else {
            lay_nhwc(l, l->W, l->H, l->C);
        }
        return RKNN_SUCC;
    case RKNN_TENSOR_NC1HWC2:
        if (!c2 || t != d->type)
            return RKNN_ERR_PARAM_INVALID;
        lay_nc1hwc2(l, c2);
        return RKNN_SUCC;
    default:
        return RKNN_ERR_PARAM_INVALID;
    }
}

uint64_t emu_layout_bytes(const emu_layout *l) { return l->span * emu_type_size(l->type); }

/* the layout of a buffer in the native form na describes (runtime_npu.c's views, a bound
   mem in the model type) */
void emu_layout_native(const emu_io_desc *d, const uint32_t *dims, const rknn_tensor_attr *na,
                       emu_layout *l)
{
    memset(l, 0, sizeof *l);
    l->type = d->type;
    l->is4d = emu_desc_is_image(d->n_dims, d->fmt);
    if (!l->is4d) {
        uint64_t n = 1;
        for (uint32_t k = 0; k < d->n_dims; k++)
            n *= dims[k];
        l->n_elems = n;
        l->span = n;
        return;
    }
    emu_nchw_of(dims, d->fmt, &l->N, &l->C, &l->H, &l->W);
    l->n_elems = (uint64_t)l->N * l->C * l->H * l->W;
    if (na->fmt == RKNN_TENSOR_NC1HWC2 && na->n_dims == 5 && na->dims[4]) {
        uint64_t c2 = na->dims[4], c1 = na->dims[1];
        if (c1 * c2 < l->C)
            c1 = (l->C + c2 - 1) / c2;
        l->C2 = (uint32_t)c2;
        l->sC2 = 1;
        l->sW = c2;
        l->sH = (uint64_t)l->W * c2;
        l->sC1 = (uint64_t)l->H * l->W * c2;
        l->sN = c1 * l->sC1;
    } else if (na->fmt == RKNN_TENSOR_NHWC && na->n_dims == 4) {
        uint64_t ws = na->w_stride > l->W ? na->w_stride : l->W;
        uint64_t cs = na->dims[3] > l->C ? na->dims[3] : l->C;
        uint64_t es = emu_type_size(d->type);
        /* an input's channel stride is what its size_with_stride holds per pixel */
        if (es && ws && l->N && l->H && na->size_with_stride % (l->N * l->H * ws * es) == 0) {
            uint64_t per = na->size_with_stride / (l->N * l->H * ws * es);
            if (per >= l->C)
                cs = per;
        }
        l->C2 = l->C ? l->C : 1;
        l->sC1 = 0;
        l->sC2 = 1;
        l->sW = cs;
        l->sH = ws * cs;
        l->sN = l->H * ws * cs;
    } else {
        emu_layout_model(d, dims, l);
        return;
    }
    l->span = (uint64_t)l->N * l->sN;
}

/* ---- element conversions ------------------------------------------------------------------ */
static float rd_real(rknn_tensor_type t, const uint8_t *p)
{
    switch (t) {
    case RKNN_TENSOR_FLOAT32: { float v; memcpy(&v, p, 4); return v; }
    case RKNN_TENSOR_FLOAT16: { uint16_t h; memcpy(&h, p, 2); return emu_f16_to_f32(h); }
    case RKNN_TENSOR_BFLOAT16: { uint16_t h; memcpy(&h, p, 2); return emu_bits_f32((uint32_t)h << 16); }
    case RKNN_TENSOR_INT8: return (float)*(const int8_t *)p;
    case RKNN_TENSOR_UINT8: return (float)*p;
    case RKNN_TENSOR_BOOL: return *p ? 1.0f : 0.0f;
    case RKNN_TENSOR_INT16: { int16_t v; memcpy(&v, p, 2); return (float)v; }
    case RKNN_TENSOR_UINT16: { uint16_t v; memcpy(&v, p, 2); return (float)v; }
    case RKNN_TENSOR_INT32: { int32_t v; memcpy(&v, p, 4); return (float)v; }
    case RKNN_TENSOR_UINT32: { uint32_t v; memcpy(&v, p, 4); return (float)v; }
    case RKNN_TENSOR_INT64: { int64_t v; memcpy(&v, p, 8); return (float)v; }
    default: return 0.0f;
    }
}

static int32_t rd_int(rknn_tensor_type t, const uint8_t *p)
{
    switch (t) {
    case RKNN_TENSOR_INT8: return *(const int8_t *)p;
    case RKNN_TENSOR_UINT8: return *p;
    case RKNN_TENSOR_INT16: { int16_t v; memcpy(&v, p, 2); return v; }
    case RKNN_TENSOR_UINT16: { uint16_t v; memcpy(&v, p, 2); return v; }
    case RKNN_TENSOR_INT32: { int32_t v; memcpy(&v, p, 4); return v; }
    default: return (int32_t)rd_real(t, p);
    }
}

static void int_range(rknn_tensor_type t, int32_t *lo, int32_t *hi)
{
    switch (t) {
    case RKNN_TENSOR_INT8: *lo = -128; *hi = 127; break;
    case RKNN_TENSOR_UINT8: *lo = 0; *hi = 255; break;
    case RKNN_TENSOR_INT16: *lo = -32768; *hi = 32767; break;
    case RKNN_TENSOR_UINT16: *lo = 0; *hi = 65535; break;
    default: *lo = INT32_MIN; *hi = INT32_MAX; break;
    }
}

/* Store x as type t, quantized with (scale, zp) when quant (1: saturating, as the NPU does
   for image inputs; 2: as the vendor's CPU conversion of other inputs), else rounded and
   saturated. */
static void wr_value(rknn_tensor_type t, int quant, float scale, int32_t zp, uint8_t *p, float x)
{
    switch (t) {
    case RKNN_TENSOR_FLOAT32: memcpy(p, &x, 4); return;
    case RKNN_TENSOR_FLOAT16: { uint16_t h = emu_f32_to_f16(x); memcpy(p, &h, 2); return; }
    case RKNN_TENSOR_BFLOAT16: {
        uint32_t u = emu_f32_bits(x);
        if ((u & 0x7fffffffu) > 0x7f800000u)
            u |= 0x400000u;                       /* keep NaN a NaN */
        else
            u += 0x7fffu + ((u >> 16) & 1u);      /* round to nearest even */
        uint16_t h = (uint16_t)(u >> 16);
        memcpy(p, &h, 2);
        return;
    }
    case RKNN_TENSOR_BOOL: *p = x != 0.0f; return;
    case RKNN_TENSOR_INT64: {
        int64_t v = x != x ? 0 : (int64_t)rint(emu_clampf(x, -9.2e18f, 9.2e18f));
        memcpy(p, &v, 8);
        return;
    }
    case RKNN_TENSOR_UINT32: {
        double r = x != x ? 0.0 : rint((double)x);
        uint32_t v = r < 0 ? 0 : (r > 4294967295.0 ? 4294967295u : (uint32_t)r);
        memcpy(p, &v, 4);
        return;
    }
    case RKNN_TENSOR_INT32: {
        if (!quant) {
            double r = x != x ? 0.0 : rint((double)x);
            int32_t v = r < -2147483648.0 ? INT32_MIN : (r > 2147483647.0 ? INT32_MAX : (int32_t)r);
            memcpy(p, &v, 4);
            return;
        }
        int32_t v = quant == 2 ? (int32_t)(uint32_t)(uint64_t)emu_quantize_input(x, scale, zp)
                               : emu_quantize(x, scale, zp, INT32_MIN, INT32_MAX);
        memcpy(p, &v, 4);
        return;
    }
    default: {
        int32_t lo, hi;
        int_range(t, &lo, &hi);
        /* quant 2: the vendor's CPU quantization, which wraps (docs/abi-notes.md, "NPU-side
           bytes"; the truncation to the type's width happens in the stores below); quant 1:
           the NPU's, saturating */
        int32_t v = quant == 2 ? (int32_t)(uint32_t)(uint64_t)emu_quantize_input(x, scale, zp)
                    : quant ? emu_quantize(x, scale, zp, lo, hi)
                            : emu_quantize(x, 1.0f, 0, lo, hi);
        if (t == RKNN_TENSOR_INT8) { uint8_t b = (uint8_t)(uint32_t)v; memcpy(p, &b, 1); }
        else if (t == RKNN_TENSOR_UINT8) { uint8_t b = (uint8_t)(uint32_t)v; memcpy(p, &b, 1); }
        else if (t == RKNN_TENSOR_INT16) { uint16_t b = (uint16_t)(uint32_t)v; memcpy(p, &b, 2); }
        else if (t == RKNN_TENSOR_UINT16) { uint16_t b = (uint16_t)(uint32_t)v; memcpy(p, &b, 2); }
        return;
    }
    }
}

static int is_quant(const emu_io_desc *d)
{
    return d->qnt_type == RKNN_TENSOR_QNT_AFFINE_ASYMMETRIC || d->qnt_type == RKNN_TENSOR_QNT_DFP;
}

static int is_int_type(rknn_tensor_type t)
{
    return t == RKNN_TENSOR_INT8 || t == RKNN_TENSOR_UINT8 || t == RKNN_TENSOR_INT16 ||
           t == RKNN_TENSOR_UINT16 || t == RKNN_TENSOR_INT32;
}

/* model value -> real number; vec: the vendor's vector formula (emu_dequantize_vec) */
static float dequant(const emu_io_desc *d, const uint8_t *p, int vec)
{
    if (is_quant(d) && is_int_type(d->type)) {
        int32_t q = rd_int(d->type, p);
        if (d->qnt_type == RKNN_TENSOR_QNT_DFP)
            return (float)q * d->scale;
        return vec ? emu_dequantize_vec(q, d->scale, d->zp) : emu_dequantize(q, d->scale, d->zp);
    }
    return rd_real(d->type, p);
}

typedef struct conv_ctx {
    const emu_io_desc *d;
    int mode;
    rknn_tensor_type ts, td;
    size_t es_s, es_d;
    int raw;
    int quant;
} conv_ctx;

static void conv_one(const conv_ctx *k, const uint8_t *s, uint8_t *t, uint32_t ch, int vec)
{
    if (k->raw) {
        memcpy(t, s, k->es_d);
        return;
    }
    const emu_io_desc *d = k->d;
    if (k->mode == EMU_CONV_TO_MODEL) {
        float x = rd_real(k->ts, s);
        if (d->n_norm) {
            uint32_t c = d->n_norm == 1 ? 0 : ch;
            if (c < d->n_norm && c < RKNN_MAX_NUM_CHANNEL)
                x = (x - d->mean[c]) / d->std[c];
        }
        wr_value(k->td, k->quant, d->scale, d->qnt_type == RKNN_TENSOR_QNT_DFP ? 0 : d->zp, t, x);
    } else {
        wr_value(k->td, 0, 1.0f, 0, t, dequant(d, s, vec));
    }
}

void emu_convert(const emu_io_desc *d, int mode, const void *src, const emu_layout *ls, void *dst,
                 const emu_layout *ld)
{
    conv_ctx k;
    k.d = d;
    k.mode = mode;
    k.ts = ls->type;
    k.td = ld->type;
    k.es_s = emu_type_size(ls->type);
    k.es_d = emu_type_size(ld->type);
    k.quant = is_quant(d) && is_int_type(d->type) && ld->type == d->type;
    k.raw = mode == EMU_CONV_RAW || (mode == EMU_CONV_FROM_MODEL && ls->type == ld->type) ||
            (mode == EMU_CONV_TO_MODEL && ls->type == ld->type && d->n_norm == 0 &&
             (ls->type == RKNN_TENSOR_FLOAT32 || ls->type == RKNN_TENSOR_FLOAT16) && !k.quant);
    if (k.raw && k.es_s != k.es_d)
        return;   /* callers never ask for this */
    const uint8_t *s = src;
    uint8_t *t = dst;

    if (!ls->is4d) {
        /* flat: mean/std channel = index along the last axis when it has n_norm entries */
        uint32_t last = 1;
        if (d->n_dims)
            last = d->dims[d->n_dims - 1] ? d->dims[d->n_dims - 1] : 1;
        if (k.raw) {
            memcpy(t, s, ls->n_elems * k.es_s);
            return;
        }
        /* a non-image input is quantized on the CPU by the vendor runtime (wrapping) */
        if (k.quant)
            k.quant = 2;
        for (uint64_t i = 0; i < ls->n_elems; i++)
            conv_one(&k, s + i * k.es_s, t + i * k.es_d, (uint32_t)(i % last), 0);
        return;
    }
    if (k.raw && ls->sN == ld->sN && ls->sC1 == ld->sC1 && ls->sC2 == ld->sC2 &&
        ls->sH == ld->sH && ls->sW == ld->sW && ls->C2 == ld->C2) {
        memcpy(t, s, ls->span * k.es_s);
        return;
    }
    uint32_t C = ls->C;
    uint64_t *cs = malloc(2 * (size_t)(C ? C : 1) * sizeof(uint64_t));
    if (!cs)
        return;
    uint64_t *cd = cs + C;
    for (uint32_t c = 0; c < C; c++) {
        cs[c] = (c / ls->C2) * ls->sC1 + (c % ls->C2) * ls->sC2;
        cd[c] = (c / ld->C2) * ld->sC1 + (c % ld->C2) * ld->sC2;
    }
    /* The vendor's rknn_outputs_get(want_float=1) dequantizes some elements with its
       vector formula and the rest with the scalar one (docs/abi-notes.md, "NPU-side
       bytes"; librknnrt 1.5.2 and 1.6.0): with C2 = 16 (RK3588) the channels of the whole
       C2 blocks at the pixels (in h*W + w order) of the whole groups of 4 take the vector
       path; with C2 = 8 (RK3566) every channel but the last of a C % 8 == 1 output, at the
       pixels of the whole groups of 8; every other element the scalar one.  deq_c2 0 (a
       context playing 1.4.0): the scalar one everywhere. */
    uint32_t dc2 = k.mode == EMU_CONV_FROM_MODEL ? ld->deq_c2 : 0;
    uint64_t vec_c = 0, vec_hw = 0, hw_all = (uint64_t)ls->H * ls->W;
    if (dc2 >= 16) {
        vec_c = (uint64_t)(C / dc2) * dc2;
        vec_hw = hw_all / 4 * 4;
    } else if (dc2 == 8) {
        vec_c = C % 8 == 1 ? C - 1 : C;
        vec_hw = hw_all / 8 * 8;
    }
    for (uint32_t n = 0; n < ls->N; n++)
        for (uint32_t h = 0; h < ls->H; h++)
            for (uint32_t w = 0; w < ls->W; w++) {
                uint64_t bs = n * ls->sN + h * ls->sH + w * ls->sW;
                uint64_t bd = n * ld->sN + h * ld->sH + w * ld->sW;
                if (k.raw && k.es_s == 1) {
                    for (uint32_t c = 0; c < C; c++)
                        t[bd + cd[c]] = s[bs + cs[c]];
                } else {
                    int pix_vec = (uint64_t)h * ls->W + w < vec_hw;
                    for (uint32_t c = 0; c < C; c++)
                        conv_one(&k, s + (bs + cs[c]) * k.es_s, t + (bd + cd[c]) * k.es_d, c,
                                 pix_vec && c < vec_c);
                }
            }
    free(cs);
}

/* ---- the NPU's input buffer after rknn_inputs_set ----------------------------------------
 * What the vendor runtime (librknnrt 1.5.2 and 1.6.0, recorded for real .rknn files on RK3566
 * and RK3588; docs/abi-notes.md, "NPU-side bytes") leaves in the NPU's input buffer:
 *  - the buffer is size_with_stride (or size) of the native attribute, rounded up to 16;
 *  - pass_through: the user's bytes, whatever the type given, copied to the start (size
 *    bytes at most); the rest of the buffer keeps what it held;
 *  - a 1-byte model type with a native NHWC form (an image of 1, 3 or 4 channels): a UINT8
 *    buffer goes to the NPU as it is (the NPU normalizes and quantizes it), rows of w_stride
 *    pixels, the padding pixels zero; any other type is normalized on the CPU into memory
 *    no NPU job reads: the NPU buffer keeps its bytes when w_stride == W, and when rows
 *    are padded it gets the user's first N*H*W*C bytes copied row by row as if they were
 *    1-byte pixels (the runtime's padding copy runs on the raw buffer);
 *  - any other input (float16 models, 2-D and other non-image inputs, NC1HWC2 natives):
 *    normalized with mean/std and converted on the CPU (emu_quantize_input for integer
 *    types, float16 by round to nearest even) into the native layout, the padding zero; a
 *    FLOAT32 NCHW buffer of an image with an NHWC native form keeps the user's element
 *    order (1.5.2: the bytes equal the FLOAT32 NHWC form's).
 */
uint32_t emu_npu_input_len(const rknn_tensor_attr *na)
{
    uint64_t n = na->size_with_stride > na->size ? na->size_with_stride : na->size;
    n = align_up(n, 16);
    return n > 0x7fffffffu ? 0x7fffffffu : (uint32_t)n;
}

void emu_npu_pack_input(const emu_platform *p, const emu_io_desc *d, const uint32_t *dims,
                        const rknn_tensor_attr *na, const void *buf, uint32_t size,
                        rknn_tensor_type t, rknn_tensor_format fmt, int pass_through,
                        uint8_t *npu, uint32_t L)
{
    if (!buf || !npu || L == 0)
        return;
    if (pass_through) {
        memcpy(npu, buf, size < L ? size : L);
        return;
    }
    emu_layout ln, ls;
    emu_layout_native(d, dims, na, &ln);
    if (emu_layout_bytes(&ln) > L)
        return;   /* a native form larger than the buffer: nothing sensible to write */
    int image = emu_desc_is_image(d->n_dims, d->fmt);
    int byte_type = d->type == RKNN_TENSOR_INT8 || d->type == RKNN_TENSOR_UINT8;
    if (image && d->type == RKNN_TENSOR_INT16 && t == RKNN_TENSOR_UINT8 &&
        na->fmt == RKNN_TENSOR_NHWC) {
        /* an int16 image input (w16a16i_dfp) given UINT8 data: the uint8 bytes go across
           unchanged, packed, the rest of the buffer zero (1.6.0, cls_img and tiny built so,
           RK3588 and RK3566) */
        uint64_t n = (uint64_t)ln.N * ln.H * ln.W * ln.C;
        if (n > size || n > L)
            return;
        memset(npu, 0, L);
        memcpy(npu, buf, (size_t)n);
        return;
    }
    if (image && byte_type && na->fmt == RKNN_TENSOR_NHWC) {
        uint32_t N = ln.N, H = ln.H, W = ln.W;
        uint64_t row = (uint64_t)W * ln.sW, pitch = ln.sH;
        if (t == RKNN_TENSOR_UINT8) {
            if (emu_layout_user(p, d, dims, 0, 0, t, fmt, 0, 0, 0, &ls) != RKNN_SUCC ||
                emu_layout_bytes(&ls) > size)
                return;
            memset(npu, 0, L);
            ls.type = d->type;   /* the bytes go across unchanged */
            emu_convert(d, EMU_CONV_RAW, buf, &ls, npu, &ln);
            return;
        }
        if (pitch == row)
            return;   /* normalized elsewhere; this buffer keeps its bytes */
        /* the padding copy on the raw buffer: rows of W*C bytes of the user's buffer */
        uint64_t src_row = (uint64_t)W * ln.C;
        for (uint64_t r = 0; r < (uint64_t)N * H; r++) {
            uint64_t so = r * src_row, dof = r * pitch;
            if (so + src_row > size || dof + src_row > L)
                return;
            memcpy(npu + dof, (const uint8_t *)buf + so, (size_t)src_row);
        }
        return;
    }
    if (emu_layout_user(p, d, dims, 0, 0, t, fmt, 0, 0, 0, &ls) != RKNN_SUCC ||
        emu_layout_bytes(&ls) > size || emu_type_size(t) == 0)
        return;
    memset(npu, 0, L);
    if (image && fmt == RKNN_TENSOR_NCHW && na->fmt == RKNN_TENSOR_NHWC &&
        ln.sH == (uint64_t)ln.W * ln.sW) {
        /* the user's order is kept: the NPU buffer holds NCHW */
        emu_layout lo = ls;
        lo.type = d->type;
        emu_convert(d, EMU_CONV_TO_MODEL, buf, &ls, npu, &lo);
        return;
    }
    emu_convert(d, EMU_CONV_TO_MODEL, buf, &ls, npu, &ln);
}
