// Internal: AttentionBackend::kVarlenCudnn, cuDNN's fused attention (cuda/kernels'
// cudnn_attention.h) over an AttentionContext's packed sequences: the differentiable self-attention
// that Attend runs (an autograd function whose backward is cuDNN's), the [CLS]-rows attention of
// AttendFirstTokens, and the context's sequences as the kernels take them (the fused layer calls
// the kernels itself).
#ifndef PADLESS_MODELS_CUDNN_ATTENTION_H_
#define PADLESS_MODELS_CUDNN_ATTENTION_H_

#include <ATen/core/Tensor.h>

#include "padless/cuda/kernels/cudnn_attention.h"
#include "padless/models/attention.h"

namespace padless::models::internal {

// ctx's sequences as both the queries' and the keys'.
cuda::VarlenSequences SelfSequences(const AttentionContext& ctx);

// Attend's kVarlenCudnn: q, k, v [T, heads, head_dim] -> [T, heads * head_dim] in q's dtype
// (computed in bf16). Differentiable in q, k and v; the backward drops what the forward dropped.
at::Tensor AttendCudnn(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                       const AttentionContext& ctx, double dropout_p);

// AttendFirstTokens's kVarlenCudnn: q [n, heads, head_dim], one query per sequence, against the
// sequences' keys; empty sequences give zeros. No autograd (inference).
at::Tensor FirstTokensCudnn(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                            const AttentionContext& ctx);

}  // namespace padless::models::internal

#endif  // PADLESS_MODELS_CUDNN_ATTENTION_H_
