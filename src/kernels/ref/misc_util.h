// Small helpers shared by the reference kernels of the resize, quantization,
// rnn, detection, signal and control_flow families: element conversion to and
// from double, and row-major index arithmetic.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "core/kernel_context.h"
#include "core/tensor.h"

namespace tessera::kernels::ref::misc {

// All elements of t (any real dtype) as doubles, row-major.
inline std::vector<double> to_doubles(const Tensor& t) { return t.to_double_vector(); }

// All elements as floats (exact for every dtype narrower than f32).
inline std::vector<float> to_floats(const Tensor& t) {
  Tensor c = t.contiguous();
  std::vector<float> v(size_t(c.numel()));
  dispatch_dtype(c.dtype(), [&]<typename T>() {
    if constexpr (std::is_same_v<T, std::string> || std::is_same_v<T, Complex64> ||
                  std::is_same_v<T, Complex128>) {
      throw Error(ErrorCode::unsupported, cat("expected a real tensor, got ", c.describe()));
    } else {
      const T* p = static_cast<const T*>(c.raw_data());
      for (int64_t i = 0; i < c.numel(); ++i) v[size_t(i)] = float(to_double(p[i]));
    }
  });
  return v;
}

// Writes doubles into t (contiguous, freshly allocated) converting to its dtype.
// Integers are rounded toward zero by the C++ cast; callers round first.
inline void from_doubles(Tensor& t, const std::vector<double>& v, bool saturate = false) {
  dispatch_dtype(t.dtype(), [&]<typename T>() {
    if constexpr (std::is_same_v<T, std::string>) {
      throw Error(ErrorCode::unsupported, "string output");
    } else {
      T* p = static_cast<T*>(t.raw_data());
      for (int64_t i = 0; i < t.numel(); ++i) {
        if constexpr (std::is_same_v<T, bool>) p[i] = v[size_t(i)] != 0;
        else p[i] = from_double<T>(v[size_t(i)], saturate);
      }
    }
  });
}
inline void from_floats(Tensor& t, const std::vector<float>& v) {
  std::vector<double> d(v.begin(), v.end());
  from_doubles(t, d);
}

// True for f64/f32/f16/bf16 (the "float" types most ops accept).
inline bool is_std_float(DType t) {
  return t == DType::f32 || t == DType::f64 || t == DType::f16 || t == DType::bf16;
}


// Integer range of an integer dtype (as doubles).
inline bool int_range(DType t, double& lo, double& hi) {
  switch (t) {
    case DType::u8: lo = 0; hi = 255; return true;
    case DType::i8: lo = -128; hi = 127; return true;
    case DType::u16: lo = 0; hi = 65535; return true;
    case DType::i16: lo = -32768; hi = 32767; return true;
    case DType::u4: lo = 0; hi = 15; return true;
    case DType::i4: lo = -8; hi = 7; return true;
    case DType::u2: lo = 0; hi = 3; return true;
    case DType::i2: lo = -2; hi = 1; return true;
    case DType::i32: lo = -2147483648.0; hi = 2147483647.0; return true;
    case DType::u32: lo = 0; hi = 4294967295.0; return true;
    default: return false;
  }
}

// Normalizes an axis against a rank, failing on the node when out of range.
inline int64_t norm_axis(const KernelContext& ctx, int64_t axis, int64_t rank, const char* what = "axis") {
  ctx.check(axis >= -rank && axis < std::max<int64_t>(rank, 1), what, " ", axis, " is out of range for rank ", rank);
  return axis < 0 ? axis + rank : axis;
}

// Row-major multi-index <-> flat index.
inline void unravel(int64_t flat, const Shape& shape, std::vector<int64_t>& idx) {
  idx.resize(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    const int64_t s = shape[d] > 0 ? shape[d] : 1;
    idx[d] = flat % s;
    flat /= s;
  }
}
inline int64_t ravel(const std::vector<int64_t>& idx, const Shape& shape) {
  int64_t f = 0;
  for (size_t d = 0; d < shape.size(); ++d) f = f * shape[d] + idx[d];
  return f;
}

}  // namespace tessera::kernels::ref::misc
