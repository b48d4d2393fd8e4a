// AVX-512 intrinsics on an AVX2 machine, for testing only (CMake option
// TESSERA_EMULATE_AVX512): the AVX-512 kernel files are compiled for AVX2 with
// this header forced in first, so that their _mm512_* calls and types become
// SIMDe's portable versions (libsimde-dev), and cpu_features() then reports
// AVX-512 — every AVX-512 kernel runs, slowly, through the same tests as the AVX2
// ones. Not for speed: nothing here is tuned.
//
// SIMDe's own "native aliases" cannot be used: they typedef __m512, which GCC's
// immintrin.h already declares. Instead each name is renamed by a macro, from a
// list generated at configure time from SIMDe's headers (avx512_names.h), plus the
// few intrinsics SIMDe 0.7.4 lacks, written out below.
#pragma once

#include <math.h>
#include <stdint.h>
#include <simde/x86/avx512.h>
#include <string.h>

#define __m512 simde__m512
#define __m512i simde__m512i
#define __m512d simde__m512d
#define __mmask8 simde__mmask8
#define __mmask16 simde__mmask16

// _mm512_add_ps -> simde_mm512_add_ps, ... (every simde_mm512_*, simde_mm256_mask*, simde_mm_mask* ...)
#include "avx512_names.h"

// Masked loads read only the lanes that are set (a lane past the end of a buffer
// must not be touched), masked stores write only those.
static inline simde__m512 tessera_emu_mm512_mask_loadu_ps(simde__m512 src, simde__mmask16 k, const void* p) {
  float v[16];
  simde_mm512_storeu_ps(v, src);
  for (int i = 0; i < 16; ++i)
    if ((k >> i) & 1) memcpy(&v[i], static_cast<const float*>(p) + i, sizeof(float));
  return simde_mm512_loadu_ps(v);
}
static inline simde__m512 tessera_emu_mm512_maskz_loadu_ps(simde__mmask16 k, const void* p) {
  return tessera_emu_mm512_mask_loadu_ps(simde_mm512_setzero_ps(), k, p);
}
static inline void tessera_emu_mm512_mask_storeu_ps(void* p, simde__mmask16 k, simde__m512 a) {
  float v[16];
  simde_mm512_storeu_ps(v, a);
  for (int i = 0; i < 16; ++i)
    if ((k >> i) & 1) memcpy(static_cast<float*>(p) + i, &v[i], sizeof(float));
}
static inline simde__m256 tessera_emu_mm256_maskz_loadu_ps(simde__mmask8 k, const void* p) {
  float v[8] = {};
  for (int i = 0; i < 8; ++i)
    if ((k >> i) & 1) memcpy(&v[i], static_cast<const float*>(p) + i, sizeof(float));
  return simde_mm256_loadu_ps(v);
}
static inline void tessera_emu_mm256_mask_storeu_ps(void* p, simde__mmask8 k, simde__m256 a) {
  float v[8];
  simde_mm256_storeu_ps(v, a);
  for (int i = 0; i < 8; ++i)
    if ((k >> i) & 1) memcpy(static_cast<float*>(p) + i, &v[i], sizeof(float));
}
// Reductions in the order GCC's own use: halves added (or maxed) down to one lane.
static inline float tessera_emu_mm512_reduce_add_ps(simde__m512 a) {
  float v[16];
  simde_mm512_storeu_ps(v, a);
  for (int w = 8; w >= 1; w /= 2)
    for (int i = 0; i < w; ++i) v[i] += v[i + w];
  return v[0];
}
static inline float tessera_emu_mm512_reduce_max_ps(simde__m512 a) {
  float v[16];
  simde_mm512_storeu_ps(v, a);
  for (int w = 8; w >= 1; w /= 2)
    for (int i = 0; i < w; ++i) v[i] = v[i] > v[i + w] ? v[i] : v[i + w];
  return v[0];
}
// SIMDe's scalef multiplies by exp2(floor(b)), which overflows to inf for b = 128
// where VSCALEFPS does not (exp(88.4) = 0.6 * 2^128 is finite), and it flushes
// subnormals; per lane with ldexp instead, as the instruction scales.
static inline simde__m512 tessera_emu_mm512_scalef_ps(simde__m512 a, simde__m512 b) {
  float x[16], e[16];
  simde_mm512_storeu_ps(x, a);
  simde_mm512_storeu_ps(e, b);
  for (int i = 0; i < 16; ++i) {
    if (isnan(x[i]) || isnan(e[i]))
      x[i] = x[i] + e[i];
    else if (isinf(e[i]))
      x[i] = e[i] > 0 ? (x[i] == 0 ? NAN : x[i] * INFINITY) : (isinf(x[i]) ? NAN : x[i] * 0.0f);
    else
      x[i] = ldexpf(x[i], int(fminf(fmaxf(floorf(e[i]), -400.0f), 400.0f)));
  }
  return simde_mm512_loadu_ps(x);
}
// vcvttps2dq: truncation; NaN and out-of-range lanes give INT32_MIN as on the hardware.
static inline simde__m512i tessera_emu_mm512_cvttps_epi32(simde__m512 a) {
  float x[16];
  int32_t r[16];
  simde_mm512_storeu_ps(x, a);
  for (int i = 0; i < 16; ++i) r[i] = x[i] > -2147483904.0f && x[i] < 2147483648.0f ? (int32_t)x[i] : INT32_MIN;
  return simde_mm512_loadu_si512(r);
}
static inline simde__m512 tessera_emu_mm512_cvtepi32_ps(simde__m512i a) {
  int32_t x[16];
  float r[16];
  simde_mm512_storeu_si512(x, a);
  for (int i = 0; i < 16; ++i) r[i] = (float)x[i];
  return simde_mm512_loadu_ps(r);
}
// The 8-bit kernels' intrinsics SIMDe 0.7.4 lacks (int8 convs, QLinearAdd, Where), with the hardware's
// semantics: vpmovdb truncates, vcvtps2dq rounds to nearest even (the default MXCSR; the kernels' explicit
// rounding is that too) and gives INT32_MIN for NaN and out-of-range lanes; masked loads and stores touch only
// the lanes that are set.
static inline int32_t tessera_emu_round_i32(float x) {
  return x > -2147483904.0f && x < 2147483648.0f ? (int32_t)nearbyintf(x) : INT32_MIN;
}
static inline simde__m512i tessera_emu_mm512_cvtps_epi32(simde__m512 a) {
  float x[16];
  int32_t r[16];
  simde_mm512_storeu_ps(x, a);
  for (int i = 0; i < 16; ++i) r[i] = tessera_emu_round_i32(x[i]);
  return simde_mm512_loadu_si512(r);
}
// vpsrad by an immediate (the vector math's exponent splits): counts of 32 or more fill with the sign
static inline simde__m512i tessera_emu_mm512_srai_epi32(simde__m512i a, unsigned int k) {
  int32_t x[16];
  simde_mm512_storeu_si512(x, a);
  for (int i = 0; i < 16; ++i) x[i] = k > 31 ? (x[i] < 0 ? -1 : 0) : (int32_t)(x[i] >> k);
  return simde_mm512_loadu_si512(x);
}
static inline simde__m512i tessera_emu_mm512_cvt_roundps_epi32(simde__m512 a, int) {
  return tessera_emu_mm512_cvtps_epi32(a);
}
static inline __m128i tessera_emu_mm512_cvtepi32_epi8(simde__m512i a) {
  int32_t x[16];
  uint8_t r[16];
  simde_mm512_storeu_si512(x, a);
  for (int i = 0; i < 16; ++i) r[i] = (uint8_t)(uint32_t)x[i];
  return _mm_loadu_si128((const __m128i*)r);
}
static inline simde__m512i tessera_emu_mm512_cvtepi8_epi32(__m128i a) {
  int8_t x[16];
  int32_t r[16];
  _mm_storeu_si128((__m128i*)x, a);
  for (int i = 0; i < 16; ++i) r[i] = x[i];
  return simde_mm512_loadu_si512(r);
}
static inline simde__m512i tessera_emu_mm512_cvtepu8_epi32(__m128i a) {
  uint8_t x[16];
  int32_t r[16];
  _mm_storeu_si128((__m128i*)x, a);
  for (int i = 0; i < 16; ++i) r[i] = x[i];
  return simde_mm512_loadu_si512(r);
}
static inline __m128i tessera_emu_mm_maskz_loadu_epi8(simde__mmask16 k, const void* p) {
  uint8_t v[16] = {};
  for (int i = 0; i < 16; ++i)
    if ((k >> i) & 1) v[i] = static_cast<const uint8_t*>(p)[i];
  return _mm_loadu_si128((const __m128i*)v);
}
static inline void tessera_emu_mm_mask_storeu_epi8(void* p, simde__mmask16 k, __m128i a) {
  uint8_t v[16];
  _mm_storeu_si128((__m128i*)v, a);
  for (int i = 0; i < 16; ++i)
    if ((k >> i) & 1) static_cast<uint8_t*>(p)[i] = v[i];
}
static inline simde__m512i tessera_emu_mm512_maskz_loadu_epi32(simde__mmask16 k, const void* p) {
  int32_t v[16] = {};
  for (int i = 0; i < 16; ++i)
    if ((k >> i) & 1) memcpy(&v[i], static_cast<const int32_t*>(p) + i, sizeof(int32_t));
  return simde_mm512_loadu_si512(v);
}
static inline void tessera_emu_mm512_mask_storeu_epi32(void* p, simde__mmask16 k, simde__m512i a) {
  int32_t v[16];
  simde_mm512_storeu_si512(v, a);
  for (int i = 0; i < 16; ++i)
    if ((k >> i) & 1) memcpy(static_cast<int32_t*>(p) + i, &v[i], sizeof(int32_t));
}
static inline simde__mmask16 tessera_emu_mm_test_epi8_mask(__m128i a, __m128i b) {
  uint8_t x[16], y[16];
  _mm_storeu_si128((__m128i*)x, a);
  _mm_storeu_si128((__m128i*)y, b);
  simde__mmask16 m = 0;
  for (int i = 0; i < 16; ++i) m = (simde__mmask16)(m | ((x[i] & y[i]) ? 1u << i : 0u));
  return m;
}
// The explicit-rounding arithmetic (QLinearAdd's, written so that the compiler does not contract it into
// FMAs) with round-to-nearest, the only mode the kernels pass: the plain ops (these files are built with
// -ffp-contract=off under emulation).
#define _mm512_add_round_ps(a, b, r) simde_mm512_add_ps(a, b)
#define _mm512_sub_round_ps(a, b, r) simde_mm512_sub_ps(a, b)
#define _mm512_mul_round_ps(a, b, r) simde_mm512_mul_ps(a, b)
#define _mm512_div_round_ps(a, b, r) simde_mm512_div_ps(a, b)
#undef _mm512_cvtps_epi32
#define _mm512_cvtps_epi32 tessera_emu_mm512_cvtps_epi32
#undef _mm512_srai_epi32
#define _mm512_srai_epi32 tessera_emu_mm512_srai_epi32
#undef _mm512_cvt_roundps_epi32
#define _mm512_cvt_roundps_epi32 tessera_emu_mm512_cvt_roundps_epi32
#undef _mm512_cvtepi32_epi8
#define _mm512_cvtepi32_epi8 tessera_emu_mm512_cvtepi32_epi8
#undef _mm512_cvtepi8_epi32
#define _mm512_cvtepi8_epi32 tessera_emu_mm512_cvtepi8_epi32
#undef _mm512_cvtepu8_epi32
#define _mm512_cvtepu8_epi32 tessera_emu_mm512_cvtepu8_epi32
#undef _mm_maskz_loadu_epi8
#define _mm_maskz_loadu_epi8 tessera_emu_mm_maskz_loadu_epi8
#undef _mm_mask_storeu_epi8
#define _mm_mask_storeu_epi8 tessera_emu_mm_mask_storeu_epi8
#undef _mm512_maskz_loadu_epi32
#define _mm512_maskz_loadu_epi32 tessera_emu_mm512_maskz_loadu_epi32
#undef _mm512_mask_storeu_epi32
#define _mm512_mask_storeu_epi32 tessera_emu_mm512_mask_storeu_epi32
#undef _mm_test_epi8_mask
#define _mm_test_epi8_mask tessera_emu_mm_test_epi8_mask
#undef _mm512_scalef_ps
#define _mm512_scalef_ps tessera_emu_mm512_scalef_ps
#undef _mm512_cvtepi32_ps
#define _mm512_cvtepi32_ps tessera_emu_mm512_cvtepi32_ps
#undef _mm512_cvttps_epi32
#define _mm512_cvttps_epi32 tessera_emu_mm512_cvttps_epi32
#define _mm512_mask_loadu_ps tessera_emu_mm512_mask_loadu_ps
#define _mm512_maskz_loadu_ps tessera_emu_mm512_maskz_loadu_ps
#define _mm512_mask_storeu_ps tessera_emu_mm512_mask_storeu_ps
#define _mm256_maskz_loadu_ps tessera_emu_mm256_maskz_loadu_ps
#define _mm256_mask_storeu_ps tessera_emu_mm256_mask_storeu_ps
#define _mm512_reduce_add_ps tessera_emu_mm512_reduce_add_ps
#define _mm512_reduce_max_ps tessera_emu_mm512_reduce_max_ps
#define _mm512_undefined_ps simde_mm512_setzero_ps
