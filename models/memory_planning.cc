// Probe steps, fit and choice for memory-aware batching (see
// memory_planning.h).
#include "padless/models/memory_planning.h"

#include <ATen/ATen.h>
#include <torch/cuda.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "padless/batching/collator.h"
#include "padless/cuda/memory_budget.h"
#include "padless/cuda/memory_meter.h"
#include "padless/tokenize/special_tokens.h"
#include "padless/tokenize/tokenized_corpus.h"
#include "rng_state.h"

namespace padless::models {
namespace {

using batching::Layout;
using batching::Placement;
using batching::Sampler;

// `batch` sequences of `len` random tokens in `layout`, collated exactly as
// training batches are, so the probe sees the same tensors (masks, segment ids,
// token indices) as a real step.
absl::StatusOr<batching::Batch> ProbeBatch(Layout layout, int64_t batch, int64_t len,
                                           const EncoderConfig &config, const c10::Device &device) {
  // A private generator: probing must not move the training run's random
  // streams.
  std::mt19937_64 rng(static_cast<uint64_t>(batch * 1000003 + len));
  std::uniform_int_distribution<int32_t> token(5, static_cast<int32_t>(config.vocab_size() - 1));
  std::uniform_int_distribution<int64_t> label(0, config.num_labels() - 1);
  tokenize::TokenizedCorpus corpus;
  corpus.Reserve(static_cast<size_t>(batch), static_cast<size_t>(batch * len));
  std::vector<int32_t> ids(static_cast<size_t>(len));
  batching::BatchSpec spec;
  spec.layout = layout;
  spec.length = layout == Layout::kVarlen ? batch * len : len;
  if (layout == Layout::kVarlen) spec.rows.emplace_back();
  for (int64_t i = 0; i < batch; ++i) {
    for (int32_t &t : ids) t = token(rng);
    corpus.Add(ids, {}, label(rng));
    const Placement piece{i, 0, len, 0};
    if (layout == Layout::kVarlen) {
      spec.rows[0].push_back(piece);
    } else {
      spec.rows.push_back({piece});
    }
  }
  batching::Collator collator(batching::CollatorOptions{.pad_id = tokenize::kPadId});
  absl::StatusOr<batching::Batch> b = collator.Collate(corpus, spec);
  if (!b.ok()) return b.status();
  return b->To(device, /*non_blocking=*/false);
}

// One forward + backward + optimizer step at learning rate 0 (weights
// unchanged).
void TrainStep(EncoderClassifier &model, FusedAdamW &opt, const batching::Batch &batch, AmpMode amp,
               const c10::Device &device) {
  at::Tensor loss;
  {
    AutocastGuard autocast(device.type(), amp);
    loss = ClassificationLoss(model->forward(batch), batch.labels);
  }
  loss.backward();
  opt.Step(0.0);
  opt.ZeroGrad();
  if (device.is_cuda()) torch::cuda::synchronize();
}

// Peak allocated bytes of one step at (batch, len), after a warm-up step of the
// same shape that creates the optimizer state and settles per-shape workspaces.
absl::StatusOr<cuda::MemorySample> Probe(EncoderClassifier &model, FusedAdamW &opt,
                                         cuda::MemoryMeter &meter, Layout layout, int64_t batch,
                                         int64_t len, AmpMode amp, const c10::Device &device) {
  absl::StatusOr<batching::Batch> b = ProbeBatch(layout, batch, len, model->config(), device);
  if (!b.ok()) return b.status();
  try {
    meter.EmptyCache();
    TrainStep(model, opt, *b, amp, device);
    meter.ResetPeak();
    TrainStep(model, opt, *b, amp, device);
  } catch (const c10::OutOfMemoryError &e) {
    opt.ZeroGrad();
    return absl::ResourceExhaustedError(absl::StrCat("memory probe: out of memory on a step of ",
                                                     batch, " x ", len,
                                                     " tokens: ", e.what_without_backtrace()));
  }
  return cuda::MemorySample{batch, len, meter.Snapshot().peak_allocated_bytes};
}

// Dense attention (padded and packed rows, and the per-sequence reference path)
// materialises the s x s scores; only flash attention on CUDA keeps memory
// linear in the sequence length.
bool StoresScores(const EncoderClassifier &model, Layout layout, AmpMode amp,
                  const c10::Device &device) {
  const AttentionBackend backend = model->attention_backend();
  if (backend == AttentionBackend::kVarlenFlash) return false;
  const bool auto_flash = backend == AttentionBackend::kAuto && layout != Layout::kPadded &&
                          device.is_cuda() && amp != AmpMode::kOff;
  return !auto_flash;
}

bool UsesTokenBudget(const batching::PlannerOptions &plan) {
  switch (plan.sampler()) {
    case Sampler::kBucketed:
    case Sampler::kTokenBudget:
      return true;
    case Sampler::kPacked:
      return plan.packed_layout() == Layout::kVarlen;
    case Sampler::kRandom:
    case Sampler::kSortedMegabatch:
      return false;
  }
  return false;
}

absl::StatusOr<cuda::MemoryModel> Fit(const std::vector<cuda::MemorySample> &samples,
                                      bool quadratic) {
  absl::StatusOr<cuda::MemoryModel> fit = cuda::MemoryModel::Fit(samples, quadratic);
  if (!fit.ok()) {
    return absl::InternalError(absl::StrCat("memory probe: cannot fit the memory model to ",
                                            samples.size(), " probes: ", fit.status().message()));
  }
  return fit;
}

}  // namespace

std::string MemoryPlan::Summary() const {
  const std::string choice = max_tokens > 0 ? absl::StrCat("max_tokens ", max_tokens)
                                            : absl::StrCat("batch_size ", batch_size);
  return absl::StrFormat(
      "memory budget %s (target %s): %s for rows of up to %d tokens, predicted "
      "peak %s; fit: "
      "%s fixed + %.0f B/token + %.3f B/token/length from %d probe steps",
      cuda::FormatBytes(budget_bytes), cuda::FormatBytes(target_bytes), choice, row_len,
      cuda::FormatBytes(predicted_peak_bytes),
      cuda::FormatBytes(static_cast<int64_t>(model.fixed_bytes())), model.per_token_bytes(),
      model.per_token_seq_bytes(), samples.size());
}

absl::StatusOr<MemoryPlan> PlanForMemoryBudget(EncoderClassifier &model,
                                               const batching::PlannerOptions &plan,
                                               const MemoryPlanOptions &options,
                                               const c10::Device &device) {
  if (options.budget_bytes <= 0) {
    return absl::InvalidArgumentError("memory budget: must be > 0 bytes");
  }
  if (!(options.safety_margin >= 0 && options.safety_margin < 0.5)) {
    return absl::InvalidArgumentError("memory budget: safety_margin must be in [0, 0.5)");
  }
  MemoryPlan out;
  out.plan = plan;
  out.budget_bytes = options.budget_bytes;
  out.target_bytes =
      static_cast<int64_t>(std::floor(options.budget_bytes * (1 - options.safety_margin)));
  out.layout = plan.sampler() == Sampler::kPacked ? plan.packed_layout() : Layout::kPadded;
  out.row_len = plan.max_len();
  if (plan.pad_to() == batching::PadTo::kMultiple && plan.pad_multiple() > 1) {
    out.row_len =
        (out.row_len + plan.pad_multiple() - 1) / plan.pad_multiple() * plan.pad_multiple();
  }
  const int64_t len = out.row_len;
  if (len < 4 || len > model->config().max_positions()) {
    return absl::InvalidArgumentError(absl::StrCat("memory budget: max_len ", len,
                                                   " must be in [4, max_positions ",
                                                   model->config().max_positions(), "]"));
  }
  out.quadratic = StoresScores(model, out.layout, options.amp, device);

  cuda::MemoryMeter meter(device);
  const internal::RngState rng = internal::CaptureRng(device);
  const CheckpointPolicy previous_policy = model->checkpoint_policy();
  absl::Status status;
  try {
    model->to(device);
    model->train();
    model->set_checkpoint_policy(options.checkpoint);
    std::vector<at::Tensor> params = model->parameters();
    FusedAdamW opt(params, std::vector<bool>(params.size(), true), options.adamw);
    auto probe = [&](int64_t b, int64_t s) -> absl::Status {
      absl::StatusOr<cuda::MemorySample> sample =
          Probe(model, opt, meter, out.layout, b, s, options.amp, device);
      if (!sample.ok()) return sample.status();
      out.samples.push_back(*sample);
      return absl::OkStatus();
    };
    // Stage 1: small shapes that separate the per-token and per-token*length
    // terms.
    const std::pair<int64_t, int64_t> shapes[] = {{4, len / 4}, {2, len / 2}, {1, len}, {2, len}};
    for (const auto &[b, s] : shapes) {
      status.Update(probe(b, s));
      if (!status.ok()) break;
    }
    // Stage 2: one probe at about half the chosen size, so the fit is anchored
    // where it is used rather than extrapolated from tiny steps.
    if (status.ok()) {
      absl::StatusOr<cuda::MemoryModel> rough = Fit(out.samples, out.quadratic);
      if (!rough.ok()) {
        status = rough.status();
      } else {
        const int64_t rows = cuda::MemoryBudget(*rough, out.target_bytes).MaxBatch(len);
        if (rows >= 8) status.Update(probe(rows / 2, len));
      }
    }
    opt.ZeroGrad();
    meter.EmptyCache();
  } catch (const c10::Error &e) {
    status = absl::InternalError(
        absl::StrCat("memory probe on ", device.str(), ": ", e.what_without_backtrace()));
  }
  model->set_checkpoint_policy(previous_policy);
  internal::RestoreRng(rng, device);
  if (!status.ok()) return status;

  absl::StatusOr<cuda::MemoryModel> fit = Fit(out.samples, out.quadratic);
  if (!fit.ok()) return fit.status();
  out.model = *fit;
  const cuda::MemoryBudget budget(out.model, out.target_bytes);
  const int64_t rows = budget.MaxBatch(len);
  if (rows == 0) {
    const double one_row = out.model.Predict(1, len) / (1 - options.safety_margin);
    return absl::FailedPreconditionError(
        absl::StrFormat("memory budget %s is too small: one row of %d tokens needs at least %s "
                        "(fixed cost "
                        "%s for weights, gradients and optimizer state, plus that row's "
                        "activations and the "
                        "%.0f%% safety margin)",
                        cuda::FormatBytes(options.budget_bytes), len,
                        cuda::FormatBytes(static_cast<int64_t>(std::ceil(one_row))),
                        cuda::FormatBytes(static_cast<int64_t>(out.model.fixed_bytes())),
                        100 * options.safety_margin));
  }
  if (UsesTokenBudget(plan)) {
    out.max_tokens = budget.MaxTokens(len);
    out.plan.max_tokens(out.max_tokens);
    // A token budget charges the s^2 term at the longest row: its worst case.
    out.predicted_peak_bytes = static_cast<int64_t>(
        out.model.fixed_bytes() + out.model.per_token_bytes() * out.max_tokens +
        out.model.per_token_seq_bytes() * static_cast<double>(out.max_tokens) * len);
  } else if (plan.sampler() == Sampler::kPacked && plan.max_tokens() > 0) {
    out.max_tokens = rows * len;  // whole rows of the packed layout
    out.plan.max_tokens(out.max_tokens);
    out.predicted_peak_bytes = static_cast<int64_t>(out.model.Predict(rows, len));
  } else {
    out.batch_size = rows;
    out.plan.batch_size(rows);
    out.predicted_peak_bytes = static_cast<int64_t>(out.model.Predict(rows, len));
  }
  return out;
}

}  // namespace padless::models
