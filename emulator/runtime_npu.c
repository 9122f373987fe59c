/*
 * rknnx emulator, runtime half: the NPU-side view of a context's tensors, and the two
 * controls that expose it (include/rknnx/rknn_emu.h):
 *
 *   rknn_emu_read_npu_input   the bytes the NPU would read for an input now, in the
 *                             native layout and type (RKNN_QUERY_NATIVE_INPUT_ATTR);
 *   rknn_emu_set_npu_output   bytes that stand for what the NPU wrote for an output, in
 *                             the native layout (RKNN_QUERY_NATIVE_OUTPUT_ATTR), used by
 *                             every later rknn_run until cleared.
 *
 * The context keeps its tensors in the model's packed layout (emu_model.h); these views
 * convert between that and the native form with emu_convert (raw copies: the type is the
 * model's own, only the placement differs).  Padding the native form has (channels up to
 * C2, rows up to w_stride) reads as zero.  A vendor runtime's NPU buffer can be longer
 * than the native attribute's size (the compiler's plan), so set_npu_output takes any
 * length from the native size up and uses that prefix.
 */
#include <stdlib.h>
#include <string.h>

#include "runtime.h"

static uint64_t attr_bytes(const rknn_tensor_attr *a)
{
    return a->size_with_stride > a->size ? a->size_with_stride : a->size;
}

/* ---- a context's tensors at its current shape ------------------------------------------- */
const uint32_t *emu_ctx_in_dims(const emu_ctx *c, uint32_t i)
{
    return emu_model_input_dims(c->m, c->shape_set, i, NULL);
}

const uint32_t *emu_ctx_out_dims(const emu_ctx *c, uint32_t o)
{
    return emu_model_output_dims(c->m, c->shape_set, o, NULL);
}

int emu_ctx_native_attr(emu_ctx *c, int is_out, uint32_t idx, rknn_tensor_attr *a)
{
    if (!c->m || idx >= (is_out ? c->n_out : c->n_in))
        return RKNN_ERR_PARAM_INVALID;
    const emu_io_desc *d = is_out ? emu_model_output(c->m, idx) : emu_model_input(c->m, idx);
    const uint32_t *dims = is_out ? emu_ctx_out_dims(c, idx) : emu_ctx_in_dims(c, idx);
    if (!d || !dims)
        return RKNN_ERR_PARAM_INVALID;
    /* the native form at the current shape (CURRENT_NATIVE_*; the static one), or, where the
       runtime played says so, the largest until a shape is chosen */
    const emu_answers *an = c->shared->answers;
    int cur = c->shapes_chosen || !an->rules->max_until_chosen;
    const rknn_tensor_attr *v = emu_answers_attr(an, is_out, idx, EMU_ATTR_NATIVE, cur,
                                                 c->shape_set);
    if (!v)
        return RKNN_ERR_PARAM_INVALID;
    *a = *v;
    if (is_out)
        emu_answers_played_native(c, idx, cur, a);
    return RKNN_SUCC;
}

int emu_ctx_layout_bound(emu_ctx *c, int is_out, uint32_t idx, const rknn_tensor_attr *attr,
                         emu_layout *l)
{
    if (!c->m || idx >= (is_out ? c->n_out : c->n_in))
        return RKNN_ERR_PARAM_INVALID;
    const emu_io_desc *d = is_out ? emu_model_output(c->m, idx) : emu_model_input(c->m, idx);
    const uint32_t *dims = is_out ? emu_ctx_out_dims(c, idx) : emu_ctx_in_dims(c, idx);
    /* an NHWC output holds the channels its attribute's dims say (padded or not) */
    uint32_t out_c =
        is_out && attr->n_dims == 4 && attr->fmt == RKNN_TENSOR_NHWC ? attr->dims[3] : 0;
    int rc = emu_layout_user(c->plat, d, dims, is_out, 1, attr->type, attr->fmt,
                             is_out ? 0 : attr->pass_through, attr->h_stride, out_c, l);
    rknn_tensor_attr na;
    if (rc == RKNN_SUCC && attr->fmt == RKNN_TENSOR_NC1HWC2 && attr->type == d->type &&
        emu_ctx_native_attr(c, is_out, idx, &na) == RKNN_SUCC && na.fmt == RKNN_TENSOR_NC1HWC2) {
        /* the NPU's blocks are those of the native attribute: the chip's C2 for the
           emulator's own models, the file's for a stand-in (fp16_net_rk2118's float16
           output [1,5,16,16,4], librknnmrt 2.3.2, where the chip table says 8) */
        emu_layout_native(d, dims, &na, l);
    }
    return rc;
}

static const emu_io_desc *io_desc(emu_ctx *c, int is_out, uint32_t idx)
{
    return is_out ? emu_model_output(c->m, idx) : emu_model_input(c->m, idx);
}

static const uint32_t *io_dims(emu_ctx *c, int is_out, uint32_t idx)
{
    return is_out ? emu_ctx_out_dims(c, idx) : emu_ctx_in_dims(c, idx);
}

int rknn_emu_read_npu_input(rknn_context ctx, uint32_t index, void *buf, uint32_t size)
{
    static const char fn[] = "rknn_emu_read_npu_input";
    emu_ctx *c;
    int rc = emu_ctx_enter(ctx, fn, &c);
    if (rc)
        return rc;
    uint8_t *tmp = NULL;
    if (c->mm || !c->m || index >= c->n_in) {
        EMU_ERR(fn, "input index %u out of range (the model has %u)", index, c->n_in);
        rc = RKNN_ERR_PARAM_INVALID;
        goto out;
    }
    rknn_tensor_attr na;
    if ((rc = emu_ctx_native_attr(c, 0, index, &na)) != RKNN_SUCC) {
        EMU_ERR(fn, "input %u has no native form at the current shape (status %d)", index, rc);
        goto out;
    }
    const emu_io_desc *d = io_desc(c, 0, index);
    const uint32_t *dims = io_dims(c, 0, index);
    emu_layout ln, lm;
    emu_layout_native(d, dims, &na, &ln);
    emu_layout_model(d, dims, &lm);
    uint64_t need = emu_layout_bytes(&ln);
    if (attr_bytes(&na) > need)
        need = attr_bytes(&na);
    if (need > 0x7fffffffu) {
        rc = RKNN_ERR_PARAM_INVALID;
        goto out;
    }
    const uint8_t *src;
    emu_binding *b = c->in_bind ? &c->in_bind[index] : NULL;
    if (b && b->mem) {
        /* a bound zero-copy input: the NPU reads the mem itself (the vendor's 1.5.2 and
           1.6.0: their NPU input buffer is the user's mem; the 2.3.2 mini runtime: the
           mem).  The view is the mem's device bytes over the NPU buffer's length (the
           mini runtime's chips: the mem's own size), zero past the mem. */
        uint64_t L = (c->plat->family == EMU_FAM_RV1106 || c->plat->family == EMU_FAM_RK2118)
                         ? b->mem->size : emu_npu_input_len(&na);
        if (L > 0x7fffffffu) {
            rc = RKNN_ERR_PARAM_INVALID;
            goto out;
        }
        if (!buf || size < L) {
            rc = (int)L;
            goto out;
        }
        memset(buf, 0, (size_t)L);
        const uint8_t *dev = b->mem->dev;
        if (dev)
            memcpy(buf, dev, (size_t)(b->mem->size < L ? b->mem->size : L));
        rc = (int)L;
        goto out;
    }
    if (c->npu_in && c->npu_in[index] && c->in_set && c->in_set[index]) {
        /* the bytes rknn_inputs_set left in the NPU's buffer (emu_npu_pack_input) */
        uint32_t L = c->npu_in_len[index];
        if (!buf || size < L) {
            rc = (int)L;
            goto out;
        }
        memcpy(buf, c->npu_in[index], L);
        rc = (int)L;
        goto out;
    }
    if (!buf || size < need) {
        rc = (int)need;   /* the count needed; nothing copied */
        goto out;
    }
    if (c->in_buf && c->in_set && c->in_set[index]) {
        src = c->in_buf[index];
    } else {
        EMU_ERR(fn, "input %u was not set (rknn_inputs_set or rknn_set_io_mem)", index);
        rc = RKNN_ERR_INPUT_INVALID;
        goto out;
    }
    memset(buf, 0, (size_t)need);
    emu_convert(d, EMU_CONV_RAW, src, &lm, buf, &ln);
    rc = (int)need;
out:
    free(tmp);
    emu_ctx_leave(c);
    return rc;
}

int rknn_emu_set_npu_output(rknn_context ctx, uint32_t index, const void *buf, uint32_t size)
{
    static const char fn[] = "rknn_emu_set_npu_output";
    emu_ctx *c;
    int rc = emu_ctx_enter(ctx, fn, &c);
    if (rc)
        return rc;
    if (c->mm || !c->m || index >= c->n_out) {
        EMU_ERR(fn, "output index %u out of range (the model has %u)", index, c->n_out);
        rc = RKNN_ERR_PARAM_INVALID;
        goto out;
    }
    if (!c->npu_out) {
        c->npu_out = calloc(c->n_out ? c->n_out : 1, sizeof *c->npu_out);
        c->npu_out_len = calloc(c->n_out ? c->n_out : 1, sizeof *c->npu_out_len);
        if (!c->npu_out || !c->npu_out_len) {
            free(c->npu_out);
            free(c->npu_out_len);
            c->npu_out = NULL;
            c->npu_out_len = NULL;
            rc = RKNN_ERR_MALLOC_FAIL;
            goto out;
        }
    }
    if (size == 0) {
        free(c->npu_out[index]);
        c->npu_out[index] = NULL;
        c->npu_out_len[index] = 0;
        rc = RKNN_SUCC;
        goto out;
    }
    rknn_tensor_attr na;
    if ((rc = emu_ctx_native_attr(c, 1, index, &na)) != RKNN_SUCC)
        goto out;
    emu_layout ln;
    emu_layout_native(io_desc(c, 1, index), io_dims(c, 1, index), &na, &ln);
    uint64_t need = emu_layout_bytes(&ln);
    if (!buf || size < need) {
        EMU_ERR(fn, "output %u: %u bytes given, the native form needs %llu", index, size,
                (unsigned long long)need);
        rc = RKNN_ERR_PARAM_INVALID;
        goto out;
    }
    uint8_t *copy = malloc(size);
    if (!copy) {
        rc = RKNN_ERR_MALLOC_FAIL;
        goto out;
    }
    memcpy(copy, buf, size);
    free(c->npu_out[index]);
    c->npu_out[index] = copy;
    c->npu_out_len[index] = size;
    rc = RKNN_SUCC;
out:
    emu_ctx_leave(c);
    return rc;
}

void emu_npu_apply_outputs(emu_ctx *c)
{
    if (!c->npu_out)
        return;
    for (uint32_t o = 0; o < c->n_out; o++) {
        if (!c->npu_out[o])
            continue;
        rknn_tensor_attr na;
        if (emu_ctx_native_attr(c, 1, o, &na) != RKNN_SUCC)
            continue;
        const emu_io_desc *d = io_desc(c, 1, o);
        const uint32_t *dims = io_dims(c, 1, o);
        emu_layout ln, lm;
        emu_layout_native(d, dims, &na, &ln);
        emu_layout_model(d, dims, &lm);
        if (emu_layout_bytes(&ln) > c->npu_out_len[o])
            continue;   /* the shape grew since: the bytes no longer cover the output */
        emu_convert(d, EMU_CONV_RAW, c->npu_out[o], &ln, c->out_buf[o], &lm);
    }
}

void emu_npu_free(emu_ctx *c)
{
    if (c->npu_out)
        for (uint32_t o = 0; o < c->n_out; o++)
            free(c->npu_out[o]);
    free(c->npu_out);
    free(c->npu_out_len);
    c->npu_out = NULL;
    c->npu_out_len = NULL;
    if (c->npu_in)
        for (uint32_t i = 0; i < c->n_in; i++)
            free(c->npu_in[i]);
    free(c->npu_in);
    free(c->npu_in_len);
    c->npu_in = NULL;
    c->npu_in_len = NULL;
}
