// A node attribute's value. Lives in core so that kernels (layer 1) can read
// attributes without knowing the IR; a subgraph is held opaquely (the IR's
// Graph derives from Subgraph).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace tessera {

struct Subgraph {
  virtual ~Subgraph() = default;
};

struct Attribute {
  enum class Kind : uint8_t { undefined, f, i, s, t, g, floats, ints, strings, tensors, graphs, type_proto };
  Kind kind = Kind::undefined;
  float f = 0;
  int64_t i = 0;
  std::string s;
  Tensor t;
  std::shared_ptr<Subgraph> g;
  std::vector<float> floats;
  std::vector<int64_t> ints;
  std::vector<std::string> strings;
  std::vector<Tensor> tensors;
  std::vector<std::shared_ptr<Subgraph>> graphs;
  DType type_elem = DType::undefined;  // for TypeProto attributes: the tensor element type

  static const char* kind_name(Kind k);

  // Attributes made in code (passes, composite reference kernels).
  static Attribute of_int(int64_t v) {
    Attribute a;
    a.kind = Kind::i;
    a.i = v;
    return a;
  }
  static Attribute of_float(float v) {
    Attribute a;
    a.kind = Kind::f;
    a.f = v;
    return a;
  }
  static Attribute of_string(std::string v) {
    Attribute a;
    a.kind = Kind::s;
    a.s = std::move(v);
    return a;
  }
  static Attribute of_ints(std::vector<int64_t> v) {
    Attribute a;
    a.kind = Kind::ints;
    a.ints = std::move(v);
    return a;
  }
};

// A node's attributes by name; std::less<> lets kernels look them up by string_view on every run
// without building a string.
using AttrMap = std::map<std::string, Attribute, std::less<>>;

}  // namespace tessera
