// Reference kernels of the conv family against naive loops and adjoint identities.
#include "ref_nn_test_util.h"

namespace tessera::testing {
namespace {
using namespace nn;

struct ConvCase {
  Shape x;  // [N, C, H, W]
  int64_t m, kh, kw, group;
  std::vector<int64_t> strides, dil, pads;  // pads: top, left, bottom, right
};

// Naive 2-D conv over an explicitly zero-padded copy of X.
std::vector<double> naive_conv2d(const Tensor& x, const Tensor& w, const std::vector<double>& bias, const ConvCase& c,
                                 int64_t& oh, int64_t& ow) {
  const int64_t n = c.x[0], ch = c.x[1], h = c.x[2], wd = c.x[3];
  const int64_t ph = h + c.pads[0] + c.pads[2], pw = wd + c.pads[1] + c.pads[3];
  const auto vx = vals(x), vw = vals(w);
  std::vector<double> padded(size_t(n * ch * ph * pw), 0.0);
  for (int64_t b = 0; b < n; ++b)
    for (int64_t ci = 0; ci < ch; ++ci)
      for (int64_t y = 0; y < h; ++y)
        for (int64_t xx = 0; xx < wd; ++xx)
          padded[size_t(((b * ch + ci) * ph + y + c.pads[0]) * pw + xx + c.pads[1])] = vx[size_t(((b * ch + ci) * h + y) * wd + xx)];
  oh = (ph - ((c.kh - 1) * c.dil[0] + 1)) / c.strides[0] + 1;
  ow = (pw - ((c.kw - 1) * c.dil[1] + 1)) / c.strides[1] + 1;
  const int64_t cg = ch / c.group, mg = c.m / c.group;
  std::vector<double> out;
  for (int64_t b = 0; b < n; ++b)
    for (int64_t mi = 0; mi < c.m; ++mi)
      for (int64_t oy = 0; oy < oh; ++oy)
        for (int64_t ox = 0; ox < ow; ++ox) {
          double s = bias.empty() ? 0.0 : bias[size_t(mi)];
          const int64_t g = mi / mg;
          for (int64_t cj = 0; cj < cg; ++cj)
            for (int64_t ky = 0; ky < c.kh; ++ky)
              for (int64_t kx = 0; kx < c.kw; ++kx)
                s += padded[size_t(((b * ch + g * cg + cj) * ph + oy * c.strides[0] + ky * c.dil[0]) * pw + ox * c.strides[1] +
                                   kx * c.dil[1])] *
                     vw[size_t(((mi * cg + cj) * c.kh + ky) * c.kw + kx)];
          out.push_back(s);
        }
  return out;
}

TEST(RefConv, Conv2dMatchesNaive) {
  const std::vector<ConvCase> cases = {
      {{1, 1, 5, 5}, 1, 3, 3, 1, {1, 1}, {1, 1}, {0, 0, 0, 0}},
      {{2, 3, 7, 6}, 4, 1, 1, 1, {1, 1}, {1, 1}, {0, 0, 0, 0}},      // 1x1 kernel, batch 2
      {{1, 2, 11, 13}, 3, 3, 2, 1, {4, 3}, {1, 1}, {1, 0, 2, 1}},    // stride > kernel, asymmetric pads
      {{2, 4, 7, 7}, 4, 3, 3, 4, {1, 2}, {1, 1}, {2, 2, 2, 2}},      // depthwise, padding > kernel/2
      {{1, 6, 9, 8}, 4, 2, 3, 2, {2, 1}, {2, 3}, {1, 2, 1, 2}},      // groups + dilations
      {{3, 5, 5, 3}, 7, 5, 3, 1, {1, 1}, {1, 1}, {0, 1, 0, 1}},      // primes
  };
  uint32_t seed = 1;
  for (const ConvCase& c : cases) {
    Tensor x = rand_tensor(c.x, seed++), w = rand_tensor({c.m, c.x[1] / c.group, c.kh, c.kw}, seed++);
    Tensor b = rand_tensor({c.m}, seed++);
    auto out = run_ref("Conv", {x, w, b},
                       {{"group", attr_i(c.group)}, {"strides", ints(c.strides)}, {"dilations", ints(c.dil)},
                        {"pads", ints(c.pads)}});
    int64_t oh, ow;
    const auto want = naive_conv2d(x, w, vals(b), c, oh, ow);
    EXPECT_EQ(out[0].tensor.shape(), (Shape{c.x[0], c.m, oh, ow}));
    expect_close(vals(out[0]), want);
  }
}

TEST(RefConv, Conv1dAnd3dAgreeWith2d) {
  // A 1-D conv equals a 2-D conv with H = 1; a 3-D conv with D = 1 likewise.
  Tensor x1 = rand_tensor({2, 3, 9}, 1), w1 = rand_tensor({4, 3, 3}, 2);
  auto o1 = run_ref("Conv", {x1, w1}, {{"strides", ints({2})}, {"pads", ints({1, 2})}});
  auto o2 = run_ref("Conv", {x1.reshape({2, 3, 1, 9}), w1.reshape({4, 3, 1, 3})},
                    {{"strides", ints({1, 2})}, {"pads", ints({0, 1, 0, 2})}});
  expect_close(vals(o1[0]), vals(o2[0]));
  auto o3 = run_ref("Conv", {x1.reshape({2, 3, 1, 1, 9}), w1.reshape({4, 3, 1, 1, 3})},
                    {{"strides", ints({1, 1, 2})}, {"pads", ints({0, 0, 1, 0, 0, 2})}});
  expect_close(vals(o1[0]), vals(o3[0]));
  EXPECT_EQ(o3[0].tensor.shape(), (Shape{2, 4, 1, 1, 5}));
}

TEST(RefConv, AutoPad) {
  Tensor x = rand_tensor({1, 2, 7, 6}, 3), w = rand_tensor({3, 2, 3, 4}, 4);
  // SAME_UPPER with stride 2: out = ceil(in / 2); total pad = (out-1)*2 + k - in; extra at the end.
  auto upper = run_ref("Conv", {x, w}, {{"auto_pad", attr_s("SAME_UPPER")}, {"strides", ints({2, 2})}});
  EXPECT_EQ(upper[0].tensor.shape(), (Shape{1, 3, 4, 3}));
  // rows: total = 3*2+3-7 = 2 -> 1,1; cols: total = 2*2+4-6 = 2 -> 1,1
  auto explicit_pads = run_ref("Conv", {x, w}, {{"pads", ints({1, 1, 1, 1})}, {"strides", ints({2, 2})}});
  expect_close(vals(upper[0]), vals(explicit_pads[0]));
  Tensor w2 = rand_tensor({3, 2, 2, 2}, 5);
  auto lower = run_ref("Conv", {x, w2}, {{"auto_pad", attr_s("SAME_LOWER")}});
  auto lower_explicit = run_ref("Conv", {x, w2}, {{"pads", ints({1, 1, 0, 0})}});
  expect_close(vals(lower[0]), vals(lower_explicit[0]));
  auto valid = run_ref("Conv", {x, w}, {{"auto_pad", attr_s("VALID")}, {"pads", ints({5, 5, 5, 5})}});
  EXPECT_EQ(valid[0].tensor.shape(), (Shape{1, 3, 5, 3}));
}

TEST(RefConv, ConvRejectsBadInput) {
  Tensor x = rand_tensor({1, 4, 5, 5}, 1);
  EXPECT_THROW(run_ref("Conv", {x, rand_tensor({2, 3, 3, 3}, 2)}), Error);                          // channels
  EXPECT_THROW(run_ref("Conv", {x, rand_tensor({3, 2, 3, 3}, 2)}, {{"group", attr_i(2)}}), Error);  // M % group
  EXPECT_THROW(run_ref("Conv", {x, rand_tensor({2, 4, 7, 7}, 2)}), Error);                          // kernel > input
  EXPECT_THROW(run_ref("Conv", {x, rand_tensor({2, 4, 3}, 2)}), Error);                             // rank
  EXPECT_THROW(run_ref("Conv", {x, rand_tensor({2, 4, 3, 3}, 2), rand_tensor({3}, 3)}), Error);     // bias
}

double dot(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

TEST(RefConv, ConvTransposeIsAdjointOfConv) {
  // <Conv(x, W), y> == <x, ConvTranspose(y, W)> when ConvTranspose produces x's shape.
  struct Case {
    Shape x;
    int64_t m, k, group;
    std::vector<int64_t> strides, dil, pads;
  };
  uint32_t seed = 20;
  for (const Case& c : {Case{{1, 2, 7, 7}, 3, 3, 1, {1, 1}, {1, 1}, {0, 0, 0, 0}},
                        Case{{2, 4, 9, 8}, 6, 3, 2, {2, 2}, {1, 1}, {1, 1, 1, 1}},
                        Case{{1, 3, 10, 11}, 3, 2, 3, {3, 2}, {2, 1}, {0, 1, 2, 0}}}) {
    Tensor x = rand_tensor(c.x, seed++);
    Tensor w = rand_tensor({c.m, c.x[1] / c.group, c.k, c.k}, seed++);
    AttrMap at{{"group", attr_i(c.group)},
               {"strides", ints(c.strides)},
               {"dilations", ints(c.dil)},
               {"pads", ints(c.pads)}};
    auto y = run_ref("Conv", {x, w}, at);
    Tensor r = rand_tensor(y[0].tensor.shape(), seed++);
    // ConvTranspose's W is [C_in_of_transpose = M, C/group, k, k]: the same tensor.
    // output_padding makes ConvTranspose produce exactly x's shape.
    std::vector<int64_t> opad;
    for (size_t i = 0; i < 2; ++i) {
      const int64_t full = c.strides[i] * (y[0].tensor.dim(int64_t(i) + 2) - 1) + (c.k - 1) * c.dil[i] + 1 -
                           c.pads[i] - c.pads[i + 2];
      opad.push_back(c.x[i + 2] - full);
    }
    auto at2 = at;
    at2["output_padding"] = ints(opad);
    auto xt = run_ref("ConvTranspose", {r, w}, at2);
    ASSERT_EQ(xt[0].tensor.shape(), x.shape());
    EXPECT_NEAR(dot(vals(y[0]), vals(r)), dot(vals(x), vals(xt[0])), 1e-4);
  }
}

TEST(RefConv, ConvTransposeShapes) {
  Tensor x = rand_tensor({1, 2, 3, 3}, 1), w = rand_tensor({2, 3, 3, 3}, 2);
  EXPECT_EQ(run_ref("ConvTranspose", {x, w})[0].tensor.shape(), (Shape{1, 3, 5, 5}));
  EXPECT_EQ(run_ref("ConvTranspose", {x, w}, {{"strides", ints({3, 2})}})[0].tensor.shape(), (Shape{1, 3, 9, 7}));
  auto os = run_ref("ConvTranspose", {x, w}, {{"strides", ints({3, 2})}, {"output_shape", ints({10, 8})}});
  EXPECT_EQ(os[0].tensor.shape(), (Shape{1, 3, 10, 8}));
  // The extra row / column (beyond the natural 9x7) is zero: padding was negative at the end.
  auto natural = run_ref("ConvTranspose", {x, w}, {{"strides", ints({3, 2})}});
  const auto a = vals(os[0]), b = vals(natural[0]);
  for (int64_t c = 0; c < 3; ++c)
    for (int64_t i = 0; i < 10; ++i)
      for (int64_t j = 0; j < 8; ++j) {
        const double got = a[size_t((c * 10 + i) * 8 + j)];
        if (i < 9 && j < 7) EXPECT_NEAR(got, b[size_t((c * 9 + i) * 7 + j)], 1e-6);
        else EXPECT_EQ(got, 0.0);
      }
  auto same = run_ref("ConvTranspose", {x, w}, {{"strides", ints({2, 2})}, {"auto_pad", attr_s("SAME_UPPER")}});
  EXPECT_EQ(same[0].tensor.shape(), (Shape{1, 3, 6, 6}));
  auto grouped = run_ref("ConvTranspose", {rand_tensor({1, 4, 3, 3}, 3), rand_tensor({4, 2, 2, 2}, 4)}, {{"group", attr_i(2)}});
  EXPECT_EQ(grouped[0].tensor.shape(), (Shape{1, 4, 4, 4}));
  EXPECT_THROW(run_ref("ConvTranspose", {x, rand_tensor({3, 3, 3, 3}, 2)}), Error);
}

TEST(RefConv, Col2ImIsAdjointOfIm2Col) {
  // Build im2col naively; <im2col(x), c> == <x, Col2Im(c)>.
  const int64_t n = 2, ch = 2, h = 6, w = 5, kh = 2, kw = 3;
  const std::vector<int64_t> st{2, 1}, dl{1, 2}, pd{1, 0, 1, 1};
  Tensor x = rand_tensor({n, ch, h, w}, 5);
  const auto vx = vals(x);
  const int64_t oh = (h + pd[0] + pd[2] - ((kh - 1) * dl[0] + 1)) / st[0] + 1;
  const int64_t ow = (w + pd[1] + pd[3] - ((kw - 1) * dl[1] + 1)) / st[1] + 1;
  std::vector<double> cols;
  for (int64_t b = 0; b < n; ++b)
    for (int64_t c = 0; c < ch; ++c)
      for (int64_t ky = 0; ky < kh; ++ky)
        for (int64_t kx = 0; kx < kw; ++kx)
          for (int64_t oy = 0; oy < oh; ++oy)
            for (int64_t ox = 0; ox < ow; ++ox) {
              const int64_t y = oy * st[0] - pd[0] + ky * dl[0], xx = ox * st[1] - pd[1] + kx * dl[1];
              cols.push_back(y >= 0 && y < h && xx >= 0 && xx < w ? vx[size_t(((b * ch + c) * h + y) * w + xx)] : 0.0);
            }
  Tensor r = rand_tensor({n, ch * kh * kw, oh * ow}, 6);
  auto img = run_ref("Col2Im", {r, i64({h, w}, {2}), i64({kh, kw}, {2})},
                     {{"strides", ints(st)}, {"dilations", ints(dl)}, {"pads", ints(pd)}});
  ASSERT_EQ(img[0].tensor.shape(), x.shape());
  EXPECT_NEAR(dot(cols, vals(r)), dot(vx, vals(img[0])), 1e-4);
  EXPECT_THROW(run_ref("Col2Im", {rand_tensor({1, 5, 4}, 1), i64({h, w}, {2}), i64({kh, kw}, {2})}), Error);
}

TEST(RefConv, DeformConvWithZeroOffsetsIsConv) {
  Tensor x = rand_tensor({2, 4, 6, 5}, 1), w = rand_tensor({6, 2, 3, 2}, 2), b = rand_tensor({6}, 3);
  AttrMap at{{"group", attr_i(2)}, {"pads", ints({1, 0, 1, 1})}, {"strides", ints({1, 2})}};
  auto conv = run_ref("Conv", {x, w, b}, at);
  const Shape os = conv[0].tensor.shape();
  at["offset_group"] = attr_i(2);
  Tensor off(DType::f32, {2, 2 * 3 * 2 * 2, os[2], os[3]});
  Tensor mask(DType::f32, {2, 2 * 3 * 2, os[2], os[3]});
  for (int64_t i = 0; i < mask.numel(); ++i) mask.data<float>()[i] = 1.0f;
  auto dc = run_ref("DeformConv", {x, w, off, b, mask}, at);
  expect_close(vals(dc[0]), vals(conv[0]));
  // A whole-pixel offset of +1 along x equals the conv of x shifted left by one (zero fill).
  Tensor x1 = rand_tensor({1, 1, 4, 4}, 9), w1 = rand_tensor({1, 1, 1, 1}, 10);
  Tensor off1(DType::f32, {1, 2, 4, 4});
  for (int64_t i = 16; i < 32; ++i) off1.data<float>()[i] = 1.0f;  // dx channel
  auto shifted = run_ref("DeformConv", {x1, w1, off1});
  const auto vx = vals(x1), vs = vals(shifted[0]);
  const double wv = vals(w1)[0];
  for (int64_t y = 0; y < 4; ++y)
    for (int64_t xx = 0; xx < 4; ++xx)
      EXPECT_NEAR(vs[size_t(y * 4 + xx)], xx + 1 < 4 ? wv * vx[size_t(y * 4 + xx + 1)] : 0.0, 1e-6);
}

TEST(RefConv, ShapeInferenceMatchesKernels) {
  struct Case {
    std::string op;
    std::vector<Shape> in;
    AttrMap attrs;
  };
  const std::vector<Case> cases = {
      {"Conv", {{2, 4, 9, 8}, {6, 2, 3, 2}}, {{"group", attr_i(2)}, {"strides", ints({2, 3})}, {"pads", ints({1, 0, 2, 1})}}},
      {"Conv", {{1, 3, 7, 6}, {2, 3, 3, 4}}, {{"auto_pad", attr_s("SAME_UPPER")}, {"strides", ints({2, 2})}}},
      {"Conv", {{1, 3, 7, 6}, {2, 3, 3, 4}}, {{"auto_pad", attr_s("VALID")}, {"dilations", ints({2, 1})}}},
      {"Conv", {{1, 2, 5, 5, 5}, {3, 2, 2, 2, 2}}, {}},
      {"ConvTranspose", {{1, 2, 3, 3}, {2, 3, 3, 3}}, {{"strides", ints({3, 2})}, {"output_padding", ints({1, 1})}}},
      {"ConvTranspose", {{1, 2, 3, 3}, {2, 3, 3, 3}}, {{"strides", ints({2, 2})}, {"auto_pad", attr_s("SAME_LOWER")}}},
      {"ConvTranspose", {{1, 2, 3, 3}, {2, 3, 3, 3}}, {{"output_shape", ints({10, 8})}, {"strides", ints({3, 2})}}},
      {"ConvTranspose", {{1, 4, 5}, {4, 1, 3}}, {{"group", attr_i(4)}, {"pads", ints({1, 2})}, {"dilations", ints({2})}}},
      {"CausalConvWithState", {{2, 3, 5}, {3, 1, 4}}, {}},
  };
  uint32_t seed = 1;
  for (const Case& c : cases) {
    std::vector<DataValue> ins;
    std::vector<InferInput> types;
    for (const Shape& s : c.in) {
      ins.push_back(rand_tensor(s, seed++));
      types.push_back({DType::f32, s});
    }
    const size_t nout = c.op == "CausalConvWithState" ? 2 : 1;
    auto out = run_ref(c.op, ins, c.attrs, nout);
    auto ty = infer_node(c.op, types, c.attrs, nout);
    for (size_t i = 0; i < nout; ++i) EXPECT_EQ(static_shape(ty[i]), out[i].tensor.shape()) << c.op;
  }
  Tensor img = i64({6, 5}, {2}), blk = i64({2, 3}, {2});
  auto col = infer_node("Col2Im", {{DType::f32, {2, 12, 12}}, {DType::i64, {2}, &img}, {DType::i64, {2}, &blk}}, {});
  EXPECT_EQ(static_shape(col[0]), (Shape{2, 2, 6, 5}));
  EXPECT_THROW(infer_node("Conv", {{DType::f32, {1, 4, 5, 5}}, {DType::f32, {2, 3, 3, 3}}}, {}), Error);
  EXPECT_THROW(infer_node("Conv", {{DType::f32, {1, 4, 2, 2}}, {DType::f32, {2, 4, 3, 3}}}, {}), Error);
}

TEST(RefConv, CausalConvWithStateStreams) {
  // Running two halves with the carried state equals one run over the whole sequence.
  Tensor x = rand_tensor({2, 3, 8}, 1), w = rand_tensor({3, 1, 4}, 2), b = rand_tensor({3}, 3);
  AttrMap at{{"activation", attr_s("silu")}};
  auto whole = run_ref("CausalConvWithState", {x, w, b}, at, 2);
  const auto vx = vals(x);
  std::vector<float> h1, h2;
  for (int64_t r = 0; r < 6; ++r)
    for (int64_t t = 0; t < 8; ++t) (t < 5 ? h1 : h2).push_back(float(vx[size_t(r * 8 + t)]));
  auto a = run_ref("CausalConvWithState", {f32(h1, {2, 3, 5}), w, b}, at, 2);
  auto c = run_ref("CausalConvWithState", {f32(h2, {2, 3, 3}), w, b, a[1].tensor}, at, 2);
  const auto vw = vals(whole[0]), va = vals(a[0]), vc = vals(c[0]);
  for (int64_t r = 0; r < 6; ++r)
    for (int64_t t = 0; t < 8; ++t)
      EXPECT_NEAR(vw[size_t(r * 8 + t)], t < 5 ? va[size_t(r * 5 + t)] : vc[size_t(r * 3 + t - 5)], 1e-6);
  expect_close(vals(c[1]), vals(whole[1]));
  // First output position by hand: zeros before the sequence.
  const auto vwt = vals(w), vbias = vals(b);
  const double pre = vbias[0] + vwt[3] * vx[0];
  EXPECT_NEAR(vw[0], pre / (1 + std::exp(-pre)), 1e-6);
}

}  // namespace
}  // namespace tessera::testing
