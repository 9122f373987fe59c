/*
 * rknnx emulator, runtime half: the matmul API (C = A x B on the "NPU").
 *
 * A matmul context is an emu_ctx without a model (c->mm set), so rknn_create_mem,
 * rknn_mem_sync and rknn_destroy_mem work on it as the demos use them.
 *
 * Emulated:
 *   types 1 FP16xFP16->FP32, 2 INT8xINT8->INT32, 3 INT8xINT8->INT8, 4 FP16xFP16->FP16,
 *         5 FP16xINT8->FP32, 6 FP16xINT8->FP16, 9 INT8xINT8->FP32;
 *   layouts: A/C normal or native, B normal, transposed or native;
 *   B quantization per layer or per channel (symmetric or asymmetric);
 *   dynamic shapes; core masks (RK3588/RK3576).
 * Not emulated (RKNN_ERR_FAIL + "E RKNN: ... not emulated"): int4 types (7, 8, 10, 11, 12,
 * 15), per-group quantization, the K splitting of very large K.
 *
 * Numerics: fp16 operands are widened to float32 and accumulated in float32 in k order;
 * int8 accumulates sum((a - zA) * (b - zB[n])) exactly (int64).  INT8->INT32 returns that
 * sum, saturated; INT8->INT8 requantizes in float64: clip(rint(acc * (sA * sB[n]) / sC) + zC);
 * INT8->FP32 is (float)(acc * sA * sB[n]) in float64; FP16xINT8 dequantizes B as
 * (b - zB[n]) * sB[n] in float32.  Unset quantization parameters are scale 1, zp 0.
 *
 * Native layouts (sub-block sizes from the vendor's tables; per personality):
 *   A native (K/s, M, s): s = 8 (int8) / 4 (fp16) on RK3566/RK3568, else 16 / 8;
 *   B native (N/n, K/k, n, k): RK3566/68 int8 (16,32) fp16 (8,16); RK3562 int8 (16,32)
 *     fp16 (8,32); RK3588/RK3576 (and the others) int8 (32,32) fp16 (16,32);
 *   C native (N/4, M, 4).  Padding elements are zero.
 * By default rknn_matmul_run cleans A and B and invalidates C (cacheable mems), like
 * rknn_run.
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "numeric.h"
#include "runtime.h"

typedef struct mm_quant {
    float *scale;
    int32_t *zp;
    int32_t n_scale, n_zp;
} mm_quant;

typedef struct emu_mm {
    rknn_matmul_info info;
    int n_shapes;
    rknn_matmul_shape *shapes;   /* n_shapes >= 1 */
    int cur;
    emu_mem *mem[3];             /* A, B, C bindings (references) */
    mm_quant q[3];
    uint32_t core_mask;
} emu_mm;

typedef struct mm_types {
    rknn_tensor_type a, b, c;
} mm_types;

static int mm_types_of(int type, mm_types *t)
{
    *t = (mm_types){RKNN_TENSOR_FLOAT32, RKNN_TENSOR_FLOAT32, RKNN_TENSOR_FLOAT32};
    switch (type) {
    case RKNN_FLOAT16_MM_FLOAT16_TO_FLOAT32: *t = (mm_types){RKNN_TENSOR_FLOAT16, RKNN_TENSOR_FLOAT16, RKNN_TENSOR_FLOAT32}; return 1;
    case RKNN_INT8_MM_INT8_TO_INT32: *t = (mm_types){RKNN_TENSOR_INT8, RKNN_TENSOR_INT8, RKNN_TENSOR_INT32}; return 1;
    case RKNN_INT8_MM_INT8_TO_INT8: *t = (mm_types){RKNN_TENSOR_INT8, RKNN_TENSOR_INT8, RKNN_TENSOR_INT8}; return 1;
    case RKNN_FLOAT16_MM_FLOAT16_TO_FLOAT16: *t = (mm_types){RKNN_TENSOR_FLOAT16, RKNN_TENSOR_FLOAT16, RKNN_TENSOR_FLOAT16}; return 1;
    case RKNN_FLOAT16_MM_INT8_TO_FLOAT32: *t = (mm_types){RKNN_TENSOR_FLOAT16, RKNN_TENSOR_INT8, RKNN_TENSOR_FLOAT32}; return 1;
    case RKNN_FLOAT16_MM_INT8_TO_FLOAT16: *t = (mm_types){RKNN_TENSOR_FLOAT16, RKNN_TENSOR_INT8, RKNN_TENSOR_FLOAT16}; return 1;
    case RKNN_INT8_MM_INT8_TO_FLOAT32: *t = (mm_types){RKNN_TENSOR_INT8, RKNN_TENSOR_INT8, RKNN_TENSOR_FLOAT32}; return 1;
    default: return 0;
    }
}

/* sub-block sizes of the native layouts for this chip and A/B element size */
static uint32_t sub_a(const emu_platform *p, size_t es)
{
    int rk356x = strcmp(p->npu_group, "RK3566") == 0;
    return es == 1 ? (rk356x ? 8 : 16) : (rk356x ? 4 : 8);
}

static void sub_b(const emu_platform *p, size_t es, uint32_t *nn, uint32_t *kk)
{
    if (strcmp(p->npu_group, "RK3566") == 0) {
        *nn = es == 1 ? 16 : 8;
        *kk = es == 1 ? 32 : 16;
    } else if (strcmp(p->npu_group, "RK3562") == 0) {
        *nn = es == 1 ? 16 : 8;
        *kk = 32;
    } else {
        *nn = es == 1 ? 32 : 16;
        *kk = 32;
    }
}

static uint32_t up(uint32_t v, uint32_t a) { return (v + a - 1) / a * a; }

static void fill_tattr(rknn_matmul_tensor_attr *t, const char *name, rknn_tensor_type type,
                       uint32_t n_dims, const uint32_t *dims)
{
    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, "%s", name);
    t->n_dims = n_dims;
    uint64_t n = 1;
    for (uint32_t i = 0; i < n_dims; i++) {
        t->dims[i] = dims[i];
        n *= dims[i];
    }
    t->type = type;
    t->size = (uint32_t)(n * emu_type_size(type));
}

static void fill_io(const emu_platform *p, const rknn_matmul_info *info, const rknn_matmul_shape *s,
                    rknn_matmul_io_attr *io)
{
    mm_types t;
    mm_types_of(info->type, &t);
    uint32_t M = (uint32_t)s->M, K = (uint32_t)s->K, N = (uint32_t)s->N;
    size_t ea = emu_type_size(t.a), eb = emu_type_size(t.b);
    uint32_t d[4];
    if (info->AC_layout == RKNN_MM_LAYOUT_NATIVE) {
        uint32_t sa = sub_a(p, ea);
        d[0] = up(K, sa) / sa; d[1] = M; d[2] = sa;
        fill_tattr(&io->A, "A", t.a, 3, d);
        d[0] = up(N, 4) / 4; d[1] = M; d[2] = 4;
        fill_tattr(&io->C, "C", t.c, 3, d);
    } else {
        d[0] = M; d[1] = K;
        fill_tattr(&io->A, "A", t.a, 2, d);
        d[0] = M; d[1] = N;
        fill_tattr(&io->C, "C", t.c, 2, d);
    }
    if (info->B_layout == RKNN_MM_LAYOUT_NATIVE) {
        uint32_t nn, kk;
        sub_b(p, eb, &nn, &kk);
        d[0] = up(N, nn) / nn; d[1] = up(K, kk) / kk; d[2] = nn; d[3] = kk;
        fill_tattr(&io->B, "B", t.b, 4, d);
    } else if (info->B_layout == RKNN_MM_LAYOUT_TP_NORM) {
        d[0] = N; d[1] = K;
        fill_tattr(&io->B, "B", t.b, 2, d);
    } else {
        d[0] = K; d[1] = N;
        fill_tattr(&io->B, "B", t.b, 2, d);
    }
}

static int check_info(const char *fn, const rknn_matmul_info *info)
{
    mm_types t;
    if (!mm_types_of(info->type, &t)) {
        EMU_ERR(fn, "matmul type %d is not emulated (int4 types are not)", (int)info->type);
        return RKNN_ERR_FAIL;
    }
    if (info->B_layout < 0 || info->B_layout > 2 || info->AC_layout < 0 || info->AC_layout > 1) {
        EMU_ERR(fn, "invalid layouts B %d / AC %d", info->B_layout, info->AC_layout);
        return RKNN_ERR_PARAM_INVALID;
    }
    if (info->B_quant_type < 0 || info->B_quant_type > 5) {
        EMU_ERR(fn, "invalid B_quant_type %d", info->B_quant_type);
        return RKNN_ERR_PARAM_INVALID;
    }
    if (info->B_quant_type >= RKNN_QUANT_TYPE_PER_GROUP_SYM) {
        EMU_ERR(fn, "per-group quantization is not emulated");
        return RKNN_ERR_FAIL;
    }
    return RKNN_SUCC;
}

static int check_shape(const char *fn, const rknn_matmul_shape *s)
{
    if (s->M <= 0 || s->K <= 0 || s->N <= 0 || s->M > 65536 || s->K > 65536 || s->N > 65536) {
        EMU_ERR(fn, "invalid M/K/N %d/%d/%d", s->M, s->K, s->N);
        return RKNN_ERR_PARAM_INVALID;
    }
    return RKNN_SUCC;
}

static int mm_create(const char *fn, rknn_matmul_ctx *ctx, rknn_matmul_info *info, int n,
                     const rknn_matmul_shape *shapes, rknn_matmul_io_attr *io)
{
    const emu_platform *p = emu_platform_current(NULL);
    if (!p) {
        EMU_ERR(fn, "RKNN_EMU_PLATFORM names no known chip");
        return RKNN_ERR_DEVICE_UNAVAILABLE;
    }
    if (!emu_platform_supports_func(p, "rknn_matmul_create")) {
        EMU_ERR(fn, "not supported on %s", p->name);
        return RKNN_ERR_FAIL;
    }
    int rc = check_info(fn, info);
    for (int i = 0; rc == RKNN_SUCC && i < n; i++)
        rc = check_shape(fn, &shapes[i]);
    if (rc)
        return rc;
    emu_ctx *c = emu_ctx_alloc(p, 0);
    emu_mm *mm = calloc(1, sizeof *mm);
    rknn_matmul_shape *sh = calloc((size_t)n, sizeof *sh);
    if (!c || !mm || !sh) {
        free(mm);
        free(sh);
        if (c)
            emu_ctx_free(c);
        return RKNN_ERR_MALLOC_FAIL;
    }
    memcpy(sh, shapes, (size_t)n * sizeof *sh);
    mm->info = *info;
    mm->shapes = sh;
    mm->n_shapes = n;
    c->mm = mm;
    if ((rc = emu_ctx_register(c)) != RKNN_SUCC) {
        emu_ctx_free(c);
        return rc;
    }
    for (int i = 0; i < n; i++)
        fill_io(p, info, &sh[i], &io[i]);
    *ctx = c->handle;
    return RKNN_SUCC;
}

int rknn_matmul_create(rknn_matmul_ctx *ctx, rknn_matmul_info *info, rknn_matmul_io_attr *io_attr)
{
    static const char fn[] = "rknn_matmul_create";
    EMU_INJECT_INT("rknn_matmul_create");
    emu_log_refresh_env();
    if (!ctx || !info || !io_attr) {
        EMU_ERR(fn, "NULL argument");
        return RKNN_ERR_PARAM_INVALID;
    }
    *ctx = 0;
    rknn_matmul_shape s = {info->M, info->K, info->N};
    return mm_create(fn, ctx, info, 1, &s, io_attr);
}

int rknn_matmul_create_dynamic_shape(rknn_matmul_ctx *ctx, rknn_matmul_info *info, int shape_num,
                                     rknn_matmul_shape dynamic_shapes[],
                                     rknn_matmul_io_attr io_attrs[])
{
    static const char fn[] = "rknn_matmul_create_dynamic_shape";
    EMU_INJECT_INT("rknn_matmul_create_dynamic_shape");
    emu_log_refresh_env();
    if (!ctx || !info || shape_num <= 0 || shape_num > 1024 || !dynamic_shapes || !io_attrs) {
        EMU_ERR(fn, "invalid argument");
        return RKNN_ERR_PARAM_INVALID;
    }
    *ctx = 0;
    return mm_create(fn, ctx, info, shape_num, dynamic_shapes, io_attrs);
}

void emu_mm_free(emu_mm *mm)
{
    for (int i = 0; i < 3; i++) {
        emu_mem_put(mm->mem[i]);
        free(mm->q[i].scale);
        free(mm->q[i].zp);
    }
    free(mm->shapes);
    free(mm);
}

int rknn_matmul_destroy(rknn_matmul_ctx ctx)
{
    EMU_INJECT_INT("rknn_matmul_destroy");
    emu_ctx *c = emu_ctx_get(ctx);
    if (!c || !c->mm) {
        EMU_ERR("rknn_matmul_destroy", "invalid matmul context 0x%llx", (unsigned long long)ctx);
        emu_ctx_put(c);
        return RKNN_ERR_CTX_INVALID;
    }
    emu_ctx_put(c);
    return rknn_destroy(ctx);
}

static int which_tensor(const char *name)
{
    if (strcmp(name, "A") == 0)
        return 0;
    if (strcmp(name, "B") == 0)
        return 1;
    if (strcmp(name, "C") == 0)
        return 2;
    return -1;
}

int rknn_matmul_set_io_mem(rknn_matmul_ctx ctx, rknn_tensor_mem *pub, rknn_matmul_tensor_attr *attr)
{
    static const char fn[] = "rknn_matmul_set_io_mem";
    EMU_INJECT_INT("rknn_matmul_set_io_mem");
    emu_ctx *c;
    int rc = emu_ctx_enter(ctx, fn, &c);
    if (rc)
        return rc;
    emu_mem *m = NULL;
    char name[RKNN_MAX_NAME_LEN];
    int w = -1;
    if (attr) {
        memcpy(name, attr->name, sizeof name);
        name[sizeof name - 1] = '\0';
        w = which_tensor(name);
    }
    if (w < 0) {
        EMU_ERR(fn, "attr must be io_attr.A, .B or .C");
        rc = RKNN_ERR_PARAM_INVALID;
        goto out;
    }
    m = emu_mem_get(pub);
    if (!m) {
        EMU_ERR(fn, "unknown or destroyed mem %p", (void *)pub);
        rc = RKNN_ERR_PARAM_INVALID;
        goto out;
    }
    rknn_matmul_io_attr io;
    fill_io(c->plat, &c->mm->info, &c->mm->shapes[c->mm->cur], &io);
    const rknn_matmul_tensor_attr *t = w == 0 ? &io.A : (w == 1 ? &io.B : &io.C);
    if (m->size < t->size) {
        EMU_ERR(fn, "%s: mem of %llu bytes, need %u", name, (unsigned long long)m->size, t->size);
        rc = RKNN_ERR_PARAM_INVALID;
        goto out;
    }
    emu_mem_put(c->mm->mem[w]);
    c->mm->mem[w] = m;
    m = NULL;
out:
    emu_mem_put(m);
    emu_ctx_leave(c);
    return rc;
}

int rknn_matmul_set_core_mask(rknn_matmul_ctx context, rknn_core_mask core_mask)
{
    static const char fn[] = "rknn_matmul_set_core_mask";
    EMU_INJECT_INT("rknn_matmul_set_core_mask");
    emu_ctx *c;
    int rc = emu_ctx_enter(context, fn, &c);
    if (rc)
        return rc;
    uint32_t m = (uint32_t)core_mask;
    int ok = m == RKNN_NPU_CORE_AUTO || m == RKNN_NPU_CORE_ALL || m == RKNN_NPU_CORE_0 ||
             m == RKNN_NPU_CORE_1 || m == RKNN_NPU_CORE_0_1;
    if (c->plat->n_cores >= 3)
        ok = ok || m == RKNN_NPU_CORE_2 || m == RKNN_NPU_CORE_0_1_2;
    if (!ok) {
        EMU_ERR(fn, "core mask 0x%x is not valid on %s", m, c->plat->name);
        rc = RKNN_ERR_PARAM_INVALID;
    } else {
        c->mm->core_mask = m;
    }
    emu_ctx_leave(c);
    return rc;
}

int rknn_matmul_set_quant_params(rknn_matmul_ctx context, rknn_quant_params *params)
{
    static const char fn[] = "rknn_matmul_set_quant_params";
    EMU_INJECT_INT("rknn_matmul_set_quant_params");
    emu_ctx *c;
    int rc = emu_ctx_enter(context, fn, &c);
    if (rc)
        return rc;
    char name[RKNN_MAX_NAME_LEN];
    int w = -1;
    if (params) {
        memcpy(name, params->name, sizeof name);
        name[sizeof name - 1] = '\0';
        w = which_tensor(name);
    }
    const rknn_matmul_shape *s = &c->mm->shapes[c->mm->cur];
    int per_channel = w == 1 && (c->mm->info.B_quant_type == RKNN_QUANT_TYPE_PER_CHANNEL_SYM ||
                                 c->mm->info.B_quant_type == RKNN_QUANT_TYPE_PER_CHANNEL_ASYM);
    int32_t want = per_channel ? s->N : 1;
    if (w < 0 || !params->scale || params->scale_len != want ||
        (params->zp_len && (!params->zp || (params->zp_len != want && params->zp_len != 1))) ||
        params->zp_len < 0) {
        EMU_ERR(fn, "need name A/B/C, %d scale(s) and 0, 1 or %d zero points", want, want);
        rc = RKNN_ERR_PARAM_INVALID;
        goto out;
    }
    for (int32_t i = 0; i < params->scale_len; i++)
        if (!(params->scale[i] > 0.0f) || isinf(params->scale[i])) {
            EMU_ERR(fn, "%s: scale[%d] must be positive and finite", name, i);
            rc = RKNN_ERR_PARAM_INVALID;
            goto out;
        }
    mm_quant *q = &c->mm->q[w];
    float *sc = malloc((size_t)params->scale_len * sizeof *sc);
    int32_t *zp = params->zp_len ? malloc((size_t)params->zp_len * sizeof *zp) : NULL;
    if (!sc || (params->zp_len && !zp)) {
        free(sc);
        free(zp);
        rc = RKNN_ERR_MALLOC_FAIL;
        goto out;
    }
    memcpy(sc, params->scale, (size_t)params->scale_len * sizeof *sc);
    if (zp)
        memcpy(zp, params->zp, (size_t)params->zp_len * sizeof *zp);
    free(q->scale);
    free(q->zp);
    q->scale = sc;
    q->zp = zp;
    q->n_scale = params->scale_len;
    q->n_zp = params->zp_len;
out:
    emu_ctx_leave(c);
    return rc;
}

static float q_scale(const mm_quant *q, uint32_t i)
{
    return q->n_scale ? q->scale[q->n_scale == 1 ? 0 : i] : 1.0f;
}

static int32_t q_zp(const mm_quant *q, uint32_t i)
{
    return q->n_zp ? q->zp[q->n_zp == 1 ? 0 : i] : 0;
}

int rknn_matmul_get_quant_params(rknn_matmul_ctx ctx, rknn_quant_params *params, float *scale)
{
    static const char fn[] = "rknn_matmul_get_quant_params";
    EMU_INJECT_INT("rknn_matmul_get_quant_params");
    emu_ctx *c;
    int rc = emu_ctx_enter(ctx, fn, &c);
    if (rc)
        return rc;
    if (!params || !scale) {
        EMU_ERR(fn, "NULL argument");
        emu_ctx_leave(c);
        return RKNN_ERR_PARAM_INVALID;
    }
    /* B's parameters (runtime-owned arrays, valid until they are set again or the context
       is destroyed), and A's scale times B's first scale: the estimate of C's scale */
    mm_quant *b = &c->mm->q[1];
    snprintf(params->name, sizeof params->name, "B");
    params->scale = b->scale;
    params->scale_len = b->n_scale;
    params->zp = b->zp;
    params->zp_len = b->n_zp;
    *scale = q_scale(&c->mm->q[0], 0) * q_scale(b, 0);
    emu_ctx_leave(c);
    return RKNN_SUCC;
}

int rknn_matmul_set_dynamic_shape(rknn_matmul_ctx ctx, rknn_matmul_shape *shape)
{
    static const char fn[] = "rknn_matmul_set_dynamic_shape";
    EMU_INJECT_INT("rknn_matmul_set_dynamic_shape");
    emu_ctx *c;
    int rc = emu_ctx_enter(ctx, fn, &c);
    if (rc)
        return rc;
    rc = RKNN_ERR_PARAM_INVALID;
    for (int i = 0; shape && i < c->mm->n_shapes; i++) {
        const rknn_matmul_shape *s = &c->mm->shapes[i];
        if (s->M == shape->M && s->K == shape->K && s->N == shape->N) {
            c->mm->cur = i;
            rc = RKNN_SUCC;
            break;
        }
    }
    if (rc)
        EMU_ERR(fn, "shape is not one given to rknn_matmul_create_dynamic_shape");
    emu_ctx_leave(c);
    return rc;
}

/* element offsets in the (possibly native) layouts */
typedef struct mm_geo {
    uint32_t M, K, N, sa, nn, kk, Kp_b;
    int a_native, c_native, b_layout;
} mm_geo;

static size_t off_a(const mm_geo *g, uint32_t m, uint32_t k)
{
    if (!g->a_native)
        return (size_t)m * g->K + k;
    return ((size_t)(k / g->sa) * g->M + m) * g->sa + k % g->sa;
}

static size_t off_b(const mm_geo *g, uint32_t k, uint32_t n)
{
    switch (g->b_layout) {
    case RKNN_MM_LAYOUT_TP_NORM: return (size_t)n * g->K + k;
    case RKNN_MM_LAYOUT_NATIVE:
        return (((size_t)(n / g->nn) * (g->Kp_b / g->kk) + k / g->kk) * g->nn + n % g->nn) * g->kk +
               k % g->kk;
    default: return (size_t)k * g->N + n;
    }
}

static size_t off_c(const mm_geo *g, uint32_t m, uint32_t n)
{
    if (!g->c_native)
        return (size_t)m * g->N + n;
    return ((size_t)(n / 4) * g->M + m) * 4 + n % 4;
}

static float ld_f16(const uint8_t *p, size_t i)
{
    uint16_t h;
    memcpy(&h, p + 2 * i, 2);
    return emu_f16_to_f32(h);
}

int rknn_matmul_run(rknn_matmul_ctx ctx)
{
    static const char fn[] = "rknn_matmul_run";
    EMU_INJECT_INT("rknn_matmul_run");
    emu_ctx *c;
    int rc = emu_ctx_enter(ctx, fn, &c);
    if (rc)
        return rc;
    emu_mm *mm = c->mm;
    for (int i = 0; i < 3; i++)
        if (!mm->mem[i] || !emu_mem_alive(mm->mem[i])) {
            EMU_ERR(fn, "%c has no live mem: call rknn_matmul_set_io_mem", "ABC"[i]);
            emu_ctx_leave(c);
            return RKNN_ERR_PARAM_INVALID;
        }
    mm_types t;
    mm_types_of(mm->info.type, &t);
    const rknn_matmul_shape *s = &mm->shapes[mm->cur];
    rknn_matmul_io_attr io;
    fill_io(c->plat, &mm->info, s, &io);
    if (mm->mem[0]->size < io.A.size || mm->mem[1]->size < io.B.size || mm->mem[2]->size < io.C.size) {
        EMU_ERR(fn, "a bound mem is too small for the current shape: bind again");
        emu_ctx_leave(c);
        return RKNN_ERR_PARAM_INVALID;
    }
    mm_geo g = {(uint32_t)s->M, (uint32_t)s->K, (uint32_t)s->N, 0, 0, 0, 0,
                mm->info.AC_layout == RKNN_MM_LAYOUT_NATIVE,
                mm->info.AC_layout == RKNN_MM_LAYOUT_NATIVE, mm->info.B_layout};
    g.sa = sub_a(c->plat, emu_type_size(t.a));
    sub_b(c->plat, emu_type_size(t.b), &g.nn, &g.kk);
    g.Kp_b = up(g.K, g.kk);
    for (int i = 0; i < 2; i++)
        if (!emu_mem_coherent(mm->mem[i]))
            emu_mem_sync_range(mm->mem[i], 0, mm->mem[i]->size, 1);
    long long inflight = EMU_CTR_ADD(runs_in_flight, 1) + 1;
    long long peak = atomic_load(&emu_ctr.peak_runs_in_flight);
    while (inflight > peak &&
           !atomic_compare_exchange_weak(&emu_ctr.peak_runs_in_flight, &peak, inflight)) {
    }
    const uint8_t *A = mm->mem[0]->dev, *B = mm->mem[1]->dev;
    uint8_t *Cd = mm->mem[2]->dev;
    if (g.c_native)
        memset(Cd, 0, io.C.size);
    const mm_quant *qa = &mm->q[0], *qb = &mm->q[1], *qc = &mm->q[2];
    for (uint32_t m = 0; m < g.M; m++) {
        for (uint32_t n = 0; n < g.N; n++) {
            size_t oc = off_c(&g, m, n);
            if (t.a == RKNN_TENSOR_INT8) {
                int32_t za = q_zp(qa, 0), zb = q_zp(qb, n);
                int64_t acc = 0;
                for (uint32_t k = 0; k < g.K; k++)
                    acc += ((int64_t)(int8_t)A[off_a(&g, m, k)] - za) *
                           ((int64_t)(int8_t)B[off_b(&g, k, n)] - zb);
                if (t.c == RKNN_TENSOR_INT32) {
                    int32_t v = acc > INT32_MAX ? INT32_MAX : (acc < INT32_MIN ? INT32_MIN : (int32_t)acc);
                    memcpy(Cd + 4 * oc, &v, 4);
                } else if (t.c == RKNN_TENSOR_INT8) {
                    double mul = ((double)q_scale(qa, 0) * q_scale(qb, n)) / q_scale(qc, 0);
                    double r = rint((double)acc * mul) + q_zp(qc, 0);
                    r = r < -128 ? -128 : (r > 127 ? 127 : r);
                    Cd[oc] = (uint8_t)(int8_t)r;
                } else {
                    float f = (float)((double)acc * q_scale(qa, 0) * q_scale(qb, n));
                    memcpy(Cd + 4 * oc, &f, 4);
                }
            } else {
                float acc = 0.0f;
                for (uint32_t k = 0; k < g.K; k++) {
                    float a = ld_f16(A, off_a(&g, m, k));
                    float b = t.b == RKNN_TENSOR_FLOAT16
                                  ? ld_f16(B, off_b(&g, k, n))
                                  : emu_dequantize((int8_t)B[off_b(&g, k, n)], q_scale(qb, n), q_zp(qb, n));
                    acc += a * b;
                }
                if (t.c == RKNN_TENSOR_FLOAT32) {
                    memcpy(Cd + 4 * oc, &acc, 4);
                } else {
                    uint16_t h = emu_f32_to_f16(acc);
                    memcpy(Cd + 2 * oc, &h, 2);
                }
            }
        }
    }
    int64_t npu = emu_npu_time_us();
    if (npu > 0) {
        struct timespec ts = {(time_t)(npu / 1000000), (long)(npu % 1000000) * 1000};
        nanosleep(&ts, NULL);
    }
    EMU_CTR_ADD(runs_in_flight, -1);
    EMU_CTR_ADD(runs, 1);
    if (!emu_mem_coherent(mm->mem[2]))
        emu_mem_sync_range(mm->mem[2], 0, mm->mem[2]->size, 0);
    emu_ctx_leave(c);
    return RKNN_SUCC;
}

int rknn_B_normal_layout_to_native_layout(void *B_input, void *B_output, int K, int N,
                                          rknn_matmul_info *info)
{
    static const char fn[] = "rknn_B_normal_layout_to_native_layout";
    EMU_INJECT_INT("rknn_B_normal_layout_to_native_layout");
    if (!B_input || !B_output || !info || K <= 0 || N <= 0 || K > 65536 || N > 65536) {
        EMU_ERR(fn, "invalid argument");
        return RKNN_ERR_PARAM_INVALID;
    }
    const emu_platform *p = emu_platform_current(NULL);
    if (!p || !emu_platform_supports_func(p, fn)) {
        EMU_ERR(fn, "not supported on %s", p ? p->name : "this platform");
        return RKNN_ERR_FAIL;
    }
    mm_types t;
    if (!mm_types_of(info->type, &t)) {
        EMU_ERR(fn, "matmul type %d is not emulated", (int)info->type);
        return RKNN_ERR_FAIL;
    }
    mm_geo g;
    memset(&g, 0, sizeof g);
    g.K = (uint32_t)K;
    g.N = (uint32_t)N;
    g.b_layout = RKNN_MM_LAYOUT_NATIVE;
    size_t es = emu_type_size(t.b);
    sub_b(p, es, &g.nn, &g.kk);
    g.Kp_b = up(g.K, g.kk);
    memset(B_output, 0, (size_t)up(g.N, g.nn) * g.Kp_b * es);
    const uint8_t *in = B_input;
    uint8_t *out = B_output;
    for (uint32_t k = 0; k < g.K; k++)
        for (uint32_t n = 0; n < g.N; n++)
            memcpy(out + off_b(&g, k, n) * es, in + ((size_t)k * g.N + n) * es, es);
    return RKNN_SUCC;
}
