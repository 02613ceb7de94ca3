#include "padless/batching/shard_balance.h"

#include <algorithm>

#include "absl/strings/str_format.h"

namespace padless::batching {

ShardBalance MeasureShardBalance(const EpochPlan& plan, int64_t grad_accum) {
  ShardBalance out;
  if (plan.ranks.empty() || grad_accum < 1) return out;
  const size_t batches = plan.ranks[0].size();
  const double world = static_cast<double>(plan.ranks.size());
  for (size_t first = 0; first < batches; first += grad_accum) {
    const size_t last = std::min(batches, first + static_cast<size_t>(grad_accum));
    int64_t most = 0, sum = 0;
    for (const auto& rank : plan.ranks) {
      int64_t tokens = 0;
      for (size_t b = first; b < last; ++b) tokens += rank[b].real_tokens();
      most = std::max(most, tokens);
      sum += tokens;
    }
    const double imbalance = sum > 0 ? most * world / sum - 1 : 0;
    out.step_imbalance.push_back(imbalance);
    out.mean_imbalance += imbalance;
    out.max_imbalance = std::max(out.max_imbalance, imbalance);
    if (imbalance > 0.02) ++out.steps_over_2_percent;
  }
  if (out.step_imbalance.empty()) return out;
  out.mean_imbalance /= out.step_imbalance.size();
  std::vector<double> sorted = out.step_imbalance;
  std::sort(sorted.begin(), sorted.end());
  out.p99_imbalance = sorted[std::min(sorted.size() - 1, sorted.size() * 99 / 100)];
  return out;
}

std::string ShardBalance::Summary() const {
  return absl::StrFormat(
      "real-token imbalance between ranks per step: mean %.2f%%, p99 %.2f%%, max %.2f%% (%d of "
      "%d steps over 2%%)",
      100 * mean_imbalance, 100 * p99_imbalance, 100 * max_imbalance, steps_over_2_percent,
      step_imbalance.size());
}

}  // namespace padless::batching
