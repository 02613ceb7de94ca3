#include "padless/batching/planner.h"

#include <algorithm>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "epoch_builder.h"
#include "planner_options_validation.h"
#include "rank_dealing.h"

namespace padless::batching {

absl::StatusOr<std::vector<Placement>> Planner::Pieces(absl::Span<const int64_t> lengths) const {
  if (absl::Status s = internal::ValidatePlannerOptions(options_); !s.ok()) return s;
  std::vector<Placement> pieces;
  pieces.reserve(lengths.size());
  for (size_t i = 0; i < lengths.size(); ++i) {
    const int64_t len = lengths[i];
    if (len < 1) {
      return absl::InvalidArgumentError(absl::StrCat("planner: example ", i, " has length ", len,
                                                     "; every example needs >= 1 "
                                                     "token (the tokenizer adds [CLS]/[SEP])"));
    }
    AppendPieces(static_cast<int64_t>(i), len, &pieces);
  }
  return pieces;
}

void Planner::AppendPieces(int64_t example, int64_t len, std::vector<Placement>* pieces) const {
  const int64_t max_len = options_.max_len();
  if (len <= max_len) {
    pieces->push_back({example, 0, len, 0});
    return;
  }
  // [CLS] content [SEP]: the content's budget leaves room for both.
  const int64_t content = len - 2;
  const int64_t budget = max_len - 2;
  if (options_.over_long() == OverLong::kTruncate) {
    const tokenize::SingleKeep keep =
        tokenize::PlanSingle(content, budget, options_.truncation(), options_.head_fraction());
    // [CLS] and the head from the start, the tail and [SEP] from the end.
    pieces->push_back({example, 0, 2 + keep.head + keep.tail, keep.tail + 1});
    return;
  }
  for (int64_t start : tokenize::WindowStarts(content, budget, options_.window_stride())) {
    const int64_t n = std::min(budget, content - start);
    pieces->push_back({example, 1 + start, n + 2, /*tail=*/1, /*lead=*/1});
  }
}

absl::StatusOr<Boundaries> Planner::BucketBoundaries(absl::Span<const int64_t> lengths) const {
  absl::StatusOr<std::vector<Placement>> pieces = Pieces(lengths);
  if (!pieces.ok()) return pieces.status();
  std::vector<int64_t> lens(pieces->size());
  int64_t min_len = options_.max_len(), max_len = 1;
  for (size_t i = 0; i < lens.size(); ++i) {
    lens[i] = (*pieces)[i].length;
    min_len = std::min(min_len, lens[i]);
    max_len = std::max(max_len, lens[i]);
  }
  if (lens.empty()) return Boundaries{options_.max_len()};
  switch (options_.bucket_scheme()) {
    case BucketScheme::kExplicit:
      return ExplicitBoundaries(options_.boundaries(), max_len);
    case BucketScheme::kQuantile:
      return QuantileBoundaries(lens, options_.num_buckets());
    case BucketScheme::kGeometric:
      return GeometricBoundaries(min_len, max_len, options_.num_buckets());
    case BucketScheme::kOptimal:
      return OptimalBoundaries(lens, options_.num_buckets());
  }
  return internal::InvalidPlannerOption("bucket_scheme", "unknown value");
}

absl::StatusOr<EpochPlan> Planner::PlanEpoch(absl::Span<const int64_t> lengths, int64_t epoch,
                                             int world_size) const {
  if (world_size < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("planner: world_size must be >= 1, got ", world_size));
  }
  if (epoch < 0)
    return absl::InvalidArgumentError(absl::StrCat("planner: epoch must be >= 0, got ", epoch));
  absl::StatusOr<std::vector<Placement>> pieces = Pieces(lengths);
  if (!pieces.ok()) return pieces.status();
  Boundaries boundaries;
  if (options_.sampler() == Sampler::kBucketed) {
    absl::StatusOr<Boundaries> b = BucketBoundaries(lengths);
    if (!b.ok()) return b.status();
    boundaries = std::move(*b);
  }
  internal::EpochBuilder builder(options_, epoch);
  absl::StatusOr<std::vector<BatchSpec>> batches = builder.Build(std::move(*pieces), boundaries);
  if (!batches.ok()) return batches.status();
  return internal::DealToRanks(*batches, static_cast<size_t>(world_size), options_, builder);
}

absl::StatusOr<std::vector<BatchSpec>> Planner::Plan(absl::Span<const int64_t> lengths,
                                                     int64_t epoch, int rank, int world_size,
                                                     int64_t start_step) const {
  if (rank < 0 || rank >= world_size) {
    return absl::InvalidArgumentError(
        absl::StrCat("planner: rank ", rank, " is outside [0, world_size=", world_size, ")"));
  }
  absl::StatusOr<EpochPlan> plan = PlanEpoch(lengths, epoch, world_size);
  if (!plan.ok()) return plan.status();
  std::vector<BatchSpec>& mine = plan->ranks[rank];
  if (start_step < 0 || start_step > static_cast<int64_t>(mine.size())) {
    return absl::OutOfRangeError(absl::StrCat("planner: start_step ", start_step,
                                              " is outside [0, ", mine.size(), "] for epoch ",
                                              epoch));
  }
  mine.erase(mine.begin(), mine.begin() + start_step);
  return std::move(mine);
}

}  // namespace padless::batching
