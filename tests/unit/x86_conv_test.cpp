// Tuned conv2d against a direct double-precision loop: pointwise, im2col and
// depthwise paths, strides, dilations, asymmetric padding, groups, fused epilogue.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kernels/x86/conv2d.h"

using namespace tessera;
using namespace tessera::kernels::x86;

namespace {

void reference(const Conv2dParams& p, const std::vector<float>& x, const std::vector<float>& w,
               const ConvEpilogue& ep, std::vector<float>& y) {
  const int64_t cg = p.c / p.groups, ocg = p.oc / p.groups, oh = p.oh(), ow = p.ow();
  for (int64_t b = 0; b < p.n; ++b)
    for (int64_t o = 0; o < p.oc; ++o) {
      const int64_t g = o / ocg;
      for (int64_t oy = 0; oy < oh; ++oy)
        for (int64_t ox = 0; ox < ow; ++ox) {
          double s = ep.bias ? ep.bias[o] : 0.0;
          for (int64_t ci = 0; ci < cg; ++ci)
            for (int64_t r = 0; r < p.kh; ++r)
              for (int64_t q = 0; q < p.kw; ++q) {
                const int64_t iy = oy * p.sh - p.pad_t + r * p.dh, ix = ox * p.sw - p.pad_l + q * p.dw;
                if (iy < 0 || iy >= p.h || ix < 0 || ix >= p.w) continue;
                s += double(x[((b * p.c + g * cg + ci) * p.h + iy) * p.w + ix]) *
                     w[((o * cg + ci) * p.kh + r) * p.kw + q];
              }
          const int64_t idx = ((b * p.oc + o) * oh + oy) * ow + ox;
          if (ep.residual) s += ep.residual[idx];
          if (ep.act == Activation::relu) s = std::max(s, 0.0);
          if (ep.act == Activation::clip) s = std::min(std::max(s, double(ep.clip_min)), double(ep.clip_max));
          y[size_t(idx)] = float(s);
        }
    }
}

void run_case(Conv2dParams p, bool fused, ThreadPool* pool) {
  std::mt19937 rng(unsigned(p.c * 31 + p.oc * 7 + p.kh));
  std::uniform_real_distribution<float> d(-1, 1);
  auto fill = [&](size_t n) {
    std::vector<float> v(n);
    for (auto& e : v) e = d(rng);
    return v;
  };
  const int64_t oh = p.oh(), ow = p.ow();
  auto x = fill(size_t(p.n * p.c * p.h * p.w));
  auto w = fill(size_t(p.oc * (p.c / p.groups) * p.kh * p.kw));
  auto bias = fill(size_t(p.oc));
  auto res = fill(size_t(p.n * p.oc * oh * ow));
  ConvEpilogue ep;
  if (fused) {
    ep.bias = bias.data();
    ep.residual = res.data();
    ep.act = (p.kh % 2) ? Activation::relu : Activation::clip;
    ep.clip_min = -0.3f;
    ep.clip_max = 0.8f;
  }
  std::vector<float> want(res.size()), got(res.size(), 123.f), scratch(conv2d_scratch_floats(p) + 1);
  reference(p, x, w, ep, want);
  conv2d_f32(p, x.data(), w.data(), ep, got.data(), scratch.data(), pool);
  const double tol = 1e-5 * std::sqrt(double(p.c / p.groups * p.kh * p.kw)) * 8;
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_NEAR(got[i], want[i], tol * (1 + std::fabs(want[i]))) << "at " << i << " c=" << p.c << " oc=" << p.oc
                                                                  << " k=" << p.kh << "x" << p.kw << " g=" << p.groups;
}

}  // namespace

TEST(X86Conv, MatchesReference) {
  ThreadPool pool(2);
  std::vector<Conv2dParams> cases;
  auto mk = [](int64_t n, int64_t c, int64_t h, int64_t w, int64_t oc, int64_t k, int64_t s, int64_t d, int64_t pad,
               int64_t g) {
    Conv2dParams p;
    p.n = n, p.c = c, p.h = h, p.w = w, p.oc = oc, p.kh = k, p.kw = k, p.sh = s, p.sw = s, p.dh = d, p.dw = d;
    p.pad_t = p.pad_l = pad;
    p.pad_b = p.pad_r = pad;
    p.groups = g;
    return p;
  };
  cases.push_back(mk(1, 3, 17, 19, 8, 3, 1, 1, 1, 1));
  cases.push_back(mk(2, 16, 9, 9, 33, 1, 1, 1, 0, 1));   // pointwise
  cases.push_back(mk(1, 8, 15, 13, 8, 3, 2, 1, 1, 8));   // depthwise stride 2
  cases.push_back(mk(1, 12, 11, 11, 12, 5, 1, 2, 4, 12));  // depthwise dilated
  cases.push_back(mk(1, 8, 10, 10, 6, 3, 2, 1, 2, 2));   // grouped
  cases.push_back(mk(1, 3, 23, 23, 7, 7, 2, 1, 3, 1));   // resnet stem-like
  cases.push_back(mk(1, 4, 5, 5, 5, 1, 2, 1, 0, 1));     // 1x1 stride 2 (not pointwise)
  Conv2dParams asym = mk(1, 5, 8, 9, 4, 3, 1, 1, 0, 1);
  asym.pad_t = 0, asym.pad_b = 2, asym.pad_l = 1, asym.pad_r = 0;
  cases.push_back(asym);
  int i = 0;
  for (const auto& p : cases) {
    run_case(p, (i % 2) == 0, (i % 3) ? &pool : nullptr);
    run_case(p, (i % 2) == 1, nullptr);
    ++i;
  }
}
