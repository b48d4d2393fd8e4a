// Reference kernels: sequence family (SequenceConstruct, SequenceEmpty,
// SequenceAt, SequenceInsert, SequenceErase, SequenceLength, SplitToSequence,
// ConcatFromSequence, SequenceMap). Sequences flow as DataValue of kind
// sequence; their tensors are shared, never modified in place.
#include <algorithm>

#include "core/dtype_attr.h"
#include "kernels/ref/registry.h"
#include "kernels/ref/shape_util.h"

namespace tessera::kernels::ref {

using namespace shape_util;

namespace {

const DataValue& seq_input(const KernelContext& ctx, size_t i) {
  const DataValue* v = ctx.input_value(i);
  if (!v || !v->is_sequence()) ctx.fail(ErrorCode::invalid_argument, "input ", i, " must be a sequence");
  return *v;
}

int64_t scalar_int(const KernelContext& ctx, size_t i, const char* what) {
  const Tensor& t = ctx.required_input(i);
  ctx.check((t.dtype() == DType::i32 || t.dtype() == DType::i64) && t.numel() == 1, what,
            " must be an int32/int64 scalar, got ", t.text());
  return t.at_int(0);
}

DType seq_elem(const DataValue& v) {
  return v.sequence.empty() ? v.elem_type : v.sequence.front().dtype();
}

void sequence_construct(KernelContext& ctx) {
  TensorSequence s;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    const Tensor& t = ctx.required_input(i);
    ctx.check(s.empty() || t.dtype() == s.front().dtype(), "all inputs must share one element type");
    s.push_back(t);
  }
  const DType e = s.empty() ? DType::undefined : s.front().dtype();
  ctx.set_output(0, DataValue::make_sequence(std::move(s), e));
}

void sequence_empty(KernelContext& ctx) {
  const DType e = dtype_from_type_code(ctx.attr_int("dtype", 1));
  ctx.check(e != DType::undefined, "unknown dtype code ", ctx.attr_int("dtype", 1));
  ctx.set_output(0, DataValue::make_sequence({}, e));
}

void sequence_at(KernelContext& ctx) {
  const DataValue& s = seq_input(ctx, 0);
  const int64_t n = int64_t(s.sequence.size());
  int64_t p = scalar_int(ctx, 1, "position");
  ctx.check(p >= -n && p < n, "position ", p, " is out of range for a sequence of length ", n);
  if (p < 0) p += n;
  ctx.set_output(0, DataValue(s.sequence[size_t(p)]));
}

void sequence_insert(KernelContext& ctx) {
  const DataValue& s = seq_input(ctx, 0);
  const Tensor& t = ctx.required_input(1);
  const DType e = seq_elem(s);
  ctx.check(e == DType::undefined || e == t.dtype(), "cannot insert ", dtype_name(t.dtype()),
            " into a sequence of ", dtype_name(e));
  const int64_t n = int64_t(s.sequence.size());
  int64_t p = n;
  if (ctx.has_input(2)) {
    p = scalar_int(ctx, 2, "position");
    ctx.check(p >= -n && p <= n, "position ", p, " is out of range for a sequence of length ", n);
    if (p < 0) p += n;
  }
  TensorSequence out = s.sequence;
  out.insert(out.begin() + p, t);
  ctx.set_output(0, DataValue::make_sequence(std::move(out), t.dtype()));
}

void sequence_erase(KernelContext& ctx) {
  const DataValue& s = seq_input(ctx, 0);
  const int64_t n = int64_t(s.sequence.size());
  int64_t p = n - 1;
  if (ctx.has_input(1)) {
    p = scalar_int(ctx, 1, "position");
    if (p < 0) p += n;
  }
  ctx.check(p >= 0 && p < n, "position is out of range for a sequence of length ", n);
  TensorSequence out = s.sequence;
  out.erase(out.begin() + p);
  ctx.set_output(0, DataValue::make_sequence(std::move(out), seq_elem(s)));
}

void sequence_length(KernelContext& ctx) {
  const DataValue& s = seq_input(ctx, 0);
  ctx.output(0, DType::i64, {}).data<int64_t>()[0] = int64_t(s.sequence.size());
}

// A copy of x restricted to [start, start+len) along axis, optionally without that axis.
Tensor slice_axis(const Tensor& x, int64_t axis, int64_t start, int64_t len, bool drop_axis) {
  Shape s = x.shape();
  s[size_t(axis)] = len;
  Tensor out(x.dtype(), s);
  const int64_t inner = dims_product(x.shape(), axis + 1, x.rank());
  strided_gather_any(x, start * inner, contiguous_strides(x.shape()), out);
  if (drop_axis) {
    s.erase(s.begin() + axis);
    out = out.reshape(s);
  }
  return out;
}

void split_to_sequence(KernelContext& ctx) {
  const Tensor x = ctx.required_input(0).contiguous();
  const int64_t r = x.rank();
  ctx.check(r >= 1, "SplitToSequence needs an input of rank >= 1");
  const int64_t axis = normalize_axis(ctx, ctx.attr_int("axis", 0), r);
  const int64_t len = x.dim(axis);
  TensorSequence out;
  if (!ctx.has_input(1)) {
    const bool keepdims = ctx.attr_int("keepdims", 1) != 0;
    for (int64_t i = 0; i < len; ++i) out.push_back(slice_axis(x, axis, i, 1, !keepdims));
  } else {
    const Tensor& sp = *ctx.input(1);
    ctx.check(is_integer(sp.dtype()) && sp.rank() <= 1, "split must be an integer scalar or 1-D tensor");
    std::vector<int64_t> sizes = sp.to_int_vector();
    if (sp.rank() == 0) {
      const int64_t c = sizes[0];
      ctx.check(c > 0, "split must be positive, got ", c);
      sizes.clear();
      for (int64_t s = 0; s < len; s += c) sizes.push_back(std::min(c, len - s));
    } else {
      int64_t sum = 0;
      for (int64_t v : sizes) {
        ctx.check(v >= 0, "negative split size ", v);
        sum += v;
      }
      ctx.check(sum == len, "split sizes sum to ", sum, ", but the axis has size ", len);
    }
    int64_t start = 0;
    for (int64_t v : sizes) {
      out.push_back(slice_axis(x, axis, start, v, false));
      start += v;
    }
  }
  ctx.set_output(0, DataValue::make_sequence(std::move(out), x.dtype()));
}

void concat_from_sequence(KernelContext& ctx) {
  const DataValue& s = seq_input(ctx, 0);
  ctx.check(!s.sequence.empty(), "cannot concatenate an empty sequence");
  const bool new_axis = ctx.attr_int("new_axis", 0) != 0;
  const Tensor& first = s.sequence.front();
  const int64_t r = first.rank();
  const int64_t out_rank = new_axis ? r + 1 : r;
  ctx.check(out_rank >= 1, "cannot concatenate scalars without new_axis");
  const int64_t axis = normalize_axis(ctx, ctx.required_attr_int("axis"), out_rank);
  std::vector<Tensor> parts;
  Shape out_shape = first.shape();
  if (new_axis)
    out_shape.insert(out_shape.begin() + axis, 0);
  else
    out_shape[size_t(axis)] = 0;
  for (const Tensor& t0 : s.sequence) {
    ctx.check(t0.dtype() == first.dtype() && t0.rank() == r, "sequence tensors differ in type or rank");
    Tensor t = t0.contiguous();
    if (new_axis) {
      Shape ts = t.shape();
      ts.insert(ts.begin() + axis, 1);
      t = t.reshape(ts);
    }
    for (int64_t d = 0; d < out_rank; ++d)
      ctx.check(d == axis || t.dim(d) == out_shape[size_t(d)], "sequence tensor ", t0.text(),
                " does not match ", first.text());
    out_shape[size_t(axis)] += t.dim(axis);
    parts.push_back(t);
  }
  Tensor& out = ctx.output(0, first.dtype(), out_shape);
  const int64_t outer = dims_product(out_shape, 0, axis), inner = dims_product(out_shape, axis + 1, out_rank);
  const int64_t out_row = out_shape[size_t(axis)] * inner;
  dispatch_dtype(first.dtype(), [&]<typename T>() {
    T* dst = out.data<T>();
    int64_t col = 0;
    for (const Tensor& t : parts) {
      const T* src = t.data<T>();
      const int64_t row = t.dim(axis) * inner;
      for (int64_t o = 0; o < outer; ++o)
        std::copy(src + o * row, src + (o + 1) * row, dst + o * out_row + col);
      col += row;
    }
  });
}

void sequence_map(KernelContext& ctx) {
  const Attribute* body = ctx.attr("body");
  ctx.check(body && body->kind == Attribute::Kind::g && body->g,
            "SequenceMap needs a 'body' graph attribute");
  const DataValue& s0 = seq_input(ctx, 0);
  const size_t n = s0.sequence.size();
  for (size_t i = 1; i < ctx.num_inputs(); ++i) {
    const DataValue* v = ctx.input_value(i);
    ctx.check(v != nullptr, "input ", i, " is missing");
    if (v->is_sequence())
      ctx.check(v->sequence.size() == n, "input sequence ", i, " has length ", v->sequence.size(),
                ", expected ", n);
  }
  std::vector<TensorSequence> outs(ctx.num_outputs());
  for (size_t k = 0; k < n; ++k) {
    std::vector<DataValue> in;
    in.emplace_back(s0.sequence[k]);
    for (size_t i = 1; i < ctx.num_inputs(); ++i) {
      const DataValue* v = ctx.input_value(i);
      in.push_back(v->is_sequence() ? DataValue(v->sequence[k]) : *v);
    }
    std::vector<DataValue> res = ctx.run_subgraph(*body->g, in);
    ctx.check(res.size() == outs.size(), "body returned ", res.size(), " values, expected ", outs.size());
    for (size_t j = 0; j < res.size(); ++j) {
      ctx.check(res[j].is_tensor(), "body output ", j, " is not a tensor");
      outs[j].push_back(res[j].tensor);
    }
  }
  for (size_t j = 0; j < outs.size(); ++j) {
    const DType e = outs[j].empty() ? DType::undefined : outs[j].front().dtype();
    ctx.set_output(j, DataValue::make_sequence(std::move(outs[j]), e));
  }
}

}  // namespace

void register_sequence_kernels(KernelTable& t) {
  t.add("SequenceConstruct", sequence_construct);
  t.add("SequenceEmpty", sequence_empty);
  t.add("SequenceAt", sequence_at);
  t.add("SequenceInsert", sequence_insert);
  t.add("SequenceErase", sequence_erase);
  t.add("SequenceLength", sequence_length);
  t.add("SplitToSequence", split_to_sequence);
  t.add("ConcatFromSequence", concat_from_sequence);
  t.add("SequenceMap", sequence_map);
}

}  // namespace tessera::kernels::ref
