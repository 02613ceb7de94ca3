// Truncation plans for single texts and text pairs, computed on lengths only, so they are cheap,
// exactly testable without a model, and shared by the tokenizer and overflow windowing.
// Pair strategies follow Hugging Face tokenizers' semantics (tokens are removed from the end of a
// segment; longest_first keeps a shorter segment that fits in half the budget whole, else halves
// the budget, the longer segment, or the second on ties, taking the odd token).
#ifndef PADLESS_TOKENIZE_TRUNCATION_H_
#define PADLESS_TOKENIZE_TRUNCATION_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace padless::tokenize {

enum class Truncation {
  kHead,      // keep the first tokens
  kTail,      // keep the last tokens
  kHeadTail,  // keep the first k and the last budget-k tokens (Sun et al., "How to Fine-Tune
              // BERT for Text Classification": 128 + 382 of 510 works best for long reviews)
};

enum class PairTruncation {
  kLongestFirst,  // remove from the longer segment (tokenizers' rule, see above)
  kOnlyFirst,     // remove only from the first segment; error when it is too short
  kOnlySecond,    // remove only from the second segment; error when it is too short
};

// The head share of the budget used by kHeadTail unless a caller sets another (128/510 ≈ 0.25).
inline constexpr double kDefaultHeadFraction = 0.25;

absl::StatusOr<Truncation> ParseTruncation(absl::string_view name);          // head|tail|head_tail
absl::StatusOr<PairTruncation> ParsePairTruncation(absl::string_view name);  // longest_first|...
std::string TruncationName(Truncation t);
std::string PairTruncationName(PairTruncation t);

// What to keep of one sequence of `length` content tokens: [0, head) and [length - tail, length).
// head + tail == min(length, budget).
struct SingleKeep {
  int64_t head = 0;
  int64_t tail = 0;
};
// `budget` >= 0 is the number of content tokens allowed (max_length minus special tokens).
// For kHeadTail the head gets llround(budget * head_fraction) tokens, clamped to [0, budget].
SingleKeep PlanSingle(int64_t length, int64_t budget, Truncation strategy,
                      double head_fraction = kDefaultHeadFraction);

// How many leading tokens of each segment of a pair to keep.
struct PairKeep {
  int64_t first = 0;
  int64_t second = 0;
};
// Fails with InvalidArgument (as Hugging Face does) when only_first / only_second would have to
// remove the whole segment or more.
absl::StatusOr<PairKeep> PlanPair(int64_t first_length, int64_t second_length, int64_t budget,
                                  PairTruncation strategy);

// Overflow windows over `length` content tokens: windows of at most `budget` tokens, consecutive
// windows sharing `stride` tokens, the last one reaching `length` (it may be shorter, as in Hugging
// Face's overflowing tokens). Returns the start of each
// window (a single 0 for length <= budget, including empty text). Requires 0 <= stride < budget.
std::vector<int64_t> WindowStarts(int64_t length, int64_t budget, int64_t stride);

}  // namespace padless::tokenize

#endif  // PADLESS_TOKENIZE_TRUNCATION_H_
