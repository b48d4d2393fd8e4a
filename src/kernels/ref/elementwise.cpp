// Reference kernels: elementwise family (unary math, activations, binary
// arithmetic / comparison / logic / bitwise ops with multidirectional
// broadcasting, variadic Max Min Sum Mean, Where, Clip, PRelu).
//
// f16 and bf16 compute in f32 and round once on store; integer arithmetic
// wraps (two's complement) and never traps: division by zero gives 0 as numpy does.
#include <cmath>
#include <cstring>
#include <limits>
#include <numbers>
#include <type_traits>

#include "kernels/ref/broadcast.h"
#include "kernels/ref/elementwise_util.h"
#include "kernels/ref/registry.h"

namespace tessera::kernels::ref {
namespace {

template <typename C>
constexpr bool kIsInt = std::is_integral_v<C> && !std::is_same_v<C, bool>;

// ---------------------------------------------------------------- unary

// y = op(x) with y of x's type; op receives the compute type.
template <unsigned Set, typename Op>
void unary(KernelContext& ctx, Op op) {
  const Tensor x = ctx.required_input(0).contiguous();
  dispatch_set<Set>(ctx, x.dtype(), [&]<typename T>() {
    Tensor& y = ctx.output(0, x.dtype(), x.shape());
    const T* px = x.data<T>();
    T* py = y.data<T>();
    for (int64_t i = 0; i < x.numel(); ++i) py[i] = store<T>(compute_t<T>(op(load(px[i]))));
  });
}

// y = pred(x) with y bool.
template <unsigned Set, typename Pred>
void unary_to_bool(KernelContext& ctx, Pred pred) {
  const Tensor x = ctx.required_input(0).contiguous();
  dispatch_set<Set>(ctx, x.dtype(), [&]<typename T>() {
    Tensor& y = ctx.output(0, DType::boolean, x.shape());
    const T* px = x.data<T>();
    bool* py = y.data<bool>();
    for (int64_t i = 0; i < x.numel(); ++i) py[i] = pred(load(px[i]));
  });
}

template <typename C>
C sigmoid(C x) {
  if (x >= 0) return C(1) / (C(1) + std::exp(-x));
  const C e = std::exp(x);
  return e / (C(1) + e);
}
template <typename C>
C softplus(C x) {
  // log(1 + e^x) without overflow
  if (x > 0) return x + std::log1p(std::exp(-x));
  return std::log1p(std::exp(x));
}

// ---------------------------------------------------------------- binary

// Applies op over A and B broadcast together; output type OutOf<T>.
template <unsigned Set, bool ToBool, typename Op>
void binary(KernelContext& ctx, Op op) {
  const Tensor a = ctx.required_input(0).contiguous();
  const Tensor b = ctx.required_input(1).contiguous();
  ctx.check(a.dtype() == b.dtype(), "inputs have different element types: ", dtype_name(a.dtype()), " and ",
            dtype_name(b.dtype()));
  Shape out;
  try {
    out = broadcast_shape(a.shape(), b.shape());
  } catch (const Error& e) {
    ctx.fail(ErrorCode::invalid_argument, e.message());
  }
  dispatch_set<Set>(ctx, a.dtype(), [&]<typename T>() {
    using O = std::conditional_t<ToBool, bool, T>;
    Tensor& y = ctx.output(0, ToBool ? DType::boolean : a.dtype(), out);
    const T* pa = a.data<T>();
    const T* pb = b.data<T>();
    O* py = y.data<O>();
    BroadcastIndexer(out, {a.shape(), b.shape()}).for_each([&](int64_t o, const int64_t* in) {
      if constexpr (ToBool || std::is_same_v<T, std::string>)
        py[o] = op(pa[in[0]], pb[in[1]]);
      else
        py[o] = store<T>(compute_t<T>(op(load(pa[in[0]]), load(pb[in[1]]))));
    });
  });
}

// Wrapping integer arithmetic (no signed-overflow UB).
template <typename C>
C add(C a, C b) {
  if constexpr (kIsInt<C>)
    return C(uint64_t(a) + uint64_t(b));
  else
    return a + b;
}
template <typename C>
C sub(C a, C b) {
  if constexpr (kIsInt<C>)
    return C(uint64_t(a) - uint64_t(b));
  else
    return a - b;
}
template <typename C>
C mul(C a, C b) {
  if constexpr (kIsInt<C>)
    return C(uint64_t(a) * uint64_t(b));
  else
    return a * b;
}
template <typename C>
C div(C a, C b) {
  if constexpr (kIsInt<C>) {
    if (b == 0) return 0;
    if constexpr (std::is_signed_v<C>)
      if (b == -1) return C(uint64_t(0) - uint64_t(a));  // avoids the MIN / -1 trap
    return C(a / b);                                     // truncates toward zero
  } else {
    return a / b;
  }
}
// Mod: fmod=1 keeps the dividend's sign (C fmod); fmod=0 the divisor's (Python %).
template <typename C>
C mod(C a, C b, bool fmod) {
  if constexpr (kIsInt<C>) {
    if (b == 0) return 0;
    if constexpr (std::is_signed_v<C>)
      if (b == -1) return 0;
    C r = C(a % b);
    if constexpr (std::is_signed_v<C>)
      if (!fmod && r != 0 && ((r < 0) != (b < 0))) r = C(r + b);
    return r;
  } else {
    return std::fmod(a, b);
  }
}
// NaN-propagating max / min.
template <typename C>
C max_nan(C a, C b) {
  if constexpr (std::is_floating_point_v<C>)
    if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<C>::quiet_NaN();
  return a < b ? b : a;
}
template <typename C>
C min_nan(C a, C b) {
  if constexpr (std::is_floating_point_v<C>)
    if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<C>::quiet_NaN();
  return b < a ? b : a;
}

// Max Min Sum Mean over any number of broadcast inputs.
enum class Fold { max, min, sum, mean };
template <Fold F>
void variadic(KernelContext& ctx) {
  const size_t n = ctx.num_inputs();
  ctx.check(n >= 1, "needs at least one input");
  std::vector<Tensor> xs;
  std::vector<Shape> shapes;
  for (size_t i = 0; i < n; ++i) {
    xs.push_back(ctx.required_input(i).contiguous());
    shapes.push_back(xs.back().shape());
    ctx.check(xs.back().dtype() == xs[0].dtype(), "input ", i, " has element type ",
              dtype_name(xs.back().dtype()), ", input 0 has ", dtype_name(xs[0].dtype()));
  }
  Shape out;
  try {
    out = broadcast_shape(shapes);
  } catch (const Error& e) {
    ctx.fail(ErrorCode::invalid_argument, e.message());
  }
  constexpr unsigned kSet = (F == Fold::mean) ? kFloatTypes : kNumericTypes;
  dispatch_set<kSet>(ctx, xs[0].dtype(), [&]<typename T>() {
    using C = compute_t<T>;
    Tensor& y = ctx.output(0, xs[0].dtype(), out);
    T* py = y.data<T>();
    std::vector<const T*> ps;
    for (const Tensor& x : xs) ps.push_back(x.data<T>());
    BroadcastIndexer(out, shapes).for_each([&](int64_t o, const int64_t* in) {
      C acc = load(ps[0][in[0]]);
      for (size_t k = 1; k < n; ++k) {
        const C v = load(ps[k][in[k]]);
        if constexpr (F == Fold::max)
          acc = max_nan(acc, v);
        else if constexpr (F == Fold::min)
          acc = min_nan(acc, v);
        else
          acc = add(acc, v);
      }
      if constexpr (F == Fold::mean) acc = acc / C(n);
      py[o] = store<T>(acc);
    });
  });
}

// Pow: the output has X's type; Y may be any numeric type.
template <typename T>
int64_t int_pow(int64_t base, int64_t e) {
  if (e < 0) return base == 1 ? 1 : base == -1 ? (e % 2 ? -1 : 1) : 0;
  uint64_t r = 1, b = uint64_t(base);
  while (e > 0) {
    if (e & 1) r *= b;
    b *= b;
    e >>= 1;
  }
  return int64_t(r);
}

template <typename T>
T from_double_trunc(double v) {
  if constexpr (kIsInt<T>) {
    if (std::isnan(v)) return T(0);
    if (v >= 9.2233720368547758e18 || v < -9.2233720368547758e18)
      return T(std::numeric_limits<int64_t>::min());
    return T(int64_t(v));
  } else if constexpr (std::is_same_v<T, double>) {
    return v;
  } else {
    return store<T>(double_to_float(v));
  }
}

void pow_kernel(KernelContext& ctx) {
  const Tensor a = ctx.required_input(0).contiguous();
  const Tensor b = ctx.required_input(1).contiguous();
  Shape out;
  try {
    out = broadcast_shape(a.shape(), b.shape());
  } catch (const Error& e) {
    ctx.fail(ErrorCode::invalid_argument, e.message());
  }
  dispatch_set<kNumericTypes>(ctx, a.dtype(), [&]<typename T>() {
    dispatch_set<kNumericTypes>(ctx, b.dtype(), [&]<typename U>() {
      Tensor& y = ctx.output(0, a.dtype(), out);
      const T* pa = a.data<T>();
      const U* pb = b.data<U>();
      T* py = y.data<T>();
      BroadcastIndexer(out, {a.shape(), b.shape()}).for_each([&](int64_t o, const int64_t* in) {
        if constexpr (kIsInt<T> && kIsInt<U>) {
          py[o] = T(int_pow<T>(int64_t(pa[in[0]]), int64_t(pb[in[1]])));
        } else if constexpr (std::is_same_v<T, float> && std::is_same_v<U, float>) {
          py[o] = std::pow(pa[in[0]], pb[in[1]]);
        } else {
          py[o] = from_double_trunc<T>(std::pow(double(load(pa[in[0]])), double(load(pb[in[1]]))));
        }
      });
    });
  });
}

void bitshift_kernel(KernelContext& ctx) {
  const std::string dir = ctx.attr_string("direction", "");
  ctx.check(dir == "LEFT" || dir == "RIGHT", "direction must be LEFT or RIGHT, got '", dir, "'");
  const bool left = dir == "LEFT";
  binary<kUnsignedTypes, false>(ctx, [left](auto a, auto b) {
    using C = decltype(a);
    if (b >= C(sizeof(C) * 8)) return C(0);
    return left ? C(a << b) : C(a >> b);
  });
}

// Where(cond, X, Y)
void where_kernel(KernelContext& ctx) {
  const Tensor c = ctx.required_input(0).contiguous();
  const Tensor x = ctx.required_input(1).contiguous();
  const Tensor y = ctx.required_input(2).contiguous();
  ctx.check(c.dtype() == DType::boolean, "condition must be bool, got ", dtype_name(c.dtype()));
  ctx.check(x.dtype() == y.dtype(), "X and Y have different element types: ", dtype_name(x.dtype()), " and ",
            dtype_name(y.dtype()));
  Shape out;
  try {
    out = broadcast_shape({c.shape(), x.shape(), y.shape()});
  } catch (const Error& e) {
    ctx.fail(ErrorCode::invalid_argument, e.message());
  }
  const bool* pc = c.data<bool>();
  const size_t es = dtype_size(x.dtype());
  Tensor& z = ctx.output(0, x.dtype(), out);
  BroadcastIndexer ix(out, {c.shape(), x.shape(), y.shape()});
  if (x.dtype() == DType::string) {
    const auto* px = x.data<std::string>();
    const auto* py = y.data<std::string>();
    auto* pz = z.data<std::string>();
    ix.for_each([&](int64_t o, const int64_t* in) { pz[o] = pc[in[0]] ? px[in[1]] : py[in[2]]; });
    return;
  }
  // Any fixed-size type: copy bytes.
  const auto* px = static_cast<const char*>(x.raw_data());
  const auto* py = static_cast<const char*>(y.raw_data());
  auto* pz = static_cast<char*>(z.raw_data());
  ix.for_each([&](int64_t o, const int64_t* in) {
    const char* src = pc[in[0]] ? px + in[1] * es : py + in[2] * es;
    std::memcpy(pz + o * es, src, es);
  });
}

// Clip(X, min?, max?); opset < 11 nodes carry min/max as attributes.
void clip_kernel(KernelContext& ctx) {
  const Tensor x = ctx.required_input(0).contiguous();
  dispatch_set<kNumericTypes>(ctx, x.dtype(), [&]<typename T>() {
    using C = compute_t<T>;
    bool has_lo = false, has_hi = false;
    C lo{}, hi{};
    auto bound = [&](size_t i, const char* name, bool& has, C& v) {
      if (ctx.has_input(i)) {
        const Tensor& t = ctx.required_input(i);
        ctx.check(t.numel() == 1, name, " must be a scalar, got shape ", shape_text(t.shape()));
        ctx.check(t.dtype() == x.dtype(), name, " has element type ", dtype_name(t.dtype()), ", X has ",
                  dtype_name(x.dtype()));
        v = load(t.contiguous().data<T>()[0]);
        has = true;
      } else if (ctx.has_attr(name)) {
        v = C(ctx.attr_float(name, 0));
        has = true;
      }
    };
    bound(1, "min", has_lo, lo);
    bound(2, "max", has_hi, hi);
    Tensor& y = ctx.output(0, x.dtype(), x.shape());
    const T* px = x.data<T>();
    T* py = y.data<T>();
    for (int64_t i = 0; i < x.numel(); ++i) {
      C v = load(px[i]);
      if (has_lo && v < lo) v = lo;
      if (has_hi && v > hi) v = hi;
      py[i] = store<T>(v);
    }
  });
}

template <typename C>
C erf_op(C x) {
  return std::erf(x);
}

void register_unary(KernelTable& t) {
  constexpr unsigned F = kFloatTypes;
  constexpr unsigned FS = kFloatTypes | kSignedTypes;
  constexpr unsigned N = kNumericTypes;
  t.add("Abs", [](KernelContext& c) {
    unary<N>(c, [](auto x) {
      using C = decltype(x);
      if constexpr (std::is_unsigned_v<C>)
        return x;
      else if constexpr (kIsInt<C>)
        return x < 0 ? C(uint64_t(0) - uint64_t(x)) : x;
      else
        return std::fabs(x);
    });
  });
  t.add("Neg", [](KernelContext& c) {
    unary<N>(c, [](auto x) {
      using C = decltype(x);
      if constexpr (kIsInt<C>)
        return C(uint64_t(0) - uint64_t(x));
      else
        return -x;
    });
  });
  t.add("Sign", [](KernelContext& c) {
    unary<N>(c, [](auto x) {
      using C = decltype(x);
      if constexpr (std::is_floating_point_v<C>)
        if (std::isnan(x)) return x;
      return x > C(0) ? C(1) : x < C(0) ? C(-1) : C(0);
    });
  });
  t.add("Floor", [](KernelContext& c) { unary<F>(c, [](auto x) { return std::floor(x); }); });
  t.add("Ceil", [](KernelContext& c) { unary<F>(c, [](auto x) { return std::ceil(x); }); });
  t.add("Round", [](KernelContext& c) { unary<F>(c, [](auto x) { return std::nearbyint(x); }); });
  t.add("Sqrt", [](KernelContext& c) { unary<F>(c, [](auto x) { return std::sqrt(x); }); });
  t.add("Reciprocal", [](KernelContext& c) { unary<F>(c, [](auto x) { return decltype(x)(1) / x; }); });
  t.add("Exp", [](KernelContext& c) { unary<F>(c, [](auto x) { return std::exp(x); }); });
  t.add("Log", [](KernelContext& c) { unary<F>(c, [](auto x) { return std::log(x); }); });
  t.add("Sin", [](KernelContext& c) { unary<F>(c, [](auto x) { return std::sin(x); }); });
  t.add("Cos", [](KernelContext& c) { unary<F>(c, [](auto x) { return std::cos(x); }); });
  t.add("Tan", [](KernelContext& c) { unary<F>(c, [](auto x) { return std::tan(x); }); });
  t.add("Asin", [](KernelContext& c) { unary<F>(c, [](auto x) { return std::asin(x); }); });
  t.add("Acos", [](KernelContext& c) { unary<F>(c, [](auto x) { return std::acos(x); }); });
  t.add("Atan", [](KernelContext& c) { unary<F>(c, [](auto x) { return std::atan(x); }); });
  t.add("Sinh", [](KernelContext& c) { unary<F>(c, [](auto x) { return std::sinh(x); }); });
  t.add("Cosh", [](KernelContext& c) { unary<F>(c, [](auto x) { return std::cosh(x); }); });
  t.add("Asinh", [](KernelContext& c) { unary<F>(c, [](auto x) { return std::asinh(x); }); });
  t.add("Acosh", [](KernelContext& c) { unary<F>(c, [](auto x) { return std::acosh(x); }); });
  t.add("Atanh", [](KernelContext& c) { unary<F>(c, [](auto x) { return std::atanh(x); }); });
  t.add("Erf", [](KernelContext& c) { unary<F>(c, [](auto x) { return erf_op(x); }); });
  t.add("IsNaN", [](KernelContext& c) { unary_to_bool<F>(c, [](auto x) { return std::isnan(x); }); });
  t.add("IsInf", [](KernelContext& c) {
    const bool neg = c.attr_int("detect_negative", 1) != 0, pos = c.attr_int("detect_positive", 1) != 0;
    unary_to_bool<F>(c, [=](auto x) { return std::isinf(x) && ((x > 0 && pos) || (x < 0 && neg)); });
  });
  t.add("Not", [](KernelContext& c) { unary<kBoolType>(c, [](bool x) { return !x; }); });
  t.add("BitwiseNot", [](KernelContext& c) { unary<kIntTypes>(c, [](auto x) { return decltype(x)(~x); }); });

  // Activations.
  t.add("Relu", [](KernelContext& c) {
    unary<FS>(c, [](auto x) { return x < decltype(x)(0) ? decltype(x)(0) : x; });
  });
  t.add("LeakyRelu", [](KernelContext& c) {
    const double alpha = c.attr_float("alpha", 0.01f);
    unary<F>(c, [=](auto x) {
      using C = decltype(x);
      return x < 0 ? C(alpha) * x : x;
    });
  });
  t.add("Elu", [](KernelContext& c) {
    const double alpha = c.attr_float("alpha", 1.0f);
    unary<F>(c, [=](auto x) {
      using C = decltype(x);
      return x < 0 ? C(alpha) * std::expm1(x) : x;
    });
  });
  t.add("Selu", [](KernelContext& c) {
    const double alpha = c.attr_float("alpha", 1.67326319217681884765625f);
    const double gamma = c.attr_float("gamma", 1.05070102214813232421875f);
    unary<F>(c, [=](auto x) {
      using C = decltype(x);
      return x <= 0 ? C(gamma) * (C(alpha) * std::exp(x) - C(alpha)) : C(gamma) * x;
    });
  });
  t.add("Celu", [](KernelContext& c) {
    const double alpha = c.attr_float("alpha", 1.0f);
    unary<F>(c, [=](auto x) {
      using C = decltype(x);
      return std::max(C(0), x) + std::min(C(0), C(alpha) * std::expm1(x / C(alpha)));
    });
  });
  t.add("Sigmoid", [](KernelContext& c) { unary<F>(c, [](auto x) { return sigmoid(x); }); });
  t.add("HardSigmoid", [](KernelContext& c) {
    const double alpha = c.attr_float("alpha", 0.2f), beta = c.attr_float("beta", 0.5f);
    unary<F>(c, [=](auto x) {
      using C = decltype(x);
      const C v = C(alpha) * x + C(beta);
      return v != v ? v : std::max(C(0), std::min(C(1), v));  // NaN stays NaN (the spec's clip; onnxruntime)
    });
  });
  t.add("HardSwish", [](KernelContext& c) {
    unary<F>(c, [](auto x) {
      using C = decltype(x);
      return x * std::max(C(0), std::min(C(1), x / C(6) + C(0.5)));
    });
  });
  t.add("Softplus", [](KernelContext& c) { unary<F>(c, [](auto x) { return softplus(x); }); });
  t.add("Softsign",
        [](KernelContext& c) { unary<F>(c, [](auto x) { return x / (decltype(x)(1) + std::fabs(x)); }); });
  t.add("Tanh", [](KernelContext& c) { unary<F>(c, [](auto x) { return std::tanh(x); }); });
  t.add("ThresholdedRelu", [](KernelContext& c) {
    const double alpha = c.attr_float("alpha", 1.0f);
    unary<F>(c, [=](auto x) {
      using C = decltype(x);
      return x > C(alpha) ? x : C(0);
    });
  });
  t.add("Gelu", [](KernelContext& c) {
    const std::string approx = c.attr_string("approximate", "none");
    c.check(approx == "none" || approx == "tanh", "approximate must be 'none' or 'tanh', got '", approx, "'");
    if (approx == "tanh") {
      unary<F>(c, [](auto x) {
        using C = decltype(x);
        const C k = C(std::sqrt(2.0 / std::numbers::pi));
        return C(0.5) * x * (C(1) + std::tanh(k * (x + C(0.044715) * x * x * x)));
      });
    } else {
      unary<F>(c, [](auto x) {
        using C = decltype(x);
        return C(0.5) * x * (C(1) + std::erf(x / C(std::numbers::sqrt2)));
      });
    }
  });
  t.add("Mish", [](KernelContext& c) { unary<F>(c, [](auto x) { return x * std::tanh(softplus(x)); }); });
  t.add("Swish", [](KernelContext& c) {
    const double alpha = c.attr_float("alpha", 1.0f);
    unary<F>(c, [=](auto x) {
      using C = decltype(x);
      return x * sigmoid(C(alpha) * x);
    });
  });
  t.add("Shrink", [](KernelContext& c) {
    const double bias = c.attr_float("bias", 0.0f), lambd = c.attr_float("lambd", 0.5f);
    unary<N>(c, [=](auto x) {
      using C = decltype(x);
      const double v = double(x);
      const double r = v < -lambd ? v + bias : v > lambd ? v - bias : 0.0;
      if constexpr (kIsInt<C>)
        return C(int64_t(r));
      else
        return C(r);
    });
  });
}

void register_binary(KernelTable& t) {
  constexpr unsigned N = kNumericTypes;
  t.add("Add", [](KernelContext& c) { binary<N, false>(c, [](auto a, auto b) { return add(a, b); }); });
  t.add("Sub", [](KernelContext& c) { binary<N, false>(c, [](auto a, auto b) { return sub(a, b); }); });
  t.add("Mul", [](KernelContext& c) { binary<N, false>(c, [](auto a, auto b) { return mul(a, b); }); });
  t.add("Div", [](KernelContext& c) { binary<N, false>(c, [](auto a, auto b) { return div(a, b); }); });
  t.add("Mod", [](KernelContext& c) {
    const bool fmod = c.attr_int("fmod", 0) != 0;
    // Floats always use C fmod (as onnx's reference does, whatever the attribute).
    binary<N, false>(c, [fmod](auto a, auto b) { return mod(a, b, fmod); });
  });
  t.add("Pow", pow_kernel);
  t.add("PRelu", [](KernelContext& c) {
    const Tensor& x = c.required_input(0);
    const Tensor& s = c.required_input(1);
    c.check(broadcasts_to(s.shape(), x.shape()), "slope of shape ", shape_text(s.shape()),
            " does not broadcast to X's shape ", shape_text(x.shape()));
    binary<kFloatTypes | kSignedTypes | kUnsignedTypes, false>(
        c, [](auto a, auto b) { return a < decltype(a)(0) ? mul(a, b) : a; });
  });
  t.add("Max", variadic<Fold::max>);
  t.add("Min", variadic<Fold::min>);
  t.add("Sum", variadic<Fold::sum>);
  t.add("Mean", variadic<Fold::mean>);

  // Comparisons (bool output).
  t.add("Equal", [](KernelContext& c) {
    binary<kAllTypes, true>(c, [](const auto& a, const auto& b) {
      if constexpr (std::is_same_v<std::decay_t<decltype(a)>, std::string>)
        return a == b;
      else
        return load(a) == load(b);
    });
  });
  t.add("Less",
        [](KernelContext& c) { binary<N, true>(c, [](auto a, auto b) { return load(a) < load(b); }); });
  t.add("LessOrEqual",
        [](KernelContext& c) { binary<N, true>(c, [](auto a, auto b) { return load(a) <= load(b); }); });
  t.add("Greater",
        [](KernelContext& c) { binary<N, true>(c, [](auto a, auto b) { return load(a) > load(b); }); });
  t.add("GreaterOrEqual",
        [](KernelContext& c) { binary<N, true>(c, [](auto a, auto b) { return load(a) >= load(b); }); });

  // Logic (bool) and bitwise (integers).
  t.add("And", [](KernelContext& c) { binary<kBoolType, true>(c, [](bool a, bool b) { return a && b; }); });
  t.add("Or", [](KernelContext& c) { binary<kBoolType, true>(c, [](bool a, bool b) { return a || b; }); });
  t.add("Xor", [](KernelContext& c) { binary<kBoolType, true>(c, [](bool a, bool b) { return a != b; }); });
  t.add("BitwiseAnd", [](KernelContext& c) {
    binary<kIntTypes, false>(c, [](auto a, auto b) { return decltype(a)(a & b); });
  });
  t.add("BitwiseOr", [](KernelContext& c) {
    binary<kIntTypes, false>(c, [](auto a, auto b) { return decltype(a)(a | b); });
  });
  t.add("BitwiseXor", [](KernelContext& c) {
    binary<kIntTypes, false>(c, [](auto a, auto b) { return decltype(a)(a ^ b); });
  });
  t.add("BitShift", bitshift_kernel);
  t.add("Where", where_kernel);
  t.add("Clip", clip_kernel);
}

}  // namespace

void register_elementwise_kernels(KernelTable& t) {
  register_unary(t);
  register_binary(t);
}

}  // namespace tessera::kernels::ref
