// Reference kernels: random family (RandomNormal, RandomUniform,
// RandomNormalLike, RandomUniformLike, Bernoulli, Multinomial).
//
// With a `seed` attribute the stream is deterministic (std::mt19937_64 seeded
// with it); without one it is seeded from std::random_device. ONNX does not
// fix the generator, so tests compare shapes, types and distributions.
#include <cmath>
#include <random>

#include "core/dtype_attr.h"
#include "kernels/ref/elementwise_util.h"
#include "kernels/ref/registry.h"

namespace tessera::kernels::ref {
namespace {

std::mt19937_64 make_rng(const KernelContext& ctx) {
  if (ctx.has_attr("seed")) {
    const float s = ctx.attr_float("seed", 0);
    return std::mt19937_64(uint64_t(int64_t(s)) ^ 0x9E3779B97F4A7C15ull);
  }
  return std::mt19937_64(std::random_device{}());
}

DType dtype_attr_or(const KernelContext& ctx, DType def) {
  const Attribute* a = ctx.attr("dtype");
  if (!a) return def;
  const DType t = dtype_from_attr(a);
  if (t == DType::undefined) ctx.fail(ErrorCode::invalid_model, "attribute 'dtype' names an unknown type");
  return t;
}

// Fills a float tensor from a distribution producing doubles.
template <typename Dist>
void fill(KernelContext& ctx, DType dt, const Shape& shape, Dist dist) {
  auto rng = make_rng(ctx);
  dispatch_set<kFloatTypes>(ctx, dt, [&]<typename T>() {
    Tensor& y = ctx.output(0, dt, shape);
    T* p = y.data<T>();
    for (int64_t i = 0; i < y.numel(); ++i) p[i] = store<T>(compute_t<T>(dist(rng)));
  });
}

Shape shape_attr(const KernelContext& ctx) {
  const Attribute* a = ctx.attr("shape");
  if (!a) ctx.fail(ErrorCode::invalid_model, "required attribute 'shape' is missing");
  for (int64_t d : a->ints) ctx.check(d >= 0, "shape has a negative dimension ", d);
  return a->ints;
}

void random_normal(KernelContext& ctx, const Shape& shape, DType dt) {
  std::normal_distribution<double> d(ctx.attr_float("mean", 0.f), ctx.attr_float("scale", 1.f));
  fill(ctx, dt, shape, d);
}
void random_uniform(KernelContext& ctx, const Shape& shape, DType dt) {
  const double lo = ctx.attr_float("low", 0.f), hi = ctx.attr_float("high", 1.f);
  ctx.check(lo <= hi, "low (", lo, ") must not exceed high (", hi, ")");
  std::uniform_real_distribution<double> d(lo, hi);
  fill(ctx, dt, shape, d);
}

void bernoulli_kernel(KernelContext& ctx) {
  const Tensor x = ctx.required_input(0).contiguous();
  const DType dt = dtype_attr_or(ctx, x.dtype());
  auto rng = make_rng(ctx);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<double> p(size_t(x.numel()));
  for (int64_t i = 0; i < x.numel(); ++i) {
    p[size_t(i)] = x.at_double(i);
    ctx.check(p[size_t(i)] >= 0 && p[size_t(i)] <= 1, "probability ", p[size_t(i)], " is outside [0, 1]");
  }
  dispatch_set<kNumericTypes | kBoolType>(ctx, dt, [&]<typename T>() {
    Tensor& y = ctx.output(0, dt, x.shape());
    T* q = y.data<T>();
    for (size_t i = 0; i < p.size(); ++i) {
      const bool one = u(rng) < p[i];
      if constexpr (std::is_same_v<T, bool>)
        q[i] = one;
      else
        q[i] = store<T>(compute_t<T>(one ? 1 : 0));
    }
  });
}

// Multinomial(input [batch, classes] of unnormalized log-probabilities) ->
// [batch, sample_size] class indices.
void multinomial_kernel(KernelContext& ctx) {
  const Tensor x = ctx.required_input(0).contiguous();
  ctx.check(x.rank() == 2, "input must be 2-D [batch, classes], got ", shape_text(x.shape()));
  const int64_t n = ctx.attr_int("sample_size", 1);
  ctx.check(n >= 0, "sample_size must be non-negative");
  const DType dt = dtype_attr_or(ctx, DType::i32);
  ctx.check(dt == DType::i32 || dt == DType::i64, "dtype must be int32 or int64");
  const int64_t batch = x.dim(0), classes = x.dim(1);
  auto rng = make_rng(ctx);
  Tensor& y = ctx.output(0, dt, {batch, n});
  for (int64_t b = 0; b < batch; ++b) {
    std::vector<double> w(static_cast<size_t>(classes));
    double mx = -INFINITY;
    for (int64_t c = 0; c < classes; ++c) mx = std::max(mx, x.at_double(b * classes + c));
    for (int64_t c = 0; c < classes; ++c) w[size_t(c)] = std::exp(x.at_double(b * classes + c) - mx);
    ctx.check(classes > 0, "no classes to sample from");
    std::discrete_distribution<int64_t> d(w.begin(), w.end());
    for (int64_t s = 0; s < n; ++s) {
      const int64_t v = d(rng);
      if (dt == DType::i32)
        y.data<int32_t>()[b * n + s] = int32_t(v);
      else
        y.data<int64_t>()[b * n + s] = v;
    }
  }
}

}  // namespace

void register_random_kernels(KernelTable& t) {
  t.add("RandomNormal",
        [](KernelContext& c) { random_normal(c, shape_attr(c), dtype_attr_or(c, DType::f32)); });
  t.add("RandomUniform",
        [](KernelContext& c) { random_uniform(c, shape_attr(c), dtype_attr_or(c, DType::f32)); });
  t.add("RandomNormalLike", [](KernelContext& c) {
    const Tensor& x = c.required_input(0);
    random_normal(c, x.shape(), dtype_attr_or(c, x.dtype()));
  });
  t.add("RandomUniformLike", [](KernelContext& c) {
    const Tensor& x = c.required_input(0);
    random_uniform(c, x.shape(), dtype_attr_or(c, x.dtype()));
  });
  t.add("Bernoulli", bernoulli_kernel);
  t.add("Multinomial", multinomial_kernel);
}

}  // namespace tessera::kernels::ref
