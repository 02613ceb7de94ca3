// The profile-memory sweep and its budget check (see memory_sweep.h).
#include "padless/train/memory_sweep.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "padless/batching/batch.h"
#include "padless/batching/planner.h"
#include "padless/models/encoder.h"
#include "padless/models/model_runtime.h"
#include "padless/train/memory_planning.h"
#include "padless/train/memory_probe.h"
#include "padless/train/optimizer.h"

namespace padless::train {
namespace {

using cuda::MemoryProfilePoint;

// The encoder of the sweep: position embeddings for its longest length.
models::EncoderConfig SweepModelConfig(const MemorySweepOptions& options) {
  models::EncoderConfig config = options.config;
  int64_t longest = 0;
  for (int64_t l : options.lens) longest = std::max(longest, l);
  return config.max_positions(std::max(config.max_positions(), longest));
}

// One model and optimizer shared by every measurement (the weights and the AdamW state are the
// same for all configurations; only the step's activations differ).
class Profiler {
 public:
  Profiler(const models::EncoderConfig& config, const c10::Device& device, cuda::MemoryMeter meter,
           bool quiet)
      : config_(config), device_(device), meter_(meter), quiet_(quiet), model_(config) {
    model_->to(device_);
    model_->train();
    std::vector<at::Tensor> params = model_->parameters();
    for (const at::Tensor& p : params) gradient_bytes_ += p.numel() * p.element_size();
    opt_ = std::make_unique<FusedAdamW>(params, std::vector<bool>(params.size(), true),
                                        AdamWOptions{});
  }

  // Peak memory of one step at (b, len) under `sc`, after a warm-up step of the same shape.
  absl::StatusOr<MemoryProfilePoint> Measure(const MemorySweepConfig& sc, int64_t b, int64_t len) {
    models::ModelRuntime runtime;
    runtime.checkpoint = sc.policy;
    model_->set_runtime(runtime);
    MemoryProfilePoint point{sc.Name(), b, len};
    point.gradient_bytes = gradient_bytes_;
    absl::StatusOr<batching::Batch> batch =
        SyntheticTrainingBatch(sc.layout(), b, len, config_, device_);
    if (!batch.ok()) return batch.status();
    absl::StatusOr<StepMemory> m =
        MeasureTrainingStep(model_, *opt_, *batch, sc.amp, /*lr=*/0.0, meter_, device_);
    if (!m.ok()) return m.status();
    point.oom = m->oom;
    point.baseline_bytes = m->baseline_bytes;
    point.peak_allocated_bytes = m->peak_allocated_bytes;
    point.peak_reserved_bytes = m->peak_reserved_bytes;
    if (!quiet_) {
      absl::FPrintF(
          stderr, "%-28s b=%-4d s=%-5d %s\n", point.config, b, len,
          point.oom ? "out of memory"
                    : absl::StrCat("peak ", cuda::FormatBytes(point.peak_allocated_bytes),
                                   ", reserved ", cuda::FormatBytes(point.peak_reserved_bytes)));
    }
    return point;
  }

 private:
  models::EncoderConfig config_;
  c10::Device device_;
  cuda::MemoryMeter meter_;
  bool quiet_;
  models::EncoderClassifier model_;
  int64_t gradient_bytes_ = 0;
  std::unique_ptr<FusedAdamW> opt_;
};

// Every configuration x batch x length within max_tokens, measured.
absl::StatusOr<std::vector<MemoryProfilePoint>> MeasureEveryShape(const MemorySweepOptions& sweep,
                                                                  Profiler& profiler) {
  std::vector<MemoryProfilePoint> points;
  for (models::AmpMode amp : sweep.amps) {
    for (const models::CheckpointPolicy& policy : sweep.policies) {
      for (bool varlen : sweep.varlens) {
        for (int64_t b : sweep.batches) {
          for (int64_t len : sweep.lens) {
            if (b * len > sweep.max_tokens) continue;
            auto point = profiler.Measure({amp, policy, varlen}, b, len);
            if (!point.ok()) return point.status();
            points.push_back(*point);
          }
        }
      }
    }
  }
  return points;
}

// The planner options a budget check plans: varlen packs sequences under a token budget; padded
// batches have a batch size.
batching::PlannerOptions BudgetPlannerOptions(bool varlen, int64_t len) {
  return varlen ? batching::PlannerOptions()
                      .sampler(batching::Sampler::kPacked)
                      .packed_layout(batching::Layout::kVarlen)
                      .max_tokens(len)
                      .max_len(len)
                : batching::PlannerOptions()
                      .sampler(batching::Sampler::kRandom)
                      .batch_size(1)
                      .max_len(len);
}

// One configuration and length of CheckMemoryBudgetPlans: plan on `model`, then measure the
// planned batch with a fresh optimizer.
absl::StatusOr<BudgetCheck> CheckOnePlan(models::EncoderClassifier& model,
                                         const models::EncoderConfig& config,
                                         const MemorySweepConfig& sc, int64_t len, int64_t budget,
                                         const c10::Device& device, cuda::MemoryMeter& meter,
                                         bool quiet) {
  // The planner probes the model as its runtime is set: this sweep point's policy.
  models::ModelRuntime runtime;
  runtime.checkpoint = sc.policy;
  model->set_runtime(runtime);
  MemoryPlanOptions mo;
  mo.budget_bytes = budget;
  mo.amp = sc.amp;
  absl::StatusOr<MemoryPlan> mp =
      PlanForMemoryBudget(model, BudgetPlannerOptions(sc.varlen, len), mo, device);
  if (!mp.ok()) return mp.status();
  if (!quiet) absl::FPrintF(stderr, "%s: %s\n", sc.Name(), mp->Summary());
  const int64_t rows = sc.varlen ? mp->max_tokens / len : mp->batch_size;
  std::vector<at::Tensor> params = model->parameters();
  FusedAdamW opt(params, std::vector<bool>(params.size(), true), AdamWOptions{});
  absl::StatusOr<batching::Batch> batch =
      SyntheticTrainingBatch(sc.layout(), rows, len, config, device);
  if (!batch.ok()) return batch.status();
  absl::StatusOr<StepMemory> m =
      MeasureTrainingStep(model, opt, *batch, sc.amp, /*lr=*/0.0, meter, device);
  if (!m.ok()) return m.status();
  BudgetCheck check;
  check.config = sc.Name();
  check.seq_len = len;
  check.rows = rows;
  check.probed_peak_bytes = mp->measured_peak_bytes;
  check.oom = m->oom;
  check.peak_allocated_bytes = m->peak_allocated_bytes;
  check.used = static_cast<double>(m->peak_allocated_bytes) / budget;
  check.over_budget = m->oom || m->peak_allocated_bytes > budget;
  check.ok = !check.over_budget && check.used >= kMinBudgetUse;
  return check;
}

// The check of a length no row of which fits, after a shorter one planned: the planner's refusal,
// reported rather than ending the checks.
BudgetCheck NoRowFits(const MemorySweepConfig& sc, int64_t len, const absl::Status& refusal) {
  BudgetCheck check;
  check.config = sc.Name();
  check.seq_len = len;
  check.no_row_fits = true;
  check.ok = true;
  check.why = std::string(refusal.message());
  return check;
}

absl::StatusOr<int64_t> CheckEveryPlan(const MemorySweepOptions& options, int64_t budget_bytes,
                                       const c10::Device& device, cuda::MemoryMeter& meter,
                                       const std::function<void(const BudgetCheck&)>& on_check) {
  const models::EncoderConfig config = SweepModelConfig(options);
  models::EncoderClassifier model(config);
  std::vector<int64_t> lens = options.lens;
  std::sort(lens.begin(), lens.end());
  int64_t failures = 0;
  for (models::AmpMode amp : options.amps) {
    for (const models::CheckpointPolicy& policy : options.policies) {
      for (bool varlen : options.varlens) {
        const MemorySweepConfig sc{amp, policy, varlen};
        bool planned = false;  // a shorter length of this configuration had a plan
        for (int64_t len : lens) {
          absl::StatusOr<BudgetCheck> check =
              CheckOnePlan(model, config, sc, len, budget_bytes, device, meter, options.quiet);
          if (!check.ok() && planned &&
              check.status().code() == absl::StatusCode::kFailedPrecondition) {
            check = NoRowFits(sc, len, check.status());
          }
          if (!check.ok()) return check.status();
          planned = true;
          failures += check->ok ? 0 : 1;
          if (on_check) on_check(*check);
        }
      }
    }
  }
  return failures;
}

}  // namespace

std::string MemorySweepConfig::Name() const {
  return absl::StrCat(amp == models::AmpMode::kOff ? "fp32" : models::AmpModeName(amp),
                      "/ckpt=", policy.ToString(), "/", varlen ? "varlen" : "padded");
}

batching::Layout MemorySweepConfig::layout() const {
  return varlen ? batching::Layout::kVarlen : batching::Layout::kPadded;
}

absl::StatusOr<std::vector<MemoryProfilePoint>> MeasureMemorySweep(
    const MemorySweepOptions& options, const c10::Device& device, cuda::MemoryMeter& meter) {
  try {
    // The profiler (its model and optimizer state) lives for this call only: a budget check after
    // the sweep would otherwise be charged for it in every plan.
    Profiler profiler(SweepModelConfig(options), device, meter, options.quiet);
    return MeasureEveryShape(options, profiler);
  } catch (const c10::Error& e) {
    return absl::InternalError(e.what_without_backtrace());
  }
}

absl::StatusOr<int64_t> CheckMemoryBudgetPlans(
    const MemorySweepOptions& options, int64_t budget_bytes, const c10::Device& device,
    cuda::MemoryMeter& meter, const std::function<void(const BudgetCheck&)>& on_check) {
  try {
    return CheckEveryPlan(options, budget_bytes, device, meter, on_check);
  } catch (const c10::Error& e) {
    return absl::InternalError(e.what_without_backtrace());
  }
}

}  // namespace padless::train
