// Concat of f32 tensors, tuned: a decoder's KV cache grows by one Concat per layer and per K / V every
// step (GPT-2 decode: 24 copies of the whole cache, 5-7% of a step), and CNNs concatenate channels in every
// pixel (kernels/x86/concat.h). The reference kernel zero-fills the output and then copies each input on one
// thread; this one writes the output once, in memory order, split between the threads by rows (or by
// elements where there are too few rows). Anything it does not cover (other types, bad shapes) goes to the
// reference, which reports the error.
#include <algorithm>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "kernels/ref/registry.h"
#include "kernels/x86/channel_shuffle.h"
#include "kernels/x86/concat.h"

namespace tessera::backends::cpu {

namespace {

void concat_x86(KernelContext& ctx) {
  const auto ref = [&] { run_reference(ctx, ""); };
  const size_t n = ctx.num_inputs();
  const Tensor* first = n ? ctx.input(0) : nullptr;
  if (!first || first->dtype() != DType::f32 || first->rank() < 1 || !ctx.has_attr("axis")) return ref();
  const int64_t r = first->rank();
  int64_t axis = ctx.attr_int("axis", 0);
  if (axis < -r || axis >= r) return ref();
  if (axis < 0) axis += r;
  Shape out = first->shape();
  out[size_t(axis)] = 0;
  std::vector<Tensor> ins;
  ins.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    const Tensor* t = ctx.input(i);
    if (!t || t->dtype() != DType::f32 || t->rank() != r) return ref();
    for (int64_t d = 0; d < r; ++d)
      if (d != axis && t->dim(d) != first->dim(d)) return ref();
    out[size_t(axis)] += t->dim(axis);
    ins.push_back(t->contiguous());
  }
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= out[size_t(d)];
  for (int64_t d = axis + 1; d < r; ++d) inner *= out[size_t(d)];
  std::vector<int64_t> width(n);  // floats of input i per output row
  int64_t row = 0;
  for (size_t i = 0; i < n; ++i) row += width[i] = ins[i].dim(axis) * inner;
  Tensor& y = ctx.output_for_overwrite(0, DType::f32, out);
  const int64_t total = outer * row;
  if (total == 0) return;
  std::vector<const float*> srcs(n);
  for (size_t i = 0; i < n; ++i) srcs[i] = ins[i].data<float>();
  kernels::x86::concat_f32(srcs.data(), width.data(), int64_t(n), y.data<float>(), outer, ctx.pool());
}

// ChannelShuffle (fuse_channel_shuffle) over 4-byte elements with the channels innermost (NHWC, or any
// layout whose axis is the last): kernels/x86/channel_shuffle.h. The rest goes to the reference, which
// also reports bad inputs.
void channel_shuffle_x86(KernelContext& ctx) {
  const auto ref = [&] { run_reference(ctx, "tessera"); };
  const size_t n = ctx.num_inputs();
  const Tensor* first = n ? ctx.input(0) : nullptr;
  if (!first || dtype_size(first->dtype()) != 4 || first->dtype() == DType::string) return ref();
  const int64_t r = first->rank(), axis = ctx.attr_int("axis", -1), groups = ctx.attr_int("groups", 0);
  const std::vector<int64_t> splits = ctx.attr_ints("splits");
  if (r < 1 || axis != r - 1 || groups <= 0 || splits.size() != ctx.num_outputs()) return ref();
  std::vector<Tensor> ins;
  std::vector<kernels::x86::ShuffleSource> sources;
  int64_t c = 0, total = 0;
  for (size_t i = 0; i < n; ++i) {
    const Tensor* t = ctx.input(i);
    if (!t || t->dtype() != first->dtype() || t->rank() != r) return ref();
    for (int64_t d = 0; d < axis; ++d)
      if (t->dim(d) != first->dim(d)) return ref();
    ins.push_back(t->contiguous());
    c += t->dim(axis);
  }
  for (int64_t s : splits) {
    if (s < 0) return ref();
    total += s;
  }
  if (c % groups != 0 || total != c) return ref();
  if (first->dim(axis) == 0) return ref();  // (its rows not countable from input 0)
  const int64_t rows = first->numel() / first->dim(axis);
  for (const Tensor& t : ins)
    sources.push_back({static_cast<const uint32_t*>(t.raw_data()), t.dim(axis), t.dim(axis)});
  std::vector<uint32_t*> outs;
  for (size_t o = 0; o < splits.size(); ++o) {
    Shape shape = first->shape();
    shape[size_t(axis)] = splits[o];
    outs.push_back(static_cast<uint32_t*>(ctx.output_for_overwrite(o, first->dtype(), shape).raw_data()));
  }
  kernels::x86::channel_shuffle_32(sources, rows, groups, splits, outs, ctx.pool());
}

}  // namespace

void register_x86_concat_bindings();
void register_x86_concat_bindings() {
  // claims the nodes whose inputs are not known to be other than f32 (shape arithmetic stays on the
  // reference)
  add_tuned_kernel(
      "", "Concat",
      [](const ir::Node& node) {
        return !node.inputs.empty() &&
               std::all_of(node.inputs.begin(), node.inputs.end(), [](const ir::Value* v) {
                 return v && (v->type.elem == DType::undefined || v->type.elem == DType::f32);
               });
      },
      concat_x86);
  add_tuned_kernel("tessera", "ChannelShuffle", {}, channel_shuffle_x86);
}

}  // namespace tessera::backends::cpu
