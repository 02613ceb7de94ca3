#include "padless/models/encoder_layer.h"

#include <ATen/ATen.h>

namespace padless::models {

namespace {

at::Tensor Activate(const at::Tensor& x, Activation a) {
  switch (a) {
    case Activation::kGelu:
      return at::gelu(x);
    case Activation::kGeluTanh:
      return at::gelu(x, "tanh");
    case Activation::kRelu:
      return at::relu(x);
  }
  return at::gelu(x);
}

}  // namespace

at::Tensor EncoderLayerForward(const at::Tensor& x, at::TensorList w, const LayerSpec& spec,
                               const AttentionContext& ctx) {
  const int64_t hidden = x.size(-1);
  const int64_t head_dim = hidden / spec.heads;
  auto norm = [&](const at::Tensor& t, int weight, int bias) {
    return at::layer_norm(t, {hidden}, w[weight], w[bias], spec.eps);
  };

  // Attention block.
  at::Tensor qkv = at::linear(spec.pre_ln ? norm(x, kAttnNormWeight, kAttnNormBias) : x,
                              w[kQkvWeight], w[kQkvBias]);
  at::Tensor attended;
  if (ctx.varlen()) {
    // [T, 3H] -> three [T, heads, head_dim] views (last dim contiguous, as flash requires).
    auto parts = qkv.view({x.size(0), 3, spec.heads, head_dim}).unbind(1);
    attended = Attend(parts[0], parts[1], parts[2], ctx, spec.attention_dropout);
  } else {
    // [B, L, 3H] -> three [B, heads, L, head_dim] views.
    auto parts = qkv.view({x.size(0), x.size(1), 3, spec.heads, head_dim})
                     .permute({2, 0, 3, 1, 4})
                     .unbind(0);
    attended = Attend(parts[0], parts[1], parts[2], ctx, spec.attention_dropout);
  }
  at::Tensor a =
      at::dropout(at::linear(attended, w[kOutWeight], w[kOutBias]), spec.dropout, spec.dropout > 0);
  at::Tensor h = spec.pre_ln ? x + a : norm(x + a, kAttnNormWeight, kAttnNormBias);

  // Feed-forward block.
  at::Tensor f = at::linear(spec.pre_ln ? norm(h, kFfnNormWeight, kFfnNormBias) : h,
                            w[kFfnInWeight], w[kFfnInBias]);
  f = at::linear(Activate(f, spec.activation), w[kFfnOutWeight], w[kFfnOutBias]);
  f = at::dropout(f, spec.dropout, spec.dropout > 0);
  return spec.pre_ln ? h + f : norm(h + f, kFfnNormWeight, kFfnNormBias);
}

EncoderLayerImpl::EncoderLayerImpl(const EncoderConfig& c) {
  const int64_t h = c.hidden();
  const int64_t f = c.ffn();
  // BERT's initialisation: N(0, 0.02) weights, zero biases, unit LayerNorm gains.
  auto normal = [](std::vector<int64_t> shape) { return at::randn(shape) * 0.02; };
  struct Spec {
    const char* name;
    at::Tensor init;
  };
  const Spec specs[kNumLayerWeights] = {
      {"attention_qkv_weight", normal({3 * h, h})},
      {"attention_qkv_bias", at::zeros({3 * h})},
      {"attention_out_weight", normal({h, h})},
      {"attention_out_bias", at::zeros({h})},
      {"attention_norm_weight", at::ones({h})},
      {"attention_norm_bias", at::zeros({h})},
      {"ffn_in_weight", normal({f, h})},
      {"ffn_in_bias", at::zeros({f})},
      {"ffn_out_weight", normal({h, f})},
      {"ffn_out_bias", at::zeros({h})},
      {"ffn_norm_weight", at::ones({h})},
      {"ffn_norm_bias", at::zeros({h})},
  };
  weights_.reserve(kNumLayerWeights);
  for (const Spec& s : specs) weights_.push_back(register_parameter(s.name, s.init));
}

}  // namespace padless::models
