// Reference kernels: signal family (DFT, STFT, HannWindow, HammingWindow,
// BlackmanWindow, MelWeightMatrix). Transforms are plain O(n^2) DFTs in double.
#include <cmath>
#include <complex>
#include <numbers>

#include "core/dtype_attr.h"
#include "kernels/ref/misc_util.h"
#include "kernels/ref/nn_util.h"
#include "kernels/ref/registry.h"

namespace tessera::kernels::ref {
namespace {

using namespace misc;
using cd = std::complex<double>;
constexpr double kPi = std::numbers::pi;

// Reads a [.., 1|2] real/complex tensor as complex values (last dim dropped).
std::vector<cd> read_complex(const KernelContext& ctx, const Tensor& x) {
  ctx.check(x.rank() >= 2 && (x.dim(-1) == 1 || x.dim(-1) == 2),
            "input's last dimension must be 1 (real) or 2 (complex), got ", x.text());
  const std::vector<double> v = x.to_double_vector();
  const int64_t c = x.dim(-1);
  std::vector<cd> out(v.size() / size_t(c));
  for (size_t i = 0; i < out.size(); ++i) out[i] = c == 1 ? cd(v[i], 0) : cd(v[2 * i], v[2 * i + 1]);
  return out;
}

int64_t scalar_int(const KernelContext& ctx, size_t i, const char* what) {
  const Tensor& t = ctx.required_input(i);
  ctx.check(t.numel() == 1 && is_integer(t.dtype()), what, " must be an integer scalar, got ", t.text());
  return t.at_int(0);
}

void dft(KernelContext& ctx) {
  const Tensor& x = ctx.required_input(0);
  ctx.check(is_std_float(x.dtype()), "input must be float, got ", x.text());
  const int64_t r = x.rank();
  const bool inverse = ctx.attr_int("inverse", 0) != 0, onesided = ctx.attr_int("onesided", 0) != 0;
  int64_t axis = ctx.opset() < 20 ? ctx.attr_int("axis", 1) : -2;
  if (ctx.has_input(2) && ctx.input(2)->numel() > 0) axis = scalar_int(ctx, 2, "axis");
  ctx.check(axis >= -r && axis < r, "axis ", axis, " out of range for rank ", r);
  if (axis < 0) axis += r;
  ctx.check(axis != r - 1, "axis must not be the last (real/imaginary) dimension");
  ctx.check(!(onesided && !inverse && x.dim(-1) == 2), "onesided DFT needs a real input");
  const int64_t in_n = x.dim(axis);
  int64_t n = (inverse && onesided) ? 2 * (in_n - 1) : in_n;
  if (ctx.has_input(1) && ctx.input(1)->numel() > 0) n = scalar_int(ctx, 1, "dft_length");
  ctx.check(n >= 1, "dft_length must be >= 1, got ", n);
  const std::vector<cd> xv = read_complex(ctx, x);
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x.dim(d);
  for (int64_t d = axis + 1; d < r - 1; ++d) inner *= x.dim(d);
  const int64_t out_n = inverse ? n : (onesided ? n / 2 + 1 : n);
  const int64_t out_c = (inverse && onesided) ? 1 : 2;
  Shape os = x.shape();
  os[size_t(axis)] = out_n;
  os.back() = out_c;
  std::vector<double> out = out_buffer(ctx, nn_prod(Shape{outer, out_n, inner, out_c}));
  const double sign = inverse ? 1.0 : -1.0;
  for (int64_t a = 0; a < outer; ++a)
    for (int64_t b = 0; b < inner; ++b) {
      auto in_at = [&](int64_t k) -> cd {
        return k < in_n ? xv[size_t((a * in_n + k) * inner + b)] : cd(0, 0);
      };
      for (int64_t k = 0; k < out_n; ++k) {
        cd acc(0, 0);
        if (inverse && onesided) {
          // Hermitian extension of the first n/2+1 bins (numpy irfft).
          const int64_t half = n / 2;
          for (int64_t j = 0; j <= half; ++j) {
            cd v = in_at(j);
            if (j == 0 || (n % 2 == 0 && j == half)) v = cd(v.real(), 0);
            const double ang = 2 * kPi * double((j * k) % n) / double(n);
            const double term = (v * cd(std::cos(ang), std::sin(ang))).real();
            acc += (j == 0 || (n % 2 == 0 && j == half)) ? term : 2 * term;
          }
        } else {
          const int64_t m = std::min(in_n, n);
          for (int64_t j = 0; j < m; ++j) {
            const double ang = sign * 2 * kPi * double((j * k) % n) / double(n);
            acc += in_at(j) * cd(std::cos(ang), std::sin(ang));
          }
        }
        if (inverse) acc /= double(n);
        const size_t o = size_t(((a * out_n + k) * inner + b) * out_c);
        out[o] = acc.real();
        if (out_c == 2) out[o + 1] = acc.imag();
      }
    }
  Tensor& y = ctx.output(0, x.dtype(), os);
  from_doubles(y, out);
}

void stft(KernelContext& ctx) {
  const Tensor& x = ctx.required_input(0);
  ctx.check(is_std_float(x.dtype()), "signal must be float, got ", x.text());
  ctx.check(x.rank() == 3 && (x.dim(2) == 1 || x.dim(2) == 2),
            "signal must have shape [batch, length, 1|2], got ", x.text());
  const int64_t step = scalar_int(ctx, 1, "frame_step");
  ctx.check(step >= 1, "frame_step must be >= 1, got ", step);
  const Tensor* win = ctx.input(2);
  if (win && win->numel() == 0 && !ctx.has_input(3)) win = nullptr;
  int64_t flen = x.dim(1);
  if (ctx.has_input(3))
    flen = scalar_int(ctx, 3, "frame_length");
  else if (win)
    flen = win->numel();
  ctx.check(flen >= 1 && flen <= x.dim(1), "frame_length ", flen, " must be in [1, ", x.dim(1), "]");
  std::vector<double> w(static_cast<size_t>(flen), 1.0);
  if (win) {
    ctx.check(win->rank() == 1 && win->numel() == flen, "window must be 1-D with frame_length=", flen,
              " values");
    w = win->to_double_vector();
  }
  const bool onesided = ctx.attr_int("onesided", 1) != 0;
  ctx.check(!(onesided && x.dim(2) == 2), "onesided STFT needs a real signal");
  const int64_t B = x.dim(0), L = x.dim(1);
  const int64_t frames = 1 + (L - flen) / step;
  const int64_t bins = onesided ? flen / 2 + 1 : flen;
  const std::vector<cd> xv = read_complex(ctx, x);
  std::vector<double> out = out_buffer(ctx, nn_prod(Shape{B, frames, bins, 2}));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t f = 0; f < frames; ++f)
      for (int64_t k = 0; k < bins; ++k) {
        cd acc(0, 0);
        for (int64_t j = 0; j < flen; ++j) {
          const double ang = -2 * kPi * double((j * k) % flen) / double(flen);
          acc += xv[size_t(b * L + f * step + j)] * w[size_t(j)] * cd(std::cos(ang), std::sin(ang));
        }
        const size_t o = size_t(((b * frames + f) * bins + k) * 2);
        out[o] = acc.real();
        out[o + 1] = acc.imag();
      }
  Tensor& y = ctx.output(0, x.dtype(), {B, frames, bins, 2});
  from_doubles(y, out);
}

DType window_dtype(const KernelContext& ctx) {
  const DType t = dtype_from_type_code(ctx.attr_int("output_datatype", 1));
  ctx.check(t != DType::undefined && t != DType::string && !is_complex(t), "unsupported output_datatype");
  return t;
}

template <typename F>
void window(KernelContext& ctx, F f) {
  const int64_t n = scalar_int(ctx, 0, "size");
  ctx.check(n >= 0, "size must be >= 0, got ", n);
  const bool periodic = ctx.attr_int("periodic", 1) != 0;
  const double d = periodic ? double(n) : double(n - 1);
  Tensor& y = ctx.output(0, window_dtype(ctx), {n});  // first: it refuses a size past the memory limit
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[size_t(i)] = f(double(i), d);
  from_doubles(y, v);
}

void hann_window(KernelContext& ctx) {
  window(ctx, [](double i, double d) {
    const double s = std::sin(i * kPi / d);
    return s * s;
  });
}
void hamming_window(KernelContext& ctx) {
  window(ctx, [](double i, double d) {
    const double alpha = 25.0 / 46.0;
    return alpha - std::cos(i * kPi * 2 / d) * (1 - alpha);
  });
}
void blackman_window(KernelContext& ctx) {
  window(ctx, [](double i, double d) {
    return std::cos(i * kPi * 2 / d) * -0.5 + std::cos(i * kPi * 4 / d) * 0.08 + 0.42;
  });
}

void mel_weight_matrix(KernelContext& ctx) {
  const int64_t bins = scalar_int(ctx, 0, "num_mel_bins");
  const int64_t dft_len = scalar_int(ctx, 1, "dft_length");
  const int64_t rate = scalar_int(ctx, 2, "sample_rate");
  const Tensor& lo_t = ctx.required_input(3);
  const Tensor& hi_t = ctx.required_input(4);
  ctx.check(bins >= 1 && dft_len >= 1 && rate >= 1,
            "num_mel_bins, dft_length and sample_rate must be positive");
  const float lo = float(lo_t.at_double(0)), hi = float(hi_t.at_double(0));
  ctx.check(lo >= 0 && hi >= lo, "edge frequencies must satisfy 0 <= lower <= upper");
  const int64_t spec = dft_len / 2 + 1;
  // The mel edges are formed in f32 (as the inputs), the rest in double.
  const float lo_mel = 2595.0f * std::log10(1.0f + lo / 700.0f);
  const float hi_mel = 2595.0f * std::log10(1.0f + hi / 700.0f);
  const float step = (hi_mel - lo_mel) / float(bins + 2);
  std::vector<int64_t> fb(size_t(bins + 2));
  for (int64_t i = 0; i < bins + 2; ++i) {
    double f = double(i) * double(step) + double(lo_mel);
    f = 700 * (std::pow(10.0, f / 2595) - 1);
    fb[size_t(i)] = int64_t(std::floor(double(dft_len + 1) * f / double(rate)));
  }
  std::vector<double> out = out_buffer(ctx, nn_prod(Shape{spec, bins}), 0.0);
  auto at = [&](int64_t j, int64_t i) -> double& {
    if (j < 0 || j >= spec)
      ctx.fail(ErrorCode::invalid_argument, "mel bin edge ", j, " outside the spectrum");
    return out[size_t(j * bins + i)];
  };
  for (int64_t i = 0; i < bins; ++i) {
    const int64_t l = fb[size_t(i)], c = fb[size_t(i + 1)], h = fb[size_t(i + 2)];
    if (c - l == 0)
      at(c, i) = 1;
    else
      for (int64_t j = l; j <= c; ++j) at(j, i) = double(j - l) / double(c - l);
    if (h - c > 0)
      for (int64_t j = c; j < h; ++j) at(j, i) = double(h - j) / double(h - c);
  }
  Tensor& y = ctx.output(0, window_dtype(ctx), {spec, bins});
  from_doubles(y, out);
}

}  // namespace

void register_signal_kernels(KernelTable& t) {
  t.add("DFT", dft);
  t.add("STFT", stft);
  t.add("HannWindow", hann_window);
  t.add("HammingWindow", hamming_window);
  t.add("BlackmanWindow", blackman_window);
  t.add("MelWeightMatrix", mel_weight_matrix);
}

}  // namespace tessera::kernels::ref
