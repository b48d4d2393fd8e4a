#include "core/kernel_context.h"

namespace tessera {

const char* Attribute::kind_name(Kind k) {
  switch (k) {
    case Kind::undefined:
      return "undefined";
    case Kind::f:
      return "FLOAT";
    case Kind::i:
      return "INT";
    case Kind::s:
      return "STRING";
    case Kind::t:
      return "TENSOR";
    case Kind::g:
      return "GRAPH";
    case Kind::floats:
      return "FLOATS";
    case Kind::ints:
      return "INTS";
    case Kind::strings:
      return "STRINGS";
    case Kind::tensors:
      return "TENSORS";
    case Kind::graphs:
      return "GRAPHS";
    case Kind::type_proto:
      return "TYPE_PROTO";
  }
  return "?";
}

const Tensor& KernelContext::required_input(size_t i) const {
  const Tensor* t = i < num_inputs() ? input(i) : nullptr;
  if (!t) fail(ErrorCode::invalid_model, "required input ", i, " is missing");
  return *t;
}

namespace {
template <typename C>
const Attribute* typed(const C& ctx, std::string_view n, Attribute::Kind k) {
  const Attribute* a = ctx.attr(n);
  if (a && a->kind != k)
    ctx.fail(ErrorCode::invalid_model, "attribute '", n, "' has type ", Attribute::kind_name(a->kind),
             ", expected ", Attribute::kind_name(k));
  return a;
}
}  // namespace

int64_t KernelContext::attr_int(std::string_view n, int64_t def) const {
  const Attribute* a = typed(*this, n, Attribute::Kind::i);
  return a ? a->i : def;
}
float KernelContext::attr_float(std::string_view n, float def) const {
  const Attribute* a = attr(n);
  if (a && a->kind == Attribute::Kind::i) return float(a->i);  // tolerate ints for floats
  a = typed(*this, n, Attribute::Kind::f);
  return a ? a->f : def;
}
std::string KernelContext::attr_string(std::string_view n, std::string def) const {
  const Attribute* a = typed(*this, n, Attribute::Kind::s);
  return a ? a->s : def;
}
std::vector<int64_t> KernelContext::attr_ints(std::string_view n, std::vector<int64_t> def) const {
  const Attribute* a = typed(*this, n, Attribute::Kind::ints);
  return a ? a->ints : def;
}
std::span<const int64_t> KernelContext::attr_ints_view(std::string_view n,
                                                       std::span<const int64_t> def) const {
  const Attribute* a = typed(*this, n, Attribute::Kind::ints);
  return a ? std::span<const int64_t>(a->ints) : def;
}
std::vector<float> KernelContext::attr_floats(std::string_view n, std::vector<float> def) const {
  const Attribute* a = typed(*this, n, Attribute::Kind::floats);
  return a ? a->floats : def;
}
std::vector<std::string> KernelContext::attr_strings(std::string_view n) const {
  const Attribute* a = typed(*this, n, Attribute::Kind::strings);
  return a ? a->strings : std::vector<std::string>{};
}
int64_t KernelContext::required_attr_int(std::string_view n) const {
  const Attribute* a = typed(*this, n, Attribute::Kind::i);
  if (!a) fail(ErrorCode::invalid_model, "required attribute '", n, "' is missing");
  return a->i;
}
const Tensor* KernelContext::attr_tensor(std::string_view n) const {
  const Attribute* a = typed(*this, n, Attribute::Kind::t);
  return a ? &a->t : nullptr;
}

}  // namespace tessera
