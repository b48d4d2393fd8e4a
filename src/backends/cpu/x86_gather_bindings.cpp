// GatherElements on the offset kernel (kernels/x86/gather_elements.h); anything unusual (strings, shapes that
// do not fit, an index out of range) to the reference, which reports the error.
#include "backends/cpu/cpu_backend.h"
#include "kernels/ref/registry.h"
#include "kernels/x86/gather_elements.h"

namespace tessera::backends::cpu {

namespace {

void gather_elements_x86(KernelContext& ctx) {
  const auto ref = [&] { run_reference(ctx, ""); };
  const Tensor* x0 = ctx.input(0);
  const Tensor* i0 = ctx.input(1);
  if (!x0 || !i0 || x0->dtype() == DType::string || x0->dtype() == DType::undefined ||
      (i0->dtype() != DType::i64 && i0->dtype() != DType::i32) || x0->rank() < 1 || i0->rank() != x0->rank())
    return ref();
  const int es = int(dtype_size(x0->dtype()));
  const int64_t r = x0->rank();
  int64_t axis = ctx.attr_int("axis", 0);
  if (axis < -r || axis >= r || (es != 1 && es != 2 && es != 4 && es != 8)) return ref();
  if (axis < 0) axis += r;
  for (int64_t d = 0; d < r; ++d)
    if (d != axis && i0->dim(d) > x0->dim(d)) return ref();
  if (i0->numel() > 0 && x0->dim(axis) == 0) return ref();
  const Tensor x = x0->contiguous(), idx = i0->contiguous();
  Tensor& y = ctx.output_for_overwrite(0, x.dtype(), idx.shape());
  if (y.numel() == 0) return;
  if (!kernels::x86::gather_elements(x.raw_data(), x.shape(), idx.raw_data(), int(dtype_size(idx.dtype())),
                                     idx.shape(), axis, es, y.raw_data(), ctx.pool()))
    ref();  // an index out of range: the reference names it
}

}  // namespace

void register_x86_gather_bindings();
void register_x86_gather_bindings() {
  add_tuned_kernel("", "GatherElements", {}, gather_elements_x86);
}

}  // namespace tessera::backends::cpu
