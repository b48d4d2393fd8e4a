#include "core/strided_copy.h"

#include <cstring>

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
                  const std::vector<int64_t>& shape, size_t elem_size) {
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
  std::vector<int64_t> idx(r, 0);
  int64_t off = 0;  // elements from s
  for (int64_t done = 0; done < n; done += inner) {
    const char* from = s + off * es;
    if (inner_stride == 1) {
      std::memcpy(o, from, size_t(inner * es));
    } else {
      switch (elem_size) {
        case 1:
          copy_run<uint8_t>(from, inner_stride, o, inner);
          break;
        case 2:
          copy_run<uint16_t>(from, inner_stride, o, inner);
          break;
        case 4:
          copy_run<uint32_t>(from, inner_stride, o, inner);
          break;
        case 8:
          copy_run<uint64_t>(from, inner_stride, o, inner);
          break;
        default:
          for (int64_t i = 0; i < inner; ++i)
            std::memcpy(o + i * es, from + i * inner_stride * es, elem_size);
      }
    }
    o += inner * es;
    for (size_t d = r - 1; d-- > 0;) {
      off += st[d];
      if (++idx[d] < sh[d]) break;
      off -= st[d] * sh[d];
      idx[d] = 0;
    }
  }
}

}  // namespace tessera
