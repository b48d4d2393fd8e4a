// tessera.FusedPwDwConv: the x86 binding (the band-of-rows kernel) against the reference kernel (the
// convs one after the other) in each of the node's forms: expansion + depthwise, + a projection with the
// block's residual, and a depthwise conv + projection without an expansion; one and two threads.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "core/thread_pool.h"
#include "kernels/x86/conv_nhwc.h"
#include "tests/unit/kernel_harness.h"

namespace tessera::backends::cpu {
KernelFn x86_fused_pw_dw_conv_kernel();
}

namespace {

using namespace tessera;
using tessera::testing::attr_f;
using tessera::testing::attr_i;
using tessera::testing::attr_ints;
using tessera::testing::attr_s;

using PoolCtx = tessera::testing::PoolKernelContext;

Tensor rand_f32(const Shape& s, std::mt19937& g) {
  Tensor t(DType::f32, s);
  std::normal_distribution<float> d(0.0f, 1.0f);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = d(g);
  return t;
}

// A dense 1x1 conv's weights [oc, c] packed as the NHWC kernels take them.
Tensor packed_1x1(int64_t oc, int64_t c, std::mt19937& g) {
  const Tensor w = rand_f32({oc, c}, g);
  Tensor p(DType::f32, {int64_t(kernels::x86::conv_nhwc_packed_floats(oc, c))});
  kernels::x86::conv_nhwc_pack_weights(w.data<float>(), oc, c, 1, 1, p.data<float>());
  return p;
}

// The reference kernel's output (of shape `shape`) against the binding's, at one and two threads, within
// 1e-5 of the output's largest magnitude.
void expect_binding_matches_reference(const std::vector<DataValue>& in, const AttrMap& attrs,
                                      const Shape& shape, ThreadPool& pool, const std::string& label) {
  tessera::testing::TestKernelContext rc("FusedPwDwConv", in, attrs, 1);
  kernels::ref::KernelTable::instance().find("tessera", "FusedPwDwConv")(rc);
  const Tensor want = rc.outputs()[0].tensor.contiguous();
  ASSERT_EQ(want.shape(), shape) << label;
  float peak = 0;
  for (int64_t i = 0; i < want.numel(); ++i) peak = std::max(peak, std::fabs(want.data<float>()[i]));
  for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool}) {
    PoolCtx tc("FusedPwDwConv", in, attrs, 1);
    tc.pool_ = p;
    backends::cpu::x86_fused_pw_dw_conv_kernel()(tc);
    const Tensor got = tc.outputs()[0].tensor.contiguous();
    ASSERT_EQ(got.shape(), want.shape()) << label;
    for (int64_t i = 0; i < want.numel(); ++i)
      ASSERT_NEAR(got.data<float>()[i], want.data<float>()[i], 1e-5f * peak)
          << label << " threads " << (p ? 2 : 1) << " at " << i;
  }
}

TEST(X86PwDwBinding, MatchesReferenceInEveryForm) {
  ThreadPool pool(2);
  std::mt19937 g(3);
  const int64_t n = 2, h = 23, w = 19, c = 24, e = 96, pj = 24;
  for (const int form : {0, 1, 2}) {  // pair, pair + projection + residual, depthwise + projection
    const bool expand = form<2, proj = form> 0;
    const int64_t ce = expand ? e : c;  // the depthwise conv's channels
    std::vector<DataValue> in = {
        rand_f32({n, h, w, c}, g), expand ? DataValue(packed_1x1(e, c, g)) : DataValue(),
        expand ? DataValue(rand_f32({e}, g)) : DataValue(), rand_f32({9 * ce}, g), rand_f32({ce}, g)};
    AttrMap attrs = {{"channels", attr_i(ce)},       {"kernel_shape", attr_ints({3, 3})},
                     {"strides", attr_ints({1, 1})}, {"pads", attr_ints({1, 1, 1, 1})},
                     {"activation", attr_s("Clip")}, {"clip_min", attr_f(0.0f)},
                     {"clip_max", attr_f(6.0f)},     {"pw_activation", attr_s("Relu")}};
    if (proj) {
      in.push_back(packed_1x1(pj, ce, g));
      in.push_back(rand_f32({pj}, g));
      in.push_back(form == 1 ? DataValue(rand_f32({n, h, w, pj}, g)) : DataValue());
      attrs["proj_channels"] = attr_i(pj);
      attrs["proj_activation"] = attr_s(form == 2 ? "Relu" : "");
    }
    expect_binding_matches_reference(in, attrs, Shape{n, h, w, proj ? pj : ce}, pool,
                                     "form " + std::to_string(form));
  }
}

// A stem producer (pw_input_layout NCHW: a 3x3 conv over the NCHW image, packed as a dense FusedConv's)
// feeding the depthwise conv and a projection, against the reference (the stem FusedConv, then the rest);
// odd sizes, strides 1 and 2, two images, one and two threads. Skipped where the stem kernel does not apply
// (no AVX-512: the binding runs the reference itself).
TEST(X86PwDwBinding, StemProducerMatchesReference) {
  ThreadPool pool(2);
  std::mt19937 g(5);
  const int64_t c = 3, e = 32, pj = 16;
  for (const auto& [n, h, w, s] :
       std::vector<std::array<int64_t, 4>>{{1, 37, 45, 2}, {2, 23, 19, 2}, {1, 20, 33, 1}}) {
    kernels::x86::Conv2dParams sp;
    sp.n = n, sp.c = c, sp.h = h, sp.w = w, sp.oc = e, sp.kh = sp.kw = 3, sp.sh = sp.sw = s;
    sp.pad_t = sp.pad_l = sp.pad_b = sp.pad_r = 1;
    if (!kernels::x86::conv_nchw_in_applies(sp, kernels::x86::conv_isa()))
      GTEST_SKIP() << "no AVX-512 stem kernel";
    const Tensor ws = rand_f32({e, c * 9}, g);
    Tensor w1(DType::f32, {int64_t(kernels::x86::conv_nhwc_packed_floats(e, c * 9))});
    kernels::x86::conv_nhwc_pack_weights(ws.data<float>(), e, c, 3, 3, w1.data<float>());
    const std::vector<DataValue> in = {rand_f32({n, c, h, w}, g), w1,
                                       rand_f32({e}, g),          rand_f32({9 * e}, g),
                                       rand_f32({e}, g),          packed_1x1(pj, e, g),
                                       rand_f32({pj}, g),         DataValue()};
    const AttrMap attrs = {{"channels", attr_i(e)},
                           {"kernel_shape", attr_ints({3, 3})},
                           {"strides", attr_ints({1, 1})},
                           {"pads", attr_ints({1, 1, 1, 1})},
                           {"activation", attr_s("Clip")},
                           {"clip_min", attr_f(0.0f)},
                           {"clip_max", attr_f(6.0f)},
                           {"pw_activation", attr_s("Clip")},
                           {"pw_clip_min", attr_f(0.0f)},
                           {"pw_clip_max", attr_f(6.0f)},
                           {"pw_input_layout", attr_s("NCHW")},
                           {"pw_kernel_shape", attr_ints({3, 3})},
                           {"pw_strides", attr_ints({s, s})},
                           {"pw_pads", attr_ints({1, 1, 1, 1})},
                           {"proj_channels", attr_i(pj)}};
    expect_binding_matches_reference(
        in, attrs, Shape{n, sp.oh(), sp.ow(), pj}, pool,
        std::to_string(h) + "x" + std::to_string(w) + " stride " + std::to_string(s));
  }
}

}  // namespace
