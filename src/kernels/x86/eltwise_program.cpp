#include "kernels/x86/eltwise_program.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>

#include "core/memory.h"

namespace tessera::kernels::x86 {

namespace {

// Floats per block: registers + 2 scratch rows fit in ~24 KiB of L1, at least 512, at most 4096 (a short
// program's per-block dispatch, ~20 ns an instruction, was a third of a lone Neg's or HardSigmoid's time at
// 512).
int64_t block_for(int64_t num_registers) {
  int64_t b = 4096;
  while (b > 512 && (num_registers + 2) * b * 4 > (24 << 10)) b /= 2;
  return b;
}

bool as_binary(EwOp op, BinaryOp& b) {
  switch (op) {
    case EwOp::add:
      b = BinaryOp::add;
      return true;
    case EwOp::sub:
      b = BinaryOp::sub;
      return true;
    case EwOp::mul:
      b = BinaryOp::mul;
      return true;
    case EwOp::div:
      b = BinaryOp::div;
      return true;
    case EwOp::pow:
      b = BinaryOp::pow;
      return true;
    default:
      return false;
  }
}

bool as_unary(EwOp op, UnaryOp& u) {
  switch (op) {
    case EwOp::exp:
      u = UnaryOp::exp;
      return true;
    case EwOp::erf:
      u = UnaryOp::erf;
      return true;
    case EwOp::tanh:
      u = UnaryOp::tanh;
      return true;
    case EwOp::sigmoid:
      u = UnaryOp::sigmoid;
      return true;
    case EwOp::relu:
      u = UnaryOp::relu;
      return true;
    case EwOp::silu:
      u = UnaryOp::silu;
      return true;
    case EwOp::hardswish:
      u = UnaryOp::hardswish;
      return true;
    case EwOp::log:
      u = UnaryOp::log;
      return true;
    case EwOp::sin:
      u = UnaryOp::sin;
      return true;
    case EwOp::cos:
      u = UnaryOp::cos;
      return true;
    case EwOp::softplus:
      u = UnaryOp::softplus;
      return true;
    default:
      return false;
  }
}

// Max / min of two runs, NaN-propagating (the reference's): the portable loop (SSE2 compares and masks), or
// AVX2's where the CPU has it.
__attribute__((target("avx2"))) void minmax_avx2(bool is_max, const float* a, const float* b, int64_t sb,
                                                 float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 x = _mm256_loadu_ps(a + i), z = sb ? _mm256_loadu_ps(b + i) : _mm256_set1_ps(*b);
    const __m256 nan = _mm256_cmp_ps(x, z, _CMP_UNORD_Q);  // either is NaN
    // a < b ? b : a (max), b < a ? b : a (min): ties keep a, as the reference
    const __m256 take_b = is_max ? _mm256_cmp_ps(x, z, _CMP_LT_OQ) : _mm256_cmp_ps(z, x, _CMP_LT_OQ);
    const __m256 r = _mm256_blendv_ps(x, z, take_b);
    _mm256_storeu_ps(y + i, _mm256_blendv_ps(r, _mm256_set1_ps(__builtin_nanf("")), nan));
  }
  for (; i < n; ++i) y[i] = ew_apply(is_max ? EwOp::max : EwOp::min, a[i], b[i * sb]);
}

// b read with stride sb (0: a broadcast scalar, not spread over the block first)
void minmax(bool is_max, const float* a, const float* b, int64_t sb, float* y, int64_t n, bool avx2) {
  if (avx2) return minmax_avx2(is_max, a, b, sb, y, n);
  for (int64_t i = 0; i < n; ++i) y[i] = ew_apply(is_max ? EwOp::max : EwOp::min, a[i], b[i * sb]);
}

// hard_sigmoid_half: min(max(a * b + 1/2, 0), 1) with NaN kept (b with stride sb: 0 for a scalar)
__attribute__((target("avx2,fma"))) void hard_sigmoid_half_avx2(const float* a, const float* b, int64_t sb,
                                                                float* y, int64_t n) {
  int64_t i = 0;
  const __m256 zero = _mm256_setzero_ps(), one = _mm256_set1_ps(1.0f), half = _mm256_set1_ps(0.5f);
  for (; i + 8 <= n; i += 8) {
    const __m256 v =
        _mm256_fmadd_ps(_mm256_loadu_ps(a + i), sb ? _mm256_loadu_ps(b + i) : _mm256_set1_ps(*b), half);
    _mm256_storeu_ps(y + i, _mm256_min_ps(one, _mm256_max_ps(zero, v)));  // (max / min return v if NaN)
  }
  for (; i < n; ++i) y[i] = ew_apply(EwOp::hard_sigmoid_half, a[i], b[i * sb]);
}

// Neg, Abs (sign bit flipped / cleared) and threshold (a > b ? a : 0, b with stride sb) 8 lanes at a time:
// the loops the compiler vectorized for SSE2 ran at onnxruntime's time alone, not below it.
__attribute__((target("avx2"))) void sign_avx2(bool neg, const float* a, float* y, int64_t n) {
  const __m256 m = _mm256_castsi256_ps(_mm256_set1_epi32(neg ? int(0x80000000u) : 0x7fffffff));
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 x = _mm256_loadu_ps(a + i);
    _mm256_storeu_ps(y + i, neg ? _mm256_xor_ps(x, m) : _mm256_and_ps(x, m));
  }
  for (; i < n; ++i) y[i] = neg ? -a[i] : std::fabs(a[i]);
}

__attribute__((target("avx2"))) void threshold_avx2(const float* a, const float* b, int64_t sb, float* y,
                                                    int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 x = _mm256_loadu_ps(a + i), t = sb ? _mm256_loadu_ps(b + i) : _mm256_set1_ps(*b);
    _mm256_storeu_ps(y + i, _mm256_and_ps(x, _mm256_cmp_ps(x, t, _CMP_GT_OQ)));
  }
  for (; i < n; ++i) y[i] = ew_apply(EwOp::threshold, a[i], b[i * sb]);
}

// Floor, Ceil, Round (half to even): vroundps on AVX2, the libm calls elsewhere.
__attribute__((target("avx2"))) void round_avx2(EwOp op, const float* a, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 x = _mm256_loadu_ps(a + i);
    _mm256_storeu_ps(y + i, op == EwOp::floor ? _mm256_round_ps(x, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC)
                            : op == EwOp::ceil
                                ? _mm256_round_ps(x, _MM_FROUND_TO_POS_INF | _MM_FROUND_NO_EXC)
                                : _mm256_round_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
  for (; i < n; ++i) y[i] = ew_apply(op, a[i], 0.0f);
}

void round_to(EwOp op, const float* a, float* y, int64_t n, bool avx2) {
  if (avx2) return round_avx2(op, a, y, n);
  for (int64_t i = 0; i < n; ++i) y[i] = ew_apply(op, a[i], 0.0f);
}

}  // namespace

void ew_program_f32(const std::vector<EwInstr>& program, int64_t num_registers,
                    const std::vector<EwOperand>& inputs, float* y, int64_t outer, int64_t inner,
                    ThreadPool* pool) {
  if (outer <= 0 || inner <= 0) return;
  const EltwiseKernels& K = eltwise_kernels(eltwise_isa());
  const bool avx2 = eltwise_isa() != EltIsa::portable;
  const int64_t n_in = int64_t(inputs.size());
  const int64_t kBlock = block_for(num_registers);
  // A block is a run of up to kBlock floats of one row, or whole rows when rows are shorter (channels-last
  // maps scaled per channel: rows of 32-96 floats, one row a block ran at half speed): a row operand is
  // then read from a copy repeated across the block, a column operand from its values each spread over
  // its row.
  const int64_t rows = inner < kBlock ? kBlock / inner : 1;
  const int64_t per_row = rows > 1 ? 1 : (inner + kBlock - 1) / kBlock;
  const int64_t blocks = (outer + rows - 1) / rows * per_row;
  const int64_t span = rows > 1 ? rows * inner : kBlock;  // floats a block holds at most
  // ~16K floats per task: below that, threading costs more than it saves.
  const int64_t grain = std::max<int64_t>(1, (int64_t(1) << 14) / std::min(rows * inner, kBlock));
  parallel_for(pool, blocks, grain, [&](int64_t lo, int64_t hi) {
    thread_local AlignedScratch regs;
    // registers, the broadcast scratch, then (whole rows) a spread block per input
    const size_t spread = rows > 1 ? size_t(n_in) : 0;
    float* const reg0 = regs.get((size_t(num_registers + 2) + spread) * size_t(span));
    float* tmp = reg0 + size_t(num_registers) * size_t(span);
    float* tmp2 = tmp + span;
    float* spread0 = tmp2 + span;
    if (rows > 1)  // row operands repeated over a block once per task
      for (int64_t k = 0; k < n_in; ++k)
        if (inputs[size_t(k)].kind == Bcast::row)
          for (int64_t r = 0; r < rows; ++r)
            std::copy(inputs[size_t(k)].data, inputs[size_t(k)].data + inner, spread0 + k * span + r * inner);
    for (int64_t blk = lo; blk < hi; ++blk) {
      const int64_t o = blk / per_row * rows, nrows = std::min(rows, outer - o);
      const int64_t i0 = (blk % per_row) * kBlock,
                    n = rows > 1 ? nrows * inner : std::min(kBlock, inner - i0);
      auto operand = [&](int32_t k, int64_t& stride) -> const float* {
        if (k >= n_in) {
          stride = 1;
          return reg0 + size_t(k - n_in) * size_t(span);
        }
        const EwOperand& in = inputs[size_t(k)];
        switch (in.kind) {
          case Bcast::full:
            stride = 1;
            return in.data + o * inner + i0;
          case Bcast::row:
            stride = 1;
            return rows > 1 ? spread0 + k * span : in.data + i0;
          case Bcast::col:
            if (rows == 1) {
              stride = 0;
              return in.data + o;
            }
            stride = 1;
            for (int64_t r = 0; r < nrows; ++r)
              std::fill(spread0 + k * span + r * inner, spread0 + k * span + (r + 1) * inner, in.data[o + r]);
            return spread0 + k * span;
          case Bcast::scalar:
            stride = 0;
            return in.data;
        }
        return nullptr;
      };
      for (const EwInstr& ins : program) {
        float* dst = ins.dst < 0 ? y + o * inner + i0 : reg0 + size_t(ins.dst - n_in) * size_t(span);
        int64_t sa = 1, sb = 1;
        const float* a = operand(ins.a, sa);
        BinaryOp bop;
        UnaryOp uop;
        if (as_binary(ins.op, bop)) {
          const float* b = operand(ins.b, sb);
          K.binary(bop, a, sa, b, sb, dst, n);
          continue;
        }
        if (sa == 0) {
          std::fill(tmp, tmp + n, *a);
          a = tmp;
        }
        if (ins.op == EwOp::threshold || ins.op == EwOp::hard_sigmoid_half) {
          const float* b = operand(ins.b, sb);
          if (avx2)
            (ins.op == EwOp::threshold ? threshold_avx2 : hard_sigmoid_half_avx2)(a, b, sb, dst, n);
          else
            for (int64_t i = 0; i < n; ++i) dst[i] = ew_apply(ins.op, a[i], b[i * sb]);
          continue;
        }
        if (ew_arity(ins.op) == 2) {  // Max, Min
          const float* b = operand(ins.b, sb);
          minmax(ins.op == EwOp::max, a, b, sb, dst, n, avx2);
          continue;
        }
        if (as_unary(ins.op, uop)) {
          K.unary(uop, a, dst, n);
        } else if (ins.op == EwOp::sqrt) {  // sqrtps (std::sqrt of a negative went through libm for errno)
          int64_t i = 0;
          for (; i + 4 <= n; i += 4) _mm_storeu_ps(dst + i, _mm_sqrt_ps(_mm_loadu_ps(a + i)));
          for (; i < n; ++i) dst[i] = _mm_cvtss_f32(_mm_sqrt_ss(_mm_set_ss(a[i])));
        } else if (ins.op == EwOp::abs || ins.op == EwOp::neg) {
          if (avx2)
            sign_avx2(ins.op == EwOp::neg, a, dst, n);
          else
            for (int64_t i = 0; i < n; ++i) dst[i] = ins.op == EwOp::neg ? -a[i] : std::fabs(a[i]);
        } else if (ins.op == EwOp::reciprocal) {
          for (int64_t i = 0; i < n; ++i) dst[i] = 1.0f / a[i];
        } else if (ins.op == EwOp::floor || ins.op == EwOp::ceil || ins.op == EwOp::round) {
          round_to(ins.op, a, dst, n, avx2);
        } else {
          for (int64_t i = 0; i < n; ++i) dst[i] = ew_apply(ins.op, a[i], 0.0f);
        }
      }
    }
  });
}

}  // namespace tessera::kernels::x86
