// Property test of the planner's dealing to ranks (issue 47): on random corpora (1 to 10,000
// sequences of 1 to max_len tokens), every sampler and layout, token budgets from max_len up and
// world sizes 1 to 16, every sequence lands in exactly one step of exactly one rank, every rank
// takes the same number of steps, and planning fails only when the epoch has fewer sequences than
// ranks. The space is sampled with fixed seeds (1,000 plans), not enumerated, to stay
// within a few seconds.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "padless/batching/planner.h"

namespace padless::batching {
namespace {

using PieceKey = std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t>;
PieceKey Key(const Placement& p) { return {p.example, p.start, p.length, p.tail, p.lead}; }

// One sampled point of the space: a corpus, the options and a world size.
struct Case {
  std::vector<int64_t> lengths;
  PlannerOptions options;
  int world = 1;
  std::string name;
};

// Every sampler with every layout it supports; the packed sampler with kPacked rows and kVarlen.
Case Draw(std::mt19937_64& rng, int index) {
  auto uniform = [&rng](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  Case c;
  // Log-uniform in [1, 10,000]: small corpora (fewer sequences than ranks, single batches) are as
  // common as large ones, and the large ones, which cost the time, are rare.
  const auto n = static_cast<int64_t>(
      std::exp(std::uniform_real_distribution<double>(0, std::log(10001.0))(rng)));
  const int64_t max_len = uniform(0, 3) == 0 ? uniform(3, 16) : uniform(16, 512);
  c.lengths.resize(static_cast<size_t>(std::max<int64_t>(1, n)));
  // Mostly short sequences, so that packed rows hold many of them, sometimes any length up to
  // max_len.
  const int64_t longest = uniform(0, 1) == 0 ? max_len : std::max<int64_t>(1, max_len / 8);
  for (int64_t& len : c.lengths) len = uniform(1, longest);
  const int kind = static_cast<int>(uniform(0, 5));
  PlannerOptions& o = c.options;
  o.seed(static_cast<uint64_t>(uniform(0, 1000))).max_len(max_len);
  o.max_tokens(max_len * uniform(1, 4) + uniform(0, max_len - 1));
  o.batch_size(uniform(1, 64));
  switch (kind) {
    case 0:
      o.sampler(Sampler::kRandom).pad_to(uniform(0, 1) == 0 ? PadTo::kLongest : PadTo::kMaxLength);
      break;
    case 1:
      o.sampler(Sampler::kSortedMegabatch).megabatch_factor(uniform(1, 8));
      break;
    case 2:
      o.sampler(Sampler::kBucketed)
          .pad_to(PadTo::kBucketBoundary)
          .num_buckets(static_cast<int>(uniform(1, 8)));
      if (uniform(0, 1) == 0) o.max_tokens(0);  // batch_size sequences per batch
      break;
    case 3:
      o.sampler(Sampler::kTokenBudget).pad_to(PadTo::kMultiple).max_sentences(uniform(0, 8));
      break;
    case 4:
      o.sampler(Sampler::kPacked).packed_layout(Layout::kPacked);
      o.pad_to(uniform(0, 1) == 0 ? PadTo::kLongest : PadTo::kMaxLength);
      o.max_sequences_per_row(uniform(0, 1) == 0 ? 0 : uniform(1, 8));
      if (uniform(0, 3) == 0) o.max_tokens(0);  // batch_size rows per batch
      break;
    default:
      o.sampler(Sampler::kPacked).packed_layout(Layout::kVarlen).max_sentences(uniform(0, 8));
      break;
  }
  c.world = static_cast<int>(uniform(1, 16));
  c.name = absl::StrCat("case ", index, ": ", c.lengths.size(), " sequences, sampler ", kind,
                        ", max_len ", max_len, ", max_tokens ", o.max_tokens(), ", batch_size ",
                        o.batch_size(), ", world ", c.world);
  return c;
}

// The plan's properties for one case; returns the number of empty batches it needed.
int64_t CheckCase(const Case& c) {
  SCOPED_TRACE(c.name);
  const Planner planner(c.options);
  absl::StatusOr<std::vector<Placement>> pieces = planner.Pieces(c.lengths);
  EXPECT_TRUE(pieces.ok()) << pieces.status();
  if (!pieces.ok()) return 0;
  absl::StatusOr<EpochPlan> plan = planner.PlanEpoch(c.lengths, /*epoch=*/1, c.world);
  if (static_cast<int64_t>(pieces->size()) < c.world) {
    EXPECT_FALSE(plan.ok()) << "fewer sequences than ranks must fail";
    EXPECT_TRUE(absl::StrContains(plan.status().message(), "every rank needs at least one"))
        << plan.status();
    return 0;
  }
  EXPECT_TRUE(plan.ok()) << plan.status();
  if (!plan.ok()) return 0;
  EXPECT_EQ(plan->ranks.size(), static_cast<size_t>(c.world));
  std::vector<PieceKey> planned;
  int64_t empty = 0;
  for (const auto& rank : plan->ranks) {
    EXPECT_EQ(static_cast<int64_t>(rank.size()), plan->report.steps) << "same steps on every rank";
    int64_t empty_here = 0, sequences_here = 0;
    for (const BatchSpec& b : rank) {
      for (const auto& row : b.rows) {
        EXPECT_FALSE(row.empty()) << "only a whole batch may be empty";
        for (const Placement& p : row) planned.push_back(Key(p));
      }
      if (b.layout != Layout::kVarlen) {
        EXPECT_LE(b.longest_row(), b.length);
      }
      sequences_here += b.num_sequences();
      empty_here += b.rows.empty() ? 1 : 0;
    }
    EXPECT_LE(empty_here, 1) << "a rank gets at most one empty batch per epoch";
    EXPECT_GT(sequences_here, 0) << "every rank trains on something";
    empty += empty_here;
  }
  EXPECT_EQ(empty, plan->report.empty_batches);
  std::vector<PieceKey> expected;
  for (const Placement& p : *pieces) expected.push_back(Key(p));
  std::sort(planned.begin(), planned.end());
  std::sort(expected.begin(), expected.end());
  EXPECT_TRUE(planned == expected) << planned.size() << " pieces planned of " << expected.size()
                                   << ": every sequence exactly once";
  return empty;
}

TEST(PlannerWorldSizePropertyTest, EverySequenceOnceAndEqualStepsForEveryWorldSize) {
  std::mt19937_64 rng(47);
  int64_t failures_expected = 0, empties = 0;
  for (int i = 0; i < 1000; ++i) {
    const Case c = Draw(rng, i);
    const int64_t pieces = static_cast<int64_t>(c.lengths.size());  // lengths <= max_len
    if (pieces < c.world) ++failures_expected;
    empties += CheckCase(c);
    if (HasFailure()) return;
  }
  // The sample reaches both the error and the empty batches.
  EXPECT_GT(failures_expected, 0);
  EXPECT_GT(empties, 0);
}

// Issue 47's case: a packed batch of one row of many sequences (max_tokens = max_len) cannot be
// halved between rows; it is halved between its sequences, for every world size up to 16.
TEST(PlannerWorldSizePropertyTest, OneRowPackedBatchesAreSplitBetweenSequences) {
  std::mt19937_64 rng(5452);
  std::vector<int64_t> lengths(5452);
  for (int64_t& len : lengths) len = std::uniform_int_distribution<int64_t>(5, 30)(rng);
  const PlannerOptions o =
      PlannerOptions().sampler(Sampler::kPacked).max_len(512).max_tokens(512).seed(3);
  int64_t batches = 0;  // with one rank
  for (int world = 1; world <= 16; ++world) {
    absl::StatusOr<EpochPlan> plan = Planner(o).PlanEpoch(lengths, 0, world);
    ASSERT_TRUE(plan.ok()) << world << " ranks: " << plan.status();
    EXPECT_EQ(plan->report.empty_batches, 0) << world << " ranks: rows hold many sequences";
    // About 190 rows of 512 tokens, as TREC-6's 5,452 questions give; fewer than `world` halvings.
    EXPECT_GE(plan->report.steps * world, 180) << world << " ranks";
    EXPECT_LT(plan->report.batches_split, world) << world << " ranks";
    if (world == 1) batches = plan->report.steps;
    if (batches % world != 0) EXPECT_GT(plan->report.batches_split, 0) << world << " ranks";
    for (const auto& rank : plan->ranks) {
      ASSERT_EQ(static_cast<int64_t>(rank.size()), plan->report.steps) << world << " ranks";
      for (const BatchSpec& b : rank) ASSERT_EQ(b.rows.size(), 1u);
    }
  }
}

// Single-sequence batches cannot be halved: the ranks left short get one empty batch each.
TEST(PlannerWorldSizePropertyTest, ShortRanksGetAnEmptyBatchWhenNothingCanBeHalved) {
  const std::vector<int64_t> lengths = {9, 4, 7, 12, 3};
  const PlannerOptions o = PlannerOptions().batch_size(1).seed(2);
  absl::StatusOr<EpochPlan> plan = Planner(o).PlanEpoch(lengths, 0, 4);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->report.steps, 2);
  EXPECT_EQ(plan->report.batches_split, 0);
  EXPECT_EQ(plan->report.empty_batches, 3);
  int64_t sequences = 0;
  std::vector<int64_t> real_in_step(2, 0), empty_in_step(2, 0);
  for (const auto& rank : plan->ranks) {
    ASSERT_EQ(rank.size(), 2u);
    for (size_t step = 0; step < 2; ++step) {
      sequences += rank[step].num_sequences();
      real_in_step[step] += rank[step].real_tokens();
      empty_in_step[step] += rank[step].rows.empty() ? 1 : 0;
    }
  }
  EXPECT_EQ(sequences, 5);
  // The empty batches share the cheapest step with the shortest sequence.
  const size_t cheap = empty_in_step[0] > 0 ? 0 : 1;
  EXPECT_EQ(empty_in_step[cheap], 3);
  EXPECT_EQ(real_in_step[cheap], 3);
}

}  // namespace
}  // namespace padless::batching
