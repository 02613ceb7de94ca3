// DataParallel: how a training run takes part in a data-parallel job (TrainConfig::data_parallel).
// Without a group, or with a group of one, training is a single process. With one, every rank runs
// the same Trainer on the same data and settings: the planner gives each rank its token-balanced
// share of every step (batching::Planner's rank sharding), TrainStep all-reduces the gradients
// through a distributed::GradientReducer, evaluation is sharded and reduced (EvaluateSharded), and only
// rank 0 writes the log, the progress line and the checkpoints. Make the group with
// distributed::ProcessGroup::Create from distributed::DistEnvFromEnvironment (torchrun's variables).
#ifndef PADLESS_DISTRIBUTED_DATA_PARALLEL_H_
#define PADLESS_DISTRIBUTED_DATA_PARALLEL_H_

#include <memory>
#include <string>

#include "padless/distributed/gradient_reducer.h"
#include "padless/distributed/process_group.h"

namespace padless::distributed {

struct DataParallel {
  std::shared_ptr<ProcessGroup> group;  // null: a single process
  GradientReducerOptions reducer;       // bucket size, fp32 or bf16 communication

  bool enabled() const { return group != nullptr && group->world_size() > 1; }
  int rank() const { return enabled() ? group->rank() : 0; }
  int world_size() const { return enabled() ? group->world_size() : 1; }
  int nodes() const { return enabled() ? group->nodes() : 1; }
  int local_rank() const { return enabled() ? group->local_rank() : 0; }
  int node_rank() const { return enabled() ? group->node_rank() : 0; }
  std::string backend() const { return enabled() ? group->backend_name() : "none"; }
};

}  // namespace padless::distributed

#endif  // PADLESS_DISTRIBUTED_DATA_PARALLEL_H_
