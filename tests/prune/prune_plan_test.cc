// The pruning plan (prune_plan.h): shares of the original model, scores normalised per layer and
// ranked across layers, a head left in every layer, FFN widths kept at multiples, later rounds
// counted against the original size, and bad targets or scores rejected.
#include "padless/prune/prune_plan.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace padless::prune {
namespace {

models::EncoderConfig Config() {
  return models::EncoderConfig().hidden(32).layers(2).heads(4).ffn(64);
}

// Heads: layer 0 scores 1, 2, 3, 4; layer 1 scores 10, 40, 30, 20 (normalised: layer 1's order
// is 0, 3, 2, 1, and its values are the same as layer 0's times 10). FFN: neuron n of layer l
// scores n + 1 in layer 0 and 64 - n in layer 1.
UnitImportance Scores() {
  UnitImportance u;
  u.heads = {{1, 2, 3, 4}, {10, 40, 30, 20}};
  u.ffn.resize(2);
  for (int n = 0; n < 64; ++n) {
    u.ffn[0].push_back(n + 1);
    u.ffn[1].push_back(64 - n);
  }
  return u;
}

TEST(PrunePlanTest, RemovesTheLowestNormalisedHeadsAcrossLayers) {
  absl::StatusOr<PrunePlan> plan = PlanPruning(Config(), Scores(), {0.5, 0.0});
  ASSERT_TRUE(plan.ok()) << plan.status();
  // Normalised, both layers hold the same four values: the two lowest of each go (ties by layer).
  EXPECT_EQ(plan->keep_heads, (std::vector<std::vector<int64_t>>{{2, 3}, {1, 2}}));
  EXPECT_EQ(plan->heads_left(), 4);
  EXPECT_EQ(plan->ffn_left(), 128);
}

TEST(PrunePlanTest, NormalisationLetsAQuietLayerKeepItsBestHeads) {
  UnitImportance u = Scores();
  u.heads = {{0.1, 0.2, 0.3, 0.4}, {10, 40, 30, 20}};  // layer 0 a hundred times quieter
  absl::StatusOr<PrunePlan> plan = PlanPruning(Config(), u, {0.25, 0.0});
  ASSERT_TRUE(plan.ok());
  // Without normalisation both removals would hit layer 0.
  EXPECT_EQ(plan->keep_heads, (std::vector<std::vector<int64_t>>{{1, 2, 3}, {1, 2, 3}}));
}

TEST(PrunePlanTest, EveryLayerKeepsAHead) {
  UnitImportance u = Scores();
  u.heads = {{0, 0, 0, 0}, {10, 40, 30, 20}};
  absl::StatusOr<PrunePlan> plan = PlanPruning(Config(), u, {0.75, 0.0});
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->keep_heads[0].size(), 1u);
  EXPECT_EQ(plan->heads_left(), 2);
}

TEST(PrunePlanTest, FfnKeepsMultiplesAndItsBestNeurons) {
  absl::StatusOr<PrunePlan> plan = PlanPruning(Config(), Scores(), {0.0, 0.3});
  ASSERT_TRUE(plan.ok());
  // 0.3 x 128 = 38 to go: two blocks of 16 (a third would overshoot by more), one per layer
  // since both layers' scores normalise to the same values.
  ASSERT_EQ(plan->keep_ffn[0].size(), 48u);
  ASSERT_EQ(plan->keep_ffn[1].size(), 48u);
  EXPECT_EQ(plan->keep_ffn[0].front(), 16);  // layer 0's lowest are its first neurons
  EXPECT_EQ(plan->keep_ffn[1].back(), 47);   // layer 1's lowest are its last
  PruneTargets by8{0.0, 0.3, 8};
  EXPECT_EQ(PlanPruning(Config(), Scores(), by8)->ffn_left(), 128 - 40);  // 5 blocks of 8
  PruneTargets by1{0.0, 0.3, 1};
  EXPECT_EQ(PlanPruning(Config(), Scores(), by1)->ffn_left(), 128 - 38);
}

TEST(PrunePlanTest, SharesCountAgainstTheOriginalModel) {
  // A model that already lost a head per layer: scores for 3 heads each.
  models::EncoderConfig pruned = Config().pruned_heads({{0}, {1}});
  UnitImportance u = Scores();
  u.heads = {{2, 3, 4}, {10, 30, 20}};
  absl::StatusOr<PrunePlan> plan = PlanPruning(pruned, u, {0.5, 0.0});
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->heads_left(), 4);  // half of the original 8, not half of the 6 left
  absl::StatusOr<PrunePlan> same = PlanPruning(pruned, u, {0.25, 0.0});
  EXPECT_EQ(same->heads_left(), 6);  // already there: nothing more goes
}

TEST(PrunePlanTest, IsDeterministic) {
  UnitImportance u = Scores();
  u.heads = {{1, 1, 1, 1}, {1, 1, 1, 1}};
  absl::StatusOr<PrunePlan> a = PlanPruning(Config(), u, {0.5, 0.5});
  absl::StatusOr<PrunePlan> b = PlanPruning(Config(), u, {0.5, 0.5});
  EXPECT_EQ(a->keep_heads, b->keep_heads);
  EXPECT_EQ(a->keep_ffn, b->keep_ffn);
  // Exact ties go by (layer, index): layer 0 gives up all but one head first.
  EXPECT_EQ(a->keep_heads, (std::vector<std::vector<int64_t>>{{3}, {1, 2, 3}}));
}

TEST(PrunePlanTest, BadTargetsAndScoresAreClearErrors) {
  auto expect_error = [](const models::EncoderConfig& c, const UnitImportance& u, PruneTargets t,
                         const std::string& needle) {
    absl::StatusOr<PrunePlan> plan = PlanPruning(c, u, t);
    ASSERT_FALSE(plan.ok()) << needle;
    EXPECT_NE(std::string(plan.status().message()).find(needle), std::string::npos)
        << plan.status();
  };
  expect_error(Config(), Scores(), {1.0, 0.0}, "heads share must be in [0, 1)");
  expect_error(Config(), Scores(), {-0.1, 0.0}, "heads share");
  expect_error(Config(), Scores(), {0.0, 1.5}, "ffn share");
  expect_error(Config(), Scores(), {0.0, 0.0, 0}, "ffn_multiple");
  UnitImportance one_layer = Scores();
  one_layer.heads.pop_back();
  expect_error(Config(), one_layer, {0.5, 0.0}, "scores for 1 layers");
  UnitImportance short_ffn = Scores();
  short_ffn.ffn[1].pop_back();
  expect_error(Config(), short_ffn, {0.5, 0.0}, "layer 1 has scores for 4 heads and 63");
}

}  // namespace
}  // namespace padless::prune
