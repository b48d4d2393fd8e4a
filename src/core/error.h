// Tessera's one error type. It carries the node (name and op) where the failure
// happened, so a user reads "node 'conv1' (Conv): ..." rather than a bare message.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace tessera {

enum class ErrorCode {
  invalid_model,     // the model file or graph is malformed
  invalid_argument,  // the caller passed wrong inputs (names, shapes, dtypes)
  unsupported,       // a valid construct Tessera does not implement
  runtime,           // failure while executing (e.g. a data-dependent index out of range)
  io,                // file system
  internal,          // a bug in Tessera
};

const char* error_code_name(ErrorCode c);

template <typename... Args>
std::string cat(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}

class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message, std::string node_name = {}, std::string op_type = {})
      : std::runtime_error(format(message, node_name, op_type)),
        code_(code),
        message_(message),
        node_name_(std::move(node_name)),
        op_type_(std::move(op_type)) {}

  ErrorCode code() const { return code_; }
  const std::string& message() const { return message_; }
  const std::string& node_name() const { return node_name_; }
  const std::string& op_type() const { return op_type_; }

  // The same error attributed to a node (keeps the original message).
  Error at_node(const std::string& node_name, const std::string& op_type) const {
    if (!node_name_.empty() || !op_type_.empty()) return *this;
    return Error(code_, message_, node_name, op_type);
  }

 private:
  static std::string format(const std::string& m, const std::string& node, const std::string& op) {
    if (node.empty() && op.empty()) return m;
    return cat("node '", node, "' (", op, "): ", m);
  }
  ErrorCode code_;
  std::string message_, node_name_, op_type_;
};

// check(cond, code, parts...) throws Error(code, cat(parts...)) when cond is false.
template <typename... Args>
inline void check(bool cond, ErrorCode code, const Args&... parts) {
  if (!cond) [[unlikely]]
    throw Error(code, cat(parts...));
}

// The common cases, spelled out.
template <typename... Args>
inline void check_model(bool cond, const Args&... parts) {
  check(cond, ErrorCode::invalid_model, parts...);
}
template <typename... Args>
inline void check_arg(bool cond, const Args&... parts) {
  check(cond, ErrorCode::invalid_argument, parts...);
}

}  // namespace tessera
