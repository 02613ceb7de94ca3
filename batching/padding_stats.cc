#include "padless/batching/padding_stats.h"

#include <algorithm>
#include <set>
#include <tuple>

namespace padless::batching {
namespace {

// Nearest-rank percentile of sorted values.
int64_t Percentile(const std::vector<int64_t>& sorted, double p) {
  if (sorted.empty()) return 0;
  size_t rank = static_cast<size_t>(p / 100.0 * static_cast<double>(sorted.size()) + 0.999999);
  rank = std::min(std::max<size_t>(rank, 1), sorted.size());
  return sorted[rank - 1];
}

}  // namespace

PaddingStats ComputePaddingStats(const std::vector<BatchSpec>& plan) {
  PaddingStats s;
  std::vector<int64_t> slots;
  slots.reserve(plan.size());
  std::set<std::tuple<int, int64_t, int64_t>> shapes;
  for (const BatchSpec& b : plan) {
    s.sequences += b.num_sequences();
    s.real_tokens += b.real_tokens();
    const int64_t t = b.token_slots();
    s.token_slots += t;
    slots.push_back(t);
    const int64_t rows = b.layout == Layout::kVarlen ? 1 : static_cast<int64_t>(b.rows.size());
    shapes.emplace(static_cast<int>(b.layout), rows, b.length);
  }
  s.batches = static_cast<int64_t>(plan.size());
  s.padding_efficiency =
      s.token_slots == 0 ? 1.0 : static_cast<double>(s.real_tokens) / s.token_slots;
  s.distinct_shapes = static_cast<int64_t>(shapes.size());
  std::sort(slots.begin(), slots.end());
  s.tokens_per_batch_p50 = Percentile(slots, 50);
  s.tokens_per_batch_p99 = Percentile(slots, 99);
  s.max_tokens_per_batch = slots.empty() ? 0 : slots.back();
  return s;
}

}  // namespace padless::batching
