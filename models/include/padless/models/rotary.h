// Rotary position embeddings (RoFormer; ModernBERT's form, transformers' apply_rotary_pos_emb):
// each head's query and key vector x becomes x * cos + rotate_half(x) * sin, with cos and sin of
// position x inv_freq (inv_freq_i = theta^(-2i / head_dim)) repeated over both halves. Computed
// in fp32 (fp64 for fp64 inputs) and returned in x's dtype, as transformers does.
#ifndef PADLESS_MODELS_ROTARY_H_
#define PADLESS_MODELS_ROTARY_H_

#include <ATen/core/Tensor.h>

#include <cstdint>

namespace padless::models {

// cos and sin for every token of a batch: fp32 [positions' shape..., head_dim]. Built once per
// batch and theta, shared by the layers of that theta.
struct RotaryTable {
  at::Tensor cos;
  at::Tensor sin;

  bool defined() const { return cos.defined(); }
};

// The table of integer `positions` (any shape; a token's place in its sequence) on their device.
RotaryTable BuildRotaryTable(const at::Tensor& positions, int64_t head_dim, double theta);

// x: [tokens..., heads, head_dim] whose leading dimensions are the table's ([T] varlen, [B, L]
// dense). Returns the rotated x in x's dtype (contiguous); differentiable: cuda::RotaryEmbedding
// forward and, for the backward, the inverse rotation (one kernel each on a GPU; the ATen formula
// elsewhere).
at::Tensor ApplyRotary(const at::Tensor& x, const RotaryTable& table);

}  // namespace padless::models

#endif  // PADLESS_MODELS_ROTARY_H_
