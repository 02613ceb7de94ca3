// Synthetic batches and measured training steps (see memory_probe.h).
#include "padless/train/memory_probe.h"

#include <ATen/ATen.h>
#include <torch/cuda.h>

#include <random>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "padless/batching/collator.h"
#include "padless/corpus/tokenized_corpus.h"
#include "padless/train/grad_scaler.h"
#include "padless/train/train_step.h"
#include "padless/tokenize/special_tokens.h"

namespace padless::train {

absl::StatusOr<batching::Batch> SyntheticTrainingBatch(batching::Layout layout, int64_t batch,
                                                       int64_t len, const models::EncoderConfig& config,
                                                       const c10::Device& device) {
  if (batch < 1 || len < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("synthetic batch: ", batch, " x ", len, " must be at least 1 x 1"));
  }
  std::mt19937_64 rng(static_cast<uint64_t>(batch * 1000003 + len));
  std::uniform_int_distribution<int32_t> token(5, static_cast<int32_t>(config.vocab_size() - 1));
  std::uniform_int_distribution<int64_t> label(0, config.num_labels() - 1);
  corpus::TokenizedCorpus corpus;
  corpus.Reserve(static_cast<size_t>(batch), static_cast<size_t>(batch * len));
  std::vector<int32_t> ids(static_cast<size_t>(len));
  batching::BatchSpec spec;
  spec.layout = layout;
  spec.length = layout == batching::Layout::kVarlen ? batch * len : len;
  if (layout == batching::Layout::kVarlen) spec.rows.emplace_back();
  for (int64_t i = 0; i < batch; ++i) {
    for (int32_t& t : ids) t = token(rng);
    corpus.Add(ids, {}, label(rng));
    const batching::Placement piece{i, 0, len, 0};
    if (layout == batching::Layout::kVarlen) {
      spec.rows[0].push_back(piece);
    } else {
      spec.rows.push_back({piece});
    }
  }
  // Every row of a synthetic batch is full length, so no position is padded; the probe has no
  // tokenizer to ask, and any valid id would do.
  batching::CollatorOptions collator_options;
  collator_options.pad_id = tokenize::kPadId;
  batching::Collator collator(collator_options);
  absl::StatusOr<batching::Batch> b = collator.Collate(corpus, spec);
  if (!b.ok()) return b.status();
  try {
    return b->To(device, /*non_blocking=*/false);
  } catch (const c10::Error& e) {
    return absl::InternalError(absl::StrCat("synthetic batch of ", batch, " x ", len, " to ",
                                            device.str(), ": ", e.what_without_backtrace()));
  }
}

namespace {

// One training step as the trainer runs it (TrainStep, with the trainer's default clipping and,
// for fp16, its loss scaling), then a device sync so that the meter's peak includes the whole step.
// An out-of-memory error propagates as the exception.
absl::Status RunStep(models::EncoderClassifier& model, FusedAdamW& opt, const batching::Batch& batch,
                     models::AmpMode amp, double lr, const c10::Device& device) {
  GradScalerOptions scaler_options;
  scaler_options.enabled = amp == models::AmpMode::kFp16;
  GradScaler scaler(scaler_options);
  TrainStepOptions options;
  options.amp = amp;
  TrainStep step(model, model->parameters(), opt, scaler, device, std::move(options));
  absl::StatusOr<StepResult> r = step.Run(/*step=*/0, lr, {StepBatch{nullptr, batch}});
  if (!r.ok()) return r.status();
  if (device.is_cuda()) torch::cuda::synchronize();
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<StepMemory> MeasureTrainingStep(models::EncoderClassifier& model, FusedAdamW& opt,
                                               const batching::Batch& batch, models::AmpMode amp, double lr,
                                               cuda::MemoryMeter& meter,
                                               const c10::Device& device) {
  StepMemory out;
  try {
    meter.EmptyCache();
    if (absl::Status s = RunStep(model, opt, batch, amp, lr, device); !s.ok()) return s;
    meter.ResetPeak();
    out.baseline_bytes = meter.Snapshot().allocated_bytes;
    if (absl::Status s = RunStep(model, opt, batch, amp, lr, device); !s.ok()) return s;
    const cuda::MemorySnapshot s = meter.Snapshot();
    out.peak_allocated_bytes = s.peak_allocated_bytes;
    out.peak_reserved_bytes = s.peak_reserved_bytes;
  } catch (const c10::OutOfMemoryError&) {
    opt.ZeroGrad();
    meter.EmptyCache();
    StepMemory oom;
    oom.oom = true;
    return oom;
  } catch (const c10::Error& e) {
    opt.ZeroGrad();
    return absl::InternalError(absl::StrCat("training step of ", batch.num_sequences,
                                            " sequences on ", device.str(), ": ",
                                            e.what_without_backtrace()));
  }
  return out;
}

}  // namespace padless::train
