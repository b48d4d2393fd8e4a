// Tuned x86 elementwise kernels (src/kernels/x86/eltwise.h,
// src/backends/cpu/x86_eltwise_bindings.cpp): vector math ULP bounds against
// double-precision std:: functions over dense sweeps, and every tuned kernel
// against its reference kernel on random data and edge sizes, under each ISA
// this CPU has.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "core/thread_pool.h"
#include "kernels/x86/eltwise.h"
#include "tests/unit/kernel_harness.h"

namespace tessera::backends::cpu {
KernelFn x86_eltwise_kernel(const std::string& op_type);
}

namespace {

using namespace tessera;
using tessera::kernels::x86::EltIsa;
using tessera::kernels::x86::UnaryOp;
namespace x86 = tessera::kernels::x86;
using tessera::testing::attr_f;
using tessera::testing::attr_i;
using tessera::testing::attr_ints;

std::vector<EltIsa> isas() {
  std::vector<EltIsa> v;
  for (EltIsa i : {EltIsa::portable, EltIsa::avx2, EltIsa::avx512f})
    if (x86::eltwise_isa_available(i)) v.push_back(i);
  return v;
}

struct ForceIsa {
  explicit ForceIsa(EltIsa i) { x86::force_eltwise_isa(i); }
  ~ForceIsa() { x86::force_eltwise_isa(EltIsa::portable, true); }
};

// ---------------------------------------------------------------- ULP sweeps

double ref_of(UnaryOp op, double x) {
  switch (op) {
    case UnaryOp::exp:
      return std::exp(x);
    case UnaryOp::erf:
      return std::erf(x);
    case UnaryOp::tanh:
      return std::tanh(x);
    case UnaryOp::sigmoid:
      return x >= 0 ? 1.0 / (1.0 + std::exp(-x)) : std::exp(x) / (1.0 + std::exp(x));
    case UnaryOp::relu:
      return x < 0 ? 0.0 : x;
    case UnaryOp::hardswish:
      return x * std::max(0.0, std::min(1.0, double(float(x / 6.0)) + 0.5));
    case UnaryOp::silu:  // (NaN at -inf, as -inf * sigmoid(-inf) = -inf * 0)
      return x * (x >= 0 ? 1.0 / (1.0 + std::exp(-x)) : std::exp(x) / (1.0 + std::exp(x)));
    case UnaryOp::gelu_erf:
      return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
    case UnaryOp::gelu_tanh:
      return 0.5 * x *
             (1.0 + std::tanh(std::sqrt(2.0 / 3.14159265358979323846) * (x + 0.044715 * x * x * x)));
    case UnaryOp::log:
      return std::log(x);
    case UnaryOp::sin:
      return std::sin(x);
    case UnaryOp::cos:
      return std::cos(x);
    case UnaryOp::softplus:
      return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
  }
  return 0;
}

// Distance of y from the exact value in units of the ulp of the rounded result.
double ulp_error(float y, double exact) {
  const float r = float(exact);
  if (std::isinf(r)) return y == r ? 0.0 : 1e30;
  const double ar = std::fabs(double(r));
  const double ulp = ar < double(std::numeric_limits<float>::min()) ? std::ldexp(1.0, -149)
                                                                    : std::ldexp(1.0, std::ilogb(ar) - 23);
  return std::fabs(double(y) - exact) / ulp;
}

std::vector<float> sweep_inputs() {
  std::vector<float> v;
  // every 4099th bit pattern (both signs, all exponents, subnormals, inf, NaN)
  for (uint64_t b = 0; b <= 0xFFFFFFFFull; b += 4099) {
    uint32_t u = uint32_t(b);
    float f;
    std::memcpy(&f, &u, 4);
    v.push_back(f);
  }
  // dense over the interesting range
  for (int i = -600000; i <= 600000; ++i) v.push_back(float(i) * (20.0f / 600000.0f));
  for (float f :
       {0.0f,    -0.0f,   1.0f,    -1.0f,    0.625f,  -0.625f, 3.92f,  -3.92f,  9.01f,  88.72f, 88.73f, 89.0f,
        -87.33f, -87.34f, -103.0f, -103.97f, -104.0f, -150.0f, 1e-45f, -1e-45f, 1e-38f, 1e-30f, 1e-10f})
    v.push_back(f);
  v.push_back(std::numeric_limits<float>::infinity());
  v.push_back(-std::numeric_limits<float>::infinity());
  v.push_back(std::numeric_limits<float>::quiet_NaN());
  v.push_back(-std::numeric_limits<float>::quiet_NaN());
  return v;
}

// Every `stride`-th bit pattern from lo to hi (both included), and their negations if `both_signs`.
std::vector<float> pattern_sweep(float lo, float hi, uint32_t stride, bool both_signs) {
  uint32_t a, b;
  std::memcpy(&a, &lo, 4);
  std::memcpy(&b, &hi, 4);
  std::vector<float> v;
  for (uint64_t u = a; u <= b; u += stride) {
    const uint32_t w = uint32_t(u);
    float f;
    std::memcpy(&f, &w, 4);
    v.push_back(f);
    if (both_signs) v.push_back(-f);
  }
  v.push_back(hi);
  return v;
}

// floor: results below it in magnitude pass within it absolutely (0: none); extra: more inputs
void check_ulp(UnaryOp op, const char* name, double bound, double floor = 0, std::vector<float> extra = {}) {
  static const std::vector<float> base = sweep_inputs();
  std::vector<float> xs = base;
  xs.insert(xs.end(), extra.begin(), extra.end());
  std::vector<double> exact(xs.size());
  for (size_t i = 0; i < xs.size(); ++i) exact[i] = ref_of(op, double(xs[i]));
  for (EltIsa isa : isas()) {
    std::vector<float> y(xs.size());
    x86::eltwise_kernels(isa).unary(op, xs.data(), y.data(), int64_t(xs.size()));
    double worst = 0;
    float worst_x = 0;
    for (size_t i = 0; i < xs.size(); ++i) {
      if (std::isnan(exact[i])) {
        ASSERT_TRUE(std::isnan(y[i])) << name << " " << x86::eltwise_isa_name(isa) << " x=" << xs[i];
        continue;
      }
      ASSERT_FALSE(std::isnan(y[i])) << name << " " << x86::eltwise_isa_name(isa) << " x=" << xs[i];
      if (std::fabs(exact[i]) < floor && std::fabs(double(y[i]) - exact[i]) <= floor) continue;
      const double e = ulp_error(y[i], exact[i]);
      if (e > worst) worst = e, worst_x = xs[i];
    }
    EXPECT_LE(worst, bound) << name << " " << x86::eltwise_isa_name(isa) << " worst at x=" << worst_x;
    std::printf("[ ulp ] %-8s %-9s max %.3f ulp (at x=%.9g)\n", name, x86::eltwise_isa_name(isa), worst,
                double(worst_x));
  }
}

TEST(X86EltwiseMath, ExpUlp) {
  check_ulp(UnaryOp::exp, "exp", 1.5);
}
TEST(X86EltwiseMath, ErfUlp) {
  check_ulp(UnaryOp::erf, "erf", 2.5);
}
TEST(X86EltwiseMath, TanhUlp) {
  check_ulp(UnaryOp::tanh, "tanh", 6.0);  // the rational form (eltwise_impl.h); the portable std::tanh
}
TEST(X86EltwiseMath, SigmoidUlp) {
  check_ulp(UnaryOp::sigmoid, "sigmoid", 3.0);
}
TEST(X86EltwiseMath, HardSwishUlp) {
  check_ulp(UnaryOp::hardswish, "hardswish", 2.0);
}
TEST(X86EltwiseMath, SiluUlp) {
  // x / (1 + e^{-x}): results under 1e-30 in magnitude (x < -64) are held to 1e-30 absolutely
  // (eltwise_impl.h)
  check_ulp(UnaryOp::silu, "silu", 4.0, 1e-30);
}

TEST(X86EltwiseMath, LogUlp) {
  // every 257th positive pattern (subnormals, 0, +inf included), every 5th in [0.5, 2]
  std::vector<float> xs = pattern_sweep(0.0f, std::numeric_limits<float>::infinity(), 257, false);
  const auto near1 = pattern_sweep(0.5f, 2.0f, 5, false);
  xs.insert(xs.end(), near1.begin(), near1.end());
  check_ulp(UnaryOp::log, "log", 1.75, 0, xs);
}
TEST(X86EltwiseMath, SinCosUlp) {
  // every 199th pattern up to 4 (both signs), every 37th up to past the vector path's bound (105414), the
  // per-lane fallback beyond
  std::vector<float> xs = pattern_sweep(0.0f, 4.0f, 199, true);
  const auto mid = pattern_sweep(4.0f, 2.5e5f, 37, true);
  xs.insert(xs.end(), mid.begin(), mid.end());
  for (float f : {105413.99f, 105414.0f, 105414.01f, 1e6f, 3e38f, -3e38f}) xs.push_back(f);
  check_ulp(UnaryOp::sin, "sin", 2.0, 0, xs);
  check_ulp(UnaryOp::cos, "cos", 2.0, 0, xs);
}
TEST(X86EltwiseMath, SoftplusUlp) {
  check_ulp(UnaryOp::softplus, "softplus", 2.5, 0, pattern_sweep(0.0f, 120.0f, 997, true));
}

// pow against std::pow in double: random bases over many binades, exponents |b| <= 8 (the common ones) and
// |b| <= 80, and the special cases (through std::pow per lane).
// The softmax's flushing exponential (exp_ftz in eltwise_impl.h), read back through the online softmax:
// rows of [0, x...] with x <= 0 have max 0, so each x comes back as e^x. Held to exp's bound; results under
// FLT_MIN are +0 on the vector ISAs (x < -87.33654, -inf included) and a NaN stays NaN.
TEST(X86EltwiseMath, SoftmaxExpUlp) {
  std::vector<float> xs = pattern_sweep(-0.0f, -87.33654f, 97, false);
  for (float f : {-87.3365f, -87.33654f, -87.33655f, -87.4f, -100.0f, -1e30f, -1e-45f, -1e-30f,
                  -std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()})
    xs.push_back(f);
  constexpr int64_t kLen = 1000;  // scores a row after its leading 0 (a masked tail: not a multiple of 16)
  const int64_t rows = (int64_t(xs.size()) + kLen - 1) / kLen, lds = kLen + 1;
  for (EltIsa isa : isas()) {
    std::vector<float> s(size_t(rows * lds), -std::numeric_limits<float>::infinity());
    for (int64_t r = 0; r < rows; ++r) s[size_t(r * lds)] = 0.0f;
    for (size_t i = 0; i < xs.size(); ++i) s[size_t(int64_t(i) / kLen * lds + 1 + int64_t(i) % kLen)] = xs[i];
    std::vector<float> m(size_t(rows), -std::numeric_limits<float>::infinity()), l(size_t(rows), 0.0f);
    std::vector<float> corr(size_t(rows), 0.0f);
    x86::eltwise_kernels(isa).online_softmax_rows(s.data(), lds, rows, lds, m.data(), l.data(), corr.data());
    double worst = 0;
    float worst_x = 0;
    for (size_t i = 0; i < xs.size(); ++i) {
      const float x = xs[i], y = s[size_t(int64_t(i) / kLen * lds + 1 + int64_t(i) % kLen)];
      if (std::isnan(x)) {
        EXPECT_TRUE(std::isnan(y)) << x86::eltwise_isa_name(isa);
        continue;
      }
      if (x < -87.33654f) {  // flushed by the vector ISAs; the portable path's std::exp may be subnormal
        EXPECT_TRUE(isa == EltIsa::portable ? y >= 0.0f && y <= std::numeric_limits<float>::min()
                                            : y == 0.0f && !std::signbit(y))
            << x86::eltwise_isa_name(isa) << " x=" << x << " y=" << y;
        continue;
      }
      const double e = ulp_error(y, std::exp(double(x)));
      if (e > worst) worst = e, worst_x = x;
    }
    EXPECT_LE(worst, 1.5) << x86::eltwise_isa_name(isa) << " worst at x=" << worst_x;
    std::printf("[ ulp ] exp_ftz  %-9s max %.3f ulp (at x=%.9g)\n", x86::eltwise_isa_name(isa), worst,
                double(worst_x));
  }
}

TEST(X86EltwiseMath, PowUlp) {
  std::mt19937 g(7);
  std::uniform_real_distribution<float> ea(-40.0f, 40.0f), eb(-1.0f, 1.0f);
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  for (float bmax : {8.0f, 80.0f}) {
    std::vector<float> a, b;
    for (int i = 0; i < 3000000; ++i) {
      a.push_back(std::exp2(ea(g) * (i % 4 == 0 ? 3.0f : i % 4 == 1 ? 0.01f : 1.0f)));
      b.push_back(eb(g) * bmax);
    }
    // integral and special exponents, negative, zero, subnormal, inf and NaN bases
    for (float x : {-2.5f, -2.0f, -0.0f, 0.0f, 1e-45f, 1e-40f, 1.0f, 2.0f, 3e38f, inf, -inf, nan})
      for (float y :
           {-3.0f, -2.0f, -0.5f, 0.0f, 0.5f, 1.0f, 2.0f, 3.0f, 1.7f, 200.0f, -200.0f, inf, -inf, nan})
        a.push_back(x), b.push_back(y);
    for (EltIsa isa : isas()) {
      std::vector<float> y(a.size());
      x86::eltwise_kernels(isa).binary(x86::BinaryOp::pow, a.data(), 1, b.data(), 1, y.data(),
                                       int64_t(a.size()));
      double worst = 0;
      size_t at = 0;
      for (size_t i = 0; i < a.size(); ++i) {
        const double want = std::pow(double(a[i]), double(b[i]));
        if (std::isnan(want)) {
          ASSERT_TRUE(std::isnan(y[i])) << a[i] << "^" << b[i];
          continue;
        }
        const double e = ulp_error(y[i], want);
        if (e > worst) worst = e, at = i;
      }
      EXPECT_LE(worst, bmax == 8.0f ? 2.0 : 5.0)
          << x86::eltwise_isa_name(isa) << " " << a[at] << "^" << b[at];
      std::printf("[ ulp ] pow |b|<=%-3g %-9s max %.3f ulp (at %.9g ^ %.9g)\n", double(bmax),
                  x86::eltwise_isa_name(isa), worst, double(a[at]), double(b[at]));
    }
  }
}

TEST(X86EltwiseMath, LogSinCosSpecials) {
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> x = {inf, -inf, 0.0f, -0.0f, -1.0f, 1e-45f};
  for (EltIsa isa : isas()) {
    const auto& k = x86::eltwise_kernels(isa);
    std::vector<float> y(x.size());
    k.unary(UnaryOp::log, x.data(), y.data(), int64_t(x.size()));
    EXPECT_EQ(y[0], inf);
    EXPECT_TRUE(std::isnan(y[1]));
    EXPECT_EQ(y[2], -inf);
    EXPECT_EQ(y[3], -inf);
    EXPECT_TRUE(std::isnan(y[4]));
    EXPECT_FLOAT_EQ(y[5], float(std::log(double(1e-45f))));
    k.unary(UnaryOp::sin, x.data(), y.data(), int64_t(x.size()));
    EXPECT_TRUE(std::isnan(y[0]) && std::isnan(y[1]));
    EXPECT_TRUE(y[2] == 0.0f && !std::signbit(y[2]));
    EXPECT_TRUE(y[3] == 0.0f && std::signbit(y[3]));
    k.unary(UnaryOp::cos, x.data(), y.data(), int64_t(x.size()));
    EXPECT_TRUE(std::isnan(y[0]) && std::isnan(y[1]));
    EXPECT_EQ(y[2], 1.0f);
    EXPECT_EQ(y[3], 1.0f);
    k.unary(UnaryOp::softplus, x.data(), y.data(), int64_t(x.size()));
    EXPECT_EQ(y[0], inf);
    EXPECT_EQ(y[1], 0.0f);
    EXPECT_FLOAT_EQ(y[2], float(std::log(2.0)));
  }
}

// GELU is x/2 (1 + f), as written or as x/2 + |x| E(|x|): the bound is absolute, scaled by max(1, |x|)
// (eltwise.h). Past +-6, the tabulated form's clamp.
void check_gelu(UnaryOp op, const char* name, double bound) {
  std::vector<float> xs;
  for (int i = -400000; i <= 400000; ++i) xs.push_back(float(i) * (12.0f / 400000.0f));
  for (float f : {1e-30f, -1e-30f, 1e4f, -1e4f, 3e12f, -3e12f, 1e30f, -1e30f, 0.0f, -0.0f}) xs.push_back(f);
  for (EltIsa isa : isas()) {
    std::vector<float> y(xs.size());
    x86::eltwise_kernels(isa).unary(op, xs.data(), y.data(), int64_t(xs.size()));
    double worst = 0;
    float worst_x = 0;
    for (size_t i = 0; i < xs.size(); ++i) {
      const double e =
          std::fabs(double(y[i]) - ref_of(op, double(xs[i]))) / std::max(1.0, std::fabs(double(xs[i])));
      if (e > worst) worst = e, worst_x = xs[i];
    }
    EXPECT_LE(worst, bound) << name << " " << x86::eltwise_isa_name(isa) << " worst at x=" << worst_x;
    std::printf("[ abs ] %-9s %-9s max %.3g * max(1,|x|) (at x=%.9g)\n", name, x86::eltwise_isa_name(isa),
                worst, double(worst_x));
    std::vector<float> nan = {std::numeric_limits<float>::quiet_NaN()}, out(1);
    x86::eltwise_kernels(isa).unary(op, nan.data(), out.data(), 1);
    EXPECT_TRUE(std::isnan(out[0])) << name;
  }
}

TEST(X86EltwiseMath, GeluErf) {
  check_gelu(UnaryOp::gelu_erf, "gelu_erf", 2e-7);
}
TEST(X86EltwiseMath, GeluTanh) {
  check_gelu(UnaryOp::gelu_tanh, "gelu_tanh", 2e-7);
}

TEST(X86EltwiseMath, Specials) {
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> x = {inf, -inf, 0.0f, -0.0f};
  for (EltIsa isa : isas()) {
    const auto& k = x86::eltwise_kernels(isa);
    std::vector<float> y(x.size());
    k.unary(UnaryOp::exp, x.data(), y.data(), 4);
    EXPECT_EQ(y[0], inf);
    EXPECT_EQ(y[1], 0.0f);
    EXPECT_EQ(y[2], 1.0f);
    k.unary(UnaryOp::erf, x.data(), y.data(), 4);
    EXPECT_EQ(y[0], 1.0f);
    EXPECT_EQ(y[1], -1.0f);
    EXPECT_TRUE(y[3] == 0.0f && std::signbit(y[3]));
    k.unary(UnaryOp::tanh, x.data(), y.data(), 4);
    EXPECT_EQ(y[0], 1.0f);
    EXPECT_EQ(y[1], -1.0f);
    k.unary(UnaryOp::sigmoid, x.data(), y.data(), 4);
    EXPECT_EQ(y[0], 1.0f);
    EXPECT_EQ(y[1], 0.0f);
    EXPECT_EQ(y[2], 0.5f);
  }
}

// ---------------------------------------------------------------- kernels vs reference

Tensor rand_f32(const Shape& s, std::mt19937& g, float lo = -3.0f, float hi = 3.0f) {
  Tensor t(DType::f32, s);
  std::uniform_real_distribution<float> d(lo, hi);
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = d(g);
  return t;
}

using PoolCtx = tessera::testing::PoolKernelContext;

ThreadPool& test_pool() {
  static ThreadPool p(3);
  return p;
}

std::vector<DataValue> run_tuned(const std::string& op, std::vector<DataValue> in, AttrMap attrs = {},
                                 size_t nout = 1, int opset = 23, bool threaded = false) {
  KernelFn fn = backends::cpu::x86_eltwise_kernel(op);
  EXPECT_NE(fn, nullptr) << op;
  PoolCtx ctx(op, std::move(in), std::move(attrs), nout, opset);
  if (threaded) ctx.pool_ = &test_pool();
  fn(ctx);
  return std::move(ctx.outputs());
}

// |got - want| <= rel * |want| + abs, NaN where the reference has NaN.
void expect_close(const Tensor& got, const Tensor& want, double rel, double abs, const std::string& what) {
  ASSERT_EQ(got.dtype(), want.dtype()) << what;
  ASSERT_EQ(got.shape(), want.shape()) << what;
  const Tensor g = got.contiguous(), w = want.contiguous();
  int bad = 0;
  for (int64_t i = 0; i < g.numel() && bad < 5; ++i) {
    const double a = g.at_double(i), b = w.at_double(i);
    if (std::isnan(b)) {
      if (!std::isnan(a)) ++bad, ADD_FAILURE() << what << " [" << i << "] want NaN got " << a;
      continue;
    }
    if (std::isinf(b) ? a != b : !(std::fabs(a - b) <= rel * std::fabs(b) + abs))
      ++bad, ADD_FAILURE() << what << " [" << i << "] got " << a << " want " << b;
  }
}

const std::vector<int64_t> kSizes = {1,  2,  7,  8,  9,  15,  16,   17,   31,
                                     32, 33, 63, 64, 65, 127, 1000, 1009, 4099};

TEST(X86Eltwise, UnaryMatchesRef) {
  std::mt19937 g(1);
  for (EltIsa isa : isas()) {
    ForceIsa f(isa);
    for (const char* op : {"Exp", "Erf", "Tanh", "Sigmoid", "Relu", "Log", "Sin", "Cos", "Softplus"})
      for (int64_t n : kSizes) {
        Tensor x = rand_f32({n}, g, std::string(op) == "Log" ? 1e-3f : -12.0f, 12.0f);
        if (n > 3) x.data<float>()[2] = std::numeric_limits<float>::quiet_NaN();
        const auto want = tessera::testing::run_ref(op, {x});
        const auto got = run_tuned(op, {x}, {}, 1, 23, n > 1000);
        expect_close(got[0].tensor, want[0].tensor, 6e-7, 1e-37,
                     std::string(op) + " n=" + std::to_string(n) + " " + x86::eltwise_isa_name(isa));
      }
  }
}

TEST(X86Eltwise, BinaryMatchesRef) {
  std::mt19937 g(2);
  const std::vector<std::pair<Shape, Shape>> shapes = {{{17}, {17}},
                                                       {{1000}, {1000}},
                                                       {{3, 5, 17}, {17}},
                                                       {{3, 5, 17}, {5, 17}},
                                                       {{4, 33}, {1}},
                                                       {{1}, {4, 33}},
                                                       {{}, {9, 16}},
                                                       {{9, 16}, {}},
                                                       {{2, 7, 1}, {2, 7, 15}},
                                                       {{128, 768}, {1, 1, 768}},
                                                       {{7, 1}, {1, 31}},
                                                       {{1, 12, 65}, {1, 12, 1}},
                                                       {{3, 1, 5}, {1, 4, 1}},
                                                       {{1009, 16}, {1009, 16}},
                                                       {{5, 1009}, {1009}},
                                                       // channels-last maps scaled per channel: short rows
                                                       // repeated down many (whole rows per call)
                                                       {{1, 56, 57, 32}, {1, 1, 1, 32}},
                                                       {{1, 1, 1, 24}, {1, 30, 31, 24}},
                                                       {{2, 9, 9, 300}, {300}},
                                                       {{0, 4}, {4}}};
  for (EltIsa isa : isas()) {
    ForceIsa f(isa);
    for (const char* op : {"Add", "Sub", "Mul", "Div", "Pow"})
      for (const auto& [sa, sb] : shapes) {
        const bool pow = std::string(op) == "Pow";
        const Tensor a = rand_f32(sa, g, pow ? 0.01f : -3.0f, 3.0f), b = rand_f32(sb, g, 0.5f, 3.0f);
        const auto want = tessera::testing::run_ref(op, {a, b});
        const auto got = run_tuned(op, {a, b}, {}, 1, 23, true);
        expect_close(got[0].tensor, want[0].tensor, pow ? 3e-7 : 1e-7, 0,
                     std::string(op) + " " + a.describe() + " " + b.describe());
      }
  }
  // Non-f32 and mismatched shapes go to the reference (same results, same errors).
  Tensor ia = Tensor::from_vector<int32_t>({1, 2, 3}, {3}), ib = Tensor::from_vector<int32_t>({4, 5, 6}, {3});
  expect_close(run_tuned("Add", {ia, ib})[0].tensor, tessera::testing::run_ref("Add", {ia, ib})[0].tensor, 0,
               0, "int Add");
  EXPECT_THROW(run_tuned("Add", {rand_f32({3}, g), rand_f32({4}, g)}), Error);
}

TEST(X86Eltwise, SoftmaxMatchesRef) {
  std::mt19937 g(3);
  for (EltIsa isa : isas()) {
    ForceIsa f(isa);
    for (int64_t len : kSizes)
      for (int64_t rows : {1, 3, 6, 64}) {  // the kernel takes rows four at a time, then singly
        Tensor x = rand_f32({rows, len}, g, -20.0f, 20.0f);
        if (rows == 3 || rows == 6)  // a NaN row and a +inf row, in a group of four (6) and singly (3)
          x.data<float>()[len + len / 2] = std::numeric_limits<float>::quiet_NaN();
        if ((rows == 3 || rows == 6) && len > 1)
          x.data<float>()[2 * len + 1] = std::numeric_limits<float>::infinity();
        const auto want = tessera::testing::run_ref("Softmax", {x});
        const auto got = run_tuned("Softmax", {x}, {}, 1, 23, rows == 64);
        expect_close(got[0].tensor, want[0].tensor, 2e-6, 1e-12,
                     "Softmax " + x.describe() + " " + x86::eltwise_isa_name(isa));
      }
    // other axes (reference at run time), legacy opset coercion, all -inf row
    const Tensor x = rand_f32({3, 4, 5}, g);
    for (int64_t axis : {0, 1, -1, 2})
      for (int opset : {11, 13}) {
        const auto want = tessera::testing::run_ref("Softmax", {x}, {{"axis", attr_i(axis)}}, 1, opset);
        const auto got = run_tuned("Softmax", {x}, {{"axis", attr_i(axis)}}, 1, opset);
        expect_close(got[0].tensor, want[0].tensor, 2e-6, 1e-12, "Softmax axis " + std::to_string(axis));
      }
    Tensor m(DType::f32, {2, 17});
    for (int64_t i = 0; i < 34; ++i)
      m.data<float>()[i] = i < 17 ? -std::numeric_limits<float>::infinity() : 1.0f;
    expect_close(run_tuned("Softmax", {m})[0].tensor, tessera::testing::run_ref("Softmax", {m})[0].tensor,
                 1e-6, 0, "-inf row");
  }
}

// LogSoftmax: x - max - log(sum(exp(x - max))) per row, against the reference (in double): every tail length,
// rows in fours and singly, a NaN row, a +inf row, an all -inf row (NaN), -inf entries beside finite ones
// (-inf), a 32000-word vocabulary whose tail lies far below FLT_MIN as a probability; other axes and legacy
// opsets through the reference.
TEST(X86Eltwise, LogSoftmaxMatchesRef) {
  std::mt19937 g(13);
  for (EltIsa isa : isas()) {
    ForceIsa f(isa);
    std::vector<int64_t> lens(std::begin(kSizes), std::end(kSizes));
    lens.push_back(32000);
    for (int64_t len : lens)
      for (int64_t rows : {1, 3, 6, 9}) {
        Tensor x = rand_f32({rows, len}, g, len == 32000 ? -120.0f : -20.0f, 20.0f);
        float* p = x.data<float>();
        if (rows >= 3) p[len + len / 2] = std::numeric_limits<float>::quiet_NaN();
        if (rows >= 3 && len > 1) p[2 * len + 1] = std::numeric_limits<float>::infinity();
        if (rows >= 6)
          for (int64_t i = 0; i < len; ++i) p[4 * len + i] = -std::numeric_limits<float>::infinity();
        if (rows >= 6 && len > 2) p[5 * len] = p[5 * len + len - 1] = -std::numeric_limits<float>::infinity();
        const auto want = tessera::testing::run_ref("LogSoftmax", {x});
        const auto got = run_tuned("LogSoftmax", {x}, {}, 1, 23, rows == 9);
        expect_close(got[0].tensor, want[0].tensor, 1e-6, 2e-5,
                     "LogSoftmax " + x.describe() + " " + x86::eltwise_isa_name(isa));
      }
    const Tensor x = rand_f32({3, 4, 5}, g);
    for (int64_t axis : {0, 1, -1, 2})
      for (int opset : {11, 13}) {
        const auto want = tessera::testing::run_ref("LogSoftmax", {x}, {{"axis", attr_i(axis)}}, 1, opset);
        const auto got = run_tuned("LogSoftmax", {x}, {{"axis", attr_i(axis)}}, 1, opset);
        expect_close(got[0].tensor, want[0].tensor, 1e-6, 2e-6, "LogSoftmax axis " + std::to_string(axis));
      }
  }
}

TEST(X86Eltwise, LayerNormMatchesRef) {
  std::mt19937 g(4);
  for (EltIsa isa : isas()) {
    ForceIsa f(isa);
    for (int64_t len : kSizes)
      for (bool with_bias : {true, false}) {
        const Tensor x = rand_f32({5, len}, g, -4.0f, 6.0f), s = rand_f32({len}, g), b = rand_f32({len}, g);
        std::vector<DataValue> in = {x, s};
        if (with_bias) in.push_back(b);
        const AttrMap at = {{"epsilon", attr_f(1e-3f)}};
        const auto want = tessera::testing::run_ref("LayerNormalization", in, at);
        const auto got = run_tuned("LayerNormalization", in, at, 1, 23, true);
        expect_close(got[0].tensor, want[0].tensor, 1e-5, 2e-5, "LayerNorm " + x.describe());
      }
    // rows four at a time (layernorm_row_group) give the bits of the one-row loop: nine copies of a row
    for (int64_t len : {int64_t(1), int64_t(17), int64_t(768), int64_t(1000)}) {
      std::uniform_real_distribution<float> d(-3.0f, 5.0f);
      const size_t n = static_cast<size_t>(len);
      std::vector<float> row(n), sc(n), bi(n);
      for (int64_t i = 0; i < len; ++i) row[size_t(i)] = d(g), sc[size_t(i)] = d(g), bi[size_t(i)] = d(g);
      std::vector<float> xs, ys(size_t(9 * len));
      for (int r = 0; r < 9; ++r) xs.insert(xs.end(), row.begin(), row.end());
      x86::eltwise_kernels(isa).layernorm_rows(xs.data(), sc.data(), bi.data(), ys.data(), 9, len, 1e-5f, 0);
      for (int r = 0; r < 8; ++r)
        for (int64_t i = 0; i < len; ++i)
          ASSERT_EQ(ys[size_t(r * len + i)], ys[size_t(8 * len + i)])
              << x86::eltwise_isa_name(isa) << " len " << len << " row " << r << " at " << i;
    }
    // axis 1 of a rank-3 input normalizes over the last two dims
    const Tensor x = rand_f32({3, 4, 5}, g), s = rand_f32({4, 5}, g), b = rand_f32({4, 5}, g);
    const AttrMap at = {{"axis", attr_i(1)}};
    expect_close(run_tuned("LayerNormalization", {x, s, b}, at)[0].tensor,
                 tessera::testing::run_ref("LayerNormalization", {x, s, b}, at)[0].tensor, 1e-5, 2e-5,
                 "LayerNorm axis 1");
    // Mean / InvStdDev requested: the reference computes all three
    const auto want3 = tessera::testing::run_ref("LayerNormalization", {x, s, b}, at, 3);
    const auto got3 = run_tuned("LayerNormalization", {x, s, b}, at, 3);
    for (size_t i = 0; i < 3; ++i)
      expect_close(got3[i].tensor, want3[i].tensor, 1e-5, 2e-5, "LayerNorm stats");
  }
}

// RMSNormalization (fuse_rmsnorm's) against the double reference: rows of every edge size, axis 1 of a rank-3
// input (two dims normalized), and the cases the tuned kernel hands to the reference (a broadcast scale).
TEST(X86Eltwise, RmsNormMatchesRef) {
  std::mt19937 g(24);
  for (EltIsa isa : isas()) {
    ForceIsa f(isa);
    for (int64_t len : kSizes) {
      const Tensor x = rand_f32({5, len}, g, -4.0f, 6.0f), s = rand_f32({len}, g);
      const AttrMap at = {{"epsilon", attr_f(1e-6f)}};
      const auto want = tessera::testing::run_ref("RMSNormalization", {x, s}, at);
      const auto got = run_tuned("RMSNormalization", {x, s}, at, 1, 23, true);
      expect_close(got[0].tensor, want[0].tensor, 1e-5, 2e-5,
                   "RMSNorm " + x.describe() + " " + x86::eltwise_isa_name(isa));
    }
    const Tensor x = rand_f32({3, 4, 5}, g), s = rand_f32({4, 5}, g), s1 = rand_f32({5}, g);
    const AttrMap at = {{"axis", attr_i(1)}};
    expect_close(run_tuned("RMSNormalization", {x, s}, at)[0].tensor,
                 tessera::testing::run_ref("RMSNormalization", {x, s}, at)[0].tensor, 1e-5, 2e-5,
                 "RMSNorm axis 1");
    expect_close(run_tuned("RMSNormalization", {x, s1}, at)[0].tensor,  // scale broadcast over axis 1
                 tessera::testing::run_ref("RMSNormalization", {x, s1}, at)[0].tensor, 1e-5, 2e-5,
                 "RMSNorm broadcast scale");
  }
}

TEST(X86Eltwise, InstanceNormMatchesRef) {
  std::mt19937 g(14);
  for (EltIsa isa : isas()) {
    ForceIsa f(isa);
    for (int64_t len : kSizes)
      for (auto [n, c] : {std::pair<int64_t, int64_t>{3, 5}, {2, 5}, {4, 3}}) {
        // a thread's rows may start inside an item and cross into the next: each channel its own parameters
        const Tensor x = rand_f32({n, c, len}, g, -4.0f, 6.0f), s = rand_f32({c}, g), b = rand_f32({c}, g);
        const AttrMap at = {{"epsilon", attr_f(1e-3f)}};
        expect_close(run_tuned("InstanceNormalization", {x, s, b}, at, 1, 23, true)[0].tensor,
                     tessera::testing::run_ref("InstanceNormalization", {x, s, b}, at)[0].tensor, 1e-5, 2e-5,
                     "InstanceNorm " + x.describe());
      }
    // rank 4, and a GroupNorm's export (Reshape [1, groups, -1]) with a mean far from zero
    const Tensor x = rand_f32({2, 3, 7, 9}, g), s = rand_f32({3}, g), b = rand_f32({3}, g);
    expect_close(run_tuned("InstanceNormalization", {x, s, b})[0].tensor,
                 tessera::testing::run_ref("InstanceNormalization", {x, s, b})[0].tensor, 1e-5, 2e-5,
                 "InstanceNorm rank 4");
    const Tensor gx = rand_f32({1, 4, 3000}, g, 40.0f, 44.0f), gs = rand_f32({4}, g), gb = rand_f32({4}, g);
    expect_close(run_tuned("InstanceNormalization", {gx, gs, gb}, {}, 1, 23, true)[0].tensor,
                 tessera::testing::run_ref("InstanceNormalization", {gx, gs, gb})[0].tensor, 1e-4, 1e-4,
                 "InstanceNorm offset mean");
    // a scale of the wrong length: the reference's error, not a read past it
    EXPECT_THROW(run_tuned("InstanceNormalization", {x, rand_f32({2}, g), b}), Error);
  }
}

TEST(X86Eltwise, GroupNormMatchesRef) {
  // opset 18 (scale and bias per group) and 21 (per channel); channels of 1 to 1009 pixels (vector tails
  // inside each channel's run); rows a thread takes crossing items
  std::mt19937 g(15);
  for (EltIsa isa : isas()) {
    ForceIsa f(isa);
    for (int opset : {18, 21})
      for (int64_t sp : {int64_t(1), int64_t(7), int64_t(16), int64_t(33), int64_t(1009)})
        for (auto [n, c, groups] : {std::tuple<int64_t, int64_t, int64_t>{2, 6, 3}, {3, 8, 2}, {1, 12, 12}}) {
          const int64_t params = opset < 21 ? groups : c;
          const Tensor x = rand_f32({n, c, sp}, g, -3.0f, 5.0f), s = rand_f32({params}, g),
                       b = rand_f32({params}, g);
          const AttrMap at = {{"num_groups", attr_i(groups)}, {"epsilon", attr_f(1e-3f)}};
          expect_close(run_tuned("GroupNormalization", {x, s, b}, at, 1, opset, true)[0].tensor,
                       tessera::testing::run_ref("GroupNormalization", {x, s, b}, at, 1, opset)[0].tensor,
                       1e-5, 2e-5, "GroupNorm opset " + std::to_string(opset) + " " + x.describe());
        }
    // rank 4 (an image), and parameters of the other opset's length: the reference's error
    const Tensor x = rand_f32({1, 32, 9, 11}, g), s = rand_f32({32}, g), b = rand_f32({32}, g);
    const AttrMap at = {{"num_groups", attr_i(8)}};
    expect_close(run_tuned("GroupNormalization", {x, s, b}, at, 1, 21)[0].tensor,
                 tessera::testing::run_ref("GroupNormalization", {x, s, b}, at, 1, 21)[0].tensor, 1e-5, 2e-5,
                 "GroupNorm rank 4");
    EXPECT_THROW(run_tuned("GroupNormalization", {x, s, b}, at, 1, 18), Error);
  }
}

TEST(X86Eltwise, TransposeMatchesRef) {
  std::mt19937 g(5);
  const std::vector<std::pair<Shape, std::vector<int64_t>>> cases = {
      {{17, 33}, {1, 0}},
      {{1000, 3}, {1, 0}},
      {{64, 65}, {1, 0}},
      {{2, 3, 4}, {0, 2, 1}},
      {{2, 3, 4}, {2, 0, 1}},
      {{2, 3, 4}, {1, 0, 2}},
      {{1, 12, 65, 64}, {0, 2, 1, 3}},
      {{2, 12, 17, 64}, {0, 1, 3, 2}},
      {{3, 1, 5, 1}, {3, 2, 0, 1}},
      {{4, 5, 6, 7}, {3, 1, 2, 0}},
      {{7}, {0}},
      {{2, 3, 4}, {-1, 0, 1}},
      {{2, 0, 3}, {2, 1, 0}},
      {{5, 7, 9}, {}},
      // NCHW -> NHWC with few channels (runs of 2-4 interleaved values, A split in chunks)
      {{1, 3, 45, 47}, {0, 2, 3, 1}},
      {{2, 4, 20, 31}, {0, 2, 3, 1}},
      {{1, 2, 700}, {0, 2, 1}},
      {{3, 1100}, {1, 0}},
      {{5, 600}, {1, 0}},
      {{2, 3, 1030}, {0, 2, 1}},
      // 16 x 16 register tiles with ragged edges on either side, as attention's K^T and a layout change
      {{16, 16}, {1, 0}},
      {{47, 33}, {1, 0}},
      {{197, 12, 64}, {1, 2, 0}},
      {{1, 40, 14, 15}, {0, 2, 3, 1}},
      {{1, 31, 49}, {0, 2, 1}},
      // over 16K elements (threaded): a conv region's NHWC output back to NCHW, ragged rows and columns
      {{1, 14, 14, 768}, {0, 3, 1, 2}},
      {{1, 7, 7, 961}, {0, 3, 1, 2}},
      {{2, 130, 131}, {0, 2, 1}},
      // the innermost axis kept, short runs (MobileViT's 2 x 2 patch unfold and fold), any width, threaded
      {{2304, 2, 16, 2}, {0, 2, 1, 3}},
      {{2304, 16, 2, 2}, {0, 2, 1, 3}},
      {{6, 5, 7, 4}, {2, 0, 1, 3}},
      {{3, 9, 5, 8}, {1, 2, 0, 3}},
      {{4, 3, 5, 3}, {0, 2, 1, 3}},
      {{2, 3, 4, 5, 2}, {3, 1, 0, 2, 4}},
      // only size-1 dims move: a view of the input (ViT's [197, 1, 768] <-> [1, 197, 768])
      {{197, 1, 768}, {1, 0, 2}},
      {{1, 5, 1, 7}, {2, 1, 3, 0}},
      {{1, 1}, {1, 0}}};
  for (EltIsa isa : isas()) {
    ForceIsa force(isa);
    for (const auto& [shape, perm] : cases) {
      const Tensor x = rand_f32(shape, g);
      AttrMap at;
      if (!perm.empty()) at["perm"] = attr_ints(perm);
      const auto want = tessera::testing::run_ref("Transpose", {x}, at);
      for (bool threaded : {false, true}) {
        const auto got = run_tuned("Transpose", {x}, at, 1, 23, threaded);
        expect_close(got[0].tensor, want[0].tensor, 0, 0,
                     "Transpose " + x.describe() + " " + x86::eltwise_isa_name(isa));
      }
    }
  }
  EXPECT_THROW(run_tuned("Transpose", {rand_f32({2, 3}, g)}, {{"perm", attr_ints({0, 0})}}), Error);
  const Tensor x = rand_f32({9, 1, 4}, g);
  const auto v = run_tuned("Transpose", {x}, {{"perm", attr_ints({1, 0, 2})}});
  EXPECT_EQ(v[0].tensor.storage(), x.storage());  // no copy
}

// Quick timing against the reference kernels (set TESSERA_ELTWISE_TIMING=1).
TEST(X86Eltwise, Timing) {
  if (!std::getenv("TESSERA_ELTWISE_TIMING")) GTEST_SKIP() << "set TESSERA_ELTWISE_TIMING=1";
  std::mt19937 g(6);
  auto time = [](auto&& f) {
    f();
    const auto t0 = std::chrono::steady_clock::now();
    int it = 0;
    while (std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(200)) f(), ++it;
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / it;
  };
  struct Case {
    std::string op;
    std::vector<DataValue> in;
    AttrMap at;
  };
  const Tensor act = rand_f32({128, 3072}, g), h = rand_f32({128, 768}, g), row = rand_f32({768}, g),
               sc = rand_f32({12, 128, 128}, g), q = rand_f32({1, 128, 12, 64}, g);
  const std::vector<Case> cases = {{"Erf", {act}, {}},
                                   {"Tanh", {act}, {}},
                                   {"Sigmoid", {act}, {}},
                                   {"Exp", {act}, {}},
                                   {"Relu", {act}, {}},
                                   {"Add", {h, row}, {}},
                                   {"Mul", {act, act}, {}},
                                   {"Div", {h, row}, {}},
                                   {"Softmax", {sc}, {}},
                                   {"LayerNormalization", {h, row, row}, {}},
                                   {"Transpose", {q}, {{"perm", attr_ints({0, 2, 1, 3})}}},
                                   {"Transpose", {h}, {{"perm", attr_ints({1, 0})}}}};
  for (const auto& c : cases) {
    const double tr = time([&] { tessera::testing::run_ref(c.op, c.in, c.at); });
    const double tt = time([&] { run_tuned(c.op, c.in, c.at); });
    std::printf("[ time ] %-20s %-22s ref %9.1f us  tuned %8.1f us  x%.1f (%s, 1 thread)\n", c.op.c_str(),
                c.in[0].tensor.describe().c_str(), tr, tt, tr / tt,
                x86::eltwise_isa_name(x86::eltwise_isa()));
  }
}

}  // namespace
