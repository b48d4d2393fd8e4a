#include "kernels/x86/resize.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "core/memory.h"

namespace tessera::kernels::x86 {

namespace {

// y[o] = w0[o] x[i0[o]] + w1[o] x[i1[o]], a zero weight's term left out.
void blend_cols(const float* x, const ResizeAxis& c, int64_t ow, float* y) {
  for (int64_t o = 0; o < ow; ++o) {
    const float a = c.w0[o], b = c.w1[o];
    y[o] = b == 0.0f ? a * x[c.i0[o]] : a == 0.0f ? b * x[c.i1[o]] : a * x[c.i0[o]] + b * x[c.i1[o]];
  }
}

// The output row's source: input row r0 or r1 where the other's weight is 0 and its own 1, else their blend
// in `blend` (a zero weight's term left out).
const float* blend_rows(const float* r0, const float* r1, float a, float c, int64_t n, float* blend) {
  if (c == 0.0f && a == 1.0f) return r0;
  if (a == 0.0f && c == 1.0f) return r1;
  for (int64_t i = 0; i < n; ++i)
    blend[i] = c == 0.0f ? a * r0[i] : a == 0.0f ? c * r1[i] : a * r0[i] + c * r1[i];
  return blend;
}

}  // namespace

void resize2d_f32(const float* x, int64_t planes, int64_t h, int64_t w, const ResizeAxis& rows,
                  const ResizeAxis& cols, int64_t oh, int64_t ow, float* y, ThreadPool* pool) {
  // columns that read one input column with weight 1 (nearest everywhere): a gather, no multiplies
  bool pick = true;
  std::vector<int64_t> sel(static_cast<size_t>(ow));
  for (int64_t o = 0; o < ow; ++o) {
    const bool first = cols.w0[o] == 1.0f && cols.w1[o] == 0.0f,
               second = cols.w0[o] == 0.0f && cols.w1[o] == 1.0f;
    pick = pick && (first || second);
    sel[size_t(o)] = first ? cols.i0[o] : cols.i1[o];
  }
  const int64_t total = planes * oh;
  parallel_for(pool, total, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, ow)), [&](int64_t b, int64_t e) {
    thread_local AlignedScratch tl_row;
    float* blend = tl_row.get(size_t(w));
    for (int64_t t = b; t < e; ++t) {
      const int64_t pl = t / oh, oy = t % oh;
      const float* xp = x + pl * h * w;
      const float a = rows.w0[oy], c = rows.w1[oy];
      const float* src = blend_rows(xp + rows.i0[oy] * w, xp + rows.i1[oy] * w, a, c, w, blend);
      float* yr = y + t * ow;
      if (pick)
        for (int64_t o = 0; o < ow; ++o) yr[o] = src[sel[size_t(o)]];
      else
        blend_cols(src, cols, ow, yr);
    }
  });
}

void resize2d_nhwc_f32(const float* x, int64_t n, int64_t h, int64_t w, int64_t c, const ResizeAxis& rows,
                       const ResizeAxis& cols, int64_t oh, int64_t ow, float* y, ThreadPool* pool) {
  const int64_t row = w * c;
  parallel_for(pool, n * oh, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, ow * c)),
               [&](int64_t b, int64_t e) {
                 thread_local AlignedScratch tl_row;
                 float* blend = tl_row.get(size_t(row));
                 for (int64_t t = b; t < e; ++t) {
                   const int64_t img = t / oh, oy = t % oh;
                   const float a = rows.w0[oy], r = rows.w1[oy];
                   // the input row blended as resize2d_f32 blends it
                   const float* src = blend_rows(x + (img * h + rows.i0[oy]) * row,
                                                 x + (img * h + rows.i1[oy]) * row, a, r, row, blend);
                   for (int64_t ox = 0; ox < ow; ++ox) {
                     const float p = cols.w0[ox], q = cols.w1[ox];
                     const float* s0 = src + cols.i0[ox] * c;
                     const float* s1 = src + cols.i1[ox] * c;
                     float* out = y + (t * ow + ox) * c;
                     if (q == 0.0f && p == 1.0f)
                       std::memcpy(out, s0, size_t(c) * sizeof(float));
                     else if (p == 0.0f && q == 1.0f)
                       std::memcpy(out, s1, size_t(c) * sizeof(float));
                     else if (q == 0.0f)
                       for (int64_t k = 0; k < c; ++k) out[k] = p * s0[k];
                     else if (p == 0.0f)
                       for (int64_t k = 0; k < c; ++k) out[k] = q * s1[k];
                     else
                       for (int64_t k = 0; k < c; ++k) out[k] = p * s0[k] + q * s1[k];
                   }
                 }
               });
}

}  // namespace tessera::kernels::x86
