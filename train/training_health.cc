#include "training_health.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "padless/models/fp8_scaling.h"
#include "padless/train/training_defaults.h"

namespace padless::train::internal {

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

// Reads only as many outcomes as needed to know that the next step may run, i.e. while the unread
// steps, were they all non-finite, could complete a run at the limit. So the common case (no
// non-finite steps, limit 50) waits for no step, and the run still stops right at the limit.
absl::Status TrainingHealth::ReadOutcomes(bool all, TrainResult& result) {
  const int64_t limit = config_.max_nonfinite_steps();
  while (!unread_.empty() &&
         (all || (limit > 0 && nonfinite_run_ + static_cast<int64_t>(unread_.size()) >= limit))) {
    const auto [step, outcome] = unread_.front();
    unread_.pop_front();
    if (!outcome.skipped()) {
      nonfinite_run_ = 0;
      continue;
    }
    ++result.skipped_steps;
    if (nonfinite_run_++ == 0) nonfinite_first_ = step - 1;
    if (limit > 0 && nonfinite_run_ >= limit) return Diverged(step, outcome);
  }
  return absl::OkStatus();
}

absl::Status TrainingHealth::Diverged(int64_t step, const StepOutcome& outcome) const {
  return absl::AbortedError(
      absl::StrCat("training diverged: ", nonfinite_run_, " optimizer steps in a row (steps ",
                   nonfinite_first_ + 1, " to ", step, ") had a non-finite ",
                   outcome.loss_finite() ? "gradient" : "loss",
                   " and were skipped; the limit is max_nonfinite_steps (--max-nonfinite-steps) = ",
                   config_.max_nonfinite_steps(), ". Lower the learning rate or check the data"));
}

// The window's mean loss is already on the host, read by the log's one sync per window.
void TrainingHealth::CheckChanceLevel(int64_t global_step, const RunSchedule& schedule,
                                      const std::vector<int64_t>& labels, TrainingLog& log,
                                      TrainResult& result) {
  // Not before twice the warmup: a model is not judged while its learning rate is still rising. A
  // run shorter than that is checked at its end (few steps are a cause of it too).
  const int64_t at = std::min(std::max(config_.chance_check_step(), 2 * schedule.warmup_steps),
                              schedule.total_steps);
  if (chance_checked_ || config_.chance_check_step() <= 0 || global_step < at) return;
  chance_checked_ = true;
  const double chance = ChanceLevelLoss(labels);
  if (chance <= 0 || log.final_loss() < kChanceLevelShare * chance) return;
  result.loss_at_chance = true;
  if (!config_.progress()) return;
  log.EndLine();
  absl::FPrintF(stderr,
                "warning: after %d steps the training loss %.4f is still at chance level (%.4f, "
                "the loss of predicting the label frequencies): the model is not learning yet. "
                "If it stays there, try a --lr below the current %g, more steps per epoch "
                "(smaller --max-tokens; %d steps in all) or more epochs\n",
                global_step, log.final_loss(), chance, config_.lr(), schedule.total_steps);
}

// The FP8 GEMMs are in the fused layers, which only some runs use; a run that asked for FP8 and
// trained in bf16 is told so.
void TrainingHealth::CheckFp8Ran(const models::EncoderClassifier& model, int64_t global_step,
                                 TrainingLog& log, TrainResult& result) {
  const std::shared_ptr<models::Fp8Scaling>& fp8 = model->runtime().fp8;
  if (fp8_checked_ || !fp8 || global_step < 1) return;
  fp8_checked_ = true;
  result.fp8_gemms = fp8->GemmsInHistory();
  result.fp8_gemms_total = fp8->gemms();
  if (result.fp8_gemms == result.fp8_gemms_total || !config_.progress()) return;
  log.EndLine();
  absl::FPrintF(
      stderr,
      "warning: --amp fp8: %d of the encoder's %d GEMMs ran in FP8, the rest in bf16. "
      "FP8 runs in the fused encoder layers: post-LN models on varlen batches (--batching "
      "packed or varlen on a GPU) with --layers fused, not in the layers the attn/ffn "
      "checkpoint scopes recompute, and for weights whose sides are multiples of 16\n",
      result.fp8_gemms, result.fp8_gemms_total);
}

}  // namespace padless::train::internal
