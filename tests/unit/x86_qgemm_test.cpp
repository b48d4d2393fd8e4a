// The int8 GEMM kernels (kernels/x86/qgemm.h) against direct int64 formulas on random bytes: the matmul over
// every u8 / s8 pairing and zero points, the im2col conv and the packed-weight conv over edge shapes, both
// tiles (VNNI where the CPU has it, and the portable one); and tessera.QLinearConvPacked's reference kernel
// against ONNX QLinearConv's on the unpacked weights.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "core/cpu_features.h"
#include "core/memory.h"
#include "core/thread_pool.h"
#include "kernels/x86/qgemm.h"
#include "tests/unit/kernel_harness.h"

namespace tessera::kernels::x86 {
namespace {

std::vector<uint8_t> rand_bytes(size_t n, uint32_t seed) {
  std::mt19937 g(seed);
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = uint8_t(g());
  return v;
}

int32_t val(const std::vector<uint8_t>& v, size_t i, bool is_signed) {
  return is_signed ? int32_t(int8_t(v[i])) : int32_t(v[i]);
}

TEST(X86QGemm, MatmulMatchesInt64) {
  ThreadPool pool(2);
  for (bool as : {false, true})
    for (bool bs : {false, true})
      for (auto [m, k, n] :
           {std::tuple{1, 1, 1}, {5, 3, 17}, {6, 4, 16}, {7, 9, 64}, {13, 64, 65}, {20, 131, 130}}) {
        const auto a = rand_bytes(size_t(m * k), uint32_t(m * 7 + k)),
                   b = rand_bytes(size_t(k * n), uint32_t(n));
        const int32_t za = as ? -5 : 131;
        std::vector<int32_t> zb(static_cast<size_t>(n));
        for (int j = 0; j < n; ++j) zb[size_t(j)] = bs ? j % 7 - 3 : 120 + j % 9;
        std::vector<int32_t> got(size_t(m * n));
        QOutput o;
        o.data = got.data(), o.ldc = n;
        qmatmul_int8(m, n, k, a.data(), as, k, za, b.data(), bs, n, zb.data(), true, o, &pool);
        for (int i = 0; i < m; ++i)
          for (int j = 0; j < n; ++j) {
            int64_t acc = 0;
            for (int p = 0; p < k; ++p)
              acc += int64_t(val(a, size_t(i * k + p), as) - za) *
                     (val(b, size_t(p * n + j), bs) - zb[size_t(j)]);
            ASSERT_EQ(got[size_t(i * n + j)], int32_t(acc))
                << m << "x" << k << "x" << n << " at " << i << "," << j;
          }
      }
}

// y = requantized conv of x [1, c, h, w] by w [oc, c, kh, kw] (s8 weights, zero point 0), per-channel scale.
std::vector<uint8_t> conv_expected(const Conv2dParams& p, const std::vector<uint8_t>& x, bool xs, int32_t zx,
                                   const std::vector<uint8_t>& w, const std::vector<float>& f,
                                   const std::vector<int32_t>& bias, int32_t yz) {
  std::vector<uint8_t> y(size_t(p.oc * p.oh() * p.ow()));
  for (int64_t o = 0; o < p.oc; ++o)
    for (int64_t oy = 0; oy < p.oh(); ++oy)
      for (int64_t ox = 0; ox < p.ow(); ++ox) {
        int64_t acc = bias[size_t(o)];
        for (int64_t c = 0; c < p.c; ++c)
          for (int64_t i = 0; i < p.kh; ++i)
            for (int64_t j = 0; j < p.kw; ++j) {
              const int64_t iy = oy * p.sh - p.pad_t + i * p.dh, ix = ox * p.sw - p.pad_l + j * p.dw;
              if (iy < 0 || iy >= p.h || ix < 0 || ix >= p.w) continue;
              acc += int64_t(val(x, size_t((c * p.h + iy) * p.w + ix), xs) - zx) *
                     val(w, size_t(((o * p.c + c) * p.kh + i) * p.kw + j), true);
            }
        // onnxruntime's requantization: f32 product, clamped to the range less the zero point, rounded
        const float v = std::clamp(float(int32_t(acc)) * f[size_t(o)], float(0 - yz), float(255 - yz));
        y[size_t((o * p.oh() + oy) * p.ow() + ox)] = uint8_t(int32_t(std::nearbyint(v)) + yz);
      }
  return y;
}

TEST(X86QGemm, ConvKernelsMatchInt64) {
  ThreadPool pool(2);
  struct Case {
    int64_t c, h, w, oc, kh, kw, s, pad, d;
  };
  for (const Case& cs : {Case{5, 9, 11, 7, 3, 3, 1, 1, 1}, Case{8, 12, 12, 70, 3, 3, 2, 1, 1},
                         Case{12, 7, 7, 64, 1, 1, 1, 0, 1}, Case{6, 15, 13, 9, 5, 3, 3, 2, 2},
                         Case{16, 6, 6, 130, 3, 3, 1, 1, 1}})
    for (bool xs : {false, true}) {
      Conv2dParams p;
      p.c = cs.c, p.h = cs.h, p.w = cs.w, p.oc = cs.oc, p.kh = cs.kh, p.kw = cs.kw, p.sh = p.sw = cs.s;
      p.pad_t = p.pad_l = p.pad_b = p.pad_r = cs.pad, p.dh = p.dw = cs.d;
      const auto x = rand_bytes(size_t(p.c * p.h * p.w), uint32_t(cs.c)),
                 w = rand_bytes(size_t(p.oc * p.c * p.kh * p.kw), 9);
      const int32_t zx = xs ? 3 : 119;
      std::mt19937 g(5);
      const int64_t padded = (p.oc + 63) / 64 * 64;
      std::vector<float> f(size_t(padded), 0.f);
      std::vector<int32_t> bias(size_t(padded), 0);
      for (int64_t o = 0; o < p.oc; ++o)
        f[size_t(o)] = 1e-3f * float(1 + g() % 50), bias[size_t(o)] = int32_t(g() % 4001) - 2000;
      const auto want = conv_expected(p, x, xs, zx, w, f, bias, 100);
      QOutput o;
      o.type = QOut::u8, o.scale = f.data(), o.scale_per_row = true, o.bias = bias.data(), o.y_zero = 100;
      std::vector<uint8_t> got(want.size());
      o.data = got.data();
      const int32_t zw = 0;
      qconv2d_int8(p, x.data(), xs, zx, w.data(), true, &zw, false, o, &pool);
      EXPECT_EQ(got, want) << "im2col c=" << cs.c << " oc=" << cs.oc;
      AlignedScratch pk;
      uint8_t* packed =
          reinterpret_cast<uint8_t*>(pk.get(QConvPackedW::bytes(p.oc, p.c, p.kh, p.kw) / 4 + 1));
      QConvPackedW::pack(w.data(), true, p.oc, p.c, p.kh, p.kw, packed);
      std::fill(got.begin(), got.end(), 0);
      qconv2d_int8_packed(p, x.data(), xs, zx, packed, o, &pool);
      EXPECT_EQ(got, want) << "packed c=" << cs.c << " oc=" << cs.oc;
    }
}

// The NHWC packed conv (layout_nhwc's int8 regions) against the int64 formula, on a buffer of exactly the
// image (ASan: every tap is read in place, a padded one from a row of zero points; channels not a multiple of
// 4 and s8 images through a copy), dense, pointwise (a plain GEMM) and grouped.
TEST(X86QGemm, NhwcPackedConvMatchesInt64) {
  ThreadPool pool(2);
  struct Case {
    int64_t n, c, h, w, oc, kh, kw, s, pad, d, groups;
  };
  for (const Case& cs : {Case{1, 8, 9, 11, 7, 3, 3, 1, 1, 1, 1}, Case{2, 16, 12, 12, 70, 3, 3, 2, 1, 1, 1},
                         Case{1, 12, 7, 7, 64, 1, 1, 1, 0, 1, 1}, Case{1, 6, 15, 13, 9, 5, 3, 3, 2, 2, 1},
                         Case{1, 32, 6, 6, 130, 1, 1, 1, 0, 1, 1}, Case{1, 3, 10, 9, 16, 3, 3, 2, 1, 1, 1},
                         Case{2, 32, 9, 8, 48, 3, 3, 1, 1, 1, 4}, Case{1, 64, 5, 7, 64, 1, 1, 1, 0, 1, 8}})
    for (bool xs : {false, true}) {
      Conv2dParams p;
      p.n = cs.n, p.c = cs.c, p.h = cs.h, p.w = cs.w, p.oc = cs.oc, p.kh = cs.kh, p.kw = cs.kw;
      p.sh = p.sw = cs.s, p.pad_t = p.pad_l = p.pad_b = p.pad_r = cs.pad, p.dh = p.dw = cs.d,
      p.groups = cs.groups;
      const int64_t cg = p.c / p.groups, og = p.oc / p.groups, oh = p.oh(), ow = p.ow();
      const auto x = rand_bytes(size_t(p.n * p.h * p.w * p.c), uint32_t(cs.c + cs.n));  // NHWC, exactly
      const auto w = rand_bytes(size_t(p.oc * cg * p.kh * p.kw), 11);
      const int32_t zx = xs ? -5 : 121;
      std::mt19937 g(7);
      const int64_t padded = (p.oc + 63) / 64 * 64;
      std::vector<float> f(size_t(padded), 0.f);
      std::vector<int32_t> bias(size_t(padded), 0);
      for (int64_t o = 0; o < p.oc; ++o)
        f[size_t(o)] = 1e-3f * float(1 + g() % 50), bias[size_t(o)] = int32_t(g() % 4001) - 2000;
      std::vector<uint8_t> want(size_t(p.n * oh * ow * p.oc));
      for (int64_t b = 0; b < p.n; ++b)
        for (int64_t o = 0; o < p.oc; ++o)
          for (int64_t oy = 0; oy < oh; ++oy)
            for (int64_t ox = 0; ox < ow; ++ox) {
              int64_t acc = bias[size_t(o)];
              for (int64_t c = 0; c < cg; ++c)
                for (int64_t i = 0; i < p.kh; ++i)
                  for (int64_t j = 0; j < p.kw; ++j) {
                    const int64_t iy = oy * p.sh - p.pad_t + i * p.dh, ix = ox * p.sw - p.pad_l + j * p.dw;
                    if (iy < 0 || iy >= p.h || ix < 0 || ix >= p.w) continue;
                    const int64_t ci = o / og * cg + c;
                    acc += int64_t(val(x, size_t(((b * p.h + iy) * p.w + ix) * p.c + ci), xs) - zx) *
                           val(w, size_t(((o * cg + c) * p.kh + i) * p.kw + j), true);
                  }
              const float v =
                  std::clamp(float(int32_t(acc)) * f[size_t(o)], float(0 - 100), float(255 - 100));
              want[size_t(((b * oh + oy) * ow + ox) * p.oc + o)] = uint8_t(int32_t(std::nearbyint(v)) + 100);
            }
      QOutput o;
      o.type = QOut::u8, o.scale = f.data(), o.scale_per_row = true, o.bias = bias.data(), o.y_zero = 100;
      std::vector<uint8_t> got(want.size());
      o.data = got.data();
      AlignedScratch pk;
      uint8_t* packed = reinterpret_cast<uint8_t*>(
          pk.get(QConvPackedW::grouped_bytes(p.oc, cg, p.kh, p.kw, p.groups) / 4 + 1));
      QConvPackedW::pack_grouped(w.data(), true, p.oc, cg, p.kh, p.kw, p.groups, packed);
      qconv2d_int8_packed_nhwc(p, x.data(), xs, zx, packed, o, &pool);
      EXPECT_EQ(got, want) << "nhwc c=" << cs.c << " oc=" << cs.oc << " groups=" << cs.groups << " s8 " << xs;
    }
}

TEST(X86QGemm, PortableTileMatchesVnni) {
  // The same tile through both kernels (where the CPU has VNNI; otherwise both runs are portable).
  const int64_t kq = 17;
  const auto a = rand_bytes(size_t(6 * 4 * kq), 3), b = rand_bytes(size_t(4 * kq * 64), 4);
  alignas(64) uint8_t panel[4 * 17 * 64];
  std::copy(b.begin(), b.end(), panel);
  alignas(64) int32_t col_term[64], zb[64];
  for (int j = 0; j < 64; ++j) col_term[j] = j * 37 - 900, zb[j] = j % 5 - 2;
  int32_t za[6] = {1, -2, 3, 0, 5, 7}, rows[6] = {100, -50, 7, 0, 3, 9};
  for (bool as : {false, true})
    for (int mr : {1, 5, 6})
      for (int nr : {1, 16, 33, 64}) {
        QTile t;
        t.kq = kq, t.a = a.data(), t.lda = 4 * kq, t.mr = mr, t.nr = nr, t.nv = (nr + 15) / 16, t.b = panel;
        t.a_signed = as;
        t.a_zero = za, t.a_rowsum = rows, t.b_zero = zb, t.col_term = col_term;
        std::vector<int32_t> c1(6 * 64, 0), c2(6 * 64, 0);
        t.c = c1.data(), t.ldc = 64;
        if (cpu_features().avx512_core() && cpu_features().avx512vnni)
          qgemm_tile__avx512vnni(t);
        else
          qgemm_tile_portable(t);
        t.c = c2.data();
        qgemm_tile_portable(t);
        EXPECT_EQ(c1, c2) << "mr " << mr << " nr " << nr << " a_signed " << as;
      }
}

TEST(X86QGemm, PackedConvReferenceMatchesQLinearConv) {
  for (DType wt : {DType::i8, DType::u8}) {
    const int64_t oc = 70, c = 6, kh = 3, kw = 2;
    Tensor x(DType::u8, {1, c, 5, 6}), w(wt, {oc, c, kh, kw});
    const auto xb = rand_bytes(size_t(x.numel()), 1), wb = rand_bytes(size_t(w.numel()), 2);
    std::copy(xb.begin(), xb.end(), x.data<uint8_t>());
    std::copy(wb.begin(), wb.end(), static_cast<uint8_t*>(w.raw_data()));
    Tensor pk(DType::u8, {int64_t(QConvPackedW::bytes(oc, c, kh, kw))});
    QConvPackedW::pack(w.raw_data(), wt == DType::i8, oc, c, kh, kw, pk.data<uint8_t>());
    const Tensor wz = wt == DType::u8 ? Tensor::scalar<uint8_t>(128) : Tensor::scalar<int8_t>(0);
    const std::vector<DataValue> common{x, Tensor::scalar<float>(0.05f), Tensor::scalar<uint8_t>(7)};
    auto inputs = [&](const Tensor& wi) {
      std::vector<DataValue> in = common;
      for (const DataValue& v :
           {DataValue(wi), DataValue(Tensor::scalar<float>(0.01f)), DataValue(wz),
            DataValue(Tensor::scalar<float>(0.3f)), DataValue(Tensor::scalar<uint8_t>(90))})
        in.push_back(v);
      return in;
    };
    AttrMap attrs{{"pads", testing::attr_ints({1, 0, 1, 1})}, {"strides", testing::attr_ints({1, 2})}};
    const Tensor want = testing::run_ref("QLinearConv", inputs(w), attrs)[0].tensor;
    attrs["kernel_shape"] = testing::attr_ints({kh, kw});
    attrs["weight_shape"] = testing::attr_ints({oc, c, kh, kw});
    attrs["w_type"] = testing::attr_i(wt == DType::u8 ? 2 : 3);
    KernelFn fn = kernels::ref::KernelTable::instance().find("tessera", "QLinearConvPacked");
    ASSERT_TRUE(fn);
    testing::TestKernelContext ctx("QLinearConvPacked", inputs(pk), attrs, 1);
    fn(ctx);
    const Tensor& got = ctx.outputs()[0].tensor;
    ASSERT_EQ(got.shape(), want.shape());
    EXPECT_TRUE(std::equal(got.data<uint8_t>(), got.data<uint8_t>() + got.numel(), want.data<uint8_t>()));
  }
}

TEST(X86QGemm, PackedMatmulKernelAndReferenceMatchMatMulInteger) {
  ThreadPool pool(2);
  for (DType bt : {DType::i8, DType::u8})
    for (auto [m, k, n] :
         {std::tuple{1, 5, 3}, {7, 64, 65}, {13, 130, 200}, {2, 3, 16}, {3, 33, 129}, {1, 257, 64}}) {
      Tensor a(DType::u8, {m, k}), b(bt, {k, n});
      const auto ab = rand_bytes(size_t(a.numel()), 1), bb = rand_bytes(size_t(b.numel()), 2);
      std::copy(ab.begin(), ab.end(), a.data<uint8_t>());
      std::copy(bb.begin(), bb.end(), static_cast<uint8_t*>(b.raw_data()));
      const Tensor az = Tensor::scalar<uint8_t>(77);
      const Tensor bz = bt == DType::u8 ? Tensor::scalar<uint8_t>(128) : Tensor::scalar<int8_t>(0);
      const Tensor want = testing::run_ref("MatMulInteger", {a, b, az, bz})[0].tensor;
      // B's columns as the packed rows, as pack_qmatmul does
      std::vector<uint8_t> bt_rows(size_t(k * n));
      for (int r = 0; r < k; ++r)
        for (int c = 0; c < n; ++c)
          bt_rows[size_t(c * k + r)] = static_cast<const uint8_t*>(b.raw_data())[r * n + c];
      Tensor pk(DType::u8, {int64_t(QConvPackedW::bytes(n, k, 1, 1))});
      QConvPackedW::pack(bt_rows.data(), bt == DType::i8, n, k, 1, 1, pk.data<uint8_t>());
      // packing B in place (pack_qmatmul's way) gives the same bytes
      Tensor pk2(DType::u8, pk.shape());
      QConvPackedW::pack_matmul(b.raw_data(), bt == DType::i8, k, n, pk2.data<uint8_t>());
      EXPECT_TRUE(std::equal(pk.data<uint8_t>(), pk.data<uint8_t>() + pk.numel(), pk2.data<uint8_t>()));
      std::vector<int32_t> got(size_t(m * n));
      QOutput o;
      o.data = got.data(), o.ldc = n;
      qmatmul_int8_packed(m, n, k, a.data<uint8_t>(), false, k, 77, pk.data<uint8_t>(), o, &pool);
      EXPECT_TRUE(std::equal(got.begin(), got.end(), want.data<int32_t>())) << m << "x" << k << "x" << n;
      AttrMap attrs{{"K", testing::attr_i(k)},
                    {"N", testing::attr_i(n)},
                    {"w_type", testing::attr_i(bt == DType::u8 ? 2 : 3)}};
      KernelFn fn = kernels::ref::KernelTable::instance().find("tessera", "MatMulIntegerPacked");
      ASSERT_TRUE(fn);
      testing::TestKernelContext ctx("MatMulIntegerPacked", {a, pk, az, bz}, attrs, 1);
      fn(ctx);
      const Tensor& r = ctx.outputs()[0].tensor;
      ASSERT_EQ(r.shape(), want.shape());
      EXPECT_TRUE(std::equal(r.data<int32_t>(), r.data<int32_t>() + r.numel(), want.data<int32_t>()));
    }
}

}  // namespace
}  // namespace tessera::kernels::x86
