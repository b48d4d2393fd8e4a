#pragma once
// Vector math and row kernels written once over a SIMD traits struct `O`
// (O512 in avx512f/zmm_traits.h, O256 in avx2/ymm_traits.h). Include it ONLY inside an
// anonymous namespace of an ISA translation unit, after defining the traits:
// every function here then has internal linkage and is compiled for that ISA
// alone (no ISA-flagged inline function can leak into generic code). It uses no
// std:: templates for the same reason.
//
// Traits O provide: V, C (a lane condition), W (lanes), load, loadn(p, n, fill),
// store, storen(p, v, n), set1, add, sub, mul, div, fma(a, b, c) = a*b+c,
// max(a, b) / min(a, b) (return b when either is NaN), abs, copysign(mag, sgn),
// lt, le, gt, isnan, blend(c, t, f), round (to nearest), scale2(p, n) = p * 2^n
// for integral n in [-150, 129], hsum, hmax; integer lanes I: as_int, as_float, iset1, iadd, isub, iand,
// ixor, srai<k>, slli<k>, round_int, to_float, itest(a, k) = (a & k) != 0; cand (and of conditions), all.
//
// Optionally (AVX-512): I (an int vector), Table32, table32(p), trunc_int, to_float, lookup(table, i) —
// 32-entry lookups, for the tabulated GELUs.
//
// Max errors (tested bounds, see eltwise.h): exp <= 1.5 ulp, erf <= 2.5, tanh <= 6, sigmoid <= 3; log, sin,
// cos, softplus, pow there.

template <class O>
struct Math {
  using V = typename O::V;

  // e^x: n = round(x / ln2), r = x - n ln2 (Cody-Waite, two-part ln2, |r| <= ln2/2),
  // e^r by its degree-7 Taylor polynomial (truncation < 0.05 ulp), times 2^n.
  static V exp(V x) {
    V n;
    const V p = exp_parts(x, n);
    const V y = O::scale2(p, n);
    return O::blend(O::isnan(x), x, y);
  }
  // e^x as p * 2^n (p near 1), for a caller that scales a product of it once (silu).
  static V exp_parts(V x, V& n) {
    const V xc = O::max(O::set1(-104.0f), O::min(O::set1(89.0f), x));  // NaN stays NaN (min/max return b)
    n = O::round(O::mul(xc, O::set1(1.44269504088896341f)));
    V r = O::fma(n, O::set1(-0.693359375f), xc);
    r = O::fma(n, O::set1(2.12194440e-4f), r);
    return exp_poly(r);
  }
  // e^r for |r| <= ln2/2: the degree-7 Taylor polynomial (exp_parts, pow)
  static V exp_poly(V r) {
    V p = O::set1(1.0f / 5040.0f);
    p = O::fma(p, r, O::set1(1.0f / 720.0f));
    p = O::fma(p, r, O::set1(1.0f / 120.0f));
    p = O::fma(p, r, O::set1(1.0f / 24.0f));
    p = O::fma(p, r, O::set1(1.0f / 6.0f));
    p = O::fma(p, r, O::set1(0.5f));
    p = O::fma(p, r, O::set1(1.0f));
    return O::fma(p, r, O::set1(1.0f));
  }

  // e^x with results below FLT_MIN (x < -87.33, -inf included) flushed to +0: no denormal ever reaches
  // vscalefps, whose denormal results take a microcode assist each (a softmax tail filled with -inf, or a
  // masked score, cost ~250 cycles a row on the Xeon). For sums of exponentials (softmax), where a
  // denormal term cannot change the result. exp's reduction and polynomial (the same ulp bound: the
  // softmax test checks it), with the flush folded into the scaling (a zero-masked vscalefps on AVX-512)
  // and NaN carried through the arithmetic: 16 operations a vector against 22 (exp's and a blend). Zen 5,
  // one thread (/tmp/w/sm.cpp, medians of 31): softmax_rows over 197 x 197 scores 0.26 -> 0.21 ns an
  // element, online_softmax_rows 0.25 -> 0.20; over 64 x 1500 0.23 -> 0.20 and 0.22 -> 0.17.
  static V exp_ftz(V x) {
    const V lo = O::set1(-87.33654f);
    const V xc = O::min(O::set1(89.0f), O::max(lo, x));  // NaN stays NaN (min/max return b)
    const V n = O::round(O::mul(xc, O::set1(1.44269504088896341f)));
    V r = O::fma(n, O::set1(-0.693359375f), xc);
    r = O::fma(n, O::set1(2.12194440e-4f), r);
    return O::scale2_where(O::nlt(x, lo), exp_poly(r), n);
  }

  // erf: |x| <= 1: x * P6(x^2) (relative fit error 1.2e-9); 1 < |x| < 3.92:
  // P14(|x| - 2.46) (absolute fit error 6.6e-9, against results >= 0.84);
  // beyond: +-1 (erf(3.92) rounds to 1 in f32). Coefficients fitted for this file
  // by iteratively reweighted least squares on Chebyshev nodes.
  static V erf(V x) {
    const V a = O::abs(x);
    const V s = O::mul(a, a);
    V p = O::set1(7.889468571e-05f);
    p = O::fma(p, s, O::set1(-8.020954541e-04f));
    p = O::fma(p, s, O::set1(5.189549453e-03f));
    p = O::fma(p, s, O::set1(-2.685445301e-02f));
    p = O::fma(p, s, O::set1(1.128360042e-01f));
    p = O::fma(p, s, O::set1(-3.761262717e-01f));
    p = O::fma(p, s, O::set1(1.128379167e+00f));
    const V small = O::mul(a, p);
    const V u = O::sub(O::min(O::set1(3.92f), a), O::set1(2.46f));
    V q = O::set1(1.090819338e-06f);
    q = O::fma(q, u, O::set1(1.063687556e-07f));
    q = O::fma(q, u, O::set1(-1.730690768e-05f));
    q = O::fma(q, u, O::set1(2.462655134e-05f));
    q = O::fma(q, u, O::set1(7.576054647e-05f));
    q = O::fma(q, u, O::set1(-2.994052788e-04f));
    q = O::fma(q, u, O::set1(3.559846703e-04f));
    q = O::fma(q, u, O::set1(4.590622361e-04f));
    q = O::fma(q, u, O::set1(-2.937226351e-03f));
    q = O::fma(q, u, O::set1(6.799711659e-03f));
    q = O::fma(q, u, O::set1(-9.914168583e-03f));
    q = O::fma(q, u, O::set1(9.832413165e-03f));
    q = O::fma(q, u, O::set1(-6.534521836e-03f));
    q = O::fma(q, u, O::set1(2.656240378e-03f));
    q = O::fma(q, u, O::set1(9.994966464e-01f));
    q = O::min(O::set1(1.0f), q);
    V y = O::blend(O::le(a, O::set1(1.0f)), small, q);
    y = O::blend(O::gt(a, O::set1(3.92f)), O::set1(1.0f), y);
    y = O::copysign(y, x);
    return O::blend(O::isnan(x), x, y);
  }

  // tanh as x P4(x^2) / Q4(x^2), x clamped to +-9.1 (tanh rounds to +-1 beyond 9.01): relative fit error
  // 4.3e-8 with f32 coefficients (fitted for this file, Loeb's iteration on Chebyshev nodes), all positive
  // (no cancellation); 18 operations a vector against tanh_exp's ~36 (op scan: 1.45x onnxruntime's time).
  // NaN stays NaN (the clamp's min / max return x).
  static V tanh(V x) {
    const V c = O::max(O::set1(-9.1f), O::min(O::set1(9.1f), x));
    const V s = O::mul(c, c);
    V p = O::set1(1.317818e-08f);
    p = O::fma(p, s, O::set1(2.0481732e-05f));
    p = O::fma(p, s, O::set1(0.003487847f));
    p = O::fma(p, s, O::set1(0.13374506f));
    p = O::fma(p, s, O::set1(1.0f));
    V q = O::set1(7.704336e-07f);
    q = O::fma(q, s, O::set1(0.0003272977f));
    q = O::fma(q, s, O::set1(0.025847528f));
    q = O::fma(q, s, O::set1(0.4670782f));
    q = O::fma(q, s, O::set1(1.0f));
    const V y = O::div(O::mul(c, p), q);
    // +-1 exactly where tanh rounds to it (past 9.011): the rational form's error would leave 1 - ulp
    return O::blend(O::lt(O::set1(9.02f), O::abs(c)), O::copysign(O::set1(1.0f), c), y);
  }

  // tanh for GELU, whose x/2 (1 + tanh) cancels near -1 (an absolute bound there): |x| < 0.625: x * P5(x^2)
  // (relative fit error 3.7e-9); else 1 - 2 / (e^{2|x|} + 1), |x| clamped to 9.5 (tanh rounds to 1 beyond
  // 9.01).
  static V tanh_exp(V x) {
    const V a = O::abs(x);
    const V s = O::mul(a, a);
    V p = O::set1(-5.672764236e-03f);
    p = O::fma(p, s, O::set1(2.060351427e-02f));
    p = O::fma(p, s, O::set1(-5.372537440e-02f));
    p = O::fma(p, s, O::set1(1.333118819e-01f));
    p = O::fma(p, s, O::set1(-3.333326355e-01f));
    p = O::fma(p, s, O::set1(9.999999963e-01f));
    const V small = O::mul(a, p);
    const V e = exp(O::mul(O::set1(2.0f), O::min(O::set1(9.5f), a)));
    const V big = O::sub(O::set1(1.0f), O::div(O::set1(2.0f), O::add(e, O::set1(1.0f))));
    V y = O::blend(O::lt(a, O::set1(0.625f)), small, big);
    y = O::copysign(y, x);
    return O::blend(O::isnan(x), x, y);
  }

  // sigmoid: e = e^{-|x|}, r = 1 / (1 + e); x >= 0: r, else e * r (no overflow,
  // keeps tiny results for very negative x).
  static V sigmoid(V x) {
    const V e = exp(O::sub(O::set1(0.0f), O::abs(x)));
    const V r = O::div(O::set1(1.0f), O::add(O::set1(1.0f), e));
    const V y = O::blend(O::lt(x, O::set1(0.0f)), O::mul(e, r), r);
    return O::blend(O::isnan(x), x, y);
  }

  // x * sigmoid(x) (SiLU, swish) as x / (1 + e^{-x}): no |x|, no blends (sigmoid's form above costs ~30
  // operations a vector, this ~16, 9 of them on the FMA pipes; the convs apply it to every output of
  // EfficientNet's expansions and depthwise convs). A division rather than rcp14 and a Newton step: on Zen 4
  // the divider runs beside the FMA pipes (13.7 cycles a vector against 15.7, /tmp/w/silub.cpp). Past
  // x = -88.7 e^{-x} overflows to inf and the result is -0 (the exact value is under 5e-37); -inf / inf gives
  // NaN, as the unfused Sigmoid and Mul do; NaN stays NaN. Below -87.3 1 / (1 + e) is subnormal, so results
  // under 1e-30 in magnitude are held to 1e-30. e^{-x} by exp6_parts.
  static V silu(V x) {
    V n;
    const V p = exp6_parts(O::sub(O::set1(0.0f), x), n);  // clamped to 89: 2^128 p overflows to inf
    return O::div(x, O::add(O::set1(1.0f), O::scale2(p, n)));
  }

  // exp_parts with a degree-6 polynomial fitted for this file (relative error 1.9e-9 on |r| <= ln2/2,
  // iteratively reweighted least squares on Chebyshev nodes; degree 5's 7.5e-8 took silu to 4.2 ulp).
  static V exp6_parts(V x, V& n) {
    const V xc = O::max(O::set1(-104.0f), O::min(O::set1(89.0f), x));
    n = O::round(O::mul(xc, O::set1(1.44269504088896341f)));
    V r = O::fma(n, O::set1(-0.693359375f), xc);
    r = O::fma(n, O::set1(2.12194440e-4f), r);
    V p = O::set1(1.3836839934810996e-3f);
    p = O::fma(p, r, O::set1(8.374815806746483e-3f));
    p = O::fma(p, r, O::set1(4.166822507977486e-2f));
    p = O::fma(p, r, O::set1(1.6666419804096222e-1f));
    p = O::fma(p, r, O::set1(4.9999991059303284e-1f));
    p = O::fma(p, r, O::set1(1.0f));
    return O::fma(p, r, O::set1(1.0f));
  }

  // x * clamp(x / 6 + 1/2, 0, 1), the clamp as ONNX's HardSwish (NaN stays NaN: min/max return their second
  // operand, x's)
  static V hardswish(V x) {
    const V t = O::add(O::div(x, O::set1(6.0f)), O::set1(0.5f));
    return O::mul(x, O::max(O::set1(0.0f), O::min(O::set1(1.0f), t)));
  }

  static V relu(V x) { return O::max(O::set1(0.0f), x); }  // NaN and -0 pass through, as x < 0 ? 0 : x

  // x/2 (1 + erf(x / sqrt 2)), as the exporters write it
  static V gelu_erf(V x) {
    const V h = O::mul(O::set1(0.5f), x);
    return O::fma(h, erf(O::mul(x, O::set1(0.70710678118654752f))), h);
  }

  // x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
  static V gelu_tanh(V x) {
    const V h = O::mul(O::set1(0.5f), x);
    const V x2 = O::mul(x, x);
    const V u =
        O::mul(O::mul(O::set1(0.79788456080286536f), x), O::fma(O::set1(0.044715f), x2, O::set1(1.0f)));
    return O::fma(h, tanh_exp(u), h);
  }

  // x = 2^e m with m in [sqrt(1/2), sqrt 2) by integer arithmetic on the bits (subnormals scaled by 2^23
  // first); returns f = m - 1 (exact) and e as a float. Only meaningful for finite x > 0.
  static V log_split(V x, V& e) {
    const auto sub = O::lt(x, O::set1(1.17549435e-38f));
    const V xs = O::blend(sub, O::mul(x, O::set1(8388608.0f)), x);
    const auto k =
        O::template srai<23>(O::isub(O::as_int(xs), O::iset1(0x3f3504f3)));  // 0x3f3504f3: sqrt(1/2)
    const V m = O::as_float(O::isub(O::as_int(xs), O::template slli<23>(k)));
    e = O::to_float(k);
    e = O::blend(sub, O::sub(e, O::set1(23.0f)), e);
    return O::sub(m, O::set1(1.0f));
  }
  // log(1 + f) - f = -f^2/2 + f^3 P8(f) on f in [sqrt(1/2) - 1, sqrt 2 - 1] (relative error of log(1 + f)
  // 7.7e-9 with these f32 coefficients, fitted for this file by iteratively reweighted least squares).
  static V log1p_tail(V f) {
    const V z = O::mul(f, f);
    return O::fma(z, O::set1(-0.5f), O::mul(O::mul(log1p_poly(f), f), z));
  }
  static V log1p_poly(V f) {
    V p = O::set1(-0.076320045f);
    p = O::fma(p, f, O::set1(0.12760748f));
    p = O::fma(p, f, O::set1(-0.13160686f));
    p = O::fma(p, f, O::set1(0.142019f));
    p = O::fma(p, f, O::set1(-0.16623324f));
    p = O::fma(p, f, O::set1(0.20001219f));
    p = O::fma(p, f, O::set1(-0.25000823f));
    return O::fma(p, f, O::set1(0.3333333f));
  }
  // e ln2 + f + tail: e ln2_hi + f first (exact for |e| <= 1, where it cancels), the small terms after.
  static V log_join(V f, V e) {
    const V hi = O::fma(e, O::set1(0.693359375f), f);
    return O::add(hi, O::fma(e, O::set1(-2.12194440e-4f), log1p_tail(f)));
  }

  // Natural log: log_split, log_join. log(+-0) = -inf, log(x < 0) = NaN, log(+inf) = +inf, NaN stays.
  static V log(V x) {
    V e;
    const V f = log_split(x, e);
    V y = log_join(f, e);
    y = O::blend(O::le(O::abs(x), O::set1(0.0f)), O::set1(-__builtin_inff()), y);
    y = O::blend(O::lt(x, O::set1(0.0f)), O::set1(__builtin_nanf("")), y);
    y = O::blend(O::gt(x, O::set1(3.40282347e38f)), x, y);
    return O::blend(O::isnan(x), x, y);
  }

  // log(1 + u) for u in [0, 1]: 1 + u = 2^e (1 + f) with e = 0, f = u exactly, or e = 1, f = (u - 1) / 2
  // rounded once (no rounding of 1 + u is ever seen).
  static V log1p01(V u) {
    const auto big = O::lt(O::set1(0.41421356f), u);
    const V f = O::blend(big, O::fma(u, O::set1(0.5f), O::set1(-0.5f)), u);
    return log_join(f, O::blend(big, O::set1(1.0f), O::set1(0.0f)));
  }

  // softplus(x) = log(1 + e^x) = max(x, 0) + log1p(e^{-|x|}): no overflow, e^x kept for very negative x.
  // +inf -> +inf, -inf -> 0, NaN stays (max returns x).
  static V softplus(V x) {
    const V t = exp(O::sub(O::set1(0.0f), O::abs(x)));
    return O::add(O::max(O::set1(0.0f), x), log1p01(t));
  }

  // Past this |x| (and for +-inf) sin and cos take double std::sin / std::cos per lane: the three-part
  // Cody-Waite reduction below keeps its error under 1 ulp of r up to here (tested).
  static constexpr float kTrigBound = 105414.0f;

  // sin (cos: quadrant + 1) of |x|: n = round(|x| 2/pi), r = |x| - n pi/2 with pi/2 in three f32 parts (the
  // first exact against n, the other two summed before they are taken off, one rounding of r), then
  // r + r^3 P3(r^2) or 1 - r^2/2 + r^4 Q3(r^2) on |r| <= pi/4 (fitted for this file, relative errors
  // 3.6e-9 and 7.4e-10 with f32 coefficients), picked and signed by the quadrant (and for sin x's sign).
  static V sincos(V x, bool is_cos) {
    const V a = O::abs(x);
    const V n = O::round(O::mul(a, O::set1(0.636619772f)));
    V r = O::fma(n, O::set1(-1.57079637f), a);
    r = O::fma(n, O::set1(4.37113883e-8f), r);
    r = O::fma(n, O::set1(1.71512451e-15f), r);
    auto q = O::round_int(n);
    if (is_cos) q = O::iadd(q, O::iset1(1));
    const V s = O::mul(r, r);
    V ps = O::set1(2.7167125e-06f);
    ps = O::fma(ps, s, O::set1(-0.00019839163f));
    ps = O::fma(ps, s, O::set1(0.008333329f));
    ps = O::fma(ps, s, O::set1(-0.16666667f));
    ps = O::fma(O::mul(r, s), ps, r);
    V pc = O::set1(-2.7192445e-07f);
    pc = O::fma(pc, s, O::set1(2.4799296e-05f));
    pc = O::fma(pc, s, O::set1(-0.0013888883f));
    pc = O::fma(pc, s, O::set1(0.041666668f));
    pc = O::fma(O::mul(s, s), pc, O::fma(s, O::set1(-0.5f), O::set1(1.0f)));
    V y = O::blend(O::itest(q, 1), pc, ps);
    auto sign = O::template slli<30>(O::iand(q, O::iset1(2)));
    if (!is_cos) sign = O::ixor(sign, O::iand(O::as_int(x), O::iset1(int(0x80000000u))));
    y = O::as_float(O::ixor(O::as_int(y), sign));
    const auto ok = O::le(a, O::set1(kTrigBound));  // false for NaN: y is NaN there already
    if (!O::all(O::cand(ok, O::le(a, a)))) {
      alignas(64) float xv[O::W], yv[O::W];
      O::store(xv, x);
      O::store(yv, y);
      for (int64_t i = 0; i < O::W; ++i)
        if (xv[i] > kTrigBound || xv[i] < -kTrigBound)
          yv[i] = float(is_cos ? std::cos(double(xv[i])) : std::sin(double(xv[i])));
      y = O::load(yv);
    }
    return y;
  }
  static V sin(V x) { return sincos(x, false); }
  static V cos(V x) { return sincos(x, true); }

  // a^b = e^{b log a} for finite a > 0 with |b log a| < 87 (normal results): log a carried as hi + lo
  // (e ln2 + f, Fast2Sum, and the tail), b log a as a product in two parts, the low one added to the
  // reduced argument of e^x. Other lanes (a <= 0, inf, NaN, results out of the normal range) take
  // std::pow in double per lane.
  static V pow(V a, V b) {
    V e;
    const V f = log_split(a, e);
    // log a = e ln2_hi + f - z/2 + (the rest), z = f^2 exactly as z + zl; each sum of the leading terms by
    // Fast2Sum (the larger first: |s| >= |f| or s = 0; |f - z/2| >= z/2), so its error joins the low part
    const V s = O::mul(e, O::set1(0.693359375f));  // exact
    const V z = O::mul(f, f), zl = O::fma(f, f, O::sub(O::set1(0.0f), z));
    const V h1 = O::add(s, f);
    const V e1 = O::sub(f, O::sub(h1, s));
    const V hz = O::mul(z, O::set1(-0.5f));
    const V hi = O::add(h1, hz);
    const V e2 = O::sub(hz, O::sub(hi, h1));
    V lo = O::fma(O::mul(log1p_poly(f), f), z, O::fma(zl, O::set1(-0.5f), O::add(e1, e2)));
    lo = O::fma(e, O::set1(-2.12194440e-4f), lo);
    const V l = O::add(hi, lo);
    const V ll = O::sub(lo, O::sub(l, hi));  // log a = l + ll
    const V th = O::mul(b, l);
    const V tl = O::fma(b, ll, O::fma(b, l, O::sub(O::set1(0.0f), th)));
    const V n = O::round(O::mul(th, O::set1(1.44269504088896341f)));
    V r = O::fma(n, O::set1(-0.693359375f), th);
    r = O::add(O::fma(n, O::set1(2.12194440e-4f), r), tl);
    const V p = exp_poly(r);
    V y = O::scale2(p, O::max(O::min(n, O::set1(130.0f)), O::set1(-130.0f)));  // NaN n: a fallback lane
    const auto ok = O::cand(O::cand(O::lt(O::set1(0.0f), a), O::lt(a, O::set1(__builtin_inff()))),
                            O::lt(O::abs(th), O::set1(87.0f)));
    if (!O::all(ok)) {
      alignas(64) float av[O::W], bv[O::W], tv[O::W], yv[O::W];
      O::store(av, a);
      O::store(bv, b);
      O::store(tv, th);
      O::store(yv, y);
      for (int64_t i = 0; i < O::W; ++i)
        if (!(av[i] > 0.0f && av[i] < __builtin_inff() && tv[i] < 87.0f && tv[i] > -87.0f))
          yv[i] = float(std::pow(double(av[i]), double(bv[i])));
      y = O::load(yv);
    }
    return y;
  }
};

template <class O>
constexpr bool kHasTable32 = requires(const float* p) {
  O::table32(p);
};

// Either GELU as x/2 + |x| E(|x|) from its GeluTable (c: the coefficients' tables, loaded once per call):
// 16 operations a vector against the ~40 of the polynomial erf's x/2 (1 + erf). A NaN picks the last
// interval (min returns its second operand) and stays NaN through x/2.
template <class O, class T>
typename O::V gelu_tabulated(typename O::V x, const T (&c)[GeluTable::kDegree + 1]) {
  using V = typename O::V;
  constexpr float kScale = GeluTable::kIntervals / GeluTable::kRange;
  const V a = O::abs(x);
  const V s = O::min(O::mul(a, O::set1(kScale)), O::set1(GeluTable::kIntervals - 1e-3f));
  const auto i = O::trunc_int(s);
  const V u = O::sub(s, O::to_float(i));
  V p = O::lookup(c[GeluTable::kDegree], i);
  for (int k = GeluTable::kDegree - 1; k >= 0; --k) p = O::fma(p, u, O::lookup(c[k], i));
  return O::fma(a, p, O::mul(O::set1(0.5f), x));
}

template <class O>
typename O::V apply_unary(tessera::kernels::x86::UnaryOp op, typename O::V v) {
  using tessera::kernels::x86::UnaryOp;
  switch (op) {
    case UnaryOp::exp:
      return Math<O>::exp(v);
    case UnaryOp::erf:
      return Math<O>::erf(v);
    case UnaryOp::tanh:
      return Math<O>::tanh(v);
    case UnaryOp::sigmoid:
      return Math<O>::sigmoid(v);
    case UnaryOp::relu:
      return Math<O>::relu(v);
    case UnaryOp::gelu_erf:
      return Math<O>::gelu_erf(v);
    case UnaryOp::gelu_tanh:
      return Math<O>::gelu_tanh(v);
    case UnaryOp::silu:
      return Math<O>::silu(v);
    case UnaryOp::hardswish:
      return Math<O>::hardswish(v);
    case UnaryOp::log:
      return Math<O>::log(v);
    case UnaryOp::sin:
      return Math<O>::sin(v);
    case UnaryOp::cos:
      return Math<O>::cos(v);
    case UnaryOp::softplus:
      return Math<O>::softplus(v);
  }
  return v;
}

// y[i] = f(x[i]) over whole vectors, then the masked tail (filled with 0).
template <class O, class F>
void map_loop(const float* x, float* y, int64_t n, F f) {
  int64_t i = 0;
  for (; i + O::W <= n; i += O::W) O::store(y + i, f(O::load(x + i)));
  if (i < n) O::storen(y + i, f(O::loadn(x + i, n - i, 0.0f)), n - i);
}

template <class O, tessera::kernels::x86::UnaryOp Op>
void unary_loop(const float* x, float* y, int64_t n) {
  using tessera::kernels::x86::UnaryOp;
  using V = typename O::V;
  if constexpr ((Op == UnaryOp::gelu_erf || Op == UnaryOp::gelu_tanh) && kHasTable32<O>) {
    const GeluTable& t = gelu_table(Op);
    typename O::Table32 c[GeluTable::kDegree + 1];
    for (int k = 0; k <= GeluTable::kDegree; ++k) c[k] = O::table32(t.c[k]);
    map_loop<O>(x, y, n, [&](V v) { return gelu_tabulated<O>(v, c); });
  } else {
    map_loop<O>(x, y, n, [](V v) { return apply_unary<O>(Op, v); });
  }
}

template <class O>
void unary_kernel(tessera::kernels::x86::UnaryOp op, const float* x, float* y, int64_t n) {
  using tessera::kernels::x86::UnaryOp;
  switch (op) {
    case UnaryOp::exp:
      unary_loop<O, UnaryOp::exp>(x, y, n);
      break;
    case UnaryOp::erf:
      unary_loop<O, UnaryOp::erf>(x, y, n);
      break;
    case UnaryOp::tanh:
      unary_loop<O, UnaryOp::tanh>(x, y, n);
      break;
    case UnaryOp::sigmoid:
      unary_loop<O, UnaryOp::sigmoid>(x, y, n);
      break;
    case UnaryOp::relu:
      unary_loop<O, UnaryOp::relu>(x, y, n);
      break;
    case UnaryOp::gelu_erf:
      unary_loop<O, UnaryOp::gelu_erf>(x, y, n);
      break;
    case UnaryOp::gelu_tanh:
      unary_loop<O, UnaryOp::gelu_tanh>(x, y, n);
      break;
    case UnaryOp::silu:
      unary_loop<O, UnaryOp::silu>(x, y, n);
      break;
    case UnaryOp::hardswish:
      unary_loop<O, UnaryOp::hardswish>(x, y, n);
      break;
    case UnaryOp::log:
      unary_loop<O, UnaryOp::log>(x, y, n);
      break;
    case UnaryOp::sin:
      unary_loop<O, UnaryOp::sin>(x, y, n);
      break;
    case UnaryOp::cos:
      unary_loop<O, UnaryOp::cos>(x, y, n);
      break;
    case UnaryOp::softplus:
      unary_loop<O, UnaryOp::softplus>(x, y, n);
      break;
  }
}

template <class O, tessera::kernels::x86::BinaryOp Op>
typename O::V apply_binary(typename O::V a, typename O::V b) {
  using tessera::kernels::x86::BinaryOp;
  if constexpr (Op == BinaryOp::add)
    return O::add(a, b);
  else if constexpr (Op == BinaryOp::sub)
    return O::sub(a, b);
  else if constexpr (Op == BinaryOp::mul)
    return O::mul(a, b);
  else if constexpr (Op == BinaryOp::div)
    return O::div(a, b);
  else
    return Math<O>::pow(a, b);
}

// SA, SB: 1 = a vector operand, 0 = a broadcast scalar.
template <class O, tessera::kernels::x86::BinaryOp Op, int SA, int SB>
void binary_loop(const float* a, const float* b, float* y, int64_t n) {
  using V = typename O::V;
  const V av = O::set1(a[0]), bv = O::set1(b[0]);
  int64_t i = 0;
  for (; i + O::W <= n; i += O::W) {
    const V x = SA ? O::load(a + i) : av;
    const V z = SB ? O::load(b + i) : bv;
    O::store(y + i, apply_binary<O, Op>(x, z));
  }
  if (i < n) {
    const V x = SA ? O::loadn(a + i, n - i, 1.0f) : av;
    const V z = SB ? O::loadn(b + i, n - i, 1.0f) : bv;
    O::storen(y + i, apply_binary<O, Op>(x, z), n - i);
  }
}

template <class O, tessera::kernels::x86::BinaryOp Op>
void binary_dispatch(const float* a, int64_t sa, const float* b, int64_t sb, float* y, int64_t n) {
  if (sa && sb)
    binary_loop<O, Op, 1, 1>(a, b, y, n);
  else if (sa)
    binary_loop<O, Op, 1, 0>(a, b, y, n);
  else if (sb)
    binary_loop<O, Op, 0, 1>(a, b, y, n);
  else
    binary_loop<O, Op, 0, 0>(a, b, y, n);
}

template <class O>
void binary_kernel(tessera::kernels::x86::BinaryOp op, const float* a, int64_t sa, const float* b, int64_t sb,
                   float* y, int64_t n) {
  using tessera::kernels::x86::BinaryOp;
  switch (op) {
    case BinaryOp::add:
      binary_dispatch<O, BinaryOp::add>(a, sa, b, sb, y, n);
      break;
    case BinaryOp::sub:
      binary_dispatch<O, BinaryOp::sub>(a, sa, b, sb, y, n);
      break;
    case BinaryOp::mul:
      binary_dispatch<O, BinaryOp::mul>(a, sa, b, sb, y, n);
      break;
    case BinaryOp::div:
      binary_dispatch<O, BinaryOp::div>(a, sa, b, sb, y, n);
      break;
    case BinaryOp::pow:
      binary_dispatch<O, BinaryOp::pow>(a, sa, b, sb, y, n);
      break;
  }
}

// The first pass of softmax and log-softmax: the max of each of R rows, as a float and broadcast.
template <class O, int R>
inline __attribute__((always_inline)) void rows_max(const float* x, int64_t len, int64_t ld, float* mxs,
                                                    typename O::V* mx) {
  using V = typename O::V;
  const float ninf = -__builtin_inff();
  V m[R];
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) m[r] = O::set1(ninf);
  int64_t i = 0;
  for (; i + O::W <= len; i += O::W)
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) m[r] = O::max(m[r], O::load(x + r * ld + i));
  if (i < len)
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) m[r] = O::max(m[r], O::loadn(x + r * ld + i, len - i, ninf));
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) mxs[r] = O::hmax(m[r]), mx[r] = O::set1(mxs[r]);
}

// Softmax per row: max, exp(x - max) with the sum, then scale by 1 / sum. A NaN
// or +inf in a row makes the sum NaN, so the whole row is NaN (as the reference).
// R rows at once, so the reductions and the division between passes overlap across rows.
// The exponentials flush results below FLT_MIN to zero (exp_ftz): the -inf a tail is filled with made
// denormals, each a microcode assist — 197-float rows cost as much as 400-float ones (Xeon: 0.77 ns an
// element against 0.38 at 192; flushed, 0.41; by four rows, another 6%).
template <class O, int R>
inline void softmax_row_group(const float* x, float* y, int64_t len, int64_t ld) {
  using V = typename O::V;
  const float ninf = -__builtin_inff();
  float mxs[R];
  V mx[R], s[R];
  rows_max<O, R>(x, len, ld, mxs, mx);
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) s[r] = O::set1(0.0f);
  int64_t i = 0;
  for (i = 0; i + O::W <= len; i += O::W)
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      const V e = Math<O>::exp_ftz(O::sub(O::load(x + r * ld + i), mx[r]));
      O::store(y + r * ld + i, e);
      s[r] = O::add(s[r], e);
    }
  if (i < len)
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      const V e = Math<O>::exp_ftz(O::sub(O::loadn(x + r * ld + i, len - i, ninf), mx[r]));
      O::storen(y + r * ld + i, e, len - i);
      s[r] = O::add(s[r], e);  // masked-off lanes hold exp(-inf - mx) = 0 when mx is finite
    }
  V inv[R];
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) {
    // A max that is not finite (a +inf, NaN or all -inf row) makes the row NaN, as in the reference.
    float sum = O::hsum(s[r]);
    if (!(mxs[r] > ninf && mxs[r] < -ninf)) sum = __builtin_nanf("");
    inv[r] = O::set1(1.0f / sum);
  }
  for (i = 0; i + O::W <= len; i += O::W)
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) O::store(y + r * ld + i, O::mul(O::load(y + r * ld + i), inv[r]));
  if (i < len)
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r)
      O::storen(y + r * ld + i, O::mul(O::loadn(y + r * ld + i, len - i, 0.0f), inv[r]), len - i);
}

// LogSoftmax per row: max, the sum of exp(x - max), then x - (max + log(sum)) — not the log of softmax's
// quotients, which underflow to -inf where a probability falls below FLT_MIN (a vocabulary's tail). A row
// whose max is not finite is NaN, as softmax's.
template <class O, int R>
inline void log_softmax_row_group(const float* x, float* y, int64_t len, int64_t ld) {
  using V = typename O::V;
  const float ninf = -__builtin_inff();
  float mxs[R];
  V mx[R], s[R];
  rows_max<O, R>(x, len, ld, mxs, mx);
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) s[r] = O::set1(0.0f);
  int64_t i = 0;
  for (i = 0; i + O::W <= len; i += O::W)
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) s[r] = O::add(s[r], Math<O>::exp_ftz(O::sub(O::load(x + r * ld + i), mx[r])));
  if (i < len)
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r)
      s[r] = O::add(s[r], Math<O>::exp_ftz(O::sub(O::loadn(x + r * ld + i, len - i, ninf), mx[r])));
  V off[R];
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) {
    float o = mxs[r] + std::log(O::hsum(s[r]));
    if (!(mxs[r] > ninf && mxs[r] < -ninf)) o = __builtin_nanf("");
    off[r] = O::set1(o);
  }
  for (i = 0; i + O::W <= len; i += O::W)
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) O::store(y + r * ld + i, O::sub(O::load(x + r * ld + i), off[r]));
  if (i < len)
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r)
      O::storen(y + r * ld + i, O::sub(O::loadn(x + r * ld + i, len - i, 0.0f), off[r]), len - i);
}

template <class O>
void log_softmax_rows_kernel(const float* x, float* y, int64_t rows, int64_t len, int64_t ld) {
  int64_t r = 0;
  for (; r + 4 <= rows; r += 4) log_softmax_row_group<O, 4>(x + r * ld, y + r * ld, len, ld);
  for (; r < rows; ++r) log_softmax_row_group<O, 1>(x + r * ld, y + r * ld, len, ld);
}

template <class O>
void softmax_rows_kernel(const float* x, float* y, int64_t rows, int64_t len, int64_t ld) {
  int64_t r = 0;
  for (; r + 4 <= rows; r += 4) softmax_row_group<O, 4>(x + r * ld, y + r * ld, len, ld);
  for (; r < rows; ++r) softmax_row_group<O, 1>(x + r * ld, y + r * ld, len, ld);
}

// Online softmax over a block of keys (see EltwiseKernels::online_softmax_rows).
template <class O>
void online_softmax_rows_kernel(float* s, int64_t lds, int64_t rows, int64_t len, float* m, float* l,
                                float* corr) {
  using V = typename O::V;
  const float ninf = -__builtin_inff();
  for (int64_t r = 0; r < rows; ++r) {
    float* row = s + r * lds;
    V m0 = O::set1(ninf);
    for (int64_t i = 0; i < len; i += O::W) m0 = O::max(m0, O::loadn(row + i, len - i, ninf));
    const float bm = O::hmax(m0), mo = m[r], mn = bm > mo ? bm : mo;
    if (mn == ninf) {  // nothing but -inf so far
      for (int64_t i = 0; i < len; ++i) row[i] = 0.0f;
      corr[r] = 1.0f;
      continue;
    }
    const V mx = O::set1(mn);
    V s0 = O::set1(0.0f);
    int64_t i = 0;
    for (; i + O::W <= len; i += O::W) {
      const V e = Math<O>::exp_ftz(O::sub(O::load(row + i), mx));
      O::store(row + i, e);
      s0 = O::add(s0, e);
    }
    if (i < len) {
      const V e = Math<O>::exp_ftz(O::sub(O::loadn(row + i, len - i, ninf), mx));
      O::storen(row + i, e, len - i);
      s0 = O::add(s0, e);
    }
    corr[r] = mo == ninf ? 0.0f : std::exp(mo - mn);
    l[r] = l[r] * corr[r] + O::hsum(s0);
    m[r] = mn;
  }
}

// R rows of LayerNorm with per-element scale and bias (layernorm_rows_kernel's run 0) at once: each pass
// over the R rows side by side, so that the rows' reductions (two dependent chains a row, then the sum
// across the vector, the division and the square root) overlap instead of following one another. The same
// operations in the same order per row as the one-row loop below, so the bits do not depend on R. Zen 5,
// one thread, rows in cache (/tmp/w/ln.cpp, medians of 41): 197 x 768 (ViT) 18.7-19.3 -> 15.0 us, 16 x 768
// 1.44 -> 1.12, 1500 x 512 102 -> 87, 64 x 4096 43 -> 38; rows from memory equal (bandwidth-bound).
template <class O, int R>
inline void layernorm_row_group(const float* x, const float* scale, const float* bias, float* y, int64_t len,
                                float eps) {
  using V = typename O::V;
  V s0[R], s1[R], mv[R], inv[R];
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) s0[r] = O::set1(0.0f), s1[r] = s0[r];
  int64_t i = 0;
  for (; i + 2 * O::W <= len; i += 2 * O::W)
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      s0[r] = O::add(s0[r], O::load(x + r * len + i));
      s1[r] = O::add(s1[r], O::load(x + r * len + i + O::W));
    }
  for (; i < len; i += O::W)
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) s0[r] = O::add(s0[r], O::loadn(x + r * len + i, len - i, 0.0f));
  float mean[R];
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) {
    mean[r] = O::hsum(O::add(s0[r], s1[r])) / float(len);
    mv[r] = O::set1(mean[r]);
    s0[r] = O::set1(0.0f), s1[r] = s0[r];
  }
  i = 0;
  for (; i + 2 * O::W <= len; i += 2 * O::W)
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      const V d0 = O::sub(O::load(x + r * len + i), mv[r]),
              d1 = O::sub(O::load(x + r * len + i + O::W), mv[r]);
      s0[r] = O::fma(d0, d0, s0[r]);
      s1[r] = O::fma(d1, d1, s1[r]);
    }
  for (; i < len; i += O::W)
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      const V d = O::sub(O::loadn(x + r * len + i, len - i, mean[r]), mv[r]);
      s0[r] = O::fma(d, d, s0[r]);
    }
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) {
    const float var = O::hsum(O::add(s0[r], s1[r])) / float(len);
    inv[r] = O::set1(1.0f / __builtin_sqrtf(var + eps));
  }
  i = 0;
  for (; i + O::W <= len; i += O::W) {
    const V sc = O::load(scale + i), bi = bias ? O::load(bias + i) : O::set1(0.0f);
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      const V t = O::mul(O::sub(O::load(x + r * len + i), mv[r]), inv[r]);
      O::store(y + r * len + i, bias ? O::fma(t, sc, bi) : O::mul(t, sc));
    }
  }
  if (i < len) {
    const int64_t n = len - i;
    const V sc = O::loadn(scale + i, n, 0.0f), bi = bias ? O::loadn(bias + i, n, 0.0f) : O::set1(0.0f);
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      const V t = O::mul(O::sub(O::loadn(x + r * len + i, n, 0.0f), mv[r]), inv[r]);
      O::storen(y + r * len + i, bias ? O::fma(t, sc, bi) : O::mul(t, sc), n);
    }
  }
}

// LayerNorm per row, two passes for the statistics (mean, then the squared deviations). The scale and bias
// are per element of a row (run 0), or one value per run of `run` elements (len a multiple of it): row r's
// element i takes scale[r * (len / run) + i / run] (InstanceNormalization: run = len; GroupNormalization's
// per-channel parameters: run = the channel's pixels).
template <class O>
void layernorm_rows_kernel(const float* x, const float* scale, const float* bias, float* y, int64_t rows,
                           int64_t len, float eps, int64_t run) {
  using V = typename O::V;
  int64_t r0 = 0;
  if (run == 0 && len > 0)
    for (; r0 + 4 <= rows; r0 += 4)
      layernorm_row_group<O, 4>(x + r0 * len, scale, bias, y + r0 * len, len, eps);
  for (int64_t r = r0; r < rows; ++r) {
    const float* xr = x + r * len;
    float* yr = y + r * len;
    V s0 = O::set1(0.0f), s1 = s0;
    int64_t i = 0;
    for (; i + 2 * O::W <= len; i += 2 * O::W) {
      s0 = O::add(s0, O::load(xr + i));
      s1 = O::add(s1, O::load(xr + i + O::W));
    }
    for (; i < len; i += O::W) s0 = O::add(s0, O::loadn(xr + i, len - i, 0.0f));
    const float mean = len ? O::hsum(O::add(s0, s1)) / float(len) : 0.0f;
    const V mv = O::set1(mean);
    V q0 = O::set1(0.0f), q1 = q0;
    i = 0;
    for (; i + 2 * O::W <= len; i += 2 * O::W) {
      const V d0 = O::sub(O::load(xr + i), mv), d1 = O::sub(O::load(xr + i + O::W), mv);
      q0 = O::fma(d0, d0, q0);
      q1 = O::fma(d1, d1, q1);
    }
    for (; i < len; i += O::W) {
      const V d = O::sub(O::loadn(xr + i, len - i, mean), mv);
      q0 = O::fma(d, d, q0);
    }
    const float var = len ? O::hsum(O::add(q0, q1)) / float(len) : 0.0f;
    const float inv_s = 1.0f / __builtin_sqrtf(var + eps);
    if (run > 0) {  // y = (x - mean) * (inv scale[k]) + bias[k], k per run of elements
      const int64_t runs = len / run;
      for (int64_t k = 0; k < runs; ++k) {
        const int64_t pk = r * runs + k;
        const V a = O::set1(inv_s * scale[pk]), b = O::set1(bias ? bias[pk] : 0.0f);
        const float* xk = xr + k * run;
        float* yk = yr + k * run;
        i = 0;
        for (; i + O::W <= run; i += O::W) O::store(yk + i, O::fma(O::sub(O::load(xk + i), mv), a, b));
        if (i < run) O::storen(yk + i, O::fma(O::sub(O::loadn(xk + i, run - i, 0.0f), mv), a, b), run - i);
      }
      continue;
    }
    const V inv = O::set1(inv_s);
    i = 0;
    // (x - mean) / sd * scale + bias as layernorm_row_group computes it (an explicit FMA: the compiler may
    // contract a separate multiply and add differently in the two loops)
    for (; i + O::W <= len; i += O::W) {
      const V t = O::mul(O::sub(O::load(xr + i), mv), inv), sc = O::load(scale + i);
      O::store(yr + i, bias ? O::fma(t, sc, O::load(bias + i)) : O::mul(t, sc));
    }
    if (i < len) {
      const int64_t n = len - i;
      const V t = O::mul(O::sub(O::loadn(xr + i, n, 0.0f), mv), inv), sc = O::loadn(scale + i, n, 0.0f);
      O::storen(yr + i, bias ? O::fma(t, sc, O::loadn(bias + i, n, 0.0f)) : O::mul(t, sc), n);
    }
  }
}

// RMSNorm per row: one pass for the mean square, one for y = x * (1 / sqrt(ms + eps)) * scale.
template <class O>
void rmsnorm_rows_kernel(const float* x, const float* scale, float* y, int64_t rows, int64_t len, float eps) {
  using V = typename O::V;
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * len;
    float* yr = y + r * len;
    V q0 = O::set1(0.0f), q1 = q0;
    int64_t i = 0;
    for (; i + 2 * O::W <= len; i += 2 * O::W) {
      const V a = O::load(xr + i), b = O::load(xr + i + O::W);
      q0 = O::fma(a, a, q0);
      q1 = O::fma(b, b, q1);
    }
    for (; i < len; i += O::W) {
      const V a = O::loadn(xr + i, len - i, 0.0f);
      q0 = O::fma(a, a, q0);
    }
    const float ms = len ? O::hsum(O::add(q0, q1)) / float(len) : 0.0f;
    const V inv = O::set1(1.0f / __builtin_sqrtf(ms + eps));
    i = 0;
    for (; i + O::W <= len; i += O::W)
      O::store(yr + i, O::mul(O::mul(O::load(xr + i), inv), O::load(scale + i)));
    if (i < len) {
      const int64_t n = len - i;
      O::storen(yr + i, O::mul(O::mul(O::loadn(xr + i, n, 0.0f), inv), O::loadn(scale + i, n, 0.0f)), n);
    }
  }
}
