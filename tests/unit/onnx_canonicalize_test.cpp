// Opset canonicalization: each rewrite of onnx_canonicalize.cpp's table.
#include <gtest/gtest.h>

#include "frontend/onnx/onnx_loader.h"
#include "tessera_onnx.pb.h"

namespace tessera::frontend::onnx::canon_testing {
namespace pb = tessera_onnx;
using ir::Graph;
using ir::Node;

struct OneNode {
  pb::ModelProto m;
  pb::NodeProto* n;
  OneNode(int opset, const std::string& op, std::vector<std::string> ins, std::vector<std::string> outs,
          int32_t elem = pb::TensorProto::FLOAT, int rank = 2) {
    m.set_ir_version(7);
    auto* o = m.add_opset_import();
    o->set_version(opset);
    auto* g = m.mutable_graph();
    g->set_name("g");
    for (const auto& s : ins) {
      if (s.empty()) continue;
      auto* vi = g->add_input();
      vi->set_name(s);
      auto* tt = vi->mutable_type()->mutable_tensor_type();
      tt->set_elem_type(elem);
      auto* sh = tt->mutable_shape();
      for (int i = 0; i < rank; ++i) sh->add_dim()->set_dim_value(2 + i);
    }
    n = g->add_node();
    n->set_op_type(op);
    n->set_name("n");
    for (const auto& s : ins) n->add_input(s);
    for (const auto& s : outs) {
      n->add_output(s);
      g->add_output()->set_name(s);
    }
  }
  pb::AttributeProto* attr(const std::string& k, pb::AttributeProto::AttributeType t) {
    auto* a = n->add_attribute();
    a->set_name(k);
    a->set_type(t);
    return a;
  }
  void ints(const std::string& k, std::vector<int64_t> v) {
    auto* a = attr(k, pb::AttributeProto::INTS);
    for (auto x : v) a->add_ints(x);
  }
  void i(const std::string& k, int64_t v) { attr(k, pb::AttributeProto::INT)->set_i(v); }
  void f(const std::string& k, float v) { attr(k, pb::AttributeProto::FLOAT)->set_f(v); }
  void s(const std::string& k, const std::string& v) { attr(k, pb::AttributeProto::STRING)->set_s(v); }
  void floats(const std::string& k, std::vector<float> v) {
    auto* a = attr(k, pb::AttributeProto::FLOATS);
    for (auto x : v) a->add_floats(x);
  }
  ir::Model model;
  const Node& node(bool canon = true);
  ir::Model load(bool canon = true) {
    std::string b = m.SerializeAsString();
    LoadOptions o;
    o.canonicalize = canon;
    return load_bytes(std::span(reinterpret_cast<const uint8_t*>(b.data()), b.size()), o);
  }
};

const Node& only(const ir::Model& m) {
  EXPECT_EQ(m.graph->nodes().size(), 1u);
  return *m.graph->nodes()[0];
}
const Node& OneNode::node(bool canon) {
  model = load(canon);
  return only(model);
}
std::vector<int64_t> const_ints(const Node& n, size_t i) {
  EXPECT_LT(i, n.inputs.size());
  EXPECT_TRUE(n.inputs[i] && n.inputs[i]->initializer);
  return n.inputs[i]->initializer->to_int_vector();
}
std::vector<double> const_doubles(const Node& n, size_t i) {
  EXPECT_LT(i, n.inputs.size());
  EXPECT_TRUE(n.inputs[i] && n.inputs[i]->initializer);
  return n.inputs[i]->initializer->to_double_vector();
}

TEST(OnnxCanon, SplitAttrToInput) {
  OneNode t(11, "Split", {"x"}, {"a", "b"});
  t.ints("split", {1, 1});
  t.i("axis", 0);
  ir::Model m = t.load();
  const Node& n = only(m);
  EXPECT_EQ(const_ints(n, 1), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(n.attr("split"), nullptr);
  EXPECT_EQ(n.attr("num_outputs"), nullptr);
  EXPECT_EQ(n.attr("axis")->i, 0);
  EXPECT_EQ(n.opset, 11);

  OneNode eq(13, "Split", {"x"}, {"a", "b", "c"});
  const Node& ne = eq.node();
  EXPECT_EQ(ne.attr("num_outputs")->i, 3);
  OneNode fresh(18, "Split", {"x"}, {"a", "b"});
  fresh.i("num_outputs", 2);
  EXPECT_EQ(fresh.node().inputs.size(), 1u);
}

TEST(OnnxCanon, SliceAttrsToInputs) {
  OneNode t(9, "Slice", {"x"}, {"y"});
  t.ints("starts", {0, 1});
  t.ints("ends", {1, 2});
  t.ints("axes", {0, 1});
  ir::Model m = t.load();
  const Node& n = only(m);
  ASSERT_EQ(n.inputs.size(), 4u);
  EXPECT_EQ(const_ints(n, 1), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(const_ints(n, 2), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(const_ints(n, 3), (std::vector<int64_t>{0, 1}));
  EXPECT_TRUE(n.attrs.empty());
  OneNode noaxes(1, "Slice", {"x"}, {"y"});
  noaxes.ints("starts", {0});
  noaxes.ints("ends", {1});
  EXPECT_EQ(noaxes.node().inputs.size(), 3u);
  OneNode bad(9, "Slice", {"x"}, {"y"});
  bad.ints("starts", {0});
  EXPECT_THROW(bad.load(), Error);
  OneNode modern(13, "Slice", {"x", "s", "e"}, {"y"});
  EXPECT_EQ(modern.node().inputs.size(), 3u);
}

TEST(OnnxCanon, ReduceAxes) {
  OneNode sum(11, "ReduceSum", {"x"}, {"y"});
  sum.ints("axes", {1});
  sum.i("keepdims", 0);
  const Node& n = sum.node();
  EXPECT_EQ(const_ints(n, 1), (std::vector<int64_t>{1}));
  EXPECT_EQ(n.attr("axes"), nullptr);
  EXPECT_EQ(n.attr("keepdims")->i, 0);
  for (const char* op : {"ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2", "ReduceLogSum",
                         "ReduceLogSumExp", "ReduceSumSquare"}) {
    OneNode r(17, op, {"x"}, {"y"});
    r.ints("axes", {0, -1});
    const Node& rn = r.node();
    EXPECT_EQ(const_ints(rn, 1), (std::vector<int64_t>{0, -1})) << op;
  }
  OneNode sum13(13, "ReduceSum", {"x"}, {"y"});  // already an input form: nothing to do
  EXPECT_EQ(sum13.node().inputs.size(), 1u);
  OneNode noaxes(11, "ReduceMean", {"x"}, {"y"});  // no axes: reduce all, no input added
  EXPECT_EQ(noaxes.node().inputs.size(), 1u);
}

TEST(OnnxCanon, SqueezeUnsqueeze) {
  for (const char* op : {"Squeeze", "Unsqueeze"}) {
    OneNode t(11, op, {"x"}, {"y"});
    t.ints("axes", {0});
    const Node& n = t.node();
    EXPECT_EQ(const_ints(n, 1), (std::vector<int64_t>{0})) << op;
    EXPECT_EQ(n.attr("axes"), nullptr);
  }
}

TEST(OnnxCanon, PadAttrsToInputs) {
  OneNode t(2, "Pad", {"x"}, {"y"}, pb::TensorProto::DOUBLE);
  t.ints("pads", {0, 1, 0, 1});
  t.f("value", 1.5f);
  t.s("mode", "constant");
  const Node& n = t.node();
  ASSERT_EQ(n.inputs.size(), 3u);
  EXPECT_EQ(const_ints(n, 1), (std::vector<int64_t>{0, 1, 0, 1}));
  EXPECT_EQ(n.inputs[2]->initializer->dtype(), DType::f64);  // like X
  EXPECT_EQ(const_doubles(n, 2), (std::vector<double>{1.5}));
  EXPECT_EQ(n.attr("mode")->s, "constant");
  OneNode old(1, "Pad", {"x"}, {"y"});
  old.ints("paddings", {1, 1, 1, 1});
  old.s("mode", "reflect");
  const Node& o = old.node();
  EXPECT_EQ(const_ints(o, 1), (std::vector<int64_t>{1, 1, 1, 1}));
  EXPECT_EQ(o.inputs.size(), 2u);
}

TEST(OnnxCanon, ClipMinMax) {
  OneNode t(6, "Clip", {"x"}, {"y"});
  t.f("max", 6.0f);
  const Node& n = t.node();
  ASSERT_EQ(n.inputs.size(), 3u);
  EXPECT_EQ(n.inputs[1], nullptr);  // min omitted
  EXPECT_EQ(const_doubles(n, 2), (std::vector<double>{6.0}));
  EXPECT_EQ(n.inputs[2]->initializer->rank(), 0);
  OneNode both(6, "Clip", {"x"}, {"y"}, pb::TensorProto::FLOAT16);
  both.f("min", 0.f);
  both.f("max", 6.f);
  const Node& b = both.node();
  EXPECT_EQ(b.inputs[1]->initializer->dtype(), DType::f16);
  EXPECT_EQ(const_doubles(b, 1), (std::vector<double>{0.0}));
}

TEST(OnnxCanon, TopKDropout) {
  OneNode t(1, "TopK", {"x"}, {"v", "i"});
  t.i("k", 3);
  t.i("axis", -1);
  const Node& n = t.node();
  EXPECT_EQ(const_ints(n, 1), (std::vector<int64_t>{3}));
  EXPECT_EQ(n.inputs[1]->initializer->shape(), (Shape{1}));
  EXPECT_EQ(n.attr("k"), nullptr);

  OneNode d(6, "Dropout", {"x"}, {"y"});
  d.f("ratio", 0.25f);
  d.i("is_test", 1);
  const Node& dn = d.node();
  EXPECT_EQ(const_doubles(dn, 1), (std::vector<double>{0.25}));
  EXPECT_TRUE(dn.attrs.empty());
}

TEST(OnnxCanon, BatchNormAndConsumedInputs) {
  OneNode t(6, "BatchNormalization", {"x", "s", "b", "m", "v"}, {"y"});
  t.i("spatial", 1);
  t.i("is_test", 1);
  t.ints("consumed_inputs", {0, 0, 0, 1, 1});
  t.f("epsilon", 1e-3f);
  const Node& n = t.node();
  EXPECT_EQ(n.attrs.size(), 1u);
  EXPECT_EQ(n.attr("epsilon")->f, 1e-3f);
  OneNode s0(7, "BatchNormalization", {"x", "s", "b", "m", "v"}, {"y"});
  s0.i("spatial", 0);
  try {
    s0.load();
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::unsupported);
  }
  OneNode relu(1, "Relu", {"x"}, {"y"});
  relu.ints("consumed_inputs", {0});
  EXPECT_TRUE(relu.node().attrs.empty());
}

TEST(OnnxCanon, UpsampleBecomesResize) {
  OneNode t(7, "Upsample", {"x"}, {"y"});
  t.floats("scales", {1, 1, 2, 2});
  t.s("mode", "nearest");
  const Node& n = t.node();
  EXPECT_EQ(n.op_type, "Resize");
  EXPECT_EQ(n.opset, 11);
  ASSERT_EQ(n.inputs.size(), 3u);
  EXPECT_EQ(n.inputs[0]->name, "x");
  EXPECT_EQ(n.inputs[1], nullptr);
  EXPECT_EQ(const_doubles(n, 2), (std::vector<double>{1, 1, 2, 2}));
  EXPECT_EQ(n.attr("mode")->s, "nearest");
  EXPECT_EQ(n.attr("coordinate_transformation_mode")->s, "asymmetric");
  EXPECT_EQ(n.attr("nearest_mode")->s, "floor");
  EXPECT_EQ(n.attr("scales"), nullptr);

  OneNode u9(9, "Upsample", {"x", "sc"}, {"y"});
  u9.s("mode", "linear");
  const Node& n9 = u9.node();
  EXPECT_EQ(n9.op_type, "Resize");
  ASSERT_EQ(n9.inputs.size(), 3u);
  EXPECT_EQ(n9.inputs[2]->name, "sc");
  EXPECT_EQ(n9.attr("mode")->s, "linear");
  EXPECT_EQ(n9.inputs[1], nullptr);
  EXPECT_TRUE(n9.inputs[2]->uses.size() == 1 && n9.inputs[2]->uses[0].second == 2);

  OneNode cubic(9, "Upsample", {"x", "sc"}, {"y"});
  cubic.s("mode", "cubic");
  EXPECT_THROW(cubic.load(), Error);
}

TEST(OnnxCanon, Resize10) {
  OneNode t(10, "Resize", {"x", "sc"}, {"y"});
  t.s("mode", "linear");
  const Node& n = t.node();
  ASSERT_EQ(n.inputs.size(), 3u);
  EXPECT_EQ(n.inputs[1], nullptr);
  EXPECT_EQ(n.inputs[2]->name, "sc");
  EXPECT_EQ(n.attr("coordinate_transformation_mode")->s, "asymmetric");
  EXPECT_EQ(n.opset, 11);
  OneNode r13(13, "Resize", {"x", "", "sc"}, {"y"});
  const Node& n13 = r13.node();
  EXPECT_EQ(n13.attr("coordinate_transformation_mode"), nullptr);
  EXPECT_EQ(n13.opset, 13);
}

TEST(OnnxCanon, CastReshapeConcatScatterTile) {
  OneNode c(5, "Cast", {"x"}, {"y"});
  c.s("to", "FLOAT16");
  const Node& cn = c.node();
  EXPECT_EQ(cn.attr("to")->kind, Attribute::Kind::i);
  EXPECT_EQ(cn.attr("to")->i, 10);
  OneNode cb(5, "Cast", {"x"}, {"y"});
  cb.s("to", "NOT_A_TYPE");
  EXPECT_THROW(cb.load(), Error);

  OneNode r(1, "Reshape", {"x"}, {"y"});
  r.ints("shape", {4, -1});
  EXPECT_EQ(const_ints(r.node(), 1), (std::vector<int64_t>{4, -1}));

  OneNode cat(1, "Concat", {"x", "z"}, {"y"});
  EXPECT_EQ(cat.node().attr("axis")->i, 1);

  OneNode sc(9, "Scatter", {"x", "i", "u"}, {"y"});
  EXPECT_EQ(sc.node().op_type, "ScatterElements");

  OneNode tile(1, "Tile", {"x", "t", "a"}, {"y"});
  try {
    tile.load();
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::unsupported);
  }
}

TEST(OnnxCanon, LegacyBroadcast) {
  OneNode t(6, "Add", {"a"}, {"y"}, pb::TensorProto::FLOAT, 4);  // a: [2,3,4,5]
  t.n->add_input("b");
  auto* init = t.m.mutable_graph()->add_initializer();
  init->set_name("b");
  init->set_data_type(pb::TensorProto::FLOAT);
  init->add_dims(3);
  for (int i = 0; i < 3; ++i) init->add_float_data(float(i));
  t.i("broadcast", 1);
  t.i("axis", 1);
  const Node& n = t.node();
  EXPECT_TRUE(n.attrs.empty());
  EXPECT_EQ(n.inputs[1]->initializer->shape(), (Shape{3, 1, 1}));
  EXPECT_EQ(const_doubles(n, 1), (std::vector<double>{0, 1, 2}));

  OneNode g(6, "Gemm", {"a", "b2", "c"}, {"y"});
  g.i("broadcast", 1);
  EXPECT_TRUE(g.node().attrs.empty());

  OneNode dyn(6, "Mul", {"a", "b3"}, {"y"}, pb::TensorProto::FLOAT, 4);  // b3 rank 4: trailing 0 is fine
  dyn.i("broadcast", 1);
  dyn.i("axis", 0);
  EXPECT_TRUE(dyn.node().attrs.empty());

  OneNode modern(14, "Add", {"a", "b"}, {"y"});
  modern.i("axis", 1);  // not a legacy attribute at opset 14: left alone
  EXPECT_EQ(modern.node().attr("axis")->i, 1);
}

TEST(OnnxCanon, SemanticsOnlyChangesAreLeftAlone) {
  OneNode t(11, "Softmax", {"x"}, {"y"});
  t.i("axis", 1);
  const Node& n = t.node();
  EXPECT_EQ(n.opset, 11);
  EXPECT_EQ(n.attr("axis")->i, 1);
  OneNode off(11, "Squeeze", {"x"}, {"y"});
  off.ints("axes", {0});
  EXPECT_EQ(off.node(false).attr("axes")->ints, (std::vector<int64_t>{0}));
}

TEST(OnnxCanon, InsideSubgraphs) {
  OneNode t(11, "If", {"c"}, {"y"}, pb::TensorProto::BOOL, 0);
  auto* a = t.attr("then_branch", pb::AttributeProto::GRAPH);
  auto* g = a->mutable_g();
  g->set_name("then");
  auto* sq = g->add_node();
  sq->set_op_type("Unsqueeze");
  sq->add_input("c");
  sq->add_output("u");
  auto* ax = sq->add_attribute();
  ax->set_name("axes");
  ax->set_type(pb::AttributeProto::INTS);
  ax->add_ints(0);
  g->add_output()->set_name("u");
  auto* e = t.attr("else_branch", pb::AttributeProto::GRAPH)->mutable_g();
  *e = *g;
  e->set_name("else");
  ir::Model m = t.load();
  const Graph* sg = static_cast<const Graph*>(only(m).attr("then_branch")->g.get());
  const Node& un = *sg->nodes()[0];
  EXPECT_EQ(un.attr("axes"), nullptr);
  ASSERT_EQ(un.inputs.size(), 2u);
  EXPECT_EQ(un.inputs[1]->owner, sg);  // the new constant lives in the subgraph
  EXPECT_EQ(un.inputs[1]->initializer->to_int_vector(), (std::vector<int64_t>{0}));
}

}  // namespace tessera::frontend::onnx::canon_testing
