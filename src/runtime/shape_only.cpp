#include "runtime/shape_only.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <unordered_set>

namespace tessera::runtime {

namespace {

// Output shape is a function of the input shapes and attributes.
const std::set<std::string> kShapeFromShapes = {
    "Identity", "Cast", "CastLike", "Abs", "Neg", "Not", "Sqrt", "Exp", "Log", "Erf", "Tanh", "Sigmoid",
    "Relu", "Floor", "Ceil", "Round", "Sign", "Reciprocal", "Add", "Sub", "Mul", "Div", "Pow", "Mod", "Max",
    "Min", "Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "And", "Or", "Xor", "Where", "MatMul",
    "Gemm", "Transpose", "Softmax", "LogSoftmax", "LayerNormalization", "Gather", "Concat", "Flatten",
    "Shape", "Size", "Clip", "Gelu", "BatchNormalization", "Conv", "MaxPool", "AveragePool",
    "GlobalAveragePool", "Trilu",
    // Tessera's fused ops (domain tessera)
    "FusedGemm", "FusedConv", "FusedElementwise", "FusedAttention"};
// Output shape also follows from the values of these inputs (which must be shape-only or constant).
const std::map<std::string, std::vector<size_t>> kShapeFromValues = {
    {"Reshape", {1}},     {"Expand", {1}},    {"Slice", {1, 2, 3, 4}}, {"Unsqueeze", {1}},
    {"Squeeze", {1}},     {"Tile", {1}},      {"Split", {1}},          {"ConstantOfShape", {0}},
    {"Range", {0, 1, 2}}, {"ReduceSum", {1}}, {"ReduceMean", {1}},     {"ReduceMax", {1}},
    {"ReduceMin", {1}},   {"ReduceProd", {1}}};
// Deterministic ops that may run on shape-only values (small int tensors).
const std::set<std::string> kShapeArithmetic = {"Shape",     "Size",      "Gather",
                                                "Unsqueeze", "Squeeze",   "Concat",
                                                "Cast",      "Add",       "Sub",
                                                "Mul",       "Div",       "Mod",
                                                "Neg",       "Abs",       "Max",
                                                "Min",       "Equal",     "Less",
                                                "Greater",   "Not",       "And",
                                                "Or",        "Where",     "Slice",
                                                "Reshape",   "Identity",  "ConstantOfShape",
                                                "Range",     "Expand",    "ReduceProd",
                                                "ReduceSum", "ReduceMax", "ReduceMin",
                                                "Floor",     "Ceil",      "Sqrt",
                                                "Trilu"};

bool plain(const ir::Node& n) {
  return (n.domain.empty() || n.domain == "ai.onnx" ||
          (n.domain == "tessera" && n.op_type.rfind("Fused", 0) == 0)) &&
         n.subgraphs().empty();
}

}  // namespace

std::vector<bool> shape_only_nodes(const ir::Graph& g) {
  std::unordered_set<const ir::Value*> determined;  // shape is a function of the input shapes
  std::unordered_set<const ir::Value*> shape_only;  // value is a function of the input shapes
  auto is_const = [&](const ir::Value* v) {
    return v->initializer && std::find(g.inputs.begin(), g.inputs.end(), v) == g.inputs.end();
  };
  for (const ir::Value* v : g.inputs)
    if (v) determined.insert(v);
  for (const auto& v : g.values())
    if (is_const(v.get())) determined.insert(v.get()), shape_only.insert(v.get());
  std::unordered_set<const ir::Value*> outputs(g.outputs.begin(), g.outputs.end());

  std::vector<bool> flags;
  for (const auto& np : g.nodes()) {
    const ir::Node& n = *np;
    bool outs_determined = false, outs_shape_only = false;
    if (plain(n)) {
      const bool all_determined = std::all_of(n.inputs.begin(), n.inputs.end(),
                                              [&](const ir::Value* v) { return !v || determined.count(v); });
      if (all_determined && kShapeFromShapes.count(n.op_type)) outs_determined = true;
      if (auto it = kShapeFromValues.find(n.op_type); it != kShapeFromValues.end() && all_determined) {
        outs_determined = true;
        for (size_t i : it->second)
          if (i < n.inputs.size() && n.inputs[i] && !shape_only.count(n.inputs[i])) outs_determined = false;
      }
      if (kShapeArithmetic.count(n.op_type)) {
        if (n.op_type == "Shape" || n.op_type == "Size")
          outs_shape_only = !n.inputs.empty() && n.inputs[0] && determined.count(n.inputs[0]);
        else
          outs_shape_only =
              !n.inputs.empty() && std::all_of(n.inputs.begin(), n.inputs.end(),
                                               [&](const ir::Value* v) { return !v || shape_only.count(v); });
      }
    }
    for (const ir::Value* v : n.outputs) {
      if (!v) continue;
      if (outs_determined || outs_shape_only) determined.insert(v);
      if (outs_shape_only) shape_only.insert(v);
      if (outputs.count(v)) outs_shape_only = false;  // graph outputs are handed to the caller: always run
    }
    flags.push_back(outs_shape_only);
  }
  return flags;
}

}  // namespace tessera::runtime
