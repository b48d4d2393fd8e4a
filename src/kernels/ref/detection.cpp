// Reference kernels: detection family (NonMaxSuppression; RoiAlign lives elsewhere).
#include <algorithm>
#include <cmath>

#include "kernels/ref/misc_util.h"
#include "kernels/ref/registry.h"

namespace tessera::kernels::ref {
namespace {

using namespace misc;

// True when box b suppresses box a: IoU(a, b) > threshold. Boxes are
// [y1, x1, y2, x2] (corners in any order) or [xc, yc, w, h] (center_point_box).
bool suppresses(const float* a, const float* b, bool center, float iou_threshold) {
  float ax0, ax1, ay0, ay1, bx0, bx1, by0, by1;
  if (!center) {
    ax0 = std::min(a[1], a[3]), ax1 = std::max(a[1], a[3]), ay0 = std::min(a[0], a[2]),
    ay1 = std::max(a[0], a[2]);
    bx0 = std::min(b[1], b[3]), bx1 = std::max(b[1], b[3]), by0 = std::min(b[0], b[2]),
    by1 = std::max(b[0], b[2]);
  } else {
    ax0 = a[0] - a[2] / 2, ax1 = a[0] + a[2] / 2, ay0 = a[1] - a[3] / 2, ay1 = a[1] + a[3] / 2;
    bx0 = b[0] - b[2] / 2, bx1 = b[0] + b[2] / 2, by0 = b[1] - b[3] / 2, by1 = b[1] + b[3] / 2;
  }
  const float ix0 = std::max(ax0, bx0), ix1 = std::min(ax1, bx1);
  if (ix1 <= ix0) return false;
  const float iy0 = std::max(ay0, by0), iy1 = std::min(ay1, by1);
  if (iy1 <= iy0) return false;
  const float inter = (ix1 - ix0) * (iy1 - iy0);
  if (inter <= 0) return false;
  const float area_a = (ax1 - ax0) * (ay1 - ay0), area_b = (bx1 - bx0) * (by1 - by0);
  const float uni = area_a + area_b - inter;
  if (area_a <= 0 || area_b <= 0 || uni <= 0) return false;
  return inter / uni > iou_threshold;
}

void non_max_suppression(KernelContext& ctx) {
  const Tensor& boxes = ctx.required_input(0);
  const Tensor& scores = ctx.required_input(1);
  ctx.check(boxes.rank() == 3 && boxes.dim(2) == 4, "boxes must have shape [batch, boxes, 4], got ",
            boxes.text());
  ctx.check(scores.rank() == 3 && scores.dim(0) == boxes.dim(0) && scores.dim(2) == boxes.dim(1),
            "scores must have shape [batch, classes, boxes] matching boxes ", boxes.text(), ", got ",
            scores.text());
  auto scalar = [&](size_t i) -> const Tensor* {
    const Tensor* t = ctx.input(i);
    return (t && t->numel() > 0) ? t : nullptr;
  };
  int64_t max_out = 0;
  if (const Tensor* t = scalar(2)) max_out = std::max<int64_t>(t->at_int(0), 0);
  float iou = 0, score_th = 0;
  if (const Tensor* t = scalar(3)) iou = float(t->at_double(0));
  const Tensor* st = scalar(4);
  if (st) score_th = float(st->at_double(0));
  const int64_t cpb = ctx.attr_int("center_point_box", 0);
  ctx.check(cpb == 0 || cpb == 1, "center_point_box must be 0 or 1, got ", cpb);
  const int64_t B = boxes.dim(0), N = boxes.dim(1), C = scores.dim(1);
  const std::vector<float> bv = to_floats(boxes), sv = to_floats(scores);
  std::vector<int64_t> sel;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t c = 0; c < C; ++c) {
      const float* s = sv.data() + (b * C + c) * N;
      std::vector<int64_t> cand;
      for (int64_t i = 0; i < N; ++i)
        if (!st || s[i] > score_th) cand.push_back(i);
      std::stable_sort(cand.begin(), cand.end(), [&](int64_t x, int64_t y) { return s[x] > s[y]; });
      std::vector<int64_t> kept;
      for (int64_t i : cand) {
        if (int64_t(kept.size()) >= max_out) break;
        bool ok = true;
        for (int64_t k : kept)
          if (suppresses(bv.data() + (b * N + i) * 4, bv.data() + (b * N + k) * 4, cpb == 1, iou)) {
            ok = false;
            break;
          }
        if (!ok) continue;
        kept.push_back(i);
        sel.insert(sel.end(), {b, c, i});
      }
    }
  Tensor& y = ctx.output(0, DType::i64, {int64_t(sel.size() / 3), 3});
  std::copy(sel.begin(), sel.end(), y.data<int64_t>());
}

}  // namespace

void register_detection_kernels(KernelTable& t) {
  t.add("NonMaxSuppression", non_max_suppression);
}

}  // namespace tessera::kernels::ref
