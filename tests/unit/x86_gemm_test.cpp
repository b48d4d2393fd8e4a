// Tuned f32 GEMM against a double-precision reference, for every micro-kernel
// the CPU can run, over edge sizes (below, at and above each tile and block
// size, primes), transposes, strided operands, alpha/beta and fused epilogues.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "core/error.h"
#include "core/memory.h"
#include "kernels/x86/gemm.h"
#include "kernels/x86/gemm_amx.h"
#include "kernels/x86/roofline.h"

using namespace tessera;
using namespace tessera::kernels::x86;

namespace {

struct Case {
  int64_t m, n, k;
  bool ta, tb;
};

std::vector<float> random_vec(size_t n, std::mt19937& rng) {
  std::uniform_real_distribution<float> d(-1.f, 1.f);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

// Reference: C = act(alpha*op(A)op(B) + beta*C + bias + residual), accumulated in double
// (act: relu, clip, or the erf / tanh GELU).
void reference(const Case& c, const std::vector<float>& a, int64_t lda, const std::vector<float>& b,
               int64_t ldb, std::vector<float>& out, int64_t ldc, const GemmEpilogue& ep) {
  for (int64_t i = 0; i < c.m; ++i)
    for (int64_t j = 0; j < c.n; ++j) {
      double s = 0;
      for (int64_t p = 0; p < c.k; ++p) {
        const double av = c.ta ? a[p * lda + i] : a[i * lda + p];
        const double bv = c.tb ? b[j * ldb + p] : b[p * ldb + j];
        s += av * bv;
      }
      double v = ep.alpha * s + (ep.beta != 0 ? ep.beta * out[i * ldc + j] : 0.0);
      if (ep.bias) v += ep.bias[j];
      if (ep.row_bias) v += ep.row_bias[i];
      if (ep.residual) v += ep.residual[i * ep.ldr + j];
      if (ep.act == Activation::relu) v = std::max(v, 0.0);
      if (ep.act == Activation::clip) v = std::min(std::max(v, double(ep.clip_min)), double(ep.clip_max));
      if (ep.act == Activation::gelu_erf) v = 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0)));
      if (ep.act == Activation::silu) v = v / (1.0 + std::exp(-v));
      if (ep.act == Activation::hardswish) v = v * std::max(0.0, std::min(1.0, v / 6.0 + 0.5));
      if (ep.act == Activation::gelu_tanh)
        v = 0.5 * v * (1.0 + std::tanh(std::sqrt(2.0 / 3.14159265358979323846) * (v + 0.044715 * v * v * v)));
      out[i * ldc + j] = float(v);
    }
}

void check_case(const std::string& ukr, const Case& c, bool epilogue, ThreadPool* pool, bool packed = false,
                int64_t ldb_pad = 5, int64_t ldc_at = 0, bool split = false, bool narrow = false) {
  std::mt19937 rng(unsigned(c.m * 131 + c.n * 7 + c.k));
  // strided: leading dimensions larger than the logical width (C's: ldc_at where given)
  const int64_t lda = (c.ta ? c.m : c.k) + 3, ldb = (c.tb ? c.k : c.n) + ldb_pad,
                ldc = ldc_at ? ldc_at : c.n + 2;
  auto a = random_vec(size_t((c.ta ? c.k : c.m) * lda), rng);
  auto b = random_vec(size_t((c.tb ? c.n : c.k) * ldb), rng);
  auto c0 = random_vec(size_t(c.m * ldc), rng);
  auto bias = random_vec(size_t(c.n), rng);
  auto row_bias = random_vec(size_t(c.m), rng);
  auto res = random_vec(size_t(c.m * c.n), rng);
  GemmEpilogue ep;
  if (epilogue) {
    ep.alpha = 0.75f;
    ep.beta = 0.5f;
    ep.bias = bias.data();
    ep.row_bias = row_bias.data();
    ep.residual = res.data();
    ep.ldr = c.n;
    // every activation over the cases: relu / clip in the micro-kernels, the GELUs and SiLU in the tile pass
    const Activation acts[] = {Activation::relu,      Activation::clip, Activation::gelu_erf,
                               Activation::gelu_tanh, Activation::silu, Activation::hardswish};
    ep.act = acts[(c.k + c.m + c.n) % 6];
    ep.clip_min = -0.5f;
    ep.clip_max = 0.7f;
  }
  std::vector<float> want = c0, got = c0;
  reference(c, a, lda, b, ldb, want, ldc, ep);
  if (split) {  // AMX's bf16x6 path over B split once (A not transposed)
    std::shared_ptr<void> sb(allocate_aligned(split_b_bytes(c.k, c.n)), free_aligned);
    split_b_into(sb.get(), b.data(), ldb, c.tb, c.k, c.n);
    ASSERT_TRUE(sgemm_split(c.m, c.n, c.k, a.data(), lda, sb.get(), got.data(), ldc, ep, pool));
  } else if (packed && narrow) {
    // the conv packing's layout (PackedB::view's last_nr): whole panels of K x nr in one K block, then the
    // last panel only as wide as its columns rounded up to 16, zeros past N
    const int64_t nr = PackedB::native_nr(), whole = c.n / nr * nr, last_nr = (c.n - whole + 15) / 16 * 16;
    std::vector<float> packed_b(size_t(c.k * (whole + last_nr)), 0.0f);
    auto b_at = [&](int64_t p, int64_t j) { return c.tb ? b[size_t(j * ldb + p)] : b[size_t(p * ldb + j)]; };
    for (int64_t j = 0; j < c.n; ++j)
      for (int64_t p = 0; p < c.k; ++p) {
        const int64_t panel = j / nr, w = j < whole ? nr : last_nr;
        packed_b[size_t(panel * c.k * nr + p * w + j % nr)] = b_at(p, j);
      }
    const PackedB pb = PackedB::view(packed_b.data(), c.k, c.n, c.k, nr, nullptr, last_nr);
    EXPECT_EQ(pb.last_nr(), last_nr);
    sgemm_packed(c.m, a.data(), lda, c.ta, pb, got.data(), ldc, ep, pool);
  } else if (packed) {
    PackedB pb = PackedB::pack(b.data(), ldb, c.tb, c.k, c.n);
    sgemm_packed(c.m, a.data(), lda, c.ta, pb, got.data(), ldc, ep, pool);
  } else if (ukr.empty()) {  // the driver's own choice of path
    sgemm(c.m, c.n, c.k, a.data(), lda, c.ta, b.data(), ldb, c.tb, got.data(), ldc, ep, pool);
  } else {
    ASSERT_TRUE(
        sgemm_with(ukr, c.m, c.n, c.k, a.data(), lda, c.ta, b.data(), ldb, c.tb, got.data(), ldc, ep, pool));
  }
  const double tol = 1e-5 * std::sqrt(double(std::max<int64_t>(c.k, 1))) * 4;
  for (int64_t i = 0; i < c.m; ++i)
    for (int64_t j = 0; j < c.n; ++j) {
      const double w = want[i * ldc + j], g = got[i * ldc + j];
      ASSERT_NEAR(g, w, tol * (1 + std::fabs(w)))
          << ukr << " m=" << c.m << " n=" << c.n << " k=" << c.k << " ta=" << c.ta << " tb=" << c.tb << " at "
          << i << "," << j;
    }
  // padding columns of C untouched
  for (int64_t i = 0; i < c.m; ++i)
    for (int64_t j = c.n; j < ldc; ++j) ASSERT_EQ(got[i * ldc + j], c0[i * ldc + j]);
}

std::vector<Case> cases() {
  std::vector<Case> v;
  const int64_t ms[] = {1, 2, 5, 6, 7, 13, 16, 33, 150};
  const int64_t ns[] = {1, 15, 16, 17, 63, 64, 65, 130};
  const int64_t ks[] = {1, 7, 255, 256, 257};
  int t = 0;
  for (int64_t m : ms)
    for (int64_t n : ns)
      for (int64_t k : ks) {
        ++t;
        v.push_back({m, n, k, bool(t % 3 == 0), bool(t % 5 == 0)});
      }
  v.push_back({97, 521, 600, false, false});   // crosses NC and KC blocks
  v.push_back({31, 1100, 520, false, false});  // small M over several NC-sized spans and KC blocks
  v.push_back({300, 70, 300, false, true});    // tall-skinny, packed B, M over an MC block
  v.push_back({0, 5, 5, false, false});
  v.push_back({5, 5, 0, false, false});
  return v;
}

}  // namespace

TEST(X86Gemm, EveryKernelMatchesReference) {
  for (const std::string& ukr : sgemm_kernel_names()) {
    std::vector<float> probe(1);
    if (!sgemm_with(ukr, 0, 0, 0, probe.data(), 1, false, probe.data(), 1, false, probe.data(), 1)) {
      std::printf("skipping %s (CPU lacks its ISA)\n", ukr.c_str());
      continue;
    }
    int idx = 0;
    for (const Case& c : cases()) check_case(ukr, c, (idx++ % 2) == 1, nullptr);
  }
}

TEST(X86Gemm, ThreadedAndPrepacked) {
  ThreadPool pool(2);
  const std::string ukr = sgemm_kernel_name();
  for (const Case& c :
       {Case{200, 300, 129, false, false}, Case{3, 700, 64, false, true}, Case{500, 20, 33, true, false},
        Case{1, 1000, 300, false, false}, Case{400, 250, 300, false, true},
        // prepacked B over several NC and KC blocks with 33+ rows: tiles warm the next block (AVX-512)
        Case{70, 1100, 600, false, false}, Case{197, 700, 520, false, true},
        // on AMD (gemm.cpp, widen_blocks): 300 rows over an unpacked B of 512+ columns take K in two blocks
        // of 560 rows; prepacked, K = 1000 goes in blocks of 384, 384 and 232 rows
        Case{300, 530, 1100, false, false}, Case{40, 530, 1000, false, true},
        // one row group (2-6 rows) over a prepacked B in K blocks of 384, 384, 232 (AMD: whole blocks per
        // tile)
        Case{5, 530, 1000, false, false}, Case{2, 1100, 1000, true, true}}) {
    check_case(ukr, c, true, &pool);
    check_case(ukr, c, true, &pool, /*packed=*/true);
    check_case(ukr, c, false, nullptr, /*packed=*/true);
  }
  // three threads: the direct path's equal row ranges (197 = 65 + 66 + 66, not whole 6-row slivers)
  ThreadPool pool3(3);
  for (const Case& c : {Case{197, 700, 520, false, true}, Case{385, 130, 200, false, false}}) {
    check_case(ukr, c, true, &pool3);
    check_case(ukr, c, true, &pool3, /*packed=*/true);
  }
}

// The driver's own choice of path (direct A for small M and narrow N, packed A
// otherwise), unpacked and prepacked B, one and two threads, M = 1..33 (check_case's ldc = N + 2: a
// prepacked B with 2..32 rows writes C through the staging block).
// A prepacked B whose last panel is stored narrower than the others (the pointwise convs' weights run as one
// product): every path of the driver over it — one row, the small-M passes, row groups over panels, threads.
TEST(X86Gemm, PackedViewNarrowLastPanel) {
  if (PackedB::native_nr() < 32) GTEST_SKIP() << "panels of 16 have no narrower width";
  ThreadPool two(2);
  const int64_t nr = PackedB::native_nr();
  for (int64_t n : {nr + 1, nr + 16, 2 * nr + 30, 3 * nr + 47, 6 * nr + 16})
    for (int64_t m : {1, 2, 7, 33, 49, 150})
      for (int64_t k : {17, 129, 400})
        for (bool epilogue : {false, true})
          for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), &two}) {
            const Case c{m, n, k, (m + k) % 2 == 1 && m > 1, n % 2 == 0};
            check_case("", c, epilogue, pool, /*packed=*/true, 5, 0, false, /*narrow=*/true);
            if (HasFatalFailure()) return;
          }
  // the narrow panel must cover the columns past the whole panels, in one K block
  std::vector<float> buf(size_t(64 * 2 * nr));
  EXPECT_THROW(PackedB::view(buf.data(), 64, nr + 20, 64, nr, nullptr, 16), Error);
  EXPECT_THROW(PackedB::view(buf.data(), 64, nr + 16, 32, nr, nullptr, 16), Error);
}

TEST(X86Gemm, ChosenPathSmallMAndSkinny) {
  ThreadPool pool(2);
  const std::string ukr = sgemm_kernel_name();
  int idx = 0;
  for (int64_t m = 1; m <= 33; ++m)
    for (const int64_t n : {17, 64, 200, 777}) {
      const Case c{m, n, (m * 37 + n) % 300 + 1, bool(idx % 7 == 3), bool(idx % 3 == 1)};
      ThreadPool* p = (idx % 2) ? &pool : nullptr;
      const bool epi = (idx % 4) < 2;
      check_case(ukr, c, epi, p, /*packed=*/true);
      check_case("", c, !epi, p);
      ++idx;
    }
  // M = 1 over prepacked panels, four read at once (gemv_panels_impl.h): 437 columns are groups of four
  // whole panels, single whole panels after them and a narrower last panel, for 16- and 64-wide panels;
  // M = 1 over a transposed B (gemv_dots_impl.h): rows in fours and singly, K with and without a tail
  for (const Case& c :
       {Case{3136, 64, 70, false, false}, Case{1000, 100, 300, true, false}, Case{1, 4099, 513, false, false},
        Case{16, 3072, 768, false, false}, Case{1, 437, 600, false, false}, Case{1, 437, 300, true, false},
        // small M with C's rows off a multiple of 1024 floats: staged in blocks of 4096 columns (gemm.cpp)
        Case{16, 9000, 300, false, false}, Case{5, 4200, 70, true, false},
        // M = 1 over a transposed B (above)
        Case{1, 129, 64, false, true}, Case{1, 1003, 77, false, true}}) {
    check_case(ukr, c, true, &pool, /*packed=*/true);
    check_case(ukr, c, true, nullptr, /*packed=*/true);
    check_case("", c, true, &pool);
    check_case("", c, false, nullptr);
  }
  // small M over an unpacked B, K past one deep block: equal K blocks of at most 1024 rows on AMD
  // (gemm.cpp, deepen_in_place), 256 elsewhere; a tail of K, a transposed A, one and two threads
  for (const Case& c : {Case{24, 300, 1100, false, false}, Case{100, 130, 2500, true, false},
                        Case{7, 777, 1500, false, false}, Case{197, 64, 1030, false, false}}) {
    check_case("", c, true, &pool);
    check_case("", c, false, nullptr);
  }
  // small M over a prepacked B with C's rows a multiple of 1024 floats apart: not staged
  for (const auto& [c, ldc] : {std::pair{Case{16, 1000, 300, false, false}, int64_t(1024)},
                               std::pair{Case{7, 2048, 70, true, false}, int64_t(2048)}}) {
    check_case(ukr, c, true, &pool, /*packed=*/true, 5, ldc);
    check_case(ukr, c, false, nullptr, /*packed=*/true, 5, ldc);
  }
}

// Small M over an unpacked B whose panels are copied before the row groups read them (gemm.cpp,
// copy_panels: row strides that are multiples of 64 floats, four or more row groups), read in place (three
// groups, other strides), and past kSmallM the same B packed per block: narrow last panels, two K blocks,
// transposed A, one and two threads.
TEST(X86Gemm, SmallMCopiedPanels) {
  ThreadPool pool(2);
  struct Strided {
    Case c;
    int64_t ldb_pad;
  };
  int idx = 0;
  for (const Strided& s :
       {Strided{{24, 256, 300, false, false}, 0}, Strided{{19, 100, 70, false, false}, 28},
        Strided{{40, 100, 70, true, false}, 28}, Strided{{33, 64, 520, false, false}, 0},
        Strided{{18, 256, 40, false, false}, 0}, Strided{{120, 1000, 64, false, false}, 0},
        Strided{{91, 250, 300, false, false}, 3}, Strided{{85, 250, 30, false, false}, 3}}) {
    check_case("", s.c, idx % 2 == 0, nullptr, false, s.ldb_pad);
    check_case("", s.c, idx % 2 == 1, &pool, false, s.ldb_pad);
    ++idx;
  }
}

// The blockings of both kinds of AVX-512 core (roofline.h, fma512_full_width; on other CPUs both runs take
// the same path): on full-width ones an unpacked B past kSmallM rows is packed per block (small B too) in
// K blocks of up to 1024 rows with as many panels as fit half of L2, two threads split N below 128 rows per
// thread, and small M with three or more row groups packs each panel in its first group's tiles.
TEST(X86Gemm, FullAndHalfWidthFmaBlockings) {
  ThreadPool pool(2);
  for (const int full : {1, 0}) {
    force_fma512_full_width(full);
    int idx = 0;
    for (const Case& c :
         {Case{128, 1000, 1100, false, false}, Case{256, 256, 256, false, false},
          Case{97, 130, 70, true, false}, Case{300, 530, 2100, false, false},
          Case{40, 777, 300, false, false}, Case{33, 200, 1030, true, false},
          // small M: three to six row groups packing panels as they go, a narrow last panel, two K blocks
          Case{13, 200, 70, false, false}, Case{32, 777, 1500, false, false}, Case{24, 64, 40, true, false},
          Case{17, 1100, 300, false, false}, Case{8, 300, 200, false, false}}) {
      SCOPED_TRACE("full width " + std::to_string(full));
      check_case("", c, idx % 2 == 0, nullptr);
      check_case("", c, idx % 2 == 1, &pool);
      ++idx;
    }
  }
  force_fma512_full_width(-1);
}

// Alpha 1 without a row bias: full row groups then run their whole panels in one call where the kernel has
// one (GemmTiles), with the epilogue picked at compile time — every combination of beta, bias, residual and
// activation, through two K blocks and a narrow last panel, prepacked and not, one and two threads.
TEST(X86Gemm, RowTilesEveryEpilogue) {
  ThreadPool pool(2);
  const Case c{40, 130, 300, false, false};
  std::mt19937 rng(5);
  const int64_t lda = c.k + 1, ldb = c.n + 3, ldc = c.n + 2;
  const auto a = random_vec(size_t(c.m * lda), rng), b = random_vec(size_t(c.k * ldb), rng);
  const auto c0 = random_vec(size_t(c.m * ldc), rng), bias = random_vec(size_t(c.n), rng);
  const auto res = random_vec(size_t(c.m * c.n), rng);
  const PackedB pb = PackedB::pack(b.data(), ldb, false, c.k, c.n);
  int idx = 0;
  for (const float beta : {0.0f, 0.5f})
    for (const bool with_bias : {false, true})
      for (const bool with_res : {false, true})
        for (const Activation act : {Activation::none, Activation::relu, Activation::clip}) {
          GemmEpilogue ep;
          ep.beta = beta;
          ep.bias = with_bias ? bias.data() : nullptr;
          ep.residual = with_res ? res.data() : nullptr;
          ep.ldr = c.n;
          ep.act = act;
          ep.clip_min = -0.4f;
          ep.clip_max = 0.9f;
          std::vector<float> want = c0, got = c0;
          reference(c, a, lda, b, ldb, want, ldc, ep);
          ThreadPool* p = (idx++ % 2) ? &pool : nullptr;
          if (idx % 3 == 0)
            sgemm_packed(c.m, a.data(), lda, false, pb, got.data(), ldc, ep, p);
          else
            sgemm(c.m, c.n, c.k, a.data(), lda, false, b.data(), ldb, false, got.data(), ldc, ep, p);
          for (int64_t i = 0; i < c.m; ++i)
            for (int64_t j = 0; j < ldc; ++j)
              ASSERT_NEAR(got[i * ldc + j], want[i * ldc + j], 2e-4 * (1 + std::fabs(want[i * ldc + j])))
                  << "beta " << beta << " bias " << with_bias << " residual " << with_res << " act "
                  << int(act) << " at " << i << "," << j;
        }
}

// One level of Strassen-Winograd over a prepacked B (gemm_strassen.cpp): odd and even M (an odd M pads A's
// lower quadrants with a zero row), halves of K and N below, at and past the kernels' tile sizes, strided and
// transposed A and B, the whole epilogue, one and two threads; an odd K or N is refused.
// alpha, beta, bias, row bias, residual (rows n apart) and the activation numbered act (relu, clip, the two
// GELUs, none)
GemmEpilogue full_epilogue(const std::vector<float>& bias, const std::vector<float>& row_bias,
                           const std::vector<float>& res, int64_t n, int act) {
  GemmEpilogue ep;
  ep.alpha = 0.75f, ep.beta = 0.5f, ep.bias = bias.data(), ep.row_bias = row_bias.data();
  ep.residual = res.data(), ep.ldr = n;
  const Activation acts[] = {Activation::relu, Activation::clip, Activation::gelu_erf, Activation::gelu_tanh,
                             Activation::none, Activation::silu, Activation::hardswish};
  ep.act = acts[act];
  ep.clip_min = -0.5f, ep.clip_max = 0.7f;
  return ep;
}

TEST(X86Gemm, StrassenMatchesReference) {
  ThreadPool pool(2);
  int idx = 0;
  for (const Case& c :
       {Case{1, 2, 2, false, false}, Case{7, 130, 258, false, true}, Case{33, 520, 300, true, false},
        Case{128, 256, 512, false, false}, Case{197, 132, 96, true, true}, Case{64, 770, 130, false, false},
        // tall A, taken in chunks of rows (the last one odd)
        Case{1031, 66, 34, true, false}, Case{778, 40, 64, false, true}}) {
    std::mt19937 rng(unsigned(c.m * 31 + c.n * 7 + c.k));
    const int64_t lda = (c.ta ? c.m : c.k) + 3, ldb = (c.tb ? c.k : c.n) + 5, ldc = c.n + 2;
    const auto a = random_vec(size_t((c.ta ? c.k : c.m) * lda), rng);
    const auto b = random_vec(size_t((c.tb ? c.n : c.k) * ldb), rng);
    const auto c0 = random_vec(size_t(c.m * ldc), rng), bias = random_vec(size_t(c.n), rng);
    const auto row_bias = random_vec(size_t(c.m), rng), res = random_vec(size_t(c.m * c.n), rng);
    const StrassenB sb = StrassenB::pack(b.data(), ldb, c.tb, c.k, c.n);
    // none; the whole epilogue (a residual: added to C first, then beta 1); without the residual (beta 0.5
    // rides on each quadrant's last write); a residual that is C itself (beta 0), as the runtime hands it
    for (const int epilogue : {0, 1, 2, 3}) {
      GemmEpilogue ep = epilogue ? full_epilogue(bias, row_bias, res, c.n,
                                                 idx % 4 + (idx % 8 == 7   ? 2
                                                            : idx % 8 == 3 ? 3
                                                                           : 0))
                                 : GemmEpilogue{};
      if (epilogue == 2) ep.residual = nullptr;
      std::vector<float> want = c0, got = c0;
      if (epilogue == 3) ep.residual = c0.data(), ep.ldr = ldc, ep.beta = 0.0f;
      reference(c, a, lda, b, ldb, want, ldc, ep);
      if (epilogue == 3) ep.residual = got.data();
      sgemm_strassen(c.m, a.data(), lda, c.ta, sb, got.data(), ldc, ep, (idx++ % 2) ? &pool : nullptr);
      // the classical kernels' bound (check_case), doubled: the sums of quadrants round before they multiply
      const double tol = 2e-5 * std::sqrt(double(c.k)) * 4;
      for (int64_t i = 0; i < c.m; ++i)
        for (int64_t j = 0; j < ldc; ++j) {
          const double w = want[size_t(i * ldc + j)], g = got[size_t(i * ldc + j)];
          if (j >= c.n)
            ASSERT_EQ(g, w) << "padding column " << j;  // C's padding untouched
          else
            ASSERT_NEAR(g, w, tol * (1 + std::fabs(w)))
                << "m=" << c.m << " n=" << c.n << " k=" << c.k << " epilogue " << epilogue << " at " << i
                << "," << j;
        }
    }
  }
  std::vector<float> b(3 * 4, 1.0f);
  EXPECT_THROW(StrassenB::pack(b.data(), 4, false, 3, 4), Error);  // odd K
  EXPECT_THROW(StrassenB::pack(b.data(), 3, false, 4, 3), Error);  // odd N
  for (int full : {0, 1}) {  // the FMA width (roofline.h): full-width cores need a B of 2^18 floats or more
    force_fma512_full_width(full);
    EXPECT_TRUE(StrassenB::worthwhile(197, 768, 3072));
    EXPECT_FALSE(StrassenB::worthwhile(16, 768, 3072));
    EXPECT_TRUE(StrassenB::worthwhile(49, 2048, 512));
    EXPECT_FALSE(StrassenB::worthwhile(49, 1024, 512));
    EXPECT_FALSE(StrassenB::worthwhile(197, 767, 3072));
    EXPECT_TRUE(StrassenB::worthwhile(500, 384, 1536));
    EXPECT_FALSE(StrassenB::worthwhile(3136, 128, 256));
    EXPECT_FALSE(StrassenB::worthwhile(196, 320, 320));  // two sides of 256-320
    EXPECT_FALSE(StrassenB::worthwhile(1024, 256, 256));
    EXPECT_EQ(StrassenB::worthwhile(784, 256, 512), !full);
    EXPECT_EQ(StrassenB::worthwhile(196, 320, 784), !full);
    EXPECT_TRUE(StrassenB::worthwhile(196, 256, 1024));
  }
  force_fma512_full_width(-1);
}

// Coded weights: lossless (every element reads back bit for bit, escapes included), and the GEMM over them
// matches the reference for one row (the decoding GEMV), up to 32 (decoded per row group) and more (decoded
// panels), every epilogue,
// transposes, K in several blocks, N with and without a partial last panel, one and two threads.
TEST(X86Gemm, CodedMatchesReference) {
  ThreadPool pool(2);
  int idx = 0;
  for (const Case& c :
       {Case{1, 1, 1, false, false}, Case{1, 70, 7, false, true}, Case{1, 320, 300, true, false},
        Case{1, 1000, 1100, false, false}, Case{1, 128, 64, false, true}, Case{2, 130, 400, false, false},
        Case{5, 65, 769, true, true}, Case{4, 1000, 1100, false, false}, Case{12, 200, 1100, false, true},
        Case{16, 130, 800, true, false}, Case{32, 64, 50, false, true}, Case{33, 200, 130, false, false}}) {
    std::mt19937 rng(unsigned(c.m * 31 + c.n * 7 + c.k));
    const int64_t lda = (c.ta ? c.m : c.k) + 3, ldb = (c.tb ? c.k : c.n) + 5, ldc = c.n + 2;
    const auto a = random_vec(size_t((c.ta ? c.k : c.m) * lda), rng);
    auto b = random_vec(size_t((c.tb ? c.n : c.k) * ldb), rng);  // uniform: ~0.5% escape the table
    const float specials[] = {0.0f, -0.0f, 1e30f, -1e-30f, 1e-41f, -3.5e-39f, 65504.0f};
    for (size_t i = 0; i < b.size(); i += 97) b[i] = specials[(i / 97) % 7];
    const auto c0 = random_vec(size_t(c.m * ldc), rng), bias = random_vec(size_t(c.n), rng);
    const auto row_bias = random_vec(size_t(c.m), rng), res = random_vec(size_t(c.m * c.n), rng);
    const CodedB::Plan plan = CodedB::plan(b.data(), ldb, c.tb, c.k, c.n);
    std::vector<uint8_t> coded(plan.bytes);
    CodedB::pack_into(coded.data(), plan, b.data(), ldb, c.tb, c.k, c.n);
    for (int64_t p = 0; p < c.k; ++p)
      for (int64_t j = 0; j < c.n; ++j) {
        const float w = c.tb ? b[size_t(j * ldb + p)] : b[size_t(p * ldb + j)];
        const float r = CodedB::at(coded.data(), coded.size(), c.k, c.n, plan.kc, p, j);
        ASSERT_EQ(std::memcmp(&w, &r, sizeof w), 0)
            << "element " << p << "," << j << ": " << w << " read " << r;
      }
    if (c.k * c.n > 100) EXPECT_GT(plan.escapes, 0);
    if (!CodedB::available()) continue;  // the GEMM needs AVX-512 VBMI
    const CodedB cb = CodedB::view(coded.data(), coded.size(), c.k, c.n, plan.kc, nullptr);
    for (const bool epilogue : {false, true}) {
      const GemmEpilogue ep = epilogue ? full_epilogue(bias, row_bias, res, c.n, idx % 7) : GemmEpilogue{};
      std::vector<float> want = c0, got = c0;
      reference(c, a, lda, b, ldb, want, ldc, ep);
      sgemm_coded(c.m, a.data(), lda, c.ta, cb, got.data(), ldc, ep, (idx++ % 2) ? &pool : nullptr);
      // the sums hold products of 1e30: relative to that scale (the classical kernels' bound)
      const double scale = 1e30 * 2;
      const double tol = 2e-5 * std::sqrt(double(c.k));
      for (int64_t i = 0; i < c.m; ++i)
        for (int64_t j = 0; j < ldc; ++j) {
          const double w = want[size_t(i * ldc + j)], g = got[size_t(i * ldc + j)];
          if (j >= c.n)
            ASSERT_EQ(g, w) << "padding column " << j;
          else
            ASSERT_NEAR(g, w, tol * (std::fabs(w) > 1e20 ? scale : 1 + std::fabs(w)))
                << "m=" << c.m << " n=" << c.n << " k=" << c.k << " epilogue " << epilogue << " at " << i
                << "," << j;
        }
    }
  }
  // a damaged coding is an error, not a crash
  std::vector<float> b(64 * 64, 0.5f);
  const CodedB::Plan plan = CodedB::plan(b.data(), 64, false, 64, 64);
  std::vector<uint8_t> coded(plan.bytes);
  CodedB::pack_into(coded.data(), plan, b.data(), 64, false, 64, 64);
  EXPECT_THROW(CodedB::view(coded.data(), coded.size() - 8, 64, 64, plan.kc, nullptr), Error);
  EXPECT_THROW(CodedB::view(coded.data(), coded.size(), 64, 65, plan.kc, nullptr), Error);
  coded[0] = 'X';
  EXPECT_THROW(CodedB::view(coded.data(), coded.size(), 64, 64, plan.kc, nullptr), Error);
  EXPECT_TRUE(CodedB::worthwhile(plan, 64, 64) == CodedB::available());
}

// The f32 GEMM on AMX's bf16 tiles (gemm_amx.h) against the double reference, with the tolerance of the f32
// kernels: edge sizes below, at and above its 16-row / 32-column / 32-deep tiles and blocks, transposed B,
// every epilogue, one and two threads.
TEST(X86Gemm, AmxSplitMatchesReference) {
  if (!amx_gemm_available()) GTEST_SKIP() << "no AMX-BF16 here";
  ThreadPool pool(2);
  int t = 0;
  for (int64_t m : {1, 15, 16, 17, 32, 33, 65, 197})
    for (int64_t n : {1, 16, 31, 32, 33, 100})
      for (int64_t k : {1, 31, 32, 33, 300}) {
        ++t;
        check_case("", Case{m, n, k, false, t % 3 == 0}, t % 2 == 1, t % 4 < 2 ? &pool : nullptr, false, 5, 0,
                   /*split=*/true);
      }
  check_case("", Case{197, 3072, 768, false, false}, true, &pool, false, 5, 0, true);
  check_case("", Case{70, 600, 1100, false, true}, true, &pool, false, 5, 0, true);
  // f32 accuracy, not bf16's: the largest error within 2e-6 of the largest output (dropping any of the six
  // piece products leaves ~1e-5; one bf16 product ~3e-3; the f32 kernels measure ~4e-7 here)
  const int64_t m = 64, n = 96, k = 768;
  std::mt19937 rng(3);
  auto a = random_vec(size_t(m * k), rng), b = random_vec(size_t(k * n), rng);
  std::vector<float> got(size_t(m * n)), want(size_t(m * n));
  std::shared_ptr<void> sb(allocate_aligned(split_b_bytes(k, n)), free_aligned);
  split_b_into(sb.get(), b.data(), n, false, k, n);
  ASSERT_TRUE(sgemm_split(m, n, k, a.data(), k, sb.get(), got.data(), n, {}, &pool));
  reference(Case{m, n, k, false, false}, a, k, b, n, want, n, {});
  double err = 0, top = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    err = std::max(err, std::fabs(double(got[i]) - want[i]));
    top = std::max(top, std::fabs(double(want[i])));
  }
  EXPECT_LT(err, 2e-6 * top);
}

// The three bf16 pieces of each weight sum back to it exactly (8 + 8 + 8 significant bits), near FLT_MAX
// too; and an A holding Inf or NaN is refused (the caller takes the f32 path) with C untouched.
TEST(X86Gemm, AmxSplitIsExactAndRefusesNonFinite) {
  if (!amx_gemm_available()) GTEST_SKIP() << "no AMX-BF16 here";
  std::mt19937 rng(7);
  std::normal_distribution<float> d(0.f, 100.f);
  const int64_t k = 45, n = 37;
  std::vector<float> b(size_t(k * n));
  for (auto& x : b) x = d(rng);
  b[3] = 3.4e38f;
  b[4] = -3.3999e38f;
  b[5] = 1.17549435e-38f * 65536.0f * 256.0f;
  std::shared_ptr<void> sb(allocate_aligned(split_b_bytes(k, n)), free_aligned);
  split_b_into(sb.get(), b.data(), n, false, k, n);
  for (int64_t p = 0; p < k; ++p)
    for (int64_t j = 0; j < n; ++j)
      ASSERT_EQ(split_b_at(sb.get(), k, n, p, j), b[size_t(p * n + j)]) << p << "," << j;
  EXPECT_TRUE(split_b_finite(b.data(), n, false, k, n));
  b[10] = INFINITY;
  EXPECT_FALSE(split_b_finite(b.data(), n, false, k, n));
  const int64_t m = 20;
  std::vector<float> a(size_t(m * k), 0.5f), c(size_t(m * n), 2.0f);
  a[size_t(7 * k + 3)] = INFINITY;
  EXPECT_FALSE(sgemm_split(m, n, k, a.data(), k, sb.get(), c.data(), n));
  a[size_t(7 * k + 3)] = NAN;
  EXPECT_FALSE(sgemm_split(m, n, k, a.data(), k, sb.get(), c.data(), n));
  for (float v : c) ASSERT_EQ(v, 2.0f);
}
