// Helpers of the tests of prune/: a small encoder, a copy of it, and the "masked" reference model
// that a pruned one must equal (the removed units' output-projection columns zeroed).
#ifndef PADLESS_TESTS_PRUNE_PRUNE_TEST_UTIL_H_
#define PADLESS_TESTS_PRUNE_PRUNE_TEST_UTIL_H_

#include <ATen/ATen.h>

#include <cstdint>
#include <string>
#include <vector>

#include "padless/models/encoder.h"
#include "padless/models/encoder_layer.h"
#include "padless/prune/prune_plan.h"

namespace padless::prune::testing {

// `c` at hidden 32, 2 layers of 4 heads (head_dim 8), FFN 64, 64 positions, 3 labels, no dropout.
inline models::EncoderConfig WithSmallSizes(models::EncoderConfig c) {
  return c.vocab_size(50)
      .hidden(32)
      .layers(2)
      .heads(4)
      .ffn(64)
      .max_positions(64)
      .num_labels(3)
      .dropout(0.0)
      .attention_dropout(0.0);
}

// A BERT-family encoder of those sizes.
inline models::EncoderConfig SmallEncoder() { return WithSmallSizes(models::EncoderConfig()); }

// The same sizes as a ModernBERT (GeGLU FFN-in of 2 x 64 rows, rotary positions): layer 0
// global without an attention norm, layer 1 a +-4 window; every bias, or none (ModernBERT-base's
// default).
inline models::EncoderConfig SmallModernBert(bool biases) {
  return WithSmallSizes(models::EncoderConfig::ModernBertBase())
      .local_attention(8)
      .global_attn_every_n_layers(2)
      .attention_bias(biases)
      .mlp_bias(biases)
      .norm_bias(biases)
      .classifier_bias(biases);
}

// Every parameter of `model` random (norm gains near 1; ModernBERT initialises its biases to
// zero), so that a misplaced row or bias shows in the outputs.
inline void RandomizeAll(models::EncoderClassifier& model) {
  at::NoGradGuard no_grad;
  for (auto& p : model->named_parameters()) {
    const bool gain = p.key().find("norm_weight") != std::string::npos;
    p.value().copy_(gain ? 1 + 0.1 * at::randn(p.value().sizes())
                         : 0.1 * at::randn(p.value().sizes()));
  }
}

// A model of `config` holding `model`'s parameters (same names and shapes), in eval mode.
inline models::EncoderClassifier CopyOf(models::EncoderClassifier& model) {
  models::EncoderClassifier copy(model->config());
  const at::Tensor any = model->parameters().front();
  copy->to(any.device(), any.scalar_type());
  copy->set_runtime(model->runtime());
  at::NoGradGuard no_grad;
  auto from = model->named_parameters();
  for (auto& p : copy->named_parameters()) p.value().copy_(from[p.key()]);
  copy->eval();
  return copy;
}

// `model` with every unit that `plan` drops masked: its columns of the attention output or FFN
// output projection set to zero, so that it contributes nothing, as if removed.
inline models::EncoderClassifier Masked(models::EncoderClassifier& model, const PrunePlan& plan) {
  models::EncoderClassifier masked = CopyOf(model);
  const int64_t head_dim = model->config().head_dim();
  const std::vector<at::TensorList> layers = masked->LayerWeights();
  at::NoGradGuard no_grad;
  for (size_t l = 0; l < layers.size(); ++l) {
    at::Tensor out = layers[l][models::kOutWeight];
    at::Tensor ffn_out = layers[l][models::kFfnOutWeight];
    for (int64_t h = 0; h < out.size(1) / head_dim; ++h) {
      const auto& keep = plan.keep_heads[l];
      if (std::find(keep.begin(), keep.end(), h) == keep.end()) {
        out.narrow(1, h * head_dim, head_dim).zero_();
      }
    }
    for (int64_t n = 0; n < ffn_out.size(1); ++n) {
      const auto& keep = plan.keep_ffn[l];
      if (std::find(keep.begin(), keep.end(), n) == keep.end()) ffn_out.narrow(1, n, 1).zero_();
    }
  }
  return masked;
}

// Layer 0 keeps heads 0 and 2 and every other FFN neuron; layer 1 keeps heads 1-3 and the first
// 40 neurons but neuron 7.
inline PrunePlan UnevenPlan() {
  PrunePlan plan;
  plan.keep_heads = {{0, 2}, {1, 2, 3}};
  plan.keep_ffn.resize(2);
  for (int64_t n = 0; n < 64; n += 2) plan.keep_ffn[0].push_back(n);
  for (int64_t n = 0; n < 40; ++n) {
    if (n != 7) plan.keep_ffn[1].push_back(n);
  }
  return plan;
}

}  // namespace padless::prune::testing

#endif  // PADLESS_TESTS_PRUNE_PRUNE_TEST_UTIL_H_
