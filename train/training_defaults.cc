// The training defaults table and the default token budget (see training_defaults.h).
#include "padless/train/training_defaults.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace padless::train {
namespace {

constexpr OptimizationDefaults kTable[] = {
    {"tiny", 5e-4, 0.06, "2 layers learn well at 5e-4"},
    {"small", 1e-4, 0.10, "4 layers: between tiny and base (not measured)"},
    {"base", 5e-5, 0.10,
     "post-LN 12 layers from scratch learn at 5e-5, stay at chance at 1e-4 and 2e-4"},
    {"modernbert-base", 5e-5, 0.10, "ModernBERT-base's 22 pre-LN layers: base's rate (not measured)"},
    {"pretrained" /* kPretrainedOrigin: a literal, for constant initialisation */, 3e-5, 0.06,
     "fine-tuning a pretrained encoder: BERT's 2e-5..5e-5"},
};

}  // namespace

absl::Span<const OptimizationDefaults> OptimizationDefaultsTable() { return kTable; }

absl::StatusOr<OptimizationDefaults> DefaultOptimization(absl::string_view origin) {
  for (const OptimizationDefaults& d : kTable) {
    if (d.origin == origin) return d;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "no training defaults for '", origin, "' (known: ",
      absl::StrJoin(
          kTable, ", ",
          [](std::string* out, const OptimizationDefaults& d) { absl::StrAppend(out, d.origin); }),
      ")"));
}

int64_t DefaultTokenBudget(int64_t sequences_per_batch, double mean_length, int64_t longest) {
  const int64_t wanted =
      static_cast<int64_t>(std::ceil(std::max<int64_t>(1, sequences_per_batch) * mean_length));
  return std::max(longest, std::min(wanted, kMaxDefaultTokensPerBatch));
}

int64_t DefaultEpochs(int64_t steps_per_epoch) {
  const int64_t for_steps = (kMinDefaultSteps + std::max<int64_t>(1, steps_per_epoch) - 1) /
                            std::max<int64_t>(1, steps_per_epoch);
  return std::clamp(for_steps, kMinDefaultEpochs, kMaxDefaultEpochs);
}

}  // namespace padless::train
