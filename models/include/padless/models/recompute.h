// Activation checkpointing's recompute: the custom autograd function that drops a layer part's
// activations in forward and recomputes them in backward with the forward's RNG state (identical
// dropout masks) and autocast state. Which layers and parts are checkpointed is the
// CheckpointPolicy (checkpoint_policy.h).
#ifndef PADLESS_MODELS_RECOMPUTE_H_
#define PADLESS_MODELS_RECOMPUTE_H_

#include <ATen/core/Tensor.h>

#include "padless/models/attention.h"
#include "padless/models/checkpoint_policy.h"
#include "padless/models/encoder_layer.h"

namespace padless::models {

// EncoderLayerForward with the part `scope` names checkpointed: that part keeps only its input
// (and the context) for backward. `weights` are passed as autograd inputs so their gradients
// flow; weights that do not require grad (frozen layers) are skipped.
at::Tensor CheckpointedLayerForward(const at::Tensor& x, at::TensorList weights,
                                    const LayerSpec& spec, const AttentionContext& ctx,
                                    CheckpointScope scope = CheckpointScope::kLayer);

}  // namespace padless::models

#endif  // PADLESS_MODELS_RECOMPUTE_H_
