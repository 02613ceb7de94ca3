// EncoderClassifier: the transformer encoder (embeddings, layers, per-sequence pooling) with a
// classification head. It reads a batching::Batch in any layout and picks the attention backend
// from it: dense SDPA with a padding or block-diagonal mask, or varlen attention over the real
// tokens only ([T, H], no padding computed at all).
#ifndef PADLESS_MODELS_ENCODER_H_
#define PADLESS_MODELS_ENCODER_H_

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "padless/batching/batch.h"
#include "padless/models/attention.h"
#include "padless/models/encoder_config.h"
#include "padless/models/encoder_layer.h"
#include "padless/models/model_runtime.h"

namespace padless::models {

class EncoderClassifierImpl : public torch::nn::Module {
 public:
  explicit EncoderClassifierImpl(const EncoderConfig& config);

  // Logits [n, num_labels], one row per sequence of `batch`, in the batch's sequence order (the
  // order of `labels` and of cu_seqlens).
  at::Tensor forward(const batching::Batch& batch);
  // Pooled sequence representations [n, hidden] (before dropout and the head).
  at::Tensor Encode(const batching::Batch& batch);
  // The last layer's output for every real token [T, hidden], sequence after sequence in the
  // batch's order (padding left out): for comparing hidden states with other implementations and
  // for token-level features. Padded batches take a host sync.
  at::Tensor EncodeTokens(const batching::Batch& batch);

  // Checks what would otherwise fail deep inside ATen (or assert on the GPU): sequences longer
  // than max_positions, missing tensors for the layout. Host-side only, no device sync.
  absl::Status CheckBatch(const batching::Batch& batch) const;
  // The backend that forward() will use for `batch` on the current device and autocast state.
  AttentionBackend ResolveBackend(const batching::Batch& batch) const;

  // How the model runs (attention backend, fused layers, activation memory, checkpointing); see
  // model_runtime.h. Set it before the steps it is meant for, not during one.
  void set_runtime(const ModelRuntime& runtime) { runtime_ = runtime; }
  const ModelRuntime& runtime() const { return runtime_; }

  // Transfer learning: freeze (requires_grad = false) the embeddings, and layers [0, k).
  void FreezeEmbeddings(bool frozen);
  void FreezeLayersBelow(int64_t k);

  const EncoderConfig& config() const { return config_; }
  int64_t num_layers() const { return static_cast<int64_t>(layers_.size()); }

 private:
  at::Tensor Embed(const at::Tensor& ids, const at::Tensor& positions, const at::Tensor& types);
  // The encoder layers; the output stays in the dtype they computed in (bf16 under the fused
  // layers), per token.
  at::Tensor RunLayers(at::Tensor x, const AttentionContext& ctx);
  // The layers' per-token output in `dtype` (the embeddings'), with the final LayerNorm of pre-LN
  // models. Works row by row, so it may run on selected rows only.
  at::Tensor FinishTokens(const at::Tensor& h, at::ScalarType dtype);
  // Encode on the dense backend: padded rows with a padding mask, packed rows block-diagonal.
  at::Tensor EncodeDense(const batching::Batch& b, AttentionContext& ctx, int64_t n);
  LayerSpec Spec() const;

  EncoderConfig config_;
  ModelRuntime runtime_;
  at::Tensor word_embeddings_;
  at::Tensor position_embeddings_;
  at::Tensor type_embeddings_;  // undefined when type_vocab_size is 0
  at::Tensor embedding_norm_weight_;
  at::Tensor embedding_norm_bias_;
  std::vector<EncoderLayer> layers_;
  at::Tensor final_norm_weight_;  // pre-LN only
  at::Tensor final_norm_bias_;
  at::Tensor head_dense_weight_;  // classifier_hidden tanh or relu only
  at::Tensor head_dense_bias_;
  at::Tensor head_weight_;
  at::Tensor head_bias_;
};
TORCH_MODULE(EncoderClassifier);

// Mean cross-entropy of logits [n, C] against labels [n], computed in fp32.
at::Tensor ClassificationLoss(const at::Tensor& logits, const at::Tensor& labels);

}  // namespace padless::models

#endif  // PADLESS_MODELS_ENCODER_H_
