/*
 * rknnx emulator: scalar numerics shared by the model executor and the runtime layer.
 *
 * One definition of each conversion so that the general flow, the zero-copy flow and
 * the numpy reference (python/rknnx/emulator/reference.py) agree bit for bit:
 *   - float <-> float16: IEEE binary16, round to nearest even (numpy's astype);
 *   - quantize: q = clamp(rint(x / scale) + zp) in float32, rint = round half to even
 *     (numpy's np.rint), saturating to the integer type's range;
 *   - dequantize: (q - zp) * scale in float32.
 * The build uses -ffp-contract=off so no FMA changes a rounding.
 */
#ifndef RKNNX_EMU_NUMERIC_H
#define RKNNX_EMU_NUMERIC_H

#include <math.h>
#include <stdint.h>
#include <string.h>

static inline uint32_t emu_f32_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static inline float emu_bits_f32(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

static inline uint16_t emu_f32_to_f16(float f)
{
    uint32_t x = emu_f32_bits(f);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    uint32_t absx = x & 0x7fffffffu;
    if (absx >= 0x7f800000u)                       /* inf or nan */
        return (uint16_t)(sign | 0x7c00u | (absx > 0x7f800000u ? 0x200u | ((absx >> 13) & 0x3ffu) : 0));
    if (absx >= 0x477ff000u)                       /* rounds to >= 65520: overflow to inf */
        return (uint16_t)(sign | 0x7c00u);
    if (absx < 0x38800000u) {                      /* result is subnormal or zero */
        if (absx < 0x33000000u)                    /* below half the smallest subnormal */
            return sign;
        uint32_t mant = (absx & 0x7fffffu) | 0x800000u;
        int shift = 126 - (int)(absx >> 23);       /* 14..24 */
        uint32_t half = mant >> shift;
        uint32_t rem = mant & ((1u << shift) - 1u);
        uint32_t mid = 1u << (shift - 1);
        if (rem > mid || (rem == mid && (half & 1u)))
            half++;
        return (uint16_t)(sign | half);
    }
    uint32_t h = ((absx >> 13) - ((127u - 15u) << 10)); /* rebias exponent, keep 10 mantissa bits */
    uint32_t rem = absx & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u)))
        h++;                                       /* may carry into the exponent: still correct */
    return (uint16_t)(sign | h);
}

static inline float emu_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t mant = h & 0x3ffu;
    if (exp == 0x1f)
        return emu_bits_f32(sign | 0x7f800000u | (mant << 13));
    if (exp == 0) {
        if (mant == 0)
            return emu_bits_f32(sign);
        float v = (float)mant * (1.0f / 16777216.0f); /* mant * 2^-24 */
        return sign ? -v : v;
    }
    return emu_bits_f32(sign | ((exp + 112u) << 23) | (mant << 13));
}

static inline float emu_clampf(float v, float lo, float hi)
{
    return v < lo ? lo : (v > hi ? hi : v);
}

/* real -> affine-quantized integer, saturating to [lo, hi]; NaN maps to zp */
static inline int32_t emu_quantize(float x, float scale, int32_t zp, int32_t lo, int32_t hi)
{
    float q = rintf(x / scale);
    if (q != q)
        return zp < lo ? lo : (zp > hi ? hi : zp);
    q = emu_clampf(q + (float)zp, (float)lo, (float)hi);
    return (int32_t)q;
}

static inline float emu_dequantize(int32_t q, float scale, int32_t zp)
{
    return (float)(q - zp) * scale;
}

#endif /* RKNNX_EMU_NUMERIC_H */
