#include "core/tensor.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>

#include "core/memory.h"
#include "core/strided_copy.h"

namespace tessera {

int64_t shape_numel(std::span<const int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    check_arg(d >= 0, "negative dimension in shape ", shape_text(shape));
    if (d == 0) return 0;
  }
  for (int64_t d : shape) {
    check_arg(n <= kMaxElements / d, "shape ", shape_text(shape), " has more than 2^40 elements");
    n *= d;
  }
  return n;
}

std::string shape_str(std::span<const int64_t> shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ",";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

std::vector<int64_t> contiguous_strides(std::span<const int64_t> shape) {
  std::vector<int64_t> st(shape.size());
  int64_t s = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    st[i] = s;
    s *= std::max<int64_t>(shape[i], 1);
  }
  return st;
}

// Tensors above this size are refused before allocation: 64 GiB, or a quarter of the machine's memory where
// that is less. No model or input Tessera runs needs more, a corrupt dim must not reach the allocator, and a
// legal but absurd request (HammingWindow of 2^31 - 1 points, a Resize to [3, 2^31 - 1]) must be an error,
// not a process the kernel kills: the allocation itself succeeds (the memory is overcommitted), the zero fill
// or a reference kernel's double-precision copy of it does not. A quarter leaves room for that copy and the
// operands (found by fuzzing the node tests on a 24 GiB VM).
size_t max_tensor_bytes() {
  static const size_t limit = [] {
    size_t lim = size_t(64) << 30;
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages > 0 && page > 0) lim = std::min(lim, size_t(pages) * size_t(page) / 4);
    return lim;
  }();
  return limit;
}

// A tensor of n elements past max_tensor_bytes is refused before allocation (the message is built only then).
static void refuse_oversized(DType dtype, const Shape& shape, size_t n) {
  if (n > max_tensor_bytes() / dtype_size(dtype))
    throw Error(ErrorCode::invalid_argument,
                cat("refusing to allocate tensor ", dtype_name(dtype), shape_str(shape),
                    ": more than a quarter of this machine's memory"));
}

std::shared_ptr<void> allocate_storage(size_t bytes) {
  const size_t limit = max_tensor_bytes();
  check_arg(bytes <= limit, "refusing to allocate ", bytes, " bytes for a tensor (limit ", limit,
            ": a quarter of this machine's memory, at most 64 GiB)");
  std::shared_ptr<void> p = allocate_block(bytes);
  if (!p) throw Error(ErrorCode::runtime, cat("out of memory allocating ", bytes, " bytes"));
  return p;
}

Tensor::Tensor(DType dtype, Shape shape) : dtype_(dtype), shape_(std::move(shape)) {
  check_arg(dtype != DType::undefined, "tensor of undefined element type");
  numel_ = shape_numel(shape_);
  strides_ = contiguous_strides(shape_);
  const size_t n = size_t(numel_);
  const size_t esize = dtype_size(dtype);
  refuse_oversized(dtype, shape_, n);
  if (dtype == DType::string) {
    auto* p = new std::string[std::max<size_t>(n, 1)];
    storage_ = std::shared_ptr<void>(p, [](void* q) { delete[] static_cast<std::string*>(q); });
  } else {
    storage_ = allocate_storage(n * esize);
    std::memset(storage_.get(), 0, n * esize);
  }
}

Tensor Tensor::uninitialized(DType dtype, Shape shape) {
  if (dtype == DType::string || dtype == DType::undefined) return Tensor(dtype, std::move(shape));
  const int64_t n = shape_numel(shape);
  refuse_oversized(dtype, shape, size_t(n));
  return view(dtype, std::move(shape), allocate_storage(size_t(n) * dtype_size(dtype)), 0);
}

Tensor Tensor::borrow(DType dtype, Shape shape, void* data) {
  return view(dtype, std::move(shape), std::shared_ptr<void>(data, [](void*) {}), 0);
}

Tensor Tensor::view(DType dtype, Shape shape, std::shared_ptr<void> storage, size_t byte_offset,
                    std::vector<int64_t> strides) {
  Tensor t;
  t.dtype_ = dtype;
  t.numel_ = shape_numel(shape);
  t.strides_ = strides.empty() ? contiguous_strides(shape) : std::move(strides);
  t.shape_ = std::move(shape);
  t.storage_ = std::move(storage);
  t.offset_ = byte_offset;
  return t;
}

bool Tensor::is_contiguous() const {
  if (numel_ <= 1) return true;
  int64_t s = 1;
  for (size_t i = shape_.size(); i-- > 0;) {
    if (shape_[i] != 1 && strides_[i] != s) return false;
    s *= shape_[i];
  }
  return true;
}

Tensor Tensor::reshape(Shape shape) const {
  check(is_contiguous(), ErrorCode::internal, "reshape of a non-contiguous tensor");
  check_arg(shape_numel(shape) == numel_, "cannot reshape ", text(), " to ", shape_text(shape));
  return view(dtype_, std::move(shape), storage_, offset_);
}

std::optional<Tensor> Tensor::permuted_view(const std::vector<int64_t>& perm) const {
  if (int64_t(perm.size()) != rank()) return std::nullopt;
  std::vector<bool> seen(perm.size(), false);
  Shape shape(perm.size());
  std::vector<int64_t> strides(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) {
    const int64_t p = perm[i];
    if (p < 0 || p >= rank() || seen[size_t(p)]) return std::nullopt;
    seen[size_t(p)] = true;
    shape[i] = shape_[size_t(p)];
    strides[i] = strides_[size_t(p)];
  }
  return view(dtype_, std::move(shape), storage_, offset_, std::move(strides));
}

std::optional<Tensor> Tensor::reshaped_view(Shape shape) const {
  check_arg(shape_numel(shape) == numel_, "cannot reshape ", text(), " to ", shape_text(shape));
  if (is_contiguous()) return view(dtype_, std::move(shape), storage_, offset_);
  // From the innermost dim out: a block is a run of old dims (size-1 dims skipped) each of whose strides
  // is the next one's times that one's size; the new dims that multiply up to the block's size take
  // strides within it, from the block's innermost stride.
  std::vector<int64_t> strides(shape.size(), 1);
  int64_t nd = int64_t(shape.size()) - 1;
  int64_t od = int64_t(shape_.size()) - 1;
  while (od >= 0) {
    if (shape_[size_t(od)] == 1) {
      --od;
      continue;
    }
    const int64_t inner = strides_[size_t(od)];
    int64_t block = shape_[size_t(od)];
    int64_t expect = inner * block;  // the stride the next old dim needs to join the block
    for (--od; od >= 0; --od) {
      if (shape_[size_t(od)] == 1) continue;
      if (strides_[size_t(od)] != expect) break;
      block *= shape_[size_t(od)];
      expect *= shape_[size_t(od)];
    }
    int64_t covered = 1;
    while (nd >= 0 && (covered < block || shape[size_t(nd)] == 1)) {
      strides[size_t(nd)] = inner * covered;
      covered *= shape[size_t(nd)];
      --nd;
    }
    if (covered != block) return std::nullopt;
  }
  for (; nd >= 0; --nd) {  // leading size-1 dims
    if (shape[size_t(nd)] != 1) return std::nullopt;
    strides[size_t(nd)] = 1;
  }
  return view(dtype_, std::move(shape), storage_, offset_, std::move(strides));
}

Tensor Tensor::clone() const {
  Tensor out(dtype_, shape_);
  if (numel_ == 0) return out;
  const size_t es = dtype_size(dtype_);
  // Walk the (possibly strided) source in row-major order.
  std::vector<int64_t> idx(shape_.size(), 0);
  dispatch_dtype(dtype_, [&]<typename T>() {
    const T* src = static_cast<const T*>(raw_data());
    T* dst = out.data<T>();
    if (is_contiguous()) {
      if constexpr (std::is_trivially_copyable_v<T>)
        std::memcpy(dst, src, size_t(numel_) * es);
      else
        std::copy(src, src + numel_, dst);
      return;
    }
    if constexpr (std::is_trivially_copyable_v<T>) {
      strided_copy(src, 0, strides_, dst, shape_, es);
      return;
    }
    for (int64_t i = 0; i < numel_; ++i) {
      int64_t off = 0;
      for (size_t d = 0; d < idx.size(); ++d) off += idx[d] * strides_[d];
      dst[i] = src[off];
      for (size_t d = idx.size(); d-- > 0;) {
        if (++idx[d] < shape_[d]) break;
        idx[d] = 0;
      }
    }
  });
  return out;
}

Tensor Tensor::contiguous() const {
  return is_contiguous() ? *this : clone();
}

double Tensor::at_double(int64_t i) const {
  return dispatch_dtype(
      dtype_, [&]<typename T>() -> double { return to_double(static_cast<const T*>(raw_data())[i]); });
}

int64_t Tensor::at_int(int64_t i) const {
  return dispatch_dtype(dtype_, [&]<typename T>() -> int64_t {
    const T& v = static_cast<const T*>(raw_data())[i];
    if constexpr (std::is_integral_v<T>)
      return int64_t(v);
    else if constexpr (kIsSubByteInt<T>)
      return int64_t(v.value);
    else
      return int64_t(to_double(v));
  });
}

std::vector<int64_t> Tensor::to_int_vector() const {
  Tensor c = contiguous();
  std::vector<int64_t> v(static_cast<size_t>(numel_));
  for (int64_t i = 0; i < numel_; ++i) v[size_t(i)] = c.at_int(i);
  return v;
}

std::vector<double> Tensor::to_double_vector() const {
  Tensor c = contiguous();
  std::vector<double> v(static_cast<size_t>(numel_));
  for (int64_t i = 0; i < numel_; ++i) v[size_t(i)] = c.at_double(i);
  return v;
}

std::string Tensor::describe() const {
  return cat(dtype_name(dtype_), shape_str(shape_));
}

std::ostream& operator<<(std::ostream& os, ShapeText t) {
  return os << shape_str(t.shape);
}

std::ostream& operator<<(std::ostream& os, Tensor::Text t) {
  return os << t.t->describe();
}

void Tensor::throw_type_mismatch(DType wanted) const {
  throw Error(ErrorCode::internal,
              cat("tensor is ", dtype_name(dtype_), " but was accessed as ", dtype_name(wanted)));
}

}  // namespace tessera
