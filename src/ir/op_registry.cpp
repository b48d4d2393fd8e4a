#include "ir/op_registry.h"

#include "core/error.h"

namespace tessera::ir {

// Each family file defines register_<family>_schemas.
#define OP_FAMILY(name) void register_##name##_schemas(OpRegistry&);
#include "ir/ops/families.def"
#undef OP_FAMILY

OpRegistry& OpRegistry::instance() {
  static OpRegistry* reg = [] {
    auto* r = new OpRegistry;
#define OP_FAMILY(name) register_##name##_schemas(*r);
#include "ir/ops/families.def"
#undef OP_FAMILY
    return r;
  }();
  return *reg;
}

void OpRegistry::add(OpSchema s) {
  auto key = std::make_pair(s.domain, s.op_type);
  schemas_[key] = std::move(s);
}

const OpSchema* OpRegistry::find(const std::string& domain, const std::string& op_type) const {
  const std::string d = domain == "ai.onnx" ? "" : domain;
  auto it = schemas_.find({d, op_type});
  return it == schemas_.end() ? nullptr : &it->second;
}

std::vector<const OpSchema*> OpRegistry::all() const {
  std::vector<const OpSchema*> v;
  for (const auto& [k, s] : schemas_) v.push_back(&s);
  return v;
}

OpSchema make_schema(std::string op_type, int min_in, int max_in, int min_out, int max_out, InferFn infer,
                     std::vector<AttrSpec> attrs, std::string domain) {
  OpSchema s;
  s.op_type = std::move(op_type);
  s.min_inputs = min_in;
  s.max_inputs = max_in;
  s.min_outputs = min_out;
  s.max_outputs = max_out;
  s.infer = std::move(infer);
  s.attrs = std::move(attrs);
  s.domain = std::move(domain);
  return s;
}

const TypeInfo& InferenceContext::input_type(size_t i) const {
  static const TypeInfo kUnknown;
  return (i < in_.size() && in_[i]) ? *in_[i] : kUnknown;
}

namespace {
const Attribute* typed_attr(const Node& n, const std::string& name, Attribute::Kind k) {
  const Attribute* a = n.attr(name);
  if (a && a->kind != k)
    throw Error(ErrorCode::invalid_model,
                cat("attribute '", name, "' has type ", Attribute::kind_name(a->kind), ", expected ",
                    Attribute::kind_name(k)),
                n.name, n.op_type);
  return a;
}
}  // namespace

int64_t InferenceContext::attr_int(const std::string& n, int64_t def) const {
  const Attribute* a = typed_attr(node_, n, Attribute::Kind::i);
  return a ? a->i : def;
}
float InferenceContext::attr_float(const std::string& n, float def) const {
  const Attribute* a = typed_attr(node_, n, Attribute::Kind::f);
  return a ? a->f : def;
}
std::string InferenceContext::attr_string(const std::string& n, const std::string& def) const {
  const Attribute* a = typed_attr(node_, n, Attribute::Kind::s);
  return a ? a->s : def;
}
std::vector<int64_t> InferenceContext::attr_ints(const std::string& n, std::vector<int64_t> def) const {
  const Attribute* a = typed_attr(node_, n, Attribute::Kind::ints);
  return a ? a->ints : def;
}

std::optional<std::vector<Dim>> broadcast_shapes(const std::optional<std::vector<Dim>>& a,
                                                 const std::optional<std::vector<Dim>>& b) {
  if (!a || !b) return std::nullopt;
  const size_t r = std::max(a->size(), b->size());
  std::vector<Dim> out(r);
  for (size_t i = 0; i < r; ++i) {
    const Dim da = i < r - a->size() ? Dim(1) : (*a)[i - (r - a->size())];
    const Dim db = i < r - b->size() ? Dim(1) : (*b)[i - (r - b->size())];
    if (da.known() && da.value == 1)
      out[i] = db;
    else if (db.known() && db.value == 1)
      out[i] = da;
    else if (da.known() && db.known()) {
      if (da.value != db.value)
        throw Error(ErrorCode::invalid_model, cat("shapes cannot broadcast: ", da.value, " vs ", db.value));
      out[i] = da;
    } else if (da.known())
      out[i] = da;
    else if (db.known())
      out[i] = db;
    else
      out[i] = (da == db) ? da : Dim();
  }
  return out;
}

void infer_same_as_input0(InferenceContext& ctx) {
  ctx.propagate(0, 0);
}

void infer_shapes(Graph& g) {
  const OpRegistry& reg = OpRegistry::instance();
  for (const auto& np : g.nodes()) {
    Node& n = *np;
    for (Graph* sg : n.subgraphs()) infer_shapes(*sg);
    const OpSchema* s = reg.find(n.domain, n.op_type);
    if (!s || !s->infer) continue;
    std::vector<const TypeInfo*> in;
    std::vector<const Tensor*> consts;
    for (Value* v : n.inputs) {
      in.push_back(v ? &v->type : nullptr);
      consts.push_back(v && v->initializer ? &*v->initializer : nullptr);
    }
    InferenceContext ctx(n, in, consts);
    try {
      s->infer(ctx);
    } catch (const Error& e) {
      throw e.at_node(n.name, n.op_type);
    }
    for (size_t i = 0; i < n.outputs.size(); ++i) {
      Value* v = n.outputs[i];
      if (!v) continue;
      const TypeInfo& t = ctx.outputs()[i];
      if (t.kind == TypeInfo::Kind::unknown) continue;
      // Keep a declared shape when inference knows less.
      if (v->type.kind != TypeInfo::Kind::unknown && v->type.has_shape() && !t.has_shape()) {
        if (v->type.elem == DType::undefined) v->type.elem = t.elem;
        continue;
      }
      // ... and per dim where both know the rank (a dim the shape-value propagation of fold_constants found)
      TypeInfo merged = t;
      if (merged.shape && v->type.shape && v->type.shape->size() == merged.shape->size() &&
          merged.elem == v->type.elem)
        for (size_t d = 0; d < merged.shape->size(); ++d) {
          Dim& m = (*merged.shape)[d];
          if (!m.known() && m.symbol.empty()) m = (*v->type.shape)[d];
        }
      v->type = merged;
    }
  }
}

}  // namespace tessera::ir
