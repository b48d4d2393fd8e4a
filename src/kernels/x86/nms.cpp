#include "kernels/x86/nms.h"

#include <algorithm>
#include <cstring>

namespace tessera::kernels::x86 {

namespace {

struct Corners {
  float x0, x1, y0, y1, area;
};

// As the reference reads a box: [y1, x1, y2, x2] with corners in any order, or [xc, yc, w, h].
Corners corners(const float* b, bool center) {
  Corners c;
  if (!center) {
    c.x0 = std::min(b[1], b[3]), c.x1 = std::max(b[1], b[3]);
    c.y0 = std::min(b[0], b[2]), c.y1 = std::max(b[0], b[2]);
  } else {
    c.x0 = b[0] - b[2] / 2, c.x1 = b[0] + b[2] / 2, c.y0 = b[1] - b[3] / 2, c.y1 = b[1] + b[3] / 2;
  }
  c.area = (c.x1 - c.x0) * (c.y1 - c.y0);
  return c;
}

// Whether kept box b suppresses candidate a: the reference's test, operation for operation.
bool suppresses(const Corners& a, const Corners& b, float iou_threshold) {
  const float ix0 = std::max(a.x0, b.x0), ix1 = std::min(a.x1, b.x1);
  if (ix1 <= ix0) return false;
  const float iy0 = std::max(a.y0, b.y0), iy1 = std::min(a.y1, b.y1);
  if (iy1 <= iy0) return false;
  const float inter = (ix1 - ix0) * (iy1 - iy0);
  if (inter <= 0) return false;
  const float uni = a.area + b.area - inter;
  if (a.area <= 0 || b.area <= 0 || uni <= 0) return false;
  return inter / uni > iou_threshold;
}

// A score's bits mapped so that unsigned order is float order (-0 below +0: equal scores compare equal in
// the reference, so -0 and +0 are made one key first).
uint32_t ordered(float s) {
  if (s == 0.0f) s = 0.0f;
  uint32_t u;
  std::memcpy(&u, &s, sizeof u);
  return (u & 0x80000000u) ? ~u : u | 0x80000000u;
}

}  // namespace

void nms_f32(const NmsParams& p, const float* boxes, const float* scores, std::vector<int64_t>& out) {
  if (p.max_out <= 0) return;
  std::vector<Corners> cs(size_t(p.boxes));
  std::vector<uint64_t> keys;
  std::vector<int64_t> kept;
  for (int64_t b = 0; b < p.batches; ++b) {
    for (int64_t i = 0; i < p.boxes; ++i)
      cs[size_t(i)] = corners(boxes + (b * p.boxes + i) * 4, p.center_point_box);
    for (int64_t c = 0; c < p.classes; ++c) {
      const float* s = scores + (b * p.classes + c) * p.boxes;
      keys.clear();
      // descending key: higher score first, then the lower index (the reference's stable sort)
      for (int64_t i = 0; i < p.boxes; ++i)
        if (!p.has_score_threshold || s[i] > p.score_threshold)
          keys.push_back(uint64_t(ordered(s[i])) << 32 | uint32_t(0xFFFFFFFFu - uint32_t(i)));
      kept.clear();
      // sorted a window at a time: most selections stop long before the last candidate
      size_t sorted = 0;
      for (size_t k = 0; k < keys.size() && int64_t(kept.size()) < p.max_out; ++k) {
        if (k == sorted) {
          const size_t want = std::min(keys.size(), std::max<size_t>(2 * sorted, size_t(4 * p.max_out + 64)));
          // the window's keys picked in linear time, then sorted (a heap over all of them cost more)
          const auto lo = keys.begin() + std::ptrdiff_t(sorted), hi = keys.begin() + std::ptrdiff_t(want);
          if (hi != keys.end()) std::nth_element(lo, hi - 1, keys.end(), std::greater<uint64_t>());
          std::sort(lo, hi, std::greater<uint64_t>());
          sorted = want;
        }
        const int64_t i = int64_t(0xFFFFFFFFu - uint32_t(keys[k]));
        bool ok = true;
        for (const int64_t j : kept)
          if (suppresses(cs[size_t(i)], cs[size_t(j)], p.iou_threshold)) {
            ok = false;
            break;
          }
        if (!ok) continue;
        kept.push_back(i);
        out.insert(out.end(), {b, c, i});
      }
    }
  }
}

}  // namespace tessera::kernels::x86
