#include "kernels/x86/conv3d.h"

#include <algorithm>
#include <vector>

#include "core/memory.h"
#include "kernels/x86/eltwise.h"

namespace tessera::kernels::x86 {

namespace {

// One depth plane's 2-D geometry with the dims the 2-D kernels read (c is the full channel count).
Conv2dParams plane(const Conv3dParams& p, int64_t images) {
  Conv2dParams q = p.s;
  q.n = images;
  return q;
}

thread_local AlignedScratch tl_x_ndhwc, tl_y_ndhwc;

}  // namespace

bool conv3d_applies(const Conv3dParams& p) {
  const Conv2dParams& s = p.s;
  if (s.c <= 0 || s.oc <= 0 || s.groups <= 0 || s.c % s.groups || s.oc % s.groups || p.kd <= 0 || p.sd <= 0 ||
      p.dd <= 0 || p.pad_f < 0 || p.pad_k < 0)
    return false;
  return s.groups == 1 || s.is_depthwise() || conv_grouped_applies(s);
}

int conv3d_winograd(const Conv3dParams& p) {
  // stride 1 in depth: one call covers every output plane a tap reaches (about od); else one plane a call
  return wino_tile_for(p.s, p.sd == 1 ? p.n * p.od() : 1, p.s.oh(), p.s.ow());
}

size_t conv3d_slice_floats(const Conv3dParams& p, int wino) {
  const Conv2dParams& s = p.s;
  if (wino) return wino_packed_floats(s.oc, s.c / s.groups, wino, s.groups);
  if (s.groups == 1) return conv_nhwc_packed_floats(s.oc, s.c * s.kh * s.kw);
  if (s.is_depthwise()) return size_t(s.c * s.kh * s.kw);
  return grouped_nhwc_packed_floats(s);
}

void conv3d_pack_weights(const float* w, const Conv3dParams& p, int wino, float* out) {
  const Conv2dParams& s = p.s;
  const int64_t cg = s.c / s.groups, taps = s.kh * s.kw;
  std::vector<float> slice(size_t(s.oc * cg * taps));
  const size_t step = conv3d_slice_floats(p, wino);
  for (int64_t t = 0; t < p.kd; ++t, out += step) {
    for (int64_t o = 0; o < s.oc; ++o)  // W[:, :, t] as a 2-D filter [oc, cg, kh, kw]
      for (int64_t ci = 0; ci < cg; ++ci)
        std::copy_n(w + ((o * cg + ci) * p.kd + t) * taps, taps, slice.data() + (o * cg + ci) * taps);
    if (wino)
      wino_pack_weights(slice.data(), s.oc, cg, wino, out, s.groups);
    else if (s.groups == 1)
      conv_nhwc_pack_weights(slice.data(), s.oc, s.c, s.kh, s.kw, out);
    else if (s.is_depthwise())
      dw_nhwc_pack_weights(slice.data(), s.c, s.kh, s.kw, out);
    else
      grouped_nhwc_pack_weights(slice.data(), s, out);
  }
}

float conv3d_packed_at(const float* wp, const Conv3dParams& p, int wino, int64_t o, int64_t ci, int64_t t,
                       int64_t r, int64_t q) {
  const Conv2dParams& s = p.s;
  const float* w = wp + size_t(t) * conv3d_slice_floats(p, wino);
  if (wino) return wino_weight_at(w, s.oc, s.c / s.groups, wino, o, ci, r, q, s.groups);
  if (s.groups == 1) return conv_nhwc_packed_at(w, s.oc, s.c * s.kh * s.kw, o, (r * s.kw + q) * s.c + ci);
  if (s.is_depthwise()) return w[(r * s.kw + q) * s.c + o];
  return grouped_nhwc_packed_at(w, s, o, ci, r * s.kw + q);
}

void conv3d_f32(const Conv3dParams& p, int wino, const float* x, const float* wp, const ConvEpilogue& ep,
                float* y, ThreadPool* pool) {
  const Conv2dParams& s = p.s;
  const int64_t OD = p.od(), OH = s.oh(), OW = s.ow(), C = s.c, OC = s.oc;
  const int64_t in_plane = s.h * s.w * C, out_plane = OH * OW * OC;
  float* xt = tl_x_ndhwc.get(size_t(p.n * p.d * in_plane));
  float* yt = tl_y_ndhwc.get(size_t(p.n * OD * out_plane));
  transpose_f32(x, xt, {p.n, C, p.d * s.h * s.w}, {0, 2, 1}, pool);  // NCDHW -> NDHWC
  const size_t slice = conv3d_slice_floats(p, wino);
  // The output planes [lo, hi) tap t reaches: 0 <= od * sd - pad_f + t * dd < d.
  auto reach = [&](int64_t t, int64_t& lo, int64_t& hi) {
    const int64_t off = t * p.dd - p.pad_f;  // input plane of od = 0
    lo = off >= 0 ? 0 : (-off + p.sd - 1) / p.sd;
    hi = off >= p.d ? 0 : std::min(OD, (p.d - 1 - off) / p.sd + 1);
    if (hi < lo) hi = lo;
  };
  // The first tap writes with the bias: one that reaches every plane, else the planes start as the bias.
  int64_t first = -1;
  for (int64_t t = 0; t < p.kd && first < 0; ++t) {
    int64_t lo, hi;
    reach(t, lo, hi);
    if (lo == 0 && hi == OD) first = t;
  }
  if (first < 0)
    for (int64_t i = 0; i < p.n * OD * OH * OW; ++i)
      for (int64_t o = 0; o < OC; ++o) yt[i * OC + o] = ep.bias ? ep.bias[o] : 0.0f;
  for (int64_t img = 0; img < p.n; ++img) {
    for (int64_t k = -1; k < p.kd; ++k) {  // the first tap (k = -1), then the others
      const int64_t t = k < 0 ? first : k;
      if (t < 0 || (k >= 0 && t == first)) continue;
      int64_t lo, hi;
      reach(t, lo, hi);
      ConvEpilogue e;
      e.bias = t == first ? ep.bias : nullptr;
      // stride 1 in depth: planes lo..hi read consecutive input planes, one call; else a call a plane
      const int64_t per_call = p.sd == 1 ? hi - lo : 1;
      for (int64_t od = lo; od < hi; od += per_call) {
        const Conv2dParams q = plane(p, per_call);
        const float* xi = xt + (img * p.d + od * p.sd - p.pad_f + t * p.dd) * in_plane;
        float* yo = yt + (img * OD + od) * out_plane;
        e.residual = t == first ? nullptr : yo;
        if (wino)
          conv2d_wino_nhwc_f32(q, wino, xi, wp + size_t(t) * slice, e, yo, pool);
        else
          conv2d_nhwc_f32(q, xi, wp + size_t(t) * slice, e, yo, pool);
      }
    }
  }
  transpose_f32(yt, y, {p.n, OD * OH * OW, OC}, {0, 2, 1}, pool);  // NDHWC -> NCDHW
  const int64_t total = p.n * OC * OD * OH * OW;
  if (ep.residual)
    parallel_for(pool, total, 1 << 14, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) y[i] += ep.residual[i];
    });
  if (ep.act != Activation::none) gemm_apply_activation(ep.act, ep.clip_min, ep.clip_max, y, total, pool);
}

}  // namespace tessera::kernels::x86
