/*
 * rknnx emulator, model half: op checks, shape inference, kernels and the graph run.
 * The bottom of the half: the parser (model.c) asks it about each op; it names no other
 * file's function (emu_model.h's file map).
 *
 * Numerics (python/rknnx/emulator/reference.py implements exactly the same rules; see
 * emulator/FORMAT.md, "Op semantics"):
 *   - int8 conv2d/dense: acc = sum (x - x_zp) * (w - w_zp[c]) in int32, plus bias (int32,
 *     at scale x_scale*w_scale[c]) in int64; then in float64
 *     q = clamp(rint(acc * M[c]) + y_zp), M[c] = (x_scale * w_scale[c]) / y_scale,
 *     rint = round half to even; a fused relu is max(q, y_zp).
 *   - int8 add: q = clamp(rint(((qa-za)*sa + (qb-zb)*sb) / sy) + zy) in float64;
 *     int8 mul: q = clamp(rint((qa-za)*(qb-zb) * ((sa*sb)/sy)) + zy) in float64.
 *   - int8 relu/sigmoid: a 256-entry table, each entry computed in float64 from the
 *     dequantized value and requantized as above.
 *   - float16 ops compute in float32 and round to float16 once at the store.
 *   - quantize/dequantize use numeric.h (float32, round half to even, saturating).
 */
#define _POSIX_C_SOURCE 199309L
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "model_internal.h"
#include "numeric.h"

#define BAD RKNN_ERR_MODEL_INVALID

/* ---- element access ---------------------------------------------------------------------- */

static inline float ldf(rknn_tensor_type t, const uint8_t *p, uint64_t i)
{
    if (t == RKNN_TENSOR_FLOAT16) {
        uint16_t h;
        memcpy(&h, p + i * 2, 2);
        return emu_f16_to_f32(h);
    }
    float f;
    memcpy(&f, p + i * 4, 4);
    return f;
}

static inline void stf(rknn_tensor_type t, uint8_t *p, uint64_t i, float v)
{
    if (t == RKNN_TENSOR_FLOAT16) {
        uint16_t h = emu_f32_to_f16(v);
        memcpy(p + i * 2, &h, 2);
    } else {
        memcpy(p + i * 4, &v, 4);
    }
}

/* any supported integer or float element as a double (exact for every type here) */
static inline double ldd(rknn_tensor_type t, const uint8_t *p, uint64_t i)
{
    switch (t) {
    case RKNN_TENSOR_INT8: return (int8_t)p[i];
    case RKNN_TENSOR_UINT8: case RKNN_TENSOR_BOOL: return p[i];
    case RKNN_TENSOR_INT16: { int16_t v; memcpy(&v, p + i * 2, 2); return v; }
    case RKNN_TENSOR_UINT16: { uint16_t v; memcpy(&v, p + i * 2, 2); return v; }
    case RKNN_TENSOR_INT32: { int32_t v; memcpy(&v, p + i * 4, 4); return v; }
    case RKNN_TENSOR_UINT32: { uint32_t v; memcpy(&v, p + i * 4, 4); return v; }
    case RKNN_TENSOR_FLOAT16: case RKNN_TENSOR_FLOAT32: return ldf(t, p, i);
    default: return 0.0;
    }
}

static inline int32_t ldq(rknn_tensor_type t, const uint8_t *p, uint64_t i)
{
    return (int32_t)ldd(t, p, i);      /* only called for 8/16-bit integer types */
}

/* store an integer already in range */
static inline void sti(rknn_tensor_type t, uint8_t *p, uint64_t i, int64_t v)
{
    switch (t) {
    case RKNN_TENSOR_INT8: { int8_t x = (int8_t)v; memcpy(p + i, &x, 1); break; }
    case RKNN_TENSOR_UINT8: case RKNN_TENSOR_BOOL: p[i] = (uint8_t)v; break;
    case RKNN_TENSOR_INT16: { int16_t x = (int16_t)v; memcpy(p + i * 2, &x, 2); break; }
    case RKNN_TENSOR_UINT16: { uint16_t x = (uint16_t)v; memcpy(p + i * 2, &x, 2); break; }
    case RKNN_TENSOR_INT32: { int32_t x = (int32_t)v; memcpy(p + i * 4, &x, 4); break; }
    case RKNN_TENSOR_UINT32: { uint32_t x = (uint32_t)v; memcpy(p + i * 4, &x, 4); break; }
    default: break;
    }
}

static void int_range(rknn_tensor_type t, int64_t *lo, int64_t *hi)
{
    switch (t) {
    case RKNN_TENSOR_INT8: *lo = -128; *hi = 127; break;
    case RKNN_TENSOR_UINT8: *lo = 0; *hi = 255; break;
    case RKNN_TENSOR_INT16: *lo = -32768; *hi = 32767; break;
    case RKNN_TENSOR_UINT16: *lo = 0; *hi = 65535; break;
    case RKNN_TENSOR_INT32: *lo = INT32_MIN; *hi = INT32_MAX; break;
    case RKNN_TENSOR_UINT32: *lo = 0; *hi = UINT32_MAX; break;
    case RKNN_TENSOR_BOOL: *lo = 0; *hi = 1; break;
    default: *lo = 0; *hi = 0; break;
    }
}

/* v is already divided by the output scale: q = clamp(rint(v) + zp); NaN gives zp */
static inline int64_t requant(double v, int32_t zp, int64_t lo, int64_t hi)
{
    double q = rint(v) + (double)zp;
    if (q != q)
        q = (double)zp;
    if (q < (double)lo)
        return lo;
    if (q > (double)hi)
        return hi;
    return (int64_t)q;
}

/* ---- type predicates ---------------------------------------------------------------------- */

static int is_float(const emu_tensor *t)
{
    return (t->dtype == RKNN_TENSOR_FLOAT32 || t->dtype == RKNN_TENSOR_FLOAT16) &&
           t->qnt_type == RKNN_TENSOR_QNT_NONE;
}

static int is_qint(rknn_tensor_type d)
{
    return d == RKNN_TENSOR_INT8 || d == RKNN_TENSOR_UINT8 || d == RKNN_TENSOR_INT16;
}

/* an affine-quantized 8/16-bit tensor with one (zp, scale) */
static int is_q(const emu_tensor *t)
{
    return is_qint(t->dtype) && t->qnt_type == RKNN_TENSOR_QNT_AFFINE_ASYMMETRIC && t->n_q == 1;
}

static int is_q8(const emu_tensor *t)
{
    return is_q(t) && (t->dtype == RKNN_TENSOR_INT8 || t->dtype == RKNN_TENSOR_UINT8);
}

static int same_qnt(const emu_tensor *a, const emu_tensor *b)
{
    if (a->dtype != b->dtype || a->qnt_type != b->qnt_type || a->n_q > 1 || b->n_q > 1 ||
        a->n_q != b->n_q || a->fl != b->fl)
        return 0;
    return a->n_q == 0 || (a->zp[0] == b->zp[0] && a->scale[0] == b->scale[0]);
}

/* ---- attributes ------------------------------------------------------------------------------ */

/* INT32 attribute of exactly n elements into dst; absent: dst keeps its defaults */
static int attr_i32(const emu_op *op, const char *name, uint32_t n, int32_t *dst)
{
    const emu_attr *a = emu_model_find_attr(op, name);
    if (!a)
        return 0;
    if (a->dtype != RKNN_TENSOR_INT32 || a->n_elems != n)
        return -1;
    memcpy(dst, a->data, n * sizeof(int32_t));
    return 0;
}

/* ---- load-time checks ------------------------------------------------------------------------ */

static const emu_tensor *T(const emu_model *m, uint32_t id) { return &m->tensors[id]; }

static int check_conv_dense(const emu_model *m, emu_op *op)
{
    int conv = op->opcode == EMU_OP_CONV2D;
    if ((op->n_in != 2 && op->n_in != 3) || op->n_out != 1)
        return BAD;
    const emu_tensor *x = T(m, op->in[0]), *w = T(m, op->in[1]), *y = T(m, op->out[0]);
    const emu_tensor *b = op->n_in == 3 ? T(m, op->in[2]) : NULL;
    if (w->kind != EMU_T_CONSTANT || (b && (b->kind != EMU_T_CONSTANT || b->n_dims != 1)))
        return BAD;
    if (conv && (x->n_dims != 4 || w->n_dims != 4 || y->n_dims != 4))
        return BAD;
    if (!conv && w->n_dims != 2)
        return BAD;
    if (x->dtype == RKNN_TENSOR_INT8) {
        if (!is_q(x) || !is_q(y) || y->dtype != RKNN_TENSOR_INT8 || w->dtype != RKNN_TENSOR_INT8 ||
            w->qnt_type != RKNN_TENSOR_QNT_AFFINE_ASYMMETRIC || w->qaxis != 0)
            return BAD;
        if (b && (b->dtype != RKNN_TENSOR_INT32 || b->qnt_type != RKNN_TENSOR_QNT_NONE))
            return BAD;
    } else {
        if (!is_float(x) || !is_float(w) || !is_float(y) || w->dtype != x->dtype ||
            y->dtype != x->dtype)
            return BAD;
        if (b && !is_float(b))
            return BAD;
    }
    if (b && b->dims[0] != w->dims[0])
        return BAD;
    op->relu = 0;
    if (attr_i32(op, "relu", 1, &op->relu) || (op->relu != 0 && op->relu != 1))
        return BAD;
    if (!conv)
        return RKNN_SUCC;
    op->stride[0] = op->stride[1] = 1;
    op->dilation[0] = op->dilation[1] = 1;
    op->pad[0] = op->pad[1] = op->pad[2] = op->pad[3] = 0;
    op->groups = 1;
    if (attr_i32(op, "strides", 2, op->stride) || attr_i32(op, "dilations", 2, op->dilation) ||
        attr_i32(op, "pads", 4, op->pad) || attr_i32(op, "groups", 1, &op->groups))
        return BAD;
    for (int i = 0; i < 2; i++)
        if (op->stride[i] < 1 || op->stride[i] > 65536 || op->dilation[i] < 1 ||
            op->dilation[i] > 65536)
            return BAD;
    for (int i = 0; i < 4; i++)
        if (op->pad[i] < 0 || op->pad[i] > 65536)
            return BAD;
    if (op->groups < 1 || w->dims[0] % (uint32_t)op->groups)
        return BAD;
    return RKNN_SUCC;
}

int emu_exec_check_op(const emu_model *m, emu_op *op)
{
    const emu_tensor *x = op->n_in ? T(m, op->in[0]) : NULL, *y = T(m, op->out[0]);
    switch (op->opcode) {
    case EMU_OP_CONV2D:
    case EMU_OP_DENSE:
        return check_conv_dense(m, op);
    case EMU_OP_ADD:
    case EMU_OP_MUL: {
        if (op->n_in != 2 || op->n_out != 1)
            return BAD;
        const emu_tensor *b = T(m, op->in[1]);
        if (is_q(x) && is_q(b) && is_q(y))
            return RKNN_SUCC;
        if (is_float(x) && x->dtype == b->dtype && x->dtype == y->dtype && is_float(y))
            return RKNN_SUCC;
        return BAD;
    }
    case EMU_OP_RELU:
    case EMU_OP_SIGMOID:
        if (op->n_in != 1 || op->n_out != 1)
            return BAD;
        if (is_q8(x) && is_q8(y))
            return RKNN_SUCC;
        if (is_float(x) && is_float(y) && x->dtype == y->dtype)
            return RKNN_SUCC;
        return BAD;
    case EMU_OP_RESHAPE:
    case EMU_OP_TRANSPOSE: {
        if (op->n_in != 1 || op->n_out != 1 || !same_qnt(x, y))
            return BAD;
        const char *an = op->opcode == EMU_OP_RESHAPE ? "shape" : "perm";
        const emu_attr *a = emu_model_find_attr(op, an);
        if (!a || a->dtype != RKNN_TENSOR_INT32 || a->n_elems != y->n_dims)
            return BAD;
        if (op->opcode == EMU_OP_TRANSPOSE) {
            if (x->n_dims != y->n_dims)
                return BAD;
            const int32_t *perm = a->data;
            uint32_t used = 0;
            for (uint32_t i = 0; i < y->n_dims; i++) {
                if (perm[i] < 0 || (uint32_t)perm[i] >= y->n_dims || (used >> perm[i]) & 1u)
                    return BAD;
                used |= 1u << perm[i];
            }
        } else {
            const int32_t *shape = a->data;
            int n_infer = 0;
            for (uint32_t i = 0; i < y->n_dims; i++) {
                if (shape[i] < -1 || (shape[i] == 0 && i >= x->n_dims))
                    return BAD;
                n_infer += shape[i] == -1;
            }
            if (n_infer > 1)
                return BAD;
        }
        return RKNN_SUCC;
    }
    case EMU_OP_QUANTIZE:
        if (op->n_in != 1 || op->n_out != 1 || !is_q(y) || !(is_float(x) || is_q(x)))
            return BAD;
        return RKNN_SUCC;
    case EMU_OP_DEQUANTIZE:
        if (op->n_in != 1 || op->n_out != 1 || !is_q(x) || !is_float(y))
            return BAD;
        return RKNN_SUCC;
    case EMU_OP_CAST: {
        if (op->n_in != 1 || op->n_out != 1 || x->qnt_type != RKNN_TENSOR_QNT_NONE ||
            y->qnt_type != RKNN_TENSOR_QNT_NONE)
            return BAD;
        rknn_tensor_type ok[] = {RKNN_TENSOR_FLOAT32, RKNN_TENSOR_FLOAT16, RKNN_TENSOR_INT8,
                                 RKNN_TENSOR_UINT8, RKNN_TENSOR_INT16, RKNN_TENSOR_UINT16,
                                 RKNN_TENSOR_INT32, RKNN_TENSOR_UINT32, RKNN_TENSOR_BOOL};
        int okx = 0, oky = 0;
        for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
            okx |= x->dtype == ok[i];
            oky |= y->dtype == ok[i];
        }
        return okx && oky ? RKNN_SUCC : BAD;
    }
    case EMU_OP_CUSTOM:
        return RKNN_SUCC;
    default:
        return BAD;
    }
}

/* ---- shape inference --------------------------------------------------------------------------- */

static int set_out(const emu_tensor *y, uint32_t *row, uint32_t nd, const uint64_t *dims)
{
    if (nd != y->n_dims)
        return BAD;
    uint64_t elems = 1;
    for (uint32_t i = 0; i < nd; i++) {
        if (dims[i] == 0 || dims[i] > UINT32_MAX)
            return BAD;
        elems *= dims[i];
        if (elems >= EMU_MAX_ELEMS)
            return BAD;
        row[y->dim_offset + i] = (uint32_t)dims[i];
    }
    return RKNN_SUCC;
}

/* (N, C, H, W) of a 4-D tensor in its layout; NCHW unless NHWC */
static void nchw_of(const emu_tensor *t, const uint32_t *d, uint64_t v[4])
{
    if (t->fmt == RKNN_TENSOR_NHWC) {
        v[0] = d[0]; v[1] = d[3]; v[2] = d[1]; v[3] = d[2];
    } else {
        v[0] = d[0]; v[1] = d[1]; v[2] = d[2]; v[3] = d[3];
    }
}

/* element strides (N, C, H, W) of a packed 4-D tensor in its layout */
static void strides_of(const emu_tensor *t, const uint64_t v[4], uint64_t s[4])
{
    if (t->fmt == RKNN_TENSOR_NHWC) {
        s[1] = 1; s[3] = v[1]; s[2] = v[3] * v[1]; s[0] = v[2] * s[2];
    } else {
        s[3] = 1; s[2] = v[3]; s[1] = v[2] * v[3]; s[0] = v[1] * s[1];
    }
}

static int infer_conv(const emu_model *m, const emu_op *op, uint32_t *row, uint64_t *scratch)
{
    const emu_tensor *x = T(m, op->in[0]), *w = T(m, op->in[1]), *y = T(m, op->out[0]);
    uint64_t xv[4];
    nchw_of(x, row + x->dim_offset, xv);
    uint64_t cout = w->dims[0], cin_g = w->dims[1], kh = w->dims[2], kw = w->dims[3];
    if (xv[1] != cin_g * (uint64_t)op->groups)
        return BAD;
    if (x->dtype == RKNN_TENSOR_INT8 && cin_g * kh * kw > 32768)
        return BAD;                    /* int32 accumulation cannot overflow */
    int64_t eh = (int64_t)op->dilation[0] * (int64_t)(kh - 1) + 1;
    int64_t ew = (int64_t)op->dilation[1] * (int64_t)(kw - 1) + 1;
    int64_t ph = (int64_t)xv[2] + op->pad[0] + op->pad[2] - eh;
    int64_t pw = (int64_t)xv[3] + op->pad[1] + op->pad[3] - ew;
    if (ph < 0 || pw < 0)
        return BAD;
    uint64_t oh = (uint64_t)(ph / op->stride[0]) + 1, ow = (uint64_t)(pw / op->stride[1]) + 1;
    uint64_t d[4];
    if (y->fmt == RKNN_TENSOR_NHWC) {
        d[0] = xv[0]; d[1] = oh; d[2] = ow; d[3] = cout;
    } else {
        d[0] = xv[0]; d[1] = cout; d[2] = oh; d[3] = ow;
    }
    int rc = set_out(y, row, 4, d);
    if (rc == RKNN_SUCC)
        *scratch = oh * ow * 4u;
    return rc;
}

static int infer_dense(const emu_model *m, const emu_op *op, uint32_t *row)
{
    const emu_tensor *x = T(m, op->in[0]), *w = T(m, op->in[1]), *y = T(m, op->out[0]);
    const uint32_t *xd = row + x->dim_offset;
    uint64_t k = xd[x->n_dims - 1];
    if (k != w->dims[1])
        return BAD;
    if (x->dtype == RKNN_TENSOR_INT8 && k > 32768)
        return BAD;
    uint64_t d[RKNN_MAX_DIMS];
    for (uint32_t i = 0; i < x->n_dims; i++)
        d[i] = xd[i];
    d[x->n_dims - 1] = w->dims[0];
    return set_out(y, row, x->n_dims, d);
}

static int infer_broadcast(const emu_model *m, const emu_op *op, uint32_t *row)
{
    const emu_tensor *a = T(m, op->in[0]), *b = T(m, op->in[1]), *y = T(m, op->out[0]);
    uint32_t nd = a->n_dims > b->n_dims ? a->n_dims : b->n_dims;
    uint64_t d[RKNN_MAX_DIMS];
    for (uint32_t i = 0; i < nd; i++) {      /* right-aligned, numpy rules */
        uint64_t da = i < nd - a->n_dims ? 1 : row[a->dim_offset + i - (nd - a->n_dims)];
        uint64_t db = i < nd - b->n_dims ? 1 : row[b->dim_offset + i - (nd - b->n_dims)];
        if (da != db && da != 1 && db != 1)
            return BAD;
        d[i] = da == 1 ? db : da;
    }
    return set_out(y, row, nd, d);
}

static int infer_reshape(const emu_model *m, const emu_op *op, uint32_t *row)
{
    const emu_tensor *x = T(m, op->in[0]), *y = T(m, op->out[0]);
    const int32_t *shape = emu_model_find_attr(op, "shape")->data;
    const uint32_t *xd = row + x->dim_offset;
    uint64_t total = 1, known = 1, d[RKNN_MAX_DIMS];
    int infer_at = -1;
    for (uint32_t i = 0; i < x->n_dims; i++)
        total *= xd[i];
    for (uint32_t i = 0; i < y->n_dims; i++) {
        if (shape[i] == -1) {
            infer_at = (int)i;
            continue;
        }
        d[i] = shape[i] == 0 ? xd[i] : (uint64_t)shape[i];
        known *= d[i];                 /* each factor < 2^31, checked below */
        if (known >= EMU_MAX_ELEMS)
            return BAD;
    }
    if (infer_at >= 0) {
        if (total % known)
            return BAD;
        d[infer_at] = total / known;
        known = total;
    }
    if (known != total)
        return BAD;
    return set_out(y, row, y->n_dims, d);
}

int emu_exec_infer(const emu_model *m, const emu_op *op, uint32_t set, uint32_t *row,
                   uint64_t *scratch)
{
    (void)set;
    *scratch = 0;
    const emu_tensor *y = T(m, op->out[0]);
    switch (op->opcode) {
    case EMU_OP_CONV2D:
        return infer_conv(m, op, row, scratch);
    case EMU_OP_DENSE:
        return infer_dense(m, op, row);
    case EMU_OP_ADD:
    case EMU_OP_MUL:
        return infer_broadcast(m, op, row);
    case EMU_OP_RESHAPE:
        return infer_reshape(m, op, row);
    case EMU_OP_TRANSPOSE: {
        const emu_tensor *x = T(m, op->in[0]);
        const int32_t *perm = emu_model_find_attr(op, "perm")->data;
        uint64_t d[RKNN_MAX_DIMS];
        for (uint32_t i = 0; i < y->n_dims; i++)
            d[i] = row[x->dim_offset + (uint32_t)perm[i]];
        return set_out(y, row, y->n_dims, d);
    }
    case EMU_OP_RELU:
    case EMU_OP_SIGMOID:
    case EMU_OP_QUANTIZE:
    case EMU_OP_DEQUANTIZE:
    case EMU_OP_CAST: {
        const emu_tensor *x = T(m, op->in[0]);
        uint64_t d[RKNN_MAX_DIMS];
        for (uint32_t i = 0; i < x->n_dims; i++)
            d[i] = row[x->dim_offset + i];
        return set_out(y, row, x->n_dims, d);
    }
    case EMU_OP_CUSTOM:
        /* a custom op's outputs keep their declared dims in every shape set */
        for (uint32_t k = 0; k < op->n_out; k++) {
            const emu_tensor *t = T(m, op->out[k]);
            memcpy(row + t->dim_offset, t->dims, t->n_dims * sizeof(uint32_t));
        }
        return RKNN_SUCC;
    default:
        return BAD;
    }
}

/* ---- kernels ---------------------------------------------------------------------------------- */

typedef struct tv {
    const emu_tensor *t;
    uint8_t *p;
    const uint32_t *d;                 /* dims at the current shape set */
    uint64_t n;                        /* elements */
} tv;

typedef struct run_ctx {
    const emu_model *m;
    const emu_run_env *env;
    uint32_t set;
    const void *const *inputs;
    void *const *outputs;
    uint8_t *scratch;
} run_ctx;

static tv view(const run_ctx *c, uint32_t id)
{
    const emu_model *m = c->m;
    const emu_tensor *t = &m->tensors[id];
    tv v;
    v.t = t;
    v.d = emu_model_tensor_dims(m, c->set, id);
    v.n = emu_model_tensor_elems(m, c->set, id);
    switch (t->role) {
    case EMU_ROLE_CONST: v.p = (uint8_t *)(uintptr_t)(c->env->weights + t->w_offset); break;
    case EMU_ROLE_INPUT: v.p = (uint8_t *)(uintptr_t)c->inputs[t->role_index]; break;
    case EMU_ROLE_OUTPUT: v.p = (uint8_t *)c->outputs[t->role_index]; break;
    default: v.p = c->env->internal + m->set_offsets[(uint64_t)c->set * m->n_tensors + id]; break;
    }
    return v;
}

/* Like view(), for callers outside a run: any base the caller does not have yet (NULL
   inputs / outputs arrays, entries, weights or internal memory) gives a NULL pointer. */
static uint8_t *view_ptr_or_null(const run_ctx *c, uint32_t id)
{
    const emu_model *m = c->m;
    const emu_tensor *t = &m->tensors[id];
    switch (t->role) {
    case EMU_ROLE_CONST:
        return c->env->weights ? (uint8_t *)(uintptr_t)(c->env->weights + t->w_offset) : NULL;
    case EMU_ROLE_INPUT:
        return c->inputs ? (uint8_t *)(uintptr_t)c->inputs[t->role_index] : NULL;
    case EMU_ROLE_OUTPUT:
        return c->outputs ? (uint8_t *)c->outputs[t->role_index] : NULL;
    default:
        return c->env->internal
                   ? c->env->internal + m->set_offsets[(uint64_t)c->set * m->n_tensors + id]
                   : NULL;
    }
}

/* per output channel requantization multipliers: (x_scale * w_scale[c]) / y_scale */
static inline double qmul(const emu_tensor *x, const emu_tensor *w, const emu_tensor *y, uint64_t c)
{
    double ws = w->n_q == 1 ? (double)w->scale[0] : (double)w->scale[c];
    return ((double)x->scale[0] * ws) / (double)y->scale[0];
}

static inline int32_t wzp(const emu_tensor *w, uint64_t c)
{
    return w->n_q == 1 ? w->zp[0] : w->zp[c];
}

static int k_conv(const run_ctx *c, const emu_op *op)
{
    tv x = view(c, op->in[0]), w = view(c, op->in[1]), y = view(c, op->out[0]);
    tv b = {0};
    if (op->n_in == 3)
        b = view(c, op->in[2]);
    uint64_t xv[4], yv[4], xs[4], ys[4];
    nchw_of(x.t, x.d, xv);
    nchw_of(y.t, y.d, yv);
    strides_of(x.t, xv, xs);
    strides_of(y.t, yv, ys);
    const int64_t H = (int64_t)xv[2], W = (int64_t)xv[3];
    const int64_t OH = (int64_t)yv[2], OW = (int64_t)yv[3];
    const int64_t KH = w.d[2], KW = w.d[3], cin_g = w.d[1], cout = w.d[0];
    const int64_t cout_g = cout / op->groups;
    const int64_t sh = op->stride[0], sw = op->stride[1], dh = op->dilation[0], dw = op->dilation[1];
    const int64_t pt = op->pad[0], pl = op->pad[1];
    const int q8 = x.t->dtype == RKNN_TENSOR_INT8;
    int32_t *acc_i = (int32_t *)(void *)c->scratch;
    float *acc_f = (float *)(void *)c->scratch;
    int64_t lo, hi;
    int_range(RKNN_TENSOR_INT8, &lo, &hi);

    for (uint64_t n = 0; n < xv[0]; n++) {
        for (int64_t oc = 0; oc < cout; oc++) {
            int64_t g = oc / cout_g;
            if (q8)
                memset(acc_i, 0, (size_t)(OH * OW) * sizeof *acc_i);
            else
                for (int64_t i = 0; i < OH * OW; i++)
                    acc_f[i] = 0.0f;
            int32_t xzp = q8 ? x.t->zp[0] : 0, wz = q8 ? wzp(w.t, (uint64_t)oc) : 0;
            for (int64_t icg = 0; icg < cin_g; icg++) {
                int64_t ic = g * cin_g + icg;
                const uint8_t *xc = x.p;
                uint64_t xbase = n * xs[0] + (uint64_t)ic * xs[1];
                for (int64_t kh = 0; kh < KH; kh++) {
                    for (int64_t kw = 0; kw < KW; kw++) {
                        uint64_t widx = (uint64_t)(((oc * cin_g + icg) * KH + kh) * KW + kw);
                        /* valid ow: 0 <= ow*sw - pl + kw*dw < W */
                        int64_t off = kw * dw - pl;
                        int64_t ow_lo = off >= 0 ? 0 : (-off + sw - 1) / sw;
                        int64_t ow_hi = W - 1 - off < 0 ? 0 : (W - 1 - off) / sw + 1;
                        if (ow_hi > OW)
                            ow_hi = OW;
                        if (ow_lo >= ow_hi)
                            continue;
                        if (q8) {
                            int32_t wv = (int32_t)(int8_t)w.p[widx] - wz;
                            if (wv == 0)
                                continue;
                            for (int64_t oh = 0; oh < OH; oh++) {
                                int64_t ih = oh * sh - pt + kh * dh;
                                if (ih < 0 || ih >= H)
                                    continue;
                                const int8_t *xr = (const int8_t *)(xc + xbase + (uint64_t)ih * xs[2]);
                                int32_t *a = acc_i + oh * OW;
                                int64_t step = sw * (int64_t)xs[3];
                                const int8_t *xp = xr + (ow_lo * sw + off) * (int64_t)xs[3];
                                for (int64_t ow = ow_lo; ow < ow_hi; ow++, xp += step)
                                    a[ow] += wv * ((int32_t)*xp - xzp);
                            }
                        } else {
                            float wv = ldf(w.t->dtype, w.p, widx);
                            for (int64_t oh = 0; oh < OH; oh++) {
                                int64_t ih = oh * sh - pt + kh * dh;
                                if (ih < 0 || ih >= H)
                                    continue;
                                uint64_t xr = xbase + (uint64_t)ih * xs[2];
                                float *a = acc_f + oh * OW;
                                for (int64_t ow = ow_lo; ow < ow_hi; ow++) {
                                    uint64_t iw = (uint64_t)(ow * sw + off);
                                    a[ow] += wv * ldf(x.t->dtype, xc, xr + iw * xs[3]);
                                }
                            }
                        }
                    }
                }
            }
            /* bias, requantize / round, store */
            uint64_t ybase = n * ys[0] + (uint64_t)oc * ys[1];
            if (q8) {
                double M = qmul(x.t, w.t, y.t, (uint64_t)oc);
                int64_t bias = 0;
                if (b.p) {
                    int32_t bv;
                    memcpy(&bv, b.p + oc * 4, 4);
                    bias = bv;
                }
                int32_t yzp = y.t->zp[0];
                for (int64_t oh = 0; oh < OH; oh++)
                    for (int64_t ow = 0; ow < OW; ow++) {
                        int64_t a = (int64_t)acc_i[oh * OW + ow] + bias;
                        int64_t q = requant((double)a * M, yzp, lo, hi);
                        if (op->relu && q < yzp)
                            q = yzp;
                        int8_t qb = (int8_t)q;
                        memcpy(y.p + ybase + (uint64_t)oh * ys[2] + (uint64_t)ow * ys[3], &qb, 1);
                    }
            } else {
                float bias = b.p ? ldf(b.t->dtype, b.p, (uint64_t)oc) : 0.0f;
                for (int64_t oh = 0; oh < OH; oh++)
                    for (int64_t ow = 0; ow < OW; ow++) {
                        float v = acc_f[oh * OW + ow] + bias;
                        if (op->relu && v < 0.0f)
                            v = 0.0f;
                        stf(y.t->dtype, y.p, ybase + (uint64_t)oh * ys[2] + (uint64_t)ow * ys[3], v);
                    }
            }
        }
    }
    return RKNN_SUCC;
}

static int k_dense(const run_ctx *c, const emu_op *op)
{
    tv x = view(c, op->in[0]), w = view(c, op->in[1]), y = view(c, op->out[0]);
    tv b = {0};
    if (op->n_in == 3)
        b = view(c, op->in[2]);
    uint64_t K = w.d[1], N = w.d[0], rows = x.n / K;
    if (x.t->dtype == RKNN_TENSOR_INT8) {
        int64_t lo, hi;
        int_range(RKNN_TENSOR_INT8, &lo, &hi);
        int32_t xzp = x.t->zp[0], yzp = y.t->zp[0];
        for (uint64_t r = 0; r < rows; r++) {
            const int8_t *xr = (const int8_t *)(x.p + r * K);
            for (uint64_t n = 0; n < N; n++) {
                const int8_t *wr = (const int8_t *)(w.p + n * K);
                int32_t wz = wzp(w.t, n), acc = 0;
                for (uint64_t k = 0; k < K; k++)
                    acc += ((int32_t)xr[k] - xzp) * ((int32_t)wr[k] - wz);
                int64_t a = acc;
                if (b.p) {
                    int32_t bv;
                    memcpy(&bv, b.p + n * 4, 4);
                    a += bv;
                }
                int64_t q = requant((double)a * qmul(x.t, w.t, y.t, n), yzp, lo, hi);
                if (op->relu && q < yzp)
                    q = yzp;
                ((int8_t *)y.p)[r * N + n] = (int8_t)q;
            }
        }
    } else {
        for (uint64_t r = 0; r < rows; r++)
            for (uint64_t n = 0; n < N; n++) {
                float acc = 0.0f;
                for (uint64_t k = 0; k < K; k++)
                    acc += ldf(x.t->dtype, x.p, r * K + k) * ldf(w.t->dtype, w.p, n * K + k);
                if (b.p)
                    acc += ldf(b.t->dtype, b.p, n);
                if (op->relu && acc < 0.0f)
                    acc = 0.0f;
                stf(y.t->dtype, y.p, r * N + n, acc);
            }
    }
    return RKNN_SUCC;
}

static int k_binary(const run_ctx *c, const emu_op *op)
{
    tv a = view(c, op->in[0]), b = view(c, op->in[1]), y = view(c, op->out[0]);
    uint32_t nd = y.t->n_dims;
    /* per output dim, element strides of a and b (0 where broadcast) */
    uint64_t sa[RKNN_MAX_DIMS], sb[RKNN_MAX_DIMS], idx[RKNN_MAX_DIMS] = {0};
    uint64_t acca = 1, accb = 1;
    for (int i = (int)nd - 1; i >= 0; i--) {
        int ia = i - (int)(nd - a.t->n_dims), ib = i - (int)(nd - b.t->n_dims);
        uint64_t da = ia >= 0 ? a.d[ia] : 1, db = ib >= 0 ? b.d[ib] : 1;
        sa[i] = da == 1 ? 0 : acca;
        sb[i] = db == 1 ? 0 : accb;
        acca *= da;
        accb *= db;
    }
    int quant = is_q(y.t), mul = op->opcode == EMU_OP_MUL;
    int64_t lo = 0, hi = 0;
    double m_mul = 0.0;
    int32_t za = 0, zb = 0, zy = 0;
    double fa = 0, fb = 0, fy = 0;
    if (quant) {
        int_range(y.t->dtype, &lo, &hi);
        za = a.t->zp[0];
        zb = b.t->zp[0];
        zy = y.t->zp[0];
        fa = a.t->scale[0];
        fb = b.t->scale[0];
        fy = y.t->scale[0];
        m_mul = (fa * fb) / fy;
    }
    uint64_t ia = 0, ib = 0;
    uint64_t inner = y.d[nd - 1];
    for (uint64_t o = 0; o < y.n; o += inner) {
        for (uint64_t k = 0; k < inner; k++) {
            uint64_t pa = ia + k * sa[nd - 1], pb = ib + k * sb[nd - 1];
            if (quant) {
                int64_t qa = ldq(a.t->dtype, a.p, pa) - za, qb = ldq(b.t->dtype, b.p, pb) - zb;
                double v = mul ? (double)(qa * qb) * m_mul
                               : ((double)qa * fa + (double)qb * fb) / fy;
                sti(y.t->dtype, y.p, o + k, requant(v, zy, lo, hi));
            } else {
                float va = ldf(a.t->dtype, a.p, pa), vb = ldf(b.t->dtype, b.p, pb);
                stf(y.t->dtype, y.p, o + k, mul ? va * vb : va + vb);
            }
        }
        /* advance the odometer over the outer dims */
        for (int i = (int)nd - 2; i >= 0; i--) {
            idx[i]++;
            ia += sa[i];
            ib += sb[i];
            if (idx[i] < y.d[i])
                break;
            ia -= sa[i] * idx[i];
            ib -= sb[i] * idx[i];
            idx[i] = 0;
        }
    }
    return RKNN_SUCC;
}

static int k_unary(const run_ctx *c, const emu_op *op)
{
    tv x = view(c, op->in[0]), y = view(c, op->out[0]);
    int sig = op->opcode == EMU_OP_SIGMOID;
    if (is_q8(x.t)) {
        /* table over every input code: dequantize, apply, requantize (float64) */
        uint8_t lut[256];
        int64_t lo, hi;
        int_range(y.t->dtype, &lo, &hi);
        int sx = x.t->dtype == RKNN_TENSOR_INT8;
        for (int code = 0; code < 256; code++) {
            int32_t q = sx ? (int32_t)(int8_t)(uint8_t)code : code;
            double r = (double)(q - x.t->zp[0]) * (double)x.t->scale[0];
            double f = sig ? 1.0 / (1.0 + exp(-r)) : (r < 0.0 ? 0.0 : r);
            int64_t v = requant(f / (double)y.t->scale[0], y.t->zp[0], lo, hi);
            lut[code] = (uint8_t)(v & 0xff);
        }
        for (uint64_t i = 0; i < x.n; i++)
            y.p[i] = lut[x.p[i]];
        return RKNN_SUCC;
    }
    for (uint64_t i = 0; i < x.n; i++) {
        float v = ldf(x.t->dtype, x.p, i);
        if (sig)
            v = 1.0f / (1.0f + expf(-v));
        else if (v < 0.0f)
            v = 0.0f;
        stf(y.t->dtype, y.p, i, v);
    }
    return RKNN_SUCC;
}

static int k_transpose(const run_ctx *c, const emu_op *op)
{
    tv x = view(c, op->in[0]), y = view(c, op->out[0]);
    const int32_t *perm = emu_model_find_attr(op, "perm")->data;
    uint32_t nd = x.t->n_dims;
    size_t es = emu_model_dtype_size(x.t->dtype);
    uint64_t xs[RKNN_MAX_DIMS], s[RKNN_MAX_DIMS], idx[RKNN_MAX_DIMS] = {0};
    uint64_t acc = 1;
    for (int i = (int)nd - 1; i >= 0; i--) {
        xs[i] = acc;
        acc *= x.d[i];
    }
    for (uint32_t i = 0; i < nd; i++)
        s[i] = xs[perm[i]];            /* input stride of output dim i */
    uint64_t src = 0;
    for (uint64_t o = 0; o < y.n; o++) {
        memcpy(y.p + o * es, x.p + src * es, es);
        for (int i = (int)nd - 1; i >= 0; i--) {
            idx[i]++;
            src += s[i];
            if (idx[i] < y.d[i])
                break;
            src -= s[i] * idx[i];
            idx[i] = 0;
        }
    }
    return RKNN_SUCC;
}

static int k_convert(const run_ctx *c, const emu_op *op)
{
    tv x = view(c, op->in[0]), y = view(c, op->out[0]);
    rknn_tensor_type xt = x.t->dtype, yt = y.t->dtype;
    int64_t lo, hi;
    int_range(yt, &lo, &hi);
    switch (op->opcode) {
    case EMU_OP_QUANTIZE:
        for (uint64_t i = 0; i < x.n; i++) {
            float v = is_q(x.t) ? emu_dequantize(ldq(xt, x.p, i), x.t->scale[0], x.t->zp[0])
                                : ldf(xt, x.p, i);
            sti(yt, y.p, i, emu_quantize(v, y.t->scale[0], y.t->zp[0], (int32_t)lo, (int32_t)hi));
        }
        break;
    case EMU_OP_DEQUANTIZE:
        for (uint64_t i = 0; i < x.n; i++)
            stf(yt, y.p, i, emu_dequantize(ldq(xt, x.p, i), x.t->scale[0], x.t->zp[0]));
        break;
    default: /* cast */
        for (uint64_t i = 0; i < x.n; i++) {
            double v = ldd(xt, x.p, i);
            if (yt == RKNN_TENSOR_FLOAT32 || yt == RKNN_TENSOR_FLOAT16) {
                stf(yt, y.p, i, (float)v);
            } else {
                double r = rint(v);
                int64_t q = r != r ? 0 : r < (double)lo ? lo : r > (double)hi ? hi : (int64_t)r;
                sti(yt, y.p, i, q);
            }
        }
        break;
    }
    return RKNN_SUCC;
}

static void fill_view_desc(const run_ctx *c, uint32_t id, emu_tensor_view *v, int with_data)
{
    const emu_tensor *t = &c->m->tensors[id];
    emu_io_desc *d = &v->desc;
    memset(d, 0, sizeof *d);
    memcpy(d->name, t->name, sizeof d->name);
    d->n_dims = t->n_dims;
    memcpy(d->dims, emu_model_tensor_dims(c->m, c->set, id), t->n_dims * sizeof(uint32_t));
    d->fmt = t->fmt;
    d->type = t->dtype;
    d->qnt_type = t->qnt_type;
    d->fl = t->fl;
    d->zp = t->n_q ? t->zp[0] : 0;
    d->scale = t->n_q ? t->scale[0] : 1.0f;
    d->n_norm = t->n_norm;
    memcpy(d->mean, t->mean, sizeof d->mean);
    memcpy(d->std, t->std, sizeof d->std);
    v->data = with_data ? view(c, id).p : NULL;
}

int emu_model_op_is_custom(const emu_model *m, uint32_t i)
{
    return m && i < m->n_ops && m->ops[i].opcode == EMU_OP_CUSTOM;
}

int emu_model_op_views(const emu_model *m, uint32_t op_index, const void *const *inputs,
                       void *const *outputs, const emu_run_env *env, emu_tensor_view *ins,
                       uint32_t *n_in, emu_tensor_view *outs, uint32_t *n_out)
{
    if (!m || !env || op_index >= m->n_ops || !ins || !outs || !n_in || !n_out)
        return RKNN_ERR_PARAM_INVALID;
    uint32_t rows = m->n_sets ? m->n_sets : 1;
    if (env->shape_set >= rows)
        return RKNN_ERR_PARAM_INVALID;
    const emu_op *op = &m->ops[op_index];
    run_ctx c = {m, env, env->shape_set, inputs, outputs, NULL};
    for (uint32_t k = 0; k < op->n_in; k++) {
        fill_view_desc(&c, op->in[k], &ins[k], 0);
        ins[k].data = view_ptr_or_null(&c, op->in[k]);
    }
    for (uint32_t k = 0; k < op->n_out; k++) {
        fill_view_desc(&c, op->out[k], &outs[k], 0);
        outs[k].data = view_ptr_or_null(&c, op->out[k]);
    }
    *n_in = op->n_in;
    *n_out = op->n_out;
    return RKNN_SUCC;
}

static int k_custom(const run_ctx *c, const emu_op *op, uint32_t op_index)
{
    if (!c->env->custom_op)
        return RKNN_ERR_FAIL;          /* no implementation registered for this op type */
    emu_tensor_view ins[EMU_MAX_OP_IO], outs[EMU_MAX_OP_IO];
    for (uint32_t k = 0; k < op->n_in; k++)
        fill_view_desc(c, op->in[k], &ins[k], 1);
    for (uint32_t k = 0; k < op->n_out; k++)
        fill_view_desc(c, op->out[k], &outs[k], 1);
    int rc = c->env->custom_op(c->env->custom_user, c->m, op_index, op->type, ins, op->n_in,
                               outs, op->n_out);
    return rc > 0 ? RKNN_SUCC : rc;
}

static int64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int emu_model_run(const emu_model *m, const void *const *inputs, void *const *outputs,
                  const emu_run_env *env)
{
    if (!m || !env || !inputs || !outputs)
        return RKNN_ERR_PARAM_INVALID;
    uint32_t rows = m->n_sets ? m->n_sets : 1;
    if (env->shape_set >= rows)
        return RKNN_ERR_PARAM_INVALID;
    if (m->weight_size && !env->weights)
        return RKNN_ERR_PARAM_INVALID;
    if (m->internal_size && (!env->internal || env->internal_size < m->internal_size))
        return RKNN_ERR_PARAM_INVALID;
    for (uint32_t i = 0; i < m->n_inputs; i++)
        if (!inputs[i])
            return RKNN_ERR_INPUT_INVALID;
    for (uint32_t i = 0; i < m->n_outputs; i++)
        if (!outputs[i])
            return RKNN_ERR_OUTPUT_INVALID;
    if (m->standin)
        return RKNN_ERR_PARAM_INVALID;   /* no graph: its kind's run (emu_standin_model_run) */
    run_ctx c = {m, env, env->shape_set, inputs, outputs,
                 env->internal ? env->internal + m->set_scratch[env->shape_set] : NULL};
    for (uint32_t o = 0; o < m->n_ops; o++) {
        const emu_op *op = &m->ops[o];
        int64_t t0 = env->op_time_us ? now_us() : 0;
        int rc;
        switch (op->opcode) {
        case EMU_OP_CONV2D: rc = k_conv(&c, op); break;
        case EMU_OP_DENSE: rc = k_dense(&c, op); break;
        case EMU_OP_ADD:
        case EMU_OP_MUL: rc = k_binary(&c, op); break;
        case EMU_OP_RELU:
        case EMU_OP_SIGMOID: rc = k_unary(&c, op); break;
        case EMU_OP_RESHAPE: {
            tv x = view(&c, op->in[0]), y = view(&c, op->out[0]);
            memcpy(y.p, x.p, (size_t)(x.n * emu_model_dtype_size(x.t->dtype)));
            rc = RKNN_SUCC;
            break;
        }
        case EMU_OP_TRANSPOSE: rc = k_transpose(&c, op); break;
        case EMU_OP_QUANTIZE:
        case EMU_OP_DEQUANTIZE:
        case EMU_OP_CAST: rc = k_convert(&c, op); break;
        case EMU_OP_CUSTOM: rc = k_custom(&c, op, o); break;
        default: rc = RKNN_ERR_MODEL_INVALID; break;
        }
        if (env->op_time_us)
            env->op_time_us[o] = now_us() - t0;
        if (rc)
            return rc;
    }
    return RKNN_SUCC;
}
