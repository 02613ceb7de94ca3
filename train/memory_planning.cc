// Probe steps, fit and choice for memory-aware batching (see
// memory_planning.h).
#include "padless/train/memory_planning.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "padless/cuda/memory/budget_ladder.h"
#include "padless/cuda/memory/memory_budget.h"
#include "padless/cuda/memory/memory_meter.h"
#include "padless/models/rng_state.h"
#include "padless/train/memory_probe.h"

namespace padless::train {
namespace {

using batching::Layout;
using batching::Placement;
using batching::Sampler;

// The peak of one training step of `batch` full rows of `len` tokens in `layout`; an
// out-of-memory step is reported as such (the ladder backs off from it).
absl::StatusOr<StepMemory> Probe(models::EncoderClassifier& model, FusedAdamW& opt,
                                 cuda::MemoryMeter& meter, Layout layout, int64_t batch,
                                 int64_t len, models::AmpMode amp, const c10::Device& device) {
  absl::StatusOr<batching::Batch> b =
      SyntheticTrainingBatch(layout, batch, len, model->config(), device);
  if (!b.ok()) return b.status();
  return MeasureTrainingStep(model, opt, *b, amp, /*lr=*/0.0, meter, device);
}

// Dense attention (padded and packed rows, and the per-sequence reference path)
// materialises the s x s scores; only the flash and memory-efficient kernels on CUDA keep memory
// linear in the sequence length. ModernBERT's sliding windows have no memory-efficient varlen
// kernel: without flash its varlen rows take the grouped path (EncoderClassifierImpl::
// ResolveBackend), whose window masks are s x s.
bool StoresScores(const models::EncoderClassifier& model, Layout layout, models::AmpMode amp,
                  const c10::Device& device) {
  const models::AttentionBackend backend = model->runtime().attention;
  const bool windows = model->config().modernbert();
  if (backend == models::AttentionBackend::kVarlenEfficient) return windows;
  if (backend == models::AttentionBackend::kVarlenFlash ||
      backend == models::AttentionBackend::kVarlenCudnn ||
      backend == models::AttentionBackend::kVarlenFa3)
    return false;
  if (backend != models::AttentionBackend::kAuto || !device.is_cuda()) return true;
  // Auto on a GPU: flash for packed and varlen rows under autocast, memory-efficient attention
  // (BERT) or the grouped path (ModernBERT) for varlen rows without it.
  if (layout == Layout::kVarlen) return amp == models::AmpMode::kOff && windows;
  return !(layout != Layout::kPadded && amp != models::AmpMode::kOff);
}

bool UsesTokenBudget(const batching::PlannerOptions& plan) {
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

absl::StatusOr<cuda::MemoryModel> Fit(const std::vector<cuda::MemorySample>& samples,
                                      bool quadratic) {
  absl::StatusOr<cuda::MemoryModel> fit = cuda::MemoryModel::Fit(samples, quadratic);
  if (!fit.ok()) {
    return absl::InternalError(absl::StrCat("memory probe: cannot fit the memory model to ",
                                            samples.size(), " probes: ", fit.status().message()));
  }
  return fit;
}

}  // namespace

MemoryPlanOptions MemoryPlanOptions::From(const TrainConfig& config) {
  MemoryPlanOptions o;
  o.budget_bytes = config.memory_budget_bytes();
  o.safety_margin = config.memory_safety_margin();
  o.amp = config.amp();
  o.adamw.weight_decay = config.weight_decay();
  return o;
}

std::string MemoryPlan::Summary() const {
  const std::string choice = max_tokens > 0 ? absl::StrCat("max_tokens ", max_tokens)
                                            : absl::StrCat("batch_size ", batch_size);
  return absl::StrFormat(
      "memory budget %s (target %s): %s for rows of up to %d tokens, measured "
      "peak %s; fit: "
      "%s fixed + %.0f B/token + %.3f B/token/length from %d probe steps",
      cuda::FormatBytes(budget_bytes), cuda::FormatBytes(target_bytes), choice, row_len,
      cuda::FormatBytes(measured_peak_bytes),
      cuda::FormatBytes(static_cast<int64_t>(model.fixed_bytes())), model.per_token_bytes(),
      model.per_token_seq_bytes(), samples.size());
}

namespace {

// The plan's fixed parts (budget, target, layout, row length, quadratic term), checked.
absl::StatusOr<MemoryPlan> StartPlan(const models::EncoderClassifier& model,
                                     const batching::PlannerOptions& plan,
                                     const MemoryPlanOptions& options, const c10::Device& device) {
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
  if (len < 4 || len > model->config().max_sequence_length()) {
    return absl::InvalidArgumentError(absl::StrCat("memory budget: max_len ", len,
                                                   " must be in [4, the model's longest sequence ",
                                                   model->config().max_sequence_length(), "]"));
  }
  out.quadratic = StoresScores(model, out.layout, options.amp, device);
  return out;
}

// Measures a step of b x s and records it for the fit; out of memory is reported in the step.
using ProbeFn = std::function<absl::StatusOr<cuda::LadderStep>(int64_t b, int64_t s)>;

// Steps at full rows: the largest that fits the target, the one before it, and the smallest that
// does not.
struct FullRowSteps {
  std::optional<cuda::LadderStep> fits, previous, over;
  // A step that ran out of memory before any full row was measured to fit: "b x s".
  std::string out_of_memory;
};

// Stage 1: small shapes that separate the terms of the fit, then one and two full rows. The two
// shorter shapes have different b*s (len/2, len) and b*s^2, so that with the one-row step they
// determine all three terms even when two full rows do not fit (a budget that holds one long
// document, issue 45). A step that does not fit ends the stage: nothing larger is tried (on a GPU
// capped at the budget, it would only run out of memory).
absl::Status ProbeSmallShapes(const ProbeFn& probe, const MemoryPlan& out, FullRowSteps& steps) {
  const int64_t len = out.row_len;
  const std::pair<int64_t, int64_t> shapes[] = {{2, len / 4}, {2, len / 2}, {1, len}, {2, len}};
  for (const auto& [b, s] : shapes) {
    absl::StatusOr<cuda::LadderStep> m = probe(b, s);
    if (!m.ok()) return m.status();
    if (m->oom && s != len) {
      steps.out_of_memory = absl::StrCat(b, " x ", s);
      return absl::OkStatus();
    }
    if (s != len) continue;
    if (m->oom || m->peak_bytes > out.target_bytes) {
      steps.over = *m;
      if (m->oom && !steps.fits) steps.out_of_memory = absl::StrCat(b, " x ", s);
      return absl::OkStatus();
    }
    steps.previous = steps.fits;
    steps.fits = *m;
  }
  return absl::OkStatus();
}

// Stage 2: a ladder of measured steps at full rows (cuda::ClimbToTarget), so the choice rests on a
// measurement. Its first rung is a quarter of what the small steps' fit allows.
absl::Status ClimbLadder(const ProbeFn& probe, const MemoryPlan& out, FullRowSteps& steps) {
  int64_t rough_rows = 0;
  absl::StatusOr<cuda::MemoryModel> rough = Fit(out.samples, out.quadratic);
  if (rough.ok()) rough_rows = cuda::MemoryBudget(*rough, out.target_bytes).MaxBatch(out.row_len);
  if (!steps.fits) return absl::OkStatus();
  absl::StatusOr<cuda::LadderResult> climb =
      cuda::ClimbToTarget([&](int64_t rows) { return probe(rows, out.row_len); }, out.target_bytes,
                          *steps.fits, steps.previous, steps.over, rough_rows / 4);
  if (!climb.ok()) return climb.status();
  steps.fits = climb->best;
  return absl::OkStatus();
}

// Both stages, on `model` itself; the meter's peak is reset afterwards.
absl::StatusOr<FullRowSteps> ProbeSteps(models::EncoderClassifier& model,
                                        const MemoryPlanOptions& options, const c10::Device& device,
                                        MemoryPlan& out) {
  cuda::MemoryMeter meter(device);
  FullRowSteps steps;
  absl::Status status;
  try {
    model->to(device);
    model->train();
    std::vector<at::Tensor> params = model->parameters();
    FusedAdamW opt(params, std::vector<bool>(params.size(), true), options.adamw);
    const ProbeFn probe = [&](int64_t b, int64_t s) -> absl::StatusOr<cuda::LadderStep> {
      absl::StatusOr<StepMemory> m =
          Probe(model, opt, meter, out.layout, b, s, options.amp, device);
      if (!m.ok()) return m.status();
      if (!m->oom) out.samples.push_back({b, s, m->peak_allocated_bytes});
      // The budget bounds reserved memory: a rung fits when its reserve (allocations plus the
      // allocator's rounding) does, not only its allocations.
      return cuda::LadderStep{b, std::max(m->peak_allocated_bytes, m->peak_reserved_bytes), m->oom};
    };
    status = ProbeSmallShapes(probe, out, steps);
    if (status.ok()) status = ClimbLadder(probe, out, steps);
    opt.ZeroGrad();
    meter.EmptyCache();
    // The trainer (and any other caller) reports the peak of its own steps, not of the probes.
    meter.ResetPeak();
  } catch (const c10::Error& e) {
    status = absl::InternalError(
        absl::StrCat("memory probe on ", device.str(), ": ", e.what_without_backtrace()));
  }
  if (!status.ok()) return status;
  return steps;
}

// The error of a budget that cannot hold one row of row_len tokens (a long document, at 8192
// tokens, may need more than a small GPU holds): what that row needs, from its measured step and
// the fit of all steps, or, where a step ran out of memory under the capped allocator, that it
// needs more than the budget, with the shorter steps' estimate when they determine one.
absl::Status BudgetTooSmall(const MemoryPlan& out, const MemoryPlanOptions& options,
                            const FullRowSteps& steps) {
  const absl::StatusOr<cuda::MemoryModel> fit = cuda::MemoryModel::Fit(out.samples, out.quadratic);
  double one_row = 0;  // the peak of a step of one row, as measured or fitted
  if (steps.over && !steps.over->oom && steps.over->rows == 1) one_row = steps.over->peak_bytes;
  if (fit.ok()) one_row = std::max(one_row, fit->Predict(1, out.row_len));
  const std::string with_margin =
      cuda::FormatBytes(static_cast<int64_t>(std::ceil(one_row / (1 - options.safety_margin))));
  if (!steps.out_of_memory.empty()) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "memory budget %s is too small: one row of %d tokens needs more than that (a training "
        "step of %s tokens ran out of memory under it)%s",
        cuda::FormatBytes(options.budget_bytes), out.row_len, steps.out_of_memory,
        fit.ok() ? absl::StrCat("; the probe steps' fit puts one row at about ", with_margin,
                                " with the safety margin")
                 : ""));
  }
  return absl::FailedPreconditionError(absl::StrFormat(
      "memory budget %s is too small: one row of %d tokens needs at least %s (fixed cost %s for "
      "weights, gradients and optimizer state, plus that row's activations and the %.0f%% "
      "safety margin)",
      cuda::FormatBytes(options.budget_bytes), out.row_len, with_margin,
      cuda::FormatBytes(static_cast<int64_t>(fit.ok() ? fit->fixed_bytes() : 0)),
      100 * options.safety_margin));
}

}  // namespace

absl::StatusOr<MemoryPlan> PlanForMemoryBudget(models::EncoderClassifier& model,
                                               const batching::PlannerOptions& plan,
                                               const MemoryPlanOptions& options,
                                               const c10::Device& device) {
  absl::StatusOr<MemoryPlan> out = StartPlan(model, plan, options, device);
  if (!out.ok()) return out.status();
  const models::internal::RngState rng = models::internal::CaptureRng(device);
  absl::StatusOr<FullRowSteps> steps = ProbeSteps(model, options, device, *out);
  models::internal::RestoreRng(rng, device);
  if (!steps.ok()) return steps.status();
  if (!steps->fits) return BudgetTooSmall(*out, options, *steps);

  absl::StatusOr<cuda::MemoryModel> fit = Fit(out->samples, out->quadratic);
  if (!fit.ok()) return fit.status();
  out->model = *fit;
  const int64_t rows = steps->fits->rows;
  out->measured_peak_bytes = steps->fits->peak_bytes;  // measured: the largest probe that fit
  if (UsesTokenBudget(plan) || (plan.sampler() == Sampler::kPacked && plan.max_tokens() > 0)) {
    // A token budget of whole rows of `len`: its worst batch is the measured one (shorter rows
    // cost no more per token).
    out->max_tokens = rows * out->row_len;
    out->plan.max_tokens(out->max_tokens);
  } else {
    out->batch_size = rows;
    out->plan.batch_size(rows);
  }
  return out;
}

}  // namespace padless::train
