// Binds kernels/x86/attention.h to tessera.FusedAttention: checks shapes and
// the mask's broadcast at run time, and hands anything else (other dtypes,
// broadcast leading dims, a mask the kernel cannot index) to the reference.
#include "backends/cpu/cpu_backend.h"
#include "kernels/ref/registry.h"
#include "kernels/x86/attention.h"

namespace tessera::backends::cpu {

namespace {

void run_ref(KernelContext& ctx) {
  run_reference(ctx, "tessera");
}

// Indexes `t` broadcast to the scores [lead..., Lq, Lk] (lead = Q's leading dims); false if it does not
// broadcast or its last axis is not contiguous. `keep` holds the contiguous copy the operand points into.
template <typename T>
bool score_operand(const Tensor& t, const Tensor& q, int64_t lk, int64_t batch, Tensor& keep,
                   kernels::x86::ScoreOperand<T>& op) {
  const int64_t r = q.rank(), mr = t.rank();
  if (mr > r) return false;
  keep = t.contiguous();
  std::vector<int64_t> st(static_cast<size_t>(r), 0);
  Shape sshape = q.shape();
  sshape.back() = lk;
  int64_t stride = 1;
  for (int64_t i = mr - 1; i >= 0; --i) {
    const int64_t dim = keep.dim(i), full = sshape[size_t(r - mr + i)];
    if (dim != 1 && dim != full) return false;  // the reference reports the error
    st[size_t(r - mr + i)] = dim == 1 ? 0 : stride;
    stride *= dim;
  }
  op.q_stride = st[size_t(r - 2)];
  op.k_stride = st[size_t(r - 1)];
  if (op.k_stride > 1) return false;
  op.base.resize(static_cast<size_t>(batch));
  for (int64_t b = 0; b < batch; ++b) {
    int64_t rem = b, off = 0;
    for (int64_t i = r - 3; i >= 0; --i) {
      off += (rem % q.dim(i)) * st[size_t(i)];
      rem /= q.dim(i);
    }
    op.base[size_t(b)] = off;
  }
  op.data = keep.data<T>();
  return true;
}

void fused_attention_x86(KernelContext& ctx) {
  const Tensor* q0 = ctx.input(0);
  const Tensor* k0 = ctx.input(1);
  const Tensor* v0 = ctx.input(2);
  const Tensor* m0 = ctx.input(3);
  for (const Tensor* t : {q0, k0, v0})
    if (!t || t->dtype() != DType::f32) return run_ref(ctx);
  if (m0 && m0->dtype() != DType::f32) return run_ref(ctx);
  const int64_t r = q0->rank();
  if (r < 2 || k0->rank() != r || v0->rank() != r) return run_ref(ctx);
  int64_t batch = 1;
  for (int64_t i = 0; i + 2 < r; ++i) {
    if (k0->dim(i) != q0->dim(i) || v0->dim(i) != q0->dim(i)) return run_ref(ctx);
    batch *= q0->dim(i);
  }
  kernels::x86::AttentionArgs a;
  a.k_transposed = ctx.attr_int("k_transposed", 0) != 0;
  a.batch = batch;
  a.lq = q0->dim(-2);
  a.d = q0->dim(-1);
  a.lk = a.k_transposed ? k0->dim(-1) : k0->dim(-2);
  a.dv = v0->dim(-1);
  if ((a.k_transposed ? k0->dim(-2) : k0->dim(-1)) != a.d || v0->dim(-2) != a.lk) return run_ref(ctx);
  a.scale = ctx.attr_float("scale", 1.0f);
  Tensor mask, cond;
  if (m0 && !score_operand(*m0, *q0, a.lk, batch, mask, a.mask)) return run_ref(ctx);
  if (const Tensor* c0 = ctx.input(4)) {
    if (c0->dtype() != DType::boolean || !score_operand(*c0, *q0, a.lk, batch, cond, a.cond))
      return run_ref(ctx);
    a.keep_where = ctx.attr_int("keep_where", 0) != 0;
    a.fill = ctx.attr_float("fill", 0.0f);
  }
  const Tensor q = q0->contiguous(), k = k0->contiguous(), v = v0->contiguous();
  a.q = q.data<float>();
  a.k = k.data<float>();
  a.v = v.data<float>();
  Shape os = q.shape();
  os.back() = a.dv;
  Tensor& y = ctx.output_for_overwrite(0, DType::f32, os);
  if (y.numel() == 0) return;
  a.out = y.data<float>();
  kernels::x86::attention_f32(a, ctx.pool());
}

}  // namespace

KernelFn x86_fused_attention_kernel() {
  return fused_attention_x86;
}  // tests

void register_x86_attention_bindings() {
  add_tuned_kernel("tessera", "FusedAttention", {}, fused_attention_x86);
}

}  // namespace tessera::backends::cpu
