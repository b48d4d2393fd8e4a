// Coded weights (gemm.h, CodedB): the coding, its reading back, and the GEMM over it.
//
// Storage, one byte buffer:
//   header (kHeaderBytes): "TSCB", escape count (int64 at byte 8), the 16-entry table (uint32 at byte 64)
//   panel records: K block after K block (kc rows, the last block shorter), each block's panels one after
//     another, kcb rows x kRowBytes each: K * panels * kRowBytes in all
//   escape index: blocks * panels + 1 uint32, where each (block, panel)'s escapes start (padded to 8 bytes)
//   escapes: CodedEscape, block-major then panel, row, column
#include <algorithm>
#include <cstring>
#include <numeric>
#include <vector>

#include "core/cpu_features.h"
#include "core/error.h"
#include "core/memory.h"
#include "kernels/x86/gemm.h"

namespace tessera::kernels::x86 {
namespace {

constexpr char kMagic[4] = {'T', 'S', 'C', 'B'};
constexpr int64_t kNr = CodedB::kNr, kRow = CodedB::kRowBytes;

int64_t blocks_of(int64_t k, int64_t kc) {
  return std::max<int64_t>((k + kc - 1) / kc, 1);
}
int64_t panels_of(int64_t n) {
  return (std::max<int64_t>(n, 1) + kNr - 1) / kNr;
}
size_t index_bytes(int64_t k, int64_t n, int64_t kc) {
  return (size_t(blocks_of(k, kc) * panels_of(n) + 1) * sizeof(uint32_t) + 7) / 8 * 8;
}
uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}
float float_of(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// Portable reads of one record's column (reference reads; the kernels decode 64 at once): its 4-bit code,
// and its float (code 15 decodes to +0).
uint8_t code_at(const uint8_t* rec, int64_t col) {
  const int64_t v = col / 16, l = col % 16;
  return uint8_t(rec[192 + (v / 2) * 16 + l] >> (4 * (v & 1))) & 0xF;
}
float decode(const uint8_t* rec, const uint32_t* table, int64_t col) {
  const uint32_t low =
      uint32_t(rec[3 * col]) | uint32_t(rec[3 * col + 1]) << 8 | uint32_t(rec[3 * col + 2]) << 16;
  return float_of(table[code_at(rec, col)] | low);
}

}  // namespace

bool CodedB::available() {
  return cpu_features().avx512vbmi && cpu_features().avx512_core() && PackedB::native_nr() == kNr;
}

CodedB::Plan CodedB::plan(const float* b, int64_t ldb, bool trans_b, int64_t k, int64_t n) {
  Plan pl;
  pl.kc = PackedB::kc_for(k, n);
  // four interleaved histograms: consecutive weights mostly share a top byte, and one counter would wait on
  // its own last increment
  std::vector<int64_t> hist(4 * 256, 0), count(256, 0);
  const int64_t rows = trans_b ? n : k, cols = trans_b ? k : n;  // B as stored
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = b + r * ldb;
    for (int64_t c = 0; c < cols; ++c) ++hist[size_t((c & 3) * 256 + (bits_of(row[c]) >> 24))];
  }
  for (int t = 0; t < 256; ++t)
    count[size_t(t)] =
        hist[size_t(t)] + hist[size_t(256 + t)] + hist[size_t(512 + t)] + hist[size_t(768 + t)];
  std::vector<int> order(256);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int x, int y) { return count[size_t(x)] > count[size_t(y)]; });
  std::fill(std::begin(pl.code), std::end(pl.code), uint8_t(15));
  for (int c = 0; c < 15; ++c) {
    if (count[size_t(order[size_t(c)])] == 0) break;
    pl.table[c] = uint32_t(order[size_t(c)]) << 24;
    pl.code[order[size_t(c)]] = uint8_t(c);
  }
  for (int t = 0; t < 256; ++t)
    if (pl.code[t] == 15) pl.escapes += count[size_t(t)];
  pl.bytes = bytes_for(k, n, pl.kc, pl.escapes);
  return pl;
}

bool CodedB::worthwhile(const Plan& plan, int64_t k, int64_t n) {
  return available() && k > 0 && n > 0 && plan.escapes * 1024 <= k * n;
}

size_t CodedB::bytes_for(int64_t k, int64_t n, int64_t kc, int64_t escapes) {
  return size_t(kHeaderBytes) + size_t(std::max<int64_t>(k, 0) * panels_of(n) * kRow) +
         index_bytes(k, n, kc) + size_t(escapes) * sizeof(CodedEscape);
}

void CodedB::pack_into(uint8_t* dst, const Plan& pl, const float* b, int64_t ldb, bool trans_b, int64_t k,
                       int64_t n) {
  const int64_t kc = pl.kc, panels = panels_of(n), blocks = blocks_of(k, kc);
  std::memset(dst, 0, kHeaderBytes);
  std::memcpy(dst, kMagic, sizeof kMagic);
  std::memcpy(dst + 8, &pl.escapes, sizeof pl.escapes);
  std::memcpy(dst + 64, pl.table, sizeof pl.table);
  uint8_t* recs = dst + kHeaderBytes;
  auto* index = reinterpret_cast<uint32_t*>(recs + k * panels * kRow);
  auto* esc = reinterpret_cast<CodedEscape*>(reinterpret_cast<uint8_t*>(index) + index_bytes(k, n, kc));
  std::memset(index, 0, index_bytes(k, n, kc));
  uint32_t e = 0;
  const bool vector = available();  // the same bytes, 64 weights at a time
  for (int64_t blk = 0; blk < blocks; ++blk) {
    const int64_t pc = blk * kc, kcb = std::max<int64_t>(std::min(kc, k - pc), 0);
    for (int64_t j = 0; j < panels; ++j) {
      index[blk * panels + j] = e;
      uint8_t* rec = recs + pc * panels * kRow + j * kcb * kRow;
      const int64_t valid = std::min(kNr, n - j * kNr);
      for (int64_t p = 0; p < kcb; ++p, rec += kRow) {
        if (vector && !trans_b) {
          CodedEscape found[kNr];
          const int64_t count =
              f32_code_row__avx512vbmi(b + (pc + p) * ldb + j * kNr, valid, pl.code, rec, found, uint16_t(p));
          check(e + count <= uint64_t(pl.escapes), ErrorCode::internal,
                "coded weights: more escapes than planned");
          std::copy(found, found + count, esc + e);
          e += uint32_t(count);
          continue;
        }
        uint32_t w[kNr] = {};
        uint8_t codes[kNr];
        if (!trans_b)
          std::memcpy(w, b + (pc + p) * ldb + j * kNr, size_t(valid) * sizeof(float));
        else
          for (int64_t col = 0; col < valid; ++col) w[col] = bits_of(b[(j * kNr + col) * ldb + pc + p]);
        for (int64_t col = 0; col < kNr; ++col) {
          codes[col] = col < valid ? pl.code[w[col] >> 24] : uint8_t(15);  // padding: +0, no escape
          if (codes[col] == 15 && col < valid) {
            check(e < uint32_t(pl.escapes), ErrorCode::internal, "coded weights: more escapes than planned");
            esc[e++] = CodedEscape{uint16_t(p), uint8_t(col), 0, float_of(w[col])};
            w[col] = 0;
          }
        }
        // low three bytes: four at a time, each overwriting the last one's fourth
        for (int64_t col = 0; col + 1 < kNr; ++col) std::memcpy(rec + 3 * col, &w[col], 4);
        std::memcpy(rec + 3 * (kNr - 1), &w[kNr - 1], 3);
        for (int64_t l = 0; l < 16; ++l) {
          rec[192 + l] = uint8_t(codes[l] | codes[16 + l] << 4);
          rec[208 + l] = uint8_t(codes[32 + l] | codes[48 + l] << 4);
        }
      }
    }
  }
  index[blocks * panels] = e;
  check(e == uint32_t(pl.escapes), ErrorCode::internal, "coded weights: fewer escapes than planned");
}

CodedB CodedB::pack(const float* b, int64_t ldb, bool trans_b, int64_t k, int64_t n) {
  const Plan pl = plan(b, ldb, trans_b, k, n);
  uint8_t* buf = nullptr;
  {
    const HugePagesScope huge;  // streamed from memory by the GEMV (core/memory.h)
    buf = static_cast<uint8_t*>(allocate_aligned(pl.bytes));
  }
  check(buf != nullptr, ErrorCode::runtime, "out of memory coding GEMM weights");
  std::shared_ptr<uint8_t> keep(buf, [](uint8_t* q) { free_aligned(q); });
  pack_into(buf, pl, b, ldb, trans_b, k, n);
  advise_huge_pages(buf, pl.bytes);
  return view(buf, pl.bytes, k, n, pl.kc, keep);
}

CodedB CodedB::view(const uint8_t* data, size_t bytes, int64_t k, int64_t n, int64_t kc,
                    std::shared_ptr<void> keep) {
  check(k >= 0 && n > 0 && kc > 0 && bytes >= size_t(kHeaderBytes) && std::memcmp(data, kMagic, 4) == 0,
        ErrorCode::invalid_argument, "coded GEMM weights: not a coding (bad header)");
  CodedB c;
  std::memcpy(&c.escapes_, data + 8, sizeof c.escapes_);
  check(c.escapes_ >= 0 && c.escapes_ <= k * n && bytes == bytes_for(k, n, kc, c.escapes_),
        ErrorCode::invalid_argument, "coded GEMM weights: ", bytes, " bytes do not fit K = ", k, ", N = ", n,
        ", kc = ", kc);
  c.data_ = data;
  c.bytes_ = bytes;
  c.k_ = k, c.n_ = n, c.kc_ = kc;
  c.table_ = reinterpret_cast<const uint32_t*>(data + 64);
  c.index_ = reinterpret_cast<const uint32_t*>(data + kHeaderBytes + k * panels_of(n) * kRow);
  c.esc_ = reinterpret_cast<const CodedEscape*>(reinterpret_cast<const uint8_t*>(c.index_) +
                                                index_bytes(k, n, kc));
  c.keep_ = std::shared_ptr<const uint8_t>(std::move(keep), data);
  return c;
}

const uint8_t* CodedB::panel(int64_t pc, int64_t j) const {
  return data_ + kHeaderBytes + pc * panels() * kRow + j * std::min(kc_, k_ - pc) * kRow;
}

const uint32_t* CodedB::escape_index(int64_t pc, int64_t j) const {
  return index_ + (pc / kc_) * panels() + j;
}

void CodedB::decode_panels(int64_t pc, int64_t j0, int64_t count, float* dst) const {
  const int64_t kcb = std::min(kc_, k_ - pc);
  f32_decode_coded_rows__avx512vbmi(panel(pc, j0), kcb * count, table_, dst);
  const uint32_t* ix = escape_index(pc, j0);
  const int64_t e1 = std::min<int64_t>(ix[count], escapes_);
  for (int64_t e = std::min<int64_t>(ix[0], escapes_); e < e1; ++e) {
    // which of the panels: the first whose escapes end past e
    const int64_t j = std::upper_bound(ix, ix + count + 1, uint32_t(e)) - ix - 1;
    const CodedEscape& x = esc_[e];
    if (j >= 0 && j < count && x.row < kcb && x.col < kNr) dst[j * kcb * kNr + x.row * kNr + x.col] = x.value;
  }
}

float CodedB::at(const uint8_t* data, size_t bytes, int64_t k, int64_t n, int64_t kc, int64_t p, int64_t j) {
  return view(data, bytes, k, n, kc, nullptr).at(p, j);
}

float CodedB::at(int64_t p, int64_t j) const {
  const int64_t pc = p / kc_ * kc_, jp = j / kNr, col = j % kNr;
  const uint8_t* rec = panel(pc, jp) + (p - pc) * kRow;
  if (code_at(rec, col) != 15) return decode(rec, table_, col);
  const uint32_t* ix = escape_index(pc, jp);
  for (int64_t e = ix[0]; e < std::min<int64_t>(ix[1], escapes_); ++e)
    if (esc_[e].row == p - pc && esc_[e].col == col) return esc_[e].value;
  return 0.0f;
}

void sgemm_coded(int64_t m, const float* a, int64_t lda, bool trans_a, const CodedB& b, float* c, int64_t ldc,
                 const GemmEpilogue& ep, ThreadPool* pool) {
  check(CodedB::available(), ErrorCode::unsupported, "coded GEMM weights need AVX-512 VBMI");
  const int64_t k = b.k(), n = b.n(), kc = b.kc(), panels = b.panels();
  if (m <= 0) return;
  const int threads = pool ? pool->num_threads() : 1;
  const int tasks = int(std::min<int64_t>(threads, panels));
  // this run of columns' epilogue
  auto offset = [&](int64_t j0) {
    GemmEpilogue e = ep;
    if (e.bias) e.bias += j0;
    if (e.residual) e.residual += j0;
    return e;
  };
  // Up to kRows rows decode each panel row in registers (once per group of 6 rows); more decode a few panels
  // at a time into PackedB's layout for its kernel (the decoding then costs little against the FMAs).
  constexpr int64_t kRows = 32;
  const bool gelu = activation_in_pass(ep.act);  // the GELUs and SiLU: a pass over finished rows
  // A with K contiguous (rows lda apart): the caller's, or a copy of a transposed one with more than one row
  std::vector<float> a_rows;
  const float* ar = a;
  int64_t lda_r = lda;
  if (trans_a && m > 1 && m <= kRows) {
    a_rows.resize(size_t(m * k));
    for (int64_t i = 0; i < m; ++i)
      for (int64_t p = 0; p < k; ++p) a_rows[size_t(i * k + p)] = a[p * lda + i];
    ar = a_rows.data(), lda_r = k;
  }
  auto range = [&](int64_t p0, int64_t p1) {
    if (m <= kRows && k > 0) {
      // whole panels straight into C, one K block after another; a partial last panel into a tile
      const int64_t whole = std::min(p1, n / kNr) - p0;
      alignas(64) float tail[kRows * kNr];
      const int64_t cs_a = trans_a ? lda : 1;  // one row: A's stride along K
      for (int64_t pc = 0; pc < k; pc += kc) {
        const int64_t kcb = std::min(kc, k - pc);
        const bool first = pc == 0, last = pc + kcb >= k;
        auto product = [&](int64_t j0, int64_t count, float* cp, int64_t ldc_p, float beta,
                           const UkrEpilogue* u) {
          if (m == 1)
            f32_gemv_coded_64__avx512vbmi(kcb, a + pc * cs_a, cs_a, b.panel(pc, j0), count, b.table(),
                                          b.escape_index(pc, j0), b.escape_list(), b.escapes(), cp, ep.alpha,
                                          beta, u);
          else
            f32_gemm_coded_rows_64__avx512vbmi(m, kcb, ar + pc, lda_r, b.panel(pc, j0), count, b.table(),
                                               b.escape_index(pc, j0), b.escape_list(), b.escapes(), cp,
                                               ldc_p, ep.alpha, beta, u);
        };
        if (whole > 0) {
          const GemmEpilogue e = offset(p0 * kNr);
          const UkrEpilogue u{e.bias,     e.row_bias, e.residual, e.ldr, gelu ? Activation::none : e.act,
                              e.clip_min, e.clip_max};
          product(p0, whole, c + p0 * kNr, ldc, first ? ep.beta : 1.0f, last ? &u : nullptr);
        }
        if (p0 + whole < p1) product(p0 + whole, 1, tail, kNr, first ? 0.0f : 1.0f, nullptr);
      }
      if (whole > 0 && gelu)
        for (int64_t i = 0; i < m; ++i)
          gemm_apply_activation(ep.act, ep.clip_min, ep.clip_max, c + i * ldc + p0 * kNr, whole * kNr);
      if (p0 + whole < p1) {
        const int64_t j0 = (p0 + whole) * kNr;
        const GemmEpilogue e = offset(j0);
        const UkrEpilogue u{e.bias,     e.row_bias, e.residual, e.ldr, gelu ? Activation::none : e.act,
                            e.clip_min, e.clip_max};
        ukr_store_tile(tail, kNr, c + j0, ldc, m, n - j0, ep.beta, &u);
        if (gelu)
          for (int64_t i = 0; i < m; ++i)
            gemm_apply_activation(ep.act, ep.clip_min, ep.clip_max, c + i * ldc + j0, n - j0);
      }
      return;
    }
    // More rows: a few panels at a time decoded (exactly) into PackedB's layout, then its kernel over them.
    constexpr int64_t kChunk = 4;
    const int64_t blocks = blocks_of(k, kc);
    AlignedScratch scratch;
    float* buf = scratch.get(size_t(blocks * kc * kChunk * kNr));
    for (int64_t j = p0; j < p1; j += kChunk) {
      const int64_t cnt = std::min(kChunk, p1 - j), cols = std::min(cnt * kNr, n - j * kNr);
      for (int64_t pc = 0; pc < k; pc += kc) b.decode_panels(pc, j, cnt, buf + (pc / kc) * kc * cnt * kNr);
      const PackedB pb = PackedB::view(buf, k, cols, kc, kNr, nullptr);
      sgemm_packed(m, a, lda, trans_a, pb, c + j * kNr, ldc, offset(j * kNr), nullptr);
    }
  };
  if (tasks <= 1) {
    range(0, panels);
    return;
  }
  pool->run(tasks, [&](int64_t t) { range(panels * t / tasks, panels * (t + 1) / tasks); });
}

}  // namespace tessera::kernels::x86
