/*
 * rknnx emulator, runtime half: a context standing in for a vendor .rknn file
 * (standin.c; docs/standin.md).
 *
 * rknn_init on a file that starts "RKNN" reads it with the project's reader (rknnfile/, API
 * include/rknnx/rknn_file.h) and builds two things: a stand-in model (emu_model.h,
 * model_standin.c), through which the general and zero-copy flows work as for the
 * emulator's own models, and this table of what the vendor runtime the library plays
 * answers for the file: every attribute query per shape set, the memory sizes, the
 * statuses and log lines of its queries.  The runtime played is the library's (1.5.2 for
 * librknnrt-1.5.2.so, else 2.x) and, on the RV1106 family and RK2118, the mini runtime.
 */
#ifndef RKNNX_EMU_STANDIN_H
#define RKNNX_EMU_STANDIN_H

#include <stddef.h>
#include <stdint.h>

#include "runtime.h"

enum emu_sd_mode {
    EMU_SD_1_5 = 0,   /* librknnrt 1.5.2 (glibc) */
    EMU_SD_2X = 1,    /* librknnrt 2.x on RK35xx, judged by 1.6.0 */
    EMU_SD_MINI = 2   /* librknnmrt, the RV1106 / RV1103 / RK2118 mini runtime */
};

/* one tensor's three attribute views at one shape set */
typedef struct emu_sd_attrs {
    rknn_tensor_attr a[3];    /* EMU_ATTR_NORMAL, EMU_ATTR_NATIVE, EMU_ATTR_NATIVE_NHWC */
} emu_sd_attrs;

typedef struct emu_standin {
    int mode;
    uint32_t n_in, n_out;
    uint32_t n_sets;          /* 0: static */
    emu_sd_attrs *sets;       /* max(1, n_sets) rows of n_in inputs then n_out outputs */
    emu_sd_attrs *maxv;       /* dynamic: the largest shape's views (n_in + n_out) */
    uint32_t *ranges;         /* dynamic: n_sets x n_in x RKNN_MAX_DIMS input dims */
    uint64_t weight_size, internal_size;
    int native_output_follows; /* glibc runtimes: NATIVE_OUTPUT follows the chosen shape */
    int native_follows;       /* glibc runtimes: native input views follow a UINT8 inputs_set */
    uint32_t n_custom;        /* the file's custom operator types (at most 16 kept) */
    char custom[16][RKNN_MAX_NAME_LEN];
    uint32_t unknown;         /* EMU_SD_UNKNOWN_* bits: what the file did not give */
    uint32_t compiler_int;    /* the file's compiler version MMmmpp (0: not known) */
    int32_t *user_type;       /* NULL, or per input then output 1 + the type INPUT_ATTR /
                                 OUTPUT_ATTR report where it is not the tensor's (container 1) */
    char file_info[1024];      /* the "RKNN Model Information" line's values */
} emu_standin;

#define EMU_SD_UNKNOWN_QNT 1u
#define EMU_SD_UNKNOWN_NATIVE 2u

/* 1 when the bytes are a vendor model (or an encrypted one). */
int emu_standin_sniff(const void *bytes, size_t n);
/* Read a vendor file for platform p: on success the stand-in model and table; else the
   vendor's status, having logged the vendor's lines. */
int emu_standin_open(const void *bytes, size_t n, const emu_platform *p, emu_standin **sd,
                     emu_model **model);
void emu_standin_free(emu_standin *sd);
/* The attribute answer of a stand-in context (kind EMU_ATTR_*) for the current or the
   largest shape; NULL when idx is out of range. */
const rknn_tensor_attr *emu_standin_attr(const emu_standin *sd, int is_out, uint32_t idx,
                                         int kind, int current, uint32_t set);
/* The native output attribute `a` (output idx) as the context's played version answers it
   (librknnrt 1.4.0: H and W flattened); unchanged for other versions. */
void emu_standin_played_native(const struct emu_ctx *c, uint32_t idx, int cur,
                               rknn_tensor_attr *a);
/* rknn_query of a stand-in context (c locked by the caller). */
int emu_standin_query(emu_ctx *c, int cmd, void *info, uint32_t size);
/* rknn_run of a stand-in context: RKNN_SUCC, or the vendor's refusal (a custom operator
   type of the file that no rknn_register_custom_ops gave) */
int emu_standin_check_run(const emu_ctx *c);
/* The init log lines of the vendor runtime (level I), once per rknn_init. */
void emu_standin_log_init(const emu_ctx *c);

#endif /* RKNNX_EMU_STANDIN_H */
