#include "core/strided_copy.h"

#include <algorithm>
#include <cstring>

#include "core/thread_pool.h"

namespace tessera {

namespace {

template <typename U>
void copy_run(const char* src, int64_t stride, char* dst, int64_t n) {
  const U* s = reinterpret_cast<const U*>(src);
  U* d = reinterpret_cast<U*>(dst);
  for (int64_t i = 0; i < n; ++i) std::memcpy(d + i, s + i * stride, sizeof(U));
}

}  // namespace

void strided_copy(const void* src, int64_t base, const std::vector<int64_t>& strides, void* dst,
                  const std::vector<int64_t>& shape, size_t elem_size, ThreadPool* pool) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  if (n == 0) return;
  // Drop size-1 dims and merge d into d+1 where stride[d] == stride[d+1] * shape[d+1].
  std::vector<int64_t> sh, st;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    if (!sh.empty() && st.back() == strides[d] * shape[d]) {
      sh.back() *= shape[d];
      st.back() = strides[d];
    } else {
      sh.push_back(shape[d]);
      st.push_back(strides[d]);
    }
  }
  const char* s = static_cast<const char*>(src) + base * int64_t(elem_size);
  char* o = static_cast<char*>(dst);
  if (sh.empty()) {
    std::memcpy(o, s, elem_size);
    return;
  }
  const size_t r = sh.size();
  const int64_t inner = sh[r - 1], inner_stride = st[r - 1];
  const int64_t es = int64_t(elem_size);
  // Runs [r0, r1) of `inner` elements each (run i is the i-th combination of the outer indices).
  auto copy_runs = [&](int64_t r0, int64_t r1) {
    std::vector<int64_t> idx(r, 0);
    int64_t off = 0;  // elements from s
    for (int64_t d = int64_t(r) - 2, rem = r0; d >= 0; --d) {
      idx[size_t(d)] = rem % sh[size_t(d)];
      rem /= sh[size_t(d)];
      off += idx[size_t(d)] * st[size_t(d)];
    }
    char* out = static_cast<char*>(dst) + r0 * inner * es;
    for (int64_t run = r0; run < r1; ++run) {
      const char* from = s + off * es;
      if (inner_stride == 1) {
        std::memcpy(out, from, size_t(inner * es));
      } else {
        switch (elem_size) {
          case 1:
            copy_run<uint8_t>(from, inner_stride, out, inner);
            break;
          case 2:
            copy_run<uint16_t>(from, inner_stride, out, inner);
            break;
          case 4:
            copy_run<uint32_t>(from, inner_stride, out, inner);
            break;
          case 8:
            copy_run<uint64_t>(from, inner_stride, out, inner);
            break;
          default:
            for (int64_t i = 0; i < inner; ++i)
              std::memcpy(out + i * es, from + i * inner_stride * es, elem_size);
        }
      }
      out += inner * es;
      for (size_t d = r - 1; d-- > 0;) {
        off += st[d];
        if (++idx[d] < sh[d]) break;
        off -= st[d] * sh[d];
        idx[d] = 0;
      }
    }
  };
  const int64_t runs = n / inner;
  // Over the pool from 256 KiB, in as many equal slices of whole runs as threads: one thread copies such a
  // block at about 25-30 GB/s from L2, and the fork-join costs ~1-2 us (ViT-B/16's q, k and v Slices of 600
  // KB each at two threads).
  const int threads = pool ? pool->num_threads() : 1;
  if (threads > 1 && runs > 1 && n * es >= (int64_t(256) << 10)) {
    const int64_t parts = std::min<int64_t>(threads, runs);
    pool->run(parts, [&](int64_t t) { copy_runs(runs * t / parts, runs * (t + 1) / parts); });
    return;
  }
  copy_runs(0, runs);
}

}  // namespace tessera
