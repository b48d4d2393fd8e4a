// The table of reference kernels: (domain, op_type) -> KernelFn. Each op
// family (ir/ops/families.def) registers its kernels from
// src/kernels/ref/<family>.cpp.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/kernel_context.h"

namespace tessera::kernels::ref {

class KernelTable {
 public:
  static const KernelTable& instance();  // every family registered on first use
  void add(const std::string& op_type, KernelFn fn, const std::string& domain = "");
  KernelFn find(const std::string& domain, const std::string& op_type) const;
  std::vector<std::pair<std::string, std::string>> ops() const;  // (domain, op_type)

 private:
  std::map<std::pair<std::string, std::string>, KernelFn> kernels_;
};

}  // namespace tessera::kernels::ref
