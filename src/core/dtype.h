// Element types: the DType enum, its traits, and a dispatcher that turns a
// run-time DType into a compile-time C++ type.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/float_types.h"

namespace tessera {

enum class DType : uint8_t {
  undefined = 0,
#define DTYPE(e, T, bytes, name) e,
#include "core/dtype.def"
#undef DTYPE
};

// Bytes one element occupies in memory (sub-byte types occupy a whole byte).
size_t dtype_size(DType t);
std::string_view dtype_name(DType t);
// Parses a name as printed by dtype_name ("float32", "int64", ...); undefined if unknown.
DType dtype_from_name(std::string_view name);

bool is_float(DType t);    // f64 f32 f16 bf16 and the f8/f4 formats
bool is_integer(DType t);  // signed and unsigned, including sub-byte
bool is_signed(DType t);
bool is_complex(DType t);

template <typename T>
struct DTypeOf;
#define DTYPE(e, T, bytes, name)                 \
  template <>                                    \
  struct DTypeOf<T> {                            \
    static constexpr DType value = DType::e;     \
  };
#include "core/dtype.def"
#undef DTYPE
template <typename T>
inline constexpr DType kDTypeOf = DTypeOf<T>::value;

// dispatch_dtype(t, [&]<typename T>() { ... }) calls the lambda with T the C++
// storage type of t. Throws for undefined.
[[noreturn]] void throw_bad_dtype(DType t, const char* what);

template <typename F>
decltype(auto) dispatch_dtype(DType t, F&& f) {
  switch (t) {
#define DTYPE(e, T, bytes, name) \
  case DType::e:                 \
    return f.template operator()<T>();
#include "core/dtype.def"
#undef DTYPE
    default:
      throw_bad_dtype(t, "dispatch");
  }
}

// Numeric conversion between any two element types via the widest sensible
// path (double for reals). Narrow floats round to nearest even; saturate
// follows ONNX Cast for the f8 formats.
template <typename T>
double to_double(const T& v) {
  if constexpr (kIsNarrowFloat<T>) return double(v.to_float());
  else if constexpr (kIsSubByteInt<T>) return double(v.value);
  else if constexpr (std::is_same_v<T, Complex64> || std::is_same_v<T, Complex128>) return double(v.real());
  else if constexpr (std::is_same_v<T, std::string>) return 0.0;
  else return double(v);
}

template <typename T>
T from_double(double v, bool saturate = false) {
  if constexpr (kIsNarrowFloat<T>) return T::from_float(float(v), saturate);
  else if constexpr (kIsSubByteInt<T>) return T(int64_t(v));
  else if constexpr (std::is_same_v<T, std::string>) return std::to_string(v);
  else return T(v);
}

}  // namespace tessera
