// MeanVarianceNormalization, LpNormalization and TopK of f32, tuned (kernels/x86/norm.h): the reference
// kernels walk a generic multi-index in double (MVN 12x onnxruntime's time on a 1x256x56x56 tensor) or sort
// an index array through a comparator (TopK). Other types and every bad input go to the reference, which
// reports the errors.
#include <string>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "kernels/x86/norm.h"

namespace tessera::backends::cpu {

namespace {

// axis in [-rank, rank) made non-negative, or -1
int64_t axis_in(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank) return -1;
  return axis < 0 ? axis + rank : axis;
}

void mvn_x86(KernelContext& ctx) {
  const Tensor& x0 = ctx.required_input(0);
  const int64_t rank = x0.rank();
  if (x0.dtype() != DType::f32 || rank < 1) return run_reference(ctx, "");
  std::vector<bool> reduced(size_t(rank), false);
  for (const int64_t a : ctx.attr_ints("axes", {0, 2, 3})) {
    const int64_t d = axis_in(a, rank);
    if (d < 0 || reduced[size_t(d)]) return run_reference(ctx, "");
    reduced[size_t(d)] = true;
  }
  const Tensor x = x0.contiguous();
  Tensor& y = ctx.output_for_overwrite(0, DType::f32, x.shape());
  kernels::x86::normalize_f32(kernels::x86::NormKind::mvn, x.data<float>(), y.data<float>(), x.shape(),
                              reduced, ctx.pool());
}

void lp_norm_x86(KernelContext& ctx) {
  const Tensor& x0 = ctx.required_input(0);
  const int64_t rank = x0.rank(), p = ctx.attr_int("p", 2);
  const int64_t axis = axis_in(ctx.attr_int("axis", -1), rank);
  if (x0.dtype() != DType::f32 || rank < 1 || axis < 0 || (p != 1 && p != 2)) return run_reference(ctx, "");
  std::vector<bool> reduced(size_t(rank), false);
  reduced[size_t(axis)] = true;
  const Tensor x = x0.contiguous();
  Tensor& y = ctx.output_for_overwrite(0, DType::f32, x.shape());
  kernels::x86::normalize_f32(p == 1 ? kernels::x86::NormKind::l1 : kernels::x86::NormKind::l2,
                              x.data<float>(), y.data<float>(), x.shape(), reduced, ctx.pool());
}

void topk_x86(KernelContext& ctx) {
  const Tensor& x0 = ctx.required_input(0);
  const Tensor* kt = ctx.input(1);
  const int64_t rank = x0.rank();
  const int64_t axis = axis_in(ctx.attr_int("axis", -1), rank);
  if (x0.dtype() != DType::f32 || rank < 1 || axis < 0 || !kt ||
      (kt->dtype() != DType::i64 && kt->dtype() != DType::i32) || kt->numel() != 1)
    return run_reference(ctx, "");
  const int64_t k = kt->at_int(0), len = x0.dim(axis);
  if (k < 0 || k > len || len >= (int64_t(1) << 31)) return run_reference(ctx, "");
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < rank; ++d)
    if (d < axis)
      outer *= x0.dim(d);
    else if (d > axis)
      inner *= x0.dim(d);
  Shape ys = x0.shape();
  ys[size_t(axis)] = k;
  const Tensor x = x0.contiguous();
  Tensor& v = ctx.output_for_overwrite(0, DType::f32, ys);
  Tensor& i = ctx.output_for_overwrite(1, DType::i64, ys);
  kernels::x86::topk_f32(x.data<float>(), outer, len, inner, k, ctx.attr_int("largest", 1) != 0,
                         v.data<float>(), i.data<int64_t>(), ctx.pool());
}

}  // namespace

// The tuned kernels themselves, for the unit tests.
KernelFn x86_norm_kernel(const std::string& op);
KernelFn x86_norm_kernel(const std::string& op) {
  if (op == "MeanVarianceNormalization") return mvn_x86;
  if (op == "LpNormalization") return lp_norm_x86;
  if (op == "TopK") return topk_x86;
  return nullptr;
}

void register_x86_norm_bindings();
void register_x86_norm_bindings() {
  add_tuned_kernel("", "MeanVarianceNormalization", {}, mvn_x86);
  add_tuned_kernel("", "LpNormalization", {}, lp_norm_x86);
  add_tuned_kernel("", "TopK", {}, topk_x86);
}

}  // namespace tessera::backends::cpu
