// Multidirectional (numpy-style) broadcasting for reference kernels.
//
//   Shape out = broadcast_shape({a.shape(), b.shape()});       // throws on mismatch
//   BroadcastIndexer ix(out, {a.shape(), b.shape()});
//   ix.for_each([&](int64_t o, const int64_t* in) { y[o] = f(pa[in[0]], pb[in[1]]); });
//
// The indexer walks the output in row-major order and, for every input, gives
// the row-major offset of the element that lands there (a broadcast dimension
// contributes stride 0). Inputs must be contiguous. The innermost dimension is
// a tight loop; outer dimensions advance by carrying, so the cost per element
// is a few additions.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/error.h"
#include "core/tensor.h"

namespace tessera::kernels::ref {

// The broadcast of several shapes; throws Error(invalid_argument) when two
// dimensions differ and neither is 1.
inline Shape broadcast_shape(const std::vector<Shape>& shapes) {
  size_t rank = 0;
  for (const Shape& s : shapes) rank = std::max(rank, s.size());
  Shape out(rank, 1);
  for (const Shape& s : shapes) {
    const size_t off = rank - s.size();
    for (size_t i = 0; i < s.size(); ++i) {
      const int64_t d = s[i];
      int64_t& o = out[off + i];
      if (d == o || d == 1) continue;
      check_arg(o == 1, "shapes cannot broadcast: ", shape_text(shapes.front()), " and ", shape_text(s),
                " (dimension ", d, " vs ", o, ")");
      o = d;
    }
  }
  return out;
}

inline Shape broadcast_shape(const Shape& a, const Shape& b) { return broadcast_shape(std::vector<Shape>{a, b}); }

// True when `in` can broadcast to `out` in one direction (unidirectional, as
// PRelu's slope or Expand).
inline bool broadcasts_to(const Shape& in, const Shape& out) {
  if (in.size() > out.size()) return false;
  const size_t off = out.size() - in.size();
  for (size_t i = 0; i < in.size(); ++i)
    if (in[i] != 1 && in[i] != out[off + i]) return false;
  return true;
}

class BroadcastIndexer {
 public:
  BroadcastIndexer(Shape out, const std::vector<Shape>& inputs) : out_(std::move(out)), n_(inputs.size()) {
    const size_t rank = out_.size();
    strides_.assign(n_ * rank, 0);
    for (size_t k = 0; k < n_; ++k) {
      const Shape& s = inputs[k];
      check_arg(broadcasts_to(s, out_), "shape ", shape_text(s), " does not broadcast to ", shape_text(out_));
      const size_t off = rank - s.size();
      int64_t stride = 1;
      for (size_t i = s.size(); i-- > 0;) {
        strides_[k * rank + off + i] = s[i] == 1 ? 0 : stride;
        stride *= s[i];
      }
    }
  }

  const Shape& shape() const { return out_; }
  int64_t numel() const { return shape_numel(out_); }

  // Calls f(out_index, in_indices) for every output element in row-major
  // order; in_indices[k] is the offset into input k.
  template <typename F>
  void for_each(F&& f) const {
    const int64_t total = numel();
    if (total == 0) return;
    const size_t rank = out_.size();
    std::vector<int64_t> idx(n_, 0);
    if (rank == 0) {
      f(int64_t(0), idx.data());
      return;
    }
    std::vector<int64_t> counter(rank, 0);
    const int64_t inner = out_[rank - 1];
    std::vector<int64_t> inner_stride(n_);
    for (size_t k = 0; k < n_; ++k) inner_stride[k] = strides_[k * rank + rank - 1];
    std::vector<int64_t> cur(n_);
    for (int64_t o = 0; o < total; o += inner) {
      for (size_t k = 0; k < n_; ++k) cur[k] = idx[k];
      for (int64_t j = 0; j < inner; ++j) {
        f(o + j, cur.data());
        for (size_t k = 0; k < n_; ++k) cur[k] += inner_stride[k];
      }
      // carry into the outer dimensions
      for (size_t d = rank - 1; d-- > 0;) {
        ++counter[d];
        for (size_t k = 0; k < n_; ++k) idx[k] += strides_[k * rank + d];
        if (counter[d] < out_[d]) break;
        for (size_t k = 0; k < n_; ++k) idx[k] -= strides_[k * rank + d] * out_[d];
        counter[d] = 0;
      }
    }
  }

 private:
  Shape out_;
  size_t n_;
  std::vector<int64_t> strides_;  // n_ x rank, 0 where broadcast
};

}  // namespace tessera::kernels::ref
