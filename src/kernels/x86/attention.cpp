#include "kernels/x86/attention.h"

#include <algorithm>
#include <vector>

#include "kernels/x86/eltwise.h"
#include "kernels/x86/gemm.h"

namespace tessera::kernels::x86 {

namespace {
// Query rows per task: as many as keep the block's scores within ~256 KiB of L2 (so K and V are packed
// once per head rather than once per small block), halved while there are too few tasks for the threads.
int64_t query_block(const AttentionArgs& a, int threads) {
  int64_t qb = std::clamp<int64_t>((int64_t(64) << 10) / std::max<int64_t>(a.lk, 1), 8, 512);
  qb = std::min(qb, a.lq);
  while (qb > 16 && a.batch * ((a.lq + qb - 1) / qb) < 4 * threads) qb = (qb + 1) / 2;
  return std::max<int64_t>(qb, 1);
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
    float* o = a.out + (b * a.lq + q0) * a.dv;
    if (a.lk == 0) {  // softmax over no keys: ONNX gives an empty sum; leave zeros
      std::fill(o, o + rows * a.dv, 0.0f);
      return;
    }
    thread_local std::vector<float> scores;
    if (scores.size() < size_t(rows * a.lk)) scores.resize(size_t(kQueryBlock * a.lk));
    float* s = scores.data();
    GemmEpilogue ep;
    ep.alpha = a.scale;
    const float* q = a.q + (b * a.lq + q0) * a.d;
    if (a.k_transposed)
      sgemm(rows, a.lk, a.d, q, a.d, false, a.k + b * a.d * a.lk, a.lk, false, s, a.lk, ep, nullptr);
    else
      sgemm(rows, a.lk, a.d, q, a.d, false, a.k + b * a.lk * a.d, a.d, true, s, a.lk, ep, nullptr);
    if (a.cond.data) {
      for (int64_t i = 0; i < rows; ++i) {
        const bool* c = a.cond.data + a.cond.base[size_t(b)] + (q0 + i) * a.cond.q_stride;
        float* row = s + i * a.lk;
        for (int64_t j = 0; j < a.lk; ++j)
          if (c[j * a.cond.k_stride] != a.keep_where) row[j] = a.fill;
      }
    }
    if (a.mask.data) {
      for (int64_t i = 0; i < rows; ++i) {
        const float* m = a.mask.data + a.mask.base[size_t(b)] + (q0 + i) * a.mask.q_stride;
        K.binary(BinaryOp::add, s + i * a.lk, 1, m, a.mask.k_stride, s + i * a.lk, a.lk);
      }
    }
    K.softmax_rows(s, s, rows, a.lk);
    sgemm(rows, a.dv, a.lk, s, a.lk, false, a.v + b * a.lk * a.dv, a.dv, false, o, a.dv, {}, nullptr);
  };
  if (pool && tasks > 1)
    pool->run(tasks, task);
  else
    for (int64_t t = 0; t < tasks; ++t) task(t);
}

}  // namespace tessera::kernels::x86
