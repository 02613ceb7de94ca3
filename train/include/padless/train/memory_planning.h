// Memory-aware batching: measures the peak memory of a few probe training steps
// of the actual model (as its runtime is set: attention backend, fused layers,
// checkpoint policy), optimizer and AMP mode on the actual device, fits a
// MemoryModel, and sets the planner's token budget or batch size so that every
// training step fits a byte budget.
//
// Which figure the budget bounds: the device memory the training run reserves, i.e. the CUDA
// caching allocator's reserved bytes (allocated tensors plus cached blocks and fragmentation; the
// CUDA context, a few hundred MiB outside the allocator, is not counted). The probes fit the
// peak of a step (the larger of its allocated and reserved bytes) to the budget less its safety
// margin, which leaves the margin for what varies between real batches; Trainer::Train
// additionally caps the allocator at the budget for the whole run, with expandable segments
// against fragmentation (cuda::DeviceMemoryCap: training, dev evaluations, checkpoint writes)
// and keeps the best-weights copy on the host, so reserved memory cannot pass it (an allocation
// that would is an out-of-memory error, which the trainer recovers from by splitting the batch).
#ifndef PADLESS_TRAIN_MEMORY_PLANNING_H_
#define PADLESS_TRAIN_MEMORY_PLANNING_H_

#include <c10/core/Device.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "padless/batching/batch_spec.h"
#include "padless/batching/planner.h"
#include "padless/cuda/memory/memory_model.h"
#include "padless/models/autocast.h"
#include "padless/models/encoder.h"
#include "padless/train/optimizer.h"
#include "padless/train/train_config.h"

namespace padless::train {

struct MemoryPlanOptions {
  int64_t budget_bytes = 0;  // the peak a training step may reach
  // Fraction of the budget kept free for what the fit does not see (allocator
  // rounding, noise).
  double safety_margin = 0.05;
  models::AmpMode amp = models::AmpMode::kOff;
  AdamWOptions adamw;

  // The options a training run of `config` plans with: its budget, margin, AMP mode and weight
  // decay.
  static MemoryPlanOptions From(const TrainConfig& config);
};

struct MemoryPlan {
  batching::PlannerOptions plan;  // the input options with batch_size or max_tokens chosen
  batching::Layout layout = batching::Layout::kPadded;  // layout the probes (and training) use
  cuda::MemoryModel model;                              // fitted to `samples`
  bool quadratic = false;  // whether the b*s^2 term was fitted (attention stores scores)
  std::vector<cuda::MemorySample> samples;  // the probe steps' peaks
  int64_t budget_bytes = 0;
  int64_t target_bytes = 0;  // budget less the safety margin: what the choice is fitted to
  int64_t row_len = 0;       // longest row a batch can have (the worst case the choice covers)
  int64_t max_tokens = 0;    // chosen token budget (token-budget strategies), else 0
  int64_t batch_size = 0;    // chosen sequences / rows per batch (fixed-size strategies), else 0
  int64_t measured_peak_bytes = 0;  // peak of a probe step of the largest planned batch
  // One line for logs: "memory budget 40.0 GiB (target 38.0 GiB): max_tokens
  // 81920 ...".
  std::string Summary() const;
};

// Measures, fits and chooses. Small probe steps fit the model; then a ladder of
// probes at full rows of max_len climbs to the budget and the choice is the
// largest measured step whose peak fits the target, so the plan rests on a
// measurement, not an extrapolation. The probe steps are TrainSteps
// (train_step.h) run on `model` itself, as its runtime() is set (set it first:
// the trainer applies TrainConfig::runtime before planning), on `device`, where
// it is moved, with a learning rate of 0, so its weights are unchanged; the default RNG streams are
// restored afterwards, and so is the meter's peak (reset), so a caller reports its own steps. The
// peaks come from cuda::MemoryMeter: the caching allocator on CUDA, the counting allocator on the
// CPU (install it before building the model, or weights are not counted). A budget that holds one
// row of `row_len` tokens but not two (one long document, e.g. 8192 tokens) plans batches of one
// row. Errors: a budget that cannot hold one row of `row_len` tokens (FailedPrecondition, naming
// the length and what that row needs: measured, or, when its step ran out of memory under the
// capped allocator, more than the budget), invalid options (InvalidArgument), torch failures
// (Internal).
absl::StatusOr<MemoryPlan> PlanForMemoryBudget(models::EncoderClassifier& model,
                                               const batching::PlannerOptions& plan,
                                               const MemoryPlanOptions& options,
                                               const c10::Device& device);

}  // namespace padless::train

#endif  // PADLESS_TRAIN_MEMORY_PLANNING_H_
