// Small helpers shared by the reference kernels of the nn families (linalg,
// conv, pool, normalization, softmax, attention). These kernels are the oracle:
// they read every element as double, compute in double and round once when
// storing into the output's type.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/kernel_context.h"
#include "core/tensor.h"

namespace tessera::kernels::ref {

// Refuses an output of n elements of elem_bytes each as its tensor would be refused (max_tensor_bytes), for
// kernels that build buffers that size before they allocate the output.
inline void check_output_size(const KernelContext& ctx, int64_t n, size_t elem_bytes = sizeof(float)) {
  ctx.check(n >= 0 && uint64_t(n) <= max_tensor_bytes() / elem_bytes, "refusing to allocate an output of ", n,
            " elements: more than a quarter of this machine's memory");
}

// A reference kernel's double-precision buffer for an output of n elements (a size its attributes or inputs
// chose: a Resize's sizes, a conv's pads, a MatMul's M x N), refused as an f32 output tensor would be before
// it is allocated: the buffer comes first, at twice the bytes of an f32 output, and an overcommitted one is
// only refused when the zero fill touches it.
inline std::vector<double> out_buffer(const KernelContext& ctx, int64_t n, double fill = 0.0) {
  check_output_size(ctx, n);
  return std::vector<double>(size_t(n), fill);
}

// All elements (row-major) as double.
inline std::vector<double> nn_load(const Tensor& t) {
  return t.to_double_vector();
}

// Writes v (row-major) into the contiguous tensor out, rounding once per element.
inline void nn_store(Tensor& out, const std::vector<double>& v) {
  dispatch_dtype(out.dtype(), [&]<typename T>() {
    T* p = out.data<T>();
    const int64_t n = out.numel();
    for (int64_t i = 0; i < n; ++i) {
      if constexpr (std::is_same_v<T, bool>)
        p[i] = v[size_t(i)] != 0.0;
      else if constexpr (std::is_integral_v<T>)
        p[i] = T(std::llround(v[size_t(i)]));
      else if constexpr (std::is_same_v<T, std::string> || std::is_same_v<T, Complex64> ||
                         std::is_same_v<T, Complex128>)
        throw Error(ErrorCode::unsupported, cat("cannot store numbers as ", dtype_name(out.dtype())));
      else
        p[i] = from_double<T>(v[size_t(i)]);
    }
  });
}

// Allocates output i with dtype/shape and fills it from v.
inline void nn_emit(KernelContext& ctx, size_t i, DType dt, const Shape& shape,
                    const std::vector<double>& v) {
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
  ctx.check(axis >= -rank && axis < std::max<int64_t>(rank, 1), what, " ", axis, " is out of range for rank ",
            rank);
  return axis < 0 ? axis + rank : axis;
}

// The product of dims [from, to) of s, checked as a tensor's element count is (shape_numel: a negative dim or
// more than 2^40 elements is an error; an output_shape of [2^31 - 1, 7, 2, 2^31 - 1] overflowed int64).
inline int64_t nn_prod(const Shape& s, size_t from = 0, size_t to = size_t(-1)) {
  const size_t end = std::min(s.size(), to);
  return from >= end ? 1 : shape_numel(std::span<const int64_t>(s.data() + from, end - from));
}

// Numpy broadcasting of two shapes; fails through ctx on a mismatch.
inline Shape nn_broadcast(const KernelContext& ctx, const Shape& a, const Shape& b) {
  const size_t r = std::max(a.size(), b.size());
  Shape out(r);
  for (size_t i = 0; i < r; ++i) {
    const int64_t da = i < r - a.size() ? 1 : a[i - (r - a.size())];
    const int64_t db = i < r - b.size() ? 1 : b[i - (r - b.size())];
    ctx.check(da == db || da == 1 || db == 1, "shapes ", shape_text(a), " and ", shape_text(b),
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

// Row-major coordinates of flat index f in a tensor of shape dims.
inline void nn_unravel(int64_t f, const std::vector<int64_t>& dims, std::vector<int64_t>& coord) {
  coord.resize(dims.size());
  for (size_t d = dims.size(); d-- > 0;) {
    coord[d] = dims[d] ? f % dims[d] : 0;
    f = dims[d] ? f / dims[d] : 0;
  }
}

// Sliding-window geometry of conv / pool ops over the spatial dims.
struct NnWindow {
  std::vector<int64_t> in, kernel, strides, dilations, pad_begin, pad_end, out;
  size_t nsp() const { return in.size(); }
};

// Reads strides / dilations / pads / auto_pad from ctx and computes the output
// spatial dims. ceil_mode: pools only (the last window must start inside the
// input or the begin padding).
inline NnWindow nn_window(const KernelContext& ctx, const Shape& in_spatial,
                          const std::vector<int64_t>& kernel, bool ceil_mode) {
  NnWindow w;
  const size_t n = in_spatial.size();
  w.in = in_spatial;
  w.kernel = kernel;
  w.strides = ctx.attr_ints("strides", std::vector<int64_t>(n, 1));
  w.dilations = ctx.attr_ints("dilations", std::vector<int64_t>(n, 1));
  std::vector<int64_t> pads = ctx.attr_ints("pads", std::vector<int64_t>(2 * n, 0));
  const std::string auto_pad = ctx.attr_string("auto_pad", "NOTSET");
  ctx.check(kernel.size() == n, "kernel has ", kernel.size(), " dims for ", n, " spatial dims");
  ctx.check(w.strides.size() == n, "strides has ", w.strides.size(), " values for ", n, " spatial dims");
  ctx.check(w.dilations.size() == n, "dilations has ", w.dilations.size(), " values for ", n,
            " spatial dims");
  ctx.check(pads.size() == 2 * n, "pads has ", pads.size(), " values for ", n, " spatial dims");
  ctx.check(
      auto_pad == "NOTSET" || auto_pad == "VALID" || auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER",
      "unknown auto_pad '", auto_pad, "'");
  for (size_t i = 0; i < n; ++i) {
    ctx.check(w.strides[i] > 0 && w.dilations[i] > 0 && kernel[i] > 0,
              "strides, dilations and kernel dims must be positive");
    ctx.check(pads[i] >= 0 && pads[n + i] >= 0, "pads must be non-negative");
    const int64_t eff = (kernel[i] - 1) * w.dilations[i] + 1;
    int64_t pb = pads[i], pe = pads[n + i], o;
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      o = (in_spatial[i] + w.strides[i] - 1) / w.strides[i];
      const int64_t total = std::max<int64_t>(0, (o - 1) * w.strides[i] + eff - in_spatial[i]);
      pb = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      pe = total - pb;
    } else {
      if (auto_pad == "VALID") pb = pe = 0;
      const int64_t span = in_spatial[i] + pb + pe - eff;
      ctx.check(span >= 0, "kernel extent ", eff, " exceeds the padded input ", in_spatial[i] + pb + pe);
      o = ceil_mode ? (span + w.strides[i] - 1) / w.strides[i] + 1 : span / w.strides[i] + 1;
      if (ceil_mode && (o - 1) * w.strides[i] >= in_spatial[i] + pb) --o;
    }
    w.pad_begin.push_back(pb);
    w.pad_end.push_back(pe);
    w.out.push_back(o);
  }
  return w;
}

}  // namespace tessera::kernels::ref
