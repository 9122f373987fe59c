/*
 * rknnfile/flatbuffer.c: the reader's one FlatBuffer table reader (internal.h), used by the
 * payloads of every container version (payload.c, payload_v1004.c).
 *
 * Every offset is checked before a byte is read: a table's soffset must land its vtable in
 * the buffer, the vtable's length must be even, at least 4 and inside the buffer, the table's
 * inline size must fit, a field's offset must lie inside its table, a reference must point
 * ahead into the buffer leaving room for a length, a vector's elements must fit.  Sizes are
 * compared by subtraction from the buffer length, so no addition can wrap.
 */
#include "internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int rknnx_file_fb_fail(const rknnx_file_fbuf *f, const char *table, const char *field, size_t at,
                       const char *fmt, ...)
{
    if (f->err) {
        va_list ap;
        rknnx_file_error *e = f->err;
        e->status = RKNNX_FILE_E_FORMAT;
        if (field) {
            snprintf(e->check, sizeof e->check, "flatbuffer.%s.%s", table, field);
        } else {
            snprintf(e->check, sizeof e->check, "flatbuffer.%s", table);
        }
        va_start(ap, fmt);
        vsnprintf(e->message, sizeof e->message, fmt, ap);
        va_end(ap);
        e->offset = (int64_t)(f->file_off + at);
    }
    return RKNNX_FILE_E_FORMAT;
}

int rknnx_file_fb_table(const rknnx_file_fbuf *f, size_t pos, const char *name, const char *what,
                        rknnx_file_ftab *t)
{
    int64_t vt;
    if (pos > f->n || f->n - pos < 4) {
        return rknnx_file_fb_fail(f, name, what, pos, "the %s table at offset %zu lies outside "
                                  "the %zu-byte FlatBuffer", name, pos, f->n);
    }
    vt = (int64_t)pos - (int64_t)(int32_t)rknnx_file_rd32(f->b + pos);
    if (vt < 0 || (uint64_t)vt > f->n || f->n - (size_t)vt < 4) {
        return rknnx_file_fb_fail(f, name, what, pos, "the vtable of the %s table at offset "
                                  "%zu points outside the FlatBuffer (to %lld)", name, pos,
                                  (long long)vt);
    }
    t->pos = pos;
    t->vt = (size_t)vt;
    t->vlen = rknnx_file_rd16(f->b + t->vt);
    t->tlen = rknnx_file_rd16(f->b + t->vt + 2);
    t->name = name;
    if (t->vlen < 4 || (t->vlen & 1u) || f->n - t->vt < t->vlen) {
        return rknnx_file_fb_fail(f, name, what, t->vt, "the vtable of the %s table has length "
                                  "%u, not an even length of at least 4 inside the FlatBuffer",
                                  name, t->vlen);
    }
    if (t->tlen < 4 || f->n - pos < t->tlen) {
        return rknnx_file_fb_fail(f, name, what, pos, "the %s table claims %u bytes, beyond "
                                  "the FlatBuffer", name, t->tlen);
    }
    return RKNNX_FILE_OK;
}

int rknnx_file_fb_root(const rknnx_file_fbuf *f, const char *ident, rknnx_file_ftab *root)
{
    if (f->n < 8) {
        return rknnx_file_fb_fail(f, "root", NULL, 0, "the %zu-byte FlatBuffer is too short "
                                  "for its root offset and identifier (8 bytes)", f->n);
    }
    if (memcmp(f->b + 4, ident, 4) != 0) {
        return rknnx_file_fb_fail(f, "identifier", NULL, 4, "the FlatBuffer's identifier is "
                                  "not '%s'", ident);
    }
    return rknnx_file_fb_table(f, rknnx_file_rd32(f->b), "Model", "root", root);
}

int rknnx_file_fb_field(const rknnx_file_fbuf *f, const rknnx_file_ftab *t, unsigned slot,
                        size_t width, const char *field, size_t *at)
{
    uint32_t o;
    *at = 0;
    if (4u + 2u * slot + 2u > t->vlen) {
        return RKNNX_FILE_OK;
    }
    o = rknnx_file_rd16(f->b + t->vt + 4 + 2 * slot);
    if (o == 0) {
        return RKNNX_FILE_OK;
    }
    if (o < 4 || o > t->tlen || t->tlen - o < width) {
        return rknnx_file_fb_fail(f, t->name, field, t->pos, "field %s (slot %u) of the %s "
                                  "table has offset %u, outside the table's %u bytes", field,
                                  slot, t->name, o, t->tlen);
    }
    *at = t->pos + o;
    return RKNNX_FILE_OK;
}

int rknnx_file_fb_u8(const rknnx_file_fbuf *f, const rknnx_file_ftab *t, unsigned slot,
                     const char *field, int32_t dflt, int32_t *out, int *present)
{
    size_t at;
    int rc = rknnx_file_fb_field(f, t, slot, 1, field, &at);
    *out = (rc == 0 && at) ? (int32_t)f->b[at] : dflt;
    if (present) {
        *present = rc == 0 && at;
    }
    return rc;
}

int rknnx_file_fb_u32(const rknnx_file_fbuf *f, const rknnx_file_ftab *t, unsigned slot,
                      const char *field, uint32_t dflt, uint32_t *out, int *present)
{
    size_t at;
    int rc = rknnx_file_fb_field(f, t, slot, 4, field, &at);
    *out = (rc == 0 && at) ? rknnx_file_rd32(f->b + at) : dflt;
    if (present) {
        *present = rc == 0 && at;
    }
    return rc;
}

int rknnx_file_fb_ref(const rknnx_file_fbuf *f, const rknnx_file_ftab *t, unsigned slot,
                      const char *field, size_t *target)
{
    size_t at;
    uint32_t off;
    int rc = rknnx_file_fb_field(f, t, slot, 4, field, &at);
    *target = 0;
    if (rc || !at) {
        return rc;
    }
    off = rknnx_file_rd32(f->b + at);
    if (off == 0 || off > f->n - at || f->n - at - off < 4) {
        return rknnx_file_fb_fail(f, t->name, field, at, "field %s (slot %u) of the %s table "
                                  "refers %u bytes ahead, outside the FlatBuffer", field, slot,
                                  t->name, off);
    }
    *target = at + off;
    return RKNNX_FILE_OK;
}

int rknnx_file_fb_string(const rknnx_file_fbuf *f, const rknnx_file_ftab *t, unsigned slot,
                         const char *field, const uint8_t **s, size_t *len)
{
    size_t target;
    uint32_t n;
    int rc = rknnx_file_fb_ref(f, t, slot, field, &target);
    *s = NULL;
    *len = 0;
    if (rc || !target) {
        return rc;
    }
    n = rknnx_file_rd32(f->b + target);
    if (n > f->n - target - 4) {
        return rknnx_file_fb_fail(f, t->name, field, target, "string %s (slot %u) of the %s "
                                  "table has length %u, beyond the FlatBuffer", field, slot,
                                  t->name, n);
    }
    *s = f->b + target + 4;
    *len = n;
    return RKNNX_FILE_OK;
}

int rknnx_file_fb_str(const rknnx_file_fbuf *f, const rknnx_file_ftab *t, unsigned slot,
                      const char *field, char *dst, size_t cap)
{
    const uint8_t *s;
    size_t n;
    int rc = rknnx_file_fb_string(f, t, slot, field, &s, &n);
    if (rc) {
        return rc;
    }
    dst[0] = '\0';
    if (s) {
        while (n && s[n - 1] == '\0') {
            n--;
        }
        if (rknnx_file_copy_span(dst, cap, s, n) != 0) {
            return rknnx_file_fb_fail(f, t->name, field, (size_t)(s - f->b), "string %s of "
                                      "the %s table has %zu bytes, more than the %zu this "
                                      "reader keeps", field, t->name, n, cap - 1);
        }
    }
    return RKNNX_FILE_OK;
}

int rknnx_file_fb_vector(const rknnx_file_fbuf *f, const rknnx_file_ftab *t, unsigned slot,
                         size_t elem, const char *field, size_t *pos, uint32_t *count)
{
    size_t target;
    uint32_t n;
    int rc = rknnx_file_fb_ref(f, t, slot, field, &target);
    *pos = 0;
    *count = 0;
    if (rc || !target) {
        return rc;
    }
    n = rknnx_file_rd32(f->b + target);
    if (n > (f->n - target - 4) / elem) {
        return rknnx_file_fb_fail(f, t->name, field, target, "vector %s (slot %u) of the %s "
                                  "table has %u elements of %zu bytes, beyond the FlatBuffer",
                                  field, slot, t->name, n, elem);
    }
    *pos = target + 4;
    *count = n;
    return RKNNX_FILE_OK;
}

int rknnx_file_fb_vector_table(const rknnx_file_fbuf *f, size_t pos, uint32_t k,
                               const char *name, const char *field, rknnx_file_ftab *t)
{
    size_t at = pos + 4u * (size_t)k;
    uint32_t off = rknnx_file_rd32(f->b + at);
    if (off > f->n - at) {
        return rknnx_file_fb_fail(f, name, field, at, "element %u of %s refers outside the "
                                  "FlatBuffer", k, field);
    }
    return rknnx_file_fb_table(f, at + off, name, field, t);
}

int rknnx_file_fb_dims(const rknnx_file_fbuf *f, const rknnx_file_ftab *t, unsigned slot,
                       const char *field, const char *tensor, uint32_t *n, uint32_t *dims)
{
    size_t pos;
    uint32_t cnt, k;
    int rc = rknnx_file_fb_vector(f, t, slot, 4, field, &pos, &cnt);
    *n = 0;
    if (rc) {
        return rc;
    }
    if (cnt > RKNNX_FILE_MAX_DIMS) {
        return rknnx_file_fb_fail(f, t->name, field, pos, "tensor '%s' has %u %s dims, more "
                                  "than %d", tensor, cnt, field, RKNNX_FILE_MAX_DIMS);
    }
    for (k = 0; k < cnt; k++) {
        dims[k] = rknnx_file_rd32(f->b + pos + 4 * k);
    }
    *n = cnt;
    return RKNNX_FILE_OK;
}

int rknnx_file_fb_index_vector(const rknnx_file_fbuf *f, const rknnx_file_ftab *t,
                               unsigned slot, const char *field, uint32_t limit, size_t *pos,
                               uint32_t *count)
{
    uint32_t k;
    int rc = rknnx_file_fb_vector(f, t, slot, 4, field, pos, count);
    if (rc) {
        return rc;
    }
    for (k = 0; k < *count; k++) {
        uint32_t ix = rknnx_file_rd32(f->b + *pos + 4 * k);
        if (ix >= limit) {
            return rknnx_file_fb_fail(f, t->name, field, *pos + 4 * k, "%s %s[%u] = %u, but "
                                      "the %s has %u tensors", t->name, field, k, ix, t->name,
                                      limit);
        }
    }
    return RKNNX_FILE_OK;
}
