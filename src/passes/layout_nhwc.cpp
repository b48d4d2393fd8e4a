// layout_nhwc: runs convolution regions in NHWC. Every tessera.FusedConv that is
// dense (group 1), depthwise or grouped as the NHWC kernels take (conv_grouped_applies), with a known 4-D
// f32 input, becomes an NHWC
// FusedConv (layout "NHWC", weights packed once here for kernels/x86/conv_nhwc.h;
// 3x3 stride-1 dense convs as Winograd F(m x m, 3x3): attribute winograd = m),
// and every plain 2-D MaxPool / AveragePool becomes tessera.NhwcMaxPool / NhwcAveragePool. Values flow
// between converted nodes in NHWC; a Transpose is inserted only where an NCHW value enters the region (once
// per value) and where a region value is read outside it or is a graph output, so the graph means what it
// meant before. A GlobalAveragePool of a region value becomes tessera.NhwcGlobalAveragePool (its result needs
// no Transpose). The region grows through what its layout does not matter to: elementwise ops
// (core/ew_program.def, and other pointwise ONNX ops: HardSwish, HardSigmoid, Clip, LeakyRelu ...) of region
// values, constants (transposed here) and single values run on the NHWC twins (SiLU's Sigmoid and Mul,
// squeeze-and-excitation's scaling, a layer scale or residual Add); a Transpose to channels-last of a region
// value is its twin (ConvNeXt's Permute before LayerNorm: no copy), and one back to channels-first makes its
// input the twin of its result.
// Int8 regions the same way (session 33): QLinearConv / QLinearConvPacked (dense, grouped, depthwise; a stem
// over few channels reading its NCHW input) become NHWC QLinearConvPacked, and QLinearAdd, QLookup,
// per-tensor Q / DQ, MaxPool on bytes, Concat, Split and channel shuffles of int8 values stay in the region;
// an int8 conv from outside starts one only where a reader of its result joins it.
#include <algorithm>
#include <cstring>
#include <map>
#include <optional>
#include <set>

#include "core/dtype_attr.h"
#include "core/ew_program.h"
#include "core/memory.h"
#include "kernels/x86/conv_nhwc.h"
#include "kernels/x86/gemm_amx.h"
#include "kernels/x86/qgemm.h"
#include "passes/pack_queue.h"
#include "passes/pass_manager.h"
#include "passes/qlinear_util.h"
#include "passes/rewrite_util.h"

namespace tessera::passes {

namespace {

bool is_q8(const ir::Value* v) {
  return v && (v->type.elem == DType::u8 || v->type.elem == DType::i8);
}

// A 4-D f32 or (an int8 region's) u8 / s8 value of known shape but for the batch.
bool known_4d(const ir::Value* v) {
  if (!v || !(is_f32(v) || is_q8(v)) || !v->type.shape || v->type.shape->size() != 4) return false;
  for (size_t i = 1; i < 4; ++i)
    if (!(*v->type.shape)[i].known()) return false;
  return true;
}

// A 4-D f32 value whose channels are known: what a region takes. Its batch and spatial dims may be symbolic
// (a detector or segmenter exported with dynamic image sizes): the NHWC kernels read them at run time. Such
// models ran every conv on the NCHW im2col path (ResNet-50 at 1.3x onnxruntime's time, MobileNetV2 2.5x).
bool channels_known_4d(const ir::Value* v) {
  return v && is_f32(v) && v->type.shape && v->type.shape->size() == 4 && (*v->type.shape)[1].known();
}

// A 4-D u8 / s8 value whose channels are known: what an int8 region takes.
bool q8_channels_known_4d(const ir::Value* v) {
  return is_q8(v) && v->type.shape && v->type.shape->size() == 4 && (*v->type.shape)[1].known();
}

// What a region's data movement (Split, Concat, channel shuffle) takes: either kind.
bool region_4d(const ir::Value* v) {
  return channels_known_4d(v) || q8_channels_known_4d(v);
}

bool geometry_ok(const ir::Node* n) {
  const auto ks = ints_attr(n, "kernel_shape", {}), st = ints_attr(n, "strides", {1, 1}),
             dl = ints_attr(n, "dilations", {1, 1}), pd = ints_attr(n, "pads", {0, 0, 0, 0});
  if (ks.size() != 2 || st.size() != 2 || dl.size() != 2 || pd.size() != 4) return false;
  for (size_t i = 0; i < 2; ++i)
    if (ks[i] <= 0 || st[i] <= 0 || dl[i] <= 0) return false;
  for (int64_t p : pd)
    if (p < 0) return false;
  return true;
}

bool convertible_conv(const ir::Graph& g, const ir::Node* n) {
  if (!n || n->domain != "tessera" || n->op_type != "FusedConv" || n->inputs.size() < 2 ||
      n->outputs.size() != 1)
    return false;
  const Attribute* lay = n->attr("layout");
  if (lay && lay->s != "NCHW") return false;
  if (!channels_known_4d(n->inputs[0]) || !channels_known_4d(n->outputs[0]) || !geometry_ok(n)) return false;
  const ir::Value* w = n->inputs[1];
  if (!is_constant(g, w) || w->initializer->dtype() != DType::f32 || w->initializer->rank() != 4)
    return false;
  const Tensor& wt = *w->initializer;
  const auto ks = ints_attr(n, "kernel_shape", {});
  if (wt.dim(2) != ks[0] || wt.dim(3) != ks[1]) return false;
  const int64_t c = (*n->inputs[0]->type.shape)[1].value, oc = wt.dim(0), grp = int_attr(n, "group", 1);
  if ((*n->outputs[0]->type.shape)[1].value != oc) return false;
  if (n->inputs.size() > 2 && n->inputs[2] && (!is_f32(n->inputs[2]))) return false;
  if (n->inputs.size() > 3 && n->inputs[3] && !channels_known_4d(n->inputs[3])) return false;
  if (grp == 1) return wt.dim(1) == c;
  if (grp == c && grp == oc && wt.dim(1) == 1) return true;  // depthwise
  kernels::x86::Conv2dParams p;
  p.c = c, p.oc = oc, p.groups = grp;
  return grp > 0 && c % grp == 0 && wt.dim(1) == c / grp && kernels::x86::conv_grouped_applies(p);
}

bool convertible_pool(const ir::Node* n) {
  if (!(is_onnx_op(n, "MaxPool") || is_onnx_op(n, "AveragePool")) || n->inputs.size() != 1 ||
      n->outputs.empty() || !n->outputs[0])
    return false;
  if (n->outputs.size() > 1 && n->outputs[1]) return false;  // indices wanted
  const bool q8 = n->op_type == "MaxPool" && q8_channels_known_4d(n->inputs[0]) &&
                  q8_channels_known_4d(n->outputs[0]);  // a MaxPool on the bytes (fuse_qdq)
  if (!q8 && (!channels_known_4d(n->inputs[0]) || !channels_known_4d(n->outputs[0]))) return false;
  if (int_attr(n, "ceil_mode", 0) != 0 || int_attr(n, "storage_order", 0) != 0) return false;
  const Attribute* ap = n->attr("auto_pad");
  if (ap && ap->s != "NOTSET" && !ap->s.empty()) return false;
  const auto ks = ints_attr(n, "kernel_shape", {});
  if (ks.size() != 2) return false;
  return geometry_ok(n);
}

// A depthwise conv (ONNX Conv or FusedConv): as many groups as output channels, one input channel a group.
bool depthwise_conv(const ir::Node* n) {
  if (!n || !(is_onnx_op(n, "Conv") || (n->domain == "tessera" && n->op_type == "FusedConv")) ||
      n->inputs.size() < 2 || !n->inputs[1] || !n->inputs[1]->type.shape ||
      n->inputs[1]->type.shape->size() != 4)
    return false;
  const int64_t grp = int_attr(n, "group", 1);
  return grp > 1 && (*n->inputs[1]->type.shape)[1].value == 1 && (*n->inputs[1]->type.shape)[0].value == grp;
}

// A pointwise conv (1x1, stride 1, no padding, group 1) over NHWC is the GEMM [pixels, C] x [C, OC]. Where
// one level of Strassen gains (StrassenB::worthwhile, 12.5% fewer FLOPs) it becomes a Strassen FusedGemm over
// the NHWC input, its epilogue (bias, residual, activation) the same. /tmp/w/cs.cpp, Strassen / the dense
// conv kernel with bias, residual and ReLU: 196 pixels 256 -> 1024 0.90-0.91 at one thread and two, 1024 ->
// 512 0.90-0.93, 512 -> 1024 0.92-0.96; 784 pixels 256 -> 512 0.92-0.99 at one, 0.98-1.01 at two; 3136 pixels
// 256 -> 256 0.96-0.99 at one, 1.05-1.15 at two, so at most kMaxPixels. Not for a conv next to a depthwise
// one: fuse_pw_dw runs that pair (or the projection after it) with the intermediate kept in cache.
//
// Where f32 GEMMs take AMX (kernels/x86/gemm_amx.h) a pointwise conv of 512+ output channels becomes instead
// a FusedGemm whose B is also split for the tiles (maps of any size; under 32 pixels at run time the f32
// packing). A's split per call costs M x K, so narrower ones gain little or lose (Xeon VM, one thread, the
// split GEMM / the packed f32 GEMM: 784 x 512 x 128 1.24, 196 x 1024 x 256 1.28, 49 x 2048 x 512 1.12; but
// 3136 x 256 x 64 1.03, 3136 x 128 x 256 0.93, 3136 x 64 x 256 0.69).
enum class PointwiseGemm { no, strassen, split };
constexpr int64_t kSplitMinChannels = 512;
PointwiseGemm pointwise_gemm(const ir::Node* n) {
  constexpr int64_t kMaxPixels = 1024;
  if (int_attr(n, "group", 1) != 1) return PointwiseGemm::no;
  const Tensor& w = *n->inputs[1]->initializer;
  const auto st = ints_attr(n, "strides", {1, 1}), pads = ints_attr(n, "pads", {0, 0, 0, 0});
  if (w.dim(2) != 1 || w.dim(3) != 1 || st != std::vector<int64_t>{1, 1} ||
      std::any_of(pads.begin(), pads.end(), [](int64_t p) { return p != 0; }))
    return PointwiseGemm::no;
  if (depthwise_conv(n->inputs[0]->producer)) return PointwiseGemm::no;
  for (const auto& [use, slot] : n->outputs[0]->uses)
    if (depthwise_conv(use)) return PointwiseGemm::no;
  const auto& ys = *n->outputs[0]->type.shape;
  const bool known = ys[2].known() && ys[3].known();
  const int64_t pixels = known ? std::max<int64_t>(ys[0].value, 1) * ys[2].value * ys[3].value : 0;
  using kernels::x86::kSplitMinRows;
  if (kernels::x86::amx_gemm_available() && w.dim(0) >= kSplitMinChannels && w.dim(1) >= 32 &&
      (!known || pixels >= kSplitMinRows) && w.dtype() == DType::f32 &&
      kernels::x86::split_b_finite(w.contiguous().data<float>(), w.dim(1), true, w.dim(1), w.dim(0)))
    return PointwiseGemm::split;
  if (!strassen_enabled() || !known) return PointwiseGemm::no;  // maps of any size: the packed GEMM's
  if (pixels > kMaxPixels || !kernels::x86::StrassenB::worthwhile(pixels, w.dim(1), w.dim(0)))
    return PointwiseGemm::no;
  return PointwiseGemm::strassen;
}

std::vector<ir::Dim> permuted(const std::vector<ir::Dim>& s, const std::vector<int64_t>& perm) {
  std::vector<ir::Dim> o;
  for (int64_t p : perm) o.push_back(s[size_t(p)]);
  return o;
}

const std::vector<int64_t> kToNhwc{0, 2, 3, 1}, kToNchw{0, 3, 1, 2};

ir::Node* add_transpose(ir::Graph& g, ir::Value* in, ir::Value* out, const std::vector<int64_t>& perm) {
  ir::Node* t =
      g.add_node("Transpose", g.unique_name(in->name + (perm == kToNhwc ? "_to_nhwc" : "_to_nchw")));
  t->opset = 13;
  Attribute a;
  a.kind = Attribute::Kind::ints;
  a.ints = perm;
  t->attrs["perm"] = a;
  g.connect_input(t, in);
  g.connect_output(t, out);
  return t;
}

ir::Value* new_value(ir::Graph& g, const std::string& base, const ir::TypeInfo& t) {
  ir::Value* v = g.add_value(g.unique_name(base));
  v->type = t;
  return v;
}

// A constant of rank <= 4 (aligned to the trailing dims, as broadcasting reads it) as the rank-4 constant
// its NHWC twin broadcasts with.
Tensor to_nhwc_constant(const Tensor& t0) {
  const Tensor t = t0.contiguous();
  std::vector<int64_t> d(4, 1);
  for (int64_t i = 0; i < t.rank(); ++i) d[size_t(4 - t.rank() + i)] = t.dim(i);
  Tensor o = Tensor::uninitialized(DType::f32, {d[0], d[2], d[3], d[1]});
  const float* src = t.data<float>();
  float* dst = o.data<float>();
  for (int64_t n = 0; n < d[0]; ++n)
    for (int64_t c = 0; c < d[1]; ++c)
      for (int64_t h = 0; h < d[2]; ++h)
        for (int64_t w = 0; w < d[3]; ++w)
          dst[((n * d[2] + h) * d[3] + w) * d[1] + c] = src[((n * d[1] + c) * d[2] + h) * d[3] + w];
  return o;
}

// A value every dim of which is 1: the same in either layout, at any rank.
bool single_value(const ir::Value* v) {
  if (!v || !v->type.shape) return false;
  for (const ir::Dim& d : *v->type.shape)
    if (d.value != 1) return false;
  return true;
}

// ReduceMean over axes {2, 3} (attribute, or opset 18's constant input) of a 4-D value, keepdims 1.
// A ReduceMax / Min / Sum / Mean of f32 over exactly the two spatial axes (PointNet's max over the points,
// lifted from 1-D by lift_1d): the same reduction of the NHWC twin over its axes 1 and 2 gives the same
// [N, C] (or, kept, [N, C, 1, 1]) in the same order.
bool spatial_reduce(const ir::Graph& g, const ir::Node* n) {
  if (!(is_onnx_op(n, "ReduceMax") || is_onnx_op(n, "ReduceMin") || is_onnx_op(n, "ReduceSum") ||
        is_onnx_op(n, "ReduceMean")) ||
      n->inputs.empty() || n->outputs.size() != 1 || !n->outputs[0] || !is_f32(n->outputs[0]))
    return false;
  auto axes = reduce_axes(g, n, 4);
  if (!axes) return false;
  std::sort(axes->begin(), axes->end());
  return *axes == std::vector<int64_t>{2, 3};
}

bool spatial_mean(const ir::Graph& g, const ir::Node* n) {
  if (!is_onnx_op(n, "ReduceMean") || n->inputs.empty() || int_attr(n, "keepdims", 1) != 1) return false;
  auto axes = reduce_axes(g, n, 4);
  if (!axes) return false;
  std::sort(axes->begin(), axes->end());
  return *axes == std::vector<int64_t>{2, 3};
}

// An ONNX elementwise op the region can run on NHWC twins: f32 in and out, a known 4-D result.
bool elementwise(const ir::Node* n) {
  if (!onnx_pointwise(n) || !channels_known_4d(n->outputs[0]) || !n->inputs[0]) return false;
  for (const ir::Value* v : n->inputs)
    if (v && !is_f32(v)) return false;
  return true;
}

// How an int8 conv runs in an int8 region: tessera.QLinearConvPacked's weights (QConvPackedW; QDepthwiseW's
// f32 for a depthwise conv; a QLinearConvPacked's own; none where they stay as they are) and group, and
// whether it reads its input NCHW.
struct NhwcQConv {
  std::optional<Tensor> weights;
  int64_t group = 1;
  bool nchw_in = false;
};

// An int8 conv an int8 region runs NHWC: ONNX QLinearConv (2-D, group 1 with weights whose zero point is 0
// once flipped, or depthwise) with constant weights, or pack_qconv's tessera.QLinearConvPacked; or nullopt.
// Unlike pack_qconv (NCHW), every channel count and image size gains: the NHWC kernel reads a pixel's taps
// in place, with no layout copy and no transposed stores. A stem conv (group 1 over at most 4 channels)
// whose input is not in the region reads it NCHW on the im2col kernel, which stores its result
// channels-last: no Transpose of the image (onnxruntime's takes as long as the conv), and no K padded from 3
// channels to 4.
std::optional<NhwcQConv> nhwc_qconv(const ir::Graph& g, const ir::Node* n, bool input_in_region) {
  if (n->inputs.size() < 8 || n->outputs.size() != 1 || !q8_channels_known_4d(n->inputs[0]) ||
      !q8_channels_known_4d(n->outputs[0]) || !n->inputs[3] || !is_constant(g, n->inputs[3]))
    return std::nullopt;
  const Tensor& w = *n->inputs[3]->initializer;
  if (n->domain == "tessera" && n->op_type == "QLinearConvPacked") {
    if (string_attr(n, "layout", "NCHW") != "NCHW" || int_attr(n, "group", 1) != 1 || !geometry_ok(n))
      return std::nullopt;
    return NhwcQConv{w, 1, false};
  }
  if (!is_onnx_op(n, "QLinearConv") || w.rank() != 4 || (w.dtype() != DType::u8 && w.dtype() != DType::i8))
    return std::nullopt;
  const std::string auto_pad = string_attr(n, "auto_pad", "NOTSET");
  if (!auto_pad.empty() && auto_pad != "NOTSET") return std::nullopt;
  const auto ks = ints_attr(n, "kernel_shape", {w.dim(2), w.dim(3)});
  if (ks.size() != 2 || ks[0] != w.dim(2) || ks[1] != w.dim(3)) return std::nullopt;
  ir::Node probe;  // geometry_ok reads kernel_shape: the weights' where the attribute is absent
  probe.attrs = n->attrs;
  set_attr_ints(&probe, "kernel_shape", ks);
  if (!geometry_ok(&probe)) return std::nullopt;
  const int64_t c = (*n->inputs[0]->type.shape)[1].value, oc = w.dim(0), group = int_attr(n, "group", 1);
  const Tensor wc = w.contiguous();
  const bool w_signed = w.dtype() == DType::i8;
  using kernels::x86::QConvPackedW;
  using kernels::x86::QDepthwiseW;
  if (group == 1 && w.dim(1) == c && c <= 4 && !input_in_region) return NhwcQConv{std::nullopt, 1, true};
  if (group == 1 && w.dim(1) == c && zero_after_flip(g, n->inputs[5], w.dtype())) {
    Tensor pt(DType::u8, {int64_t(QConvPackedW::bytes(oc, c, w.dim(2), w.dim(3)))});
    QConvPackedW::pack(wc.raw_data(), w_signed, oc, c, w.dim(2), w.dim(3), pt.data<uint8_t>());
    return NhwcQConv{std::move(pt), 1, false};
  }
  const int64_t cg = w.dim(1);
  if (group > 1 && group < c && c % group == 0 && cg == c / group && cg % 4 == 0 && oc % group == 0 &&
      zero_after_flip(g, n->inputs[5], w.dtype())) {  // grouped (ResNeXt, RegNet): a GEMM per group
    Tensor pt(DType::u8, {int64_t(QConvPackedW::grouped_bytes(oc, cg, w.dim(2), w.dim(3), group))});
    QConvPackedW::pack_grouped(wc.raw_data(), w_signed, oc, cg, w.dim(2), w.dim(3), group,
                               pt.data<uint8_t>());
    return NhwcQConv{std::move(pt), group, false};
  }
  const ir::Value* zv = n->inputs[5];
  if (group > 1 && group == c && oc == c && w.dim(1) == 1 && w.dim(2) * w.dim(3) <= 258 &&
      (!zv || (is_constant(g, zv) && zv->initializer->dtype() == w.dtype() &&
               (zv->initializer->numel() == 1 || zv->initializer->numel() == oc)))) {
    std::vector<int32_t> zw(1, 0);
    if (zv) {
      const Tensor z = zv->initializer->contiguous();
      zw.resize(size_t(z.numel()));
      for (int64_t i = 0; i < z.numel(); ++i)
        zw[size_t(i)] = w_signed ? int32_t(z.data<int8_t>()[i]) : int32_t(z.data<uint8_t>()[i]);
    }
    Tensor pt(DType::f32, {QDepthwiseW::floats(c, w.dim(2), w.dim(3))});
    QDepthwiseW::pack(wc.raw_data(), w_signed, zw.data(), zw.size() > 1, c, w.dim(2), w.dim(3),
                      pt.data<float>());
    return NhwcQConv{std::move(pt), group, false};
  }
  return std::nullopt;
}

// Whether a reader of n's result is an op an int8 region takes in (another int8 conv, a quantized Add or
// lookup, a MaxPool, Concat or Split).
bool joined_by_int8_region(const ir::Graph& g, const ir::Node* n) {
  if (n->outputs.empty() || !n->outputs[0]) return false;
  for (const auto& [u, slot] : n->outputs[0]->uses) {
    if (u->owner != &g) continue;
    if (is_onnx_op(u, "QLinearConv") || is_onnx_op(u, "MaxPool") || is_onnx_op(u, "Concat") ||
        is_onnx_op(u, "Split") ||
        (u->domain == "tessera" &&
         (u->op_type == "QLinearConvPacked" || u->op_type == "QLinearAdd" || u->op_type == "QLookup")))
      return true;
  }
  return false;
}

// tessera.QLinearAdd (fuse_qdq) of two 4-D values of one shape.
bool qlinear_add_4d(const ir::Node* n) {
  return n->domain == "tessera" && n->op_type == "QLinearAdd" && n->inputs.size() >= 7 &&
         n->outputs.size() == 1 && q8_channels_known_4d(n->inputs[0]) && q8_channels_known_4d(n->inputs[3]) &&
         q8_channels_known_4d(n->outputs[0]) && *n->inputs[0]->type.shape == *n->inputs[3]->type.shape;
}

// QuantizeLinear / DequantizeLinear with one scale and zero point: elementwise, whatever the layout.
bool per_tensor_qdq(const ir::Node* n) {
  if (!(is_onnx_op(n, "QuantizeLinear") || is_onnx_op(n, "DequantizeLinear")) || n->inputs.size() < 2 ||
      n->outputs.size() != 1 || !n->outputs[0] || !n->outputs[0]->type.shape ||
      n->outputs[0]->type.shape->size() != 4 || !(*n->outputs[0]->type.shape)[1].known())
    return false;
  for (size_t i = 1; i < n->inputs.size(); ++i)
    if (n->inputs[i] && !single_value(n->inputs[i])) return false;
  return true;
}

}  // namespace

void layout_nhwc(ir::Graph& g) {
  WeightPool filter_pool;  // the packed filters under 2 MiB
  PackQueue packs;         // the packing itself, on the session's threads (flushed before the pool goes)
  g.topological_sort();
  std::vector<ir::Node*> nodes;
  for (const auto& n : g.nodes()) nodes.push_back(n.get());
  std::map<ir::Value*, ir::Value*> twin;  // NCHW value -> its NHWC twin
  std::vector<ir::Node*> old;
  auto nhwc_of = [&](ir::Value* v) -> ir::Value* {
    if (!v) return nullptr;
    auto it = twin.find(v);
    if (it != twin.end()) return it->second;
    ir::Value* t = new_value(g, v->name + "_nhwc",
                             ir::TypeInfo::tensor(v->type.elem, permuted(*v->type.shape, kToNhwc)));
    add_transpose(g, v, t, kToNhwc);
    twin[v] = t;
    return t;
  };
  // Frees conv n's original weights once packed, where n is their only reader (it goes away below), so the
  // next packing can reuse their memory instead of faulting in fresh pages.
  auto release_weights = [&](ir::Node* n) {
    if (ir::Value* wv = n->inputs[1]; wv->uses.size() == 1 && !is_graph_output(g, wv))
      wv->initializer.reset();
  };
  // The NHWC twin of y, written by f: a new value of y's shape permuted to channels-last.
  auto twin_out = [&](ir::Node* f, ir::Value* y) {
    ir::Value* yt = new_value(g, y->name + "_nhwc",
                              ir::TypeInfo::tensor(y->type.elem, permuted(*y->type.shape, kToNhwc)));
    g.connect_output(f, yt);
    twin[y] = yt;
  };
  for (ir::Node* n : nodes) {
    if (is_onnx_op(n, "Transpose") && n->inputs.size() == 1 && n->outputs.size() == 1 && n->outputs[0]) {
      const auto perm = ints_attr(n, "perm", {});
      ir::Value* x = n->inputs[0];
      ir::Value* y = n->outputs[0];
      // to channels-last of a region value: its twin, read in place by y's consumers
      if (perm == kToNhwc && twin.count(x) && !is_graph_output(g, y) &&
          std::all_of(y->uses.begin(), y->uses.end(), [&](const auto& u) { return u.first->owner == &g; })) {
        const auto uses = y->uses;
        for (const auto& [user, idx] : uses) g.set_input(user, size_t(idx), twin[x]);
        g.remove_node(n);
        continue;
      }
      // back to channels-first: x is the twin of y (a Transpose is made again below if y is read as NCHW)
      if (perm == kToNchw && region_4d(x) && region_4d(y) && !twin.count(x)) {
        twin[y] = x;
        old.push_back(n);
        continue;
      }
    }
    // Elementwise ops with a region operand run on the twins; the other operands must be constants or
    // single values (a 4-D NCHW value from outside would need a Transpose of its own).
    if (elementwise(n) &&
        std::any_of(n->inputs.begin(), n->inputs.end(), [&](ir::Value* v) { return twin.count(v); }) &&
        std::all_of(n->inputs.begin(), n->inputs.end(), [&](ir::Value* v) {
          return !v || twin.count(v) || single_value(v) ||
                 (is_constant(g, v) && v->initializer->dtype() == DType::f32 && v->initializer->rank() <= 4);
        })) {
      ir::Node* f = g.add_node(n->op_type, n->name);
      f->opset = n->opset;
      f->attrs = n->attrs;
      for (ir::Value* v : n->inputs) {
        if (!v)
          g.connect_input(f, nullptr);
        else if (twin.count(v))
          g.connect_input(f, twin[v]);
        else if (single_value(v))
          g.connect_input(f, v);
        else
          g.connect_input(f, add_constant(g, v->name + "_nhwc", to_nhwc_constant(*v->initializer)));
      }
      twin_out(f, n->outputs[0]);
      old.push_back(n);
      continue;
    }
    // Split of a region value (ShuffleNet's chunk): the same Split of the twin along the axis's channels-last
    // position, each result a twin.
    if (is_onnx_op(n, "Split") && !n->inputs.empty() && twin.count(n->inputs[0]) &&
        std::all_of(n->outputs.begin(), n->outputs.end(), [&](ir::Value* v) { return region_4d(v); }) &&
        std::all_of(n->inputs.begin() + 1, n->inputs.end(),
                    [&](ir::Value* v) { return !v || is_constant(g, v); })) {
      const int64_t axis = int_attr(n, "axis", 0), a = axis < 0 ? axis + 4 : axis;
      if (a >= 0 && a < 4) {
        ir::Node* f = g.add_node("Split", n->name);
        f->opset = n->opset;
        f->attrs = n->attrs;
        set_attr_int(f, "axis", kToNchw[size_t(a)]);
        g.connect_input(f, twin[n->inputs[0]]);
        for (size_t i = 1; i < n->inputs.size(); ++i) g.connect_input(f, n->inputs[i]);
        for (ir::Value* y : n->outputs) twin_out(f, y);
        old.push_back(n);
        continue;
      }
    }
    // A channel shuffle of a region value, Reshape [N, G, C/G, H, W] -> Transpose (0, 2, 1, 3, 4) -> Reshape
    // [N, C, H, W] as torchvision writes it: the same permutation of each pixel's channels on the twin
    // (Reshape [N, H, W, G, C/G], Transpose (0, 1, 2, 4, 3), Reshape), which stays in the region.
    if (is_onnx_op(n, "Reshape") && n->inputs.size() == 2 && twin.count(n->inputs[0]) &&
        n->outputs.size() == 1 && n->outputs[0]) {
      ir::Value* x = n->inputs[0];
      ir::Node* t = sole_consumer(g, n->outputs[0]);
      ir::Node* r2 = t && is_onnx_op(t, "Transpose") && t->outputs.size() == 1
                         ? sole_consumer(g, t->outputs[0])
                         : nullptr;
      const auto& s5 = n->outputs[0]->type.shape;
      if (r2 && is_onnx_op(r2, "Reshape") &&
          ints_attr(t, "perm", {}) == std::vector<int64_t>{0, 2, 1, 3, 4} && r2->outputs.size() == 1 &&
          r2->outputs[0] && known_4d(r2->outputs[0]) && known_4d(x) &&
          *r2->outputs[0]->type.shape == *x->type.shape && s5 && s5->size() == 5 &&
          std::all_of(s5->begin() + 1, s5->end(), [](const ir::Dim& d) { return d.known(); })) {
        const auto& xs = *x->type.shape;
        const int64_t c = xs[1].value, h = xs[2].value, w = xs[3].value, gr = (*s5)[1].value,
                      cg = (*s5)[2].value;
        if (gr * cg == c && (*s5)[3].value == h && (*s5)[4].value == w) {
          auto shape_const = [&](const std::string& base, std::vector<int64_t> v) {
            Tensor st(DType::i64, {int64_t(v.size())});
            for (size_t i = 0; i < v.size(); ++i) st.data<int64_t>()[i] = v[i];
            return add_constant(g, base, std::move(st));
          };
          auto node = [&](const char* op, const std::string& name, std::vector<ir::Value*> ins,
                          ir::Value* out) {
            ir::Node* m = g.add_node(op, g.unique_name(name));
            m->opset = 14;
            for (ir::Value* v : ins) g.connect_input(m, v);
            g.connect_output(m, out);
            return m;
          };
          const ir::Dim nd = xs[0];
          const DType et = x->type.elem;
          ir::Value* v5 = new_value(g, x->name + "_groups_nhwc",
                                    ir::TypeInfo::tensor(et, std::vector<ir::Dim>{nd, ir::Dim(h), ir::Dim(w),
                                                                                  ir::Dim(gr), ir::Dim(cg)}));
          ir::Value* v5t =
              new_value(g, x->name + "_shuffled_nhwc",
                        ir::TypeInfo::tensor(
                            et, std::vector<ir::Dim>{nd, ir::Dim(h), ir::Dim(w), ir::Dim(cg), ir::Dim(gr)}));
          ir::Value* y = r2->outputs[0];
          ir::Value* yt = new_value(g, y->name + "_nhwc", ir::TypeInfo::tensor(et, permuted(xs, kToNhwc)));
          node("Reshape", n->name + "_nhwc", {twin[x], shape_const(n->name + "_shape", {0, h, w, gr, cg})},
               v5);
          ir::Node* tt = node("Transpose", t->name + "_nhwc", {v5}, v5t);
          set_attr_ints(tt, "perm", {0, 1, 2, 4, 3});
          node("Reshape", r2->name + "_nhwc", {v5t, shape_const(r2->name + "_shape", {0, h, w, c})}, yt);
          twin[y] = yt;
          old.insert(old.end(), {n, t, r2});
          continue;
        }
      }
    }
    // Concat of region values (DenseNet's growing feature maps): the same Concat of the twins along the
    // axis's channels-last position; an operand from outside the region gets its Transpose.
    if (is_onnx_op(n, "Concat") && n->outputs.size() == 1 && n->outputs[0] && region_4d(n->outputs[0]) &&
        std::any_of(n->inputs.begin(), n->inputs.end(), [&](ir::Value* v) { return twin.count(v); }) &&
        std::all_of(n->inputs.begin(), n->inputs.end(), [&](ir::Value* v) { return region_4d(v); })) {
      const int64_t axis = int_attr(n, "axis", 1), a = axis < 0 ? axis + 4 : axis;
      if (a >= 0 && a < 4) {
        ir::Node* f = g.add_node("Concat", n->name);
        f->opset = n->opset;
        set_attr_int(f, "axis", kToNchw[size_t(a)]);
        for (ir::Value* v : n->inputs) g.connect_input(f, nhwc_of(v));
        twin_out(f, n->outputs[0]);
        old.push_back(n);
        continue;
      }
    }
    // Softmax / LogSoftmax (opset 13+, one axis) of a region value: the same along the axis's channels-last
    // position (WaveNet's softmax over the channels of its lifted 1-D map: then along contiguous rows).
    if ((is_onnx_op(n, "Softmax") || is_onnx_op(n, "LogSoftmax")) && n->opset >= 13 &&
        n->inputs.size() == 1 && n->outputs.size() == 1 && twin.count(n->inputs[0]) &&
        channels_known_4d(n->outputs[0])) {
      const int64_t axis = int_attr(n, "axis", -1), a = axis < 0 ? axis + 4 : axis;
      if (a >= 0 && a < 4) {
        ir::Node* f = g.add_node(n->op_type, n->name);
        f->opset = n->opset;
        set_attr_int(f, "axis", kToNchw[size_t(a)]);
        g.connect_input(f, nhwc_of(n->inputs[0]));
        twin_out(f, n->outputs[0]);
        old.push_back(n);
        continue;
      }
    }
    // Resize of a region value's H and W (nearest or linear, scales or sizes constant, N and C kept: HRNet's
    // and FPNs' upsampling between convs): the same Resize of the twin, its scales / sizes permuted
    // (resize_x86 takes axes 1 and 2 of a channels-last map), instead of two Transposes around it.
    if (is_onnx_op(n, "Resize") && n->opset >= 11 && n->inputs.size() >= 3 && n->outputs.size() == 1 &&
        twin.count(n->inputs[0]) && channels_known_4d(n->outputs[0]) && !n->attr("axes") &&
        int_attr(n, "antialias", 0) == 0 &&
        string_attr(n, "coordinate_transformation_mode", "half_pixel") != "tf_crop_and_resize" &&
        (string_attr(n, "mode", "nearest") == "nearest" || string_attr(n, "mode", "nearest") == "linear")) {
      // the scales (input 2) or sizes (input 3), constant, with N and C unchanged
      ir::Value* sc = n->inputs.size() > 2 ? n->inputs[2] : nullptr;
      ir::Value* sz = n->inputs.size() > 3 ? n->inputs[3] : nullptr;
      if (sc && sc->name.empty()) sc = nullptr;
      if (sz && sz->name.empty()) sz = nullptr;
      const ir::Value* given = sz ? sz : sc;
      const auto& xs = *n->inputs[0]->type.shape;
      bool ok = given && !(sz && sc) && is_constant(g, given) && given->initializer->numel() == 4;
      if (ok && sc) {
        ok = sc->initializer->dtype() == DType::f32;
        if (ok) {
          const Tensor t = sc->initializer->contiguous();
          ok = t.data<float>()[0] == 1.0f && t.data<float>()[1] == 1.0f;
        }
      } else if (ok) {
        ok = sz->initializer->dtype() == DType::i64;
        if (ok) {
          const Tensor t = sz->initializer->contiguous();
          ok = xs[0].known() && t.data<int64_t>()[0] == xs[0].value && t.data<int64_t>()[1] == xs[1].value;
        }
      }
      if (ok) {
        ir::Node* f = g.add_node("Resize", n->name);
        f->opset = n->opset;
        f->attrs = n->attrs;
        g.connect_input(f, nhwc_of(n->inputs[0]));
        g.connect_input(f, n->inputs[1]);  // roi: unused by these modes
        Tensor t = given->initializer->contiguous().clone();
        if (sc) {
          float* d = t.data<float>();
          const float s2 = d[2], s3 = d[3];
          d[1] = s2, d[2] = s3, d[3] = 1.0f;
        } else {
          int64_t* d = t.data<int64_t>();
          const int64_t c = d[1];
          d[1] = d[2], d[2] = d[3], d[3] = c;
        }
        ir::Value* perm = g.add_value(g.unique_name(given->name + "_nhwc"));
        perm->type = ir::TypeInfo::tensor_of(t);
        perm->initializer = std::move(t);
        if (sc) {
          g.connect_input(f, perm);
        } else {
          g.connect_input(f, n->inputs[2]);  // no scales
          g.connect_input(f, perm);
        }
        twin_out(f, n->outputs[0]);
        old.push_back(n);
        continue;
      }
    }
    // GlobalAveragePool of a region value: its [N, C, 1, 1] result is the same in both layouts. So is a
    // ReduceMean over the two spatial axes with keepdims (timm's squeeze-and-excitation: x.mean((2, 3),
    // keepdim=True)), which otherwise took the whole map back to NCHW.
    if ((is_onnx_op(n, "GlobalAveragePool") || spatial_mean(g, n)) && !n->inputs.empty() &&
        n->outputs.size() == 1 && twin.count(n->inputs[0]) && channels_known_4d(n->outputs[0])) {
      ir::Node* f = g.add_node("NhwcGlobalAveragePool", n->name);
      f->domain = "tessera";
      f->opset = 1;
      ir::Value* in = twin[n->inputs[0]];
      ir::Value* out = n->outputs[0];
      g.remove_node(n);
      g.connect_input(f, in);
      g.connect_output(f, out);
      continue;
    }
    if (spatial_reduce(g, n) && twin.count(n->inputs[0])) {
      ir::Node* f = g.add_node(n->op_type, n->name);
      f->opset = n->opset;
      f->attrs = n->attrs;
      g.connect_input(f, twin[n->inputs[0]]);
      const std::vector<int64_t> nhwc_axes{1, 2};
      if (n->inputs.size() > 1 && n->inputs[1]) {
        g.connect_input(f, add_i64_const(g, n->name + "_axes_nhwc", nhwc_axes));
      } else {
        set_attr_ints(f, "axes", nhwc_axes);
      }
      ir::Value* out = n->outputs[0];
      g.remove_node(n);
      g.connect_output(f, out);  // [N, C] or [N, 1, 1, C]: the bytes of [N, C, 1, 1]
      if (int_attr(f, "keepdims", 1) != 0) {
        // the result's shape as the graph has it: a twin of [N, 1, 1, C] would be the same bytes
        ir::Value* flat = g.add_value(g.unique_name(out->name + "_nhwc"));
        const auto& os = *out->type.shape;
        flat->type =
            ir::TypeInfo::tensor(DType::f32, std::vector<ir::Dim>{os[0], ir::Dim(1), ir::Dim(1), os[1]});
        move_output(f, 0, flat);
        add_reshape(g, out->name + "_to_nchw", flat, std::vector<int64_t>{0, -1, 1, 1}, out);
      }
      continue;
    }
    // An int8 conv (a QDQ model's, through fuse_qdq and pack_qconv, or a QOperator model's): the NHWC
    // QLinearConvPacked, its weights packed for the NHWC kernels. Quantized values then stay channels-last
    // between int8 convs, as onnxruntime keeps them.
    // A conv from outside the region starts one only where a reader of its result can join it: a lone int8
    // conv runs about as fast in NCHW, so its two Transposes would cost more than NHWC saves (the op scan's
    // single QLinearConv: 1.03 -> 1.31x onnxruntime's time; a partly quantized model's isolated convs).
    const bool in_region = !n->inputs.empty() && twin.count(n->inputs[0]);
    if (auto qc = in_region || joined_by_int8_region(g, n) ? nhwc_qconv(g, n, in_region) : std::nullopt) {
      const Tensor& w = *n->inputs[3]->initializer;
      const bool from_packed = n->domain == "tessera";
      const std::vector<int64_t> ws = from_packed
                                          ? ints_attr(n, "weight_shape", {})
                                          : std::vector<int64_t>{w.dim(0), w.dim(1), w.dim(2), w.dim(3)};
      ir::Node* f = g.add_node("QLinearConvPacked", n->name);
      f->domain = "tessera";
      f->opset = 1;
      for (const char* a : {"strides", "dilations", "pads"})
        if (const Attribute* at = n->attr(a)) f->attrs[a] = *at;
      set_attr_ints(f, "kernel_shape", {ws[2], ws[3]});
      set_attr_int(f, "group", qc->group);
      set_attr_ints(f, "weight_shape", ws);
      set_attr_int(f, "w_type", from_packed ? int_attr(n, "w_type", 0) : w.dtype() == DType::u8 ? 2 : 3);
      Attribute lay;
      lay.kind = Attribute::Kind::s;
      lay.s = "NHWC";
      f->attrs["layout"] = lay;
      if (qc->nchw_in) {
        lay.s = "NCHW";
        f->attrs["input_layout"] = lay;
      }
      g.connect_input(f, qc->nchw_in ? n->inputs[0] : nhwc_of(n->inputs[0]));
      for (size_t i = 1; i < n->inputs.size(); ++i)
        g.connect_input(f, i != 3 || !qc->weights ? n->inputs[i]
                           : from_packed
                               ? n->inputs[3]
                               : add_constant(g, n->inputs[3]->name + "_nhwc", std::move(*qc->weights)));
      twin_out(f, n->outputs[0]);
      old.push_back(n);
      continue;
    }
    // A quantized residual Add of region values, a table lookup (fuse_qlookup), and the Quantize / Dequantize
    // of a region value with one scale (where an int8 region meets float ops: its DequantizeLinear feeds the
    // f32 region, a float value's QuantizeLinear enters the int8 one): the same node on the twins.
    const bool lookup = n->domain == "tessera" && n->op_type == "QLookup" && n->outputs.size() == 1 &&
                        q8_channels_known_4d(n->outputs[0]);
    if ((qlinear_add_4d(n) && (twin.count(n->inputs[0]) || twin.count(n->inputs[3]))) ||
        ((per_tensor_qdq(n) || lookup) && twin.count(n->inputs[0]))) {
      ir::Node* f = g.add_node(n->op_type, n->name);
      f->domain = n->domain;
      f->opset = n->opset;
      f->attrs = n->attrs;
      const bool add = n->op_type == "QLinearAdd";
      for (size_t i = 0; i < n->inputs.size(); ++i)
        g.connect_input(f, i == 0 || (add && i == 3) ? nhwc_of(n->inputs[i]) : n->inputs[i]);
      twin_out(f, n->outputs[0]);
      old.push_back(n);
      continue;
    }
    // (a pool joins a region that reaches it; alone, its two Transposes cost more than NHWC saves)
    const bool conv = convertible_conv(g, n), pool = !conv && convertible_pool(n) && twin.count(n->inputs[0]);
    if (!conv && !pool) continue;
    if (const PointwiseGemm pg = conv ? pointwise_gemm(n) : PointwiseGemm::no; pg != PointwiseGemm::no) {
      // FusedGemm(X_nhwc [N, H, W, C], B packed for Strassen or packed and split, bias, residual) -> [N, H,
      // W, OC]
      using kernels::x86::PackedB;
      using kernels::x86::StrassenB;
      const bool split = pg == PointwiseGemm::split;
      const Tensor wt = n->inputs[1]->initializer->contiguous();  // [OC, C, 1, 1]: B^T
      const int64_t k = wt.dim(1), oc = wt.dim(0);
      const int64_t kc = split ? PackedB::kc_for(k, oc) : StrassenB::kc_for(k, oc);
      const int64_t nr = PackedB::native_nr();
      Tensor packed;
      {
        const HugePagesScope huge;
        packed = Tensor::uninitialized(
            DType::f32,
            {int64_t(split ? PackedB::packed_floats(k, oc, kc, nr) + kernels::x86::split_b_floats(k, oc)
                           : StrassenB::packed_floats(k, oc, kc, nr))});
      }
      packs.add(wt.nbytes(), [wt, packed, k, oc, kc, nr, split]() mutable {
        if (split) {
          PackedB::pack_into(packed.data<float>(), wt.data<float>(), k, /*trans_b=*/true, k, oc);
          kernels::x86::split_b_into(packed.data<float>() + PackedB::packed_floats(k, oc, kc, nr),
                                     wt.data<float>(), k, /*trans_b=*/true, k, oc);
        } else {
          StrassenB::pack_into(packed.data<float>(), wt.data<float>(), k, /*trans_b=*/true, k, oc);
        }
        advise_huge_pages(packed.data<float>(), packed.nbytes());
      });
      release_weights(n);
      ir::Node* f = add_fused_gemm(g, n->name, k, oc, kc, nr, /*strassen=*/!split, /*coded=*/false, split);
      set_activation_attrs(f, fused_activation_of(n));
      g.connect_input(f, nhwc_of(n->inputs[0]));
      g.connect_input(
          f, add_constant(g, n->inputs[1]->name + (split ? "_split" : "_strassen"), std::move(packed)));
      ir::Value* residual = n->inputs.size() > 3 ? n->inputs[3] : nullptr;
      ir::Value* bias = n->inputs.size() > 2 ? n->inputs[2] : nullptr;
      if (bias || residual) g.connect_input(f, bias);
      if (residual) g.connect_input(f, nhwc_of(residual));
      twin_out(f, n->outputs[0]);
      old.push_back(n);
      continue;
    }
    ir::Node* f = g.add_node(conv                      ? "FusedConv"
                             : n->op_type == "MaxPool" ? "NhwcMaxPool"
                                                       : "NhwcAveragePool",
                             n->name);
    f->domain = "tessera";
    f->opset = 1;
    if (pool) {
      for (const char* k : {"kernel_shape", "strides", "dilations", "pads", "count_include_pad"})
        if (const Attribute* a = n->attr(k)) f->attrs[k] = *a;
      g.connect_input(f, nhwc_of(n->inputs[0]));
    } else {
      f->attrs = n->attrs;
      const Tensor wt = n->inputs[1]->initializer->contiguous();
      const int64_t oc = wt.dim(0), cg = wt.dim(1), kh = wt.dim(2), kw = wt.dim(3);
      const int64_t groups = int_attr(n, "group", 1);
      const bool dense = groups == 1, depthwise = !dense && cg == 1 && groups == oc;
      kernels::x86::Conv2dParams cp;
      const auto st = ints_attr(n, "strides", {1, 1}), dl = ints_attr(n, "dilations", {1, 1});
      cp.c = cg * groups, cp.oc = oc, cp.kh = kh, cp.kw = kw, cp.sh = st[0], cp.sw = st[1], cp.dh = dl[0],
      cp.dw = dl[1], cp.groups = groups;
      // Winograd where it beats the direct kernel (wino_tile_for; an unknown batch counts as 1)
      const auto& ys = *n->outputs[0]->type.shape;
      const int wm =
          kernels::x86::wino_tile_for(cp, ys[0].known() ? ys[0].value : 1, ys[2].known() ? ys[2].value : 0,
                                      ys[3].known() ? ys[3].value : 0);
      const bool wino = wm != 0;
      const int64_t floats = wino        ? int64_t(kernels::x86::wino_packed_floats(oc, cg, wm, groups))
                             : dense     ? int64_t(kernels::x86::conv_nhwc_packed_floats(oc, cg * kh * kw))
                             : depthwise ? oc * kh * kw
                                         : int64_t(kernels::x86::grouped_nhwc_packed_floats(cp));
      // The packers write every element. Filters of 2 MiB and more stream from memory every run: huge pages,
      // collapsed after session creation (core/memory.h). ResNet-50 2.5% faster at one thread, 4-6% at two
      // (Xeon VM, sessions side by side in one process). Smaller ones side by side in the pool's chunks,
      // which go on huge pages too (WeightPool).
      Tensor packed;
      if (size_t(floats) * sizeof(float) < kHugePageBytes) {
        auto [chunk, at] = filter_pool.allocate(size_t(floats) * sizeof(float));
        packed = Tensor::view(DType::f32, {floats}, std::move(chunk), at);
      } else {
        const HugePagesScope huge;
        packed = Tensor::uninitialized(DType::f32, {floats});
      }
      packs.add(wt.nbytes(), [wt, packed, cp, wm, wino, dense, depthwise]() mutable {
        const int64_t oc = cp.oc, cg = cp.c / cp.groups;
        if (wino)
          kernels::x86::wino_pack_weights(wt.data<float>(), oc, cg, wm, packed.data<float>(), cp.groups);
        else if (dense)
          kernels::x86::conv_nhwc_pack_weights(wt.data<float>(), oc, cg, cp.kh, cp.kw, packed.data<float>());
        else if (depthwise)
          kernels::x86::dw_nhwc_pack_weights(wt.data<float>(), oc, cp.kh, cp.kw, packed.data<float>());
        else
          kernels::x86::grouped_nhwc_pack_weights(wt.data<float>(), cp, packed.data<float>());
        advise_huge_pages(packed.raw_data(), packed.nbytes());
      });
      release_weights(n);
      if (wino) set_attr_int(f, "winograd", wm);
      Attribute lay;
      lay.kind = Attribute::Kind::s;
      lay.s = "NHWC";
      f->attrs["layout"] = lay;
      set_attr_ints(f, "weight_shape", {oc, cg, kh, kw});
      // A stem conv (few input channels) whose input is not in NHWC already reads it in NCHW: no Transpose
      // of the image (conv2d_nchw_in_f32).
      const bool has_residual = n->inputs.size() > 3 && n->inputs[3];
      if (dense && !wino && !has_residual && !twin.count(n->inputs[0]) &&
          kernels::x86::conv_nchw_in_applies(cp, kernels::x86::conv_isa())) {
        lay.s = "NCHW";
        f->attrs["input_layout"] = lay;
        g.connect_input(f, n->inputs[0]);
      } else {
        g.connect_input(f, nhwc_of(n->inputs[0]));
      }
      g.connect_input(f, add_constant(g, n->inputs[1]->name + "_nhwc", std::move(packed)));
      g.connect_input(f, n->inputs.size() > 2 ? n->inputs[2] : nullptr);
      g.connect_input(f, n->inputs.size() > 3 ? nhwc_of(n->inputs[3]) : nullptr);
    }
    twin_out(f, n->outputs[0]);
    old.push_back(n);
  }
  packs.flush();
  if (old.empty()) return;
  std::vector<ir::Value*> outs;
  for (ir::Node* n : old)
    for (ir::Value* y : n->outputs)
      if (y) outs.push_back(y);
  for (ir::Node* n : old) g.remove_node(n);
  for (ir::Value* y : outs)
    if ((!y->uses.empty() || is_graph_output(g, y)) && twin.count(y)) add_transpose(g, twin[y], y, kToNchw);
  g.topological_sort();
  g.remove_unused_values();
}

}  // namespace tessera::passes
