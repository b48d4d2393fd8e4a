// Winograd F(2x2, 3x3) and F(4x4, 3x3) input and output transforms (wino23/43_in/out_avx512f and
// _avx2), written once for any vector ISA. Included only by the ISA files, which instantiate it with
// their vector traits and compile it with their flags. V supplies: vec, mask, kWidth, load / store (full
// and masked), add, sub, mul, fma (a*b + c), fnma (c - a*b), max, min, set1, zero, tail_mask(n).
//
// Channels are the vector lanes: a tile's (m+2)^2 input pixels (or m^2 outputs) are transformed kWidth
// channels at a time, full blocks with plain loads and stores and the channel tail masked.
#pragma once

#include <array>
#include <cstdint>
#include <utility>

#include "kernels/x86/conv_nhwc.h"
#include "kernels/x86/vec_masked.h"

namespace tessera::kernels::x86::wino {

using vec::load;
using vec::store;

template <class V>
inline __attribute__((always_inline)) typename V::vec act(typename V::vec v, const WinoOut& o) {
  if (o.act == Activation::relu) return V::max(v, V::zero());
  if (o.act == Activation::clip) return V::min(V::max(v, V::set1(o.clip_min)), V::set1(o.clip_max));
  if (o.act == Activation::silu) return V::silu(v);
  if (o.act == Activation::hardswish) return V::hardswish(v);
  return v;
}

// Runs f.template operator()<FULL>(cb, mask) over the channel blocks of [0, c).
template <class V, class F>
inline __attribute__((always_inline)) void blocks(int64_t c, F&& f) {
  int64_t cb = 0;
  for (; cb + V::kWidth <= c; cb += V::kWidth) f.template operator()<true>(cb, V::tail_mask(V::kWidth));
  if (cb < c) f.template operator()<false>(cb, V::tail_mask(int(c - cb)));
}

template <class V>
void in23(const float* const* src, int64_t c, float* v, int64_t stride) {
  using vec = typename V::vec;
  blocks<V>(c, [&]<bool FULL>(int64_t cb, typename V::mask m) {
    vec d[16], t[16];
#pragma GCC unroll 16
    for (int k = 0; k < 16; ++k) d[k] = load<V, FULL>(src[k] + cb, m);
      // rows: t = B^T d
#pragma GCC unroll 4
    for (int j = 0; j < 4; ++j) {
      t[0 * 4 + j] = V::sub(d[0 * 4 + j], d[2 * 4 + j]);
      t[1 * 4 + j] = V::add(d[1 * 4 + j], d[2 * 4 + j]);
      t[2 * 4 + j] = V::sub(d[2 * 4 + j], d[1 * 4 + j]);
      t[3 * 4 + j] = V::sub(d[1 * 4 + j], d[3 * 4 + j]);
    }
    // columns: v = t B
#pragma GCC unroll 4
    for (int i = 0; i < 4; ++i) {
      store<V, FULL>(v + (i * 4 + 0) * stride + cb, m, V::sub(t[i * 4 + 0], t[i * 4 + 2]));
      store<V, FULL>(v + (i * 4 + 1) * stride + cb, m, V::add(t[i * 4 + 1], t[i * 4 + 2]));
      store<V, FULL>(v + (i * 4 + 2) * stride + cb, m, V::sub(t[i * 4 + 2], t[i * 4 + 1]));
      store<V, FULL>(v + (i * 4 + 3) * stride + cb, m, V::sub(t[i * 4 + 1], t[i * 4 + 3]));
    }
  });
}

template <class V>
void out23(const float* mp, int64_t mstride, int64_t n, const WinoOut& o) {
  using vec = typename V::vec;
  blocks<V>(n, [&]<bool FULL>(int64_t cb, typename V::mask m) {
    vec d[16], u[8];
#pragma GCC unroll 16
    for (int k = 0; k < 16; ++k) d[k] = load<V, FULL>(mp + k * mstride + cb, m);
      // rows: u = A^T M (2 x 4)
#pragma GCC unroll 4
    for (int j = 0; j < 4; ++j) {
      u[0 * 4 + j] = V::add(V::add(d[0 * 4 + j], d[1 * 4 + j]), d[2 * 4 + j]);
      u[1 * 4 + j] = V::sub(V::sub(d[1 * 4 + j], d[2 * 4 + j]), d[3 * 4 + j]);
    }
    const vec b = o.bias ? load<V, FULL>(o.bias + cb, m) : V::zero();
#pragma GCC unroll 2
    for (int i = 0; i < 2; ++i) {
      vec r[2];
      r[0] = V::add(V::add(V::add(u[i * 4 + 0], u[i * 4 + 1]), u[i * 4 + 2]), b);
      r[1] = V::add(V::sub(V::sub(u[i * 4 + 1], u[i * 4 + 2]), u[i * 4 + 3]), b);
#pragma GCC unroll 2
      for (int j = 0; j < 2; ++j) {
        float* yp = o.y[i * 2 + j];
        if (!yp) continue;
        vec val = r[j];
        if (o.res[i * 2 + j]) val = V::add(val, load<V, FULL>(o.res[i * 2 + j] + cb, m));
        store<V, FULL>(yp + cb, m, act<V>(val, o));
      }
    }
  });
}

// B^T x for 6 values of F(4x4, 3x3).
template <class V>
inline __attribute__((always_inline)) void bt6(const typename V::vec* d, typename V::vec* t) {
  using vec = typename V::vec;
  const vec four = V::set1(4.0f), five = V::set1(-5.0f), two = V::set1(2.0f);
  t[0] = V::fma(four, d[0], V::fma(five, d[2], d[4]));
  const vec a = V::fnma(four, d[2], d[4]), b = V::fnma(four, d[1], d[3]);
  t[1] = V::add(a, b);
  t[2] = V::sub(a, b);
  const vec c = V::sub(d[4], d[2]), e = V::mul(two, V::sub(d[3], d[1]));
  t[3] = V::add(c, e);
  t[4] = V::sub(c, e);
  t[5] = V::fma(four, d[1], V::fma(five, d[3], d[5]));
}

// A^T x: 6 values -> 4.
template <class V>
inline __attribute__((always_inline)) void at6(const typename V::vec* m, typename V::vec* o) {
  using vec = typename V::vec;
  const vec p = V::add(m[1], m[2]), q = V::sub(m[1], m[2]);
  const vec r = V::add(m[3], m[4]), s = V::sub(m[3], m[4]);
  o[0] = V::add(V::add(m[0], p), r);
  o[1] = V::fma(V::set1(2.0f), s, q);
  o[2] = V::fma(V::set1(4.0f), r, p);
  o[3] = V::add(V::fma(V::set1(8.0f), s, q), m[5]);
}

template <class V>
void in43(const float* const* src, int64_t c, float* v, int64_t stride) {
  using vec = typename V::vec;
  blocks<V>(c, [&]<bool FULL>(int64_t cb, typename V::mask m) {
    vec t[36];  // t[i * 6 + j] = (B^T d)[i][j]
#pragma GCC unroll 6
    for (int j = 0; j < 6; ++j) {
      vec d[6], r[6];
#pragma GCC unroll 6
      for (int k = 0; k < 6; ++k) d[k] = load<V, FULL>(src[k * 6 + j] + cb, m);
      bt6<V>(d, r);
#pragma GCC unroll 6
      for (int i = 0; i < 6; ++i) t[i * 6 + j] = r[i];
    }
#pragma GCC unroll 6
    for (int i = 0; i < 6; ++i) {
      vec r[6];
      bt6<V>(t + i * 6, r);
#pragma GCC unroll 6
      for (int j = 0; j < 6; ++j) store<V, FULL>(v + (i * 6 + j) * stride + cb, m, r[j]);
    }
  });
}

template <class V>
void out43(const float* mp, int64_t mstride, int64_t n, const WinoOut& o) {
  using vec = typename V::vec;
  blocks<V>(n, [&]<bool FULL>(int64_t cb, typename V::mask m) {
    vec u[24];  // u[i * 6 + q] = (A^T M)[i][q]
#pragma GCC unroll 6
    for (int q = 0; q < 6; ++q) {
      vec d[6], r[4];
#pragma GCC unroll 6
      for (int k = 0; k < 6; ++k) d[k] = load<V, FULL>(mp + (k * 6 + q) * mstride + cb, m);
      at6<V>(d, r);
#pragma GCC unroll 4
      for (int i = 0; i < 4; ++i) u[i * 6 + q] = r[i];
    }
    const vec b = o.bias ? load<V, FULL>(o.bias + cb, m) : V::zero();
#pragma GCC unroll 4
    for (int i = 0; i < 4; ++i) {
      vec r[4];
      at6<V>(u + i * 6, r);
#pragma GCC unroll 4
      for (int k = 0; k < 4; ++k) {
        float* yp = o.y[i * 4 + k];
        if (!yp) continue;
        vec val = V::add(r[k], b);
        if (o.res[i * 4 + k]) val = V::add(val, load<V, FULL>(o.res[i * 4 + k] + cb, m));
        store<V, FULL>(yp + cb, m, act<V>(val, o));
      }
    }
  });
}

// The grouped GEMMs of one Winograd point (wino_group_gemm_avx512f): R rows of one group's 16-column strip,
// their sums in registers over the group's cg inputs, each weight vector loaded once for all R rows.
template <class V, int R>
inline __attribute__((always_inline)) void group_strip(const float* v, int64_t ldv, const float* w,
                                                       int64_t ldw, int64_t cg, float* m, int64_t ldm) {
  constexpr int W = V::kWidth, S = 16 / W;
  typename V::vec acc[R][S];
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 2
    for (int s = 0; s < S; ++s) acc[r][s] = V::zero();
  for (int64_t k = 0; k < cg; ++k) {
    typename V::vec wv[S];
#pragma GCC unroll 2
    for (int s = 0; s < S; ++s) wv[s] = V::load(w + k * ldw + s * W);
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      const typename V::vec x = V::set1(v[r * ldv + k]);
#pragma GCC unroll 2
      for (int s = 0; s < S; ++s) acc[r][s] = V::fma(x, wv[s], acc[r][s]);
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 2
    for (int s = 0; s < S; ++s) V::store(m + r * ldm + s * W, acc[r][s]);
}

template <class V, int R>
void group_gemm(const WinoGroupGemm& a) {
  for (int64_t g = 0; g < a.ng; ++g)
    for (int64_t j = 0; j < a.og; j += 16) {
      const float* v = a.v + g * a.cg;
      const float* w = a.w + g * a.wstep + j;
      float* m = a.m + g * a.og + j;
      // the rows in near-equal strips of at most R (a table of the kernels for 1..R rows): 16 tiles as 8 + 8,
      // not 12 + 4, whose 4-row strip loads a weight vector per 4 FMAs
      using Fn = void (*)(const float*, int64_t, const float*, int64_t, int64_t, float*, int64_t);
      static constexpr auto kStrip = []<int... I>(std::integer_sequence<int, I...>) {
        return std::array<Fn, sizeof...(I)>{
            [](const float* v, int64_t ldv, const float* w, int64_t ldw, int64_t cg, float* m, int64_t ldm) {
              group_strip<V, I + 1>(v, ldv, w, ldw, cg, m, ldm);
            }...};
      }
      (std::make_integer_sequence<int, R>{});
      const int64_t n = (a.rows + R - 1) / R;
      for (int64_t q = 0; q < n; ++q) {
        const int64_t r0 = q * a.rows / n, r1 = (q + 1) * a.rows / n;
        kStrip[size_t(r1 - r0 - 1)](v + r0 * a.ldv, a.ldv, w, a.ldw, a.cg, m + r0 * a.ldm, a.ldm);
      }
    }
}

}  // namespace tessera::kernels::x86::wino
