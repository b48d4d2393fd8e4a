// ir::verify against small schemas registered under a test domain (the real
// schemas are filled by the op families).
#include <gtest/gtest.h>

#include "ir/op_registry.h"
#include "ir/verifier.h"

namespace tessera::ir {
namespace {

constexpr const char* kDom = "test.verifier";

void register_test_schemas() {
  static bool done = [] {
    auto& r = OpRegistry::instance();
    r.add(make_schema("Unary", 1, 1, 1, 1, {}, {{"alpha", Attribute::Kind::f}, {"mode", Attribute::Kind::s}}, kDom));
    r.add(make_schema("Opt", 1, 3, 1, 2, {}, {}, kDom));
    r.add(make_schema("Var", 1, -1, 1, 1, {}, {}, kDom));
    r.add(make_schema("WithBody", 1, 1, 1, 1, {}, {{"body", Attribute::Kind::g}}, kDom));
    return true;
  }();
  (void)done;
}

struct G {
  Graph g;
  G() {
    register_test_schemas();
    g.name = "main";
  }
  Value* input(const std::string& n) {
    Value* v = g.add_value(n);
    g.inputs.push_back(v);
    return v;
  }
  Node* node(const std::string& op, std::vector<Value*> ins, int nout, const std::string& name, Graph* in = nullptr) {
    Graph& gg = in ? *in : g;
    Node* n = gg.add_node(op, name);
    n->domain = kDom;
    for (Value* v : ins) gg.connect_input(n, v);
    for (int i = 0; i < nout; ++i) gg.connect_output(n, gg.add_value(name + "_out" + std::to_string(i)));
    return n;
  }
};

std::string verify_error(const Graph& g, ErrorCode* code = nullptr) {
  try {
    verify(g);
  } catch (const Error& e) {
    if (code) *code = e.code();
    return e.what();
  }
  return "<no error>";
}

TEST(Verifier, AcceptsAWellFormedGraph) {
  G t;
  Value* x = t.input("x");
  Node* a = t.node("Unary", {x}, 1, "a");
  Attribute f;
  f.kind = Attribute::Kind::f;
  a->attrs["alpha"] = f;
  Attribute extra;  // undeclared attributes are allowed
  extra.kind = Attribute::Kind::i;
  a->attrs["extra"] = extra;
  Value* c = t.g.add_value("c");
  c->initializer = Tensor::scalar<float>(1);
  Node* o = t.node("Opt", {a->outputs[0], nullptr, c}, 2, "o");
  Node* v = t.node("Var", {x, x, o->outputs[0], c}, 1, "v");
  t.g.outputs = {v->outputs[0], c, x};
  EXPECT_EQ(verify_error(t.g), "<no error>");
}

TEST(Verifier, UnknownOpAndDomain) {
  G t;
  Value* x = t.input("x");
  Node* n = t.node("Nope", {x}, 1, "bad");
  ErrorCode code{};
  EXPECT_EQ(verify_error(t.g, &code), "node 'bad' (Nope): unsupported op Nope in domain 'test.verifier'");
  EXPECT_EQ(code, ErrorCode::unsupported);
  n->op_type = "Unary";
  n->domain = "no.such.domain";
  EXPECT_NE(verify_error(t.g, &code).find("domain 'no.such.domain'"), std::string::npos);
}

TEST(Verifier, InputOutputCounts) {
  G t;
  Value* x = t.input("x");
  Node* n = t.node("Unary", {x, x}, 1, "two_in");
  ErrorCode code{};
  EXPECT_NE(verify_error(t.g, &code).find("has 2 inputs"), std::string::npos);
  EXPECT_EQ(code, ErrorCode::invalid_model);
  t.g.set_input(n, 1, nullptr);  // a trailing omitted input does not count
  EXPECT_EQ(verify_error(t.g), "<no error>");
  n->inputs.clear();
  x->uses.clear();
  EXPECT_NE(verify_error(t.g).find("has 0 inputs"), std::string::npos);

  G o;
  Value* y = o.input("y");
  o.node("Opt", {y}, 3, "three_out");
  EXPECT_NE(verify_error(o.g).find("outputs"), std::string::npos);

  G r;  // a required input omitted in the middle
  Value* z = r.input("z");
  Node* m = r.node("Opt", {z}, 1, "m");
  m->inputs[0] = nullptr;
  r.g.connect_input(m, z);
  EXPECT_NE(verify_error(r.g).find("required input 0"), std::string::npos);
}

TEST(Verifier, AttributeKinds) {
  G t;
  Value* x = t.input("x");
  Node* n = t.node("Unary", {x}, 1, "u");
  Attribute wrong;
  wrong.kind = Attribute::Kind::i;
  n->attrs["alpha"] = wrong;
  ErrorCode code{};
  std::string msg = verify_error(t.g, &code);
  EXPECT_NE(msg.find("attribute 'alpha' has type INT, expected FLOAT"), std::string::npos) << msg;
  EXPECT_EQ(code, ErrorCode::invalid_model);
}

TEST(Verifier, UndefinedAndOrder) {
  G t;
  t.input("x");
  Value* floating = t.g.add_value("floating");  // no producer, not an input or initializer
  t.node("Unary", {floating}, 1, "u");
  EXPECT_NE(verify_error(t.g).find("'floating' is not defined"), std::string::npos);

  G o;  // consumer before producer in node order
  Value* y = o.input("y");
  Node* first = o.node("Unary", {y}, 1, "first");
  Node* second = o.node("Unary", {y}, 1, "second");
  o.g.set_input(first, 0, second->outputs[0]);
  EXPECT_NE(verify_error(o.g).find("node 'first'"), std::string::npos);
  o.g.topological_sort();
  EXPECT_EQ(verify_error(o.g), "<no error>");

  G out;
  out.input("z");
  out.g.outputs.push_back(out.g.add_value("dangling"));
  EXPECT_NE(verify_error(out.g).find("output 'dangling'"), std::string::npos);
}

TEST(Verifier, RecursesIntoSubgraphs) {
  G t;
  Value* x = t.input("x");
  Node* pre = t.node("Unary", {x}, 1, "pre");
  Node* w = t.node("WithBody", {x}, 1, "loop");
  auto body = std::make_shared<Graph>();
  body->parent = &t.g;
  body->name = "body";
  Node* inner = t.node("Unary", {pre->outputs[0]}, 1, "inner", body.get());  // reads an outer value
  body->outputs.push_back(inner->outputs[0]);
  Attribute ga;
  ga.kind = Attribute::Kind::g;
  ga.g = body;
  w->attrs["body"] = ga;
  EXPECT_EQ(verify_error(t.g), "<no error>");
  inner->op_type = "Missing";
  ErrorCode code{};
  EXPECT_EQ(verify_error(t.g, &code), "node 'inner' (Missing): unsupported op Missing in domain 'test.verifier'");
  inner->op_type = "Unary";
  body->outputs.push_back(body->add_value("nowhere"));
  std::string msg = verify_error(t.g);
  EXPECT_NE(msg.find("node 'loop'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("nowhere"), std::string::npos) << msg;
  body->outputs.pop_back();
  Attribute wrong;
  wrong.kind = Attribute::Kind::i;
  w->attrs["body"] = wrong;
  EXPECT_NE(verify_error(t.g).find("attribute 'body'"), std::string::npos);
}

}  // namespace
}  // namespace tessera::ir
