// Reference kernels: text family (StringNormalizer, StringConcat, StringSplit,
// RegexFullMatch). Strings are UTF-8 bytes; case changes touch ASCII letters only.
#include <algorithm>
#include <cctype>
#include <regex>
#include <set>

#include "kernels/ref/broadcast.h"
#include "kernels/ref/registry.h"

namespace tessera::kernels::ref {
namespace {

std::string lower(std::string s) {
  for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}
std::string upper(std::string s) {
  for (char& c : s) c = char(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

const Tensor& string_input(KernelContext& ctx, size_t i) {
  const Tensor& t = ctx.required_input(i);
  ctx.check(t.dtype() == DType::string, "input ", i, " must be a string tensor, got ", dtype_name(t.dtype()));
  return t;
}

// StringNormalizer: X is [C] or [1, C]. Drops stop words (compared case-
// insensitively unless is_case_sensitive), then changes case. An empty result
// is a single empty string.
void string_normalizer_kernel(KernelContext& ctx) {
  const Tensor x = string_input(ctx, 0).contiguous();
  ctx.check(x.rank() == 1 || (x.rank() == 2 && x.dim(0) == 1), "input must be [C] or [1, C], got ",
            shape_str(x.shape()));
  const std::string action = ctx.attr_string("case_change_action", "NONE");
  ctx.check(action == "NONE" || action == "LOWER" || action == "UPPER",
            "case_change_action must be NONE, LOWER or UPPER, got '", action, "'");
  const bool case_sensitive = ctx.attr_int("is_case_sensitive", 0) != 0;
  std::set<std::string> stops;
  for (const std::string& w : ctx.attr_strings("stopwords")) stops.insert(case_sensitive ? w : lower(w));
  std::vector<std::string> kept;
  const std::string* p = x.data<std::string>();
  for (int64_t i = 0; i < x.numel(); ++i) {
    if (stops.count(case_sensitive ? p[i] : lower(p[i]))) continue;
    kept.push_back(action == "LOWER" ? lower(p[i]) : action == "UPPER" ? upper(p[i]) : p[i]);
  }
  if (kept.empty()) kept.push_back("");
  const int64_t n = int64_t(kept.size());
  Tensor& y = ctx.output(0, DType::string, x.rank() == 1 ? Shape{n} : Shape{1, n});
  std::copy(kept.begin(), kept.end(), y.data<std::string>());
}

void string_concat_kernel(KernelContext& ctx) {
  const Tensor a = string_input(ctx, 0).contiguous();
  const Tensor b = string_input(ctx, 1).contiguous();
  Shape out;
  try {
    out = broadcast_shape(a.shape(), b.shape());
  } catch (const Error& e) {
    ctx.fail(ErrorCode::invalid_argument, e.message());
  }
  Tensor& y = ctx.output(0, DType::string, out);
  const std::string* pa = a.data<std::string>();
  const std::string* pb = b.data<std::string>();
  std::string* py = y.data<std::string>();
  BroadcastIndexer(out, {a.shape(), b.shape()}).for_each([&](int64_t o, const int64_t* in) {
    py[o] = pa[in[0]] + pb[in[1]];
  });
}

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

// Python's str.split: with a delimiter, every occurrence splits (empty pieces
// kept); without one, runs of whitespace split and leading whitespace is
// dropped (trailing too, unless maxsplit stops the splitting first). maxsplit < 0: no limit.
std::vector<std::string> split(const std::string& s, const std::string& delim, int64_t maxsplit) {
  std::vector<std::string> parts;
  if (!delim.empty()) {
    size_t start = 0;
    while (maxsplit < 0 || int64_t(parts.size()) < maxsplit) {
      const size_t pos = s.find(delim, start);
      if (pos == std::string::npos) break;
      parts.push_back(s.substr(start, pos - start));
      start = pos + delim.size();
    }
    parts.push_back(s.substr(start));
    return parts;
  }
  size_t i = 0;
  const size_t n = s.size();
  while (true) {
    while (i < n && is_space(s[i])) ++i;
    if (i >= n) break;
    if (maxsplit >= 0 && int64_t(parts.size()) == maxsplit) {
      parts.push_back(s.substr(i));  // the rest, trailing whitespace included
      break;
    }
    size_t j = i;
    while (j < n && !is_space(s[j])) ++j;
    parts.push_back(s.substr(i, j - i));
    i = j;
  }
  return parts;
}

// StringSplit(X) -> Y [X.shape..., max pieces] padded with "", Z [X.shape] piece counts.
void string_split_kernel(KernelContext& ctx) {
  const Tensor x = string_input(ctx, 0).contiguous();
  const std::string delim = ctx.attr_string("delimiter", "");
  const int64_t maxsplit = ctx.has_attr("maxsplit") ? ctx.attr_int("maxsplit", -1) : -1;
  ctx.check(!ctx.has_attr("maxsplit") || maxsplit >= 0, "maxsplit must be non-negative, got ", maxsplit);
  std::vector<std::vector<std::string>> pieces(size_t(x.numel()));
  size_t width = 0;
  const std::string* p = x.data<std::string>();
  for (int64_t i = 0; i < x.numel(); ++i) {
    pieces[size_t(i)] = split(p[i], delim, maxsplit);
    width = std::max(width, pieces[size_t(i)].size());
  }
  Shape ys = x.shape();
  ys.push_back(int64_t(width));
  Tensor& y = ctx.output(0, DType::string, ys);
  std::string* py = y.data<std::string>();
  for (size_t i = 0; i < pieces.size(); ++i)
    for (size_t j = 0; j < pieces[i].size(); ++j) py[i * width + j] = pieces[i][j];
  if (ctx.num_outputs() > 1 && ctx.output_requested(1)) {
    Tensor& z = ctx.output(1, DType::i64, x.shape());
    for (size_t i = 0; i < pieces.size(); ++i) z.data<int64_t>()[i] = int64_t(pieces[i].size());
  }
}

void regex_full_match_kernel(KernelContext& ctx) {
  const Tensor x = string_input(ctx, 0).contiguous();
  const std::string pattern = ctx.attr_string("pattern", "");
  std::regex re;
  try {
    re = std::regex(pattern, std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    ctx.fail(ErrorCode::invalid_model, "invalid pattern '", pattern, "': ", e.what());
  }
  Tensor& y = ctx.output(0, DType::boolean, x.shape());
  const std::string* p = x.data<std::string>();
  for (int64_t i = 0; i < x.numel(); ++i) y.data<bool>()[i] = std::regex_match(p[i], re);
}

}  // namespace

void register_text_kernels(KernelTable& t) {
  t.add("StringNormalizer", string_normalizer_kernel);
  t.add("StringConcat", string_concat_kernel);
  t.add("StringSplit", string_split_kernel);
  t.add("RegexFullMatch", regex_full_match_kernel);
}

}  // namespace tessera::kernels::ref
