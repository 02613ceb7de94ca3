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
#include "padless/models/fused_layer.h"
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
  // for token-level features. Padded batches take a host sync. In the embeddings' dtype (fp32
  // under autocast), or with `layers_dtype` in the dtype the layers computed in (bf16 under bf16
  // autocast), for callers that accumulate in fp32 themselves (sentence pooling): no fp32 copy of
  // every token's vector.
  at::Tensor EncodeTokens(const batching::Batch& batch, bool layers_dtype = false);

  // Checks what would otherwise fail deep inside ATen (or assert on the GPU): sequences longer
  // than max_positions, missing tensors for the layout. Host-side only, no device sync.
  absl::Status CheckBatch(const batching::Batch& batch) const;
  // The backend that forward() will use for `batch` on the current device and autocast state.
  AttentionBackend ResolveBackend(const batching::Batch& batch) const;
  // Whether FA3 would run this model's attention calls on `device` in `compute` dtype, as it is
  // now (train or eval): built, an sm90 device, bf16 (or fp32, computed in bf16), head dim 64, no
  // attention dropout. kAuto picks FA3 only where this holds (AutoHalfPrecisionVarlenBackend).
  bool Fa3RunsCalls(const at::Device& device, at::ScalarType compute) const;

  // How the model runs (attention backend, fused layers, activation memory, checkpointing); see
  // model_runtime.h. Set it before the steps it is meant for, not during one.
  void set_runtime(const ModelRuntime& runtime) { runtime_ = runtime; }
  const ModelRuntime& runtime() const { return runtime_; }

  // Inference (grad mode off, e.g. under c10::InferenceMode) on varlen batches runs each post-LN
  // layer through the fused forward alone (FusedEncoderLayerInfer: fused LayerNorm kernels and the
  // GEMM + bias + GELU epilogue, nothing kept for a backward). PrepareInference casts the layers'
  // weights to `dtype` (the compute dtype: fp32, or the autocast dtype) once, on their current
  // device, so that inference forwards do not cast them on every call. The copies are of the
  // weights as they are now: call it again after the weights change or move; train(true) drops
  // them. Not thread-safe against forwards running at the same time.
  // `fp8_weights`: also quantize the layers' GEMM weights to FP8 (QuantizeInferenceWeights), and
  // run the prepared inference forwards' GEMMs in FP8 with per-token activation scales (on GPUs
  // with FP8 tensor cores; elsewhere emulated exactly, which is slow and meant for checking
  // accuracy). Only prepared forwards use FP8: an unprepared inference forward computes in `dtype`.
  void PrepareInference(at::ScalarType dtype, bool fp8_weights = false);
  // PrepareInference(fp32) with the layers' GEMM weights also packed as int8 for the CPU
  // (Int8Linear: FBGEMM, activations quantized per call), used by the prepared inference forwards
  // on the CPU. Errors: Int8Linear::Pack's (no FBGEMM; weights not on the CPU).
  absl::Status PrepareInt8Inference();
  // torch::nn::Module::train, which also drops PrepareInference's copies when training resumes.
  void train(bool on = true) override;

  // Transfer learning: freeze (requires_grad = false) the embeddings, and layers [0, k).
  void FreezeEmbeddings(bool frozen);
  void FreezeLayersBelow(int64_t k);

  const EncoderConfig& config() const { return config_; }
  int64_t num_layers() const { return static_cast<int64_t>(layers_.size()); }
  // Each layer's weights in LayerWeight order (encoder_layer.h), as views of the parameters:
  // FusedComputeWeights reads them, pruning (prune/) reads their gradients and slices them.
  // Valid while the model lives and its parameters are not replaced.
  std::vector<at::TensorList> LayerWeights() const;

 private:
  at::Tensor Embed(const at::Tensor& ids, const at::Tensor& positions, const at::Tensor& types);
  // The encoder layers; the output stays in the dtype they computed in (bf16 under the fused
  // layers), per token: every token's row, or with `out_rows` (int64 [n], each sequence's first
  // token on the varlen layout) those rows alone, which the fused inference forward computes in
  // its last layer alone (ModelRuntime::last_layer_rows_only).
  at::Tensor RunLayers(at::Tensor x, const AttentionContext& ctx, const at::Tensor& out_rows = {});
  // RunLayers' three paths: autograd per op (with checkpointing), the fused layers with their
  // hand-written backward (training), and the fused forward alone (inference).
  at::Tensor RunGenericLayers(at::Tensor x, const LayerSpec& spec, const AttentionContext& ctx);
  at::Tensor RunFusedTrainingLayers(at::Tensor x, const LayerSpec& spec,
                                    const AttentionContext& ctx);
  at::Tensor RunFusedInferenceLayers(at::Tensor x, const LayerSpec& spec,
                                     const AttentionContext& ctx, const at::Tensor& out_rows = {});
  // The layers' per-token output in `dtype` (the embeddings'), with the final LayerNorm of pre-LN
  // models. Works row by row, so it may run on selected rows only.
  at::Tensor FinishTokens(const at::Tensor& h, at::ScalarType dtype);
  // ModernBERT: the rotary tables of the tokens' `positions` into ctx (nothing for BERT).
  void AddRotaryTables(AttentionContext& ctx, const at::Tensor& positions) const;
  // Encode on the dense backend: padded rows with a padding mask, packed rows block-diagonal.
  at::Tensor EncodeDense(const batching::Batch& b, AttentionContext& ctx, int64_t n);
  LayerSpec Spec() const;

  EncoderConfig config_;
  ModelRuntime runtime_;
  at::Tensor word_embeddings_;
  at::Tensor position_embeddings_;  // undefined for ModernBERT (rotary positions)
  at::Tensor type_embeddings_;  // undefined when type_vocab_size is 0
  at::Tensor embedding_norm_weight_;
  at::Tensor embedding_norm_bias_;  // LayerNorm biases: undefined without norm_bias
  std::vector<EncoderLayer> layers_;
  at::Tensor final_norm_weight_;  // pre-LN only
  at::Tensor final_norm_bias_;
  at::Tensor head_dense_weight_;  // classifier_hidden tanh, relu or gelu_norm only
  at::Tensor head_dense_bias_;   // undefined without classifier_bias
  at::Tensor head_norm_weight_;  // classifier_hidden gelu_norm only
  at::Tensor head_norm_bias_;
  at::Tensor head_weight_;
  at::Tensor head_bias_;
  // PrepareInference's compute-dtype copies, per layer (empty when not prepared).
  std::vector<std::vector<at::Tensor>> inference_weights_;
  at::ScalarType inference_dtype_ = at::kFloat;
  // PrepareInference's FP8 GEMM weights, per layer (empty unless asked for).
  std::vector<Fp8LayerWeights> inference_fp8_;
  // PrepareInt8Inference's int8 GEMM weights, per layer (empty unless asked for).
  std::vector<Int8LayerWeights> inference_int8_;
};
TORCH_MODULE(EncoderClassifier);

// Mean cross-entropy of logits [n, C] against labels [n], computed in fp32.
at::Tensor ClassificationLoss(const at::Tensor& logits, const at::Tensor& labels);

}  // namespace padless::models

#endif  // PADLESS_MODELS_ENCODER_H_
