#include "kernels/ref/registry.h"

namespace tessera::kernels::ref {

#define OP_FAMILY(name) void register_##name##_kernels(KernelTable&);
#include "ir/ops/families.def"
#undef OP_FAMILY

const KernelTable& KernelTable::instance() {
  static const KernelTable* table = [] {
    auto* t = new KernelTable;
#define OP_FAMILY(name) register_##name##_kernels(*t);
#include "ir/ops/families.def"
#undef OP_FAMILY
    return t;
  }();
  return *table;
}

void KernelTable::add(const std::string& op_type, KernelFn fn, const std::string& domain) {
  kernels_[{domain, op_type}] = fn;
}

KernelFn KernelTable::find(const std::string& domain, const std::string& op_type) const {
  const std::string d = domain == "ai.onnx" ? "" : domain;
  auto it = kernels_.find({d, op_type});
  return it == kernels_.end() ? nullptr : it->second;
}

std::vector<std::pair<std::string, std::string>> KernelTable::ops() const {
  std::vector<std::pair<std::string, std::string>> v;
  for (const auto& [k, f] : kernels_) v.push_back(k);
  return v;
}

}  // namespace tessera::kernels::ref
