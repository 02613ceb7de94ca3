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

// Textbook first fit and best fit over pieces sorted by decreasing length (ties in input order),
// O(n * rows): the fast packers must make exactly the same choices.
std::vector<int64_t> NaiveRowOf(const std::vector<int64_t>& lengths, int64_t capacity, bool best) {
  std::vector<int64_t> order(lengths.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return lengths[a] > lengths[b]; });
  std::vector<int64_t> free_space, row_of(lengths.size());
  for (int64_t idx : order) {
    int64_t pick = -1;
    for (size_t r = 0; r < free_space.size(); ++r) {
      if (free_space[r] < lengths[idx]) continue;
      if (pick < 0 || (best && free_space[r] < free_space[pick])) pick = static_cast<int64_t>(r);
      if (!best) break;
    }
    if (pick < 0) {
      pick = static_cast<int64_t>(free_space.size());
      free_space.push_back(capacity);
    }
    free_space[pick] -= lengths[idx];
    row_of[idx] = pick;
  }
  return row_of;
}

TEST(PackerTest, FirstFitMatchesTextbookFirstFit) {
  std::mt19937_64 rng(5);
  for (int trial = 0; trial < 30; ++trial) {
    std::vector<int64_t> lengths(1 + rng() % 300);
    for (auto& l : lengths) l = 1 + static_cast<int64_t>(rng() % 100);
    const std::vector<int64_t> expect = NaiveRowOf(lengths, 100, /*best=*/false);
    PackOptions o;
    o.capacity = 100;
    o.algorithm = PackAlgorithm::kFirstFitDecreasing;
    absl::StatusOr<std::vector<std::vector<Placement>>> rows = Pack(PiecesOf(lengths), o);
    ASSERT_TRUE(rows.ok());
    for (size_t r = 0; r < rows->size(); ++r) {
      for (const Placement& p : (*rows)[r]) {
        ASSERT_EQ(expect[p.example], static_cast<int64_t>(r)) << "trial " << trial;
      }
    }
  }
}

TEST(PackerTest, BestFitUsesAsFewRowsAsTextbookBestFit) {
  std::mt19937_64 rng(6);
  for (int trial = 0; trial < 30; ++trial) {
    std::vector<int64_t> lengths(1 + rng() % 300);
    for (auto& l : lengths) l = 1 + static_cast<int64_t>(rng() % 100);
    const std::vector<int64_t> naive = NaiveRowOf(lengths, 100, /*best=*/true);
    const int64_t expect_rows = *std::max_element(naive.begin(), naive.end()) + 1;
    PackOptions o;
    o.capacity = 100;
    for (PackAlgorithm a : {PackAlgorithm::kBestFitDecreasing, PackAlgorithm::kHistogram}) {
      o.algorithm = a;
      absl::StatusOr<int64_t> rows = CountPackedRows(lengths, o);
      ASSERT_TRUE(rows.ok());
      EXPECT_EQ(*rows, expect_rows) << "trial " << trial;
    }
  }
}

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
