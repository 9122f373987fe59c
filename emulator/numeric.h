/*
 * rknnx emulator: scalar numerics shared by the model executor and the runtime layer.
 *
 * One definition of each conversion so that the general flow, the zero-copy flow and
 * the numpy reference (python/rknnx/emulator/reference.py) agree bit for bit:
 *   - float <-> float16: IEEE binary16, round to nearest even (numpy's astype), the one
 *     conversion of include/rknnx/rknnx_float16.h (NaN quieted on the way to float16);
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

#include "rknnx_float16.h"

static inline uint32_t emu_f32_bits(float f) { return rknnx_f32_bits(f); }
static inline float emu_bits_f32(uint32_t u) { return rknnx_bits_f32(u); }

/* numpy's conversion (include/rknnx/rknnx_float16.h), except that a NaN comes out quiet
   (the top payload bit set, the rest kept), as AArch64's FCVT makes it */
static inline uint16_t emu_f32_to_f16(float f)
{
    uint32_t x = emu_f32_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)(((x >> 16) & 0x8000u) | 0x7e00u | ((x >> 13) & 0x3ffu));
    return rknnx_f32_to_f16(f);
}

static inline float emu_f16_to_f32(uint16_t h)
{
    return rknnx_f16_to_f32(h);
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
