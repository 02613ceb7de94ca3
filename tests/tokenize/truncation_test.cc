#include "padless/tokenize/truncation.h"

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace padless::tokenize {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

struct SingleCase {
  const char* name;
  int64_t length;
  int64_t budget;
  Truncation strategy;
  double head_fraction;
  int64_t want_head;
  int64_t want_tail;
};

TEST(PlanSingleTest, TableOfCases) {
  const SingleCase cases[] = {
      {"fits", 5, 10, Truncation::kHead, 0.25, 5, 0},
      {"fits exactly", 10, 10, Truncation::kTail, 0.25, 10, 0},
      {"empty text", 0, 10, Truncation::kHeadTail, 0.25, 0, 0},
      {"empty budget", 7, 0, Truncation::kHeadTail, 0.25, 0, 0},
      {"negative budget counts as empty", 7, -3, Truncation::kHead, 0.25, 0, 0},
      {"head", 20, 8, Truncation::kHead, 0.25, 8, 0},
      {"tail", 20, 8, Truncation::kTail, 0.25, 0, 8},
      {"head_tail bert 128+382", 3000, 510, Truncation::kHeadTail, 0.25, 128, 382},
      {"head_tail rounds", 20, 10, Truncation::kHeadTail, 0.25, 3, 7},  // 2.5 -> 3
      {"head_tail all head", 20, 10, Truncation::kHeadTail, 1.0, 10, 0},
      {"head_tail all tail", 20, 10, Truncation::kHeadTail, 0.0, 0, 10},
      {"head_tail fraction clamped", 20, 10, Truncation::kHeadTail, 7.0, 10, 0},
      {"budget one", 20, 1, Truncation::kHeadTail, 0.25, 0, 1},
  };
  for (const SingleCase& c : cases) {
    SCOPED_TRACE(c.name);
    const SingleKeep keep = PlanSingle(c.length, c.budget, c.strategy, c.head_fraction);
    EXPECT_EQ(keep.head, c.want_head);
    EXPECT_EQ(keep.tail, c.want_tail);
  }
}

// Hugging Face tokenizers' longest_first (tokenizers/src/utils/truncation.rs), step for step in
// C++; checked against the Python package for lengths 0-13 and budgets 0-29 when written.
PairKeep TokenizersLongestFirst(int64_t a, int64_t b, int64_t budget) {
  if (a + b <= budget) return {a, b};
  int64_t n1 = a, n2 = b;
  const bool swap = n1 > n2;
  if (swap) std::swap(n1, n2);
  n2 = n1 > budget ? n1 : std::max(n1, budget - n1);
  if (n1 + n2 > budget) {
    n1 = budget / 2;
    n2 = n1 + budget % 2;
  }
  if (swap) std::swap(n1, n2);
  return {n1, n2};
}

TEST(PlanPairTest, LongestFirstMatchesTokenizersExhaustively) {
  for (int64_t a = 0; a <= 24; ++a) {
    for (int64_t b = 0; b <= 24; ++b) {
      for (int64_t budget = 0; budget <= 50; ++budget) {
        absl::StatusOr<PairKeep> keep = PlanPair(a, b, budget, PairTruncation::kLongestFirst);
        ASSERT_TRUE(keep.ok()) << keep.status();
        const PairKeep want = TokenizersLongestFirst(a, b, budget);
        ASSERT_EQ(keep->first, want.first) << a << " " << b << " " << budget;
        ASSERT_EQ(keep->second, want.second) << a << " " << b << " " << budget;
      }
    }
  }
}

struct PairCase {
  const char* name;
  int64_t a;
  int64_t b;
  int64_t budget;
  PairTruncation strategy;
  bool ok;
  int64_t want_first;
  int64_t want_second;
};

TEST(PlanPairTest, TableOfCases) {
  const PairCase cases[] = {
      {"fits", 3, 4, 7, PairTruncation::kLongestFirst, true, 3, 4},
      {"longest_first longer first", 10, 2, 6, PairTruncation::kLongestFirst, true, 4, 2},
      {"longest_first longer second", 2, 10, 6, PairTruncation::kLongestFirst, true, 2, 4},
      {"longest_first tie gives the second the odd token", 5, 5, 7, PairTruncation::kLongestFirst,
       true, 3, 4},
      {"longest_first longer first takes the odd token", 10, 8, 7, PairTruncation::kLongestFirst,
       true, 4, 3},
      {"longest_first halves once the shorter exceeds half", 10, 4, 7,
       PairTruncation::kLongestFirst, true, 4, 3},
      {"longest_first both shrink", 10, 8, 6, PairTruncation::kLongestFirst, true, 3, 3},
      {"longest_first empty second", 10, 0, 4, PairTruncation::kLongestFirst, true, 4, 0},
      {"longest_first empty first", 0, 10, 4, PairTruncation::kLongestFirst, true, 0, 4},
      {"longest_first zero budget", 3, 3, 0, PairTruncation::kLongestFirst, true, 0, 0},
      {"only_first", 10, 3, 8, PairTruncation::kOnlyFirst, true, 5, 3},
      {"only_first keeps one", 10, 3, 4, PairTruncation::kOnlyFirst, true, 1, 3},
      // Hugging Face refuses to cut a segment down to nothing.
      {"only_first would empty", 10, 3, 3, PairTruncation::kOnlyFirst, false, 0, 0},
      {"only_first second too long", 2, 10, 5, PairTruncation::kOnlyFirst, false, 0, 0},
      {"only_first empty first", 0, 10, 5, PairTruncation::kOnlyFirst, false, 0, 0},
      {"only_second", 3, 10, 8, PairTruncation::kOnlySecond, true, 3, 5},
      {"only_second first too long", 10, 2, 5, PairTruncation::kOnlySecond, false, 0, 0},
      {"only_second empty second", 10, 0, 5, PairTruncation::kOnlySecond, false, 0, 0},
      {"only_second fits with empty side", 3, 0, 5, PairTruncation::kOnlySecond, true, 3, 0},
  };
  for (const PairCase& c : cases) {
    SCOPED_TRACE(c.name);
    absl::StatusOr<PairKeep> keep = PlanPair(c.a, c.b, c.budget, c.strategy);
    ASSERT_EQ(keep.ok(), c.ok) << keep.status();
    if (!c.ok) {
      EXPECT_EQ(keep.status().code(), absl::StatusCode::kInvalidArgument);
      EXPECT_THAT(keep.status().message(), HasSubstr("choose another truncation"));
      continue;
    }
    EXPECT_EQ(keep->first, c.want_first);
    EXPECT_EQ(keep->second, c.want_second);
  }
}

TEST(PlanPairTest, ErrorNamesTheSegmentAndTheCount) {
  absl::StatusOr<PairKeep> keep = PlanPair(2, 10, 5, PairTruncation::kOnlyFirst);
  ASSERT_FALSE(keep.ok());
  EXPECT_THAT(keep.status().message(), HasSubstr("remove 7 tokens"));
  EXPECT_THAT(keep.status().message(), HasSubstr("first sequence has 2"));
}

TEST(WindowStartsTest, Cases) {
  EXPECT_THAT(WindowStarts(0, 4, 1), ElementsAre(0));
  EXPECT_THAT(WindowStarts(4, 4, 1), ElementsAre(0));
  EXPECT_THAT(WindowStarts(5, 4, 1), ElementsAre(0, 3));
  EXPECT_THAT(WindowStarts(10, 4, 2), ElementsAre(0, 2, 4, 6));
  EXPECT_THAT(WindowStarts(11, 4, 2), ElementsAre(0, 2, 4, 6, 8));
  EXPECT_THAT(WindowStarts(9, 3, 0), ElementsAre(0, 3, 6));
}

TEST(WindowStartsTest, WindowsCoverEveryTokenWithTheStrideOverlap) {
  for (int64_t length = 0; length < 60; ++length) {
    for (int64_t budget = 1; budget < 12; ++budget) {
      for (int64_t stride = 0; stride < budget; ++stride) {
        const std::vector<int64_t> starts = WindowStarts(length, budget, stride);
        ASSERT_EQ(starts.front(), 0);
        ASSERT_GE(starts.back() + budget, length);
        for (size_t k = 1; k < starts.size(); ++k) {
          ASSERT_EQ(starts[k] - starts[k - 1], budget - stride);
          ASSERT_LT(starts[k - 1] + budget, length);  // no window after the end is reached
        }
      }
    }
  }
}

TEST(ParseTest, NamesRoundTripAndUnknownNamesFail) {
  for (Truncation t : {Truncation::kHead, Truncation::kTail, Truncation::kHeadTail}) {
    EXPECT_EQ(*ParseTruncation(TruncationName(t)), t);
  }
  for (PairTruncation t :
       {PairTruncation::kLongestFirst, PairTruncation::kOnlyFirst, PairTruncation::kOnlySecond}) {
    EXPECT_EQ(*ParsePairTruncation(PairTruncationName(t)), t);
  }
  EXPECT_EQ(ParseTruncation("middle").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParsePairTruncation("shortest_first").status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace padless::tokenize
