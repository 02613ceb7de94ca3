#include "planner_options_validation.h"

#include "absl/strings/str_cat.h"

namespace padless::batching::internal {
namespace {

// Each field on its own.
absl::Status ValidateRanges(const PlannerOptions& o) {
  // [CLS], one content token and [SEP].
  if (o.max_len() < 3)
    return InvalidPlannerOption("max_len", absl::StrCat("must be >= 3, got ", o.max_len()));
  if (!(o.head_fraction() >= 0 && o.head_fraction() <= 1)) {
    return InvalidPlannerOption("head_fraction",
                                absl::StrCat("must be in [0, 1], got ", o.head_fraction()));
  }
  if (o.window_stride() < 0 || o.window_stride() >= o.max_len() - 2) {
    return InvalidPlannerOption(
        "window_stride", absl::StrCat("must be in [0, max_len - 2), got ", o.window_stride()));
  }
  if (o.batch_size() < 1) {
    return InvalidPlannerOption("batch_size", absl::StrCat("must be >= 1, got ", o.batch_size()));
  }
  if (o.max_tokens() < 0) {
    return InvalidPlannerOption("max_tokens", absl::StrCat("must be >= 0, got ", o.max_tokens()));
  }
  if (o.max_sentences() < 0) {
    return InvalidPlannerOption("max_sentences",
                                absl::StrCat("must be >= 0, got ", o.max_sentences()));
  }
  if (o.batch_size_multiple() < 1) {
    return InvalidPlannerOption("batch_size_multiple",
                                absl::StrCat("must be >= 1, got ", o.batch_size_multiple()));
  }
  if (o.megabatch_factor() < 1) {
    return InvalidPlannerOption("megabatch_factor",
                                absl::StrCat("must be >= 1, got ", o.megabatch_factor()));
  }
  if (o.pad_multiple() < 1) {
    return InvalidPlannerOption("pad_multiple",
                                absl::StrCat("must be >= 1, got ", o.pad_multiple()));
  }
  if (o.num_buckets() < 1) {
    return InvalidPlannerOption("num_buckets", absl::StrCat("must be >= 1, got ", o.num_buckets()));
  }
  if (o.max_sequences_per_row() < 0) {
    return InvalidPlannerOption("max_sequences_per_row",
                                absl::StrCat("must be >= 0, got ", o.max_sequences_per_row()));
  }
  if (o.pack_window() < 0) {
    return InvalidPlannerOption("pack_window", absl::StrCat("must be >= 0, got ", o.pack_window()));
  }
  return absl::OkStatus();
}

// Fields that must agree with the sampler and with each other.
absl::Status ValidateCombinations(const PlannerOptions& o) {
  if (o.pad_to() == PadTo::kBucketBoundary && o.sampler() != Sampler::kBucketed) {
    return InvalidPlannerOption("pad_to", "kBucketBoundary needs the kBucketed sampler");
  }
  const bool needs_budget =
      o.sampler() == Sampler::kTokenBudget ||
      (o.sampler() == Sampler::kPacked && o.packed_layout() == Layout::kVarlen);
  if (needs_budget && o.max_tokens() == 0) {
    return InvalidPlannerOption("max_tokens", "this sampler needs a token budget (> 0)");
  }
  if (o.max_tokens() > 0 && o.max_tokens() < o.max_len() && o.sampler() != Sampler::kRandom &&
      o.sampler() != Sampler::kSortedMegabatch) {
    return InvalidPlannerOption("max_tokens",
                                absl::StrCat("a budget of ", o.max_tokens(),
                                             " cannot hold one sequence of max_len ", o.max_len()));
  }
  if (o.sampler() == Sampler::kPacked && o.packed_layout() == Layout::kPadded) {
    return InvalidPlannerOption("packed_layout", "must be kPacked or kVarlen");
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status InvalidPlannerOption(absl::string_view field, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat("PlannerOptions.", field, ": ", why));
}

absl::Status ValidatePlannerOptions(const PlannerOptions& o) {
  if (absl::Status s = ValidateRanges(o); !s.ok()) return s;
  return ValidateCombinations(o);
}

}  // namespace padless::batching::internal
