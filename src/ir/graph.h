// The graph IR: a Graph owns Nodes and Values. A Value is an edge (one
// producer, many uses) with a static type that may be partly unknown; a Node is
// an operator application with attributes, some of which may be subgraphs
// (If / Loop / Scan bodies), which are Graphs whose parent is the outer graph.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/attribute.h"
#include "core/tensor.h"

namespace tessera::ir {

// One dimension: a known size, or unknown with an optional symbol ("batch").
struct Dim {
  int64_t value = -1;
  std::string symbol;
  Dim() = default;
  Dim(int64_t v) : value(v) {}  // NOLINT: implicit on purpose
  static Dim sym(std::string s) {
    Dim d;
    d.symbol = std::move(s);
    return d;
  }
  bool known() const { return value >= 0; }
  bool operator==(const Dim& o) const { return value == o.value && (known() || symbol == o.symbol); }
  std::string str() const;
};

struct TypeInfo {
  enum class Kind : uint8_t { unknown, tensor, sequence, optional };
  Kind kind = Kind::unknown;
  DType elem = DType::undefined;      // element type (of the tensor, or of the sequence's tensors)
  std::optional<std::vector<Dim>> shape;  // nullopt: rank unknown
  Kind inner = Kind::tensor;          // for optional: what it wraps

  static TypeInfo tensor(DType t, std::optional<std::vector<Dim>> s = std::nullopt) {
    TypeInfo ti;
    ti.kind = Kind::tensor;
    ti.elem = t;
    ti.shape = std::move(s);
    return ti;
  }
  static TypeInfo tensor_of(const Tensor& t);
  bool has_shape() const { return shape.has_value(); }
  bool is_static() const;                  // shape fully known
  std::optional<Shape> static_shape() const;
  std::string str() const;                 // "float32[batch,3,224,224]"
};

class Node;
class Graph;

class Value {
 public:
  std::string name;
  TypeInfo type;
  Node* producer = nullptr;  // nullptr for graph inputs and initializers
  int producer_output = -1;
  std::vector<std::pair<Node*, int>> uses;  // (consumer, input index)
  std::optional<Tensor> initializer;        // constant data, if any
  Graph* owner = nullptr;

  bool is_constant() const { return initializer.has_value(); }
};

class Node {
 public:
  std::string name;
  std::string op_type;
  std::string domain;  // "" is the ONNX default domain
  int opset = 0;       // version of the domain's opset the model imports
  std::vector<Value*> inputs;   // nullptr for an omitted optional input
  std::vector<Value*> outputs;  // nullptr for an omitted optional output
  AttrMap attrs;
  Graph* owner = nullptr;

  const Attribute* attr(std::string_view n) const {
    auto it = attrs.find(n);
    return it == attrs.end() ? nullptr : &it->second;
  }
  std::string label() const;  // "'name' (Op)"
  // The graphs held in attributes.
  std::vector<Graph*> subgraphs() const;
};

class Graph : public Subgraph {
 public:
  std::string name;
  Graph* parent = nullptr;  // enclosing graph of a subgraph
  std::vector<Value*> inputs;
  std::vector<Value*> outputs;

  Graph() = default;
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  // Values are named uniquely within a graph; subgraphs see outer names.
  Value* add_value(const std::string& name);
  Value* find_value(const std::string& name) const;        // this graph, then the parents
  Value* find_local_value(const std::string& name) const;  // this graph only
  Node* add_node(std::string op_type, std::string name = {});
  void connect_input(Node* n, Value* v);    // appends
  void connect_output(Node* n, Value* v);   // appends; sets producer
  void set_input(Node* n, size_t i, Value* v);  // replaces input i, updating uses

  // Removes nodes for which pred is true (their outputs must be unused or rewired).
  template <typename P>
  void remove_nodes_if(P pred);
  void remove_node(Node* n);
  void remove_unused_values();

  const std::vector<std::unique_ptr<Node>>& nodes() const { return nodes_; }
  const std::vector<std::unique_ptr<Value>>& values() const { return values_; }
  // Orders nodes so every producer comes before its consumers (including uses
  // of outer values inside subgraphs). Throws on a cycle.
  void topological_sort();
  std::string unique_name(const std::string& base);

 private:
  std::vector<std::unique_ptr<Node>> nodes_;
  std::vector<std::unique_ptr<Value>> values_;
  std::map<std::string, Value*, std::less<>> by_name_;
  int64_t name_counter_ = 0;
};

template <typename P>
void Graph::remove_nodes_if(P pred) {
  std::vector<Node*> doomed;
  for (auto& n : nodes_)
    if (pred(n.get())) doomed.push_back(n.get());
  for (Node* n : doomed) remove_node(n);
}

// A whole model: the main graph plus what the file said about itself.
struct Model {
  std::shared_ptr<Graph> graph = std::make_shared<Graph>();
  std::map<std::string, int> opsets;  // domain -> version
  int64_t ir_version = 0;
  std::string producer_name, producer_version;
  std::map<std::string, std::string> metadata;
  std::string path;  // where it was loaded from ("" for bytes)
};

// Printing (text form of the IR).
std::string to_string(const Graph& g);
std::string to_string(const Node& n);

}  // namespace tessera::ir
