// Internal: the attention call of the fused layer (fused_layer.cc) and its backward, by backend:
// FA2 (at::_flash_attention_forward/backward) and cuDNN (cudnn_attention.h) called directly, with
// what their backward needs kept by the layer; the reference and grouped backends (no dropout)
// through Attend, differentiated by autograd in the backward.
#ifndef PADLESS_MODELS_FUSED_ATTENTION_H_
#define PADLESS_MODELS_FUSED_ATTENTION_H_

#include <ATen/core/Tensor.h>

#include <array>
#include <vector>

#include "padless/models/attention.h"

namespace padless::models::internal {

// What the layer keeps of its attention: the output [T, heads, head_dim], the softmax statistics
// and the dropout state (FA2: its seed and offset tensors; cuDNN: `rng`, int64 [2]).
struct KeptAttention {
  at::Tensor attended, lse, rng, unused;
};

// qkv: q, k, v [T, heads, head_dim] (the thirds of the QKV projection).
KeptAttention FusedAttentionForward(const std::vector<at::Tensor>& qkv, const AttentionContext& ctx,
                                    double dropout_p);

// dq, dk, dv for the output gradient `grad` [T, heads, head_dim].
std::array<at::Tensor, 3> FusedAttentionBackward(const at::Tensor& grad,
                                                 const std::vector<at::Tensor>& qkv,
                                                 const KeptAttention& kept,
                                                 const AttentionContext& ctx, double dropout_p);

}  // namespace padless::models::internal

#endif  // PADLESS_MODELS_FUSED_ATTENTION_H_
