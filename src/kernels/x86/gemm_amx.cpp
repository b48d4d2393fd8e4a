// Driver of the bf16x6 f32 GEMM on AMX (gemm_amx.h): the split of B at packing, A's split per call, and the
// blocks spread over the threads; the tile work is amx/f32_gemm_bf16x6__amx.cpp's.
#include "kernels/x86/gemm_amx.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string_view>
#include <vector>

#include "core/cpu_features.h"
#include "core/error.h"
#include "core/memory.h"
#include "kernels/x86/eltwise.h"

#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace tessera::kernels::x86 {
namespace {

constexpr int64_t kBlock = 32;           // rows of an A block, columns of a B block
constexpr int64_t kStepElems = 6 * 512;  // bf16 elements of one block's 32-wide K step
// K steps of a B block kept in L1 (6 KiB each) while the row blocks pass over them
constexpr int64_t kChunk = 2;

// Linux hands out the tile state (8 KiB of XSAVE area) only on request, once per process. (Unused where the
// AMX kernels are not built: the emulated AVX-512 build, non-x86.)
[[maybe_unused]] bool tile_state_granted() {
#if defined(__linux__) && defined(SYS_arch_prctl)
  constexpr int kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
#else
  return false;
#endif
}

float from_bf16(uint16_t h) {
  const uint32_t u = uint32_t(h) << 16;
  float x;
  std::memcpy(&x, &u, 4);
  return x;
}

}  // namespace

bool amx_gemm_available() {
#if defined(TESSERA_HAVE_AMX)
  static const bool ok = [] {
    const char* e = std::getenv("TESSERA_AMX");
    if (e && std::string_view(e) == "0") return false;
    return cpu_features().amx_bf16 && cpu_features().avx512_core() && tile_state_granted();
  }();
  return ok;
#else
  return false;
#endif
}

int64_t split_min_rows(int64_t k, int64_t n) {
  return split_b_bytes(k, n) > size_t(cpu_features().l2_bytes) ? 2 * kSplitMinRows : kSplitMinRows;
}

size_t split_b_bytes(int64_t k, int64_t n) {
  return size_t(round_up(std::max<int64_t>(k, 1), kBlock) * round_up(std::max<int64_t>(n, 1), kBlock) * 6);
}

bool split_b_finite(const float* b, int64_t ldb, bool trans_b, int64_t k, int64_t n) {
  const int64_t rows = trans_b ? n : k, cols = trans_b ? k : n;
  for (int64_t i = 0; i < rows; ++i) {
    uint32_t inf_or_nan = 0;  // exponent all ones (integer tests: the loop vectorizes)
    for (int64_t j = 0; j < cols; ++j) {
      uint32_t u;
      std::memcpy(&u, b + i * ldb + j, 4);
      inf_or_nan |= uint32_t((u & 0x7F800000u) == 0x7F800000u);
    }
    if (inf_or_nan) return false;
  }
  return true;
}

void split_b_into(void* dst, const float* b, int64_t ldb, bool trans_b, int64_t k, int64_t n) {
#if defined(TESSERA_HAVE_AMX)
  const int64_t kp = round_up(std::max<int64_t>(k, 1), kBlock),
                nb = round_up(std::max<int64_t>(n, 1), kBlock) / kBlock;
  auto* out = static_cast<uint16_t*>(dst);
  if (trans_b) {  // each block gathers its 32 rows of B^T, contiguous along K
    for (int64_t j = 0; j < nb; ++j)
      amx::split_b_block(b, ldb, true, k, n, j * kBlock, kp, out + j * kp / 32 * kStepElems, 0, kp);
    return;
  }
  // a band of 32 rows (one K step) across every column block: B read in memory order (block by block down all
  // of K, rows a page or more apart, took 3 ns a weight)
  for (int64_t p0 = 0; p0 < kp; p0 += 32)
    for (int64_t j = 0; j < nb; ++j)
      amx::split_b_block(b, ldb, false, k, n, j * kBlock, kp, out + j * kp / 32 * kStepElems, p0, p0 + 32);
#else
  (void)dst, (void)b, (void)ldb, (void)trans_b, (void)k, (void)n;
  check(false, ErrorCode::internal, "split_b_into: built without AMX");
#endif
}

float split_b_at(const void* split, int64_t k, int64_t n, int64_t p, int64_t j) {
  (void)n;
  const int64_t kp = round_up(std::max<int64_t>(k, 1), kBlock);
  const auto* s = static_cast<const uint16_t*>(split) + (j / kBlock) * kp / 32 * kStepElems +
                  (p / 32) * kStepElems + ((j % kBlock) / 16) * 512 + ((p % 32) / 2) * 32 + (j % 16) * 2 +
                  p % 2;
  return from_bf16(s[0]) + from_bf16(s[2 * 512]) + from_bf16(s[4 * 512]);
}

bool sgemm_split_unpacked(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b,
                          int64_t ldb, bool trans_b, float* c, int64_t ldc, const GemmEpilogue& ep,
                          ThreadPool* pool) {
#if defined(TESSERA_HAVE_AMX)
  if (m <= 0 || n <= 0) return true;
  if (!split_b_finite(b, ldb, trans_b, k, n)) return false;
  const int64_t kp = round_up(std::max<int64_t>(k, 1), kBlock), nb = (n + kBlock - 1) / kBlock;
  thread_local std::unique_ptr<void, void (*)(void*)> bbuf{nullptr, free_aligned};
  thread_local size_t bbuf_bytes = 0;
  if (const size_t bytes = split_b_bytes(k, n); bbuf_bytes < bytes) {
    bbuf.reset(allocate_aligned(bytes));
    check(bbuf != nullptr, ErrorCode::runtime, "out of memory splitting GEMM operand");
    bbuf_bytes = bytes;
  }
  auto* out = static_cast<uint16_t*>(bbuf.get());
  parallel_for(pool, nb, 1, [&](int64_t j0, int64_t j1) {
    for (int64_t j = j0; j < j1; ++j)
      amx::split_b_block(b, ldb, trans_b, k, n, j * kBlock, kp, out + j * kp / 32 * kStepElems, 0, kp);
  });
  return sgemm_split(m, n, k, a, lda, out, c, ldc, ep, pool);
#else
  (void)m, (void)n, (void)k, (void)a, (void)lda, (void)b, (void)ldb, (void)trans_b, (void)c, (void)ldc,
      (void)ep, (void)pool;
  return false;
#endif
}

bool sgemm_split(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const void* b_split, float* c,
                 int64_t ldc, const GemmEpilogue& ep, ThreadPool* pool) {
#if defined(TESSERA_HAVE_AMX)
  check(amx_gemm_available(), ErrorCode::internal, "sgemm_split without AMX");
  if (m <= 0 || n <= 0) return true;
  const int64_t kp = round_up(std::max<int64_t>(k, 1), kBlock), ksteps = kp / 32;
  const int64_t mb = (m + kBlock - 1) / kBlock, nb = (n + kBlock - 1) / kBlock;
  const size_t blk = size_t(ksteps * kStepElems);
  // A's split, reused across calls on this thread
  thread_local std::unique_ptr<uint16_t, void (*)(void*)> abuf{nullptr, free_aligned};
  thread_local size_t abuf_elems = 0;
  if (abuf_elems < mb * blk) {
    abuf.reset(static_cast<uint16_t*>(allocate_aligned((mb * blk) * sizeof(uint16_t))));
    check(abuf != nullptr, ErrorCode::runtime, "out of memory splitting GEMM operand");
    abuf_elems = mb * blk;
  }
  uint16_t* as = abuf.get();
  std::vector<char> finite(size_t(mb), 1);
  parallel_for(pool, mb, 1, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i)
      finite[size_t(i)] =
          amx::split_a_block(a + i * kBlock * lda, lda, std::min(kBlock, m - i * kBlock), k, kp, as + i * blk)
              ? 1
              : 0;
  });
  if (!std::all_of(finite.begin(), finite.end(), [](char f) { return f != 0; })) return false;
  const auto* bs = static_cast<const uint16_t*>(b_split);
  const bool pass_act = activation_in_pass(ep.act);
  // Tasks: column ranges where there are column blocks enough for every thread, row ranges otherwise.
  const int threads = pool ? pool->num_threads() : 1;
  const bool split_n = nb >= 2 * threads;
  const int64_t parts = split_n ? nb : mb;
  parallel_for(pool, parts, 1, [&](int64_t p0, int64_t p1) {
    const int64_t i0 = split_n ? 0 : p0, i1 = split_n ? mb : p1;
    const int64_t j0 = split_n ? p0 : 0, j1 = split_n ? p1 : nb;
    // Accumulators for a tile of row blocks x a group of column blocks (4 KiB each) stay in a quarter of L2
    // (A's chunk for the tile's rows, 24 KiB a row block, in L2 beside them, comes from memory once a group;
    // B's chunk once a row tile): all the rows where they fit, else a square-ish tile, evened out.
    const int64_t l2 = cpu_features().l2_bytes, nbt = j1 - j0, mbt = i1 - i0;
    const int64_t budget = std::max<int64_t>(l2 / 4 / (kBlock * kBlock * 4), 1);
    auto even = [](int64_t total, int64_t most) {
      const int64_t parts = (total + most - 1) / most;
      return (total + parts - 1) / parts;
    };
    const int64_t tile_rows =
        mbt * nbt <= budget ? mbt
                            : even(mbt, std::clamp<int64_t>(int64_t(std::sqrt(double(budget))), 1, mbt));
    const int64_t group = even(nbt, std::clamp<int64_t>(budget / tile_rows, 1, nbt));
    thread_local std::vector<float> accs;
    accs.resize(size_t(tile_rows * group * kBlock * kBlock) + 16);
    float* acc0 = reinterpret_cast<float*>((reinterpret_cast<uintptr_t>(accs.data()) + 63) & ~uintptr_t(63));
    auto a_at = [&](int64_t i, int64_t s) { return as + i * blk + s * kStepElems; };
    amx::configure_tiles();
    bool staged = false;
    for (int64_t r0 = i0; r0 < i1; r0 += tile_rows) {
      const int64_t r1 = std::min(i1, r0 + tile_rows), rows_t = r1 - r0;
      auto acc_of = [&](int64_t i, int64_t j, int64_t g0) {
        return acc0 + ((j - g0) * rows_t + (i - r0)) * kBlock * kBlock;
      };
      for (int64_t g0 = j0; g0 < j1; g0 += group) {
        const int64_t g1 = std::min(j1, g0 + group);
        // K in chunks of kChunk steps: a B block's chunk stays in L1 while every row block's streams past it
        for (int64_t s0 = 0; s0 < ksteps; s0 += kChunk) {
          const int64_t sn = std::min(kChunk, ksteps - s0);
          for (int64_t j = g0; j < g1; ++j) {
            // the B chunk read after this one (the next block's, else the group's next chunk), into L2 a
            // slice per row block: its first row block reads it from memory otherwise, at tile loads' pace
            const int64_t pj = j + 1 < g1 ? j + 1 : g0, ps = j + 1 < g1 ? s0 : s0 + kChunk;
            const uint16_t* pf = ps < ksteps ? bs + pj * blk + ps * kStepElems : nullptr;
            const int64_t pf_total = pf ? std::min(kChunk, ksteps - ps) * kStepElems * 2 / 64 : 0;
            const int64_t pf_slice = (pf_total + rows_t - 1) / rows_t;
            for (int64_t i = r0; i < r1; ++i) {
              const uint16_t* next = i + 1 < r1             ? a_at(i + 1, s0)
                                     : j + 1 < g1           ? a_at(r0, s0)
                                     : s0 + kChunk < ksteps ? a_at(r0, s0 + kChunk)
                                     : g1 < j1              ? a_at(r0, 0)
                                     : r1 < i1              ? a_at(r1, 0)
                                                            : nullptr;
              const int64_t pf_first = std::min(pf_total, (i - r0) * pf_slice);
              amx::block_product(sn, a_at(i, s0), bs + j * blk + s0 * kStepElems, acc_of(i, j, g0), s0 > 0,
                                 staged, next, pf ? pf + pf_first * 32 : nullptr,
                                 std::min(pf_slice, pf_total - pf_first));
              staged = next != nullptr;
            }
          }
        }
        for (int64_t i = r0; i < r1; ++i) {
          const int64_t row = i * kBlock, rows = std::min(kBlock, m - row);
          for (int64_t j = g0; j < g1; ++j) {
            const int64_t col = j * kBlock, cols = std::min(kBlock, n - col);
            const UkrEpilogue e = tile_epilogue(ep, row, col);
            amx::finish_block(acc_of(i, j, g0), rows, cols, c + row * ldc + col, ldc, ep.alpha, ep.beta, &e);
          }
          if (pass_act) {
            const int64_t col = g0 * kBlock, cols = std::min(g1 * kBlock, n) - col;
            for (int64_t r = row; r < row + rows; ++r)
              gemm_apply_activation(ep.act, ep.clip_min, ep.clip_max, c + r * ldc + col, cols, nullptr);
          }
        }
      }
    }
    amx::release_tiles();
  });
  return true;
#else
  (void)m, (void)n, (void)k, (void)a, (void)lda, (void)b_split, (void)c, (void)ldc, (void)ep, (void)pool;
  check(false, ErrorCode::internal, "sgemm_split: built without AMX");
  return false;
#endif
}

}  // namespace tessera::kernels::x86
