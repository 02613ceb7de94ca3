#include "run_memory_budget.h"

#include <cstdint>
#include <cstdio>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "padless/distributed/data_parallel.h"

namespace padless::train::internal {
namespace {

// Data parallel: every rank measured its own device; the plans must agree, or the ranks would
// take different steps.
absl::Status CheckSamePlanOnEveryRank(const MemoryPlan& mp, const distributed::DataParallel& dp) {
  if (!dp.enabled()) return absl::OkStatus();
  absl::StatusOr<std::vector<int64_t>> sums =
      dp.group->AllReduceSumHost({mp.plan.max_tokens(), mp.plan.batch_size()});
  if (!sums.ok()) return sums.status();
  if ((*sums)[0] != mp.plan.max_tokens() * dp.world_size() ||
      (*sums)[1] != mp.plan.batch_size() * dp.world_size()) {
    return absl::FailedPreconditionError(
        absl::StrCat("--memory-budget: the ranks' memory plans differ (rank ", dp.rank(),
                     ": max_tokens ", mp.plan.max_tokens(), ", batch_size ", mp.plan.batch_size(),
                     "); give the ranks identical GPUs or set --max-tokens instead"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<RunMemoryBudget> ApplyMemoryBudget(models::EncoderClassifier& model,
                                                  const TrainConfig& config,
                                                  const c10::Device& device,
                                                  batching::PlannerOptions& plan) {
  RunMemoryBudget budget;
  if (config.memory_budget_bytes() <= 0) return budget;
  absl::StatusOr<cuda::DeviceMemoryCap> capped =
      cuda::DeviceMemoryCap::Create(device, config.memory_budget_bytes());
  if (!capped.ok()) return capped.status();
  budget.cap.emplace(*std::move(capped));
  absl::StatusOr<MemoryPlan> mp =
      PlanForMemoryBudget(model, plan, MemoryPlanOptions::From(config), device);
  if (!mp.ok()) return mp.status();
  if (absl::Status s = CheckSamePlanOnEveryRank(*mp, config.data_parallel()); !s.ok()) return s;
  plan = mp->plan;
  if (config.progress()) absl::FPrintF(stderr, "%s\n", mp->Summary());
  budget.plan = std::move(*mp);
  return budget;
}

}  // namespace padless::train::internal
