// The fused inference path (EncoderClassifierImpl::RunLayers without grad mode: the fused layer's
// forward alone, FusedEncoderLayerInfer) against the fused autograd path and the generic layers:
// the same logits, with and without PrepareInference's cached weights, and a stale cache dropped
// by train(true); and FP8 inference weights (PrepareInference(dtype, true)): logits close to the
// unquantized ones, a text's logits independent of its batch (per-token scales), dropped by
// train(true), and on the GPU the tensor-core path against the CPU's exact emulation.
#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>
#include <gtest/gtest.h>

#include "batch_factory.h"
#include "gpu_test_util.h"
#include "padless/cuda/kernels/fp8_rowwise.h"
#include "padless/models/autocast.h"
#include "padless/models/encoder.h"
#include "padless/models/encoder_layer.h"
#include "padless/models/fused_layer.h"

namespace padless::models {
namespace {

using testing::ChangeRuntime;
using testing::GpuTestConfig;
using testing::HasCuda;
using testing::MakeVarlen;
using testing::RandomSequences;
using testing::Sequences;
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
  ASSERT_EQ(model->ResolveBackend(b), AttentionBackend::kVarlenGrouped);
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

// Relative L2 distance of two logit tensors [n, C], each centred over the texts first: the head's
// bias, shared by every text, would otherwise hide how far the texts' own logits moved.
double RelativeDistance(const at::Tensor& got, const at::Tensor& want) {
  const at::Tensor g = got - got.mean(0), w = want - want.mean(0);
  return ((g - w).norm() / w.norm()).item<double>();
}

// Two E4M3 roundings per GEMM (3 mantissa bits; per-channel and per-token scales) over the layers
// of an amplified random model: 1.5 % on the CPU test's seed, where dropping the GEMMs' biases in
// FP8 gives 4.6 %.
constexpr double kFp8LogitTolerance = 0.03;

// A random model whose layers matter: at the initial 0.02 spread the GEMMs add little to the
// residual stream, which would hide their quantization error (and a broken FP8 GEMM) in the
// logits; and biases that are not zero, so that a GEMM that drops its bias shows.
void AmplifyLayerMatrices(EncoderClassifier& model) {
  at::NoGradGuard no_grad;
  for (const auto& item : model->named_parameters()) {
    const std::string& name = item.key();
    if (name.find("layer") == std::string::npos || name.find("norm") != std::string::npos) continue;
    at::Tensor p = item.value();
    if (p.dim() == 2) p.mul_(2);
    if (p.dim() == 1) p.normal_(0, 0.3);
  }
}

TEST(FusedInferenceTest, Fp8WeightsStayCloseToUnquantizedOnCpu) {
  at::manual_seed(9);
  EncoderClassifier model(SmallPostLn());
  AmplifyLayerMatrices(model);
  model->eval();
  const Sequences s = RandomSequences(10, 8, 1, 50, 100, 3);
  const batching::Batch b = MakeVarlen(s);
  const at::Tensor fp32 = InferenceLogits(model, b, AmpMode::kOff);
  model->PrepareInference(at::kFloat, /*fp8_weights=*/true);
  const at::Tensor fp8 = InferenceLogits(model, b, AmpMode::kOff);
  EXPECT_GT(MaxAbsDiff(fp32, fp8), 1e-5);  // FP8 ran
  EXPECT_LT(RelativeDistance(fp8, fp32), kFp8LogitTolerance);
  // Per-token scales: the first text alone gets the logits it got in the batch.
  const Sequences first{{s.tokens[0]}, {s.labels[0]}};
  EXPECT_LE(MaxAbsDiff(InferenceLogits(model, MakeVarlen(first), AmpMode::kOff), fp8[0]), 1e-5);
  // Training drops the FP8 weights with the rest.
  model->train();
  model->eval();
  EXPECT_LE(MaxAbsDiff(InferenceLogits(model, b, AmpMode::kOff), fp32), 1e-6);
}

// Int8 weights on the CPU (PrepareInt8Inference): FBGEMM's int8 GEMMs, fp32 elsewhere; close to
// fp32 (8-bit weights with per-channel scales, activations with one scale per call), and dropped
// by train(true).
TEST(FusedInferenceTest, Int8WeightsStayCloseToFp32OnCpu) {
  at::manual_seed(12);
  EncoderClassifier model(SmallPostLn());
  AmplifyLayerMatrices(model);
  model->eval();
  const batching::Batch b = MakeVarlen(RandomSequences(13, 8, 1, 50, 100, 3));
  const at::Tensor fp32 = InferenceLogits(model, b, AmpMode::kOff);
  ASSERT_TRUE(model->PrepareInt8Inference().ok());
  const at::Tensor int8 = InferenceLogits(model, b, AmpMode::kOff);
  EXPECT_GT(MaxAbsDiff(fp32, int8), 1e-5);  // int8 ran
  EXPECT_LT(RelativeDistance(int8, fp32), kFp8LogitTolerance);
  model->train();
  model->eval();
  EXPECT_LE(MaxAbsDiff(InferenceLogits(model, b, AmpMode::kOff), fp32), 1e-6);
}

// The GPU's FP8 path (the per-row kernel, at::_scaled_mm's rowwise product, bf16 around them)
// against the CPU's exact emulation of the same quantized GEMMs in fp32: no farther apart than
// the GPU's bf16 forward is from the CPU's fp32 one, which is what computing in bf16 costs.
TEST(FusedInferenceTest, Fp8WeightsOnGpuMatchTheCpuEmulation) {
  if (!HasCuda()) GTEST_SKIP() << "no CUDA device";
  at::manual_seed(10);
  EncoderClassifier model(GpuTestConfig(0.0));
  model->eval();
  const batching::Batch cpu_batch = MakeVarlen(RandomSequences(11, 32, 1, 300, 1000, 2));
  const at::Tensor fp32 = InferenceLogits(model, cpu_batch, AmpMode::kOff);
  model->PrepareInference(at::kFloat, /*fp8_weights=*/true);
  const at::Tensor emulated = InferenceLogits(model, cpu_batch, AmpMode::kOff);
  model->to(at::Device(at::kCUDA));
  const batching::Batch b = ToDevice(cpu_batch, at::Device(at::kCUDA));
  model->PrepareInference(at::kBFloat16);
  const at::Tensor bf16 = InferenceLogits(model, b, AmpMode::kBf16).cpu();
  model->PrepareInference(at::kBFloat16, /*fp8_weights=*/true);
  const at::Tensor fp8 = InferenceLogits(model, b, AmpMode::kBf16).cpu();
  ASSERT_TRUE(cuda::LastFp8RowwiseLinearWasFast());
  const double bf16_cost = RelativeDistance(bf16, fp32);
  EXPECT_GT(RelativeDistance(fp8, bf16), 1e-4);  // FP8 ran
  EXPECT_LT(RelativeDistance(fp8, bf16), kFp8LogitTolerance);
  EXPECT_LT(RelativeDistance(fp8, emulated), 2 * bf16_cost + 1e-3)
      << "bf16 against fp32: " << bf16_cost;
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

// One layer's first-token rows (FusedEncoderLayerInfer with out_rows: one query per sequence
// against its whole sequence, then n rows through the rest of the layer) against those rows of the
// whole layer's output, on the CPU reference backend: sequences of one token and of many, in
// fp32 and with FP8 weights (emulated), poisoned outputs ruled out by checking every row.
TEST(FusedInferenceTest, FirstTokenRowsOfALayerEqualThoseRowsOfTheWholeLayer) {
  at::manual_seed(14);
  const EncoderConfig config = SmallPostLn();
  EncoderLayer layer(config, 0);
  {
    at::NoGradGuard no_grad;
    for (at::Tensor w : layer->weights()) w.add_(at::randn_like(w) * 0.3);
  }
  LayerSpec spec;
  spec.head_dim = config.head_dim();
  const std::vector<int64_t> offsets = {0, 1, 9, 10, 30, 31, 47};
  const int64_t n = static_cast<int64_t>(offsets.size()) - 1;
  AttentionContext ctx;
  ctx.backend = AttentionBackend::kVarlenReference;
  ctx.cu_seqlens = at::tensor(offsets, at::kInt);
  ctx.max_seqlen = 20;
  ctx.host_offsets = offsets;
  const at::Tensor first = ctx.cu_seqlens.narrow(0, 0, n).to(at::kLong);
  InferenceRows in;
  in.x = at::randn({offsets.back(), config.hidden()});
  const std::vector<Fp8LayerWeights> fp8 = QuantizeInferenceWeights({layer->weights()});
  for (const Fp8LayerWeights* weights : {static_cast<const Fp8LayerWeights*>(nullptr), &fp8[0]}) {
    c10::InferenceMode inference;
    const at::Tensor whole =
        FusedEncoderLayerInfer(in, layer->weights(), spec, ctx, nullptr, weights).x;
    const at::Tensor rows = FusedEncoderLayerInfer(in, layer->weights(), spec, ctx, nullptr,
                                                   weights, false, nullptr, first)
                                .x;
    ASSERT_EQ(rows.sizes(), (at::IntArrayRef{n, config.hidden()}));
    EXPECT_LE(MaxAbsDiff(rows, whole.index_select(0, first)), 1e-5) << (weights ? "fp8" : "fp32");
    // Not the whole layer's other rows: each row is its own sequence's.
    EXPECT_GT(MaxAbsDiff(rows, whole.narrow(0, 0, n)), 1e-2);
  }
}

// The model under [CLS] pooling computes its last layer for the first tokens alone by default
// (ModelRuntime::last_layer_rows_only): the same logits as every row, on the CPU in fp32, with FP8
// (emulated) and int8 weights, and with mean pooling (which needs every row) unchanged.
TEST(FusedInferenceTest, LastLayerOfFirstTokensGivesTheSameLogitsOnCpu) {
  for (Pooling pooling : {Pooling::kCls, Pooling::kMean}) {
    at::manual_seed(15);
    EncoderClassifier model(SmallPostLn().pooling(pooling));
    AmplifyLayerMatrices(model);
    model->eval();
    const batching::Batch b = MakeVarlen(RandomSequences(16, 9, 1, 50, 100, 3));
    const auto both = [&](const char* what, double tolerance) {
      ChangeRuntime(model, [](ModelRuntime& r) { r.last_layer_rows_only = false; });
      const at::Tensor every_row = InferenceLogits(model, b, AmpMode::kOff);
      ChangeRuntime(model, [](ModelRuntime& r) { r.last_layer_rows_only = true; });
      EXPECT_LE(MaxAbsDiff(InferenceLogits(model, b, AmpMode::kOff), every_row), tolerance) << what;
    };
    both("fp32", 1e-5);
    model->PrepareInference(at::kFloat);
    both("fp32 prepared", 1e-5);
    model->PrepareInference(at::kFloat, /*fp8_weights=*/true);
    both("fp8", 1e-5);
    // Int8Linear quantizes its input with one scale per call: fewer rows, another scale.
    ASSERT_TRUE(model->PrepareInt8Inference().ok());
    both("int8", 2e-2);
  }
}

TEST(FusedInferenceTest, LastLayerOfFirstTokensGivesTheSameLogitsWithBf16FlashOnGpu) {
  if (!HasCuda()) GTEST_SKIP() << "no CUDA device";
  at::manual_seed(17);
  EncoderClassifier model(GpuTestConfig(0.0));
  model->to(at::Device(at::kCUDA));
  model->eval();
  // Lengths from 1 to 300: one-query tiles against one to three key tiles of flash attention.
  const batching::Batch b =
      ToDevice(MakeVarlen(RandomSequences(18, 40, 1, 300, 1000, 2)), at::Device(at::kCUDA));
  for (bool fp8 : {false, true}) {
    model->PrepareInference(at::kBFloat16, fp8);
    ChangeRuntime(model, [](ModelRuntime& r) { r.last_layer_rows_only = false; });
    const at::Tensor every_row = InferenceLogits(model, b, AmpMode::kBf16);
    ChangeRuntime(model, [](ModelRuntime& r) { r.last_layer_rows_only = true; });
    const at::Tensor first_rows = InferenceLogits(model, b, AmpMode::kBf16);
    // bf16 GEMMs over fewer rows may round differently: the tolerance of the bf16 tests above.
    EXPECT_LE(MaxAbsDiff(first_rows, every_row), 2e-2) << (fp8 ? "fp8" : "bf16");
    EXPECT_FALSE(first_rows.isnan().any().item<bool>());
  }
}

}  // namespace
}  // namespace padless::models
