// The one registry of batching-strategy names. Every name a user or a benchmark can give
// (`padless bench-padding`'s standard set, the end-to-end benchmark's strategies and the short
// aliases of `padless train --batching`) resolves here to the PlannerOptions it stands for, given
// the sizes of the run. Pure and deterministic: a name and sizes always give the same options.
#ifndef PADLESS_BATCHING_STRATEGY_REGISTRY_H_
#define PADLESS_BATCHING_STRATEGY_REGISTRY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "padless/batching/planner.h"

namespace padless::batching {

// The sizes a strategy is instantiated with. batch_size: sequences (or rows) per batch of the
// strategies without a token budget; max_tokens: token slots per batch, padding included, of the
// budgeted and packed ones (raised to max_len where smaller).
struct StrategySizes {
  int64_t max_len = 512;
  int64_t batch_size = 32;
  int64_t max_tokens = 16384;
  uint64_t seed = 1234;
};

// Which family a name belongs to, for listings.
enum class StrategyKind {
  kStandard,  // compared by `padless bench-padding` (StandardStrategyNames())
  kE2e,       // the end-to-end benchmark's strategies; padded ones drop the last partial batch
  kAlias,     // a short name for another entry (packed -> packed_bfd)
};

struct StrategyEntry {
  std::string name;
  StrategyKind kind;
  std::string alias_of;  // the entry an alias stands for; empty otherwise
};

// Every entry, in a stable order: standard, then e2e, then aliases.
const std::vector<StrategyEntry>& StrategyEntries();
// Every name, aliases included, in the order of StrategyEntries().
std::vector<std::string> StrategyNames();
// The standard set of `padless bench-padding`, in its row order.
std::vector<std::string> StandardStrategyNames();
// Names of one kind.
std::vector<std::string> StrategyNames(StrategyKind kind);

// The planner options of `name` (any entry, aliases included). An unknown name is
// InvalidArgument "unknown strategy 'x' (known: a, b, ...)" listing every name.
absl::StatusOr<PlannerOptions> LookupStrategy(absl::string_view name, const StrategySizes& sizes);

}  // namespace padless::batching

#endif  // PADLESS_BATCHING_STRATEGY_REGISTRY_H_
