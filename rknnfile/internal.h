/*
 * rknnfile/internal.h: what the reader's C files share (not installed, not exported).
 *
 * The library (include/rknnx/rknn_file.h is its API) is five files:
 *   flatbuffer.c     the one bounds-checked FlatBuffer table reader (rknnx_file_fb_*)
 *   literal.c        the literal parser: JSON and the Python-literal subset (rknnx_file_lit_*)
 *   container.c      rknnx_file_read: the container framing, the JSON tail, the dispatch
 *   payload.c        the FlatBuffer payload of container versions 1-6
 *   payload_v1004.c  the payload of container version 0x1004 (RV1103/RV1106/RK2118)
 *   model.c          the common model: types, the views the file states, ownership
 * Every name outside a file carries the library's prefix, rknnx_file_; the objects are built
 * with hidden visibility, so no artifact that links them exports any.
 */
#ifndef RKNNX_RKNNFILE_INTERNAL_H
#define RKNNX_RKNNFILE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "rknn_file.h"

/* rknn_api.h numbering (repeated so that the library needs no other header). */
enum {
    RKNNX_FILE_T_FLOAT32 = 0, RKNNX_FILE_T_FLOAT16 = 1, RKNNX_FILE_T_INT8 = 2,
    RKNNX_FILE_T_UINT8 = 3, RKNNX_FILE_T_INT16 = 4, RKNNX_FILE_T_UINT16 = 5,
    RKNNX_FILE_T_INT32 = 6, RKNNX_FILE_T_UINT32 = 7, RKNNX_FILE_T_INT64 = 8,
    RKNNX_FILE_T_BOOL = 9, RKNNX_FILE_T_INT4 = 10, RKNNX_FILE_T_BFLOAT16 = 11
};
enum { RKNNX_FILE_F_NCHW = 0, RKNNX_FILE_F_NHWC = 1, RKNNX_FILE_F_NC1HWC2 = 2,
       RKNNX_FILE_F_UNDEFINED = 3 };
enum { RKNNX_FILE_Q_NONE = 0, RKNNX_FILE_Q_DFP = 1, RKNNX_FILE_Q_AFFINE = 2 };

/* ---- little-endian loads (no alignment assumed) ------------------------------------- */
static inline uint32_t rknnx_file_rd16(const uint8_t *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8);
}
static inline uint32_t rknnx_file_rd32(const uint8_t *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) |
           ((uint32_t)p[3] << 24);
}
static inline uint64_t rknnx_file_rd64(const uint8_t *p)
{
    return (uint64_t)rknnx_file_rd32(p) | ((uint64_t)rknnx_file_rd32(p + 4) << 32);
}
float rknnx_file_rdf32(const uint8_t *p);

/* ---- errors and strings (model.c) ------------------------------------------------------ */
/* Fill err (when not NULL) and return status. */
int rknnx_file_fail(rknnx_file_error *err, int status, const char *check, int64_t offset,
                    const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 5, 6)))
#endif
    ;
/* Copy a byte span into a NUL-terminated buffer; 0, or -1 when it does not fit. */
int rknnx_file_copy_span(char *dst, size_t cap, const uint8_t *s, size_t n);
/* Copy a NUL-terminated string, cut to fit cap. */
void rknnx_file_set_str(char *dst, size_t cap, const char *src);

/* ---- the FlatBuffer reader (flatbuffer.c) ----------------------------------------------
 * A table is an soffset to its vtable; the vtable lists each field's offset inside the
 * table; references (strings, vectors, sub-tables) are u32 offsets from where they are
 * stored.  Every offset is checked against the buffer before it is read; a failed check
 * fills err with check "flatbuffer.<Table>.<field>" and the offset in the file.  The
 * readers of the payloads walk fixed paths (Model -> graphs[0] -> tensors[k]), so nothing
 * recurses. */
typedef struct rknnx_file_fbuf {
    const uint8_t *b;
    size_t n;
    uint64_t file_off;          /* where b starts in the file, for error offsets */
    rknnx_file_error *err;
} rknnx_file_fbuf;

typedef struct rknnx_file_ftab {
    size_t pos;                 /* the table */
    size_t vt;                  /* its vtable */
    uint32_t vlen;              /* vtable bytes */
    uint32_t tlen;              /* table bytes (inline part) */
    const char *name;           /* "Model", "Graph", "Tensor": for error checks */
} rknnx_file_ftab;

/* Fail with check "flatbuffer.<table>[.<field>]" at buffer offset `at`. */
int rknnx_file_fb_fail(const rknnx_file_fbuf *f, const char *table, const char *field, size_t at,
                       const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 5, 6)))
#endif
    ;
/* The root table, after checking the 8 bytes of root offset and identifier `ident`. */
int rknnx_file_fb_root(const rknnx_file_fbuf *f, const char *ident, rknnx_file_ftab *root);
int rknnx_file_fb_table(const rknnx_file_fbuf *f, size_t pos, const char *name, const char *what,
                        rknnx_file_ftab *t);
/* The position of field `slot` (width bytes inline) in *at, or 0 when absent. */
int rknnx_file_fb_field(const rknnx_file_fbuf *f, const rknnx_file_ftab *t, unsigned slot,
                        size_t width, const char *field, size_t *at);
/* Scalars: *out is the stored value, or dflt when the field is absent; *present (may be
 * NULL) says which. */
int rknnx_file_fb_u8(const rknnx_file_fbuf *f, const rknnx_file_ftab *t, unsigned slot,
                     const char *field, int32_t dflt, int32_t *out, int *present);
int rknnx_file_fb_u32(const rknnx_file_fbuf *f, const rknnx_file_ftab *t, unsigned slot,
                      const char *field, uint32_t dflt, uint32_t *out, int *present);
/* Follow the reference in field `slot`; *target is 0 when the field is absent. */
int rknnx_file_fb_ref(const rknnx_file_fbuf *f, const rknnx_file_ftab *t, unsigned slot,
                      const char *field, size_t *target);
/* A string field: (s, len), not NUL-terminated; s is NULL when absent. */
int rknnx_file_fb_string(const rknnx_file_fbuf *f, const rknnx_file_ftab *t, unsigned slot,
                         const char *field, const uint8_t **s, size_t *len);
/* A string field copied NUL-terminated into dst (trailing NULs dropped); "" when absent; a
 * string longer than cap - 1 fails the read. */
int rknnx_file_fb_str(const rknnx_file_fbuf *f, const rknnx_file_ftab *t, unsigned slot,
                      const char *field, char *dst, size_t cap);
/* A vector field of elem-byte elements: *pos of element 0 and *count (0 when absent). */
int rknnx_file_fb_vector(const rknnx_file_fbuf *f, const rknnx_file_ftab *t, unsigned slot,
                         size_t elem, const char *field, size_t *pos, uint32_t *count);
/* Element k of a vector of tables at pos (a vector fb_vector checked). */
int rknnx_file_fb_vector_table(const rknnx_file_fbuf *f, size_t pos, uint32_t k,
                               const char *name, const char *field, rknnx_file_ftab *t);
/* A vector of u32 dims (at most RKNNX_FILE_MAX_DIMS) into dims / *n; *n 0 when absent. */
int rknnx_file_fb_dims(const rknnx_file_fbuf *f, const rknnx_file_ftab *t, unsigned slot,
                       const char *field, const char *tensor, uint32_t *n, uint32_t *dims);
/* A vector of u32 indices, each below `limit` (the Graph's input / output lists). */
int rknnx_file_fb_index_vector(const rknnx_file_fbuf *f, const rknnx_file_ftab *t,
                               unsigned slot, const char *field, uint32_t limit, size_t *pos,
                               uint32_t *count);

/* ---- the literal parser (literal.c) -----------------------------------------------------
 * Two dialects: JSON (the tail, the I/O JSON strings) and the Python-literal subset of a
 * FlatBuffer's generator text (single-quoted strings, True/False/None, tuples, inf/nan).
 * It builds a small tree in an array, with a depth limit and a node limit; nothing is
 * evaluated. */
enum { RKNNX_FILE_L_NULL, RKNNX_FILE_L_BOOL, RKNNX_FILE_L_INT, RKNNX_FILE_L_FLOAT,
       RKNNX_FILE_L_STR, RKNNX_FILE_L_ARR, RKNNX_FILE_L_OBJ };

typedef struct rknnx_file_lnode {
    uint8_t kind;
    uint8_t bval;
    int32_t first;              /* first child (arrays, objects), -1 */
    int32_t next;               /* next sibling, -1 */
    int32_t key;                /* for an object member: its key (a string node), -1 */
    uint32_t count;             /* children */
    int64_t ival;
    double fval;
    const char *s;              /* a string: the raw span between the quotes */
    uint32_t slen;
    char quote;
} rknnx_file_lnode;

typedef struct rknnx_file_ltree {
    rknnx_file_lnode *nodes;    /* the root is node 0 */
    uint32_t n, cap;
    const char *base;           /* the text */
    size_t len;
    int py;                     /* the Python-literal dialect */
    int64_t file_off;           /* where the text starts in the file, or -1 */
    const char *what;           /* "json", "generator", "input_json": the check prefix */
    rknnx_file_error *err;
} rknnx_file_ltree;

int rknnx_file_lit_parse(rknnx_file_ltree *t, const char *text, size_t len, int py,
                         const char *what, int64_t file_off, rknnx_file_error *err);
void rknnx_file_lit_free(rknnx_file_ltree *t);
/* Fail with check "<what>.<sub>" at text offset `at`. */
int rknnx_file_lit_fail(rknnx_file_ltree *t, size_t at, const char *sub, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
const rknnx_file_lnode *rknnx_file_lit_node(const rknnx_file_ltree *t, int32_t id);
/* Undo the escapes of a string node into dst; -1 when it is no string or does not fit. */
int rknnx_file_lit_str(const rknnx_file_ltree *t, const rknnx_file_lnode *nd, char *dst,
                       size_t cap);
int rknnx_file_lit_str_eq(const rknnx_file_ltree *t, const rknnx_file_lnode *nd, const char *s);
/* Member `key` of an object node, or NULL. */
const rknnx_file_lnode *rknnx_file_lit_get(const rknnx_file_ltree *t,
                                           const rknnx_file_lnode *obj, const char *key);
/* Element k of a list (or member k of an object), or NULL. */
const rknnx_file_lnode *rknnx_file_lit_at(const rknnx_file_ltree *t,
                                          const rknnx_file_lnode *arr, uint32_t k);
int rknnx_file_lit_int(const rknnx_file_lnode *nd, int64_t *v);
/* A list of non-negative ints fitting u32 (at most RKNNX_FILE_MAX_DIMS); -1 if not one. */
int rknnx_file_lit_dims(const rknnx_file_ltree *t, const rknnx_file_lnode *arr, uint32_t *n,
                        uint32_t *dims);
/* A list (or tuple) of 1 to cap numbers as floats; -1 if not one. */
int rknnx_file_lit_floats(const rknnx_file_ltree *t, const rknnx_file_lnode *arr, uint32_t cap,
                          uint32_t *n, float *v);

/* ---- the common model (model.c) ------------------------------------------------------- */
/* The FlatBuffer Tensor's dtype code (ONNX TensorProto numbering) as rknn_tensor_type. */
int32_t rknnx_file_type_of_code(int32_t code);
/* A dtype name ("int8", "float16", ...) as rknn_tensor_type, or RKNNX_FILE_UNKNOWN. */
int32_t rknnx_file_type_of_name(const char *s);
/* Product of n dims, saturated at UINT32_MAX + 1. */
uint64_t rknnx_file_prod(const uint32_t *d, uint32_t n);
/* The INPUT_ATTR / OUTPUT_ATTR view from t's logical shape: NHWC (dims permuted from NCHW)
 * when nhwc and the shape is 4-D, NCHW for another 4-D shape, UNDEFINED for other ranks;
 * n_elems and size from the dims and the type. */
void rknnx_file_set_attr_view(rknnx_file_tensor *t, int nhwc);
/* The NATIVE_*_ATTR view: n dims of fmt; native_size = their bytes, or `size` if not 0. */
void rknnx_file_set_native_view(rknnx_file_tensor *t, int32_t fmt, const uint32_t *dims,
                                uint32_t n, uint32_t size);
/* Give t n per-channel scales and zero points (copied; the model owns them); sets n_qnt,
 * scales, zps, and scale/zp to the first.  OK, or E_NOMEM with err filled. */
int rknnx_file_set_qnt(rknnx_file_tensor *t, uint32_t n, const float *scales,
                       const int32_t *zps, rknnx_file_error *err);
/* The model's chip from its NPU family and target platform. */
void rknnx_file_decide_chip(rknnx_file_model *m);

/* ---- the payloads ---------------------------------------------------------------------- */
/* Container versions 1-6 (payload.c): the FlatBuffer fills the model. */
int rknnx_file_read_payload(const uint8_t *payload, size_t size, uint64_t file_off,
                            rknnx_file_model *m, rknnx_file_error *err);
/* Container version 0x1004 (payload_v1004.c): after the JSON tail has filled names, shapes
 * and dtypes, the payload fills the rest and must agree with the tail. */
int rknnx_file_read_payload_v1004(const uint8_t *payload, size_t size, uint64_t file_off,
                                  rknnx_file_model *m, rknnx_file_error *err);

#endif /* RKNNX_RKNNFILE_INTERNAL_H */
