// Reference kernels of the linalg family against naive double loops.
#include "ref_nn_test_util.h"

namespace tessera::testing {
namespace {
using namespace nn;

// Naive batched matmul with explicit broadcasting of [ba.., m, k] x [bb.., k, n].
std::vector<double> naive_matmul(const Tensor& a, const Tensor& b, const Shape& batch, int64_t m, int64_t k,
                                 int64_t n) {
  const std::vector<double> va = vals(a), vb = vals(b);
  const int64_t ra = a.rank(), rb = b.rank(), r = int64_t(batch.size());
  std::vector<double> out;
  std::vector<int64_t> c(size_t(r), 0);
  const int64_t nb = shape_numel(batch);
  for (int64_t f = 0; f < nb; ++f) {
    int64_t rem = f;
    for (int64_t d = r - 1; d >= 0; --d) {
      c[size_t(d)] = rem % batch[size_t(d)];
      rem /= batch[size_t(d)];
    }
    auto base = [&](const Tensor& t, int64_t rt) {
      int64_t off = 0;
      for (int64_t d = 0; d < rt - 2; ++d) {
        const int64_t dim = t.dim(d);
        off = off * dim + (dim == 1 ? 0 : c[size_t(r - (rt - 2) + d)]);
      }
      return off;
    };
    const int64_t oa = base(a, ra) * m * k, ob = base(b, rb) * k * n;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t q = 0; q < k; ++q) s += va[size_t(oa + i * k + q)] * vb[size_t(ob + q * n + j)];
        out.push_back(s);
      }
  }
  return out;
}

TEST(RefLinalg, MatMulBatchBroadcast) {
  struct Case {
    Shape a, b, batch;
  };
  for (const Case& c : {Case{{2, 1, 3, 5}, {4, 5, 7}, {2, 4}}, Case{{3, 5}, {5, 2}, {}}, Case{{1, 1, 1}, {3, 1, 1}, {3}},
                        Case{{7, 2, 13}, {13, 1}, {7}}}) {
    Tensor a = rand_tensor(c.a, 1), b = rand_tensor(c.b, 2);
    auto out = run_ref("MatMul", {a, b});
    const int64_t m = c.a[c.a.size() - 2], k = c.a.back(), n = c.b.back();
    Shape want = c.batch;
    want.push_back(m);
    want.push_back(n);
    EXPECT_EQ(out[0].tensor.shape(), want);
    expect_close(vals(out[0]), naive_matmul(a, b, c.batch, m, k, n));
  }
}

TEST(RefLinalg, MatMulOneDimensionalOperands) {
  Tensor v = f32({1, 2, 3}, {3}), w = f32({4, 5, 6}, {3});
  auto dot = run_ref("MatMul", {v, w});
  EXPECT_EQ(dot[0].tensor.rank(), 0);
  EXPECT_DOUBLE_EQ(vals(dot[0])[0], 32.0);
  Tensor m = f32({1, 0, 0, 1, 2, 0}, {2, 3});  // [2,3] x [3] -> [2]
  auto mv = run_ref("MatMul", {m, v});
  EXPECT_EQ(mv[0].tensor.shape(), (Shape{2}));
  expect_close(vals(mv[0]), {1, 1 * 1 + 2 * 2});
  Tensor b3 = rand_tensor({4, 3, 2}, 3);  // [3] x [4,3,2] -> [4,2]
  auto vm = run_ref("MatMul", {v, b3});
  EXPECT_EQ(vm[0].tensor.shape(), (Shape{4, 2}));
  const auto vb = vals(b3);
  for (int64_t p = 0; p < 4; ++p)
    for (int64_t j = 0; j < 2; ++j)
      EXPECT_NEAR(vals(vm[0])[size_t(p * 2 + j)], 1 * vb[size_t(p * 6 + j)] + 2 * vb[size_t(p * 6 + 2 + j)] + 3 * vb[size_t(p * 6 + 4 + j)], 1e-5);
}

TEST(RefLinalg, MatMulRejectsBadShapes) {
  EXPECT_THROW(run_ref("MatMul", {rand_tensor({2, 3}, 1), rand_tensor({4, 2}, 2)}), Error);
  EXPECT_THROW(run_ref("MatMul", {rand_tensor({2, 2, 3}, 1), rand_tensor({3, 3, 2}, 2)}), Error);
}

TEST(RefLinalg, MatMulHalfPrecisionAccumulatesWide) {
  // 1 + 1024 small terms: an f16 accumulator would stall at 1; f32+ does not.
  const int64_t k = 1025;
  std::vector<float> a(size_t(k), 1.0f), b(size_t(k), 1.0f / 1024);
  b[0] = 1.0f;
  Tensor ta(DType::f16, {1, k}), tb(DType::f16, {k, 1});
  for (int64_t i = 0; i < k; ++i) {
    ta.data<Float16>()[i] = Float16(a[size_t(i)]);
    tb.data<Float16>()[i] = Float16(b[size_t(i)]);
  }
  auto out = run_ref("MatMul", {ta, tb});
  EXPECT_EQ(out[0].tensor.dtype(), DType::f16);
  EXPECT_DOUBLE_EQ(vals(out[0])[0], 2.0);
}

TEST(RefLinalg, GemmAllAttributes) {
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb)
      for (const Shape& cs : {Shape{}, Shape{1}, Shape{7}, Shape{3, 1}, Shape{3, 7}}) {
        const int64_t m = 3, k = 5, n = 7;
        Tensor a = rand_tensor(ta ? Shape{k, m} : Shape{m, k}, 10), b = rand_tensor(tb ? Shape{n, k} : Shape{k, n}, 11);
        Tensor c = rand_tensor(cs, 12);
        auto out = run_ref("Gemm", {a, b, c},
                           {{"transA", attr_i(ta)}, {"transB", attr_i(tb)}, {"alpha", attr_f(0.5f)}, {"beta", attr_f(-2.0f)}});
        const auto va = vals(a), vb = vals(b), vc = vals(c);
        std::vector<double> want;
        for (int64_t i = 0; i < m; ++i)
          for (int64_t j = 0; j < n; ++j) {
            double s = 0;
            for (int64_t q = 0; q < k; ++q)
              s += (ta ? va[size_t(q * m + i)] : va[size_t(i * k + q)]) * (tb ? vb[size_t(j * k + q)] : vb[size_t(q * n + j)]);
            double cv = cs.empty() ? vc[0] : cs.size() == 1 ? vc[cs[0] == 1 ? 0 : size_t(j)]
                                                            : vc[size_t(cs[1] == 1 ? i : i * n + j)];
            want.push_back(0.5 * s - 2.0 * cv);
          }
        expect_close(vals(out[0]), want);
      }
}

TEST(RefLinalg, GemmWithoutC) {
  Tensor a = f32({1, 2, 3, 4}, {2, 2}), b = f32({5, 6, 7, 8}, {2, 2});
  auto out = run_ref("Gemm", {a, b});
  expect_close(vals(out[0]), {19, 22, 43, 50});
  EXPECT_THROW(run_ref("Gemm", {a, rand_tensor({3, 2}, 1)}), Error);
  EXPECT_THROW(run_ref("Gemm", {a, b, rand_tensor({3}, 1)}), Error);
}

TEST(RefLinalg, EinsumEquations) {
  Tensor a = rand_tensor({3, 4}, 1), b = rand_tensor({4, 5}, 2), sq = rand_tensor({4, 4}, 3);
  Tensor ba = rand_tensor({2, 3, 4}, 4), bb = rand_tensor({2, 4, 5}, 5), bd = rand_tensor({2, 3, 3}, 6);
  // Matmul, explicit and implicit.
  for (const char* eq : {"ij,jk->ik", "ij,jk"}) {
    auto out = run_ref("Einsum", {a, b}, {{"equation", attr_s(eq)}});
    expect_close(vals(out[0]), naive_matmul(a, b, {}, 3, 4, 5));
  }
  // Batched via ellipsis.
  auto bm = run_ref("Einsum", {ba, bb}, {{"equation", attr_s("...ij,...jk->...ik")}});
  EXPECT_EQ(bm[0].tensor.shape(), (Shape{2, 3, 5}));
  expect_close(vals(bm[0]), naive_matmul(ba, bb, {2}, 3, 4, 5));
  // Transpose, trace, diagonal, sum, outer product.
  const auto va = vals(a), vs = vals(sq), vd = vals(bd);
  auto tr = run_ref("Einsum", {a}, {{"equation", attr_s("ij->ji")}});
  EXPECT_EQ(tr[0].tensor.shape(), (Shape{4, 3}));
  EXPECT_DOUBLE_EQ(vals(tr[0])[1 * 3 + 2], va[2 * 4 + 1]);
  auto trace = run_ref("Einsum", {sq}, {{"equation", attr_s("ii")}});
  EXPECT_EQ(trace[0].tensor.rank(), 0);
  EXPECT_NEAR(vals(trace[0])[0], vs[0] + vs[5] + vs[10] + vs[15], 1e-6);
  auto diag = run_ref("Einsum", {bd}, {{"equation", attr_s("...ii->...i")}});
  EXPECT_EQ(diag[0].tensor.shape(), (Shape{2, 3}));
  for (int64_t p = 0; p < 2; ++p)
    for (int64_t i = 0; i < 3; ++i) EXPECT_DOUBLE_EQ(vals(diag[0])[size_t(p * 3 + i)], vd[size_t(p * 9 + i * 4)]);
  auto sum = run_ref("Einsum", {a}, {{"equation", attr_s("ij->i")}});
  for (int64_t i = 0; i < 3; ++i)
    EXPECT_NEAR(vals(sum[0])[size_t(i)], va[size_t(i * 4)] + va[size_t(i * 4 + 1)] + va[size_t(i * 4 + 2)] + va[size_t(i * 4 + 3)], 1e-6);
  Tensor x = f32({1, 2}, {2}), y = f32({3, 4, 5}, {3});
  auto outer = run_ref("Einsum", {x, y}, {{"equation", attr_s("i,j->ij")}});
  expect_close(vals(outer[0]), {3, 4, 5, 6, 8, 10});
  auto inner = run_ref("Einsum", {x, x}, {{"equation", attr_s("i,i")}});
  EXPECT_DOUBLE_EQ(vals(inner[0])[0], 5.0);
  EXPECT_THROW(run_ref("Einsum", {a, b}, {{"equation", attr_s("ij->ij")}}), Error);
  EXPECT_THROW(run_ref("Einsum", {a}, {{"equation", attr_s("ijk->i")}}), Error);
}

TEST(RefLinalg, Det) {
  Tensor m2 = f32({3, 8, 4, 6}, {2, 2});
  EXPECT_NEAR(vals(run_ref("Det", {m2})[0])[0], 3 * 6 - 8 * 4, 1e-5);
  Tensor b = rand_tensor({2, 3, 3, 3}, 7);  // batched 3x3 by cofactor expansion
  auto out = run_ref("Det", {b});
  EXPECT_EQ(out[0].tensor.shape(), (Shape{2, 3}));
  const auto v = vals(b);
  for (size_t p = 0; p < 6; ++p) {
    const double* a = v.data() + p * 9;
    const double want = a[0] * (a[4] * a[8] - a[5] * a[7]) - a[1] * (a[3] * a[8] - a[5] * a[6]) +
                        a[2] * (a[3] * a[7] - a[4] * a[6]);
    EXPECT_NEAR(vals(out[0])[p], want, 1e-5);
  }
  Tensor singular = f32({1, 2, 2, 4}, {2, 2});
  EXPECT_NEAR(vals(run_ref("Det", {singular})[0])[0], 0.0, 1e-7);
  EXPECT_THROW(run_ref("Det", {rand_tensor({2, 3}, 1)}), Error);
}

TEST(RefLinalg, ShapeInferenceMatchesKernels) {
  struct Case {
    std::string op;
    std::vector<Shape> in;
    AttrMap attrs;
  };
  const std::vector<Case> cases = {
      {"MatMul", {{2, 1, 3, 5}, {4, 5, 7}}, {}},
      {"MatMul", {{5}, {2, 5, 3}}, {}},
      {"MatMul", {{2, 3, 5}, {5}}, {}},
      {"Gemm", {{5, 3}, {7, 5}, {7}}, {{"transA", attr_i(1)}, {"transB", attr_i(1)}}},
      {"Einsum", {{2, 3, 4}, {2, 4, 5}}, {{"equation", attr_s("bij,bjk->bik")}}},
      {"Einsum", {{3, 4}, {4, 5}}, {{"equation", attr_s("ij,jk")}}},
      {"Einsum", {{2, 3, 3}}, {{"equation", attr_s("...ii->...i")}}},
      {"Einsum", {{4, 4}}, {{"equation", attr_s("ii")}}},
      {"Det", {{2, 3, 3}}, {}},
  };
  uint32_t seed = 1;
  for (const Case& c : cases) {
    std::vector<DataValue> ins;
    std::vector<InferInput> types;
    for (const Shape& s : c.in) {
      ins.push_back(rand_tensor(s, seed++));
      types.push_back({DType::f32, s});
    }
    auto out = run_ref(c.op, ins, c.attrs);
    auto ty = infer_node(c.op, types, c.attrs);
    EXPECT_EQ(static_shape(ty[0]), out[0].tensor.shape()) << c.op;
    EXPECT_EQ(ty[0].elem, DType::f32);
  }
  // Unknown dims stay unknown; bad shapes are an error naming the node.
  auto t = infer_node("MatMul", {{DType::f32, {-1, 3, 4}}, {DType::f32, {4, 6}}}, {});
  ASSERT_TRUE(t[0].shape.has_value());
  EXPECT_FALSE((*t[0].shape)[0].known());
  EXPECT_EQ((*t[0].shape)[2].value, 6);
  EXPECT_THROW(infer_node("MatMul", {{DType::f32, {3, 4}}, {DType::f32, {5, 6}}}, {}), Error);
  EXPECT_THROW(infer_node("Det", {{DType::f32, {3, 4}}}, {}), Error);
}

}  // namespace
}  // namespace tessera::testing
