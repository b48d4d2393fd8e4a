#include "kernels/x86/rnn.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "core/memory.h"
#include "kernels/x86/eltwise.h"
#include "kernels/x86/gemm.h"

namespace tessera::kernels::x86 {

namespace {

// Direction d of the LSTM, its products threaded over pool (or not).
void lstm_direction(const LstmParams& p, int d, const float* x, const float* w, const float* r,
                    const float* b, const float* h0, const float* c0, float* y, float* yh, float* yc,
                    float* xw, ThreadPool* pool) {
  const int64_t S = p.seq, B = p.batch, I = p.input, H = p.hidden, G = 4 * H;
  const bool rev = p.dirs == 2 ? d == 1 : p.reverse;
  const float* wd = w + d * G * I;
  const float* rd = r + d * G * H;
  std::vector<float> bias(static_cast<size_t>(G)), h(static_cast<size_t>(B * H)), c(h.size()), tc(h.size());
  for (int64_t g = 0; g < G; ++g) bias[size_t(g)] = b ? b[d * 2 * G + g] + b[d * 2 * G + G + g] : 0.0f;
  // every step's input products at once: xw[t * B + n] = x[t][n] W^T + Wb + Rb
  GemmEpilogue ep;
  ep.bias = bias.data();
  if (S * B > 0) sgemm(S * B, G, I, x, I, false, wd, I, true, xw, G, ep, pool);
  if (h0) std::memcpy(h.data(), h0 + d * B * H, size_t(B * H) * sizeof(float));
  if (c0) std::memcpy(c.data(), c0 + d * B * H, size_t(B * H) * sizeof(float));
  GemmEpilogue acc;
  acc.beta = 1.0f;  // onto the step's input products
  for (int64_t step = 0; step < S; ++step) {
    const int64_t t = rev ? S - 1 - step : step;
    float* gt = xw + t * B * G;  // [B, 4H]: the gates i, o, f, c
    sgemm(B, G, H, h.data(), H, false, rd, H, true, gt, G, acc, pool);
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
void gru_direction(const LstmParams& p, int d, const float* x, const float* w, const float* r, const float* b,
                   const float* h0, float* y, float* yh, float* xw, ThreadPool* pool) {
  const int64_t S = p.seq, B = p.batch, I = p.input, H = p.hidden, G = 3 * H;
  const bool rev = p.dirs == 2 ? d == 1 : p.reverse;
  const float* wd = w + d * G * I;
  const float* rd = r + d * G * H;
  std::vector<float> wb(static_cast<size_t>(G), 0.0f), rb(wb.size(), 0.0f), hr(static_cast<size_t>(B * G));
  std::vector<float> h(static_cast<size_t>(B * H));
  if (b)
    for (int64_t g = 0; g < G; ++g) wb[size_t(g)] = b[d * 2 * G + g], rb[size_t(g)] = b[d * 2 * G + G + g];
  GemmEpilogue ep;
  ep.bias = wb.data();
  if (S * B > 0) sgemm(S * B, G, I, x, I, false, wd, I, true, xw, G, ep, pool);
  if (h0) std::memcpy(h.data(), h0 + d * B * H, size_t(B * H) * sizeof(float));
  GemmEpilogue rep;
  rep.bias = rb.data();
  for (int64_t step = 0; step < S; ++step) {
    const int64_t t = rev ? S - 1 - step : step;
    float* gt = xw + t * B * G;  // [B, 3H]: z, r, h of x W^T + Wb
    sgemm(B, G, H, h.data(), H, false, rd, H, true, hr.data(), G, rep, pool);  // h R^T + Rb
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
// steps need no fork and join (the BiLSTM tagger at two threads: 29.7 -> 23.5 ms).
template <class F>
void run_directions(const LstmParams& p, int gates, ThreadPool* pool, F&& dir) {
  const size_t per_dir = size_t(std::max<int64_t>(1, p.seq * p.batch * gates * p.hidden));
  thread_local AlignedScratch tl_xw;
  float* xw = tl_xw.get(per_dir * size_t(p.dirs));
  if (p.dirs == 2 && pool && pool->num_threads() >= 2) {
    pool->run(2, [&](int64_t d) { dir(int(d), xw + size_t(d) * per_dir, nullptr); });
    return;
  }
  for (int d = 0; d < p.dirs; ++d) dir(d, xw, pool);
}

}  // namespace

void gru_f32(const LstmParams& p, const float* x, const float* w, const float* r, const float* b,
             const float* h0, float* y, float* yh, ThreadPool* pool) {
  run_directions(p, 3, pool, [&](int d, float* xw, ThreadPool* tp) {
    gru_direction(p, d, x, w, r, b, h0, y, yh, xw, tp);
  });
}

void lstm_f32(const LstmParams& p, const float* x, const float* w, const float* r, const float* b,
              const float* h0, const float* c0, float* y, float* yh, float* yc, ThreadPool* pool) {
  run_directions(p, 4, pool, [&](int d, float* xw, ThreadPool* tp) {
    lstm_direction(p, d, x, w, r, b, h0, c0, y, yh, yc, xw, tp);
  });
}

}  // namespace tessera::kernels::x86
