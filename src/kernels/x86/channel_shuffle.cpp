#include "kernels/x86/channel_shuffle.h"

#include <algorithm>

#include "kernels/x86/eltwise.h"

namespace tessera::kernels::x86 {

void interleave2_rows_32_portable(const uint32_t* p0, int64_t s0, const uint32_t* p1, int64_t s1,
                                  uint32_t* out, int64_t so, int64_t rows, int64_t len) {
  for (int64_t r = 0; r < rows; ++r, p0 += s0, p1 += s1, out += so) {
    for (int64_t m = 0; 2 * m + 1 < len; ++m) out[2 * m] = p0[m], out[2 * m + 1] = p1[m];
    if (len % 2) out[len - 1] = p0[len / 2];
  }
}

void channel_shuffle_32(const std::vector<ShuffleSource>& sources, int64_t rows, int64_t groups,
                        const std::vector<int64_t>& splits, const std::vector<uint32_t*>& outputs,
                        ThreadPool* pool) {
  int64_t c = 0;
  for (const ShuffleSource& s : sources) c += s.channels;
  if (rows <= 0 || c == 0) return;
  // concat channel z: its source's element pointer in row 0, and the source's stride
  auto locate = [&](int64_t z, int64_t* left = nullptr) {
    size_t i = 0;
    while (z >= sources[i].channels) z -= sources[i++].channels;
    if (left) *left = sources[i].channels - z;  // channels of the source from z on
    return std::pair{sources[i].data + z, sources[i].stride};
  };
  // Two groups whose halves each lie in one source: every output is an interleave of two runs.
  bool halves = groups == 2;
  for (int64_t h = 0; h < 2 && halves; ++h) {
    int64_t left = 0;
    locate(h * c / 2, &left);
    halves = left >= c / 2;
  }
  std::vector<std::pair<const uint32_t*, int64_t>> table;  // otherwise each output channel's source
  if (!halves)
    for (int64_t k = 0; k < c; ++k) table.push_back(locate(k % groups * (c / groups) + k / groups));
  const auto interleave =
      eltwise_isa() == EltIsa::avx512f ? interleave2_rows_32__avx512f : interleave2_rows_32_portable;
  const auto run = [&](int64_t r0, int64_t r1) {
    int64_t k0 = 0;  // the output's first channel of the shuffle
    for (size_t o = 0; o < splits.size(); k0 += splits[o++]) {
      const int64_t len = splits[o];
      if (len == 0) continue;
      uint32_t* y = outputs[o] + r0 * len;
      if (halves) {
        // out[q] = shuffle[k0 + q]: even q from half k0 % 2 at k0 / 2 on, odd q from the other at (k0 + 1) /
        // 2
        const auto [a, sa] = locate(k0 % 2 * (c / 2) + k0 / 2);
        const auto [b, sb] = locate((1 - k0 % 2) * (c / 2) + (k0 + 1) / 2);
        interleave(a + r0 * sa, sa, b + r0 * sb, sb, y, len, r1 - r0, len);
        continue;
      }
      for (int64_t r = r0; r < r1; ++r, y += len)
        for (int64_t q = 0; q < len; ++q)
          y[q] = table[size_t(k0 + q)].first[r * table[size_t(k0 + q)].second];
    }
  };
  const int64_t threads = pool ? pool->num_threads() : 1;
  if (threads <= 1 || rows * c < (int64_t(64) << 10)) {  // as Concat: under 256 KiB a wake-up costs more
    run(0, rows);
    return;
  }
  pool->run(threads, [&](int64_t t) { run(rows * t / threads, rows * (t + 1) / threads); });
}

}  // namespace tessera::kernels::x86
