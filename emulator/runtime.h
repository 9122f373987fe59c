/*
 * rknnx emulator, runtime half: internal declarations shared by its files.
 *
 * The runtime half implements every exported rknn_* function over emu_model.h, in layers,
 * bottom first: a file uses functions of the files listed before it (and of the model
 * half), never of a file listed after it.  Where a lower file must reach upper work it
 * calls a hook the upper file set: a context's destructor hooks (emu_ctx_on_free), the
 * kinds of model rknn_init loads (emu_kind_add).  tests/package/test_emulator_layers.py
 * reads this list and holds the sources to it.
 *   runtime_core.c      logging, counters, controls (rknn_emu_*), error injection, chip
 *                       personalities, the simulated NPU cores, the handle registry of
 *                       contexts, its entry checks and the destructor hooks
 *   runtime_layout.c    tensor attributes (normal / native / NHWC native) from the layout
 *                       rules, buffer layouts, the element conversions between user and
 *                       model forms, the bytes the NPU reads for an input
 *   runtime_quirks.c    the librknnrt version a context plays, and its crashes
 *   runtime_answers.c   the answers table of a model and its one reader of attribute
 *                       queries; an emulator model's table from the layout rules
 *   runtime_npu.c       a context's tensors at its current shape and as the NPU sees them
 *                       (native views, bound layouts), rknn_emu_read_npu_input / set_npu_output
 *   runtime_mem.c       the emulated DMA memory (memfd, phys space, cache emulation),
 *                       create/destroy mem, set_io/weight/internal_mem, mem_sync
 *   runtime_context.c   rknn_init (the kinds of model) / dup / destroy / core masks / query
 *   runtime_custom.c    custom operators (registration, callbacks, built-in fallbacks)
 *   runtime_io.c        inputs_set, run, wait, outputs_get/release, input shapes
 *   runtime_matmul.c    the matmul API
 *   standin.c           a vendor .rknn file as a kind of model: its stand-in model and the
 *                       answers of the vendor runtime played (docs/standin.md)
 *
 * Global mutable state is limited to: the handle registries (mutex-guarded), the counters
 * (atomics), the controls and the injection table (mutex-guarded), and the kinds of model
 * (added by constructors while the library loads).  Everything else hangs off a context,
 * whose calls are serialized by its own mutex.  No global lock is held while a model runs
 * or data is converted.
 */
#ifndef RKNNX_EMU_RUNTIME_H
#define RKNNX_EMU_RUNTIME_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "emu_model.h"
#include "rknn_api.h"
#include "rknn_custom_op.h"
#include "rknn_emu.h"
#include "rknn_matmul_api.h"

#define EMU_VERSION_STRING "0.1.0"
/* The librknnrt version the library plays.  The default build is a 2.x runtime as strict
   as the boards' (docs/abi-notes.md, "Board facts"); built with EMU_RUNTIME_1_5 it is
   librknnrt 1.5.2: the functions that version lacks are not exported (exports-1.5.map),
   its version strings and its "Information:" log wording (runtimes before 1.6.0). */
#ifdef EMU_RUNTIME_1_5
#define EMU_API_VERSION    "1.5.2"
#define EMU_DRV_VERSION    "0.8.2"
#define EMU_LOG_COLONS     1
#else
#define EMU_API_VERSION    "2.5.0"
#define EMU_DRV_VERSION    "0.9.8"
#define EMU_LOG_COLONS     0
#endif
/* The emulator's identity inside the parentheses of RKNN_QUERY_SDK_VERSION, where the
   vendor writes "<hash>@<ISO time>": no dots, since clients split the version string on
   "." and expect exactly "X.Y.Z" before the first space. */
#define EMU_VERSION_TAG    "rknnx-emulator-v0-1-0@2026-12-01T00:00:00"

/* ---- logging ------------------------------------------------------------------------- */
enum { EMU_LOG_E = 0, EMU_LOG_W = 1, EMU_LOG_I = 2, EMU_LOG_D = 3, EMU_LOG_V = 4 };
void emu_log(int level, const char *func, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
#define EMU_ERR(fn, ...)  emu_log(EMU_LOG_E, fn, __VA_ARGS__)
#define EMU_WARN(fn, ...) emu_log(EMU_LOG_W, fn, __VA_ARGS__)
#define EMU_INFO(fn, ...) emu_log(EMU_LOG_I, fn, __VA_ARGS__)
void emu_log_refresh_env(void);  /* re-read RKNN_LOG_LEVEL unless set by the control */
int emu_log_enabled(int level);

/* ---- counters ------------------------------------------------------------------------ */
typedef struct emu_counters_atomic {
    atomic_llong live_contexts, live_mems, live_output_buffers;
    atomic_llong bytes_in, bytes_out, bytes_synced, syncs, runs;
    atomic_llong runs_in_flight, peak_runs_in_flight;
    atomic_llong contexts_created, mems_created;
    atomic_llong npu_ns, npu_cpu_ns;
} emu_counters_atomic;
extern emu_counters_atomic emu_ctr;
#define EMU_CTR_ADD(field, v) atomic_fetch_add_explicit(&emu_ctr.field, (long long)(v), memory_order_relaxed)

/* ---- error injection ------------------------------------------------------------------
 * Every exported function starts with EMU_INJECT(name): if an injection for that name is
 * armed and this is its Nth call, the function returns the injected status (NULL for the
 * create functions) without doing anything else. */
extern atomic_int emu_inject_armed;
int emu_inject_check(const char *func, int *status);
#define EMU_INJECT_INT(name)                                                    \
    do {                                                                        \
        int _st;                                                                \
        if (atomic_load_explicit(&emu_inject_armed, memory_order_relaxed) &&    \
            emu_inject_check(name, &_st)) {                                     \
            EMU_WARN(name, "injected failure: status %d", _st);                 \
            return _st;                                                         \
        }                                                                       \
    } while (0)
#define EMU_INJECT_PTR(name)                                                    \
    do {                                                                        \
        int _st;                                                                \
        if (atomic_load_explicit(&emu_inject_armed, memory_order_relaxed) &&    \
            emu_inject_check(name, &_st)) {                                     \
            EMU_WARN(name, "injected failure: returning NULL (status %d)", _st);\
            return NULL;                                                        \
        }                                                                       \
    } while (0)
#define EMU_INJECT_VOID(name)                                                   \
    do {                                                                        \
        int _st;                                                                \
        if (atomic_load_explicit(&emu_inject_armed, memory_order_relaxed) &&    \
            emu_inject_check(name, &_st)) {                                     \
            EMU_WARN(name, "injected failure (status %d)", _st);                \
            return;                                                             \
        }                                                                       \
    } while (0)

/* ---- chip personalities ---------------------------------------------------------------- */
typedef enum emu_family {
    EMU_FAM_RK356X = 0,   /* RV1126B / RK3562 / RK3566 / RK3568 column of Tables 3-1/3-2 */
    EMU_FAM_RK3588 = 1,   /* RK3576 / RK3588 */
    EMU_FAM_RV1106 = 2,   /* RV1106 / RV1103 / RV1103B / RV1106B */
    EMU_FAM_RK2118 = 3    /* RK2118 */
} emu_family;

typedef struct emu_platform {
    const char *name;         /* "RK3588" */
    emu_family family;        /* column of the support tables */
    const char *npu_group;    /* models compiled for one group run on every chip of it */
    uint32_t n_cores;
    uint32_t c2_int8;         /* NC1HWC2 C2 for 1-byte types */
    uint32_t c2_fp16;         /* ... for 2-byte types */
    uint32_t w_align;         /* NHWC input rows: width aligned up to this many pixels */
    uint32_t sram_size;       /* bytes of NPU-usable SRAM (0: none) */
} emu_platform;

const emu_platform *emu_platform_find(const char *name);   /* case-insensitive; NULL if unknown */
const emu_platform *emu_platform_current(int *from_env_bad); /* control, else env, else RK3588 */
/* The same, and *chosen 1 when the control or the environment chose it (0: RK3588 by default) */
const emu_platform *emu_platform_choice(int *from_env_bad, int *chosen);
/* The chip rknn_init plays for a model built for `built_for` (its target; NULL: none named):
   p, unless no chip was chosen and the model names a chip of another NPU group: then that
   chip, said once per chip in a "W rknnx:" line */
const emu_platform *emu_platform_for_model(const emu_platform *p, int chosen,
                                           const char *built_for);
uint32_t emu_platform_count(void);
const emu_platform *emu_platform_at(uint32_t i);
int emu_platform_supports_func(const emu_platform *p, const char *func);
int emu_platform_supports_query(const emu_platform *p, int cmd);
int emu_refuse_func(const emu_platform *p, const char *func);   /* logs; the status */
/* Whether core mask m is valid on p: AUTO, ALL, 0, 1, 0_1; plus 2 and 0_1_2 on 3 cores. */
int emu_core_mask_valid(const emu_platform *p, uint32_t m);
int64_t emu_npu_time_us(void);
/* The simulated NPU cores (runtime_core.c): take the cores a run of core mask `mask` uses on
 * p (AUTO: any one free core; a mask: every core in it), waiting while any is busy; give
 * back what emu_npu_cores_take returned. */
uint32_t emu_npu_cores_take(const emu_platform *p, uint32_t mask);
void emu_npu_cores_give(uint32_t cores);
int emu_npu_cpu_accounting(void);   /* rknn_emu_set_npu_cpu_accounting */
int emu_env_flag(const char *name);           /* env var set and not "0" */
int emu_npu_memory_short(uint64_t bytes);     /* RKNN_EMU_NPU_MEMORY below bytes */

/* ---- the librknnrt version a context plays (runtime_quirks.c) --------------------------
 * rknn_emu_set_runtime_version / RKNN_EMU_RUNTIME_VERSION: a context made meanwhile answers
 * SDK_VERSION with that version and has its crashes (an E line, then abort()). */
enum {
    EMU_QUIRK_MEM_SIZE_DUP = 1,        /* 1.4.0: MEM_SIZE asked, then a second dup */
    EMU_QUIRK_CUSTOM_DUP_DESTROY = 2,  /* 1.6.0: a dup copy destroyed, a run with custom ops */
    EMU_ANSWER_FLAT_HW = 4,            /* 1.4.0: a stand-in's NATIVE_OUTPUT_ATTR [N,C1,1,H*W,C2] */
    EMU_ANSWER_SCALAR_DEQ = 8          /* 1.4.0: outputs_get(want_float) by (q - zp) * scale only */
};
typedef struct emu_played {
    const char *version;      /* "1.6.0" */
    unsigned quirks;          /* EMU_QUIRK_* */
} emu_played;
const emu_played *emu_played_current(int *env_bad);   /* NULL: the library's own version */
struct emu_ctx;
const char *emu_api_version(const struct emu_ctx *c); /* the version c answers */
void emu_quirk_query(struct emu_ctx *c, int cmd);        /* c locked */
void emu_quirk_dup(struct emu_ctx *src, struct emu_ctx *copy);  /* src locked; may abort */
void emu_quirk_destroy(struct emu_ctx *c);               /* unregistered */
void emu_quirk_run(struct emu_ctx *c);                   /* c locked; may abort */

/* ---- memory ------------------------------------------------------------------------------
 * An emu_buf is one piece of emulated DRAM: its CPU view (a shared mapping of a memfd or of
 * the user's fd; all CPU mappings of one file see the same pages, as CPU caches are shared)
 * and, when cacheable, a separate device copy that only rknn_mem_sync and the run's
 * implicit clean/invalidate move data into or out of.  Bufs are found by file identity
 * (st_dev, st_ino), so re-importing the fd of a runtime allocation shares its device copy,
 * and by emulated physical address. */
typedef struct emu_buf {
    struct emu_buf *next;
    long refs;                /* guarded by the mem registry lock */
    dev_t dev;
    ino_t ino;
    uint64_t size;            /* bytes of the file / allocation */
    int memfd;                /* runtime-owned fd (-1 for foreign files) */
    uint8_t *cpu_base;        /* runtime-owned mapping of the whole file, or NULL */
    uint8_t *dev_copy;        /* device view when non-coherent; NULL when coherent */
    uint64_t phys;            /* emulated physical base (0: none) */
    int sram;                 /* counted against the chip's SRAM */
    uint32_t sram_bytes;
} emu_buf;

#define EMU_MEM_MAGIC 0x4d454d58u  /* "XMEM" */
#define EMU_DMA_ALIGN 16u          /* weight / internal memory the graph computes in */

typedef struct emu_mem {
    rknn_tensor_mem pub;      /* what the user sees; first member */
    uint32_t magic;
    long refs;                /* registry + bindings; guarded by the mem registry lock */
    int registered;           /* still live for the user (not destroyed) */
    emu_buf *buf;             /* NULL for a mem we could not back (never stored) */
    uint8_t *cpu;             /* CPU view of the data (virt_addr + offset) */
    uint8_t *dev;             /* device view of the same data */
    uint64_t size;            /* data bytes */
    void *own_map;            /* a mapping this mem created (munmap at free) */
    size_t own_map_len;
    rknn_context owner;       /* creating context (0: ALLOC_NO_CONTEXT) */
    int no_context;
} emu_mem;

emu_mem *emu_mem_get(rknn_tensor_mem *pub);   /* live mem + reference, or NULL */
emu_mem *emu_mem_ref(emu_mem *m);
void emu_mem_put(emu_mem *m);
int emu_mem_coherent(const emu_mem *m);
void emu_mem_sync_range(emu_mem *m, uint64_t off, uint64_t len, int to_device);
/* Runtime-internal DMA allocation used for DEVICE_MEM_INFO (registered like a user mem). */
emu_mem *emu_mem_alloc_internal(uint64_t size, int cacheable, rknn_context owner, int no_ctx,
                                int try_sram, const emu_platform *plat);
void emu_mem_free_internal(emu_mem *m);
int emu_mem_alive(emu_mem *m);                 /* not yet rknn_destroy_mem'd by the user */
uint32_t emu_sram_free(const emu_platform *p);

/* ---- layouts ------------------------------------------------------------------------------
 * A buffer layout says where element (n, c, h, w) of a 4-D tensor lives, in elements:
 *     n*sN + (c / C2)*sC1 + (c % C2)*sC2 + h*sH + w*sW
 * (C2 >= C for unblocked layouts).  Non-4-D tensors are flat in the model's order. */
typedef struct emu_layout {
    rknn_tensor_type type;
    int is4d;
    uint32_t N, C, H, W;      /* logical sizes */
    uint32_t C2;
    uint64_t sN, sC1, sC2, sH, sW;
    uint64_t n_elems;         /* logical elements */
    uint64_t span;            /* elements from the first to past the last addressed one */
    uint32_t deq_c2;          /* outputs: the C2 of the model type's native form, which picks
                                 the vendor's vector or scalar dequantization per element
                                 (emu_convert); 0: scalar everywhere */
} emu_layout;

size_t emu_type_size(rknn_tensor_type t);    /* 0 for unsupported (INT4, ...) */
uint32_t emu_c2(const emu_platform *p, rknn_tensor_type t);  /* 0: no NC1HWC2 form */
/* NHWC row alignment in pixels of d's type: its C2, else (and on the mini runtime's chips)
   the chip's w_align */
uint32_t emu_w_align(const emu_platform *p, const emu_io_desc *d);
int emu_desc_is_image(uint32_t n_dims, rknn_tensor_format fmt);
void emu_nchw_of(const uint32_t *dims, rknn_tensor_format fmt, uint32_t *N, uint32_t *C, uint32_t *H,
                 uint32_t *W);

enum { EMU_ATTR_NORMAL = 0, EMU_ATTR_NATIVE = 1, EMU_ATTR_NATIVE_NHWC = 2 };
/* Fill attr for input (is_out = 0) or output idx at shape set `set`. */
void emu_fill_attr(const emu_platform *p, const emu_io_desc *d, const uint32_t *dims, int is_out,
                   int kind, uint32_t idx, rknn_tensor_attr *attr);

/* Layout of the model's packed buffer at dims. */
void emu_layout_model(const emu_io_desc *d, const uint32_t *dims, emu_layout *l);
/* Layout of a user buffer of type t and format fmt for the tensor (d, dims).
 * zero_copy: NHWC inputs get the row stride (emu_w_align); h_stride (0 = H) pads batches.
 * out_c: for an NHWC output, the channels per pixel of the bound attribute's dims (0: C);
 * in the model type they pad C to C2 when out_c is align(C, C2).  Returns 0 or a status. */
int emu_layout_user(const emu_platform *p, const emu_io_desc *d, const uint32_t *dims, int is_out,
                    int zero_copy, rknn_tensor_type t, rknn_tensor_format fmt, int pass_through,
                    uint32_t h_stride, uint32_t out_c, emu_layout *l);
uint64_t emu_layout_bytes(const emu_layout *l);

/* Convert src (layout ls) into dst (layout ld), both describing the same logical tensor.
 * to_model: values are real numbers normalised with mean/std then quantized for the model;
 * raw: a type-preserving copy (pass_through); otherwise model -> user: dequantized when the
 * user type differs from the model type. */
enum { EMU_CONV_RAW = 0, EMU_CONV_TO_MODEL = 1, EMU_CONV_FROM_MODEL = 2 };
void emu_convert(const emu_io_desc *d, int mode, const void *src, const emu_layout *ls, void *dst,
                 const emu_layout *ld);
/* Layout of a buffer in the native form na describes, for the tensor (d, dims). */
void emu_layout_native(const emu_io_desc *d, const uint32_t *dims, const rknn_tensor_attr *na,
                       emu_layout *l);
/* Length of the NPU's buffer for an input whose native attribute is na: the vendor's
   named input buffer, size_with_stride (or size) rounded up to 16 bytes. */
uint32_t emu_npu_input_len(const rknn_tensor_attr *na);
/* What rknn_inputs_set leaves in the NPU's input buffer npu (L bytes, holding the previous
   bytes) for a user buffer (buf, size, t, fmt, pass_through) of input (d, dims) whose native
   attribute is na (the rules and their evidence: docs/abi-notes.md). */
void emu_npu_pack_input(const emu_platform *p, const emu_io_desc *d, const uint32_t *dims,
                        const rknn_tensor_attr *na, const void *buf, uint32_t size,
                        rknn_tensor_type t, rknn_tensor_format fmt, int pass_through,
                        uint8_t *npu, uint32_t L);

/* ---- the answers (runtime_answers.c) -----------------------------------------------------
 * What a model's contexts answer, filled once at rknn_init by the model's kind and shared
 * by its contexts: the attribute views of every tensor at every shape set, the figures
 * of MEM_SIZE, the log lines of rknn_init, and the rules (emu_rules) of the runtime
 * played.  The emulator's own models get theirs from the layout rules (emu_answers_own);
 * a vendor file gets the vendor runtime's, read from the file (standin.c, docs/standin.md).
 * The runtime half reads the table one way for every kind: what differs is data. */
typedef struct emu_attr_views {   /* one tensor's three views at one shape set */
    rknn_tensor_attr a[3];        /* EMU_ATTR_NORMAL, EMU_ATTR_NATIVE, EMU_ATTR_NATIVE_NHWC */
} emu_attr_views;

/* How the runtime played answers: the emulator's own rules (emu_rules_own), or a vendor
   runtime's (standin.c).  Every field names a behaviour; 0 is the emulator's own. */
typedef struct emu_rules {
    /* rknn_init's I lines: the library named, whether its version is the one played
       (emu_api_version) or always the library's own */
    const char *lib;
    int version_fixed;
    /* rknn_set_core_mask: a mask beyond 0..7, or ALL, falls back to AUTO with two lines, -1 */
    int core_mask_fallback;
    /* the general API: inputs_set takes fewer inputs (a warning) and skips entries whose
       index is out of range; rknn_run runs on what an input buffer holds when the input was
       never set; outputs_get warns on a count that is not the model's, takes none, and gives
       outputs before any run */
    int lenient_io;
    /* the zero-copy flow: a float16 input takes no pass_through, and rknn_run refuses one
       left without a mem (the mini runtime has no CPU path for float16 inputs) */
    int fp16_needs_mem;
    /* rknn_query */
    uint32_t short_ok;        /* bit cmd: a short buffer is taken (written up to its size) */
    int info_only_limited;    /* a COLLECT_MODEL_INFO_ONLY context answers MEM_SIZE and
                                 SDK_VERSION only */
    const char *perf_text;    /* PERF_DETAIL's fixed text, and PERF_RUN 0 before a run (NULL:
                                 the per-op table, both refused before a run) */
    int mem_planned;          /* MEM_SIZE: the planned weight / internal bytes only */
    int range_static_first;   /* INPUT_DYNAMIC_RANGE of a static model refused before the
                                 buffer and index checks */
    const char *range_index;  /* its index refusal: format of (index, input count) */
    int index_first;          /* attribute queries: the index checked before the shape */
    int index_by_dir;         /* ... and named INPUT_ATTR / OUTPUT_ATTR, not the command */
    const char *out_num;      /* ... "output_num" */
    int refuse_current_static;  /* CURRENT_* on a static model refused (-4 / -7) */
    int unchosen_status;      /* CURRENT_* before a shape is chosen */
    const char *unchosen;     /* format of (fn or NULL, command name) */
    int unchosen_prefixed;
    int unchosen_as_input;    /* CURRENT_OUTPUT_ATTR named CURRENT_INPUT_ATTR */
    int nhwc_dynamic_status;  /* NATIVE_NHWC_OUTPUT_ATTR of a dynamic model */
    const char *nhwc_dynamic;
    int nhwc_dynamic_prefixed;
    uint32_t max_native_warned;  /* bit cmd: a dynamic model's max native view warned */
    const char *max_native;   /* format of (NATIVE_INPUT/OUTPUT_ATTR, "input"/"output") */
    int nhwc_pad_warned;      /* NATIVE_NHWC_OUTPUT_ATTR warns when it asks for padding */
    int plain_follows;        /* plain views follow the chosen shape (else the largest) */
    int native_output_follows;  /* NATIVE_OUTPUT_ATTR follows the chosen shape */
    int native_follows_uint8; /* an int8 NHWC input set from UINT8 reports UINT8 natively */
    int max_until_chosen;     /* the NPU's native view is the largest until a shape is set */
    int played_native;        /* the version played reshapes NATIVE_OUTPUT_ATTR (1.4.0) */
    int int16_type10;         /* INPUT_ATTR / OUTPUT_ATTR of an INT16 tensor report type 10
                                 (1.5.2 knows no INT16) */
} emu_rules;

typedef struct emu_answers {
    const emu_rules *rules;
    uint32_t queries;         /* bit cmd: the command is answered (Table 3-2) */
    int neg_cmd_range;        /* a negative command is out of range (-5), not unsupported */
    uint32_t n_in, n_out;
    uint32_t n_sets;          /* 0: static */
    emu_attr_views *sets;     /* max(1, n_sets) rows of n_in inputs then n_out outputs */
    emu_attr_views *maxv;     /* dynamic: per tensor, each view at its largest shape */
    uint32_t *ranges;         /* dynamic: n_sets x n_in x RKNN_MAX_DIMS input dims */
    uint64_t weight_size, internal_size;
    uint32_t n_custom;        /* custom operator types a run needs registered (at most 16) */
    char custom[16][RKNN_MAX_NAME_LEN];
    uint32_t unknown;         /* EMU_SD_UNKNOWN_* bits: what a vendor file did not give */
    uint32_t compiler_int;    /* a vendor file's compiler version MMmmpp (0: not known) */
    int32_t *user_type;       /* NULL, or per input then output 1 + the type INPUT_ATTR /
                                 OUTPUT_ATTR report where it is not the tensor's (0: the
                                 tensor's; a container-1 file's user types) */
    char model_info[1024];    /* the values of rknn_init's "RKNN Model Information" line
                                 ("": no such line) */
} emu_answers;

extern const emu_rules emu_rules_own;
emu_answers *emu_answers_new(uint32_t n_in, uint32_t n_out, uint32_t n_sets);
void emu_answers_free(emu_answers *an);
/* The answers of an emulator model m on platform p, from the layout rules; NULL: no memory. */
emu_answers *emu_answers_own(const emu_platform *p, const emu_model *m);
/* The stored view (kind EMU_ATTR_*) of input / output idx at shape set `set` when current,
   else at the largest shape; NULL when idx or set is out of range. */
const rknn_tensor_attr *emu_answers_attr(const emu_answers *an, int is_out, uint32_t idx,
                                         int kind, int current, uint32_t set);

/* ---- contexts ------------------------------------------------------------------------------ */
typedef struct emu_kind emu_kind;

typedef struct emu_shared {   /* a loaded model shared by dup'd / weight-sharing contexts */
    atomic_long refs;
    const emu_kind *kind;     /* the kind it was opened by: its run runs it */
    emu_model *model;
    emu_answers *answers;     /* what rknn_query and the calls answer for it */
    uint64_t *max_in_bytes;   /* per input: model-format bytes, max over shape sets */
    uint64_t *max_out_bytes;
} emu_shared;

/* A kind of model rknn_init can load: the emulator's own format (runtime_context.c), and
   besides it a vendor .rknn file (standin.c).  A kind adds itself with emu_kind_add from a
   constructor of its file, so that the context layer, which loads models, never names an
   upper file; and it brings the run of its models, so that rknn_run runs each model by its
   kind's function and the model half never runs another kind's model by name. */
struct emu_kind {
    const char *name;
    int (*sniff)(const void *bytes, size_t n);        /* 1: these bytes are of this kind
                                                         (NULL: the fallback, the own format) */
    /* the model and its answers for platform *p; else the runtime's status, having logged
       its lines.  With no chip chosen (chosen 0) a model of another chip's NPU group sets *p to
       its own chip (emu_platform_for_model) instead of being refused */
    int (*open)(const void *bytes, size_t n, const emu_platform **p, int chosen,
                emu_model **model, emu_answers **answers);
    emu_model_run_fn run;     /* runs a model open returned (emu_model.h) */
};

enum { EMU_FLOW_NONE = 0, EMU_FLOW_GENERAL = 1, EMU_FLOW_ZERO_COPY = 2 };

typedef struct emu_binding {
    emu_mem *mem;             /* reference held */
    rknn_tensor_attr attr;    /* as given to set_io_mem */
} emu_binding;

typedef struct emu_custom_reg {
    rknn_custom_op op;
    rknn_custom_op_context op_ctx;
} emu_custom_reg;

typedef struct emu_node_state {  /* per custom node: the context handed to its callbacks */
    int reg;                     /* index into ctx->customs, -1 if none */
    int inited;                  /* init ran (or there is none): destroy is due */
    int builtin;                 /* init returned RKNN_WARNING_SKIP_CUSTOM_OP_COMPUTE: the
                                    runtime's own implementation of op_type runs instead */
    rknn_custom_op_context op_ctx;
} emu_node_state;

typedef struct emu_out_buf {  /* runtime-allocated outputs_get buffer */
    struct emu_out_buf *next;
    void *ptr;
} emu_out_buf;

#define EMU_CTX_DTORS 4

typedef struct emu_ctx {
    rknn_context handle;
    atomic_long refs;
    pthread_mutex_t lock;     /* serializes calls on this context */
    const emu_platform *plat;
    uint32_t flags;
    emu_shared *shared;       /* the model (ref held) */
    emu_model *m;             /* == shared->model */
    emu_shared *weights_from; /* SHARE_WEIGHT_MEM: the context whose weights we use (ref) */
    uint32_t n_in, n_out;
    uint32_t shape_set;
    int shapes_chosen;        /* rknn_set_input_shape(s) succeeded: CURRENT_* answer */
    uint32_t core_mask;
    int batch_core_num;
    int flow;
    /* general flow */
    uint8_t **in_buf;         /* model-format input staging, max size over shape sets */
    int *in_set;
    uint8_t **out_buf;        /* latest results */
    uint8_t **out_prev;       /* async: the previous frame's results */
    uint32_t out_set;         /* shape set of out_buf / out_prev */
    uint32_t prev_set;
    uint64_t frame, prev_frame;
    int have_prev;
    emu_out_buf *out_allocs;
    /* zero-copy */
    emu_binding *in_bind, *out_bind;
    emu_mem *weight_mem, *internal_mem;
    int owns_weights;         /* counted in total_dma_allocated_size */
    uint8_t *internal;        /* runtime-owned scratch (when not outside) */
    uint64_t internal_size;
    emu_mem *model_mem;       /* DEVICE_MEM_INFO buffer (RV1106 / RK2118 family) */
    uint64_t model_bytes;
    /* perf */
    int64_t last_run_us;
    int has_run;
    int64_t *op_time;
    char *perf_str;
    uint64_t perf_len;
    /* custom ops */
    emu_custom_reg *customs;
    uint32_t n_customs;
    emu_node_state *nodes;    /* n_ops entries, allocated at the first registration */
    struct emu_mm *mm;        /* a matmul context (no model): runtime_matmul.c */
    /* rknn_emu_set_npu_output: per output, NPU-side bytes that replace the computed ones
       from the next run on (NULL: none); runtime_npu.c */
    uint8_t **npu_out;
    uint32_t *npu_out_len;
    /* per input, 1 + the type of its last rknn_inputs_set (0: none) */
    int *in_type;
    /* destructor hooks (emu_ctx_on_free), run last added first when the last reference
       goes; the first, the context layer's, frees the context */
    void (*dtor[EMU_CTX_DTORS])(struct emu_ctx *c);
    uint32_t n_dtor;
    /* per input, the bytes rknn_inputs_set left in the NPU's input buffer, as the vendor
       runtime leaves them (emu_npu_pack_input; NULL until the first inputs_set) */
    uint8_t **npu_in;
    uint32_t *npu_in_len;
    /* the librknnrt version played (NULL: the library's own) and its quirks' state */
    const emu_played *played;
    rknn_context dup_src;     /* rknn_dup_context: the context copied (0: rknn_init) */
    int mem_size_asked;       /* 1.4.0: RKNN_QUERY_MEM_SIZE was asked */
    uint32_t dups_since_mem_size;
    atomic_int copy_destroyed; /* 1.6.0: a rknn_dup_context copy of it was destroyed */
} emu_ctx;

/* ---- the functions on a context, by file, bottom up --------------------------------------
 * runtime_core.c: the registry, its entry checks, the destructor hooks */
/* Registry: look up a live context and take a reference (NULL if invalid / destroyed);
   the last put runs the context's destructor hooks, which free it. */
emu_ctx *emu_ctx_get(rknn_context h);
void emu_ctx_put(emu_ctx *c);
int emu_ctx_register(emu_ctx *c);             /* assigns c->handle */
int emu_ctx_unregister(rknn_context h, emu_ctx **out);  /* removes; returns the registry's ref */
/* Add a destructor hook to c (once: a hook already there is not added again).  A layer that
   attaches state to a context adds the hook that frees it, so that no lower layer names an
   upper one; at most EMU_CTX_DTORS (the context layer, custom operators, outputs_get's
   buffers, a matmul). */
void emu_ctx_on_free(emu_ctx *c, void (*fn)(emu_ctx *c));
/* Convenience: get + lock, with logging; returns status. */
int emu_ctx_enter(rknn_context h, const char *func, emu_ctx **out);
void emu_ctx_leave(emu_ctx *c);
/* The context whose custom-op callbacks this thread is running (NULL when none), which
   emu_ctx_enter refuses (the lock is held by the run); set returns the previous value so
   nested runs restore it. */
emu_ctx *emu_ctx_set_calling(emu_ctx *c);
emu_ctx *emu_ctx_calling(void);
int emu_ctx_check_flow(emu_ctx *c, int flow, const char *func);

/* runtime_answers.c: reading the answers (the table: "the answers" above) */
const char *emu_query_name(int cmd);             /* "RKNN_QUERY_INPUT_ATTR" */
/* An attribute query (RKNN_QUERY_*_ATTR) of c, checks, words and statuses as the answers'
   rules say; c locked. */
int emu_answers_query_attr(emu_ctx *c, int cmd, rknn_tensor_attr *a);
/* NATIVE_OUTPUT_ATTR's view `a` of output idx as the context's played version answers it,
   where the rules say the version reshapes it (1.4.0: H and W flattened). */
void emu_answers_played_native(const emu_ctx *c, uint32_t idx, int cur, rknn_tensor_attr *a);

/* runtime_npu.c: a context's tensors at its current shape, and as the NPU sees them */
const uint32_t *emu_ctx_in_dims(const emu_ctx *c, uint32_t i);
const uint32_t *emu_ctx_out_dims(const emu_ctx *c, uint32_t o);
/* The native attribute of input / output idx at the context's current shape (the one
 * RKNN_QUERY_NATIVE_INPUT_ATTR / _OUTPUT_ATTR answer), without logging; 0 or a status. */
int emu_ctx_native_attr(emu_ctx *c, int is_out, uint32_t idx, rknn_tensor_attr *a);
/* Layout of a mem bound with rknn_set_io_mem(attr) to input / output idx at the current
 * shape: emu_layout_user's, but NC1HWC2 in the model type takes its blocks from the native
 * attribute (a vendor file's compiler chose them).  0 or a status. */
int emu_ctx_layout_bound(emu_ctx *c, int is_out, uint32_t idx, const rknn_tensor_attr *attr,
                         emu_layout *l);
/* rknn_run, after the graph: outputs with rknn_emu_set_npu_output bytes take them. */
void emu_npu_apply_outputs(emu_ctx *c);
void emu_npu_free(emu_ctx *c);

/* runtime_context.c: contexts and models */
emu_ctx *emu_ctx_alloc(const emu_platform *p, uint32_t flags);  /* bare context, refs 1 */
/* weights, internal memory and shape set of a run of c (custom_op / op_time left NULL);
   a base the context does not have yet (memory allocated outside, not set) is NULL */
void emu_ctx_base_env(const emu_ctx *c, emu_run_env *env);
void emu_kind_add(const emu_kind *k);

/* runtime_custom.c: the graph's callback for custom operators (rknn_run's env.custom_op) */
int emu_custom_hook(void *user, const emu_model *m, uint32_t op_index, const char *op_type,
                    emu_tensor_view *inputs, uint32_t n_inputs, emu_tensor_view *outputs,
                    uint32_t n_outputs);

#endif /* RKNNX_EMU_RUNTIME_H */
