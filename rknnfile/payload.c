/*
 * rknnfile/payload.c: the payload of container versions 1-6 (docs/rknn-file-format.md), a
 * FlatBuffer whose root table is the Model: its graph's inputs and outputs (Tensor tables),
 * the I/O JSON strings (the compiler's NPU-side dtype and layout), the memory plan, the
 * custom operators, and the generator text (a Python literal: the dynamic shape sets and
 * the inputs' mean/std).  The views derived here are the ones the file states and every
 * recorded runtime reports as they are; what a runtime computes beyond them (strides,
 * padded sizes) is the emulator's.
 */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef rknnx_file_fbuf fbuf;
typedef rknnx_file_ftab ftab;
typedef rknnx_file_ltree ltree;
typedef rknnx_file_lnode lnode;
enum { L_ARR = RKNNX_FILE_L_ARR, L_OBJ = RKNNX_FILE_L_OBJ };

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
    if (t->file_layout_code == 64 && n_nat == 5 && t->role == RKNNX_FILE_INPUT &&
        t->fmt == RKNNX_FILE_F_NHWC) {
        rknnx_file_set_native_view(t, RKNNX_FILE_F_NHWC, t->dims, t->n_dims, 0);
    } else if (t->file_layout_code == 64 && n_nat == 5) {
        uint32_t d[5];
        uint64_t plane;
        memcpy(d, nat, sizeof d);
        plane = (uint64_t)d[0] * d[2] * d[3] * d[4] * rknnx_file_type_size(t->type);
        if (container_version == 2 && t->role == RKNNX_FILE_OUTPUT && plane &&
            t->file_planned_size % plane == 0 && t->file_planned_size / plane > d[1]) {
            d[1] = (uint32_t)(t->file_planned_size / plane);
        }
        rknnx_file_set_native_view(t, RKNNX_FILE_F_NC1HWC2, d, 5, 0);
    } else if (t->file_layout_code == 2 && n_nat == 4) {
        rknnx_file_set_native_view(t, RKNNX_FILE_F_NCHW, nat, 4, 0);
    } else {
        rknnx_file_set_native_view(t, t->fmt, t->dims, t->n_dims, 0);
    }
}

/* The I/O JSON (Model slots 12 / 13): {"name": {"dtype": ..., "layout": ...}, ...}. */
static int read_io_json(const fbuf *f, const ftab *root, unsigned slot, const char *field,
                        ltree *tree, int *present)
{
    const uint8_t *s;
    size_t n;
    int rc = rknnx_file_fb_string(f, root, slot, field, &s, &n);
    *present = 0;
    memset(tree, 0, sizeof *tree);
    if (rc || !s) {
        return rc;
    }
    rc = rknnx_file_lit_parse(tree, (const char *)s, n, 0, field,
                              (int64_t)(f->file_off + (size_t)(s - f->b)), f->err);
    if (rc) {
        return rc;
    }
    if (tree->nodes[0].kind != L_OBJ) {
        return rknnx_file_lit_fail(tree, 0, "type", "the %s text is not a JSON object", field);
    }
    *present = 1;
    return RKNNX_FILE_OK;
}

static int read_tensor(const fbuf *f, const ftab *tt, rknnx_file_model *m, rknnx_file_tensor *t,
                       int role, uint32_t index, const ltree *io, int io_present)
{
    uint32_t k, nat[RKNNX_FILE_MAX_DIMS], n_nat;
    int32_t code;
    size_t spos, zpos;
    uint32_t ns, nz;
    int rc;
    memset(t, 0, sizeof *t);
    t->index = index;
    t->role = role;
    t->fmt = t->native_fmt = t->qnt_type = RKNNX_FILE_UNKNOWN;

    if ((rc = rknnx_file_fb_str(f, tt, 5, "name", t->name, sizeof t->name)) != 0 ||
        (rc = rknnx_file_fb_u8(f, tt, 0, "dtype", RKNNX_FILE_UNKNOWN, &t->file_dtype_code,
                               NULL)) != 0 ||
        (rc = rknnx_file_fb_u8(f, tt, 1, "layout", RKNNX_FILE_UNKNOWN, &t->file_layout_code,
                               NULL)) != 0 ||
        (rc = rknnx_file_fb_u32(f, tt, 12, "planned_size", 0, &t->file_planned_size,
                                NULL)) != 0 ||
        (rc = rknnx_file_fb_u8(f, tt, 2, "kind", 0, &code, NULL)) != 0 ||
        (rc = rknnx_file_fb_dims(f, tt, 4, "shape", t->name, &t->n_shape, t->shape)) != 0 ||
        (rc = rknnx_file_fb_dims(f, tt, 3, "native_shape", t->name, &n_nat, nat)) != 0) {
        return rc;
    }

    /* The compiler's NPU-side dtype and layout, from the I/O JSON. */
    if (io_present) {
        const lnode *e = rknnx_file_lit_get(io, &io->nodes[0], t->name);
        const lnode *d = rknnx_file_lit_get(io, e, "dtype");
        const lnode *l = rknnx_file_lit_get(io, e, "layout");
        if (d && rknnx_file_lit_str(io, d, t->npu_dtype, sizeof t->npu_dtype) != 0) {
            t->npu_dtype[0] = 0;
        }
        if (l && rknnx_file_lit_str(io, l, t->npu_layout, sizeof t->npu_layout) != 0) {
            t->npu_layout[0] = 0;
        }
    }
    t->type = rknnx_file_type_of_code(t->file_dtype_code);
    if (t->type == RKNNX_FILE_UNKNOWN && t->npu_dtype[0]) {
        t->type = rknnx_file_type_of_name(t->npu_dtype);
    }
    if (t->type == RKNNX_FILE_UNKNOWN) {
        return rknnx_file_fb_fail(f, "Tensor", "dtype", tt->pos, "tensor '%s' has dtype code "
                                  "%d, which this reader does not know", t->name,
                                  t->file_dtype_code);
    }
    snprintf(t->layout, sizeof t->layout, "%s", t->n_shape == 4 ? "NCHW" : "");
    t->known = RKNNX_FILE_KNOWN_SHAPE;
    rknnx_file_set_attr_view(t, strcmp(t->npu_layout, "NHWC") == 0);
    /* Container 1 (toolkit 1.1.x): the I/O JSON names the type the user hands over and
     * gets back, not the NPU's: the rknpu2 c28b080 multiple_input_demo files say "float32"
     * (RK3588) or "uint8" (RK3566) inputs and a "float32" output over int8 tensors, and
     * runtimes 1.4.0, 1.5.2 and 1.6.0 report those types in INPUT_ATTR / OUTPUT_ATTR, sizes
     * in them (65536 bytes for a 16384-element input), and the int8 tensors' in the NATIVE
     * attributes.  Containers 2 and 6 name the tensor's own type there. */
    if (m->container_version == 1 && t->npu_dtype[0]) {
        int32_t user = rknnx_file_type_of_name(t->npu_dtype);
        if (user != RKNNX_FILE_UNKNOWN && rknnx_file_type_size(user)) {
            t->attr_type = user;
            t->size = (uint32_t)((uint64_t)t->n_elems * rknnx_file_type_size(user) > UINT32_MAX
                                 ? UINT32_MAX
                                 : (uint64_t)t->n_elems * rknnx_file_type_size(user));
        }
    }
    derive_native(t, nat, n_nat, m->container_version);

    /* Quantization: method (slot 6), scale (slot 10), zero point (slot 11). */
    if ((rc = rknnx_file_fb_str(f, tt, 6, "qnt_method", t->qnt_method,
                                sizeof t->qnt_method)) != 0 ||
        (rc = rknnx_file_fb_vector(f, tt, 10, 4, "scale", &spos, &ns)) != 0 ||
        (rc = rknnx_file_fb_vector(f, tt, 11, 4, "zero_point", &zpos, &nz)) != 0) {
        return rc;
    }
    if (ns != nz) {
        return rknnx_file_fb_fail(f, "Tensor", "zero_point", zpos, "tensor '%s' has %u scales "
                                  "but %u zero points", t->name, ns, nz);
    }
    t->qnt_type = RKNNX_FILE_Q_AFFINE;
    if (ns > 0) {
        float *sc = malloc((size_t)ns * sizeof *sc);
        int32_t *zp = malloc((size_t)ns * sizeof *zp);
        if (!sc || !zp) {
            free(sc);
            free(zp);
            return rknnx_file_fail(f->err, RKNNX_FILE_E_NOMEM, "nomem", -1, "out of memory");
        }
        for (k = 0; k < ns; k++) {
            sc[k] = rknnx_file_rdf32(f->b + spos + 4 * k);
            zp[k] = (int32_t)rknnx_file_rd32(f->b + zpos + 4 * k);
        }
        rc = rknnx_file_set_qnt(t, ns, sc, zp, f->err);
        free(sc);
        free(zp);
        if (rc) {
            return rc;
        }
        t->quantized = 1;
    } else {
        /* No parameters (a float tensor): the runtimes report AFFINE, zp 0, scale 1
         * (RK3566/RK3588 on 1.5.2/1.6.0, e.g. fp16_net_rk3588). */
        t->scale = 1.0f;
        t->zp = 0;
    }
    t->known |= RKNNX_FILE_KNOWN_QNT;
    return RKNNX_FILE_OK;
}

/* "<toolkit>(compiler version: <compiler>)" -> the two versions. */
static void split_versions(const char *s, rknnx_file_model *m)
{
    const char *key = "(compiler version: ";
    const char *p = strstr(s, key);
    if (!p) {
        rknnx_file_set_str(m->toolkit_version, sizeof m->toolkit_version, s);
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
    const lnode *ds = rknnx_file_lit_get(gen, &gen->nodes[0], "dynamic_shapes");
    uint32_t i, s, n_sets = 0;
    if (!ds || ds->kind != L_OBJ || ds->count == 0) {
        return RKNNX_FILE_OK;
    }
    for (i = 0; i < m->n_inputs; i++) {
        const lnode *l = rknnx_file_lit_get(gen, ds, m->inputs[i].name);
        if (!l || l->kind != L_ARR) {
            return rknnx_file_fail(err, RKNNX_FILE_E_FORMAT, "generator.dynamic_shapes", -1,
                                   "the generator's dynamic_shapes has no list for input '%s'",
                                   m->inputs[i].name);
        }
        if (i == 0) {
            n_sets = l->count;
        } else if (l->count != n_sets) {
            return rknnx_file_fail(err, RKNNX_FILE_E_FORMAT, "generator.dynamic_shapes", -1,
                                   "the generator's dynamic_shapes lists %u shapes for input "
                                   "'%s' but %u for input '%s'", l->count, m->inputs[i].name,
                                   n_sets, m->inputs[0].name);
        }
    }
    if (n_sets == 0 || m->n_inputs == 0) {
        return RKNNX_FILE_OK;
    }
    if (n_sets > 4096) {
        return rknnx_file_fail(err, RKNNX_FILE_E_FORMAT, "generator.dynamic_shapes", -1,
                               "the generator's dynamic_shapes lists %u shape sets, more than "
                               "4096", n_sets);
    }
    m->shape_sets = calloc((size_t)n_sets * m->n_inputs, sizeof *m->shape_sets);
    if (!m->shape_sets) {
        return rknnx_file_fail(err, RKNNX_FILE_E_NOMEM, "nomem", -1, "out of memory");
    }
    m->n_shape_sets = n_sets;
    for (i = 0; i < m->n_inputs; i++) {
        const rknnx_file_tensor *t = &m->inputs[i];
        const lnode *l = rknnx_file_lit_get(gen, ds, t->name);
        for (s = 0; s < n_sets; s++) {
            rknnx_file_shape *sh = &m->shape_sets[(size_t)s * m->n_inputs + i];
            uint32_t nd, d[RKNNX_FILE_MAX_DIMS];
            if (rknnx_file_lit_dims(gen, rknnx_file_lit_at(gen, l, s), &nd, d) != 0 ||
                nd != t->n_shape) {
                return rknnx_file_fail(err, RKNNX_FILE_E_FORMAT, "generator.dynamic_shapes", -1,
                                       "shape set %u of input '%s' in the generator's "
                                       "dynamic_shapes is not a list of %u non-negative "
                                       "integers", s, t->name, t->n_shape);
            }
            sh->n_dims = nd;
            if (t->fmt == RKNNX_FILE_F_NHWC && nd == 4) {
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
    const lnode *attrs = rknnx_file_lit_get(gen, &gen->nodes[0], "attrs");
    uint32_t i;
    if (!attrs || attrs->kind != L_OBJ) {
        return;
    }
    for (i = 0; i < m->n_inputs; i++) {
        rknnx_file_tensor *t = &m->inputs[i];
        const lnode *a = rknnx_file_lit_get(gen, attrs, t->name);
        if (rknnx_file_lit_floats(gen, rknnx_file_lit_get(gen, a, "mean"), RKNNX_FILE_MAX_NORM,
                                  &t->n_mean, t->mean) == 0 &&
            rknnx_file_lit_floats(gen, rknnx_file_lit_get(gen, a, "std"), RKNNX_FILE_MAX_NORM,
                                  &t->n_std, t->std) == 0) {
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
    int rc = rknnx_file_fb_string(f, root, 21, "custom_ops", &s, &n);
    if (rc || !s || n == 0) {
        return rc;
    }
    if ((rc = rknnx_file_fb_vector(f, g, 1, 4, "nodes", &npos, &n_nodes)) != 0) {
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
        if (rknnx_file_copy_span(type, sizeof type, s + start, len) != 0) {
            return rknnx_file_fb_fail(f, "Model", "custom_ops", (size_t)(s - f->b), "a custom "
                                      "op type of %zu bytes, more than %d", len,
                                      RKNNX_FILE_STR_LEN - 1);
        }
        for (k = 0; k <= n_nodes; k++) {
            ftab nd;
            const uint8_t *ts = NULL, *ns = NULL;
            size_t tl = 0, nl = 0;
            rknnx_file_custom_op *op;
            if (k < n_nodes) {
                if ((rc = rknnx_file_fb_vector_table(f, npos, k, "Node", "nodes", &nd)) != 0 ||
                    (rc = rknnx_file_fb_string(f, &nd, 1, "type", &ts, &tl)) != 0 ||
                    (rc = rknnx_file_fb_string(f, &nd, 2, "name", &ns, &nl)) != 0) {
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
                return rknnx_file_fail(f->err, RKNNX_FILE_E_NOMEM, "nomem", -1, "out of memory");
            }
            m->custom_ops = op;
            op = &m->custom_ops[m->n_custom_ops++];
            memset(op, 0, sizeof *op);
            rknnx_file_set_str(op->type, sizeof op->type, type);
            if (ns) {
                const uint8_t *colon = memchr(ns, ':', nl);
                const uint8_t *nm = colon ? colon + 1 : ns;
                size_t ml = nl - (size_t)(nm - ns);
                if (rknnx_file_copy_span(op->name, sizeof op->name, nm, ml) != 0) {
                    return rknnx_file_fb_fail(f, "Node", "name", (size_t)(ns - f->b), "a node "
                                              "name of %zu bytes, more than %d", ml,
                                              RKNNX_FILE_NAME_LEN - 1);
                }
            }
            found = 1;
        }
        if (m->n_custom_ops > 4096) {
            return rknnx_file_fb_fail(f, "Model", "custom_ops", (size_t)(s - f->b), "more than "
                                      "4096 custom operators");
        }
    }
    return RKNNX_FILE_OK;
}

/* Model slot 20: the data blobs, each a table whose field 0 is a byte vector; a constant
 * tensor's slot 18 is the index of its blob (0, an empty table, for tensors without one).
 * A toolkit-2.5.0 file built with remove_weight=True keeps every constant's blob slot but
 * leaves the blobs of the model's own weights empty (tiny_rk3588: W's 576 bytes and the
 * two 1024-byte compiler constants out, B's 256 kept; the other blobs, the register
 * commands and the tasks, as in the full file), while slot 19 still gives the full plan.
 * Runtimes 1.5.2 and 1.6.0 then report as MEM_SIZE total_weight_size the sum of the
 * constant blobs the file holds, each rounded up to 64 bytes (RK3588 / RK3566: tiny 256 /
 * 128, cls_img and multi_io 512 / 256); *kept is that sum, *removed the empty ones. */
static int read_weight_blobs(const fbuf *f, const ftab *root, size_t tpos, uint32_t n_tensors,
                             uint64_t *kept, uint32_t *removed)
{
    size_t bpos;
    uint32_t n_blobs, k;
    int rc;
    *kept = 0;
    *removed = 0;
    if ((rc = rknnx_file_fb_vector(f, root, 20, 4, "blobs", &bpos, &n_blobs)) != 0) return rc;
    for (k = 0; k < n_tensors && n_blobs; k++) {
        ftab tt, bt;
        int32_t kind;
        uint32_t ix, len;
        int present;
        size_t dpos;
        if ((rc = rknnx_file_fb_vector_table(f, tpos, k, "Tensor", "tensors", &tt)) != 0 ||
            (rc = rknnx_file_fb_u8(f, &tt, 2, "kind", 0, &kind, NULL)) != 0)
            return rc;
        if (kind != 4)
            continue;
        if ((rc = rknnx_file_fb_u32(f, &tt, 18, "blob", 0, &ix, &present)) != 0) return rc;
        if (!present)
            continue;
        if (ix >= n_blobs)
            return rknnx_file_fb_fail(f, "Tensor", "blob", tt.pos, "constant tensor %u names "
                                      "blob %u of %u", k, ix, n_blobs);
        if ((rc = rknnx_file_fb_vector_table(f, bpos, ix, "Blob", "blobs", &bt)) != 0 ||
            (rc = rknnx_file_fb_vector(f, &bt, 0, 1, "data", &dpos, &len)) != 0)
            return rc;
        if (len == 0)
            (*removed)++;
        else
            *kept += ((uint64_t)len + 63) / 64 * 64;
    }
    return RKNNX_FILE_OK;
}

/* A file without slot 19 (containers 1 and 2): the memory plan from the tensors, as the
 * runtimes size it.  Internal: the end of the furthest feature tensor (inputs, outputs and
 * internal tensors: Tensor slot 13 its offset in the internal memory, slot 12 its planned
 * bytes); weight: the constants' planned bytes summed.  On every container 6 file of the
 * corpus the internal end equals slot 19's internal size; on the container 2 and 1 files
 * runtimes 1.4.0, 1.5.2 and 1.6.0 report both (tk2 2c2d03d multiple_input_demo RK3588 5248 /
 * 1114112, RK3566 6528 / 1114112; rknpu2 c28b080 RK356X 1280 / 1376256, its RK3588 file
 * 3328 / 3211264 on 1.4.0, 1.5.2 and 1.6.0 saying 2816 for its weight). */
static int derive_mem_plan(const fbuf *f, size_t tpos, uint32_t n_tensors, uint64_t *weight,
                           uint64_t *internal)
{
    uint32_t k;
    int rc;
    *weight = *internal = 0;
    for (k = 0; k < n_tensors; k++) {
        ftab tt;
        int32_t kind;
        uint32_t planned, off;
        if ((rc = rknnx_file_fb_vector_table(f, tpos, k, "Tensor", "tensors", &tt)) != 0 ||
            (rc = rknnx_file_fb_u8(f, &tt, 2, "kind", 0, &kind, NULL)) != 0 ||
            (rc = rknnx_file_fb_u32(f, &tt, 12, "planned_size", 0, &planned, NULL)) != 0 ||
            (rc = rknnx_file_fb_u32(f, &tt, 13, "mem_offset", 0, &off, NULL)) != 0)
            return rc;
        if (kind == 4)
            *weight += planned;
        else if (kind >= 1 && kind <= 3 && (uint64_t)off + planned > *internal)
            *internal = (uint64_t)off + planned;
    }
    return RKNNX_FILE_OK;
}

int rknnx_file_read_payload(const uint8_t *payload, size_t size, uint64_t file_off,
                            rknnx_file_model *m, rknnx_file_error *err)
{
    fbuf f = {payload, size, file_off, err};
    ftab root, g;
    uint32_t n_graphs, n_tensors, n_in, n_out, k;
    size_t gpos, tpos, ipos, opos;
    char shape_mode[32] = "";
    ltree io_in, io_out, gen;
    int in_present = 0, out_present = 0, rc;
    memset(&io_in, 0, sizeof io_in);
    memset(&io_out, 0, sizeof io_out);
    memset(&gen, 0, sizeof gen);

    if ((rc = rknnx_file_fb_root(&f, "RKNN", &root)) != 0) return rc;
    if ((rc = rknnx_file_fb_u32(&f, &root, 0, "version", 0, &m->format_version, NULL)) != 0 ||
        (rc = rknnx_file_fb_str(&f, &root, 1, "target", m->npu_family,
                                sizeof m->npu_family)) != 0 ||
        (rc = rknnx_file_fb_u32(&f, &root, 6, "compiler_int", 0, &m->compiler_version_int,
                                NULL)) != 0)
        return rc;
    {
        char ver[2 * RKNNX_FILE_STR_LEN];
        if ((rc = rknnx_file_fb_str(&f, &root, 7, "compiler", ver, sizeof ver)) != 0) return rc;
        split_versions(ver, m);
    }
    if ((rc = rknnx_file_fb_str(&f, &root, 8, "platform", m->target_platform,
                                sizeof m->target_platform)) != 0)
        return rc;
    if ((rc = rknnx_file_fb_str(&f, &root, 9, "framework", m->framework, sizeof m->framework)) != 0)
        return rc;
    if (m->format_version >= 6) {
        if ((rc = rknnx_file_fb_str(&f, &root, 16, "shape_mode", shape_mode,
                                    sizeof shape_mode)) != 0)
            return rc;
    }
    m->dynamic = strcmp(shape_mode, "dynamic_shape") == 0;

    /* The graph and its tensors. */
    if ((rc = rknnx_file_fb_vector(&f, &root, 2, 4, "graphs", &gpos, &n_graphs)) != 0) return rc;
    if (n_graphs == 0) {
        return rknnx_file_fb_fail(&f, "Model", "graphs", root.pos, "the model has no graph");
    }
    if ((rc = rknnx_file_fb_vector_table(&f, gpos, 0, "Graph", "graphs", &g)) != 0) return rc;
    if ((rc = rknnx_file_fb_vector(&f, &g, 0, 4, "tensors", &tpos, &n_tensors)) != 0) return rc;
    if ((rc = rknnx_file_fb_index_vector(&f, &g, 2, "inputs", n_tensors, &ipos, &n_in)) != 0 ||
        (rc = rknnx_file_fb_index_vector(&f, &g, 3, "outputs", n_tensors, &opos, &n_out)) != 0)
        return rc;
    if (n_in == 0 || n_out == 0) {
        return rknnx_file_fb_fail(&f, "Graph", n_in == 0 ? "inputs" : "outputs", g.pos,
                                  "the graph has %u inputs and %u outputs; a model needs at "
                                  "least one of each", n_in, n_out);
    }

    if ((rc = read_io_json(&f, &root, 12, "input_json", &io_in, &in_present)) != 0) goto out;
    if ((rc = read_io_json(&f, &root, 13, "output_json", &io_out, &out_present)) != 0) goto out;

    m->inputs = calloc(n_in, sizeof *m->inputs);
    m->outputs = calloc(n_out, sizeof *m->outputs);
    if (!m->inputs || !m->outputs) {
        rc = rknnx_file_fail(err, RKNNX_FILE_E_NOMEM, "nomem", -1, "out of memory");
        goto out;
    }
    m->n_inputs = n_in;
    m->n_outputs = n_out;
    for (k = 0; k < n_in + n_out; k++) {
        int is_in = k < n_in;
        uint32_t j = is_in ? k : k - n_in;
        uint32_t ix = rknnx_file_rd32(payload + (is_in ? ipos : opos) + 4 * j);
        ftab tt;
        if ((rc = rknnx_file_fb_vector_table(&f, tpos, ix, "Tensor", "tensors", &tt)) != 0)
            goto out;
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
        if ((rc = rknnx_file_fb_ref(&f, &root, 19, "mem_sizes", &target)) != 0) goto out;
        if (target) {
            ftab mt;
            size_t a0, a1;
            if ((rc = rknnx_file_fb_table(&f, target, "MemSizes", "mem_sizes", &mt)) != 0 ||
                (rc = rknnx_file_fb_field(&f, &mt, 0, 8, "weight", &a0)) != 0 ||
                (rc = rknnx_file_fb_field(&f, &mt, 1, 8, "internal", &a1)) != 0)
                goto out;
            m->weight_size = a0 ? rknnx_file_rd64(payload + a0) : 0;
            m->internal_size = a1 ? rknnx_file_rd64(payload + a1) : 0;
            m->has_mem_sizes = a0 != 0 || a1 != 0;
        }
    }
    {
        uint64_t kept;
        if ((rc = read_weight_blobs(&f, &root, tpos, n_tensors, &kept,
                                    &m->n_removed_weights)) != 0)
            goto out;
        if (m->n_removed_weights && m->has_mem_sizes)
            m->weight_size = kept;
    }
    if (!m->has_mem_sizes && m->format_version < 6) {
        uint64_t w, in;
        if ((rc = derive_mem_plan(&f, tpos, n_tensors, &w, &in)) != 0) goto out;
        if (w || in) {
            m->weight_size = w;
            m->internal_size = in;
            m->has_mem_sizes = 1;
        }
    }

    /* The generator: a Python-literal dict from format 6 on (a plain text before). */
    {
        const uint8_t *s;
        size_t n;
        if ((rc = rknnx_file_fb_string(&f, &root, 3, "generator", &s, &n)) != 0) goto out;
        /* A dynamic model needs it (its shape sets): a generator the parser refuses fails
         * the read.  A static model needs it only for its inputs' mean/std, so there a
         * literal this parser does not know (a newer toolkit's repr) leaves those unknown
         * and cannot make a good model unreadable; only running out of memory fails. */
        if ((m->dynamic || m->format_version >= 6) && s && n && s[0] == '{') {
            rc = rknnx_file_lit_parse(&gen, (const char *)s, n, 1, "generator",
                                      (int64_t)(file_off + (size_t)(s - payload)),
                                      m->dynamic ? err : NULL);
            if (rc == RKNNX_FILE_E_NOMEM && !m->dynamic) {
                rc = rknnx_file_fail(err, RKNNX_FILE_E_NOMEM, "nomem", -1, "out of memory");
                goto out;
            }
            if (rc && m->dynamic) goto out;
            if (rc == 0 && m->dynamic && (rc = read_shape_sets(&gen, m, err)) != 0) goto out;
            /* the mean/std of format 6 files only: the container 2 files (format 1) list
             * no input in their attrs */
            if (rc == 0 && m->format_version >= 6) {
                read_norms(&gen, m);
            }
            rc = RKNNX_FILE_OK;
        }
        if (m->dynamic && m->n_shape_sets == 0) {
            rc = rknnx_file_fail(err, RKNNX_FILE_E_FORMAT, "generator.dynamic_shapes", -1,
                                 "the model says dynamic_shape but its generator lists no "
                                 "shape sets");
            goto out;
        }
    }
    rc = RKNNX_FILE_OK;
out:
    rknnx_file_lit_free(&io_in);
    rknnx_file_lit_free(&io_out);
    rknnx_file_lit_free(&gen);
    return rc;
}
