// Normalizations over slices, TopK, column ArgMax / ArgMin (norm.h): the threading and the slices' layout
// here, the loops in norm_rows_impl.h (this file's instance is the portable one).
#include "kernels/x86/norm.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <functional>

#include "kernels/x86/eltwise.h"

namespace tessera::kernels::x86 {
namespace {
#include "kernels/x86/norm_rows_impl.h"
}  // namespace

const NormRowKernels& norm_row_kernels() {
  switch (eltwise_isa()) {
    case EltIsa::avx512f:
      return norm_row_kernels__avx512f();
    case EltIsa::avx2:
      return norm_row_kernels__avx2();
    default:
      return kNormRowKernels;
  }
}

namespace {

// Offsets of every combination of coordinates on the axes d < last whose `reduced` flag is `want`, in order.
std::vector<int64_t> offsets(const std::vector<int64_t>& size, const std::vector<int64_t>& stride,
                             const std::vector<bool>& reduced, size_t last, bool want) {
  std::vector<int64_t> off{0};
  for (size_t d = 0; d < last; ++d) {
    if (reduced[d] != want) continue;
    std::vector<int64_t> next;
    next.reserve(off.size() * size_t(size[d]));
    for (const int64_t o : off)
      for (int64_t c = 0; c < size[d]; ++c) next.push_back(o + c * stride[d]);
    off.swap(next);
  }
  return off;
}

// A slice's shift and scale from its sums (n elements): y = (x - m) * s.
struct Affine {
  double m, s;
};
Affine norm_affine(NormKind kind, double sum) {
  const double norm = kind == NormKind::l2 ? std::sqrt(sum) : sum;
  return {0.0, norm == 0 ? 0.0 : 1.0 / norm};
}
Affine mvn_affine(double mean, double dev2, double n) {
  return {mean, 1.0 / (std::sqrt(dev2 / n) + 1e-9)};
}

}  // namespace

void normalize_f32(NormKind kind, const float* x, float* y, const std::vector<int64_t>& dims,
                   const std::vector<bool>& reduced, ThreadPool* pool) {
  // Axes of size 1 dropped, neighbours with the same flag merged.
  std::vector<int64_t> size;
  std::vector<bool> red;
  int64_t total = 1;
  for (size_t d = 0; d < dims.size(); ++d) {
    total *= dims[d];
    if (dims[d] == 1) continue;
    if (!size.empty() && red.back() == reduced[d])
      size.back() *= dims[d];
    else
      size.push_back(dims[d]), red.push_back(reduced[d]);
  }
  if (total <= 0) return;
  if (size.empty()) size = {1}, red = {true};
  const size_t nd = size.size(), last = nd - 1;
  std::vector<int64_t> stride(nd, 1);
  for (size_t d = last; d-- > 0;) stride[d] = stride[d + 1] * size[d + 1];
  const NormRowKernels& k = norm_row_kernels();
  const NormSum first = kind == NormKind::mvn  ? NormSum::sum
                        : kind == NormKind::l2 ? NormSum::sq
                                               : NormSum::abs;
  const int threads = pool ? pool->num_threads() : 1;
  const bool parallel = threads > 1 && total >= (int64_t(1) << 15);
  const std::vector<int64_t> q = offsets(size, stride, red, last, true),
                             g = offsets(size, stride, red, last, false);

  if (red[last]) {  // each slice: runs of `run` contiguous elements at g[s] + q[*]
    const int64_t run = size[last];
    const double n = double(run) * double(q.size());
    const int64_t grain = std::max<int64_t>(1, (int64_t(1) << 14) / std::max<int64_t>(1, int64_t(n)));
    parallel_for(parallel ? pool : nullptr, int64_t(g.size()), grain, [&](int64_t s0, int64_t s1) {
      for (int64_t s = s0; s < s1; ++s) {
        const float* xs = x + g[size_t(s)];
        double sum = 0;
        for (const int64_t o : q) sum += k.row_sum(first, xs + o, run, 0.0);
        Affine a;
        if (kind == NormKind::mvn) {
          const double mean = sum / n;
          double dev2 = 0;
          for (const int64_t o : q) dev2 += k.row_sum(NormSum::dev2, xs + o, run, mean);
          a = mvn_affine(mean, dev2, n);
        } else {
          a = norm_affine(kind, sum);
        }
        for (const int64_t o : q) k.row_affine(xs + o, y + g[size_t(s)] + o, run, a.m, a.s);
      }
    });
    return;
  }
  // The innermost axis is kept: slices are columns, `width` at a time, their rows at g[s] + q[*].
  const int64_t cols = size[last];
  const double n = double(q.size());
  int64_t width = std::clamp<int64_t>((int64_t(1) << 15) / int64_t(q.size()) / 16 * 16, 16, 2048);
  if (parallel && int64_t(g.size()) < threads)
    width = std::min(width, std::max<int64_t>(16, (cols + threads - 1) / threads));
  width = std::min(width, cols);
  const int64_t blocks = (cols + width - 1) / width;
  parallel_for(parallel ? pool : nullptr, int64_t(g.size()) * blocks, 1, [&](int64_t t0, int64_t t1) {
    const size_t nw = static_cast<size_t>(width);
    std::vector<double> acc(nw), m(nw), s(nw);
    std::vector<float> sf(nw);
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t i0 = t % blocks * width, w = std::min(width, cols - i0);
      const int64_t base = g[size_t(t / blocks)] + i0;
      const int64_t nq = int64_t(q.size());
      k.col_sums(first, acc.data(), x + base, q.data(), nq, nullptr, w);
      if (kind == NormKind::mvn) {
        for (int64_t i = 0; i < w; ++i) m[size_t(i)] = acc[size_t(i)] / n;
        k.col_sums(NormSum::dev2, acc.data(), x + base, q.data(), nq, m.data(), w);
        for (int64_t i = 0; i < w; ++i) s[size_t(i)] = mvn_affine(m[size_t(i)], acc[size_t(i)], n).s;
      } else {
        bool tiny = false;  // a norm below 2^-128 (denormals only): its reciprocal needs double
        for (int64_t i = 0; i < w; ++i) {
          m[size_t(i)] = 0, s[size_t(i)] = norm_affine(kind, acc[size_t(i)]).s;
          sf[size_t(i)] = float(s[size_t(i)]);
          tiny |= std::isinf(sf[size_t(i)]);
        }
        if (!tiny) {
          for (const int64_t o : q) k.col_scale(x + base + o, y + base + o, sf.data(), w);
          continue;
        }
      }
      for (const int64_t o : q) k.col_affine(x + base + o, y + base + o, m.data(), s.data(), w);
    }
  });
}

void topk_f32(const float* x, int64_t outer, int64_t len, int64_t inner, int64_t k, bool largest, float* vals,
              int64_t* idx, ThreadPool* pool) {
  const int64_t rows = outer * inner;
  if (k <= 0 || rows <= 0) return;
  const NormRowKernels& kr = norm_row_kernels();
  constexpr int64_t kBlock = 4096;              // elements filtered against one threshold
  const int64_t cap = k + std::max(k, kBlock);  // candidates kept before trimming to k
  const bool parallel = pool && pool->num_threads() > 1 && double(rows) * double(len) >= double(1 << 16);
  parallel_for(parallel ? pool : nullptr, rows, 1, [&](int64_t r0, int64_t r1) {
    std::vector<float> column(size_t(inner > 1 ? len : 0));
    std::vector<uint64_t> buf(size_t(cap + kBlock));
    const auto better = std::greater<uint64_t>();
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t o = r / inner, i = r % inner;
      const float* src = x + o * len * inner + i;
      const float* p = src;
      if (inner > 1) {
        for (int64_t j = 0; j < len; ++j) column[size_t(j)] = src[j * inner];
        p = column.data();
      }
      // the first k all in; then only keys above the k-th best so far (a later index loses a tie)
      int64_t c = kr.topk_filter(p, k, largest, 0.0f, 0, TopkMode::all, 0, buf.data());
      int32_t t = 0;
      float tf = 0;
      auto trim = [&] {
        std::nth_element(buf.begin(), buf.begin() + (k - 1), buf.begin() + c, better);
        c = k;
        t = int32_t(uint32_t(buf[size_t(k - 1)] >> 32) ^ 0x80000000u);
        tf = p[~uint32_t(buf[size_t(k - 1)])];
      };
      trim();
      for (int64_t j = k; j < len; j += kBlock) {
        const TopkMode mode = !largest && tf != tf ? TopkMode::every : TopkMode::filter;
        c += kr.topk_filter(p + j, std::min(kBlock, len - j), largest, tf, t, mode, uint32_t(j),
                            buf.data() + c);
        if (c >= cap) trim();
      }
      std::partial_sort(buf.begin(), buf.begin() + k, buf.begin() + c, better);
      for (int64_t j = 0; j < k; ++j) {
        const int64_t at = int64_t(~uint32_t(buf[size_t(j)]));
        vals[(o * k + j) * inner + i] = p[at];
        idx[(o * k + j) * inner + i] = at;
      }
    }
  });
}

void arg_extreme_cols_f32(bool max, const float* x, int64_t outer, int64_t len, int64_t inner, bool last,
                          int64_t* y, ThreadPool* pool) {
  if (outer <= 0 || len <= 0 || inner <= 0) return;
  const NormRowKernels& k = norm_row_kernels();
  const int threads = pool ? pool->num_threads() : 1;
  const bool parallel = threads > 1 && double(outer) * double(len) * double(inner) >= double(1 << 16);
  int64_t width = std::min<int64_t>(inner, 1024);
  if (parallel && outer < threads)
    width = std::min(width, std::max<int64_t>(64, (inner + threads - 1) / threads));
  const int64_t blocks = (inner + width - 1) / width;
  parallel_for(parallel ? pool : nullptr, outer * blocks, 1, [&](int64_t t0, int64_t t1) {
    std::vector<float> bv(static_cast<size_t>(width));
    std::vector<int32_t> bi(static_cast<size_t>(width));
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t o = t / blocks, i0 = t % blocks * width, w = std::min(width, inner - i0);
      k.col_arg(max, last, x + o * len * inner + i0, len, inner, w, bv.data(), bi.data());
      for (int64_t i = 0; i < w; ++i) y[o * inner + i0 + i] = bi[size_t(i)];
    }
  });
}

}  // namespace tessera::kernels::x86
