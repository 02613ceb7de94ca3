// One optimizer step: forward/backward of its batches, the out-of-memory split and replay, and the
// AMP-aware optimizer update (see train_step.h).
#include "padless/train/train_step.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "padless/models/fused_layer.h"

namespace padless::train {

using batching::Batch;
using batching::BatchSpec;
using batching::Layout;
using batching::Placement;

namespace {

// Cuts a varlen batch into `pieces` batches of consecutive sequences. Empty when it has fewer
// sequences than `pieces`.
std::vector<BatchSpec> SplitVarlenSpec(const BatchSpec& spec, int64_t pieces) {
  std::vector<Placement> items;
  for (const auto& row : spec.rows) items.insert(items.end(), row.begin(), row.end());
  if (static_cast<int64_t>(items.size()) < pieces) return {};
  std::vector<BatchSpec> out;
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

// Cuts a batch into `pieces` batches of consecutive rows (or, for a varlen batch, consecutive
// sequences). Empty when the batch has fewer rows/sequences than `pieces`.
std::vector<BatchSpec> SplitSpec(const BatchSpec& spec, int64_t pieces) {
  if (spec.layout == Layout::kVarlen) return SplitVarlenSpec(spec, pieces);
  if (static_cast<int64_t>(spec.rows.size()) < pieces) return {};
  std::vector<BatchSpec> out;
  for (int64_t p = 0; p < pieces; ++p) {
    const size_t begin = spec.rows.size() * p / pieces, end = spec.rows.size() * (p + 1) / pieces;
    BatchSpec s = spec;
    s.rows.assign(spec.rows.begin() + begin, spec.rows.begin() + end);
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace

AdamWParameters ParametersForAdamW(models::EncoderClassifier& model) {
  AdamWParameters out;
  for (const auto& p : model->named_parameters()) {
    out.params.push_back(p.value());
    const std::string& n = p.key();
    out.decay.push_back(
        !(n.find("bias") != std::string::npos || n.find("norm") != std::string::npos));
  }
  return out;
}

// What the (sub-)batches of one optimizer step's successful attempt held: checked against the
// unsplit batches, so that an out-of-memory split can never drop or repeat examples unnoticed.
struct TrainStep::Trained {
  int64_t sequences = 0;
  int64_t real_tokens = 0;
};

TrainStep::TrainStep(models::EncoderClassifier model, std::vector<at::Tensor> params, FusedAdamW& optimizer,
                     GradScaler& scaler, c10::Device device, TrainStepOptions options)
    : model_(std::move(model)),
      params_(std::move(params)),
      optimizer_(optimizer),
      scaler_(scaler),
      device_(device),
      options_(std::move(options)),
      collator_(options_.collator) {
  if (options_.amp == models::AmpMode::kFp8) {
    models::ModelRuntime runtime = model_->runtime();
    runtime.fp8 = std::make_shared<models::Fp8Scaling>(model_->num_layers() * models::kFusedLayerGemms, device_);
    model_->set_runtime(runtime);
  }
}

absl::StatusOr<StepResult> TrainStep::Run(int64_t step, double lr,
                                          const std::vector<StepBatch>& batches) {
  if (batches.empty()) return absl::InvalidArgumentError("training step: no batches");
  StepResult result;
  result.lr = lr;
  for (const StepBatch& b : batches) {
    result.real_tokens += b.batch.real_tokens;
    result.token_slots += b.batch.real_tokens + b.batch.padded_tokens;
    result.sequences += b.batch.num_sequences;
  }
  split_pieces_.clear();
  weight_sequences_ = result.sequences;
  if (options_.reducer != nullptr) {
    absl::StatusOr<std::vector<int64_t>> global =
        options_.reducer->group().AllReduceSumHost({result.sequences});
    if (!global.ok()) return global.status();
    weight_sequences_ = (*global)[0];
  }
  if (absl::Status s = ForwardBackwardAll(step, batches, result); !s.ok()) return s;
  if (options_.after_backward) options_.after_backward(step, params_);
  OptimizerStep(result);
  return result;
}

// Runs the forward/backward passes of the step, replaying it after each out-of-memory split.
absl::Status TrainStep::ForwardBackwardAll(int64_t step, const std::vector<StepBatch>& batches,
                                           StepResult& result) {
  for (;;) {
    at::Tensor step_loss;
    Trained trained;
    const BatchSpec* failing = nullptr;
    try {
      absl::Status s = Attempt(step, batches, weight_sequences_, step_loss, trained, failing);
      if (!s.ok()) return s;
    } catch (const c10::OutOfMemoryError& e) {
      optimizer_.ZeroGrad();
      if (options_.reducer != nullptr && options_.reducer->Reset()) {
        return absl::FailedPreconditionError(absl::StrCat(
            "step ", step, ": out of memory on rank ", options_.reducer->group().rank(),
            " after the gradient all-reduce had started, so the ranks cannot stay in step; lower "
            "the token budget or --memory-budget: ",
            e.what_without_backtrace()));
      }
      step_loss = at::Tensor();
      if (options_.meter != nullptr) options_.meter->EmptyCache();
      if (failing == nullptr || options_.corpus == nullptr) throw;
      const int64_t pieces = split_pieces_.count(failing) ? split_pieces_[failing] * 2 : 2;
      if (SplitSpec(*failing, pieces).empty()) {
        return absl::ResourceExhaustedError(absl::StrCat(
            "out of memory at step ", step,
            " even with the batch split into single rows: ", e.what_without_backtrace()));
      }
      split_pieces_[failing] = pieces;
      const std::string line = absl::StrCat(
          "step ", step, ": out of memory on a batch of ", failing->num_sequences(), " sequences (",
          failing->token_slots(), " token slots); retrying it in ", pieces, " pieces");
      result.oom_events.push_back(line);
      if (options_.on_oom) options_.on_oom(line);
      continue;
    }
    if (trained.sequences != result.sequences || trained.real_tokens != result.real_tokens) {
      return absl::InternalError(absl::StrCat("step ", step, ": the split batches held ",
                                              trained.sequences, " sequences / ",
                                              trained.real_tokens, " tokens, the batches ",
                                              result.sequences, " / ", result.real_tokens));
    }
    // Only empty batches on this rank: it adds 0 to the step's loss sum.
    result.loss =
        step_loss.defined() ? step_loss : at::zeros({}, at::dtype(at::kFloat).device(device_));
    return options_.reducer != nullptr ? ReduceAcrossRanks(result.loss) : absl::OkStatus();
  }
}

// Data parallel: the gradients and the loss become sums over the ranks (each already weighted by
// its share of the global batch).
absl::Status TrainStep::ReduceAcrossRanks(at::Tensor& step_loss) {
  if (absl::Status s = options_.reducer->Finish(); !s.ok()) return s;
  at::Tensor flat = step_loss.to(at::kFloat).reshape({1}).clone();
  if (absl::Status s = options_.reducer->group().AllReduceSum(flat); !s.ok()) return s;
  step_loss = flat.reshape({});
  return absl::OkStatus();
}

// One pass over the step's batches, the split ones as their pieces. `failing` is the spec of the
// batch that ran last, so an out-of-memory error can be pinned on it.
absl::Status TrainStep::Attempt(int64_t step, const std::vector<StepBatch>& batches,
                                int64_t sequences, at::Tensor& step_loss, Trained& trained,
                                const BatchSpec*& failing) {
  for (size_t i = 0; i < batches.size(); ++i) {
    const StepBatch& b = batches[i];
    const bool last_batch = i + 1 == batches.size();
    // The planner's empty batch (a short rank's share of a data-parallel step) has no loss and
    // weight 0: skipping it leaves the rank's gradient as it is (zero if nothing else ran), which
    // the reducer's Finish() still all-reduces with the other ranks'.
    if (b.batch.num_sequences == 0) continue;
    auto it = b.spec == nullptr ? split_pieces_.end() : split_pieces_.find(b.spec);
    if (it == split_pieces_.end()) {
      failing = b.spec;
      const double weight = static_cast<double>(b.batch.num_sequences) / sequences;
      ForwardBackward(step, b.batch, weight, last_batch, step_loss, trained);
      continue;
    }
    const std::vector<BatchSpec> pieces = SplitSpec(*b.spec, it->second);
    for (size_t p = 0; p < pieces.size(); ++p) {
      absl::StatusOr<Batch> pb = collator_.Collate(*options_.corpus, pieces[p]);
      if (!pb.ok()) return pb.status();
      Batch moved = pb->To(device_);
      failing = b.spec;
      ForwardBackward(step, moved, static_cast<double>(moved.num_sequences) / sequences,
                      last_batch && p + 1 == pieces.size(), step_loss, trained);
    }
  }
  return absl::OkStatus();
}

// One forward + backward of a (sub-)batch; `weight` is its share of the optimizer step's loss,
// `last` whether it is the step's last (data parallel: its backward all-reduces the gradients).
void TrainStep::ForwardBackward(int64_t step, const Batch& b, double weight, bool last,
                                at::Tensor& step_loss, Trained& trained) {
  if (options_.before_forward) options_.before_forward(b);
  at::Tensor loss;
  {
    models::AutocastGuard autocast(device_.type(), options_.amp);
    loss = models::ClassificationLoss(model_->forward(b), b.labels);
  }
  if (options_.on_loss) options_.on_loss(step, loss);
  if (options_.reducer != nullptr) options_.reducer->BeginBackward(last);
  scaler_.Scale(loss * weight).backward();
  at::Tensor contribution = loss.detach() * weight;
  step_loss = step_loss.defined() ? step_loss + contribution : contribution;
  trained.sequences += b.num_sequences;
  trained.real_tokens += b.real_tokens;
}

// Unscale, clip, the finite check, and the update unless it failed.
void TrainStep::OptimizerStep(StepResult& result) {
  if (scaler_.enabled()) scaler_.Unscale(params_);
  // The global gradient norm is finite iff every gradient is. Whether to skip the update stays
  // on the device: the optimizer takes it as a tensor, so the host never waits for the GPU here
  // (a host read per step cost ~3% of a BERT-base step on the H200). The clipping itself happens
  // inside the update, which divides the gradients as it reads them.
  const at::Tensor norm = GlobalGradNorm(params_);
  const at::Tensor finite = at::stack({at::isfinite(result.loss.to(at::kFloat)).to(norm.device()),
                                       at::isfinite(norm.to(at::kFloat))});
  optimizer_.Step(result.lr, /*skip=*/at::logical_not(finite.all()).to(at::kFloat),
                  ClipDivisor(norm, options_.clip_norm));
  if (scaler_.enabled()) scaler_.Update();  // backs off the scale after inf/NaN gradients
  if (model_->runtime().fp8) model_->runtime().fp8->Advance();
  optimizer_.ZeroGrad();
  result.outcome = StepOutcome::Copy(finite);
}

}  // namespace padless::train
