// Per-layer activation checkpointing: which layers to checkpoint (none | all | every:k), and the
// custom autograd function that drops a layer's activations in forward and recomputes them in
// backward with the forward's RNG state (identical dropout masks) and autocast state.
#ifndef PADLESS_MODELS_CHECKPOINT_H_
#define PADLESS_MODELS_CHECKPOINT_H_

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "padless/models/attention.h"
#include "padless/models/encoder_layer.h"

namespace padless::models {

struct CheckpointPolicy {
  // 0: no layer; 1: every layer; k: layers 0, k, 2k, ...
  int64_t every = 0;

  static CheckpointPolicy None() { return {0}; }
  static CheckpointPolicy All() { return {1}; }
  // "none", "all" or "every:K" (K >= 1).
  static absl::StatusOr<CheckpointPolicy> Parse(const std::string& text);
  std::string ToString() const;
  bool Checkpoints(int64_t layer) const { return every > 0 && layer % every == 0; }
};

// EncoderLayerForward that keeps only its input (and the context) for backward. `weights` are
// passed as autograd inputs so their gradients flow; weights that do not require grad (frozen
// layers) are skipped.
at::Tensor CheckpointedLayerForward(const at::Tensor& x, at::TensorList weights,
                                    const LayerSpec& spec, const AttentionContext& ctx);

}  // namespace padless::models

#endif  // PADLESS_MODELS_CHECKPOINT_H_
