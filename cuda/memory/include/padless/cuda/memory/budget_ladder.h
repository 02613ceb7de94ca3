// BudgetLadder: finds the largest batch (in rows of one length) whose measured peak memory fits a
// target, by measuring rather than trusting a fit. Small steps understate the per-row cost (their
// peak is often the optimizer's, not the activations'), so the ladder climbs by at most a fixed
// factor per rung, aims along the line through the two best-known measurements, and backs off from
// a step that exceeds the target or runs out of memory. Used by train::PlanForMemoryBudget.
#ifndef PADLESS_CUDA_MEMORY_BUDGET_LADDER_H_
#define PADLESS_CUDA_MEMORY_BUDGET_LADDER_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"

namespace padless::cuda {

struct LadderStep {
  int64_t rows = 0;
  int64_t peak_bytes = 0;  // measured peak; meaningless when `oom`
  bool oom = false;        // the step ran out of device memory
};

struct LadderOptions {
  int max_rungs = 10;          // measurements at most, each a training step or two
  int64_t max_growth = 4;      // rows grow by at most this factor per rung without an upper bound
  double close_enough = 0.03;  // a fitting step within this fraction below the target ends it
};

// Measures a step of `rows` rows.
using LadderMeasure = std::function<absl::StatusOr<LadderStep>(int64_t rows)>;

struct LadderResult {
  LadderStep best;                // the largest measured step that fits the target
  std::vector<LadderStep> steps;  // every rung, in order
};

// Starts from `fits` (a measured step within `target_bytes`, rows >= 1), with an optional earlier
// fitting step `previous` (fewer rows) and an optional known-too-large step `over`; the first rung
// measures `first_guess` rows (clamped to the climb limits). Errors from `measure` are returned.
absl::StatusOr<LadderResult> ClimbToTarget(const LadderMeasure& measure, int64_t target_bytes,
                                           LadderStep fits, std::optional<LadderStep> previous,
                                           std::optional<LadderStep> over, int64_t first_guess,
                                           const LadderOptions& options = {});

}  // namespace padless::cuda

#endif  // PADLESS_CUDA_MEMORY_BUDGET_LADDER_H_
