// Loads every model and every input/output .pb of ONNX's own node tests
// (onnx/backend/test/data/node) when TESSERA_ONNX_NODE_TEST_DIR names that
// folder, e.g.
//   TESSERA_ONNX_NODE_TEST_DIR=$(python3 -c "import onnx,os;print(os.path.dirname(onnx.__file__))")/backend/test/data/node
// Every model must load (or be refused as unsupported, never invalid); every
// value file must decode.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "frontend/onnx/onnx_loader.h"

namespace tessera::frontend::onnx {
namespace {
namespace fs = std::filesystem;

std::vector<uint8_t> read_all(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

ValueKind kind_of(const ir::TypeInfo& t) {
  switch (t.kind) {
    case ir::TypeInfo::Kind::sequence: return ValueKind::sequence;
    case ir::TypeInfo::Kind::optional: return ValueKind::optional;
    default: return ValueKind::tensor;
  }
}

TEST(OnnxNodeTests, AllLoad) {
  const char* env = std::getenv("TESSERA_ONNX_NODE_TEST_DIR");
  if (!env || !fs::is_directory(env)) GTEST_SKIP() << "set TESSERA_ONNX_NODE_TEST_DIR to onnx's backend/test/data/node";
  int models = 0, values = 0, unsupported = 0;
  std::vector<std::string> failures;
  for (const auto& dir : fs::directory_iterator(env)) {
    const fs::path model = dir.path() / "model.onnx";
    if (!fs::exists(model)) continue;
    ++models;
    ir::Model m;
    try {
      m = load_file(model.string());
    } catch (const Error& e) {
      if (e.code() == ErrorCode::unsupported) {
        ++unsupported;
        std::cout << "unsupported: " << dir.path().filename().string() << ": " << e.what() << "\n";
      } else {
        failures.push_back(dir.path().filename().string() + ": " + e.what());
      }
      continue;
    }
    for (const auto& ds : fs::directory_iterator(dir.path())) {
      if (!ds.is_directory()) continue;
      for (const auto& f : fs::directory_iterator(ds.path())) {
        const std::string name = f.path().filename().string();
        const bool is_in = name.rfind("input_", 0) == 0, is_out = name.rfind("output_", 0) == 0;
        if (!is_in && !is_out) continue;
        const size_t idx = std::stoul(name.substr(is_in ? 6 : 7));
        const auto& list = is_in ? m.graph->inputs : m.graph->outputs;
        // inputs with initializers are not fed; count only the real ones
        std::vector<ir::Value*> real;
        for (ir::Value* v : list)
          if (!is_in || !v->initializer) real.push_back(v);
        if (idx >= real.size()) {
          failures.push_back(f.path().string() + ": no graph " + (is_in ? "input" : "output") + " for it");
          continue;
        }
        try {
          auto bytes = read_all(f.path());
          (void)load_value(bytes, kind_of(real[idx]->type));
          ++values;
        } catch (const Error& e) {
          if (e.code() == ErrorCode::unsupported) ++unsupported;
          else failures.push_back(f.path().string() + ": " + e.what());
        }
      }
    }
  }
  std::cout << models << " models, " << values << " value files, " << unsupported << " unsupported\n";
  for (const auto& s : failures) ADD_FAILURE() << s;
  EXPECT_GT(models, 1000);
}

}  // namespace
}  // namespace tessera::frontend::onnx
