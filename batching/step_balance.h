// BalanceVarlenStep: evens out the real tokens of one data-parallel step's varlen batches (one per
// rank) by moving whole sequences from the heaviest batch to the lightest. The planner groups
// batches of similar cost into a step, but the few underfilled batches at the end of packing
// windows still meet partners of very different size; moving sequences fixes those steps. A move
// of x tokens from the heaviest (h) to the lightest (l) happens only when x < h - l, so the
// receiver stays below the giver and thus within the token budget; `max_sentences` (0: none) is
// respected. Private to the planner.
#ifndef PADLESS_BATCHING_STEP_BALANCE_H_
#define PADLESS_BATCHING_STEP_BALANCE_H_

#include <cstdint>
#include <vector>

#include "padless/batching/batch_spec.h"

namespace padless::batching::internal {

// No-op unless every batch is kVarlen. Deterministic.
void BalanceVarlenStep(std::vector<BatchSpec>& step, int64_t max_sentences);

}  // namespace padless::batching::internal

#endif  // PADLESS_BATCHING_STEP_BALANCE_H_
