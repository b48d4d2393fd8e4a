// MeanVarianceNormalization, LpNormalization, TopK, ArgMax / ArgMin and CumSum: the x86 bindings against the
// reference kernels on every ISA the CPU has (portable, AVX2, AVX-512), one and two threads. Shapes around
// the 16-lane loops (15, 16, 17), primes, size-1 axes, every axis and negative ones, reduced axes that
// alternate with kept ones, keepdims and select_last_index; random data away from zero, ties (small
// integers), NaN, -0 and +0 where the op orders them. TopK, ArgMax / ArgMin and CumSum must match exactly
// (CumSum sums in double as the reference); MVN and LpNorm within 4e-6 relative (both compute in double; the
// output rounds to float, the reference divides where the kernel multiplies by a reciprocal).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/thread_pool.h"
#include "kernels/x86/eltwise.h"
#include "tests/unit/kernel_harness.h"

namespace tessera::backends::cpu {
KernelFn x86_norm_kernel(const std::string& op);
KernelFn x86_axis_kernel(const std::string& op);
}  // namespace tessera::backends::cpu

namespace {

using namespace tessera;
using tessera::kernels::x86::EltIsa;
using tessera::testing::attr_i;
using tessera::testing::attr_ints;

enum class Data { normal, ties };

Tensor random_f32(const Shape& shape, Data kind, unsigned seed) {
  std::mt19937 g(seed);
  std::normal_distribution<float> nd(0.5f, 2.0f);
  std::uniform_int_distribution<int> small(-4, 4);
  Tensor x(DType::f32, shape);
  float* p = x.data<float>();
  for (int64_t i = 0; i < x.numel(); ++i) {
    float v = kind == Data::ties ? float(small(g)) : nd(g);
    if (v == 0 && kind == Data::normal) v = 0.25f;  // never a zero from the random data
    p[i] = v;
  }
  return x;
}

Tensor scalar_i64(int64_t v) {
  Tensor t(DType::i64, {1});
  t.data<int64_t>()[0] = v;
  return t;
}

bool same_bits(float a, float b) {
  return std::memcmp(&a, &b, sizeof a) == 0;
}

std::vector<DataValue> run_ref(const std::string& op, const std::vector<DataValue>& in, const AttrMap& attrs,
                               size_t outs) {
  return tessera::testing::run_ref(op, in, attrs, outs);
}

// Runs the tuned kernel on every ISA and pool and hands each result to check.
template <class Check>
void each_tuned(const std::string& op, KernelFn fn, const std::vector<DataValue>& in, const AttrMap& attrs,
                size_t outs, Check check) {
  ThreadPool pool(2);
  for (const EltIsa isa : {EltIsa::portable, EltIsa::avx2, EltIsa::avx512f}) {
    if (!kernels::x86::eltwise_isa_available(isa)) continue;
    kernels::x86::force_eltwise_isa(isa);
    for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool}) {
      tessera::testing::PoolKernelContext tc(op, in, attrs, outs);
      tc.pool_ = p;
      fn(tc);
      check(tc.outputs(),
            std::string(kernels::x86::eltwise_isa_name(isa)) + (p ? " 2 threads" : " 1 thread"));
    }
    kernels::x86::force_eltwise_isa(isa, true);
  }
}

void expect_close(const std::string& op, const Tensor& x, const AttrMap& attrs) {
  const std::vector<DataValue> in{DataValue(x)};
  const Tensor want = run_ref(op, in, attrs, 1)[0].tensor.contiguous();
  each_tuned(op, backends::cpu::x86_norm_kernel(op), in, attrs, 1,
             [&](std::vector<DataValue>& out, const std::string& where) {
               const Tensor got = out[0].tensor.contiguous();
               ASSERT_EQ(got.shape(), want.shape());
               for (int64_t i = 0; i < want.numel(); ++i) {
                 const float w = want.data<float>()[i], g = got.data<float>()[i];
                 if (std::isnan(w)) {
                   ASSERT_TRUE(std::isnan(g)) << op << " " << where << " element " << i;
                   continue;
                 }
                 ASSERT_NEAR(g, w, 4e-6 * (1 + std::fabs(w)))
                     << op << " " << where << " shape " << x.shape().size() << "-d element " << i;
               }
             });
}

void expect_same_error(const std::string& op, const std::vector<DataValue>& in, const AttrMap& attrs,
                       size_t outs) {
  EXPECT_THROW(run_ref(op, in, attrs, outs), Error) << op;
  tessera::testing::PoolKernelContext tc(op, in, attrs, outs);
  KernelFn fn = backends::cpu::x86_norm_kernel(op);
  if (!fn) fn = backends::cpu::x86_axis_kernel(op);
  EXPECT_THROW(fn(tc), Error) << op;
}

}  // namespace

TEST(X86Norm, MeanVarianceNormalizationMatchesReference) {
  struct Case {
    Shape shape;
    std::vector<int64_t> axes;  // {-100}: the default [0, 2, 3]
  };
  const Case cases[] = {
      {{1, 256, 7, 9}, {-100}},
      {{2, 3, 5, 4}, {-100}},
      {{2, 3, 5, 4}, {2, 3}},
      {{3, 17}, {1}},
      {{3, 17}, {0}},
      {{2, 3, 4, 5}, {1, 3}},
      {{2, 3, 4, 5}, {0, 2}},
      {{5, 16, 16}, {-1}},
      {{4, 1, 33}, {0, 2}},
      {{1}, {0}},
      {{2, 15, 17, 16}, {0, 1, 2, 3}},
      {{7, 13}, {}},
      {{1, 1, 1, 31}, {-100}},
      {{3, 2, 1, 15}, {0, -1}},
      {{40, 37}, {0}},
      {{2, 1031}, {1}},
      {{9, 3, 2}, {1}},
  };
  unsigned seed = 1;
  for (const Case& c : cases) {
    AttrMap attrs;
    if (c.axes.empty() || c.axes[0] != -100) attrs["axes"] = attr_ints(c.axes);
    Tensor x = random_f32(c.shape, Data::normal, seed++);
    expect_close("MeanVarianceNormalization", x, attrs);
  }
  // a constant slice: 0 everywhere (the mean is exact in double)
  Tensor x = random_f32({1, 3, 4, 5}, Data::normal, 99);
  for (int64_t i = 20; i < 40; ++i) x.data<float>()[i] = 0.1f;
  expect_close("MeanVarianceNormalization", x, {});
  x.data<float>()[3] = std::nanf("");  // a NaN spoils its own slice only
  expect_close("MeanVarianceNormalization", x, {});
  // an axis out of range: the reference's error; an axis named twice: the reference's result
  expect_same_error("MeanVarianceNormalization", {DataValue(random_f32({2, 3}, Data::normal, 5))}, {}, 1);
  expect_close("MeanVarianceNormalization", random_f32({2, 3}, Data::normal, 6),
               {{"axes", attr_ints({1, 1})}});
}

TEST(X86Norm, LpNormalizationMatchesReference) {
  struct Case {
    Shape shape;
    int64_t axis;
  };
  const Case cases[] = {{{1, 256, 7, 9}, 1}, {{1, 256, 7, 9}, -1}, {{3, 17}, 0},     {{3, 17}, 1},
                        {{17}, 0},           {{3, 1, 5}, 1},       {{2, 16, 15}, 1}, {{4, 1030}, -1},
                        {{5, 3, 2, 7}, -3},  {{40, 37}, 0}};
  unsigned seed = 11;
  for (const Case& c : cases)
    for (const int64_t p : {1, 2}) {
      const AttrMap attrs{{"axis", attr_i(c.axis)}, {"p", attr_i(p)}};
      expect_close("LpNormalization", random_f32(c.shape, Data::normal, seed++), attrs);
    }
  // a slice of zeros: 0, not NaN; a NaN spoils its own slice only; a huge value does not overflow
  Tensor x = random_f32({4, 6}, Data::normal, 3);
  for (int64_t i = 6; i < 12; ++i) x.data<float>()[i] = 0;
  x.data<float>()[14] = std::nanf("");
  x.data<float>()[20] = 3e30f;
  for (const int64_t p : {1, 2}) {
    expect_close("LpNormalization", x, {{"axis", attr_i(1)}, {"p", attr_i(p)}});
    expect_close("LpNormalization", x, {{"axis", attr_i(0)}, {"p", attr_i(p)}});
  }
  expect_same_error("LpNormalization", {DataValue(x)}, {{"p", attr_i(3)}}, 1);
  expect_same_error("LpNormalization", {DataValue(x)}, {{"axis", attr_i(2)}}, 1);
}

namespace {

void expect_topk(const Tensor& x, int64_t k, int64_t axis, bool largest, bool sorted = true) {
  const std::vector<DataValue> in{DataValue(x), DataValue(scalar_i64(k))};
  const AttrMap attrs{{"axis", attr_i(axis)}, {"largest", attr_i(largest)}, {"sorted", attr_i(sorted)}};
  const std::vector<DataValue> want = run_ref("TopK", in, attrs, 2);
  each_tuned("TopK", backends::cpu::x86_norm_kernel("TopK"), in, attrs, 2,
             [&](std::vector<DataValue>& out, const std::string& where) {
               const Tensor gv = out[0].tensor.contiguous(), gi = out[1].tensor.contiguous();
               const Tensor wv = want[0].tensor.contiguous(), wi = want[1].tensor.contiguous();
               ASSERT_EQ(gv.shape(), wv.shape());
               ASSERT_EQ(gi.shape(), wi.shape());
               for (int64_t i = 0; i < wv.numel(); ++i) {
                 ASSERT_EQ(gi.data<int64_t>()[i], wi.data<int64_t>()[i])
                     << where << " k " << k << " axis " << axis << " largest " << largest << " at " << i;
                 ASSERT_TRUE(same_bits(gv.data<float>()[i], wv.data<float>()[i])) << where << " at " << i;
               }
             });
}

}  // namespace

TEST(X86Norm, TopKMatchesReference) {
  unsigned seed = 21;
  for (const bool largest : {true, false}) {
    for (const Data d : {Data::normal, Data::ties}) {
      const Tensor row = random_f32({2, 10007}, d, seed++);
      for (const int64_t k : {0, 1, 3, 15, 16, 17, 100, 5000, 10007}) expect_topk(row, k, -1, largest);
      const Tensor t3 = random_f32({5, 37, 3}, d, seed++);
      for (const int64_t k : {1, 7, 37}) {
        expect_topk(t3, k, 1, largest);
        expect_topk(t3, k, -2, largest, false);
      }
      expect_topk(t3, 4, 0, largest);
      expect_topk(t3, 3, 2, largest);
    }
    // ascending and descending runs (every element beats the last threshold, or none does)
    Tensor up(DType::f32, {1, 20000});
    for (int64_t i = 0; i < 20000; ++i) up.data<float>()[i] = float(i) * 0.5f + 1;
    Tensor down = up.contiguous();
    for (int64_t i = 0; i < 20000; ++i) down.data<float>()[i] = -up.data<float>()[i];
    for (const int64_t k : {1, 50, 7000}) {
      expect_topk(up, k, 1, largest);
      expect_topk(down, k, 1, largest);
    }
    // NaN (above every number: first for the largest, last for the smallest), -0 and +0 (equal: lower
    // index first), infinities
    Tensor special = random_f32({3, 64}, Data::ties, seed++);
    float* p = special.data<float>();
    p[3] = std::nanf(""), p[40] = -std::nanf(""), p[70] = -0.0f, p[71] = 0.0f, p[72] = -0.0f;
    p[100] = INFINITY, p[101] = -INFINITY, p[130] = std::nanf("");
    for (int64_t i = 140; i < 192; ++i) p[i] = std::nanf("");  // row 2 mostly NaN
    for (const int64_t k : {1, 2, 5, 20, 64}) expect_topk(special, k, 1, largest);
    expect_topk(special, 2, 0, largest);
  }
  const Tensor x = random_f32({3, 5}, Data::normal, 4);
  expect_same_error("TopK", {DataValue(x), DataValue(scalar_i64(6))}, {{"axis", attr_i(1)}}, 2);
  expect_same_error("TopK", {DataValue(x), DataValue(scalar_i64(-1))}, {{"axis", attr_i(1)}}, 2);
  expect_same_error("TopK", {DataValue(x), DataValue(scalar_i64(2))}, {{"axis", attr_i(2)}}, 2);
}

TEST(X86Norm, ArgMaxArgMinMatchReference) {
  unsigned seed = 41;
  struct Case {
    Shape shape;
    int64_t axis;
  };
  const Case cases[] = {{{1, 256, 7, 9}, 1}, {{3, 17, 33}, 1}, {{5, 4}, 0},     {{5, 4}, -1},
                        {{2, 3, 1030}, -2},  {{16, 15}, 0},    {{1, 1, 17}, 1}, {{4, 6, 2, 3}, 0}};
  for (const std::string op : {"ArgMax", "ArgMin"})
    for (const Case& c : cases)
      for (const Data d : {Data::normal, Data::ties})
        for (const int64_t keep : {0, 1})
          for (const int64_t last : {0, 1}) {
            Tensor x = random_f32(c.shape, d, seed++);
            if (x.numel() > 40)
              x.data<float>()[37] = std::nanf(""), x.data<float>()[x.numel() - 1] = std::nanf("");
            const std::vector<DataValue> in{DataValue(x)};
            const AttrMap attrs{
                {"axis", attr_i(c.axis)}, {"keepdims", attr_i(keep)}, {"select_last_index", attr_i(last)}};
            const Tensor want = run_ref(op, in, attrs, 1)[0].tensor.contiguous();
            each_tuned(op, backends::cpu::x86_axis_kernel(op), in, attrs, 1,
                       [&](std::vector<DataValue>& out, const std::string& where) {
                         const Tensor got = out[0].tensor.contiguous();
                         ASSERT_EQ(got.shape(), want.shape());
                         for (int64_t i = 0; i < want.numel(); ++i)
                           ASSERT_EQ(got.data<int64_t>()[i], want.data<int64_t>()[i])
                               << op << " " << where << " axis " << c.axis << " last " << last << " at " << i;
                       });
          }
}

TEST(X86Norm, CumSumMatchesReferenceExactly) {
  unsigned seed = 61;
  struct Case {
    Shape shape;
    int64_t axis;
  };
  const Case cases[] = {{{1, 300, 512}, 1}, {{2, 5, 3}, 0},    {{2, 5, 3}, 1},
                        {{2, 5, 3}, -1},    {{4, 7, 1030}, 1}, {{3, 17, 15}, -2},
                        {{1, 4096, 17}, 1}, {{16}, 0},         {{5, 2, 16}, 0}};
  for (const Case& c : cases)
    for (const int64_t excl : {0, 1})
      for (const int64_t rev : {0, 1}) {
        const Tensor x = random_f32(c.shape, Data::normal, seed++);
        const std::vector<DataValue> in{DataValue(x), DataValue(scalar_i64(c.axis))};
        const AttrMap attrs{{"exclusive", attr_i(excl)}, {"reverse", attr_i(rev)}};
        const Tensor want = run_ref("CumSum", in, attrs, 1)[0].tensor.contiguous();
        each_tuned("CumSum", backends::cpu::x86_axis_kernel("CumSum"), in, attrs, 1,
                   [&](std::vector<DataValue>& out, const std::string& where) {
                     const Tensor got = out[0].tensor.contiguous();
                     ASSERT_EQ(got.shape(), want.shape());
                     for (int64_t i = 0; i < want.numel(); ++i)
                       ASSERT_TRUE(same_bits(got.data<float>()[i], want.data<float>()[i]))
                           << where << " axis " << c.axis << " excl " << excl << " rev " << rev << " at " << i
                           << ": " << got.data<float>()[i] << " vs " << want.data<float>()[i];
                   });
      }
}
