// TrainingRun (internal to the trainer): one call of Trainer::Train, its state, and the parts of
// its epoch loop. The loop is in trainer.cc; how a run starts (model on the device, optimizer,
// data parallel, resume, seed, log) in training_run_start.cc. It delegates the schedule
// (run_schedule.h), the resume (resume_state.h), the health checks (training_health.h),
// checkpoints (checkpoint_store.h) and the log (training_log.h).
#ifndef PADLESS_TRAIN_TRAINING_RUN_H_
#define PADLESS_TRAIN_TRAINING_RUN_H_

#include <c10/core/Device.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "checkpoint_store.h"
#include "padless/batching/loader.h"
#include "padless/batching/planner.h"
#include "padless/corpus/tokenized_corpus.h"
#include "padless/cuda/memory/memory_meter.h"
#include "padless/distributed/gradient_reducer.h"
#include "padless/models/encoder.h"
#include "padless/train/grad_scaler.h"
#include "padless/train/memory_planning.h"
#include "padless/train/optimizer.h"
#include "padless/train/train_config.h"
#include "padless/train/train_step.h"
#include "padless/train/trainer.h"
#include "run_schedule.h"
#include "training_health.h"
#include "training_log.h"

namespace padless::train::internal {

// One call of Trainer::Train: its state, and the parts of its epoch loop.
class TrainingRun {
 public:
  TrainingRun(models::EncoderClassifier& model, const TrainConfig& config,
              const batching::PlannerOptions& plan, c10::Device device,
              const corpus::TokenizedCorpus& train, const corpus::TokenizedCorpus* dev,
              cuda::MemoryMeter& meter);

  // Schedule, model on the device, optimizer, resume, seed, log.
  absl::Status Start(std::optional<MemoryPlan> memory_plan);
  bool ShouldContinue() const {
    return state_.epoch < config_.epochs() && !stop_ && ScheduleStep() < schedule_.total_steps;
  }
  // Trains on the rest of the current epoch; false when it stopped before the epoch's end.
  absl::StatusOr<bool> TrainEpoch();
  // Counts the epoch, then logs, evaluates and checkpoints as the config asks at epoch ends.
  absl::Status EndEpoch();
  absl::StatusOr<TrainResult> Finish();

 private:
  absl::Status StartDataParallel();
  // The learning-rate schedule's step: global_step, unless a resume at another world size
  // renumbered the schedule (checkpoint_store.h).
  int64_t ScheduleStep() const { return state_.global_step + state_.schedule_offset; }
  absl::Status SumOverRanks();
  TrainStepOptions StepOptions();
  void OnOutOfMemory(const std::string& line);
  int64_t FrozenLayers() const;
  absl::StatusOr<std::unique_ptr<batching::Loader>> OpenLoader(
      const std::vector<batching::BatchSpec>& plan);
  absl::Status RunStep(const std::vector<StepBatch>& group);
  absl::Status Record(const StepResult& step);
  absl::Status AfterStep();
  absl::Status EvaluateDev();
  void UpdateEarlyStop() {
    if (config_.patience() > 0 && state_.evals_since_best >= config_.patience()) {
      stop_ = result_.stopped_early = true;
    }
  }
  // Reads every step's outcome, then writes the log; a divergence found is the error, after the
  // log shows the skipped steps.
  absl::Status Flush();
  absl::Status SaveCheckpoint();

  models::EncoderClassifier& model_;
  const TrainConfig& config_;
  const batching::PlannerOptions& plan_;
  const c10::Device device_;
  const corpus::TokenizedCorpus& train_;
  const corpus::TokenizedCorpus* dev_;
  cuda::MemoryMeter& meter_;
  const std::vector<int64_t> lengths_;
  const batching::Planner planner_;
  RunSchedule schedule_;
  AdamWParameters params_;
  std::unique_ptr<FusedAdamW> optimizer_;
  GradScaler scaler_;
  std::unique_ptr<distributed::GradientReducer> reducer_;  // data parallel only
  std::unique_ptr<TrainStep> step_;
  CheckpointStore store_;
  TrainProgress state_;
  std::unique_ptr<TrainingLog> log_;
  TrainResult result_;
  TrainingHealth health_;
  int64_t first_step_ = 0;
  bool stop_ = false;
  double paused_seconds_ = 0;  // dev evaluations and checkpoint writes (PauseClock)
};

}  // namespace padless::train::internal

#endif  // PADLESS_TRAIN_TRAINING_RUN_H_
