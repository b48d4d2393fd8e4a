// Reference kernels: shape family (Reshape, Shape, Size, Flatten, Squeeze,
// Unsqueeze, Transpose, Concat, Split, Slice, Pad, Tile, Expand,
// ConstantOfShape, Range, DepthToSpace, SpaceToDepth, Trilu, CenterCropPad,
// ReverseSequence, Compress, NonZero, Unique, OneHot).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <numeric>
#include <optional>

#include "kernels/ref/registry.h"
#include "kernels/ref/shape_util.h"

namespace tessera::kernels::ref {

using namespace shape_util;

namespace {

std::vector<int64_t> int_input(const KernelContext& ctx, size_t i, const char* what) {
  const Tensor& t = ctx.required_input(i);
  ctx.check(is_integer(t.dtype()) && t.rank() <= 1, what, " must be a 1-D integer tensor, got ", t.text());
  return t.to_int_vector();
}

void set_view(KernelContext& ctx, const Tensor& x, Shape shape) {
  if (!x.is_contiguous() && ctx.output_may_be_strided(0))
    if (std::optional<Tensor> v = x.reshaped_view(shape)) return ctx.set_output(0, DataValue(std::move(*v)));
  ctx.set_output(0, DataValue(x.contiguous().reshape(std::move(shape))));
}

// ---- Reshape ----
void reshape_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.required_input(0);
  std::vector<int64_t> shape = int_input(ctx, 1, "shape");
  const bool allowzero = ctx.attr_int("allowzero", 0) != 0;
  int64_t infer = -1, known = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 0 && !allowzero) {
      ctx.check(int64_t(i) < x.rank(), "shape entry ", i, " is 0 but the input has rank ", x.rank());
      shape[i] = x.dim(int64_t(i));
    }
    if (shape[i] == -1) {
      ctx.check(infer < 0, "shape has more than one -1");
      infer = int64_t(i);
    } else {
      ctx.check(shape[i] >= 0, "invalid shape entry ", shape[i]);
      known *= shape[i];
    }
  }
  if (infer >= 0) {
    ctx.check(known != 0 && x.numel() % known == 0, "cannot infer -1 reshaping ", x.text(), " to ",
              shape_text(shape));
    shape[size_t(infer)] = x.numel() / known;
  }
  ctx.check(shape_numel(shape) == x.numel(), "cannot reshape ", x.text(), " to ", shape_text(shape));
  set_view(ctx, x, shape);
}

// ---- Shape / Size ----
void shape_kernel(KernelContext& ctx) {
  const DataValue* v = ctx.input_value(0);
  ctx.check(v && v->is_tensor(), "Shape needs a tensor input");
  const Shape& s = v->tensor.shape();
  const int64_t r = int64_t(s.size());
  auto clamp = [&](int64_t a) {
    if (a < 0) a += r;
    return std::clamp<int64_t>(a, 0, r);
  };
  const int64_t start = clamp(ctx.attr_int("start", 0));
  const int64_t end = ctx.has_attr("end") ? clamp(ctx.attr_int("end", r)) : r;
  const int64_t n = std::max<int64_t>(end - start, 0);
  Tensor& out = ctx.output(0, DType::i64, {n});
  for (int64_t i = 0; i < n; ++i) out.data<int64_t>()[i] = s[size_t(start + i)];
}

void size_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.required_input(0);
  ctx.output(0, DType::i64, {}).data<int64_t>()[0] = x.numel();
}

// ---- Flatten / Squeeze / Unsqueeze ----
void flatten_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.required_input(0);
  const int64_t r = x.rank();
  int64_t axis = ctx.attr_int("axis", 1);
  ctx.check(axis >= -r && axis <= r, "axis ", axis, " is out of range for rank ", r);
  if (axis < 0) axis += r;
  set_view(ctx, x, {dims_product(x.shape(), 0, axis), dims_product(x.shape(), axis, r)});
}

void squeeze_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.required_input(0);
  const int64_t r = x.rank();
  std::vector<bool> drop(size_t(r), false);
  std::vector<int64_t> axes;
  bool given = false;
  if (ctx.has_input(1)) {
    axes = int_input(ctx, 1, "axes");
    given = true;
  } else if (ctx.has_attr("axes")) {
    axes = ctx.attr_ints("axes");
    given = true;
  }
  if (given) {
    for (int64_t a : axes) {
      const int64_t n = normalize_axis(ctx, a, r);
      ctx.check(x.dim(n) == 1, "cannot squeeze axis ", a, " of size ", x.dim(n));
      drop[size_t(n)] = true;
    }
  } else {
    for (int64_t d = 0; d < r; ++d) drop[size_t(d)] = x.dim(d) == 1;
  }
  Shape out;
  for (int64_t d = 0; d < r; ++d)
    if (!drop[size_t(d)]) out.push_back(x.dim(d));
  set_view(ctx, x, out);
}

void unsqueeze_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.required_input(0);
  std::vector<int64_t> axes = ctx.has_input(1) ? int_input(ctx, 1, "axes") : ctx.attr_ints("axes");
  const int64_t r = x.rank() + int64_t(axes.size());
  std::vector<bool> ins(size_t(r), false);
  for (int64_t a : axes) {
    const int64_t n = normalize_axis(ctx, a, r);
    ctx.check(!ins[size_t(n)], "axis ", a, " is repeated");
    ins[size_t(n)] = true;
  }
  Shape out;
  int64_t j = 0;
  for (int64_t d = 0; d < r; ++d) out.push_back(ins[size_t(d)] ? 1 : x.dim(j++));
  set_view(ctx, x, out);
}

// ---- Transpose ----
void transpose_kernel(KernelContext& ctx) {
  const Tensor x = ctx.required_input(0).contiguous();
  const int64_t r = x.rank();
  std::vector<int64_t> perm = ctx.attr_ints("perm");
  if (perm.empty() && !ctx.has_attr("perm")) {
    perm.resize(static_cast<size_t>(r));
    for (int64_t i = 0; i < r; ++i) perm[size_t(i)] = r - 1 - i;
  }
  ctx.check(int64_t(perm.size()) == r, "perm has ", perm.size(), " entries for rank ", r);
  std::vector<bool> seen(size_t(r), false);
  const auto st = contiguous_strides(x.shape());
  Shape out_shape(static_cast<size_t>(r));
  std::vector<int64_t> strides(static_cast<size_t>(r));
  for (int64_t i = 0; i < r; ++i) {
    const int64_t p = normalize_axis(ctx, perm[size_t(i)], r, "perm entry");
    ctx.check(!seen[size_t(p)], "perm repeats axis ", p);
    seen[size_t(p)] = true;
    out_shape[size_t(i)] = x.dim(p);
    strides[size_t(i)] = st[size_t(p)];
  }
  Tensor& out = ctx.output_for_overwrite(0, x.dtype(), out_shape);
  strided_gather_any(x, 0, strides, out, ctx.pool());
}

// ---- Concat ----
void concat_kernel(KernelContext& ctx) {
  ctx.check(ctx.num_inputs() >= 1, "Concat needs at least one input");
  const Tensor& first = ctx.required_input(0);
  const int64_t r = first.rank();
  ctx.check(r >= 1, "Concat needs inputs of rank >= 1");
  const int64_t axis = normalize_axis(ctx, ctx.required_attr_int("axis"), r);
  Shape out_shape = first.shape();
  out_shape[size_t(axis)] = 0;
  std::vector<Tensor> ins;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    const Tensor& t = ctx.required_input(i);
    ctx.check(t.dtype() == first.dtype(), "input ", i, " is ", dtype_name(t.dtype()), ", expected ",
              dtype_name(first.dtype()));
    ctx.check(t.rank() == r, "input ", i, " has rank ", t.rank(), ", expected ", r);
    for (int64_t d = 0; d < r; ++d)
      ctx.check(d == axis || t.dim(d) == first.dim(d), "input ", i, " has shape ", shape_text(t.shape()),
                ", incompatible with ", shape_text(first.shape()));
    out_shape[size_t(axis)] += t.dim(axis);
    ins.push_back(t.contiguous());
  }
  Tensor& out = ctx.output(0, first.dtype(), out_shape);
  const int64_t outer = dims_product(out_shape, 0, axis), inner = dims_product(out_shape, axis + 1, r);
  const int64_t out_row = out_shape[size_t(axis)] * inner;
  dispatch_dtype(first.dtype(), [&]<typename T>() {
    T* dst = out.data<T>();
    int64_t col = 0;
    for (const Tensor& t : ins) {
      const T* src = t.data<T>();
      const int64_t row = t.dim(axis) * inner;
      for (int64_t o = 0; o < outer; ++o)
        std::copy(src + o * row, src + (o + 1) * row, dst + o * out_row + col);
      col += row;
    }
  });
}

// ---- Split ----
void split_kernel(KernelContext& ctx) {
  const Tensor x = ctx.required_input(0).contiguous();
  const int64_t r = x.rank();
  ctx.check(r >= 1, "Split needs an input of rank >= 1");
  const int64_t axis = normalize_axis(ctx, ctx.attr_int("axis", 0), r);
  const int64_t len = x.dim(axis);
  const int64_t nout = int64_t(ctx.num_outputs());
  std::vector<int64_t> sizes;
  if (ctx.has_input(1)) {
    sizes = int_input(ctx, 1, "split");
  } else if (ctx.has_attr("split")) {
    sizes = ctx.attr_ints("split");
  }
  if (!sizes.empty()) {
    ctx.check(int64_t(sizes.size()) == nout, "split has ", sizes.size(), " entries for ", nout, " outputs");
    int64_t sum = 0;
    for (int64_t s : sizes) {
      ctx.check(s >= 0, "negative split size ", s);
      sum += s;
    }
    ctx.check(sum == len, "split sizes sum to ", sum, ", but the axis has size ", len);
  } else {
    const int64_t n = ctx.has_attr("num_outputs") ? ctx.attr_int("num_outputs", nout) : nout;
    ctx.check(n >= 1 && n == nout, "num_outputs ", n, " does not match the node's ", nout, " outputs");
    if (ctx.has_attr("num_outputs")) {
      const int64_t chunk = (len + n - 1) / n;
      for (int64_t i = 0; i < n; ++i) sizes.push_back(std::clamp<int64_t>(len - i * chunk, 0, chunk));
    } else {
      ctx.check(len % n == 0, "axis of size ", len, " cannot be split evenly into ", n, " outputs");
      sizes.assign(size_t(n), len / n);
    }
  }
  const int64_t inner = dims_product(x.shape(), axis + 1, r);
  int64_t start = 0;
  for (int64_t i = 0; i < nout; ++i) {
    Shape s = x.shape();
    s[size_t(axis)] = sizes[size_t(i)];
    Tensor& out = ctx.output_for_overwrite(size_t(i), x.dtype(), s);
    const auto st = contiguous_strides(x.shape());
    strided_gather_any(x, start * inner, st, out, ctx.pool());
    start += sizes[size_t(i)];
  }
}

// ---- Slice ----
void slice_kernel(KernelContext& ctx) {
  const Tensor x = ctx.required_input(0).contiguous();
  const int64_t r = x.rank();
  const std::vector<int64_t> starts = int_input(ctx, 1, "starts"), ends = int_input(ctx, 2, "ends");
  ctx.check(starts.size() == ends.size(), "starts and ends differ in length");
  std::vector<int64_t> axes, steps;
  if (ctx.has_input(3))
    axes = int_input(ctx, 3, "axes");
  else {
    axes.resize(starts.size());
    std::iota(axes.begin(), axes.end(), 0);
  }
  if (ctx.has_input(4))
    steps = int_input(ctx, 4, "steps");
  else
    steps.assign(starts.size(), 1);
  ctx.check(axes.size() == starts.size() && steps.size() == starts.size(),
            "starts, ends, axes and steps must have the same length");
  Shape out_shape = x.shape();
  const auto st = contiguous_strides(x.shape());
  std::vector<int64_t> strides = st;
  std::vector<bool> seen(size_t(r), false);
  int64_t base = 0;
  for (size_t i = 0; i < starts.size(); ++i) {
    const int64_t a = normalize_axis(ctx, axes[i], r);
    ctx.check(!seen[size_t(a)], "axis ", axes[i], " is repeated");
    seen[size_t(a)] = true;
    const int64_t step = steps[i];
    ctx.check(step != 0, "slice step cannot be 0");
    const int64_t dim = x.dim(a);
    int64_t s = starts[i], e = ends[i];
    if (s < 0) s += dim;
    if (e < 0) e += dim;
    if (dim == 0) {
      s = e = 0;
    } else if (step > 0) {
      s = std::clamp<int64_t>(s, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
    } else {
      s = std::clamp<int64_t>(s, 0, dim - 1);
      e = std::clamp<int64_t>(e, -1, dim - 1);
    }
    // Overflow-safe count of s, s+step, ... before e.
    int64_t n = 0;
    if (step > 0 && e > s)
      n = (e - s - 1) / step + 1;
    else if (step < 0 && s > e)
      n = (s - e - 1) / (step == INT64_MIN ? INT64_MAX : -step) + 1;
    out_shape[size_t(a)] = n;
    if (n > 0) base += s * st[size_t(a)];
    strides[size_t(a)] = st[size_t(a)] * step;
  }
  // Readers that take views in place (KernelContext::output_may_be_strided): a view, no copy.
  const bool forward = std::all_of(strides.begin(), strides.end(), [](int64_t v) { return v > 0; });
  if (forward && x.storage() && ctx.output_may_be_strided(0)) {
    const size_t offset = x.byte_offset() + size_t(base) * dtype_size(x.dtype());
    ctx.set_output(0, DataValue(Tensor::view(x.dtype(), out_shape, x.storage(), offset, strides)));
    return;
  }
  Tensor& out = ctx.output_for_overwrite(0, x.dtype(), out_shape);
  strided_gather_any(x, base, strides, out, ctx.pool());
}

// ---- Pad ----
void pad_kernel(KernelContext& ctx) {
  const Tensor x = ctx.required_input(0).contiguous();
  const int64_t r = x.rank();
  const std::vector<int64_t> pads_in = int_input(ctx, 1, "pads");
  std::vector<int64_t> axes;
  if (ctx.has_input(3)) {
    axes = int_input(ctx, 3, "axes");
  } else {
    axes.resize(static_cast<size_t>(r));
    std::iota(axes.begin(), axes.end(), 0);
  }
  ctx.check(pads_in.size() == 2 * axes.size(), "pads has ", pads_in.size(), " entries for ", axes.size(),
            " axes");
  std::vector<int64_t> begin(size_t(r), 0), end(size_t(r), 0);
  const size_t na = axes.size();
  for (size_t i = 0; i < na; ++i) {
    const int64_t a = normalize_axis(ctx, axes[i], r);
    ctx.check(std::abs(pads_in[i]) <= kMaxElements && std::abs(pads_in[i + na]) <= kMaxElements,
              "pad of axis ", axes[i], " is too large");
    begin[size_t(a)] = pads_in[i];
    end[size_t(a)] = pads_in[i + na];
  }
  const std::string mode = ctx.attr_string("mode", "constant");
  ctx.check(mode == "constant" || mode == "reflect" || mode == "edge" || mode == "wrap", "unknown pad mode '",
            mode, "'");
  enum class Mode { constant, reflect, edge, wrap };
  const Mode m = mode == "constant"  ? Mode::constant
                 : mode == "reflect" ? Mode::reflect
                 : mode == "edge"    ? Mode::edge
                                     : Mode::wrap;
  Shape out_shape(static_cast<size_t>(r));
  for (int64_t d = 0; d < r; ++d) {
    out_shape[size_t(d)] = x.dim(d) + begin[size_t(d)] + end[size_t(d)];
    ctx.check(out_shape[size_t(d)] >= 0, "pads make axis ", d, " negative");
    if (mode != "constant" && out_shape[size_t(d)] > 0)
      ctx.check(x.dim(d) > 0, "cannot ", mode, "-pad an empty axis ", d);
  }
  Tensor& out = ctx.output(0, x.dtype(), out_shape);
  const int64_t n = out.numel();
  if (n == 0) return;
  const auto st = contiguous_strides(x.shape());
  dispatch_dtype(x.dtype(), [&]<typename T>() {
    T fill{};
    if (ctx.has_input(2) && ctx.input(2)->numel() > 0) {
      const Tensor& v = *ctx.input(2);
      ctx.check(v.dtype() == x.dtype(), "constant_value is ", dtype_name(v.dtype()), ", expected ",
                dtype_name(x.dtype()));
      fill = v.contiguous().data<T>()[0];
    }
    const T* src = x.data<T>();
    T* dst = out.data<T>();
    std::vector<int64_t> idx(size_t(r), 0);
    for (int64_t i = 0; i < n; ++i) {
      int64_t off = 0;
      bool inside = true;
      for (int64_t d = 0; d < r && inside; ++d) {
        const int64_t dim = x.dim(d);
        int64_t c = idx[size_t(d)] - begin[size_t(d)];
        if (c < 0 || c >= dim) {
          if (m == Mode::constant) {
            inside = false;
            break;
          } else if (m == Mode::edge) {
            c = std::clamp<int64_t>(c, 0, dim - 1);
          } else if (m == Mode::wrap) {
            c = ((c % dim) + dim) % dim;
          } else {  // reflect
            if (dim == 1)
              c = 0;
            else {
              const int64_t period = 2 * (dim - 1);
              c = ((c % period) + period) % period;
              if (c >= dim) c = period - c;
            }
          }
        }
        off += c * st[size_t(d)];
      }
      dst[i] = inside ? src[off] : fill;
      next_index(idx, out_shape);
    }
  });
}

// ---- Tile / Expand ----
void tile_kernel(KernelContext& ctx) {
  const Tensor x = ctx.required_input(0).contiguous();
  const std::vector<int64_t> reps = int_input(ctx, 1, "repeats");
  const int64_t r = x.rank();
  ctx.check(int64_t(reps.size()) == r, "repeats has ", reps.size(), " entries for rank ", r);
  Shape out_shape(static_cast<size_t>(r));
  for (int64_t d = 0; d < r; ++d) {
    ctx.check(reps[size_t(d)] >= 0, "negative repeat ", reps[size_t(d)]);
    ctx.check(reps[size_t(d)] == 0 || x.dim(d) <= kMaxElements / reps[size_t(d)], "repeat ", reps[size_t(d)],
              " is too large");
    out_shape[size_t(d)] = x.dim(d) * reps[size_t(d)];
  }
  Tensor& out = ctx.output(0, x.dtype(), out_shape);
  const int64_t n = out.numel();
  if (n == 0) return;
  const auto st = contiguous_strides(x.shape());
  dispatch_dtype(x.dtype(), [&]<typename T>() {
    const T* src = x.data<T>();
    T* dst = out.data<T>();
    std::vector<int64_t> idx(size_t(r), 0);
    for (int64_t i = 0; i < n; ++i) {
      int64_t off = 0;
      for (int64_t d = 0; d < r; ++d) off += (idx[size_t(d)] % x.dim(d)) * st[size_t(d)];
      dst[i] = src[off];
      next_index(idx, out_shape);
    }
  });
}

void expand_kernel(KernelContext& ctx) {
  const Tensor x = ctx.required_input(0).contiguous();
  const std::vector<int64_t> shape = int_input(ctx, 1, "shape");
  const Shape out_shape = broadcast_shape(ctx, x.shape(), shape);
  Tensor& out = ctx.output_for_overwrite(0, x.dtype(), out_shape);
  strided_gather_any(x, 0, broadcast_strides(x.shape(), out_shape), out, ctx.pool());
}

// ---- ConstantOfShape / Range ----
void constant_of_shape_kernel(KernelContext& ctx) {
  const std::vector<int64_t> shape = int_input(ctx, 0, "shape");
  for (int64_t d : shape) ctx.check(d >= 0, "negative dimension in shape ", shape_text(shape));
  const Tensor* v = ctx.attr_tensor("value");
  if (!v) {
    ctx.output(0, DType::f32, shape);  // zero-filled
    return;
  }
  ctx.check(v->numel() == 1, "value must hold one element, got ", v->text());
  Tensor& out = ctx.output(0, v->dtype(), shape);
  const Tensor vc = v->contiguous();
  dispatch_dtype(v->dtype(), [&]<typename T>() {
    std::fill(out.data<T>(), out.data<T>() + out.numel(), vc.data<T>()[0]);
  });
}

void range_kernel(KernelContext& ctx) {
  const Tensor& s = ctx.required_input(0);
  const Tensor& l = ctx.required_input(1);
  const Tensor& dl = ctx.required_input(2);
  ctx.check(s.numel() == 1 && l.numel() == 1 && dl.numel() == 1, "start, limit and delta must be scalars");
  ctx.check(s.dtype() == l.dtype() && s.dtype() == dl.dtype(), "start, limit and delta must share a type");
  dispatch_dtype(s.dtype(), [&]<typename T>() {
    if constexpr (kIsNumeric<T> && !std::is_same_v<T, bool>) {
      using W = WideOf<T>;
      const W start = to_wide(s.contiguous().data<T>()[0]), limit = to_wide(l.contiguous().data<T>()[0]),
              delta = to_wide(dl.contiguous().data<T>()[0]);
      ctx.check(delta != W(0), "delta cannot be 0");
      if constexpr (std::is_same_v<W, double>)
        ctx.check(std::isfinite(start) && std::isfinite(limit) && std::isfinite(delta),
                  "start, limit and delta must be finite");
      const double q = std::max(std::ceil((double(limit) - double(start)) / double(delta)), 0.0);
      ctx.check(q <= double(kMaxElements), "Range would produce ", q, " elements");
      const int64_t n = int64_t(q);
      Tensor& out = ctx.output(0, s.dtype(), {n});
      T* dst = out.data<T>();
      for (int64_t i = 0; i < n; ++i) dst[i] = from_wide<T>(W(start + W(i) * delta));
    } else {
      ctx.fail(ErrorCode::unsupported, "Range does not support ", dtype_name(s.dtype()));
    }
  });
}

// ---- DepthToSpace / SpaceToDepth ----
// out = transpose(reshape(x, view), perm), reshaped to out_shape.
void permute_view(KernelContext& ctx, const Tensor& x, const Shape& view, const std::vector<int64_t>& perm,
                  const Shape& out_shape) {
  const auto st = contiguous_strides(view);
  Shape pshape(perm.size());
  std::vector<int64_t> pstr(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) {
    pshape[i] = view[size_t(perm[i])];
    pstr[i] = st[size_t(perm[i])];
  }
  Tensor& out = ctx.output(0, x.dtype(), out_shape);
  Tensor tmp = out.reshape(pshape);
  strided_gather_any(x, 0, pstr, tmp);
}

void depth_to_space_kernel(KernelContext& ctx) {
  const Tensor x = ctx.required_input(0).contiguous();
  ctx.check(x.rank() == 4, "DepthToSpace needs a 4-D input, got ", x.text());
  const int64_t b = ctx.required_attr_int("blocksize");
  ctx.check(b > 0 && b <= (1 << 20), "blocksize must be in [1, 2^20], got ", b);
  const int64_t N = x.dim(0), C = x.dim(1), H = x.dim(2), W = x.dim(3);
  ctx.check(C % (b * b) == 0, "channels ", C, " are not divisible by blocksize^2 = ", b * b);
  const int64_t c = C / (b * b);
  const std::string mode = ctx.attr_string("mode", "DCR");
  const Shape out_shape{N, c, H * b, W * b};
  if (mode == "DCR")
    permute_view(ctx, x, {N, b, b, c, H, W}, {0, 3, 4, 1, 5, 2}, out_shape);
  else if (mode == "CRD")
    permute_view(ctx, x, {N, c, b, b, H, W}, {0, 1, 4, 2, 5, 3}, out_shape);
  else
    ctx.fail(ErrorCode::invalid_argument, "unknown mode '", mode, "'");
}

void space_to_depth_kernel(KernelContext& ctx) {
  const Tensor x = ctx.required_input(0).contiguous();
  ctx.check(x.rank() == 4, "SpaceToDepth needs a 4-D input, got ", x.text());
  const int64_t b = ctx.required_attr_int("blocksize");
  ctx.check(b > 0 && b <= (1 << 20), "blocksize must be in [1, 2^20], got ", b);
  const int64_t N = x.dim(0), C = x.dim(1), H = x.dim(2), W = x.dim(3);
  ctx.check(H % b == 0 && W % b == 0, "spatial dims ", H, "x", W, " are not divisible by blocksize ", b);
  permute_view(ctx, x, {N, C, H / b, b, W / b, b}, {0, 3, 5, 1, 2, 4}, {N, C * b * b, H / b, W / b});
}

// ---- Trilu ----
void trilu_kernel(KernelContext& ctx) {
  const Tensor x = ctx.required_input(0).contiguous();
  ctx.check(x.rank() >= 2, "Trilu needs an input of rank >= 2");
  int64_t k = 0;
  if (ctx.has_input(1)) {
    const Tensor& kt = *ctx.input(1);
    ctx.check(is_integer(kt.dtype()) && kt.numel() == 1, "k must be a single integer");
    k = kt.at_int(0);
  }
  const bool upper = ctx.attr_int("upper", 1) != 0;
  const int64_t R = x.dim(-2), C = x.dim(-1), batch = R * C > 0 ? x.numel() / (R * C) : 0;
  Tensor& out = ctx.output(0, x.dtype(), x.shape());
  dispatch_dtype(x.dtype(), [&]<typename T>() {
    const T* src = x.data<T>();
    T* dst = out.data<T>();
    for (int64_t bi = 0; bi < batch; ++bi)
      for (int64_t i = 0; i < R; ++i)
        for (int64_t j = 0; j < C; ++j) {
          const bool keep = upper ? (j - i >= k) : (j - i <= k);
          const int64_t o = (bi * R + i) * C + j;
          if (keep) dst[o] = src[o];
        }
  });
}

// ---- CenterCropPad ----
void center_crop_pad_kernel(KernelContext& ctx) {
  const Tensor x = ctx.required_input(0).contiguous();
  const std::vector<int64_t> shape = int_input(ctx, 1, "shape");
  const int64_t r = x.rank();
  std::vector<int64_t> axes = ctx.attr_ints("axes");
  if (axes.empty()) {
    axes.resize(static_cast<size_t>(r));
    std::iota(axes.begin(), axes.end(), 0);
  }
  ctx.check(shape.size() == axes.size(), "shape has ", shape.size(), " entries for ", axes.size(), " axes");
  Shape out_shape = x.shape();
  std::vector<int64_t> shift(size_t(r), 0);  // input coord = output coord + shift
  for (size_t i = 0; i < axes.size(); ++i) {
    const int64_t a = normalize_axis(ctx, axes[i], r);
    const int64_t dim = x.dim(a), t = shape[i];
    ctx.check(t >= 0, "negative target size ", t);
    out_shape[size_t(a)] = t;
    shift[size_t(a)] = t <= dim ? (dim - t) / 2 : -((t - dim) / 2);
  }
  Tensor& out = ctx.output(0, x.dtype(), out_shape);
  if (out.numel() == 0) return;
  const auto st = contiguous_strides(x.shape());
  dispatch_dtype(x.dtype(), [&]<typename T>() {
    const T* src = x.data<T>();
    T* dst = out.data<T>();
    std::vector<int64_t> idx(size_t(r), 0);
    for (int64_t i = 0; i < out.numel(); ++i) {
      int64_t off = 0;
      bool inside = true;
      for (int64_t d = 0; d < r; ++d) {
        const int64_t c = idx[size_t(d)] + shift[size_t(d)];
        if (c < 0 || c >= x.dim(d)) {
          inside = false;
          break;
        }
        off += c * st[size_t(d)];
      }
      if (inside) dst[i] = src[off];
      next_index(idx, out_shape);
    }
  });
}

// ---- ReverseSequence ----
void reverse_sequence_kernel(KernelContext& ctx) {
  const Tensor x = ctx.required_input(0).contiguous();
  const std::vector<int64_t> lens = int_input(ctx, 1, "sequence_lens");
  ctx.check(x.rank() >= 2, "ReverseSequence needs an input of rank >= 2");
  const int64_t ta = ctx.attr_int("time_axis", 0), ba = ctx.attr_int("batch_axis", 1);
  ctx.check((ta == 0 && ba == 1) || (ta == 1 && ba == 0), "time_axis/batch_axis must be 0/1 or 1/0");
  const int64_t B = x.dim(ba), Tn = x.dim(ta);
  ctx.check(int64_t(lens.size()) == B, "sequence_lens has ", lens.size(), " entries for batch ", B);
  for (int64_t l : lens)
    ctx.check(l >= 0 && l <= Tn, "sequence length ", l, " is out of range [0, ", Tn, "]");
  Tensor& out = ctx.output(0, x.dtype(), x.shape());
  const auto st = contiguous_strides(x.shape());
  const int64_t inner = dims_product(x.shape(), 2, x.rank());
  dispatch_dtype(x.dtype(), [&]<typename T>() {
    const T* src = x.data<T>();
    T* dst = out.data<T>();
    for (int64_t b = 0; b < B; ++b)
      for (int64_t t = 0; t < Tn; ++t) {
        const int64_t ts = t < lens[size_t(b)] ? lens[size_t(b)] - 1 - t : t;
        const int64_t o = b * st[size_t(ba)] + t * st[size_t(ta)];
        const int64_t s = b * st[size_t(ba)] + ts * st[size_t(ta)];
        std::copy(src + s, src + s + inner, dst + o);
      }
  });
}

// ---- Compress ----
void compress_kernel(KernelContext& ctx) {
  Tensor x = ctx.required_input(0).contiguous();
  const Tensor cond = ctx.required_input(1).contiguous();
  ctx.check(cond.rank() == 1, "condition must be 1-D, got ", cond.text());
  std::vector<bool> keep(size_t(cond.numel()));
  for (int64_t i = 0; i < cond.numel(); ++i) keep[size_t(i)] = cond.at_double(i) != 0;
  int64_t axis;
  if (ctx.has_attr("axis")) {
    axis = normalize_axis(ctx, ctx.attr_int("axis", 0), x.rank());
  } else {
    x = x.reshape({x.numel()});
    axis = 0;
  }
  const int64_t len = x.dim(axis);
  for (int64_t i = len; i < int64_t(keep.size()); ++i)
    ctx.check(!keep[size_t(i)], "condition selects index ", i, " beyond the axis size ", len);
  std::vector<int64_t> sel;
  for (int64_t i = 0; i < std::min<int64_t>(len, int64_t(keep.size())); ++i)
    if (keep[size_t(i)]) sel.push_back(i);
  Shape out_shape = x.shape();
  out_shape[size_t(axis)] = int64_t(sel.size());
  Tensor& out = ctx.output(0, x.dtype(), out_shape);
  const int64_t outer = dims_product(x.shape(), 0, axis), inner = dims_product(x.shape(), axis + 1, x.rank());
  dispatch_dtype(x.dtype(), [&]<typename T>() {
    const T* src = x.data<T>();
    T* dst = out.data<T>();
    for (int64_t o = 0; o < outer; ++o)
      for (size_t j = 0; j < sel.size(); ++j) {
        const T* s = src + (o * len + sel[j]) * inner;
        std::copy(s, s + inner, dst + (o * int64_t(sel.size()) + int64_t(j)) * inner);
      }
  });
}

// ---- NonZero ----
void nonzero_kernel(KernelContext& ctx) {
  const Tensor x = ctx.required_input(0).contiguous();
  std::vector<int64_t> hits;
  dispatch_dtype(x.dtype(), [&]<typename T>() {
    if constexpr (kIsNumeric<T>) {
      const T* src = x.data<T>();
      for (int64_t i = 0; i < x.numel(); ++i)
        if (to_double(src[i]) != 0) hits.push_back(i);
    } else if constexpr (std::is_same_v<T, std::string>) {
      const T* src = x.data<T>();
      for (int64_t i = 0; i < x.numel(); ++i)
        if (!src[i].empty()) hits.push_back(i);
    } else {
      const T* src = x.data<T>();
      for (int64_t i = 0; i < x.numel(); ++i)
        if (src[i] != T{}) hits.push_back(i);
    }
  });
  const int64_t r = x.rank(), nnz = int64_t(hits.size());
  Tensor& out = ctx.output(0, DType::i64, {r, nnz});
  int64_t* dst = out.data<int64_t>();
  const auto st = contiguous_strides(x.shape());
  for (int64_t j = 0; j < nnz; ++j) {
    int64_t rem = hits[size_t(j)];
    for (int64_t d = 0; d < r; ++d) {
      dst[d * nnz + j] = rem / st[size_t(d)];
      rem %= st[size_t(d)];
    }
  }
}

// ---- Unique ----
void unique_kernel(KernelContext& ctx) {
  Tensor x = ctx.required_input(0).contiguous();
  const bool sorted = ctx.attr_int("sorted", 1) != 0;
  int64_t axis = 0;
  if (ctx.has_attr("axis")) {
    axis = normalize_axis(ctx, ctx.attr_int("axis", 0), x.rank());
  } else {
    x = x.reshape({x.numel()});
  }
  const int64_t len = x.dim(axis), outer = dims_product(x.shape(), 0, axis),
                inner = dims_product(x.shape(), axis + 1, x.rank());
  dispatch_dtype(x.dtype(), [&]<typename T>() {
    if constexpr (kIsOrderable<T>) {
      const T* src = x.data<T>();
      // Slice k along the axis, as a vector of order keys.
      auto slice_less = [&](int64_t a, int64_t b) {
        for (int64_t o = 0; o < outer; ++o)
          for (int64_t in = 0; in < inner; ++in) {
            const auto va = order_key(src[(o * len + a) * inner + in]);
            const auto vb = order_key(src[(o * len + b) * inner + in]);
            if (va < vb) return true;
            if (vb < va) return false;
          }
        return false;
      };
      auto slice_eq = [&](int64_t a, int64_t b) { return !slice_less(a, b) && !slice_less(b, a); };
      // Stable sort of slice ids; groups of equal slices give the unique values.
      std::vector<int64_t> order(static_cast<size_t>(len));
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(), slice_less);
      std::vector<int64_t> firsts, counts;            // per unique (sorted order)
      std::vector<int64_t> group_of(size_t(len), 0);  // slice -> unique id (sorted order)
      for (size_t i = 0; i < order.size(); ++i) {
        if (i == 0 || !slice_eq(order[i - 1], order[i])) {
          firsts.push_back(order[i]);
          counts.push_back(0);
        }
        counts.back()++;
        group_of[size_t(order[i])] = int64_t(firsts.size()) - 1;
      }
      const int64_t u = int64_t(firsts.size());
      std::vector<int64_t> rank_of(static_cast<size_t>(u));  // sorted id -> output position
      std::iota(rank_of.begin(), rank_of.end(), 0);
      if (!sorted) {
        std::vector<int64_t> by_first(static_cast<size_t>(u));
        std::iota(by_first.begin(), by_first.end(), 0);
        std::sort(by_first.begin(), by_first.end(),
                  [&](int64_t a, int64_t b) { return firsts[size_t(a)] < firsts[size_t(b)]; });
        for (int64_t p = 0; p < u; ++p) rank_of[size_t(by_first[size_t(p)])] = p;
      }
      Shape ys = x.shape();
      ys[size_t(axis)] = u;
      Tensor& y = ctx.output(0, x.dtype(), ys);
      T* dy = y.data<T>();
      std::vector<int64_t> idx_out(static_cast<size_t>(u)), cnt_out(static_cast<size_t>(u));
      for (int64_t g = 0; g < u; ++g) {
        const int64_t p = rank_of[size_t(g)];
        idx_out[size_t(p)] = firsts[size_t(g)];
        cnt_out[size_t(p)] = counts[size_t(g)];
        for (int64_t o = 0; o < outer; ++o)
          std::copy(src + (o * len + firsts[size_t(g)]) * inner,
                    src + (o * len + firsts[size_t(g)] + 1) * inner, dy + (o * u + p) * inner);
      }
      if (ctx.num_outputs() > 1 && ctx.output_requested(1)) {
        Tensor& t = ctx.output(1, DType::i64, {u});
        std::copy(idx_out.begin(), idx_out.end(), t.data<int64_t>());
      }
      if (ctx.num_outputs() > 2 && ctx.output_requested(2)) {
        Tensor& t = ctx.output(2, DType::i64, {len});
        for (int64_t i = 0; i < len; ++i) t.data<int64_t>()[i] = rank_of[size_t(group_of[size_t(i)])];
      }
      if (ctx.num_outputs() > 3 && ctx.output_requested(3)) {
        Tensor& t = ctx.output(3, DType::i64, {u});
        std::copy(cnt_out.begin(), cnt_out.end(), t.data<int64_t>());
      }
    } else {
      ctx.fail(ErrorCode::unsupported, "Unique does not support ", dtype_name(x.dtype()));
    }
  });
}

// ---- OneHot ----
void onehot_kernel(KernelContext& ctx) {
  const Tensor ind = ctx.required_input(0).contiguous();
  const Tensor& dt = ctx.required_input(1);
  const Tensor vals = ctx.required_input(2).contiguous();
  ctx.check(dt.numel() == 1, "depth must be a scalar");
  ctx.check(vals.numel() == 2, "values must have two elements [off, on], got ", vals.text());
  const double depth_d = dt.at_double(0);
  ctx.check(std::isfinite(depth_d) && depth_d < double(kMaxElements), "depth must be a finite size");
  const int64_t depth = int64_t(depth_d);
  ctx.check(depth > 0, "depth must be positive, got ", depth);
  const int64_t r = ind.rank() + 1;
  const int64_t axis = normalize_axis(ctx, ctx.attr_int("axis", -1), r);
  Shape out_shape = ind.shape();
  out_shape.insert(out_shape.begin() + axis, depth);
  Tensor& out = ctx.output(0, vals.dtype(), out_shape);
  const int64_t outer = dims_product(ind.shape(), 0, axis),
                inner = dims_product(ind.shape(), axis, ind.rank());
  const std::vector<double> iv = ind.to_double_vector();
  dispatch_dtype(vals.dtype(), [&]<typename T>() {
    const T off = vals.data<T>()[0], on = vals.data<T>()[1];
    T* dst = out.data<T>();
    std::fill(dst, dst + out.numel(), off);
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t in = 0; in < inner; ++in) {
        int64_t k = int64_t(iv[size_t(o * inner + in)]);
        if (k < 0) k += depth;
        if (k >= 0 && k < depth) dst[(o * depth + k) * inner + in] = on;
      }
  });
}

}  // namespace

void register_shape_kernels(KernelTable& t) {
  t.add("Reshape", reshape_kernel);
  t.add("Shape", shape_kernel);
  t.add("Size", size_kernel);
  t.add("Flatten", flatten_kernel);
  t.add("Squeeze", squeeze_kernel);
  t.add("Unsqueeze", unsqueeze_kernel);
  t.add("Transpose", transpose_kernel);
  t.add("Concat", concat_kernel);
  t.add("Split", split_kernel);
  t.add("Slice", slice_kernel);
  t.add("Pad", pad_kernel);
  t.add("Tile", tile_kernel);
  t.add("Expand", expand_kernel);
  t.add("ConstantOfShape", constant_of_shape_kernel);
  t.add("Range", range_kernel);
  t.add("DepthToSpace", depth_to_space_kernel);
  t.add("SpaceToDepth", space_to_depth_kernel);
  t.add("Trilu", trilu_kernel);
  t.add("CenterCropPad", center_crop_pad_kernel);
  t.add("ReverseSequence", reverse_sequence_kernel);
  t.add("Compress", compress_kernel);
  t.add("NonZero", nonzero_kernel);
  t.add("Unique", unique_kernel);
  t.add("OneHot", onehot_kernel);
}

}  // namespace tessera::kernels::ref
