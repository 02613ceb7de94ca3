// Trainer: fine-tunes an EncoderClassifier on a TokenizedCorpus with AdamW, warmup + decay,
// gradient accumulation and clipping, AMP (bf16, or fp16 with GradScaler), per-layer checkpointing,
// layer freezing and gradual unfreezing, dev evaluation with early stopping, atomic resumable
// checkpoints, CUDA OOM recovery by splitting the batch, skipping of inf/NaN steps, and a per-step
// CSV log.
#ifndef PADLESS_TRAIN_TRAINER_H_
#define PADLESS_TRAIN_TRAINER_H_

#include <c10/core/Device.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "padless/batching/planner.h"
#include "padless/corpus/tokenized_corpus.h"
#include "padless/models/encoder.h"
#include "padless/eval/evaluation.h"
#include "padless/train/memory_planning.h"
#include "padless/train/train_config.h"

namespace padless::train {

struct TrainResult {
  int64_t steps = 0;  // optimizer steps taken in total (resumed runs included)
  int64_t epochs_completed = 0;
  double train_seconds = 0;  // this process only
  int64_t real_tokens = 0;   // this process only
  int64_t token_slots = 0;
  // Sequences the optimizer steps of this process trained on, counted from the (sub-)batches that
  // actually ran, so an out-of-memory split that lost examples would show here.
  int64_t sequences = 0;
  double real_tokens_per_s = 0;  // over train_seconds (all ranks' tokens in data parallel)
  // The optimizer steps alone: train_seconds less dev evaluations and checkpoint writes. What a
  // comparison of step speed (one GPU against several, one kernel against another) should use.
  double step_seconds = 0;
  double step_tokens_per_s = 0;
  double padding_efficiency = 0;
  int64_t peak_allocated_bytes = 0;
  int64_t peak_reserved_bytes = 0;
  double final_loss = 0;      // mean training loss of the last logging window (skipped steps aside)
  int64_t skipped_steps = 0;  // steps skipped for an inf/NaN loss or gradient (this process)
  std::vector<std::string> oom_events;  // one line per recovered out-of-memory error
  int64_t oom_splits = 0;               // == oom_events.size()
  bool stopped_early = false;
  // The training loss was still at chance level at TrainConfig::chance_check_step (see there).
  bool loss_at_chance = false;
  // --amp fp8: how many of the encoder's GEMMs ran in FP8 in the first step (of fp8_gemms_total);
  // fewer than all is warned about. Both 0 without FP8.
  int64_t fp8_gemms = 0;
  int64_t fp8_gemms_total = 0;
  bool interrupted = false;  // stop_after reached
  std::optional<eval::EvalResult> best_dev;
  int64_t best_step = -1;
  std::optional<MemoryPlan> memory_plan;  // set when memory_budget_bytes > 0
  // What ran, so that a result can be compared with another run's: the job's ranks and nodes, the
  // communication backend ("none" alone), and each rank's batch: its token budget (0 without
  // one) or its sequences per batch.
  int world_size = 1;
  int nodes = 1;
  std::string backend = "none";
  int64_t rank_max_tokens = 0;
  int64_t rank_batch_size = 0;
};

class Trainer {
 public:
  Trainer(models::EncoderClassifier model, TrainConfig config, batching::PlannerOptions plan,
          c10::Device device);
  ~Trainer();

  // Trains on `train`; with `dev`, evaluates, keeps the best parameters (restored at the end) and
  // stops early after `patience` evaluations without improvement of dev accuracy. First sets
  // config.runtime() on the model (it stays set afterwards).
  absl::StatusOr<TrainResult> Train(const corpus::TokenizedCorpus& train,
                                    const corpus::TokenizedCorpus* dev);

 private:
  models::EncoderClassifier model_;
  TrainConfig config_;
  batching::PlannerOptions plan_;
  c10::Device device_;
};

}  // namespace padless::train

#endif  // PADLESS_TRAIN_TRAINER_H_
