// ModelProto -> ir::Model: model fields, values, initializers, Constant nodes,
// attributes, subgraphs, function inlining, skeletons, bad models.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "frontend/onnx/onnx_loader.h"
#include "ir/verifier.h"
#include "tessera_onnx.pb.h"

namespace tessera::frontend::onnx::testing {
namespace fs = std::filesystem;
namespace pb = tessera_onnx;
using ir::Graph;
using ir::Node;
using ir::Value;

pb::TensorProto ftensor(const std::string& name, std::vector<int64_t> dims, std::vector<float> v) {
  pb::TensorProto t;
  t.set_name(name);
  t.set_data_type(pb::TensorProto::FLOAT);
  for (auto d : dims) t.add_dims(d);
  for (float x : v) t.add_float_data(x);
  return t;
}
pb::TensorProto itensor(const std::string& name, std::vector<int64_t> v) {
  pb::TensorProto t;
  t.set_name(name);
  t.set_data_type(pb::TensorProto::INT64);
  t.add_dims(int64_t(v.size()));
  for (auto x : v) t.add_int64_data(x);
  return t;
}

pb::AttributeProto* add_attr(pb::NodeProto* n, const std::string& name, pb::AttributeProto::AttributeType type) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(type);
  return a;
}
void attr_i(pb::NodeProto* n, const std::string& k, int64_t v) { add_attr(n, k, pb::AttributeProto::INT)->set_i(v); }
void attr_f(pb::NodeProto* n, const std::string& k, float v) { add_attr(n, k, pb::AttributeProto::FLOAT)->set_f(v); }
void attr_s(pb::NodeProto* n, const std::string& k, const std::string& v) {
  add_attr(n, k, pb::AttributeProto::STRING)->set_s(v);
}
void attr_ints(pb::NodeProto* n, const std::string& k, std::vector<int64_t> v) {
  auto* a = add_attr(n, k, pb::AttributeProto::INTS);
  for (auto x : v) a->add_ints(x);
}
void attr_floats(pb::NodeProto* n, const std::string& k, std::vector<float> v) {
  auto* a = add_attr(n, k, pb::AttributeProto::FLOATS);
  for (auto x : v) a->add_floats(x);
}

void set_type(pb::ValueInfoProto* vi, int32_t elem, std::vector<std::string> dims) {
  auto* tt = vi->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(elem);
  auto* sh = tt->mutable_shape();
  for (const auto& d : dims) {
    auto* dim = sh->add_dim();
    if (!d.empty() && std::isdigit(static_cast<unsigned char>(d[0]))) dim->set_dim_value(std::stoll(d));
    else if (!d.empty()) dim->set_dim_param(d);
  }
}

struct Builder {
  pb::ModelProto m;
  pb::GraphProto* g;
  explicit Builder(int opset = 17) {
    m.set_ir_version(8);
    auto* o = m.add_opset_import();
    o->set_domain("");
    o->set_version(opset);
    g = m.mutable_graph();
    g->set_name("main");
  }
  pb::ValueInfoProto* input(const std::string& name, std::vector<std::string> dims = {"N", "4"},
                            int32_t elem = pb::TensorProto::FLOAT) {
    auto* vi = g->add_input();
    vi->set_name(name);
    set_type(vi, elem, std::move(dims));
    return vi;
  }
  void output(const std::string& name) { g->add_output()->set_name(name); }
  pb::NodeProto* node(const std::string& op, std::vector<std::string> ins, std::vector<std::string> outs,
                      const std::string& name = "") {
    auto* n = g->add_node();
    n->set_op_type(op);
    n->set_name(name);
    for (auto& s : ins) n->add_input(s);
    for (auto& s : outs) n->add_output(s);
    return n;
  }
  std::vector<uint8_t> bytes() const {
    std::string s = m.SerializeAsString();
    return {s.begin(), s.end()};
  }
  ir::Model load(const LoadOptions& o = {}) const {
    auto b = bytes();
    return load_bytes(b, o);
  }
};

const Node* find_node(const Graph& g, const std::string& op) {
  for (const auto& n : g.nodes())
    if (n->op_type == op) return n.get();
  return nullptr;
}

std::string error_of(const std::function<void()>& f, ErrorCode* code = nullptr) {
  try {
    f();
  } catch (const Error& e) {
    if (code) *code = e.code();
    return e.what();
  }
  return "<no error>";
}

TEST(OnnxLoader, ModelFieldsValuesAndOrder) {
  Builder b;
  b.m.set_producer_name("test");
  b.m.set_producer_version("1.0");
  auto* md = b.m.add_metadata_props();
  md->set_key("k");
  md->set_value("v");
  auto* ml = b.m.add_opset_import();
  ml->set_domain("ai.onnx.ml");
  ml->set_version(3);
  b.m.mutable_opset_import(0)->set_domain("ai.onnx");  // same as ""
  b.input("x", {"batch", "4"});
  b.input("w", {"4"});
  *b.g->add_initializer() = ftensor("w", {4}, {1, 2, 3, 4});       // overridable default
  *b.g->add_initializer() = ftensor("bias", {4}, {0, 0, 0, 1});    // constant
  // listed out of order: Relu consumes Add's output
  auto* relu = b.node("Relu", {"s"}, {"y"}, "relu");
  (void)relu;
  auto* add = b.node("Add", {"x", "w"}, {"t"}, "add");
  attr_s(add, "note", "hi");
  b.node("Add", {"t", "bias"}, {"s"});
  auto* drop = b.node("Dropout", {"y", "", ""}, {"z", ""}, "drop");
  (void)drop;
  b.output("z");
  auto* vi = b.g->add_value_info();
  vi->set_name("t");
  set_type(vi, pb::TensorProto::FLOAT, {"batch", "4"});

  ir::Model m = b.load();
  EXPECT_EQ(m.ir_version, 8);
  EXPECT_EQ(m.producer_name, "test");
  EXPECT_EQ(m.producer_version, "1.0");
  EXPECT_EQ(m.metadata.at("k"), "v");
  EXPECT_EQ(m.opsets.at(""), 17);
  EXPECT_EQ(m.opsets.at("ai.onnx.ml"), 3);
  const Graph& g = *m.graph;
  ASSERT_EQ(g.inputs.size(), 2u);
  EXPECT_EQ(g.inputs[1]->name, "w");
  ASSERT_TRUE(g.inputs[1]->initializer.has_value());
  EXPECT_EQ(g.inputs[0]->type.str(), "float32[batch,4]");
  Value* bias = g.find_value("bias");
  ASSERT_TRUE(bias && bias->initializer);
  EXPECT_EQ(std::count(g.inputs.begin(), g.inputs.end(), bias), 0);
  ASSERT_EQ(g.nodes().size(), 4u);
  EXPECT_EQ(g.nodes()[0]->name, "add");
  EXPECT_EQ(g.nodes()[1]->name, "Add_2");  // unnamed nodes get "<op>_<index>"
  EXPECT_EQ(g.nodes()[2]->name, "relu");
  EXPECT_EQ(g.nodes()[0]->opset, 17);
  EXPECT_EQ(g.nodes()[0]->attr("note")->s, "hi");
  EXPECT_EQ(g.find_value("t")->type.str(), "float32[batch,4]");
  const Node* d = g.nodes()[3].get();
  ASSERT_EQ(d->inputs.size(), 3u);
  EXPECT_EQ(d->inputs[1], nullptr);
  ASSERT_EQ(d->outputs.size(), 2u);
  EXPECT_EQ(d->outputs[1], nullptr);
  ASSERT_EQ(g.outputs.size(), 1u);
  EXPECT_EQ(g.outputs[0]->producer, d);
}

TEST(OnnxLoader, AttributeKinds) {
  Builder b;
  b.input("x");
  auto* n = b.node("Custom", {"x"}, {"y"}, "c");
  n->set_domain("test.domain");
  auto* o = b.m.add_opset_import();
  o->set_domain("test.domain");
  o->set_version(2);
  attr_f(n, "f", 0.5f);
  attr_i(n, "i", -3);
  attr_s(n, "s", "str");
  *add_attr(n, "t", pb::AttributeProto::TENSOR)->mutable_t() = ftensor("", {2}, {1, 2});
  attr_floats(n, "fs", {1, 2});
  attr_ints(n, "is", {4, 5, 6});
  auto* ss = add_attr(n, "ss", pb::AttributeProto::STRINGS);
  ss->add_strings("a");
  ss->add_strings("b");
  auto* ts = add_attr(n, "ts", pb::AttributeProto::TENSORS);
  *ts->add_tensors() = ftensor("", {1}, {7});
  auto* sp = add_attr(n, "sp", pb::AttributeProto::SPARSE_TENSOR)->mutable_sparse_tensor();
  sp->add_dims(3);
  *sp->mutable_values() = ftensor("", {1}, {9});
  *sp->mutable_indices() = itensor("", {2});
  auto* tp = add_attr(n, "tp", pb::AttributeProto::TYPE_PROTO)->mutable_tp();
  tp->mutable_tensor_type()->set_elem_type(pb::TensorProto::INT8);
  auto* untyped = n->add_attribute();  // no type field (old writers): inferred
  untyped->set_name("legacy");
  untyped->set_i(11);
  b.output("y");
  ir::Model m = b.load();
  const Node* c = find_node(*m.graph, "Custom");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->domain, "test.domain");
  EXPECT_EQ(c->opset, 2);
  EXPECT_EQ(c->attr("f")->f, 0.5f);
  EXPECT_EQ(c->attr("i")->i, -3);
  EXPECT_EQ(c->attr("s")->s, "str");
  EXPECT_EQ(c->attr("t")->t.to_double_vector(), (std::vector<double>{1, 2}));
  EXPECT_EQ(c->attr("fs")->floats, (std::vector<float>{1, 2}));
  EXPECT_EQ(c->attr("is")->ints, (std::vector<int64_t>{4, 5, 6}));
  EXPECT_EQ(c->attr("ss")->strings, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(c->attr("ts")->tensors.size(), 1u);
  EXPECT_EQ(c->attr("sp")->kind, Attribute::Kind::t);
  EXPECT_EQ(c->attr("sp")->t.to_double_vector(), (std::vector<double>{0, 0, 9}));
  EXPECT_EQ(c->attr("tp")->kind, Attribute::Kind::type_proto);
  EXPECT_EQ(c->attr("tp")->type_elem, DType::i8);
  EXPECT_EQ(c->attr("legacy")->kind, Attribute::Kind::i);
  EXPECT_EQ(c->attr("legacy")->i, 11);
}

TEST(OnnxLoader, ConstantFormsBecomeInitializers) {
  Builder b;
  auto* c1 = b.node("Constant", {}, {"c_value"});
  *add_attr(c1, "value", pb::AttributeProto::TENSOR)->mutable_t() = ftensor("", {2}, {1, 2});
  attr_f(b.node("Constant", {}, {"c_float"}), "value_float", 2.5f);
  attr_floats(b.node("Constant", {}, {"c_floats"}), "value_floats", {1, 2, 3});
  attr_i(b.node("Constant", {}, {"c_int"}), "value_int", 7);
  attr_ints(b.node("Constant", {}, {"c_ints"}), "value_ints", {4, 5});
  attr_s(b.node("Constant", {}, {"c_string"}), "value_string", "hey");
  auto* strs = add_attr(b.node("Constant", {}, {"c_strings"}), "value_strings", pb::AttributeProto::STRINGS);
  strs->add_strings("p");
  strs->add_strings("q");
  auto* sp = add_attr(b.node("Constant", {}, {"c_sparse"}), "sparse_value", pb::AttributeProto::SPARSE_TENSOR)
                 ->mutable_sparse_tensor();
  sp->add_dims(2);
  sp->add_dims(2);
  *sp->mutable_values() = ftensor("", {1}, {4});
  *sp->mutable_indices() = itensor("", {3});
  for (auto name : {"c_value", "c_float", "c_floats", "c_int", "c_ints", "c_string", "c_strings", "c_sparse"})
    b.output(name);
  ir::Model m = b.load();
  const Graph& g = *m.graph;
  EXPECT_TRUE(g.nodes().empty());
  auto init = [&](const char* n) -> const Tensor& { return *g.find_value(n)->initializer; };
  EXPECT_EQ(init("c_value").to_double_vector(), (std::vector<double>{1, 2}));
  EXPECT_EQ(init("c_float").rank(), 0);
  EXPECT_EQ(init("c_float").values<float>()[0], 2.5f);
  EXPECT_EQ(init("c_floats").shape(), (Shape{3}));
  EXPECT_EQ(init("c_int").dtype(), DType::i64);
  EXPECT_EQ(init("c_int").rank(), 0);
  EXPECT_EQ(init("c_ints").to_int_vector(), (std::vector<int64_t>{4, 5}));
  EXPECT_EQ(init("c_string").values<std::string>()[0], "hey");
  EXPECT_EQ(init("c_strings").values<std::string>()[1], "q");
  EXPECT_EQ(init("c_sparse").to_double_vector(), (std::vector<double>{0, 0, 0, 4}));
  EXPECT_EQ(g.find_value("c_value")->type.str(), "float32[2]");

  Builder bad;
  auto* two = bad.node("Constant", {}, {"c"});
  attr_f(two, "value_float", 1);
  attr_i(two, "value_int", 1);
  bad.output("c");
  ErrorCode code{};
  EXPECT_NE(error_of([&] { bad.load(); }, &code).find("exactly one"), std::string::npos);
  EXPECT_EQ(code, ErrorCode::invalid_model);
}

TEST(OnnxLoader, SparseInitializer) {
  Builder b;
  auto* sp = b.g->add_sparse_initializer();
  sp->add_dims(2);
  sp->add_dims(3);
  *sp->mutable_values() = ftensor("sw", {2}, {1, 2});
  pb::TensorProto idx = itensor("", {0, 2, 1, 1});
  idx.clear_dims();
  idx.add_dims(2);
  idx.add_dims(2);
  *sp->mutable_indices() = idx;
  b.output("sw");
  ir::Model m = b.load();
  EXPECT_EQ(m.graph->find_value("sw")->initializer->to_double_vector(), (std::vector<double>{0, 0, 1, 0, 2, 0}));
}

TEST(OnnxLoader, SubgraphSeesOuterValues) {
  Builder b;
  b.input("cond", {}, pb::TensorProto::BOOL);
  b.input("x");
  b.node("Relu", {"x"}, {"rx"}, "outer_relu");
  auto* iff = b.node("If", {"cond"}, {"y"}, "if");
  auto* then_g = add_attr(iff, "then_branch", pb::AttributeProto::GRAPH)->mutable_g();
  then_g->set_name("then");
  auto* tn = then_g->add_node();
  tn->set_op_type("Neg");
  tn->add_input("rx");  // outer value
  tn->add_output("ny");
  then_g->add_output()->set_name("ny");
  auto* else_g = add_attr(iff, "else_branch", pb::AttributeProto::GRAPH)->mutable_g();
  else_g->set_name("else");
  else_g->add_output()->set_name("x");  // an outer value directly
  b.output("y");
  ir::Model m = b.load();
  const Graph& g = *m.graph;
  ASSERT_EQ(g.nodes().size(), 2u);
  const Node* n = find_node(g, "If");
  auto subs = n->subgraphs();
  ASSERT_EQ(subs.size(), 2u);
  for (Graph* sg : subs) EXPECT_EQ(sg->parent, &g);
  const Graph* tg = static_cast<const Graph*>(n->attr("then_branch")->g.get());
  EXPECT_EQ(tg->nodes()[0]->inputs[0], g.find_value("rx"));
  const Graph* eg = static_cast<const Graph*>(n->attr("else_branch")->g.get());
  EXPECT_EQ(eg->outputs[0], g.find_value("x"));
  // outer producer sorted before the If although it reads rx only in the subgraph
  EXPECT_EQ(g.nodes()[0]->name, "outer_relu");

  // undefined name inside a subgraph
  tn->set_input(0, "nope");
  ErrorCode code{};
  std::string msg = error_of([&] { b.load(); }, &code);
  EXPECT_EQ(code, ErrorCode::invalid_model);
  EXPECT_NE(msg.find("nope"), std::string::npos) << msg;
}

TEST(OnnxLoader, InlinesModelLocalFunctions) {
  Builder b;
  auto* o = b.m.add_opset_import();
  o->set_domain("local");
  o->set_version(1);
  auto* f = b.m.add_functions();
  f->set_name("ScaledLeaky");
  f->set_domain("local");
  f->add_input("X");
  f->add_input("S");
  f->add_output("Y");
  f->add_attribute("unused");
  auto* def = f->add_attribute_proto();
  def->set_name("alpha");
  def->set_type(pb::AttributeProto::FLOAT);
  def->set_f(0.5f);
  auto* fo = f->add_opset_import();
  fo->set_domain("");
  fo->set_version(16);
  auto* n1 = f->add_node();
  n1->set_op_type("Mul");
  n1->add_input("X");
  n1->add_input("S");
  n1->add_output("T");
  auto* n2 = f->add_node();
  n2->set_op_type("LeakyRelu");
  n2->add_input("T");
  n2->add_output("Y");
  auto* ref = n2->add_attribute();
  ref->set_name("alpha");
  ref->set_type(pb::AttributeProto::FLOAT);
  ref->set_ref_attr_name("alpha");

  b.input("x");
  b.input("s", {});
  auto* c1 = b.node("ScaledLeaky", {"x", "s"}, {"y1"}, "call1");
  c1->set_domain("local");
  attr_f(c1, "alpha", 0.1f);
  auto* c2 = b.node("ScaledLeaky", {"y1", "s"}, {"y2"}, "call2");
  c2->set_domain("local");
  b.output("y2");
  ir::Model m = b.load();
  const Graph& g = *m.graph;
  ASSERT_EQ(g.nodes().size(), 4u);
  std::vector<std::string> ops;
  for (const auto& n : g.nodes()) ops.push_back(n->op_type);
  EXPECT_EQ(ops, (std::vector<std::string>{"Mul", "LeakyRelu", "Mul", "LeakyRelu"}));
  EXPECT_EQ(g.nodes()[1]->attr("alpha")->f, 0.1f);  // bound from the call
  EXPECT_EQ(g.nodes()[3]->attr("alpha")->f, 0.5f);  // the function's default
  EXPECT_EQ(g.nodes()[0]->opset, 16);               // the function's own opset import
  EXPECT_NE(g.nodes()[0]->outputs[0]->name, g.nodes()[2]->outputs[0]->name);  // T renamed per call
  EXPECT_EQ(g.nodes()[2]->inputs[0]->name, "y1");
  EXPECT_EQ(g.outputs[0]->producer, g.nodes()[3].get());

  // a function that calls itself is refused
  auto* rec = f->add_node();
  rec->set_op_type("ScaledLeaky");
  rec->set_domain("local");
  rec->add_input("Y");
  rec->add_input("S");
  rec->add_output("Z");
  ErrorCode code{};
  EXPECT_NE(error_of([&] { b.load(); }, &code).find("calls itself"), std::string::npos);
}

TEST(OnnxLoader, ExponentialInliningIsCapped) {
  Builder b;
  auto* o = b.m.add_opset_import();
  o->set_domain("local");
  o->set_version(1);
  const int levels = 30;  // F0 calls F1 twice, ..., F29 is one Relu: 2^29 nodes if unchecked
  for (int i = 0; i < levels; ++i) {
    auto* f = b.m.add_functions();
    f->set_name("F" + std::to_string(i));
    f->set_domain("local");
    f->add_input("X");
    f->add_output("Y");
    if (i + 1 == levels) {
      auto* n = f->add_node();
      n->set_op_type("Relu");
      n->add_input("X");
      n->add_output("Y");
      continue;
    }
    for (int k = 0; k < 2; ++k) {
      auto* n = f->add_node();
      n->set_op_type("F" + std::to_string(i + 1));
      n->set_domain("local");
      n->add_input(k == 0 ? "X" : "T");
      n->add_output(k == 0 ? "T" : "Y");
    }
  }
  b.input("x");
  b.node("F0", {"x"}, {"y"})->set_domain("local");
  b.output("y");
  ErrorCode code{};
  EXPECT_NE(error_of([&] { b.load(); }, &code).find("more than"), std::string::npos);
  EXPECT_EQ(code, ErrorCode::invalid_model);
}

TEST(OnnxLoader, BadModels) {
  Builder b;
  b.input("x");
  b.node("Relu", {"x"}, {"y"}, "r");
  b.output("y");
  auto bytes = b.bytes();
  ErrorCode code{};
  // truncated at every length: never crashes, most refuse
  int refused = 0;
  for (size_t cut = 0; cut < bytes.size(); ++cut) {
    std::vector<uint8_t> part(bytes.begin(), bytes.begin() + long(cut));
    try {
      load_bytes(part);
    } catch (const Error&) {
      ++refused;
    }
  }
  EXPECT_GT(refused, int(bytes.size()) / 2);
  std::string msg = error_of([&] { load_bytes(std::span(bytes.data(), bytes.size() - 3)); }, &code);
  EXPECT_EQ(code, ErrorCode::invalid_model);
  // random corruption: never crashes
  std::mt19937 rng(5);
  for (int i = 0; i < 300; ++i) {
    auto c = bytes;
    for (int k = 0; k < 3; ++k) c[rng() % c.size()] = uint8_t(rng());
    try {
      load_bytes(c);
    } catch (const Error&) {
    }
  }
  std::vector<uint8_t> garbage = {0x0A, 0xFF, 0xFF, 0xFF, 0xFF, 0x0F, 1, 2};
  EXPECT_NE(error_of([&] { load_bytes(garbage); }, &code).find("not a valid ONNX"), std::string::npos);
  EXPECT_EQ(error_of([&] { load_bytes({}); }, &code).find("<no error>"), std::string::npos);
  EXPECT_EQ(error_of([&] { load_file("/nonexistent/model.onnx"); }, &code).find("<no error>"), std::string::npos);
  EXPECT_EQ(code, ErrorCode::io);
}

TEST(OnnxLoader, UndefinedInputNamesNodeAndValue) {
  Builder b;
  b.input("x");
  b.node("Add", {"x", "ghost"}, {"y"}, "adder");
  b.output("y");
  ErrorCode code{};
  std::string msg = error_of([&] { b.load(); }, &code);
  EXPECT_EQ(code, ErrorCode::invalid_model);
  EXPECT_NE(msg.find("adder"), std::string::npos) << msg;
  EXPECT_NE(msg.find("ghost"), std::string::npos) << msg;
}

TEST(OnnxLoader, CyclesAndDuplicatesRefused) {
  Builder b;
  b.input("x");
  b.node("Add", {"x", "b"}, {"a"}, "n1");
  b.node("Relu", {"a"}, {"b"}, "n2");
  b.output("b");
  ErrorCode code{};
  std::string msg = error_of([&] { b.load(); }, &code);
  EXPECT_EQ(code, ErrorCode::invalid_model);
  EXPECT_NE(msg.find("cycle"), std::string::npos) << msg;

  Builder d;
  d.input("x");
  d.node("Relu", {"x"}, {"y"}, "r1");
  d.node("Relu", {"x"}, {"y"}, "r2");
  d.output("y");
  EXPECT_NE(error_of([&] { d.load(); }, &code).find("r2"), std::string::npos);

  Builder o;
  o.input("x");
  o.output("missing");
  EXPECT_NE(error_of([&] { o.load(); }, &code).find("missing"), std::string::npos);

  Builder dom;
  dom.input("x");
  dom.node("Foo", {"x"}, {"y"})->set_domain("not.imported");
  dom.output("y");
  EXPECT_NE(error_of([&] { dom.load(); }, &code).find("not.imported"), std::string::npos);
}

TEST(OnnxLoader, SkeletonPolicy) {
  Builder b;
  pb::TensorProto w;
  w.set_name("w");
  w.set_data_type(pb::TensorProto::FLOAT);
  w.add_dims(2);
  w.add_dims(3);
  w.set_doc_string("skeleton:{\"mean\": 0.0, \"std\": 0.02}");
  *b.g->add_initializer() = w;
  b.output("w");
  ErrorCode code{};
  EXPECT_NE(error_of([&] { b.load(); }, &code).find("skeleton"), std::string::npos);
  EXPECT_EQ(code, ErrorCode::invalid_model);
  LoadOptions o;
  o.skeletons = SkeletonPolicy::zeros;
  EXPECT_EQ(b.load(o).graph->find_value("w")->initializer->to_double_vector(), std::vector<double>(6, 0.0));
  o.skeletons = SkeletonPolicy::fill;
  std::string seen;
  o.skeleton_fill = [&](const std::string& name, DType d, const Shape& s, std::string_view doc) {
    seen = std::string(doc);
    Tensor t(d, s);
    t.data<float>()[0] = 42;
    return t;
  };
  EXPECT_EQ(b.load(o).graph->find_value("w")->initializer->values<float>()[0], 42.f);
  EXPECT_EQ(seen, "{\"mean\": 0.0, \"std\": 0.02}");
  o.skeleton_fill = [](const std::string&, DType, const Shape&, std::string_view) { return Tensor::scalar<float>(1); };
  EXPECT_NE(error_of([&] { b.load(o); }, &code).find("skeleton_fill"), std::string::npos);
  // a non-skeleton initializer without data is still an error
  b.g->mutable_initializer(0)->clear_doc_string();
  EXPECT_EQ(error_of([&] { b.load(o); }, &code).find("<no error>"), std::string::npos);
}

TEST(OnnxLoader, LoadFileResolvesExternalDataBesideTheModel) {
  fs::path dir = fs::temp_directory_path() / ("tessera_loadfile_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::vector<float> v = {1, 2, 3};
  {
    std::ofstream f(dir / "w.data", std::ios::binary);
    f.write(reinterpret_cast<const char*>(v.data()), 12);
  }
  Builder b;
  pb::TensorProto w;
  w.set_name("w");
  w.set_data_type(pb::TensorProto::FLOAT);
  w.add_dims(3);
  w.set_data_location(pb::TensorProto::EXTERNAL);
  auto* e = w.add_external_data();
  e->set_key("location");
  e->set_value("w.data");
  *b.g->add_initializer() = w;
  b.output("w");
  {
    std::ofstream f(dir / "m.onnx", std::ios::binary);
    f << b.m.SerializeAsString();
  }
  {
    std::string full = b.m.SerializeAsString();
    std::ofstream f(dir / "cut.onnx", std::ios::binary);
    f << full.substr(0, full.size() - 5);
    std::ofstream e(dir / "empty.onnx", std::ios::binary);
  }
  ErrorCode cut_code{};
  EXPECT_NE(error_of([&] { load_file((dir / "cut.onnx").string()); }, &cut_code).find("not a valid ONNX"),
            std::string::npos);
  EXPECT_EQ(cut_code, ErrorCode::invalid_model);
  EXPECT_NE(error_of([&] { load_file((dir / "empty.onnx").string()); }).find("empty"), std::string::npos);
  ir::Model m = load_file((dir / "m.onnx").string());
  EXPECT_EQ(m.path, (dir / "m.onnx").string());
  EXPECT_EQ(m.graph->find_value("w")->initializer->to_double_vector(), (std::vector<double>{1, 2, 3}));
  ErrorCode code{};
  EXPECT_NE(error_of([&] { b.load(); }, &code).find("external_data_dir"), std::string::npos);  // bytes: refused
  LoadOptions o;
  o.external_data_dir = dir.string();
  EXPECT_EQ(b.load(o).graph->find_value("w")->initializer->numel(), 3);
  fs::remove_all(dir);
}

// The real model skeletons load (with a stride-0 fill so no weight memory is spent).
TEST(OnnxLoader, SharedSkeletonModels) {
  const fs::path dir = "/work/shared/models";
  if (!fs::exists(dir)) GTEST_SKIP() << "no " << dir;
  LoadOptions o;
  o.skeletons = SkeletonPolicy::fill;
  o.skeleton_fill = [](const std::string&, DType d, const Shape& s, std::string_view) {
    return Tensor::view(d, s, allocate_storage(16), 0, std::vector<int64_t>(s.size(), 0));
  };
  int loaded = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string p = entry.path().string();
    if (p.size() < 15 || p.substr(p.size() - 14) != ".skeleton.onnx") continue;
    SCOPED_TRACE(p);
    ir::Model m = load_file(p, o);
    EXPECT_EQ(m.opsets.at(""), 17);
    EXPECT_GT(m.graph->nodes().size(), 20u);
    EXPECT_FALSE(m.graph->inputs.empty());
    EXPECT_FALSE(m.graph->outputs.empty());
    for (const auto& n : m.graph->nodes()) {
      for (const Value* v : n->inputs)
        if (v) EXPECT_TRUE(v->initializer || v->producer || v->owner != m.graph.get() ||
                           std::count(m.graph->inputs.begin(), m.graph->inputs.end(), v));
    }
    // without a skeleton policy: refused with a clear message
    ErrorCode code{};
    EXPECT_NE(error_of([&] { load_file(p); }, &code).find("skeleton"), std::string::npos);
    ++loaded;
  }
  EXPECT_EQ(loaded, 7);
}

}  // namespace tessera::frontend::onnx::testing
