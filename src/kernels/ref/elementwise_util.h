// Helpers shared by the elementwise-style reference kernels: dtype sets and a
// dispatcher restricted to them, and the "compute type" of a storage type
// (f16 / bf16 compute in f32, everything else in itself).
#pragma once

#include <cmath>
#include <limits>
#include <type_traits>

#include "core/dtype.h"
#include "core/kernel_context.h"

namespace tessera::kernels::ref {

// Sets of element types a kernel accepts.
inline constexpr unsigned kFloatTypes = 1u;     // f16 bf16 f32 f64
inline constexpr unsigned kSignedTypes = 2u;    // i8 i16 i32 i64
inline constexpr unsigned kUnsignedTypes = 4u;  // u8 u16 u32 u64
inline constexpr unsigned kBoolType = 8u;
inline constexpr unsigned kStringType = 16u;
inline constexpr unsigned kIntTypes = kSignedTypes | kUnsignedTypes;
inline constexpr unsigned kNumericTypes = kFloatTypes | kIntTypes;
inline constexpr unsigned kAllTypes = kNumericTypes | kBoolType | kStringType;

// Calls f.template operator()<T>() with T the storage type of `t` when t is in
// Set; otherwise fails (unsupported) naming the type.
template <unsigned Set, typename F>
void dispatch_set(const KernelContext& ctx, DType t, F&& f) {
#define TESSERA_CASE(E, T, BIT)               \
  case DType::E:                              \
    if constexpr ((Set & (BIT)) != 0) {       \
      f.template operator()<T>();             \
      return;                                 \
    }                                         \
    break;
  switch (t) {
    TESSERA_CASE(f32, float, kFloatTypes)
    TESSERA_CASE(f64, double, kFloatTypes)
    TESSERA_CASE(f16, Float16, kFloatTypes)
    TESSERA_CASE(bf16, BFloat16, kFloatTypes)
    TESSERA_CASE(i8, int8_t, kSignedTypes)
    TESSERA_CASE(i16, int16_t, kSignedTypes)
    TESSERA_CASE(i32, int32_t, kSignedTypes)
    TESSERA_CASE(i64, int64_t, kSignedTypes)
    TESSERA_CASE(u8, uint8_t, kUnsignedTypes)
    TESSERA_CASE(u16, uint16_t, kUnsignedTypes)
    TESSERA_CASE(u32, uint32_t, kUnsignedTypes)
    TESSERA_CASE(u64, uint64_t, kUnsignedTypes)
    TESSERA_CASE(boolean, bool, kBoolType)
    TESSERA_CASE(string, std::string, kStringType)
    default:
      break;
  }
#undef TESSERA_CASE
  ctx.fail(ErrorCode::unsupported, "element type ", dtype_name(t), " is not supported by ", ctx.op_type());
}

// double -> float rounding to nearest even, overflowing to +-inf explicitly
// (a plain conversion of an out-of-range double is undefined behaviour).
inline float double_to_float(double v) {
  if (std::fabs(v) > double(std::numeric_limits<float>::max())) {
    const float big = std::fabs(v) >= 0x1.ffffffp+127 ? std::numeric_limits<float>::infinity()
                                                       : std::numeric_limits<float>::max();
    return v < 0 ? -big : big;
  }
  return float(v);
}

template <typename T>
struct ComputeType {
  using type = T;
};
template <>
struct ComputeType<Float16> {
  using type = float;
};
template <>
struct ComputeType<BFloat16> {
  using type = float;
};
template <typename T>
using compute_t = typename ComputeType<T>::type;

template <typename T>
compute_t<T> load(const T& v) {
  if constexpr (kIsNarrowFloat<T>) return v.to_float();
  else return v;
}
template <typename T>
T store(compute_t<T> v) {
  if constexpr (kIsNarrowFloat<T>) return T(v);
  else return v;
}

}  // namespace tessera::kernels::ref
