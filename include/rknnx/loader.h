/*
 * rknnx: the table of librknnrt entry points, resolved at run time with dlsym.
 *
 * RKNNX_API_FUNCTIONS is the one list of every vendor entry point.  The table struct
 * takes each member's type from the prototype in rknn_api.h / rknn_matmul_api.h /
 * rknn_custom_op.h (through __typeof__), so a signature exists in exactly one place
 * and the C compiler checks every call the binding makes through the table.
 * A member is NULL when the loaded library does not export that symbol.
 */
#ifndef RKNNX_LOADER_H
#define RKNNX_LOADER_H

#include "rknn_api.h"
#include "rknn_matmul_api.h"
#include "rknn_custom_op.h"

#include <stddef.h>
#include <string.h>

#define RKNNX_API_FUNCTIONS(X)                  \
    X(rknn_init)                                \
    X(rknn_dup_context)                         \
    X(rknn_destroy)                             \
    X(rknn_query)                               \
    X(rknn_inputs_set)                          \
    X(rknn_set_batch_core_num)                  \
    X(rknn_set_core_mask)                       \
    X(rknn_run)                                 \
    X(rknn_wait)                                \
    X(rknn_outputs_get)                         \
    X(rknn_outputs_release)                     \
    X(rknn_create_mem_from_phys)                \
    X(rknn_create_mem_from_fd)                  \
    X(rknn_create_mem_from_mb_blk)              \
    X(rknn_create_mem)                          \
    X(rknn_create_mem2)                         \
    X(rknn_destroy_mem)                         \
    X(rknn_set_weight_mem)                      \
    X(rknn_set_internal_mem)                    \
    X(rknn_set_io_mem)                          \
    X(rknn_set_input_shape)                     \
    X(rknn_set_input_shapes)                    \
    X(rknn_mem_sync)                            \
    X(rknn_matmul_create)                       \
    X(rknn_matmul_create_dynamic_shape)         \
    X(rknn_matmul_set_io_mem)                   \
    X(rknn_matmul_set_core_mask)                \
    X(rknn_matmul_set_quant_params)             \
    X(rknn_matmul_get_quant_params)             \
    X(rknn_matmul_set_dynamic_shape)            \
    X(rknn_matmul_run)                          \
    X(rknn_matmul_destroy)                      \
    X(rknn_B_normal_layout_to_native_layout)    \
    X(rknn_register_custom_ops)                 \
    X(rknn_custom_op_get_op_attr)

typedef struct rknnx_api {
#define RKNNX_API_MEMBER(name) __typeof__(&name) name;
    RKNNX_API_FUNCTIONS(RKNNX_API_MEMBER)
#undef RKNNX_API_MEMBER
} rknnx_api;

/* The names, in table order; the table is an array of function pointers in that order. */
static const char *const rknnx_api_names[] = {
#define RKNNX_API_NAME(name) #name,
    RKNNX_API_FUNCTIONS(RKNNX_API_NAME)
#undef RKNNX_API_NAME
};

enum { RKNNX_API_COUNT = sizeof(rknnx_api_names) / sizeof(rknnx_api_names[0]) };

/* Slot access for the loader.  Every member is a function pointer of the same size,
   so slot i lives at offset i * sizeof(void (*)(void)); memcpy keeps the typed members
   and these untyped accesses free of strict-aliasing assumptions. */
typedef void (*rknnx_fnptr)(void);
_Static_assert(sizeof(rknnx_api) == RKNNX_API_COUNT * sizeof(rknnx_fnptr),
               "rknnx_api must be a dense array of function pointers");

static inline void rknnx_api_set(rknnx_api *api, int i, void *symbol)
{
    rknnx_fnptr fn;
    memcpy(&fn, &symbol, sizeof(fn));   /* dlsym's void* to a function pointer */
    memcpy((char *)api + (size_t)i * sizeof(fn), &fn, sizeof(fn));
}

static inline int rknnx_api_has(const rknnx_api *api, int i)
{
    rknnx_fnptr fn;
    memcpy(&fn, (const char *)api + (size_t)i * sizeof(fn), sizeof(fn));
    return fn != NULL;
}

#endif /* RKNNX_LOADER_H */
