// Reference kernels of the pool family against naive loops.
#include <limits>

#include "ref_nn_test_util.h"

namespace tessera::testing {
namespace {
using namespace nn;

struct PoolCase {
  Shape x;
  int64_t kh, kw;
  std::vector<int64_t> strides, pads, dil;
  bool ceil;
};

// Naive 2-D pooling: explicit window enumeration; avg divisor per count_include_pad.
void naive_pool(const Tensor& x, const PoolCase& c, bool include_pad, std::vector<double>& mx, std::vector<double>& avg,
                std::vector<double>& arg, int64_t& oh, int64_t& ow) {
  const int64_t n = c.x[0] * c.x[1], h = c.x[2], w = c.x[3];
  auto out_len = [&](int64_t in, int64_t k, int64_t s, int64_t d, int64_t pb, int64_t pe) {
    const double span = double(in + pb + pe - ((k - 1) * d + 1)) / double(s);
    int64_t o = int64_t(c.ceil ? std::ceil(span) : std::floor(span)) + 1;
    if (c.ceil && (o - 1) * s >= in + pb) --o;
    return o;
  };
  oh = out_len(h, c.kh, c.strides[0], c.dil[0], c.pads[0], c.pads[2]);
  ow = out_len(w, c.kw, c.strides[1], c.dil[1], c.pads[1], c.pads[3]);
  const auto v = vals(x);
  for (int64_t p = 0; p < n; ++p)
    for (int64_t oy = 0; oy < oh; ++oy)
      for (int64_t ox = 0; ox < ow; ++ox) {
        double best = -std::numeric_limits<double>::infinity(), sum = 0;
        int64_t bi = -1, cnt = 0, cnt_pad = 0;
        for (int64_t ky = 0; ky < c.kh; ++ky)
          for (int64_t kx = 0; kx < c.kw; ++kx) {
            const int64_t y = oy * c.strides[0] - c.pads[0] + ky * c.dil[0];
            const int64_t xx = ox * c.strides[1] - c.pads[1] + kx * c.dil[1];
            if (y < h + c.pads[2] && xx < w + c.pads[3]) ++cnt_pad;
            if (y < 0 || y >= h || xx < 0 || xx >= w) continue;
            const double e = v[size_t((p * h + y) * w + xx)];
            ++cnt;
            sum += e;
            if (e > best) {
              best = e;
              bi = p * h * w + y * w + xx;
            }
          }
        mx.push_back(best);
        arg.push_back(double(bi));
        avg.push_back(sum / double(include_pad ? cnt_pad : cnt));
      }
}

TEST(RefPool, MaxAndAveragePool2d) {
  const std::vector<PoolCase> cases = {
      {{1, 1, 5, 5}, 2, 2, {1, 1}, {0, 0, 0, 0}, {1, 1}, false},
      {{2, 3, 7, 8}, 3, 3, {2, 2}, {1, 1, 1, 1}, {1, 1}, false},
      {{1, 2, 7, 7}, 3, 2, {2, 3}, {1, 0, 2, 1}, {1, 1}, true},   // ceil mode, asymmetric pads
      {{1, 1, 6, 6}, 1, 1, {3, 3}, {0, 0, 0, 0}, {1, 1}, false},  // stride > kernel
      {{2, 2, 9, 11}, 2, 3, {1, 2}, {1, 1, 0, 1}, {2, 2}, true},  // dilations
      {{1, 1, 4, 4}, 3, 3, {2, 2}, {1, 1, 1, 1}, {1, 1}, true},   // last window starts on the pad
  };
  uint32_t seed = 1;
  for (const PoolCase& c : cases) {
    Tensor x = rand_tensor(c.x, seed++);
    AttrMap at{{"kernel_shape", ints({c.kh, c.kw})},
               {"strides", ints(c.strides)},
               {"pads", ints(c.pads)},
               {"dilations", ints(c.dil)},
               {"ceil_mode", attr_i(c.ceil)}};
    for (int include = 0; include < 2; ++include) {
      std::vector<double> mx, avg, arg;
      int64_t oh, ow;
      naive_pool(x, c, include, mx, avg, arg, oh, ow);
      auto m = run_ref("MaxPool", {x}, at, 2);
      EXPECT_EQ(m[0].tensor.shape(), (Shape{c.x[0], c.x[1], oh, ow}));
      expect_close(vals(m[0]), mx);
      EXPECT_EQ(m[1].tensor.dtype(), DType::i64);
      expect_close(vals(m[1]), arg);
      auto at2 = at;
      at2["count_include_pad"] = attr_i(include);
      auto a = run_ref("AveragePool", {x}, at2);
      expect_close(vals(a[0]), avg);
    }
  }
}

TEST(RefPool, MaxPoolStorageOrderAndIntegers) {
  Tensor x = f32({1, 9, 3, 4, 8, 2, 7, 6, 5}, {1, 1, 3, 3});
  auto row = run_ref("MaxPool", {x}, {{"kernel_shape", ints({3, 3})}}, 2);
  EXPECT_EQ(vals(row[1])[0], 1.0);  // (0,1) row-major
  auto col = run_ref("MaxPool", {x}, {{"kernel_shape", ints({3, 3})}, {"storage_order", attr_i(1)}}, 2);
  EXPECT_EQ(vals(col[1])[0], 3.0);  // (0,1) column-major = 0 + 1*3
  Tensor u(DType::u8, {1, 1, 2, 2});
  for (int i = 0; i < 4; ++i) u.data<uint8_t>()[i] = uint8_t(250 + i);
  auto um = run_ref("MaxPool", {u}, {{"kernel_shape", ints({2, 2})}});
  EXPECT_EQ(um[0].tensor.dtype(), DType::u8);
  EXPECT_EQ(um[0].tensor.data<uint8_t>()[0], 253);
}

TEST(RefPool, SamePaddingAnd1d3d) {
  Tensor x = rand_tensor({1, 2, 5, 5}, 3);
  auto su = run_ref("AveragePool", {x}, {{"kernel_shape", ints({2, 2})}, {"auto_pad", attr_s("SAME_UPPER")}});
  auto se = run_ref("AveragePool", {x}, {{"kernel_shape", ints({2, 2})}, {"pads", ints({0, 0, 1, 1})}});
  EXPECT_EQ(su[0].tensor.shape(), (Shape{1, 2, 5, 5}));
  expect_close(vals(su[0]), vals(se[0]));
  auto sl = run_ref("MaxPool", {x}, {{"kernel_shape", ints({2, 2})}, {"auto_pad", attr_s("SAME_LOWER")}});
  auto sle = run_ref("MaxPool", {x}, {{"kernel_shape", ints({2, 2})}, {"pads", ints({1, 1, 0, 0})}});
  expect_close(vals(sl[0]), vals(sle[0]));
  // 1-D and 3-D agree with 2-D when the extra dims are 1.
  Tensor x1 = rand_tensor({2, 3, 10}, 4);
  auto p1 = run_ref("MaxPool", {x1}, {{"kernel_shape", ints({3})}, {"strides", ints({2})}});
  auto p2 = run_ref("MaxPool", {x1.reshape({2, 3, 1, 10})}, {{"kernel_shape", ints({1, 3})}, {"strides", ints({1, 2})}});
  auto p3 = run_ref("MaxPool", {x1.reshape({2, 3, 1, 1, 10})}, {{"kernel_shape", ints({1, 1, 3})}, {"strides", ints({1, 1, 2})}});
  expect_close(vals(p1[0]), vals(p2[0]));
  expect_close(vals(p1[0]), vals(p3[0]));
}

TEST(RefPool, LpPoolAndGlobalPools) {
  Tensor x = rand_tensor({2, 3, 4, 5}, 5);
  const auto v = vals(x);
  auto lp = run_ref("LpPool", {x}, {{"kernel_shape", ints({4, 5})}, {"p", attr_i(3)}});
  auto glp = run_ref("GlobalLpPool", {x}, {{"p", attr_i(3)}});
  auto gavg = run_ref("GlobalAveragePool", {x});
  auto gmax = run_ref("GlobalMaxPool", {x});
  EXPECT_EQ(gavg[0].tensor.shape(), (Shape{2, 3, 1, 1}));
  for (int64_t p = 0; p < 6; ++p) {
    double s3 = 0, s = 0, m = -1e9;
    for (int64_t i = 0; i < 20; ++i) {
      const double e = v[size_t(p * 20 + i)];
      s3 += std::pow(std::fabs(e), 3);
      s += e;
      m = std::max(m, e);
    }
    EXPECT_NEAR(vals(lp[0])[size_t(p)], std::cbrt(s3), 1e-5);
    EXPECT_NEAR(vals(glp[0])[size_t(p)], std::cbrt(s3), 1e-5);
    EXPECT_NEAR(vals(gavg[0])[size_t(p)], s / 20, 1e-6);
    EXPECT_EQ(vals(gmax[0])[size_t(p)], m);
  }
}

TEST(RefPool, MaxUnpoolInvertsMaxPool) {
  Tensor x = rand_tensor({1, 2, 4, 6}, 6);
  AttrMap at{{"kernel_shape", ints({2, 2})}, {"strides", ints({2, 2})}};
  auto mp = run_ref("MaxPool", {x}, at, 2);
  auto up = run_ref("MaxUnpool", {mp[0].tensor, mp[1].tensor}, at);
  ASSERT_EQ(up[0].tensor.shape(), x.shape());
  const auto vu = vals(up[0]), vx = vals(x), idx = vals(mp[1]);
  std::vector<double> want(vx.size(), 0.0);
  for (double i : idx) want[size_t(i)] = vx[size_t(i)];
  expect_close(vu, want);
  // With a larger output_shape, values keep their coordinates.
  auto big = run_ref("MaxUnpool", {mp[0].tensor, mp[1].tensor, i64({1, 2, 5, 7}, {4})}, at);
  EXPECT_EQ(big[0].tensor.shape(), (Shape{1, 2, 5, 7}));
  const auto vb = vals(big[0]);
  for (double i : idx) {
    const int64_t f = int64_t(i), c = f / 24, y = (f % 24) / 6, xx = f % 6;
    EXPECT_EQ(vb[size_t((c * 5 + y) * 7 + xx)], vx[size_t(f)]);
  }
  EXPECT_THROW(run_ref("MaxUnpool", {mp[0].tensor, i64({0, 0, 0, 99, 0, 0, 0, 0, 0, 0, 0, 0}, {1, 2, 2, 3})}, at), Error);
}

TEST(RefPool, RoiPools) {
  // 1x1x4x4 ramp; an ROI covering the whole image with 2x2 bins.
  std::vector<float> ramp(16);
  for (int i = 0; i < 16; ++i) ramp[size_t(i)] = float(i);
  Tensor x = f32(ramp, {1, 1, 4, 4});
  auto mr = run_ref("MaxRoiPool", {x, f32({0, 0, 0, 3, 3}, {1, 5})}, {{"pooled_shape", ints({2, 2})}});
  expect_close(vals(mr[0]), {5, 7, 13, 15});
  // RoiAlign avg on a linear ramp samples the ramp exactly: bin centres.
  auto ra = run_ref("RoiAlign", {x, f32({0, 0, 4, 4}, {1, 4}), i64({0}, {1})},
                    {{"output_height", attr_i(2)}, {"output_width", attr_i(2)}, {"sampling_ratio", attr_i(2)},
                     {"coordinate_transformation_mode", attr_s("half_pixel")}});
  // half_pixel: roi [-0.5, 3.5]; bin 0 samples at 0 and 1 (avg 0.5) -> value 4*0.5 + 0.5
  expect_close(vals(ra[0]), {2.5, 4.5, 10.5, 12.5});
  EXPECT_THROW(run_ref("RoiAlign", {x, f32({0, 0, 4, 4}, {1, 4}), i64({1}, {1})}), Error);
}

TEST(RefPool, RejectsBadAttributes) {
  Tensor x = rand_tensor({1, 1, 4, 4}, 1);
  EXPECT_THROW(run_ref("MaxPool", {x}), Error);
  EXPECT_THROW(run_ref("MaxPool", {x}, {{"kernel_shape", ints({2})}}), Error);
  EXPECT_THROW(run_ref("AveragePool", {x}, {{"kernel_shape", ints({2, 2})}, {"strides", ints({0, 1})}}), Error);
  EXPECT_THROW(run_ref("MaxPool", {x}, {{"kernel_shape", ints({5, 5})}}), Error);
}

TEST(RefPool, ShapeInferenceMatchesKernels) {
  struct Case {
    std::string op;
    Shape x;
    AttrMap attrs;
  };
  const std::vector<Case> cases = {
      {"MaxPool", {1, 1, 4, 4}, {{"kernel_shape", ints({3, 3})}, {"strides", ints({2, 2})}, {"pads", ints({1, 1, 1, 1})}, {"ceil_mode", attr_i(1)}}},
      {"MaxPool", {2, 3, 9, 11}, {{"kernel_shape", ints({2, 3})}, {"dilations", ints({2, 2})}, {"ceil_mode", attr_i(1)}}},
      {"AveragePool", {1, 2, 5, 5}, {{"kernel_shape", ints({2, 2})}, {"auto_pad", attr_s("SAME_LOWER")}, {"strides", ints({2, 2})}}},
      {"AveragePool", {1, 2, 7}, {{"kernel_shape", ints({3})}, {"auto_pad", attr_s("VALID")}, {"strides", ints({2})}}},
      {"LpPool", {1, 2, 4, 4, 4}, {{"kernel_shape", ints({2, 2, 2})}}},
      {"GlobalAveragePool", {2, 3, 4, 5}, {}},
      {"GlobalMaxPool", {2, 3, 7}, {}},
  };
  uint32_t seed = 1;
  for (const Case& c : cases) {
    const size_t nout = c.op == "MaxPool" ? 2 : 1;
    auto out = run_ref(c.op, {rand_tensor(c.x, seed++)}, c.attrs, nout);
    auto ty = infer_node(c.op, {{DType::f32, c.x}}, c.attrs, nout);
    for (size_t i = 0; i < nout; ++i) EXPECT_EQ(static_shape(ty[i]), out[i].tensor.shape()) << c.op;
    if (nout == 2) EXPECT_EQ(ty[1].elem, DType::i64);
  }
  auto up = infer_node("MaxUnpool", {{DType::f32, {1, 1, 2, 2}}, {DType::i64, {1, 1, 2, 2}}},
                       {{"kernel_shape", ints({2, 2})}, {"strides", ints({2, 2})}});
  EXPECT_EQ(static_shape(up[0]), (Shape{1, 1, 4, 4}));
  auto ra = infer_node("RoiAlign", {{DType::f32, {1, 3, 8, 8}}, {DType::f32, {5, 4}}, {DType::i64, {5}}},
                       {{"output_height", attr_i(2)}, {"output_width", attr_i(3)}});
  EXPECT_EQ(static_shape(ra[0]), (Shape{5, 3, 2, 3}));
  EXPECT_THROW(infer_node("MaxPool", {{DType::f32, {1, 1, 4, 4}}}, {{"kernel_shape", ints({2})}}), Error);
}

}  // namespace
}  // namespace tessera::testing
