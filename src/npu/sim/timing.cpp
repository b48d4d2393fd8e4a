#include "npu/sim/timing.h"

#include <algorithm>
#include <deque>

#include "core/error.h"
#include "npu/sim/functional.h"

namespace tessera::npu {

namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

enum class Cause : uint8_t { weight, input, raw };

struct Token {
  int64_t time;
  Cause cause;
};

struct SlotState {
  int64_t ready = 0;
  uint32_t rows = 0, cols = 0;
  NDType dtype = NDType::i8;
  bool loaded = false;
};

// Number of (x) positions valid for a padded axis: count of i in [0, n) with 0 <= o + i*step + [0, run) < lim.
int64_t valid_run_elems(int64_t n0, int64_t n1, int64_t xs, int64_t xo, int64_t xl) {
  if (xl == 0) return n0 * n1;
  int64_t total = 0;
  for (int64_t i1 = 0; i1 < n1; ++i1) {
    int64_t lo = std::max<int64_t>(xo + i1 * xs, 0), hi = std::min<int64_t>(xo + i1 * xs + n0, xl);
    if (hi > lo) total += hi - lo;
  }
  return total;
}

}  // namespace

TimingResult simulate_timing(const Program& p, const ArchConfig& a, bool want_trace) {
  a.validate();
  TimingResult res;
  if (want_trace) res.trace = nlohmann::json::array();
  const int64_t R = a.rows, C = a.cols;
  const double hbm_bpc = a.hbm_bytes_per_cycle();
  const int64_t hbm_lat = a.hbm_latency_cycles();
  const int64_t sram_bpc = int64_t(a.ub_banks) * a.ub_bank_bytes;

  std::vector<size_t> q[kNumQueues];
  for (size_t i = 0; i < p.size(); ++i) {
    const OpInfo& oi = op_info(p[i].op);
    if (oi.unit == Unit::ctl) break;
    q[int(oi.unit)].push_back(i);
  }
  size_t head[kNumQueues] = {0, 0, 0};
  int64_t issue[kNumQueues] = {0, 0, 0};
  std::vector<std::deque<Token>> sems(kNumSemaphores);
  std::vector<SlotState> slots(size_t(a.weight_slots));
  std::vector<int64_t> engine_free(size_t(a.dma_engines), 0);
  int64_t hbm_free = 0, dma_done = 0;
  Cause dma_last = Cause::input;
  int64_t mxu_cursor = 0, stream_free = 0, mxu_done = 0, shift_free = 0, active_since = 0;
  int loaded_slot = -1;
  int64_t vpu_free = 0, vpu_done = 0;

  auto event = [&](const std::string& name, const char* tid, int64_t start, int64_t dur) {
    if (!want_trace || dur <= 0) return;
    res.trace.push_back({{"name", name}, {"ph", "X"}, {"tid", tid}, {"ts", start}, {"dur", dur}});
  };
  auto mxu_gap = [&](int64_t upto, int64_t& bucket, const char* name) {
    if (upto > mxu_cursor) {
      bucket += upto - mxu_cursor;
      event(name, "MXU", mxu_cursor, upto - mxu_cursor);
      mxu_cursor = upto;
    }
  };
  auto is_wait = [](Op o) { return o == Op::dma_wait || o == Op::mxu_wait || o == Op::vpu_wait; };
  auto take_token = [&](uint32_t s) {
    auto& d = sems[s];
    auto it = std::min_element(d.begin(), d.end(), [](const Token& x, const Token& y) { return x.time < y.time; });
    Token t = *it;
    d.erase(it);
    return t;
  };
  auto earliest_token = [&](uint32_t s) {
    int64_t t = INT64_MAX;
    for (auto& k : sems[s]) t = std::min(t, k.time);
    return t;
  };

  for (;;) {
    int bq = -1;
    int64_t bt = INT64_MAX;
    size_t bidx = SIZE_MAX;
    bool any = false;
    for (int u = 0; u < kNumQueues; ++u) {
      if (head[u] >= q[u].size()) continue;
      any = true;
      size_t idx = q[u][head[u]];
      const Instr& in = p[idx];
      int64_t t = issue[u];
      if (is_wait(in.op)) {
        check(in.u(0) < uint32_t(kNumSemaphores), ErrorCode::runtime, "NPU instruction ", instr_label(p, idx),
              ": semaphore ", in.u(0), " does not exist");
        if (sems[in.u(0)].empty()) continue;
        t = std::max(t, earliest_token(in.u(0)));
      }
      if (t < bt || (t == bt && idx < bidx)) bt = t, bq = u, bidx = idx;
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
    ++head[bq];
    ++res.instructions;
    const Instr& in = p[bidx];
    const char* mn = op_info(in.op).mnemonic;
    try {
      switch (in.op) {
        // ---------------- DMA ----------------
        case Op::dma_wait: {
          Token t = take_token(in.u(0));
          int64_t start = std::max(issue[0], t.time);
          res.dma_wait += start - issue[0];
          issue[0] = start;
          break;
        }
        case Op::dma_signal: {
          check(in.u(0) < uint32_t(kNumSemaphores), ErrorCode::runtime, "semaphore ", in.u(0), " does not exist");
          sems[in.u(0)].push_back({std::max(issue[0], dma_done), dma_last});
          break;
        }
        case Op::dma_load:
        case Op::dma_store:
        case Op::dma_loadw: {
          int64_t hbm = 0, sram = 0;
          if (in.op == Op::dma_load) {
            NDType st = ndtype_from_code(in.u(14) & 0xFF, "cast source"), dt = ndtype_from_code((in.u(14) >> 8) & 0xFF, "cast target");
            int64_t n0 = in.u(2), n1 = in.u(3), n2 = in.u(4), n3 = in.u(5);
            int64_t yo = in.s(12), ys = in.u(7), yl = in.u(13);
            int64_t rows_ok = n2;
            if (yl != 0) {
              rows_ok = 0;
              for (int64_t i2 = 0; i2 < n2; ++i2) rows_ok += (yo + i2 * ys >= 0 && yo + i2 * ys < yl);
            }
            hbm = valid_run_elems(n0, n1, int64_t(in.u(6)), int64_t(in.s(10)), int64_t(in.u(11))) * rows_ok * n3 *
                  ndtype_size(st);
            sram = n0 * n1 * n2 * n3 * ndtype_size(dt);
            dma_last = Cause::input;
          } else if (in.op == Op::dma_store) {
            NDType t = ndtype_from_code(in.u(7), "dtype");
            hbm = sram = int64_t(in.u(2)) * in.u(3) * in.u(4) * ndtype_size(t);
            dma_last = Cause::raw;
          } else {
            uint32_t s = in.u(0);
            check(s < slots.size(), ErrorCode::runtime, "weight slot ", s, " does not exist (", slots.size(), " slots)");
            check(in.u(2) >= 1 && in.u(2) <= uint32_t(R) && in.u(3) >= 1 && in.u(3) <= uint32_t(C), ErrorCode::runtime,
                  "weight tile ", in.u(2), "x", in.u(3), " does not fit the ", R, "x", C, " array");
            NDType t = ndtype_from_code(in.u(4), "dtype");
            hbm = sram = R * C * ndtype_size(t);
            dma_last = Cause::weight;
          }
          auto e = std::min_element(engine_free.begin(), engine_free.end());
          int64_t start = std::max(issue[0], *e);
          int64_t hbm_start = std::max(start, hbm_free);
          int64_t hbm_dur = int64_t(double(hbm) / hbm_bpc + 0.999999);
          hbm_free = hbm_start + hbm_dur;
          int64_t dur = std::max(hbm_dur, ceil_div(sram, sram_bpc));
          // the engine is pipelined: it is busy for the transfer, the latency only delays completion
          int64_t done = hbm_start + hbm_lat + std::max<int64_t>(dur, 1);
          *e = hbm_start + std::max<int64_t>(dur, 1);
          res.dma_busy += *e - start;
          dma_done = std::max(dma_done, done);
          issue[0] = start + 1;
          res.hbm_bytes += hbm;
          res.sram_bytes += sram;
          if (in.op == Op::dma_loadw) {
            SlotState& s = slots[in.u(0)];
            s.ready = done;
            s.rows = in.u(2);
            s.cols = in.u(3);
            s.dtype = ndtype_from_code(in.u(4), "dtype");
            s.loaded = true;
          }
          static const char* eng[] = {"DMA0", "DMA1", "DMA2", "DMA3", "DMA4", "DMA5", "DMA6", "DMA7"};
          event(mn, eng[std::min<size_t>(size_t(e - engine_free.begin()), 7)], start, done - start);
          break;
        }
        // ---------------- MXU ----------------
        case Op::mxu_wait: {
          Token t = take_token(in.u(0));
          int64_t start = std::max(issue[1], t.time);
          if (t.cause == Cause::weight) mxu_gap(start, res.weight_stall, "weight stall");
          else if (t.cause == Cause::input) mxu_gap(start, res.input_stall, "input stall");
          else mxu_gap(start, res.raw_stall, "RAW stall");
          issue[1] = std::max(issue[1], start);
          break;
        }
        case Op::mxu_signal: {
          check(in.u(0) < uint32_t(kNumSemaphores), ErrorCode::runtime, "semaphore ", in.u(0), " does not exist");
          sems[in.u(0)].push_back({std::max(issue[1], mxu_done), Cause::raw});
          break;
        }
        case Op::mxu_matmul: {
          uint32_t s = in.u(3);
          check(s < slots.size(), ErrorCode::runtime, "weight slot ", s, " does not exist");
          const SlotState& w = slots[s];
          check(w.loaded, ErrorCode::runtime, "weight slot ", s, " was never loaded");
          int64_t m = in.u(2);
          check(int64_t(in.u(0)) + m <= a.acc_rows(), ErrorCode::runtime, "accumulator rows out of bounds");
          int64_t t0 = std::max(issue[1], stream_free);
          int64_t start = std::max(t0, w.ready);
          if (int(s) != loaded_slot) {
            int64_t shift_start = std::max({w.ready, shift_free, active_since});
            int64_t shift_end = shift_start + R;
            shift_free = shift_end;
            loaded_slot = int(s);
            start = std::max(start, shift_end);
            active_since = start;
          }
          mxu_gap(std::min(start, std::max(mxu_cursor, w.ready)), res.weight_stall, "weight stall");
          mxu_gap(start, res.weight_shift, "weight shift");
          if (m > 0) {
            res.array_active += m;
            event(mn, "MXU", start, m);
            mxu_cursor = start + m;
          }
          stream_free = start + m;
          mxu_done = std::max(mxu_done, start + m + R + C - 2);
          issue[1] = stream_free;
          int64_t macs = m * w.rows * w.cols;
          res.macs += macs;
          res.sram_bytes += m * w.rows * ndtype_size(w.dtype) + m * w.cols * 4;
          double pj = w.dtype == NDType::bf16 ? a.pj_mac_bf16
                      : (w.dtype == NDType::f8e4m3 || w.dtype == NDType::f8e5m2) ? a.pj_mac_fp8
                                                                                 : a.pj_mac_int8;
          res.energy_pj += double(macs) * pj;
          break;
        }
        // ---------------- VPU ----------------
        case Op::vpu_wait: {
          Token t = take_token(in.u(0));
          int64_t start = std::max(issue[2], t.time);
          res.vpu_wait += start - issue[2];
          issue[2] = start;
          break;
        }
        case Op::vpu_signal: {
          check(in.u(0) < uint32_t(kNumSemaphores), ErrorCode::runtime, "semaphore ", in.u(0), " does not exist");
          sems[in.u(0)].push_back({std::max(issue[2], vpu_done), Cause::raw});
          break;
        }
        default: {  // vector ops and ACCMOV
          int64_t n = 0, lat = a.vpu_alu_latency, cycles = 0, bytes = 0;
          bool conflict = false;
          auto bank = [&](uint64_t addr) { return (addr / uint64_t(a.ub_bank_bytes)) % uint64_t(a.ub_banks); };
          switch (in.op) {
            case Op::vpu_add:
            case Op::vpu_sub:
            case Op::vpu_mul:
            case Op::vpu_max:
            case Op::vpu_min:
              n = in.u(3);
              conflict = a.ub_banks > 1 && bank(in.u(1)) == bank(in.u(2));
              bytes = 12 * n;
              break;
            case Op::vpu_exp:
            case Op::vpu_tanh:
            case Op::vpu_erf:
            case Op::vpu_rsqrt:
            case Op::vpu_recip:
              lat = a.vpu_transcendental_latency;
              [[fallthrough]];
            case Op::vpu_relu:
              n = in.u(2);
              bytes = 8 * n;
              break;
            case Op::vpu_reduce_sum:
            case Op::vpu_reduce_max: {
              n = in.u(2);
              int lg = 0;
              while ((1 << lg) < a.vector_lanes) ++lg;
              lat = a.vpu_reduce_latency + lg;
              bytes = 4 * n + 4;
              break;
            }
            case Op::vpu_cast:
            case Op::vpu_requant:
              n = in.u(2);
              bytes = 8 * n;
              break;
            case Op::vpu_accmov: {
              int64_t rows = in.u(2), cols = in.u(3);
              check(cols <= C, ErrorCode::runtime, "cols ", cols, " exceeds the array's ", C);
              check(int64_t(in.u(1)) + rows <= a.acc_rows(), ErrorCode::runtime, "accumulator rows out of bounds");
              NDType ot = ndtype_from_code(in.u(6), "out_dtype");
              ndtype_from_code(in.u(5), "in_dtype");
              n = rows * cols;
              cycles = rows * ceil_div(cols, a.vector_lanes);
              bytes = n * (4 + ndtype_size(ot));
              break;
            }
            default: break;
          }
          if (cycles == 0) cycles = ceil_div(n, a.vector_lanes);
          if (conflict) {
            res.vpu_bank_conflict += cycles;
            cycles *= 2;
          }
          int64_t start = std::max(issue[2], vpu_free);
          vpu_free = start + cycles;
          vpu_done = std::max(vpu_done, start + cycles + lat);
          res.vpu_busy += cycles;
          issue[2] = vpu_free;
          res.vpu_elems += n;
          res.sram_bytes += bytes;
          res.energy_pj += double(n) * a.pj_vpu_op;
          event(mn, "VPU", start, cycles);
          break;
        }
      }
    } catch (const Error& e) {
      throw Error(e.code(), cat("NPU instruction ", instr_label(p, bidx), ": ", e.message()));
    }
  }
  int64_t end = std::max({dma_done, mxu_done, vpu_done, issue[0], issue[1], issue[2], stream_free});
  for (auto& s : sems)
    for (auto& t : s) end = std::max(end, t.time);
  res.total_cycles = end;
  mxu_gap(std::min(end, std::max(mxu_cursor, mxu_done)), res.fill_drain, "fill/drain");
  mxu_gap(end, res.non_matrix, "non-matrix");
  res.energy_pj += double(res.sram_bytes) * a.pj_sram_byte + double(res.hbm_bytes) * a.pj_hbm_byte;
  return res;
}

nlohmann::json TimingResult::to_json(const ArchConfig& a) const {
  return {{"cycles", total_cycles},
          {"time_us", seconds(a) * 1e6},
          {"utilization", utilization(a)},
          {"stalls",
           {{"array_active", array_active},
            {"weight_stall", weight_stall},
            {"weight_shift", weight_shift},
            {"input_stall", input_stall},
            {"raw_stall", raw_stall},
            {"fill_drain", fill_drain},
            {"non_matrix", non_matrix}}},
          {"dma_busy", dma_busy},
          {"dma_wait", dma_wait},
          {"vpu_busy", vpu_busy},
          {"vpu_wait", vpu_wait},
          {"vpu_bank_conflict", vpu_bank_conflict},
          {"instructions", instructions},
          {"macs", macs},
          {"hbm_bytes", hbm_bytes},
          {"sram_bytes", sram_bytes},
          {"energy_uj", energy_pj * 1e-6}};
}

nlohmann::json chrome_trace(const std::vector<std::pair<std::string, const TimingResult*>>& parts,
                            const ArchConfig& a) {
  nlohmann::json ev = nlohmann::json::array();
  const double us_per_cycle = 1.0 / (a.clock_ghz * 1e3);
  int64_t offset = 0;
  for (const auto& [name, r] : parts) {
    ev.push_back({{"name", name}, {"ph", "X"}, {"pid", 1}, {"tid", "layer"}, {"ts", double(offset) * us_per_cycle},
                  {"dur", double(r->total_cycles) * us_per_cycle}});
    if (r->trace.is_array())
      for (const auto& e : r->trace) {
        nlohmann::json x = e;
        x["pid"] = 1;
        x["ts"] = double(offset + e["ts"].get<int64_t>()) * us_per_cycle;
        x["dur"] = double(e["dur"].get<int64_t>()) * us_per_cycle;
        ev.push_back(std::move(x));
      }
    offset += r->total_cycles;
  }
  return {{"traceEvents", ev}, {"displayTimeUnit", "ns"}};
}

}  // namespace tessera::npu
