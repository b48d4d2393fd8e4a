#include "ir/graph.h"

#include <algorithm>
#include <functional>
#include <set>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "core/error.h"

namespace tessera::ir {

std::string Dim::str() const {
  if (known()) return std::to_string(value);
  return symbol.empty() ? "?" : symbol;
}

TypeInfo TypeInfo::tensor_of(const Tensor& t) {
  std::vector<Dim> dims(t.shape().begin(), t.shape().end());
  return tensor(t.dtype(), std::move(dims));
}

bool TypeInfo::is_static() const {
  if (!shape) return false;
  for (const Dim& d : *shape)
    if (!d.known()) return false;
  return true;
}

std::optional<Shape> TypeInfo::static_shape() const {
  if (!is_static()) return std::nullopt;
  Shape s;
  for (const Dim& d : *shape) s.push_back(d.value);
  return s;
}

std::string TypeInfo::str() const {
  std::string e = elem == DType::undefined ? "?" : std::string(dtype_name(elem));
  std::string sh;
  if (shape) {
    sh = "[";
    for (size_t i = 0; i < shape->size(); ++i) sh += (i ? "," : "") + (*shape)[i].str();
    sh += "]";
  } else {
    sh = "[*]";
  }
  switch (kind) {
    case Kind::unknown: return "?";
    case Kind::tensor: return e + sh;
    case Kind::sequence: return "seq(" + e + sh + ")";
    case Kind::optional: return "optional(" + e + sh + ")";
  }
  return "?";
}

std::string Node::label() const { return cat("'", name, "' (", op_type, ")"); }

std::vector<Graph*> Node::subgraphs() const {
  std::vector<Graph*> gs;
  for (const auto& [k, a] : attrs) {
    if (a.kind == Attribute::Kind::g && a.g) gs.push_back(static_cast<Graph*>(a.g.get()));
    if (a.kind == Attribute::Kind::graphs)
      for (const auto& g : a.graphs) gs.push_back(static_cast<Graph*>(g.get()));
  }
  return gs;
}

Value* Graph::add_value(const std::string& name) {
  check_model(name.empty() || !by_name_.count(name), "value '", name, "' is defined twice in graph '",
              this->name, "'");
  auto v = std::make_unique<Value>();
  v->name = name;
  v->owner = this;
  Value* p = v.get();
  values_.push_back(std::move(v));
  if (!name.empty()) by_name_[name] = p;
  return p;
}

Value* Graph::find_local_value(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : it->second;
}

Value* Graph::find_value(const std::string& name) const {
  for (const Graph* g = this; g; g = g->parent)
    if (Value* v = g->find_local_value(name)) return v;
  return nullptr;
}

Node* Graph::add_node(std::string op_type, std::string name) {
  auto n = std::make_unique<Node>();
  n->op_type = std::move(op_type);
  n->name = std::move(name);
  n->owner = this;
  nodes_.push_back(std::move(n));
  return nodes_.back().get();
}

void Graph::connect_input(Node* n, Value* v) {
  n->inputs.push_back(v);
  if (v) v->uses.emplace_back(n, int(n->inputs.size() - 1));
}

void Graph::connect_output(Node* n, Value* v) {
  n->outputs.push_back(v);
  if (v) {
    check_model(v->producer == nullptr, "value '", v->name, "' is produced by two nodes");
    v->producer = n;
    v->producer_output = int(n->outputs.size() - 1);
  }
}

void Graph::set_input(Node* n, size_t i, Value* v) {
  Value* old = n->inputs[i];
  if (old) std::erase(old->uses, std::pair<Node*, int>(n, int(i)));
  n->inputs[i] = v;
  if (v) v->uses.emplace_back(n, int(i));
}

void Graph::remove_node(Node* n) {
  for (size_t i = 0; i < n->inputs.size(); ++i)
    if (Value* v = n->inputs[i]) std::erase(v->uses, std::pair<Node*, int>(n, int(i)));
  for (Value* v : n->outputs)
    if (v && v->producer == n) v->producer = nullptr;
  std::erase_if(nodes_, [&](const std::unique_ptr<Node>& p) { return p.get() == n; });
}

void Graph::remove_unused_values() {
  std::unordered_set<const Value*> keep(inputs.begin(), inputs.end());
  keep.insert(outputs.begin(), outputs.end());
  std::erase_if(values_, [&](const std::unique_ptr<Value>& v) {
    if (keep.count(v.get()) || !v->uses.empty() || v->producer) return false;
    if (!v->name.empty()) by_name_.erase(v->name);
    return true;
  });
}

std::string Graph::unique_name(const std::string& base) {
  for (;;) {
    std::string n = cat(base, "__", name_counter_++);
    if (!find_value(n)) return n;
  }
}

namespace {
// Values owned outside `root` that nodes in g (a subgraph at or below root) read,
// transitively: the outer-scope dependencies of the node that owns root.
void collect_outer_uses(const Graph& g, const Graph& root, std::vector<Value*>& out) {
  for (const auto& n : g.nodes()) {
    for (Value* v : n->inputs)
      if (v && v->owner != &g) {
        bool inside = false;  // owned by root or a graph nested in it
        for (const Graph* p = v->owner; p && !inside; p = p->parent) inside = p == &root;
        if (!inside) out.push_back(v);
      }
    for (Graph* sg : n->subgraphs()) collect_outer_uses(*sg, root, out);
  }
}
}  // namespace

void Graph::topological_sort() {
  // Kahn's algorithm, stable with respect to the current order.
  std::unordered_map<const Node*, size_t> index;
  for (size_t i = 0; i < nodes_.size(); ++i) index[nodes_[i].get()] = i;
  std::vector<std::vector<size_t>> consumers(nodes_.size());
  std::vector<size_t> pending(nodes_.size(), 0);
  for (size_t i = 0; i < nodes_.size(); ++i) {
    Node* n = nodes_[i].get();
    std::vector<Value*> deps(n->inputs.begin(), n->inputs.end());
    for (Graph* sg : n->subgraphs()) collect_outer_uses(*sg, *sg, deps);
    std::set<size_t> producers;
    for (Value* v : deps) {
      if (!v || !v->producer) continue;
      auto it = index.find(v->producer);
      if (it != index.end() && it->second != i) producers.insert(it->second);
      else if (it != index.end() && it->second == i)
        throw Error(ErrorCode::invalid_model, cat("node ", n->label(), " consumes its own output (cycle)"));
    }
    for (size_t p : producers) consumers[p].push_back(i);
    pending[i] = producers.size();
  }
  std::vector<size_t> ready, order;
  for (size_t i = nodes_.size(); i-- > 0;)
    if (pending[i] == 0) ready.push_back(i);
  while (!ready.empty()) {
    size_t i = ready.back();
    ready.pop_back();
    order.push_back(i);
    std::vector<size_t> newly;
    for (size_t c : consumers[i])
      if (--pending[c] == 0) newly.push_back(c);
    std::sort(newly.rbegin(), newly.rend());
    ready.insert(ready.end(), newly.begin(), newly.end());
    std::sort(ready.rbegin(), ready.rend());  // smallest original index next
  }
  if (order.size() != nodes_.size()) {
    for (size_t i = 0; i < nodes_.size(); ++i)
      if (pending[i] != 0)
        throw Error(ErrorCode::invalid_model,
                    cat("graph '", name, "' has a cycle (or an input that is never produced) through node ",
                        nodes_[i]->label()));
  }
  std::vector<std::unique_ptr<Node>> sorted;
  sorted.reserve(nodes_.size());
  for (size_t i : order) sorted.push_back(std::move(nodes_[i]));
  nodes_ = std::move(sorted);
}

std::string to_string(const Node& n) {
  std::ostringstream os;
  for (size_t i = 0; i < n.outputs.size(); ++i)
    os << (i ? ", " : "") << "%" << (n.outputs[i] ? n.outputs[i]->name : "") << ": "
       << (n.outputs[i] ? n.outputs[i]->type.str() : "");
  os << " = " << (n.domain.empty() ? "" : n.domain + ".") << n.op_type << "(";
  for (size_t i = 0; i < n.inputs.size(); ++i) os << (i ? ", " : "") << (n.inputs[i] ? "%" + n.inputs[i]->name : "_");
  os << ")";
  if (!n.attrs.empty()) {
    os << " {";
    bool first = true;
    for (const auto& [k, a] : n.attrs) {
      os << (first ? "" : ", ") << k << "=";
      first = false;
      switch (a.kind) {
        case Attribute::Kind::f: os << a.f; break;
        case Attribute::Kind::i: os << a.i; break;
        case Attribute::Kind::s: os << '"' << a.s << '"'; break;
        case Attribute::Kind::ints: {
          os << "[";
          for (size_t i = 0; i < a.ints.size(); ++i) os << (i ? "," : "") << a.ints[i];
          os << "]";
          break;
        }
        case Attribute::Kind::floats: {
          os << "[";
          for (size_t i = 0; i < a.floats.size(); ++i) os << (i ? "," : "") << a.floats[i];
          os << "]";
          break;
        }
        case Attribute::Kind::t: os << "tensor " << a.t.describe(); break;
        case Attribute::Kind::g: os << "graph"; break;
        default: os << Attribute::kind_name(a.kind); break;
      }
    }
    os << "}";
  }
  if (!n.name.empty()) os << "  # " << n.name;
  return os.str();
}

std::string to_string(const Graph& g) {
  std::ostringstream os;
  os << "graph " << g.name << " (";
  for (size_t i = 0; i < g.inputs.size(); ++i)
    os << (i ? ", " : "") << "%" << g.inputs[i]->name << ": " << g.inputs[i]->type.str();
  os << ") {\n";
  for (const auto& v : g.values())
    if (v->initializer) os << "  %" << v->name << ": " << v->initializer->describe() << " = <initializer>\n";
  for (const auto& n : g.nodes()) {
    os << "  " << to_string(*n) << "\n";
    for (Graph* sg : n->subgraphs()) {
      std::string sub = to_string(*sg);
      std::istringstream is(sub);
      for (std::string line; std::getline(is, line);) os << "    " << line << "\n";
    }
  }
  os << "  return ";
  for (size_t i = 0; i < g.outputs.size(); ++i) os << (i ? ", " : "") << "%" << g.outputs[i]->name;
  os << "\n}\n";
  return os.str();
}

}  // namespace tessera::ir
