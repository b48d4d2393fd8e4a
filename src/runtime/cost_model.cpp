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
    const Tensor& o = outputs[0].tensor;
    const Tensor* q = ctx.input(0);
    const Tensor* v = ctx.input(2);
    const double rows = o.rank() ? numel(&o) / double(std::max<int64_t>(o.dim(-1), 1)) : 0;
    const double lk = v->rank() >= 2 ? double(v->dim(-2)) : 0;
    c.flops = 2 * rows * lk * double(q->dim(-1) + v->dim(-1));
  } else if (op == "FusedPwDwConv" && ctx.input(0) && ctx.input(0)->rank() == 4 && !outputs.empty() &&
             outputs[0].is_tensor()) {
    // the pointwise conv over every input pixel (C -> E), then kh * kw MACs per output element
    const Tensor* x = ctx.input(0);
    const std::vector<int64_t> ks = ctx.attr_ints("kernel_shape");
    const double e = double(ctx.attr_int("channels", 0)), taps = ks.size() == 2 ? double(ks[0] * ks[1]) : 0;
    c.flops = 2 * numel(x) * e + 2 * taps * out_elems;
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
