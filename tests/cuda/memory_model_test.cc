#include "padless/cuda/memory/memory_model.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "padless/cuda/memory/memory_budget.h"

namespace padless::cuda {
namespace {

using ::testing::HasSubstr;

constexpr double kGiB = 1073741824.0;

// Peaks from known coefficients with multiplicative noise of up to `noise` (fixed seed).
std::vector<MemorySample> Synthetic(const MemoryModel& truth, double noise, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> jitter(-noise, noise);
  std::vector<MemorySample> out;
  for (int64_t len : {64, 128, 256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096}) {
    for (int64_t batch : {1, 4, 16}) {
      const double peak = truth.Predict(batch, len) * (1.0 + jitter(rng));
      out.push_back({batch, len, static_cast<int64_t>(peak)});
    }
  }
  return out;
}

// BERT-base-like: 1.6 GiB of weights and optimizer state, ~0.35 MB per token, and 12 layers x 12
// heads x 2 bytes of bf16 scores per token per key.
const MemoryModel kQuadraticTruth(1.6 * kGiB, 0.35e6, 12 * 12 * 2);
const MemoryModel kLinearTruth(1.6 * kGiB, 0.35e6, 0);

TEST(MemoryModelTest, RecoversExactCoefficients) {
  auto model = MemoryModel::Fit(Synthetic(kQuadraticTruth, 0.0, 1), /*quadratic=*/true);
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_NEAR(model->fixed_bytes() / kQuadraticTruth.fixed_bytes(), 1.0, 1e-6);
  EXPECT_NEAR(model->per_token_bytes() / kQuadraticTruth.per_token_bytes(), 1.0, 1e-6);
  EXPECT_NEAR(model->per_token_seq_bytes() / kQuadraticTruth.per_token_seq_bytes(), 1.0, 1e-5);
}

TEST(MemoryModelTest, HeldOutErrorIsSmallUnderNoise) {
  const std::vector<MemorySample> samples = Synthetic(kQuadraticTruth, 0.02, 2);
  const std::vector<int64_t> held = {384, 1536, 3072};
  auto report = FitWithHeldOutLengths(samples, held, /*quadratic=*/true);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->held_out.size(), 9u);
  EXPECT_EQ(report->fitted_samples, 24);
  EXPECT_EQ(report->relative_errors.size(), 9u);
  // 2% noise on the measurements: the prediction stays within a few percent.
  EXPECT_LT(report->max_relative_error, 0.05);
  EXPECT_LE(report->mean_relative_error, report->max_relative_error);
  EXPECT_GT(report->max_relative_error, 0.0);
}

TEST(MemoryModelTest, LinearModelMissesQuadraticData) {
  // Without the s^2 term, data that has one cannot be fitted: the held-out error shows it.
  const std::vector<int64_t> held = {3072};
  auto linear = FitWithHeldOutLengths(Synthetic(kQuadraticTruth, 0.0, 3), held, false);
  auto quadratic = FitWithHeldOutLengths(Synthetic(kQuadraticTruth, 0.0, 3), held, true);
  ASSERT_TRUE(linear.ok() && quadratic.ok());
  EXPECT_GT(linear->max_relative_error, 0.05);
  EXPECT_LT(quadratic->max_relative_error, 1e-6);
}

TEST(MemoryModelTest, DropsNegativeQuadraticTerm) {
  auto model = MemoryModel::Fit(Synthetic(kLinearTruth, 0.01, 4), /*quadratic=*/true);
  ASSERT_TRUE(model.ok());
  EXPECT_GE(model->per_token_seq_bytes(), 0.0);
  EXPECT_NEAR(model->per_token_bytes() / kLinearTruth.per_token_bytes(), 1.0, 0.03);
}

// ---- Lengths to 8192 (issue 45), the ladder of `padless profile-memory`.

const int64_t kLongLens[] = {64, 128, 256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192};

// Samples at kLongLens up to `longest`, batches 1, 2 and 8, with multiplicative noise.
std::vector<MemorySample> LongSynthetic(const MemoryModel& truth, double noise, uint32_t seed,
                                        int64_t longest) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> jitter(-noise, noise);
  std::vector<MemorySample> out;
  for (int64_t len : kLongLens) {
    if (len > longest) continue;
    for (int64_t batch : {1, 2, 8}) {
      out.push_back(
          {batch, len, static_cast<int64_t>(truth.Predict(batch, len) * (1.0 + jitter(rng)))});
    }
  }
  return out;
}

// ModernBERT-base-like, bf16: 2.4 GiB fixed, 0.12 MB per token; padded dense attention keeps 22
// layers x 12 heads x 2 bytes of scores per token per key, flash varlen none.
const MemoryModel kLongPadded(2.4 * kGiB, 0.12e6, 22 * 12 * 2);
const MemoryModel kLongVarlen(2.4 * kGiB, 0.12e6, 0);

TEST(MemoryModelTest, FitHoldsOnHeldOutLengthsTo8192) {
  for (const MemoryModel& truth : {kLongPadded, kLongVarlen}) {
    auto report = FitWithHeldOutLengths(LongSynthetic(truth, 0.02, 6, 8192), {384, 1536, 6144},
                                        /*quadratic=*/true);
    ASSERT_TRUE(report.ok()) << report.status();
    EXPECT_EQ(report->held_out.size(), 9u);
    EXPECT_LT(report->max_relative_error, 0.05);
    EXPECT_GE(report->model.per_token_seq_bytes(), 0.0);
  }
}

// Fitted on lengths to 4096 only, the model predicts 8192: the s^2 term (padded layouts) and the
// linear one (flash varlen: fitted without the s^2 term, as the planner does) both extrapolate.
// Leaving the s^2 term out on padded data would promise 8192-token rows a fraction of their
// memory, which is why the planner keeps it wherever the attention stores scores.
TEST(MemoryModelTest, FitToLength4096PredictsLength8192) {
  auto padded = MemoryModel::Fit(LongSynthetic(kLongPadded, 0.01, 7, 4096), /*quadratic=*/true);
  auto varlen = MemoryModel::Fit(LongSynthetic(kLongVarlen, 0.01, 8, 4096), /*quadratic=*/false);
  auto linear_on_padded =
      MemoryModel::Fit(LongSynthetic(kLongPadded, 0.0, 9, 4096), /*quadratic=*/false);
  ASSERT_TRUE(padded.ok() && varlen.ok() && linear_on_padded.ok());
  for (int64_t batch : {1, 4}) {
    const MemorySample at8192_padded{batch, 8192,
                                     static_cast<int64_t>(kLongPadded.Predict(batch, 8192))};
    const MemorySample at8192_varlen{batch, 8192,
                                     static_cast<int64_t>(kLongVarlen.Predict(batch, 8192))};
    EXPECT_LT(padded->RelativeError(at8192_padded), 0.05) << batch;
    EXPECT_LT(varlen->RelativeError(at8192_varlen), 0.03) << batch;
    EXPECT_LT(linear_on_padded->Predict(batch, 8192), 0.8 * at8192_padded.peak_bytes) << batch;
  }
}

// One 8192-token row fits a budget of 1.5 rows, two do not; below one row no full row does.
TEST(MemoryBudgetTest, OneRowOf8192Tokens) {
  for (const MemoryModel& truth : {kLongPadded, kLongVarlen}) {
    const double one_row = truth.Predict(1, 8192);
    const MemoryBudget room_for_one(
        truth, static_cast<int64_t>(truth.fixed_bytes() + 1.5 * (one_row - truth.fixed_bytes())));
    EXPECT_EQ(room_for_one.MaxBatch(8192), 1);
    EXPECT_GE(room_for_one.MaxTokens(8192), 8192);
    EXPECT_LT(room_for_one.MaxTokens(8192), 2 * 8192);
    const MemoryBudget too_small(truth, static_cast<int64_t>(0.99 * one_row));
    EXPECT_EQ(too_small.MaxBatch(8192), 0);
    EXPECT_LT(too_small.MaxTokens(8192), 8192);  // fewer tokens than one full row
  }
}

TEST(MemoryModelTest, RejectsDegenerateInput) {
  EXPECT_FALSE(MemoryModel::Fit({}, false).ok());
  EXPECT_FALSE(MemoryModel::Fit({{1, 0, 5}, {2, 4, 6}}, false).ok());
  // One shape repeated: the terms are not identifiable.
  auto same = MemoryModel::Fit({{2, 64, 100}, {2, 64, 110}, {2, 64, 120}}, true);
  EXPECT_FALSE(same.ok());
  EXPECT_THAT(std::string(same.status().message()), HasSubstr("memory_model.cc"));
  EXPECT_FALSE(FitWithHeldOutLengths(Synthetic(kLinearTruth, 0, 5), {7}, false).ok());
}

TEST(MemoryModelTest, JsonRoundTrip) {
  auto back = MemoryModel::FromJson(kQuadraticTruth.ToJson());
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_DOUBLE_EQ(back->fixed_bytes(), kQuadraticTruth.fixed_bytes());
  EXPECT_DOUBLE_EQ(back->per_token_bytes(), kQuadraticTruth.per_token_bytes());
  EXPECT_DOUBLE_EQ(back->per_token_seq_bytes(), kQuadraticTruth.per_token_seq_bytes());
  EXPECT_FALSE(MemoryModel::FromJson("[1,2]").ok());
  EXPECT_FALSE(MemoryModel::FromJson("{\"fixed_bytes\":1}").ok());
  EXPECT_FALSE(MemoryModel::FromJson("not json").ok());
}

TEST(ParseByteSizeTest, UnitsAndErrors) {
  EXPECT_EQ(*ParseByteSize("40GiB"), int64_t{40} << 30);
  EXPECT_EQ(*ParseByteSize(" 512 MiB "), int64_t{512} << 20);
  EXPECT_EQ(*ParseByteSize("1.5gb"), 1500000000);
  EXPECT_EQ(*ParseByteSize("1000"), 1000);
  EXPECT_EQ(*ParseByteSize("2KiB"), 2048);
  EXPECT_FALSE(ParseByteSize("").ok());
  EXPECT_FALSE(ParseByteSize("GiB").ok());
  EXPECT_FALSE(ParseByteSize("-1GiB").ok());
  EXPECT_FALSE(ParseByteSize("12 parsecs").ok());
  EXPECT_FALSE(ParseByteSize("1e30TiB").ok());
}

TEST(MemoryBudgetTest, MaxBatchIsTheLargestThatFits) {
  const MemoryBudget budget(kQuadraticTruth, static_cast<int64_t>(40 * kGiB));
  for (int64_t len : {64, 128, 512, 1024, 4096}) {
    const int64_t b = budget.MaxBatch(len);
    ASSERT_GT(b, 0) << len;
    EXPECT_LE(kQuadraticTruth.Predict(b, len), budget.budget_bytes()) << len;
    EXPECT_GT(kQuadraticTruth.Predict(b + 1, len), budget.budget_bytes()) << len;
    // Whole-batch steps of b sequences use at least (b / (b + 1)) of the room above `fixed`.
    const double room = budget.budget_bytes() - kQuadraticTruth.fixed_bytes();
    EXPECT_GE((kQuadraticTruth.Predict(b, len) - kQuadraticTruth.fixed_bytes()) / room,
              static_cast<double>(b) / (b + 1));
  }
  const std::vector<int64_t> per_bucket = budget.MaxBatchPerBucket({128, 256, 512});
  ASSERT_EQ(per_bucket.size(), 3u);
  EXPECT_GT(per_bucket[0], per_bucket[1]);
  EXPECT_GT(per_bucket[1], per_bucket[2]);
}

TEST(MemoryBudgetTest, NothingFitsBelowTheFixedCost) {
  const MemoryBudget tiny(kQuadraticTruth, static_cast<int64_t>(kGiB));
  EXPECT_EQ(tiny.MaxBatch(128), 0);
  EXPECT_EQ(tiny.MaxTokens(512), 0);
  EXPECT_EQ(MemoryBudget(kQuadraticTruth, int64_t{1} << 40).MaxBatch(0), 0);
}

TEST(MemoryBudgetTest, MaxTokensChargesTheRowLength) {
  const MemoryBudget budget(kQuadraticTruth, static_cast<int64_t>(40 * kGiB));
  const int64_t t512 = budget.MaxTokens(512);
  const int64_t t4096 = budget.MaxTokens(4096);
  EXPECT_GT(t512, t4096);  // longer rows store more scores per token
  const double per_token =
      kQuadraticTruth.per_token_bytes() + 512 * kQuadraticTruth.per_token_seq_bytes();
  EXPECT_LE(kQuadraticTruth.fixed_bytes() + per_token * t512, budget.budget_bytes());
  EXPECT_GT(kQuadraticTruth.fixed_bytes() + per_token * (t512 + 1), budget.budget_bytes());
  // Without an s^2 term the token budget does not depend on the row length.
  const MemoryBudget linear(kLinearTruth, static_cast<int64_t>(40 * kGiB));
  EXPECT_EQ(linear.MaxTokens(128), linear.MaxTokens(4096));
}

}  // namespace
}  // namespace padless::cuda
