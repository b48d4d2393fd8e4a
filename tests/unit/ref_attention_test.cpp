// Reference kernels of the attention family against naive double loops.
#include <limits>

#include "ref_nn_test_util.h"

namespace tessera::testing {
namespace {
using namespace nn;

// Naive attention on 4-D [B, H, S, D] tensors with GQA, optional additive
// mask [Sq, T], causal masking and past key/values.
std::vector<double> naive_attention(const Tensor& q, const Tensor& k, const Tensor& v, const std::vector<double>* mask,
                                    bool causal, double scale, double softcap, int64_t past) {
  const int64_t B = q.dim(0), Hq = q.dim(1), Sq = q.dim(2), D = q.dim(3), Hk = k.dim(1), T = k.dim(2), Dv = v.dim(3);
  const auto vq = vals(q), vk = vals(k), vv = vals(v);
  std::vector<double> out;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < Hq; ++h) {
      const int64_t kh = h / (Hq / Hk);
      for (int64_t i = 0; i < Sq; ++i) {
        std::vector<double> s(static_cast<size_t>(T));
        double m = -1e300;
        for (int64_t j = 0; j < T; ++j) {
          double d = 0;
          for (int64_t e = 0; e < D; ++e) d += vq[size_t(((b * Hq + h) * Sq + i) * D + e)] * vk[size_t(((b * Hk + kh) * T + j) * D + e)];
          d *= scale;
          if (softcap > 0) d = softcap * std::tanh(d / softcap);
          if (mask) d += (*mask)[size_t(i * T + j)];
          if (causal && j > i + past) d = -std::numeric_limits<double>::infinity();
          s[size_t(j)] = d;
          m = std::max(m, d);
        }
        double sum = 0;
        for (double& x : s) sum += (x = std::exp(x - m));
        for (int64_t e = 0; e < Dv; ++e) {
          double acc = 0;
          for (int64_t j = 0; j < T; ++j) acc += s[size_t(j)] / sum * vv[size_t(((b * Hk + kh) * T + j) * Dv + e)];
          out.push_back(acc);
        }
      }
    }
  return out;
}

// [B, S, H*D] -> [B, H, S, D]
Tensor to_4d(const Tensor& t, int64_t h) {
  const int64_t B = t.dim(0), S = t.dim(1), D = t.dim(2) / h;
  const auto v = vals(t);
  std::vector<float> o(v.size());
  for (int64_t b = 0; b < B; ++b)
    for (int64_t s = 0; s < S; ++s)
      for (int64_t hh = 0; hh < h; ++hh)
        for (int64_t d = 0; d < D; ++d) o[size_t(((b * h + hh) * S + s) * D + d)] = float(v[size_t(((b * S + s) * h + hh) * D + d)]);
  return f32(o, {B, h, S, D});
}

TEST(RefAttention, GqaCausalSoftcap) {
  Tensor q = rand_tensor({2, 6, 3, 4}, 1), k = rand_tensor({2, 2, 5, 4}, 2), v = rand_tensor({2, 2, 5, 3}, 3);
  for (int causal = 0; causal < 2; ++causal)
    for (float softcap : {0.0f, 0.7f}) {
      auto out = run_ref("Attention", {q, k, v}, {{"is_causal", attr_i(causal)}, {"softcap", attr_f(softcap)}});
      EXPECT_EQ(out[0].tensor.shape(), (Shape{2, 6, 3, 3}));
      expect_close(vals(out[0]), naive_attention(q, k, v, nullptr, causal, 0.5, softcap, 0));
    }
}

TEST(RefAttention, MasksAndScale) {
  Tensor q = rand_tensor({1, 2, 3, 4}, 4), k = rand_tensor({1, 2, 4, 4}, 5), v = rand_tensor({1, 2, 4, 4}, 6);
  Tensor fm = rand_tensor({3, 4}, 7);
  auto out = run_ref("Attention", {q, k, v, fm}, {{"scale", attr_f(0.1f)}});
  const auto vm = vals(fm);
  expect_close(vals(out[0]), naive_attention(q, k, v, &vm, false, double(0.1f), 0, 0));
  // Boolean mask: false -> -inf.
  Tensor bm(DType::boolean, {3, 4});
  std::vector<double> as_float;
  for (int i = 0; i < 12; ++i) {
    bm.data<bool>()[i] = (i % 3) != 1;
    as_float.push_back((i % 3) != 1 ? 0.0 : -std::numeric_limits<double>::infinity());
  }
  auto ob = run_ref("Attention", {q, k, v, bm});
  expect_close(vals(ob[0]), naive_attention(q, k, v, &as_float, false, 0.5, 0, 0));
  // A mask narrower than the kv length is padded with -inf.
  Tensor narrow = f32(std::vector<float>(9, 0.0f), {3, 3});
  auto on = run_ref("Attention", {q, k, v, narrow});
  std::vector<double> padded(12, 0.0);
  for (int i = 0; i < 3; ++i) padded[size_t(i * 4 + 3)] = -std::numeric_limits<double>::infinity();
  expect_close(vals(on[0]), naive_attention(q, k, v, &padded, false, 0.5, 0, 0));
}

TEST(RefAttention, ThreeDimensionalMatchesFourDimensional) {
  Tensor q = rand_tensor({2, 3, 4 * 2}, 8), k = rand_tensor({2, 5, 2 * 2}, 9), v = rand_tensor({2, 5, 2 * 3}, 10);
  auto out = run_ref("Attention", {q, k, v}, {{"q_num_heads", attr_i(4)}, {"kv_num_heads", attr_i(2)}});
  EXPECT_EQ(out[0].tensor.shape(), (Shape{2, 3, 12}));
  const auto want4 = naive_attention(to_4d(q, 4), to_4d(k, 2), to_4d(v, 2), nullptr, false, 1 / std::sqrt(2.0), 0, 0);
  // want4 is [B, H, S, Dv]; compare against out transposed to that layout.
  const auto got = vals(out[0]);
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t h = 0; h < 4; ++h)
      for (int64_t s = 0; s < 3; ++s)
        for (int64_t d = 0; d < 3; ++d)
          EXPECT_NEAR(got[size_t(((b * 3 + s) * 4 + h) * 3 + d)], want4[size_t(((b * 4 + h) * 3 + s) * 3 + d)], 1e-5);
  EXPECT_THROW(run_ref("Attention", {q, k, v}), Error);  // heads missing for 3-D
}

TEST(RefAttention, PastAndPresent) {
  Tensor q = rand_tensor({1, 2, 2, 4}, 11), k = rand_tensor({1, 2, 2, 4}, 12), v = rand_tensor({1, 2, 2, 4}, 13);
  Tensor pk = rand_tensor({1, 2, 3, 4}, 14), pv = rand_tensor({1, 2, 3, 4}, 15);
  auto out = run_ref("Attention", {q, k, v, DataValue(), pk, pv}, {{"is_causal", attr_i(1)}, {"qk_matmul_output_mode", attr_i(3)}}, 4);
  ASSERT_EQ(out[1].tensor.shape(), (Shape{1, 2, 5, 4}));
  // present = concat(past, current) along the sequence.
  const auto vpk = vals(pk), vk = vals(k), vp = vals(out[1]);
  for (int64_t h = 0; h < 2; ++h)
    for (int64_t t = 0; t < 5; ++t)
      for (int64_t d = 0; d < 4; ++d)
        EXPECT_EQ(vp[size_t((h * 5 + t) * 4 + d)], t < 3 ? vpk[size_t((h * 3 + t) * 4 + d)] : vk[size_t((h * 2 + t - 3) * 4 + d)]);
  expect_close(vals(out[0]), naive_attention(q, out[1].tensor, out[2].tensor, nullptr, true, 0.5, 0, 3));
  // qk output (mode 3 = softmax probabilities): rows sum to 1, causal entries are 0.
  const auto probs = vals(out[3]);
  EXPECT_EQ(out[3].tensor.shape(), (Shape{1, 2, 2, 5}));
  for (int64_t r = 0; r < 4; ++r) {
    double s = 0;
    for (int64_t j = 0; j < 5; ++j) s += probs[size_t(r * 5 + j)];
    EXPECT_NEAR(s, 1.0, 1e-6);
  }
  EXPECT_EQ(probs[4], 0.0);  // query 0 may not see position 4 (> 3 + 0)
  EXPECT_THROW(run_ref("Attention", {q, k, v, DataValue(), pk}), Error);
}

TEST(RefAttention, RotaryEmbedding) {
  const int64_t B = 2, H = 2, S = 3, D = 6;
  Tensor x = rand_tensor({B, H, S, D}, 16), cosc = rand_tensor({8, 2}, 17), sinc = rand_tensor({8, 2}, 18);
  Tensor pos = i64({0, 5, 7, 1, 2, 3}, {B, S});
  for (int inter = 0; inter < 2; ++inter) {
    auto out = run_ref("RotaryEmbedding", {x, cosc, sinc, pos}, {{"interleaved", attr_i(inter)}, {"rotary_embedding_dim", attr_i(4)}});
    const auto vx = vals(x), vc = vals(cosc), vs = vals(sinc), vo = vals(out[0]), vp = vals(pos);
    for (int64_t b = 0; b < B; ++b)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t s = 0; s < S; ++s) {
          const size_t base = size_t(((b * H + h) * S + s) * D);
          const size_t p = size_t(vp[size_t(b * S + s)]);
          for (size_t i = 0; i < 2; ++i) {
            const size_t a = inter ? 2 * i : i, c = inter ? 2 * i + 1 : i + 2;
            EXPECT_NEAR(vo[base + a], vc[p * 2 + i] * vx[base + a] - vs[p * 2 + i] * vx[base + c], 1e-6);
            EXPECT_NEAR(vo[base + c], vs[p * 2 + i] * vx[base + a] + vc[p * 2 + i] * vx[base + c], 1e-6);
          }
          EXPECT_EQ(vo[base + 4], vx[base + 4]);  // beyond rotary_embedding_dim: unchanged
          EXPECT_EQ(vo[base + 5], vx[base + 5]);
        }
  }
  EXPECT_THROW(run_ref("RotaryEmbedding", {x, cosc, sinc, i64({0, 9, 0, 0, 0, 0}, {B, S})}, {{"rotary_embedding_dim", attr_i(4)}}), Error);
  EXPECT_THROW(run_ref("RotaryEmbedding", {x, cosc, sinc, pos}), Error);  // cache width != D/2
}

TEST(RefAttention, ShapeInferenceMatchesKernels) {
  {
    Tensor q = rand_tensor({2, 3, 8}, 1), k = rand_tensor({2, 5, 4}, 2), v = rand_tensor({2, 5, 6}, 3);
    Tensor pk = rand_tensor({2, 2, 4, 2}, 4), pv = rand_tensor({2, 2, 4, 3}, 5);
    AttrMap at{{"q_num_heads", attr_i(4)}, {"kv_num_heads", attr_i(2)}};
    auto out = run_ref("Attention", {q, k, v, DataValue(), pk, pv}, at, 4);
    auto ty = infer_node("Attention",
                         {{DType::f32, {2, 3, 8}}, {DType::f32, {2, 5, 4}}, {DType::f32, {2, 5, 6}}, {DType::f32, {}, nullptr, false},
                          {DType::f32, {2, 2, 4, 2}}, {DType::f32, {2, 2, 4, 3}}},
                         at, 4);
    for (size_t i = 0; i < 4; ++i) EXPECT_EQ(static_shape(ty[i]), out[i].tensor.shape()) << i;
  }
  {
    AttrMap at{{"q_num_heads", attr_i(4)}, {"kv_num_heads", attr_i(2)}, {"update_rule", attr_s("linear")}};
    auto out = run_ref("LinearAttention", {rand_tensor({2, 3, 8}, 1), rand_tensor({2, 3, 4}, 2), rand_tensor({2, 3, 6}, 3)}, at, 2);
    auto ty = infer_node("LinearAttention", {{DType::f32, {2, 3, 8}}, {DType::f32, {2, 3, 4}}, {DType::f32, {2, 3, 6}}}, at, 2);
    for (size_t i = 0; i < 2; ++i) EXPECT_EQ(static_shape(ty[i]), out[i].tensor.shape()) << i;
  }
  auto re = infer_node("RotaryEmbedding", {{DType::f16, {2, 3, 8}}, {DType::f16, {4, 2}}, {DType::f16, {4, 2}}}, {{"num_heads", attr_i(2)}});
  EXPECT_EQ(static_shape(re[0]), (Shape{2, 3, 8}));
  EXPECT_THROW(infer_node("Attention", {{DType::f32, {2, 3, 8}}, {DType::f32, {2, 5, 4}}, {DType::f32, {2, 5, 6}}}, {}), Error);
}

TEST(RefAttention, LinearAttentionRecurrence) {
  // gated_delta against the recurrence written out for one head, T = 3.
  const int64_t T = 3, dk = 2, dv = 2;
  Tensor q = rand_tensor({1, T, dk}, 1), k = rand_tensor({1, T, dk}, 2), v = rand_tensor({1, T, dv}, 3);
  Tensor g = rand_tensor({1, T, 1}, 4, DType::f32, -1, 0), b = rand_tensor({1, T, 1}, 5, DType::f32, 0, 1);
  auto out = run_ref("LinearAttention", {q, k, v, DataValue(), g, b},
                     {{"q_num_heads", attr_i(1)}, {"kv_num_heads", attr_i(1)}, {"scale", attr_f(0.5f)}}, 2);
  const auto vq = vals(q), vk = vals(k), vv = vals(v), vg = vals(g), vb = vals(b);
  double S[2][2] = {{0, 0}, {0, 0}};
  for (int64_t t = 0; t < T; ++t) {
    for (auto& row : S)
      for (double& e : row) e *= std::exp(vg[size_t(t)]);
    double u[2];
    for (int j = 0; j < 2; ++j) {
      const double r = S[0][j] * vk[size_t(t * 2)] + S[1][j] * vk[size_t(t * 2 + 1)];
      u[j] = vb[size_t(t)] * (vv[size_t(t * 2 + j)] - r);
    }
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 2; ++j) S[i][j] += vk[size_t(t * 2 + i)] * u[j];
    for (int j = 0; j < 2; ++j)
      EXPECT_NEAR(vals(out[0])[size_t(t * 2 + j)], 0.5 * (vq[size_t(t * 2)] * S[0][j] + vq[size_t(t * 2 + 1)] * S[1][j]), 1e-6);
  }
  expect_close(vals(out[1]), {S[0][0], S[0][1], S[1][0], S[1][1]});
  EXPECT_THROW(run_ref("LinearAttention", {q, k, v}, {{"q_num_heads", attr_i(1)}, {"kv_num_heads", attr_i(1)}}), Error);
}

}  // namespace
}  // namespace tessera::testing
