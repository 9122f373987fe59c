/*
 * rknnx emulator, runtime half: the general flow (inputs_set / outputs_get / release),
 * rknn_run, rknn_wait and dynamic input shapes.
 *
 * Async mode (RKNN_FLAG_ASYNC_MASK): rknn_run computes frame k and rknn_outputs_get then
 * returns frame k-1, with its frame id in rknn_output_extend.frame_id.  Frame ids count
 * runs from 1; the first rknn_outputs_get after the first run has no previous frame and
 * returns all-zero bytes with frame id 0.  Without async, outputs_get returns the last
 * run's results and its frame id.  rknn_run stores the frame id it computed in
 * extend->frame_id when extend is given.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime.h"

static int64_t now_ns(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void sleep_us(int64_t us)
{
    if (us <= 0)
        return;
    struct timespec ts = {(time_t)(us / 1000000), (long)(us % 1000000) * 1000};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* ---- rknn_inputs_set ------------------------------------------------------------------- */
/* The NPU's input buffer of input i (rknn_emu_read_npu_input reads it): allocated at the
   length the native attribute gives, kept from one inputs_set to the next as the vendor's
   is (its bytes survive forms that do not write them).  0 or RKNN_ERR_MALLOC_FAIL. */
static int ensure_npu_input(emu_ctx *c, uint32_t i, rknn_tensor_attr *na)
{
    int rc = emu_ctx_native_attr(c, 0, i, na);
    if (rc != RKNN_SUCC)
        return rc;
    uint32_t L = emu_npu_input_len(na);
    if (!c->npu_in) {
        c->npu_in = calloc(c->n_in ? c->n_in : 1, sizeof *c->npu_in);
        c->npu_in_len = calloc(c->n_in ? c->n_in : 1, sizeof *c->npu_in_len);
        if (!c->npu_in || !c->npu_in_len) {
            free(c->npu_in);
            free(c->npu_in_len);
            c->npu_in = NULL;
            c->npu_in_len = NULL;
            return RKNN_ERR_MALLOC_FAIL;
        }
    }
    if (c->npu_in_len[i] != L || !c->npu_in[i]) {
        uint8_t *b = calloc(1, L ? L : 1);
        if (!b)
            return RKNN_ERR_MALLOC_FAIL;
        free(c->npu_in[i]);
        c->npu_in[i] = b;
        c->npu_in_len[i] = L;
    }
    return RKNN_SUCC;
}

int rknn_inputs_set(rknn_context context, uint32_t n_inputs, rknn_input inputs[])
{
    static const char fn[] = "rknn_inputs_set";
    EMU_INJECT_INT("rknn_inputs_set");
    emu_ctx *c;
    int rc = emu_ctx_enter(context, fn, &c);
    if (rc)
        return rc;
    emu_layout *ls = NULL;
    int *skip = NULL;
    if (c->flags & (RKNN_FLAG_COLLECT_MODEL_INFO_ONLY | RKNN_FLAG_MEM_ALLOC_OUTSIDE)) {
        EMU_ERR(fn, "not available on a context created with %s",
                (c->flags & RKNN_FLAG_COLLECT_MODEL_INFO_ONLY) ? "RKNN_FLAG_COLLECT_MODEL_INFO_ONLY"
                                                               : "RKNN_FLAG_MEM_ALLOC_OUTSIDE");
        rc = RKNN_ERR_FAIL;
        goto out;
    }
    int vendor = c->shared->answers->rules->lenient_io;   /* as a vendor runtime takes them */
    if (vendor && inputs && n_inputs < c->n_in) {
        /* 1.5.2 / 1.6.0: fewer inputs (or none) are taken, with a warning */
        EMU_WARN(fn, "param input num(%u) != model input num(%u)", n_inputs, c->n_in);
        if (n_inputs == 0) {
            rc = RKNN_SUCC;
            goto out;
        }
    }
    if (!inputs || n_inputs == 0 || n_inputs > c->n_in) {
        if (inputs && n_inputs > c->n_in)
            EMU_ERR(fn, "param input num(%u) > model input num(%u)", n_inputs, c->n_in);
        else
            EMU_ERR(fn, "n_inputs %u invalid (model has %u) or inputs NULL", n_inputs, c->n_in);
        rc = RKNN_ERR_PARAM_INVALID;
        goto out;
    }
    if ((rc = emu_ctx_check_flow(c, EMU_FLOW_GENERAL, fn)))
        goto out;
    if (emu_model_n_shape_sets(c->m) && !c->shapes_chosen) {
        EMU_ERR(fn, "dynamic shape rknn model: call rknn_set_input_shapes first");
        rc = RKNN_ERR_FAIL;
        goto out;
    }
    ls = calloc(n_inputs, sizeof *ls);
    skip = vendor ? calloc(n_inputs, sizeof *skip) : NULL;
    if (vendor && !skip) {
        free(ls);
        ls = NULL;
        rc = RKNN_ERR_MALLOC_FAIL;
        goto out;
    }
    if (!ls) {
        rc = RKNN_ERR_MALLOC_FAIL;
        goto out;
    }
    /* validate everything before touching any input */
    for (uint32_t k = 0; k < n_inputs; k++) {
        const rknn_input *in = &inputs[k];
        if (vendor && in->index >= c->n_in) {
            /* 1.5.2 / 1.6.0 take the call and ignore the entry */
            skip[k] = 1;
            continue;
        }
        if (in->index >= c->n_in) {
            EMU_ERR(fn, "inputs[%u].index %u out of range (model has %u)", k, in->index, c->n_in);
            rc = RKNN_ERR_PARAM_INVALID;
            goto out;
        }
        for (uint32_t j = 0; j < k; j++)
            if (inputs[j].index == in->index) {
                EMU_ERR(fn, "input %u given twice", in->index);
                rc = RKNN_ERR_PARAM_INVALID;
                goto out;
            }
        if (!in->buf) {
            EMU_ERR(fn, "inputs[%u].buf is NULL", k);
            rc = RKNN_ERR_PARAM_INVALID;
            goto out;
        }
        const emu_io_desc *d = emu_model_input(c->m, in->index);
        if (vendor && !in->pass_through && emu_desc_is_image(d->n_dims, d->fmt) &&
            (in->fmt == RKNN_TENSOR_NC1HWC2 || in->fmt == RKNN_TENSOR_UNDEFINED)) {
            /* 1.5.2 / 1.6.0: logged, the call still succeeds, the input is not taken */
            if (in->fmt == RKNN_TENSOR_NC1HWC2) {
                EMU_ERR(fn, "when input channel is %u, not support NC1HWC2 layout!",
                        d->fmt == RKNN_TENSOR_NHWC ? d->dims[3] : d->dims[1]);
            } else {
                EMU_ERR(NULL, "Meet unsupported src layout for normalize: (null), only support "
                        "NHWC src layout!");
                EMU_ERR(fn, "normalize error(-1) index=%u", in->index);
            }
            skip[k] = 1;
            continue;
        }
        /* pass_through takes the bytes as they are, whatever type is named (the vendor's
           1.5.2 and 1.6.0 accept INT8 bytes for a float16 input: fp16_net_rk3566/_rk3588):
           they are read as the model type */
        rknn_tensor_type tt = in->pass_through ? d->type : in->type;
        if (in->pass_through && emu_type_size(in->type) == 0) {
            EMU_ERR(fn, "input %u: unsupported type %d", in->index, (int)in->type);
            rc = RKNN_ERR_PARAM_INVALID;
            goto out;
        }
        if (emu_layout_user(c->plat, d, emu_ctx_in_dims(c, in->index), 0, 0, tt, in->fmt,
                            in->pass_through, 0, 0, &ls[k]) != RKNN_SUCC) {
            EMU_ERR(fn, "input %u: unsupported type %d / fmt %d", in->index, (int)in->type,
                    (int)in->fmt);
            rc = RKNN_ERR_PARAM_INVALID;
            goto out;
        }
        rknn_tensor_attr na;
        if ((rc = ensure_npu_input(c, in->index, &na)) != RKNN_SUCC)
            goto out;
        uint64_t need = emu_layout_bytes(&ls[k]);
        /* pass_through bytes are taken as given, size bytes at most (the vendor accepts
           size 192 for an input whose rows are padded to 384 bytes: tiny_rk3588_i8) */
        if (!in->pass_through && in->size < need) {
            /* only a too-small buffer is refused, in the runtime's words; a larger one is
               read up to the size of the current shape */
            EMU_ERR(fn, "param input size(%u) < model input size(%llu)", in->size,
                    (unsigned long long)need);
            rc = RKNN_ERR_PARAM_INVALID;
            goto out;
        }
    }
    for (uint32_t k = 0; k < n_inputs; k++) {
        const rknn_input *in = &inputs[k];
        if (skip && skip[k])
            continue;
        const emu_io_desc *d = emu_model_input(c->m, in->index);
        emu_layout lm;
        emu_layout_model(d, emu_ctx_in_dims(c, in->index), &lm);
        rknn_tensor_attr na;
        if (emu_ctx_native_attr(c, 0, in->index, &na) != RKNN_SUCC)
            memset(&na, 0, sizeof na);
        uint8_t *npu = c->npu_in[in->index];
        uint32_t L = c->npu_in_len[in->index];
        emu_npu_pack_input(c->plat, d, emu_ctx_in_dims(c, in->index), &na, in->buf, in->size,
                           in->type, in->fmt, in->pass_through, npu, L);
        if (in->pass_through) {
            /* the graph reads what the NPU reads: the buffer in the native layout */
            emu_layout ln;
            emu_layout_native(d, emu_ctx_in_dims(c, in->index), &na, &ln);
            if (emu_layout_bytes(&ln) <= L)
                emu_convert(d, EMU_CONV_RAW, npu, &ln, c->in_buf[in->index], &lm);
        } else {
            emu_convert(d, EMU_CONV_TO_MODEL, in->buf, &ls[k], c->in_buf[in->index], &lm);
        }
        c->in_set[in->index] = 1;
        c->in_type[in->index] = 1 + (int)in->type;
        EMU_CTR_ADD(bytes_in, emu_layout_bytes(&lm));
    }
    c->flow = EMU_FLOW_GENERAL;
    rc = RKNN_SUCC;
out:
    free(ls);
    free(skip);
    emu_ctx_leave(c);
    return rc;
}

/* ---- rknn_run ------------------------------------------------------------------------------ */
static int check_mem(emu_mem *m, const char *what, uint32_t idx)
{
    if (m && !emu_mem_alive(m)) {
        EMU_ERR("rknn_run", "%s %u is bound to a mem that was destroyed with rknn_destroy_mem",
                what, idx);
        return RKNN_ERR_PARAM_INVALID;
    }
    return RKNN_SUCC;
}

static void build_perf(emu_ctx *c, int64_t total_us, int64_t npu_us)
{
    uint32_t n = emu_model_n_ops(c->m);
    size_t cap = 512 + (size_t)n * 160;
    char *s = malloc(cap);
    if (!s)
        return;
    size_t len = 0;
    len += (size_t)snprintf(s + len, cap - len,
                            "-------------------------------------------------------------------\n"
                            "          Operator Time Consuming Table (rknnx emulator, %s)\n"
                            "-------------------------------------------------------------------\n"
                            "%-6s %-16s %-32s %10s\n",
                            c->plat->name, "ID", "OpType", "Name", "Time(us)");
    int64_t sum = 0;
    for (uint32_t i = 0; i < n && len < cap; i++) {
        const char *t = emu_model_op_type(c->m, i), *nm = emu_model_op_name(c->m, i);
        len += (size_t)snprintf(s + len, cap - len, "%-6u %-16.16s %-32.32s %10lld\n", i + 1,
                                t ? t : "", nm ? nm : "", (long long)c->op_time[i]);
        sum += c->op_time[i];
    }
    if (len < cap)
        len += (size_t)snprintf(s + len, cap - len,
                                "Total Operator Elapsed Time(us): %lld\n"
                                "Simulated NPU Time(us): %lld\n"
                                "Total Run Time(us): %lld\n",
                                (long long)sum, (long long)npu_us, (long long)total_us);
    if (len >= cap)
        len = cap - 1;
    free(c->perf_str);
    c->perf_str = s;
    c->perf_len = len;
}

/* RKNN_SUCC, or the refusal of a run whose model has a custom operator type (the answers
   list them: a vendor file's) that no rknn_register_custom_ops gave */
static int check_customs(const emu_ctx *c)
{
    const emu_answers *an = c->shared->answers;
    for (uint32_t k = 0; k < an->n_custom; k++) {
        int have = 0;
        for (uint32_t j = 0; j < c->n_customs && !have; j++)
            have = strncmp(c->customs[j].op.op_type, an->custom[k], RKNN_MAX_NAME_LEN) == 0;
        if (!have) {
            /* 1.6.0 fails such runs with -1 (tk2_77b7109 dual_residual_custom) */
            EMU_ERR("rknn_run", "custom op '%s' of the model is not registered "
                    "(rknn_register_custom_ops)", an->custom[k]);
            return RKNN_ERR_FAIL;
        }
    }
    return RKNN_SUCC;
}

int rknn_run(rknn_context context, rknn_run_extend *extend)
{
    static const char fn[] = "rknn_run";
    EMU_INJECT_INT("rknn_run");
    emu_ctx *c;
    int rc = emu_ctx_enter(context, fn, &c);
    if (rc)
        return rc;
    const emu_rules *rules = c->shared->answers->rules;
    emu_quirk_run(c);   /* the played version's crash, if this call sets it off */
    const void **ins = NULL;
    void **outs = NULL;
    emu_layout *lay = NULL;      /* per input: the user layout of its mem, the model's */
    if (c->flags & RKNN_FLAG_COLLECT_MODEL_INFO_ONLY) {
        EMU_ERR(fn, "a RKNN_FLAG_COLLECT_MODEL_INFO_ONLY context cannot run");
        rc = RKNN_ERR_FAIL;
        goto out;
    }
    if (emu_model_n_shape_sets(c->m) && !c->shapes_chosen &&
        emu_platform_supports_func(c->plat, "rknn_set_input_shapes")) {
        /* a dynamic-shape model runs at a shape set chosen first (boards abort here); a
           chip that cannot choose one runs it at its first */
        EMU_ERR(fn, "dynamic shape rknn model: call rknn_set_input_shapes first");
        rc = RKNN_ERR_FAIL;
        goto out;
    }
    if (extend && extend->non_block) {
        EMU_ERR(fn, "non-blocking run (rknn_run_extend.non_block) is not supported");
        rc = RKNN_ERR_FAIL;
        goto out;
    }
    int outside = (c->flags & RKNN_FLAG_MEM_ALLOC_OUTSIDE) != 0;
    if (outside && emu_model_weight_size(c->m) && !c->weight_mem && !c->weights_from) {
        EMU_ERR(fn, "RKNN_FLAG_MEM_ALLOC_OUTSIDE: call rknn_set_weight_mem first");
        rc = RKNN_ERR_FAIL;
        goto out;
    }
    if (!c->internal && c->internal_size && !c->internal_mem) {
        EMU_ERR(fn, "RKNN_FLAG_%s: call rknn_set_internal_mem first",
                outside ? "MEM_ALLOC_OUTSIDE" : "INTERNAL_ALLOC_OUTSIDE");
        rc = RKNN_ERR_FAIL;
        goto out;
    }
    if ((rc = check_mem(c->weight_mem, "weight mem", 0)) ||
        (rc = check_mem(c->internal_mem, "internal mem", 0)))
        goto out;
    ins = calloc(c->n_in + 1, sizeof *ins);
    outs = calloc(c->n_out + 1, sizeof *outs);
    if (!ins || !outs) {
        rc = RKNN_ERR_MALLOC_FAIL;
        goto out;
    }
    /* inputs: zero-copy ones are checked and cleaned (unless disabled) here, and converted
       from the device view of their mem below, NPU-side */
    lay = calloc(2 * (size_t)c->n_in + 1, sizeof *lay);
    if (!lay) {
        rc = RKNN_ERR_MALLOC_FAIL;
        goto out;
    }
    for (uint32_t i = 0; i < c->n_in; i++) {
        emu_binding *b = &c->in_bind[i];
        const emu_io_desc *d = emu_model_input(c->m, i);
        ins[i] = c->in_buf[i];
        if (!b->mem) {
            if (rules->fp16_needs_mem && d->type == RKNN_TENSOR_FLOAT16 &&
                c->flow == EMU_FLOW_ZERO_COPY) {
                /* in the zero-copy flow the mini runtime has no CPU path for a float16 input
                   left without a mem (fp16_net_rk2118, librknnmrt 2.3.2: -1 once its outputs
                   were bound and set_io_mem refused the input; the same runs with nothing
                   bound, and with the input bound, succeed) */
                EMU_ERR(fn, "input %u (%s) is float16 and has no mem: the mini runtime converts "
                        "no float16 input on the CPU; bind one with rknn_set_io_mem "
                        "(pass_through 0)", i, d->name);
                rc = RKNN_ERR_FAIL;
                goto out;
            }
            if ((!c->in_set[i] && !rules->lenient_io) || outside) {
                /* (a vendor runtime runs on what its input buffers hold) */
                EMU_ERR(fn, "input %u was not set (rknn_inputs_set or rknn_set_io_mem)", i);
                rc = RKNN_ERR_INPUT_INVALID;
                goto out;
            }
            continue;
        }
        if ((rc = check_mem(b->mem, "input", i)))
            goto out;
        emu_layout lu;
        rc = emu_ctx_layout_bound(c, 0, i, &b->attr, &lu);
        if (rc == RKNN_SUCC && emu_layout_bytes(&lu) > b->mem->size) {
            EMU_ERR(fn, "input %u: bound mem of %llu bytes is too small for the current shape "
                    "(%llu): call rknn_set_io_mem again", i, (unsigned long long)b->mem->size,
                    (unsigned long long)emu_layout_bytes(&lu));
            rc = RKNN_ERR_PARAM_INVALID;
        }
        if (rc)
            goto out;
        if (!(c->flags & RKNN_FLAG_DISABLE_FLUSH_INPUT_MEM_CACHE) && !emu_mem_coherent(b->mem))
            emu_mem_sync_range(b->mem, 0, b->mem->size, 1);
        lay[2 * i] = lu;
        emu_layout_model(d, emu_ctx_in_dims(c, i), &lay[2 * i + 1]);
    }
    for (uint32_t o = 0; o < c->n_out; o++) {
        if ((rc = check_mem(c->out_bind[o].mem, "output", o)))
            goto out;
        if (outside && !c->out_bind[o].mem) {
            EMU_ERR(fn, "RKNN_FLAG_MEM_ALLOC_OUTSIDE: output %u has no rknn_set_io_mem", o);
            rc = RKNN_ERR_OUTPUT_INVALID;
            goto out;
        }
    }
    int async = (c->flags & RKNN_FLAG_ASYNC_MASK) && c->out_prev;
    if (async) {
        uint8_t **t = c->out_prev;
        c->out_prev = c->out_buf;
        c->out_buf = t;
        c->prev_set = c->out_set;
        c->prev_frame = c->frame;
        c->have_prev = c->has_run;
    }
    for (uint32_t o = 0; o < c->n_out; o++)
        outs[o] = c->out_buf[o];

    emu_run_env env;
    emu_ctx_base_env(c, &env);
    env.custom_op = emu_custom_hook;
    env.custom_user = c;
    if (c->flags & RKNN_FLAG_COLLECT_PERF_MASK) {
        memset(c->op_time, 0, emu_model_n_ops(c->m) * sizeof *c->op_time);
        env.op_time_us = c->op_time;
    }

    /* the run itself: no global lock held; runs on other contexts overlap, as many at
       once as the chip has NPU cores (emu_npu_cores_take) */
    uint32_t cores = emu_npu_cores_take(c->plat, c->core_mask);
    long long inflight = EMU_CTR_ADD(runs_in_flight, 1) + 1;
    long long peak = atomic_load(&emu_ctr.peak_runs_in_flight);
    while (inflight > peak &&
           !atomic_compare_exchange_weak(&emu_ctr.peak_runs_in_flight, &peak, inflight)) {
    }
    /* the NPU-side work, timed for RKNN_QUERY_PERF_RUN and the npu_ns counters: the
       zero-copy input conversions, the graph, the simulated NPU time, the zero-copy output
       conversions (the cache syncs around it are the CPU's) */
    int cpu_clock = emu_npu_cpu_accounting();
    int64_t cpu0 = cpu_clock ? now_ns(CLOCK_THREAD_CPUTIME_ID) : 0;
    int64_t t0 = now_ns(CLOCK_MONOTONIC);
    for (uint32_t i = 0; i < c->n_in; i++) {
        emu_binding *b = &c->in_bind[i];
        if (b->mem)
            emu_convert(emu_model_input(c->m, i),
                        b->attr.pass_through ? EMU_CONV_RAW : EMU_CONV_TO_MODEL, b->mem->dev,
                        &lay[2 * i], c->in_buf[i], &lay[2 * i + 1]);
    }
    rc = c->shared->kind->run(c->m, ins, (void *const *)outs, &env);   /* its kind's run */
    if (rc == RKNN_SUCC)
        emu_npu_apply_outputs(c);   /* rknn_emu_set_npu_output: the NPU "wrote" these */
    int64_t npu = emu_npu_time_us();
    sleep_us(npu);
    int64_t t1 = now_ns(CLOCK_MONOTONIC);
    EMU_CTR_ADD(runs_in_flight, -1);
    emu_npu_cores_give(cores);
    if (rc != RKNN_SUCC) {
        EMU_ERR(fn, "graph execution failed: status %d", rc);
        goto out;
    }
    EMU_CTR_ADD(runs, 1);
    c->frame++;
    c->out_set = c->shape_set;
    c->has_run = 1;
    c->last_run_us = (t1 - t0) / 1000;
    if (extend)
        extend->frame_id = c->frame;

    /* zero-copy outputs: converted NPU-side into the device view, then invalidated */
    for (uint32_t o = 0; o < c->n_out; o++) {
        emu_binding *b = &c->out_bind[o];
        if (!b->mem)
            continue;
        const emu_io_desc *d = emu_model_output(c->m, o);
        emu_layout lu, lm;
        rc = emu_ctx_layout_bound(c, 1, o, &b->attr, &lu);
        if (rc == RKNN_SUCC && emu_layout_bytes(&lu) > b->mem->size) {
            EMU_ERR(fn, "output %u: bound mem of %llu bytes is too small for the current shape",
                    o, (unsigned long long)b->mem->size);
            rc = RKNN_ERR_PARAM_INVALID;
        }
        if (rc)
            goto out;
        emu_layout_model(d, emu_ctx_out_dims(c, o), &lm);
        if (b->attr.fmt == RKNN_TENSOR_NC1HWC2 && b->attr.type == d->type) {
            /* a native output mem is the NPU's output buffer itself (the vendor's 1.5.2 and
               1.6.0 zero-copy runs): NPU bytes given by rknn_emu_set_npu_output land there
               verbatim, padding channels included; computed ones with zero padding */
            rknn_tensor_attr na;
            uint64_t nsz = 0;
            if (emu_ctx_native_attr(c, 1, o, &na) == RKNN_SUCC)
                nsz = na.size_with_stride > na.size ? na.size_with_stride : na.size;
            if (nsz > b->mem->size)
                nsz = b->mem->size;
            if (c->npu_out && c->npu_out[o]) {
                uint64_t n = c->npu_out_len[o] < nsz ? c->npu_out_len[o] : nsz;
                memcpy(b->mem->dev, c->npu_out[o], (size_t)n);
                continue;
            }
            memset(b->mem->dev, 0, (size_t)nsz);
        }
        emu_convert(d, EMU_CONV_FROM_MODEL, c->out_buf[o], &lm, b->mem->dev, &lu);
    }
    t1 = now_ns(CLOCK_MONOTONIC);
    EMU_CTR_ADD(npu_ns, t1 - t0);
    if (cpu_clock)
        EMU_CTR_ADD(npu_cpu_ns, now_ns(CLOCK_THREAD_CPUTIME_ID) - cpu0);
    c->last_run_us = (t1 - t0) / 1000;
    for (uint32_t o = 0; o < c->n_out; o++) {
        emu_binding *b = &c->out_bind[o];
        if (b->mem && !(c->flags & RKNN_FLAG_DISABLE_FLUSH_OUTPUT_MEM_CACHE) &&
            !emu_mem_coherent(b->mem))
            emu_mem_sync_range(b->mem, 0, b->mem->size, 0);
    }
    if (c->flags & RKNN_FLAG_COLLECT_PERF_MASK)
        build_perf(c, c->last_run_us, npu);
    rc = RKNN_SUCC;
    /* a custom operator type the answers list and no rknn_register_custom_ops gave: the NPU
       part ran, the run fails (1.6.0) */
    rc = check_customs(c);
out:
    free(ins);
    free(outs);
    free(lay);
    emu_ctx_leave(c);
    return rc;
}

int rknn_wait(rknn_context context, rknn_run_extend *extend)
{
    static const char fn[] = "rknn_wait";
    EMU_INJECT_INT("rknn_wait");
    (void)extend;
    emu_ctx *c;
    int rc = emu_ctx_enter(context, fn, &c);   /* Table 3-1: unsupported everywhere */
    if (rc)
        return rc;
    emu_ctx_leave(c);
    return RKNN_ERR_FAIL;
}

/* ---- rknn_outputs_get / release ------------------------------------------------------------ */
static void release_outputs(emu_ctx *c)
{
    while (c->out_allocs) {
        emu_out_buf *b = c->out_allocs;
        c->out_allocs = b->next;
        free(b->ptr);
        free(b);
        EMU_CTR_ADD(live_output_buffers, -1);
    }
}

int rknn_outputs_get(rknn_context context, uint32_t n_outputs, rknn_output outputs[],
                     rknn_output_extend *extend)
{
    static const char fn[] = "rknn_outputs_get";
    EMU_INJECT_INT("rknn_outputs_get");
    emu_ctx *c;
    int rc = emu_ctx_enter(context, fn, &c);
    if (rc)
        return rc;
    emu_layout *ld = NULL;
    if (c->flags & RKNN_FLAG_COLLECT_MODEL_INFO_ONLY) {
        EMU_ERR(fn, "not available on a RKNN_FLAG_COLLECT_MODEL_INFO_ONLY context");
        rc = RKNN_ERR_FAIL;
        goto out;
    }
    int vendor = c->shared->answers->rules->lenient_io;
    if (vendor && n_outputs != c->n_out)
        EMU_WARN(fn, "param output num(%u) != model output num(%u)", n_outputs, c->n_out);
    if (vendor && n_outputs == 0) {
        rc = RKNN_SUCC;   /* 1.5.2 takes it (1.6.0 crashes: docs/standin.md) */
        goto out;
    }
    if (!outputs || n_outputs == 0 || n_outputs > c->n_out) {
        EMU_ERR(fn, "n_outputs %u invalid (model has %u) or outputs NULL", n_outputs, c->n_out);
        rc = RKNN_ERR_PARAM_INVALID;
        goto out;
    }
    if ((rc = emu_ctx_check_flow(c, EMU_FLOW_GENERAL, fn)))
        goto out;
    if (!c->has_run && !vendor) {
        EMU_ERR(fn, "no results: call rknn_run first");
        rc = RKNN_ERR_OUTPUT_INVALID;
        goto out;
    }
    int async = (c->flags & RKNN_FLAG_ASYNC_MASK) && c->out_prev;
    uint8_t **src = async ? c->out_prev : c->out_buf;
    uint32_t set = async ? c->prev_set : c->out_set;
    uint64_t frame = async ? c->prev_frame : c->frame;
    int zeros = async && !c->have_prev;
    ld = calloc(n_outputs, sizeof *ld);
    if (!ld) {
        rc = RKNN_ERR_MALLOC_FAIL;
        goto out;
    }
    for (uint32_t k = 0; k < n_outputs; k++) {
        rknn_output *o = &outputs[k];
        if (o->index >= c->n_out) {
            EMU_ERR(fn, "outputs[%u].index %u out of range (model has %u)", k, o->index, c->n_out);
            rc = RKNN_ERR_PARAM_INVALID;
            goto out;
        }
        const emu_io_desc *d = emu_model_output(c->m, o->index);
        const uint32_t *dims = emu_model_output_dims(c->m, set, o->index, NULL);
        rknn_tensor_type t = o->want_float ? RKNN_TENSOR_FLOAT32 : d->type;
        const emu_answers *an = c->shared->answers;
        if (an->user_type && an->user_type[an->n_in + o->index] == 1 + RKNN_TENSOR_FLOAT32)
            t = RKNN_TENSOR_FLOAT32;   /* container 1: the output's type is the user's float32
                                          (OUTPUT_ATTR says so), want_float or not */
        if (emu_layout_user(c->plat, d, dims, 1, 0, t, RKNN_TENSOR_NCHW, 0, 0, 0, &ld[k]) !=
            RKNN_SUCC) {
            rc = RKNN_ERR_PARAM_INVALID;
            goto out;
        }
        if (c->played && (c->played->quirks & EMU_ANSWER_SCALAR_DEQ))
            ld[k].deq_c2 = 0;   /* 1.4.0: the scalar formula for every element */
        if (o->is_prealloc) {
            uint64_t need = emu_layout_bytes(&ld[k]);
            if (!o->buf || o->size < need) {
                EMU_ERR(fn, "output %u: preallocated buffer %p of %u bytes, need %llu", o->index,
                        o->buf, o->size, (unsigned long long)need);
                rc = RKNN_ERR_PARAM_INVALID;
                goto out;
            }
        }
    }
    for (uint32_t k = 0; k < n_outputs; k++) {
        rknn_output *o = &outputs[k];
        uint64_t need = emu_layout_bytes(&ld[k]);
        if (!o->is_prealloc) {
            emu_out_buf *b = calloc(1, sizeof *b);
            void *p = malloc(need ? (size_t)need : 1);
            if (!b || !p) {
                free(b);
                free(p);
                rc = RKNN_ERR_MALLOC_FAIL;
                goto out;
            }
            b->ptr = p;
            b->next = c->out_allocs;
            c->out_allocs = b;
            emu_ctx_on_free(c, release_outputs);
            EMU_CTR_ADD(live_output_buffers, 1);
            o->buf = p;
            o->size = (uint32_t)need;
        }
        const emu_io_desc *d = emu_model_output(c->m, o->index);
        if (zeros) {
            memset(o->buf, 0, (size_t)need);
        } else {
            emu_layout lm;
            emu_layout_model(d, emu_model_output_dims(c->m, set, o->index, NULL), &lm);
            emu_convert(d, EMU_CONV_FROM_MODEL, src[o->index], &lm, o->buf, &ld[k]);
        }
        EMU_CTR_ADD(bytes_out, need);
    }
    if (extend)
        extend->frame_id = zeros ? 0 : frame;
    c->flow = EMU_FLOW_GENERAL;
    rc = RKNN_SUCC;
out:
    free(ld);
    emu_ctx_leave(c);
    return rc;
}

int rknn_outputs_release(rknn_context context, uint32_t n_ouputs, rknn_output outputs[])
{
    static const char fn[] = "rknn_outputs_release";
    EMU_INJECT_INT("rknn_outputs_release");
    emu_ctx *c;
    int rc = emu_ctx_enter(context, fn, &c);
    if (rc)
        return rc;
    if (!outputs || n_ouputs > c->n_out) {
        EMU_ERR(fn, "n_outputs %u invalid (model has %u) or outputs NULL", n_ouputs, c->n_out);
        rc = RKNN_ERR_PARAM_INVALID;
        goto out;
    }
    if ((rc = emu_ctx_check_flow(c, EMU_FLOW_GENERAL, fn)))
        goto out;
    for (uint32_t k = 0; k < n_ouputs; k++) {
        rknn_output *o = &outputs[k];
        if (o->is_prealloc || !o->buf)
            continue;
        /* only buffers this context handed out are freed; anything else is ignored, so a
           double release is harmless */
        for (emu_out_buf **pp = &c->out_allocs; *pp; pp = &(*pp)->next) {
            if ((*pp)->ptr == o->buf) {
                emu_out_buf *b = *pp;
                *pp = b->next;
                free(b->ptr);
                free(b);
                EMU_CTR_ADD(live_output_buffers, -1);
                o->buf = NULL;
                break;
            }
        }
    }
out:
    emu_ctx_leave(c);
    return rc;
}

/* ---- dynamic shapes ------------------------------------------------------------------------- */
/* attr dims in the model's declared order */
static int attr_dims_model_order(const emu_io_desc *d, const rknn_tensor_attr *a, uint32_t *out)
{
    if (a->n_dims != d->n_dims)
        return 0;
    memcpy(out, a->dims, a->n_dims * sizeof(uint32_t));
    if (emu_desc_is_image(d->n_dims, d->fmt) && a->fmt != d->fmt &&
        (a->fmt == RKNN_TENSOR_NHWC || a->fmt == RKNN_TENSOR_NCHW)) {
        uint32_t N, C, H, W;
        emu_nchw_of(a->dims, a->fmt, &N, &C, &H, &W);
        if (d->fmt == RKNN_TENSOR_NHWC) {
            out[0] = N; out[1] = H; out[2] = W; out[3] = C;
        } else {
            out[0] = N; out[1] = C; out[2] = H; out[3] = W;
        }
    }
    return 1;
}

/* The board's refusal of shapes the model does not have: every shape it supports, then
   what it was given (E lines), and RKNN_ERR_FAIL. */
static void log_shapes_refused(emu_ctx *c, const char *fn, uint32_t i,
                               const rknn_tensor_attr *given)
{
    const emu_io_desc *d = emu_model_input(c->m, i);
    uint32_t sets = emu_model_n_shape_sets(c->m);
    char buf[160];
    EMU_ERR(fn, "error, input name = %s supported input shapes are as follows:", d->name);
    for (uint32_t s = 0; s < sets; s++) {
        uint32_t nd;
        const uint32_t *dims = emu_model_input_dims(c->m, s, i, &nd);
        size_t k = 0;
        for (uint32_t j = 0; dims && j < nd && k < sizeof buf; j++)
            k += (size_t)snprintf(buf + k, sizeof buf - k, "%s%u", j ? "," : "", dims[j]);
        EMU_ERR(NULL, " shape = [%s], layout = %s", k ? buf : "",
                d->fmt == RKNN_TENSOR_NCHW ? "NCHW" : d->fmt == RKNN_TENSOR_NHWC ? "NHWC"
                                                                     : "UNDEFINED");
    }
    size_t k = 0;
    for (uint32_t j = 0; j < given->n_dims && j < RKNN_MAX_DIMS && k < sizeof buf; j++)
        k += (size_t)snprintf(buf + k, sizeof buf - k, "%s%u", j ? ", " : "", given->dims[j]);
    EMU_ERR(NULL, "while get rknn_tensor_attr[%u].name = %.*s, dims = [%s], fmt = %s", i,
            (int)strnlen(given->name, RKNN_MAX_NAME_LEN), given->name, k ? buf : "", given->fmt == RKNN_TENSOR_NCHW ? "NCHW"
                                       : given->fmt == RKNN_TENSOR_NHWC ? "NHWC" : "UNDEFINED");
}

static int set_shapes(emu_ctx *c, const char *fn, uint32_t n, const rknn_tensor_attr *attrs)
{
    if (emu_model_n_shape_sets(c->m) == 0) {
        EMU_ERR(fn, "error, rknn model is static shape type, please export rknn with "
                "dynamic_shapes");
        return RKNN_ERR_MODEL_INVALID;   /* -6, as 1.5.2 and 1.6.0 return it */
    }
    if (!attrs || n != c->n_in) {
        EMU_ERR(fn, "n_inputs %u invalid (model has %u) or attrs NULL", n, c->n_in);
        return RKNN_ERR_PARAM_INVALID;
    }
    uint32_t(*want)[RKNN_MAX_DIMS] = calloc(n ? n : 1, sizeof *want);
    if (!want)
        return RKNN_ERR_MALLOC_FAIL;
    int rc = RKNN_SUCC;
    for (uint32_t k = 0; k < n; k++) {
        uint32_t i = attrs[k].index;
        if (i >= c->n_in) {
            EMU_ERR(fn, "attr[%u].index %u out of range", k, i);
            rc = RKNN_ERR_PARAM_INVALID;
            goto out;
        }
        for (uint32_t j = 0; j < k; j++)
            if (attrs[j].index == i) {
                EMU_ERR(fn, "input %u given twice", i);
                rc = RKNN_ERR_PARAM_INVALID;
                goto out;
            }
        if (attrs[k].fmt != RKNN_TENSOR_NHWC && attrs[k].fmt != RKNN_TENSOR_UNDEFINED) {
            /* boards take the shapes of 4-D inputs in NHWC only */
            EMU_ERR(fn, "input %u: fmt %s is not supported, only NHWC or UNDEFINED", i,
                    attrs[k].fmt == RKNN_TENSOR_NCHW ? "NCHW" : "NC1HWC2");
            rc = RKNN_ERR_PARAM_INVALID;
            goto out;
        }
        if (!attr_dims_model_order(emu_model_input(c->m, i), &attrs[k], want[i])) {
            EMU_ERR(fn, "input %u: n_dims %u does not match the model", i, attrs[k].n_dims);
            rc = RKNN_ERR_PARAM_INVALID;
            goto out;
        }
    }
    uint32_t sets = emu_model_n_shape_sets(c->m);
    int found = -1;
    for (uint32_t s = 0; s < (sets ? sets : 1) && found < 0; s++) {
        int ok = 1;
        for (uint32_t i = 0; i < c->n_in && ok; i++) {
            uint32_t nd;
            const uint32_t *d = emu_model_input_dims(c->m, s, i, &nd);
            ok = d && memcmp(d, want[i], nd * sizeof(uint32_t)) == 0;
        }
        if (ok)
            found = (int)s;
    }
    if (found < 0) {
        /* name the first input whose shape no set has */
        uint32_t bad = 0;
        for (uint32_t k = 0; k < n; k++) {
            uint32_t i = attrs[k].index, hit = 0;
            for (uint32_t s = 0; s < sets && !hit; s++) {
                uint32_t nd;
                const uint32_t *d = emu_model_input_dims(c->m, s, i, &nd);
                hit = d && memcmp(d, want[i], nd * sizeof(uint32_t)) == 0;
            }
            if (!hit) {
                bad = k;
                break;
            }
        }
        log_shapes_refused(c, fn, attrs[bad].index, &attrs[bad]);
        rc = RKNN_ERR_FAIL;
        goto out;
    }
    c->shapes_chosen = 1;
    if ((uint32_t)found != c->shape_set) {
        c->shape_set = (uint32_t)found;
        memset(c->in_set, 0, c->n_in * sizeof *c->in_set);   /* old-shape data is stale */
    }
out:
    free(want);
    return rc;
}

int rknn_set_input_shapes(rknn_context ctx, uint32_t n_inputs, rknn_tensor_attr attr[])
{
    static const char fn[] = "rknn_set_input_shapes";
    EMU_INJECT_INT("rknn_set_input_shapes");
    emu_ctx *c;
    int rc = emu_ctx_enter(ctx, fn, &c);
    if (rc)
        return rc;
    rc = set_shapes(c, fn, n_inputs, attr);
    emu_ctx_leave(c);
    return rc;
}

int rknn_set_input_shape(rknn_context ctx, rknn_tensor_attr *attr)
{
    static const char fn[] = "rknn_set_input_shape";
    EMU_INJECT_INT("rknn_set_input_shape");
    emu_ctx *c;
    int rc = emu_ctx_enter(ctx, fn, &c);
    if (rc)
        return rc;
    EMU_WARN(fn, "deprecated: use rknn_set_input_shapes");
    rknn_tensor_attr *all = NULL;
    if (!attr || attr->index >= c->n_in) {
        EMU_ERR(fn, "attr NULL or index out of range");
        rc = RKNN_ERR_PARAM_INVALID;
        goto out;
    }
    /* the other inputs keep their current shapes */
    all = calloc(c->n_in, sizeof *all);
    if (!all) {
        rc = RKNN_ERR_MALLOC_FAIL;
        goto out;
    }
    for (uint32_t i = 0; i < c->n_in; i++) {
        const emu_io_desc *d = emu_model_input(c->m, i);
        all[i].index = i;
        all[i].n_dims = d->n_dims;
        all[i].fmt = RKNN_TENSOR_UNDEFINED;   /* dims in the model's order */
        memcpy(all[i].dims, emu_ctx_in_dims(c, i), d->n_dims * sizeof(uint32_t));
    }
    all[attr->index] = *attr;
    rc = set_shapes(c, fn, c->n_in, all);
out:
    free(all);
    emu_ctx_leave(c);
    return rc;
}
