#include "padless/batching/planner.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <set>
#include <tuple>

#include "gtest/gtest.h"
#include "padless/batching/padding_stats.h"
#include "plan_test_util.h"

namespace padless::batching {
namespace {

using testing::RandomLengths;

// The pieces the plan must contain exactly once: one per example, or one per window when split.
std::multiset<std::tuple<int64_t, int64_t, int64_t>> Expected(const Planner& planner,
                                                              const std::vector<int64_t>& lengths) {
  absl::StatusOr<std::vector<Placement>> pieces = planner.Pieces(lengths);
  EXPECT_TRUE(pieces.ok()) << pieces.status();
  std::multiset<std::tuple<int64_t, int64_t, int64_t>> out;
  for (const Placement& p : *pieces) out.emplace(p.example, p.start, p.length);
  return out;
}

// Checks every structural invariant of one epoch's plan over all ranks.
void CheckEpoch(const Planner& planner, const std::vector<int64_t>& lengths,
                const EpochPlan& plan) {
  const PlannerOptions& o = planner.options();
  std::multiset<std::tuple<int64_t, int64_t, int64_t>> seen;
  const size_t steps = plan.ranks[0].size();
  for (const auto& rank : plan.ranks) {
    ASSERT_EQ(rank.size(), steps) << "every rank must take the same number of steps";
    for (const BatchSpec& b : rank) {
      if (b.rows.empty()) {  // an empty batch for a short rank (ShardReport::empty_batches)
        ASSERT_EQ(b.length, 0);
        continue;
      }
      for (const auto& row : b.rows) {
        int64_t used = 0;
        for (const Placement& p : row) {
          ASSERT_GE(p.example, 0);
          ASSERT_LT(p.example, static_cast<int64_t>(lengths.size()));
          ASSERT_GE(p.length, 1);
          ASSERT_TRUE(p.FitsExample(lengths[p.example]))
              << "piece at " << p.start << " of length " << p.length << " lead " << p.lead
              << " tail " << p.tail << " in " << lengths[p.example];
          ASSERT_LE(p.length, o.max_len());
          seen.emplace(p.example, p.start, p.length);
          used += p.length;
        }
        if (b.layout != Layout::kVarlen) {
          ASSERT_LE(used, b.length);
          ASSERT_LE(b.length, o.max_len()) << "no row may be longer than max_len";
        }
        if (b.layout == Layout::kPadded) {
          ASSERT_EQ(row.size(), 1u);
        }
      }
      if (b.layout == Layout::kVarlen) {
        ASSERT_EQ(b.length, b.real_tokens());
      }
      const bool budgeted = o.sampler() == Sampler::kTokenBudget ||
                            (o.max_tokens() > 0 && (o.sampler() == Sampler::kBucketed ||
                                                    o.sampler() == Sampler::kPacked));
      if (budgeted) {
        ASSERT_LE(b.token_slots(), o.max_tokens()) << "token budget exceeded";
      }
      if (o.max_sentences() > 0 && o.sampler() == Sampler::kTokenBudget) {
        ASSERT_LE(b.num_sequences(), o.max_sentences());
      }
    }
  }
  EXPECT_EQ(seen, Expected(planner, lengths)) << "every piece exactly once per epoch";
}

std::vector<PlannerOptions> AllStrategies() {
  std::vector<PlannerOptions> all;
  all.push_back(PlannerOptions().sampler(Sampler::kRandom).batch_size(16));
  all.push_back(PlannerOptions().sampler(Sampler::kRandom).batch_size(16).pad_to(PadTo::kMultiple));
  all.push_back(PlannerOptions().sampler(Sampler::kRandom).batch_size(8).pad_to(PadTo::kMaxLength));
  all.push_back(PlannerOptions().sampler(Sampler::kSortedMegabatch).batch_size(16));
  for (BucketScheme s :
       {BucketScheme::kQuantile, BucketScheme::kGeometric, BucketScheme::kOptimal}) {
    all.push_back(PlannerOptions()
                      .sampler(Sampler::kBucketed)
                      .bucket_scheme(s)
                      .num_buckets(6)
                      .pad_to(PadTo::kBucketBoundary));
    all.push_back(PlannerOptions()
                      .sampler(Sampler::kBucketed)
                      .bucket_scheme(s)
                      .num_buckets(6)
                      .max_tokens(4096));
  }
  all.push_back(PlannerOptions()
                    .sampler(Sampler::kBucketed)
                    .bucket_scheme(BucketScheme::kExplicit)
                    .boundaries({64, 128, 256, 512})
                    .pad_to(PadTo::kBucketBoundary));
  all.push_back(PlannerOptions().sampler(Sampler::kTokenBudget).max_tokens(4096));
  all.push_back(PlannerOptions()
                    .sampler(Sampler::kTokenBudget)
                    .max_tokens(4096)
                    .max_sentences(12)
                    .batch_size_multiple(8)
                    .pad_to(PadTo::kMultiple));
  for (PackAlgorithm a : {PackAlgorithm::kFirstFitDecreasing, PackAlgorithm::kBestFitDecreasing,
                          PackAlgorithm::kHistogram}) {
    all.push_back(PlannerOptions().sampler(Sampler::kPacked).pack_algorithm(a).batch_size(8));
    all.push_back(PlannerOptions()
                      .sampler(Sampler::kPacked)
                      .pack_algorithm(a)
                      .packed_layout(Layout::kVarlen)
                      .max_tokens(8192)
                      .pack_window(0));
  }
  all.push_back(PlannerOptions()
                    .sampler(Sampler::kPacked)
                    .max_tokens(4096)
                    .max_sequences_per_row(2)
                    .over_long(OverLong::kSplit));
  all.push_back(
      PlannerOptions().sampler(Sampler::kRandom).over_long(OverLong::kSplit).window_stride(384));
  return all;
}

TEST(PlannerTest, InvariantsForEveryStrategyRankCountAndEpoch) {
  const std::vector<int64_t> lengths = RandomLengths(1500, 11);
  int config = 0;
  for (PlannerOptions o : AllStrategies()) {
    o.seed(99);
    const Planner planner(o);
    for (int world : {1, 3, 4}) {
      for (int64_t epoch : {0, 1}) {
        absl::StatusOr<EpochPlan> plan = planner.PlanEpoch(lengths, epoch, world);
        ASSERT_TRUE(plan.ok()) << "config " << config << ": " << plan.status();
        ASSERT_EQ(plan->ranks.size(), static_cast<size_t>(world));
        SCOPED_TRACE(::testing::Message()
                     << "config " << config << " world " << world << " epoch " << epoch);
        CheckEpoch(planner, lengths, *plan);
        if (HasFatalFailure()) return;
        EXPECT_GE(plan->report.step_imbalance, 0.0);
        EXPECT_GE(plan->report.total_imbalance, 0.0);
      }
    }
    ++config;
  }
}

TEST(PlannerTest, SameSeedSamePlanOtherSeedOrEpochDifferent) {
  const std::vector<int64_t> lengths = RandomLengths(2000, 5);
  for (PlannerOptions o : AllStrategies()) {
    const Planner a(o.seed(1)), b(o.seed(1)), c(o.seed(2));
    absl::StatusOr<std::vector<BatchSpec>> pa = a.Plan(lengths, 3);
    absl::StatusOr<std::vector<BatchSpec>> pb = b.Plan(lengths, 3);
    absl::StatusOr<std::vector<BatchSpec>> pc = c.Plan(lengths, 3);
    absl::StatusOr<std::vector<BatchSpec>> pe = a.Plan(lengths, 4);
    ASSERT_TRUE(pa.ok() && pb.ok() && pc.ok() && pe.ok());
    EXPECT_EQ(*pa, *pb);
    EXPECT_NE(*pa, *pc);
    EXPECT_NE(*pa, *pe) << "every epoch shuffles the batches";
  }
}

TEST(PlannerTest, RanksPartitionTheEpochAndAreBalanced) {
  const std::vector<int64_t> lengths = RandomLengths(4000, 8);
  const Planner planner(PlannerOptions().sampler(Sampler::kTokenBudget).max_tokens(8192));
  absl::StatusOr<EpochPlan> all = planner.PlanEpoch(lengths, 2, 4);
  ASSERT_TRUE(all.ok());
  for (int r = 0; r < 4; ++r) {
    absl::StatusOr<std::vector<BatchSpec>> mine = planner.Plan(lengths, 2, r, 4);
    ASSERT_TRUE(mine.ok());
    EXPECT_EQ(*mine, all->ranks[r]);
  }
  // Sorted-by-cost steps keep ranks within a few percent of each other.
  EXPECT_LT(all->report.step_imbalance, 0.05);
  EXPECT_LT(all->report.total_imbalance, 0.05);
}

TEST(PlannerTest, LongestFirstPutsTheMostExpensiveStepFirst) {
  const std::vector<int64_t> lengths = RandomLengths(3000, 9, 512);
  for (int world : {1, 2}) {
    PlannerOptions o = PlannerOptions().sampler(Sampler::kSortedMegabatch).batch_size(16);
    absl::StatusOr<EpochPlan> plain = Planner(o).PlanEpoch(lengths, 1, world);
    absl::StatusOr<EpochPlan> first = Planner(o.longest_first(true)).PlanEpoch(lengths, 1, world);
    ASSERT_TRUE(plain.ok() && first.ok());
    int64_t most = 0;
    for (const auto& rank : first->ranks) {
      for (const BatchSpec& b : rank) most = std::max(most, b.token_slots());
    }
    int64_t step0 = 0;
    for (const auto& rank : first->ranks) step0 = std::max(step0, rank[0].token_slots());
    EXPECT_EQ(step0, most);
    // One rank: only the order changes, the batches are the same.
    if (world == 1) {
      EXPECT_TRUE(std::is_permutation(plain->ranks[0].begin(), plain->ranks[0].end(),
                                      first->ranks[0].begin(), first->ranks[0].end()));
      EXPECT_NE(plain->ranks[0], first->ranks[0]);
    }
    CheckEpoch(Planner(o), lengths, *first);
  }
}

TEST(PlannerTest, UnevenBatchCountIsSplitNotDropped) {
  // 10 sequences of batch 4 -> 3 batches; 2 ranks need an even count.
  const std::vector<int64_t> lengths(10, 7);
  const Planner planner(PlannerOptions().batch_size(4));
  absl::StatusOr<EpochPlan> plan = planner.PlanEpoch(lengths, 0, 2);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->ranks[0].size(), 2u);
  EXPECT_EQ(plan->report.batches_split, 1);
  CheckEpoch(planner, lengths, *plan);
  // Too few sequences for the ranks: a clear error instead of an empty rank.
  absl::StatusOr<EpochPlan> too_few = planner.PlanEpoch(std::vector<int64_t>(1, 5), 0, 2);
  ASSERT_FALSE(too_few.ok());
  EXPECT_EQ(too_few.status().message(),
            "planner: the epoch has 1 sequence for 2 ranks, and every rank needs at least one: use "
            "at most 1 rank or more data");
}

TEST(PlannerTest, ResumeSkipsExactlyTheConsumedBatches) {
  const std::vector<int64_t> lengths = RandomLengths(1000, 2);
  const Planner planner(PlannerOptions().sampler(Sampler::kPacked).batch_size(4));
  absl::StatusOr<std::vector<BatchSpec>> full = planner.Plan(lengths, 5, 1, 2);
  absl::StatusOr<std::vector<BatchSpec>> rest = planner.Plan(lengths, 5, 1, 2, 7);
  ASSERT_TRUE(full.ok() && rest.ok());
  ASSERT_EQ(rest->size() + 7, full->size());
  EXPECT_TRUE(std::equal(rest->begin(), rest->end(), full->begin() + 7));
  EXPECT_TRUE(planner.Plan(lengths, 5, 1, 2, static_cast<int64_t>(full->size()))->empty());
  EXPECT_FALSE(planner.Plan(lengths, 5, 1, 2, static_cast<int64_t>(full->size()) + 1).ok());
  EXPECT_FALSE(planner.Plan(lengths, 5, 2, 2).ok());
}

TEST(PlannerTest, TruncationAndSplitPieces) {
  // Examples are [CLS] content [SEP]: 10 tokens hold 8 content tokens, 25 hold 23.
  const std::vector<int64_t> lengths = {10, 25};
  const Planner trunc(PlannerOptions().max_len(8));
  absl::StatusOr<std::vector<Placement>> p = trunc.Pieces(lengths);
  ASSERT_TRUE(p.ok());
  // The head (kHead): [CLS] and 6 content tokens from the start, [SEP] from the end.
  EXPECT_EQ(*p, (std::vector<Placement>{{0, 0, 8, 1}, {1, 0, 8, 1}}));
  const Planner head_tail(
      PlannerOptions().max_len(8).truncation(tokenize::Truncation::kHeadTail).head_fraction(0.5));
  p = head_tail.Pieces({10});
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(*p, (std::vector<Placement>{{0, 0, 8, 4}}));  // [CLS] 3 head | 3 tail [SEP]
  // Windows of 6 content tokens, each wrapped in the example's [CLS] (lead) and [SEP] (tail).
  const Planner split(PlannerOptions().max_len(8).over_long(OverLong::kSplit));
  p = split.Pieces(lengths);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(*p, (std::vector<Placement>{{0, 1, 8, 1, 1},
                                        {0, 7, 4, 1, 1},
                                        {1, 1, 8, 1, 1},
                                        {1, 7, 8, 1, 1},
                                        {1, 13, 8, 1, 1},
                                        {1, 19, 7, 1, 1}}));
  // window_stride: tokens shared by consecutive windows (2 here: starts 0 and 4 of 10).
  const Planner overlap(PlannerOptions().max_len(8).over_long(OverLong::kSplit).window_stride(2));
  p = overlap.Pieces({12});
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(*p, (std::vector<Placement>{{0, 1, 8, 1, 1}, {0, 5, 8, 1, 1}}));
  EXPECT_FALSE(trunc.Pieces({3, 0}).ok());
}

TEST(PlannerTest, PaddingPolicies) {
  const std::vector<int64_t> lengths = {3, 9, 17, 5};
  auto single = [&](PlannerOptions o) {
    absl::StatusOr<std::vector<BatchSpec>> plan =
        Planner(o.batch_size(4).max_len(32)).Plan(lengths, 0);
    EXPECT_TRUE(plan.ok());
    EXPECT_EQ(plan->size(), 1u);
    return (*plan)[0].length;
  };
  EXPECT_EQ(single(PlannerOptions().pad_to(PadTo::kLongest)), 17);
  EXPECT_EQ(single(PlannerOptions().pad_to(PadTo::kMultiple)), 24);
  EXPECT_EQ(single(PlannerOptions().pad_to(PadTo::kMultiple).pad_multiple(5)), 20);
  EXPECT_EQ(single(PlannerOptions().pad_to(PadTo::kMaxLength)), 32);
  // Rounding up never passes max_len.
  EXPECT_EQ(single(PlannerOptions().pad_to(PadTo::kMultiple).pad_multiple(64)), 32);
}

TEST(PlannerTest, BucketBoundaryPaddingGivesOneShapePerBucket) {
  const std::vector<int64_t> lengths = RandomLengths(3000, 4, 512);
  const Planner planner(PlannerOptions()
                            .sampler(Sampler::kBucketed)
                            .num_buckets(5)
                            .pad_to(PadTo::kBucketBoundary)
                            .batch_size(32)
                            .drop_last(true));
  absl::StatusOr<std::vector<BatchSpec>> plan = planner.Plan(lengths, 0);
  ASSERT_TRUE(plan.ok());
  const PaddingStats stats = ComputePaddingStats(*plan);
  EXPECT_LE(stats.distinct_shapes, 5);
  absl::StatusOr<Boundaries> b = planner.BucketBoundaries(lengths);
  ASSERT_TRUE(b.ok());
  for (const BatchSpec& s : *plan) {
    ASSERT_GE(s.bucket, 0);
    EXPECT_EQ(s.length, (*b)[s.bucket]);
    for (const auto& row : s.rows) EXPECT_EQ(BucketOf(*b, row[0].length), s.bucket);
  }
}

// Found by tests/fuzz/planner_fuzzer: an explicit boundary above max_len padded rows to the
// boundary (120 slots with max_len 24).
TEST(PlannerTest, BucketBoundaryPaddingNeverPassesMaxLen) {
  const std::vector<int64_t> lengths = {3, 24, 30, 7, 24, 100};
  const Planner planner(PlannerOptions()
                            .sampler(Sampler::kBucketed)
                            .bucket_scheme(BucketScheme::kExplicit)
                            .boundaries({8, 120})
                            .max_len(24)
                            .pad_to(PadTo::kBucketBoundary)
                            .batch_size(4));
  absl::StatusOr<std::vector<BatchSpec>> plan = planner.Plan(lengths, 0);
  ASSERT_TRUE(plan.ok()) << plan.status();
  std::multiset<int64_t> shapes;
  for (const BatchSpec& b : *plan) shapes.insert(b.length);
  // Bucket 0 (<= 8) keeps its boundary; bucket 1 (<= 120) is capped at max_len.
  EXPECT_EQ(shapes, (std::multiset<int64_t>{8, 24}));
}

TEST(PlannerTest, SortedMegabatchesAreSortedWithinBatches) {
  const std::vector<int64_t> lengths = RandomLengths(3200, 6);
  const Planner planner(PlannerOptions().sampler(Sampler::kSortedMegabatch).batch_size(16));
  absl::StatusOr<std::vector<BatchSpec>> plan = planner.Plan(lengths, 0);
  ASSERT_TRUE(plan.ok());
  const PaddingStats sorted = ComputePaddingStats(*plan);
  absl::StatusOr<std::vector<BatchSpec>> random =
      Planner(PlannerOptions().batch_size(16)).Plan(lengths, 0);
  ASSERT_TRUE(random.ok());
  EXPECT_GT(sorted.padding_efficiency, ComputePaddingStats(*random).padding_efficiency + 0.2);
  for (const BatchSpec& b : *plan) {
    for (size_t r = 1; r < b.rows.size(); ++r) {
      EXPECT_GE(b.rows[r - 1][0].length, b.rows[r][0].length);
    }
  }
}

TEST(PlannerTest, TokenBudgetBatchSizeMultiple) {
  const std::vector<int64_t> lengths = RandomLengths(3000, 12, 512);
  const Planner planner(
      PlannerOptions().sampler(Sampler::kTokenBudget).max_tokens(8192).batch_size_multiple(8));
  absl::StatusOr<std::vector<BatchSpec>> plan = planner.Plan(lengths, 0);
  ASSERT_TRUE(plan.ok());
  int not_multiple = 0;
  for (const BatchSpec& b : *plan) {
    if (b.num_sequences() > 8 && b.num_sequences() % 8 != 0) ++not_multiple;
  }
  // Only the last batch of the sorted pass may be a remainder.
  EXPECT_LE(not_multiple, 1);
  EXPECT_GT(ComputePaddingStats(*plan).padding_efficiency, 0.95);
}

TEST(PlannerTest, PackedWindowsKeepRowsMixedAndDense) {
  const std::vector<int64_t> lengths = RandomLengths(20000, 13, 512);
  const Planner planner(PlannerOptions().sampler(Sampler::kPacked).pack_window(4096).batch_size(8));
  absl::StatusOr<std::vector<BatchSpec>> plan = planner.Plan(lengths, 0);
  ASSERT_TRUE(plan.ok());
  EXPECT_GT(ComputePaddingStats(*plan).padding_efficiency, 0.97);
  // Shuffled windows: batches of the first tenth of the epoch are not all long (nor all short).
  std::vector<int64_t> longest;
  for (size_t i = 0; i < plan->size() / 10; ++i) {
    for (const auto& row : (*plan)[i].rows) longest.push_back(row[0].length);
  }
  const auto [lo, hi] = std::minmax_element(longest.begin(), longest.end());
  EXPECT_LT(*lo, 200);
  EXPECT_GT(*hi, 400);
}

TEST(PlannerTest, RejectsBadOptionsWithTheFieldName) {
  const std::vector<int64_t> lengths = {4, 5};
  auto error = [&](PlannerOptions o) {
    absl::StatusOr<std::vector<BatchSpec>> plan = Planner(o).Plan(lengths, 0);
    EXPECT_FALSE(plan.ok());
    return std::string(plan.status().message());
  };
  EXPECT_NE(error(PlannerOptions().batch_size(0)).find("batch_size"), std::string::npos);
  EXPECT_NE(error(PlannerOptions().max_len(0)).find("max_len"), std::string::npos);
  EXPECT_NE(error(PlannerOptions().sampler(Sampler::kTokenBudget)).find("max_tokens"),
            std::string::npos);
  EXPECT_NE(
      error(PlannerOptions().sampler(Sampler::kTokenBudget).max_tokens(100)).find("max_tokens"),
      std::string::npos);
  EXPECT_NE(error(PlannerOptions().pad_to(PadTo::kBucketBoundary)).find("pad_to"),
            std::string::npos);
  EXPECT_NE(error(PlannerOptions()
                      .sampler(Sampler::kBucketed)
                      .bucket_scheme(BucketScheme::kExplicit)
                      .boundaries({2, 3}))
                .find("boundaries"),
            std::string::npos);
  EXPECT_FALSE(Planner(PlannerOptions()).Plan(lengths, -1).ok());
  EXPECT_FALSE(Planner(PlannerOptions()).PlanEpoch(lengths, 0, 0).ok());
}

TEST(PaddingStatsTest, CountsAndPercentiles) {
  std::vector<BatchSpec> plan(2);
  plan[0].rows = {{{0, 0, 3, 0}}, {{1, 0, 5, 0}}};
  plan[0].length = 5;
  plan[1].layout = Layout::kVarlen;
  plan[1].rows = {{{2, 0, 4, 0}, {3, 0, 6, 0}}};
  plan[1].length = 10;
  const PaddingStats s = ComputePaddingStats(plan);
  EXPECT_EQ(s.batches, 2);
  EXPECT_EQ(s.sequences, 4);
  EXPECT_EQ(s.real_tokens, 18);
  EXPECT_EQ(s.token_slots, 20);
  EXPECT_DOUBLE_EQ(s.padding_efficiency, 0.9);
  EXPECT_EQ(s.distinct_shapes, 2);
  EXPECT_EQ(s.tokens_per_batch_p50, 10);
  EXPECT_EQ(s.tokens_per_batch_p99, 10);
}

}  // namespace
}  // namespace padless::batching
