/*
 * rknnx emulator, runtime half: the matmul API (C = A x B on the "NPU").
 *
 * A matmul context is an emu_ctx without a model (c->mm set), so rknn_create_mem,
 * rknn_mem_sync and rknn_destroy_mem work on it as the demos use them.
 *
 * Types (A x B -> C) and where they exist:
 *    1 FP16 x FP16 -> FP32    2 INT8 x INT8 -> INT32    3 INT8 x INT8 -> INT8
 *    4 FP16 x FP16 -> FP16    5 FP16 x INT8 -> FP32     6 FP16 x INT8 -> FP16
 *    9 INT8 x INT8 -> FP32    every chip with the matmul API (Table 3-1)
 *    7 FP16 x INT4 -> FP32    8 FP16 x INT4 -> FP16    10 INT4 x INT4 -> INT16
 *   11 INT8 x INT4 -> INT32  12 FP16 x INT4 -> BF16    15 INT8 x INT4 -> FP16
 *                             RK3588 / RK3576 only: elsewhere rknn_matmul_create fails
 *                             with RKNN_ERR_PARAM_INVALID ("not supported on <chip>").
 *
 * int4 packing: two elements per byte, in the order of the tensor's layout (normal,
 * transposed or native, whichever the tensor uses): element i of that order is in byte
 * i / 2, the EVEN element in the LOW nibble (bits 0-3), the odd one in the high nibble
 * (bits 4-7); values are two's complement -8..7.  This is how the vendor's matmul demo
 * packs A and B (normal, transposed and native A).  A tensor of n int4 elements takes
 * (n + 1) / 2 bytes (io_attr size); in the normal layouts rows are not padded to bytes.
 * (One helper of that demo writes native B high-nibble first; the emulator uses one
 * rule everywhere, and rknn_B_normal_layout_to_native_layout follows it.)
 *
 * Layouts (sub-block sizes are the vendor's alignment table, per personality):
 *   A normal (M, K); native (K/s, M, s): s = 8 int8 / 4 fp16 on RK3566/RK3568, 16 / 8 on
 *     the others; 32 for int4 (RK3588/RK3576).
 *   B normal (K, N), transposed (N, K), native (N/n, K/k, n, k):
 *     RK3566/68 int8 (16,32) fp16 (8,16); RK3562 int8 (16,32) fp16 (8,32);
 *     RK3588/RK3576 (and RV1126B) int8 (32,32) fp16 (16,32) int4 (64,32).
 *     K splitting: on RK3588 a native B with K > 8192 (RK3576: K > 4096) is stored as
 *     ceil(K / S) consecutive segments (S = 8192 / 4096), segment j holding rows
 *     k in [j*S, min(K, (j+1)*S)) in the (N/n, Kj/k, n, k) order with Kj padded to k.
 *     The reported dims stay (N/n, K/k, n, k) -- same size, and dims[2] / dims[3] are
 *     still subN / subK as the demos read them -- only the order is per segment.
 *   C normal (M, N); native (N/c, M, c), c = 4, or 8 for INT4 x INT4 on RK3588.
 *   K and N need not be multiples of the blocks: native layouts pad with zeros (the
 *   reported dims and sizes include the padding; padding in A/B is ignored, C's is 0).
 *
 * Quantization (rknn_matmul_set_quant_params, by the io_attr names "A", "B", "C"):
 *   A and C: per layer (1 scale, 0 or 1 zero point).
 *   B by info.B_quant_type: per layer 1 scale; per channel N scales (one per column n);
 *   per group N * K / group_size scales, index n * (K / group_size) + k / group_size
 *   (column-major groups: the groups of column n are contiguous).  Zero points: 0 (all
 *   zero), 1 (shared) or as many as scales.  Never set: scale 1, zero point 0.
 *   Per group needs group_size > 0, a multiple of 32 dividing K (every shape), and a
 *   type whose B is quantized and whose C is floating point (5, 6, 7, 8, 9, 12, 15);
 *   otherwise rknn_matmul_create returns RKNN_ERR_PARAM_INVALID.
 *
 * Numerics: integer operands accumulate sum((a - zA) * (b - zB)) exactly (int64) per
 * group (one group for per-layer / per-channel).  INT32 / INT16 outputs return that sum
 * saturated; INT8 output requantizes in float64: clip(rint(acc * (sA * sB[n]) / sC) + zC);
 * float outputs of integer operands are (float)(sum over groups of (double)acc_g * sA *
 * sB[n, g]) then rounded to FP16 when C is FP16.  FP16 A with FP16 B widens to float32;
 * with int8/int4 B dequantizes b as (b - zB) * sB in float32; both accumulate in float32
 * in k order, then C is float32, or rounded (nearest even) to FP16 / BF16.
 *
 * Emulator limits: M, K, N in 1..65536, every A/B/C element count <= 2^28 and byte size
 * <= UINT32_MAX (rknn_matmul_tensor_attr.size is 32-bit); else RKNN_ERR_PARAM_INVALID.
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

#define MM_MAX_DIM   65536
#define MM_MAX_ELEMS ((uint64_t)1 << 28)

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
    int int4;                    /* an int4 operand: RK3588 / RK3576 only */
} mm_types;

static int mm_types_of(int type, mm_types *t)
{
    const rknn_tensor_type F32 = RKNN_TENSOR_FLOAT32, F16 = RKNN_TENSOR_FLOAT16,
                           I8 = RKNN_TENSOR_INT8, I4 = RKNN_TENSOR_INT4, I16 = RKNN_TENSOR_INT16,
                           I32 = RKNN_TENSOR_INT32, BF16 = RKNN_TENSOR_BFLOAT16;
    switch (type) {
    case RKNN_FLOAT16_MM_FLOAT16_TO_FLOAT32: *t = (mm_types){F16, F16, F32, 0}; return 1;
    case RKNN_INT8_MM_INT8_TO_INT32: *t = (mm_types){I8, I8, I32, 0}; return 1;
    case RKNN_INT8_MM_INT8_TO_INT8: *t = (mm_types){I8, I8, I8, 0}; return 1;
    case RKNN_FLOAT16_MM_FLOAT16_TO_FLOAT16: *t = (mm_types){F16, F16, F16, 0}; return 1;
    case RKNN_FLOAT16_MM_INT8_TO_FLOAT32: *t = (mm_types){F16, I8, F32, 0}; return 1;
    case RKNN_FLOAT16_MM_INT8_TO_FLOAT16: *t = (mm_types){F16, I8, F16, 0}; return 1;
    case RKNN_FLOAT16_MM_INT4_TO_FLOAT32: *t = (mm_types){F16, I4, F32, 1}; return 1;
    case RKNN_FLOAT16_MM_INT4_TO_FLOAT16: *t = (mm_types){F16, I4, F16, 1}; return 1;
    case RKNN_INT8_MM_INT8_TO_FLOAT32: *t = (mm_types){I8, I8, F32, 0}; return 1;
    case RKNN_INT4_MM_INT4_TO_INT16: *t = (mm_types){I4, I4, I16, 1}; return 1;
    case RKNN_INT8_MM_INT4_TO_INT32: *t = (mm_types){I8, I4, I32, 1}; return 1;
    case RKNN_FLOAT16_MM_INT4_TO_BFLOAT16: *t = (mm_types){F16, I4, BF16, 1}; return 1;
    case RKNN_INT8_MM_INT4_TO_FLOAT16: *t = (mm_types){I8, I4, F16, 1}; return 1;
    default:
        *t = (mm_types){F32, F32, F32, 0};
        return 0;
    }
}

static int is_float(rknn_tensor_type t)
{
    return t == RKNN_TENSOR_FLOAT32 || t == RKNN_TENSOR_FLOAT16 || t == RKNN_TENSOR_BFLOAT16;
}

static int per_group(const rknn_matmul_info *info)
{
    return info->B_quant_type == RKNN_QUANT_TYPE_PER_GROUP_SYM ||
           info->B_quant_type == RKNN_QUANT_TYPE_PER_GROUP_ASYM;
}

static int per_channel(const rknn_matmul_info *info)
{
    return info->B_quant_type == RKNN_QUANT_TYPE_PER_CHANNEL_SYM ||
           info->B_quant_type == RKNN_QUANT_TYPE_PER_CHANNEL_ASYM;
}

/* ---- geometry ------------------------------------------------------------------------- */
static int grp(const emu_platform *p, const char *g) { return strcmp(p->npu_group, g) == 0; }

/* native A sub-K */
static uint32_t sub_a(const emu_platform *p, rknn_tensor_type t)
{
    if (t == RKNN_TENSOR_INT4)
        return 32;
    int rk356x = grp(p, "RK3566");
    return emu_type_size(t) == 1 ? (rk356x ? 8 : 16) : (rk356x ? 4 : 8);
}

/* native B (subN, subK) */
static void sub_b(const emu_platform *p, rknn_tensor_type t, uint32_t *nn, uint32_t *kk)
{
    size_t es = emu_type_size(t);
    if (t == RKNN_TENSOR_INT4) {
        *nn = 64;
        *kk = 32;
    } else if (grp(p, "RK3566")) {
        *nn = es == 1 ? 16 : 8;
        *kk = es == 1 ? 32 : 16;
    } else if (grp(p, "RK3562")) {
        *nn = es == 1 ? 16 : 8;
        *kk = 32;
    } else {
        *nn = es == 1 ? 32 : 16;
        *kk = 32;
    }
}

/* native C sub-N */
static uint32_t sub_c(const emu_platform *p, rknn_tensor_type ta)
{
    return ta == RKNN_TENSOR_INT4 && grp(p, "RK3588") ? 8 : 4;
}

/* native B K segment length (0: never split) */
static uint32_t k_split(const emu_platform *p)
{
    if (grp(p, "RK3588"))
        return 8192;
    if (grp(p, "RK3576"))
        return 4096;
    return 0;
}

static uint32_t up(uint32_t v, uint32_t a) { return (v + a - 1) / a * a; }

static uint64_t type_bytes(rknn_tensor_type t, uint64_t n)
{
    return t == RKNN_TENSOR_INT4 ? (n + 1) / 2 : n * emu_type_size(t);
}

/* element offsets in the (possibly native) layouts of one shape */
typedef struct mm_geo {
    uint32_t M, K, N;
    uint32_t sa;                 /* A native sub-K */
    uint32_t nn, kk, Np, Kp;     /* B native blocks, padded N and K */
    uint32_t seg;                /* B native K segment (0: none) */
    uint32_t sc, Nc;             /* C native sub-N, padded N */
    int a_native, c_native, b_layout;
    mm_types t;
} mm_geo;

static void geo_of(const emu_platform *p, const rknn_matmul_info *info, const rknn_matmul_shape *s,
                   mm_geo *g)
{
    memset(g, 0, sizeof *g);
    mm_types_of(info->type, &g->t);
    g->M = (uint32_t)s->M;
    g->K = (uint32_t)s->K;
    g->N = (uint32_t)s->N;
    g->a_native = g->c_native = info->AC_layout == RKNN_MM_LAYOUT_NATIVE;
    g->b_layout = info->B_layout;
    g->sa = sub_a(p, g->t.a);
    sub_b(p, g->t.b, &g->nn, &g->kk);
    g->Np = up(g->N, g->nn);
    g->Kp = up(g->K, g->kk);
    uint32_t s_len = k_split(p);
    g->seg = s_len && g->K > s_len ? s_len : 0;
    g->sc = sub_c(p, g->t.a);
    g->Nc = up(g->N, g->sc);
}

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
    case RKNN_MM_LAYOUT_NATIVE: {
        size_t base = 0;
        uint32_t kin = k, Ks = g->Kp;
        if (g->seg) {
            uint32_t j = k / g->seg;
            base = (size_t)j * g->seg * g->Np;        /* earlier segments are full */
            kin = k % g->seg;
            Ks = g->K - j * g->seg < g->seg ? up(g->K - j * g->seg, g->kk) : g->seg;
        }
        return base + (((size_t)(n / g->nn) * (Ks / g->kk) + kin / g->kk) * g->nn + n % g->nn) * g->kk +
               kin % g->kk;
    }
    default: return (size_t)k * g->N + n;
    }
}

static size_t off_c(const mm_geo *g, uint32_t m, uint32_t n)
{
    if (!g->c_native)
        return (size_t)m * g->N + n;
    return ((size_t)(n / g->sc) * g->M + m) * g->sc + n % g->sc;
}

/* ---- element access ---------------------------------------------------------------------- */
static int32_t ld_i4(const uint8_t *p, size_t i)
{
    uint8_t b = p[i >> 1];
    int v = (i & 1) ? (b >> 4) : (b & 0x0f);
    return v >= 8 ? v - 16 : v;
}

static void st_i4(uint8_t *p, size_t i, int32_t v)
{
    uint8_t *b = &p[i >> 1];
    if (i & 1)
        *b = (uint8_t)((*b & 0x0f) | ((uint32_t)(v & 0x0f) << 4));
    else
        *b = (uint8_t)((*b & 0xf0) | (uint32_t)(v & 0x0f));
}

static int32_t ld_int(const uint8_t *p, rknn_tensor_type t, size_t i)
{
    return t == RKNN_TENSOR_INT4 ? ld_i4(p, i) : (int32_t)(int8_t)p[i];
}

static float ld_f16(const uint8_t *p, size_t i)
{
    uint16_t h;
    memcpy(&h, p + 2 * i, 2);
    return emu_f16_to_f32(h);
}

static uint16_t f32_to_bf16(float f)
{
    uint32_t x = emu_f32_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((x >> 16) | 0x40u);            /* quiet NaN */
    x += 0x7fffu + ((x >> 16) & 1u);                     /* round to nearest even */
    return (uint16_t)(x >> 16);
}

/* ---- attributes ---------------------------------------------------------------------------- */
static int fill_tattr(rknn_matmul_tensor_attr *t, const char *name, rknn_tensor_type type,
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
    uint64_t bytes = type_bytes(type, n);
    if (n > MM_MAX_ELEMS || bytes > UINT32_MAX)
        return 0;
    t->size = (uint32_t)bytes;
    return 1;
}

/* Fill io for one shape; 0 if a tensor exceeds the emulator's limits. */
static int fill_io(const emu_platform *p, const rknn_matmul_info *info, const rknn_matmul_shape *s,
                   rknn_matmul_io_attr *io)
{
    mm_geo g;
    geo_of(p, info, s, &g);
    uint32_t d[4];
    int ok = 1;
    if (g.a_native) {
        d[0] = up(g.K, g.sa) / g.sa; d[1] = g.M; d[2] = g.sa;
        ok &= fill_tattr(&io->A, "A", g.t.a, 3, d);
        d[0] = g.Nc / g.sc; d[1] = g.M; d[2] = g.sc;
        ok &= fill_tattr(&io->C, "C", g.t.c, 3, d);
    } else {
        d[0] = g.M; d[1] = g.K;
        ok &= fill_tattr(&io->A, "A", g.t.a, 2, d);
        d[0] = g.M; d[1] = g.N;
        ok &= fill_tattr(&io->C, "C", g.t.c, 2, d);
    }
    if (g.b_layout == RKNN_MM_LAYOUT_NATIVE) {
        d[0] = g.Np / g.nn; d[1] = g.Kp / g.kk; d[2] = g.nn; d[3] = g.kk;
        ok &= fill_tattr(&io->B, "B", g.t.b, 4, d);
    } else if (g.b_layout == RKNN_MM_LAYOUT_TP_NORM) {
        d[0] = g.N; d[1] = g.K;
        ok &= fill_tattr(&io->B, "B", g.t.b, 2, d);
    } else {
        d[0] = g.K; d[1] = g.N;
        ok &= fill_tattr(&io->B, "B", g.t.b, 2, d);
    }
    return ok;
}

static int check_info(const char *fn, const emu_platform *p, const rknn_matmul_info *info)
{
    mm_types t;
    if (!mm_types_of(info->type, &t)) {
        EMU_ERR(fn, "invalid matmul type %d", (int)info->type);
        return RKNN_ERR_PARAM_INVALID;
    }
    if (t.int4 && !grp(p, "RK3588") && !grp(p, "RK3576")) {
        EMU_ERR(fn, "matmul type %d (int4) is not supported on %s (RK3588 / RK3576 only)",
                (int)info->type, p->name);
        return RKNN_ERR_PARAM_INVALID;
    }
    if (info->B_layout < 0 || info->B_layout > 2 || info->AC_layout < 0 || info->AC_layout > 1) {
        EMU_ERR(fn, "invalid layouts B %d / AC %d", info->B_layout, info->AC_layout);
        return RKNN_ERR_PARAM_INVALID;
    }
    if (info->B_quant_type < 0 || info->B_quant_type > 5) {
        EMU_ERR(fn, "invalid B_quant_type %d", info->B_quant_type);
        return RKNN_ERR_PARAM_INVALID;
    }
    if (info->AC_quant_type < 0 || info->AC_quant_type > 1) {
        EMU_ERR(fn, "invalid AC_quant_type %d (per layer only)", info->AC_quant_type);
        return RKNN_ERR_PARAM_INVALID;
    }
    if (per_group(info)) {
        if (t.b == RKNN_TENSOR_FLOAT16 || !is_float(t.c)) {
            EMU_ERR(fn, "per-group quantization needs a quantized B and a float C "
                    "(types 5, 6, 7, 8, 9, 12, 15), not type %d", (int)info->type);
            return RKNN_ERR_PARAM_INVALID;
        }
        if (info->group_size <= 0 || info->group_size % 32 != 0) {
            EMU_ERR(fn, "group_size %d must be a positive multiple of 32", info->group_size);
            return RKNN_ERR_PARAM_INVALID;
        }
    }
    return RKNN_SUCC;
}

static int check_shape(const char *fn, const emu_platform *p, const rknn_matmul_info *info,
                       const rknn_matmul_shape *s)
{
    if (s->M <= 0 || s->K <= 0 || s->N <= 0 || s->M > MM_MAX_DIM || s->K > MM_MAX_DIM ||
        s->N > MM_MAX_DIM) {
        EMU_ERR(fn, "invalid M/K/N %d/%d/%d (1..%d)", s->M, s->K, s->N, MM_MAX_DIM);
        return RKNN_ERR_PARAM_INVALID;
    }
    if (per_group(info) && s->K % info->group_size != 0) {
        EMU_ERR(fn, "K %d is not a multiple of group_size %d", s->K, info->group_size);
        return RKNN_ERR_PARAM_INVALID;
    }
    rknn_matmul_io_attr io;
    if (!fill_io(p, info, s, &io)) {
        EMU_ERR(fn, "M/K/N %d/%d/%d: a matrix exceeds the emulator's limits (2^28 elements, "
                "4 GiB)", s->M, s->K, s->N);
        return RKNN_ERR_PARAM_INVALID;
    }
    return RKNN_SUCC;
}

static void mm_free(emu_ctx *c);

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
    rknn_matmul_info inf = *info;
    int rc = check_info(fn, p, &inf);
    for (int i = 0; rc == RKNN_SUCC && i < n; i++)
        rc = check_shape(fn, p, &inf, &shapes[i]);
    if (rc)
        return rc;
    emu_ctx *c = emu_ctx_alloc(p, 0);
    emu_mm *mm = calloc(1, sizeof *mm);
    rknn_matmul_shape *sh = calloc((size_t)n, sizeof *sh);
    if (!c || !mm || !sh) {
        free(mm);
        free(sh);
        emu_ctx_put(c);
        return RKNN_ERR_MALLOC_FAIL;
    }
    memcpy(sh, shapes, (size_t)n * sizeof *sh);
    mm->info = inf;
    mm->shapes = sh;
    mm->n_shapes = n;
    c->mm = mm;
    emu_ctx_on_free(c, mm_free);
    if ((rc = emu_ctx_register(c)) != RKNN_SUCC) {
        emu_ctx_put(c);
        return rc;
    }
    for (int i = 0; i < n; i++)
        fill_io(p, &inf, &sh[i], &io[i]);
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

/* the context's destructor hook (emu_ctx_on_free) */
static void mm_free(emu_ctx *c)
{
    emu_mm *mm = c->mm;
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
    if (!emu_core_mask_valid(c->plat, m)) {
        EMU_ERR(fn, "core mask 0x%x is not valid on %s", m, c->plat->name);
        rc = RKNN_ERR_PARAM_INVALID;
    } else {
        c->mm->core_mask = m;
    }
    emu_ctx_leave(c);
    return rc;
}

/* Number of B scales the current shape needs. */
static int32_t b_scales_wanted(const emu_mm *mm)
{
    const rknn_matmul_shape *s = &mm->shapes[mm->cur];
    if (per_channel(&mm->info))
        return s->N;
    if (per_group(&mm->info))
        return (int32_t)((int64_t)s->N * (s->K / mm->info.group_size));
    return 1;
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
    if (w < 0) {
        EMU_ERR(fn, "params NULL or its name is not A, B or C (the io_attr names)");
        rc = RKNN_ERR_PARAM_INVALID;
        goto out;
    }
    int32_t want = w == 1 ? b_scales_wanted(c->mm) : 1;
    if (!params->scale || params->scale_len != want || params->zp_len < 0 ||
        (params->zp_len && (!params->zp || (params->zp_len != want && params->zp_len != 1)))) {
        EMU_ERR(fn, "%s: need %d scale(s) and 0, 1 or %d zero points (got %d / %d)", name, want,
                want, params->scale_len, params->zp_len);
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

/* quantization parameter i of q (scale 1 / zp 0 when unset, entry 0 when shared) */
static float q_scale(const mm_quant *q, size_t i)
{
    return q->n_scale ? q->scale[q->n_scale == 1 ? 0 : i] : 1.0f;
}

static int32_t q_zp(const mm_quant *q, size_t i)
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

/* ---- the computation ---------------------------------------------------------------------- */
/* Index of B's quantization parameters for (k, n). */
static size_t b_qidx(const emu_mm *mm, const mm_geo *g, uint32_t k, uint32_t n)
{
    if (per_channel(&mm->info))
        return n;
    if (per_group(&mm->info)) {
        uint32_t gs = (uint32_t)mm->info.group_size;
        return (size_t)n * (g->K / gs) + k / gs;
    }
    return 0;
}

/* Integer operands: C from the exact per-group sums. */
static void compute_int(const emu_mm *mm, const mm_geo *g, const int32_t *a, const int32_t *b,
                        uint8_t *C)
{
    const mm_quant *qa = &mm->q[0], *qb = &mm->q[1], *qc = &mm->q[2];
    uint32_t gs = per_group(&mm->info) ? (uint32_t)mm->info.group_size : g->K;
    double sa = q_scale(qa, 0);
    for (uint32_t m = 0; m < g->M; m++) {
        const int32_t *ar = a + (size_t)m * g->K;
        for (uint32_t n = 0; n < g->N; n++) {
            int64_t total = 0;
            double f = 0.0;
            for (uint32_t k0 = 0; k0 < g->K; k0 += gs) {
                int64_t acc = 0;
                for (uint32_t k = k0; k < k0 + gs && k < g->K; k++)
                    acc += (int64_t)ar[k] * b[(size_t)k * g->N + n];
                total += acc;
                f += (double)acc * sa * q_scale(qb, b_qidx(mm, g, k0, n));
            }
            size_t oc = off_c(g, m, n);
            switch (g->t.c) {
            case RKNN_TENSOR_INT32: {
                int32_t v = total > INT32_MAX ? INT32_MAX : (total < INT32_MIN ? INT32_MIN : (int32_t)total);
                memcpy(C + 4 * oc, &v, 4);
                break;
            }
            case RKNN_TENSOR_INT16: {
                int16_t v = total > INT16_MAX ? INT16_MAX : (total < INT16_MIN ? INT16_MIN : (int16_t)total);
                memcpy(C + 2 * oc, &v, 2);
                break;
            }
            case RKNN_TENSOR_INT8: {
                double mul = (sa * q_scale(qb, n)) / q_scale(qc, 0);
                double r = rint((double)total * mul) + q_zp(qc, 0);
                r = r < -128 ? -128 : (r > 127 ? 127 : r);
                C[oc] = (uint8_t)(int8_t)r;
                break;
            }
            case RKNN_TENSOR_FLOAT16: {
                uint16_t h = emu_f32_to_f16((float)f);
                memcpy(C + 2 * oc, &h, 2);
                break;
            }
            default: {
                float v = (float)f;
                memcpy(C + 4 * oc, &v, 4);
                break;
            }
            }
        }
    }
}

/* Float16 A: float32 products accumulated in k order. */
static void compute_float(const mm_geo *g, const float *a, const float *b, uint8_t *C)
{
    for (uint32_t m = 0; m < g->M; m++) {
        const float *ar = a + (size_t)m * g->K;
        for (uint32_t n = 0; n < g->N; n++) {
            float acc = 0.0f;
            for (uint32_t k = 0; k < g->K; k++)
                acc += ar[k] * b[(size_t)k * g->N + n];
            size_t oc = off_c(g, m, n);
            if (g->t.c == RKNN_TENSOR_FLOAT32) {
                memcpy(C + 4 * oc, &acc, 4);
            } else {
                uint16_t h = g->t.c == RKNN_TENSOR_BFLOAT16 ? f32_to_bf16(acc) : emu_f32_to_f16(acc);
                memcpy(C + 2 * oc, &h, 2);
            }
        }
    }
}

static int run_locked(emu_ctx *c, const char *fn)
{
    emu_mm *mm = c->mm;
    for (int i = 0; i < 3; i++)
        if (!mm->mem[i] || !emu_mem_alive(mm->mem[i])) {
            EMU_ERR(fn, "%c has no live mem: call rknn_matmul_set_io_mem", "ABC"[i]);
            return RKNN_ERR_PARAM_INVALID;
        }
    const rknn_matmul_shape *s = &mm->shapes[mm->cur];
    rknn_matmul_io_attr io;
    fill_io(c->plat, &mm->info, s, &io);
    if (mm->mem[0]->size < io.A.size || mm->mem[1]->size < io.B.size || mm->mem[2]->size < io.C.size) {
        EMU_ERR(fn, "a bound mem is too small for the current shape: bind again");
        return RKNN_ERR_PARAM_INVALID;
    }
    int32_t want = b_scales_wanted(mm);
    const mm_quant *qb = &mm->q[1];
    if ((qb->n_scale && qb->n_scale != want) || (qb->n_zp > 1 && qb->n_zp != want)) {
        EMU_ERR(fn, "B's quantization parameters (%d scales) do not fit the current shape (%d): "
                "call rknn_matmul_set_quant_params again", qb->n_scale, want);
        return RKNN_ERR_PARAM_INVALID;
    }
    mm_geo g;
    geo_of(c->plat, &mm->info, s, &g);
    int int_path = g.t.a != RKNN_TENSOR_FLOAT16;
    size_t es = int_path ? sizeof(int32_t) : sizeof(float);
    void *a = malloc((size_t)g.M * g.K * es);
    void *b = malloc((size_t)g.K * g.N * es);
    if (!a || !b) {
        free(a);
        free(b);
        EMU_ERR(fn, "out of memory for M/K/N %u/%u/%u", g.M, g.K, g.N);
        return RKNN_ERR_MALLOC_FAIL;
    }
    for (int i = 0; i < 2; i++)
        if (!emu_mem_coherent(mm->mem[i]))
            emu_mem_sync_range(mm->mem[i], 0, mm->mem[i]->size, 1);
    uint32_t cores = emu_npu_cores_take(c->plat, mm->core_mask);   /* the simulated cores */
    long long inflight = EMU_CTR_ADD(runs_in_flight, 1) + 1;
    long long peak = atomic_load(&emu_ctr.peak_runs_in_flight);
    while (inflight > peak &&
           !atomic_compare_exchange_weak(&emu_ctr.peak_runs_in_flight, &peak, inflight)) {
    }
    const uint8_t *A = mm->mem[0]->dev, *B = mm->mem[1]->dev;
    uint8_t *Cd = mm->mem[2]->dev;
    const mm_quant *qa = &mm->q[0];
    /* decode A and B into row-major (M, K) and (K, N) operands */
    if (int_path) {
        int32_t *ai = a, *bi = b, za = q_zp(qa, 0);
        for (uint32_t m = 0; m < g.M; m++)
            for (uint32_t k = 0; k < g.K; k++)
                ai[(size_t)m * g.K + k] = ld_int(A, g.t.a, off_a(&g, m, k)) - za;
        for (uint32_t k = 0; k < g.K; k++)
            for (uint32_t n = 0; n < g.N; n++)
                bi[(size_t)k * g.N + n] =
                    ld_int(B, g.t.b, off_b(&g, k, n)) - q_zp(qb, b_qidx(mm, &g, k, n));
    } else {
        float *af = a, *bf = b;
        for (uint32_t m = 0; m < g.M; m++)
            for (uint32_t k = 0; k < g.K; k++)
                af[(size_t)m * g.K + k] = ld_f16(A, off_a(&g, m, k));
        for (uint32_t k = 0; k < g.K; k++)
            for (uint32_t n = 0; n < g.N; n++) {
                size_t o = off_b(&g, k, n), qi = b_qidx(mm, &g, k, n);
                bf[(size_t)k * g.N + n] =
                    g.t.b == RKNN_TENSOR_FLOAT16
                        ? ld_f16(B, o)
                        : emu_dequantize(ld_int(B, g.t.b, o), q_scale(qb, qi), q_zp(qb, qi));
            }
    }
    if (g.c_native)
        memset(Cd, 0, io.C.size);
    if (int_path)
        compute_int(mm, &g, a, b, Cd);
    else
        compute_float(&g, a, b, Cd);
    free(a);
    free(b);
    int64_t npu = emu_npu_time_us();
    if (npu > 0) {
        struct timespec ts = {(time_t)(npu / 1000000), (long)(npu % 1000000) * 1000};
        nanosleep(&ts, NULL);
    }
    EMU_CTR_ADD(runs_in_flight, -1);
    emu_npu_cores_give(cores);
    EMU_CTR_ADD(runs, 1);
    if (!emu_mem_coherent(mm->mem[2]))
        emu_mem_sync_range(mm->mem[2], 0, mm->mem[2]->size, 0);
    return RKNN_SUCC;
}

int rknn_matmul_run(rknn_matmul_ctx ctx)
{
    static const char fn[] = "rknn_matmul_run";
    EMU_INJECT_INT("rknn_matmul_run");
    emu_ctx *c;
    int rc = emu_ctx_enter(ctx, fn, &c);
    if (rc)
        return rc;
    rc = run_locked(c, fn);
    emu_ctx_leave(c);
    return rc;
}

int rknn_B_normal_layout_to_native_layout(void *B_input, void *B_output, int K, int N,
                                          rknn_matmul_info *info)
{
    static const char fn[] = "rknn_B_normal_layout_to_native_layout";
    EMU_INJECT_INT("rknn_B_normal_layout_to_native_layout");
    if (!B_input || !B_output || !info || K <= 0 || N <= 0 || K > MM_MAX_DIM || N > MM_MAX_DIM) {
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
        EMU_ERR(fn, "invalid matmul type %d", (int)info->type);
        return RKNN_ERR_PARAM_INVALID;
    }
    if (t.int4 && !grp(p, "RK3588") && !grp(p, "RK3576")) {
        EMU_ERR(fn, "matmul type %d (int4) is not supported on %s", (int)info->type, p->name);
        return RKNN_ERR_PARAM_INVALID;
    }
    rknn_matmul_info ni = *info;
    ni.B_layout = RKNN_MM_LAYOUT_NATIVE;
    ni.AC_layout = RKNN_MM_LAYOUT_NORM;
    rknn_matmul_shape s = {1, K, N};
    rknn_matmul_io_attr io;
    if (!fill_io(p, &ni, &s, &io)) {
        EMU_ERR(fn, "K %d x N %d exceeds the emulator's limits", K, N);
        return RKNN_ERR_PARAM_INVALID;
    }
    mm_geo g;
    geo_of(p, &ni, &s, &g);
    memset(B_output, 0, io.B.size);
    const uint8_t *in = B_input;
    uint8_t *out = B_output;
    if (t.b == RKNN_TENSOR_INT4) {
        for (uint32_t k = 0; k < g.K; k++)
            for (uint32_t n = 0; n < g.N; n++)
                st_i4(out, off_b(&g, k, n), ld_i4(in, (size_t)k * g.N + n));
    } else {
        size_t es = emu_type_size(t.b);
        for (uint32_t k = 0; k < g.K; k++)
            for (uint32_t n = 0; n < g.N; n++)
                memcpy(out + off_b(&g, k, n) * es, in + ((size_t)k * g.N + n) * es, es);
    }
    return RKNN_SUCC;
}
