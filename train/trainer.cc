// Trainer::Train: the input checks, the memory budget (run_memory_budget.h) and the epoch loop,
// run by an internal TrainingRun (training_run.h; how a run starts is in training_run_start.cc).
// The step itself is TrainStep (train_step.h), the schedule RunSchedule (run_schedule.h), the
// resume ResumeFromCheckpoint (resume_state.h), the health checks TrainingHealth
// (training_health.h), checkpoints are CheckpointStore (checkpoint_store.h), the CSV log and
// progress line TrainingLog (training_log.h), dev evaluation Evaluate (evaluation.h).
#include "padless/train/trainer.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>
#include <torch/cuda.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "padless/cuda/memory/memory_meter.h"
#include "padless/eval/sharded_evaluation.h"
#include "padless/models/fp8_scaling.h"
#include "padless/train/lr_schedule.h"
#include "rank_rng.h"
#include "run_memory_budget.h"
#include "training_run.h"

namespace padless::train {

using batching::Batch;
using batching::BatchSpec;
using corpus::TokenizedCorpus;

namespace {

// Times a pause in training (a dev evaluation, a checkpoint write) and adds it to `seconds`, so
// that TrainResult::step_seconds counts the optimizer steps alone. It starts once the steps queued
// before it have run on the device, so their time is not counted as the pause's.
class PauseClock {
 public:
  PauseClock(const c10::Device& device, double& seconds) : seconds_(seconds) {
    if (device.is_cuda()) torch::cuda::synchronize(device.index());
    start_ = std::chrono::steady_clock::now();
  }
  ~PauseClock() {
    seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }
  PauseClock(const PauseClock&) = delete;
  PauseClock& operator=(const PauseClock&) = delete;

 private:
  double& seconds_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace

namespace internal {

// Gradual unfreezing: one more (top) layer thaws every `unfreeze_every` epochs.
int64_t TrainingRun::FrozenLayers() const {
  if (config_.unfreeze_every() <= 0) return config_.freeze_layers();
  return std::max<int64_t>(0, config_.freeze_layers() - state_.epoch / config_.unfreeze_every());
}

absl::StatusOr<std::unique_ptr<batching::Loader>> TrainingRun::OpenLoader(
    const std::vector<BatchSpec>& plan) {
  // A resume exactly at the end of an epoch has nothing left to load in it.
  if (plan.empty()) return std::unique_ptr<batching::Loader>();
  batching::LoaderOptions lopts;
  lopts.num_workers = config_.loader_workers();
  lopts.device = device_;
  lopts.collator.pad_id = config_.pad_id();
  return batching::Loader::Create(&train_, plan, lopts);
}

absl::StatusOr<bool> TrainingRun::TrainEpoch() {
  const int64_t start_batch = state_.next_batch;
  absl::StatusOr<std::vector<BatchSpec>> plan =
      planner_.Plan(lengths_, state_.epoch, config_.data_parallel().rank(),
                    config_.data_parallel().world_size(), start_batch);
  if (!plan.ok()) return plan.status();
  model_->FreezeLayersBelow(FrozenLayers());
  absl::StatusOr<std::unique_ptr<batching::Loader>> loader = OpenLoader(*plan);
  if (!loader.ok()) return loader.status();
  size_t plan_pos = 0;
  std::vector<StepBatch> group;
  while (*loader != nullptr) {
    absl::StatusOr<std::optional<Batch>> next = (*loader)->Next();
    if (!next.ok()) return next.status();
    if (next->has_value()) {
      group.push_back(StepBatch{&(*plan)[plan_pos++], std::move(**next)});
      ++state_.next_batch;
    }
    if (static_cast<int64_t>(group.size()) == config_.grad_accum() ||
        (!next->has_value() && !group.empty())) {
      if (absl::Status s = RunStep(group); !s.ok()) return s;
      group.clear();
      if (stop_) break;
    }
    if (!next->has_value()) break;
  }
  loader->reset();
  if (stop_ && (result_.interrupted || ScheduleStep() < schedule_.total_steps)) return false;
  // max_steps hit before the epoch's end
  return state_.next_batch >= static_cast<int64_t>(plan->size()) + start_batch;
}

absl::Status TrainingRun::RunStep(const std::vector<StepBatch>& group) {
  const int64_t step = state_.global_step;
  const double lr = LearningRate(config_.lr(), ScheduleStep(), schedule_.warmup_steps,
                                 schedule_.total_steps, config_.decay());
  try {
    // The earlier steps' outcomes, as far as needed to know that this one may run.
    if (absl::Status s = health_.ReadOutcomes(/*all=*/false, result_); !s.ok()) {
      Flush().IgnoreError();
      return s;
    }
    absl::StatusOr<StepResult> r = step_->Run(step, lr, group);
    if (!r.ok()) return r.status();
    if (absl::Status s = Record(*r); !s.ok()) return s;
  } catch (const c10::Error& e) {
    return absl::InternalError(
        absl::StrCat("training step ", step, " failed: ", e.what_without_backtrace()));
  }
  return AfterStep();
}

// Counts the step and logs it. Its outcome (skipped or not) is read later, by ReadOutcomes
// (training_health.h).
absl::Status TrainingRun::Record(const StepResult& r) {
  ++state_.global_step;
  result_.real_tokens += r.real_tokens;
  result_.token_slots += r.token_slots;
  result_.sequences += r.sequences;
  log_->Add(StepLogRow{state_.global_step, state_.epoch, r.loss, r.lr, r.real_tokens, r.token_slots,
                       meter_.Snapshot(), static_cast<int64_t>(r.oom_events.size()), r.outcome});
  health_.AddStep(state_.global_step, r.outcome);
  return absl::OkStatus();
}

// Logging, evaluation, checkpoints and stopping after a step, as the config asks.
absl::Status TrainingRun::AfterStep() {
  const int64_t step = state_.global_step;
  absl::Status s;
  if (log_->pending() >= config_.log_every() && !(s = Flush()).ok()) return s;
  if (config_.eval_every() > 0 && step % config_.eval_every() == 0) {
    if (!(s = Flush()).ok() || !(s = EvaluateDev()).ok()) return s;
    UpdateEarlyStop();
  }
  if (config_.checkpoint_every() > 0 && step % config_.checkpoint_every() == 0 &&
      !(s = SaveCheckpoint()).ok()) {
    return s;
  }
  if (ScheduleStep() >= schedule_.total_steps) stop_ = true;
  if (config_.stop_after() > 0 && step - first_step_ >= config_.stop_after() && !stop_) {
    // An interruption on request: leave a checkpoint to resume from.
    if (!(s = SaveCheckpoint()).ok()) return s;
    stop_ = result_.interrupted = true;
  }
  return absl::OkStatus();
}

absl::Status TrainingRun::Flush() {
  const absl::Status read = health_.ReadOutcomes(/*all=*/true, result_);
  const absl::Status written = log_->Flush(state_.global_step, result_.skipped_steps);
  health_.CheckChanceLevel(state_.global_step, schedule_, train_.labels(), *log_, result_);
  health_.CheckFp8Ran(model_, state_.global_step, *log_, result_);
  return read.ok() ? written : read;
}

absl::Status TrainingRun::SaveCheckpoint() {
  const distributed::DataParallel& dp = config_.data_parallel();
  if (config_.checkpoint_dir().empty()) return absl::OkStatus();
  const PauseClock clock(device_, paused_seconds_);
  if (dp.enabled()) {  // every rank's streams into rank 0's checkpoint (a collective)
    absl::StatusOr<std::vector<models::internal::RngState>> rngs = GatherRankRng(dp, device_);
    if (!rngs.ok()) return rngs.status();
    state_.rank_rng = *std::move(rngs);
  }
  if (dp.rank() != 0) return absl::OkStatus();  // rank 0 writes them
  return store_.Save(model_, *optimizer_, scaler_, state_, device_);
}

// Data parallel: the result counts every rank's tokens and sequences (throughput of the job).
absl::Status TrainingRun::SumOverRanks() {
  const distributed::DataParallel& dp = config_.data_parallel();
  if (!dp.enabled()) return absl::OkStatus();
  absl::StatusOr<std::vector<int64_t>> sums =
      dp.group->AllReduceSumHost({result_.real_tokens, result_.token_slots, result_.sequences});
  if (!sums.ok()) return sums.status();
  result_.real_tokens = (*sums)[0];
  result_.token_slots = (*sums)[1];
  result_.sequences = (*sums)[2];
  return absl::OkStatus();
}

absl::Status TrainingRun::EndEpoch() {
  ++state_.epoch;
  state_.next_batch = 0;
  ++result_.epochs_completed;
  absl::Status s = Flush();
  if (!s.ok()) return s;
  if (config_.eval_every() == 0) {
    if (!(s = EvaluateDev()).ok()) return s;
    UpdateEarlyStop();
  }
  if (config_.checkpoint_every() == 0) return SaveCheckpoint();
  return absl::OkStatus();
}

// Evaluates on the dev data, if any, and keeps the parameters of the best evaluation.
absl::Status TrainingRun::EvaluateDev() {
  if (dev_ == nullptr) return absl::OkStatus();
  const PauseClock clock(device_, paused_seconds_);
  absl::StatusOr<eval::EvalResult> r = eval::EvaluateOnRanks(
      model_, *dev_, plan_, device_, config_.amp(), config_.pad_id(), config_.data_parallel());
  if (!r.ok()) return r.status();
  if (config_.progress()) {
    log_->EndLine();
    absl::FPrintF(stderr, "[step %d] dev accuracy %.4f  macro-F1 %.4f  loss %.4f\n",
                  state_.global_step, r->metrics.accuracy, r->metrics.macro_f1, r->loss);
  }
  if (r->metrics.accuracy > state_.best_accuracy) {
    state_.best_accuracy = r->metrics.accuracy;
    state_.best_step = state_.global_step;
    result_.best_dev = *r;
    state_.evals_since_best = 0;
    state_.best_params.clear();
    // On the host: the copy must not count against the device's memory budget (issue 13.6).
    for (const at::Tensor& p : params_.params) {
      state_.best_params.push_back(p.detach().to(at::kCPU, /*non_blocking=*/false, /*copy=*/true));
    }
    if (config_.on_best_weights) config_.on_best_weights(state_.best_params);
  } else {
    ++state_.evals_since_best;
  }
  return absl::OkStatus();
}

absl::StatusOr<TrainResult> TrainingRun::Finish() {
  if (absl::Status s = Flush(); !s.ok()) return s;
  if (absl::Status s = SumOverRanks(); !s.ok()) return s;
  log_->EndLine();
  if (dev_ != nullptr && state_.best_step < 0) {
    if (absl::Status s = EvaluateDev(); !s.ok()) return s;
  }
  if (!state_.best_params.empty()) {
    at::AutoGradMode no_grad(false);
    for (size_t i = 0; i < params_.params.size(); ++i) {
      params_.params[i].copy_(state_.best_params[i]);
    }
  }
  result_.steps = state_.global_step;
  const distributed::DataParallel& dp = config_.data_parallel();
  result_.world_size = dp.world_size();
  result_.nodes = dp.nodes();
  result_.backend = dp.backend();
  result_.rank_max_tokens = planner_.options().max_tokens();
  result_.rank_batch_size = planner_.options().batch_size();
  result_.final_loss = log_->final_loss();
  result_.best_step = state_.best_step;
  result_.train_seconds = log_->elapsed_seconds();
  result_.real_tokens_per_s =
      result_.train_seconds > 0 ? result_.real_tokens / result_.train_seconds : 0;
  result_.step_seconds = std::max(0.0, result_.train_seconds - paused_seconds_);
  result_.step_tokens_per_s =
      result_.step_seconds > 0 ? result_.real_tokens / result_.step_seconds : 0;
  result_.padding_efficiency =
      result_.token_slots > 0 ? static_cast<double>(result_.real_tokens) / result_.token_slots : 0;
  const cuda::MemorySnapshot mem = meter_.Snapshot();
  result_.peak_allocated_bytes = mem.peak_allocated_bytes;
  result_.peak_reserved_bytes = mem.peak_reserved_bytes;
  model_->eval();
  return std::move(result_);
}

}  // namespace internal

namespace {

absl::Status CheckInputs(const models::EncoderConfig& mc, const TrainConfig& config,
                         const batching::PlannerOptions& plan, const c10::Device& device,
                         const TokenizedCorpus& train, const TokenizedCorpus* dev) {
  absl::Status check = eval::CheckCorpus(train, mc, "training data");
  if (check.ok() && dev != nullptr) check = eval::CheckCorpus(*dev, mc, "dev data");
  if (!check.ok()) return check;
  if (plan.max_len() > mc.max_sequence_length()) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_len ", plan.max_len(), " exceeds the model's longest sequence ",
                     mc.max_sequence_length(), " (max_positions ", mc.max_positions(),
                     " less position_offset ", mc.position_offset(), ")"));
  }
  if (config.grad_accum() < 1) return absl::InvalidArgumentError("grad_accum: must be >= 1");
  if (config.amp() != models::AmpMode::kOff && device.is_cpu() &&
      config.amp() == models::AmpMode::kFp16) {
    return absl::InvalidArgumentError("amp: fp16 needs a CUDA device (use bf16 on the CPU)");
  }
  if (config.amp() == models::AmpMode::kFp8) {
    if (absl::Status s = models::CheckFp8Device(device); !s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace

Trainer::Trainer(models::EncoderClassifier model, TrainConfig config, batching::PlannerOptions plan,
                 c10::Device device)
    : model_(std::move(model)),
      config_(std::move(config)),
      plan_(std::move(plan)),
      device_(device) {}

Trainer::~Trainer() = default;

absl::StatusOr<TrainResult> Trainer::Train(const TokenizedCorpus& train,
                                           const TokenizedCorpus* dev) {
  absl::Status check = CheckInputs(model_->config(), config_, plan_, device_, train, dev);
  if (!check.ok()) return check;
  model_->set_runtime(config_.runtime());
  cuda::MemoryMeter meter(device_);
  // Memory-aware batching: measure this model's steps and size the batches before planning. The
  // budget bounds the device's reserved memory for the whole run (probes, steps, evaluations,
  // checkpoint writes): the caching allocator is capped at it, and the best-weights copy is kept
  // on the host.
  absl::StatusOr<internal::RunMemoryBudget> budget =
      internal::ApplyMemoryBudget(model_, config_, device_, plan_);
  if (!budget.ok()) return budget.status();

  internal::TrainingRun run(model_, config_, plan_, device_, train, dev, meter);
  if (absl::Status s = run.Start(std::move(budget->plan)); !s.ok()) return s;
  while (run.ShouldContinue()) {
    absl::StatusOr<bool> finished = run.TrainEpoch();
    if (!finished.ok()) return finished.status();
    if (!*finished) break;  // stopped, or max_steps reached, in the middle of the epoch
    if (absl::Status s = run.EndEpoch(); !s.ok()) return s;
  }
  return run.Finish();
}

}  // namespace padless::train
