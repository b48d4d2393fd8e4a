// f32 3-D convolution (video models' Conv3d) over NCDHW tensors, as sums of the 2-D NHWC convs of
// conv_nhwc.h: output depth plane od is the sum over the depth taps t of the 2-D conv of input plane
// od * sd - pad_front + t * dd with the filter's tap-t slice W[:, :, t]. Each slice is packed as those
// kernels take it (dense, Winograd, depthwise or grouped), so a 3x3x3 conv runs as three 3x3 convs at their
// speed (Winograd's included) instead of an im2col GEMM. The first tap's conv writes the planes it covers
// with the bias; the other taps accumulate onto them through the residual epilogue (which may alias the
// output). The input is copied to NDHWC once and the output back to NCDHW once, where the residual and the
// activation are applied.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/thread_pool.h"
#include "kernels/x86/conv_nhwc.h"

namespace tessera::kernels::x86 {

struct Conv3dParams {
  Conv2dParams
      s;  // one depth plane's 2-D conv: c, h, w, oc, groups, kh, kw, strides, dilations, pads (s.n unused)
  int64_t n = 1, d = 0, kd = 1, sd = 1, dd = 1, pad_f = 0, pad_k = 0;  // batch; depth, its tap, stride, ...
  int64_t od() const { return (d + pad_f + pad_k - dd * (kd - 1) - 1) / sd + 1; }
};

// Dense, depthwise, or grouped as conv_grouped_applies takes it.
bool conv3d_applies(const Conv3dParams& p);
// The Winograd tile m (2 or 4) the slices are packed for, or 0 for the direct kernels: as layout_nhwc
// chooses for a 2-D conv, counting the output planes one call covers (stride 1 in depth: all of them).
int conv3d_winograd(const Conv3dParams& p);
// Floats of one packed depth tap; the kd taps follow each other.
size_t conv3d_slice_floats(const Conv3dParams& p, int wino);
// w [oc, c / groups, kd, kh, kw] -> out (kd * conv3d_slice_floats floats).
void conv3d_pack_weights(const float* w, const Conv3dParams& p, int wino, float* out);
// Weight (o, ci, t, r, q) of a packing (reference kernels).
float conv3d_packed_at(const float* wp, const Conv3dParams& p, int wino, int64_t o, int64_t ci, int64_t t,
                       int64_t r, int64_t q);

// y [n, oc, od, oh, ow] = act(conv(x [n, c, d, h, w]) + bias + residual), ep's residual shaped as y.
void conv3d_f32(const Conv3dParams& p, int wino, const float* x, const float* wp, const ConvEpilogue& ep,
                float* y, ThreadPool* pool);

}  // namespace tessera::kernels::x86
