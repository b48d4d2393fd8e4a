// Schemas and shape inference: shape family.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "ir/op_registry.h"
#include "ir/ops/shape_infer_util.h"

namespace tessera::ir {

using namespace shape_infer;
using K = Attribute::Kind;

namespace {

// The -1 of a Reshape whose input has named symbolic dims: the input's symbols less those the other output
// dims keep, and the known dims' products equal — [batch, 1, 1024] to [-1, 1024] is [batch, 1024] (a
// decoder step's rows, one per batch item), [197, batch, 768] to [-1, 768] stays unknown (197 x batch).
Dim reshape_symbol(const Dims& in, const Dims& out, size_t infer) {
  std::vector<std::string> syms;
  int64_t known_in = 1, known_out = 1;
  for (const Dim& d : in) {
    if (d.known())
      known_in *= d.value;
    else if (d.symbol.empty())
      return Dim();
    else
      syms.push_back(d.symbol);
  }
  for (size_t i = 0; i < out.size(); ++i) {
    if (i == infer) continue;
    const Dim& d = out[i];
    if (d.known()) {
      known_out *= d.value;
      continue;
    }
    auto it = d.symbol.empty() ? syms.end() : std::find(syms.begin(), syms.end(), d.symbol);
    if (it == syms.end()) return Dim();
    syms.erase(it);
  }
  if (known_in != known_out || known_in == 0) return Dim();
  if (syms.empty()) return Dim(1);
  return syms.size() == 1 ? Dim::sym(syms[0]) : Dim();
}

void infer_reshape(InferenceContext& ctx) {
  const DType t = ctx.input_dtype(0);
  auto shape = const_ints(ctx, 1);
  if (!shape) {
    const auto& s1 = ctx.input_shape(1);
    if (s1 && s1->size() == 1 && (*s1)[0].known())
      ctx.set_output(0, t, unknown_dims((*s1)[0].value));
    else
      ctx.set_output(0, t, std::nullopt);
    return;
  }
  const auto& in = ctx.input_shape(0);
  const bool allowzero = ctx.attr_int("allowzero", 0) != 0;
  Dims out;
  int64_t infer = -1;
  for (size_t i = 0; i < shape->size(); ++i) {
    const int64_t v = (*shape)[i];
    if (v == 0 && !allowzero) {
      if (in && i >= in->size()) ctx.fail("shape entry ", i, " is 0 but the input has rank ", in->size());
      out.push_back(in ? (*in)[i] : Dim());
    } else if (v == -1) {
      if (infer >= 0) ctx.fail("shape has more than one -1");
      infer = int64_t(i);
      out.push_back(Dim());
    } else {
      if (v < 0) ctx.fail("invalid shape entry ", v);
      out.push_back(Dim(v));
    }
  }
  if (infer >= 0 && in) {
    const Dim total = dims_product(*in, 0, in->size());
    int64_t known = 1;
    bool all = total.known();
    for (size_t i = 0; i < out.size() && all; ++i) {
      if (int64_t(i) == infer) continue;
      if (!out[i].known())
        all = false;
      else
        known *= out[i].value;
    }
    if (all && known != 0) {
      if (total.value % known != 0) ctx.fail("cannot infer -1 in reshape");
      out[size_t(infer)] = Dim(total.value / known);
    } else if (!total.known()) {
      out[size_t(infer)] = reshape_symbol(*in, out, size_t(infer));
    }
  }
  ctx.set_output(0, t, out);
}

void infer_shape(InferenceContext& ctx) {
  const auto r = rank_of(ctx, 0);
  if (!r) {
    ctx.set_output(0, DType::i64, Dims{Dim()});
    return;
  }
  auto clamp = [&](int64_t a) {
    if (a < 0) a += *r;
    return std::clamp<int64_t>(a, 0, *r);
  };
  const int64_t start = clamp(ctx.attr_int("start", 0));
  const int64_t end = ctx.has_attr("end") ? clamp(ctx.attr_int("end", *r)) : *r;
  ctx.set_output(0, DType::i64, Dims{Dim(std::max<int64_t>(end - start, 0))});
}

void infer_flatten(InferenceContext& ctx) {
  const DType t = ctx.input_dtype(0);
  const auto& in = ctx.input_shape(0);
  if (!in) {
    ctx.set_output(0, t, unknown_dims(2));
    return;
  }
  const int64_t r = int64_t(in->size());
  int64_t axis = ctx.attr_int("axis", 1);
  if (axis < -r || axis > r) ctx.fail("axis ", axis, " is out of range for rank ", r);
  if (axis < 0) axis += r;
  ctx.set_output(0, t, Dims{dims_product(*in, 0, size_t(axis)), dims_product(*in, size_t(axis), size_t(r))});
}

void infer_squeeze(InferenceContext& ctx) {
  const DType t = ctx.input_dtype(0);
  const auto& in = ctx.input_shape(0);
  std::optional<std::vector<int64_t>> axes;
  if (ctx.has_input(1))
    axes = const_ints(ctx, 1);
  else if (ctx.has_attr("axes"))
    axes = ctx.attr_ints("axes");
  else
    axes = std::vector<int64_t>{};
  if (!in || !axes) {
    ctx.set_output(0, t, std::nullopt);
    return;
  }
  const int64_t r = int64_t(in->size());
  std::vector<bool> drop(size_t(r), false);
  if (axes->empty() && !ctx.has_input(1) && !ctx.has_attr("axes")) {
    for (int64_t d = 0; d < r; ++d) {
      if (!(*in)[size_t(d)].known()) {
        ctx.set_output(0, t, std::nullopt);
        return;
      }
      drop[size_t(d)] = (*in)[size_t(d)].value == 1;
    }
  }
  for (int64_t a : *axes) {
    const int64_t n = norm_axis(ctx, a, r);
    const Dim& d = (*in)[size_t(n)];
    if (d.known() && d.value != 1) ctx.fail("cannot squeeze axis ", a, " of size ", d.value);
    drop[size_t(n)] = true;
  }
  Dims out;
  for (int64_t d = 0; d < r; ++d)
    if (!drop[size_t(d)]) out.push_back((*in)[size_t(d)]);
  ctx.set_output(0, t, out);
}

void infer_unsqueeze(InferenceContext& ctx) {
  const DType t = ctx.input_dtype(0);
  const auto& in = ctx.input_shape(0);
  std::optional<std::vector<int64_t>> axes = ctx.has_input(1) ? const_ints(ctx, 1) : ctx.attr_ints("axes");
  if (!in || !axes) {
    ctx.set_output(0, t, std::nullopt);
    return;
  }
  const int64_t r = int64_t(in->size() + axes->size());
  std::vector<bool> ins(size_t(r), false);
  for (int64_t a : *axes) {
    const int64_t n = norm_axis(ctx, a, r);
    if (ins[size_t(n)]) ctx.fail("axis ", a, " is repeated");
    ins[size_t(n)] = true;
  }
  Dims out;
  size_t j = 0;
  for (int64_t d = 0; d < r; ++d) out.push_back(ins[size_t(d)] ? Dim(1) : (*in)[j++]);
  ctx.set_output(0, t, out);
}

void infer_transpose(InferenceContext& ctx) {
  const DType t = ctx.input_dtype(0);
  const auto& in = ctx.input_shape(0);
  if (!in) {
    ctx.set_output(0, t, std::nullopt);
    return;
  }
  const int64_t r = int64_t(in->size());
  std::vector<int64_t> perm = ctx.attr_ints("perm");
  if (!ctx.has_attr("perm")) {
    perm.resize(static_cast<size_t>(r));
    for (int64_t i = 0; i < r; ++i) perm[size_t(i)] = r - 1 - i;
  }
  if (int64_t(perm.size()) != r) ctx.fail("perm has ", perm.size(), " entries for rank ", r);
  Dims out;
  for (int64_t p : perm) out.push_back((*in)[size_t(norm_axis(ctx, p, r))]);
  ctx.set_output(0, t, out);
}

void infer_concat(InferenceContext& ctx) {
  const DType t = ctx.input_dtype(0);
  std::optional<Dims> out;
  int64_t axis = 0;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    const auto& s = ctx.input_shape(i);
    if (!s) {
      ctx.set_output(0, t, std::nullopt);
      return;
    }
    if (!out) {
      out = *s;
      axis = norm_axis(ctx, ctx.attr_int("axis", 0), int64_t(s->size()));
      continue;
    }
    if (s->size() != out->size()) ctx.fail("Concat inputs differ in rank");
    Dim& a = (*out)[size_t(axis)];
    const Dim& b = (*s)[size_t(axis)];
    a = (a.known() && b.known()) ? Dim(a.value + b.value) : Dim();
    for (size_t d = 0; d < s->size(); ++d)
      if (int64_t(d) != axis && !(*out)[d].known()) (*out)[d] = (*s)[d];
  }
  ctx.set_output(0, t, out);
}

void infer_split(InferenceContext& ctx) {
  const DType t = ctx.input_dtype(0);
  const auto& in = ctx.input_shape(0);
  const size_t n = ctx.num_outputs();
  if (!in) {
    for (size_t i = 0; i < n; ++i) ctx.set_output(i, t, std::nullopt);
    return;
  }
  const int64_t axis = norm_axis(ctx, ctx.attr_int("axis", 0), int64_t(in->size()));
  const Dim len = (*in)[size_t(axis)];
  std::optional<std::vector<int64_t>> sizes;
  if (ctx.has_input(1))
    sizes = const_ints(ctx, 1);
  else if (ctx.has_attr("split"))
    sizes = ctx.attr_ints("split");
  else if (len.known()) {
    std::vector<int64_t> v;
    if (ctx.has_attr("num_outputs")) {
      const int64_t k = std::max<int64_t>(int64_t(n), 1), chunk = (len.value + k - 1) / k;
      for (size_t i = 0; i < n; ++i)
        v.push_back(std::clamp<int64_t>(len.value - int64_t(i) * chunk, 0, chunk));
    } else if (n > 0 && len.value % int64_t(n) == 0) {
      v.assign(n, len.value / int64_t(n));
    }
    if (v.size() == n) sizes = v;
  }
  for (size_t i = 0; i < n; ++i) {
    Dims d = *in;
    d[size_t(axis)] = (sizes && sizes->size() == n) ? Dim((*sizes)[i]) : Dim();
    ctx.set_output(i, t, d);
  }
}

void infer_slice(InferenceContext& ctx) {
  const DType t = ctx.input_dtype(0);
  const auto& in = ctx.input_shape(0);
  if (!in) {
    ctx.set_output(0, t, std::nullopt);
    return;
  }
  const int64_t r = int64_t(in->size());
  auto starts = const_ints(ctx, 1), ends = const_ints(ctx, 2);
  std::optional<std::vector<int64_t>> axes, steps;
  if (ctx.has_input(3)) axes = const_ints(ctx, 3);
  if (ctx.has_input(4)) steps = const_ints(ctx, 4);
  if (!starts || !ends || (ctx.has_input(3) && !axes) || (ctx.has_input(4) && !steps)) {
    // Axes not being sliced keep their size, but we do not know which: all unknown.
    ctx.set_output(0, t, unknown_dims(r));
    return;
  }
  if (!axes) {
    axes = std::vector<int64_t>(starts->size());
    std::iota(axes->begin(), axes->end(), 0);
  }
  if (!steps) steps = std::vector<int64_t>(starts->size(), 1);
  if (ends->size() != starts->size() || axes->size() != starts->size() || steps->size() != starts->size())
    ctx.fail("starts, ends, axes and steps must have the same length");
  Dims out = *in;
  for (size_t i = 0; i < starts->size(); ++i) {
    const int64_t a = norm_axis(ctx, (*axes)[i], r);
    const int64_t step = (*steps)[i];
    if (step == 0) ctx.fail("slice step cannot be 0");
    if (!(*in)[size_t(a)].known()) {
      out[size_t(a)] = Dim();
      continue;
    }
    const int64_t dim = (*in)[size_t(a)].value;
    int64_t s = (*starts)[i], e = (*ends)[i];
    if (s < 0) s += dim;
    if (e < 0) e += dim;
    int64_t n = 0;
    if (dim > 0) {
      if (step > 0) {
        s = std::clamp<int64_t>(s, 0, dim);
        e = std::clamp<int64_t>(e, 0, dim);
        if (e > s) n = (e - s - 1) / step + 1;
      } else {
        s = std::clamp<int64_t>(s, 0, dim - 1);
        e = std::clamp<int64_t>(e, -1, dim - 1);
        if (s > e) n = (s - e - 1) / (step == INT64_MIN ? INT64_MAX : -step) + 1;
      }
    }
    out[size_t(a)] = Dim(std::max<int64_t>(n, 0));
  }
  ctx.set_output(0, t, out);
}

void infer_pad(InferenceContext& ctx) {
  const DType t = ctx.input_dtype(0);
  const auto& in = ctx.input_shape(0);
  if (!in) {
    ctx.set_output(0, t, std::nullopt);
    return;
  }
  const int64_t r = int64_t(in->size());
  auto pads = const_ints(ctx, 1);
  std::optional<std::vector<int64_t>> axes;
  if (ctx.has_input(3))
    axes = const_ints(ctx, 3);
  else {
    axes = std::vector<int64_t>(size_t(r));
    std::iota(axes->begin(), axes->end(), 0);
  }
  if (!pads || !axes) {
    ctx.set_output(0, t, unknown_dims(r));
    return;
  }
  if (pads->size() != 2 * axes->size())
    ctx.fail("pads has ", pads->size(), " entries for ", axes->size(), " axes");
  Dims out = *in;
  for (size_t i = 0; i < axes->size(); ++i) {
    const int64_t a = norm_axis(ctx, (*axes)[i], r);
    if (out[size_t(a)].known()) {
      const int64_t v = out[size_t(a)].value + (*pads)[i] + (*pads)[i + axes->size()];
      if (v < 0) ctx.fail("pads make axis ", a, " negative");
      out[size_t(a)] = Dim(v);
    }
  }
  ctx.set_output(0, t, out);
}

void infer_tile(InferenceContext& ctx) {
  const DType t = ctx.input_dtype(0);
  const auto& in = ctx.input_shape(0);
  if (!in) {
    ctx.set_output(0, t, std::nullopt);
    return;
  }
  auto reps = const_ints(ctx, 1);
  Dims out = *in;
  if (reps && reps->size() != in->size())
    ctx.fail("repeats has ", reps->size(), " entries for rank ", in->size());
  for (size_t d = 0; d < out.size(); ++d)
    out[d] = (reps && out[d].known()) ? Dim(out[d].value * (*reps)[d]) : Dim();
  ctx.set_output(0, t, out);
}

void infer_expand(InferenceContext& ctx) {
  const DType t = ctx.input_dtype(0);
  auto shape = const_ints(ctx, 1);
  if (!shape) {
    ctx.set_output(0, t, std::nullopt);
    return;
  }
  ctx.set_output(0, t, broadcast_shapes(ctx.input_shape(0), dims_of(*shape)));
}

void infer_constant_of_shape(InferenceContext& ctx) {
  DType t = DType::f32;
  if (const Attribute* v = ctx.node().attr("value"); v && v->kind == K::t) t = v->t.dtype();
  auto shape = const_ints(ctx, 0);
  if (shape) {
    ctx.set_output(0, t, dims_of(*shape));
    return;
  }
  const auto& s0 = ctx.input_shape(0);
  if (s0 && s0->size() == 1 && (*s0)[0].known())
    ctx.set_output(0, t, unknown_dims((*s0)[0].value));
  else
    ctx.set_output(0, t, std::nullopt);
}

void infer_range(InferenceContext& ctx) {
  const DType t = ctx.input_dtype(0);
  const Tensor *s = ctx.input_constant(0), *l = ctx.input_constant(1), *d = ctx.input_constant(2);
  if (s && l && d && s->numel() == 1 && l->numel() == 1 && d->numel() == 1 && d->at_double(0) != 0) {
    const double n = std::ceil((l->at_double(0) - s->at_double(0)) / d->at_double(0));
    if (std::isfinite(n) && n < double(kMaxElements)) {
      ctx.set_output(0, t, Dims{Dim(int64_t(std::max(n, 0.0)))});
      return;
    }
  }
  ctx.set_output(0, t, Dims{Dim()});
}

void infer_depth_space(InferenceContext& ctx, bool to_space) {
  const DType t = ctx.input_dtype(0);
  const auto& in = ctx.input_shape(0);
  const int64_t b = ctx.attr_int("blocksize", 0);
  if (b <= 0 || b > (1 << 20)) ctx.fail("blocksize must be in [1, 2^20], got ", b);
  if (!in) {
    ctx.set_output(0, t, unknown_dims(4));
    return;
  }
  if (in->size() != 4) ctx.fail("input must be 4-D");
  Dims out = *in;
  auto mul = [](Dim d, int64_t f) { return d.known() ? Dim(d.value * f) : Dim(); };
  auto div = [](Dim d, int64_t f) { return d.known() ? Dim(d.value / f) : Dim(); };
  if (to_space) {
    out[1] = div(out[1], b * b);
    out[2] = mul(out[2], b);
    out[3] = mul(out[3], b);
  } else {
    out[1] = mul(out[1], b * b);
    out[2] = div(out[2], b);
    out[3] = div(out[3], b);
  }
  ctx.set_output(0, t, out);
}

void infer_center_crop_pad(InferenceContext& ctx) {
  const DType t = ctx.input_dtype(0);
  const auto& in = ctx.input_shape(0);
  auto shape = const_ints(ctx, 1);
  if (!in) {
    ctx.set_output(0, t, std::nullopt);
    return;
  }
  const int64_t r = int64_t(in->size());
  std::vector<int64_t> axes = ctx.attr_ints("axes");
  if (axes.empty()) {
    axes.resize(size_t(r));
    std::iota(axes.begin(), axes.end(), 0);
  }
  Dims out = *in;
  for (size_t i = 0; i < axes.size(); ++i) {
    const int64_t a = norm_axis(ctx, axes[i], r);
    out[size_t(a)] = (shape && i < shape->size()) ? Dim((*shape)[i]) : Dim();
  }
  ctx.set_output(0, t, out);
}

void infer_compress(InferenceContext& ctx) {
  const DType t = ctx.input_dtype(0);
  const auto& in = ctx.input_shape(0);
  if (!ctx.has_attr("axis")) {
    ctx.set_output(0, t, Dims{Dim()});
    return;
  }
  if (!in) {
    ctx.set_output(0, t, std::nullopt);
    return;
  }
  Dims out = *in;
  out[size_t(norm_axis(ctx, ctx.attr_int("axis", 0), int64_t(in->size())))] = Dim();
  ctx.set_output(0, t, out);
}

void infer_nonzero(InferenceContext& ctx) {
  const auto r = rank_of(ctx, 0);
  ctx.set_output(0, DType::i64, Dims{r ? Dim(*r) : Dim(), Dim()});
}

void infer_unique(InferenceContext& ctx) {
  const DType t = ctx.input_dtype(0);
  const auto& in = ctx.input_shape(0);
  if (!ctx.has_attr("axis")) {
    ctx.set_output(0, t, Dims{Dim()});
  } else if (in) {
    Dims out = *in;
    out[size_t(norm_axis(ctx, ctx.attr_int("axis", 0), int64_t(in->size())))] = Dim();
    ctx.set_output(0, t, out);
  } else {
    ctx.set_output(0, t, std::nullopt);
  }
  Dim len;
  if (in) {
    if (!ctx.has_attr("axis"))
      len = dims_product(*in, 0, in->size());
    else
      len = (*in)[size_t(norm_axis(ctx, ctx.attr_int("axis", 0), int64_t(in->size())))];
  }
  ctx.set_output(1, DType::i64, Dims{Dim()});
  ctx.set_output(2, DType::i64, Dims{len});
  ctx.set_output(3, DType::i64, Dims{Dim()});
}

void infer_onehot(InferenceContext& ctx) {
  const DType t = ctx.input_dtype(2);
  const auto& in = ctx.input_shape(0);
  if (!in) {
    ctx.set_output(0, t, std::nullopt);
    return;
  }
  const int64_t r = int64_t(in->size()) + 1;
  const int64_t axis = norm_axis(ctx, ctx.attr_int("axis", -1), r);
  Dim depth;
  if (const Tensor* d = ctx.input_constant(1); d && d->numel() == 1) {
    const double v = d->at_double(0);
    if (std::isfinite(v) && v > 0 && v < double(kMaxElements)) depth = Dim(int64_t(v));
  }
  Dims out = *in;
  out.insert(out.begin() + axis, depth);
  ctx.set_output(0, t, out);
}

void add(OpRegistry& r, OpSchema s) {
  add_schema(r, std::move(s), "shape");
}

}  // namespace

void register_shape_schemas(OpRegistry& r) {
  add(r, make_schema("Reshape", 2, 2, 1, 1, infer_reshape, {{"allowzero", K::i}}));
  add(r, make_schema("Shape", 1, 1, 1, 1, infer_shape, {{"start", K::i}, {"end", K::i}}));
  add(r, make_schema("Size", 1, 1, 1, 1, [](InferenceContext& c) { c.set_output(0, DType::i64, Dims{}); }));
  add(r, make_schema("Flatten", 1, 1, 1, 1, infer_flatten, {{"axis", K::i}}));
  add(r, make_schema("Squeeze", 1, 2, 1, 1, infer_squeeze, {{"axes", K::ints}}));
  add(r, make_schema("Unsqueeze", 1, 2, 1, 1, infer_unsqueeze, {{"axes", K::ints}}));
  add(r, make_schema("Transpose", 1, 1, 1, 1, infer_transpose, {{"perm", K::ints}}));
  add(r, make_schema("Concat", 1, -1, 1, 1, infer_concat, {{"axis", K::i}}));
  add(r, make_schema("Split", 1, 2, 1, -1, infer_split,
                     {{"axis", K::i}, {"num_outputs", K::i}, {"split", K::ints}}));
  add(r, make_schema("Slice", 3, 5, 1, 1, infer_slice));
  add(r, make_schema("Pad", 2, 4, 1, 1, infer_pad, {{"mode", K::s}}));
  add(r, make_schema("Tile", 2, 2, 1, 1, infer_tile));
  add(r, make_schema("Expand", 2, 2, 1, 1, infer_expand));
  add(r, make_schema("ConstantOfShape", 1, 1, 1, 1, infer_constant_of_shape, {{"value", K::t}}));
  add(r, make_schema("Range", 3, 3, 1, 1, infer_range));
  add(r, make_schema("DepthToSpace", 1, 1, 1, 1, [](InferenceContext& c) { infer_depth_space(c, true); },
                     {{"blocksize", K::i}, {"mode", K::s}}));
  add(r, make_schema("SpaceToDepth", 1, 1, 1, 1, [](InferenceContext& c) { infer_depth_space(c, false); },
                     {{"blocksize", K::i}}));
  add(r, make_schema("Trilu", 1, 2, 1, 1, infer_same_as_input0, {{"upper", K::i}}));
  add(r, make_schema("CenterCropPad", 2, 2, 1, 1, infer_center_crop_pad, {{"axes", K::ints}}));
  add(r, make_schema("ReverseSequence", 2, 2, 1, 1, infer_same_as_input0,
                     {{"batch_axis", K::i}, {"time_axis", K::i}}));
  add(r, make_schema("Compress", 2, 2, 1, 1, infer_compress, {{"axis", K::i}}));
  add(r, make_schema("NonZero", 1, 1, 1, 1, infer_nonzero));
  add(r, make_schema("Unique", 1, 1, 1, 4, infer_unique, {{"sorted", K::i}, {"axis", K::i}}));
  add(r, make_schema("OneHot", 3, 3, 1, 1, infer_onehot, {{"axis", K::i}}));
}

}  // namespace tessera::ir
