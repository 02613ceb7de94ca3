// Which heads and FFN neurons to remove: a pure, deterministic function of the model's shape, the
// importance scores (unit_importance.h) and the targets.
//
// Targets are shares of the ORIGINAL model's units (config.heads x layers, config.ffn x layers)
// that are gone once the plan is applied, so that K rounds of prune-and-fine-tune reach the same
// model size whatever the earlier rounds removed: round k of K asks for k/K of the final share.
//
// Scores are normalised per layer (divided by the layer's L2 norm, as Michel et al. and Hugging
// Face's bertology script do, since gradient magnitudes differ by depth) and ranked across all
// layers, lowest first; ties break by (layer, index). Every layer keeps at least one head. FFN
// neurons go in blocks of `ffn_multiple` (each from the layer whose next block scores lowest), so
// every width stays a multiple: tensor-core GEMMs (bf16 wants leading dimensions that are
// multiples of 8, FP8 of 16) keep their fast paths. The count removed is the nearest that whole
// blocks allow (within half a block per plan); a layer keeps at least one block.
#ifndef PADLESS_PRUNE_PRUNE_PLAN_H_
#define PADLESS_PRUNE_PRUNE_PLAN_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "padless/models/encoder_config.h"
#include "padless/prune/unit_importance.h"

namespace padless::prune {

struct PruneTargets {
  double heads = 0.0;  // share of the original heads removed, in [0, 1)
  double ffn = 0.0;    // share of the original FFN neurons removed, in [0, 1)
  int64_t ffn_multiple = 16;
};

// Per layer, the indices (into the layer as it is now, ascending) of the units that stay.
struct PrunePlan {
  std::vector<std::vector<int64_t>> keep_heads;
  std::vector<std::vector<int64_t>> keep_ffn;

  int64_t heads_left() const;
  int64_t ffn_left() const;
};

// InvalidArgument for targets out of range or scores that do not match `config`'s layers.
absl::StatusOr<PrunePlan> PlanPruning(const models::EncoderConfig& config,
                                      const UnitImportance& importance,
                                      const PruneTargets& targets);

}  // namespace padless::prune

#endif  // PADLESS_PRUNE_PRUNE_PLAN_H_
