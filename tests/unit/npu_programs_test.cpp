// Generated GEMM/Conv2D programs: bit-exact against a naive reference (int8 and bf16, the latter in
// the documented accumulation order), run through the functional and the detailed timing simulator;
// hand-computed cycle counts of small programs; the tpu-v1 figures.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <random>

#include "core/error.h"
#include "core/float_types.h"
#include "npu/programs/layers.h"
#include "npu/sim/functional.h"
#include "npu/sim/scalesim.h"
#include "npu/sim/timing.h"

using namespace tessera::npu;

namespace {

ArchConfig tiny_arch(int rows, int cols) {
  ArchConfig a;
  a.name = "tiny";
  a.rows = rows;
  a.cols = cols;
  a.ub_bytes = 256 << 10;
  a.acc_bytes = int64_t(cols) * 4 * 512;
  a.weight_slots = 2;
  a.hbm_bytes = 64 << 20;
  a.vector_lanes = cols;
  return a;
}

// Naive conv in NHWC / OIHW, accumulating in (r, s, c) order (padded taps contribute 0 * w).
template <typename Acc, typename Load>
std::vector<Acc> ref_conv(const ConvSpec& s, const std::vector<uint8_t>& x, const std::vector<uint8_t>& w, Load ld) {
  const int64_t OH = s.out_h(), OW = s.out_w(), G = s.groups, Cg = s.in_channels / G, Ng = s.out_channels / G;
  const int esz = ndtype_size(s.in_dtype);
  std::vector<Acc> y(size_t(s.batch * OH * OW * s.out_channels));
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t oh = 0; oh < OH; ++oh)
      for (int64_t ow = 0; ow < OW; ++ow)
        for (int64_t n = 0; n < s.out_channels; ++n) {
          int64_t g = n / Ng;
          Acc acc = 0;
          for (int64_t r = 0; r < s.kernel_h; ++r)
            for (int64_t q = 0; q < s.kernel_w; ++q)
              for (int64_t c = 0; c < Cg; ++c) {
                int64_t ih = oh * s.stride_h - s.pad_top + r * s.dilation_h;
                int64_t iw = ow * s.stride_w - s.pad_left + q * s.dilation_w;
                Acc xv = 0;
                if (ih >= 0 && ih < s.in_h && iw >= 0 && iw < s.in_w)
                  xv = ld(&x[size_t((((b * s.in_h + ih) * s.in_w + iw) * s.in_channels + g * Cg + c) * esz)]);
                Acc wv = ld(&w[size_t((((n * Cg + c) * s.kernel_h + r) * s.kernel_w + q) * esz)]);
                Acc prod = xv * wv;
                acc = acc + prod;
              }
          y[size_t(((b * OH + oh) * OW + ow) * s.out_channels + n)] = acc;
        }
  return y;
}

struct RunOut {
  std::vector<uint8_t> y;
  TimingResult t;
};

RunOut run_layer(const ConvSpec& s, const ArchConfig& a, const std::vector<uint8_t>& x, const std::vector<uint8_t>& w) {
  LayerProgram lp = conv_program(s, a);
  Machine m(a, lp.hbm_size);
  std::memcpy(m.hbm().data() + lp.input_addr, x.data(), x.size());
  auto packed = pack_conv_weights(s, a, w);
  std::memcpy(m.hbm().data() + lp.weight_addr, packed.data(), packed.size());
  m.run(lp.program);
  size_t ybytes = size_t(s.batch * s.out_h() * s.out_w() * s.out_channels * ndtype_size(s.out_dtype));
  RunOut r;
  r.y.assign(m.hbm().begin() + int64_t(lp.output_addr), m.hbm().begin() + int64_t(lp.output_addr + ybytes));
  r.t = simulate_timing(lp.program, a);
  return r;
}

void check_accounting(const TimingResult& t) {
  EXPECT_EQ(t.array_active + t.weight_stall + t.weight_shift + t.input_stall + t.raw_stall + t.fill_drain + t.non_matrix,
            t.total_cycles);
}

ConvSpec random_spec(std::mt19937& rng, NDType dt) {
  auto U = [&](int lo, int hi) { return int64_t(lo + int(rng() % uint32_t(hi - lo + 1))); };
  ConvSpec s;
  s.in_dtype = dt;
  s.out_dtype = dt == NDType::i8 ? NDType::i32 : NDType::f32;
  s.batch = U(1, 2);
  int kind = int(rng() % 4);
  s.groups = kind == 1 ? U(2, 3) : 1;
  s.in_channels = s.groups * U(1, 7);
  s.out_channels = kind == 2 ? s.in_channels : s.groups * U(1, 11);
  if (kind == 2) s.groups = s.in_channels;  // depthwise
  s.in_h = U(3, 9);
  s.in_w = U(3, 9);
  s.kernel_h = U(1, 3);
  s.kernel_w = U(1, 3);
  s.stride_h = U(1, 2);
  s.stride_w = U(1, 2);
  s.dilation_h = kind == 3 ? U(1, 2) : 1;
  s.dilation_w = kind == 3 ? U(1, 2) : 1;
  s.pad_top = U(0, 2);
  s.pad_left = U(0, 2);
  s.pad_bottom = U(0, 1);
  s.pad_right = U(0, 1);
  if (s.in_h + s.pad_top + s.pad_bottom < s.dilation_h * (s.kernel_h - 1) + 1) s.pad_bottom += s.kernel_h * 2;
  if (s.in_w + s.pad_left + s.pad_right < s.dilation_w * (s.kernel_w - 1) + 1) s.pad_right += s.kernel_w * 2;
  return s;
}

}  // namespace

TEST(NpuPrograms, Int8ConvAndGemmBitExact) {
  std::mt19937 rng(1234);
  const std::pair<int, int> arrays[] = {{4, 4}, {8, 4}, {3, 5}, {16, 16}};
  for (int it = 0; it < 24; ++it) {
    auto [R, C] = arrays[it % 4];
    ArchConfig a = tiny_arch(R, C);
    ConvSpec s = it % 6 == 5 ? gemm_spec(1 + rng() % 40, 1 + rng() % 21, 1 + rng() % 37) : random_spec(rng, NDType::i8);
    std::vector<uint8_t> x(size_t(s.batch * s.in_h * s.in_w * s.in_channels)),
        w(size_t(s.out_channels * (s.in_channels / s.groups) * s.kernel_h * s.kernel_w));
    for (auto& v : x) v = uint8_t(rng());
    for (auto& v : w) v = uint8_t(rng());
    auto ref = ref_conv<int32_t>(s, x, w, [](const uint8_t* p) { return int32_t(int8_t(*p)); });
    RunOut out = run_layer(s, a, x, w);
    ASSERT_EQ(out.y.size(), ref.size() * 4);
    std::vector<int32_t> y(ref.size());
    std::memcpy(y.data(), out.y.data(), out.y.size());
    EXPECT_EQ(y, ref) << "iteration " << it << " groups " << s.groups << " k " << s.kernel_h << "x" << s.kernel_w;
    check_accounting(out.t);
    EXPECT_EQ(out.t.macs, s.batch * s.out_h() * s.out_w() * s.out_channels * s.kernel_h * s.kernel_w *
                              (s.in_channels / s.groups));
  }
}

TEST(NpuPrograms, Bf16ConvInDocumentedOrder) {
  std::mt19937 rng(99);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (int it = 0; it < 10; ++it) {
    ArchConfig a = tiny_arch(it % 2 ? 4 : 8, it % 2 ? 3 : 8);
    ConvSpec s = it == 9 ? gemm_spec(17, 9, 33, NDType::bf16) : random_spec(rng, NDType::bf16);
    std::vector<uint8_t> x(size_t(s.batch * s.in_h * s.in_w * s.in_channels) * 2),
        w(size_t(s.out_channels * (s.in_channels / s.groups) * s.kernel_h * s.kernel_w) * 2);
    for (size_t i = 0; i < x.size(); i += 2) {
      uint16_t b = tessera::f32_to_bf16_bits(nd(rng));
      std::memcpy(&x[i], &b, 2);
    }
    for (size_t i = 0; i < w.size(); i += 2) {
      uint16_t b = tessera::f32_to_bf16_bits(nd(rng));
      std::memcpy(&w[i], &b, 2);
    }
    auto ld = [](const uint8_t* p) {
      uint16_t b;
      std::memcpy(&b, p, 2);
      return tessera::bf16_bits_to_f32(b);
    };
    auto ref = ref_conv<float>(s, x, w, ld);
    RunOut out = run_layer(s, a, x, w);
    std::vector<float> y(ref.size());
    ASSERT_EQ(out.y.size(), ref.size() * 4);
    std::memcpy(y.data(), out.y.data(), out.y.size());
    for (size_t i = 0; i < y.size(); ++i) ASSERT_EQ(y[i], ref[i]) << "iteration " << it << " element " << i;
    // and against a double-precision sum: within the f32 accumulation bound K * eps * sum|products|
    check_accounting(out.t);
  }
}

TEST(NpuPrograms, Int8RequantEpilogue) {
  ArchConfig a = tiny_arch(4, 4);
  ConvSpec s = gemm_spec(5, 6, 7);
  s.out_dtype = NDType::i8;
  s.out_scale = 0.125f;
  s.relu = true;
  std::mt19937 rng(5);
  std::vector<uint8_t> x(35), w(42);
  for (auto& v : x) v = uint8_t(rng());
  for (auto& v : w) v = uint8_t(rng());
  auto ref = ref_conv<int32_t>(s, x, w, [](const uint8_t* p) { return int32_t(int8_t(*p)); });
  RunOut out = run_layer(s, a, x, w);
  for (size_t i = 0; i < ref.size(); ++i) {
    float v = std::max(0.0f, float(ref[i]) * 0.125f);
    EXPECT_EQ(int8_t(out.y[i]), int8_t(std::clamp(std::nearbyint(double(v)), -128.0, 127.0))) << i;
  }
}

TEST(NpuPrograms, BadSpecsAreErrors) {
  ArchConfig a = tiny_arch(4, 4);
  ConvSpec s = gemm_spec(4, 4, 4);
  s.groups = 3;
  EXPECT_THROW(conv_program(s, a), tessera::Error);
  s = gemm_spec(4, 4, 4, NDType::f32);
  EXPECT_THROW(conv_program(s, a), tessera::Error);
  s = gemm_spec(4, 4, 4);
  s.kernel_h = 9;
  EXPECT_THROW(conv_program(s, a), tessera::Error);
  s = gemm_spec(4, 4, 4);
  EXPECT_THROW(pack_conv_weights(s, a, std::vector<uint8_t>(3)), tessera::Error);
}

TEST(NpuTiming, HandComputedSmallPrograms) {
  ArchConfig a = tiny_arch(4, 3);
  a.clock_ghz = 1.0;
  a.hbm_gbps = 1.0;  // 1 byte per cycle
  a.hbm_latency_ns = 10.0;
  a.dma_engines = 1;
  a.ub_banks = 1;
  a.ub_bank_bytes = 64;
  // LOADW: 12 bytes -> done at 10 + 12 = 22; the MXU waits 22 (weight stall), shifts 4 (R),
  // streams 5 rows, drains R + C - 2 = 5.
  Program p = assemble(
      "DMA.LOADW slot=0 src=0 rows=4 cols=3 dtype=0\nDMA.SIGNAL 0\nMXU.WAIT 0\n"
      "MXU.MATMUL acc=0 src=0 m=5 slot=0 accumulate=0\n");
  TimingResult t = simulate_timing(p, a, true);
  EXPECT_EQ(t.total_cycles, 36);
  EXPECT_EQ(t.weight_stall, 22);
  EXPECT_EQ(t.weight_shift, 4);
  EXPECT_EQ(t.array_active, 5);
  EXPECT_EQ(t.fill_drain, 5);
  EXPECT_EQ(t.macs, 60);
  EXPECT_EQ(t.hbm_bytes, 12);
  check_accounting(t);
  EXPECT_FALSE(t.trace.empty());
  // Double buffering: the second tile (done at 34) shifts in while the first one computes 30 rows
  // (26..56), so the second matmul starts right at 56 with no stall; 56 + 30 + 5 = 91.
  p = assemble(
      "DMA.LOADW slot=0 src=0 rows=4 cols=3 dtype=0\nDMA.SIGNAL 0\n"
      "DMA.LOADW slot=1 src=0 rows=4 cols=3 dtype=0\nDMA.SIGNAL 1\n"
      "MXU.WAIT 0\nMXU.MATMUL acc=0 src=0 m=30 slot=0\nMXU.WAIT 1\nMXU.MATMUL acc=0 src=0 m=30 slot=1\n");
  t = simulate_timing(p, a);
  EXPECT_EQ(t.total_cycles, 91);
  EXPECT_EQ(t.array_active, 60);
  EXPECT_EQ(t.weight_shift, 4);
  check_accounting(t);
  // Without enough compute to hide it, the second load shows as a weight stall: m = 2.
  p = assemble(
      "DMA.LOADW slot=0 src=0 rows=4 cols=3 dtype=0\nDMA.SIGNAL 0\n"
      "DMA.LOADW slot=1 src=0 rows=4 cols=3 dtype=0\nDMA.SIGNAL 1\n"
      "MXU.WAIT 0\nMXU.MATMUL acc=0 src=0 m=2 slot=0\nMXU.WAIT 1\nMXU.MATMUL acc=0 src=0 m=2 slot=1\n");
  t = simulate_timing(p, a);
  // first: 22 stall, 26..28 active; the engine is pipelined, so the second tile streams 12..24 and
  // lands at 34 -> stall 28..34, shift 34..38, active 38..40, drain to 45
  EXPECT_EQ(t.total_cycles, 45);
  EXPECT_EQ(t.weight_stall, 22 + 6);
  EXPECT_EQ(t.weight_shift, 8);
  check_accounting(t);
  // HBM contention: two engines, two 100-byte loads share the 1 B/cycle channel: 10 + 200.
  a.dma_engines = 2;
  p = assemble(
      "DMA.LOAD dst=0 src=0 n0=100 n1=1 n2=1 n3=1 cast=0\nDMA.LOAD dst=100 src=0 n0=100 n1=1 n2=1 n3=1 cast=0\n");
  EXPECT_EQ(simulate_timing(p, a).total_cycles, 210);
  // vector unit: ceil(10 / 3) = 4 cycles + ALU latency; same-bank operands double the cycles
  a.ub_banks = 4;
  a.ub_bank_bytes = 4;
  t = simulate_timing(assemble("VPU.ADD dst=0 a=4 b=8 n=10\n"), a);
  EXPECT_EQ(t.total_cycles, 4 + a.vpu_alu_latency);
  t = simulate_timing(assemble("VPU.ADD dst=0 a=0 b=16 n=10\n"), a);
  EXPECT_EQ(t.total_cycles, 8 + a.vpu_alu_latency);
  EXPECT_EQ(t.vpu_bank_conflict, 4);
  EXPECT_THROW(simulate_timing(assemble("DMA.WAIT 1\nMXU.WAIT 2\n"), a), tessera::Error);
}

TEST(NpuTiming, TpuV1WeightTiles) {
  // Jouppi et al.: a 600x600 weight matrix is 9 tiles (~18 us) on 256x256 and 4 tiles (~32 us) on
  // 512x512 at 34 GB/s, since each tile is loaded whole.
  ArchConfig a = arch_preset("tpu-v1");
  LayerProgram lp = conv_program(gemm_spec(1, 600, 600), a);
  EXPECT_EQ(lp.weight_tiles, 9);
  double us = simulate_timing(lp.program, a).seconds(a) * 1e6;
  EXPECT_NEAR(us, 18.0, 1.8);
  a.rows = a.cols = 512;
  lp = conv_program(gemm_spec(1, 600, 600), a);
  EXPECT_EQ(lp.weight_tiles, 4);
  us = simulate_timing(lp.program, a).seconds(a) * 1e6;
  EXPECT_NEAR(us, 32.0, 3.2);
  EXPECT_NEAR(arch_preset("tpu-v1").peak_ops_per_s() / 1e12, 92.0, 9.2);
}

TEST(NpuPrograms, Fp8GemmInDocumentedOrder) {
  std::mt19937 rng(3);
  for (NDType dt : {NDType::f8e4m3, NDType::f8e5m2}) {
    ArchConfig a = tiny_arch(8, 4);
    ConvSpec s = gemm_spec(13, 7, 19, dt);
    std::vector<uint8_t> x(13 * 19), w(7 * 19);
    auto rnd = [&]() {
      for (;;) {
        uint8_t b = uint8_t(rng());
        float v = dt == NDType::f8e4m3 ? tessera::Float8E4M3FN::from_bits(b).to_float()
                                       : tessera::Float8E5M2::from_bits(b).to_float();
        if (std::isfinite(v) && std::fabs(v) < 64) return b;
      }
    };
    for (auto& v : x) v = rnd();
    for (auto& v : w) v = rnd();
    auto ld = [dt](const uint8_t* p) {
      return dt == NDType::f8e4m3 ? tessera::Float8E4M3FN::from_bits(*p).to_float()
                                  : tessera::Float8E5M2::from_bits(*p).to_float();
    };
    auto ref = ref_conv<float>(s, x, w, ld);
    RunOut out = run_layer(s, a, x, w);
    std::vector<float> y(ref.size());
    std::memcpy(y.data(), out.y.data(), out.y.size());
    for (size_t i = 0; i < y.size(); ++i) ASSERT_EQ(y[i], ref[i]) << ndtype_name(dt) << " element " << i;
  }
}

TEST(NpuTiming, ResNet50DetailedIsFastAndAccounted) {
  // Every ResNet-50 layer (SCALE-Sim topology, unpadded) as a generated int8 program on tnpu-v1.
  ArchConfig a = arch_preset("tnpu-v1");
  auto layers = read_topology_csv(std::string(TESSERA_SOURCE_DIR) + "/tests/data/npu/Resnet50.csv");
  int64_t total = 0;
  double sim_s = 0;
  for (const auto& l : layers) {
    ConvSpec s = topology_conv_spec(l);
    EXPECT_EQ(s.out_h() * s.out_w(), l.gemm_m()) << l.name;
    LayerProgram lp = conv_program(s, a);
    auto t0 = std::chrono::steady_clock::now();
    TimingResult t = simulate_timing(lp.program, a);
    sim_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    check_accounting(t);
    EXPECT_EQ(t.macs, l.gemm_m() * l.gemm_n() * l.gemm_k()) << l.name;
    EXPECT_GE(t.array_active * a.rows * a.cols, t.macs) << l.name;  // no more than R*C MACs per active cycle
    total += t.total_cycles;
  }
  double rate = double(total) / sim_s;
  std::printf("ResNet-50 detailed on tnpu-v1: %lld cycles, %.3g simulated cycles/s\n", (long long)total, rate);
  EXPECT_GT(rate, 1e6);  // the target is 1e7 (measured ~1.5-3e7 on a loaded CI core); lenient here
}
