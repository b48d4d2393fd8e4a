// Reference kernels: indexing family (Gather, GatherElements, GatherND,
// Scatter, ScatterElements, ScatterND). Indices may be negative (counted from
// the end); an index out of range is an Error, never a wild access.
#include <algorithm>
#include <cmath>

#include "kernels/ref/registry.h"
#include "kernels/ref/shape_util.h"

namespace tessera::kernels::ref {

using namespace shape_util;

namespace {

std::vector<int64_t> indices_of(const KernelContext& ctx, size_t i) {
  const Tensor& t = ctx.required_input(i);
  ctx.check(t.dtype() == DType::i64 || t.dtype() == DType::i32, "indices must be int32 or int64, got ",
            dtype_name(t.dtype()));
  return t.to_int_vector();
}

int64_t fix_index(const KernelContext& ctx, int64_t v, int64_t dim) {
  if (v < 0) v += dim;
  if (v < 0 || v >= dim)
    ctx.fail(ErrorCode::runtime, "index ", (v < 0 ? v - dim : v), " is out of range for an axis of size ",
             dim);
  return v;
}

// ---- Gather ----
void gather_kernel(KernelContext& ctx) {
  const Tensor x = ctx.required_input(0).contiguous();
  const Tensor& it = ctx.required_input(1);
  const std::vector<int64_t> ind = indices_of(ctx, 1);
  const int64_t r = x.rank();
  ctx.check(r >= 1, "Gather needs data of rank >= 1");
  const int64_t axis = normalize_axis(ctx, ctx.attr_int("axis", 0), r);
  const int64_t len = x.dim(axis), outer = dims_product(x.shape(), 0, axis),
                inner = dims_product(x.shape(), axis + 1, r);
  Shape out_shape(x.shape().begin(), x.shape().begin() + axis);
  out_shape.insert(out_shape.end(), it.shape().begin(), it.shape().end());
  out_shape.insert(out_shape.end(), x.shape().begin() + axis + 1, x.shape().end());
  std::vector<int64_t> fixed(ind.size());
  for (size_t i = 0; i < ind.size(); ++i) fixed[i] = fix_index(ctx, ind[i], len);
  Tensor& out = ctx.output_for_overwrite(0, x.dtype(), out_shape);  // every element is written below
  const int64_t ni = int64_t(ind.size());
  dispatch_dtype(x.dtype(), [&]<typename T>() {
    const T* src = x.data<T>();
    T* dst = out.data<T>();
    if (inner == 1) {  // single elements (DLRM's upper triangle of [f, f] products): no copy call per element
      for (int64_t o = 0; o < outer; ++o, src += len, dst += ni)
        for (int64_t j = 0; j < ni; ++j) dst[j] = src[fixed[size_t(j)]];
      return;
    }
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t j = 0; j < ni; ++j) {
        const T* s = src + (o * len + fixed[size_t(j)]) * inner;
        std::copy(s, s + inner, dst + (o * ni + j) * inner);
      }
  });
}

// ---- GatherElements ----
void gather_elements_kernel(KernelContext& ctx) {
  const Tensor x = ctx.required_input(0).contiguous();
  const Tensor& it = ctx.required_input(1);
  const std::vector<int64_t> ind = indices_of(ctx, 1);
  const int64_t r = x.rank();
  ctx.check(r >= 1 && it.rank() == r, "data and indices must have the same rank >= 1, got ", x.text(),
            " and ", it.text());
  const int64_t axis = normalize_axis(ctx, ctx.attr_int("axis", 0), r);
  for (int64_t d = 0; d < r; ++d)
    ctx.check(d == axis || it.dim(d) <= x.dim(d), "indices shape ", shape_text(it.shape()),
              " exceeds data shape ", shape_text(x.shape()), " on axis ", d);
  Tensor& out = ctx.output(0, x.dtype(), it.shape());
  const auto st = contiguous_strides(x.shape());
  dispatch_dtype(x.dtype(), [&]<typename T>() {
    const T* src = x.data<T>();
    T* dst = out.data<T>();
    std::vector<int64_t> idx(static_cast<size_t>(r), 0);
    for (int64_t i = 0; i < it.numel(); ++i) {
      int64_t off = 0;
      for (int64_t d = 0; d < r; ++d)
        off += (d == axis ? fix_index(ctx, ind[size_t(i)], x.dim(axis)) : idx[size_t(d)]) * st[size_t(d)];
      dst[i] = src[off];
      next_index(idx, it.shape());
    }
  });
}

// ---- GatherND ----
void gather_nd_kernel(KernelContext& ctx) {
  const Tensor x = ctx.required_input(0).contiguous();
  const Tensor& it = ctx.required_input(1);
  const std::vector<int64_t> ind = indices_of(ctx, 1);
  const int64_t r = x.rank(), q = it.rank();
  const int64_t b = ctx.attr_int("batch_dims", 0);
  ctx.check(r >= 1 && q >= 1, "GatherND needs data and indices of rank >= 1");
  ctx.check(b >= 0 && b < std::min(r, q), "batch_dims ", b, " must be less than both ranks");
  const int64_t k = it.dim(-1);
  ctx.check(k >= 1 && k <= r - b, "indices last dim ", k, " must be in [1, ", r - b, "]");
  for (int64_t d = 0; d < b; ++d)
    ctx.check(x.dim(d) == it.dim(d), "batch dims of data and indices differ: ", shape_text(x.shape()), " vs ",
              shape_text(it.shape()));
  Shape out_shape(it.shape().begin(), it.shape().end() - 1);
  out_shape.insert(out_shape.end(), x.shape().begin() + b + k, x.shape().end());
  const int64_t batch = dims_product(x.shape(), 0, b);
  const int64_t per_batch = dims_product(it.shape(), b, q - 1);  // index tuples per batch
  const int64_t slice = dims_product(x.shape(), b + k, r);
  const int64_t batch_stride = dims_product(x.shape(), b, r);
  const auto st = contiguous_strides(x.shape());
  Tensor& out = ctx.output(0, x.dtype(), out_shape);
  dispatch_dtype(x.dtype(), [&]<typename T>() {
    const T* src = x.data<T>();
    T* dst = out.data<T>();
    for (int64_t bi = 0; bi < batch; ++bi)
      for (int64_t j = 0; j < per_batch; ++j) {
        const int64_t tuple = (bi * per_batch + j) * k;
        int64_t off = bi * batch_stride;
        for (int64_t c = 0; c < k; ++c)
          off += fix_index(ctx, ind[size_t(tuple + c)], x.dim(b + c)) * st[size_t(b + c)];
        std::copy(src + off, src + off + slice, dst + (bi * per_batch + j) * slice);
      }
  });
}

// ---- Scatter reductions ----
enum class Red { none, add, mul, max, min };

Red parse_reduction(const KernelContext& ctx) {
  const std::string s = ctx.attr_string("reduction", "none");
  if (s == "none") return Red::none;
  if (s == "add") return Red::add;
  if (s == "mul") return Red::mul;
  if (s == "max") return Red::max;
  if (s == "min") return Red::min;
  ctx.fail(ErrorCode::invalid_argument, "unknown reduction '", s, "'");
}

template <typename T>
void apply(T& dst, const T& v, Red red) {
  if constexpr (kIsNumeric<T> && !std::is_same_v<T, bool>) {
    if (red == Red::none) {
      dst = v;
      return;
    }
    using W = WideOf<T>;
    const W a = to_wide(dst), b = to_wide(v);
    W r = a;
    switch (red) {
      case Red::add:
        r = W(a + b);
        break;
      case Red::mul:
        r = W(a * b);
        break;
      case Red::max:
        r = b > a ? b : a;
        break;
      case Red::min:
        r = b < a ? b : a;
        break;
      case Red::none:
        break;
    }
    dst = from_wide<T>(r);
  } else if constexpr (std::is_same_v<T, bool>) {
    switch (red) {
      case Red::none:
        dst = v;
        break;
      case Red::add:
      case Red::max:
        dst = dst || v;
        break;
      case Red::mul:
      case Red::min:
        dst = dst && v;
        break;
    }
  } else {
    dst = v;  // reductions on non-numeric types were refused before
  }
}

void check_reduction_type(const KernelContext& ctx, DType t, Red red) {
  if (red != Red::none)
    ctx.check(t != DType::string && !is_complex(t), "reduction is not supported for ", dtype_name(t));
}

// Output 0 as a fresh copy of x (the scatter target).
Tensor& copy_to_output(KernelContext& ctx, const Tensor& x) {
  Tensor& out = ctx.output(0, x.dtype(), x.shape());
  dispatch_dtype(x.dtype(),
                 [&]<typename T>() { std::copy(x.data<T>(), x.data<T>() + x.numel(), out.data<T>()); });
  return out;
}

// ---- ScatterElements / Scatter ----
void scatter_elements_kernel(KernelContext& ctx) {
  const Tensor x = ctx.required_input(0).contiguous();
  const Tensor& it = ctx.required_input(1);
  const std::vector<int64_t> ind = indices_of(ctx, 1);
  const Tensor upd = ctx.required_input(2).contiguous();
  const int64_t r = x.rank();
  ctx.check(r >= 1 && it.rank() == r, "data and indices must have the same rank >= 1, got ", x.text(),
            " and ", it.text());
  ctx.check(upd.shape() == it.shape(), "updates shape ", shape_text(upd.shape()),
            " differs from indices shape ", shape_text(it.shape()));
  ctx.check(upd.dtype() == x.dtype(), "updates type differs from data type");
  const int64_t axis = normalize_axis(ctx, ctx.attr_int("axis", 0), r);
  for (int64_t d = 0; d < r; ++d)
    ctx.check(d == axis || it.dim(d) <= x.dim(d), "indices shape ", shape_text(it.shape()),
              " exceeds data shape ", shape_text(x.shape()), " on axis ", d);
  const Red red = parse_reduction(ctx);
  check_reduction_type(ctx, x.dtype(), red);
  Tensor& out = copy_to_output(ctx, x);
  const auto st = contiguous_strides(x.shape());
  dispatch_dtype(x.dtype(), [&]<typename T>() {
    const T* u = upd.data<T>();
    T* dst = out.data<T>();
    std::vector<int64_t> idx(static_cast<size_t>(r), 0);
    for (int64_t i = 0; i < it.numel(); ++i) {
      int64_t off = 0;
      for (int64_t d = 0; d < r; ++d)
        off += (d == axis ? fix_index(ctx, ind[size_t(i)], x.dim(axis)) : idx[size_t(d)]) * st[size_t(d)];
      apply(dst[off], u[i], red);
      next_index(idx, it.shape());
    }
  });
}

// ---- ScatterND ----
void scatter_nd_kernel(KernelContext& ctx) {
  const Tensor x = ctx.required_input(0).contiguous();
  const Tensor& it = ctx.required_input(1);
  const std::vector<int64_t> ind = indices_of(ctx, 1);
  const Tensor upd = ctx.required_input(2).contiguous();
  const int64_t r = x.rank(), q = it.rank();
  ctx.check(r >= 1 && q >= 1, "ScatterND needs data and indices of rank >= 1");
  const int64_t k = it.dim(-1);
  ctx.check(k >= 1 && k <= r, "indices last dim ", k, " must be in [1, ", r, "]");
  Shape ushape(it.shape().begin(), it.shape().end() - 1);
  ushape.insert(ushape.end(), x.shape().begin() + k, x.shape().end());
  ctx.check(upd.shape() == ushape, "updates shape ", shape_text(upd.shape()), " should be ",
            shape_text(ushape));
  ctx.check(upd.dtype() == x.dtype(), "updates type differs from data type");
  const Red red = parse_reduction(ctx);
  check_reduction_type(ctx, x.dtype(), red);
  const int64_t n = dims_product(it.shape(), 0, q - 1), slice = dims_product(x.shape(), k, r);
  const auto st = contiguous_strides(x.shape());
  Tensor& out = copy_to_output(ctx, x);
  dispatch_dtype(x.dtype(), [&]<typename T>() {
    const T* u = upd.data<T>();
    T* dst = out.data<T>();
    for (int64_t j = 0; j < n; ++j) {
      int64_t off = 0;
      for (int64_t c = 0; c < k; ++c) off += fix_index(ctx, ind[size_t(j * k + c)], x.dim(c)) * st[size_t(c)];
      for (int64_t e = 0; e < slice; ++e) apply(dst[off + e], u[j * slice + e], red);
    }
  });
}

// ---- TensorScatter (KV-cache update) ----
void tensor_scatter_kernel(KernelContext& ctx) {
  const Tensor cache = ctx.required_input(0).contiguous();
  const Tensor upd = ctx.required_input(1).contiguous();
  const int64_t r = cache.rank();
  ctx.check(r >= 2 && upd.rank() == r, "past_cache and update must have the same rank >= 2, got ",
            cache.text(), " and ", upd.text());
  ctx.check(upd.dtype() == cache.dtype(), "update type differs from past_cache type");
  const int64_t axis = normalize_axis(ctx, ctx.attr_int("axis", -2), r);
  ctx.check(axis >= 1, "axis must not be the batch axis");
  const std::string mode = ctx.attr_string("mode", "linear");
  ctx.check(mode == "linear" || mode == "circular", "unknown mode '", mode, "'");
  for (int64_t d = 0; d < r; ++d)
    ctx.check(d == axis ? upd.dim(d) <= cache.dim(d) : upd.dim(d) == cache.dim(d), "update shape ",
              shape_text(upd.shape()), " does not fit past_cache shape ", shape_text(cache.shape()));
  const int64_t batch = cache.dim(0);
  std::vector<int64_t> wi(static_cast<size_t>(batch), 0);
  if (ctx.has_input(2)) {
    wi = indices_of(ctx, 2);
    ctx.check(int64_t(wi.size()) == batch, "write_indices has ", wi.size(), " entries for batch ", batch);
  }
  const int64_t max_len = cache.dim(axis), seq = upd.dim(axis);
  const int64_t outer = dims_product(cache.shape(), 1, axis),
                inner = dims_product(cache.shape(), axis + 1, r);
  Tensor& out = copy_to_output(ctx, cache);
  dispatch_dtype(cache.dtype(), [&]<typename T>() {
    const T* u = upd.data<T>();
    T* dst = out.data<T>();
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t s = 0; s < seq; ++s) {
          int64_t pos = wi[size_t(b)] + s;
          if (mode == "circular") pos = ((pos % max_len) + max_len) % max_len;
          if (pos < 0 || pos >= max_len)
            ctx.fail(ErrorCode::runtime, "write position ", pos, " is out of range for a cache of length ",
                     max_len);
          const T* src = u + ((b * outer + o) * seq + s) * inner;
          std::copy(src, src + inner, dst + ((b * outer + o) * max_len + pos) * inner);
        }
  });
}

}  // namespace

void register_indexing_kernels(KernelTable& t) {
  t.add("Gather", gather_kernel);
  t.add("GatherElements", gather_elements_kernel);
  t.add("GatherND", gather_nd_kernel);
  t.add("Scatter", scatter_elements_kernel);
  t.add("ScatterElements", scatter_elements_kernel);
  t.add("ScatterND", scatter_nd_kernel);
  t.add("TensorScatter", tensor_scatter_kernel);
}

}  // namespace tessera::kernels::ref
