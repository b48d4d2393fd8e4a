// Writes a small seed corpus of valid ONNX models for fuzz_loader into argv[1]:
// a plain graph, initializers of several dtypes (packed int4, f16 via
// int32_data, strings, sparse), Constant forms, an If subgraph, a model-local
// function, and an old-opset model that exercises canonicalization.
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>

#include "tessera_onnx.pb.h"

namespace pb = tessera_onnx;

namespace {

pb::ModelProto base(int opset) {
  pb::ModelProto m;
  m.set_ir_version(8);
  m.set_producer_name("seed");
  auto* o = m.add_opset_import();
  o->set_version(opset);
  auto* g = m.mutable_graph();
  g->set_name("g");
  auto* in = g->add_input();
  in->set_name("x");
  auto* tt = in->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(pb::TensorProto::FLOAT);
  tt->mutable_shape()->add_dim()->set_dim_param("N");
  tt->mutable_shape()->add_dim()->set_dim_value(4);
  return m;
}

pb::NodeProto* node(pb::GraphProto* g, const std::string& op, std::initializer_list<const char*> ins,
                    std::initializer_list<const char*> outs) {
  auto* n = g->add_node();
  n->set_op_type(op);
  for (auto s : ins) n->add_input(s);
  for (auto s : outs) n->add_output(s);
  return n;
}

pb::AttributeProto* attr(pb::NodeProto* n, const char* name, pb::AttributeProto::AttributeType t) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(t);
  return a;
}

void write(const std::filesystem::path& dir, const char* name, const pb::ModelProto& m) {
  std::ofstream f(dir / name, std::ios::binary);
  f << m.SerializeAsString();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: make_seeds DIR\n";
    return 2;
  }
  const std::filesystem::path dir = argv[1];
  std::filesystem::create_directories(dir);

  {  // plain graph with initializers of several kinds
    pb::ModelProto m = base(17);
    auto* g = m.mutable_graph();
    auto* w = g->add_initializer();
    w->set_name("w");
    w->set_data_type(pb::TensorProto::FLOAT);
    w->add_dims(4);
    for (int i = 0; i < 4; ++i) w->add_float_data(float(i));
    auto* q = g->add_initializer();
    q->set_name("q4");
    q->set_data_type(pb::TensorProto::INT4);
    q->add_dims(3);
    q->set_raw_data(std::string("\xE1\x07", 2));
    auto* h = g->add_initializer();
    h->set_name("h");
    h->set_data_type(pb::TensorProto::FLOAT16);
    h->add_dims(1);
    h->add_int32_data(0x3C00);
    auto* s = g->add_initializer();
    s->set_name("s");
    s->set_data_type(pb::TensorProto::STRING);
    s->add_dims(1);
    s->add_string_data("hi");
    auto* sp = g->add_sparse_initializer();
    sp->add_dims(4);
    auto* v = sp->mutable_values();
    v->set_name("sp");
    v->set_data_type(pb::TensorProto::FLOAT);
    v->add_dims(1);
    v->add_float_data(2);
    auto* idx = sp->mutable_indices();
    idx->set_data_type(pb::TensorProto::INT64);
    idx->add_dims(1);
    idx->add_int64_data(3);
    node(g, "Add", {"x", "w"}, {"a"});
    node(g, "Mul", {"a", "sp"}, {"y"});
    g->add_output()->set_name("y");
    write(dir, "plain.onnx", m);
  }
  {  // Constant forms and an If subgraph
    pb::ModelProto m = base(17);
    auto* g = m.mutable_graph();
    attr(node(g, "Constant", {}, {"c1"}), "value_float", pb::AttributeProto::FLOAT)->set_f(1);
    auto* ci = attr(node(g, "Constant", {}, {"c2"}), "value_ints", pb::AttributeProto::INTS);
    ci->add_ints(1);
    ci->add_ints(4);
    node(g, "Reshape", {"x", "c2"}, {"r"});
    node(g, "ReduceSum", {"r"}, {"cond0"});
    node(g, "Cast", {"cond0"}, {"cond"});
    auto* iff = node(g, "If", {"cond"}, {"y"});
    for (const char* br : {"then_branch", "else_branch"}) {
      auto* sg = attr(iff, br, pb::AttributeProto::GRAPH)->mutable_g();
      sg->set_name(br);
      node(sg, "Add", {"r", "c1"}, {"o"});
      sg->add_output()->set_name("o");
    }
    g->add_output()->set_name("y");
    write(dir, "subgraph.onnx", m);
  }
  {  // model-local function with an attribute reference
    pb::ModelProto m = base(17);
    auto* od = m.add_opset_import();
    od->set_domain("local");
    od->set_version(1);
    auto* f = m.add_functions();
    f->set_name("F");
    f->set_domain("local");
    f->add_input("X");
    f->add_output("Y");
    auto* fo = f->add_opset_import();
    fo->set_version(17);
    auto* body = f->add_node();
    body->set_op_type("LeakyRelu");
    body->add_input("X");
    body->add_output("Y");
    auto* ref = attr(body, "alpha", pb::AttributeProto::FLOAT);
    ref->set_ref_attr_name("a");
    auto* g = m.mutable_graph();
    auto* call = node(g, "F", {"x"}, {"y"});
    call->set_domain("local");
    attr(call, "a", pb::AttributeProto::FLOAT)->set_f(0.2f);
    g->add_output()->set_name("y");
    write(dir, "function.onnx", m);
  }
  {  // old opset: attributes that became inputs
    pb::ModelProto m = base(9);
    auto* g = m.mutable_graph();
    auto* sl = node(g, "Slice", {"x"}, {"s"});
    auto* st = attr(sl, "starts", pb::AttributeProto::INTS);
    st->add_ints(0);
    auto* en = attr(sl, "ends", pb::AttributeProto::INTS);
    en->add_ints(1);
    auto* sq = node(g, "Unsqueeze", {"s"}, {"u"});
    attr(sq, "axes", pb::AttributeProto::INTS)->add_ints(0);
    auto* up = node(g, "Upsample", {"u", "sc"}, {"y"});
    attr(up, "mode", pb::AttributeProto::STRING)->set_s("nearest");
    auto* sc = g->add_initializer();
    sc->set_name("sc");
    sc->set_data_type(pb::TensorProto::FLOAT);
    sc->add_dims(3);
    for (int i = 0; i < 3; ++i) sc->add_float_data(2);
    g->add_output()->set_name("y");
    write(dir, "old_opset.onnx", m);
  }
  return 0;
}
