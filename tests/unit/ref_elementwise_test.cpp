// Reference elementwise kernels and the broadcasting helper.
#include <gtest/gtest.h>

#include "kernels/ref/broadcast.h"

namespace tessera::kernels::ref {
namespace {

TEST(RefBroadcast, Shapes) {
  EXPECT_EQ(broadcast_shape(Shape{2, 3}, Shape{3}), (Shape{2, 3}));
  EXPECT_EQ(broadcast_shape(Shape{}, Shape{4, 1}), (Shape{4, 1}));
  EXPECT_EQ(broadcast_shape(Shape{0, 1}, Shape{1, 5}), (Shape{0, 5}));
  EXPECT_EQ(broadcast_shape(Shape{2, 1, 3}, Shape{4, 1}), (Shape{2, 4, 3}));
  EXPECT_THROW(broadcast_shape(Shape{2, 3}, Shape{4}), Error);
  EXPECT_THROW(broadcast_shape(Shape{0}, Shape{2}), Error);
}

TEST(RefBroadcast, IndexerMatchesCoordinates) {
  const Shape a{2, 1, 3}, b{4, 1}, out{2, 4, 3};
  BroadcastIndexer ix(out, {a, b});
  std::vector<std::pair<int64_t, int64_t>> got;
  ix.for_each([&](int64_t o, const int64_t* in) {
    EXPECT_EQ(o, int64_t(got.size()));
    got.push_back({in[0], in[1]});
  });
  ASSERT_EQ(got.size(), 24u);
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 4; ++j)
      for (int64_t k = 0; k < 3; ++k) {
        const auto& g = got[size_t((i * 4 + j) * 3 + k)];
        EXPECT_EQ(g.first, i * 3 + k);
        EXPECT_EQ(g.second, j);
      }
}

TEST(RefBroadcast, ScalarAndEmpty) {
  int calls = 0;
  BroadcastIndexer({}, {Shape{}, Shape{}}).for_each([&](int64_t o, const int64_t* in) {
    EXPECT_EQ(o, 0);
    EXPECT_EQ(in[0], 0);
    ++calls;
  });
  EXPECT_EQ(calls, 1);
  BroadcastIndexer(Shape{0, 3}, {Shape{0, 1}, Shape{3}}).for_each([&](int64_t, const int64_t*) { ++calls; });
  EXPECT_EQ(calls, 1);
}

}  // namespace
}  // namespace tessera::kernels::ref

// ------------------------------------------------------------ kernels
#include <cmath>
#include <functional>
#include <random>

#include "tests/unit/kernel_harness.h"

namespace tessera::kernels::ref {
namespace {

using testing::attr_f;
using testing::attr_i;
using testing::attr_s;
using testing::run_ref;

Tensor random_f32(const Shape& s, float lo, float hi, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  Tensor t(DType::f32, s);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = d(rng);
  return t;
}
template <typename T>
Tensor random_int(const Shape& s, int64_t lo, int64_t hi, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int64_t> d(lo, hi);
  Tensor t(kDTypeOf<T>, s);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<T>()[i] = T(d(rng));
  return t;
}

// Coordinates of output element o, mapped into an input of shape `in` (broadcast).
int64_t bcast_offset(int64_t o, const Shape& out, const Shape& in) {
  std::vector<int64_t> coord(out.size());
  for (size_t d = out.size(); d-- > 0;) {
    coord[d] = o % out[d];
    o /= out[d];
  }
  int64_t off = 0;
  const size_t shift = out.size() - in.size();
  for (size_t d = 0; d < in.size(); ++d) off = off * in[d] + (in[d] == 1 ? 0 : coord[d + shift]);
  return off;
}

struct UnaryCase {
  const char* op;
  std::function<double(double)> f;
  float lo, hi;
};

TEST(RefElementwise, UnaryFloatOpsMatchDouble) {
  const double pi = 3.14159265358979323846;
  const std::vector<UnaryCase> cases = {
      {"Abs", [](double x) { return std::fabs(x); }, -5, 5},
      {"Neg", [](double x) { return -x; }, -5, 5},
      {"Floor", [](double x) { return std::floor(x); }, -5, 5},
      {"Ceil", [](double x) { return std::ceil(x); }, -5, 5},
      {"Sqrt", [](double x) { return std::sqrt(x); }, 0, 9},
      {"Reciprocal", [](double x) { return 1 / x; }, 0.5, 4},
      {"Exp", [](double x) { return std::exp(x); }, -4, 4},
      {"Log", [](double x) { return std::log(x); }, 0.1, 10},
      {"Sin", [](double x) { return std::sin(x); }, -4, 4},
      {"Cos", [](double x) { return std::cos(x); }, -4, 4},
      {"Tan", [](double x) { return std::tan(x); }, -1, 1},
      {"Asin", [](double x) { return std::asin(x); }, -1, 1},
      {"Acos", [](double x) { return std::acos(x); }, -1, 1},
      {"Atan", [](double x) { return std::atan(x); }, -4, 4},
      {"Sinh", [](double x) { return std::sinh(x); }, -3, 3},
      {"Cosh", [](double x) { return std::cosh(x); }, -3, 3},
      {"Asinh", [](double x) { return std::asinh(x); }, -3, 3},
      {"Acosh", [](double x) { return std::acosh(x); }, 1, 5},
      {"Atanh", [](double x) { return std::atanh(x); }, -0.9, 0.9},
      {"Erf", [](double x) { return std::erf(x); }, -3, 3},
      {"Sign", [](double x) { return x > 0 ? 1.0 : x < 0 ? -1.0 : 0.0; }, -3, 3},
      {"Relu", [](double x) { return x > 0 ? x : 0; }, -3, 3},
      {"Sigmoid", [](double x) { return 1 / (1 + std::exp(-x)); }, -20, 20},
      {"Tanh", [](double x) { return std::tanh(x); }, -5, 5},
      {"Softplus", [](double x) { return std::log(1 + std::exp(x)); }, -20, 20},
      {"Softsign", [](double x) { return x / (1 + std::fabs(x)); }, -5, 5},
      {"HardSwish", [](double x) { return x * std::max(0.0, std::min(1.0, x / 6 + 0.5)); }, -5, 5},
      {"Mish", [](double x) { return x * std::tanh(std::log(1 + std::exp(x))); }, -5, 5},
      {"Elu", [](double x) { return x < 0 ? std::exp(x) - 1 : x; }, -5, 5},
      {"Selu", [](double x) {
         return 1.05070102214813232421875 * (x <= 0 ? 1.67326319217681884765625 * (std::exp(x) - 1) : x);
       }, -5, 5},
      {"Gelu", [](double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }, -5, 5},
      {"LeakyRelu", [](double x) { return x < 0 ? double(0.01f) * x : x; }, -5, 5},
      {"HardSigmoid", [](double x) { return std::max(0.0, std::min(1.0, double(0.2f) * x + 0.5)); }, -5, 5},
      {"Celu", [](double x) { return std::max(0.0, x) + std::min(0.0, std::exp(x) - 1); }, -5, 5},
      {"Swish", [](double x) { return x / (1 + std::exp(-x)); }, -5, 5},
      {"ThresholdedRelu", [](double x) { return x > 1 ? x : 0; }, -5, 5},
  };
  (void)pi;
  uint32_t seed = 1;
  for (const auto& c : cases) {
    const Tensor x = random_f32({3, 7}, c.lo, c.hi, seed++);
    const Tensor y = run_ref(c.op, {x})[0].tensor;
    ASSERT_EQ(y.dtype(), DType::f32) << c.op;
    ASSERT_EQ(y.shape(), x.shape()) << c.op;
    for (int64_t i = 0; i < x.numel(); ++i) {
      const double want = c.f(double(x.data<float>()[i]));
      EXPECT_NEAR(y.data<float>()[i], want, 2e-6 * std::max(1.0, std::fabs(want))) << c.op << " x=" << x.data<float>()[i];
    }
    // f64 path: nearly exact
    Tensor xd(DType::f64, x.shape());
    for (int64_t i = 0; i < x.numel(); ++i) xd.data<double>()[i] = x.data<float>()[i];
    const Tensor yd = run_ref(c.op, {xd})[0].tensor;
    for (int64_t i = 0; i < x.numel(); ++i) {
      const double want = c.f(xd.data<double>()[i]);
      EXPECT_NEAR(yd.data<double>()[i], want, 1e-12 * std::max(1.0, std::fabs(want))) << c.op;
    }
    // f16 path: within f16 rounding
    Tensor xh(DType::f16, x.shape());
    for (int64_t i = 0; i < x.numel(); ++i) xh.data<Float16>()[i] = Float16(x.data<float>()[i]);
    const Tensor yh = run_ref(c.op, {xh})[0].tensor;
    ASSERT_EQ(yh.dtype(), DType::f16);
    for (int64_t i = 0; i < x.numel(); ++i) {
      const double want = c.f(double(xh.data<Float16>()[i].to_float()));
      EXPECT_NEAR(yh.data<Float16>()[i].to_float(), want, 1e-3 * std::max(1.0, std::fabs(want))) << c.op;
    }
  }
}

TEST(RefElementwise, RoundIsHalfToEvenAndNaNPropagates) {
  const Tensor x = Tensor::from_vector<float>({0.5f, 1.5f, 2.5f, -0.5f, -1.5f, 2.4f, NAN});
  const Tensor y = run_ref("Round", {x})[0].tensor;
  const std::vector<float> want = {0, 2, 2, -0.0f, -2, 2};
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(y.data<float>()[i], want[i]);
  EXPECT_TRUE(std::isnan(y.data<float>()[6]));
  for (const char* op : {"Relu", "Abs", "Sigmoid", "Exp", "Sign"})
    EXPECT_TRUE(std::isnan(run_ref(op, {Tensor::from_vector<float>({NAN})})[0].tensor.data<float>()[0])) << op;
}

TEST(RefElementwise, IsInfIsNaN) {
  const Tensor x = Tensor::from_vector<float>({1.f, INFINITY, -INFINITY, NAN});
  auto get = [](const Tensor& t) { return std::vector<bool>(t.data<bool>(), t.data<bool>() + t.numel()); };
  EXPECT_EQ(get(run_ref("IsNaN", {x})[0].tensor), (std::vector<bool>{false, false, false, true}));
  EXPECT_EQ(get(run_ref("IsInf", {x})[0].tensor), (std::vector<bool>{false, true, true, false}));
  EXPECT_EQ(get(run_ref("IsInf", {x}, {{"detect_negative", attr_i(0)}})[0].tensor),
            (std::vector<bool>{false, true, false, false}));
  EXPECT_EQ(get(run_ref("IsInf", {x}, {{"detect_positive", attr_i(0)}})[0].tensor),
            (std::vector<bool>{false, false, true, false}));
}

struct BinaryCase {
  const char* op;
  std::function<double(double, double)> f;
};

TEST(RefElementwise, BinaryFloatBroadcasting) {
  const std::vector<BinaryCase> cases = {
      {"Add", [](double a, double b) { return a + b; }},
      {"Sub", [](double a, double b) { return a - b; }},
      {"Mul", [](double a, double b) { return a * b; }},
      {"Div", [](double a, double b) { return a / b; }},
      {"Pow", [](double a, double b) { return std::pow(a, b); }},
      {"Max", [](double a, double b) { return std::max(a, b); }},
      {"Min", [](double a, double b) { return std::min(a, b); }},
      {"Sum", [](double a, double b) { return a + b; }},
      {"Mean", [](double a, double b) { return (a + b) / 2; }},
      {"Mod", [](double a, double b) { return std::fmod(a, b); }},
  };
  const std::vector<std::pair<Shape, Shape>> shapes = {
      {{2, 3, 4}, {2, 3, 4}}, {{2, 3, 4}, {4}}, {{2, 1, 4}, {3, 1}}, {{}, {5}}, {{3, 1}, {}},
      {{0, 4}, {1, 4}},       {{1}, {2, 0}},    {{5, 1, 1, 2}, {1, 3, 1}}};
  uint32_t seed = 100;
  for (const auto& c : cases)
    for (const auto& [sa, sb] : shapes) {
      const Tensor a = random_f32(sa, 0.5f, 3.f, seed++);
      const Tensor b = random_f32(sb, 0.5f, 3.f, seed++);
      AttrMap attrs;
      if (std::string(c.op) == "Mod") attrs["fmod"] = attr_i(1);
      const Tensor y = run_ref(c.op, {a, b}, attrs)[0].tensor;
      const Shape out = broadcast_shape(sa, sb);
      ASSERT_EQ(y.shape(), out) << c.op;
      for (int64_t o = 0; o < y.numel(); ++o) {
        const double want = c.f(a.data<float>()[bcast_offset(o, out, sa)], b.data<float>()[bcast_offset(o, out, sb)]);
        EXPECT_NEAR(y.data<float>()[o], want, 1e-6 * std::max(1.0, std::fabs(want))) << c.op;
      }
    }
  EXPECT_THROW(run_ref("Add", {random_f32({2, 3}, 0, 1, 1), random_f32({4}, 0, 1, 2)}), Error);
  EXPECT_THROW(run_ref("Add", {random_f32({2}, 0, 1, 1), random_int<int32_t>({2}, 0, 1, 2)}), Error);
}

TEST(RefElementwise, IntegerArithmeticWrapsAndTruncates) {
  const Tensor a = Tensor::from_vector<int32_t>({7, -7, 7, -7, 5, INT32_MIN, 3});
  const Tensor b = Tensor::from_vector<int32_t>({2, 2, -2, -2, 0, -1, 0});
  const Tensor d = run_ref("Div", {a, b})[0].tensor;
  EXPECT_EQ(std::vector<int32_t>(d.data<int32_t>(), d.data<int32_t>() + 7),
            (std::vector<int32_t>{3, -3, -3, 3, 0, INT32_MIN, 0}));
  const Tensor m = run_ref("Mod", {a, b})[0].tensor;  // sign of the divisor
  EXPECT_EQ(std::vector<int32_t>(m.data<int32_t>(), m.data<int32_t>() + 7),
            (std::vector<int32_t>{1, 1, -1, -1, 0, 0, 0}));
  const Tensor f = run_ref("Mod", {a, b}, {{"fmod", attr_i(1)}})[0].tensor;  // sign of the dividend
  EXPECT_EQ(std::vector<int32_t>(f.data<int32_t>(), f.data<int32_t>() + 7),
            (std::vector<int32_t>{1, -1, 1, -1, 0, 0, 0}));
  const Tensor x8 = Tensor::from_vector<int8_t>({100, -100});
  const Tensor s = run_ref("Add", {x8, x8})[0].tensor;
  EXPECT_EQ(s.data<int8_t>()[0], int8_t(-56));
  EXPECT_EQ(s.data<int8_t>()[1], int8_t(56));
  const Tensor u = Tensor::from_vector<uint16_t>({65535});
  EXPECT_EQ(run_ref("Mul", {u, u})[0].tensor.data<uint16_t>()[0], uint16_t(1));
  EXPECT_EQ(run_ref("Sub", {Tensor::from_vector<uint8_t>({1}), Tensor::from_vector<uint8_t>({2})})[0]
                .tensor.data<uint8_t>()[0],
            255);
}

TEST(RefElementwise, IntegerOpsOnRandomData) {
  const Tensor a = random_int<int64_t>({4, 5}, -1000, 1000, 7);
  const Tensor b = random_int<int64_t>({5}, 1, 50, 8);
  const Tensor q = run_ref("Div", {a, b})[0].tensor;
  const Tensor m = run_ref("Mod", {a, b})[0].tensor;
  for (int64_t i = 0; i < 20; ++i) {
    const int64_t x = a.data<int64_t>()[i], y = b.data<int64_t>()[i % 5];
    EXPECT_EQ(q.data<int64_t>()[i], int64_t(std::trunc(double(x) / double(y))));
    const int64_t r = m.data<int64_t>()[i];
    EXPECT_EQ(r, int64_t(x - std::floor(double(x) / double(y)) * y));
  }
}

TEST(RefElementwise, PowMixedTypes) {
  const Tensor xf = Tensor::from_vector<float>({1.f, 2.f, 3.f});
  const Tensor yi = Tensor::from_vector<int64_t>({4, 5, 6});
  const Tensor r1 = run_ref("Pow", {xf, yi})[0].tensor;
  ASSERT_EQ(r1.dtype(), DType::f32);
  EXPECT_EQ(r1.data<float>()[2], 729.f);
  const Tensor xi = Tensor::from_vector<int32_t>({1, 2, 3});
  const Tensor yf = Tensor::from_vector<float>({4.f, 5.f, 0.5f});
  const Tensor r2 = run_ref("Pow", {xi, yf})[0].tensor;
  ASSERT_EQ(r2.dtype(), DType::i32);
  EXPECT_EQ(r2.data<int32_t>()[1], 32);
  EXPECT_EQ(r2.data<int32_t>()[2], 1);  // sqrt(3) truncated
  const Tensor r3 = run_ref("Pow", {xi, Tensor::from_vector<int32_t>({4, 5, 6})})[0].tensor;
  EXPECT_EQ(r3.data<int32_t>()[2], 729);
}

TEST(RefElementwise, MaxMinPropagateNaNAndVariadic) {
  const Tensor a = Tensor::from_vector<float>({1.f, NAN, 3.f});
  const Tensor b = Tensor::from_vector<float>({NAN, 2.f, 1.f});
  for (const char* op : {"Max", "Min"}) {
    const Tensor y = run_ref(op, {a, b})[0].tensor;
    EXPECT_TRUE(std::isnan(y.data<float>()[0]));
    EXPECT_TRUE(std::isnan(y.data<float>()[1]));
  }
  const Tensor c = Tensor::from_vector<float>({10.f});
  const Tensor x = random_f32({2, 3}, -1, 1, 3), y = random_f32({3}, -1, 1, 4);
  const Tensor s = run_ref("Sum", {x, y, c})[0].tensor;
  const Tensor mean = run_ref("Mean", {x, y, c})[0].tensor;
  const Tensor mx = run_ref("Max", {x, y, c})[0].tensor;
  ASSERT_EQ(s.shape(), (Shape{2, 3}));
  for (int64_t i = 0; i < 6; ++i) {
    const double want = double(x.data<float>()[i]) + y.data<float>()[i % 3] + 10;
    EXPECT_NEAR(s.data<float>()[i], want, 1e-5);
    EXPECT_NEAR(mean.data<float>()[i], want / 3, 1e-5);
    EXPECT_EQ(mx.data<float>()[i], 10.f);
  }
  const Tensor one = run_ref("Max", {x})[0].tensor;
  EXPECT_EQ(one.data<float>()[4], x.data<float>()[4]);
  const Tensor ui = run_ref("Min", {Tensor::from_vector<uint64_t>({5, 1}), Tensor::from_vector<uint64_t>({2})})[0].tensor;
  EXPECT_EQ(ui.data<uint64_t>()[0], 2u);
  EXPECT_EQ(ui.data<uint64_t>()[1], 1u);
}

TEST(RefElementwise, ComparisonsAndLogic) {
  const Tensor a = random_int<int16_t>({3, 4}, -3, 3, 11);
  const Tensor b = random_int<int16_t>({4}, -3, 3, 12);
  const std::vector<std::pair<const char*, std::function<bool(int, int)>>> cmp = {
      {"Equal", [](int x, int y) { return x == y; }},
      {"Less", [](int x, int y) { return x < y; }},
      {"LessOrEqual", [](int x, int y) { return x <= y; }},
      {"Greater", [](int x, int y) { return x > y; }},
      {"GreaterOrEqual", [](int x, int y) { return x >= y; }}};
  for (const auto& [op, f] : cmp) {
    const Tensor y = run_ref(op, {a, b})[0].tensor;
    ASSERT_EQ(y.dtype(), DType::boolean);
    for (int64_t i = 0; i < 12; ++i) EXPECT_EQ(y.data<bool>()[i], f(a.data<int16_t>()[i], b.data<int16_t>()[i % 4])) << op;
  }
  const Tensor s1 = Tensor::from_vector<std::string>({"a", "bc", ""});
  const Tensor s2 = Tensor::from_vector<std::string>({"bc"});
  const Tensor eq = run_ref("Equal", {s1, s2})[0].tensor;
  EXPECT_EQ(std::vector<bool>(eq.data<bool>(), eq.data<bool>() + 3), (std::vector<bool>{false, true, false}));
  const Tensor p = Tensor::from_vector<bool>({true, true, false, false});
  const Tensor q = Tensor::from_vector<bool>({true, false, true, false});
  auto bits = [](const Tensor& t) { return std::vector<bool>(t.data<bool>(), t.data<bool>() + t.numel()); };
  EXPECT_EQ(bits(run_ref("And", {p, q})[0].tensor), (std::vector<bool>{true, false, false, false}));
  EXPECT_EQ(bits(run_ref("Or", {p, q})[0].tensor), (std::vector<bool>{true, true, true, false}));
  EXPECT_EQ(bits(run_ref("Xor", {p, q})[0].tensor), (std::vector<bool>{false, true, true, false}));
  EXPECT_EQ(bits(run_ref("Not", {p})[0].tensor), (std::vector<bool>{false, false, true, true}));
  EXPECT_THROW(run_ref("And", {a, b}), Error);
}

TEST(RefElementwise, BitwiseAndShift) {
  const Tensor a = Tensor::from_vector<uint8_t>({0xF0, 0x0F, 0xAA});
  const Tensor b = Tensor::from_vector<uint8_t>({0x3C});
  EXPECT_EQ(run_ref("BitwiseAnd", {a, b})[0].tensor.data<uint8_t>()[0], 0x30);
  EXPECT_EQ(run_ref("BitwiseOr", {a, b})[0].tensor.data<uint8_t>()[1], 0x3F);
  EXPECT_EQ(run_ref("BitwiseXor", {a, b})[0].tensor.data<uint8_t>()[2], 0x96);
  EXPECT_EQ(run_ref("BitwiseNot", {a})[0].tensor.data<uint8_t>()[0], 0x0F);
  const Tensor x = Tensor::from_vector<uint32_t>({16, 4, 1});
  const Tensor s = Tensor::from_vector<uint32_t>({1, 2, 3});
  const Tensor l = run_ref("BitShift", {x, s}, {{"direction", attr_s("LEFT")}})[0].tensor;
  const Tensor r = run_ref("BitShift", {x, s}, {{"direction", attr_s("RIGHT")}})[0].tensor;
  EXPECT_EQ(l.data<uint32_t>()[0], 32u);
  EXPECT_EQ(l.data<uint32_t>()[2], 8u);
  EXPECT_EQ(r.data<uint32_t>()[1], 1u);
  EXPECT_EQ(r.data<uint32_t>()[2], 0u);
  EXPECT_THROW(run_ref("BitShift", {x, s}, {{"direction", attr_s("UP")}}), Error);
}

TEST(RefElementwise, WhereClipPRelu) {
  const Tensor c = Tensor::from_vector<bool>({true, false});
  const Tensor x = random_f32({3, 2}, -1, 1, 21);
  const Tensor y = Tensor::from_vector<float>({7.f});
  const Tensor w = run_ref("Where", {c, x, y})[0].tensor;
  ASSERT_EQ(w.shape(), (Shape{3, 2}));
  for (int64_t i = 0; i < 6; ++i) EXPECT_EQ(w.data<float>()[i], i % 2 == 0 ? x.data<float>()[i] : 7.f);
  const Tensor ws = run_ref("Where", {c, Tensor::from_vector<std::string>({"yes"}),
                                      Tensor::from_vector<std::string>({"no"})})[0].tensor;
  EXPECT_EQ(ws.data<std::string>()[1], "no");

  const Tensor v = Tensor::from_vector<float>({-3.f, -0.5f, 0.5f, 3.f, NAN});
  const Tensor cl = run_ref("Clip", {v, Tensor::scalar(-1.f), Tensor::scalar(1.f)})[0].tensor;
  EXPECT_EQ(cl.data<float>()[0], -1.f);
  EXPECT_EQ(cl.data<float>()[1], -0.5f);
  EXPECT_EQ(cl.data<float>()[3], 1.f);
  EXPECT_TRUE(std::isnan(cl.data<float>()[4]));
  const Tensor only_max = run_ref("Clip", {v, DataValue(), Tensor::scalar(0.f)})[0].tensor;
  EXPECT_EQ(only_max.data<float>()[0], -3.f);
  EXPECT_EQ(only_max.data<float>()[3], 0.f);
  const Tensor inverted = run_ref("Clip", {v, Tensor::scalar(2.f), Tensor::scalar(1.f)})[0].tensor;
  EXPECT_EQ(inverted.data<float>()[0], 1.f);  // min > max gives max, as numpy
  const Tensor ci = run_ref("Clip", {Tensor::from_vector<int8_t>({-128, 0, 127}), Tensor::scalar(int8_t(-5))})[0].tensor;
  EXPECT_EQ(ci.data<int8_t>()[0], -5);
  EXPECT_EQ(ci.data<int8_t>()[2], 127);

  const Tensor px = random_f32({2, 3, 4}, -1, 1, 22);
  const Tensor slope = random_f32({3, 1}, 0, 1, 23);
  const Tensor pr = run_ref("PRelu", {px, slope})[0].tensor;
  for (int64_t i = 0; i < 24; ++i) {
    const float xv = px.data<float>()[i];
    EXPECT_FLOAT_EQ(pr.data<float>()[i], xv < 0 ? xv * slope.data<float>()[(i / 4) % 3] : xv);
  }
  EXPECT_THROW(run_ref("PRelu", {slope, px}), Error);
}

TEST(RefElementwise, UnsupportedTypesFail) {
  EXPECT_THROW(run_ref("Sin", {Tensor::from_vector<int32_t>({1})}), Error);
  EXPECT_THROW(run_ref("Not", {Tensor::from_vector<float>({1})}), Error);
  EXPECT_THROW(run_ref("Gelu", {Tensor::from_vector<float>({1})}, {{"approximate", attr_s("fast")}}), Error);
}

TEST(RefElementwise, GeluTanhAndShrink) {
  const Tensor x = random_f32({16}, -4, 4, 31);
  const Tensor g = run_ref("Gelu", {x}, {{"approximate", attr_s("tanh")}})[0].tensor;
  const Tensor s = run_ref("Shrink", {x}, {{"lambd", attr_f(1.5f)}, {"bias", attr_f(0.5f)}})[0].tensor;
  for (int64_t i = 0; i < 16; ++i) {
    const double v = x.data<float>()[i];
    const double want = 0.5 * v * (1 + std::tanh(std::sqrt(2 / 3.14159265358979323846) * (v + 0.044715 * v * v * v)));
    EXPECT_NEAR(g.data<float>()[i], want, 2e-6 * std::max(1.0, std::fabs(want)));
    EXPECT_FLOAT_EQ(s.data<float>()[i], float(v < -1.5 ? v + 0.5 : v > 1.5 ? v - 0.5 : 0));
  }
}

}  // namespace
}  // namespace tessera::kernels::ref
