// Training defaults: what `padless train` (and train::RunTrainJob) uses when the user does not
// say. One table of peak learning rate and warmup per model origin (a preset trained from scratch,
// or an imported pretrained encoder being fine-tuned), the default batch geometry of token-budget
// strategies, and when a training loss that stays at chance level is worth a warning.
//
//   absl::StatusOr<OptimizationDefaults> d = DefaultOptimization("base");  // from scratch
//   config.lr(d->lr).warmup_fraction(d->warmup_fraction);
//   DefaultOptimization(kPretrainedOrigin);  // fine-tuning an imported encoder
//
// Why these values (issue 13.4): the post-LN encoder trained from scratch needs a smaller peak
// learning rate the deeper it is; `base` (12 layers) stays at ln 2 on IMDB at 1e-4 and 2e-4 and
// learns at 5e-5 (H200, bf16: 87.6% dev accuracy). `tiny` (2 layers) learns well at 5e-4, the
// old single default. `small` (4 layers) lies between and was not measured: 1e-4, below the
// geometric middle (1.6e-4), leans to the side that learns. A pretrained encoder is fine-tuned in
// the usual BERT range (2e-5..5e-5) with a short warmup, so its features are not washed out in the
// first steps.
#ifndef PADLESS_TRAIN_TRAINING_DEFAULTS_H_
#define PADLESS_TRAIN_TRAINING_DEFAULTS_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace padless::train {

// The origin of the fine-tuned weights: an imported pretrained encoder (e.g. a Hugging Face
// directory given to --init-from), or a padless model directory trained earlier.
inline constexpr char kPretrainedOrigin[] = "pretrained";

struct OptimizationDefaults {
  absl::string_view origin;    // "tiny", "small", "base" (from scratch) or kPretrainedOrigin
  double lr = 0;               // peak AdamW learning rate
  double warmup_fraction = 0;  // share of the run's optimizer steps spent warming up
  absl::string_view basis;     // what the values rest on, for --help and logs
};

// Every entry: the presets trained from scratch (tiny, small, base, modernbert-base), then
// kPretrainedOrigin.
absl::Span<const OptimizationDefaults> OptimizationDefaultsTable();

// The entry of `origin` (a preset name or kPretrainedOrigin); InvalidArgument naming the known
// origins otherwise.
absl::StatusOr<OptimizationDefaults> DefaultOptimization(absl::string_view origin);

// ---- Batch geometry of token-budget strategies (packed, varlen, budgeted buckets)

// Sequences per batch the default token budget aims at (the --batch-size default).
inline constexpr int64_t kDefaultSequencesPerBatch = 32;
// The default budget never exceeds this (the old fixed default; it bounds memory on long texts).
inline constexpr int64_t kMaxDefaultTokensPerBatch = 16384;

// The token budget per batch when the user gives none: `sequences_per_batch` sequences of the
// corpus's `mean_length` tokens, so short texts get as many optimizer steps per epoch as a padded
// batch of that many sequences would give, instead of a few huge batches (5.4k questions of ~12
// tokens gave 4 steps per epoch at 16384 tokens). Raised to `longest` (a batch must hold the
// longest sequence) and capped at kMaxDefaultTokensPerBatch (or `longest`, if larger).
int64_t DefaultTokenBudget(int64_t sequences_per_batch, double mean_length, int64_t longest);

// ---- Run length

// Epochs when the user gives none: at least kMinDefaultEpochs, more when that gives fewer than
// kMinDefaultSteps optimizer steps (a small corpus: 800 reviews in batches of 32 gave 81 steps in
// 3 epochs, with the learning rate decayed before the tiny model left chance level; 6 epochs
// reached 76% instead of 60%), and at most kMaxDefaultEpochs. The best dev evaluation is what is
// saved, so the extra epochs cannot make the saved model worse on the dev set.
inline constexpr int64_t kMinDefaultEpochs = 3;
inline constexpr int64_t kMinDefaultSteps = 250;
inline constexpr int64_t kMaxDefaultEpochs = 20;
int64_t DefaultEpochs(int64_t steps_per_epoch);

// ---- Chance-level warning

// Optimizer steps after which a training loss still at chance level is warned about once.
inline constexpr int64_t kChanceLevelCheckStep = 200;
// "At chance level": the mean loss of a logging window is at least this share of the loss of
// predicting the training label frequencies (ln(num_labels) for balanced labels).
inline constexpr double kChanceLevelShare = 0.97;

}  // namespace padless::train

#endif  // PADLESS_TRAIN_TRAINING_DEFAULTS_H_
