// One transformer encoder layer as a pure function of its input, its weights (a fixed-order tensor
// list) and the attention context, so that activation checkpointing can re-run it from saved
// inputs. EncoderLayer is the module that owns those weights.
#ifndef PADLESS_MODELS_ENCODER_LAYER_H_
#define PADLESS_MODELS_ENCODER_LAYER_H_

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

#include <cstdint>
#include <vector>

#include "padless/models/attention.h"
#include "padless/models/encoder_config.h"

namespace padless::models {

// The hyper-parameters one layer call needs (everything but tensors).
// A layer's head count is not here: pruned layers differ (EncoderConfig::heads_in_layer), and the
// layer's QKV weight holds 3 x heads x head_dim rows.
struct LayerSpec {
  int64_t head_dim = 64;
  double eps = 1e-12;
  double dropout = 0.0;            // 0 in eval mode
  double attention_dropout = 0.0;  // 0 in eval mode
  bool pre_ln = false;
  Activation activation = Activation::kGelu;
  // Lean activations: under autocast every block output (the residual stream, so every checkpoint
  // boundary) is stored in the autocast dtype, and the FFN keeps only GELU's input for backward.
  // Saves memory, costs a few elementwise passes per block (about 6% of a BERT-base step on the
  // H200); EncoderClassifier turns it on when it checkpoints (ActivationMemory::kAuto).
  bool lean = true;
  // ModernBERT's layer (EncoderConfig::architecture) instead of BERT's: same weight order, see
  // modernbert_layer.h. `window`: this layer's attention half window (-1: global attention), which
  // also picks the rotary table (AttentionContext::rotary_local or rotary_global).
  bool modernbert = false;
  int64_t window = -1;
};

// Order of the tensors in the weight list of EncoderLayerForward. A ModernBERT layer keeps the
// order, with undefined tensors for the biases its config leaves out and for layer 0's attention
// norm (an identity); its FFN-in weight holds 2 x ffn rows (GeGLU's value, then gate).
enum LayerWeight : int {
  kQkvWeight,
  kQkvBias,
  kOutWeight,
  kOutBias,
  kAttnNormWeight,
  kAttnNormBias,
  kFfnInWeight,
  kFfnInBias,
  kFfnOutWeight,
  kFfnOutBias,
  kFfnNormWeight,
  kFfnNormBias,
  kNumLayerWeights
};

// x: [B, L, H] for a dense context, [T, H] for a varlen one. Returns the same shape. The layer's
// head count is the QKV weight's rows / (3 x spec.head_dim).
// A layer is its attention block followed by its feed-forward block; each block's output is the
// residual stream, stored as ToResidualStream says.
at::Tensor EncoderLayerForward(const at::Tensor& x, at::TensorList weights, const LayerSpec& spec,
                               const AttentionContext& ctx);
// Self-attention, output projection, dropout, residual add and (post-LN) LayerNorm.
at::Tensor AttentionBlockForward(const at::Tensor& x, at::TensorList weights, const LayerSpec& spec,
                                 const AttentionContext& ctx);
// Feed-forward in, activation, out, dropout, residual add and (post-LN) LayerNorm.
at::Tensor FfnBlockForward(const at::Tensor& h, at::TensorList weights, const LayerSpec& spec);

// The residual stream between blocks (and so every checkpoint boundary) is kept in the autocast
// dtype while autocast is on for t's device: an fp32 `t` is cast to it, halving what checkpoints
// and the next block's matmul keep. Without autocast `t` is returned unchanged. The sums and
// LayerNorms inside a block still run in fp32 (see ResidualAdd in encoder_layer.cc), so the
// stream is rounded once per block, not once per op.
at::Tensor ToResidualStream(const at::Tensor& t);
// stream + branch, summed in fp32 under autocast (one rounding per block, by ToResidualStream).
at::Tensor ResidualAdd(const at::Tensor& stream, const at::Tensor& branch);

class EncoderLayerImpl : public torch::nn::Module {
 public:
  // Layer `index` of `config`: its head and FFN counts may differ from other layers' (pruning).
  EncoderLayerImpl(const EncoderConfig& config, int64_t index);
  // Weights in LayerWeight order.
  const std::vector<at::Tensor>& weights() const { return weights_; }

 private:
  std::vector<at::Tensor> weights_;
};
TORCH_MODULE(EncoderLayer);

}  // namespace padless::models

#endif  // PADLESS_MODELS_ENCODER_LAYER_H_
