/*
 * The kernels' C (rknn_ext/kernels/) and the shared float16 conversion
 * (include/rknnx/rknnx_float16.h) as a C program; tests/binding/test_kernels_c.py builds
 * it with the kernels (plain, and under ASan/UBSan where the compiler can) and runs it.
 *
 *   kernels_check halves OUT          every half -> float32 bits (OUT, 65536 x 4 bytes)
 *   kernels_check floats IN OUT       float32 (IN) -> float16 bits (OUT)
 *   kernels_check rows                the row and block-row functions on buffers of the
 *                                     exact size (the sanitizers see any overrun)
 *
 * Every mode runs each path this build and processor have (rknnx_k_set_path 0, 1, 2) and
 * checks it against the scalar expression, bit for bit; the conversions also against the
 * emulator's (emulator/numeric.h: the same, with NaN quieted on the way to float16).  The
 * test compares OUT with numpy.  Prints "kernels_check: N checks, F failed".
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "kernels.h"
#include "numeric.h"

static uint32_t bits(float f)
{
    return rknnx_f32_bits(f);
}

static int halves(const char *out)
{
    uint16_t *h = xmalloc(65536 * 2);
    float *ref = xmalloc(65536 * 4), *v = xmalloc(65536 * 4);
    for (uint32_t i = 0; i < 65536; i++) {
        h[i] = (uint16_t)i;
        ref[i] = rknnx_f16_to_f32((uint16_t)i);
        check(bits(emu_f16_to_f32((uint16_t)i)) == bits(ref[i]), "emu_f16_to_f32", i, 0);
    }
    for (int level = 0; level <= 2; level++) {
        rknnx_k_set_path(level);
        for (ptrdiff_t n = 65536; n >= 65536 - 9; n--) {     /* vector body and tails */
            memset(v, 0xa5, 65536 * 4);
            rknnx_k_f16_row(h + (65536 - n), v, n);
            for (ptrdiff_t i = 0; i < n; i++)
                check(bits(v[i]) == bits(ref[65536 - n + i]), "f16_row", level, i);
        }
    }
    FILE *f = fopen(out, "wb");
    if (!f || fwrite(ref, 4, 65536, f) != 65536 || fclose(f))
        return 2;
    free(h), free(ref), free(v);
    return 0;
}

static int floats(const char *in, const char *out)
{
    FILE *f = fopen(in, "rb");
    if (!f || fseek(f, 0, SEEK_END))
        return 2;
    long bytes = ftell(f);
    rewind(f);
    ptrdiff_t n = bytes / 4;
    float *x = xmalloc((size_t)n * 4);
    uint16_t *ref = xmalloc((size_t)n * 2), *v = xmalloc((size_t)n * 2);
    if ((long)fread(x, 4, (size_t)n, f) != n || fclose(f))
        return 2;
    for (ptrdiff_t i = 0; i < n; i++) {
        uint32_t u = bits(x[i]);
        ref[i] = rknnx_f32_to_f16(x[i]);
        uint16_t e = emu_f32_to_f16(x[i]);
        if ((u & 0x7fffffffu) > 0x7f800000u)         /* NaN: the emulator quiets it */
            check(e == (uint16_t)(((u >> 16) & 0x8000u) | 0x7e00u | ((u >> 13) & 0x3ffu)),
                  "emu_f32_to_f16 nan", (long)u, e);
        else
            check(e == ref[i], "emu_f32_to_f16", (long)u, e);
    }
    for (int level = 0; level <= 2; level++) {
        rknnx_k_set_path(level);
        for (ptrdiff_t k = 0; k < 9 && k <= n; k++) {
            rknnx_k_f32_f16_row(x + k, v, n - k);
            for (ptrdiff_t i = 0; i < n - k; i++)
                check(v[i] == ref[k + i], "f32_f16_row", level, (long)(k + i));
        }
    }
    f = fopen(out, "wb");
    if (!f || (long)fwrite(ref, 2, (size_t)n, f) != n || fclose(f))
        return 2;
    free(x), free(ref), free(v);
    return 0;
}

/* ---- rows on exact buffers -------------------------------------------------------- */

static unsigned char *codes(size_t n, unsigned seed)
{
    unsigned char *p = xmalloc(n);
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        p[i] = (unsigned char)(seed >> 16);
    }
    return p;
}

static float deq(unsigned char b, int mode, float zp, float sc)
{
    return ((mode == 0 ? (float)(signed char)b : (float)b) - zp) * sc;
}

static void rows_1d(int level)
{
    const float zps[] = {-3.0f, 0.0f, 130.0f, 5000000.0f};    /* the last: no float trick */
    for (ptrdiff_t n = 0; n <= 90; n++) {
        unsigned char *s = codes((size_t)n, (unsigned)n);
        float *d = xmalloc((size_t)n * 4), *fs = xmalloc((size_t)n * 4);
        unsigned char *q = xmalloc((size_t)n);
        for (int z = 0; z < 4; z++) {
            for (int mode = 0; mode < 2; mode++) {
                if (mode == 0)
                    rknnx_k_deq_s8((const signed char *)s, d, n, zps[z], 0.0625f);
                else
                    rknnx_k_deq_u8(s, d, n, zps[z], 0.0625f);
                for (ptrdiff_t i = 0; i < n; i++)
                    check(bits(d[i]) == bits(deq(s[i], mode, zps[z], 0.0625f)), "deq row",
                          level, (long)i);
            }
        }
        for (ptrdiff_t i = 0; i < n; i++)
            fs[i] = ((float)s[i] - 128.0f) * 0.37f;
        if (n % 3 == 0 && n)
            fs[n / 2] = __builtin_nanf("");         /* NaN -> zp */
        rknnx_k_quant_row(fs, q, n, 0.5f, 3.0f, -128.0f, 127.0f);
        for (ptrdiff_t i = 0; i < n; i++)
            check(q[i] == (unsigned char)(int)rknnx_k_q1(fs[i], 0.5f, 3.0f, -128.0f, 127.0f),
                  "quant row", level, (long)i);
        free(s), free(d), free(fs), free(q);
    }
}

/* pixels of `block` codes at stride sw -> kmax rows (tiles16, tiles8) */
static void block_rows(int level, int block, ptrdiff_t W, ptrdiff_t sw, ptrdiff_t kmax,
                       int mode, float zp)
{
    const float sc = 0.03125f;
    const ptrdiff_t es = mode == 2 ? 1 : 4, dk = W * es + 8;
    unsigned char *src = codes((size_t)((W - 1) * sw + block), (unsigned)(W * 31 + kmax));
    char *dst = xmalloc((size_t)((kmax - 1) * dk + W * es));
    if (block == 16)
        check(rknnx_k_tiles16(src, sw, W, dst, dk, kmax, zp, sc, mode) == RKNNX_K_TILES,
              "tiles16 taken", level, W);
    else if (rknnx_k_tiles8_ok(zp, mode))
        rknnx_k_tiles8(src, sw, W, dst, dk, kmax, zp, sc, mode);
    else
        goto out;
    if (!RKNNX_K_TILES)
        goto out;
    for (ptrdiff_t k = 0; k < kmax; k++)
        for (ptrdiff_t w = 0; w < W; w++) {
            unsigned char b = src[w * sw + k];
            if (mode == 2)
                check((unsigned char)dst[k * dk + w] == b, "tiles raw", level, (long)w);
            else
                check(bits(((float *)(dst + k * dk))[w]) == bits(deq(b, mode, zp, sc)),
                      block == 16 ? "tiles16" : "tiles8", level, (long)(k * 1000 + w));
        }
out:
    free(src), free(dst);
}

/* pixels of `block` halves -> kmax float32 rows (tiles8h, tiles4h) */
static void half_rows(int level, int block, ptrdiff_t W, ptrdiff_t kmax)
{
    const ptrdiff_t sw = 2 * block, dk = W * 4 + 4;
    unsigned char *src = codes((size_t)(W * sw), (unsigned)(W * 7 + kmax));
    char *dst = xmalloc((size_t)((kmax - 1) * dk + W * 4));
    if (!rknnx_k_tiles8h_ok())
        goto out;
    if (block == 8)
        rknnx_k_tiles8h(src, sw, W, dst, dk, kmax);
    else
        rknnx_k_tiles4h(src, sw, W, dst, dk, kmax);
    for (ptrdiff_t k = 0; k < kmax; k++)
        for (ptrdiff_t w = 0; w < W; w++) {
            uint16_t h;
            memcpy(&h, src + w * sw + 2 * k, 2);
            check(bits(((float *)(dst + k * dk))[w]) == bits(rknnx_f16_to_f32(h)), "tiles h",
                  level, (long)(k * 1000 + w));
        }
out:
    free(src), free(dst);
}

static void untiles(ptrdiff_t P, ptrdiff_t kmax)
{
    const ptrdiff_t sk = P + 3, dw = 16;
    unsigned char *src = codes((size_t)(kmax ? (kmax - 1) * sk + P : 0), (unsigned)P);
    unsigned char *dst = xmalloc((size_t)(P * dw));
    if (!rknnx_k_untiles16(src, sk, kmax, P, dst, dw))
        goto out;
    for (ptrdiff_t p = 0; p < P; p++)
        for (ptrdiff_t k = 0; k < 16; k++)
            check(dst[p * dw + k] == (k < kmax ? src[k * sk + p] : 0), "untiles16", (long)P,
                  (long)k);
out:
    free(src), free(dst);
}

static int rows(void)
{
    const ptrdiff_t widths[] = {16, 17, 19, 23, 32, 33, 45};
    const float zps[] = {-3.0f, 200.0f, 5000000.0f};
    for (int level = 0; level <= 2; level++) {
        rknnx_k_set_path(level);
        rows_1d(level);
        for (int wi = 0; wi < 7; wi++) {
            ptrdiff_t W = widths[wi];
            for (ptrdiff_t kmax = 1; kmax <= 16; kmax++) {
                for (int mode = 0; mode < 3; mode++)
                    for (int z = 0; z < 3; z++) {
                        block_rows(level, 16, W, 16, kmax, mode, zps[z]);
                        block_rows(level, 16, W, 48, kmax, mode, zps[z]);
                        if (kmax <= 8) {
                            block_rows(level, 8, W, 8, kmax, mode, zps[z]);
                            block_rows(level, 8, W, 24, kmax, mode, zps[z]);
                        }
                    }
                if (kmax <= 8)
                    half_rows(level, 8, W, kmax);
                if (kmax <= 4)
                    half_rows(level, 4, W, kmax);
            }
        }
    }
    for (ptrdiff_t P = 16; P <= 40; P += 3)
        for (ptrdiff_t kmax = 0; kmax <= 16; kmax++)
            untiles(P, kmax);
    return 0;
}

int main(int argc, char **argv)
{
    int rc;
    if (argc == 3 && !strcmp(argv[1], "halves"))
        rc = halves(argv[2]);
    else if (argc == 4 && !strcmp(argv[1], "floats"))
        rc = floats(argv[2], argv[3]);
    else if (argc == 2 && !strcmp(argv[1], "rows"))
        rc = rows();
    else {
        fprintf(stderr, "usage: kernels_check halves OUT | floats IN OUT | rows\n");
        return 2;
    }
    printf("kernels_check: %ld checks, %ld failed (paths: magic %d, tiles %d, avx2 %d)\n",
           checks, failed, RKNNX_K_MAGIC, RKNNX_K_TILES, rknnx_k_have_avx2());
    return rc ? rc : failed != 0;
}
