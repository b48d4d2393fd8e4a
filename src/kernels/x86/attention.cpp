#include "kernels/x86/attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/memory.h"
#include "kernels/x86/eltwise.h"
#include "kernels/x86/gemm.h"

namespace tessera::kernels::x86 {

namespace {

// Keys per block: up to this many, one pass (scores, exponentials, times V); beyond, flash-style blocks
// of this many keys with an online softmax, so a block's scores stay in L2 whatever the length.
constexpr int64_t kKeyBlock = 512;

// Query rows per task: as many as keep the block's scores within ~256 KiB of L2 (so K and V are packed
// once per head rather than once per small block), halved while there are too few tasks for the threads.
// Under a condition (a causal mask) at most 64: a block stops at its last kept key (keys_needed), the finer
// the closer to the diagonal.
int64_t query_block(const AttentionArgs& a, int threads) {
  const int64_t keys = std::clamp<int64_t>(a.lk, 1, kKeyBlock);
  int64_t qb = std::clamp<int64_t>((int64_t(64) << 10) / keys, 8, a.cond.data ? 64 : 512);
  qb = std::min(qb, a.lq);
  while (qb > 16 && a.batch * ((a.lq + qb - 1) / qb) < 4 * threads) qb = (qb + 1) / 2;
  return std::max<int64_t>(qb, 1);
}

// Score rows are this many floats apart: kb rounded up to whole 64-byte lines, so that every row starts on
// a line (no zmm load or store of the scores splits one): ViT-B/16's attention (197 keys) 5% faster.
int64_t score_stride(int64_t kb) {
  return (kb + 15) / 16 * 16;
}

// scale * Q K^T for keys [j0, j0 + kb) into s (rows x kb, rows lds apart), then the Where condition and
// the mask.
void block_scores(const AttentionArgs& a, int64_t b, int64_t q0, int64_t rows, int64_t j0, int64_t kb,
                  float* s, int64_t lds, const EltwiseKernels& K) {
  GemmEpilogue ep;
  ep.alpha = a.scale;
  const float* q = a.q.data + a.q.at(b, a.lq) + q0 * a.q.rs;
  const float* k = a.k.data + a.k.at(b, a.k_transposed ? a.d : a.lk);
  if (a.k_transposed)
    sgemm(rows, kb, a.d, q, a.q.rs, false, k + j0, a.k.rs, false, s, lds, ep, nullptr);
  else
    sgemm(rows, kb, a.d, q, a.q.rs, false, k + j0 * a.k.rs, a.k.rs, true, s, lds, ep, nullptr);
  if (a.cond.data) {
    for (int64_t i = 0; i < rows; ++i) {
      const bool* c =
          a.cond.data + a.cond.base[size_t(b)] + (q0 + i) * a.cond.q_stride + j0 * a.cond.k_stride;
      float* row = s + i * lds;
      for (int64_t j = 0; j < kb; ++j)
        if (c[j * a.cond.k_stride] != a.keep_where) row[j] = a.fill;
    }
  }
  if (a.mask.data) {
    for (int64_t i = 0; i < rows; ++i) {
      const float* m =
          a.mask.data + a.mask.base[size_t(b)] + (q0 + i) * a.mask.q_stride + j0 * a.mask.k_stride;
      K.binary(BinaryOp::add, s + i * lds, 1, m, a.mask.k_stride, s + i * lds, kb);
    }
  }
}

// Keys [0, end) a query block needs: past the last key any of its rows keeps (a causal mask's diagonal),
// the Where condition fills every score, and exp(fill - max) is exactly 0 in float when the fill is -inf or
// a float's lowest (as exporters write masks) and the row keeps some key: those keys add nothing, and are
// skipped (GPT-2 over 512 tokens: half its attention). All of lk where that does not hold (no condition, an
// additive mask after it, a finite fill, a row with every key filled).
int64_t keys_needed(const AttentionArgs& a, int64_t b, int64_t q0, int64_t rows) {
  if (!a.cond.data || a.mask.data || !(a.fill <= -1e30f) || a.lk == 0) return a.lk;
  int64_t end = 0;
  for (int64_t i = 0; i < rows; ++i) {
    const bool* c = a.cond.data + a.cond.base[size_t(b)] + (q0 + i) * a.cond.q_stride;
    int64_t j = a.lk;
    while (j > 0 && c[(j - 1) * a.cond.k_stride] != a.keep_where) --j;
    if (j == 0) return a.lk;  // a row with every key filled: the reference's uniform softmax
    end = std::max(end, j);
    if (end == a.lk || a.cond.q_stride == 0) break;
  }
  return end;
}

}  // namespace

void attention_f32(const AttentionArgs& a, ThreadPool* pool) {
  if (a.batch <= 0 || a.lq <= 0 || a.dv <= 0) return;
  const EltwiseKernels& K = eltwise_kernels(eltwise_isa());
  const int64_t kQueryBlock = query_block(a, pool ? pool->num_threads() : 1);
  const int64_t blocks = (a.lq + kQueryBlock - 1) / kQueryBlock;
  const int64_t tasks = a.batch * blocks;
  auto task = [&](int64_t t) {
    const int64_t b = t / blocks, q0 = (t % blocks) * kQueryBlock, rows = std::min(kQueryBlock, a.lq - q0);
    const int64_t ors = a.out.rs;
    float* o = a.out.data + a.out.at(b, a.lq) + q0 * ors;
    const float* v = a.v.data + a.v.at(b, a.lk);
    if (a.lk == 0) {  // softmax over no keys: ONNX gives an empty sum; leave zeros
      for (int64_t i = 0; i < rows; ++i) std::fill(o + i * ors, o + i * ors + a.dv, 0.0f);
      return;
    }
    thread_local AlignedScratch scores, stats;
    const int64_t kb_max = std::min(a.lk, kKeyBlock);
    float* s = scores.get(size_t(kQueryBlock * score_stride(kb_max)));
    const int64_t lk = keys_needed(a, b, q0, rows);
    // Running max m, running sum l. Flash-style past kKeyBlock keys: the output block is rescaled by
    // exp(m_old - m_new) before each key block adds its exp(scores - m_new) V. Either way the rows are
    // divided by l at the end, on dv outputs rather than lk probabilities: one pass over the scores fewer
    // than softmax_rows (whisper-base's 500 keys: 131 x 500 scores 16.4 -> 14.5 us).
    float *m = stats.get(size_t(3 * kQueryBlock)), *l = m + rows, *corr = l + rows;
    std::fill(m, m + rows, -std::numeric_limits<float>::infinity());
    std::fill(l, l + rows, 0.0f);
    for (int64_t j0 = 0; j0 < lk; j0 += kKeyBlock) {
      const int64_t kb = std::min(kKeyBlock, lk - j0), lds = score_stride(kb);
      block_scores(a, b, q0, rows, j0, kb, s, lds, K);
      K.online_softmax_rows(s, lds, rows, kb, m, l, corr);
      if (j0 > 0)
        for (int64_t i = 0; i < rows; ++i)
          K.binary(BinaryOp::mul, o + i * ors, 1, corr + i, 0, o + i * ors, a.dv);
      GemmEpilogue ep;
      ep.beta = j0 > 0 ? 1.0f : 0.0f;
      sgemm(rows, a.dv, kb, s, lds, false, v + j0 * a.v.rs, a.v.rs, false, o, ors, ep, nullptr);
    }
    for (int64_t i = 0; i < rows; ++i) {
      // a row whose running max is not finite (all -inf, a +inf or NaN) is NaN, as the reference's softmax
      const float inv = std::isfinite(m[i]) ? 1.0f / l[i] : std::numeric_limits<float>::quiet_NaN();
      // a loop the compiler vectorizes: dv is short, and a kernel call per row is not free
      float* row = o + i * ors;
      for (int64_t j = 0; j < a.dv; ++j) row[j] *= inv;
    }
  };
  if (pool && tasks > 1)
    pool->run(tasks, task);
  else
    for (int64_t t = 0; t < tasks; ++t) task(t);
}

}  // namespace tessera::kernels::x86
