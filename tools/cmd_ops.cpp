// `tessera ops [--markdown]`: the ops Tessera knows (schemas from the op
// registry) and which have a reference kernel.
#include <CLI/CLI.hpp>
#include <iostream>
#include <map>
#include <memory>
#include <set>

#include "ir/op_registry.h"
#include "kernels/ref/registry.h"
#include "tools/commands.h"

namespace tessera::tools {

namespace {

struct OpsOptions {
  bool markdown = false;
};

struct OpRow {
  std::string family;
  bool schema = false;
  bool kernel = false;
};

void print_ops(const OpsOptions& o) {
  std::map<std::pair<std::string, std::string>, OpRow> rows;  // (domain, op) -> row
  for (const ir::OpSchema* s : ir::OpRegistry::instance().all()) {
    auto& r = rows[{s->domain, s->op_type}];
    r.schema = true;
    r.family = s->family;
  }
  for (const auto& [domain, op] : kernels::ref::KernelTable::instance().ops())
    rows[{domain, op}].kernel = true;

  size_t with_kernel = 0;
  for (const auto& [k, r] : rows) with_kernel += r.kernel;
  if (o.markdown) {
    std::cout << "| op | domain | family | reference kernel |\n|---|---|---|---|\n";
    for (const auto& [k, r] : rows)
      std::cout << "| " << k.second << " | " << (k.first.empty() ? "ai.onnx" : k.first) << " | " << r.family
                << " | " << (r.kernel ? "yes" : "no") << " |\n";
    std::cout << "\n" << rows.size() << " ops, " << with_kernel << " with a reference kernel.\n";
    return;
  }
  size_t width = 4;
  for (const auto& [k, r] : rows)
    width = std::max(width, k.second.size() + (k.first.empty() ? 0 : k.first.size() + 1));
  std::cout << "op" << std::string(width - 2 + 2, ' ') << "family          kernel\n";
  for (const auto& [k, r] : rows) {
    std::string name = k.first.empty() ? k.second : k.first + ":" + k.second;
    std::string fam = r.family.empty() ? "-" : r.family;
    std::cout << name << std::string(width - name.size() + 2, ' ') << fam
              << std::string(fam.size() < 16 ? 16 - fam.size() : 1, ' ') << (r.kernel ? "ref" : "-") << "\n";
  }
  std::cout << rows.size() << " ops, " << with_kernel << " with a reference kernel\n";
}

}  // namespace

void add_ops_command(CLI::App& app) {
  auto opts = std::make_shared<OpsOptions>();
  auto* cmd = app.add_subcommand("ops", "List the supported operators");
  cmd->add_flag("--markdown", opts->markdown, "print a Markdown table (for the README)");
  cmd->callback([opts] { print_ops(*opts); });
}

}  // namespace tessera::tools
