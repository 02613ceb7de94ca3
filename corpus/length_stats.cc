#include "padless/corpus/length_stats.h"

#include <algorithm>

namespace padless::corpus {
namespace {

// Nearest-rank percentile of sorted values: the smallest value with at least p% at or below it.
int64_t Percentile(const std::vector<int64_t>& sorted, int p) {
  const size_t n = sorted.size();
  size_t rank = (static_cast<size_t>(p) * n + 99) / 100;  // ceil(p * n / 100)
  rank = std::clamp<size_t>(rank, 1, n);
  return sorted[rank - 1];
}

}  // namespace

LengthStats ComputeLengthStats(absl::Span<const int64_t> lengths, int64_t limit) {
  LengthStats s;
  if (lengths.empty()) return s;
  std::vector<int64_t> sorted(lengths.begin(), lengths.end());
  std::sort(sorted.begin(), sorted.end());
  s.count = static_cast<int64_t>(sorted.size());
  for (int64_t v : sorted) {
    s.total += v;
    if (limit > 0 && v > limit) ++s.over_limit;
  }
  s.mean = static_cast<double>(s.total) / static_cast<double>(s.count);
  s.min = sorted.front();
  s.max = sorted.back();
  s.p50 = Percentile(sorted, 50);
  s.p90 = Percentile(sorted, 90);
  s.p99 = Percentile(sorted, 99);
  s.over_limit_share = static_cast<double>(s.over_limit) / static_cast<double>(s.count);
  return s;
}

std::vector<HistogramBin> LengthHistogram(absl::Span<const int64_t> lengths, int64_t bin_width) {
  std::vector<HistogramBin> bins;
  if (lengths.empty() || bin_width <= 0) return bins;
  const int64_t max = *std::max_element(lengths.begin(), lengths.end());
  const int64_t num_bins = max / bin_width + 1;
  bins.resize(static_cast<size_t>(num_bins));
  for (int64_t b = 0; b < num_bins; ++b) {
    bins[b].lower = b * bin_width;
    bins[b].upper = (b + 1) * bin_width;
  }
  for (int64_t v : lengths) ++bins[static_cast<size_t>(std::max<int64_t>(v, 0) / bin_width)].count;
  return bins;
}

}  // namespace padless::corpus
