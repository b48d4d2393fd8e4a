// Helpers for the nn reference-kernel tests (ref_{linalg,conv,pool,
// normalization,softmax,attention}_test.cpp): random tensors, value access,
// comparisons against naive double computations written in the tests.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "ir/graph.h"
#include "ir/op_registry.h"
#include "kernel_harness.h"

namespace tessera::testing::nn {

inline Tensor rand_tensor(Shape shape, uint32_t seed, DType dt = DType::f32, double lo = -1, double hi = 1) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  Tensor t(dt, std::move(shape));
  dispatch_dtype(dt, [&]<typename T>() {
    if constexpr (std::is_same_v<T, std::string> || std::is_same_v<T, Complex64> || std::is_same_v<T, Complex128>) {
    } else {
      T* p = t.data<T>();
      for (int64_t i = 0; i < t.numel(); ++i) p[i] = from_double<T>(dist(rng));
    }
  });
  return t;
}

inline Tensor f32(std::vector<float> v, Shape shape) { return Tensor::from_vector(v, std::move(shape)); }
inline Tensor i64(std::vector<int64_t> v, Shape shape) { return Tensor::from_vector(v, std::move(shape)); }

inline std::vector<double> vals(const Tensor& t) { return t.to_double_vector(); }
inline std::vector<double> vals(const DataValue& v) { return v.tensor.to_double_vector(); }

// Element-wise closeness: |a - e| <= atol + rtol * |e| (NaN matches NaN).
inline void expect_close(const std::vector<double>& got, const std::vector<double>& want, double rtol = 1e-5,
                         double atol = 1e-6) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << "at " << i;
      continue;
    }
    EXPECT_NEAR(got[i], want[i], atol + rtol * std::fabs(want[i])) << "at " << i;
  }
}

inline Attribute ints(std::vector<int64_t> v) { return attr_ints(std::move(v)); }

// Runs shape inference on a one-node graph whose inputs have the given types
// (nullopt = omitted input); returns the output types.
struct InferInput {
  DType dtype = DType::f32;
  std::vector<int64_t> shape;  // -1: unknown dim
  const Tensor* constant = nullptr;
  bool present = true;
};
inline std::vector<ir::TypeInfo> infer_node(const std::string& op, const std::vector<InferInput>& inputs,
                                            AttrMap attrs, size_t num_outputs = 1, int opset = 23) {
  ir::Graph g;
  ir::Node* n = g.add_node(op, "n");
  n->opset = opset;
  n->attrs = std::move(attrs);
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].present) {
      g.connect_input(n, nullptr);
      continue;
    }
    ir::Value* v = g.add_value("in" + std::to_string(i));
    std::vector<ir::Dim> dims;
    for (int64_t d : inputs[i].shape) dims.push_back(d < 0 ? ir::Dim() : ir::Dim(d));
    v->type = ir::TypeInfo::tensor(inputs[i].dtype, dims);
    if (inputs[i].constant) v->initializer = *inputs[i].constant;
    g.inputs.push_back(v);
    g.connect_input(n, v);
  }
  for (size_t i = 0; i < num_outputs; ++i) g.connect_output(n, g.add_value("out" + std::to_string(i)));
  ir::infer_shapes(g);
  std::vector<ir::TypeInfo> out;
  for (ir::Value* v : n->outputs) out.push_back(v->type);
  return out;
}

// The static shape of an inferred type (fails the test when unknown).
inline Shape static_shape(const ir::TypeInfo& t) {
  auto s = t.static_shape();
  EXPECT_TRUE(s.has_value()) << t.str();
  return s ? *s : Shape{};
}

}  // namespace tessera::testing::nn
