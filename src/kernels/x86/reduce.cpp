// f32 reductions over a contiguous run of axes (reduce.h). Portable loops with independent float lanes, which
// the compiler vectorizes without reassociating: the reductions are bound by memory, not by the lanes' width.
#include "kernels/x86/reduce.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/x86/eltwise.h"
#include "kernels/x86/norm.h"

namespace tessera::kernels::x86 {
namespace {

float term(ReduceKind k, float v) {
  return k == ReduceKind::sum_square || k == ReduceKind::l2 ? v * v : k == ReduceKind::l1 ? std::fabs(v) : v;
}

double finish(ReduceKind k, double s, int64_t r) {
  if (k == ReduceKind::mean) return s / double(r);
  if (k == ReduceKind::l2) return std::sqrt(s);
  return s;
}

// sum of term(x[0 : n]) in double, through float lanes over blocks of kBlock
template <ReduceKind K>
double row_sum(const float* x, int64_t n) {
  constexpr int64_t kLanes = 16, kBlock = 1024;
  double total = 0;
  for (int64_t b = 0; b < n; b += kBlock) {
    const int64_t e = std::min(n, b + kBlock);
    float lane[kLanes] = {};
    int64_t j = b;
    for (; j + kLanes <= e; j += kLanes)
      for (int64_t l = 0; l < kLanes; ++l) lane[l] += term(K, x[j + l]);
    float s = 0;
    for (; j < e; ++j) s += term(K, x[j]);
    double block = s;
    for (int64_t l = 0; l < kLanes; ++l) block += lane[l];
    total += block;
  }
  return total;
}

template <ReduceKind K>
void reduce(const float* x, int64_t outer, int64_t r, int64_t inner, float* y, ThreadPool* pool) {
  const int threads = pool ? pool->num_threads() : 1;
  const double bytes = double(outer) * double(r) * double(inner) * sizeof(float);
  const bool parallel = threads > 1 && bytes >= 256e3;
  if (inner == 1 && (outer >= threads || !parallel)) {
    parallel_for(parallel ? pool : nullptr, outer,
                 std::max<int64_t>(1, (int64_t(64) << 10) / std::max<int64_t>(r, 1)),
                 [&](int64_t o0, int64_t o1) {
                   for (int64_t o = o0; o < o1; ++o) y[o] = float(finish(K, row_sum<K>(x + o * r, r), r));
                 });
    return;
  }
  if (inner == 1) {  // a few long rows over several threads: each row in parts
    const int64_t parts = threads;
    std::vector<double> partial(size_t(outer * parts));
    pool->run(outer * parts, [&](int64_t t) {
      const int64_t o = t / parts, q = t % parts, b = r * q / parts, e = r * (q + 1) / parts;
      partial[size_t(t)] = row_sum<K>(x + o * r + b, e - b);
    });
    for (int64_t o = 0; o < outer; ++o) {
      double s = 0;
      for (int64_t q = 0; q < parts; ++q) s += partial[size_t(o * parts + q)];
      y[o] = float(finish(K, s, r));
    }
    return;
  }
  // columns: threads over outer, or over runs of columns when outer is small
  const bool by_outer = outer >= threads || !parallel;
  const int64_t cols = by_outer ? inner : std::max<int64_t>(16, (inner + threads - 1) / threads);
  const int64_t col_tasks = (inner + cols - 1) / cols;
  parallel_for(parallel ? pool : nullptr, outer * col_tasks, 1, [&](int64_t t0, int64_t t1) {
    std::vector<float> part(static_cast<size_t>(cols));
    std::vector<double> acc(static_cast<size_t>(cols));
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t o = t / col_tasks, i0 = (t % col_tasks) * cols, w = std::min(cols, inner - i0);
      std::fill(acc.begin(), acc.begin() + w, 0.0);
      // rows of this column run: x[o, p, i0 : i0 + w], inner apart
      constexpr int64_t kRows = 64;
      for (int64_t b = 0; b < r; b += kRows) {
        const int64_t e = std::min(r, b + kRows);
        std::fill(part.begin(), part.begin() + w, 0.0f);
        for (int64_t p = b; p < e; ++p) {
          const float* row = x + (o * r + p) * inner + i0;
          for (int64_t i = 0; i < w; ++i) part[size_t(i)] += term(K, row[i]);
        }
        for (int64_t i = 0; i < w; ++i) acc[size_t(i)] += part[size_t(i)];
      }
      for (int64_t i = 0; i < w; ++i) y[o * inner + i0 + i] = float(finish(K, acc[size_t(i)], r));
    }
  });
}

// a NaN in either wins (as the reference kernel)
template <bool Max>
float pick(float a, float v) {
  return (v != v || (Max ? v > a : v < a)) ? v : a;
}

// The max (min) of p[0 : n], a NaN winning, in 16 lanes: the portable loop (the compiler keeps pick's
// branches: 13-14 GB/s over a 32000-float row, a third of onnxruntime's speed), and AVX2 compares and blends,
// taken where the CPU has AVX2 (eltwise_isa()).
template <bool Max>
inline __attribute__((always_inline)) float row_extreme(const float* p, int64_t n) {
  constexpr int64_t kLanes = 16;
  float lane[kLanes];
  std::fill(lane, lane + kLanes, p[0]);
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes)
    for (int64_t l = 0; l < kLanes; ++l) lane[l] = pick<Max>(lane[l], p[j + l]);
  float m = p[0];
  for (; j < n; ++j) m = pick<Max>(m, p[j]);
  for (int64_t l = 0; l < kLanes; ++l) m = pick<Max>(m, lane[l]);
  return m;
}
template <bool Max>
float row_extreme_base(const float* p, int64_t n) {
  return row_extreme<Max>(p, n);
}
// a where b does not win, else b (b wins: b > a, or b < a for min, or b is NaN)
template <bool Max>
__attribute__((target("avx2"), always_inline)) inline __m256 pick8(__m256 a, __m256 b) {
  const __m256 wins =
      _mm256_or_ps(_mm256_cmp_ps(b, a, Max ? _CMP_GT_OQ : _CMP_LT_OQ), _mm256_cmp_ps(b, b, _CMP_UNORD_Q));
  return _mm256_blendv_ps(a, b, wins);
}
template <bool Max>
__attribute__((target("avx2"))) float row_extreme_avx2(const float* p, int64_t n) {
  if (n < 32) return row_extreme<Max>(p, n);
  __m256 m0 = _mm256_loadu_ps(p), m1 = _mm256_loadu_ps(p + 8), m2 = m0, m3 = m1;
  int64_t j = 16;
  for (; j + 32 <= n; j += 32) {
    m0 = pick8<Max>(m0, _mm256_loadu_ps(p + j)), m1 = pick8<Max>(m1, _mm256_loadu_ps(p + j + 8));
    m2 = pick8<Max>(m2, _mm256_loadu_ps(p + j + 16)), m3 = pick8<Max>(m3, _mm256_loadu_ps(p + j + 24));
  }
  float lane[32];
  _mm256_storeu_ps(lane, m0), _mm256_storeu_ps(lane + 8, m1), _mm256_storeu_ps(lane + 16, m2);
  _mm256_storeu_ps(lane + 24, m3);
  float m = lane[0];
  for (int l = 1; l < 32; ++l) m = pick<Max>(m, lane[l]);
  for (; j < n; ++j) m = pick<Max>(m, p[j]);
  return m;
}
// out[i] = pick(out[i], row[i]), i < w
template <bool Max>
inline __attribute__((always_inline)) void fold_row(float* out, const float* row, int64_t w) {
  for (int64_t i = 0; i < w; ++i) out[i] = pick<Max>(out[i], row[i]);
}
template <bool Max>
void fold_row_base(float* out, const float* row, int64_t w) {
  fold_row<Max>(out, row, w);
}
template <bool Max>
__attribute__((target("avx2"))) void fold_row_avx2(float* out, const float* row, int64_t w) {
  int64_t i = 0;
  for (; i + 8 <= w; i += 8)
    _mm256_storeu_ps(out + i, pick8<Max>(_mm256_loadu_ps(out + i), _mm256_loadu_ps(row + i)));
  fold_row<Max>(out + i, row + i, w - i);
}

// Max / min: exact in float, threads over rows or runs of columns as the sums.
template <bool Max>
void extreme(const float* x, int64_t outer, int64_t r, int64_t inner, float* y, ThreadPool* pool) {
  const int threads = pool ? pool->num_threads() : 1;
  const bool parallel = threads > 1 && double(outer) * double(r) * double(inner) * sizeof(float) >= 256e3;
  const bool avx2 = eltwise_isa() != EltIsa::portable;
  auto row = avx2 ? row_extreme_avx2<Max> : row_extreme_base<Max>;
  auto fold = avx2 ? fold_row_avx2<Max> : fold_row_base<Max>;
  if (inner == 1) {
    parallel_for(parallel ? pool : nullptr, outer, std::max<int64_t>(1, (int64_t(64) << 10) / r),
                 [&](int64_t o0, int64_t o1) {
                   for (int64_t o = o0; o < o1; ++o) y[o] = row(x + o * r, r);
                 });
    return;
  }
  const bool by_outer = outer >= threads || !parallel;
  const int64_t cols = by_outer ? inner : std::max<int64_t>(16, (inner + threads - 1) / threads);
  const int64_t col_tasks = (inner + cols - 1) / cols;
  parallel_for(parallel ? pool : nullptr, outer * col_tasks, 1, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t o = t / col_tasks, i0 = (t % col_tasks) * cols, w = std::min(cols, inner - i0);
      float* out = y + o * inner + i0;
      const float* first = x + o * r * inner + i0;
      std::copy(first, first + w, out);
      for (int64_t p = 1; p < r; ++p) fold(out, first + p * inner, w);
    }
  });
}

// Running sums of `lanes` independent sequences of len values, element j of sequence l at
// x[l * ls + j * js]: the block's sums in double, one element of each sequence per step.
template <int B>
void scan_block(const float* x, float* y, int64_t lanes, int64_t ls, int64_t len, int64_t js, bool exclusive,
                bool reverse) {
  double acc[B] = {};
  for (int64_t s = 0; s < len; ++s) {
    const int64_t j = reverse ? len - 1 - s : s;
    const float* xr = x + j * js;
    float* yr = y + j * js;
    if (exclusive)
      for (int64_t l = 0; l < lanes; ++l) {
        const double v = xr[l * ls];
        yr[l * ls] = float(acc[l]);
        acc[l] += v;
      }
    else
      for (int64_t l = 0; l < lanes; ++l) yr[l * ls] = float(acc[l] += xr[l * ls]);
  }
}

}  // namespace

void arg_extreme_f32(bool max, const float* x, int64_t rows, int64_t len, bool last, int64_t* y,
                     ThreadPool* pool) {
  const bool avx2 = eltwise_isa() != EltIsa::portable;
  auto extreme_of = [&](const float* p) {
    return max ? (avx2 ? row_extreme_avx2<true>(p, len) : row_extreme_base<true>(p, len))
               : (avx2 ? row_extreme_avx2<false>(p, len) : row_extreme_base<false>(p, len));
  };
  const bool parallel = double(rows) * double(len) >= double(1 << 16);
  const int64_t grain = std::max<int64_t>(1, (int64_t(64) << 10) / std::max<int64_t>(1, len));
  parallel_for(parallel ? pool : nullptr, rows, grain, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const float* p = x + r * len;
      const float m = extreme_of(p);
      int64_t at = 0;
      if (m != m) {  // the first NaN wins, whatever `last` says (as the reference)
        while (at < len && p[at] == p[at]) ++at;
      } else if (last) {
        at = len - 1;
        while (at > 0 && p[at] != m) --at;
      } else {
        while (at < len - 1 && p[at] != m) ++at;
      }
      y[r] = at;
    }
  });
}

void cumsum_f32(const float* x, int64_t outer, int64_t len, int64_t inner, bool exclusive, bool reverse,
                float* y, ThreadPool* pool) {
  if (outer <= 0 || len <= 0 || inner <= 0) return;
  const bool parallel = double(outer) * double(len) * double(inner) >= double(1 << 16);
  if (inner == 1) {  // the last axis: sequences are rows, kLanes at a time
    constexpr int64_t kLanes = 4;
    parallel_for(parallel ? pool : nullptr, (outer + kLanes - 1) / kLanes, 1, [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; ++t) {
        const int64_t r0 = t * kLanes, n = std::min(kLanes, outer - r0);
        scan_block<kLanes>(x + r0 * len, y + r0 * len, n, len, len, 1, exclusive, reverse);
      }
    });
    return;
  }
  // Columns: whole rows of up to 1024 running sums stream through in vector lanes (norm.h's col_scan), a
  // run per thread when there are fewer outer slices than threads.
  const int threads = pool ? pool->num_threads() : 1;
  int64_t width = std::min<int64_t>(inner, 1024);
  if (parallel && outer < threads)
    width = std::min(width, std::max<int64_t>(64, (inner + threads - 1) / threads));
  const int64_t blocks = (inner + width - 1) / width;
  const NormRowKernels& k = norm_row_kernels();
  parallel_for(parallel ? pool : nullptr, outer * blocks, 1, [&](int64_t t0, int64_t t1) {
    std::vector<double> acc(static_cast<size_t>(width));
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t o = t / blocks, i0 = t % blocks * width, off = o * len * inner + i0;
      k.col_scan(x + off, y + off, len, inner, std::min(width, inner - i0), exclusive, reverse, acc.data());
    }
  });
}

void reduce_f32(ReduceKind kind, const float* x, int64_t outer, int64_t r, int64_t inner, float* y,
                ThreadPool* pool) {
  if (outer == 0 || inner == 0) return;  // no outputs (the column split below divides by inner)
  switch (kind) {
    case ReduceKind::sum:
      return reduce<ReduceKind::sum>(x, outer, r, inner, y, pool);
    case ReduceKind::mean:
      return reduce<ReduceKind::mean>(x, outer, r, inner, y, pool);
    case ReduceKind::sum_square:
      return reduce<ReduceKind::sum_square>(x, outer, r, inner, y, pool);
    case ReduceKind::l1:
      return reduce<ReduceKind::l1>(x, outer, r, inner, y, pool);
    case ReduceKind::l2:
      return reduce<ReduceKind::l2>(x, outer, r, inner, y, pool);
    case ReduceKind::max:
      return extreme<true>(x, outer, r, inner, y, pool);
    case ReduceKind::min:
      return extreme<false>(x, outer, r, inner, y, pool);
  }
}

}  // namespace tessera::kernels::x86
