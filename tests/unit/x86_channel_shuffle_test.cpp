// ChannelShuffle (kernels/x86/channel_shuffle.h and the reference kernel in kernels/ref/fused.cpp) against
// the definition written out here — concatenate, view the channels as groups x C/groups, transpose, split —
// on random bits, under each ISA this CPU has, over the two-group interleave's tails and odd starts and
// the table path's uneven sources and other group counts, at one and two threads.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <numeric>
#include <random>
#include <vector>

#include "core/thread_pool.h"
#include "kernels/x86/channel_shuffle.h"
#include "kernels/x86/eltwise.h"
#include "tests/unit/kernel_harness.h"

namespace {

using namespace tessera;
namespace x86 = tessera::kernels::x86;
using tessera::kernels::x86::EltIsa;

struct Case {
  std::vector<int64_t> channels;  // of each source
  int64_t groups;
  std::vector<int64_t> splits;
  int64_t rows;
};

// The outputs by the definition: output o's element (r, q) is the concat's channel z of row r.
std::vector<std::vector<uint32_t>> expected(const Case& k, const std::vector<std::vector<uint32_t>>& src) {
  const int64_t c = std::accumulate(k.channels.begin(), k.channels.end(), int64_t(0));
  std::vector<uint32_t> cat(size_t(k.rows * c));
  for (int64_t r = 0, at = 0; r < k.rows; ++r)
    for (size_t i = 0; i < src.size(); ++i)
      for (int64_t j = 0; j < k.channels[i]; ++j) cat[size_t(at++)] = src[i][size_t(r * k.channels[i] + j)];
  std::vector<std::vector<uint32_t>> out;
  int64_t k0 = 0;
  for (int64_t len : k.splits) {
    std::vector<uint32_t> y(size_t(k.rows * len));
    for (int64_t r = 0; r < k.rows; ++r)
      for (int64_t q = 0; q < len; ++q) {
        const int64_t s = k0 + q, z = s % k.groups * (c / k.groups) + s / k.groups;
        y[size_t(r * len + q)] = cat[size_t(r * c + z)];
      }
    out.push_back(std::move(y));
    k0 += len;
  }
  return out;
}

const std::vector<Case> kCases = {
    {{58, 58}, 2, {58, 58}, 7},        // ShuffleNet's split units: 29 of each source per output
    {{116, 116}, 2, {232}, 5},         // a downsampling unit's shuffle: no Split
    {{29, 29}, 2, {29, 29}, 3},        // the second output starts at an odd channel
    {{1, 1}, 2, {1, 1}, 4},            // one channel an output
    {{1, 1}, 2, {2}, 4},               //
    {{33, 33}, 2, {5, 40, 21}, 3},     // three outputs, odd starts, every tail length
    {{16, 16}, 2, {32}, 2},            // whole vectors
    {{17, 17}, 2, {34}, 2},            // one past
    {{64, 64}, 2, {64, 0, 64}, 2},     // an empty output
    {{232}, 2, {116, 116}, 3},         // one source (no Concat)
    {{10, 20, 30}, 2, {60}, 3},        // a half across two sources: the table
    {{20, 40}, 2, {31, 29}, 3},        // uneven sources
    {{12, 12, 12}, 3, {36}, 4},        // three groups
    {{24, 24}, 4, {12, 36}, 4},        // four groups
    {{58, 58}, 2, {58, 58}, 1200},     // past the threading threshold
    {{7, 11, 30}, 6, {17, 31}, 1100},  // the table, threaded
};

TEST(ChannelShuffle, MatchesDefinition) {
  std::mt19937 rng(7);
  for (EltIsa isa : {EltIsa::portable, EltIsa::avx512f}) {
    if (!x86::eltwise_isa_available(isa)) continue;
    x86::force_eltwise_isa(isa);
    for (int threads : {1, 2}) {
      ThreadPool pool(threads);
      for (const Case& k : kCases) {
        std::vector<std::vector<uint32_t>> src;
        std::vector<x86::ShuffleSource> sources;
        for (int64_t ch : k.channels) {
          src.emplace_back(size_t(k.rows * ch));
          for (uint32_t& v : src.back()) v = rng();
          sources.push_back({src.back().data(), ch, ch});
        }
        const auto want = expected(k, src);
        std::vector<std::vector<uint32_t>> got;
        std::vector<uint32_t*> outs;
        for (int64_t len : k.splits) got.emplace_back(size_t(k.rows * len), 0xdeadbeefu);
        for (auto& g : got) outs.push_back(g.data());
        x86::channel_shuffle_32(sources, k.rows, k.groups, k.splits, outs, &pool);
        for (size_t o = 0; o < want.size(); ++o)
          EXPECT_EQ(got[o], want[o]) << "isa " << x86::eltwise_isa_name(isa) << ", " << threads
                                     << " threads, case with " << k.channels.size() << " sources, "
                                     << k.groups << " groups, output " << o << " of " << k.splits[o];
      }
    }
  }
  x86::force_eltwise_isa(EltIsa::portable, true);
}

// The reference kernel on the same cases, as float tensors [2, rows / 2 or rows, channels] (axis 2), and on
// the channel axis in the middle (NCHW: axis 1, 3 x 2 after it).
TEST(ChannelShuffle, ReferenceMatchesDefinition) {
  KernelFn ref = kernels::ref::KernelTable::instance().find("tessera", "ChannelShuffle");
  ASSERT_NE(ref, nullptr);
  std::mt19937 rng(9);
  std::uniform_real_distribution<float> u(-1, 1);
  for (const Case& k : kCases) {
    if (k.rows > 100) continue;
    for (bool middle : {false, true}) {
      const int64_t inner = middle ? 6 : 1;  // the elements after the axis
      std::vector<DataValue> ins;
      std::vector<std::vector<uint32_t>> src;  // as rows of channels, for the definition
      Case rows_case = k;
      rows_case.rows = k.rows * inner;
      for (int64_t ch : k.channels) {
        Tensor t(DType::f32, middle ? Shape{k.rows, ch, 3, 2} : Shape{1, k.rows, ch});
        for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = u(rng);
        // element (r, j, e) of NCHW is row r * inner + e, channel j of the definition's view
        src.emplace_back(size_t(k.rows * inner * ch));
        for (int64_t r = 0; r < k.rows; ++r)
          for (int64_t j = 0; j < ch; ++j)
            for (int64_t e = 0; e < inner; ++e) {
              float v = t.data<float>()[(r * ch + j) * inner + e];
              std::memcpy(&src.back()[size_t((r * inner + e) * ch + j)], &v, 4);
            }
        ins.emplace_back(std::move(t));
      }
      AttrMap attrs{{"axis", tessera::testing::attr_i(middle ? 1 : 2)},
                    {"groups", tessera::testing::attr_i(k.groups)},
                    {"splits", tessera::testing::attr_ints(k.splits)}};
      tessera::testing::TestKernelContext ctx("ChannelShuffle", ins, attrs, k.splits.size());
      ref(ctx);
      const auto want = expected(rows_case, src);
      for (size_t o = 0; o < want.size(); ++o) {
        const Tensor& y = ctx.outputs()[o].tensor;
        ASSERT_EQ(y.numel(), int64_t(want[o].size()));
        for (int64_t r = 0; r < k.rows; ++r)
          for (int64_t q = 0; q < k.splits[o]; ++q)
            for (int64_t e = 0; e < inner; ++e) {
              uint32_t bits;
              std::memcpy(&bits, &y.data<float>()[(r * k.splits[o] + q) * inner + e], 4);
              ASSERT_EQ(bits, want[o][size_t((r * inner + e) * k.splits[o] + q)])
                  << (middle ? "NCHW" : "NHWC") << " output " << o << " row " << r << " channel " << q;
            }
      }
    }
  }
}

// Bad attributes and shapes are errors, not crashes.
TEST(ChannelShuffle, ReferenceRejectsBadInput) {
  KernelFn ref = kernels::ref::KernelTable::instance().find("tessera", "ChannelShuffle");
  ASSERT_NE(ref, nullptr);
  auto run = [&](std::vector<Shape> shapes, int64_t axis, int64_t groups, std::vector<int64_t> splits) {
    std::vector<DataValue> ins;
    for (const Shape& s : shapes) ins.emplace_back(Tensor(DType::f32, s));
    AttrMap attrs{{"axis", tessera::testing::attr_i(axis)},
                  {"groups", tessera::testing::attr_i(groups)},
                  {"splits", tessera::testing::attr_ints(splits)}};
    tessera::testing::TestKernelContext ctx("ChannelShuffle", ins, attrs, splits.size());
    ref(ctx);
  };
  EXPECT_NO_THROW(run({{2, 4}, {2, 4}}, 1, 2, {4, 4}));
  EXPECT_THROW(run({{2, 4}, {3, 4}}, 1, 2, {4, 4}), Error);     // rows differ
  EXPECT_THROW(run({{2, 4}, {2, 4}}, 1, 3, {4, 4}), Error);     // 8 channels in 3 groups
  EXPECT_THROW(run({{2, 4}, {2, 4}}, 1, 2, {4, 3}), Error);     // splits short
  EXPECT_THROW(run({{2, 4}, {2, 4}}, 2, 2, {4, 4}), Error);     // no such axis
  EXPECT_THROW(run({{2, 4}, {2, 4, 1}}, 1, 2, {4, 4}), Error);  // ranks differ
}

}  // namespace
