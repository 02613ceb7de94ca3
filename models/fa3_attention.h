// Internal: AttentionBackend::kVarlenFa3, FlashAttention-3 (cuda/kernels' fa3_attention.h) over an
// AttentionContext's packed sequences: the differentiable self-attention of Attend and
// AttendWindowed (an autograd function whose backward is FA3's), the [CLS]-rows attention of
// AttendFirstTokens, and the test the fused layer asks before calling the kernels itself.
//
// FA3 runs where it can: built (PADLESS_FA3_ATTENTION), on an sm90 device, no dropout (FA3 has
// none), head dim 64, and bf16 or fp32 inputs (computed in bf16, as the FA2 path computes fp32).
// Every other call of the backend runs FA2 (at::_flash_attention_forward), so `--attention fa3`
// trains with dropout, runs in fp16, on other GPUs and on builds without FA3, with FA2's results
// there.
#ifndef PADLESS_MODELS_FA3_ATTENTION_H_
#define PADLESS_MODELS_FA3_ATTENTION_H_

#include <ATen/core/Tensor.h>

#include <cstdint>

#include "padless/cuda/kernels/fa3_attention.h"
#include "padless/models/attention.h"

namespace padless::models::internal {

// A self-attention call's sequences as FA3 takes them: `cu_seqlens` (int32 as the kernels need it)
// for both queries and keys, `max_seqlen` the longest.
cuda::VarlenSequences Fa3Sequences(const at::Tensor& cu_seqlens, int64_t max_seqlen);

// Whether FA3 runs a call on `device` with q, k, v of `dtype` and `head_dim`, dropping attention
// probabilities with `dropout_p` (else FA2 runs it). The one statement of the conditions above:
// the calls ask it through RunsFa3, kAuto's rule through EncoderClassifierImpl::Fa3RunsCalls.
bool Fa3RunsCall(const c10::Device& device, at::ScalarType dtype, int64_t head_dim,
                 double dropout_p);

// Fa3RunsCall for a call on q [T, heads, head_dim].
bool RunsFa3(const at::Tensor& q, double dropout_p);

// Attend's and AttendWindowed's kVarlenFa3 where RunsFa3: q, k, v [T, heads, 64] -> [T, heads *
// 64] in q's dtype; `window` as AttendWindowed's (-1: global). Differentiable in q, k and v.
at::Tensor AttendFa3(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                     const AttentionContext& ctx, int64_t window);

// AttendFirstTokens's kVarlenFa3 where RunsFa3: q [n, heads, 64], one query per sequence, against
// the sequences' keys; empty sequences give zeros. No autograd (inference).
at::Tensor FirstTokensFa3(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                          const AttentionContext& ctx);

}  // namespace padless::models::internal

#endif  // PADLESS_MODELS_FA3_ATTENTION_H_
