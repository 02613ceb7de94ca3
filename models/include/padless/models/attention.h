// Attention backends of the encoder. The same multi-head attention runs on a dense [B, L, H] layout
// with a boolean mask (padding or block-diagonal), or on a varlen [T, H] layout of real tokens
// only, described by cu_seqlens (flash attention on CUDA, a per-sequence SDPA loop as the CPU
// reference, and SDPA per group of similar lengths on the CPU).
#ifndef PADLESS_MODELS_ATTENTION_H_
#define PADLESS_MODELS_ATTENTION_H_

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "padless/models/attention_groups.h"
#include "padless/models/rotary.h"

namespace padless::models {

enum class AttentionBackend {
  kAuto,             // chosen per batch (EncoderClassifierImpl::ResolveBackend)
  kDense,            // at::scaled_dot_product_attention with a bool mask; any device and dtype
  kVarlenFlash,      // at::_flash_attention_forward with cu_seqlens; CUDA, bf16/fp16
  kVarlenEfficient,  // memory-efficient attention with cu_seqlens; CUDA, fp32 too (no autocast)
  kVarlenReference,  // the varlen semantics as one SDPA call per sequence; for tests
  kVarlenGrouped,    // one SDPA call per group of similar lengths (attention_groups.h); CPU
  kVarlenCudnn,      // cuDNN's fused attention (cuda/kernels' cudnn_attention.h); CUDA sm90, bf16
  kVarlenFa3,        // FlashAttention-3 (models/fa3_attention.h) where built, else FA2; CUDA sm90
};

absl::StatusOr<AttentionBackend> ParseAttentionBackend(const std::string& name);
std::string AttentionBackendName(AttentionBackend b);
// Whether the backend attends over packed tokens [T, H] delimited by cu_seqlens.
bool IsVarlen(AttentionBackend b);

// kAuto's choice for packed and varlen rows on a CUDA device in bf16 or fp16: FA3 where it would
// run the model's calls (`fa3_runs`: EncoderClassifierImpl::Fa3RunsCalls: built, an sm90 device,
// bf16, head dim 64, no attention dropout) and the batch's sequences average at least
// kFa3MinMeanTokens real tokens, LibTorch's FA2 otherwise. FA3 starts a 128-query tile per
// (sequence, head) with more set-up than FA2's, so short sequences, which leave most of the tile
// empty, run faster on FA2 (the figures: attention.cc).
inline constexpr int64_t kFa3MinMeanTokens = 128;
AttentionBackend AutoHalfPrecisionVarlenBackend(bool fa3_runs, int64_t real_tokens,
                                                int64_t sequences);

// What one attention call needs besides q, k and v. Built once per batch, shared by all layers.
struct AttentionContext {
  AttentionBackend backend = AttentionBackend::kDense;
  // kDense: bool, true where a query may attend to a key; [B, 1, 1, L] (padding) or [B, 1, L, L]
  // (block-diagonal for packed rows).
  at::Tensor mask;
  // Varlen backends: int32 [n+1] on the tokens' device, and the longest sequence.
  at::Tensor cu_seqlens;
  int64_t max_seqlen = 0;
  // kVarlenReference: cu_seqlens on the host (read once per batch, not per layer).
  std::vector<int64_t> host_offsets;
  // kVarlenGrouped: the batch's length groups (PrepareHostPlan builds them from host_offsets).
  PaddedGroups groups;
  // kDense on CUDA: whether SDPA may pick cuDNN attention (ModelRuntime::dense_attention_cudnn).
  bool dense_cudnn = false;
  // ModernBERT: the tokens' rotary tables for the global layers' theta and the sliding-window
  // layers' (in the tokens' layout); undefined for models with learned positions.
  RotaryTable rotary_global;
  RotaryTable rotary_local;

  bool varlen() const { return backend != AttentionBackend::kDense; }
};

// Fills what the reference and grouped backends read on the host, once per batch: host_offsets
// (from cu_seqlens) and, for kVarlenGrouped, the length groups. Does nothing for other backends.
void PrepareHostPlan(AttentionContext& ctx);

// Multi-head attention core. Dense: q, k, v are [B, heads, L, head_dim] and the result is
// [B, L, heads * head_dim]. Varlen: q, k, v are [T, heads, head_dim] and the result is
// [T, heads * head_dim]. `dropout_p` applies to the attention probabilities (pass 0 in eval).
at::Tensor Attend(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                  const AttentionContext& ctx, double dropout_p);

// Attention of each sequence's first token ([CLS]) alone over its whole sequence, on the varlen
// layout: q [n, heads, head_dim] holds the n first tokens' queries (in cu_seqlens' order), k and v
// [T, heads, head_dim] every token's. Result [n, heads * head_dim], equal to Attend's rows of the
// first tokens. What a classifier's last layer needs under [CLS] pooling, whose other rows feed
// nothing. kVarlenFlash, kVarlenCudnn and kVarlenFa3 (one query per sequence against cu_seqlens' keys),
// kVarlenReference (ctx.host_offsets) or kVarlenGrouped (ctx.groups); empty sequences give zeros.
at::Tensor AttendFirstTokens(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                             const AttentionContext& ctx);

}  // namespace padless::models

#endif  // PADLESS_MODELS_ATTENTION_H_
