// Binds kernels/x86/attention.h to tessera.FusedAttention: checks shapes and
// the mask's broadcast at run time, and hands anything else (other dtypes,
// broadcast leading dims, a mask the kernel cannot index) to the reference.
#include <optional>

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

// t seen through a Transpose the fuse pass absorbed (perm empty: t itself) — a strided view, no copy;
// nullopt when perm is not a permutation of t's dims (the reference reports it).
std::optional<Tensor> permuted(const Tensor& t, const std::vector<int64_t>& perm) {
  if (perm.empty()) return t;
  return t.permuted_view(perm);
}

// A matrix operand over t read in place when its columns are contiguous, else over a contiguous copy
// (kept in `keep`).
template <typename T>
void matrix_operand(const Tensor& t, Tensor& keep, kernels::x86::MatrixOperand<T>& op) {
  const int64_t r = t.rank();
  keep = t.dim(-1) <= 1 || t.strides()[size_t(r - 1)] == 1 ? t : t.contiguous();
  op.base = matrix_batch_bases(keep);
  op.rs = keep.dim(-2) <= 1 ? keep.dim(-1) : keep.strides()[size_t(r - 2)];
  op.data = const_cast<T*>(keep.data<float>());
}

// t's last two dims swapped (a view).
Tensor swap_last(const Tensor& t) {
  std::vector<int64_t> perm(size_t(t.rank()));
  for (size_t i = 0; i < perm.size(); ++i) perm[i] = int64_t(i);
  std::swap(perm[perm.size() - 1], perm[perm.size() - 2]);
  return *permuted(t, perm);
}

void fused_attention_x86(KernelContext& ctx) {
  const Tensor* q_in = ctx.input(0);
  const Tensor* k_in = ctx.input(1);
  const Tensor* v_in = ctx.input(2);
  const Tensor* m0 = ctx.input(3);
  for (const Tensor* t : {q_in, k_in, v_in})
    if (!t || t->dtype() != DType::f32) return run_ref(ctx);
  if (m0 && m0->dtype() != DType::f32) return run_ref(ctx);
  // Transposes folded in by the fuse pass: the inputs are read, and the output written, through views.
  const auto qv = permuted(*q_in, ctx.attr_ints("q_perm", {}));
  const auto kv = permuted(*k_in, ctx.attr_ints("k_perm", {}));
  const auto vv = permuted(*v_in, ctx.attr_ints("v_perm", {}));
  const std::vector<int64_t> out_perm = ctx.attr_ints("out_perm", {});
  if (!qv || !kv || !vv) return run_ref(ctx);
  const Tensor *q0 = &*qv, *k0 = &*kv, *v0 = &*vv;
  const int64_t r = q0->rank();
  if (r < 2 || k0->rank() != r || v0->rank() != r || (!out_perm.empty() && int64_t(out_perm.size()) != r))
    return run_ref(ctx);
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
  // K^T whose rows are contiguous (K [.., Lk, D] viewed transposed, as heads split from [B, L, H*D]
  // give it) is read as K itself.
  // (Whether it was swapped is not in the shapes: they agree when Lk = D, and a U-Net's attention over 16 x
  // 16 pixels of 256 channels then read K^T as K.)
  const bool read_as_k = a.k_transposed && k0->dim(-1) > 1 && k0->strides()[size_t(r - 1)] != 1 &&
                         k0->strides()[size_t(r - 2)] == 1;
  const Tensor kt = read_as_k ? swap_last(*k0) : *k0;
  if (read_as_k) a.k_transposed = false;
  Tensor qk, kk, vk;
  matrix_operand(*q0, qk, a.q);
  matrix_operand(kt, kk, a.k);
  matrix_operand(*v0, vk, a.v);
  Shape os = q0->shape();
  os.back() = a.dv;
  // With out_perm the output is transpose(O, out_perm): allocated in that shape, O a view into it.
  Shape ys = os;
  if (!out_perm.empty()) {
    std::vector<bool> seen(static_cast<size_t>(r), false);
    for (int64_t i = 0; i < r; ++i) {
      const int64_t p = out_perm[size_t(i)];
      if (p < 0 || p >= r || seen[size_t(p)]) return run_ref(ctx);
      seen[size_t(p)] = true;
      ys[size_t(i)] = os[size_t(p)];
    }
  }
  Tensor& y = ctx.output_for_overwrite(0, DType::f32, ys);
  if (y.numel() == 0) return;
  Tensor o = y;
  if (!out_perm.empty()) {
    std::vector<int64_t> st(static_cast<size_t>(r));
    for (int64_t i = 0; i < r; ++i) st[size_t(out_perm[size_t(i)])] = y.strides()[size_t(i)];
    o = Tensor::view(DType::f32, os, y.storage(), y.byte_offset(), st);
  }
  Tensor ok;
  matrix_operand(o, ok, a.out);
  if (ok.storage() != y.storage()) return run_ref(ctx);  // output columns not contiguous: no in-place view
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
