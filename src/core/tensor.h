// Tensor: an element type, a shape, strides (in elements) and a reference to
// storage. Storage is shared: copying a Tensor copies the reference, not the
// data (use clone() for a deep copy). A borrowed tensor points at memory it
// does not own (the caller keeps it alive).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"

namespace tessera {

using Shape = std::vector<int64_t>;

// Product of dims, refusing negative dims and overflow past kMaxElements.
inline constexpr int64_t kMaxElements = int64_t(1) << 40;
int64_t shape_numel(std::span<const int64_t> shape);
std::string shape_str(std::span<const int64_t> shape);
// shape_text(s) / Tensor::text(): the same text, formatted only when streamed. For error-message arguments
// (check(cond, ..., shape_text(x.shape()))), which C++ evaluates even when the check passes: building the
// strings there cost every conv call an allocation. They refer to the shape or tensor: use them within the
// expression that makes them.
struct ShapeText {
  std::span<const int64_t> shape;
};
inline ShapeText shape_text(std::span<const int64_t> shape) {
  return {shape};
}
std::ostream& operator<<(std::ostream& os, ShapeText t);
std::vector<int64_t> contiguous_strides(std::span<const int64_t> shape);

class Tensor {
 public:
  Tensor() = default;
  // Allocates (64-byte aligned). Numeric storage is zero-filled; strings are empty.
  Tensor(DType dtype, Shape shape);

  // Points at external memory without owning it.
  static Tensor borrow(DType dtype, Shape shape, void* data);
  // Contiguous, contents unspecified (for code that writes every element; strings are still constructed).
  static Tensor uninitialized(DType dtype, Shape shape);
  // Shares ownership of `storage`, starting `byte_offset` into it.
  static Tensor view(DType dtype, Shape shape, std::shared_ptr<void> storage, size_t byte_offset,
                     std::vector<int64_t> strides = {});
  // A 0-d tensor holding one value.
  template <typename T>
  static Tensor scalar(T v) {
    Tensor t(kDTypeOf<T>, {});
    *t.data<T>() = v;
    return t;
  }
  template <typename T>
  static Tensor from_vector(const std::vector<T>& v, Shape shape = {}) {
    if (shape.empty() && v.size() != 1) shape = {int64_t(v.size())};
    Tensor t(kDTypeOf<T>, shape);
    check_arg(size_t(t.numel()) == v.size(), "from_vector: ", v.size(), " values for shape ",
              shape_text(shape));
    std::copy(v.begin(), v.end(), t.data<T>());
    return t;
  }

  bool defined() const { return dtype_ != DType::undefined; }
  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  const std::vector<int64_t>& strides() const { return strides_; }
  int64_t rank() const { return int64_t(shape_.size()); }
  int64_t dim(int64_t i) const { return shape_[size_t(i < 0 ? i + rank() : i)]; }
  int64_t numel() const { return numel_; }
  size_t nbytes() const { return size_t(numel_) * dtype_size(dtype_); }
  bool is_contiguous() const;

  void* raw_data() { return static_cast<char*>(storage_.get()) + offset_; }
  const void* raw_data() const { return static_cast<const char*>(storage_.get()) + offset_; }
  template <typename T>
  T* data() {
    check_type<T>();
    return static_cast<T*>(raw_data());
  }
  template <typename T>
  const T* data() const {
    check_type<T>();
    return static_cast<const T*>(raw_data());
  }
  template <typename T>
  std::span<const T> values() const {
    return {data<T>(), size_t(numel_)};
  }
  const std::shared_ptr<void>& storage() const { return storage_; }
  size_t byte_offset() const { return offset_; }

  // Views (share storage).
  Tensor reshape(Shape shape) const;  // requires contiguity
  // This tensor viewed in `shape` (same element count) without a copy, whatever its strides: each run of
  // dims laid out as one block of memory is re-split into the new dims that cover it. nullopt where a
  // new dim would span two such runs (e.g. merging the columns of a column slice with its rows).
  std::optional<Tensor> reshaped_view(Shape shape) const;
  // This tensor with its dims reordered (output dim i is dim perm[i]) without a copy: a strided view; nullopt
  // when perm is not a permutation of the dims.
  std::optional<Tensor> permuted_view(const std::vector<int64_t>& perm) const;
  // Deep copies.
  Tensor clone() const;       // contiguous copy
  Tensor contiguous() const;  // this if already contiguous, else a copy
  // Element i (row-major over a contiguous tensor) as double / int64, any dtype.
  double at_double(int64_t i) const;
  int64_t at_int(int64_t i) const;
  // All elements as int64 (for shape-like inputs); requires an integer type.
  std::vector<int64_t> to_int_vector() const;
  std::vector<double> to_double_vector() const;

  std::string describe() const;  // "float32[2,3]"
  struct Text {
    const Tensor* t;
  };
  Text text() const { return {this}; }  // describe(), formatted when streamed

 private:
  template <typename T>
  void check_type() const {
    if (kDTypeOf<T> != dtype_) [[unlikely]]
      throw_type_mismatch(kDTypeOf<T>);
  }
  [[noreturn]] void throw_type_mismatch(DType wanted) const;

  DType dtype_ = DType::undefined;
  Shape shape_;
  std::vector<int64_t> strides_;
  int64_t numel_ = 0;
  std::shared_ptr<void> storage_;
  size_t offset_ = 0;
};
std::ostream& operator<<(std::ostream& os, Tensor::Text t);

// Allocates `bytes` aligned to 64 bytes; refuses absurd sizes with an Error.
std::shared_ptr<void> allocate_storage(size_t bytes);

// The largest tensor Tessera allocates: 64 GiB, or a quarter of the machine's memory where that is less.
// Larger requests raise an invalid-argument error instead of being overcommitted and killed when touched.
size_t max_tensor_bytes();

// A sequence value (ONNX Sequence<Tensor>).
using TensorSequence = std::vector<Tensor>;

// What flows along a graph edge at run time: a tensor, a sequence of tensors,
// or an empty optional.
struct DataValue {
  enum class Kind : uint8_t { none, tensor, sequence, optional_none };
  Kind kind = Kind::none;
  Tensor tensor;
  TensorSequence sequence;
  DType elem_type = DType::undefined;  // element type of an empty sequence / optional

  DataValue() = default;
  DataValue(Tensor t) : kind(Kind::tensor), tensor(std::move(t)) {}  // NOLINT: implicit on purpose
  static DataValue make_sequence(TensorSequence s, DType elem = DType::undefined) {
    DataValue v;
    v.kind = Kind::sequence;
    v.sequence = std::move(s);
    v.elem_type = elem;
    return v;
  }
  static DataValue make_optional_none(DType elem = DType::undefined) {
    DataValue v;
    v.kind = Kind::optional_none;
    v.elem_type = elem;
    return v;
  }
  bool is_tensor() const { return kind == Kind::tensor; }
  bool is_sequence() const { return kind == Kind::sequence; }
};

}  // namespace tessera
