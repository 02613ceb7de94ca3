// CheckpointPolicy: which layers of the encoder, and which part of each (the whole layer, or only
// its feed-forward or attention block), activation checkpointing recomputes in backward. A plain
// value, parsed from and printed as the CLI's --checkpoint text; the recompute itself is
// checkpoint.h.
#ifndef PADLESS_MODELS_CHECKPOINT_POLICY_H_
#define PADLESS_MODELS_CHECKPOINT_POLICY_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace padless::models {

// What one checkpointed layer recomputes in backward.
enum class CheckpointScope {
  kLayer,      // the whole layer: keeps only its input
  kFfn,        // the feed-forward block: keeps the attention block's activations and its output,
               // drops the FFN's (the 4H-wide intermediate is the largest activation)
  kAttention,  // the attention block: keeps its input and the FFN block's activations
  // The fused layer (fused_layer.h) keeps its input and its LayerNorm-2 input, and recomputes up
  // to the FFN activation only: the FFN-out matmul and LayerNorm 2 are not re-run. Layers that
  // the fused layer cannot run (dense attention, pre-LN, no training) checkpoint as kLayer.
  kSelective,
};

struct CheckpointPolicy {
  // 0: no layer; 1: every layer; k: layers 0, k, 2k, ...
  int64_t every = 0;
  CheckpointScope scope = CheckpointScope::kLayer;
  // The last `keep_last` layers are not checkpointed. Backward starts with them, so their
  // activations would be recomputed right away: keeping the last one costs no peak memory (it
  // replaces the recompute) and saves its recompute; each further one costs one layer's
  // activations minus a boundary.
  int64_t keep_last = 0;

  static CheckpointPolicy None() { return {0}; }
  static CheckpointPolicy All() { return {1}; }
  // "none", or [ffn/ | attn/ | selective/] followed by "all" (when no block is named),
  // "every:K" or "keep_last:K" (K >= 1): which layers; the block, if named, is the part of each
  // of those layers that is recomputed ("ffn" alone: the FFN block of every layer; "selective":
  // see CheckpointScope::kSelective).
  static absl::StatusOr<CheckpointPolicy> Parse(const std::string& text);
  // The canonical text Parse accepts: "all", "every:2", "ffn", "attn/keep_last:1", ...
  std::string ToString() const;
  bool Checkpoints(int64_t layer, int64_t num_layers) const {
    return every > 0 && layer % every == 0 && layer < num_layers - keep_last;
  }
  bool operator==(const CheckpointPolicy& o) const {
    return every == o.every && (every == 0 || (scope == o.scope && keep_last == o.keep_last));
  }
  bool operator!=(const CheckpointPolicy& o) const { return !(*this == o); }
};

}  // namespace padless::models

#endif  // PADLESS_MODELS_CHECKPOINT_POLICY_H_
