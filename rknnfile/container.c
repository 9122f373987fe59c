/*
 * rknnfile/container.c: rknnx_file_read (rknn_file.h), the container every `.rknn` file has
 * (docs/rknn-file-format.md, "The container"):
 *
 *   "RKNN" | 4 bytes | u64 version | u64 payload length L | (version 1: nothing more; others:
 *   40 bytes to a 64-byte header) | L payload bytes | u64 JSON length J | J bytes of JSON
 *
 * The framing is checked here; the payload goes to its reader (payload.c for versions 1-6,
 * payload_v1004.c for 0x1004); the JSON tail is read here: for versions 1-6 it must agree
 * with the FlatBuffer's input and output counts and fills what the FlatBuffer left empty,
 * for 0x1004 it is where the signature (names, logical shapes, dtypes) is, read first.
 */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef rknnx_file_ltree ltree;
typedef rknnx_file_lnode lnode;

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

/* ---- the JSON tail ---------------------------------------------------------------------- */

static const lnode *member(const ltree *j, const lnode *obj, const char *key)
{
    return rknnx_file_lit_get(j, obj, key);
}

static int int_member(const ltree *j, const lnode *obj, const char *key, int64_t *v)
{
    return rknnx_file_lit_int(member(j, obj, key), v);
}

/* The tail's I/O list: graph[] links "input"/"output" #index to a norm_tensor's id. */
static const lnode *tail_find(const ltree *j, const char *side, uint32_t index)
{
    const lnode *root = &j->nodes[0];
    const lnode *graph = member(j, root, "graph"), *norm = member(j, root, "norm_tensor");
    const lnode *c, *t;
    if (!graph || graph->kind != RKNNX_FILE_L_ARR || !norm || norm->kind != RKNNX_FILE_L_ARR) {
        return NULL;
    }
    for (c = rknnx_file_lit_node(j, graph->first); c; c = rknnx_file_lit_node(j, c->next)) {
        int64_t li, ri, id;
        if (!rknnx_file_lit_str_eq(j, member(j, c, "left"), side) ||
            int_member(j, c, "left_tensor_id", &li) || li != (int64_t)index ||
            int_member(j, c, "right_tensor_id", &ri)) {
            continue;
        }
        for (t = rknnx_file_lit_node(j, norm->first); t; t = rknnx_file_lit_node(j, t->next)) {
            if (!int_member(j, t, "tensor_id", &id) && id == ri) {
                return t;
            }
        }
        return NULL;
    }
    return NULL;
}

/* Container 0x1004: input or output i from its norm_tensor (name, logical shape, dtype). */
static int tail_tensor(ltree *j, rknnx_file_model *m, int is_in, uint32_t i)
{
    rknnx_file_tensor *t = is_in ? &m->inputs[i] : &m->outputs[i];
    const char *side = is_in ? "input" : "output";
    const lnode *nt = tail_find(j, side, i), *dt;
    char dtype[32] = "";
    if (!nt) {
        return rknnx_file_lit_fail(j, 0, "graph", "the JSON tail's graph links no norm_tensor "
                                   "to %s %u", side, i);
    }
    t->index = i;
    t->role = is_in ? RKNNX_FILE_INPUT : RKNNX_FILE_OUTPUT;
    t->fmt = t->native_fmt = t->qnt_type = RKNNX_FILE_UNKNOWN;
    t->file_dtype_code = t->file_layout_code = RKNNX_FILE_UNKNOWN;
    if (rknnx_file_lit_str(j, member(j, nt, "url"), t->name, sizeof t->name) != 0 ||
        rknnx_file_lit_dims(j, member(j, nt, "size"), &t->n_shape, t->shape) != 0) {
        return rknnx_file_lit_fail(j, 0, "norm_tensor", "the JSON tail's norm_tensor for %s %u "
                                   "has no usable url (name) or size (shape)", side, i);
    }
    dt = member(j, nt, "dtype");
    /* dtype.vx_type: "int8", ...; empty in the rk2118 float16 file (then unknown). */
    if (rknnx_file_lit_str(j, member(j, dt, "vx_type"), dtype, sizeof dtype) != 0) {
        dtype[0] = '\0';
    }
    t->type = dtype[0] ? rknnx_file_type_of_name(dtype) : RKNNX_FILE_UNKNOWN;
    if (dtype[0] && t->type == RKNNX_FILE_UNKNOWN) {
        return rknnx_file_lit_fail(j, 0, "norm_tensor", "the JSON tail's norm_tensor '%s' has "
                                   "dtype '%s', which this reader does not know", t->name,
                                   dtype);
    }
    rknnx_file_set_str(t->npu_dtype, sizeof t->npu_dtype, dtype);
    rknnx_file_lit_str(j, member(j, dt, "qnt_method"), t->qnt_method, sizeof t->qnt_method);
    snprintf(t->layout, sizeof t->layout, "%s", t->n_shape == 4 ? "NCHW" : "");
    /* The attr view's dims as stored until the payload says its layout. */
    rknnx_file_set_attr_view(t, 0);
    t->fmt = RKNNX_FILE_UNKNOWN;
    t->known = RKNNX_FILE_KNOWN_SHAPE;
    return RKNNX_FILE_OK;
}

static int read_tail(const char *text, size_t len, int64_t file_off, rknnx_file_model *m,
                     int fill_io, rknnx_file_error *err)
{
    ltree j;
    const lnode *root, *v;
    int64_t n_in = 0, n_out = 0;
    uint32_t k;
    int rc = rknnx_file_lit_parse(&j, text, len, 0, "json", file_off, err);
    if (rc) {
        goto out;
    }
    root = &j.nodes[0];
    if (root->kind != RKNNX_FILE_L_OBJ) {
        rc = rknnx_file_lit_fail(&j, 0, "type", "the JSON tail is not an object");
        goto out;
    }
    if (int_member(&j, root, "input_num", &n_in) || int_member(&j, root, "output_num", &n_out) ||
        n_in < 0 || n_out < 0 || n_in > 4096 || n_out > 4096) {
        rc = rknnx_file_lit_fail(&j, 0, "input_num", "the JSON tail has no usable "
                                 "input_num/output_num");
        goto out;
    }
    v = member(&j, root, "version");
    if (v && !m->toolkit_version[0]) {
        rknnx_file_lit_str(&j, v, m->toolkit_version, sizeof m->toolkit_version);
    }
    v = rknnx_file_lit_at(&j, member(&j, root, "target_platform"), 0);
    if (v && !m->target_platform[0]) {
        rknnx_file_lit_str(&j, v, m->target_platform, sizeof m->target_platform);
    }
    v = member(&j, root, "network_platform");
    if (v && !m->framework[0]) {
        rknnx_file_lit_str(&j, v, m->framework, sizeof m->framework);
    }
    if (!fill_io) {
        if ((uint32_t)n_in != m->n_inputs || (uint32_t)n_out != m->n_outputs) {
            rc = rknnx_file_lit_fail(&j, 0, "input_num", "the JSON tail says %lld inputs and "
                                     "%lld outputs, the FlatBuffer graph %u and %u",
                                     (long long)n_in, (long long)n_out, m->n_inputs,
                                     m->n_outputs);
        }
        goto out;
    }

    /* Container 0x1004: the tail is where the signature is. */
    if (n_in == 0 || n_out == 0) {
        rc = rknnx_file_lit_fail(&j, 0, "input_num", "the JSON tail says %lld inputs and %lld "
                                 "outputs; a model needs at least one of each",
                                 (long long)n_in, (long long)n_out);
        goto out;
    }
    m->inputs = calloc((size_t)n_in, sizeof *m->inputs);
    m->outputs = calloc((size_t)n_out, sizeof *m->outputs);
    if (!m->inputs || !m->outputs) {
        rc = rknnx_file_fail(err, RKNNX_FILE_E_NOMEM, "nomem", -1, "out of memory");
        goto out;
    }
    m->n_inputs = (uint32_t)n_in;
    m->n_outputs = (uint32_t)n_out;
    for (k = 0; k < m->n_inputs + m->n_outputs && rc == 0; k++) {
        int is_in = k < m->n_inputs;
        rc = tail_tensor(&j, m, is_in, is_in ? k : k - m->n_inputs);
    }
out:
    rknnx_file_lit_free(&j);
    return rc;
}

/* ---- the container ---------------------------------------------------------------------- */

/* Check the framing; on success *ver, *hsize, *plen, *jlen describe the file. */
static int read_framing(const uint8_t *b, size_t size, uint64_t *ver, uint32_t *hsize,
                        uint64_t *plen, uint64_t *jlen, rknnx_file_error *err)
{
    uint64_t rest;
    if (size >= 8 && memcmp(b, "CYPTRKNN", 8) == 0) {
        return rknnx_file_fail(err, RKNNX_FILE_E_ENCRYPTED, "encrypted", 0, "the model is "
                               "encrypted (magic 'CYPTRKNN'): only the vendor runtime can "
                               "read it");
    }
    if (size < 4 || memcmp(b, "RKNN", 4) != 0) {
        return rknnx_file_fail(err, RKNNX_FILE_E_FORMAT, "magic", 0, "not an RKNN model: the "
                               "file does not start with 'RKNN'%s",
                               size < 4 ? " (it has fewer than 4 bytes)" : "");
    }
    if (size < 24) {
        return rknnx_file_fail(err, RKNNX_FILE_E_FORMAT, "header_length", 0, "the file has %zu "
                               "bytes, fewer than the 24 of the smallest RKNN header", size);
    }
    *ver = rknnx_file_rd64(b + 8);
    if (!(*ver >= 1 && *ver <= 6) && !(*ver >= 0x1001 && *ver <= 0x1004)) {
        return rknnx_file_fail(err, RKNNX_FILE_E_UNSUPPORTED, "version", 8, "container version "
                               "%llu (0x%llx) is not one this reader knows (1-6, "
                               "0x1001-0x1004)", (unsigned long long)*ver,
                               (unsigned long long)*ver);
    }
    *hsize = *ver == 1 ? 24u : 64u;
    if (size < (size_t)*hsize + 8) {
        return rknnx_file_fail(err, RKNNX_FILE_E_FORMAT, "header_length", 0, "the file has %zu "
                               "bytes, fewer than its %u-byte header and the 8-byte JSON "
                               "length", size, *hsize);
    }
    *plen = rknnx_file_rd64(b + 16);
    rest = (uint64_t)size - *hsize - 8;
    if (*plen > rest) {
        return rknnx_file_fail(err, RKNNX_FILE_E_FORMAT, "payload_length", 16, "the header says "
                               "the payload has %llu bytes, but the file has only %llu after "
                               "the header (truncated?)", (unsigned long long)*plen,
                               (unsigned long long)rest);
    }
    if (*plen == 0) {
        return rknnx_file_fail(err, RKNNX_FILE_E_FORMAT, "payload_length", 16, "the header says "
                               "the payload is empty");
    }
    *jlen = rknnx_file_rd64(b + *hsize + *plen);
    if (*jlen > rest - *plen) {
        return rknnx_file_fail(err, RKNNX_FILE_E_FORMAT, "json_length",
                               (int64_t)(*hsize + *plen), "the JSON tail claims %llu bytes, but "
                               "the file has only %llu after it (truncated?)",
                               (unsigned long long)*jlen, (unsigned long long)(rest - *plen));
    }
    if (*jlen == 0) {
        return rknnx_file_fail(err, RKNNX_FILE_E_FORMAT, "json_length",
                               (int64_t)(*hsize + *plen), "the JSON tail is empty");
    }
    /* Bytes after the JSON tail: none in any file seen; they are ignored. */
    return RKNNX_FILE_OK;
}

int rknnx_file_read(const void *data, size_t size, rknnx_file_model **out, rknnx_file_error *err)
{
    const uint8_t *b = data;
    rknnx_file_model *m;
    uint64_t ver = 0, plen = 0, jlen = 0;
    uint32_t hsize = 0;
    int rc;
    if (out) {
        *out = NULL;
    }
    if (err) {
        memset(err, 0, sizeof *err);
        err->offset = -1;
    }
    if (!out || !data) {
        return rknnx_file_fail(err, RKNNX_FILE_E_ARGUMENT, "argument", -1, "no output pointer "
                               "or no data");
    }
    if ((rc = read_framing(b, size, &ver, &hsize, &plen, &jlen, err)) != 0) {
        return rc;
    }
    m = calloc(1, sizeof *m);
    if (!m) {
        return rknnx_file_fail(err, RKNNX_FILE_E_NOMEM, "nomem", -1, "out of memory");
    }
    m->container_version = ver;
    m->header_size = hsize;
    m->payload_offset = hsize;
    m->payload_size = plen;
    m->json_offset = hsize + plen + 8;
    m->json_size = jlen;
    m->file_size = size;

    if (ver <= 6) {
        rc = rknnx_file_read_payload(b + hsize, (size_t)plen, hsize, m, err);
        if (rc == 0) {
            rc = read_tail((const char *)b + m->json_offset, (size_t)jlen,
                           (int64_t)m->json_offset, m, 0, err);
        }
    } else {
        rc = read_tail((const char *)b + m->json_offset, (size_t)jlen, (int64_t)m->json_offset,
                       m, 1, err);
        /* 0x1001-0x1003: no file seen; read as the 0x1004 payload they precede */
        if (rc == 0) {
            rc = rknnx_file_read_payload_v1004(b + hsize, (size_t)plen, hsize, m, err);
        }
    }
    if (rc == 0) {
        rknnx_file_decide_chip(m);
    }
    if (rc) {
        rknnx_file_free(m);
        return rc;
    }
    *out = m;
    return RKNNX_FILE_OK;
}
