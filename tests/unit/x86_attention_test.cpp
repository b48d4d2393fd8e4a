// tessera.FusedAttention: the x86 kernel (kernels/x86/attention.h) against the
// reference composition (MatMul, Mul, Add, Softmax, MatMul) over query/key
// lengths around the 32-row query block, head sizes, K given transposed or
// not, masks broadcast every way the kernel indexes (none, scalar, per key,
// per query, full) and ways it hands to the reference (broadcast leading dims).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "core/thread_pool.h"
#include "tests/unit/kernel_harness.h"

namespace tessera::backends::cpu {
KernelFn x86_fused_attention_kernel();
}

namespace {

using namespace tessera;
using tessera::testing::attr_f;
using tessera::testing::attr_i;

using PoolCtx = tessera::testing::PoolKernelContext;

Tensor rand_f32(const Shape& s, std::mt19937& g, float scale = 1.0f) {
  Tensor t(DType::f32, s);
  std::normal_distribution<float> d(0.0f, scale);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = d(g);
  return t;
}

// The reference kernel's and the x86 kernel's outputs for the same node (the latter made contiguous).
std::pair<Tensor, Tensor> ref_and_x86(const std::vector<DataValue>& in, const AttrMap& attrs,
                                      ThreadPool* pool) {
  tessera::testing::TestKernelContext rc("FusedAttention", in, attrs, 1);
  kernels::ref::KernelTable::instance().find("tessera", "FusedAttention")(rc);
  PoolCtx tc("FusedAttention", in, attrs, 1);
  tc.pool_ = pool;
  backends::cpu::x86_fused_attention_kernel()(tc);
  return {rc.outputs()[0].tensor, tc.outputs()[0].tensor.contiguous()};
}

void check_case(const Shape& lead, int64_t lq, int64_t lk, int64_t d, int64_t dv, bool kt,
                const Shape* mask_shape, std::mt19937& g, ThreadPool* pool, const Shape& k_lead = {}) {
  auto with = [](Shape l, std::initializer_list<int64_t> tail) {
    l.insert(l.end(), tail);
    return l;
  };
  const Shape kl = k_lead.empty() ? lead : k_lead;
  std::vector<DataValue> in = {rand_f32(with(lead, {lq, d}), g),
                               rand_f32(kt ? with(kl, {d, lk}) : with(kl, {lk, d}), g),
                               rand_f32(with(lead, {lk, dv}), g)};
  if (mask_shape) in.push_back(rand_f32(*mask_shape, g, 3.0f));
  const AttrMap attrs = {{"scale", attr_f(0.125f)}, {"k_transposed", attr_i(kt ? 1 : 0)}};
  const auto [want, got] = ref_and_x86(in, attrs, pool);
  ASSERT_EQ(got.shape(), want.shape());
  double worst = 0;
  for (int64_t i = 0; i < want.numel(); ++i)
    worst = std::max(worst, double(std::fabs(got.data<float>()[i] - want.data<float>()[i])));
  EXPECT_LT(worst, 2e-5) << "lq " << lq << " lk " << lk << " d " << d << " kt " << kt
                         << (mask_shape ? " mask " + shape_str(*mask_shape) : std::string(" no mask"));
}

TEST(X86Attention, MatchesReference) {
  std::mt19937 g(9);
  ThreadPool pool(2);
  for (int64_t lq : {1, 5, 31, 32, 33, 70})
    for (int64_t lk : {1, 16, 33, 197})
      for (bool kt : {true, false}) {
        const Shape lead = {2, 3};
        const Shape none_shape;
        const Shape masks[] = {{}, {2, 1, 1, lk}, {1, 1, lq, lk}, {2, 3, lq, lk}, {lq, 1}, {lk}};
        check_case(lead, lq, lk, 64, 64, kt, nullptr, g, lq > 30 ? &pool : nullptr);
        for (const Shape& m : masks) check_case(lead, lq, lk, 17, 24, kt, &m, g, &pool);
      }
  // rank 3 (ViT's [heads, L, D]) and rank 2
  check_case({12}, 197, 197, 64, 64, true, nullptr, g, &pool);
  check_case({}, 9, 13, 8, 5, true, nullptr, g, nullptr);
}

TEST(X86Attention, LongKeysOnlineSoftmax) {
  // More keys than one block (512): flash-style key blocks with the online softmax, ragged last block,
  // K either way, masks per key / per query / full, queries across the query blocks.
  std::mt19937 g(21);
  ThreadPool pool(2);
  for (int64_t lk : {513, 1100})
    for (bool kt : {true, false}) {
      const int64_t lq = 37;
      check_case({2}, lq, lk, 32, 24, kt, nullptr, g, &pool);
      const Shape masks[] = {{lk}, {lq, 1}, {2, lq, lk}};
      for (const Shape& m : masks) check_case({2}, lq, lk, 16, 8, kt, &m, g, &pool);
    }
  check_case({}, 300, 2048, 64, 64, true, nullptr, g, nullptr);
}

TEST(X86Attention, WhereConditionThenMask) {
  // GPT-2's causal mask: Where(cond, fill, S) (keep_where 0) and HF's Where(cond, S, fill) (keep_where 1),
  // with and without an additive mask after it; cond per (q, k), per key, and full.
  std::mt19937 g(11);
  ThreadPool pool(2);
  for (int64_t lk : {40, 700})  // 700: key blocks, the condition and mask read from the block's offset
    for (int keep : {0, 1})
      for (bool with_mask : {false, true})
        for (const Shape& cs : std::vector<Shape>{{5, lk}, {lk}, {2, 3, 5, lk}}) {
          Tensor cond(DType::boolean, cs);
          for (int64_t i = 0; i < cond.numel(); ++i) cond.data<bool>()[i] = (g() % 4) != 0;
          std::vector<DataValue> in = {rand_f32({2, 3, 5, 16}, g), rand_f32({2, 3, 16, lk}, g),
                                       rand_f32({2, 3, lk, 16}, g)};
          in.push_back(with_mask ? DataValue(rand_f32({2, 1, 1, lk}, g)) : DataValue());
          in.push_back(cond);
          const AttrMap attrs = {{"scale", attr_f(0.25f)},
                                 {"k_transposed", attr_i(1)},
                                 {"keep_where", attr_i(keep)},
                                 {"fill", attr_f(-1e4f)}};
          const auto [want, got] = ref_and_x86(in, attrs, &pool);
          ASSERT_EQ(got.shape(), want.shape());
          for (int64_t i = 0; i < want.numel(); ++i)
            ASSERT_NEAR(got.data<float>()[i], want.data<float>()[i], 2e-5)
                << "lk " << lk << " keep " << keep << " mask " << with_mask << " cond " << shape_str(cs)
                << " at " << i;
        }
}

TEST(X86Attention, CausalConditionSkipsFilledKeys) {
  // A causal Where (query i keeps keys j <= i + lk - lq) with a fill that exp turns into exactly 0: each
  // query block stops at its last kept key. Against the reference (which sums every key) for fills of
  // -inf, a float's lowest and -1e4 (not skipped), both keep_where senses, one block and key blocks, and
  // with a row whose every key is filled (no skipping: the reference's uniform softmax).
  std::mt19937 g(23);
  ThreadPool pool(2);
  const float lowest = -std::numeric_limits<float>::max();
  for (int64_t lk : {40, 700, 1300})
    for (int64_t lq : {lk, int64_t(7)})
      for (float fill : {-std::numeric_limits<float>::infinity(), lowest, -1e4f})
        for (int keep : {0, 1})
          for (bool dead_row : {false, true}) {
            if (dead_row && fill != lowest) continue;
            Tensor cond(DType::boolean, {lq, lk});
            for (int64_t i = 0; i < lq; ++i)
              for (int64_t j = 0; j < lk; ++j) {
                const bool kept = j <= i + lk - lq && !(dead_row && i == lq / 2);
                cond.data<bool>()[i * lk + j] = kept == (keep != 0);
              }
            std::vector<DataValue> in = {rand_f32({2, lq, 16}, g), rand_f32({2, 16, lk}, g),
                                         rand_f32({2, lk, 16}, g), DataValue(), cond};
            const AttrMap attrs = {{"scale", attr_f(0.25f)},
                                   {"k_transposed", attr_i(1)},
                                   {"keep_where", attr_i(keep)},
                                   {"fill", attr_f(fill)}};
            const auto [want, got] = ref_and_x86(in, attrs, &pool);
            ASSERT_EQ(got.shape(), want.shape());
            for (int64_t i = 0; i < want.numel(); ++i)
              ASSERT_NEAR(got.data<float>()[i], want.data<float>()[i], 2e-5)
                  << "lk " << lk << " lq " << lq << " fill " << fill << " keep " << keep << " dead row "
                  << dead_row << " at " << i;
          }
}

// Transposes folded in by fuse_attention: q_perm / k_perm / v_perm read the inputs through strided views
// (heads split off [B, L, H, D], ViT's [L, B*H, D]), out_perm writes the result transposed in place.
void check_perm_case(const std::vector<DataValue>& in, const AttrMap& attrs, ThreadPool* pool,
                     const char* what) {
  const auto [want, got] = ref_and_x86(in, attrs, pool);
  ASSERT_EQ(got.shape(), want.shape()) << what;
  for (int64_t i = 0; i < want.numel(); ++i)
    ASSERT_NEAR(got.data<float>()[i], want.data<float>()[i], 2e-5) << what << " at " << i;
}

TEST(X86Attention, FoldedTransposesReadAndWriteInPlace) {
  std::mt19937 g(17);
  ThreadPool pool(2);
  using tessera::testing::attr_ints;
  for (int64_t l : {1, 7, 33, 600}) {
    const int64_t b = 2, h = 3, d = 16;
    // BERT / GPT-2: [B, L, H, D] viewed as [B, H, L, D]; K^T as [B, H, D, L]; result back to [B, L, H, D]
    std::vector<DataValue> in = {rand_f32({b, l, h, d}, g), rand_f32({b, l, h, d}, g),
                                 rand_f32({b, l, h, d}, g), rand_f32({b, 1, 1, l}, g)};
    check_perm_case(in,
                    {{"scale", attr_f(0.25f)},
                     {"k_transposed", attr_i(1)},
                     {"q_perm", attr_ints({0, 2, 1, 3})},
                     {"k_perm", attr_ints({0, 2, 3, 1})},
                     {"v_perm", attr_ints({0, 2, 1, 3})},
                     {"out_perm", attr_ints({0, 2, 1, 3})}},
                    &pool, "bert layout");
    // K not transposed, read through a view, and only some operands permuted
    check_perm_case({in[0], in[1], rand_f32({b, h, l, d}, g)},
                    {{"k_transposed", attr_i(0)},
                     {"q_perm", attr_ints({0, 2, 1, 3})},
                     {"k_perm", attr_ints({0, 2, 1, 3})}},
                    nullptr, "k plain");
    // ViT: [L, H, D] viewed as [H, L, D], K^T as [H, D, L]; out [H, L, D] back to [L, H, D]
    std::vector<DataValue> vit = {rand_f32({l, h, d}, g), rand_f32({l, h, d}, g), rand_f32({l, h, d}, g)};
    check_perm_case(vit,
                    {{"scale", attr_f(0.125f)},
                     {"k_transposed", attr_i(1)},
                     {"q_perm", attr_ints({1, 0, 2})},
                     {"k_perm", attr_ints({1, 2, 0})},
                     {"v_perm", attr_ints({1, 0, 2})},
                     {"out_perm", attr_ints({1, 0, 2})}},
                    &pool, "vit layout");
    // an out_perm that moves the last dim: no in-place view, the reference composition
    check_perm_case(vit,
                    {{"k_transposed", attr_i(1)},
                     {"k_perm", attr_ints({1, 2, 0})},
                     {"q_perm", attr_ints({1, 0, 2})},
                     {"v_perm", attr_ints({1, 0, 2})},
                     {"out_perm", attr_ints({2, 1, 0})}},
                    nullptr, "out perm moving D");
  }
  // single-head attention over a U-Net's pixels: K^T = Transpose(K [1, L, D]) read as K itself, where
  // Lk = D makes K and K^T the same shape (was read as K^T: wrong)
  for (int64_t l : {16, 24}) {
    std::vector<DataValue> px = {rand_f32({1, l, l}, g), rand_f32({1, l, l}, g), rand_f32({1, l, l}, g)};
    check_perm_case(px,
                    {{"scale", attr_f(0.25f)}, {"k_transposed", attr_i(1)}, {"k_perm", attr_ints({0, 2, 1})}},
                    &pool, "square K^T");
  }
  // a perm that is not a permutation is an error, not a crash
  PoolCtx bad("FusedAttention", {rand_f32({2, 4, 8}, g), rand_f32({2, 8, 4}, g), rand_f32({2, 4, 8}, g)},
              {{"k_transposed", attr_i(1)}, {"q_perm", attr_ints({0, 0, 2})}}, 1);
  EXPECT_THROW(backends::cpu::x86_fused_attention_kernel()(bad), Error);
}

TEST(X86Attention, FallsBackForBroadcastLeadingDims) {
  std::mt19937 g(3);
  const Shape mask = {1, 1, 4, 6};
  check_case({2, 3}, 4, 6, 8, 8, true, &mask, g, nullptr,
             {2, 1});  // K shared across heads (MatMul broadcast)
}

TEST(X86Attention, BadShapesGiveErrors) {
  std::mt19937 g(4);
  const AttrMap attrs = {{"k_transposed", attr_i(1)}};
  PoolCtx c("FusedAttention", {rand_f32({2, 4, 8}, g), rand_f32({2, 7, 6}, g), rand_f32({2, 6, 8}, g)}, attrs,
            1);
  EXPECT_THROW(backends::cpu::x86_fused_attention_kernel()(c), Error);  // D 8 vs Kt's 7
  PoolCtx c2("FusedAttention",
             {rand_f32({2, 4, 8}, g), rand_f32({2, 8, 6}, g), rand_f32({2, 6, 8}, g), rand_f32({3, 4, 6}, g)},
             attrs, 1);
  EXPECT_THROW(backends::cpu::x86_fused_attention_kernel()(c2), Error);  // mask does not broadcast
}

}  // namespace
