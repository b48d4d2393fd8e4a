// Binds the tuned f32 elementwise / softmax / layer-norm / transpose kernels
// (src/kernels/x86/eltwise.h) to graph nodes. Each kernel checks at run time
// what it covers (f32, contiguous layouts, supported broadcasts and axes) and
// hands everything else to the reference kernel.
#include <string>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "kernels/ref/registry.h"
#include "kernels/x86/eltwise.h"
#include "kernels/x86/eltwise_program.h"

namespace tessera::backends::cpu {

namespace {

namespace x86 = kernels::x86;

void run_ref(KernelContext& ctx) {
  run_reference(ctx, "");
}

bool is_f32(const Tensor* t) {
  return t && t->dtype() == DType::f32;
}

template <x86::UnaryOp Op>
void unary_x86(KernelContext& ctx) {
  const Tensor* x0 = ctx.input(0);
  if (ctx.num_inputs() != 1 || !is_f32(x0)) return run_ref(ctx);
  const Tensor x = x0->contiguous();
  Tensor& y = ctx.output_for_overwrite(0, DType::f32, x.shape());
  x86::unary_f32(Op, x.data<float>(), y.data<float>(), x.numel(), ctx.pool());
}

// Gelu (opset 20), approximate = none or tanh: one vectorized pass.
void gelu_x86(KernelContext& ctx) {
  const std::string approx = ctx.attr_string("approximate", "none");
  if (approx == "none") return unary_x86<x86::UnaryOp::gelu_erf>(ctx);
  if (approx == "tanh") return unary_x86<x86::UnaryOp::gelu_tanh>(ctx);
  run_ref(ctx);  // reports the bad attribute
}

// How `t` (right-aligned against `out`) is read over out viewed as [outer, inner]
// where inner = prod(out[split:]): full, a row (only the trailing dims from
// `split` on, leading ones 1), a column (only dims before `split`), or a scalar.
bool classify(const Shape& t, const Shape& out, size_t split, x86::Bcast& kind) {
  const size_t r = out.size(), off = r - t.size();
  bool eq_lead = true, ones_lead = true, eq_trail = true, ones_trail = true;
  for (size_t j = 0; j < r; ++j) {
    const int64_t td = j < off ? 1 : t[j - off];
    if (j < split) {
      eq_lead = eq_lead && td == out[j];
      ones_lead = ones_lead && td == 1;
    } else {
      eq_trail = eq_trail && td == out[j];
      ones_trail = ones_trail && td == 1;
    }
  }
  if (eq_lead && eq_trail)
    kind = x86::Bcast::full;
  else if (ones_lead && eq_trail)
    kind = x86::Bcast::row;
  else if (eq_lead && ones_trail)
    kind = x86::Bcast::col;
  else if (ones_lead && ones_trail)
    kind = x86::Bcast::scalar;
  else
    return false;
  return true;
}

// The numpy broadcast of `shapes` viewed as [outer, inner] so that every input is full, a row, a column
// or a scalar of it (the largest inner that works); false if they do not broadcast or no split fits.
// shape_only: just whether they broadcast, and to what (out).
bool broadcast_view(const std::vector<const Shape*>& shapes, Shape& out, std::vector<x86::Bcast>& kinds,
                    int64_t& outer, int64_t& inner, bool shape_only = false) {
  out.clear();
  for (const Shape* s : shapes) {
    if (s->size() > out.size()) out.insert(out.begin(), s->size() - out.size(), 1);
    for (size_t j = 0; j < s->size(); ++j) {
      int64_t& o = out[out.size() - s->size() + j];
      const int64_t d = (*s)[j];
      if (d != o && d != 1 && o != 1) return false;
      if (o == 1) o = d;
    }
  }
  if (shape_only) return true;  // the shapes broadcast; out is their broadcast
  kinds.assign(shapes.size(), x86::Bcast::full);
  for (size_t split = 0; split <= out.size(); ++split) {
    bool fits = true;
    for (size_t i = 0; i < shapes.size() && fits; ++i) fits = classify(*shapes[i], out, split, kinds[i]);
    if (!fits) continue;
    outer = inner = 1;
    for (size_t j = 0; j < out.size(); ++j) (j < split ? outer : inner) *= out[j];
    return true;
  }
  return false;
}

template <x86::BinaryOp Op>
void binary_x86(KernelContext& ctx) {
  const Tensor* a0 = ctx.input(0);
  const Tensor* b0 = ctx.input(1);
  if (ctx.num_inputs() != 2 || !is_f32(a0) || !is_f32(b0)) return run_ref(ctx);
  // Broadcast shape (numpy rules); anything unusual goes to the reference kernel, which reports errors.
  Shape out;
  std::vector<x86::Bcast> kinds;
  int64_t outer = 1, inner = 1;
  if (!broadcast_view({&a0->shape(), &b0->shape()}, out, kinds, outer, inner)) return run_ref(ctx);
  const x86::Bcast ka = kinds[0], kb = kinds[1];
  const Tensor a = a0->contiguous(), b = b0->contiguous();
  Tensor& y = ctx.output_for_overwrite(0, DType::f32, out);
  if (y.numel() == 0) return;
  x86::binary_f32(Op, a.data<float>(), ka, b.data<float>(), kb, y.data<float>(), outer, inner, ctx.pool());
}

// Where(c, x, y) over 4-byte values on the blend kernel; other types and views the reference takes.
void where_x86(KernelContext& ctx) {
  const Tensor* c0 = ctx.input(0);
  const Tensor* x0 = ctx.input(1);
  const Tensor* y0 = ctx.input(2);
  if (!c0 || !x0 || !y0 || c0->dtype() != DType::boolean || x0->dtype() != y0->dtype() ||
      dtype_size(x0->dtype()) != 4 || x0->dtype() == DType::string)
    return run_ref(ctx);
  Shape out;
  std::vector<x86::Bcast> kinds;
  int64_t outer = 1, inner = 1;
  if (!broadcast_view({&c0->shape(), &x0->shape(), &y0->shape()}, out, kinds, outer, inner))
    return run_ref(ctx);
  const Tensor c = c0->contiguous(), x = x0->contiguous(), y = y0->contiguous();
  Tensor& z = ctx.output_for_overwrite(0, x.dtype(), out);
  if (z.numel() == 0) return;
  x86::where_32(c.data<bool>(), kinds[0], static_cast<const uint32_t*>(x.raw_data()), kinds[1],
                static_cast<const uint32_t*>(y.raw_data()), kinds[2], static_cast<uint32_t*>(z.raw_data()),
                outer, inner, ctx.pool());
}

int64_t prod(const Shape& s, size_t b, size_t e) {
  int64_t p = 1;
  for (size_t i = b; i < e; ++i) p *= s[i];
  return p;
}

template <bool LOG>
void softmax_x86(KernelContext& ctx) {
  const Tensor* x0 = ctx.input(0);
  if (!is_f32(x0) || x0->rank() == 0) return run_ref(ctx);
  const int64_t r = x0->rank();
  const bool legacy = ctx.opset() > 0 && ctx.opset() < 13;
  int64_t axis = ctx.attr_int("axis", legacy ? 1 : -1);
  if (axis < -r || axis >= r) return run_ref(ctx);  // the reference reports the error
  if (axis < 0) axis += r;
  // Opset >= 13: along the one axis (rows along the last). Opset < 13: [prod(:axis), prod(axis:)] for any
  // axis.
  const Tensor x = x0->contiguous();
  const bool strided = !legacy && axis != r - 1 && prod(x.shape(), size_t(axis + 1), size_t(r)) > 1;
  const int64_t len = strided ? x.dim(axis) : prod(x.shape(), size_t(axis), size_t(r));
  Tensor& y = ctx.output_for_overwrite(0, DType::f32, x.shape());
  if (x.numel() == 0 || len == 0) return;
  if (strided) {
    // Another axis (WaveNet's softmax over the channels of [1, 256, T]): x as [outer, len, inner] turned to
    // [outer, inner, len], rows of len as for the last axis, and back — the reference walked the strided
    // rows one element at a time (17 ms for 256 x 4000; onnxruntime transposes the same way).
    const int64_t outer = prod(x.shape(), 0, size_t(axis)),
                  inner = prod(x.shape(), size_t(axis + 1), size_t(r));
    Tensor rows(DType::f32, {outer, inner, len}), out(DType::f32, {outer, inner, len});
    x86::transpose_f32(x.data<float>(), rows.data<float>(), {outer, len, inner}, {0, 2, 1}, ctx.pool());
    (LOG ? x86::log_softmax_f32 : x86::softmax_f32)(rows.data<float>(), out.data<float>(), outer * inner, len,
                                                    ctx.pool());
    x86::transpose_f32(out.data<float>(), y.data<float>(), {outer, inner, len}, {0, 2, 1}, ctx.pool());
    return;
  }
  (LOG ? x86::log_softmax_f32 : x86::softmax_f32)(x.data<float>(), y.data<float>(), x.numel() / len, len,
                                                  ctx.pool());
}

void layernorm_x86(KernelContext& ctx) {
  const Tensor* x0 = ctx.input(0);
  const Tensor* s0 = ctx.input(1);
  const Tensor* b0 = ctx.input(2);
  if (!is_f32(x0) || !is_f32(s0) || (ctx.has_input(2) && !is_f32(b0)) || x0->rank() == 0) return run_ref(ctx);
  for (size_t i = 1; i < ctx.num_outputs(); ++i)
    if (ctx.output_requested(i)) return run_ref(ctx);  // Mean / InvStdDev outputs
  if (ctx.attr_int("stash_type", 1) != 1) return run_ref(ctx);
  const int64_t r = x0->rank();
  int64_t axis = ctx.attr_int("axis", -1);
  if (axis < -r || axis >= r) return run_ref(ctx);
  if (axis < 0) axis += r;
  const int64_t len = prod(x0->shape(), size_t(axis), size_t(r));
  if (len == 0 || s0->numel() != len || (b0 && b0->numel() != len)) return run_ref(ctx);
  const Tensor x = x0->contiguous(), s = s0->contiguous();
  Tensor b;
  if (b0) b = b0->contiguous();
  Tensor& y = ctx.output_for_overwrite(0, DType::f32, x.shape());
  if (x.numel() == 0) return;
  x86::layernorm_f32(x.data<float>(), s.data<float>(), b0 ? b.data<float>() : nullptr, y.data<float>(),
                     x.numel() / len, len, ctx.attr_float("epsilon", 1e-5f), ctx.pool());
}

// RMSNormalization (opset 23, made by fuse_rmsnorm) with a scale of the normalized shape's size; the rest
// (a broadcast scale, stash_type other than float) to the reference.
void rmsnorm_x86(KernelContext& ctx) {
  const Tensor* x0 = ctx.input(0);
  const Tensor* s0 = ctx.input(1);
  if (!is_f32(x0) || !is_f32(s0) || x0->rank() == 0 || ctx.attr_int("stash_type", 1) != 1)
    return run_ref(ctx);
  const int64_t r = x0->rank();
  int64_t axis = ctx.attr_int("axis", -1);
  if (axis < -r || axis >= r) return run_ref(ctx);
  if (axis < 0) axis += r;
  const int64_t len = prod(x0->shape(), size_t(axis), size_t(r));
  if (len == 0 || s0->numel() != len || s0->rank() > r - axis) return run_ref(ctx);
  const Tensor x = x0->contiguous(), s = s0->contiguous();
  Tensor& y = ctx.output_for_overwrite(0, DType::f32, x.shape());
  if (x.numel() == 0) return;
  x86::rmsnorm_f32(x.data<float>(), s.data<float>(), y.data<float>(), x.numel() / len, len,
                   ctx.attr_float("epsilon", 1e-5f), ctx.pool());
}

// InstanceNormalization over x [N, C, D1, ...]: each (n, c) row of D1 x ... values; GroupNormalization:
// each (n, group) row, the scale and bias per group (opset 18) or per channel (opset 21).
void groupnorm_x86(KernelContext& ctx, bool instance) {
  const Tensor* x0 = ctx.input(0);
  const Tensor* s0 = ctx.input(1);
  const Tensor* b0 = ctx.input(2);
  if (!is_f32(x0) || !is_f32(s0) || !is_f32(b0) || x0->rank() < (instance ? 3 : 2)) return run_ref(ctx);
  const int64_t n = x0->dim(0), c = x0->dim(1), sp = prod(x0->shape(), 2, size_t(x0->rank()));
  const int64_t groups = instance ? c : ctx.attr_int("num_groups", 0);
  const bool per_group = instance || (ctx.opset() > 0 && ctx.opset() < 21);
  const int64_t params = per_group ? groups : c;
  if (groups <= 0 || c % groups != 0 || sp == 0 || s0->numel() != params || b0->numel() != params ||
      (!instance && ctx.attr_int("stash_type", 1) != 1))
    return run_ref(ctx);  // reports what is wrong
  const int64_t len = c / groups * sp;
  const Tensor x = x0->contiguous(), s = s0->contiguous(), b = b0->contiguous();
  Tensor& y = ctx.output_for_overwrite(0, DType::f32, x.shape());
  x86::groupnorm_f32(x.data<float>(), s.data<float>(), b.data<float>(), y.data<float>(), n, groups, len,
                     per_group ? len : sp, ctx.attr_float("epsilon", 1e-5f), ctx.pool());
}

void transpose_x86(KernelContext& ctx) {
  const Tensor* x0 = ctx.input(0);
  const bool bytes = x0 && dtype_size(x0->dtype()) == 1;  // an int8 region's (channel shuffles)
  if (!is_f32(x0) && !bytes) return run_ref(ctx);
  const int64_t r = x0->rank();
  std::vector<int64_t> perm = ctx.attr_ints("perm");
  if (perm.empty() && !ctx.has_attr("perm")) {
    perm.resize(size_t(r));
    for (int64_t i = 0; i < r; ++i) perm[size_t(i)] = r - 1 - i;
  }
  if (int64_t(perm.size()) != r) return run_ref(ctx);
  std::vector<bool> seen(static_cast<size_t>(r), false);
  for (int64_t& p : perm) {
    if (p < -r || p >= r) return run_ref(ctx);
    if (p < 0) p += r;
    if (seen[size_t(p)]) return run_ref(ctx);
    seen[size_t(p)] = true;
  }
  const Tensor x = x0->contiguous();
  Shape out(static_cast<size_t>(r));
  for (int64_t i = 0; i < r; ++i) out[size_t(i)] = x.dim(perm[size_t(i)]);
  // Only dims of size 1 move (torch's [L, 1, E] <-> [1, L, E] at batch 1): memory order is unchanged, so
  // the result is a view of the input, not a copy.
  int64_t last = -1;
  bool order_kept = true;
  for (int64_t p : perm)
    if (x.dim(p) != 1) order_kept = order_kept && p > last, last = p;
  if (order_kept) {
    ctx.set_output(0, DataValue(x.reshape(out)));
    return;
  }
  // The last two dims swapped, the rest in order, for readers that take strided views (a MatMul reads the
  // view as a transposed operand, CompiledNode::strided_ok): a view of the input, no copy.
  bool swap_last = r >= 2 && perm[size_t(r - 2)] == r - 1 && perm[size_t(r - 1)] == r - 2;
  for (int64_t i = 0; swap_last && i + 2 < r; ++i) swap_last = perm[size_t(i)] == i;
  if (swap_last && x.storage() && ctx.output_may_be_strided(0)) {
    ctx.set_output(0, DataValue(*x.permuted_view(perm)));
    return;
  }
  Tensor& y = ctx.output_for_overwrite(0, x.dtype(), out);
  if (x.numel() == 0) return;
  if (bytes)
    x86::transpose_bytes(static_cast<const uint8_t*>(x.raw_data()), static_cast<uint8_t*>(y.raw_data()),
                         x.shape(), perm, ctx.pool());
  else
    x86::transpose_f32(x.data<float>(), y.data<float>(), x.shape(), perm, ctx.pool());
}

// tessera.FusedElementwise: every input must fit one [outer, inner] view of the
// output (full, row, column or scalar), as for the binary ops.
void fused_elementwise_x86(KernelContext& ctx) {
  const auto run_fused_ref = [&] { run_reference(ctx, "tessera"); };
  const int64_t n_in = int64_t(ctx.num_inputs());
  const int64_t regs = ctx.attr_int("num_registers", -1);
  const auto prog = ew_decode(ctx.attr_ints("program"), n_in, regs);
  if (!prog) return run_fused_ref();
  std::vector<const Shape*> shapes;
  for (int64_t i = 0; i < n_in; ++i) {
    const Tensor* t = ctx.input(size_t(i));
    if (!is_f32(t)) return run_fused_ref();
    shapes.push_back(&t->shape());
  }
  Shape out;
  std::vector<x86::Bcast> kinds;
  int64_t outer = 1, inner = 1;
  std::vector<Tensor> keep;
  keep.reserve(size_t(n_in));
  for (int64_t i = 0; i < n_in; ++i) keep.push_back(ctx.input(size_t(i))->contiguous());
  if (broadcast_view(shapes, out, kinds, outer, inner)) {
    std::vector<x86::EwOperand> ops;
    for (int64_t i = 0; i < n_in; ++i) ops.push_back({keep[size_t(i)].data<float>(), kinds[size_t(i)]});
    Tensor& y = ctx.output_for_overwrite(0, DType::f32, out);
    if (y.numel() == 0) return;
    x86::ew_program_f32(*prog, regs, ops, y.data<float>(), outer, inner, ctx.pool());
    return;
  }
  // No one view fits every input (Swin's scores + [heads, L, L] bias + [windows, 1, L, L] mask): the output's
  // leading dims looped over, and the fewest of them after which the trailing blocks have one view, each
  // input's block at its broadcast offset (it ran on the reference kernel: 2.9 ms for 0.46 M floats).
  if (!broadcast_view(shapes, out, kinds, outer, inner, /*shape_only=*/true)) return run_fused_ref();
  const size_t r = out.size();
  for (size_t lead = 1; lead < r; ++lead) {
    std::vector<Shape> tails(static_cast<size_t>(n_in));
    std::vector<const Shape*> tp;
    for (int64_t i = 0; i < n_in; ++i) {
      const Shape& sh = *shapes[size_t(i)];
      for (size_t j = lead; j < r; ++j) {
        const size_t off = r - sh.size();
        tails[size_t(i)].push_back(j < off ? 1 : sh[j - off]);
      }
      tp.push_back(&tails[size_t(i)]);
    }
    Shape tail_out;
    int64_t to = 1, ti = 1;
    if (!broadcast_view(tp, tail_out, kinds, to, ti)) continue;
    // each input's element stride along every leading dim (0 where it broadcasts)
    const int64_t block = to * ti, blocks = prod(out, 0, lead);
    std::vector<std::vector<int64_t>> strides(size_t(n_in), std::vector<int64_t>(lead, 0));
    for (int64_t i = 0; i < n_in; ++i) {
      const Shape& sh = *shapes[size_t(i)];
      const size_t off = r - sh.size();
      int64_t st = 1;
      for (size_t j = r; j-- > 0;) {
        const int64_t d = j < off ? 1 : sh[j - off];
        if (j < lead) strides[size_t(i)][j] = d == 1 ? 0 : st;
        st *= d;
      }
    }
    Tensor& y = ctx.output_for_overwrite(0, DType::f32, out);
    if (y.numel() == 0) return;
    float* yp = y.data<float>();
    parallel_for(ctx.pool(), blocks, std::max<int64_t>(1, (1 << 14) / std::max<int64_t>(1, block)),
                 [&](int64_t b0, int64_t b1) {
                   std::vector<x86::EwOperand> ops(static_cast<size_t>(n_in));
                   for (int64_t b = b0; b < b1; ++b) {
                     for (int64_t i = 0; i < n_in; ++i) {
                       int64_t at = 0, rem = b;
                       for (size_t j = lead; j-- > 0;) {
                         at += rem % out[j] * strides[size_t(i)][j];
                         rem /= out[j];
                       }
                       ops[size_t(i)] = {keep[size_t(i)].data<float>() + at, kinds[size_t(i)]};
                     }
                     x86::ew_program_f32(*prog, regs, ops, yp + b * block, to, ti, nullptr);
                   }
                 });
    return;
  }
  run_fused_ref();
}

struct Entry {
  const char* op;
  KernelFn fn;
  size_t min_inputs, max_inputs;
};

const Entry kEntries[] = {
    {"Exp", unary_x86<x86::UnaryOp::exp>, 1, 1},
    {"Erf", unary_x86<x86::UnaryOp::erf>, 1, 1},
    {"Tanh", unary_x86<x86::UnaryOp::tanh>, 1, 1},
    {"Sigmoid", unary_x86<x86::UnaryOp::sigmoid>, 1, 1},
    {"Relu", unary_x86<x86::UnaryOp::relu>, 1, 1},
    {"HardSwish", unary_x86<x86::UnaryOp::hardswish>, 1, 1},
    {"Log", unary_x86<x86::UnaryOp::log>, 1, 1},
    {"Sin", unary_x86<x86::UnaryOp::sin>, 1, 1},
    {"Cos", unary_x86<x86::UnaryOp::cos>, 1, 1},
    {"Softplus", unary_x86<x86::UnaryOp::softplus>, 1, 1},
    {"Pow", binary_x86<x86::BinaryOp::pow>, 2, 2},
    {"Add", binary_x86<x86::BinaryOp::add>, 2, 2},
    {"Sub", binary_x86<x86::BinaryOp::sub>, 2, 2},
    {"Mul", binary_x86<x86::BinaryOp::mul>, 2, 2},
    {"Div", binary_x86<x86::BinaryOp::div>, 2, 2},
    {"Softmax", softmax_x86<false>, 1, 1},
    {"LogSoftmax", softmax_x86<true>, 1, 1},
    {"LayerNormalization", layernorm_x86, 2, 3},
    {"RMSNormalization", rmsnorm_x86, 2, 2},
    {"InstanceNormalization", [](KernelContext& c) { groupnorm_x86(c, true); }, 3, 3},
    {"GroupNormalization", [](KernelContext& c) { groupnorm_x86(c, false); }, 3, 3},
    {"Transpose", transpose_x86, 1, 1},
    {"Where", where_x86, 3, 3},
    {"Gelu", gelu_x86, 1, 1},
};

// Claims a node whose arity fits and whose inputs are not known to be other
// than f32 (the kernels still check at run time and fall back); a Transpose also of bytes, a Where of a
// bool condition and any 4-byte values.
bool claims(const Entry& e, const ir::Node& n) {
  if (n.inputs.size() < e.min_inputs || n.inputs.size() > e.max_inputs) return false;
  const bool any_bytes = std::string_view(e.op) == "Transpose", where = std::string_view(e.op) == "Where";
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    const ir::Value* v = n.inputs[i];
    if (!v || v->type.kind != ir::TypeInfo::Kind::tensor || v->type.elem == DType::undefined) continue;
    const DType t = v->type.elem;
    if (where ? (i == 0 ? t != DType::boolean : dtype_size(t) != 4 || t == DType::string)
              : t != DType::f32 && !(any_bytes && dtype_size(t) == 1))
      return false;
  }
  return n.inputs[0] != nullptr;
}

}  // namespace

// The tuned kernel for a default-domain op, or nullptr (tests).
KernelFn x86_eltwise_kernel(const std::string& op_type);
KernelFn x86_eltwise_kernel(const std::string& op_type) {
  for (const Entry& e : kEntries)
    if (op_type == e.op) return e.fn;
  if (op_type == "FusedElementwise") return fused_elementwise_x86;  // domain tessera
  return nullptr;
}

void register_x86_eltwise_bindings();
void register_x86_eltwise_bindings() {
  for (const Entry& e : kEntries)
    add_tuned_kernel(
        "", e.op, [&e](const ir::Node& n) { return claims(e, n); }, e.fn);
  add_tuned_kernel("tessera", "FusedElementwise", {}, fused_elementwise_x86);
}

}  // namespace tessera::backends::cpu
