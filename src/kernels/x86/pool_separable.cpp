#include "kernels/x86/pool_separable.h"

#include <xmmintrin.h>

#include <algorithm>
#include <limits>
#include <type_traits>

#include "core/memory.h"
#include "kernels/x86/eltwise.h"

namespace tessera::kernels::x86 {

namespace {

struct Ctx {
  bool is_max, count_include_pad;
  const std::vector<PoolAxis>* axes;
  std::vector<int64_t> inner_in,
      inner_out;  // per axis: elements of the axes after it, before / after pooling
};

thread_local AlignedScratch tl_level[3], tl_phases;

// out = max(out, in) with a NaN winning, or out += in: the loops every pass runs, built for the baseline and
// for AVX2 (twice the lanes; MaxPool over NCHW ran at 2.3x onnxruntime's time on the SSE2 build alone).
template <bool IsMax, class T>
inline __attribute__((always_inline)) void combine_loop(T* __restrict out, const T* __restrict in,
                                                        int64_t n) {
  if constexpr (IsMax && !std::is_same_v<T, float>)
    for (int64_t i = 0; i < n; ++i) out[i] = std::max(out[i], in[i]);  // (pmaxub / pmaxsb)
  else if constexpr (IsMax)
    for (int64_t i = 0; i < n; ++i) out[i] = in[i] > out[i] || in[i] != in[i] ? in[i] : out[i];
  else
    for (int64_t i = 0; i < n; ++i) out[i] += in[i];
}
template <bool IsMax, class T>
void combine_base(T* __restrict out, const T* __restrict in, int64_t n) {
  combine_loop<IsMax>(out, in, n);
}
template <bool IsMax, class T>
__attribute__((target("avx2"))) void combine_avx2(T* __restrict out, const T* __restrict in, int64_t n) {
  combine_loop<IsMax>(out, in, n);
}
template <class T>
inline void combine(bool is_max, T* __restrict out, const T* __restrict in, int64_t n) {
  static const bool avx2 = eltwise_isa() != EltIsa::portable;
  if (is_max)
    (avx2 ? combine_avx2<true, T> : combine_base<true, T>)(out, in, n);
  else if constexpr (std::is_same_v<T, float>)
    (avx2 ? combine_avx2<false, T> : combine_base<false, T>)(out, in, n);
}

// The max pool's neutral element: -inf, or the integer type's least value.
template <class T>
constexpr T lowest() {
  return std::is_same_v<T, float> ? T(-std::numeric_limits<float>::infinity())
                                  : std::numeric_limits<T>::lowest();
}

// Scratch of n elements of T.
template <class T>
T* scratch(AlignedScratch& s, int64_t n) {
  return reinterpret_cast<T*>(s.get(size_t(n * int64_t(sizeof(T)) + 3) / 4));
}

// One row along the innermost axis: src[a.in] -> dst[a.out].
template <class T>
void pool_row(const Ctx& c, const PoolAxis& a, const T* src, T* __restrict dst) {
  const bool is_max = c.is_max;
  const T fill = is_max ? lowest<T>() : T(0);
  const int64_t s = a.stride, d = a.dilation, span = d * (a.k - 1);
  auto edge = [&](int64_t o) {  // taps t with 0 <= i0 + t * d < in
    const int64_t i0 = o * s - a.pad_begin;
    const int64_t t0 = i0 >= 0 ? 0 : (-i0 + d - 1) / d;
    const int64_t t1 = i0 >= a.in ? 0 : std::min(a.k, (a.in - 1 - i0) / d + 1);
    T v = fill;
    if (t0 < t1) {
      v = src[i0 + t0 * d];
      for (int64_t t = t0 + 1; t < t1; ++t) {
        const T u = src[i0 + t * d];
        v = is_max ? (u > v || u != u ? u : v) : T(v + u);
      }
      if constexpr (std::is_same_v<T, float>)
        if (!is_max) v *= 1.0f / float(c.count_include_pad ? a.k : t1 - t0);
    }
    dst[o] = v;
  };
  // outputs [lo, hi) have every tap inside the row
  const int64_t lo = std::min(a.out, (a.pad_begin + s - 1) / s);
  const int64_t hi = a.in - 1 - span + a.pad_begin < 0
                         ? lo
                         : std::clamp<int64_t>((a.in - 1 - span + a.pad_begin) / s + 1, lo, a.out);
  for (int64_t o = 0; o < lo; ++o) edge(o);
  for (int64_t o = hi; o < a.out; ++o) edge(o);
  if (lo == hi) return;
  // Interior: tap t of output o reads element (o - lo) * s + c_t, c_t = lo * s - pad + t * d; with the row
  // split into its s phases (phase j: elements j, j + s, ...) that is element (o - lo) + c_t / s of phase
  // c_t % s, contiguous over o (vectorized).
  if (s > a.in) {  // one output at most reads the row: no phases (a fuzzed stride of 2^40 asked for 4 TiB)
    for (int64_t o = lo; o < hi; ++o) edge(o);
    return;
  }
  const int64_t plen = (a.in + s - 1) / s;
  T* phases = nullptr;
  if (s > 1) {
    phases = scratch<T>(tl_phases, s * plen);
    int64_t done = 0;  // elements split with shuffles
    if constexpr (std::is_same_v<T, float>)
      if (s == 2)  // (the usual stride: even and odd elements, four of each per shuffle pair)
        for (; done + 8 <= a.in; done += 8) {
          const __m128 v0 = _mm_loadu_ps(src + done), v1 = _mm_loadu_ps(src + done + 4);
          _mm_storeu_ps(phases + done / 2, _mm_shuffle_ps(v0, v1, _MM_SHUFFLE(2, 0, 2, 0)));
          _mm_storeu_ps(phases + plen + done / 2, _mm_shuffle_ps(v0, v1, _MM_SHUFFLE(3, 1, 3, 1)));
        }
    for (int64_t j = 0; j < s; ++j)  // (no division per element: it cost more than the pooling)
      for (int64_t at = done + j, i = (done + j) / s; at < a.in; at += s, ++i) phases[j * plen + i] = src[at];
  }
  const int64_t n = hi - lo;
  T* __restrict out = dst + lo;
  for (int64_t t = 0; t < a.k; ++t) {
    const int64_t ct = lo * s - a.pad_begin + t * d;
    const T* __restrict in = s > 1 ? phases + (ct % s) * plen + ct / s : src + ct;
    if (t == 0)
      std::copy_n(in, n, out);
    else
      combine(is_max, out, in, n);  // (max: a NaN wins)
  }
  if constexpr (std::is_same_v<T, float>)
    if (!is_max)
      for (int64_t i = 0; i < n; ++i) out[i] *= 1.0f / float(a.k);
}

template <class T>
void pool_block(const Ctx& c, size_t i, const T* x, T* y);

// Output o of axis i (not the innermost) of the block x [a.in, rest...]: its taps' slabs reduced into the
// level's scratch (in cache), then the remaining axes pooled from there into y (the slab's outputs).
template <class T>
void pool_slab(const Ctx& c, size_t i, int64_t o, const T* x, T* y) {
  const PoolAxis& a = (*c.axes)[i];
  const int64_t inner = c.inner_in[i];
  T* __restrict t = scratch<T>(tl_level[i], inner);
  int64_t count = 0;
  for (int64_t k = 0; k < a.k; ++k) {
    const int64_t at = o * a.stride - a.pad_begin + k * a.dilation;
    if (at < 0 || at >= a.in) continue;
    const T* __restrict row = x + at * inner;
    if (count++ == 0)
      std::copy_n(row, inner, t);
    else
      combine(c.is_max, t, row, inner);
  }
  if (count == 0)
    std::fill_n(t, inner, c.is_max ? lowest<T>() : T(0));
  else if constexpr (std::is_same_v<T, float>)
    if (!c.is_max)
      for (int64_t j = 0; j < inner; ++j) t[j] *= 1.0f / float(c.count_include_pad ? a.k : count);
  pool_block(c, i + 1, t, y);
}

// The block x [axes[i].in, ...] pooled into y [axes[i].out, ...].
template <class T>
void pool_block(const Ctx& c, size_t i, const T* x, T* y) {
  const PoolAxis& a = (*c.axes)[i];
  if (i + 1 == c.axes->size()) {
    pool_row(c, a, x, y);
    return;
  }
  for (int64_t o = 0; o < a.out; ++o) pool_slab(c, i, o, x, y + o * c.inner_out[i]);
}

template <class T>
void pool_separable(bool is_max, bool count_include_pad, const std::vector<PoolAxis>& axes, int64_t nc,
                    const T* x, T* y, ThreadPool* pool) {
  const size_t r = axes.size();
  if (r == 0 || r > 3) return;
  Ctx c{is_max, count_include_pad, &axes, std::vector<int64_t>(r, 1), std::vector<int64_t>(r, 1)};
  for (size_t i = r - 1; i-- > 0;)
    c.inner_in[i] = c.inner_in[i + 1] * axes[i + 1].in, c.inner_out[i] = c.inner_out[i + 1] * axes[i + 1].out;
  const int64_t in_block = c.inner_in[0] * axes[0].in, out_block = c.inner_out[0] * axes[0].out;
  if (r == 1) {
    parallel_for(pool, nc, std::max<int64_t>(1, (int64_t(8) << 10) / std::max<int64_t>(axes[0].in, 1)),
                 [&](int64_t b, int64_t e) {
                   for (int64_t i = b; i < e; ++i) pool_row(c, axes[0], x + i * in_block, y + i * out_block);
                 });
    return;
  }
  // a unit: one image-channel's output o of the outermost axis
  const int64_t units = nc * axes[0].out;
  parallel_for(pool, units,
               std::max<int64_t>(1, (int64_t(16) << 10) / std::max<int64_t>(c.inner_in[0] * axes[0].k, 1)),
               [&](int64_t b, int64_t e) {
                 for (int64_t u = b; u < e; ++u) {
                   const int64_t img = u / axes[0].out, o = u % axes[0].out;
                   pool_slab(c, 0, o, x + img * in_block, y + img * out_block + o * c.inner_out[0]);
                 }
               });
}

}  // namespace

void pool_separable_f32(bool is_max, bool count_include_pad, const std::vector<PoolAxis>& axes, int64_t nc,
                        const float* x, float* y, ThreadPool* pool) {
  pool_separable(is_max, count_include_pad, axes, nc, x, y, pool);
}

void max_pool_separable_8bit(bool is_signed, const std::vector<PoolAxis>& axes, int64_t nc, const void* x,
                             void* y, ThreadPool* pool) {
  if (is_signed)
    pool_separable(true, false, axes, nc, static_cast<const int8_t*>(x), static_cast<int8_t*>(y), pool);
  else
    pool_separable(true, false, axes, nc, static_cast<const uint8_t*>(x), static_cast<uint8_t*>(y), pool);
}

}  // namespace tessera::kernels::x86
