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
struct LayerSpec {
  int64_t heads = 1;
  double eps = 1e-12;
  double dropout = 0.0;            // 0 in eval mode
  double attention_dropout = 0.0;  // 0 in eval mode
  bool pre_ln = false;
  Activation activation = Activation::kGelu;
};

// Order of the tensors in the weight list of EncoderLayerForward.
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

// x: [B, L, H] for a dense context, [T, H] for a varlen one. Returns the same shape.
at::Tensor EncoderLayerForward(const at::Tensor& x, at::TensorList weights, const LayerSpec& spec,
                               const AttentionContext& ctx);

class EncoderLayerImpl : public torch::nn::Module {
 public:
  explicit EncoderLayerImpl(const EncoderConfig& config);
  // Weights in LayerWeight order.
  const std::vector<at::Tensor>& weights() const { return weights_; }

 private:
  std::vector<at::Tensor> weights_;
};
TORCH_MODULE(EncoderLayer);

}  // namespace padless::models

#endif  // PADLESS_MODELS_ENCODER_LAYER_H_
