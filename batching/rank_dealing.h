// Dealing one epoch's batches to the data-parallel ranks: every rank gets the same number of steps
// (batches are halved, between rows or between a row's sequences, until the count divides the
// world size; where nothing is left to halve, short ranks get an empty batch), each step groups
// batches of similar cost, steps come in a shuffled order, and each step's batches go to the ranks
// with the least work so far. Private to the planner.
#ifndef PADLESS_BATCHING_RANK_DEALING_H_
#define PADLESS_BATCHING_RANK_DEALING_H_

#include <cstddef>
#include <vector>

#include "absl/status/statusor.h"
#include "epoch_builder.h"
#include "padless/batching/batch_spec.h"
#include "padless/batching/planner.h"

namespace padless::batching::internal {

// Every rank's batches and the shard report, from the sampler's `batches` (consumed). `builder`
// built them: its batch RNG orders the steps, its padding policy sizes halved batches. Fails only
// when the batches hold fewer sequences than `world` (FailedPrecondition).
absl::StatusOr<EpochPlan> DealToRanks(std::vector<BatchSpec>& batches, size_t world,
                                      const PlannerOptions& options, EpochBuilder& builder);

}  // namespace padless::batching::internal

#endif  // PADLESS_BATCHING_RANK_DEALING_H_
