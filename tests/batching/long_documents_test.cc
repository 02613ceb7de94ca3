// The planner and the packer at ModernBERT's length (issue 45): max_len 8192, a corpus mixing short
// texts with documents of 8192 tokens and longer. Every piece is placed exactly once, no row passes
// max_len, every batch keeps its token budget, and a budget that cannot hold one 8192-token
// sequence is a clear error rather than a silently raised budget or a dropped document.
#include <algorithm>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "gtest/gtest.h"
#include "padless/batching/packer.h"
#include "padless/batching/planner.h"
#include "plan_test_util.h"

namespace padless::batching {
namespace {

constexpr int64_t kLongLen = 8192;

// Short texts (a long-tailed mix up to 3000 tokens), documents of exactly 8192 tokens and a few
// longer than that (truncated or split), shuffled together.
std::vector<int64_t> MixedLengths() {
  std::vector<int64_t> lengths = testing::RandomLengths(600, 23, 3000);
  for (int i = 0; i < 12; ++i) lengths.push_back(kLongLen);
  for (int64_t over : {8193, 9000, 20000}) lengths.push_back(over);
  std::mt19937_64 rng(3);
  std::shuffle(lengths.begin(), lengths.end(), rng);
  return lengths;
}

using PieceSet = std::multiset<std::tuple<int64_t, int64_t, int64_t>>;

// Every rank's batches: each piece once, rows within max_len, batches within the token budget.
void CheckPlan(const Planner& planner, const std::vector<int64_t>& lengths, const EpochPlan& plan) {
  const PlannerOptions& o = planner.options();
  PieceSet seen;
  for (const std::vector<BatchSpec>& rank : plan.ranks) {
    for (const BatchSpec& b : rank) {
      for (const auto& row : b.rows) {
        int64_t used = 0;
        for (const Placement& p : row) {
          ASSERT_TRUE(p.FitsExample(lengths[p.example]));
          ASSERT_LE(p.length, kLongLen);
          seen.emplace(p.example, p.start, p.length);
          used += p.length;
        }
        if (b.layout != Layout::kVarlen) {
          ASSERT_LE(used, b.length);
        }
      }
      if (b.layout != Layout::kVarlen) {
        ASSERT_LE(b.length, kLongLen);
      }
      if (o.max_tokens() > 0 && o.sampler() != Sampler::kRandom) {
        ASSERT_LE(b.token_slots(), o.max_tokens()) << "token budget exceeded";
      }
    }
  }
  absl::StatusOr<std::vector<Placement>> pieces = planner.Pieces(lengths);
  ASSERT_TRUE(pieces.ok()) << pieces.status();
  PieceSet expected;
  for (const Placement& p : *pieces) expected.emplace(p.example, p.start, p.length);
  EXPECT_EQ(seen, expected) << "every piece exactly once";
}

std::vector<PlannerOptions> LongStrategies() {
  const PlannerOptions base = PlannerOptions().max_len(kLongLen).seed(5);
  return {
      // One 8192-token document fills a varlen batch; short ones pack together.
      PlannerOptions(base)
          .sampler(Sampler::kPacked)
          .packed_layout(Layout::kVarlen)
          .max_tokens(kLongLen),
      PlannerOptions(base)
          .sampler(Sampler::kPacked)
          .packed_layout(Layout::kVarlen)
          .max_tokens(3 * kLongLen),
      PlannerOptions(base).sampler(Sampler::kPacked).max_tokens(2 * kLongLen),
      PlannerOptions(base)
          .sampler(Sampler::kPacked)
          .pack_algorithm(PackAlgorithm::kHistogram)
          .max_tokens(kLongLen)
          .pack_window(0),
      PlannerOptions(base)
          .sampler(Sampler::kTokenBudget)
          .max_tokens(kLongLen)
          .pad_to(PadTo::kMultiple),
      PlannerOptions(base)
          .sampler(Sampler::kBucketed)
          .bucket_scheme(BucketScheme::kOptimal)
          .num_buckets(16)
          .max_tokens(2 * kLongLen),
      PlannerOptions(base).sampler(Sampler::kRandom).batch_size(4),
      PlannerOptions(base)
          .sampler(Sampler::kPacked)
          .packed_layout(Layout::kVarlen)
          .max_tokens(kLongLen)
          .over_long(OverLong::kSplit)
          .window_stride(512),
  };
}

TEST(LongDocumentsTest, EveryStrategyPlacesEachPieceOnceWithinItsBudget) {
  const std::vector<int64_t> lengths = MixedLengths();
  int config = 0;
  for (const PlannerOptions& o : LongStrategies()) {
    const Planner planner(o);
    for (int world : {1, 2}) {
      SCOPED_TRACE(::testing::Message() << "config " << config << " world " << world);
      absl::StatusOr<EpochPlan> plan = planner.PlanEpoch(lengths, 0, world);
      ASSERT_TRUE(plan.ok()) << plan.status();
      CheckPlan(planner, lengths, *plan);
      if (HasFatalFailure()) return;
    }
    ++config;
  }
}

TEST(LongDocumentsTest, AFullLengthDocumentGetsAVarlenBatchOfItsOwn) {
  std::vector<int64_t> lengths(40, 100);
  lengths[7] = kLongLen;
  lengths[30] = kLongLen;
  const Planner planner(PlannerOptions()
                            .sampler(Sampler::kPacked)
                            .packed_layout(Layout::kVarlen)
                            .max_len(kLongLen)
                            .max_tokens(kLongLen));
  absl::StatusOr<std::vector<BatchSpec>> plan = planner.Plan(lengths, 0);
  ASSERT_TRUE(plan.ok()) << plan.status();
  int alone = 0;
  for (const BatchSpec& b : *plan) {
    if (b.num_sequences() == 1 && b.real_tokens() == kLongLen) ++alone;
    EXPECT_LE(b.token_slots(), kLongLen);
  }
  EXPECT_EQ(alone, 2);
}

// A budget smaller than max_len could not hold a full-length document: the planner refuses it,
// naming the budget and the length, instead of raising the budget the user set (their memory
// bound) or dropping the document.
TEST(LongDocumentsTest, ABudgetBelowMaxLenIsAClearError) {
  const std::vector<int64_t> lengths = {100, kLongLen};
  for (const PlannerOptions& o :
       {PlannerOptions().sampler(Sampler::kPacked).packed_layout(Layout::kVarlen),
        PlannerOptions().sampler(Sampler::kTokenBudget),
        PlannerOptions().sampler(Sampler::kBucketed)}) {
    absl::StatusOr<std::vector<BatchSpec>> plan =
        Planner(PlannerOptions(o).max_len(kLongLen).max_tokens(4096)).Plan(lengths, 0);
    ASSERT_FALSE(plan.ok());
    const std::string m(plan.status().message());
    EXPECT_NE(m.find("max_tokens"), std::string::npos) << m;
    EXPECT_NE(m.find("4096"), std::string::npos) << m;
    EXPECT_NE(m.find("8192"), std::string::npos) << m;
  }
  // The packer itself: a piece longer than its capacity is an error naming both.
  absl::StatusOr<std::vector<std::vector<Placement>>> rows =
      Pack({Placement{0, 0, kLongLen, 0}}, PackOptions{4096});
  ASSERT_FALSE(rows.ok());
  EXPECT_NE(std::string(rows.status().message()).find("8192"), std::string::npos);
}

}  // namespace
}  // namespace padless::batching
