// The measurement loops of `padless profile-memory`: the peak memory of one training step for each
// AMP mode x checkpoint policy x attention layout x batch size x sequence length, measured through
// MeasureTrainingStep (memory_probe.h) after a warm-up step of the same shape; and, for a byte
// budget, the plan `padless train --memory-budget` makes for each configuration and length
// (PlanForMemoryBudget, memory_planning.h) checked against a step of the planned batch. The report
// and fit of the points are cuda/memory/memory_profile.h's.
#ifndef PADLESS_TRAIN_MEMORY_SWEEP_H_
#define PADLESS_TRAIN_MEMORY_SWEEP_H_

#include <c10/core/Device.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "padless/batching/batch_spec.h"
#include "padless/cuda/memory/memory_meter.h"
#include "padless/cuda/memory/memory_profile.h"
#include "padless/models/autocast.h"
#include "padless/models/checkpoint_policy.h"
#include "padless/models/encoder_config.h"

namespace padless::train {

// One configuration of the sweep: a line of the chart per batch size.
struct MemorySweepConfig {
  models::AmpMode amp = models::AmpMode::kOff;
  models::CheckpointPolicy policy;
  bool varlen = false;  // packed tokens (varlen attention), else padded rows (dense SDPA, a mask)

  // "fp32/ckpt=none/padded", "bf16/ckpt=all/varlen", ...
  std::string Name() const;
  batching::Layout layout() const;
};

// What to measure: every amps x policies x varlens configuration at every batches x lens shape
// with batch * len <= max_tokens.
struct MemorySweepOptions {
  // The encoder; its max_positions is raised to the longest of `lens` where it is shorter.
  models::EncoderConfig config;
  std::vector<int64_t> lens;
  std::vector<int64_t> batches;
  std::vector<models::AmpMode> amps;
  std::vector<models::CheckpointPolicy> policies;
  std::vector<bool> varlens;
  int64_t max_tokens = 0;
  bool quiet = false;  // else one progress line per measurement (and per plan) on stderr
};

// Every configuration (amp, then policy, then layout) x batch x length within max_tokens, in that
// order, one point each. One model and optimizer serve every measurement (the weights and the AdamW
// state are the same for all configurations; only the step's activations differ); they are freed
// before returning. `meter` measures on `device` (on the CPU: create it before calling, so that
// the weights are counted). Out of memory is a point with `oom` set; torch failures are Internal
// errors.
absl::StatusOr<std::vector<cuda::MemoryProfilePoint>> MeasureMemorySweep(
    const MemorySweepOptions& options, const c10::Device& device, cuda::MemoryMeter& meter);

// A plan passes when its step's peak stays within the budget and uses at least this share of it.
inline constexpr double kMinBudgetUse = 0.85;

// One configuration and length of CheckMemoryBudgetPlans.
struct BudgetCheck {
  std::string config;  // MemorySweepConfig::Name()
  int64_t seq_len = 0;
  int64_t rows = 0;                  // the planned batch: sequences of seq_len tokens
  int64_t probed_peak_bytes = 0;     // the planner's own probe of that batch
  bool oom = false;                  // the measured step ran out of memory
  int64_t peak_allocated_bytes = 0;  // the measured step's peak
  double used = 0;                   // peak_allocated_bytes / budget
  bool over_budget = false;          // oom, or the peak above the budget
  bool ok = false;                   // within the budget and using >= kMinBudgetUse of it
  // The planner found that one row of seq_len does not fit the budget, where a shorter length of
  // the same configuration did (long rows of dense attention: 8192 tokens of s x s scores may
  // need more than the device holds). Nothing is run; the planner's refusal is the right answer,
  // so the check is `ok`. `why` is its message.
  bool no_row_fits = false;
  std::string why;
};

// For every configuration and length of `options` (batches and max_tokens are not used): the plan
// `padless train --memory-budget` makes (probe ladder and choice of PlanForMemoryBudget, on a fresh
// model), then a training step of the planned batch measured as training runs it (a fresh
// optimizer, after the plan), the lengths in increasing order. `on_check` is called with each
// result as it is known. Returns how many plans failed (not `ok`); errors of planning or measuring
// end the checks, and so does a budget too small for the shortest length of a configuration (below
// the model's fixed cost, it holds no step at all); a longer length that no row fits is a
// `no_row_fits` check.
absl::StatusOr<int64_t> CheckMemoryBudgetPlans(
    const MemorySweepOptions& options, int64_t budget_bytes, const c10::Device& device,
    cuda::MemoryMeter& meter, const std::function<void(const BudgetCheck&)>& on_check);

}  // namespace padless::train

#endif  // PADLESS_TRAIN_MEMORY_SWEEP_H_
