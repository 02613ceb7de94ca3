// Trainer::Train: the epoch loop. The step itself is TrainStep (train_step.h), checkpoints are
// CheckpointStore (checkpoint_store.h), the CSV log and progress line TrainingLog
// (training_log.h), dev evaluation Evaluate (evaluation.h).
#include "padless/train/trainer.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>
#include <torch/cuda.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <deque>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "checkpoint_store.h"
#include "rank_rng.h"
#include "padless/batching/loader.h"
#include "padless/batching/shard_balance.h"
#include "padless/cuda/memory/device_memory_cap.h"
#include "padless/cuda/memory/memory_meter.h"
#include "padless/models/fp8_scaling.h"
#include "padless/train/grad_scaler.h"
#include "padless/train/optimizer.h"
#include "padless/eval/sharded_evaluation.h"
#include "padless/train/train_step.h"
#include "padless/train/training_defaults.h"
#include "padless/tokenize/special_tokens.h"
#include "training_log.h"

namespace padless::models {

using batching::Batch;
using batching::BatchSpec;
using tokenize::TokenizedCorpus;

namespace {

// Loss scaling for fp16 only: bf16 and fp8 (bf16 with FP8 GEMMs) keep fp32's exponent range.
GradScalerOptions ScalerOptions(AmpMode amp) {
  GradScalerOptions options;
  options.enabled = amp == AmpMode::kFp16;
  return options;
}

absl::Status CheckInputs(const EncoderConfig& mc, const TrainConfig& config,
                         const batching::PlannerOptions& plan, const c10::Device& device,
                         const TokenizedCorpus& train, const TokenizedCorpus* dev) {
  absl::Status check = CheckCorpus(train, mc, "training data");
  if (check.ok() && dev != nullptr) check = CheckCorpus(*dev, mc, "dev data");
  if (!check.ok()) return check;
  if (plan.max_len() > mc.max_sequence_length()) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_len ", plan.max_len(), " exceeds the model's longest sequence ",
                     mc.max_sequence_length(), " (max_positions ", mc.max_positions(),
                     " less position_offset ", mc.position_offset(), ")"));
  }
  if (config.grad_accum() < 1) return absl::InvalidArgumentError("grad_accum: must be >= 1");
  if (config.amp() != AmpMode::kOff && device.is_cpu() && config.amp() == AmpMode::kFp16) {
    return absl::InvalidArgumentError("amp: fp16 needs a CUDA device (use bf16 on the CPU)");
  }
  if (config.amp() == AmpMode::kFp8) {
    if (absl::Status s = CheckFp8Device(device); !s.ok()) return s;
  }
  return absl::OkStatus();
}

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

// The run's length in optimizer steps, and its warmup.
struct Schedule {
  int64_t batches_per_epoch = 0;  // of the first epoch
  int64_t steps_per_epoch = 0;    // of the first epoch
  int64_t total_steps = 0;
  int64_t warmup_steps = 0;
};

// Without max_steps, the total is the sum over the epochs' own plans: packing reshuffles every
// epoch, so the batch count varies a little between epochs, and a total taken as epochs x the first
// epoch's steps ended the run (by step count) just before the last epoch's end, which then had no
// dev evaluation and no checkpoint. Planning costs milliseconds per epoch.
absl::StatusOr<Schedule> PlanSchedule(const batching::Planner& planner,
                                      const std::vector<int64_t>& lengths,
                                      const TrainConfig& config) {
  const distributed::DataParallel& dp = config.data_parallel();
  Schedule s;
  const int64_t planned_epochs = config.max_steps() > 0 ? 1 : config.epochs();
  for (int64_t epoch = 0; epoch < planned_epochs; ++epoch) {
    absl::StatusOr<std::vector<BatchSpec>> plan =
        planner.Plan(lengths, epoch, dp.rank(), dp.world_size());
    if (!plan.ok()) return plan.status();
    if (plan->empty()) return absl::InvalidArgumentError("training data gives no batches");
    const auto batches = static_cast<int64_t>(plan->size());
    const int64_t steps = (batches + config.grad_accum() - 1) / config.grad_accum();
    if (epoch == 0) {
      s.batches_per_epoch = batches;
      s.steps_per_epoch = steps;
    }
    s.total_steps += steps;
  }
  if (config.max_steps() > 0) s.total_steps = config.max_steps();
  s.warmup_steps = static_cast<int64_t>(std::llround(config.warmup_fraction() * s.total_steps));
  return s;
}

// One call of Trainer::Train: its state, and the parts of its epoch loop.
class TrainingRun {
 public:
  TrainingRun(EncoderClassifier& model, const TrainConfig& config,
              const batching::PlannerOptions& plan, c10::Device device,
              const TokenizedCorpus& train, const TokenizedCorpus* dev, cuda::MemoryMeter& meter)
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
        store_(config.checkpoint_dir(), config.keep_checkpoints(), config.progress()) {}

  // Schedule, model on the device, optimizer, resume, seed, log.
  absl::Status Start(std::optional<MemoryPlan> memory_plan);
  bool ShouldContinue() const {
    return state_.epoch < config_.epochs() && !stop_ && ScheduleStep() < total_steps_;
  }
  // Trains on the rest of the current epoch; false when it stopped before the epoch's end.
  absl::StatusOr<bool> TrainEpoch();
  // Counts the epoch, then logs, evaluates and checkpoints as the config asks at epoch ends.
  absl::Status EndEpoch();
  absl::StatusOr<TrainResult> Finish();

 private:
  absl::Status StartDataParallel();
  absl::Status ResumeFromCheckpoint();
  absl::Status ContinueAtThisWorldSize();
  void RestoreRankRng();
  // The learning-rate schedule's step: global_step, unless a resume at another world size
  // renumbered the schedule (checkpoint_store.h).
  int64_t ScheduleStep() const { return state_.global_step + state_.schedule_offset; }
  absl::Status SumOverRanks();
  TrainStepOptions StepOptions();
  void OnOutOfMemory(const std::string& line);
  int64_t FrozenLayers() const;
  absl::StatusOr<std::unique_ptr<batching::Loader>> OpenLoader(const std::vector<BatchSpec>& plan);
  absl::Status RunStep(const std::vector<StepBatch>& group);
  absl::Status Record(const StepResult& step);
  absl::Status ReadOutcomes(bool all);
  absl::Status Diverged(int64_t step, const StepOutcome& outcome) const;
  absl::Status AfterStep();
  absl::Status EvaluateDev();
  void UpdateEarlyStop() {
    if (config_.patience() > 0 && state_.evals_since_best >= config_.patience()) {
      stop_ = result_.stopped_early = true;
    }
  }
  // Reads every step's outcome, then writes the log; a divergence found is the error, after the
  // log shows the skipped steps.
  absl::Status Flush() {
    const absl::Status read = ReadOutcomes(/*all=*/true);
    const absl::Status written = log_->Flush(state_.global_step, result_.skipped_steps);
    CheckChanceLevel();
    CheckFp8Ran();
    return read.ok() ? written : read;
  }
  void CheckChanceLevel();
  void CheckFp8Ran();
  absl::Status SaveCheckpoint() {
    const distributed::DataParallel& dp = config_.data_parallel();
    if (config_.checkpoint_dir().empty()) return absl::OkStatus();
    const PauseClock clock(device_, paused_seconds_);
    if (dp.enabled()) {  // every rank's streams into rank 0's checkpoint (a collective)
      absl::StatusOr<std::vector<internal::RngState>> rngs = internal::GatherRankRng(dp, device_);
      if (!rngs.ok()) return rngs.status();
      state_.rank_rng = *std::move(rngs);
    }
    if (dp.rank() != 0) return absl::OkStatus();  // rank 0 writes them
    return store_.Save(model_, *optimizer_, scaler_, state_, device_);
  }

  EncoderClassifier& model_;
  const TrainConfig& config_;
  const batching::PlannerOptions& plan_;
  const c10::Device device_;
  const TokenizedCorpus& train_;
  const TokenizedCorpus* dev_;
  cuda::MemoryMeter& meter_;
  const std::vector<int64_t> lengths_;
  const batching::Planner planner_;
  int64_t total_steps_ = 0;
  int64_t warmup_steps_ = 0;
  AdamWParameters params_;
  std::unique_ptr<FusedAdamW> optimizer_;
  GradScaler scaler_;
  std::unique_ptr<distributed::GradientReducer> reducer_;  // data parallel only
  std::unique_ptr<TrainStep> step_;
  internal::CheckpointStore store_;
  internal::TrainProgress state_;
  std::unique_ptr<internal::TrainingLog> log_;
  TrainResult result_;
  int64_t first_step_ = 0;
  // Steps whose outcome has not been read yet (1-based step, outcome), oldest first.
  std::deque<std::pair<int64_t, StepOutcome>> unread_;
  // Steps skipped in a row for a non-finite loss or gradient, and the first of them.
  int64_t nonfinite_run_ = 0;
  int64_t nonfinite_first_ = 0;
  bool stop_ = false;
  double paused_seconds_ = 0;  // dev evaluations and checkpoint writes (PauseClock)
  bool chance_checked_ = false;
  bool fp8_checked_ = false;
};

// The cross-entropy of predicting the label frequencies of `labels`: what a model that learned
// nothing from the text reaches (ln(num_labels) for balanced labels).
double ChanceLevelLoss(const std::vector<int64_t>& labels) {
  std::vector<int64_t> counts;
  for (int64_t label : labels) {
    if (label >= static_cast<int64_t>(counts.size())) counts.resize(label + 1, 0);
    ++counts[label];
  }
  double entropy = 0;
  for (int64_t c : counts) {
    if (c == 0) continue;
    const double p = static_cast<double>(c) / labels.size();
    entropy -= p * std::log(p);
  }
  return entropy;
}

// Once, at the first flush at or after chance_check_step (or the run's last step, if sooner): the
// window's mean loss (already on the host, read by the log's one sync per window) against the
// chance level.
void TrainingRun::CheckChanceLevel() {
  // Not before twice the warmup: a model is not judged while its learning rate is still rising. A
  // run shorter than that is checked at its end (few steps are a cause of it too).
  const int64_t at =
      std::min(std::max(config_.chance_check_step(), 2 * warmup_steps_), total_steps_);
  if (chance_checked_ || config_.chance_check_step() <= 0 || state_.global_step < at) return;
  chance_checked_ = true;
  const double chance = ChanceLevelLoss(train_.labels());
  if (chance <= 0 || log_->final_loss() < kChanceLevelShare * chance) return;
  result_.loss_at_chance = true;
  if (!config_.progress()) return;
  log_->EndLine();
  absl::FPrintF(stderr,
                "warning: after %d steps the training loss %.4f is still at chance level (%.4f, "
                "the loss of predicting the label frequencies): the model is not learning yet. "
                "If it stays there, try a --lr below the current %g, more steps per epoch "
                "(smaller --max-tokens; %d steps in all) or more epochs\n",
                state_.global_step, log_->final_loss(), chance, config_.lr(), total_steps_);
}

// Once, at the first flush: whether --amp fp8 ran the GEMMs in FP8. They are in the fused layers,
// which only some runs use; a run that asked for FP8 and trained in bf16 is told so.
void TrainingRun::CheckFp8Ran() {
  const std::shared_ptr<Fp8Scaling>& fp8 = model_->runtime().fp8;
  if (fp8_checked_ || !fp8 || state_.global_step < 1) return;
  fp8_checked_ = true;
  result_.fp8_gemms = fp8->GemmsInHistory();
  result_.fp8_gemms_total = fp8->gemms();
  if (result_.fp8_gemms == result_.fp8_gemms_total || !config_.progress()) return;
  log_->EndLine();
  absl::FPrintF(stderr,
                "warning: --amp fp8: %d of the encoder's %d GEMMs ran in FP8, the rest in bf16. "
                "FP8 runs in the fused encoder layers: post-LN models on varlen batches (--batching "
                "packed or varlen on a GPU) with --layers fused, not in the layers the attn/ffn "
                "checkpoint scopes recompute, and for weights whose sides are multiples of 16\n",
                result_.fp8_gemms, result_.fp8_gemms_total);
}

absl::Status TrainingRun::Start(std::optional<MemoryPlan> memory_plan) {
  result_.memory_plan = std::move(memory_plan);
  absl::StatusOr<Schedule> schedule = PlanSchedule(planner_, lengths_, config_);
  if (!schedule.ok()) return schedule.status();
  total_steps_ = schedule->total_steps;
  warmup_steps_ = schedule->warmup_steps;
  if (config_.progress()) {
    absl::FPrintF(stderr,
                  "schedule: %d batches per epoch, %d optimizer steps per epoch, %d steps in all "
                  "(warmup %d)\n",
                  schedule->batches_per_epoch, schedule->steps_per_epoch, total_steps_,
                  warmup_steps_);
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
    if (absl::Status s = ResumeFromCheckpoint(); !s.ok()) return s;
  }
  state_.world_size = config_.data_parallel().world_size();
  if (state_.global_step == 0 && state_.next_batch == 0 && state_.epoch == 0) {
    // Each rank its own stream (the weights are rank 0's, broadcast): the same seed everywhere
    // would repeat one dropout mask on every rank. Rank 0, and a single process, use the seed.
    at::manual_seed(config_.seed() + static_cast<uint64_t>(config_.data_parallel().rank()));
  }
  first_step_ = state_.global_step;
  absl::StatusOr<std::unique_ptr<internal::TrainingLog>> log =
      internal::TrainingLog::Open(config_.log_csv(), config_.resume(), config_.progress(),
                                  first_step_, total_steps_ - state_.schedule_offset);
  if (!log.ok()) return log.status();
  log_ = std::move(*log);
  return absl::OkStatus();
}

// The newest checkpoint's weights, optimizer, scaler, progress and random streams, on every rank.
absl::Status TrainingRun::ResumeFromCheckpoint() {
  absl::StatusOr<std::optional<internal::TrainProgress>> resumed =
      store_.Resume(model_, *optimizer_, scaler_, device_);
  if (!resumed.ok()) return resumed.status();
  // No rank may write a checkpoint while another still reads one.
  const distributed::DataParallel& dp = config_.data_parallel();
  if (dp.enabled()) {
    if (absl::Status s = dp.group->Barrier(); !s.ok()) return s;
  }
  if (!resumed->has_value()) return absl::OkStatus();
  state_ = std::move(**resumed);
  RestoreRankRng();
  if (state_.world_size == dp.world_size()) return absl::OkStatus();
  return ContinueAtThisWorldSize();
}

// Data parallel: each rank continues its own random stream. A checkpoint without them (older
// versions) leaves the writer's, which the store restored, on every rank; a rank the writing job
// did not have (resumed with more ranks) starts a stream of its own, seeded by rank and step.
void TrainingRun::RestoreRankRng() {
  const distributed::DataParallel& dp = config_.data_parallel();
  const size_t rank = static_cast<size_t>(dp.rank());
  if (rank < state_.rank_rng.size()) {
    internal::RestoreRng(state_.rank_rng[rank], device_);
  } else if (!state_.rank_rng.empty()) {
    at::manual_seed(config_.seed() + rank + 1000003ULL * static_cast<uint64_t>(state_.global_step));
  }
}

// A checkpoint of a job of another world size. Within the epoch in progress the same share of its
// batches counts as done: the two sizes' plans group the examples differently, so until that
// epoch ends some examples are seen twice and some not at all; later epochs are whole. The
// learning-rate schedule continues at the same share of the run, on this job's schedule (its
// global batch is another size): ScheduleStep() is offset from the step count, so that checkpoint
// and log steps keep increasing. AdamW's and the scaler's states are the same on every rank and
// carry over as they are.
absl::Status TrainingRun::ContinueAtThisWorldSize() {
  const int64_t from = state_.world_size, to = config_.data_parallel().world_size();
  const int64_t accum = config_.grad_accum();
  auto batches = [&](int64_t epoch, int64_t world) -> absl::StatusOr<int64_t> {
    absl::StatusOr<std::vector<BatchSpec>> plan = planner_.Plan(lengths_, epoch, 0, world);
    if (!plan.ok()) return plan.status();
    return static_cast<int64_t>(plan->size());
  };
  absl::StatusOr<int64_t> there = batches(state_.epoch, from), here = batches(state_.epoch, to);
  if (!there.ok()) return there.status();
  if (!here.ok()) return here.status();
  const int64_t old_batch = state_.next_batch;
  const int64_t batch = *there > 0 ? old_batch * *here / *there : 0;
  state_.next_batch = batch - batch % accum;
  int64_t done = 0;  // steps of this job's schedule that the checkpoint's progress is worth
  if (config_.max_steps() > 0) {
    done = std::llround(static_cast<double>(ScheduleStep()) * from / to);
  } else {
    for (int64_t epoch = 0; epoch < state_.epoch; ++epoch) {
      absl::StatusOr<int64_t> n = batches(epoch, to);
      if (!n.ok()) return n.status();
      done += (*n + accum - 1) / accum;
    }
    done += state_.next_batch / accum;
  }
  state_.schedule_offset = done - state_.global_step;
  if (config_.progress() && config_.data_parallel().rank() == 0) {
    absl::FPrintF(stderr,
                  "resume: the checkpoint was written by a job of %d rank%s, this one has %d: "
                  "epoch %d continues at batch %d of %d (%d of %d there), the schedule at step "
                  "%d of %d\n",
                  from, from == 1 ? "" : "s", to, state_.epoch, state_.next_batch, *here,
                  old_batch, *there, done, total_steps_);
  }
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
  if (stop_ && (result_.interrupted || ScheduleStep() < total_steps_)) return false;
  // max_steps hit before the epoch's end
  return state_.next_batch >= static_cast<int64_t>(plan->size()) + start_batch;
}

absl::Status TrainingRun::RunStep(const std::vector<StepBatch>& group) {
  const int64_t step = state_.global_step;
  const double lr =
      LearningRate(config_.lr(), ScheduleStep(), warmup_steps_, total_steps_, config_.decay());
  try {
    // The earlier steps' outcomes, as far as needed to know that this one may run.
    if (absl::Status s = ReadOutcomes(/*all=*/false); !s.ok()) {
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

// Counts the step and logs it. Its outcome (skipped or not) is read later, by ReadOutcomes.
absl::Status TrainingRun::Record(const StepResult& r) {
  ++state_.global_step;
  result_.real_tokens += r.real_tokens;
  result_.token_slots += r.token_slots;
  result_.sequences += r.sequences;
  log_->Add(internal::StepLogRow{state_.global_step, state_.epoch, r.loss, r.lr, r.real_tokens,
                                 r.token_slots, meter_.Snapshot(),
                                 static_cast<int64_t>(r.oom_events.size()), r.outcome});
  unread_.emplace_back(state_.global_step, r.outcome);
  return absl::OkStatus();
}

// Reads step outcomes, oldest first, counting skipped steps and runs of them; a run that reaches
// max_nonfinite_steps is the divergence error. With `all` every step is read; otherwise only as
// many as needed to know that the next step may run, i.e. while the unread steps, were they all
// non-finite, could complete a run at the limit. So the common case (no non-finite steps, limit
// 50) waits for no step, and the run still stops right at the limit.
absl::Status TrainingRun::ReadOutcomes(bool all) {
  const int64_t limit = config_.max_nonfinite_steps();
  while (!unread_.empty() &&
         (all || (limit > 0 && nonfinite_run_ + static_cast<int64_t>(unread_.size()) >= limit))) {
    const auto [step, outcome] = unread_.front();
    unread_.pop_front();
    if (!outcome.skipped()) {
      nonfinite_run_ = 0;
      continue;
    }
    ++result_.skipped_steps;
    if (nonfinite_run_++ == 0) nonfinite_first_ = step - 1;
    if (limit > 0 && nonfinite_run_ >= limit) return Diverged(step, outcome);
  }
  return absl::OkStatus();
}

absl::Status TrainingRun::Diverged(int64_t step, const StepOutcome& outcome) const {
  return absl::AbortedError(
      absl::StrCat("training diverged: ", nonfinite_run_, " optimizer steps in a row (steps ",
                   nonfinite_first_ + 1, " to ", step, ") had a non-finite ",
                   outcome.loss_finite() ? "gradient" : "loss",
                   " and were skipped; the limit is max_nonfinite_steps (--max-nonfinite-steps) = ",
                   config_.max_nonfinite_steps(), ". Lower the learning rate or check the data"));
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
  if (ScheduleStep() >= total_steps_) stop_ = true;
  if (config_.stop_after() > 0 && step - first_step_ >= config_.stop_after() && !stop_) {
    // An interruption on request: leave a checkpoint to resume from.
    if (!(s = SaveCheckpoint()).ok()) return s;
    stop_ = result_.interrupted = true;
  }
  return absl::OkStatus();
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
  absl::StatusOr<EvalResult> r = EvaluateOnRanks(model_, *dev_, plan_, device_, config_.amp(),
                                                 config_.pad_id(), config_.data_parallel());
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

// Data parallel: every rank measured its own device; the plans must agree, or the ranks would
// take different steps.
absl::Status CheckSamePlanOnEveryRank(const MemoryPlan& mp, const distributed::DataParallel& dp) {
  if (!dp.enabled()) return absl::OkStatus();
  absl::StatusOr<std::vector<int64_t>> sums =
      dp.group->AllReduceSumHost({mp.plan.max_tokens(), mp.plan.batch_size()});
  if (!sums.ok()) return sums.status();
  if ((*sums)[0] != mp.plan.max_tokens() * dp.world_size() ||
      (*sums)[1] != mp.plan.batch_size() * dp.world_size()) {
    return absl::FailedPreconditionError(
        absl::StrCat("--memory-budget: the ranks' memory plans differ (rank ", dp.rank(),
                     ": max_tokens ", mp.plan.max_tokens(), ", batch_size ", mp.plan.batch_size(),
                     "); give the ranks identical GPUs or set --max-tokens instead"));
  }
  return absl::OkStatus();
}

}  // namespace

Trainer::Trainer(EncoderClassifier model, TrainConfig config, batching::PlannerOptions plan,
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
  std::optional<MemoryPlan> memory_plan;
  std::optional<cuda::DeviceMemoryCap> cap;
  if (config_.memory_budget_bytes() > 0) {
    absl::StatusOr<cuda::DeviceMemoryCap> capped =
        cuda::DeviceMemoryCap::Create(device_, config_.memory_budget_bytes());
    if (!capped.ok()) return capped.status();
    cap.emplace(*std::move(capped));
    absl::StatusOr<MemoryPlan> mp =
        PlanForMemoryBudget(model_, plan_, MemoryPlanOptions::From(config_), device_);
    if (!mp.ok()) return mp.status();
    if (absl::Status s = CheckSamePlanOnEveryRank(*mp, config_.data_parallel()); !s.ok()) return s;
    plan_ = mp->plan;
    if (config_.progress()) absl::FPrintF(stderr, "%s\n", mp->Summary());
    memory_plan = std::move(*mp);
  }

  TrainingRun run(model_, config_, plan_, device_, train, dev, meter);
  if (absl::Status s = run.Start(std::move(memory_plan)); !s.ok()) return s;
  while (run.ShouldContinue()) {
    absl::StatusOr<bool> finished = run.TrainEpoch();
    if (!finished.ok()) return finished.status();
    if (!*finished) break;  // stopped, or max_steps reached, in the middle of the epoch
    if (absl::Status s = run.EndEpoch(); !s.ok()) return s;
  }
  return run.Finish();
}

}  // namespace padless::models
