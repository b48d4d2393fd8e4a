// Cast between the plain numeric types (bool, 8- to 64-bit integers, f32, f64), tuned: one loop per pair the
// compiler vectorizes, split between the threads. The reference goes through a tagged number per element
// (2-3 ns each): a dynamically quantized transformer casts every int8 GEMM's int32 result to f32, and those
// Casts took as long as its GEMMs. The semantics are the reference's: integers wrap, floats truncate toward
// zero through a 64-bit integer (NaN and out of range: INT64_MIN, then wrapped), nonzero is true, and an
// integer becomes a float in one rounding. Other types (strings, f16, bf16, f8, 4-bit; f64 to f32, whose
// overflow the reference handles) go to the reference.
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "backends/cpu/cpu_backend.h"
#include "core/dtype_attr.h"
#include "core/thread_pool.h"
#include "kernels/ref/registry.h"

namespace tessera::backends::cpu {

namespace {

inline int64_t to_int64(double v) {
  if (!(v >= -9.2233720368547758e18 && v < 9.2233720368547758e18)) return INT64_MIN;  // NaN too
  return int64_t(v);
}

template <class S, class D>
inline D convert(S v) {
  if constexpr (std::is_same_v<D, bool>) {
    return v != S(0);
  } else if constexpr (std::is_floating_point_v<D>) {
    if constexpr (std::is_floating_point_v<S> || std::is_same_v<S, bool>)
      return D(v);
    else if constexpr (std::is_unsigned_v<S>)
      return D(uint64_t(v));
    else
      return D(int64_t(v));
  } else if constexpr (std::is_floating_point_v<S>) {
    if constexpr (std::is_same_v<D, uint64_t>)
      if (double(v) >= 9.2233720368547758e18 && double(v) < 1.8446744073709552e19) return D(uint64_t(v));
    return D(to_int64(double(v)));
  } else {
    return D(v);  // wraps
  }
}

template <class S, class D>
void cast_loop(const Tensor& x, Tensor& y, ThreadPool* pool) {
  const S* s = x.data<S>();
  D* d = y.data<D>();
  parallel_for(pool, x.numel(), 1 << 15, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) d[i] = convert<S, D>(s[i]);
  });
}

// Calls f with a value of the C++ type for t; false for types not covered.
template <class F>
bool with_type(DType t, F&& f) {
  switch (t) {
    case DType::boolean:
      f(bool{});
      return true;
    case DType::i8:
      f(int8_t{});
      return true;
    case DType::u8:
      f(uint8_t{});
      return true;
    case DType::i16:
      f(int16_t{});
      return true;
    case DType::u16:
      f(uint16_t{});
      return true;
    case DType::i32:
      f(int32_t{});
      return true;
    case DType::u32:
      f(uint32_t{});
      return true;
    case DType::i64:
      f(int64_t{});
      return true;
    case DType::u64:
      f(uint64_t{});
      return true;
    case DType::f32:
      f(float{});
      return true;
    case DType::f64:
      f(double{});
      return true;
    default:
      return false;
  }
}

void cast_x86(KernelContext& ctx) {
  const Tensor* x0 = ctx.input(0);
  const DType to = dtype_from_type_code(ctx.attr_int("to", 0));
  if (!x0 || (x0->dtype() == DType::f64 && to == DType::f32)) return run_reference(ctx, "");
  const Tensor x = x0->contiguous();
  Tensor* y = nullptr;
  bool done = false;
  with_type(x.dtype(), [&](auto s) {
    with_type(to, [&](auto d) {
      using S = decltype(s);
      using D = decltype(d);
      y = &ctx.output_for_overwrite(0, to, x.shape());
      cast_loop<S, D>(x, *y, ctx.pool());
      done = true;
    });
  });
  if (!done) run_reference(ctx, "");
}

}  // namespace

void register_x86_cast_bindings() {
  add_tuned_kernel("", "Cast", {}, cast_x86);
}

}  // namespace tessera::backends::cpu
