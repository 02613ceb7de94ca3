// Summary of a token-length distribution (count, mean, percentiles, share over a limit) and its
// histogram: what `padless tokenize stats` prints, and what one needs to choose max_length and
// bucket boundaries.
#ifndef PADLESS_CORPUS_LENGTH_STATS_H_
#define PADLESS_CORPUS_LENGTH_STATS_H_

#include <cstdint>
#include <vector>

#include "absl/types/span.h"

namespace padless::corpus {

struct LengthStats {
  int64_t count = 0;
  int64_t total = 0;
  double mean = 0.0;
  int64_t min = 0;
  int64_t p50 = 0;  // nearest-rank percentiles
  int64_t p90 = 0;
  int64_t p99 = 0;
  int64_t max = 0;
  int64_t over_limit = 0;         // lengths > limit
  double over_limit_share = 0.0;  // over_limit / count
};

// `limit` <= 0 disables the over-limit count.
LengthStats ComputeLengthStats(absl::Span<const int64_t> lengths, int64_t limit);

struct HistogramBin {
  int64_t lower = 0;  // inclusive
  int64_t upper = 0;  // exclusive
  int64_t count = 0;
};
// Bins of `bin_width` from 0 up to the maximum length; empty for no lengths.
std::vector<HistogramBin> LengthHistogram(absl::Span<const int64_t> lengths, int64_t bin_width);

}  // namespace padless::corpus

#endif  // PADLESS_CORPUS_LENGTH_STATS_H_
