#include "tools/npy.h"

#include <cstring>
#include <fstream>
#include <sstream>

namespace tessera::tools {

namespace {

struct DescrEntry {
  const char* descr;
  DType dtype;
};

// numpy descr <-> Tessera dtype (little-endian; '|' for one-byte types).
constexpr DescrEntry kDescrs[] = {
    {"<f4", DType::f32}, {"<f8", DType::f64},   {"<f2", DType::f16}, {"|i1", DType::i8},
    {"|u1", DType::u8},  {"<i2", DType::i16},   {"<u2", DType::u16}, {"<i4", DType::i32},
    {"<u4", DType::u32}, {"<i8", DType::i64},   {"<u8", DType::u64}, {"|b1", DType::boolean},
    {"<c8", DType::c64}, {"<c16", DType::c128},
};

[[noreturn]] void bad(const std::string& what, const std::string& why) {
  throw Error(ErrorCode::invalid_argument, cat(what, ": not a valid .npy file: ", why));
}

// Finds `'key':` in the header dict and returns the text of its value.
std::string dict_value(const std::string& header, const std::string& key, const std::string& what) {
  const std::string k = "'" + key + "'";
  size_t p = header.find(k);
  if (p == std::string::npos) bad(what, "header has no " + k);
  p = header.find(':', p + k.size());
  if (p == std::string::npos) bad(what, "header has no value for " + k);
  ++p;
  while (p < header.size() && header[p] == ' ') ++p;
  if (p >= header.size()) bad(what, "truncated header");
  size_t end;
  if (header[p] == '\'') {
    end = header.find('\'', p + 1);
    if (end == std::string::npos) bad(what, "unterminated string in header");
    return header.substr(p + 1, end - p - 1);
  }
  if (header[p] == '(') {
    end = header.find(')', p);
    if (end == std::string::npos) bad(what, "unterminated shape tuple");
    return header.substr(p, end - p + 1);
  }
  end = header.find_first_of(",}", p);
  if (end == std::string::npos) bad(what, "truncated header");
  return header.substr(p, end - p);
}

}  // namespace

std::string npy_descr(DType t) {
  for (const auto& e : kDescrs)
    if (e.dtype == t) return e.descr;
  return "";
}

Tensor parse_npy(const std::string& bytes, const std::string& what) {
  if (bytes.size() < 10 || std::memcmp(bytes.data(), "\x93NUMPY", 6) != 0) bad(what, "missing magic");
  const int major = static_cast<unsigned char>(bytes[6]);
  size_t header_len = 0, pos = 0;
  if (major == 1) {
    header_len = size_t(uint8_t(bytes[8])) | size_t(uint8_t(bytes[9])) << 8;
    pos = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) bad(what, "truncated header");
    for (int i = 0; i < 4; ++i) header_len |= size_t(uint8_t(bytes[8 + i])) << (8 * i);
    pos = 12;
  } else {
    bad(what, cat("unknown format version ", major));
  }
  if (bytes.size() - pos < header_len) bad(what, "truncated header");
  const std::string header = bytes.substr(pos, header_len);
  pos += header_len;

  const std::string descr = dict_value(header, "descr", what);
  const std::string fortran = dict_value(header, "fortran_order", what);
  const std::string shape_text = dict_value(header, "shape", what);
  if (fortran.find("True") != std::string::npos)
    throw Error(ErrorCode::invalid_argument,
                cat(what, ": Fortran-order arrays are not supported (save C order)"));

  DType dtype = DType::undefined;
  for (const auto& e : kDescrs) {
    std::string d = e.descr;
    // accept '=' / '<' / '|' spellings of the native little-endian types
    if (descr == d || (descr.size() == d.size() && (descr[0] == '=' || descr[0] == '<' || descr[0] == '|') &&
                       descr.substr(1) == d.substr(1)))
      dtype = e.dtype;
  }
  if (dtype == DType::undefined) {
    if (!descr.empty() && descr[0] == '>')
      throw Error(ErrorCode::invalid_argument, cat(what, ": big-endian arrays are not supported"));
    throw Error(ErrorCode::invalid_argument, cat(what, ": unsupported .npy dtype '", descr, "'"));
  }

  Shape shape;
  if (shape_text.size() < 2 || shape_text.front() != '(') bad(what, "bad shape '" + shape_text + "'");
  std::stringstream ss(shape_text.substr(1, shape_text.size() - 2));
  std::string item;
  while (std::getline(ss, item, ',')) {
    size_t b = item.find_first_not_of(" L");
    if (b == std::string::npos) continue;
    size_t e = item.find_last_not_of(" L");
    std::string num = item.substr(b, e - b + 1);
    if (num.empty() || num.find_first_not_of("0123456789") != std::string::npos || num.size() > 15)
      bad(what, "bad shape '" + shape_text + "'");
    shape.push_back(std::stoll(num));
  }
  const int64_t n = shape_numel(shape);
  const size_t need = size_t(n) * dtype_size(dtype);
  if (bytes.size() - pos < need)
    bad(what, cat("data is ", bytes.size() - pos, " bytes, shape ", shape_str(shape), " needs ", need));
  Tensor t(dtype, shape);
  if (need) std::memcpy(t.raw_data(), bytes.data() + pos, need);
  if (dtype == DType::boolean) {  // normalize any non-zero byte to true
    auto* p = static_cast<uint8_t*>(t.raw_data());
    for (int64_t i = 0; i < n; ++i) p[i] = p[i] != 0;
  }
  return t;
}

Tensor read_npy(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error(ErrorCode::io, cat("cannot open '", path, "'"));
  std::stringstream ss;
  ss << f.rdbuf();
  return parse_npy(ss.str(), path);
}

std::string encode_npy(const Tensor& t_in) {
  Tensor t = t_in.contiguous();
  std::string descr = npy_descr(t.dtype());
  if (descr.empty()) {
    switch (dtype_size(t.dtype())) {
      case 1:
        descr = is_signed(t.dtype()) && is_integer(t.dtype()) ? "|i1" : "|u1";
        break;
      case 2:
        descr = "<u2";
        break;
      default:
        throw Error(ErrorCode::unsupported, cat("cannot write ", dtype_name(t.dtype()), " tensors as .npy"));
    }
  }
  std::string shape = "(";
  for (size_t i = 0; i < t.shape().size(); ++i)
    shape += cat(t.shape()[i], t.shape().size() == 1 ? "," : (i + 1 < t.shape().size() ? ", " : ""));
  shape += ")";
  std::string header = cat("{'descr': '", descr, "', 'fortran_order': False, 'shape': ", shape, ", }");
  // magic(6) + version(2) + len(2) + header + '\n' padded to a multiple of 64
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::string out = "\x93NUMPY";
  out += char(1);
  out += char(0);
  out += char(header.size() & 0xFF);
  out += char(header.size() >> 8);
  out += header;
  out.append(static_cast<const char*>(t.raw_data()), t.nbytes());
  return out;
}

void write_npy(const std::string& path, const Tensor& t) {
  const std::string data = encode_npy(t);
  std::ofstream f(path, std::ios::binary);
  if (!f) throw Error(ErrorCode::io, cat("cannot write '", path, "'"));
  f.write(data.data(), std::streamsize(data.size()));
  if (!f) throw Error(ErrorCode::io, cat("error writing '", path, "'"));
}

}  // namespace tessera::tools
