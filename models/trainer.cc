#include "padless/models/trainer.h"

#include <ATen/ATen.h>
#include <ATen/Context.h>
#include <c10/util/Exception.h>
#include <torch/serialize/input-archive.h>
#include <torch/serialize/output-archive.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "file_util.h"
#include "padless/batching/collator.h"
#include "padless/batching/loader.h"
#include "padless/cuda/memory_meter.h"
#include "padless/models/grad_scaler.h"
#include "padless/models/inference.h"
#include "padless/models/optimizer.h"
#include "padless/report/atomic_file_writer.h"
#include "padless/tokenize/special_tokens.h"
#include "rng_state.h"

namespace padless::models {

using batching::Batch;
using batching::BatchSpec;
using batching::Layout;
using batching::Placement;
using tokenize::TokenizedCorpus;

namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

std::string FormatDuration(double seconds) {
  if (!(seconds >= 0) || seconds > 1e7) return "?";
  const int64_t s = static_cast<int64_t>(seconds);
  if (s >= 3600) return absl::StrFormat("%dh%02dm", s / 3600, (s % 3600) / 60);
  if (s >= 60) return absl::StrFormat("%dm%02ds", s / 60, s % 60);
  return absl::StrFormat("%ds", s);
}

// Cuts a batch into `pieces` batches of consecutive rows (or, for a varlen batch, consecutive
// sequences). Empty when the batch has fewer rows/sequences than `pieces`.
std::vector<BatchSpec> SplitSpec(const BatchSpec& spec, int64_t pieces) {
  std::vector<BatchSpec> out;
  if (spec.layout == Layout::kVarlen) {
    std::vector<Placement> items;
    for (const auto& row : spec.rows) items.insert(items.end(), row.begin(), row.end());
    if (static_cast<int64_t>(items.size()) < pieces) return {};
    for (int64_t p = 0; p < pieces; ++p) {
      const size_t begin = items.size() * p / pieces, end = items.size() * (p + 1) / pieces;
      BatchSpec s = spec;
      s.rows = {std::vector<Placement>(items.begin() + begin, items.begin() + end)};
      s.length = 0;
      for (const Placement& pl : s.rows[0]) s.length += pl.length;
      out.push_back(std::move(s));
    }
    return out;
  }
  if (static_cast<int64_t>(spec.rows.size()) < pieces) return {};
  for (int64_t p = 0; p < pieces; ++p) {
    const size_t begin = spec.rows.size() * p / pieces, end = spec.rows.size() * (p + 1) / pieces;
    BatchSpec s = spec;
    s.rows.assign(spec.rows.begin() + begin, spec.rows.begin() + end);
    out.push_back(std::move(s));
  }
  return out;
}

absl::Status CheckCorpus(const TokenizedCorpus& corpus, const EncoderConfig& config,
                         const char* name) {
  if (corpus.empty()) return absl::InvalidArgumentError(absl::StrCat(name, ": no examples"));
  for (size_t i = 0; i < corpus.size(); ++i) {
    if (corpus.label(i) < 0 || corpus.label(i) >= config.num_labels()) {
      return absl::InvalidArgumentError(absl::StrCat(name, ": example ", i, " has label id ",
                                                     corpus.label(i), ", outside [0, ",
                                                     config.num_labels(), ")"));
    }
  }
  for (int32_t id : corpus.flat_tokens()) {
    if (id < 0 || id >= config.vocab_size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          name, ": token id ", id, " outside the model's vocabulary of ", config.vocab_size()));
    }
  }
  return absl::OkStatus();
}

// "step-00000042.pt" -> 42; -1 for other names.
int64_t CheckpointStep(const std::string& name) {
  if (name.rfind("step-", 0) != 0 || name.size() < 9 || name.substr(name.size() - 3) != ".pt") {
    return -1;
  }
  int64_t step = -1;
  if (!absl::SimpleAtoi(name.substr(5, name.size() - 8), &step)) return -1;
  return step;
}

std::vector<std::pair<int64_t, std::string>> ListCheckpoints(const std::string& dir) {
  std::vector<std::pair<int64_t, std::string>> out;
  for (const std::string& name : internal::ListDirectory(dir)) {
    const int64_t step = CheckpointStep(name);
    if (step >= 0) out.emplace_back(step, internal::JoinPath(dir, name));
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

absl::StatusOr<EvalResult> Evaluate(EncoderClassifier& model, const TokenizedCorpus& data,
                                    const batching::PlannerOptions& plan_options,
                                    const c10::Device& device, AmpMode amp) {
  absl::Status check = CheckCorpus(data, model->config(), "eval data");
  if (!check.ok()) return check;
  const bool was_training = model->is_training();
  model->eval();
  absl::StatusOr<CorpusScores> scores = ScoreCorpus(model, data, plan_options, device, amp);
  if (was_training) model->train();
  if (!scores.ok()) return scores.status();
  EvalResult r;
  const int64_t classes = model->config().num_labels();
  std::vector<int64_t> gold(data.size());
  r.predictions.resize(data.size());
  for (size_t i = 0; i < data.size(); ++i) {
    gold[i] = data.label(i);
    const std::vector<float>& p = scores->probabilities[i];
    r.predictions[i] = std::max_element(p.begin(), p.end()) - p.begin();
  }
  r.probabilities = std::move(scores->probabilities);
  r.metrics = ComputeMetrics(gold, r.predictions, classes);
  r.loss = scores->sequences > 0 ? scores->loss_sum / scores->sequences : 0.0;
  r.real_tokens = scores->real_tokens;
  r.token_slots = scores->token_slots;
  return r;
}

Trainer::Trainer(EncoderClassifier model, TrainConfig config, batching::PlannerOptions plan,
                 c10::Device device)
    : model_(std::move(model)),
      config_(std::move(config)),
      plan_(std::move(plan)),
      device_(device) {}

Trainer::~Trainer() = default;

absl::StatusOr<TrainResult> Trainer::Train(const TokenizedCorpus& train,
                                           const TokenizedCorpus* dev) {
  const EncoderConfig& mc = model_->config();
  absl::Status check = CheckCorpus(train, mc, "training data");
  if (check.ok() && dev != nullptr) check = CheckCorpus(*dev, mc, "dev data");
  if (!check.ok()) return check;
  if (plan_.max_len() > mc.max_positions()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "max_len ", plan_.max_len(), " exceeds the model's max_positions ", mc.max_positions()));
  }
  if (config_.grad_accum() < 1) return absl::InvalidArgumentError("grad_accum: must be >= 1");
  if (config_.amp() != AmpMode::kOff && device_.is_cpu() && config_.amp() == AmpMode::kFp16) {
    return absl::InvalidArgumentError("amp: fp16 needs a CUDA device (use bf16 on the CPU)");
  }

  cuda::MemoryMeter meter(device_);

  // Memory-aware batching: measure this model's steps and size the batches before planning.
  std::optional<MemoryPlan> memory_plan;
  if (config_.memory_budget_bytes() > 0) {
    MemoryPlanOptions mopts;
    mopts.budget_bytes = config_.memory_budget_bytes();
    mopts.safety_margin = config_.memory_safety_margin();
    mopts.amp = config_.amp();
    mopts.checkpoint = config_.checkpoint();
    mopts.adamw.weight_decay = config_.weight_decay();
    absl::StatusOr<MemoryPlan> mp = PlanForMemoryBudget(model_, plan_, mopts, device_);
    if (!mp.ok()) return mp.status();
    plan_ = mp->plan;
    if (config_.progress()) absl::FPrintF(stderr, "%s\n", mp->Summary());
    memory_plan = std::move(*mp);
  }

  const std::vector<int64_t> lengths = train.Lengths();
  const batching::Planner planner(plan_);
  absl::StatusOr<std::vector<BatchSpec>> first_plan = planner.Plan(lengths, 0);
  if (!first_plan.ok()) return first_plan.status();
  if (first_plan->empty()) return absl::InvalidArgumentError("training data gives no batches");
  const int64_t steps_per_epoch =
      (static_cast<int64_t>(first_plan->size()) + config_.grad_accum() - 1) / config_.grad_accum();
  const int64_t total_steps =
      config_.max_steps() > 0 ? config_.max_steps() : config_.epochs() * steps_per_epoch;
  const int64_t warmup_steps =
      static_cast<int64_t>(std::llround(config_.warmup_fraction() * total_steps));

  try {
    model_->to(device_);
    model_->train();
    model_->set_checkpoint_policy(config_.checkpoint());
    model_->FreezeEmbeddings(config_.freeze_embeddings());
  } catch (const c10::Error& e) {
    return absl::InternalError(
        absl::StrCat("cannot move the model to ", device_.str(), ": ", e.what_without_backtrace()));
  }

  // Every parameter goes to the optimizer (frozen ones simply have no gradient); no weight decay
  // for biases, LayerNorm gains and embeddings' norm.
  std::vector<at::Tensor> params;
  std::vector<bool> decay;
  for (const auto& p : model_->named_parameters()) {
    params.push_back(p.value());
    const std::string& n = p.key();
    decay.push_back(!(n.find("bias") != std::string::npos || n.find("norm") != std::string::npos));
  }
  FusedAdamW optimizer(params, decay, AdamWOptions{.weight_decay = config_.weight_decay()});
  GradScaler scaler(GradScalerOptions{.enabled = config_.amp() == AmpMode::kFp16});

  TrainResult result;
  result.memory_plan = std::move(memory_plan);
  int64_t epoch = 0, start_batch = 0, global_step = 0;
  double best_accuracy = -1;
  int64_t evals_since_best = 0;
  std::vector<at::Tensor> best_params;

  // --- Resume.
  const std::string& ckpt_dir = config_.checkpoint_dir();
  auto save_checkpoint = [&](int64_t ep, int64_t next_batch) -> absl::Status {
    if (ckpt_dir.empty()) return absl::OkStatus();
    absl::Status made = internal::MakeDirectories(ckpt_dir);
    if (!made.ok()) return made;
    const std::string path =
        internal::JoinPath(ckpt_dir, absl::StrFormat("step-%08d.pt", global_step));
    absl::StatusOr<std::unique_ptr<report::AtomicFileWriter>> out =
        report::AtomicFileWriter::Open(path, /*is_checkpoint=*/true);
    if (!out.ok()) {
      return absl::Status(out.status().code(),
                          absl::StrCat("cannot write checkpoint: ", out.status().message()));
    }
    try {
      torch::serialize::OutputArchive a;
      for (const auto& p : model_->named_parameters())
        a.write("model." + p.key(), p.value().detach().cpu());
      for (const auto& [name, t] : optimizer.State()) a.write("optim." + name, t.cpu());
      for (size_t i = 0; i < best_params.size(); ++i)
        a.write(absl::StrCat("best.", i), best_params[i].cpu());
      a.write("scaler", scaler.state());
      a.write("meta", at::tensor(std::vector<int64_t>{ep, next_batch, global_step, evals_since_best,
                                                      result.best_step,
                                                      static_cast<int64_t>(best_params.size())}));
      a.write("best_accuracy", at::full({}, best_accuracy, at::kDouble));
      const internal::RngState rng = internal::CaptureRng(device_);
      a.write("rng.cpu", rng.cpu);
      if (rng.cuda.defined()) a.write("rng.cuda", rng.cuda);
      a.save_to((*out)->Sink());
    } catch (const c10::Error& e) {
      return absl::InternalError(
          absl::StrCat(path, ": cannot write checkpoint: ", e.what_without_backtrace()));
    }
    // A failed write leaves the earlier checkpoints alone: nothing is rotated out.
    if (absl::Status s = (*out)->Commit(); !s.ok()) {
      return absl::Status(s.code(), absl::StrCat("cannot write checkpoint: ", s.message()));
    }
    auto all = ListCheckpoints(ckpt_dir);
    for (size_t i = 0; i + std::max<int64_t>(config_.keep_checkpoints(), 1) < all.size(); ++i) {
      internal::RemoveFile(all[i].second);
    }
    return absl::OkStatus();
  };

  if (config_.resume() && !ckpt_dir.empty()) {
    // A process killed while writing a checkpoint leaves its temporary file; it is never taken as
    // a checkpoint (ListCheckpoints wants "step-N.pt"), only cleared away.
    for (const std::string& name : internal::ListDirectory(ckpt_dir)) {
      if (report::IsTemporaryName(name)) {
        internal::RemoveFile(internal::JoinPath(ckpt_dir, name));
        if (config_.progress()) {
          absl::FPrintF(stderr, "removed %s, left by an interrupted checkpoint write\n",
                        internal::JoinPath(ckpt_dir, name));
        }
      }
    }
    auto all = ListCheckpoints(ckpt_dir);
    if (!all.empty()) {
      const std::string path = all.back().second;
      try {
        torch::serialize::InputArchive a;
        a.load_from(path, at::Device(at::kCPU));
        at::AutoGradMode no_grad(false);
        for (auto& p : model_->named_parameters()) {
          at::Tensor t;
          if (!a.try_read("model." + p.key(), t) || t.sizes() != p.value().sizes()) {
            return absl::InvalidArgumentError(
                absl::StrCat(path, ": parameter '", p.key(), "' missing or of another shape"));
          }
          p.value().copy_(t);
        }
        std::vector<std::pair<std::string, at::Tensor>> state = optimizer.State();
        for (auto& [name, t] : state) {
          at::Tensor stored;
          if (!a.try_read("optim." + name, stored)) {
            return absl::InvalidArgumentError(
                absl::StrCat(path, ": optimizer state '", name, "' missing"));
          }
          t = stored;
        }
        if (!optimizer.LoadState(state)) {
          return absl::InvalidArgumentError(
              absl::StrCat(path, ": optimizer state does not match the model"));
        }
        at::Tensor scaler_state, meta, best_acc;
        a.read("scaler", scaler_state);
        a.read("meta", meta);
        a.read("best_accuracy", best_acc);
        scaler.load_state(scaler_state);
        epoch = meta[0].item<int64_t>();
        start_batch = meta[1].item<int64_t>();
        global_step = meta[2].item<int64_t>();
        evals_since_best = meta[3].item<int64_t>();
        result.best_step = meta[4].item<int64_t>();
        for (int64_t i = 0; i < meta[5].item<int64_t>(); ++i) {
          at::Tensor t;
          a.read(absl::StrCat("best.", i), t);
          best_params.push_back(t.to(device_));
        }
        best_accuracy = best_acc.item<double>();
        internal::RngState rng_state;
        a.read("rng.cpu", rng_state.cpu);
        a.try_read("rng.cuda", rng_state.cuda);
        internal::RestoreRng(rng_state, device_);
      } catch (const c10::Error& e) {
        return absl::InvalidArgumentError(
            absl::StrCat(path, ": corrupt checkpoint: ", e.what_without_backtrace()));
      }
      if (config_.progress()) {
        absl::FPrintF(stderr, "resuming from %s (epoch %d, batch %d, step %d)\n", path, epoch,
                      start_batch, global_step);
      }
    }
  }
  if (global_step == 0 && start_batch == 0 && epoch == 0) at::manual_seed(config_.seed());

  // --- Logging.
  std::unique_ptr<std::ofstream> csv;
  if (!config_.log_csv().empty()) {
    const bool append = config_.resume() && internal::IsRegularFile(config_.log_csv());
    csv = std::make_unique<std::ofstream>(config_.log_csv(),
                                          append ? std::ios::app : std::ios::trunc);
    if (!*csv)
      return absl::InternalError(absl::StrCat(config_.log_csv(), ": cannot open for writing"));
    if (!append) {
      *csv << "step,epoch,loss,lr,real_tokens,token_slots,padding_efficiency,real_tokens_per_s,"
              "allocated_bytes,reserved_bytes,peak_allocated_bytes,oom_splits,skipped\n";
    }
  }
  struct PendingRow {
    int64_t step, epoch;
    at::Tensor loss;
    double lr;
    int64_t real, slots;
    double tokens_per_s;
    cuda::MemorySnapshot mem;
    int64_t ooms;
    bool skipped;
  };
  std::vector<PendingRow> pending;
  auto window_start = Clock::now();
  int64_t window_tokens = 0;
  const auto train_start = Clock::now();
  const int64_t first_step = global_step;

  // The progress line is redrawn in place ("\r"); anything else printed to stderr, and the end of
  // training, first ends it so that the next output starts on a line of its own.
  bool progress_line_open = false;
  auto end_progress_line = [&] {
    if (progress_line_open) absl::FPrintF(stderr, "\n");
    progress_line_open = false;
  };

  auto flush = [&]() -> absl::Status {
    if (pending.empty()) return absl::OkStatus();
    std::vector<at::Tensor> losses;
    for (const PendingRow& r : pending) losses.push_back(r.loss);
    at::Tensor host = at::stack(losses).to(at::kCPU, at::kDouble);  // the one sync per window
    const double window_s = Seconds(window_start);
    const double tps = window_s > 0 ? window_tokens / window_s : 0.0;
    double loss_sum = 0;
    int64_t finite_rows = 0;
    for (size_t i = 0; i < pending.size(); ++i) {
      const PendingRow& r = pending[i];
      const double loss = host[i].item<double>();
      if (!r.skipped) {
        loss_sum += loss;
        ++finite_rows;
      }
      if (csv) {
        *csv << absl::StrFormat("%d,%d,%.6f,%.6g,%d,%d,%.4f,%.1f,%d,%d,%d,%d,%d\n", r.step, r.epoch,
                                loss, r.lr, r.real, r.slots,
                                r.slots > 0 ? static_cast<double>(r.real) / r.slots : 0.0, tps,
                                r.mem.allocated_bytes, r.mem.reserved_bytes,
                                r.mem.peak_allocated_bytes, r.ooms, r.skipped ? 1 : 0);
      }
    }
    if (csv && !csv->flush()) {
      return absl::InternalError(absl::StrCat(
          config_.log_csv(), ": cannot write the training log: ", std::strerror(errno)));
    }
    if (finite_rows > 0) result.final_loss = loss_sum / finite_rows;
    if (config_.progress()) {
      const int64_t done = global_step - first_step;
      const double elapsed = Seconds(train_start);
      const double eta = done > 0 ? elapsed / done * (total_steps - global_step) : -1;
      absl::FPrintF(
          stderr, "\rstep %d/%d  epoch %d  loss %.4f  %.0f tok/s  ETA %s%s   ", global_step,
          total_steps, pending.back().epoch, result.final_loss, tps, FormatDuration(eta),
          result.skipped_steps > 0 ? absl::StrCat("  skipped ", result.skipped_steps, " non-finite")
                                   : "");
      progress_line_open = true;
    }
    pending.clear();
    window_tokens = 0;
    window_start = Clock::now();
    return absl::OkStatus();
  };
  // Error returns end the progress line too, so the caller's message starts a line.
  struct EndLineOnExit {
    std::function<void()> end;
    ~EndLineOnExit() { end(); }
  } end_line_on_exit{end_progress_line};

  // --- Evaluation and early stopping.
  auto evaluate = [&]() -> absl::Status {
    if (dev == nullptr) return absl::OkStatus();
    absl::StatusOr<EvalResult> r = Evaluate(model_, *dev, plan_, device_, config_.amp());
    if (!r.ok()) return r.status();
    if (config_.progress()) {
      end_progress_line();
      absl::FPrintF(stderr, "[step %d] dev accuracy %.4f  macro-F1 %.4f  loss %.4f\n", global_step,
                    r->metrics.accuracy, r->metrics.macro_f1, r->loss);
    }
    if (r->metrics.accuracy > best_accuracy) {
      best_accuracy = r->metrics.accuracy;
      result.best_step = global_step;
      result.best_dev = *r;
      evals_since_best = 0;
      best_params.clear();
      for (const at::Tensor& p : params) best_params.push_back(p.detach().clone());
    } else {
      ++evals_since_best;
    }
    return absl::OkStatus();
  };
  auto patience_exhausted = [&] {
    return config_.patience() > 0 && evals_since_best >= config_.patience();
  };

  batching::Collator collator(batching::CollatorOptions{.pad_id = tokenize::kPadId});
  std::map<const BatchSpec*, int64_t> split_pieces;

  // What the (sub-)batches of one optimizer step's successful attempt held: checked against the
  // unsplit batches, so that an out-of-memory split can never drop or repeat examples unnoticed.
  struct Trained {
    int64_t sequences = 0;
    int64_t real_tokens = 0;
  };

  // One forward + backward of a (sub-)batch; `weight` is its share of the optimizer step's loss.
  auto forward_backward = [&](const Batch& b, double weight, at::Tensor& step_loss,
                              Trained& trained) {
    if (config_.before_forward) config_.before_forward(b);
    at::Tensor loss;
    {
      AutocastGuard autocast(device_.type(), config_.amp());
      loss = ClassificationLoss(model_->forward(b), b.labels);
    }
    if (config_.on_loss) config_.on_loss(global_step, loss);
    scaler.Scale(loss * weight).backward();
    at::Tensor contribution = loss.detach() * weight;
    step_loss = step_loss.defined() ? step_loss + contribution : contribution;
    trained.sequences += b.num_sequences;
    trained.real_tokens += b.real_tokens;
  };

  // Runs the forward/backward passes of one optimizer step. On a CUDA out-of-memory error the
  // gradients are cleared, the failing batch is split in two (again if needed) and the whole step
  // is replayed, so the accumulated gradient is exactly that of the unsplit step.
  auto run_group = [&](std::vector<std::pair<const BatchSpec*, Batch>>& group,
                       at::Tensor& step_loss, Trained& trained) -> absl::Status {
    int64_t sequences = 0;
    for (const auto& g : group) sequences += g.second.num_sequences;
    for (;;) {
      step_loss = at::Tensor();
      trained = Trained();
      const BatchSpec* failing = nullptr;
      try {
        for (auto& [spec, batch] : group) {
          const double weight = static_cast<double>(batch.num_sequences) / sequences;
          auto it = split_pieces.find(spec);
          if (it == split_pieces.end()) {
            failing = spec;
            forward_backward(batch, weight, step_loss, trained);
            continue;
          }
          for (const BatchSpec& piece : SplitSpec(*spec, it->second)) {
            absl::StatusOr<Batch> pb = collator.Collate(train, piece);
            if (!pb.ok()) return pb.status();
            Batch moved = pb->To(device_);
            failing = spec;
            forward_backward(moved, static_cast<double>(moved.num_sequences) / sequences, step_loss,
                             trained);
          }
        }
        return absl::OkStatus();
      } catch (const c10::OutOfMemoryError& e) {
        optimizer.ZeroGrad();
        step_loss = at::Tensor();
        meter.EmptyCache();
        const int64_t pieces = split_pieces.count(failing) ? split_pieces[failing] * 2 : 2;
        if (SplitSpec(*failing, pieces).empty()) {
          return absl::ResourceExhaustedError(absl::StrCat(
              "out of memory at step ", global_step,
              " even with the batch split into single rows: ", e.what_without_backtrace()));
        }
        split_pieces[failing] = pieces;
        ++result.oom_splits;
        const std::string line =
            absl::StrCat("step ", global_step, ": out of memory on a batch of ",
                         failing->num_sequences(), " sequences (", failing->token_slots(),
                         " token slots); retrying it in ", pieces, " pieces");
        result.oom_events.push_back(line);
        if (config_.progress()) {
          end_progress_line();
          absl::FPrintF(stderr, "%s\n", line);
        }
      }
    }
  };

  // Steps skipped in a row for a non-finite loss or gradient, and the first of them.
  int64_t nonfinite_run = 0, nonfinite_first = 0;

  bool stop = false;
  absl::Status status;
  while (epoch < config_.epochs() && !stop && global_step < total_steps) {
    absl::StatusOr<std::vector<BatchSpec>> plan = planner.Plan(lengths, epoch, 0, 1, start_batch);
    if (!plan.ok()) return plan.status();
    // Gradual unfreezing: one more (top) layer thaws every `unfreeze_every` epochs.
    const int64_t frozen =
        config_.unfreeze_every() > 0
            ? std::max<int64_t>(0, config_.freeze_layers() - epoch / config_.unfreeze_every())
            : config_.freeze_layers();
    model_->FreezeLayersBelow(frozen);

    batching::LoaderOptions lopts;
    lopts.num_workers = config_.loader_workers();
    lopts.device = device_;
    lopts.collator.pad_id = tokenize::kPadId;
    // A resume exactly at the end of an epoch has nothing left to load in it.
    absl::StatusOr<std::unique_ptr<batching::Loader>> loader =
        plan->empty() ? absl::StatusOr<std::unique_ptr<batching::Loader>>(nullptr)
                      : batching::Loader::Create(&train, *plan, lopts);
    if (!loader.ok()) return loader.status();

    int64_t batch_index = start_batch;
    size_t plan_pos = 0;
    std::vector<std::pair<const BatchSpec*, Batch>> group;
    while (*loader != nullptr) {
      absl::StatusOr<std::optional<Batch>> next = (*loader)->Next();
      if (!next.ok()) return next.status();
      if (next->has_value()) {
        group.emplace_back(&(*plan)[plan_pos++], std::move(**next));
        ++batch_index;
      }
      const bool flush_group = static_cast<int64_t>(group.size()) == config_.grad_accum() ||
                               (!next->has_value() && !group.empty());
      if (flush_group) {
        at::Tensor step_loss;
        Trained trained;
        int64_t real = 0, slots = 0, sequences = 0;
        for (const auto& g : group) {
          real += g.second.real_tokens;
          slots += g.second.real_tokens + g.second.padded_tokens;
          sequences += g.second.num_sequences;
        }
        const int64_t ooms_before = result.oom_splits;
        bool skipped = false;
        try {
          status = run_group(group, step_loss, trained);
          if (!status.ok()) return status;
          if (trained.sequences != sequences || trained.real_tokens != real) {
            return absl::InternalError(
                absl::StrCat("step ", global_step, ": the split batches held ", trained.sequences,
                             " sequences / ", trained.real_tokens, " tokens, the batches ",
                             sequences, " / ", real));
          }
          if (config_.after_backward) config_.after_backward(global_step, params);
          const double lr =
              LearningRate(config_.lr(), global_step, warmup_steps, total_steps, config_.decay());
          if (scaler.enabled()) scaler.Unscale(params);
          // The global gradient norm is finite iff every gradient is (clip_norm 0: norm only).
          // Reading it and the loss costs one host sync per step; fp16 already paid it in
          // GradScaler::Step, and a skipped step must be known before the optimizer runs.
          const at::Tensor norm = ClipGradNorm(params, config_.clip_norm());
          const at::Tensor finite =
              at::stack({at::isfinite(step_loss.to(at::kFloat)).to(norm.device()),
                         at::isfinite(norm.to(at::kFloat))})
                  .cpu();
          const bool loss_finite = finite[0].item<bool>(), grads_finite = finite[1].item<bool>();
          skipped = !(loss_finite && grads_finite);
          if (!skipped) optimizer.Step(lr);
          if (scaler.enabled()) scaler.Update();  // backs off the scale after inf/NaN gradients
          optimizer.ZeroGrad();
          if (skipped) {
            ++result.skipped_steps;
            if (nonfinite_run++ == 0) nonfinite_first = global_step;
          } else {
            nonfinite_run = 0;
          }
          ++global_step;
          result.real_tokens += real;
          result.token_slots += slots;
          result.sequences += sequences;
          window_tokens += real;
          pending.push_back(PendingRow{global_step, epoch, step_loss, lr, real, slots, 0.0,
                                       meter.Snapshot(), result.oom_splits - ooms_before, skipped});
          if (config_.max_nonfinite_steps() > 0 && nonfinite_run >= config_.max_nonfinite_steps()) {
            flush().IgnoreError();  // the log shows the skipped steps; the divergence is the error
            return absl::AbortedError(absl::StrCat(
                "training diverged: ", nonfinite_run, " optimizer steps in a row (steps ",
                nonfinite_first + 1, " to ", global_step, ") had a non-finite ",
                loss_finite ? "gradient" : "loss",
                " and were skipped; the limit is max_nonfinite_steps (--max-nonfinite-steps) = ",
                config_.max_nonfinite_steps(), ". Lower the learning rate or check the data"));
          }
        } catch (const c10::Error& e) {
          return absl::InternalError(
              absl::StrCat("training step ", global_step, " failed: ", e.what_without_backtrace()));
        }
        group.clear();
        split_pieces.clear();
        if (static_cast<int64_t>(pending.size()) >= config_.log_every()) {
          if (status = flush(); !status.ok()) return status;
        }
        if (config_.eval_every() > 0 && global_step % config_.eval_every() == 0) {
          if (status = flush(); !status.ok()) return status;
          status = evaluate();
          if (!status.ok()) return status;
          if (patience_exhausted()) stop = result.stopped_early = true;
        }
        if (config_.checkpoint_every() > 0 && global_step % config_.checkpoint_every() == 0) {
          status = save_checkpoint(epoch, batch_index);
          if (!status.ok()) return status;
        }
        if (global_step >= total_steps) stop = true;
        if (config_.stop_after() > 0 && global_step - first_step >= config_.stop_after() && !stop) {
          // An interruption on request: leave a checkpoint to resume from.
          status = save_checkpoint(epoch, batch_index);
          if (!status.ok()) return status;
          stop = result.interrupted = true;
        }
        if (stop) break;
      }
      if (!next->has_value()) break;
    }
    loader->reset();
    if (stop && (result.interrupted || global_step < total_steps)) break;       // stopped mid-epoch
    if (batch_index < static_cast<int64_t>(plan->size()) + start_batch) break;  // max_steps hit
    ++epoch;
    start_batch = 0;
    ++result.epochs_completed;
    if (status = flush(); !status.ok()) return status;
    if (config_.eval_every() == 0) {
      status = evaluate();
      if (!status.ok()) return status;
      if (patience_exhausted()) stop = result.stopped_early = true;
    }
    if (config_.checkpoint_every() == 0) {
      status = save_checkpoint(epoch, 0);
      if (!status.ok()) return status;
    }
  }
  if (status = flush(); !status.ok()) return status;
  end_progress_line();
  if (dev != nullptr && result.best_step < 0) {
    status = evaluate();
    if (!status.ok()) return status;
  }
  if (!best_params.empty()) {
    at::AutoGradMode no_grad(false);
    for (size_t i = 0; i < params.size(); ++i) params[i].copy_(best_params[i]);
  }
  result.steps = global_step;
  result.train_seconds = Seconds(train_start);
  result.real_tokens_per_s =
      result.train_seconds > 0 ? result.real_tokens / result.train_seconds : 0;
  result.padding_efficiency =
      result.token_slots > 0 ? static_cast<double>(result.real_tokens) / result.token_slots : 0;
  const cuda::MemorySnapshot mem = meter.Snapshot();
  result.peak_allocated_bytes = mem.peak_allocated_bytes;
  result.peak_reserved_bytes = mem.peak_reserved_bytes;
  model_->eval();
  return result;
}

}  // namespace padless::models
