// 8-bit integer GEMM and convolution (MatMulInteger, QLinearMatMul, ConvInteger, QLinearConv):
//   C[m, n] = sum_k (A[m, k] - a_zero[m]) * (B[k, n] - b_zero[n])   in 32-bit integers
// (wrapping, as the reference's int32 result), then an output stage: the int32 sums, or requantized to u8 /
// s8 as the reference and onnxruntime do: y = round_half_even(clamp(f32(C + bias) * scale, lo - y_zero,
// hi - y_zero)) + y_zero, scale the f32 product of the scales.
//
// The products run on vpdpbusd (AVX-512 VNNI: 16 columns x 4 k of u8 x s8 per instruction), with a portable
// kernel over the same layout elsewhere. vpdpbusd multiplies unsigned by signed bytes; any other pairing is
// mapped onto it by flipping an operand's top bit (x ^ 0x80: s8 x becomes u8 x + 128, u8 x becomes s8
// x - 128) and moving its zero point by the same 128, which leaves every difference x - zero unchanged.
// The zero points come out of the sum afterwards:
//   C = sum(a b) - b_zero[n] * rowsum(A)[m] - a_zero[m] * (colsum(B)[n] - K b_zero[n]).
#pragma once

#include <cstdint>

#include "core/thread_pool.h"
#include "kernels/x86/conv2d.h"

namespace tessera::kernels::x86 {

enum class QOut { i32, u8, s8 };

// Where C goes: int32 sums, or u8 / s8 requantized with a scale per tensor or per row (a conv's output
// channel) and an int32 bias per row (QLinearConv's).
struct QOutput {
  QOut type = QOut::i32;
  void* data = nullptr;
  int64_t ldc = 0;                // elements between rows
  const int32_t* bias = nullptr;  // m values, or none
  const float* scale = nullptr;   // u8 / s8: one value, or m with scale_per_row
  bool scale_per_row = false;
  int32_t y_zero = 0;
  // u8 / s8 only: element (row, column) at data[column * ldc + row]; for qconv2d_int8, y channels-last
  // [n, oh, ow, oc] (`ldc` ignored)
  bool transposed = false;
};

// C = A B for A [m x k] (rows lda apart) and B [k x n] (rows ldb apart), each u8 or s8 (`*_signed`); a_zero
// one value, b_zero one value or n (b_zero_per_col). Threaded over the pool.
void qmatmul_int8(int64_t m, int64_t n, int64_t k, const void* a, bool a_signed, int64_t lda, int32_t a_zero,
                  const void* b, bool b_signed, int64_t ldb, const int32_t* b_zero, bool b_zero_per_col,
                  const QOutput& out, ThreadPool* pool);

// A 2-D NCHW convolution (groups, strides, dilations, pads) over u8 / s8 x and w: y [n, oc, oh, ow] (or
// [n, oh, ow, oc] with out.transposed: a stem conv feeding layout_nhwc's int8 region) with `out.ldc` ignored.
// x_zero is one value (also what the pads hold); w_zero one value or oc (w_zero_per_oc). The weights are the
// rows of each group's GEMM, the image's im2col its columns, packed a 64-pixel panel at a time; a depthwise
// conv (kh * kw <= 258) runs on exact f32 kernels instead.
void qconv2d_int8(const Conv2dParams& p, const void* x, bool x_signed, int32_t x_zero, const void* w,
                  bool w_signed, const int32_t* w_zero, bool w_zero_per_oc, const QOutput& out,
                  ThreadPool* pool);

// The weights of a group-1 2-D QLinearConv packed once (pass pack_qconv) for qconv2d_int8_packed: the
// transposed GEMM's B, K ordered (tap, channel) over the channels padded to 4 (cp), as s8 (u8 weights
// flipped: their zero point must then be 128, an s8 one 0 — the pass checks), in panels of 64 output
// channels [taps * cp / 4][16 nv][4] (the last panel 16 nv wide), then each output channel's sum over K
// (int32, oc rounded up to 64, 64-byte aligned).
struct QConvPackedW {
  static int64_t cp(int64_t c) { return (c + 3) / 4 * 4; }
  static int64_t k(int64_t c, int64_t kh, int64_t kw) { return kh * kw * cp(c); }
  static size_t panel_bytes(int64_t oc, int64_t c, int64_t kh, int64_t kw);  // all panels
  static size_t bytes(int64_t oc, int64_t c, int64_t kh, int64_t kw);
  // w [oc, c, kh, kw] of u8 or s8
  static void pack(const void* w, bool w_signed, int64_t oc, int64_t c, int64_t kh, int64_t kw, uint8_t* out);
  // a grouped conv's w [oc, cg, kh, kw]: each group's oc / groups outputs packed on their own, one group
  // after another (qconv2d_int8_packed_nhwc with p.groups > 1)
  static size_t grouped_bytes(int64_t oc, int64_t cg, int64_t kh, int64_t kw, int64_t groups) {
    return size_t(groups) * bytes(oc / groups, cg, kh, kw);
  }
  static void pack_grouped(const void* w, bool w_signed, int64_t oc, int64_t cg, int64_t kh, int64_t kw,
                           int64_t groups, uint8_t* out);
  // a matmul's B [k, n] as n output channels of k (kh = kw = 1), read in place; writes all bytes(n, k, 1, 1)
  static void pack_matmul(const void* b, bool b_signed, int64_t k, int64_t n, uint8_t* out);
  // weight (o, ci, i, j) as packed (s8: u8 weights minus 128)
  static int32_t at(const uint8_t* packed, int64_t oc, int64_t c, int64_t kh, int64_t kw, int64_t o,
                    int64_t ci, int64_t i, int64_t j);
};

// QLinearConv (group 1, 2-D) over packed weights whose zero point is 0 after the flip: the transposed GEMM,
// output pixels as its rows and output channels as its columns. The image is copied once into a padded
// [cp / 4][h + pads][w + pads][4] layout (four channels of a pixel in one 32-bit word, the border holding the
// zero point) so that every tap of every pixel is a pointer into it; the weights are never repacked. The
// output stage's scale (one value or per output channel) and bias are per column; the NHWC result is
// transposed into y [n, oc, oh, ow] (`out.ldc` ignored; out.scale_per_row means per output channel).
void qconv2d_int8_packed(const Conv2dParams& p, const void* x, bool x_signed, int32_t x_zero,
                         const uint8_t* w, const QOutput& out, ThreadPool* pool);

// The same conv over NHWC: x [n, h, w, c] into y [n, oh, ow, oc] (`out.ldc` ignored), for layout_nhwc's int8
// regions; also grouped (p.groups > 1, each group's channels a multiple of 4, w packed by pack_grouped: one
// task space over the groups' panels). Every tap of a pixel is read in place (its channels are contiguous); a
// tap in the padding reads a row of zero points. Only where the channels are not a multiple of 4, or x is s8
// (flipped to u8), is the image copied first, into [h][w][cp]. The results are stored as they come out of the
// tile, pixel rows of output channels: no transposition.
void qconv2d_int8_packed_nhwc(const Conv2dParams& p, const void* x, bool x_signed, int32_t x_zero,
                              const uint8_t* w, const QOutput& out, ThreadPool* pool);

// The weights of a depthwise conv packed once (layout_nhwc) for qdepthwise_nhwc_int8: f32 [taps + 1][c], row
// t holding each channel's w - w_zero at tap t, the last row each channel's sum over its taps.
struct QDepthwiseW {
  static int64_t floats(int64_t c, int64_t kh, int64_t kw) { return (kh * kw + 1) * c; }
  // w [c, 1, kh, kw] of u8 / s8; w_zero one value, or c (w_zero_per_oc)
  static void pack(const void* w, bool w_signed, const int32_t* w_zero, bool w_zero_per_oc, int64_t c,
                   int64_t kh, int64_t kw, float* out);
};

// A depthwise conv (groups = c = oc, kh * kw <= 258) over NHWC u8 / s8 x [n, h, w, c] into y [n, oh, ow, c],
// the channels in vectors: int32 sums or requantized (out.scale one value, or per channel with
// out.scale_per_row; out.bias per channel; `out.ldc` ignored). The sums are exact in f32: sum over taps of
// (w - w_zero) x, at most 258 products of bytes, is an integer below 2^24; x_zero times the weights' sum is
// taken off in int32, and a tap in the padding reads x_zero, so it adds nothing.
void qdepthwise_nhwc_int8(const Conv2dParams& p, const void* x, bool x_signed, int32_t x_zero,
                          const float* wf, const QOutput& out, ThreadPool* pool);
void qdepthwise_nhwc_int8__avx512f(const Conv2dParams& p, const void* x, bool x_signed, int32_t x_zero,
                                   const float* wf, const QOutput& out, ThreadPool* pool);

// MatMulInteger / QLinearMatMul by a constant B [k, n] packed once (pass pack_qmatmul) as QConvPackedW of
// n output channels over k channels and a 1 x 1 kernel (B's columns as its rows), zero point 0 after the
// flip.
void qmatmul_int8_packed(int64_t m, int64_t n, int64_t k, const void* a, bool a_signed, int64_t lda,
                         int32_t a_zero, const uint8_t* b, const QOutput& out, ThreadPool* pool);

// A depthwise conv (groups = c = oc, kh * kw <= 258) over u8 / s8 x for AVX-512 (qdepthwise__avx512f.cpp),
// with w as f32 [c][kh * kw] of w - w_zero; int32 sums or requantized (scale per channel = per row).
void qdepthwise_int8__avx512f(const Conv2dParams& p, const void* x, bool x_signed, int32_t x_zero,
                              const float* w, const QOutput& out, ThreadPool* pool);

// ---- internals shared with the ISA kernels ----

// B is packed in panels of up to kQNr columns, 16 * nv wide (nv = 1..4 vectors): [kp / 4][16 nv][4] bytes,
// k-major in groups of four (kp = k rounded up to 4; zeros past k and past the panel's columns).
inline constexpr int64_t kQNr = 64, kQMr = 6;

// One tile: up to kQMr rows of A by one panel, over the whole k, and its output stage.
struct QTile {
  int64_t kq = 0;              // groups of four k (per tap with a_ptrs)
  const uint8_t* a = nullptr;  // the tile's first row (4 kq bytes readable per row)
  int64_t lda = 0;
  // or, for a conv's pixels, each tap's row pointers (a_ptrs[tap * kQMr + i]), the k groups of a row
  // a_step bytes apart
  const uint8_t* const* a_ptrs = nullptr;
  int64_t taps = 1, a_step = 4;
  int mr = 0, nr = 0, nv = 0;  // rows, columns, vectors of 16 in the panel
  const uint8_t* b = nullptr;  // the panel
  bool a_signed = false;       // A s8 and B u8 (else A u8 and B s8)
  // zero-point terms: per row (a_zero, a_rowsum) and per panel column (b_zero, col_term = colsum - k b_zero,
  // 64 values, 64-byte aligned); null where the term is zero
  const int32_t* a_zero = nullptr;
  const int32_t* a_rowsum = nullptr;
  const int32_t* b_zero = nullptr;
  const int32_t* col_term = nullptr;
  // per column (64 values, 64-byte aligned), subtracted: the a_zero term when every row's a_zero is the same
  // (then a_zero is null), with a per-column bias folded in (one subtraction instead of a multiply and two)
  const int32_t* col_sub = nullptr;
  const int32_t* bias = nullptr;  // per row, from the tile's first row; per column, from its first column
  bool bias_per_col = false;
  QOut type = QOut::i32;
  const float* scale = nullptr;  // the tile's first row's (per row), first column's (per column), or one
  bool scale_per_row = false, scale_per_col = false;
  int32_t y_zero = 0;
  void* c = nullptr;  // the tile's first element
  int64_t ldc = 0;
  bool c_transposed = false;  // u8 / s8 only: element (i, j) at c[j * ldc + i]
};

void qgemm_tile_portable(const QTile& t);
void qgemm_tile__avx512vnni(const QTile& t);

// How to pack one panel of B: row kk (of k) comes from base + (kk / taps) * step (a matrix row, or an input
// channel's plane), through the segments of tap kk % taps: columns [d0, d0 + len) read bytes off, off + sw,
// ...; every other column holds `pad` (the input's zero point: a conv's padding). Bytes read are XORed with
// `flip`. Rows past k are zero. sums (when non-null) gets each column's sum over k, as s8 when b_signed.
struct QSeg {
  int64_t d0, len, off;
};
struct QPanelPlan {
  int64_t k = 0, nr = 0, width = 0;
  const uint8_t* base = nullptr;
  int64_t step = 0, taps = 1, sw = 1;
  const int64_t* seg_begin = nullptr;  // taps + 1 offsets into segs
  const QSeg* segs = nullptr;
  uint8_t pad = 0, flip = 0;
  bool b_signed = false;
  const uint8_t *lo = nullptr, *hi = nullptr;  // the bytes that may be read (whole vectors load inside)
};
void qpack_panel_portable(const QPanelPlan& p, uint8_t* panel, int32_t* sums);
void qpack_panel__avx512vnni(const QPanelPlan& p, uint8_t* panel, int32_t* sums);

}  // namespace tessera::kernels::x86
