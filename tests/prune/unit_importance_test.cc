// Importance scores (unit_importance.h): the mask gradients read off the weight gradients equal
// central finite differences of the loss in the mask (fp64, so the check is tight), through the
// generic and the fused varlen layer and the padded layout, and for ModernBERT; ScoreUnitImportance
// averages the batches' magnitudes and leaves the model as it found it.
#include "padless/prune/unit_importance.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "batch_factory.h"
#include "padless/models/encoder_layer.h"
#include "padless/train/train_job.h"
#include "prune_test_util.h"
#include "serve_fixtures.h"

namespace padless::prune {
namespace {

using models::EncoderClassifier;
using testing::SmallEncoder;

// The mean cross-entropy in the logits' dtype (fp64 here; models::ClassificationLoss rounds to
// fp32, which would hide the 1e-10 changes a finite difference measures).
at::Tensor Loss(EncoderClassifier& model, const batching::Batch& batch) {
  return at::cross_entropy_loss(model->forward(batch), batch.labels);
}

// The batch's mean loss with the columns [first, first + width) of `weight` scaled by `scale`.
double LossWithScaledColumns(EncoderClassifier& model, const batching::Batch& batch,
                             at::Tensor weight, int64_t first, int64_t width, double scale) {
  at::NoGradGuard no_grad;
  const at::Tensor saved = weight.narrow(1, first, width).clone();
  weight.narrow(1, first, width).mul_(scale);
  const double loss = Loss(model, batch).item<double>();
  weight.narrow(1, first, width).copy_(saved);
  return loss;
}

double FiniteDifference(EncoderClassifier& model, const batching::Batch& batch, at::Tensor weight,
                        int64_t first, int64_t width) {
  constexpr double kEps = 1e-5;
  return std::abs(LossWithScaledColumns(model, batch, weight, first, width, 1 + kEps) -
                  LossWithScaledColumns(model, batch, weight, first, width, 1 - kEps)) /
         (2 * kEps);
}

void ExpectMaskGradientsMatchFiniteDifferences(
    bool fused, bool varlen, const models::EncoderConfig& config = SmallEncoder()) {
  at::manual_seed(7);
  EncoderClassifier model(config);
  if (config.modernbert()) testing::RandomizeAll(model);  // its biases start at zero
  model->to(at::kDouble);
  model->eval();
  models::testing::ChangeRuntime(model, [&](models::ModelRuntime& r) { r.fused_layers = fused; });
  const models::testing::Sequences s = models::testing::RandomSequences(4, 5, 3, 20, 50, 3);
  const batching::Batch batch =
      varlen ? models::testing::MakeVarlen(s) : models::testing::MakePadded(s);
  model->zero_grad();
  Loss(model, batch).backward();
  const UnitImportance got = MaskGradientMagnitudes(model);
  model->zero_grad();
  const int64_t head_dim = model->config().head_dim();
  const std::vector<at::TensorList> layers = model->LayerWeights();
  for (size_t l = 0; l < layers.size(); ++l) {
    ASSERT_EQ(got.heads[l].size(), 4u);
    ASSERT_EQ(got.ffn[l].size(), 64u);
    for (int64_t h = 0; h < 4; ++h) {
      const double want =
          FiniteDifference(model, batch, layers[l][models::kOutWeight], h * head_dim, head_dim);
      EXPECT_NEAR(got.heads[l][h], want, 1e-7 + 1e-5 * want) << "layer " << l << " head " << h;
    }
    for (int64_t n : {0, 17, 63}) {
      const double want = FiniteDifference(model, batch, layers[l][models::kFfnOutWeight], n, 1);
      EXPECT_NEAR(got.ffn[l][n], want, 1e-7 + 1e-5 * want) << "layer " << l << " neuron " << n;
    }
  }
}

TEST(UnitImportanceTest, MaskGradientsMatchFiniteDifferencesVarlenGeneric) {
  ExpectMaskGradientsMatchFiniteDifferences(/*fused=*/false, /*varlen=*/true);
}

TEST(UnitImportanceTest, MaskGradientsMatchFiniteDifferencesVarlenFused) {
  ExpectMaskGradientsMatchFiniteDifferences(/*fused=*/true, /*varlen=*/true);
}

TEST(UnitImportanceTest, MaskGradientsMatchFiniteDifferencesPadded) {
  ExpectMaskGradientsMatchFiniteDifferences(/*fused=*/false, /*varlen=*/false);
}

// ModernBERT's GeGLU neuron feeds one FFN-out column too, and its head one group of output
// columns: the same reading holds.
TEST(UnitImportanceTest, MaskGradientsMatchFiniteDifferencesModernBert) {
  ExpectMaskGradientsMatchFiniteDifferences(/*fused=*/false, /*varlen=*/true,
                                            testing::SmallModernBert(/*biases=*/true));
}

TEST(UnitImportanceTest, NoGradientScoresZero) {
  EncoderClassifier model(SmallEncoder());
  const UnitImportance u = MaskGradientMagnitudes(model);
  ASSERT_EQ(u.heads.size(), 2u);
  for (double v : u.heads[1]) EXPECT_EQ(v, 0.0);
  for (double v : u.ffn[0]) EXPECT_EQ(v, 0.0);
}

// A labelled corpus of `n` short texts in the small tokenizer's vocabulary.
corpus::TokenizedCorpus SmallCorpus(const tokenize::Tokenizer& tokenizer, int n) {
  corpus::RawCorpus raw;
  raw.source = "memory";
  const char* labels[] = {"neg", "neutral", "pos"};
  for (int i = 0; i < n; ++i) {
    corpus::Example e;
    e.text = serve::testing::Words(2 + i % 9, i);
    e.label = labels[i % 3];
    e.line = i + 1;
    raw.examples.push_back(e);
  }
  tokenize::EncodeOptions encode;
  encode.max_length = 24;
  return *train::EncodeWithLabels(
      tokenizer, raw, *corpus::LabelMap::FromNames({"neg", "neutral", "pos"}), encode, 1);
}

TEST(UnitImportanceTest, ScoringAveragesBatchesAndLeavesTheModelAsItWas) {
  const tokenize::Tokenizer tokenizer = serve::testing::SmallTokenizer();
  const corpus::TokenizedCorpus corpus = SmallCorpus(tokenizer, 40);
  at::manual_seed(9);
  EncoderClassifier model(SmallEncoder().vocab_size(tokenizer.vocab_size()).dropout(0.3));
  model->train();
  const at::Tensor before = model->LayerWeights()[1][models::kOutWeight].clone();
  batching::PlannerOptions plan = *train::BatchingPlan("varlen", {24, 8, 64, 1});
  absl::StatusOr<UnitImportance> u =
      ScoreUnitImportance(model, corpus, plan, c10::Device(c10::kCPU), models::AmpMode::kOff,
                          tokenizer.special_ids().pad);
  ASSERT_TRUE(u.ok()) << u.status();
  EXPECT_GT(u->batches, 1);
  EXPECT_TRUE(model->is_training());
  EXPECT_TRUE(at::equal(model->LayerWeights()[1][models::kOutWeight], before));
  for (const at::Tensor& p : model->parameters()) EXPECT_FALSE(p.grad().defined());
  double total = 0;
  for (const auto& layer : u->heads) {
    for (double v : layer) {
      EXPECT_GE(v, 0.0);
      total += v;
    }
  }
  EXPECT_GT(total, 0.0);
  // The same pass again gives the same scores (eval mode: no dropout draws).
  absl::StatusOr<UnitImportance> again =
      ScoreUnitImportance(model, corpus, plan, c10::Device(c10::kCPU), models::AmpMode::kOff,
                          tokenizer.special_ids().pad);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->heads, u->heads);
  EXPECT_EQ(again->ffn, u->ffn);
}

TEST(UnitImportanceTest, EmptyCorpusIsAnError) {
  const tokenize::Tokenizer tokenizer = serve::testing::SmallTokenizer();
  EncoderClassifier model(SmallEncoder().vocab_size(tokenizer.vocab_size()));
  const corpus::TokenizedCorpus empty;
  batching::PlannerOptions plan = *train::BatchingPlan("varlen", {24, 8, 64, 1});
  EXPECT_FALSE(
      ScoreUnitImportance(model, empty, plan, c10::Device(c10::kCPU), models::AmpMode::kOff, 0)
          .ok());
}

}  // namespace
}  // namespace padless::prune
