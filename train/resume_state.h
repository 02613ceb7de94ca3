// Resuming a run (internal to the trainer): the newest checkpoint restored on every rank, each
// rank's own random streams, and the checkpoint of a job of another world size continued at this
// job's (its epoch at the same share of the batches, the learning-rate schedule at the same share
// of the run).
#ifndef PADLESS_TRAIN_RESUME_STATE_H_
#define PADLESS_TRAIN_RESUME_STATE_H_

#include <c10/core/Device.h>

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "checkpoint_store.h"
#include "padless/batching/planner.h"
#include "padless/models/encoder.h"
#include "padless/train/grad_scaler.h"
#include "padless/train/optimizer.h"
#include "padless/train/train_config.h"

namespace padless::train::internal {

// What a resume works with besides the checkpoint: the run's config and device, and how it plans
// its batches, to place a checkpoint of another world size on this job's plans and schedule.
struct ResumeContext {
  const TrainConfig& config;
  const c10::Device& device;
  const batching::Planner& planner;
  const std::vector<int64_t>& lengths;  // of the training examples, as the planner plans them
  int64_t total_steps;                  // the run's length on this job's schedule (RunSchedule)
};

// The newest checkpoint's weights, optimizer, scaler, progress and random streams, on every rank:
// into `model`, `optimizer`, `scaler` and `state`, which stay as they are when there is none. In
// data parallel every rank calls it (a barrier: no rank may write a checkpoint while another still
// reads one). Errors: the store's, and the planner's for a checkpoint of another world size.
absl::Status ResumeFromCheckpoint(const ResumeContext& run, const CheckpointStore& store,
                                  models::EncoderClassifier& model, FusedAdamW& optimizer,
                                  GradScaler& scaler, TrainProgress& state);

}  // namespace padless::train::internal

#endif  // PADLESS_TRAIN_RESUME_STATE_H_
