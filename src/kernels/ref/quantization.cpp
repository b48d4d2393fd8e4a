// Reference kernels: quantization family (QuantizeLinear, DequantizeLinear,
// DynamicQuantizeLinear, MatMulInteger, ConvInteger, QLinearMatMul, QLinearConv).
#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/dtype_attr.h"
#include "kernels/ref/broadcast.h"
#include "kernels/ref/misc_conv.h"
#include "kernels/ref/misc_util.h"
#include "kernels/ref/registry.h"
#include "kernels/x86/qgemm.h"

namespace tessera::kernels::ref {
namespace {

using namespace misc;

// Maps each element of x to the index of its scale / zero point: per tensor,
// per axis (1-D scale along `axis`) or blocked (scale has x's rank, with
// ceil(dim/block_size) along `axis`).
struct QuantParamIndex {
  enum class Mode { tensor, axis, blocked } mode = Mode::tensor;
  int64_t axis = 0, block = 0;
  Shape x_shape, s_shape;

  QuantParamIndex(const KernelContext& ctx, const Shape& xs, const Tensor& scale)
      : x_shape(xs), s_shape(scale.shape()) {
    const int64_t r = int64_t(xs.size());
    block = ctx.attr_int("block_size", 0);
    ctx.check(block >= 0, "block_size must be >= 0, got ", block);
    if (scale.numel() == 1 && (scale.rank() <= 1) && block == 0) return;
    axis = norm_axis(ctx, ctx.attr_int("axis", 1), r);
    if (block == 0) {
      ctx.check(scale.rank() == 1, "per-axis scale must be 1-D, got ", shape_text(scale.shape()));
      ctx.check(scale.dim(0) == xs[size_t(axis)], "scale has ", scale.dim(0), " values but input dim ", axis,
                " is ", xs[size_t(axis)]);
      mode = Mode::axis;
    } else {
      ctx.check(scale.rank() == r, "blocked scale must have the input's rank ", r, ", got ",
                shape_text(scale.shape()));
      for (int64_t d = 0; d < r; ++d) {
        const int64_t want = d == axis ? (xs[size_t(d)] + block - 1) / block : xs[size_t(d)];
        ctx.check(scale.dim(d) == want, "blocked scale shape ", shape_text(scale.shape()),
                  " does not match input ", shape_text(xs), " with block_size ", block, " on axis ", axis);
      }
      mode = Mode::blocked;
    }
  }
  // Index into the scale for flat element i of x.
  int64_t operator()(int64_t i, std::vector<int64_t>& tmp) const {
    if (mode == Mode::tensor) return 0;
    unravel(i, x_shape, tmp);
    if (mode == Mode::axis) return tmp[size_t(axis)];
    tmp[size_t(axis)] /= block;
    return ravel(tmp, s_shape);
  }
};

bool is_f8(DType t) {
  return t == DType::f8e4m3fn || t == DType::f8e4m3fnuz || t == DType::f8e5m2 || t == DType::f8e5m2fnuz;
}

// Rounds a float to the precision of a float dtype (as numpy would store it).
float round_to(DType t, float v) {
  if (t == DType::f16) return Float16(v).to_float();
  if (t == DType::bf16) return BFloat16(v).to_float();
  return v;
}

void quantize_linear(KernelContext& ctx) {
  const Tensor& x = ctx.required_input(0);
  const Tensor& scale = ctx.required_input(1);
  const Tensor* zp = ctx.input(2);
  ctx.check(is_std_float(x.dtype()) || x.dtype() == DType::i32, "input must be float or int32, got ",
            x.text());
  DType out = DType::u8;
  const int64_t od = ctx.attr_int("output_dtype", 0);
  if (od != 0) {
    out = dtype_from_type_code(od);
    ctx.check(out != DType::undefined, "unknown output_dtype ", od);
  }
  if (zp) {
    ctx.check(od == 0 || zp->dtype() == out, "output_dtype disagrees with the zero point's type ",
              dtype_name(zp->dtype()));
    out = zp->dtype();
  }
  double lo = 0, hi = 0;
  const bool integer_out = int_range(out, lo, hi) && out != DType::i32 && out != DType::u32;
  ctx.check(integer_out || is_f8(out) || out == DType::f4e2m1, "unsupported quantized type ",
            dtype_name(out));
  QuantParamIndex idx(ctx, x.shape(), scale);
  if (zp)
    ctx.check(zp->shape() == scale.shape() || (zp->numel() == 1 && scale.numel() == 1), "zero point shape ",
              shape_text(zp->shape()), " differs from scale shape ", shape_text(scale.shape()));
  const bool saturate = ctx.attr_int("saturate", 1) != 0;
  // Precision of the division: the input's type, or `precision` when given.
  DType prec = x.dtype() == DType::i32 ? scale.dtype() : x.dtype();
  if (const int64_t p = ctx.attr_int("precision", 0); p != 0) prec = dtype_from_type_code(p);
  const std::vector<float> xv = to_floats(x), sv = to_floats(scale);
  const std::vector<float> zv = zp ? to_floats(*zp) : std::vector<float>(sv.size(), 0.f);
  Tensor& y = ctx.output(0, out, x.shape());
  std::vector<double> r(xv.size());
  std::vector<int64_t> tmp;
  for (size_t i = 0; i < xv.size(); ++i) {
    const int64_t k = idx(int64_t(i), tmp);
    const float q = round_to(prec, round_to(prec, xv[i]) / round_to(prec, sv[size_t(k)]));
    if (integer_out) {
      double v = std::nearbyint(double(q));  // ties to even (default rounding mode)
      if (std::isnan(v)) v = 0;
      v += zv[size_t(k)];
      r[i] = std::clamp(v, lo, hi);
    } else if (out == DType::f4e2m1) {
      r[i] = double(q + zv[size_t(k)]);
    } else {
      r[i] = double(q);
    }
  }
  const bool sat = integer_out ? false : (out == DType::f4e2m1 ? true : saturate);
  from_doubles(y, r, sat);
}

void dequantize_linear(KernelContext& ctx) {
  const Tensor& x = ctx.required_input(0);
  const Tensor& scale = ctx.required_input(1);
  const Tensor* zp = ctx.input(2);
  ctx.check(is_std_float(scale.dtype()), "scale must be a float tensor, got ", scale.text());
  double lo, hi;
  ctx.check(int_range(x.dtype(), lo, hi) || is_f8(x.dtype()) || x.dtype() == DType::f4e2m1,
            "unsupported quantized input type ", dtype_name(x.dtype()));
  if (zp) {
    ctx.check(zp->dtype() == x.dtype(), "zero point type ", dtype_name(zp->dtype()),
              " differs from input type ", dtype_name(x.dtype()));
    ctx.check(zp->shape() == scale.shape() || (zp->numel() == 1 && scale.numel() == 1), "zero point shape ",
              shape_text(zp->shape()), " differs from scale shape ", shape_text(scale.shape()));
  }
  DType out = scale.dtype();
  if (const int64_t od = ctx.attr_int("output_dtype", 0); od != 0) {
    out = dtype_from_type_code(od);
    ctx.check(is_std_float(out), "unsupported output_dtype ", od);
  }
  QuantParamIndex idx(ctx, x.shape(), scale);
  const std::vector<float> xv = to_floats(x), sv = to_floats(scale);
  // f8 zero points must be zero (they are ignored, as in ONNX).
  const bool use_zp = zp && !is_f8(x.dtype());
  const std::vector<float> zv = use_zp ? to_floats(*zp) : std::vector<float>(sv.size(), 0.f);
  Tensor& y = ctx.output(0, out, x.shape());
  std::vector<double> r(xv.size());
  std::vector<int64_t> tmp;
  for (size_t i = 0; i < xv.size(); ++i) {
    const int64_t k = idx(int64_t(i), tmp);
    r[i] = double((xv[i] - zv[size_t(k)]) * sv[size_t(k)]);
  }
  from_doubles(y, r);
}

void dynamic_quantize_linear(KernelContext& ctx) {
  const Tensor& x = ctx.required_input(0);
  ctx.check(is_std_float(x.dtype()), "input must be float, got ", x.text());
  const std::vector<float> xv = to_floats(x);
  float mx = 0, mn = 0;
  for (float v : xv) {
    mx = std::max(mx, v);
    mn = std::min(mn, v);
  }
  const float scale = (mx == mn ? 1.0f : (mx - mn)) / 255.0f;
  const float zpf = std::clamp(0.0f - mn / scale, 0.0f, 255.0f);
  const float zpi = std::nearbyint(zpf);
  Tensor& y = ctx.output(0, DType::u8, x.shape());
  uint8_t* yp = y.data<uint8_t>();
  for (size_t i = 0; i < xv.size(); ++i)
    yp[i] = uint8_t(std::clamp(std::nearbyint(xv[i] / scale) + zpi, 0.0f, 255.0f));
  Tensor& ys = ctx.output(1, x.dtype(), {});
  from_doubles(ys, {double(scale)});
  Tensor& yz = ctx.output(2, DType::u8, {});
  *yz.data<uint8_t>() = uint8_t(zpi);
}

bool is_int8ish(DType t) {
  return t == DType::i8 || t == DType::u8;
}

// Integer batched matmul with numpy broadcasting: returns (shape, values).
// a_zp is per tensor or per row of A (length M); b_zp per tensor or per column (N).
void int_matmul(const KernelContext& ctx, const Tensor& a, const Tensor& b, const std::vector<double>& azp,
                const std::vector<double>& bzp, Shape& out_shape, std::vector<int64_t>& out) {
  Shape as = a.shape(), bs = b.shape();
  ctx.check(as.size() >= 1 && bs.size() >= 1, "matmul inputs must have rank >= 1");
  const bool a1 = as.size() == 1, b1 = bs.size() == 1;
  if (a1) as.insert(as.begin(), 1);
  if (b1) bs.push_back(1);
  const int64_t M = as[as.size() - 2], K = as.back(), N = bs.back();
  ctx.check(bs[bs.size() - 2] == K, "matmul inner dims differ: ", shape_text(a.shape()), " x ",
            shape_text(b.shape()));
  ctx.check(azp.size() == 1 || int64_t(azp.size()) == M, "a_zero_point must be a scalar or have M=", M,
            " values");
  ctx.check(bzp.size() == 1 || int64_t(bzp.size()) == N, "b_zero_point must be a scalar or have N=", N,
            " values");
  Shape ab(as.begin(), as.end() - 2), bb(bs.begin(), bs.end() - 2);
  const size_t br = std::max(ab.size(), bb.size());
  Shape batch(br);
  for (size_t i = 0; i < br; ++i) {
    const int64_t da = i < br - ab.size() ? 1 : ab[i - (br - ab.size())];
    const int64_t db = i < br - bb.size() ? 1 : bb[i - (br - bb.size())];
    ctx.check(da == db || da == 1 || db == 1, "batch dims do not broadcast: ", shape_text(a.shape()), " x ",
              shape_text(b.shape()));
    batch[i] = da == 1 ? db : da;
  }
  const std::vector<double> av = a.to_double_vector(), bv = b.to_double_vector();
  const int64_t nb = shape_numel(batch);
  out.assign(size_t(nb * M * N), 0);
  std::vector<int64_t> bi;
  for (int64_t t = 0; t < nb; ++t) {
    unravel(t, batch, bi);
    int64_t ao = 0, bo = 0;
    for (size_t i = 0; i < br; ++i) {
      if (i >= br - ab.size()) {
        const size_t j = i - (br - ab.size());
        ao = ao * ab[j] + (ab[j] == 1 ? 0 : bi[i]);
      }
      if (i >= br - bb.size()) {
        const size_t j = i - (br - bb.size());
        bo = bo * bb[j] + (bb[j] == 1 ? 0 : bi[i]);
      }
    }
    const double* ap = av.data() + ao * M * K;
    const double* bp = bv.data() + bo * K * N;
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) {
        int64_t acc = 0;
        const int64_t za = int64_t(azp.size() == 1 ? azp[0] : azp[size_t(m)]);
        const int64_t zb = int64_t(bzp.size() == 1 ? bzp[0] : bzp[size_t(n)]);
        for (int64_t k = 0; k < K; ++k) acc += (int64_t(ap[m * K + k]) - za) * (int64_t(bp[k * N + n]) - zb);
        out[size_t((t * M + m) * N + n)] = acc;
      }
  }
  out_shape = batch;
  if (!a1) out_shape.push_back(M);
  if (!b1) out_shape.push_back(N);
}

std::vector<double> zp_values(const KernelContext& ctx, size_t i, DType want) {
  const Tensor* z = ctx.input(i);
  if (!z) return {0.0};
  ctx.check(z->dtype() == want, "zero point (input ", i, ") type ", dtype_name(z->dtype()),
            " differs from its tensor's ", dtype_name(want));
  ctx.check(z->rank() <= 1, "zero point (input ", i, ") must be a scalar or 1-D");
  return z->to_double_vector();
}

// MatMulInteger with B `b` (input 1, or tessera.MatMulIntegerPacked's unpacked).
void matmul_integer_with(KernelContext& ctx, const Tensor& b) {
  const Tensor& a = ctx.required_input(0);
  ctx.check(is_int8ish(a.dtype()) && is_int8ish(b.dtype()), "inputs must be int8/uint8");
  Shape s;
  std::vector<int64_t> v;
  int_matmul(ctx, a, b, zp_values(ctx, 2, a.dtype()), zp_values(ctx, 3, b.dtype()), s, v);
  Tensor& y = ctx.output(0, DType::i32, s);
  int32_t* yp = y.data<int32_t>();
  for (size_t i = 0; i < v.size(); ++i) yp[i] = int32_t(v[i]);
}

// The requantization of an int32 sum, as onnxruntime (MLAS) does it: the sum to f32, times the f32 scale,
// clamped to the output's range less the zero point (a NaN to its low end), rounded half to even, plus the
// zero point. (f64 arithmetic would round some sums that lie within an f32 rounding of a half step the
// other way; this is the bytes onnxruntime writes.)
double requantize(int32_t acc, float scale, int32_t zero, DType t) {
  double lo, hi;
  int_range(t, lo, hi);
  const float flo = float(lo - zero), fhi = float(hi - zero);
  float v = float(acc) * scale;
  v = v > flo ? v : flo;
  v = v < fhi ? v : fhi;
  return double(std::nearbyint(v)) + zero;
}

// Scalar of a scale tensor after checking it is one value.
float scalar_of(const KernelContext& ctx, size_t i, const char* what) {
  const Tensor& t = ctx.required_input(i);
  ctx.check(t.numel() == 1 && is_std_float(t.dtype()), what, " must be a single float, got ", t.text());
  return float(t.at_double(0));
}

// QLinearMatMul with B `b` (input 3, or tessera.QLinearMatMulPacked's unpacked).
void qlinear_matmul_with(KernelContext& ctx, const Tensor& b) {
  const Tensor& a = ctx.required_input(0);
  ctx.check(is_int8ish(a.dtype()) && is_int8ish(b.dtype()), "inputs must be int8/uint8");
  const DType st = ctx.required_input(1).dtype();
  const float as = scalar_of(ctx, 1, "a_scale"), bs = scalar_of(ctx, 4, "b_scale"),
              ys = scalar_of(ctx, 6, "y_scale");
  const Tensor* yzp = ctx.input(7);
  const DType out = yzp ? yzp->dtype() : a.dtype();
  ctx.check(is_int8ish(out), "y_zero_point must be int8/uint8");
  const int32_t yz = yzp ? int32_t(yzp->at_double(0)) : 0;
  Shape s;
  std::vector<int64_t> v;
  int_matmul(ctx, a, b, zp_values(ctx, 2, a.dtype()), zp_values(ctx, 5, b.dtype()), s, v);
  // The scale factor is formed in the scales' own precision.
  const float f = round_to(st, round_to(st, as * bs) / ys);
  Tensor& y = ctx.output(0, out, s);
  std::vector<double> r(v.size());
  for (size_t i = 0; i < v.size(); ++i) r[i] = requantize(int32_t(v[i]), f, yz, out);
  from_doubles(y, r);
}

void conv_integer(KernelContext& ctx) {
  const Tensor& x = ctx.required_input(0);
  const Tensor& w = ctx.required_input(1);
  ctx.check(is_int8ish(x.dtype()) && is_int8ish(w.dtype()), "inputs must be int8/uint8");
  ConvGeometry g = conv_geometry(ctx, x.shape(), w.shape());
  const std::vector<double> xz = zp_values(ctx, 2, x.dtype()), wz = zp_values(ctx, 3, w.dtype());
  ctx.check(xz.size() == 1, "x_zero_point must be a scalar");
  ctx.check(wz.size() == 1 || int64_t(wz.size()) == g.m, "w_zero_point must be a scalar or have M values");
  std::vector<int64_t> xi(size_t(x.numel())), wi(size_t(w.numel()));
  const std::vector<double> xv = x.to_double_vector(), wv = w.to_double_vector();
  const int64_t per_m = w.numel() / std::max<int64_t>(g.m, 1);
  for (size_t i = 0; i < xi.size(); ++i) xi[i] = int64_t(xv[i]) - int64_t(xz[0]);
  for (size_t i = 0; i < wi.size(); ++i)
    wi[i] = int64_t(wv[i]) - int64_t(wz.size() == 1 ? wz[0] : wz[i / size_t(per_m)]);
  const std::vector<int64_t> r = conv_int(g, xi, wi);
  Tensor& y = ctx.output(0, DType::i32, g.out_shape());
  int32_t* yp = y.data<int32_t>();
  for (size_t i = 0; i < r.size(); ++i) yp[i] = int32_t(r[i]);
}

// A 4-D tensor of 1-byte elements permuted NHWC -> NCHW (to_nhwc false) or back.
Tensor permute_bytes4(const Tensor& t0, bool to_nhwc) {
  const Tensor t = t0.contiguous();
  const int64_t n = t.dim(0), a = t.dim(1), b = t.dim(2), c = t.dim(3);
  // from [n][a][b][c] to [n][c][a][b] (NHWC -> NCHW), or to [n][b][c][a] (NCHW -> NHWC)
  Tensor o(t.dtype(), to_nhwc ? Shape{n, b, c, a} : Shape{n, c, a, b});
  const uint8_t* s = static_cast<const uint8_t*>(t.raw_data());
  uint8_t* d = static_cast<uint8_t*>(o.raw_data());
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < a; ++j)
      for (int64_t k = 0; k < b; ++k)
        for (int64_t l = 0; l < c; ++l) {
          const int64_t from = ((i * a + j) * b + k) * c + l;
          d[to_nhwc ? ((i * b + k) * c + l) * a + j : ((i * c + l) * a + j) * b + k] = s[from];
        }
  return o;
}

// QLinearConv with the weights `w` (input 3, or tessera.QLinearConvPacked's unpacked), over x (input 0, or
// its NCHW copy when `nhwc` and not `nchw_in`); with `nhwc` the result is stored channels-last.
void qlinear_conv_with(KernelContext& ctx, const Tensor& w, bool nhwc = false, bool nchw_in = false) {
  const Tensor x = nhwc && !nchw_in ? permute_bytes4(ctx.required_input(0), false) : ctx.required_input(0);
  ctx.check(is_int8ish(x.dtype()) && is_int8ish(w.dtype()), "inputs must be int8/uint8");
  ConvGeometry g = conv_geometry(ctx, x.shape(), w.shape());
  const float xs = scalar_of(ctx, 1, "x_scale"), ys = scalar_of(ctx, 6, "y_scale");
  const Tensor& wst = ctx.required_input(4);
  const std::vector<double> ws = wst.to_double_vector();
  ctx.check(ws.size() == 1 || int64_t(ws.size()) == g.m, "w_scale must be a scalar or have M values");
  const std::vector<double> xz = zp_values(ctx, 2, x.dtype()), wz = zp_values(ctx, 5, w.dtype());
  ctx.check(xz.size() == 1, "x_zero_point must be a scalar");
  ctx.check(wz.size() == 1 || int64_t(wz.size()) == g.m, "w_zero_point must be a scalar or have M values");
  const Tensor* yzp = ctx.input(7);
  const DType out = yzp ? yzp->dtype() : x.dtype();
  ctx.check(is_int8ish(out), "y_zero_point must be int8/uint8");
  const double yz = yzp ? yzp->at_double(0) : 0.0;
  std::vector<int64_t> xi(size_t(x.numel())), wi(size_t(w.numel()));
  const std::vector<double> xv = x.to_double_vector(), wv = w.to_double_vector();
  const int64_t per_m = w.numel() / std::max<int64_t>(g.m, 1);
  for (size_t i = 0; i < xi.size(); ++i) xi[i] = int64_t(xv[i]) - int64_t(xz[0]);
  for (size_t i = 0; i < wi.size(); ++i)
    wi[i] = int64_t(wv[i]) - int64_t(wz.size() == 1 ? wz[0] : wz[i / size_t(per_m)]);
  std::vector<int64_t> r = conv_int(g, xi, wi);
  const int64_t osz = shape_numel(g.out_sp);
  if (const Tensor* bias = ctx.input(8)) {
    ctx.check(bias->dtype() == DType::i32 && bias->numel() == g.m, "bias must be int32 with M values");
    const std::vector<int64_t> bv = bias->to_int_vector();
    for (size_t i = 0; i < r.size(); ++i) r[i] += bv[size_t((int64_t(i) / osz) % g.m)];
  }
  std::vector<double> res(r.size());
  for (size_t i = 0; i < r.size(); ++i) {
    const int64_t m = (int64_t(i) / osz) % g.m;
    const float f = xs * float(ws.size() == 1 ? ws[0] : ws[size_t(m)]) / ys;
    res[i] = requantize(int32_t(r[i]), f, int32_t(yz), out);
  }
  if (!nhwc) {
    from_doubles(ctx.output(0, out, g.out_shape()), res);
    return;
  }
  ctx.check(g.out_shape().size() == 4, "an NHWC QLinearConvPacked is 2-D");
  Tensor yc(out, g.out_shape());
  from_doubles(yc, res);
  const Tensor yn = permute_bytes4(yc, true);
  Tensor& y = ctx.output(0, out, yn.shape());
  std::memcpy(y.raw_data(), yn.raw_data(), size_t(yn.nbytes()));
}

void matmul_integer(KernelContext& ctx) {
  matmul_integer_with(ctx, ctx.required_input(1));
}
void qlinear_matmul(KernelContext& ctx) {
  qlinear_matmul_with(ctx, ctx.required_input(3));
}
void qlinear_conv(KernelContext& ctx) {
  qlinear_conv_with(ctx, ctx.required_input(3));
}

// The weights of a packed int8 op (x86::QConvPackedW; passes pack_qconv, pack_qmatmul) unpacked to the
// type w_type: as [oc, c, kh, kw] (conv) or transposed back to B [k, n] (matmul: oc = n, c = k).
Tensor unpack_weights(KernelContext& ctx, size_t input, const std::vector<int64_t>& ws, bool matmul) {
  const Tensor& pk = ctx.required_input(input);
  const DType wt = dtype_from_type_code(ctx.attr_int("w_type", 0));
  ctx.check(ws.size() == 4 && ws[0] > 0 && ws[1] > 0 && ws[2] > 0 && ws[3] > 0,
            "the packed weights' shape must be 4 positive sizes");
  ctx.check(wt == DType::u8 || wt == DType::i8, "w_type must be uint8 or int8");
  using x86::QConvPackedW;
  ctx.check(pk.dtype() == DType::u8 && pk.rank() == 1 &&
                size_t(pk.numel()) == QConvPackedW::bytes(ws[0], ws[1], ws[2], ws[3]),
            "packed weights ", pk.text(), " do not match their shape");
  const Tensor pc = pk.contiguous();
  Tensor w(wt, matmul ? Shape{ws[1], ws[0]} : Shape(ws.begin(), ws.end()));
  uint8_t* wp = static_cast<uint8_t*>(w.raw_data());
  for (int64_t o = 0; o < ws[0]; ++o)
    for (int64_t c = 0; c < ws[1]; ++c)
      for (int64_t a = 0; a < ws[2]; ++a)
        for (int64_t b = 0; b < ws[3]; ++b) {
          const int32_t v = QConvPackedW::at(pc.data<uint8_t>(), ws[0], ws[1], ws[2], ws[3], o, c, a, b);
          const int64_t i = matmul ? c * ws[0] + o : ((o * ws[1] + c) * ws[2] + a) * ws[3] + b;
          wp[i] = uint8_t(wt == DType::u8 ? v + 128 : v);
        }
  return w;
}

// tessera.QLinearConvPacked (pass pack_qconv): QLinearConv over weights packed for the int8 kernels
// (x86::QConvPackedW), unpacked here to their weight_shape and w_type.
// With layout NHWC (layout_nhwc) x and y are channels-last (x NCHW with input_layout NCHW, the weights then
// not packed), and a depthwise conv (group = oc, one channel a group) has its weights as x86::QDepthwiseW's
// f32 w - w_zero, added back to w_zero here.
void qlinear_conv_packed(KernelContext& ctx) {
  const auto ws = ctx.attr_ints("weight_shape");
  const bool nhwc = ctx.attr_string("layout", "NCHW") == "NHWC";
  if (nhwc && ctx.attr_string("input_layout", "NHWC") == "NCHW") {  // weights as they are
    qlinear_conv_with(ctx, ctx.required_input(3), true, true);
    return;
  }
  if (ws.size() == 4 && ctx.attr_int("group", 1) == ws[0] && ws[0] > 1 && ws[1] == 1) {
    const Tensor pk = ctx.required_input(3).contiguous();
    const DType wt = dtype_from_type_code(ctx.attr_int("w_type", 0));
    ctx.check(wt == DType::u8 || wt == DType::i8, "w_type must be uint8 or int8");
    ctx.check(ws[2] > 0 && ws[3] > 0 && pk.dtype() == DType::f32 &&
                  pk.numel() == x86::QDepthwiseW::floats(ws[0], ws[2], ws[3]),
              "packed depthwise weights ", pk.text(), " do not match their shape");
    const std::vector<double> wz = zp_values(ctx, 5, wt);
    ctx.check(wz.size() == 1 || int64_t(wz.size()) == ws[0],
              "w_zero_point must be a scalar or have M values");
    const int64_t taps = ws[2] * ws[3];
    Tensor w(wt, Shape(ws.begin(), ws.end()));
    std::vector<double> v(size_t(w.numel()));
    for (int64_t o = 0; o < ws[0]; ++o)
      for (int64_t t = 0; t < taps; ++t)
        v[size_t(o * taps + t)] =
            double(pk.data<float>()[t * ws[0] + o]) + wz[wz.size() == 1 ? 0 : size_t(o)];
    from_doubles(w, v);
    qlinear_conv_with(ctx, w, nhwc);
    return;
  }
  const int64_t group = ctx.attr_int("group", 1);
  if (nhwc && group > 1 && ws.size() == 4 && ws[0] % group == 0) {  // each group packed on its own
    const Tensor& pk = ctx.required_input(3);
    const DType wt = dtype_from_type_code(ctx.attr_int("w_type", 0));
    const int64_t og = ws[0] / group;
    ctx.check(wt == DType::u8 || wt == DType::i8, "w_type must be uint8 or int8");
    ctx.check(ws[1] > 0 && ws[2] > 0 && ws[3] > 0 && pk.dtype() == DType::u8 && pk.rank() == 1 &&
                  size_t(pk.numel()) == x86::QConvPackedW::grouped_bytes(ws[0], ws[1], ws[2], ws[3], group),
              "packed grouped weights ", pk.text(), " do not match their shape");
    const Tensor pc = pk.contiguous();
    const size_t per = x86::QConvPackedW::bytes(og, ws[1], ws[2], ws[3]);
    Tensor w(wt, Shape(ws.begin(), ws.end()));
    uint8_t* wp = static_cast<uint8_t*>(w.raw_data());
    for (int64_t gi = 0; gi < group; ++gi)
      for (int64_t o = 0; o < og; ++o)
        for (int64_t c = 0; c < ws[1]; ++c)
          for (int64_t a = 0; a < ws[2]; ++a)
            for (int64_t b = 0; b < ws[3]; ++b) {
              const int32_t v = x86::QConvPackedW::at(pc.data<uint8_t>() + size_t(gi) * per, og, ws[1], ws[2],
                                                      ws[3], o, c, a, b);
              wp[(((gi * og + o) * ws[1] + c) * ws[2] + a) * ws[3] + b] =
                  uint8_t(wt == DType::u8 ? v + 128 : v);
            }
    qlinear_conv_with(ctx, w, nhwc);
    return;
  }
  qlinear_conv_with(ctx, unpack_weights(ctx, 3, ws, false), nhwc);
}

// tessera.MatMulIntegerPacked / QLinearMatMulPacked (pass pack_qmatmul): B [K, N] packed as N channels of K.
void matmul_integer_packed(KernelContext& ctx) {
  const int64_t k = ctx.attr_int("K", 0), n = ctx.attr_int("N", 0);
  matmul_integer_with(ctx, unpack_weights(ctx, 1, {n, k, 1, 1}, true));
}
void qlinear_matmul_packed(KernelContext& ctx) {
  const int64_t k = ctx.attr_int("K", 0), n = ctx.attr_int("N", 0);
  qlinear_matmul_with(ctx, unpack_weights(ctx, 3, {n, k, 1, 1}, true));
}

// tessera.QLinearAdd (fuse_qdq): QuantizeLinear(DequantizeLinear(a) + DequantizeLinear(b)), per-tensor
// parameters, in the f32 operations of those three nodes (so the fused result is the unfused one's).
void qlinear_add(KernelContext& ctx) {
  const Tensor a = ctx.required_input(0).contiguous();
  const Tensor b = ctx.required_input(3).contiguous();
  ctx.check(is_int8ish(a.dtype()) && is_int8ish(b.dtype()), "inputs must be int8/uint8");
  const float as = scalar_of(ctx, 1, "a_scale"), bs = scalar_of(ctx, 4, "b_scale"),
              cs = scalar_of(ctx, 6, "c_scale");
  const std::vector<double> az = zp_values(ctx, 2, a.dtype()), bz = zp_values(ctx, 5, b.dtype());
  ctx.check(az.size() == 1 && bz.size() == 1, "zero points must be single values");
  const Tensor* czt = ctx.input(7);
  const DType out = czt ? czt->dtype() : a.dtype();
  ctx.check(is_int8ish(out), "c_zero_point must be int8/uint8");
  const std::vector<double> cz = czt ? zp_values(ctx, 7, out) : std::vector<double>{0.0};
  ctx.check(cz.size() == 1, "c_zero_point must be a single value");
  const Shape ys = broadcast_shape(a.shape(), b.shape());
  double lo, hi;
  int_range(out, lo, hi);
  const std::vector<double> av = a.to_double_vector(), bv = b.to_double_vector();
  std::vector<double> r(size_t(shape_numel(ys)));
  BroadcastIndexer(ys, {a.shape(), b.shape()}).for_each([&](int64_t o, const int64_t* in) {
    const float s =
        (float(av[size_t(in[0])]) - float(az[0])) * as + (float(bv[size_t(in[1])]) - float(bz[0])) * bs;
    double v = std::nearbyint(double(s / cs));
    if (std::isnan(v)) v = 0;
    r[size_t(o)] = std::clamp(v + cz[0], lo, hi);
  });
  from_doubles(ctx.output(0, out, ys), r);
}

}  // namespace

// tessera.QLookup (fuse_qlookup): y = table[x] for 8-bit x and a table of 256 8-bit values, indexed by x's
// byte (an s8 x of -1 reads entry 255).
void qlookup(KernelContext& ctx) {
  const Tensor x = ctx.required_input(0).contiguous();
  const Tensor t = ctx.required_input(1).contiguous();
  ctx.check(is_int8ish(x.dtype()), "QLookup's input must be uint8 or int8, got ", dtype_name(x.dtype()));
  ctx.check(is_int8ish(t.dtype()) && t.numel() == 256, "QLookup's table must be 256 uint8 or int8 values");
  Tensor& y = ctx.output(0, t.dtype(), x.shape());
  const uint8_t* xp = static_cast<const uint8_t*>(x.raw_data());
  const uint8_t* tp = static_cast<const uint8_t*>(t.raw_data());
  uint8_t* yp = static_cast<uint8_t*>(y.raw_data());
  for (int64_t i = 0; i < x.numel(); ++i) yp[i] = tp[xp[i]];
}

void register_quantization_kernels(KernelTable& t) {
  t.add("QuantizeLinear", quantize_linear);
  t.add("DequantizeLinear", dequantize_linear);
  t.add("DynamicQuantizeLinear", dynamic_quantize_linear);
  t.add("MatMulInteger", matmul_integer);
  t.add("QLinearMatMul", qlinear_matmul);
  t.add("ConvInteger", conv_integer);
  t.add("QLinearConv", qlinear_conv);
  t.add("QLinearConvPacked", qlinear_conv_packed, "tessera");
  t.add("MatMulIntegerPacked", matmul_integer_packed, "tessera");
  t.add("QLinearAdd", qlinear_add, "tessera");
  t.add("QLookup", qlookup, "tessera");
  t.add("QLinearMatMulPacked", qlinear_matmul_packed, "tessera");
}

}  // namespace tessera::kernels::ref
