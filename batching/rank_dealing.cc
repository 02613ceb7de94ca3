#include "rank_dealing.h"

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "step_balance.h"

namespace padless::batching::internal {
namespace {

// Splits `b` into two non-empty batches of the same layout. A batch of several rows is cut between
// rows; a single packed row and a varlen batch (one row of sequences) are cut between sequences, so
// that a packed batch of one row of many sequences can be shared too.
std::pair<BatchSpec, BatchSpec> Halve(const BatchSpec& b, const EpochBuilder& builder) {
  BatchSpec lo = b, hi = b;
  if (b.layout != Layout::kPadded && b.rows.size() == 1) {
    const auto& pieces = b.rows[0];
    const size_t half = pieces.size() / 2;
    lo.rows[0].assign(pieces.begin(), pieces.begin() + half);
    hi.rows[0].assign(pieces.begin() + half, pieces.end());
  } else {
    const size_t half = b.rows.size() / 2;
    lo.rows.assign(b.rows.begin(), b.rows.begin() + half);
    hi.rows.assign(b.rows.begin() + half, b.rows.end());
  }
  if (b.layout == Layout::kVarlen) {
    lo.length = lo.real_tokens();
    hi.length = hi.real_tokens();
    return {lo, hi};
  }
  // A fixed shape stays fixed; a longest-based one shrinks with the half.
  lo.length = std::min(b.length, builder.PadLength(lo.longest_row(), b.length));
  hi.length = std::min(b.length, builder.PadLength(hi.longest_row(), b.length));
  return {lo, hi};
}

// How many parts Halve can cut `b` into at most: its rows, or the sequences of its single row.
size_t Units(const BatchSpec& b) {
  if (b.layout == Layout::kPadded || b.rows.size() != 1) return b.rows.size();
  return b.rows[0].size();
}

// The batch to halve next: the costliest that can be halved (token slots, then real tokens: a
// fixed-shape packed batch keeps its slots when halved, so its fuller peers go first). None: size.
size_t CostliestSplittable(const std::vector<BatchSpec>& batches) {
  size_t pick = batches.size();
  for (size_t i = 0; i < batches.size(); ++i) {
    if (Units(batches[i]) < 2) continue;
    if (pick == batches.size()) {
      pick = i;
      continue;
    }
    const int64_t slots = batches[i].token_slots(), best_slots = batches[pick].token_slots();
    if (slots > best_slots ||
        (slots == best_slots && batches[i].real_tokens() > batches[pick].real_tokens())) {
      pick = i;
    }
  }
  return pick;
}

// Every rank must take the same number of steps, so the batch count must be a multiple of the
// world size (no example is dropped or repeated). First the costliest batches are halved, between
// rows or between the sequences of a row; once no batch holds two sequences, short ranks get
// empty batches: a step without data (zero loss weight, zero gradient in the all-reduce, see
// train_step.h). Fewer sequences than ranks is the one case that fails: a rank would have nothing
// to train on at all. Empty batches only arise when every batch holds one sequence, which sorted
// by cost puts them all in the cheapest step, so a rank gets at most one per epoch.
absl::Status MakeDivisible(std::vector<BatchSpec>& batches, size_t world, EpochBuilder& builder,
                           ShardReport* report) {
  if (world < 2 || batches.size() % world == 0) return absl::OkStatus();
  int64_t sequences = 0;
  for (const BatchSpec& b : batches) sequences += b.num_sequences();
  if (sequences < static_cast<int64_t>(world)) {
    const char* plural = sequences == 1 ? "" : "s";
    return absl::FailedPreconditionError(
        absl::StrCat("planner: the epoch has ", sequences, " sequence", plural, " for ", world,
                     " ranks, and every rank needs at least one: use at most ", sequences, " rank",
                     plural, " or more data"));
  }
  while (batches.size() % world != 0) {
    const size_t pick = CostliestSplittable(batches);
    if (pick == batches.size()) {
      BatchSpec empty;
      empty.layout = batches.front().layout;
      batches.push_back(std::move(empty));
      ++report->empty_batches;
      continue;
    }
    auto [lo, hi] = Halve(batches[pick], builder);
    batches[pick] = std::move(lo);
    batches.push_back(std::move(hi));
    ++report->batches_split;
  }
  return absl::OkStatus();
}

// Which batches form each step: sorted by cost (token slots), consecutive groups of `world` form
// one step, so that every rank of a step gets similar work. One rank keeps the sampler's order.
std::vector<size_t> BatchesByCost(const std::vector<int64_t>& cost, size_t world) {
  std::vector<size_t> by_cost(cost.size());
  std::iota(by_cost.begin(), by_cost.end(), 0);
  if (world > 1) {
    std::stable_sort(by_cost.begin(), by_cost.end(),
                     [&](size_t a, size_t b) { return cost[a] > cost[b]; });
  }
  return by_cost;
}

// The steps in a shuffled order; with longest_first, the costliest step first (an out-of-memory
// error then shows at once, not hours into the epoch).
std::vector<size_t> StepOrder(const std::vector<int64_t>& cost, const std::vector<size_t>& by_cost,
                              size_t world, bool longest_first, EpochBuilder& builder) {
  const size_t steps = by_cost.size() / world;
  std::vector<size_t> order(steps);
  std::iota(order.begin(), order.end(), 0);
  builder.batch_rng().Shuffle(order);
  if (!longest_first || steps < 2) return order;
  auto step_cost = [&](size_t s) {
    int64_t c = 0;
    for (size_t j = 0; j < world; ++j) c = std::max(c, cost[by_cost[s * world + j]]);
    return c;
  };
  size_t top = 0;
  for (size_t i = 1; i < steps; ++i) {
    if (step_cost(order[i]) > step_cost(order[top])) top = i;
  }
  std::swap(order[0], order[top]);
  return order;
}

// Deals each step's batches to the ranks, the heaviest to the rank with the least work so far,
// and reports the imbalance per step and over the epoch.
void DealSteps(std::vector<BatchSpec>& batches, const std::vector<size_t>& by_cost,
               const std::vector<size_t>& step_order, size_t world, int64_t max_sentences,
               EpochPlan* plan) {
  plan->ranks.assign(world, {});
  for (auto& r : plan->ranks) r.reserve(step_order.size());
  std::vector<int64_t> total(world, 0);
  double step_imbalance_sum = 0;
  std::vector<size_t> ranks_by_total(world);
  for (size_t s : step_order) {
    std::iota(ranks_by_total.begin(), ranks_by_total.end(), 0);
    std::stable_sort(ranks_by_total.begin(), ranks_by_total.end(),
                     [&](size_t a, size_t b) { return total[a] < total[b]; });
    std::vector<BatchSpec> step(world);
    for (size_t j = 0; j < world; ++j) step[j] = std::move(batches[by_cost[s * world + j]]);
    if (world > 1) BalanceVarlenStep(step, max_sentences);
    int64_t step_max = 0, step_sum = 0;
    for (size_t j = 0; j < world; ++j) {
      const int64_t c = step[j].token_slots();
      const size_t rank = ranks_by_total[j];
      total[rank] += c;
      step_max = std::max(step_max, c);
      step_sum += c;
      plan->ranks[rank].push_back(std::move(step[j]));
    }
    if (step_sum > 0) step_imbalance_sum += static_cast<double>(step_max) * world / step_sum - 1;
  }
  const size_t steps = step_order.size();
  plan->report.steps = static_cast<int64_t>(steps);
  plan->report.step_imbalance = steps == 0 ? 0 : step_imbalance_sum / steps;
  const int64_t total_sum = std::accumulate(total.begin(), total.end(), int64_t{0});
  const int64_t total_max = *std::max_element(total.begin(), total.end());
  plan->report.total_imbalance =
      total_sum == 0 ? 0 : static_cast<double>(total_max) * world / total_sum - 1;
}

}  // namespace

absl::StatusOr<EpochPlan> DealToRanks(std::vector<BatchSpec>& batches, size_t world,
                                      const PlannerOptions& options, EpochBuilder& builder) {
  EpochPlan plan;
  if (absl::Status s = MakeDivisible(batches, world, builder, &plan.report); !s.ok()) return s;
  std::vector<int64_t> cost(batches.size());
  for (size_t i = 0; i < batches.size(); ++i) cost[i] = batches[i].token_slots();
  const std::vector<size_t> by_cost = BatchesByCost(cost, world);
  const std::vector<size_t> order =
      StepOrder(cost, by_cost, world, options.longest_first(), builder);
  DealSteps(batches, by_cost, order, world, options.max_sentences(), &plan);
  return plan;
}

}  // namespace padless::batching::internal
