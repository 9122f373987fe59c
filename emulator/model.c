/*
 * rknnx emulator, model half: the model file parser and the model accessors.
 *
 * The byte format is specified in emulator/FORMAT.md.  The parser trusts nothing: every
 * count, length, offset and index is checked against what remains of its section before
 * it is used, all size arithmetic is done in uint64_t with explicit overflow checks, and
 * everything the model keeps is copied out of the caller's buffer.  Any violation gives
 * RKNN_ERR_MODEL_INVALID (or RKNN_ERR_MALLOC_FAIL when memory runs out).
 */
#include <stdlib.h>
#include <string.h>
#include <math.h>

#include "model_internal.h"

/* ---- a bounds-checked little-endian reader ------------------------------------------- */

typedef struct rd {
    const uint8_t *p;
    uint64_t len, pos;
    int bad;                           /* sticky: once set, every read returns 0 */
} rd;

static void rd_init(rd *r, const uint8_t *p, uint64_t len)
{
    r->p = p;
    r->len = len;
    r->pos = 0;
    r->bad = 0;
}

static uint64_t rd_left(const rd *r) { return r->bad ? 0 : r->len - r->pos; }

static const uint8_t *rd_take(rd *r, uint64_t n)
{
    if (r->bad || n > r->len - r->pos) {
        r->bad = 1;
        return NULL;
    }
    const uint8_t *q = r->p + r->pos;
    r->pos += n;
    return q;
}

static uint8_t rd_u8(rd *r)
{
    const uint8_t *q = rd_take(r, 1);
    return q ? q[0] : 0;
}

static uint16_t rd_u16(rd *r)
{
    const uint8_t *q = rd_take(r, 2);
    return q ? (uint16_t)(q[0] | (q[1] << 8)) : 0;
}

static uint32_t rd_u32(rd *r)
{
    const uint8_t *q = rd_take(r, 4);
    return q ? (uint32_t)q[0] | ((uint32_t)q[1] << 8) | ((uint32_t)q[2] << 16) |
                   ((uint32_t)q[3] << 24)
             : 0;
}

static uint64_t rd_u64(rd *r)
{
    uint64_t lo = rd_u32(r);
    uint64_t hi = rd_u32(r);
    return lo | (hi << 32);
}

static int32_t rd_i32(rd *r)
{
    uint32_t u = rd_u32(r);
    int32_t v;
    memcpy(&v, &u, 4);
    return v;
}

static float rd_f32(rd *r)
{
    uint32_t u = rd_u32(r);
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* A length-prefixed string (u16 length, bytes, no terminator) into dst[cap]; the length
   must be in [min_len, cap-1] and the bytes free of NUL. */
static int rd_str(rd *r, char *dst, size_t cap, uint32_t min_len)
{
    uint16_t n = rd_u16(r);
    const uint8_t *q = rd_take(r, n);
    if (!q || n < min_len || (size_t)n >= cap || memchr(q, 0, n))
        return -1;
    memcpy(dst, q, n);
    dst[n] = 0;
    return 0;
}

static uint32_t n_sets_rows(const emu_model *m) { return m->n_sets ? m->n_sets : 1; }

/* ---- freeing --------------------------------------------------------------------------- */

void emu_model_free(emu_model *m)
{
    if (!m)
        return;
    if (m->tensors)
        for (uint32_t i = 0; i < m->n_tensors; i++) {
            free(m->tensors[i].zp);
            free(m->tensors[i].scale);
        }
    if (m->ops)
        for (uint32_t i = 0; i < m->n_ops; i++) {
            if (m->ops[i].attrs)
                for (uint32_t a = 0; a < m->ops[i].n_attrs; a++)
                    free(m->ops[i].attrs[a].data);
            free(m->ops[i].attrs);
        }
    free(m->custom_string);
    free(m->tensors);
    free(m->inputs);
    free(m->outputs);
    free(m->ops);
    free(m->weights);
    free(m->set_dims);
    free(m->set_offsets);
    free(m->set_scratch);
    free(m->in_desc);
    free(m->out_desc);
    free(m);
}

/* ---- sections -------------------------------------------------------------------------- */

#define BAD RKNN_ERR_MODEL_INVALID

static int printable(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || (unsigned char)*s > 0x7e)
            return 0;
    return 1;
}

static int parse_meta(emu_model *m, const uint8_t *p, uint64_t len)
{
    rd r;
    rd_init(&r, p, len);
    if (rd_str(&r, m->target, sizeof m->target, 1) || !printable(m->target))
        return BAD;
    m->custom_string = calloc(EMU_MAX_CUSTOM_STRING + 1, 1);
    if (!m->custom_string)
        return RKNN_ERR_MALLOC_FAIL;
    if (rd_str(&r, m->custom_string, EMU_MAX_CUSTOM_STRING + 1, 0))
        return BAD;
    return (r.bad || rd_left(&r)) ? BAD : RKNN_SUCC;
}

/* fixed part of a tensor record: name length (2) + 12 bytes of fields */
#define TENSOR_MIN_RECORD 15u

static int parse_tensors(emu_model *m, const uint8_t *p, uint64_t len)
{
    rd r;
    rd_init(&r, p, len);
    uint32_t n = rd_u32(&r);
    if (r.bad || n == 0 || n > EMU_MAX_TENSORS || (uint64_t)n * TENSOR_MIN_RECORD > rd_left(&r))
        return BAD;
    m->tensors = calloc(n, sizeof *m->tensors);
    if (!m->tensors)
        return RKNN_ERR_MALLOC_FAIL;
    m->n_tensors = n;
    uint64_t dims_total = 0;
    for (uint32_t i = 0; i < n; i++) {
        emu_tensor *t = &m->tensors[i];
        if (rd_str(&r, t->name, sizeof t->name, 1))
            return BAD;
        uint8_t dtype = rd_u8(&r), fmt = rd_u8(&r), qnt = rd_u8(&r), nd = rd_u8(&r);
        uint8_t kind = rd_u8(&r), n_norm = rd_u8(&r);
        uint16_t n_q = rd_u16(&r);
        uint8_t flb = rd_u8(&r), qaxis = rd_u8(&r);
        uint16_t reserved = rd_u16(&r);
        if (r.bad || reserved != 0)
            return BAD;
        if (dtype >= RKNN_TENSOR_TYPE_MAX || emu_model_dtype_size((rknn_tensor_type)dtype) == 0)
            return BAD;
        if (fmt >= RKNN_TENSOR_FORMAT_MAX || fmt == RKNN_TENSOR_NC1HWC2)
            return BAD;
        if (qnt >= RKNN_TENSOR_QNT_MAX || nd == 0 || nd > RKNN_MAX_DIMS)
            return BAD;
        if (kind > EMU_T_CONSTANT || n_norm > RKNN_MAX_NUM_CHANNEL)
            return BAD;
        t->dtype = (rknn_tensor_type)dtype;
        t->fmt = (rknn_tensor_format)fmt;
        t->qnt_type = (rknn_tensor_qnt_type)qnt;
        t->n_dims = nd;
        t->kind = kind;
        t->n_norm = n_norm;
        t->n_q = n_q;
        t->fl = (int8_t)flb;
        t->qaxis = qaxis;
        t->producer = -1;
        uint64_t elems = 1;
        for (uint32_t d = 0; d < nd; d++) {
            t->dims[d] = rd_u32(&r);
            if (t->dims[d] == 0)
                return BAD;
            elems *= t->dims[d];       /* < 2^31 * 2^32 before the check below: no wrap */
            if (elems >= EMU_MAX_ELEMS)
                return BAD;
        }
        if (r.bad)
            return BAD;
        if (t->fmt != RKNN_TENSOR_UNDEFINED && nd != 4)
            return BAD;                /* NCHW/NHWC name 4-D layouts */
        /* quantization: AFFINE needs 1 or dims[qaxis] (zp, scale) pairs; others none */
        if (qnt == RKNN_TENSOR_QNT_AFFINE_ASYMMETRIC) {
            if (n_q == 0 || qaxis >= nd || (n_q != 1 && n_q != t->dims[qaxis]))
                return BAD;
        } else if (n_q != 0) {
            return BAD;
        }
        if ((uint64_t)n_q * 8u > rd_left(&r))
            return BAD;
        if (n_q) {
            t->zp = malloc((size_t)n_q * sizeof *t->zp);
            t->scale = malloc((size_t)n_q * sizeof *t->scale);
            if (!t->zp || !t->scale)
                return RKNN_ERR_MALLOC_FAIL;
        }
        /* zero points of 8/16-bit tensors lie in the type's range (so x - zp fits the
           int32 accumulations of exec.c) */
        int64_t zlo = INT32_MIN, zhi = INT32_MAX;
        if (t->dtype == RKNN_TENSOR_INT8) { zlo = -128; zhi = 127; }
        else if (t->dtype == RKNN_TENSOR_UINT8) { zlo = 0; zhi = 255; }
        else if (t->dtype == RKNN_TENSOR_INT16) { zlo = -32768; zhi = 32767; }
        else if (t->dtype == RKNN_TENSOR_UINT16) { zlo = 0; zhi = 65535; }
        for (uint32_t q = 0; q < n_q; q++) {
            t->zp[q] = rd_i32(&r);
            t->scale[q] = rd_f32(&r);
            if (!(t->scale[q] > 0.0f) || !isfinite(t->scale[q]) || t->zp[q] < zlo || t->zp[q] > zhi)
                return BAD;
        }
        for (uint32_t c = 0; c < n_norm; c++) {
            t->mean[c] = rd_f32(&r);
            t->std[c] = rd_f32(&r);
            if (!isfinite(t->mean[c]) || !isfinite(t->std[c]) || t->std[c] == 0.0f)
                return BAD;
        }
        if (kind == EMU_T_CONSTANT) {
            t->w_offset = rd_u64(&r);
            t->w_length = rd_u64(&r);
            if (t->w_length != elems * emu_model_dtype_size(t->dtype))
                return BAD;            /* the range itself is checked with the blob */
        }
        if (r.bad)
            return BAD;
        for (uint32_t j = 0; j < i; j++)
            if (strcmp(m->tensors[j].name, t->name) == 0)
                return BAD;            /* names are unique */
        t->dim_offset = (uint32_t)dims_total;
        dims_total += nd;
    }
    m->dims_per_set = (uint32_t)dims_total;
    return rd_left(&r) ? BAD : RKNN_SUCC;
}

static int parse_id_list(rd *r, const emu_model *m, uint32_t *n_out, uint32_t **ids)
{
    uint32_t n = rd_u32(r);
    if (r->bad || n == 0 || n > EMU_MAX_IO || (uint64_t)n * 4u > rd_left(r))
        return BAD;
    *ids = malloc((size_t)n * sizeof **ids);
    if (!*ids)
        return RKNN_ERR_MALLOC_FAIL;
    *n_out = n;
    for (uint32_t i = 0; i < n; i++) {
        (*ids)[i] = rd_u32(r);
        if ((*ids)[i] >= m->n_tensors)
            return BAD;
        for (uint32_t j = 0; j < i; j++)
            if ((*ids)[j] == (*ids)[i])
                return BAD;
    }
    return r->bad ? BAD : RKNN_SUCC;
}

static int parse_io(emu_model *m, const uint8_t *p, uint64_t len)
{
    rd r;
    rd_init(&r, p, len);
    int rc = parse_id_list(&r, m, &m->n_inputs, &m->inputs);
    if (rc)
        return rc;
    rc = parse_id_list(&r, m, &m->n_outputs, &m->outputs);
    if (rc)
        return rc;
    return rd_left(&r) ? BAD : RKNN_SUCC;
}

static const char *const k_op_names[] = {
    [EMU_OP_CONV2D] = "conv2d", [EMU_OP_DENSE] = "dense", [EMU_OP_ADD] = "add",
    [EMU_OP_MUL] = "mul", [EMU_OP_RELU] = "relu", [EMU_OP_SIGMOID] = "sigmoid",
    [EMU_OP_RESHAPE] = "reshape", [EMU_OP_TRANSPOSE] = "transpose",
    [EMU_OP_QUANTIZE] = "quantize", [EMU_OP_DEQUANTIZE] = "dequantize", [EMU_OP_CAST] = "cast",
};

/* fixed part of an op record: 8 bytes of fields + two string lengths */
#define OP_MIN_RECORD 12u

static int parse_attr(rd *r, emu_attr *a)
{
    if (rd_str(r, a->name, sizeof a->name, 1))
        return BAD;
    uint8_t dtype = rd_u8(r);
    uint8_t z0 = rd_u8(r), z1 = rd_u8(r), z2 = rd_u8(r);
    uint32_t n = rd_u32(r);
    if (r->bad || z0 || z1 || z2 || dtype >= RKNN_TENSOR_TYPE_MAX)
        return BAD;
    size_t es = emu_model_dtype_size((rknn_tensor_type)dtype);
    if (es == 0 || (uint64_t)n * es > rd_left(r))
        return BAD;
    a->dtype = (rknn_tensor_type)dtype;
    a->n_elems = n;
    size_t bytes = (size_t)n * es;
    a->data = malloc(bytes ? bytes : 1);
    if (!a->data)
        return RKNN_ERR_MALLOC_FAIL;
    const uint8_t *q = rd_take(r, bytes);
    if (!q)
        return BAD;
    memcpy(a->data, q, bytes);         /* little-endian on every supported host */
    return RKNN_SUCC;
}

static int parse_ops(emu_model *m, const uint8_t *p, uint64_t len)
{
    rd r;
    rd_init(&r, p, len);
    uint32_t n = rd_u32(&r);
    if (r.bad || n == 0 || n > EMU_MAX_OPS || (uint64_t)n * OP_MIN_RECORD > rd_left(&r))
        return BAD;
    m->ops = calloc(n, sizeof *m->ops);
    if (!m->ops)
        return RKNN_ERR_MALLOC_FAIL;
    m->n_ops = n;
    for (uint32_t i = 0; i < n; i++) {
        emu_op *op = &m->ops[i];
        uint16_t opcode = rd_u16(&r);
        uint8_t n_in = rd_u8(&r), n_out = rd_u8(&r);
        uint16_t n_attrs = rd_u16(&r), reserved = rd_u16(&r);
        if (r.bad || reserved || n_in > EMU_MAX_OP_IO || n_out == 0 || n_out > EMU_MAX_OP_IO ||
            n_attrs > EMU_MAX_ATTRS)
            return BAD;
        op->opcode = opcode;
        if (rd_str(&r, op->name, sizeof op->name, 0) || rd_str(&r, op->type, sizeof op->type, 0))
            return BAD;
        if (opcode == EMU_OP_CUSTOM) {
            if (op->type[0] == 0)
                return BAD;
        } else {
            if (opcode >= sizeof k_op_names / sizeof k_op_names[0] || !k_op_names[opcode] ||
                op->type[0] != 0)
                return BAD;
            strcpy(op->type, k_op_names[opcode]);
        }
        op->n_in = n_in;
        op->n_out = n_out;
        for (uint32_t k = 0; k < n_in; k++)
            op->in[k] = rd_u32(&r);
        for (uint32_t k = 0; k < n_out; k++)
            op->out[k] = rd_u32(&r);
        if (r.bad)
            return BAD;
        if (n_attrs) {
            op->attrs = calloc(n_attrs, sizeof *op->attrs);
            if (!op->attrs)
                return RKNN_ERR_MALLOC_FAIL;
        }
        for (uint32_t a = 0; a < n_attrs; a++) {
            int rc = parse_attr(&r, &op->attrs[a]);
            op->n_attrs = a + (rc == RKNN_SUCC);   /* what is allocated gets freed */
            if (rc)
                return rc;
            for (uint32_t b = 0; b < a; b++)
                if (strcmp(op->attrs[b].name, op->attrs[a].name) == 0)
                    return BAD;
        }
    }
    return rd_left(&r) ? BAD : RKNN_SUCC;
}

static int parse_shapes(emu_model *m, const uint8_t *p, uint64_t len)
{
    rd r;
    rd_init(&r, p, len);
    uint32_t n_sets = rd_u32(&r), n_in = rd_u32(&r);
    if (r.bad || n_sets == 0 || n_sets > RKNN_MAX_DYNAMIC_SHAPE_NUM || n_in != m->n_inputs)
        return BAD;
    uint64_t per_set = 0;
    for (uint32_t i = 0; i < m->n_inputs; i++)
        per_set += m->tensors[m->inputs[i]].n_dims;
    if (per_set * 4u * n_sets != rd_left(&r))
        return BAD;
    m->n_sets = n_sets;
    m->set_dims = calloc((size_t)n_sets * (m->dims_per_set ? m->dims_per_set : 1), sizeof(uint32_t));
    if (!m->set_dims)
        return RKNN_ERR_MALLOC_FAIL;
    for (uint32_t s = 0; s < n_sets; s++) {
        uint32_t *row = m->set_dims + (uint64_t)s * m->dims_per_set;
        for (uint32_t i = 0; i < m->n_inputs; i++) {
            const emu_tensor *t = &m->tensors[m->inputs[i]];
            uint64_t elems = 1;
            for (uint32_t d = 0; d < t->n_dims; d++) {
                uint32_t v = rd_u32(&r);
                if (v == 0)
                    return BAD;
                elems *= v;
                if (elems >= EMU_MAX_ELEMS)
                    return BAD;
                row[t->dim_offset + d] = v;
            }
        }
    }
    /* set 0 is the declared shape */
    for (uint32_t i = 0; i < m->n_inputs; i++) {
        const emu_tensor *t = &m->tensors[m->inputs[i]];
        if (memcmp(m->set_dims + t->dim_offset, t->dims, t->n_dims * sizeof(uint32_t)))
            return BAD;
    }
    return r.bad ? BAD : RKNN_SUCC;
}

/* ---- whole-graph checks ------------------------------------------------------------------ */

static int link_graph(emu_model *m)
{
    for (uint32_t i = 0; i < m->n_tensors; i++)
        m->tensors[i].role = m->tensors[i].kind == EMU_T_CONSTANT ? EMU_ROLE_CONST : EMU_ROLE_INTERNAL;
    for (uint32_t i = 0; i < m->n_inputs; i++) {
        emu_tensor *t = &m->tensors[m->inputs[i]];
        if (t->kind != EMU_T_ACTIVATION || t->n_q > 1)
            return BAD;
        t->role = EMU_ROLE_INPUT;
        t->role_index = i;
    }
    for (uint32_t i = 0; i < m->n_outputs; i++) {
        emu_tensor *t = &m->tensors[m->outputs[i]];
        if (t->kind != EMU_T_ACTIVATION || t->role == EMU_ROLE_INPUT || t->n_q > 1)
            return BAD;
        t->role = EMU_ROLE_OUTPUT;
        t->role_index = i;
    }
    for (uint32_t i = 0; i < m->n_tensors; i++) {
        const emu_tensor *t = &m->tensors[i];
        if (t->n_norm && t->role != EMU_ROLE_INPUT)
            return BAD;                /* mean/std only describe inputs */
        if (t->kind == EMU_T_CONSTANT &&
            (t->w_offset > m->weight_size || t->w_length > m->weight_size - t->w_offset))
            return BAD;
    }
    /* topological order: every op input is defined before the op, every activation that
       is not an input is produced exactly once */
    for (uint32_t o = 0; o < m->n_ops; o++) {
        emu_op *op = &m->ops[o];
        for (uint32_t k = 0; k < op->n_in; k++) {
            if (op->in[k] >= m->n_tensors)
                return BAD;
            const emu_tensor *t = &m->tensors[op->in[k]];
            if (t->role == EMU_ROLE_OUTPUT || t->role == EMU_ROLE_INTERNAL)
                if (t->producer < 0)
                    return BAD;        /* used before it is produced (or never) */
        }
        for (uint32_t k = 0; k < op->n_out; k++) {
            if (op->out[k] >= m->n_tensors)
                return BAD;
            emu_tensor *t = &m->tensors[op->out[k]];
            if (t->role == EMU_ROLE_CONST || t->role == EMU_ROLE_INPUT || t->producer >= 0)
                return BAD;
            t->producer = (int32_t)o;
        }
        int rc = emu_exec_check_op(m, op);
        if (rc)
            return rc;
    }
    for (uint32_t i = 0; i < m->n_outputs; i++)
        if (m->tensors[m->outputs[i]].producer < 0)
            return BAD;
    return RKNN_SUCC;
}

static uint64_t align_up(uint64_t v) { return (v + (EMU_ALIGN - 1)) & ~(uint64_t)(EMU_ALIGN - 1); }

/* Shape inference and the memory plan for every shape set. */
static int plan_sets(emu_model *m)
{
    uint32_t rows = n_sets_rows(m);
    size_t row_len = m->dims_per_set ? m->dims_per_set : 1;
    if (!m->set_dims) {
        m->set_dims = calloc(row_len, sizeof(uint32_t));
        if (!m->set_dims)
            return RKNN_ERR_MALLOC_FAIL;
        for (uint32_t i = 0; i < m->n_inputs; i++) {
            const emu_tensor *t = &m->tensors[m->inputs[i]];
            memcpy(m->set_dims + t->dim_offset, t->dims, t->n_dims * sizeof(uint32_t));
        }
    }
    m->set_offsets = calloc((size_t)rows * m->n_tensors, sizeof(uint64_t));
    m->set_scratch = calloc(rows, sizeof(uint64_t));
    if (!m->set_offsets || !m->set_scratch)
        return RKNN_ERR_MALLOC_FAIL;
    for (uint32_t s = 0; s < rows; s++) {
        uint32_t *row = m->set_dims + (uint64_t)s * m->dims_per_set;
        for (uint32_t i = 0; i < m->n_tensors; i++) {
            const emu_tensor *t = &m->tensors[i];
            if (t->role == EMU_ROLE_CONST)
                memcpy(row + t->dim_offset, t->dims, t->n_dims * sizeof(uint32_t));
        }
        uint64_t scratch = 0;
        for (uint32_t o = 0; o < m->n_ops; o++) {
            uint64_t need = 0;
            int rc = emu_exec_infer(m, &m->ops[o], s, row, &need);
            if (rc)
                return rc;
            if (need > scratch)
                scratch = need;
        }
        /* every tensor: element count in range; set 0 must agree with the declared dims */
        uint64_t off = 0;
        uint64_t *offs = m->set_offsets + (uint64_t)s * m->n_tensors;
        for (uint32_t i = 0; i < m->n_tensors; i++) {
            const emu_tensor *t = &m->tensors[i];
            const uint32_t *d = row + t->dim_offset;
            uint64_t elems = 1;
            for (uint32_t k = 0; k < t->n_dims; k++) {
                if (d[k] == 0)
                    return BAD;
                elems *= d[k];
                if (elems >= EMU_MAX_ELEMS)
                    return BAD;
            }
            if (s == 0 && memcmp(d, t->dims, t->n_dims * sizeof(uint32_t)))
                return BAD;
            if (t->role == EMU_ROLE_INTERNAL) {
                offs[i] = off;
                off += align_up(elems * emu_model_dtype_size(t->dtype));
            }
        }
        m->set_scratch[s] = off;
        off += align_up(scratch);
        if (off > m->internal_size)
            m->internal_size = off;
    }
    return RKNN_SUCC;
}

static void fill_desc(const emu_model *m, uint32_t t_id, emu_io_desc *d)
{
    const emu_tensor *t = &m->tensors[t_id];
    memset(d, 0, sizeof *d);
    memcpy(d->name, t->name, sizeof d->name);
    d->n_dims = t->n_dims;
    memcpy(d->dims, t->dims, sizeof d->dims);
    d->fmt = t->fmt;
    d->type = t->dtype;
    d->qnt_type = t->qnt_type;
    d->fl = t->fl;
    d->zp = t->n_q ? t->zp[0] : 0;
    d->scale = t->n_q ? t->scale[0] : 1.0f;
    if (t->qnt_type == RKNN_TENSOR_QNT_DFP)
        d->scale = ldexpf(1.0f, -t->fl);
    d->n_norm = t->n_norm;
    memcpy(d->mean, t->mean, sizeof d->mean);
    memcpy(d->std, t->std, sizeof d->std);
}

/* ---- entry point ------------------------------------------------------------------------- */

static int load(const uint8_t *b, size_t size, emu_model *m)
{
    if (size < EMU_FMT_HEADER_SIZE || memcmp(b, EMU_FMT_MAGIC, 8) != 0)
        return BAD;
    rd r;
    rd_init(&r, b, size);
    rd_take(&r, 8);
    uint16_t major = rd_u16(&r), minor = rd_u16(&r);
    uint32_t n_sec = rd_u32(&r);
    uint64_t file_size = rd_u64(&r);
    uint32_t flags = rd_u32(&r), reserved = rd_u32(&r);
    if (major != EMU_FMT_MAJOR || minor > EMU_FMT_MINOR || flags || reserved)
        return BAD;
    if (n_sec == 0 || n_sec > EMU_FMT_MAX_SECTIONS || file_size > size)
        return BAD;
    uint64_t table_end = EMU_FMT_HEADER_SIZE + (uint64_t)n_sec * EMU_FMT_SECTION_SIZE;
    if (table_end > file_size)
        return BAD;
    uint64_t off[EMU_SEC_KIND_MAX] = {0}, len[EMU_SEC_KIND_MAX] = {0};
    int seen[EMU_SEC_KIND_MAX] = {0};
    uint64_t s_off[EMU_FMT_MAX_SECTIONS], s_len[EMU_FMT_MAX_SECTIONS];
    for (uint32_t i = 0; i < n_sec; i++) {
        uint32_t kind = rd_u32(&r), sflags = rd_u32(&r);
        uint64_t o = rd_u64(&r), l = rd_u64(&r);
        if (r.bad || kind == 0 || kind >= EMU_SEC_KIND_MAX || seen[kind] || sflags)
            return BAD;
        if (o < table_end || o % 8u || o > file_size || l > file_size - o)
            return BAD;
        for (uint32_t j = 0; j < i; j++)       /* sections never overlap */
            if (o < s_off[j] + s_len[j] && s_off[j] < o + l)
                return BAD;
        s_off[i] = o;
        s_len[i] = l;
        seen[kind] = 1;
        off[kind] = o;
        len[kind] = l;
    }
    if (!seen[EMU_SEC_META] || !seen[EMU_SEC_TENSORS] || !seen[EMU_SEC_IO] || !seen[EMU_SEC_OPS])
        return BAD;
    int rc;
    if ((rc = parse_meta(m, b + off[EMU_SEC_META], len[EMU_SEC_META])))
        return rc;
    if ((rc = parse_tensors(m, b + off[EMU_SEC_TENSORS], len[EMU_SEC_TENSORS])))
        return rc;
    if ((rc = parse_io(m, b + off[EMU_SEC_IO], len[EMU_SEC_IO])))
        return rc;
    if ((rc = parse_ops(m, b + off[EMU_SEC_OPS], len[EMU_SEC_OPS])))
        return rc;
    if (seen[EMU_SEC_WEIGHTS]) {
        m->weight_size = len[EMU_SEC_WEIGHTS];
        m->weights = malloc(m->weight_size ? (size_t)m->weight_size : 1);
        if (!m->weights)
            return RKNN_ERR_MALLOC_FAIL;
        memcpy(m->weights, b + off[EMU_SEC_WEIGHTS], (size_t)m->weight_size);
    }
    if ((rc = link_graph(m)))
        return rc;
    if (seen[EMU_SEC_SHAPES] && (rc = parse_shapes(m, b + off[EMU_SEC_SHAPES], len[EMU_SEC_SHAPES])))
        return rc;
    if ((rc = plan_sets(m)))
        return rc;
    m->in_desc = calloc(m->n_inputs, sizeof *m->in_desc);
    m->out_desc = calloc(m->n_outputs, sizeof *m->out_desc);
    if (!m->in_desc || !m->out_desc)
        return RKNN_ERR_MALLOC_FAIL;
    for (uint32_t i = 0; i < m->n_inputs; i++)
        fill_desc(m, m->inputs[i], &m->in_desc[i]);
    for (uint32_t i = 0; i < m->n_outputs; i++)
        fill_desc(m, m->outputs[i], &m->out_desc[i]);
    return RKNN_SUCC;
}

int emu_model_load(const void *data, size_t size, emu_model **out)
{
    if (!out)
        return RKNN_ERR_PARAM_INVALID;
    *out = NULL;
    if (!data)
        return BAD;
    emu_model *m = calloc(1, sizeof *m);
    if (!m)
        return RKNN_ERR_MALLOC_FAIL;
    int rc = load(data, size, m);
    if (rc) {
        emu_model_free(m);
        return rc;
    }
    *out = m;
    return RKNN_SUCC;
}

/* ---- accessors --------------------------------------------------------------------------- */

const char *emu_model_target(const emu_model *m) { return m ? m->target : ""; }
const char *emu_model_custom_string(const emu_model *m) { return m ? m->custom_string : ""; }
uint32_t emu_model_n_inputs(const emu_model *m) { return m ? m->n_inputs : 0; }
uint32_t emu_model_n_outputs(const emu_model *m) { return m ? m->n_outputs : 0; }

const emu_io_desc *emu_model_input(const emu_model *m, uint32_t i)
{
    return m && i < m->n_inputs ? &m->in_desc[i] : NULL;
}

const emu_io_desc *emu_model_output(const emu_model *m, uint32_t i)
{
    return m && i < m->n_outputs ? &m->out_desc[i] : NULL;
}

uint32_t emu_model_n_shape_sets(const emu_model *m) { return m ? m->n_sets : 0; }

/* A static model answers for set 0 with its declared dims. */
const uint32_t *emu_model_input_dims(const emu_model *m, uint32_t set, uint32_t i, uint32_t *n_dims)
{
    if (!m || i >= m->n_inputs || set >= n_sets_rows(m))
        return NULL;
    if (n_dims)
        *n_dims = m->tensors[m->inputs[i]].n_dims;
    return emu_model_tensor_dims(m, set, m->inputs[i]);
}

const uint32_t *emu_model_output_dims(const emu_model *m, uint32_t set, uint32_t o, uint32_t *n_dims)
{
    if (!m || o >= m->n_outputs || set >= n_sets_rows(m))
        return NULL;
    if (n_dims)
        *n_dims = m->tensors[m->outputs[o]].n_dims;
    return emu_model_tensor_dims(m, set, m->outputs[o]);
}

uint64_t emu_model_weight_size(const emu_model *m) { return m ? m->weight_size : 0; }
const uint8_t *emu_model_weights(const emu_model *m) { return m ? m->weights : NULL; }
uint64_t emu_model_internal_size(const emu_model *m) { return m ? m->internal_size : 0; }
uint32_t emu_model_n_ops(const emu_model *m) { return m ? m->n_ops : 0; }

const char *emu_model_op_name(const emu_model *m, uint32_t i)
{
    return m && i < m->n_ops ? m->ops[i].name : NULL;
}

const char *emu_model_op_type(const emu_model *m, uint32_t i)
{
    return m && i < m->n_ops ? m->ops[i].type : NULL;
}

int emu_model_op_attr(const emu_model *m, uint32_t i, const char *name, rknn_tensor_type *dtype,
                      uint32_t *n_elems, const void **data)
{
    if (!m || !name || i >= m->n_ops)
        return RKNN_ERR_PARAM_INVALID;
    const emu_attr *a = emu_model_find_attr(&m->ops[i], name);
    if (!a)
        return RKNN_ERR_FAIL;
    if (dtype)
        *dtype = a->dtype;
    if (n_elems)
        *n_elems = a->n_elems;
    if (data)
        *data = a->data;
    return RKNN_SUCC;
}
