// Concat of f32 rows: output row r is the inputs' row r one after another (any axis, viewed as [outer, row]
// with input i's piece widths[i] floats a row). A channel concat in NHWC (DenseNet's growing maps, a fire
// module's two expansions, YOLO's necks) has pieces of 16-256 floats in every pixel: one memcpy call a
// piece left it at half the copy rate (DenseNet-121's 58 Concats 47 GB/s); the AVX-512 rows copy each piece
// with vector moves and a masked tail.
#pragma once

#include <cstdint>

#include "core/thread_pool.h"

namespace tessera::kernels::x86 {

// dst rows [r0, r1) (rows of `row` floats): the n pieces, input i's row r at srcs[i] + r * widths[i].
void concat_rows_f32(const float* const* srcs, const int64_t* widths, int64_t n, float* dst, int64_t row,
                     int64_t r0, int64_t r1);
void concat_rows_f32__avx512f(const float* const* srcs, const int64_t* widths, int64_t n, float* dst,
                              int64_t row, int64_t r0, int64_t r1);

// The whole concat over `rows` rows, threaded where it is large enough: by rows, or by elements where there
// are too few rows to share.
void concat_f32(const float* const* srcs, const int64_t* widths, int64_t n, float* dst, int64_t rows,
                ThreadPool* pool);

}  // namespace tessera::kernels::x86
