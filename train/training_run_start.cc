// How a TrainingRun starts: the schedule, the model on the device, the optimizer, data parallel,
// the resume, the seed and the log (training_run.h).
#include "training_run.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#include <cstdio>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "padless/batching/shard_balance.h"
#include "resume_state.h"

namespace padless::train::internal {
namespace {

// Loss scaling for fp16 only: bf16 and fp8 (bf16 with FP8 GEMMs) keep fp32's exponent range.
GradScalerOptions ScalerOptions(models::AmpMode amp) {
  GradScalerOptions options;
  options.enabled = amp == models::AmpMode::kFp16;
  return options;
}

}  // namespace

TrainingRun::TrainingRun(models::EncoderClassifier& model, const TrainConfig& config,
                         const batching::PlannerOptions& plan, c10::Device device,
                         const corpus::TokenizedCorpus& train, const corpus::TokenizedCorpus* dev,
                         cuda::MemoryMeter& meter)
    : model_(model),
      config_(config),
      plan_(plan),
      device_(device),
      train_(train),
      dev_(dev),
      meter_(meter),
      lengths_(train.Lengths()),
      planner_(plan),
      scaler_(ScalerOptions(config.amp())),
      store_(config.checkpoint_dir(), config.keep_checkpoints(), config.progress()),
      health_(config) {}

absl::Status TrainingRun::Start(std::optional<MemoryPlan> memory_plan) {
  result_.memory_plan = std::move(memory_plan);
  absl::StatusOr<RunSchedule> schedule = PlanSchedule(planner_, lengths_, config_);
  if (!schedule.ok()) return schedule.status();
  schedule_ = *schedule;
  if (config_.progress()) {
    absl::FPrintF(stderr,
                  "schedule: %d batches per epoch, %d optimizer steps per epoch, %d steps in all "
                  "(warmup %d)\n",
                  schedule_.batches_per_epoch, schedule_.steps_per_epoch, schedule_.total_steps,
                  schedule_.warmup_steps);
  }
  try {
    model_->to(device_);
    model_->train();
    model_->FreezeEmbeddings(config_.freeze_embeddings());
  } catch (const c10::Error& e) {
    return absl::InternalError(
        absl::StrCat("cannot move the model to ", device_.str(), ": ", e.what_without_backtrace()));
  }
  params_ = ParametersForAdamW(model_);
  AdamWOptions adamw_options;
  adamw_options.weight_decay = config_.weight_decay();
  optimizer_ = std::make_unique<FusedAdamW>(params_.params, params_.decay, adamw_options);
  if (absl::Status s = StartDataParallel(); !s.ok()) return s;
  step_ = std::make_unique<TrainStep>(model_, params_.params, *optimizer_, scaler_, device_,
                                      StepOptions());
  if (config_.resume()) {
    const ResumeContext run{config_, device_, planner_, lengths_, schedule_.total_steps};
    absl::Status s = ResumeFromCheckpoint(run, store_, model_, *optimizer_, scaler_, state_);
    if (!s.ok()) return s;
  }
  state_.world_size = config_.data_parallel().world_size();
  if (state_.global_step == 0 && state_.next_batch == 0 && state_.epoch == 0) {
    // Each rank its own stream (the weights are rank 0's, broadcast): the same seed everywhere
    // would repeat one dropout mask on every rank. Rank 0, and a single process, use the seed.
    at::manual_seed(config_.seed() + static_cast<uint64_t>(config_.data_parallel().rank()));
  }
  first_step_ = state_.global_step;
  absl::StatusOr<std::unique_ptr<TrainingLog>> log =
      TrainingLog::Open(config_.log_csv(), config_.resume(), config_.progress(), first_step_,
                        schedule_.total_steps - state_.schedule_offset);
  if (!log.ok()) return log.status();
  log_ = std::move(*log);
  return absl::OkStatus();
}

// Data parallel: every rank starts from rank 0's parameters, and the step all-reduces gradients.
absl::Status TrainingRun::StartDataParallel() {
  const distributed::DataParallel& dp = config_.data_parallel();
  if (!dp.enabled()) return absl::OkStatus();
  if (absl::Status s = dp.group->Broadcast(params_.params, 0); !s.ok()) return s;
  reducer_ = std::make_unique<distributed::GradientReducer>(dp.group, params_.params, dp.reducer);
  if (config_.progress() && dp.rank() == 0) {
    absl::StatusOr<batching::EpochPlan> epoch = planner_.PlanEpoch(lengths_, 0, dp.world_size());
    if (!epoch.ok()) return epoch.status();
    const int64_t budget = planner_.options().max_tokens();
    absl::FPrintF(stderr, "data parallel: %d ranks on %d node%s (%s), %s a batch per rank; %s\n",
                  dp.world_size(), dp.nodes(), dp.nodes() == 1 ? "" : "s", dp.backend(),
                  budget > 0 ? absl::StrCat(budget, " tokens")
                             : absl::StrCat(planner_.options().batch_size(), " sequences"),
                  batching::MeasureShardBalance(*epoch, config_.grad_accum()).Summary());
  }
  return absl::OkStatus();
}

TrainStepOptions TrainingRun::StepOptions() {
  TrainStepOptions o;
  o.amp = config_.amp();
  o.clip_norm = config_.clip_norm();
  o.corpus = &train_;
  o.collator.pad_id = config_.pad_id();
  o.meter = &meter_;
  o.reducer = reducer_.get();
  o.before_forward = config_.before_forward;
  o.on_loss = config_.on_loss;
  o.after_backward = config_.after_backward;
  o.on_oom = [this](const std::string& line) { OnOutOfMemory(line); };
  return o;
}

void TrainingRun::OnOutOfMemory(const std::string& line) {
  ++result_.oom_splits;
  result_.oom_events.push_back(line);
  if (config_.progress()) {
    log_->EndLine();
    absl::FPrintF(stderr, "%s\n", line);
  }
}

}  // namespace padless::train::internal
