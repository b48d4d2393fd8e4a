#pragma once
// The single-thread loops of norm.h, written once as plain loops over independent lanes that the compiler
// vectorizes for the ISA of the translation unit that includes this file: norm.cpp (portable), the avx2 and
// avx512f folders. Include it ONLY inside an anonymous namespace of such a file: every function then has
// internal linkage and is compiled for that ISA alone. No std:: templates for the same reason (an inline
// one instantiated here could be picked by the linker for generic code).
//
// Sums are in double lanes (the inputs widened exactly), so a slice's mean, variance and norm are those of
// the reference's double loops up to the order of the additions.

constexpr int kLanes = 16;

// sum over x[0 : n] of x, (x - m)^2, x^2 or |x|
template <NormSum K>
inline __attribute__((always_inline)) double term(float v, double m) {
  const double d = double(v);
  if constexpr (K == NormSum::sum) return d;
  if constexpr (K == NormSum::dev2) return (d - m) * (d - m);
  if constexpr (K == NormSum::sq) return d * d;
  return d < 0 ? -d : d;
}

template <NormSum K>
double row_sum_t(const float* x, int64_t n, double m) {
  double lane[kLanes] = {};
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes)
    for (int l = 0; l < kLanes; ++l) lane[l] += term<K>(x[j + l], m);
  double s = 0;
  for (; j < n; ++j) s += term<K>(x[j], m);
  for (int l = 0; l < kLanes; ++l) s += lane[l];
  return s;
}

double row_sum(NormSum k, const float* x, int64_t n, double m) {
  switch (k) {
    case NormSum::sum:
      return row_sum_t<NormSum::sum>(x, n, m);
    case NormSum::dev2:
      return row_sum_t<NormSum::dev2>(x, n, m);
    case NormSum::sq:
      return row_sum_t<NormSum::sq>(x, n, m);
    default:
      return row_sum_t<NormSum::abs>(x, n, m);
  }
}

// y = (x - m) * s, in double
void row_affine(const float* x, float* y, int64_t n, double m, double s) {
  for (int64_t j = 0; j < n; ++j) y[j] = float((double(x[j]) - m) * s);
}

// acc[i] = sum over rows j < nq of term(x[q[j] + i], m[i]), i < w: 32 columns at a time down every row, their
// sums held in registers (m read for dev2 only).
template <NormSum K>
void col_sums_t(double* acc, const float* x, const int64_t* q, int64_t nq, const double* m, int64_t w) {
  constexpr int kCols = 32;
  int64_t i0 = 0;
  for (; i0 + kCols <= w; i0 += kCols) {
    double a[kCols] = {}, mm[kCols];
    for (int l = 0; l < kCols; ++l) mm[l] = K == NormSum::dev2 ? m[i0 + l] : 0.0;
    for (int64_t j = 0; j < nq; ++j) {
      const float* r = x + q[j] + i0;
      for (int l = 0; l < kCols; ++l) a[l] += term<K>(r[l], mm[l]);
    }
    for (int l = 0; l < kCols; ++l) acc[i0 + l] = a[l];
  }
  for (int64_t i = i0; i < w; ++i) acc[i] = 0;
  for (int64_t j = 0; j < nq; ++j)
    for (int64_t i = i0; i < w; ++i) acc[i] += term<K>(x[q[j] + i], K == NormSum::dev2 ? m[i] : 0.0);
}

void col_sums(NormSum k, double* acc, const float* x, const int64_t* q, int64_t nq, const double* m,
              int64_t w) {
  switch (k) {
    case NormSum::sum:
      return col_sums_t<NormSum::sum>(acc, x, q, nq, m, w);
    case NormSum::dev2:
      return col_sums_t<NormSum::dev2>(acc, x, q, nq, m, w);
    case NormSum::sq:
      return col_sums_t<NormSum::sq>(acc, x, q, nq, m, w);
    default:
      return col_sums_t<NormSum::abs>(acc, x, q, nq, m, w);
  }
}

// y[i] = (x[i] - m[i]) * s[i], i < w
void col_affine(const float* x, float* y, const double* m, const double* s, int64_t w) {
  for (int64_t i = 0; i < w; ++i) y[i] = float((double(x[i]) - m[i]) * s[i]);
}

// y[i] = x[i] * s[i], i < w, in float (LpNormalization: within an ulp and a half of x / norm)
void col_scale(const float* x, float* y, const float* s, int64_t w) {
  for (int64_t i = 0; i < w; ++i) y[i] = x[i] * s[i];
}

// ArgMax / ArgMin down columns: w columns, len rows ld apart; bv / bi take the best value and its row. The
// reference's rule as a select: a NaN wins over a number and nothing wins over a NaN; `Last`: ties move on.
template <bool Max, bool Last>
void col_arg_t(const float* x, int64_t len, int64_t ld, int64_t w, float* bv, int32_t* bi) {
  for (int64_t i = 0; i < w; ++i) bv[i] = x[i], bi[i] = 0;
  for (int64_t r = 1; r < len; ++r) {
    const float* row = x + r * ld;
    const int32_t ri = int32_t(r);
    for (int64_t i = 0; i < w; ++i) {
      const float v = row[i], b = bv[i];
      const bool cmp = Max ? (Last ? v >= b : v > b) : (Last ? v <= b : v < b);
      const bool better = cmp | ((v != v) & (b == b));
      bv[i] = better ? v : b;
      bi[i] = better ? ri : bi[i];
    }
  }
}

void col_arg(bool max, bool last, const float* x, int64_t len, int64_t ld, int64_t w, float* bv,
             int32_t* bi) {
  if (max)
    return last ? col_arg_t<true, true>(x, len, ld, w, bv, bi)
                : col_arg_t<true, false>(x, len, ld, w, bv, bi);
  return last ? col_arg_t<false, true>(x, len, ld, w, bv, bi)
              : col_arg_t<false, false>(x, len, ld, w, bv, bi);
}

// CumSum down columns: w running sums in double (the reference's), len rows ld apart, from the end when
// `reverse`; exclusive: each row gets the sum before it.
void col_scan(const float* x, float* y, int64_t len, int64_t ld, int64_t w, bool exclusive, bool reverse,
              double* acc) {
  for (int64_t i = 0; i < w; ++i) acc[i] = 0;
  for (int64_t s = 0; s < len; ++s) {
    const int64_t off = (reverse ? len - 1 - s : s) * ld;
    const float* xr = x + off;
    float* yr = y + off;
    if (exclusive)
      for (int64_t i = 0; i < w; ++i) {
        const double v = xr[i];
        yr[i] = float(acc[i]);
        acc[i] += v;
      }
    else
      for (int64_t i = 0; i < w; ++i) yr[i] = float(acc[i] += double(xr[i]));
  }
}

// TopK's order key of a float: a signed integer in the float's order, -0 = +0, every NaN above +inf; `flip`
// (all ones) reverses it for the smallest.
inline __attribute__((always_inline)) int32_t order_key(float v, int32_t flip) {
  uint32_t b;
  __builtin_memcpy(&b, &v, 4);
  const int32_t s = int32_t(b);
  int32_t k = s ^ ((s >> 31) & 0x7fffffff);
  k = b == 0x80000000u ? 0 : k;
  k = (b & 0x7fffffffu) > 0x7f800000u ? 0x7fffffff : k;
  return k ^ flip;
}

inline __attribute__((always_inline)) uint64_t topk_pack(int32_t key, uint32_t index) {
  return uint64_t(uint32_t(key) ^ 0x80000000u) << 32 | uint32_t(~index);
}

// Appends to out, as (key + 2^31) << 32 | ~index (larger: better, ties to the lower index), the elements of
// x[0 : n] whose key beats t; index = base + position. mode all: every element, unchecked; every: each one
// checked; else only those a vector compare against the k-th best's value tf lets through (x >= tf or NaN for
// the largest, x <= tf for the smallest: a superset; tf must not be NaN for the smallest). Returns how many.
int64_t topk_filter(const float* x, int64_t n, bool largest, float tf, int32_t t, TopkMode mode,
                    uint32_t base, uint64_t* out) {
  const int32_t flip = largest ? 0 : -1;
  int64_t c = 0, j = 0;
  auto check = [&](int64_t at) {
    const int32_t k = order_key(x[at], flip);
    if (mode == TopkMode::all || k > t) out[c++] = topk_pack(k, base + uint32_t(at));
  };
  if (mode == TopkMode::filter) {
#if defined(__AVX512F__)
    const __m512 tv = _mm512_set1_ps(tf);
    for (; j + 16 <= n; j += 16) {
      const __m512 v = _mm512_loadu_ps(x + j);
      uint32_t m =
          largest ? uint32_t(_mm512_cmp_ps_mask(v, tv, _CMP_GE_OQ) | _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q))
                  : uint32_t(_mm512_cmp_ps_mask(v, tv, _CMP_LE_OQ));
      for (; m; m &= m - 1) check(j + __builtin_ctz(m));
    }
#elif defined(__AVX2__)
    const __m256 tv = _mm256_set1_ps(tf);
    for (; j + 16 <= n; j += 16) {
      const __m256 a = _mm256_loadu_ps(x + j), b = _mm256_loadu_ps(x + j + 8);
      __m256 pa, pb;
      if (largest) {
        pa = _mm256_or_ps(_mm256_cmp_ps(a, tv, _CMP_GE_OQ), _mm256_cmp_ps(a, a, _CMP_UNORD_Q));
        pb = _mm256_or_ps(_mm256_cmp_ps(b, tv, _CMP_GE_OQ), _mm256_cmp_ps(b, b, _CMP_UNORD_Q));
      } else {
        pa = _mm256_cmp_ps(a, tv, _CMP_LE_OQ), pb = _mm256_cmp_ps(b, tv, _CMP_LE_OQ);
      }
      uint32_t m = uint32_t(_mm256_movemask_ps(pa)) | uint32_t(_mm256_movemask_ps(pb)) << 8;
      for (; m; m &= m - 1) check(j + __builtin_ctz(m));
    }
#else
    const __m128 tv = _mm_set1_ps(tf);
    for (; j + 16 <= n; j += 16) {
      uint32_t m = 0;
      for (int q = 0; q < 4; ++q) {
        const __m128 v = _mm_loadu_ps(x + j + 4 * q);
        const __m128 p =
            largest ? _mm_or_ps(_mm_cmpge_ps(v, tv), _mm_cmpunord_ps(v, v)) : _mm_cmple_ps(v, tv);
        m |= uint32_t(_mm_movemask_ps(p)) << (4 * q);
      }
      for (; m; m &= m - 1) check(j + __builtin_ctz(m));
    }
#endif
  }
  for (; j < n; ++j) check(j);
  return c;
}

constexpr NormRowKernels kNormRowKernels = {row_sum,   row_affine, col_sums, col_affine,
                                            col_scale, col_arg,    col_scan, topk_filter};
