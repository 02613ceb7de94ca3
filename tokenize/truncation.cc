#include "padless/tokenize/truncation.h"

#include <algorithm>
#include <cmath>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "padless/base/enum_names.h"

namespace padless::tokenize {

namespace {
constexpr base::EnumName<Truncation> kTruncations[] = {{"head", Truncation::kHead},
                                                       {"tail", Truncation::kTail},
                                                       {"head_tail", Truncation::kHeadTail},
                                                       {"head-tail", Truncation::kHeadTail}};
constexpr base::EnumName<PairTruncation> kPairTruncations[] = {
    {"longest_first", PairTruncation::kLongestFirst},
    {"only_first", PairTruncation::kOnlyFirst},
    {"only_second", PairTruncation::kOnlySecond}};
}  // namespace

absl::StatusOr<Truncation> ParseTruncation(absl::string_view name) {
  return base::ParseEnum("truncation", name, kTruncations);
}

absl::StatusOr<PairTruncation> ParsePairTruncation(absl::string_view name) {
  return base::ParseEnum("pair truncation", name, kPairTruncations);
}

std::string TruncationName(Truncation t) { return std::string(base::EnumToName(t, kTruncations)); }

std::string PairTruncationName(PairTruncation t) {
  return std::string(base::EnumToName(t, kPairTruncations));
}

SingleKeep PlanSingle(int64_t length, int64_t budget, Truncation strategy, double head_fraction) {
  budget = std::max<int64_t>(budget, 0);
  if (length <= budget) return {length, 0};
  switch (strategy) {
    case Truncation::kHead:
      return {budget, 0};
    case Truncation::kTail:
      return {0, budget};
    case Truncation::kHeadTail: {
      const double fraction = std::clamp(head_fraction, 0.0, 1.0);
      const int64_t head =
          std::clamp<int64_t>(std::llround(static_cast<double>(budget) * fraction), 0, budget);
      return {head, budget - head};
    }
  }
  return {budget, 0};
}

absl::StatusOr<PairKeep> PlanPair(int64_t first_length, int64_t second_length, int64_t budget,
                                  PairTruncation strategy) {
  const int64_t a = first_length, b = second_length;
  const int64_t remove = a + b - std::max<int64_t>(budget, 0);
  if (remove <= 0) return PairKeep{a, b};
  switch (strategy) {
    case PairTruncation::kOnlyFirst:
      // Hugging Face requires the segment to keep at least one token.
      if (a > remove) return PairKeep{a - remove, b};
      return absl::InvalidArgumentError(absl::StrCat(
          "need to remove ", remove, " tokens to truncate the pair but the first sequence has ", a,
          "; choose another truncation than only_first, e.g. longest_first or only_second"));
    case PairTruncation::kOnlySecond:
      if (b > remove) return PairKeep{a, b - remove};
      return absl::InvalidArgumentError(absl::StrCat(
          "need to remove ", remove, " tokens to truncate the pair but the second sequence has ", b,
          "; choose another truncation than only_second, e.g. longest_first or only_first"));
    case PairTruncation::kLongestFirst: {
      // Hugging Face tokenizers' rule (utils/truncation.rs), which its fast tokenizers, TEI and
      // transformers 5 apply: the shorter segment stays whole when it fits in half the budget
      // and the longer one takes the rest; otherwise each gets half, the longer one (the second
      // on ties) the odd token. (Python's old slow-tokenizer loop gave the odd token to the
      // first segment and could leave the longer one shorter.)
      const int64_t target = std::max<int64_t>(budget, 0);
      const bool swap = a > b;
      const int64_t shorter = swap ? b : a;
      if (2 * shorter <= target) return swap ? PairKeep{target - b, b} : PairKeep{a, target - a};
      const int64_t half = target / 2, rest = target - target / 2;
      return swap ? PairKeep{rest, half} : PairKeep{half, rest};
    }
  }
  return PairKeep{a, b};
}

std::vector<int64_t> WindowStarts(int64_t length, int64_t budget, int64_t stride) {
  std::vector<int64_t> starts = {0};
  if (budget <= 0 || stride < 0 || stride >= budget) return starts;
  const int64_t step = budget - stride;
  for (int64_t start = 0; start + budget < length;) {
    start += step;
    starts.push_back(start);
  }
  return starts;
}

}  // namespace padless::tokenize
