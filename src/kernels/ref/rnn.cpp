// Reference kernels: rnn family (RNN, GRU, LSTM), all directions, layouts,
// activations (with alpha/beta), clip, peepholes, sequence_lens and initial states; and
// tessera.PackedRecurrent (W and R read back from their GEMM panels, then the ONNX op's kernel).
#include <algorithm>
#include <cmath>
#include <string>

#include "kernels/ref/misc_util.h"
#include "kernels/ref/registry.h"
#include "kernels/x86/gemm.h"

namespace tessera::kernels::ref {
namespace {

using namespace misc;

struct Activation {
  std::string name;
  double alpha = 0, beta = 0;
  double operator()(double x) const {
    if (name == "sigmoid") return 1 / (1 + std::exp(-x));
    if (name == "tanh") return std::tanh(x);
    if (name == "relu") return std::max(x, 0.0);
    if (name == "affine") return alpha * x + beta;
    if (name == "leakyrelu") return x >= 0 ? x : alpha * x;
    if (name == "thresholdedrelu") return x > alpha ? x : 0;
    if (name == "scaledtanh") return alpha * std::tanh(beta * x);
    if (name == "hardsigmoid") return std::clamp(alpha * x + beta, 0.0, 1.0);
    if (name == "elu") return x >= 0 ? x : alpha * (std::exp(x) - 1);
    if (name == "softsign") return x / (1 + std::abs(x));
    return std::log1p(std::exp(x));  // softplus
  }
};

// Activations for all directions, with alpha/beta consumed in order by the
// functions that take them (defaults otherwise).
std::vector<Activation> activations(const KernelContext& ctx, std::vector<std::string> defaults, int dirs) {
  std::vector<std::string> names = ctx.attr_strings("activations");
  const size_t per = defaults.size();
  if (names.empty()) {
    for (int d = 0; d < dirs; ++d) names.insert(names.end(), defaults.begin(), defaults.end());
  }
  if (names.size() == per && dirs == 2) names.insert(names.end(), names.begin(), names.end());
  ctx.check(names.size() == per * size_t(dirs), "activations has ", names.size(), " entries, expected ",
            per * dirs);
  const std::vector<float> alphas = ctx.attr_floats("activation_alpha"),
                           betas = ctx.attr_floats("activation_beta");
  size_t ai = 0, bi = 0;
  std::vector<Activation> out;
  for (std::string n : names) {
    std::transform(n.begin(), n.end(), n.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    Activation a;
    a.name = n;
    double da = 0, db = 0;
    bool ua = false, ub = false;
    if (n == "affine")
      da = 1, db = 0, ua = ub = true;
    else if (n == "leakyrelu")
      da = 0.01, ua = true;
    else if (n == "thresholdedrelu")
      da = 1.0, ua = true;
    else if (n == "scaledtanh")
      da = 1, db = 1, ua = ub = true;
    else if (n == "hardsigmoid")
      da = 0.2, db = 0.5, ua = ub = true;
    else if (n == "elu")
      da = 1.0, ua = true;
    else
      ctx.check(n == "sigmoid" || n == "tanh" || n == "relu" || n == "softsign" || n == "softplus",
                "unknown activation '", n, "'");
    a.alpha = ua && ai < alphas.size() ? alphas[ai++] : da;
    a.beta = ub && bi < betas.size() ? betas[bi++] : db;
    out.push_back(a);
  }
  return out;
}

enum class Cell { rnn, gru, lstm };

// The op with weights W and R (the node's inputs 1 and 2, or unpacked from them).
void recurrent(KernelContext& ctx, Cell cell, const Tensor& W, const Tensor& R) {
  const int gates = cell == Cell::rnn ? 1 : (cell == Cell::gru ? 3 : 4);
  const Tensor& X = ctx.required_input(0);
  ctx.check(is_std_float(X.dtype()), "X must be float, got ", X.text());
  const int64_t layout = ctx.attr_int("layout", 0);
  ctx.check(layout == 0 || layout == 1, "layout must be 0 or 1");
  const std::string direction = ctx.attr_string("direction", "forward");
  ctx.check(direction == "forward" || direction == "reverse" || direction == "bidirectional",
            "unknown direction '", direction, "'");
  const int dirs = direction == "bidirectional" ? 2 : 1;
  ctx.check(X.rank() == 3, "X must be 3-D, got ", X.text());
  const int64_t S = layout == 0 ? X.dim(0) : X.dim(1), Bn = layout == 0 ? X.dim(1) : X.dim(0), I = X.dim(2);
  ctx.check(W.rank() == 3 && W.dim(0) == dirs && W.dim(2) == I && W.dim(1) % gates == 0, "W has shape ",
            shape_text(W.shape()), ", expected [", dirs, ", ", gates, "*hidden, ", I, "]");
  const int64_t H = W.dim(1) / gates;
  if (ctx.has_attr("hidden_size"))
    ctx.check(ctx.attr_int("hidden_size", H) == H, "hidden_size disagrees with W's shape");
  ctx.check(R.rank() == 3 && R.dim(0) == dirs && R.dim(1) == gates * H && R.dim(2) == H, "R has shape ",
            shape_text(R.shape()), ", expected [", dirs, ", ", gates * H, ", ", H, "]");
  const std::vector<double> x = X.to_double_vector(), w = W.to_double_vector(), rr = R.to_double_vector();
  std::vector<double> bias(size_t(dirs * 2 * gates * H), 0.0);
  if (const Tensor* B = ctx.input(3)) {
    ctx.check(B->rank() == 2 && B->dim(0) == dirs && B->dim(1) == 2 * gates * H, "B has shape ",
              shape_text(B->shape()), ", expected [", dirs, ", ", 2 * gates * H, "]");
    bias = B->to_double_vector();
  }
  std::vector<int64_t> lens(size_t(Bn), S);
  if (const Tensor* L = ctx.input(4)) {
    ctx.check(L->numel() == Bn, "sequence_lens must have batch_size=", Bn, " values");
    lens = L->to_int_vector();
    for (int64_t l : lens) ctx.check(l >= 0 && l <= S, "sequence_lens value ", l, " outside [0, ", S, "]");
  }
  // Initial states, stored as [dirs, batch, hidden].
  auto read_state = [&](size_t i) {
    std::vector<double> s(size_t(dirs * Bn * H), 0.0);
    const Tensor* t = ctx.input(i);
    if (!t) return s;
    const Shape want = layout == 0 ? Shape{dirs, Bn, H} : Shape{Bn, dirs, H};
    ctx.check(t->shape() == want, "initial state (input ", i, ") has shape ", shape_text(t->shape()),
              ", expected ", shape_text(want));
    const std::vector<double> v = t->to_double_vector();
    for (int64_t d = 0; d < dirs; ++d)
      for (int64_t b = 0; b < Bn; ++b)
        for (int64_t h = 0; h < H; ++h)
          s[size_t((d * Bn + b) * H + h)] =
              layout == 0 ? v[size_t((d * Bn + b) * H + h)] : v[size_t((b * dirs + d) * H + h)];
    return s;
  };
  std::vector<double> h_state = read_state(5);
  std::vector<double> c_state, peep(size_t(dirs * 3 * H), 0.0);
  bool input_forget = false;
  if (cell == Cell::lstm) {
    c_state = read_state(6);
    if (const Tensor* P = ctx.input(7)) {
      ctx.check(P->rank() == 2 && P->dim(0) == dirs && P->dim(1) == 3 * H, "P has shape ",
                shape_text(P->shape()), ", expected [", dirs, ", ", 3 * H, "]");
      peep = P->to_double_vector();
    }
    input_forget = ctx.attr_int("input_forget", 0) != 0;
  }
  const bool lbr = cell == Cell::gru && ctx.attr_int("linear_before_reset", 0) != 0;
  const float clip = ctx.attr_float("clip", 0.0f);
  const bool do_clip = ctx.has_attr("clip");
  ctx.check(!do_clip || clip > 0, "clip must be positive");
  std::vector<std::string> defaults = cell == Cell::rnn ? std::vector<std::string>{"Tanh"}
                                      : cell == Cell::gru
                                          ? std::vector<std::string>{"Sigmoid", "Tanh"}
                                          : std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"};
  const std::vector<Activation> acts = activations(ctx, defaults, dirs);
  const size_t nact = defaults.size();
  auto cl = [&](double v) { return do_clip ? std::clamp(v, -double(clip), double(clip)) : v; };

  std::vector<double> Y(size_t(S * dirs * Bn * H), 0.0);  // [S, dirs, B, H]
  std::vector<double> xw(size_t(gates * H)), hr(size_t(gates * H));
  for (int d = 0; d < dirs; ++d) {
    const bool rev = direction == "reverse" || d == 1;
    const double* wd = w.data() + d * gates * H * I;
    const double* rd = rr.data() + d * gates * H * H;
    const double* wb = bias.data() + d * 2 * gates * H;
    const double* rb = wb + gates * H;
    const double* pd = peep.data() + d * 3 * H;
    const Activation* f = &acts[size_t(d) * nact];
    for (int64_t b = 0; b < Bn; ++b) {
      double* hs = h_state.data() + (d * Bn + b) * H;
      double* cs = cell == Cell::lstm ? c_state.data() + (d * Bn + b) * H : nullptr;
      for (int64_t step = 0; step < lens[size_t(b)]; ++step) {
        const int64_t t = rev ? lens[size_t(b)] - 1 - step : step;
        const double* xt = x.data() + (layout == 0 ? (t * Bn + b) * I : (b * S + t) * I);
        for (int64_t g = 0; g < gates * H; ++g) {
          double a = wb[g];
          for (int64_t k = 0; k < I; ++k) a += xt[k] * wd[g * I + k];
          xw[size_t(g)] = a;
          double c = rb[g];
          for (int64_t k = 0; k < H; ++k) c += hs[k] * rd[g * H + k];
          hr[size_t(g)] = c;
        }
        std::vector<double> nh(static_cast<size_t>(H));
        if (cell == Cell::rnn) {
          for (int64_t h = 0; h < H; ++h) nh[size_t(h)] = f[0](cl(xw[size_t(h)] + hr[size_t(h)]));
        } else if (cell == Cell::gru) {
          std::vector<double> z(static_cast<size_t>(H)), r(static_cast<size_t>(H));
          for (int64_t h = 0; h < H; ++h) {
            z[size_t(h)] = f[0](cl(xw[size_t(h)] + hr[size_t(h)]));
            r[size_t(h)] = f[0](cl(xw[size_t(H + h)] + hr[size_t(H + h)]));
          }
          for (int64_t h = 0; h < H; ++h) {
            double rec;
            if (lbr) {
              rec = r[size_t(h)] * hr[size_t(2 * H + h)];  // r * (H_{t-1} R_h + Rb_h)
            } else {
              rec = rb[2 * H + h];  // (r * H_{t-1}) R_h + Rb_h
              for (int64_t k = 0; k < H; ++k) rec += r[size_t(k)] * hs[k] * rd[(2 * H + h) * H + k];
            }
            const double zh = z[size_t(h)];
            nh[size_t(h)] = (1 - zh) * f[1](cl(xw[size_t(2 * H + h)] + rec)) + zh * hs[h];
          }
        } else {
          std::vector<double> nc(static_cast<size_t>(H));
          for (int64_t h = 0; h < H; ++h) {
            const double i_g = f[0](cl(xw[size_t(h)] + hr[size_t(h)] + pd[h] * cs[h]));
            double f_g = f[0](cl(xw[size_t(2 * H + h)] + hr[size_t(2 * H + h)] + pd[2 * H + h] * cs[h]));
            if (input_forget) f_g = 1 - i_g;
            const double c_g = f[1](cl(xw[size_t(3 * H + h)] + hr[size_t(3 * H + h)]));
            nc[size_t(h)] = f_g * cs[h] + i_g * c_g;
            const double o_g = f[0](cl(xw[size_t(H + h)] + hr[size_t(H + h)] + pd[H + h] * nc[size_t(h)]));
            nh[size_t(h)] = o_g * f[2](nc[size_t(h)]);
          }
          std::copy(nc.begin(), nc.end(), cs);
        }
        std::copy(nh.begin(), nh.end(), hs);
        std::copy(nh.begin(), nh.end(), Y.begin() + ((t * dirs + d) * Bn + b) * H);
      }
    }
  }
  const DType dt = X.dtype();
  if (ctx.output_requested(0)) {
    Tensor& y = ctx.output(0, dt, layout == 0 ? Shape{S, dirs, Bn, H} : Shape{Bn, S, dirs, H});
    if (layout == 0) {
      from_doubles(y, Y);
    } else {
      std::vector<double> t(Y.size());
      for (int64_t s = 0; s < S; ++s)
        for (int64_t d = 0; d < dirs; ++d)
          for (int64_t b = 0; b < Bn; ++b)
            for (int64_t h = 0; h < H; ++h)
              t[size_t(((b * S + s) * dirs + d) * H + h)] = Y[size_t(((s * dirs + d) * Bn + b) * H + h)];
      from_doubles(y, t);
    }
  }
  auto write_state = [&](size_t i, const std::vector<double>& s) {
    if (i >= ctx.num_outputs() || !ctx.output_requested(i)) return;
    Tensor& y = ctx.output(i, dt, layout == 0 ? Shape{dirs, Bn, H} : Shape{Bn, dirs, H});
    if (layout == 0) return from_doubles(y, s);
    std::vector<double> t(s.size());
    for (int64_t d = 0; d < dirs; ++d)
      for (int64_t b = 0; b < Bn; ++b)
        for (int64_t h = 0; h < H; ++h) t[size_t((b * dirs + d) * H + h)] = s[size_t((d * Bn + b) * H + h)];
    from_doubles(y, t);
  };
  write_state(1, h_state);
  if (cell == Cell::lstm) write_state(2, c_state);
}

void rnn(KernelContext& ctx) {
  recurrent(ctx, Cell::rnn, ctx.required_input(1), ctx.required_input(2));
}
void gru(KernelContext& ctx) {
  recurrent(ctx, Cell::gru, ctx.required_input(1), ctx.required_input(2));
}
void lstm(KernelContext& ctx) {
  recurrent(ctx, Cell::lstm, ctx.required_input(1), ctx.required_input(2));
}

// tessera.PackedRecurrent: per direction the packed W_d^T (input x gates hidden) and R_d^T (hidden x gates
// hidden) read back into the ONNX op's [dirs, gates hidden, input] and [dirs, gates hidden, hidden].
void packed_recurrent(KernelContext& ctx) {
  using x86::PackedB;
  const std::string cell_name = ctx.attr_string("cell", "");
  ctx.check(cell_name == "LSTM" || cell_name == "GRU", "cell must be LSTM or GRU, got '", cell_name, "'");
  const Cell cell = cell_name == "LSTM" ? Cell::lstm : Cell::gru;
  const int64_t gates = cell == Cell::lstm ? 4 : 3;
  const int64_t dirs = ctx.attr_string("direction", "forward") == "bidirectional" ? 2 : 1;
  const int64_t H = ctx.required_attr_int("hidden_size"), I = ctx.required_attr_int("input_size");
  const int64_t kc_w = ctx.required_attr_int("kc_w"), kc_r = ctx.required_attr_int("kc_r");
  const int64_t nr = ctx.required_attr_int("nr");
  ctx.check(H > 0 && I > 0 && kc_w > 0 && kc_r > 0 && nr > 0,
            "hidden_size, input_size, kc_w, kc_r and nr must be positive");
  // (k x n) panels per direction, read back transposed: t[d][j][p] = op^T element (p, j)
  auto unpack = [&](size_t i, int64_t k, int64_t kc, const char* what) {
    const Tensor& pk = ctx.required_input(i);
    const int64_t n = gates * H;
    const size_t per = PackedB::packed_floats(k, n, kc, nr);
    ctx.check(pk.dtype() == DType::f32 && size_t(pk.numel()) == size_t(dirs) * per, what, " has ", pk.text(),
              ", expected float32[", size_t(dirs) * per, "] (packed)");
    Tensor t(DType::f32, {dirs, n, k});
    const Tensor src = pk.contiguous();
    for (int64_t d = 0; d < dirs; ++d)
      for (int64_t j = 0; j < n; ++j)
        for (int64_t p = 0; p < k; ++p)
          t.data<float>()[(d * n + j) * k + p] =
              PackedB::at(src.data<float>() + size_t(d) * per, k, n, kc, nr, p, j);
    return t;
  };
  recurrent(ctx, cell, unpack(1, I, kc_w, "W"), unpack(2, H, kc_r, "R"));
}

}  // namespace

void register_rnn_kernels(KernelTable& t) {
  t.add("RNN", rnn);
  t.add("GRU", gru);
  t.add("LSTM", lstm);
  t.add("PackedRecurrent", packed_recurrent, "tessera");
}

}  // namespace tessera::kernels::ref
