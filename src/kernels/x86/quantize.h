// QuantizeLinear / DequantizeLinear between f32 and 8-bit integers with one scale and zero point for the
// whole tensor: the activations' Q / DQ pairs of a QDQ model (onnxruntime's default quantization format),
// which otherwise ran on the reference kernels at 14-22x onnxruntime's time around every quantized op.
// Quantize: y = clamp(nearbyint(x / scale) + zero_point) (a NaN quotient counts as 0), as the reference;
// dequantize: y = (x - zero_point) * scale.
#pragma once

#include <cstdint>

#include "core/thread_pool.h"

namespace tessera::kernels::x86 {

// c = QuantizeLinear(DequantizeLinear(a) + DequantizeLinear(b)) over n elements of same-shape u8 / s8
// tensors, per-tensor parameters, in those nodes' f32 operations (tessera.QLinearAdd: a QDQ model's
// residual Add).
struct QAddParams {
  float sa = 1, za = 0, sb = 1, zb = 0, sc = 1, zc = 0;
};
void qlinear_add_8bit(const void* a, bool a_signed, const void* b, bool b_signed, int64_t n,
                      const QAddParams& p, void* c, bool c_signed, ThreadPool* pool);
// its AVX-512 loop over one range (avx512f/qadd__avx512f.cpp)
void qlinear_add_8bit__avx512f(const void* a, bool a_signed, const void* b, bool b_signed, int64_t n,
                               const QAddParams& p, void* c, bool c_signed);

// y [planes][plane] = the requantization (as qgemm.h: f32(int32(acc) + bias[c]) * scale[c], clamped, rounded
// half to even, plus y_zero) to u8 / s8 of a conv whose integer sums were formed exactly in f32 (a depthwise
// QLinearConv on the f32 depthwise kernel); scale one value or one per plane, bias per plane or none.
void requantize_planes_f32(const float* acc, int64_t planes, int64_t plane, const int32_t* bias,
                           const float* scale, bool scale_per_plane, int32_t y_zero, bool y_signed, void* y,
                           ThreadPool* pool);

// y[i] = table[x[i]] over bytes (tessera.QLookup: a quantized elementwise function as its 256 values);
// AVX-512 VBMI where the CPU has it, else scalar. Threaded over the pool.
void lookup_bytes(const uint8_t* x, int64_t n, const uint8_t* table, uint8_t* y, ThreadPool* pool);
void lookup_bytes__avx512vbmi(const uint8_t* x, int64_t n, const uint8_t* table, uint8_t* y);

// min(0, min x) and max(0, max x), NaNs skipped: DynamicQuantizeLinear's range.
void minmax0_f32(const float* x, int64_t n, float* mn, float* mx);

void quantize_u8_f32(const float* x, int64_t n, float scale, int32_t zero_point, uint8_t* y,
                     ThreadPool* pool);
void quantize_i8_f32(const float* x, int64_t n, float scale, int32_t zero_point, int8_t* y, ThreadPool* pool);
void dequantize_u8_f32(const uint8_t* x, int64_t n, float scale, int32_t zero_point, float* y,
                       ThreadPool* pool);
void dequantize_i8_f32(const int8_t* x, int64_t n, float scale, int32_t zero_point, float* y,
                       ThreadPool* pool);

}  // namespace tessera::kernels::x86
