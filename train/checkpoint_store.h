// CheckpointStore (internal to the trainer): a run's resumable checkpoints in one directory,
// `<dir>/step-00000042.pt`. A checkpoint holds the parameters, the optimizer and GradScaler state,
// the RNG streams (the writer's, and every rank's in data parallel) and where the run stands
// (TrainProgress). Saving writes atomically (fsync'd
// temporary file, then rename) and keeps the newest `keep` checkpoints; a failed write rotates
// nothing out. Resuming first clears the temporary files a killed write left, then loads the
// newest checkpoint. An empty directory name turns both into no-ops.
#ifndef PADLESS_TRAIN_CHECKPOINT_STORE_H_
#define PADLESS_TRAIN_CHECKPOINT_STORE_H_

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "padless/models/encoder.h"
#include "padless/models/rng_state.h"
#include "padless/train/grad_scaler.h"
#include "padless/train/optimizer.h"

namespace padless::train::internal {

// Where a run stands, beyond its weights, optimizer, scaler and random streams.
struct TrainProgress {
  int64_t epoch = 0;       // the epoch to continue in
  int64_t next_batch = 0;  // that epoch's first batch not yet trained on
  int64_t global_step = 0;
  int64_t evals_since_best = 0;
  int64_t best_step = -1;
  double best_accuracy = -1;
  // On the host (not counted in the device memory budget); empty until a dev evaluation improved.
  std::vector<at::Tensor> best_params;
  int64_t world_size = 1;  // ranks of the job that wrote it (plans depend on it)
  // The learning-rate schedule's step is global_step + schedule_offset: 0 unless the run was
  // resumed at another world size, which renumbers the schedule but not the steps (trainer.cc).
  int64_t schedule_offset = 0;
  // Data parallel: every rank's random streams at the save, by rank, so that each resumes its
  // own. Empty from a single process (the store saves and restores that one's streams itself).
  std::vector<models::internal::RngState> rank_rng;
};

class CheckpointStore {
 public:
  // `progress`: report removed temporary files and the resume on stderr.
  CheckpointStore(std::string dir, int64_t keep, bool progress);

  // Writes the checkpoint of step `state.global_step` and rotates out all but the newest `keep`.
  absl::Status Save(models::EncoderClassifier& model, const FusedAdamW& optimizer, const GradScaler& scaler,
                    const TrainProgress& state, const c10::Device& device) const;

  // Loads the newest checkpoint into `model`, `optimizer`, `scaler` and the RNG streams, and
  // returns its progress; nullopt when there is none. Errors: a checkpoint that does not match
  // the model or is corrupt (InvalidArgument, naming the file).
  absl::StatusOr<std::optional<TrainProgress>> Resume(models::EncoderClassifier& model,
                                                      FusedAdamW& optimizer, GradScaler& scaler,
                                                      const c10::Device& device) const;

  // Where the checkpoint of step `step` is (or would be) written: `<dir>/step-00000042.pt`.
  std::string PathOf(int64_t step) const;

 private:
  void RemoveTemporaryFiles() const;
  void Rotate() const;

  std::string dir_;
  int64_t keep_;
  bool progress_;
};

}  // namespace padless::train::internal

#endif  // PADLESS_TRAIN_CHECKPOINT_STORE_H_
