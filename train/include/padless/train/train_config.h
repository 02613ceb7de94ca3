// TrainConfig: everything a training run is told (schedule, optimizer, AMP, the model's runtime
// settings, freezing, evaluation, checkpoints, logging, memory budget, fault limits) and the test
// hooks into its steps. A plain value; Trainer (trainer.h) runs it.
#ifndef PADLESS_TRAIN_TRAIN_CONFIG_H_
#define PADLESS_TRAIN_TRAIN_CONFIG_H_

#include <ATen/core/Tensor.h>
#include <torch/arg.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "padless/batching/batch.h"
#include "padless/models/autocast.h"
#include "padless/distributed/data_parallel.h"
#include "padless/train/lr_schedule.h"
#include "padless/models/model_runtime.h"
#include "padless/train/training_defaults.h"

namespace padless::train {

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
  TORCH_ARG(models::AmpMode, amp) = models::AmpMode::kOff;
  // How the model runs (attention backend, fused layers, activation memory, checkpoint policy):
  // the trainer sets it on the model once, at the start of Train, before memory planning.
  TORCH_ARG(models::ModelRuntime, runtime) = models::ModelRuntime();
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
  TORCH_ARG(int64_t,
            pad_id) = 0;  // what batches are padded with: the tokenizer's special_ids().pad
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
  // Data-parallel training over the ranks of a process group (data_parallel.h; default: alone).
  TORCH_ARG(distributed::DataParallel, data_parallel) = distributed::DataParallel();
  // The first log flush at or after this optimizer step and twice the warmup (or the last step of a
  // shorter run) warns,
  // once (on stderr when `progress`, and in TrainResult::loss_at_chance), when the window's mean
  // training loss is still at chance level: at least kChanceLevelShare of the loss of predicting
  // the training label frequencies (ln(num_labels) for balanced labels); see
  // training_defaults.h. 0: no check.
  TORCH_ARG(int64_t, chance_check_step) = kChanceLevelCheckStep;

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
  // on_best_weights: called with the copy of the parameters kept after a dev evaluation improved
  // (restored into the model at the end), in ParametersForAdamW order.
  std::function<void(const std::vector<at::Tensor>& best)> on_best_weights;
};

}  // namespace padless::train

#endif  // PADLESS_TRAIN_TRAIN_CONFIG_H_
