// Dispatch, threading, the portable row kernels and the transpose of eltwise.h.
#include "kernels/x86/eltwise.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>

#include "core/cpu_features.h"

namespace tessera::kernels::x86 {

// Defined in avx512f/f32_eltwise__avx512f.cpp and avx2/f32_eltwise__avx2.cpp.
#if defined(__x86_64__) || defined(_M_X64)
extern const EltwiseKernels kEltwiseKernelsAvx512f;
extern const EltwiseKernels kEltwiseKernelsAvx2;
#define TESSERA_ELTWISE_X86 1
#endif

namespace {

// ---- portable row kernels (std:: math in float) ----
float unary_scalar(UnaryOp op, float x) {
  switch (op) {
    case UnaryOp::exp:
      return std::exp(x);
    case UnaryOp::erf:
      return std::erf(x);
    case UnaryOp::tanh:
      return std::tanh(x);
    case UnaryOp::sigmoid: {
      const float e = std::exp(-std::fabs(x));
      const float r = 1.0f / (1.0f + e);
      return x < 0 ? e * r : (std::isnan(x) ? x : r);
    }
    case UnaryOp::relu:
      return x < 0.0f ? 0.0f : x;
    case UnaryOp::silu:
      return x / (1.0f + std::exp(-x));
    case UnaryOp::hardswish:
      return x * std::max(0.0f, std::min(1.0f, x / 6.0f + 0.5f));
    case UnaryOp::gelu_erf:
      return 0.5f * x * (1.0f + std::erf(x * 0.70710678118654752f));
    case UnaryOp::gelu_tanh:
      return 0.5f * x * (1.0f + std::tanh(0.79788456080286536f * (x + 0.044715f * x * x * x)));
    case UnaryOp::log:
      return std::log(x);
    case UnaryOp::sin:
      return std::sin(x);
    case UnaryOp::cos:
      return std::cos(x);
    case UnaryOp::softplus:
      return std::isnan(x) ? x : std::max(x, 0.0f) + std::log1p(std::exp(-std::fabs(x)));
  }
  return x;
}

// Interpolates E on each interval at the Chebyshev nodes of degree kDegree (near-minimax), in monomials
// of u: a 5 x 5 Vandermonde system per interval, solved with partial pivoting in double.
GeluTable make_gelu_table(double (*e)(double)) {
  constexpr int N = GeluTable::kIntervals, D = GeluTable::kDegree + 1;
  const double w = double(GeluTable::kRange) / N, pi = std::acos(-1.0);
  GeluTable t{};
  for (int j = 0; j < N; ++j) {
    double m[D][D + 1];
    for (int k = 0; k < D; ++k) {
      const double u = 0.5 - 0.5 * std::cos(pi * (k + 0.5) / D);
      double pw = 1.0;
      for (int q = 0; q < D; ++q, pw *= u) m[k][q] = pw;
      m[k][D] = e((j + u) * w);
    }
    for (int c = 0; c < D; ++c) {
      int piv = c;
      for (int r = c + 1; r < D; ++r)
        if (std::fabs(m[r][c]) > std::fabs(m[piv][c])) piv = r;
      for (int q = 0; q <= D; ++q) std::swap(m[c][q], m[piv][q]);
      for (int r = 0; r < D; ++r) {
        if (r == c) continue;
        const double f = m[r][c] / m[c][c];
        for (int q = c; q <= D; ++q) m[r][q] -= f * m[c][q];
      }
    }
    for (int k = 0; k < D; ++k) t.c[k][j] = float(m[k][D] / m[k][k]);
  }
  return t;
}

void unary_portable(UnaryOp op, const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = unary_scalar(op, x[i]);
}

void binary_portable(BinaryOp op, const float* a, int64_t sa, const float* b, int64_t sb, float* y,
                     int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float u = a[i * sa], v = b[i * sb];
    switch (op) {
      case BinaryOp::add:
        y[i] = u + v;
        break;
      case BinaryOp::sub:
        y[i] = u - v;
        break;
      case BinaryOp::mul:
        y[i] = u * v;
        break;
      case BinaryOp::div:
        y[i] = u / v;
        break;
      case BinaryOp::pow:
        y[i] = std::pow(u, v);
        break;
    }
  }
}

void softmax_portable(const float* x, float* y, int64_t rows, int64_t len, int64_t ld) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * ld;
    float* yr = y + r * ld;
    float mx = -std::numeric_limits<float>::infinity();
    for (int64_t i = 0; i < len; ++i) mx = std::max(mx, xr[i]);
    double sum = 0;
    for (int64_t i = 0; i < len; ++i) sum += (yr[i] = std::exp(xr[i] - mx));
    if (!std::isfinite(mx)) sum = std::numeric_limits<double>::quiet_NaN();
    const float inv = float(1.0 / sum);
    for (int64_t i = 0; i < len; ++i) yr[i] *= inv;
  }
}

void layernorm_portable(const float* x, const float* scale, const float* bias, float* y, int64_t rows,
                        int64_t len, float eps, int64_t run) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * len;
    float* yr = y + r * len;
    double s = 0, q = 0;
    for (int64_t i = 0; i < len; ++i) s += xr[i];
    const double mean = len ? s / double(len) : 0.0;
    for (int64_t i = 0; i < len; ++i) q += (xr[i] - mean) * (xr[i] - mean);
    const float m = float(mean), inv = float(1.0 / std::sqrt((len ? q / double(len) : 0.0) + eps));
    for (int64_t i = 0; i < len; ++i) {
      const int64_t p = run ? r * (len / run) + i / run : i;
      yr[i] = (xr[i] - m) * inv * scale[p] + (bias ? bias[p] : 0.0f);
    }
  }
}

void rmsnorm_portable(const float* x, const float* scale, float* y, int64_t rows, int64_t len, float eps) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * len;
    float* yr = y + r * len;
    double q = 0;
    for (int64_t i = 0; i < len; ++i) q += double(xr[i]) * xr[i];
    const float inv = float(1.0 / std::sqrt((len ? q / double(len) : 0.0) + eps));
    for (int64_t i = 0; i < len; ++i) yr[i] = xr[i] * inv * scale[i];
  }
}

void transpose_tile16_portable(const float* x, int64_t ldx, float* y, int64_t ldy) {
  for (int64_t a = 0; a < 16; ++a)
    for (int64_t b = 0; b < 16; ++b) y[a * ldy + b] = x[b * ldx + a];
}

void interleave3_portable(const float* x, int64_t ldx, float* y, int64_t n) {
  for (int64_t a = 0; a < n; ++a)
    for (int64_t b = 0; b < 3; ++b) y[a * 3 + b] = x[b * ldx + a];
}

void online_softmax_portable(float* s, int64_t lds, int64_t rows, int64_t len, float* m, float* l,
                             float* corr) {
  const float ninf = -std::numeric_limits<float>::infinity();
  for (int64_t r = 0; r < rows; ++r) {
    float* row = s + r * lds;
    float bm = ninf;
    for (int64_t i = 0; i < len; ++i) bm = std::max(bm, row[i]);
    const float mo = m[r], mn = bm > mo ? bm : mo;
    if (mn == ninf) {
      for (int64_t i = 0; i < len; ++i) row[i] = 0.0f;
      corr[r] = 1.0f;
      continue;
    }
    double sum = 0;
    for (int64_t i = 0; i < len; ++i) sum += (row[i] = std::exp(row[i] - mn));
    corr[r] = mo == ninf ? 0.0f : std::exp(mo - mn);
    l[r] = l[r] * corr[r] + float(sum);
    m[r] = mn;
  }
}

void log_softmax_portable(const float* x, float* y, int64_t rows, int64_t len, int64_t ld) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * ld;
    float* yr = y + r * ld;
    float mx = -std::numeric_limits<float>::infinity();
    for (int64_t i = 0; i < len; ++i) mx = std::max(mx, xr[i]);
    double sum = 0;
    for (int64_t i = 0; i < len; ++i) sum += std::exp(double(xr[i]) - mx);
    const float off = std::isfinite(mx) ? float(mx + std::log(sum)) : std::numeric_limits<float>::quiet_NaN();
    for (int64_t i = 0; i < len; ++i) yr[i] = xr[i] - off;
  }
}

const EltwiseKernels kPortable = {
    unary_portable,      binary_portable,         softmax_portable,          layernorm_portable,
    rmsnorm_portable,    online_softmax_portable, transpose_tile16_portable, interleave3_portable,
    log_softmax_portable};

std::atomic<int> g_forced{-1};

constexpr int64_t kGrain = 16384;  // elements per task: below this, threading costs more than it saves

int64_t row_grain(int64_t len) {
  return std::max<int64_t>(1, kGrain / std::max<int64_t>(len, 1));
}

}  // namespace

const char* eltwise_isa_name(EltIsa isa) {
  switch (isa) {
    case EltIsa::portable:
      return "portable";
    case EltIsa::avx2:
      return "avx2";
    case EltIsa::avx512f:
      return "avx512f";
  }
  return "?";
}

bool eltwise_isa_available(EltIsa isa) {
  const CpuFeatures& f = cpu_features();
  switch (isa) {
    case EltIsa::portable:
      return true;
#ifdef TESSERA_ELTWISE_X86
    case EltIsa::avx2:
      return f.avx2 && f.fma;
    case EltIsa::avx512f:
      return f.avx512_core();
#else
    default:
      (void)f;
      return false;
#endif
  }
  return false;
}

EltIsa eltwise_isa() {
  const int forced = g_forced.load(std::memory_order_relaxed);
  if (forced >= 0) return EltIsa(forced);
  static const EltIsa best = eltwise_isa_available(EltIsa::avx512f) ? EltIsa::avx512f
                             : eltwise_isa_available(EltIsa::avx2)  ? EltIsa::avx2
                                                                    : EltIsa::portable;
  return best;
}

void force_eltwise_isa(EltIsa isa, bool reset) {
  g_forced.store(reset || !eltwise_isa_available(isa) ? -1 : int(isa), std::memory_order_relaxed);
}

const GeluTable& gelu_table(UnaryOp op) {
  static const GeluTable erf_table =
      make_gelu_table([](double a) { return 0.5 * std::erf(a * 0.70710678118654752440); });
  static const GeluTable tanh_table = make_gelu_table(
      [](double a) { return 0.5 * std::tanh(0.79788456080286535588 * (a + 0.044715 * a * a * a)); });
  return op == UnaryOp::gelu_tanh ? tanh_table : erf_table;
}

const EltwiseKernels& eltwise_kernels(EltIsa isa) {
#ifdef TESSERA_ELTWISE_X86
  if (isa == EltIsa::avx512f && eltwise_isa_available(isa)) return kEltwiseKernelsAvx512f;
  if (isa == EltIsa::avx2 && eltwise_isa_available(isa)) return kEltwiseKernelsAvx2;
#endif
  (void)isa;
  return kPortable;
}

void unary_f32(UnaryOp op, const float* x, float* y, int64_t n, ThreadPool* pool) {
  const EltwiseKernels& k = eltwise_kernels(eltwise_isa());
  parallel_for(pool, n, kGrain, [&](int64_t b, int64_t e) { k.unary(op, x + b, y + b, e - b); });
}

void binary_f32(BinaryOp op, const float* a, Bcast ka, const float* b, Bcast kb, float* y, int64_t outer,
                int64_t inner, ThreadPool* pool) {
  const EltwiseKernels& k = eltwise_kernels(eltwise_isa());
  auto inner_stride = [](Bcast c) { return c == Bcast::full || c == Bcast::row ? int64_t(1) : int64_t(0); };
  auto outer_stride = [inner](Bcast c) {
    return c == Bcast::full ? inner : c == Bcast::col ? int64_t(1) : int64_t(0);
  };
  const int64_t sa = inner_stride(ka), sb = inner_stride(kb), oa = outer_stride(ka), ob = outer_stride(kb);
  if (ka == Bcast::full && kb == Bcast::full) {  // one flat range, split anywhere
    parallel_for(pool, outer * inner, kGrain,
                 [&](int64_t s, int64_t e) { k.binary(op, a + s, 1, b + s, 1, y + s, e - s); });
    return;
  }
  // A full operand against a short row repeated down it (channels-last maps scaled per channel, 32-96
  // floats a row): whole rows per call against a copy of the row repeated as often, not a call per row
  // (EfficientNet's squeeze-and-excitation scaling of 112 x 112 x 32 ran at 12 GB/s).
  const bool row_a = ka == Bcast::row && kb == Bcast::full, row_b = ka == Bcast::full && kb == Bcast::row;
  constexpr int64_t kRowsBlock = 1024;  // floats per call at most
  if ((row_a || row_b) && inner < kRowsBlock / 2) {
    const int64_t rows = kRowsBlock / inner;
    parallel_for(pool, outer, std::max(row_grain(inner), rows), [&](int64_t s, int64_t e) {
      alignas(64) float rep[kRowsBlock];
      const float* row = row_a ? a : b;
      for (int64_t r = 0; r < rows; ++r) std::memcpy(rep + r * inner, row, size_t(inner) * sizeof(float));
      for (int64_t o = s; o < e; o += rows) {
        const int64_t len = std::min(rows, e - o) * inner;
        if (row_a)
          k.binary(op, rep, 1, b + o * inner, 1, y + o * inner, len);
        else
          k.binary(op, a + o * inner, 1, rep, 1, y + o * inner, len);
      }
    });
    return;
  }
  parallel_for(pool, outer, row_grain(inner), [&](int64_t s, int64_t e) {
    for (int64_t o = s; o < e; ++o) k.binary(op, a + o * oa, sa, b + o * ob, sb, y + o * inner, inner);
  });
}

namespace {

template <bool SC, bool SX, bool SY>
void where_row(const bool* c, const uint32_t* x, const uint32_t* y, uint32_t* z, int64_t n) {
  for (int64_t i = 0; i < n; ++i) z[i] = c[SC ? i : 0] ? x[SX ? i : 0] : y[SY ? i : 0];
}

void where_row_portable(const bool* c, bool sc, const uint32_t* x, bool sx, const uint32_t* y, bool sy,
                        uint32_t* z, int64_t n) {
  using F = void (*)(const bool*, const uint32_t*, const uint32_t*, uint32_t*, int64_t);
  static constexpr F kRows[8] = {where_row<false, false, false>, where_row<false, false, true>,
                                 where_row<false, true, false>,  where_row<false, true, true>,
                                 where_row<true, false, false>,  where_row<true, false, true>,
                                 where_row<true, true, false>,   where_row<true, true, true>};
  kRows[(sc ? 4 : 0) + (sx ? 2 : 0) + (sy ? 1 : 0)](c, x, y, z, n);
}

}  // namespace

void where_32(const bool* c, Bcast kc, const uint32_t* x, Bcast kx, const uint32_t* y, Bcast ky, uint32_t* z,
              int64_t outer, int64_t inner, ThreadPool* pool) {
  const auto row = eltwise_isa() == EltIsa::avx512f ? where_row_32__avx512f : where_row_portable;
  // an operand's row o starts at (full) o * inner, (col) o, (row, scalar) 0; steps along it for full / row
  const auto start = [inner](Bcast k, int64_t o) {
    return k == Bcast::full ? o * inner : k == Bcast::col ? o : int64_t(0);
  };
  const auto steps = [](Bcast k) { return k == Bcast::full || k == Bcast::row; };
  if (kc == Bcast::full && kx == Bcast::full && ky == Bcast::full) {  // one flat range, split anywhere
    parallel_for(pool, outer * inner, kGrain,
                 [&](int64_t b, int64_t e) { row(c + b, true, x + b, true, y + b, true, z + b, e - b); });
    return;
  }
  parallel_for(pool, outer, row_grain(inner), [&](int64_t b, int64_t e) {
    for (int64_t o = b; o < e; ++o)
      row(c + start(kc, o), steps(kc), x + start(kx, o), steps(kx), y + start(ky, o), steps(ky),
          z + o * inner, inner);
  });
}

void softmax_f32(const float* x, float* y, int64_t rows, int64_t len, ThreadPool* pool) {
  const EltwiseKernels& k = eltwise_kernels(eltwise_isa());
  parallel_for(pool, rows, row_grain(len),
               [&](int64_t b, int64_t e) { k.softmax_rows(x + b * len, y + b * len, e - b, len, len); });
}

void log_softmax_f32(const float* x, float* y, int64_t rows, int64_t len, ThreadPool* pool) {
  const EltwiseKernels& k = eltwise_kernels(eltwise_isa());
  parallel_for(pool, rows, row_grain(len),
               [&](int64_t b, int64_t e) { k.log_softmax_rows(x + b * len, y + b * len, e - b, len, len); });
}

void layernorm_f32(const float* x, const float* scale, const float* bias, float* y, int64_t rows, int64_t len,
                   float eps, ThreadPool* pool) {
  const EltwiseKernels& k = eltwise_kernels(eltwise_isa());
  parallel_for(pool, rows, row_grain(len), [&](int64_t b, int64_t e) {
    k.layernorm_rows(x + b * len, scale, bias, y + b * len, e - b, len, eps, 0);
  });
}

void rmsnorm_f32(const float* x, const float* scale, float* y, int64_t rows, int64_t len, float eps,
                 ThreadPool* pool) {
  const EltwiseKernels& k = eltwise_kernels(eltwise_isa());
  parallel_for(pool, rows, row_grain(len), [&](int64_t b, int64_t e) {
    k.rmsnorm_rows(x + b * len, scale, y + b * len, e - b, len, eps);
  });
}

void groupnorm_f32(const float* x, const float* scale, const float* bias, float* y, int64_t n, int64_t groups,
                   int64_t len, int64_t run, float eps, ThreadPool* pool) {
  const EltwiseKernels& k = eltwise_kernels(eltwise_isa());
  const int64_t per_row = len / run;  // parameters a row
  parallel_for(pool, n * groups, row_grain(len), [&](int64_t b, int64_t e) {
    while (b < e) {  // runs of rows within one item, their groups' parameters adjacent
      const int64_t g = b % groups, cnt = std::min(e - b, groups - g);
      k.layernorm_rows(x + b * len, scale + g * per_row, bias ? bias + g * per_row : nullptr, y + b * len,
                       cnt, len, eps, run);
      b += cnt;
    }
  });
}

// ---- transpose ----
// y[a * NB + b] = x[b * isb + a] for a in [a0, a1), b < NB.
template <int NB, class T>
void interleave_runs(const T* x, int64_t isb, T* y, int64_t a0, int64_t a1) {
  for (int64_t a = a0; a < a1; ++a)
#pragma GCC unroll 4
    for (int b = 0; b < NB; ++b) y[a * NB + b] = x[b * isb + a];
}

namespace {

// Drops size-1 axes and merges input axes that stay adjacent in the output, then
// either copies contiguous runs (innermost axis kept) or transposes 2-D tiles of
// the (output-innermost, input-innermost) axis pair, tile by tile, so that both
// the reads and the writes of a tile stay in L1. Floats (4-byte values) or bytes (an int8 region's channel
// shuffles; the vector tiles are the floats').
template <class T>
void transpose_impl(const T* x, T* y, const std::vector<int64_t>& shape, const std::vector<int64_t>& perm,
                    ThreadPool* pool) {
  constexpr bool kFloat = sizeof(T) == 4;
  const size_t r0 = shape.size();
  int64_t numel = 1;
  for (int64_t d : shape) numel *= d;
  if (numel == 0) return;
  // Keep axes with size > 1, in output order.
  std::vector<int64_t> keep_in;  // input axes kept, in input order
  for (size_t i = 0; i < r0; ++i)
    if (shape[i] != 1) keep_in.push_back(int64_t(i));
  std::vector<int64_t> new_index(r0, -1);
  for (size_t j = 0; j < keep_in.size(); ++j) new_index[size_t(keep_in[j])] = int64_t(j);
  std::vector<int64_t> p;  // perm over kept axes
  for (int64_t a : perm)
    if (shape[size_t(a)] != 1) p.push_back(new_index[size_t(a)]);
  std::vector<int64_t> d;
  for (int64_t a : keep_in) d.push_back(shape[size_t(a)]);
  // Merge: output positions j, j+1 with p[j+1] == p[j] + 1 are one axis.
  {
    std::vector<int64_t> group_of(d.size());  // input axis -> merged group (by output order)
    std::vector<int64_t> gdim, gfirst;        // per group: size, first input axis
    for (size_t j = 0; j < p.size(); ++j) {
      if (j > 0 && p[j] == p[j - 1] + 1) {
        gdim.back() *= d[size_t(p[j])];
      } else {
        gdim.push_back(d[size_t(p[j])]);
        gfirst.push_back(p[j]);
      }
      group_of[size_t(p[j])] = int64_t(gdim.size()) - 1;
    }
    // Groups in input order give the new input axes.
    std::vector<int64_t> order(gdim.size());
    for (size_t g = 0; g < order.size(); ++g) order[g] = int64_t(g);
    std::sort(order.begin(), order.end(),
              [&](int64_t u, int64_t v) { return gfirst[size_t(u)] < gfirst[size_t(v)]; });
    std::vector<int64_t> in_pos(order.size());
    for (size_t k = 0; k < order.size(); ++k) in_pos[size_t(order[k])] = int64_t(k);
    d.assign(order.size(), 0);
    p.assign(order.size(), 0);
    for (size_t g = 0; g < order.size(); ++g) {
      d[size_t(in_pos[g])] = gdim[g];
      p[g] = in_pos[g];
    }
    (void)group_of;
  }
  const int64_t r = int64_t(d.size());
  if (r <= 1) {  // a pure copy
    parallel_for(pool, numel, 1 << 16,
                 [&](int64_t b, int64_t e) { std::memcpy(y + b, x + b, size_t(e - b) * sizeof(T)); });
    return;
  }
  std::vector<int64_t> is(static_cast<size_t>(r)),
      os_in(static_cast<size_t>(r));  // input strides; output stride of each input axis
  is[size_t(r - 1)] = 1;
  for (int64_t i = r - 2; i >= 0; --i) is[size_t(i)] = is[size_t(i + 1)] * d[size_t(i + 1)];
  {
    int64_t s = 1;
    for (int64_t j = r - 1; j >= 0; --j) {
      os_in[size_t(p[size_t(j)])] = s;
      s *= d[size_t(p[size_t(j)])];
    }
  }
  const int64_t A = r - 1;             // input-innermost axis (input stride 1)
  const int64_t B = p[size_t(r - 1)];  // output-innermost axis (output stride 1)
  const int64_t dA = d[size_t(A)], dB = d[size_t(B)], isB = is[size_t(B)], osA = os_in[size_t(A)];
  // The other axes, enumerated as one outer index.
  std::vector<int64_t> od, oi, oo;
  for (int64_t k = 0; k < r; ++k)
    if (k != A && k != B) {
      od.push_back(d[size_t(k)]);
      oi.push_back(is[size_t(k)]);
      oo.push_back(os_in[size_t(k)]);
    }
  auto offsets = [&](int64_t o, int64_t& xoff, int64_t& yoff) {
    xoff = yoff = 0;
    for (int64_t k = int64_t(od.size()) - 1; k >= 0; --k) {
      const int64_t q = o % od[size_t(k)];
      o /= od[size_t(k)];
      xoff += q * oi[size_t(k)];
      yoff += q * oo[size_t(k)];
    }
  };
  if (A == B && dA < 16 && r >= 3) {
    // Short runs (MobileViT's 2 x 2 patches unfolded: runs of 2 floats): per run a memcpy call and the
    // div / mod of its offsets ran at 1 GB/s. Instead the runs of the output's next-innermost axis C are
    // copied in a loop of a compile-time width, the other axes stepped as an odometer.
    const int64_t C = p[size_t(r - 2)], dC = d[size_t(C)], isC = is[size_t(C)];
    std::vector<int64_t> rd, ri, ro;  // the axes but A and C, input order (last fastest)
    for (int64_t q = 0; q < r; ++q)
      if (q != A && q != C)
        rd.push_back(d[size_t(q)]), ri.push_back(is[size_t(q)]), ro.push_back(os_in[size_t(q)]);
    const int64_t rows = numel / (dA * dC);
    parallel_for(numel >= (1 << 14) ? pool : nullptr, rows, std::max<int64_t>(1, 4096 / (dA * dC)),
                 [&](int64_t s, int64_t e) {
                   std::vector<int64_t> digit(rd.size());
                   int64_t xoff = 0, yoff = 0;
                   for (int64_t q = int64_t(rd.size()) - 1, o = s; q >= 0; --q) {
                     digit[size_t(q)] = o % rd[size_t(q)];
                     o /= rd[size_t(q)];
                     xoff += digit[size_t(q)] * ri[size_t(q)];
                     yoff += digit[size_t(q)] * ro[size_t(q)];
                   }
                   for (int64_t o = s; o < e; ++o) {
                     const T* xs = x + xoff;
                     T* yd = y + yoff;  // C's runs are adjacent in y (it is next to A there)
                     switch (dA) {
                       case 2:
                         for (int64_t c = 0; c < dC; ++c)
                           std::memcpy(yd + 2 * c, xs + c * isC, 2 * sizeof(T));
                         break;
                       case 4:
                         for (int64_t c = 0; c < dC; ++c)
                           std::memcpy(yd + 4 * c, xs + c * isC, 4 * sizeof(T));
                         break;
                       case 8:
                         for (int64_t c = 0; c < dC; ++c)
                           std::memcpy(yd + 8 * c, xs + c * isC, 8 * sizeof(T));
                         break;
                       default:
                         for (int64_t c = 0; c < dC; ++c)
                           for (int64_t t = 0; t < dA; ++t) yd[c * dA + t] = xs[c * isC + t];
                     }
                     for (int64_t q = int64_t(rd.size()) - 1; q >= 0; --q) {  // next row
                       xoff += ri[size_t(q)], yoff += ro[size_t(q)];
                       if (++digit[size_t(q)] < rd[size_t(q)]) break;
                       digit[size_t(q)] = 0;
                       xoff -= rd[size_t(q)] * ri[size_t(q)], yoff -= rd[size_t(q)] * ro[size_t(q)];
                     }
                   }
                 });
    return;
  }
  if (A == B) {  // the innermost axis stays innermost: copy runs of dA floats
    parallel_for(pool, numel / dA, std::max<int64_t>(1, 16384 / dA), [&](int64_t s, int64_t e) {
      for (int64_t o = s; o < e; ++o) {
        int64_t xoff, yoff;
        offsets(o, xoff, yoff);
        std::memcpy(y + yoff, x + xoff, size_t(dA) * sizeof(T));
      }
    });
    return;
  }
  const int64_t outer = numel / (dA * dB);
  const EltwiseKernels& k = eltwise_kernels(eltwise_isa());
  // Tasks over (outer index, chunk of A, tile of B), B fastest: an NCHW -> NHWC input transpose is one
  // outer index with 3 values of B, and must still split. A thread's tasks are consecutive, so it writes
  // whole output rows (A) but where its run starts or ends: B outermost gave each thread a part of every
  // row, both writing the cache line at the boundary (ViT's 196 x 768 patch map back to NCHW at two
  // threads: 2x slower than at one; 4x on MobileNetV2's 7 x 7 x 960).
  // Under 16K elements (64 KiB) one thread: the fork-join costs more than the copy (7 x 7 x 160 at two
  // threads: 5 us against 2 at one).
  // A task is one 16-row tile of A (so that threads split A evenly, at any row), or 512 values of A where
  // B is a few channels interleaved (a task per 16 would cost more than its copy).
  constexpr int64_t Tl = 32;
  const int64_t TA = dB <= 4 ? 512 : 16;
  const int64_t tb = (dB + Tl - 1) / Tl, ta = (dA + TA - 1) / TA;
  parallel_for(numel >= (1 << 14) ? pool : nullptr, outer * tb * ta, std::max<int64_t>(1, 8192 / (Tl * TA)),
               [&](int64_t s, int64_t e) {
                 for (int64_t task = s; task < e; ++task) {
                   const int64_t a_lo = (task / tb % ta) * TA, a_hi = std::min(dA, a_lo + TA);
                   const int64_t b0 = (task % tb) * Tl, b1 = std::min(dB, b0 + Tl);
                   int64_t xoff, yoff;
                   offsets(task / (ta * tb), xoff, yoff);
                   if (dB <= 4 && osA == dB) {
                     // a few output-innermost values per A (interleaving channels): runs of
                     // b1 - b0 floats, with the count known to the compiler
                     const T* xs = x + xoff + b0 * isB;
                     T* yd = y + yoff + b0;
                     switch (b1 - b0) {
                       case 2:
                         interleave_runs<2>(xs, isB, yd, a_lo, a_hi);
                         continue;
                       case 3:  // an image's three color planes
                         if constexpr (kFloat)
                           k.interleave3(reinterpret_cast<const float*>(xs) + a_lo, isB,
                                         reinterpret_cast<float*>(yd) + 3 * a_lo, a_hi - a_lo);
                         else
                           interleave_runs<3>(xs, isB, yd, a_lo, a_hi);
                         continue;
                       case 4:
                         interleave_runs<4>(xs, isB, yd, a_lo, a_hi);
                         continue;
                       default:
                         break;
                     }
                   }
                   // 16 x 16 tiles in vector registers (floats), the ragged edges scalar
                   const int64_t bfull = kFloat ? b0 + (b1 - b0) / 16 * 16 : b0;
                   for (int64_t a0 = a_lo; a0 < a_hi; a0 += Tl) {
                     const int64_t a1 = std::min(a_hi, a0 + Tl), afull = a0 + (a1 - a0) / 16 * 16;
                     if constexpr (kFloat)
                       for (int64_t a = a0; a < afull; a += 16)
                         for (int64_t b = b0; b < bfull; b += 16)
                           k.transpose_tile16(reinterpret_cast<const float*>(x) + xoff + a + b * isB, isB,
                                              reinterpret_cast<float*>(y) + yoff + a * osA + b, osA);
                     for (int64_t a = a0; a < a1; ++a) {
                       const T* xs = x + xoff + a + b0 * isB;
                       T* yd = y + yoff + a * osA + b0;
                       for (int64_t b = a < afull ? bfull - b0 : 0; b < b1 - b0; ++b) yd[b] = xs[b * isB];
                     }
                   }
                 }
               });
}

}  // namespace

void transpose_f32(const float* x, float* y, const std::vector<int64_t>& shape,
                   const std::vector<int64_t>& perm, ThreadPool* pool) {
  transpose_impl(x, y, shape, perm, pool);
}

void transpose_bytes(const uint8_t* x, uint8_t* y, const std::vector<int64_t>& shape,
                     const std::vector<int64_t>& perm, ThreadPool* pool) {
  transpose_impl(x, y, shape, perm, pool);
}

}  // namespace tessera::kernels::x86
