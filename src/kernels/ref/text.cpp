// Reference kernels: text family (StringNormalizer, StringConcat, StringSplit,
// RegexFullMatch, TfIdfVectorizer). Strings are UTF-8 bytes; case changes touch ASCII letters only.
#include <algorithm>
#include <cctype>
#include <map>
#include <regex>
#include <set>

#include "kernels/ref/broadcast.h"
#include "kernels/ref/nn_util.h"
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
            shape_text(x.shape()));
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

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

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

// TfIdfVectorizer: counts the pool's n-grams (with skips) in each row of X and
// weights the counts (TF: counts; IDF: weight if present; TFIDF: weight * count).
// The pool lists all 1-grams, then all 2-grams, ...: ngram_counts[i] is where
// the (i+1)-grams start; n-gram ids count up from 1 in pool order.
template <typename Key>
void tfidf_rows(KernelContext& ctx, const std::vector<Key>& pool, const std::vector<std::vector<Key>>& rows,
                std::vector<int64_t>& freq, int64_t out_size) {
  const std::vector<int64_t> counts = ctx.attr_ints("ngram_counts");
  const std::vector<int64_t> indexes = ctx.attr_ints("ngram_indexes");
  const int64_t min_n = ctx.attr_int("min_gram_length", 1), max_n = ctx.attr_int("max_gram_length", 1);
  const int64_t max_skip = ctx.attr_int("max_skip_count", 0);
  ctx.check(min_n >= 1 && max_n >= min_n, "invalid gram lengths [", min_n, ", ", max_n, "]");
  ctx.check(max_skip >= 0, "max_skip_count must be non-negative");
  std::map<std::vector<Key>, int64_t> ids;
  int64_t id = 1;
  for (size_t i = 0; i < counts.size(); ++i) {
    const int64_t n = int64_t(i) + 1;
    const int64_t begin = counts[i], end = i + 1 < counts.size() ? counts[i + 1] : int64_t(pool.size());
    ctx.check(begin >= 0 && begin <= end && end <= int64_t(pool.size()),
              "ngram_counts are inconsistent with the pool");
    const int64_t grams = (end - begin) / n;
    for (int64_t g = 0; g < grams; ++g, ++id)
      if (n >= min_n && n <= max_n)
        ids[std::vector<Key>(pool.begin() + begin + g * n, pool.begin() + begin + (g + 1) * n)] = id;
  }
  for (const auto& [gram, gid] : ids)
    ctx.check(gid - 1 < int64_t(indexes.size()), "ngram_indexes has no entry for n-gram ", gid - 1);
  for (size_t r = 0; r < rows.size(); ++r) {
    const std::vector<Key>& row = rows[r];
    const int64_t len = int64_t(row.size());
    int64_t first_n = min_n;
    // a skip of len or more reaches no second token: max_skip_count = 2^31 - 1 looped two billion times
    const int64_t last_skip = std::min(max_skip + 1, std::max<int64_t>(len - 1, 1));
    for (int64_t skip = 1; skip <= last_skip; ++skip) {
      for (int64_t start = 0; start < len; ++start) {
        std::vector<Key> gram;
        for (int64_t n = 1; n <= max_n; ++n) {
          const int64_t at = start + (n - 1) * skip;
          if (at >= len) break;
          gram.push_back(row[size_t(at)]);
          if (n < first_n) continue;
          auto it = ids.find(gram);
          if (it != ids.end()) ++freq[r * size_t(out_size) + size_t(indexes[size_t(it->second - 1)])];
        }
      }
      if (first_n == 1) {
        ++first_n;  // 1-grams are counted once, not once per skip distance
        if (first_n > max_n) break;
      }
    }
  }
}

void tfidf_kernel(KernelContext& ctx) {
  const Tensor x = ctx.required_input(0).contiguous();
  ctx.check(x.rank() == 1 || x.rank() == 2, "input must be [C] or [N, C], got ", shape_text(x.shape()));
  const std::string mode = ctx.attr_string("mode", "");
  ctx.check(mode == "TF" || mode == "IDF" || mode == "TFIDF", "mode must be TF, IDF or TFIDF, got '", mode,
            "'");
  const std::vector<int64_t> indexes = ctx.attr_ints("ngram_indexes");
  ctx.check(!indexes.empty(), "ngram_indexes is empty");
  int64_t out_size = 0;
  for (int64_t i : indexes) {
    ctx.check(i >= 0, "ngram_indexes has a negative entry");
    out_size = std::max(out_size, i + 1);
  }
  const int64_t rows = x.rank() == 1 ? 1 : x.dim(0), cols = x.rank() == 1 ? x.dim(0) : x.dim(1);
  check_output_size(ctx, nn_prod(Shape{rows, out_size}));  // before the counts are allocated
  std::vector<int64_t> freq(static_cast<size_t>(rows * out_size), 0);
  if (x.dtype() == DType::string) {
    const std::vector<std::string> pool = ctx.attr_strings("pool_strings");
    std::vector<std::vector<std::string>> r(static_cast<size_t>(rows));
    for (int64_t i = 0; i < rows; ++i)
      r[size_t(i)].assign(x.data<std::string>() + i * cols, x.data<std::string>() + (i + 1) * cols);
    tfidf_rows(ctx, pool, r, freq, out_size);
  } else {
    ctx.check(x.dtype() == DType::i32 || x.dtype() == DType::i64,
              "input must be string, int32 or int64, got ", dtype_name(x.dtype()));
    const std::vector<int64_t> pool = ctx.attr_ints("pool_int64s");
    std::vector<std::vector<int64_t>> r(static_cast<size_t>(rows),
                                        std::vector<int64_t>(static_cast<size_t>(cols)));
    for (int64_t i = 0; i < rows * cols; ++i) r[size_t(i / cols)][size_t(i % cols)] = x.at_int(i);
    tfidf_rows(ctx, pool, r, freq, out_size);
  }
  const std::vector<float> w = ctx.attr_floats("weights");
  ctx.check(w.empty() || int64_t(w.size()) >= out_size, "weights has ", w.size(), " entries, need ",
            out_size);
  Tensor& y = ctx.output(0, DType::f32, x.rank() == 1 ? Shape{out_size} : Shape{rows, out_size});
  float* py = y.data<float>();
  for (size_t p = 0; p < freq.size(); ++p) {
    const float f = float(freq[p]), wi = w.empty() ? 1.f : w[p % size_t(out_size)];
    if (mode == "TF")
      py[p] = f;
    else if (mode == "IDF")
      py[p] = freq[p] > 0 ? wi : 0.f;
    else
      py[p] = wi * f;
  }
}

}  // namespace

void register_text_kernels(KernelTable& t) {
  t.add("TfIdfVectorizer", tfidf_kernel);
  t.add("StringNormalizer", string_normalizer_kernel);
  t.add("StringConcat", string_concat_kernel);
  t.add("StringSplit", string_split_kernel);
  t.add("RegexFullMatch", regex_full_match_kernel);
}

}  // namespace tessera::kernels::ref
