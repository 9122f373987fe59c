/*
 * rknnx emulator, runtime half: custom operators.
 *
 * Lifecycle, as the vendor documents it (rknn_custom_op.h / API reference):
 *   rknn_register_custom_ops  stores copies of the ops (CPU target only: the emulator has
 *       no OpenCL; GPU ops fail with RKNN_ERR_FAIL) and calls each op's `init` ONCE per
 *       custom node of that op_type in the model, with the node's tensors: attributes at
 *       the context's current shape set, and memory as the runtime holds it at that moment
 *       (model inputs / outputs: the runtime's staging buffers; intermediates: the internal
 *       memory, which the runtime allocates at rknn_init unless RKNN_FLAG_MEM_ALLOC_OUTSIDE
 *       or RKNN_FLAG_INTERNAL_ALLOC_OUTSIDE is given; constants: the weights).  Memory that
 *       is allocated outside and not set yet (rknn_set_internal_mem / rknn_set_weight_mem
 *       not called) is passed as a mem with virt_addr NULL (size filled in): init may record
 *       attributes but must not touch data it was not given.  Pointers given to init are
 *       not guaranteed to be the ones later calls get (async mode swaps output buffers; a
 *       later rknn_set_internal_mem moves intermediates): prepare and compute must use the
 *       tensors they are passed.
 *   init returning RKNN_WARNING_SKIP_CUSTOM_OP_COMPUTE: the runtime's own implementation
 *       of op_type is used for that node instead of prepare / compute.  The emulator has
 *       built-ins for the standard op types Identity, Relu, Sigmoid, Add, Mul (second input
 *       of the same size or a scalar), Softmax (attr axis, default -1) and ArgMax (attrs
 *       axis default 0, select_last_index; int32 / int64 output); for any other op_type
 *       there is nothing to fall back to and the registration fails with RKNN_ERR_FAIL.
 *   init returning another negative status fails the registration with that status.
 *       A failed registration registers none of the ops of that call: nodes whose init
 *       already succeeded in it get `destroy`, and their ops are forgotten.
 *   prepare (optional) then compute (required) on every rknn_run that reaches the node.
 *   destroy (optional) once per node whose init ran (or that has no init), when the
 *       context is destroyed (rknn_destroy; deferred until a call still running on
 *       another thread returns).
 * rknn_custom_op_get_op_attr works from init, prepare, compute and destroy: it finds the
 * node through the op_ctx the callback was given (this thread's current callback context).
 * A callback that calls back into the API on the same context gets RKNN_ERR_FAIL instead
 * of a deadlock (the context is busy running it).
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "numeric.h"
#include "runtime.h"

static uint64_t view_elems(const emu_tensor_view *v)
{
    uint64_t n = 1;
    for (uint32_t i = 0; i < v->desc.n_dims && i < RKNN_MAX_DIMS; i++)
        n *= v->desc.dims[i];
    return n;
}

/* ---- built-in implementations (init returned RKNN_WARNING_SKIP_CUSTOM_OP_COMPUTE) ------- */
static int elem_type_ok(rknn_tensor_type t)
{
    switch (t) {
    case RKNN_TENSOR_FLOAT32:
    case RKNN_TENSOR_FLOAT16:
    case RKNN_TENSOR_INT8:
    case RKNN_TENSOR_UINT8:
    case RKNN_TENSOR_INT16:
    case RKNN_TENSOR_INT32:
    case RKNN_TENSOR_INT64: return 1;
    default: return 0;
    }
}

/* element i as a real number (dequantized) */
static float ld_real(const emu_tensor_view *v, uint64_t i)
{
    const uint8_t *p = v->data;
    int64_t q;
    switch (v->desc.type) {
    case RKNN_TENSOR_FLOAT32: {
        float f;
        memcpy(&f, p + 4 * i, 4);
        return f;
    }
    case RKNN_TENSOR_FLOAT16: {
        uint16_t h;
        memcpy(&h, p + 2 * i, 2);
        return emu_f16_to_f32(h);
    }
    case RKNN_TENSOR_INT8: q = (int8_t)p[i]; break;
    case RKNN_TENSOR_UINT8: q = p[i]; break;
    case RKNN_TENSOR_INT16: {
        int16_t x;
        memcpy(&x, p + 2 * i, 2);
        q = x;
        break;
    }
    case RKNN_TENSOR_INT32: {
        int32_t x;
        memcpy(&x, p + 4 * i, 4);
        q = x;
        break;
    }
    default: {
        int64_t x;
        memcpy(&x, p + 8 * i, 8);
        q = x;
        break;
    }
    }
    if (v->desc.qnt_type == RKNN_TENSOR_QNT_AFFINE_ASYMMETRIC)
        return emu_dequantize((int32_t)q, v->desc.scale, v->desc.zp);
    if (v->desc.qnt_type == RKNN_TENSOR_QNT_DFP)
        return (float)q * ldexpf(1.0f, -v->desc.fl);
    return (float)q;
}

static void st_real(const emu_tensor_view *v, uint64_t i, float x)
{
    uint8_t *p = v->data;
    int64_t lo, hi;
    switch (v->desc.type) {
    case RKNN_TENSOR_FLOAT32: memcpy(p + 4 * i, &x, 4); return;
    case RKNN_TENSOR_FLOAT16: {
        uint16_t h = emu_f32_to_f16(x);
        memcpy(p + 2 * i, &h, 2);
        return;
    }
    case RKNN_TENSOR_INT8: lo = INT8_MIN; hi = INT8_MAX; break;
    case RKNN_TENSOR_UINT8: lo = 0; hi = UINT8_MAX; break;
    case RKNN_TENSOR_INT16: lo = INT16_MIN; hi = INT16_MAX; break;
    case RKNN_TENSOR_INT32: lo = INT32_MIN; hi = INT32_MAX; break;
    default: lo = INT64_MIN; hi = INT64_MAX; break;
    }
    int64_t q;
    if (v->desc.qnt_type == RKNN_TENSOR_QNT_AFFINE_ASYMMETRIC || v->desc.qnt_type == RKNN_TENSOR_QNT_DFP) {
        float scale = v->desc.qnt_type == RKNN_TENSOR_QNT_DFP ? ldexpf(1.0f, -v->desc.fl) : v->desc.scale;
        int32_t zp = v->desc.qnt_type == RKNN_TENSOR_QNT_DFP ? 0 : v->desc.zp;
        q = emu_quantize(x, scale, zp, (int32_t)(lo < INT32_MIN ? INT32_MIN : lo),
                         (int32_t)(hi > INT32_MAX ? INT32_MAX : hi));
    } else {
        double r = rint((double)x);
        q = r != r ? 0 : (r < (double)lo ? lo : (r >= (double)hi ? hi : (int64_t)r));
    }
    switch (v->desc.type) {
    case RKNN_TENSOR_INT8:
    case RKNN_TENSOR_UINT8: p[i] = (uint8_t)q; break;
    case RKNN_TENSOR_INT16: {
        int16_t x16 = (int16_t)q;
        memcpy(p + 2 * i, &x16, 2);
        break;
    }
    case RKNN_TENSOR_INT32: {
        int32_t x32 = (int32_t)q;
        memcpy(p + 4 * i, &x32, 4);
        break;
    }
    default: memcpy(p + 8 * i, &q, 8); break;
    }
}

typedef struct bi_args {
    const emu_model *m;
    uint32_t op;
    const emu_tensor_view *in;
    uint32_t n_in;
    const emu_tensor_view *out;
    uint32_t n_out;
} bi_args;

static int64_t attr_int(const bi_args *a, const char *name, int64_t def)
{
    rknn_tensor_type t;
    uint32_t n;
    const void *d;
    if (emu_model_op_attr(a->m, a->op, name, &t, &n, &d) != RKNN_SUCC || n < 1)
        return def;
    if (t == RKNN_TENSOR_INT32) {
        int32_t v;
        memcpy(&v, d, 4);
        return v;
    }
    if (t == RKNN_TENSOR_INT64) {
        int64_t v;
        memcpy(&v, d, 8);
        return v;
    }
    return def;
}

/* split the dims of v around `axis` (negative counts from the end): outer, len, inner */
static int split_axis(const emu_tensor_view *v, int64_t axis, uint64_t *outer, uint64_t *len,
                      uint64_t *inner)
{
    int64_t nd = v->desc.n_dims;
    if (axis < 0)
        axis += nd;
    if (nd == 0 || axis < 0 || axis >= nd)
        return 0;
    *outer = *inner = 1;
    for (int64_t i = 0; i < axis; i++)
        *outer *= v->desc.dims[i];
    *len = v->desc.dims[axis];
    for (int64_t i = axis + 1; i < nd; i++)
        *inner *= v->desc.dims[i];
    return *len > 0;
}

static float f_relu(float x) { return x > 0.0f ? x : 0.0f; }
static float f_sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }
static float f_identity(float x) { return x; }

static int bi_unary(const bi_args *a, float (*f)(float))
{
    if (a->n_in != 1 || a->n_out != 1 || view_elems(&a->in[0]) != view_elems(&a->out[0]))
        return RKNN_ERR_PARAM_INVALID;
    uint64_t n = view_elems(&a->out[0]);
    for (uint64_t i = 0; i < n; i++)
        st_real(&a->out[0], i, f(ld_real(&a->in[0], i)));
    return RKNN_SUCC;
}

static int bi_identity(const bi_args *a) { return bi_unary(a, f_identity); }
static int bi_relu(const bi_args *a) { return bi_unary(a, f_relu); }
static int bi_sigmoid(const bi_args *a) { return bi_unary(a, f_sigmoid); }

static int bi_binary(const bi_args *a, int mul)
{
    if (a->n_in != 2 || a->n_out != 1)
        return RKNN_ERR_PARAM_INVALID;
    uint64_t n = view_elems(&a->out[0]), n1 = view_elems(&a->in[1]);
    if (view_elems(&a->in[0]) != n || (n1 != n && n1 != 1))
        return RKNN_ERR_PARAM_INVALID;
    for (uint64_t i = 0; i < n; i++) {
        float x = ld_real(&a->in[0], i), y = ld_real(&a->in[1], n1 == 1 ? 0 : i);
        st_real(&a->out[0], i, mul ? x * y : x + y);
    }
    return RKNN_SUCC;
}

static int bi_add(const bi_args *a) { return bi_binary(a, 0); }
static int bi_mul(const bi_args *a) { return bi_binary(a, 1); }

static int bi_softmax(const bi_args *a)
{
    uint64_t outer, len, inner;
    if (a->n_in != 1 || a->n_out != 1 || view_elems(&a->in[0]) != view_elems(&a->out[0]) ||
        !split_axis(&a->in[0], attr_int(a, "axis", -1), &outer, &len, &inner))
        return RKNN_ERR_PARAM_INVALID;
    for (uint64_t o = 0; o < outer; o++)
        for (uint64_t in = 0; in < inner; in++) {
            uint64_t base = o * len * inner + in;
            float mx = -INFINITY, sum = 0.0f;
            for (uint64_t j = 0; j < len; j++) {
                float x = ld_real(&a->in[0], base + j * inner);
                mx = x > mx ? x : mx;
            }
            for (uint64_t j = 0; j < len; j++)
                sum += expf(ld_real(&a->in[0], base + j * inner) - mx);
            for (uint64_t j = 0; j < len; j++)
                st_real(&a->out[0], base + j * inner,
                        expf(ld_real(&a->in[0], base + j * inner) - mx) / sum);
        }
    return RKNN_SUCC;
}

static int bi_argmax(const bi_args *a)
{
    uint64_t outer, len, inner;
    if (a->n_in != 1 || a->n_out != 1 ||
        !split_axis(&a->in[0], attr_int(a, "axis", 0), &outer, &len, &inner) ||
        view_elems(&a->out[0]) != outer * inner ||
        (a->out[0].desc.type != RKNN_TENSOR_INT64 && a->out[0].desc.type != RKNN_TENSOR_INT32))
        return RKNN_ERR_PARAM_INVALID;
    int last = attr_int(a, "select_last_index", 0) != 0;
    for (uint64_t o = 0; o < outer; o++)
        for (uint64_t in = 0; in < inner; in++) {
            uint64_t base = o * len * inner + in, best = 0;
            float bv = ld_real(&a->in[0], base);
            for (uint64_t j = 1; j < len; j++) {
                float x = ld_real(&a->in[0], base + j * inner);
                if (x > bv || (last && x == bv)) {
                    bv = x;
                    best = j;
                }
            }
            st_real(&a->out[0], o * inner + in, (float)best);
        }
    return RKNN_SUCC;
}

typedef struct builtin {
    const char *op_type;
    int (*fn)(const bi_args *a);
} builtin;

static const builtin g_builtins[] = {
    {"Identity", bi_identity}, {"Relu", bi_relu}, {"Sigmoid", bi_sigmoid}, {"Add", bi_add},
    {"Mul", bi_mul},           {"Softmax", bi_softmax}, {"ArgMax", bi_argmax},
};

static const builtin *builtin_find(const char *op_type)
{
    for (size_t i = 0; i < sizeof g_builtins / sizeof g_builtins[0]; i++)
        if (strcmp(g_builtins[i].op_type, op_type) == 0)
            return &g_builtins[i];
    return NULL;
}

static int run_builtin(const emu_model *m, uint32_t op, const char *op_type,
                       const emu_tensor_view *in, uint32_t n_in, const emu_tensor_view *out,
                       uint32_t n_out)
{
    const builtin *b = builtin_find(op_type);
    if (!b)
        return RKNN_ERR_FAIL;
    for (uint32_t i = 0; i < n_in; i++)
        if (!in[i].data || !elem_type_ok(in[i].desc.type))
            return RKNN_ERR_PARAM_INVALID;
    for (uint32_t i = 0; i < n_out; i++)
        if (!out[i].data || !elem_type_ok(out[i].desc.type))
            return RKNN_ERR_PARAM_INVALID;
    bi_args a = {m, op, in, n_in, out, n_out};
    return b->fn(&a);
}

/* ---- tensors handed to the callbacks ------------------------------------------------------ */
static void view_to_tensor(const emu_tensor_view *v, uint32_t i, rknn_custom_op_tensor *t)
{
    memset(t, 0, sizeof *t);
    const emu_io_desc *d = &v->desc;
    rknn_tensor_attr *a = &t->attr;
    a->index = i;
    a->n_dims = d->n_dims;
    memcpy(a->dims, d->dims, sizeof a->dims);
    memcpy(a->name, d->name, sizeof a->name);
    a->name[sizeof a->name - 1] = '\0';
    a->n_elems = (uint32_t)view_elems(v);
    a->size = (uint32_t)(a->n_elems * emu_type_size(d->type));
    a->fmt = d->fmt;
    a->type = d->type;
    a->qnt_type = d->qnt_type;
    a->fl = d->fl;
    a->zp = d->zp;
    a->scale = d->scale;
    a->size_with_stride = a->size;
    t->mem.virt_addr = v->data;
    t->mem.fd = -1;
    t->mem.size = a->size;
    t->mem.flags = RKNN_TENSOR_MEMORY_FLAGS_ALLOC_INSIDE;
}

/* The callback tensors of node i from views; *out points into the same array. */
static rknn_custom_op_tensor *tensors_of(const emu_tensor_view *ins, uint32_t n_in,
                                         const emu_tensor_view *outs, uint32_t n_out)
{
    rknn_custom_op_tensor *ts = calloc((size_t)n_in + n_out + 1, sizeof *ts);
    if (!ts)
        return NULL;
    for (uint32_t i = 0; i < n_in; i++)
        view_to_tensor(&ins[i], i, &ts[i]);
    for (uint32_t o = 0; o < n_out; o++)
        view_to_tensor(&outs[o], o, &ts[n_in + o]);
    return ts;
}

/* ---- registration -------------------------------------------------------------------------- */
/* destroy node if its init ran; n_regs bounds node->reg */
static void node_destroy(emu_ctx *c, emu_node_state *node, uint32_t n_regs)
{
    if (node->inited && node->reg >= 0 && (uint32_t)node->reg < n_regs &&
        c->customs[node->reg].op.destroy)
        c->customs[node->reg].op.destroy(&node->op_ctx);
    node->inited = 0;
}

/* init every custom node of the ops registered at indices [first, first + n) */
static int init_nodes(emu_ctx *c, const char *fn, uint32_t first, uint32_t n)
{
    uint32_t n_ops = emu_model_n_ops(c->m);
    emu_run_env env;
    emu_ctx_base_env(c, &env);
    emu_tensor_view ins[16], outs[16];
    int rc = RKNN_SUCC;
    for (uint32_t i = 0; i < n_ops && rc == RKNN_SUCC; i++) {
        if (!emu_model_op_is_custom(c->m, i))
            continue;
        const char *type = emu_model_op_type(c->m, i);
        int reg = -1;
        for (uint32_t k = first; k < first + n; k++)
            if (strcmp(c->customs[k].op.op_type, type) == 0)
                reg = (int)k;
        if (reg < 0)
            continue;
        emu_node_state *node = &c->nodes[i];
        memset(node, 0, sizeof *node);
        node->reg = reg;
        node->op_ctx.target = RKNN_TARGET_TYPE_CPU;
        node->op_ctx.internal_ctx = (rknn_custom_op_interal_context)i;
        const rknn_custom_op *op = &c->customs[reg].op;
        if (!op->init) {
            node->inited = 1;
            continue;
        }
        uint32_t n_in = 0, n_out = 0;
        if (emu_model_op_views(c->m, i, (const void *const *)c->in_buf, (void *const *)c->out_buf,
                               &env, ins, &n_in, outs, &n_out) != RKNN_SUCC) {
            rc = RKNN_ERR_FAIL;
            break;
        }
        rknn_custom_op_tensor *ts = tensors_of(ins, n_in, outs, n_out);
        if (!ts) {
            rc = RKNN_ERR_MALLOC_FAIL;
            break;
        }
        emu_ctx *prev = emu_ctx_set_calling(c);
        int r = op->init(&node->op_ctx, ts, n_in, ts + n_in, n_out);
        emu_ctx_set_calling(prev);
        free(ts);
        if (r == RKNN_WARNING_SKIP_CUSTOM_OP_COMPUTE) {
            if (!builtin_find(type)) {
                EMU_ERR(fn, "custom op '%s' (node %u): init asked for the built-in "
                        "implementation, and there is none for that op type", type, i);
                node->reg = -1;
                rc = RKNN_ERR_FAIL;
                break;
            }
            EMU_INFO(fn, "custom op '%s' (node %u): init asked for the built-in implementation",
                     type, i);
            node->builtin = 1;
        } else if (r < 0) {
            EMU_ERR(fn, "custom op '%s' (node %u): init returned %d", type, i, r);
            node->reg = -1;
            rc = r;
            break;
        }
        node->inited = 1;
    }
    if (rc != RKNN_SUCC) {
        /* roll back: the nodes of this call that were initialised are destroyed */
        emu_ctx *prev = emu_ctx_set_calling(c);
        for (uint32_t i = 0; i < n_ops; i++) {
            emu_node_state *node = &c->nodes[i];
            if (node->reg >= (int)first && node->reg < (int)(first + n)) {
                node_destroy(c, node, first + n);
                memset(node, 0, sizeof *node);
                node->reg = -1;
            }
        }
        emu_ctx_set_calling(prev);
    }
    return rc;
}

static void custom_free(emu_ctx *c);

int rknn_register_custom_ops(rknn_context ctx, rknn_custom_op *op, uint32_t custom_op_num)
{
    static const char fn[] = "rknn_register_custom_ops";
    EMU_INJECT_INT("rknn_register_custom_ops");
    emu_ctx *c;
    int rc = emu_ctx_enter(ctx, fn, &c);
    if (rc)
        return rc;
    if (!op || custom_op_num == 0 || custom_op_num > 1024) {
        EMU_ERR(fn, "invalid ops array (%p, %u)", (void *)op, custom_op_num);
        rc = RKNN_ERR_PARAM_INVALID;
        goto out;
    }
    if (c->flags & RKNN_FLAG_COLLECT_MODEL_INFO_ONLY) {
        EMU_ERR(fn, "not available on a RKNN_FLAG_COLLECT_MODEL_INFO_ONLY context");
        rc = RKNN_ERR_FAIL;
        goto out;
    }
    for (uint32_t i = 0; i < custom_op_num; i++) {
        char t[RKNN_MAX_NAME_LEN];
        memcpy(t, op[i].op_type, sizeof t);
        t[sizeof t - 1] = '\0';
        if (!t[0] || !op[i].compute) {
            EMU_ERR(fn, "op %u: op_type and compute are required", i);
            rc = RKNN_ERR_PARAM_INVALID;
            goto out;
        }
        if (op[i].target != RKNN_TARGET_TYPE_CPU) {
            EMU_ERR(fn, "op '%s': only RKNN_TARGET_TYPE_CPU custom ops are emulated (no OpenCL)", t);
            rc = RKNN_ERR_FAIL;
            goto out;
        }
        for (uint32_t k = 0; k < c->n_customs; k++)
            if (strncmp(c->customs[k].op.op_type, t, sizeof t) == 0) {
                EMU_ERR(fn, "op type '%s' is already registered", t);
                rc = RKNN_ERR_PARAM_INVALID;
                goto out;
            }
        for (uint32_t k = 0; k < i; k++)
            if (strncmp(op[k].op_type, t, sizeof t) == 0) {
                EMU_ERR(fn, "op type '%s' appears twice", t);
                rc = RKNN_ERR_PARAM_INVALID;
                goto out;
            }
        int found = 0;
        for (uint32_t k = 0; k < emu_model_n_ops(c->m) && !found; k++)
            found = emu_model_op_is_custom(c->m, k) && strcmp(emu_model_op_type(c->m, k), t) == 0;
        if (!found)
            EMU_WARN(fn, "the model has no custom op of type '%s'", t);
    }
    uint32_t n_ops = emu_model_n_ops(c->m);
    if (!c->nodes) {
        c->nodes = calloc(n_ops ? n_ops : 1, sizeof *c->nodes);
        if (!c->nodes) {
            rc = RKNN_ERR_MALLOC_FAIL;
            goto out;
        }
        for (uint32_t i = 0; i < n_ops; i++)
            c->nodes[i].reg = -1;
        emu_ctx_on_free(c, custom_free);
    }
    emu_custom_reg *n = realloc(c->customs, (c->n_customs + custom_op_num) * sizeof *n);
    if (!n) {
        rc = RKNN_ERR_MALLOC_FAIL;
        goto out;
    }
    c->customs = n;
    for (uint32_t i = 0; i < custom_op_num; i++) {
        emu_custom_reg *r = &c->customs[c->n_customs + i];
        memset(r, 0, sizeof *r);
        r->op = op[i];
        r->op.op_type[RKNN_MAX_NAME_LEN - 1] = '\0';
    }
    rc = init_nodes(c, fn, c->n_customs, custom_op_num);
    if (rc == RKNN_SUCC)
        c->n_customs += custom_op_num;
out:
    emu_ctx_leave(c);
    return rc;
}

/* ---- the run ------------------------------------------------------------------------------- */
int emu_custom_hook(void *user, const emu_model *m, uint32_t op_index, const char *op_type,
                    emu_tensor_view *inputs, uint32_t n_inputs, emu_tensor_view *outputs,
                    uint32_t n_outputs)
{
    static const char fn[] = "rknn_run";
    emu_ctx *c = user;
    emu_node_state *node = c->nodes && op_index < emu_model_n_ops(m) ? &c->nodes[op_index] : NULL;
    if (!node || node->reg < 0 || (uint32_t)node->reg >= c->n_customs) {
        EMU_ERR(fn, "custom op '%s' (node %u) is not registered: call rknn_register_custom_ops",
                op_type, op_index);
        return RKNN_ERR_FAIL;
    }
    int rc;
    if (node->builtin) {
        rc = run_builtin(m, op_index, op_type, inputs, n_inputs, outputs, n_outputs);
        if (rc != RKNN_SUCC)
            EMU_ERR(fn, "built-in '%s' (node %u) cannot compute these tensors", op_type, op_index);
        return rc;
    }
    const rknn_custom_op *op = &c->customs[node->reg].op;
    rknn_custom_op_tensor *ts = tensors_of(inputs, n_inputs, outputs, n_outputs);
    if (!ts)
        return RKNN_ERR_MALLOC_FAIL;
    rknn_custom_op_tensor *tin = ts, *tout = ts + n_inputs;
    emu_ctx *prev = emu_ctx_set_calling(c);
    rc = RKNN_SUCC;
    if (op->prepare)
        rc = op->prepare(&node->op_ctx, tin, n_inputs, tout, n_outputs);
    if (rc >= 0)
        rc = op->compute(&node->op_ctx, tin, n_inputs, tout, n_outputs);
    emu_ctx_set_calling(prev);
    free(ts);
    if (rc < 0) {
        EMU_ERR(fn, "custom op '%s' (node %u) returned %d", op_type, op_index, rc);
        return rc;
    }
    return RKNN_SUCC;
}

/* the context's destructor hook (emu_ctx_on_free): every custom node's destroy, then the
   registrations */
static void custom_free(emu_ctx *c)
{
    if (c->nodes) {
        emu_ctx *prev = emu_ctx_set_calling(c);
        for (uint32_t i = 0; i < emu_model_n_ops(c->m); i++)
            node_destroy(c, &c->nodes[i], c->n_customs);
        emu_ctx_set_calling(prev);
    }
    free(c->customs);
    free(c->nodes);
}

void rknn_custom_op_get_op_attr(rknn_custom_op_context *op_ctx, const char *attr_name,
                                rknn_custom_op_attr *op_attr)
{
    static const char fn[] = "rknn_custom_op_get_op_attr";
    EMU_INJECT_VOID("rknn_custom_op_get_op_attr");
    if (!op_attr)
        return;
    memset(op_attr, 0, sizeof *op_attr);
    if (!attr_name)
        return;
    snprintf(op_attr->name, sizeof op_attr->name, "%s", attr_name);
    emu_ctx *c = emu_ctx_calling();
    if (!op_ctx || !c || !c->nodes) {
        EMU_ERR(fn, "call it from a custom op callback with its op_ctx");
        return;
    }
    uint32_t n_ops = emu_model_n_ops(c->m);
    for (uint32_t i = 0; i < n_ops; i++) {
        if (&c->nodes[i].op_ctx != op_ctx)
            continue;
        rknn_tensor_type t;
        uint32_t n;
        const void *data;
        if (emu_model_op_attr(c->m, i, attr_name, &t, &n, &data) == RKNN_SUCC) {
            op_attr->dtype = t;
            op_attr->n_elems = n;
            op_attr->data = (void *)data;
        } else {
            EMU_WARN(fn, "node %u has no attribute '%s'", i, attr_name);
        }
        return;
    }
    EMU_ERR(fn, "op_ctx %p is not a custom node of this context", (void *)op_ctx);
}
