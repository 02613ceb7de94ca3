// Memory-aware batching on the CPU (counting allocator): the planned batch's measured training-step
// peak stays within the budget and uses >= 85% of it; probing leaves weights and RNG unchanged; a
// budget below the fixed cost is a clear error; the trainer applies the plan.
#include "padless/train/memory_planning.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "padless/batching/collator.h"
#include "padless/cuda/memory/memory_meter.h"
#include "padless/train/memory_probe.h"
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

// ---- Long documents (issue 45): a model of 8192 positions, documents of 8192 tokens.

constexpr int64_t kLongLen = 8192;

// Small enough that a step over 8192 tokens takes a fraction of a second on one CPU thread (the
// attention's cost is per head).
models::EncoderConfig LongConfig() {
  return models::EncoderConfig()
      .vocab_size(300)
      .hidden(32)
      .layers(1)
      .heads(1)
      .ffn(64)
      .max_positions(kLongLen)
      .num_labels(2)
      .dropout(0.0)
      .attention_dropout(0.0);
}

// `long_docs` documents of exactly 8192 tokens among `short_texts` texts of 40 to 400 tokens.
corpus::TokenizedCorpus LongDocuments(int long_docs, int short_texts) {
  std::mt19937_64 rng(17);
  std::uniform_int_distribution<int32_t> tok(5, 299);
  std::uniform_int_distribution<int64_t> short_len(40, 400);
  corpus::TokenizedCorpus c;
  for (int i = 0; i < long_docs + short_texts; ++i) {
    std::vector<int32_t> ids(
        static_cast<size_t>(i % 4 == 0 && i / 4 < long_docs ? kLongLen : short_len(rng)));
    for (int32_t& t : ids) t = tok(rng);
    c.Add(ids, {}, static_cast<int64_t>(rng() % 2));
  }
  return c;
}

// Per-op autograd, whose CPU attention is ATen's flash kernel: memory linear in the length. (The
// fused layer's CPU forward computes attention by matmul today, s x s scores: 256 MiB per head and
// layer at 8192 tokens, which the budget would hold too, only slowly.)
models::ModelRuntime LongRuntime() {
  models::ModelRuntime runtime;
  runtime.fused_layers = false;
  return runtime;
}

batching::PlannerOptions LongVarlenPlan() {
  return batching::PlannerOptions()
      .sampler(batching::Sampler::kPacked)
      .packed_layout(batching::Layout::kVarlen)
      .max_tokens(kLongLen)
      .max_len(kLongLen);
}

// The peak of a training step of one 8192-token document (warm-up first), the unit the budgets
// below are given in.
int64_t OneDocumentPeak(models::EncoderClassifier& model, cuda::MemoryMeter& meter) {
  model->set_runtime(LongRuntime());
  absl::StatusOr<batching::Batch> batch =
      SyntheticTrainingBatch(batching::Layout::kVarlen, 1, kLongLen, model->config(), c10::kCPU);
  EXPECT_TRUE(batch.ok()) << batch.status();
  if (!batch.ok()) return 0;
  std::vector<at::Tensor> params = model->parameters();
  FusedAdamW opt(params, std::vector<bool>(params.size(), true), AdamWOptions{});
  absl::StatusOr<StepMemory> m =
      MeasureTrainingStep(model, opt, *batch, models::AmpMode::kOff, 0.0, meter, c10::kCPU);
  EXPECT_TRUE(m.ok()) << m.status();
  meter.ResetPeak();
  return m.ok() ? m->peak_allocated_bytes : 0;
}

// A budget that holds one 8192-token document but not two: the plan is batches of one document
// (short texts packed up to 8192 tokens), and a whole epoch of them stays within the budget.
TEST_F(MemoryPlanningTest, LongDocumentsTrainInBatchesOfOneDocumentWithinTheBudget) {
  models::EncoderClassifier model(LongConfig());
  const int64_t one_doc = OneDocumentPeak(model, meter_);
  ASSERT_GT(one_doc, 0);
  const int64_t budget = static_cast<int64_t>(1.4 * one_doc / 0.95);
  Trainer trainer(model,
                  TrainConfig()
                      .progress(false)
                      .epochs(1)
                      .loader_workers(0)
                      .runtime(LongRuntime())
                      .memory_budget_bytes(budget),
                  LongVarlenPlan().max_tokens(4 * kLongLen), c10::kCPU);
  absl::StatusOr<TrainResult> r = trainer.Train(LongDocuments(3, 24), nullptr);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_TRUE(r->memory_plan.has_value());
  EXPECT_EQ(r->memory_plan->max_tokens, kLongLen) << r->memory_plan->Summary();
  EXPECT_EQ(r->memory_plan->row_len, kLongLen);
  EXPECT_GE(r->steps, 4);  // three documents alone, then the short texts: one epoch
  EXPECT_LE(r->peak_allocated_bytes, budget) << r->memory_plan->Summary();
  std::printf("long documents: %s; run peak %lld of budget %lld (%.1f%%)\n",
              r->memory_plan->Summary().c_str(), static_cast<long long>(r->peak_allocated_bytes),
              static_cast<long long>(budget), 100.0 * r->peak_allocated_bytes / budget);
}

// A budget below one document's step: the error names the length and what one row needs.
TEST_F(MemoryPlanningTest, BudgetTooSmallForOneLongDocumentNamesTheLengthAndTheNeed) {
  models::EncoderClassifier model(LongConfig());
  const int64_t one_doc = OneDocumentPeak(model, meter_);
  ASSERT_GT(one_doc, 0);
  MemoryPlanOptions o;
  o.budget_bytes = static_cast<int64_t>(0.8 * one_doc);
  absl::StatusOr<MemoryPlan> plan = PlanForMemoryBudget(model, LongVarlenPlan(), o, c10::kCPU);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kFailedPrecondition);
  const std::string m(plan.status().message());
  EXPECT_NE(m.find("is too small: one row of 8192 tokens needs at least "), std::string::npos) << m;
  // What it names is at least the measured step with the 5% margin (to the three digits shown).
  double mib = 0;
  const size_t at = m.find("needs at least ");
  ASSERT_NE(at, std::string::npos) << m;
  ASSERT_EQ(std::sscanf(m.c_str() + at, "needs at least %lf MiB", &mib), 1) << m;
  EXPECT_GE(mib * 1.001, one_doc / 0.95 / (1 << 20)) << m;
  EXPECT_GT(mib * (1 << 20), static_cast<double>(o.budget_bytes)) << m;
}

}  // namespace
}  // namespace padless::train
