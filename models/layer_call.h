// Internal: what a custom autograd function over one encoder layer keeps in its context besides
// tensors (the layer's hyper-parameters and the attention context), so that its backward can
// re-run the layer. Shared by the checkpoint and the fused-layer functions.
#ifndef PADLESS_MODELS_LAYER_CALL_H_
#define PADLESS_MODELS_LAYER_CALL_H_

#include <torch/csrc/autograd/custom_function.h>

#include "padless/models/attention.h"
#include "padless/models/encoder_layer.h"
#include "padless/models/rng_state.h"

namespace padless::models::internal {

void SaveLayerCall(torch::autograd::AutogradContext* actx, const LayerSpec& spec,
                   const AttentionContext& ctx);
LayerSpec LoadLayerSpec(torch::autograd::AutogradContext* actx);
AttentionContext LoadAttentionContext(torch::autograd::AutogradContext* actx);

// The RNG streams as the forward found them, so that a recompute in backward draws the same
// dropout masks.
void SaveForwardRng(torch::autograd::AutogradContext* actx, const RngState& rng);
RngState LoadForwardRng(torch::autograd::AutogradContext* actx);

}  // namespace padless::models::internal

#endif  // PADLESS_MODELS_LAYER_CALL_H_
