// Exhaustive checks of the narrow-format conversions against their definitions.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "core/dtype.h"
#include "core/tensor.h"

using namespace tessera;

namespace {
// Value of an f16 bit pattern computed from the IEEE definition.
double f16_value(uint16_t h) {
  const int s = h >> 15, e = (h >> 10) & 31, m = h & 1023;
  double v;
  if (e == 31) v = m ? NAN : INFINITY;
  else if (e == 0) v = std::ldexp(m, -24);
  else v = std::ldexp(1024 + m, e - 25);
  return s ? -v : v;
}
}  // namespace

TEST(DType, F16DecodeExhaustive) {
  for (uint32_t b = 0; b < 65536; ++b) {
    const float f = Float16::from_bits(uint16_t(b)).to_float();
    const double want = f16_value(uint16_t(b));
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(f));
    } else {
      EXPECT_EQ(double(f), want) << b;
    }
  }
}

TEST(DType, F16RoundTripExhaustive) {
  for (uint32_t b = 0; b < 65536; ++b) {
    const float f = Float16::from_bits(uint16_t(b)).to_float();
    if (std::isnan(f)) continue;
    EXPECT_EQ(Float16(f).bits, b);
    // generic encoder agrees with the fast path
    EXPECT_EQ(minifloat_encode(kF16Format, f, false), b);
  }
}

TEST(DType, F16RoundsToNearestEvenBetweenNeighbours) {
  // Midpoints between consecutive finite f16 values round to the even one.
  for (uint32_t b = 0; b < 0x7BFF; ++b) {
    const double lo = f16_value(uint16_t(b)), hi = f16_value(uint16_t(b + 1));
    const float mid = float((lo + hi) / 2);  // exact in f32
    const uint16_t want = (b & 1) ? uint16_t(b + 1) : uint16_t(b);
    ASSERT_EQ(Float16(mid).bits, want) << b;
    ASSERT_EQ(Float16(-mid).bits, want | 0x8000) << b;
  }
  EXPECT_EQ(Float16(65520.f).bits, 0x7C00);  // rounds up to inf
  EXPECT_EQ(Float16(65519.f).bits, 0x7BFF);
}

TEST(DType, BF16RoundTripExhaustive) {
  for (uint32_t b = 0; b < 65536; ++b) {
    const float f = BFloat16::from_bits(uint16_t(b)).to_float();
    uint32_t u;
    std::memcpy(&u, &f, 4);
    EXPECT_EQ(u >> 16, b);
    if (!std::isnan(f)) {
      EXPECT_EQ(BFloat16(f).bits, b);
    }
  }
  EXPECT_EQ(BFloat16(1.00390625f).bits, 0x3F80);  // tie -> even
  EXPECT_EQ(BFloat16(1.01171875f).bits, 0x3F82);
}

template <typename T>
void check_f8_roundtrip(int nan_count) {
  int nans = 0;
  for (uint32_t b = 0; b < 256; ++b) {
    const float f = T::from_bits(uint8_t(b)).to_float();
    if (std::isnan(f)) {
      ++nans;
      continue;
    }
    if (f == 0 && b != 0 && T::from_float(f, false).bits != b) continue;  // -0 in fnuz does not exist
    EXPECT_EQ(T::from_float(f, false).bits, b) << b;
    if (!std::isinf(f)) EXPECT_EQ(T::from_float(f, true).bits, b) << b;  // saturate maps inf to max
  }
  EXPECT_EQ(nans, nan_count);
}

TEST(DType, F8RoundTripExhaustive) {
  check_f8_roundtrip<Float8E4M3FN>(2);
  check_f8_roundtrip<Float8E4M3FNUZ>(1);
  check_f8_roundtrip<Float8E5M2>(6);
  check_f8_roundtrip<Float8E5M2FNUZ>(1);
}

TEST(DType, F8Saturation) {
  // values match ml_dtypes / onnx reference
  EXPECT_EQ(Float8E4M3FN::from_float(INFINITY, false).bits, 0x7F);   // NaN
  EXPECT_EQ(Float8E4M3FN::from_float(-INFINITY, false).bits, 0xFF);
  EXPECT_EQ(Float8E4M3FN::from_float(INFINITY, true).bits, 0x7E);    // 448
  EXPECT_EQ(Float8E4M3FN::from_float(1e9f, true).bits, 0x7E);
  EXPECT_EQ(Float8E4M3FNUZ::from_float(INFINITY, false).bits, 0x80);
  EXPECT_EQ(Float8E4M3FNUZ::from_float(-0.0f, false).bits, 0x00);
  EXPECT_EQ(Float8E5M2::from_float(INFINITY, false).bits, 0x7C);
  EXPECT_EQ(Float8E5M2::from_float(-INFINITY, false).bits, 0xFC);
  EXPECT_EQ(Float8E5M2::from_float(1e9f, false).bits, 0x7C);
  EXPECT_EQ(Float8E5M2::from_float(1e9f, true).bits, 0x7B);  // 57344
  EXPECT_EQ(Float8E5M2FNUZ::from_float(NAN, false).bits, 0x80);
  EXPECT_FLOAT_EQ(Float8E4M3FN::from_bits(0x7E).to_float(), 448.f);
  EXPECT_FLOAT_EQ(Float8E4M3FNUZ::from_bits(0x7F).to_float(), 240.f);
  EXPECT_FLOAT_EQ(Float8E5M2FNUZ::from_bits(0x7F).to_float(), 57344.f);
}

TEST(DType, F8RoundsToNearestEven) {
  // Every midpoint between neighbouring e4m3fn values rounds to the even code.
  for (uint32_t b = 0; b < 0x7E; ++b) {
    const double lo = Float8E4M3FN::from_bits(uint8_t(b)).to_float();
    const double hi = Float8E4M3FN::from_bits(uint8_t(b + 1)).to_float();
    const uint8_t want = (b & 1) ? uint8_t(b + 1) : uint8_t(b);
    EXPECT_EQ(Float8E4M3FN::from_float(float((lo + hi) / 2), false).bits, want) << b;
  }
}

TEST(DType, SubByteIntegers) {
  EXPECT_EQ(Int4(7).value, 7);
  EXPECT_EQ(Int4(8).value, -8);
  EXPECT_EQ(Int4(-9).value, 7);
  EXPECT_EQ(UInt4(17).value, 1);
  EXPECT_EQ(dtype_size(DType::i4), 1u);
}

TEST(Tensor, RefusesAbsurdShapes) {
  EXPECT_THROW(Tensor(DType::f32, {int64_t(1) << 30, int64_t(1) << 30}), Error);
  EXPECT_THROW(Tensor(DType::f32, {-1}), Error);
  EXPECT_THROW(Tensor(DType::f32, {int64_t(1) << 36}), Error);
}

TEST(Tensor, CloneOfStridedView) {
  Tensor t(DType::f32, {2, 3});
  for (int i = 0; i < 6; ++i) t.data<float>()[i] = float(i);
  // transpose view: shape [3,2], strides [1,3]
  Tensor v = Tensor::view(DType::f32, {3, 2}, t.storage(), 0, {1, 3});
  EXPECT_FALSE(v.is_contiguous());
  Tensor c = v.clone();
  const float want[] = {0, 3, 1, 4, 2, 5};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(c.data<float>()[i], want[i]);
}
