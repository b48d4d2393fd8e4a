// Concat's rows (kernels/x86/concat.h) against the definition — each output row the inputs' rows one after
// another — on random bits, under each ISA this CPU has: piece widths below, at and above the 16-float
// vector and the 64-float unrolled step, a row of one piece, pieces past the vector path's 1024-float limit,
// one and many rows, one and two threads.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "core/thread_pool.h"
#include "kernels/x86/concat.h"
#include "kernels/x86/eltwise.h"

namespace {

using namespace tessera;
namespace x86 = tessera::kernels::x86;
using x86::EltIsa;

TEST(Concat, RowsMatchDefinition) {
  std::mt19937 rng(3);
  const std::vector<std::vector<int64_t>> width_sets = {{1},
                                                        {16},
                                                        {5, 17},
                                                        {15, 16, 17},
                                                        {31, 32, 33, 1},
                                                        {63, 64, 65},
                                                        {100, 129, 2},
                                                        {32, 32, 32, 32, 32, 32},
                                                        {2048, 3},
                                                        {4096}};
  for (EltIsa isa : {EltIsa::portable, EltIsa::avx512f}) {
    if (!x86::eltwise_isa_available(isa)) continue;
    x86::force_eltwise_isa(isa);
    for (int threads : {1, 2}) {
      ThreadPool pool(threads);
      for (const auto& widths : width_sets)
        for (int64_t rows : {1, 3, 97, 700}) {
          int64_t row = 0;
          std::vector<std::vector<float>> in;
          std::vector<const float*> srcs;
          for (int64_t w : widths) {
            row += w;
            in.emplace_back(size_t(rows * w));
            for (float& v : in.back()) {
              const uint32_t bits = rng();
              std::memcpy(&v, &bits, 4);  // any bits, NaNs included: a copy moves them unchanged
            }
            srcs.push_back(in.back().data());
          }
          std::vector<float> got(size_t(rows * row) + 16, 7.0f);
          x86::concat_f32(srcs.data(), widths.data(), int64_t(widths.size()), got.data(), rows, &pool);
          for (int64_t r = 0, at = 0; r < rows; ++r)
            for (size_t i = 0; i < widths.size(); ++i)
              for (int64_t j = 0; j < widths[i]; ++j, ++at)
                ASSERT_EQ(std::memcmp(&got[size_t(at)], &in[i][size_t(r * widths[i] + j)], 4), 0)
                    << x86::eltwise_isa_name(isa) << ", " << threads << " threads, " << rows
                    << " rows, piece " << i << " of " << widths.size() << ", element " << j;
          for (size_t k = size_t(rows * row); k < got.size(); ++k)
            ASSERT_EQ(got[k], 7.0f) << "written past the end";
        }
    }
  }
  x86::force_eltwise_isa(EltIsa::portable, true);
}

}  // namespace
