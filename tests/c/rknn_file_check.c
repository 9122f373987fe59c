/*
 * The vendor-file reader (rknnfile/, include/rknnx/rknn_file.h) under the sanitizers: every file
 * named on the command line is read as it is, then mutated many times (bytes set, u32 words
 * overwritten, truncated) from a fixed seed; every read must either succeed with a sane
 * model or fail with a status and a named check.  A read outside the bytes, a leak or
 * undefined behaviour stops the program (-fsanitize=address,undefined
 * -fno-sanitize-recover=all).  Each mutated copy lives in a buffer of exactly its size, so
 * an overrun is caught.  Prints "ok <files> <reads> <accepted>" at the end.
 */
#include "rknn_file.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;

static uint32_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state >> 16);
}

static int terminated(const char *s, size_t cap) { return memchr(s, '\0', cap) != NULL; }

static int check_model(const rknnx_file_model *m)
{
    uint32_t k;
    if (!m->n_inputs || !m->n_outputs || !m->inputs || !m->outputs) return 0;
    if (!terminated(m->chip, sizeof m->chip) || !terminated(m->npu_family, sizeof m->npu_family))
        return 0;
    for (k = 0; k < m->n_inputs + m->n_outputs; k++) {
        const rknnx_file_tensor *t = k < m->n_inputs ? &m->inputs[k] : &m->outputs[k - m->n_inputs];
        uint32_t j;
        if (!terminated(t->name, sizeof t->name) || t->n_shape > RKNNX_FILE_MAX_DIMS ||
            t->n_dims > RKNNX_FILE_MAX_DIMS || t->native_n_dims > RKNNX_FILE_MAX_DIMS)
            return 0;
        /* mean/std: both lists of 1..RKNNX_FILE_MAX_NORM entries when known (inputs only),
           none otherwise */
        if (t->known & RKNNX_FILE_KNOWN_NORM) {
            if (k >= m->n_inputs || t->n_mean == 0 || t->n_mean > RKNNX_FILE_MAX_NORM ||
                t->n_std == 0 || t->n_std > RKNNX_FILE_MAX_NORM)
                return 0;
        } else if (t->n_mean || t->n_std) {
            return 0;
        }
        for (j = 0; j < t->n_qnt; j++) {
            volatile float s = t->scales[j];   /* every entry readable */
            volatile int32_t z = t->zps[j];
            (void)s;
            (void)z;
        }
    }
    for (k = 0; k < m->n_shape_sets * m->n_inputs; k++) {
        if (m->shape_sets[k].n_dims > RKNNX_FILE_MAX_DIMS) return 0;
    }
    return 1;
}

/* Read `size` bytes copied into an exact-size heap buffer; 1 accepted, 0 refused, -1 bad. */
static int read_once(const uint8_t *src, size_t size)
{
    uint8_t *b = malloc(size ? size : 1);
    rknnx_file_model *m = (rknnx_file_model *)(uintptr_t)1;
    rknnx_file_error err;
    int rc, ok;
    if (!b) return -1;
    memcpy(b, src, size);
    rc = rknnx_file_read(b, size, &m, &err);
    if (rc == RKNNX_FILE_OK) {
        ok = m && check_model(m) ? 1 : -1;
        rknnx_file_free(m);
    } else {
        ok = (m == NULL && err.status == rc && err.check[0] && err.message[0] &&
              terminated(err.check, sizeof err.check) &&
              terminated(err.message, sizeof err.message)) ? 0 : -1;
        if (ok < 0) fprintf(stderr, "bad error report: rc %d check '%s'\n", rc, err.check);
    }
    free(b);
    return ok;
}

int main(int argc, char **argv)
{
    long reads = 0, accepted = 0;
    int a;
    {   /* arguments */
        rknnx_file_model *m;
        if (rknnx_file_read(NULL, 0, &m, NULL) != RKNNX_FILE_E_ARGUMENT) return 10;
        if (rknnx_file_read("RKNN", 4, NULL, NULL) != RKNNX_FILE_E_ARGUMENT) return 11;
        if (rknnx_file_sniff("CYPTRKNN", 8) != 2 || rknnx_file_sniff("RKNN\0\0\0\0", 8) != 1 ||
            rknnx_file_sniff("RKNXEMDL", 8) != 0 || rknnx_file_sniff("RK", 2) != 0) return 12;
        rknnx_file_free(NULL);
    }
    for (a = 1; a < argc; a++) {
        FILE *f = fopen(argv[a], "rb");
        long n;
        uint8_t *orig, *work;
        int i, r;
        if (!f) { fprintf(stderr, "cannot open %s\n", argv[a]); return 2; }
        fseek(f, 0, SEEK_END);
        n = ftell(f);
        fseek(f, 0, SEEK_SET);
        orig = malloc((size_t)n);
        work = malloc((size_t)n);
        if (!orig || !work || fread(orig, 1, (size_t)n, f) != (size_t)n) return 3;
        fclose(f);
        r = read_once(orig, (size_t)n);
        reads++;
        if (r != 1) { fprintf(stderr, "%s: not read\n", argv[a]); return 4; }
        accepted++;
        for (i = 0; i < 1500; i++) {
            size_t size = (size_t)n;
            int edits = 1 + (int)(rnd() % 6), e;
            memcpy(work, orig, (size_t)n);
            for (e = 0; e < edits && size > 0; e++) {
                size_t at = rnd() % size;
                switch (rnd() % 4) {
                case 0: work[at] = (uint8_t)rnd(); break;
                case 1:
                    if (at + 4 <= size) {
                        uint32_t v = rnd() % 3 == 0 ? 0xFFFFFFFFu : rnd() % 3 == 0 ? 0 : rnd();
                        memcpy(work + at, &v, 4);
                    }
                    break;
                case 2: work[at] ^= (uint8_t)(1u << (rnd() % 8)); break;
                default: if (rnd() % 4 == 0) size = at; break;
                }
            }
            r = read_once(work, size);
            reads++;
            if (r < 0) { fprintf(stderr, "%s: mutation %d broke an invariant\n", argv[a], i); return 5; }
            accepted += r;
        }
        free(orig);
        free(work);
    }
    printf("ok %d %ld %ld\n", argc - 1, reads, accepted);
    return 0;
}
