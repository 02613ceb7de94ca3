#include "run_schedule.h"

#include <cmath>

#include "padless/batching/batch_spec.h"
#include "padless/distributed/data_parallel.h"

namespace padless::train::internal {

// Without max_steps, the total is the sum over the epochs' own plans: packing reshuffles every
// epoch, so the batch count varies a little between epochs, and a total taken as epochs x the first
// epoch's steps ended the run (by step count) just before the last epoch's end, which then had no
// dev evaluation and no checkpoint. Planning costs milliseconds per epoch.
absl::StatusOr<RunSchedule> PlanSchedule(const batching::Planner& planner,
                                         const std::vector<int64_t>& lengths,
                                         const TrainConfig& config) {
  const distributed::DataParallel& dp = config.data_parallel();
  RunSchedule s;
  const int64_t planned_epochs = config.max_steps() > 0 ? 1 : config.epochs();
  for (int64_t epoch = 0; epoch < planned_epochs; ++epoch) {
    absl::StatusOr<std::vector<batching::BatchSpec>> plan =
        planner.Plan(lengths, epoch, dp.rank(), dp.world_size());
    if (!plan.ok()) return plan.status();
    if (plan->empty()) return absl::InvalidArgumentError("training data gives no batches");
    const auto batches = static_cast<int64_t>(plan->size());
    const int64_t steps = (batches + config.grad_accum() - 1) / config.grad_accum();
    if (epoch == 0) {
      s.batches_per_epoch = batches;
      s.steps_per_epoch = steps;
    }
    s.total_steps += steps;
  }
  if (config.max_steps() > 0) s.total_steps = config.max_steps();
  s.warmup_steps = static_cast<int64_t>(std::llround(config.warmup_fraction() * s.total_steps));
  return s;
}

}  // namespace padless::train::internal
