/*
 * rknnx emulator: emulator-only controls (not part of the vendor API).
 *
 * The rknnx CPU emulator (librknnrt.so built from emulator/) exports the vendor rknn_*
 * API plus these rknn_emu_* functions, for tests and benchmarks.  A vendor librknnrt has
 * none of them: resolve them with dlsym and treat their absence as "not the emulator".
 * python/rknnx/emulator/control.py wraps them with ctypes.
 *
 * Environment (read at every rknn_init unless overridden by the matching setter):
 *   RKNN_EMU_PLATFORM     chip personality, e.g. RK3588 (default), RK3576, RK3566, RV1106
 *   RKNN_EMU_NPU_TIME_US  simulated NPU time added to every rknn_run, default 0
 *   RKNN_EMU_RUNTIME_VERSION  the librknnrt version contexts play (1.4.0, 1.6.0), default
 *                         the library's own
 *   RKNN_LOG_LEVEL        0 errors, 1 +warnings (default), 2 +info, 3 +debug, 4-5 verbose;
 *                         messages go to stderr as "E RKNN: ...", "W RKNN: ...", ...
 *
 * All functions are thread-safe.
 */
#ifndef RKNNX_RKNN_EMU_H
#define RKNNX_RKNN_EMU_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Version of the emulator, e.g. "0.1.0". */
const char *rknn_emu_version(void);

/* ---- platform ------------------------------------------------------------------------- */
/* Choose the personality of contexts created from now on (existing contexts keep theirs).
 * name NULL or "" reverts to RKNN_EMU_PLATFORM / the default.  With neither this control nor
 * RKNN_EMU_PLATFORM, no chip is chosen: rknn_init plays the chip a model was built for (the
 * default, RK3588, for one that names none or a chip of RK3588's NPU) and says so once per
 * chip in a "W rknnx:" line; a chosen chip refuses a model of another NPU, as a board does.
 * Returns 0, or RKNN_ERR_PARAM_INVALID (-5) for an unknown name. */
int rknn_emu_set_platform(const char *name);
/* The personality the next rknn_init would use (static string); with no chip chosen, the
 * default (a model of another chip plays its own: rknn_emu_context_platform says which). */
const char *rknn_emu_get_platform(void);
/* Known personalities: names by index 0 .. count-1 (NULL past the end). */
int rknn_emu_platform_count(void);
const char *rknn_emu_platform_name(int index);
/* The personality a live context runs as (static string), or NULL for an invalid context. */
const char *rknn_emu_context_platform(uint64_t context);

/* ---- the librknnrt version played --------------------------------------------------------- */
/* Contexts created from now on play librknnrt `version` ("1.4.0" or "1.6.0"; a dup copy plays
 * its source's): they answer RKNN_QUERY_SDK_VERSION and their init lines with it, and have the
 * crashes of that version that a call pattern sets off (docs/abi-notes.md, "Runtime quirks"),
 * played as one E line and abort(), and 1.4.0 answers a vendor file's NATIVE_OUTPUT_ATTR with H
 * and W flattened ([N,C1,1,H*W,C2]).  Nothing else changes.  version "" plays the library's own
 * version; NULL reverts to env RKNN_EMU_RUNTIME_VERSION (the same words).  Returns 0, or
 * RKNN_ERR_PARAM_INVALID for another version. */
int rknn_emu_set_runtime_version(const char *version);
/* The version the next rknn_init plays (static string). */
const char *rknn_emu_get_runtime_version(void);

/* ---- simulated NPU time ----------------------------------------------------------------- */
/* Microseconds every rknn_run sleeps after computing, holding no global lock (runs on
 * different contexts overlap).  us < 0 reverts to RKNN_EMU_NPU_TIME_US. */
int rknn_emu_set_npu_time_us(int64_t us);
int64_t rknn_emu_get_npu_time_us(void);
/* Count the thread CPU time of the NPU-side work in the npu_cpu_ns counter (on != 0) or not
 * (the default: the CPU clock costs a system call per rknn_run).  Returns the previous state. */
int rknn_emu_set_npu_cpu_accounting(int on);

/* ---- log level -------------------------------------------------------------------------- */
/* level < 0 reverts to RKNN_LOG_LEVEL.  Returns 0. */
int rknn_emu_set_log_level(int level);
int rknn_emu_get_log_level(void);

/* ---- counters ----------------------------------------------------------------------------- */
typedef struct rknn_emu_counters {
    int64_t live_contexts;        /* rknn_init / dup done, not yet destroyed */
    int64_t live_mems;            /* rknn_create_mem* done, not yet rknn_destroy_mem'd */
    int64_t live_output_buffers;  /* outputs_get buffers (is_prealloc=0) not yet released */
    int64_t bytes_copied;         /* bytes_in + bytes_out + bytes_synced */
    int64_t bytes_in;             /* user -> device bytes written by rknn_inputs_set */
    int64_t bytes_out;            /* device -> user bytes written by rknn_outputs_get */
    int64_t bytes_synced;         /* bytes moved between CPU and device views of cacheable
                                     memory (rknn_mem_sync and the run's implicit syncs) */
    int64_t syncs;                /* cache syncs done (explicit and implicit) */
    int64_t runs;                 /* rknn_run calls that computed */
    int64_t runs_in_flight;       /* runs executing now */
    int64_t peak_runs_in_flight;  /* max of runs_in_flight since the last reset */
    int64_t contexts_created;     /* cumulative */
    int64_t mems_created;         /* cumulative */
    int64_t npu_ns;               /* cumulative wall ns of the NPU-side work of rknn_run: the
                                     zero-copy input and output conversions, the graph and
                                     the simulated NPU time (not the cache syncs) */
    int64_t npu_cpu_ns;           /* cumulative thread CPU ns of the same work, counted only
                                     while rknn_emu_set_npu_cpu_accounting(1) is on */
} rknn_emu_counters;

/* Copy the counters into *out; size must be sizeof(rknn_emu_counters) or smaller (a prefix
 * is copied).  Returns 0 or RKNN_ERR_PARAM_INVALID. */
int rknn_emu_get_counters(rknn_emu_counters *out, uint32_t size);
/* Zero the cumulative counters (bytes, syncs, runs, created) and set the peak to the
 * current number of runs in flight.  Live counts are not touched. */
void rknn_emu_reset_counters(void);
/* The same counters by name, for bindings that do not mirror the struct. */
int rknn_emu_counter_count(void);
const char *rknn_emu_counter_name(int index);         /* NULL past the end */
int64_t rknn_emu_counter_value(int index);           /* 0 past the end */

/* ---- error injection ----------------------------------------------------------------------- */
/* Make the nth call (1 = the next one) from now of the exported function `func` (e.g.
 * "rknn_run") return `status` without doing anything; pointer-returning functions return
 * NULL, rknn_custom_op_get_op_attr returns an empty attribute.  One-shot: the injection is
 * removed when it fires.  Up to 64 injections can be armed.  Returns 0, or
 * RKNN_ERR_PARAM_INVALID for an unknown name, nth == 0 or a full table. */
int rknn_emu_inject_error(const char *func, uint32_t nth, int status);
/* Remove every armed injection. */
void rknn_emu_clear_injections(void);
/* Number of armed injections. */
int rknn_emu_pending_injections(void);

/* ---- the NPU-side bytes ------------------------------------------------------------------- */
/* rknn_context of rknn_api.h (32 bits on 32-bit ARM, else 64): these two take it by value. */
#ifdef __arm__
typedef uint32_t rknn_emu_ctx_t;
#else
typedef uint64_t rknn_emu_ctx_t;
#endif
/* Copy the bytes the NPU would read for input `index` of context ctx now (after
 * rknn_inputs_set, or from a bound zero-copy input), in the layout and type the NPU takes
 * (RKNN_QUERY_NATIVE_INPUT_ATTR's; padding reads as zero).  Returns the byte count; when size
 * is too small (or buf NULL), the count needed, copying nothing; or a negative status:
 * RKNN_ERR_CTX_INVALID, RKNN_ERR_PARAM_INVALID (index), RKNN_ERR_INPUT_INVALID (not set). */
int rknn_emu_read_npu_input(rknn_emu_ctx_t ctx, uint32_t index, void *buf, uint32_t size);
/* From the next rknn_run on, output `index`'s NPU-side bytes are buf[0..size) instead of the
 * computed ones, in RKNN_QUERY_NATIVE_OUTPUT_ATTR's layout and type: size must be at least
 * that layout's bytes (a longer buffer, as a vendor runtime's planned one, is read as its
 * prefix).  size 0 clears it.  Returns 0 or a negative status. */
int rknn_emu_set_npu_output(rknn_emu_ctx_t ctx, uint32_t index, const void *buf, uint32_t size);

#ifdef __cplusplus
}
#endif

#endif /* RKNNX_RKNN_EMU_H */
