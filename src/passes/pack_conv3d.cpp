// pack_conv3d: a 3-D tessera.FusedConv (fuse_conv made it from a video model's Conv3d) with constant f32
// weights becomes layout "NCDHW": its kd depth taps packed once here, each as the 2-D
// NHWC kernels take it (kernels/x86/conv3d.h: dense, Winograd, depthwise or grouped), weight_shape the
// ONNX [OC, C/group, kd, kh, kw], winograd = m where the taps hold F(m x m, 3x3) weights. Only the
// channels need be known. Input and output
// stay NCDHW: the kernel runs the taps as 2-D convs over an NDHWC copy. (It ran on the reference kernel
// before: torchvision's r3d_18 at 0.6 GFLOP/s.)
#include "kernels/x86/conv3d.h"
#include "passes/pack_queue.h"
#include "passes/pass_manager.h"
#include "passes/rewrite_util.h"

namespace tessera::passes {

void pack_conv3d(ir::Graph& g) {
  PackQueue packs;  // (passes/pack_queue.h)
  for (const auto& owned : g.nodes()) {
    ir::Node* n = owned.get();
    if (!n || n->domain != "tessera" || n->op_type != "FusedConv" || n->inputs.size() < 2 ||
        string_attr(n, "layout", "NCHW") != "NCHW")
      continue;
    const ir::Value* x = n->inputs[0];
    ir::Value* w = n->inputs[1];
    if (!is_f32(x) || !x->type.shape || x->type.shape->size() != 5 || !is_constant(g, w) ||
        w->initializer->dtype() != DType::f32 || w->initializer->rank() != 5)
      continue;
    const auto& xs = *x->type.shape;
    const bool known = xs[1].known();  // the channels; depth and image size may be symbolic (dynamic axes)
    const bool sized = xs[2].known() && xs[3].known() && xs[4].known();
    const auto ks = ints_attr(n, "kernel_shape", {}), st = ints_attr(n, "strides", {1, 1, 1}),
               dl = ints_attr(n, "dilations", {1, 1, 1}), pd = ints_attr(n, "pads", {0, 0, 0, 0, 0, 0});
    if (!known || ks.size() != 3 || st.size() != 3 || dl.size() != 3 || pd.size() != 6) continue;
    const Tensor wt = w->initializer->contiguous();
    kernels::x86::Conv3dParams p;
    p.n = xs[0].known() ? xs[0].value : 1;
    p.s.c = xs[1].value, p.d = sized ? xs[2].value : 0, p.s.h = sized ? xs[3].value : 0;
    p.s.w = sized ? xs[4].value : 0;
    p.s.oc = wt.dim(0), p.s.groups = int_attr(n, "group", 1);
    p.kd = ks[0], p.s.kh = ks[1], p.s.kw = ks[2];
    p.sd = st[0], p.s.sh = st[1], p.s.sw = st[2], p.dd = dl[0], p.s.dh = dl[1], p.s.dw = dl[2];
    p.pad_f = pd[0], p.s.pad_t = pd[1], p.s.pad_l = pd[2], p.pad_k = pd[3], p.s.pad_b = pd[4],
    p.s.pad_r = pd[5];
    bool ok = kernels::x86::conv3d_applies(p) && wt.dim(1) == p.s.c / p.s.groups && wt.dim(2) == p.kd &&
              wt.dim(3) == p.s.kh && wt.dim(4) == p.s.kw;
    for (size_t i = 0; i < 3; ++i) ok = ok && ks[i] > 0 && st[i] > 0 && dl[i] > 0;
    for (int64_t v : pd) ok = ok && v >= 0;
    if (!ok || (sized && (p.od() <= 0 || p.s.oh() <= 0 || p.s.ow() <= 0))) continue;
    // (sizes unknown: Winograd F(2x2) where it applies, as for a 2-D conv of unknown size)
    const int wino = sized ? kernels::x86::conv3d_winograd(p) : kernels::x86::wino_tile_for(p.s, 1, 0, 0);
    Tensor packed = Tensor::uninitialized(
        DType::f32, {int64_t(size_t(p.kd) * kernels::x86::conv3d_slice_floats(p, wino))});
    packs.add(wt.nbytes(), [wt, p, wino, packed]() mutable {
      kernels::x86::conv3d_pack_weights(wt.data<float>(), p, wino, packed.data<float>());
    });
    ir::Value* pv = g.add_value(g.unique_name(w->name + "_taps"));
    pv->type = ir::TypeInfo::tensor_of(packed);
    pv->initializer = std::move(packed);
    if (w->uses.size() == 1 && !is_graph_output(g, w)) w->initializer.reset();
    g.set_input(n, 1, pv);
    Attribute lay;
    lay.kind = Attribute::Kind::s;
    lay.s = "NCDHW";
    n->attrs["layout"] = lay;
    set_attr_ints(n, "weight_shape", {wt.dim(0), wt.dim(1), wt.dim(2), wt.dim(3), wt.dim(4)});
    if (wino) set_attr_int(n, "winograd", wino);
  }
  packs.flush();
}

}  // namespace tessera::passes
