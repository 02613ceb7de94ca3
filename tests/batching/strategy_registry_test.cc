// The strategy registry: every name resolves, aliases resolve to their entries, unknown names list
// the known ones, and each family sets the options its users rely on.
#include "padless/batching/strategy_registry.h"

#include <set>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace padless::batching {
namespace {

using ::testing::HasSubstr;

const StrategySizes kSizes{/*max_len=*/128, /*batch_size=*/16, /*max_tokens=*/4096, /*seed=*/7};

// The fields the strategies differ in.
void ExpectSameOptions(const PlannerOptions& a, const PlannerOptions& b) {
  EXPECT_EQ(a.sampler(), b.sampler());
  EXPECT_EQ(a.seed(), b.seed());
  EXPECT_EQ(a.max_len(), b.max_len());
  EXPECT_EQ(a.batch_size(), b.batch_size());
  EXPECT_EQ(a.max_tokens(), b.max_tokens());
  EXPECT_EQ(a.drop_last(), b.drop_last());
  EXPECT_EQ(a.pad_to(), b.pad_to());
  EXPECT_EQ(a.bucket_scheme(), b.bucket_scheme());
  EXPECT_EQ(a.num_buckets(), b.num_buckets());
  EXPECT_EQ(a.packed_layout(), b.packed_layout());
  EXPECT_EQ(a.pack_algorithm(), b.pack_algorithm());
  EXPECT_EQ(a.pack_window(), b.pack_window());
}

TEST(StrategyRegistryTest, EveryNameResolvesAndNamesAreUnique) {
  const std::vector<std::string> names = StrategyNames();
  EXPECT_EQ(std::set<std::string>(names.begin(), names.end()).size(), names.size());
  for (const std::string& name : names) {
    absl::StatusOr<PlannerOptions> o = LookupStrategy(name, kSizes);
    ASSERT_TRUE(o.ok()) << name << ": " << o.status();
    EXPECT_EQ(o->max_len(), kSizes.max_len) << name;
    EXPECT_EQ(o->seed(), kSizes.seed) << name;
  }
}

TEST(StrategyRegistryTest, AliasesResolveToTheirEntries) {
  const std::pair<const char*, const char*> aliases[] = {{"packed", "packed_bfd"},
                                                         {"varlen", "varlen_bfd"},
                                                         {"buckets", "buckets_optimal16_budget"},
                                                         {"padded", "random_pad_longest"}};
  for (const auto& [alias, target] : aliases) {
    SCOPED_TRACE(alias);
    ExpectSameOptions(*LookupStrategy(alias, kSizes), *LookupStrategy(target, kSizes));
  }
  EXPECT_THAT(StrategyNames(StrategyKind::kAlias),
              ::testing::ElementsAre("packed", "varlen", "buckets", "padded"));
  for (const StrategyEntry& e : StrategyEntries()) {
    EXPECT_EQ(e.alias_of.empty(), e.kind != StrategyKind::kAlias) << e.name;
  }
}

TEST(StrategyRegistryTest, UnknownNameListsEveryKnownName) {
  absl::StatusOr<PlannerOptions> o = LookupStrategy("magic", kSizes);
  ASSERT_FALSE(o.ok());
  EXPECT_EQ(o.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(o.status().message(), HasSubstr("unknown strategy 'magic'"));
  for (const std::string& name : StrategyNames()) {
    EXPECT_THAT(o.status().message(), HasSubstr(name));
  }
}

TEST(StrategyRegistryTest, StandardSetInBenchPaddingOrder) {
  EXPECT_THAT(StandardStrategyNames(),
              ::testing::ElementsAre("pad_to_max_len", "random_pad_longest", "random_pad_multiple8",
                                     "megabatch_sorted", "buckets_quantile8", "buckets_optimal8",
                                     "token_budget", "buckets_optimal16_budget", "packed_ffd",
                                     "packed_bfd", "packed_histogram", "varlen_bfd"));
  // The budget is never below one full sequence.
  const StrategySizes small{/*max_len=*/256, /*batch_size=*/4, /*max_tokens=*/100, /*seed=*/1};
  EXPECT_EQ(LookupStrategy("packed_bfd", small)->max_tokens(), 256);
  EXPECT_EQ(LookupStrategy("pad_to_max_len", small)->pad_to(), PadTo::kMaxLength);
  EXPECT_EQ(LookupStrategy("varlen_bfd", small)->packed_layout(), Layout::kVarlen);
  EXPECT_EQ(LookupStrategy("packed_histogram", small)->pack_window(), 0);
}

TEST(StrategyRegistryTest, E2eStrategiesShareOneBudget) {
  EXPECT_THAT(StrategyNames(StrategyKind::kE2e),
              ::testing::ElementsAre("pad_to_max", "pad_longest", "hf_group_by_length",
                                     "token_budget_buckets", "packed_dense", "packed_varlen"));
  for (const char* padded : {"pad_to_max", "pad_longest", "hf_group_by_length"}) {
    const PlannerOptions o = *LookupStrategy(padded, kSizes);
    EXPECT_TRUE(o.drop_last()) << padded;
    EXPECT_EQ(o.batch_size(), kSizes.batch_size) << padded;
  }
  for (const char* budgeted : {"token_budget_buckets", "packed_dense", "packed_varlen"}) {
    EXPECT_EQ(LookupStrategy(budgeted, kSizes)->max_tokens(), kSizes.max_tokens) << budgeted;
  }
  EXPECT_EQ(LookupStrategy("packed_dense", kSizes)->packed_layout(), Layout::kPacked);
  EXPECT_EQ(LookupStrategy("packed_varlen", kSizes)->packed_layout(), Layout::kVarlen);
  EXPECT_EQ(LookupStrategy("hf_group_by_length", kSizes)->sampler(), Sampler::kSortedMegabatch);
}

}  // namespace
}  // namespace padless::batching
