// The NPU ISA: instruction table (isa.def), binary encoding, assembler and disassembler.
//
// Encoding: an instruction is 1 + nfields little-endian 32-bit words; word 0 holds the opcode in
// bits 0-15 and the field count in bits 16-23 (bits 24-31 zero), then one word per field.
// A program file is "TNPU", version (u32 = 1), instruction count (u32), then the instructions.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::npu {

enum class Unit : uint8_t { dma, mxu, vpu, ctl };
const char* unit_name(Unit u);
inline constexpr int kNumQueues = 3;  // dma, mxu, vpu (ctl is handled by the dispatcher)

enum class Op : uint16_t {
#define NPU_INSN(id, mn, opc, unit, fields, doc) id = opc,
#include "npu/isa/isa.def"
#undef NPU_INSN
};

// dtype codes of the ISA
enum class NDType : uint8_t { i8 = 0, u8 = 1, i32 = 2, f32 = 3, bf16 = 4, f8e4m3 = 5, f8e5m2 = 6 };
inline constexpr int kNumNDTypes = 7;
int ndtype_size(NDType t);
const char* ndtype_name(NDType t);
NDType ndtype_from_code(uint32_t code, const char* what);  // throws for an unknown code
inline uint32_t cast_code(NDType src, NDType dst) { return uint32_t(src) | (uint32_t(dst) << 8); }

struct FieldInfo {
  std::string name;
  char kind;  // 'u', 'i', 'f'
};

struct OpInfo {
  Op op;
  const char* mnemonic;
  uint16_t opcode;
  Unit unit;
  std::vector<FieldInfo> fields;
  const char* doc;
};

inline constexpr int kMaxFields = 16;

const std::vector<OpInfo>& isa_table();
const OpInfo& op_info(Op op);
const OpInfo* op_by_mnemonic(std::string_view mnemonic);  // nullptr if unknown
const OpInfo* op_by_opcode(uint16_t opcode);              // nullptr if unknown

struct Instr {
  Op op = Op::ctl_halt;
  std::array<uint32_t, kMaxFields> f{};
  uint32_t u(int i) const { return f[size_t(i)]; }
  int32_t s(int i) const { return int32_t(f[size_t(i)]); }
  float fl(int i) const;
  bool operator==(const Instr& o) const { return op == o.op && f == o.f; }
};

// Builds an instruction from its fields in table order (missing fields are 0).
Instr make_instr(Op op, std::initializer_list<int64_t> fields);
Instr make_instr_f(Op op, std::initializer_list<int64_t> fields, int float_index, float value);

using Program = std::vector<Instr>;

std::vector<uint32_t> encode(const Program& p);                  // the instruction words only
Program decode(const std::vector<uint32_t>& words);              // throws on a bad opcode / field count
std::vector<uint8_t> encode_file(const Program& p);              // with the "TNPU" header
Program decode_file(const std::vector<uint8_t>& bytes);

// Text form: "MNEMONIC name=value ..." (or positional values "MNEMONIC v0, v1, ..."); '#' and ';' start
// comments. Values are decimal or 0x hex; f fields also take a decimal float. Errors name the line.
Program assemble(const std::string& text);
std::string disassemble(const Program& p);
std::string disassemble_instr(const Instr& in);
// "#idx MNEMONIC" for error messages
std::string instr_label(const Program& p, size_t index);

// docs/npu-isa.md, generated from the table.
std::string isa_markdown();

}  // namespace tessera::npu
