// The padding-strategy comparison behind `padless bench-padding`: a standard set of planner
// configurations, one measured row per strategy (padding efficiency, shapes, tokens per batch,
// planning and collation time), and the rows written as a table, CSV or an SVG bar chart.
#ifndef PADLESS_BATCHING_PADDING_REPORT_H_
#define PADLESS_BATCHING_PADDING_REPORT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "padless/batching/planner.h"
#include "padless/corpus/tokenized_corpus.h"

namespace padless::batching {

struct NamedStrategy {
  std::string name;
  PlannerOptions options;
};

// The strategies compared by default, strategy_registry.h's standard set: padding to max_len,
// random batches padded to the longest (and to a multiple of 8), HF megabatch sorting, quantile
// and optimal buckets, fairseq token budgets (plain and within optimal buckets), packed rows (FFD,
// BFD, histogram) and flat varlen.
// batch_size sequences (or rows) per batch; max_tokens for the budgeted ones.
std::vector<NamedStrategy> StandardStrategies(int64_t max_len, int64_t batch_size,
                                              int64_t max_tokens, uint64_t seed);

struct StrategyRow {
  std::string strategy;
  double padding_efficiency = 0;
  int64_t batches = 0;
  int64_t distinct_shapes = 0;
  int64_t tokens_per_batch_p50 = 0;
  int64_t tokens_per_batch_p99 = 0;
  double plan_ms = 0;
  double collate_ms = 0;  // collating every batch of the epoch on one thread
  int64_t real_tokens = 0;
};

// Plans epoch 0 with every strategy and collates all its batches. Errors name the strategy.
absl::StatusOr<std::vector<StrategyRow>> ComparePaddingStrategies(
    const corpus::TokenizedCorpus& corpus, const std::vector<NamedStrategy>& strategies);

// The columns: strategy,padding_efficiency,batches,distinct_shapes,tokens_per_batch_p50,
// tokens_per_batch_p99,plan_ms,collate_ms.
std::string FormatTable(const std::vector<StrategyRow>& rows);
std::string FormatCsv(const std::vector<StrategyRow>& rows);
// A horizontal bar chart of padding efficiency per strategy (self-contained SVG).
std::string FormatSvg(const std::vector<StrategyRow>& rows, const std::string& title);

}  // namespace padless::batching

#endif  // PADLESS_BATCHING_PADDING_REPORT_H_
