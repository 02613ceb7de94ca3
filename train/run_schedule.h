// The run's schedule (internal to the trainer): its length in optimizer steps and its warmup,
// planned once before the first step from the epochs' batch plans.
#ifndef PADLESS_TRAIN_RUN_SCHEDULE_H_
#define PADLESS_TRAIN_RUN_SCHEDULE_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "padless/batching/planner.h"
#include "padless/train/train_config.h"

namespace padless::train::internal {

// The run's length in optimizer steps, and its warmup.
struct RunSchedule {
  int64_t batches_per_epoch = 0;  // of the first epoch
  int64_t steps_per_epoch = 0;    // of the first epoch
  int64_t total_steps = 0;
  int64_t warmup_steps = 0;
};

// The schedule of a run of `config` on examples of `lengths`, as `planner` plans this rank's
// batches. Errors: the planner's, and training data that gives no batches (InvalidArgument).
absl::StatusOr<RunSchedule> PlanSchedule(const batching::Planner& planner,
                                         const std::vector<int64_t>& lengths,
                                         const TrainConfig& config);

}  // namespace padless::train::internal

#endif  // PADLESS_TRAIN_RUN_SCHEDULE_H_
