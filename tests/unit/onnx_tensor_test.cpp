// TensorProto decoding: every dtype, raw and typed fields, packed sub-byte
// types, external data (and its confinement), sparse tensors, bad input.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include "frontend/onnx/onnx_internal.h"
#include "frontend/onnx/onnx_loader.h"

namespace {
namespace fs = std::filesystem;
namespace ox = tessera::frontend::onnx;
using tessera::DType;
using tessera::Error;
using tessera::ErrorCode;
using tessera::Tensor;
using tessera_onnx::TensorProto;

std::vector<uint8_t> bytes_of(const google::protobuf::MessageLite& m) {
  std::string s = m.SerializeAsString();
  return {s.begin(), s.end()};
}

Tensor decode(const TensorProto& tp) {
  auto b = bytes_of(tp);
  return ox::load_tensor(b);
}

template <typename T>
TensorProto raw_tensor(int32_t type, std::vector<int64_t> dims, const std::vector<T>& vals) {
  TensorProto tp;
  tp.set_name("t");
  tp.set_data_type(type);
  for (int64_t d : dims) tp.add_dims(d);
  tp.set_raw_data(std::string(reinterpret_cast<const char*>(vals.data()), vals.size() * sizeof(T)));
  return tp;
}

ErrorCode code_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.code();
  }
  return ErrorCode::internal;  // "no error": tests compare against a real code
}

TEST(OnnxTensor, DtypeMappingRoundTrips) {
  for (int32_t code = 1; code <= 26; ++code) {
    DType d = ox::dtype_from_onnx(code);
    ASSERT_NE(d, DType::undefined) << code;
    EXPECT_EQ(ox::dtype_to_onnx(d), code);
  }
  EXPECT_EQ(ox::dtype_from_onnx(0), DType::undefined);
  EXPECT_EQ(ox::dtype_from_onnx(99), DType::undefined);
}

// Raw data of every fixed-width dtype: bytes come back unchanged.
TEST(OnnxTensor, RawDataEveryByteType) {
  std::mt19937 rng(1);
  for (int32_t code = 1; code <= 26; ++code) {
    const DType d = ox::dtype_from_onnx(code);
    if (d == DType::string || d == DType::boolean) continue;
    if (d == DType::i4 || d == DType::u4 || d == DType::f4e2m1 || d == DType::i2 || d == DType::u2) continue;
    const size_t es = tessera::dtype_size(d);
    std::vector<uint8_t> raw(6 * es);
    for (auto& b : raw) b = uint8_t(rng());
    TensorProto tp = raw_tensor<uint8_t>(code, {2, 3}, raw);
    Tensor t = decode(tp);
    ASSERT_EQ(t.dtype(), d);
    ASSERT_EQ(t.shape(), (tessera::Shape{2, 3}));
    EXPECT_EQ(std::memcmp(t.raw_data(), raw.data(), raw.size()), 0) << tessera::dtype_name(d);
  }
}

TEST(OnnxTensor, RawBoolNormalized) {
  TensorProto tp = raw_tensor<uint8_t>(TensorProto::BOOL, {3}, {0, 1, 1});
  Tensor t = decode(tp);
  EXPECT_EQ(t.values<bool>()[0], false);
  EXPECT_EQ(t.values<bool>()[1], true);
}

TEST(OnnxTensor, Int4PackedRawUnpacksSignExtended) {
  // elements 1, -2, 7, -8, 3 -> bytes (lo first): 0xE1, 0x87, 0x03
  TensorProto tp = raw_tensor<uint8_t>(TensorProto::INT4, {5}, {0xE1, 0x87, 0x03});
  Tensor t = decode(tp);
  ASSERT_EQ(t.dtype(), DType::i4);
  std::vector<int> got;
  for (auto v : t.values<tessera::Int4>()) got.push_back(v.value);
  EXPECT_EQ(got, (std::vector<int>{1, -2, 7, -8, 3}));
  // wrong byte count for 5 elements
  TensorProto bad = raw_tensor<uint8_t>(TensorProto::INT4, {5}, {0xE1, 0x87});
  EXPECT_EQ(code_of([&] { decode(bad); }), ErrorCode::invalid_model);
}

TEST(OnnxTensor, UInt4AndFloat4ViaInt32Data) {
  TensorProto tp;
  tp.set_data_type(TensorProto::UINT4);
  tp.add_dims(3);
  tp.add_int32_data(0xF2);  // 2, 15
  tp.add_int32_data(0x09);  // 9
  Tensor t = decode(tp);
  EXPECT_EQ(t.values<tessera::UInt4>()[0].value, 2);
  EXPECT_EQ(t.values<tessera::UInt4>()[1].value, 15);
  EXPECT_EQ(t.values<tessera::UInt4>()[2].value, 9);

  TensorProto f4;
  f4.set_data_type(TensorProto::FLOAT4E2M1);
  f4.add_dims(2);
  f4.add_int32_data(0xA2);  // 0x2 = 1.0, 0xA = -1.0
  Tensor tf = decode(f4);
  EXPECT_EQ(tf.values<tessera::Float4E2M1>()[0].to_float(), 1.0f);
  EXPECT_EQ(tf.values<tessera::Float4E2M1>()[1].to_float(), -1.0f);
}

TEST(OnnxTensor, Int2PackedFourPerByte) {
  // elements 1, -2, -1, 0, 1 -> byte0 = 01 | 10<<2 | 11<<4 | 00<<6 = 0x39, byte1 = 0x01
  TensorProto tp = raw_tensor<uint8_t>(TensorProto::INT2, {5}, {0x39, 0x01});
  Tensor t = decode(tp);
  std::vector<int> got;
  for (auto v : t.values<tessera::Int2>()) got.push_back(v.value);
  EXPECT_EQ(got, (std::vector<int>{1, -2, -1, 0, 1}));
  TensorProto u = raw_tensor<uint8_t>(TensorProto::UINT2, {4}, {0xE4});  // 0,1,2,3
  Tensor tu = decode(u);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(tu.values<tessera::UInt2>()[size_t(i)].value, i);
}

TEST(OnnxTensor, Float16ViaInt32Data) {
  TensorProto tp;
  tp.set_data_type(TensorProto::FLOAT16);
  tp.add_dims(3);
  tp.add_int32_data(0x3C00);  // 1.0
  tp.add_int32_data(0xC000);  // -2.0
  tp.add_int32_data(0x7E00);  // NaN
  Tensor t = decode(tp);
  EXPECT_EQ(t.values<tessera::Float16>()[0].to_float(), 1.0f);
  EXPECT_EQ(t.values<tessera::Float16>()[1].to_float(), -2.0f);
  EXPECT_TRUE(std::isnan(t.values<tessera::Float16>()[2].to_float()));
}

TEST(OnnxTensor, Int32DataSmallTypes) {
  auto mk = [](int32_t type, std::vector<int32_t> v) {
    TensorProto tp;
    tp.set_data_type(type);
    tp.add_dims(int64_t(v.size()));
    for (int32_t x : v) tp.add_int32_data(x);
    return decode(tp);
  };
  EXPECT_EQ(mk(TensorProto::INT8, {-3, 127}).values<int8_t>()[0], -3);
  EXPECT_EQ(mk(TensorProto::UINT8, {255, 7}).values<uint8_t>()[0], 255);
  EXPECT_EQ(mk(TensorProto::INT16, {-300}).values<int16_t>()[0], -300);
  EXPECT_EQ(mk(TensorProto::UINT16, {65535}).values<uint16_t>()[0], 65535);
  EXPECT_EQ(mk(TensorProto::INT32, {-5, 1 << 30}).values<int32_t>()[1], 1 << 30);
  EXPECT_EQ(mk(TensorProto::BOOL, {0, 1}).values<bool>()[1], true);
  EXPECT_EQ(mk(TensorProto::BFLOAT16, {0x3F80}).values<tessera::BFloat16>()[0].to_float(), 1.0f);
  EXPECT_EQ(mk(TensorProto::FLOAT8E4M3FN, {0x38}).values<tessera::Float8E4M3FN>()[0].to_float(), 1.0f);
  EXPECT_EQ(mk(TensorProto::FLOAT8E5M2, {0x3C}).values<tessera::Float8E5M2>()[0].to_float(), 1.0f);
  EXPECT_EQ(mk(TensorProto::FLOAT8E4M3FNUZ, {0x40}).values<tessera::Float8E4M3FNUZ>()[0].to_float(), 1.0f);
  EXPECT_EQ(mk(TensorProto::FLOAT8E5M2FNUZ, {0x40}).values<tessera::Float8E5M2FNUZ>()[0].to_float(), 1.0f);
  EXPECT_EQ(mk(TensorProto::FLOAT8E8M0, {127}).values<tessera::Float8E8M0>()[0].to_float(), 1.0f);
}

TEST(OnnxTensor, TypedFieldsWideTypes) {
  TensorProto f;
  f.set_data_type(TensorProto::FLOAT);
  f.add_dims(2);
  f.add_float_data(1.5f);
  f.add_float_data(-0.0f);
  EXPECT_EQ(decode(f).values<float>()[0], 1.5f);

  TensorProto c;
  c.set_data_type(TensorProto::COMPLEX64);
  c.add_dims(1);
  c.add_float_data(1.f);
  c.add_float_data(2.f);
  EXPECT_EQ(decode(c).values<tessera::Complex64>()[0], tessera::Complex64(1.f, 2.f));

  TensorProto d;
  d.set_data_type(TensorProto::DOUBLE);
  d.add_double_data(3.25);  // scalar: no dims
  Tensor td = decode(d);
  EXPECT_EQ(td.rank(), 0);
  EXPECT_EQ(td.values<double>()[0], 3.25);

  TensorProto z;
  z.set_data_type(TensorProto::COMPLEX128);
  z.add_dims(1);
  z.add_double_data(-1);
  z.add_double_data(4);
  EXPECT_EQ(decode(z).values<tessera::Complex128>()[0], tessera::Complex128(-1, 4));

  TensorProto i;
  i.set_data_type(TensorProto::INT64);
  i.add_dims(2);
  i.add_int64_data(INT64_MIN);
  i.add_int64_data(5);
  EXPECT_EQ(decode(i).values<int64_t>()[0], INT64_MIN);

  TensorProto u;
  u.set_data_type(TensorProto::UINT64);
  u.add_dims(1);
  u.add_uint64_data(UINT64_MAX);
  EXPECT_EQ(decode(u).values<uint64_t>()[0], UINT64_MAX);

  TensorProto u32;
  u32.set_data_type(TensorProto::UINT32);
  u32.add_dims(1);
  u32.add_uint64_data(4000000000u);
  EXPECT_EQ(decode(u32).values<uint32_t>()[0], 4000000000u);

  TensorProto s;
  s.set_data_type(TensorProto::STRING);
  s.add_dims(2);
  s.add_string_data("hello");
  s.add_string_data(std::string("a\0b", 3));
  Tensor ts = decode(s);
  EXPECT_EQ(ts.values<std::string>()[0], "hello");
  EXPECT_EQ(ts.values<std::string>()[1].size(), 3u);
}

TEST(OnnxTensor, EmptyTensorsAreFine) {
  TensorProto tp;
  tp.set_data_type(TensorProto::FLOAT);
  tp.add_dims(0);
  tp.add_dims(3);
  Tensor t = decode(tp);
  EXPECT_EQ(t.numel(), 0);
  EXPECT_EQ(t.shape(), (tessera::Shape{0, 3}));
}

TEST(OnnxTensor, BadData) {
  // data shorter / longer than dims
  TensorProto shortf;
  shortf.set_data_type(TensorProto::FLOAT);
  shortf.add_dims(3);
  shortf.add_float_data(1);
  EXPECT_EQ(code_of([&] { decode(shortf); }), ErrorCode::invalid_model);
  TensorProto longr = raw_tensor<float>(TensorProto::FLOAT, {2}, {1, 2, 3});
  EXPECT_EQ(code_of([&] { decode(longr); }), ErrorCode::invalid_model);
  // data in a field that does not match the type
  TensorProto wrong;
  wrong.set_data_type(TensorProto::INT64);
  wrong.add_dims(1);
  wrong.add_float_data(1);
  EXPECT_EQ(code_of([&] { decode(wrong); }), ErrorCode::invalid_model);
  // negative dims
  TensorProto neg = raw_tensor<float>(TensorProto::FLOAT, {-1}, {});
  EXPECT_EQ(code_of([&] { decode(neg); }), ErrorCode::invalid_model);
  // 2^60 elements: refused before any allocation
  TensorProto huge = raw_tensor<float>(TensorProto::FLOAT, {int64_t(1) << 30, int64_t(1) << 30}, {1});
  try {
    decode(huge);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_model);
    EXPECT_NE(std::string(e.what()).find("2^40"), std::string::npos) << e.what();
  }
  // 2^39 floats, within the element limit, but the data is 4 bytes: refused by the size check
  TensorProto big = raw_tensor<float>(TensorProto::FLOAT, {int64_t(1) << 39}, {1});
  EXPECT_EQ(code_of([&] { decode(big); }), ErrorCode::invalid_model);
  // an empty tensor whose other dims are absurd (found by fuzz_loader: strides overflowed)
  TensorProto empty_huge = raw_tensor<float>(TensorProto::FLOAT, {0, int64_t(1) << 62, 64}, {});
  EXPECT_EQ(code_of([&] { decode(empty_huge); }), ErrorCode::invalid_model);
  // no data at all
  TensorProto nodata;
  nodata.set_data_type(TensorProto::FLOAT);
  nodata.add_dims(2);
  EXPECT_EQ(code_of([&] { decode(nodata); }), ErrorCode::invalid_model);
  // undefined / unknown data types; segments
  TensorProto undef;
  undef.add_dims(1);
  EXPECT_EQ(code_of([&] { decode(undef); }), ErrorCode::invalid_model);
  TensorProto unk = raw_tensor<float>(77, {1}, {1});
  EXPECT_EQ(code_of([&] { decode(unk); }), ErrorCode::unsupported);
  TensorProto seg = raw_tensor<float>(TensorProto::FLOAT, {1}, {1});
  seg.mutable_segment()->set_begin(0);
  EXPECT_EQ(code_of([&] { decode(seg); }), ErrorCode::unsupported);
  // string raw data
  TensorProto sraw = raw_tensor<uint8_t>(TensorProto::STRING, {1}, {65});
  EXPECT_EQ(code_of([&] { decode(sraw); }), ErrorCode::invalid_model);
}

TEST(OnnxTensor, CorruptBytes) {
  TensorProto tp = raw_tensor<float>(TensorProto::FLOAT, {4}, {1, 2, 3, 4});
  auto b = bytes_of(tp);
  for (size_t cut = 1; cut < b.size(); ++cut) {
    std::vector<uint8_t> part(b.begin(), b.begin() + long(cut));
    try {
      ox::load_tensor(part);
    } catch (const Error&) {
    }  // either parses a prefix that fails validation or refuses: never crashes
  }
  std::vector<uint8_t> garbage = {0xFF, 0xFF, 0xFF, 0xFF, 0x0F};
  EXPECT_EQ(code_of([&] { ox::load_tensor(garbage); }), ErrorCode::invalid_model);
}

// ---- external data

class OnnxExternal : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("tessera_ext_" + std::to_string(::getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_ / "model" / "sub");
    std::vector<float> v = {1, 2, 3, 4, 5, 6};
    write(root_ / "model" / "w.bin", std::string(16, 'x') + std::string(reinterpret_cast<char*>(v.data()), 24));
    write(root_ / "secret.bin", std::string(reinterpret_cast<char*>(v.data()), 24));
  }
  void TearDown() override { fs::remove_all(root_); }
  static void write(const fs::path& p, const std::string& s) {
    std::ofstream f(p, std::ios::binary);
    f << s;
  }
  TensorProto ext(const std::string& loc, const std::string& offset, const std::string& length) {
    TensorProto tp;
    tp.set_name("w");
    tp.set_data_type(TensorProto::FLOAT);
    tp.add_dims(2);
    tp.add_dims(3);
    tp.set_data_location(TensorProto::EXTERNAL);
    auto add = [&](const char* k, const std::string& v) {
      if (v.empty()) return;
      auto* e = tp.add_external_data();
      e->set_key(k);
      e->set_value(v);
    };
    add("location", loc);
    add("offset", offset);
    add("length", length);
    return tp;
  }
  Tensor load(const TensorProto& tp) {
    ox::detail::TensorSource src;
    src.external_dir = (root_ / "model").string();
    return ox::detail::decode_tensor(tp, src);
  }
  fs::path root_;
};

TEST_F(OnnxExternal, GoodPath) {
  Tensor t = load(ext("w.bin", "16", "24"));
  EXPECT_EQ(t.values<float>()[5], 6.f);
  Tensor t2 = load(ext("w.bin", "16", ""));  // length defaults to the rest of the file
  EXPECT_EQ(t2.values<float>()[0], 1.f);
  fs::copy_file(root_ / "model" / "w.bin", root_ / "model" / "sub" / "w2.bin");
  EXPECT_EQ(load(ext("sub/w2.bin", "16", "24")).values<float>()[2], 3.f);
}

TEST_F(OnnxExternal, RefusesEscapes) {
  EXPECT_EQ(code_of([&] { load(ext("../secret.bin", "", "")); }), ErrorCode::invalid_model);
  EXPECT_EQ(code_of([&] { load(ext("sub/../../secret.bin", "", "")); }), ErrorCode::invalid_model);
  EXPECT_EQ(code_of([&] { load(ext((root_ / "secret.bin").string(), "", "")); }), ErrorCode::invalid_model);
  fs::create_symlink(root_ / "secret.bin", root_ / "model" / "link.bin");
  try {
    load(ext("link.bin", "", ""));
    FAIL() << "symlink escape accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("outside"), std::string::npos) << e.what();
  }
  fs::create_directory_symlink(root_, root_ / "model" / "up");
  EXPECT_EQ(code_of([&] { load(ext("up/secret.bin", "", "")); }), ErrorCode::invalid_model);
}

TEST_F(OnnxExternal, TruncatedAndBadFields) {
  EXPECT_EQ(code_of([&] { load(ext("w.bin", "32", "24")); }), ErrorCode::invalid_model);   // past the end
  EXPECT_EQ(code_of([&] { load(ext("w.bin", "100", "")); }), ErrorCode::invalid_model);   // offset past end
  EXPECT_EQ(code_of([&] { load(ext("w.bin", "0", "")); }), ErrorCode::invalid_model);     // 40 bytes != 24
  EXPECT_EQ(code_of([&] { load(ext("w.bin", "-4", "")); }), ErrorCode::invalid_model);
  EXPECT_EQ(code_of([&] { load(ext("w.bin", "1x", "")); }), ErrorCode::invalid_model);
  EXPECT_EQ(code_of([&] { load(ext("", "", "")); }), ErrorCode::invalid_model);
  EXPECT_EQ(code_of([&] { load(ext("missing.bin", "", "")); }), ErrorCode::io);
  // bytes without a folder: refused
  EXPECT_EQ(code_of([&] { ox::detail::decode_tensor(ext("w.bin", "16", "24"), {}); }), ErrorCode::invalid_model);
}

// ---- sparse

TEST(OnnxSparse, BothIndexLayouts) {
  tessera_onnx::SparseTensorProto sp;
  sp.add_dims(2);
  sp.add_dims(3);
  *sp.mutable_values() = raw_tensor<float>(TensorProto::FLOAT, {2}, {5, 7});
  *sp.mutable_indices() = raw_tensor<int64_t>(TensorProto::INT64, {2}, {1, 5});
  Tensor t = ox::detail::decode_sparse(sp, {});
  EXPECT_EQ(t.shape(), (tessera::Shape{2, 3}));
  EXPECT_EQ(t.to_double_vector(), (std::vector<double>{0, 5, 0, 0, 0, 7}));

  *sp.mutable_indices() = raw_tensor<int64_t>(TensorProto::INT64, {2, 2}, {0, 2, 1, 0});
  t = ox::detail::decode_sparse(sp, {});
  EXPECT_EQ(t.to_double_vector(), (std::vector<double>{0, 0, 5, 7, 0, 0}));

  *sp.mutable_indices() = raw_tensor<int64_t>(TensorProto::INT64, {2}, {1, 6});  // out of range
  EXPECT_EQ(code_of([&] { ox::detail::decode_sparse(sp, {}); }), ErrorCode::invalid_model);
  *sp.mutable_indices() = raw_tensor<int64_t>(TensorProto::INT64, {3}, {1, 2, 3});  // count mismatch
  EXPECT_EQ(code_of([&] { ox::detail::decode_sparse(sp, {}); }), ErrorCode::invalid_model);
  sp.set_dims(0, int64_t(1) << 35);  // dense form too large
  *sp.mutable_indices() = raw_tensor<int64_t>(TensorProto::INT64, {2}, {1, 2});
  EXPECT_EQ(code_of([&] { ox::detail::decode_sparse(sp, {}); }), ErrorCode::invalid_model);
}

// ---- SequenceProto / OptionalProto (hand-encoded: onnx-data.proto is not compiled)

std::string field(int num, const std::string& payload) {
  std::string s;
  s.push_back(char((num << 3) | 2));
  size_t n = payload.size();
  while (n >= 0x80) {
    s.push_back(char((n & 0x7F) | 0x80));
    n >>= 7;
  }
  s.push_back(char(n));
  return s + payload;
}
std::string varint_field(int num, int v) { return std::string{char(num << 3), char(v)}; }
std::vector<uint8_t> vec(const std::string& s) { return {s.begin(), s.end()}; }

TEST(OnnxValue, SequenceAndOptional) {
  std::string t1 = raw_tensor<float>(TensorProto::FLOAT, {2}, {1, 2}).SerializeAsString();
  std::string t2 = raw_tensor<float>(TensorProto::FLOAT, {1}, {3}).SerializeAsString();
  std::string seq = field(1, "s") + varint_field(2, 1) + field(3, t1) + field(3, t2);
  tessera::DataValue v = ox::load_value(vec(seq), ox::ValueKind::sequence);
  ASSERT_TRUE(v.is_sequence());
  ASSERT_EQ(v.sequence.size(), 2u);
  EXPECT_EQ(v.sequence[1].values<float>()[0], 3.f);
  EXPECT_EQ(v.elem_type, DType::f32);

  tessera::DataValue empty = ox::load_value(vec(varint_field(2, 1)), ox::ValueKind::sequence);
  EXPECT_TRUE(empty.is_sequence());
  EXPECT_TRUE(empty.sequence.empty());

  tessera::DataValue o1 = ox::load_value(vec(varint_field(2, 1) + field(3, t1)), ox::ValueKind::optional);
  ASSERT_TRUE(o1.is_tensor());
  EXPECT_EQ(o1.tensor.numel(), 2);
  tessera::DataValue o2 = ox::load_value(vec(varint_field(2, 3) + field(5, seq)), ox::ValueKind::optional);
  ASSERT_TRUE(o2.is_sequence());
  tessera::DataValue o3 = ox::load_value(vec(varint_field(2, 1)), ox::ValueKind::optional);
  EXPECT_EQ(o3.kind, tessera::DataValue::Kind::optional_none);

  tessera::DataValue tv = ox::load_value(vec(t2), ox::ValueKind::tensor);
  EXPECT_TRUE(tv.is_tensor());

  std::string truncated = seq.substr(0, seq.size() - 3);
  EXPECT_EQ(code_of([&] { ox::load_value(vec(truncated), ox::ValueKind::sequence); }), ErrorCode::invalid_model);
  std::string map_seq = varint_field(2, 4) + field(6, "");
  EXPECT_EQ(code_of([&] { ox::load_value(vec(map_seq), ox::ValueKind::sequence); }), ErrorCode::unsupported);
}

}  // namespace
