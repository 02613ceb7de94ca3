// FP8 training (AmpMode::kFp8):
// - Fp8Scaling's delayed scaling: calibration, history, non-finite amaxes, margin, checkpoints,
//   broken input;
// - the fused layer with FP8 GEMMs (CPU, fp32 compute, reference attention; GPU, bf16 and flash):
//   close to the same layer without FP8 within FP8's rounding and measurably not equal to it,
//   every operand's amax recorded, recomputing quantizes exactly as the forward did, the scales do
//   not move within a step;
// - TrainStep installs the scales, advances them every step, and a small model learns.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/cuda.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "batch_factory.h"
#include "gpu_test_util.h"
#include "layer_test_util.h"
#include "packing_test_util.h"
#include "padless/cuda/memory/memory_meter.h"
#include "padless/models/autocast.h"
#include "padless/models/encoder.h"
#include "padless/models/fp8_scaling.h"
#include "padless/models/fused_layer.h"
#include "padless/train/train_step.h"

namespace padless::models {
namespace {

using cuda::testing::ExpectC10Error;
using testing::ChangeRuntime;
using testing::HasCuda;
using testing::kHidden;
using testing::LayerRun;
using testing::MakeVarlen;
using testing::RandomLayerWeights;
using testing::RandomSequences;
using testing::ReferenceContext;
using testing::Relative;
using testing::RunLayer;
using testing::ToDevice;

// Scaling options with an amax history of `history` steps and the default margin.
Fp8ScalingOptions History(int64_t history) {
  Fp8ScalingOptions options;
  options.history = history;
  return options;
}

train::GradScalerOptions NoLossScaling() {
  train::GradScalerOptions options;
  options.enabled = false;
  return options;
}

float At(const at::Tensor& t) { return t.item<float>(); }


TEST(Fp8ScalingTest, FormatsPerOperand) {
  EXPECT_EQ(Fp8FormatOf(Fp8Operand::kInput), cuda::Fp8Format::kE4M3);
  EXPECT_EQ(Fp8FormatOf(Fp8Operand::kWeight), cuda::Fp8Format::kE4M3);
  EXPECT_EQ(Fp8FormatOf(Fp8Operand::kGrad), cuda::Fp8Format::kE5M2);
}

TEST(Fp8ScalingTest, StartsCalibratingWithUnitScales) {
  Fp8Scaling s(3, at::kCPU);
  EXPECT_TRUE(s.calibrating());
  EXPECT_EQ(s.gemms(), 3);
  for (int64_t g = 0; g < 3; ++g) {
    for (Fp8Operand o : {Fp8Operand::kInput, Fp8Operand::kWeight, Fp8Operand::kGrad}) {
      EXPECT_EQ(At(s.scale(g, o)), 1.0f);
      EXPECT_EQ(At(s.scale_inv(g, o)), 1.0f);
      EXPECT_EQ(At(s.amax(g, o)), 0.0f);
      EXPECT_EQ(s.scale(g, o).numel(), 1);
      // cuBLASLt's FP8 GEMMs want 16-byte aligned pointers, the scales' included.
      EXPECT_EQ(reinterpret_cast<uintptr_t>(s.scale_inv(g, o).data_ptr()) % 16, 0u);
      EXPECT_EQ(reinterpret_cast<uintptr_t>(s.amax(g, o).data_ptr()) % 16, 0u);
    }
  }
}

TEST(Fp8ScalingTest, CalibrateSetsOneSlotFromTheTensorInHand) {
  Fp8Scaling s(2, at::kCPU);
  s.Calibrate(1, Fp8Operand::kInput, at::tensor({2.0f}));
  s.Calibrate(1, Fp8Operand::kGrad, at::full({}, 4.0));
  EXPECT_EQ(At(s.scale(1, Fp8Operand::kInput)), 224.0f);
  EXPECT_FLOAT_EQ(At(s.scale_inv(1, Fp8Operand::kInput)), 1.0f / 224.0f);
  EXPECT_EQ(At(s.scale(1, Fp8Operand::kGrad)), 14336.0f);
  EXPECT_EQ(At(s.scale(0, Fp8Operand::kInput)), 1.0f);  // other slots untouched
  EXPECT_EQ(At(s.scale(1, Fp8Operand::kWeight)), 1.0f);
  // Nothing to scale by: the slot keeps its scale.
  for (float bad : {0.0f, std::numeric_limits<float>::infinity(), std::nanf("")}) {
    s.Calibrate(1, Fp8Operand::kInput, at::tensor({bad}));
    EXPECT_EQ(At(s.scale(1, Fp8Operand::kInput)), 224.0f) << bad;
  }
}

TEST(Fp8ScalingTest, AdvanceScalesFromTheLargestAmaxOfTheHistory) {
  Fp8Scaling s(1, at::kCPU, History(2));
  const at::Tensor in = s.amax(0, Fp8Operand::kInput);
  in.fill_(8.0);
  s.amax(0, Fp8Operand::kGrad).fill_(0.5);
  s.Advance();
  EXPECT_FALSE(s.calibrating());
  EXPECT_EQ(At(s.scale(0, Fp8Operand::kInput)), 56.0f);
  EXPECT_EQ(At(s.scale(0, Fp8Operand::kGrad)), 114688.0f);
  EXPECT_EQ(At(s.scale(0, Fp8Operand::kWeight)), 1.0f);  // never recorded: unchanged
  EXPECT_EQ(At(in), 0.0f);                               // reset for the next step
  in.fill_(2.0);
  s.Advance();
  EXPECT_EQ(At(s.scale(0, Fp8Operand::kInput)), 56.0f);  // 8 is still in the history
  in.fill_(1.0);
  s.Advance();
  EXPECT_EQ(At(s.scale(0, Fp8Operand::kInput)), 224.0f);  // 8 left it: max(2, 1)
  EXPECT_FLOAT_EQ(At(s.scale_inv(0, Fp8Operand::kInput)), 1.0f / 224.0f);
}

TEST(Fp8ScalingTest, CountsTheGemmsThatQuantizedTheirInput) {
  Fp8Scaling s(3, at::kCPU, History(2));
  EXPECT_EQ(s.GemmsInHistory(), 0);
  s.amax(1, Fp8Operand::kInput).fill_(1.0);
  s.amax(2, Fp8Operand::kWeight).fill_(1.0);  // a weight alone: its GEMM did not run
  s.Advance();
  EXPECT_EQ(s.GemmsInHistory(), 1);
  s.amax(0, Fp8Operand::kInput).fill_(1.0);
  s.Advance();
  EXPECT_EQ(s.GemmsInHistory(), 2);
  s.Advance();
  s.Advance();  // both steps left the history
  EXPECT_EQ(s.GemmsInHistory(), 0);
}

TEST(Fp8ScalingTest, NonFiniteAmaxesDoNotEnterTheHistory) {
  Fp8Scaling s(1, at::kCPU, History(4));
  s.amax(0, Fp8Operand::kInput).fill_(4.0);
  s.Advance();
  s.amax(0, Fp8Operand::kInput).fill_(std::numeric_limits<float>::infinity());
  s.amax(0, Fp8Operand::kWeight).fill_(std::nanf(""));
  s.Advance();
  EXPECT_EQ(At(s.scale(0, Fp8Operand::kInput)), 112.0f);
  EXPECT_EQ(At(s.scale(0, Fp8Operand::kWeight)), 1.0f);
}

TEST(Fp8ScalingTest, MarginLeavesHeadroom) {
  Fp8ScalingOptions options = History(1);
  options.margin = 2;
  Fp8Scaling s(1, at::kCPU, options);
  s.amax(0, Fp8Operand::kInput).fill_(1.0);
  s.Advance();
  EXPECT_EQ(At(s.scale(0, Fp8Operand::kInput)), 112.0f);
}

TEST(Fp8ScalingTest, StateRoundTripsAndResumesTheSameScales) {
  Fp8Scaling a(2, at::kCPU, History(3));
  for (float v : {3.0f, 5.0f}) {
    a.amax(1, Fp8Operand::kGrad).fill_(v);
    a.Advance();
  }
  Fp8Scaling b(2, at::kCPU, History(3));
  b.load_state(a.state());
  EXPECT_FALSE(b.calibrating());
  EXPECT_TRUE(at::equal(a.state(), b.state()));
  for (Fp8Scaling* s : {&a, &b}) {
    s->amax(1, Fp8Operand::kGrad).fill_(1.0);
    s->Advance();
    s->amax(1, Fp8Operand::kGrad).fill_(1.0);
    s->Advance();  // 3 and then 5 leave the history in this order
  }
  EXPECT_TRUE(at::equal(a.state(), b.state()));
  EXPECT_EQ(At(b.scale(1, Fp8Operand::kGrad)), 57344.0f / 5.0f);
  Fp8Scaling fresh(2, at::kCPU, History(3));
  Fp8Scaling c(2, at::kCPU, History(3));
  c.load_state(fresh.state());
  EXPECT_TRUE(c.calibrating());
}

TEST(Fp8ScalingTest, BrokenOptionsAndStatesThrow) {
  ExpectC10Error([] { Fp8Scaling(0, at::kCPU); }, "at least one GEMM");
  ExpectC10Error([] { Fp8Scaling(1, at::kCPU, History(0)); }, "history");
  ExpectC10Error(
      [] {
        Fp8ScalingOptions options;
        options.margin = -1;
        Fp8Scaling(1, at::kCPU, options);
      },
      "margin");
  Fp8Scaling s(2, at::kCPU, History(3));
  ExpectC10Error([&] { s.scale(2, Fp8Operand::kInput); }, "out of");
  ExpectC10Error([&] { s.amax(-1, Fp8Operand::kInput); }, "out of");
  const at::Tensor good = s.state();
  ExpectC10Error([&] { s.load_state(good.narrow(0, 0, 4)); }, "does not fit");
  ExpectC10Error([&] { s.load_state(good.to(at::kDouble)); }, "does not fit");
  ExpectC10Error([&] { s.load_state(good.narrow(1, 0, 3)); }, "does not fit");
  at::Tensor nan_scale = good.clone();
  nan_scale[0][1] = std::nanf("");
  ExpectC10Error([&] { s.load_state(nan_scale); }, "finite and positive");
  at::Tensor zero_scale = good.clone();
  zero_scale[0][0] = 0.0;
  ExpectC10Error([&] { s.load_state(zero_scale); }, "finite and positive");
  at::Tensor position = good.clone();
  position[1][0] = 3.0;
  ExpectC10Error([&] { s.load_state(position); }, "position");
  EXPECT_TRUE(at::equal(s.state(), good));  // nothing loaded from a broken state
}

TEST(Fp8ScalingTest, CpuIsAnFp8Device) { EXPECT_TRUE(CheckFp8Device(at::kCPU).ok()); }

// --- The fused layer with FP8 GEMMs ---

constexpr int64_t kLayerGemmSlots = kFusedLayerGemms * kFp8OperandsPerGemm;

LayerSpec Spec(double dropout) {
  LayerSpec spec;
  spec.head_dim = testing::kHidden / testing::kHeads;
  spec.eps = 1e-5;
  spec.activation = Activation::kGelu;
  spec.dropout = dropout;
  return spec;
}

// The scales of `s` after one calibrating run of the layer, as a training run's second step
// would use them.
void Calibrate(Fp8Scaling& s, const at::Tensor& x, const std::vector<at::Tensor>& w,
               const LayerSpec& spec, const AttentionContext& ctx, const at::Tensor& probe) {
  RunLayer(true, FusedSaving::kSaveAll, x, w, spec, ctx, probe, nullptr, {&s, 0});
  s.Advance();
}

// Runs the layer with FP8 GEMMs after a calibrating step, and without, and compares.
void ExpectCloseToTheLayerWithoutFp8(const at::Tensor& x, const std::vector<at::Tensor>& w,
                                     const LayerSpec& spec, const AttentionContext& ctx,
                                     const at::Tensor& probe, double differs_by_at_least) {
  Fp8Scaling s(kFusedLayerGemms, x.device());
  Calibrate(s, x, w, spec, ctx, probe);
  const LayerRun exact = RunLayer(true, FusedSaving::kSaveAll, x, w, spec, ctx, probe);
  const LayerRun fp8 =
      RunLayer(true, FusedSaving::kSaveAll, x, w, spec, ctx, probe, nullptr, {&s, 0});
  // E4M3 keeps 3 mantissa bits (rounding errors up to 1/16 relative, about 0.036 rms), E5M2 2
  // (0.072 rms): one GEMM's product is off by about 0.05 (forward) and 0.08 (backward) rms, and the
  // layer chains them. Measured on the CPU test: 0.054 for the output, 0.01-0.12 for the gradients.
  EXPECT_LT(Relative(exact.out, fp8.out), 0.08);
  EXPECT_GT(Relative(exact.out, fp8.out), differs_by_at_least);  // FP8 did run
  for (size_t i = 0; i < exact.grads.size(); ++i) {
    EXPECT_LT(Relative(exact.grads[i], fp8.grads[i]), 0.2) << "gradient " << i;
    EXPECT_TRUE(fp8.grads[i].isfinite().all().item<bool>()) << "gradient " << i;
  }
  // Every operand of every GEMM recorded its amax this step.
  const at::Tensor history = s.state().narrow(0, 2, 16);
  EXPECT_GT(history.select(0, 0).min().item<float>(), 0.0f);
  EXPECT_EQ(history.select(0, 0).numel(), kLayerGemmSlots);
}

TEST(Fp8LayerTest, CloseToTheLayerWithoutFp8AndNotEqualToIt) {
  at::manual_seed(51);
  const std::vector<at::Tensor> w = RandomLayerWeights(at::kFloat);
  const AttentionContext ctx = ReferenceContext({5, 1, 12, 7, 30});
  const LayerSpec spec = Spec(0.0);
  const at::Tensor x = at::randn({55, kHidden});
  const at::Tensor probe = at::randn({55, kHidden});
  ExpectCloseToTheLayerWithoutFp8(x, w, spec, ctx, probe, /*differs_by_at_least=*/1e-4);
}

// Recomputing (every mode) quantizes exactly as the forward did: the same output and gradients,
// bitwise, and the scales do not move within a step. For fp32 compute with erf GELU, and for bf16
// with tanh GELU, where the FFN-in GEMM writes the GELU output in E4M3 itself (the reference path
// of cuda::ScaledMmGeluAuxToFp8 here), not lean: a lean layer keeps no GELU output in any form,
// and its backward recomputes one from the pre-activation in the compute dtype, whose E4M3 bytes
// are within one rounding of the epilogue's, not equal to them.
void ExpectRecomputeQuantizesAsTheForwardDid(at::ScalarType dtype, Activation activation,
                                             bool lean) {
  at::manual_seed(52);
  const std::vector<at::Tensor> w = RandomLayerWeights(at::kFloat);
  const AttentionContext ctx = ReferenceContext({9, 3, 16});
  LayerSpec spec = Spec(0.1);  // dropout: the recompute replays the forward's masks
  spec.activation = activation;
  spec.lean = lean;
  const at::Tensor x = at::randn({28, kHidden}).to(dtype);
  const at::Tensor probe = at::randn({28, kHidden}).to(dtype);
  Fp8Scaling s(kFusedLayerGemms, at::kCPU);
  Calibrate(s, x, w, spec, ctx, probe);
  const at::Tensor scales = s.state().select(0, 0).clone();
  auto run = [&](FusedSaving saving) {
    at::manual_seed(7);
    return RunLayer(true, saving, x, w, spec, ctx, probe, nullptr, {&s, 0});
  };
  const LayerRun saved = run(FusedSaving::kSaveAll);
  for (FusedSaving mode : {FusedSaving::kRecomputeAll, FusedSaving::kRecomputeToActivation}) {
    const LayerRun recomputed = run(mode);
    EXPECT_TRUE(at::equal(saved.out, recomputed.out));
    for (size_t i = 0; i < saved.grads.size(); ++i) {
      EXPECT_TRUE(at::equal(saved.grads[i], recomputed.grads[i])) << "gradient " << i;
    }
  }
  // Within a step the scales stay as they were; only Advance moves them.
  EXPECT_TRUE(at::equal(scales, s.state().select(0, 0)));
}

TEST(Fp8LayerTest, RecomputeQuantizesAsTheForwardDid) {
  ExpectRecomputeQuantizesAsTheForwardDid(at::kFloat, Activation::kGelu, /*lean=*/true);
}

TEST(Fp8LayerTest, RecomputeWritesTheGeluBytesTheForwardDid) {
  ExpectRecomputeQuantizesAsTheForwardDid(at::kBFloat16, Activation::kGeluTanh, /*lean=*/false);
}

TEST(Fp8LayerTest, FrozenWeightsGetNoGradient) {
  at::manual_seed(53);
  std::vector<at::Tensor> w = RandomLayerWeights(at::kFloat);
  for (int i : {kQkvWeight, kFfnOutWeight}) w[i] = w[i].detach();
  const AttentionContext ctx = ReferenceContext({4, 11});
  const at::Tensor x = at::randn({15, kHidden});
  Fp8Scaling s(kFusedLayerGemms, at::kCPU);
  const LayerRun r = RunLayer(true, FusedSaving::kSaveAll, x, w, Spec(0.0), ctx,
                              at::randn({15, kHidden}), nullptr, {&s, 0});
  EXPECT_FALSE(r.grads[1 + kQkvWeight].defined());
  EXPECT_FALSE(r.grads[1 + kFfnOutWeight].defined());
  EXPECT_TRUE(r.grads[1 + kFfnInWeight].defined());
  EXPECT_TRUE(r.grads[0].isfinite().all().item<bool>());
}

TEST(Fp8LayerTest, GemmsOutsideTheScalingAreAnError) {
  const std::vector<at::Tensor> w = RandomLayerWeights(at::kFloat);
  const AttentionContext ctx = ReferenceContext({4});
  Fp8Scaling s(4, at::kCPU);
  ExpectC10Error(
      [&] {
        FusedEncoderLayerForward(at::randn({4, kHidden}), w, Spec(0.0), ctx,
                                 FusedSaving::kSaveAll, nullptr, {&s, 1});
      },
      "outside the scaling");
}

// --- TrainStep ---

EncoderConfig SmallConfig() {
  return EncoderConfig()
      .vocab_size(100)
      .hidden(32)
      .layers(2)
      .heads(4)
      .ffn(64)
      .max_positions(64)
      .dropout(0.0)
      .attention_dropout(0.0);
}

struct Fp8Rig {
  explicit Fp8Rig(const c10::Device& device) : model(SmallConfig()) {
    model->to(device);
    model->train();
    ChangeRuntime(model,
                  [](ModelRuntime& r) { r.attention = AttentionBackend::kVarlenReference; });
    params = train::ParametersForAdamW(model);
    optimizer = std::make_unique<train::FusedAdamW>(params.params, params.decay, train::AdamWOptions{});
    train::TrainStepOptions options;
    options.amp = AmpMode::kFp8;
    step = std::make_unique<train::TrainStep>(model, params.params, *optimizer, scaler, device, options);
  }
  EncoderClassifier model;
  train::AdamWParameters params;
  std::unique_ptr<train::FusedAdamW> optimizer;
  train::GradScaler scaler{NoLossScaling()};
  std::unique_ptr<train::TrainStep> step;
};

TEST(Fp8TrainStepTest, InstallsTheScalesAdvancesThemAndLearns) {
  at::manual_seed(54);
  Fp8Rig rig(at::kCPU);
  const std::shared_ptr<Fp8Scaling> fp8 = rig.model->runtime().fp8;
  ASSERT_NE(fp8, nullptr);
  EXPECT_EQ(fp8->gemms(), 2 * kFusedLayerGemms);
  const batching::Batch b = MakeVarlen(RandomSequences(8, 12, 3, 30, 100, 2));
  std::vector<float> losses;
  for (int64_t i = 0; i < 30; ++i) {
    absl::StatusOr<train::StepResult> r = rig.step->Run(i, 3e-3, {train::StepBatch{nullptr, b}});
    ASSERT_TRUE(r.ok()) << r.status();
    losses.push_back(r->loss.item<float>());
    if (i == 0) {
      EXPECT_FALSE(fp8->calibrating());
      // Every operand of every layer's GEMMs went through FP8 and entered the history.
      EXPECT_GT(fp8->state().select(0, 2).min().item<float>(), 0.0f);
    }
  }
  EXPECT_TRUE(std::isfinite(losses.back()));
  EXPECT_LT(losses.back(), 0.5f * losses.front());  // it memorises one batch
}

// --- GPU (skips without CUDA): bf16 compute, flash attention ---

// A 256-wide layer (4 heads of 64, FFN 1024) on the GPU, its weights moved off their initial
// values.
std::vector<at::Tensor> GpuLayerWeights(const at::Device& gpu) {
  EncoderLayer layer(EncoderConfig().hidden(256).heads(4).ffn(1024), 0);
  std::vector<at::Tensor> w;
  for (const at::Tensor& t : layer->weights()) {
    w.push_back((t + at::randn_like(t) * 0.02).to(gpu).detach().requires_grad_(true));
  }
  return w;
}

// Flash attention over sequences of these lengths.
AttentionContext FlashContext(const std::vector<int64_t>& lengths, const at::Device& gpu) {
  AttentionContext ctx;
  ctx.backend = AttentionBackend::kVarlenFlash;
  ctx.host_offsets = {0};
  for (int64_t n : lengths) ctx.host_offsets.push_back(ctx.host_offsets.back() + n);
  ctx.max_seqlen = *std::max_element(lengths.begin(), lengths.end());
  ctx.cu_seqlens = at::tensor(ctx.host_offsets, at::kInt).to(gpu);
  return ctx;
}

TEST(Fp8LayerGpuTest, CloseToTheBf16LayerUnderFlash) {
  if (!HasCuda()) GTEST_SKIP() << "no CUDA device";
  if (!CheckFp8Device(at::Device(at::kCUDA)).ok()) GTEST_SKIP() << "no FP8 tensor cores";
  at::manual_seed(55);
  const at::Device gpu(at::kCUDA);
  const std::vector<at::Tensor> w = GpuLayerWeights(gpu);
  // 431 tokens: not a multiple of 16
  const AttentionContext ctx = FlashContext({100, 3, 250, 17, 61}, gpu);
  LayerSpec spec = Spec(0.0);
  spec.head_dim = 64;  // 4 heads of this layer's 256
  const at::Tensor x = at::randn({431, 256}, gpu).to(at::kBFloat16);
  const at::Tensor probe = at::randn({431, 256}, gpu).to(at::kBFloat16);
  AutocastGuard autocast(at::kCUDA, AmpMode::kBf16);
  // bf16 rounds to 8 bits: FP8 must differ from it by more than that.
  ExpectCloseToTheLayerWithoutFp8(x, w, spec, ctx, probe, /*differs_by_at_least=*/1e-2);
}

// On the GPU the FFN-in GEMM writes the GELU output in E4M3 itself (Fp8LinearGeluToFp8), and a
// recompute must write the same bytes: the output and every gradient that the attention's backward
// does not reach are bitwise those of saving everything (flash sums dq with atomics, so q/k/v's and
// x's gradients are compared within bf16 rounding); not lean, as on the CPU above. Saving
// everything is compared with itself too. The FFN-out GEMM's input amax, which the epilogue
// reports instead of a cast pass, is recorded and a recompute does not move it.
TEST(Fp8LayerGpuTest, RecomputeWritesTheGeluBytesTheForwardDid) {
  if (!HasCuda()) GTEST_SKIP() << "no CUDA device";
  if (!CheckFp8Device(at::Device(at::kCUDA)).ok()) GTEST_SKIP() << "no FP8 tensor cores";
  at::manual_seed(58);
  const at::Device gpu(at::kCUDA);
  const std::vector<at::Tensor> w = GpuLayerWeights(gpu);
  const AttentionContext ctx = FlashContext({90, 3, 207, 47}, gpu);  // 347 tokens: 352 in FP8
  LayerSpec spec = Spec(0.1);  // dropout: the recompute replays the forward's masks
  spec.head_dim = 64;
  spec.lean = false;
  const at::Tensor x = at::randn({347, 256}, gpu).to(at::kBFloat16);
  const at::Tensor probe = at::randn({347, 256}, gpu).to(at::kBFloat16);
  AutocastGuard autocast(at::kCUDA, AmpMode::kBf16);
  Fp8Scaling s(kFusedLayerGemms, gpu);
  Calibrate(s, x, w, spec, ctx, probe);
  auto run = [&](FusedSaving saving) {
    at::manual_seed(7);
    return RunLayer(true, saving, x, w, spec, ctx, probe, nullptr, {&s, 0});
  };
  constexpr int64_t kFfnOut = 3;  // GEMM order: QKV, output projection, FFN in, FFN out
  const LayerRun saved = run(FusedSaving::kSaveAll);
  const float gelu_amax = At(s.amax(kFfnOut, Fp8Operand::kInput));
  EXPECT_GT(gelu_amax, 0.0f);
  const std::vector<size_t> after_attention = {0, 1 + kQkvWeight, 1 + kQkvBias};
  for (FusedSaving mode : {FusedSaving::kSaveAll, FusedSaving::kRecomputeAll,
                           FusedSaving::kRecomputeToActivation}) {
    const LayerRun again = run(mode);
    const std::string what = "mode " + std::to_string(static_cast<int>(mode));
    EXPECT_TRUE(at::equal(saved.out, again.out)) << what;
    for (size_t i = 0; i < saved.grads.size(); ++i) {
      const std::string grad = what + ", gradient " + std::to_string(i) + ": relative " +
                               std::to_string(Relative(saved.grads[i], again.grads[i]));
      if (std::find(after_attention.begin(), after_attention.end(), i) != after_attention.end()) {
        EXPECT_LT(Relative(saved.grads[i], again.grads[i]), 1e-2) << grad;
      } else {
        EXPECT_TRUE(at::equal(saved.grads[i], again.grads[i])) << grad;
      }
    }
    EXPECT_EQ(At(s.amax(kFfnOut, Fp8Operand::kInput)), gelu_amax) << what;
  }
}

// Saving everything, the FP8 layer keeps the one-byte transposes its backward GEMMs take in place
// of the FFN GEMMs' bf16 inputs (LN1's output, 2H bytes a token, and the GELU output, 8H): 3H
// bytes a token less than the bf16 layer. A lean layer keeps no GELU output in either form: H
// bytes a token more. Both plus the weights' transposes (12 H^2 bytes).
TEST(Fp8LayerGpuTest, SavingEverythingKeepsTheTransposesInsteadOfTheFfnInputs) {
  if (!HasCuda()) GTEST_SKIP() << "no CUDA device";
  if (!CheckFp8Device(at::Device(at::kCUDA)).ok()) GTEST_SKIP() << "no FP8 tensor cores";
  at::manual_seed(57);
  const at::Device gpu(at::kCUDA);
  constexpr int64_t kH = 256, kTokens = 4096;
  EncoderLayer layer(EncoderConfig().hidden(kH).heads(4).ffn(4 * kH), 0);
  std::vector<at::Tensor> w;
  for (const at::Tensor& t : layer->weights()) w.push_back(t.to(gpu).detach().requires_grad_(true));
  AttentionContext ctx;
  ctx.backend = AttentionBackend::kVarlenFlash;
  for (int64_t i = 0; i <= 8; ++i) ctx.host_offsets.push_back(i * kTokens / 8);
  ctx.max_seqlen = kTokens / 8;
  ctx.cu_seqlens = at::tensor(ctx.host_offsets, at::kInt).to(gpu);
  LayerSpec spec = Spec(0.1);
  spec.head_dim = 64;
  const at::Tensor x = at::randn({kTokens, kH}, gpu).to(at::kBFloat16).requires_grad_(true);
  AutocastGuard autocast(at::kCUDA, AmpMode::kBf16);
  Fp8Scaling s(kFusedLayerGemms, gpu);
  cuda::MemoryMeter meter(gpu);
  // Bytes the layer holds on to until its backward (its output included).
  auto kept = [&](Fp8Scaling* scaling) {
    torch::cuda::synchronize();
    const int64_t before = meter.Snapshot().allocated_bytes;
    at::Tensor y =
        FusedEncoderLayerForward(x, w, spec, ctx, FusedSaving::kSaveAll, nullptr, {scaling, 0});
    torch::cuda::synchronize();
    const int64_t bytes = meter.Snapshot().allocated_bytes - before;
    y.sum().backward();  // and the backward runs on what it kept
    EXPECT_TRUE(w[kFfnInWeight].grad().isfinite().all().item<bool>());
    for (const at::Tensor& t : w) t.mutable_grad().reset();
    return bytes;
  };
  kept(&s);  // calibrates; cuBLASLt and flash workspaces exist from here on
  s.Advance();
  constexpr int64_t kWeightTransposes = 12 * kH * kH;
  for (bool lean : {false, true}) {
    spec.lean = lean;
    const int64_t bf16 = kept(nullptr);
    const int64_t fp8 = kept(&s);
    const int64_t expected = bf16 + (lean ? kH : -3 * kH) * kTokens + kWeightTransposes;
    EXPECT_LE(fp8, expected) << "lean " << lean << ": fp8 " << fp8 << " bf16 " << bf16;
    EXPECT_GE(fp8, expected - 64 * 1024) << "lean " << lean << ": fp8 " << fp8 << " bf16 " << bf16;
  }
}

TEST(Fp8TrainStepGpuTest, LearnsOnTheGpu) {
  if (!HasCuda()) GTEST_SKIP() << "no CUDA device";
  if (!CheckFp8Device(at::Device(at::kCUDA)).ok()) GTEST_SKIP() << "no FP8 tensor cores";
  at::manual_seed(56);
  const at::Device gpu(at::kCUDA);
  Fp8Rig rig(gpu);
  ChangeRuntime(rig.model, [](ModelRuntime& r) { r.attention = AttentionBackend::kAuto; });
  const batching::Batch b = ToDevice(MakeVarlen(RandomSequences(9, 12, 3, 30, 100, 2)), gpu);
  std::vector<float> losses;
  for (int64_t i = 0; i < 30; ++i) {
    absl::StatusOr<train::StepResult> r = rig.step->Run(i, 3e-3, {train::StepBatch{nullptr, b}});
    ASSERT_TRUE(r.ok()) << r.status();
    losses.push_back(r->loss.item<float>());
  }
  EXPECT_GT(rig.model->runtime().fp8->state().select(0, 2).min().item<float>(), 0.0f);
  EXPECT_LT(losses.back(), 0.5f * losses.front());
}

}  // namespace
}  // namespace padless::models
