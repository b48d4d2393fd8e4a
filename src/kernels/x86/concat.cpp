#include "kernels/x86/concat.h"

#include <algorithm>
#include <cstring>

#include "kernels/x86/eltwise.h"

namespace tessera::kernels::x86 {

void concat_rows_f32(const float* const* srcs, const int64_t* widths, int64_t n, float* dst, int64_t row,
                     int64_t r0, int64_t r1) {
  for (int64_t r = r0; r < r1; ++r) {
    float* d = dst + r * row;
    for (int64_t i = 0; i < n; ++i) {
      std::memcpy(d, srcs[i] + r * widths[i], size_t(widths[i]) * sizeof(float));
      d += widths[i];
    }
  }
}

void concat_f32(const float* const* srcs, const int64_t* widths, int64_t n, float* dst, int64_t rows,
                ThreadPool* pool) {
  int64_t row = 0;
  for (int64_t i = 0; i < n; ++i) row += widths[i];
  if (rows <= 0 || row == 0) return;
  // Pieces of a few vectors take the vector rows; whole rows of many (an NCHW concat's planes) memcpy.
  const bool small_pieces = row / n <= 1024;
  const auto fn =
      eltwise_isa() == EltIsa::avx512f && small_pieces ? concat_rows_f32__avx512f : concat_rows_f32;
  const int64_t threads = pool ? pool->num_threads() : 1, total = rows * row;
  if (threads <= 1 || total < (int64_t(64) << 10)) {  // under 256 KiB a wake-up costs more than it saves
    fn(srcs, widths, n, dst, row, 0, rows);
    return;
  }
  if (rows >= 2 * threads) {  // rows enough to share
    pool->run(threads, [&](int64_t t) {
      fn(srcs, widths, n, dst, row, rows * t / threads, rows * (t + 1) / threads);
    });
    return;
  }
  // A few long rows (a concat along a leading axis): output floats [b, e) a thread, row by row, each row's
  // pieces from the inputs in turn.
  const auto fill = [&](int64_t b, int64_t e) {
    while (b < e) {
      const int64_t o = b / row;
      int64_t col = b % row, start = 0;
      for (int64_t i = 0; i < n && b < e; start += widths[i], ++i) {
        if (col >= start + widths[i]) continue;
        const int64_t len = std::min(start + widths[i] - col, e - b);
        std::memcpy(dst + b, srcs[i] + o * widths[i] + (col - start), size_t(len) * sizeof(float));
        b += len, col += len;
      }
    }
  };
  pool->run(threads, [&](int64_t t) { fill(total * t / threads, total * (t + 1) / threads); });
}

}  // namespace tessera::kernels::x86
