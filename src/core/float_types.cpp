#include "core/float_types.h"

#include <array>
#include <cfenv>
#include <cmath>
#include <limits>

namespace tessera {
namespace {

// Largest finite encoding (positive) of a format.
uint32_t max_finite_code(const MiniFloatFormat& f) {
  const uint32_t exp_all = (1u << f.exp_bits) - 1;
  const uint32_t man_all = (1u << f.man_bits) - 1;
  if (f.ieee_nan) return ((exp_all - 1) << f.man_bits) | man_all;  // f16, e5m2
  if (f.fnuz || !f.has_nan) return (exp_all << f.man_bits) | man_all;
  return (exp_all << f.man_bits) | (man_all - 1);  // e4m3fn: S.1111.111 is NaN
}

// Round |a| (finite, >= 0) to the format's grid, nearest-even; returns the
// unsigned code, which may exceed max_finite_code on overflow.
uint32_t round_to_code(const MiniFloatFormat& f, double a) {
  if (a == 0.0) return 0;
  const int emin = 1 - f.bias;
  int e;
  std::frexp(a, &e);  // a = m * 2^e, m in [0.5, 1)
  e -= 1;             // a = m' * 2^e, m' in [1, 2)
  if (e < emin) {
    // subnormal: count units of 2^(emin - man_bits); exact in double
    double q = std::nearbyint(std::ldexp(a, -(emin - f.man_bits)));
    return uint32_t(q);  // q == 2^man_bits is the smallest normal: encoding is continuous
  }
  double q = std::nearbyint(std::ldexp(a, -(e - f.man_bits)));  // in [2^M, 2^(M+1)]
  uint32_t qi = uint32_t(q);
  if (qi == (1u << (f.man_bits + 1))) {
    qi >>= 1;
    e += 1;
  }
  return (uint32_t(e + f.bias) << f.man_bits) | (qi - (1u << f.man_bits));
}

}  // namespace

uint32_t minifloat_encode(const MiniFloatFormat& f, float x, bool saturate) {
  const int total_bits = 1 + f.exp_bits + f.man_bits;
  const uint32_t sign_bit = 1u << (total_bits - 1);
  const uint32_t inf_code = ((1u << f.exp_bits) - 1) << f.man_bits;
  const bool neg = std::signbit(x);
  const auto with_sign = [&](uint32_t code) {
    if (f.fnuz && (code == 0 || code == f.nan_code)) return code;  // fnuz: no -0, 0x80 is the only NaN
    return neg ? (code | sign_bit) : code;
  };
  if (std::isnan(x)) return f.has_nan ? with_sign(f.nan_code) : max_finite_code(f);
  double a = std::fabs(double(x));
  const uint32_t maxc = max_finite_code(f);
  const double maxv = minifloat_decode(f, maxc);
  if (saturate || !f.has_nan) a = std::min(a, maxv);  // e2m1 has no NaN/inf: always clamps
  if (std::isinf(a)) return with_sign(f.has_inf ? inf_code : f.nan_code);
  // nearbyint rounds with the current mode; make sure it is to-nearest-even
  const int old_mode = std::fegetround();
  if (old_mode != FE_TONEAREST) std::fesetround(FE_TONEAREST);
  uint32_t code = round_to_code(f, a);
  if (old_mode != FE_TONEAREST) std::fesetround(old_mode);
  if (code > maxc) code = f.has_inf ? inf_code : f.nan_code;
  if (f.fnuz && code == 0) return 0;
  return with_sign(code);
}

float minifloat_decode(const MiniFloatFormat& f, uint32_t bits) {
  const int total_bits = 1 + f.exp_bits + f.man_bits;
  const uint32_t sign_bit = 1u << (total_bits - 1);
  const uint32_t exp_all = (1u << f.exp_bits) - 1;
  if (f.fnuz && bits == 0x80u) return std::numeric_limits<float>::quiet_NaN();
  const bool neg = (bits & sign_bit) != 0;
  const uint32_t e = (bits >> f.man_bits) & exp_all;
  const uint32_t m = bits & ((1u << f.man_bits) - 1);
  double v;
  if (f.ieee_nan && e == exp_all) {
    v = m == 0 ? std::numeric_limits<double>::infinity() : std::numeric_limits<double>::quiet_NaN();
  } else if (!f.ieee_nan && !f.fnuz && f.has_nan && e == exp_all && m == (1u << f.man_bits) - 1) {
    v = std::numeric_limits<double>::quiet_NaN();  // e4m3fn
  } else if (e == 0) {
    v = std::ldexp(double(m), 1 - f.bias - f.man_bits);
  } else {
    v = std::ldexp(double(m | (1u << f.man_bits)), int(e) - f.bias - f.man_bits);
  }
  return float(neg ? -v : v);
}

namespace {
struct F16Table {
  std::array<float, 65536> v;
  F16Table() {
    for (uint32_t i = 0; i < 65536; ++i) v[i] = minifloat_decode(kF16Format, i);
  }
};
}  // namespace

float f16_bits_to_f32(uint16_t h) {
  static const F16Table table;
  return table.v[h];
}

uint16_t f32_to_f16_bits(float x) {
  // Fast exact path (bit manipulation, round to nearest even).
  uint32_t u = std::bit_cast<uint32_t>(x);
  const uint32_t sign = (u >> 16) & 0x8000u;
  u &= 0x7FFFFFFFu;
  if (u > 0x7F800000u) return uint16_t(sign | 0x7E00u | ((u >> 13) & 0x3FFu));  // NaN keeps payload top
  if (u >= 0x477FF000u) return uint16_t(sign | 0x7C00u);                         // overflow -> inf
  if (u < 0x38800000u) {                                                          // subnormal or zero
    if (u < 0x33000000u) return uint16_t(sign);  // below half the smallest subnormal
    const uint32_t e = u >> 23;
    const uint32_t m = (u & 0x7FFFFFu) | 0x800000u;
    const uint32_t shift = 126 - e;  // 14 + (113 - e) ... maps to units of 2^-24
    uint32_t q = m >> shift;
    const uint32_t rem = m & ((1u << shift) - 1);
    const uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (q & 1u))) ++q;
    return uint16_t(sign | q);
  }
  uint32_t r = u - 0x38000000u;  // rebias exponent 127 -> 15
  r += 0xFFFu + ((r >> 13) & 1u);
  return uint16_t(sign | (r >> 13));
}

uint8_t Float8E8M0::encode(float x, bool saturate, E8M0Rounding mode) {
  if (std::isnan(x) || x < 0 || (std::isinf(x) && !saturate)) return 0xFF;
  if (std::isinf(x)) return 0xFE;
  if (x == 0) return 0;  // smallest value 2^-127 (no zero exists)
  const uint32_t u = std::bit_cast<uint32_t>(x);
  int e = int((u >> 23) & 0xFF);
  uint32_t m = u & 0x7FFFFFu;
  if (e == 0) {  // f32 subnormal
    return 0;
  }
  switch (mode) {
    case E8M0Rounding::up:
      if (m != 0) ++e;
      break;
    case E8M0Rounding::down:
      break;
    case E8M0Rounding::nearest:
      if (m >= 0x400000u) ++e;
      break;
  }
  if (e > 254) return saturate ? 0xFE : 0xFF;
  return uint8_t(e);
}

float Float8E8M0::to_float() const {
  if (bits == 0xFF) return std::numeric_limits<float>::quiet_NaN();
  return std::ldexp(1.0f, int(bits) - 127);
}

}  // namespace tessera
