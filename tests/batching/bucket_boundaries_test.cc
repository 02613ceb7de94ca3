#include "padless/batching/bucket_boundaries.h"

#include <algorithm>
#include <limits>
#include <random>

#include "gtest/gtest.h"
#include "plan_test_util.h"

namespace padless::batching {
namespace {

// Exhaustive search over all boundary sets of at most k distinct lengths (small inputs only).
int64_t BruteForceBest(const std::vector<int64_t>& lengths, int k) {
  std::vector<int64_t> values(lengths);
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  const int v = static_cast<int>(values.size());
  int64_t best = std::numeric_limits<int64_t>::max();
  for (uint32_t mask = 0; mask < (1u << v); ++mask) {
    if (!(mask & (1u << (v - 1)))) continue;  // the longest length must be a boundary
    if (__builtin_popcount(mask) > k) continue;
    Boundaries b;
    for (int i = 0; i < v; ++i) {
      if (mask & (1u << i)) b.push_back(values[i]);
    }
    best = std::min(best, BucketPadding(lengths, b));
  }
  return best;
}

TEST(OptimalBoundariesTest, MatchesBruteForceOnSmallInputs) {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 60; ++trial) {
    std::vector<int64_t> lengths(1 + rng() % 40);
    for (auto& l : lengths) l = 1 + static_cast<int64_t>(rng() % 30);
    const int k = 1 + static_cast<int>(rng() % 5);
    absl::StatusOr<Boundaries> b = OptimalBoundaries(lengths, k);
    ASSERT_TRUE(b.ok()) << b.status();
    EXPECT_LE(static_cast<int>(b->size()), k);
    EXPECT_EQ(b->back(), *std::max_element(lengths.begin(), lengths.end()));
    EXPECT_EQ(BucketPadding(lengths, *b), BruteForceBest(lengths, k)) << "trial " << trial;
  }
}

TEST(OptimalBoundariesTest, NeverWorseThanQuantileOrGeometric) {
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    const std::vector<int64_t> lengths = testing::RandomLengths(3000, seed, 512);
    const int64_t lo = *std::min_element(lengths.begin(), lengths.end());
    const int64_t hi = *std::max_element(lengths.begin(), lengths.end());
    for (int k : {1, 2, 4, 8, 16}) {
      absl::StatusOr<Boundaries> opt = OptimalBoundaries(lengths, k);
      absl::StatusOr<Boundaries> quant = QuantileBoundaries(lengths, k);
      absl::StatusOr<Boundaries> geo = GeometricBoundaries(lo, hi, k);
      ASSERT_TRUE(opt.ok() && quant.ok() && geo.ok());
      EXPECT_LE(BucketPadding(lengths, *opt), BucketPadding(lengths, *quant)) << seed << " " << k;
      EXPECT_LE(BucketPadding(lengths, *opt), BucketPadding(lengths, *geo)) << seed << " " << k;
    }
  }
}

TEST(OptimalBoundariesTest, MoreBucketsNeverHurt) {
  const std::vector<int64_t> lengths = testing::RandomLengths(5000, 3, 512);
  int64_t previous = std::numeric_limits<int64_t>::max();
  for (int k = 1; k <= 12; ++k) {
    absl::StatusOr<Boundaries> b = OptimalBoundaries(lengths, k);
    ASSERT_TRUE(b.ok());
    const int64_t pad = BucketPadding(lengths, *b);
    EXPECT_LE(pad, previous);
    previous = pad;
  }
}

TEST(OptimalBoundariesTest, KAtLeastDistinctLengthsMeansNoPadding) {
  const std::vector<int64_t> lengths = {5, 5, 9, 3, 9, 12};
  absl::StatusOr<Boundaries> b = OptimalBoundaries(lengths, 10);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(*b, (Boundaries{3, 5, 9, 12}));
  EXPECT_EQ(BucketPadding(lengths, *b), 0);
}

// The textbook O(k * V^2) DP (smallest optimal split on ties), the reference of the faster one.
Boundaries QuadraticDpBoundaries(const std::vector<int64_t>& lengths, int k) {
  std::vector<int64_t> values(lengths), counts;
  std::sort(values.begin(), values.end());
  std::vector<int64_t> distinct;
  for (int64_t l : values) {
    if (distinct.empty() || distinct.back() != l) {
      distinct.push_back(l);
      counts.push_back(0);
    }
    ++counts.back();
  }
  const int v = static_cast<int>(distinct.size()), buckets = std::min(k, v);
  std::vector<int64_t> count(v + 1, 0), sum(v + 1, 0);
  for (int i = 0; i < v; ++i) {
    count[i + 1] = count[i] + counts[i];
    sum[i + 1] = sum[i] + counts[i] * distinct[i];
  }
  auto cost = [&](int i, int j) {
    return distinct[j] * (count[j + 1] - count[i]) - (sum[j + 1] - sum[i]);
  };
  const int64_t inf = std::numeric_limits<int64_t>::max() / 4;
  std::vector<std::vector<int64_t>> dp(buckets, std::vector<int64_t>(v, inf));
  std::vector<std::vector<int>> arg(buckets, std::vector<int>(v, 0));
  for (int j = 0; j < v; ++j) dp[0][j] = cost(0, j);
  for (int b = 1; b < buckets; ++b) {
    for (int j = b; j < v; ++j) {
      for (int i = b; i <= j; ++i) {
        const int64_t c = dp[b - 1][i - 1] + cost(i, j);
        if (c < dp[b][j]) {
          dp[b][j] = c;
          arg[b][j] = i;
        }
      }
    }
  }
  Boundaries out(buckets);
  for (int b = buckets - 1, j = v - 1; b >= 0; --b) {
    out[b] = distinct[j];
    if (b > 0) j = arg[b][j] - 1;
  }
  return out;
}

TEST(OptimalBoundariesTest, EqualsTheQuadraticDpSplitForSplit) {
  std::mt19937_64 rng(19);
  for (int trial = 0; trial < 40; ++trial) {
    // Few distinct lengths (many ties) to a few hundred.
    const int64_t max = trial % 2 ? 12 : 700;
    std::vector<int64_t> lengths(1 + rng() % 900);
    for (auto& l : lengths) l = 1 + static_cast<int64_t>(rng() % max);
    const int k = 1 + static_cast<int>(rng() % 17);
    absl::StatusOr<Boundaries> b = OptimalBoundaries(lengths, k);
    ASSERT_TRUE(b.ok()) << b.status();
    EXPECT_EQ(*b, QuadraticDpBoundaries(lengths, k)) << "trial " << trial;
  }
}

// Long documents (issue 45): every length up to 8192 present, 16 buckets (the `buckets` strategy).
// The quadratic DP took seconds here (16 x 8192^2 / 2 steps); this one takes milliseconds.
TEST(OptimalBoundariesTest, EveryLengthUpTo8192IsFastAndBeatsQuantiles) {
  std::vector<int64_t> lengths = testing::RandomLengths(20000, 5, 8192);
  for (int64_t l = 1; l <= 8192; ++l) lengths.push_back(l);
  absl::StatusOr<Boundaries> opt = OptimalBoundaries(lengths, 16);
  absl::StatusOr<Boundaries> quant = QuantileBoundaries(lengths, 16);
  ASSERT_TRUE(opt.ok() && quant.ok());
  EXPECT_EQ(opt->size(), 16u);
  EXPECT_EQ(opt->back(), 8192);
  EXPECT_LE(BucketPadding(lengths, *opt), BucketPadding(lengths, *quant));
}

TEST(QuantileBoundariesTest, EqualCounts) {
  std::vector<int64_t> lengths;
  for (int64_t i = 1; i <= 100; ++i) lengths.push_back(i);
  absl::StatusOr<Boundaries> b = QuantileBoundaries(lengths, 4);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(*b, (Boundaries{25, 50, 75, 100}));
}

TEST(GeometricBoundariesTest, GrowsByConstantFactorAndCoversMax) {
  absl::StatusOr<Boundaries> b = GeometricBoundaries(16, 512, 5);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(*b, (Boundaries{32, 64, 128, 256, 512}));
}

TEST(BoundariesTest, RejectsBadInput) {
  EXPECT_FALSE(ExplicitBoundaries({}, 10).ok());
  EXPECT_FALSE(ExplicitBoundaries({5, 5, 10}, 10).ok());
  EXPECT_FALSE(ExplicitBoundaries({5, 8}, 10).ok());
  EXPECT_FALSE(ExplicitBoundaries({0, 8}, 8).ok());
  EXPECT_TRUE(ExplicitBoundaries({5, 8, 10}, 10).ok());
  EXPECT_FALSE(OptimalBoundaries({}, 3).ok());
  EXPECT_FALSE(OptimalBoundaries({4, 0}, 3).ok());
  EXPECT_FALSE(OptimalBoundaries({4}, 0).ok());
  EXPECT_FALSE(QuantileBoundaries({4}, 0).ok());
  EXPECT_FALSE(GeometricBoundaries(10, 5, 3).ok());
}

TEST(BoundariesTest, BucketOfPicksFirstBoundaryAtOrAbove) {
  const Boundaries b = {8, 16, 32};
  EXPECT_EQ(BucketOf(b, 1), 0);
  EXPECT_EQ(BucketOf(b, 8), 0);
  EXPECT_EQ(BucketOf(b, 9), 1);
  EXPECT_EQ(BucketOf(b, 32), 2);
  EXPECT_EQ(BucketOf(b, 33), 3);
}

}  // namespace
}  // namespace padless::batching
