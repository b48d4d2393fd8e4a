// ChannelShuffle (ir/ops/fused.cpp) over 4-byte elements: ShuffleNet's Concat -> Reshape -> Transpose ->
// Reshape -> Split as one pass, each output written once in memory order. In NHWC the shuffle interleaves
// channels within every pixel: two groups (ShuffleNet's) take a vector interleave (AVX-512: two loads, two
// two-source permutes, two stores per 32 channels); other group counts a per-pixel gather from a table of
// each output channel's source.
#pragma once

#include <cstdint>
#include <vector>

#include "core/thread_pool.h"

namespace tessera::kernels::x86 {

// A source of the shuffle: rows of `channels` 4-byte elements, `stride` apart (the concat's inputs).
struct ShuffleSource {
  const uint32_t* data = nullptr;
  int64_t channels = 0, stride = 0;
};

// Outputs [rows, splits[o]] (each row contiguous) of the shuffle of the concatenation of `sources` along
// their rows' channels, in `groups` groups (sum of splits = the channels, a multiple of groups).
void channel_shuffle_32(const std::vector<ShuffleSource>& sources, int64_t rows, int64_t groups,
                        const std::vector<int64_t>& splits, const std::vector<uint32_t*>& outputs,
                        ThreadPool* pool);

// out[2m] = p0[m], out[2m + 1] = p1[m] for the first len elements of out, each of `rows` rows (p0, p1 and out
// advancing s0, s1 and so elements a row): the AVX-512 kernel (the CPU must have it) and the portable one.
void interleave2_rows_32__avx512f(const uint32_t* p0, int64_t s0, const uint32_t* p1, int64_t s1,
                                  uint32_t* out, int64_t so, int64_t rows, int64_t len);
void interleave2_rows_32_portable(const uint32_t* p0, int64_t s0, const uint32_t* p1, int64_t s1,
                                  uint32_t* out, int64_t so, int64_t rows, int64_t len);

}  // namespace tessera::kernels::x86
