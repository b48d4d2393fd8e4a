#include "runtime/cost_model.h"

namespace tessera::runtime {

namespace {

double numel(const Tensor* t) {
  return t ? double(t->numel()) : 0.0;
}

// Multiply-adds per output element of a contraction, 0 if the op is not one.
double macs_per_output(const KernelContext& ctx) {
  const std::string& op = ctx.op_type();
  const Tensor* a = ctx.input(0);
  const Tensor* w = ctx.num_inputs() > 1 ? ctx.input(1) : nullptr;
  if (!a || !w) return 0;
  if (op == "MatMul" || op == "MatMulInteger" || op == "FusedGemm") return a->rank() ? double(a->dim(-1)) : 0;
  if (op == "Gemm") return a->rank() == 2 ? double(ctx.attr_int("transA", 0) ? a->dim(0) : a->dim(1)) : 0;
  if (op == "FusedConv") {
    // Weights may be packed (NHWC, Winograd); the node keeps their logical shape [oc, c/g, kh, kw].
    const std::vector<int64_t> ws = ctx.attr_ints("weight_shape");
    if (ws.size() >= 2) {
      double m = 1;
      for (size_t i = 1; i < ws.size(); ++i) m *= double(ws[i]);
      return m;
    }
  }
  if (op == "Conv" || op == "FusedConv" || op == "ConvInteger")
    return w->rank() >= 1 && w->dim(0) > 0 ? numel(w) / double(w->dim(0)) : 0;
  return 0;
}

}  // namespace

NodeCost node_cost(const KernelContext& ctx, const std::vector<DataValue>& outputs) {
  NodeCost c;
  double out_elems = 0;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    const Tensor* t = ctx.input(i);
    if (!t) continue;
    c.bytes += double(t->nbytes());
    c.shapes += (c.shapes.empty() ? "" : " ") + t->describe();
  }
  c.shapes += " ->";
  for (const DataValue& v : outputs) {
    if (!v.is_tensor()) continue;
    c.bytes += double(v.tensor.nbytes());
    out_elems += double(v.tensor.numel());
    c.shapes += " " + v.tensor.describe();
  }
  const std::string& op = ctx.op_type();
  if (op == "FusedAttention" && ctx.input(0) && ctx.input(2) && !outputs.empty() && outputs[0].is_tensor()) {
    // Q K^T and P V: 2 * Lq * Lk * (D + Dv) per batch index; scores have as many elements as Lk per row.
    // (dims as the kernel sees them: through q_perm / v_perm when the pass folded Transposes in)
    const Tensor& o = outputs[0].tensor;
    auto dim = [&](const Tensor* t, const char* perm_key, int64_t back) -> double {
      const std::vector<int64_t> perm = ctx.attr_ints(perm_key, {});
      const int64_t i = t->rank() - back;
      if (i < 0) return 0;
      const int64_t p = perm.size() == size_t(t->rank()) ? perm[size_t(i)] : i;
      return p >= 0 && p < t->rank() ? double(t->dim(p)) : 0;
    };
    const double d = dim(ctx.input(0), "q_perm", 1), dv = dim(ctx.input(2), "v_perm", 1),
                 lk = dim(ctx.input(2), "v_perm", 2);
    const double rows = dv > 0 ? numel(&o) / dv : 0;
    c.flops = 2 * rows * lk * (d + dv);
  } else if (op == "FusedPwDwConv" && ctx.input(0) && ctx.input(0)->rank() == 4 && !outputs.empty() &&
             outputs[0].is_tensor()) {
    // the pointwise conv over every input pixel (C -> E), then kh * kw MACs per depthwise output element
    // (then E per projection output element)
    const Tensor* x = ctx.input(0);
    const std::vector<int64_t> ks = ctx.attr_ints("kernel_shape");
    const double e = double(ctx.attr_int("channels", 0)), taps = ks.size() == 2 ? double(ks[0] * ks[1]) : 0;
    const double p = ctx.input(5) ? double(ctx.attr_int("proj_channels", 0)) : 0;
    const double dw_elems = p > 0 ? out_elems / p * e : out_elems;
    // a stem producer (pw_input_layout NCHW): kh * kw * C MACs per element of its E-channel output map
    double producer = ctx.input(1) ? 2 * numel(x) * e : 0;
    if (ctx.input(1) && ctx.attr_string("pw_input_layout", "NHWC") == "NCHW") {
      const std::vector<int64_t> pk = ctx.attr_ints("pw_kernel_shape"),
                                 st = ctx.attr_ints("pw_strides", {1, 1}),
                                 pd = ctx.attr_ints("pw_pads", {0, 0, 0, 0});
      if (pk.size() == 2 && st.size() == 2 && pd.size() == 4 && st[0] > 0 && st[1] > 0) {
        const double oh = double((x->dim(2) + pd[0] + pd[2] - pk[0]) / st[0] + 1),
                     ow = double((x->dim(3) + pd[1] + pd[3] - pk[1]) / st[1] + 1);
        producer = 2 * double(x->dim(0)) * oh * ow * e * double(x->dim(1) * pk[0] * pk[1]);
      }
    }
    c.flops = producer + 2 * taps * dw_elems + 2 * e * (p > 0 ? out_elems : 0);
  } else if (op == "ConvTranspose") {
    const Tensor* x = ctx.input(0);
    const Tensor* w = ctx.input(1);
    c.flops = x && w && w->dim(0) > 0 ? 2 * numel(x) * numel(w) / double(w->dim(0)) : 0;
  } else if (const double macs = macs_per_output(ctx); macs > 0) {
    c.flops = 2 * macs * out_elems;
  } else {
    c.flops = out_elems;
  }
  return c;
}

}  // namespace tessera::runtime
