// tessera.FusedElementwise: program validation, and the tuned interpreter
// (kernels/x86/eltwise_program.h) against the reference kernel on random
// programs over random broadcast shapes, under each ISA this CPU has.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "core/ew_program.h"
#include "core/thread_pool.h"
#include "kernels/x86/eltwise.h"
#include "tests/unit/kernel_harness.h"

namespace tessera::backends::cpu {
KernelFn x86_eltwise_kernel(const std::string& op_type);
}

namespace {

using namespace tessera;
namespace x86 = tessera::kernels::x86;
using tessera::testing::attr_i;
using tessera::testing::attr_ints;

using PoolCtx = tessera::testing::PoolKernelContext;

TEST(EwProgram, DecodeRejectsMalformed) {
  // x0 + x1 -> r2; erf(r2) -> out
  EXPECT_TRUE(ew_decode({int64_t(EwOp::add), 2, 0, 1, int64_t(EwOp::erf), -1, 2, -1}, 2, 1));
  EXPECT_FALSE(ew_decode({}, 1, 0));                               // empty
  EXPECT_FALSE(ew_decode({int64_t(EwOp::add), -1, 0}, 2, 0));      // not 4 per instruction
  EXPECT_FALSE(ew_decode({99, -1, 0, 1}, 2, 0));                   // bad op code
  EXPECT_FALSE(ew_decode({int64_t(EwOp::add), -1, 0, 5}, 2, 0));   // operand out of range
  EXPECT_FALSE(ew_decode({int64_t(EwOp::exp), -1, 0, 1}, 2, 0));   // unary with a second operand
  EXPECT_FALSE(ew_decode({int64_t(EwOp::exp), -1, 2, -1}, 2, 1));  // register read before written
  EXPECT_FALSE(
      ew_decode({int64_t(EwOp::exp), 0, 0, -1, int64_t(EwOp::exp), -1, 0, -1}, 2, 1));  // writes an input
  EXPECT_FALSE(ew_decode({int64_t(EwOp::exp), 2, 0, -1}, 2, 1));  // last must write the output
}

Tensor rand_f32(const Shape& s, std::mt19937& g) {
  Tensor t(DType::f32, s);
  std::uniform_real_distribution<float> d(-2.0f, 2.0f);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = d(g);
  return t;
}

TEST(FusedElementwise, TunedMatchesReferenceOnRandomPrograms) {
  std::mt19937 g(7);
  ThreadPool pool(3);
  // Output shapes and, per shape, the input shapes that broadcast to it.
  const std::vector<std::pair<Shape, std::vector<Shape>>> cases = {
      {{1000}, {{1000}, {1}, {}}},
      {{3, 5, 17}, {{3, 5, 17}, {17}, {5, 17}, {1}}},
      {{4, 33}, {{4, 33}, {4, 1}, {1, 33}, {}}},
      {{2, 12, 513}, {{2, 12, 513}, {513}, {2, 12, 1}}},
      {{197, 3072}, {{197, 3072}, {3072}, {}}},
      {{7, 1, 9}, {{7, 1, 9}, {9}}},
  };
  std::vector<x86::EltIsa> isas;
  for (auto i : {x86::EltIsa::portable, x86::EltIsa::avx2, x86::EltIsa::avx512f})
    if (x86::eltwise_isa_available(i)) isas.push_back(i);
  KernelFn tuned = backends::cpu::x86_eltwise_kernel("FusedElementwise");
  KernelFn ref = kernels::ref::KernelTable::instance().find("tessera", "FusedElementwise");
  ASSERT_TRUE(tuned && ref);
  int checked = 0;
  for (int trial = 0; trial < 60; ++trial) {
    const auto& [out_shape, in_shapes] = cases[size_t(trial) % cases.size()];
    const int n_in = 1 + int(g() % 3);
    std::vector<DataValue> inputs;
    inputs.push_back(rand_f32(out_shape, g));  // one full-size input fixes the output shape
    for (int i = 1; i < n_in; ++i) inputs.push_back(rand_f32(in_shapes[g() % in_shapes.size()], g));
    // A random DAG: each instruction reads inputs or earlier registers.
    const int n_ins = 1 + int(g() % 7);
    std::vector<int64_t> prog;
    for (int k = 0; k < n_ins; ++k) {
      const EwOp op = EwOp(g() % 12);
      const int64_t avail = n_in + k;  // operands 0..avail-1 are readable
      const int64_t dst = k + 1 == n_ins ? -1 : n_in + k;
      const int64_t a = int64_t(g() % uint64_t(avail));
      const int64_t b = ew_arity(op) == 2 ? int64_t(g() % uint64_t(avail)) : -1;
      prog.insert(prog.end(), {int64_t(op), dst, a, b});
    }
    const AttrMap attrs = {{"program", attr_ints(prog)}, {"num_registers", attr_i(n_ins - 1)}};
    tessera::testing::TestKernelContext rc("FusedElementwise", inputs, attrs, 1);
    ref(rc);
    const Tensor& want = rc.outputs()[0].tensor;
    for (auto isa : isas) {
      x86::force_eltwise_isa(isa);
      PoolCtx tc("FusedElementwise", inputs, attrs, 1);
      tc.pool_ = trial % 2 ? &pool : nullptr;
      tuned(tc);
      x86::force_eltwise_isa(x86::EltIsa::portable, true);
      const Tensor& got = tc.outputs()[0].tensor;
      ASSERT_EQ(got.shape(), want.shape());
      int bad = 0;
      for (int64_t i = 0; i < want.numel() && bad < 3; ++i) {
        const float w = want.data<float>()[i], r = got.data<float>()[i];
        const bool ok = std::isnan(w)   ? std::isnan(r)
                        : std::isinf(w) ? r == w
                                        : std::fabs(r - w) <= 2e-5f * std::fabs(w) + 2e-6f;
        if (!ok)
          ++bad, ADD_FAILURE() << "trial " << trial << " isa " << x86::eltwise_isa_name(isa) << " [" << i
                               << "] got " << r << " want " << w;
      }
      ++checked;
    }
  }
  EXPECT_GE(checked, 60);
}

TEST(FusedElementwise, BadInputsGiveErrors) {
  KernelFn tuned = backends::cpu::x86_eltwise_kernel("FusedElementwise");
  const std::vector<int64_t> prog = {int64_t(EwOp::add), -1, 0, 1};
  const AttrMap attrs = {{"program", attr_ints(prog)}, {"num_registers", attr_i(0)}};
  std::mt19937 g(1);
  tessera::testing::TestKernelContext c1("FusedElementwise", {rand_f32({3}, g), rand_f32({4}, g)}, attrs, 1);
  EXPECT_THROW(tuned(c1), Error);  // shapes do not broadcast
  tessera::testing::TestKernelContext c2("FusedElementwise", {rand_f32({3}, g)}, attrs, 1);
  EXPECT_THROW(tuned(c2), Error);  // program reads a missing input
}

}  // namespace
