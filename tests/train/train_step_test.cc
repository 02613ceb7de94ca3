// TrainStep: the trainer's optimizer step is exactly a TrainStep (bitwise), an out-of-memory split
// gives the unsplit step's parameters, a non-finite loss skips the step without touching any
// state, and without a corpus to re-collate from an out-of-memory error propagates.
#include "padless/train/train_step.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "gpu_test_util.h"
#include "padless/batching/collator.h"
#include "padless/batching/planner.h"
#include "padless/train/lr_schedule.h"
#include "padless/train/trainer.h"
#include "padless/tokenize/special_tokens.h"
#include "trainer_fixtures.h"

namespace padless::train {
namespace {

using testing::BitwiseEqual;
using testing::MaxDiff;
using testing::NoLossScaling;
using testing::Params;
using testing::Plan;
using testing::Quiet;
using testing::SyntheticCorpus;
using testing::TinyConfig;

// The first epoch's first `n` planned batches of `data`, with their specs.
struct PlannedBatches {
  std::vector<batching::BatchSpec> specs;
  std::vector<StepBatch> batches;
};

PlannedBatches FirstBatches(const corpus::TokenizedCorpus& data, int64_t n) {
  PlannedBatches out;
  absl::StatusOr<std::vector<batching::BatchSpec>> plan =
      batching::Planner(Plan(batching::Sampler::kRandom)).Plan(data.Lengths(), 0);
  EXPECT_TRUE(plan.ok()) << plan.status();
  out.specs.assign(plan->begin(), plan->begin() + n);
  batching::CollatorOptions collator_options;
  collator_options.pad_id = tokenize::kPadId;
  batching::Collator collator(collator_options);
  for (const batching::BatchSpec& spec : out.specs) {
    absl::StatusOr<batching::Batch> b = collator.Collate(data, spec);
    EXPECT_TRUE(b.ok()) << b.status();
    out.batches.push_back(StepBatch{&spec, *b});
  }
  return out;
}

// A model, its trainer-style optimizer and one TrainStep over it.
struct StepRig {
  explicit StepRig(TrainStepOptions options, uint64_t seed = 6) {
    at::manual_seed(seed);
    model = models::EncoderClassifier(TinyConfig(0.0));
    model->train();
    params = ParametersForAdamW(model);
    optimizer = std::make_unique<FusedAdamW>(params.params, params.decay, AdamWOptions{});
    step = std::make_unique<TrainStep>(model, params.params, *optimizer, scaler, at::kCPU,
                                       std::move(options));
  }
  models::EncoderClassifier model{nullptr};
  AdamWParameters params;
  std::unique_ptr<FusedAdamW> optimizer;
  GradScaler scaler{NoLossScaling()};
  std::unique_ptr<TrainStep> step;
};

TEST(TrainStepTest, TheTrainersStepIsATrainStep) {
  const auto data = SyntheticCorpus(3, 32);
  const TrainConfig config = Quiet().max_steps(1).grad_accum(2).lr(1e-3);
  at::manual_seed(6);
  models::EncoderClassifier trained(TinyConfig(0.0));
  absl::StatusOr<TrainResult> r =
      Trainer(trained, config, Plan(batching::Sampler::kRandom), at::kCPU).Train(data, nullptr);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->steps, 1);

  TrainStepOptions options;
  options.clip_norm = config.clip_norm();
  StepRig rig(options);
  const PlannedBatches first = FirstBatches(data, 2);
  const double lr = LearningRate(config.lr(), 0, 0, 1, config.decay());
  absl::StatusOr<StepResult> step = rig.step->Run(0, lr, first.batches);
  ASSERT_TRUE(step.ok()) << step.status();
  EXPECT_FALSE(step->outcome.skipped());
  EXPECT_EQ(step->sequences, r->sequences);
  EXPECT_EQ(step->real_tokens, r->real_tokens);
  EXPECT_TRUE(BitwiseEqual(Params(trained), Params(rig.model)));
}

TEST(TrainStepTest, OutOfMemorySplitEqualsTheUnsplitStep) {
  const auto data = SyntheticCorpus(3, 32);
  const PlannedBatches first = FirstBatches(data, 2);
  TrainStepOptions options;
  options.corpus = &data;
  options.collator.pad_id = tokenize::kPadId;
  StepRig plain(options);
  ASSERT_TRUE(plain.step->Run(0, 1e-3, first.batches).ok());

  int injected = 0;
  std::vector<std::string> lines;
  options.before_forward = [&](const batching::Batch& b) {
    if (b.num_sequences > 3) {
      ++injected;
      TORCH_CHECK_WITH(OutOfMemoryError, false, "injected out of memory");
    }
  };
  options.on_oom = [&](const std::string& line) { lines.push_back(line); };
  StepRig split(options);
  absl::StatusOr<StepResult> r = split.step->Run(0, 1e-3, first.batches);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_GT(injected, 0);
  EXPECT_EQ(r->oom_events.size(), 4u) << "two batches, 8 -> 4 -> 2 sequences each";
  EXPECT_EQ(r->oom_events, lines);
  EXPECT_EQ(r->sequences, 16);
  EXPECT_LE(MaxDiff(Params(plain.model), Params(split.model)), 1e-5);
  StepRig untrained(TrainStepOptions{});
  EXPECT_FALSE(BitwiseEqual(Params(plain.model), Params(untrained.model))) << "the step ran";
}

TEST(TrainStepTest, NonFiniteLossIsSkippedWithoutChangingState) {
  const auto data = SyntheticCorpus(3, 16);
  const PlannedBatches first = FirstBatches(data, 1);
  TrainStepOptions options;
  options.on_loss = [](int64_t, at::Tensor& loss) {
    loss = loss * std::numeric_limits<double>::quiet_NaN();
  };
  StepRig rig(options);
  const std::vector<at::Tensor> before = Params(rig.model);
  absl::StatusOr<StepResult> r = rig.step->Run(0, 1e-3, first.batches);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->outcome.skipped());
  EXPECT_FALSE(r->outcome.loss_finite());
  EXPECT_TRUE(std::isnan(r->loss.item<double>()));
  EXPECT_TRUE(BitwiseEqual(before, Params(rig.model)));
  EXPECT_EQ(rig.optimizer->steps(), 0);
  for (const at::Tensor& p : rig.params.params) EXPECT_FALSE(p.grad().defined());
}

TEST(TrainStepTest, WithoutACorpusOutOfMemoryPropagatesWithGradientsCleared) {
  const auto data = SyntheticCorpus(3, 16);
  PlannedBatches first = FirstBatches(data, 2);
  int forwards = 0;
  TrainStepOptions options;
  options.before_forward = [&](const batching::Batch&) {
    if (++forwards == 2) TORCH_CHECK_WITH(OutOfMemoryError, false, "injected out of memory");
  };
  StepRig rig(options);
  EXPECT_THROW(rig.step->Run(0, 1e-3, first.batches).IgnoreError(), c10::OutOfMemoryError);
  for (const at::Tensor& p : rig.params.params) EXPECT_FALSE(p.grad().defined());
}

TEST(TrainStepTest, NoBatchesIsAnError) {
  StepRig rig(TrainStepOptions{});
  EXPECT_EQ(rig.step->Run(0, 1e-3, {}).status().code(), absl::StatusCode::kInvalidArgument);
}

// The skip decision the step hands the optimizer on the device: 1 changes nothing (parameters,
// moments, step counts), 0 is exactly the update without a decision.
TEST(FusedAdamWTest, SkipOnTheDeviceChangesNothingAndZeroEqualsNoDecision) {
  auto make = [](std::vector<at::Tensor>& params) {
    at::manual_seed(5);
    params = {at::randn({4, 3}), at::randn({3})};
    for (at::Tensor& p : params) p.set_requires_grad(true);
    for (at::Tensor& p : params) p.mutable_grad() = at::randn(p.sizes());
    return std::make_unique<FusedAdamW>(params, std::vector<bool>{true, false}, AdamWOptions{});
  };
  auto snapshot = [](const std::vector<at::Tensor>& params, const FusedAdamW& opt) {
    std::vector<at::Tensor> out;
    for (const at::Tensor& p : params) out.push_back(p.detach().clone());
    for (const auto& [name, t] : opt.State()) out.push_back(t.clone());
    return out;
  };
  std::vector<at::Tensor> skipped_params, kept_params, plain_params;
  auto skipped = make(skipped_params);
  const std::vector<at::Tensor> before = snapshot(skipped_params, *skipped);
  skipped->Step(1e-2, at::ones({}));
  EXPECT_TRUE(BitwiseEqual(snapshot(skipped_params, *skipped), before));
  EXPECT_EQ(skipped->steps(), 0);

  auto kept = make(kept_params);
  auto plain = make(plain_params);
  kept->Step(1e-2, at::zeros({}));
  plain->Step(1e-2);
  EXPECT_TRUE(BitwiseEqual(snapshot(kept_params, *kept), snapshot(plain_params, *plain)));
  EXPECT_FALSE(BitwiseEqual(snapshot(kept_params, *kept), before));
  EXPECT_EQ(kept->steps(), 1);
}

// Clipping happens inside the update: dividing by ClipDivisor there is exactly the update on
// gradients divided beforehand, and the gradients are left divided, with the clipped norm.
TEST(FusedAdamWTest, GradDivisorEqualsDividingTheGradientsFirst) {
  std::vector<at::Device> devices = {at::kCPU};
  if (models::testing::HasCuda()) devices.emplace_back(at::kCUDA);  // the CUDA kernel divides alike
  for (const at::Device& device : devices) {
    auto make = [&](std::vector<at::Tensor>& params) {
      at::manual_seed(9);
      params = {at::randn({5, 4}).to(device), at::randn({4}).to(device)};
      for (at::Tensor& p : params) p.set_requires_grad(true);
      for (at::Tensor& p : params) p.mutable_grad() = 3 * at::randn(p.sizes()).to(device);
      return std::make_unique<FusedAdamW>(params, std::vector<bool>{true, false}, AdamWOptions{});
    };
    std::vector<at::Tensor> fused_params, divided_params;
    auto fused = make(fused_params);
    auto divided = make(divided_params);
    const at::Tensor norm = GlobalGradNorm(fused_params);
    const at::Tensor divisor = ClipDivisor(norm, 1.0);
    ASSERT_GT(divisor.item<float>(), 2.0f) << "the test needs gradients that are clipped";
    for (at::Tensor& p : divided_params) p.mutable_grad() = p.grad() / divisor;

    fused->Step(1e-2, at::zeros({}, norm.options()), divisor);
    divided->Step(1e-2);
    for (size_t i = 0; i < fused_params.size(); ++i) {
      EXPECT_TRUE(
          BitwiseEqual({fused_params[i].detach().cpu()}, {divided_params[i].detach().cpu()}))
          << device << " parameter " << i;
      EXPECT_TRUE(BitwiseEqual({fused_params[i].grad().cpu()}, {divided_params[i].grad().cpu()}))
          << device << " gradient " << i;
    }
    EXPECT_NEAR(GlobalGradNorm(fused_params).item<double>(), 1.0, 1e-5) << device;
  }
}

// PyTorch's clip_grad_norm_ as a divisor: none below max_norm, none without a max_norm, and the
// norm a non-finite gradient gives stays non-finite (the step is skipped on it).
TEST(FusedAdamWTest, ClipDivisorFollowsClipGradNorm) {
  EXPECT_NEAR(ClipDivisor(at::scalar_tensor(10.0), 2.0).item<double>(), 5.0, 1e-6);
  EXPECT_EQ(ClipDivisor(at::scalar_tensor(0.5), 1.0).item<double>(), 1.0);
  EXPECT_EQ(ClipDivisor(at::scalar_tensor(0.0), 1.0).item<double>(), 1.0);
  EXPECT_FALSE(ClipDivisor(at::scalar_tensor(10.0), 0.0).defined());
  EXPECT_FALSE(ClipDivisor(at::scalar_tensor(10.0), -1.0).defined());
  EXPECT_FALSE(ClipDivisor(at::scalar_tensor(10.0), std::nan("")).defined());
  EXPECT_FALSE(std::isfinite(
      ClipDivisor(at::scalar_tensor(std::numeric_limits<double>::infinity()), 1.0).item<double>()));
  EXPECT_EQ(ClipDivisor(at::scalar_tensor(10.0), 2.0).scalar_type(), at::kFloat);

  std::vector<at::Tensor> params = {at::zeros({3}), at::zeros({2})};
  EXPECT_EQ(GlobalGradNorm(params).item<double>(), 0.0) << "no gradients: norm 0";
  params[0].mutable_grad() = at::tensor({3.0f, 0.0f, 0.0f});
  params[1].mutable_grad() = at::tensor({0.0f, 4.0f});
  EXPECT_NEAR(GlobalGradNorm(params).item<double>(), 5.0, 1e-6);
  params[1].mutable_grad() = at::tensor({0.0f, std::nanf("")});
  EXPECT_TRUE(std::isnan(GlobalGradNorm(params).item<double>()));
}

TEST(StepOutcomeTest, ReadsTheFlagsItWasGiven) {
  auto flags = [](bool loss, bool gradients) {
    return at::tensor(std::vector<int64_t>{loss, gradients}).to(at::kBool);
  };
  EXPECT_FALSE(StepOutcome().skipped()) << "a default outcome is a finite step";
  const StepOutcome nan_loss = StepOutcome::Copy(flags(false, true));
  EXPECT_FALSE(nan_loss.loss_finite());
  EXPECT_TRUE(nan_loss.gradients_finite());
  EXPECT_TRUE(nan_loss.skipped());
  const StepOutcome copy = nan_loss;  // copies share the flags
  EXPECT_TRUE(copy.skipped());
  EXPECT_FALSE(StepOutcome::Copy(flags(true, true)).skipped());
  EXPECT_TRUE(StepOutcome::Copy(flags(true, false)).skipped());
}

}  // namespace
}  // namespace padless::train
