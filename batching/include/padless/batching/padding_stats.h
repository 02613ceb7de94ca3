// Padding statistics of a plan: how many token slots hold real tokens, how many distinct tensor
// shapes the plan produces (each one can cost a recompilation or allocator churn), and the spread
// of tokens per batch. Used by `padless bench-padding` and the benchmarks.
#ifndef PADLESS_BATCHING_PADDING_STATS_H_
#define PADLESS_BATCHING_PADDING_STATS_H_

#include <cstdint>
#include <vector>

#include "padless/batching/batch_spec.h"

namespace padless::batching {

struct PaddingStats {
  int64_t batches = 0;
  int64_t sequences = 0;
  int64_t real_tokens = 0;
  int64_t token_slots = 0;
  double padding_efficiency = 0;     // real_tokens / token_slots (1 when the plan is empty)
  int64_t distinct_shapes = 0;       // distinct (layout, rows, length)
  int64_t tokens_per_batch_p50 = 0;  // token slots per batch, nearest-rank percentiles
  int64_t tokens_per_batch_p99 = 0;
  int64_t max_tokens_per_batch = 0;
};

PaddingStats ComputePaddingStats(const std::vector<BatchSpec>& plan);

}  // namespace padless::batching

#endif  // PADLESS_BATCHING_PADDING_STATS_H_
