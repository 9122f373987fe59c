/*
 * rknnx emulator, runtime half: contexts (init, dup, destroy, cores) and rknn_query.
 * Custom operators are in runtime_custom.c.
 *
 * Status conventions of the emulator (the vendor documents few of them):
 *   RKNN_ERR_CTX_INVALID      a context that was never created or is destroyed
 *   RKNN_ERR_PARAM_INVALID    NULL / out-of-range arguments, wrong struct size, unknown
 *                             or unsupported query command, too small a buffer or mem,
 *                             invalid core mask, shape not in the model's shape sets
 *   RKNN_ERR_FAIL             a function the chip does not have (Table 3-1), rknn_wait,
 *                             rknn_dup_context or RKNN_FLAG_SHARE_WEIGHT_MEM with a
 *                             dynamic-shape model,
 *                             non-blocking runs, mixing the general and zero-copy flows,
 *                             perf queries before a run (PERF_DETAIL without the perf
 *                             flag succeeds with a "not collected" string),
 *                             MEM_ALLOC_OUTSIDE memory missing at run time,
 *                             COLLECT_MODEL_INFO_ONLY contexts asked for anything else
 *   RKNN_ERR_INPUT_INVALID    rknn_run with an input that was never provided
 *   RKNN_ERR_OUTPUT_INVALID   rknn_outputs_get before any run
 *   RKNN_ERR_MODEL_INVALID    malformed model bytes or path
 *   RKNN_ERR_TARGET_PLATFORM_UNMATCH  model compiled for another NPU group
 *   RKNN_ERR_DEVICE_UNAVAILABLE       RKNN_EMU_PLATFORM names no known chip
 * Every failure logs one "E RKNN:" line (RKNN_LOG_LEVEL >= 0).  Behaviours clients rely on
 * (version strings, PERF_DETAIL without the perf flag, dynamic-shape attributes) are
 * listed in docs/abi-notes.md.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "model_internal.h"
#include "runtime.h"
#include "standin.h"

/* ---- model-side helpers --------------------------------------------------------------- */
static uint64_t dims_elems(const uint32_t *d, uint32_t n)
{
    uint64_t p = 1;
    for (uint32_t i = 0; i < n; i++)
        p *= d[i];
    return p;
}

const uint32_t *emu_ctx_in_dims(const emu_ctx *c, uint32_t i)
{
    return emu_model_input_dims(c->m, c->shape_set, i, NULL);
}

const uint32_t *emu_ctx_out_dims(const emu_ctx *c, uint32_t o)
{
    return emu_model_output_dims(c->m, c->shape_set, o, NULL);
}

uint64_t emu_ctx_in_bytes(const emu_ctx *c, uint32_t i, uint32_t set)
{
    uint32_t n;
    const uint32_t *d = emu_model_input_dims(c->m, set, i, &n);
    return d ? dims_elems(d, n) * emu_type_size(emu_model_input(c->m, i)->type) : 0;
}

uint64_t emu_ctx_out_bytes(const emu_ctx *c, uint32_t o, uint32_t set)
{
    uint32_t n;
    const uint32_t *d = emu_model_output_dims(c->m, set, o, &n);
    return d ? dims_elems(d, n) * emu_type_size(emu_model_output(c->m, o)->type) : 0;
}

int emu_ctx_check_flow(emu_ctx *c, int flow, const char *func)
{
    if (c->flow == EMU_FLOW_NONE || c->flow == flow)
        return RKNN_SUCC;
    EMU_ERR(func, "this context uses the %s API; the general API (rknn_inputs_set / "
            "rknn_outputs_get) and the zero-copy API (rknn_set_io_mem) cannot be mixed on one "
            "context (RKNN API 3.5)", c->flow == EMU_FLOW_GENERAL ? "general" : "zero-copy");
    return RKNN_ERR_FAIL;
}

/* ---- shared model ---------------------------------------------------------------------- */
static void shared_put(emu_shared *s)
{
    if (!s || atomic_fetch_sub(&s->refs, 1) != 1)
        return;
    emu_model_free(s->model);
    emu_standin_free(s->sd);
    free(s->max_in_bytes);
    free(s->max_out_bytes);
    free(s);
}

static emu_shared *shared_new(emu_model *m)
{
    emu_shared *s = calloc(1, sizeof *s);
    uint32_t ni = emu_model_n_inputs(m), no = emu_model_n_outputs(m);
    if (!s)
        return NULL;
    s->max_in_bytes = calloc(ni ? ni : 1, sizeof(uint64_t));
    s->max_out_bytes = calloc(no ? no : 1, sizeof(uint64_t));
    if (!s->max_in_bytes || !s->max_out_bytes) {
        free(s->max_in_bytes);
        free(s->max_out_bytes);
        free(s);
        return NULL;
    }
    atomic_store(&s->refs, 1);
    s->model = m;
    uint32_t sets = emu_model_n_shape_sets(m);
    if (sets == 0)
        sets = 1;
    for (uint32_t k = 0; k < sets; k++) {
        uint32_t n;
        for (uint32_t i = 0; i < ni; i++) {
            const uint32_t *d = emu_model_input_dims(m, k, i, &n);
            uint64_t b = d ? dims_elems(d, n) * emu_type_size(emu_model_input(m, i)->type) : 0;
            if (b > s->max_in_bytes[i])
                s->max_in_bytes[i] = b;
        }
        for (uint32_t o = 0; o < no; o++) {
            const uint32_t *d = emu_model_output_dims(m, k, o, &n);
            uint64_t b = d ? dims_elems(d, n) * emu_type_size(emu_model_output(m, o)->type) : 0;
            if (b > s->max_out_bytes[o])
                s->max_out_bytes[o] = b;
        }
    }
    return s;
}

/* ---- context lifetime ---------------------------------------------------------------------- */
static void free_bufs(uint8_t **v, uint32_t n)
{
    if (!v)
        return;
    for (uint32_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

static uint8_t **alloc_bufs(const uint64_t *sizes, uint32_t n)
{
    uint8_t **v = calloc(n ? n : 1, sizeof *v);
    if (!v)
        return NULL;
    for (uint32_t i = 0; i < n; i++) {
        v[i] = calloc(1, sizes[i] ? (size_t)sizes[i] : 1);
        if (!v[i]) {
            free_bufs(v, n);
            return NULL;
        }
    }
    return v;
}

void emu_ctx_free(emu_ctx *c)
{
    emu_custom_destroy_all(c);
    emu_ctx_release_outputs(c);
    if (c->in_bind)
        for (uint32_t i = 0; i < c->n_in; i++)
            emu_mem_put(c->in_bind[i].mem);
    if (c->out_bind)
        for (uint32_t o = 0; o < c->n_out; o++)
            emu_mem_put(c->out_bind[o].mem);
    free(c->in_bind);
    free(c->out_bind);
    emu_mem_put(c->weight_mem);
    emu_mem_put(c->internal_mem);
    if (c->model_mem)
        emu_mem_free_internal(c->model_mem);
    free(c->internal);
    free_bufs(c->in_buf, c->n_in);
    free_bufs(c->out_buf, c->n_out);
    free_bufs(c->out_prev, c->n_out);
    free(c->in_set);
    free(c->op_time);
    free(c->perf_str);
    free(c->customs);
    free(c->nodes);
    if (c->mm)
        emu_mm_free(c->mm);
    emu_npu_free(c);
    free(c->sd_in_type);
    shared_put(c->weights_from);
    shared_put(c->shared);
    pthread_mutex_destroy(&c->lock);
    free(c);
}

/* Allocate everything per context; c->shared, flags and plat are set. */
static int ctx_setup(emu_ctx *c)
{
    c->m = c->shared->model;
    c->n_in = emu_model_n_inputs(c->m);
    c->n_out = emu_model_n_outputs(c->m);
    c->core_mask = RKNN_NPU_CORE_AUTO;
    c->batch_core_num = 1;
    c->in_bind = calloc(c->n_in ? c->n_in : 1, sizeof *c->in_bind);
    c->out_bind = calloc(c->n_out ? c->n_out : 1, sizeof *c->out_bind);
    c->in_set = calloc(c->n_in ? c->n_in : 1, sizeof *c->in_set);
    if (!c->in_bind || !c->out_bind || !c->in_set)
        return RKNN_ERR_MALLOC_FAIL;
    if (c->flags & RKNN_FLAG_COLLECT_MODEL_INFO_ONLY)
        return RKNN_SUCC;   /* a dummy context: nothing to run with */
    c->in_buf = alloc_bufs(c->shared->max_in_bytes, c->n_in);
    c->out_buf = alloc_bufs(c->shared->max_out_bytes, c->n_out);
    if (!c->in_buf || !c->out_buf)
        return RKNN_ERR_MALLOC_FAIL;
    if (c->flags & RKNN_FLAG_ASYNC_MASK) {
        c->out_prev = alloc_bufs(c->shared->max_out_bytes, c->n_out);
        if (!c->out_prev)
            return RKNN_ERR_MALLOC_FAIL;
    }
    c->internal_size = emu_model_internal_size(c->m);
    if (!(c->flags & (RKNN_FLAG_MEM_ALLOC_OUTSIDE | RKNN_FLAG_INTERNAL_ALLOC_OUTSIDE))) {
        c->internal = calloc(1, c->internal_size ? (size_t)c->internal_size : 1);
        if (!c->internal)
            return RKNN_ERR_MALLOC_FAIL;
    }
    uint32_t n_ops = emu_model_n_ops(c->m);
    c->op_time = calloc(n_ops ? n_ops : 1, sizeof *c->op_time);
    if (!c->op_time)
        return RKNN_ERR_MALLOC_FAIL;
    return RKNN_SUCC;
}

emu_ctx *emu_ctx_alloc(const emu_platform *p, uint32_t flags)
{
    emu_ctx *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    atomic_store(&c->refs, 1);
    pthread_mutex_init(&c->lock, NULL);
    c->plat = p;
    c->flags = flags;
    return c;
}

static int read_file(const char *path, uint8_t **out, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return RKNN_ERR_MODEL_INVALID;
    int rc = RKNN_ERR_MODEL_INVALID;
    long n;
    if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) > 0 && n < (1L << 30) &&
        fseek(f, 0, SEEK_SET) == 0) {
        uint8_t *b = malloc((size_t)n);
        if (!b) {
            rc = RKNN_ERR_MALLOC_FAIL;
        } else if (fread(b, 1, (size_t)n, f) == (size_t)n) {
            *out = b;
            *size = (size_t)n;
            rc = RKNN_SUCC;
        } else {
            free(b);
        }
    }
    fclose(f);
    return rc;
}

/* The three I lines every rknn_init prints at RKNN_LOG_LEVEL >= 2, in the wording of the
   runtime version played: "Information:" with colons before 1.6.0, commas after. */
static void log_init_info(const emu_ctx *c)
{
    if (!emu_log_enabled(EMU_LOG_I))
        return;
    const char *sep = EMU_LOG_COLONS ? ":" : ",";
    const emu_platform *p = c->plat;
    const char *npu = strcmp(p->npu_group, "RK3566") == 0 ? "RKNPU lite"
                      : strcmp(p->name, "RK3576") == 0    ? "RKNPU f2"
                                                          : "RKNPU v2";
    char plat[16];
    size_t k = 0;
    for (; p->name[k] && k + 1 < sizeof plat; k++)
        plat[k] = (char)tolower((unsigned char)p->name[k]);
    plat[k] = '\0';
    const emu_io_desc *d = c->n_in ? emu_model_input(c->m, 0) : NULL;
    const char *layout = !d ? "UNDEFINED" : d->fmt == RKNN_TENSOR_NCHW ? "NCHW"
                         : d->fmt == RKNN_TENSOR_NHWC ? "NHWC" : "UNDEFINED";
    emu_log(EMU_LOG_I, NULL, "RKNN Runtime Information%s librknnrt version: %s (%s)", sep,
            emu_api_version(c), EMU_VERSION_TAG);
    emu_log(EMU_LOG_I, NULL, "RKNN Driver Information%s version: %s", sep, EMU_DRV_VERSION);
    emu_log(EMU_LOG_I, NULL, "RKNN Model Information%s version: 6, toolkit version: "
            "rknnx-emulator-%s, target: %s, target platform: %s, framework name: rknnx, "
            "framework layout: %s, model inference type: %s", sep, EMU_VERSION_STRING, npu,
            plat, layout, emu_model_n_shape_sets(c->m) ? "dynamic_shape" : "static_shape");
}

int rknn_init(rknn_context *context, void *model, uint32_t size, uint32_t flag,
              rknn_init_extend *extend)
{
    static const char fn[] = "rknn_init";
    EMU_INJECT_INT("rknn_init");
    emu_log_refresh_env();
    if (!context) {
        EMU_ERR(fn, "context is NULL");
        return RKNN_ERR_PARAM_INVALID;
    }
    *context = 0;
    int env_bad;
    const emu_platform *p = emu_platform_current(&env_bad);
    if (!p) {
        EMU_ERR(fn, "RKNN_EMU_PLATFORM='%s' is not a known chip", getenv("RKNN_EMU_PLATFORM"));
        return RKNN_ERR_DEVICE_UNAVAILABLE;
    }
    const emu_played *played = emu_played_current(&env_bad);
    if (env_bad) {
        EMU_ERR(fn, "RKNN_EMU_RUNTIME_VERSION='%s': the emulator plays librknnrt 1.4.0 or "
                "1.6.0 besides its own version", getenv("RKNN_EMU_RUNTIME_VERSION"));
        return RKNN_ERR_PARAM_INVALID;
    }

    if (emu_env_flag("RKNN_EMU_NO_DEVICE")) {
        /* what a board without the rknpu driver, or a user without access to its device
           node, prints (and returns) */
        EMU_ERR(NULL, "failed to open rknpu module, need to insmod rknpu dirver!");
        EMU_ERR(NULL, "failed to open rknn device!");
        return RKNN_ERR_FAIL;
    }

    /* the model bytes: from a zero-copy model buffer, a path, or memory */
    const uint8_t *bytes = NULL;
    size_t nbytes = 0;
    uint8_t *owned = NULL;
    void *map = NULL;
    size_t map_len = 0;
    int rc;
    if (flag & RKNN_FLAG_MODEL_BUFFER_ZERO_COPY) {
        if (!extend || extend->model_buffer_fd < 0 || extend->real_model_size == 0 ||
            extend->real_model_offset < 0) {
            EMU_ERR(fn, "RKNN_FLAG_MODEL_BUFFER_ZERO_COPY needs extend->model_buffer_fd, "
                    "real_model_offset and real_model_size");
            return RKNN_ERR_PARAM_INVALID;
        }
        map_len = (size_t)extend->real_model_offset + extend->real_model_size;
        struct stat st;
        if (fstat(extend->model_buffer_fd, &st) != 0 || (st.st_size > 0 && (uint64_t)st.st_size < map_len)) {
            /* mapping past the end of the file would fault on the first read */
            EMU_ERR(fn, "model_buffer_fd %d: real_model_offset + real_model_size (%zu) exceeds "
                    "the buffer", extend->model_buffer_fd, map_len);
            return RKNN_ERR_PARAM_INVALID;
        }
        map = mmap(NULL, map_len, PROT_READ, MAP_SHARED, extend->model_buffer_fd, 0);
        if (map == MAP_FAILED) {
            EMU_ERR(fn, "model_buffer_fd %d cannot be mapped: %s", extend->model_buffer_fd,
                    strerror(errno));
            return RKNN_ERR_PARAM_INVALID;
        }
        bytes = (const uint8_t *)map + extend->real_model_offset;
        nbytes = extend->real_model_size;
    } else if (size == 0) {
        if (!model) {
            EMU_ERR(fn, "model path is NULL");
            return RKNN_ERR_PARAM_INVALID;
        }
        if ((rc = read_file((const char *)model, &owned, &nbytes)) != RKNN_SUCC) {
            EMU_ERR(fn, "cannot read model file '%s'", (const char *)model);
            return rc;
        }
        bytes = owned;
    } else {
        if (!model) {
            EMU_ERR(fn, "model is NULL");
            return RKNN_ERR_PARAM_INVALID;
        }
        bytes = model;
        nbytes = size;
    }

    emu_model *m = NULL;
    emu_ctx *c = NULL;
    emu_ctx *wsrc = NULL;
    emu_standin *sd = NULL;
    int mini = p->family == EMU_FAM_RV1106 || p->family == EMU_FAM_RK2118;
#ifdef EMU_RUNTIME_1_5
    mini = 0;
#endif
    if (emu_standin_sniff(bytes, nbytes)) {
        /* a vendor .rknn file: a stand-in context (standin.c, docs/standin.md) */
        rc = emu_standin_open(bytes, nbytes, p, &sd, &m);
        if (rc != RKNN_SUCC)
            goto fail;
        static atomic_int said;
        if (emu_log_enabled(EMU_LOG_W) && !atomic_exchange(&said, 1))
            fprintf(stderr, "W rknnx: the emulator stands in for vendor .rknn files: it answers "
                    "as the vendor runtime for the file, but rknn_run computes a digest of the "
                    "inputs, not the network (docs/standin.md)\n");
    } else if (mini && !(nbytes >= 8 && memcmp(bytes, EMU_FMT_MAGIC, 8) == 0)) {
        /* the mini runtime's words for bytes that are no model */
        uint64_t magic = 0;
        for (size_t k = 0; k < 8 && k < nbytes; k++)
            magic |= (uint64_t)bytes[k] << (8 * k);
        EMU_ERR(NULL, "invalid rknn model magic: %llx", (unsigned long long)magic);
        rc = RKNN_ERR_FAIL;
        goto fail;
    } else {
        rc = emu_model_load(bytes, nbytes, &m);
    }
    if (rc != RKNN_SUCC) {
        /* the boards' words: a file that is not a model, a model format newer than the
           runtime, then the load failure itself */
        if (nbytes < 12 || memcmp(bytes, EMU_FMT_MAGIC, 8) != 0)
            EMU_ERR(NULL, EMU_LOG_COLONS ? "Invalid RKNN format"
                                         : "parseRKNN from buffer: Invalid RKNN format!");
        else if ((bytes[8] | (bytes[9] << 8)) != EMU_FMT_MAJOR ||
                 (bytes[10] | (bytes[11] << 8)) > EMU_FMT_MINOR)
            EMU_ERR(NULL, "Invalid RKNN model version %u", bytes[8] | (bytes[9] << 8));
        else
            EMU_ERR(fn, "invalid model (%zu bytes): status %d", nbytes, rc);
        EMU_ERR(fn, "load model failed!");
        goto fail;
    }
    const char *target = emu_model_target(m);
    if (!sd && target && *target) {
        const emu_platform *tp = emu_platform_find(target);
        if (!tp || strcmp(tp->npu_group, p->npu_group) != 0) {
            /* the board's words (no function prefix) */
            EMU_ERR(NULL, "This rknn model is for %s, but current platform is %s",
                    tp ? tp->name : target, p->name);
            rc = RKNN_ERR_TARGET_PLATFORM_UNMATCH;
            goto fail;
        }
    }
    if (flag & RKNN_FLAG_SHARE_WEIGHT_MEM) {
        wsrc = extend ? emu_ctx_get(extend->ctx) : NULL;
        if (!wsrc) {
            EMU_ERR(fn, "RKNN_FLAG_SHARE_WEIGHT_MEM needs extend->ctx, a live context");
            rc = extend ? RKNN_ERR_CTX_INVALID : RKNN_ERR_PARAM_INVALID;
            goto fail;
        }
        if (emu_model_n_shape_sets(m) > 0 || emu_model_n_shape_sets(wsrc->m) > 0) {
            EMU_ERR(NULL, "RKNN_FLAG_SHARE_WEIGHT_MEM is invalid, dynamic shape rknn model is "
                    "not supported!");
            rc = RKNN_ERR_FAIL;
            goto fail;
        }
        uint64_t mine = emu_model_weight_size(m), theirs = emu_model_weight_size(wsrc->m);
        if (mine != 0 && mine != theirs) {
            EMU_ERR(fn, "weights of extend->ctx (%llu bytes) do not fit this model (%llu bytes)",
                    (unsigned long long)theirs, (unsigned long long)mine);
            rc = RKNN_ERR_MODEL_INVALID;
            goto fail;
        }
    }
    uint64_t dma = emu_model_weight_size(m) + emu_model_internal_size(m) + nbytes;
    if (emu_npu_memory_short(dma)) {
        EMU_ERR(NULL, "failed to allocate handle, ret: -1, errno: 14");
        EMU_ERR(NULL, "failed to malloc npu memory, size: %llu, flags: 0x2",
                (unsigned long long)dma);
        rc = RKNN_ERR_FAIL;
        goto fail;
    }
    c = emu_ctx_alloc(p, flag);
    if (!c || !(c->shared = shared_new(m))) {
        rc = RKNN_ERR_MALLOC_FAIL;
        goto fail;
    }
    c->played = played;
    m = NULL;   /* owned by c->shared now */
    c->shared->sd = sd;
    sd = NULL;
    if (wsrc) {
        c->weights_from = wsrc->shared;
        atomic_fetch_add(&wsrc->shared->refs, 1);
    }
    c->owns_weights = !wsrc && !(flag & RKNN_FLAG_MEM_ALLOC_OUTSIDE);
    if ((rc = ctx_setup(c)) != RKNN_SUCC)
        goto fail;
    if (p->family == EMU_FAM_RV1106 || p->family == EMU_FAM_RK2118) {
        /* DEVICE_MEM_INFO: the model lives in a runtime DMA buffer on these chips */
        c->model_mem = emu_mem_alloc_internal(nbytes, 0, 0, 1, 0, p);
        if (!c->model_mem) {
            rc = RKNN_ERR_MALLOC_FAIL;
            goto fail;
        }
        memcpy(c->model_mem->cpu, bytes, nbytes);
        c->model_bytes = nbytes;
    }
    if ((rc = emu_ctx_register(c)) != RKNN_SUCC)
        goto fail;
    *context = c->handle;
    if (c->shared->sd)
        emu_standin_log_init(c);
    else
        log_init_info(c);
    emu_log(EMU_LOG_D, fn, "context 0x%llx on %s, flags 0x%x", (unsigned long long)c->handle,
            p->name, flag);
    rc = RKNN_SUCC;
    c = NULL;
fail:
    if (c)
        emu_ctx_free(c);
    if (m)
        emu_model_free(m);
    emu_standin_free(sd);
    emu_ctx_put(wsrc);
    free(owned);
    if (map)
        munmap(map, map_len);
    return rc;
}

int rknn_dup_context(rknn_context *context_in, rknn_context *context_out)
{
    static const char fn[] = "rknn_dup_context";
    EMU_INJECT_INT("rknn_dup_context");
    if (!context_in || !context_out) {
        EMU_ERR(fn, "NULL argument");
        return RKNN_ERR_PARAM_INVALID;
    }
    emu_ctx *src;
    int rc = emu_ctx_enter(*context_in, fn, &src);
    if (rc)
        return rc;
    if (emu_model_n_shape_sets(src->m) > 0) {
        EMU_ERR(fn, "context 0x%llx holds a dynamic-shape model (%u shape sets): dynamic-shape "
                "models cannot be duplicated; create another context with rknn_init",
                (unsigned long long)*context_in, emu_model_n_shape_sets(src->m));
        emu_ctx_leave(src);
        return RKNN_ERR_FAIL;
    }
    emu_ctx *c = emu_ctx_alloc(src->plat, src->flags);
    if (!c) {
        emu_ctx_leave(src);
        return RKNN_ERR_MALLOC_FAIL;
    }
    c->shared = src->shared;
    atomic_fetch_add(&src->shared->refs, 1);
    if (src->weights_from) {
        c->weights_from = src->weights_from;
        atomic_fetch_add(&src->weights_from->refs, 1);
    }
    if (src->weight_mem)
        c->weight_mem = emu_mem_ref(src->weight_mem);
    c->owns_weights = 0;     /* shared with the source context */
    rc = ctx_setup(c);
    if (rc == RKNN_SUCC)
        emu_quirk_dup(src, c);   /* the played version's crash, if this call sets it off */
    emu_ctx_leave(src);
    if (rc == RKNN_SUCC)
        rc = emu_ctx_register(c);
    if (rc != RKNN_SUCC) {
        emu_ctx_free(c);
        return rc;
    }
    *context_out = c->handle;
    return RKNN_SUCC;
}

int rknn_destroy(rknn_context context)
{
    EMU_INJECT_INT("rknn_destroy");
    emu_ctx *c;
    int rc = emu_ctx_unregister(context, &c);
    if (rc != RKNN_SUCC) {
        EMU_ERR("rknn_destroy", "invalid context 0x%llx (never created, or destroyed)",
                (unsigned long long)context);
        return rc;
    }
    emu_quirk_destroy(c);
    emu_ctx_put(c);   /* frees now, or when the last call still using it returns */
    return RKNN_SUCC;
}

int rknn_set_core_mask(rknn_context context, rknn_core_mask core_mask)
{
    static const char fn[] = "rknn_set_core_mask";
    EMU_INJECT_INT("rknn_set_core_mask");
    emu_ctx *c;
    int rc = emu_ctx_enter(context, fn, &c);
    if (rc)
        return rc;
    uint32_t m = (uint32_t)core_mask;
    const emu_standin *sd = c->shared ? c->shared->sd : NULL;
    /* a vendor file compiled before 1.3.0 runs on one core: 1.5.2 and 1.6.0 on RK3588 refuse
       the multi-core masks 3 and 7 too, naming its version (rknpu2 c28b080 multiple_input_demo,
       compiler 1.2.0b1; the 1.4.2 files of tk2 2c2d03d take them) */
    uint32_t ci = sd ? sd->compiler_int : 0;
    int one_core = ci && ci < 10300;
    if (sd && (m > RKNN_NPU_CORE_0_1_2 || !emu_core_mask_valid(c->plat, m) ||
               m == RKNN_NPU_CORE_ALL || (one_core && (m & (m - 1))))) {
        /* 1.5.2 / 1.6.0 on RK3588: masks beyond 0..7 (RKNN_NPU_CORE_ALL included) */
        EMU_ERR(NULL, "Not support core mask: %x, fallback to single core auto mode", m);
        if (one_core)
            EMU_ERR(NULL, "NN Compiler/Model Version is %u.%u.%u now", ci / 10000,
                    ci / 100 % 100, ci % 100);
        EMU_ERR(fn, "failed to set core mask: %x", m);
        c->core_mask = RKNN_NPU_CORE_AUTO;
        rc = RKNN_ERR_FAIL;
    } else if (!emu_core_mask_valid(c->plat, m)) {
        EMU_ERR(fn, "core mask 0x%x is not valid on %s (%u cores)", m, c->plat->name,
                c->plat->n_cores);
        rc = RKNN_ERR_PARAM_INVALID;
    } else {
        c->core_mask = m;
    }
    emu_ctx_leave(c);
    return rc;
}

int rknn_set_batch_core_num(rknn_context context, int core_num)
{
    static const char fn[] = "rknn_set_batch_core_num";
    EMU_INJECT_INT("rknn_set_batch_core_num");
    emu_ctx *c;
    int rc = emu_ctx_enter(context, fn, &c);
    if (rc)
        return rc;
    if (core_num < 1 || (uint32_t)core_num > c->plat->n_cores) {
        EMU_ERR(fn, "core_num %d is not in 1..%u on %s", core_num, c->plat->n_cores,
                c->plat->name);
        rc = RKNN_ERR_PARAM_INVALID;
    } else {
        c->batch_core_num = core_num;
    }
    emu_ctx_leave(c);
    return rc;
}

/* ---- rknn_query ---------------------------------------------------------------------------- */
/* RKNN_QUERY_PERF_DETAIL on a context created without RKNN_FLAG_COLLECT_PERF_MASK */
static const char emu_perf_not_collected[] =
    "per-layer timing was not collected: create the context with RKNN_FLAG_COLLECT_PERF_MASK "
    "for the operator time table\n";

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

static const char *query_struct(int cmd)
{
    switch (cmd) {
    case RKNN_QUERY_IN_OUT_NUM: return "rknn_input_output_num";
    case RKNN_QUERY_PERF_DETAIL: return "rknn_perf_detail";
    case RKNN_QUERY_PERF_RUN: return "rknn_perf_run";
    case RKNN_QUERY_SDK_VERSION: return "rknn_sdk_version";
    case RKNN_QUERY_MEM_SIZE: return "rknn_mem_size";
    case RKNN_QUERY_CUSTOM_STRING: return "rknn_custom_string";
    case RKNN_QUERY_DEVICE_MEM_INFO: return "rknn_tensor_mem";
    case RKNN_QUERY_INPUT_DYNAMIC_RANGE: return "rknn_input_range";
    default: return "rknn_tensor_attr";
    }
}

static size_t query_size(int cmd)
{
    switch (cmd) {
    case RKNN_QUERY_IN_OUT_NUM: return sizeof(rknn_input_output_num);
    case RKNN_QUERY_INPUT_ATTR:
    case RKNN_QUERY_OUTPUT_ATTR:
    case RKNN_QUERY_NATIVE_INPUT_ATTR:
    case RKNN_QUERY_NATIVE_OUTPUT_ATTR:
    case RKNN_QUERY_NATIVE_NHWC_INPUT_ATTR:
    case RKNN_QUERY_NATIVE_NHWC_OUTPUT_ATTR:
    case RKNN_QUERY_CURRENT_INPUT_ATTR:
    case RKNN_QUERY_CURRENT_OUTPUT_ATTR:
    case RKNN_QUERY_CURRENT_NATIVE_INPUT_ATTR:
    case RKNN_QUERY_CURRENT_NATIVE_OUTPUT_ATTR: return sizeof(rknn_tensor_attr);
    case RKNN_QUERY_PERF_DETAIL: return sizeof(rknn_perf_detail);
    case RKNN_QUERY_PERF_RUN: return sizeof(rknn_perf_run);
    case RKNN_QUERY_SDK_VERSION: return sizeof(rknn_sdk_version);
    case RKNN_QUERY_MEM_SIZE: return sizeof(rknn_mem_size);
    case RKNN_QUERY_CUSTOM_STRING: return sizeof(rknn_custom_string);
    case RKNN_QUERY_DEVICE_MEM_INFO: return sizeof(rknn_tensor_mem);
    case RKNN_QUERY_INPUT_DYNAMIC_RANGE: return sizeof(rknn_input_range);
    default: return 0;
    }
}

static int query_attr(emu_ctx *c, int cmd, rknn_tensor_attr *a)
{
    static const char fn[] = "rknn_query";
    int is_out = 0, kind = EMU_ATTR_NORMAL, current = 0;
    switch (cmd) {
    case RKNN_QUERY_INPUT_ATTR: break;
    case RKNN_QUERY_OUTPUT_ATTR: is_out = 1; break;
    case RKNN_QUERY_NATIVE_INPUT_ATTR: kind = EMU_ATTR_NATIVE; break;
    case RKNN_QUERY_NATIVE_OUTPUT_ATTR: is_out = 1; kind = EMU_ATTR_NATIVE; break;
    case RKNN_QUERY_NATIVE_NHWC_INPUT_ATTR: kind = EMU_ATTR_NATIVE_NHWC; break;
    case RKNN_QUERY_NATIVE_NHWC_OUTPUT_ATTR: is_out = 1; kind = EMU_ATTR_NATIVE_NHWC; break;
    case RKNN_QUERY_CURRENT_INPUT_ATTR: current = 1; break;
    case RKNN_QUERY_CURRENT_OUTPUT_ATTR: current = 1; is_out = 1; break;
    case RKNN_QUERY_CURRENT_NATIVE_INPUT_ATTR: current = 1; kind = EMU_ATTR_NATIVE; break;
    case RKNN_QUERY_CURRENT_NATIVE_OUTPUT_ATTR: current = 1; is_out = 1; kind = EMU_ATTR_NATIVE; break;
    }
    uint32_t idx = a->index, n = is_out ? c->n_out : c->n_in;
    if (idx >= n) {
        EMU_ERR(fn, "%s, p_attr->index(%u) >= %s_num(%u)!", g_query_names[cmd], idx,
                is_out ? "output" : "input", n);
        return RKNN_ERR_PARAM_INVALID;
    }
    const emu_io_desc *d = is_out ? emu_model_output(c->m, idx) : emu_model_input(c->m, idx);
    uint32_t sets = emu_model_n_shape_sets(c->m);
    if (sets && current && !c->shapes_chosen) {
        /* a dynamic-shape model has no current shape until one is set */
        EMU_ERR(fn, "%s error, please call rknn_set_input_shape first", g_query_names[cmd]);
        return RKNN_ERR_FAIL;
    }
    if (sets && cmd == RKNN_QUERY_NATIVE_NHWC_OUTPUT_ATTR) {
        EMU_ERR(fn, "%s command is invalid for dynamic shapes rknn model!", g_query_names[cmd]);
        return RKNN_ERR_FAIL;
    }
    if (sets && !current && kind == EMU_ATTR_NATIVE)
        EMU_WARN(NULL, "%s: dynamic shape rknn model, it will return max %s native shape!",
                 g_query_names[cmd], is_out ? "output" : "input");
    if (current || sets == 0) {
        uint32_t set = current ? c->shape_set : 0;
        const uint32_t *dims = is_out ? emu_model_output_dims(c->m, set, idx, NULL)
                                      : emu_model_input_dims(c->m, set, idx, NULL);
        if (!d || !dims)
            return RKNN_ERR_PARAM_INVALID;
        emu_fill_attr(c->plat, d, dims, is_out, kind, idx, a);
        return RKNN_SUCC;
    }
    /* A dynamic-shape model's plain (and native) attributes describe the largest shape of
       the tensor, so that memory sized from them (size_with_stride for inputs, size or
       n_elems for outputs) holds the tensor at every shape set: per tensor, the set whose
       attribute has the largest size_with_stride, then the largest n_elems; the first such
       set on a tie.  Each tensor is sized on its own, so on a multi-input model the inputs'
       dims may come from different sets.  The CURRENT_* queries describe the chosen set. */
    if (!d)
        return RKNN_ERR_PARAM_INVALID;
    int have = 0;
    rknn_tensor_attr best, t;
    for (uint32_t s = 0; s < sets; s++) {
        const uint32_t *dims = is_out ? emu_model_output_dims(c->m, s, idx, NULL)
                                      : emu_model_input_dims(c->m, s, idx, NULL);
        if (!dims)
            return RKNN_ERR_PARAM_INVALID;
        emu_fill_attr(c->plat, d, dims, is_out, kind, idx, &t);
        if (!have || t.size_with_stride > best.size_with_stride ||
            (t.size_with_stride == best.size_with_stride && t.n_elems > best.n_elems)) {
            best = t;
            have = 1;
        }
    }
    *a = best;
    return RKNN_SUCC;
}

int emu_ctx_native_attr(emu_ctx *c, int is_out, uint32_t idx, rknn_tensor_attr *a)
{
    if (!c->m || idx >= (is_out ? c->n_out : c->n_in))
        return RKNN_ERR_PARAM_INVALID;
    const emu_io_desc *d = is_out ? emu_model_output(c->m, idx) : emu_model_input(c->m, idx);
    const uint32_t *dims = is_out ? emu_ctx_out_dims(c, idx) : emu_ctx_in_dims(c, idx);
    if (!d || !dims)
        return RKNN_ERR_PARAM_INVALID;
    if (c->shared && c->shared->sd) {
        /* the native form at the current shape (CURRENT_NATIVE_*; the static one) */
        const rknn_tensor_attr *v = emu_standin_attr(c->shared->sd, is_out, idx, EMU_ATTR_NATIVE,
                                                     c->shapes_chosen, c->shape_set);
        if (!v)
            return RKNN_ERR_PARAM_INVALID;
        *a = *v;
        if (is_out)
            emu_standin_played_native(c, idx, c->shapes_chosen, a);
        return RKNN_SUCC;
    }
    emu_fill_attr(c->plat, d, dims, is_out, EMU_ATTR_NATIVE, idx, a);
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

int rknn_query(rknn_context context, rknn_query_cmd cmd, void *info, uint32_t size)
{
    static const char fn[] = "rknn_query";
    EMU_INJECT_INT("rknn_query");
    emu_ctx *c;
    int rc = emu_ctx_enter(context, fn, &c);
    if (rc)
        return rc;
    emu_quirk_query(c, (int)cmd);
    if (c->shared && c->shared->sd) {
        rc = emu_standin_query(c, (int)cmd, info, size);
        goto out;
    }
    size_t want = query_size((int)cmd);
    if (!info) {
        EMU_ERR(fn, "info == nullptr!");
        rc = RKNN_ERR_PARAM_INVALID;
        goto out;
    }
    /* the vendor's order and statuses (1.5.2 / 1.6.0 / 2.3.2 answers, docs/abi-notes.md):
       past the last command -5; a negative one -1 on the glibc runtimes (-5 on the mini
       runtime); a command the chip lacks -1 */
    int mini_rt = c->plat->family == EMU_FAM_RV1106 || c->plat->family == EMU_FAM_RK2118;
    if ((int)cmd >= RKNN_QUERY_CMD_MAX || ((int)cmd < 0 && mini_rt)) {
        EMU_ERR(fn, "cmd = %d is not in [0, %d]!", (int)cmd, RKNN_QUERY_CMD_MAX - 1);
        rc = RKNN_ERR_PARAM_INVALID;
        goto out;
    }
    if ((int)cmd < 0 || want == 0 || !emu_platform_supports_query(c->plat, (int)cmd)) {
        EMU_ERR(fn, "unsupported cmd(%d)!", (int)cmd);
        rc = RKNN_ERR_FAIL;
        goto out;
    }
    if (size < want) {
        /* only a too small buffer is refused; a larger one is written up to the struct */
        EMU_ERR(fn, "info_len(%u) < sizeof(%s)(%zu)!", size, query_struct((int)cmd), want);
        rc = RKNN_ERR_PARAM_INVALID;
        goto out;
    }
    if ((c->flags & RKNN_FLAG_COLLECT_MODEL_INFO_ONLY) && cmd != RKNN_QUERY_MEM_SIZE &&
        cmd != RKNN_QUERY_SDK_VERSION) {
        EMU_ERR(fn, "a RKNN_FLAG_COLLECT_MODEL_INFO_ONLY context answers only RKNN_QUERY_MEM_SIZE");
        rc = RKNN_ERR_FAIL;
        goto out;
    }
    rc = RKNN_SUCC;
    switch (cmd) {
    case RKNN_QUERY_IN_OUT_NUM: {
        rknn_input_output_num *r = info;
        r->n_input = c->n_in;
        r->n_output = c->n_out;
        break;
    }
    case RKNN_QUERY_INPUT_ATTR:
    case RKNN_QUERY_OUTPUT_ATTR:
    case RKNN_QUERY_NATIVE_INPUT_ATTR:
    case RKNN_QUERY_NATIVE_OUTPUT_ATTR:
    case RKNN_QUERY_NATIVE_NHWC_INPUT_ATTR:
    case RKNN_QUERY_NATIVE_NHWC_OUTPUT_ATTR:
    case RKNN_QUERY_CURRENT_INPUT_ATTR:
    case RKNN_QUERY_CURRENT_OUTPUT_ATTR:
    case RKNN_QUERY_CURRENT_NATIVE_INPUT_ATTR:
    case RKNN_QUERY_CURRENT_NATIVE_OUTPUT_ATTR:
        rc = query_attr(c, (int)cmd, info);
        break;
    case RKNN_QUERY_PERF_DETAIL: {
        rknn_perf_detail *r = info;
        if (!(c->flags & RKNN_FLAG_COLLECT_PERF_MASK)) {
            /* the vendor's custom-op demo makes this query on a context created with flags
               0 and exits on failure: answer with a string saying why there is no table */
            r->perf_data = (char *)emu_perf_not_collected;
            r->data_len = strlen(emu_perf_not_collected);
        } else if (!c->has_run || !c->perf_str) {
            EMU_ERR(fn, "RKNN_QUERY_PERF_DETAIL is valid only after rknn_run");
            rc = RKNN_ERR_FAIL;
        } else {
            r->perf_data = c->perf_str;
            r->data_len = c->perf_len;
        }
        break;
    }
    case RKNN_QUERY_PERF_RUN: {
        rknn_perf_run *r = info;
        if (!c->has_run) {
            EMU_ERR(fn, "RKNN_QUERY_PERF_RUN is valid only after rknn_run");
            rc = RKNN_ERR_FAIL;
        } else {
            r->run_duration = c->last_run_us;
        }
        break;
    }
    case RKNN_QUERY_SDK_VERSION: {
        rknn_sdk_version *r = info;
        memset(r, 0, sizeof *r);
        snprintf(r->api_version, sizeof r->api_version, "%s (%s)", emu_api_version(c),
                 EMU_VERSION_TAG);
        snprintf(r->drv_version, sizeof r->drv_version, "%s", EMU_DRV_VERSION);
        break;
    }
    case RKNN_QUERY_MEM_SIZE: {
        rknn_mem_size *r = info;
        memset(r, 0, sizeof *r);
        uint64_t w = emu_model_weight_size(c->m), in = emu_model_internal_size(c->m);
        r->total_weight_size = (uint32_t)w;
        r->total_internal_size = (uint32_t)in;
        uint64_t dma = c->owns_weights ? w : 0;
        if (c->internal)
            dma += in;
        if (!(c->flags & RKNN_FLAG_COLLECT_MODEL_INFO_ONLY)) {
            for (uint32_t i = 0; i < c->n_in; i++)
                dma += c->shared->max_in_bytes[i];
            for (uint32_t o = 0; o < c->n_out; o++)
                dma += c->shared->max_out_bytes[o];
        }
        dma += c->model_bytes;
        r->total_dma_allocated_size = dma;
        if (c->plat->sram_size) {
            r->total_sram_size = c->plat->sram_size;
            r->free_sram_size = emu_sram_free(c->plat);
        }
        break;
    }
    case RKNN_QUERY_CUSTOM_STRING: {
        rknn_custom_string *r = info;
        memset(r, 0, sizeof *r);
        const char *s = emu_model_custom_string(c->m);
        snprintf(r->string, sizeof r->string, "%s", s ? s : "");
        break;
    }
    case RKNN_QUERY_DEVICE_MEM_INFO: {
        rknn_tensor_mem *r = info;
        if (!c->model_mem) {
            rc = RKNN_ERR_FAIL;
            break;
        }
        *r = c->model_mem->pub;
        r->priv_data = NULL;
        break;
    }
    case RKNN_QUERY_INPUT_DYNAMIC_RANGE: {
        rknn_input_range *r = info;
        uint32_t idx = r->index;
        if (idx >= c->n_in) {
            EMU_ERR(fn, "RKNN_QUERY_INPUT_DYNAMIC_RANGE, p_attr->index(%u) >= input_num(%u)!",
                    idx, c->n_in);
            rc = RKNN_ERR_PARAM_INVALID;
            break;
        }
        if (emu_model_n_shape_sets(c->m) == 0) {
            /* boards refuse this query on a static model, with a warning */
            EMU_WARN(NULL, "query RKNN_QUERY_INPUT_DYNAMIC_RANGE error, rknn model is static "
                     "shape type, please export rknn with dynamic_shapes");
            rc = RKNN_ERR_MODEL_INVALID;
            break;
        }
        const emu_io_desc *d = emu_model_input(c->m, idx);
        memset(r, 0, sizeof *r);
        r->index = idx;
        r->fmt = d->fmt;
        memcpy(r->name, d->name, sizeof r->name);
        r->name[sizeof r->name - 1] = '\0';
        r->n_dims = d->n_dims;
        uint32_t sets = emu_model_n_shape_sets(c->m);
        r->shape_number = sets;
        if (r->shape_number > RKNN_MAX_DYNAMIC_SHAPE_NUM)
            r->shape_number = RKNN_MAX_DYNAMIC_SHAPE_NUM;
        for (uint32_t s = 0; s < r->shape_number; s++) {
            uint32_t nd;
            const uint32_t *dims = emu_model_input_dims(c->m, s, idx, &nd);
            if (dims)
                memcpy(r->dyn_range[s], dims, nd * sizeof(uint32_t));
        }
        break;
    }
    default:
        rc = RKNN_ERR_PARAM_INVALID;
        break;
    }
out:
    emu_ctx_leave(c);
    return rc;
}

/* ---- the run environment -------------------------------------------------------------------- */
void emu_ctx_base_env(const emu_ctx *c, emu_run_env *env)
{
    memset(env, 0, sizeof *env);
    if (c->weight_mem)
        env->weights = c->weight_mem->dev;
    else if (c->weights_from && emu_model_weight_size(c->weights_from->model))
        env->weights = emu_model_weights(c->weights_from->model);
    else if (!(c->flags & RKNN_FLAG_MEM_ALLOC_OUTSIDE) || !emu_model_weight_size(c->m))
        env->weights = emu_model_weights(c->m);
    if (c->internal_mem) {
        env->internal = c->internal_mem->dev;
        env->internal_size = c->internal_mem->size;
    } else {
        env->internal = c->internal;
        env->internal_size = c->internal ? c->internal_size : 0;
    }
    env->shape_set = c->shape_set;
}
