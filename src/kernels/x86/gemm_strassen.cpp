// One level of Strassen's algorithm in Winograd's form (7 products, 15 additions) over a prepacked B, each
// product on the classical prepacked GEMM (gemm.cpp). With P1..P7 the products of the quadrants:
//   S1 = A21 + A22, S2 = S1 - A11, S3 = A11 - A21, S4 = A12 - S2
//   T1 = B12 - B11, T2 = B22 - T1, T3 = B22 - B12, T4 = T2 - B21        (packed once, StrassenB::pack)
//   P1 = A11 B11, P2 = A12 B21, P3 = S4 B22, P4 = A22 T4, P5 = S1 T1, P6 = S2 T2, P7 = S3 T3
//   C11 = P1 + P2, C12 = P1 + P6 + P5 + P3, C21 = P1 + P6 + P7 - P4, C22 = P1 + P6 + P7 + P5
// The partial sums ride on the GEMM's epilogue (residual, alpha = -1) wherever a product adds to one earlier
// result: X = P1, Y = X + P6, Z = Y + P7 in m/2 x n/2 buffers; each quadrant's last product writes C itself
// with the caller's epilogue (its beta C, bias, row bias, activation), C22 (Z + P5, no product of its own)
// in one pass of additions that also adds P5 to C12's partial. C is written once, and read only for beta
// (a caller's residual is added to C first, as beta C). An odd M is padded by a zero row (A's lower
// quadrants), whose results are never stored: the lower quadrants' products take A's real rows only.
#include <algorithm>
#include <cstring>
#include <vector>

#include "core/error.h"
#include "core/memory.h"
#include "kernels/x86/eltwise.h"
#include "kernels/x86/gemm.h"
#include "kernels/x86/roofline.h"

namespace tessera::kernels::x86 {

namespace {

// Per-thread scratch, grown as needed (a session's runs reuse it).
float* scratch(size_t floats) {
  thread_local AlignedScratch buf;
  return buf.get(floats);
}

// fn(row) for row in [0, rows), one contiguous chunk per thread and in order, as the products split their
// rows (gemm.cpp): each thread's sums are then read by the same thread's product (4 chunks a thread handed
// out as threads came free: ViT-B/16 at two threads 1.8% slower, 4.8% where the VM's cores share no L3)
template <class F>
void for_rows(int64_t rows, ThreadPool* pool, const F& fn) {
  const int64_t tasks = pool ? std::min<int64_t>(rows, int64_t(pool->num_threads())) : 1;
  auto chunk = [&](int64_t t) {
    for (int64_t i = rows * t / tasks; i < rows * (t + 1) / tasks; ++i) fn(i);
  };
  if (tasks > 1)
    pool->run(tasks, chunk);
  else
    chunk(0);
}

// Piece i (B11, B21, B22, T1, T2, T3, T4) from the four quadrants' elements at one place.
inline float piece_value(int i, float b11, float b12, float b21, float b22) {
  const float t1 = b12 - b11, t2 = b22 - t1;
  switch (i) {
    case 0:
      return b11;
    case 1:
      return b21;
    case 2:
      return b22;
    case 3:
      return t1;
    case 4:
      return t2;
    case 5:
      return b22 - b12;
    default:
      return t2 - b21;
  }
}

void check_even(int64_t k, int64_t n) {
  check(k >= 2 && n >= 2 && k % 2 == 0 && n % 2 == 0, ErrorCode::invalid_argument,
        "Strassen packing needs an even K and N of 2 or more, got K = ", k, ", N = ", n);
}

}  // namespace

size_t StrassenB::packed_floats(int64_t k, int64_t n, int64_t kc, int64_t nr) {
  return 7 * PackedB::packed_floats(k / 2, n / 2, kc, nr);
}

void StrassenB::pack_into(float* dst, const float* b, int64_t ldb, bool trans_b, int64_t k, int64_t n) {
  check_even(k, n);
  const int64_t k2 = k / 2, n2 = n / 2;
  const size_t step = PackedB::packed_floats(k2, n2, PackedB::kc_for(k2, n2), PackedB::native_nr());
  // a transposed B as K x N rows first: the tuned transpose, into a buffer kept between calls (a session
  // packs many weights; fresh pages for each cost more than the copy)
  thread_local AlignedScratch rows_buf;
  if (trans_b) {
    float* rows = rows_buf.get(size_t(k * n));
    if (ldb == k) {
      transpose_f32(b, rows, {n, k}, {1, 0}, nullptr);
    } else {
      for (int64_t j0 = 0; j0 < n; j0 += 64)
        for (int64_t p0 = 0; p0 < k; p0 += 64)
          for (int64_t j = j0; j < std::min(n, j0 + 64); ++j)
            for (int64_t p = p0; p < std::min(k, p0 + 64); ++p) rows[size_t(p * n + j)] = b[j * ldb + p];
    }
    b = rows, ldb = n;
  }
  // B11, B21, B22 pack from B in place; the sums go through one K/2 x N/2 buffer, kept between calls (a
  // session packs many weights: fresh pages for each cost more than the arithmetic)
  PackedB::pack_into(dst, b, ldb, false, k2, n2);
  PackedB::pack_into(dst + step, b + k2 * ldb, ldb, false, k2, n2);
  PackedB::pack_into(dst + 2 * step, b + k2 * ldb + n2, ldb, false, k2, n2);
  float* q = scratch(size_t(k2 * n2));
  for (int i = 3; i < 7; ++i) {
    for (int64_t p = 0; p < k2; ++p) {
      const float *b11 = b + p * ldb, *b12 = b11 + n2, *b21 = b + (k2 + p) * ldb, *b22 = b21 + n2;
      float* y = q + p * n2;
      for (int64_t j = 0; j < n2; ++j) y[j] = piece_value(i, b11[j], b12[j], b21[j], b22[j]);
    }
    PackedB::pack_into(dst + size_t(i) * step, q, n2, false, k2, n2);
  }
}

StrassenB StrassenB::view(const float* data, int64_t k, int64_t n, int64_t kc, int64_t nr,
                          std::shared_ptr<void> keep) {
  check_even(k, n);
  StrassenB s;
  s.k_ = k, s.n_ = n;
  const size_t step = PackedB::packed_floats(k / 2, n / 2, kc, nr);
  for (int i = 0; i < 7; ++i)
    s.pieces_.push_back(PackedB::view(data + size_t(i) * step, k / 2, n / 2, kc, nr, keep));
  return s;
}

StrassenB StrassenB::pack(const float* b, int64_t ldb, bool trans_b, int64_t k, int64_t n) {
  check_even(k, n);
  const int64_t kc = kc_for(k, n), nr = PackedB::native_nr();
  std::shared_ptr<float> data(new float[packed_floats(k, n, kc, nr)], std::default_delete<float[]>());
  pack_into(data.get(), b, ldb, trans_b, k, n);
  return view(data.get(), k, n, kc, nr, data);
}

float StrassenB::at(const float* data, int64_t k, int64_t n, int64_t kc, int64_t nr, int64_t p, int64_t j) {
  const int64_t k2 = k / 2, n2 = n / 2;
  const size_t step = PackedB::packed_floats(k2, n2, kc, nr);
  auto piece = [&](int i, int64_t pp, int64_t jj) {
    return PackedB::at(data + size_t(i) * step, k2, n2, kc, nr, pp, jj);
  };
  if (p < k2)
    return j < n2 ? piece(0, p, j) : piece(3, p, j - n2) + piece(0, p, j - n2);  // B11; B12 = T1 + B11
  return j < n2 ? piece(1, p - k2, j) : piece(2, p - k2, j - n2);                // B21, B22
}

// K and N of 256 gain as well as 512 did once A's rows are taken in chunks (below): /tmp/w/ws2.cpp, one
// thread, Strassen / classical prepacked time: 500 x 384 x 1536 0.91-0.93, 500 x 1536 x 384 0.92-0.95,
// 500 x 384 x 384 0.90-0.91, 784 x 256 x 512 0.93-0.94, 784 x 512 x 256 0.93-0.95, 196 x 1024 x 512
// 0.89-0.91; a side of 128 gains nothing (3136 x 256 x 128 and 3136 x 128 x 256: 0.98-1.06). Fewer rows
// gain where B is large (/tmp/w/cs.cpp against the dense 1x1 conv kernel, one thread / two: 49 x 2048 x 1024
// 0.93-0.96 / 0.92-0.95, 49 x 1024 x 2048 0.91-0.93 / 0.93, 49 x 3072 x 768 0.90-0.92 / 0.94-0.97, 32 x 2048
// x 1024 0.92-0.93 / 0.94; 49 x 1024 x 512 0.94-0.95 / 0.98-0.99, so not from 2^19 weights). Two sides of
// 256-320 lose (/tmp/w/cs2.cpp, one thread / two: 196 x 320 x 320 1.00 / 1.05, 512 x 256 x 256 1.04 / 1.09,
// 1024 x 256 x 256 1.04 / 1.12; RegNetY's fourteen 14 x 14 x 320 1x1 convs 0.385 -> 0.367 ms at one thread,
// 0.21-0.32 -> 0.205 at two), so K + N of 768 at least (196 x 384 x 384 0.96 / 0.96, 784 x 256 x 512 0.93 /
// 0.98).
// Full-width FMA cores (Zen 5) halve the seven products' time but not that of the sums, so there B needs 2^18
// floats or more (/tmp/w/st.cpp, one thread, weights cycling through 24 MB, Strassen / classical prepacked):
// 196 x 320 x 784 1.06, 196 x 400 x 400 1.09, 784 x 256 x 512 1.01, 196 x 384 x 384 1.01 lose; 196 x 256 x
// 1024 0.98-1.00, 196 x 512 x 512 0.97, 197 x 768 x 768 0.98, 196 x 1024 x 512 0.96, 197 x 768 x 3072 0.94
// still gain. RegNetY-800MF's 14 x 14 x 320 -> 784 conv 484 us against onnxruntime's 433 before this.
bool StrassenB::worthwhile(int64_t m, int64_t k, int64_t n) {
  if (k % 2 != 0 || n % 2 != 0) return false;
  if (fma512_full_width() && k * n < (int64_t(1) << 18)) return false;
  return (m >= 128 && k >= 256 && n >= 256 && k + n >= 768) ||
         (m >= 32 && k >= 512 && n >= 512 && k * n >= (int64_t(1) << 20));
}

namespace {

void strassen_rows(int64_t m, const float* a, int64_t lda, bool trans_a, const StrassenB& b, float* c,
                   int64_t ldc, const GemmEpilogue& ep, ThreadPool* pool) {
  const EltwiseKernels& ek = eltwise_kernels(eltwise_isa());
  const int64_t k2 = b.k() / 2, n = b.n(), n2 = n / 2, m2 = (m + 1) / 2,
                low = m - m2;  // low: A21's real rows (C's lower quadrants)
  GemmEpilogue e = ep;
  if (e.residual) {  // C = beta C + residual first: C's own content then rides on the products' beta
    for_rows(m, pool, [&](int64_t i) {
      float* cr = c + i * ldc;
      const float* rr = e.residual + i * e.ldr;
      if (e.beta == 0.0f) {
        if (rr != cr) std::memcpy(cr, rr, size_t(n) * sizeof(float));
      } else {
        ek.binary(BinaryOp::mul, &e.beta, 0, cr, 1, cr, n);
        ek.binary(BinaryOp::add, cr, 1, rr, 1, cr, n);
      }
    });
    e.residual = nullptr, e.beta = 1.0f;
  }
  // workspace: S1..S4 (m2 x k2 each), a row of zeros (A's padding), X, Y, Z (m2 x n2 each); with a transposed
  // A also A11, A12, A22, A21 (rows read in place otherwise)
  const int64_t as = m2 * k2, copies = trans_a ? 8 : 4, xs = m2 * n2;
  float* ws = scratch(size_t(copies * as + k2 + 3 * xs));
  float *s1 = ws, *s2 = s1 + as, *s3 = s2 + as, *s4 = s3 + as, *zero = ws + copies * as, *x = zero + k2,
        *y = x + xs, *z = y + xs;
  std::fill(zero, zero + k2, 0.0f);
  const float *a11 = a, *a12 = a + k2, *a21 = a + m2 * lda, *a22 = a21 + k2;  // rows lda apart
  int64_t ld_a = lda;
  if (trans_a) {  // the quadrants as rows of k2 (a zero row past M)
    float *t11 = s4 + as, *t12 = t11 + as, *t22 = t12 + as, *t21 = t22 + as;
    for_rows(m2, pool, [&](int64_t i) {
      const bool real = m2 + i < m;
      for (int64_t p = 0; p < k2; ++p) {
        t11[i * k2 + p] = a[p * lda + i], t12[i * k2 + p] = a[(k2 + p) * lda + i];
        t21[i * k2 + p] = real ? a[p * lda + m2 + i] : 0.0f;
        t22[i * k2 + p] = real ? a[(k2 + p) * lda + m2 + i] : 0.0f;
      }
    });
    a11 = t11, a12 = t12, a21 = t21, a22 = t22, ld_a = k2;
  }
  for_rows(m2, pool, [&](int64_t i) {
    const float *r11 = a11 + i * ld_a, *r12 = a12 + i * ld_a;
    const bool real = m2 + i < m;  // else the padding row
    const float *r21 = real ? a21 + i * ld_a : zero, *r22 = real ? a22 + i * ld_a : zero;
    float *y1 = s1 + i * k2, *y2 = s2 + i * k2, *y3 = s3 + i * k2, *y4 = s4 + i * k2;
    ek.binary(BinaryOp::add, r21, 1, r22, 1, y1, k2);  // S1 = A21 + A22
    ek.binary(BinaryOp::sub, y1, 1, r11, 1, y2, k2);   // S2 = S1 - A11
    ek.binary(BinaryOp::sub, r11, 1, r21, 1, y3, k2);  // S3 = A11 - A21
    ek.binary(BinaryOp::sub, r12, 1, y2, 1, y4, k2);   // S4 = A12 - S2
  });
  float *c11 = c, *c12 = c + n2, *c21 = c + m2 * ldc, *c22 = c21 + n2;
  auto product = [&](int64_t rows, const float* lhs, int64_t ldl, int i, float* out, int64_t ldo,
                     const GemmEpilogue& pe) {
    if (rows > 0) sgemm_packed(rows, lhs, ldl, false, b.piece(i), out, ldo, pe, pool);
  };
  // partial sums in X, Y, Z (alpha times the products, rows n2 apart)
  auto partial = [&](const float* plus) {
    GemmEpilogue pe;
    pe.alpha = e.alpha, pe.residual = plus, pe.ldr = n2;
    return pe;
  };
  // a quadrant's last product: + beta C (C's own content) + the partial sum, with the caller's bias, row
  // bias and activation
  auto final_of = [&](const float* plus, int64_t row0, int64_t col0, float alpha) {
    GemmEpilogue pe = e;
    pe.alpha = alpha, pe.residual = plus, pe.ldr = n2;
    if (pe.bias) pe.bias += col0;
    if (pe.row_bias) pe.row_bias += row0;
    return pe;
  };
  product(m2, a11, ld_a, 0, x, n2, partial(nullptr));               // X = P1
  product(m2, s2, k2, 4, y, n2, partial(x));                        // Y = P6 + P1
  product(low, s3, k2, 5, z, n2, partial(y));                       // Z = P7 + P6 + P1
  product(m2, a12, ld_a, 1, c11, ldc, final_of(x, 0, 0, e.alpha));  // C11 = P2 + P1
  product(m2, s1, k2, 3, x, n2, partial(nullptr));                  // X = P5
  for_rows(m2, pool, [&](int64_t i) {  // Y += P5 (C12's partial); C22 = Z + P5 with the caller's epilogue
    const float* xr = x + i * n2;
    ek.binary(BinaryOp::add, y + i * n2, 1, xr, 1, y + i * n2, n2);
    if (i >= low) return;
    float* cr = c22 + i * ldc;
    if (e.beta == 0.0f) {
      ek.binary(BinaryOp::add, z + i * n2, 1, xr, 1, cr, n2);
    } else {
      if (e.beta != 1.0f) ek.binary(BinaryOp::mul, &e.beta, 0, cr, 1, cr, n2);
      ek.binary(BinaryOp::add, cr, 1, z + i * n2, 1, cr, n2);
      ek.binary(BinaryOp::add, cr, 1, xr, 1, cr, n2);
    }
    if (e.bias) ek.binary(BinaryOp::add, cr, 1, e.bias + n2, 1, cr, n2);
    if (e.row_bias) ek.binary(BinaryOp::add, cr, 1, e.row_bias + m2 + i, 0, cr, n2);
    gemm_apply_activation(e.act, e.clip_min, e.clip_max, cr, n2, nullptr);
  });
  product(m2, s4, k2, 2, c12, ldc, final_of(y, 0, n2, e.alpha));       // C12 = P3 + P5 + P6 + P1
  product(low, a22, ld_a, 6, c21, ldc, final_of(z, m2, 0, -e.alpha));  // C21 = Z - P4
}

}  // namespace

// C's rows depend on A's same rows only, so a tall A is taken in chunks of about kChunk rows: A's four sums
// and the three partial sums of one chunk then stay in L2 between the products that write and read them,
// where a whole 3136-row A streamed them through memory (/tmp/w/ws2.cpp, one thread, Strassen / classical:
// 3136 x 512 x 512 1.10 -> 0.87, 3136 x 1024 x 1024 0.97 -> 0.87, 2048 x 768 x 768 0.99 -> 0.92; chunks of
// 256 and 512 rows within 3% of 384).
void sgemm_strassen(int64_t m, const float* a, int64_t lda, bool trans_a, const StrassenB& b, float* c,
                    int64_t ldc, const GemmEpilogue& ep, ThreadPool* pool) {
  check(b.k() > 0, ErrorCode::invalid_argument, "sgemm_strassen: B was not packed");
  if (m <= 0) return;
  constexpr int64_t kChunk = 384;
  const int64_t chunks = m <= 512 ? 1 : (m + kChunk - 1) / kChunk,
                rows = chunks == 1 ? m : ((m + chunks - 1) / chunks + 1) / 2 * 2;
  for (int64_t i0 = 0; i0 < m; i0 += rows) {
    GemmEpilogue e = ep;
    if (e.row_bias) e.row_bias += i0;
    if (e.residual) e.residual += i0 * e.ldr;
    strassen_rows(std::min(rows, m - i0), trans_a ? a + i0 : a + i0 * lda, lda, trans_a, b, c + i0 * ldc, ldc,
                  e, pool);
  }
}

}  // namespace tessera::kernels::x86
