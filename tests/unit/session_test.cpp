// Session tests on small graphs built in C++ with test-only ops (domain
// "test.rt"), so they do not depend on the reference kernels.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <random>
#include <thread>

#include <nlohmann/json.hpp>

#include "backends/cpu/cpu_backend.h"
#include "core/thread_pool.h"
#include "ir/op_registry.h"
#include "kernels/ref/registry.h"
#include "runtime/session_impl.h"
#include "tessera_onnx.pb.h"

namespace tessera {
namespace {

constexpr const char* kDom = "test.rt";

// ---- test kernels
void add_kernel(KernelContext& c) {
  const Tensor& a = c.required_input(0);
  const Tensor& b = c.required_input(1);
  c.check(a.shape() == b.shape(), "shapes differ: ", a.describe(), " vs ", b.describe());
  Tensor& o = c.output(0, DType::f32, a.shape());
  for (int64_t i = 0; i < a.numel(); ++i) o.data<float>()[i] = a.data<float>()[i] + b.data<float>()[i];
}
// a + b into b's buffer where the plan allows (output_reusing); counts the runs that got it.
std::atomic<int> g_in_place{0};
void add_into_kernel(KernelContext& c) {
  const Tensor& a = c.required_input(0);
  const Tensor& b = c.required_input(1);
  Tensor& o = c.output_reusing(0, 1, DType::f32, a.shape());
  if (o.data<float>() == b.data<float>()) ++g_in_place;
  for (int64_t i = 0; i < a.numel(); ++i) o.data<float>()[i] = a.data<float>()[i] + b.data<float>()[i];
}
void scale_kernel(KernelContext& c) {
  const Tensor& a = c.required_input(0);
  const float alpha = c.attr_float("alpha", 1.0f);
  Tensor& o = c.output(0, DType::f32, a.shape());
  for (int64_t i = 0; i < a.numel(); ++i) o.data<float>()[i] = a.data<float>()[i] * alpha;
}
// Output 0 is a view of input 0 (like Reshape / Identity).
void view_kernel(KernelContext& c) { c.set_output(0, DataValue(c.required_input(0))); }
void fail_kernel(KernelContext& c) { c.fail(ErrorCode::runtime, "boom"); }
void lazy_kernel(KernelContext&) {}
void throwing_kernel(KernelContext&) { throw std::out_of_range("vector index"); }
// The positive elements of input 0: a data-dependent output size.
void positives_kernel(KernelContext& c) {
  const Tensor& a = c.required_input(0);
  std::vector<float> pos;
  for (float v : a.values<float>())
    if (v > 0) pos.push_back(v);
  Tensor& o = c.output(0, DType::f32, {int64_t(pos.size())});
  std::copy(pos.begin(), pos.end(), o.data<float>());
}
// If-like: input 0 a bool scalar; runs then_branch or else_branch.
void cond_kernel(KernelContext& c) {
  const bool flag = c.required_input(0).data<bool>()[0];
  const Attribute* g = c.attr(flag ? "then_branch" : "else_branch");
  c.check(g && g->g, "missing branch");
  std::vector<DataValue> outs = c.run_subgraph(*g->g, {});
  c.check(outs.size() == 1, "branch must have one output");
  c.set_output(0, outs[0]);
}
// Loop-like: x = body(i, x) for i in [0, n).
void repeat_kernel(KernelContext& c) {
  const int64_t n = c.attr_int("n", 1);
  const Attribute* body = c.attr("body");
  c.check(body && body->g, "missing body");
  DataValue x = *c.input_value(0);
  for (int64_t i = 0; i < n; ++i) x = c.run_subgraph(*body->g, {DataValue(Tensor::scalar<int64_t>(i)), x})[0];
  c.set_output(0, x);
}
void pool_kernel(KernelContext& c) {
  c.output(0, DType::i64, {}).data<int64_t>()[0] = c.pool() ? c.pool()->num_threads() : -1;
}
void tuned_scale_kernel(KernelContext& c) {  // claims Scale nodes with alpha == 42
  const Tensor& a = c.required_input(0);
  Tensor& o = c.output(0, DType::f32, a.shape());
  for (int64_t i = 0; i < a.numel(); ++i) o.data<float>()[i] = -1.0f;
}

void register_test_ops() {
  static const bool done = [] {
    auto& reg = ir::OpRegistry::instance();
    auto same = ir::infer_same_as_input0;
    using K = Attribute::Kind;
    reg.add(ir::make_schema("Add", 2, 2, 1, 1, same, {}, kDom));
    reg.add(ir::make_schema("Scale", 1, 1, 1, 1, same, {{"alpha", K::f}}, kDom));
    reg.add(ir::make_schema("AddInto", 2, 2, 1, 1, same, {}, kDom));
    reg.add(ir::make_schema("View", 1, 1, 1, 1, same, {}, kDom));
    reg.add(ir::make_schema("Fail", 1, 1, 1, 1, same, {}, kDom));
    reg.add(ir::make_schema("Lazy", 1, 1, 1, 1, same, {}, kDom));
    reg.add(ir::make_schema("Throw", 1, 1, 1, 1, same, {}, kDom));
    reg.add(ir::make_schema(
        "Positives", 1, 1, 1, 1,
        [](ir::InferenceContext& c) { c.set_output(0, DType::f32, std::vector<ir::Dim>{ir::Dim()}); }, {}, kDom));
    reg.add(ir::make_schema("Cond", 1, 1, 1, 1, nullptr, {{"then_branch", K::g}, {"else_branch", K::g}}, kDom));
    reg.add(ir::make_schema("Repeat", 1, 1, 1, 1, nullptr, {{"n", K::i}, {"body", K::g}}, kDom));
    reg.add(ir::make_schema(
        "PoolThreads", 0, 0, 1, 1,
        [](ir::InferenceContext& c) { c.set_output(0, DType::i64, std::vector<ir::Dim>{}); }, {}, kDom));
    reg.add(ir::make_schema("NoKernel", 1, 1, 1, 1, same, {}, kDom));
    using backends::cpu::add_tuned_kernel;
    add_tuned_kernel(kDom, "Add", {}, add_kernel);
    add_tuned_kernel(kDom, "Scale", {}, scale_kernel);
    add_tuned_kernel(kDom, "AddInto", {}, add_into_kernel);
    add_tuned_kernel(kDom, "View", {}, view_kernel);
    add_tuned_kernel(kDom, "Fail", {}, fail_kernel);
    add_tuned_kernel(kDom, "Lazy", {}, lazy_kernel);
    add_tuned_kernel(kDom, "Throw", {}, throwing_kernel);
    add_tuned_kernel(kDom, "Positives", {}, positives_kernel);
    add_tuned_kernel(kDom, "Cond", {}, cond_kernel);
    add_tuned_kernel(kDom, "Repeat", {}, repeat_kernel);
    add_tuned_kernel(kDom, "PoolThreads", {}, pool_kernel);
    add_tuned_kernel(
        kDom, "Scale",
        [](const ir::Node& n) {
          const Attribute* a = n.attr("alpha");
          return a && a->kind == Attribute::Kind::f && a->f == 42.0f;
        },
        tuned_scale_kernel);
    return true;
  }();
  (void)done;
}

Attribute fattr(float v) {
  Attribute a;
  a.kind = Attribute::Kind::f;
  a.f = v;
  return a;
}
Attribute iattr(int64_t v) {
  Attribute a;
  a.kind = Attribute::Kind::i;
  a.i = v;
  return a;
}
Attribute gattr(std::shared_ptr<ir::Graph> g) {
  Attribute a;
  a.kind = Attribute::Kind::g;
  a.g = std::move(g);
  return a;
}

// Builds a node with one output named `out` in graph g.
ir::Value* node(ir::Graph& g, const std::string& op, const std::string& out, std::vector<ir::Value*> ins,
                AttrMap attrs = {}) {
  ir::Node* n = g.add_node(op, out + "_node");
  n->domain = kDom;
  n->opset = 1;
  n->attrs = std::move(attrs);
  for (ir::Value* v : ins) g.connect_input(n, v);
  ir::Value* o = g.add_value(out);
  g.connect_output(n, o);
  return o;
}

struct Builder {
  ir::Model model;
  ir::Graph& g;
  Builder() : g(*model.graph) {
    register_test_ops();
    model.opsets[""] = 23;
    model.opsets[kDom] = 1;
    g.name = "main";
  }
  ir::Value* input(const std::string& name, DType t, std::vector<ir::Dim> shape) {
    ir::Value* v = g.add_value(name);
    v->type = ir::TypeInfo::tensor(t, std::move(shape));
    g.inputs.push_back(v);
    return v;
  }
  ir::Value* initializer(const std::string& name, Tensor t, bool is_input) {
    ir::Value* v = g.add_value(name);
    v->type = ir::TypeInfo::tensor_of(t);
    v->initializer = std::move(t);
    if (is_input) g.inputs.push_back(v);
    return v;
  }
  std::shared_ptr<ir::Graph> subgraph(const std::string& name, ir::Graph& parent) {
    auto sg = std::make_shared<ir::Graph>();
    sg->name = name;
    sg->parent = &parent;
    return sg;
  }
  Session build(SessionOptions opts = {}) {
    if (opts.threads == 0) opts.threads = 1;
    return runtime::make_session(std::move(model), opts);
  }
};

Tensor random_tensor(Shape shape, std::mt19937& rng) {
  Tensor t(DType::f32, std::move(shape));
  std::uniform_real_distribution<float> d(-2, 2);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = d(rng);
  return t;
}

void expect_values(const DataValue& v, const std::vector<float>& want) {
  ASSERT_TRUE(v.is_tensor());
  ASSERT_EQ(v.tensor.numel(), int64_t(want.size()));
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(v.tensor.data<float>()[i], want[i]) << "element " << i;
}

ErrorCode code_of(const std::function<void()>& f, std::string* message = nullptr, std::string* node = nullptr) {
  try {
    f();
  } catch (const Error& e) {
    if (message) *message = e.what();
    if (node) *node = e.node_name();
    return e.code();
  }
  ADD_FAILURE() << "no Error thrown";
  return ErrorCode::internal;
}

// ---- tests

TEST(RuntimeSession, RunsAChainAndReturnsInputsAndInitializers) {
  Builder b;
  ir::Value* x = b.input("x", DType::f32, {2, 3});
  ir::Value* w = b.initializer("w", Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3}), false);
  ir::Value* a = node(b.g, "Add", "a", {x, w});
  ir::Value* s = node(b.g, "Scale", "s", {a}, {{"alpha", fattr(2)}});
  b.g.outputs = {s, x, w, a};
  Session sess = b.build();
  ASSERT_EQ(sess.inputs().size(), 1u);
  EXPECT_EQ(sess.inputs()[0].name, "x");
  EXPECT_EQ(sess.inputs()[0].type, "tensor(float)");
  ASSERT_EQ(sess.outputs().size(), 4u);
  EXPECT_NE(sess.graph_text().find("Scale"), std::string::npos);

  Tensor xt = Tensor::from_vector<float>({1, 1, 1, 1, 1, 1}, {2, 3});
  for (int rep = 0; rep < 3; ++rep) {
    auto outs = sess.run({{"x", xt}});
    ASSERT_EQ(outs.size(), 4u);
    expect_values(outs[0], {4, 6, 8, 10, 12, 14});
    expect_values(outs[1], {1, 1, 1, 1, 1, 1});
    expect_values(outs[2], {1, 2, 3, 4, 5, 6});
    expect_values(outs[3], {2, 3, 4, 5, 6, 7});
  }
  // A subset of outputs, in the order asked for.
  auto outs = sess.run({{"x", xt}}, {"w", "s"});
  ASSERT_EQ(outs.size(), 2u);
  expect_values(outs[0], {1, 2, 3, 4, 5, 6});
  expect_values(outs[1], {4, 6, 8, 10, 12, 14});
}

TEST(RuntimeSession, OptionalInitializerInput) {
  Builder b;
  ir::Value* x = b.input("x", DType::f32, {2});
  ir::Value* w = b.initializer("w", Tensor::from_vector<float>({10, 20}), true);
  b.g.outputs = {node(b.g, "Add", "y", {x, w})};
  Session sess = b.build();
  EXPECT_EQ(sess.inputs().size(), 1u);  // w may be fed but need not be
  Tensor xt = Tensor::from_vector<float>({1, 2});
  expect_values(sess.run({{"x", xt}})[0], {11, 22});
  expect_values(sess.run({{"x", xt}, {"w", Tensor::from_vector<float>({5, 5})}})[0], {6, 7});
}

TEST(RuntimeSession, BadFeeds) {
  Builder b;
  ir::Value* x = b.input("x", DType::f32, {ir::Dim::sym("batch"), 4});
  b.g.outputs = {node(b.g, "Scale", "y", {x}, {{"alpha", fattr(2)}})};
  Session sess = b.build();
  EXPECT_EQ(sess.inputs()[0].shape, (std::vector<int64_t>{-1, 4}));
  EXPECT_EQ(sess.inputs()[0].dim_names[0], "batch");
  std::string msg;
  Tensor good(DType::f32, {2, 4});
  EXPECT_EQ(code_of([&] { sess.run({{"x", good}, {"z", good}}); }, &msg), ErrorCode::invalid_argument);
  EXPECT_NE(msg.find("unknown input 'z'"), std::string::npos) << msg;
  EXPECT_EQ(code_of([&] { sess.run({}); }, &msg), ErrorCode::invalid_argument);
  EXPECT_NE(msg.find("missing required input 'x'"), std::string::npos) << msg;
  EXPECT_EQ(code_of([&] { sess.run({{"x", Tensor(DType::i64, {2, 4})}}); }, &msg), ErrorCode::invalid_argument);
  EXPECT_EQ(msg, "input 'x': expected float32[batch,4], got int64[2,4]");
  EXPECT_EQ(code_of([&] { sess.run({{"x", Tensor(DType::f32, {2, 4, 1})}}); }, &msg), ErrorCode::invalid_argument);
  EXPECT_EQ(msg, "input 'x': expected float32[batch,4], got float32[2,4,1]");
  EXPECT_EQ(code_of([&] { sess.run({{"x", Tensor(DType::f32, {2, 5})}}); }, &msg), ErrorCode::invalid_argument);
  EXPECT_EQ(msg, "input 'x': expected float32[batch,4], got float32[2,5]");
  EXPECT_EQ(code_of([&] { sess.run({{"x", DataValue::make_sequence({good})}}); }, &msg),
            ErrorCode::invalid_argument);
  EXPECT_EQ(code_of([&] { sess.run({{"x", DataValue()}}); }, &msg), ErrorCode::invalid_argument);
  EXPECT_EQ(code_of([&] { sess.run({{"x", good}}, {"nope"}); }, &msg), ErrorCode::invalid_argument);
  EXPECT_NE(msg.find("unknown output 'nope'"), std::string::npos) << msg;
  // Still fine afterwards, any batch.
  EXPECT_EQ(sess.run({{"x", Tensor(DType::f32, {7, 4})}})[0].tensor.shape(), (Shape{7, 4}));
}

TEST(RuntimeSession, KernelErrorsNameTheNode) {
  for (const char* op : {"Fail", "Lazy", "Throw"}) {
    Builder b;
    ir::Value* x = b.input("x", DType::f32, {2});
    ir::Value* s = node(b.g, "Scale", "s", {x});
    b.g.outputs = {node(b.g, op, "bad", {s})};
    Session sess = b.build();
    std::string msg, who;
    const ErrorCode code = code_of([&] { sess.run({{"x", Tensor(DType::f32, {2})}}); }, &msg, &who);
    EXPECT_EQ(who, "bad_node") << op;
    EXPECT_NE(msg.find(op), std::string::npos) << msg;
    EXPECT_EQ(code, std::string(op) == "Lazy" ? ErrorCode::internal : ErrorCode::runtime) << op << ": " << msg;
  }
}

TEST(RuntimeSession, UnsupportedOpFailsAtCreation) {
  Builder b;
  ir::Value* x = b.input("x", DType::f32, {2});
  b.g.outputs = {node(b.g, "NoKernel", "y", {x})};
  std::string msg, who;
  EXPECT_EQ(code_of([&] { b.build(); }, &msg, &who), ErrorCode::unsupported);
  EXPECT_EQ(who, "y_node");
  EXPECT_NE(msg.find("NoKernel"), std::string::npos) << msg;
}

TEST(RuntimeSession, TunedKernelClaimsMatchingNodes) {
  Builder b;
  ir::Value* x = b.input("x", DType::f32, {2});
  ir::Value* s1 = node(b.g, "Scale", "s1", {x}, {{"alpha", fattr(42)}});
  ir::Value* s2 = node(b.g, "Scale", "s2", {x}, {{"alpha", fattr(3)}});
  b.g.outputs = {s1, s2};
  EXPECT_EQ(backends::cpu::select(*s1->producer), &tuned_scale_kernel);
  EXPECT_EQ(backends::cpu::select(*s2->producer), &scale_kernel);
  Session sess = b.build();
  auto outs = sess.run({{"x", Tensor::from_vector<float>({1, 2})}});
  expect_values(outs[0], {-1, -1});
  expect_values(outs[1], {3, 6});
}

// x -> s1 -> s2 -> s3 -> s4 -> Add(s4, x): two buffers suffice for s1..s4.
TEST(RuntimeSession, PlansMemoryAndReusesThePlan) {
  Builder b;
  ir::Value* x = b.input("x", DType::f32, {ir::Dim::sym("n"), 4});
  ir::Value* v = x;
  for (int i = 1; i <= 4; ++i) v = node(b.g, "Scale", "s" + std::to_string(i), {v}, {{"alpha", fattr(2)}});
  b.g.outputs = {node(b.g, "Add", "y", {v, x})};
  Session sess = b.build();
  const SessionImpl& impl = sess.impl();
  std::mt19937 rng(1);

  auto check_run = [&](int64_t n) {
    Tensor xt = random_tensor({n, 4}, rng);
    auto outs = sess.run({{"x", xt}});
    std::vector<float> want;
    for (float f : xt.values<float>()) want.push_back(f * 16 + f);
    expect_values(outs[0], want);
    return outs;
  };
  check_run(16);
  EXPECT_EQ(impl.num_planned_runs(), 0);
  EXPECT_EQ(impl.num_cached_plans(), 1u);
  EXPECT_EQ(sess.peak_memory_bytes(), 2u * 256u);  // naive: 4 * 256
  auto kept = check_run(16);
  EXPECT_EQ(impl.num_planned_runs(), 1);
  EXPECT_EQ(impl.last_arena_bytes(), 4u * 256u);
  const std::vector<float> kept_values(kept[0].tensor.values<float>().begin(), kept[0].tensor.values<float>().end());
  // New shapes: a new plan; the old one is reused when they come back.
  check_run(3);
  EXPECT_EQ(impl.num_cached_plans(), 2u);
  EXPECT_EQ(sess.peak_memory_bytes(), 2u * 64u);  // 48 bytes each, 64-byte aligned
  check_run(3);
  check_run(16);
  EXPECT_EQ(impl.num_planned_runs(), 3);
  EXPECT_EQ(sess.peak_memory_bytes(), 2u * 256u);
  // Outputs returned earlier are not touched by later runs.
  expect_values(kept[0], kept_values);
}

// Views of planned buffers keep them alive; outputs never live in the arena.
TEST(RuntimeSession, ViewsOfPlannedBuffers) {
  Builder b;
  ir::Value* x = b.input("x", DType::f32, {8});
  ir::Value* a = node(b.g, "Scale", "a", {x}, {{"alpha", fattr(2)}});
  ir::Value* av = node(b.g, "View", "av", {a});  // last direct use of a
  ir::Value* c = node(b.g, "Scale", "c", {x}, {{"alpha", fattr(3)}});
  ir::Value* d = node(b.g, "Add", "d", {av, c});
  ir::Value* p = node(b.g, "Scale", "p", {x}, {{"alpha", fattr(5)}});
  ir::Value* pv = node(b.g, "View", "pv", {p});  // a graph output viewing p
  ir::Value* q = node(b.g, "Scale", "q", {x}, {{"alpha", fattr(7)}});
  ir::Value* r = node(b.g, "Add", "r", {q, q});
  b.g.outputs = {d, pv, r};
  Session sess = b.build();
  std::mt19937 rng(2);
  for (int rep = 0; rep < 3; ++rep) {
    Tensor xt = random_tensor({8}, rng);
    auto outs = sess.run({{"x", xt}});
    std::vector<float> wd, wp, wr;
    for (float f : xt.values<float>()) {
      wd.push_back(f * 2 + f * 3);
      wp.push_back(f * 5);
      wr.push_back(f * 7 + f * 7);
    }
    expect_values(outs[0], wd);
    expect_values(outs[1], wp);
    expect_values(outs[2], wr);
  }
  EXPECT_EQ(sess.impl().num_planned_runs(), 2);
}

// output_reusing: the output takes over its input's buffer only where nothing reads that buffer later
// (directly or through a view), no other input of the node is that buffer, and the sizes match.
TEST(RuntimeSession, OutputsReuseDeadInputBuffers) {
  Builder b;
  ir::Value* x = b.input("x", DType::f32, {64});
  ir::Value* a = node(b.g, "Scale", "a", {x}, {{"alpha", fattr(2)}});
  ir::Value* c = node(b.g, "Scale", "c", {x}, {{"alpha", fattr(3)}});
  ir::Value* d = node(b.g, "AddInto", "d", {a, c});  // c dead after: d takes its buffer
  ir::Value* e = node(b.g, "AddInto", "e", {a, d});  // and e d's (a chain on one buffer)
  ir::Value* f = node(b.g, "Scale", "f", {x}, {{"alpha", fattr(5)}});
  ir::Value* g = node(b.g, "AddInto", "g", {e, f});  // f read again below: no
  ir::Value* h = node(b.g, "Add", "h", {g, f});
  ir::Value* k = node(b.g, "Scale", "k", {x}, {{"alpha", fattr(7)}});
  ir::Value* kv = node(b.g, "View", "kv", {k});
  ir::Value* m = node(b.g, "AddInto", "m", {h, k});  // k read later through its view: no
  ir::Value* n = node(b.g, "AddInto", "n", {m, m});  // both inputs one buffer: no
  ir::Value* y = node(b.g, "Add", "y", {n, kv});
  b.g.outputs = {y};
  Session sess = b.build();
  std::mt19937 rng(5);
  for (int rep = 0; rep < 3; ++rep) {
    g_in_place = 0;
    Tensor xt = random_tensor({64}, rng);
    auto outs = sess.run({{"x", xt}});
    std::vector<float> want;
    for (float v : xt.values<float>()) {
      const float dd = v * 2 + v * 3, ee = v * 2 + dd, gg = ee + v * 5, hh = gg + v * 5, mm = hh + v * 7;
      want.push_back(mm + mm + v * 7);
    }
    expect_values(outs[0], want);
    EXPECT_EQ(g_in_place.load(), rep == 0 ? 0 : 2) << "run " << rep;  // d and e, once planned
  }
  EXPECT_EQ(sess.impl().num_planned_runs(), 2);
}

TEST(RuntimeSession, DataDependentSizesFallBack) {
  Builder b;
  ir::Value* x = b.input("x", DType::f32, {4});
  ir::Value* p = node(b.g, "Positives", "p", {x});
  ir::Value* s = node(b.g, "Scale", "s", {p}, {{"alpha", fattr(2)}});
  b.g.outputs = {node(b.g, "Add", "y", {s, p})};
  Session sess = b.build();
  expect_values(sess.run({{"x", Tensor::from_vector<float>({1, -1, 2, -2})}})[0], {3, 6});
  expect_values(sess.run({{"x", Tensor::from_vector<float>({1, 2, 3, -1})}})[0], {3, 6, 9});
  expect_values(sess.run({{"x", Tensor::from_vector<float>({-1, -2, -3, -1})}})[0], {});
  expect_values(sess.run({{"x", Tensor::from_vector<float>({4, -2, 5, -1})}})[0], {12, 15});
  EXPECT_GT(sess.impl().last_arena_bytes(), 0u);
}

// If-like control flow capturing outer values; the else branch returns an
// outer intermediate itself (data-dependent aliasing of planned memory).
TEST(RuntimeSession, CondSubgraphs) {
  Builder b;
  ir::Value* flag = b.input("flag", DType::boolean, {});
  ir::Value* x = b.input("x", DType::f32, {4});
  ir::Value* c = node(b.g, "Scale", "c", {x}, {{"alpha", fattr(10)}});
  auto then_g = b.subgraph("then", b.g);
  then_g->outputs = {node(*then_g, "Add", "t", {c, x})};
  auto else_g = b.subgraph("else", b.g);
  else_g->outputs = {c};
  ir::Value* n = node(b.g, "Cond", "n", {flag}, {{"then_branch", gattr(then_g)}, {"else_branch", gattr(else_g)}});
  ir::Value* d = node(b.g, "Scale", "d", {x}, {{"alpha", fattr(3)}});
  ir::Value* e = node(b.g, "Scale", "e", {d}, {{"alpha", fattr(1)}});
  b.g.outputs = {node(b.g, "Add", "out", {n, e})};
  Session sess = b.build();
  Tensor xt = Tensor::from_vector<float>({1, 2, 3, 4});
  for (bool f : {true, false, true, false, false}) {
    auto outs = sess.run({{"flag", Tensor::scalar<bool>(f)}, {"x", xt}});
    if (f) expect_values(outs[0], {14, 28, 42, 56});
    else expect_values(outs[0], {13, 26, 39, 52});
  }
}

// Loop-like body capturing an outer intermediate, with a nested Cond that
// reads values two scopes up.
TEST(RuntimeSession, LoopSubgraphsAndNestedScopes) {
  Builder b;
  ir::Value* flag = b.input("flag", DType::boolean, {});
  ir::Value* x = b.input("x", DType::f32, {3});
  ir::Value* c = node(b.g, "Scale", "c", {x}, {{"alpha", fattr(2)}});
  auto body = b.subgraph("body", b.g);
  ir::Value* i = body->add_value("i");
  i->type = ir::TypeInfo::tensor(DType::i64, std::vector<ir::Dim>{});
  ir::Value* xin = body->add_value("xin");
  xin->type = ir::TypeInfo::tensor(DType::f32, std::vector<ir::Dim>{3});
  body->inputs = {i, xin};
  auto then_g = b.subgraph("then", *body);
  then_g->outputs = {node(*then_g, "Add", "t", {xin, c})};
  auto else_g = b.subgraph("else", *body);
  else_g->outputs = {node(*else_g, "Scale", "u", {xin}, {{"alpha", fattr(1)}})};
  body->outputs = {
      node(*body, "Cond", "xo", {flag}, {{"then_branch", gattr(then_g)}, {"else_branch", gattr(else_g)}})};
  ir::Value* r = node(b.g, "Repeat", "r", {x}, {{"n", iattr(3)}, {"body", gattr(body)}});
  b.g.outputs = {r, c};
  Session sess = b.build();
  Tensor xt = Tensor::from_vector<float>({1, 2, 3});
  for (int rep = 0; rep < 2; ++rep) {
    auto outs = sess.run({{"flag", Tensor::scalar<bool>(true)}, {"x", xt}});
    expect_values(outs[0], {7, 14, 21});
    expect_values(outs[1], {2, 4, 6});
    outs = sess.run({{"flag", Tensor::scalar<bool>(false)}, {"x", xt}});
    expect_values(outs[0], {1, 2, 3});
  }
}

TEST(RuntimeSession, ConcurrentRuns) {
  Builder b;
  ir::Value* x = b.input("x", DType::f32, {ir::Dim::sym("batch"), 4});
  ir::Value* a = node(b.g, "Scale", "a", {x}, {{"alpha", fattr(2)}});
  ir::Value* bb = node(b.g, "Add", "b", {a, x});
  ir::Value* c = node(b.g, "View", "c", {bb});
  ir::Value* d = node(b.g, "Scale", "d", {c}, {{"alpha", fattr(0.5f)}});
  b.g.outputs = {node(b.g, "Add", "e", {d, a})};
  SessionOptions opts;
  opts.threads = 2;
  Session sess = b.build(opts);
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(100 + t);
      for (int it = 0; it < 60; ++it) {
        const int64_t batch = 1 + (it + t) % 3;
        Tensor xt = random_tensor({batch, 4}, rng);
        auto outs = sess.run({{"x", xt}});
        for (int64_t k = 0; k < xt.numel(); ++k) {
          const float xv = xt.data<float>()[k];
          const float av = xv * 2.0f;
          const float want = (av + xv) * 0.5f + av;
          if (outs[0].tensor.data<float>()[k] != want) ++failures;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(sess.impl().num_cached_plans(), 3u);
  EXPECT_GT(sess.impl().num_planned_runs(), 200);
}

TEST(RuntimeSession, ThreadPoolReachesKernels) {
  Builder b;
  ir::Node* n = b.g.add_node("PoolThreads", "pt");
  n->domain = kDom;
  ir::Value* o = b.g.add_value("threads");
  b.g.connect_output(n, o);
  b.g.outputs = {o};
  SessionOptions opts;
  opts.threads = 3;
  Session sess = b.build(opts);
  EXPECT_EQ(sess.run({})[0].tensor.data<int64_t>()[0], 3);
}

TEST(RuntimeSession, ProfileIsAChromeTrace) {
  const std::string path = ::testing::TempDir() + "tessera_session_profile.json";
  std::remove(path.c_str());
  {
    Builder b;
    ir::Value* x = b.input("x", DType::f32, {2});
    ir::Value* s = node(b.g, "Scale", "s", {x});
    b.g.outputs = {node(b.g, "Add", "y", {s, x})};
    SessionOptions opts;
    opts.enable_profiling = true;
    opts.profile_path = path;
    Session sess = b.build(opts);
    for (int i = 0; i < 3; ++i) sess.run({{"x", Tensor(DType::f32, {2})}});
  }
  std::ifstream f(path);
  ASSERT_TRUE(f.good());
  nlohmann::json doc = nlohmann::json::parse(f);
  ASSERT_TRUE(doc.contains("traceEvents"));
  EXPECT_EQ(doc["traceEvents"].size(), 6u);
  EXPECT_EQ(doc["traceEvents"][0]["ph"], "X");
  EXPECT_EQ(doc["traceEvents"][0]["name"], "s_node");
  EXPECT_EQ(doc["traceEvents"][1]["cat"], "Add");
  std::remove(path.c_str());
}

TEST(RuntimeSession, UnknownBackendAndMissingFile) {
  Builder b;
  ir::Value* x = b.input("x", DType::f32, {2});
  b.g.outputs = {node(b.g, "Scale", "y", {x})};
  SessionOptions opts;
  opts.backend = "tpu9000";
  EXPECT_EQ(code_of([&] { b.build(opts); }), ErrorCode::unsupported);
  EXPECT_THROW(Session("/nonexistent/model.onnx"), Error);
}

// Nodes without a tuned kernel get the reference kernel.
TEST(RuntimeBackend, FallsBackToReferenceKernels) {
  ir::Graph g;
  ir::Node* n = g.add_node("Add", "n");
  const KernelFn ref = kernels::ref::KernelTable::instance().find("", "Add");
  ASSERT_NE(ref, nullptr);
  EXPECT_EQ(backends::cpu::select(*n), ref);
  EXPECT_EQ(backends::cpu::selected_kind(*n), "ref");
  n->domain = "ai.onnx";
  EXPECT_EQ(backends::cpu::select(*n), ref);
  ir::Node* unknown = g.add_node("NoSuchOp", "u");
  EXPECT_EQ(backends::cpu::select(*unknown), nullptr);
  EXPECT_EQ(backends::cpu::selected_kind(*unknown), "");
}

// The whole path: ONNX bytes -> loader -> verify -> infer -> compile -> run
// with reference kernels.
TEST(RuntimeSession, RunsAnOnnxModelFromBytes) {
  tessera_onnx::ModelProto m;
  m.set_ir_version(9);
  auto* op = m.add_opset_import();
  op->set_domain("");
  op->set_version(17);
  auto* g = m.mutable_graph();
  g->set_name("g");
  for (const char* name : {"x", "y"}) {
    auto* in = g->add_input();
    in->set_name(name);
    auto* tt = in->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(tessera_onnx::TensorProto::FLOAT);
    tt->mutable_shape()->add_dim()->set_dim_param("N");
  }
  auto* out = g->add_output();
  out->set_name("z");
  out->mutable_type()->mutable_tensor_type()->set_elem_type(tessera_onnx::TensorProto::FLOAT);
  auto* n1 = g->add_node();
  n1->set_op_type("Add");
  n1->set_name("add");
  n1->add_input("x");
  n1->add_input("y");
  n1->add_output("s");
  auto* n2 = g->add_node();
  n2->set_op_type("Mul");
  n2->set_name("mul");
  n2->add_input("s");
  n2->add_input("x");
  n2->add_output("z");
  const std::string bytes = m.SerializeAsString();
  Session sess(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()));
  ASSERT_EQ(sess.inputs().size(), 2u);
  EXPECT_EQ(sess.inputs()[0].dim_names[0], "N");
  for (int rep = 0; rep < 3; ++rep) {
    auto outs = sess.run({{"x", Tensor::from_vector<float>({1, 2, 3})}, {"y", Tensor::from_vector<float>({4, 5, 6})}});
    expect_values(outs[0], {5, 14, 27});
  }
  std::string msg;
  EXPECT_EQ(code_of([&] { sess.run({{"x", Tensor::from_vector<float>({1, 2, 3})}}); }, &msg),
            ErrorCode::invalid_argument);
  EXPECT_NE(msg.find("missing required input 'y'"), std::string::npos) << msg;
}

}  // namespace
}  // namespace tessera
