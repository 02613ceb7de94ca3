// Internal: ModernBERT's encoder layer (transformers' ModernBertEncoderLayer) as functions of its
// input and weights, in encoder_layer.h's LayerWeight order, so that EncoderLayerForward, its
// checkpointed form and the attention/FFN checkpoint scopes run it as they run BERT's layer:
//   h   = x + dropout(Wo(attention(rotary(Wqkv(attn_norm(x))))))   attn_norm: identity in layer 0
//   out = h + Wo'(dropout(act(value) * gate)),  value, gate = chunk(Wi(mlp_norm(h)), 2)
// Attention is global or a +-spec.window sliding window (windowed_attention.h), with the rotary
// table of its kind from the attention context. `int8` (CPU inference: PackInt8InferenceWeights
// with every_bias): the four GEMMs run with int8 weights (Int8Linear, biases included), the rest
// in fp32.
#ifndef PADLESS_MODELS_MODERNBERT_LAYER_H_
#define PADLESS_MODELS_MODERNBERT_LAYER_H_

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

#include "padless/models/attention.h"
#include "padless/models/encoder_config.h"
#include "padless/models/encoder_layer.h"
#include "padless/models/fused_layer.h"

namespace padless::models::internal {

// x: [T, H] (varlen context) or [B, L, H] (dense). The residual stream out, as x.
at::Tensor ModernBertAttentionBlock(const at::Tensor& x, at::TensorList weights,
                                    const LayerSpec& spec, const AttentionContext& ctx,
                                    const Int8LayerWeights* int8 = nullptr);
at::Tensor ModernBertFfnBlock(const at::Tensor& h, at::TensorList weights, const LayerSpec& spec,
                              const Int8LayerWeights* int8 = nullptr);

// One weight of a layer: its parameter name and initial value (undefined: the layer has none).
struct NamedInit {
  const char* name;
  at::Tensor init;
};
// Layer `index`'s weights in LayerWeight order: N(0, 0.02) in-projections, out-projections
// N(0, 0.02 / sqrt(2 x layers)) (transformers' initialisation, untruncated), zero biases, unit
// norm gains; biases only where the config has them, no attention norm in layer 0.
std::vector<NamedInit> ModernBertLayerInit(const EncoderConfig& config, int64_t index);

}  // namespace padless::models::internal

#endif  // PADLESS_MODELS_MODERNBERT_LAYER_H_
