// Schemas and shape inference: normalization family (BatchNormalization,
// InstanceNormalization, LayerNormalization, GroupNormalization,
// RMSNormalization, LpNormalization, MeanVarianceNormalization, LRN).
#include "ir/ops/nn_infer.h"

namespace tessera::ir {

namespace {
using nn::A;

DType stash_dtype(const InferenceContext& ctx) {
  const int64_t st = ctx.attr_int("stash_type", 1);
  return st == 11 ? DType::f64 : st == 10 ? DType::f16 : st == 16 ? DType::bf16 : DType::f32;
}

void check_rank_at_least(InferenceContext& ctx, int64_t r) {
  auto s = nn::shape_of(ctx, 0);
  if (s && int64_t(s->size()) < r) ctx.fail("input must have rank >= ", r, ", got ", s->size());
}

void infer_batchnorm(InferenceContext& ctx) {
  check_rank_at_least(ctx, 2);
  ctx.propagate(0, 0);
  // Training mode: running_mean / running_var have the shape of input_mean / input_var.
  if (ctx.num_outputs() > 1) ctx.propagate(1, 3);
  if (ctx.num_outputs() > 2) ctx.propagate(2, 4);
}

void infer_instancenorm(InferenceContext& ctx) {
  check_rank_at_least(ctx, 3);
  ctx.propagate(0, 0);
}

// LayerNormalization / RMSNormalization: Mean and InvStdDev keep the leading
// dims and have 1 for each normalized dim.
void infer_layernorm(InferenceContext& ctx) {
  ctx.propagate(0, 0);
  auto s = nn::shape_of(ctx, 0);
  std::optional<std::vector<Dim>> stat;
  if (s) {
    const int64_t r = int64_t(s->size());
    int64_t axis = ctx.attr_int("axis", -1);
    if (axis < -r || axis >= r) ctx.fail("axis ", axis, " is out of range for rank ", r);
    if (axis < 0) axis += r;
    stat = std::vector<Dim>(s->begin(), s->begin() + axis);
    stat->resize(size_t(r), Dim(1));
  }
  for (size_t i = 1; i < ctx.num_outputs(); ++i) ctx.set_output(i, stash_dtype(ctx), stat);
}

void infer_groupnorm(InferenceContext& ctx) {
  check_rank_at_least(ctx, 2);
  auto s = nn::shape_of(ctx, 0);
  const int64_t g = ctx.attr_int("num_groups", -1);
  if (g <= 0) ctx.fail("attribute 'num_groups' must be positive");
  if (s && (*s)[1].known() && (*s)[1].value % g != 0)
    ctx.fail("channels ", (*s)[1].value, " are not divisible by num_groups ", g);
  ctx.propagate(0, 0);
}

void add(OpRegistry& r, OpSchema s) {
  s.family = "normalization";
  r.add(std::move(s));
}
}  // namespace

void register_normalization_schemas(OpRegistry& r) {
  add(r, make_schema("BatchNormalization", 5, 5, 1, 3, infer_batchnorm,
                     {{"epsilon", A::f}, {"momentum", A::f}, {"training_mode", A::i}, {"spatial", A::i}}));
  add(r, make_schema("InstanceNormalization", 3, 3, 1, 1, infer_instancenorm, {{"epsilon", A::f}}));
  add(r, make_schema("LayerNormalization", 2, 3, 1, 3, infer_layernorm,
                     {{"axis", A::i}, {"epsilon", A::f}, {"stash_type", A::i}}));
  add(r, make_schema("GroupNormalization", 3, 3, 1, 1, infer_groupnorm,
                     {{"epsilon", A::f}, {"num_groups", A::i}, {"stash_type", A::i}}));
  add(r, make_schema("RMSNormalization", 2, 2, 1, 1, infer_same_as_input0,
                     {{"axis", A::i}, {"epsilon", A::f}, {"stash_type", A::i}}));
  add(r, make_schema("LpNormalization", 1, 1, 1, 1, infer_same_as_input0, {{"axis", A::i}, {"p", A::i}}));
  add(r, make_schema("MeanVarianceNormalization", 1, 1, 1, 1, infer_same_as_input0, {{"axes", A::ints}}));
  add(r, make_schema("LRN", 1, 1, 1, 1, infer_same_as_input0,
                     {{"alpha", A::f}, {"beta", A::f}, {"bias", A::f}, {"size", A::i}}));
}

}  // namespace tessera::ir
