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

/* ---- model-side helpers --------------------------------------------------------------- */
static uint64_t dims_elems(const uint32_t *d, uint32_t n)
{
    uint64_t p = 1;
    for (uint32_t i = 0; i < n; i++)
        p *= d[i];
    return p;
}

/* ---- shared model ---------------------------------------------------------------------- */
static void shared_put(emu_shared *s)
{
    if (!s || atomic_fetch_sub(&s->refs, 1) != 1)
        return;
    emu_model_free(s->model);
    emu_answers_free(s->answers);
    free(s->max_in_bytes);
    free(s->max_out_bytes);
    free(s);
}

static emu_shared *shared_new(const emu_kind *kind, emu_model *m, emu_answers *an)
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
    s->kind = kind;
    s->model = m;
    s->answers = an;
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

/* The context layer's destructor hook (the first of every context, so the last to run):
   the upper layers' hooks have freed what they attached (custom operators, output buffers,
   a matmul's state). */
static void ctx_free(emu_ctx *c)
{
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
    emu_npu_free(c);
    free(c->in_type);
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
    c->in_type = calloc(c->n_in ? c->n_in : 1, sizeof *c->in_type);
    if (!c->in_bind || !c->out_bind || !c->in_set || !c->in_type)
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
    emu_ctx_on_free(c, ctx_free);
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

/* The I lines every rknn_init prints at RKNN_LOG_LEVEL >= 2, in the wording of the runtime
   version played: "Information:" with colons before 1.6.0, commas after; the model line
   from the answers (an emulator model's, or the vendor file's). */
static void log_init_info(const emu_ctx *c)
{
    if (!emu_log_enabled(EMU_LOG_I))
        return;
    const emu_answers *an = c->shared->answers;
    const char *sep = EMU_LOG_COLONS ? ":" : ",";
    emu_log(EMU_LOG_I, NULL, "RKNN Runtime Information%s %s version: %s (%s)", sep,
            an->rules->lib, an->rules->version_fixed ? EMU_API_VERSION : emu_api_version(c),
            EMU_VERSION_TAG);
    emu_log(EMU_LOG_I, NULL, "RKNN Driver Information%s version: %s", sep, EMU_DRV_VERSION);
    if (an->model_info[0])
        emu_log(EMU_LOG_I, NULL, "RKNN Model Information%s %s", sep, an->model_info);
}

/* ---- kinds of model ------------------------------------------------------------------------
 * Added by constructors of their files before any call (no lock: the library is loading). */
#define EMU_KINDS 4
static const emu_kind *g_kinds[EMU_KINDS];
static int g_n_kinds;

void emu_kind_add(const emu_kind *k)
{
    if (g_n_kinds < EMU_KINDS)
        g_kinds[g_n_kinds++] = k;
}

/* An emulator model (emulator/FORMAT.md): the model and its answers from the layout rules. */
static int own_open(const void *model_bytes, size_t nbytes, const emu_platform **pp, int chosen,
                    emu_model **out, emu_answers **answers)
{
    const uint8_t *bytes = model_bytes;
    static const char fn[] = "rknn_init";
    const emu_platform *p = *pp;
    emu_model *m = NULL;
    int rc;
    int mini = p->family == EMU_FAM_RV1106 || p->family == EMU_FAM_RK2118;
#ifdef EMU_RUNTIME_1_5
    mini = 0;
#endif
    if (mini && !(nbytes >= 8 && memcmp(bytes, EMU_FMT_MAGIC, 8) == 0)) {
        /* the mini runtime's words for bytes that are no model */
        uint64_t magic = 0;
        for (size_t k = 0; k < 8 && k < nbytes; k++)
            magic |= (uint64_t)bytes[k] << (8 * k);
        EMU_ERR(NULL, "invalid rknn model magic: %llx", (unsigned long long)magic);
        return RKNN_ERR_FAIL;
    }
    rc = emu_model_load(bytes, nbytes, &m);
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
        return rc;
    }
    const char *target = emu_model_target(m);
    p = *pp = emu_platform_for_model(p, chosen, target);
    if (target && *target) {
        const emu_platform *tp = emu_platform_find(target);
        if (!tp || strcmp(tp->npu_group, p->npu_group) != 0) {
            /* the board's words (no function prefix) */
            EMU_ERR(NULL, "This rknn model is for %s, but current platform is %s",
                    tp ? tp->name : target, p->name);
            emu_model_free(m);
            return RKNN_ERR_TARGET_PLATFORM_UNMATCH;
        }
    }
    if (!(*answers = emu_answers_own(p, m))) {
        emu_model_free(m);
        return RKNN_ERR_MALLOC_FAIL;
    }
    *out = m;
    return RKNN_SUCC;
}

/* the emulator's own format: what rknn_init reads when no kind added claims the bytes (no
   sniff: own_open refuses bytes that are not of the format, in the runtime's words) */
static const emu_kind g_own_kind = {"emulator model", NULL, own_open, emu_model_run};

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
    int env_bad, chosen;
    const emu_platform *p = emu_platform_choice(&env_bad, &chosen);
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
    emu_answers *an = NULL;
    emu_ctx *c = NULL;
    emu_ctx *wsrc = NULL;
    const emu_kind *kind = NULL;
    for (int k = 0; k < g_n_kinds && !kind; k++)
        if (g_kinds[k]->sniff(bytes, nbytes))
            kind = g_kinds[k];
    if (!kind)
        kind = &g_own_kind;   /* and bytes that are no model are refused in its words */
    /* with no chip chosen the open plays the model's own (p is then that chip) */
    rc = kind->open(bytes, nbytes, &p, chosen, &m, &an);
    if (rc != RKNN_SUCC)
        goto fail;
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
    if (!c || !(c->shared = shared_new(kind, m, an))) {
        rc = RKNN_ERR_MALLOC_FAIL;
        goto fail;
    }
    c->played = played;
    m = NULL;   /* owned by c->shared now */
    an = NULL;
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
    log_init_info(c);
    emu_log(EMU_LOG_D, fn, "context 0x%llx on %s, flags 0x%x", (unsigned long long)c->handle,
            p->name, flag);
    rc = RKNN_SUCC;
    c = NULL;
fail:
    emu_ctx_put(c);   /* never registered: frees it */
    if (m)
        emu_model_free(m);
    emu_answers_free(an);
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
        emu_ctx_put(c);
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
    const emu_answers *an = c->shared->answers;
    /* a vendor file compiled before 1.3.0 runs on one core: 1.5.2 and 1.6.0 on RK3588 refuse
       the multi-core masks 3 and 7 too, naming its version (rknpu2 c28b080 multiple_input_demo,
       compiler 1.2.0b1; the 1.4.2 files of tk2 2c2d03d take them) */
    uint32_t ci = an->compiler_int;
    int one_core = ci && ci < 10300;
    if (an->rules->core_mask_fallback &&
        (m > RKNN_NPU_CORE_0_1_2 || !emu_core_mask_valid(c->plat, m) || m == RKNN_NPU_CORE_ALL ||
         (one_core && (m & (m - 1))))) {
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

/* ---- rknn_query ----------------------------------------------------------------------------
 * One reader for every kind of model: the answers table says what is answered and in whose
 * words (runtime_answers.c), the context what it did (runs, memory, shapes). */
/* RKNN_QUERY_PERF_DETAIL on a context created without RKNN_FLAG_COLLECT_PERF_MASK */
static const char emu_perf_not_collected[] =
    "per-layer timing was not collected: create the context with RKNN_FLAG_COLLECT_PERF_MASK "
    "for the operator time table\n";

static size_t query_size(int cmd, const char **sname)
{
    switch (cmd) {
    case RKNN_QUERY_IN_OUT_NUM: *sname = "rknn_input_output_num"; return sizeof(rknn_input_output_num);
    case RKNN_QUERY_PERF_DETAIL: *sname = "rknn_perf_detail"; return sizeof(rknn_perf_detail);
    case RKNN_QUERY_PERF_RUN: *sname = "rknn_perf_run"; return sizeof(rknn_perf_run);
    case RKNN_QUERY_SDK_VERSION: *sname = "rknn_sdk_version"; return sizeof(rknn_sdk_version);
    case RKNN_QUERY_MEM_SIZE: *sname = "rknn_mem_size"; return sizeof(rknn_mem_size);
    case RKNN_QUERY_CUSTOM_STRING: *sname = "rknn_custom_string"; return sizeof(rknn_custom_string);
    case RKNN_QUERY_DEVICE_MEM_INFO: *sname = "rknn_tensor_mem"; return sizeof(rknn_tensor_mem);
    case RKNN_QUERY_INPUT_DYNAMIC_RANGE: *sname = "rknn_input_range"; return sizeof(rknn_input_range);
    default: *sname = "rknn_tensor_attr"; return sizeof(rknn_tensor_attr);
    }
}

static void static_range_warning(void)
{
    /* boards refuse this query on a static model, with a warning */
    EMU_WARN(NULL, "query RKNN_QUERY_INPUT_DYNAMIC_RANGE error, rknn model is static shape "
             "type, please export rknn with dynamic_shapes");
}

static int query_mem_size(emu_ctx *c, void *info, uint32_t size)
{
    const emu_answers *an = c->shared->answers;
    rknn_mem_size r;
    memset(&r, 0, sizeof r);
    r.total_weight_size = (uint32_t)an->weight_size;
    r.total_internal_size = (uint32_t)an->internal_size;
    if (!an->rules->mem_planned) {
        uint64_t dma = c->owns_weights ? an->weight_size : 0;
        if (c->internal)
            dma += an->internal_size;
        if (!(c->flags & RKNN_FLAG_COLLECT_MODEL_INFO_ONLY)) {
            for (uint32_t i = 0; i < c->n_in; i++)
                dma += c->shared->max_in_bytes[i];
            for (uint32_t o = 0; o < c->n_out; o++)
                dma += c->shared->max_out_bytes[o];
        }
        dma += c->model_bytes;
        r.total_dma_allocated_size = dma;
        if (c->plat->sram_size) {
            r.total_sram_size = c->plat->sram_size;
            r.free_sram_size = emu_sram_free(c->plat);
        }
    }
    memcpy(info, &r, size < sizeof r ? size : sizeof r);
    return RKNN_SUCC;
}

static int query_range(emu_ctx *c, void *info, uint32_t size)
{
    const emu_answers *an = c->shared->answers;
    uint32_t idx = ((rknn_input_range *)info)->index;
    if (idx >= an->n_in) {
        emu_log(EMU_LOG_E, "rknn_query", an->rules->range_index, idx, an->n_in);
        return RKNN_ERR_PARAM_INVALID;
    }
    if (!an->n_sets) {
        static_range_warning();
        return RKNN_ERR_MODEL_INVALID;
    }
    const rknn_tensor_attr *a = emu_answers_attr(an, 0, idx, EMU_ATTR_NORMAL, 0, 0);
    rknn_input_range r;
    memset(&r, 0, sizeof r);
    r.index = idx;
    r.fmt = a->fmt;
    memcpy(r.name, a->name, sizeof r.name);
    r.name[sizeof r.name - 1] = '\0';
    r.n_dims = a->n_dims;
    r.shape_number = an->n_sets > RKNN_MAX_DYNAMIC_SHAPE_NUM ? RKNN_MAX_DYNAMIC_SHAPE_NUM : an->n_sets;
    for (uint32_t s = 0; s < r.shape_number; s++)
        memcpy(r.dyn_range[s], an->ranges + ((uint64_t)s * an->n_in + idx) * RKNN_MAX_DIMS,
               a->n_dims * sizeof(uint32_t));
    memcpy(info, &r, size < sizeof r ? size : sizeof r);
    return RKNN_SUCC;
}

static int query(emu_ctx *c, int cmd, void *info, uint32_t size)
{
    static const char fn[] = "rknn_query";
    const emu_answers *an = c->shared->answers;
    const emu_rules *rules = an->rules;
    if (!info) {
        EMU_ERR(fn, "info == nullptr!");
        return RKNN_ERR_PARAM_INVALID;
    }
    /* the vendor's order and statuses (1.5.2 / 1.6.0 / 2.3.2 answers, docs/abi-notes.md):
       past the last command -5; a negative one -1 on the glibc runtimes (-5 on the mini
       runtime); a command the chip lacks -1 */
    if (cmd >= RKNN_QUERY_CMD_MAX || (cmd < 0 && an->neg_cmd_range)) {
        EMU_ERR(fn, "cmd = %d is not in [0, %d]!", cmd, RKNN_QUERY_CMD_MAX - 1);
        return RKNN_ERR_PARAM_INVALID;
    }
    if (cmd < 0 || !(an->queries >> cmd & 1u)) {
        EMU_ERR(fn, "unsupported cmd(%d)!", cmd);
        return RKNN_ERR_FAIL;
    }
    if (cmd == RKNN_QUERY_INPUT_DYNAMIC_RANGE && !an->n_sets && rules->range_static_first) {
        static_range_warning();
        return RKNN_ERR_MODEL_INVALID;
    }
    const char *sname;
    size_t want = query_size(cmd, &sname);
    if (size < want && !(rules->short_ok >> cmd & 1u)) {
        /* a larger buffer is written up to the struct */
        EMU_ERR(fn, "info_len(%u) < sizeof(%s)(%zu)!", size, sname, want);
        return RKNN_ERR_PARAM_INVALID;
    }
    if (rules->info_only_limited && (c->flags & RKNN_FLAG_COLLECT_MODEL_INFO_ONLY) &&
        cmd != RKNN_QUERY_MEM_SIZE && cmd != RKNN_QUERY_SDK_VERSION) {
        EMU_ERR(fn, "a RKNN_FLAG_COLLECT_MODEL_INFO_ONLY context answers only RKNN_QUERY_MEM_SIZE");
        return RKNN_ERR_FAIL;
    }
    switch (cmd) {
    case RKNN_QUERY_IN_OUT_NUM: {
        rknn_input_output_num *r = info;
        r->n_input = c->n_in;
        r->n_output = c->n_out;
        return RKNN_SUCC;
    }
    case RKNN_QUERY_PERF_DETAIL: {
        rknn_perf_detail *r = info;
        if (rules->perf_text) {
            r->perf_data = (char *)rules->perf_text;
            r->data_len = strlen(rules->perf_text);
        } else if (!(c->flags & RKNN_FLAG_COLLECT_PERF_MASK)) {
            /* the vendor's custom-op demo makes this query on a context created with flags
               0 and exits on failure: answer with a string saying why there is no table */
            r->perf_data = (char *)emu_perf_not_collected;
            r->data_len = strlen(emu_perf_not_collected);
        } else if (!c->has_run || !c->perf_str) {
            EMU_ERR(fn, "RKNN_QUERY_PERF_DETAIL is valid only after rknn_run");
            return RKNN_ERR_FAIL;
        } else {
            r->perf_data = c->perf_str;
            r->data_len = c->perf_len;
        }
        return RKNN_SUCC;
    }
    case RKNN_QUERY_PERF_RUN: {
        rknn_perf_run *r = info;
        if (!c->has_run && !rules->perf_text) {
            EMU_ERR(fn, "RKNN_QUERY_PERF_RUN is valid only after rknn_run");
            return RKNN_ERR_FAIL;
        }
        r->run_duration = c->has_run ? c->last_run_us : 0;
        return RKNN_SUCC;
    }
    case RKNN_QUERY_SDK_VERSION: {
        rknn_sdk_version *r = info;
        memset(r, 0, sizeof *r);
        snprintf(r->api_version, sizeof r->api_version, "%s (%s)", emu_api_version(c),
                 EMU_VERSION_TAG);
        snprintf(r->drv_version, sizeof r->drv_version, "%s", EMU_DRV_VERSION);
        return RKNN_SUCC;
    }
    case RKNN_QUERY_MEM_SIZE:
        return query_mem_size(c, info, size);
    case RKNN_QUERY_CUSTOM_STRING: {
        rknn_custom_string *r = info;
        memset(r, 0, sizeof *r);
        const char *s = emu_model_custom_string(c->m);
        snprintf(r->string, sizeof r->string, "%s", s ? s : "");
        return RKNN_SUCC;
    }
    case RKNN_QUERY_DEVICE_MEM_INFO: {
        rknn_tensor_mem *r = info;
        if (!c->model_mem)
            return RKNN_ERR_FAIL;
        *r = c->model_mem->pub;
        r->priv_data = NULL;
        return RKNN_SUCC;
    }
    case RKNN_QUERY_INPUT_DYNAMIC_RANGE:
        return query_range(c, info, size);
    default:
        return emu_answers_query_attr(c, cmd, info);
    }
}

int rknn_query(rknn_context context, rknn_query_cmd cmd, void *info, uint32_t size)
{
    EMU_INJECT_INT("rknn_query");
    emu_ctx *c;
    int rc = emu_ctx_enter(context, "rknn_query", &c);
    if (rc)
        return rc;
    emu_quirk_query(c, (int)cmd);
    rc = query(c, (int)cmd, info, size);
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
