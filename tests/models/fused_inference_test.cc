// The fused inference path (EncoderClassifierImpl::RunLayers without grad mode: the fused layer's
// forward alone, FusedEncoderLayerInfer) against the fused autograd path and the generic layers:
// the same logits, with and without PrepareInference's cached weights, and a stale cache dropped
// by train(true).
#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>
#include <gtest/gtest.h>

#include "batch_factory.h"
#include "gpu_test_util.h"
#include "padless/models/autocast.h"
#include "padless/models/encoder.h"

namespace padless::models {
namespace {

using testing::ChangeRuntime;
using testing::GpuTestConfig;
using testing::HasCuda;
using testing::MakeVarlen;
using testing::RandomSequences;
using testing::ToDevice;

EncoderConfig SmallPostLn() {
  return EncoderConfig()
      .vocab_size(100)
      .hidden(32)
      .layers(3)
      .heads(4)
      .ffn(64)
      .max_positions(64)
      .num_labels(3)
      .dropout(0.0)
      .attention_dropout(0.0);
}

at::Tensor InferenceLogits(EncoderClassifier& model, const batching::Batch& b, AmpMode amp) {
  c10::InferenceMode inference;
  AutocastGuard autocast(b.input_ids.device().type(), amp);
  return model->forward(b).to(at::kFloat).clone();
}

at::Tensor AutogradLogits(EncoderClassifier& model, const batching::Batch& b, AmpMode amp) {
  at::AutoGradMode grad(true);
  AutocastGuard autocast(b.input_ids.device().type(), amp);
  return model->forward(b).to(at::kFloat).detach().clone();
}

// Not MaxDiff: encoder_test.cc has one, and a unity build (PADLESS_UNITY) may batch the two files.
double MaxAbsDiff(const at::Tensor& a, const at::Tensor& b) {
  return (a - b).abs().max().item<double>();
}

TEST(FusedInferenceTest, MatchesAutogradPathOnCpu) {
  at::manual_seed(5);
  EncoderClassifier model(SmallPostLn());
  model->eval();
  const batching::Batch b = MakeVarlen(RandomSequences(3, 12, 1, 60, 100, 3));
  ASSERT_EQ(model->ResolveBackend(b), AttentionBackend::kVarlenReference);
  const at::Tensor autograd = AutogradLogits(model, b, AmpMode::kOff);
  const at::Tensor inference = InferenceLogits(model, b, AmpMode::kOff);
  EXPECT_LE(MaxAbsDiff(autograd, inference), 1e-5);
  model->PrepareInference(at::kFloat);
  EXPECT_LE(MaxAbsDiff(autograd, InferenceLogits(model, b, AmpMode::kOff)), 1e-5);
  // The generic layers (no fused layer at all) agree too.
  ChangeRuntime(model, [](ModelRuntime& r) { r.fused_layers = false; });
  EXPECT_LE(MaxAbsDiff(autograd, InferenceLogits(model, b, AmpMode::kOff)), 1e-5);
}

TEST(FusedInferenceTest, TrainingDropsThePreparedWeights) {
  at::manual_seed(6);
  EncoderClassifier model(SmallPostLn());
  model->eval();
  model->PrepareInference(at::kFloat);
  const batching::Batch b = MakeVarlen(RandomSequences(4, 6, 2, 40, 100, 3));
  const at::Tensor before = InferenceLogits(model, b, AmpMode::kOff);
  {
    at::NoGradGuard no_grad;
    for (at::Tensor& p : model->parameters()) p.mul_(1.5);
  }
  model->train();  // a training step would change the weights like this
  model->eval();
  const at::Tensor after = InferenceLogits(model, b, AmpMode::kOff);
  EXPECT_GT(MaxAbsDiff(before, after), 1e-3);
  EXPECT_LE(MaxAbsDiff(AutogradLogits(model, b, AmpMode::kOff), after), 1e-5);
}

TEST(FusedInferenceTest, PreLnModelsRunTheGenericLayers) {
  at::manual_seed(7);
  EncoderClassifier model(SmallPostLn().pre_ln(true));
  model->eval();
  model->PrepareInference(at::kFloat);
  const batching::Batch b = MakeVarlen(RandomSequences(5, 6, 2, 40, 100, 3));
  EXPECT_LE(
      MaxAbsDiff(AutogradLogits(model, b, AmpMode::kOff), InferenceLogits(model, b, AmpMode::kOff)),
      1e-5);
}

TEST(FusedInferenceTest, MatchesAutogradPathWithBf16FlashOnGpu) {
  if (!HasCuda()) GTEST_SKIP() << "no CUDA device";
  at::manual_seed(8);
  EncoderClassifier model(GpuTestConfig(0.0));
  model->to(at::Device(at::kCUDA));
  model->eval();
  const batching::Batch b =
      ToDevice(MakeVarlen(RandomSequences(9, 32, 1, 300, 1000, 2)), at::Device(at::kCUDA));
  const at::Tensor autograd = AutogradLogits(model, b, AmpMode::kBf16);
  EXPECT_LE(MaxAbsDiff(autograd, InferenceLogits(model, b, AmpMode::kBf16)), 2e-2);
  model->PrepareInference(at::kBFloat16);
  EXPECT_LE(MaxAbsDiff(autograd, InferenceLogits(model, b, AmpMode::kBf16)), 2e-2);
  // fp32 on the GPU: the memory-efficient kernel, no fused layer, the same logits to fp32.
  EXPECT_LE(
      MaxAbsDiff(AutogradLogits(model, b, AmpMode::kOff), InferenceLogits(model, b, AmpMode::kOff)),
      1e-4);
}

}  // namespace
}  // namespace padless::models
