// Reference elementwise kernels and the broadcasting helper.
#include <gtest/gtest.h>

#include "kernels/ref/broadcast.h"

namespace tessera::kernels::ref {
namespace {

TEST(RefBroadcast, Shapes) {
  EXPECT_EQ(broadcast_shape(Shape{2, 3}, Shape{3}), (Shape{2, 3}));
  EXPECT_EQ(broadcast_shape(Shape{}, Shape{4, 1}), (Shape{4, 1}));
  EXPECT_EQ(broadcast_shape(Shape{0, 1}, Shape{1, 5}), (Shape{0, 5}));
  EXPECT_EQ(broadcast_shape(Shape{2, 1, 3}, Shape{4, 1}), (Shape{2, 4, 3}));
  EXPECT_THROW(broadcast_shape(Shape{2, 3}, Shape{4}), Error);
  EXPECT_THROW(broadcast_shape(Shape{0}, Shape{2}), Error);
}

TEST(RefBroadcast, IndexerMatchesCoordinates) {
  const Shape a{2, 1, 3}, b{4, 1}, out{2, 4, 3};
  BroadcastIndexer ix(out, {a, b});
  std::vector<std::pair<int64_t, int64_t>> got;
  ix.for_each([&](int64_t o, const int64_t* in) {
    EXPECT_EQ(o, int64_t(got.size()));
    got.push_back({in[0], in[1]});
  });
  ASSERT_EQ(got.size(), 24u);
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 4; ++j)
      for (int64_t k = 0; k < 3; ++k) {
        const auto& g = got[size_t((i * 4 + j) * 3 + k)];
        EXPECT_EQ(g.first, i * 3 + k);
        EXPECT_EQ(g.second, j);
      }
}

TEST(RefBroadcast, ScalarAndEmpty) {
  int calls = 0;
  BroadcastIndexer({}, {Shape{}, Shape{}}).for_each([&](int64_t o, const int64_t* in) {
    EXPECT_EQ(o, 0);
    EXPECT_EQ(in[0], 0);
    ++calls;
  });
  EXPECT_EQ(calls, 1);
  BroadcastIndexer(Shape{0, 3}, {Shape{0, 1}, Shape{3}}).for_each([&](int64_t, const int64_t*) { ++calls; });
  EXPECT_EQ(calls, 1);
}

}  // namespace
}  // namespace tessera::kernels::ref
