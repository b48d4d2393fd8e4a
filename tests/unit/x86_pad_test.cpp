// Pad of f32 tensors: the x86 binding against the reference kernel, over every mode, ranks 1 to 5, pads
// wider than the axis (reflect and wrap repeat), axes given, a constant value, one and two threads; pads
// that crop go to the reference (the same result).
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "core/thread_pool.h"
#include "tests/unit/kernel_harness.h"

namespace tessera::backends::cpu {
KernelFn x86_pad_kernel();
}

namespace {

using namespace tessera;
using tessera::testing::attr_s;

Tensor ints(const std::vector<int64_t>& v) {
  Tensor t(DType::i64, {int64_t(v.size())});
  for (size_t i = 0; i < v.size(); ++i) t.data<int64_t>()[i] = v[i];
  return t;
}

void check(const Shape& shape, const std::vector<int64_t>& pads, const std::string& mode,
           const std::vector<int64_t>& axes = {}, float value = 0) {
  std::mt19937 g(unsigned(shape.size() * 7 + pads.size()));
  std::uniform_real_distribution<float> d(-1, 1);
  Tensor x(DType::f32, shape);
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = d(g);
  Tensor v(DType::f32, {});
  v.data<float>()[0] = value;
  std::vector<DataValue> in{DataValue(x), DataValue(ints(pads)), DataValue(v)};
  if (!axes.empty()) in.push_back(DataValue(ints(axes)));
  AttrMap attrs{{"mode", attr_s(mode)}};
  tessera::testing::TestKernelContext rc("Pad", in, attrs, 1);
  kernels::ref::KernelTable::instance().find("", "Pad")(rc);
  const Tensor want = rc.outputs()[0].tensor.contiguous();
  ThreadPool pool(2);
  for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool}) {
    tessera::testing::PoolKernelContext tc("Pad", in, attrs, 1);
    tc.pool_ = p;
    backends::cpu::x86_pad_kernel()(tc);
    const Tensor got = tc.outputs()[0].tensor.contiguous();
    ASSERT_EQ(got.shape(), want.shape()) << mode;
    for (int64_t i = 0; i < want.numel(); ++i)
      ASSERT_EQ(got.data<float>()[i], want.data<float>()[i]) << mode << " element " << i;
  }
}

}  // namespace

TEST(X86Pad, MatchesReference) {
  for (const char* mode : {"constant", "reflect", "edge", "wrap"}) {
    check({1, 5, 9, 11}, {0, 0, 4, 4, 0, 0, 4, 4}, mode);           // ReflectionPad2d(4)
    check({2, 3, 6, 7}, {0, 1, 1, 2, 1, 0, 3, 1}, mode, {}, 2.5f);  // every axis, asymmetric
    check({13}, {30, 17}, mode);                                    // wider than the axis: repeats
    check({2, 3, 4, 5, 6}, {1, 2, 2, 1}, mode, {2, -1});            // axes given (opset 18)
    check({3, 1, 4}, {0, 2, 1, 0, 3, 2}, mode);                     // a length-1 axis
  }
  check({4, 6}, {-1, 2, 0, -2}, "constant");  // cropping: the reference's
}
