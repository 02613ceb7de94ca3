// Trainer: fine-tunes an EncoderClassifier on a TokenizedCorpus with AdamW, warmup + decay,
// gradient accumulation and clipping, AMP (bf16, or fp16 with GradScaler), per-layer checkpointing,
// layer freezing and gradual unfreezing, dev evaluation with early stopping, atomic resumable
// checkpoints, CUDA OOM recovery by splitting the batch, skipping of inf/NaN steps, and a per-step
// CSV log.
#ifndef PADLESS_MODELS_TRAINER_H_
#define PADLESS_MODELS_TRAINER_H_

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>
#include <torch/arg.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "padless/batching/batch.h"
#include "padless/batching/planner.h"
#include "padless/models/autocast.h"
#include "padless/models/checkpoint.h"
#include "padless/models/encoder.h"
#include "padless/models/lr_schedule.h"
#include "padless/models/memory_planning.h"
#include "padless/models/metrics.h"
#include "padless/tokenize/tokenized_corpus.h"

namespace padless::models {

struct TrainConfig {
  TORCH_ARG(int64_t, epochs) = 3;
  // Optimizer steps to run in total (0: as many as `epochs` give). Also the schedule's length.
  TORCH_ARG(int64_t, max_steps) = 0;
  TORCH_ARG(double, lr) = 5e-4;
  TORCH_ARG(double, weight_decay) = 0.01;
  TORCH_ARG(double, warmup_fraction) = 0.06;
  TORCH_ARG(LrDecay, decay) = LrDecay::kLinear;
  TORCH_ARG(int64_t, grad_accum) = 1;  // batches per optimizer step
  TORCH_ARG(double, clip_norm) = 1.0;  // 0: no clipping
  TORCH_ARG(AmpMode, amp) = AmpMode::kOff;
  TORCH_ARG(CheckpointPolicy, checkpoint) = CheckpointPolicy::None();
  TORCH_ARG(bool, freeze_embeddings) = false;
  // Layers [0, freeze_layers) start frozen; every `unfreeze_every` epochs the top frozen layer
  // thaws (gradual unfreezing; 0: they stay frozen).
  TORCH_ARG(int64_t, freeze_layers) = 0;
  TORCH_ARG(int64_t, unfreeze_every) = 0;
  TORCH_ARG(int64_t, eval_every) = 0;  // optimizer steps between dev evaluations (0: per epoch)
  TORCH_ARG(int64_t, patience) = 0;    // evaluations without improvement before stopping (0: off)
  // Directory for checkpoints (`<out>/checkpoints/step-N.pt`); empty: none.
  TORCH_ARG(std::string, checkpoint_dir) = "";
  TORCH_ARG(int64_t, checkpoint_every) = 0;  // optimizer steps (0: at the end of each epoch)
  TORCH_ARG(int64_t, keep_checkpoints) = 2;
  TORCH_ARG(bool, resume) = false;  // continue from the latest checkpoint in checkpoint_dir
  // Stop after this many optimizer steps of this process, leaving a checkpoint, as an interrupted
  // job would (0: run to the end). The schedule still spans the whole run.
  TORCH_ARG(int64_t, stop_after) = 0;
  TORCH_ARG(std::string, log_csv) = "";
  TORCH_ARG(int64_t, log_every) = 20;  // steps between CSV flushes / progress lines
  TORCH_ARG(bool, progress) = true;    // progress line on stderr
  TORCH_ARG(uint64_t, seed) = 1234;
  TORCH_ARG(int, loader_workers) = 2;
  // Peak memory a training step may reach, in bytes (0: off). When set, probe steps measure the
  // model's memory on the device before planning, and the planner's max_tokens (token-budget
  // strategies) or batch_size (fixed-size ones) is chosen to fit; see memory_planning.h.
  TORCH_ARG(int64_t, memory_budget_bytes) = 0;
  TORCH_ARG(double, memory_safety_margin) = 0.05;  // fraction of the budget kept free
  // An optimizer step whose loss or gradient is inf/NaN is skipped (no parameter or optimizer
  // state changes; with fp16 the GradScaler also backs off) and counted. After this many such
  // steps in a row training stops with an error, since the run has diverged (0: never stop).
  // 50 leaves room for fp16's scale search: from 2^16, halving reaches any usable scale sooner.
  TORCH_ARG(int64_t, max_nonfinite_steps) = 50;

 public:
  // Test hooks. before_forward: called before each forward with the (sub-)batch about to run; may
  // throw (e.g. an injected c10::OutOfMemoryError).
  std::function<void(const batching::Batch&)> before_forward;
  // on_loss: called with each (sub-)batch's loss and the 0-based optimizer step it belongs to,
  // before backward; may replace the loss (e.g. inject NaN).
  std::function<void(int64_t step, at::Tensor& loss)> on_loss;
  // after_backward: called once the step's gradients are accumulated, before they are checked;
  // may change them (e.g. inject inf into one).
  std::function<void(int64_t step, const std::vector<at::Tensor>& params)> after_backward;
};

struct EvalResult {
  ClassificationMetrics metrics;
  double loss = 0;
  std::vector<int64_t> predictions;               // per example of the corpus
  std::vector<std::vector<float>> probabilities;  // per example, softmax over labels
  int64_t real_tokens = 0;
  int64_t token_slots = 0;
};

struct TrainResult {
  int64_t steps = 0;  // optimizer steps taken in total (resumed runs included)
  int64_t epochs_completed = 0;
  double train_seconds = 0;  // this process only
  int64_t real_tokens = 0;   // this process only
  int64_t token_slots = 0;
  // Sequences the optimizer steps of this process trained on, counted from the (sub-)batches that
  // actually ran, so an out-of-memory split that lost examples would show here.
  int64_t sequences = 0;
  double real_tokens_per_s = 0;
  double padding_efficiency = 0;
  int64_t peak_allocated_bytes = 0;
  int64_t peak_reserved_bytes = 0;
  double final_loss = 0;      // mean training loss of the last logging window (skipped steps aside)
  int64_t skipped_steps = 0;  // steps skipped for an inf/NaN loss or gradient (this process)
  std::vector<std::string> oom_events;  // one line per recovered out-of-memory error
  int64_t oom_splits = 0;               // == oom_events.size()
  bool stopped_early = false;
  bool interrupted = false;  // stop_after reached
  std::optional<EvalResult> best_dev;
  int64_t best_step = -1;
  std::optional<MemoryPlan> memory_plan;  // set when memory_budget_bytes > 0
};

// Predictions and metrics of `model` on `data` (eval mode, no grad). Examples split into several
// windows (planner OverLong::kSplit) are classified by averaging their windows' probabilities.
absl::StatusOr<EvalResult> Evaluate(EncoderClassifier& model, const tokenize::TokenizedCorpus& data,
                                    const batching::PlannerOptions& plan, const c10::Device& device,
                                    AmpMode amp);

class Trainer {
 public:
  Trainer(EncoderClassifier model, TrainConfig config, batching::PlannerOptions plan,
          c10::Device device);
  ~Trainer();

  // Trains on `train`; with `dev`, evaluates, keeps the best parameters (restored at the end) and
  // stops early after `patience` evaluations without improvement of dev accuracy.
  absl::StatusOr<TrainResult> Train(const tokenize::TokenizedCorpus& train,
                                    const tokenize::TokenizedCorpus* dev);

 private:
  struct State;
  EncoderClassifier model_;
  TrainConfig config_;
  batching::PlannerOptions plan_;
  c10::Device device_;
};

}  // namespace padless::models

#endif  // PADLESS_MODELS_TRAINER_H_
