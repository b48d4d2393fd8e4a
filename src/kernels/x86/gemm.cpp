// f32 GEMM driver: blocking, packing, threading and micro-kernel dispatch.
//
// Loop nest (BLIS's five loops, with the order of the two inner ones swapped so
// that the MR x KC sliver of A stays in L1 while the NR-wide panels of B stream
// from L2):
//   jc over N by NC        -> each thread owns a range of N (its B block lives in its L2)
//     pc over K by KC      -> pack B[KC x NC] into NR-wide panels
//       ic over M by MC    -> pack alpha * A[MC x KC] into MR-high slivers
//         ir over MC by MR
//           jr over NC by NR -> micro-kernel: MR x NR tile of C in registers
// The direct-A path (gemm_range_direct) drops the A packing: the same nest with
// A read in place by row groups of at most MR; for small M (<= kSmallM rows) it
// walks each K block's B panels in memory order with every row group per panel.
#include "kernels/x86/gemm.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string_view>
#include <vector>

#include "core/cpu_features.h"
#include "core/error.h"
#include "core/memory.h"
#include "kernels/x86/eltwise.h"
#include "kernels/x86/gemm_amx.h"
#include "kernels/x86/roofline.h"

namespace tessera::kernels::x86 {
namespace {

struct UkrInfo {
  const char* name;
  GemmUkr fn;
  int64_t mr, nr;
  bool (*available)();
  GemmUkrDirect direct;           // direct-A companion, or nullptr
  GemvRows gemv;                  // M = 1 over an unpacked B, or nullptr
  GemvDots gemv_t;                // M = 1 over a transposed unpacked B, or nullptr
  GemvPanels panels;              // M = 1 over prepacked panels, or nullptr
  GemmTiles tiles;                // a row group over whole panels, or nullptr
  GemmUkrDirectPack direct_pack;  // a direct tile packing the B it reads, or nullptr
};

bool has_avx512f() {
  return cpu_features().avx512_core();
}
bool has_avx2() {
  return cpu_features().avx2 && cpu_features().fma;
}
bool has_portable() {
  return true;
}

// Every micro-kernel of gemm_ukernels.def, best first, with its direct-A companion.
const std::vector<UkrInfo>& ukr_table() {
  static const std::vector<UkrInfo> table = [] {
    std::vector<UkrInfo> t;
#define GEMM_UKR(name, isa, MR, NR) \
  t.push_back({#name, name, MR, NR, has_##isa, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr});
#include "kernels/x86/gemm_ukernels.def"
#undef GEMM_UKR
#define GEMM_UKR(name, isa, MR, NR)
#define GEMM_UKR_DIRECT(ukr, dname) \
  for (UkrInfo & u : t)             \
    if (std::string_view(u.name) == #ukr) u.direct = dname;
#define GEMM_UKR_GEMV(ukr, gname) \
  for (UkrInfo & u : t)           \
    if (std::string_view(u.name) == #ukr) u.gemv = gname;
#define GEMM_UKR_GEMV_T(ukr, tname) \
  for (UkrInfo & u : t)             \
    if (std::string_view(u.name) == #ukr) u.gemv_t = tname;
#define GEMM_UKR_PANELS(ukr, pname) \
  for (UkrInfo & u : t)             \
    if (std::string_view(u.name) == #ukr) u.panels = pname;
#define GEMM_UKR_TILES(ukr, tname) \
  for (UkrInfo & u : t)            \
    if (std::string_view(u.name) == #ukr) u.tiles = tname;
#define GEMM_UKR_DIRECT_PACK(ukr, pname) \
  for (UkrInfo & u : t)                  \
    if (std::string_view(u.name) == #ukr) u.direct_pack = pname;
#include "kernels/x86/gemm_ukernels.def"
#undef GEMM_UKR
    return t;
  }();
  return table;
}

const UkrInfo& selected_ukr() {
  static const UkrInfo chosen = [] {
    for (const UkrInfo& u : ukr_table())
      if (u.available()) return u;
    return ukr_table().back();
  }();
  return chosen;
}

// Name of a kernel's direct-A companion ("" if none).
std::string_view direct_name_of(const UkrInfo& u) {
#define GEMM_UKR(name, isa, MR, NR)
#define GEMM_UKR_DIRECT(ukr, dname) \
  if (std::string_view(u.name) == #ukr) return #dname;
#include "kernels/x86/gemm_ukernels.def"
#undef GEMM_UKR
  return "";
}

// Which A path the driver takes: chosen per problem, or forced (tests, benchmarks).
enum class APath : uint8_t { choose, packed, direct };

// On the direct-A path, a range of at most this many rows reads B in place (or
// from its prepacked panels) across all of its N per K block, in memory order.
constexpr int64_t kSmallM = 32;
// Full-width AVX-512 FMAs (roofline.h): twice the FLOP rate per core of Zen 4's, which most of the AMD
// choices below were measured on; where that changes the best choice, the choice says so.
bool wide_fma() {
  return fma512_full_width();
}
// Rows per thread from which the direct path splits M over the threads rather than N (see run). 64 before
// session 25; 32 measured on Zen 4 at two threads over prepacked weights: 64-112 rows 188-223 -> 226-229
// GFLOP/s (ViT-B/16's 99-row Strassen products; B in cache), ViT-B/16 1.6-2.5% faster; at 16 (from 32 rows)
// most 33-56-row shapes gained too but 40 x 3072 x 768 lost 3%, and smaller M streams weights from memory,
// which a split of M would read twice.
constexpr int64_t kRowsPerThread = 32;
// ... but on full-width FMA cores an unpacked B, which each M range packs in full for itself, splits M only
// from this many rows per thread, N below (Zen 5, two threads, in-process A/B against oneDNN: 128 x 768 x 768
// 0.963 -> 1.001x, 128 x 3072 x 768 0.976 -> 1.038x; 256^3, 512^3 and 2048^3 unchanged).
constexpr int64_t kRowsPerThreadPacking = 128;
// Small M over a prepacked B: the bytes of a panel each pass of the row groups covers (see the path). On
// Intel 64 rows of AVX-512's 64-wide panels, 256 (a whole K block) of AVX2's 16-wide ones — with AVX2, 64-row
// passes were 6% slower at M = 4 and equal at 16 (Xeon, TESSERA_ISA=avx2, weights from memory). On AMD a
// whole K block: each pass reloads and stores the row groups' C tiles, and Zen 4's L2 feeds the later groups
// a pass that has left L1. Measured on the Zen 4 VM (weights from memory, 128 MB of copies; 16 KiB passes ->
// whole blocks): M = 16 at one thread 98-99 -> 107-110 GFLOP/s, 7-32 rows 94-101 -> 99-112, two threads
// 191-200 -> 205-222 (8 x 768 x 768 at two threads, a 70 us product, 5% slower); 48 and 64 KiB passes in
// between. BERT-base and GPT-2 at 16 tokens 7.8% faster at one thread and 6.5% at two (alternating runs).
int64_t stream_pass_bytes() {
  static const int64_t bytes =
      cpu_features().amd ? std::numeric_limits<int64_t>::max() / 2 : int64_t(16) << 10;
  return bytes;
}
// ... and writes C through a staging block this many columns wide (see gemm_range_direct).
constexpr int64_t kStageCols = 4096;
// An unpacked B is read that way (in place, no packing pass) up to this many rows on AMD. Measured on Zen 4
// (bench/gemm_bench, best of 3, alternating builds): 49-197 rows 2-22% faster at one thread and 15-39% at
// two than packing B per block; a prepacked B keeps the blocked order past kSmallM, 5-10% faster for it.
// On the Intel Xeon VM the opposite: packing per block past kSmallM rows was 15-50% faster at one thread
// (197 x 3072 x 768 87 -> 133 GFLOP/s, 128 x 768 x 768 108 -> 137, 49 x 2048 x 512 88 -> 111) and 4-41% at
// two (in-process A/B, 41 rounds), so elsewhere kSmallM holds. Not for panels one cache line wide (see
// line_panels). Nor on full-width FMA cores, where B's rows a page apart no longer keep up with twice the
// FMAs: on Zen 5 (one thread, in-process A/B against oneDNN) packing past kSmallM rows took 128 x 768 x 768
// from 0.77-0.88x to 0.96-0.99x, 128 x 3072 x 768 0.73-0.95 -> 1.00-1.02, 196 x 256 x 2304 0.88 -> 1.00.
constexpr int64_t kSmallMUnpacked = 256;
int64_t small_m_unpacked() {
  return cpu_features().amd && !wide_fma() ? kSmallMUnpacked : kSmallM;
}
// An unpacked B of at most this many floats is read in place by the direct path (not line_panels) — except
// on full-width FMA cores, where packing it measured faster too (Zen 5, one thread, in-process A/B against
// oneDNN: 256^3 0.977 -> 0.997x, 256 x 512 x 128 0.876 -> 0.997x).
constexpr int64_t kRawBFloats = 64 * 1024;

// Panels one cache line wide (AVX2's 16 floats): read in place over a row stride
// that is a multiple of 256 B, a panel's rows fall into at most 16 of L1's 64 sets
// (128 lines for a 256-row K block), and from 1 KiB strides on each row is on a page
// of its own, so every row group after the first re-reads the panel from L2 through
// DTLB misses. Such a B past kSmallM rows is packed per block and takes the blocked
// order, as a prepacked one (Zen 3, in-process A/B, one thread: 3136 x 64 x 576 68 ->
// 79 GFLOP/s, 196 x 256 x 2304 73 -> 85, 197 x 768 x 768 76 -> 85, 256^3 86 -> 90);
// AVX-512's 64-wide panel rows span four lines (in place measured faster on Zen 4).
bool line_panels(int64_t nr) {
  return nr * int64_t(sizeof(float)) <= 64;
}

bool raw_small_b(int64_t k, int64_t n, int64_t nr) {
  return k * n <= kRawBFloats && !line_panels(nr) && !wide_fma();
}

// The most rows the direct path treats as small M, for a prepacked or an unpacked B (see above).
int64_t small_m_rows(bool packed, int64_t nr) {
  return packed || line_panels(nr) ? kSmallM : small_m_unpacked();
}

// Whether the small-M path copies each panel of an unpacked B into a contiguous
// buffer before its row groups read it: line panels over an aliasing stride (above)
// with four or more row groups (Zen 3, in-process A/B, one thread: 24 x 2048 x 512
// 63 -> 68 GFLOP/s, 32 x 3072 x 768 43 -> 68; with three groups the copy costs more
// than it saves: 16 x 768 x 768 70 -> 63).
bool copy_panels(int64_t nr, int64_t ldb, int64_t groups) {
  return line_panels(nr) && groups >= 4 && ldb % 64 == 0;
}

// The activations the micro-kernels leave to a pass over the finished tile (see gemm.h).
bool tile_pass_act(Activation a) {
  return activation_in_pass(a);
}
void apply_tile_act(Activation a, float* c, int64_t ldc, int64_t rows, int64_t cols) {
  if (!tile_pass_act(a)) return;
  const EltwiseKernels& k = eltwise_kernels(eltwise_isa());
  const UnaryOp op = a == Activation::gelu_erf    ? UnaryOp::gelu_erf
                     : a == Activation::gelu_tanh ? UnaryOp::gelu_tanh
                     : a == Activation::silu      ? UnaryOp::silu
                                                  : UnaryOp::hardswish;
  for (int64_t i = 0; i < rows; ++i) k.unary(op, c + i * ldc, c + i * ldc, cols);
}

// Packs op(B)[k0:k0+kc, n0:n0+nc] into NR-wide panels: panel j holds kc rows of NR
// values (zero-padded past N).
void pack_b_block(const float* b, int64_t ldb, bool trans_b, int64_t k0, int64_t kc, int64_t n0, int64_t nc,
                  int64_t nr, float* out) {
  for (int64_t j0 = 0; j0 < nc; j0 += nr) {
    const int64_t w = std::min(nr, nc - j0);
    float* panel = out + (j0 / nr) * kc * nr;
    if (!trans_b && w == 16 && nr == 16) {  // AVX2's panels: a row is one cache line, copied inline
      const float* src = b + k0 * ldb + n0 + j0;
      for (int64_t p = 0; p < kc; ++p) std::memcpy(panel + p * 16, src + p * ldb, 16 * sizeof(float));
      continue;
    }
    // B transposed (attention's K^T): 16 x 16 blocks through registers; the scalar gather down B's rows
    // (one element per row of B and panel row) was a third of ViT's 197 x 197 x 64 score GEMMs
    int64_t p_tiled = 0, j_tiled = 0, zeroed = 0;  // rows [0, p_tiled) hold columns [0, zeroed) already
    if (trans_b && kc >= 16) {
      const EltwiseKernels& k = eltwise_kernels(eltwise_isa());
      p_tiled = kc / 16 * 16, j_tiled = w / 16 * 16;
      for (int64_t p = 0; p < p_tiled; p += 16)
        for (int64_t j = 0; j < j_tiled; j += 16)
          k.transpose_tile16(b + (n0 + j0 + j) * ldb + k0 + p, ldb, panel + p * nr + j, nr);
      // The last, partial 16 columns through a zero-padded 16 x 16 block (DLRM's 27-wide interaction
      // products: the scalar gather was most of their packing).
      if (const int64_t rest = w - j_tiled; rest > 0 && j_tiled + 16 <= nr) {
        alignas(64) float blk[16 * 16];
        for (int64_t p = 0; p < p_tiled; p += 16) {
          for (int64_t j = 0; j < 16; ++j)
            if (j < rest)
              std::memcpy(blk + j * 16, b + (n0 + j0 + j_tiled + j) * ldb + k0 + p, 16 * sizeof(float));
            else
              std::memset(blk + j * 16, 0, 16 * sizeof(float));
          k.transpose_tile16(blk, 16, panel + p * nr + j_tiled, nr);
        }
        zeroed = j_tiled + 16;  // the block's zero rows padded the columns past w
        j_tiled = w;
      }
    }
    for (int64_t p = 0; p < kc; ++p) {
      float* row = panel + p * nr;
      if (!trans_b) {
        const float* src = b + (k0 + p) * ldb + n0 + j0;
        std::memcpy(row, src, size_t(w) * sizeof(float));
      } else {
        for (int64_t j = p < p_tiled ? j_tiled : 0; j < w; ++j) row[j] = b[(n0 + j0 + j) * ldb + k0 + p];
      }
      // zero padding to the panel's width (a variable-length memset per row: most of a narrow block's
      // packing)
      const int64_t z = p < p_tiled ? std::max(w, zeroed) : w;
      if (z < nr) std::memset(row + z, 0, size_t(nr - z) * sizeof(float));
    }
  }
}

// Packs alpha * op(A)[m0:m0+mc, k0:k0+kc] into MR-high slivers: sliver i holds kc
// columns of MR values (zero-padded past M).
void pack_a_block(const float* a, int64_t lda, bool trans_a, int64_t m0, int64_t mc, int64_t k0, int64_t kc,
                  int64_t mr, float alpha, float* out) {
  for (int64_t i0 = 0; i0 < mc; i0 += mr) {
    const int64_t h = std::min(mr, mc - i0);
    float* sliver = out + (i0 / mr) * kc * mr;
    if (!trans_a) {
      for (int64_t i = 0; i < h; ++i) {
        const float* src = a + (m0 + i0 + i) * lda + k0;
        for (int64_t p = 0; p < kc; ++p) sliver[p * mr + i] = alpha * src[p];
      }
    } else {
      for (int64_t p = 0; p < kc; ++p) {
        const float* src = a + (k0 + p) * lda + m0 + i0;
        for (int64_t i = 0; i < h; ++i) sliver[p * mr + i] = alpha * src[i];
      }
    }
    for (int64_t i = h; i < mr; ++i)
      for (int64_t p = 0; p < kc; ++p) sliver[p * mr + i] = 0.0f;
  }
}

// Per-thread packing scratch, kept for the thread's life.
thread_local AlignedScratch tl_pack_a, tl_pack_b, tl_stage_c;

struct Problem {
  int64_t m, n, k;
  const float* a;
  int64_t lda;
  bool trans_a;
  const float* b;  // unpacked B (nullptr when prepacked)
  int64_t ldb;
  bool trans_b;
  const PackedB* packed;
  float* c;
  int64_t ldc;
  const GemmEpilogue* ep;
};

// Computes rows [m_begin, m_end) x columns [n_begin, n_end) of C; n_begin is a
// multiple of NR when B is prepacked.
void gemm_range(const Problem& pr, int64_t m_begin, int64_t m_end, int64_t n_begin, int64_t n_end,
                const GemmBlocking& blk, const UkrInfo& u) {
  const int64_t mr = u.mr, nr = u.nr;
  const int64_t KC = blk.kc, MC = round_up(blk.mc, mr), NC = round_up(blk.nc, nr);
  float* apack = tl_pack_a.get(size_t(MC * KC));
  float* bpack = pr.packed ? nullptr : tl_pack_b.get(size_t(NC * KC));
  const GemmEpilogue& ep = *pr.ep;
  alignas(64) float tile[16 * 64];

  for (int64_t jc = n_begin; jc < n_end; jc += NC) {
    const int64_t nc = std::min(NC, n_end - jc);
    for (int64_t pc = 0; pc < pr.k; pc += KC) {
      const int64_t kc = std::min(KC, pr.k - pc);
      const bool first = pc == 0, last = pc + kc >= pr.k;
      const float* bblock;
      if (pr.packed) {
        // block pc of the prepacked B, starting at panel jc / nr
        const int64_t panels_total = round_up(pr.packed->n(), nr) / nr;
        bblock = pr.packed->data() + (pc / KC) * panels_total * KC * nr + (jc / nr) * kc * nr;
      } else {
        pack_b_block(pr.b, pr.ldb, pr.trans_b, pc, kc, jc, nc, nr, bpack);
        bblock = bpack;
      }
      const float beta = first ? ep.beta : 1.0f;
      for (int64_t ic = m_begin; ic < m_end; ic += MC) {
        const int64_t mc = std::min(MC, m_end - ic);
        pack_a_block(pr.a, pr.lda, pr.trans_a, ic, mc, pc, kc, mr, ep.alpha, apack);
        for (int64_t ir = 0; ir < mc; ir += mr) {
          const int64_t mrr = std::min(mr, mc - ir);
          const float* asl = apack + (ir / mr) * kc * mr;
          for (int64_t jr = 0; jr < nc; jr += nr) {
            const int64_t nrr = std::min(nr, nc - jr);
            const int64_t row = ic + ir, col = jc + jr;
            float* cptr = pr.c + row * pr.ldc + col;
            UkrEpilogue uep{}, *uepp = nullptr;
            if (last && (ep.bias || ep.row_bias || ep.residual || ep.act != Activation::none)) {
              uep = tile_epilogue(ep, row, col);
              uepp = &uep;
            }
            const float* bp = bblock + (jr / nr) * kc * nr;
            if (mrr == mr && nrr == nr) {
              u.fn(kc, asl, bp, cptr, pr.ldc, mr, nr, beta, uepp);
            } else {
              // Edge tile: compute the full tile into scratch, then finish the valid part.
              u.fn(kc, asl, bp, tile, nr, mr, nr, 0.0f, nullptr);
              ukr_store_tile(tile, nr, cptr, pr.ldc, mrr, nrr, beta, uepp);
            }
          }
          // this sliver's rows of the NC block are final: the tile-pass activation in one call per row
          if (last) apply_tile_act(ep.act, pr.c + (ic + ir) * pr.ldc + jc, pr.ldc, mrr, nc);
        }
      }
    }
  }
}

// The direct-A path: A read in place by the direct kernel, B read in place (small,
// unpacked, not transposed), from its prepacked panels, or packed here per block.
// Small M walks each K block's panels in memory order with all row groups per
// panel (a prepacked B streams from memory once); larger M keeps a row group's A
// in L1 across the panels of an NC block.
void gemm_range_direct(const Problem& pr, int64_t m_begin, int64_t m_end, int64_t n_begin, int64_t n_end,
                       const GemmBlocking& blk, const UkrInfo& u) {
  const int64_t mr = u.mr, nr = u.nr;
  const bool small = m_end - m_begin <= small_m_rows(pr.packed != nullptr, nr);
  const bool raw_b = !pr.packed && !pr.trans_b && (small || raw_small_b(pr.k, pr.n, nr));
  const int64_t KC = blk.kc;
  // Larger M over a prepacked B with wide tiles: while the row groups compute a block from L2, their tiles
  // prefetch the next block into L2 (below), so blocks take half the usual NC (two fit in half of L2).
  const bool warm_next = pr.packed && !small && nr >= 48;
  // With this thread's A block (rows x KC) within half of L2, those blocks are one panel wide: the first
  // block, which nothing warmed, is then one panel, not NC / 2 columns read from memory while the row groups
  // wait, and re-reading A per panel costs nothing from L2. Zen 5, weights in 100 cold copies, in-process A/B
  // (/tmp/w/gnc.cpp), one thread: 49 x 400 x 400 190 -> 207 GFLOP/s, 49 x 2048 x 512 214 -> 225, 64 x 400
  // x 400 196 -> 205, 128 x 3072 x 768 +1%, 196 x 784 x 784 equal; two threads 98 x 400 x 400 385 -> 406,
  // 196 x 400 x 400 +3%. With A past L2 one-panel blocks were 1-3% slower (512 x 768 x 768, 2048^3).
  const bool panel_blocks =
      warm_next && (m_end - m_begin) * KC * int64_t(sizeof(float)) <= int64_t(cpu_features().l2_bytes) / 2;
  // small M over B in memory: all of N per K block, in memory order; else NC blocks
  // Small M over a prepacked B: the passes' C tiles go to a staging block at most kStageCols wide, its rows a
  // multiple of 1024 floats apart, copied out after its K loop — unless C's own rows are. Measured on the
  // Xeon (M = 16, weights from memory): 768 x ~50k logits (ldc 50257) 37.7 -> 30.0 ms; GPT-2's 768 x 2304
  // (ldc 2304, C in cache) 93 -> 108 GFLOP/s; BERT-base at 16 tokens 4.4-7.7% faster and GPT-2 3.6-6.4%, at
  // one and two threads (in-process A/B), where a fresh output in the arena had each pass's C tiles come
  // from L3 (staged with C's own stride: the same). Which row strides run slow unstaged is empirical (ldc
  // 49152 and 3072 full speed, 2304, 2560, 49216, 50257 15-25% slower); staging C with a fast stride cost
  // 4% on the logits and equal on BERT and GPT-2, so those strides skip it.
  const bool stage = small && pr.packed && m_end - m_begin > 1 && pr.ldc % 1024 != 0;
  const int64_t NC = stage                           ? std::min(n_end - n_begin, kStageCols)
                     : small && (pr.packed || raw_b) ? n_end - n_begin
                     : panel_blocks                  ? nr
                                    : round_up(warm_next ? std::max(blk.nc / 2, nr) : blk.nc, nr);
  const int64_t MC = small ? m_end - m_begin : round_up(blk.mc, mr);
  float* bpack = (pr.packed || raw_b) ? nullptr : tl_pack_b.get(size_t(NC * KC));
  // B packed per block by the block's first row group, as its tiles read it (GemmUkrDirectPack), not in a
  // pass before them: the packing's loads from memory overlap that group's FMAs.
  const bool pack_in_tiles = bpack && !pr.trans_b && !small && u.direct_pack;
  const GemmEpilogue& ep = *pr.ep;
  const bool has_post = ep.bias || ep.row_bias || ep.residual || ep.act != Activation::none;
  const int64_t rs_a = pr.trans_a ? 1 : pr.lda, cs_a = pr.trans_a ? pr.lda : 1;
  // the first column of a prepacked B's narrower last panel (PackedB::view), if it has one
  const int64_t narrow_from =
      pr.packed && pr.packed->last_nr() != nr ? (pr.n - 1) / nr * nr : std::numeric_limits<int64_t>::max();

  // the prepacked K block that starts at row pc: panels of kc x nr, one after another
  auto packed_block = [&](int64_t pc) {
    return pr.packed->data() + (pc / KC) * (round_up(pr.packed->n(), nr) / nr) * KC * nr;
  };
  // rows in the K block at pc, and its panels from column jc on
  auto block_kc = [&](int64_t pc) { return std::min(KC, pr.k - pc); };
  auto packed_panels = [&](int64_t pc, int64_t jc) {
    return packed_block(pc) + (jc / nr) * block_kc(pc) * nr;
  };

  for (int64_t jc = n_begin; jc < n_end; jc += NC) {
    const int64_t nc = std::min(NC, n_end - jc);
    // where the small-M passes write rows [m_begin, m_end) x columns [jc, jc + nc): C, or its staging block
    float* cs = pr.c + m_begin * pr.ldc + jc;
    int64_t lds = pr.ldc;
    if (stage) {
      lds = round_up(nc, 1024);
      cs = tl_stage_c.get(size_t((m_end - m_begin) * lds));
      if (ep.beta != 0.0f)
        for (int64_t i = m_begin; i < m_end; ++i)
          std::memcpy(cs + (i - m_begin) * lds, pr.c + i * pr.ldc + jc, size_t(nc) * sizeof(float));
    }
    for (int64_t pc = 0; pc < pr.k; pc += KC) {
      const int64_t kc = std::min(KC, pr.k - pc);
      const bool last = pc + kc >= pr.k;
      const float beta = pc == 0 ? ep.beta : 1.0f;
      const float* bblock;
      int64_t ldb, pstride;  // row p of panel j at bblock + j * pstride + p * ldb
      if (pr.packed) {
        bblock = packed_block(pc) + (jc / nr) * kc * nr;
        ldb = nr, pstride = kc * nr;
      } else if (raw_b) {
        bblock = pr.b + pc * pr.ldb + jc;
        ldb = pr.ldb, pstride = nr;
      } else if (pack_in_tiles) {
        bblock = bpack;
        ldb = nr, pstride = kc * nr;
      } else {
        // A block narrower than a panel is packed only as wide as the vectors its tiles read (a tile of
        // width w reads ceil(w / 16) of them), not zero-padded to the panel: attention's scores over 16
        // keys (16 x 16 x 64, K transposed) 0.41 -> 0.32 us each (Zen 5, /tmp/w/bmm.cpp, medians of 31).
        const int64_t width = std::min(nr, round_up(nc, 16));
        pack_b_block(pr.b, pr.ldb, pr.trans_b, pc, kc, jc, nc, width, bpack);
        bblock = bpack;
        ldb = width, pstride = kc * width;
      }
      // the row stride of the panel at column jc + jr: a prepacked B's narrower last panel has its own
      auto ldb_at = [&, ldb](int64_t jr) { return jc + jr >= narrow_from ? pr.packed->last_nr() : ldb; };
      // the epilogue of the tile at (row, col) on the last K block, else nullptr
      UkrEpilogue uep{};
      auto epilogue = [&](int64_t row, int64_t col) -> const UkrEpilogue* {
        if (!last || !has_post) return nullptr;
        uep = tile_epilogue(ep, row, col);
        return &uep;
      };
      // pf: where this tile's K loop prefetches into L2, pf_step bytes per row of K
      // (nullptr: into L1 ahead along its own panel; pf_l1: both)
      auto tile = [&](int64_t row, int64_t h, int64_t jr, const float* pf, int64_t pf_step,
                      bool pf_l1 = false) {
        const int64_t col = jc + jr, w = std::min(nr, nc - jr);
        u.direct(kc, pr.a + row * rs_a + pc * cs_a, rs_a, cs_a, bblock + (jr / nr) * pstride, ldb_at(jr), pf,
                 pf_step, pf_l1, pr.c + row * pr.ldc + col, pr.ldc, h, w, ep.alpha, beta, epilogue(row, col));
      };
      // rows [row, row + h) of this NC block are final: their tile-pass activation in one call per row
      auto finish_rows = [&](int64_t row, int64_t h) {
        if (last) apply_tile_act(ep.act, pr.c + row * pr.ldc + jc, pr.ldc, h, nc);
      };
      for (int64_t ic = m_begin; ic < m_end; ic += MC) {
        const int64_t mc = std::min(MC, m_end - ic);
        // rows split into balanced groups of at most MR (16 -> 6, 5, 5)
        const int64_t groups = (mc + mr - 1) / mr, base = mc / groups, extra = mc % groups;
        auto group_row = [&](int64_t g) { return ic + g * base + std::min(g, extra); };
        if (small && pr.packed && mc == 1) {
          // One row streams B alone, several whole panels at once (gemv_panels_impl.h): the hardware
          // prefetchers keep up by themselves (12.6 GB/s from memory on a Xeon, pure reads 11-12); the last,
          // narrower panel goes to the tile kernel.
          int64_t jr = 0;
          if (u.panels) {
            const int64_t whole = nc / nr;
            u.panels(kc, pr.a + ic * rs_a + pc * cs_a, cs_a, bblock, pstride, whole, pr.c + ic * pr.ldc + jc,
                     ep.alpha, beta, epilogue(ic, jc));
            jr = whole * nr;
          }
          for (; jr < nc; jr += nr) tile(ic, mc, jr, bblock, 0);
          finish_rows(ic, mc);
        } else if (small && pr.packed && groups == 1 && cpu_features().amd) {
          // One row group (2-6 rows) on AMD: each panel's whole K block in one tile, which prefetches into L1
          // ahead along its own panel — the passes below, paced by the prefetches into L2, read the weights
          // at 20-22 GB/s on the Zen 4 VM at one thread, this at 27-33. GPT-2's 49 decode matrices
          // (/tmp/w/cdm.cpp, in-process A/B, medians of 7): one thread 2 rows 22.8 -> 15.2 ms, 4 rows 24.1
          // -> 17.8, 6 rows 19.7 -> 17.4; two threads 14.5-15.6 -> 13.8-14.5. Intel keeps the passes
          // (measured faster there, session 13).
          for (int64_t jr = 0; jr < nc; jr += nr) {
            const int64_t col = jc + jr, w = std::min(nr, nc - jr);
            u.direct(kc, pr.a + ic * rs_a + pc * cs_a, rs_a, cs_a, bblock + (jr / nr) * pstride, ldb_at(jr),
                     nullptr, 0, false, cs + (ic - m_begin) * lds + jr, lds, mc, w, ep.alpha, beta,
                     epilogue(ic, col));
          }
          if (last) apply_tile_act(ep.act, cs + (ic - m_begin) * lds, lds, mc, nc);
        } else if (small && pr.packed) {
          // A prepacked B streams from memory once, in memory order (a K block's panels one after another,
          // then the next block's). Each panel goes in passes of stream_pass_bytes() (on Intel 64 rows of a
          // 64-wide one, on AMD the whole K block): every row group computes a pass (the first reads it from
          // L2, the others from L1 or L2, C stays in L1 between passes) while its tiles warm their share of
          // the next pass into L2, paced over their K loops. On the Xeon short passes keep the stream even:
          // with whole 256-row panels the memory sat idle while the later row groups computed, and the first
          // group of the next panel waited on it. Xeon (AVX-512,
          // one thread, 340 MB of weights as in BERT-base): M = 16 36.4 ms vs 40.1 (9% faster), M = 2-6
          // 8-25% (they had no software prefetch: on Zen 4 a whole-panel-ahead prefetch slowed them, this
          // paced one was not measured there), M = 32 4%; BERT and GPT-2 at 16 tokens 6.5-7.4%.
          const int64_t pass_k = std::max<int64_t>(1, stream_pass_bytes() / (nr * int64_t(sizeof(float))));
          for (int64_t jr = 0; jr < nc; jr += nr) {
            const int64_t col = jc + jr, w = std::min(nr, nc - jr);
            for (int64_t k0 = 0; k0 < kc; k0 += pass_k) {
              const int64_t ks = std::min(pass_k, kc - k0);
              const int64_t lp = ldb_at(jr);
              const float* bpass = bblock + (jr / nr) * pstride + k0 * lp;
              // the next pass: of this panel, else the next panel's (or the next K block's) first
              const float* next = nullptr;
              int64_t next_rows = 0;
              if (k0 + ks < kc) {
                next = bpass + ks * lp, next_rows = kc - k0 - ks;
              } else if (jr + nr < nc) {
                next = bblock + (jr / nr + 1) * pstride, next_rows = kc;
              } else if (pc + kc < pr.k) {
                next = packed_panels(pc + kc, jc), next_rows = block_kc(pc + kc);
              }
              const int64_t next_bytes = std::min(pass_k, next_rows) * nr * int64_t(sizeof(float));
              const bool final_pass = k0 + ks == kc;  // of this K block (epilogue() checks the last block)
              const float pass_beta = pc == 0 && k0 == 0 ? ep.beta : 1.0f;
              for (int64_t g = 0; g < groups; ++g) {
                const int64_t r0 = group_row(g) - ic, h = base + (g < extra), row = ic + r0;
                const float* pf = next ? next + next_bytes * r0 / mc / int64_t(sizeof(float)) : nullptr;
                u.direct(ks, pr.a + row * rs_a + (pc + k0) * cs_a, rs_a, cs_a, bpass, lp, pf,
                         std::max<int64_t>(1, next_bytes * h / mc / ks), false,
                         cs + (row - m_begin) * lds + jr, lds, h, w, ep.alpha, pass_beta,
                         final_pass ? epilogue(row, col) : nullptr);
              }
            }
          }
          if (last) apply_tile_act(ep.act, cs + (ic - m_begin) * lds, lds, mc, nc);
        } else if (small && raw_b && copy_panels(nr, pr.ldb, groups)) {
          // each panel copied once (its rows prefetched into L2 by the previous panel's tiles), then read
          // by every row group from L1
          float* panel = tl_pack_b.get(size_t(KC * nr));
          for (int64_t jr = 0; jr < nc; jr += nr) {
            const int64_t w = std::min(nr, nc - jr);
            pack_b_block(pr.b, pr.ldb, false, pc, kc, jc + jr, w, nr, panel);
            const float* next = jr + nr < nc ? bblock + (jr / nr + 1) * pstride : nullptr;
            for (int64_t g = 0; g < groups; ++g) {
              const int64_t row = group_row(g);
              u.direct(kc, pr.a + row * rs_a + pc * cs_a, rs_a, cs_a, panel, nr, next,
                       ldb * int64_t(sizeof(float)), false, pr.c + row * pr.ldc + jc + jr, pr.ldc,
                       base + (g < extra), w, ep.alpha, beta, epilogue(row, jc + jr));
            }
          }
          finish_rows(ic, mc);
        } else if (small && raw_b && groups >= 3 && u.direct_pack && wide_fma()) {
          // Full-width FMA cores: the first row group packs each panel as it computes (GemmUkrDirectPack)
          // and the others read the packed panel, not B's rows a page apart. Zen 5, one thread, in-process
          // A/B against oneDNN: 32 x 4096 x 1024 0.60 -> 0.85x, 16 x 4096 x 1024 0.62 -> 0.75x, 32 x 768 x
          // 768 0.76 -> 0.92x, 24 x 768 x 768 0.84 -> 0.90x; with two groups (12 x 3072 x 768, 8 x 768 x
          // 3072) equal or slower, so those keep reading B in place.
          float* panel = tl_pack_b.get(size_t(KC * nr));
          for (int64_t jr = 0; jr < nc; jr += nr) {
            const int64_t w = std::min(nr, nc - jr), col = jc + jr;
            for (int64_t g = 0; g < groups; ++g) {
              const int64_t row = group_row(g), h = base + (g < extra);
              if (g == 0)
                u.direct_pack(kc, pr.a + row * rs_a + pc * cs_a, rs_a, cs_a, bblock + jr, ldb, panel,
                              pr.c + row * pr.ldc + col, pr.ldc, h, w, ep.alpha, beta, epilogue(row, col));
              else
                u.direct(kc, pr.a + row * rs_a + pc * cs_a, rs_a, cs_a, panel, nr, nullptr, 0, false,
                         pr.c + row * pr.ldc + col, pr.ldc, h, w, ep.alpha, beta, epilogue(row, col));
            }
          }
          finish_rows(ic, mc);
        } else if (small) {
          // B in place: the first row group streams the panel in (prefetching ahead
          // along it); the others find it in cache and warm the next panel meanwhile
          for (int64_t jr = 0; jr < nc; jr += nr) {
            const float* next = jr + nr < nc ? bblock + (jr / nr + 1) * pstride : nullptr;
            for (int64_t g = 0; g < groups; ++g)
              tile(group_row(g), base + (g < extra), jr, g ? next : nullptr, ldb * int64_t(sizeof(float)));
          }
          finish_rows(ic, mc);
        } else if (warm_next) {
          // B's blocks stream from memory (weights are read once per run): without help the first row group
          // of a block waits on memory while the others, computing from L2, leave it idle. Each tile warms an
          // equal slice of the next block (the next K block, else the next NC block's first) into L2, paced
          // over its K loop. ViT-B/16 on a Xeon (AVX-512): 9% faster than the same tiles without, 5% more
          // with NC halved (in-process A/B, one thread; 10% at two). AVX2's 6 x 16 tiles were not faster.
          // The tiles prefetch their own panel into L1 as well (pf_l1): a 256-row panel is 64 KB, so every
          // row group re-reads it from L2 (7-9% faster on ViT's shapes).
          const float* next = nullptr;
          int64_t next_bytes = 0;
          if (pc + kc < pr.k) {
            next = packed_panels(pc + kc, jc);
            next_bytes = block_kc(pc + kc) * round_up(nc, nr) * int64_t(sizeof(float));
          } else if (jc + NC < n_end) {
            next = packed_panels(0, jc + NC);
            next_bytes = block_kc(0) * round_up(std::min(NC, n_end - jc - NC), nr) * int64_t(sizeof(float));
          }
          const int64_t panels = (nc + nr - 1) / nr, slice = next_bytes / (groups * panels);
          for (int64_t g = 0; g < groups; ++g) {
            const int64_t row = group_row(g), h = base + (g < extra);
            for (int64_t jr = 0; jr < nc; jr += nr) {
              const int64_t t = g * panels + jr / nr;
              const float* pf = next ? next + t * slice / int64_t(sizeof(float)) : nullptr;
              tile(row, h, jr, pf, std::max<int64_t>(1, slice / kc), true);
            }
            finish_rows(row, h);
          }
        } else {
          for (int64_t g = 0; g < groups; ++g) {
            const int64_t row = group_row(g), h = base + (g < extra);
            if (pack_in_tiles && ic == m_begin && g == 0) {  // packs the block for the groups after it
              for (int64_t jr = 0; jr < nc; jr += nr)
                u.direct_pack(kc, pr.a + row * rs_a + pc * cs_a, rs_a, cs_a, pr.b + pc * pr.ldb + jc + jr,
                              pr.ldb, bpack + (jr / nr) * kc * nr, pr.c + row * pr.ldc + jc + jr, pr.ldc, h,
                              std::min(nr, nc - jr), ep.alpha, beta, epilogue(row, jc + jr));
              finish_rows(row, h);
              continue;
            }
            int64_t jr = 0;
            // a full row group's whole panels in one call where the kernel has one (GemmTiles)
            if (u.tiles && h == mr && ep.alpha == 1.0f && !ep.row_bias && nc >= nr) {
              const int64_t whole = nc / nr;
              u.tiles(kc, pr.a + row * rs_a + pc * cs_a, rs_a, cs_a, bblock, ldb, pstride, whole,
                      pr.c + row * pr.ldc + jc, pr.ldc, beta, epilogue(row, jc));
              jr = whole * nr;
            }
            for (; jr < nc; jr += nr) tile(row, h, jr, nullptr, 0);
            finish_rows(row, h);
          }
        }
      }
    }
    if (stage)
      for (int64_t i = m_begin; i < m_end; ++i)
        std::memcpy(pr.c + i * pr.ldc + jc, cs + (i - m_begin) * lds, size_t(nc) * sizeof(float));
  }
}

// Returns the kernel named `name` (a packed kernel, or a direct companion: then
// `direct_name` is set) if this CPU can run it.
const UkrInfo* find_ukr(const std::string& name, bool* direct_name) {
  for (const UkrInfo& u : ukr_table()) {
    if (!u.available()) continue;
    if (name == u.name) {
      *direct_name = false;
      return &u;
    }
    if (u.direct && name == direct_name_of(u)) {
      *direct_name = true;
      return &u;
    }
  }
  return nullptr;
}

// TESSERA_GEMM_PATH=packed|direct forces one A path (experiments); unset: chosen per problem.
APath env_path() {
  static const APath p = [] {
    const char* e = std::getenv("TESSERA_GEMM_PATH");
    if (e && std::string_view(e) == "packed") return APath::packed;
    if (e && std::string_view(e) == "direct") return APath::direct;
    return APath::choose;
  }();
  return p;
}

bool take_direct(const UkrInfo& u, APath path) {
  if (!u.direct) return false;
  if (path == APath::choose) path = env_path();
  // Measured on Zen 4 (bench/gemm_bench.cpp, TESSERA_GEMM_PATH): reading A in
  // place is as fast or faster than packing it on every shape, from GEMV to 2048^3
  // (no packing pass, masked edges instead of scratch tiles), for AVX-512 and AVX2.
  return path != APath::packed;
}

// M = 1 over an unpacked B. Untransposed: rows of B streamed in memory order into
// a row of sums, then the epilogue. Threads take ranges of rows (each streams
// whole rows; a column split would cut every row into short runs) into partial
// sums that the caller adds up. Transposed (attention's scores for one query):
// a dot product per row of B, threads over ranges of the outputs.
void run_gemv(const Problem& pr, ThreadPool* pool, const UkrInfo& u, int threads, double flops) {
  const GemmEpilogue& ep = *pr.ep;
  const int64_t incx = pr.trans_a ? pr.lda : 1;
  const int parts = threads <= 1 || flops < 2e5 ? 1 : int(std::min<int64_t>(threads, (pr.k + 3) / 4));
  float* acc = tl_pack_a.get(size_t(parts * pr.n));
  if (pr.trans_b) {  // dot products, threads over ranges of the outputs
    if (parts == 1)
      u.gemv_t(pr.k, pr.a, pr.b, pr.ldb, pr.n, acc);
    else
      pool->run(parts, [&](int64_t t) {
        const int64_t j0 = pr.n * t / parts, j1 = pr.n * (t + 1) / parts;
        u.gemv_t(pr.k, pr.a, pr.b + j0 * pr.ldb, pr.ldb, j1 - j0, acc + j0);
      });
  } else if (parts == 1) {
    u.gemv(pr.k, pr.a, incx, pr.b, pr.ldb, pr.n, acc);
  } else {
    const int64_t per = (pr.k + parts - 1) / parts;
    pool->run(parts, [&](int64_t t) {
      const int64_t k0 = t * per, k1 = std::min(pr.k, k0 + per);
      float* part = acc + t * pr.n;
      if (k0 < k1)
        u.gemv(k1 - k0, pr.a + k0 * incx, incx, pr.b + k0 * pr.ldb, pr.ldb, pr.n, part);
      else
        std::fill(part, part + pr.n, 0.0f);
    });
    for (int t = 1; t < parts; ++t)
      for (int64_t j = 0; j < pr.n; ++j) acc[j] += acc[t * pr.n + j];
  }
  if (ep.alpha != 1.0f)
    for (int64_t j = 0; j < pr.n; ++j) acc[j] *= ep.alpha;
  const UkrEpilogue uep = tile_epilogue(ep, 0, 0);
  ukr_store_tile(acc, 0, pr.c, pr.ldc, 1, pr.n, ep.beta, &uep);
  apply_tile_act(ep.act, pr.c, pr.ldc, 1, pr.n);
}

// A B of few columns (npad, rounded to whole panels) takes deeper K blocks than blk.kc, unpacked (run) or
// prepacked (PackedB::kc_for): each K block reads and writes every tile of C once more. As deep as keeps a K
// block of all of B's columns within the default KC x NC budget (half of L2), at most kMaxKc rows (an MR x KC
// sliver of A within half of L1), K split into equal blocks. 3136 x 64 x 576 in one block instead of three:
// 12-16% faster at one thread, 4-8% at two (7-10% with AVX2 on the Xeon); 512^3 in two of 256 rows, 1024^3
// and wider unchanged (so are the transformers' weights, 768+ columns). Not for small M over an unpacked B,
// which reads it in place (24 x 256 x 2304 5% slower with 768-row blocks).
constexpr int64_t kMaxKc = 1024;
void deepen_k_blocks(GemmBlocking& blk, int64_t k, int64_t npad) {
  const int64_t budget = std::min(kMaxKc, blk.kc * blk.nc / std::max<int64_t>(npad, 1));
  if (budget <= blk.kc || k <= blk.kc) return;
  const int64_t blocks = (k + budget - 1) / budget;
  blk.kc = round_up((k + blocks - 1) / blocks, 16);
  blk.nc = std::min(blk.nc, npad);  // one block of columns (and a packing buffer that size)
}

// On AMD, wide products take deeper K blocks than the L2 budget above gives: each K block reads and writes
// every tile of C once more, and a tile's C comes from L3 when the rows of an NC block pass L2 (the cost
// grows with M and K, and two threads share L3). Unpacked, past small_m_unpacked() rows, with 512+ columns:
// K in equal blocks of at most kWideKc rows and NC kWideNc columns — B's block then comes from L3, which
// keeps up. Measured on Zen 4 (one thread, in-process A/B against 256 x 512 blocks): 1024^3 96-105 ->
// 105-110 GFLOP/s, 2048^3 101-105 -> 109-111 (two threads 183 -> 218), 512^3 110 -> 111; 512-1024-row
// blocks in between. Prepacked weights (their K blocks are set when they are packed): equal blocks of at
// most kPackedKc rows, a multiple of the small-M path's 64-row passes: ViT-B/16's 197-row GEMMs 1.6-3.2%
// faster at one thread, -1.5..+5.6% at two; M = 16 equal (16 x 2304 x 768 with 512-row blocks ran at half
// speed). Not measured on Intel, which keeps the L2 budget.
constexpr int64_t kWideKc = 1024, kWideNc = 1024, kPackedKc = 384;
// Full-width FMA cores (Zen 5) take prepacked K blocks of up to this many rows, equal in size, and never
// fewer rows than deepen_k_blocks gives — which for 342-512 columns splits K past ~341 rows (whisper-base's
// 384 x 384 weights: two blocks of 192 rows, each reloading and storing every C tile). Zen 5, in-process A/B
// over packings with each K block (weights cycled through 20 cold copies, medians of 31, GFLOP/s, one / two
// threads): 500 x 384 x 384 192 -> 384 rows 229.8 -> 237.9 / 446.5 -> 459.7; 500 x 384 x 1536 320 -> 512
// 235.1 -> 239.0 / 458.9 -> 467.8; 128 x 2048 x 512 256 -> 512 229.4 -> 234.5 / 434.0 -> 447.5; 197 x 768 x
// 3072 384 -> 512 235.8 -> 237.6 / 451.5 -> 458.7; 16 x 768 x 3072 195.7 -> 198.3 / 322.1 -> 326.6; 49 x
// 784 x 784 320 -> 448 211.4 -> 207.4 / 388.3 -> 395.0 (the one loss, at one thread); 768-row K unchanged.
constexpr int64_t kWidePackedKc = 512;
int64_t balanced_kc(int64_t k, int64_t most, int64_t multiple) {
  const int64_t blocks = (k + most - 1) / most;
  return round_up((k + blocks - 1) / blocks, multiple);
}
void widen_blocks(GemmBlocking& blk, int64_t k, int64_t npad) {
  if (!cpu_features().amd || npad < 512 || k <= blk.kc) return;
  blk.kc = std::max(blk.kc, balanced_kc(k, kWideKc, 16));
  blk.nc = std::max(blk.nc, std::min(kWideNc, npad));
}

// Small M over an unpacked B read in place (up to small_m_rows(), untransposed, AVX-512's four-line panels),
// on AMD: K in equal blocks of at most kWideKc rows as well. Each K block reloads and stores every C tile the
// range has, while B's rows, which each row group reads from L2 or L3, keep up at any depth on Zen 4.
// Measured there against 256-row blocks (alternating in one process): one thread 1-2.5% faster from 8 to 197
// rows (128 x 768 x 768 112.5 -> 115.0 GFLOP/s, 49 x 2048 x 512 108 -> 110, 24 x 768 x 3072 109 -> 111), two
// threads 1.5-5% (128 x 768 x 768 223 -> 230, 49 x 2048 x 512 200 -> 210) and 24 x 256 x 2304 150 -> 180.
// Full-width FMA cores (Zen 5): the widened blocks above come from L3, which no longer keeps up with twice
// the FMAs. An unpacked B past kSmallM rows takes K in equal blocks of at most kWideKc rows (each K block
// reloads and stores every C tile) and as many panels as keep the KC x NC block within half of L2. Measured
// on Zen 5 (one thread, in-process A/B against oneDNN, 1024 x 1024 blocks -> these): 1024^3 0.96 -> 1.02x,
// 2048^3 0.95 -> 1.00x, 128 x 3072 x 768 0.94 -> 1.00x, 49 x 2048 x 512 1.01 -> 1.08x; 512^3 and 196 x 256 x
// 2304 equal.
void l2_blocks(GemmBlocking& blk, int64_t k, int64_t npad, int64_t nr) {
  blk.kc = balanced_kc(k, kWideKc, 16);
  const int64_t half_l2 = int64_t(cpu_features().l2_bytes) / 2;
  blk.nc = std::min(std::max(half_l2 / (blk.kc * int64_t(sizeof(float))) / nr * nr, nr), npad);
}

void deepen_in_place(GemmBlocking& blk, int64_t k, bool trans_b, int64_t nr) {
  if (!cpu_features().amd || trans_b || line_panels(nr) || k <= blk.kc) return;
  blk.kc = balanced_kc(k, kWideKc, 16);
}

void run(const Problem& pr, ThreadPool* pool, const UkrInfo& u, APath path = APath::choose) {
  GemmBlocking blk = default_gemm_blocking();
  if (pr.packed) {
    blk.kc = pr.packed->kc();
  } else if (pr.m > small_m_rows(false, u.nr) && wide_fma() && !line_panels(u.nr)) {
    l2_blocks(blk, pr.k, round_up(pr.n, u.nr), u.nr);
  } else if (pr.m > small_m_rows(false, u.nr)) {
    deepen_k_blocks(blk, pr.k, round_up(pr.n, u.nr));
    if (pr.m > small_m_unpacked()) widen_blocks(blk, pr.k, round_up(pr.n, u.nr));
  } else {
    deepen_in_place(blk, pr.k, pr.trans_b, u.nr);
  }
  if (pr.m == 0 || pr.n == 0) return;
  if (pr.k == 0) {
    // C = beta * C, then the epilogue.
    alignas(64) float zeros[64] = {};
    for (int64_t i = 0; i < pr.m; ++i)
      for (int64_t j = 0; j < pr.n; j += 64) {
        const int64_t w = std::min<int64_t>(64, pr.n - j);
        const UkrEpilogue uep = tile_epilogue(*pr.ep, i, j);
        ukr_store_tile(zeros, 0, pr.c + i * pr.ldc + j, pr.ldc, 1, w, pr.ep->beta, &uep);
        apply_tile_act(pr.ep->act, pr.c + i * pr.ldc + j, pr.ldc, 1, w);
      }
    return;
  }
  const int threads = pool ? pool->num_threads() : 1;
  const double flops = 2.0 * double(pr.m) * double(pr.n) * double(pr.k);
  const int64_t panels = (pr.n + u.nr - 1) / u.nr;
  const bool direct = take_direct(u, path);
  // Split N when there are enough panels for every thread, M otherwise. On the
  // direct path A is not packed, so splitting M costs nothing there, while a split
  // of only a few panels leaves each row group of A reused on one or two panels:
  // it wants a few panels per task. With kRowsPerThread+ rows per thread the direct path splits
  // M: each thread's row groups then sweep all of N with A in L1 while the threads
  // share B (measured at 2 threads, prepacked: 256^3 to 1024^3 and 128-197 rows of
  // BERT/ViT shapes 3-9% faster than splitting N).
  const bool rows_per_thread =
      pr.m >= (pr.packed || !wide_fma() ? kRowsPerThread : kRowsPerThreadPacking) * threads;
  const bool split_n =
      threads > 1 && (direct ? !rows_per_thread && (panels >= 4 * threads || pr.m < 4 * u.mr * threads)
                             : panels >= 2 * threads || pr.m < u.mr * threads);
  const bool gemv_t = u.gemv_t && pr.trans_b && (!pr.trans_a || pr.lda == 1);  // x contiguous
  if (direct && pr.m == 1 && !pr.packed && (pr.trans_b ? gemv_t : u.gemv != nullptr)) {
    run_gemv(pr, pool, u, threads, flops);
    return;
  }
  auto range = [&](int64_t m0, int64_t m1, int64_t n0, int64_t n1) {
    if (direct)
      gemm_range_direct(pr, m0, m1, n0, n1, blk, u);
    else
      gemm_range(pr, m0, m1, n0, n1, blk, u);
  };
  if (threads <= 1 || flops < 2e5) {
    range(0, pr.m, 0, pr.n);
    return;
  }
  // N: each task packs or streams its own contiguous run of B panels. A few tasks
  // per thread, handed out as threads come free, so that a thread the OS delays
  // does not hold up the whole product — except small M over a prepacked B, which streams from memory:
  // each task's first pass waits on memory (nothing prefetched it), so one task per thread (BERT-base,
  // GPT-2 and its decode step at two threads 3-5% faster on the Xeon; two per thread: 0.5-2% slower).
  const bool streams = direct && pr.packed && pr.m <= kSmallM;
  const int64_t max_tasks = (streams ? 1 : 4) * int64_t(threads);
  if (split_n) {
    const int64_t per = (panels + max_tasks - 1) / max_tasks;
    pool->run((panels + per - 1) / per, [&](int64_t t) {
      const int64_t n0 = t * per * u.nr, n1 = std::min(pr.n, (t + 1) * per * u.nr);
      if (n0 < n1) range(0, pr.m, n0, n1);
    });
  } else {
    // One task per thread on the direct path, and when each task packs all of B: a thread's rows are then
    // the same contiguous range every call (the caller takes the first), and its A and C rows stay in its
    // own caches from call to call and from one layer to the next. Two tasks per thread from 128 rows each
    // (for some balance) handed rows to whichever thread came free: on Zen 4 at two threads 256^3 ran at
    // 86% of peak against 89%, prepacked 256-512 x 768 x 768 and 256 x 3072 x 768 0.5-1.4% slower.
    const bool b_free = pr.packed || (direct && !pr.trans_b && raw_small_b(pr.k, pr.n, u.nr));
    const int64_t tasks = !b_free || direct ? threads : max_tasks;
    // The direct path reads A in place and splits each range into balanced row groups, so its ranges are
    // equal (ViT's 197 rows at two threads: 99 + 98, 17 groups each, not 102 + 95 in whole slivers, 17 and
    // 16 groups: its GEMMs 2-4% faster, the model 1.4-2%; Xeon, in-process A/B); packed A keeps whole
    // slivers.
    const int64_t slivers = (pr.m + u.mr - 1) / u.mr;
    const int64_t per = (slivers + tasks - 1) / tasks * u.mr;
    const int64_t ntasks = direct ? std::min(tasks, pr.m) : (pr.m + per - 1) / per;
    auto first_row = [&](int64_t t) { return direct ? pr.m * t / ntasks : std::min(pr.m, t * per); };
    pool->run(ntasks, [&](int64_t t) {
      const int64_t m0 = first_row(t), m1 = first_row(t + 1);
      if (m0 < m1) range(m0, m1, 0, pr.n);
    });
  }
}

}  // namespace

GemmBlocking default_gemm_blocking() {
  // KC: an MR x KC sliver of A (6 x 256 x 4 B = 6 KiB) sits in L1 next to the
  // streaming B panel; NC: a KC x NC block of B fills about half of L2 (512 columns
  // of a 1 MiB L2 on Zen 4, 256 of Zen 3's 512 KiB, where 512 had the block spill:
  // 197 x 3072 x 768 2-4% slower).
  static const GemmBlocking blk = [] {
    constexpr int64_t kc = 256;
    const int64_t half_l2 = int64_t(cpu_features().l2_bytes) / 2;
    const int64_t nc = std::clamp<int64_t>(half_l2 / (kc * int64_t(sizeof(float))) / 64 * 64, 128, 1024);
    return GemmBlocking{kc, 144, nc};
  }();
  return blk;
}

void ukr_store_tile(const float* acc, int64_t acc_ld, float* c, int64_t ldc, int64_t mr, int64_t nr,
                    float beta, const UkrEpilogue* ep) {
  for (int64_t i = 0; i < mr; ++i) {
    for (int64_t j = 0; j < nr; ++j) {
      float v = acc[i * acc_ld + j];
      if (beta != 0.0f) v += beta * c[i * ldc + j];
      if (ep) {
        if (ep->bias) v += ep->bias[j];
        if (ep->row_bias) v += ep->row_bias[i];
        if (ep->residual) v += ep->residual[i * ep->ldr + j];
        if (ep->act == Activation::relu)
          v = v > 0.0f ? v : 0.0f;
        else if (ep->act == Activation::clip)
          v = std::min(std::max(v, ep->clip_min), ep->clip_max);
      }
      c[i * ldc + j] = v;
    }
  }
}

// The portable micro-kernel: plain loops the compiler can vectorize for SSE2.
void f32_gemm_ukr_4x16__portable(int64_t kc, const float* a, const float* b, float* c, int64_t ldc,
                                 int64_t mr, int64_t nr, float beta, const UkrEpilogue* ep) {
  float acc[4][16] = {};
  for (int64_t p = 0; p < kc; ++p)
    for (int i = 0; i < 4; ++i) {
      const float av = a[p * 4 + i];
      for (int j = 0; j < 16; ++j) acc[i][j] += av * b[p * 16 + j];
    }
  ukr_store_tile(&acc[0][0], 16, c, ldc, mr, nr, beta, ep);
}

PackedB PackedB::pack(const float* b, int64_t ldb, bool trans_b, int64_t k, int64_t n) {
  PackedB p;
  p.k_ = k;
  p.n_ = n;
  p.kc_ = kc_for(k, n);
  p.nr_ = native_nr();
  p.size_ = packed_floats(k, n, p.kc_, p.nr_) * sizeof(float);
  float* buf = nullptr;
  {
    const HugePagesScope huge;  // weights a small-M GEMM streams from memory (core/memory.h)
    buf = static_cast<float*>(allocate_aligned(p.size_));
  }
  check(buf != nullptr, ErrorCode::runtime, "out of memory packing GEMM weights");
  p.data_ = std::shared_ptr<const float>(buf, [](const float* q) { free_aligned(const_cast<float*>(q)); });
  pack_into(buf, b, ldb, trans_b, k, n);
  advise_huge_pages(buf, p.size_);
  return p;
}

void PackedB::pack_into(float* dst, const float* b, int64_t ldb, bool trans_b, int64_t k, int64_t n) {
  const int64_t kc = kc_for(k, n), nr = native_nr();
  const int64_t npad = round_up(std::max<int64_t>(n, 1), nr);
  const int64_t blocks = std::max<int64_t>((k + kc - 1) / kc, 1);
  for (int64_t pc = 0, blkno = 0; pc < k; pc += kc, ++blkno)
    pack_b_block(b, ldb, trans_b, pc, std::min(kc, k - pc), 0, n, nr, dst + blkno * kc * npad);
  // the unused tail of a short last block (never read; zeroed so the storage is deterministic)
  const int64_t used = k == 0 ? 0 : (k - (blocks - 1) * kc) * npad;
  std::fill(dst + (blocks - 1) * kc * npad + used, dst + blocks * kc * npad, 0.0f);
}

PackedB PackedB::view(const float* data, int64_t k, int64_t n, int64_t kc, int64_t nr,
                      std::shared_ptr<void> keep, int64_t last_nr) {
  PackedB p;
  p.k_ = k;
  p.n_ = n;
  p.kc_ = kc;
  p.nr_ = nr;
  p.last_nr_ = last_nr > 0 ? last_nr : nr;
  p.size_ = packed_floats(k, n, kc, nr) * sizeof(float);
  if (p.last_nr_ != nr) {
    const int64_t whole = n / nr * nr;
    check(p.last_nr_ < nr && p.last_nr_ % 16 == 0 && whole < n && whole + p.last_nr_ >= n && kc >= k,
          ErrorCode::internal,
          "PackedB::view: a narrower last panel covers the columns past the whole "
          "panels, in one K block");
    p.size_ = size_t(k * (whole + p.last_nr_)) * sizeof(float);
  }
  p.data_ = std::shared_ptr<const float>(std::move(keep), data);
  return p;
}

size_t PackedB::packed_floats(int64_t k, int64_t n, int64_t kc, int64_t nr) {
  const int64_t npad = round_up(std::max<int64_t>(n, 1), nr);
  const int64_t blocks = std::max<int64_t>((k + kc - 1) / kc, 1);
  return size_t(blocks * kc * npad);
}

float PackedB::at(const float* data, int64_t k, int64_t n, int64_t kc, int64_t nr, int64_t p, int64_t j) {
  const int64_t npad = round_up(std::max<int64_t>(n, 1), nr);
  const int64_t blk = p / kc, kcb = std::min(kc, k - blk * kc);
  return data[blk * kc * npad + (j / nr) * kcb * nr + (p % kc) * nr + j % nr];
}

int64_t PackedB::native_nr() {
  return selected_ukr().nr;
}
int64_t PackedB::native_kc() {
  return default_gemm_blocking().kc;
}
int64_t PackedB::kc_for(int64_t k, int64_t n) {
  const GemmBlocking base = default_gemm_blocking();
  GemmBlocking blk = base;
  deepen_k_blocks(blk, k, round_up(std::max<int64_t>(n, 1), native_nr()));
  if (k > base.kc && cpu_features().amd) {
    if (wide_fma())
      blk.kc = std::max(blk.kc, balanced_kc(k, kWidePackedKc, 64));  // see kWidePackedKc
    else if (blk.kc == base.kc)
      blk.kc = std::max(base.kc, balanced_kc(k, kPackedKc, 64));  // see widen_blocks
  }
  return blk.kc;
}

void sgemm(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, bool trans_a, const float* b,
           int64_t ldb, bool trans_b, float* c, int64_t ldc, const GemmEpilogue& ep, ThreadPool* pool) {
  // AMX's tiles where the CPU has them and there are rows enough to pay for B's split (gemm_amx.h)
  if (!trans_a && m >= kSplitUnpackedMinRows && n >= kSplitMinCols && k >= 32 && amx_gemm_available() &&
      sgemm_split_unpacked(m, n, k, a, lda, b, ldb, trans_b, c, ldc, ep, pool))
    return;
  run(Problem{m, n, k, a, lda, trans_a, b, ldb, trans_b, nullptr, c, ldc, &ep}, pool, selected_ukr());
}

bool sgemm_with(const std::string& ukr, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
                bool trans_a, const float* b, int64_t ldb, bool trans_b, float* c, int64_t ldc,
                const GemmEpilogue& ep, ThreadPool* pool) {
  bool direct = false;
  const UkrInfo* u = find_ukr(ukr, &direct);
  if (!u) return false;
  run(Problem{m, n, k, a, lda, trans_a, b, ldb, trans_b, nullptr, c, ldc, &ep}, pool, *u,
      direct ? APath::direct : (u->direct ? APath::packed : APath::choose));
  return true;
}

std::vector<std::string> sgemm_kernel_names() {
  std::vector<std::string> v;
  for (const UkrInfo& u : ukr_table()) v.push_back(u.name);
  for (const UkrInfo& u : ukr_table())
    if (u.direct) v.emplace_back(direct_name_of(u));
  return v;
}

void sgemm_packed(int64_t m, const float* a, int64_t lda, bool trans_a, const PackedB& b, float* c,
                  int64_t ldc, const GemmEpilogue& ep, ThreadPool* pool) {
  check(b.nr() == selected_ukr().nr, ErrorCode::internal, "PackedB was packed for another micro-kernel");
  // the packed-A kernels read whole panels: a narrower last panel takes the direct path
  check(b.last_nr() == b.nr() || selected_ukr().direct, ErrorCode::internal,
        "PackedB: a narrower last panel needs a direct-A micro-kernel");
  run(Problem{m, b.n(), b.k(), a, lda, trans_a, nullptr, 0, false, &b, c, ldc, &ep}, pool, selected_ukr(),
      b.last_nr() != b.nr() ? APath::direct : APath::choose);
}

void gemm_apply_activation(Activation act, float clip_min, float clip_max, float* y, int64_t n,
                           ThreadPool* pool) {
  switch (act) {
    case Activation::none:
      return;
    case Activation::relu:
      return unary_f32(UnaryOp::relu, y, y, n, pool);
    case Activation::clip:
      for (int64_t i = 0; i < n; ++i) y[i] = std::min(std::max(y[i], clip_min), clip_max);
      return;
    case Activation::gelu_erf:
      return unary_f32(UnaryOp::gelu_erf, y, y, n, pool);
    case Activation::gelu_tanh:
      return unary_f32(UnaryOp::gelu_tanh, y, y, n, pool);
    case Activation::silu:
      return unary_f32(UnaryOp::silu, y, y, n, pool);
    case Activation::hardswish:
      return unary_f32(UnaryOp::hardswish, y, y, n, pool);
  }
}

std::string sgemm_kernel_name() {
  return selected_ukr().name;
}

}  // namespace tessera::kernels::x86
