// Reference kernels: cast family (Cast, CastLike, BitCast).
//
// Every conversion goes through one intermediate number (a double, an int64 or
// a uint64, whichever holds the source exactly), so each source and each
// destination type is written once rather than once per pair.
#include "kernels/ref/cast.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "core/dtype_attr.h"
#include "core/kernel_context.h"
#include "kernels/ref/elementwise_util.h"
#include "kernels/ref/registry.h"

namespace tessera::kernels::ref {
namespace {

struct Num {
  enum class Kind : uint8_t { f, i, u } kind = Kind::i;
  double f = 0;
  int64_t i = 0;
  uint64_t u = 0;
  static Num of_f(double v) {
    Num n;
    n.kind = Kind::f;
    n.f = v;
    return n;
  }
  static Num of_i(int64_t v) {
    Num n;
    n.kind = Kind::i;
    n.i = v;
    return n;
  }
  static Num of_u(uint64_t v) {
    Num n;
    n.kind = Kind::u;
    n.u = v;
    return n;
  }
};

Num parse_string(const std::string& s) {
  const char* b = s.c_str();
  char* end = nullptr;
  // An integer literal keeps full 64-bit precision.
  if (!s.empty()) {
    errno = 0;
    const long long v = std::strtoll(b, &end, 10);
    if (errno == 0 && end != b && *end == '\0') return Num::of_i(v);
    errno = 0;
    const unsigned long long uv = std::strtoull(b, &end, 10);
    if (errno == 0 && end != b && *end == '\0' && s[0] != '-') return Num::of_u(uv);
  }
  // strtod accepts "1e-5", "1E8", "INF", "+INF", "-inf", "NaN" (any case).
  const double d = std::strtod(b, &end);
  return Num::of_f(end == b ? 0.0 : d);
}

template <typename S>
Num to_num(const S& v) {
  if constexpr (std::is_same_v<S, std::string>)
    return parse_string(v);
  else if constexpr (std::is_same_v<S, bool>)
    return Num::of_i(v ? 1 : 0);
  else if constexpr (kIsNarrowFloat<S>)
    return Num::of_f(double(v.to_float()));
  else if constexpr (std::is_floating_point_v<S>)
    return Num::of_f(double(v));
  else if constexpr (kIsSubByteInt<S>)
    return Num::of_i(int64_t(v.value));
  else if constexpr (std::is_unsigned_v<S>)
    return Num::of_u(uint64_t(v));
  else
    return Num::of_i(int64_t(v));
}

// A float's shortest round-trip text, numpy style ("1.0", "0.1", "1e-05", "inf", "nan").
template <typename F>
std::string format_float(F v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof(buf), v);
  std::string s(buf, r.ptr);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

int64_t double_to_int64(double v) {
  if (std::isnan(v) || v >= 9.2233720368547758e18 || v < -9.2233720368547758e18)
    return std::numeric_limits<int64_t>::min();
  return int64_t(v);  // truncates toward zero
}

template <typename D>
D from_num(const Num& n, const CastOptions& o) {
  using K = Num::Kind;
  if constexpr (std::is_same_v<D, bool>) {
    return n.kind == K::f ? n.f != 0 : n.kind == K::i ? n.i != 0 : n.u != 0;
  } else if constexpr (std::is_same_v<D, std::string>) {
    return n.kind == K::f ? format_float(n.f) : n.kind == K::i ? std::to_string(n.i) : std::to_string(n.u);
  } else if constexpr (std::is_same_v<D, double>) {
    return n.kind == K::f ? n.f : n.kind == K::i ? double(n.i) : double(n.u);
  } else if constexpr (std::is_same_v<D, Float8E8M0>) {
    const float f = n.kind == K::f ? double_to_float(n.f) : n.kind == K::i ? float(n.i) : float(n.u);
    return D::from_bits(D::encode(f, o.saturate, o.e8m0_rounding));
  } else if constexpr (std::is_same_v<D, float> || kIsNarrowFloat<D>) {
    const float f = n.kind == K::f ? double_to_float(n.f) : n.kind == K::i ? float(n.i) : float(n.u);
    if constexpr (std::is_same_v<D, float>)
      return f;
    else if constexpr (std::is_same_v<D, Float4E2M1>) {
      // E2M1 has no NaN: onnx (ml_dtypes) maps NaN to -0 (bits 1000).
      if (std::isnan(f)) return D::from_bits(0x8);
      return D::from_float(f, o.saturate);
    } else
      return D::from_float(f, o.saturate);
  } else if constexpr (kIsSubByteInt<D>) {
    const int64_t v = n.kind == K::f ? double_to_int64(n.f) : n.kind == K::i ? n.i : int64_t(n.u);
    return D(v);  // wraps
  } else if constexpr (std::is_integral_v<D>) {
    if (n.kind == K::f) {
      if (std::is_same_v<D, uint64_t> && n.f >= 9.2233720368547758e18 && n.f < 1.8446744073709552e19)
        return D(uint64_t(n.f));
      return D(double_to_int64(n.f));  // wraps into narrower types
    }
    return n.kind == K::i ? D(n.i) : D(n.u);
  } else {
    throw Error(ErrorCode::unsupported, "Cast: unsupported destination type");
  }
}

template <typename S>
void source_to_nums(const Tensor& x, std::vector<Num>& out) {
  const S* p = x.data<S>();
  out.resize(size_t(x.numel()));
  for (int64_t i = 0; i < x.numel(); ++i) out[size_t(i)] = to_num(p[i]);
}

// Floats print with the shortest text that round-trips in their own width.
template <typename S>
bool format_source(const Tensor& x, Tensor& y) {
  if constexpr (std::is_same_v<S, float> || std::is_same_v<S, double> || kIsNarrowFloat<S>) {
    const S* p = x.data<S>();
    std::string* q = y.data<std::string>();
    for (int64_t i = 0; i < x.numel(); ++i) {
      if constexpr (std::is_same_v<S, double>)
        q[i] = format_float(p[i]);
      else if constexpr (std::is_same_v<S, float>)
        q[i] = format_float(p[i]);
      else
        q[i] = format_float(p[i].to_float());
    }
    return true;
  } else {
    return false;
  }
}

}  // namespace

Tensor cast_tensor(const Tensor& input, DType to, const CastOptions& opts) {
  const Tensor x = input.contiguous();
  check(!is_complex(x.dtype()) && !is_complex(to), ErrorCode::unsupported,
        "Cast: complex types are not supported (", dtype_name(x.dtype()), " to ", dtype_name(to), ")");
  check(to != DType::undefined, ErrorCode::invalid_argument, "Cast: undefined destination type");
  Tensor y(to, x.shape());
  if (to == x.dtype()) {
    if (to == DType::string) {
      for (int64_t i = 0; i < x.numel(); ++i) y.data<std::string>()[i] = x.data<std::string>()[i];
    } else if (x.numel() > 0) {
      std::memcpy(y.raw_data(), x.raw_data(), x.nbytes());
    }
    return y;
  }
  if (to == DType::string) {
    const bool done = dispatch_dtype(x.dtype(), [&]<typename S>() { return format_source<S>(x, y); });
    if (done) return y;
  }
  std::vector<Num> nums;
  dispatch_dtype(x.dtype(), [&]<typename S>() {
    if constexpr (std::is_same_v<S, Complex64> || std::is_same_v<S, Complex128>)
      return;
    else
      source_to_nums<S>(x, nums);
  });
  dispatch_dtype(to, [&]<typename D>() {
    if constexpr (std::is_same_v<D, Complex64> || std::is_same_v<D, Complex128>)
      return;
    else {
      D* q = y.data<D>();
      for (size_t i = 0; i < nums.size(); ++i) q[i] = from_num<D>(nums[i], opts);
    }
  });
  return y;
}

namespace {

CastOptions options_of(const KernelContext& ctx) {
  CastOptions o;
  o.saturate = ctx.attr_int("saturate", 1) != 0;
  const std::string mode = ctx.attr_string("round_mode", "up");
  if (mode == "up")
    o.e8m0_rounding = E8M0Rounding::up;
  else if (mode == "down")
    o.e8m0_rounding = E8M0Rounding::down;
  else if (mode == "nearest")
    o.e8m0_rounding = E8M0Rounding::nearest;
  else
    ctx.fail(ErrorCode::invalid_model, "round_mode must be up, down or nearest, got '", mode, "'");
  return o;
}

void run_cast(KernelContext& ctx, DType to) {
  const Tensor& x = ctx.required_input(0);
  const CastOptions o = options_of(ctx);
  Tensor y;
  try {
    y = cast_tensor(x, to, o);
  } catch (const Error& e) {
    ctx.fail(e.code(), e.message());
  }
  ctx.set_output(0, DataValue(std::move(y)));
}

void cast_kernel(KernelContext& ctx) {
  const Attribute* a = ctx.attr("to");
  if (!a) ctx.fail(ErrorCode::invalid_model, "required attribute 'to' is missing");
  const DType to = dtype_from_attr(a);
  if (to == DType::undefined)
    ctx.fail(ErrorCode::invalid_model, "attribute 'to' names an unknown type (",
             a->kind == Attribute::Kind::i ? a->i : -1, ")");
  run_cast(ctx, to);
}

void castlike_kernel(KernelContext& ctx) {
  run_cast(ctx, ctx.required_input(1).dtype());
}

// Bits of one element of t (sub-byte types are held one per byte but are narrower).
int bit_width(DType t) {
  switch (t) {
    case DType::i4:
    case DType::u4:
    case DType::f4e2m1:
      return 4;
    case DType::i2:
    case DType::u2:
      return 2;
    default:
      return int(dtype_size(t)) * 8;
  }
}

// BitCast: the same bits read as another type of the same width.
void bitcast_kernel(KernelContext& ctx) {
  const Tensor x = ctx.required_input(0).contiguous();
  const Attribute* a = ctx.attr("to");
  if (!a) ctx.fail(ErrorCode::invalid_model, "required attribute 'to' is missing");
  const DType to = dtype_from_attr(a);
  if (to == DType::undefined) ctx.fail(ErrorCode::invalid_model, "attribute 'to' names an unknown type");
  ctx.check(x.dtype() != DType::string && to != DType::string, "string tensors cannot be bit-cast");
  ctx.check(bit_width(x.dtype()) == bit_width(to), "cannot bit-cast ", dtype_name(x.dtype()), " (",
            bit_width(x.dtype()), " bits) to ", dtype_name(to), " (", bit_width(to), " bits)");
  Tensor& y = ctx.output(0, to, x.shape());
  if (x.numel() > 0) std::memcpy(y.raw_data(), x.raw_data(), x.nbytes());
  if (to == DType::boolean) {  // keep bool storage canonical (0 or 1)
    auto* p = static_cast<uint8_t*>(y.raw_data());
    for (int64_t i = 0; i < y.numel(); ++i) p[i] = p[i] != 0;
  }
}

}  // namespace

void register_cast_kernels(KernelTable& t) {
  t.add("Cast", cast_kernel);
  t.add("CastLike", castlike_kernel);
  t.add("BitCast", bitcast_kernel);
}

}  // namespace tessera::kernels::ref
