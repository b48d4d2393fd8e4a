// f32 normalizations over slices, and the selections along an axis that the reference does one element at a
// time: MeanVarianceNormalization, LpNormalization, TopK, ArgMax / ArgMin down columns, CumSum down columns.
// Loops in norm_rows_impl.h, compiled for AVX-512, AVX2 and portable and chosen at run time (eltwise_isa()).
#pragma once

#include <cstdint>
#include <vector>

#include "core/thread_pool.h"

namespace tessera::kernels::x86 {

enum class NormSum : uint8_t { sum, dev2, sq, abs };  // x, (x - m)^2, x^2, |x|
enum class TopkMode : uint8_t { all, every, filter };

// One ISA's single-thread loops (norm_rows_impl.h).
struct NormRowKernels {
  double (*row_sum)(NormSum k, const float* x, int64_t n, double m);
  void (*row_affine)(const float* x, float* y, int64_t n, double m, double s);
  void (*col_sums)(NormSum k, double* acc, const float* x, const int64_t* q, int64_t nq, const double* m,
                   int64_t w);
  void (*col_affine)(const float* x, float* y, const double* m, const double* s, int64_t w);
  void (*col_scale)(const float* x, float* y, const float* s, int64_t w);
  void (*col_arg)(bool max, bool last, const float* x, int64_t len, int64_t ld, int64_t w, float* bv,
                  int32_t* bi);
  void (*col_scan)(const float* x, float* y, int64_t len, int64_t ld, int64_t w, bool exclusive, bool reverse,
                   double* acc);
  int64_t (*topk_filter)(const float* x, int64_t n, bool largest, float tf, int32_t t, TopkMode mode,
                         uint32_t base, uint64_t* out);
};
const NormRowKernels& norm_row_kernels();  // of eltwise_isa()
const NormRowKernels& norm_row_kernels__avx2();
const NormRowKernels& norm_row_kernels__avx512f();

enum class NormKind : uint8_t { mvn, l1, l2 };

// x (and y) of shape dims; each slice is the elements that share their coordinates on the axes not in
// `reduced`. mvn: y = (x - mean) / (sqrt(var) + 1e-9), the ONNX function's epsilon; l1 / l2: y = x / norm,
// 0 where the norm is 0. Mean, variance and norm summed in double as the reference; MVN's y computed in
// double (within an ulp of the reference), LpNorm's as x times the norm's reciprocal in float (1.5 ulps).
void normalize_f32(NormKind kind, const float* x, float* y, const std::vector<int64_t>& dims,
                   const std::vector<bool>& reduced, ThreadPool* pool = nullptr);

// TopK of x viewed as [outer, len, inner] along len (len < 2^31, k <= len): values and indices of the k
// largest (smallest), in order, ties to the lower index, NaN above every number (as the reference). A
// vectorized filter against the current k-th key keeps candidates; nth_element trims them to k.
void topk_f32(const float* x, int64_t outer, int64_t len, int64_t inner, int64_t k, bool largest, float* vals,
              int64_t* idx, ThreadPool* pool = nullptr);

// ArgMax / ArgMin of x viewed as [outer, len, inner] along len, inner > 1 (len < 2^31): the reference's rule,
// as arg_extreme_f32 (reduce.h), each column's best kept in lanes while its rows stream past.
void arg_extreme_cols_f32(bool max, const float* x, int64_t outer, int64_t len, int64_t inner, bool last,
                          int64_t* y, ThreadPool* pool = nullptr);

}  // namespace tessera::kernels::x86
