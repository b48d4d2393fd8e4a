// Reference text kernels.
#include <gtest/gtest.h>

#include "tests/unit/kernel_harness.h"

namespace tessera::kernels::ref {
namespace {

using testing::attr_i;
using testing::attr_s;
using testing::run_ref;

std::vector<std::string> strs(const Tensor& t) {
  return std::vector<std::string>(t.data<std::string>(), t.data<std::string>() + t.numel());
}
Tensor S(std::vector<std::string> v, Shape s = {}) { return Tensor::from_vector<std::string>(v, s); }

TEST(RefText, StringNormalizer) {
  Attribute stops;
  stops.kind = Attribute::Kind::strings;
  stops.strings = {"monday"};
  const Tensor x = S({"Monday", "tuesday", "wednesday", "monday"});
  auto run = [&](const Tensor& in, const std::string& action, int cs) {
    return run_ref("StringNormalizer", {in},
                   {{"stopwords", stops}, {"case_change_action", attr_s(action)}, {"is_case_sensitive", attr_i(cs)}})[0]
        .tensor;
  };
  EXPECT_EQ(strs(run(x, "LOWER", 1)), (std::vector<std::string>{"monday", "tuesday", "wednesday"}));
  EXPECT_EQ(strs(run(x, "UPPER", 0)), (std::vector<std::string>{"TUESDAY", "WEDNESDAY"}));
  EXPECT_EQ(strs(run(x, "NONE", 1)), (std::vector<std::string>{"Monday", "tuesday", "wednesday"}));
  const Tensor empty = run(S({"monday", "monday"}), "UPPER", 1);
  EXPECT_EQ(empty.shape(), (Shape{1}));
  EXPECT_EQ(strs(empty), (std::vector<std::string>{""}));
  const Tensor two = run(S({"Monday", "a"}, {1, 2}), "UPPER", 0);
  EXPECT_EQ(two.shape(), (Shape{1, 1}));
  EXPECT_THROW(run(S({"a", "b"}, {2, 1}), "UPPER", 0), Error);
}

TEST(RefText, StringConcatBroadcasts) {
  const Tensor y = run_ref("StringConcat", {S({"a", "b"}, {2, 1}), S({"x", "", "ü"})})[0].tensor;
  EXPECT_EQ(y.shape(), (Shape{2, 3}));
  EXPECT_EQ(strs(y), (std::vector<std::string>{"ax", "a", "aü", "bx", "b", "bü"}));
  EXPECT_THROW(run_ref("StringConcat", {S({"a"}), Tensor::from_vector<int32_t>({1})}), Error);
}

TEST(RefText, StringSplit) {
  auto out = run_ref("StringSplit", {S({"1,2,,3", "a"})}, {{"delimiter", attr_s(",")}}, 2);
  EXPECT_EQ(out[0].tensor.shape(), (Shape{2, 4}));
  EXPECT_EQ(strs(out[0].tensor), (std::vector<std::string>{"1", "2", "", "3", "a", "", "", ""}));
  EXPECT_EQ(out[1].tensor.data<int64_t>()[0], 4);
  EXPECT_EQ(out[1].tensor.data<int64_t>()[1], 1);
  out = run_ref("StringSplit", {S({" hello   world ! ", "o n n x"})}, {{"maxsplit", attr_i(2)}}, 2);
  EXPECT_EQ(strs(out[0].tensor), (std::vector<std::string>{"hello", "world", "! ", "o", "n", "n x"}));
  out = run_ref("StringSplit", {S({"a b", ""})}, {}, 2);
  EXPECT_EQ(strs(out[0].tensor), (std::vector<std::string>{"a", "b", "", ""}));
  EXPECT_EQ(out[1].tensor.data<int64_t>()[1], 0);
  out = run_ref("StringSplit", {Tensor(DType::string, {0})}, {}, 2);
  EXPECT_EQ(out[0].tensor.shape(), (Shape{0, 0}));
  out = run_ref("StringSplit", {S({"a..b"})}, {{"delimiter", attr_s("..")}}, 2);
  EXPECT_EQ(strs(out[0].tensor), (std::vector<std::string>{"a", "b"}));
}

TEST(RefText, RegexFullMatch) {
  const Tensor y = run_ref("RegexFullMatch", {S({"www.google.com", "www.facebook.com", "www.bbc.co.uk"})},
                           {{"pattern", attr_s(R"(www\.[\w.-]+\.\bcom\b)")}})[0]
                       .tensor;
  EXPECT_EQ(std::vector<bool>(y.data<bool>(), y.data<bool>() + 3), (std::vector<bool>{true, true, false}));
  EXPECT_THROW(run_ref("RegexFullMatch", {S({"a"})}, {{"pattern", attr_s("(")}}), Error);
}

TEST(RefText, TfIdfVectorizerCountsSkipGrams) {
  // pool: 1-grams {2, 3}, 2-grams {(5,6), (7,8)}; output slots in pool order.
  AttrMap attrs = {
      {"mode", attr_s("TF")},
      {"min_gram_length", attr_i(1)},
      {"max_gram_length", attr_i(2)},
      {"max_skip_count", attr_i(1)},
      {"ngram_counts", testing::attr_ints({0, 2})},
      {"ngram_indexes", testing::attr_ints({0, 1, 2, 3})},
      {"pool_int64s", testing::attr_ints({2, 3, 5, 6, 7, 8})},
  };
  // row 0: 2 once, 3 twice (1-grams count once, not per skip); (5,6) adjacent once,
  //        no pooled pair at distance 2 ((2,5) (3,6) (5,3) (6,6)).
  // row 1: (7,8) adjacent once; nothing else.
  const Tensor x = Tensor::from_vector<int64_t>({2, 3, 5, 6, 3, 6, /**/ 7, 8, 1, 1, 1, 1}, {2, 6});
  const Tensor y = run_ref("TfIdfVectorizer", {x}, attrs)[0].tensor;
  ASSERT_EQ(y.shape(), (Shape{2, 4}));
  EXPECT_EQ(std::vector<float>(y.data<float>(), y.data<float>() + 8),
            (std::vector<float>{1, 2, 1, 0, 0, 0, 0, 1}));
  attrs["mode"] = attr_s("TFIDF");
  Attribute w;
  w.kind = Attribute::Kind::floats;
  w.floats = {0.5f, 2.f, 3.f, 4.f};
  attrs["weights"] = w;
  const Tensor z = run_ref("TfIdfVectorizer", {x}, attrs)[0].tensor;
  EXPECT_EQ(z.data<float>()[1], 4.f);
  attrs["mode"] = attr_s("IDF");
  EXPECT_EQ(run_ref("TfIdfVectorizer", {x}, attrs)[0].tensor.data<float>()[1], 2.f);
  attrs["mode"] = attr_s("BM25");
  EXPECT_THROW(run_ref("TfIdfVectorizer", {x}, attrs), Error);
}

}  // namespace
}  // namespace tessera::kernels::ref
