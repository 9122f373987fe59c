/*
 * rknn_file.c: the reader of vendor `.rknn` files (rknn_file.h; the format in
 * docs/rknn-file-format.md).
 *
 * Three small parsers, each bounds-checked against the bytes it was given:
 *   - a FlatBuffer table reader (fb_*): a table is a soffset to its vtable, the vtable lists
 *     each field's offset inside the table; references (strings, vectors, sub-tables) are
 *     u32 offsets from where they are stored.  Every offset is checked before it is read.
 *     The reader never recurses (Model -> graphs[0] -> tensors[k] is a fixed path), so its
 *     depth is bounded by construction.
 *   - a literal parser (lit_*) for two dialects: JSON (the tail, the I/O JSON strings) and
 *     the Python-literal subset of the FlatBuffer's `generator` text (single-quoted strings,
 *     True/False/None, tuples).  It builds a small tree in an array, with a depth limit and
 *     a node limit; nothing is evaluated.
 *   - the model builder, which turns those into rknnx_file_model and derives the views the
 *     runtime reports (the rules and their evidence are in docs/rknn-file-format.md).
 */
#include "rknn_file.h"

#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef RKNNX_FILE_HAVE_V1004
#include "rknn_file_v1004.h"
#endif

/* rknn_api.h numbering (kept here so this file needs no other header). */
enum {
    T_FLOAT32 = 0, T_FLOAT16 = 1, T_INT8 = 2, T_UINT8 = 3, T_INT16 = 4, T_UINT16 = 5,
    T_INT32 = 6, T_UINT32 = 7, T_INT64 = 8, T_BOOL = 9, T_INT4 = 10, T_BFLOAT16 = 11
};
enum { F_NCHW = 0, F_NHWC = 1, F_NC1HWC2 = 2, F_UNDEFINED = 3 };
enum { Q_NONE = 0, Q_DFP = 1, Q_AFFINE = 2 };

#define LIT_MAX_DEPTH 64
#define LIT_MAX_NODES (1u << 20)

/* ---- errors ---------------------------------------------------------------------------- */

static int fail(rknnx_file_error *err, int status, const char *check, int64_t offset,
                const char *fmt, ...)
{
    if (err) {
        va_list ap;
        err->status = status;
        snprintf(err->check, sizeof err->check, "%s", check);
        va_start(ap, fmt);
        vsnprintf(err->message, sizeof err->message, fmt, ap);
        va_end(ap);
        err->offset = offset;
    }
    return status;
}

const char *rknnx_file_status_name(int status)
{
    switch (status) {
    case RKNNX_FILE_OK: return "ok";
    case RKNNX_FILE_E_ARGUMENT: return "argument";
    case RKNNX_FILE_E_NOMEM: return "nomem";
    case RKNNX_FILE_E_ENCRYPTED: return "encrypted";
    case RKNNX_FILE_E_FORMAT: return "format";
    case RKNNX_FILE_E_UNSUPPORTED: return "unsupported";
    default: return "unknown";
    }
}

static uint32_t rd16(const uint8_t *p) { return (uint32_t)p[0] | ((uint32_t)p[1] << 8); }
static uint32_t rd32(const uint8_t *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) |
           ((uint32_t)p[3] << 24);
}
static uint64_t rd64(const uint8_t *p) { return (uint64_t)rd32(p) | ((uint64_t)rd32(p + 4) << 32); }
static float rdf32(const uint8_t *p)
{
    uint32_t u = rd32(p);
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* Copy a byte span into a NUL-terminated buffer; 0, or -1 when it does not fit. */
static int copy_span(char *dst, size_t cap, const uint8_t *s, size_t n)
{
    if (n >= cap) {
        return -1;
    }
    memcpy(dst, s, n);
    dst[n] = '\0';
    return 0;
}

/* Copy a NUL-terminated string, cut to fit cap. */
static void set_str(char *dst, size_t cap, const char *src)
{
    size_t n = strlen(src);
    if (n >= cap) {
        n = cap - 1;
    }
    memcpy(dst, src, n);
    dst[n] = '\0';
}

/* ---- FlatBuffers ---------------------------------------------------------------------- */

typedef struct fbuf {
    const uint8_t *b;
    size_t n;
    uint64_t file_off;  /* where b starts in the file, for error offsets */
    rknnx_file_error *err;
} fbuf;

typedef struct ftab {
    size_t pos;        /* the table */
    size_t vt;         /* its vtable */
    uint32_t vlen;     /* vtable bytes */
    uint32_t tlen;     /* table bytes (inline part) */
    const char *name;  /* "Model", "Graph", "Tensor": for error checks */
} ftab;

static int fb_fail(const fbuf *f, const char *table, const char *field, size_t at,
                   const char *fmt, ...)
{
    if (f->err) {
        va_list ap;
        char check[64];
        if (field) {
            snprintf(check, sizeof check, "flatbuffer.%s.%s", table, field);
        } else {
            snprintf(check, sizeof check, "flatbuffer.%s", table);
        }
        f->err->status = RKNNX_FILE_E_FORMAT;
        snprintf(f->err->check, sizeof f->err->check, "%s", check);
        va_start(ap, fmt);
        vsnprintf(f->err->message, sizeof f->err->message, fmt, ap);
        va_end(ap);
        f->err->offset = (int64_t)(f->file_off + at);
    }
    return RKNNX_FILE_E_FORMAT;
}

static int fb_table(const fbuf *f, size_t pos, const char *name, const char *what, ftab *t)
{
    int64_t vt;
    if (pos > f->n || f->n - pos < 4) {
        return fb_fail(f, name, what, pos, "the %s table at payload offset %zu lies outside "
                       "the %zu-byte payload", name, pos, f->n);
    }
    vt = (int64_t)pos - (int64_t)(int32_t)rd32(f->b + pos);
    if (vt < 0 || (uint64_t)vt > f->n || f->n - (size_t)vt < 4) {
        return fb_fail(f, name, what, pos, "the vtable of the %s table at payload offset %zu "
                       "points outside the payload (to %lld)", name, pos, (long long)vt);
    }
    t->pos = pos;
    t->vt = (size_t)vt;
    t->vlen = rd16(f->b + t->vt);
    t->tlen = rd16(f->b + t->vt + 2);
    t->name = name;
    if (t->vlen < 4 || (t->vlen & 1u) || f->n - t->vt < t->vlen) {
        return fb_fail(f, name, what, t->vt, "the vtable of the %s table has length %u, "
                       "not an even length of at least 4 inside the payload", name, t->vlen);
    }
    if (t->tlen < 4 || f->n - pos < t->tlen) {
        return fb_fail(f, name, what, pos, "the %s table claims %u bytes, beyond the payload",
                       name, t->tlen);
    }
    return RKNNX_FILE_OK;
}

/* The position of field `slot` (width bytes inline), or 0 when absent. */
static int fb_field(const fbuf *f, const ftab *t, unsigned slot, size_t width,
                    const char *field, size_t *at)
{
    uint32_t o;
    *at = 0;
    if (4u + 2u * slot + 2u > t->vlen) {
        return RKNNX_FILE_OK;
    }
    o = rd16(f->b + t->vt + 4 + 2 * slot);
    if (o == 0) {
        return RKNNX_FILE_OK;
    }
    if (o < 4 || o > t->tlen || t->tlen - o < width) {
        return fb_fail(f, t->name, field, t->pos, "field %s (slot %u) of the %s table has "
                       "offset %u, outside the table's %u bytes", field, slot, t->name, o,
                       t->tlen);
    }
    *at = t->pos + o;
    return RKNNX_FILE_OK;
}

static int fb_u8(const fbuf *f, const ftab *t, unsigned slot, const char *field, int32_t dflt,
                 int32_t *out)
{
    size_t at;
    int rc = fb_field(f, t, slot, 1, field, &at);
    *out = (rc == 0 && at) ? (int32_t)f->b[at] : dflt;
    return rc;
}

static int fb_u32(const fbuf *f, const ftab *t, unsigned slot, const char *field,
                  uint32_t dflt, uint32_t *out)
{
    size_t at;
    int rc = fb_field(f, t, slot, 4, field, &at);
    *out = (rc == 0 && at) ? rd32(f->b + at) : dflt;
    return rc;
}

/* Follow the reference in field `slot` to its target, checked to leave 4 bytes (a length or
 * an soffset); *target is 0 when the field is absent. */
static int fb_ref(const fbuf *f, const ftab *t, unsigned slot, const char *field,
                  size_t *target)
{
    size_t at;
    uint32_t off;
    int rc = fb_field(f, t, slot, 4, field, &at);
    *target = 0;
    if (rc || !at) {
        return rc;
    }
    off = rd32(f->b + at);
    if (off == 0 || off > f->n - at || f->n - at - off < 4) {
        return fb_fail(f, t->name, field, at, "field %s (slot %u) of the %s table refers "
                       "%u bytes ahead, outside the payload", field, slot, t->name, off);
    }
    *target = at + off;
    return RKNNX_FILE_OK;
}

/* A string field: (s, len), not NUL-terminated; s is NULL when absent. */
static int fb_string(const fbuf *f, const ftab *t, unsigned slot, const char *field,
                     const uint8_t **s, size_t *len)
{
    size_t target;
    uint32_t n;
    int rc = fb_ref(f, t, slot, field, &target);
    *s = NULL;
    *len = 0;
    if (rc || !target) {
        return rc;
    }
    n = rd32(f->b + target);
    if (n > f->n - target - 4) {
        return fb_fail(f, t->name, field, target, "string %s (slot %u) of the %s table has "
                       "length %u, beyond the payload", field, slot, t->name, n);
    }
    *s = f->b + target + 4;
    *len = n;
    return RKNNX_FILE_OK;
}

/* A vector field of elem-byte elements: *pos of element 0, *count; count 0 when absent. */
static int fb_vector(const fbuf *f, const ftab *t, unsigned slot, size_t elem,
                     const char *field, size_t *pos, uint32_t *count)
{
    size_t target;
    uint32_t n;
    int rc = fb_ref(f, t, slot, field, &target);
    *pos = 0;
    *count = 0;
    if (rc || !target) {
        return rc;
    }
    n = rd32(f->b + target);
    if (n > (f->n - target - 4) / elem) {
        return fb_fail(f, t->name, field, target, "vector %s (slot %u) of the %s table has "
                       "%u elements of %zu bytes, beyond the payload", field, slot, t->name,
                       n, elem);
    }
    *pos = target + 4;
    *count = n;
    return RKNNX_FILE_OK;
}

/* Element k of a vector of tables. */
static int fb_vector_table(const fbuf *f, size_t pos, uint32_t k, const char *name,
                           const char *field, ftab *t)
{
    size_t at = pos + 4u * (size_t)k;
    uint32_t off = rd32(f->b + at);
    if (off > f->n - at) {
        return fb_fail(f, name, field, at, "element %u of %s refers outside the payload",
                       k, field);
    }
    return fb_table(f, at + off, name, field, t);
}

/* ---- literals: JSON and the Python-literal subset --------------------------------------- */

enum { L_NULL, L_BOOL, L_INT, L_FLOAT, L_STR, L_ARR, L_OBJ };

typedef struct lnode {
    uint8_t kind;
    uint8_t bval;
    int32_t first;     /* first child (arrays, objects), -1 */
    int32_t next;      /* next sibling, -1 */
    int32_t key;       /* for an object member: its key (a L_STR node), -1 */
    uint32_t count;    /* children */
    int64_t ival;
    double fval;
    const char *s;     /* L_STR: the raw span between the quotes (escapes undone on copy) */
    uint32_t slen;
    char quote;
} lnode;

typedef struct ltree {
    lnode *nodes;
    uint32_t n, cap;
    const char *base;   /* the text */
    size_t len;
    int py;             /* the Python-literal dialect */
    int64_t file_off;   /* where the text starts in the file */
    const char *what;   /* "json", "generator", "io_json": the check prefix */
    rknnx_file_error *err;
} ltree;

typedef struct lpos {
    size_t i;
    int depth;
} lpos;

static int lit_fail(ltree *t, size_t at, const char *sub, const char *fmt, ...)
{
    if (t->err) {
        va_list ap;
        t->err->status = RKNNX_FILE_E_FORMAT;
        snprintf(t->err->check, sizeof t->err->check, "%s.%s", t->what, sub);
        va_start(ap, fmt);
        vsnprintf(t->err->message, sizeof t->err->message, fmt, ap);
        va_end(ap);
        t->err->offset = t->file_off >= 0 ? t->file_off + (int64_t)at : -1;
    }
    return RKNNX_FILE_E_FORMAT;
}

static int lit_new(ltree *t, uint8_t kind, int32_t *id)
{
    lnode *nd;
    if (t->n == t->cap) {
        uint32_t cap = t->cap ? t->cap * 2 : 64;
        lnode *p;
        if (cap > LIT_MAX_NODES) {
            return lit_fail(t, 0, "size", "more than %u values in the %s text",
                            LIT_MAX_NODES, t->what);
        }
        p = realloc(t->nodes, (size_t)cap * sizeof *p);
        if (!p) {
            return fail(t->err, RKNNX_FILE_E_NOMEM, "nomem", -1, "out of memory");
        }
        t->nodes = p;
        t->cap = cap;
    }
    nd = &t->nodes[t->n];
    memset(nd, 0, sizeof *nd);
    nd->kind = kind;
    nd->first = nd->next = nd->key = -1;
    *id = (int32_t)t->n++;
    return RKNNX_FILE_OK;
}

static void lit_ws(const ltree *t, lpos *p)
{
    while (p->i < t->len) {
        char c = t->base[p->i];
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
            p->i++;
        } else {
            break;
        }
    }
}

static int lit_word(const ltree *t, const lpos *p, const char *w)
{
    size_t n = strlen(w);
    return t->len - p->i >= n && memcmp(t->base + p->i, w, n) == 0;
}

static int lit_value(ltree *t, lpos *p, int32_t *id);

static int lit_string(ltree *t, lpos *p, int32_t *id)
{
    char q = t->base[p->i];
    size_t start = ++p->i;
    int rc;
    while (p->i < t->len && t->base[p->i] != q) {
        unsigned char c = (unsigned char)t->base[p->i];
        if (c == '\\') {
            p->i++;
            if (p->i >= t->len) {
                break;
            }
        } else if (c < 0x20) {
            return lit_fail(t, p->i, "syntax", "a control byte 0x%02x inside a string at "
                            "offset %zu of the %s text", c, p->i, t->what);
        }
        p->i++;
    }
    if (p->i >= t->len) {
        return lit_fail(t, start - 1, "syntax", "a string at offset %zu of the %s text has "
                        "no closing quote", start - 1, t->what);
    }
    if ((rc = lit_new(t, L_STR, id)) != 0) {
        return rc;
    }
    t->nodes[*id].s = t->base + start;
    t->nodes[*id].slen = (uint32_t)(p->i - start);
    t->nodes[*id].quote = q;
    p->i++;
    return RKNNX_FILE_OK;
}

static int lit_number(ltree *t, lpos *p, int32_t *id)
{
    size_t start = p->i;
    int is_float = 0, rc;
    char buf[64];
    if (p->i < t->len && (t->base[p->i] == '-' || t->base[p->i] == '+')) {
        p->i++;
    }
    while (p->i < t->len) {
        char c = t->base[p->i];
        if (c >= '0' && c <= '9') {
            p->i++;
        } else if (c == '.' || c == 'e' || c == 'E' ||
                   ((c == '-' || c == '+') && (t->base[p->i - 1] == 'e' ||
                                               t->base[p->i - 1] == 'E'))) {
            is_float = 1;
            p->i++;
        } else {
            break;
        }
    }
    if (p->i - start >= sizeof buf || p->i == start ||
        (p->i - start == 1 && (t->base[start] == '-' || t->base[start] == '+'))) {
        return lit_fail(t, start, "syntax", "a malformed number at offset %zu of the %s text",
                        start, t->what);
    }
    memcpy(buf, t->base + start, p->i - start);
    buf[p->i - start] = '\0';
    if ((rc = lit_new(t, is_float ? L_FLOAT : L_INT, id)) != 0) {
        return rc;
    }
    if (is_float) {
        char *e;
        double v = strtod(buf, &e);
        if (*e != '\0') {
            return lit_fail(t, start, "syntax", "a malformed number '%s' at offset %zu of "
                            "the %s text", buf, start, t->what);
        }
        t->nodes[*id].fval = v;
        t->nodes[*id].ival = (int64_t)0;
    } else {
        const char *c = buf;
        int neg = 0;
        uint64_t v = 0;
        if (*c == '-' || *c == '+') {
            neg = *c == '-';
            c++;
        }
        for (; *c; c++) {
            uint64_t d = (uint64_t)(*c - '0');
            if (v > (UINT64_C(0x7fffffffffffffff) - d) / 10) {
                return lit_fail(t, start, "syntax", "the integer %s at offset %zu of the %s "
                                "text does not fit 63 bits", buf, start, t->what);
            }
            v = v * 10 + d;
        }
        t->nodes[*id].ival = neg ? -(int64_t)v : (int64_t)v;
        t->nodes[*id].fval = (double)t->nodes[*id].ival;
    }
    return RKNNX_FILE_OK;
}

/* A list, tuple or dict/object: `close` ends it, `dict` reads key: value members. */
static int lit_container(ltree *t, lpos *p, char close, int dict, int32_t *id)
{
    int32_t last = -1;
    int rc;
    size_t start = p->i;
    if (++p->depth > LIT_MAX_DEPTH) {
        return lit_fail(t, p->i, "depth", "values nested deeper than %d at offset %zu of the "
                        "%s text", LIT_MAX_DEPTH, p->i, t->what);
    }
    if ((rc = lit_new(t, dict ? L_OBJ : L_ARR, id)) != 0) {
        return rc;
    }
    p->i++;
    for (;;) {
        int32_t key = -1, val;
        lit_ws(t, p);
        if (p->i >= t->len) {
            return lit_fail(t, start, "syntax", "the %s opened at offset %zu of the %s text "
                            "is not closed", dict ? "object" : "list", start, t->what);
        }
        if (t->base[p->i] == close) {
            /* JSON allows no trailing comma; Python does. */
            if (!t->py && t->nodes[*id].count > 0 && t->base[p->i - 1] == ',') {
                return lit_fail(t, p->i, "syntax", "a trailing comma at offset %zu of the "
                                "%s text", p->i, t->what);
            }
            p->i++;
            break;
        }
        if (t->nodes[*id].count > 0) {
            if (t->base[p->i] != ',') {
                return lit_fail(t, p->i, "syntax", "expected ',' or '%c' at offset %zu of "
                                "the %s text", close, p->i, t->what);
            }
            p->i++;
            lit_ws(t, p);
            if (p->i < t->len && t->base[p->i] == close && t->py) {
                p->i++;
                break;
            }
        }
        if (dict) {
            if (p->i >= t->len || (t->base[p->i] != '"' && !(t->py && t->base[p->i] == '\''))) {
                return lit_fail(t, p->i, "syntax", "expected a string key at offset %zu of "
                                "the %s text", p->i, t->what);
            }
            if ((rc = lit_string(t, p, &key)) != 0) {
                return rc;
            }
            lit_ws(t, p);
            if (p->i >= t->len || t->base[p->i] != ':') {
                return lit_fail(t, p->i, "syntax", "expected ':' at offset %zu of the %s text",
                                p->i, t->what);
            }
            p->i++;
        }
        if ((rc = lit_value(t, p, &val)) != 0) {
            return rc;
        }
        t->nodes[val].key = key;
        if (last < 0) {
            t->nodes[*id].first = val;
        } else {
            t->nodes[last].next = val;
        }
        last = val;
        t->nodes[*id].count++;
    }
    p->depth--;
    return RKNNX_FILE_OK;
}

static int lit_value(ltree *t, lpos *p, int32_t *id)
{
    char c;
    int rc;
    lit_ws(t, p);
    if (p->i >= t->len) {
        return lit_fail(t, p->i, "syntax", "the %s text ends where a value was expected "
                        "(offset %zu)", t->what, p->i);
    }
    c = t->base[p->i];
    if (c == '{') {
        return lit_container(t, p, '}', 1, id);
    }
    if (c == '[') {
        return lit_container(t, p, ']', 0, id);
    }
    if (c == '(' && t->py) {
        return lit_container(t, p, ')', 0, id);
    }
    if (c == '"' || (c == '\'' && t->py)) {
        return lit_string(t, p, id);
    }
    if (t->py) {
        /* str() of a float that is not finite: inf, -inf, nan (quantization ranges) */
        static const char *const special[] = {"inf", "-inf", "nan"};
        int k;
        for (k = 0; k < 3; k++) {
            if (lit_word(t, p, special[k])) {
                if ((rc = lit_new(t, L_FLOAT, id)) != 0) {
                    return rc;
                }
                t->nodes[*id].fval = k == 2 ? NAN : (k == 1 ? -INFINITY : INFINITY);
                p->i += strlen(special[k]);
                return RKNNX_FILE_OK;
            }
        }
    }
    if (c == '-' || c == '+' || (c >= '0' && c <= '9') || c == '.') {
        return lit_number(t, p, id);
    }
    {
        static const char *const words[2][3] = {{"null", "true", "false"},
                                                {"None", "True", "False"}};
        const char *const *w = words[t->py ? 1 : 0];
        int k;
        for (k = 0; k < 3; k++) {
            if (lit_word(t, p, w[k])) {
                if ((rc = lit_new(t, k == 0 ? L_NULL : L_BOOL, id)) != 0) {
                    return rc;
                }
                t->nodes[*id].bval = (uint8_t)(k == 1);
                p->i += strlen(w[k]);
                return RKNNX_FILE_OK;
            }
        }
    }
    return lit_fail(t, p->i, "syntax", "unexpected character '%c' (0x%02x) at offset %zu of "
                    "the %s text", (c >= 0x20 && c < 0x7f) ? c : '?', (unsigned char)c, p->i,
                    t->what);
}

static int lit_parse(ltree *t, const char *text, size_t len, int py, const char *what,
                     int64_t file_off, rknnx_file_error *err)
{
    lpos p = {0, 0};
    int32_t root;
    int rc;
    memset(t, 0, sizeof *t);
    t->base = text;
    t->len = len;
    t->py = py;
    t->what = what;
    t->file_off = file_off;
    t->err = err;
    if ((rc = lit_value(t, &p, &root)) != 0) {
        return rc;
    }
    lit_ws(t, &p);
    while (p.i < t->len && t->base[p.i] == '\0') {
        p.i++;   /* a NUL terminator stored with the text */
    }
    if (p.i != t->len) {
        return lit_fail(t, p.i, "syntax", "unexpected bytes after the value at offset %zu of "
                        "the %s text", p.i, t->what);
    }
    return RKNNX_FILE_OK;  /* the root is node 0 */
}

static void lit_free(ltree *t)
{
    free(t->nodes);
    t->nodes = NULL;
}

static const lnode *lit_node(const ltree *t, int32_t id)
{
    return (id >= 0 && (uint32_t)id < t->n) ? &t->nodes[id] : NULL;
}

/* Undo the escapes of a string node into dst (NUL-terminated); -1 when it does not fit or an
 * escape is malformed. */
static int lit_str(const ltree *t, const lnode *nd, char *dst, size_t cap)
{
    size_t i = 0, o = 0;
    if (!nd || nd->kind != L_STR || cap == 0) {
        return -1;
    }
    while (i < nd->slen) {
        unsigned char c = (unsigned char)nd->s[i++];
        uint32_t cp;
        if (c != '\\') {
            if (o + 1 >= cap) {
                return -1;
            }
            dst[o++] = (char)c;
            continue;
        }
        if (i >= nd->slen) {
            return -1;
        }
        c = (unsigned char)nd->s[i++];
        switch (c) {
        case 'n': cp = '\n'; break;
        case 't': cp = '\t'; break;
        case 'r': cp = '\r'; break;
        case 'b': cp = '\b'; break;
        case 'f': cp = '\f'; break;
        case '0': cp = 0; break;
        case 'u':
        case 'x': {
            unsigned digits = c == 'u' ? 4 : 2, k;
            cp = 0;
            if (nd->slen - i < digits) {
                return -1;
            }
            for (k = 0; k < digits; k++) {
                char h = nd->s[i++];
                cp <<= 4;
                if (h >= '0' && h <= '9') cp |= (uint32_t)(h - '0');
                else if (h >= 'a' && h <= 'f') cp |= (uint32_t)(h - 'a' + 10);
                else if (h >= 'A' && h <= 'F') cp |= (uint32_t)(h - 'A' + 10);
                else return -1;
            }
            break;
        }
        default: cp = c; break;   /* \\ \" \' \/ */
        }
        (void)t;
        if (cp == 0) {
            return -1;   /* an embedded NUL would cut the name */
        }
        if (cp < 0x80) {
            if (o + 1 >= cap) return -1;
            dst[o++] = (char)cp;
        } else if (cp < 0x800) {
            if (o + 2 >= cap) return -1;
            dst[o++] = (char)(0xc0 | (cp >> 6));
            dst[o++] = (char)(0x80 | (cp & 0x3f));
        } else {
            if (o + 3 >= cap) return -1;
            dst[o++] = (char)(0xe0 | (cp >> 12));
            dst[o++] = (char)(0x80 | ((cp >> 6) & 0x3f));
            dst[o++] = (char)(0x80 | (cp & 0x3f));
        }
    }
    dst[o] = '\0';
    return 0;
}

static int lit_str_eq(const ltree *t, const lnode *nd, const char *s)
{
    char buf[RKNNX_FILE_NAME_LEN];
    return nd && nd->kind == L_STR && lit_str(t, nd, buf, sizeof buf) == 0 && strcmp(buf, s) == 0;
}

/* Member `key` of an object node, or NULL. */
static const lnode *lit_get(const ltree *t, const lnode *obj, const char *key)
{
    const lnode *c;
    if (!obj || obj->kind != L_OBJ) {
        return NULL;
    }
    for (c = lit_node(t, obj->first); c; c = lit_node(t, c->next)) {
        if (lit_str_eq(t, lit_node(t, c->key), key)) {
            return c;
        }
    }
    return NULL;
}

static const lnode *lit_at(const ltree *t, const lnode *arr, uint32_t k)
{
    const lnode *c;
    if (!arr || (arr->kind != L_ARR && arr->kind != L_OBJ) || k >= arr->count) {
        return NULL;
    }
    for (c = lit_node(t, arr->first); c && k; c = lit_node(t, c->next)) {
        k--;
    }
    return c;
}

static int lit_int(const lnode *nd, int64_t *v)
{
    if (!nd || nd->kind != L_INT) {
        return -1;
    }
    *v = nd->ival;
    return 0;
}

/* A list of non-negative ints fitting u32 into dims; -1 if it is not one. */
static int lit_dims(const ltree *t, const lnode *arr, uint32_t *n, uint32_t *dims)
{
    const lnode *c;
    uint32_t k = 0;
    if (!arr || arr->kind != L_ARR || arr->count > RKNNX_FILE_MAX_DIMS) {
        return -1;
    }
    for (c = lit_node(t, arr->first); c; c = lit_node(t, c->next)) {
        int64_t v;
        if (lit_int(c, &v) || v < 0 || v > (int64_t)UINT32_MAX) {
            return -1;
        }
        dims[k++] = (uint32_t)v;
    }
    *n = k;
    return 0;
}

/* A list (or tuple) of 1 to cap numbers, as floats, into v; -1 if it is not one (empty, too
 * long, an element that is no int or float, or a finite value beyond float's range). */
static int lit_floats(const ltree *t, const lnode *arr, uint32_t cap, uint32_t *n, float *v)
{
    const lnode *c;
    uint32_t k = 0;
    if (!arr || arr->kind != L_ARR || arr->count == 0 || arr->count > cap) {
        return -1;
    }
    for (c = lit_node(t, arr->first); c; c = lit_node(t, c->next)) {
        if (c->kind != L_INT && c->kind != L_FLOAT) {
            return -1;
        }
        if (isfinite(c->fval) && fabs(c->fval) > (double)FLT_MAX) {
            return -1;   /* no float holds it: converting would be undefined */
        }
        v[k++] = (float)c->fval;
    }
    *n = k;
    return 0;
}

/* ---- model helpers --------------------------------------------------------------------- */

typedef struct priv {
    int unused;
} priv;

/*
 * The FlatBuffer's NPU family (printed by the runtime as `target:`) and the chips it stands for
 * (docs/rknn-file-format.md, "NPU families"): the first is the family's name, the others share
 * its NPU.  The family decides; the target platform only picks among the chips of the family
 * (one RK3588 file of toolkit 1.1.2 says platform rk3566).
 */
static const char *const FAMILIES[][4] = {
    {"RKNPU v2", "RK3588", NULL, NULL},
    {"RKNPU lite", "RK3566", "RK3568", NULL},
    {"RKNPU f2", "RK3576", NULL, NULL},
    {"RKNPU t4", "RK3562", NULL, NULL},
    {"RKNPU f3", "RV1126B", NULL, NULL},
    {"RKNPU t3", "RV1106", "RV1103", NULL},
};

const char *rknnx_file_chip_of_family(const char *npu_family)
{
    size_t k;
    if (!npu_family) {
        return NULL;
    }
    for (k = 0; k < sizeof FAMILIES / sizeof FAMILIES[0]; k++) {
        if (strcmp(npu_family, FAMILIES[k][0]) == 0) {
            return FAMILIES[k][1];
        }
    }
    return NULL;
}

/* Upper-case a platform name ("rv1103" -> "RV1103") into dst. */
static void upper(char *dst, size_t cap, const char *src)
{
    size_t k;
    for (k = 0; src[k] && k + 1 < cap; k++) {
        char c = src[k];
        dst[k] = (c >= 'a' && c <= 'z') ? (char)(c - 'a' + 'A') : c;
    }
    dst[k] = '\0';
}

static void decide_chip(rknnx_file_model *m)
{
    char plat[RKNNX_FILE_STR_LEN];
    size_t k, j;
    upper(plat, sizeof plat, m->target_platform);
    for (k = 0; k < sizeof FAMILIES / sizeof FAMILIES[0]; k++) {
        if (strcmp(m->npu_family, FAMILIES[k][0]) != 0) {
            continue;
        }
        set_str(m->chip, sizeof m->chip, FAMILIES[k][1]);
        for (j = 1; j < 4 && FAMILIES[k][j]; j++) {
            if (strcmp(plat, FAMILIES[k][j]) == 0) {
                set_str(m->chip, sizeof m->chip, plat);
            }
        }
        return;
    }
    /* No known NPU family (container 0x1004 has none): the target platform names the chip. */
    set_str(m->chip, sizeof m->chip, plat);
}

uint32_t rknnx_file_type_size(int32_t type)
{
    switch (type) {
    case T_FLOAT32: case T_INT32: case T_UINT32: return 4;
    case T_FLOAT16: case T_INT16: case T_UINT16: case T_BFLOAT16: return 2;
    case T_INT8: case T_UINT8: case T_BOOL: case T_INT4: return 1;
    case T_INT64: return 8;
    default: return 0;
    }
}

/* The FlatBuffer Tensor's dtype code (ONNX TensorProto numbering) as rknn_tensor_type. */
static int32_t type_of_code(int32_t code)
{
    switch (code) {
    case 1: return T_FLOAT32;
    case 2: return T_UINT8;
    case 3: return T_INT8;
    case 4: return T_UINT16;
    case 5: return T_INT16;
    case 6: return T_INT32;
    case 7: return T_INT64;
    case 9: return T_BOOL;
    case 10: return T_FLOAT16;
    case 12: return T_UINT32;
    case 16: return T_BFLOAT16;
    default: return RKNNX_FILE_UNKNOWN;
    }
}

/* A dtype name of the I/O JSON or the JSON tail as rknn_tensor_type. */
static int32_t type_of_name(const char *s)
{
    static const struct { const char *name; int32_t type; } names[] = {
        {"float32", T_FLOAT32}, {"float16", T_FLOAT16}, {"int8", T_INT8}, {"uint8", T_UINT8},
        {"int16", T_INT16}, {"uint16", T_UINT16}, {"int32", T_INT32}, {"uint32", T_UINT32},
        {"int64", T_INT64}, {"bool", T_BOOL}, {"int4", T_INT4}, {"bfloat16", T_BFLOAT16},
    };
    size_t k;
    for (k = 0; k < sizeof names / sizeof names[0]; k++) {
        if (strcmp(s, names[k].name) == 0) {
            return names[k].type;
        }
    }
    return RKNNX_FILE_UNKNOWN;
}

static uint64_t prod(const uint32_t *d, uint32_t n)
{
    uint64_t p = 1;
    uint32_t k;
    for (k = 0; k < n; k++) {
        p *= d[k];
        if (p > UINT32_MAX) {
            return (uint64_t)UINT32_MAX + 1;
        }
    }
    return p;
}

int rknnx_file_set_qnt_channels(rknnx_file_model *model, rknnx_file_tensor *t, uint32_t n,
                                const float *scales, const int32_t *zps)
{
    float *s = NULL;
    int32_t *z = NULL;
    (void)model;
    if (!t || (n && (!scales || !zps))) {
        return RKNNX_FILE_E_ARGUMENT;
    }
    if (n) {
        s = malloc((size_t)n * sizeof *s);
        z = malloc((size_t)n * sizeof *z);
        if (!s || !z) {
            free(s);
            free(z);
            return RKNNX_FILE_E_NOMEM;
        }
        memcpy(s, scales, (size_t)n * sizeof *s);
        memcpy(z, zps, (size_t)n * sizeof *z);
    }
    free((void *)t->scales);
    free((void *)t->zps);
    t->scales = s;
    t->zps = z;
    t->n_qnt = n;
    return RKNNX_FILE_OK;
}

void rknnx_file_free(rknnx_file_model *m)
{
    uint32_t k;
    if (!m) {
        return;
    }
    for (k = 0; m->inputs && k < m->n_inputs; k++) {
        free((void *)m->inputs[k].scales);
        free((void *)m->inputs[k].zps);
    }
    for (k = 0; m->outputs && k < m->n_outputs; k++) {
        free((void *)m->outputs[k].scales);
        free((void *)m->outputs[k].zps);
    }
    free(m->inputs);
    free(m->outputs);
    free(m->shape_sets);
    free(m->custom_ops);
    free(m->priv_);
    free(m);
}

int rknnx_file_sniff(const void *data, size_t size)
{
    const uint8_t *b = data;
    if (!data || size < 8) {
        return 0;
    }
    if (memcmp(b, "CYPTRKNN", 8) == 0) {
        return 2;
    }
    return memcmp(b, "RKNN", 4) == 0 ? 1 : 0;
}

/* ---- the views the runtime reports ------------------------------------------------------ */

/*
 * The INPUT_ATTR / OUTPUT_ATTR view from the logical shape and the layout the compiler chose
 * (the I/O JSON's "layout"): a 4-D tensor the compiler made NHWC is reported NHWC (its dims
 * permuted from NCHW), a 4-D NCHW one NCHW, any other rank UNDEFINED with the shape as it is
 * (runtime 1.5.2 / 1.6.0 / 2.3.2 answers, every file; docs/rknn-file-format.md).
 */
static void derive_attr(rknnx_file_tensor *t)
{
    uint32_t k;
    uint64_t n;
    if (t->n_shape == 4 && strcmp(t->npu_layout, "NHWC") == 0) {
        t->n_dims = 4;
        t->dims[0] = t->shape[0];
        t->dims[1] = t->shape[2];
        t->dims[2] = t->shape[3];
        t->dims[3] = t->shape[1];
        t->fmt = F_NHWC;
    } else {
        t->n_dims = t->n_shape;
        for (k = 0; k < t->n_shape; k++) {
            t->dims[k] = t->shape[k];
        }
        t->fmt = t->n_shape == 4 ? F_NCHW : F_UNDEFINED;
    }
    n = prod(t->dims, t->n_dims);
    t->n_elems = n > UINT32_MAX ? UINT32_MAX : (uint32_t)n;
    n *= rknnx_file_type_size(t->type);
    t->size = n > UINT32_MAX ? UINT32_MAX : (uint32_t)n;
    t->known |= RKNNX_FILE_KNOWN_ATTR;
}

/*
 * The NATIVE_*_ATTR view from the file's native shape (Tensor slot 3) and layout code
 * (slot 1): code 64 is the NPU's own layout: a 5-D [N, C1, H, W, C2] shape, reported as
 * NC1HWC2 for an output; for an input whose compiler layout is NHWC, the runtime reports
 * the NHWC attr view itself (the input's C2 is its channel count).  Code 2 (NCHW) reports the
 * stored shape as NCHW.  Anything else (2-D tensors: no code) reports the attr view,
 * UNDEFINED.
 *
 * Container 2 files (format 1): runtimes 1.5.2 and 1.6.0 report an NC1HWC2 output
 * whose C1 is the compiler's planned buffer (Tensor slot 12) divided by N*H*W*C2*element,
 * not the stored C1: tk2_2c2d03d multiple_input_demo output "8", 8 channels, stored
 * [1,1,128,128,16] / [1,1,128,128,8], planned 524288 / 262144 bytes, reported
 * [1,2,128,128,16] (RK3588) and [1,2,128,128,8] (RK3566).  Those are the only container 2
 * files a runtime served, so the rule rests on them (docs/rknn-file-format.md).  Container 1
 * files keep the stored shape: no runtime here serves them, and their planned sizes do not
 * fit the rule.  From container 6 on the stored shape is what the runtimes report (every
 * toolkit-2.5.0 file).
 */
static void derive_native(rknnx_file_tensor *t, const uint32_t *nat, uint32_t n_nat,
                          uint64_t container_version)
{
    uint32_t k;
    uint64_t n;
    if (t->file_layout_code == 64 && n_nat == 5 && t->role == RKNNX_FILE_INPUT &&
        t->fmt == F_NHWC) {
        t->native_fmt = F_NHWC;
        t->native_n_dims = t->n_dims;
        memcpy(t->native_dims, t->dims, sizeof t->native_dims);
    } else if (t->file_layout_code == 64 && n_nat == 5) {
        uint64_t plane;
        t->native_fmt = F_NC1HWC2;
        t->native_n_dims = 5;
        for (k = 0; k < 5; k++) {
            t->native_dims[k] = nat[k];
        }
        plane = (uint64_t)nat[0] * nat[2] * nat[3] * nat[4] * rknnx_file_type_size(t->type);
        if (container_version == 2 && t->role == RKNNX_FILE_OUTPUT && plane &&
            t->file_planned_size % plane == 0 && t->file_planned_size / plane > nat[1]) {
            t->native_dims[1] = (uint32_t)(t->file_planned_size / plane);
        }
    } else if (t->file_layout_code == 2 && n_nat == 4) {
        t->native_fmt = F_NCHW;
        t->native_n_dims = 4;
        for (k = 0; k < 4; k++) {
            t->native_dims[k] = nat[k];
        }
    } else {
        t->native_fmt = t->fmt;
        t->native_n_dims = t->n_dims;
        memcpy(t->native_dims, t->dims, sizeof t->native_dims);
    }
    n = prod(t->native_dims, t->native_n_dims) * rknnx_file_type_size(t->type);
    t->native_size = n > UINT32_MAX ? UINT32_MAX : (uint32_t)n;
    t->known |= RKNNX_FILE_KNOWN_NATIVE;
}

/* ---- the FlatBuffer model (container versions 1-6) ------------------------------------ */

static int str_field(const fbuf *f, const ftab *t, unsigned slot, const char *field, char *dst,
                     size_t cap)
{
    const uint8_t *s;
    size_t n;
    int rc = fb_string(f, t, slot, field, &s, &n);
    if (rc) {
        return rc;
    }
    dst[0] = '\0';
    if (s) {
        while (n && s[n - 1] == '\0') {
            n--;
        }
        if (copy_span(dst, cap, s, n) != 0) {
            return fb_fail(f, t->name, field, (size_t)(s - f->b), "string %s of the %s table "
                           "has %zu bytes, more than the %zu this reader keeps", field,
                           t->name, n, cap - 1);
        }
    }
    return RKNNX_FILE_OK;
}

/* The I/O JSON (Model slots 12 / 13): {"name": {"dtype": ..., "layout": ...}, ...}. */
static int read_io_json(const fbuf *f, const ftab *root, unsigned slot, const char *field,
                        ltree *tree, int *present)
{
    const uint8_t *s;
    size_t n;
    int rc = fb_string(f, root, slot, field, &s, &n);
    *present = 0;
    memset(tree, 0, sizeof *tree);
    if (rc || !s) {
        return rc;
    }
    rc = lit_parse(tree, (const char *)s, n, 0, field,
                   (int64_t)(f->file_off + (size_t)(s - f->b)), f->err);
    if (rc) {
        return rc;
    }
    if (tree->nodes[0].kind != L_OBJ) {
        return lit_fail(tree, 0, "type", "the %s text is not a JSON object", field);
    }
    *present = 1;
    return RKNNX_FILE_OK;
}

static int read_tensor(const fbuf *f, const ftab *tt, rknnx_file_model *m, rknnx_file_tensor *t,
                       int role, uint32_t index, const ltree *io, int io_present)
{
    const uint8_t *s;
    size_t n, pos;
    uint32_t cnt, k, nat[RKNNX_FILE_MAX_DIMS], n_nat;
    int32_t code;
    int rc;
    memset(t, 0, sizeof *t);
    t->index = index;
    t->role = role;
    t->fmt = t->native_fmt = t->qnt_type = RKNNX_FILE_UNKNOWN;

    if ((rc = str_field(f, tt, 5, "name", t->name, sizeof t->name)) != 0) return rc;
    if ((rc = fb_u8(f, tt, 0, "dtype", RKNNX_FILE_UNKNOWN, &t->file_dtype_code)) != 0) return rc;
    if ((rc = fb_u8(f, tt, 1, "layout", RKNNX_FILE_UNKNOWN, &t->file_layout_code)) != 0) return rc;
    if ((rc = fb_u32(f, tt, 12, "planned_size", 0, &t->file_planned_size)) != 0) return rc;
    if ((rc = fb_u8(f, tt, 2, "kind", 0, &code)) != 0) return rc;

    if ((rc = fb_vector(f, tt, 4, 4, "shape", &pos, &cnt)) != 0) return rc;
    if (cnt > RKNNX_FILE_MAX_DIMS) {
        return fb_fail(f, "Tensor", "shape", pos, "tensor '%s' has %u dims, more than %d",
                       t->name, cnt, RKNNX_FILE_MAX_DIMS);
    }
    t->n_shape = cnt;
    for (k = 0; k < cnt; k++) {
        t->shape[k] = rd32(f->b + pos + 4 * k);
    }
    if ((rc = fb_vector(f, tt, 3, 4, "native_shape", &pos, &cnt)) != 0) return rc;
    if (cnt > RKNNX_FILE_MAX_DIMS) {
        return fb_fail(f, "Tensor", "native_shape", pos, "tensor '%s' has %u native dims, "
                       "more than %d", t->name, cnt, RKNNX_FILE_MAX_DIMS);
    }
    n_nat = cnt;
    for (k = 0; k < cnt; k++) {
        nat[k] = rd32(f->b + pos + 4 * k);
    }

    /* The compiler's NPU-side dtype and layout, from the I/O JSON. */
    if (io_present) {
        const lnode *e = lit_get(io, &io->nodes[0], t->name);
        const lnode *d = lit_get(io, e, "dtype"), *l = lit_get(io, e, "layout");
        if (d && lit_str(io, d, t->npu_dtype, sizeof t->npu_dtype) != 0) t->npu_dtype[0] = 0;
        if (l && lit_str(io, l, t->npu_layout, sizeof t->npu_layout) != 0) t->npu_layout[0] = 0;
    }
    t->type = type_of_code(t->file_dtype_code);
    if (t->type == RKNNX_FILE_UNKNOWN && t->npu_dtype[0]) {
        t->type = type_of_name(t->npu_dtype);
    }
    if (t->type == RKNNX_FILE_UNKNOWN) {
        return fb_fail(f, "Tensor", "dtype", tt->pos, "tensor '%s' has dtype code %d, which "
                       "this reader does not know", t->name, t->file_dtype_code);
    }
    snprintf(t->layout, sizeof t->layout, "%s", t->n_shape == 4 ? "NCHW" : "");
    t->known = RKNNX_FILE_KNOWN_SHAPE;
    derive_attr(t);
    derive_native(t, nat, n_nat, m->container_version);

    /* Quantization: method (slot 6), scale (slot 10), zero point (slot 11). */
    if ((rc = str_field(f, tt, 6, "qnt_method", t->qnt_method, sizeof t->qnt_method)) != 0) {
        return rc;
    }
    {
        size_t spos, zpos;
        uint32_t ns, nz;
        if ((rc = fb_vector(f, tt, 10, 4, "scale", &spos, &ns)) != 0) return rc;
        if ((rc = fb_vector(f, tt, 11, 4, "zero_point", &zpos, &nz)) != 0) return rc;
        if (ns != nz) {
            return fb_fail(f, "Tensor", "zero_point", zpos, "tensor '%s' has %u scales but %u "
                           "zero points", t->name, ns, nz);
        }
        if (ns > 0) {
            float *sc = malloc((size_t)ns * sizeof *sc);
            int32_t *zp = malloc((size_t)ns * sizeof *zp);
            if (!sc || !zp) {
                free(sc);
                free(zp);
                return fail(f->err, RKNNX_FILE_E_NOMEM, "nomem", -1, "out of memory");
            }
            for (k = 0; k < ns; k++) {
                sc[k] = rdf32(f->b + spos + 4 * k);
                zp[k] = (int32_t)rd32(f->b + zpos + 4 * k);
            }
            t->scales = sc;
            t->zps = zp;
            t->n_qnt = ns;
            t->quantized = 1;
            t->qnt_type = Q_AFFINE;
            t->scale = sc[0];
            t->zp = zp[0];
        } else {
            /* No parameters (a float tensor): the runtimes report AFFINE, zp 0, scale 1
             * (RK3566/RK3588 on 1.5.2/1.6.0, e.g. fp16_net_rk3588). */
            t->qnt_type = Q_AFFINE;
            t->scale = 1.0f;
            t->zp = 0;
        }
        t->known |= RKNNX_FILE_KNOWN_QNT;
    }
    (void)s;
    (void)n;
    return RKNNX_FILE_OK;
}

/* An int vector of the Graph table (inputs / outputs: indices into tensors). */
static int read_index_vector(const fbuf *f, const ftab *g, unsigned slot, const char *field,
                             uint32_t n_tensors, size_t *pos, uint32_t *count)
{
    uint32_t k;
    int rc = fb_vector(f, g, slot, 4, field, pos, count);
    if (rc) {
        return rc;
    }
    for (k = 0; k < *count; k++) {
        uint32_t ix = rd32(f->b + *pos + 4 * k);
        if (ix >= n_tensors) {
            return fb_fail(f, "Graph", field, *pos + 4 * k, "graph %s[%u] = %u, but the graph "
                           "has %u tensors", field, k, ix, n_tensors);
        }
    }
    return RKNNX_FILE_OK;
}

/* "<toolkit>(compiler version: <compiler>)" -> the two versions. */
static void split_versions(const char *s, rknnx_file_model *m)
{
    const char *key = "(compiler version: ";
    const char *p = strstr(s, key);
    if (!p) {
        set_str(m->toolkit_version, sizeof m->toolkit_version, s);
        return;
    }
    snprintf(m->toolkit_version, sizeof m->toolkit_version, "%.*s", (int)(p - s), s);
    p += strlen(key);
    {
        size_t n = strlen(p);
        if (n && p[n - 1] == ')') {
            n--;
        }
        snprintf(m->compiler_version, sizeof m->compiler_version, "%.*s", (int)n, p);
    }
}

/* The generator's dynamic_shapes: {input name: [shape, ...]}. */
static int read_shape_sets(const ltree *gen, rknnx_file_model *m, rknnx_file_error *err)
{
    const lnode *ds = lit_get(gen, &gen->nodes[0], "dynamic_shapes");
    uint32_t i, s, n_sets = 0;
    if (!ds || ds->kind != L_OBJ || ds->count == 0) {
        return RKNNX_FILE_OK;
    }
    for (i = 0; i < m->n_inputs; i++) {
        const lnode *l = lit_get(gen, ds, m->inputs[i].name);
        if (!l || l->kind != L_ARR) {
            return fail(err, RKNNX_FILE_E_FORMAT, "generator.dynamic_shapes",
                        -1, "the generator's dynamic_shapes has no list for input '%s'",
                        m->inputs[i].name);
        }
        if (i == 0) {
            n_sets = l->count;
        } else if (l->count != n_sets) {
            return fail(err, RKNNX_FILE_E_FORMAT, "generator.dynamic_shapes", -1,
                        "the generator's dynamic_shapes lists %u shapes for input '%s' but "
                        "%u for input '%s'", l->count, m->inputs[i].name, n_sets,
                        m->inputs[0].name);
        }
    }
    if (n_sets == 0 || m->n_inputs == 0) {
        return RKNNX_FILE_OK;
    }
    if (n_sets > 4096) {
        return fail(err, RKNNX_FILE_E_FORMAT, "generator.dynamic_shapes", -1,
                    "the generator's dynamic_shapes lists %u shape sets, more than 4096", n_sets);
    }
    m->shape_sets = calloc((size_t)n_sets * m->n_inputs, sizeof *m->shape_sets);
    if (!m->shape_sets) {
        return fail(err, RKNNX_FILE_E_NOMEM, "nomem", -1, "out of memory");
    }
    m->n_shape_sets = n_sets;
    for (i = 0; i < m->n_inputs; i++) {
        const rknnx_file_tensor *t = &m->inputs[i];
        const lnode *l = lit_get(gen, ds, t->name);
        for (s = 0; s < n_sets; s++) {
            rknnx_file_shape *sh = &m->shape_sets[(size_t)s * m->n_inputs + i];
            uint32_t nd, d[RKNNX_FILE_MAX_DIMS];
            if (lit_dims(gen, lit_at(gen, l, s), &nd, d) != 0 || nd != t->n_shape) {
                return fail(err, RKNNX_FILE_E_FORMAT, "generator.dynamic_shapes", -1,
                            "shape set %u of input '%s' in the generator's dynamic_shapes is "
                            "not a list of %u non-negative integers", s, t->name, t->n_shape);
            }
            sh->n_dims = nd;
            if (t->fmt == F_NHWC && nd == 4) {
                sh->dims[0] = d[0];
                sh->dims[1] = d[2];
                sh->dims[2] = d[3];
                sh->dims[3] = d[1];
            } else {
                memcpy(sh->dims, d, sizeof(uint32_t) * nd);
            }
        }
    }
    return RKNNX_FILE_OK;
}

/*
 * The inputs' normalization: the generator's attrs map every input (and output) name to a
 * dict whose 'mean' and 'std' (inputs only) are the lists the toolkit was given, e.g.
 * fp16_net_rk3588: 'images': {..., 'mean': [0], 'std': [255, 255, 255], ...}.  Kept raw (the
 * counts as stored); an input whose two lists are not both lists of numbers stays unknown.
 * Never an error: the shapes and types the runtime reports do not depend on them.
 */
static void read_norms(const ltree *gen, rknnx_file_model *m)
{
    const lnode *attrs = lit_get(gen, &gen->nodes[0], "attrs");
    uint32_t i;
    if (!attrs || attrs->kind != L_OBJ) {
        return;
    }
    for (i = 0; i < m->n_inputs; i++) {
        rknnx_file_tensor *t = &m->inputs[i];
        const lnode *a = lit_get(gen, attrs, t->name);
        if (lit_floats(gen, lit_get(gen, a, "mean"), RKNNX_FILE_MAX_NORM, &t->n_mean,
                       t->mean) == 0 &&
            lit_floats(gen, lit_get(gen, a, "std"), RKNNX_FILE_MAX_NORM, &t->n_std,
                       t->std) == 0) {
            t->known |= RKNNX_FILE_KNOWN_NORM;
        } else {
            t->n_mean = t->n_std = 0;
            memset(t->mean, 0, sizeof t->mean);
            memset(t->std, 0, sizeof t->std);
        }
    }
}

/*
 * Custom operators: Model slot 21 is a string of the custom op types the model uses
 * ("cstDualResidual" in the vendor's dual_residual_custom files, empty otherwise; absent
 * before format 6).  Only one type has been seen, so how several are separated is not
 * known: commas, semicolons and white space are all taken as separators.  The graph's nodes
 * (Graph slot 1; Node slot 1 the op type, slot 2 "<type>:<name>") give each one's name.
 */
static int read_custom_ops(const fbuf *f, const ftab *root, const ftab *g, rknnx_file_model *m)
{
    const uint8_t *s;
    size_t n, i = 0, npos;
    uint32_t n_nodes, k;
    int rc = fb_string(f, root, 21, "custom_ops", &s, &n);
    if (rc || !s || n == 0) {
        return rc;
    }
    if ((rc = fb_vector(f, g, 1, 4, "nodes", &npos, &n_nodes)) != 0) {
        return rc;
    }
    while (i < n) {
        size_t start, len;
        char type[RKNNX_FILE_STR_LEN];
        int found = 0;
        while (i < n && (s[i] == ',' || s[i] == ';' || s[i] == ' ' || s[i] == '\n' ||
                         s[i] == '\t' || s[i] == '\0')) {
            i++;
        }
        start = i;
        while (i < n && !(s[i] == ',' || s[i] == ';' || s[i] == ' ' || s[i] == '\n' ||
                          s[i] == '\t' || s[i] == '\0')) {
            i++;
        }
        len = i - start;
        if (len == 0) {
            continue;
        }
        if (copy_span(type, sizeof type, s + start, len) != 0) {
            return fb_fail(f, "Model", "custom_ops", (size_t)(s - f->b), "a custom op type "
                           "of %zu bytes, more than %d", len, RKNNX_FILE_STR_LEN - 1);
        }
        for (k = 0; k <= n_nodes; k++) {
            ftab nd;
            const uint8_t *ts = NULL, *ns = NULL;
            size_t tl = 0, nl = 0;
            rknnx_file_custom_op *op;
            if (k < n_nodes) {
                if ((rc = fb_vector_table(f, npos, k, "Node", "nodes", &nd)) != 0 ||
                    (rc = fb_string(f, &nd, 1, "type", &ts, &tl)) != 0 ||
                    (rc = fb_string(f, &nd, 2, "name", &ns, &nl)) != 0) {
                    return rc;
                }
                if (!ts || tl != len || memcmp(ts, type, len) != 0) {
                    continue;
                }
            } else if (found) {
                break;
            }
            /* One entry per node of the type (or one without a name when no node has it). */
            op = realloc(m->custom_ops, (size_t)(m->n_custom_ops + 1) * sizeof *op);
            if (!op) {
                return fail(f->err, RKNNX_FILE_E_NOMEM, "nomem", -1, "out of memory");
            }
            m->custom_ops = op;
            op = &m->custom_ops[m->n_custom_ops++];
            memset(op, 0, sizeof *op);
            set_str(op->type, sizeof op->type, type);
            if (ns) {
                const uint8_t *colon = memchr(ns, ':', nl);
                const uint8_t *nm = colon ? colon + 1 : ns;
                size_t ml = nl - (size_t)(nm - ns);
                if (copy_span(op->name, sizeof op->name, nm, ml) != 0) {
                    return fb_fail(f, "Node", "name", (size_t)(ns - f->b), "a node name of "
                                   "%zu bytes, more than %d", ml, RKNNX_FILE_NAME_LEN - 1);
                }
            }
            found = 1;
        }
        if (m->n_custom_ops > 4096) {
            return fb_fail(f, "Model", "custom_ops", (size_t)(s - f->b), "more than 4096 "
                           "custom operators");
        }
    }
    return RKNNX_FILE_OK;
}

static int read_flatbuffer(const uint8_t *payload, size_t size, uint64_t file_off,
                           rknnx_file_model *m, rknnx_file_error *err)
{
    fbuf f = {payload, size, file_off, err};
    ftab root, g;
    uint32_t root_off, n_graphs, n_tensors, n_in, n_out, k;
    size_t gpos, tpos, ipos, opos;
    char shape_mode[32] = "";
    ltree io_in, io_out, gen;
    int in_present = 0, out_present = 0, rc;
    memset(&io_in, 0, sizeof io_in);
    memset(&io_out, 0, sizeof io_out);
    memset(&gen, 0, sizeof gen);

    if (size < 8) {
        return fb_fail(&f, "root", NULL, 0, "the %zu-byte payload is too short for a "
                       "FlatBuffer (8 bytes at least)", size);
    }
    if (memcmp(payload + 4, "RKNN", 4) != 0) {
        return fb_fail(&f, "identifier", NULL, 4, "the payload's FlatBuffer identifier is not "
                       "'RKNN'");
    }
    root_off = rd32(payload);
    if ((rc = fb_table(&f, root_off, "Model", "root", &root)) != 0) return rc;

    if ((rc = fb_u32(&f, &root, 0, "version", 0, &m->format_version)) != 0) return rc;
    if ((rc = str_field(&f, &root, 1, "target", m->npu_family, sizeof m->npu_family)) != 0)
        return rc;
    if ((rc = fb_u32(&f, &root, 6, "compiler_int", 0, &m->compiler_version_int)) != 0)
        return rc;
    {
        char ver[2 * RKNNX_FILE_STR_LEN];
        if ((rc = str_field(&f, &root, 7, "compiler", ver, sizeof ver)) != 0) return rc;
        split_versions(ver, m);
    }
    if ((rc = str_field(&f, &root, 8, "platform", m->target_platform,
                        sizeof m->target_platform)) != 0)
        return rc;
    if ((rc = str_field(&f, &root, 9, "framework", m->framework, sizeof m->framework)) != 0)
        return rc;
    if (m->format_version >= 6) {
        if ((rc = str_field(&f, &root, 16, "shape_mode", shape_mode, sizeof shape_mode)) != 0)
            return rc;
    }
    m->dynamic = strcmp(shape_mode, "dynamic_shape") == 0;

    /* The graph and its tensors. */
    if ((rc = fb_vector(&f, &root, 2, 4, "graphs", &gpos, &n_graphs)) != 0) return rc;
    if (n_graphs == 0) {
        return fb_fail(&f, "Model", "graphs", root.pos, "the model has no graph");
    }
    if ((rc = fb_vector_table(&f, gpos, 0, "Graph", "graphs", &g)) != 0) return rc;
    if ((rc = fb_vector(&f, &g, 0, 4, "tensors", &tpos, &n_tensors)) != 0) return rc;
    if ((rc = read_index_vector(&f, &g, 2, "inputs", n_tensors, &ipos, &n_in)) != 0) return rc;
    if ((rc = read_index_vector(&f, &g, 3, "outputs", n_tensors, &opos, &n_out)) != 0)
        return rc;
    if (n_in == 0 || n_out == 0) {
        return fb_fail(&f, "Graph", n_in == 0 ? "inputs" : "outputs", g.pos, "the graph has "
                       "%u inputs and %u outputs; a model needs at least one of each", n_in,
                       n_out);
    }

    if ((rc = read_io_json(&f, &root, 12, "input_json", &io_in, &in_present)) != 0) goto out;
    if ((rc = read_io_json(&f, &root, 13, "output_json", &io_out, &out_present)) != 0) goto out;

    m->inputs = calloc(n_in, sizeof *m->inputs);
    m->outputs = calloc(n_out, sizeof *m->outputs);
    if (!m->inputs || !m->outputs) {
        rc = fail(err, RKNNX_FILE_E_NOMEM, "nomem", -1, "out of memory");
        goto out;
    }
    m->n_inputs = n_in;
    m->n_outputs = n_out;
    for (k = 0; k < n_in + n_out; k++) {
        int is_in = k < n_in;
        uint32_t j = is_in ? k : k - n_in;
        uint32_t ix = rd32(payload + (is_in ? ipos : opos) + 4 * j);
        ftab tt;
        if ((rc = fb_vector_table(&f, tpos, ix, "Tensor", "tensors", &tt)) != 0) goto out;
        rc = read_tensor(&f, &tt, m, is_in ? &m->inputs[j] : &m->outputs[j],
                         is_in ? RKNNX_FILE_INPUT : RKNNX_FILE_OUTPUT, j,
                         is_in ? &io_in : &io_out, is_in ? in_present : out_present);
        if (rc) goto out;
    }

    if ((rc = read_custom_ops(&f, &root, &g, m)) != 0) goto out;

    /* Model slot 19: a table whose fields 0 and 1 are the weight and internal memory sizes
     * (u64; a field 2 on RK3566-family files is not known). */
    {
        size_t target;
        if ((rc = fb_ref(&f, &root, 19, "mem_sizes", &target)) != 0) goto out;
        if (target) {
            ftab mt;
            size_t a0, a1;
            if ((rc = fb_table(&f, target, "MemSizes", "mem_sizes", &mt)) != 0) goto out;
            if ((rc = fb_field(&f, &mt, 0, 8, "weight", &a0)) != 0) goto out;
            if ((rc = fb_field(&f, &mt, 1, 8, "internal", &a1)) != 0) goto out;
            m->weight_size = a0 ? rd64(payload + a0) : 0;
            m->internal_size = a1 ? rd64(payload + a1) : 0;
            m->has_mem_sizes = a0 != 0 || a1 != 0;
        }
    }

    /* The generator: a Python-literal dict from format 6 on (a plain text before). */
    {
        const uint8_t *s;
        size_t n;
        if ((rc = fb_string(&f, &root, 3, "generator", &s, &n)) != 0) goto out;
        /* A dynamic model needs it (its shape sets): a generator the parser refuses fails
         * the read.  A static model needs it only for its inputs' mean/std, so there a
         * literal this parser does not know (a newer toolkit's repr) leaves those unknown
         * and cannot make a good model unreadable; only running out of memory fails. */
        if ((m->dynamic || m->format_version >= 6) && s && n && s[0] == '{') {
            rc = lit_parse(&gen, (const char *)s, n, 1, "generator",
                           (int64_t)(file_off + (size_t)(s - payload)),
                           m->dynamic ? err : NULL);
            if (rc == RKNNX_FILE_E_NOMEM && !m->dynamic) {
                rc = fail(err, RKNNX_FILE_E_NOMEM, "nomem", -1, "out of memory");
                goto out;
            }
            if (rc && m->dynamic) goto out;
            if (rc == 0 && m->dynamic && (rc = read_shape_sets(&gen, m, err)) != 0) goto out;
            /* the mean/std of format 6 files only: the container 2 files (format 1) list
             * no input in their attrs, and the 0x1004 payload is not read here */
            if (rc == 0 && m->format_version >= 6) {
                read_norms(&gen, m);
            }
            rc = RKNNX_FILE_OK;
        }
        if (m->dynamic && m->n_shape_sets == 0) {
            rc = fail(err, RKNNX_FILE_E_FORMAT, "generator.dynamic_shapes", -1,
                      "the model says dynamic_shape but its generator lists no shape sets");
            goto out;
        }
    }
    rc = RKNNX_FILE_OK;
out:
    lit_free(&io_in);
    lit_free(&io_out);
    lit_free(&gen);
    return rc;
}

/* ---- the JSON tail ---------------------------------------------------------------------- */

/* The tail's I/O list: graph[] links "input"/"output" #i to norm_tensor id k. */
static int tail_find(const ltree *j, const char *side, uint32_t index, const lnode **tensor)
{
    const lnode *root = &j->nodes[0];
    const lnode *graph = lit_get(j, root, "graph"), *norm = lit_get(j, root, "norm_tensor");
    const lnode *c;
    *tensor = NULL;
    if (!graph || graph->kind != L_ARR || !norm || norm->kind != L_ARR) {
        return -1;
    }
    for (c = lit_node(j, graph->first); c; c = lit_node(j, c->next)) {
        int64_t li, ri;
        const lnode *t;
        if (!lit_str_eq(j, lit_get(j, c, "left"), side) ||
            lit_int(lit_get(j, c, "left_tensor_id"), &li) || li != (int64_t)index ||
            lit_int(lit_get(j, c, "right_tensor_id"), &ri)) {
            continue;
        }
        for (t = lit_node(j, norm->first); t; t = lit_node(j, t->next)) {
            int64_t id;
            if (!lit_int(lit_get(j, t, "tensor_id"), &id) && id == ri) {
                *tensor = t;
                return 0;
            }
        }
        return -1;
    }
    return -1;
}

static int read_tail(const char *text, size_t len, int64_t file_off, rknnx_file_model *m,
                     int fill_io, rknnx_file_error *err)
{
    ltree j;
    const lnode *root, *v;
    int64_t n_in = 0, n_out = 0;
    uint32_t k;
    int rc = lit_parse(&j, text, len, 0, "json", file_off, err);
    if (rc) {
        lit_free(&j);
        return rc;
    }
    root = &j.nodes[0];
    if (root->kind != L_OBJ) {
        rc = lit_fail(&j, 0, "type", "the JSON tail is not an object");
        goto out;
    }
    if (lit_int(lit_get(&j, root, "input_num"), &n_in) || lit_int(lit_get(&j, root,
        "output_num"), &n_out) || n_in < 0 || n_out < 0 || n_in > 4096 || n_out > 4096) {
        rc = lit_fail(&j, 0, "input_num", "the JSON tail has no usable input_num/output_num");
        goto out;
    }
    v = lit_get(&j, root, "version");
    if (v && !m->toolkit_version[0]) {
        lit_str(&j, v, m->toolkit_version, sizeof m->toolkit_version);
    }
    v = lit_at(&j, lit_get(&j, root, "target_platform"), 0);
    if (v && !m->target_platform[0]) {
        lit_str(&j, v, m->target_platform, sizeof m->target_platform);
    }
    v = lit_get(&j, root, "network_platform");
    if (v && !m->framework[0]) {
        lit_str(&j, v, m->framework, sizeof m->framework);
    }
    if (!fill_io) {
        if ((uint32_t)n_in != m->n_inputs || (uint32_t)n_out != m->n_outputs) {
            rc = lit_fail(&j, 0, "input_num", "the JSON tail says %lld inputs and %lld "
                          "outputs, the FlatBuffer graph %u and %u", (long long)n_in,
                          (long long)n_out, m->n_inputs, m->n_outputs);
        }
        goto out;
    }

    /* Container 0x1004: the tail is where the signature is. */
    if (n_in == 0 || n_out == 0) {
        rc = lit_fail(&j, 0, "input_num", "the JSON tail says %lld inputs and %lld outputs; "
                      "a model needs at least one of each", (long long)n_in, (long long)n_out);
        goto out;
    }
    m->inputs = calloc((size_t)n_in, sizeof *m->inputs);
    m->outputs = calloc((size_t)n_out, sizeof *m->outputs);
    if (!m->inputs || !m->outputs) {
        rc = fail(err, RKNNX_FILE_E_NOMEM, "nomem", -1, "out of memory");
        goto out;
    }
    m->n_inputs = (uint32_t)n_in;
    m->n_outputs = (uint32_t)n_out;
    for (k = 0; k < m->n_inputs + m->n_outputs; k++) {
        int is_in = k < m->n_inputs;
        uint32_t i = is_in ? k : k - m->n_inputs;
        rknnx_file_tensor *t = is_in ? &m->inputs[i] : &m->outputs[i];
        const lnode *nt, *dt;
        char dtype[32] = "";
        uint64_t ne;
        if (tail_find(&j, is_in ? "input" : "output", i, &nt) != 0) {
            rc = lit_fail(&j, 0, "graph", "the JSON tail's graph links no norm_tensor to %s "
                          "%u", is_in ? "input" : "output", i);
            goto out;
        }
        t->index = i;
        t->role = is_in ? RKNNX_FILE_INPUT : RKNNX_FILE_OUTPUT;
        t->fmt = t->native_fmt = t->qnt_type = RKNNX_FILE_UNKNOWN;
        t->file_dtype_code = t->file_layout_code = RKNNX_FILE_UNKNOWN;
        if (lit_str(&j, lit_get(&j, nt, "url"), t->name, sizeof t->name) != 0 ||
            lit_dims(&j, lit_get(&j, nt, "size"), &t->n_shape, t->shape) != 0) {
            rc = lit_fail(&j, 0, "norm_tensor", "the JSON tail's norm_tensor for %s %u has "
                          "no usable url (name) or size (shape)", is_in ? "input" : "output", i);
            goto out;
        }
        dt = lit_get(&j, nt, "dtype");
        /* dtype.vx_type: "int8", ...; empty in the rk2118 float16 file (then unknown). */
        if (lit_str(&j, lit_get(&j, dt, "vx_type"), dtype, sizeof dtype) != 0) {
            dtype[0] = '\0';
        }
        t->type = dtype[0] ? type_of_name(dtype) : RKNNX_FILE_UNKNOWN;
        if (dtype[0] && t->type == RKNNX_FILE_UNKNOWN) {
            rc = lit_fail(&j, 0, "norm_tensor", "the JSON tail's norm_tensor '%s' has dtype "
                          "'%s', which this reader does not know", t->name, dtype);
            goto out;
        }
        set_str(t->npu_dtype, sizeof t->npu_dtype, dtype);
        lit_str(&j, lit_get(&j, dt, "qnt_method"), t->qnt_method, sizeof t->qnt_method);
        snprintf(t->layout, sizeof t->layout, "%s", t->n_shape == 4 ? "NCHW" : "");
        /* The attr view's dims as stored; its layout (NHWC or not) is the payload's. */
        t->n_dims = t->n_shape;
        memcpy(t->dims, t->shape, sizeof t->dims);
        ne = prod(t->dims, t->n_dims);
        t->n_elems = ne > UINT32_MAX ? UINT32_MAX : (uint32_t)ne;
        ne *= rknnx_file_type_size(t->type);
        t->size = ne > UINT32_MAX ? UINT32_MAX : (uint32_t)ne;
        t->known = RKNNX_FILE_KNOWN_SHAPE;
    }
    rc = RKNNX_FILE_OK;
out:
    lit_free(&j);
    return rc;
}

/* ---- the container ---------------------------------------------------------------------- */

int rknnx_file_read(const void *data, size_t size, rknnx_file_model **out, rknnx_file_error *err)
{
    const uint8_t *b = data;
    rknnx_file_model *m;
    uint64_t ver, plen, jlen, rest;
    uint32_t hsize;
    int rc, is_fb;
    if (out) {
        *out = NULL;
    }
    if (err) {
        memset(err, 0, sizeof *err);
        err->offset = -1;
    }
    if (!out || !data) {
        return fail(err, RKNNX_FILE_E_ARGUMENT, "argument", -1, "no output pointer or no data");
    }
    if (size >= 8 && memcmp(b, "CYPTRKNN", 8) == 0) {
        return fail(err, RKNNX_FILE_E_ENCRYPTED, "encrypted", 0, "the model is encrypted "
                    "(magic 'CYPTRKNN'): only the vendor runtime can read it");
    }
    if (size < 4 || memcmp(b, "RKNN", 4) != 0) {
        return fail(err, RKNNX_FILE_E_FORMAT, "magic", 0, "not an RKNN model: the file does "
                    "not start with 'RKNN'%s", size < 4 ? " (it has fewer than 4 bytes)" : "");
    }
    if (size < 24) {
        return fail(err, RKNNX_FILE_E_FORMAT, "header_length", 0, "the file has %zu bytes, "
                    "fewer than the 24 of the smallest RKNN header", size);
    }
    ver = rd64(b + 8);
    if (ver >= 1 && ver <= 6) {
        is_fb = 1;
    } else if (ver >= 0x1001 && ver <= 0x1004) {
        is_fb = 0;
    } else {
        return fail(err, RKNNX_FILE_E_UNSUPPORTED, "version", 8, "container version %llu "
                    "(0x%llx) is not one this reader knows (1-6, 0x1001-0x1004)",
                    (unsigned long long)ver, (unsigned long long)ver);
    }
    hsize = ver == 1 ? 24u : 64u;
    if (size < (size_t)hsize + 8) {
        return fail(err, RKNNX_FILE_E_FORMAT, "header_length", 0, "the file has %zu bytes, "
                    "fewer than its %u-byte header and the 8-byte JSON length", size, hsize);
    }
    plen = rd64(b + 16);
    rest = (uint64_t)size - hsize - 8;
    if (plen > rest) {
        return fail(err, RKNNX_FILE_E_FORMAT, "payload_length", 16, "the header says the "
                    "payload has %llu bytes, but the file has only %llu after the header "
                    "(truncated?)", (unsigned long long)plen, (unsigned long long)rest);
    }
    if (plen == 0) {
        return fail(err, RKNNX_FILE_E_FORMAT, "payload_length", 16, "the header says the "
                    "payload is empty");
    }
    jlen = rd64(b + hsize + plen);
    if (jlen > rest - plen) {
        return fail(err, RKNNX_FILE_E_FORMAT, "json_length", (int64_t)(hsize + plen),
                    "the JSON tail claims %llu bytes, but the file has only %llu after it "
                    "(truncated?)", (unsigned long long)jlen,
                    (unsigned long long)(rest - plen));
    }
    if (jlen == 0) {
        return fail(err, RKNNX_FILE_E_FORMAT, "json_length", (int64_t)(hsize + plen),
                    "the JSON tail is empty");
    }
    /* Bytes after the JSON tail: none in any file seen; they are ignored. */

    m = calloc(1, sizeof *m);
    if (!m) {
        return fail(err, RKNNX_FILE_E_NOMEM, "nomem", -1, "out of memory");
    }
    m->container_version = ver;
    m->header_size = hsize;
    m->payload_offset = hsize;
    m->payload_size = plen;
    m->json_offset = hsize + plen + 8;
    m->json_size = jlen;
    m->file_size = size;

    if (is_fb) {
        rc = read_flatbuffer(b + hsize, (size_t)plen, hsize, m, err);
        if (rc == 0) {
            rc = read_tail((const char *)b + m->json_offset, (size_t)jlen,
                           (int64_t)m->json_offset, m, 0, err);
        }
    } else {
        rc = read_tail((const char *)b + m->json_offset, (size_t)jlen,
                       (int64_t)m->json_offset, m, 1, err);
#ifdef RKNNX_FILE_HAVE_V1004
        if (rc == 0) {
            rc = rknnx_file_decode_v1004(b + hsize, (size_t)plen, m, err);
        }
#endif
    }
    if (rc == 0) {
        decide_chip(m);
    }
    if (rc) {
        rknnx_file_free(m);
        return rc;
    }
    *out = m;
    return RKNNX_FILE_OK;
}
