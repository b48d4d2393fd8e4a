// Opset canonicalization: every node of the default ONNX domain is rewritten
// to its newest-opset *form*, so that kernels and passes see one form per op.
// This is the only place in Tessera where opset versions change a graph.
//
// | op (imported opset)                  | rewrite                                                        |
// |--------------------------------------|----------------------------------------------------------------|
// | any default-domain op                | drop `consumed_inputs` (opset-1 memory hint)                    |
// | Add Sub Mul Div Pow And Or Xor Equal | drop `broadcast`; a legacy `axis` broadcast of a constant B is  |
// |   Greater Less PRelu Gemm (< 7)      |   turned into numpy broadcasting by reshaping B (trailing 1s);  |
// |                                      |   a non-constant B with a non-trailing axis is unsupported      |
// | Reshape (< 5)                        | attr `shape` -> input 1 (int64)                                 |
// | Concat (< 4)                         | missing `axis` -> axis = 1 (the opset-1 default)                |
// | Split (< 13)                         | attr `split` -> input 1 (int64)                                 |
// | Split (< 18), no split input         | add num_outputs = number of outputs (required since 18)         |
// | Slice (< 10)                         | attrs starts/ends/axes -> inputs 1/2/3 (int64)                  |
// | ReduceSum (< 13)                     | attr `axes` -> input 1 (int64)                                  |
// | ReduceMean/Max/Min/Prod/L1/L2/       | attr `axes` -> input 1 (int64)                                  |
// |   LogSum/LogSumExp/SumSquare (< 18)  |                                                                 |
// | Squeeze, Unsqueeze (< 13)            | attr `axes` -> input 1 (int64)                                  |
// | Pad (< 11)                           | attr `pads` (`paddings` in opset 1) -> input 1 (int64);        |
// |                                      |   attr `value` -> input 2 (scalar of X's type, f32 if unknown); |
// |                                      |   `mode` stays                                                  |
// | Clip (< 11)                          | attrs min/max -> inputs 1/2 (scalars of X's type, f32 if unknown)|
// | TopK (< 10)                          | attr `k` -> input 1 (int64 [1])                                 |
// | Dropout (< 12)                       | attr `ratio` -> input 1 (f32 scalar); drop `is_test`            |
// | BatchNormalization (< 9)             | drop `spatial` (=1; spatial=0 is unsupported), `is_test`        |
// | Upsample (any)                       | -> Resize [X, '', scales]: scales attr (opset 7/8) becomes a    |
// |                                      |   constant input; coordinate_transformation_mode=asymmetric,    |
// |                                      |   nearest_mode=floor; mode nearest/linear kept; opset := 11      |
// | Resize (10)                          | [X, scales] -> [X, '', scales]; coordinate_transformation_mode  |
// |                                      |   = asymmetric; opset := 11                                     |
// | Scatter (9, 10)                      | -> ScatterElements (same semantics)                             |
// | Cast (< 6)                           | `to` given as a string ("FLOAT") -> the TensorProto code        |
// | Tile (< 6)                           | unsupported (tiles/axis inputs form)                            |
//
// Left alone (the kernel reads Node::opset): Softmax/LogSoftmax/Hardmax axis
// semantics before 13, ArgMax/ArgMin select_last_index, Resize defaults between
// 11 and 19, and any other change of meaning without a change of form.
// Dtype attributes (Cast `to`, `dtype`, `output_dtype`, ...) stay ONNX
// TensorProto codes; kernels map them with their own helper.
#include <algorithm>
#include <string>
#include <vector>

#include "core/error.h"
#include "frontend/onnx/onnx_internal.h"

namespace tessera::frontend::onnx::detail {

namespace {

// Adds a constant initializer to g and returns it.
ir::Value* add_constant(ir::Graph& g, const ir::Node& n, const std::string& what, Tensor t) {
  ir::Value* v = g.add_value(g.unique_name(cat(n.name.empty() ? n.op_type : n.name, "_", what)));
  v->type = ir::TypeInfo::tensor_of(t);
  v->initializer = std::move(t);
  return v;
}

// Puts v at input position i (padding with omitted inputs).
void put_input(ir::Graph& g, ir::Node* n, size_t i, ir::Value* v) {
  while (n->inputs.size() <= i) g.connect_input(n, nullptr);
  g.set_input(n, i, v);
}

const Attribute* typed(const ir::Node& n, const std::string& name, Attribute::Kind k) {
  const Attribute* a = n.attr(name);
  if (a && a->kind != k)
    throw Error(ErrorCode::invalid_model,
                cat("attribute '", name, "' has type ", Attribute::kind_name(a->kind), ", expected ",
                    Attribute::kind_name(k)),
                n.name, n.op_type);
  return a;
}

Tensor ints_tensor(const std::vector<int64_t>& v) { return Tensor::from_vector(v, {int64_t(v.size())}); }

// Moves an INTS attribute to input i as a 1-D int64 constant.
bool move_ints(ir::Graph& g, ir::Node* n, const std::string& attr, size_t i) {
  const Attribute* a = typed(*n, attr, Attribute::Kind::ints);
  if (!a) return false;
  ir::Value* v = add_constant(g, *n, attr, ints_tensor(a->ints));
  n->attrs.erase(attr);
  put_input(g, n, i, v);
  return true;
}

// A scalar of X's element type (input 0), f32 if unknown.
Tensor scalar_like_input0(const ir::Node& n, double value) {
  DType d = DType::f32;
  if (!n.inputs.empty() && n.inputs[0]) {
    const ir::TypeInfo& t = n.inputs[0]->type;
    if (t.kind == ir::TypeInfo::Kind::tensor && t.elem != DType::undefined) d = t.elem;
  }
  Tensor t(d, {});
  dispatch_dtype(d, [&]<typename T>() { t.data<T>()[0] = from_double<T>(value); });
  return t;
}

// Moves a FLOAT attribute to input i as a scalar like input 0.
void move_float_like_x(ir::Graph& g, ir::Node* n, const std::string& attr, size_t i) {
  const Attribute* a = typed(*n, attr, Attribute::Kind::f);
  if (!a) return;
  ir::Value* v = add_constant(g, *n, attr, scalar_like_input0(*n, a->f));
  n->attrs.erase(attr);
  put_input(g, n, i, v);
}

void set_string(ir::Node* n, const std::string& name, const std::string& value) {
  Attribute a;
  a.kind = Attribute::Kind::s;
  a.s = value;
  n->attrs[name] = a;
}
void set_int(ir::Node* n, const std::string& name, int64_t value) {
  Attribute a;
  a.kind = Attribute::Kind::i;
  a.i = value;
  n->attrs[name] = a;
}

int32_t onnx_type_from_name(const std::string& s) {
  static const std::pair<const char*, int32_t> kNames[] = {
      {"FLOAT", 1},   {"UINT8", 2},   {"INT8", 3},    {"UINT16", 4},  {"INT16", 5},  {"INT32", 6},
      {"INT64", 7},   {"STRING", 8},  {"BOOL", 9},    {"FLOAT16", 10}, {"DOUBLE", 11}, {"UINT32", 12},
      {"UINT64", 13}, {"COMPLEX64", 14}, {"COMPLEX128", 15}, {"BFLOAT16", 16}};
  std::string u = s;
  std::transform(u.begin(), u.end(), u.begin(), [](unsigned char c) { return char(std::toupper(c)); });
  if (u.rfind("TENSORPROTO.", 0) == 0) u = u.substr(12);
  for (const auto& [name, code] : kNames)
    if (u == name) return code;
  return 0;
}

bool is_legacy_broadcast_op(const std::string& op) {
  static const char* kOps[] = {"Add", "Sub", "Mul", "Div", "Pow", "And", "Or", "Xor", "Equal", "Greater", "Less", "PRelu"};
  for (const char* o : kOps)
    if (op == o) return true;
  return false;
}

bool is_reduce18(const std::string& op) {
  static const char* kOps[] = {"ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1",
                               "ReduceL2",   "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"};
  for (const char* o : kOps)
    if (op == o) return true;
  return false;
}

std::optional<int64_t> known_rank(const ir::Value* v) {
  if (!v) return std::nullopt;
  if (v->initializer) return v->initializer->rank();
  if (v->type.shape) return int64_t(v->type.shape->size());
  return std::nullopt;
}

// Legacy (opset < 7) broadcasting: B aligned with A starting at `axis`
// (default: trailing). Numpy broadcasting aligns trailing dims, so B needs
// trailing 1s when axis + rank(B) < rank(A).
void fix_legacy_broadcast(ir::Graph& g, ir::Node* n) {
  const Attribute* bc = n->attr("broadcast");
  const bool broadcast = bc && bc->kind == Attribute::Kind::i && bc->i != 0;
  const Attribute* ax = n->attr("axis");
  n->attrs.erase("broadcast");
  if (n->op_type == "Gemm") return;  // C broadcasting became numpy-style, nothing else changes
  if (!ax) return;
  const int64_t axis_attr = ax->kind == Attribute::Kind::i ? ax->i : 0;
  n->attrs.erase("axis");
  if (!broadcast || n->inputs.size() < 2) return;
  auto ra = known_rank(n->inputs[0]);
  ir::Value* b = n->inputs[1];
  auto rb = known_rank(b);
  if (ra && rb) {
    const int64_t axis = axis_attr < 0 ? axis_attr + *ra : axis_attr;
    const int64_t trailing = *ra - axis - *rb;
    if (trailing == 0) return;
    if (trailing > 0 && b->initializer) {
      Shape s = b->initializer->shape();
      s.insert(s.end(), size_t(trailing), 1);
      ir::Value* nb = add_constant(g, *n, "B", b->initializer->contiguous().reshape(s));
      g.set_input(n, 1, nb);
      return;
    }
  }
  throw Error(ErrorCode::unsupported,
              cat("legacy broadcast with axis=", axis_attr, " needs a constant B and known ranks"), n->name,
              n->op_type);
}

void canonicalize_node(ir::Graph& g, ir::Node* n) {
  if (!n->domain.empty()) return;
  const std::string& op = n->op_type;
  const int v = n->opset;
  n->attrs.erase("consumed_inputs");

  if (v < 7 && (is_legacy_broadcast_op(op) || op == "Gemm")) fix_legacy_broadcast(g, n);

  if (op == "Reshape" && v < 5) {
    move_ints(g, n, "shape", 1);
  } else if (op == "Concat" && v < 4) {
    if (!n->attr("axis")) set_int(n, "axis", 1);
  } else if (op == "Split") {
    if (v < 13) move_ints(g, n, "split", 1);
    const bool has_split = n->inputs.size() > 1 && n->inputs[1];
    if (v < 18 && !has_split && !n->attr("num_outputs")) set_int(n, "num_outputs", int64_t(n->outputs.size()));
  } else if (op == "Slice" && v < 10) {
    const bool has_axes = n->attr("axes") != nullptr;
    if (!move_ints(g, n, "starts", 1) || !move_ints(g, n, "ends", 2))
      throw Error(ErrorCode::invalid_model, "Slice (opset < 10) needs starts and ends attributes", n->name, op);
    if (has_axes) move_ints(g, n, "axes", 3);
  } else if ((op == "ReduceSum" && v < 13) || (is_reduce18(op) && v < 18) ||
             ((op == "Squeeze" || op == "Unsqueeze") && v < 13)) {
    move_ints(g, n, "axes", 1);
  } else if (op == "Pad" && v < 11) {
    if (n->attr("paddings") && !n->attr("pads")) {
      n->attrs["pads"] = *n->attr("paddings");
      n->attrs.erase("paddings");
    }
    if (!move_ints(g, n, "pads", 1))
      throw Error(ErrorCode::invalid_model, "Pad (opset < 11) needs a pads attribute", n->name, op);
    move_float_like_x(g, n, "value", 2);
  } else if (op == "Clip" && v < 11) {
    move_float_like_x(g, n, "min", 1);
    move_float_like_x(g, n, "max", 2);
  } else if (op == "TopK" && v < 10) {
    const Attribute* k = typed(*n, "k", Attribute::Kind::i);
    if (!k) throw Error(ErrorCode::invalid_model, "TopK (opset < 10) needs a k attribute", n->name, op);
    ir::Value* kv = add_constant(g, *n, "k", ints_tensor({k->i}));
    n->attrs.erase("k");
    put_input(g, n, 1, kv);
  } else if (op == "Dropout" && v < 12) {
    n->attrs.erase("is_test");
    if (const Attribute* r = typed(*n, "ratio", Attribute::Kind::f)) {
      ir::Value* rv = add_constant(g, *n, "ratio", Tensor::scalar<float>(r->f));
      n->attrs.erase("ratio");
      put_input(g, n, 1, rv);
    }
  } else if (op == "BatchNormalization" && v < 9) {
    if (const Attribute* s = n->attr("spatial"); s && s->kind == Attribute::Kind::i && s->i == 0)
      throw Error(ErrorCode::unsupported, "BatchNormalization with spatial=0 is not supported", n->name, op);
    n->attrs.erase("spatial");
    n->attrs.erase("is_test");
  } else if (op == "Upsample") {
    std::string mode = "nearest";
    if (const Attribute* m = typed(*n, "mode", Attribute::Kind::s)) mode = m->s;
    if (mode == "bilinear") mode = "linear";  // opset-1 spelling
    check(mode == "nearest" || mode == "linear", ErrorCode::unsupported, "Upsample mode '", mode,
          "' is not supported");
    ir::Value* scales = n->inputs.size() > 1 ? n->inputs[1] : nullptr;
    if (const Attribute* s = typed(*n, "scales", Attribute::Kind::floats)) {
      scales = add_constant(g, *n, "scales", Tensor::from_vector(s->floats, {int64_t(s->floats.size())}));
    } else if (n->attr("height_scale") || n->attr("width_scale")) {  // opset 1: NCHW, H and W only
      const Attribute* h = typed(*n, "height_scale", Attribute::Kind::f);
      const Attribute* w = typed(*n, "width_scale", Attribute::Kind::f);
      std::vector<float> sc = {1.f, 1.f, h ? h->f : 1.f, w ? w->f : 1.f};
      scales = add_constant(g, *n, "scales", Tensor::from_vector(sc, {4}));
    }
    if (!scales) throw Error(ErrorCode::invalid_model, "Upsample without scales", n->name, op);
    n->attrs.clear();
    n->op_type = "Resize";
    set_string(n, "mode", mode);
    set_string(n, "coordinate_transformation_mode", "asymmetric");
    set_string(n, "nearest_mode", "floor");
    ir::Value* x = n->inputs.empty() ? nullptr : n->inputs[0];
    while (n->inputs.size() > 1) {  // rebuild the input list as [X, '', scales]
      g.set_input(n, n->inputs.size() - 1, nullptr);
      n->inputs.pop_back();
    }
    if (n->inputs.empty()) g.connect_input(n, x);
    g.connect_input(n, nullptr);
    g.connect_input(n, scales);
    n->opset = std::max(n->opset, 11);
  } else if (op == "Resize" && v < 11) {
    ir::Value* scales = n->inputs.size() > 1 ? n->inputs[1] : nullptr;
    g.set_input(n, 1, nullptr);
    put_input(g, n, 2, scales);
    set_string(n, "coordinate_transformation_mode", "asymmetric");
    n->opset = 11;
  } else if (op == "Scatter") {
    n->op_type = "ScatterElements";
  } else if (op == "Cast" && v < 6) {
    if (const Attribute* to = n->attr("to"); to && to->kind == Attribute::Kind::s) {
      const int32_t code = onnx_type_from_name(to->s);
      if (!code) throw Error(ErrorCode::invalid_model, cat("Cast to unknown type '", to->s, "'"), n->name, op);
      set_int(n, "to", code);
    }
  } else if (op == "Tile" && v < 6) {
    throw Error(ErrorCode::unsupported, "Tile from opset < 6 (tiles/axis inputs) is not supported", n->name, op);
  }
}

}  // namespace

void canonicalize(ir::Graph& g) {
  std::vector<ir::Node*> nodes;
  for (const auto& n : g.nodes()) nodes.push_back(n.get());
  for (ir::Node* n : nodes) {
    for (ir::Graph* sg : n->subgraphs()) canonicalize(*sg);
    canonicalize_node(g, n);
  }
}

}  // namespace tessera::frontend::onnx::detail
