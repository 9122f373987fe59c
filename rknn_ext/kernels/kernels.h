/*
 * rknnx: the C of the layout and quantization kernels, as the binding sees it.
 *
 * rknn_ext/rknnx/_kernels.pxi checks the arguments in Python and walks the tensors
 * (its traversal picks a row function per run of elements); the loops that convert a
 * row, and the vector paths of nc1hwc2_to_nchw, are here:
 *   kernels.c   the row functions, the block-row paths and the one dispatch between the
 *               plain expression, 128-bit vectors and AVX2 (rknnx_k_path, CPUID);
 *   vec128.h    the 128-bit helpers (GCC/Clang vector extensions: SSE2 on x86-64, NEON
 *               on aarch64, no intrinsics; __builtin_shuffle on GCC 10 and 11);
 *   avx2.h      the 256-bit paths of x86-64 processors with AVX2 (chosen at run time).
 * The numbers equal numpy's bit for bit (the expressions are in _kernels.pxi's header);
 * float16 is include/rknnx/rknnx_float16.h, the conversion the emulator uses too.
 * Built with the emulator's warnings and -ffp-contract=off (CMakeLists.txt).
 */
#ifndef RKNNX_KERNELS_H
#define RKNNX_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "rknnx_float16.h"

/* What this compiler can build (each 0 or 1):
   RKNNX_K_VQ     GCC >= 10 or Clang: vector extensions (the quantize vectors, the tiles)
   RKNNX_K_WIDE   __builtin_shufflevector (Clang, GCC >= 12), needed to shuffle into a
                  wider vector; GCC 10 and 11 shuffle with __builtin_shuffle instead
   RKNNX_K_MAGIC  the float trick of the dequantizing paths: it reads bytes as 16- and
                  32-bit lanes (little-endian only) and needs IEEE float vectors (SSE2,
                  AArch64; ARMv7 NEON flushes subnormals and drops NaN payloads)
   RKNNX_K_TILES  the block-row paths of nc1hwc2_to_nchw / nchw_to_nc1hwc2
   RKNNX_K_AVX2   the 256-bit paths (x86-64; the processor is asked at run time) */
#if defined(__GNUC__) && ((__GNUC__ >= 10) || defined(__clang__))
#define RKNNX_K_VQ 1
#else
#define RKNNX_K_VQ 0
#endif
#if RKNNX_K_VQ && (defined(__clang__) || __GNUC__ >= 12)
#define RKNNX_K_WIDE 1
#else
#define RKNNX_K_WIDE 0
#endif
#if RKNNX_K_VQ && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ \
    && (defined(__SSE2__) || defined(__aarch64__))
#define RKNNX_K_MAGIC 1
#else
#define RKNNX_K_MAGIC 0
#endif
#define RKNNX_K_TILES RKNNX_K_VQ
#if RKNNX_K_MAGIC && RKNNX_K_WIDE && defined(__x86_64__)
#define RKNNX_K_AVX2 1
#else
#define RKNNX_K_AVX2 0
#endif

/* clip(rint(x / sc) + zp, lo, hi), NaN -> clip(zp): rint through 2**23 on |v| (round to
   nearest even, symmetric), the sign put back; |v| >= 2**23 (and inf) is already an
   integer.  The sign of a zero result does not matter: it only feeds the addition of zp
   and the conversion to an integer.  Inline: the strided loops call it per element. */
static inline float rknnx_k_q1(float x, float sc, float zp, float lo, float hi)
{
    const float big = 8388608.0f;
    float v = x / sc;
    float a = __builtin_fabsf(v);
    float t = (a + big) - big;
    float r = a < big ? __builtin_copysignf(t, v) : v;
    r = v != v ? 0.0f : r;
    r = r + zp;
    r = r < lo ? lo : r;
    r = r > hi ? hi : r;
    return r;
}

/* The widest dequantizing path the kernels may take: 2 AVX2 (where the processor has
   it), 1 128-bit vectors, 0 the plain expression.  Lowered only by the tests and the
   benchmark (rknnx._core._kernel_path), to run the boards' 128-bit path here;
   rknnx_k_set_path returns the level before. */
int rknnx_k_path(void);
int rknnx_k_set_path(int level);
int rknnx_k_have_avx2(void);

/* Contiguous rows of n elements. */
void rknnx_k_quant_row(const float *s, unsigned char *d, ptrdiff_t n, float sc, float zp,
                       float lo, float hi);
void rknnx_k_quant_strided(const char *s, ptrdiff_t ss, char *d, ptrdiff_t ds, ptrdiff_t n,
                           float sc, float zp, float lo, float hi);
void rknnx_k_deq_s8(const signed char *s, float *d, ptrdiff_t n, float zp, float sc);
void rknnx_k_deq_u8(const unsigned char *s, float *d, ptrdiff_t n, float zp, float sc);
void rknnx_k_f16_row(const uint16_t *s, float *d, ptrdiff_t n);
void rknnx_k_f32_f16_row(const float *s, uint16_t *d, ptrdiff_t n);
void rknnx_k_lut32_row(const unsigned char *s, float *d, ptrdiff_t n, const float *lut);
void rknnx_k_lut16_row(const unsigned char *s, uint16_t *d, ptrdiff_t n,
                       const uint16_t *lut);

/* Block rows of NC1HWC2: W pixels (pixel stride sw bytes, the block's codes contiguous)
   <-> kmax rows of W values (row stride dk bytes, values contiguous).  mode 0: int8 ->
   float32, 1: uint8 -> float32, 2: bytes copied.  rknnx_k_tiles16 and
   rknnx_k_untiles16 return 0 when the compiler has no vector extensions (the caller then
   takes the plain loops); the 8- and 4-channel paths are taken only when their _ok says
   so (W >= 16 for all). */
int rknnx_k_tiles16(const unsigned char *src, ptrdiff_t sw, ptrdiff_t W, char *dst,
                    ptrdiff_t dk, ptrdiff_t kmax, float zp, float sc, int mode);
int rknnx_k_untiles16(const unsigned char *src, ptrdiff_t sk, ptrdiff_t kmax, ptrdiff_t P,
                      unsigned char *dst, ptrdiff_t dw);
int rknnx_k_tiles8_ok(float zp, int mode);
void rknnx_k_tiles8(const unsigned char *src, ptrdiff_t sw, ptrdiff_t W, char *dst,
                    ptrdiff_t dk, ptrdiff_t kmax, float zp, float sc, int mode);
int rknnx_k_tiles8h_ok(void);
void rknnx_k_tiles8h(const unsigned char *src, ptrdiff_t sw, ptrdiff_t W, char *dst,
                     ptrdiff_t dk, ptrdiff_t kmax);
void rknnx_k_tiles4h(const unsigned char *src, ptrdiff_t sw, ptrdiff_t W, char *dst,
                     ptrdiff_t dk, ptrdiff_t kmax);

#endif /* RKNNX_KERNELS_H */
