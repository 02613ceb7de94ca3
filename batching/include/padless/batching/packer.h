// Bin packing of sequences into rows of a fixed capacity (packed rows of max_len tokens, or flat
// varlen batches of max_tokens): first-fit-decreasing and best-fit-decreasing in O(n log n), and a
// histogram packer in the spirit of Graphcore's SPFHP/LPFHP for millions of sequences.
#ifndef PADLESS_BATCHING_PACKER_H_
#define PADLESS_BATCHING_PACKER_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "padless/batching/batch_spec.h"

namespace padless::batching {

enum class PackAlgorithm {
  kFirstFitDecreasing,  // segment tree over the rows' free space: leftmost row that fits
  kBestFitDecreasing,   // free-space index: the fullest row that still fits
  kHistogram,           // best fit over the length histogram, groups identical rows (SPFHP-like)
};

struct PackOptions {
  int64_t capacity = 512;             // tokens per row; every piece must be <= capacity
  int64_t max_sequences_per_row = 0;  // 0: unlimited
  PackAlgorithm algorithm = PackAlgorithm::kBestFitDecreasing;
};

// Packs `pieces` (lengths already capped at the capacity) into rows. Every piece lands in exactly
// one row; pieces within a row keep decreasing length order. The result is deterministic: ties are
// broken by the pieces' order in the input, so shuffle the input to vary rows between epochs.
absl::StatusOr<std::vector<std::vector<Placement>>> Pack(absl::Span<const Placement> pieces,
                                                         const PackOptions& options);

// Fast path for benchmarks and statistics: packs bare lengths, returns the number of rows only.
absl::StatusOr<int64_t> CountPackedRows(absl::Span<const int64_t> lengths,
                                        const PackOptions& options);

}  // namespace padless::batching

#endif  // PADLESS_BATCHING_PACKER_H_
