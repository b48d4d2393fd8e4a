// TensorProto / SparseTensorProto / SequenceProto / OptionalProto / TypeProto
// decoding, including external data. Everything is validated before any
// allocation: element counts against the data actually present, dims against
// kMaxElements, external files against their size.
#include <algorithm>
#include <bit>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "frontend/onnx/onnx_internal.h"

namespace tessera::frontend::onnx {

static_assert(std::endian::native == std::endian::little, "the ONNX loader assumes a little-endian host");

namespace {
namespace fs = std::filesystem;
using tessera_onnx::TensorProto;
using detail::TensorSource;

struct OnnxType {
  int32_t code;
  DType dtype;
};
constexpr OnnxType kTypes[] = {
    {TensorProto::FLOAT, DType::f32},
    {TensorProto::UINT8, DType::u8},
    {TensorProto::INT8, DType::i8},
    {TensorProto::UINT16, DType::u16},
    {TensorProto::INT16, DType::i16},
    {TensorProto::INT32, DType::i32},
    {TensorProto::INT64, DType::i64},
    {TensorProto::STRING, DType::string},
    {TensorProto::BOOL, DType::boolean},
    {TensorProto::FLOAT16, DType::f16},
    {TensorProto::DOUBLE, DType::f64},
    {TensorProto::UINT32, DType::u32},
    {TensorProto::UINT64, DType::u64},
    {TensorProto::COMPLEX64, DType::c64},
    {TensorProto::COMPLEX128, DType::c128},
    {TensorProto::BFLOAT16, DType::bf16},
    {TensorProto::FLOAT8E4M3FN, DType::f8e4m3fn},
    {TensorProto::FLOAT8E4M3FNUZ, DType::f8e4m3fnuz},
    {TensorProto::FLOAT8E5M2, DType::f8e5m2},
    {TensorProto::FLOAT8E5M2FNUZ, DType::f8e5m2fnuz},
    {TensorProto::UINT4, DType::u4},
    {TensorProto::INT4, DType::i4},
    {TensorProto::FLOAT4E2M1, DType::f4e2m1},
    {TensorProto::FLOAT8E8M0, DType::f8e8m0},
    {TensorProto::UINT2, DType::u2},
    {TensorProto::INT2, DType::i2},
};

// Bits per element on the wire (4 and 2 for the packed types).
int wire_bits(DType t) {
  switch (t) {
    case DType::i4:
    case DType::u4:
    case DType::f4e2m1: return 4;
    case DType::i2:
    case DType::u2: return 2;
    default: return int(dtype_size(t)) * 8;
  }
}

// Number of wire bytes for n elements.
int64_t wire_bytes(DType t, int64_t n) {
  const int bits = wire_bits(t);
  if (bits >= 8) return n * (bits / 8);
  const int per_byte = 8 / bits;
  return (n + per_byte - 1) / per_byte;
}

std::string tensor_label(const TensorProto& tp) {
  return tp.name().empty() ? std::string("tensor") : cat("tensor '", tp.name(), "'");
}

// Stores element i of the sub-byte tensor from its unsigned code.
void put_subbyte(Tensor& t, int64_t i, uint32_t code) {
  switch (t.dtype()) {
    case DType::i4: t.data<Int4>()[i] = Int4(int64_t(code)); break;  // wraps: sign-extends
    case DType::u4: t.data<UInt4>()[i] = UInt4(int64_t(code)); break;
    case DType::i2: t.data<Int2>()[i] = Int2(int64_t(code)); break;
    case DType::u2: t.data<UInt2>()[i] = UInt2(int64_t(code)); break;
    case DType::f4e2m1: t.data<Float4E2M1>()[i] = Float4E2M1::from_bits(uint8_t(code)); break;
    default: throw Error(ErrorCode::internal, "put_subbyte on a byte type");
  }
}

// Unpacks packed wire bytes (low bits first) into one element per byte.
void unpack_subbyte(Tensor& t, const uint8_t* src, size_t nbytes) {
  const int bits = wire_bits(t.dtype());
  const int per_byte = 8 / bits;
  const uint32_t mask = (1u << bits) - 1;
  for (int64_t i = 0; i < t.numel(); ++i) {
    const size_t byte = size_t(i / per_byte);
    if (byte >= nbytes) throw Error(ErrorCode::internal, "unpack past the data");
    put_subbyte(t, i, (src[byte] >> (bits * (i % per_byte))) & mask);
  }
}

// Fills a tensor from little-endian raw bytes (exactly wire_bytes long).
void fill_from_raw(Tensor& t, const uint8_t* src, size_t nbytes) {
  const DType d = t.dtype();
  if (wire_bits(d) < 8) return unpack_subbyte(t, src, nbytes);
  if (d == DType::boolean) {
    bool* out = t.data<bool>();
    for (int64_t i = 0; i < t.numel(); ++i) out[i] = src[i] != 0;
    return;
  }
  if (nbytes) std::memcpy(t.raw_data(), src, nbytes);
}

// Fills a 1/2-byte-per-element tensor (or bool / sub-byte) from int32_data.
void fill_from_int32(Tensor& t, const google::protobuf::RepeatedField<int32_t>& v) {
  const DType d = t.dtype();
  const int64_t n = t.numel();
  if (wire_bits(d) < 8) {
    std::vector<uint8_t> bytes(v.size());
    for (int i = 0; i < v.size(); ++i) bytes[size_t(i)] = uint8_t(uint32_t(v[i]) & 0xFFu);
    return unpack_subbyte(t, bytes.data(), bytes.size());
  }
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t u = uint32_t(v[int(i)]);
    switch (d) {
      case DType::i32: t.data<int32_t>()[i] = v[int(i)]; break;
      case DType::i16: t.data<int16_t>()[i] = int16_t(u & 0xFFFFu); break;
      case DType::u16: t.data<uint16_t>()[i] = uint16_t(u & 0xFFFFu); break;
      case DType::i8: t.data<int8_t>()[i] = int8_t(u & 0xFFu); break;
      case DType::u8: t.data<uint8_t>()[i] = uint8_t(u & 0xFFu); break;
      case DType::boolean: t.data<bool>()[i] = v[int(i)] != 0; break;
      case DType::f16: t.data<Float16>()[i] = Float16::from_bits(uint16_t(u & 0xFFFFu)); break;
      case DType::bf16: t.data<BFloat16>()[i] = BFloat16::from_bits(uint16_t(u & 0xFFFFu)); break;
      case DType::f8e4m3fn: t.data<Float8E4M3FN>()[i] = Float8E4M3FN::from_bits(uint8_t(u)); break;
      case DType::f8e4m3fnuz: t.data<Float8E4M3FNUZ>()[i] = Float8E4M3FNUZ::from_bits(uint8_t(u)); break;
      case DType::f8e5m2: t.data<Float8E5M2>()[i] = Float8E5M2::from_bits(uint8_t(u)); break;
      case DType::f8e5m2fnuz: t.data<Float8E5M2FNUZ>()[i] = Float8E5M2FNUZ::from_bits(uint8_t(u)); break;
      case DType::f8e8m0: t.data<Float8E8M0>()[i] = Float8E8M0::from_bits(uint8_t(u)); break;
      default: throw Error(ErrorCode::internal, "fill_from_int32: bad dtype");
    }
  }
}

bool uses_int32_data(DType d) {
  switch (d) {
    case DType::i32: case DType::i16: case DType::u16: case DType::i8: case DType::u8:
    case DType::boolean: case DType::f16: case DType::bf16: case DType::f8e4m3fn:
    case DType::f8e4m3fnuz: case DType::f8e5m2: case DType::f8e5m2fnuz: case DType::f8e8m0:
    case DType::i4: case DType::u4: case DType::i2: case DType::u2: case DType::f4e2m1: return true;
    default: return false;
  }
}

int64_t parse_nonneg_int(const std::string& s, const std::string& what) {
  int64_t v = -1;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  check_model(ec == std::errc() && p == s.data() + s.size() && v >= 0, what, ": '", s,
              "' is not a non-negative integer");
  return v;
}

// True if `p` is `base` or inside it (both canonical).
bool is_within(const fs::path& base, const fs::path& p) {
  auto bi = base.begin(), pi = p.begin();
  for (; bi != base.end(); ++bi, ++pi) {
    if (bi->empty() && std::next(bi) == base.end()) break;  // trailing separator
    if (pi == p.end() || *bi != *pi) return false;
  }
  return true;
}

// Reads the external bytes of a tensor, confined to src.external_dir.
std::vector<uint8_t> read_external(const TensorProto& tp, const TensorSource& src, int64_t expected) {
  const std::string label = tensor_label(tp);
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto& kv : tp.external_data()) {
    if (kv.key() == "location") location = kv.value();
    else if (kv.key() == "offset") offset = parse_nonneg_int(kv.value(), cat(label, " external offset"));
    else if (kv.key() == "length") length = parse_nonneg_int(kv.value(), cat(label, " external length"));
  }
  check_model(!location.empty(), label, ": external data without a 'location'");
  check(!src.external_dir.empty(), ErrorCode::invalid_model, label, ": external data '", location,
        "' cannot be resolved (model loaded from bytes without LoadOptions::external_data_dir)");
  const fs::path rel(location);
  check_model(!rel.is_absolute() && !rel.has_root_name() && !rel.has_root_directory(), label,
              ": external data location '", location, "' is an absolute path");
  for (const auto& part : rel)
    check_model(part != "..", label, ": external data location '", location, "' escapes the model folder ('..')");
  std::error_code ec;
  const fs::path base = fs::weakly_canonical(fs::absolute(src.external_dir), ec);
  check(!ec, ErrorCode::io, "cannot resolve external data folder '", src.external_dir, "': ", ec.message());
  const fs::path full = fs::weakly_canonical(base / rel, ec);
  check(!ec, ErrorCode::io, label, ": cannot resolve external data '", location, "': ", ec.message());
  check_model(is_within(base, full), label, ": external data '", location, "' resolves to '", full.string(),
              "', outside the model folder '", base.string(), "'");
  check(fs::is_regular_file(full, ec), ErrorCode::io, label, ": external data file '", full.string(),
        "' does not exist or is not a regular file");
  const auto fsize = int64_t(fs::file_size(full, ec));
  check(!ec, ErrorCode::io, label, ": cannot stat '", full.string(), "': ", ec.message());
  check_model(offset <= fsize, label, ": external offset ", offset, " is past the end of '", location, "' (",
              fsize, " bytes)");
  if (length < 0) length = fsize - offset;
  check_model(length <= fsize - offset, label, ": external data '", location, "' is truncated: wants ", length,
              " bytes at offset ", offset, ", file has ", fsize);
  check_model(length == expected, label, ": external data has ", length, " bytes, dims need ", expected);
  std::vector<uint8_t> buf(static_cast<size_t>(length));
  std::ifstream f(full, std::ios::binary);
  check(bool(f), ErrorCode::io, label, ": cannot open '", full.string(), "'");
  f.seekg(offset);
  if (length) f.read(reinterpret_cast<char*>(buf.data()), length);
  check(bool(f) && f.gcount() == length, ErrorCode::io, label, ": short read from '", full.string(), "'");
  return buf;
}

Shape checked_dims(const google::protobuf::RepeatedField<int64_t>& dims, const std::string& label,
                   int64_t* numel) {
  Shape shape(dims.begin(), dims.end());
  // Every dim is bounded, even in an empty tensor (strides are products of the nonzero dims).
  int64_t span = 1;
  for (int64_t d : shape) {
    check_model(d >= 0, label, ": negative dimension in dims ", shape_str(shape));
    const int64_t e = std::max<int64_t>(d, 1);
    check_model(span <= kMaxElements / e, label, ": dims ", shape_str(shape), " exceed 2^40 elements");
    span *= e;
  }
  try {
    *numel = shape_numel(shape);
  } catch (const Error& e) {
    throw Error(ErrorCode::invalid_model, cat(label, ": ", e.message()));
  }
  return shape;
}

void check_count(int64_t have, int64_t want, const std::string& label, const char* field) {
  check_model(have == want, label, ": ", field, " has ", have, " values, dims need ", want);
}

// Reads a varint-length-delimited stream with CodedInputStream helpers.
using google::protobuf::io::CodedInputStream;

void refuse_unknown_value_type(int32_t elem_type, const char* what) {
  throw Error(ErrorCode::unsupported, cat(what, " of element kind ", elem_type, " is not supported (only tensors)"));
}

}  // namespace

DType dtype_from_onnx(int32_t code) {
  for (const auto& t : kTypes)
    if (t.code == code) return t.dtype;
  return DType::undefined;
}

int32_t dtype_to_onnx(DType d) {
  for (const auto& t : kTypes)
    if (t.dtype == d) return t.code;
  return 0;
}

namespace detail {

bool is_skeleton(const TensorProto& tp) {
  return tp.doc_string().rfind("skeleton:", 0) == 0 && !tp.has_raw_data() && tp.float_data_size() == 0 &&
         tp.int32_data_size() == 0 && tp.int64_data_size() == 0 && tp.double_data_size() == 0 &&
         tp.uint64_data_size() == 0 && tp.string_data_size() == 0 && tp.external_data_size() == 0;
}

Tensor decode_tensor(const TensorProto& tp, const TensorSource& src) {
  const std::string label = tensor_label(tp);
  check(!tp.has_segment(), ErrorCode::unsupported, label, ": segmented tensors are not supported");
  check_model(tp.has_data_type() && tp.data_type() != TensorProto::UNDEFINED, label, ": undefined data_type");
  const DType d = dtype_from_onnx(tp.data_type());
  check(d != DType::undefined, ErrorCode::unsupported, label, ": unknown data_type ", tp.data_type());
  int64_t n = 0;
  Shape shape = checked_dims(tp.dims(), label, &n);

  if (is_skeleton(tp) && n > 0) {
    const SkeletonPolicy pol = src.opts ? src.opts->skeletons : SkeletonPolicy::refuse;
    const std::string doc = tp.doc_string().substr(9);
    switch (pol) {
      case SkeletonPolicy::refuse:
        throw Error(ErrorCode::invalid_model,
                    cat(label, " is a skeleton initializer (no data; ", tp.doc_string(),
                        "): materialize the model first, or load with LoadOptions::skeletons"));
      case SkeletonPolicy::zeros: return Tensor(d, shape);
      case SkeletonPolicy::fill: {
        check_arg(bool(src.opts->skeleton_fill), "SkeletonPolicy::fill without LoadOptions::skeleton_fill");
        Tensor t = src.opts->skeleton_fill(tp.name(), d, shape, doc);
        check_arg(t.dtype() == d && t.shape() == shape, "skeleton_fill for '", tp.name(), "' returned ",
                  t.describe(), ", expected ", dtype_name(d), shape_str(shape));
        return t;
      }
    }
  }

  const int64_t nbytes = d == DType::string ? 0 : wire_bytes(d, n);
  if (tp.data_location() == TensorProto::EXTERNAL) {
    check_model(d != DType::string, label, ": string tensors cannot use external data");
    std::vector<uint8_t> buf = read_external(tp, src, nbytes);
    Tensor t(d, shape);
    fill_from_raw(t, buf.data(), buf.size());
    return t;
  }

  if (tp.has_raw_data()) {
    check_model(d != DType::string, label, ": string tensors cannot use raw_data");
    check_model(int64_t(tp.raw_data().size()) == nbytes, label, ": raw_data has ", tp.raw_data().size(),
                " bytes, dims ", shape_str(shape), " of ", dtype_name(d), " need ", nbytes);
    if (src.adopt_raw_data && nbytes >= 4096 && wire_bits(d) >= 8 && d != DType::boolean &&
        reinterpret_cast<uintptr_t>(tp.raw_data().data()) % dtype_size(d) == 0) {
      // TensorSource::adopt_raw_data: the proto is the importer's own and is not read again.
      auto holder = std::make_shared<std::string>(std::move(*const_cast<TensorProto&>(tp).mutable_raw_data()));
      return Tensor::view(d, shape, std::shared_ptr<void>(holder, holder->data()), 0);
    }
    Tensor t(d, shape);
    fill_from_raw(t, reinterpret_cast<const uint8_t*>(tp.raw_data().data()), tp.raw_data().size());
    return t;
  }

  const bool no_data = tp.float_data_size() == 0 && tp.double_data_size() == 0 && tp.int32_data_size() == 0 &&
                       tp.int64_data_size() == 0 && tp.uint64_data_size() == 0 && tp.string_data_size() == 0;
  check_model(!no_data || n == 0, label, " has no data (dims ", shape_str(shape), " need ", n, " elements)");

  // Typed fields: only the one matching the dtype may hold data.
  const bool f_ok = d == DType::f32 || d == DType::c64;
  const bool dbl_ok = d == DType::f64 || d == DType::c128;
  const bool i32_ok = uses_int32_data(d);
  const bool i64_ok = d == DType::i64;
  const bool u64_ok = d == DType::u32 || d == DType::u64;
  const bool s_ok = d == DType::string;
  check_model((f_ok || tp.float_data_size() == 0) && (dbl_ok || tp.double_data_size() == 0) &&
                  (i32_ok || tp.int32_data_size() == 0) && (i64_ok || tp.int64_data_size() == 0) &&
                  (u64_ok || tp.uint64_data_size() == 0) && (s_ok || tp.string_data_size() == 0),
              label, ": data stored in a field that does not match data_type ", dtype_name(d));
  const int64_t complex_mul = is_complex(d) ? 2 : 1;
  if (f_ok) {
    check_count(tp.float_data_size(), n * complex_mul, label, "float_data");
    Tensor t(d, shape);
    if (n) std::memcpy(t.raw_data(), tp.float_data().data(), size_t(n * complex_mul) * sizeof(float));
    return t;
  }
  if (dbl_ok) {
    check_count(tp.double_data_size(), n * complex_mul, label, "double_data");
    Tensor t(d, shape);
    if (n) std::memcpy(t.raw_data(), tp.double_data().data(), size_t(n * complex_mul) * sizeof(double));
    return t;
  }
  if (i32_ok) {
    const int64_t want = wire_bits(d) < 8 ? wire_bytes(d, n) : n;
    check_count(tp.int32_data_size(), want, label, "int32_data");
    Tensor t(d, shape);
    fill_from_int32(t, tp.int32_data());
    return t;
  }
  if (i64_ok) {
    check_count(tp.int64_data_size(), n, label, "int64_data");
    Tensor t(d, shape);
    if (n) std::memcpy(t.raw_data(), tp.int64_data().data(), size_t(n) * sizeof(int64_t));
    return t;
  }
  if (u64_ok) {
    check_count(tp.uint64_data_size(), n, label, "uint64_data");
    Tensor t(d, shape);
    for (int64_t i = 0; i < n; ++i) {
      if (d == DType::u32) t.data<uint32_t>()[i] = uint32_t(tp.uint64_data(int(i)));
      else t.data<uint64_t>()[i] = tp.uint64_data(int(i));
    }
    return t;
  }
  // strings
  check_count(tp.string_data_size(), n, label, "string_data");
  Tensor t(d, shape);
  for (int64_t i = 0; i < n; ++i) t.data<std::string>()[i] = tp.string_data(int(i));
  return t;
}

Tensor decode_sparse(const tessera_onnx::SparseTensorProto& sp, const TensorSource& src) {
  const std::string label =
      sp.values().name().empty() ? std::string("sparse tensor") : cat("sparse tensor '", sp.values().name(), "'");
  check_model(sp.has_values(), label, ": no values");
  int64_t n = 0;
  Shape shape = checked_dims(sp.dims(), label, &n);
  Tensor values = decode_tensor(sp.values(), src);
  check_model(values.rank() == 1, label, ": values must be 1-D, got ", values.describe());
  const int64_t nnz = values.numel();
  Tensor indices;
  if (sp.has_indices()) indices = decode_tensor(sp.indices(), src);
  check_model(sp.has_indices() || nnz == 0, label, ": no indices");
  const int64_t rank = int64_t(shape.size());
  bool linear = true;
  if (indices.defined()) {
    check_model(indices.dtype() == DType::i64, label, ": indices must be int64, got ", indices.describe());
    if (indices.rank() == 1) {
      check_model(indices.numel() == nnz, label, ": ", indices.numel(), " indices for ", nnz, " values");
    } else {
      check_model(indices.rank() == 2 && indices.dim(0) == nnz && indices.dim(1) == rank, label,
                  ": indices must be [NNZ] or [NNZ, rank] = [", nnz, ",", rank, "], got ", indices.describe());
      linear = false;
    }
  }
  const int64_t esize = int64_t(dtype_size(values.dtype()));
  const int64_t max_bytes = src.opts ? src.opts->max_sparse_dense_bytes : (int64_t(4) << 30);
  check_model(n <= max_bytes / esize, label, ": dense form ", dtype_name(values.dtype()), shape_str(shape),
              " exceeds the limit of ", max_bytes, " bytes");
  Tensor dense(values.dtype(), shape);
  const int64_t* idx = indices.defined() ? indices.data<int64_t>() : nullptr;
  std::vector<int64_t> strides = contiguous_strides(shape);
  dispatch_dtype(values.dtype(), [&]<typename T>() {
    const T* in = values.data<T>();
    T* out = dense.data<T>();
    for (int64_t k = 0; k < nnz; ++k) {
      int64_t lin = 0;
      if (linear) {
        lin = idx[k];
        check_model(lin >= 0 && lin < n, label, ": index ", lin, " out of range for ", n, " elements");
      } else {
        for (int64_t a = 0; a < rank; ++a) {
          const int64_t i = idx[k * rank + a];
          check_model(i >= 0 && i < shape[size_t(a)], label, ": index ", i, " out of range on axis ", a);
          lin += i * strides[size_t(a)];
        }
      }
      out[lin] = in[k];
    }
  });
  return dense;
}

ir::TypeInfo decode_type(const tessera_onnx::TypeProto& tp, const std::string& what) {
  ir::TypeInfo ti;
  switch (tp.value_case()) {
    case tessera_onnx::TypeProto::kTensorType: {
      const auto& tt = tp.tensor_type();
      ti.kind = ir::TypeInfo::Kind::tensor;
      if (tt.elem_type() != 0) {
        ti.elem = dtype_from_onnx(tt.elem_type());
        check(ti.elem != DType::undefined, ErrorCode::unsupported, what, ": unknown tensor element type ",
              tt.elem_type());
      }
      if (tt.has_shape()) {
        std::vector<ir::Dim> dims;
        for (const auto& d : tt.shape().dim()) {
          if (d.has_dim_value()) {
            check_model(d.dim_value() >= 0, what, ": negative dimension ", d.dim_value());
            dims.emplace_back(d.dim_value());
          } else if (d.has_dim_param()) {
            dims.push_back(ir::Dim::sym(d.dim_param()));
          } else {
            dims.emplace_back();
          }
        }
        ti.shape = std::move(dims);
      }
      return ti;
    }
    case tessera_onnx::TypeProto::kSequenceType: {
      if (!tp.sequence_type().has_elem_type()) {
        ti.kind = ir::TypeInfo::Kind::sequence;
        return ti;
      }
      ir::TypeInfo inner = decode_type(tp.sequence_type().elem_type(), what);
      check(inner.kind == ir::TypeInfo::Kind::tensor || inner.kind == ir::TypeInfo::Kind::unknown,
            ErrorCode::unsupported, what, ": only sequences of tensors are supported");
      inner.kind = ir::TypeInfo::Kind::sequence;
      return inner;
    }
    case tessera_onnx::TypeProto::kOptionalType: {
      ir::TypeInfo inner;
      if (tp.optional_type().has_elem_type()) inner = decode_type(tp.optional_type().elem_type(), what);
      check(inner.kind != ir::TypeInfo::Kind::optional, ErrorCode::unsupported, what,
            ": optional of optional is not supported");
      ir::TypeInfo o = inner;
      o.kind = ir::TypeInfo::Kind::optional;
      o.inner = inner.kind == ir::TypeInfo::Kind::unknown ? ir::TypeInfo::Kind::tensor : inner.kind;
      return o;
    }
    case tessera_onnx::TypeProto::VALUE_NOT_SET: return ti;
    default:
      throw Error(ErrorCode::unsupported, cat(what, ": map and sparse tensor types are not supported"));
  }
}

}  // namespace detail

Tensor load_tensor(std::span<const uint8_t> bytes) {
  TensorProto tp;
  check_model(bytes.size() < size_t(INT32_MAX) && tp.ParseFromArray(bytes.data(), int(bytes.size())),
              "not a valid TensorProto (truncated or corrupt, ", bytes.size(), " bytes)");
  return detail::decode_tensor(tp, {});
}

namespace {

// SequenceProto and OptionalProto live in onnx-data.proto, which the build
// does not compile; their few fields are read off the wire here.
//   SequenceProto: name=1, elem_type=2, tensor_values=3 (repeated), 4..7 other kinds
//   OptionalProto: name=1, elem_type=2, tensor_value=3, 4 sparse, 5 sequence_value, 6 map, 7 optional
constexpr int32_t kElemTensor = 1;

struct RawFields {
  int32_t elem_type = 0;
  std::vector<std::string> sub[8];  // length-delimited fields by number
};

RawFields read_fields(std::span<const uint8_t> bytes, const char* what) {
  RawFields r;
  check_model(bytes.size() < size_t(INT32_MAX), what, " too large");
  CodedInputStream in(bytes.data(), int(bytes.size()));
  for (;;) {
    const uint32_t tag = in.ReadTag();
    if (tag == 0) {
      check_model(in.ConsumedEntireMessage() || in.CurrentPosition() == int(bytes.size()), "not a valid ", what,
                  " (corrupt)");
      break;
    }
    const uint32_t field = tag >> 3, wire = tag & 7;
    if (wire == 0) {
      uint64_t v = 0;
      check_model(in.ReadVarint64(&v), "not a valid ", what, " (truncated varint)");
      if (field == 2) r.elem_type = int32_t(v);
    } else if (wire == 2) {
      uint32_t len = 0;
      check_model(in.ReadVarint32(&len), "not a valid ", what, " (truncated length)");
      std::string s;
      check_model(in.ReadString(&s, int(len)), "not a valid ", what, " (truncated field ", field, ")");
      if (field < 8) r.sub[field].push_back(std::move(s));
    } else if (wire == 1) {
      uint64_t v = 0;
      check_model(in.ReadLittleEndian64(&v), "not a valid ", what, " (truncated)");
    } else if (wire == 5) {
      uint32_t v = 0;
      check_model(in.ReadLittleEndian32(&v), "not a valid ", what, " (truncated)");
    } else {
      throw Error(ErrorCode::invalid_model, cat("not a valid ", what, " (bad wire type ", wire, ")"));
    }
  }
  return r;
}

std::span<const uint8_t> as_bytes(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

DataValue load_sequence(std::span<const uint8_t> bytes) {
  RawFields r = read_fields(bytes, "SequenceProto");
  for (int f = 4; f < 8; ++f)
    if (!r.sub[f].empty()) refuse_unknown_value_type(f - 2, "a sequence");
  if (r.elem_type != 0 && r.elem_type != kElemTensor) refuse_unknown_value_type(r.elem_type, "a sequence");
  TensorSequence seq;
  DType elem = DType::undefined;
  for (const std::string& s : r.sub[3]) {
    seq.push_back(load_tensor(as_bytes(s)));
    elem = seq.back().dtype();
  }
  return DataValue::make_sequence(std::move(seq), elem);
}

}  // namespace

DataValue load_value(std::span<const uint8_t> bytes, ValueKind kind) {
  switch (kind) {
    case ValueKind::tensor: return DataValue(load_tensor(bytes));
    case ValueKind::sequence: return load_sequence(bytes);
    case ValueKind::optional: {
      RawFields r = read_fields(bytes, "OptionalProto");
      if (!r.sub[3].empty()) return DataValue(load_tensor(as_bytes(r.sub[3].back())));
      if (!r.sub[5].empty()) return load_sequence(as_bytes(r.sub[5].back()));
      check(r.sub[4].empty() && r.sub[6].empty() && r.sub[7].empty(), ErrorCode::unsupported,
            "optional of a sparse tensor, map or optional is not supported");
      return DataValue::make_optional_none();
    }
  }
  throw Error(ErrorCode::invalid_argument, "load_value: bad ValueKind");
}

}  // namespace tessera::frontend::onnx
