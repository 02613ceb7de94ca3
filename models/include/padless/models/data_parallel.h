// DataParallel: how a training run takes part in a data-parallel job (TrainConfig::data_parallel).
// Without a group, or with a group of one, training is a single process. With one, every rank runs
// the same Trainer on the same data and settings: the planner gives each rank its token-balanced
// share of every step (batching::Planner's rank sharding), TrainStep all-reduces the gradients
// through a dist::GradientReducer, evaluation is sharded and reduced (EvaluateSharded), and only
// rank 0 writes the log, the progress line and the checkpoints. Make the group with
// dist::ProcessGroup::Create from dist::DistEnvFromEnvironment (torchrun's variables).
#ifndef PADLESS_MODELS_DATA_PARALLEL_H_
#define PADLESS_MODELS_DATA_PARALLEL_H_

#include <memory>

#include "padless/dist/gradient_reducer.h"
#include "padless/dist/process_group.h"

namespace padless::models {

struct DataParallel {
  std::shared_ptr<dist::ProcessGroup> group;  // null: a single process
  dist::GradientReducerOptions reducer;       // bucket size, fp32 or bf16 communication

  bool enabled() const { return group != nullptr && group->world_size() > 1; }
  int rank() const { return enabled() ? group->rank() : 0; }
  int world_size() const { return enabled() ? group->world_size() : 1; }
};

}  // namespace padless::models

#endif  // PADLESS_MODELS_DATA_PARALLEL_H_
