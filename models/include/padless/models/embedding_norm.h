// LayerNorm(a + b) over the last dimension, differentiable: the embeddings' sum of the word and
// position lookups and its LayerNorm. On the GPU, with fp32 rows (the embedding tables' dtype in
// training), it runs as one fused kernel forward and one backward (cuda::DropoutResidualLayerNorm
// without dropout) instead of an add, ATen's LayerNorm and its three backward kernels; elsewhere
// it is exactly at::layer_norm(a + b, ...). Saves the sum, as at::layer_norm saves its input.
#ifndef PADLESS_MODELS_EMBEDDING_NORM_H_
#define PADLESS_MODELS_EMBEDDING_NORM_H_

#include <ATen/core/Tensor.h>

namespace padless::models {

// a, b: [..., H], the same shape and dtype; gamma, beta: [H].
at::Tensor SumLayerNorm(const at::Tensor& a, const at::Tensor& b, const at::Tensor& gamma,
                        const at::Tensor& beta, double eps);

}  // namespace padless::models

#endif  // PADLESS_MODELS_EMBEDDING_NORM_H_
