// A run's memory budget (internal to the trainer), TrainConfig::memory_budget_bytes: the device's
// caching allocator capped at the budget for the whole run, and the batches sized under it by
// measuring the model's steps (PlanForMemoryBudget, memory_planning.h), the same on every rank.
#ifndef PADLESS_TRAIN_RUN_MEMORY_BUDGET_H_
#define PADLESS_TRAIN_RUN_MEMORY_BUDGET_H_

#include <c10/core/Device.h>

#include <optional>

#include "absl/status/statusor.h"
#include "padless/batching/planner.h"
#include "padless/cuda/memory/device_memory_cap.h"
#include "padless/models/encoder.h"
#include "padless/train/memory_planning.h"
#include "padless/train/train_config.h"

namespace padless::train::internal {

struct RunMemoryBudget {
  std::optional<cuda::DeviceMemoryCap> cap;  // held for the whole run: the limit lasts as long
  std::optional<MemoryPlan> plan;            // how the batches were sized
};

// Without a budget (memory_budget_bytes 0), neither, and `plan` stays as it is. With one: caps
// `device`, measures `model`'s steps, and sets `plan` to the options that fit, saying so on
// stderr with progress on. Errors: the cap's, the planning's, and data-parallel ranks whose plans
// differ (FailedPrecondition).
absl::StatusOr<RunMemoryBudget> ApplyMemoryBudget(models::EncoderClassifier& model,
                                                  const TrainConfig& config,
                                                  const c10::Device& device,
                                                  batching::PlannerOptions& plan);

}  // namespace padless::train::internal

#endif  // PADLESS_TRAIN_RUN_MEMORY_BUDGET_H_
