/*
 * rknnx emulator: the librknnrt version a context plays (rknn_emu_set_runtime_version, env
 * RKNN_EMU_RUNTIME_VERSION) and the crashes of that version that a client's call pattern
 * sets off (docs/abi-notes.md, "Runtime quirks").
 *
 * A context made while a version is played answers RKNN_QUERY_SDK_VERSION and its init
 * lines with that version, and a dup copy plays its source's.  Nothing else changes: the
 * functions exported, the statuses and the log wording stay the library's own.  What the
 * played version adds is its crashes, each seen on the vendor's library in plain C calls
 * (no rknnx) under the stand-in NPU driver,
 *
 *   1.6.0  once a rknn_dup_context copy of a context is destroyed, a rknn_run of the
 *          context with custom operators registered segfaults, whenever they were
 *          registered (before the copy, after it, after its destruction) and whether the
 *          copy ran or not (dual_residual_custom RK3588, the vendor's example);
 *   1.4.0  RKNN_QUERY_MEM_SIZE is asked on a context, then the context is copied twice:
 *          the second copy segfaults at its first use (inputs_set, set_io_mem; the rknpu2
 *          c28b080 multiple_input_demo RK3588); the emulator plays the crash at that
 *          second rknn_dup_context, earlier and never later.
 *
 * and two answers: 1.4.0 reports a vendor file's NC1HWC2 outputs (NATIVE_OUTPUT_ATTR) with H
 * and W flattened, [1,1,1,16384,16] for [1,8,128,128] (tk2_2c2d03d multiple_input_demo
 * RK3588, its recorded answer); the stand-in answers so for a context playing 1.4.0.  And
 * 1.4.0's rknn_outputs_get(want_float=1) dequantizes every int8 element by the scalar
 * formula (q - zp) * scale, where 1.5.2 and 1.6.0 take the vector one for whole groups
 * (tk2_2c2d03d multiple_input_demo RK3566: 16,384 pixels, every one scalar on 1.4.0;
 * docs/abi-notes.md, "NPU-side bytes"); a context playing 1.4.0 does so.
 *
 * The emulator plays such a crash as one E line naming it, then abort(): a client that sets
 * it off loses its process, as on the vendor runtime, with a signal a test can see in a
 * subprocess.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime.h"

static const emu_played g_played[] = {
    {"1.4.0", EMU_QUIRK_MEM_SIZE_DUP | EMU_ANSWER_FLAT_HW | EMU_ANSWER_SCALAR_DEQ},
    {"1.6.0", EMU_QUIRK_CUSTOM_DUP_DESTROY},
};
#define N_PLAYED (sizeof g_played / sizeof g_played[0])

static pthread_mutex_t g_played_lock = PTHREAD_MUTEX_INITIALIZER;
static const emu_played *g_played_override;   /* guarded by g_played_lock */
static int g_played_set;                      /* the control overrides the environment */

static const emu_played *played_find(const char *version)
{
    for (size_t i = 0; i < N_PLAYED; i++)
        if (strcmp(version, g_played[i].version) == 0)
            return &g_played[i];
    return NULL;
}

const emu_played *emu_played_current(int *env_bad)
{
    if (env_bad)
        *env_bad = 0;
    pthread_mutex_lock(&g_played_lock);
    int set = g_played_set;
    const emu_played *p = g_played_override;
    pthread_mutex_unlock(&g_played_lock);
    if (set)
        return p;
    const char *s = getenv("RKNN_EMU_RUNTIME_VERSION");
    if (!s || !*s)
        return NULL;
    p = played_find(s);
    if (!p && env_bad)
        *env_bad = 1;
    return p;
}

int rknn_emu_set_runtime_version(const char *version)
{
    const emu_played *p = NULL;
    if (version && *version && !(p = played_find(version))) {
        EMU_ERR("rknn_emu_set_runtime_version", "the emulator plays librknnrt 1.4.0 or 1.6.0 "
                "besides its own version; got '%s'", version);
        return RKNN_ERR_PARAM_INVALID;
    }
    pthread_mutex_lock(&g_played_lock);
    g_played_override = p;
    g_played_set = version != NULL;
    pthread_mutex_unlock(&g_played_lock);
    return RKNN_SUCC;
}

const char *rknn_emu_get_runtime_version(void)
{
    const emu_played *p = emu_played_current(NULL);
    return p ? p->version : EMU_API_VERSION;
}

const char *emu_api_version(const emu_ctx *c)
{
    return c && c->played ? c->played->version : EMU_API_VERSION;
}

static void crash(const emu_ctx *c, const char *fn, const char *what)
{
    /* always printed, whatever the log level: the process ends here */
    fprintf(stderr, "E RKNN: %s: emulated librknnrt %s crash: %s (the vendor's library "
            "segfaults here; rknn_emu_set_runtime_version)\n", fn, c->played->version, what);
    fflush(stderr);
    abort();
}

void emu_quirk_query(emu_ctx *c, int cmd)
{
    if (c->played && (c->played->quirks & EMU_QUIRK_MEM_SIZE_DUP) && cmd == RKNN_QUERY_MEM_SIZE)
        c->mem_size_asked = 1;
}

void emu_quirk_dup(emu_ctx *src, emu_ctx *copy)
{
    copy->played = src->played;
    copy->dup_src = src->handle;
    if (!src->played || !(src->played->quirks & EMU_QUIRK_MEM_SIZE_DUP) || !src->mem_size_asked)
        return;
    if (++src->dups_since_mem_size >= 2)
        crash(src, "rknn_dup_context", "a second copy of a context that was asked "
              "RKNN_QUERY_MEM_SIZE");
}

void emu_quirk_destroy(emu_ctx *c)
{
    if (!c->played || !(c->played->quirks & EMU_QUIRK_CUSTOM_DUP_DESTROY) || !c->dup_src)
        return;
    emu_ctx *src = emu_ctx_get(c->dup_src);
    if (src) {
        atomic_store(&src->copy_destroyed, 1);
        emu_ctx_put(src);
    }
}

void emu_quirk_run(emu_ctx *c)
{
    if (c->played && (c->played->quirks & EMU_QUIRK_CUSTOM_DUP_DESTROY) &&
        atomic_load(&c->copy_destroyed) && c->n_customs)
        crash(c, "rknn_run", "a run of a context with custom operators once a "
              "rknn_dup_context copy of it was destroyed");
}
