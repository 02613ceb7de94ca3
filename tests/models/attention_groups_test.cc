// The grouped varlen attention (attention_groups.h): the plan is an optimal partition (against
// brute force), its index tensors address every token once, and its attention equals the
// one-call-per-sequence reference in values and gradients, empty sequences included.
#include "padless/models/attention_groups.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <random>
#include <utility>
#include <vector>

#include "padless/models/attention.h"

namespace padless::models {
namespace {

int64_t PlanCost(const std::vector<LengthGroup>& plan, int64_t call_pairs) {
  int64_t cost = 0;
  for (const LengthGroup& g : plan) {
    cost += call_pairs + static_cast<int64_t>(g.sequences.size()) * g.length * g.length;
  }
  return cost;
}

// The least cost over every way of cutting the sorted non-empty lengths into runs.
int64_t BruteForceCost(std::vector<int64_t> lengths, int64_t call_pairs) {
  lengths.erase(std::remove(lengths.begin(), lengths.end(), 0), lengths.end());
  std::sort(lengths.begin(), lengths.end());
  const size_t m = lengths.size();
  if (m == 0) return 0;
  int64_t best = std::numeric_limits<int64_t>::max();
  for (uint32_t cuts = 0; cuts < (1u << (m - 1)); ++cuts) {
    int64_t cost = 0;
    size_t start = 0;
    for (size_t i = 0; i < m; ++i) {
      if (i + 1 == m || (cuts >> i & 1u)) {
        cost += call_pairs + static_cast<int64_t>(i + 1 - start) * lengths[i] * lengths[i];
        start = i + 1;
      }
    }
    best = std::min(best, cost);
  }
  return best;
}

TEST(PlanLengthGroupsTest, IsAnOptimalPartitionOfTheNonEmptySequences) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<int64_t> lengths(rng() % 11);
    for (int64_t& l : lengths) l = rng() % 4 == 0 ? 0 : 1 + rng() % 70;
    const int64_t call_pairs = std::vector<int64_t>{0, 1, 300, 1024, 100000}[trial % 5];
    const std::vector<LengthGroup> plan = PlanLengthGroups(lengths, call_pairs);
    EXPECT_EQ(PlanCost(plan, call_pairs), BruteForceCost(lengths, call_pairs)) << trial;
    std::vector<int> seen(lengths.size(), 0);
    int64_t previous = 0;
    for (const LengthGroup& g : plan) {
      ASSERT_FALSE(g.sequences.empty());
      int64_t longest = 0;
      for (const int64_t s : g.sequences) {
        ++seen[s];
        EXPECT_GE(lengths[s], previous) << "groups run shortest first";
        previous = lengths[s];
        longest = std::max(longest, lengths[s]);
      }
      EXPECT_EQ(g.length, longest);
    }
    for (size_t i = 0; i < lengths.size(); ++i) EXPECT_EQ(seen[i], lengths[i] > 0 ? 1 : 0) << i;
  }
}

TEST(PlanLengthGroupsTest, CallCostTradesCallsAgainstPadding) {
  const std::vector<int64_t> lengths = {5, 9, 5, 30, 9, 30};
  // Free calls: one group per distinct length (no padding at all).
  EXPECT_EQ(PlanLengthGroups(lengths, 0).size(), 3u);
  // Dear calls: one group.
  const std::vector<LengthGroup> one = PlanLengthGroups(lengths, 1 << 20);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].length, 30);
  EXPECT_EQ(one[0].sequences, (std::vector<int64_t>{0, 2, 1, 4, 3, 5}));
  EXPECT_TRUE(PlanLengthGroups({0, 0}).empty());
  EXPECT_TRUE(PlanLengthGroups({}).empty());
  EXPECT_THROW(PlanLengthGroups({3, -1}), c10::Error);
  EXPECT_THROW(PlanLengthGroups({3}, -1), c10::Error);
}

TEST(PaddedGroupsTest, EverySlotReadsItsOwnSequenceAndEveryRowHasOneSlot) {
  const std::vector<int64_t> offsets = {0, 3, 3, 10, 11, 15};  // lengths 3, 0, 7, 1, 4
  const PaddedGroups pg = BuildPaddedGroups(offsets, at::kCPU, /*call_pairs=*/30);
  ASSERT_FALSE(pg.empty());
  EXPECT_EQ(pg.sequences, 5);
  EXPECT_EQ(pg.order.numel(), 4);
  const at::Tensor gather = pg.gather;
  const at::Tensor slot = pg.token_slot;
  ASSERT_EQ(slot.numel(), 15);
  for (int64_t row = 0; row < 15; ++row) {
    EXPECT_EQ(gather[slot[row].item<int64_t>()].item<int64_t>(), row) << row;
  }
  for (const PaddedGroups::Group& g : pg.groups) {
    for (int64_t r = 0; r < g.size; ++r) {
      const int64_t seq = pg.order[g.first_rank + r].item<int64_t>();
      for (int64_t t = 0; t < g.length; ++t) {
        const int64_t row = gather[g.first_slot + r * g.length + t].item<int64_t>();
        EXPECT_GE(row, offsets[seq]);
        EXPECT_LT(row, offsets[seq + 1]);
        if (g.key_mask.defined()) {
          EXPECT_EQ(g.key_mask[r][0][0][t].item<bool>(), t < offsets[seq + 1] - offsets[seq]);
        }
      }
    }
  }
  EXPECT_THROW(BuildPaddedGroups({1, 3}, at::kCPU), c10::Error);
  EXPECT_TRUE(BuildPaddedGroups({0, 0, 0}, at::kCPU).empty());
}

struct VarlenQkv {
  at::Tensor q, k, v;
  AttentionContext ctx;
};

// Random q, k, v [T, heads, d] in double over sequences of `lengths`, with the context of
// `backend`.
VarlenQkv RandomQkv(const std::vector<int64_t>& lengths, AttentionBackend backend) {
  std::vector<int64_t> offsets = {0};
  for (const int64_t l : lengths) offsets.push_back(offsets.back() + l);
  at::manual_seed(11);
  const auto options = at::TensorOptions().dtype(at::kDouble);
  VarlenQkv r;
  r.q = at::randn({offsets.back(), 3, 8}, options);
  r.k = at::randn({offsets.back(), 3, 8}, options);
  r.v = at::randn({offsets.back(), 3, 8}, options);
  r.ctx.backend = backend;
  r.ctx.cu_seqlens = at::tensor(offsets, at::kInt);
  r.ctx.max_seqlen = *std::max_element(lengths.begin(), lengths.end());
  PrepareHostPlan(r.ctx);
  return r;
}

const std::vector<int64_t> kMixedLengths = {7, 1, 0, 19, 7, 3, 30, 0, 12, 2, 8};

TEST(GroupedAttentionTest, EqualsTheReferenceInValuesAndGradients) {
  VarlenQkv ref = RandomQkv(kMixedLengths, AttentionBackend::kVarlenReference);
  VarlenQkv grouped = RandomQkv(kMixedLengths, AttentionBackend::kVarlenGrouped);
  ASSERT_GT(grouped.ctx.groups.groups.size(), 1u) << "the test needs several groups";
  std::vector<at::Tensor> grads[2];
  at::Tensor outs[2];
  VarlenQkv* runs[2] = {&ref, &grouped};
  const at::Tensor upstream = at::randn({ref.q.size(0), 24}, at::kDouble);
  for (int i = 0; i < 2; ++i) {
    VarlenQkv& r = *runs[i];
    for (at::Tensor* t : {&r.q, &r.k, &r.v}) t->requires_grad_(true);
    outs[i] = Attend(r.q, r.k, r.v, r.ctx, /*dropout_p=*/0.0);
    (outs[i] * upstream).sum().backward();
    grads[i] = {r.q.grad(), r.k.grad(), r.v.grad()};
  }
  ASSERT_EQ(outs[1].sizes(), outs[0].sizes());
  EXPECT_LE((outs[0] - outs[1]).abs().max().item<double>(), 1e-12);
  for (int j = 0; j < 3; ++j) {
    EXPECT_LE((grads[0][j] - grads[1][j]).abs().max().item<double>(), 1e-12) << j;
  }
}

TEST(GroupedAttentionTest, FirstTokensEqualTheReferenceAndEmptySequencesGiveZeros) {
  VarlenQkv ref = RandomQkv(kMixedLengths, AttentionBackend::kVarlenReference);
  VarlenQkv grouped = RandomQkv(kMixedLengths, AttentionBackend::kVarlenGrouped);
  // Each sequence's first query (an empty one takes any row: its result must be zeros).
  std::vector<int64_t> first;
  for (size_t i = 0; i + 1 < ref.ctx.host_offsets.size(); ++i) {
    first.push_back(std::min(ref.ctx.host_offsets[i], ref.q.size(0) - 1));
  }
  const at::Tensor index = at::tensor(first, at::kLong);
  const at::Tensor expected =
      AttendFirstTokens(ref.q.index_select(0, index), ref.k, ref.v, ref.ctx);
  const at::Tensor got =
      AttendFirstTokens(grouped.q.index_select(0, index), grouped.k, grouped.v, grouped.ctx);
  ASSERT_EQ(got.sizes(), expected.sizes());
  EXPECT_LE((got - expected).abs().max().item<double>(), 1e-12);
  EXPECT_EQ(got[2].abs().max().item<double>(), 0.0);
  EXPECT_EQ(got[7].abs().max().item<double>(), 0.0);
  // A context planned for another batch is refused, not misread.
  EXPECT_THROW(AttendFirstTokens(grouped.q.narrow(0, 0, 3), grouped.k, grouped.v, grouped.ctx),
               c10::Error);
}

// Inference on the CPU (no autograd: each group as batched matrix products instead of SDPA), on
// q, k, v as views of one QKV tensor as the fused layer makes them, against the per-sequence
// reference, in double and in float.
TEST(GroupedAttentionTest, InferenceByMatmulEqualsTheReference) {
  const c10::NoGradGuard no_grad;
  std::vector<int64_t> offsets = {0};
  for (const int64_t l : kMixedLengths) offsets.push_back(offsets.back() + l);
  AttentionContext ref, grouped;
  for (AttentionContext* c : {&ref, &grouped}) {
    c->cu_seqlens = at::tensor(offsets, at::kInt);
    c->max_seqlen = *std::max_element(kMixedLengths.begin(), kMixedLengths.end());
  }
  ref.backend = AttentionBackend::kVarlenReference;
  grouped.backend = AttentionBackend::kVarlenGrouped;
  PrepareHostPlan(ref);
  PrepareHostPlan(grouped);
  ASSERT_GT(grouped.groups.groups.size(), 1u) << "the test needs several groups";
  std::vector<int64_t> first;  // each sequence's first row (an empty one's query is any row)
  for (size_t i = 0; i + 1 < offsets.size(); ++i) {
    first.push_back(std::min(offsets[i], offsets.back() - 1));
  }
  const at::Tensor first_rows = at::tensor(first, at::kLong);
  at::manual_seed(5);
  for (const auto& [dtype, tolerance] : {std::pair{at::kDouble, 1e-12}, std::pair{at::kFloat, 1e-5}}) {
    // Larger scores than randn's, so that the softmax is far from uniform.
    const at::Tensor qkv = at::randn({offsets.back(), 3 * 3 * 8}, dtype) * 2;
    const std::vector<at::Tensor> p = qkv.view({offsets.back(), 3, 3, 8}).unbind(1);
    const at::Tensor expected = Attend(p[0], p[1], p[2], ref, 0.0);
    const at::Tensor got = Attend(p[0], p[1], p[2], grouped, 0.0);
    ASSERT_EQ(got.sizes(), expected.sizes());
    EXPECT_LE((got - expected).abs().max().item<double>(), tolerance) << dtype;
    const at::Tensor q1 = p[0].index_select(0, first_rows);
    const at::Tensor first_got = AttendFirstTokens(q1, p[1], p[2], grouped);
    EXPECT_LE((first_got - AttendFirstTokens(q1, p[1], p[2], ref)).abs().max().item<double>(),
              tolerance)
        << dtype;
    EXPECT_EQ(first_got[2].abs().max().item<double>(), 0.0);
  }
}

TEST(GroupedAttentionTest, AllEmptyBatchGivesZeroRows) {
  VarlenQkv r = RandomQkv({0, 0}, AttentionBackend::kVarlenGrouped);
  EXPECT_TRUE(r.ctx.groups.empty());
  EXPECT_EQ(Attend(r.q, r.k, r.v, r.ctx, 0.0).sizes(), (std::vector<int64_t>{0, 24}));
  const at::Tensor first = AttendFirstTokens(at::zeros({2, 3, 8}, at::kDouble), r.k, r.v, r.ctx);
  EXPECT_EQ(first.abs().sum().item<double>(), 0.0);
}

}  // namespace
}  // namespace padless::models
