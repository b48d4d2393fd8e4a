// Reference kernels: misc family (Identity, Constant, Dropout, Size, EyeLike,
// Optional, OptionalHasElement, OptionalGetElement).
#include <random>

#include "core/dtype_attr.h"
#include "kernels/ref/elementwise_util.h"
#include "kernels/ref/registry.h"

namespace tessera::kernels::ref {
namespace {

// Identity passes any value through (tensor, sequence or optional); the output
// shares the input's storage.
void identity_kernel(KernelContext& ctx) {
  const DataValue* v = ctx.input_value(0);
  if (!v) ctx.fail(ErrorCode::invalid_model, "required input 0 is missing");
  ctx.set_output(0, *v);
}

template <typename T>
Tensor vector_tensor(const std::vector<T>& v) {
  return Tensor::from_vector<T>(v, Shape{int64_t(v.size())});
}

void constant_kernel(KernelContext& ctx) {
  int found = 0;
  Tensor t;
  if (const Attribute* a = ctx.attr("value")) {
    ctx.check(a->kind == Attribute::Kind::t, "attribute 'value' must be a tensor");
    t = a->t;
    ++found;
  }
  if (ctx.has_attr("value_float")) t = Tensor::scalar(ctx.attr_float("value_float", 0)), ++found;
  if (ctx.has_attr("value_floats")) t = vector_tensor(ctx.attr_floats("value_floats")), ++found;
  if (ctx.has_attr("value_int")) t = Tensor::scalar(ctx.attr_int("value_int", 0)), ++found;
  if (ctx.has_attr("value_ints")) t = vector_tensor(ctx.attr_ints("value_ints")), ++found;
  if (ctx.has_attr("value_string")) t = Tensor::scalar(ctx.attr_string("value_string", "")), ++found;
  if (ctx.has_attr("value_strings")) t = vector_tensor(ctx.attr_strings("value_strings")), ++found;
  if (ctx.has_attr("sparse_value"))
    ctx.fail(ErrorCode::unsupported, "sparse_value must be densified by the frontend");
  if (found != 1)
    ctx.fail(ErrorCode::invalid_model, "exactly one value attribute is required, found ", found);
  ctx.set_output(0, DataValue(t));
}

// Dropout(data, ratio?, training_mode?) -> output, mask?. In inference (the
// default) it is the identity with an all-true mask; in training it zeroes
// each element with probability `ratio` and scales the rest by 1/(1-ratio).
void dropout_kernel(KernelContext& ctx) {
  const Tensor x = ctx.required_input(0).contiguous();
  float ratio = ctx.attr_float("ratio", 0.5f);  // opset < 12 attribute
  if (ctx.has_input(1)) {
    const Tensor& r = ctx.required_input(1);
    ctx.check(r.numel() == 1, "ratio must be a scalar");
    ratio = float(r.contiguous().at_double(0));
  }
  bool training = false;
  if (ctx.has_input(2)) {
    const Tensor& tm = ctx.required_input(2);
    ctx.check(tm.dtype() == DType::boolean && tm.numel() == 1, "training_mode must be a bool scalar");
    training = tm.contiguous().data<bool>()[0];
  }
  ctx.check(ratio >= 0 && ratio < 1, "ratio must be in [0, 1), got ", ratio);
  const bool want_mask = ctx.num_outputs() > 1 && ctx.output_requested(1);
  if (!training || ratio == 0) {
    ctx.set_output(0, DataValue(x));
    if (want_mask) {
      Tensor& m = ctx.output(1, DType::boolean, x.shape());
      std::fill_n(m.data<bool>(), m.numel(), true);
    }
    return;
  }
  std::mt19937_64 rng(ctx.has_attr("seed") ? uint64_t(ctx.attr_int("seed", 0)) : std::random_device{}());
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<bool> keep(size_t(x.numel()));
  for (auto&& k : keep) k = u(rng) >= ratio;
  const double scale = 1.0 / (1.0 - ratio);
  dispatch_set<kFloatTypes>(ctx, x.dtype(), [&]<typename T>() {
    Tensor& y = ctx.output(0, x.dtype(), x.shape());
    const T* px = x.data<T>();
    T* py = y.data<T>();
    for (int64_t i = 0; i < x.numel(); ++i)
      py[i] = store<T>(keep[size_t(i)] ? compute_t<T>(double(load(px[i])) * scale) : compute_t<T>(0));
  });
  if (want_mask) {
    Tensor& m = ctx.output(1, DType::boolean, x.shape());
    for (int64_t i = 0; i < x.numel(); ++i) m.data<bool>()[i] = keep[size_t(i)];
  }
}

void size_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.required_input(0);
  Tensor& y = ctx.output(0, DType::i64, {});
  y.data<int64_t>()[0] = x.numel();
}

void eyelike_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.required_input(0);
  ctx.check(x.rank() == 2, "input must be 2-D, got shape ", shape_text(x.shape()));
  DType dt = x.dtype();
  if (const Attribute* a = ctx.attr("dtype")) {
    dt = dtype_from_attr(a);
    if (dt == DType::undefined) ctx.fail(ErrorCode::invalid_model, "attribute 'dtype' names an unknown type");
  }
  const int64_t k = ctx.attr_int("k", 0);
  dispatch_set<kNumericTypes | kBoolType>(ctx, dt, [&]<typename T>() {
    Tensor& y = ctx.output(0, dt, x.shape());  // zero-filled
    T* p = y.data<T>();
    const int64_t rows = x.dim(0), cols = x.dim(1);
    for (int64_t i = 0; i < rows; ++i) {
      const int64_t j = i + k;
      if (j >= 0 && j < cols) {
        if constexpr (std::is_same_v<T, bool>)
          p[i * cols + j] = true;
        else
          p[i * cols + j] = store<T>(compute_t<T>(1));
      }
    }
  });
}

void optional_kernel(KernelContext& ctx) {
  const DataValue* v = ctx.input_value(0);
  if (v && v->kind != DataValue::Kind::none) {
    ctx.set_output(0, *v);
    return;
  }
  const Attribute* a = ctx.attr("type");
  ctx.set_output(0, DataValue::make_optional_none(a ? a->type_elem : DType::undefined));
}

void optional_has_element_kernel(KernelContext& ctx) {
  const DataValue* v = ctx.num_inputs() > 0 ? ctx.input_value(0) : nullptr;
  const bool has = v && (v->kind == DataValue::Kind::tensor || v->kind == DataValue::Kind::sequence);
  Tensor& y = ctx.output(0, DType::boolean, {});
  y.data<bool>()[0] = has;
}

void optional_get_element_kernel(KernelContext& ctx) {
  const DataValue* v = ctx.input_value(0);
  if (!v || !(v->kind == DataValue::Kind::tensor || v->kind == DataValue::Kind::sequence))
    ctx.fail(ErrorCode::runtime, "the optional input is empty");
  ctx.set_output(0, *v);
}

}  // namespace

void register_misc_kernels(KernelTable& t) {
  t.add("Identity", identity_kernel);
  t.add("Constant", constant_kernel);
  t.add("Dropout", dropout_kernel);
  t.add("Size", size_kernel);
  t.add("EyeLike", eyelike_kernel);
  t.add("Optional", optional_kernel);
  t.add("OptionalHasElement", optional_has_element_kernel);
  t.add("OptionalGetElement", optional_get_element_kernel);
}

}  // namespace tessera::kernels::ref
