// LSTM and GRU. LSTM (ONNX gate order i, o, f, c; sigmoid / tanh / tanh, no peepholes, clip or coupled
// input-forget gate), layout 0 ([seq, batch, ...]), f32. Per direction the input's products for every step
// are one GEMM (with both biases); each step then adds the recurrent product (a GEMV against R for batch 1)
// and runs the gates as vector passes. R is read as GEMM panels (RnnWeights::r_packed, packed once by the
// pack_recurrent pass, or here per call for a sequence long enough to repay it): a panel streams as one run
// of lines, 45 against 53 us a step for 4 MB from L3 read in place (Zen 4).
#pragma once

#include <cstdint>

#include "core/thread_pool.h"
#include "kernels/x86/gemm.h"

namespace tessera::kernels::x86 {

struct LstmParams {
  int64_t seq = 0, batch = 0, input = 0, hidden = 0;
  int dirs = 1;          // 2: bidirectional (direction 1 runs in reverse)
  bool reverse = false;  // the single direction runs in reverse
};

// The weights of every direction: W [dirs, gates hidden, input] and R [dirs, gates hidden, hidden] in place,
// or per direction d, W_d^T (input x gates hidden) and R_d^T (hidden x gates hidden) as PackedB.
struct RnnWeights {
  const float* w = nullptr;
  const float* r = nullptr;
  const PackedB* w_packed = nullptr;  // [dirs], instead of w
  const PackedB* r_packed = nullptr;  // [dirs], instead of r
};

// x [seq, batch, input], b [dirs, 8 hidden] or null, h0 / c0 [dirs, batch, hidden] or null (zeros); y [seq,
// dirs, batch, hidden] or null, yh / yc [dirs, batch, hidden] or null.
void lstm_f32(const LstmParams& p, const float* x, const RnnWeights& wr, const float* b, const float* h0,
              const float* c0, float* y, float* yh, float* yc, ThreadPool* pool);

// GRU with linear_before_reset = 1 (as PyTorch exports nn.GRU; gate order z, r, h; sigmoid / tanh): the same
// shapes with 3 gates instead of 4 (LstmParams; no cell state). h~ = tanh(x Wh + Wbh + r (h Rh + Rbh)).
void gru_f32(const LstmParams& p, const float* x, const RnnWeights& wr, const float* b, const float* h0,
             float* y, float* yh, ThreadPool* pool);

}  // namespace tessera::kernels::x86
