#include "kernels/x86/rnn.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "core/cpu_features.h"
#include "core/memory.h"
#include "kernels/x86/eltwise.h"
#include "kernels/x86/gemm.h"

namespace tessera::kernels::x86 {

namespace {

// One direction's weights as its products read them: the input GEMM's W_d^T and the step GEMV's R_d^T,
// packed (given, or R packed here when the sequence repays the copy: about two steps' GEMVs) or in place.
struct DirectionWeights {
  const float* w = nullptr;  // [gates hidden, input] in place, or w_packed
  const float* r = nullptr;  // [gates hidden, hidden] in place, or r_packed
  PackedB w_packed, r_packed;
  int64_t gh = 0, input = 0, hidden = 0;
  static constexpr int64_t kPackSteps = 16;

  DirectionWeights(const RnnWeights& wr, int d, const LstmParams& p, int gates, AlignedScratch& scratch)
      : gh(gates * p.hidden), input(p.input), hidden(p.hidden) {
    if (wr.w_packed)
      w_packed = wr.w_packed[d];
    else
      w = wr.w + d * gh * input;
    if (wr.r_packed) {
      r_packed = wr.r_packed[d];
    } else if (p.seq < kPackSteps) {
      r = wr.r + d * gh * hidden;
    } else {
      const int64_t kc = PackedB::kc_for(hidden, gh), nr = PackedB::native_nr();
      float* dst = scratch.get(PackedB::packed_floats(hidden, gh, kc, nr));
      PackedB::pack_into(dst, wr.r + d * gh * hidden, hidden, true, hidden, gh);
      r_packed = PackedB::view(dst, hidden, gh, kc, nr, nullptr);
    }
  }
  // c (m rows of gates hidden) = x W^T with ep
  void input_product(int64_t m, const float* x, float* c, const GemmEpilogue& ep, ThreadPool* pool) const {
    if (w)
      sgemm(m, gh, input, x, input, false, w, input, true, c, gh, ep, pool);
    else
      sgemm_packed(m, x, input, false, w_packed, c, gh, ep, pool);
  }
  // c (m rows of gates hidden) = h R^T with ep
  void step_product(int64_t m, const float* h, float* c, const GemmEpilogue& ep, ThreadPool* pool) const {
    if (r)
      sgemm(m, gh, hidden, h, hidden, false, r, hidden, true, c, gh, ep, pool);
    else
      sgemm_packed(m, h, hidden, false, r_packed, c, gh, ep, pool);
  }
};

// Direction d of the LSTM, its products threaded over pool (or not).
void lstm_direction(const LstmParams& p, int d, const float* x, const RnnWeights& wr, const float* b,
                    const float* h0, const float* c0, float* y, float* yh, float* yc, float* xw,
                    ThreadPool* pool) {
  const int64_t S = p.seq, B = p.batch, H = p.hidden, G = 4 * H;
  const bool rev = p.dirs == 2 ? d == 1 : p.reverse;
  thread_local AlignedScratch tl_r;
  const DirectionWeights dw(wr, d, p, 4, tl_r);
  std::vector<float> bias(static_cast<size_t>(G)), h(static_cast<size_t>(B * H)), c(h.size()), tc(h.size());
  for (int64_t g = 0; g < G; ++g) bias[size_t(g)] = b ? b[d * 2 * G + g] + b[d * 2 * G + G + g] : 0.0f;
  // every step's input products at once: xw[t * B + n] = x[t][n] W^T + Wb + Rb
  GemmEpilogue ep;
  ep.bias = bias.data();
  if (S * B > 0) dw.input_product(S * B, x, xw, ep, pool);
  if (h0) std::memcpy(h.data(), h0 + d * B * H, size_t(B * H) * sizeof(float));
  if (c0) std::memcpy(c.data(), c0 + d * B * H, size_t(B * H) * sizeof(float));
  GemmEpilogue acc;
  acc.beta = 1.0f;  // onto the step's input products
  for (int64_t step = 0; step < S; ++step) {
    const int64_t t = rev ? S - 1 - step : step;
    float* gt = xw + t * B * G;  // [B, 4H]: the gates i, o, f, c
    dw.step_product(B, h.data(), gt, acc, pool);
    for (int64_t n = 0; n < B; ++n) {
      float* gn = gt + n * G;
      unary_f32(UnaryOp::sigmoid, gn, gn, 3 * H, nullptr);
      unary_f32(UnaryOp::tanh, gn + 3 * H, gn + 3 * H, H, nullptr);
      float* cn = c.data() + n * H;
      for (int64_t k = 0; k < H; ++k) cn[k] = gn[2 * H + k] * cn[k] + gn[k] * gn[3 * H + k];
      float* tn = tc.data() + n * H;
      unary_f32(UnaryOp::tanh, cn, tn, H, nullptr);
      float* hn = h.data() + n * H;
      for (int64_t k = 0; k < H; ++k) hn[k] = gn[H + k] * tn[k];
    }
    if (y) std::memcpy(y + (t * p.dirs + d) * B * H, h.data(), size_t(B * H) * sizeof(float));
  }
  if (yh) std::memcpy(yh + d * B * H, h.data(), size_t(B * H) * sizeof(float));
  if (yc) std::memcpy(yc + d * B * H, c.data(), size_t(B * H) * sizeof(float));
}

// Direction d of the GRU (linear_before_reset), as lstm_direction.
void gru_direction(const LstmParams& p, int d, const float* x, const RnnWeights& wr, const float* b,
                   const float* h0, float* y, float* yh, float* xw, ThreadPool* pool) {
  const int64_t S = p.seq, B = p.batch, H = p.hidden, G = 3 * H;
  const bool rev = p.dirs == 2 ? d == 1 : p.reverse;
  thread_local AlignedScratch tl_r;
  const DirectionWeights dw(wr, d, p, 3, tl_r);
  std::vector<float> wb(static_cast<size_t>(G), 0.0f), rb(wb.size(), 0.0f), hr(static_cast<size_t>(B * G));
  std::vector<float> h(static_cast<size_t>(B * H));
  if (b)
    for (int64_t g = 0; g < G; ++g) wb[size_t(g)] = b[d * 2 * G + g], rb[size_t(g)] = b[d * 2 * G + G + g];
  GemmEpilogue ep;
  ep.bias = wb.data();
  if (S * B > 0) dw.input_product(S * B, x, xw, ep, pool);
  if (h0) std::memcpy(h.data(), h0 + d * B * H, size_t(B * H) * sizeof(float));
  GemmEpilogue rep;
  rep.bias = rb.data();
  for (int64_t step = 0; step < S; ++step) {
    const int64_t t = rev ? S - 1 - step : step;
    float* gt = xw + t * B * G;                          // [B, 3H]: z, r, h of x W^T + Wb
    dw.step_product(B, h.data(), hr.data(), rep, pool);  // h R^T + Rb
    for (int64_t n = 0; n < B; ++n) {
      float* gn = gt + n * G;
      const float* hn_r = hr.data() + n * G;
      for (int64_t k = 0; k < 2 * H; ++k) gn[k] += hn_r[k];
      unary_f32(UnaryOp::sigmoid, gn, gn, 2 * H, nullptr);
      for (int64_t k = 0; k < H; ++k) gn[2 * H + k] += gn[H + k] * hn_r[2 * H + k];
      unary_f32(UnaryOp::tanh, gn + 2 * H, gn + 2 * H, H, nullptr);
      float* hn = h.data() + n * H;
      for (int64_t k = 0; k < H; ++k) hn[k] = (1.0f - gn[k]) * gn[2 * H + k] + gn[k] * hn[k];
    }
    if (y) std::memcpy(y + (t * p.dirs + d) * B * H, h.data(), size_t(B * H) * sizeof(float));
  }
  if (yh) std::memcpy(yh + d * B * H, h.data(), size_t(B * H) * sizeof(float));
}

// Runs dir(d, xw, pool) for each direction, xw its scratch of seq x batch x gates x hidden floats. Both
// directions at once on two threads, each with its products unthreaded: a step's recurrent GEMV streams all
// of R (gates hidden^2 floats, L3 at best), so two cores streaming one each beat two splitting one, and the
// steps need no fork and join (the BiLSTM tagger at two threads: 29.7 -> 23.5 ms, Zen 4). Except where R
// outgrows a core's L2 but each thread's share of it fits: then the directions run one after the other,
// their GEMVs split over the threads, each core's columns of R staying in its L2 from step to step (the
// Xeon VM, whose L3 reads at memory speed: 4 MB of R a direction, 2 MiB L2s, the tagger 41.8 -> 22.5 ms at
// two threads, `tessera bench`).
template <class F>
void run_directions(const LstmParams& p, int gates, ThreadPool* pool, F&& dir) {
  const size_t per_dir = size_t(std::max<int64_t>(1, p.seq * p.batch * gates * p.hidden));
  thread_local AlignedScratch tl_xw;
  float* xw = tl_xw.get(per_dir * size_t(p.dirs));
  const int64_t r_bytes = int64_t(gates) * p.hidden * p.hidden * int64_t(sizeof(float));
  const int64_t l2 = cpu_features().l2_bytes;
  const bool shares_fit_l2 = pool && r_bytes > l2 && r_bytes <= l2 * pool->num_threads();
  if (p.dirs == 2 && pool && pool->num_threads() >= 2 && !shares_fit_l2) {
    pool->run(2, [&](int64_t d) { dir(int(d), xw + size_t(d) * per_dir, nullptr); });
    return;
  }
  for (int d = 0; d < p.dirs; ++d) dir(d, xw, pool);
}

}  // namespace

void gru_f32(const LstmParams& p, const float* x, const RnnWeights& wr, const float* b, const float* h0,
             float* y, float* yh, ThreadPool* pool) {
  run_directions(p, 3, pool,
                 [&](int d, float* xw, ThreadPool* tp) { gru_direction(p, d, x, wr, b, h0, y, yh, xw, tp); });
}

void lstm_f32(const LstmParams& p, const float* x, const RnnWeights& wr, const float* b, const float* h0,
              const float* c0, float* y, float* yh, float* yc, ThreadPool* pool) {
  run_directions(p, 4, pool, [&](int d, float* xw, ThreadPool* tp) {
    lstm_direction(p, d, x, wr, b, h0, c0, y, yh, yc, xw, tp);
  });
}

}  // namespace tessera::kernels::x86
