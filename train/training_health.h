// The run's health (internal to the trainer): runs of optimizer steps skipped for a non-finite
// loss or gradient, up to the divergence error; a training loss still at chance level; and
// --amp fp8 GEMMs that ran in bf16. The chance-level and FP8 checks run once each, and tell the
// result and, with progress on, stderr.
#ifndef PADLESS_TRAIN_TRAINING_HEALTH_H_
#define PADLESS_TRAIN_TRAINING_HEALTH_H_

#include <cstdint>
#include <deque>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "padless/models/encoder.h"
#include "padless/train/step_outcome.h"
#include "padless/train/train_config.h"
#include "padless/train/trainer.h"
#include "run_schedule.h"
#include "training_log.h"

namespace padless::train::internal {

// The cross-entropy of predicting the label frequencies of `labels`: what a model that learned
// nothing from the text reaches (ln(num_labels) for balanced labels).
double ChanceLevelLoss(const std::vector<int64_t>& labels);

class TrainingHealth {
 public:
  explicit TrainingHealth(const TrainConfig& config) : config_(config) {}

  // A step taken (1-based `step`); its outcome is read later, by ReadOutcomes.
  void AddStep(int64_t step, const StepOutcome& outcome) { unread_.emplace_back(step, outcome); }

  // Reads step outcomes, oldest first, counting skipped steps (result.skipped_steps) and runs of
  // them; a run that reaches max_nonfinite_steps is the divergence error (Aborted). With `all`
  // every step is read; otherwise only as many as needed to know that the next step may run.
  absl::Status ReadOutcomes(bool all, TrainResult& result);

  // Once, at the first call at or after chance_check_step (or the run's last step, if sooner),
  // with `global_step` steps taken: the last window's mean loss (`log`) against the chance level
  // of the training `labels`. Sets result.loss_at_chance.
  void CheckChanceLevel(int64_t global_step, const RunSchedule& schedule,
                        const std::vector<int64_t>& labels, TrainingLog& log, TrainResult& result);

  // Once, at the first call after a step: whether --amp fp8 ran `model`'s GEMMs in FP8. Sets
  // result.fp8_gemms and fp8_gemms_total.
  void CheckFp8Ran(const models::EncoderClassifier& model, int64_t global_step, TrainingLog& log,
                   TrainResult& result);

 private:
  absl::Status Diverged(int64_t step, const StepOutcome& outcome) const;

  const TrainConfig& config_;
  // Steps whose outcome has not been read yet (1-based step, outcome), oldest first.
  std::deque<std::pair<int64_t, StepOutcome>> unread_;
  // Steps skipped in a row for a non-finite loss or gradient, and the first of them.
  int64_t nonfinite_run_ = 0;
  int64_t nonfinite_first_ = 0;
  bool chance_checked_ = false;
  bool fp8_checked_ = false;
};

}  // namespace padless::train::internal

#endif  // PADLESS_TRAIN_TRAINING_HEALTH_H_
