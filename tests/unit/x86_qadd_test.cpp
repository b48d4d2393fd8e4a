// tessera.QLinearAdd's kernels (kernels/x86/quantize.h) against the three nodes they replace, computed here in
// scalar f32 with the division QuantizeLinear does: every pair of bytes (all 65536), so that the pairs whose
// quotient sits at a half-integer, where the AVX-512 loop's multiplication by the reciprocal would round the
// other way and it must divide instead, are all met; for each type pairing and several scales.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "core/thread_pool.h"
#include "kernels/x86/quantize.h"

namespace tessera::kernels::x86 {
namespace {

template <class C>
C expected(float a, float b, const QAddParams& p) {
  const float s = (a - p.za) * p.sa + (b - p.zb) * p.sb;
  float v = std::nearbyint(s / p.sc);
  v = v == v ? v + p.zc : p.zc;
  v = std::min(std::max(v, float(std::numeric_limits<C>::min())), float(std::numeric_limits<C>::max()));
  return C(int32_t(v));
}

template <class A, class B, class C>
void check_all_pairs(const QAddParams& p, ThreadPool* pool) {
  std::vector<A> a(65536 + 7);
  std::vector<B> b(a.size());
  for (size_t i = 0; i < a.size(); ++i) a[i] = A(uint8_t(i & 255)), b[i] = B(uint8_t((i >> 8) & 255));
  std::vector<C> c(a.size());
  qlinear_add_8bit(a.data(), std::is_signed_v<A>, b.data(), std::is_signed_v<B>, int64_t(a.size()), p, c.data(),
                   std::is_signed_v<C>, pool);
  int64_t bad = 0;
  for (size_t i = 0; i < a.size(); ++i)
    if (c[i] != expected<C>(float(a[i]), float(b[i]), p) && bad++ < 3)
      ADD_FAILURE() << "a " << int(a[i]) << " b " << int(b[i]) << " got " << int(c[i]) << " want "
                    << int(expected<C>(float(a[i]), float(b[i]), p)) << " sc " << p.sc;
  EXPECT_EQ(bad, 0);
}

TEST(X86QAdd, EveryBytePairMatchesTheUnfusedNodes) {
  ThreadPool pool(2);
  // scales as calibration writes them (arbitrary floats), one where the sum is often a half-integer of the
  // output step (sc = 2 sa = 2 sb), and one that saturates
  const QAddParams ps[] = {{0.0213f, 131.f, 0.0177f, 120.f, 0.0391f, 125.f},
                           {0.05f, 128.f, 0.05f, 128.f, 0.1f, 128.f},
                           {0.0073f, 3.f, 0.0311f, 0.f, 0.0409f, 0.f},
                           {0.5f, 0.f, 0.25f, 7.f, 0.003f, 10.f}};
  for (const QAddParams& p : ps) {
    check_all_pairs<uint8_t, uint8_t, uint8_t>(p, &pool);
    check_all_pairs<uint8_t, int8_t, int8_t>(p, nullptr);
    check_all_pairs<int8_t, int8_t, uint8_t>(p, &pool);
    check_all_pairs<int8_t, uint8_t, int8_t>(p, nullptr);
  }
}

}  // namespace
}  // namespace tessera::kernels::x86
