// f32 reductions over one contiguous run of axes (ReduceSum / Mean / SumSquare / L1 / L2 / Max / Min): x
// viewed as [outer, r, inner], y[o * inner + i] = f(x[o, :, i]). The reference kernel walks any axes with a
// generic multi-index (1.2 GB/s here); these stream rows. Sums go in float lanes over blocks (64 rows, or
// 1024 elements of a row) whose totals add up in double: within a few ulps of the reference's double sums.
#pragma once

#include <cstdint>

#include "core/thread_pool.h"

namespace tessera::kernels::x86 {

enum class ReduceKind : uint8_t { sum, mean, sum_square, l1, l2, max, min };  // max / min: a NaN wins

void reduce_f32(ReduceKind kind, const float* x, int64_t outer, int64_t r, int64_t inner, float* y,
                ThreadPool* pool = nullptr);

// ArgMax / ArgMin of each of `rows` contiguous rows of len floats (the last axis): the index of the first
// NaN if the row has one, else of the first (`last`: the last) maximum (minimum), as the reference. The
// extreme first (AVX2 where the CPU has it), then the index of its first (last) occurrence: a greedy
// decoder's ArgMax over a 50k-word vocabulary reads its row twice, the second time from L2.
void arg_extreme_f32(bool max, const float* x, int64_t rows, int64_t len, bool last, int64_t* y,
                     ThreadPool* pool = nullptr);

// CumSum of x viewed as [outer, len, inner] along len (exclusive: each sum leaves its own element out;
// reverse: from the end), in double as the reference (the same results, bit for bit): along the last axis
// (inner 1), four rows' chains at once; along another, rows of up to 1024 running sums in vector lanes.
void cumsum_f32(const float* x, int64_t outer, int64_t len, int64_t inner, bool exclusive, bool reverse,
                float* y, ThreadPool* pool = nullptr);

}  // namespace tessera::kernels::x86
