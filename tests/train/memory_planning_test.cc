// Memory-aware batching on the CPU (counting allocator): the planned batch's measured training-step
// peak stays within the budget and uses >= 85% of it; probing leaves weights and RNG unchanged; a
// budget below the fixed cost is a clear error; the trainer applies the plan.
#include "padless/train/memory_planning.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "padless/batching/collator.h"
#include "padless/cuda/memory/memory_meter.h"
#include "padless/train/optimizer.h"
#include "padless/train/trainer.h"

namespace padless::train {
namespace {

constexpr int64_t kLen = 128;

models::EncoderConfig Config() {
  return models::EncoderConfig()
      .vocab_size(2000)
      .hidden(64)
      .layers(2)
      .heads(4)
      .ffn(256)
      .max_positions(kLen)
      .num_labels(2)
      .dropout(0.1)
      .attention_dropout(0.1);
}

// Every sequence is a full row: the plan's worst case (rows of max_len) is the batch that runs.
corpus::TokenizedCorpus FullRows(int64_t n) {
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<int32_t> tok(5, 1999);
  corpus::TokenizedCorpus c;
  std::vector<int32_t> ids(kLen);
  for (int64_t i = 0; i < n; ++i) {
    for (int32_t& t : ids) t = tok(rng);
    c.Add(ids, {}, static_cast<int64_t>(rng() % 2));
  }
  return c;
}

batching::PlannerOptions VarlenPlan() {
  return batching::PlannerOptions()
      .sampler(batching::Sampler::kPacked)
      .packed_layout(batching::Layout::kVarlen)
      .max_tokens(1024)
      .max_len(kLen);
}

batching::PlannerOptions PaddedPlan() {
  return batching::PlannerOptions().sampler(batching::Sampler::kRandom).batch_size(8).max_len(kLen);
}

class MemoryPlanningTest : public ::testing::Test {
 protected:
  void SetUp() override {
    at::set_num_threads(1);
    at::manual_seed(11);
  }
  // Installed before any model exists, so weights and optimizer state are counted too.
  cuda::MemoryMeter meter_{c10::kCPU};

  // A budget that holds about `rows` full rows on top of the fixed cost, from a first probe.
  int64_t BudgetForRows(models::EncoderClassifier& model, const batching::PlannerOptions& plan,
                        int64_t rows) {
    MemoryPlanOptions o;
    o.budget_bytes = int64_t{64} << 20;
    absl::StatusOr<MemoryPlan> p = PlanForMemoryBudget(model, plan, o, c10::kCPU);
    EXPECT_TRUE(p.ok()) << p.status();
    return p.ok() ? static_cast<int64_t>(p->model.Predict(rows, kLen) / 0.95) : 0;
  }

  // Peak allocated bytes of a training step of the plan's largest first-epoch batch, measured as
  // training would run it (warm-up step first so the optimizer state exists).
  int64_t MeasuredPeak(models::EncoderClassifier& model, const batching::PlannerOptions& plan,
                       const corpus::TokenizedCorpus& corpus, int64_t* batch_tokens) {
    absl::StatusOr<std::vector<batching::BatchSpec>> specs =
        batching::Planner(plan).Plan(corpus.Lengths(), 0);
    EXPECT_TRUE(specs.ok()) << specs.status();
    if (!specs.ok() || specs->empty()) return -1;
    const batching::BatchSpec& big = *std::max_element(
        specs->begin(), specs->end(),
        [](const auto& a, const auto& b) { return a.token_slots() < b.token_slots(); });
    *batch_tokens = big.token_slots();
    batching::Collator collator(batching::CollatorOptions{});
    absl::StatusOr<batching::Batch> batch = collator.Collate(corpus, big);
    EXPECT_TRUE(batch.ok()) << batch.status();
    if (!batch.ok()) return -1;
    std::vector<at::Tensor> params = model->parameters();
    FusedAdamW opt(params, std::vector<bool>(params.size(), true), AdamWOptions{});
    model->train();
    auto step = [&] {
      models::ClassificationLoss(model->forward(*batch), batch->labels).backward();
      opt.Step(1e-4);
      opt.ZeroGrad();
    };
    step();
    meter_.ResetPeak();
    step();
    return meter_.Snapshot().peak_allocated_bytes;
  }
};

TEST_F(MemoryPlanningTest, VarlenPlanFitsTheBudgetAndUsesMostOfIt) {
  models::EncoderClassifier model(Config());
  const int64_t budget = BudgetForRows(model, VarlenPlan(), 24);
  ASSERT_GT(budget, 0);
  MemoryPlanOptions o;
  o.budget_bytes = budget;
  absl::StatusOr<MemoryPlan> plan = PlanForMemoryBudget(model, VarlenPlan(), o, c10::kCPU);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_TRUE(plan->quadratic);  // the CPU varlen path runs dense SDPA per sequence
  EXPECT_EQ(plan->batch_size, 0);
  EXPECT_GT(plan->max_tokens, 16 * kLen);
  EXPECT_EQ(plan->plan.max_tokens(), plan->max_tokens);
  // The choice is a measured probe step, close below the target (the ladder stops within 3% or
  // one row of it).
  EXPECT_LE(plan->measured_peak_bytes, plan->target_bytes);
  EXPECT_GE(plan->measured_peak_bytes, 0.9 * plan->target_bytes);
  EXPECT_GE(plan->samples.size(), 5u);  // four small probes and at least one ladder rung

  int64_t tokens = 0;
  const int64_t peak = MeasuredPeak(model, plan->plan, FullRows(96), &tokens);
  EXPECT_GE(tokens, plan->max_tokens - kLen);
  EXPECT_LE(tokens, plan->max_tokens);
  EXPECT_LE(peak, budget) << plan->Summary();
  EXPECT_GE(peak, 0.85 * budget) << plan->Summary();
  std::printf("varlen: %s; measured peak %lld of budget %lld (%.1f%%), %lld tokens\n",
              plan->Summary().c_str(), static_cast<long long>(peak), static_cast<long long>(budget),
              100.0 * peak / budget, static_cast<long long>(tokens));
}

TEST_F(MemoryPlanningTest, PaddedPlanChoosesBatchSizeWithinTheBudget) {
  models::EncoderClassifier model(Config());
  const int64_t budget = BudgetForRows(model, PaddedPlan(), 20);
  ASSERT_GT(budget, 0);
  MemoryPlanOptions o;
  o.budget_bytes = budget;
  absl::StatusOr<MemoryPlan> plan = PlanForMemoryBudget(model, PaddedPlan(), o, c10::kCPU);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->max_tokens, 0);
  EXPECT_GE(plan->batch_size, 16);
  EXPECT_EQ(plan->plan.batch_size(), plan->batch_size);
  int64_t tokens = 0;
  const int64_t peak = MeasuredPeak(model, plan->plan, FullRows(96), &tokens);
  EXPECT_EQ(tokens, plan->batch_size * kLen);
  EXPECT_LE(peak, budget) << plan->Summary();
  EXPECT_GE(peak, 0.85 * budget) << plan->Summary();
  std::printf("padded: %s; measured peak %lld of budget %lld (%.1f%%)\n", plan->Summary().c_str(),
              static_cast<long long>(peak), static_cast<long long>(budget), 100.0 * peak / budget);
}

TEST_F(MemoryPlanningTest, ProbingLeavesWeightsAndRandomStreamUnchanged) {
  models::EncoderClassifier model(Config());
  std::vector<at::Tensor> before;
  for (const at::Tensor& p : model->parameters()) before.push_back(p.detach().clone());
  at::manual_seed(5);
  const at::Tensor expected = at::rand({8});
  at::manual_seed(5);
  MemoryPlanOptions o;
  o.budget_bytes = int64_t{64} << 20;
  ASSERT_TRUE(PlanForMemoryBudget(model, VarlenPlan(), o, c10::kCPU).ok());
  EXPECT_TRUE(at::equal(at::rand({8}), expected));
  const std::vector<at::Tensor> after = model->parameters();
  ASSERT_EQ(after.size(), before.size());
  for (size_t i = 0; i < after.size(); ++i) EXPECT_TRUE(at::equal(after[i], before[i])) << i;
}

TEST_F(MemoryPlanningTest, BudgetBelowTheFixedCostIsAClearError) {
  models::EncoderClassifier model(Config());
  MemoryPlanOptions o;
  o.budget_bytes = 64 * 1024;
  absl::StatusOr<MemoryPlan> plan = PlanForMemoryBudget(model, VarlenPlan(), o, c10::kCPU);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kFailedPrecondition);
  const std::string m(plan.status().message());
  EXPECT_NE(m.find("memory budget 64.0 KiB is too small"), std::string::npos) << m;
  EXPECT_NE(m.find("one row of 128 tokens needs at least"), std::string::npos) << m;
  EXPECT_NE(m.find("weights, gradients and optimizer state"), std::string::npos) << m;

  o.budget_bytes = 0;
  EXPECT_EQ(PlanForMemoryBudget(model, VarlenPlan(), o, c10::kCPU).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(MemoryPlanningTest, TrainerAppliesThePlanAndStaysWithinTheBudget) {
  models::EncoderClassifier model(Config());
  const int64_t budget = BudgetForRows(model, VarlenPlan(), 12);
  ASSERT_GT(budget, 0);
  Trainer trainer(
      model,
      TrainConfig().progress(false).loader_workers(0).max_steps(3).memory_budget_bytes(budget),
      VarlenPlan(), c10::kCPU);
  absl::StatusOr<TrainResult> r = trainer.Train(FullRows(48), nullptr);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_TRUE(r->memory_plan.has_value());
  EXPECT_GT(r->memory_plan->max_tokens, 8 * kLen);
  EXPECT_EQ(r->steps, 3);
  EXPECT_LE(r->peak_allocated_bytes, budget) << r->memory_plan->Summary();

  Trainer off(model, TrainConfig().progress(false).loader_workers(0).max_steps(1), VarlenPlan(),
              c10::kCPU);
  absl::StatusOr<TrainResult> r_off = off.Train(FullRows(16), nullptr);
  ASSERT_TRUE(r_off.ok()) << r_off.status();
  EXPECT_FALSE(r_off->memory_plan.has_value());
}

}  // namespace
}  // namespace padless::train
