/*
 * rknnfile/literal.c: the reader's literal parser (internal.h).
 *
 * Two dialects of one grammar: JSON (the container's tail, the I/O JSON strings of a
 * version-6 FlatBuffer) and the subset of Python literals a FlatBuffer's `generator` text
 * uses (dict, list, tuple, str with single or double quotes, int, float including inf and
 * nan, True/False/None).  Never evaluated: the text becomes a tree of nodes in one array,
 * with a depth limit (LIT_MAX_DEPTH) and a node limit (LIT_MAX_NODES), and every read is
 * bounded by the text's length.  A failed check names "<what>.<syntax|depth|size|type>" and
 * the offset in the file.
 */
#include "internal.h"

#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LIT_MAX_DEPTH 64
#define LIT_MAX_NODES (1u << 20)

typedef rknnx_file_ltree ltree;
typedef rknnx_file_lnode lnode;
enum { L_NULL = RKNNX_FILE_L_NULL, L_BOOL = RKNNX_FILE_L_BOOL, L_INT = RKNNX_FILE_L_INT,
       L_FLOAT = RKNNX_FILE_L_FLOAT, L_STR = RKNNX_FILE_L_STR, L_ARR = RKNNX_FILE_L_ARR,
       L_OBJ = RKNNX_FILE_L_OBJ };

typedef struct lpos {
    size_t i;
    int depth;
} lpos;

static int lit_vfail(ltree *t, size_t at, const char *sub, const char *fmt, va_list ap)
{
    if (t->err) {
        t->err->status = RKNNX_FILE_E_FORMAT;
        snprintf(t->err->check, sizeof t->err->check, "%s.%s", t->what, sub);
        vsnprintf(t->err->message, sizeof t->err->message, fmt, ap);
        t->err->offset = t->file_off >= 0 ? t->file_off + (int64_t)at : -1;
    }
    return RKNNX_FILE_E_FORMAT;
}

#if defined(__GNUC__)
__attribute__((format(printf, 4, 5)))
#endif
static int lit_fail(ltree *t, size_t at, const char *sub, const char *fmt, ...)
{
    va_list ap;
    int rc;
    va_start(ap, fmt);
    rc = lit_vfail(t, at, sub, fmt, ap);
    va_end(ap);
    return rc;
}

int rknnx_file_lit_fail(ltree *t, size_t at, const char *sub, const char *fmt, ...)
{
    va_list ap;
    int rc;
    va_start(ap, fmt);
    rc = lit_vfail(t, at, sub, fmt, ap);
    va_end(ap);
    return rc;
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
            return rknnx_file_fail(t->err, RKNNX_FILE_E_NOMEM, "nomem", -1, "out of memory");
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

int rknnx_file_lit_parse(ltree *t, const char *text, size_t len, int py, const char *what,
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

void rknnx_file_lit_free(ltree *t)
{
    free(t->nodes);
    t->nodes = NULL;
}

const lnode *rknnx_file_lit_node(const ltree *t, int32_t id)
{
    return (id >= 0 && (uint32_t)id < t->n) ? &t->nodes[id] : NULL;
}

/* Undo the escapes of a string node into dst (NUL-terminated); -1 when it does not fit or an
 * escape is malformed. */
int rknnx_file_lit_str(const ltree *t, const lnode *nd, char *dst, size_t cap)
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

int rknnx_file_lit_str_eq(const ltree *t, const lnode *nd, const char *s)
{
    char buf[RKNNX_FILE_NAME_LEN];
    return nd && nd->kind == L_STR && rknnx_file_lit_str(t, nd, buf, sizeof buf) == 0 &&
           strcmp(buf, s) == 0;
}

/* Member `key` of an object node, or NULL. */
const lnode *rknnx_file_lit_get(const ltree *t, const lnode *obj, const char *key)
{
    const lnode *c;
    if (!obj || obj->kind != L_OBJ) {
        return NULL;
    }
    for (c = rknnx_file_lit_node(t, obj->first); c; c = rknnx_file_lit_node(t, c->next)) {
        if (rknnx_file_lit_str_eq(t, rknnx_file_lit_node(t, c->key), key)) {
            return c;
        }
    }
    return NULL;
}

const lnode *rknnx_file_lit_at(const ltree *t, const lnode *arr, uint32_t k)
{
    const lnode *c;
    if (!arr || (arr->kind != L_ARR && arr->kind != L_OBJ) || k >= arr->count) {
        return NULL;
    }
    for (c = rknnx_file_lit_node(t, arr->first); c && k; c = rknnx_file_lit_node(t, c->next)) {
        k--;
    }
    return c;
}

int rknnx_file_lit_int(const lnode *nd, int64_t *v)
{
    if (!nd || nd->kind != L_INT) {
        return -1;
    }
    *v = nd->ival;
    return 0;
}

/* A list of non-negative ints fitting u32 into dims; -1 if it is not one. */
int rknnx_file_lit_dims(const ltree *t, const lnode *arr, uint32_t *n, uint32_t *dims)
{
    const lnode *c;
    uint32_t k = 0;
    if (!arr || arr->kind != L_ARR || arr->count > RKNNX_FILE_MAX_DIMS) {
        return -1;
    }
    for (c = rknnx_file_lit_node(t, arr->first); c; c = rknnx_file_lit_node(t, c->next)) {
        int64_t v;
        if (rknnx_file_lit_int(c, &v) || v < 0 || v > (int64_t)UINT32_MAX) {
            return -1;
        }
        dims[k++] = (uint32_t)v;
    }
    *n = k;
    return 0;
}

/* A list (or tuple) of 1 to cap numbers, as floats, into v; -1 if it is not one (empty, too
 * long, an element that is no int or float, or a finite value beyond float's range). */
int rknnx_file_lit_floats(const ltree *t, const lnode *arr, uint32_t cap, uint32_t *n, float *v)
{
    const lnode *c;
    uint32_t k = 0;
    if (!arr || arr->kind != L_ARR || arr->count == 0 || arr->count > cap) {
        return -1;
    }
    for (c = rknnx_file_lit_node(t, arr->first); c; c = rknnx_file_lit_node(t, c->next)) {
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
