// Schemas and shape inference: attention family (Attention, RotaryEmbedding).
#include "ir/ops/nn_infer.h"

namespace tessera::ir {

namespace {
using nn::A;

// Attention (opset 23/24). Q/K/V are 4-D [B, heads, S, head] or 3-D
// [B, S, heads*head] with q_num_heads / kv_num_heads.
void infer_attention(InferenceContext& ctx) {
  const DType t = ctx.input_dtype(0);
  auto q = nn::shape_of(ctx, 0), k = nn::shape_of(ctx, 1), v = nn::shape_of(ctx, 2);
  auto pk = nn::shape_of(ctx, 4);
  for (size_t i = 0; i < ctx.num_outputs(); ++i) ctx.set_output(i, i == 1 || i == 2 ? ctx.input_dtype(i) : t, std::nullopt);
  if (!q || !k || !v) return;
  if (q->size() != k->size() || q->size() != v->size() || (q->size() != 3 && q->size() != 4))
    ctx.fail("Q, K, V must all be 3-D or all 4-D");
  const bool three = q->size() == 3;
  const int64_t qh = ctx.attr_int("q_num_heads", 0), kvh = ctx.attr_int("kv_num_heads", 0);
  if (three && (qh <= 0 || kvh <= 0)) ctx.fail("3-D inputs need positive q_num_heads and kv_num_heads");
  const Dim b = (*q)[0];
  const Dim sq = three ? (*q)[1] : (*q)[2];
  const Dim skv = three ? (*k)[1] : (*k)[2];
  const Dim hq = three ? Dim(qh) : (*q)[1];
  const Dim hkv = three ? Dim(kvh) : (*k)[1];
  auto per_head = [&](const Dim& d, int64_t heads) { return d.known() ? Dim(d.value / heads) : Dim(); };
  const Dim dk = three ? per_head((*k)[2], kvh) : (*k)[3];
  const Dim dv = three ? per_head((*v)[2], kvh) : (*v)[3];
  Dim total = skv;
  if (pk && pk->size() == 4) total = (*pk)[2].known() && skv.known() ? Dim((*pk)[2].value + skv.value) : Dim();
  if (three) ctx.set_output(0, t, std::vector<Dim>{b, sq, hq.known() && dv.known() ? Dim(hq.value * dv.value) : Dim()});
  else ctx.set_output(0, t, std::vector<Dim>{b, hq, sq, dv});
  if (ctx.num_outputs() > 1) ctx.set_output(1, ctx.input_dtype(1), std::vector<Dim>{b, hkv, total, dk});
  if (ctx.num_outputs() > 2) ctx.set_output(2, ctx.input_dtype(2), std::vector<Dim>{b, hkv, total, dv});
  if (ctx.num_outputs() > 3) ctx.set_output(3, t, std::vector<Dim>{b, hq, sq, total});
}

// LinearAttention: output [B, T, q_heads * d_v]; present_state [B, kv_heads, d_k, d_v].
void infer_linear_attention(InferenceContext& ctx) {
  const DType t = ctx.input_dtype(0);
  auto q = nn::shape_of(ctx, 0), v = nn::shape_of(ctx, 2);
  const int64_t hq = ctx.attr_int("q_num_heads", 0), hk = ctx.attr_int("kv_num_heads", 0);
  if (hq <= 0 || hk <= 0 || hq % hk != 0)
    ctx.fail("q_num_heads (", hq, ") must be a positive multiple of kv_num_heads (", hk, ")");
  ctx.set_output(0, t, std::nullopt);
  if (ctx.num_outputs() > 1) ctx.set_output(1, ctx.has_input(3) ? ctx.input_dtype(3) : t, std::nullopt);
  if (!q || !v) return;
  if (q->size() != 3 || v->size() != 3) ctx.fail("query and value must be [B, T, H*D]");
  const Dim dk = (*q)[2].known() ? Dim((*q)[2].value / hq) : Dim();
  const Dim dv = (*v)[2].known() ? Dim((*v)[2].value / hk) : Dim();
  ctx.set_output(0, t, std::vector<Dim>{(*q)[0], (*q)[1], dv.known() ? Dim(dv.value * hq) : Dim()});
  if (ctx.num_outputs() > 1)
    ctx.set_output(1, ctx.has_input(3) ? ctx.input_dtype(3) : t, std::vector<Dim>{(*q)[0], Dim(hk), dk, dv});
}

void add(OpRegistry& r, OpSchema s) {
  s.family = "attention";
  r.add(std::move(s));
}
}  // namespace

void register_attention_schemas(OpRegistry& r) {
  add(r, make_schema("Attention", 3, 7, 1, 4, infer_attention,
                     {{"is_causal", A::i},
                      {"kv_num_heads", A::i},
                      {"q_num_heads", A::i},
                      {"qk_matmul_output_mode", A::i},
                      {"scale", A::f},
                      {"softcap", A::f},
                      {"softmax_precision", A::i}}));
  add(r, make_schema("RotaryEmbedding", 3, 4, 1, 1, infer_same_as_input0,
                     {{"interleaved", A::i}, {"num_heads", A::i}, {"rotary_embedding_dim", A::i}}));
  add(r, make_schema("LinearAttention", 3, 6, 1, 2, infer_linear_attention,
                     {{"chunk_size", A::i},
                      {"kv_num_heads", A::i},
                      {"q_num_heads", A::i},
                      {"scale", A::f},
                      {"update_rule", A::s}}));
}

}  // namespace tessera::ir
