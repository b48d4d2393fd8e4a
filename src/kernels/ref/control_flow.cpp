// Reference kernels: control_flow family (If, Loop, Scan). Bodies run through
// KernelContext::run_subgraph, inputs bound positionally to the body's inputs.
#include <algorithm>
#include <string>

#include "kernels/ref/misc_util.h"
#include "kernels/ref/registry.h"

namespace tessera::kernels::ref {
namespace {

using namespace misc;

const Subgraph& graph_attr(const KernelContext& ctx, const char* name) {
  const Attribute* a = ctx.attr(name);
  if (!a || a->kind != Attribute::Kind::g || !a->g)
    ctx.fail(ErrorCode::invalid_model, "required graph attribute '", name, "' is missing");
  return *a->g;
}

// Copies elements typed (so strings work too).
template <typename F>
void copy_typed(DType t, F&& f) {
  dispatch_dtype(t, [&]<typename T>() { f.template operator()<T>(); });
}

// Slice `index` of `t` along `axis`, dropping that axis.
Tensor take_slice(const Tensor& src, int64_t axis, int64_t index) {
  const Tensor t = src.contiguous();
  Shape os = t.shape();
  const int64_t L = os[size_t(axis)];
  os.erase(os.begin() + axis);
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= t.dim(d);
  for (int64_t d = axis + 1; d < t.rank(); ++d) inner *= t.dim(d);
  Tensor out(t.dtype(), os);
  copy_typed(t.dtype(), [&]<typename T>() {
    const T* s = static_cast<const T*>(t.raw_data());
    T* o = static_cast<T*>(out.raw_data());
    for (int64_t a = 0; a < outer; ++a)
      for (int64_t i = 0; i < inner; ++i) o[a * inner + i] = s[(a * L + index) * inner + i];
  });
  return out;
}

// Stacks equal-shaped parts along a new axis.
Tensor stack(const KernelContext& ctx, const std::vector<Tensor>& parts, int64_t axis, const char* what) {
  ctx.check(!parts.empty(), "internal: stacking nothing");
  const Shape& ps = parts[0].shape();
  const DType dt = parts[0].dtype();
  for (const Tensor& p : parts)
    ctx.check(p.shape() == ps && p.dtype() == dt, what,
              " changes type or shape across iterations: ", parts[0].text(), " vs ", p.text());
  const int64_t r = int64_t(ps.size()) + 1;
  ctx.check(axis >= -r && axis < r, what, " axis ", axis, " out of range for rank ", r);
  if (axis < 0) axis += r;
  Shape os = ps;
  const int64_t L = int64_t(parts.size());
  os.insert(os.begin() + axis, L);
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= ps[size_t(d)];
  for (size_t d = size_t(axis); d < ps.size(); ++d) inner *= ps[d];
  Tensor out(dt, os);
  copy_typed(dt, [&]<typename T>() {
    T* o = static_cast<T*>(out.raw_data());
    for (int64_t t = 0; t < L; ++t) {
      const Tensor c = parts[size_t(t)].contiguous();
      const T* s = static_cast<const T*>(c.raw_data());
      for (int64_t a = 0; a < outer; ++a)
        for (int64_t i = 0; i < inner; ++i) o[(a * L + t) * inner + i] = s[a * inner + i];
    }
  });
  return out;
}

bool truth(const KernelContext& ctx, const DataValue& v, const char* what) {
  ctx.check(v.is_tensor() && v.tensor.numel() == 1, what, " must be a single-element tensor");
  return v.tensor.at_double(0) != 0;
}

void if_op(KernelContext& ctx) {
  const Tensor& c = ctx.required_input(0);
  ctx.check(c.numel() == 1, "cond must have exactly one element, got ", c.text());
  const bool take = c.at_double(0) != 0;
  const Subgraph& g = graph_attr(ctx, take ? "then_branch" : "else_branch");
  std::vector<DataValue> outs = ctx.run_subgraph(g, {});
  ctx.check(outs.size() == ctx.num_outputs(), "branch returned ", outs.size(), " values, node has ",
            ctx.num_outputs(), " outputs");
  for (size_t i = 0; i < outs.size(); ++i) ctx.set_output(i, std::move(outs[i]));
}

void loop(KernelContext& ctx) {
  const Subgraph& body = graph_attr(ctx, "body");
  const Tensor* m = ctx.input(0);
  if (m && m->numel() == 0) m = nullptr;
  const Tensor* c = ctx.num_inputs() > 1 ? ctx.input(1) : nullptr;
  if (c && c->numel() == 0) c = nullptr;
  int64_t max_trip = -1;
  if (m) {
    ctx.check(m->numel() == 1 && is_integer(m->dtype()), "M must be an integer scalar, got ", m->text());
    max_trip = m->at_int(0);
  }
  bool cond = true;
  if (c) cond = c->at_double(0) != 0;
  const size_t n_carried = ctx.num_inputs() >= 2 ? ctx.num_inputs() - 2 : 0;
  std::vector<DataValue> carried(n_carried);
  for (size_t i = 0; i < n_carried; ++i) {
    const DataValue* v = ctx.input_value(i + 2);
    carried[i] = v ? *v : DataValue::make_optional_none();
  }
  ctx.check(ctx.num_outputs() >= n_carried, "Loop has fewer outputs than loop-carried values");
  const size_t n_scan = ctx.num_outputs() - n_carried;
  std::vector<std::vector<Tensor>> scans(n_scan);
  ctx.check(max_trip >= 0 || c, "Loop with neither M nor cond would never end");
  for (int64_t i = 0; (max_trip < 0 || i < max_trip) && cond; ++i) {
    std::vector<DataValue> in;
    in.reserve(n_carried + 2);
    in.emplace_back(Tensor::scalar<int64_t>(i));
    in.emplace_back(Tensor::scalar<bool>(cond));
    for (const DataValue& v : carried) in.push_back(v);
    std::vector<DataValue> out = ctx.run_subgraph(body, in);
    ctx.check(out.size() == 1 + n_carried + n_scan, "body returned ", out.size(), " values, expected ",
              1 + n_carried + n_scan);
    const bool next = truth(ctx, out[0], "body's condition output");
    if (c) cond = next;  // without a cond input the body's condition is ignored
    for (size_t k = 0; k < n_carried; ++k) carried[k] = std::move(out[1 + k]);
    for (size_t k = 0; k < n_scan; ++k) {
      ctx.check(out[1 + n_carried + k].is_tensor(), "scan output ", k, " must be a tensor");
      scans[k].push_back(out[1 + n_carried + k].tensor);
    }
  }
  for (size_t k = 0; k < n_carried; ++k) ctx.set_output(k, std::move(carried[k]));
  for (size_t k = 0; k < n_scan; ++k) {
    if (scans[k].empty())
      ctx.output(n_carried + k, DType::f32, {0});  // type unknown without iterations
    else
      ctx.set_output(n_carried + k, stack(ctx, scans[k], 0, "Loop scan output"));
  }
}

// Scan (opset 9+): no batch dimension, per-input axes and directions.
void scan9(KernelContext& ctx) {
  const Subgraph& body = graph_attr(ctx, "body");
  const int64_t M = ctx.required_attr_int("num_scan_inputs");
  ctx.check(M >= 1 && size_t(M) <= ctx.num_inputs(), "num_scan_inputs ", M, " out of range");
  const size_t N = ctx.num_inputs() - size_t(M);
  ctx.check(ctx.num_outputs() >= N, "Scan has fewer outputs than state variables");
  const size_t K = ctx.num_outputs() - N;
  const std::vector<int64_t> in_axes = ctx.attr_ints("scan_input_axes", std::vector<int64_t>(size_t(M), 0));
  const std::vector<int64_t> in_dirs =
      ctx.attr_ints("scan_input_directions", std::vector<int64_t>(size_t(M), 0));
  const std::vector<int64_t> out_axes = ctx.attr_ints("scan_output_axes", std::vector<int64_t>(K, 0));
  const std::vector<int64_t> out_dirs = ctx.attr_ints("scan_output_directions", std::vector<int64_t>(K, 0));
  ctx.check(in_axes.size() == size_t(M) && in_dirs.size() == size_t(M), "scan_input_axes/directions need ", M,
            " values");
  ctx.check(out_axes.size() == K && out_dirs.size() == K, "scan_output_axes/directions need ", K, " values");
  std::vector<DataValue> state(N);
  for (size_t i = 0; i < N; ++i) {
    const DataValue* v = ctx.input_value(i);
    ctx.check(v != nullptr, "state input ", i, " is missing");
    state[i] = *v;
  }
  std::vector<const Tensor*> xs(static_cast<size_t>(M));
  std::vector<int64_t> axes(static_cast<size_t>(M));
  int64_t L = -1;
  for (int64_t j = 0; j < M; ++j) {
    xs[size_t(j)] = &ctx.required_input(N + size_t(j));
    ctx.check(xs[size_t(j)]->rank() >= 1, "scan input ", j, " is a scalar: it has no sequence axis");
    axes[size_t(j)] = norm_axis(ctx, in_axes[size_t(j)], xs[size_t(j)]->rank(), "scan_input_axes value");
    const int64_t len = xs[size_t(j)]->dim(axes[size_t(j)]);
    ctx.check(L < 0 || len == L, "scan inputs have different sequence lengths ", L, " and ", len);
    L = len;
  }
  std::vector<std::vector<Tensor>> outs(K);
  for (int64_t t = 0; t < L; ++t) {
    std::vector<DataValue> in = state;
    for (int64_t j = 0; j < M; ++j)
      in.emplace_back(take_slice(*xs[size_t(j)], axes[size_t(j)], in_dirs[size_t(j)] ? L - 1 - t : t));
    std::vector<DataValue> r = ctx.run_subgraph(body, in);
    ctx.check(r.size() == N + K, "body returned ", r.size(), " values, expected ", N + K);
    for (size_t i = 0; i < N; ++i) state[i] = std::move(r[i]);
    for (size_t k = 0; k < K; ++k) {
      ctx.check(r[N + k].is_tensor(), "scan output ", k, " must be a tensor");
      outs[k].push_back(r[N + k].tensor);
    }
  }
  for (size_t i = 0; i < N; ++i) ctx.set_output(i, std::move(state[i]));
  for (size_t k = 0; k < K; ++k) {
    if (outs[k].empty()) {
      ctx.output(N + k, DType::f32, {0});
      continue;
    }
    if (out_dirs[k]) std::reverse(outs[k].begin(), outs[k].end());
    ctx.set_output(N + k, stack(ctx, outs[k], out_axes[k], "Scan output"));
  }
}

// Scan-8: input 0 is optional sequence_lens; every state/scan input has a
// leading batch dimension and scan inputs are [batch, seq, ...].
void scan8(KernelContext& ctx) {
  const Subgraph& body = graph_attr(ctx, "body");
  const int64_t M = ctx.required_attr_int("num_scan_inputs");
  ctx.check(M >= 1 && size_t(M) + 1 <= ctx.num_inputs(), "num_scan_inputs ", M, " out of range");
  const size_t N = ctx.num_inputs() - 1 - size_t(M);
  ctx.check(ctx.num_outputs() >= N, "Scan has fewer outputs than state variables");
  const size_t K = ctx.num_outputs() - N;
  const std::vector<int64_t> dirs = ctx.attr_ints("directions", std::vector<int64_t>(size_t(M), 0));
  ctx.check(dirs.size() == size_t(M), "directions needs ", M, " values");
  const Tensor& x0 = ctx.required_input(1 + N);
  ctx.check(x0.rank() >= 2, "scan inputs must be [batch, sequence, ...]");
  const int64_t B = x0.dim(0), L = x0.dim(1);
  std::vector<int64_t> lens(static_cast<size_t>(B), L);
  if (const Tensor* sl = ctx.input(0); sl && sl->numel() > 0) {
    ctx.check(sl->numel() == B, "sequence_lens must have batch_size values");
    lens = sl->to_int_vector();
    for (int64_t l : lens) ctx.check(l >= 0 && l <= L, "sequence_lens value ", l, " outside [0, ", L, "]");
  }
  for (int64_t j = 0; j < M; ++j) {
    const Tensor& x = ctx.required_input(1 + N + size_t(j));
    ctx.check(x.rank() >= 2 && x.dim(0) == B && x.dim(1) == L, "scan input ", j, " must be [", B, ", ", L,
              ", ...]");
  }
  std::vector<std::vector<Tensor>> fin_state(N), scan_out(K);
  for (int64_t b = 0; b < B; ++b) {
    std::vector<DataValue> state(N);
    for (size_t i = 0; i < N; ++i) state[i] = take_slice(ctx.required_input(1 + i), 0, b);
    std::vector<Tensor> xb;
    for (int64_t j = 0; j < M; ++j) xb.push_back(take_slice(ctx.required_input(1 + N + size_t(j)), 0, b));
    std::vector<std::vector<Tensor>> outs(K);
    const int64_t lb = lens[size_t(b)];
    for (int64_t t = 0; t < lb; ++t) {
      std::vector<DataValue> in = state;
      for (int64_t j = 0; j < M; ++j)
        in.emplace_back(take_slice(xb[size_t(j)], 0, dirs[size_t(j)] ? lb - 1 - t : t));
      std::vector<DataValue> r = ctx.run_subgraph(body, in);
      ctx.check(r.size() == N + K, "body returned ", r.size(), " values, expected ", N + K);
      for (size_t i = 0; i < N; ++i) state[i] = std::move(r[i]);
      for (size_t k = 0; k < K; ++k) {
        ctx.check(r[N + k].is_tensor(), "scan output ", k, " must be a tensor");
        outs[k].push_back(r[N + k].tensor);
      }
    }
    for (size_t i = 0; i < N; ++i) {
      ctx.check(state[i].is_tensor(), "Scan-8 states must be tensors");
      fin_state[i].push_back(state[i].tensor);
    }
    for (size_t k = 0; k < K; ++k) {
      ctx.check(!outs[k].empty(), "Scan-8 with an empty sequence is not supported");
      // Pad short sequences with zeros up to L.
      while (int64_t(outs[k].size()) < L) outs[k].push_back(Tensor(outs[k][0].dtype(), outs[k][0].shape()));
      scan_out[k].push_back(stack(ctx, outs[k], 0, "Scan output"));
    }
  }
  for (size_t i = 0; i < N; ++i) ctx.set_output(i, stack(ctx, fin_state[i], 0, "Scan state"));
  for (size_t k = 0; k < K; ++k) ctx.set_output(N + k, stack(ctx, scan_out[k], 0, "Scan output"));
}

void scan(KernelContext& ctx) {
  if (ctx.opset() < 9)
    scan8(ctx);
  else
    scan9(ctx);
}

}  // namespace

void register_control_flow_kernels(KernelTable& t) {
  t.add("If", if_op);
  t.add("Loop", loop);
  t.add("Scan", scan);
}

}  // namespace tessera::kernels::ref
