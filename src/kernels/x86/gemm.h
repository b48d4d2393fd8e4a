// f32 GEMM, BLIS-style: B packed into NR-wide column panels (or prepacked once,
// PackedB), cache blocking (KC x NC of B resident in L2, an MR x KC sliver of A
// in L1), a register-tiled micro-kernel per ISA (gemm_ukernels.def), and a fused
// epilogue (alpha, beta, bias, residual add, activation) applied to the
// accumulators before they are stored. Where the ISA has them (AVX-512), A is
// read in place by a direct-A kernel (any tile up to 6 x 64, masked edges; no A
// packing, which measured as fast or faster on every shape), small M streams
// the B panels (prepacked, or B itself) in memory order with software prefetch,
// and M = 1 over an unpacked B streams B's rows (GEMV). Threads split N (or M
// when N is narrow; K for the row-streaming GEMV) into a few tasks each.
//
//   C[M,N] = act(alpha * op(A)[M,K] * op(B)[K,N] + beta * C + bias[N] + residual[M,N])
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/thread_pool.h"

namespace tessera::kernels::x86 {

// relu and clip run inside the micro-kernels; the GELUs and SiLU (x * sigmoid(x)) (eltwise.h's, same error
// bounds) run over each row group's finished run of an NC block while it is still in L1/L2 (one call per row
// of up to NC columns: per 16-column tile, the call overhead doubled the GELU's cost). Convolutions take
// none, relu, clip, silu and hardswish, all in their tiles' registers.
enum class Activation : uint8_t { none, relu, clip, gelu_erf, gelu_tanh, silu, hardswish };

// One value through an activation: the scalar kernels' and edges' epilogue.
inline float activate(float v, Activation a, float lo, float hi) {
  switch (a) {
    case Activation::none:
      return v;
    case Activation::relu:
      return v > 0 ? v : 0;
    case Activation::clip:
      return std::min(std::max(v, lo), hi);
    case Activation::gelu_erf:
      return 0.5f * v * (1.0f + std::erf(v * 0.70710678118654752f));
    case Activation::gelu_tanh:
      return 0.5f * v * (1.0f + std::tanh(0.79788456080286536f * (v + 0.044715f * v * v * v)));
    case Activation::silu:
      return v / (1.0f + std::exp(-v));
    case Activation::hardswish:
      return v * std::max(0.0f, std::min(1.0f, v / 6.0f + 0.5f));
  }
  return v;
}

// Whether the GEMM applies `a` in a pass over finished tiles rather than in the micro-kernels.
constexpr bool activation_in_pass(Activation a) {
  return a == Activation::gelu_erf || a == Activation::gelu_tanh || a == Activation::silu ||
         a == Activation::hardswish;
}

struct GemmEpilogue {
  float alpha = 1.0f;
  float beta = 0.0f;                // multiplies C's prior contents (0: C is write-only)
  const float* bias = nullptr;      // length N, added to every row
  const float* row_bias = nullptr;  // length M, added to every column (conv: per output channel)
  const float* residual = nullptr;  // M x N, row stride ldr, added before the activation
  int64_t ldr = 0;
  Activation act = Activation::none;
  float clip_min = 0.0f, clip_max = 0.0f;
};

// Cache blocking; derived from the cache sizes by default, tunable.
struct GemmBlocking {
  int64_t kc = 0, mc = 0, nc = 0;
};
GemmBlocking default_gemm_blocking();

// B (K x N, or N x K when trans_b) packed once into the micro-kernel's panel
// layout, e.g. weights at session creation.
class PackedB {
 public:
  PackedB() = default;
  static PackedB pack(const float* b, int64_t ldb, bool trans_b, int64_t k, int64_t n);
  // Packs into caller-owned storage of packed_floats(k, n, kc_for(k, n), native_nr()) floats
  // (e.g. a graph initializer's, so the packing is not copied again).
  static void pack_into(float* dst, const float* b, int64_t ldb, bool trans_b, int64_t k, int64_t n);
  // Wraps panels packed earlier (e.g. stored as a graph initializer); `keep` owns them. `last_nr` (0: nr):
  // the last panel's stored width where it is narrower than nr (rows of last_nr floats, a multiple of 16 that
  // covers the columns past the whole panels: the conv packing's last panel) — one K block only (kc >= k).
  static PackedB view(const float* data, int64_t k, int64_t n, int64_t kc, int64_t nr,
                      std::shared_ptr<void> keep, int64_t last_nr = 0);
  // Floats a packing of K x N occupies for a micro-kernel of width nr and block kc.
  static size_t packed_floats(int64_t k, int64_t n, int64_t kc, int64_t nr);
  // Element (row p, column j) of a packing, read back (the layout, for reference kernels).
  static float at(const float* data, int64_t k, int64_t n, int64_t kc, int64_t nr, int64_t p, int64_t j);
  // The micro-kernel width and K block this CPU packs for; a B of few columns is packed in deeper K
  // blocks (kc_for, as the GEMM blocks an unpacked one).
  static int64_t native_nr();
  static int64_t native_kc();
  static int64_t kc_for(int64_t k, int64_t n);
  int64_t k() const { return k_; }
  int64_t n() const { return n_; }
  int64_t kc() const { return kc_; }
  int64_t nr() const { return nr_; }
  // The row stride of the last panel (nr unless view() was given a narrower one).
  int64_t last_nr() const { return last_nr_ > 0 ? last_nr_ : nr_; }
  size_t bytes() const { return size_; }
  const float* data() const { return data_.get(); }

 private:
  int64_t k_ = 0, n_ = 0, kc_ = 0, nr_ = 0, last_nr_ = 0;
  size_t size_ = 0;
  std::shared_ptr<const float> data_;  // [ceil(K/kc)] blocks of [ceil(N/nr)] panels of kc x nr
};

void sgemm(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, bool trans_a, const float* b,
           int64_t ldb, bool trans_b, float* c, int64_t ldc, const GemmEpilogue& ep = {},
           ThreadPool* pool = nullptr);

void sgemm_packed(int64_t m, const float* a, int64_t lda, bool trans_a, const PackedB& b, float* c,
                  int64_t ldc, const GemmEpilogue& ep = {}, ThreadPool* pool = nullptr);

// One level of Strassen-Winograd over a B packed once (weights): 7 products of the quadrants instead of 8,
// 12.5% fewer FLOPs, for products the FMA peak bounds (M of 128+ with K and N of 256+ adding to 768+, or
// fewer rows of a large B; see worthwhile). B's quadrants and the sums the algorithm needs (T1 = B12 - B11,
// T2 = B22 - T1, T3 = B22 - B12, T4 = T2 - B21) are packed at pack(): 7/4 of B's floats. A's sums are formed
// per call. The rounding differs from the classical product's (sums of quadrants are rounded before they are
// multiplied): measured 1-3e-6 of the output's largest magnitude at K = 768-3072, against ~1e-6 classically.
class StrassenB {
 public:
  StrassenB() = default;
  // K and N even (checked).
  static StrassenB pack(const float* b, int64_t ldb, bool trans_b, int64_t k, int64_t n);
  // The same into caller-owned storage of packed_floats(k, n, kc_for(k, n), PackedB::native_nr()) floats (a
  // graph initializer): the 7 pieces one after another, each a PackedB of K/2 x N/2.
  static void pack_into(float* dst, const float* b, int64_t ldb, bool trans_b, int64_t k, int64_t n);
  // Wraps pieces packed earlier; `keep` owns them.
  static StrassenB view(const float* data, int64_t k, int64_t n, int64_t kc, int64_t nr,
                        std::shared_ptr<void> keep);
  static size_t packed_floats(int64_t k, int64_t n, int64_t kc, int64_t nr);
  static int64_t kc_for(int64_t k, int64_t n) { return PackedB::kc_for(k / 2, n / 2); }
  // B's element (p, j) read back from a packing (reference kernels): B12 as T1 + B11, within an ulp of it.
  static float at(const float* data, int64_t k, int64_t n, int64_t kc, int64_t nr, int64_t p, int64_t j);
  // Whether an M x K x N product is large enough to gain (each of the 7 products runs at the classical
  // kernel's speed, and the sums of A and of the partial products cost a few percent).
  static bool worthwhile(int64_t m, int64_t k, int64_t n);
  int64_t k() const { return k_; }
  int64_t n() const { return n_; }
  // B11, B21, B22, T1, T2, T3, T4, each K/2 x N/2
  const PackedB& piece(int i) const { return pieces_[size_t(i)]; }

 private:
  int64_t k_ = 0, n_ = 0;
  std::vector<PackedB> pieces_;
};
// C = act(alpha * op(A) * B + beta * C + bias + row_bias + residual), as sgemm_packed, through StrassenB.
void sgemm_strassen(int64_t m, const float* a, int64_t lda, bool trans_a, const StrassenB& b, float* c,
                    int64_t ldc, const GemmEpilogue& ep = {}, ThreadPool* pool = nullptr);
// Weights for the memory-bound products (M of one row per batch item: a decoder's step, a classifier) coded
// losslessly in 28 bits a float instead of 32, so that a GEMV reads 12.5% fewer bytes from memory. The
// layout is PackedB's (K blocks of kc rows, 64-wide panels), each row of a panel a 224-byte record: the low
// three bytes of its 64 floats (mantissa and the exponent's lowest bit), then 32 bytes of 4-bit codes of
// their top bytes (sign and seven exponent bits) into a table of the 15 commonest top bytes of the matrix.
// Code 15 decodes to +0 and marks an escape: a float whose top byte is not in the table (~3e-4 of Gaussian
// weights), kept exactly in a list per block and panel and added to the sums after the panel's K loop.
// Decoding (AVX-512 VBMI: a vpermd of the table merged with a vpermb of the low bytes) costs less than
// the bytes it saves where the weights come from memory. Numerics: the weights are exact; escapes are
// summed after the rest of their K block (another summation order, within rounding).
struct CodedEscape {
  uint16_t row;  // within its K block
  uint8_t col;   // within its panel
  uint8_t pad;
  float value;
};
class CodedB {
 public:
  static constexpr int64_t kNr = 64, kRowBytes = 224, kHeaderBytes = 128;
  struct Plan {
    uint32_t table[16] = {};  // top byte << 24 per code; code 15: 0
    uint8_t code[256] = {};   // code per top byte (15: escape)
    int64_t escapes = 0;
    int64_t kc = 0;
    size_t bytes = 0;
  };
  CodedB() = default;
  // Whether this CPU runs coded weights (AVX-512 VBMI and the 64-wide micro-kernel).
  static bool available();
  // The table and the escape count of B (K x N, or N x K when trans_b): one pass over it.
  static Plan plan(const float* b, int64_t ldb, bool trans_b, int64_t k, int64_t n);
  // Whether coding B pays: available, and at most one weight in 1024 escapes the table.
  static bool worthwhile(const Plan& plan, int64_t k, int64_t n);
  // Codes B into caller-owned storage of plan.bytes bytes (e.g. a graph initializer).
  static void pack_into(uint8_t* dst, const Plan& plan, const float* b, int64_t ldb, bool trans_b, int64_t k,
                        int64_t n);
  // Plans and codes into storage of its own (tests, benchmarks).
  static CodedB pack(const float* b, int64_t ldb, bool trans_b, int64_t k, int64_t n);
  // Wraps a coding made earlier; checks its header and size against K, N and kc (an error, not a crash,
  // for a damaged one). `keep` owns the bytes.
  static CodedB view(const uint8_t* data, size_t bytes, int64_t k, int64_t n, int64_t kc,
                     std::shared_ptr<void> keep);
  // Bytes of a coding with `escapes` escapes.
  static size_t bytes_for(int64_t k, int64_t n, int64_t kc, int64_t escapes);
  // B's element (p, j) decoded from a coding (reference kernels).
  static float at(const uint8_t* data, size_t bytes, int64_t k, int64_t n, int64_t kc, int64_t p, int64_t j);
  float at(int64_t p, int64_t j) const;  // the same through a view made once
  int64_t k() const { return k_; }
  int64_t n() const { return n_; }
  int64_t kc() const { return kc_; }
  int64_t panels() const { return (n_ + kNr - 1) / kNr; }
  size_t bytes() const { return bytes_; }
  int64_t escapes() const { return escapes_; }
  const uint32_t* table() const { return table_; }
  // Rows of panel j of the K block starting at row pc (consecutive panels of a block are adjacent).
  const uint8_t* panel(int64_t pc, int64_t j) const;
  // Per panel of the K block at pc, from panel j on: where its escapes start (and end: the next entry).
  const uint32_t* escape_index(int64_t pc, int64_t j) const;
  const CodedEscape* escape_list() const { return esc_; }
  // Rows [0, kcb) of whole panels [j0, j0 + count) of the block at pc decoded into PackedB's panel layout
  // (kcb x 64 floats each), escapes included: exactly the weights.
  void decode_panels(int64_t pc, int64_t j0, int64_t count, float* dst) const;

 private:
  const uint8_t* data_ = nullptr;
  size_t bytes_ = 0;
  int64_t k_ = 0, n_ = 0, kc_ = 0, escapes_ = 0;
  const uint32_t* table_ = nullptr;
  const uint32_t* index_ = nullptr;
  const CodedEscape* esc_ = nullptr;
  std::shared_ptr<const uint8_t> keep_;
};
// C = act(alpha * op(A) * B + beta * C + bias + row_bias + residual), as sgemm_packed, over coded weights.
// One row streams the coded panels through a decoding GEMV (four panels at once); up to 32 rows decode each
// panel row in registers once per group of rows (6 over a whole panel, 12 over each half); more decode a few
// panels at a time into PackedB's layout for its kernel. Against the same product over PackedB (Zen 4 VM,
// GPT-2's decode matrices from memory): 1-6 rows 0.67-0.92x the time, 8-32 rows 1.2-1.5x (the decoding,
// which shares the FP pipes with the FMAs, no longer hides behind memory), 64 rows 1.14x.
void sgemm_coded(int64_t m, const float* a, int64_t lda, bool trans_a, const CodedB& b, float* c, int64_t ldc,
                 const GemmEpilogue& ep = {}, ThreadPool* pool = nullptr);
// y[i] = act(y[i]) for i < n, as the GEMM epilogue applies it (for callers that add something first).
void gemm_apply_activation(Activation act, float clip_min, float clip_max, float* y, int64_t n,
                           ThreadPool* pool = nullptr);

// Runs with a named micro-kernel (tests and benchmarks); false if this CPU lacks its ISA.
bool sgemm_with(const std::string& ukr, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
                bool trans_a, const float* b, int64_t ldb, bool trans_b, float* c, int64_t ldc,
                const GemmEpilogue& ep = {}, ThreadPool* pool = nullptr);
// Names: every micro-kernel in gemm_ukernels.def, then its direct-A companions. Naming a
// packed kernel forces the packed-A path; naming a direct one forces the direct-A path.
std::vector<std::string> sgemm_kernel_names();

// Name of the micro-kernel this CPU uses (e.g. "f32_gemm_ukr_6x64__avx512f").
std::string sgemm_kernel_name();

// ---- micro-kernel interface (used by the ISA files) ----
// Computes acc = sum_p a[p*MR + i] * b[p*NR + j] over p < kc, then
//   c[i*ldc + j] = post(acc * 1 + beta * c)   for i < mr, j < nr
// where the A sliver already carries alpha; `ep_last` tells whether this is the
// last K block (apply bias / residual / activation) — nullptr otherwise.
struct UkrEpilogue {
  const float* bias;      // already offset to this tile's first column, or nullptr
  const float* row_bias;  // already offset to this tile's first row, or nullptr
  const float* residual;  // already offset to this tile, or nullptr
  int64_t ldr;
  Activation act;
  float clip_min, clip_max;
};
// ep for the tile at (row, col) of the one ep describes at (0, 0), in e (nullptr stays nullptr)
inline const UkrEpilogue* offset_epilogue(const UkrEpilogue* ep, UkrEpilogue& e, int64_t row, int64_t col) {
  if (!ep) return nullptr;
  e = *ep;
  if (e.bias) e.bias += col;
  if (e.row_bias) e.row_bias += row;
  if (e.residual) e.residual += row * e.ldr + col;
  return &e;
}
// The micro-kernel epilogue of the tile whose first element is C(row, col): ep's operands offset to it,
// with the activations left to a pass over the finished tile (activation_in_pass) taken out.
inline UkrEpilogue tile_epilogue(const GemmEpilogue& ep, int64_t row, int64_t col) {
  return {ep.bias ? ep.bias + col : nullptr,
          ep.row_bias ? ep.row_bias + row : nullptr,
          ep.residual ? ep.residual + row * ep.ldr + col : nullptr,
          ep.ldr,
          activation_in_pass(ep.act) ? Activation::none : ep.act,
          ep.clip_min,
          ep.clip_max};
}
// x rounded up to a multiple of m (m > 0)
constexpr int64_t round_up(int64_t x, int64_t m) {
  return (x + m - 1) / m * m;
}
using GemmUkr = void (*)(int64_t kc, const float* a, const float* b, float* c, int64_t ldc, int64_t mr,
                         int64_t nr, float beta, const UkrEpilogue* ep);

// Direct-A micro-kernel: the same tile product with A read in place (element
// (i, p) at a[i*rs_a + p*cs_a]) and row p of the B panel at b + p*ldb; any
// mr <= MR, nr <= NR (masked), and c = post(alpha * acc + beta * c).
// Prefetch: with pf = nullptr, row p prefetches into L1 a fixed distance ahead of
// b along the panel; otherwise row p prefetches into L2 the NR floats at
// pf + p * pf_step bytes, so a caller can pace the warming of the next panel
// over all the tiles that read this one; pf != nullptr with pf_step = 0 issues no
// software prefetch (a lone row group streaming B: the hardware prefetcher does better alone).
// pf_l1 (with pf != nullptr): also prefetch this panel into L1 ahead of the loads, as with pf = nullptr
// (a panel longer than L1 holds, which every row group re-reads from L2).
using GemmUkrDirect = void (*)(int64_t kc, const float* a, int64_t rs_a, int64_t cs_a, const float* b,
                               int64_t ldb, const float* pf, int64_t pf_step, bool pf_l1, float* c,
                               int64_t ldc, int64_t mr, int64_t nr, float alpha, float beta,
                               const UkrEpilogue* ep);

// Direct-A tile over B read in place (row p at b + p * ldb, not transposed) that also writes each row of the
// panel it reads to packed + p * NR (NR floats, zero past nr): the first row group of a block packs the
// panels for the others while it computes. Prefetches B into L1 along its rows.
using GemmUkrDirectPack = void (*)(int64_t kc, const float* a, int64_t rs_a, int64_t cs_a, const float* b,
                                   int64_t ldb, float* packed, float* c, int64_t ldc, int64_t mr, int64_t nr,
                                   float alpha, float beta, const UkrEpilogue* ep);

// GEMV for M = 1 over an unpacked row-major B: y[0:n] = sum_p x[p*incx] * b[p*ldb + 0:n].
using GemvRows = void (*)(int64_t k, const float* x, int64_t incx, const float* b, int64_t ldb, int64_t n,
                          float* y);

// M = 1 over npanels whole prepacked panels (rows of the kernel's NR floats, panels pstride floats apart):
// c[0 : npanels * NR] (+)= alpha * sum_p a[p * cs_a] * panel row p, then beta and ep as the direct kernel.
using GemvPanels = void (*)(int64_t kc, const float* a, int64_t cs_a, const float* b, int64_t pstride,
                            int64_t npanels, float* c, float alpha, float beta, const UkrEpilogue* ep);

// M = 1 over a transposed unpacked B: y[j] = sum_p x[p] * b[j * ldb + p], j < n (x contiguous).
using GemvDots = void (*)(int64_t k, const float* x, const float* b, int64_t ldb, int64_t n, float* y);

// The decoding kernels (avx512vbmi/): npanels whole panels of one K block (kc rows, records panel after
// panel) against one row of A: c[0 : npanels * 64] (+)= alpha * (a . panel + escapes), then beta and ep as
// GemvPanels (act none, relu or clip); esc_index as CodedB::escape_index, entries clamped to esc_total.
void f32_gemv_coded_64__avx512vbmi(int64_t kc, const float* a, int64_t cs_a, const uint8_t* b,
                                   int64_t npanels, const uint32_t* table, const uint32_t* esc_index,
                                   const CodedEscape* esc, int64_t esc_total, float* c, float alpha,
                                   float beta, const UkrEpilogue* ep);
// m rows of A (rows lda apart, contiguous along K) against npanels whole panels of one K block: c (rows ldc
// apart) (+)= alpha * (A . panel + escapes), then beta and ep (bias, row_bias, residual offset to c's first
// row and column; act none, relu or clip).
void f32_gemm_coded_rows_64__avx512vbmi(int64_t m, int64_t kc, const float* a, int64_t lda, const uint8_t* b,
                                        int64_t npanels, const uint32_t* table, const uint32_t* esc_index,
                                        const CodedEscape* esc, int64_t esc_total, float* c, int64_t ldc,
                                        float alpha, float beta, const UkrEpilogue* ep);
// Codes one panel row: w[0 : valid] (the rest padding) into rec (kRowBytes) with code_of (256 entries, 15:
// escape); the escapes, in column order, into esc (64 at most) with their row; returns how many.
int64_t f32_code_row__avx512vbmi(const float* w, int64_t valid, const uint8_t* code_of, uint8_t* rec,
                                 CodedEscape* esc, uint16_t row);
// rows x 64 coded floats (records as above) into dst (rows x 64 floats); escapes decode to +0.
void f32_decode_coded_rows__avx512vbmi(const uint8_t* rec, int64_t rows, const uint32_t* table, float* dst);

// A whole row group (MR rows of A in place, as the direct kernel reads them) against npanels whole NR-wide B
// panels (row p of panel j at b + j * pstride + p * ldb) in one call: c = post(acc + beta * c) with alpha 1,
// ep (no row_bias; act none, Relu or Clip) offset per panel by the caller's first column. The direct
// kernel's call, set-up and branches, once per 16 columns, cost a few percent of a 256-deep K block.
using GemmTiles = void (*)(int64_t kc, const float* a, int64_t rs_a, int64_t cs_a, const float* b,
                           int64_t ldb, int64_t pstride, int64_t npanels, float* c, int64_t ldc, float beta,
                           const UkrEpilogue* ep);

#define GEMM_UKR_GEMV_T(ukr, name) \
  void name(int64_t k, const float* x, const float* b, int64_t ldb, int64_t n, float* y);
#define GEMM_UKR_PANELS(ukr, name)                                                                      \
  void name(int64_t kc, const float* a, int64_t cs_a, const float* b, int64_t pstride, int64_t npanels, \
            float* c, float alpha, float beta, const UkrEpilogue* ep);
#define GEMM_UKR_TILES(ukr, name)                                                                \
  void name(int64_t kc, const float* a, int64_t rs_a, int64_t cs_a, const float* b, int64_t ldb, \
            int64_t pstride, int64_t npanels, float* c, int64_t ldc, float beta, const UkrEpilogue* ep);
#define GEMM_UKR_DIRECT_PACK(ukr, name)                                                            \
  void name(int64_t kc, const float* a, int64_t rs_a, int64_t cs_a, const float* b, int64_t ldb,   \
            float* packed, float* c, int64_t ldc, int64_t mr, int64_t nr, float alpha, float beta, \
            const UkrEpilogue* ep);
#define GEMM_UKR_GEMV(ukr, name) \
  void name(int64_t k, const float* x, int64_t incx, const float* b, int64_t ldb, int64_t n, float* y);
#define GEMM_UKR(name, isa, MR, NR)                                                                    \
  void name(int64_t kc, const float* a, const float* b, float* c, int64_t ldc, int64_t mr, int64_t nr, \
            float beta, const UkrEpilogue* ep);
#define GEMM_UKR_DIRECT(ukr, name)                                                                       \
  void name(int64_t kc, const float* a, int64_t rs_a, int64_t cs_a, const float* b, int64_t ldb,         \
            const float* pf, int64_t pf_step, bool pf_l1, float* c, int64_t ldc, int64_t mr, int64_t nr, \
            float alpha, float beta, const UkrEpilogue* ep);
#include "kernels/x86/gemm_ukernels.def"
#undef GEMM_UKR

// Scalar finish of one tile (edges and the portable kernel share it).
void ukr_store_tile(const float* acc, int64_t acc_ld, float* c, int64_t ldc, int64_t mr, int64_t nr,
                    float beta, const UkrEpilogue* ep);

}  // namespace tessera::kernels::x86
