#include "npu/sim/functional.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#include "core/error.h"
#include "core/float_types.h"

namespace tessera::npu {

double load_elem(const uint8_t* p, NDType t) {
  switch (t) {
    case NDType::i8: return double(int8_t(p[0]));
    case NDType::u8: return double(p[0]);
    case NDType::i32: {
      int32_t v;
      std::memcpy(&v, p, 4);
      return double(v);
    }
    case NDType::f32: {
      float v;
      std::memcpy(&v, p, 4);
      return double(v);
    }
    case NDType::bf16: {
      uint16_t b;
      std::memcpy(&b, p, 2);
      return double(bf16_bits_to_f32(b));
    }
    case NDType::f8e4m3: return double(Float8E4M3FN::from_bits(p[0]).to_float());
    case NDType::f8e5m2: return double(Float8E5M2::from_bits(p[0]).to_float());
  }
  return 0;
}

namespace {
template <typename I>
I to_int_sat(double v) {
  if (std::isnan(v)) return I(0);
  double r = std::nearbyint(v);  // round half to even (default rounding mode)
  r = std::clamp(r, double(std::numeric_limits<I>::min()), double(std::numeric_limits<I>::max()));
  return I(r);
}
}  // namespace

void store_elem(uint8_t* p, NDType t, double v) {
  switch (t) {
    case NDType::i8: p[0] = uint8_t(to_int_sat<int8_t>(v)); return;
    case NDType::u8: p[0] = to_int_sat<uint8_t>(v); return;
    case NDType::i32: {
      int32_t x = to_int_sat<int32_t>(v);
      std::memcpy(p, &x, 4);
      return;
    }
    case NDType::f32: {
      float x = float(v);
      std::memcpy(p, &x, 4);
      return;
    }
    case NDType::bf16: {
      uint16_t b = f32_to_bf16_bits(float(v));
      std::memcpy(p, &b, 2);
      return;
    }
    case NDType::f8e4m3: p[0] = Float8E4M3FN::from_float(float(v), true).bits; return;
    case NDType::f8e5m2: p[0] = Float8E5M2::from_float(float(v), true).bits; return;
  }
}

Machine::Machine(const ArchConfig& arch, size_t hbm_size) : arch_(arch) {
  arch_.validate();
  check_arg(int64_t(hbm_size) <= arch_.hbm_bytes, "HBM image of ", hbm_size, " bytes exceeds the arch's ",
            arch_.hbm_bytes);
  hbm_.assign(hbm_size, 0);
  ub_.assign(size_t(arch_.ub_bytes), 0);
  acc_.assign(size_t(arch_.acc_rows()) * size_t(arch_.cols), 0);
  slots_.resize(size_t(arch_.weight_slots));
}

namespace {
using u128 = unsigned __int128;

void need(u128 addr, u128 bytes, size_t size, const char* mem, const char* what) {
  check(addr + bytes <= u128(size), ErrorCode::runtime, what, " out of bounds: ", mem, " bytes [",
        uint64_t(std::min<u128>(addr, ~uint64_t(0))), ", ", uint64_t(std::min<u128>(addr + bytes, ~uint64_t(0))),
        ") but ", mem, " has ", size);
}

int sem_index(uint32_t s) {
  check(s < uint32_t(kNumSemaphores), ErrorCode::runtime, "semaphore ", s, " does not exist (", kNumSemaphores,
        " semaphores)");
  return int(s);
}

float rdf(const std::vector<uint8_t>& m, uint64_t addr) {
  float v;
  std::memcpy(&v, m.data() + addr, 4);
  return v;
}
void wrf(std::vector<uint8_t>& m, uint64_t addr, float v) { std::memcpy(m.data() + addr, &v, 4); }
}  // namespace

void Machine::exec(const Program& p, size_t idx) {
  const Instr& in = p[idx];
  const int R = arch_.rows, C = arch_.cols;
  switch (in.op) {
    case Op::dma_load: {
      uint64_t dst = in.u(0), src = in.u(1);
      uint64_t n0 = in.u(2), n1 = in.u(3), n2 = in.u(4), n3 = in.u(5);
      int64_t xs = in.u(6), ys = in.u(7), pitch = in.u(8), pitch3 = in.u(9);
      int64_t xo = in.s(10), xl = in.u(11), yo = in.s(12), yl = in.u(13);
      NDType st = ndtype_from_code(in.u(14) & 0xFF, "cast source"), dt = ndtype_from_code(in.u(14) >> 8, "cast target");
      int ss = ndtype_size(st), ds = ndtype_size(dt);
      check(((in.u(14) >> 16) == 0), ErrorCode::runtime, "bad cast field");
      u128 total = u128(n0) * n1 * n2 * n3;
      need(dst, total * u128(ds), ub_.size(), "unified buffer", "destination");
      uint64_t d = dst;
      for (uint64_t i3 = 0; i3 < n3; ++i3)
        for (uint64_t i2 = 0; i2 < n2; ++i2) {
          int64_t y = yo + int64_t(i2) * ys;
          bool yok = yl == 0 || (y >= 0 && y < yl);
          for (uint64_t i1 = 0; i1 < n1; ++i1)
            for (uint64_t i0 = 0; i0 < n0; ++i0, d += uint64_t(ds)) {
              int64_t x = xo + int64_t(i0) + int64_t(i1) * xs;
              bool ok = yok && (xl == 0 || (x >= 0 && x < xl));
              if (!ok) {
                std::memset(ub_.data() + d, 0, size_t(ds));
                continue;
              }
              __int128 off = (__int128(x) + __int128(y) * pitch + __int128(i3) * pitch3) * ss + __int128(src);
              check(off >= 0, ErrorCode::runtime, "source address negative (x=", x, ", y=", y, ")");
              need(u128(off), u128(ss), hbm_.size(), "HBM", "source");
              const uint8_t* s = hbm_.data() + uint64_t(off);
              if (st == dt) std::memcpy(ub_.data() + d, s, size_t(ss));
              else store_elem(ub_.data() + d, dt, load_elem(s, st));
            }
        }
      return;
    }
    case Op::dma_store: {
      uint64_t dst = in.u(0), src = in.u(1), n0 = in.u(2), n1 = in.u(3), n2 = in.u(4), p1 = in.u(5), p2 = in.u(6);
      NDType t = ndtype_from_code(in.u(7), "dtype");
      int sz = ndtype_size(t);
      u128 total = u128(n0) * n1 * n2;
      need(src, total * u128(sz), ub_.size(), "unified buffer", "source");
      if (total == 0) return;
      need(u128(dst) + (u128(n0 - 1) + u128(n1 - 1) * p1 + u128(n2 - 1) * p2) * u128(sz), u128(sz), hbm_.size(), "HBM",
           "destination");
      uint64_t s = src;
      for (uint64_t i2 = 0; i2 < n2; ++i2)
        for (uint64_t i1 = 0; i1 < n1; ++i1, s += n0 * uint64_t(sz))
          std::memcpy(hbm_.data() + dst + (i1 * p1 + i2 * p2) * uint64_t(sz), ub_.data() + s, size_t(n0) * size_t(sz));
      return;
    }
    case Op::dma_loadw: {
      uint32_t slot = in.u(0);
      check(slot < slots_.size(), ErrorCode::runtime, "weight slot ", slot, " does not exist (", slots_.size(),
            " slots)");
      uint32_t rows = in.u(2), cols = in.u(3);
      check(rows >= 1 && rows <= uint32_t(R) && cols >= 1 && cols <= uint32_t(C), ErrorCode::runtime,
            "weight tile ", rows, "x", cols, " does not fit the ", R, "x", C, " array");
      NDType t = ndtype_from_code(in.u(4), "dtype");
      size_t bytes = size_t(R) * size_t(C) * size_t(ndtype_size(t));
      need(in.u(1), bytes, hbm_.size(), "HBM", "weight source");
      WeightSlot& w = slots_[slot];
      w.data.assign(hbm_.begin() + in.u(1), hbm_.begin() + in.u(1) + int64_t(bytes));
      w.rows = rows;
      w.cols = cols;
      w.dtype = t;
      w.loaded = true;
      return;
    }
    case Op::mxu_matmul: {
      uint64_t acc = in.u(0), src = in.u(1), m = in.u(2);
      uint32_t slot = in.u(3), accumulate = in.u(4);
      check(slot < slots_.size(), ErrorCode::runtime, "weight slot ", slot, " does not exist");
      const WeightSlot& w = slots_[slot];
      check(w.loaded, ErrorCode::runtime, "weight slot ", slot, " was never loaded");
      check(accumulate <= 1, ErrorCode::runtime, "accumulate must be 0 or 1");
      uint64_t stride = in.u(5) ? in.u(5) : w.rows;
      int sz = ndtype_size(w.dtype);
      check(u128(acc) + m <= u128(arch_.acc_rows()), ErrorCode::runtime, "accumulator rows [", acc, ", ", acc + m,
            ") out of bounds (", arch_.acc_rows(), " rows)");
      if (m == 0) return;
      need(u128(src) + u128(m - 1) * stride * u128(sz), u128(w.rows) * u128(sz), ub_.size(), "unified buffer",
           "operand");
      const uint32_t K = w.rows, N = w.cols;
      stats_.macs += int64_t(m) * K * N;
      if (w.dtype == NDType::i8 || w.dtype == NDType::u8 || w.dtype == NDType::i32) {
        check(w.dtype != NDType::i32, ErrorCode::runtime, "the matrix unit does not take int32 operands");
        std::vector<int32_t> wv(size_t(K) * N);
        for (uint32_t k = 0; k < K; ++k)
          for (uint32_t j = 0; j < N; ++j)
            wv[size_t(k) * N + j] = int32_t(load_elem(w.data.data() + (size_t(k) * size_t(C) + j) * size_t(sz), w.dtype));
        std::vector<int32_t> a(K);
        for (uint64_t i = 0; i < m; ++i) {
          const uint8_t* row = ub_.data() + src + i * stride * uint64_t(sz);
          for (uint32_t k = 0; k < K; ++k) a[k] = w.dtype == NDType::i8 ? int32_t(int8_t(row[k])) : int32_t(row[k]);
          uint32_t* out = acc_.data() + (acc + i) * uint64_t(C);
          if (!accumulate) std::fill(out, out + N, 0u);
          for (uint32_t k = 0; k < K; ++k) {
            const int32_t* wr = wv.data() + size_t(k) * N;
            uint32_t ak = uint32_t(a[k]);
            for (uint32_t j = 0; j < N; ++j) out[j] += ak * uint32_t(wr[j]);  // wraps modulo 2^32
          }
        }
      } else {
        std::vector<float> wv(size_t(K) * N);
        for (uint32_t k = 0; k < K; ++k)
          for (uint32_t j = 0; j < N; ++j)
            wv[size_t(k) * N + j] = float(load_elem(w.data.data() + (size_t(k) * size_t(C) + j) * size_t(sz), w.dtype));
        std::vector<float> a(K), o(N);
        for (uint64_t i = 0; i < m; ++i) {
          const uint8_t* row = ub_.data() + src + i * stride * uint64_t(sz);
          for (uint32_t k = 0; k < K; ++k) a[k] = float(load_elem(row + size_t(k) * size_t(sz), w.dtype));
          uint32_t* out = acc_.data() + (acc + i) * uint64_t(C);
          for (uint32_t j = 0; j < N; ++j) o[j] = accumulate ? std::bit_cast<float>(out[j]) : 0.0f;
          for (uint32_t k = 0; k < K; ++k) {
            const float* wr = wv.data() + size_t(k) * N;
            const float ak = a[k];
            for (uint32_t j = 0; j < N; ++j) {
              float prod = ak * wr[j];  // exact in f32
              o[j] = o[j] + prod;       // rounded to nearest even, in k order
            }
          }
          for (uint32_t j = 0; j < N; ++j) out[j] = std::bit_cast<uint32_t>(o[j]);
        }
      }
      return;
    }
    case Op::vpu_add:
    case Op::vpu_sub:
    case Op::vpu_mul:
    case Op::vpu_max:
    case Op::vpu_min: {
      uint64_t dst = in.u(0), a = in.u(1), b = in.u(2), n = in.u(3);
      need(dst, u128(n) * 4, ub_.size(), "unified buffer", "destination");
      need(a, u128(n) * 4, ub_.size(), "unified buffer", "operand a");
      need(b, u128(n) * 4, ub_.size(), "unified buffer", "operand b");
      for (uint64_t i = 0; i < n; ++i) {
        float x = rdf(ub_, a + 4 * i), y = rdf(ub_, b + 4 * i), r;
        switch (in.op) {
          case Op::vpu_add: r = x + y; break;
          case Op::vpu_sub: r = x - y; break;
          case Op::vpu_mul: r = x * y; break;
          case Op::vpu_max: r = (std::isnan(x) || std::isnan(y)) ? std::numeric_limits<float>::quiet_NaN() : std::max(x, y); break;
          default: r = (std::isnan(x) || std::isnan(y)) ? std::numeric_limits<float>::quiet_NaN() : std::min(x, y); break;
        }
        wrf(ub_, dst + 4 * i, r);
      }
      return;
    }
    case Op::vpu_exp:
    case Op::vpu_tanh:
    case Op::vpu_erf:
    case Op::vpu_rsqrt:
    case Op::vpu_recip:
    case Op::vpu_relu: {
      uint64_t dst = in.u(0), a = in.u(1), n = in.u(2);
      need(dst, u128(n) * 4, ub_.size(), "unified buffer", "destination");
      need(a, u128(n) * 4, ub_.size(), "unified buffer", "operand");
      for (uint64_t i = 0; i < n; ++i) {
        float x = rdf(ub_, a + 4 * i), r;
        switch (in.op) {
          case Op::vpu_exp: r = std::exp(x); break;
          case Op::vpu_tanh: r = std::tanh(x); break;
          case Op::vpu_erf: r = std::erf(x); break;
          case Op::vpu_rsqrt: r = 1.0f / std::sqrt(x); break;
          case Op::vpu_recip: r = 1.0f / x; break;
          default: r = x > 0 ? x : (std::isnan(x) ? x : 0.0f); break;
        }
        wrf(ub_, dst + 4 * i, r);
      }
      return;
    }
    case Op::vpu_reduce_sum:
    case Op::vpu_reduce_max: {
      uint64_t dst = in.u(0), a = in.u(1), n = in.u(2);
      need(dst, 4, ub_.size(), "unified buffer", "destination");
      need(a, u128(n) * 4, ub_.size(), "unified buffer", "operand");
      float r = in.op == Op::vpu_reduce_sum ? 0.0f : -std::numeric_limits<float>::infinity();
      for (uint64_t i = 0; i < n; ++i) {
        float x = rdf(ub_, a + 4 * i);
        if (in.op == Op::vpu_reduce_sum) r = r + x;
        else r = (std::isnan(r) || std::isnan(x)) ? std::numeric_limits<float>::quiet_NaN() : std::max(r, x);
      }
      wrf(ub_, dst, r);
      return;
    }
    case Op::vpu_cast: {
      uint64_t dst = in.u(0), src = in.u(1), n = in.u(2);
      check(((in.u(3) >> 16) == 0), ErrorCode::runtime, "bad cast field");
      NDType st = ndtype_from_code(in.u(3) & 0xFF, "cast source"), dt = ndtype_from_code(in.u(3) >> 8, "cast target");
      need(dst, u128(n) * u128(ndtype_size(dt)), ub_.size(), "unified buffer", "destination");
      need(src, u128(n) * u128(ndtype_size(st)), ub_.size(), "unified buffer", "source");
      std::vector<uint8_t> tmp(size_t(n) * size_t(ndtype_size(dt)));  // src and dst may overlap
      for (uint64_t i = 0; i < n; ++i)
        store_elem(tmp.data() + i * uint64_t(ndtype_size(dt)), dt, load_elem(ub_.data() + src + i * uint64_t(ndtype_size(st)), st));
      std::memcpy(ub_.data() + dst, tmp.data(), tmp.size());
      return;
    }
    case Op::vpu_requant: {
      uint64_t dst = in.u(0), src = in.u(1), n = in.u(2);
      float scale = in.fl(3);
      int32_t zp = in.s(4);
      NDType st = ndtype_from_code(in.u(5), "in_dtype");
      check(st == NDType::i32 || st == NDType::f32, ErrorCode::runtime, "in_dtype must be int32 or float32");
      need(dst, n, ub_.size(), "unified buffer", "destination");
      need(src, u128(n) * 4, ub_.size(), "unified buffer", "source");
      std::vector<uint8_t> tmp(n);
      for (uint64_t i = 0; i < n; ++i) {
        float v = float(load_elem(ub_.data() + src + 4 * i, st)) * scale;
        double q = std::isnan(v) ? double(zp) : std::nearbyint(double(v)) + zp;
        store_elem(tmp.data() + i, NDType::i8, q);
      }
      std::memcpy(ub_.data() + dst, tmp.data(), n);
      return;
    }
    case Op::vpu_accmov: {
      uint64_t dst = in.u(0), acc = in.u(1), rows = in.u(2), cols = in.u(3);
      uint64_t stride = in.u(4) ? in.u(4) : cols;
      NDType it = ndtype_from_code(in.u(5), "in_dtype"), ot = ndtype_from_code(in.u(6), "out_dtype");
      float scale = in.fl(7);
      int32_t zp = in.s(8);
      uint32_t act = in.u(9);
      check(it == NDType::i32 || it == NDType::f32, ErrorCode::runtime, "in_dtype must be int32 or float32");
      check(act <= 1, ErrorCode::runtime, "act must be 0 (none) or 1 (relu)");
      check(cols <= uint64_t(C), ErrorCode::runtime, "cols ", cols, " exceeds the array's ", C);
      check(u128(acc) + rows <= u128(arch_.acc_rows()), ErrorCode::runtime, "accumulator rows [", acc, ", ",
            acc + rows, ") out of bounds (", arch_.acc_rows(), " rows)");
      if (rows == 0 || cols == 0) return;
      int os = ndtype_size(ot);
      need(u128(dst) + (u128(rows - 1) * stride) * u128(os), u128(cols) * u128(os), ub_.size(), "unified buffer",
           "destination");
      bool raw = it == NDType::i32 && ot == NDType::i32 && scale == 1.0f && zp == 0 && act == 0;
      for (uint64_t r = 0; r < rows; ++r)
        for (uint64_t c = 0; c < cols; ++c) {
          uint32_t word = acc_[(acc + r) * uint64_t(C) + c];
          uint8_t* out = ub_.data() + dst + (r * stride + c) * uint64_t(os);
          if (raw) {
            std::memcpy(out, &word, 4);
            continue;
          }
          float v = it == NDType::i32 ? float(int32_t(word)) : std::bit_cast<float>(word);
          v = v * scale;
          if (act == 1) v = v > 0 ? v : (std::isnan(v) ? v : 0.0f);
          if (ot == NDType::i8 || ot == NDType::u8 || ot == NDType::i32)
            store_elem(out, ot, std::isnan(v) ? double(zp) : std::nearbyint(double(v)) + zp);
          else
            store_elem(out, ot, double(v + float(zp)));
        }
      return;
    }
    case Op::dma_signal:
    case Op::mxu_signal:
    case Op::vpu_signal: {
      int s = sem_index(in.u(0));
      check(sem_[s] < INT32_MAX, ErrorCode::runtime, "semaphore ", s, " overflow");
      ++sem_[s];
      return;
    }
    case Op::dma_wait:
    case Op::mxu_wait:
    case Op::vpu_wait: --sem_[sem_index(in.u(0))]; return;
    case Op::ctl_halt: return;
  }
}

Machine::RunStats Machine::run(const Program& p) {
  stats_ = {};
  std::fill(std::begin(sem_), std::end(sem_), 0);
  // the dispatcher: instructions up to CTL.HALT go to their unit's queue
  std::vector<size_t> q[kNumQueues];
  for (size_t i = 0; i < p.size(); ++i) {
    const OpInfo& oi = op_info(p[i].op);
    if (oi.unit == Unit::ctl) break;
    q[int(oi.unit)].push_back(i);
  }
  size_t head[kNumQueues] = {0, 0, 0};
  auto is_wait = [](Op o) { return o == Op::dma_wait || o == Op::mxu_wait || o == Op::vpu_wait; };
  for (;;) {
    // the ready head with the lowest program index
    size_t best = SIZE_MAX;
    int bq = -1;
    bool any = false;
    for (int u = 0; u < kNumQueues; ++u) {
      if (head[u] >= q[u].size()) continue;
      any = true;
      size_t idx = q[u][head[u]];
      const Instr& in = p[idx];
      if (is_wait(in.op)) {
        uint32_t s = in.u(0);
        if (s >= uint32_t(kNumSemaphores)) {
          throw Error(ErrorCode::runtime,
                      cat("NPU instruction ", instr_label(p, idx), ": semaphore ", s, " does not exist"));
        }
        if (sem_[s] <= 0) continue;
      }
      if (idx < best) best = idx, bq = u;
    }
    if (!any) break;
    if (bq < 0) {
      std::string blocked;
      for (int u = 0; u < kNumQueues; ++u)
        if (head[u] < q[u].size())
          blocked += cat(blocked.empty() ? "" : ", ", instr_label(p, q[u][head[u]]), " (semaphore ",
                         p[q[u][head[u]]].u(0), ")");
      throw Error(ErrorCode::runtime, cat("NPU deadlock: every queue is blocked on a semaphore: ", blocked));
    }
    try {
      exec(p, best);
    } catch (const Error& e) {
      throw Error(e.code(), cat("NPU instruction ", instr_label(p, best), ": ", e.message()));
    }
    ++head[bq];
    ++stats_.instructions;
  }
  return stats_;
}

}  // namespace tessera::npu
