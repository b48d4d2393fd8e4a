// Reference kernels of the shape family against independent index arithmetic.
#include <gtest/gtest.h>

#include <numeric>
#include <random>

#include "tests/unit/kernel_harness.h"

namespace tessera {
namespace {

using testing::attr_i;
using testing::attr_ints;
using testing::attr_s;
using testing::run_ref;

Tensor iota_f32(Shape s) {
  Tensor t(DType::f32, std::move(s));
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = float(i);
  return t;
}
Tensor i64s(std::vector<int64_t> v) { return Tensor::from_vector(v, {int64_t(v.size())}); }
std::vector<double> vals(const DataValue& v) { return v.tensor.to_double_vector(); }

TEST(RefShape, ReshapeZeroNegativeAllowzeroIsView) {
  Tensor x = iota_f32({2, 3, 4});
  auto out = run_ref("Reshape", {x, i64s({0, -1})});
  EXPECT_EQ(out[0].tensor.shape(), Shape({2, 12}));
  EXPECT_EQ(out[0].tensor.raw_data(), x.raw_data());  // a view, no copy
  out = run_ref("Reshape", {x, i64s({4, 0, -1})});
  EXPECT_EQ(out[0].tensor.shape(), Shape({4, 3, 2}));
  Tensor e(DType::f32, {0, 3});
  out = run_ref("Reshape", {e, i64s({3, 0})}, {{"allowzero", attr_i(1)}});
  EXPECT_EQ(out[0].tensor.shape(), Shape({3, 0}));
  EXPECT_THROW(run_ref("Reshape", {x, i64s({5, -1})}), Error);
  EXPECT_THROW(run_ref("Reshape", {x, i64s({-1, -1})}), Error);
}

TEST(RefShape, ShapeSizeFlatten) {
  Tensor x = iota_f32({2, 3, 4, 5});
  EXPECT_EQ(vals(run_ref("Shape", {x})[0]), (std::vector<double>{2, 3, 4, 5}));
  EXPECT_EQ(vals(run_ref("Shape", {x}, {{"start", attr_i(-3)}, {"end", attr_i(-1)}})[0]),
            (std::vector<double>{3, 4}));
  EXPECT_EQ(run_ref("Shape", {x}, {{"start", attr_i(3)}, {"end", attr_i(1)}})[0].tensor.numel(), 0);
  EXPECT_EQ(vals(run_ref("Size", {x})[0]), (std::vector<double>{120}));
  EXPECT_EQ(run_ref("Flatten", {x}, {{"axis", attr_i(0)}})[0].tensor.shape(), Shape({1, 120}));
  EXPECT_EQ(run_ref("Flatten", {x}, {{"axis", attr_i(-1)}})[0].tensor.shape(), Shape({24, 5}));
  EXPECT_EQ(run_ref("Flatten", {x}, {{"axis", attr_i(4)}})[0].tensor.shape(), Shape({120, 1}));
  EXPECT_THROW(run_ref("Flatten", {x}, {{"axis", attr_i(5)}}), Error);
}

TEST(RefShape, SqueezeUnsqueeze) {
  Tensor x = iota_f32({1, 3, 1, 2});
  EXPECT_EQ(run_ref("Squeeze", {x})[0].tensor.shape(), Shape({3, 2}));
  EXPECT_EQ(run_ref("Squeeze", {x, i64s({-2})})[0].tensor.shape(), Shape({1, 3, 2}));
  EXPECT_THROW(run_ref("Squeeze", {x, i64s({1})}), Error);
  EXPECT_EQ(run_ref("Unsqueeze", {x, i64s({-1, 0})})[0].tensor.shape(), Shape({1, 1, 3, 1, 2, 1}));
  EXPECT_EQ(run_ref("Unsqueeze", {Tensor::scalar<float>(2), i64s({0})})[0].tensor.shape(), Shape({1}));
  EXPECT_THROW(run_ref("Unsqueeze", {x, i64s({0, 0})}), Error);
}

TEST(RefShape, TransposeMatchesIndexMath) {
  Tensor x = iota_f32({2, 3, 4});
  auto y = run_ref("Transpose", {x}, {{"perm", attr_ints({1, 2, 0})}})[0].tensor;
  ASSERT_EQ(y.shape(), Shape({3, 4, 2}));
  for (int64_t a = 0; a < 3; ++a)
    for (int64_t b = 0; b < 4; ++b)
      for (int64_t c = 0; c < 2; ++c) EXPECT_EQ(y.data<float>()[(a * 4 + b) * 2 + c], float((c * 3 + a) * 4 + b));
  auto d = run_ref("Transpose", {x})[0].tensor;
  EXPECT_EQ(d.shape(), Shape({4, 3, 2}));
  EXPECT_EQ(d.data<float>()[1], 12.f);
  EXPECT_THROW(run_ref("Transpose", {x}, {{"perm", attr_ints({0, 0, 1})}}), Error);
}

TEST(RefShape, ConcatAndSplit) {
  Tensor a = iota_f32({2, 2}), b = iota_f32({2, 3}), e(DType::f32, {2, 0});
  auto y = run_ref("Concat", {a, e, b}, {{"axis", attr_i(-1)}})[0].tensor;
  EXPECT_EQ(y.shape(), Shape({2, 5}));
  EXPECT_EQ(y.to_double_vector(), (std::vector<double>{0, 1, 0, 1, 2, 2, 3, 3, 4, 5}));
  EXPECT_THROW(run_ref("Concat", {a, b}, {{"axis", attr_i(0)}}), Error);
  auto parts = run_ref("Split", {y, i64s({1, 4})}, {{"axis", attr_i(1)}}, 2);
  EXPECT_EQ(parts[0].tensor.to_double_vector(), (std::vector<double>{0, 2}));
  EXPECT_EQ(parts[1].tensor.shape(), Shape({2, 4}));
  Tensor v = iota_f32({7});
  parts = run_ref("Split", {v}, {{"num_outputs", attr_i(3)}}, 3);
  EXPECT_EQ(parts[0].tensor.shape(), Shape({3}));
  EXPECT_EQ(parts[2].tensor.to_double_vector(), (std::vector<double>{6}));
  EXPECT_THROW(run_ref("Split", {v}, {}, 2), Error);  // 7 does not split evenly
  parts = run_ref("Split", {v, i64s({0, 7})}, {}, 2);
  EXPECT_EQ(parts[0].tensor.numel(), 0);
}

TEST(RefShape, SliceAgainstPython) {
  Tensor x = iota_f32({10});
  auto s = [&](std::vector<int64_t> st, std::vector<int64_t> en, std::vector<int64_t> step) {
    return run_ref("Slice", {x, i64s(st), i64s(en), i64s({0}), i64s(step)})[0].tensor.to_double_vector();
  };
  EXPECT_EQ(s({2}, {8}, {3}), (std::vector<double>{2, 5}));
  EXPECT_EQ(s({-1}, {-100}, {-2}), (std::vector<double>{9, 7, 5, 3, 1}));
  EXPECT_EQ(s({100}, {-100}, {-4}), (std::vector<double>{9, 5, 1}));
  EXPECT_EQ(s({-3}, {1000}, {1}), (std::vector<double>{7, 8, 9}));
  EXPECT_TRUE(s({5}, {2}, {1}).empty());
  EXPECT_THROW(s({0}, {1}, {0}), Error);
  Tensor m = iota_f32({3, 4});
  auto y = run_ref("Slice", {m, i64s({1, -1}), i64s({3, -5}), i64s({0, -1}), i64s({1, -1})})[0].tensor;
  EXPECT_EQ(y.shape(), Shape({2, 4}));
  EXPECT_EQ(y.data<float>()[0], 7.f);
  // zero-size input
  Tensor e(DType::f32, {0, 2});
  EXPECT_EQ(run_ref("Slice", {e, i64s({0}), i64s({5}), i64s({0}), i64s({-1})})[0].tensor.shape(), Shape({0, 2}));
}

TEST(RefShape, PadModes) {
  Tensor x = iota_f32({3});  // 0 1 2
  auto pad = [&](const char* mode, std::vector<int64_t> p) {
    return run_ref("Pad", {x, i64s(p), Tensor::scalar<float>(-1)}, {{"mode", attr_s(mode)}})[0].tensor.to_double_vector();
  };
  EXPECT_EQ(pad("constant", {2, 1}), (std::vector<double>{-1, -1, 0, 1, 2, -1}));
  EXPECT_EQ(pad("edge", {2, 1}), (std::vector<double>{0, 0, 0, 1, 2, 2}));
  EXPECT_EQ(pad("reflect", {2, 2}), (std::vector<double>{2, 1, 0, 1, 2, 1, 0}));
  EXPECT_EQ(pad("wrap", {2, 2}), (std::vector<double>{1, 2, 0, 1, 2, 0, 1}));
  EXPECT_EQ(pad("constant", {-1, 1}), (std::vector<double>{1, 2, -1}));
  Tensor m = iota_f32({2, 2});
  auto y = run_ref("Pad", {m, i64s({1, 1}), DataValue(), i64s({-1})})[0].tensor;
  EXPECT_EQ(y.shape(), Shape({2, 4}));
  EXPECT_EQ(y.to_double_vector(), (std::vector<double>{0, 0, 1, 0, 0, 2, 3, 0}));
  EXPECT_THROW(run_ref("Pad", {m, i64s({1})}), Error);
}

TEST(RefShape, TileExpandConstantOfShapeRange) {
  Tensor x = iota_f32({2, 1});
  auto t = run_ref("Tile", {x, i64s({2, 3})})[0].tensor;
  EXPECT_EQ(t.shape(), Shape({4, 3}));
  EXPECT_EQ(t.to_double_vector(), (std::vector<double>{0, 0, 0, 1, 1, 1, 0, 0, 0, 1, 1, 1}));
  auto e = run_ref("Expand", {x, i64s({2, 1, 3})})[0].tensor;
  EXPECT_EQ(e.shape(), Shape({2, 2, 3}));
  EXPECT_EQ(e.data<float>()[3], 1.f);
  EXPECT_THROW(run_ref("Expand", {x, i64s({3, 4})}), Error);
  Attribute v;
  v.kind = Attribute::Kind::t;
  v.t = Tensor::from_vector<int32_t>({7}, {1});
  auto c = run_ref("ConstantOfShape", {i64s({2, 2})}, {{"value", v}})[0].tensor;
  EXPECT_EQ(c.dtype(), DType::i32);
  EXPECT_EQ(c.to_double_vector(), (std::vector<double>{7, 7, 7, 7}));
  auto z = run_ref("ConstantOfShape", {i64s({0})})[0].tensor;
  EXPECT_EQ(z.dtype(), DType::f32);
  EXPECT_EQ(z.numel(), 0);
  auto r = run_ref("Range", {Tensor::scalar<int32_t>(10), Tensor::scalar<int32_t>(4), Tensor::scalar<int32_t>(-3)})[0];
  EXPECT_EQ(vals(r), (std::vector<double>{10, 7}));
  r = run_ref("Range", {Tensor::scalar<float>(1), Tensor::scalar<float>(2), Tensor::scalar<float>(0.25f)})[0];
  EXPECT_EQ(vals(r), (std::vector<double>{1, 1.25, 1.5, 1.75}));
  r = run_ref("Range", {Tensor::scalar<float>(3), Tensor::scalar<float>(1), Tensor::scalar<float>(1)})[0];
  EXPECT_EQ(r.tensor.numel(), 0);
  EXPECT_THROW(run_ref("Range", {Tensor::scalar<float>(0), Tensor::scalar<float>(1), Tensor::scalar<float>(0)}), Error);
}

TEST(RefShape, DepthToSpaceRoundTrip) {
  Tensor x = iota_f32({1, 8, 2, 3});
  for (const char* mode : {"DCR", "CRD"}) {
    auto y = run_ref("DepthToSpace", {x}, {{"blocksize", attr_i(2)}, {"mode", attr_s(mode)}})[0].tensor;
    ASSERT_EQ(y.shape(), Shape({1, 2, 4, 6}));
    // Independent check: y[0, c, h*2+i, w*2+j] = x[0, chan, h, w].
    for (int64_t c = 0; c < 2; ++c)
      for (int64_t h = 0; h < 2; ++h)
        for (int64_t w = 0; w < 3; ++w)
          for (int64_t i = 0; i < 2; ++i)
            for (int64_t j = 0; j < 2; ++j) {
              const int64_t chan = std::string(mode) == "DCR" ? (i * 2 + j) * 2 + c : c * 4 + i * 2 + j;
              EXPECT_EQ(y.data<float>()[((c * 4) + h * 2 + i) * 6 + w * 2 + j], x.data<float>()[(chan * 2 + h) * 3 + w]);
            }
  }
  auto y = run_ref("DepthToSpace", {x}, {{"blocksize", attr_i(2)}})[0].tensor;
  auto back = run_ref("SpaceToDepth", {y}, {{"blocksize", attr_i(2)}})[0].tensor;
  EXPECT_EQ(back.to_double_vector(), x.to_double_vector());
  EXPECT_THROW(run_ref("DepthToSpace", {iota_f32({1, 3, 2, 2})}, {{"blocksize", attr_i(2)}}), Error);
}

TEST(RefShape, TriluCenterCropPadReverseSequence) {
  Tensor x = iota_f32({3, 4});
  auto u = run_ref("Trilu", {x, Tensor::scalar<int64_t>(1)})[0].tensor;
  auto l = run_ref("Trilu", {x, Tensor::scalar<int64_t>(-1)}, {{"upper", attr_i(0)}})[0].tensor;
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 4; ++j) {
      EXPECT_EQ(u.data<float>()[i * 4 + j], j - i >= 1 ? float(i * 4 + j) : 0.f);
      EXPECT_EQ(l.data<float>()[i * 4 + j], j - i <= -1 ? float(i * 4 + j) : 0.f);
    }
  auto c = run_ref("CenterCropPad", {x, i64s({1, 7})})[0].tensor;
  EXPECT_EQ(c.shape(), Shape({1, 7}));
  EXPECT_EQ(c.to_double_vector(), (std::vector<double>{0, 4, 5, 6, 7, 0, 0}));
  Tensor s = iota_f32({3, 2});  // time x batch
  auto r = run_ref("ReverseSequence", {s, i64s({3, 2})})[0].tensor;
  EXPECT_EQ(r.to_double_vector(), (std::vector<double>{4, 3, 2, 1, 0, 5}));
  EXPECT_THROW(run_ref("ReverseSequence", {s, i64s({4, 1})}), Error);
}

TEST(RefShape, CompressNonZeroOneHot) {
  Tensor x = iota_f32({3, 2});
  Tensor cond = Tensor::from_vector<bool>({false, true, true}, {3});
  auto c = run_ref("Compress", {x, cond}, {{"axis", attr_i(0)}})[0].tensor;
  EXPECT_EQ(c.shape(), Shape({2, 2}));
  EXPECT_EQ(c.data<float>()[0], 2.f);
  c = run_ref("Compress", {x, cond})[0].tensor;  // flattened
  EXPECT_EQ(c.to_double_vector(), (std::vector<double>{1, 2}));
  auto nz = run_ref("NonZero", {x})[0].tensor;
  EXPECT_EQ(nz.shape(), Shape({2, 5}));
  EXPECT_EQ(nz.to_double_vector(), (std::vector<double>{0, 1, 1, 2, 2, 1, 0, 1, 0, 1}));
  auto oh = run_ref("OneHot", {i64s({1, -1, 5}), Tensor::scalar<int64_t>(3), Tensor::from_vector<float>({0, 9}, {2})})[0].tensor;
  EXPECT_EQ(oh.shape(), Shape({3, 3}));
  EXPECT_EQ(oh.to_double_vector(), (std::vector<double>{0, 9, 0, 0, 0, 9, 0, 0, 0}));
  oh = run_ref("OneHot", {i64s({1, 2}), Tensor::scalar<int64_t>(3), Tensor::from_vector<float>({0, 1}, {2})},
               {{"axis", attr_i(0)}})[0].tensor;
  EXPECT_EQ(oh.to_double_vector(), (std::vector<double>{0, 0, 1, 0, 0, 1}));
}

TEST(RefShape, UniqueSortedAndUnsorted) {
  Tensor x = Tensor::from_vector<float>({2, 1, 1, 3, 4, 3}, {6});
  auto o = run_ref("Unique", {x}, {{"sorted", attr_i(0)}}, 4);
  EXPECT_EQ(o[0].tensor.to_double_vector(), (std::vector<double>{2, 1, 3, 4}));
  EXPECT_EQ(o[1].tensor.to_double_vector(), (std::vector<double>{0, 1, 3, 4}));
  EXPECT_EQ(o[2].tensor.to_double_vector(), (std::vector<double>{0, 1, 1, 2, 3, 2}));
  EXPECT_EQ(o[3].tensor.to_double_vector(), (std::vector<double>{1, 2, 2, 1}));
  o = run_ref("Unique", {x}, {}, 4);
  EXPECT_EQ(o[0].tensor.to_double_vector(), (std::vector<double>{1, 2, 3, 4}));
  EXPECT_EQ(o[1].tensor.to_double_vector(), (std::vector<double>{1, 0, 3, 4}));
  EXPECT_EQ(o[2].tensor.to_double_vector(), (std::vector<double>{1, 0, 0, 2, 3, 2}));
  Tensor m = Tensor::from_vector<int64_t>({1, 0, 1, 0, 2, 0}, {3, 2});
  o = run_ref("Unique", {m}, {{"axis", attr_i(0)}}, 4);
  EXPECT_EQ(o[0].tensor.shape(), Shape({2, 2}));
  EXPECT_EQ(o[0].tensor.to_double_vector(), (std::vector<double>{1, 0, 2, 0}));
  EXPECT_EQ(o[3].tensor.to_double_vector(), (std::vector<double>{2, 1}));
}

}  // namespace
}  // namespace tessera

// ---- shape inference of the family's schemas ----
#include "ir/op_registry.h"

namespace tessera {
namespace {

using ir::Dim;
using ir::TypeInfo;

// Builds a one-node graph: input 0 of type `x`, constant inputs after it, then infers.
struct OneNode {
  ir::Graph g;
  ir::Node* n;
  OneNode(const std::string& op, TypeInfo x, std::vector<std::optional<Tensor>> consts, AttrMap attrs = {},
          int outputs = 1) {
    n = g.add_node(op, "n");
    ir::Value* in = g.add_value("x");
    in->type = std::move(x);
    g.connect_input(n, in);
    for (size_t i = 0; i < consts.size(); ++i) {
      ir::Value* c = g.add_value("c" + std::to_string(i));
      if (consts[i]) {
        c->type = TypeInfo::tensor_of(*consts[i]);
        c->initializer = *consts[i];
      } else {
        c->type = TypeInfo::tensor(DType::i64, std::vector<Dim>{Dim()});
      }
      g.connect_input(n, c);
    }
    for (int i = 0; i < outputs; ++i) g.connect_output(n, g.add_value("y" + std::to_string(i)));
    n->attrs = std::move(attrs);
    ir::infer_shapes(g);
  }
  const TypeInfo& out(size_t i = 0) const { return n->outputs[i]->type; }
};

TypeInfo f32(std::vector<Dim> d) { return TypeInfo::tensor(DType::f32, std::move(d)); }

TEST(ShapeInference, ReshapeWithConstantShape) {
  OneNode a("Reshape", f32({2, 3, 4}), {i64s({0, -1})});
  EXPECT_EQ(a.out().str(), "float32[2,12]");
  OneNode b("Reshape", f32({Dim::sym("N"), 3, 4}), {i64s({0, 12})});
  EXPECT_EQ(b.out().str(), "float32[N,12]");
  OneNode c("Reshape", f32({2, 3}), {std::nullopt});
  EXPECT_EQ(c.out().elem, DType::f32);
}

TEST(ShapeInference, SliceSqueezeUnsqueezeConcat) {
  OneNode s("Slice", f32({10, 4}), {i64s({-1}), i64s({-100}), i64s({0}), i64s({-3})});
  EXPECT_EQ(s.out().str(), "float32[4,4]");
  OneNode q("Squeeze", f32({1, 3, 1}), {i64s({-1})});
  EXPECT_EQ(q.out().str(), "float32[1,3]");
  OneNode u("Unsqueeze", f32({3}), {i64s({0, -1})});
  EXPECT_EQ(u.out().str(), "float32[1,3,1]");
  OneNode t("Transpose", f32({2, 3, 4}), {}, {{"perm", attr_ints({2, 0, 1})}});
  EXPECT_EQ(t.out().str(), "float32[4,2,3]");
  OneNode f("Flatten", f32({2, 3, 4}), {}, {{"axis", attr_i(-1)}});
  EXPECT_EQ(f.out().str(), "float32[6,4]");
  OneNode p("Pad", f32({2, 3}), {i64s({1, 0, 2, -1})});
  EXPECT_EQ(p.out().str(), "float32[5,2]");
  OneNode sp("Split", f32({7, 2}), {}, {{"num_outputs", attr_i(3)}}, 3);
  EXPECT_EQ(sp.out(2).str(), "float32[1,2]");
  EXPECT_THROW(OneNode("Transpose", f32({2, 3}), {}, {{"perm", attr_ints({0})}}), Error);
}

TEST(ShapeInference, ReductionsAndIndexing) {
  OneNode r("ReduceSum", f32({2, 3, 4}), {i64s({-1, 0})}, {{"keepdims", attr_i(0)}});
  EXPECT_EQ(r.out().str(), "float32[3]");
  OneNode r2("ReduceMax", f32({2, 3}), {});
  EXPECT_EQ(r2.out().str(), "float32[1,1]");
  OneNode am("ArgMax", f32({2, 3}), {}, {{"axis", attr_i(1)}});
  EXPECT_EQ(am.out().str(), "int64[2,1]");
  OneNode tk("TopK", f32({2, 9}), {Tensor::from_vector<int64_t>({4}, {1})}, {}, 2);
  EXPECT_EQ(tk.out(1).str(), "int64[2,4]");
  OneNode g("Gather", f32({5, 6}), {Tensor::from_vector<int64_t>({1, 2, 3, 4}, {2, 2})}, {{"axis", attr_i(1)}});
  EXPECT_EQ(g.out().str(), "float32[5,2,2]");
  OneNode nd("GatherND", f32({2, 3, 4}), {Tensor::from_vector<int64_t>({0, 1}, {1, 2})});
  EXPECT_EQ(nd.out().str(), "float32[1,4]");
  OneNode sh("Shape", f32({2, 3, 4}), {}, {{"start", attr_i(1)}});
  EXPECT_EQ(sh.out().str(), "int64[2]");
  OneNode ex("Expand", f32({3, 1}), {i64s({2, 1, 4})});
  EXPECT_EQ(ex.out().str(), "float32[2,3,4]");
  // Unknown input type stays unknown rather than "undefined tensor".
  OneNode u("ReduceSum", TypeInfo{}, {});
  EXPECT_EQ(u.out().kind, TypeInfo::Kind::unknown);
}

}  // namespace
}  // namespace tessera
