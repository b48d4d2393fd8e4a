// Exhaustive checks of the narrow-format conversions against their definitions.
#include "core/dtype.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "core/tensor.h"

using namespace tessera;

namespace {
// Value of an f16 bit pattern computed from the IEEE definition.
double f16_value(uint16_t h) {
  const int s = h >> 15, e = (h >> 10) & 31, m = h & 1023;
  double v;
  if (e == 31)
    v = m ? NAN : INFINITY;
  else if (e == 0)
    v = std::ldexp(m, -24);
  else
    v = std::ldexp(1024 + m, e - 25);
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
  EXPECT_EQ(Float8E4M3FN::from_float(INFINITY, false).bits, 0x7F);  // NaN
  EXPECT_EQ(Float8E4M3FN::from_float(-INFINITY, false).bits, 0xFF);
  EXPECT_EQ(Float8E4M3FN::from_float(INFINITY, true).bits, 0x7E);  // 448
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

// Tensor::reshaped_view against reshaping a contiguous copy, element by element: views that split, merge
// and keep dims of sliced and transposed tensors, and the shapes it must refuse.
TEST(Tensor, ReshapedViewOfStridedViews) {
  Tensor base(DType::f32, {6, 4, 10});
  for (int64_t i = 0; i < base.numel(); ++i) base.data<float>()[i] = float(i) * 0.5f - 7.0f;
  auto same = [](const Tensor& v, const Tensor& want) {
    ASSERT_EQ(v.shape(), want.shape());
    const Tensor c = v.clone();
    for (int64_t i = 0; i < want.numel(); ++i) ASSERT_EQ(c.data<float>()[i], want.data<float>()[i]) << i;
  };
  // columns 3..9 of the last axis (ViT's q/k/v slice of the in-projection): [6, 4, 6], strides (40, 10, 1)
  const Tensor cols = Tensor::view(DType::f32, {6, 4, 6}, base.storage(), 3 * sizeof(float), {40, 10, 1});
  const Tensor cc = cols.clone();
  for (const Shape& s :
       {Shape{6, 4, 2, 3}, Shape{24, 6}, Shape{6, 4, 6, 1}, Shape{1, 6, 4, 3, 2}, Shape{2, 3, 4, 6}}) {
    const std::optional<Tensor> v = cols.reshaped_view(s);
    ASSERT_TRUE(v.has_value()) << shape_text(s);
    EXPECT_EQ(v->storage(), base.storage());
    same(*v, cc.reshape(s));
  }
  for (const Shape& s : {Shape{6, 24}, Shape{144}, Shape{6, 8, 3}})  // merges the sliced axis with its rows
    EXPECT_FALSE(cols.reshaped_view(s).has_value()) << shape_text(s);
  // a transposed view [10, 24] of [24, 10]: strides (1, 10)
  const Tensor tr = Tensor::view(DType::f32, {10, 24}, base.storage(), 0, {1, 10});
  const Tensor tc = tr.clone();
  for (const Shape& s : {Shape{10, 4, 6}, Shape{5, 2, 24}, Shape{10, 1, 24}}) {
    const std::optional<Tensor> v = tr.reshaped_view(s);
    ASSERT_TRUE(v.has_value()) << shape_text(s);
    same(*v, tc.reshape(s));
  }
  EXPECT_FALSE(tr.reshaped_view({240}).has_value());
  EXPECT_FALSE(tr.reshaped_view({24, 10}).has_value());
  EXPECT_THROW((void)tr.reshaped_view({7, 7}), Error);  // element count differs
  // contiguous input: the plain reshape
  same(*base.reshaped_view({24, 10}), base.reshape({24, 10}));
}
