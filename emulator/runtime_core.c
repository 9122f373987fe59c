/*
 * rknnx emulator, runtime half: logging, counters, emulator-only controls, error
 * injection, chip personalities and the context registry.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "runtime.h"

/* ======================================================================================
 * Controls: values set through rknn_emu_* override the environment.
 * ====================================================================================== */
static pthread_mutex_t g_ctl_lock = PTHREAD_MUTEX_INITIALIZER;
static const emu_platform *g_platform_override;   /* guarded by g_ctl_lock */
static atomic_llong g_npu_time_override = -1;      /* < 0: use the environment */
static atomic_int g_log_override = -1;             /* < 0: use the environment */
static atomic_int g_log_env = 1;                   /* RKNN_LOG_LEVEL as last read */
static atomic_int g_log_env_read;


const char *rknn_emu_version(void) { return EMU_VERSION_STRING; }

/* ---- logging --------------------------------------------------------------------------
 * RKNN_LOG_LEVEL as boards read it: 0 errors, 1 + warnings (the default: a plain C program
 * prints no I lines), 2 + information (the init lines), 3 + debug, 4..6 more detail (the
 * emulator has nothing more to say there).  Another value is refused with one line and the
 * default kept.  Lines read "<L> RKNN: [HH:MM:SS.mmm] <message>"; the mini runtime of the
 * RV1106 family writes no time.  Most vendor messages start "<function>, ", which is what
 * the func argument gives. */
static void log_line(int level, const char *func, const char *msg);

void emu_log_refresh_env(void)
{
    const char *s = getenv("RKNN_LOG_LEVEL");
    int lvl = 1;
    if (s && *s) {
        char *end;
        long v = strtol(s, &end, 10);
        if (*end == '\0' && v >= 0 && v <= 6)
            lvl = (int)v;
        else if (atomic_load(&g_log_override) < 0) {
            char m[80];
            snprintf(m, sizeof m, "Unsupported log level: %.16s", s);
            log_line(EMU_LOG_W, NULL, m);
        }
    }
    atomic_store(&g_log_env, lvl);
    atomic_store(&g_log_env_read, 1);
}

static int log_level(void)
{
    int o = atomic_load_explicit(&g_log_override, memory_order_relaxed);
    if (o >= 0)
        return o;
    if (!atomic_load_explicit(&g_log_env_read, memory_order_relaxed))
        emu_log_refresh_env();
    return atomic_load_explicit(&g_log_env, memory_order_relaxed);
}

int emu_log_enabled(int level) { return level <= log_level(); }

static void log_line(int level, const char *func, const char *msg)
{
    static const char tags[] = "EWIDT";
    char stamp[48] = "";
    const emu_platform *p = emu_platform_current(NULL);
    if (!p || (p->family != EMU_FAM_RV1106 && p->family != EMU_FAM_RK2118)) {
        struct timespec ts;
        struct tm tm;
        clock_gettime(CLOCK_REALTIME, &ts);
        localtime_r(&ts.tv_sec, &tm);
        snprintf(stamp, sizeof stamp, "[%02d:%02d:%02d.%03ld] ", tm.tm_hour, tm.tm_min,
                 tm.tm_sec, ts.tv_nsec / 1000000L);
    }
    /* one fprintf per line so lines from several threads do not interleave */
    fprintf(stderr, "%c RKNN: %s%s%s%s\n", tags[level < 0 ? 0 : (level > 4 ? 4 : level)],
            stamp, func ? func : "", func ? ", " : "", msg);
}

void emu_log(int level, const char *func, const char *fmt, ...)
{
    if (level > log_level())
        return;
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    log_line(level, func, msg);
}

int rknn_emu_set_log_level(int level)
{
    atomic_store(&g_log_override, level < 0 ? -1 : (level > 6 ? 6 : level));
    if (level < 0)
        emu_log_refresh_env();
    return RKNN_SUCC;
}

int rknn_emu_get_log_level(void) { return log_level(); }

/* ======================================================================================
 * Counters
 * ====================================================================================== */
emu_counters_atomic emu_ctr;

static const char *const g_counter_names[] = {
    "live_contexts", "live_mems", "live_output_buffers", "bytes_copied", "bytes_in",
    "bytes_out", "bytes_synced", "syncs", "runs", "runs_in_flight", "peak_runs_in_flight",
    "contexts_created", "mems_created", "npu_ns", "npu_cpu_ns",
};
#define N_COUNTERS ((int)(sizeof g_counter_names / sizeof g_counter_names[0]))

static void snapshot(rknn_emu_counters *c)
{
    c->live_contexts = atomic_load(&emu_ctr.live_contexts);
    c->live_mems = atomic_load(&emu_ctr.live_mems);
    c->live_output_buffers = atomic_load(&emu_ctr.live_output_buffers);
    c->bytes_in = atomic_load(&emu_ctr.bytes_in);
    c->bytes_out = atomic_load(&emu_ctr.bytes_out);
    c->bytes_synced = atomic_load(&emu_ctr.bytes_synced);
    c->bytes_copied = c->bytes_in + c->bytes_out + c->bytes_synced;
    c->syncs = atomic_load(&emu_ctr.syncs);
    c->runs = atomic_load(&emu_ctr.runs);
    c->runs_in_flight = atomic_load(&emu_ctr.runs_in_flight);
    c->peak_runs_in_flight = atomic_load(&emu_ctr.peak_runs_in_flight);
    c->contexts_created = atomic_load(&emu_ctr.contexts_created);
    c->mems_created = atomic_load(&emu_ctr.mems_created);
    c->npu_ns = atomic_load(&emu_ctr.npu_ns);
    c->npu_cpu_ns = atomic_load(&emu_ctr.npu_cpu_ns);
}

int rknn_emu_get_counters(rknn_emu_counters *out, uint32_t size)
{
    if (!out || size == 0 || size > sizeof(rknn_emu_counters))
        return RKNN_ERR_PARAM_INVALID;
    rknn_emu_counters c;
    snapshot(&c);
    memcpy(out, &c, size);
    return RKNN_SUCC;
}

void rknn_emu_reset_counters(void)
{
    atomic_store(&emu_ctr.bytes_in, 0);
    atomic_store(&emu_ctr.bytes_out, 0);
    atomic_store(&emu_ctr.bytes_synced, 0);
    atomic_store(&emu_ctr.syncs, 0);
    atomic_store(&emu_ctr.runs, 0);
    atomic_store(&emu_ctr.contexts_created, 0);
    atomic_store(&emu_ctr.mems_created, 0);
    atomic_store(&emu_ctr.npu_ns, 0);
    atomic_store(&emu_ctr.npu_cpu_ns, 0);
    atomic_store(&emu_ctr.peak_runs_in_flight, atomic_load(&emu_ctr.runs_in_flight));
}

int rknn_emu_counter_count(void) { return N_COUNTERS; }

const char *rknn_emu_counter_name(int index)
{
    return index >= 0 && index < N_COUNTERS ? g_counter_names[index] : NULL;
}

int64_t rknn_emu_counter_value(int index)
{
    if (index < 0 || index >= N_COUNTERS)
        return 0;
    rknn_emu_counters c;
    snapshot(&c);
    const int64_t *v = (const int64_t *)&c;   /* the struct is N_COUNTERS int64_t, in order */
    _Static_assert(sizeof(rknn_emu_counters) == N_COUNTERS * sizeof(int64_t), "counter table");
    return v[index];
}

/* ======================================================================================
 * Error injection
 * ====================================================================================== */
static const char *const g_func_names[] = {
    "rknn_init", "rknn_dup_context", "rknn_destroy", "rknn_query", "rknn_inputs_set",
    "rknn_set_batch_core_num", "rknn_set_core_mask", "rknn_run", "rknn_wait",
    "rknn_outputs_get", "rknn_outputs_release", "rknn_create_mem_from_phys",
    "rknn_create_mem_from_fd", "rknn_create_mem_from_mb_blk", "rknn_create_mem",
    "rknn_create_mem2", "rknn_destroy_mem", "rknn_set_weight_mem", "rknn_set_internal_mem",
    "rknn_set_io_mem", "rknn_set_input_shape", "rknn_set_input_shapes", "rknn_mem_sync",
    "rknn_matmul_create", "rknn_matmul_create_dynamic_shape", "rknn_matmul_set_io_mem",
    "rknn_matmul_set_core_mask", "rknn_matmul_set_quant_params",
    "rknn_matmul_get_quant_params", "rknn_matmul_set_dynamic_shape", "rknn_matmul_run",
    "rknn_matmul_destroy", "rknn_B_normal_layout_to_native_layout",
    "rknn_register_custom_ops", "rknn_custom_op_get_op_attr",
};
#define N_FUNCS (sizeof g_func_names / sizeof g_func_names[0])

#define MAX_INJECT 64
typedef struct injection {
    int used;
    char func[48];
    uint32_t nth;             /* calls left until it fires (1 = the next call) */
    int status;
} injection;

static pthread_mutex_t g_inj_lock = PTHREAD_MUTEX_INITIALIZER;
static injection g_inj[MAX_INJECT];
atomic_int emu_inject_armed;

int rknn_emu_inject_error(const char *func, uint32_t nth, int status)
{
    if (!func || nth == 0)
        return RKNN_ERR_PARAM_INVALID;
    int known = 0;
    for (size_t i = 0; i < N_FUNCS; i++)
        if (strcmp(func, g_func_names[i]) == 0)
            known = 1;
    if (!known) {
        EMU_ERR("rknn_emu_inject_error", "unknown function name '%s'", func);
        return RKNN_ERR_PARAM_INVALID;
    }
    int rc = RKNN_ERR_PARAM_INVALID;
    pthread_mutex_lock(&g_inj_lock);
    for (int i = 0; i < MAX_INJECT; i++) {
        if (!g_inj[i].used) {
            g_inj[i].used = 1;
            snprintf(g_inj[i].func, sizeof g_inj[i].func, "%s", func);
            g_inj[i].nth = nth;
            g_inj[i].status = status;
            atomic_fetch_add(&emu_inject_armed, 1);
            rc = RKNN_SUCC;
            break;
        }
    }
    pthread_mutex_unlock(&g_inj_lock);
    return rc;
}

void rknn_emu_clear_injections(void)
{
    pthread_mutex_lock(&g_inj_lock);
    memset(g_inj, 0, sizeof g_inj);
    atomic_store(&emu_inject_armed, 0);
    pthread_mutex_unlock(&g_inj_lock);
}

int rknn_emu_pending_injections(void) { return atomic_load(&emu_inject_armed); }

/* Count this call against every armed injection of func; fire (and remove) at most one. */
int emu_inject_check(const char *func, int *status)
{
    int fired = 0;
    pthread_mutex_lock(&g_inj_lock);
    for (int i = 0; i < MAX_INJECT; i++) {
        if (!g_inj[i].used || strcmp(g_inj[i].func, func) != 0)
            continue;
        if (--g_inj[i].nth == 0) {
            if (!fired) {
                fired = 1;
                *status = g_inj[i].status;
                g_inj[i].used = 0;
                atomic_fetch_sub(&emu_inject_armed, 1);
            } else {
                g_inj[i].nth = 1;   /* two injections due on one call: the other fires next */
            }
        }
    }
    pthread_mutex_unlock(&g_inj_lock);
    return fired;
}

/* ======================================================================================
 * Chip personalities
 *
 *  chip     family column   NPU group        cores  C2 int8  C2 fp16  NHWC w align  SRAM
 *  RK3588   RK3576/RK3588   RK3588           3      16       8        8 px          956 KiB
 *  RK3576   RK3576/RK3588   RK3576           2      16       8        8 px          -
 *  RK3562   RV1126B/RK356x  RK3562           1      16       8        16 px         -
 *  RK3566   RV1126B/RK356x  RK3566/RK3568    1      8        4        16 px         -
 *  RK3568   RV1126B/RK356x  RK3566/RK3568    1      8        4        16 px         -
 *  RV1126B  RV1126B/RK356x  RV1126B          1      16       8        16 px         -
 *  RV1106   RV1106 family   RV1106/RV1103    1      16       8        16 px         -
 *  RV1103   RV1106 family   RV1106/RV1103    1      16       8        16 px         -
 *  RV1106B  RV1106 family   RV1106B/RV1103B  1      16       8        16 px         -
 *  RV1103B  RV1106 family   RV1106B/RV1103B  1      16       8        16 px         -
 *  RK2118   RK2118          RK2118           1      16       8        16 px         -
 *
 * C2 is the documented value for RK3566/68, RK3588, RK3562 and RV1106/03; for RK3576,
 * RV1126B, RV110xB and RK2118 (undocumented) the emulator uses 16/8.  "C2 int8" applies to
 * 1-byte types, "C2 fp16" to 2-byte types (float16, int16).  A model whose target is in
 * another NPU group fails rknn_init with RKNN_ERR_TARGET_PLATFORM_UNMATCH.
 * ====================================================================================== */
static const emu_platform g_platforms[] = {
    {"RK3588", EMU_FAM_RK3588, "RK3588", 3, 16, 8, 8, 956u * 1024u},
    {"RK3576", EMU_FAM_RK3588, "RK3576", 2, 16, 8, 8, 0},
    {"RK3562", EMU_FAM_RK356X, "RK3562", 1, 16, 8, 16, 0},
    {"RK3566", EMU_FAM_RK356X, "RK3566", 1, 8, 4, 16, 0},
    {"RK3568", EMU_FAM_RK356X, "RK3566", 1, 8, 4, 16, 0},
    {"RV1126B", EMU_FAM_RK356X, "RV1126B", 1, 16, 8, 16, 0},
    {"RV1106", EMU_FAM_RV1106, "RV1106", 1, 16, 8, 16, 0},
    {"RV1103", EMU_FAM_RV1106, "RV1106", 1, 16, 8, 16, 0},
    {"RV1106B", EMU_FAM_RV1106, "RV1106B", 1, 16, 8, 16, 0},
    {"RV1103B", EMU_FAM_RV1106, "RV1106B", 1, 16, 8, 16, 0},
    {"RK2118", EMU_FAM_RK2118, "RK2118", 1, 16, 8, 16, 0},
};
#define N_PLATFORMS (sizeof g_platforms / sizeof g_platforms[0])

uint32_t emu_platform_count(void) { return (uint32_t)N_PLATFORMS; }
const emu_platform *emu_platform_at(uint32_t i) { return i < N_PLATFORMS ? &g_platforms[i] : NULL; }

const emu_platform *emu_platform_find(const char *name)
{
    if (!name)
        return NULL;
    while (isspace((unsigned char)*name))
        name++;
    for (size_t i = 0; i < N_PLATFORMS; i++)
        if (strcasecmp(name, g_platforms[i].name) == 0)
            return &g_platforms[i];
    return NULL;
}

const emu_platform *emu_platform_choice(int *env_bad, int *chosen)
{
    const emu_platform *p;
    if (env_bad)
        *env_bad = 0;
    if (chosen)
        *chosen = 1;
    pthread_mutex_lock(&g_ctl_lock);
    p = g_platform_override;
    pthread_mutex_unlock(&g_ctl_lock);
    if (p)
        return p;
    const char *s = getenv("RKNN_EMU_PLATFORM");
    if (s && *s) {
        p = emu_platform_find(s);
        if (!p && env_bad)
            *env_bad = 1;
        return p;
    }
    if (chosen)
        *chosen = 0;
    return &g_platforms[0];
}

const emu_platform *emu_platform_current(int *env_bad) { return emu_platform_choice(env_bad, NULL); }

/* A PC user with no chip chosen opens a model of RK3566 and means to run it: the emulator
   plays the chip the model was built for, saying so once per chip (a board refuses such a
   model, and so does the emulator where a chip was chosen: the caller's check). */
const emu_platform *emu_platform_for_model(const emu_platform *p, int chosen,
                                           const char *built_for)
{
    static atomic_uint said;
    const emu_platform *fp = built_for ? emu_platform_find(built_for) : NULL;
    if (chosen || !fp || strcmp(fp->npu_group, p->npu_group) == 0)
        return p;
    unsigned bit = 1u << (unsigned)(fp - g_platforms);
    if (emu_log_enabled(EMU_LOG_W) && !(atomic_fetch_or(&said, bit) & bit))
        fprintf(stderr, "W rknnx: no chip chosen (RKNN_EMU_PLATFORM or "
                "EmulatorControl.set_platform): the emulator plays %s, the chip the model was "
                "built for; a chosen chip refuses a model of another, as a board does\n", fp->name);
    return fp;
}

int rknn_emu_set_platform(const char *name)
{
    const emu_platform *p = NULL;
    if (name && *name) {
        p = emu_platform_find(name);
        if (!p) {
            EMU_ERR("rknn_emu_set_platform", "unknown platform '%s'", name);
            return RKNN_ERR_PARAM_INVALID;
        }
    }
    pthread_mutex_lock(&g_ctl_lock);
    g_platform_override = p;
    pthread_mutex_unlock(&g_ctl_lock);
    return RKNN_SUCC;
}

const char *rknn_emu_get_platform(void)
{
    const emu_platform *p = emu_platform_current(NULL);
    return p ? p->name : "";
}

int rknn_emu_platform_count(void) { return (int)N_PLATFORMS; }

const char *rknn_emu_platform_name(int index)
{
    return index >= 0 && (size_t)index < N_PLATFORMS ? g_platforms[index].name : NULL;
}

const char *rknn_emu_context_platform(uint64_t context)
{
    emu_ctx *c = emu_ctx_get((rknn_context)context);
    if (!c)
        return NULL;
    const char *n = c->plat->name;
    emu_ctx_put(c);
    return n;
}

/* ---- Table 3-1: functions per family (RK356X, RK3588, RV1106, RK2118) ---------------------- */
typedef struct func_support {
    const char *name;
    unsigned char fam[4];
} func_support;

static const func_support g_func_support[] = {
    {"rknn_init", {1, 1, 1, 1}},
    {"rknn_set_core_mask", {0, 1, 0, 0}},
    {"rknn_dup_context", {1, 1, 0, 0}},
    {"rknn_destroy", {1, 1, 1, 1}},
    {"rknn_query", {1, 1, 1, 1}},
    {"rknn_inputs_set", {1, 1, 0, 0}},
    {"rknn_run", {1, 1, 1, 1}},
    {"rknn_wait", {0, 0, 0, 0}},
    {"rknn_outputs_get", {1, 1, 0, 0}},
    {"rknn_outputs_release", {1, 1, 0, 0}},
    {"rknn_create_mem_from_mb_blk", {0, 0, 0, 0}},
    {"rknn_create_mem_from_phys", {1, 1, 1, 1}},
    {"rknn_create_mem_from_fd", {1, 1, 1, 0}},
    {"rknn_create_mem", {1, 1, 1, 1}},
    {"rknn_destroy_mem", {1, 1, 1, 1}},
    {"rknn_set_weight_mem", {1, 1, 1, 1}},
    {"rknn_set_internal_mem", {1, 1, 1, 1}},
    {"rknn_set_io_mem", {1, 1, 1, 1}},
    {"rknn_set_input_shapes", {1, 1, 0, 0}},
    {"rknn_set_input_shape", {1, 1, 0, 0}},
    {"rknn_mem_sync", {1, 1, 1, 1}},
    {"rknn_matmul_create", {1, 1, 0, 0}},
    {"rknn_matmul_set_io_mem", {1, 1, 0, 0}},
    {"rknn_matmul_set_core_mask", {0, 1, 0, 0}},
    {"rknn_matmul_run", {1, 1, 0, 0}},
    {"rknn_matmul_destroy", {1, 1, 0, 0}},
    {"rknn_register_custom_ops", {1, 1, 0, 0}},
    {"rknn_custom_op_get_op_attr", {1, 1, 0, 0}},
    {"rknn_set_batch_core_num", {0, 1, 0, 0}},
    {"rknn_matmul_set_quant_params", {1, 1, 0, 0}},
    {"rknn_matmul_get_quant_params", {1, 1, 0, 0}},
    {"rknn_matmul_create_dynamic_shape", {1, 1, 0, 0}},
    {"rknn_matmul_set_dynamic_shape", {1, 1, 0, 0}},
    {"rknn_B_normal_layout_to_native_layout", {1, 1, 0, 0}},
    {"rknn_create_mem2", {1, 1, 1, 1}},
};

int emu_platform_supports_func(const emu_platform *p, const char *func)
{
    for (size_t i = 0; i < sizeof g_func_support / sizeof g_func_support[0]; i++)
        if (strcmp(g_func_support[i].name, func) == 0)
            return g_func_support[i].fam[p->family];
    return 1;
}

int emu_core_mask_valid(const emu_platform *p, uint32_t m)
{
    if (m == RKNN_NPU_CORE_AUTO || m == RKNN_NPU_CORE_ALL || m == RKNN_NPU_CORE_0 ||
        m == RKNN_NPU_CORE_1 || m == RKNN_NPU_CORE_0_1)
        return 1;
    return p->n_cores >= 3 && (m == RKNN_NPU_CORE_2 || m == RKNN_NPU_CORE_0_1_2);
}

/* ---- Table 3-2: queries per column (RK356X, RK3588, RV1106+RK2118) ----------------------- */
int emu_platform_supports_query(const emu_platform *p, int cmd)
{
    int col = p->family == EMU_FAM_RK356X ? 0 : (p->family == EMU_FAM_RK3588 ? 1 : 2);
    switch (cmd) {
    case RKNN_QUERY_IN_OUT_NUM:
    case RKNN_QUERY_INPUT_ATTR:
    case RKNN_QUERY_OUTPUT_ATTR:
    case RKNN_QUERY_SDK_VERSION:
    case RKNN_QUERY_MEM_SIZE:
    case RKNN_QUERY_CUSTOM_STRING:
    case RKNN_QUERY_NATIVE_INPUT_ATTR:
    case RKNN_QUERY_NATIVE_OUTPUT_ATTR:
    case RKNN_QUERY_NATIVE_NHWC_INPUT_ATTR:
    case RKNN_QUERY_NATIVE_NHWC_OUTPUT_ATTR:
        return 1;
    case RKNN_QUERY_PERF_DETAIL:
    case RKNN_QUERY_PERF_RUN:
    case RKNN_QUERY_INPUT_DYNAMIC_RANGE:
    case RKNN_QUERY_CURRENT_INPUT_ATTR:
    case RKNN_QUERY_CURRENT_OUTPUT_ATTR:
    case RKNN_QUERY_CURRENT_NATIVE_INPUT_ATTR:
    case RKNN_QUERY_CURRENT_NATIVE_OUTPUT_ATTR:
        return col != 2;
    case RKNN_QUERY_DEVICE_MEM_INFO:
        return col == 2;
    default:
        return 0;
    }
}

/* ---- board conditions set by the environment ---------------------------------------------
 * RKNN_EMU_NO_DEVICE=1: rknn_init fails as on a board without the rknpu driver or without
 * access to its device node.  RKNN_EMU_NPU_MEMORY=<bytes>: the NPU memory one allocation
 * may take (the model's DMA memory at rknn_init, one create_mem); more fails as a board
 * whose NPU memory (CMA) is exhausted. */
int emu_env_flag(const char *name)
{
    const char *s = getenv(name);
    return s && *s && strcmp(s, "0") != 0;
}

int emu_npu_memory_short(uint64_t bytes)
{
    const char *s = getenv("RKNN_EMU_NPU_MEMORY");
    if (!s || !*s)
        return 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    return *end == '\0' && bytes > v;
}

/* ---- simulated NPU time ------------------------------------------------------------------ */
int64_t emu_npu_time_us(void)
{
    long long o = atomic_load_explicit(&g_npu_time_override, memory_order_relaxed);
    if (o >= 0)
        return o;
    const char *s = getenv("RKNN_EMU_NPU_TIME_US");
    if (!s || !*s)
        return 0;
    char *end;
    long long v = strtoll(s, &end, 10);
    return (*end == '\0' && v > 0) ? v : 0;
}

/* ---- simulated NPU cores ------------------------------------------------------------------
 * A chip has p->n_cores NPU cores (RK3588 three, RK3576 two, the others one), and a core runs
 * one job at a time.  The emulator does the NPU's work on the CPU, inside rknn_run and
 * rknn_matmul_run, so runs of any number of contexts would overlap; instead at most
 * n_cores runs of this process are in their NPU-side part at once (a pool's throughput
 * flattens at the core count, as a board's does).  A context of core mask AUTO takes any
 * one free core; a context pinned to a mask takes every core in it (the runtime splits the
 * model over them) and waits while one of them is busy, even if another core is free.
 * One process's view: processes sharing a board's NPU are not modelled. */
static pthread_mutex_t g_core_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_core_free = PTHREAD_COND_INITIALIZER;
static uint32_t g_core_busy;                       /* a bit per busy core; g_core_lock */
/* the cores this thread holds: a run from inside a run (a custom op's callback running
   another context) goes on on them instead of waiting for itself */
static _Thread_local uint32_t t_cores_held;

static void cores_after_fork_in_child(void)
{
    /* the threads that held cores are gone in the child */
    pthread_mutex_init(&g_core_lock, NULL);
    pthread_cond_init(&g_core_free, NULL);
    g_core_busy = 0;
}

static void emu_npu_cores_register_fork(void)
{
    pthread_atfork(NULL, NULL, cores_after_fork_in_child);
}

uint32_t emu_npu_cores_take(const emu_platform *p, uint32_t mask)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    uint32_t n = p && p->n_cores ? p->n_cores : 1;
    if (n > 16)
        n = 16;
    uint32_t all = (1u << n) - 1;
    uint32_t want = n > 1 && mask != RKNN_NPU_CORE_AUTO ? (mask & all) : 0;
    uint32_t got;
    if (t_cores_held)
        return 0;
    pthread_once(&once, emu_npu_cores_register_fork);
    pthread_mutex_lock(&g_core_lock);
    for (;;) {
        uint32_t idle = all & ~g_core_busy;
        got = want ? ((g_core_busy & want) ? 0 : want) : (idle & (~idle + 1u));
        if (got)
            break;
        pthread_cond_wait(&g_core_free, &g_core_lock);
    }
    g_core_busy |= got;
    pthread_mutex_unlock(&g_core_lock);
    t_cores_held = got;
    return got;
}

void emu_npu_cores_give(uint32_t cores)
{
    if (!cores)
        return;                                    /* a nested run took none */
    t_cores_held = 0;
    pthread_mutex_lock(&g_core_lock);
    g_core_busy &= ~cores;
    pthread_cond_broadcast(&g_core_free);
    pthread_mutex_unlock(&g_core_lock);
}

int rknn_emu_set_npu_time_us(int64_t us)
{
    atomic_store(&g_npu_time_override, us < 0 ? -1 : (long long)us);
    return RKNN_SUCC;
}

int64_t rknn_emu_get_npu_time_us(void) { return emu_npu_time_us(); }

/* ---- CPU time of the NPU-side work ---------------------------------------------------------
 * Off by default: reading a thread's CPU clock is a system call (~0.4 us), as long as a tiny
 * model's whole rknn_run. */
static atomic_int g_npu_cpu_accounting;

int emu_npu_cpu_accounting(void)
{
    return atomic_load_explicit(&g_npu_cpu_accounting, memory_order_relaxed);
}

int rknn_emu_set_npu_cpu_accounting(int on)
{
    return atomic_exchange(&g_npu_cpu_accounting, on != 0);
}

/* ======================================================================================
 * Context registry
 *
 * A handle is (1 << 30) | (generation << 12) | slot: it fits 32-bit rknn_context (armhf),
 * small integers and zero are never valid, and a destroyed handle stays invalid until
 * its slot's generation wraps (2^18 reuses of one slot).  The registry holds one
 * reference; every API call holds another while it uses the context, so destroying a
 * context that another thread is using frees it only when that call returns.
 * ====================================================================================== */
#define REG_SLOTS 4096u
#define REG_TAG   (1u << 30)
static pthread_mutex_t g_reg_lock = PTHREAD_MUTEX_INITIALIZER;
static emu_ctx *g_reg[REG_SLOTS];
static uint32_t g_reg_gen[REG_SLOTS];
static uint32_t g_reg_hint;

static int decode(rknn_context h, uint32_t *slot, uint32_t *gen)
{
    uint64_t v = (uint64_t)h;
    if ((v & ~(uint64_t)0x7fffffffu) != 0 || !(v & REG_TAG))
        return 0;
    *slot = (uint32_t)(v & (REG_SLOTS - 1));
    *gen = (uint32_t)((v >> 12) & 0x3ffffu);
    return 1;
}

int emu_ctx_register(emu_ctx *c)
{
    int rc = RKNN_ERR_MALLOC_FAIL;
    pthread_mutex_lock(&g_reg_lock);
    for (uint32_t k = 0; k < REG_SLOTS; k++) {
        uint32_t s = (g_reg_hint + k) % REG_SLOTS;
        if (!g_reg[s]) {
            g_reg[s] = c;
            g_reg_gen[s] = (g_reg_gen[s] + 1) & 0x3ffffu;
            c->handle = (rknn_context)(REG_TAG | (g_reg_gen[s] << 12) | s);
            g_reg_hint = s + 1;
            rc = RKNN_SUCC;
            break;
        }
    }
    pthread_mutex_unlock(&g_reg_lock);
    if (rc == RKNN_SUCC) {
        EMU_CTR_ADD(live_contexts, 1);
        EMU_CTR_ADD(contexts_created, 1);
    }
    return rc;
}

emu_ctx *emu_ctx_get(rknn_context h)
{
    uint32_t slot, gen;
    if (!decode(h, &slot, &gen))
        return NULL;
    emu_ctx *c = NULL;
    pthread_mutex_lock(&g_reg_lock);
    if (g_reg[slot] && g_reg_gen[slot] == gen && g_reg[slot]->handle == h) {
        c = g_reg[slot];
        atomic_fetch_add(&c->refs, 1);
    }
    pthread_mutex_unlock(&g_reg_lock);
    return c;
}

/* Destructor hooks: the layers above this one attach state to a context (the context layer
   its buffers and model, custom operators their callbacks, outputs_get its buffers, a
   matmul its state) and add a hook that frees it; the last reference runs them, last added
   first, so the context layer's (the first) frees the context itself. */
void emu_ctx_on_free(emu_ctx *c, void (*fn)(emu_ctx *c))
{
    for (uint32_t i = 0; i < c->n_dtor; i++)
        if (c->dtor[i] == fn)
            return;
    if (c->n_dtor < EMU_CTX_DTORS)
        c->dtor[c->n_dtor++] = fn;
}

void emu_ctx_put(emu_ctx *c)
{
    if (!c || atomic_fetch_sub(&c->refs, 1) != 1)
        return;
    for (uint32_t i = c->n_dtor; i-- > 0;)
        c->dtor[i](c);   /* dtor[0] frees c: nothing reads it after */
}

int emu_ctx_unregister(rknn_context h, emu_ctx **out)
{
    uint32_t slot, gen;
    *out = NULL;
    if (!decode(h, &slot, &gen))
        return RKNN_ERR_CTX_INVALID;
    int rc = RKNN_ERR_CTX_INVALID;
    pthread_mutex_lock(&g_reg_lock);
    if (g_reg[slot] && g_reg_gen[slot] == gen && g_reg[slot]->handle == h) {
        *out = g_reg[slot];
        g_reg[slot] = NULL;
        rc = RKNN_SUCC;
    }
    pthread_mutex_unlock(&g_reg_lock);
    if (rc == RKNN_SUCC)
        EMU_CTR_ADD(live_contexts, -1);
    return rc;
}

/* A function the chip does not have (Table 3-1), refused in the words and with the status
   of the board: the mini runtime of RV1106/RV1103 (and RK2118) says "context config
   invalid!" to the general API and "not supported in mini runtime!" to the rest; a
   single-core NPU answers rknn_set_core_mask with RKNN_ERR_TARGET_PLATFORM_UNMATCH. */
int emu_refuse_func(const emu_platform *p, const char *func)
{
    if (p->family == EMU_FAM_RV1106 || p->family == EMU_FAM_RK2118) {
        if (strcmp(func, "rknn_inputs_set") == 0 || strcmp(func, "rknn_outputs_get") == 0 ||
            strcmp(func, "rknn_outputs_release") == 0) {
            /* -5, as librknnmrt 2.3.2 answers (docs/abi-notes.md, "The vendor runtimes") */
            EMU_ERR(func, "context config invalid!");
            return RKNN_ERR_PARAM_INVALID;
        }
        EMU_ERR(NULL, "%s not supported in mini runtime!", func);
        return RKNN_ERR_FAIL;
    }
    if (strcmp(func, "rknn_set_core_mask") == 0) {
        EMU_ERR(func, "%s has one NPU core: core masks are not supported", p->name);
        return RKNN_ERR_TARGET_PLATFORM_UNMATCH;
    }
    EMU_ERR(func, "not supported on %s", p->name);
    return RKNN_ERR_FAIL;
}

/* The context whose callbacks (custom operators) this thread is running: a call on it from
   such a callback would wait for the lock its own run holds. */
static _Thread_local emu_ctx *tl_calling;

emu_ctx *emu_ctx_set_calling(emu_ctx *c)
{
    emu_ctx *prev = tl_calling;
    tl_calling = c;
    return prev;
}

emu_ctx *emu_ctx_calling(void) { return tl_calling; }

int emu_ctx_enter(rknn_context h, const char *func, emu_ctx **out)
{
    emu_ctx *c = emu_ctx_get(h);
    *out = NULL;
    if (!c) {
        EMU_ERR(func, "invalid context 0x%llx (never created, or destroyed)",
                (unsigned long long)h);
        return RKNN_ERR_CTX_INVALID;
    }
    int mm_func = strncmp(func, "rknn_matmul_", 12) == 0;
    if (mm_func != (c->mm != NULL)) {
        EMU_ERR(func, "context 0x%llx is %s context", (unsigned long long)h,
                c->mm ? "a matmul" : "not a matmul");
        emu_ctx_put(c);
        return RKNN_ERR_CTX_INVALID;
    }
    if (!emu_platform_supports_func(c->plat, func)) {
        int rc = emu_refuse_func(c->plat, func);
        emu_ctx_put(c);
        return rc;
    }
    if (tl_calling == c) {
        /* a custom-op callback calling back into its own context, which is locked by the
           call running the callback: an error instead of a self-deadlock */
        EMU_ERR(func, "called from a custom-op callback of context 0x%llx, which is busy",
                (unsigned long long)h);
        emu_ctx_put(c);
        return RKNN_ERR_FAIL;
    }
    pthread_mutex_lock(&c->lock);
    *out = c;
    return RKNN_SUCC;
}

void emu_ctx_leave(emu_ctx *c)
{
    if (!c)
        return;
    pthread_mutex_unlock(&c->lock);
    emu_ctx_put(c);
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
