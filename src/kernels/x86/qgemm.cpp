#include "kernels/x86/qgemm.h"

#include <emmintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "core/cpu_features.h"
#include "core/memory.h"
#include "kernels/x86/quantize.h"

namespace tessera::kernels::x86 {

namespace {

using TileFn = void (*)(const QTile&);

bool use_vnni() {
  static const bool v = cpu_features().avx512_core() && cpu_features().avx512vnni;
  return v;
}
TileFn tile_kernel() {
  return use_vnni() ? qgemm_tile__avx512vnni : qgemm_tile_portable;
}
void pack_panel(const QPanelPlan& p, uint8_t* panel, int32_t* sums) {
  (use_vnni() ? qpack_panel__avx512vnni : qpack_panel_portable)(p, panel, sums);
}

// Interleaves four rows of `w` bytes (w a multiple of 16) into k-groups of four: out[4 j + r] = row r[j].
void interleave4(const uint8_t* const rows[4], int64_t w, uint8_t* out) {
  for (int64_t j = 0; j < w; j += 16) {
    const __m128i r0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(rows[0] + j));
    const __m128i r1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(rows[1] + j));
    const __m128i r2 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(rows[2] + j));
    const __m128i r3 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(rows[3] + j));
    const __m128i a = _mm_unpacklo_epi8(r0, r1), b = _mm_unpackhi_epi8(r0, r1);
    const __m128i c = _mm_unpacklo_epi8(r2, r3), d = _mm_unpackhi_epi8(r2, r3);
    __m128i* o = reinterpret_cast<__m128i*>(out + 4 * j);
    _mm_storeu_si128(o + 0, _mm_unpacklo_epi16(a, c));
    _mm_storeu_si128(o + 1, _mm_unpackhi_epi16(a, c));
    _mm_storeu_si128(o + 2, _mm_unpacklo_epi16(b, d));
    _mm_storeu_si128(o + 3, _mm_unpackhi_epi16(b, d));
  }
}

// The per-thread buffers of one task: the panel and its column terms.
struct PanelScratch {
  AlignedScratch panel, terms;
};
thread_local PanelScratch tl_panel;

// The GEMM over a prepared A (rows lda apart, readable to kp) and B packed panel by panel by `pack` (called
// as pack(n0, nr, width, scratch panel, sums-or-null), returning the panel: the scratch it packed, or one
// packed before). a_zero / a_rowsum: m values or null; b_zero: n values or
// null (n copies of one value are fine).
struct Job {
  int64_t m, n, k;
  const uint8_t* a;
  int64_t lda;
  bool a_signed;
  const int32_t* a_zero;
  const int32_t* a_rowsum;
  const int32_t* b_zero;
  QOutput out;
  bool a_zero_uniform = false;  // every row's a_zero is a_zero[0] (then a_zero may point at one value)
};

template <class Pack>
void run_job(const Job& j, Pack&& pack, ThreadPool* pool) {
  const int64_t kp = round_up(j.k, 4), np = (j.n + kQNr - 1) / kQNr, strips = (j.m + kQMr - 1) / kQMr;
  const int threads = pool ? pool->num_threads() : 1;
  // Whole panels per task where there are enough of them; otherwise each panel's rows split in chunks of
  // strips (the panel packed once per chunk).
  const int64_t chunks = np >= 2 * threads ? 1 : std::min<int64_t>(strips, (2 * threads + np - 1) / np);
  const int64_t per_chunk = (strips + chunks - 1) / chunks;
  const size_t out_bytes = j.out.type == QOut::i32 ? 4 : 1;
  const bool need_colsum = j.a_zero != nullptr;
  auto task = [&](int64_t t) {
    const int64_t pi = t / chunks, ci = t % chunks;
    const int64_t n0 = pi * kQNr, nr = std::min(kQNr, j.n - n0), nv = (nr + 15) / 16, width = 16 * nv;
    const int64_t s0 = ci * per_chunk, s1 = std::min(strips, s0 + per_chunk);
    if (s0 >= s1) return;
    uint8_t* panel = reinterpret_cast<uint8_t*>(tl_panel.panel.get(size_t(kp * width + 63) / 4));
    int32_t* terms = reinterpret_cast<int32_t*>(tl_panel.terms.get(4 * kQNr));
    int32_t *colsum = terms, *bz = terms + kQNr, *col_term = terms + 2 * kQNr, *col_sub = terms + 3 * kQNr;
    QTile tl;
    tl.b = pack(n0, nr, width, panel, need_colsum ? colsum : nullptr);
    tl.kq = kp / 4, tl.lda = j.lda, tl.nr = int(nr), tl.nv = int(nv), tl.a_signed = j.a_signed;
    if (j.b_zero) {
      std::fill(bz, bz + kQNr, 0);
      std::copy(j.b_zero + n0, j.b_zero + n0 + nr, bz);
      tl.b_zero = bz;
    }
    if (need_colsum) {
      for (int64_t c = 0; c < width; ++c)
        col_term[c] =
            int32_t(uint32_t(c < nr ? colsum[c] : 0) - uint32_t(j.k) * uint32_t(j.b_zero ? bz[c] : 0));
      tl.col_term = col_term;
      if (j.a_zero_uniform) {  // one a_zero for all rows: its term per column, once per panel
        for (int64_t c = 0; c < kQNr; ++c)
          col_sub[c] = c < width ? int32_t(uint32_t(j.a_zero[0]) * uint32_t(col_term[c])) : 0;
        tl.col_sub = col_sub;
      }
    }
    tl.type = j.out.type, tl.scale_per_row = j.out.scale_per_row, tl.y_zero = j.out.y_zero;
    tl.ldc = j.out.ldc, tl.c_transposed = j.out.transposed;
    const TileFn fn = tile_kernel();
    for (int64_t s = s0; s < s1; ++s) {
      const int64_t m0 = s * kQMr;
      tl.mr = int(std::min(kQMr, j.m - m0));
      tl.a = j.a + m0 * j.lda;
      tl.a_zero = j.a_zero && !j.a_zero_uniform ? j.a_zero + m0 : nullptr;
      tl.a_rowsum = j.a_rowsum ? j.a_rowsum + m0 : nullptr;
      tl.bias = j.out.bias ? j.out.bias + m0 : nullptr;
      tl.scale = j.out.scale ? j.out.scale + (j.out.scale_per_row ? m0 : 0) : nullptr;
      tl.c = static_cast<uint8_t*>(j.out.data) +
             (j.out.transposed ? n0 * j.out.ldc + m0 : (m0 * j.out.ldc + n0) * int64_t(out_bytes));
      fn(tl);
    }
  };
  const int64_t tasks = np * chunks;
  if (pool && tasks > 1 && threads > 1)
    pool->run(tasks, task);
  else
    for (int64_t t = 0; t < tasks; ++t) task(t);
}

// A's rows flipped to `want_signed`, padded with zeros to kp, and their sums over k when `sums`.
void prepare_a(int64_t m, int64_t k, const uint8_t* a, int64_t lda, bool flip, bool want_signed,
               std::vector<uint8_t>& copy, const uint8_t*& out, int64_t& out_ld, int32_t* sums) {
  const int64_t kp = round_up(k, 4);
  const bool need_copy = flip || kp != k;
  if (need_copy) {
    copy.assign(size_t(m * kp), 0);
    for (int64_t i = 0; i < m; ++i) {
      const uint8_t* s = a + i * lda;
      uint8_t* d = copy.data() + i * kp;
      const uint8_t x = flip ? 0x80 : 0;
      for (int64_t c = 0; c < k; ++c) d[c] = s[c] ^ x;
    }
    out = copy.data(), out_ld = kp;
  } else {
    out = a, out_ld = lda;
  }
  if (sums)
    for (int64_t i = 0; i < m; ++i) {
      const uint8_t* s = out + i * out_ld;
      int32_t acc = 0;
      if (want_signed)
        for (int64_t c = 0; c < k; ++c) acc += int32_t(int8_t(s[c]));
      else
        for (int64_t c = 0; c < k; ++c) acc += int32_t(s[c]);
      sums[i] = acc;
    }
}

}  // namespace

void qgemm_tile_portable(const QTile& t) {
  const int width = 16 * t.nv;
  for (int i = 0; i < t.mr; ++i) {
    for (int j = 0; j < t.nr; ++j) {
      uint32_t acc = 0;
      const uint8_t* b = t.b + 4 * j;
      for (int64_t tap = 0; tap < t.taps; ++tap) {
        const uint8_t* a = t.a_ptrs ? t.a_ptrs[tap * kQMr + i] : t.a + i * t.lda;
        const int64_t step = t.a_ptrs ? t.a_step : 4;
        for (int64_t q = 0; q < t.kq; ++q, b += 4 * width, a += step)
          for (int r = 0; r < 4; ++r) {
            const int32_t av = t.a_signed ? int32_t(int8_t(a[r])) : int32_t(a[r]);
            const int32_t bv = t.a_signed ? int32_t(b[r]) : int32_t(int8_t(b[r]));
            acc += uint32_t(av * bv);
          }
      }
      if (t.b_zero) acc -= uint32_t(t.a_rowsum[i]) * uint32_t(t.b_zero[j]);
      if (t.a_zero) acc -= uint32_t(t.a_zero[i]) * uint32_t(t.col_term[j]);
      if (t.col_sub) acc -= uint32_t(t.col_sub[j]);
      if (t.bias) acc += uint32_t(t.bias[t.bias_per_col ? j : i]);
      const int32_t c = int32_t(acc);
      if (t.type == QOut::i32) {
        static_cast<int32_t*>(t.c)[i * t.ldc + j] = c;
        continue;
      }
      const int32_t yz = t.y_zero;
      const float lo = float((t.type == QOut::s8 ? -128 : 0) - yz),
                  hi = float((t.type == QOut::s8 ? 127 : 255) - yz);
      float v = float(c) * t.scale[t.scale_per_col ? j : t.scale_per_row ? i : 0];
      v = v > lo ? v : lo;
      v = v < hi ? v : hi;
      const int32_t q = int32_t(std::nearbyint(v)) + yz;
      static_cast<uint8_t*>(t.c)[t.c_transposed ? j * t.ldc + i : i * t.ldc + j] = uint8_t(int8_t(q));
    }
  }
}

void qpack_panel_portable(const QPanelPlan& p, uint8_t* panel, int32_t* sums) {
  alignas(64) uint8_t rows[4][kQNr];
  const uint8_t* rp[4] = {rows[0], rows[1], rows[2], rows[3]};
  if (sums) std::fill(sums, sums + p.width, 0);
  int64_t c = 0, tap = 0;  // kk = c * taps + tap
  for (int64_t k0 = 0; k0 < p.k; k0 += 4) {
    for (int q = 0; q < 4; ++q) {
      uint8_t* d = rows[q];
      std::memset(d, 0, size_t(p.width));
      if (k0 + q >= p.k) continue;
      std::memset(d, p.pad, size_t(p.nr));
      const uint8_t* base = p.base + c * p.step;
      for (int64_t si = p.seg_begin[tap]; si < p.seg_begin[tap + 1]; ++si) {
        const QSeg& sg = p.segs[si];
        for (int64_t j = 0; j < sg.len; ++j) d[sg.d0 + j] = base[sg.off + j * p.sw] ^ p.flip;
      }
      if (sums)
        for (int64_t j = 0; j < p.nr; ++j) sums[j] += p.b_signed ? int32_t(int8_t(d[j])) : int32_t(d[j]);
      if (++tap == p.taps) tap = 0, ++c;
    }
    interleave4(rp, p.width, panel + k0 * p.width);
  }
}

void qmatmul_int8(int64_t m, int64_t n, int64_t k, const void* a, bool a_signed, int64_t lda, int32_t a_zero,
                  const void* b, bool b_signed, int64_t ldb, const int32_t* b_zero, bool b_zero_per_col,
                  const QOutput& out, ThreadPool* pool) {
  if (m <= 0 || n <= 0) return;
  // A on the unsigned side, B on the signed one.
  const int32_t za = a_signed ? a_zero + 128 : a_zero;
  std::vector<int32_t> zb(static_cast<size_t>(n));
  bool any_zb = false;
  for (int64_t c = 0; c < n; ++c) {
    zb[size_t(c)] = (b_zero_per_col ? b_zero[c] : b_zero ? b_zero[0] : 0) - (b_signed ? 0 : 128);
    any_zb |= zb[size_t(c)] != 0;
  }
  std::vector<uint8_t> acopy;
  std::vector<int32_t> rowsum(any_zb ? size_t(m) : 0);
  const uint8_t* ap;
  int64_t ap_ld;
  prepare_a(m, k, static_cast<const uint8_t*>(a), lda, a_signed, false, acopy, ap, ap_ld,
            any_zb ? rowsum.data() : nullptr);
  // one a_zero for every row (its term folded per panel: Job::a_zero_uniform)
  Job j{m,
        n,
        k,
        ap,
        ap_ld,
        false,
        za != 0 ? &za : nullptr,
        any_zb ? rowsum.data() : nullptr,
        any_zb ? zb.data() : nullptr,
        out,
        true};
  const uint8_t* bp = static_cast<const uint8_t*>(b);
  run_job(
      j,
      [&](int64_t n0, int64_t nr, int64_t width, uint8_t* panel, int32_t* sums) {
        const int64_t seg_begin[2] = {0, 1};
        const QSeg seg{0, nr, 0};
        QPanelPlan pl;
        pl.k = k, pl.nr = nr, pl.width = width, pl.base = bp + n0, pl.step = ldb, pl.taps = 1, pl.sw = 1;
        pl.seg_begin = seg_begin, pl.segs = &seg, pl.flip = b_signed ? 0 : 0x80, pl.b_signed = true;
        pl.lo = bp, pl.hi = bp + (k - 1) * ldb + n;
        pack_panel(pl, panel, sums);
        return static_cast<const uint8_t*>(panel);
      },
      pool);
}

void qmatmul_int8_packed(int64_t m, int64_t n, int64_t k, const void* a, bool a_signed, int64_t lda,
                         int32_t a_zero, const uint8_t* b, const QOutput& out, ThreadPool* pool) {
  if (m <= 0 || n <= 0) return;
  const int32_t za = a_signed ? a_zero + 128 : a_zero;
  const int64_t kp = QConvPackedW::k(k, 1, 1);
  const int32_t* colsum =
      reinterpret_cast<const int32_t*>(b + round_up(int64_t(QConvPackedW::panel_bytes(n, k, 1, 1)), 64));
  std::vector<uint8_t> acopy;
  const uint8_t* ap;
  int64_t ap_ld;
  prepare_a(m, k, static_cast<const uint8_t*>(a), lda, a_signed, false, acopy, ap, ap_ld, nullptr);
  Job j{m, n, k, ap, ap_ld, false, za != 0 ? &za : nullptr, nullptr, nullptr, out, true};
  run_job(
      j,
      [&](int64_t n0, int64_t nr, int64_t, uint8_t*, int32_t* sums) {
        if (sums) std::copy(colsum + n0, colsum + n0 + nr, sums);
        return b + n0 * kp;
      },
      pool);
}

namespace {

// A depthwise conv's sums have at most 258 products of |x - zx| <= 255 and |w - zw| <= 255: every partial sum
// is an integer below 2^24, exact in f32. So it runs on f32 kernels over x - zx and w - zw (one output
// channel per input channel: the GEMM's rows would be 1 wide): the fused AVX-512 one (bytes in, bytes out),
// else the f32 depthwise conv and a requantization pass.
void qdepthwise_int8(const Conv2dParams& p, const void* x, bool x_signed, int32_t x_zero, const void* w,
                     bool w_signed, const int32_t* w_zero, bool w_zero_per_oc, const QOutput& out,
                     ThreadPool* pool) {
  const int64_t plane_in = p.h * p.w, plane_out = p.oh() * p.ow(), taps = p.kh * p.kw;
  std::vector<float> wf(size_t(p.oc * taps));
  for (int64_t o = 0; o < p.oc; ++o)
    for (int64_t t = 0; t < taps; ++t) {
      const int64_t i = o * taps + t;
      const int32_t v =
          w_signed ? int32_t(static_cast<const int8_t*>(w)[i]) : int32_t(static_cast<const uint8_t*>(w)[i]);
      wf[size_t(i)] = float(v - (w_zero_per_oc ? w_zero[o] : w_zero ? w_zero[0] : 0));
    }
  if (cpu_features().avx512_core()) {
    qdepthwise_int8__avx512f(p, x, x_signed, x_zero, wf.data(), out, pool);
    return;
  }
  std::vector<float> xf(size_t(p.n * p.c * plane_in)), yf(size_t(p.n * p.oc * plane_out));
  if (x_signed)
    dequantize_i8_f32(static_cast<const int8_t*>(x), int64_t(xf.size()), 1.0f, x_zero, xf.data(), pool);
  else
    dequantize_u8_f32(static_cast<const uint8_t*>(x), int64_t(xf.size()), 1.0f, x_zero, xf.data(), pool);
  conv2d_f32(p, xf.data(), wf.data(), {}, yf.data(), nullptr, pool);
  if (out.type == QOut::i32) {
    int32_t* yp = static_cast<int32_t*>(out.data);
    for (size_t i = 0; i < yf.size(); ++i) yp[i] = int32_t(yf[i]);
    return;
  }
  for (int64_t img = 0; img < p.n; ++img)
    requantize_planes_f32(yf.data() + img * p.oc * plane_out, p.oc, plane_out, out.bias, out.scale,
                          out.scale_per_row, out.y_zero, out.type == QOut::s8,
                          static_cast<uint8_t*>(out.data) + img * p.oc * plane_out, pool);
}

}  // namespace

void qconv2d_int8(const Conv2dParams& p, const void* x, bool x_signed, int32_t x_zero, const void* w,
                  bool w_signed, const int32_t* w_zero, bool w_zero_per_oc, const QOutput& out,
                  ThreadPool* pool) {
  const int64_t oh = p.oh(), ow = p.ow(), npix = oh * ow, cg = p.c / p.groups, og = p.oc / p.groups;
  const int64_t k = cg * p.kh * p.kw;
  if (npix <= 0 || p.oc <= 0) return;
  if (p.is_depthwise() && p.kh * p.kw <= 258 && !out.transposed) {
    qdepthwise_int8(p, x, x_signed, x_zero, w, w_signed, w_zero, w_zero_per_oc, out, pool);
    return;
  }
  // The weights on the signed side (the GEMM's rows), the image on the unsigned side.
  const int32_t zx = x_signed ? x_zero + 128 : x_zero;
  const uint8_t xflip = x_signed ? 0x80 : 0, pad = uint8_t(zx);
  std::vector<int32_t> zw(size_t(p.oc));
  bool any_zw = false;
  for (int64_t o = 0; o < p.oc; ++o) {
    zw[size_t(o)] = (w_zero_per_oc ? w_zero[o] : w_zero ? w_zero[0] : 0) - (w_signed ? 0 : 128);
    any_zw |= zw[size_t(o)] != 0;
  }
  const bool zw_uniform = std::all_of(zw.begin(), zw.end(), [&](int32_t z) { return z == zw[0]; });
  std::vector<uint8_t> wcopy;
  std::vector<int32_t> wsum(zx != 0 ? size_t(p.oc) : 0);
  const uint8_t* wp;
  int64_t w_ld;
  prepare_a(p.oc, k, static_cast<const uint8_t*>(w), k, !w_signed, true, wcopy, wp, w_ld,
            zx != 0 ? wsum.data() : nullptr);
  // x's zero-point terms are per output channel: - zx * (the row's weight sum) + k * zw * zx, folded into a
  // row bias (the GEMM then sees x's zero point as 0)
  std::vector<int32_t> row_bias;
  if (zx != 0) {
    row_bias.resize(size_t(p.oc));
    for (int64_t o = 0; o < p.oc; ++o)
      row_bias[size_t(o)] =
          int32_t((out.bias ? uint32_t(out.bias[o]) : 0u) - uint32_t(zx) * uint32_t(wsum[size_t(o)]) +
                  uint32_t(k) * uint32_t(zw[size_t(o)]) * uint32_t(zx));
  }
  const uint8_t* xb = static_cast<const uint8_t*>(x);
  const size_t out_bytes = out.type == QOut::i32 ? 4 : 1;
  // Each panel's pixels: where its taps start in the input (row and column before the kernel offset).
  for (int64_t img = 0; img < p.n; ++img)
    for (int64_t g = 0; g < p.groups; ++g) {
      const uint8_t* xg = xb + (img * p.c + g * cg) * p.h * p.w;
      QOutput o = out;
      o.ldc = out.transposed ? p.oc : npix;  // channels-last: a pixel's channels, transposed stores
      o.data =
          static_cast<uint8_t*>(out.data) +
          (out.transposed ? img * npix * p.oc + g * og : (img * p.oc + g * og) * npix) * int64_t(out_bytes);
      if (!row_bias.empty()) o.bias = row_bias.data();
      if (o.bias) o.bias += g * og;
      if (o.scale && o.scale_per_row) o.scale += g * og;
      Job j{og,      npix,    k, wp + g * og * w_ld, w_ld, true, any_zw ? zw.data() + g * og : nullptr,
            nullptr, nullptr, o, zw_uniform};
      run_job(
          j,
          [&](int64_t n0, int64_t nr, int64_t width, uint8_t* panel, int32_t* sums) {
            // each tap's segments: per output row the panel covers, the run of pixels whose tap is inside
            thread_local std::vector<QSeg> segs;
            thread_local std::vector<int64_t> seg_begin;
            segs.clear(), seg_begin.assign(1, 0);
            for (int64_t ki = 0; ki < p.kh; ++ki)
              for (int64_t kj = 0; kj < p.kw; ++kj) {
                const int64_t dx = kj * p.dw - p.pad_l;  // ix = ox * sw + dx
                // ox with 0 <= ix < w
                const int64_t lo = dx >= 0 ? 0 : (-dx + p.sw - 1) / p.sw;
                const int64_t hi = p.w - 1 - dx < 0 ? -1 : (p.w - 1 - dx) / p.sw;
                int64_t oy = n0 / ow, ox = n0 % ow;
                for (int64_t col = 0; col < nr;) {
                  const int64_t run = std::min(nr - col, ow - ox);
                  const int64_t iy = oy * p.sh - p.pad_t + ki * p.dh;
                  const int64_t a0 = std::max(ox, lo), a1 = std::min(ox + run - 1, hi);
                  if (iy >= 0 && iy < p.h && a0 <= a1)
                    segs.push_back({col + a0 - ox, a1 - a0 + 1, iy * p.w + a0 * p.sw + dx});
                  col += run, ox = 0, ++oy;
                }
                seg_begin.push_back(int64_t(segs.size()));
              }
            QPanelPlan pl;
            pl.k = k, pl.nr = nr, pl.width = width, pl.base = xg, pl.step = p.h * p.w, pl.taps = p.kh * p.kw;
            pl.sw = p.sw, pl.seg_begin = seg_begin.data(), pl.segs = segs.data(), pl.pad = pad,
            pl.flip = xflip;
            pl.b_signed = false, pl.lo = xb, pl.hi = xb + p.n * p.c * p.h * p.w;
            pack_panel(pl, panel, sums);
            return static_cast<const uint8_t*>(panel);
          },
          pool);
    }
}

}  // namespace tessera::kernels::x86

namespace tessera::kernels::x86 {

namespace {

int64_t panel_width(int64_t oc, int64_t q) {
  return std::min<int64_t>(kQNr, (oc - q * kQNr + 15) / 16 * 16);
}

}  // namespace

size_t QConvPackedW::panel_bytes(int64_t oc, int64_t c, int64_t kh, int64_t kw) {
  const int64_t np = (oc + kQNr - 1) / kQNr;
  return size_t(k(c, kh, kw) * ((np - 1) * kQNr + panel_width(oc, np - 1)));
}

size_t QConvPackedW::bytes(int64_t oc, int64_t c, int64_t kh, int64_t kw) {
  return size_t(round_up(int64_t(panel_bytes(oc, c, kh, kw)), 64) + 4 * round_up(oc, kQNr));
}

namespace {

// Packs weights whose element (output o, channel ci, tap t) is at src[o * so + ci * sc + t * st] (a conv's
// [oc][c][taps]): per panel, tap and channel, the panel's columns in one pass (no division per element).
void pack_strided(const uint8_t* src, int64_t so, int64_t sc, int64_t st, bool w_signed, int64_t oc,
                  int64_t c, int64_t taps, uint8_t* out) {
  const int64_t cpad = QConvPackedW::cp(c), kk = taps * cpad;
  const uint8_t flip = w_signed ? 0 : 0x80;
  int32_t* sums =
      reinterpret_cast<int32_t*>(out + round_up(int64_t(QConvPackedW::panel_bytes(oc, c, 1, taps)), 64));
  std::fill(sums, sums + round_up(oc, kQNr), 0);
  for (int64_t q = 0; q * kQNr < oc; ++q) {
    const int64_t width = panel_width(oc, q), cols = std::min(kQNr, oc - q * kQNr);
    uint8_t* panel = out + q * kQNr * kk;
    std::memset(panel, 0, size_t(kk * width));
    for (int64_t t = 0; t < taps; ++t)
      for (int64_t ci = 0; ci < c; ++ci) {
        const int64_t r = t * cpad + ci;
        uint8_t* dst = panel + (r >> 2) * 4 * width + (r & 3);
        const uint8_t* from = src + (q * kQNr) * so + ci * sc + t * st;
        for (int64_t col = 0; col < cols; ++col) {
          const uint8_t v = from[col * so] ^ flip;
          dst[col * 4] = v;
          sums[q * kQNr + col] += int32_t(int8_t(v));
        }
      }
  }
}

}  // namespace

void QConvPackedW::pack(const void* w, bool w_signed, int64_t oc, int64_t c, int64_t kh, int64_t kw,
                        uint8_t* out) {
  const int64_t taps = kh * kw;
  pack_strided(static_cast<const uint8_t*>(w), c * taps, taps, 1, w_signed, oc, c, taps, out);
}

void QConvPackedW::pack_grouped(const void* w, bool w_signed, int64_t oc, int64_t cg, int64_t kh, int64_t kw,
                                int64_t groups, uint8_t* out) {
  const int64_t og = oc / groups;
  for (int64_t g = 0; g < groups; ++g)
    pack(static_cast<const uint8_t*>(w) + g * og * cg * kh * kw, w_signed, og, cg, kh, kw,
         out + size_t(g) * bytes(og, cg, kh, kw));
}

// B [k][n] read in place: four rows of 16 columns at a time are interleaved into the panel's 4-byte words by
// SSE2 unpacks, and their column sums taken from the same vectors (the strided loop's byte at a time took
// 140 ms of a quantized BERT's session creation).
void QConvPackedW::pack_matmul(const void* b, bool b_signed, int64_t k, int64_t n, uint8_t* out) {
  const auto* src = static_cast<const uint8_t*>(b);
  const int64_t kp = cp(k);
  const uint8_t flip = b_signed ? 0 : 0x80;
  const int64_t pb = int64_t(panel_bytes(n, k, 1, 1));
  std::memset(out + pb, 0, size_t(round_up(pb, 64) - pb));  // every byte written (callers need not zero)
  int32_t* sums = reinterpret_cast<int32_t*>(out + round_up(pb, 64));
  std::fill(sums, sums + round_up(n, kQNr), 0);
  alignas(16) uint8_t pad_row[kQNr];  // rows past k: `flip`, which the xor turns into the 0 they must hold
  std::memset(pad_row, flip, sizeof pad_row);
  const __m128i fv = _mm_set1_epi8(char(flip));
  for (int64_t q = 0; q * kQNr < n; ++q) {
    const int64_t width = panel_width(n, q), cols = std::min(kQNr, n - q * kQNr), full = cols / 16 * 16;
    uint8_t* panel = out + q * kQNr * kp;
    int32_t* psum = sums + q * kQNr;
    for (int64_t g = 0; g < kp / 4; ++g) {
      const uint8_t* r[4];
      for (int j = 0; j < 4; ++j) r[j] = 4 * g + j < k ? src + (4 * g + j) * n + q * kQNr : pad_row;
      uint8_t* dst = panel + g * 4 * width;
      for (int64_t c0 = 0; c0 < full; c0 += 16) {
        __m128i v[4];
        for (int j = 0; j < 4; ++j)
          v[j] = _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(r[j] + c0)), fv);
        const __m128i ab_lo = _mm_unpacklo_epi8(v[0], v[1]), ab_hi = _mm_unpackhi_epi8(v[0], v[1]);
        const __m128i cd_lo = _mm_unpacklo_epi8(v[2], v[3]), cd_hi = _mm_unpackhi_epi8(v[2], v[3]);
        __m128i* d = reinterpret_cast<__m128i*>(dst + c0 * 4);
        _mm_storeu_si128(d, _mm_unpacklo_epi16(ab_lo, cd_lo));
        _mm_storeu_si128(d + 1, _mm_unpackhi_epi16(ab_lo, cd_lo));
        _mm_storeu_si128(d + 2, _mm_unpacklo_epi16(ab_hi, cd_hi));
        _mm_storeu_si128(d + 3, _mm_unpackhi_epi16(ab_hi, cd_hi));
        // the four rows' bytes as signed 16-bit sums per column (|sum| <= 512), then into the int32 sums
        __m128i lo = _mm_setzero_si128(), hi = _mm_setzero_si128();
        for (int j = 0; j < 4; ++j) {
          lo = _mm_add_epi16(lo, _mm_srai_epi16(_mm_unpacklo_epi8(v[j], v[j]), 8));
          hi = _mm_add_epi16(hi, _mm_srai_epi16(_mm_unpackhi_epi8(v[j], v[j]), 8));
        }
        __m128i* s4 = reinterpret_cast<__m128i*>(psum + c0);
        const __m128i parts[4] = {
            _mm_srai_epi32(_mm_unpacklo_epi16(lo, lo), 16), _mm_srai_epi32(_mm_unpackhi_epi16(lo, lo), 16),
            _mm_srai_epi32(_mm_unpacklo_epi16(hi, hi), 16), _mm_srai_epi32(_mm_unpackhi_epi16(hi, hi), 16)};
        for (int j = 0; j < 4; ++j)
          _mm_storeu_si128(s4 + j, _mm_add_epi32(_mm_loadu_si128(s4 + j), parts[j]));
      }
      for (int64_t col = full; col < width; ++col)  // the last columns, and zeros past n
        for (int j = 0; j < 4; ++j) {
          const uint8_t v = col < cols ? uint8_t(r[j][col] ^ flip) : 0;
          dst[col * 4 + j] = v;
          psum[col] += int32_t(int8_t(v));
        }
    }
  }
}

int32_t QConvPackedW::at(const uint8_t* packed, int64_t oc, int64_t c, int64_t kh, int64_t kw, int64_t o,
                         int64_t ci, int64_t i, int64_t j) {
  const int64_t kk = k(c, kh, kw), q = o / kQNr, col = o % kQNr, r = (i * kw + j) * cp(c) + ci;
  return int8_t(packed[q * kQNr * kk + (r / 4) * 4 * panel_width(oc, q) + col * 4 + r % 4]);
}

namespace {

// The padded, four-channel-interleaved copy of one image: [cp / 4][hp][wp][4], the border (and channels past
// c) holding `pad`.
void layout_image(const Conv2dParams& p, const uint8_t* x, uint8_t flip, uint8_t pad, int64_t hp, int64_t wp,
                  uint8_t* dst, ThreadPool* pool) {
  const int64_t groups = QConvPackedW::cp(p.c) / 4;
  const uint8_t fl = flip;
  parallel_for(pool, groups, 1, [&](int64_t g0, int64_t g1) {
    std::vector<uint8_t> pad_row(size_t(round_up(p.w, 16)), pad), tmp(size_t(4 * round_up(p.w, 16)));
    std::vector<uint8_t> rows(size_t(4 * round_up(p.w, 16)));
    for (int64_t g = g0; g < g1; ++g) {
      uint8_t* plane = dst + g * hp * wp * 4;
      std::memset(plane, pad, size_t(hp * wp * 4));
      for (int64_t y = 0; y < p.h; ++y) {
        const uint8_t* rp[4];
        for (int r = 0; r < 4; ++r) {
          const int64_t c = 4 * g + r;
          if (c >= p.c) {
            rp[r] = pad_row.data();
            continue;
          }
          const uint8_t* s = x + (c * p.h + y) * p.w;
          // read in place where the whole vectors past w stay inside the image (a narrow image's last rows
          // would read past it: copied)
          if (!fl && p.c * p.h * p.w - (c * p.h + y) * p.w >= round_up(p.w, 16)) {
            rp[r] = s;
            continue;
          }
          uint8_t* row = rows.data() + r * round_up(p.w, 16);
          for (int64_t i = 0; i < p.w; ++i) row[i] = uint8_t(s[i] ^ fl);
          rp[r] = row;
        }
        interleave4(rp, round_up(p.w, 16), tmp.data());
        std::memcpy(plane + ((y + p.pad_t) * wp + p.pad_l) * 4, tmp.data(), size_t(4 * p.w));
      }
    }
  });
}

struct PackedConvScratch {
  AlignedScratch x;
};
thread_local PackedConvScratch tl_packed_conv;

}  // namespace

namespace {

// The packed conv's GEMM over one image: output pixels (rows) by output channels (panels). `fill(m0, pp)`
// points pp[tap * kQMr + i] at the first k group of tap `tap` of pixel m0 + i (rows past the last pixel
// repeat it); the k groups of a tap are a_step bytes apart. Or, for a pointwise conv over NHWC (a_rows),
// pixel i's channels are at a_rows + i * cp: a plain GEMM. The results go to y [oc][npix] (transposed
// stores) or, nhwc, y [npix][oc].
template <class Fill>
void packed_conv_gemm(const Conv2dParams& p, const uint8_t* w, int32_t zx, const QOutput& out, int64_t a_step,
                      bool nhwc, uint8_t* y, Fill&& fill, ThreadPool* pool, const uint8_t* a_rows = nullptr,
                      int64_t a_ld = 0) {
  // per group (NHWC only: p.groups > 1): its cg input channels at byte cg * g of each pixel, its og outputs
  // at column og * g, its weights a QConvPackedW of their own
  const int64_t groups = p.groups, cg = p.c / groups, og = p.oc / groups;
  const int64_t npix = p.oh() * p.ow(), cp = QConvPackedW::cp(cg), taps = p.kh * p.kw;
  const int64_t kk = QConvPackedW::k(cg, p.kh, p.kw);
  const size_t wbytes = QConvPackedW::bytes(og, cg, p.kh, p.kw);
  const int64_t sums_at = round_up(int64_t(QConvPackedW::panel_bytes(og, cg, p.kh, p.kw)), 64);
  const int threads = pool ? pool->num_threads() : 1;
  const int64_t np = (og + kQNr - 1) / kQNr, strips = (npix + kQMr - 1) / kQMr;
  // strips in chunks so that there are a few tasks per thread; a panel's weights stay in L2 across a chunk
  const int64_t chunks =
      std::min<int64_t>(strips, std::max<int64_t>(1, (4 * threads + np * groups - 1) / (np * groups)));
  const int64_t per_chunk = (strips + chunks - 1) / chunks;
  const TileFn fn = tile_kernel();
  auto task = [&](int64_t t) {
    const int64_t gi = t / (np * chunks), q = t % np, ci = t / np % chunks;
    const int64_t n0 = q * kQNr, nr = std::min(kQNr, og - n0), nv = (nr + 15) / 16, o0 = gi * og + n0;
    const uint8_t* wg = w + size_t(gi) * wbytes;
    const int32_t* colsum = reinterpret_cast<const int32_t*>(wg + sums_at);
    const uint8_t* ptrs[64 * kQMr];
    std::vector<const uint8_t*> big;
    const uint8_t** pp = ptrs;
    if (taps > 64) {
      big.resize(size_t(taps * kQMr));
      pp = big.data();
    }
    QTile tl;
    tl.kq = cp / 4, tl.a_ptrs = a_rows ? nullptr : pp, tl.taps = taps, tl.a_step = a_step, tl.lda = a_ld;
    tl.nr = int(nr), tl.nv = int(nv), tl.b = wg + n0 * kk, tl.a_signed = false;
    // x's zero-point term and the bias per output channel, folded into one subtraction
    alignas(64) int32_t col_sub[kQNr];
    for (int64_t c = 0; c < kQNr; ++c)
      col_sub[c] =
          c < nr
              ? int32_t(uint32_t(zx) * uint32_t(colsum[n0 + c]) - uint32_t(out.bias ? out.bias[o0 + c] : 0))
              : 0;
    tl.col_sub = col_sub;
    tl.type = out.type, tl.y_zero = out.y_zero, tl.ldc = nhwc ? p.oc : npix, tl.c_transposed = !nhwc;
    // the panel's scales (per output channel) copied: the tile reads whole vectors, and a group's panel need
    // not start at a multiple of 64 of the caller's array
    alignas(64) float scale[kQNr];
    if (out.scale_per_row)
      for (int64_t c = 0; c < kQNr; ++c) scale[c] = c < nr ? out.scale[o0 + c] : 0.0f;
    tl.scale = out.scale_per_row ? scale : out.scale, tl.scale_per_col = out.scale_per_row;
    const int64_t s1 = std::min(strips, (ci + 1) * per_chunk);
    for (int64_t s = ci * per_chunk; s < s1; ++s) {
      const int64_t m0 = s * kQMr;
      tl.mr = int(std::min(kQMr, npix - m0));
      if (a_rows) {
        tl.a = a_rows + m0 * a_ld + gi * cg;
      } else {
        fill(m0, pp);
        if (gi)
          for (int64_t k = 0; k < taps * kQMr; ++k) pp[k] += gi * cg;
      }
      tl.c = nhwc ? y + m0 * p.oc + o0 : y + o0 * npix + m0;
      fn(tl);
    }
  };
  const int64_t tasks = groups * np * chunks;
  if (pool && threads > 1 && tasks > 1)
    pool->run(tasks, task);
  else
    for (int64_t t = 0; t < tasks; ++t) task(t);
}

}  // namespace

void qconv2d_int8_packed(const Conv2dParams& p, const void* x, bool x_signed, int32_t x_zero,
                         const uint8_t* w, const QOutput& out, ThreadPool* pool) {
  const int64_t oh = p.oh(), ow = p.ow(), npix = oh * ow, cp = QConvPackedW::cp(p.c);
  if (npix <= 0 || p.oc <= 0) return;
  const int64_t hp = p.h + p.pad_t + p.pad_b, wp = p.w + p.pad_l + p.pad_r;
  const int32_t zx = x_signed ? x_zero + 128 : x_zero;
  uint8_t* xl = reinterpret_cast<uint8_t*>(tl_packed_conv.x.get(size_t(cp * hp * wp + 63) / 4));
  for (int64_t img = 0; img < p.n; ++img) {
    layout_image(p, static_cast<const uint8_t*>(x) + img * p.c * p.h * p.w, x_signed ? 0x80 : 0, uint8_t(zx),
                 hp, wp, xl, pool);
    const auto fill = [&](int64_t m0, const uint8_t** pp) {
      for (int i = 0; i < kQMr; ++i) {
        const int64_t pix = std::min(m0 + i, npix - 1), oy = pix / ow, ox = pix % ow;
        for (int64_t ki = 0, tap = 0; ki < p.kh; ++ki)
          for (int64_t kj = 0; kj < p.kw; ++kj, ++tap)
            pp[tap * kQMr + i] = xl + ((oy * p.sh + ki * p.dh) * wp + ox * p.sw + kj * p.dw) * 4;
      }
    };
    packed_conv_gemm(p, w, zx, out, hp * wp * 4, false, static_cast<uint8_t*>(out.data) + img * p.oc * npix,
                     fill, pool);  // (groups 1)
  }
}

void qconv2d_int8_packed_nhwc(const Conv2dParams& p, const void* x, bool x_signed, int32_t x_zero,
                              const uint8_t* w, const QOutput& out, ThreadPool* pool) {
  const int64_t oh = p.oh(), ow = p.ow(), npix = oh * ow, cp = QConvPackedW::cp(p.c);
  if (npix <= 0 || p.oc <= 0) return;
  const int32_t zx = x_signed ? x_zero + 128 : x_zero;
  // read in place where every pixel's k groups are whole (channels a multiple of 4) and need no flip (a
  // grouped conv's groups take a multiple of 4 each: the caller checks)
  const bool copy = x_signed || p.c % 4 != 0;
  const int64_t cs = copy ? cp : p.c;  // bytes between pixels
  uint8_t* xl =
      copy ? reinterpret_cast<uint8_t*>(tl_packed_conv.x.get(size_t(p.h * p.w * cp + 63) / 4)) : nullptr;
  const std::vector<uint8_t> pad_pixel(static_cast<size_t>(cp), static_cast<uint8_t>(zx));
  for (int64_t img = 0; img < p.n; ++img) {
    const uint8_t* xi = static_cast<const uint8_t*>(x) + img * p.h * p.w * p.c;
    if (copy) {
      const uint8_t flip = x_signed ? 0x80 : 0;
      parallel_for(pool, p.h * p.w, 1024, [&](int64_t b, int64_t e) {
        for (int64_t px = b; px < e; ++px) {
          uint8_t* d = xl + px * cp;
          for (int64_t c = 0; c < p.c; ++c) d[c] = uint8_t(xi[px * p.c + c] ^ flip);
          for (int64_t c = p.c; c < cp; ++c) d[c] = uint8_t(zx);
        }
      });
      xi = xl;
    }
    const auto fill = [&](int64_t m0, const uint8_t** pp) {
      for (int i = 0; i < kQMr; ++i) {
        const int64_t pix = std::min(m0 + i, npix - 1), oy = pix / ow, ox = pix % ow;
        for (int64_t ki = 0, tap = 0; ki < p.kh; ++ki) {
          const int64_t iy = oy * p.sh - p.pad_t + ki * p.dh;
          for (int64_t kj = 0; kj < p.kw; ++kj, ++tap) {
            const int64_t ix = ox * p.sw - p.pad_l + kj * p.dw;
            pp[tap * kQMr + i] =
                iy >= 0 && iy < p.h && ix >= 0 && ix < p.w ? xi + (iy * p.w + ix) * cs : pad_pixel.data();
          }
        }
      }
    };
    packed_conv_gemm(p, w, zx, out, 4, true, static_cast<uint8_t*>(out.data) + img * npix * p.oc, fill, pool,
                     p.is_pointwise() ? xi : nullptr, cs);
  }
}

}  // namespace tessera::kernels::x86
