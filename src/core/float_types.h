// Storage types for the narrow floating-point and integer formats, and their
// exact conversions to and from f32.
//
// Every narrow float is encoded by one generic routine (MiniFloat below): the
// value is rounded to nearest-even in exact double arithmetic, so the results
// are the IEEE / OCP ones bit for bit. Overflow follows the format:
//   - formats with an infinity (f16, e5m2) round to +-inf unless saturating;
//   - formats without one (e4m3fn, the fnuz pair) give NaN unless saturating;
//   - saturate clamps to +-max finite first (this is ONNX Cast's saturate=1,
//     which also maps +-inf to +-max, as onnx's own reference does).
#pragma once

#include <bit>
#include <complex>
#include <cstdint>
#include <cstring>

namespace tessera {

struct MiniFloatFormat {
  int exp_bits;
  int man_bits;
  int bias;
  bool has_inf;       // all-ones exponent with zero mantissa is infinity (IEEE style)
  bool ieee_nan;      // all-ones exponent is inf/NaN (IEEE style); else see nan_code
  bool fnuz;          // no negative zero; 0x80 is the only NaN
  bool has_nan;       // false for e2m1 (no NaN at all)
  uint32_t nan_code;  // canonical NaN bit pattern (positive)
};

// Encode a float into a format of at most 16 bits. `saturate` clamps to the
// largest finite value before rounding.
uint32_t minifloat_encode(const MiniFloatFormat& f, float x, bool saturate);
float minifloat_decode(const MiniFloatFormat& f, uint32_t bits);

inline constexpr MiniFloatFormat kF16Format{5, 10, 15, true, true, false, true, 0x7E00};
inline constexpr MiniFloatFormat kE4M3FNFormat{4, 3, 7, false, false, false, true, 0x7F};
inline constexpr MiniFloatFormat kE4M3FNUZFormat{4, 3, 8, false, false, true, true, 0x80};
inline constexpr MiniFloatFormat kE5M2Format{5, 2, 15, true, true, false, true, 0x7E};
inline constexpr MiniFloatFormat kE5M2FNUZFormat{5, 2, 16, false, false, true, true, 0x80};
inline constexpr MiniFloatFormat kE2M1Format{2, 1, 1, false, false, false, false, 0};

float f16_bits_to_f32(uint16_t h);  // table lookup
uint16_t f32_to_f16_bits(float x);  // round to nearest even, overflow -> inf

inline float bf16_bits_to_f32(uint16_t b) { return std::bit_cast<float>(uint32_t(b) << 16); }
inline uint16_t f32_to_bf16_bits(float x) {
  uint32_t u = std::bit_cast<uint32_t>(x);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return uint16_t((u >> 16) | 0x0040u);  // quiet NaN
  u += 0x7FFFu + ((u >> 16) & 1u);
  return uint16_t(u >> 16);
}

// Each storage type is a trivially copyable struct holding its bits, so that
// templates can tell them apart from the integers of the same width.
template <const MiniFloatFormat& F, typename Bits>
struct MiniFloat {
  Bits bits = 0;
  MiniFloat() = default;
  static MiniFloat from_bits(Bits b) {
    MiniFloat m;
    m.bits = b;
    return m;
  }
  static MiniFloat from_float(float x, bool saturate) {
    return from_bits(Bits(minifloat_encode(F, x, saturate)));
  }
  explicit MiniFloat(float x) : bits(Bits(minifloat_encode(F, x, false))) {}
  explicit operator float() const { return minifloat_decode(F, bits); }
  float to_float() const { return minifloat_decode(F, bits); }
};

struct Float16 {
  uint16_t bits = 0;
  Float16() = default;
  explicit Float16(float x) : bits(f32_to_f16_bits(x)) {}
  static Float16 from_bits(uint16_t b) {
    Float16 h;
    h.bits = b;
    return h;
  }
  static Float16 from_float(float x, bool /*saturate*/) { return Float16(x); }
  explicit operator float() const { return f16_bits_to_f32(bits); }
  float to_float() const { return f16_bits_to_f32(bits); }
};

struct BFloat16 {
  uint16_t bits = 0;
  BFloat16() = default;
  explicit BFloat16(float x) : bits(f32_to_bf16_bits(x)) {}
  static BFloat16 from_bits(uint16_t b) {
    BFloat16 h;
    h.bits = b;
    return h;
  }
  static BFloat16 from_float(float x, bool /*saturate*/) { return BFloat16(x); }
  explicit operator float() const { return bf16_bits_to_f32(bits); }
  float to_float() const { return bf16_bits_to_f32(bits); }
};

using Float8E4M3FN = MiniFloat<kE4M3FNFormat, uint8_t>;
using Float8E4M3FNUZ = MiniFloat<kE4M3FNUZFormat, uint8_t>;
using Float8E5M2 = MiniFloat<kE5M2Format, uint8_t>;
using Float8E5M2FNUZ = MiniFloat<kE5M2FNUZFormat, uint8_t>;
using Float4E2M1 = MiniFloat<kE2M1Format, uint8_t>;

// E8M0: an exponent alone (OCP microscaling scale), value 2^(bits-127), 0xFF NaN.
enum class E8M0Rounding { up, down, nearest };
struct Float8E8M0 {
  uint8_t bits = 127;
  Float8E8M0() = default;
  explicit Float8E8M0(float x) : bits(encode(x, false, E8M0Rounding::up)) {}
  static Float8E8M0 from_bits(uint8_t b) {
    Float8E8M0 e;
    e.bits = b;
    return e;
  }
  static uint8_t encode(float x, bool saturate, E8M0Rounding mode);
  static Float8E8M0 from_float(float x, bool saturate) {
    return from_bits(encode(x, saturate, E8M0Rounding::up));
  }
  explicit operator float() const { return to_float(); }
  float to_float() const;
};

// Sub-byte integers, held one per byte. Construction wraps like a C cast
// (two's complement truncation); saturating conversion lives in the Cast kernel.
template <bool Signed, int Bits>
struct SubByteInt {
  int8_t value = 0;
  SubByteInt() = default;
  static constexpr int kMin = Signed ? -(1 << (Bits - 1)) : 0;
  static constexpr int kMax = Signed ? (1 << (Bits - 1)) - 1 : (1 << Bits) - 1;
  explicit SubByteInt(int64_t v) : value(wrap(v)) {}
  static int8_t wrap(int64_t v) {
    int64_t m = v & ((1 << Bits) - 1);
    if (Signed && m > kMax) m -= (1 << Bits);
    return int8_t(m);
  }
  explicit operator int() const { return value; }
  float to_float() const { return float(value); }
};
using Int4 = SubByteInt<true, 4>;
using UInt4 = SubByteInt<false, 4>;
using Int2 = SubByteInt<true, 2>;
using UInt2 = SubByteInt<false, 2>;

using Complex64 = std::complex<float>;
using Complex128 = std::complex<double>;

template <typename T>
inline constexpr bool kIsNarrowFloat = false;
template <const MiniFloatFormat& F, typename B>
inline constexpr bool kIsNarrowFloat<MiniFloat<F, B>> = true;
template <>
inline constexpr bool kIsNarrowFloat<Float16> = true;
template <>
inline constexpr bool kIsNarrowFloat<BFloat16> = true;
template <>
inline constexpr bool kIsNarrowFloat<Float8E8M0> = true;

template <typename T>
inline constexpr bool kIsSubByteInt = false;
template <bool S, int B>
inline constexpr bool kIsSubByteInt<SubByteInt<S, B>> = true;

}  // namespace tessera
