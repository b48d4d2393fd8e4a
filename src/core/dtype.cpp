#include "core/dtype.h"

#include "core/error.h"

namespace tessera {

size_t dtype_size(DType t) {
  switch (t) {
#define DTYPE(e, T, bytes, name) \
  case DType::e:                 \
    return bytes;
#include "core/dtype.def"
#undef DTYPE
    default:
      return 0;
  }
}

std::string_view dtype_name(DType t) {
  switch (t) {
#define DTYPE(e, T, bytes, name) \
  case DType::e:                 \
    return name;
#include "core/dtype.def"
#undef DTYPE
    default:
      return "undefined";
  }
}

DType dtype_from_name(std::string_view n) {
#define DTYPE(e, T, bytes, name) \
  if (n == name) return DType::e;
#include "core/dtype.def"
#undef DTYPE
  return DType::undefined;
}

bool is_float(DType t) {
  switch (t) {
    case DType::f32: case DType::f64: case DType::f16: case DType::bf16:
    case DType::f8e4m3fn: case DType::f8e4m3fnuz: case DType::f8e5m2: case DType::f8e5m2fnuz:
    case DType::f8e8m0: case DType::f4e2m1:
      return true;
    default:
      return false;
  }
}

bool is_signed(DType t) {
  switch (t) {
    case DType::i2: case DType::i4: case DType::i8: case DType::i16: case DType::i32: case DType::i64:
      return true;
    default:
      return false;
  }
}

bool is_integer(DType t) {
  switch (t) {
    case DType::u2: case DType::u4: case DType::u8: case DType::u16: case DType::u32: case DType::u64:
      return true;
    default:
      return is_signed(t);
  }
}

bool is_complex(DType t) { return t == DType::c64 || t == DType::c128; }

void throw_bad_dtype(DType t, const char* what) {
  throw Error(ErrorCode::unsupported, cat(what, ": unsupported element type ", dtype_name(t)));
}

}  // namespace tessera
