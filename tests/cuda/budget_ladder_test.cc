// BudgetLadder on synthetic cost curves: linear, flat-then-linear (the small steps' peak is the
// optimizer's, as on the H200), convex, out of memory above a row count, and bad input.
#include "padless/cuda/memory/budget_ladder.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <functional>

#include "absl/status/status.h"

namespace padless::cuda {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;
constexpr int64_t kTarget = 38 * 1024 * kMiB;

// Measures through `peak(rows)` (a negative value: out of memory) and counts the calls.
struct Curve {
  std::function<int64_t(int64_t)> peak;
  int calls = 0;
  int64_t largest_measured = 0;
  LadderMeasure Measure() {
    return [this](int64_t rows) -> absl::StatusOr<LadderStep> {
      ++calls;
      largest_measured = std::max(largest_measured, rows);
      const int64_t p = peak(rows);
      return LadderStep{rows, p < 0 ? 0 : p, p < 0};
    };
  }
  LadderStep At(int64_t rows) { return LadderStep{rows, peak(rows), false}; }
};

// The largest row count whose peak fits the target, by scanning.
int64_t BestByScan(const std::function<int64_t(int64_t)>& peak, int64_t limit) {
  int64_t best = 0;
  for (int64_t r = 1; r <= limit; ++r) {
    const int64_t p = peak(r);
    if (p >= 0 && p <= kTarget) best = r;
  }
  return best;
}

// The result fits, and is within 3% of the target or the best row count itself.
void ExpectGoodChoice(const LadderResult& r, const std::function<int64_t(int64_t)>& peak,
                      int64_t limit) {
  EXPECT_FALSE(r.best.oom);
  EXPECT_LE(r.best.peak_bytes, kTarget);
  EXPECT_EQ(r.best.peak_bytes, peak(r.best.rows));
  const int64_t best = BestByScan(peak, limit);
  EXPECT_LE(r.best.rows, best);
  EXPECT_TRUE(r.best.peak_bytes >= 0.97 * kTarget || r.best.rows == best)
      << r.best.rows << " rows, best " << best;
}

TEST(BudgetLadderTest, LinearCostIsFoundInFewRungs) {
  Curve c{[](int64_t rows) { return 1400 * kMiB + rows * 180 * kMiB; }};
  auto r = ClimbToTarget(c.Measure(), kTarget, c.At(2), c.At(1), std::nullopt, 50);
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectGoodChoice(*r, c.peak, 1000);
  EXPECT_LE(c.calls, 4);
  EXPECT_EQ(static_cast<int>(r->steps.size()), c.calls);
}

// Small steps all peak at the optimizer's fixed cost, so a fit of them allows a huge batch; the
// ladder must not jump there (it would run out of memory or exceed the budget by far).
TEST(BudgetLadderTest, FlatSmallStepsDoNotLaunchAHugeStep) {
  Curve c{[](int64_t rows) { return std::max(1530 * kMiB, 1000 * kMiB + rows * 180 * kMiB); }};
  auto r = ClimbToTarget(c.Measure(), kTarget, c.At(2), c.At(1), std::nullopt,
                         /*first_guess=*/19000 / 4);
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectGoodChoice(*r, c.peak, 1000);
  // Never more than max_growth x beyond a fitting step, never more than 4x the answer.
  EXPECT_LE(c.largest_measured, 4 * r->best.rows);
  EXPECT_LE(c.calls, 10);
}

TEST(BudgetLadderTest, ConvexCostConverges) {
  Curve c{[](int64_t rows) { return 500 * kMiB + rows * 20 * kMiB + rows * rows * kMiB / 8; }};
  auto r = ClimbToTarget(c.Measure(), kTarget, c.At(2), std::nullopt, std::nullopt, 8);
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectGoodChoice(*r, c.peak, 2000);
}

TEST(BudgetLadderTest, OutOfMemoryStepsAreBackedOffFrom) {
  // The device runs out at 150 rows, below the budget's 210.
  Curve c{[](int64_t rows) { return rows > 150 ? -1 : 1400 * kMiB + rows * 180 * kMiB; }};
  auto r = ClimbToTarget(c.Measure(), kTarget, c.At(2), c.At(1), std::nullopt, 300);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_LE(r->best.rows, 150);
  EXPECT_GE(r->best.rows, 140);
  EXPECT_FALSE(r->best.oom);
  EXPECT_LE(r->best.peak_bytes, kTarget);
}

TEST(BudgetLadderTest, AdjacentBoundsStopWithoutMeasuring) {
  Curve c{[](int64_t rows) { return rows * 20 * 1024 * kMiB; }};
  auto r = ClimbToTarget(c.Measure(), kTarget, c.At(1), std::nullopt, c.At(2), 100);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->best.rows, 1);
  EXPECT_EQ(c.calls, 0);
}

// Rows of 8192 tokens (issue 45): each row is a large share of the target, and the climb starts
// from one fitting row with no earlier step (the planner's small probes hold only shorter rows).
// Flash varlen in bf16, ModernBERT-base-like: 2.4 GiB fixed, about 1 GiB per 8192-token row.
TEST(BudgetLadderTest, LongRowsClimbFromOneFittingRow) {
  Curve c{[](int64_t rows) { return 2458 * kMiB + rows * 1000 * kMiB; }};
  auto r = ClimbToTarget(c.Measure(), kTarget, c.At(1), std::nullopt, std::nullopt, 9);
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectGoodChoice(*r, c.peak, 200);
  EXPECT_GE(r->best.rows, 30);
  EXPECT_LE(c.calls, 6);
  // The same rows, on a device that runs out of memory at 20 of them.
  Curve small{[](int64_t rows) { return rows > 20 ? -1 : 2458 * kMiB + rows * 1000 * kMiB; }};
  auto capped = ClimbToTarget(small.Measure(), kTarget, small.At(1), std::nullopt, std::nullopt, 9);
  ASSERT_TRUE(capped.ok()) << capped.status();
  EXPECT_FALSE(capped->best.oom);
  EXPECT_LE(capped->best.rows, 20);
  EXPECT_GE(capped->best.rows, 18);
}

// A budget that holds one long document but not two: one row, and nothing left to measure whether
// the second row was measured over the target or ran out of memory.
TEST(BudgetLadderTest, OneLongRowFitsTwoDoNot) {
  Curve c{[](int64_t rows) { return 2458 * kMiB + rows * 30 * 1024 * kMiB; }};
  for (const LadderStep& over : {c.At(2), LadderStep{2, 0, /*oom=*/true}}) {
    c.calls = 0;
    auto r = ClimbToTarget(c.Measure(), kTarget, c.At(1), std::nullopt, over, 100);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->best.rows, 1);
    EXPECT_EQ(c.calls, 0);
  }
}

TEST(BudgetLadderTest, BadStartAndMeasureErrorsAreReturned) {
  Curve c{[](int64_t rows) { return rows * kMiB; }};
  EXPECT_EQ(
      ClimbToTarget(c.Measure(), kTarget, LadderStep{0, 0, false}, std::nullopt, std::nullopt, 4)
          .status()
          .code(),
      absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ClimbToTarget(c.Measure(), kTarget, LadderStep{2, kTarget + 1, false}, std::nullopt,
                          std::nullopt, 4)
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  LadderMeasure failing = [](int64_t) -> absl::StatusOr<LadderStep> {
    return absl::InternalError("device lost");
  };
  auto r = ClimbToTarget(failing, kTarget, c.At(2), std::nullopt, std::nullopt, 4);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInternal);
  EXPECT_EQ(r.status().message(), "device lost");
}

}  // namespace
}  // namespace padless::cuda
