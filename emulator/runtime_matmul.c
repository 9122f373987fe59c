/*
 * rknnx emulator, runtime half: the matmul API.
 *
 * Not emulated yet (a separate issue): every function is exported with the vendor
 * signature, validates its arguments like the real one would, and then fails with
 * RKNN_ERR_FAIL and an "E RKNN: matmul is not emulated yet" line.  It never pretends
 * to succeed.
 */
#include <string.h>

#include "runtime.h"

static int not_yet(const char *fn)
{
    EMU_ERR(fn, "matmul is not emulated yet");
    return RKNN_ERR_FAIL;
}

static int check_platform(const char *fn)
{
    const emu_platform *p = emu_platform_current(NULL);
    if (p && !emu_platform_supports_func(p, fn)) {
        EMU_ERR(fn, "not supported on %s", p->name);
        return RKNN_ERR_FAIL;
    }
    return RKNN_SUCC;
}

int rknn_matmul_create(rknn_matmul_ctx *ctx, rknn_matmul_info *info, rknn_matmul_io_attr *io_attr)
{
    static const char fn[] = "rknn_matmul_create";
    EMU_INJECT_INT("rknn_matmul_create");
    if (!ctx || !info || !io_attr) {
        EMU_ERR(fn, "NULL argument");
        return RKNN_ERR_PARAM_INVALID;
    }
    *ctx = 0;
    int rc = check_platform(fn);
    if (rc)
        return rc;
    if (info->M <= 0 || info->K <= 0 || info->N <= 0) {
        EMU_ERR(fn, "invalid M/K/N %d/%d/%d", info->M, info->K, info->N);
        return RKNN_ERR_PARAM_INVALID;
    }
    return not_yet(fn);
}

int rknn_matmul_create_dynamic_shape(rknn_matmul_ctx *ctx, rknn_matmul_info *info, int shape_num,
                                     rknn_matmul_shape dynamic_shapes[],
                                     rknn_matmul_io_attr io_attrs[])
{
    static const char fn[] = "rknn_matmul_create_dynamic_shape";
    EMU_INJECT_INT("rknn_matmul_create_dynamic_shape");
    if (!ctx || !info || shape_num <= 0 || !dynamic_shapes || !io_attrs) {
        EMU_ERR(fn, "invalid argument");
        return RKNN_ERR_PARAM_INVALID;
    }
    *ctx = 0;
    int rc = check_platform(fn);
    if (rc)
        return rc;
    return not_yet(fn);
}

/* No matmul context can exist yet, so every call on one names an invalid context. */
static int bad_ctx(const char *fn, rknn_matmul_ctx ctx)
{
    EMU_ERR(fn, "invalid matmul context 0x%llx (matmul is not emulated yet)",
            (unsigned long long)ctx);
    return RKNN_ERR_CTX_INVALID;
}

int rknn_matmul_set_io_mem(rknn_matmul_ctx ctx, rknn_tensor_mem *mem, rknn_matmul_tensor_attr *attr)
{
    EMU_INJECT_INT("rknn_matmul_set_io_mem");
    if (!mem || !attr)
        return RKNN_ERR_PARAM_INVALID;
    return bad_ctx("rknn_matmul_set_io_mem", ctx);
}

int rknn_matmul_set_core_mask(rknn_matmul_ctx context, rknn_core_mask core_mask)
{
    EMU_INJECT_INT("rknn_matmul_set_core_mask");
    return bad_ctx("rknn_matmul_set_core_mask", context);
}

int rknn_matmul_set_quant_params(rknn_matmul_ctx context, rknn_quant_params *params)
{
    EMU_INJECT_INT("rknn_matmul_set_quant_params");
    if (!params)
        return RKNN_ERR_PARAM_INVALID;
    return bad_ctx("rknn_matmul_set_quant_params", context);
}

int rknn_matmul_get_quant_params(rknn_matmul_ctx ctx, rknn_quant_params *params, float *scale)
{
    EMU_INJECT_INT("rknn_matmul_get_quant_params");
    if (!params || !scale)
        return RKNN_ERR_PARAM_INVALID;
    return bad_ctx("rknn_matmul_get_quant_params", ctx);
}

int rknn_matmul_set_dynamic_shape(rknn_matmul_ctx ctx, rknn_matmul_shape *shape)
{
    EMU_INJECT_INT("rknn_matmul_set_dynamic_shape");
    if (!shape)
        return RKNN_ERR_PARAM_INVALID;
    return bad_ctx("rknn_matmul_set_dynamic_shape", ctx);
}

int rknn_matmul_run(rknn_matmul_ctx ctx)
{
    EMU_INJECT_INT("rknn_matmul_run");
    return bad_ctx("rknn_matmul_run", ctx);
}

int rknn_matmul_destroy(rknn_matmul_ctx ctx)
{
    EMU_INJECT_INT("rknn_matmul_destroy");
    return bad_ctx("rknn_matmul_destroy", ctx);
}

int rknn_B_normal_layout_to_native_layout(void *B_input, void *B_output, int K, int N,
                                          rknn_matmul_info *info)
{
    static const char fn[] = "rknn_B_normal_layout_to_native_layout";
    EMU_INJECT_INT("rknn_B_normal_layout_to_native_layout");
    if (!B_input || !B_output || !info || K <= 0 || N <= 0) {
        EMU_ERR(fn, "invalid argument");
        return RKNN_ERR_PARAM_INVALID;
    }
    int rc = check_platform(fn);
    if (rc)
        return rc;
    return not_yet(fn);
}
