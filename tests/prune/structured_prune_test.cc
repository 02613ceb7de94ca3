// Structured pruning (structured_prune.h): removing heads and FFN neurons gives the logits of the
// model with those units masked, for every pooling and norm placement and every batch layout, on
// the CPU (fp32 and the fused varlen layer) and, when there is one, the GPU (bf16 autocast, flash
// attention, the fused layer); the config records the original indices across rounds; a pruned
// model saves and loads; plans that do not fit are clear errors. ModernBERT (GeGLU value and gate
// rows, optional biases) prunes to its masked model's logits too.
#include "padless/prune/structured_prune.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/cuda.h>

#include <string>
#include <tuple>
#include <vector>

#include "batch_factory.h"
#include "padless/model_files/model_io.h"
#include "padless/models/autocast.h"
#include "prune_test_util.h"
#include "serve_fixtures.h"

namespace padless::prune {
namespace {

using models::EncoderClassifier;
using models::EncoderConfig;
using testing::Masked;
using testing::SmallEncoder;
using testing::UnevenPlan;

enum class Layout { kPadded, kPacked, kVarlen };

batching::Batch MakeBatch(Layout layout, const c10::Device& device) {
  const models::testing::Sequences s =
      models::testing::RandomSequences(/*seed=*/11, /*n=*/6, 1, 24, 50, 3);
  switch (layout) {
    case Layout::kPadded:
      return models::testing::ToDevice(models::testing::MakePadded(s), device);
    case Layout::kPacked:
      return models::testing::ToDevice(models::testing::MakePacked(s, 32), device);
    case Layout::kVarlen:
      break;
  }
  return models::testing::ToDevice(models::testing::MakeVarlen(s), device);
}

using Case = std::tuple<models::Pooling, bool /*pre_ln*/, Layout>;

class RemovalEqualsMaskingTest : public ::testing::TestWithParam<Case> {
 protected:
  // Logits of the masked and the pruned model on the same batch.
  std::pair<at::Tensor, at::Tensor> Run(const c10::Device& device, models::AmpMode amp) {
    const auto [pooling, pre_ln, layout] = GetParam();
    at::manual_seed(5);
    EncoderClassifier model(SmallEncoder().pooling(pooling).pre_ln(pre_ln));
    model->to(device);
    model->eval();
    EncoderClassifier masked = Masked(model, UnevenPlan());
    absl::StatusOr<EncoderClassifier> pruned = PruneModel(model, UnevenPlan());
    EXPECT_TRUE(pruned.ok()) << pruned.status();
    const batching::Batch batch = MakeBatch(layout, device);
    at::NoGradGuard no_grad;
    models::AutocastGuard autocast(device.type(), amp);
    return {masked->forward(batch).to(at::kFloat), (*pruned)->forward(batch).to(at::kFloat)};
  }
};

TEST_P(RemovalEqualsMaskingTest, OnTheCpu) {
  const auto [masked, pruned] = Run(c10::Device(c10::kCPU), models::AmpMode::kOff);
  EXPECT_TRUE(at::allclose(pruned, masked, 1e-5, 1e-5))
      << (pruned - masked).abs().max().item<float>();
}

TEST_P(RemovalEqualsMaskingTest, OnTheGpuInBf16) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  const auto [masked, pruned] = Run(c10::Device(c10::kCUDA, 0), models::AmpMode::kBf16);
  // bf16: the two models sum their GEMMs over different widths (zeros included or not).
  EXPECT_TRUE(at::allclose(pruned, masked, 2e-2, 2e-2))
      << (pruned - masked).abs().max().item<float>();
}

INSTANTIATE_TEST_SUITE_P(
    PoolingNormLayout, RemovalEqualsMaskingTest,
    ::testing::Combine(::testing::Values(models::Pooling::kCls, models::Pooling::kMean),
                       ::testing::Bool(),
                       ::testing::Values(Layout::kPadded, Layout::kPacked, Layout::kVarlen)));

TEST(StructuredPruneTest, WeightsShrinkToTheKeptUnits) {
  at::manual_seed(1);
  EncoderClassifier model(SmallEncoder());
  absl::StatusOr<EncoderClassifier> pruned = PruneModel(model, UnevenPlan());
  ASSERT_TRUE(pruned.ok()) << pruned.status();
  const std::vector<at::TensorList> layers = (*pruned)->LayerWeights();
  EXPECT_EQ(layers[0][models::kQkvWeight].sizes(), (std::vector<int64_t>{3 * 16, 32}));
  EXPECT_EQ(layers[0][models::kOutWeight].sizes(), (std::vector<int64_t>{32, 16}));
  EXPECT_EQ(layers[1][models::kQkvBias].sizes(), (std::vector<int64_t>{3 * 24}));
  EXPECT_EQ(layers[0][models::kFfnInWeight].sizes(), (std::vector<int64_t>{32, 32}));
  EXPECT_EQ(layers[1][models::kFfnOutWeight].sizes(), (std::vector<int64_t>{32, 39}));
  // Layer 0's V block keeps head 2's rows: original rows 2 x 32 + 2 x 8 onwards.
  const at::Tensor v_head2 = model->LayerWeights()[0][models::kQkvWeight].narrow(0, 64 + 16, 8);
  EXPECT_TRUE(at::equal(layers[0][models::kQkvWeight].narrow(0, 32 + 8, 8), v_head2));
  EXPECT_LT(ParameterCount(*pruned), ParameterCount(model));
  EXPECT_EQ(ParameterCount(model) - ParameterCount(*pruned),
            (2 + 1) * 8 * (3 * 32 + 3 + 32) + (32 + 25) * (32 + 1 + 32));
}

TEST(StructuredPruneTest, ConfigRecordsOriginalHeadsAcrossRounds) {
  absl::StatusOr<EncoderConfig> once = PrunedConfig(SmallEncoder(), UnevenPlan());
  ASSERT_TRUE(once.ok()) << once.status();
  EXPECT_EQ(once->pruned_heads(), (std::vector<std::vector<int64_t>>{{1, 3}, {0}}));
  EXPECT_EQ(once->layer_ffn(), (std::vector<int64_t>{32, 39}));
  // Round two drops the second head left in layer 0 (original 2) and the first of layer 1 (1).
  PrunePlan again;
  again.keep_heads = {{0}, {1, 2}};
  again.keep_ffn = {std::vector<int64_t>(32), std::vector<int64_t>(39)};
  for (int64_t n = 0; n < 32; ++n) again.keep_ffn[0][n] = n;
  for (int64_t n = 0; n < 39; ++n) again.keep_ffn[1][n] = n;
  absl::StatusOr<EncoderConfig> twice = PrunedConfig(*once, again);
  ASSERT_TRUE(twice.ok()) << twice.status();
  EXPECT_EQ(twice->pruned_heads(), (std::vector<std::vector<int64_t>>{{1, 2, 3}, {0, 1}}));
  EXPECT_EQ(twice->kept_heads(1), (std::vector<int64_t>{2, 3}));
  // Heads only: no FFN record.
  PrunePlan heads_only = UnevenPlan();
  for (auto& keep : heads_only.keep_ffn) {
    keep.clear();
    for (int64_t n = 0; n < 64; ++n) keep.push_back(n);
  }
  EXPECT_TRUE(PrunedConfig(SmallEncoder(), heads_only)->layer_ffn().empty());
}

TEST(StructuredPruneTest, PlansThatDoNotFitAreClearErrors) {
  EncoderClassifier model(SmallEncoder());
  auto expect_error = [&](PrunePlan plan, const std::string& needle) {
    absl::StatusOr<EncoderClassifier> pruned = PruneModel(model, plan);
    ASSERT_FALSE(pruned.ok()) << needle;
    EXPECT_NE(std::string(pruned.status().message()).find(needle), std::string::npos)
        << pruned.status();
  };
  PrunePlan p = UnevenPlan();
  p.keep_heads.pop_back();
  expect_error(p, "lists for 1 and 2 layers");
  p = UnevenPlan();
  p.keep_heads[0] = {};
  expect_error(p, "layer 0 keeps no head");
  p = UnevenPlan();
  p.keep_heads[1] = {1, 4};
  expect_error(p, "in [0, 4)");
  p = UnevenPlan();
  p.keep_heads[1] = {2, 1};
  expect_error(p, "ascending, unique");
  p = UnevenPlan();
  p.keep_ffn[0] = {};
  expect_error(p, "keeps no FFN neuron");
  p = UnevenPlan();
  p.keep_ffn[1].push_back(64);
  expect_error(p, "in [0, 64)");
}

TEST(StructuredPruneTest, PrunedModelDirSavesLoadsAndPredictsTheSame) {
  const std::string dir = serve::testing::ScratchDir("pruned_model_dir");
  tokenize::Tokenizer tokenizer = serve::testing::SmallTokenizer();
  at::manual_seed(2);
  EncoderClassifier model(SmallEncoder().vocab_size(tokenizer.vocab_size()));
  model->eval();
  absl::StatusOr<EncoderClassifier> pruned = PruneModel(model, UnevenPlan());
  ASSERT_TRUE(pruned.ok()) << pruned.status();
  const corpus::LabelMap labels = *corpus::LabelMap::FromNames({"neg", "neutral", "pos"});
  ASSERT_TRUE(model_files::SaveModelDir(dir, *pruned, tokenizer, labels).ok());
  absl::StatusOr<model_files::LoadedModel> loaded = model_files::LoadModelDir(dir, c10::Device(c10::kCPU));
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->config.pruned_heads(), (*pruned)->config().pruned_heads());
  EXPECT_EQ(loaded->config.layer_ffn(), (std::vector<int64_t>{32, 39}));
  const models::testing::Sequences s =
      models::testing::RandomSequences(3, 4, 2, 20, tokenizer.vocab_size(), 3);
  const batching::Batch batch = models::testing::MakeVarlen(s);
  at::NoGradGuard no_grad;
  EXPECT_TRUE(at::equal(loaded->model->forward(batch), (*pruned)->forward(batch)));
}

// ModernBERT (issue 45), with every bias and with none: the pruned model gives the masked model's
// logits on packed varlen batches, and its GeGLU FFN-in keeps each kept neuron's value row and
// gate row; the weights the config leaves out stay absent.
TEST(StructuredPruneTest, ModernBertRemovalEqualsMasking) {
  for (bool biases : {true, false}) {
    SCOPED_TRACE(biases ? "biases" : "no biases");
    at::manual_seed(45);
    EncoderClassifier model(testing::SmallModernBert(biases));
    testing::RandomizeAll(model);
    model->eval();
    EncoderClassifier masked = Masked(model, UnevenPlan());
    absl::StatusOr<EncoderClassifier> pruned = PruneModel(model, UnevenPlan());
    ASSERT_TRUE(pruned.ok()) << pruned.status();
    EXPECT_TRUE((*pruned)->config().modernbert());
    at::NoGradGuard no_grad;
    for (Layout layout : {Layout::kVarlen, Layout::kPacked}) {
      const batching::Batch batch = MakeBatch(layout, c10::Device(c10::kCPU));
      const at::Tensor want = masked->forward(batch), got = (*pruned)->forward(batch);
      EXPECT_TRUE(at::allclose(got, want, 1e-5, 1e-5)) << (got - want).abs().max().item<float>();
    }
    using namespace models;  // the LayerWeight names
    const std::vector<at::TensorList> before = model->LayerWeights();
    const std::vector<at::TensorList> after = (*pruned)->LayerWeights();
    for (int64_t l = 0; l < 2; ++l) {
      SCOPED_TRACE(l);
      const std::vector<int64_t> keep = UnevenPlan().keep_ffn[l];
      const int64_t n = static_cast<int64_t>(keep.size());
      ASSERT_EQ(after[l][kFfnInWeight].size(0), 2 * n);
      for (int64_t k : {int64_t{0}, n / 2, n - 1}) {
        EXPECT_TRUE(after[l][kFfnInWeight][k].equal(before[l][kFfnInWeight][keep[k]]));
        EXPECT_TRUE(after[l][kFfnInWeight][n + k].equal(before[l][kFfnInWeight][64 + keep[k]]));
        if (biases) {
          EXPECT_TRUE(after[l][kFfnInBias][n + k].equal(before[l][kFfnInBias][64 + keep[k]]));
        }
      }
      for (int k : {kQkvBias, kOutBias, kFfnInBias, kFfnOutBias, kAttnNormBias, kFfnNormBias}) {
        EXPECT_EQ(after[l][k].defined(), before[l][k].defined()) << k;
      }
    }
    EXPECT_FALSE(after[0][kAttnNormWeight].defined()) << "layer 0's attention norm: an identity";
    EXPECT_EQ(ParameterCount(model) - ParameterCount(*pruned),
              (2 + 1) * 8 * (4 * 32 + (biases ? 3 : 0)) + (32 + 25) * (3 * 32 + (biases ? 2 : 0)));
  }
}

}  // namespace
}  // namespace padless::prune
