// ModernBERT's layers (issue 45) in padless's network: the same logits, loss and gradients on
// every layout and attention backend (sliding windows included, which must not cross sequence
// boundaries in packed batches), the window's reach, checkpointed recompute, and the paths that
// do not run ModernBERT yet saying so. Parity with transformers is
// tests/model_files/modernbert_parity_test.cc.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/csrc/autograd/autograd.h>

#include <string>
#include <utility>
#include <vector>

#include "batch_factory.h"
#include "padless/models/encoder.h"
#include "padless/models/rotary.h"

namespace padless::models::modernbert_test {
namespace {

using testing::ChangeRuntime;
using testing::ExpectSameStep;
using testing::MakePacked;
using testing::MakePadded;
using testing::MakeVarlen;
using testing::MaxDiff;
using testing::RandomSequences;
using testing::RunStep;
using testing::Sequences;
using testing::StepResult;

EncoderConfig TinyModernBert(Pooling pooling = Pooling::kCls) {
  return EncoderConfig::ModernBertBase()
      .vocab_size(60)
      .hidden(32)
      .layers(4)
      .heads(4)
      .ffn(48)
      .max_positions(128)
      .num_labels(3)
      .local_attention(8)
      .pooling(pooling);
}

// Every parameter random (norm gains near 1), so that a mixed-up weight shows.
EncoderClassifier RandomModel(const EncoderConfig& config, uint64_t seed) {
  at::manual_seed(seed);
  EncoderClassifier model(config);
  at::NoGradGuard no_grad;
  for (auto& p : model->named_parameters()) {
    const bool gain = p.key().find("norm_weight") != std::string::npos;
    p.value().copy_(gain ? 1 + 0.1 * at::randn(p.value().sizes())
                         : 0.1 * at::randn(p.value().sizes()));
  }
  model->eval();
  return model;
}

StepResult RunWith(EncoderClassifier& model, AttentionBackend backend, const batching::Batch& b) {
  ChangeRuntime(model, [&](ModelRuntime& r) { r.attention = backend; });
  return RunStep(model, b);
}

class ModernBertLayoutTest : public ::testing::TestWithParam<Pooling> {};

// Lengths 1 to 40 against a window of +-4: windows reach across sequence boundaries in packed
// rows and in the varlen layout unless every backend keeps them inside.
TEST_P(ModernBertLayoutTest, EveryLayoutAndBackendGivesTheSameStep) {
  EncoderClassifier model = RandomModel(TinyModernBert(GetParam()), 3);
  const Sequences s = RandomSequences(5, 7, 1, 40, 60, 3);
  const StepResult want = RunWith(model, AttentionBackend::kVarlenReference, MakeVarlen(s));
  ExpectSameStep(want, RunWith(model, AttentionBackend::kVarlenGrouped, MakeVarlen(s)), 1e-5);
  ExpectSameStep(want, RunWith(model, AttentionBackend::kAuto, MakePadded(s)), 1e-5);
  ExpectSameStep(want, RunWith(model, AttentionBackend::kAuto, MakePacked(s, 64)), 1e-5);
  ExpectSameStep(want, RunWith(model, AttentionBackend::kVarlenReference, MakePacked(s, 64)), 1e-5);
  ExpectSameStep(want, RunWith(model, AttentionBackend::kVarlenGrouped, MakePadded(s)), 1e-5);
}

INSTANTIATE_TEST_SUITE_P(Pooling, ModernBertLayoutTest,
                         ::testing::Values(Pooling::kCls, Pooling::kMean));

// A sequence's logits are the same alone and packed among others.
TEST(ModernBertTest, SequencesDoNotSeeTheirNeighbours) {
  EncoderClassifier model = RandomModel(TinyModernBert(), 4);
  const Sequences s = RandomSequences(6, 5, 9, 30, 60, 3);
  at::NoGradGuard no_grad;
  const at::Tensor packed = model->forward(MakePacked(s, 128));
  for (size_t i = 0; i < s.tokens.size(); ++i) {
    Sequences one;
    one.tokens = {s.tokens[i]};
    one.labels = {s.labels[i]};
    EXPECT_LE(MaxDiff(model->forward(MakeVarlen(one))[0], packed[i]), 1e-5) << i;
  }
}

// The window reaches +-local_attention / 2: a sequence no longer than that sees the same keys
// whatever the window, a longer one does not.
TEST(ModernBertTest, WindowReachesHalfLocalAttention) {
  EncoderClassifier narrow = RandomModel(TinyModernBert(), 5);
  EncoderClassifier wide(TinyModernBert().local_attention(1000));
  {
    at::NoGradGuard no_grad;
    auto from = narrow->named_parameters();
    for (auto& p : wide->named_parameters()) p.value().copy_(from[p.key()]);
  }
  wide->eval();
  at::NoGradGuard no_grad;
  const Sequences fits = RandomSequences(7, 3, 5, 5, 60, 3);  // every |i - j| <= 4
  EXPECT_LE(MaxDiff(narrow->forward(MakeVarlen(fits)), wide->forward(MakeVarlen(fits))), 1e-6);
  const Sequences longer = RandomSequences(7, 3, 6, 6, 60, 3);
  EXPECT_GT(MaxDiff(narrow->forward(MakeVarlen(longer)), wide->forward(MakeVarlen(longer))), 1e-4);
}

// Checkpointed layers (recomputed in backward) and the attention/FFN scopes give the plain step.
TEST(ModernBertTest, CheckpointedStepsMatch) {
  EncoderClassifier model = RandomModel(TinyModernBert(), 6);
  model->train();  // dropout 0: deterministic, but the training paths
  const Sequences s = RandomSequences(8, 5, 1, 30, 60, 3);
  const StepResult want = RunWith(model, AttentionBackend::kVarlenGrouped, MakeVarlen(s));
  for (const char* policy : {"all", "attn", "ffn"}) {
    absl::StatusOr<CheckpointPolicy> p = CheckpointPolicy::Parse(policy);
    ASSERT_TRUE(p.ok()) << p.status();
    ChangeRuntime(model, [&](ModelRuntime& r) { r.checkpoint = *p; });
    ExpectSameStep(want, RunStep(model, MakeVarlen(s)), 1e-6);
  }
}

// Gradients of the rotary embedding and of the whole model against finite differences.
TEST(ModernBertTest, GradientsMatchFiniteDifferences) {
  EncoderClassifier model = RandomModel(TinyModernBert().layers(2).ffn(16), 9);
  model->to(at::kDouble);
  const Sequences s = RandomSequences(9, 3, 3, 12, 60, 3);
  const batching::Batch b = MakeVarlen(s);
  const StepResult step = RunWith(model, AttentionBackend::kVarlenGrouped, b);
  at::NoGradGuard no_grad;
  // The loss in fp64 (ClassificationLoss computes in fp32, too coarse for differences).
  const auto loss = [&] {
    return at::cross_entropy_loss(model->forward(b), b.labels).item<double>();
  };
  for (const auto& [name, grad] : step.grads) {
    if (name != "layer1.attention_qkv_weight" && name != "layer0.ffn_in_weight" &&
        name != "embedding_norm_weight") {
      continue;
    }
    at::Tensor p = model->named_parameters()[name];
    for (int64_t i : {0L, 7L, 31L}) {
      const double saved = p.view(-1)[i].item<double>();
      const double eps = 1e-5;
      p.view(-1)[i].fill_(saved + eps);
      const double up = loss();
      p.view(-1)[i].fill_(saved - eps);
      const double down = loss();
      p.view(-1)[i].fill_(saved);
      EXPECT_NEAR(grad.view(-1)[i].item<double>(), (up - down) / (2 * eps), 1e-8) << name << i;
    }
  }
}

TEST(ModernBertTest, ParametersFollowTheBiasFlags) {
  const EncoderClassifier none(TinyModernBert());
  const auto names = none->named_parameters();
  EXPECT_EQ(names.find("position_embeddings"), nullptr);
  EXPECT_EQ(names.find("layer0.attention_norm_weight"), nullptr);  // an identity
  EXPECT_NE(names.find("layer1.attention_norm_weight"), nullptr);
  EXPECT_EQ(names.find("layer1.attention_qkv_bias"), nullptr);
  EXPECT_EQ(names.find("final_norm_bias"), nullptr);
  EXPECT_EQ(names.find("head_dense_bias"), nullptr);
  EXPECT_NE(names.find("head_norm_weight"), nullptr);
  EXPECT_EQ(names["layer2.ffn_in_weight"].size(0), 2 * 48);
  const EncoderClassifier all(
      TinyModernBert().attention_bias(true).mlp_bias(true).norm_bias(true).classifier_bias(true));
  const auto with = all->named_parameters();
  for (const char* name :
       {"layer1.attention_qkv_bias", "layer1.ffn_out_bias", "layer1.attention_norm_bias",
        "final_norm_bias", "head_dense_bias", "head_norm_bias", "embedding_norm_bias"}) {
    EXPECT_NE(with.find(name), nullptr) << name;
  }
}

// Serving's fused preparation does not apply (PrepareInference leaves the eager path); int8 runs
// ModernBERT's four GEMMs with int8 weights on the CPU: close to fp32 (8-bit weights with
// per-channel scales, activations with one scale per call, as BERT's int8 path), and dropped by
// train(true).
TEST(ModernBertTest, InferencePreparationsFusedFallsBackAndInt8StaysCloseToFp32) {
  for (const bool biases : {false, true}) {
    SCOPED_TRACE(biases ? "with biases" : "without biases");
    EncoderClassifier model = RandomModel(
        TinyModernBert().attention_bias(biases).mlp_bias(biases).norm_bias(biases), 10);
    const Sequences s = RandomSequences(11, 4, 1, 20, 60, 3);
    const auto logits = [&] {
      c10::InferenceMode inference;
      return model->forward(MakeVarlen(s));
    };
    at::Tensor want;
    {
      at::NoGradGuard no_grad;
      want = model->forward(MakeVarlen(s));
    }
    model->PrepareInference(at::kFloat);
    EXPECT_LE(MaxDiff(logits(), want), 1e-6);
    const absl::Status packed = model->PrepareInt8Inference();
    ASSERT_TRUE(packed.ok()) << packed;
    const at::Tensor int8 = logits();
    EXPECT_GT(MaxDiff(int8, want), 1e-6) << "int8 ran";
    EXPECT_LT((int8 - want).norm().item<double>() / want.norm().item<double>(), 0.05);
    model->train();
    model->eval();
    EXPECT_LE(MaxDiff(logits(), want), 1e-6) << "train() dropped the int8 weights";
  }
}

TEST(RotaryTest, RotatesPairsOfHalvesByPositionTimesFrequency) {
  const at::Tensor positions = at::tensor({0L, 3L});
  const RotaryTable t = BuildRotaryTable(positions, 4, 100.0);
  // Position 3, frequencies 1 and 1/10: (x0, x2) and (x1, x3) rotate by 3 and 0.3 radians.
  const at::Tensor x = at::tensor({1.0f, 2.0f, 3.0f, 4.0f}).view({1, 1, 4}).repeat({2, 1, 1});
  const at::Tensor r = ApplyRotary(x, t);
  EXPECT_TRUE(at::allclose(r[0], x[0]));
  const double c3 = std::cos(3.0), s3 = std::sin(3.0), c03 = std::cos(0.3), s03 = std::sin(0.3);
  const at::Tensor want =
      at::tensor({static_cast<float>(1 * c3 - 3 * s3), static_cast<float>(2 * c03 - 4 * s03),
                  static_cast<float>(3 * c3 + 1 * s3), static_cast<float>(4 * c03 + 2 * s03)});
  EXPECT_TRUE(at::allclose(r[1][0], want, 1e-5, 1e-6)) << r[1][0] << want;
}

// ApplyRotary's backward (the inverse rotation, rotary.h) equals autograd through transformers'
// formula, in fp64 on the CPU, for a dense [B, L, heads, D] input.
TEST(RotaryTest, GradientIsAutogradsThroughTheFormula) {
  at::manual_seed(3);
  const at::Tensor positions = at::randint(0, 500, {2, 5});
  const RotaryTable t = BuildRotaryTable(positions, 8, 10000.0);
  const at::Tensor x = at::randn({2, 5, 3, 8}, at::kDouble).requires_grad_(true);
  const at::Tensor weights = at::randn({2, 5, 3, 8}, at::kDouble);
  const at::Tensor grad = torch::autograd::grad({(ApplyRotary(x, t) * weights).sum()}, {x})[0];
  const at::Tensor cos = t.cos.unsqueeze(-2).to(at::kDouble);
  const at::Tensor sin = t.sin.unsqueeze(-2).to(at::kDouble);
  const at::Tensor rotated = at::cat({-x.narrow(-1, 4, 4), x.narrow(-1, 0, 4)}, -1);
  const at::Tensor formula = (x * cos + rotated * sin) * weights;
  const at::Tensor want = torch::autograd::grad({formula.sum()}, {x})[0];
  EXPECT_LE((grad - want).abs().max().item<double>(), 1e-12);
}

}  // namespace
}  // namespace padless::models::modernbert_test
