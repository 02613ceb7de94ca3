// Sentence pooling of a varlen (unpadded) batch: the encoder's last hidden states, packed as
// [T, H] with cu_seqlens, become one vector per sequence, on the tensors' device and without
// padding the batch back; then the embedding's finish (Matryoshka truncation, L2 normalization).
// The modes are sentence-transformers' Pooling modes, so that an embedding model's directory
// pools as its 1_Pooling/config.json says.
#ifndef PADLESS_MODELS_SENTENCE_POOLING_H_
#define PADLESS_MODELS_SENTENCE_POOLING_H_

#include <ATen/core/Tensor.h>

#include <cstdint>

#include "absl/status/statusor.h"

namespace padless::models {

enum class SentencePooling {
  kCls,           // the sequence's first token
  kMean,          // the mean of its tokens
  kMax,           // the per-column max of its tokens
  kLastToken,     // its last token (decoder-style embedding models)
  kWeightedMean,  // token i (0-based) weighted by i + 1 (sentence-transformers' WeightedMean)
  kMeanSqrtLen,   // the sum of its tokens / sqrt(length)
};

// hidden: floating [T, H] packed tokens; cu_seqlens: int32 [n + 1] on hidden's device, starting
// at 0 with cu_seqlens[n] == T. Returns [n, H] float32 (float64 for float64 input): half inputs
// are pooled in fp32. Differentiable in `hidden`.
// Checking cu_seqlens' contents (non-decreasing, no empty sequence, last == T) needs their
// values on the host, so it happens for CPU tensors only: on CUDA, where it would cost a device
// sync, the caller vouches for them (the batcher builds them on the host), and an empty sequence
// pools to zeros there.
absl::StatusOr<at::Tensor> PoolSequences(const at::Tensor& hidden, const at::Tensor& cu_seqlens,
                                         SentencePooling mode);

// The pooled [n, H] vectors as an embedding: `dimensions` > 0 keeps the first `dimensions`
// columns (Matryoshka truncation; 0 keeps all), then `normalize` scales each row to unit L2 norm
// (as torch.nn.functional.normalize: a zero row stays zero). Returns float32 (float64 for float64
// input).
absl::StatusOr<at::Tensor> FinishEmbeddings(at::Tensor pooled, bool normalize, int64_t dimensions);

}  // namespace padless::models

#endif  // PADLESS_MODELS_SENTENCE_POOLING_H_
