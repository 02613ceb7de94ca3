// The memory of one training step, measured: a synthetic batch of full-length random sequences,
// collated exactly like training batches, and a warm-up plus a measured training step: the
// trainer's own TrainStep (train_step.h: forward, backward, clipping, the finite check, AdamW).
// Memory-aware batching (memory_planning.h) and `padless profile-memory` both measure through this,
// so the planner and the profile see the same steps.
#ifndef PADLESS_TRAIN_MEMORY_PROBE_H_
#define PADLESS_TRAIN_MEMORY_PROBE_H_

#include <c10/core/Device.h>

#include <cstdint>

#include "absl/status/statusor.h"
#include "padless/batching/batch.h"
#include "padless/batching/batch_spec.h"
#include "padless/cuda/memory/memory_meter.h"
#include "padless/models/autocast.h"
#include "padless/models/encoder.h"
#include "padless/models/encoder_config.h"
#include "padless/train/optimizer.h"

namespace padless::train {

// `batch` sequences of exactly `len` random tokens (no padding) in `layout` (padded rows, packed
// rows of `len`, or one varlen row), on `device`. Its own generator, seeded from the shape, so
// probing never moves the training run's random streams.
absl::StatusOr<batching::Batch> SyntheticTrainingBatch(batching::Layout layout, int64_t batch,
                                                       int64_t len, const models::EncoderConfig& config,
                                                       const c10::Device& device);

struct StepMemory {
  bool oom = false;                  // the step ran out of memory (the fields below are then 0)
  int64_t baseline_bytes = 0;        // allocated before the measured step (weights, optimizer)
  int64_t peak_allocated_bytes = 0;  // peak of the measured step
  int64_t peak_reserved_bytes = 0;   // the caching allocator's reserve at that peak
};

// Empties the allocator's cache, runs a warm-up step (which creates the optimizer state and
// settles per-shape workspaces), resets the peak, and runs the measured step. The optimizer runs
// at learning rate `lr` (0 leaves the weights unchanged). Out of memory is reported in the
// result, not as an error; other torch failures are Internal errors.
absl::StatusOr<StepMemory> MeasureTrainingStep(models::EncoderClassifier& model, FusedAdamW& opt,
                                               const batching::Batch& batch, models::AmpMode amp, double lr,
                                               cuda::MemoryMeter& meter, const c10::Device& device);

}  // namespace padless::train

#endif  // PADLESS_TRAIN_MEMORY_PROBE_H_
