#include "core/error.h"

namespace tessera {

const char* error_code_name(ErrorCode c) {
  switch (c) {
    case ErrorCode::invalid_model: return "invalid model";
    case ErrorCode::invalid_argument: return "invalid argument";
    case ErrorCode::unsupported: return "unsupported";
    case ErrorCode::runtime: return "runtime error";
    case ErrorCode::io: return "I/O error";
    case ErrorCode::internal: return "internal error";
  }
  return "error";
}

}  // namespace tessera
