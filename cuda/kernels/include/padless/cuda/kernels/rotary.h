// RotaryEmbedding: rotary position embeddings (RoFormer; ModernBERT's form, transformers'
// apply_rotary_pos_emb) over a packed batch of tokens in one pass: each head's vector x, with
// halves x1 and x2, becomes (x1 c - x2 s, x2 c + x1 s), computed in fp32 (fp64 for fp64 x) and
// stored in x's dtype. CUDA tensors of bf16 / fp16 / fp32 use one kernel (one read and one write
// of x; the ATen form makes about nine passes); everything else the ATen ops (reference below).
//
// Not differentiable itself: the forward and backward body of an autograd function (the
// backward of a rotation is the inverse rotation, `inverse`). Errors throw c10::Error.
#ifndef PADLESS_CUDA_KERNELS_ROTARY_H_
#define PADLESS_CUDA_KERNELS_ROTARY_H_

#include <ATen/core/Tensor.h>

namespace padless::cuda {

// x: [T, heads, head_dim] floating, head_dim even (any strides; the kernel reads rows of
// contiguous heads in place, e.g. q or k as views into a fused QKV output). cos, sin: floating
// [T, head_dim] on x's device, the halves repeated (cos[:, i] == cos[:, i + head_dim / 2]).
// Returns a new contiguous [T, heads, head_dim] tensor in x's dtype; `inverse` rotates by the
// negative angles.
at::Tensor RotaryEmbedding(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin,
                           bool inverse = false);

namespace reference {
// The ATen ops, on any device (transformers' formula: x * cos + rotate_half(x) * sin).
at::Tensor RotaryEmbedding(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin,
                           bool inverse = false);
}  // namespace reference

}  // namespace padless::cuda

#endif  // PADLESS_CUDA_KERNELS_ROTARY_H_
