// Copies that share their elements until written (SharedChunks.h): what forks keep of their jobs.
#include <gtest/gtest.h>

#include "mirage/simulator/SharedChunks.h"

namespace mirage {
namespace {

using Chunks = SharedChunks<int>;

Chunks numbered(std::size_t n) {
  Chunks c;
  for (std::size_t i = 0; i < n; ++i) c.push_back(static_cast<int>(i));
  return c;
}

TEST(SharedChunks, ACopyDoesNotSeeTheOriginalsWritesNorTheOriginalItsCopys) {
  Chunks a = numbered(3 * Chunks::kChunk + 7);
  Chunks b = a;
  a.mut(5) = -1;
  b.mut(Chunks::kChunk + 5) = -2;
  EXPECT_EQ(a[5], -1);
  EXPECT_EQ(b[5], 5);
  EXPECT_EQ(a[Chunks::kChunk + 5], static_cast<int>(Chunks::kChunk + 5));
  EXPECT_EQ(b[Chunks::kChunk + 5], -2);
  // A chunk neither wrote reads the same through both.
  EXPECT_EQ(&a[2 * Chunks::kChunk], &b[2 * Chunks::kChunk]);
}

TEST(SharedChunks, ElementsAddedToACopyGrowOnlyThatCopy) {
  Chunks a = numbered(Chunks::kChunk - 1);
  Chunks b = a;
  b.push_back(100);
  b.push_back(101);  // into a chunk of its own
  EXPECT_EQ(a.size(), Chunks::kChunk - 1);
  ASSERT_EQ(b.size(), Chunks::kChunk + 1);
  EXPECT_EQ(b[Chunks::kChunk - 1], 100);
  EXPECT_EQ(b[Chunks::kChunk], 101);
  a.push_back(7);
  EXPECT_EQ(a[Chunks::kChunk - 1], 7);
  EXPECT_EQ(b[Chunks::kChunk - 1], 100);
}

TEST(SharedChunks, ReadsPastTheEndThrow) {
  Chunks a = numbered(4);
  EXPECT_THROW((void)a.at(4), std::out_of_range);
}

}  // namespace
}  // namespace mirage
