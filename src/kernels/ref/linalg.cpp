// Reference kernels: linalg family (MatMul, Gemm, Einsum, Det). Every value is
// read as double and accumulated in double; outputs are rounded once.
#include <algorithm>
#include <cmath>
#include <map>

#include "kernels/ref/nn_util.h"
#include "kernels/ref/registry.h"

namespace tessera::kernels::ref {

namespace {

void matmul_kernel(KernelContext& ctx) {
  const Tensor& a = ctx.required_input(0);
  const Tensor& b = ctx.required_input(1);
  ctx.check(a.dtype() == b.dtype(), "operands have different types: ", a.text(), " and ", b.text());
  ctx.check(a.rank() >= 1 && b.rank() >= 1, "operands must have rank >= 1, got ", a.text(), " and ",
            b.text());
  Shape sa = a.shape(), sb = b.shape();
  const bool a1 = sa.size() == 1, b1 = sb.size() == 1;
  if (a1) sa.insert(sa.begin(), 1);
  if (b1) sb.push_back(1);
  const int64_t m = sa[sa.size() - 2], k = sa.back(), n = sb.back();
  ctx.check(sb[sb.size() - 2] == k, "inner dimensions differ: ", a.text(), " x ", b.text());
  const Shape ba(sa.begin(), sa.end() - 2), bb(sb.begin(), sb.end() - 2);
  const Shape batch = nn_broadcast(ctx, ba, bb);
  const std::vector<int64_t> ia = nn_broadcast_index(ba, batch), ib = nn_broadcast_index(bb, batch);
  const int64_t nb = nn_prod(batch);
  const std::vector<double> va = nn_load(a), vb = nn_load(b);
  std::vector<double> out = out_buffer(ctx, nn_prod(Shape{nb, m, n}), 0.0);
  for (int64_t p = 0; p < nb; ++p) {
    const double* pa = va.data() + ia[size_t(p)] * m * k;
    const double* pb = vb.data() + ib[size_t(p)] * k * n;
    double* po = out.data() + p * m * n;
    // i-q-j order walks B and the output row contiguously; each output
    // element still sums its k products in order, in double.
    for (int64_t i = 0; i < m; ++i)
      for (int64_t q = 0; q < k; ++q) {
        const double x = pa[i * k + q];
        for (int64_t j = 0; j < n; ++j) po[i * n + j] += x * pb[q * n + j];
      }
  }
  Shape os = batch;
  if (!a1) os.push_back(m);
  if (!b1) os.push_back(n);
  nn_emit(ctx, 0, a.dtype(), os, out);
}

void gemm_kernel(KernelContext& ctx) {
  const Tensor& a = ctx.required_input(0);
  const Tensor& b = ctx.required_input(1);
  const Tensor* c = ctx.has_input(2) ? ctx.input(2) : nullptr;
  ctx.check(a.rank() == 2 && b.rank() == 2, "A and B must be 2-D, got ", a.text(), " and ", b.text());
  ctx.check(a.dtype() == b.dtype(), "A and B have different types");
  const bool ta = ctx.attr_int("transA", 0) != 0, tb = ctx.attr_int("transB", 0) != 0;
  const double alpha = ctx.attr_float("alpha", 1.0f), beta = ctx.attr_float("beta", 1.0f);
  const int64_t m = ta ? a.dim(1) : a.dim(0), k = ta ? a.dim(0) : a.dim(1);
  const int64_t kb = tb ? b.dim(1) : b.dim(0), n = tb ? b.dim(0) : b.dim(1);
  ctx.check(k == kb, "inner dimensions differ: A ", a.text(), " B ", b.text(), " transA=", ta,
            " transB=", tb);
  const std::vector<double> va = nn_load(a), vb = nn_load(b);
  std::vector<double> out = out_buffer(ctx, nn_prod(Shape{m, n}), 0.0);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double acc = 0;
      for (int64_t q = 0; q < k; ++q) {
        const double x = ta ? va[size_t(q * m + i)] : va[size_t(i * k + q)];
        const double y = tb ? vb[size_t(j * k + q)] : vb[size_t(q * n + j)];
        acc += x * y;
      }
      out[size_t(i * n + j)] = alpha * acc;
    }
  if (c) {
    ctx.check(c->rank() <= 2, "C must have rank <= 2, got ", c->text());
    const Shape os{m, n};
    const Shape bs = nn_broadcast(ctx, c->shape(), os);
    ctx.check(bs == os, "C ", c->text(), " does not broadcast to [", m, ",", n, "]");
    const std::vector<int64_t> ic = nn_broadcast_index(c->shape(), os);
    const std::vector<double> vc = nn_load(*c);
    for (size_t i = 0; i < out.size(); ++i) out[i] += beta * vc[size_t(ic[i])];
  }
  nn_emit(ctx, 0, a.dtype(), {m, n}, out);
}

// ---- Einsum ----
// Labels are letters; the dims an ellipsis stands for get labels 1, 2, ...
// (aligned from the right across operands, numpy style).
struct EinsumTerm {
  std::vector<int> labels;  // one per axis
};

std::vector<int> einsum_labels(const KernelContext& ctx, const std::string& term, int64_t rank, int ell_rank,
                               bool is_output) {
  std::vector<int> labels;
  const size_t dot = term.find("...");
  size_t letters = 0;
  for (char ch : term)
    if (ch != '.') {
      ctx.check(std::isalpha(static_cast<unsigned char>(ch)), "invalid character '", ch, "' in equation");
      ++letters;
    }
  int64_t er = 0;
  if (dot != std::string::npos) {
    ctx.check(term.find("...", dot + 3) == std::string::npos, "term '", term, "' has more than one ellipsis");
    er = is_output ? ell_rank : rank - int64_t(letters);
    ctx.check(er >= 0, "term '", term, "' has more labels than the operand's rank ", rank);
  } else {
    ctx.check(is_output || int64_t(letters) == rank, "term '", term, "' does not match operand rank ", rank);
  }
  for (size_t p = 0; p < term.size(); ++p) {
    if (term[p] == '.') {
      if (p == dot) {
        for (int64_t e = 0; e < er; ++e) labels.push_back(int(ell_rank - er + e) + 1);  // right-aligned
        p += 2;
      }
      continue;
    }
    labels.push_back(int(static_cast<unsigned char>(term[p])));
  }
  return labels;
}

void einsum_kernel(KernelContext& ctx) {
  std::string eq;
  for (char ch : ctx.attr_string("equation", ""))
    if (ch != ' ') eq += ch;
  ctx.check(!eq.empty(), "attribute 'equation' is required");
  const size_t arrow = eq.find("->");
  const std::string lhs = arrow == std::string::npos ? eq : eq.substr(0, arrow);
  std::vector<std::string> terms;
  for (size_t start = 0;;) {
    const size_t comma = lhs.find(',', start);
    terms.push_back(lhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  const size_t nin = ctx.num_inputs();
  ctx.check(terms.size() == nin, "equation has ", terms.size(), " operands but the node has ", nin,
            " inputs");
  std::vector<const Tensor*> ins;
  int ell_rank = 0;
  for (size_t i = 0; i < nin; ++i) {
    ins.push_back(&ctx.required_input(i));
    ctx.check(ins[i]->dtype() == ins[0]->dtype(), "operands have different types");
    if (terms[i].find("...") != std::string::npos) {
      int64_t letters = 0;
      for (char ch : terms[i]) letters += ch != '.';
      ell_rank = std::max<int>(ell_rank, int(ins[i]->rank() - letters));
    }
  }
  std::vector<std::vector<int>> labels(nin);
  std::map<int, int64_t> size;  // label -> extent
  std::map<int, int> count;
  for (size_t i = 0; i < nin; ++i) {
    labels[i] = einsum_labels(ctx, terms[i], ins[i]->rank(), ell_rank, false);
    std::map<int, bool> seen;
    for (size_t d = 0; d < labels[i].size(); ++d) {
      const int l = labels[i][d];
      const int64_t ext = ins[i]->dim(int64_t(d));
      auto it = size.find(l);
      if (it == size.end() || it->second == 1)
        size[l] = ext;
      else
        ctx.check(ext == it->second || ext == 1, "label '", l < 32 ? '.' : char(l), "' has extents ",
                  it->second, " and ", ext);
      if (!seen[l]) count[l]++;
      seen[l] = true;
    }
  }
  std::vector<int> out_labels;
  if (arrow != std::string::npos) {
    out_labels = einsum_labels(ctx, eq.substr(arrow + 2), 0, ell_rank, true);
    for (size_t i = 0; i < out_labels.size(); ++i) {
      const int l = out_labels[i];
      ctx.check(size.count(l) > 0, "output label '", char(l), "' is not in any input");
      ctx.check(std::count(out_labels.begin(), out_labels.end(), l) == 1, "output label '", char(l),
                "' appears more than once");
    }
  } else {
    for (int e = 1; e <= ell_rank; ++e)
      if (size.count(e)) out_labels.push_back(e);
    for (auto& [l, c] : count) {
      int total = 0;  // implicit mode: labels appearing exactly once overall (counting repeats)
      for (auto& lab : labels) total += int(std::count(lab.begin(), lab.end(), l));
      if (l > 32 && total == 1) out_labels.push_back(l);
    }
  }
  // All labels: output first, then summed ones.
  std::vector<int> all = out_labels;
  for (auto& [l, s] : size)
    if (std::find(all.begin(), all.end(), l) == all.end()) all.push_back(l);
  std::map<int, size_t> pos;
  for (size_t i = 0; i < all.size(); ++i) pos[all[i]] = i;
  // Per-operand strides over the label space (0 for broadcast dims).
  std::vector<std::vector<int64_t>> strides(nin, std::vector<int64_t>(all.size(), 0));
  std::vector<std::vector<double>> vals(nin);
  for (size_t i = 0; i < nin; ++i) {
    vals[i] = nn_load(*ins[i]);
    const std::vector<int64_t> cs = contiguous_strides(ins[i]->shape());
    for (size_t d = 0; d < labels[i].size(); ++d)
      if (ins[i]->dim(int64_t(d)) != 1 || size[labels[i][d]] == 1) strides[i][pos[labels[i][d]]] += cs[d];
  }
  Shape os;
  for (int l : out_labels) os.push_back(size[l]);
  const int64_t nout = nn_prod(os);
  std::vector<double> out = out_buffer(ctx, nout, 0.0);
  std::vector<int64_t> ext;
  for (int l : all) ext.push_back(size[l]);
  const int64_t total = nn_prod(ext);
  std::vector<int64_t> coord(all.size(), 0);
  for (int64_t f = 0; f < total; ++f) {
    double prod = 1.0;
    for (size_t i = 0; i < nin; ++i) {
      int64_t off = 0;
      for (size_t d = 0; d < all.size(); ++d) off += coord[d] * strides[i][d];
      prod *= vals[i][size_t(off)];
    }
    int64_t o = 0;
    for (size_t d = 0; d < out_labels.size(); ++d) o = o * ext[d] + coord[d];
    out[size_t(o)] += prod;
    for (size_t d = all.size(); d-- > 0;) {
      if (++coord[d] < ext[d]) break;
      coord[d] = 0;
    }
  }
  nn_emit(ctx, 0, ins[0]->dtype(), os, out);
}

void det_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.required_input(0);
  nn_require_float(ctx, x, "input");
  ctx.check(x.rank() >= 2 && x.dim(-1) == x.dim(-2), "input must be [..., M, M], got ", x.text());
  const int64_t n = x.dim(-1);
  const Shape os(x.shape().begin(), x.shape().end() - 2);
  const int64_t nb = nn_prod(os);
  const std::vector<double> v = nn_load(x);
  std::vector<double> out = out_buffer(ctx, nb);
  for (int64_t b = 0; b < nb; ++b) {
    std::vector<double> m(v.begin() + b * n * n, v.begin() + (b + 1) * n * n);
    double det = 1.0;
    for (int64_t c = 0; c < n; ++c) {  // LU with partial pivoting
      int64_t piv = c;
      for (int64_t r = c + 1; r < n; ++r)
        if (std::fabs(m[size_t(r * n + c)]) > std::fabs(m[size_t(piv * n + c)])) piv = r;
      if (piv != c) {
        for (int64_t k = 0; k < n; ++k) std::swap(m[size_t(c * n + k)], m[size_t(piv * n + k)]);
        det = -det;
      }
      const double d = m[size_t(c * n + c)];
      det *= d;
      if (d == 0.0) break;
      for (int64_t r = c + 1; r < n; ++r) {
        const double f = m[size_t(r * n + c)] / d;
        for (int64_t k = c; k < n; ++k) m[size_t(r * n + k)] -= f * m[size_t(c * n + k)];
      }
    }
    out[size_t(b)] = det;
  }
  nn_emit(ctx, 0, x.dtype(), os, out);
}

}  // namespace

void register_linalg_kernels(KernelTable& t) {
  t.add("MatMul", matmul_kernel);
  t.add("Gemm", gemm_kernel);
  t.add("Einsum", einsum_kernel);
  t.add("Det", det_kernel);
}

}  // namespace tessera::kernels::ref
