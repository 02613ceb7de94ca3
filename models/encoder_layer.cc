#include "padless/models/encoder_layer.h"

#include <ATen/ATen.h>
#include <ATen/autocast_mode.h>
#include <torch/csrc/autograd/custom_function.h>

#include <string>

#include "modernbert_layer.h"

namespace padless::models {

namespace {

// LayerNorm with the weight at index `weight` and its bias right after it.
at::Tensor Norm(const at::Tensor& t, at::TensorList w, int weight, const LayerSpec& spec) {
  return at::layer_norm(t, {t.size(-1)}, w[weight], w[weight + 1], spec.eps);
}

// linear(gelu(pre), w, b) that keeps only `pre` for backward and recomputes gelu(pre) there.
// Autograd would keep both `pre` (for gelu's backward) and gelu(pre) (for the matmul's): two
// [T, ffn] tensors, the largest activations of a layer. Recomputing costs one elementwise pass in
// backward and saves a quarter of a layer's activation memory (8 of ~38 bytes per token and
// hidden unit under bf16 autocast). ReLU needs no such help: its backward reads its own output,
// which the matmul keeps anyway.
class GeluLinear : public torch::autograd::Function<GeluLinear> {
 public:
  static at::Tensor forward(torch::autograd::AutogradContext* actx, const at::Tensor& pre,
                            const at::Tensor& w, const at::Tensor& b, bool tanh) {
    actx->saved_data["tanh"] = tanh;
    actx->save_for_backward({pre, w});
    // Runs under the caller's autocast state: w and b are cast as at::linear would cast them.
    return at::linear(at::gelu(pre, tanh ? "tanh" : "none"), w, b);
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* actx,
                                                 torch::autograd::variable_list grad_outputs) {
    const torch::autograd::variable_list saved = actx->get_saved_variables();
    const at::Tensor& pre = saved[0];
    const std::string approximate = actx->saved_data["tanh"].toBool() ? "tanh" : "none";
    // Backward runs without autocast: compute in the dtype the forward's matmul ran in (that of
    // `pre`); the engine casts each gradient to its input's dtype.
    const at::Tensor grad = grad_outputs[0].to(pre.scalar_type());
    const at::Tensor w = saved[1].to(pre.scalar_type());
    const at::Tensor grad_2d = grad.reshape({-1, grad.size(-1)});
    torch::autograd::variable_list result(4);
    if (actx->needs_input_grad(1)) {
      const at::Tensor act = at::gelu(pre, approximate);
      result[1] = grad_2d.t().mm(act.reshape({-1, act.size(-1)}));
    }
    if (actx->needs_input_grad(2)) result[2] = grad_2d.sum(0);
    if (actx->needs_input_grad(0)) result[0] = at::gelu_backward(grad.matmul(w), pre, approximate);
    return result;
  }
};

// linear(activation(pre)): through GeluLinear for lean activations, else the plain ops.
at::Tensor ActivateThenLinear(const at::Tensor& pre, const LayerSpec& spec, const at::Tensor& w,
                              const at::Tensor& b) {
  switch (spec.activation) {
    case Activation::kRelu:
      return at::linear(at::relu(pre), w, b);
    case Activation::kGeluTanh:
      return spec.lean ? GeluLinear::apply(pre, w, b, true)
                       : at::linear(at::gelu(pre, "tanh"), w, b);
    case Activation::kGelu:
      break;
  }
  return spec.lean ? GeluLinear::apply(pre, w, b, false) : at::linear(at::gelu(pre), w, b);
}

// A block's output as the residual stream stores it.
at::Tensor Stream(const at::Tensor& t, const LayerSpec& spec) {
  return spec.lean ? ToResidualStream(t) : t;
}

}  // namespace

// stream + branch. Under autocast both are in the autocast dtype; adding them there would round
// the sum before the fp32 LayerNorm that follows (autocast runs layer_norm in fp32 anyway), so
// the sum is taken in fp32: one rounding per block (ToResidualStream) instead of two. Without
// autocast the dtypes are the model's and the sum stays in them.
at::Tensor ResidualAdd(const at::Tensor& stream, const at::Tensor& branch) {
  if (stream.scalar_type() == at::kFloat ||
      !at::autocast::is_autocast_enabled(stream.device().type())) {
    return stream + branch;
  }
  return stream.to(at::kFloat) + branch;  // the branch is promoted inside the add
}

at::Tensor ToResidualStream(const at::Tensor& t) {
  const c10::DeviceType device = t.device().type();
  if (t.scalar_type() != at::kFloat || !at::autocast::is_autocast_enabled(device)) return t;
  return t.to(at::autocast::get_autocast_dtype(device));
}

at::Tensor AttentionBlockForward(const at::Tensor& x, at::TensorList w, const LayerSpec& spec,
                                 const AttentionContext& ctx) {
  if (spec.modernbert) return internal::ModernBertAttentionBlock(x, w, spec, ctx);
  const int64_t heads = w[kQkvWeight].size(0) / (3 * spec.head_dim);
  at::Tensor qkv =
      at::linear(spec.pre_ln ? Norm(x, w, kAttnNormWeight, spec) : x, w[kQkvWeight], w[kQkvBias]);
  at::Tensor attended;
  if (ctx.varlen()) {
    // [T, 3H] -> three [T, heads, head_dim] views (last dim contiguous, as flash requires).
    auto parts = qkv.view({x.size(0), 3, heads, spec.head_dim}).unbind(1);
    attended = Attend(parts[0], parts[1], parts[2], ctx, spec.attention_dropout);
  } else {
    // [B, L, 3H] -> three [B, heads, L, head_dim] views.
    auto parts = qkv.view({x.size(0), x.size(1), 3, heads, spec.head_dim})
                     .permute({2, 0, 3, 1, 4})
                     .unbind(0);
    attended = Attend(parts[0], parts[1], parts[2], ctx, spec.attention_dropout);
  }
  at::Tensor a =
      at::dropout(at::linear(attended, w[kOutWeight], w[kOutBias]), spec.dropout, spec.dropout > 0);
  at::Tensor h = ResidualAdd(x, a);
  return Stream(spec.pre_ln ? h : Norm(h, w, kAttnNormWeight, spec), spec);
}

at::Tensor FfnBlockForward(const at::Tensor& h, at::TensorList w, const LayerSpec& spec) {
  if (spec.modernbert) return internal::ModernBertFfnBlock(h, w, spec);
  at::Tensor f = at::linear(spec.pre_ln ? Norm(h, w, kFfnNormWeight, spec) : h, w[kFfnInWeight],
                            w[kFfnInBias]);
  f = ActivateThenLinear(f, spec, w[kFfnOutWeight], w[kFfnOutBias]);
  f = at::dropout(f, spec.dropout, spec.dropout > 0);
  at::Tensor out = ResidualAdd(h, f);
  return Stream(spec.pre_ln ? out : Norm(out, w, kFfnNormWeight, spec), spec);
}

at::Tensor EncoderLayerForward(const at::Tensor& x, at::TensorList w, const LayerSpec& spec,
                               const AttentionContext& ctx) {
  return FfnBlockForward(AttentionBlockForward(x, w, spec, ctx), w, spec);
}

EncoderLayerImpl::EncoderLayerImpl(const EncoderConfig& c, int64_t index) {
  if (c.modernbert()) {
    // Undefined tensors (biases left out, layer 0's attention norm) keep their slot, unregistered.
    for (internal::NamedInit& w : internal::ModernBertLayerInit(c, index)) {
      weights_.push_back(w.init.defined() ? register_parameter(w.name, w.init) : at::Tensor());
    }
    return;
  }
  const int64_t h = c.hidden();
  const int64_t a = c.heads_in_layer(index) * c.head_dim();  // the attention width
  const int64_t f = c.ffn_in_layer(index);
  // BERT's initialisation: N(0, 0.02) weights, zero biases, unit LayerNorm gains.
  auto normal = [](std::vector<int64_t> shape) { return at::randn(shape) * 0.02; };
  struct Spec {
    const char* name;
    at::Tensor init;
  };
  const Spec specs[kNumLayerWeights] = {
      {"attention_qkv_weight", normal({3 * a, h})},
      {"attention_qkv_bias", at::zeros({3 * a})},
      {"attention_out_weight", normal({h, a})},
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
