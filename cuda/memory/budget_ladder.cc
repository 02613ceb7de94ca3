// The measured climb to a memory target (see budget_ladder.h).
#include "padless/cuda/memory/budget_ladder.h"

#include <algorithm>

#include "absl/status/status.h"

namespace padless::cuda {

absl::StatusOr<LadderResult> ClimbToTarget(const LadderMeasure& measure, int64_t target_bytes,
                                           LadderStep fits, std::optional<LadderStep> previous,
                                           std::optional<LadderStep> over, int64_t first_guess,
                                           const LadderOptions& options) {
  if (fits.rows < 1 || fits.oom || fits.peak_bytes > target_bytes) {
    return absl::InvalidArgumentError("budget ladder: the starting step must fit the target");
  }
  if (options.max_growth < 2 || options.max_rungs < 1) {
    return absl::InvalidArgumentError("budget ladder: max_growth >= 2 and max_rungs >= 1");
  }
  LadderResult result;
  // Keeps `next` strictly between the largest fitting and the smallest exceeding step, and within
  // the growth limit when no exceeding step is known; false when no row count is left to try.
  auto clamp = [&](int64_t next, int64_t* out) {
    if (!over) next = std::min(next, options.max_growth * fits.rows);
    if (over) next = std::min(next, over->rows - 1);
    next = std::max(next, fits.rows + 1);
    *out = next;
    return !(over && next >= over->rows);
  };
  int64_t next = 0;
  bool more = clamp(first_guess, &next);
  for (int rung = 0; more && rung < options.max_rungs; ++rung) {
    absl::StatusOr<LadderStep> m = measure(next);
    if (!m.ok()) return m.status();
    LadderStep step = *m;
    step.rows = next;
    result.steps.push_back(step);
    if (step.oom || step.peak_bytes > target_bytes) {
      over = step;
    } else {
      previous = fits;
      fits = step;
      if (step.peak_bytes >= (1 - options.close_enough) * target_bytes) break;
    }
    // Where the line through the two best-known steps meets the target: between the largest
    // fitting and the smallest exceeding step, else through the two largest fitting ones.
    const LadderStep* a = nullptr;
    const LadderStep* b = nullptr;
    if (over && !over->oom) {
      a = &fits;
      b = &*over;
    } else if (previous) {
      a = &*previous;
      b = &fits;
    }
    int64_t aim = 0;
    if (a != nullptr && b->rows != a->rows && b->peak_bytes > a->peak_bytes) {
      const double per_row = static_cast<double>(b->peak_bytes - a->peak_bytes) /
                             static_cast<double>(b->rows - a->rows);
      aim = fits.rows + static_cast<int64_t>((target_bytes - fits.peak_bytes) / per_row);
    } else {
      aim = over ? (fits.rows + over->rows) / 2 : options.max_growth * fits.rows;
    }
    // Out of memory says nothing about the slope: bisect towards it.
    if (over && over->oom) aim = std::min(aim, (fits.rows + over->rows) / 2);
    more = clamp(aim, &next);
  }
  result.best = fits;
  return result;
}

}  // namespace padless::cuda
