#include "npu/programs/layers.h"

#include <algorithm>
#include <cstring>

#include "core/error.h"

namespace tessera::npu {

int64_t ConvSpec::out_h() const {
  return (in_h + pad_top + pad_bottom - dilation_h * (kernel_h - 1) - 1) / stride_h + 1;
}
int64_t ConvSpec::out_w() const {
  return (in_w + pad_left + pad_right - dilation_w * (kernel_w - 1) - 1) / stride_w + 1;
}

void ConvSpec::validate() const {
  check_arg(batch > 0 && in_channels > 0 && in_h > 0 && in_w > 0 && out_channels > 0 && kernel_h > 0 && kernel_w > 0,
            "conv: sizes must be positive");
  check_arg(stride_h > 0 && stride_w > 0 && dilation_h > 0 && dilation_w > 0, "conv: strides and dilations must be positive");
  check_arg(pad_top >= 0 && pad_left >= 0 && pad_bottom >= 0 && pad_right >= 0, "conv: pads must be non-negative");
  check_arg(groups > 0 && in_channels % groups == 0 && out_channels % groups == 0, "conv: groups (", groups,
            ") must divide in_channels (", in_channels, ") and out_channels (", out_channels, ")");
  check_arg(in_h + pad_top + pad_bottom >= dilation_h * (kernel_h - 1) + 1 &&
                in_w + pad_left + pad_right >= dilation_w * (kernel_w - 1) + 1,
            "conv: the (dilated) kernel is larger than the padded input");
  bool int_in = in_dtype == NDType::i8 || in_dtype == NDType::u8;
  check_arg(int_in || in_dtype == NDType::bf16 || in_dtype == NDType::f8e4m3 || in_dtype == NDType::f8e5m2,
            "conv: the matrix unit takes int8, uint8, bfloat16 or float8 operands, not ", ndtype_name(in_dtype));
  check_arg(out_dtype != NDType::i32 || int_in, "conv: int32 output needs integer inputs");
  check_arg(int64_t(uint32_t(in_h * in_w * in_channels)) == in_h * in_w * in_channels, "conv: input too large");
}

ConvSpec gemm_spec(int64_t m, int64_t n, int64_t k, NDType in) {
  ConvSpec s;
  s.in_h = m;
  s.in_w = 1;
  s.in_channels = k;
  s.out_channels = n;
  s.in_dtype = in;
  s.out_dtype = (in == NDType::i8 || in == NDType::u8) ? NDType::i32 : NDType::f32;
  return s;
}

ConvSpec topology_conv_spec(const TopologyLayer& l, NDType dt) {
  ConvSpec s;
  s.in_h = l.ifmap_h;
  s.in_w = l.ifmap_w;
  s.in_channels = l.channels;
  s.out_channels = l.num_filters;
  s.kernel_h = l.filter_h;
  s.kernel_w = l.filter_w;
  s.stride_h = s.stride_w = l.stride;
  s.pad_bottom = (l.stride - (l.ifmap_h - l.filter_h) % l.stride) % l.stride;
  s.pad_right = (l.stride - (l.ifmap_w - l.filter_w) % l.stride) % l.stride;
  s.in_dtype = dt;
  s.out_dtype = (dt == NDType::i8 || dt == NDType::u8) ? NDType::i32 : NDType::f32;
  return s;
}

namespace {

struct Chunk {
  int64_t r;       // kernel row
  int64_t xo_rel;  // x origin relative to ow*stride_w*C (group offset added later)
  int64_t kbase;   // first K index (within the group's weight matrix, order (r, s, c))
  int64_t kc;      // K elements in this chunk (<= array rows)
};

std::vector<Chunk> k_chunks(const ConvSpec& s, int64_t R) {
  std::vector<Chunk> out;
  const int64_t C = s.in_channels, Cg = C / s.groups, S = s.kernel_w;
  if (s.groups == 1 && s.dilation_w == 1) {
    // the kernel row's S*C elements are contiguous in NHWC: chunk the run
    for (int64_t r = 0; r < s.kernel_h; ++r)
      for (int64_t e0 = 0; e0 < S * C; e0 += R)
        out.push_back({r, -s.pad_left * C + e0, r * S * C + e0, std::min(R, S * C - e0)});
  } else {
    for (int64_t r = 0; r < s.kernel_h; ++r)
      for (int64_t q = 0; q < S; ++q)
        for (int64_t c0 = 0; c0 < Cg; c0 += R)
          out.push_back({r, (-s.pad_left + q * s.dilation_w) * C + c0, (r * S + q) * Cg + c0, std::min(R, Cg - c0)});
  }
  return out;
}

uint64_t align64(uint64_t x) { return (x + 63) & ~uint64_t(63); }

enum Sem : uint32_t { kAFull = 0, kAFree, kWFull, kWFree, kAccFull, kAccFree, kOFull, kOFree };

}  // namespace

std::vector<uint8_t> pack_conv_weights(const ConvSpec& s, const ArchConfig& a, const std::vector<uint8_t>& oihw) {
  s.validate();
  const int64_t R = a.rows, Ca = a.cols, G = s.groups, Cg = s.in_channels / G, Ng = s.out_channels / G;
  const int64_t KH = s.kernel_h, KW = s.kernel_w;
  const int esz = ndtype_size(s.in_dtype);
  check_arg(int64_t(oihw.size()) == s.out_channels * Cg * KH * KW * esz, "pack_conv_weights: expected ",
            s.out_channels * Cg * KH * KW * esz, " bytes of OIHW weights, got ", oihw.size());
  auto chunks = k_chunks(s, R);
  const int64_t n_tiles = (Ng + Ca - 1) / Ca;
  std::vector<uint8_t> out(size_t(G * n_tiles * int64_t(chunks.size()) * R * Ca * esz), 0);
  size_t t = 0;
  for (int64_t g = 0; g < G; ++g)
    for (int64_t nt = 0; nt < n_tiles; ++nt)
      for (const Chunk& ch : chunks) {
        uint8_t* tile = out.data() + t * size_t(R * Ca * esz);
        int64_t nc = std::min(Ca, Ng - nt * Ca);
        for (int64_t kk = 0; kk < ch.kc; ++kk) {
          int64_t k = ch.kbase + kk;  // (r, s, c) order
          int64_t c = k % Cg, rs = k / Cg, q = rs % KW, r = rs / KW;
          for (int64_t j = 0; j < nc; ++j) {
            int64_t n = g * Ng + nt * Ca + j;
            const uint8_t* src = oihw.data() + size_t((((n * Cg + c) * KH + r) * KW + q) * esz);
            std::memcpy(tile + size_t((kk * Ca + j) * esz), src, size_t(esz));
          }
        }
        ++t;
      }
  return out;
}

LayerProgram conv_program(const ConvSpec& s, const ArchConfig& a) {
  s.validate();
  a.validate();
  const int64_t R = a.rows, Ca = a.cols, G = s.groups, C = s.in_channels, Cg = C / G, Ng = s.out_channels / G;
  const int64_t OH = s.out_h(), OW = s.out_w(), N = s.out_channels;
  const int isz = ndtype_size(s.in_dtype), osz = ndtype_size(s.out_dtype);
  const bool int_in = s.in_dtype == NDType::i8 || s.in_dtype == NDType::u8;
  auto chunks = k_chunks(s, R);
  const int64_t Ktot = s.kernel_h * s.kernel_w * Cg;
  const int64_t n_tiles = (Ng + Ca - 1) / Ca;

  // M tile: whole output rows of one image, bounded by the accumulators (double-buffered) and the
  // unified buffer: [A0 | A1] in the first half, [O0 | O1] in the next quarter.
  int64_t tm_cap = std::min<int64_t>(a.acc_rows() / 2, a.ub_bytes / (4 * (Ktot + int64_t(chunks.size()) * 64 / isz + 1) * isz));
  tm_cap = std::min<int64_t>(tm_cap, a.ub_bytes / (8 * Ca * osz));
  check(OW <= tm_cap, ErrorCode::unsupported, "conv: one output row (", OW, " pixels x K=", Ktot,
        ") does not fit the arch's unified buffer/accumulators (at most ", tm_cap, " rows)");
  const int64_t rows_per_tile = std::max<int64_t>(1, std::min(OH, tm_cap / OW));
  const int64_t tm_max = rows_per_tile * OW;
  // UB layout
  std::vector<uint64_t> chunk_off(chunks.size());
  uint64_t a_size = 0;
  for (size_t i = 0; i < chunks.size(); ++i) {
    chunk_off[i] = a_size;
    a_size = align64(a_size + uint64_t(tm_max * chunks[i].kc * isz));
  }
  const uint64_t a_buf[2] = {0, a_size};
  const uint64_t o_base = align64(2 * a_size), o_size = align64(uint64_t(tm_max * Ca * osz));
  const uint64_t o_buf[2] = {o_base, o_base + o_size};
  check(int64_t(o_base + 2 * o_size) <= a.ub_bytes, ErrorCode::internal, "conv: UB plan overflows");
  const int64_t acc_buf[2] = {0, tm_max};

  LayerProgram lp;
  lp.input_addr = 0;
  lp.weight_addr = align64(uint64_t(s.batch * s.in_h * s.in_w * C * isz));
  const uint64_t tile_bytes = uint64_t(R * Ca * isz);
  lp.output_addr = align64(lp.weight_addr + uint64_t(G * n_tiles * int64_t(chunks.size())) * tile_bytes);
  lp.hbm_size = align64(lp.output_addr + uint64_t(s.batch * OH * OW * N * osz));
  check(int64_t(lp.hbm_size) <= a.hbm_bytes && lp.hbm_size < (uint64_t(1) << 32), ErrorCode::unsupported,
        "conv: the layer's HBM image (", lp.hbm_size, " bytes) exceeds the 32-bit address space or the arch's HBM");
  lp.n_tiles = n_tiles;
  lp.k_chunks = int64_t(chunks.size());

  Program& P = lp.program;
  const int slots = a.weight_slots;
  int64_t m_index = 0, job = 0, wtile = 0;
  const NDType acc_t = int_in ? NDType::i32 : NDType::f32;
  struct Pending {
    uint64_t dst;
    int64_t rows, cols;
    int buf;
  };
  bool have_pending = false;
  Pending pending{};
  auto emit_store = [&](const Pending& st) {
    P.push_back(make_instr(Op::dma_wait, {kOFull}));
    P.push_back(make_instr(Op::dma_store, {int64_t(st.dst), int64_t(o_buf[st.buf]), st.cols, st.rows, 1, N, 0,
                                           int64_t(s.out_dtype)}));
    P.push_back(make_instr(Op::dma_signal, {kOFree}));
  };

  for (int64_t g = 0; g < G; ++g)
    for (int64_t b = 0; b < s.batch; ++b)
      for (int64_t oh0 = 0; oh0 < OH; oh0 += rows_per_tile, ++m_index) {
        const int64_t nr = std::min(rows_per_tile, OH - oh0), tm = nr * OW;
        const int ab = int(m_index % 2);
        // activations: one gather per K chunk, zero padding on the fly
        if (m_index >= 2) P.push_back(make_instr(Op::dma_wait, {kAFree}));
        const uint64_t src = lp.input_addr + uint64_t(b * s.in_h * s.in_w * C * isz);
        for (size_t ci = 0; ci < chunks.size(); ++ci) {
          const Chunk& ch = chunks[ci];
          P.push_back(make_instr(
              Op::dma_load,
              {int64_t(a_buf[ab] + chunk_off[ci]), int64_t(src), ch.kc, OW, nr, 1, s.stride_w * C, s.stride_h,
               s.in_w * C, 0, ch.xo_rel + g * Cg, s.in_w * C, oh0 * s.stride_h - s.pad_top + ch.r * s.dilation_h,
               s.in_h, int64_t(cast_code(s.in_dtype, s.in_dtype))}));
        }
        P.push_back(make_instr(Op::dma_signal, {kAFull}));
        P.push_back(make_instr(Op::mxu_wait, {kAFull}));
        ++lp.m_tiles;
        for (int64_t nt = 0; nt < n_tiles; ++nt, ++job) {
          const int64_t nc = std::min(Ca, Ng - nt * Ca);
          const int accb = int(job % 2);
          if (job >= 2) P.push_back(make_instr(Op::mxu_wait, {kAccFree}));
          for (size_t ci = 0; ci < chunks.size(); ++ci, ++wtile) {
            const int slot = int(wtile % slots);
            if (wtile >= slots) P.push_back(make_instr(Op::dma_wait, {kWFree}));
            const uint64_t t = uint64_t((g * n_tiles + nt) * int64_t(chunks.size()) + int64_t(ci));
            P.push_back(make_instr(Op::dma_loadw, {slot, int64_t(lp.weight_addr + t * tile_bytes), chunks[ci].kc, nc,
                                                   int64_t(s.in_dtype)}));
            P.push_back(make_instr(Op::dma_signal, {kWFull}));
            ++lp.weight_tiles;
            P.push_back(make_instr(Op::mxu_wait, {kWFull}));
            P.push_back(make_instr(Op::mxu_matmul, {acc_buf[accb], int64_t(a_buf[ab] + chunk_off[ci]), tm, slot,
                                                    ci > 0 ? 1 : 0, 0}));
            P.push_back(make_instr(Op::mxu_signal, {kWFree}));
          }
          P.push_back(make_instr(Op::mxu_signal, {kAccFull}));
          // epilogue on the VPU
          P.push_back(make_instr(Op::vpu_wait, {kAccFull}));
          if (job >= 2) P.push_back(make_instr(Op::vpu_wait, {kOFree}));
          P.push_back(make_instr_f(Op::vpu_accmov,
                                   {int64_t(o_buf[accb]), acc_buf[accb], tm, nc, 0, int64_t(acc_t), int64_t(s.out_dtype),
                                    0, 0, s.relu ? 1 : 0},
                                   7, s.out_scale));
          P.push_back(make_instr(Op::vpu_signal, {kAccFree}));
          P.push_back(make_instr(Op::vpu_signal, {kOFull}));
          // the previous job's output leaves after this job's weights are queued
          if (have_pending) emit_store(pending);
          pending = {lp.output_addr + uint64_t(((b * OH + oh0) * OW * N + g * Ng + nt * Ca) * osz), tm, nc, accb};
          have_pending = true;
        }
        P.push_back(make_instr(Op::mxu_signal, {kAFree}));
      }
  if (have_pending) emit_store(pending);
  P.push_back(make_instr(Op::ctl_halt, {}));
  return lp;
}

}  // namespace tessera::npu
