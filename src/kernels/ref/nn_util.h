// Small helpers shared by the reference kernels of the nn families (linalg,
// conv, pool, normalization, softmax, attention). These kernels are the oracle:
// they read every element as double, compute in double and round once when
// storing into the output's type.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/kernel_context.h"
#include "core/tensor.h"

namespace tessera::kernels::ref {

// All elements (row-major) as double.
inline std::vector<double> nn_load(const Tensor& t) { return t.to_double_vector(); }

// Writes v (row-major) into the contiguous tensor out, rounding once per element.
inline void nn_store(Tensor& out, const std::vector<double>& v) {
  dispatch_dtype(out.dtype(), [&]<typename T>() {
    T* p = out.data<T>();
    const int64_t n = out.numel();
    for (int64_t i = 0; i < n; ++i) {
      if constexpr (std::is_same_v<T, bool>) p[i] = v[size_t(i)] != 0.0;
      else if constexpr (std::is_integral_v<T>) p[i] = T(std::llround(v[size_t(i)]));
      else if constexpr (std::is_same_v<T, std::string> || std::is_same_v<T, Complex64> ||
                         std::is_same_v<T, Complex128>)
        throw Error(ErrorCode::unsupported, cat("cannot store numbers as ", dtype_name(out.dtype())));
      else p[i] = from_double<T>(v[size_t(i)]);
    }
  });
}

// Allocates output i with dtype/shape and fills it from v.
inline void nn_emit(KernelContext& ctx, size_t i, DType dt, const Shape& shape, const std::vector<double>& v) {
  Tensor& out = ctx.output(i, dt, shape);
  nn_store(out, v);
}

inline bool nn_is_real_float(DType t) {
  return t == DType::f32 || t == DType::f64 || t == DType::f16 || t == DType::bf16;
}

inline void nn_require_float(const KernelContext& ctx, const Tensor& t, const char* what) {
  ctx.check(nn_is_real_float(t.dtype()), what, " must be float32/float64/float16/bfloat16, got ",
            dtype_name(t.dtype()));
}

// Normalizes a possibly negative axis against rank, failing on out of range.
inline int64_t nn_axis(const KernelContext& ctx, int64_t axis, int64_t rank, const char* what = "axis") {
  ctx.check(axis >= -rank && axis < std::max<int64_t>(rank, 1), what, " ", axis, " is out of range for rank ", rank);
  return axis < 0 ? axis + rank : axis;
}

inline int64_t nn_prod(const Shape& s, size_t from = 0, size_t to = size_t(-1)) {
  int64_t p = 1;
  for (size_t i = from; i < s.size() && i < to; ++i) p *= s[i];
  return p;
}

// Numpy broadcasting of two shapes; fails through ctx on a mismatch.
inline Shape nn_broadcast(const KernelContext& ctx, const Shape& a, const Shape& b) {
  const size_t r = std::max(a.size(), b.size());
  Shape out(r);
  for (size_t i = 0; i < r; ++i) {
    const int64_t da = i < r - a.size() ? 1 : a[i - (r - a.size())];
    const int64_t db = i < r - b.size() ? 1 : b[i - (r - b.size())];
    ctx.check(da == db || da == 1 || db == 1, "shapes ", shape_str(a), " and ", shape_str(b),
              " cannot broadcast");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

// For each flat index of `out` (row-major), the flat index into a tensor of
// shape `in` broadcast to `out` (in's rank <= out's rank, dims 1 or equal).
inline std::vector<int64_t> nn_broadcast_index(const Shape& in, const Shape& out) {
  const size_t r = out.size();
  std::vector<int64_t> in_strides(r, 0);
  int64_t s = 1;
  for (size_t k = 0; k < in.size(); ++k) {
    const size_t i = in.size() - 1 - k;
    const size_t o = r - 1 - k;
    in_strides[o] = in[i] == 1 ? 0 : s;
    s *= in[i];
  }
  const int64_t n = nn_prod(out);
  std::vector<int64_t> idx(size_t(n > 0 ? n : 0));
  std::vector<int64_t> coord(r, 0);
  for (int64_t f = 0; f < n; ++f) {
    int64_t off = 0;
    for (size_t d = 0; d < r; ++d) off += coord[d] * in_strides[d];
    idx[size_t(f)] = off;
    for (size_t d = r; d-- > 0;) {
      if (++coord[d] < out[d]) break;
      coord[d] = 0;
    }
  }
  return idx;
}

}  // namespace tessera::kernels::ref
