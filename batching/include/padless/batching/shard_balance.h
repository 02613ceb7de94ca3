// ShardBalance: how evenly a data-parallel epoch plan spreads real tokens over the ranks, step by
// step. The planner balances token slots (the GPU's work); for packed varlen batches those are the
// real tokens, so this measures what the loss and throughput see. Imbalance of a step: the rank
// with the most real tokens over the ranks' mean, minus 1 (0: perfectly even). Target: <= 2%.
#ifndef PADLESS_BATCHING_SHARD_BALANCE_H_
#define PADLESS_BATCHING_SHARD_BALANCE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "padless/batching/planner.h"

namespace padless::batching {

struct ShardBalance {
  std::vector<double> step_imbalance;  // per step
  double mean_imbalance = 0;
  double max_imbalance = 0;
  double p99_imbalance = 0;  // the step at the 99th percentile
  int64_t steps_over_2_percent = 0;

  std::string Summary() const;  // one line, for logs and reports
};

// Steps with grouping `grad_accum` batches per rank per optimizer step (the last may be short).
ShardBalance MeasureShardBalance(const EpochPlan& plan, int64_t grad_accum = 1);

}  // namespace padless::batching

#endif  // PADLESS_BATCHING_SHARD_BALANCE_H_
