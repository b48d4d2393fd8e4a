// NPU ISA: encoding round trip, assembler/disassembler, generated docs, and each instruction's
// functional semantics (including faults that must stop with an error naming the instruction).
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <set>
#include <sstream>

#include "core/error.h"
#include "core/float_types.h"
#include "npu/isa/isa.h"
#include "npu/sim/functional.h"

using namespace tessera::npu;

TEST(NpuIsa, TableIsConsistent) {
  std::set<uint16_t> opcodes;
  std::set<std::string> names;
  for (const auto& o : isa_table()) {
    EXPECT_TRUE(opcodes.insert(o.opcode).second) << o.mnemonic;
    EXPECT_TRUE(names.insert(o.mnemonic).second) << o.mnemonic;
    EXPECT_LE(o.fields.size(), size_t(kMaxFields));
    std::string m = o.mnemonic;
    EXPECT_EQ(m.rfind(std::string(unit_name(o.unit)) + ".", 0), 0u) << m;  // UNIT.OP[.MOD]
    EXPECT_EQ(op_by_mnemonic(m), &o);
  }
}

TEST(NpuIsa, EncodeDecodeAsmDisasmRoundTrip) {
  std::mt19937 rng(7);
  Program p;
  for (int rep = 0; rep < 20; ++rep)
    for (const auto& o : isa_table()) {
      Instr in;
      in.op = o.op;
      for (size_t k = 0; k < o.fields.size(); ++k) {
        uint32_t v = rng();
        if (o.fields[k].kind == 'f') v = std::bit_cast<uint32_t>(float(int(rng() % 2001) - 1000) / 64.0f);
        if (rep % 3 == 0 && o.fields[k].kind == 'f') v = rng();  // any bit pattern, NaNs included
        in.f[k] = v;
      }
      p.push_back(in);
    }
  EXPECT_EQ(decode(encode(p)), p);
  EXPECT_EQ(decode_file(encode_file(p)), p);
  std::string text = disassemble(p);
  Program q = assemble(text);
  EXPECT_EQ(q, p);
  EXPECT_EQ(disassemble(q), text);
}

TEST(NpuIsa, AssemblerForms) {
  Program p = assemble(
      "# comment\n"
      "DMA.LOAD dst=16 src=0x20 n0=4 n1=1 n2=1 n3=1 cast=0x303 ; trailing comment\n"
      "vpu.add 0, 4, 8, 2\n"
      "VPU.REQUANT dst=0 src=0 n=1 scale=0.5 zp=-3 in_dtype=2\n"
      "\n"
      "CTL.HALT\n");
  ASSERT_EQ(p.size(), 4u);
  EXPECT_EQ(p[0].op, Op::dma_load);
  EXPECT_EQ(p[0].u(1), 0x20u);
  EXPECT_EQ(p[0].u(14), 0x303u);
  EXPECT_EQ(p[1].op, Op::vpu_add);
  EXPECT_EQ(p[1].u(3), 2u);
  EXPECT_EQ(p[2].fl(3), 0.5f);
  EXPECT_EQ(p[2].s(4), -3);
  auto bad = [](const char* s) {
    try {
      assemble(s);
    } catch (const tessera::Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(bad("\nFOO.BAR 1\n").find("line 2"), std::string::npos);
  EXPECT_NE(bad("VPU.ADD 1 2 3 4 5").find("fields"), std::string::npos);
  EXPECT_NE(bad("VPU.ADD dst=x").find("bad value"), std::string::npos);
  EXPECT_NE(bad("VPU.ADD nope=1").find("no field"), std::string::npos);
  EXPECT_NE(bad("VPU.ADD dst=-1").find("bad value"), std::string::npos);
  EXPECT_NE(bad("VPU.ADD dst=1 dst=2").find("twice"), std::string::npos);
  EXPECT_THROW(decode({0x1234u}), tessera::Error);
  EXPECT_THROW(decode({0x00050001u}), tessera::Error);  // DMA.LOAD with a wrong field count
  EXPECT_THROW(decode({0x000F0001u, 1, 2}), tessera::Error);  // truncated
  EXPECT_THROW(decode_file({'X', 'N', 'P', 'U', 1, 0, 0, 0, 0, 0, 0, 0}), tessera::Error);
}

TEST(NpuIsa, DocsAreGeneratedFromTheTable) {
  std::string path = std::string(TESSERA_SOURCE_DIR) + "/docs/npu-isa.md";
  std::string gen = isa_markdown();
  if (std::getenv("TESSERA_UPDATE_DOCS")) std::ofstream(path) << gen;
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  EXPECT_EQ(ss.str(), gen) << "docs/npu-isa.md is stale: run `tessera npu isa-doc > docs/npu-isa.md`";
  for (const auto& o : isa_table()) EXPECT_NE(gen.find(o.mnemonic), std::string::npos);
}

namespace {
ArchConfig small_arch() {
  ArchConfig a;
  a.name = "test";
  a.rows = 4;
  a.cols = 3;
  a.ub_bytes = 4096;
  a.acc_bytes = 16 * 3 * 4;  // 16 rows
  a.weight_slots = 2;
  a.hbm_bytes = 1 << 20;
  a.vector_lanes = 4;
  return a;
}
void put_f(std::vector<uint8_t>& m, size_t at, float v) { std::memcpy(m.data() + at, &v, 4); }
float get_f(const std::vector<uint8_t>& m, size_t at) {
  float v;
  std::memcpy(&v, m.data() + at, 4);
  return v;
}
std::string run_error(Machine& m, const std::string& text) {
  try {
    m.run(assemble(text));
  } catch (const tessera::Error& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST(NpuSim, DmaLoadPaddingCastAndStore) {
  Machine m(small_arch(), 1024);
  for (int i = 0; i < 16; ++i) m.hbm()[size_t(i)] = uint8_t(i + 1);  // a 4x4 int8 image
  // a 3x3 window at (-1,-1) with stride 1: zero padding on the fly, cast int8 -> f32
  m.run(assemble("DMA.LOAD dst=0 src=0 n0=3 n1=1 n2=3 n3=1 xs=0 ys=1 pitch=4 xo=-1 xl=4 yo=-1 yl=4 cast=0x300\n"));
  float want[9] = {0, 0, 0, 0, 1, 2, 0, 5, 6};
  for (int i = 0; i < 9; ++i) EXPECT_EQ(get_f(m.ub(), size_t(i) * 4), want[i]) << i;
  // strided x (xs) picks every other column; store back with a pitch
  m.run(assemble("DMA.LOAD dst=100 src=0 n0=1 n1=2 n2=2 n3=1 xs=2 ys=2 pitch=4 cast=0\n"
                 "DMA.STORE dst=200 src=100 n0=2 n1=2 n2=1 p1=10 dtype=0\n"));
  EXPECT_EQ(m.ub()[100], 1);
  EXPECT_EQ(m.ub()[101], 3);
  EXPECT_EQ(m.ub()[102], 9);
  EXPECT_EQ(m.ub()[103], 11);
  EXPECT_EQ(m.hbm()[200], 1);
  EXPECT_EQ(m.hbm()[201], 3);
  EXPECT_EQ(m.hbm()[210], 9);
  EXPECT_EQ(m.hbm()[211], 11);
  // f32 -> bf16 rounds to nearest even
  put_f(m.hbm(), 300, 1.00390625f);  // 1 + 2^-8: halfway between bf16 1.0 and 1.0078125 -> even (1.0)
  m.run(assemble("DMA.LOAD dst=0 src=300 n0=1 n1=1 n2=1 n3=1 cast=0x403\n"));
  EXPECT_EQ(m.ub()[0] | (m.ub()[1] << 8), 0x3F80);
}

TEST(NpuSim, MatmulInt8AccumulateAndAccmov) {
  ArchConfig a = small_arch();
  Machine m(a, 1024);
  // weight tile R x C = 4 x 3 int8 at HBM 0, live 2 x 3
  int8_t w[4][3] = {{1, 2, 3}, {-4, 5, -6}, {0, 0, 0}, {0, 0, 0}};
  std::memcpy(m.hbm().data(), w, 12);
  int8_t A[2][2] = {{7, -8}, {127, -128}};
  std::memcpy(m.hbm().data() + 64, A, 4);
  m.run(assemble(
      "DMA.LOAD dst=0 src=64 n0=4 n1=1 n2=1 n3=1 cast=0\n"
      "DMA.LOADW slot=1 src=0 rows=2 cols=3 dtype=0\n"
      "DMA.SIGNAL 0\nMXU.WAIT 0\n"
      "MXU.MATMUL acc=2 src=0 m=2 slot=1 accumulate=0\n"
      "MXU.MATMUL acc=2 src=0 m=2 slot=1 accumulate=1\n"
      "MXU.SIGNAL 1\nVPU.WAIT 1\n"
      "VPU.ACCMOV dst=512 acc=2 rows=2 cols=3 in_dtype=2 out_dtype=2 scale=1\n"
      "VPU.ACCMOV dst=600 acc=2 rows=2 cols=3 in_dtype=2 out_dtype=0 scale=0.25 zp=1 act=1\n"));
  int32_t out[6];
  std::memcpy(out, m.ub().data() + 512, 24);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j) EXPECT_EQ(out[i * 3 + j], 2 * (A[i][0] * w[0][j] + A[i][1] * w[1][j])) << i << j;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j) {
      double v = std::max(0.0, out[i * 3 + j] * 0.25);
      double q = std::clamp(std::nearbyint(v) + 1, -128.0, 127.0);
      EXPECT_EQ(int8_t(m.ub()[600 + size_t(i) * 3 + size_t(j)]), int8_t(q));
    }
}

TEST(NpuSim, MatmulBf16AccumulationOrder) {
  Machine m(small_arch(), 1024);
  auto bf = [](float x) { return tessera::f32_to_bf16_bits(x); };
  uint16_t w[4][3] = {};
  float wv[4] = {1.0f, 1.0f, 1.0f, 1.0f};
  for (int k = 0; k < 4; ++k) w[k][0] = bf(wv[k]);
  std::memcpy(m.hbm().data(), w, sizeof w);
  // 2^24, 1, 1, -2^24: in k order the ones are lost to rounding; result 0 (not 2)
  uint16_t A[4] = {bf(16777216.0f), bf(1.0f), bf(1.0f), bf(-16777216.0f)};
  std::memcpy(m.hbm().data() + 64, A, 8);
  m.run(assemble("DMA.LOAD dst=0 src=64 n0=4 n1=1 n2=1 n3=1 cast=0x404\n"
                 "DMA.LOADW slot=0 src=0 rows=4 cols=1 dtype=4\n"
                 "MXU.MATMUL acc=0 src=0 m=1 slot=0 accumulate=0\n"
                 "VPU.ACCMOV dst=100 acc=0 rows=1 cols=1 in_dtype=3 out_dtype=3 scale=1\n"));
  EXPECT_EQ(get_f(m.ub(), 100), 0.0f);
}

TEST(NpuSim, VectorOps) {
  Machine m(small_arch(), 64);
  float a[4] = {1.0f, -2.0f, 0.5f, NAN}, b[4] = {3.0f, 4.0f, -1.0f, 1.0f};
  std::memcpy(m.ub().data(), a, 16);
  std::memcpy(m.ub().data() + 16, b, 16);
  m.run(assemble("VPU.ADD 32 0 16 4\nVPU.SUB 48 0 16 4\nVPU.MUL 64 0 16 4\nVPU.MAX 80 0 16 4\nVPU.MIN 96 0 16 4\n"
                 "VPU.EXP 112 0 3\nVPU.TANH 128 0 3\nVPU.ERF 144 0 3\nVPU.RSQRT 160 16 1\nVPU.RECIP 164 16 2\n"
                 "VPU.RELU 176 0 4\nVPU.REDUCE.SUM 192 16 4\nVPU.REDUCE.MAX 196 0 4\nVPU.REDUCE.MAX 200 16 4\n"
                 "VPU.CAST dst=208 src=0 n=3 cast=0x203\n"
                 "VPU.REQUANT dst=224 src=16 n=4 scale=40 zp=2 in_dtype=3\n"));
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(get_f(m.ub(), 32 + 4 * size_t(i)), a[i] + b[i]);
    EXPECT_EQ(get_f(m.ub(), 48 + 4 * size_t(i)), a[i] - b[i]);
    EXPECT_EQ(get_f(m.ub(), 64 + 4 * size_t(i)), a[i] * b[i]);
    EXPECT_EQ(get_f(m.ub(), 80 + 4 * size_t(i)), std::max(a[i], b[i]));
    EXPECT_EQ(get_f(m.ub(), 96 + 4 * size_t(i)), std::min(a[i], b[i]));
    EXPECT_EQ(get_f(m.ub(), 112 + 4 * size_t(i)), std::exp(a[i]));
    EXPECT_EQ(get_f(m.ub(), 128 + 4 * size_t(i)), std::tanh(a[i]));
    EXPECT_EQ(get_f(m.ub(), 144 + 4 * size_t(i)), std::erf(a[i]));
  }
  EXPECT_TRUE(std::isnan(get_f(m.ub(), 80 + 12)));  // max with NaN is NaN
  EXPECT_TRUE(std::isnan(get_f(m.ub(), 96 + 12)));
  EXPECT_EQ(get_f(m.ub(), 160), 1.0f / std::sqrt(3.0f));
  EXPECT_EQ(get_f(m.ub(), 164), 1.0f / 3.0f);
  EXPECT_EQ(get_f(m.ub(), 168), 0.25f);
  EXPECT_EQ(get_f(m.ub(), 176), 1.0f);
  EXPECT_EQ(get_f(m.ub(), 180), 0.0f);
  EXPECT_TRUE(std::isnan(get_f(m.ub(), 188)));
  EXPECT_EQ(get_f(m.ub(), 192), 7.0f);
  EXPECT_TRUE(std::isnan(get_f(m.ub(), 196)));
  EXPECT_EQ(get_f(m.ub(), 200), 4.0f);
  int32_t c[3];
  std::memcpy(c, m.ub().data() + 208, 12);
  EXPECT_EQ(c[0], 1);
  EXPECT_EQ(c[1], -2);
  EXPECT_EQ(c[2], 0);  // 0.5 rounds half to even
  EXPECT_EQ(int8_t(m.ub()[224]), 122);   // 3*40 + 2
  EXPECT_EQ(int8_t(m.ub()[225]), 127);   // saturates
  EXPECT_EQ(int8_t(m.ub()[226]), -38);   // -40 + 2
}

TEST(NpuSim, FaultsNameTheInstruction) {
  Machine m(small_arch(), 256);
  std::string e = run_error(m, "VPU.ADD 0 0 0 1\nDMA.LOAD dst=0 src=250 n0=16 n1=1 n2=1 n3=1 cast=0\n");
  EXPECT_NE(e.find("#1 DMA.LOAD"), std::string::npos) << e;
  EXPECT_NE(e.find("HBM"), std::string::npos) << e;
  e = run_error(m, "DMA.LOAD dst=4090 src=0 n0=16 n1=1 n2=1 n3=1 cast=0\n");
  EXPECT_NE(e.find("#0 DMA.LOAD"), std::string::npos) << e;
  EXPECT_NE(e.find("unified buffer"), std::string::npos) << e;
  e = run_error(m, "MXU.MATMUL acc=0 src=0 m=1 slot=0\n");
  EXPECT_NE(e.find("never loaded"), std::string::npos) << e;
  e = run_error(m, "DMA.LOADW slot=5 src=0 rows=1 cols=1\n");
  EXPECT_NE(e.find("#0 DMA.LOADW"), std::string::npos) << e;
  e = run_error(m, "DMA.LOADW slot=0 src=0 rows=1 cols=1\nMXU.MATMUL acc=15 src=0 m=2 slot=0\n");
  EXPECT_NE(e.find("#1 MXU.MATMUL"), std::string::npos) << e;
  EXPECT_NE(e.find("accumulator"), std::string::npos) << e;
  e = run_error(m, "VPU.ACCMOV dst=0 acc=0 rows=1 cols=1 in_dtype=9 out_dtype=2\n");
  EXPECT_NE(e.find("dtype"), std::string::npos) << e;
  e = run_error(m, "DMA.WAIT 3\nMXU.WAIT 4\nVPU.SIGNAL 5\n");
  EXPECT_NE(e.find("deadlock"), std::string::npos) << e;
  EXPECT_NE(e.find("#0 DMA.WAIT"), std::string::npos) << e;
  EXPECT_NE(e.find("#1 MXU.WAIT"), std::string::npos) << e;
  e = run_error(m, "DMA.SIGNAL 99\n");
  EXPECT_NE(e.find("#0 DMA.SIGNAL"), std::string::npos) << e;
  e = run_error(m, "DMA.LOAD dst=0 src=0 n0=4294967295 n1=4294967295 n2=4294967295 n3=4294967295 cast=0\n");
  EXPECT_NE(e.find("out of bounds"), std::string::npos) << e;
  // semaphores order the queues: the VPU waits for the DMA even though it comes first in the VPU queue
  Machine ok(small_arch(), 256);
  ok.hbm()[0] = 5;
  EXPECT_NO_THROW(ok.run(assemble("VPU.WAIT 0\nVPU.CAST dst=8 src=0 n=1 cast=0x300\nDMA.LOAD dst=0 src=0 n0=1 n1=1 n2=1 n3=1 cast=0\nDMA.SIGNAL 0\nCTL.HALT\nVPU.WAIT 9\n")));
  EXPECT_EQ(get_f(ok.ub(), 8), 5.0f);
}
