// Small helpers shared by the reference kernels of the reduction, shape,
// indexing and sequence families: axis normalization, row-major index walks,
// numpy broadcasting of shapes, and type traits for "compute in a wide type".
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "core/kernel_context.h"
#include "core/strided_copy.h"

namespace tessera::kernels::ref::shape_util {

// Maps axis in [-rank, rank) to [0, rank), failing with a clear message otherwise.
inline int64_t normalize_axis(const KernelContext& ctx, int64_t axis, int64_t rank,
                              const char* what = "axis") {
  ctx.check(axis >= -rank && axis < rank, what, " ", axis, " is out of range for rank ", rank);
  return axis < 0 ? axis + rank : axis;
}

// Advances idx (row-major over shape); false once it wraps past the end.
inline bool next_index(std::vector<int64_t>& idx, const Shape& shape) {
  for (size_t d = idx.size(); d-- > 0;) {
    if (++idx[d] < shape[d]) return true;
    idx[d] = 0;
  }
  return false;
}

// Product of dims [b, e).
inline int64_t dims_product(const Shape& s, int64_t b, int64_t e) {
  int64_t p = 1;
  for (int64_t i = b; i < e; ++i) p *= s[size_t(i)];
  return p;
}

// Numpy broadcasting of two shapes.
inline Shape broadcast_shape(const KernelContext& ctx, const Shape& a, const Shape& b) {
  const size_t r = std::max(a.size(), b.size());
  Shape out(r);
  for (size_t i = 0; i < r; ++i) {
    const int64_t da = i < r - a.size() ? 1 : a[i - (r - a.size())];
    const int64_t db = i < r - b.size() ? 1 : b[i - (r - b.size())];
    ctx.check(da == db || da == 1 || db == 1, "shapes ", shape_text(a), " and ", shape_text(b),
              " cannot be broadcast");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

// Strides (in elements) to read a tensor of shape `in` as if broadcast to `out`
// (0 along broadcast dims). `in` must be broadcastable to `out`.
inline std::vector<int64_t> broadcast_strides(const Shape& in, const Shape& out) {
  std::vector<int64_t> st(out.size(), 0);
  const auto cs = contiguous_strides(in);
  const size_t off = out.size() - in.size();
  for (size_t i = 0; i < in.size(); ++i) st[i + off] = in[i] == 1 ? 0 : cs[i];
  return st;
}

// Is T a numeric type that kernels can do arithmetic on (via double or natively)?
template <typename T>
inline constexpr bool kIsNumeric = std::is_arithmetic_v<T> || kIsNarrowFloat<T> || kIsSubByteInt<T>;

// The type to compute in for T: double for floats, int64/uint64 for integers.
template <typename T>
using WideOf = std::conditional_t<
    std::is_floating_point_v<T> || kIsNarrowFloat<T>, double,
    std::conditional_t<std::is_unsigned_v<T> && !std::is_same_v<T, bool>, uint64_t, int64_t>>;

template <typename T>
auto to_wide(const T& v) {
  using W = WideOf<T>;
  if constexpr (std::is_same_v<W, double>)
    return to_double(v);
  else if constexpr (kIsSubByteInt<T>)
    return W(v.value);
  else
    return W(v);
}

template <typename T, typename W>
T from_wide(W v) {
  if constexpr (kIsNarrowFloat<T>)
    return T(float(v));
  else if constexpr (kIsSubByteInt<T>)
    return T(int64_t(v));
  else
    return T(v);
}

// A key that orders values of T (narrow floats compared as float).
template <typename T>
auto order_key(const T& v) {
  if constexpr (kIsNarrowFloat<T>)
    return v.to_float();
  else if constexpr (kIsSubByteInt<T>)
    return int(v.value);
  else
    return v;
}

template <typename T>
inline constexpr bool kIsOrderable = kIsNumeric<T> || std::is_same_v<T, std::string>;

}  // namespace tessera::kernels::ref::shape_util

namespace tessera::kernels::ref::shape_util {

// dst (contiguous, shape out_shape) [idx] = src[base + sum(idx[d] * strides[d])].
template <typename T>
void strided_gather(const T* src, int64_t base, const std::vector<int64_t>& strides, T* dst,
                    const Shape& out_shape) {
  const int64_t n = shape_numel(out_shape);
  if (n == 0) return;
  const size_t r = out_shape.size();
  std::vector<int64_t> idx(r, 0);
  int64_t off = base;
  for (int64_t i = 0; i < n; ++i) {
    dst[i] = src[off];
    for (size_t d = r; d-- > 0;) {
      off += strides[d];
      if (++idx[d] < out_shape[d]) break;
      off -= strides[d] * out_shape[d];
      idx[d] = 0;
    }
  }
}

// Same, over any element type: in must be contiguous; out is allocated by the caller. Large copies of
// trivially copyable elements are split over `pool` (a kernel's ctx.pool()).
inline void strided_gather_any(const Tensor& in, int64_t base, const std::vector<int64_t>& strides,
                               Tensor& out, ThreadPool* pool = nullptr) {
  dispatch_dtype(in.dtype(), [&]<typename T>() {
    if constexpr (std::is_trivially_copyable_v<T>)
      strided_copy(in.data<T>(), base, strides, out.data<T>(), out.shape(), sizeof(T), pool);
    else
      strided_gather<T>(in.data<T>(), base, strides, out.data<T>(), out.shape());
  });
}

}  // namespace tessera::kernels::ref::shape_util
