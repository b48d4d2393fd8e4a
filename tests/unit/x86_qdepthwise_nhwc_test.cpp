// The NHWC depthwise int8 conv (kernels/x86/qgemm.h: QDepthwiseW, qdepthwise_nhwc_int8) against a direct
// int64 formula on random bytes: u8 / s8 input and weights, zero points per channel or per tensor, scales
// per channel or one, with and without bias, into u8, s8 and int32; over edge shapes (channels around the
// 16-lane vectors, images narrower than a pixel block, kernels 1x1 to 7x7, strides, dilations, asymmetric
// pads, batches), on one thread and two. Both kernels: the AVX-512 one where the CPU has it, and the
// portable one.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/cpu_features.h"
#include "core/thread_pool.h"
#include "kernels/x86/qgemm.h"

namespace tessera::kernels::x86 {

// The portable kernel (qdepthwise_nhwc.cpp), which qdepthwise_nhwc_int8 runs only without AVX-512.
void qdepthwise_nhwc_int8_portable(const Conv2dParams& p, const void* x, bool x_signed, int32_t x_zero,
                                   const float* wf, const QOutput& out, ThreadPool* pool);

namespace {

// Random bytes, never zero.
std::vector<uint8_t> rand_bytes(size_t n, uint32_t seed) {
  std::mt19937 g(seed);
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = uint8_t(1 + g() % 255);
  return v;
}

int32_t val(const std::vector<uint8_t>& v, size_t i, bool is_signed) {
  return is_signed ? int32_t(int8_t(v[i])) : int32_t(v[i]);
}

struct Quant {
  bool xs = false, ws = false, zw_per_ch = true, scale_per_ch = true, has_bias = true;
  QOut type = QOut::u8;
  // 1: biases of tens of millions (past 2^24: the kernels cannot start the f32 sums from them); 2: near
  // 2^31 (int32 output: the sums wrap)
  int big_bias = 0;
};

std::string describe(const Conv2dParams& p, const Quant& q, int threads) {
  return "n=" + std::to_string(p.n) + " c=" + std::to_string(p.c) + " h=" + std::to_string(p.h) +
         " w=" + std::to_string(p.w) + " k=" + std::to_string(p.kh) + "x" + std::to_string(p.kw) +
         " s=" + std::to_string(p.sh) + "," + std::to_string(p.sw) + " d=" + std::to_string(p.dh) + "," +
         std::to_string(p.dw) + " pads=" + std::to_string(p.pad_t) + "," + std::to_string(p.pad_l) + "," +
         std::to_string(p.pad_b) + "," + std::to_string(p.pad_r) + " xs=" + std::to_string(q.xs) +
         " ws=" + std::to_string(q.ws) + " zw_per_ch=" + std::to_string(q.zw_per_ch) +
         " scale_per_ch=" + std::to_string(q.scale_per_ch) + " bias=" + std::to_string(q.has_bias) +
         " out=" + std::to_string(int(q.type)) + " big_bias=" + std::to_string(q.big_bias) +
         " threads=" + std::to_string(threads);
}

// Runs one case through the kernels that this CPU has and compares each with the int64 formula.
void check(const Conv2dParams& p, const Quant& q, uint32_t seed) {
  const int64_t oh = p.oh(), ow = p.ow(), c = p.c, taps = p.kh * p.kw;
  ASSERT_GT(oh, 0);
  ASSERT_GT(ow, 0);
  // exactly the tensor's bytes: a kernel reading past the end shows under the sanitizers
  const auto x = rand_bytes(size_t(p.n * p.h * p.w * c), seed), w = rand_bytes(size_t(c * taps), seed + 1);
  const int32_t zx = q.xs ? -7 : 121;
  std::vector<int32_t> zw(static_cast<size_t>(c)), bias(static_cast<size_t>(c));
  std::vector<float> scale(static_cast<size_t>(c));
  std::mt19937 g(seed + 2);
  for (int64_t ch = 0; ch < c; ++ch) {
    zw[size_t(ch)] = q.zw_per_ch ? (q.ws ? int32_t(ch % 11) - 5 : 120 + int32_t(ch % 13)) : (q.ws ? 3 : 127);
    bias[size_t(ch)] = int32_t(g() % 20001) - 10000;
    // as a binding computes it: x_scale * w_scale / y_scale in f32
    scale[size_t(ch)] = 0.0123f * float(q.scale_per_ch ? ch % 9 + 1 : 1) / 0.7f * 0.02f;
    if (q.big_bias) {
      const int32_t far = q.big_bias == 2 ? 2147000000 : 20000001;
      bias[size_t(ch)] += ch % 2 ? far : -far;
      scale[size_t(ch)] = 5e-6f * float(q.scale_per_ch ? ch % 3 + 10 : 10) / 10.0f;
    }
  }
  std::vector<float> wf(size_t(QDepthwiseW::floats(c, p.kh, p.kw)));
  QDepthwiseW::pack(w.data(), q.ws, zw.data(), q.zw_per_ch, c, p.kh, p.kw, wf.data());

  const int32_t yz = q.type == QOut::s8 ? -3 : 131;
  const bool i32 = q.type == QOut::i32;
  const float lo = float((q.type == QOut::s8 ? -128 : 0) - yz),
              hi = float((q.type == QOut::s8 ? 127 : 255) - yz);
  const size_t ny = size_t(p.n * oh * ow * c);
  std::vector<int32_t> want(ny);
  for (int64_t img = 0; img < p.n; ++img)
    for (int64_t oy = 0; oy < oh; ++oy)
      for (int64_t ox = 0; ox < ow; ++ox)
        for (int64_t ch = 0; ch < c; ++ch) {
          int64_t acc = q.has_bias ? bias[size_t(ch)] : 0;
          for (int64_t i = 0; i < p.kh; ++i)
            for (int64_t j = 0; j < p.kw; ++j) {
              const int64_t iy = oy * p.sh - p.pad_t + i * p.dh, ix = ox * p.sw - p.pad_l + j * p.dw;
              if (iy < 0 || iy >= p.h || ix < 0 || ix >= p.w) continue;  // the pad's x_zero adds nothing
              acc += int64_t(val(x, size_t(((img * p.h + iy) * p.w + ix) * c + ch), q.xs) - zx) *
                     (val(w, size_t(ch * taps + i * p.kw + j), q.ws) - zw[q.zw_per_ch ? size_t(ch) : 0]);
            }
          const size_t o = size_t(((img * oh + oy) * ow + ox) * c + ch);
          if (i32) {
            want[o] = int32_t(acc);
            continue;
          }
          // onnxruntime's requantization: f32 product, clamped to the range less the zero point, rounded
          const float sc = scale[q.scale_per_ch ? size_t(ch) : 0];
          const float v = std::clamp(float(int32_t(acc)) * sc, lo, hi);
          want[o] = int32_t(std::nearbyint(v)) + yz;
        }
  if (!i32 && ny > 8) {  // the outputs span values: the case is not all saturated
    std::set<int32_t> distinct(want.begin(), want.end());
    ASSERT_GT(distinct.size(), 2u) << describe(p, q, 0);
  }

  QOutput out;
  out.type = q.type;
  out.bias = q.has_bias ? bias.data() : nullptr;
  out.scale = i32 ? nullptr : scale.data();
  out.scale_per_row = q.scale_per_ch;
  out.y_zero = i32 ? 0 : yz;
  using Kernel =
      void (*)(const Conv2dParams&, const void*, bool, int32_t, const float*, const QOutput&, ThreadPool*);
  std::vector<std::pair<const char*, Kernel>> kernels = {{"dispatched", qdepthwise_nhwc_int8},
                                                         {"portable", qdepthwise_nhwc_int8_portable}};
  if (cpu_features().avx512_core()) kernels.push_back({"avx512f", qdepthwise_nhwc_int8__avx512f});
  ThreadPool pool(2);
  for (const auto& [name, kernel] : kernels)
    for (ThreadPool* tp : {static_cast<ThreadPool*>(nullptr), &pool}) {
      const int threads = tp ? 2 : 1;
      std::vector<int32_t> got(ny);
      if (i32) {
        std::fill(got.begin(), got.end(), 0x5a5a5a5a);
        out.data = got.data();
        kernel(p, x.data(), q.xs, zx, wf.data(), out, tp);
      } else {
        std::vector<uint8_t> bytes(ny, 0x5a);
        out.data = bytes.data();
        kernel(p, x.data(), q.xs, zx, wf.data(), out, tp);
        for (size_t i = 0; i < ny; ++i)
          got[i] = q.type == QOut::s8 ? int32_t(int8_t(bytes[i])) : int32_t(bytes[i]);
      }
      for (size_t i = 0; i < ny; ++i)
        ASSERT_EQ(got[i], want[i]) << name << " " << describe(p, q, threads) << " at " << i << " (pixel "
                                   << i / size_t(c) << ", channel " << i % size_t(c) << ")";
    }
}

Conv2dParams shape(int64_t n, int64_t c, int64_t h, int64_t w, int64_t kh, int64_t kw, int64_t s, int64_t d,
                   int64_t pt, int64_t pl, int64_t pb, int64_t pr) {
  Conv2dParams p;
  p.n = n, p.c = p.oc = p.groups = c, p.h = h, p.w = w, p.kh = kh, p.kw = kw;
  p.sh = p.sw = s, p.dh = p.dw = d;
  p.pad_t = pt, p.pad_l = pl, p.pad_b = pb, p.pad_r = pr;
  return p;
}

TEST(X86QDepthwiseNhwc, PackHoldsDifferencesAndSums) {
  const int64_t c = 3, kh = 2, kw = 2;
  const std::vector<uint8_t> w = {1, 2, 3, 4, 10, 20, 30, 40, 255, 0, 128, 7};
  const std::vector<int32_t> zw = {1, 10, 100};
  std::vector<float> f(size_t(QDepthwiseW::floats(c, kh, kw)));
  QDepthwiseW::pack(w.data(), false, zw.data(), true, c, kh, kw, f.data());
  EXPECT_EQ(f, (std::vector<float>{0, 0, 155, 1, 10, -100, 2, 20, 28, 3, 30, -93, 6, 60, -10}));
  const int32_t one = -2;
  QDepthwiseW::pack(w.data(), true, &one, false, c, kh, kw, f.data());
  // s8: 255 is -1, 128 is -128
  EXPECT_EQ(f, (std::vector<float>{3, 12, 1, 4, 22, 2, 5, 32, -126, 6, 42, 9, 18, 108, -114}));
}

TEST(X86QDepthwiseNhwc, ShapesMatchInt64) {
  // n, c, h, w, kh, kw, stride, dilation, pads (top, left, bottom, right)
  const std::vector<Conv2dParams> shapes = {
      shape(1, 1, 5, 5, 3, 3, 1, 1, 1, 1, 1, 1),    shape(1, 3, 7, 7, 3, 3, 1, 1, 1, 1, 1, 1),
      shape(2, 15, 13, 13, 3, 3, 2, 1, 1, 1, 1, 1), shape(1, 16, 13, 7, 3, 3, 2, 1, 0, 1, 1, 0),
      shape(1, 17, 5, 13, 5, 5, 1, 1, 2, 2, 2, 2),  shape(2, 32, 7, 5, 5, 5, 2, 1, 2, 1, 0, 3),
      shape(1, 96, 56, 56, 3, 3, 2, 1, 0, 0, 1, 1), shape(1, 130, 13, 13, 3, 3, 1, 1, 1, 1, 1, 1),
      shape(1, 17, 1, 1, 3, 3, 1, 1, 1, 1, 1, 1),   shape(1, 16, 2, 2, 3, 3, 1, 1, 1, 1, 1, 1),
      shape(2, 33, 1, 7, 3, 3, 1, 1, 1, 1, 1, 1),   shape(1, 15, 7, 1, 3, 3, 2, 1, 1, 1, 1, 1),
      shape(1, 32, 13, 13, 1, 1, 1, 1, 0, 0, 0, 0), shape(1, 17, 7, 7, 1, 1, 2, 1, 1, 0, 0, 1),
      shape(1, 3, 13, 13, 3, 1, 1, 1, 1, 0, 1, 0),  shape(2, 17, 7, 7, 7, 7, 1, 1, 3, 3, 3, 3),
      shape(1, 96, 13, 13, 7, 7, 2, 1, 3, 2, 1, 3), shape(1, 16, 13, 13, 3, 3, 1, 2, 2, 2, 2, 2),
      shape(1, 130, 13, 7, 5, 5, 1, 2, 3, 0, 2, 3), shape(1, 3, 13, 13, 3, 3, 3, 1, 0, 1, 2, 3),
      shape(1, 32, 13, 13, 5, 5, 3, 2, 3, 3, 3, 3), shape(2, 15, 5, 13, 3, 3, 3, 2, 1, 3, 0, 2),
      shape(1, 17, 56, 56, 3, 3, 1, 1, 1, 1, 1, 1), shape(1, 96, 7, 7, 5, 5, 2, 1, 2, 2, 2, 2),
      shape(1, 1, 13, 13, 7, 7, 3, 2, 3, 3, 3, 3),  shape(1, 130, 2, 5, 3, 3, 2, 1, 1, 1, 1, 1),
  };
  // strides, dilations and kernel sides that differ between height and width
  std::vector<Conv2dParams> all = shapes;
  for (auto [sh, sw, dh, dw, kh, kw] : {std::array<int64_t, 6>{1, 2, 1, 1, 3, 3},
                                        {2, 1, 1, 1, 3, 3},
                                        {1, 1, 2, 1, 3, 3},
                                        {2, 2, 1, 2, 5, 5},
                                        {1, 3, 1, 1, 5, 3},
                                        {2, 1, 1, 1, 1, 7}}) {
    Conv2dParams p = shape(2, 17, 11, 13, kh, kw, 1, 1, 2, 1, 1, 2);
    p.sh = sh, p.sw = sw, p.dh = dh, p.dw = dw;
    all.push_back(p);
  }
  uint32_t seed = 1;
  for (const auto& p : all) {
    Quant q;
    q.xs = seed % 2, q.ws = seed / 2 % 2;
    q.type = seed % 3 == 0 ? QOut::u8 : seed % 3 == 1 ? QOut::s8 : QOut::i32;
    q.zw_per_ch = seed % 4 != 3, q.scale_per_ch = seed % 5 != 4, q.has_bias = seed % 7 != 6;
    check(p, q, seed++);
    if (HasFatalFailure()) return;
  }
}

TEST(X86QDepthwiseNhwc, QuantizationsMatchInt64) {
  // every pairing of the quantization options on a shape with borders, a channel remainder and a
  // pixel-block remainder
  uint32_t seed = 100;
  for (bool xs : {false, true})
    for (bool ws : {false, true})
      for (bool zw_per_ch : {false, true})
        for (bool scale_per_ch : {false, true})
          for (bool has_bias : {false, true})
            for (QOut type : {QOut::u8, QOut::s8, QOut::i32}) {
              if (type == QOut::i32 && scale_per_ch) continue;  // no scale
              Quant q{xs, ws, zw_per_ch, scale_per_ch, has_bias, type};
              check(shape(2, 19, 9, 11, 3, 3, seed % 2 + 1, 1, 1, 1, 1, 1), q, seed);
              ++seed;
              if (HasFatalFailure()) return;
            }
}

TEST(X86QDepthwiseNhwc, BigBiasesMatchInt64) {
  // the kernels' run-time path (the sums not started from the term), in pairs of rows too
  const std::vector<Conv2dParams> shapes = {
      shape(1, 17, 9, 11, 3, 3, 1, 1, 1, 1, 1, 1), shape(2, 32, 9, 9, 3, 3, 2, 1, 1, 1, 1, 1),
      shape(1, 16, 7, 12, 5, 5, 1, 1, 2, 2, 2, 2), shape(1, 19, 13, 13, 7, 7, 2, 1, 3, 3, 3, 3),
      shape(1, 33, 6, 6, 3, 3, 1, 2, 2, 2, 2, 2),
  };
  uint32_t seed = 300;
  for (const auto& p : shapes)
    for (auto [type, big] : {std::pair{QOut::u8, 1}, {QOut::s8, 1}, {QOut::i32, 1}, {QOut::i32, 2}}) {
      Quant q;
      q.xs = seed % 2, q.ws = seed / 2 % 2, q.type = type, q.big_bias = big;
      check(p, q, seed++);
      if (HasFatalFailure()) return;
    }
}

}  // namespace
}  // namespace tessera::kernels::x86
