// 3-D convs as sums of 2-D NHWC convs (kernels/x86/conv3d.h) against a direct double-precision loop over
// NCDHW: dense (direct and Winograd taps), depthwise and grouped taps; strides and dilations in depth;
// padding that leaves no tap covering every output plane (the planes start as the bias); batches; bias,
// residual and activation; the packing read back tap by tap.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "kernels/x86/conv3d.h"

using namespace tessera;
using namespace tessera::kernels::x86;

namespace {

struct Case {
  int64_t n, c, d, h, w, oc, groups, kd, kh, kw, sd, sh, dd, dh, pf, pk, pt, pb;
  bool residual;
  Activation act;
};

Conv3dParams params(const Case& k) {
  Conv3dParams p;
  p.n = k.n, p.d = k.d, p.kd = k.kd, p.sd = k.sd, p.dd = k.dd, p.pad_f = k.pf, p.pad_k = k.pk;
  p.s.c = k.c, p.s.h = k.h, p.s.w = k.w, p.s.oc = k.oc, p.s.groups = k.groups, p.s.kh = k.kh, p.s.kw = k.kw;
  p.s.sh = p.s.sw = k.sh, p.s.dh = p.s.dw = k.dh;
  p.s.pad_t = k.pt, p.s.pad_b = k.pb, p.s.pad_l = k.pb, p.s.pad_r = k.pt;  // asymmetric across the axes
  return p;
}

// x, y NCDHW; w [oc, c / groups, kd, kh, kw].
std::vector<float> reference(const Conv3dParams& p, const std::vector<float>& x, const std::vector<float>& w,
                             const std::vector<float>& bias, const float* residual, Activation act) {
  const Conv2dParams& s = p.s;
  const int64_t cg = s.c / s.groups, ocg = s.oc / s.groups, od = p.od(), oh = s.oh(), ow = s.ow();
  std::vector<float> y(size_t(p.n * s.oc * od * oh * ow));
  size_t idx = 0;
  for (int64_t b = 0; b < p.n; ++b)
    for (int64_t o = 0; o < s.oc; ++o)
      for (int64_t z = 0; z < od; ++z)
        for (int64_t oy = 0; oy < oh; ++oy)
          for (int64_t ox = 0; ox < ow; ++ox, ++idx) {
            double acc = bias[size_t(o)];
            const int64_t g = o / ocg;
            for (int64_t ci = 0; ci < cg; ++ci)
              for (int64_t t = 0; t < p.kd; ++t)
                for (int64_t r = 0; r < s.kh; ++r)
                  for (int64_t q = 0; q < s.kw; ++q) {
                    const int64_t iz = z * p.sd - p.pad_f + t * p.dd, iy = oy * s.sh - s.pad_t + r * s.dh,
                                  ix = ox * s.sw - s.pad_l + q * s.dw;
                    if (iz < 0 || iz >= p.d || iy < 0 || iy >= s.h || ix < 0 || ix >= s.w) continue;
                    acc += double(x[size_t((((b * s.c + g * cg + ci) * p.d + iz) * s.h + iy) * s.w + ix)]) *
                           w[size_t((((o * cg + ci) * p.kd + t) * s.kh + r) * s.kw + q)];
                  }
            if (residual) acc += residual[idx];
            if (act == Activation::relu) acc = std::max(acc, 0.0);
            if (act == Activation::clip) acc = std::min(std::max(acc, -0.5), 0.5);
            y[idx] = float(acc);
          }
  return y;
}

// Runs the case with the given Winograd tile (-1: the one conv3d_winograd picks) and checks y.
void run_case(const Case& k, int wino, ThreadPool* pool) {
  const Conv3dParams p = params(k);
  ASSERT_TRUE(conv3d_applies(p));
  if (wino < 0) wino = conv3d_winograd(p);
  std::mt19937 rng(unsigned(k.c * 131 + k.oc * 17 + k.kd * 5 + k.sd + wino));
  std::uniform_real_distribution<float> u(-1, 1);
  auto fill = [&](size_t n) {
    std::vector<float> v(n);
    for (float& e : v) e = u(rng);
    return v;
  };
  const int64_t ysize = p.n * k.oc * p.od() * p.s.oh() * p.s.ow();
  const auto x = fill(size_t(p.n * k.c * k.d * k.h * k.w));
  const auto w = fill(size_t(k.oc * (k.c / k.groups) * k.kd * k.kh * k.kw));
  const auto bias = fill(size_t(k.oc)), res = fill(size_t(ysize));
  std::vector<float> packed(size_t(p.kd) * conv3d_slice_floats(p, wino));
  conv3d_pack_weights(w.data(), p, wino, packed.data());
  ConvEpilogue ep;
  ep.bias = bias.data();
  ep.residual = k.residual ? res.data() : nullptr;
  ep.act = k.act, ep.clip_min = -0.5f, ep.clip_max = 0.5f;
  std::vector<float> y(size_t(ysize), std::nanf(""));
  conv3d_f32(p, wino, x.data(), packed.data(), ep, y.data(), pool);
  const auto want = reference(p, x, w, bias, ep.residual, k.act);
  float scale = 1e-3f;
  for (float v : want) scale = std::max(scale, std::fabs(v));
  const float tol = (wino ? 2e-5f : 2e-6f) * scale * std::sqrt(float(k.c / k.groups * k.kd * k.kh * k.kw));
  for (size_t i = 0; i < y.size(); ++i)
    ASSERT_NEAR(y[i], want[i], tol) << "element " << i << " of " << y.size() << ", c " << k.c << " oc "
                                    << k.oc << " kd " << k.kd << " sd " << k.sd << " wino " << wino;
  // the packing reads back as the filter (Winograd's through its inverse transform, in double)
  const int64_t cg = k.c / k.groups;
  for (int64_t o = 0; o < k.oc; o += std::max<int64_t>(1, k.oc / 5))
    for (int64_t t = 0; t < k.kd; ++t)
      EXPECT_NEAR(conv3d_packed_at(packed.data(), p, wino, o, cg - 1, t, k.kh - 1, 0),
                  w[size_t((((o * cg + cg - 1) * k.kd + t) * k.kh + k.kh - 1) * k.kw)], 1e-4);
}

const Case kCases[] = {
    // n  c  d  h  w  oc grp kd kh kw sd sh dd dh pf pk pt pb  residual act
    {1, 16, 5, 12, 12, 24, 1, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, false, Activation::relu},  // r3d's block conv
    {2, 8, 6, 10, 9, 20, 1, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, true, Activation::relu},  // + residual, 2 clips
    {1, 8, 7, 9, 9, 16, 1, 3, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, false, Activation::none},  // stride 2 everywhere
    {1, 12, 7, 9, 11, 40, 1, 1, 1, 1, 2, 2, 1, 1, 0, 0, 0, 0, false, Activation::none},  // the 1x1x1 shortcut
    {1, 3, 6, 23, 23, 17, 1, 3, 7, 7, 1, 2, 1, 1, 1, 1, 3, 3, false, Activation::relu},  // a (3, 7, 7) stem
    {1, 32, 5, 8, 8, 32, 32, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, true, Activation::clip},   // depthwise
    {1, 64, 4, 6, 7, 64, 16, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, false, Activation::relu},  // grouped, 4 a group
    {1, 10, 9, 8, 8, 18, 1, 3, 3, 3, 1, 1, 2, 2, 2, 0, 2, 1, false, Activation::none},   // dilated, one-sided
    {1, 6, 3, 7, 7, 9, 1, 2, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, true, Activation::none},      // no tap covers all
    {1, 5, 2, 6, 6, 7, 1, 2, 3, 3, 1, 1, 1, 1, 3, 3, 0, 2, false, Activation::relu},  // planes no tap reaches
};

}  // namespace

TEST(X86Conv3d, MatchesReference) {
  ThreadPool pool(2);
  for (const Case& k : kCases) {
    run_case(k, -1, &pool);
    run_case(k, 0, nullptr);
  }
}

TEST(X86Conv3d, WinogradTapsMatchReference) {
  ThreadPool pool(2);
  for (const Case& k : kCases) {
    const Conv3dParams p = params(k);
    if (!wino_applies(p.s)) continue;
    for (int m : {2, 4}) run_case(k, m, &pool);
  }
}

TEST(X86Conv3d, PicksWinogradForManyTiles) {
  Conv3dParams p = params(kCases[0]);
  p.d = 8, p.s.h = p.s.w = 56;  // r3d_18's first stage: 8 planes of 56 x 56
  EXPECT_EQ(conv3d_winograd(p), 4);
  p.d = 1, p.s.h = p.s.w = 7;  // its last: one 7 x 7 plane, 16 tiles of F(2x2): direct
  EXPECT_EQ(conv3d_winograd(p), 0);
  p.s.kh = 1, p.s.kw = 1, p.s.pad_t = p.s.pad_b = p.s.pad_l = p.s.pad_r = 0;
  EXPECT_EQ(conv3d_winograd(p), 0);
}
