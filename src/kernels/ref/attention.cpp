// Reference kernels: attention family (Attention opset 23/24, RotaryEmbedding).
#include <cmath>
#include <limits>

#include "kernels/ref/nn_util.h"
#include "kernels/ref/registry.h"

namespace tessera::kernels::ref {

namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

// A Q/K/V operand seen as [B, heads, S, D] whatever its layout (3-D inputs are
// [B, S, heads*D]).
struct HeadView {
  std::vector<double> v;
  int64_t b = 0, h = 0, s = 0, d = 0;
  bool three = false;
  double at(int64_t bi, int64_t hi, int64_t si, int64_t di) const {
    return three ? v[size_t(((bi * s + si) * h + hi) * d + di)]
                 : v[size_t(((bi * h + hi) * s + si) * d + di)];
  }
};

HeadView head_view(const KernelContext& ctx, const Tensor& t, int64_t heads, const char* what) {
  HeadView hv;
  hv.v = nn_load(t);
  hv.three = t.rank() == 3;
  hv.b = t.dim(0);
  if (hv.three) {
    ctx.check(heads > 0 && t.dim(2) % heads == 0, what, " hidden size ", t.dim(2), " is not divisible by ",
              heads, " heads");
    hv.s = t.dim(1);
    hv.h = heads;
    hv.d = t.dim(2) / heads;
  } else {
    hv.h = t.dim(1);
    hv.s = t.dim(2);
    hv.d = t.dim(3);
  }
  return hv;
}

void attention_kernel(KernelContext& ctx) {
  const Tensor& q = ctx.required_input(0);
  const Tensor& k = ctx.required_input(1);
  const Tensor& v = ctx.required_input(2);
  nn_require_float(ctx, q, "Q");
  ctx.check(q.rank() == k.rank() && q.rank() == v.rank() && (q.rank() == 3 || q.rank() == 4),
            "Q, K, V must all be 3-D or all 4-D, got ", q.text(), ", ", k.text(), ", ", v.text());
  const Tensor* mask = ctx.has_input(3) ? ctx.input(3) : nullptr;
  const Tensor* past_k = ctx.has_input(4) ? ctx.input(4) : nullptr;
  const Tensor* past_v = ctx.has_input(5) ? ctx.input(5) : nullptr;
  const Tensor* nonpad = ctx.has_input(6) ? ctx.input(6) : nullptr;
  ctx.check((past_k == nullptr) == (past_v == nullptr), "past_key and past_value must be given together");
  const int64_t qnh = ctx.attr_int("q_num_heads", 0), kvnh = ctx.attr_int("kv_num_heads", 0);
  const HeadView Q = head_view(ctx, q, qnh, "Q"), K = head_view(ctx, k, kvnh, "K"),
                 V = head_view(ctx, v, kvnh, "V");
  const int64_t B = Q.b, Hq = Q.h, Hkv = K.h, Sq = Q.s, Skv = K.s, Dk = Q.d, Dv = V.d;
  ctx.check(K.b == B && V.b == B, "batch sizes of Q, K, V differ");
  ctx.check(V.h == Hkv && V.s == Skv, "K and V disagree on heads or sequence length");
  ctx.check(K.d == Dk, "Q head size ", Dk, " differs from K head size ", K.d);
  ctx.check(Hkv > 0 && Hq % Hkv == 0, "q heads ", Hq, " are not a multiple of kv heads ", Hkv);
  int64_t P = 0;
  std::vector<double> pk, pv;
  if (past_k) {
    ctx.check(past_k->rank() == 4 && past_k->dim(0) == B && past_k->dim(1) == Hkv && past_k->dim(3) == Dk,
              "past_key must be [", B, ", ", Hkv, ", P, ", Dk, "], got ", past_k->text());
    ctx.check(past_v->rank() == 4 && past_v->dim(0) == B && past_v->dim(1) == Hkv && past_v->dim(3) == Dv &&
                  past_v->dim(2) == past_k->dim(2),
              "past_value must be [", B, ", ", Hkv, ", ", past_k->dim(2), ", ", Dv, "], got ",
              past_v->text());
    P = past_k->dim(2);
    pk = nn_load(*past_k);
    pv = nn_load(*past_v);
  }
  const int64_t T = P + Skv;
  // present_key / present_value: past then current along the sequence.
  std::vector<double> present_k(size_t(B * Hkv * T * Dk)), present_v(size_t(B * Hkv * T * Dv));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < Hkv; ++h)
      for (int64_t t = 0; t < T; ++t) {
        for (int64_t d = 0; d < Dk; ++d)
          present_k[size_t(((b * Hkv + h) * T + t) * Dk + d)] =
              t < P ? pk[size_t(((b * Hkv + h) * P + t) * Dk + d)] : K.at(b, h, t - P, d);
        for (int64_t d = 0; d < Dv; ++d)
          present_v[size_t(((b * Hkv + h) * T + t) * Dv + d)] =
              t < P ? pv[size_t(((b * Hkv + h) * P + t) * Dv + d)] : V.at(b, h, t - P, d);
      }
  const double scale =
      ctx.has_attr("scale") ? double(ctx.attr_float("scale", 1.0f)) : 1.0 / std::sqrt(double(Dk));
  const double softcap = ctx.attr_float("softcap", 0.0f);
  const bool causal = ctx.attr_int("is_causal", 0) != 0;
  const int64_t mode = ctx.attr_int("qk_matmul_output_mode", 0);
  ctx.check(mode >= 0 && mode <= 3, "qk_matmul_output_mode must be 0..3, got ", mode);
  // Mask, right-aligned onto [B, Hq, Sq, T]; a shorter last dim is padded with -inf.
  Shape ms{1, 1, 1, 1};
  std::vector<double> mv;
  const bool bool_mask = mask && mask->dtype() == DType::boolean;
  if (mask) {
    ctx.check(mask->rank() >= 1 && mask->rank() <= 4, "attn_mask must have rank 1..4, got ", mask->text());
    for (int64_t i = 0; i < mask->rank(); ++i) ms[size_t(4 - mask->rank() + i)] = mask->dim(i);
    const Shape want{B, Hq, Sq, ms[3]};
    for (size_t i = 0; i < 3; ++i)
      ctx.check(ms[i] == 1 || ms[i] == want[i], "attn_mask ", mask->text(), " does not broadcast to [", B,
                ", ", Hq, ", ", Sq, ", ", T, "]");
    ctx.check(ms[3] <= T, "attn_mask last dim ", ms[3], " exceeds the total sequence length ", T);
    mv = nn_load(*mask);
  }
  std::vector<int64_t> nonpad_len;
  if (nonpad) {
    nonpad_len = nonpad->to_int_vector();
    ctx.check(int64_t(nonpad_len.size()) == B, "nonpad_kv_seqlen must have ", B, " values");
  }
  const int64_t groups = Hq / Hkv;
  std::vector<double> y(size_t(B * Hq * Sq * Dv)), qk_out(size_t(B * Hq * Sq * T));
  std::vector<double> score(static_cast<size_t>(T));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < Hq; ++h) {
      const int64_t kh = h / groups;
      for (int64_t i = 0; i < Sq; ++i) {
        for (int64_t j = 0; j < T; ++j) {
          double s = 0;
          for (int64_t d = 0; d < Dk; ++d)
            s += Q.at(b, h, i, d) * present_k[size_t(((b * Hkv + kh) * T + j) * Dk + d)];
          s *= scale;
          const size_t qo = size_t(((b * Hq + h) * Sq + i) * T + j);
          if (mode == 0) qk_out[qo] = s;
          if (softcap > 0) s = softcap * std::tanh(s / softcap);
          if (mode == 1) qk_out[qo] = s;
          double bias = 0;
          if (mask) {
            if (j >= ms[3]) {
              bias = kNegInf;
            } else {
              const int64_t mi =
                  (((ms[0] == 1 ? 0 : b) * ms[1] + (ms[1] == 1 ? 0 : h)) * ms[2] + (ms[2] == 1 ? 0 : i)) *
                      ms[3] +
                  j;
              const double m = mv[size_t(mi)];
              bias = bool_mask ? (m != 0 ? 0.0 : kNegInf) : m;
            }
          }
          if (causal && j > P + i) bias += kNegInf;
          if (nonpad && j >= nonpad_len[size_t(b)]) bias += kNegInf;
          s += bias;
          if (mode == 2) qk_out[qo] = s;
          score[size_t(j)] = s;
        }
        double mx = kNegInf;
        for (int64_t j = 0; j < T; ++j) mx = std::max(mx, score[size_t(j)]);
        double sum = 0;
        for (int64_t j = 0; j < T; ++j) {
          score[size_t(j)] = std::exp(score[size_t(j)] - mx);
          sum += score[size_t(j)];
        }
        for (int64_t j = 0; j < T; ++j) {
          score[size_t(j)] /= sum;
          if (mode == 3) qk_out[size_t(((b * Hq + h) * Sq + i) * T + j)] = score[size_t(j)];
        }
        for (int64_t d = 0; d < Dv; ++d) {
          double acc = 0;
          for (int64_t j = 0; j < T; ++j)
            acc += score[size_t(j)] * present_v[size_t(((b * Hkv + kh) * T + j) * Dv + d)];
          // Y in the layout of Q: [B, Hq, Sq, Dv] or [B, Sq, Hq*Dv].
          const size_t yo =
              Q.three ? size_t(((b * Sq + i) * Hq + h) * Dv + d) : size_t(((b * Hq + h) * Sq + i) * Dv + d);
          y[yo] = acc;
        }
      }
    }
  const Shape ys = Q.three ? Shape{B, Sq, Hq * Dv} : Shape{B, Hq, Sq, Dv};
  nn_emit(ctx, 0, q.dtype(), ys, y);
  if (ctx.num_outputs() > 1 && ctx.output_requested(1))
    nn_emit(ctx, 1, k.dtype(), {B, Hkv, T, Dk}, present_k);
  if (ctx.num_outputs() > 2 && ctx.output_requested(2))
    nn_emit(ctx, 2, v.dtype(), {B, Hkv, T, Dv}, present_v);
  if (ctx.num_outputs() > 3 && ctx.output_requested(3)) nn_emit(ctx, 3, q.dtype(), {B, Hq, Sq, T}, qk_out);
}

// RotaryEmbedding (opset 23): input [B, H, S, D] or [B, S, H*D] (num_heads).
void rotary_embedding_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.required_input(0);
  const Tensor& cosc = ctx.required_input(1);
  const Tensor& sinc = ctx.required_input(2);
  const Tensor* pos = ctx.has_input(3) ? ctx.input(3) : nullptr;
  nn_require_float(ctx, x, "input");
  ctx.check(x.rank() == 3 || x.rank() == 4, "input must be 3-D or 4-D, got ", x.text());
  const HeadView X = head_view(ctx, x, ctx.attr_int("num_heads", 0), "input");
  const int64_t B = X.b, H = X.h, S = X.s, D = X.d;
  int64_t rot = ctx.attr_int("rotary_embedding_dim", 0);
  if (rot == 0) rot = D;
  ctx.check(rot > 0 && rot <= D && rot % 2 == 0, "rotary_embedding_dim ", rot,
            " must be even and <= head size ", D);
  const int64_t half = rot / 2;
  ctx.check(cosc.shape() == sinc.shape(), "cos_cache and sin_cache shapes differ");
  ctx.check(cosc.dim(-1) == half, "cos_cache last dim ", cosc.dim(-1),
            " must be rotary_embedding_dim/2 = ", half);
  std::vector<int64_t> pids;
  if (pos) {
    ctx.check(pos->shape() == Shape{B, S}, "position_ids must be [", B, ", ", S, "], got ", pos->text());
    ctx.check(cosc.rank() == 2, "with position_ids the caches must be [max_position, ", half, "]");
    pids = pos->to_int_vector();
    for (int64_t p : pids) ctx.check(p >= 0 && p < cosc.dim(0), "position id ", p, " is out of range");
  } else {
    ctx.check(cosc.rank() == 3 && cosc.dim(0) == B && cosc.dim(1) == S,
              "without position_ids the caches must be [", B, ", ", S, ", ", half, "], got ", cosc.text());
  }
  const bool inter = ctx.attr_int("interleaved", 0) != 0;
  const std::vector<double> cv = nn_load(cosc), sv = nn_load(sinc);
  std::vector<double> out(X.v.size());
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t s = 0; s < S; ++s) {
        const int64_t row = pos ? pids[size_t(b * S + s)] : b * S + s;
        auto put = [&](int64_t d, double val) {
          const size_t o =
              X.three ? size_t(((b * S + s) * H + h) * D + d) : size_t(((b * H + h) * S + s) * D + d);
          out[o] = val;
        };
        for (int64_t i = 0; i < half; ++i) {
          const double c = cv[size_t(row * half + i)], sn = sv[size_t(row * half + i)];
          const int64_t i1 = inter ? 2 * i : i, i2 = inter ? 2 * i + 1 : i + half;
          const double x1 = X.at(b, h, s, i1), x2 = X.at(b, h, s, i2);
          put(i1, c * x1 - sn * x2);
          put(i2, sn * x1 + c * x2);
        }
        for (int64_t d = rot; d < D; ++d) put(d, X.at(b, h, s, d));
      }
  nn_emit(ctx, 0, x.dtype(), x.shape(), out);
}

// LinearAttention (opset 27): a recurrent state S [B, Hkv, dk, dv] updated per
// token by the chosen rule, read by each query head. Inputs are [B, T, H*D].
void linear_attention_kernel(KernelContext& ctx) {
  const Tensor& q = ctx.required_input(0);
  const Tensor& k = ctx.required_input(1);
  const Tensor& v = ctx.required_input(2);
  const Tensor* past = ctx.has_input(3) ? ctx.input(3) : nullptr;
  const Tensor* decay = ctx.has_input(4) ? ctx.input(4) : nullptr;
  const Tensor* beta = ctx.has_input(5) ? ctx.input(5) : nullptr;
  nn_require_float(ctx, q, "query");
  const std::string rule = ctx.attr_string("update_rule", "gated_delta");
  ctx.check(rule == "linear" || rule == "gated" || rule == "delta" || rule == "gated_delta",
            "unknown update_rule '", rule, "'");
  const bool gating = rule == "gated" || rule == "gated_delta";
  const bool delta = rule == "delta" || rule == "gated_delta";
  ctx.check(gating == (decay != nullptr), "update_rule '", rule, gating ? "' requires" : "' forbids",
            " the decay input");
  ctx.check(delta == (beta != nullptr), "update_rule '", rule, delta ? "' requires" : "' forbids",
            " the beta input");
  const int64_t hq = ctx.attr_int("q_num_heads", 0), hk = ctx.attr_int("kv_num_heads", 0);
  ctx.check(hq > 0 && hk > 0 && hq % hk == 0, "q_num_heads (", hq,
            ") must be a positive multiple of kv_num_heads (", hk, ")");
  ctx.check(q.rank() == 3 && k.rank() == 3 && v.rank() == 3, "query, key, value must be [B, T, H*D]");
  const int64_t B = q.dim(0), T = q.dim(1);
  ctx.check(k.dim(0) == B && v.dim(0) == B && k.dim(1) == T && v.dim(1) == T,
            "query, key, value disagree on B or T");
  ctx.check(q.dim(2) % hq == 0 && v.dim(2) % hk == 0, "hidden sizes are not divisible by the head counts");
  const int64_t dk = q.dim(2) / hq, dv = v.dim(2) / hk, group = hq / hk;
  ctx.check(k.dim(2) == hk * dk, "key hidden size ", k.dim(2), " must be kv_num_heads * d_k = ", hk * dk);
  bool decay_per_dim = false;
  if (decay) {
    ctx.check(decay->rank() == 3 && decay->dim(0) == B && decay->dim(1) == T &&
                  (decay->dim(2) == hk || decay->dim(2) == hk * dk),
              "decay must be [", B, ", ", T, ", ", hk, " or ", hk * dk, "], got ", decay->text());
    decay_per_dim = decay->dim(2) == hk * dk;
  }
  if (beta)
    ctx.check(beta->rank() == 3 && beta->dim(0) == B && beta->dim(1) == T &&
                  (beta->dim(2) == hk || beta->dim(2) == 1),
              "beta must be [", B, ", ", T, ", ", hk, " or 1], got ", beta->text());
  std::vector<double> state(size_t(B * hk * dk * dv), 0.0);
  if (past) {
    ctx.check(past->shape() == Shape{B, hk, dk, dv}, "past_state must be [", B, ", ", hk, ", ", dk, ", ", dv,
              "], got ", past->text());
    state = nn_load(*past);
  }
  const double scale_attr = ctx.attr_float("scale", 0.0f);
  const double scale = scale_attr == 0.0 ? 1.0 / std::sqrt(double(dk)) : scale_attr;
  const std::vector<double> vq = nn_load(q), vk = nn_load(k), vv = nn_load(v);
  const std::vector<double> vd = decay ? nn_load(*decay) : std::vector<double>();
  const std::vector<double> vb = beta ? nn_load(*beta) : std::vector<double>();
  std::vector<double> out(size_t(B * T * hq * dv), 0.0), vt(static_cast<size_t>(dv));
  auto S = [&](int64_t b, int64_t h, int64_t i, int64_t j) -> double& {
    return state[size_t(((b * hk + h) * dk + i) * dv + j)];
  };
  for (int64_t t = 0; t < T; ++t)
    for (int64_t b = 0; b < B; ++b) {
      for (int64_t h = 0; h < hk; ++h) {
        const double* kt = vk.data() + (b * T + t) * hk * dk + h * dk;
        const double* vt_in = vv.data() + (b * T + t) * hk * dv + h * dv;
        if (gating)
          for (int64_t i = 0; i < dk; ++i) {
            const double g = decay_per_dim ? vd[size_t((b * T + t) * hk * dk + h * dk + i)]
                                           : vd[size_t((b * T + t) * hk + h)];
            for (int64_t j = 0; j < dv; ++j) S(b, h, i, j) *= std::exp(g);
          }
        for (int64_t j = 0; j < dv; ++j) vt[size_t(j)] = vt_in[j];
        if (delta) {
          const int64_t bl = beta->dim(2);
          const double bt = vb[size_t((b * T + t) * bl + (bl == 1 ? 0 : h))];
          for (int64_t j = 0; j < dv; ++j) {
            double r = 0;
            for (int64_t i = 0; i < dk; ++i) r += S(b, h, i, j) * kt[i];
            vt[size_t(j)] = bt * (vt[size_t(j)] - r);
          }
        }
        for (int64_t i = 0; i < dk; ++i)
          for (int64_t j = 0; j < dv; ++j) S(b, h, i, j) += kt[i] * vt[size_t(j)];
      }
      for (int64_t h = 0; h < hq; ++h) {
        const double* qt = vq.data() + (b * T + t) * hq * dk + h * dk;
        for (int64_t j = 0; j < dv; ++j) {
          double acc = 0;
          for (int64_t i = 0; i < dk; ++i) acc += qt[i] * S(b, h / group, i, j);
          out[size_t(((b * T + t) * hq + h) * dv + j)] = scale * acc;
        }
      }
    }
  nn_emit(ctx, 0, q.dtype(), {B, T, hq * dv}, out);
  if (ctx.num_outputs() > 1 && ctx.output_requested(1))
    nn_emit(ctx, 1, past ? past->dtype() : q.dtype(), {B, hk, dk, dv}, state);
}

}  // namespace

void register_attention_kernels(KernelTable& t) {
  t.add("Attention", attention_kernel);
  t.add("RotaryEmbedding", rotary_embedding_kernel);
  t.add("LinearAttention", linear_attention_kernel);
}

}  // namespace tessera::kernels::ref
