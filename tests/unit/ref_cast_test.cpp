// Reference Cast / CastLike kernels.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "kernels/ref/cast.h"
#include "tests/unit/kernel_harness.h"

namespace tessera::kernels::ref {
namespace {

using testing::attr_i;
using testing::attr_s;
using testing::run_ref;

Tensor cast(const Tensor& x, int64_t onnx_to, AttrMap attrs = {}) {
  attrs["to"] = attr_i(onnx_to);
  return run_ref("Cast", {x}, attrs)[0].tensor;
}
template <typename T>
std::vector<T> vals(const Tensor& t) {
  return std::vector<T>(t.data<T>(), t.data<T>() + t.numel());
}

constexpr int64_t kFLOAT = 1, kUINT8 = 2, kINT8 = 3, kINT32 = 6, kINT64 = 7, kSTRING = 8, kBOOL = 9, kFLOAT16 = 10,
                  kDOUBLE = 11, kUINT64 = 13, kBFLOAT16 = 16, kE4M3FN = 17, kE4M3FNUZ = 18, kE5M2 = 19, kUINT4 = 21,
                  kINT4 = 22, kE2M1 = 23, kE8M0 = 24, kUINT2 = 25;

TEST(RefCast, FloatToIntegersTruncatesAndIntegersWrap) {
  const Tensor x = Tensor::from_vector<float>({-2.7f, -0.5f, 0.f, 0.9f, 3.99f});
  EXPECT_EQ(vals<int32_t>(cast(x, kINT32)), (std::vector<int32_t>{-2, 0, 0, 0, 3}));
  EXPECT_EQ(vals<int64_t>(cast(x, kINT64)), (std::vector<int64_t>{-2, 0, 0, 0, 3}));
  const Tensor i = Tensor::from_vector<int32_t>({200, -129, 255, 256});
  EXPECT_EQ(vals<int8_t>(cast(i, kINT8)), (std::vector<int8_t>{-56, 127, -1, 0}));
  EXPECT_EQ(vals<uint8_t>(cast(i, kUINT8)), (std::vector<uint8_t>{200, 127, 255, 0}));
  const Tensor big = Tensor::from_vector<int64_t>({(int64_t(1) << 53) + 1, -1});
  EXPECT_EQ(vals<uint64_t>(cast(big, kUINT64)), (std::vector<uint64_t>{(uint64_t(1) << 53) + 1, ~uint64_t(0)}));
}

TEST(RefCast, FloatWidthsRoundToNearestEven) {
  std::mt19937 rng(5);
  std::normal_distribution<float> d(0, 100);
  Tensor x(DType::f32, {64});
  for (int i = 0; i < 64; ++i) x.data<float>()[i] = d(rng);
  const Tensor h = cast(x, kFLOAT16), b = cast(x, kBFLOAT16), f64 = cast(x, kDOUBLE);
  for (int i = 0; i < 64; ++i) {
    const float v = x.data<float>()[i];
    EXPECT_EQ(h.data<Float16>()[i].bits, Float16(v).bits);
    EXPECT_EQ(b.data<BFloat16>()[i].bits, BFloat16(v).bits);
    EXPECT_EQ(f64.data<double>()[i], double(v));
    EXPECT_LE(std::fabs(h.data<Float16>()[i].to_float() - v), std::fabs(v) * 0x1p-11f + 1e-7f);
    EXPECT_LE(std::fabs(b.data<BFloat16>()[i].to_float() - v), std::fabs(v) * 0x1p-8f);
  }
  // back to f32 is exact
  const Tensor back = run_ref("Cast", {h}, {{"to", attr_i(kFLOAT)}})[0].tensor;
  for (int i = 0; i < 64; ++i) EXPECT_EQ(back.data<float>()[i], h.data<Float16>()[i].to_float());
  const Tensor dd = Tensor::from_vector<double>({1e300, -1e300, 0.1});
  const Tensor df = cast(dd, kFLOAT);
  EXPECT_TRUE(std::isinf(df.data<float>()[0]));
  EXPECT_EQ(df.data<float>()[2], 0.1f);
}

TEST(RefCast, Float8SaturateAttribute) {
  const Tensor x = Tensor::from_vector<float>({1000.f, -1000.f, INFINITY, NAN, 1.0625f, 0.f});
  const Tensor s = cast(x, kE4M3FN);
  EXPECT_EQ(s.data<Float8E4M3FN>()[0].to_float(), 448.f);
  EXPECT_EQ(s.data<Float8E4M3FN>()[1].to_float(), -448.f);
  EXPECT_EQ(s.data<Float8E4M3FN>()[2].to_float(), 448.f);
  EXPECT_TRUE(std::isnan(s.data<Float8E4M3FN>()[3].to_float()));
  EXPECT_EQ(s.data<Float8E4M3FN>()[4].to_float(), 1.0f);  // tie to even
  const Tensor n = cast(x, kE4M3FN, {{"saturate", attr_i(0)}});
  EXPECT_TRUE(std::isnan(n.data<Float8E4M3FN>()[0].to_float()));
  EXPECT_TRUE(std::isnan(n.data<Float8E4M3FN>()[2].to_float()));
  const Tensor e5 = cast(Tensor::from_vector<float>({1e6f}), kE5M2, {{"saturate", attr_i(0)}});
  EXPECT_TRUE(std::isinf(e5.data<Float8E5M2>()[0].to_float()));
  EXPECT_EQ(cast(Tensor::from_vector<float>({1e6f}), kE5M2).data<Float8E5M2>()[0].to_float(), 57344.f);
  EXPECT_EQ(cast(x, kE5M2).data<Float8E5M2>()[0].to_float(), 1024.f);
  const Tensor uz = cast(Tensor::from_vector<float>({-0.f}), kE4M3FNUZ);
  EXPECT_EQ(uz.data<Float8E4M3FNUZ>()[0].bits, 0);
  const Tensor f4 = cast(Tensor::from_vector<float>({7.f, -0.25f, 2.5f, 100.f}), kE2M1);
  EXPECT_EQ(f4.data<Float4E2M1>()[0].to_float(), 6.f);
  EXPECT_EQ(f4.data<Float4E2M1>()[2].to_float(), 2.f);
  EXPECT_EQ(f4.data<Float4E2M1>()[3].to_float(), 6.f);
  EXPECT_EQ(cast(Tensor::from_vector<float>({NAN}), kE2M1).data<Float4E2M1>()[0].bits, 0x8);  // -0, as onnx
}

TEST(RefCast, SubByteIntegersWrap) {
  const Tensor x = Tensor::from_vector<float>({-9, -8, 7, 8, 9, 15});
  const Tensor i4 = cast(x, kINT4);
  std::vector<int> got;
  for (int64_t i = 0; i < 6; ++i) got.push_back(i4.data<Int4>()[i].value);
  EXPECT_EQ(got, (std::vector<int>{7, -8, 7, -8, -7, -1}));
  const Tensor u4 = cast(x, kUINT4);
  EXPECT_EQ(u4.data<UInt4>()[0].value, 7);
  EXPECT_EQ(u4.data<UInt4>()[5].value, 15);
  const Tensor u2 = cast(Tensor::from_vector<float>({-3, -1, 3}), kUINT2);
  EXPECT_EQ(u2.data<UInt2>()[0].value, 1);
  EXPECT_EQ(u2.data<UInt2>()[1].value, 3);
  const Tensor back = cast(i4, kINT8);
  EXPECT_EQ(vals<int8_t>(back), (std::vector<int8_t>{7, -8, 7, -8, -7, -1}));
}

TEST(RefCast, E8M0RoundModes) {
  const Tensor x = Tensor::from_vector<float>({0.f, 0.124f, 1.1f, 1.6f, 8.f});
  auto code = [&](const std::string& mode) {
    const Tensor y = cast(x, kE8M0, {{"round_mode", attr_s(mode)}});
    std::vector<float> v;
    for (int64_t i = 0; i < y.numel(); ++i) v.push_back(y.data<Float8E8M0>()[i].to_float());
    return v;
  };
  EXPECT_EQ(code("up"), (std::vector<float>{0x1p-127f, 0.125f, 2.f, 2.f, 8.f}));
  EXPECT_EQ(code("down"), (std::vector<float>{0x1p-127f, 0.0625f, 1.f, 1.f, 8.f}));
  EXPECT_EQ(code("nearest"), (std::vector<float>{0x1p-127f, 0.125f, 1.f, 2.f, 8.f}));
  EXPECT_THROW(code("sideways"), Error);
}

TEST(RefCast, StringsParseAndPrint) {
  const Tensor s = Tensor::from_vector<std::string>({"3.14", "1e-5", "1E8", "INF", "-inf", "NaN", "+INF", "100"});
  const Tensor f = cast(s, kFLOAT);
  EXPECT_EQ(f.data<float>()[0], 3.14f);
  EXPECT_EQ(f.data<float>()[1], 1e-5f);
  EXPECT_EQ(f.data<float>()[2], 1e8f);
  EXPECT_TRUE(std::isinf(f.data<float>()[3]) && f.data<float>()[3] > 0);
  EXPECT_TRUE(std::isinf(f.data<float>()[4]) && f.data<float>()[4] < 0);
  EXPECT_TRUE(std::isnan(f.data<float>()[5]));
  EXPECT_TRUE(std::isinf(f.data<float>()[6]));
  EXPECT_EQ(f.data<float>()[7], 100.f);
  EXPECT_EQ(vals<int64_t>(cast(Tensor::from_vector<std::string>({"9007199254740993", "-7", "100.5"}), kINT64)),
            (std::vector<int64_t>{9007199254740993, -7, 100}));
  const Tensor out = cast(Tensor::from_vector<float>({1.f, 0.1f, -2.5f, 1e-5f, INFINITY, NAN, 123456.f}), kSTRING);
  EXPECT_EQ(vals<std::string>(out),
            (std::vector<std::string>{"1.0", "0.1", "-2.5", "1e-05", "inf", "nan", "123456.0"}));
  EXPECT_EQ(vals<std::string>(cast(Tensor::from_vector<int32_t>({-12, 0}), kSTRING)),
            (std::vector<std::string>{"-12", "0"}));
  EXPECT_EQ(vals<std::string>(cast(Tensor::from_vector<double>({0.1}), kSTRING)), (std::vector<std::string>{"0.1"}));
}

TEST(RefCast, BoolAndCastLike) {
  const Tensor x = Tensor::from_vector<float>({0.f, -0.f, 2.f, NAN});
  EXPECT_EQ(vals<bool>(cast(x, kBOOL)), (std::vector<bool>{false, false, true, true}));
  EXPECT_EQ(vals<float>(cast(Tensor::from_vector<bool>({true, false}), kFLOAT)), (std::vector<float>{1.f, 0.f}));
  const Tensor like = run_ref("CastLike", {x, Tensor::from_vector<int64_t>({0})})[0].tensor;
  EXPECT_EQ(like.dtype(), DType::i64);
  EXPECT_EQ(like.shape(), x.shape());
  const Tensor f8 = run_ref("CastLike", {Tensor::from_vector<float>({1000.f}), Tensor(DType::f8e4m3fn, {1})},
                            {{"saturate", attr_i(0)}})[0].tensor;
  EXPECT_TRUE(std::isnan(f8.data<Float8E4M3FN>()[0].to_float()));
  EXPECT_THROW(cast(x, 999), Error);
  EXPECT_THROW(run_ref("Cast", {x}), Error);
  // empty and 0-d tensors
  EXPECT_EQ(cast(Tensor(DType::f32, {0, 3}), kINT8).shape(), (Shape{0, 3}));
  EXPECT_EQ(cast(Tensor::scalar(2.5), kINT32).data<int32_t>()[0], 2);
}

TEST(RefCast, BitCastKeepsBits) {
  const Tensor x = Tensor::from_vector<float>({1.f, -2.5f});
  const Tensor y = run_ref("BitCast", {x}, {{"to", attr_i(kINT32)}})[0].tensor;
  ASSERT_EQ(y.dtype(), DType::i32);
  EXPECT_EQ(y.data<int32_t>()[0], 0x3F800000);
  EXPECT_EQ(uint32_t(y.data<int32_t>()[1]), 0xC0200000u);
  const Tensor b = run_ref("BitCast", {Tensor::from_vector<uint8_t>({0, 7})}, {{"to", attr_i(kBOOL)}})[0].tensor;
  EXPECT_EQ(vals<bool>(b), (std::vector<bool>{false, true}));
  EXPECT_THROW(run_ref("BitCast", {x}, {{"to", attr_i(kINT64)}}), Error);
  EXPECT_THROW(run_ref("BitCast", {Tensor::from_vector<std::string>({"a"})}, {{"to", attr_i(kINT8)}}), Error);
}

}  // namespace
}  // namespace tessera::kernels::ref
