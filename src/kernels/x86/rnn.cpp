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

}  // namespace

void lstm_f32(const LstmParams& p, const float* x, const float* w, const float* r, const float* b,
              const float* h0, const float* c0, float* y, float* yh, float* yc, ThreadPool* pool) {
  const size_t per_dir = size_t(std::max<int64_t>(1, p.seq * p.batch * 4 * p.hidden));
  thread_local AlignedScratch tl_xw;
  float* xw = tl_xw.get(per_dir * size_t(p.dirs));
  // Both directions at once on two threads, each with its products unthreaded: a step's recurrent GEMV
  // streams all of R (4 hidden^2 floats, L3 at best), so two cores streaming one each beat two splitting
  // one, and the steps need no fork and join.
  if (p.dirs == 2 && pool && pool->num_threads() >= 2) {
    pool->run(2, [&](int64_t d) {
      lstm_direction(p, int(d), x, w, r, b, h0, c0, y, yh, yc, xw + size_t(d) * per_dir, nullptr);
    });
    return;
  }
  for (int d = 0; d < p.dirs; ++d) lstm_direction(p, d, x, w, r, b, h0, c0, y, yh, yc, xw, pool);
}

}  // namespace tessera::kernels::x86
