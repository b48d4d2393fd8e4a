// NHWC conv / depthwise / max-pool kernels (kernels/x86/conv_nhwc.h) against a
// direct double-precision loop, on every ISA this CPU has (portable, AVX2,
// AVX-512): tile edges (C, OC below / at / above 16, 24, 48, 64; pixel counts that
// are not multiples of MR), K blocks split over channels (C > 512), many taps,
// strides, dilations, asymmetric padding, several images, fused epilogues.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "kernels/x86/conv_nhwc.h"
#include "kernels/x86/roofline.h"

using namespace tessera;
using namespace tessera::kernels::x86;

namespace {

std::vector<ConvIsa> isas() {
  std::vector<ConvIsa> v;
  for (ConvIsa i : {ConvIsa::portable, ConvIsa::avx2, ConvIsa::avx512f})
    if (conv_isa_available(i)) v.push_back(i);
  return v;
}

// n values uniform in [-1, 1).
std::vector<float> random_floats(std::mt19937& rng, size_t n) {
  std::uniform_real_distribution<float> d(-1, 1);
  std::vector<float> v(n);
  for (auto& e : v) e = d(rng);
  return v;
}

// x NHWC, w OIHW (ONNX), y NHWC.
void reference(const Conv2dParams& p, const std::vector<float>& x, const std::vector<float>& w,
               const ConvEpilogue& ep, std::vector<float>& y) {
  const int64_t cg = p.c / p.groups, ocg = p.oc / p.groups, oh = p.oh(), ow = p.ow();
  for (int64_t b = 0; b < p.n; ++b)
    for (int64_t oy = 0; oy < oh; ++oy)
      for (int64_t ox = 0; ox < ow; ++ox)
        for (int64_t o = 0; o < p.oc; ++o) {
          const int64_t g = o / ocg;
          double s = ep.bias ? ep.bias[o] : 0.0;
          for (int64_t ci = 0; ci < cg; ++ci)
            for (int64_t r = 0; r < p.kh; ++r)
              for (int64_t q = 0; q < p.kw; ++q) {
                const int64_t iy = oy * p.sh - p.pad_t + r * p.dh, ix = ox * p.sw - p.pad_l + q * p.dw;
                if (iy < 0 || iy >= p.h || ix < 0 || ix >= p.w) continue;
                s += double(x[((b * p.h + iy) * p.w + ix) * p.c + g * cg + ci]) *
                     w[((o * cg + ci) * p.kh + r) * p.kw + q];
              }
          const int64_t idx = ((b * oh + oy) * ow + ox) * p.oc + o;
          if (ep.residual) s += ep.residual[idx];
          if (ep.act == Activation::relu) s = std::max(s, 0.0);
          if (ep.act == Activation::clip) s = std::min(std::max(s, double(ep.clip_min)), double(ep.clip_max));
          if (ep.act == Activation::silu) s = s / (1.0 + std::exp(-s));
          if (ep.act == Activation::hardswish) s = s * std::max(0.0, std::min(1.0, s / 6.0 + 0.5));
          y[size_t(idx)] = float(s);
        }
}

void run_case(const Conv2dParams& p, int fused, ThreadPool* pool, ConvIsa isa, int wino = 0) {
  std::mt19937 rng(unsigned(p.c * 31 + p.oc * 7 + p.kh * 3 + p.sh));
  auto fill = [&](size_t n) { return random_floats(rng, n); };
  const int64_t oh = p.oh(), ow = p.ow();
  auto x = fill(size_t(p.n * p.c * p.h * p.w));
  auto w = fill(size_t(p.oc * (p.c / p.groups) * p.kh * p.kw));
  auto bias = fill(size_t(p.oc));
  auto res = fill(size_t(p.n * p.oc * oh * ow));
  ConvEpilogue ep;
  if (fused >= 1) ep.bias = bias.data();
  if (fused == 3) {  // MobileNet's expansion: bias and Clip (MobileNetV3's: HardSwish), no residual
    ep.act = p.oc % 2 ? Activation::hardswish : Activation::clip;
    ep.clip_min = 0.0f;
    ep.clip_max = 0.6f;
  } else if (fused >= 2) {
    ep.residual = res.data();
    ep.act = (p.kh % 2) ? Activation::relu : Activation::clip;
    if (fused == 4) ep.act = Activation::silu;  // EfficientNet's (a residual too, for the epilogue's order)
    ep.clip_min = -0.3f;
    ep.clip_max = 0.8f;
  }
  std::vector<float> wp;
  if (wino) {
    const int64_t cg = p.c / p.groups;
    wp.resize(wino_packed_floats(p.oc, cg, wino, p.groups));
    wino_pack_weights(w.data(), p.oc, cg, wino, wp.data(), p.groups);
    for (int64_t o = 0; o < p.oc; o += 3)
      for (int64_t ci = 0; ci < cg; ci += 2)
        for (int64_t k = 0; k < 9; ++k) {
          const float g = w[size_t((o * cg + ci) * 9 + k)];
          ASSERT_NEAR(wino_weight_at(wp.data(), p.oc, cg, wino, o, ci, k / 3, k % 3, p.groups), g,
                      1e-6 * (1 + std::fabs(g)));
        }
  } else if (p.groups == 1) {
    wp.resize(conv_nhwc_packed_floats(p.oc, p.c * p.kh * p.kw));
    conv_nhwc_pack_weights(w.data(), p.oc, p.c, p.kh, p.kw, wp.data());
  } else if (p.is_depthwise()) {
    wp.resize(size_t(p.c * p.kh * p.kw));
    dw_nhwc_pack_weights(w.data(), p.c, p.kh, p.kw, wp.data());
  } else {
    ASSERT_TRUE(conv_grouped_applies(p));
    wp.resize(grouped_nhwc_packed_floats(p));
    grouped_nhwc_pack_weights(w.data(), p, wp.data());
    const int64_t cg = p.c / p.groups;
    for (int64_t o = 0; o < p.oc; o += 3)
      for (int64_t ci = 0; ci < cg; ++ci)
        for (int64_t t = 0; t < p.kh * p.kw; t += 2)
          ASSERT_EQ(grouped_nhwc_packed_at(wp.data(), p, o, ci, t),
                    w[size_t((o * cg + ci) * p.kh * p.kw + t)]);
  }
  // every packed element reads back as the ONNX weight
  if (p.groups == 1 && !wino)
    for (int64_t o = 0; o < p.oc; o += 7)
      for (int64_t row = 0; row < p.c * p.kh * p.kw; row += 5) {
        const int64_t t = row / p.c, ci = row % p.c;
        ASSERT_EQ(conv_nhwc_packed_at(wp.data(), p.oc, p.c * p.kh * p.kw, o, row),
                  w[size_t(((o * p.c + ci) * p.kh + t / p.kw) * p.kw + t % p.kw)]);
      }
  std::vector<float> want(res.size()), got(res.size(), 123.f);
  reference(p, x, w, ep, want);
  // 4: the residual in the output's own buffer (a plan's output_reusing)
  ConvEpilogue run_ep = ep;
  if (fused == 4) {
    got = res;
    run_ep.residual = got.data();
  }
  if (wino)
    conv2d_wino_nhwc_f32(p, wino, x.data(), wp.data(), run_ep, got.data(), pool, isa);
  else
    conv2d_nhwc_f32(p, x.data(), wp.data(), run_ep, got.data(), pool, isa);
  const double tol = 1e-5 * std::sqrt(double(p.c / p.groups * p.kh * p.kw)) * 8;
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_NEAR(got[i], want[i], tol * (1 + std::fabs(want[i])))
        << "at " << i << " isa=" << int(isa) << " n=" << p.n << " c=" << p.c << " oc=" << p.oc
        << " hw=" << p.h << "x" << p.w << " k=" << p.kh << "x" << p.kw << " s=" << p.sh << " d=" << p.dh
        << " g=" << p.groups;
}

Conv2dParams mk(int64_t n, int64_t c, int64_t h, int64_t w, int64_t oc, int64_t kh, int64_t kw, int64_t s,
                int64_t d, int64_t pt, int64_t pl, int64_t pb, int64_t pr, int64_t g = 1) {
  Conv2dParams p;
  p.n = n, p.c = c, p.h = h, p.w = w, p.oc = oc, p.kh = kh, p.kw = kw, p.sh = s, p.sw = s, p.dh = d, p.dw = d;
  p.pad_t = pt, p.pad_l = pl, p.pad_b = pb, p.pad_r = pr, p.groups = g;
  return p;
}

}  // namespace

// Pointwise convs of few pixels at one thread, which run as a prepacked GEMM over the conv's own packed
// panels (conv_nhwc.cpp, pointwise_as_gemm: fewer than 64 pixels, 64+ output channels, K up to 512), with
// every epilogue (bias, residual, the residual in the output's buffer, Relu and Clip): one pixel, one and
// two images, several panels, K at the limit, strided 1 x 1 convs (their pixels gathered first); and just
// past each limit, which take the conv's own loop.
TEST(X86ConvNhwc, PointwiseSmallMapsAsGemm) {
  ThreadPool one(1), two(2);
  const std::vector<Conv2dParams> cases = {
      mk(1, 160, 7, 7, 192, 1, 1, 1, 1, 0, 0, 0, 0),  // a 7 x 7 map: three panels
      mk(1, 512, 7, 7, 128, 1, 1, 1, 1, 0, 0, 0, 0),  // K at the limit
      mk(2, 40, 5, 5, 64, 1, 1, 1, 1, 0, 0, 0, 0),    // two images, 50 pixels
      mk(1, 24, 1, 1, 64, 1, 1, 1, 1, 0, 0, 0, 0),    // one pixel
      mk(1, 513, 7, 7, 64, 1, 1, 1, 1, 0, 0, 0, 0),   // K past the limit
      mk(1, 32, 8, 8, 64, 1, 1, 1, 1, 0, 0, 0, 0),    // 64 pixels
      mk(1, 32, 7, 7, 80, 1, 1, 1, 1, 0, 0, 0, 0),    // 64 + 16 channels: a 16-wide last panel
      mk(1, 400, 7, 7, 400, 1, 1, 1, 1, 0, 0, 0, 0),  // RegNetX's: six panels + 16
      mk(1, 37, 5, 5, 72, 1, 1, 1, 1, 0, 0, 0, 0),    // 64 + 8 of a 16-wide last panel
      mk(1, 64, 3, 3, 100, 1, 1, 1, 1, 0, 0, 0, 0),   // 64 + 36 of a 48-wide last panel
      mk(1, 16, 7, 7, 48, 1, 1, 1, 1, 0, 0, 0, 0),    // narrower than a panel: the conv's loop
      // strided (a downsampling shortcut): the pixels gathered into rows first
      mk(1, 320, 14, 14, 208, 1, 1, 2, 1, 0, 0, 0, 0),  // 14 x 14 -> 7 x 7, three panels + 16
      mk(2, 40, 9, 10, 64, 1, 1, 2, 1, 0, 0, 0, 0),     // two images of odd sizes: 2 x 5 x 5 pixels
      mk(1, 24, 13, 14, 72, 1, 1, 3, 1, 0, 0, 0, 0),    // stride 3: 5 x 5 pixels
  };
  for (ConvIsa isa : isas())
    for (const auto& p : cases)
      for (int fused = 0; fused <= 4; ++fused)
        for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), &one}) {
          run_case(p, fused, pool, isa);
          if (HasFatalFailure()) return;
        }
  // Larger maps whose weights pass 256 KiB: the GEMM on full-width FMA cores at any thread count, the conv's
  // loop elsewhere (both forced here); the epilogues with a bias (the last panel's is offset), a residual and
  // a tile-pass SiLU.
  const std::vector<Conv2dParams> larger = {
      mk(1, 264, 9, 9, 260, 1, 1, 1, 1, 0, 0, 0, 0),    // 81 pixels, four panels + 4 of a 16-wide one
      mk(2, 288, 8, 8, 240, 1, 1, 1, 1, 0, 0, 0, 0),    // two images, 128 pixels, three panels + 48
      mk(1, 260, 22, 23, 272, 1, 1, 1, 1, 0, 0, 0, 0),  // 506 pixels: the largest map taken
      mk(1, 264, 18, 17, 260, 1, 1, 2, 1, 0, 0, 0, 0),  // strided: 9 x 9 pixels gathered
      mk(2, 288, 16, 15, 240, 1, 1, 2, 1, 0, 0, 0, 0),  // strided, two images: 2 x 8 x 8 pixels
  };
  for (int full = 0; full <= 1; ++full) {
    force_fma512_full_width(full);
    for (ConvIsa isa : isas())
      for (const auto& p : larger)
        for (int fused : {1, 4}) {
          run_case(p, fused, fused == 1 ? &one : &two, isa);
          if (HasFatalFailure()) {
            force_fma512_full_width(-1);
            return;
          }
        }
  }
  force_fma512_full_width(-1);
}

TEST(X86ConvNhwc, DenseMatchesReference) {
  ThreadPool pool(2);
  std::vector<Conv2dParams> cases = {
      mk(1, 1, 5, 5, 1, 1, 1, 1, 1, 0, 0, 0, 0),       // tiniest
      mk(1, 16, 7, 7, 16, 1, 1, 1, 1, 0, 0, 0, 0),     // pointwise, C = OC = 16
      mk(1, 17, 13, 11, 15, 1, 1, 1, 1, 0, 0, 0, 0),   // primes
      mk(2, 64, 9, 9, 64, 1, 1, 1, 1, 0, 0, 0, 0),     // one full panel, 2 images
      mk(1, 33, 8, 8, 65, 1, 1, 2, 1, 0, 0, 0, 0),     // strided pointwise, panel + 1
      mk(1, 24, 10, 10, 48, 3, 3, 1, 1, 1, 1, 1, 1),   // 48-wide panel
      mk(1, 8, 11, 9, 33, 3, 3, 1, 1, 1, 1, 1, 1),     // 48-wide panel with tail
      mk(1, 20, 12, 12, 130, 3, 3, 2, 1, 1, 1, 1, 1),  // 64 + 64 + 16 (2-column tail)
      mk(3, 5, 9, 10, 24, 3, 3, 1, 2, 2, 1, 0, 3),     // dilation, asymmetric pads, 3 images
      mk(1, 3, 23, 19, 64, 7, 7, 2, 1, 3, 3, 3, 3),    // resnet stem: 49 taps of 3 channels
      mk(1, 520, 5, 5, 32, 3, 3, 1, 1, 1, 1, 1, 1),    // C > 512: channel-split K blocks
      mk(1, 600, 4, 4, 70, 1, 1, 1, 1, 0, 0, 0, 0),    // C > 512 pointwise
      mk(1, 200, 6, 6, 96, 3, 3, 1, 1, 1, 1, 1, 1),    // several tap blocks
      mk(1, 1, 9, 30, 17, 1, 9, 1, 1, 0, 4, 0, 4),     // 1 x 9, 1 channel: many taps per block
      mk(1, 7, 6, 6, 16, 3, 1, 3, 1, 2, 0, 1, 0),      // stride 3, kernel 3 x 1
      mk(2, 32, 14, 14, 160, 1, 1, 1, 1, 0, 0, 0, 0),  // 14 x 14: 196 pixels (3 chunks), 2 images
      mk(1, 4, 3, 3, 16, 5, 5, 1, 1, 2, 2, 2, 2),      // kernel larger than the image interior
      mk(1, 9, 2, 2, 20, 3, 3, 2, 1, 1, 1, 1, 1),      // 1 x 1 output
      mk(1, 144, 9, 11, 24, 1, 1, 1, 1, 0, 0, 0, 0),   // MobileNet's 24-wide projection (zmm + ymm)
      mk(1, 530, 5, 6, 23, 1, 1, 1, 1, 0, 0, 0, 0),    // 23 wide over two K blocks (accumulates)
      mk(1, 16, 7, 9, 88, 1, 1, 1, 1, 0, 0, 0, 0),     // 64 + 24
      mk(1, 12, 5, 7, 40, 3, 3, 1, 1, 1, 1, 1, 1),     // AVX2 strips 16 + 16 + 8 (an empty last vector)
      mk(1, 13, 6, 5, 8, 3, 3, 1, 1, 1, 1, 1, 1),      // 8 channels: AVX2's 12 x 8 tile, full
      mk(1, 1100, 3, 5, 40, 1, 1, 1, 1, 0, 0, 0, 0),   // C > 1024 pointwise: two K blocks on AVX2 too
      mk(1, 384, 14, 14, 64, 1, 1, 1, 1, 0, 0, 0, 0),  // 2 threads: 12-pixel tasks (2 tiles), 4-pixel last
      mk(1, 64, 9, 9, 32, 3, 3, 1, 1, 1, 1, 1, 1),     // 2 threads: 18-pixel tasks of a 3 x 3 conv
      // weights past 256 KiB, streamed and prefetched a block ahead: whole tiles one call each (one K
      // block), several K blocks with a narrow last panel, two images split into pixel chunks
      mk(1, 512, 7, 7, 160, 1, 1, 1, 1, 0, 0, 0, 0),
      mk(1, 256, 5, 7, 300, 3, 3, 1, 1, 1, 1, 1, 1),
      mk(2, 320, 7, 7, 256, 1, 1, 1, 1, 0, 0, 0, 0),
      // atrous convs whose tiles skip the taps that read only padding (DeepLab's pyramid): some taps live
      // on part of the map, every off-centre tap dead, single-tap K blocks (tiles reading nothing in a
      // middle block), two images
      mk(1, 24, 14, 14, 40, 3, 3, 1, 6, 6, 6, 6, 6),
      mk(1, 16, 10, 9, 24, 3, 3, 1, 12, 12, 12, 12, 12),
      mk(1, 520, 8, 8, 32, 3, 3, 1, 5, 5, 5, 5, 5),
      mk(2, 20, 9, 11, 70, 3, 3, 1, 4, 4, 4, 4, 4),
  };
  for (ConvIsa isa : isas())
    for (const auto& p : cases)
      for (int fused = 0; fused <= 4; ++fused) {
        run_case(p, fused, fused == 1 ? nullptr : &pool, isa);
        if (HasFatalFailure()) return;
      }
}

TEST(X86ConvNhwc, WinogradMatchesReference) {
  ThreadPool pool(2);
  std::vector<Conv2dParams> cases = {
      mk(1, 1, 4, 4, 1, 3, 3, 1, 1, 1, 1, 1, 1),      // one channel, 2 x 2 tiles
      mk(1, 16, 7, 7, 16, 3, 3, 1, 1, 1, 1, 1, 1),    // odd output: partial tiles
      mk(2, 17, 9, 6, 33, 3, 3, 1, 1, 1, 1, 1, 1),    // primes, 2 images, 48-wide panel
      mk(1, 64, 14, 14, 64, 3, 3, 1, 1, 1, 1, 1, 1),  // 49 tiles: groups of T, full panel
      mk(1, 24, 8, 11, 130, 3, 3, 1, 1, 0, 0, 0, 0),  // no padding, 3 panels
      mk(1, 5, 6, 7, 20, 3, 3, 1, 1, 2, 0, 1, 2),     // asymmetric padding
      mk(3, 600, 5, 5, 40, 3, 3, 1, 1, 1, 1, 1, 1),   // C > 512: K blocks
      mk(1, 32, 3, 3, 8, 3, 3, 1, 1, 0, 0, 0, 0),     // 1 x 1 output
      mk(1, 40, 30, 26, 70, 3, 3, 1, 1, 1, 1, 1, 1),  // many tiles and groups
      // F(4x4) weights past half of L2 (2 MiB): tasks of as many tiles as fit (one group of 25, two of 36)
      mk(1, 130, 20, 18, 70, 3, 3, 1, 1, 1, 1, 1, 1),
      mk(1, 120, 36, 30, 70, 3, 3, 1, 1, 1, 1, 1, 1),
      // ResNet's 28 x 28 x 128: 49 tiles in near-equal groups, one per thread (24 + 25 at two threads)
      mk(1, 128, 28, 28, 128, 3, 3, 1, 1, 1, 1, 1, 1),
      // ResNet's 14 x 14 x 256 (F(2x2): 4 MiB of weights): one group of all 49 tiles, its four panels
      // shared out over the threads
      mk(1, 256, 14, 14, 256, 3, 3, 1, 1, 1, 1, 1, 1),
      // dilated (DeepLab's layers 3 and 4): the phases' sub-grids, uneven ones (13 = 7 + 6 at dilation 2),
      // a dilation of 3 with asymmetric padding, two images
      mk(1, 24, 16, 16, 32, 3, 3, 1, 2, 2, 2, 2, 2),
      mk(2, 20, 13, 11, 40, 3, 3, 1, 2, 2, 2, 2, 2),
      mk(1, 16, 17, 19, 16, 3, 3, 1, 3, 3, 1, 2, 4),
      mk(1, 64, 28, 28, 64, 3, 3, 1, 4, 4, 4, 4, 4),
  };
  ThreadPool pool3(3);  // groups that do not divide evenly over the threads
  for (ConvIsa isa : isas())
    for (const auto& p : cases) {
      ASSERT_TRUE(wino_applies(p));
      for (int m : {2, 4})
        for (int fused : {0, 1, 2, 3, 4}) {
          run_case(p, fused, fused == 1 ? nullptr : fused == 3 ? &pool3 : &pool, isa, m);
          if (HasFatalFailure()) return;
        }
    }
  EXPECT_FALSE(wino_applies(mk(1, 4, 5, 5, 4, 3, 3, 2, 1, 1, 1, 1, 1)));  // stride 2
  // a dilation whose sub-grids are under 4 x 4 (an atrous pyramid's rate 12 on 28 x 28): the direct kernel
  EXPECT_EQ(wino_tile_for(mk(1, 64, 28, 28, 64, 3, 3, 1, 12, 12, 12, 12, 12), 1, 28, 28), 0);
  EXPECT_EQ(wino_tile_for(mk(1, 64, 28, 28, 64, 3, 3, 1, 2, 2, 2, 2, 2), 1, 28, 28), 4);
}

// The grouped Winograd tile by map size: F(4x4) where it computes fewer points than F(2x2), and on
// full-width FMA cores (fma512_full_width) only at 0.65x of them or fewer — 14 x 14 maps take F(2x2) there —
// and none below 32 tiles (a 7 x 7 map at batch 1 takes the direct kernel there), nor on maps the
// packed-map direct kernel takes (grouped_map_applies, AVX-512).
TEST(X86ConvNhwc, GroupedWinogradTileByMapAndFmaWidth) {
  auto grouped = [](int64_t hw, int64_t c) { return mk(1, c, hw, hw, c, 3, 3, 1, 1, 1, 1, 1, 1, c / 16); };
  for (int full : {0, 1}) {
    force_fma512_full_width(full);
    const bool map = full && conv_isa() == ConvIsa::avx512f;
    EXPECT_EQ(wino_tile_for(grouped(28, 144), 1, 28, 28), 4) << "full " << full;
    EXPECT_EQ(wino_tile_for(grouped(7, 784), 1, 7, 7), full ? 0 : 4) << "full " << full;  // 4 tiles
    EXPECT_EQ(wino_tile_for(grouped(7, 784), 8, 7, 7), map ? 0 : 4) << "full " << full;   // 8 images: 32
    EXPECT_EQ(wino_tile_for(grouped(14, 320), 1, 14, 14), map ? 0 : full ? 2 : 4) << "full " << full;
    EXPECT_EQ(wino_tile_for(grouped(14, 320), 1, 0, 0), 4) << "full " << full;  // map unknown
  }
  force_fma512_full_width(-1);
}

// Grouped Winograd: each conv group's GEMMs over its own input channels and output columns, blocks of
// whole groups per task (about 64 channels), a task's V holding only its block's inputs.
TEST(X86ConvNhwc, GroupedWinogradMatchesReference) {
  ThreadPool pool(2);
  std::vector<Conv2dParams> cases = {
      mk(1, 144, 28, 28, 144, 3, 3, 1, 1, 1, 1, 1, 1, 9),   // RegNetY-800MF: 9 groups of 16 (4 + 4 + 1)
      mk(1, 320, 14, 14, 320, 3, 3, 1, 1, 1, 1, 1, 1, 20),  // its 14 x 14 stage: 20 groups
      mk(2, 32, 9, 7, 64, 3, 3, 1, 1, 1, 1, 1, 1, 2),       // 16 -> 32 a group, 2 images, partial tiles
      mk(1, 48, 6, 5, 48, 3, 3, 1, 1, 2, 0, 1, 2, 3),       // asymmetric padding, 3 groups
      mk(1, 256, 7, 7, 256, 3, 3, 1, 1, 1, 1, 1, 1, 2),     // 128 a group: two weight panels each
      mk(1, 24, 10, 10, 48, 3, 3, 1, 1, 1, 1, 1, 1, 3),     // 8 inputs, 16 outputs a group
      mk(1, 1200, 4, 4, 32, 3, 3, 1, 1, 1, 1, 1, 1, 2),     // 600 inputs a group: K blocks
      mk(1, 64, 15, 14, 64, 3, 3, 1, 2, 2, 2, 2, 2, 4),     // dilation 2
  };
  ThreadPool pool3(3);
  for (ConvIsa isa : isas())
    for (const auto& p : cases) {
      ASSERT_TRUE(wino_applies(p));
      for (int m : {2, 4})
        for (int fused : {0, 1, 2, 3, 4}) {
          run_case(p, fused, fused == 1 ? nullptr : fused == 3 ? &pool3 : &pool, isa, m);
          if (HasFatalFailure()) return;
        }
    }
  // groups of fewer than 8 inputs or a partial 16-lane output block, depthwise: the direct kernels
  EXPECT_FALSE(wino_applies(mk(1, 128, 8, 8, 128, 3, 3, 1, 1, 1, 1, 1, 1, 32)));
  EXPECT_FALSE(wino_applies(mk(1, 64, 8, 8, 64, 3, 3, 1, 1, 1, 1, 1, 1, 8)));
  EXPECT_FALSE(wino_applies(mk(1, 16, 8, 8, 16, 3, 3, 1, 1, 1, 1, 1, 1, 16)));
}

TEST(X86ConvNhwc, DepthwiseMatchesReference) {
  ThreadPool pool(2);
  std::vector<Conv2dParams> cases = {
      mk(1, 8, 7, 7, 8, 3, 3, 1, 1, 1, 1, 1, 1, 8),
      mk(2, 17, 9, 8, 17, 3, 3, 2, 1, 1, 1, 1, 1, 17),
      mk(1, 64, 12, 12, 64, 3, 3, 1, 1, 1, 1, 1, 1, 64),
      mk(1, 96, 11, 11, 96, 3, 3, 2, 1, 0, 1, 1, 0, 96),
      mk(1, 144, 5, 6, 144, 5, 5, 1, 2, 4, 4, 4, 4, 144),
      mk(1, 67, 6, 6, 67, 3, 1, 1, 1, 1, 0, 1, 0, 67),
      mk(3, 40, 4, 4, 40, 3, 3, 3, 1, 2, 0, 0, 2, 40),
      // wide rows: the 3x3 interior fast path (8 pixels whose taps are all inside)
      mk(1, 48, 5, 30, 48, 3, 3, 1, 1, 1, 1, 1, 1, 48),
      mk(2, 32, 9, 40, 32, 3, 3, 2, 1, 1, 1, 1, 1, 32),
      mk(1, 16, 6, 30, 16, 3, 3, 1, 2, 2, 2, 2, 2, 16),
      mk(1, 24, 3, 27, 24, 3, 3, 1, 1, 0, 0, 0, 0, 24),
      mk(2, 80, 40, 36, 80, 3, 3, 1, 1, 1, 1, 1, 1, 80),  // large enough to run on both threads
      // the register-reuse interior path: 64-channel blocks, 16-channel blocks and a masked tail, strides 1
      // and 2
      mk(1, 100, 7, 41, 100, 3, 3, 2, 1, 1, 1, 1, 1, 100),
      mk(1, 144, 6, 37, 144, 3, 3, 1, 1, 1, 1, 1, 1, 144),
      // dw3_rows (3x3, stride 1 or 2): rows too narrow for an interior tile (w 1..3), no left padding,
      // asymmetric padding, a vertical stride that differs, tiles of 8, 4 and 2 plus edges, masked tails
      mk(1, 16, 3, 1, 16, 3, 3, 1, 1, 1, 1, 1, 1, 16),
      mk(1, 33, 2, 2, 33, 3, 3, 1, 1, 1, 1, 1, 1, 33),
      mk(2, 20, 5, 3, 20, 3, 3, 2, 1, 1, 1, 1, 1, 20),
      mk(1, 48, 4, 23, 48, 3, 3, 1, 1, 0, 0, 0, 0, 48),
      mk(1, 32, 7, 22, 32, 3, 3, 1, 1, 0, 1, 2, 0, 32),
      mk(1, 7, 9, 29, 7, 3, 3, 2, 1, 1, 0, 1, 1, 7),
      mk(1, 160, 12, 16, 160, 3, 3, 2, 1, 1, 1, 1, 1, 160),
  };
  // the row kernel at 5 x 5 and 7 x 7 (EfficientNet's, ConvNeXt's): interior tiles, 16-channel blocks and a
  // masked tail, stride 2, asymmetric padding, maps narrower than the kernel
  for (const Conv2dParams& q :
       {mk(1, 40, 9, 30, 40, 5, 5, 1, 1, 2, 2, 2, 2, 40), mk(2, 24, 11, 27, 24, 5, 5, 2, 1, 2, 2, 2, 2, 24),
        mk(1, 16, 3, 2, 16, 5, 5, 1, 1, 2, 2, 2, 2, 16), mk(1, 96, 14, 14, 96, 7, 7, 1, 1, 3, 3, 3, 3, 96),
        mk(1, 20, 6, 5, 20, 7, 7, 1, 1, 3, 3, 3, 3, 20), mk(1, 33, 13, 23, 33, 7, 7, 2, 1, 3, 2, 3, 4, 33)})
    cases.push_back(q);
  cases.push_back(mk(1, 64, 11, 19, 64, 3, 3, 1, 1, 1, 1, 1, 1, 64));
  cases.back().sh = 2;  // vertical stride 2, horizontal 1
  cases.push_back(mk(1, 24, 10, 21, 24, 3, 3, 2, 1, 1, 1, 1, 1, 24));
  cases.back().sh = 1;
  for (ConvIsa isa : isas())
    for (const auto& p : cases)
      for (int fused : {0, 1, 2, 3, 4}) {
        run_case(p, fused, fused == 1 ? nullptr : &pool, isa);
        if (HasFatalFailure()) return;
      }
}

// Grouped convs in NHWC (grouped_impl.h): 2, 4 and 8 channels a group (the permute kind: whole 16-channel
// blocks and a masked tail block), 16, 32 and 48 output channels a group of 16, 32 and 3 inputs (the
// broadcast kind); 3x3 at strides 1 and 2, dilation, asymmetric padding, 1x1 and 5x3 windows, rows wide
// enough for whole tiles, maps narrower than the window, every epilogue, two images over two threads.
TEST(X86ConvNhwc, GroupedMatchesReference) {
  ThreadPool pool(2);
  std::vector<Conv2dParams> cases = {
      mk(1, 128, 9, 21, 128, 3, 3, 1, 1, 1, 1, 1, 1, 32),   // ResNeXt's first stage: 4 a group
      mk(2, 64, 11, 19, 64, 3, 3, 2, 1, 1, 1, 1, 1, 8),     // 8 a group, stride 2
      mk(1, 32, 7, 23, 32, 3, 3, 1, 1, 1, 1, 1, 1, 16),     // 2 a group
      mk(1, 24, 8, 17, 24, 3, 3, 1, 2, 2, 1, 2, 3, 6),      // 4 a group, 24 channels: a block and a half
      mk(1, 40, 5, 6, 40, 3, 3, 1, 1, 1, 1, 1, 1, 5),       // 8 a group, a tail of 8
      mk(1, 256, 6, 13, 256, 3, 3, 1, 1, 1, 1, 1, 1, 16),   // 16 a group: one block a group (broadcast)
      mk(1, 512, 5, 9, 512, 3, 3, 2, 1, 1, 1, 1, 1, 16),    // 32 a group, stride 2
      mk(1, 12, 7, 20, 64, 3, 3, 1, 1, 1, 1, 1, 1, 4),      // 3 inputs, 16 outputs a group
      mk(1, 30, 6, 18, 96, 5, 3, 1, 1, 2, 1, 2, 1, 2),      // 15 inputs, 48 outputs, a 5x3 window
      mk(1, 64, 6, 20, 64, 1, 1, 1, 1, 0, 0, 0, 0, 16),     // 1x1 grouped
      mk(1, 32, 2, 2, 32, 3, 3, 1, 1, 1, 1, 1, 1, 8),       // a map narrower than the window
      mk(2, 128, 30, 28, 128, 3, 3, 1, 1, 1, 1, 1, 1, 32),  // large enough to run on both threads
      // rows under 16 pixels in bands (tiles across rows): two images, a partial last band, stride 2 with
      // dilation and padding on one side, 32 a group (two blocks a tile)
      mk(2, 96, 9, 7, 96, 3, 3, 1, 1, 1, 1, 1, 1, 6),
      mk(1, 64, 13, 11, 64, 3, 3, 2, 2, 2, 0, 1, 2, 4),
      mk(1, 128, 7, 7, 128, 3, 3, 1, 1, 1, 1, 1, 1, 4),
      // 16 a group (the unrolled slots) at stride 2, rows in near-equal tiles: 16 as 8 + 8, 13 as 7 + 6,
      // 11 as 6 + 5, and 3; a band of 7-wide rows
      mk(1, 64, 31, 32, 64, 3, 3, 2, 1, 1, 1, 1, 1, 4),
      mk(1, 48, 9, 26, 48, 3, 3, 2, 1, 1, 1, 1, 1, 3),
      mk(2, 32, 5, 21, 32, 3, 3, 2, 1, 0, 1, 1, 1, 2),
      mk(1, 32, 6, 6, 32, 3, 3, 2, 1, 1, 1, 1, 1, 2),
      mk(1, 160, 14, 14, 160, 3, 3, 2, 1, 1, 1, 1, 1, 10),
      // small maps go block-major, the next group's weights prefetched: RegNetX's 7 x 7 stage, two images
      mk(2, 400, 7, 7, 400, 3, 3, 1, 1, 1, 1, 1, 1, 25),
  };
  for (ConvIsa isa : isas())
    for (const auto& p : cases)
      for (int fused : {0, 1, 2, 3, 4}) {
        run_case(p, fused, fused == 1 ? nullptr : &pool, isa);
        if (HasFatalFailure()) return;
      }
}

// The depthwise 3x3 row kernel called directly, in each loop order (Dw3RowsArgs::order) on every vector ISA
// here: rows through a ring, a band of output rows, a channel slice of wider rows (ldx, ldy), a residual,
// clip; widths that take tiles of 8, 4 and 2 plus edges, masked channel tails.
TEST(X86ConvNhwc, Dw3RowsEveryOrderMatchesReference) {
  struct Case {
    int64_t h, w, c, sh, sw, pad_t, pad_l, oy0, oy1, ring, ring_first, extra;  // extra: ldx = ldy = c + extra
    bool residual;
  };
  const Case cases[] = {
      {9, 29, 40, 1, 1, 1, 1, 0, 9, 0, 0, 0, false},   // stride 1: tiles 8, 4, 2, edges; tail of 8
      {11, 37, 33, 2, 2, 0, 0, 0, 5, 0, 0, 0, true},   // stride 2, no left padding, tail of 1
      {11, 38, 48, 2, 2, 1, 1, 1, 5, 0, 0, 5, true},   // a band of rows; a slice of wider rows
      {10, 23, 16, 1, 1, 1, 1, 3, 6, 5, 2, 0, false},  // rows 2..6 in a ring of 5
      {13, 21, 24, 2, 2, 1, 1, 2, 5, 7, 4, 16, true},  // stride 2 through a ring
      {5, 3, 17, 1, 1, 1, 1, 0, 5, 0, 0, 0, false},    // too narrow for an interior tile
      {6, 14, 96, 2, 1, 1, 1, 0, 3, 0, 0, 0, true},    // vertical stride 2, horizontal 1
  };
  using Order = Dw3RowsArgs::Order;
  std::mt19937 rng(11);
  for (const Case& k : cases) {
    const int64_t ld = k.c + k.extra, ow = (k.w + 2 * k.pad_l - 3) / k.sw + 1;
    const int64_t oh = (k.h + 2 * k.pad_t - 3) / k.sh + 1;
    ASSERT_LE(k.oy1, oh);
    const std::vector<float> x = random_floats(rng, size_t(k.h * k.w * ld)),
                             wr = random_floats(rng, size_t(k.c * 9)), bias = random_floats(rng, size_t(k.c)),
                             res = random_floats(rng, size_t(oh * ow * ld));
    std::vector<float> wp(size_t(9 * k.c));
    dw_nhwc_pack_weights(wr.data(), k.c, 3, 3, wp.data());
    // x's rows where the kernel reads them: in place, or row iy at ring slot (ring_first + iy) % ring
    std::vector<float> xin = x;
    if (k.ring) {
      xin.assign(size_t(k.ring * k.w * ld), std::numeric_limits<float>::quiet_NaN());
      const int64_t lo = std::max<int64_t>(0, k.oy0 * k.sh - k.pad_t),
                    hi = std::min<int64_t>(k.h, (k.oy1 - 1) * k.sh - k.pad_t + 3);
      ASSERT_LE(hi - lo, k.ring);
      for (int64_t iy = lo; iy < hi; ++iy)
        std::copy_n(x.begin() + iy * k.w * ld, k.w * ld,
                    xin.begin() + (k.ring_first + iy) % k.ring * k.w * ld);
    }
    for (ConvIsa isa : {ConvIsa::avx2, ConvIsa::avx512f}) {
      if (!conv_isa_available(isa)) continue;
      for (Order order : {Order::tuned, Order::by_block, Order::by_tile}) {
        // SiLU by block, HardSwish by tile, Clip tuned
        const Activation act = order == Order::by_block  ? Activation::silu
                               : order == Order::by_tile ? Activation::hardswish
                                                         : Activation::clip;
        std::vector<float> y(size_t(oh * ow * ld), 7.f);
        Dw3RowsArgs a{};
        a.x = xin.data(), a.h = k.h, a.w = k.w, a.c = k.c, a.wp = wp.data();
        a.sh = k.sh, a.sw = k.sw, a.pad_t = k.pad_t, a.pad_l = k.pad_l;
        a.oy0 = k.oy0, a.oy1 = k.oy1, a.ow = ow, a.y = y.data();
        a.residual = k.residual ? res.data() : nullptr, a.bias = bias.data();
        a.act = act, a.clip_min = -0.5f, a.clip_max = 0.75f;
        a.ldx = a.ldy = ld, a.ring = k.ring, a.ring_first = k.ring_first, a.order = order;
        (isa == ConvIsa::avx512f ? dw3_rows_avx512f : dw3_rows_avx2)(a);
        for (int64_t oy = 0; oy < oh; ++oy)
          for (int64_t ox = 0; ox < ow; ++ox)
            for (int64_t ch = 0; ch < ld; ++ch) {
              const float got = y[size_t((oy * ow + ox) * ld + ch)];
              if (oy < k.oy0 || oy >= k.oy1 || ch >= k.c) {  // outside the band or the slice: untouched
                ASSERT_EQ(got, 7.f) << oy << " " << ox << " " << ch;
                continue;
              }
              double acc = bias[size_t(ch)];
              for (int64_t r = 0; r < 3; ++r)
                for (int64_t q = 0; q < 3; ++q) {
                  const int64_t iy = oy * k.sh - k.pad_t + r, ix = ox * k.sw - k.pad_l + q;
                  if (iy < 0 || iy >= k.h || ix < 0 || ix >= k.w) continue;
                  acc += double(wr[size_t(ch * 9 + r * 3 + q)]) * x[size_t((iy * k.w + ix) * ld + ch)];
                }
              if (k.residual) acc += res[size_t((oy * ow + ox) * ld + ch)];
              acc = act == Activation::silu        ? acc / (1.0 + std::exp(-acc))
                    : act == Activation::hardswish ? acc * std::max(0.0, std::min(1.0, acc / 6.0 + 0.5))
                                                   : std::min(std::max(acc, -0.5), 0.75);
              ASSERT_NEAR(got, acc, 1e-5)
                  << "case h" << k.h << " w" << k.w << " c" << k.c << " isa " << int(isa) << " order "
                  << int(order) << " at " << oy << "," << ox << "," << ch;
            }
      }
    }
  }
}

// Global average pooling over NHWC: channel counts below one 256-channel block, across several, not a
// multiple of 16; one to three threads (a contiguous range of channels each), two images.
TEST(X86ConvNhwc, GlobalAveragePoolMatchesReference) {
  ThreadPool pool2(2), pool3(3);
  std::mt19937 rng(21);
  // two 7 x 7 maps (channel ranges per thread), one of 900 pixels (bands of pixels per thread for few
  // channels)
  for (const auto& [n, hw] : {std::pair<int64_t, int64_t>{2, 49}, {1, 900}})
    for (const int64_t c : {37, 48, 100, 1280, 2001})
      for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool2, &pool3}) {
        const std::vector<float> x = random_floats(rng, size_t(n * hw * c));
        std::vector<float> y(size_t(n * c), std::numeric_limits<float>::quiet_NaN());
        global_avg_pool_nhwc_f32(x.data(), n, hw, c, y.data(), p);
        for (int64_t img = 0; img < n; ++img)
          for (int64_t ch = 0; ch < c; ++ch) {
            double sum = 0;
            for (int64_t i = 0; i < hw; ++i) sum += x[size_t((img * hw + i) * c + ch)];
            ASSERT_NEAR(y[size_t(img * c + ch)], sum / double(hw), 1e-5)
                << "c " << c << " threads " << (p ? p->num_threads() : 1) << " at " << img << "," << ch;
          }
      }
}

TEST(X86ConvNhwc, MaxPoolMatchesReferenceAndPropagatesNaN) {
  ThreadPool pool(2);
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> d(-1, 1);
  struct Case {
    int64_t n, c, h, w, k, s, d, pt, pl, pb, pr;
  };
  for (const Case& cs : {Case{1, 64, 12, 12, 3, 2, 1, 1, 1, 1, 1}, Case{2, 5, 7, 9, 2, 2, 1, 0, 0, 1, 1},
                         Case{1, 19, 8, 8, 3, 1, 2, 2, 2, 2, 2}, Case{1, 3, 5, 5, 5, 3, 1, 0, 2, 1, 0},
                         Case{6, 1, 9, 7, 3, 2, 1, 1, 0, 1, 1},     // 1 channel: NCHW MaxPool
                         Case{2, 64, 40, 40, 3, 1, 1, 1, 1, 1, 1},  // large enough for both threads
                         Case{1, 100, 6, 7, 3, 2, 1, 1, 1, 1, 1},   // 4-vector blocks, then 1, then a tail
                         Case{1, 37, 5, 5, 2, 1, 1, 0, 0, 1, 1}}) {
    for (ConvIsa isa : isas()) {
      PoolParams pp;
      pp.g = mk(cs.n, cs.c, cs.h, cs.w, cs.c, cs.k, cs.k, cs.s, cs.d, cs.pt, cs.pl, cs.pb, cs.pr);
      pp.oh = pp.g.oh(), pp.ow = pp.g.ow();
      std::vector<float> x(size_t(cs.n * cs.h * cs.w * cs.c));
      for (auto& e : x) e = d(rng);
      x[3] = std::numeric_limits<float>::quiet_NaN();
      x[x.size() / 2] = std::numeric_limits<float>::quiet_NaN();  // a NaN inside a vector block
      std::vector<float> y(size_t(cs.n * pp.oh * pp.ow * cs.c), 7.f);
      pool2d_nhwc_f32(pp, x.data(), y.data(), &pool, isa);
      for (int64_t b = 0; b < cs.n; ++b)
        for (int64_t oy = 0; oy < pp.oh; ++oy)
          for (int64_t ox = 0; ox < pp.ow; ++ox)
            for (int64_t ch = 0; ch < cs.c; ++ch) {
              float m = -std::numeric_limits<float>::infinity();
              bool nan = false;
              for (int64_t r = 0; r < cs.k; ++r)
                for (int64_t q = 0; q < cs.k; ++q) {
                  const int64_t iy = oy * cs.s - cs.pt + r * cs.d, ix = ox * cs.s - cs.pl + q * cs.d;
                  if (iy < 0 || iy >= cs.h || ix < 0 || ix >= cs.w) continue;
                  const float v = x[size_t(((b * cs.h + iy) * cs.w + ix) * cs.c + ch)];
                  nan |= std::isnan(v);
                  m = std::max(m, v);
                }
              const float got = y[size_t(((b * pp.oh + oy) * pp.ow + ox) * cs.c + ch)];
              if (nan)
                ASSERT_TRUE(std::isnan(got)) << int(isa);
              else
                ASSERT_EQ(got, m) << int(isa);
            }
    }
  }
}

TEST(X86ConvNhwc, AveragePoolMatchesReference) {
  ThreadPool pool(2);
  std::mt19937 rng(6);
  std::uniform_real_distribution<float> d(-1, 1);
  struct Case {
    int64_t n, c, h, w, k, s, d, pt, pl, pb, pr;
  };
  for (const Case& cs : {Case{1, 64, 12, 12, 2, 2, 1, 0, 0, 0, 0},  // DenseNet's transition
                         Case{2, 5, 7, 9, 3, 2, 1, 1, 1, 1, 1},     // padded windows at every edge
                         Case{1, 19, 8, 8, 3, 1, 2, 2, 2, 2, 2},    // dilated
                         Case{1, 3, 5, 5, 5, 3, 1, 0, 2, 1, 0},     // asymmetric padding
                         Case{2, 64, 40, 40, 3, 1, 1, 1, 1, 1, 1},  // large enough for both threads
                         Case{1, 100, 6, 7, 3, 2, 1, 1, 1, 1, 1},   // 4-vector blocks, then 1, then a tail
                         Case{1, 37, 5, 5, 2, 1, 1, 0, 0, 1, 1}}) {
    std::vector<float> x(size_t(cs.n * cs.h * cs.w * cs.c));
    for (auto& e : x) e = d(rng);
    for (bool include_pad : {false, true})
      for (ConvIsa isa : isas()) {
        PoolParams pp;
        pp.g = mk(cs.n, cs.c, cs.h, cs.w, cs.c, cs.k, cs.k, cs.s, cs.d, cs.pt, cs.pl, cs.pb, cs.pr);
        pp.oh = pp.g.oh(), pp.ow = pp.g.ow();
        pp.is_max = false;
        pp.count_include_pad = include_pad;
        std::vector<float> y(size_t(cs.n * pp.oh * pp.ow * cs.c), 7.f);
        pool2d_nhwc_f32(pp, x.data(), y.data(), &pool, isa);
        for (int64_t b = 0; b < cs.n; ++b)
          for (int64_t oy = 0; oy < pp.oh; ++oy)
            for (int64_t ox = 0; ox < pp.ow; ++ox)
              for (int64_t ch = 0; ch < cs.c; ++ch) {
                double sum = 0;
                int64_t count = 0;
                for (int64_t r = 0; r < cs.k; ++r)
                  for (int64_t q = 0; q < cs.k; ++q) {
                    const int64_t iy = oy * cs.s - cs.pt + r * cs.d, ix = ox * cs.s - cs.pl + q * cs.d;
                    if (iy < 0 || iy >= cs.h || ix < 0 || ix >= cs.w) continue;
                    sum += x[size_t(((b * cs.h + iy) * cs.w + ix) * cs.c + ch)];
                    ++count;
                  }
                const double want = sum / double(include_pad ? cs.k * cs.k : count);
                ASSERT_NEAR(y[size_t(((b * pp.oh + oy) * pp.ow + ox) * cs.c + ch)], want, 2e-6)
                    << int(isa) << " include_pad " << include_pad << " at " << b << "," << oy << "," << ox
                    << "," << ch;
              }
      }
  }
}

// Pointwise conv feeding a depthwise conv, a band of rows at a time (conv2d_pw_dw_nhwc_f32), against the
// two reference convs one after the other: strides 1 and 2, 3x3 and 5x5, dilation, asymmetric padding,
// two images, bands over two threads, and rows wide enough that a band takes several steps; each case
// also with a projection conv after the depthwise conv (against a third reference conv), and with the
// projection but no expansion.
TEST(X86ConvNhwc, PointwiseDepthwiseMatchesTwoConvs) {
  ThreadPool pool(2);
  struct Case {
    int64_t n, h, w, c, e, k, s, d, pt, pl, pb, pr;
  };
  const Case cases[] = {{1, 17, 13, 16, 96, 3, 2, 1, 1, 1, 1, 1},
                        {1, 20, 9, 24, 144, 3, 1, 1, 1, 1, 1, 1},
                        {2, 7, 7, 5, 33, 5, 1, 1, 2, 2, 2, 2},
                        {1, 30, 11, 8, 48, 3, 2, 1, 0, 1, 1, 0},
                        {1, 12, 10, 7, 20, 3, 1, 2, 2, 2, 2, 2},
                        {1, 40, 64, 9, 512, 3, 1, 1, 1, 1, 1, 1},
                        {1, 1, 1, 3, 17, 3, 1, 1, 1, 1, 1, 1},
                        // 14 x 14 and stride-2 maps in two row bands at 2 threads (a band's halo within a
                        // third of its rows)
                        {1, 14, 14, 32, 200, 3, 1, 1, 1, 1, 1, 1},
                        {1, 7, 7, 40, 160, 3, 2, 1, 1, 1, 1, 1},
                        {1, 9, 8, 16, 72, 3, 2, 1, 0, 0, 1, 1},
                        // maps too small for row bands at 2 threads: blocks of channels (64, 64, 64, 8)
                        {1, 7, 7, 32, 200, 3, 1, 1, 1, 1, 1, 1},
                        {1, 6, 9, 16, 72, 3, 1, 1, 1, 1, 1, 1},
                        // an odd number of blocks at 2 threads: the last one in a band of rows per thread
                        // (64, 64, 8; and 64, 64, 22 with asymmetric padding)
                        {1, 7, 7, 24, 136, 3, 1, 1, 1, 1, 1, 1},
                        {1, 5, 11, 16, 150, 3, 1, 1, 0, 1, 1, 0},
                        // two images over three threads (below): a task's slice of blocks spans both
                        {2, 7, 7, 24, 136, 3, 1, 1, 1, 1, 1, 1},
                        // 5 x 5 at stride 2 and 7 x 7 (EfficientNet's, ConvNeXt's kernels)
                        {1, 12, 12, 16, 40, 5, 2, 1, 2, 2, 2, 2},
                        {1, 9, 9, 8, 24, 7, 1, 1, 3, 3, 3, 3},
                        {1, 20, 14, 24, 144, 5, 1, 1, 2, 2, 2, 2}};
  ThreadPool pool3(3);  // small maps also over three threads: uneven slices, a split block's three bands
  std::mt19937 rng(77);
  auto fill = [&](size_t n) { return random_floats(rng, n); };
  for (const Case& c : cases) {
    Conv2dParams pw;
    pw.n = c.n, pw.c = c.c, pw.h = c.h, pw.w = c.w, pw.oc = c.e;
    Conv2dParams dw;
    dw.n = c.n, dw.c = dw.oc = dw.groups = c.e, dw.h = c.h, dw.w = c.w, dw.kh = dw.kw = c.k,
    dw.sh = dw.sw = c.s;
    dw.dh = dw.dw = c.d, dw.pad_t = c.pt, dw.pad_l = c.pl, dw.pad_b = c.pb, dw.pad_r = c.pr;
    const auto x = fill(size_t(c.n * c.h * c.w * c.c)), w1 = fill(size_t(c.e * c.c)),
               w2 = fill(size_t(c.e * c.k * c.k)), b1 = fill(size_t(c.e)), b2 = fill(size_t(c.e));
    // MobileNet's Clip and Relu, EfficientNet's SiLU or MobileNetV3's HardSwish in both stages
    const Activation a = c.e % 3 == 0   ? Activation::silu
                         : c.e % 3 == 1 ? Activation::hardswish
                                        : Activation::none;
    const ConvEpilogue ep1{b1.data(), nullptr, a != Activation::none ? a : Activation::clip, 0.0f, 6.0f},
        ep2{b2.data(), nullptr, a != Activation::none ? a : Activation::relu, 0.0f, 0.0f};
    std::vector<float> t(size_t(c.n * c.h * c.w * c.e)), want(size_t(c.n * dw.oh() * dw.ow() * c.e));
    reference(pw, x, w1, ep1, t);
    reference(dw, t, w2, ep2, want);
    std::vector<float> w1p(conv_nhwc_packed_floats(c.e, c.c)), w2p(size_t(c.e * c.k * c.k));
    conv_nhwc_pack_weights(w1.data(), c.e, c.c, 1, 1, w1p.data());
    dw_nhwc_pack_weights(w2.data(), c.e, c.k, c.k, w2p.data());
    // and with a projection (e -> oc3 channels: below, at and above a 64-wide panel) with a residual or an
    // activation, as the third conv of an inverted-residual block
    const int64_t oc3 = c.c % 2 ? 70 : c.c + 8;
    Conv2dParams pj;
    pj.n = c.n, pj.c = c.e, pj.h = dw.oh(), pj.w = dw.ow(), pj.oc = oc3;
    const auto w3 = fill(size_t(oc3 * c.e)), b3 = fill(size_t(oc3)),
               res = fill(size_t(c.n * dw.oh() * dw.ow() * oc3));
    const ConvEpilogue ep3 = c.c % 2 ? ConvEpilogue{b3.data(), nullptr, Activation::relu, 0.0f, 0.0f}
                                     : ConvEpilogue{b3.data(), res.data(), Activation::none, 0.0f, 0.0f};
    std::vector<float> want3(size_t(c.n * dw.oh() * dw.ow() * oc3));
    reference(pj, want, w3, ep3, want3);
    std::vector<float> w3p(conv_nhwc_packed_floats(oc3, c.e));
    conv_nhwc_pack_weights(w3.data(), oc3, c.e, 1, 1, w3p.data());
    const ConvProjection proj{w3p.data(), oc3, ep3};
    // and without the expansion: the depthwise conv reads the expanded map t itself
    Conv2dParams pw_none = pw;
    pw_none.c = c.e;
    for (ConvIsa isa : isas())
      for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool, &pool3})
        for (const int form : {0, 1, 2}) {  // pair, pair + projection, depthwise + projection
          if (p == &pool3 && c.h > 9) continue;
          const std::vector<float>& ref = form ? want3 : want;
          std::vector<float> got(ref.size(), std::numeric_limits<float>::quiet_NaN());
          if (form < 2)
            conv2d_pw_dw_nhwc_f32(pw, x.data(), w1p.data(), ep1, dw, w2p.data(), ep2, got.data(), p, isa,
                                  form ? &proj : nullptr);
          else
            conv2d_pw_dw_nhwc_f32(pw_none, t.data(), nullptr, ConvEpilogue{}, dw, w2p.data(), ep2, got.data(),
                                  p, isa, &proj);
          for (size_t i = 0; i < ref.size(); ++i)
            ASSERT_NEAR(got[i], ref[i], 1e-4f * (1.0f + std::fabs(ref[i])))
                << "h " << c.h << " w " << c.w << " c " << c.c << " e " << c.e << " k " << c.k << " s " << c.s
                << " d " << c.d << " isa " << int(isa) << " threads " << (p ? p->num_threads() : 1)
                << " form " << form << " at " << i;
        }
  }
}

// A stem conv read in NCHW and written in NHWC (conv2d_nchw_in_f32), against the reference over the
// image transposed to NHWC: 1 to 4 channels, 1x1 to 3x5 windows, strides 1 and 2, asymmetric and zero
// padding, output widths below, at and above 12 and 16 (a tile's pixels) and channels below, at and above 16
// and 32 (a tile's channels) and 64 (a panel), several images and row bands over two threads, every epilogue.
TEST(X86ConvNhwc, NchwInputStemMatchesReference) {
  if (!conv_nchw_in_applies(
          [] {
            Conv2dParams p;
            p.c = 3, p.kh = p.kw = 3, p.sh = p.sw = 2;
            return p;
          }(),
          ConvIsa::avx512f))
    GTEST_SKIP() << "needs AVX-512";
  ThreadPool pool(2);
  struct Case {
    int64_t n, c, h, w, oc, kh, kw, s, pt, pl, pb, pr;
  };
  const Case cases[] = {
      {1, 3, 224, 224, 32, 3, 3, 2, 1, 1, 1, 1},  // MobileNetV2's stem
      {2, 3, 33, 35, 16, 3, 3, 2, 1, 1, 1, 1},
      {1, 3, 17, 31, 24, 3, 3, 1, 1, 1, 1, 1},
      {1, 1, 9, 15, 7, 3, 3, 1, 0, 0, 0, 0},
      {1, 4, 12, 40, 80, 3, 3, 2, 0, 1, 1, 0},
      {1, 2, 5, 3, 65, 3, 5, 1, 2, 1, 0, 3},
      {1, 3, 30, 16, 17, 1, 1, 2, 0, 0, 0, 0},
      {3, 3, 11, 48, 48, 2, 2, 2, 0, 0, 1, 1},
      // short last tiles of pixels (output widths 25, 27, 30, 13) and channels past a panel (129)
      {1, 3, 9, 49, 40, 3, 3, 2, 1, 1, 1, 1},
      {1, 3, 6, 27, 64, 3, 3, 1, 1, 1, 1, 1},
      {1, 3, 7, 61, 129, 3, 3, 2, 1, 0, 1, 1},
      {1, 4, 5, 13, 96, 3, 3, 1, 1, 1, 1, 1},
      // 32 + 24 channels (both blocks in the channels-along-lanes kernel), widths 15 and 12
      {1, 3, 8, 29, 56, 3, 3, 2, 1, 1, 1, 1},
      {1, 3, 4, 12, 56, 3, 3, 1, 1, 1, 1, 1}};
  std::mt19937 rng(5);
  auto fill = [&](size_t n) { return random_floats(rng, n); };
  for (const Case& c : cases) {
    Conv2dParams p;
    p.n = c.n, p.c = c.c, p.h = c.h, p.w = c.w, p.oc = c.oc, p.kh = c.kh, p.kw = c.kw, p.sh = p.sw = c.s;
    p.pad_t = c.pt, p.pad_l = c.pl, p.pad_b = c.pb, p.pad_r = c.pr;
    ASSERT_TRUE(conv_nchw_in_applies(p, ConvIsa::avx512f));
    const auto x = fill(size_t(c.n * c.c * c.h * c.w)), w = fill(size_t(c.oc * c.c * c.kh * c.kw)),
               bias = fill(size_t(c.oc));
    std::vector<float> xt(x.size());  // NHWC for the reference
    for (int64_t b = 0; b < c.n; ++b)
      for (int64_t ci = 0; ci < c.c; ++ci)
        for (int64_t i = 0; i < c.h * c.w; ++i)
          xt[size_t((b * c.h * c.w + i) * c.c + ci)] = x[size_t((b * c.c + ci) * c.h * c.w + i)];
    std::vector<float> wp(conv_nhwc_packed_floats(c.oc, c.c * c.kh * c.kw));
    conv_nhwc_pack_weights(w.data(), c.oc, c.c, c.kh, c.kw, wp.data());
    for (int fused = 0; fused < 5; ++fused) {
      ConvEpilogue ep;
      if (fused >= 1) ep.bias = bias.data();
      if (fused == 1) ep.act = Activation::relu;
      if (fused == 2) ep.act = Activation::clip, ep.clip_min = -0.2f, ep.clip_max = 0.5f;
      if (fused == 3) ep.act = Activation::silu;
      if (fused == 4) ep.act = Activation::hardswish;
      std::vector<float> want(size_t(c.n * p.oh() * p.ow() * c.oc));
      reference(p, xt, w, ep, want);
      for (ThreadPool* tp : {static_cast<ThreadPool*>(nullptr), &pool}) {
        std::vector<float> got(want.size(), std::numeric_limits<float>::quiet_NaN());
        conv2d_nchw_in_f32(p, x.data(), wp.data(), ep, got.data(), tp, ConvIsa::avx512f);
        for (size_t i = 0; i < want.size(); ++i)
          ASSERT_NEAR(got[i], want[i], 1e-4f * (1.0f + std::fabs(want[i])))
              << "c " << c.c << " " << c.h << "x" << c.w << " oc " << c.oc << " k " << c.kh << "x" << c.kw
              << " s " << c.s << " fused " << fused << " threads " << (tp ? 2 : 1) << " at " << i;
      }
    }
  }
}
