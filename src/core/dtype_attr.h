// Element-type attributes (Cast's `to`, EyeLike's / RandomNormal's `dtype`).
// The model carries them as TensorProto.DataType codes; a frontend may instead
// hand over a TYPE_PROTO attribute whose element type is already a DType. Both
// are accepted here. Shared by the IR's type inference and the kernels, which
// may not include each other.
#pragma once

#include <cstdint>

#include "core/attribute.h"
#include "core/dtype.h"

namespace tessera {

inline DType dtype_from_type_code(int64_t code) {
  switch (code) {
    case 1: return DType::f32;
    case 2: return DType::u8;
    case 3: return DType::i8;
    case 4: return DType::u16;
    case 5: return DType::i16;
    case 6: return DType::i32;
    case 7: return DType::i64;
    case 8: return DType::string;
    case 9: return DType::boolean;
    case 10: return DType::f16;
    case 11: return DType::f64;
    case 12: return DType::u32;
    case 13: return DType::u64;
    case 14: return DType::c64;
    case 15: return DType::c128;
    case 16: return DType::bf16;
    case 17: return DType::f8e4m3fn;
    case 18: return DType::f8e4m3fnuz;
    case 19: return DType::f8e5m2;
    case 20: return DType::f8e5m2fnuz;
    case 21: return DType::u4;
    case 22: return DType::i4;
    case 23: return DType::f4e2m1;
    case 24: return DType::f8e8m0;
    case 25: return DType::u2;
    case 26: return DType::i2;
    default: return DType::undefined;
  }
}

// The DType an attribute names (undefined when absent or unknown).
inline DType dtype_from_attr(const Attribute* a) {
  if (!a) return DType::undefined;
  if (a->kind == Attribute::Kind::i) return dtype_from_type_code(a->i);
  if (a->kind == Attribute::Kind::type_proto) return a->type_elem;
  return DType::undefined;
}

}  // namespace tessera
