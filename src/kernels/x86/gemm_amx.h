// f32 GEMM on AMX's bf16 tile unit at f32 accuracy ("bf16x6"), for CPUs with AMX-TILE and AMX-BF16
// (Intel Sapphire Rapids and later).
//
// Each f32 operand is split exactly into three bf16 pieces, x = x0 + x1 + x2 (x0 = x rounded to bf16, x1 the
// remainder rounded, x2 the rest: 8 + 8 + 8 significant bits hold all 24 of an f32). The product sums six of
// the nine piece products, a_i * b_j for i + j <= 2, each a TDPBF16PS accumulating in f32 tiles. The three
// dropped ones are below 2^-26 of |a * b| (under the f32 rounding of the product itself), so the result is
// an f32 GEMM's to within its own rounding (the order of the sums differs). Denormal pieces are flushed by
// the tile unit (values under ~1e-33 lose their low bits). An A holding Inf or NaN takes the f32 path (an
// Inf's pieces times B's zero pieces would be NaN), as does a B holding them (split_b_finite).
//
// One TDPBF16PS is 16 x 16 x 32 MACs in 16 cycles: 1024 bf16 FLOP a cycle, 16x the f32 FMA peak of an
// AVX-512 core, so the six products still run at ~2.7x it where the tile loads keep up.
//
// Layouts: B (weights) is split once (at session creation) into blocks of 32 columns; per block, per 32-row
// K step, the three pieces' two 16-column tiles (16 rows of K pairs x 16 columns x 2: the VNNI order
// TDPBF16PS reads), 1 KiB each. A is split per call the same way by blocks of 32 rows.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/x86/gemm.h"

namespace tessera::kernels::x86 {

// Whether this CPU has AMX-TILE and AMX-BF16 and the OS granted this process the tile state (Linux's
// arch_prctl(ARCH_REQ_XCOMP_PERM)); TESSERA_AMX=0 turns it off, as does TESSERA_ISA below avx512.
bool amx_gemm_available();

// Bytes of B (K x N) split for sgemm_split: K rounded up to 32, N to 32, six bytes an element (a whole number
// of floats: split_b_floats, as FusedGemm stores the split after B's f32 packing).
size_t split_b_bytes(int64_t k, int64_t n);
inline size_t split_b_floats(int64_t k, int64_t n) {
  return split_b_bytes(k, n) / sizeof(float);
}
// Splits op(B) (K x N; N x K rows ldb apart when trans_b) into dst (split_b_bytes(k, n), 64-byte aligned).
void split_b_into(void* dst, const float* b, int64_t ldb, bool trans_b, int64_t k, int64_t n);
// Whether op(B) is all finite (a split of one that is not is never used).
bool split_b_finite(const float* b, int64_t ldb, bool trans_b, int64_t k, int64_t n);
// Element (p, j) of B back from its split (the sum of its pieces), for reference kernels.
float split_b_at(const void* split, int64_t k, int64_t n, int64_t p, int64_t j);

// Rows from which sgemm_split is used over the packed f32 path. Under one 32-row block the tile unit computes
// mostly padding, and B's split is 1.5x the bytes of its f32 packing: on the Xeon VM 16 x 3072 x 768 ran at
// 0.65x the f32 kernel's speed (B in cache), BERT-base at 16 tokens (weights from memory) 1.8x slower; from
// 32 rows 1.1-1.3x faster, from 64 1.25-1.6x.
constexpr int64_t kSplitMinRows = 32;
// ... and where B's split does not fit in L2 (weights streamed from memory each run) from 64: there its 1.5x
// bytes bound 32 rows as the f32 packing's do (a LLaMA-style decoder's 32-token GEMMs at 102-107 GFLOP/s
// either way, the model 7% slower with the split).
int64_t split_min_rows(int64_t k, int64_t n);
// Columns B needs for its split to be worth A's (A's split costs M x K, the product M x K x N: at N = 64,
// 3136 x 64 x 576 ran at 0.6x the f32 kernel's speed; 196 x 256 x 2304 1.25x).
constexpr int64_t kSplitMinCols = 128;

// C (M x N, rows ldc apart) = act(alpha * A * B + beta * C + bias + row_bias + residual) as sgemm_packed,
// with A (M x K, rows lda apart) and B split (split_b_into). Threads split N in 32-column blocks (M in 32-row
// blocks where N has fewer than two a thread). Returns false, having written nothing, where A holds Inf or
// NaN: the caller takes the f32 path.
bool sgemm_split(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const void* b_split, float* c,
                 int64_t ldc, const GemmEpilogue& ep = {}, ThreadPool* pool = nullptr);

// Rows from which sgemm (B not packed) splits B per call and takes sgemm_split: B's split (and its check for
// Inf and NaN) costs what the tiles save below a few hundred rows (Xeon VM, gemm_bench against the f32
// kernel: 128 x 768 x 768 and 196 x 256 x 2304 0.8-0.9x, 256^3 0.7-1.0x; 512^3 1.0-1.2x, 1024^3 1.4x).
constexpr int64_t kSplitUnpackedMinRows = 512;
// sgemm_split over op(B) (K x N, or N x K rows ldb apart when trans_b) split for this call on the pool's
// threads; false (nothing written) where A or B holds Inf or NaN.
bool sgemm_split_unpacked(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b,
                          int64_t ldb, bool trans_b, float* c, int64_t ldc, const GemmEpilogue& ep,
                          ThreadPool* pool);

// The ISA-folder pieces (amx/), called only where amx_gemm_available().
namespace amx {
// Splits rows [0, rows) (rows <= 32) of A (K long, lda apart; rows past `rows` zero) into one 32-row block:
// per 32-wide K step, pieces 0..2 x two 16-row tiles of 16 x 32 bf16 (K padded with zeros to kp). Returns
// whether every value was finite (an Inf's pieces would meet B's zero pieces: Inf * 0 = NaN).
bool split_a_block(const float* a, int64_t lda, int64_t rows, int64_t k, int64_t kp, uint16_t* dst);
// Splits columns [j0, j0 + 32) of op(B), its rows [p0, p1) (even; past K zeros up to kp), into one column
// block (as above for B: 16 K-pairs x 16 x 2 a tile; dst the block's start).
void split_b_block(const float* b, int64_t ldb, bool trans_b, int64_t k, int64_t n, int64_t j0, int64_t kp,
                   uint16_t* dst, int64_t p0, int64_t p1);
// acc (32 x 32 f32, row-major) (+)= the six piece products of one A block and one B block over ksteps K steps
// (a_blk and b_blk at the first). B is read in place (the caller keeps its chunk in L1 across row blocks);
// A's steps are copied into a thread-local L1 buffer one step ahead. a_staged: the previous call on this
// thread was given this a_blk as next_a (its first step is staged already); next_a (or nullptr): the A
// this thread's next call starts with, staged during the last step. pf_lines cache lines from pf are
// prefetched into L2 along the way (the B chunk the caller reads next). The calling thread must have loaded
// the tile configuration (configure_tiles).
void block_product(int64_t ksteps, const uint16_t* a_blk, const uint16_t* b_blk, float* acc, bool accumulate,
                   bool a_staged, const uint16_t* next_a, const uint16_t* pf, int64_t pf_lines);
void configure_tiles();
void release_tiles();
// Finishes rows [0, rows) x columns [0, cols) of a block: c = post(alpha * acc + beta * c) with ep offset to
// the block (bias + col, row_bias + row, residual at the block), acc 32 floats a row.
void finish_block(const float* acc, int64_t rows, int64_t cols, float* c, int64_t ldc, float alpha,
                  float beta, const UkrEpilogue* ep);
}  // namespace amx

}  // namespace tessera::kernels::x86
