#include "padless/corpus/length_stats.h"

#include <cstdint>
#include <vector>

#include "gtest/gtest.h"

namespace padless::corpus {
namespace {

TEST(LengthStatsTest, NearestRankPercentilesOnOneToHundred) {
  std::vector<int64_t> lengths;
  for (int64_t v = 100; v >= 1; --v) lengths.push_back(v);  // order must not matter
  const LengthStats s = ComputeLengthStats(lengths, 95);
  EXPECT_EQ(s.count, 100);
  EXPECT_EQ(s.total, 5050);
  EXPECT_DOUBLE_EQ(s.mean, 50.5);
  EXPECT_EQ(s.min, 1);
  EXPECT_EQ(s.p50, 50);
  EXPECT_EQ(s.p90, 90);
  EXPECT_EQ(s.p99, 99);
  EXPECT_EQ(s.max, 100);
  EXPECT_EQ(s.over_limit, 5);
  EXPECT_DOUBLE_EQ(s.over_limit_share, 0.05);
}

TEST(LengthStatsTest, SmallAndEmptyInputs) {
  const LengthStats one = ComputeLengthStats(std::vector<int64_t>{7}, 0);
  EXPECT_EQ(one.p50, 7);
  EXPECT_EQ(one.p99, 7);
  EXPECT_EQ(one.over_limit, 0);  // limit 0 disables the count
  const LengthStats none = ComputeLengthStats({}, 10);
  EXPECT_EQ(none.count, 0);
  EXPECT_EQ(none.max, 0);
}

TEST(LengthHistogramTest, BinsCoverEveryLength) {
  const std::vector<int64_t> lengths = {0, 1, 9, 10, 19, 25};
  const std::vector<HistogramBin> bins = LengthHistogram(lengths, 10);
  ASSERT_EQ(bins.size(), 3u);
  EXPECT_EQ(bins[0].lower, 0);
  EXPECT_EQ(bins[0].upper, 10);
  EXPECT_EQ(bins[0].count, 3);
  EXPECT_EQ(bins[1].count, 2);
  EXPECT_EQ(bins[2].count, 1);
  EXPECT_EQ(bins[2].upper, 30);
  EXPECT_TRUE(LengthHistogram({}, 10).empty());
}

}  // namespace
}  // namespace padless::corpus
