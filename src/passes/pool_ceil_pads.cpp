// pool_ceil_pads: a MaxPool or AveragePool with ceil_mode = 1 (PyTorch's MaxPool2d(ceil_mode=True):
// SqueezeNet, GoogLeNet, ENet) over known spatial sizes becomes ceil_mode = 0 with its end pads grown just
// enough to give the same output size. The extra windows' positions past the input then read padding, which
// MaxPool ignores and AveragePool without count_include_pad leaves out of its count, so the values are the
// same; the tuned pooling kernels (NHWC in conv regions, NCHW elsewhere) take only ceil_mode 0. An
// AveragePool that counts its padding divides its last windows by what ceil mode counts (the window clipped
// to the input plus the pads given), not by the whole window, so it stays, unless no pad grows.
#include "passes/pass_manager.h"
#include "passes/rewrite_util.h"

namespace tessera::passes {

void pool_ceil_pads(ir::Graph& g) {
  for (const auto& np : g.nodes()) {
    ir::Node* n = np.get();
    if (!(is_onnx_op(n, "MaxPool") || is_onnx_op(n, "AveragePool")) || int_attr(n, "ceil_mode", 0) == 0 ||
        n->inputs.empty() || !n->inputs[0] || n->outputs.empty() || !n->outputs[0])
      continue;
    const std::string auto_pad = string_attr(n, "auto_pad", "NOTSET");
    if (auto_pad != "NOTSET" && !auto_pad.empty()) continue;
    const auto& xs = n->inputs[0]->type.shape;
    const auto& ys = n->outputs[0]->type.shape;
    if (!xs || !ys || xs->size() < 3 || ys->size() != xs->size()) continue;
    const size_t sp = xs->size() - 2;
    const auto k = ints_attr(n, "kernel_shape", {});
    const auto s = ints_attr(n, "strides", std::vector<int64_t>(sp, 1));
    const auto d = ints_attr(n, "dilations", std::vector<int64_t>(sp, 1));
    auto pads = ints_attr(n, "pads", std::vector<int64_t>(2 * sp, 0));
    if (k.size() != sp || s.size() != sp || d.size() != sp || pads.size() != 2 * sp) continue;
    bool ok = true, grown = false;
    for (size_t i = 0; i < sp && ok; ++i) {
      const ir::Dim in = (*xs)[i + 2], out = (*ys)[i + 2];
      if (!in.known() || !out.known() || out.value < 1 || s[i] < 1 || k[i] < 1 || d[i] < 1) {
        ok = false;
        break;
      }
      const int64_t span = (k[i] - 1) * d[i] + 1;
      // the end pad whose floor-mode output is `out`: the last window ends at (out - 1) * s + span
      const int64_t end = (out.value - 1) * s[i] + span - in.value - pads[i];
      // (a window may not lie wholly in the end padding, nor the pad shrink: then the shapes disagree)
      ok = end >= pads[i + sp] && end < span && (out.value - 1) * s[i] < in.value + pads[i];
      grown = grown || end > pads[i + sp];
      pads[i + sp] = end;
    }
    if (!ok) continue;
    if (is_onnx_op(n, "AveragePool") && int_attr(n, "count_include_pad", 0) != 0 && grown) continue;
    set_attr_ints(n, "pads", pads);
    set_attr_int(n, "ceil_mode", 0);
  }
}

}  // namespace tessera::passes
