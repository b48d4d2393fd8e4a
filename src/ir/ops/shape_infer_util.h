// Inference helpers shared by the reduction, shape, indexing and sequence
// schema files.
#pragma once

#include <optional>
#include <vector>

#include "ir/op_registry.h"

namespace tessera::ir::shape_infer {

using Dims = std::vector<Dim>;

// Values of constant integer input i, if known.
inline std::optional<std::vector<int64_t>> const_ints(const InferenceContext& ctx, size_t i) {
  const Tensor* t = ctx.input_constant(i);
  if (!t || !is_integer(t->dtype())) return std::nullopt;
  return t->to_int_vector();
}

inline std::optional<int64_t> rank_of(const InferenceContext& ctx, size_t i) {
  const auto& s = ctx.input_shape(i);
  if (!s) return std::nullopt;
  return int64_t(s->size());
}

// Normalizes axis against rank; an invalid axis is a model error.
inline int64_t norm_axis(const InferenceContext& ctx, int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank) ctx.fail("axis ", axis, " is out of range for rank ", rank);
  return axis < 0 ? axis + rank : axis;
}

inline Dims unknown_dims(int64_t rank) { return Dims(size_t(rank)); }

inline Dims dims_of(const Shape& s) { return Dims(s.begin(), s.end()); }

// Product of dims, or unknown.
// The product of dims [b, e): known when all are (or one is 0), a symbolic dim when it is the only unknown one
// and the others multiply to 1 (Flatten of [batch, 512, 1, 1]: [batch, 512]), else unknown.
inline Dim dims_product(const Dims& d, size_t b, size_t e) {
  int64_t p = 1;
  const Dim* sym = nullptr;
  bool unknown = false;
  for (size_t i = b; i < e; ++i) {
    if (d[i].known()) {
      p *= d[i].value;
    } else if (!d[i].symbol.empty() && !sym && !unknown) {
      sym = &d[i];
    } else {
      unknown = true;
    }
  }
  if (p == 0) return Dim(0);
  if (unknown || (sym && p != 1)) return Dim();
  return sym ? *sym : Dim(p);
}

inline void set_sequence_output(InferenceContext& ctx, size_t i, DType elem) {
  if (i >= ctx.num_outputs()) return;
  TypeInfo t;
  t.kind = TypeInfo::Kind::sequence;
  t.elem = elem;
  ctx.output(i) = t;
}

// Wraps an inference function so that outputs whose element type it could not
// tell (an input of unknown type) stay unknown instead of "tensor of undefined".
inline InferFn guarded(InferFn f) {
  if (!f) return f;
  return [f = std::move(f)](InferenceContext& ctx) {
    f(ctx);
    for (auto& t : ctx.outputs())
      if (t.kind == TypeInfo::Kind::tensor && t.elem == DType::undefined) t = TypeInfo{};
  };
}

// Registers s under `family` with a guarded inference function.
inline void add_schema(OpRegistry& r, OpSchema s, const char* family) {
  s.family = family;
  s.infer = guarded(std::move(s.infer));
  r.add(std::move(s));
}

}  // namespace tessera::ir::shape_infer
