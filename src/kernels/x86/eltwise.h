// Tuned f32 elementwise, softmax, layer-norm and transpose kernels, chosen at
// run time by CPU features (AVX-512F, AVX2+FMA, or a portable std:: fallback).
//
// Vector math (eltwise_impl.h, compiled once per ISA folder), max error against
// the correctly rounded result, measured over dense sweeps in
// tests/unit/x86_eltwise_test.cpp (the bounds the tests enforce):
//   exp      <= 1.5 ulp (measured 0.90; subnormal results counted in subnormal ulps)
//   erf      <= 2.5 ulp (measured 2.34, near |x| = 0.97)
//   tanh     <= 6 ulp   (measured 5.69 near |x| = 6.3; a rational function, 2.4x faster than the exp form
//            it replaced (<= 2.5 ulp), which GELU keeps)
//   log      <= 1.75 ulp (measured 1.51; -inf at +-0, NaN below 0, +inf at +inf; subnormals scaled first)
//   sin, cos <= 2 ulp   (measured 1.57; Cody-Waite, pi/2 in three parts, for |x| <= 105414, double
//            std::sin / std::cos per lane beyond and for +-inf)
//   softplus <= 2.5 ulp (measured 2.30; max(x, 0) + log1p(e^{-|x|}))
//   pow      <= 2 ulp for |b| <= 8, <= 5 ulp for |b| <= 80 (measured 1.19, 4.68; e^{b log a} with log a and
//            b log a in two parts) for finite a > 0 and normal results, std::pow in double per lane else
//   sigmoid  <= 3 ulp   (measured 2.52)
//   silu     <= 4 ulp   (measured 2.40; x / (1 + e^{-x}), a degree-6 e^r; results under 1e-30 in magnitude,
//            x < -64, held to 1e-30 absolutely; -0 past -88.7, NaN for -inf as x * sigmoid(x) gives)
//   gelu_erf, gelu_tanh: absolute error <= 2e-7 * max(1, |x|) (measured, AVX-512 / AVX2 / portable:
//   0.87e-7 / 1.04e-7 / 1.05e-7 and 0.85e-7 / 0.95e-7 / 1.44e-7). AVX-512 computes them as
//   x/2 + |x| E(|x|) with E(a) = (f(a) - f(-a)) / 4 tabulated (GeluTable), AVX2 and portable as written,
//   x/2 (1 + f); either way, for x below about -3 the result is a small difference (as in the
//   exporters' unfused graphs and in onnxruntime), not correctly rounded.
// NaN in gives NaN out; exp(+inf)=+inf, exp(-inf)=0, erf/tanh(+-inf)=+-1,
// sigmoid(+inf)=1, sigmoid(-inf)=0. The portable path uses std::exp/erf/tanh/log/sin/cos/pow in
// float (measured: exp 0.50, erf 0.86, tanh 2.07, sigmoid 2.52 ulp).
#pragma once

#include <cstdint>
#include <vector>

#include "core/thread_pool.h"

namespace tessera::kernels::x86 {

enum class EltIsa : uint8_t { portable, avx2, avx512f };
const char* eltwise_isa_name(EltIsa isa);
bool eltwise_isa_available(EltIsa isa);
// The best available ISA (honours TESSERA_ISA), or the one forced for tests.
EltIsa eltwise_isa();
// Tests: force a (lower, available) ISA; pass nullptr-like `reset` = true to undo.
void force_eltwise_isa(EltIsa isa, bool reset = false);

// gelu_erf(x) = x/2 (1 + erf(x/sqrt 2)); gelu_tanh(x) = x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)));
// silu(x) = x * sigmoid(x); hardswish(x) = x * clamp(x / 6 + 1/2, 0, 1) (ONNX's HardSwish: <= 2 ulp against
// that formula with x / 6 rounded as the reference rounds it, measured 1.48).
enum class UnaryOp : uint8_t {
  exp,
  erf,
  tanh,
  sigmoid,
  relu,
  gelu_erf,
  gelu_tanh,
  silu,
  hardswish,
  log,
  sin,
  cos,
  softplus
};
// pow: std::pow's values (a < 0, 0, inf, NaN and out-of-range results through it per lane)
enum class BinaryOp : uint8_t { add, sub, mul, div, pow };

// The GELUs as x/2 + |x| E(|x|), E(a) = erf(a / sqrt 2) / 2 or tanh(sqrt(2/pi) (a + 0.044715 a^3)) / 2 (odd
// functions, so this is x/2 (1 + f(x)) for either sign of x): E on [0, kRange) by a polynomial of degree
// kDegree in u = a / w - j on each interval j of width w = kRange / kIntervals, past kRange the last
// interval's value at u = 1 (E is 0.5 within 1e-9 there). Coefficient k of interval j at c[k][j] — a
// 32-entry table per coefficient, looked up by a two-register permute. Computed at start-up by
// interpolation at each interval's Chebyshev nodes (|p - E| <= 1.5e-8 with f32 coefficients).
struct GeluTable {
  static constexpr int kIntervals = 32, kDegree = 4;
  static constexpr float kRange = 6.0f;
  alignas(64) float c[kDegree + 1][kIntervals];
};
// op: gelu_erf or gelu_tanh.
const GeluTable& gelu_table(UnaryOp op);

// Single-thread row kernels of one ISA.
struct EltwiseKernels {
  // y[i] = op(x[i]), i < n (y may alias x).
  void (*unary)(UnaryOp op, const float* x, float* y, int64_t n);
  // y[i] = a[i * sa] op b[i * sb], i < n, with sa, sb in {0, 1} (0: a broadcast scalar).
  void (*binary)(BinaryOp op, const float* a, int64_t sa, const float* b, int64_t sb, float* y, int64_t n);
  // Softmax of each of `rows` rows of `len` contiguous floats, rows `ld` floats apart in x and y.
  void (*softmax_rows)(const float* x, float* y, int64_t rows, int64_t len, int64_t ld);
  // y = (x - mean) / sqrt(var + eps) * scale + bias per row; bias may be null. scale and bias have a value
  // per element of a row (run 0), or one per run of `run` elements: row r's element i takes
  // scale[r * (len / run) + i / run] (len a multiple of run).
  void (*layernorm_rows)(const float* x, const float* scale, const float* bias, float* y, int64_t rows,
                         int64_t len, float eps, int64_t run);
  // y = x / sqrt(mean(x^2) + eps) * scale per row (RMSNormalization), scale per element of a row.
  void (*rmsnorm_rows)(const float* x, const float* scale, float* y, int64_t rows, int64_t len, float eps);
  // Online softmax over one block of keys (flash attention), per row i of `len` scores at s + i * lds:
  // mn = max(m[i], max(row)); row = exp(row - mn); corr[i] = exp(m[i] - mn) (0 while m[i] = -inf);
  // l[i] = l[i] * corr[i] + sum(row); m[i] = mn. A row still all -inf gives zeros and corr 1.
  void (*online_softmax_rows)(float* s, int64_t lds, int64_t rows, int64_t len, float* m, float* l,
                              float* corr);
  // One 16 x 16 tile: y[a * ldy + b] = x[b * ldx + a] for a, b < 16.
  void (*transpose_tile16)(const float* x, int64_t ldx, float* y, int64_t ldy);
  // Three planes interleaved (an image's NCHW -> NHWC with 3 channels): y[3 a + b] = x[b * ldx + a], a < n.
  void (*interleave3)(const float* x, int64_t ldx, float* y, int64_t n);
  // LogSoftmax of each row, as softmax_rows: x - max - log(sum(exp(x - max))).
  void (*log_softmax_rows)(const float* x, float* y, int64_t rows, int64_t len, int64_t ld);
};
// The kernels of `isa` (must be available).
const EltwiseKernels& eltwise_kernels(EltIsa isa);

// How an operand of a binary op is indexed over an [outer, inner] output.
enum class Bcast : uint8_t { full, row, col, scalar };  // a[o*inner+i], a[i], a[o], a[0]

// Threaded entry points (pool may be null).
void unary_f32(UnaryOp op, const float* x, float* y, int64_t n, ThreadPool* pool);
void binary_f32(BinaryOp op, const float* a, Bcast ka, const float* b, Bcast kb, float* y, int64_t outer,
                int64_t inner, ThreadPool* pool);

// Where(c, x, y) over 4-byte values viewed as [outer, inner] (each operand full, a row, a column or a scalar
// of it, as binary_f32's): z = c ? x : y, bit for bit. AVX-512 (a byte mask per 16 conditions and a blend)
// where the CPU has it, else a loop the compiler vectorizes.
void where_32(const bool* c, Bcast kc, const uint32_t* x, Bcast kx, const uint32_t* y, Bcast ky, uint32_t* z,
              int64_t outer, int64_t inner, ThreadPool* pool);
// its AVX-512 row: z[i] = c[i * sc] ? x[i * sx] : y[i * sy] for i < n (strides 0 or 1)
void where_row_32__avx512f(const bool* c, bool sc, const uint32_t* x, bool sx, const uint32_t* y, bool sy,
                           uint32_t* z, int64_t n);
void softmax_f32(const float* x, float* y, int64_t rows, int64_t len, ThreadPool* pool);
void log_softmax_f32(const float* x, float* y, int64_t rows, int64_t len, ThreadPool* pool);
void layernorm_f32(const float* x, const float* scale, const float* bias, float* y, int64_t rows, int64_t len,
                   float eps, ThreadPool* pool);
// Group and instance normalization: x [n, groups, len] normalized per (n, g) row over its len values, then
// element i of row (n, g) times scale[k] plus bias[k], k = g * (len / run) + i / run (bias may be null):
// InstanceNormalization is groups = channels, run = len; GroupNormalization groups of channels, run = len
// (opset 18: a scale per group) or the pixels of a channel (opset 21: per channel).
void rmsnorm_f32(const float* x, const float* scale, float* y, int64_t rows, int64_t len, float eps,
                 ThreadPool* pool);
void groupnorm_f32(const float* x, const float* scale, const float* bias, float* y, int64_t n, int64_t groups,
                   int64_t len, int64_t run, float eps, ThreadPool* pool);
// y = transpose(x, perm) for a contiguous x of the given shape (perm validated by the caller).
void transpose_f32(const float* x, float* y, const std::vector<int64_t>& shape,
                   const std::vector<int64_t>& perm, ThreadPool* pool);
// The same for 1-byte values (u8 / s8 / bool).
void transpose_bytes(const uint8_t* x, uint8_t* y, const std::vector<int64_t>& shape,
                     const std::vector<int64_t>& perm, ThreadPool* pool);

}  // namespace tessera::kernels::x86
