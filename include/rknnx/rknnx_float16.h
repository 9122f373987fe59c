/*
 * rknnx: float32 <-> IEEE binary16 (float16), one scalar conversion for the whole tree.
 *
 * Included by the binding's kernels (rknn_ext/kernels/: the vector paths' tails and the
 * Cython strided loops) and by the emulator (emulator/numeric.h).  Bit for bit numpy's
 * astype:
 *   rknnx_f32_to_f16  round to nearest even, overflow to inf, float16 subnormals, NaN
 *                     keeping the top 10 payload bits (1 when they are all zero);
 *   rknnx_f16_to_f32  exact (NaN payloads shifted up, not quieted).
 * The float steps (adding 0.5, subtracting 2**-14) are exact in the default
 * round-to-nearest mode and only ever see or produce normal float32 numbers; no product
 * feeds a sum, so no fused multiply-add can change a result.
 * tests/binding/test_kernels_c.py checks both against numpy over every half.
 */
#ifndef RKNNX_FLOAT16_H
#define RKNNX_FLOAT16_H

#include <stdint.h>
#include <string.h>

static inline uint32_t rknnx_f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static inline float rknnx_bits_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* float32 -> float16 bits, round to nearest even (numpy's astype) */
static inline uint16_t rknnx_f32_to_f16(float f)
{
    uint32_t x = rknnx_f32_bits(f);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t a = x & 0x7fffffffu;
    uint32_t h, m;
    if (a >= 0x47800000u) {
        /* >= 65536 (or inf, nan): inf, or nan keeping the top payload bits (never 0) */
        m = (a >> 13) & 0x3ffu;
        return (uint16_t)(sign | 0x7c00u | (a > 0x7f800000u ? (m ? m : 1u) : 0u));
    }
    if (a < 0x38800000u) {
        /* below 2**-14: a float16 subnormal (or zero); adding 0.5, whose float32 ulp is
           2**-24 (the float16 subnormal step), rounds to the nearest step, ties to even,
           and 2**-14 itself comes out as 0x400, the smallest normal */
        h = rknnx_f32_bits(rknnx_bits_f32(a) + 0.5f);
        return (uint16_t)(sign | (h - 0x3f000000u));
    }
    /* normal: rebias the exponent, round the 13 dropped bits to nearest even; a carry
       runs into the exponent (up to inf for [65520, 65536)) as it should.
       0xc8000000 = (15 - 127) << 23 mod 2**32 */
    h = a + 0xc8000fffu + ((a >> 13) & 1u);
    return (uint16_t)(sign | (h >> 13));
}

/* float16 bits -> float32 (exact) */
static inline float rknnx_f16_to_f32(uint16_t hb)
{
    uint32_t sign = (uint32_t)(hb & 0x8000u) << 16;
    uint32_t o = (uint32_t)(hb & 0x7fffu) << 13;
    uint32_t e = o & 0x0f800000u;
    if (e == 0x0f800000u)                  /* inf / nan */
        o += 0x70000000u;                  /* (255 - 31) << 23 */
    else if (e == 0)                       /* zero / subnormal: renormalized exactly */
        o = rknnx_f32_bits(rknnx_bits_f32(o + 0x38800000u) - 6.103515625e-05f); /* 2**-14 */
    else
        o += 0x38000000u;                  /* (127 - 15) << 23 */
    return rknnx_bits_f32(o | sign);
}

#endif /* RKNNX_FLOAT16_H */
