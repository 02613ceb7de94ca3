#include "padless/batching/packer.h"

#include <algorithm>
#include <numeric>
#include <random>

#include "gtest/gtest.h"
#include "plan_test_util.h"

namespace padless::batching {
namespace {

std::vector<Placement> PiecesOf(const std::vector<int64_t>& lengths) {
  std::vector<Placement> p(lengths.size());
  for (size_t i = 0; i < lengths.size(); ++i) p[i] = {static_cast<int64_t>(i), 0, lengths[i], 0};
  return p;
}

class PackerTest : public ::testing::TestWithParam<PackAlgorithm> {};

TEST_P(PackerTest, EveryPieceOnceAndRowsWithinCapacity) {
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    std::vector<int64_t> lengths = testing::RandomLengths(4000, seed, 512);
    PackOptions o;
    o.capacity = 512;
    o.algorithm = GetParam();
    o.max_sequences_per_row = seed % 2 == 0 ? 3 : 0;
    absl::StatusOr<std::vector<std::vector<Placement>>> rows = Pack(PiecesOf(lengths), o);
    ASSERT_TRUE(rows.ok()) << rows.status();
    std::vector<int> seen(lengths.size(), 0);
    int64_t total = 0;
    for (const auto& row : *rows) {
      ASSERT_FALSE(row.empty());
      int64_t used = 0;
      for (const Placement& p : row) {
        ASSERT_GE(p.example, 0);
        ASSERT_LT(p.example, static_cast<int64_t>(lengths.size()));
        ++seen[p.example];
        EXPECT_EQ(p.length, lengths[p.example]);
        used += p.length;
      }
      EXPECT_LE(used, o.capacity);
      if (o.max_sequences_per_row > 0) {
        EXPECT_LE(static_cast<int64_t>(row.size()), 3);
      }
      total += used;
    }
    for (size_t i = 0; i < seen.size(); ++i) ASSERT_EQ(seen[i], 1) << "example " << i;
    // Lower bound on rows: ceil(total / capacity). Decreasing fits stay close to it.
    const int64_t lower = (total + o.capacity - 1) / o.capacity;
    EXPECT_GE(static_cast<int64_t>(rows->size()), lower);
    if (o.max_sequences_per_row == 0) {
      EXPECT_LE(static_cast<double>(rows->size()), lower * 1.02 + 2) << "seed " << seed;
    }
    absl::StatusOr<int64_t> count = CountPackedRows(lengths, o);
    ASSERT_TRUE(count.ok());
    EXPECT_EQ(*count, static_cast<int64_t>(rows->size()));
  }
}

TEST_P(PackerTest, DeterministicAndExactFitsFill) {
  // 6 pieces of 4 and 6 of 6 into rows of 10: the perfect packing uses 6 full rows.
  std::vector<int64_t> lengths = {4, 6, 4, 6, 4, 6, 4, 6, 4, 6, 4, 6};
  PackOptions o;
  o.capacity = 10;
  o.algorithm = GetParam();
  absl::StatusOr<std::vector<std::vector<Placement>>> a = Pack(PiecesOf(lengths), o);
  absl::StatusOr<std::vector<std::vector<Placement>>> b = Pack(PiecesOf(lengths), o);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(*a, *b);
  EXPECT_EQ(a->size(), 6u);
}

TEST_P(PackerTest, RejectsPiecesThatDoNotFit) {
  PackOptions o;
  o.capacity = 8;
  o.algorithm = GetParam();
  EXPECT_FALSE(Pack(PiecesOf({3, 9}), o).ok());
  EXPECT_FALSE(Pack(PiecesOf({3, 0}), o).ok());
  o.capacity = 0;
  EXPECT_FALSE(Pack(PiecesOf({1}), o).ok());
}

TEST_P(PackerTest, EmptyInput) {
  PackOptions o;
  o.algorithm = GetParam();
  absl::StatusOr<std::vector<std::vector<Placement>>> rows = Pack({}, o);
  ASSERT_TRUE(rows.ok());
  EXPECT_TRUE(rows->empty());
}

INSTANTIATE_TEST_SUITE_P(All, PackerTest,
                         ::testing::Values(PackAlgorithm::kFirstFitDecreasing,
                                           PackAlgorithm::kBestFitDecreasing,
                                           PackAlgorithm::kHistogram));

TEST(PackerTest, BestFitAndHistogramAgreeOnRowCount) {
  // The histogram packer is best fit run on groups of identical rows: same number of rows.
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    std::vector<int64_t> lengths = testing::RandomLengths(20000, seed, 512);
    PackOptions o;
    o.capacity = 512;
    o.algorithm = PackAlgorithm::kBestFitDecreasing;
    absl::StatusOr<int64_t> bfd = CountPackedRows(lengths, o);
    o.algorithm = PackAlgorithm::kHistogram;
    absl::StatusOr<int64_t> hist = CountPackedRows(lengths, o);
    ASSERT_TRUE(bfd.ok() && hist.ok());
    EXPECT_EQ(*bfd, *hist);
  }
}

}  // namespace
}  // namespace padless::batching
