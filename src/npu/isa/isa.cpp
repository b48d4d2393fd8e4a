#include "npu/isa/isa.h"

#include <bit>
#include <charconv>
#include <cmath>
#include <cstring>
#include <sstream>

#include "core/error.h"

namespace tessera::npu {

const char* unit_name(Unit u) {
  switch (u) {
    case Unit::dma: return "DMA";
    case Unit::mxu: return "MXU";
    case Unit::vpu: return "VPU";
    case Unit::ctl: return "CTL";
  }
  return "?";
}

int ndtype_size(NDType t) {
  switch (t) {
    case NDType::i32:
    case NDType::f32: return 4;
    case NDType::bf16: return 2;
    default: return 1;
  }
}

const char* ndtype_name(NDType t) {
  static const char* names[] = {"int8", "uint8", "int32", "float32", "bfloat16", "float8e4m3fn", "float8e5m2"};
  return names[int(t)];
}

NDType ndtype_from_code(uint32_t code, const char* what) {
  check_arg(code < uint32_t(kNumNDTypes), what, ": unknown dtype code ", code);
  return NDType(code);
}

float Instr::fl(int i) const { return std::bit_cast<float>(f[size_t(i)]); }

namespace {

std::vector<FieldInfo> parse_fields(const char* spec) {
  std::vector<FieldInfo> out;
  std::istringstream in(spec);
  std::string tok;
  while (in >> tok) {
    auto c = tok.find(':');
    out.push_back({tok.substr(0, c), tok[c + 1]});
  }
  return out;
}

std::vector<OpInfo> build_table() {
  std::vector<OpInfo> t;
#define NPU_INSN(id, mn, opc, unit, fields, doc) t.push_back({Op::id, mn, opc, Unit::unit, parse_fields(fields), doc});
#include "npu/isa/isa.def"
#undef NPU_INSN
  return t;
}

}  // namespace

const std::vector<OpInfo>& isa_table() {
  static const std::vector<OpInfo> table = build_table();
  return table;
}

const OpInfo* op_by_opcode(uint16_t opcode) {
  static const std::array<int, 65536>* index = [] {
    auto* a = new std::array<int, 65536>;
    a->fill(-1);
    const auto& t = isa_table();
    for (size_t i = 0; i < t.size(); ++i) (*a)[t[i].opcode] = int(i);
    return a;
  }();
  int i = (*index)[opcode];
  return i < 0 ? nullptr : &isa_table()[size_t(i)];
}

const OpInfo& op_info(Op op) {
  const OpInfo* o = op_by_opcode(uint16_t(op));
  check(o != nullptr, ErrorCode::internal, "op_info: bad op ", int(op));
  return *o;
}

const OpInfo* op_by_mnemonic(std::string_view m) {
  for (const auto& o : isa_table())
    if (m == o.mnemonic) return &o;
  return nullptr;
}

Instr make_instr(Op op, std::initializer_list<int64_t> fields) {
  const OpInfo& oi = op_info(op);
  check(fields.size() <= oi.fields.size(), ErrorCode::internal, oi.mnemonic, ": too many fields");
  Instr in;
  in.op = op;
  size_t i = 0;
  for (int64_t v : fields) in.f[i++] = uint32_t(v);
  return in;
}

Instr make_instr_f(Op op, std::initializer_list<int64_t> fields, int float_index, float value) {
  Instr in = make_instr(op, fields);
  in.f[size_t(float_index)] = std::bit_cast<uint32_t>(value);
  return in;
}

std::vector<uint32_t> encode(const Program& p) {
  std::vector<uint32_t> w;
  for (const auto& in : p) {
    const OpInfo& oi = op_info(in.op);
    w.push_back(uint32_t(oi.opcode) | (uint32_t(oi.fields.size()) << 16));
    for (size_t i = 0; i < oi.fields.size(); ++i) w.push_back(in.f[i]);
    // fields past the table's count must be zero so that decode(encode(p)) == p
    for (size_t i = oi.fields.size(); i < kMaxFields; ++i)
      check_arg(in.f[i] == 0, "instruction ", oi.mnemonic, " has a nonzero field beyond its ", oi.fields.size());
  }
  return w;
}

Program decode(const std::vector<uint32_t>& w) {
  Program p;
  size_t i = 0;
  while (i < w.size()) {
    uint32_t h = w[i];
    const OpInfo* oi = op_by_opcode(uint16_t(h & 0xFFFF));
    check_arg(oi != nullptr, "decode: word ", i, ": unknown opcode 0x", std::hex, (h & 0xFFFF));
    size_t n = (h >> 16) & 0xFF;
    check_arg(n == oi->fields.size() && (h >> 24) == 0, "decode: word ", i, ": ", oi->mnemonic, " expects ",
              oi->fields.size(), " fields, header says ", n);
    check_arg(i + 1 + n <= w.size(), "decode: word ", i, ": ", oi->mnemonic, " truncated");
    Instr in;
    in.op = oi->op;
    for (size_t k = 0; k < n; ++k) in.f[k] = w[i + 1 + k];
    p.push_back(in);
    i += 1 + n;
  }
  return p;
}

std::vector<uint8_t> encode_file(const Program& p) {
  std::vector<uint32_t> w = encode(p);
  std::vector<uint8_t> b(12 + w.size() * 4);
  std::memcpy(b.data(), "TNPU", 4);
  uint32_t hdr[2] = {1u, uint32_t(p.size())};
  for (int k = 0; k < 2; ++k)
    for (int j = 0; j < 4; ++j) b[4 + size_t(k) * 4 + size_t(j)] = uint8_t(hdr[k] >> (8 * j));
  for (size_t i = 0; i < w.size(); ++i)
    for (int j = 0; j < 4; ++j) b[12 + i * 4 + size_t(j)] = uint8_t(w[i] >> (8 * j));
  return b;
}

Program decode_file(const std::vector<uint8_t>& b) {
  check_arg(b.size() >= 12 && std::memcmp(b.data(), "TNPU", 4) == 0, "not an NPU program (missing TNPU header)");
  check_arg((b.size() - 12) % 4 == 0, "NPU program: size is not a whole number of words");
  auto word = [&](size_t off) {
    return uint32_t(b[off]) | uint32_t(b[off + 1]) << 8 | uint32_t(b[off + 2]) << 16 | uint32_t(b[off + 3]) << 24;
  };
  check_arg(word(4) == 1, "NPU program: unsupported version ", word(4));
  std::vector<uint32_t> w((b.size() - 12) / 4);
  for (size_t i = 0; i < w.size(); ++i) w[i] = word(12 + i * 4);
  Program p = decode(w);
  check_arg(p.size() == word(8), "NPU program: header says ", word(8), " instructions, found ", p.size());
  return p;
}

namespace {

std::string trim(std::string_view s) {
  size_t b = s.find_first_not_of(" \t\r\n"), e = s.find_last_not_of(" \t\r\n");
  return b == std::string::npos ? std::string() : std::string(s.substr(b, e - b + 1));
}

uint32_t parse_value(const std::string& v, char kind, int line, const std::string& field) {
  auto fail = [&]() -> uint32_t {
    throw Error(ErrorCode::invalid_argument, cat("asm line ", line, ": field '", field, "': bad value '", v, "'"));
  };
  if (v.empty()) return fail();
  const char* b = v.data();
  const char* e = v.data() + v.size();
  if (v.size() > 2 && v[0] == '0' && (v[1] == 'x' || v[1] == 'X')) {
    uint64_t x = 0;
    auto r = std::from_chars(b + 2, e, x, 16);
    if (r.ec != std::errc() || r.ptr != e || x > 0xFFFFFFFFull) return fail();
    return uint32_t(x);
  }
  if (kind == 'f') {
    float x = 0;
    auto r = std::from_chars(b, e, x);
    if (r.ec != std::errc() || r.ptr != e) return fail();
    return std::bit_cast<uint32_t>(x);
  }
  int64_t x = 0;
  auto r = std::from_chars(b, e, x);
  if (r.ec != std::errc() || r.ptr != e) return fail();
  if (kind == 'u' && (x < 0 || x > 0xFFFFFFFFll)) return fail();
  if (kind == 'i' && (x < INT32_MIN || x > INT32_MAX)) return fail();
  return uint32_t(x);
}

std::string format_value(uint32_t w, char kind) {
  if (kind == 'i') return std::to_string(int32_t(w));
  if (kind == 'f') {
    float x = std::bit_cast<float>(w);
    if (!std::isfinite(x)) {
      char buf[16];
      std::snprintf(buf, sizeof buf, "0x%08x", w);
      return buf;
    }
    char buf[64];
    auto r = std::to_chars(buf, buf + sizeof buf, x);
    return std::string(buf, r.ptr);
  }
  return std::to_string(w);
}

}  // namespace

Program assemble(const std::string& text) {
  Program p;
  std::istringstream in(text);
  std::string line;
  int lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    auto c = line.find_first_of("#;");
    if (c != std::string::npos) line.resize(c);
    line = trim(line);
    if (line.empty()) continue;
    auto sp = line.find_first_of(" \t");
    std::string mn = line.substr(0, sp);
    for (auto& ch : mn) ch = char(std::toupper(static_cast<unsigned char>(ch)));
    const OpInfo* oi = op_by_mnemonic(mn);
    check_arg(oi != nullptr, "asm line ", lineno, ": unknown mnemonic '", mn, "'");
    Instr ins;
    ins.op = oi->op;
    std::string rest = sp == std::string::npos ? std::string() : line.substr(sp);
    for (auto& ch : rest)
      if (ch == ',') ch = ' ';
    std::istringstream toks(rest);
    std::string tok;
    size_t pos = 0;
    std::vector<bool> seen(oi->fields.size(), false);
    while (toks >> tok) {
      auto eq = tok.find('=');
      size_t idx;
      std::string val;
      if (eq == std::string::npos) {
        idx = pos++;
        check_arg(idx < oi->fields.size(), "asm line ", lineno, ": ", mn, " takes ", oi->fields.size(), " fields");
        val = tok;
      } else {
        std::string name = tok.substr(0, eq);
        val = tok.substr(eq + 1);
        idx = oi->fields.size();
        for (size_t k = 0; k < oi->fields.size(); ++k)
          if (oi->fields[k].name == name) idx = k;
        check_arg(idx < oi->fields.size(), "asm line ", lineno, ": ", mn, " has no field '", name, "'");
      }
      check_arg(!seen[idx], "asm line ", lineno, ": field '", oi->fields[idx].name, "' given twice");
      seen[idx] = true;
      ins.f[idx] = parse_value(val, oi->fields[idx].kind, lineno, oi->fields[idx].name);
    }
    p.push_back(ins);
  }
  return p;
}

std::string disassemble_instr(const Instr& in) {
  const OpInfo& oi = op_info(in.op);
  std::string s = oi.mnemonic;
  for (size_t k = 0; k < oi.fields.size(); ++k) s += " " + oi.fields[k].name + "=" + format_value(in.f[k], oi.fields[k].kind);
  return s;
}

std::string disassemble(const Program& p) {
  std::string s;
  for (const auto& in : p) s += disassemble_instr(in) + "\n";
  return s;
}

std::string instr_label(const Program& p, size_t index) {
  if (index >= p.size()) return cat("#", index);
  return cat("#", index, " ", op_info(p[index].op).mnemonic);
}

std::string isa_markdown() {
  std::ostringstream o;
  o << "# Tessera NPU instruction set\n\n"
       "<!-- GENERATED by `tessera npu isa-doc` from src/npu/isa/isa.def and src/npu/isa/isa.cpp; do not edit. -->\n\n"
       "The NPU has three instruction queues, one per unit: **DMA** (HBM <-> on-chip memory), **MXU** (the\n"
       "systolic matrix unit) and **VPU** (the vector unit, which also moves results out of the accumulators).\n"
       "A program is one instruction stream; the dispatcher sends each instruction, in order, to its unit's\n"
       "queue. Each queue executes in order; the queues run concurrently and order themselves only through\n"
       "counting semaphores (`*.SIGNAL` / `*.WAIT`, all semaphores start at 0). A program whose queues all\n"
       "block is a deadlock and stops with an error naming the blocked instructions.\n\n"
       "Memories: HBM (byte-addressed), unified buffer UB (byte-addressed, activations), accumulators ACC\n"
       "(rows of `cols` 32-bit words, addressed by row), weight buffer (`weight_slots` tiles of R x C).\n"
       "Every access is bounds-checked: a program that reads or writes outside a memory, names a\n"
       "slot or semaphore that does not exist or uses an unknown dtype stops with a `tessera::Error` that\n"
       "names the instruction (`#index MNEMONIC`).\n\n"
       "## Encoding\n\n"
       "An instruction is 1 + nfields little-endian 32-bit words: word 0 = opcode (bits 0-15) | field count\n"
       "(bits 16-23); then one word per field, in the order listed below. Field kinds: `u` unsigned, `i` signed\n"
       "(two's complement), `f` an f32 bit pattern. A program file is the bytes `TNPU`, version (u32 = 1),\n"
       "instruction count (u32), then the instructions. The text form is `MNEMONIC name=value ...`\n"
       "(the disassembler's output; the assembler also accepts positional values).\n\n"
       "dtype codes: 0 int8, 1 uint8, 2 int32, 3 float32, 4 bfloat16, 5 float8e4m3fn, 6 float8e5m2;\n"
       "`cast` = src_dtype | dst_dtype << 8.\n\n"
       "## Instructions\n\n"
       "| mnemonic | opcode | unit | fields | words |\n|---|---|---|---|---|\n";
  for (const auto& oi : isa_table()) {
    char opc[8];
    std::snprintf(opc, sizeof opc, "0x%02X", oi.opcode);
    std::string fields;
    for (const auto& f : oi.fields) fields += (fields.empty() ? "" : " ") + f.name + ":" + f.kind;
    o << "| `" << oi.mnemonic << "` | " << opc << " | " << unit_name(oi.unit) << " | " << (fields.empty() ? "-" : fields)
      << " | " << 1 + oi.fields.size() << " |\n";
  }
  o << "\n";
  for (const auto& oi : isa_table()) o << "### " << oi.mnemonic << "\n\n" << oi.doc << "\n\n";
  o << "## Numerics (the simulator is the spec)\n\n"
       "- **MXU int8**: int8 x int8 products are exact; the accumulator is int32 and wraps modulo 2^32\n"
       "  (two's complement), so the result is exact whenever the true sum fits in int32, and independent of\n"
       "  order.\n"
       "- **MXU bfloat16 / float8 (e4m3fn, e5m2)**: each product of two operands is exact in f32 (at most\n"
       "  8 x 8 significand bits). The accumulator is f32. For output (i, j) the products are added one at a\n"
       "  time in increasing k (row of the weight tile), starting from the accumulator's old value when\n"
       "  `accumulate` = 1 (else +0.0), each addition rounded to nearest-even in f32. A GEMM split into K tiles\n"
       "  that are issued in increasing K order therefore equals the sequential f32 sum over k = 0..K-1.\n"
       "  NaN and Inf propagate as in IEEE arithmetic. A row's operands are read in the slot's dtype.\n"
       "- **VPU**: f32 arithmetic with round-to-nearest-even; exp, tanh, erf use the host C library's f32\n"
       "  functions (expf, tanhf, erff), rsqrt is 1.0f / sqrtf(x), recip is 1.0f / x.\n"
       "- **Casts** (DMA.LOAD, VPU.CAST): to float32 exact from every type (int32 -> f32 rounds to nearest\n"
       "  even); to bfloat16 / float8 round to nearest even (float8 saturating to the largest finite value, as\n"
       "  ONNX Cast saturate=1); to int8 / uint8 / int32 round half to even then saturate, NaN -> 0.\n"
       "- **Epilogue** (VPU.ACCMOV): when in_dtype = out_dtype = int32, scale = 1, zp = 0 and act = 0 the\n"
       "  accumulator word is copied unchanged. Otherwise v = float(acc) (int32 -> f32 rounds to nearest\n"
       "  even), v = v * scale (f32), then act (relu: v > 0 ? v : 0, NaN kept); integer outputs are\n"
       "  saturate(round_half_even(v) + zp), float outputs are v + zp rounded to the output type as a cast.\n"
       "- **VPU.REQUANT**: saturate_int8(round_half_even(float(x) * scale) + zp), NaN -> zp.\n\n"
       "## Timing (detailed mode)\n\n"
       "- DMA: each transfer occupies one of `dma_engines` engines for its transfer time (engines are\n"
       "  pipelined: the latency overlaps the next transfer); HBM is one shared channel of `hbm_gbps`\n"
       "  (transfers queue for it: contention); a transfer completes `hbm_latency_ns` after its data\n"
       "  has streamed. Only in-bounds (non-padding) source bytes cross HBM. The on-chip\n"
       "  side moves `ub_banks` x `ub_bank_bytes` bytes per cycle, fewer when the access stride maps\n"
       "  several consecutive accesses to one bank (bank conflicts). DMA.LOADW moves a full R x C tile.\n"
       "- MXU.MATMUL: m cycles with the array active, after the slot's weights are shifted into the array\n"
       "  (R cycles, overlapped with the previous matmul when the slot was loaded in time: double\n"
       "  buffering); results drain R + C - 2 cycles after the last row enters (fill and drain).\n"
       "- VPU: ceil(n / lanes) cycles + the op's latency; VPU.ACCMOV: rows * ceil(cols / lanes) + latency.\n"
       "- Every cycle of each unit is busy or a named stall. MXU: array active, weight shift, weight stall\n"
       "  (waiting on a semaphore last signalled after a weight load), input stall (after an activation\n"
       "  load), RAW stall (after a VPU result), fill/drain, non-matrix (no MXU work queued).\n";
  return o.str();
}

}  // namespace tessera::npu
