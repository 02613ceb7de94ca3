// Evaluate and ScoreCorpus on a tiny encoder: the layout of the batches (padded or packed) does not
// change what a model predicts, the probabilities are a softmax, the metrics are those of the
// predictions, and CheckCorpus names what is wrong with a corpus.
#include "padless/eval/evaluation.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "padless/eval/corpus_scores.h"
#include "padless/eval/metrics.h"
#include "trainer_fixtures.h"

namespace padless::eval {
namespace {

using train::testing::Plan;
using train::testing::SyntheticCorpus;
using train::testing::TinyConfig;

models::EncoderClassifier TinyModel() {
  at::manual_seed(5);
  models::EncoderClassifier model(TinyConfig(0.0));
  model->eval();
  return model;
}

TEST(EvaluationTest, PaddedAndPackedBatchesGiveTheSamePredictions) {
  const corpus::TokenizedCorpus data = SyntheticCorpus(/*seed=*/3, /*n=*/40);
  models::EncoderClassifier model = TinyModel();
  const c10::Device cpu(c10::kCPU);
  absl::StatusOr<EvalResult> padded = Evaluate(model, data, Plan(batching::Sampler::kRandom),
                                               cpu, models::AmpMode::kOff, /*pad_id=*/0);
  absl::StatusOr<EvalResult> packed = Evaluate(model, data, Plan(batching::Sampler::kPacked), cpu,
                                               models::AmpMode::kOff, /*pad_id=*/0);
  ASSERT_TRUE(padded.ok()) << padded.status();
  ASSERT_TRUE(packed.ok()) << packed.status();
  ASSERT_EQ(padded->probabilities.size(), data.size());
  ASSERT_EQ(packed->probabilities.size(), data.size());
  for (size_t i = 0; i < data.size(); ++i) {
    ASSERT_EQ(padded->probabilities[i].size(), 2u);
    float sum = 0;
    for (size_t c = 0; c < 2; ++c) {
      EXPECT_NEAR(padded->probabilities[i][c], packed->probabilities[i][c], 1e-5) << "example " << i;
      sum += padded->probabilities[i][c];
    }
    EXPECT_NEAR(sum, 1.0f, 1e-5);
  }
  EXPECT_EQ(padded->predictions, packed->predictions);
  EXPECT_NEAR(padded->loss, packed->loss, 1e-5);
  EXPECT_TRUE(std::isfinite(padded->loss));
  EXPECT_GT(padded->loss, 0);
}

TEST(EvaluationTest, MetricsAreThoseOfThePredictions) {
  const corpus::TokenizedCorpus data = SyntheticCorpus(/*seed=*/4, /*n=*/30);
  models::EncoderClassifier model = TinyModel();
  absl::StatusOr<EvalResult> result = Evaluate(model, data, Plan(batching::Sampler::kRandom),
                                               c10::Device(c10::kCPU), models::AmpMode::kOff, 0);
  ASSERT_TRUE(result.ok()) << result.status();
  std::vector<int64_t> gold;
  for (size_t i = 0; i < data.size(); ++i) gold.push_back(data.label(i));
  const ClassificationMetrics expected = ComputeMetrics(gold, result->predictions, 2);
  EXPECT_EQ(result->metrics.examples, 30);
  EXPECT_DOUBLE_EQ(result->metrics.accuracy, expected.accuracy);
  EXPECT_DOUBLE_EQ(result->metrics.macro_f1, expected.macro_f1);
  for (size_t i = 0; i < data.size(); ++i) {
    const std::vector<float>& p = result->probabilities[i];
    EXPECT_EQ(result->predictions[i], p[1] > p[0] ? 1 : 0) << "example " << i;
  }
}

TEST(EvaluationTest, CheckCorpusNamesTheCorpusAndTheBadLabel) {
  const corpus::TokenizedCorpus data = SyntheticCorpus(/*seed=*/6, /*n=*/8);
  models::EncoderConfig config = TinyConfig(0.0);
  EXPECT_TRUE(CheckCorpus(data, config, "dev data").ok());
  config.num_labels(1);  // label 1 is now out of range
  const absl::Status status = CheckCorpus(data, config, "dev data");
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("dev data"), std::string::npos) << status;
}

}  // namespace
}  // namespace padless::eval
