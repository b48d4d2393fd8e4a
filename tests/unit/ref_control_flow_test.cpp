// Reference If / Loop / Scan kernels with C++ lambdas standing in for subgraphs.
#include <gtest/gtest.h>

#include <functional>

#include "tests/unit/kernel_harness.h"

namespace tessera::kernels::ref {
namespace {

using Body = std::function<std::vector<DataValue>(const std::vector<DataValue>&)>;

struct LambdaGraph : Subgraph {
  explicit LambdaGraph(Body f) : fn(std::move(f)) {}
  Body fn;
  int calls = 0;
};

class LambdaContext : public testing::TestKernelContext {
 public:
  using TestKernelContext::TestKernelContext;
  std::vector<DataValue> run_subgraph(const Subgraph& g, const std::vector<DataValue>& in) override {
    auto& lg = const_cast<LambdaGraph&>(dynamic_cast<const LambdaGraph&>(g));
    ++lg.calls;
    return lg.fn(in);
  }
};

Attribute graph(std::shared_ptr<LambdaGraph> g) {
  Attribute a;
  a.kind = Attribute::Kind::g;
  a.g = std::move(g);
  return a;
}

std::vector<DataValue> run(const std::string& op, std::vector<DataValue> in, AttrMap attrs, size_t nout,
                           int opset = 23) {
  LambdaContext ctx(op, std::move(in), std::move(attrs), nout, opset);
  kernels::ref::KernelTable::instance().find("", op)(ctx);
  return std::move(ctx.outputs());
}

TEST(RefControlFlow, IfRunsOnlyTheChosenBranch) {
  auto t = std::make_shared<LambdaGraph>([](const std::vector<DataValue>&) {
    return std::vector<DataValue>{Tensor::scalar<float>(1.f)};
  });
  auto e = std::make_shared<LambdaGraph>([](const std::vector<DataValue>&) {
    return std::vector<DataValue>{DataValue::make_sequence({Tensor::scalar<float>(2.f)})};
  });
  auto y = run("If", {Tensor::scalar<bool>(false)}, {{"then_branch", graph(t)}, {"else_branch", graph(e)}}, 1);
  ASSERT_TRUE(y[0].is_sequence());
  EXPECT_EQ(y[0].sequence[0].data<float>()[0], 2.f);
  EXPECT_EQ(t->calls, 0);
  y = run("If", {Tensor::scalar<bool>(true)}, {{"then_branch", graph(t)}, {"else_branch", graph(e)}}, 1);
  EXPECT_EQ(y[0].tensor.data<float>()[0], 1.f);
  EXPECT_THROW(run("If", {Tensor::scalar<bool>(true)}, {{"then_branch", graph(t)}, {"else_branch", graph(e)}}, 2), Error);
  EXPECT_THROW(run("If", {Tensor::scalar<bool>(true)}, {}, 1), Error);
}

TEST(RefControlFlow, LoopCarriesStateAndStacksScanOutputs) {
  // body(i, cond, acc) -> (acc + i < 10, acc + i, [i * 2])
  auto body = std::make_shared<LambdaGraph>([](const std::vector<DataValue>& in) {
    const int64_t i = in[0].tensor.data<int64_t>()[0];
    const float acc = in[2].tensor.data<float>()[0] + float(i);
    return std::vector<DataValue>{Tensor::scalar<bool>(acc < 10.f), Tensor::scalar<float>(acc),
                                  Tensor::from_vector<float>({float(i * 2)}, {1})};
  });
  auto y = run("Loop", {Tensor::scalar<int64_t>(100), Tensor::scalar<bool>(true), Tensor::scalar<float>(0.f)},
               {{"body", graph(body)}}, 2);
  // acc: 0,1,3,6,10 -> stops after i = 4.
  EXPECT_EQ(y[0].tensor.data<float>()[0], 10.f);
  ASSERT_EQ(y[1].tensor.shape(), (Shape{5, 1}));
  EXPECT_EQ(y[1].tensor.to_double_vector(), (std::vector<double>{0, 2, 4, 6, 8}));
  // Without a cond input the trip count alone decides.
  y = run("Loop", {Tensor::scalar<int64_t>(7), DataValue(), Tensor::scalar<float>(0.f)}, {{"body", graph(body)}}, 2);
  EXPECT_EQ(y[0].tensor.data<float>()[0], 21.f);
  // A sequence is carried through unchanged in kind.
  auto seqbody = std::make_shared<LambdaGraph>([](const std::vector<DataValue>& in) {
    TensorSequence s = in[2].sequence;
    s.push_back(Tensor::scalar<int64_t>(in[0].tensor.data<int64_t>()[0]));
    return std::vector<DataValue>{in[1], DataValue::make_sequence(s)};
  });
  y = run("Loop", {Tensor::scalar<int64_t>(3), Tensor::scalar<bool>(true), DataValue::make_sequence({}, DType::i64)},
          {{"body", graph(seqbody)}}, 1);
  ASSERT_TRUE(y[0].is_sequence());
  EXPECT_EQ(y[0].sequence.size(), 3u);
  EXPECT_THROW(run("Loop", {DataValue(), DataValue(), Tensor::scalar<float>(0.f)}, {{"body", graph(body)}}, 2), Error);
}

TEST(RefControlFlow, ScanAxesAndDirections) {
  // Running sum over rows of a [2, 3] input scanned along axis 1 in reverse.
  auto body = std::make_shared<LambdaGraph>([](const std::vector<DataValue>& in) {
    const Tensor& s = in[0].tensor;
    const Tensor& x = in[1].tensor;
    Tensor o(DType::f32, s.shape());
    for (int64_t i = 0; i < s.numel(); ++i) o.data<float>()[i] = s.data<float>()[i] + x.data<float>()[i];
    return std::vector<DataValue>{o, o};
  });
  const Tensor x = Tensor::from_vector<float>({1, 2, 3, 10, 20, 30}, {2, 3});
  const Tensor init = Tensor::from_vector<float>({0, 0});
  AttrMap at{{"body", graph(body)},
             {"num_scan_inputs", testing::attr_i(1)},
             {"scan_input_axes", testing::attr_ints({1})},
             {"scan_input_directions", testing::attr_ints({1})},
             {"scan_output_axes", testing::attr_ints({-1})}};
  auto y = run("Scan", {init, x}, at, 2);
  EXPECT_EQ(y[0].tensor.to_double_vector(), (std::vector<double>{6, 60}));
  ASSERT_EQ(y[1].tensor.shape(), (Shape{2, 3}));
  EXPECT_EQ(y[1].tensor.to_double_vector(), (std::vector<double>{3, 5, 6, 30, 50, 60}));
  at["scan_output_directions"] = testing::attr_ints({1});
  y = run("Scan", {init, x}, at, 2);
  EXPECT_EQ(y[1].tensor.to_double_vector(), (std::vector<double>{6, 5, 3, 60, 50, 30}));
  // Scan-8: batch dimension first, optional sequence_lens input.
  AttrMap at8{{"body", graph(body)}, {"num_scan_inputs", testing::attr_i(1)}};
  const Tensor x8 = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {1, 3, 2});
  auto y8 = run("Scan", {DataValue(), Tensor::from_vector<float>({0, 0}, {1, 2}), x8}, at8, 2, 8);
  EXPECT_EQ(y8[0].tensor.to_double_vector(), (std::vector<double>{9, 12}));
  EXPECT_EQ(y8[1].tensor.shape(), (Shape{1, 3, 2}));
}

}  // namespace
}  // namespace tessera::kernels::ref
