#include "padless/eval/metrics.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace padless::eval {
namespace {

TEST(MetricsTest, AccuracyAndMacroF1AsScikitLearnComputesThem) {
  // sklearn: accuracy_score = 5/6; f1_score(average="macro") over classes {0, 1, 2}:
  // class 0: tp 2, gold 3, predicted 2 -> 0.8; class 1: tp 2, gold 2, predicted 3 -> 0.8;
  // class 2: tp 1, gold 1, predicted 1 -> 1.0; mean 0.8666...
  const std::vector<int64_t> gold = {0, 0, 0, 1, 1, 2};
  const std::vector<int64_t> predicted = {0, 0, 1, 1, 1, 2};
  const ClassificationMetrics m = ComputeMetrics(gold, predicted, 4);
  EXPECT_EQ(m.examples, 6);
  EXPECT_DOUBLE_EQ(m.accuracy, 5.0 / 6.0);
  ASSERT_EQ(m.f1.size(), 4u);
  EXPECT_DOUBLE_EQ(m.f1[0], 0.8);
  EXPECT_DOUBLE_EQ(m.f1[1], 2.0 * 2 / (2 + 3));
  EXPECT_DOUBLE_EQ(m.f1[2], 1.0);
  EXPECT_DOUBLE_EQ(m.f1[3], 0.0);  // never occurs: left out of the mean
  EXPECT_NEAR(m.macro_f1, 2.6 / 3, 1e-12);
}

TEST(MetricsTest, AClassOnlyPredictedCountsWithF1Zero) {
  const std::vector<int64_t> gold = {0, 0};
  const std::vector<int64_t> predicted = {0, 1};
  const ClassificationMetrics m = ComputeMetrics(gold, predicted, 2);
  EXPECT_DOUBLE_EQ(m.accuracy, 0.5);
  EXPECT_DOUBLE_EQ(m.f1[0], 2.0 / 3.0);
  EXPECT_DOUBLE_EQ(m.f1[1], 0.0);
  EXPECT_DOUBLE_EQ(m.macro_f1, 1.0 / 3.0);
}

TEST(MetricsTest, NoExamplesGiveZeros) {
  const ClassificationMetrics m = ComputeMetrics({}, {}, 3);
  EXPECT_EQ(m.examples, 0);
  EXPECT_EQ(m.accuracy, 0.0);
  EXPECT_EQ(m.macro_f1, 0.0);
  EXPECT_EQ(m.f1, std::vector<double>(3, 0.0));
}

}  // namespace
}  // namespace padless::eval
