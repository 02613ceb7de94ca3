// EpochBuilder: the planner's samplers and packers. It turns one epoch's pieces into batches in
// the sampler's order (random, sorted megabatches, buckets, token budgets or packed rows) and
// knows the padding policy's row length. Private to the planner.
#ifndef PADLESS_BATCHING_EPOCH_BUILDER_H_
#define PADLESS_BATCHING_EPOCH_BUILDER_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "padless/batching/batch_spec.h"
#include "padless/batching/bucket_boundaries.h"
#include "padless/batching/planner.h"
#include "planner_rng.h"

namespace padless::batching::internal {

class EpochBuilder {
 public:
  // Keeps a reference to `o`, which must outlive the builder.
  EpochBuilder(const PlannerOptions& o, int64_t epoch)
      : o_(o),
        order_rng_(StreamRng(o.seed(), epoch, 0)),
        batch_rng_(StreamRng(o.seed(), epoch, 1)) {}

  absl::StatusOr<std::vector<BatchSpec>> Build(std::vector<Placement> pieces,
                                               const Boundaries& boundaries);

  // Padded row length for a batch whose longest sequence is `longest`.
  int64_t PadLength(int64_t longest, int64_t boundary) const;

  BatchSpec PaddedBatch(const Placement* first, size_t n, int bucket, int64_t boundary) const;

  Rng& batch_rng() { return batch_rng_; }

 private:
  std::vector<BatchSpec> Chunked(const std::vector<Placement>& pieces, int bucket, int64_t size,
                                 int64_t boundary = 0);

  // HF group_by_length: megabatches of megabatch_factor * batch_size shuffled sequences, each
  // sorted by length (longest first) and cut into batches; batches are then shuffled.
  std::vector<BatchSpec> SortedMegabatches(std::vector<Placement> pieces);

  // Greedy token-budget batching of `pieces` in their order (fairseq batch_by_size): a batch
  // grows while (sequences + 1) * padded width fits max_tokens and max_sentences; a full batch
  // longer than batch_size_multiple is cut to a multiple of it, the rest starts the next batch.
  void BudgetBatches(const std::vector<Placement>& pieces, int bucket, int64_t boundary,
                     std::vector<BatchSpec>* out) const;

  std::vector<BatchSpec> TokenBudget(std::vector<Placement> pieces);

  std::vector<BatchSpec> Bucketed(const std::vector<Placement>& pieces, const Boundaries& bounds);

  absl::StatusOr<std::vector<BatchSpec>> Packed(const std::vector<Placement>& pieces);

  const PlannerOptions& o_;
  Rng order_rng_;
  Rng batch_rng_;
};

}  // namespace padless::batching::internal

#endif  // PADLESS_BATCHING_EPOCH_BUILDER_H_
