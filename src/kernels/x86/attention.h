// Fused scaled-dot-product attention, f32:
//   O[b] = softmax(scale * Q[b] K[b]^T + mask[b]) V[b]      per batch index b
// Queries go in blocks (up to 64K scores, so L2-resident; fewer rows when
// threads need more tasks). Up to 512 keys, a block's scores against all keys
// are formed in a per-thread buffer, masked, exponentiated (less the row's max)
// and multiplied by V straight into the output, whose rows are then divided by
// their sums; beyond, keys go in blocks of 512 with an online softmax (flash
// attention: running max and sum, the output rescaled per key block) — the
// Lq x Lk matrix of a long sequence is never materialized. Tasks
// are (batch index, query block) pairs spread over the pool; the GEMMs run
// single-threaded inside a task.
#pragma once

#include <cstdint>
#include <vector>

#include "core/thread_pool.h"

namespace tessera::kernels::x86 {

// A tensor broadcast to the scores [batch, lq, lk]: element (b, i, j) at
// data[base[b] + i * q_stride + j * k_stride] (strides 0 where it broadcasts; k_stride 0 or 1).
template <typename T>
struct ScoreOperand {
  const T* data = nullptr;
  std::vector<int64_t> base;
  int64_t q_stride = 0, k_stride = 0;
};

// One matrix per batch index: element (b, r, c) at data[base[b] + r * rs + c] — rows at any stride,
// columns contiguous; base empty: the batch's matrices packed one after another (base[b] = b * rows * rs).
// Views of transposed tensors (heads split from [B, L, H*D], or merged back) are read and written in place.
template <typename T>
struct MatrixOperand {
  T* data = nullptr;
  std::vector<int64_t> base;
  int64_t rs = 0;
  int64_t at(int64_t b, int64_t rows) const { return base.empty() ? b * rows * rs : base[size_t(b)]; }
};

struct AttentionArgs {
  int64_t batch = 1, lq = 0, lk = 0, d = 0, dv = 0;
  MatrixOperand<const float> q;  // [batch, lq, d]
  MatrixOperand<const float> k;  // [batch, lk, d], or [batch, d, lk] when k_transposed
  bool k_transposed = false;
  MatrixOperand<const float> v;  // [batch, lk, dv]
  float scale = 1.0f;
  // Optional, applied in this order after scaling: scores where cond != keep_where become `fill`
  // (masked_fill / Where as exporters write causal masks), then the additive mask.
  ScoreOperand<bool> cond;
  bool keep_where = false;
  float fill = 0.0f;
  ScoreOperand<float> mask;
  MatrixOperand<float> out;  // [batch, lq, dv]
};

void attention_f32(const AttentionArgs& a, ThreadPool* pool);

}  // namespace tessera::kernels::x86
