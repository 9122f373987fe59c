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
 *
 * Two more follow the vendor runtime's CPU conversions byte for byte (docs/abi-notes.md,
 * "NPU-side bytes"; the vendor's librknnrt 1.5.2 and 1.6.0 answers for real files):
 *   - emu_quantize_input: an input the runtime quantizes on the CPU (rknn_inputs_set of a
 *     non-image int8 tensor): v = x / scale + zp in float32, rounded half to even after
 *     the zero point is added, and wrapped (not saturated) to the integer type;
 *   - emu_dequantize_vec: the runtime's vector path of rknn_outputs_get(want_float=1),
 *     q * scale - zp * scale with both products rounded to float32 (the scalar path is
 *     emu_dequantize); which elements take which path is decided in emu_convert.
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

static inline float emu_dequantize_vec(int32_t q, float scale, int32_t zp)
{
    float a = (float)q * scale;
    float b = (float)zp * scale;
    return a - b;
}

/* the vendor's CPU quantization of an input (see above): NaN maps to zp; the result is
   the rounded value before wrapping, which the caller truncates to the type's width */
static inline int64_t emu_quantize_input(float x, float scale, int32_t zp)
{
    float v = x / scale;
    v = v + (float)zp;
    if (v != v)
        return zp;
    v = emu_clampf(v, -9.0e18f, 9.0e18f);
    return (int64_t)rint((double)v);
}

#endif /* RKNNX_EMU_NUMERIC_H */
